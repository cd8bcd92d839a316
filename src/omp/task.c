/*
 * task.c — explicit tasks, run at once by the thread that meets them, and
 * taskloop.
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
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
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
}

void __kmpc_end_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
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
