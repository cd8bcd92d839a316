/*
 * threads.c — a node's helper threads for fork style (dsmrun --threads T;
 * docs/design.md, "SMP nodes").
 *
 * With T > 1 a create runs its function on T threads of every node: the
 * node's own thread (the master's caller of dsm_create, a worker node's
 * worker thread) and T - 1 helpers, started at the first create and kept
 * for the next ones, each with its index (smp_index) and its own fault
 * stack. The node waits for its helpers (threads_join) before it reports
 * the create done: their writes are the node's, released with its own.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "mem/mem.h"
#include "runtime/runtime.h"

static DSM_STATE struct {
    pthread_mutex_t lock;
    pthread_cond_t  work, done;
    int             started;  /* helpers running (waiting for rounds) */
    int             helpers;  /* of this round: helpers 1 .. helpers run it */
    uint64_t        round;    /* creates handed to the helpers so far */
    int             running;  /* helpers still in this round's function */
    void          (*fn)(void *);
    void           *arg;
} team = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void *helper_main(void *arg)
{
    int index = (int)(intptr_t)arg;
    smp_set_index(index);
    mem_fault_watch_thread();
    uint64_t seen = 0;
    pthread_mutex_lock(&team.lock);
    for (;;) {
        while (team.round == seen)
            pthread_cond_wait(&team.work, &team.lock);
        seen = team.round;
        if (index > team.helpers)
            continue; /* a smaller round than this helper's number */
        void (*fn)(void *) = team.fn;
        void *fn_arg = team.arg;
        pthread_mutex_unlock(&team.lock);
        fn(fn_arg);
        pthread_mutex_lock(&team.lock);
        if (--team.running == 0)
            pthread_cond_broadcast(&team.done);
    }
    return NULL;
}

void threads_run(void (*fn)(void *), void *arg)
{
    int helpers = smp_threads() - 1;
    if (helpers <= 0)
        return;
    pthread_mutex_lock(&team.lock);
    if (team.started < helpers) {
        /* Detached: they wait for creates until the process ends. */
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        for (int i = team.started + 1; i <= helpers; i++) {
            pthread_t t;
            int err = pthread_create(&t, &a, helper_main, (void *)(intptr_t)i);
            if (err)
                log_fatal("cannot start thread %d of %d on this node: %s (DSM_THREADS)", i + 1,
                          helpers + 1, strerror(err));
        }
        pthread_attr_destroy(&a);
        team.started = helpers;
    }
    if (team.running)
        log_fatal("internal error: a create while the node's threads still run the last one");
    team.fn = fn;
    team.arg = arg;
    team.running = helpers;
    team.helpers = helpers;
    team.round++;
    pthread_cond_broadcast(&team.work);
    pthread_mutex_unlock(&team.lock);
}

void threads_join(void)
{
    pthread_mutex_lock(&team.lock);
    while (team.running)
        pthread_cond_wait(&team.done, &team.lock);
    pthread_mutex_unlock(&team.lock);
}
