/*
 * task_ring.c — the job's task queues: a page of shared memory for each
 * node, homed there (struct node_tasks), holding a ring of the tasks the
 * node offered and a list of those other nodes took and completed, under
 * that node's dsm lock (omp_lock.c); and this thread's view of its team's
 * queues (task_team_queues). Their operations (offer_call) run one
 * thread of the node at a time (task_offer.lock) off the shared stack:
 * offering a task (task_offer_queued), taking back this node's own
 * (task_offered_work, newest first), taking another's (task_steal.c),
 * handing a completion home, and a node's saying it passed a barrier
 * (task_barrier.c); task_queue_call_end makes the completions taken
 * complete here. Which tasks are offered: task_offer.c.
 *
 * The node's own threads take its offered tasks newest first, at their
 * waiting points, as the private queue's; another node's idle thread
 * takes the oldest (the largest, near the root), one steal in flight per
 * node, trying the nodes in turn (task_steal_until). A take is a dsm
 * lock acquire: the thief acquires what the creator released when it
 * offered the task (its data, the shared variables as they were), as a
 * lock grant carries them. Completion is the thief's release: it puts
 * the task on the queue's done list under the same lock, and the
 * creator's node, taking the lock again at its next waiting point,
 * acquires the task's writes before its count says the task is done
 * (taskwait, taskgroup's end, barrier).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/trace.h"
#include "dsm.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"
#include "sync/sync.h"

/* Tasks of this node offered to every node and not complete yet
 * (under task_nodeq.lock). */
DSM_STATE int task_offered_out;

struct node_tasks {
    uint64_t published; /* the point (team, barriers) this node passed with its tasks done */
    uint32_t head, tail; /* ring[head .. tail) offered, oldest first (mod OFFER_RING) */
    uint32_t ndone;      /* done[0 .. ndone): taken by another node and complete */
    uint32_t unused;
    uint64_t ring[OFFER_RING];
    uint64_t from[OFFER_RING]; /* each ring entry's prefix->from */
    uint64_t done[OFFER_RING];
};

DSM_STATE struct task_offer task_offer = {.lock = PTHREAD_MUTEX_INITIALIZER};

__thread struct task_team task_team TASK_TLS;

static struct node_tasks *node_page(struct node_tasks *nodes, int n)
{
    return (struct node_tasks *)((char *)nodes + (size_t)n * mem.page_size);
}

uint64_t omp_task_nodes(void)
{
    if (!task_offer.tried) {
        task_offer.tried = true;
        size_t len = (size_t)job()->nodes * mem.page_size;
        char *p = sizeof(struct node_tasks) <= mem.page_size ? dsm_malloc_home(len, DSM_HOME_BLOCK)
                                                             : NULL;
        if (p && (uintptr_t)p % mem.page_size == 0) {
            memset(p, 0, len);
            task_offer.nodes = (struct node_tasks *)p;
        } else if (p)
            dsm_free(p); /* no page of its own per node: tasks stay where they are made */
    }
    return (uint64_t)(uintptr_t)task_offer.nodes;
}

bool omp_tasks_seen(void) { return task_offer.seen; }

/* The queues, when this thread is in a team over several nodes (not a
 * nested or serialized one; a team of fewer threads than nodes spans
 * nodes 0 to team_nodes - 1, and only they take its tasks); else NULL. */
struct node_tasks *task_team_queues(void)
{
    struct omp_thread *t = omp_self_owing();
    if (!t->distributed || t->local_team || t->serialized || t->nthreads <= 1 || !t->region ||
        t->team_nodes < 2)
        return NULL;
    if (task_team.region != t->region || task_team.team != t->team) {
        task_team.region = t->region;
        task_team.team = t->team;
        task_team.nodes = (struct node_tasks *)(uintptr_t)t->region->task_nodes;
        task_team.seen = t->region->tasks_seen;
        task_team.single = false;
        /* Node 0 made them once for the job (omp_task_nodes); the other
         * nodes learn where they are here. */
        if (task_team.nodes && !__atomic_load_n(&task_offer.nodes, __ATOMIC_ACQUIRE))
            __atomic_store_n(&task_offer.nodes, task_team.nodes, __ATOMIC_RELEASE);
    }
    return task_team.nodes;
}

bool omp_tasks_may_leave(void) { return task_team_queues() != NULL; }

void omp_tasks_single_met(void)
{
    if (task_team_queues())
        task_team.single = true;
}

/* ---- the queues' operations, under their node's dsm lock ---- */

