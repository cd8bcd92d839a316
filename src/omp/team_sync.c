/*
 * team_sync.c — what a running team synchronises with: its barrier (over
 * the nodes, among some of them, or a nested team's in memory), flush,
 * critical sections and reductions.
 *
 * Each runs on the team's thread that calls it, from the region's code,
 * and finds its team in t->region: the description the fork wrote
 * (region.c: each node's copy, and the team's words in shared memory;
 * region_nested.c: a nested team's, in its node's memory). A barrier of
 * a team on every node is dsm_barrier (the node's threads meet first,
 * sync/cohort.c); of a team on fewer nodes, the team's lock-based barrier
 * (parallel/); of a nested team, the node's threads meeting in memory. Critical sections and reductions take the
 * runtime's own locks (omp_lock_take, team_layout.c), and a blocking
 * reduction leaves the barrier after it owed to the next entry
 * (omp_self, omp_pay_barrier). The constructs one thread runs (single,
 * master, copyprivate) are team_single.c's.
 */
#include <pthread.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/stats.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"
#include "omp/region_state.h"

/* A nested team is one node's: nothing to do beyond the node's threads. */
static void no_node_barrier(void) {}

/* A team on some of the nodes, several threads on this one: the node's
 * threads meet (cohort.c), and the last of them passes the team's
 * barrier of nodes for all. */
static void team_nodes_barrier(void)
{
    struct omp_thread *t = omp_self_owing();
    parallel_team_barrier(&t->region->shared->count, t->team_nodes);
}

