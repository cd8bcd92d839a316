/*
 * task.c — explicit tasks, run at once by the thread that meets them or,
 * on a node that runs several threads of the team, queued for the node's
 * threads; and taskloop.
 *
 * OpenMP lets a task be executed immediately ("undeferred") by its
 * encountering thread; doing so always is a correct implementation, and on
 * a DSM it is also the one that never moves a task's private data between
 * nodes. taskwait and taskgroup then have nothing left to wait for, and
 * dependences are met by program order.
 *
 * An untied task may be suspended at a task scheduling point and resumed
 * by any thread: clang compiles it into parts, and at each such point the
 * running part hands the task back (__kmpc_omp_task on the task itself)
 * and returns. Here the part that returns is followed at once by the next
 * one, on the same thread (running an untied task as if tied is allowed).
 *
 * Several threads of the team on a node (team_layout.c): a task is
 * deferred into a queue of the node, which its threads run at their task
 * scheduling points — taskwait (until the waiting task's children are
 * done), a taskgroup's end (until the group's tasks are), a barrier and
 * the region's end (until every task of the node is), and a task's own
 * end (until its children are: a child's count lives in its parent's
 * record, so the parent waits for it; OpenMP allows the wait). A task
 * whose data means the same on every node (made on a shared stack by a
 * thread of a team over the nodes, its block and shareds in shared
 * memory) may instead be
 * offered to every node and run by another ("tasks that leave their
 * node", below); any other stays on its node (its private data is this
 * process's). A task with dependences that stays, while no tracked task
 * (below) is about, waits for its siblings before it runs at once, which
 * meets any dependence among them. With one thread per node, a task that
 * stays is not queued: it runs at once.
 *
 * Tasks that complete later than their routine returns: a detachable
 * task (`detach(event)`: complete once its routine has returned and
 * omp_fulfill_event has been called) and libomp's proxy tasks (a target
 * task's stand-in, completed by __kmpc_proxy_task_completed[_ooo], which
 * any thread may call). Each is "tracked": counted among its parent's
 * children, its taskgroup's and the node's tasks until it completes, so
 * taskwait, a taskgroup's end, a barrier and the region's end wait for
 * it (on a condition: its completion may come from a thread that is no
 * OpenMP thread, or from another node: "detach(event)" below). A task
 * with dependences on a tracked sibling not yet complete cannot run at
 * once: it is deferred, tracked too, and queued for the node's threads
 * (or offered to every node, when it may leave its node: below) once no
 * earlier sibling it depends on is left (in creation order, as OpenMP
 * orders dependences), so the encountering thread goes on at once, as
 * OpenMP asks. A task with dependences that may leave its node is
 * tracked too, wherever it runs. A tracked task's predecessors are found
 * per address, as libomp finds them ("struct dep_entry" below).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/spin.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/trace.h"
#include "dsm.h"
#include "mem/mem.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"
#include "omp/task_lists.h"
#include "sync/sync.h"

typedef kmp_int32 (*kmp_routine_entry_t)(kmp_int32, void *);

/* The head of clang's task object (kmp.h kmp_task_t); the compiler lays out
 * the privates after it and the shareds where `shareds` points. */
typedef struct kmp_task {
    void               *shareds;
    kmp_routine_entry_t routine;
    kmp_int32           part_id;
} kmp_task_t;

struct tracked;

/* Before each task: what taskloop needs to copy it, and what completes
 * it. 32 bytes, so the task keeps malloc's 16-byte alignment. */
struct task_prefix {
    size_t          size;       /* the task, its privates and its shareds */
    size_t          shareds_at; /* offset of the shareds from the task; 0: none */
    struct tracked *tracked;    /* a tracked task's record (under nodeq.lock) */
    int32_t         flags;      /* libomp's kmp_tasking_flags, as allocated */
    int32_t         parts;      /* a detached task: its routine's end and the
                                   event's fulfilment still to come (under nodeq.lock) */
    struct omp_tool_task *tool; /* OMPT: the task as a tool sees it (NULL: no tool) */
    /* Its routine is running on the thread that started it (an untied
     * task's part that hands it back asks for the next part: `again`).
     * The task's own, so that a part finds it at once however deep the
     * nesting of tasks is. */
    int32_t         running;
    int32_t         again;
    /* Tasks that leave their node (below): the shareds' bytes, the task's
     * depth (its parent's plus one), and its record on the node that made
     * it while it is offered to the other nodes. */
    uint32_t        shareds_len;
    int32_t         depth;
    struct queued_task *q;
    /* The cancel word of its taskgroup (below), for the node that runs it. */
    int            *cancel;
    /* Where its chain of ancestors last left the node that made it
     * (chain_from): a node and that node's record of the task taken from
     * it; 0: the chain begins at an implicit task there. */
    uint64_t        from;
    uint64_t        unused; /* to a multiple of 16 bytes */
    union {
        /* Taken by another node: what running it there cost (run_stolen),
         * for its creator's cut-off (queue_call_end). */
        struct {
            uint32_t stolen_us; /* from the steal to its end, children included */
            uint32_t moved_us;  /* of which the steal and the page faults */
        };
        /* A proxy task's (never taken): the handle of the event that
         * __kmpc_proxy_task_completed fulfils, from any node; 0: none. */
        uintptr_t proxy_event;
    };
};
_Static_assert(sizeof(struct task_prefix) % 16 == 0, "a task keeps malloc's alignment");

/* kmp_tasking_flags bits that matter here. */
enum { TASK_FINAL = 0x2, TASK_PROXY = 0x10, TASK_DETACHABLE = 0x40 };
/* Ours, above the compiler's bits: begun by __kmpc_omp_task_begin_if0. */
enum { TASK_BEGUN_IF0 = 0x40000000 };

/* KMP_ENABLE_TASK_THROTTLING=0: every task is queued, even on a node of
 * one thread, and runs at the next scheduling point (a barrier, taskwait,
 * the region's end), as libomp without throttling. */
static DSM_STATE bool queue_all;

void omp_tasks_throttle(bool on) { queue_all = !on; }

/* Final tasks running on this thread (omp_in_final). */
static __thread int in_final;

/* A taskyield is looking for a task to run: the first it begins is
 * reported to a tool as ompt_task_yield. */
static __thread bool yielding;

int omp_in_final(void) { return in_final > 0; }

static struct task_prefix *prefix_of(kmp_task_t *t) { return (struct task_prefix *)t - 1; }

/* A task's block in shared memory (`shared`: one that may leave its
 * node, below) or in the node's own. */
static kmp_task_t *task_new(size_t size, size_t shareds_at, bool shared)
{
    struct task_prefix *p = shared ? dsm_malloc(sizeof *p + size) : NULL;
    if (p)
        memset(p, 0, sizeof *p + size);
    else
        p = calloc(1, sizeof *p + size);
    if (!p)
        log_fatal("out of memory for an OpenMP task");
    *p = (struct task_prefix){.size = size, .shareds_at = shareds_at};
    return (kmp_task_t *)(p + 1);
}

static void task_free(kmp_task_t *t)
{
    struct task_prefix *p = prefix_of(t);
    if (mem_contains(p->tool))
        dsm_free(p->tool);
    else
        free(p->tool);
    if (mem_contains(p))
        dsm_free(p);
    else
        free(p);
}

/* ---- OMPT (ompt.c) ------------------------------------------------------------ */

/* kmp_tasking_flags bits OMPT reports (kmp.h): tiedness, final, merged_if0. */
enum { TASK_TIED = 0x1, TASK_MERGED_IF0 = 0x4 };

/* A task's OMPT type: explicit, undeferred when its team is one thread or
 * it is included (made in a final task) or if(0), untied, final,
 * mergeable (ompt_task_flag_t), as libomp reports them. */
static int tool_type(const kmp_task_t *task, bool if0)
{
    int32_t f = prefix_of((kmp_task_t *)task)->flags;
    int type = 0x4; /* ompt_task_explicit */
    if (if0 || in_final > 0 || omp_self()->nthreads <= 1)
        type |= 0x08000000; /* ompt_task_undeferred */
    if (!(f & TASK_TIED))
        type |= 0x10000000; /* ompt_task_untied */
    if (f & TASK_FINAL)
        type |= 0x20000000; /* ompt_task_final */
    if (f & TASK_MERGED_IF0)
        type |= 0x40000000; /* ompt_task_mergeable */
    return type;
}

/* The task's creation, reported from the runtime entry that made it. */
static void tool_create(kmp_task_t *task, bool if0, bool deps, const void *codeptr)
{
    struct task_prefix *p = prefix_of(task);
    if (p->tool)
        return;
    /* Beside a block in shared memory (a task that may leave its node)
     * the record is shared too: the node that runs the task reports it. */
    p->tool = mem_contains(p) ? dsm_malloc(sizeof *p->tool) : NULL;
    if (p->tool)
        memset(p->tool, 0, sizeof *p->tool);
    else
        p->tool = calloc(1, sizeof *p->tool);
    if (!p->tool)
        log_fatal("out of memory for an OpenMP task's tool record");
    omp_tool_task_create(p->tool, tool_type(task, if0), deps, codeptr);
    omp_tool_task_memory(p->tool, task, p->size);
}

/* ---- the node's queue (several threads of a team on the node) ------------ */

/* A task's (or a thread's implicit task's) children still queued or
 * running, and the taskgroup its new tasks join. */
struct task_rec {
    int              children;
    int              depth : 31; /* 0: an implicit task */
    /* Its data block (its private and firstprivate variables, an untied
     * task's locals) is memory of this node alone: what it makes stays here
     * (may_offer). */
    unsigned         data_private : 1;
    struct taskgroup *group;
    struct task_rec  *parent;  /* NULL: an implicit task's */
    int              *cancel;  /* its taskgroup's cancel word where group is not its node's */
};
/* One on the stack for every level of nested tasks that run at once
 * (run_now): 10,000 levels fit the master's stack under ASan too. */
_Static_assert(sizeof(struct task_rec) <= 32, "a task's record stays 32 bytes");
/* A taskgroup: its tasks not yet done (counted when they are queued or
 * tracked), its task reduction, and under OMP_CANCELLATION=true its
 * cancel word: set by `cancel taskgroup`, read by its tasks wherever they
 * run — in shared memory where its tasks may leave the node. */
struct taskgroup {
    int                 count;
    struct taskgroup   *outer;
    struct omp_taskred *reduction; /* task_reduction.c; NULL: none */
    int                *cancel;    /* NULL: cancellation is off */
    int                 cancelled; /* the word, when it is the node's own */
};

