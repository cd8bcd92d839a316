/*
 * team.c — the barrier of a team smaller than the job (parallel.h).
 *
 * dsm_barrier gathers every node; a team of the first n nodes (an OpenMP
 * num_threads below the node count) needs its own. It is built from a lock
 * and a condition variable over a count in shared memory: each arrival
 * takes the lock (and so sees the writes of every arrival before it), the
 * last one wakes the others, and each of them takes the lock again on the
 * way out (and so sees everything written before the barrier). It costs a
 * lock hand-over per member, which is why full teams use dsm_barrier.
 *
 * `cancel parallel` needs a barrier its waiters can leave: the thread
 * that cancels leaves the region and will not arrive. The cancel is a
 * word beside the count, set under the same lock with a broadcast, so a
 * waiter wakes and sees it, and a later arrival sees it at once; the
 * lock carries the canceller's writes to both. Only a region that may be
 * cancelled (OMP_CANCELLATION=true) uses it for a full team too.
 *
 * With several threads on a node (src/omp/team_layout.c) the node's
 * threads meet first (cohort.c) and the last of them passes this barrier
 * for the node, counted in nodes; its lock is then the node's cohort lock,
 * which the condition's wait of several threads expects (cond.c).
 */
#include "base/smp.h"
#include "base/stats.h"
#include "parallel/parallel.h"

enum { TEAM_LOCK = PARALLEL_LOCK_BASE, TEAM_COND = PARALLEL_LOCK_BASE };

static void team_lock(void)
{
    if (smp_multi())
        sync_cohort_lock(TEAM_LOCK);
    else
        sync_lock(TEAM_LOCK);
}

static void team_unlock(void)
{
    if (smp_multi())
        sync_cohort_unlock(TEAM_LOCK);
    else
        sync_unlock(TEAM_LOCK);
}

static bool team_barrier(struct team_count *count, int nthreads, bool cancellable)
{
    team_lock();
    bool cancelled = cancellable && count->cancelled;
    if (!cancelled) {
        uint32_t generation = count->generation;
        if (++count->arrived == (uint32_t)nthreads) {
            count->arrived = 0;
            count->generation = generation + 1;
            sync_cond_broadcast(TEAM_COND);
        } else
            while (count->generation == generation && !(cancelled = cancellable && count->cancelled))
                sync_cond_wait(TEAM_COND, TEAM_LOCK);
    }
    team_unlock();
    stats_add(STAT_BARRIERS, 1); /* its time is counted as lock time */
    return cancelled;
}

void parallel_team_barrier(struct team_count *count, int nthreads)
{
    team_barrier(count, nthreads, false);
}

bool parallel_team_barrier_cancellable(struct team_count *count, int nthreads)
{
    return team_barrier(count, nthreads, true);
}

void parallel_team_cancel(struct team_count *count)
{
    sync_lock(TEAM_LOCK);
    count->cancelled = 1;
    sync_cond_broadcast(TEAM_COND);
    sync_unlock(TEAM_LOCK);
}

bool parallel_team_cancelled(struct team_count *count)
{
    sync_lock(TEAM_LOCK);
    bool cancelled = count->cancelled;
    sync_unlock(TEAM_LOCK);
    return cancelled;
}
