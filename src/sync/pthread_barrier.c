/*
 * pthread_barrier.c — a dsmcc program's barriers in shared memory
 * (include/dsm/pthread.h): `count` threads of any nodes meet.
 *
 * dsm_barrier gathers every thread of the job; a pthread barrier gathers
 * the count its initialiser named. It is a count and a generation in the
 * barrier object under one dsm lock with a dsm condition of the same id,
 * as team.c's: each arrival takes the lock (and so sees the writes of
 * every arrival before it), the last one wakes the others, and each takes
 * the lock again on the way out (and so sees everything written before
 * the barrier). Inside a node the lock passes without a message (cohort).
 */
#include <dsm/pthread.h>
#include <errno.h>

#include "base/log.h"
#include "base/profile.h"
#include "sync/sync.h"

struct shared_barrier {
    uint32_t id;          /* lock and condition */
    uint32_t count;       /* threads that meet */
    uint32_t arrived;     /* in this generation */
    uint32_t generation;
};
_Static_assert(sizeof(struct shared_barrier) <= sizeof(pthread_barrier_t),
               "pthread_barrier_t too small");

int dsm_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr, unsigned count)
{
    if (!sync_pthread_object(b))
        return pthread_barrier_init(b, attr, count);
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr)
        pthread_barrierattr_getpshared(attr, &pshared);
    if (pshared == PTHREAD_PROCESS_SHARED)
        sync_pthread_refuse("pthread_barrier_init", "a process-shared barrier "
                            "(PTHREAD_PROCESS_SHARED) is for other processes");
    if (count == 0)
        return EINVAL;
    *(struct shared_barrier *)b = (struct shared_barrier){.id = sync_pthread_new_id(), .count = count};
    return 0;
}

int dsm_pthread_barrier_destroy(pthread_barrier_t *b)
{
    if (!sync_pthread_object(b))
        return pthread_barrier_destroy(b);
    struct shared_barrier *s = (struct shared_barrier *)b;
    sync_pthread_lock(s->id);
    int busy = s->arrived != 0;
    sync_pthread_unlock(s->id);
    return busy ? EBUSY : 0;
}

int dsm_pthread_barrier_wait(pthread_barrier_t *b)
{
    PROFILE_SITE();
    if (!sync_pthread_object(b))
        return pthread_barrier_wait(b);
    struct shared_barrier *s = (struct shared_barrier *)b;
    uint32_t id = s->id;
    if (id < SYNC_PTHREAD_ID_BASE || id >= SYNC_PTHREAD_ID_END)
        log_fatal("pthread_barrier_wait(%p): a barrier pthread_barrier_init did not initialise",
                  (void *)b);
    int ret = 0;
    sync_pthread_lock(id);
    uint32_t generation = s->generation;
    if (++s->arrived == s->count) {
        s->arrived = 0;
        s->generation = generation + 1;
        sync_cond_broadcast((int)id);
        ret = PTHREAD_BARRIER_SERIAL_THREAD;
    } else {
        while (s->generation == generation)
            sync_cond_wait((int)id, (int)id);
    }
    sync_pthread_unlock(id);
    return ret;
}
