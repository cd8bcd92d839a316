/*
 * profiled.c — the decisions of seed 003's profiled schedule (profiled.h);
 * the sharing profile is base/profile.c.
 */
#include "parallel/profiled.h"

#include "parallel/schedule.h"

double profiled_predict(int n, const uint64_t *counts, const double *speed)
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

uint64_t profiled_shortest_ns(int n, const uint64_t *iterations, const uint64_t *ns)
{
    uint64_t t = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (iterations[i] && ns[i] < t)
            t = ns[i];
    return t;
}

/* What an unknown speed (0) counts as: the mean of the known ones. */
static double known_mean(int n, const double *speed)
{
    double sum = 0;
    int known = 0;
    for (int i = 0; i < n; i++)
        if (speed[i] > 0)
            sum += speed[i], known++;
    return known ? sum / known : 1;
}

/* Speeds with the unknown ones replaced by the mean of the known. */
static void fill_speeds(int n, const double *speed, double *out)
{
    double mean = known_mean(n, speed);
    for (int i = 0; i < n; i++)
        out[i] = speed[i] > 0 ? speed[i] : mean;
}

bool profiled_decide(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                    double threshold, uint64_t *next, double *gain)
{
    double s[n];
    fill_speeds(n, speed, s);
    sched_split_by_weight(trip, n, s, next);
    double t_cur = profiled_predict(n, cur, s);
    double t_new = profiled_predict(n, next, s);
    *gain = t_cur > 0 ? (t_cur - t_new) / t_cur : 0;
    return *gain > threshold;
}

enum profile_verdict profiled_step(uint64_t trip, int n, const uint64_t *cur, const double *speed,
                                  double measured, const struct profile_past *past,
                                  const struct profile_rule *rule, uint64_t *next, double *gain,
                                  double *predicted)
{
    bool pays = profiled_decide(trip, n, cur, speed, rule->threshold, next, gain);
    double s[n];
    fill_speeds(n, speed, s);
    *predicted = profiled_predict(n, next, s);
    double tol = 1 + rule->tolerance;
    if (past->predicted > 0 && past->prev) {
        /* The first measurement after a re-partition judges it. Slower
         * than the division it replaced: that one was better. Neither
         * near what it promised nor better than before by the threshold:
         * the speeds it was computed from were noise. */
        if (measured > past->before * tol)
            return PROFILE_STOP_REVERT;
        if (measured > past->predicted * tol && measured > past->before * (1 - rule->threshold))
            return PROFILE_STOP_MISSED;
    }
    if (!pays)
        return PROFILE_STOP_GAIN;
    /* Iterations that change threads: half the sum of the differences. */
    uint64_t moved = 0;
    for (int i = 0; i < n; i++)
        moved += next[i] > cur[i] ? next[i] - cur[i] : cur[i] - next[i];
    if ((double)moved / 2 < rule->band * (double)trip)
        return PROFILE_STOP_BAND;
    if (past->prev) {
        /* The step prev -> cur and the proposed cur -> next point in
         * opposite directions: the division oscillates around one the
         * measurements cannot tell apart. */
        double dot = 0;
        for (int i = 0; i < n; i++)
            dot += ((double)cur[i] - (double)past->prev[i]) * ((double)next[i] - (double)cur[i]);
        if (dot < 0) {
            /* Settle halfway: the mean of the two last measurements. */
            uint64_t w[n];
            double half[n];
            for (int i = 0; i < n; i++)
                w[i] = cur[i] + next[i], half[i] = (double)w[i];
            sched_split_by_weight(trip, n, half, next);
            return PROFILE_STOP_SWING;
        }
    }
    if (past->repartitions >= rule->max_repartitions)
        return PROFILE_STOP_LIMIT;
    return PROFILE_REPARTITION;
}

const char *profiled_verdict_name(enum profile_verdict v)
{
    static const char *const names[] = {
        [PROFILE_REPARTITION] = "re-partition", [PROFILE_STOP_GAIN] = "stop: no gain",
        [PROFILE_STOP_BAND] = "stop: within the band", [PROFILE_STOP_SWING] = "stop: swings back",
        [PROFILE_STOP_MISSED] = "stop: missed its prediction", [PROFILE_STOP_REVERT] = "stop: reverted",
        [PROFILE_STOP_LIMIT] = "stop: at the limit",
    };
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : "unknown";
}

/* A cyclic split's chunk for a thread of speed s (filled), the slowest's
 * being `slowest`: chunk_size scaled, at least 1. */
static uint64_t chunk_at(double s, double slowest, uint64_t chunk_size)
{
    double c = (double)chunk_size * s / slowest + 0.5;
    return c < 1 ? 1 : (uint64_t)c;
}

/* The slowest of the filled speeds. */
static double slowest_of(int n, const double *speed, double mean)
{
    double slowest = speed[0] > 0 ? speed[0] : mean;
    for (int i = 1; i < n; i++) {
        double s = speed[i] > 0 ? speed[i] : mean;
        if (s < slowest)
            slowest = s;
    }
    return slowest;
}

void profiled_chunks(int n, const double *speed, uint64_t chunk_size, uint64_t *chunks)
{
    double mean = known_mean(n, speed), slowest = slowest_of(n, speed, mean);
    for (int i = 0; i < n; i++)
        chunks[i] = chunk_at(speed[i] > 0 ? speed[i] : mean, slowest, chunk_size);
}

void profiled_chunk_of(int n, const double *speed, uint64_t chunk_size, int tid, uint64_t *chunk,
                      uint64_t *offset, uint64_t *round)
{
    double mean = known_mean(n, speed), slowest = slowest_of(n, speed, mean);
    *chunk = *offset = *round = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = chunk_at(speed[i] > 0 ? speed[i] : mean, slowest, chunk_size);
        if (i < tid)
            *offset += c;
        if (i == tid)
            *chunk = c;
        *round += c;
    }
}

uint64_t profiled_cyclic_next(uint64_t trip, uint64_t chunk, uint64_t offset, uint64_t round,
                             uint64_t k, uint64_t *first)
{
    uint64_t start = k * round + offset;
    if (start >= trip)
        return 0;
    *first = start;
    return trip - start < chunk ? trip - start : chunk;
}

uint64_t profiled_cyclic_chunk(uint64_t trip, int n, const uint64_t *chunks, int tid, uint64_t k,
                              uint64_t *first)
{
    uint64_t round = 0, offset = 0;
    for (int i = 0; i < n; i++) {
        if (i < tid)
            offset += chunks[i];
        round += chunks[i];
    }
    return profiled_cyclic_next(trip, chunks[tid], offset, round, k, first);
}
