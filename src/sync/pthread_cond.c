/*
 * pthread_cond.c — a dsmcc program's condition variables in shared memory
 * are dsm conditions (cond.c) over the mutex's dsm lock
 * (include/dsm/pthread.h).
 *
 * The condition's id lies in its first word, given by pthread_cond_init or,
 * for PTHREAD_COND_INITIALIZER, at its first use (pthread_mutex.c). A wait
 * registers with the condition's manager before it gives the lock up
 * (cond.c), so no signal sent after the waiter's unlock is lost; a signal
 * with no one waiting is lost, as POSIX has it. There is no timed dsm
 * wait: pthread_cond_timedwait is refused in one line.
 */
#include <dsm.h>
#include <dsm/pthread.h>
#include <errno.h>

#include "base/log.h"
#include "base/profile.h"
#include "sync/sync.h"

/* glibc's pthread_cond_t begins with a 64-bit sequence; its low word is
 * the id here. pthread_cond_signal of glibc returns at once while the
 * waiter count (byte 36) is 0, which it stays. */
struct shared_cond {
    uint32_t id;
};
_Static_assert(sizeof(struct shared_cond) <= sizeof(pthread_cond_t), "pthread_cond_t too small");

int dsm_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
    if (!sync_pthread_object(c))
        return pthread_cond_init(c, attr);
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr)
        pthread_condattr_getpshared(attr, &pshared);
    if (pshared == PTHREAD_PROCESS_SHARED)
        sync_pthread_refuse("pthread_cond_init", "a process-shared condition (PTHREAD_PROCESS_SHARED) "
                            "is for other processes");
    *c = (pthread_cond_t){0};
    ((struct shared_cond *)c)->id = sync_pthread_new_id();
    return 0;
}

int dsm_pthread_cond_destroy(pthread_cond_t *c)
{
    return sync_pthread_object(c) ? 0 : pthread_cond_destroy(c);
}

/* Both objects the job's, or both the C library's: one of each cannot be
 * waited on together. */
static bool both_shared(const void *c, const void *m, const char *call)
{
    bool cs = sync_pthread_object(c), ms = sync_pthread_object(m);
    if (cs != ms)
        log_fatal("%s(%p, %p): the condition is in %s memory and the mutex in %s memory; both "
                  "must be shared (globals, the heap) to be waited on across nodes", call, c, m,
                  cs ? "shared" : "private", ms ? "shared" : "private");
    return cs;
}

int dsm_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    PROFILE_SITE();
    if (!both_shared(c, m, "pthread_cond_wait"))
        return pthread_cond_wait(c, m);
    uint32_t lock = sync_pthread_mutex_held(m, "pthread_cond_wait");
    if (!lock)
        return EPERM;
    uint32_t cond = sync_pthread_id_of(&((struct shared_cond *)c)->id);
    sync_pthread_mutex_leave(m);
    sync_cond_wait((int)cond, (int)lock);
    sync_pthread_mutex_return(m);
    return 0;
}

int dsm_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    if (!both_shared(c, m, "pthread_cond_timedwait"))
        return pthread_cond_timedwait(c, m, abstime);
    sync_pthread_refuse("pthread_cond_timedwait", "a condition waited for with a time limit");
}

int dsm_pthread_cond_signal(pthread_cond_t *c)
{
    if (!sync_pthread_object(c))
        return pthread_cond_signal(c);
    dsm_cond_signal((int)sync_pthread_id_of(&((struct shared_cond *)c)->id));
    return 0;
}

int dsm_pthread_cond_broadcast(pthread_cond_t *c)
{
    if (!sync_pthread_object(c))
        return pthread_cond_broadcast(c);
    sync_cond_broadcast((int)sync_pthread_id_of(&((struct shared_cond *)c)->id));
    return 0;
}
