/*
 * task_steal.c — tasks taken from other nodes' queues (task_ring.c), one
 * take in flight per node (task_offer.stealing): each runs here on this
 * thread's shared stack, its children too, and goes back complete with
 * what it cost here (run_stolen). A thread waiting in a task takes back a
 * descendant of it that another node offered (task_take_back, from
 * task_queue.c's waits); a node at a barrier takes the other nodes'
 * offered tasks until each has passed it (task_steal_until, from
 * task_barrier.c). No lock of the node's is held while a stolen task
 * runs; a take holds the queues' (task_queue_call).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/stats.h"
#include "base/trace.h"
#include "coherence/coherence.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"
#include "sync/sync.h"

static uint32_t us_of(uint64_t ns) { return ns / 1000 < UINT32_MAX ? (uint32_t)(ns / 1000) : UINT32_MAX; }

/* A task taken from another node (the take begun at `took`): run here,
 * its children here too (they finish before it), then handed back
 * complete, with what it cost here (task_stolen_cost). It runs on this
 * thread's shared stack (omp_run_shared), so that the tasks it makes may
 * be offered in turn. */
struct stolen {
    int                victim;
    kmp_task_t        *task;
    uint64_t           took;
};

static void run_stolen_call(void *arg)
{
    const struct stolen *s = arg;
    kmp_task_t *task = s->task;
    uint64_t faults = coherence_thread_fault_ns(), began = clock_ns();
    struct task_prefix *p = task_prefix_of(task);
    struct stolen_rec stolen = {
        .rec = {.children = 0, .group = NULL, .parent = NULL, .depth = p->depth,
                .cancel = p->cancel, .data_private = !mem_contains(task)},
        .self = task_chain_mark(s->victim, p->q), .from = p->from};
    struct task_rec *outer = task_current;
    task_current = &stolen.rec;
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    sync_refresh_begin(); /* its creator's writes reach a task that polls (sync/refresh.c) */
    task_run(omp_self_owing()->gtid, task);
    if (__atomic_load_n(&stolen.rec.children, __ATOMIC_ACQUIRE) > 0)
        task_run_until_zero(&stolen.rec.children);
    sync_refresh_end();
    uint64_t moved = (began - s->took) + (coherence_thread_fault_ns() - faults);
    task_prefix_of(task)->stolen_us = us_of(clock_ns() - s->took);
    task_prefix_of(task)->moved_us = us_of(moved);
    task_trace(TRACE_TASK_RAN, s->victim, task, t0);
    task_current = outer;
}

static void release_ran(void *arg) { (void)arg; } /* nothing more to do once it has */

/* A take from another node's queue (OFFER_STEAL, OFFER_TAKE_BACK): one in
 * flight per node. take_claim claims it (false: another thread of this
 * node is taking one); take_claimed makes the take at c->node and gives
 * the claim up, returning when the take began. */
static bool take_claim(void) { return !__atomic_exchange_n(&task_offer.stealing, 1, __ATOMIC_ACQUIRE); }

static uint64_t take_claimed(struct offer_call *c)
{
    uint64_t took = clock_ns();
    task_queue_call(c);
    task_queue_call_end(0);
    __atomic_store_n(&task_offer.stealing, 0, __ATOMIC_RELEASE);
    return took;
}

static void run_stolen(struct node_tasks *nodes, int victim, kmp_task_t *task, uint64_t took)
{
    struct stolen s = {.victim = victim, .task = task, .took = took};
    omp_run_shared(run_stolen_call, &s);
    stats_add(STAT_PAR_TASKS_STOLEN, 1);
    struct offer_call c = {.op = OFFER_DONE, .nodes = nodes, .node = victim, .task = task};
    task_queue_call(&c);
    task_queue_call_end(0);
    /* The completion's release stays pending here (lock.c: an unlock
     * nobody waits for), so the creator's next take of its own queue's
     * lock, soon, would wait for this node to send the task's diffs home
     * and have them acknowledged before the grant: 1.1 ms a hand-over in
     * BOTS sparselu (a bmod task writes a 160 KB block), 260 ms of node
     * 0's 2 s. Run it now, aside (the lock's releaser thread), while this
     * thread goes on: node 0's lock waits fell to 73 ms. */
    sync_after_kept_releases(release_ran, NULL);
}

/* A thread waiting for tasks of its node that other nodes took (in a
 * taskwait, a taskgroup's end, a barrier): the oldest task another node
 * offered that descends from the task it waits in — made below one of
 * the taken ones (prefix->from) — run here, as OpenMP lets a waiting
 * task start its descendants. Without it the first split of a recursion
 * stayed: BOTS fib on 2 nodes ran fib(n-1) on the thief and fib(n-2) on
 * the creator, which then waited out the difference. One victim a call,
 * in turn; returns whether a task was run. */
bool task_take_back(void)
{
    static __thread int victim;
    struct node_tasks *nodes = task_team_queues();
    if (!nodes)
        return false;
    int team_nodes = omp_self_owing()->team_nodes, me = job()->rank;
    if (me >= team_nodes || !take_claim())
        return false;
    do
        victim = (victim + 1) % team_nodes;
    while (victim == me);
    struct offer_call c = {.op = OFFER_TAKE_BACK, .nodes = nodes, .node = victim};
    uint64_t took = take_claimed(&c);
    if (!c.task)
        return false;
    stats_add(STAT_PAR_TASKS_TAKEN_BACK, 1);
    run_stolen(nodes, victim, c.task, took);
    return true;
}

/* A node at a barrier or the region's end, its own tasks done: the other
 * nodes' offered tasks (the team's nodes, 0 to team_nodes - 1), until every
 * one of them has passed this point. The victims in turn from the next
 * node after this one (each node starts elsewhere, so thieves spread
 * over the creators); a victim that has passed the point and had nothing
 * to take is left for the rest of this wait (what it offers later, the
 * children of a task it stole, it runs or its other thieves take). One
 * steal in flight per node. */
void task_steal_until(struct node_tasks *nodes, int team_nodes, uint64_t point)
{
    int me = job()->rank, left = team_nodes - 1, victim = me;
    bool passed[VT_MAX_NODES] = {false};
    unsigned us = 0;
    int tried = 0; /* victims asked since a task was last taken */
    while (left > 0) {
        if (__atomic_load_n(&task_nodeq.outstanding, __ATOMIC_ACQUIRE) > 0)
            task_run_until_zero(&task_nodeq.outstanding); /* what a stolen task made here */
        if (take_claim()) {
            do
                victim = (victim + 1) % team_nodes;
            while (victim == me || passed[victim]);
            struct offer_call c = {.op = OFFER_STEAL, .nodes = nodes, .node = victim,
                                   .point = point};
            uint64_t took = take_claimed(&c);
            if (c.task) {
                run_stolen(nodes, victim, c.task, took);
                us = 0;
                tried = 0;
                victim = (victim + team_nodes - 1) % team_nodes; /* it again next */
                continue;
            }
            if (c.ok) {
                passed[victim] = true;
                left--;
                continue;
            }
            if (++tried < left)
                continue; /* the next victim at once */
            tried = 0;
        }
        pthread_mutex_lock(&task_nodeq.lock);
        task_pause_locked(&us);
        pthread_mutex_unlock(&task_nodeq.lock);
    }
}
