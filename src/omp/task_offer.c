/*
 * task_offer.c — tasks that leave their node: which may (when one is
 * allocated, task_offer_candidate, its block then shared memory; when it
 * is deferred, task_offerable), and the cost model that keeps on its node
 * a task that costs more to move than to run. Called by any thread, with
 * no lock: the cost table's fields are atomics. How an offered task
 * travels and comes back: task_ring.c; taking one from another node:
 * task_steal.c.
 *
 * Every task's data must mean the same on the node that runs it as where
 * it was made. The master's main runs on a stack in the shared region
 * (runtime/master.c), and so does every other thread of a team over the
 * nodes, in the region and in the tasks it steals (region.c,
 * omp_run_shared); outside such a team a thread runs on a stack of its
 * own process. A task made on a shared stack, whose block is shared
 * memory and whose shareds (the addresses of the variables it shares)
 * all lie in the shared region, can run on any node. Such a task is
 * "offered": queued in its node's page of the job's task queues (shared
 * memory, one page a node, homed there), under that node's dsm lock
 * (omp_lock.c: one the node manages). Every other task stays on its node,
 * as before — those made on a private stack (a thread's outside a team
 * over the nodes; a firstprivate pointer there would name the thief's own
 * memory), proxy tasks (a detached one may
 * leave: its event's record stays here, below), included
 * tasks (made in a final task: they run at once where the final one
 * runs, which may be another node), tasks of a taskgroup with a task
 * reduction, and, with a tool attached, a task whose tool data is
 * a pointer into this process (tool_data_moves). A task made with a tool
 * carries its tool record (shared memory, beside the task) to the node
 * that runs it, whose copy of the tool reports its schedule; under
 * OMP_CANCELLATION=true a taskgroup's cancel word is shared memory (the
 * thief reads it at cancellation points and before it starts a task).
 * A task with dependences is offered once no earlier sibling it depends
 * on is incomplete (at its creation, or when the last such completes:
 * release_locked); its record stays here (task_submit_tracked), so its
 * completion, which comes back under the queues' lock, releases its
 * successors here — no dependence graph on other nodes.
 *
 * Cut-offs, so that a task that costs more to move than to run stays:
 * the depth (a task nested more than OFFER_DEPTH deep is never offered:
 * BOTS's own cut-off, which keeps the offered tasks the large ones near
 * the root of a recursion), the time a task of its kind takes (its
 * routine and depth: below OFFER_MIN_NS on average here, its children
 * included, a task of that kind stays: a steal costs a lock's round trip and the task's pages
 * fetched, 0.1-0.3 ms on this project's VM, and health's or sparselu's
 * small tasks offered one by one made them 2-6x slower on 2 nodes), what
 * the kind's tasks cost where they were taken (their steal and page
 * faults against their time: where moving them took more than their
 * work — OFFER_SLOWDOWN — the kind stays), and the queue's length (at
 * most OFFER_RING offered and not complete: beyond them the node has
 * work enough).
 *
 * Both times are measured, not guessed, and the second from the tasks
 * themselves rather than from how long their creator waited: a kind's
 * time here grows while its children run slowly on another node (the
 * creator waits for them), so a cut-off by that time alone kept a kind
 * or offered it by how its first runs happened to go — BOTS health on 2
 * nodes took 10 s or 20 s from run to run. A thief reports each stolen
 * task's time and the part of it spent stealing and faulting its pages
 * in (run_stolen, in the task's prefix, before its completion's
 * release); the creator adds them to the kind's record when it takes the
 * completion (task_queue_call_end).
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"

#define OFFER_MIN_NS  (1000 * 1000)
#define OFFER_SAMPLES 4 /* runs of a kind (here, or taken elsewhere) before their times decide */
/* A kind whose tasks taken by other nodes spent more than half their time
 * there stealing and faulting pages in, OFFER_COSTLY steals in a row,
 * stays: on 2 nodes such a thief adds less than half a node, and its
 * creator may wait for it. */
#define OFFER_SLOWDOWN 2
#define OFFER_COSTLY   16 /* such steals in a row */
#define COST_SLOTS    256

/* The time tasks took to run on this node (task_run()), by kind: the task's
 * routine (its construct in the source) and its depth. By kind, not by
 * depth alone: a program's tasks of one construct say nothing of
 * another's (a taskgroup's long tasks beside a recursion's small ones at
 * the same depth). An open-addressed table; a kind that finds no slot is
 * never cut off. */
static DSM_STATE struct task_cost task_cost[COST_SLOTS];

struct task_cost *task_cost_of(kmp_routine_entry_t routine, int depth, bool add)
{
    uintptr_t key = (uintptr_t)routine * 16 + (uintptr_t)depth; /* depth <= OFFER_DEPTH < 16 */
    size_t h = (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 56);
    for (size_t i = 0; i < COST_SLOTS; i++) {
        struct task_cost *c = &task_cost[(h + i) % COST_SLOTS];
        uintptr_t k = __atomic_load_n(&c->key, __ATOMIC_ACQUIRE);
        if (k == key)
            return c;
        if (k)
            continue;
        if (!add)
            return NULL;
        if (__atomic_compare_exchange_n(&c->key, &k, key, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE) ||
            k == key)
            return c;
    }
    return NULL;
}

