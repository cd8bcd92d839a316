/*
 * region_nested.c — nested regions with teams of a node's threads
 * (OpenMP's nested parallelism, max-active-levels 2).
 *
 * __kmpc_fork_call (region.c) asks region_nests_here first, and the
 * thread of the outer team that meets the region forks it here: its
 * team's other threads are the node's helpers, or a group of helpers of
 * its own when the node runs several threads of the outer team
 * (parallel/threads.c). They enter and leave the region as a team over
 * the nodes does (region_enter, region.c); the description is the
 * encountering thread's, in its node's own memory (calloc): only the
 * node's threads read it. The team's barrier is the node's, or the group's
 * own (struct group_barrier, region_state.h; team_sync.c waits at it).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stats.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"
#include "omp/region_state.h"
#include "parallel/threads.h"

/* A region nested in an active one gets a team of its own (OpenMP's
 * nested parallelism, max-active-levels 2) when the outer region allows
 * it (omp_fork: nesting asked for, hlrc, home migration stopped on every
 * node) and this node runs one thread of the outer team: the team is this
 * node's threads, the encountering thread and node helpers (a node's
 * threads share its pages in hardware; another node cannot read the
 * encountering thread's private stack, which the region shares). Its
 * barrier is the node's threads meeting in memory; its dynamic chunks,
 * singles and ordered turns come from node 0 as any team's, under a team
 * number no other team has. Otherwise the region is serialized. */
bool region_nests_here(const struct omp_thread *t, int asked)
{
    return asked > 1 && t->active_level == 1 && !t->local_team && t->num_teams <= 1 &&
           t->region && t->region->nested && t->icv.max_active_levels >= 2;
}

static void run_local_thread(void *arg)
{
    struct omp_region *r = arg;
    struct omp_thread *t = omp_self();
    int tid = r->group_barrier ? threads_group_position() : smp_index();
    struct omp_thread saved = *t;
    region_enter(t, r, tid);
    t->icv.run_sched = r->run_sched;
    uint64_t args[OMP_MAX_ARGS];
    memcpy(args, r->args, (size_t)r->argc * sizeof args[0]);
    struct omp_tool_task tool_task;
    bool tool = r->tool_on && omp_tool_on;
    if (tool)
        omp_tool_implicit_begin(&tool_task, (struct omp_tool_par *)(uintptr_t)r->tool_local_par,
                                (struct omp_tool_task *)(uintptr_t)r->tool_local_enc, r->nthreads,
                                tid, false);
    region_invoke((kmpc_micro)(uintptr_t)r->microtask, tid, tid, r->argc, args);
    if (tool)
        omp_tool_join_begin(&tool_task, NULL);
    omp_tasks_complete();
    if (tool)
        omp_tool_implicit_end(&tool_task, 0, NULL, true, false);
    *t = saved;
}

void region_fork_local(struct omp_thread *t, int asked, kmpc_micro microtask, int argc,
                       const uint64_t *args, const void *codeptr, void *frame)
{
    int n = asked, limit = omp_node_thread_limit();
    /* thread-limit-var counts every thread of the contention group: the
     * outer team's others are busy (OpenMP 5.1 §2.6.1, ThreadsBusy), and
     * OMP_THREAD_LIMIT gives what is left, as libomp, dyn-var or not. */
    if (t->icv.thread_limit > 0) {
        int left = t->icv.thread_limit - (t->nthreads - 1);
        if (n > left)
            n = left > 1 ? left : 1;
    }
    if (n > limit) {
        if (!t->icv.dynamic)
            log_fatal("a nested parallel region asks for %d threads with dynamic adjustment off: "
                      "a nested team is one node's threads, at most %d (dsmrun --threads)",
                      n, limit);
        n = limit;
    }
    if (n <= 1) {
        region_serialized_begin(t, asked, codeptr, frame, false);
        region_invoke(microtask, t->tid, 0, argc, args);
        region_serialized_end(t);
        return;
    }
    struct omp_region *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory for a nested OpenMP region");
    struct omp_team_shared words = {0}; /* the team's threads are this node's */
    r->shared = &words;
    r->microtask = (uint64_t)(uintptr_t)microtask;
    r->argc = argc;
    r->nthreads = r->per_node = n;
    /* Dynamic chunks and singles are node 0's, keyed by team: a number
     * the master's teams (counted up from 1) never reach, and no other
     * thread of any node makes (its node and smp index are in it). */
    r->team = 0x80000000u | ((uint32_t)(job()->rank & 0xff) << 23) |
              ((uint32_t)(smp_index() & 0xff) << 15) | (++t->local_teams & 0x7fffu);
    region_takes_icvs(r, &t->icv);
    region_takes_binding(t, r);
    r->local = 1;
    /* the thread's place in its active team: under serialized regions,
     * what the first of them hides */
    r->outer_tid = t->serialized ? t->outer[0].tid : t->tid;
    r->outer_nthreads = t->serialized ? t->outer[0].nthreads : t->nthreads;
    r->outer_level = t->level - t->serialized;
    r->level_base = t->level;
    memcpy(r->args, args, (size_t)argc * sizeof args[0]);
    uint64_t t0 = clock_ns();
    struct omp_tool_par tool_par;
    struct omp_tool_task tool_task, *enc = NULL;
    r->tool_on = omp_tool_on;
    if (r->tool_on) {
        enc = omp_tool_current();
        omp_tool_parallel_begin(&tool_par, asked, false, false, codeptr, frame);
        r->tool_local_par = (uint64_t)(uintptr_t)&tool_par;
        r->tool_local_enc = (uint64_t)(uintptr_t)enc;
    }
    /* The node runs one thread of the outer team: the node's round of
     * helpers is the nested team's (the node's barrier is its barrier).
     * Several: a group of helpers of its own, and a barrier of its own. */
    struct threads_group *group = NULL;
    struct group_barrier gb;
    if (smp_multi()) {
        gb = (struct group_barrier){.lock = PTHREAD_MUTEX_INITIALIZER,
                                    .cv = PTHREAD_COND_INITIALIZER, .count = n};
        r->group_barrier = (uint64_t)(uintptr_t)&gb;
        group = threads_group_run(n - 1, run_local_thread, r);
        if (!group) { /* no thread slots left on the node: a team of one */
            free(r);
            region_serialized_begin(t, asked, codeptr, frame, false);
            region_invoke(microtask, t->tid, 0, argc, args);
            region_serialized_end(t);
            return;
        }
    } else {
        omp_node_threads_begin(n, run_local_thread, r);
    }
    struct omp_thread saved = *t;
    region_enter(t, r, 0);
    if (r->tool_on)
        omp_tool_implicit_begin(&tool_task, &tool_par, enc, n, 0, false);
    region_invoke(microtask, 0, 0, argc, args);
    if (r->tool_on)
        omp_tool_join_begin(&tool_task, codeptr);
    omp_tasks_complete();
    if (r->tool_on)
        omp_tool_implicit_end(&tool_task, n, codeptr, true, false);
    *t = saved;
    if (group)
        threads_group_join(group);
    else
        omp_node_threads_end(n);
    if (r->tool_on)
        omp_tool_parallel_end(&tool_par, false, false, codeptr);
    omp_doacross_region_end(r->shared);
    free(r);
    stats_add(STAT_PAR_REGIONS, 1);
    stats_add(STAT_T_PAR_REGION_NS, clock_ns() - t0);
}
