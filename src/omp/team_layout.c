/*
 * team_layout.c — an OpenMP team over nodes × threads (docs/openmp.md,
 * "Threads per node"; docs/design.md, "SMP nodes").
 *
 * How many threads a region gets is OpenMP's rule (5.1 §2.6.1): the
 * num_threads clause, else nthreads-var (OMP_NUM_THREADS,
 * omp_set_num_threads; dsm's default is nodes × DSM_THREADS), no more than
 * the thread limit; when that many cannot be given, dyn-var true gives
 * the limit and dyn-var false is the implementation's choice, which here
 * is one line that ends the job. The limit is nodes × DSM_THREADS when
 * dsmrun --threads (DSM_THREADS) names the threads each node has (1
 * included), and nodes × OMP_NODE_THREADS_MAX otherwise: then a region that asks for
 * more threads than nodes gets them, as libomp gives num_threads(4) four
 * threads on a machine of two cores.
 *
 * The team's n threads are laid out node-major, p = ceil(n / nodes) on
 * each node from node 0 on (the last one may have fewer, later ones none):
 * a static loop's blocks, cut by thread number, are then cut by node first
 * and by thread inside the node, so a node's threads work on neighbouring
 * data. With n <= nodes, p = 1 and nothing here runs: the node has one
 * thread, and every path is the one-thread path of before.
 *
 * A node runs its threads of a region as the SMP machinery runs fork
 * style's: parallel/threads.c's helpers, smp_threads() set to the node's
 * share of the team while the region runs (so cohort.c's barrier gathers
 * exactly those and the protocol takes its SMP-safe paths) and back to 1
 * after it, when the node again runs one thread.
 */
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "coherence/coherence.h"
#include "omp/omp.h"
#include "omp/omp_state.h"
#include "parallel/threads.h"
#include "sync/sync.h"

/* A node's threads when DSM_THREADS does not say (as DSM_THREADS's own
 * range, config.c). */
#define OMP_NODE_THREADS_MAX 256

/* DSM_THREADS (dsmrun --threads), when set, is what each node has, 1
 * included: `--threads 1` keeps one thread per node. */
static int node_threads_max(void)
{
    const struct omp_params *p = omp_params();
    return p->node_threads_set ? p->node_threads : OMP_NODE_THREADS_MAX;
}

int omp_node_thread_limit(void) { return node_threads_max(); }

int omp_thread_limit(const struct omp_thread *t)
{
    int job_limit = job()->started ? job()->nodes * node_threads_max() : 1;
    return t->icv.thread_limit > 0 && t->icv.thread_limit < job_limit ? t->icv.thread_limit
                                                                       : job_limit;
}

int omp_team_size(const struct omp_thread *t, int asked)
{
    if (!job()->started)
        return 1; /* not in a job: the program's one thread */
    int nodes = job()->nodes;
    int limit = nodes * node_threads_max();
    /* OMP_THREAD_LIMIT, or a teams region's thread_limit, below the
     * job's: the team gets it, dyn-var or not, as libomp gives it
     * (OpenMP leaves dyn-var false to the implementation). */
    int set = t->thread_limit > 0 ? t->thread_limit : t->icv.thread_limit;
    if (set > 0 && set < limit) {
        limit = set;
        return asked < limit ? asked : limit;
    }
    if (asked <= limit)
        return asked;
    if (!t->icv.dynamic)
        log_fatal("a parallel region asks for %d threads with dynamic adjustment off "
                  "(omp_set_dynamic(0) or OMP_DYNAMIC=false): %d nodes × %d threads give at most "
                  "%d; run with more nodes or dsmrun --threads", asked, nodes, node_threads_max(),
                  limit);
    return limit;
}

int omp_team_per_node(int n)
{
    int nodes = job()->nodes;
    return (n + nodes - 1) / nodes;
}

int omp_team_on_node(int n, int per_node, int node)
{
    int left = n - node * per_node;
    return left <= 0 ? 0 : left < per_node ? left : per_node;
}

void omp_team_check_threads(const struct omp_thread *t, int per_node)
{
    if (per_node <= 1)
        return;
    const struct omp_params *p = omp_params();
    if (!coherence_can(p->protocol, COHERENCE_NODE_THREADS))
        log_fatal("an OpenMP region of %d threads per node under --protocol %s: several threads "
                  "on a node need the hlrc protocol (docs/design.md, SMP nodes); use hlrc, or at "
                  "most one thread per node (num_threads, OMP_NUM_THREADS <= %d)",
                  per_node, p->protocol, job()->nodes);
    if (p->local_mem)
        log_fatal("an OpenMP region of %d threads per node with DSM_LOCAL_MEM: the page cache "
                  "runs one thread per node; leave DSM_LOCAL_MEM unset, or use at most %d threads",
                  per_node, job()->nodes);
    (void)t; /* cancellation with threads per node: `cancel parallel` is refused (cancel.c) */
}

/* Nested teams run several threads on a node: what omp_team_check_threads
 * asks of them, but where it refuses, nested regions stay serialized
 * (OpenMP lets them). */
bool omp_nesting_possible(const struct omp_thread *t)
{
    if (t->icv.max_active_levels < 2 || t->icv.cancellation || node_threads_max() < 2)
        return false;
    /* Before the job, the program's one thread: nothing to refuse. */
    const struct omp_params *p = omp_params();
    return !p->protocol || (coherence_can(p->protocol, COHERENCE_NODE_THREADS) && !p->local_mem);
}

void omp_node_threads_begin(int local, void (*fn)(void *), void *arg)
{
    if (local <= 1)
        return;
    smp_set_threads(local);
    threads_run(fn, arg);
}

void omp_node_threads_end(int local)
{
    if (local <= 1)
        return;
    threads_join();
    smp_set_threads(1);
}

void omp_lock_take(int id)
{
    if (smp_multi())
        sync_cohort_lock(id);
    else
        sync_lock(id);
}

void omp_lock_give(int id)
{
    if (smp_multi())
        sync_cohort_unlock(id);
    else
        sync_unlock(id);
}
