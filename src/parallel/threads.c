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
 *
 * OpenMP runs a region as a round (omp/team_layout.c), a hundred a second
 * in NPB CG: helpers wait for the next round and the node's thread for
 * the helpers spinning briefly first (base/spin.h), sleeping after that,
 * and a round's start and end signal only those asleep.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/smp.h"
#include "base/spin.h"
#include "base/state.h"
#include "mem/mem.h"
#include "parallel/threads.h"

static DSM_STATE struct {
    pthread_mutex_t lock;
    pthread_cond_t  work, done;
    int             started;  /* helpers running (waiting for rounds) */
    int             helpers;  /* of this round: helpers 1 .. helpers run it */
    /* Written under lock; read without it by spinning waiters, the
     * writer's store releasing what came before it. */
    _Atomic uint64_t round;   /* creates handed to the helpers so far */
    _Atomic int     running;  /* helpers still in this round's function */
    int             idle_asleep;   /* helpers on `work` (under lock) */
    bool            joiner_asleep; /* the node's thread on `done` (under lock) */
    void          (*fn)(void *);
    void           *arg;
} team = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

struct round_wait { uint64_t seen; };

static bool round_started(void *arg)
{
    const struct round_wait *w = arg;
    return atomic_load_explicit(&team.round, memory_order_acquire) != w->seen;
}

static bool round_ended(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&team.running, memory_order_acquire) == 0;
}

static void *helper_main(void *arg)
{
    int index = (int)(intptr_t)arg;
    smp_set_index(index);
    mem_fault_watch_thread();
    struct round_wait w = {0};
    struct spin spin = {0};
    for (;;) {
        if (!spin_until(&spin, round_started, &w)) {
            pthread_mutex_lock(&team.lock);
            team.idle_asleep++;
            while (!round_started(&w))
                pthread_cond_wait(&team.work, &team.lock);
            team.idle_asleep--;
            pthread_mutex_unlock(&team.lock);
        }
        pthread_mutex_lock(&team.lock);
        w.seen = team.round;
        if (index > team.helpers) {
            pthread_mutex_unlock(&team.lock);
            continue; /* a smaller round than this helper's number */
        }
        void (*fn)(void *) = team.fn;
        void *fn_arg = team.arg;
        pthread_mutex_unlock(&team.lock);
        fn(fn_arg);
        pthread_mutex_lock(&team.lock);
        bool last = atomic_fetch_sub_explicit(&team.running, 1, memory_order_release) == 1;
        bool wake = last && team.joiner_asleep;
        pthread_mutex_unlock(&team.lock);
        if (wake)
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
    atomic_fetch_add_explicit(&team.round, 1, memory_order_release);
    bool wake = team.idle_asleep > 0;
    pthread_mutex_unlock(&team.lock);
    if (wake)
        pthread_cond_broadcast(&team.work);
}

void threads_join(void)
{
    static __thread struct spin spin;
    if (spin_until(&spin, round_ended, NULL))
        return;
    pthread_mutex_lock(&team.lock);
    team.joiner_asleep = true;
    while (!round_ended(NULL))
        pthread_cond_wait(&team.done, &team.lock);
    team.joiner_asleep = false;
    pthread_mutex_unlock(&team.lock);
}

int threads_started(void)
{
    pthread_mutex_lock(&team.lock);
    int n = team.started;
    pthread_mutex_unlock(&team.lock);
    return n;
}

/* ---- groups: helpers for nested teams beside the round ------------------- */

/* Indices from the top of what the node's slots hold (parallel's claim and
 * chunk slots: 256), so that no round's helper (1 .. T - 1) has one. */
#define GROUP_INDEX_MAX 256

struct group_helper {
    pthread_mutex_t       lock;
    pthread_cond_t        work;
    bool                  started, busy;
    void                (*fn)(void *);
    void                 *arg;
    int                   position;
    struct threads_group *group;
};

struct threads_group {
    pthread_mutex_t lock;
    pthread_cond_t  done;
    int             running;
    int             count;
    int             index[GROUP_INDEX_MAX];
};

static DSM_STATE struct {
    pthread_mutex_t     lock;
    bool                taken[GROUP_INDEX_MAX];
    struct group_helper helper[GROUP_INDEX_MAX];
} groups = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread int group_position;

int threads_group_position(void) { return group_position; }

static void *group_main(void *arg)
{
    int index = (int)(intptr_t)arg;
    struct group_helper *h = &groups.helper[index];
    smp_set_index(index);
    mem_fault_watch_thread();
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (!h->busy)
            pthread_cond_wait(&h->work, &h->lock);
        void (*fn)(void *) = h->fn;
        void *fn_arg = h->arg;
        struct threads_group *g = h->group;
        group_position = h->position;
        pthread_mutex_unlock(&h->lock);
        fn(fn_arg);
        pthread_mutex_lock(&h->lock);
        h->busy = false;
        pthread_mutex_unlock(&h->lock);
        pthread_mutex_lock(&g->lock);
        bool last = --g->running == 0;
        pthread_mutex_unlock(&g->lock);
        if (last)
            pthread_cond_broadcast(&g->done);
    }
    return NULL;
}