struct taskgroup *omp_taskgroup_outer(struct taskgroup *g) { return g->outer; }
struct omp_taskred **omp_taskgroup_reduction(struct taskgroup *g) { return &g->reduction; }
struct queued_task {
    struct task_link    link;     /* on a list of the node's (task_lists.h) */
    struct queued_task *next;     /* on nodeq.to_offer */
    kmp_task_t         *task;
    kmp_int32           gtid;
    struct task_rec    *parent;
    struct taskgroup   *group;
    struct tracked     *tracked;  /* a deferred dependent task's record; else NULL */
    int                *cancel;   /* its taskgroup's cancel word (struct taskgroup) */
    bool                offered;  /* in this node's queue for every node (below) */
    bool                movable;  /* a deferred dependent task that may be offered once released */
};

/* One dependence of a task (kmp.h's kmp_depend_info_t). */
struct kmp_depend_info {
    intptr_t base_addr;
    size_t   len;
    uint8_t  flags; /* 1 in, 2 out, 4 mutexinoutset, 8 inoutset, 0x80 omp_all_memory */
};
/* Dependences among a task's children, found as libomp finds them
 * (kmp_taskdeps.cpp): per (parent, address), the last sibling with an
 * `out` on it and the siblings with an `in` since, not complete yet. A new
 * task depends on the last `out` for an `in`, on the `in`s since (else the
 * last `out`) for any other type — so each new task costs its number of
 * items, never a scan of the tasks pending (the 6,000 dependent tasks of
 * tests/omp/omp_task_queue.c each compared with every pending one took
 * 36 s). `mutexinoutset` and `inoutset` order as `out` (stricter than
 * OpenMP asks: their tasks run one at a time, which OpenMP allows).
 * omp_all_memory is an `out` on the parent's key ALL_MEMORY, on which
 * every other task with dependences has an `in`: it follows every earlier
 * sibling with dependences, and every later one follows it. A task
 * completes: it leaves the entries it names (an entry no incomplete task
 * names is freed, so the table holds only what is pending and a parent's
 * record reused after it ended finds nothing of its children), and each
 * successor whose last predecessor it was is released. */
struct dep_entry {
    struct dep_entry      *next;     /* in its bucket */
    const struct task_rec *parent;
    intptr_t               addr;
    struct tracked        *last_out; /* NULL: none not complete */
    struct dep            *ins;      /* the `in` items since last_out, not complete */
    int                    refs;     /* items of incomplete tasks that name it */
};
struct dep {
    struct dep_entry *entry;
    struct tracked   *task;
    struct dep       *prev, *next; /* on entry->ins while listed */
    bool              in_only, listed;
};
static const char all_memory_key;
#define ALL_MEMORY ((intptr_t)&all_memory_key) /* no program's dependence is the runtime's byte */

/* A tracked task (above): not complete yet. */
struct tracked {
    kmp_task_t         *task;
    struct task_rec    *parent;
    struct taskgroup   *group;
    struct queued_task *waiting;  /* deferred for an earlier sibling; NULL once queued or run */
    int                 parts;    /* its routine's end, and for a proxy its completion */
    int                 npred;    /* earlier siblings it depends on, not complete */
    int                 nsucc, succ_cap;
    struct tracked    **succ;     /* later siblings that depend on it */
    uint64_t            mark;     /* the submission that last linked it (one edge a pair) */
    int                 ndeps;
    struct dep          deps[];
};

