/*
 * parallel.h — worksharing across nodes (docs/design.md, layer 6): what a
 * fork-join front end (the OpenMP runtime in src/omp) needs beyond locks
 * and barriers.
 *
 * - A loop's dynamic and guided chunks are served by node 0: one shared
 *   iteration counter, or for a nonmonotonic loop a pool of chunks per
 *   node; a chunk (or a batch of them) is one request and one reply, never
 *   a page bouncing between nodes.
 * - Ordered loops pass a turn from iteration to iteration through the same
 *   server.
 * - A team smaller than the job synchronises with a barrier of its own.
 *
 * Loops are named by (team, loop): the team's sequence number (every member
 * counts the regions it joins the same way) and the worksharing construct's
 * number within the region (every member meets them in the same order, as
 * OpenMP requires).
 */
#ifndef DSM_PARALLEL_PARALLEL_H
#define DSM_PARALLEL_PARALLEL_H
#include <stdbool.h>
#include <stdint.h>

#include "parallel/schedule.h"
#include "sync/sync.h"

/* The parallel layer's message types (numbered on from sync's; ipc.h). */
enum parallel_type {
    PAR_CHUNK_REQ = SYNC_TYPE_NEXT, /* the next chunk of a dynamic or guided loop, to node 0 */
    PAR_CHUNK_REP,                  /* that chunk (or none: the loop is over) */
    PAR_TURN_REQ,                   /* ordered: wait for an iteration's turn, at node 0 */
    PAR_TURN_GO,                    /* ordered: it is that iteration's turn */
    PAR_TURN_DONE,                  /* ordered: an iteration is over; the next one's turn */
    PAR_CLAIM_REQ,                  /* a lock of the API's (omp_set_lock, omp_test_lock), at node 0 */
    PAR_CLAIM_REP,                  /* granted, or busy for a try */
    PAR_CLAIM_LEAVE,                /* released: the next waiter's */
    PAR_SPEED,                      /* profiled loops: a node's measured speed, to node 0 */
    PAR_SPEEDS,                     /* every member's, back to each */
    PARALLEL_TYPE_NEXT
};

/* What parallel needs from the settings (runtime.c fills it from the
 * table: docs/design.md, Settings). */
struct parallel_params {
    double profiled_gain; /* DSM_PROFILED_GAIN (parallel_set_profile_threshold) */
};
void parallel_start(const struct parallel_params *p);
void parallel_finish(void);
/* Their parts (parallel.c calls them). */
void parallel_dispatch_start(void);
void parallel_dispatch_finish(void);
void parallel_claim_start(void);
void parallel_claim_finish(void);
void parallel_sites_start(void);
void parallel_sites_finish(void);

/* A loop's name: the same on every member of the team. */
struct loop_id {
    uint32_t team;
    uint32_t loop;
};

/* Takes the next chunk of a dynamic (SCHED_DYNAMIC) or guided
 * (SCHED_GUIDED) loop of `trip` iterations shared by `nthreads` threads:
 * returns its size (0: the loop is over for this thread) and its first
 * iteration in *first. Every thread calls it until it returns 0. */
uint64_t parallel_next_chunk(struct loop_id id, enum sched_kind kind, uint64_t trip,
                             uint64_t chunk, int nthreads, uint64_t *first);

/* How a team's threads lie over its nodes, for parallel_next_chunks:
 * `pools` nodes (node-major), `per_pool` threads each (the last node the
 * rest), the asking thread on node `pool` of them, having run `ran`
 * chunks of the loop so far (the most a batch may bring). */
struct chunk_pools {
    int      pool, pools, per_pool;
    uint64_t ran;
};

/* As parallel_next_chunk, for a loop whose chunks need not come in order
 * (OpenMP's nonmonotonic; not an ordered loop): each node of the team
 * takes first from a pool of its own, then from the others' (dispatch.c).
 * A dynamic loop's thread may get a run of several whole chunks at once,
 * which it hands to itself one chunk at a time. */
uint64_t parallel_next_chunks(struct loop_id id, enum sched_kind kind, uint64_t trip,
                              uint64_t chunk, int nthreads, const struct chunk_pools *pools,
                              uint64_t *first);

/* A `single` construct of the team, named like a loop: true for the one
 * thread that asks first (node 0 decides, as for a chunk), false for the
 * others. Every thread of the team calls it once. */
