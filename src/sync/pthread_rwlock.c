/*
 * pthread_rwlock.c — a dsmcc program's read-write locks in shared memory
 * (include/dsm/pthread.h): many readers or one writer, across nodes.
 *
 * The state — readers inside, the writer inside — lies in the lock object
 * under one dsm lock with a dsm condition of the same id; a reader or a
 * writer holds no dsm lock while inside. Consistency passes through the
 * dsm lock all the same: a writer's writes precede its unlock's release of
 * it, and every later reader or writer acquires it on the way in. Readers
 * are preferred, as in glibc's default: a reader enters while no writer
 * is inside, even if one waits (so a thread may take a read lock it
 * already holds again, as POSIX allows); writers may wait long.
 */
#include <dsm/pthread.h>
#include <errno.h>

#include "base/log.h"
#include "sync/sync.h"

/* All zero is PTHREAD_RWLOCK_INITIALIZER: named at first use. */
struct shared_rwlock {
    uint32_t id;
    uint32_t readers;
    uint32_t writer;      /* sync_pthread_me() of the writer inside; 0: none */
};
_Static_assert(sizeof(struct shared_rwlock) <= sizeof(pthread_rwlock_t), "pthread_rwlock_t too small");

int dsm_pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
    if (!sync_pthread_object(rw))
        return pthread_rwlock_init(rw, attr);
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr)
        pthread_rwlockattr_getpshared(attr, &pshared);
    if (pshared == PTHREAD_PROCESS_SHARED)
        sync_pthread_refuse("pthread_rwlock_init", "a process-shared read-write lock "
                            "(PTHREAD_PROCESS_SHARED) is for other processes");
    *rw = (pthread_rwlock_t){0};
    ((struct shared_rwlock *)rw)->id = sync_pthread_new_id();
    return 0;
}

int dsm_pthread_rwlock_destroy(pthread_rwlock_t *rw)
{
    return sync_pthread_object(rw) ? 0 : pthread_rwlock_destroy(rw);
}

/* Enters as a reader or a writer; with `try`, EBUSY rather than a wait. */
static int enter(pthread_rwlock_t *rw, bool writing, bool try)
{
    struct shared_rwlock *s = (struct shared_rwlock *)rw;
    uint32_t id = sync_pthread_id_of(&s->id), me = sync_pthread_me();
    int ret = 0;
    sync_pthread_lock(id);
    if (s->writer == me)
        ret = EDEADLK;
    else if (writing) {
        while (!ret && (s->writer || s->readers)) {
            if (try)
                ret = EBUSY;
            else
                sync_cond_wait((int)id, (int)id);
        }
        if (!ret)
            s->writer = me;
    } else {
        while (!ret && s->writer) {
            if (try)
                ret = EBUSY;
            else
                sync_cond_wait((int)id, (int)id);
        }
        if (!ret) {
            if (s->readers == UINT32_MAX)
                ret = EAGAIN;
            else
                s->readers++;
        }
    }
    sync_pthread_unlock(id);
    return ret;
}

int dsm_pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
    return sync_pthread_object(rw) ? enter(rw, false, false) : pthread_rwlock_rdlock(rw);
}

int dsm_pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
    return sync_pthread_object(rw) ? enter(rw, true, false) : pthread_rwlock_wrlock(rw);
}

int dsm_pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
    return sync_pthread_object(rw) ? enter(rw, false, true) : pthread_rwlock_tryrdlock(rw);
}

int dsm_pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
    return sync_pthread_object(rw) ? enter(rw, true, true) : pthread_rwlock_trywrlock(rw);
}

int dsm_pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abstime)
{
    if (!sync_pthread_object(rw))
        return pthread_rwlock_timedrdlock(rw, abstime);
    sync_pthread_refuse("pthread_rwlock_timedrdlock", "a lock waited for with a time limit");
}

int dsm_pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abstime)
{
    if (!sync_pthread_object(rw))
        return pthread_rwlock_timedwrlock(rw, abstime);
    sync_pthread_refuse("pthread_rwlock_timedwrlock", "a lock waited for with a time limit");
}

int dsm_pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
    if (!sync_pthread_object(rw))
        return pthread_rwlock_unlock(rw);
    struct shared_rwlock *s = (struct shared_rwlock *)rw;
    uint32_t id = sync_pthread_id_of(&s->id), me = sync_pthread_me();
    int ret = 0;
    sync_pthread_lock(id);
    if (s->writer == me)
        s->writer = 0;
    else if (s->readers)
        s->readers--; /* a reader's: which one is not recorded */
    else
        ret = EPERM;
    if (!ret && !s->writer && !s->readers)
        sync_cond_broadcast((int)id);
    sync_pthread_unlock(id);
    return ret;
}