static DSM_STATE struct {
    pthread_mutex_t     lock;  /* the queue and every count below and in records */
    pthread_cond_t      done;  /* a task finished, or one was queued */
    /* Each thread's, newest first, taken from the top by their thread: a
     * waiting task then mostly runs its own children, depth first, as
     * libomp's own deque does, and the nesting of waits stays as deep as
     * the program's tasks (taken oldest first, fib(15)'s waits nested
     * hundreds deep); other threads take the oldest (run_one_locked). */
    struct task_lists   lists;
    /* Dependent tasks just released that may leave the node: offered by
     * the next of the node's threads at a waiting point (run_one_locked),
     * as the releasing one may hold the queues' lock (queue_call_end). */
    struct queued_task *to_offer;
    int                 outstanding; /* queued, running, or tracked and not complete */
    int                 ntracked;    /* tracked tasks not complete */
    /* The dependence entries (above), chained by a hash of (parent,
     * address); doubled when they outnumber the buckets. */
    struct dep_entry  **buckets;
    size_t              nbuckets, nentries;
    uint64_t            marks;       /* submissions of tracked tasks */
} nodeq = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* The task this thread runs now (its implicit task's record when none). */
static __thread struct task_rec implicit_rec;
static __thread struct task_rec *current;

static struct task_rec *current_rec(void) { return current ? current : &implicit_rec; }

struct taskgroup *omp_taskgroup_current(void) { return current_rec()->group; }

/* The cancel word of the taskgroup a task made now would belong to: the
 * innermost open in the current task, or, in a task another node made,
 * the one it came with. NULL: none, or cancellation is off. */
static int *group_cancel(const struct task_rec *r) { return r->group ? r->group->cancel : r->cancel; }

/* Whether the current task's taskgroups (the innermost it came with,
 * where another node made it) were cancelled, as this node last saw. */
static bool group_cancelled(const struct task_rec *r)
{
    for (const struct taskgroup *g = r->group; g; g = g->outer)
        if (g->cancel && __atomic_load_n(g->cancel, __ATOMIC_RELAXED))
            return true;
    return r->cancel && __atomic_load_n(r->cancel, __ATOMIC_RELAXED);
}

static void run(kmp_int32 gtid, kmp_task_t *task);
static void finish_part_locked(struct tracked *tr);

/* A task taken from another node, as the node that runs it records it
 * (run_stolen_call): the only record whose parent is NULL at a depth
 * above 0 (an implicit task's is at 0). Its ancestors are on other
 * nodes; `self` names it to the nodes below it (chain_from), `from` is
 * where its own chain last left its creator's node (its prefix's). */
struct stolen_rec {
    struct task_rec rec;
    uint64_t        self; /* its creator's node and that node's record of it */
    uint64_t        from;
};

/* A chain's crossing: a node and that node's record (struct queued_task)
 * of a task another node took; 0: none. Shared-region addresses and
 * malloc's lie below 2^48. */
static uint64_t chain_mark(int node, const struct queued_task *q)
{
    return (uint64_t)node << 48 | (uint64_t)(uintptr_t)q;
}
static int chain_node(uint64_t m) { return (int)(m >> 48); }
static struct queued_task *chain_record(uint64_t m)
{
    return (struct queued_task *)(uintptr_t)(m & ((UINT64_C(1) << 48) - 1));
}

/* The task taken from another node at the root of the running task's
 * ancestors on this node (chain_mark of it); 0: they begin at this
 * thread's implicit task. A task made now carries it (prefix->from), so
 * the node it was taken from can tell that the new task descends from
 * one of its own (descends_rec) — a thread waiting there for that one
 * may run it. */
static uint64_t chain_from(void)
{
    const struct task_rec *r = current_rec();
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
static bool descends_rec(const struct task_rec *r, const struct task_rec *a)
{
    while (r && r->depth >= a->depth) {
        if (r == a)
            return true;
        if (r->parent || r->depth == 0) {
            r = r->parent;
            continue;
        }
        uint64_t from = ((const struct stolen_rec *)r)->from;
        if (!from || chain_node(from) != job()->rank)
            return false;
        r = chain_record(from)->parent;
    }
    return false;
}

/* Whether the queued task descends from the task of record `a`. */
static bool descends(const struct queued_task *q, const struct task_rec *a)
{
    return descends_rec(q->parent, a);
}

static bool run_one_locked(void);
static void wait_zero_locked(const int *count);
static void run_until_zero(const int *count);

/* Tasks of this node offered to every node and not complete yet
 * (below; under nodeq.lock). */
static DSM_STATE int offered_out;

/* Events of this node's detached tasks that another node may fulfil
 * (below; under nodeq.lock): its waiting points look for them. */
static DSM_STATE int shared_events;

/* A queued task (not a tracked one) is complete: its parent, its
 * taskgroup and the node stop counting it. Caller holds nodeq.lock. */
static void complete_locked(struct queued_task *q)
{
    __atomic_fetch_sub(&q->parent->children, 1, __ATOMIC_RELEASE); /* read unlocked: wait_children */
    if (q->group)
        q->group->count--;
    if (q->offered)
        offered_out--;
    __atomic_fetch_sub(&nodeq.outstanding, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&nodeq.done);
}

/* A queued task's routine has returned, here or on the node that took
 * it: a tracked one (a dependent task) may not be complete yet, and its
 * completion releases the siblings that depend on it. Caller holds
 * nodeq.lock. */
static void routine_done_locked(struct queued_task *q)
{
    if (!q->tracked) {
        complete_locked(q);
        return;
    }
    if (q->offered)
        offered_out--;
    finish_part_locked(q->tracked);
}

/* Runs a task taken off the queue (or a tracked one due now); caller
 * holds nodeq.lock, which is dropped while the task runs. */
static void run_queued_locked(struct queued_task *q)
{
    pthread_mutex_unlock(&nodeq.lock);
    struct task_rec rec = {.children = 0, .group = q->group, .parent = q->parent,
                           .depth = prefix_of(q->task)->depth, .cancel = q->cancel,
                           .data_private = !mem_contains(q->task)};
    struct task_rec *outer = current;
    current = &rec;
    run(q->gtid, q->task);
    if (!q->tracked)
        task_free(q->task);
    pthread_mutex_lock(&nodeq.lock);
    /* Its children hold its record: they finish before it does. */
    wait_zero_locked(&rec.children);
    current = outer;
    routine_done_locked(q); /* a proxy or detached one may not be complete yet */
    free(q);
}

static bool offer_queued(struct queued_task *q, bool make_room);

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
    return !current || descends(q, current);
}

/* Queues q on this thread's list (the common list where it has none) and
 * wakes the node's waiting threads. Caller holds nodeq.lock. */
static void queue_locked(struct queued_task *q)
{
    struct task_list *mine = task_list_mine(&nodeq.lists, &nodeq.lock);
    task_list_push(&nodeq.lists, mine ? mine : &nodeq.lists.common, &q->link);
    pthread_cond_broadcast(&nodeq.done);
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
    struct task_lists *ls = &nodeq.lists;
    struct task_list *mine = task_list_mine(ls, &nodeq.lock);
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
 * thread may start (next_queued_locked); caller holds nodeq.lock, which
 * is dropped meanwhile. Returns false when there was nothing to do. */
static bool run_one_locked(void)
{
    struct queued_task *q;
    if ((q = nodeq.to_offer)) { /* offering one starts nothing: any thread may */
        nodeq.to_offer = q->next;
        pthread_mutex_unlock(&nodeq.lock);
        bool offered = offer_queued(q, false);
        pthread_mutex_lock(&nodeq.lock);
        if (!offered) /* the queue is full: the node's threads run it */
            task_list_push(&nodeq.lists, &nodeq.lists.common, &q->link);
        return true;
    }
    if (!(q = next_queued_locked()))
        return false;
    task_list_remove(&nodeq.lists, &q->link);
    run_queued_locked(q);
    return true;
}

/* ---- tasks that leave their node ------------------------------------------ */

/* Every task's data must mean the same on the node that runs it as where
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
 * release_locked); its record stays here (submit_tracked), so its
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
 * completion (queue_call_end).
 *
 * The node's own threads take its offered tasks newest first, at their
 * waiting points, as the private queue's; another node's idle thread
 * takes the oldest (the largest, near the root), one steal in flight per
 * node, trying the nodes in turn (steal_until). A take is a dsm lock acquire: the thief acquires what the
 * creator released when it offered the task (its data, the shared
 * variables as they were), as a lock grant carries them. Completion is
 * the thief's release: it puts the task on the queue's done list under
 * the same lock, and the creator's node, taking the lock again at its
 * next waiting point, acquires the task's writes before its count says
 * the task is done (taskwait, taskgroup's end, barrier).
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
#define OFFER_RING  128 /* a power of two: the ring's indices wrap with uint32_t */
#define OFFER_DEPTH 8
#define OFFER_MIN_NS  (1000 * 1000)
#define OFFER_SAMPLES 4 /* runs of a kind (here, or taken elsewhere) before their times decide */
/* A kind whose tasks taken by other nodes spent more than half their time
 * there stealing and faulting pages in, OFFER_COSTLY steals in a row,
 * stays: on 2 nodes such a thief adds less than half a node, and its
 * creator may wait for it. */
#define OFFER_SLOWDOWN 2
#define OFFER_COSTLY   16 /* such steals in a row */
#define COST_SLOTS    256

/* The time tasks took to run on this node (run()), by kind: the task's
 * routine (its construct in the source) and its depth. By kind, not by
 * depth alone: a program's tasks of one construct say nothing of
 * another's (a taskgroup's long tasks beside a recursion's small ones at
 * the same depth). An open-addressed table; a kind that finds no slot is
 * never cut off. */
static DSM_STATE struct task_cost {
    uintptr_t key; /* 0: free */
    uint64_t  ns, runs;                    /* run here */
    uint64_t  stolen;                      /* taken by other nodes (queue_call_end) */
    int       costly;                      /* the latest steals in a row that cost more than their work */
    int       kept;                        /* stays: costlier to move than to run */
} task_cost[COST_SLOTS];

static struct task_cost *cost_of(kmp_routine_entry_t routine, int depth, bool add)
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

struct node_tasks {
    uint64_t published; /* the point (team, barriers) this node passed with its tasks done */
    uint32_t head, tail; /* ring[head .. tail) offered, oldest first (mod OFFER_RING) */
    uint32_t ndone;      /* done[0 .. ndone): taken by another node and complete */
    uint32_t unused;
    uint64_t ring[OFFER_RING];
    uint64_t from[OFFER_RING]; /* each ring entry's prefix->from */
    uint64_t done[OFFER_RING];
};

static DSM_STATE struct {
    pthread_mutex_t    lock;     /* the node's threads one at a time at the queues' locks */
    struct node_tasks *nodes;    /* node 0: the queues (one page a node); NULL: none yet */
    bool               tried;    /* node 0: allocated them, or could not */
    bool               seen;     /* a task was made on this node */
    /* A proxy task whose block, or a detached one whose event, could not
     * be shared memory was made here: its completion (a proxy completed,
     * such an event fulfilled) is this node's to take, so no task leaves
     * the node from then on — the one that completes it could. */
    bool               completions;
    int                stealing; /* a thread of this node is taking a task from another */
    kmp_task_t        *harvest[OFFER_RING]; /* completions just taken (under lock) */
} offer = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The team's threads of this node that have come to a point (under nodeq.lock). */
static DSM_STATE struct {
    uint64_t point;
    int      count;
} arrivals;

/* This thread's team over the nodes, as task.c last saw it. */
static __thread struct {
    const struct omp_region *region;
    uint32_t                 team;
    bool                     seen;   /* the region began after node 0 made a task */
    bool                     single; /* a single met since the last barrier */
    struct node_tasks       *nodes;
} team_tasks;

static struct node_tasks *node_page(struct node_tasks *nodes, int n)
{
    return (struct node_tasks *)((char *)nodes + (size_t)n * mem.page_size);
}

uint64_t omp_task_nodes(void)
{
    if (!offer.tried) {
        offer.tried = true;
        size_t len = (size_t)job()->nodes * mem.page_size;
        char *p = sizeof(struct node_tasks) <= mem.page_size ? dsm_malloc_home(len, DSM_HOME_BLOCK)
                                                             : NULL;
        if (p && (uintptr_t)p % mem.page_size == 0) {
            memset(p, 0, len);
            offer.nodes = (struct node_tasks *)p;
        } else if (p)
            dsm_free(p); /* no page of its own per node: tasks stay where they are made */
    }
    return (uint64_t)(uintptr_t)offer.nodes;
}

bool omp_tasks_seen(void) { return offer.seen; }

/* The queues, when this thread is in a team over several nodes (not a
 * nested or serialized one; a team of fewer threads than nodes spans
 * nodes 0 to team_nodes - 1, and only they take its tasks); else NULL. */
static struct node_tasks *team_queues(void)
{
    struct omp_thread *t = omp_self_owing();
    if (!t->distributed || t->local_team || t->serialized || t->nthreads <= 1 || !t->region ||
        t->team_nodes < 2)
        return NULL;
    if (team_tasks.region != t->region || team_tasks.team != t->team) {
        team_tasks.region = t->region;
        team_tasks.team = t->team;
        team_tasks.nodes = (struct node_tasks *)(uintptr_t)t->region->task_nodes;
        team_tasks.seen = t->region->tasks_seen;
        team_tasks.single = false;
        /* Node 0 made them once for the job (omp_task_nodes); the other
         * nodes learn where they are here. */
        if (team_tasks.nodes && !__atomic_load_n(&offer.nodes, __ATOMIC_ACQUIRE))
            __atomic_store_n(&offer.nodes, team_tasks.nodes, __ATOMIC_RELEASE);
    }
    return team_tasks.nodes;
}

bool omp_tasks_may_leave(void) { return team_queues() != NULL; }

void omp_tasks_single_met(void)
{
    if (team_queues())
        team_tasks.single = true;
}

/* Whether a task about to be allocated may be offered: its block is then
 * taken from shared memory. Not when the task making it has its data in
 * this node's own memory: a pointer to one of that task's private
 * variables may reach the new one through its shared variables (BOTS
 * floorplan passes its task's private `board` and `cells` to the next
 * level's tasks), and the node that ran it would read nothing there. By
 * induction, a task with a shared block has ancestors whose data are all
 * shared; their stack frames are on the shared stack (stack_on_shared). */
static bool may_offer(int32_t flags, kmp_routine_entry_t routine)
{
    if (job()->nodes <= 1 || in_final || (flags & TASK_PROXY) || current_rec()->data_private)
        return false;
    int depth = current_rec()->depth + 1; /* the new task's */
    if (depth > OFFER_DEPTH || !stack_on_shared() || !team_queues())
        return false;
    struct task_cost *c = cost_of(routine, depth, false);
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
static void stolen_cost(kmp_task_t *task)
{
    struct task_prefix *p = prefix_of(task);
    if (p->depth < 1 || p->depth > OFFER_DEPTH)
        return;
    struct task_cost *c = cost_of(task->routine, p->depth, true);
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
static bool offerable(kmp_task_t *task)
{
    struct task_prefix *p = prefix_of(task);
    if (!mem_contains(p) || (p->flags & TASK_PROXY) || offer.completions || in_final ||
        !stack_on_shared() || !team_queues())
        return false;
    if (p->tool && !tool_data_moves(p->tool->data))
        return false;
    int *cancel = group_cancel(current_rec()); /* read where the task runs: shared memory */
    if (cancel && !mem_contains(cancel))
        return false;
    for (struct taskgroup *g = current_rec()->group; g; g = g->outer)
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

/* ---- the queues' operations, under their node's dsm lock ---- */

enum offer_op { OFFER_PUT, OFFER_TAKE_OWN, OFFER_STEAL, OFFER_TAKE_BACK, OFFER_DONE, OFFER_PUBLISH };

struct offer_call {
    enum offer_op      op;
    struct node_tasks *nodes;
    int                node;     /* whose queue */
    kmp_task_t        *task;     /* PUT, DONE: the task; TAKE_OWN, STEAL, TAKE_BACK: the one taken */
    uint64_t           point;    /* PUBLISH: the point passed; STEAL: the one waited at */
    int                harvested; /* PUT, TAKE_OWN: completions now in offer.harvest */
    bool               ok;       /* PUT: queued; STEAL: the node has passed `point` */
};

/* The task's record in the trace (trace.h, TRACE_TASK). */
static void trace_task(enum trace_task what, int peer, const kmp_task_t *task, uint64_t t0)
{
    if (TRACE_ON && task)
        trace_put(TRACE_TASK, what, peer, (uint32_t)prefix_of((kmp_task_t *)task)->depth, t0,
                  clock_ns(), (uintptr_t)task);
}

/* Moves the queue's completions to offer.harvest (caller holds offer.lock). */
static int harvest(struct node_tasks *q)
{
    int n = (int)q->ndone;
    uint64_t now = TRACE_ON ? clock_ns() : 0;
    for (int i = 0; i < n; i++) {
        offer.harvest[i] = (kmp_task_t *)(uintptr_t)q->done[i];
        trace_task(TRACE_TASK_HARVESTED, job()->rank, offer.harvest[i], now);
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
            q->from[q->tail % OFFER_RING] = prefix_of(c.task)->from;
            q->ring[q->tail++ % OFFER_RING] = (uintptr_t)c.task;
        }
        break;
    case OFFER_TAKE_OWN: /* the newest this thread may start (run_one_locked) */
        c.harvested = harvest(q);
        c.task = NULL;
        for (uint32_t i = q->tail; i != q->head; i--) {
            kmp_task_t *t = (kmp_task_t *)(uintptr_t)q->ring[(i - 1) % OFFER_RING];
            if (current && !descends(prefix_of(t)->q, current))
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
            if (from && chain_node(from) == job()->rank &&
                descends_rec(chain_record(from)->parent, current_rec())) {
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
        trace_task(TRACE_TASK_OFFERED, c.node, c.task, t0);
    else if (c.op == OFFER_STEAL || c.op == OFFER_TAKE_BACK)
        trace_task(TRACE_TASK_TAKEN, c.node, c.task, t0);
    else if (c.op == OFFER_DONE)
        trace_task(TRACE_TASK_DONE, c.node, c.task, t0);
    *(struct offer_call *)arg = c;
}

static void queue_call(struct offer_call *c)
{
    pthread_mutex_lock(&offer.lock);
    stack_private(offer_call, c);
}

/* Ends queue_call: the completions it found are complete here now. */
static void queue_call_end(int harvested)
{
    for (int i = 0; i < harvested; i++) {
        kmp_task_t *task = offer.harvest[i];
        struct queued_task *q = prefix_of(task)->q;
        stolen_cost(task);
        bool tracked = q->tracked != NULL; /* then its record frees the task */
        pthread_mutex_lock(&nodeq.lock);
        routine_done_locked(q);
        pthread_mutex_unlock(&nodeq.lock);
        free(q);
        if (!tracked)
            task_free(task);
    }
    pthread_mutex_unlock(&offer.lock);
}

static bool offered_work(void);

/* Offers the task of record q: a new one (offer_task), or a dependent
 * task's, counted already where it is waited for (submit_tracked).
 * False when the queue is full (then it stays here). make_room: a full
 * queue first takes the other nodes' completions (below). */
static bool offer_queued(struct queued_task *q, bool make_room)
{
    struct task_rec *parent = q->parent;
    kmp_task_t *task = q->task;
    pthread_mutex_lock(&nodeq.lock);
    bool room = offered_out < OFFER_RING;
    if (!room && make_room && !queue_all) {
        /* Other nodes' completions are taken at this node's waiting
         * points, or here: a loop that makes every task and never waits
         * (a single making them all, BOTS's alignment) would offer its
         * first OFFER_RING and run every later one itself. Taking them
         * (and running its own newest offered task, a child of this
         * task's too) makes room. Not with throttling off: no task
         * runs before the next scheduling point then. */
        pthread_mutex_unlock(&nodeq.lock);
        offered_work();
        pthread_mutex_lock(&nodeq.lock);
        room = offered_out < OFFER_RING;
    }
    if (room) { /* counted before another node can complete it */
        if (!q->tracked) {
            parent->children++;
            if (q->group)
                q->group->count++;
            __atomic_fetch_add(&nodeq.outstanding, 1, __ATOMIC_RELAXED);
        }
        offered_out++;
        q->offered = true;
        /* A thread of this node asleep in await_locked went to sleep with
         * nothing offered, waiting for nothing but a wake-up here: with the
         * task offered it must poll for its completion, or take it back
         * (offered_work) — the other nodes may all be in a barrier that
         * steals nothing (a released dependent task, offered by the
         * node's other thread from nodeq.to_offer, waited so for ever). */
        pthread_cond_broadcast(&nodeq.done);
    }
    pthread_mutex_unlock(&nodeq.lock);
    if (!room)
        return false;
    prefix_of(task)->q = q;
    prefix_of(task)->cancel = q->cancel;
    struct offer_call c = {.op = OFFER_PUT, .nodes = offer.nodes, .node = job()->rank,
                           .task = task};
    queue_call(&c);
    queue_call_end(c.harvested);
    if (!c.ok) { /* not reached: offered_out bounds the ring */
        pthread_mutex_lock(&nodeq.lock);
        if (q->tracked)
            offered_out--;
        else
            complete_locked(q);
        q->offered = false;
        pthread_mutex_unlock(&nodeq.lock);
        prefix_of(task)->q = NULL;
        return false;
    }
    stats_add(STAT_PAR_TASKS_OFFERED, 1);
    return true;
}

/* Offers the task; false when the queue is full (then it stays here). */
static bool offer_task(kmp_int32 gtid, kmp_task_t *task)
{
    struct queued_task *q = malloc(sizeof *q);
    if (!q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = current_rec();
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .cancel = group_cancel(parent)};
    if (offer_queued(q, true))
        return true;
    free(q);
    return false;
}

/* At a waiting point of the node that offered tasks: their completions
 * elsewhere, and one of them that this thread may run. Returns whether
 * anything changed. Caller does not hold nodeq.lock. */
static bool offered_work(void)
{
    struct offer_call c = {.op = OFFER_TAKE_OWN, .nodes = offer.nodes, .node = job()->rank};
    queue_call(&c);
    int harvested = c.harvested;
    queue_call_end(harvested);
    if (c.task) {
        pthread_mutex_lock(&nodeq.lock);
        run_queued_locked(prefix_of(c.task)->q);
        pthread_mutex_unlock(&nodeq.lock);
    }
    return harvested > 0 || c.task;
}

/* Sleeps a little longer each time nothing came (50 us to 2 ms): the
 * other nodes' completions come by no signal of this node's. */
static void pause_locked(unsigned *us)
{
    *us = *us ? (*us < 1000 ? *us * 2 : 2000) : 50;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)*us * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&nodeq.done, &nodeq.lock, &ts);
}

static bool take_fulfilments(void);

static bool take_back(void);

/* One wait of a thread for a count (wait_zero_locked): the pause while
 * nothing comes, and when next to try taking a descendant back from
 * another node (take_back: a lock's round trip; after each that found
 * nothing the next comes twice as many polls later, at most
 * TAKE_BACK_GAP). */
#define TAKE_BACK_GAP 64
struct waiting {
    unsigned us;
    unsigned polls, next_back, gap;
};

/* Nothing to run now: waits for *count to change — for a task of this
 * node to be queued or to complete, or (polled, with a pause growing
 * while nothing comes) for another node to complete a task this node
 * offered or to fulfil an event of a task here (below); meanwhile it may
 * run a descendant of the waited task that another node offered
 * (take_back). Caller holds nodeq.lock. */
static void await_locked(const int *count, struct waiting *w)
{
    bool offered = offered_out > 0, events = shared_events > 0;
    if (!offered && !events) {
        pthread_cond_wait(&nodeq.done, &nodeq.lock);
        return;
    }
    pthread_mutex_unlock(&nodeq.lock);
    bool changed = offered && offered_work();
    if (events && take_fulfilments())
        changed = true;
    if (!changed && offered && w->polls++ == w->next_back) {
        changed = take_back();
        w->gap = changed || !w->gap ? 1 : w->gap < TAKE_BACK_GAP ? w->gap * 2 : TAKE_BACK_GAP;
        w->next_back = w->polls + w->gap - 1;
    }
    pthread_mutex_lock(&nodeq.lock);
    if (changed)
        w->us = 0;
    else if (*count > 0)
        pause_locked(&w->us);
}

/* Until *count is 0, running what this thread may run meanwhile (caller
 * holds nodeq.lock). */
static void wait_zero_locked(const int *count)
{
    struct waiting w = {0};
    while (*count > 0) {
        if (run_one_locked()) {
            w.us = 0;
            continue;
        }
        await_locked(count, &w);
    }
}

static uint32_t us_of(uint64_t ns) { return ns / 1000 < UINT32_MAX ? (uint32_t)(ns / 1000) : UINT32_MAX; }

/* A task taken from another node (the take begun at `took`): run here,
 * its children here too (they finish before it), then handed back
 * complete, with what it cost here (stolen_cost). It runs on this
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
    struct task_prefix *p = prefix_of(task);
    struct stolen_rec stolen = {
        .rec = {.children = 0, .group = NULL, .parent = NULL, .depth = p->depth,
                .cancel = p->cancel, .data_private = !mem_contains(task)},
        .self = chain_mark(s->victim, p->q), .from = p->from};
    struct task_rec *outer = current;
    current = &stolen.rec;
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    sync_refresh_begin(); /* its creator's writes reach a task that polls (sync/refresh.c) */
    run(omp_self_owing()->gtid, task);
    if (__atomic_load_n(&stolen.rec.children, __ATOMIC_ACQUIRE) > 0)
        run_until_zero(&stolen.rec.children);
    sync_refresh_end();
    uint64_t moved = (began - s->took) + (coherence_thread_fault_ns() - faults);
    prefix_of(task)->stolen_us = us_of(clock_ns() - s->took);
    prefix_of(task)->moved_us = us_of(moved);
    trace_task(TRACE_TASK_RAN, s->victim, task, t0);
    current = outer;
}

static void release_ran(void *arg) { (void)arg; } /* nothing more to do once it has */

/* A take from another node's queue (OFFER_STEAL, OFFER_TAKE_BACK): one in
 * flight per node. take_claim claims it (false: another thread of this
 * node is taking one); take_claimed makes the take at c->node and gives
 * the claim up, returning when the take began. */
static bool take_claim(void) { return !__atomic_exchange_n(&offer.stealing, 1, __ATOMIC_ACQUIRE); }

static uint64_t take_claimed(struct offer_call *c)
{
    uint64_t took = clock_ns();
    queue_call(c);
    queue_call_end(0);
    __atomic_store_n(&offer.stealing, 0, __ATOMIC_RELEASE);
    return took;
}

static void run_stolen(struct node_tasks *nodes, int victim, kmp_task_t *task, uint64_t took)
{
    struct stolen s = {.victim = victim, .task = task, .took = took};
    omp_run_shared(run_stolen_call, &s);
    stats_add(STAT_PAR_TASKS_STOLEN, 1);
    struct offer_call c = {.op = OFFER_DONE, .nodes = nodes, .node = victim, .task = task};
    queue_call(&c);
    queue_call_end(0);
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
static bool take_back(void)
{
    static __thread int victim;
    struct node_tasks *nodes = team_queues();
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
static void steal_until(struct node_tasks *nodes, int team_nodes, uint64_t point)
{
    int me = job()->rank, left = team_nodes - 1, victim = me;
    bool passed[VT_MAX_NODES] = {false};
    unsigned us = 0;
    int tried = 0; /* victims asked since a task was last taken */
    while (left > 0) {
        if (__atomic_load_n(&nodeq.outstanding, __ATOMIC_ACQUIRE) > 0)
            run_until_zero(&nodeq.outstanding); /* what a stolen task made here */
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
        pthread_mutex_lock(&nodeq.lock);
        pause_locked(&us);
        pthread_mutex_unlock(&nodeq.lock);
    }
}

/* Runs queued tasks until *count is 0 (a task's children, a group's
 * tasks, the node's tasks). */
static void run_until_zero(const int *count)
{
    pthread_mutex_lock(&nodeq.lock);
    wait_zero_locked(count);
    pthread_mutex_unlock(&nodeq.lock);
}

/* With a tool attached, a node of one thread in a team of several queues
 * the tasks it cannot offer for the next scheduling point, as libomp
 * does in a team (its deque, 256 a thread, beyond which it runs a task at
 * once: TOOL_DEFER_MAX a node here), so that the tool's record has
 * libomp's shape — creations before runs, a dependence on a task still
 * pending. Without a tool such a node runs them at once (OpenMP allows
 * either; at once keeps the task's data in the cache). */
#define TOOL_DEFER_MAX 256
static bool tool_defers(void)
{
    return omp_tool_on && omp_self()->nthreads > 1 &&
           __atomic_load_n(&nodeq.outstanding, __ATOMIC_RELAXED) < TOOL_DEFER_MAX;
}

/* Whether a task this thread cannot offer is queued, not run at once:
 * the node has other threads of the team (unless this thread's own list
 * is full: task_lists.h), throttling is off, or a tool is attached
 * (above). */
static bool defers(void)
{
    return (smp_multi() && !task_list_mine_full(&nodeq.lists)) || queue_all || tool_defers();
}

static void defer(kmp_int32 gtid, kmp_task_t *task)
{
    struct queued_task *q = malloc(sizeof *q);
    if (!q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = current_rec();
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .cancel = group_cancel(parent)};
    stats_add(STAT_PAR_TASKS_DEFERRED, 1);
    pthread_mutex_lock(&nodeq.lock);
    parent->children++;
    if (q->group)
        q->group->count++;
    __atomic_fetch_add(&nodeq.outstanding, 1, __ATOMIC_RELAXED);
    queue_locked(q);
    pthread_mutex_unlock(&nodeq.lock);
}

/* Whether the node's queue holds or waits for anything: several threads
 * of the team here, or a tracked task not complete (one thread per node
 * otherwise runs every task at once and has nothing to wait for). */
static bool queue_in_use(void)
{
    return smp_multi() || queue_all || __atomic_load_n(&nodeq.outstanding, __ATOMIC_ACQUIRE) > 0;
}

/* The current task's children, all done (taskwait; before a task with
 * dependences runs). A task whose children are done takes no lock: a
 * child's completion lowers the count with a release (complete_locked,
 * finish_part_locked), so what it wrote is this thread's once it reads 0
 * (uts's leaves each wait with no child: one lock of the node for each of
 * 4 million, a tenth of its time on one node of 2 threads). */
static void wait_children(void)
{
    int *children = &current_rec()->children;
    if (queue_in_use() && __atomic_load_n(children, __ATOMIC_ACQUIRE) > 0)
        run_until_zero(children);
}

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
    unsigned round; /* stored under nodeq.lock (sleepers), read without it */
} gathered;

struct gather_wait { unsigned round; };

static bool gather_passed(const struct gather_wait *w)
{
    return __atomic_load_n(&gathered.round, __ATOMIC_ACQUIRE) != w->round;
}

/* A spinner's end: the round passed, or a task was queued (a hint read
 * without the lock; run_one_locked decides under it). */
static bool gather_moved(void *arg)
{
    return gather_passed(arg) || __atomic_load_n(&nodeq.lists.queued, __ATOMIC_ACQUIRE) > 0;
}

static void gather_node_threads(int here)
{
    static __thread struct spin spin;
    /* The round cannot pass before this thread has come: read it first. */
    struct gather_wait w = {__atomic_load_n(&gathered.round, __ATOMIC_ACQUIRE)};
    if (__atomic_add_fetch(&gathered.count, 1, __ATOMIC_ACQ_REL) >= here) {
        pthread_mutex_lock(&nodeq.lock);
        wait_zero_locked(&nodeq.outstanding);
        /* Reset before the round passes: the next round's first arrival
         * comes after it has seen the round pass. */
        __atomic_store_n(&gathered.count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&gathered.round, w.round + 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&nodeq.done);
        pthread_mutex_unlock(&nodeq.lock);
        return;
    }
    if (spin_until(&spin, gather_moved, &w) && gather_passed(&w))
        return;
    pthread_mutex_lock(&nodeq.lock);
    bool spun = true;
    while (!gather_passed(&w)) {
        if (run_one_locked()) {
            spun = false;
            continue;
        }
        if (!spun) { /* after a task: spin again before sleeping */
            pthread_mutex_unlock(&nodeq.lock);
            spun = true;
            bool passed = spin_until(&spin, gather_moved, &w) && gather_passed(&w);
            pthread_mutex_lock(&nodeq.lock);
            if (passed)
                break;
            continue;
        }
        pthread_cond_wait(&nodeq.done, &nodeq.lock);
    }
    pthread_mutex_unlock(&nodeq.lock);
}

void omp_tasks_complete(void)
{
    if (queue_in_use()) {
        struct omp_thread *t = omp_self_owing();
        int here = t->region && !t->local_team && !t->serialized
                       ? omp_team_on_node(t->nthreads, t->region->per_node, job()->rank)
                       : 1;
        if (here > 1)
            gather_node_threads(here);
        else
            run_until_zero(&nodeq.outstanding);
    }
    struct node_tasks *nodes = team_queues();
    if (!nodes)
        return;
    /* This point: the team, and the barriers entered (the same count on
     * every node here). A team over fewer nodes than the job's, or one
     * under OMP_CANCELLATION=true, meets in the team's lock-based barrier
     * (region.c), which counts no epoch: its point is then the region's,
     * which every node publishes at each of its barriers and at the region's
     * end — a thief steals until each node's first, never waits past it. */
    uint64_t point = (uint64_t)team_tasks.team << 32 | (uint32_t)sync_barrier_epoch();
    bool tasks_may_come = team_tasks.seen || team_tasks.single;
    team_tasks.single = false;
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
    pthread_mutex_lock(&nodeq.lock);
    if (arrivals.point != point)
        arrivals.point = point, arrivals.count = 0;
    bool last = ++arrivals.count >= here;
    pthread_mutex_unlock(&nodeq.lock);
    if (last) {
        struct offer_call c = {.op = OFFER_PUBLISH, .nodes = nodes, .node = job()->rank,
                               .point = point};
        queue_call(&c);
        queue_call_end(0);
    }
    steal_until(nodes, t->team_nodes, point);
}

/* ---- tracked tasks: proxy, detached, and those that depend on them ------- */

static size_t dep_hash(const struct task_rec *parent, intptr_t addr, size_t nbuckets)
{
    uint64_t k = (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ull ^ (uint64_t)addr;
    k = (k ^ k >> 31) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(k ^ k >> 29) & (nbuckets - 1);
}

/* The entry of (parent, addr), made when there is none (caller holds
 * nodeq.lock). */
static struct dep_entry *dep_entry_get(const struct task_rec *parent, intptr_t addr)
{
    if (nodeq.nentries >= nodeq.nbuckets) { /* double (64 at first): chains stay short */
        size_t n = nodeq.nbuckets ? nodeq.nbuckets * 2 : 64;
        struct dep_entry **b = calloc(n, sizeof *b);
        if (!b)
            log_fatal("out of memory for OpenMP task dependences");
        for (size_t i = 0; i < nodeq.nbuckets; i++)
            for (struct dep_entry *e = nodeq.buckets[i], *next; e; e = next) {
                next = e->next;
                size_t h = dep_hash(e->parent, e->addr, n);
                e->next = b[h];
                b[h] = e;
            }
        free(nodeq.buckets);
        nodeq.buckets = b;
        nodeq.nbuckets = n;
    }
    struct dep_entry **head = &nodeq.buckets[dep_hash(parent, addr, nodeq.nbuckets)];
    for (struct dep_entry *e = *head; e; e = e->next)
        if (e->parent == parent && e->addr == addr)
            return e;
    struct dep_entry *e = calloc(1, sizeof *e);
    if (!e)
        log_fatal("out of memory for OpenMP task dependences");
    e->parent = parent;
    e->addr = addr;
    e->next = *head;
    *head = e;
    nodeq.nentries++;
    return e;
}

static void dep_entry_free(struct dep_entry *e)
{
    struct dep_entry **pp = &nodeq.buckets[dep_hash(e->parent, e->addr, nodeq.nbuckets)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    nodeq.nentries--;
    free(e);
}

static void unlist(struct dep *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        d->entry->ins = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->prev = d->next = NULL;
    d->listed = false;
}

/* tr depends on pred (NULL: nothing), once however many items say so. */
static void link_pred(struct tracked *pred, struct tracked *tr)
{
    if (!pred || pred->mark == tr->mark)
        return;
    pred->mark = tr->mark;
    if (pred->nsucc == pred->succ_cap) {
        int cap = pred->succ_cap ? pred->succ_cap * 2 : 4;
        struct tracked **succ = realloc(pred->succ, (size_t)cap * sizeof *succ);
        if (!succ)
            log_fatal("out of memory for OpenMP task dependences");
        pred->succ = succ;
        pred->succ_cap = cap;
    }
    pred->succ[pred->nsucc++] = tr;
    tr->npred++;
    struct omp_tool_task *first = prefix_of(pred->task)->tool, *second = prefix_of(tr->task)->tool;
    if (first && second) /* ompt_callback_task_dependence */
        omp_tool_task_dependence(first, second);
}

/* Enters tr's item d in its entry: tr follows what the item's type orders
 * it after, and later siblings find tr there (caller holds nodeq.lock). */
static void dep_enter(struct tracked *tr, struct dep *d, intptr_t addr)
{
    struct dep_entry *e = dep_entry_get(tr->parent, addr);
    d->entry = e;
    d->task = tr;
    e->refs++;
    if (d->in_only) {
        link_pred(e->last_out, tr);
        d->prev = NULL;
        d->next = e->ins;
        if (e->ins)
            e->ins->prev = d;
        e->ins = d;
        d->listed = true;
        return;
    }
    if (e->ins) /* each `in` since the last `out` follows that `out` already */
        while (e->ins) {
            link_pred(e->ins->task, tr);
            unlist(e->ins);
        }
    else
        link_pred(e->last_out, tr);
    e->last_out = tr;
}

static void add_deps(struct tracked *tr, int n, const struct kmp_depend_info *d, bool *all)
{
    for (int i = 0; i < n; i++) {
        bool every = (d[i].flags & 0x80) != 0;
        struct dep *dep = &tr->deps[tr->ndeps++];
        *dep = (struct dep){.in_only = !every && (d[i].flags & 0xff) == 1};
        dep_enter(tr, dep, every ? ALL_MEMORY : d[i].base_addr);
        *all |= every;
    }
}

/* Releases tr, no earlier sibling it depends on incomplete any more:
 * queued, or offered (run_one_locked) when it may leave the node, as it
 * would have been at its creation. Its predecessors' writes are this
 * node's by now: those run here, and those another node ran came back
 * under the queues' lock (an acquire, queue_call_end); its offer is a
 * release of them under the same lock. */
static void release_locked(struct tracked *tr)
{
    if (tr->waiting->movable) {
        tr->waiting->next = nodeq.to_offer;
        nodeq.to_offer = tr->waiting;
    } else /* not this thread's: its parent may wait on any thread */
        task_list_push(&nodeq.lists, &nodeq.lists.common, &tr->waiting->link);
    tr->waiting = NULL;
    pthread_cond_broadcast(&nodeq.done);
}

/* One of what a tracked task waits for has come (its routine's end, a
 * proxy's completion, a detached task's event): when it was the last, the
 * task is complete, leaves its entries, and releases each successor it
 * was the last predecessor of (in their creation order). */
static void finish_part_locked(struct tracked *tr)
{
    if (--tr->parts > 0)
        return;
    __atomic_fetch_sub(&tr->parent->children, 1, __ATOMIC_RELEASE); /* read unlocked: wait_children */
    if (tr->group)
        tr->group->count--;
    __atomic_fetch_sub(&nodeq.outstanding, 1, __ATOMIC_RELEASE);
    nodeq.ntracked--;
    for (int i = 0; i < tr->ndeps; i++) {
        struct dep *d = &tr->deps[i];
        struct dep_entry *e = d->entry;
        if (d->listed)
            unlist(d);
        if (e->last_out == tr)
            e->last_out = NULL;
        if (--e->refs == 0)
            dep_entry_free(e);
    }
    for (int i = 0; i < tr->nsucc; i++) {
        struct tracked *s = tr->succ[i];
        if (--s->npred == 0 && s->waiting)
            release_locked(s);
    }
    free(tr->succ);
    task_free(tr->task);
    free(tr);
    pthread_cond_broadcast(&nodeq.done);
}

/* A task that completes later than its routine returns, or one with
 * dependences while tracked tasks are about or that may leave the node
 * (movable: offerable, the caller found): tracked until complete, here,
 * wherever it runs. It runs now on this thread unless an earlier sibling
 * it depends on is not complete (then it waits, queued or offered when
 * released), it is movable (then it is offered, if the queue has room),
 * or the node's threads share the queue (then it is queued at once). */
static uintptr_t new_event(kmp_task_t *task);

static void submit_tracked(kmp_int32 gtid, kmp_task_t *task, int ndeps,
                           const struct kmp_depend_info *deps, int nnoalias,
                           const struct kmp_depend_info *noalias, bool movable)
{
    struct task_prefix *p = prefix_of(task);
    int nitems = ndeps + nnoalias > 0 ? ndeps + nnoalias + 1 : 0; /* + ALL_MEMORY's */
    struct tracked *tr = malloc(sizeof *tr + (size_t)nitems * sizeof(struct dep));
    struct queued_task *q = malloc(sizeof *q);
    if (!tr || !q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = current_rec();
    *tr = (struct tracked){.task = task, .parent = parent, .group = parent->group, .parts = 1};
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .tracked = tr, .cancel = group_cancel(parent), .movable = movable};
    if ((p->flags & TASK_PROXY) && mem_contains(p) && !p->proxy_event)
        p->proxy_event = new_event(task); /* __kmpc_proxy_task_completed fulfils it */
    pthread_mutex_lock(&nodeq.lock);
    if ((p->flags & TASK_PROXY) && !p->proxy_event)
        tr->parts++; /* __kmpc_proxy_task_completed[_ooo] on this node */
    if ((p->flags & (TASK_DETACHABLE | TASK_PROXY)) && p->parts > 0)
        tr->parts++; /* the event's fulfilment, unless it came already */
    p->tracked = tr;
    parent->children++;
    if (tr->group)
        tr->group->count++;
    __atomic_fetch_add(&nodeq.outstanding, 1, __ATOMIC_RELAXED);
    nodeq.ntracked++;
    tr->mark = ++nodeq.marks; /* its own items never make it its own predecessor */
    bool all = false;
    add_deps(tr, ndeps, deps, &all);
    add_deps(tr, nnoalias, noalias, &all);
    if (nitems && !all) { /* after the last omp_all_memory sibling, before the next */
        tr->deps[tr->ndeps] = (struct dep){.in_only = true};
        dep_enter(tr, &tr->deps[tr->ndeps++], ALL_MEMORY);
    }
    bool held = tr->npred > 0;
    bool queued = smp_multi() || tool_defers();
    if (!held && movable) {
        pthread_mutex_unlock(&nodeq.lock);
        if (offer_queued(q, true))
            return;
        pthread_mutex_lock(&nodeq.lock);
    }
    if (held || queued)
        stats_add(STAT_PAR_TASKS_DEFERRED, 1);
    if (held)
        tr->waiting = q;
    else if (queued)
        queue_locked(q);
    else
        run_queued_locked(q);
    pthread_mutex_unlock(&nodeq.lock);
}

static bool tracks(const kmp_task_t *task)
{
    return prefix_of((kmp_task_t *)task)->flags & (TASK_PROXY | TASK_DETACHABLE);
}

/* Whether a task with dependences must be tracked: some sibling may not
 * be complete when it would run. */
static bool tracked_about(void)
{
    pthread_mutex_lock(&nodeq.lock);
    bool any = nodeq.ntracked > 0;
    pthread_mutex_unlock(&nodeq.lock);
    return any;
}


/* detach(event): the handle is a record of this node's, on its list
 * until the event is fulfilled. In a job of several nodes the record is
 * shared memory and the handle names its node too (above the address's
 * EVENT_NODE_SHIFT bits): a thread of any node — this node's, a task
 * taken from here, a thread of the team on another — fulfils the event
 * by setting the record's word under the node's task-queue lock (a
 * release of what it wrote before), and the node takes it there: at
 * once when it is its own, else at its waiting points, which look under
 * the same lock (an acquire) while it has such events (await_locked).
 * The task itself may run on another node (offered as any other): the
 * node that made it keeps its tracked record and its event's, and counts
 * it complete when both its routine's end (the thief's completion, taken
 * under the same lock) and the fulfilment have come. A handle that
 * names no event still to be fulfilled ends the job with one line, never
 * a write through a pointer of another process. A record that could not
 * be shared (one node, or no shared memory left) is private, as is its
 * handle: once one is made, this node's tasks stay on it
 * (offer.completions: the one that fulfils it must run here). */
#define EVENT_MAGIC 0x65766e74u /* "evnt" */
#define EVENT_NODE_SHIFT 48     /* user addresses are below 2^47 (x86-64, AArch64's 48 bits) */
struct event {
    uint32_t      magic;
    int32_t       fulfilled; /* a shared record's: set under its node's task-queue lock */
    int32_t       node;
    kmp_task_t   *task;
    struct event *next;
};
static DSM_STATE struct event *events; /* under nodeq.lock */

/* The event a task's completion waits for (its parts: the routine's end
 * and this), as its handle: a detached task's, or a proxy task's. */
static uintptr_t new_event(kmp_task_t *task)
{
    struct event *e = job()->nodes > 1 ? dsm_malloc(sizeof *e) : NULL;
    if (e && (uintptr_t)e >> EVENT_NODE_SHIFT) { /* no room for the node in the handle */
        dsm_free(e);
        e = NULL;
    }
    bool shared = e != NULL;
    if (!shared) {
        e = malloc(sizeof *e);
        if (!e)
            log_fatal("out of memory for an OpenMP event");
        offer.completions = true;
    }
    struct task_prefix *p = prefix_of(task);
    pthread_mutex_lock(&nodeq.lock);
    p->parts = 1;
    *e = (struct event){.magic = EVENT_MAGIC, .node = job()->rank, .task = task, .next = events};
    events = e;
    shared_events += shared;
    pthread_mutex_unlock(&nodeq.lock);
    if (!shared)
        return (uintptr_t)e;
    return (uintptr_t)e | (uintptr_t)(job()->rank + 1) << EVENT_NODE_SHIFT;
}

void *__kmpc_task_allow_completion_event(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    pthread_mutex_lock(&nodeq.lock);
    prefix_of(task)->flags |= TASK_DETACHABLE;
    pthread_mutex_unlock(&nodeq.lock);
    return (void *)new_event(task);
}

/* The event of record e, off the list, is fulfilled: its task completes
 * once its routine has returned too. Caller holds nodeq.lock. */
static void event_fulfilled_locked(struct event *e)
{
    struct task_prefix *p = prefix_of(e->task);
    e->magic = 0;
    p->parts = 0;
    if (p->tracked)
        finish_part_locked(p->tracked);
    if (mem_contains(e))
        dsm_free(e);
    else
        free(e);
    pthread_cond_broadcast(&nodeq.done); /* an undeferred one's encountering thread waits */
}

/* Under a node's task-queue lock: fulfils the shared record `e` (NULL:
 * none), and on its own node takes every fulfilled one. */
struct event_call {
    struct event *e;
    int           node; /* whose lock */
    int           taken;
    bool          bad;  /* e is no event of `node` still to be fulfilled */
};

/* Off the master's shared stack, as offer_call. */
static void event_call(void *arg)
{
    struct event_call c = *(struct event_call *)arg;
    int id = omp_task_lock_id(c.node);
    sync_lock(id);
    if (c.e) {
        c.bad = c.e->magic != EVENT_MAGIC || c.e->node != c.node || c.e->fulfilled;
        if (!c.bad)
            c.e->fulfilled = 1;
    }
    if (c.node == job()->rank && !c.bad) {
        pthread_mutex_lock(&nodeq.lock);
        for (struct event **pp = &events, *e; (e = *pp);) {
            if (!mem_contains(e) || !e->fulfilled) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            shared_events--;
            event_fulfilled_locked(e);
            c.taken++;
        }
        pthread_mutex_unlock(&nodeq.lock);
    }
    sync_unlock(id);
    *(struct event_call *)arg = c;
}

static void run_event_call(struct event_call *c)
{
    pthread_mutex_lock(&offer.lock); /* the node's threads one at a time at the queues' locks */
    stack_private(event_call, c);
    pthread_mutex_unlock(&offer.lock);
}

/* At a waiting point of a node with events another node may fulfil:
 * takes those fulfilled. Returns whether any was. */
static bool take_fulfilments(void)
{
    struct event_call c = {.node = job()->rank};
    run_event_call(&c);
    return c.taken > 0;
}

/* Fulfils the event of `handle`: true, or false when it names no event
 * still to be fulfilled. */
static bool fulfil(uintptr_t handle)
{
    int node = (int)(handle >> EVENT_NODE_SHIFT) - 1;
    struct event *e = (struct event *)(handle & (((uintptr_t)1 << EVENT_NODE_SHIFT) - 1));
    if (node >= 0) { /* a shared record, of that node's */
        struct event_call c = {.e = e, .node = node, .bad = true};
        if (node < job()->nodes && mem_contains(e) && (uintptr_t)e % _Alignof(struct event) == 0)
            run_event_call(&c);
        return !c.bad;
    }
    pthread_mutex_lock(&nodeq.lock);
    struct event **pp = &events;
    while (*pp && (*pp != e || mem_contains(e)))
        pp = &(*pp)->next;
    bool found = (e = *pp) && e->magic == EVENT_MAGIC;
    if (found) {
        *pp = e->next;
        event_fulfilled_locked(e);
    }
    pthread_mutex_unlock(&nodeq.lock);
    return found;
}

void omp_fulfill_event(uintptr_t handle)
{
    if (!fulfil(handle))
        log_fatal("omp_fulfill_event(%#lx): no event still to be fulfilled (fulfilled already, or "
                  "not a handle that detach gave%s)",
                  (unsigned long)handle,
                  handle >> EVENT_NODE_SHIFT == 0 && job()->nodes > 1 ? " on this node" : "");
}

/* A proxy task's completion: from an OpenMP thread, or from any thread
 * ("out of order"); neither runs tasks here, the waiting threads do. In
 * a job of several nodes the proxy's block is shared memory and its
 * completion is an event (new_event), fulfilled from any node as a
 * detached task's; else the call must come from a thread of its node. */
static void proxy_completed(kmp_task_t *task)
{
    struct task_prefix *p = prefix_of(task);
    if (mem_contains(p) && job()->nodes > 1) {
        uintptr_t handle = (p->flags & TASK_PROXY) ? p->proxy_event : 0;
        if (!handle || !fulfil(handle))
            log_fatal("__kmpc_proxy_task_completed(%p): no proxy task still to be completed "
                      "(completed already, or not yet submitted)", (void *)task);
        return;
    }
    pthread_mutex_lock(&nodeq.lock);
    if (!(p->flags & TASK_PROXY) || !p->tracked)
        log_fatal("__kmpc_proxy_task_completed of a task that is no proxy task in flight on this "
                  "node");
    finish_part_locked(p->tracked);
    pthread_mutex_unlock(&nodeq.lock);
}

void __kmpc_proxy_task_completed(kmp_int32 gtid, kmp_task_t *task)
{
    (void)gtid;
    proxy_completed(task);
}

void __kmpc_proxy_task_completed_ooo(kmp_task_t *task) { proxy_completed(task); }

kmp_task_t *__kmpc_omp_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                  size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                  kmp_routine_entry_t task_entry)
{
    (void)loc, (void)gtid;
    /* The task, then its shareds, 16-byte aligned as libomp lays them. */
    size_t head = (sizeof_kmp_task_t + 15) & ~(size_t)15;
    offer.seen = true;
    /* A proxy task's block is shared memory in a job of several nodes, so
     * that a thread of any node may complete it (proxy_completed); it
     * never leaves its node. */
    bool proxy = flags & TASK_PROXY;
    kmp_task_t *t = task_new(head + sizeof_shareds + 16, sizeof_shareds ? head : 0,
                             may_offer(flags, task_entry) || (proxy && job()->nodes > 1));
    if (proxy && !mem_contains(t)) /* completed by a thread of this node: none leave it */
        offer.completions = true;
    t->shareds = sizeof_shareds ? (char *)t + head : NULL;
    t->routine = task_entry;
    /* A final task's descendants are final (and included) too. */
    prefix_of(t)->flags = flags | (in_final ? TASK_FINAL : 0);
    prefix_of(t)->shareds_len = (uint32_t)sizeof_shareds;
    prefix_of(t)->depth = current_rec()->depth + 1;
    if (mem_contains(t) && !proxy)
        prefix_of(t)->from = chain_from();
    return t;
}

/* `target nowait` without offloading (dsm has no device: clang emits the
 * target region as host code): the task that stands for it, a plain
 * task of the host, as libomp makes it. */
kmp_task_t *__kmpc_omp_target_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                         size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                         kmp_routine_entry_t task_entry, kmp_int64 device_id)
{
    (void)device_id;
    return __kmpc_omp_task_alloc(loc, gtid, flags, sizeof_kmp_task_t, sizeof_shareds, task_entry);
}


/* `cancel taskgroup`: the innermost taskgroup of the current task.
 * Its tasks not begun are discarded where they would run; those running
 * see it at their cancellation points. Where its tasks may run on other
 * nodes, the word is shared memory, and the flush publishes it. */
int omp_taskgroup_cancel(void)
{
    int *cancel = group_cancel(current_rec());
    if (!cancel)
        return 0; /* no taskgroup: nothing to cancel */
    __atomic_store_n(cancel, 1, __ATOMIC_RELAXED);
    if (mem_contains(cancel))
        sync_flush();
    return 1;
}

int omp_taskgroup_cancelled(void)
{
    int *cancel = group_cancel(current_rec());
    if (cancel && mem_contains(cancel) && !__atomic_load_n(cancel, __ATOMIC_RELAXED))
        sync_flush(); /* another node's cancel */
    return group_cancelled(current_rec());
}

/* Its frame is the task's exit frame for a tool: the routine's caller's. */
__attribute__((noinline)) static void run(kmp_int32 gtid, kmp_task_t *task)
{
    struct task_prefix *p = prefix_of(task);
    struct omp_tool_task *tool = omp_tool_on ? prefix_of(task)->tool : NULL;
    if (group_cancelled(current_rec())) { /* its taskgroup was cancelled before it began */
        if (tool)
            omp_tool_task_discarded(tool);
        return;
    }
    p->running = 1;
    stats_add(STAT_PAR_TASKS_RUN, 1);
    bool final = p->flags & TASK_FINAL;
    if (tool) {
        omp_tool_task_begin_as(tool, yielding ? 2 : 7); /* ompt_task_yield, ompt_task_switch */
        yielding = false;
        omp_tool_exit_frame(__builtin_frame_address(0));
    }
    in_final += final;
    int depth = p->depth;
    struct task_cost *cost =
        depth >= 1 && depth <= OFFER_DEPTH && job()->nodes > 1 ? cost_of(task->routine, depth, true) : NULL;
    uint64_t start = cost ? clock_ns() : 0;
    do {
        p->again = 0;
        task->routine(gtid, task);
    } while (p->again);
    if (cost) { /* for the cut-off by time (may_offer) */
        __atomic_fetch_add(&cost->ns, clock_ns() - start, __ATOMIC_RELAXED);
        __atomic_fetch_add(&cost->runs, 1, __ATOMIC_RELAXED);
    }
    in_final -= final;
    if (tool) /* ompt_task_cancel where its taskgroup was cancelled, else ompt_task_complete */
        omp_tool_task_end(tool, group_cancelled(current_rec()) ? 3 : 1);
    p->running = 0;
}

/* A task run at once by the thread that meets it, with a record of its
 * own: a task it creates that is tracked or queued counts there, and the
 * task ends after it (as a queued task does). */
static void run_now(kmp_int32 gtid, kmp_task_t *task)
{
    struct task_rec *parent = current_rec();
    struct task_rec rec = {.children = 0, .group = parent->group, .parent = parent,
                           .depth = parent->depth + 1, .cancel = parent->cancel,
                           .data_private = !mem_contains(task)};
    struct task_rec *outer = current;
    current = &rec;
    run(gtid, task);
    if (__atomic_load_n(&rec.children, __ATOMIC_ACQUIRE) > 0)
        run_until_zero(&rec.children);
    current = outer;
}

static kmp_int32 omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, bool may_move);

kmp_int32 __kmpc_omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    if (!prefix_of(task)->running) /* else an untied task's next part */
        stats_add(STAT_PAR_TASKS_CREATED, 1);
    if (!omp_tool_on)
        return omp_task(loc, gtid, task, true);
    if (prefix_of(task)->running) /* an untied task's next part: no new task */
        return omp_task(loc, gtid, task, true);
    omp_tool_enter_frame(__builtin_frame_address(0));
    tool_create(task, false, false, __builtin_return_address(0));
    kmp_int32 r = omp_task(loc, gtid, task, true);
    omp_tool_enter_frame(NULL);
    return r;
}

/* may_move: false for a task with dependences that stays (run here, in order). */
static kmp_int32 omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, bool may_move)
{
    (void)loc;
    if (prefix_of(task)->running) { /* an untied task's next part */
        prefix_of(task)->again = 1;
        return 0;
    }
    bool cancelled = group_cancelled(current_rec());
    if (prefix_of(task)->flags & TASK_BEGUN_IF0) { /* an untied if(0) task's body */
        if (!cancelled)
            run_now(gtid, task);
        return 0; /* freed by __kmpc_omp_task_complete_if0 */
    }
    if (tracks(task) && !cancelled) { /* a detached task may leave, a proxy one not */
        submit_tracked(gtid, task, 0, NULL, 0, NULL, may_move && offerable(task));
        return 0;
    }
    if (may_move && !cancelled && offerable(task) && offer_task(gtid, task))
        return 0;
    /* In a final task, a new task is included: run now by this thread. */
    if (defers() && !cancelled && !in_final) {
        defer(gtid, task);
        return 0;
    }
    if (!cancelled) /* in a cancelled taskgroup, a new task is discarded */
        run_now(gtid, task);
    task_free(task);
    return 0;
}

/* OMPT's view of a dependence (omp-tools.h ompt_dependence_t). */
struct tool_dep {
    void    *variable;
    uint32_t type; /* ompt_dependence_type_t: in 1, out 2, inout 3, mutexinoutset 4 ... */
};

static void tool_deps(kmp_task_t *task, kmp_int32 ndeps, const struct kmp_depend_info *deps,
                      kmp_int32 nnoalias, const struct kmp_depend_info *noalias)
{
    int n = ndeps + nnoalias;
    struct tool_dep *d = calloc((size_t)(n ? n : 1), sizeof *d);
    if (!d)
        log_fatal("out of memory for an OpenMP task's dependences");
    for (int i = 0; i < n; i++) {
        const struct kmp_depend_info *k = i < ndeps ? &deps[i] : &noalias[i - ndeps];
        uint8_t f = k->flags;
        d[i].variable = (void *)k->base_addr;
        d[i].type = (f & 0x80) ? 1 /* all memory: as an in */
                    : (f & 3) == 3 ? 3 : (f & 2) ? 2 : (f & 4) ? 4 : (f & 8) ? 6 : 1;
    }
    omp_tool_dependences(prefix_of(task)->tool, d, n);
    free(d);
}

static kmp_int32 omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias);

kmp_int32 __kmpc_omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias)
{
    stats_add(STAT_PAR_TASKS_CREATED, 1);
    if (!omp_tool_on)
        return omp_task_with_deps(loc, gtid, task, ndeps, deps, ndeps_noalias, noalias);
    omp_tool_enter_frame(__builtin_frame_address(0));
    tool_create(task, false, ndeps + ndeps_noalias > 0, __builtin_return_address(0));
    tool_deps(task, ndeps, deps, ndeps_noalias, noalias);
    kmp_int32 r = omp_task_with_deps(loc, gtid, task, ndeps, deps, ndeps_noalias, noalias);
    omp_tool_enter_frame(NULL);
    return r;
}

