/*
 * task_queue.c — the node's queue of tasks (several threads of a team on
 * the node: task.c describes it), and its waiting points: the records of
 * the tasks that run here (the current one's, and the chains that tell a
 * task's descendants, which alone a waiting task may start), queuing a
 * task (task_defer) and taking one (task_run_one_locked), and waiting
 * until a count is 0 (task_wait_zero_locked): a taskwait's children, a
 * taskgroup's tasks, the node's. A waiting thread runs what it may
 * meanwhile, and where this node offered tasks or has events another
 * node may fulfil it polls for their completions (task_ring.c,
 * task_event.c) and takes a descendant back (task_steal.c). The queue
 * and every count are under task_nodeq.lock, which the callers of the
 * _locked functions hold; a task runs with it dropped.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_lists.h"
#include "omp/task_state.h"

DSM_STATE struct task_nodeq task_nodeq = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                          .done = PTHREAD_COND_INITIALIZER};

/* KMP_ENABLE_TASK_THROTTLING=0: every task is queued, even on a node of
 * one thread, and runs at the next scheduling point (a barrier, taskwait,
 * the region's end), as libomp without throttling. */
DSM_STATE bool task_queue_all;

void omp_tasks_throttle(bool on) { task_queue_all = !on; }

/* The task this thread runs now (its implicit task's record when none). */
__thread struct task_rec task_implicit_rec TASK_TLS;
__thread struct task_rec *task_current TASK_TLS;

/* The task taken from another node at the root of the running task's
 * ancestors on this node (task_chain_mark of it); 0: they begin at this
 * thread's implicit task. A task made now carries it (prefix->from), so
 * the node it was taken from can tell that the new task descends from
 * one of its own (task_descends_rec) — a thread waiting there for that one
 * may run it. */
uint64_t task_chain_from(void)
{
    const struct task_rec *r = task_current_rec();
    while (r->parent)
        r = r->parent;
    return r->depth > 0 ? ((const struct stolen_rec *)r)->self : 0;
}

/* Whether the task of record r, or one of its ancestors, is the task of
 * record `a`. Depths fall by one a level up, so the walk stops above a's
 * depth: a task not below `a` costs the difference of their depths, not
 * its own depth (BOTS uts on 2 x 2, a tree 1,572 deep, spent 62 % of its
 * time walking to the root for every queued task a taskwait passed
 * over). At a task taken from another node the walk goes on where its
 * chain last left this node, if it did (a task of this node taken by
 * another, whose descendant this node took back: struct stolen_rec);
 * a chain through a third node is not followed (its records are there):
 * the answer is then no, which only keeps a task where it is. */
bool task_descends_rec(const struct task_rec *r, const struct task_rec *a)
{
    while (r && r->depth >= a->depth) {
        if (r == a)
            return true;
        if (r->parent || r->depth == 0) {
            r = r->parent;
            continue;
        }
        uint64_t from = ((const struct stolen_rec *)r)->from;
        if (!from || task_chain_node(from) != job()->rank)
            return false;
        r = task_chain_record(from)->parent;
    }
    return false;
}

/* Whether the queued task descends from the task of record `a`. */
bool task_descends(const struct queued_task *q, const struct task_rec *a)
{
    return task_descends_rec(q->parent, a);
}

/* A queued task (not a tracked one) is complete: its parent, its
 * taskgroup and the node stop counting it. Caller holds task_nodeq.lock. */
void task_complete_locked(struct queued_task *q)
{
    /* read unlocked: task_wait_children */
    __atomic_fetch_sub(&q->parent->children, 1, __ATOMIC_RELEASE);
    if (q->group)
        q->group->count--;
    if (q->offered)
        task_offered_out--;
    __atomic_fetch_sub(&task_nodeq.outstanding, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&task_nodeq.done);
}

/* A queued task's routine has returned, here or on the node that took
 * it: a tracked one (a dependent task) may not be complete yet, and its
 * completion releases the siblings that depend on it. Caller holds
 * task_nodeq.lock. */
void task_routine_done_locked(struct queued_task *q)
{
    if (!q->tracked) {
        task_complete_locked(q);
        return;
    }
    if (q->offered)
        task_offered_out--;
    task_finish_part_locked(q->tracked);
}

/* Runs a task taken off the queue (or a tracked one due now); caller
 * holds task_nodeq.lock, which is dropped while the task runs. */
