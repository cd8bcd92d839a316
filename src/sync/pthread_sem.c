/*
 * pthread_sem.c — a dsmcc program's unnamed semaphores in shared memory
 * (include/dsm/pthread.h): a count under one dsm lock, with a dsm
 * condition of the same id for the threads waiting for it to rise.
 * A post's writes pass to the thread its count lets through (the lock).
 * Named semaphores (sem_open) are files of each node's own, a timed wait
 * has no dsm counterpart, and a process-shared one is for other
 * processes: each is refused in one line.
 */
#include <dsm/pthread.h>
#include <dsm.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>

#include "base/log.h"
#include "sync/sync.h"

struct shared_sem {
    uint32_t id;
    uint32_t value;
};
_Static_assert(sizeof(struct shared_sem) <= sizeof(sem_t), "sem_t too small");

static uint32_t sem_id(sem_t *s, const char *call)
{
    uint32_t id = ((struct shared_sem *)s)->id;
    if (id < SYNC_PTHREAD_ID_BASE || id >= SYNC_PTHREAD_ID_END)
        log_fatal("%s(%p): a semaphore sem_init did not initialise", call, (void *)s);
    return id;
}

int dsm_sem_init(sem_t *s, int pshared, unsigned value)
{
    if (!sync_pthread_object(s))
        return sem_init(s, pshared, value);
    if (pshared)
        sync_pthread_refuse("sem_init", "a process-shared semaphore is for other processes");
    if (value > SEM_VALUE_MAX) {
        errno = EINVAL;
        return -1;
    }
    *s = (sem_t){0};
    *(struct shared_sem *)s = (struct shared_sem){.id = sync_pthread_new_id(), .value = value};
    return 0;
}

int dsm_sem_destroy(sem_t *s)
{
    return sync_pthread_object(s) ? 0 : sem_destroy(s);
}

static int take(sem_t *s, bool try, const char *call)
{
    struct shared_sem *v = (struct shared_sem *)s;
    uint32_t id = sem_id(s, call);
    int ret = 0;
    sync_pthread_lock(id);
    while (v->value == 0 && !try)
        sync_cond_wait((int)id, (int)id);
    if (v->value)
        v->value--;
    else
        ret = -1;
    sync_pthread_unlock(id);
    if (ret)
        errno = EAGAIN;
    return ret;
}

int dsm_sem_wait(sem_t *s)
{
    return sync_pthread_object(s) ? take(s, false, "sem_wait") : sem_wait(s);
}

int dsm_sem_trywait(sem_t *s)
{
    return sync_pthread_object(s) ? take(s, true, "sem_trywait") : sem_trywait(s);
}

int dsm_sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    if (!sync_pthread_object(s))
        return sem_timedwait(s, abstime);
    sync_pthread_refuse("sem_timedwait", "a semaphore waited for with a time limit");
}

int dsm_sem_post(sem_t *s)
{
    if (!sync_pthread_object(s))
        return sem_post(s);
    struct shared_sem *v = (struct shared_sem *)s;
    uint32_t id = sem_id(s, "sem_post");
    int ret = 0;
    sync_pthread_lock(id);
    if (v->value >= SEM_VALUE_MAX)
        ret = -1;
    else {
        /* A signal at every post, not only from 0: two posts before the
         * first woken waiter runs must wake two. */
        v->value++;
        dsm_cond_signal((int)id);
    }
    sync_pthread_unlock(id);
    if (ret)
        errno = EOVERFLOW;
    return ret;
}

int dsm_sem_getvalue(sem_t *s, int *value)
{
    if (!sync_pthread_object(s))
        return sem_getvalue(s, value);
    struct shared_sem *v = (struct shared_sem *)s;
    uint32_t id = sem_id(s, "sem_getvalue");
    sync_pthread_lock(id);
    *value = (int)v->value;
    sync_pthread_unlock(id);
    return 0;
}

/* A named semaphore is a file of each node's own /dev/shm: no two nodes
 * would share it. */
sem_t *dsm_sem_open(const char *name, int oflag, ...)
{
    if (sync_pthreads_on)
        sync_pthread_refuse("sem_open", "a named semaphore lives in one node's files");
    if (!(oflag & O_CREAT))
        return sem_open(name, oflag);
    va_list ap;
    va_start(ap, oflag);
    mode_t mode = (mode_t)va_arg(ap, unsigned);
    unsigned value = va_arg(ap, unsigned);
    va_end(ap);
    return sem_open(name, oflag, mode, value);
}