static kmp_int32 omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias)
{
    bool cancelled = group_cancelled(current_rec());
    /* One that may leave the node is tracked here wherever it runs: its
     * later siblings find it until it completes. */
    bool movable = !cancelled && offerable(task);
    if (!cancelled && (tracks(task) || movable || tracked_about() || tool_defers())) {
        submit_tracked(gtid, task, ndeps, deps, ndeps_noalias, noalias, movable);
        return 0;
    }
    if (smp_multi() || queue_all) { /* its siblings first, then it, at once: every dependence met */
        wait_children();
        if (!cancelled)
            run_now(gtid, task);
        task_free(task);
        return 0;
    }
    return omp_task(loc, gtid, task, false);
}

/* if(0) tasks: the compiler calls the routine itself between these. For
 * a tool the task begins and ends here; the program's frame that calls
 * the routine is its exit frame. */
void __kmpc_omp_task_begin_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    stats_add(STAT_PAR_TASKS_CREATED, 1);
    stats_add(STAT_PAR_TASKS_RUN, 1); /* the compiler's code runs it, here */
    /* clang's inline code for an untied if(0) task runs none of the body:
     * its part 0 hands the task on (__kmpc_omp_task) for part 1, the body,
     * and then completes it here (__kmpc_omp_task_complete_if0). So that
     * hand-on runs the task at once and leaves its freeing to the
     * completion (BOTS fib with its if-clause cut-off freed it twice:
     * "free(): invalid pointer"; libomp asserts on it). */
    prefix_of(task)->flags |= TASK_BEGUN_IF0;
    if (!omp_tool_on)
        return;
    /* The caller's frame: the saved frame pointer (built with them). */
    void *program_frame = *(void **)__builtin_frame_address(0);
    omp_tool_enter_frame(program_frame);
    tool_create(task, true, false, __builtin_return_address(0));
    omp_tool_task_begin(prefix_of(task)->tool);
    omp_tool_exit_frame(program_frame);
}

