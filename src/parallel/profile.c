/*
 * profile.c — the decisions of seed 003's profiled schedule (profile.h).
 */
#include "parallel/profile.h"

#include "parallel/schedule.h"

double profile_predict(int n, const uint64_t *counts, const double *speed)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (!counts[i])
            continue;
        double t = speed[i] > 0 ? (double)counts[i] / speed[i] : 0;
        if (t > worst)
            worst = t;
    }
    return worst;
}

uint64_t profile_shortest_ns(int n, const uint64_t *iterations, const uint64_t *ns)
{
    uint64_t t = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (iterations[i] && ns[i] < t)
            t = ns[i];
    return t;
}

/* Speeds with the unknown ones (0) replaced by the mean of the known. */
static void fill_speeds(int n, const double *speed, double *out)
{
    double sum = 0;
    int known = 0;
    for (int i = 0; i < n; i++)
        if (speed[i] > 0)
            sum += speed[i], known++;
    double mean = known ? sum / known : 1;
    for (int i = 0; i < n; i++)
        out[i] = speed[i] > 0 ? speed[i] : mean;
}

bool profile_decide(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                    double threshold, uint64_t *next, double *gain)
{
    double s[n];
    fill_speeds(n, speed, s);
    sched_split_by_weight(trip, n, s, next);
    double t_cur = profile_predict(n, cur, s);
    double t_new = profile_predict(n, next, s);
    *gain = t_cur > 0 ? (t_cur - t_new) / t_cur : 0;
    return *gain > threshold;
}

void profile_chunks(int n, const double *speed, uint64_t chunk_size, uint64_t *chunks)
{
    double s[n];
    fill_speeds(n, speed, s);
    double slowest = s[0];
    for (int i = 1; i < n; i++)
        if (s[i] < slowest)
            slowest = s[i];
    for (int i = 0; i < n; i++) {
        double c = (double)chunk_size * s[i] / slowest + 0.5;
        chunks[i] = c < 1 ? 1 : (uint64_t)c;
    }
}

uint64_t profile_cyclic_chunk(uint64_t trip, int n, const uint64_t *chunks, int tid, uint64_t k,
                              uint64_t *first)
{
    uint64_t round = 0, offset = 0;
    for (int i = 0; i < n; i++) {
        if (i < tid)
            offset += chunks[i];
        round += chunks[i];
    }
    uint64_t start = k * round + offset;
    if (start >= trip)
        return 0;
    *first = start;
    return trip - start < chunks[tid] ? trip - start : chunks[tid];
}