void task_run_queued_locked(struct queued_task *q)
{
    pthread_mutex_unlock(&task_nodeq.lock);
    struct task_rec rec = {.children = 0, .group = q->group, .parent = q->parent,
                           .depth = task_prefix_of(q->task)->depth, .cancel = q->cancel,
                           .data_private = !mem_contains(q->task)};
    struct task_rec *outer = task_current;
    task_current = &rec;
    task_run(q->gtid, q->task);
    if (!q->tracked)
        task_free(q->task);
    pthread_mutex_lock(&task_nodeq.lock);
    /* Its children hold its record: they finish before it does. */
    task_wait_zero_locked(&rec.children);
    task_current = outer;
    task_routine_done_locked(q); /* a proxy or detached one may not be complete yet */
    free(q);
}

static struct queued_task *queued_of(struct task_link *k)
{
    return k ? (struct queued_task *)((char *)k - offsetof(struct queued_task, link)) : NULL;
}

/* Whether this thread may start queued task q now: a thread waiting
 * inside an explicit task may only start its descendants (OpenMP's task
 * scheduling constraint: a task waiting on it could hold a lock or
 * critical section another task needs); in its implicit task, any. */
static bool may_start(const struct queued_task *q)
{
    return !task_current || task_descends(q, task_current);
}

/* Queues q on this thread's list (the common list where it has none) and
 * wakes the node's waiting threads. Caller holds task_nodeq.lock. */
void task_queue_locked(struct queued_task *q)
{
    struct task_list *mine = task_list_mine(&task_nodeq.lists, &task_nodeq.lock);
    task_list_push(&task_nodeq.lists, mine ? mine : &task_nodeq.lists.common, &q->link);
    pthread_cond_broadcast(&task_nodeq.done);
}

/* The queued task this thread takes next, if any may start: the newest of
 * its own — only the newest: what a thread queued while it ran the task
 * it waits in lies above all it queued before, and descends from that
 * task, while all below it was queued before and cannot (a thread runs
 * every task it starts to its end, an untied one too) — else the first
 * of the common list that may start, else the oldest of another thread's
 * if it may (libomp's thieves look at the oldest alone too: a thread
 * runs every task it queued, or waits for it, so nothing is left behind
 * for want of a thief that looks deeper). */
static struct queued_task *next_queued_locked(void)
{
    struct task_lists *ls = &task_nodeq.lists;
    struct task_list *mine = task_list_mine(ls, &task_nodeq.lock);
    struct queued_task *q;
    if (mine && (q = queued_of(mine->newest)) && may_start(q))
        return q;
    for (struct task_link *k = ls->common.newest; k; k = k->older)
        if (may_start(q = queued_of(k)))
            return q;
    int me = mine ? (int)(mine - ls->own) : 0;
    for (int i = 1; i <= TASK_LISTS; i++) {
        int s = (me + i) % TASK_LISTS;
        if ((ls->used >> s & 1) && (q = queued_of(ls->own[s].oldest)) && may_start(q))
            return q;
    }
    return NULL;
}

/* Offers a released dependent task, or runs one queued task that this
 * thread may start (next_queued_locked); caller holds task_nodeq.lock, which
 * is dropped meanwhile. Returns false when there was nothing to do. */
bool task_run_one_locked(void)
{
    struct queued_task *q;
    if ((q = task_nodeq.to_offer)) { /* offering one starts nothing: any thread may */
        task_nodeq.to_offer = q->next;
        pthread_mutex_unlock(&task_nodeq.lock);
        bool offered = task_offer_queued(q, false);
        pthread_mutex_lock(&task_nodeq.lock);
        if (!offered) /* the queue is full: the node's threads run it */
            task_list_push(&task_nodeq.lists, &task_nodeq.lists.common, &q->link);
        return true;
    }
    if (!(q = next_queued_locked()))
        return false;
    task_list_remove(&task_nodeq.lists, &q->link);
    task_run_queued_locked(q);
    return true;
}

/* Sleeps a little longer each time nothing came (50 us to 2 ms): the
 * other nodes' completions come by no signal of this node's. */
void task_pause_locked(unsigned *us)
{
    *us = *us ? (*us < 1000 ? *us * 2 : 2000) : 50;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)*us * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&task_nodeq.done, &task_nodeq.lock, &ts);
}

/* Nothing to run now: waits for *count to change — for a task of this
 * node to be queued or to complete, or (polled, with a pause growing
 * while nothing comes) for another node to complete a task this node
 * offered or to fulfil an event of a task here (below); meanwhile it may
 * run a descendant of the waited task that another node offered
 * (task_take_back). Caller holds task_nodeq.lock. */
