/*
 * profile.h — seed 003's profiled schedule (§3.1, Fig. 4) as pure
 * functions: from each thread's measured speed on a loop, predict the
 * loop's time under the division in use and under a division by speed,
 * and re-partition only when the gain passes a threshold.
 *
 * A division is a chunk_vector: thread i's share counts[i] of the trip
 * (block split, chunk_size 0), or thread i's chunk size chunks[i] taken in
 * turn (cyclic split, chunk_size > 0: Fig. 2's 3:1:2 example).
 */
#ifndef DSM_PARALLEL_PROFILE_H
#define DSM_PARALLEL_PROFILE_H
#include <stdbool.h>
#include <stdint.h>

/* The time (seconds) a loop takes when thread i runs counts[i] iterations
 * at speed[i] iterations per second: the slowest thread's. */
double profile_predict(int n, const uint64_t *counts, const double *speed);

/* Fig. 4 (b)-(d): given the division in use (cur[i] iterations of `trip`)
 * and the speeds measured under it, computes the division by speed into
 * next[] and returns whether it pays: its predicted time is shorter than
 * the current one's by more than `threshold` (a fraction, e.g. 0.05).
 * *gain receives the predicted fraction saved. Speeds of 0 (a thread that
 * ran nothing) count as the mean of the others'. */
bool profile_decide(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                    double threshold, uint64_t *next, double *gain);

/* The shortest time (ns[i]) of a thread that ran iterations
 * (iterations[i] > 0); UINT64_MAX if none did. How long a loop runs
 * where nothing slows it: a thread stopped or preempted during a 10 µs
 * loop takes milliseconds, the others still 10 µs. */
uint64_t profile_shortest_ns(int n, const uint64_t *iterations, const uint64_t *ns);

/* Cyclic split: thread i's chunk is chunk_size scaled by its speed relative
 * to the slowest (at least 1): speeds 3:1:2 and chunk_size 4 give 12, 4, 8. */
void profile_chunks(int n, const double *speed, uint64_t chunk_size, uint64_t *chunks);

/* Thread `tid`'s k-th chunk of a cyclic split with per-thread chunk sizes:
 * its first iteration in *first and its size (0: none left in `trip`). */
uint64_t profile_cyclic_chunk(uint64_t trip, int n, const uint64_t *chunks, int tid, uint64_t k,
                              uint64_t *first);
#endif