/* The task's record in the trace (trace.h, TRACE_TASK). */
void task_trace(enum trace_task what, int peer, const kmp_task_t *task, uint64_t t0)
{
    if (TRACE_ON && task)
        trace_put(TRACE_TASK, what, peer, (uint32_t)task_prefix_of((kmp_task_t *)task)->depth, t0,
                  clock_ns(), (uintptr_t)task);
}

/* Moves the queue's completions to task_offer.harvest (caller holds task_offer.lock). */
static int harvest(struct node_tasks *q)
{
    int n = (int)q->ndone;
    uint64_t now = TRACE_ON ? clock_ns() : 0;
    for (int i = 0; i < n; i++) {
        task_offer.harvest[i] = (kmp_task_t *)(uintptr_t)q->done[i];
        task_trace(TRACE_TASK_HARVESTED, job()->rank, task_offer.harvest[i], now);
    }
    q->ndone = 0;
    return n;
}

/* Takes entry i (an index of ring[head .. tail)) out of the ring, the
 * later ones moving down a place (caller holds the queue's lock). */
static kmp_task_t *ring_remove(struct node_tasks *q, uint32_t i)
{
    kmp_task_t *t = (kmp_task_t *)(uintptr_t)q->ring[i % OFFER_RING];
    for (uint32_t j = i + 1; j != q->tail; j++) {
        q->ring[(j - 1) % OFFER_RING] = q->ring[j % OFFER_RING];
        q->from[(j - 1) % OFFER_RING] = q->from[j % OFFER_RING];
    }
    q->tail--;
    return t;
}

/* Off the master's shared stack (base/stack.h): the lock's acquire may
 * invalidate the very pages of the caller's frames. */
static void offer_call(void *arg)
{
    struct offer_call c = *(struct offer_call *)arg;
    struct node_tasks *q = node_page(c.nodes, c.node);
    int id = omp_task_lock_id(c.node);
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    sync_lock(id);
    switch (c.op) {
    case OFFER_PUT:
        c.harvested = harvest(q);
        c.ok = q->tail - q->head < OFFER_RING;
        if (c.ok) {
            q->from[q->tail % OFFER_RING] = task_prefix_of(c.task)->from;
            q->ring[q->tail++ % OFFER_RING] = (uintptr_t)c.task;
        }
        break;
    case OFFER_TAKE_OWN: /* the newest this thread may start (task_run_one_locked) */
        c.harvested = harvest(q);
        c.task = NULL;
        for (uint32_t i = q->tail; i != q->head; i--) {
            kmp_task_t *t = (kmp_task_t *)(uintptr_t)q->ring[(i - 1) % OFFER_RING];
            if (task_current && !task_descends(task_prefix_of(t)->q, task_current))
                continue;
            c.task = ring_remove(q, i - 1);
            break;
        }
        break;
    case OFFER_STEAL: /* the oldest */
        c.task = q->head != q->tail ? (kmp_task_t *)(uintptr_t)q->ring[q->head++ % OFFER_RING]
                                    : NULL;
        c.ok = q->published >= c.point;
        break;
    case OFFER_TAKE_BACK: /* the oldest that descends from the task this thread waits in */
        c.task = NULL;
        for (uint32_t i = q->head; i != q->tail; i++) {
            uint64_t from = q->from[i % OFFER_RING];
            if (from && task_chain_node(from) == job()->rank &&
                task_descends_rec(task_chain_record(from)->parent, task_current_rec())) {
                c.task = ring_remove(q, i);
                break;
            }
        }
        break;
    case OFFER_DONE:
        if (q->ndone >= OFFER_RING)
            log_fatal("node %d's done list of OpenMP tasks is full: more completions than "
                      "tasks it offered", c.node);
        q->done[q->ndone++] = (uintptr_t)c.task;
        break;
    case OFFER_PUBLISH:
        if (q->published < c.point)
            q->published = c.point;
        break;
    }
    sync_unlock(id);
    if (c.op == OFFER_PUT && c.ok)
        task_trace(TRACE_TASK_OFFERED, c.node, c.task, t0);
    else if (c.op == OFFER_STEAL || c.op == OFFER_TAKE_BACK)
        task_trace(TRACE_TASK_TAKEN, c.node, c.task, t0);
    else if (c.op == OFFER_DONE)
        task_trace(TRACE_TASK_DONE, c.node, c.task, t0);
    *(struct offer_call *)arg = c;
}

void task_queue_call(struct offer_call *c)
{
    pthread_mutex_lock(&task_offer.lock);
    stack_private(offer_call, c);
}

