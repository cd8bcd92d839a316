/*
 * task_barrier.c — tasks at a barrier and at the region's end
 * (omp_tasks_complete): the node's threads of the team meet, running the
 * node's queued tasks (task_queue.c) until every one is done; then, where
 * tasks may leave their node, every node says it passed the point and
 * steals the other nodes' tasks until each has (task_steal.c). Called by
 * every thread of the team at each of its barriers, so a barrier with no
 * task costs no lock.
 *
 * Barriers and the region's end, where tasks may come — after a single
 * or a master (the constructs programs make their tasks in; every thread
 * of the team meets them, so every node agrees), or in a region begun
 * after node 0 had made a task: every node, once its threads of the team
 * have come and its own tasks are complete, says in its page that it
 * passed the point (the team and the number of barriers entered, the same
 * on every node there), and then keeps taking the other nodes' offered
 * tasks until each of them has said so. Until then the barrier cannot end
 * anyway: a node waits for its stolen tasks.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/job.h"
#include "base/spin.h"
#include "base/state.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"
#include "sync/sync.h"

/* The team's threads of this node that have come to a point (under task_nodeq.lock). */
static DSM_STATE struct {
    uint64_t point;
    int      count;
} arrivals;

/* The node's threads of a team at a barrier or the region's end: until
 * the last of them has come, one that came keeps running the node's
 * queued tasks — a thread still at work may make more and wait for them
 * to run (a master that waits for its task's signal), as libomp's threads
 * run tasks while they wait in a barrier. The last one runs what is left,
 * then lets them all go on. Outer teams only (a nested team of the node's
 * threads meets in its own barrier).
 *
 * This meeting comes at every barrier of a program with several threads
 * a node, tasks or none, so where there is no task it must cost what a
 * barrier in memory costs: the arrivals are counted without a lock, and
 * a thread with nothing to run spins (spin.h: bounded, not at all where
 * the node's threads outnumber its CPUs) on the round and the queue
 * before it sleeps. Measured on 16 cores, NPB C MG W on one node of 16
 * threads: 0.11 s before the meeting existed, 0.18 s with it under the
 * queues' lock, sleeping; 0.16 s spinning under the lock. */
static DSM_STATE struct {
    int      count; /* arrivals of this round (atomic) */
    unsigned round; /* stored under task_nodeq.lock (sleepers), read without it */
} gathered;

struct gather_wait { unsigned round; };

static bool gather_passed(const struct gather_wait *w)
{
    return __atomic_load_n(&gathered.round, __ATOMIC_ACQUIRE) != w->round;
}

/* A spinner's end: the round passed, or a task was queued (a hint read
 * without the lock; task_run_one_locked decides under it). */
static bool gather_moved(void *arg)
{
    return gather_passed(arg) || __atomic_load_n(&task_nodeq.lists.queued, __ATOMIC_ACQUIRE) > 0;
}

static void gather_node_threads(int here)
{
    static __thread struct spin spin;
    /* The round cannot pass before this thread has come: read it first. */
    struct gather_wait w = {__atomic_load_n(&gathered.round, __ATOMIC_ACQUIRE)};
    if (__atomic_add_fetch(&gathered.count, 1, __ATOMIC_ACQ_REL) >= here) {
        pthread_mutex_lock(&task_nodeq.lock);
        task_wait_zero_locked(&task_nodeq.outstanding);
        /* Reset before the round passes: the next round's first arrival
         * comes after it has seen the round pass. */
        __atomic_store_n(&gathered.count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&gathered.round, w.round + 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&task_nodeq.done);
        pthread_mutex_unlock(&task_nodeq.lock);
        return;
    }
    if (spin_until(&spin, gather_moved, &w) && gather_passed(&w))
        return;
    pthread_mutex_lock(&task_nodeq.lock);
    bool spun = true;
    while (!gather_passed(&w)) {
        if (task_run_one_locked()) {
            spun = false;
            continue;
        }
        if (!spun) { /* after a task: spin again before sleeping */
            pthread_mutex_unlock(&task_nodeq.lock);
            spun = true;
            bool passed = spin_until(&spin, gather_moved, &w) && gather_passed(&w);
            pthread_mutex_lock(&task_nodeq.lock);
            if (passed)
                break;
            continue;
        }
        pthread_cond_wait(&task_nodeq.done, &task_nodeq.lock);
    }
    pthread_mutex_unlock(&task_nodeq.lock);
}

void omp_tasks_complete(void)
{
    if (task_queue_in_use()) {
        struct omp_thread *t = omp_self_owing();
        int here = t->region && !t->local_team && !t->serialized
                       ? omp_team_on_node(t->nthreads, t->region->per_node, job()->rank)
                       : 1;
        if (here > 1)
            gather_node_threads(here);
        else
            task_run_until_zero(&task_nodeq.outstanding);
    }
    struct node_tasks *nodes = task_team_queues();
    if (!nodes)
        return;
    /* This point: the team, and the barriers entered (the same count on
     * every node here). A team over fewer nodes than the job's, or one
     * under OMP_CANCELLATION=true, meets in the team's lock-based barrier
     * (team_sync.c), which counts no epoch: its point is then the region's,
     * which every node publishes at each of its barriers and at the region's
     * end — a thief steals until each node's first, never waits past it. */
    uint64_t point = (uint64_t)task_team.team << 32 | (uint32_t)sync_barrier_epoch();
    bool tasks_may_come = task_team.seen || task_team.single;
    task_team.single = false;
    if (!tasks_may_come)
        return;
    /* Every node says it passed the point, once every thread of the team
     * here has come (another may still make tasks: the master, after a
     * `master` the others skipped). Only where tasks may come, which every
     * node of the team agrees on (the region's `seen`; a single or master
     * every thread meets): elsewhere no thief waits for it, and a barrier
     * of a program without tasks takes no lock. */
    struct omp_thread *t = omp_self_owing();
    int here = omp_team_on_node(t->nthreads, t->region->per_node, job()->rank);
    pthread_mutex_lock(&task_nodeq.lock);
    if (arrivals.point != point)
        arrivals.point = point, arrivals.count = 0;
    bool last = ++arrivals.count >= here;
    pthread_mutex_unlock(&task_nodeq.lock);
    if (last) {
        struct offer_call c = {.op = OFFER_PUBLISH, .nodes = nodes, .node = job()->rank,
                               .point = point};
        task_queue_call(&c);
        task_queue_call_end(0);
    }
    task_steal_until(nodes, t->team_nodes, point);
}
