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
 * record, so the parent waits for it; OpenMP allows the wait). Tasks stay
 * on their node (no stealing across nodes: their private data is this
 * process's). A task with dependences waits for its siblings before it
 * runs at once, which meets any dependence among them. With one thread
 * per node, nothing is queued: every task runs at once, as before.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

typedef kmp_int32 (*kmp_routine_entry_t)(kmp_int32, void *);

/* The head of clang's task object (kmp.h kmp_task_t); the compiler lays out
 * the privates after it and the shareds where `shareds` points. */
typedef struct kmp_task {
    void               *shareds;
    kmp_routine_entry_t routine;
    kmp_int32           part_id;
} kmp_task_t;

/* Before each task: what taskloop needs to copy it. 16 bytes, so the task
 * keeps malloc's alignment. */
struct task_prefix {
    size_t size;          /* the task, its privates and its shareds */
    size_t shareds_at;    /* offset of the shareds from the task; 0: none */
};

static struct task_prefix *prefix_of(kmp_task_t *t) { return (struct task_prefix *)t - 1; }

static kmp_task_t *task_new(size_t size, size_t shareds_at)
{
    struct task_prefix *p = calloc(1, sizeof *p + size);
    if (!p)
        log_fatal("out of memory for an OpenMP task");
    *p = (struct task_prefix){.size = size, .shareds_at = shareds_at};
    return (kmp_task_t *)(p + 1);
}

static void task_free(kmp_task_t *t) { free(prefix_of(t)); }

/* ---- the node's queue (several threads of a team on the node) ------------ */

/* A task's (or a thread's implicit task's) children still queued or
 * running, and the taskgroup its new tasks join. */
struct task_rec {
    int              children;
    struct taskgroup *group;
    struct task_rec  *parent;  /* NULL: an implicit task's */
};
/* A taskgroup of a thread with queued tasks: its tasks not yet done. */
struct taskgroup {
    int               count;
    struct taskgroup *outer;
};
struct queued_task {
    struct queued_task *next;
    kmp_task_t         *task;
    kmp_int32           gtid;
    struct task_rec    *parent;
    struct taskgroup   *group;
};

static DSM_STATE struct {
    pthread_mutex_t     lock;  /* the queue and every count below and in records */
    pthread_cond_t      done;  /* a task finished, or one was queued */
    /* Newest first, taken from the top: a waiting task then mostly runs
     * its own children, depth first, as libomp's own deque does, and the
     * nesting of waits stays as deep as the program's tasks (taken oldest
     * first, fib(15)'s waits nested past 256). */
    struct queued_task *top;
    int                 outstanding; /* queued or running */
} nodeq = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* The task this thread runs now (its implicit task's record when none). */
static __thread struct task_rec implicit_rec;
static __thread struct task_rec *current;

static struct task_rec *current_rec(void) { return current ? current : &implicit_rec; }

static void run(kmp_int32 gtid, kmp_task_t *task);

/* Whether the queued task descends from the task of record `a`. */
static bool descends(const struct queued_task *q, const struct task_rec *a)
{
    for (const struct task_rec *r = q->parent; r; r = r->parent)
        if (r == a)
            return true;
    return false;
}

/* Runs one queued task that this thread may run now; caller holds
 * nodeq.lock, which is dropped while it runs. A thread waiting inside an
 * explicit task may only start its descendants (OpenMP's task scheduling
 * constraint: a task waiting on it could hold a lock or critical section
 * another task needs); in its implicit task, any. Returns false when no
 * queued task qualified. */
static bool run_one_locked(void)
{
    struct queued_task **pp = &nodeq.top, *q;
    while ((q = *pp) && current && !descends(q, current))
        pp = &q->next;
    if (!q)
        return false;
    *pp = q->next;
    pthread_mutex_unlock(&nodeq.lock);
    struct task_rec rec = {.children = 0, .group = q->group, .parent = q->parent};
    struct task_rec *outer = current;
    current = &rec;
    run(q->gtid, q->task);
    task_free(q->task);
    pthread_mutex_lock(&nodeq.lock);
    /* Its children hold its record: they finish before it does. */
    while (rec.children > 0)
        if (!run_one_locked())
            pthread_cond_wait(&nodeq.done, &nodeq.lock);
    current = outer;
    q->parent->children--;
    if (q->group)
        q->group->count--;
    nodeq.outstanding--;
    pthread_cond_broadcast(&nodeq.done);
    free(q);
    return true;
}

/* Runs queued tasks until *count is 0 (a task's children, a group's
 * tasks, the node's tasks). */
static void run_until_zero(const int *count)
{
    pthread_mutex_lock(&nodeq.lock);
    while (*count > 0)
        if (!run_one_locked())
            pthread_cond_wait(&nodeq.done, &nodeq.lock);
    pthread_mutex_unlock(&nodeq.lock);
}

static void defer(kmp_int32 gtid, kmp_task_t *task)
{
    struct queued_task *q = malloc(sizeof *q);
    if (!q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = current_rec();
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group};
    pthread_mutex_lock(&nodeq.lock);
    parent->children++;
    if (q->group)
        q->group->count++;
    nodeq.outstanding++;
    q->next = nodeq.top;
    nodeq.top = q;
    pthread_cond_broadcast(&nodeq.done);
    pthread_mutex_unlock(&nodeq.lock);
}

/* The current task's children, all done (taskwait; before a task with
 * dependences runs). */
static void wait_children(void)
{
    if (smp_multi())
        run_until_zero(&current_rec()->children);
}

void omp_tasks_complete(void)
{
    if (smp_multi())
        run_until_zero(&nodeq.outstanding);
}

kmp_task_t *__kmpc_omp_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                  size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                  kmp_routine_entry_t task_entry)
{
    (void)loc, (void)gtid, (void)flags;
    /* The task, then its shareds, 16-byte aligned as libomp lays them. */
    size_t head = (sizeof_kmp_task_t + 15) & ~(size_t)15;
    kmp_task_t *t = task_new(head + sizeof_shareds + 16, sizeof_shareds ? head : 0);
    t->shareds = sizeof_shareds ? (char *)t + head : NULL;
    t->routine = task_entry;
    return t;
}

/* The tasks running on this thread, innermost last: an untied task that
 * hands itself back is marked to run its next part. */
#define TASK_MAX_DEPTH 256
static __thread struct {
    kmp_task_t *task;
    bool        again;
} running[TASK_MAX_DEPTH];
static __thread int depth;

/* Taskgroups open on this thread, and the depth of the outermost one
 * cancelled (0: none). */
static __thread int taskgroups, cancelled_group;

int omp_taskgroup_cancel(void)
{
    if (taskgroups == 0)
        return 0; /* no taskgroup: nothing to cancel */
    if (!cancelled_group)
        cancelled_group = taskgroups;
    return 1;
}

int omp_taskgroup_cancelled(void) { return cancelled_group != 0; }

static void run(kmp_int32 gtid, kmp_task_t *task)
{
    if (depth == TASK_MAX_DEPTH)
        log_fatal("OpenMP tasks nested more than %d deep", TASK_MAX_DEPTH);
    int me = depth++;
    running[me].task = task;
    do {
        running[me].again = false;
        task->routine(gtid, task);
    } while (running[me].again);
    depth--;
}

kmp_int32 __kmpc_omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc;
    for (int i = depth - 1; i >= 0; i--)
        if (running[i].task == task) { /* an untied task's next part */
            running[i].again = true;
            return 0;
        }
    if (smp_multi() && !cancelled_group) {
        defer(gtid, task);
        return 0;
    }
    if (!cancelled_group) /* in a cancelled taskgroup, a new task is discarded */
        run(gtid, task);
    task_free(task);
    return 0;
}