void __kmpc_omp_task_complete_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    if (omp_tool_on && prefix_of(task)->tool) { /* ompt_task_cancel, ompt_task_complete */
        omp_tool_task_end(prefix_of(task)->tool, group_cancelled(current_rec()) ? 3 : 1);
        omp_tool_enter_frame(NULL);
    }
    struct task_prefix *p = prefix_of(task);
    if (p->flags & TASK_DETACHABLE) { /* undeferred: complete once its event is fulfilled */
        pthread_mutex_lock(&nodeq.lock);
        struct waiting w = {0};
        while (p->parts > 0)
            if (!run_one_locked())
                await_locked(&p->parts, &w);
        pthread_mutex_unlock(&nodeq.lock);
    }
    task_free(task);
}

void __kmpc_omp_wait_deps(ident_t *loc, kmp_int32 gtid, kmp_int32 ndeps, void *deps,
                          kmp_int32 ndeps_noalias, void *noalias)
{
    (void)loc, (void)gtid, (void)ndeps, (void)deps, (void)ndeps_noalias, (void)noalias;
    wait_children(); /* an if(0) task with dependences: its siblings first */
}

/* taskwait, taskyield and a taskgroup's end have nothing to wait for
 * (tasks ran at once), but OpenMP implies a flush there: the acquire
 * half, as at a critical's entry (sync/flush.c); the release half is a
 * later release's. */
