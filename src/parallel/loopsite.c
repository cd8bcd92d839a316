/*
 * loopsite.c — per-loop-site state and seed 003's profiled schedule
 * (parallel.h, profile.h).
 *
 * A loop site is a loop in the program's source, named by an address that
 * is the same on every node (the OpenMP runtime uses clang's location
 * string). Its state lives on each node and survives the loop's executions:
 * how often it ran, the division in use (the chunk_vector), and, while the
 * site is being profiled, what this node measured.
 *
 * Fig. 4 of seed 003, over executions of the loop: run eval_skip executions
 * as divided, time the next eval_size, then every thread of the team hands
 * its measurements to node 0 and receives everybody's (the only
 * communication of the scheme, step (a)); each predicts the remaining time
 * with and without re-partitioning (b, c) and, the same on every node,
 * either adopts the division by speed and keeps profiling (d), or stops
 * profiling and keeps the division it has (e, 2).
 *
 * When it stops (profile_step): the seed stops when the predicted gain no
 * longer passes the threshold; here also when the first measurement after
 * a re-partition shows it did not deliver (slower than before it: the
 * division goes back; neither near its prediction nor better than before:
 * kept), when the new division would move less than PROFILE_BAND of the
 * trip, or when it would turn back toward the division before the current
 * one (it then settles halfway between the two: the first execution,
 * timed with its page faults, often overshoots, and the second corrects
 * it). A site that stopped keeps its chunk_vector for the rest of the run;
 * it starts over only with a team of another size. Restarting on a later
 * change of speed would need the measurements of every node, an exchange
 * at every check, and on a shared machine the change it would notice is
 * mostly noise (docs/migration.md).
 *
 * The loops of one program differ in how well they can be timed: a
 * solver's matrix-vector product takes milliseconds, its dot products and
 * vector updates microseconds, where a preemption, a page fault or
 * --slow's stop outweighs the work; their "speeds" are noise, and each
 * decision moves their division at random (measured: 35 re-partitions of
 * one 10 µs loop of CG class A in a run, each breaking the locality of
 * the rows the product had written: seed 003 §4.4). So the longest loop
 * timed for a trip count and team *leads* (the shortest thread's time an
 * execution, profile_shortest_ns, is what counts), and a loop at least
 * FOLLOW_RATIO times shorter stops profiling and *follows*: it divides its
 * iterations as the lead is divided, whenever it runs. Every node takes
 * the same decisions from the same exchanged times, in the same order, so
 * all divide alike.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "parallel/parallel.h"
#include "parallel/profile.h"

/* A loop this many times shorter than the lead follows it (see the top). */
#define FOLLOW_RATIO 8

/* Fig. 4's stop rule (profile_step): a re-partition must move at least 2 %
 * of the trip to another thread, a measured time within 10 % of a
 * predicted or an earlier one counts as meeting it, and a site is
 * re-partitioned at most 8 times (reverting counts as one): so it stops
 * profiling by its 9th decision whatever it measures. */
#define PROFILE_BAND             0.02
#define PROFILE_TOLERANCE        0.10
#define PROFILE_MAX_REPARTITIONS 8

/* One node's measurement of a site, as sent to node 0. */
struct speed_msg {
    uint64_t site, round;
    int32_t  nthreads, zero;
    uint64_t iterations, ns;
};

/* At node 0: measurements of one round of one site, gathering. */
struct gathering {
    struct gathering *next;
    uint64_t          site, round;
    int               nthreads, arrived;
    uint64_t          iterations[VT_MAX_NODES], ns[VT_MAX_NODES];
};

static DSM_STATE struct {
    pthread_mutex_t   lock;
    struct loop_site *sites;     /* this node's, by key */
    struct gathering *gathering; /* at node 0 */
    /* This node's one outstanding exchange. */
    bool              answered;
    uint64_t          iterations[VT_MAX_NODES], ns[VT_MAX_NODES];
    double            threshold;
    /* The lead: the longest loop timed (see the top). */
    struct loop_site *lead;        /* NULL: none yet */
    uint64_t          lead_trip, lead_ns;
    int               lead_n;
} sites = {.lock = PTHREAD_MUTEX_INITIALIZER, .threshold = 0.05};

struct loop_site *parallel_site(const void *key)
{
    for (struct loop_site *s = sites.sites; s; s = s->next)
        if (s->key == key)
            return s;
    struct loop_site *s = calloc(1, sizeof *s);
    if (!s)
        log_fatal("out of memory for a loop site");
    s->key = key;
    s->profiling = true;
    s->next = sites.sites;
    sites.sites = s;
    return s;
}