/* Ends task_queue_call: the completions it found are complete here now. */
void task_queue_call_end(int harvested)
{
    for (int i = 0; i < harvested; i++) {
        kmp_task_t *task = task_offer.harvest[i];
        struct queued_task *q = task_prefix_of(task)->q;
        task_stolen_cost(task);
        bool tracked = q->tracked != NULL; /* then its record frees the task */
        pthread_mutex_lock(&task_nodeq.lock);
        task_routine_done_locked(q);
        pthread_mutex_unlock(&task_nodeq.lock);
        free(q);
        if (!tracked)
            task_free(task);
    }
    pthread_mutex_unlock(&task_offer.lock);
}

/* Offers the task of record q: a new one (task_offer_task), or a dependent
 * task's, counted already where it is waited for (task_submit_tracked).
 * False when the queue is full (then it stays here). make_room: a full
 * queue first takes the other nodes' completions (below). */
bool task_offer_queued(struct queued_task *q, bool make_room)
{
    struct task_rec *parent = q->parent;
    kmp_task_t *task = q->task;
    pthread_mutex_lock(&task_nodeq.lock);
    bool room = task_offered_out < OFFER_RING;
    if (!room && make_room && !task_queue_all) {
        /* Other nodes' completions are taken at this node's waiting
         * points, or here: a loop that makes every task and never waits
         * (a single making them all, BOTS's alignment) would offer its
         * first OFFER_RING and run every later one itself. Taking them
         * (and running its own newest offered task, a child of this
         * task's too) makes room. Not with throttling off: no task
         * runs before the next scheduling point then. */
        pthread_mutex_unlock(&task_nodeq.lock);
        task_offered_work();
        pthread_mutex_lock(&task_nodeq.lock);
        room = task_offered_out < OFFER_RING;
    }
    if (room) { /* counted before another node can complete it */
        if (!q->tracked) {
            parent->children++;
            if (q->group)
                q->group->count++;
            __atomic_fetch_add(&task_nodeq.outstanding, 1, __ATOMIC_RELAXED);
        }
        task_offered_out++;
        q->offered = true;
        /* A thread of this node asleep in task_await_locked went to sleep with
         * nothing offered, waiting for nothing but a wake-up here: with the
         * task offered it must poll for its completion, or take it back
         * (task_offered_work) — the other nodes may all be in a barrier that
         * steals nothing (a released dependent task, offered by the
         * node's other thread from task_nodeq.to_offer, waited so for ever). */
        pthread_cond_broadcast(&task_nodeq.done);
    }
    pthread_mutex_unlock(&task_nodeq.lock);
    if (!room)
        return false;
    task_prefix_of(task)->q = q;
    task_prefix_of(task)->cancel = q->cancel;
    struct offer_call c = {.op = OFFER_PUT, .nodes = task_offer.nodes, .node = job()->rank,
                           .task = task};
    task_queue_call(&c);
    task_queue_call_end(c.harvested);
    if (!c.ok) { /* not reached: task_offered_out bounds the ring */
        pthread_mutex_lock(&task_nodeq.lock);
        if (q->tracked)
            task_offered_out--;
        else
            task_complete_locked(q);
        q->offered = false;
        pthread_mutex_unlock(&task_nodeq.lock);
        task_prefix_of(task)->q = NULL;
        return false;
    }
    stats_add(STAT_PAR_TASKS_OFFERED, 1);
    return true;
}

/* Offers the task; false when the queue is full (then it stays here). */
bool task_offer_task(kmp_int32 gtid, kmp_task_t *task)
{
    struct queued_task *q = malloc(sizeof *q);
    if (!q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = task_current_rec();
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .cancel = task_group_cancel(parent)};
    if (task_offer_queued(q, true))
        return true;
    free(q);
    return false;
}

/* At a waiting point of the node that offered tasks: their completions
 * elsewhere, and one of them that this thread may run. Returns whether
 * anything changed. Caller does not hold task_nodeq.lock. */
bool task_offered_work(void)
{
    struct offer_call c = {.op = OFFER_TAKE_OWN, .nodes = task_offer.nodes, .node = job()->rank};
    task_queue_call(&c);
    int harvested = c.harvested;
    task_queue_call_end(harvested);
    if (c.task) {
        pthread_mutex_lock(&task_nodeq.lock);
        task_run_queued_locked(task_prefix_of(c.task)->q);
        pthread_mutex_unlock(&task_nodeq.lock);
    }
    return harvested > 0 || c.task;
}
