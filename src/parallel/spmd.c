/*
 * spmd.c — dsm_loop: worksharing loops of dsm's own C API, for SPMD
 * programs (every node runs the same code), with the same schedules the
 * OpenMP runtime offers, seed 003's profiled schedule included.
 *
 * The nodes are the team: node r is thread r of dsm_nodes(). A static loop
 * is divided without a message; dynamic and guided chunks come from node
 * 0 (dispatch.c), the loop named by the team SPMD_TEAM and the count of
 * such loops each node has begun (the same everywhere, the calls being
 * collective); a profiled loop keeps its chunk_vector with its site
 * (loopsite.c) and exchanges speeds at its decision points.
 */
#include <stdint.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "parallel/parallel.h"
#include "sync/sync.h"

/* The team of SPMD loops, apart from every OpenMP team's number. */
#define SPMD_TEAM UINT32_MAX

/* This node's loop in progress (one at a time: dsm_loop_next ends it). */
static DSM_STATE struct {
    bool              active;
    enum sched_kind   kind;
    long              lo;
    uint64_t          trip, chunk, next;
    struct loop_id    id;
    uint32_t          loops;   /* dynamic and guided loops begun so far */
    struct loop_site *site;    /* profiled */
    struct loop_plan  plan;
} spmd;

void dsm_loop_begin(const void *site, long lo, long hi, const char *schedule)
{
    sync_refuse_threads("dsm_loop");
    if (spmd.active)
        log_fatal("dsm_loop_begin: the loop begun before has not ended (call dsm_loop_next until it "
                  "returns 0)");
    struct sched_spec spec = {.kind = SCHED_STATIC};
    char err[160];
    if (schedule && *schedule && sched_parse(schedule, &spec, err, sizeof err) < 0)
        log_fatal("dsm_loop: schedule \"%s\": %s", schedule, err);
    if (spec.kind == SCHED_PROFILED && !site)
        log_fatal("dsm_loop: schedule \"%s\" needs a site (an address the same on every node)",
                  schedule);
    int n = job()->nodes, me = job()->rank;
    enum sched_kind kind = spec.kind == SCHED_AUTO ? SCHED_STATIC : spec.kind;
    if (kind == SCHED_PROFILED && n == 1)
        kind = SCHED_STATIC; /* nothing to balance */
    spmd.active = true;
    spmd.kind = kind;
    spmd.lo = lo;
    spmd.trip = hi > lo ? (uint64_t)hi - (uint64_t)lo : 0;
    spmd.chunk = spec.chunk > 0 ? (uint64_t)spec.chunk : kind == SCHED_STATIC ? 0 : 1;
    spmd.next = 0;
    spmd.site = NULL;
    stats_add(STAT_PAR_LOOPS, 1);
    if (kind == SCHED_DYNAMIC || kind == SCHED_GUIDED)
        spmd.id = (struct loop_id){SPMD_TEAM, spmd.loops++};
    if (kind == SCHED_PROFILED) {
        spmd.site = parallel_site(site);
        parallel_profiled_begin(spmd.site, &spec, spmd.trip, me, n, 1, &spmd.plan);
    }
}

/* The next chunk of this node's share: its first iteration (from 0) and
 * size, 0 when the share is done. */
static uint64_t next_chunk(uint64_t *first)
{
    int n = job()->nodes, me = job()->rank;
    uint64_t k = spmd.next++;
    switch (spmd.kind) {
    case SCHED_PROFILED:
        return parallel_plan_chunk(&spmd.plan, spmd.trip, k, first);
    case SCHED_DYNAMIC:
    case SCHED_GUIDED:
        return parallel_next_chunk(spmd.id, spmd.kind, spmd.trip, spmd.chunk, n, first);
    default:
        if (spmd.chunk == 0)
            return k == 0 ? sched_static_block(spmd.trip, me, n, first) : 0;
        k = (uint64_t)me + k * (uint64_t)n;
        if (k >= (spmd.trip + spmd.chunk - 1) / spmd.chunk)
            return 0;
        *first = k * spmd.chunk;
        return spmd.trip - *first < spmd.chunk ? spmd.trip - *first : spmd.chunk;
    }
}

int dsm_loop_next(long *from, long *to)
{
    if (!spmd.active)
        log_fatal("dsm_loop_next: no loop begun (call dsm_loop_begin first)");
    uint64_t first = 0, count = spmd.trip ? next_chunk(&first) : 0;
    if (count == 0) {
        if (spmd.site)
            parallel_profiled_end(spmd.site, job()->rank);
        spmd.site = NULL;
        spmd.active = false;
        return 0;
    }
    *from = (long)((uint64_t)spmd.lo + first);
    *to = (long)((uint64_t)spmd.lo + first + count);
    return 1;
}

void dsm_loop(const void *site, long lo, long hi, const char *schedule,
              void (*body)(long from, long to, void *arg), void *arg)
{
    if (!body)
        log_fatal("dsm_loop: no body to run");
    dsm_loop_begin(site, lo, hi, schedule);
    for (long from, to; dsm_loop_next(&from, &to);)
        body(from, to, arg);
}