static void implied_flush(void)
{
    if (omp_self()->distributed)
        sync_flush_implied();
}

kmp_int32 __kmpc_omp_taskwait(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    const void *codeptr = __builtin_return_address(0);
    if (omp_tool_on) { /* ompt_sync_region_taskwait */
        omp_tool_enter_frame(__builtin_frame_address(0));
        omp_tool_sync(5, true, codeptr);
    }
    wait_children();
    implied_flush();
    if (omp_tool_on) {
        omp_tool_sync(5, false, codeptr);
        omp_tool_enter_frame(NULL);
    }
    return 0;
}

/* taskyield: one task this thread may run now, if there is one (as
 * libomp: a loop that yields while it waits for another task's work lets
 * that work run here), the node's queued first, then one it offered. */
kmp_int32 __kmpc_omp_taskyield(ident_t *loc, kmp_int32 gtid, int end_part)
{
    (void)loc, (void)gtid, (void)end_part;
    yielding = true;
    bool ran = false;
    if (queue_in_use()) {
        pthread_mutex_lock(&nodeq.lock);
        ran = run_one_locked();
        bool offered = offered_out > 0;
        pthread_mutex_unlock(&nodeq.lock);
        if (!ran && offered)
            offered_work();
    }
    yielding = false;
    implied_flush();
    return 0;
}