void parallel_set_profile_threshold(double fraction) { sites.threshold = fraction; }

/* ---- the exchange (step a) --------------------------------------------------- */

static void answer_all(struct gathering *g)
{
    size_t n = (size_t)g->nthreads;
    size_t len = 2 * n * sizeof(uint64_t);
    unsigned char body[2 * VT_MAX_NODES * sizeof(uint64_t)];
    memcpy(body, g->iterations, n * sizeof(uint64_t));
    memcpy(body + n * sizeof(uint64_t), g->ns, n * sizeof(uint64_t));
    for (int i = 0; i < g->nthreads; i++) {
        if (i == 0) {
            memcpy(sites.iterations, g->iterations, n * sizeof(uint64_t));
            memcpy(sites.ns, g->ns, n * sizeof(uint64_t));
            sites.answered = true;
            ipc_notify();
        } else
            ipc_send(i, PAR_SPEEDS, (uint32_t)n, body, len);
    }
}

/* At node 0. Caller holds sites.lock. */
static void gather(int node, const struct speed_msg *m)
{
    struct gathering **pp = &sites.gathering, *g;
    while ((g = *pp) && !(g->site == m->site && g->round == m->round))
        pp = &g->next;
    if (!g) {
        g = calloc(1, sizeof *g);
        if (!g)
            log_fatal("out of memory gathering loop speeds");
        g->site = m->site;
        g->round = m->round;
        g->nthreads = m->nthreads;
        *pp = g;
    }
    if (g->nthreads != m->nthreads)
        log_fatal("node %d profiles a loop with a team of %d threads, others with %d", node,
                  m->nthreads, g->nthreads);
    g->iterations[node] = m->iterations;
    g->ns[node] = m->ns;
    if (++g->arrived == g->nthreads) {
        *pp = g->next;
        answer_all(g);
        free(g);
    }
}

static void on_speed(int src, const void *msg, size_t len)
{
    struct speed_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "loop speed");
    if (job()->rank != 0 || m.nthreads < 1 || m.nthreads > job()->nodes || src >= m.nthreads)
        log_fatal("node %d sent a malformed loop speed", src);
    pthread_mutex_lock(&sites.lock);
    gather(src, &m);
    pthread_mutex_unlock(&sites.lock);
}

static void on_speeds(int src, const void *msg, size_t len)
{
    uint32_t n = ipc_msg_aux(msg);
    size_t rest;
    char none;
    const void *p = ipc_body(src, msg, len, &none, 0, &rest, "loop speeds");
    if (src != 0 || n < 1 || n > (uint32_t)job()->nodes || rest != 2 * n * sizeof(uint64_t))
        log_fatal("node %d sent malformed loop speeds", src);
    pthread_mutex_lock(&sites.lock);
    if (sites.answered)
        log_fatal("node %d sent loop speeds nobody asked for", src);
    memcpy(sites.iterations, p, n * sizeof(uint64_t));
    memcpy(sites.ns, (const char *)p + n * sizeof(uint64_t), n * sizeof(uint64_t));
    sites.answered = true;
    pthread_mutex_unlock(&sites.lock);
    ipc_notify();
}

static bool answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sites.lock);
    bool a = sites.answered;
    pthread_mutex_unlock(&sites.lock);
    return a;
}

/* Everybody's measurements of the site's current round, into speed[];
 * the shortest and the longest time of a thread that ran iterations into
 * span[0] and span[1]. */
static void exchange_here(struct loop_site *s, int tid, int n, double *speed, uint64_t *span)
{
    struct speed_msg m = {.site = (uint64_t)(uintptr_t)s->key, .round = s->rounds,
                          .nthreads = n, .iterations = s->timed_iterations, .ns = s->timed_ns};
    pthread_mutex_lock(&sites.lock);
    sites.answered = false;
    if (tid == 0)
        gather(0, &m);
    pthread_mutex_unlock(&sites.lock);
    if (tid != 0)
        ipc_send(0, PAR_SPEED, 0, &m, sizeof m);
    ipc_wait(answered, NULL, 0);
    for (int i = 0; i < n; i++)
        speed[i] = sites.ns[i] ? (double)sites.iterations[i] * 1e9 / (double)sites.ns[i] : 0;
    span[0] = profile_shortest_ns(n, sites.iterations, sites.ns);
    span[1] = 0;
    for (int i = 0; i < n; i++)
        if (sites.iterations[i] && sites.ns[i] > span[1])
            span[1] = sites.ns[i];
}

