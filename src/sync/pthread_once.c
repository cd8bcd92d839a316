/*
 * pthread_once.c — a dsmcc program's once controls in shared memory
 * (include/dsm/pthread.h): the routine runs once in the job.
 *
 * The control (an int, PTHREAD_ONCE_INIT 0) goes 0 -> running -> done
 * under one dsm lock of the job, SYNC_PTHREAD_ONCE_ID, with a condition
 * of the same id for the threads that find it running. Every call takes
 * the lock, even once done: seeing "done" without an acquire would not
 * show the routine's writes under release consistency. The routine runs
 * without the lock, so it may call pthread_once itself.
 */
#include <dsm/pthread.h>

#include "sync/sync.h"

enum { ONCE_NOT_RUN = 0, ONCE_RUNNING = 1, ONCE_DONE = 2 };

int dsm_pthread_once(pthread_once_t *once, void (*init)(void))
{
    if (!sync_pthread_object(once))
        return pthread_once(once, init);
    volatile int *state = (volatile int *)once;
    sync_pthread_lock(SYNC_PTHREAD_ONCE_ID);
    while (*state == ONCE_RUNNING)
        sync_cond_wait(SYNC_PTHREAD_ONCE_ID, SYNC_PTHREAD_ONCE_ID);
    bool mine = *state == ONCE_NOT_RUN;
    if (mine)
        *state = ONCE_RUNNING;
    sync_pthread_unlock(SYNC_PTHREAD_ONCE_ID);
    if (!mine)
        return 0;
    init();
    sync_pthread_lock(SYNC_PTHREAD_ONCE_ID);
    *state = ONCE_DONE;
    sync_cond_broadcast(SYNC_PTHREAD_ONCE_ID);
    sync_pthread_unlock(SYNC_PTHREAD_ONCE_ID);
    return 0;
}