void __kmpc_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (omp_tool_on) /* ompt_sync_region_taskgroup; its wait is at the end */
        omp_tool_sync_region(6, true, __builtin_return_address(0));
    struct taskgroup *g = calloc(1, sizeof *g);
    if (!g)
        log_fatal("out of memory for an OpenMP taskgroup");
    if (omp_self_owing()->icv.cancellation) {
        /* Shared where its tasks may be offered (the tasks of a team over
         * the nodes made on a shared stack): they read it on any node. */
        g->cancel = team_queues() && stack_on_shared() ? dsm_malloc(sizeof *g->cancel) : NULL;
        if (g->cancel)
            *g->cancel = 0;
        else
            g->cancel = &g->cancelled;
    }
    struct task_rec *r = current_rec();
    g->outer = r->group;
    r->group = g;
}

static void end_taskgroup(void);

void __kmpc_end_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (!omp_tool_on) {
        end_taskgroup();
        return;
    }
    const void *codeptr = __builtin_return_address(0);
    omp_tool_enter_frame(__builtin_frame_address(0));
    omp_tool_sync_wait(6, true, codeptr);
    end_taskgroup();
    omp_tool_sync_wait(6, false, codeptr);
    omp_tool_sync_region(6, false, codeptr);
    omp_tool_enter_frame(NULL);
}