void task_await_locked(const int *count, struct waiting *w)
{
    bool offered = task_offered_out > 0, events = task_shared_events > 0;
    if (!offered && !events) {
        pthread_cond_wait(&task_nodeq.done, &task_nodeq.lock);
        return;
    }
    pthread_mutex_unlock(&task_nodeq.lock);
    bool changed = offered && task_offered_work();
    if (events && task_take_fulfilments())
        changed = true;
    if (!changed && offered && w->polls++ == w->next_back) {
        changed = task_take_back();
        w->gap = changed || !w->gap ? 1 : w->gap < TAKE_BACK_GAP ? w->gap * 2 : TAKE_BACK_GAP;
        w->next_back = w->polls + w->gap - 1;
    }
    pthread_mutex_lock(&task_nodeq.lock);
    if (changed)
        w->us = 0;
    else if (*count > 0)
        task_pause_locked(&w->us);
}

/* Until *count is 0, running what this thread may run meanwhile (caller
 * holds task_nodeq.lock). */
void task_wait_zero_locked(const int *count)
{
    struct waiting w = {0};
    while (*count > 0) {
        if (task_run_one_locked()) {
            w.us = 0;
            continue;
        }
        task_await_locked(count, &w);
    }
}

/* Runs queued tasks until *count is 0 (a task's children, a group's
 * tasks, the node's tasks). */
void task_run_until_zero(const int *count)
{
    pthread_mutex_lock(&task_nodeq.lock);
    task_wait_zero_locked(count);
    pthread_mutex_unlock(&task_nodeq.lock);
}

/* With a tool attached, a node of one thread in a team of several queues
 * the tasks it cannot offer for the next scheduling point, as libomp
 * does in a team (its deque, 256 a thread, beyond which it runs a task at
 * once: TOOL_DEFER_MAX a node here), so that the tool's record has
 * libomp's shape — creations before runs, a dependence on a task still
 * pending. Without a tool such a node runs them at once (OpenMP allows
 * either; at once keeps the task's data in the cache). */
#define TOOL_DEFER_MAX 256
bool task_tool_should_defer(void)
{
    return omp_tool_on && omp_self()->nthreads > 1 &&
           __atomic_load_n(&task_nodeq.outstanding, __ATOMIC_RELAXED) < TOOL_DEFER_MAX;
}

/* Whether a task this thread cannot offer is queued, not run at once:
 * the node has other threads of the team (unless this thread's own list
 * is full: task_lists.h), throttling is off, or a tool is attached
 * (above). */
bool task_should_defer(void)
{
    return (smp_multi() && !task_list_mine_full(&task_nodeq.lists)) || task_queue_all ||
           task_tool_should_defer();
}

void task_defer(kmp_int32 gtid, kmp_task_t *task)
{
    struct queued_task *q = malloc(sizeof *q);
    if (!q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = task_current_rec();
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .cancel = task_group_cancel(parent)};
    stats_add(STAT_PAR_TASKS_DEFERRED, 1);
    pthread_mutex_lock(&task_nodeq.lock);
    parent->children++;
    if (q->group)
        q->group->count++;
    __atomic_fetch_add(&task_nodeq.outstanding, 1, __ATOMIC_RELAXED);
    task_queue_locked(q);
    pthread_mutex_unlock(&task_nodeq.lock);
}

/* Whether the node's queue holds or waits for anything: several threads
 * of the team here, or a tracked task not complete (one thread per node
 * otherwise runs every task at once and has nothing to wait for). */
bool task_queue_in_use(void)
{
    return smp_multi() || task_queue_all ||
           __atomic_load_n(&task_nodeq.outstanding, __ATOMIC_ACQUIRE) > 0;
}

/* The current task's children, all done (taskwait; before a task with
 * dependences runs). A task whose children are done takes no lock: a
 * child's completion lowers the count with a release (task_complete_locked,
 * task_finish_part_locked), so what it wrote is this thread's once it reads 0
 * (uts's leaves each wait with no child: one lock of the node for each of
 * 4 million, a tenth of its time on one node of 2 threads). */
void task_wait_children(void)
{
    int *children = &task_current_rec()->children;
    if (task_queue_in_use() && __atomic_load_n(children, __ATOMIC_ACQUIRE) > 0)
        task_run_until_zero(children);
}
