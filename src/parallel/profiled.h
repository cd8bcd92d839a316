/*
 * profiled.h — seed 003's profiled schedule (§3.1, Fig. 4) as pure
 * functions: from each thread's measured speed on a loop, predict the
 * loop's time under the division in use and under a division by speed,
 * and re-partition only when the gain passes a threshold.
 *
 * A division is a chunk_vector: thread i's share counts[i] of the trip
 * (block split, chunk_size 0), or thread i's chunk size chunks[i] taken in
 * turn (cyclic split, chunk_size > 0: Fig. 2's 3:1:2 example).
 */
#ifndef DSM_PARALLEL_PROFILED_H
#define DSM_PARALLEL_PROFILED_H
#include <stdbool.h>
#include <stdint.h>

/* The time (seconds) a loop takes when thread i runs counts[i] iterations
 * at speed[i] iterations per second: the slowest thread's. */
double profiled_predict(int n, const uint64_t *counts, const double *speed);

/* Fig. 4 (b)-(d): given the division in use (cur[i] iterations of `trip`)
 * and the speeds measured under it, computes the division by speed into
 * next[] and returns whether it pays: its predicted time is shorter than
 * the current one's by more than `threshold` (a fraction, e.g. 0.05).
 * *gain receives the predicted fraction saved. Speeds of 0 (a thread that
 * ran nothing) count as the mean of the others'. */
bool profiled_decide(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                    double threshold, uint64_t *next, double *gain);

/* Fig. 4 (e): when re-partitioning stops paying. The seed stops profiling
 * a loop once a decision predicts no gain over the threshold; on a node
 * whose speed is whatever the scheduler gives it that millisecond, noisy
 * speeds predict a gain nearly every time and the loop is re-partitioned
 * for ever (issue 22: 67-225 times a CG class A run on 4 nodes), so the
 * rule below also stops when the measurements say the last re-partition
 * did not deliver, when the proposed division hardly differs from the
 * current one, or when it turns back toward the division before. */
struct profile_rule {
    double threshold; /* least predicted gain (a fraction): DSM_PROFILED_GAIN */
    double band;      /* least share of the trip a re-partition must move to
                       * another thread (hysteresis) */
    double tolerance; /* how far a measured time may exceed a predicted or an
                       * earlier one and still count as met (the noise) */
    uint64_t max_repartitions; /* at most this many: a bound on profiling */
};

/* What is known of the divisions before the current one (all at the trip
 * of the decision). */
struct profile_past {
    const uint64_t *prev; /* the division the current one replaced; NULL:
                           * the current one is the first */
    double predicted;     /* time the current division was predicted to take
                           * when it was adopted (s); 0: not adopted by a
                           * re-partition, or already judged */
    double before;        /* time measured under prev when the current one
                           * was adopted (s) */
    uint64_t repartitions; /* re-partitions so far */
};

enum profile_verdict {
    PROFILE_REPARTITION, /* adopt next[], go on profiling */
    PROFILE_STOP_GAIN,   /* the predicted gain does not pass the threshold */
    PROFILE_STOP_BAND,   /* next[] moves less than the band of the trip */
    PROFILE_STOP_SWING,  /* the division by speed turns back toward prev[]:
                          * next[] receives the division halfway between it
                          * and cur[], which the loop keeps */
    PROFILE_STOP_MISSED, /* the last re-partition did not deliver: measured
                          * neither near its prediction nor better than before */
    PROFILE_STOP_REVERT, /* the last re-partition made the loop slower than
                          * before it: back to prev[] */
    PROFILE_STOP_LIMIT,  /* max_repartitions reached */
};

/* One decision of the profiled schedule: the loop ran the division cur[]
 * (of `trip`) at the measured speeds and took `measured` seconds an
 * execution (its slowest thread). Returns what to do; next[] receives the
 * division by speed, *gain its predicted gain and *predicted its predicted
 * time (s), whatever the verdict.
 * Every verdict but PROFILE_REPARTITION stops profiling; PROFILE_STOP_REVERT
 * goes back to past->prev, PROFILE_STOP_SWING settles on next[] (halfway),
 * the others keep cur[]. In order: the judgment
 * of the last re-partition (when past->predicted is set), the threshold,
 * the band, the swing, the limit. */
enum profile_verdict profiled_step(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                                  double measured, const struct profile_past *past,
                                  const struct profile_rule *rule, uint64_t *next, double *gain,
                                  double *predicted);

/* The name of a verdict, for logs and traces. */
const char *profiled_verdict_name(enum profile_verdict v);

/* The shortest time (ns[i]) of a thread that ran iterations
 * (iterations[i] > 0); UINT64_MAX if none did. How long a loop runs
 * where nothing slows it: a thread stopped or preempted during a 10 µs
 * loop takes milliseconds, the others still 10 µs. */
uint64_t profiled_shortest_ns(int n, const uint64_t *iterations, const uint64_t *ns);

/* Cyclic split: thread i's chunk is chunk_size scaled by its speed relative
 * to the slowest (at least 1): speeds 3:1:2 and chunk_size 4 give 12, 4, 8. */
void profiled_chunks(int n, const double *speed, uint64_t chunk_size, uint64_t *chunks);

/* Thread `tid`'s part of profiled_chunks' division, computed as it is
 * without the array of every thread's: its chunk, the chunks of the
 * threads before it (where its chunk starts in a round) and a round's
 * iterations (every thread's chunk). */
void profiled_chunk_of(int n, const double *speed, uint64_t chunk_size, int tid, uint64_t *chunk,
                      uint64_t *offset, uint64_t *round);

/* Thread `tid`'s k-th chunk of a cyclic split with per-thread chunk sizes:
 * its first iteration in *first and its size (0: none left in `trip`). */
uint64_t profiled_cyclic_chunk(uint64_t trip, int n, const uint64_t *chunks, int tid, uint64_t k,
                              uint64_t *first);
/* The same from the thread's part (profiled_chunk_of). */
uint64_t profiled_cyclic_next(uint64_t trip, uint64_t chunk, uint64_t offset, uint64_t round,
                             uint64_t k, uint64_t *first);
#endif