static void end_taskgroup(void)
{
    struct task_rec *r = current_rec();
    if (r->group) { /* opened with the node's threads running: its tasks first */
        struct taskgroup *g = r->group;
        run_until_zero(&g->count);
        if (g->reduction)
            omp_taskred_finish(g->reduction);
        r->group = g->outer;
        if (g->cancel && g->cancel != &g->cancelled)
            dsm_free(g->cancel);
        free(g);
    }
    implied_flush();
}

/* taskloop: the loop's iterations cut into tasks as its clause says
 * (grainsize: each task at least that many iterations and fewer than
 * twice; num_tasks: that many, or one per iteration; neither: ten per
 * thread of the team, as libomp), each a copy of the pattern task with
 * its bounds set (lb and ub point into the pattern; the copy's are at
 * the same offsets), task_dup copying its firstprivates and telling the
 * last one it is last (lastprivate), and each run at once. */
typedef void (*kmp_task_dup_t)(kmp_task_t *dst, kmp_task_t *src, kmp_int32 lastpriv);

void __kmpc_taskloop(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, kmp_int32 if_val,
                     kmp_uint64 *lb, kmp_uint64 *ub, kmp_int64 st, kmp_int32 nogroup,
                     kmp_int32 sched, kmp_uint64 grainsize, void *task_dup)
{
    (void)loc, (void)if_val, (void)nogroup;
    const void *codeptr = __builtin_return_address(0);
    kmp_int64 lo = (kmp_int64)*lb, hi = (kmp_int64)*ub;
    if (st == 0)
        log_fatal("taskloop with a zero increment");
    uint64_t trip = sched_trip(lo, hi, st, false);
    uint64_t ntasks;
    if (sched == 1) /* grainsize */
        ntasks = grainsize ? trip / grainsize : trip;
    else if (sched == 2) /* num_tasks */
        ntasks = grainsize < trip ? grainsize : trip;
    else
        ntasks = (uint64_t)omp_self()->nthreads * 10;
    if (ntasks < 1)
        ntasks = 1;
    if (ntasks > trip)
        ntasks = trip ? trip : 1;
    size_t lb_at = (size_t)((char *)lb - (char *)task), ub_at = (size_t)((char *)ub - (char *)task);
    struct task_prefix *p = prefix_of(task);
    uint64_t first = 0;
    if (omp_tool_on) { /* ompt_work_taskloop */
        omp_tool_enter_frame(__builtin_frame_address(0));
        omp_tool_work(7, true, trip, codeptr);
    }
    for (uint64_t k = 0; k < ntasks && trip; k++) {
        uint64_t count = trip / ntasks + (k < trip % ntasks);
        kmp_task_t *c = task_new(p->size, p->shareds_at, false);
        memcpy(c, task, p->size);
        if (p->shareds_at)
            c->shareds = (char *)c + p->shareds_at;
        kmp_uint64 clo = (kmp_uint64)sched_value(lo, st, first);
        kmp_uint64 chi = (kmp_uint64)sched_value(lo, st, first + count - 1);
        memcpy((char *)c + lb_at, &clo, sizeof clo);
        memcpy((char *)c + ub_at, &chi, sizeof chi);
        if (task_dup)
            ((kmp_task_dup_t)task_dup)(c, task, k == ntasks - 1);
        prefix_of(c)->tool = NULL; /* the copy's own, below */
        prefix_of(c)->flags = p->flags;
        if (omp_tool_on)
            tool_create(c, false, false, codeptr);
        stats_add(STAT_PAR_TASKS_CREATED, 1);
        run(gtid, c);
        task_free(c);
        first += count;
    }
    if (omp_tool_on) {
        omp_tool_work(7, false, trip, codeptr);
        omp_tool_enter_frame(NULL);
    }
    task_free(task);
}