/* Off the master's shared stack (base/stack.h): it waits on the network. */
struct exchange_call {
    struct loop_site *s;
    int               tid, n;
    double           *speed; /* private memory: the caller's is on the shared stack */
    uint64_t         *span;
};

static void exchange_call(void *arg)
{
    struct exchange_call c = *(struct exchange_call *)arg;
    exchange_here(c.s, c.tid, c.n, c.speed, c.span);
}

/* Returns the shortest time of a thread that ran iterations; the longest
 * (the loop's time: its barrier waits for it) into *longest. */
static uint64_t exchange(struct loop_site *s, int tid, int n, double *speed, uint64_t *longest)
{
    static DSM_STATE double out[VT_MAX_NODES]; /* one thread per node */
    static DSM_STATE uint64_t span[2];
    struct exchange_call c = {.s = s, .tid = tid, .n = n, .speed = out, .span = span};
    stack_private(exchange_call, &c);
    for (int i = 0; i < n; i++)
        speed[i] = out[i];
    *longest = span[1];
    return span[0];
}

/* ---- the schedule -------------------------------------------------------------- */

/* STAT_PAR_PROFILING counts the sites still profiled, whose division may
 * still change: migration waits for them while they run
 * (src/coherence/migrate.c). */
static void settle_count(struct loop_site *s, bool unsettled)
{
    if (unsettled == s->unsettled)
        return;
    s->unsettled = unsettled;
    stats_add(STAT_PAR_PROFILING, unsettled ? 1 : (uint64_t)-1);
}

/* The weights of the division in use for a loop of `trip` iterations by
 * n threads; NULL: the static one. */
static const double *division(const struct loop_site *s, uint64_t trip, int n)
{
    if (s->follows && sites.lead && sites.lead_n == n && sites.lead_trip == trip)
        s = sites.lead; /* which never follows */
    return s->have_weights ? s->weights : NULL;
}

/* The counts of a division by weights w (NULL: the static one). */
static void counts_of(const double *w, uint64_t trip, int n, uint64_t *counts)
{
    if (w) {
        sched_split_by_weight(trip, n, w, counts);
        return;
    }
    for (int i = 0; i < n; i++) {
        uint64_t first;
        counts[i] = sched_static_block(trip, i, n, &first);
    }
}

/* The counts of the division in use for a loop of `trip` iterations. */
static void current_counts(const struct loop_site *s, uint64_t trip, int n, uint64_t *counts)
{
    counts_of(division(s, trip, n), trip, n, counts);
}

/* Adopts the division by the measured speeds (unknown ones: the mean). */
static void adopt_speeds(struct loop_site *s, int n, const double *speed)
{
    double known = 0;
    int nk = 0;
    for (int i = 0; i < n; i++)
        if (speed[i] > 0)
            known += speed[i], nk++;
    for (int i = 0; i < n; i++)
        s->weights[i] = speed[i] > 0 ? speed[i] : nk ? known / nk : 1;
    s->have_weights = true;
}

/* One decision of Fig. 4 with its stop rule (profile.h): the site ran
 * cur[] at `speed`, the slowest thread taking `measured` s an execution.
 * The same on every node. */
static void decide(struct loop_site *s, int n, const uint64_t *cur, const double *speed,
                   double measured)
{
    struct profile_rule rule = {.threshold = sites.threshold, .band = PROFILE_BAND,
                                .tolerance = PROFILE_TOLERANCE,
                                .max_repartitions = PROFILE_MAX_REPARTITIONS};
    uint64_t prev[VT_MAX_NODES], next[VT_MAX_NODES];
    if (s->has_prev)
        counts_of(s->prev_static ? NULL : s->prev_weights, s->timed_trip, n, prev);
    struct profile_past past = {.prev = s->has_prev ? prev : NULL, .predicted = s->predicted_s,
                                .before = s->before_s, .repartitions = s->repartitions};
    double gain, predicted;
    enum profile_verdict v = profile_step(s->timed_trip, n, cur, speed, measured, &past, &rule,
                                          next, &gain, &predicted);
    s->last_gain = gain;
    s->predicted_s = s->before_s = 0; /* judged */
    switch (v) {
    case PROFILE_REPARTITION:
        s->has_prev = true;
        s->prev_static = !s->have_weights;
        memcpy(s->prev_weights, s->weights, sizeof s->weights);
        adopt_speeds(s, n, speed);
        s->predicted_s = predicted;
        s->before_s = measured;
        s->repartitions++;
        stats_add(STAT_PAR_REPARTITIONS, 1);
        return;
    case PROFILE_STOP_REVERT: /* a change of division too: counted as one */
        s->have_weights = !s->prev_static;
        memcpy(s->weights, s->prev_weights, sizeof s->weights);
        s->repartitions++;
        stats_add(STAT_PAR_REPARTITIONS, 1);
        break;
    case PROFILE_STOP_SWING: /* halfway, in proportion at any trip: counted too */
        for (int i = 0; i < n; i++)
            s->weights[i] = (double)next[i];
        s->have_weights = true;
        s->repartitions++;
        stats_add(STAT_PAR_REPARTITIONS, 1);
        break;
    default:
        break;
    }
    s->profiling = false;
    stats_add(STAT_PAR_PROFILE_STOPS, 1);
}