struct threads_group *threads_group_run(int count, void (*fn)(void *), void *arg)
{
    if (count < 1 || count >= GROUP_INDEX_MAX)
        return NULL;
    struct threads_group *g = calloc(1, sizeof *g);
    if (!g)
        log_fatal("out of memory for a group of this node's threads");
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->done, NULL);
    int started = threads_started(); /* the round's helpers: 1 .. started */
    pthread_mutex_lock(&groups.lock);
    int low = smp_threads() > started ? smp_threads() : started + 1;
    /* The caller's own block first (16 a thread of the outer team, from
     * the top): a thread's nested teams have the same helpers each time,
     * as libomp's hot teams do, so what a helper showed (its affinity
     * line, its OMPT id) stays its. Any free index after that. */
    int first = GROUP_INDEX_MAX - 1 - smp_index() * 16;
    for (int i = first; i > first - 16 && i >= low && g->count < count; i--)
        if (!groups.taken[i])
            g->index[g->count++] = i;
    for (int i = GROUP_INDEX_MAX - 1; i >= low && g->count < count; i--) {
        bool have = false;
        for (int k = 0; k < g->count; k++)
            have |= g->index[k] == i;
        if (!groups.taken[i] && !have)
            g->index[g->count++] = i;
    }
    if (g->count < count) {
        pthread_mutex_unlock(&groups.lock);
        free(g);
        return NULL;
    }
    for (int k = 0; k < count; k++)
        groups.taken[g->index[k]] = true;
    pthread_mutex_unlock(&groups.lock);
    g->running = count;
    for (int k = 0; k < count; k++) {
        int i = g->index[k];
        struct group_helper *h = &groups.helper[i];
        if (!h->started) {
            pthread_mutex_init(&h->lock, NULL);
            pthread_cond_init(&h->work, NULL);
            h->started = true;
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
            pthread_t t;
            int err = pthread_create(&t, &a, group_main, (void *)(intptr_t)i);
            pthread_attr_destroy(&a);
            if (err)
                log_fatal("cannot start a thread of a nested team on this node: %s", strerror(err));
        }
        pthread_mutex_lock(&h->lock);
        h->fn = fn;
        h->arg = arg;
        h->position = k + 1;
        h->group = g;
        h->busy = true;
        pthread_mutex_unlock(&h->lock);
        pthread_cond_signal(&h->work);
    }
    return g;
}

void threads_group_join(struct threads_group *g)
{
    pthread_mutex_lock(&g->lock);
    while (g->running > 0)
        pthread_cond_wait(&g->done, &g->lock);
    pthread_mutex_unlock(&g->lock);
    pthread_mutex_lock(&groups.lock);
    for (int k = 0; k < g->count; k++)
        groups.taken[g->index[k]] = false;
    pthread_mutex_unlock(&groups.lock);
    pthread_cond_destroy(&g->done);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void threads_group_each(void (*fn)(void *), void *arg)
{
    struct threads_group *g = calloc(1, sizeof *g);
    if (!g)
        log_fatal("out of memory for a group of this node's threads");
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->done, NULL);
    pthread_mutex_lock(&groups.lock);
    for (int i = 0; i < GROUP_INDEX_MAX; i++)
        if (groups.helper[i].started && !groups.taken[i]) {
            groups.taken[i] = true;
            g->index[g->count++] = i;
        }
    pthread_mutex_unlock(&groups.lock);
    g->running = g->count;
    for (int k = 0; k < g->count; k++) {
        struct group_helper *h = &groups.helper[g->index[k]];
        pthread_mutex_lock(&h->lock);
        h->fn = fn;
        h->arg = arg;
        h->position = 0;
        h->group = g;
        h->busy = true;
        pthread_mutex_unlock(&h->lock);
        pthread_cond_signal(&h->work);
    }
    threads_group_join(g);
}