/* Whether a task about to be allocated may be offered: its block is then
 * taken from shared memory. Not when the task making it has its data in
 * this node's own memory: a pointer to one of that task's private
 * variables may reach the new one through its shared variables (BOTS
 * floorplan passes its task's private `board` and `cells` to the next
 * level's tasks), and the node that ran it would read nothing there. By
 * induction, a task with a shared block has ancestors whose data are all
 * shared; their stack frames are on the shared stack (stack_on_shared). */
bool task_offer_candidate(int32_t flags, kmp_routine_entry_t routine)
{
    if (job()->nodes <= 1 || task_in_final || (flags & TASK_PROXY) ||
        task_current_rec()->data_private)
        return false;
    int depth = task_current_rec()->depth + 1; /* the new task's */
    if (depth > OFFER_DEPTH || !stack_on_shared() || !task_team_queues())
        return false;
    struct task_cost *c = task_cost_of(routine, depth, false);
    if (!c)
        return true;
    if (__atomic_load_n(&c->kept, __ATOMIC_RELAXED))
        return false;
    uint64_t runs = __atomic_load_n(&c->runs, __ATOMIC_RELAXED);
    return runs < OFFER_SAMPLES || __atomic_load_n(&c->ns, __ATOMIC_RELAXED) / runs >= OFFER_MIN_NS;
}

/* A completion taken from another node: what the task cost there. A
 * kind stays here from then on once OFFER_COSTLY of its steals in a row,
 * after the first OFFER_SAMPLES, spent more than 1/OFFER_SLOWDOWN of
 * their time stealing and faulting (its later tasks are never taken, so
 * nothing would say otherwise). In a row, and not from the first ones:
 * the first steals of a kind fault in what every task of it reads, and
 * a sum of a few of them kept BOTS alignment home in two runs of three
 * (its first steals spent two thirds of their time faulting the
 * sequences in, the later ones a tenth, and 2 nodes took 12.1 s or 7.6).
 * Health's village subtrees fault every time: 22 ms on node 1, 20 of them
 * faulting, where node 0 runs one in 1 ms. */
void task_stolen_cost(kmp_task_t *task)
{
    struct task_prefix *p = task_prefix_of(task);
    if (p->depth < 1 || p->depth > OFFER_DEPTH)
        return;
    struct task_cost *c = task_cost_of(task->routine, p->depth, true);
    if (!c || __atomic_add_fetch(&c->stolen, 1, __ATOMIC_RELAXED) <= OFFER_SAMPLES)
        return;
    if ((uint64_t)p->moved_us * OFFER_SLOWDOWN <= p->stolen_us)
        __atomic_store_n(&c->costly, 0, __ATOMIC_RELAXED);
    else if (__atomic_add_fetch(&c->costly, 1, __ATOMIC_RELAXED) == OFFER_COSTLY &&
             !__atomic_exchange_n(&c->kept, 1, __ATOMIC_RELAXED))
        stats_add(STAT_PAR_TASK_KINDS_KEPT, 1);
}

/* A tool's data for the task (set at its creation) must mean the same on
 * the node that runs it: a value (an id, a count) does, a pointer into
 * this process's own memory (a tool's record on its heap) names nothing,
 * or something else, on another node — such a task stays. Told apart by
 * whether the address is mapped here (mincore fails on an address no
 * mapping holds): a value that happens to be one keeps its task here,
 * never the other way round. */
static bool tool_data_moves(uint64_t data)
{
    if (data == 0 || mem_contains((void *)(uintptr_t)data))
        return true;
    unsigned char in_core;
    return mincore((void *)(uintptr_t)(data & ~(uint64_t)(mem.page_size - 1)), 1, &in_core) != 0;
}

/* Whether the task, about to be deferred, may run on another node. */
bool task_offerable(kmp_task_t *task)
{
    struct task_prefix *p = task_prefix_of(task);
    if (!mem_contains(p) || (p->flags & TASK_PROXY) || task_offer.completions || task_in_final ||
        !stack_on_shared() || !task_team_queues())
        return false;
    if (p->tool && !tool_data_moves(p->tool->data))
        return false;
    int *cancel = task_group_cancel(task_current_rec()); /* read where the task runs: shared memory */
    if (cancel && !mem_contains(cancel))
        return false;
    for (struct taskgroup *g = task_current_rec()->group; g; g = g->outer)
        if (g->reduction)
            return false;
    if (p->shareds_len % sizeof(void *))
        return false;
    void *const *shared = task->shareds;
    for (size_t i = 0; i < p->shareds_len / sizeof(void *); i++)
        if (!mem_contains(shared[i]))
            return false;
    return true;
}