void parallel_profiled_begin(struct loop_site *s, const struct sched_spec *spec, uint64_t trip,
                             int tid, int n, struct loop_plan *plan)
{
    if (n != s->nthreads || tid != s->tid) { /* a new team: start over */
        s->nthreads = n;
        s->tid = tid;
        s->executions = 0;
        s->profiling = true;
        s->have_weights = false;
        s->follows = false;
        s->has_prev = false;
        s->predicted_s = s->before_s = 0;
        s->timed_iterations = s->timed_ns = 0;
    }
    uint64_t skip = (uint64_t)spec->eval_skip;
    uint64_t size = spec->eval_size > 0 ? (uint64_t)spec->eval_size : 1;
    uint64_t e = s->executions++;
    if (s->profiling && e >= skip + size && (e - skip) % size == 0) {
        double speed[VT_MAX_NODES];
        uint64_t longest;
        uint64_t t = exchange(s, tid, n, speed, &longest) / size; /* an execution's */
        s->rounds++;
        uint64_t cur[VT_MAX_NODES];
        /* The measured executions' division, at the measured trip. */
        current_counts(s, s->timed_trip, n, cur);
        bool same = sites.lead && sites.lead_n == n && sites.lead_trip == s->timed_trip;
        if (same && sites.lead != s && t < UINT64_MAX / FOLLOW_RATIO && t * FOLLOW_RATIO < sites.lead_ns) {
            s->follows = true; /* too short to time beside the lead: follow it */
            s->profiling = false;
            s->last_gain = 0;
            stats_add(STAT_PAR_PROFILE_STOPS, 1);
        } else {
            decide(s, n, cur, speed, (double)longest / (double)size / 1e9);
            if (!same || sites.lead == s || t > sites.lead_ns) { /* the longest leads */
                sites.lead = s;
                sites.lead_trip = s->timed_trip;
                sites.lead_n = n;
                sites.lead_ns = t;
            }
        }
        s->timed_iterations = s->timed_ns = 0;
    }
    s->timing = s->profiling && e >= skip;
    if (s->timing)
        stats_add(STAT_PAR_PROFILED_RUNS, 1);
    settle_count(s, s->profiling);
    plan->cyclic = spec->chunk > 0;
    if (plan->cyclic) {
        double w[VT_MAX_NODES];
        const double *d = division(s, trip, n);
        for (int i = 0; i < n; i++)
            w[i] = d ? d[i] : 1;
        profile_chunks(n, w, (uint64_t)spec->chunk, plan->chunks);
        plan->count = 0;
        for (uint64_t k = 0;; k++) {
            uint64_t first, c = profile_cyclic_chunk(trip, n, plan->chunks, tid, k, &first);
            if (!c)
                break;
            plan->count += c;
        }
    } else {
        uint64_t counts[VT_MAX_NODES];
        current_counts(s, trip, n, counts);
        plan->first = 0;
        for (int i = 0; i < tid; i++)
            plan->first += counts[i];
        plan->count = counts[tid];
    }
    s->running_iterations = plan->count;
    s->timed_trip = trip;
    s->started_ns = clock_ns();
}

void parallel_profiled_end(struct loop_site *s)
{
    if (!s->timing)
        return;
    s->timed_ns += clock_ns() - s->started_ns;
    s->timed_iterations += s->running_iterations;
    s->timing = false;
}

void parallel_sites_start(void)
{
    ipc_register(PAR_SPEED, "LOOP_SPEED", on_speed, NULL);
    ipc_register(PAR_SPEEDS, "LOOP_SPEEDS", on_speeds, NULL);
}

void parallel_sites_finish(void)
{
    while (sites.sites) {
        struct loop_site *s = sites.sites;
        sites.sites = s->next;
        settle_count(s, false);
        free(s);
    }
    while (sites.gathering) {
        struct gathering *g = sites.gathering;
        sites.gathering = g->next;
        free(g);
    }
    sites.lead = NULL;
}
