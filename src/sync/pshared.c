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
 * every other object to the C library's (dlsym RTLD_NEXT), unchanged. Its
 * own lookup, not mem_kernel_next: libdsm.a carries this file without
 * kernel*.c, and a fully static program falls back to glibc's own names.
 *
 * libdsm.a has them too (issue 83, point 3: a fork-style program linked
 * with it took one such mutex from 4 nodes x 2 threads and hung until
 * --timeout, where libdsm.so's refused it): linked with the C library's
 * shared object, the C library's is found as above. A fully static
 * program (cc -static) has no dynamic linker to ask: there the C
 * library's own names for the mutex's and condition's init are called
 * (weak references, linked in by C11's mtx_init and cnd_init, which call
 * them), and the static archive defines only those two
 * (DSM_PSHARED_MUTEX_COND_ONLY: the barrier's, read-write lock's and
 * semaphore's inits have no caller in the C library to link them in).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <threads.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"
#include "sync/sync.h"

/* glibc's own names (a fully static program's C library), and what links
 * them into one: mtx_init and cnd_init call them. */
extern int __pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
    __attribute__((weak));
extern int __pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
    __attribute__((weak));
__attribute__((used)) static void *const static_anchors[] = {(void *)mtx_init, (void *)cnd_init};

/* The C library's function of that name (`own`: by its own name, or
 * NULL), found once. */
static void *next(_Atomic(void *) *cache, const char *name, void *own)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        if (!fn)
            fn = own;
        if (!fn)
            log_fatal("%s: the C library's is not found", name);
        atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

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
    static DSM_STATE _Atomic(void *) real;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_mutexattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_mutex_init", m, "mutex (PTHREAD_PROCESS_SHARED)");
    return ((int (*)(pthread_mutex_t *, const pthread_mutexattr_t *))next(&real, "pthread_mutex_init", (void *)__pthread_mutex_init))(m, attr);
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
    static DSM_STATE _Atomic(void *) real;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_condattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_cond_init", c, "condition (PTHREAD_PROCESS_SHARED)");
    return ((int (*)(pthread_cond_t *, const pthread_condattr_t *))next(&real, "pthread_cond_init", (void *)__pthread_cond_init))(c, attr);
}

#ifndef DSM_PSHARED_MUTEX_COND_ONLY
int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count)
{
    static DSM_STATE _Atomic(void *) real;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_barrierattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_barrier_init", b, "barrier (PTHREAD_PROCESS_SHARED)");
    return ((int (*)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned))next(
        &real, "pthread_barrier_init", NULL))(b, attr, count);
}

int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
    static DSM_STATE _Atomic(void *) real;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && pthread_rwlockattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
        refuse_shared("pthread_rwlock_init", rw, "read-write lock (PTHREAD_PROCESS_SHARED)");
    return ((int (*)(pthread_rwlock_t *, const pthread_rwlockattr_t *))next(&real, "pthread_rwlock_init", NULL))(rw, attr);
}

int sem_init(sem_t *s, int pshared, unsigned value)
{
    static DSM_STATE _Atomic(void *) real;
    if (pshared)
        refuse_shared("sem_init", s, "semaphore (pshared 1)");
    return ((int (*)(sem_t *, int, unsigned))next(&real, "sem_init", NULL))(s, pshared, value);
}
#endif
