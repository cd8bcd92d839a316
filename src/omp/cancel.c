/*
 * cancel.c — cancellation (OpenMP 5.1 §2.20): `cancel` and `cancellation
 * point`.
 *
 * cancel-var is OMP_CANCELLATION (false by default); while it is false a
 * cancel construct has no effect and no cancellation point finds one, as
 * the standard says, and nothing here costs a message. When it is true:
 *
 *   - `for` and `sections`: the cancelling thread records the construct's
 *     number in the team's shared words (shared memory) and flushes; a
 *     thread at a cancellation point of the construct flushes and reads
 *     it. The construct's own barrier is a barrier as usual.
 *   - `taskgroup`: the innermost taskgroup's cancel word is set (task.c;
 *     shared memory, published by a flush, where its tasks may run on
 *     other nodes): its tasks not begun are discarded wherever they would
 *     run, and a running one sees it at a cancellation point, which
 *     flushes before it reads a shared word still clear.
 *   - `parallel`: the canceller marks the team's barrier count cancelled
 *     under the team's lock and wakes its waiters (parallel/team.c), then
 *     leaves the region; every barrier of a region under cancel-var true
 *     is that lock-based barrier, even for a full team, so no member
 *     waits for one that left: a waiting one wakes, an arriving one
 *     passes, and a cancellable barrier or a `cancellation point
 *     parallel` returns 1, which makes the compiled code leave the
 *     region too. The region's end (dsm_wait_for_end) is no barrier of
 *     the team, so the members that left meet there. That barrier runs
 *     one thread per node: with several threads on a node, loops,
 *     sections and taskgroups cancel as above, barriers are the usual
 *     ones, and `cancel parallel` ends the job with one line.
 */
#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

enum cancel_kind { CANCEL_PARALLEL = 1, CANCEL_LOOP = 2, CANCEL_SECTIONS = 3, CANCEL_TASKGROUP = 4 };

/* OMPT's flags for a kind of construct (ompt_cancel_flag_t). */
static int tool_flag(kmp_int32 kind)
{
    switch (kind) {
    case CANCEL_PARALLEL: return 0x01;
    case CANCEL_SECTIONS: return 0x02;
    case CANCEL_LOOP: return 0x04;
    default: return 0x08; /* taskgroup */
    }
}

static kmp_int32 cancel(kmp_int32 kind);

kmp_int32 __kmpc_cancel(ident_t *loc, kmp_int32 gtid, kmp_int32 kind)
{
    (void)loc, (void)gtid;
    kmp_int32 r = cancel(kind);
    if (r && omp_tool_on) /* ompt_cancel_activated */
        omp_tool_cancel(tool_flag(kind) | 0x10, __builtin_return_address(0));
    return r;
}

/* `cancel parallel` needs the lock-based team barrier that wakes the
 * members left waiting (parallel/team.c), which runs one thread per node:
 * with several on a node it is refused, in one line. Loops, sections and
 * taskgroups cancel with any number of threads. */
static void parallel_needs_one_thread_per_node(const char *what)
{
    if (smp_multi())
        log_fatal("%s with several threads on a node is not supported: cancellation of a "
                  "parallel region runs one thread per node (at most %d threads in the region); "
                  "cancel a loop, sections or taskgroup, or use fewer threads", what, job()->nodes);
}

static kmp_int32 cancel(kmp_int32 kind)
{
    struct omp_thread *t = omp_self();
    if (!t->icv.cancellation)
        return 0;
    if (kind == CANCEL_PARALLEL)
        parallel_needs_one_thread_per_node("cancel parallel");
    switch (kind) {
    case CANCEL_PARALLEL:
        if (t->nthreads > 1 && t->region)
            parallel_team_cancel(&t->region->shared->count);
        return 1;
    case CANCEL_LOOP:
    case CANCEL_SECTIONS:
        if (t->nthreads <= 1 || !t->region)
            return 1;
        t->region->shared->cancelled_construct = t->loop;
        sync_flush();
        return 1;
    case CANCEL_TASKGROUP:
        return omp_taskgroup_cancel();
    default:
        log_fatal("__kmpc_cancel with kind %d, which OpenMP does not define", kind);
    }
}

static kmp_int32 cancellation_point(kmp_int32 kind);

kmp_int32 __kmpc_cancellationpoint(ident_t *loc, kmp_int32 gtid, kmp_int32 kind)
{
    (void)loc, (void)gtid;
    kmp_int32 r = cancellation_point(kind);
    if (r && omp_tool_on) /* ompt_cancel_detected */
        omp_tool_cancel(tool_flag(kind) | 0x20, __builtin_return_address(0));
    return r;
}

static kmp_int32 cancellation_point(kmp_int32 kind)
{
    struct omp_thread *t = omp_self();
    if (!t->icv.cancellation)
        return 0;
    if (kind == CANCEL_PARALLEL && smp_multi())
        return 0; /* `cancel parallel` cannot happen here (cancel(), above) */
    switch (kind) {
    case CANCEL_PARALLEL:
        if (t->nthreads <= 1 || !t->region)
            return 0; /* a team of one: its cancel left the region already */
        return parallel_team_cancelled(&t->region->shared->count);
    case CANCEL_LOOP:
    case CANCEL_SECTIONS:
        if (t->nthreads <= 1 || !t->region)
            return 0;
        sync_flush();
        return t->region->shared->cancelled_construct == t->loop;
    case CANCEL_TASKGROUP:
        return omp_taskgroup_cancelled();
    default:
        log_fatal("__kmpc_cancellationpoint with kind %d, which OpenMP does not define", kind);
    }
}

/* A barrier in a region that may be cancelled: 1 if the region was, and
 * the caller leaves it. */
kmp_int32 __kmpc_cancel_barrier(ident_t *loc, kmp_int32 gtid)
{
    struct omp_thread *t = omp_self_owing();
    if (!t->icv.cancellation || t->nthreads <= 1 || !t->region || smp_multi()) {
        __kmpc_barrier(loc, gtid);
        return 0;
    }
    t->barrier_owed = false; /* this barrier serves as the owed one too */
    t->since_barrier = 0;
    return parallel_team_barrier_cancellable(&t->region->shared->count, t->nthreads);
}