bool parallel_single(struct loop_id id, int nthreads);

/* Ordered loops: waits until every iteration before `iter` has finished
 * (parallel_turn_done), then returns. */
void parallel_turn_wait(struct loop_id id, uint64_t iter);
/* Iteration `iter` of a loop of `trip` iterations has finished: the next
 * one may go. Called once per iteration, in any order across threads. */
void parallel_turn_done(struct loop_id id, uint64_t iter, uint64_t trip);

/* ---- loop sites and seed 003's profiled schedule (loopsite.c) ---------- */

/* A loop of the program's source, by an address the same on every node;
 * its state on this node, kept across the loop's executions (loopsite.c). */
struct loop_site;

/* This node's state of the site named `key`, made on first use. */
struct loop_site *parallel_site(const void *key);

/* The most threads a profiled loop's team may have (nodes x threads per
 * node): the measurements that node 0 gathers and sends back, 16 bytes a
 * thread, and the arrays of a decision (some on the stack: profile.c) are
 * sized by the team, and this bounds them. A larger team ends the job at
 * its first profiled loop, in one line. */
#define PARALLEL_PROFILED_TEAM_MAX 4096

/* One execution's division for this thread: a block of `count` iterations
 * from `first` (block split), or chunks of `chunk` iterations, the k-th
 * at k * round + offset, `round` being every thread's chunk and `offset`
 * the chunks of the threads before it (cyclic split; first: its first
 * chunk's). count: its total. parallel_plan_chunk walks them. */
struct loop_plan {
    bool     cyclic;
    uint64_t first, count;
    uint64_t chunk, offset, round;
};

/* The plan's k-th chunk of a loop of `trip` iterations (a block plan has
 * one, k = 0): its size (0: no more), its first iteration in *first. */
uint64_t parallel_plan_chunk(const struct loop_plan *p, uint64_t trip, uint64_t k,
                             uint64_t *first);

/* Every thread of the team calls these around each execution of a
 * profiled loop of `trip` iterations: thread `tid` of `n`, laid out
 * node-major, `per_node` threads a node (thread tid runs on node
 * tid / per_node; 1: one thread per node). Collective at decision points
 * (every thread of the team, and the node's threads meet first). */
void parallel_profiled_begin(struct loop_site *s, const struct sched_spec *spec, uint64_t trip,
                             int tid, int n, int per_node, struct loop_plan *plan);
void parallel_profiled_end(struct loop_site *s, int tid);

/* The least predicted gain (a fraction) for which a profiled loop is
 * re-partitioned (DSM_PROFILED_GAIN). */
void parallel_set_profile_threshold(double fraction);

/* Locks a program can test (omp_test_lock), which dsm_lock's queue cannot
 * answer without waiting: node 0 keeps who holds each and who waits. A
 * claim returns true once the lock is this node's; with `try`, false at
 * once if another node holds it. The claim only orders the holders: the
 * caller takes dsm_lock(id) after claiming and drops it before leaving, for
 * the consistency (the holders' writes pass on with it). */
bool parallel_claim(int id, bool try);
void parallel_leave(int id);

/* A barrier of the nodes 0 .. nthreads-1 only (a team smaller than the
 * job), with the consistency of a lock passed through all of them. `count`
 * points to shared memory the team's members all use, zero at first. */
struct team_count {
    uint32_t arrived, generation;
    uint32_t cancelled; /* `cancel parallel` ran: the barrier no longer holds anyone */
};
void parallel_team_barrier(struct team_count *count, int nthreads);
/* The same barrier, which `cancel parallel` can end (OpenMP's cancellable
 * barrier): returns true, at once or when woken, once the team's region is
 * cancelled, false when every member arrived. */
bool parallel_team_barrier_cancellable(struct team_count *count, int nthreads);
/* Cancels the region of the team that uses `count`: wakes the members
 * waiting in its barrier, and every later barrier or check returns true. */
void parallel_team_cancel(struct team_count *count);
bool parallel_team_cancelled(struct team_count *count);

/* Lock ids reserved for the OpenMP runtime: [PARALLEL_LOCK_BASE, INT_MAX]
 * (dsm.h tells programs to keep below it). */
#define PARALLEL_LOCK_BASE (SYNC_USER_ID_MAX + 1)
#endif