/* A nested team's own barrier (region_state.h): its threads meet in memory. */
static void group_barrier_wait(struct group_barrier *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t gen = b->generation;
    if (++b->arrived == b->count) {
        b->arrived = 0;
        b->generation++;
        pthread_mutex_unlock(&b->lock);
        pthread_cond_broadcast(&b->cv);
        return;
    }
    while (b->generation == gen)
        pthread_cond_wait(&b->cv, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

static void team_barrier(struct omp_thread *t)
{
    omp_tasks_complete(); /* a barrier completes the team's tasks (OpenMP 5.1 §2.19.2) */
    t->since_barrier = 0;
    if (t->nthreads <= 1)
        return;
    if (t->local_team) { /* a nested team of this node's threads: they meet in memory */
        if (t->region->group_barrier)
            group_barrier_wait((struct group_barrier *)(uintptr_t)t->region->group_barrier);
        else
            sync_node_barrier(no_node_barrier);
        return;
    }
    if (t->icv.cancellation && !smp_multi())
        /* A member may have left by `cancel parallel` (cancel.c): the
         * barrier must not wait for it. Where OpenMP's barrier is no
         * cancellation point, the caller goes on to its next one. (One
         * thread per node: with several, cancel.c refuses `cancel
         * parallel`, and the barriers are the usual ones.) */
        parallel_team_barrier_cancellable(&t->region->shared->count, t->nthreads);
    else if (t->team_nodes == job()->nodes)
        dsm_barrier(); /* the node's threads meet first (cohort.c) */
    else if (smp_multi())
        sync_node_barrier(team_nodes_barrier);
    else
        parallel_team_barrier(&t->region->shared->count, t->team_nodes);
}

/* An owed barrier (see __kmpc_end_reduce) is this one: one barrier serves
 * both. */
void __kmpc_barrier(ident_t *loc, kmp_int32 gtid)
{
    PROFILE_SITE();
    (void)gtid;
    struct omp_thread *t = omp_self_owing();
    t->barrier_owed = false;
    if (!omp_tool_on) {
        team_barrier(t);
        return;
    }
    /* kmp.h's KMP_IDENT_BARRIER_EXPL: the program's own barrier; else the
     * implicit one at a worksharing construct's end (ompt_sync_region_t
     * 3 and 2, as libomp reports them). */
    int kind = loc && (loc->flags & 0x20) ? 3 : 2;
    const void *codeptr = __builtin_return_address(0);
    omp_tool_enter_frame(__builtin_frame_address(0));
    omp_tool_sync(kind, true, codeptr);
    team_barrier(t);
    omp_tool_sync(kind, false, codeptr);
    omp_tool_enter_frame(NULL);
}

void omp_pay_barrier(struct omp_thread *t)
{
    t->barrier_owed = false;
    team_barrier(t);
}

/* flush (with or without a list: a list may only name fewer variables,
 * and every variable is flushed): this node's writes become visible, and
 * the writes other nodes made visible become visible here (sync/flush.c). */
void __kmpc_flush(ident_t *loc)
{
    (void)loc;
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the node's threads share memory in hardware */
    if (omp_self()->distributed)
        sync_flush();
    if (omp_tool_on)
        omp_tool_flush(__builtin_return_address(0));
}

static void critical(kmp_critical_name *crit, uint32_t hint, const void *codeptr)
{
    if (omp_tool_on) /* ompt_mutex_critical: its wait id is its name */
        omp_tool_mutex_acquire(5, hint, (uint64_t)(uintptr_t)crit, codeptr);
    if (omp_shared(omp_self())) {
        uint64_t t0 = clock_ns();
        omp_lock_take(omp_lock_id_of(crit));
        sync_flush_implied(); /* the entry's flush (sync/flush.c) */
        stats_add(STAT_PAR_CRITICALS, 1);
        stats_add(STAT_T_PAR_CRITICAL_NS, clock_ns() - t0);
    }
    if (omp_tool_on)
        omp_tool_mutex_acquired(5, (uint64_t)(uintptr_t)crit, codeptr);
}

void __kmpc_critical(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit)
{
    PROFILE_SITE();
    (void)loc, (void)gtid;
    critical(crit, 0, __builtin_return_address(0));
}

void __kmpc_critical_with_hint(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit,
                               uint32_t hint)
{
    PROFILE_SITE();
    (void)loc, (void)gtid;
    critical(crit, hint, __builtin_return_address(0));
}

void __kmpc_end_critical(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit)
{
    (void)loc, (void)gtid;
    if (omp_shared(omp_self()))
        omp_lock_give(omp_lock_id_of(crit));
    if (omp_tool_on)
        omp_tool_mutex_released(5, (uint64_t)(uintptr_t)crit, __builtin_return_address(0));
}

/* Reductions: always the "critical" method (return 1): each thread merges
 * its private copies into the shared variables holding a lock, which also
 * carries the writes from one thread to the next. The "atomic" method
 * (return 2) would have clang merge with hardware atomics on the shared
 * variables, which a page-based DSM cannot make coherent across nodes. */
kmp_int32 __kmpc_reduce_nowait(ident_t *loc, kmp_int32 gtid, kmp_int32 num_vars,
                               size_t reduce_size, void *reduce_data,
                               void (*reduce_func)(void *, void *), kmp_critical_name *lck)
{
    PROFILE_SITE();
    (void)loc, (void)gtid, (void)num_vars, (void)reduce_size, (void)reduce_data, (void)reduce_func;
    struct omp_thread *t = omp_self();
    stats_add(STAT_PAR_REDUCTIONS, 1);
    if (omp_tool_on) /* the merge, as OMPT's reduction (ended at the end entry) */
        omp_tool_reduction(true, __builtin_return_address(0));
    /* A teams region's reduction merges the teams' values: its initial
     * threads take the lock as a team's threads do (teams.c). */
    int merging = omp_in_league(t) ? t->num_teams : t->nthreads;
    /* libomp merges once every thread has arrived (its tree gathers
     * first), so what a thread did before the construct — zeroing the
     * variable in a `single nowait`, as NPB CG does — is never overtaken
     * by another thread's merge. The lock orders only the merges: after
     * another worksharing construct or master since the team's last
     * barrier, the team meets first. (The construct itself counts one.) */
    if (t->nthreads > 1 && t->since_barrier > 1)
        team_barrier(t);
    if (merging > 1 || smp_multi()) {
        uint64_t t0 = clock_ns();
        omp_lock_take(omp_lock_id_of(lck));
        stats_add(STAT_T_PAR_REDUCE_NS, clock_ns() - t0);
    }
    return 1;
}

void __kmpc_end_reduce_nowait(ident_t *loc, kmp_int32 gtid, kmp_critical_name *lck)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    if (t->nthreads > 1 || omp_in_league(t) || smp_multi())
        omp_lock_give(omp_lock_id_of(lck));
    if (omp_tool_on)
        omp_tool_reduction(false, __builtin_return_address(0));
}

kmp_int32 __kmpc_reduce(ident_t *loc, kmp_int32 gtid, kmp_int32 num_vars, size_t reduce_size,
                        void *reduce_data, void (*reduce_func)(void *, void *),
                        kmp_critical_name *lck)
{
    PROFILE_SITE();
    return __kmpc_reduce_nowait(loc, gtid, num_vars, reduce_size, reduce_data, reduce_func, lck);
}

/* The blocking form ends with a barrier (libomp runs one here), but the
 * construct's own implicit barrier always follows: clang emits
 * __kmpc_barrier right after, with nothing between (checked for `for`,
 * `sections` and dynamic loops, clang 14). A DSM barrier costs a round of
 * messages and every node's release, so this one is only owed: the next
 * entry to the runtime pays it, and when that is __kmpc_barrier, as clang
 * makes it, one barrier serves both. A region's end (the join) settles it
 * too: restoring the thread's state outside the region clears it. */
void __kmpc_end_reduce(ident_t *loc, kmp_int32 gtid, kmp_critical_name *lck)
{
    __kmpc_end_reduce_nowait(loc, gtid, lck);
    struct omp_thread *t = omp_self_owing();
    if (t->nthreads > 1)
        t->barrier_owed = true;
}
