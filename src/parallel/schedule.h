/*
 * schedule.h — how a worksharing loop's iterations are divided: pure
 * functions over the iteration space, with no state and no communication,
 * so that every node computes the same answer and unit tests can check it.
 *
 * Loops are described as the OpenMP runtime interface passes them: a first
 * and a last iteration value (inclusive) and a non-zero increment. Inside,
 * iterations are numbered 0 .. trip-1; sched_value turns a number back
 * into the loop variable's value.
 */
#ifndef DSM_PARALLEL_SCHEDULE_H
#define DSM_PARALLEL_SCHEDULE_H
#include <stdbool.h>
#include <stdint.h>

/* The kinds of schedule (OpenMP's, and seed 003's profiled). */
enum sched_kind {
    SCHED_STATIC = 1,  /* omp_sched_static's value */
    SCHED_DYNAMIC = 2,
    SCHED_GUIDED = 3,
    SCHED_AUTO = 4,
    SCHED_PROFILED = 5, /* seed 003 §3.1: re-partitioned by measured speed */
};

struct sched_spec {
    enum sched_kind kind;
    int64_t         chunk;     /* 0: the kind's default */
    int64_t         eval_size; /* profiled only: executions timed (0: default 1) */
    int64_t         eval_skip; /* profiled only: executions run before timing */
    bool            monotonic; /* the monotonic modifier was given (omp_get_schedule shows it) */
};

/* Iterations of the loop lb..ub (inclusive) by st; 0 if it runs none.
 * `is_unsigned`: lb and ub are unsigned values of their width. */
uint64_t sched_trip(int64_t lb, int64_t ub, int64_t st, bool is_unsigned);

/* The value of the loop variable at iteration i. */
static inline int64_t sched_value(int64_t lb, int64_t st, uint64_t i)
{
    return (int64_t)((uint64_t)lb + (uint64_t)st * i);
}

/* Static, no chunk: thread `tid` of `n` gets one block of consecutive
 * iterations [*first, *first + *count), the first trip % n threads one more
 * than the others (OpenMP's "balanced" block split). Returns *count. */
uint64_t sched_static_block(uint64_t trip, int tid, int n, uint64_t *first);

/* Static with a chunk: thread `tid` runs chunks tid, tid + n, ...; true if
 * the chunk holding the last iteration is one of them. */
bool sched_static_chunked_has_last(uint64_t trip, uint64_t chunk, int tid, int n);

/* Guided: the size of the next chunk when `remaining` iterations are left
 * for `n` threads, never below min_chunk (nor above remaining). */
uint64_t sched_guided_chunk(uint64_t remaining, int n, uint64_t min_chunk);

/* Block split by weight: iterations [0, trip) into n consecutive blocks
 * whose sizes are proportional to weight[0..n-1] (all > 0), rounded so the
 * sizes add up to trip; counts[i] receives block i's size. */
void sched_split_by_weight(uint64_t trip, int n, const double *weight, uint64_t *counts);
/* Block `tid` of the same split alone (counts[tid], computed as the whole
 * split computes it, so the threads that each compute their own block
 * divide the trip exactly): its size, its first iteration in *first. */
uint64_t sched_weight_block(uint64_t trip, int n, const double *weight, int tid, uint64_t *first);

/* Parses OMP_SCHEDULE's form "[modifier:]kind[,chunk]" (kind static,
 * dynamic, guided, auto, or profiled[,chunk[,eval_size[,eval_skip]]];
 * modifier monotonic or nonmonotonic: monotonic dynamic and guided
 * chunks come in order, from one counter, parallel/dispatch.c). Returns 0, or
 * -EINVAL with a one-line reason in err. */
int sched_parse(const char *text, struct sched_spec *out, char *err, unsigned errlen);
/* sched_parse, for the division of static loops (DSM_OMP_STATIC): static
 * or profiled only. */
int sched_parse_static(const char *text, struct sched_spec *out, char *err, unsigned errlen);

/* The kind's name, for messages and statistics. */
const char *sched_kind_name(enum sched_kind kind);
#endif