kmp_int32 __kmpc_omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, void *deps, kmp_int32 ndeps_noalias,
                                    void *noalias)
{
    (void)ndeps, (void)deps, (void)ndeps_noalias, (void)noalias;
    if (smp_multi()) { /* its siblings first, then it, at once: every dependence met */
        wait_children();
        if (!cancelled_group)
            run(gtid, task);
        task_free(task);
        return 0;
    }
    return __kmpc_omp_task(loc, gtid, task);
}

/* if(0) tasks: the compiler calls the routine itself between these. */
void __kmpc_omp_task_begin_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid, (void)task;
}

void __kmpc_omp_task_complete_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
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
    wait_children();
    implied_flush();
    return 0;
}

kmp_int32 __kmpc_omp_taskyield(ident_t *loc, kmp_int32 gtid, int end_part)
{
    (void)loc, (void)gtid, (void)end_part;
    implied_flush();
    return 0;
}

void __kmpc_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    taskgroups++;
    if (smp_multi()) {
        struct taskgroup *g = calloc(1, sizeof *g);
        if (!g)
            log_fatal("out of memory for an OpenMP taskgroup");
        struct task_rec *r = current_rec();
        g->outer = r->group;
        r->group = g;
    }
}

void __kmpc_end_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct task_rec *r = current_rec();
    if (r->group) { /* opened with the node's threads running: its tasks first */
        struct taskgroup *g = r->group;
        run_until_zero(&g->count);
        r->group = g->outer;
        free(g);
    }
    if (cancelled_group == taskgroups)
        cancelled_group = 0;
    if (taskgroups > 0)
        taskgroups--;
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
    for (uint64_t k = 0; k < ntasks && trip; k++) {
        uint64_t count = trip / ntasks + (k < trip % ntasks);
        kmp_task_t *c = task_new(p->size, p->shareds_at);
        memcpy(c, task, p->size);
        if (p->shareds_at)
            c->shareds = (char *)c + p->shareds_at;
        kmp_uint64 clo = (kmp_uint64)sched_value(lo, st, first);
        kmp_uint64 chi = (kmp_uint64)sched_value(lo, st, first + count - 1);
        memcpy((char *)c + lb_at, &clo, sizeof clo);
        memcpy((char *)c + ub_at, &chi, sizeof chi);
        if (task_dup)
            ((kmp_task_dup_t)task_dup)(c, task, k == ntasks - 1);
        run(gtid, c);
        task_free(c);
        first += count;
    }
    task_free(task);
}
