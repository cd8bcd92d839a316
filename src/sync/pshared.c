/*
 * pshared.c — a process-shared pthread object in dsm's shared memory,
 * refused at its init in one line, in every build (issue 61).
 *
 * A pthread mutex, condition, barrier, read-write lock or semaphore is a
 * few words whose waiters sleep on a futex. In dsm's shared memory those
 * words are each node's own copy of the page: a thread on another node
 * neither sees the holder nor wakes the waiters, and a job that used one
 * between nodes hung in futex_wait until --timeout, without a word.
 * PTHREAD_PROCESS_SHARED asks for exactly that — exclusion among every
 * process that maps the memory — which in dsm is every node, and only
 * dsm_lock (whose acquire also brings the holder's writes) gives it. So
 * the init of such an object in the region ends the job naming the call
 * and the address. dsmcc's programs have their pthread calls wrapped
 * (sync/pthread_*.c: in shared memory they are the job's, and a
 * process-shared one is refused there); a program on dsm's API calls the
 * C library's, so libdsm defines these five names over it (libdsm.map;
 * its other C library names are mem/kernel*.c's system calls) and hands
 * every other object to the C library's (dlsym RTLD_NEXT), unchanged.
 */
#include <pthread.h>
#include <semaphore.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"
#include "sync/sync.h"

static void refuse_shared(const char *call, const void *obj, const char *what)
{
    if (!mem.base || !mem_contains(obj))
        return;
    log_fatal("%s(%p): a process-shared %s in dsm's shared memory, "
              "whose state is each node's own copy of the page and excludes no other node's "
              "threads; use dsm_lock, dsm_barrier or dsm_cond_wait (dsm.h), or build with dsmcc, "
              "whose pthread objects in shared memory are the job's (docs/api.md, "
              "\"Process-shared pthread objects\")", call, obj, what);
}

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
    MEM_KERNEL_REAL(int, "pthread_mutex_init", (pthread_mutex_t *, const pthread_mutexattr_t *));
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_mutexattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_mutex_init", m, "mutex (PTHREAD_PROCESS_SHARED)");
    return fn(m, attr);
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
    MEM_KERNEL_REAL(int, "pthread_cond_init", (pthread_cond_t *, const pthread_condattr_t *));
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_condattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_cond_init", c, "condition (PTHREAD_PROCESS_SHARED)");
    return fn(c, attr);
}

int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count)
{
    MEM_KERNEL_REAL(int, "pthread_barrier_init", (pthread_barrier_t *, const pthread_barrierattr_t *, unsigned));
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_barrierattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_barrier_init", b, "barrier (PTHREAD_PROCESS_SHARED)");
    return fn(b, attr, count);
}

int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
    MEM_KERNEL_REAL(int, "pthread_rwlock_init", (pthread_rwlock_t *, const pthread_rwlockattr_t *));
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_rwlockattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_rwlock_init", rw, "read-write lock (PTHREAD_PROCESS_SHARED)");
    return fn(rw, attr);
}

int sem_init(sem_t *s, int pshared, unsigned value)
{
    MEM_KERNEL_REAL(int, "sem_init", (sem_t *, int, unsigned));
    if (pshared)
        refuse_shared("sem_init", s, "semaphore (pshared 1)");
    return fn(s, pshared, value);
}
