/*
 * cancel.c — cancellation (OpenMP 5.1 §2.20): `cancel` and `cancellation
 * point`.
 *
 * cancel-var is OMP_CANCELLATION (false by default); while it is false a
 * cancel construct has no effect and no cancellation point finds one, as
 * the standard says, and nothing here costs a message. When it is true:
 *
 *   - `for` and `sections`: the cancelling thread records the construct's
 *     number in the region's description (shared memory) and flushes; a
 *     thread at a cancellation point of the construct flushes and reads
 *     it. The construct's own barrier is a barrier as usual.
 *   - `taskgroup`: tasks run at once on the thread that creates them
 *     (task.c), so a taskgroup's tasks are all this node's: a flag of the
 *     innermost taskgroup here makes the tasks created after the cancel
 *     be discarded, and its end clears it.
 *   - `parallel`: not supported — a cancelled thread leaves the region
 *     while the others may be in a barrier it will not reach, and dsm's
 *     barriers cannot yet be left half-way; the cancel ends the job with
 *     a message saying so.
 */
#include "base/log.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

enum cancel_kind { CANCEL_PARALLEL = 1, CANCEL_LOOP = 2, CANCEL_SECTIONS = 3, CANCEL_TASKGROUP = 4 };

kmp_int32 __kmpc_cancel(ident_t *loc, kmp_int32 gtid, kmp_int32 kind)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    if (!t->icv.cancellation)
        return 0;
    switch (kind) {
    case CANCEL_PARALLEL:
        log_fatal("`cancel parallel` with OMP_CANCELLATION=true: dsm cancels for, sections and "
                  "taskgroup only; unset OMP_CANCELLATION to run the program without cancelling");
    case CANCEL_LOOP:
    case CANCEL_SECTIONS:
        if (t->nthreads <= 1 || !t->region)
            return 1;
        t->region->cancelled_construct = t->loop;
        sync_flush();
        return 1;
    case CANCEL_TASKGROUP:
        return omp_taskgroup_cancel();
    default:
        log_fatal("__kmpc_cancel with kind %d, which OpenMP does not define", kind);
    }
}

kmp_int32 __kmpc_cancellationpoint(ident_t *loc, kmp_int32 gtid, kmp_int32 kind)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    if (!t->icv.cancellation)
        return 0;
    switch (kind) {
    case CANCEL_PARALLEL:
        return 0; /* never activated (above) */
    case CANCEL_LOOP:
    case CANCEL_SECTIONS:
        if (t->nthreads <= 1 || !t->region)
            return 0;
        sync_flush();
        return t->region->cancelled_construct == t->loop;
    case CANCEL_TASKGROUP:
        return omp_taskgroup_cancelled();
    default:
        log_fatal("__kmpc_cancellationpoint with kind %d, which OpenMP does not define", kind);
    }
}

/* A barrier in a region that may be cancelled: true if the region was
 * (never, above). */
kmp_int32 __kmpc_cancel_barrier(ident_t *loc, kmp_int32 gtid)
{
    __kmpc_barrier(loc, gtid);
    return 0;
}
