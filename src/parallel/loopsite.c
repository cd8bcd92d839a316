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
 * When it stops (profiled_step): the seed stops when the predicted gain no
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
 * execution, profiled_shortest_ns, is what counts), and a loop at least
 * FOLLOW_RATIO times shorter stops profiling and *follows*: it divides its
 * iterations as the lead is divided, whenever it runs. Every node takes
 * the same decisions from the same exchanged times, in the same order, so
 * all divide alike.
 *
 * Threads (a team of n = nodes x p threads, node-major: thread t of node
 * r is r*p + t, src/omp/team_layout.c). Every thread times its own part,
 * and the division is over all n threads: a block split by weights over
 * them cuts the loop by node first (a node's threads are neighbours) and
 * by thread inside it. At a decision the node's threads meet in memory
 * (sync_node_meet, as at a barrier); the last to arrive sends the node's
 * p measurements to node 0 in one message, receives all n back, and
 * decides for the node while the others wait; then each thread takes its
 * part of the new division. A site's state is the node's, in two parts:
 * what each thread counts and times for itself (struct site_thread,
 * written by that thread alone), and the division and its history, which
 * change only inside such a meeting (a decision, or starting over with a
 * new team), every thread of the node present: between meetings the
 * threads read them without a lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "parallel/parallel.h"
#include "parallel/profiled.h"

/* A loop this many times shorter than the lead follows it (see the top). */
#define FOLLOW_RATIO 8

/* Fig. 4's stop rule (profiled_step): a re-partition must move at least 2 %
 * of the trip to another thread, a measured time within 10 % of a
 * predicted or an earlier one counts as meeting it, and a site is
 * re-partitioned at most 8 times (reverting counts as one): so it stops
 * profiling by its 9th decision whatever it measures. */
#define PROFILE_BAND             0.02
#define PROFILE_TOLERANCE        0.10
#define PROFILE_MAX_REPARTITIONS 8

/* One thread of this node, its own part of a site: written by that thread
 * only, and read by the leader of a meeting while the thread waits in it. */
struct site_thread {
    uint64_t executions;                /* begun */
    bool     timing;                    /* this execution is measured */
    uint64_t timed_iterations, timed_ns; /* since the last decision */
    uint64_t trip;                      /* this execution's */
    uint64_t running_iterations, started_ns;
};

struct loop_site {
    struct loop_site   *next;
    const void         *key;
    int                 nthreads, per_node; /* the team it is profiled with */
    bool                profiling;          /* still measuring (Fig. 4 (1)) */
    bool                unsettled;          /* counted in STAT_PAR_PROFILING */
    bool                have_weights;       /* re-partitioned: the chunk_vector's weights */
    bool                follows;            /* too short to time: divides as the
                                             * longest loop of its trip (see the top) */
    double             *weights;            /* nthreads */
    uint64_t            rounds, repartitions;
    double              last_gain;          /* predicted by the last decision */
    /* Fig. 4's stop rule (profiled_step): the division the current one
     * replaced (none, the static one, or weights), what the current one
     * was predicted to take and what its predecessor took (s; 0: judged). */
    bool                has_prev, prev_static;
    double             *prev_weights;       /* nthreads */
    double              predicted_s, before_s;
    struct site_thread *threads;            /* per_node: this node's, by index on it */
};

/* One node's measurements of a site, as sent to node 0: this header, then
 * (iterations, ns) of each of the node's threads of the team, in order
 * (one pair with one thread per node). */
struct speed_msg {
    uint64_t site, round;
    int32_t  nthreads, per_node;
};

/* At node 0: measurements of one round of one site, gathering. */
struct gathering {
    struct gathering *next;
    uint64_t          site, round;
    int               nthreads, per_node, nodes, arrived;
    bool             *got;              /* nodes: which have sent theirs */
    uint64_t         *iterations, *ns;  /* nthreads each */
};

static DSM_STATE struct {
    pthread_mutex_t   lock;
    struct loop_site *sites;     /* this node's, by key */
    struct gathering *gathering; /* at node 0 */
    /* This node's one outstanding exchange (its leader waits): where the
     * answer for a team of answer_n threads goes. */
    bool              waiting;
    int               answer_n;
    uint64_t         *answer_iterations, *answer_ns;
    double            threshold;
    /* The lead: the longest loop timed (see the top). */
    struct loop_site *lead;        /* NULL: none yet */
    uint64_t          lead_trip, lead_ns;
    int               lead_n;
} sites = {.lock = PTHREAD_MUTEX_INITIALIZER, .threshold = 0.05};

/* The threads of a team of n, per_node a node, on node `node`. */
static int threads_on(int n, int per_node, int node)
{
    int64_t left = (int64_t)n - (int64_t)node * per_node;
    return left <= 0 ? 0 : left < per_node ? (int)left : per_node;
}

struct loop_site *parallel_site(const void *key)
{
    pthread_mutex_lock(&sites.lock);
    struct loop_site *s = sites.sites;
    while (s && s->key != key)
        s = s->next;
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            log_fatal("out of memory for a loop site");
        s->key = key;
        s->profiling = true;
        s->next = sites.sites;
        sites.sites = s;
    }
    pthread_mutex_unlock(&sites.lock);
    return s;
}

void parallel_set_profile_threshold(double fraction) { sites.threshold = fraction; }

uint64_t parallel_plan_chunk(const struct loop_plan *p, uint64_t trip, uint64_t k,
                             uint64_t *first)
{
    if (p->cyclic)
        return profiled_cyclic_next(trip, p->chunk, p->offset, p->round, k, first);
    *first = p->first;
    return k == 0 ? p->count : 0;
}

/* ---- the exchange (step a) --------------------------------------------------- */

static void gathering_free(struct gathering *g)
{
    free(g->got);
    free(g->iterations);
    free(g->ns);
    free(g);
}

/* At node 0, everybody's measurements in: to every node of the team (this
 * one through memory). Caller holds sites.lock. */
static void answer_all(const struct gathering *g)
{
    size_t len = (size_t)g->nthreads * sizeof(uint64_t);
    memcpy(sites.answer_iterations, g->iterations, len);
    memcpy(sites.answer_ns, g->ns, len);
    sites.waiting = false;
    ipc_notify();
    struct iovec iov[2] = {{g->iterations, len}, {g->ns, len}};
    for (int i = 1; i < g->nodes; i++)
        ipc_sendv(i, PAR_SPEEDS, (uint32_t)g->nthreads, iov, 2);
}

/* At node 0: node `node`'s measurements, m's header then its threads'
 * (iterations, ns) pairs (possibly unaligned), checked by the caller.
 * Caller holds sites.lock. */
static void gather(int node, const struct speed_msg *m, const unsigned char *pairs)
{
    struct gathering **pp = &sites.gathering, *g;
    while ((g = *pp) && !(g->site == m->site && g->round == m->round))
        pp = &g->next;
    if (!g) {
        int nodes = (m->nthreads + m->per_node - 1) / m->per_node;
        g = calloc(1, sizeof *g);
        if (!g || !(g->got = calloc((size_t)nodes, sizeof *g->got)) ||
            !(g->iterations = calloc((size_t)m->nthreads, sizeof *g->iterations)) ||
            !(g->ns = calloc((size_t)m->nthreads, sizeof *g->ns)))
            log_fatal("out of memory gathering loop speeds");
        g->site = m->site;
        g->round = m->round;
        g->nthreads = m->nthreads;
        g->per_node = m->per_node;
        g->nodes = nodes;
        *pp = g;
    }
    if (g->nthreads != m->nthreads || g->per_node != m->per_node)
        log_fatal("node %d profiles a loop with a team of %d threads (%d a node), others with %d "
                  "(%d a node)", node, m->nthreads, m->per_node, g->nthreads, g->per_node);
    if (g->got[node])
        log_fatal("node %d sent its loop speeds twice", node);
    g->got[node] = true;
    int first = node * g->per_node, count = threads_on(g->nthreads, g->per_node, node);
    for (int i = 0; i < count; i++) {
        memcpy(&g->iterations[first + i], pairs + 16 * (size_t)i, sizeof(uint64_t));
        memcpy(&g->ns[first + i], pairs + 16 * (size_t)i + 8, sizeof(uint64_t));
    }
    if (++g->arrived == g->nodes) {
        *pp = g->next;
        answer_all(g);
        gathering_free(g);
    }
}

static void on_speed(int src, const void *msg, size_t len)
{
    struct speed_msg m;
    size_t rest;
    const unsigned char *pairs = ipc_body(src, msg, len, &m, sizeof m, &rest, "loop speed");
    int nodes = m.per_node >= 1 ? (int)(((int64_t)m.nthreads + m.per_node - 1) / m.per_node) : 0;
    if (job()->rank != 0 || m.nthreads < 1 || m.nthreads > PARALLEL_PROFILED_TEAM_MAX ||
        m.per_node < 1 || m.per_node > m.nthreads || nodes > job()->nodes || src >= nodes ||
        rest != 16 * (size_t)threads_on(m.nthreads, m.per_node, src))
        log_fatal("node %d sent a malformed loop speed", src);
    pthread_mutex_lock(&sites.lock);
    gather(src, &m, pairs);
    pthread_mutex_unlock(&sites.lock);
}

static void on_speeds(int src, const void *msg, size_t len)
{
    uint32_t n = ipc_msg_aux(msg);
    size_t rest;
    char none;
    const void *p = ipc_body(src, msg, len, &none, 0, &rest, "loop speeds");
    if (src != 0 || n < 1 || n > PARALLEL_PROFILED_TEAM_MAX || rest != 2 * n * sizeof(uint64_t))
        log_fatal("node %d sent malformed loop speeds", src);
    pthread_mutex_lock(&sites.lock);
    if (!sites.waiting || (int)n != sites.answer_n)
        log_fatal("node %d sent loop speeds of a team of %u threads nobody asked for", src, n);
    memcpy(sites.answer_iterations, p, n * sizeof(uint64_t));
    memcpy(sites.answer_ns, (const char *)p + n * sizeof(uint64_t), n * sizeof(uint64_t));
    sites.waiting = false;
    pthread_mutex_unlock(&sites.lock);
    ipc_notify();
}

static bool answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sites.lock);
    bool a = !sites.waiting;
    pthread_mutex_unlock(&sites.lock);
    return a;
}

/* Every thread's measurements of the site's current round, from the
 * node's threads' own (s->threads), into iterations[] and ns[] (n each).
 * By the leader of the node's meeting, off the shared stack. */
static void exchange(const struct loop_site *s, uint64_t *iterations, uint64_t *ns)
{
    int node = job()->rank, on = threads_on(s->nthreads, s->per_node, node);
    struct speed_msg m = {.site = (uint64_t)(uintptr_t)s->key, .round = s->rounds,
                          .nthreads = s->nthreads, .per_node = s->per_node};
    uint64_t *pairs = malloc(2 * (size_t)on * sizeof *pairs);
    if (!pairs)
        log_fatal("out of memory for loop speeds");
    for (int i = 0; i < on; i++) {
        pairs[2 * i] = s->threads[i].timed_iterations;
        pairs[2 * i + 1] = s->threads[i].timed_ns;
    }
    pthread_mutex_lock(&sites.lock);
    if (sites.waiting)
        log_fatal("a loop's speeds exchanged while another's are (node %d)", node);
    sites.waiting = true;
    sites.answer_n = s->nthreads;
    sites.answer_iterations = iterations;
    sites.answer_ns = ns;
    if (node == 0)
        gather(0, &m, (const unsigned char *)pairs);
    pthread_mutex_unlock(&sites.lock);
    if (node != 0) {
        struct iovec iov[2] = {{&m, sizeof m}, {pairs, 2 * (size_t)on * sizeof *pairs}};
        ipc_sendv(0, PAR_SPEED, 0, iov, 2);
    }
    ipc_wait(answered, NULL, 0);
    free(pairs);
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
    if (s->follows && sites.lead && sites.lead_n == n && sites.lead_trip == trip &&
        sites.lead->nthreads == n)
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
 * cur[] of `trip` at `speed`, the slowest thread taking `measured` s an
 * execution. The same on every node. prev, next: scratch of n. */
static void decide(struct loop_site *s, int n, uint64_t trip, const uint64_t *cur,
                   const double *speed, double measured, uint64_t *prev, uint64_t *next)
{
    struct profile_rule rule = {.threshold = sites.threshold, .band = PROFILE_BAND,
                                .tolerance = PROFILE_TOLERANCE,
                                .max_repartitions = PROFILE_MAX_REPARTITIONS};
    if (s->has_prev)
        counts_of(s->prev_static ? NULL : s->prev_weights, trip, n, prev);
    struct profile_past past = {.prev = s->has_prev ? prev : NULL, .predicted = s->predicted_s,
                                .before = s->before_s, .repartitions = s->repartitions};
    double gain, predicted;
    enum profile_verdict v = profiled_step(trip, n, cur, speed, measured, &past, &rule, next,
                                          &gain, &predicted);
    size_t wlen = (size_t)n * sizeof *s->weights;
    s->last_gain = gain;
    s->predicted_s = s->before_s = 0; /* judged */
    switch (v) {
    case PROFILE_REPARTITION:
        s->has_prev = true;
        s->prev_static = !s->have_weights;
        memcpy(s->prev_weights, s->weights, wlen);
        adopt_speeds(s, n, speed);
        s->predicted_s = predicted;
        s->before_s = measured;
        s->repartitions++;
        stats_add(STAT_PAR_REPARTITIONS, 1);
        return;
    case PROFILE_STOP_REVERT: /* a change of division too: counted as one */
        s->have_weights = !s->prev_static;
        memcpy(s->weights, s->prev_weights, wlen);
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

/* What a meeting of the node's threads at a site is about: the leader's
 * copy (each thread passes its own, alike). */
struct meeting {
    struct loop_site *s;
    int               n, per_node, tid;
    uint64_t          size; /* executions timed a decision */
};

/* A new team (another size or layout): the site starts over. By the
 * leader of the node's meeting. */
static void start_over(void *arg)
{
    const struct meeting *m = arg;
    struct loop_site *s = m->s;
    if (m->tid / m->per_node != job()->rank)
        log_fatal("thread %d of a profiled loop's team of %d (%d a node) runs on node %d, not "
                  "node %d", m->tid, m->n, m->per_node, job()->rank, m->tid / m->per_node);
    if (sites.lead == s) /* its division is gone: nobody follows it */
        sites.lead = NULL;
    free(s->weights);
    free(s->prev_weights);
    free(s->threads);
    s->weights = calloc((size_t)m->n, sizeof *s->weights);
    s->prev_weights = calloc((size_t)m->n, sizeof *s->prev_weights);
    s->threads = calloc((size_t)m->per_node, sizeof *s->threads);
    if (!s->weights || !s->prev_weights || !s->threads)
        log_fatal("out of memory for a loop site of %d threads", m->n);
    s->nthreads = m->n;
    s->per_node = m->per_node;
    s->profiling = true;
    s->have_weights = false;
    s->follows = false;
    s->has_prev = false;
    s->predicted_s = s->before_s = 0;
    settle_count(s, true);
}

/* A decision point (Fig. 4 (a)-(e)): by the leader of the node's meeting,
 * every thread of the node's having timed its part. */
static void decide_here(void *arg)
{
    const struct meeting *m = arg;
    struct loop_site *s = m->s;
    int n = s->nthreads;
    uint64_t *scratch = malloc(5 * (size_t)n * sizeof *scratch);
    double *speed = malloc((size_t)n * sizeof *speed);
    if (!scratch || !speed)
        log_fatal("out of memory for a profiled loop's decision (%d threads)", n);
    uint64_t *iterations = scratch, *ns = scratch + n, *cur = scratch + 2 * n;
    uint64_t *prev = scratch + 3 * n, *next = scratch + 4 * n;
    exchange(s, iterations, ns);
    for (int i = 0; i < n; i++)
        speed[i] = ns[i] ? (double)iterations[i] * 1e9 / (double)ns[i] : 0;
    uint64_t longest = 0; /* the loop's time: its barrier waits for it */
    for (int i = 0; i < n; i++)
        if (iterations[i] && ns[i] > longest)
            longest = ns[i];
    uint64_t t = profiled_shortest_ns(n, iterations, ns) / m->size; /* an execution's */
    uint64_t trip = s->threads[0].trip; /* the measured executions' */
    s->rounds++;
    /* The measured executions' division, at the measured trip. */
    counts_of(division(s, trip, n), trip, n, cur);
    bool same = sites.lead && sites.lead_n == n && sites.lead_trip == trip;
    if (same && sites.lead != s && t < UINT64_MAX / FOLLOW_RATIO && t * FOLLOW_RATIO < sites.lead_ns) {
        s->follows = true; /* too short to time beside the lead: follow it */
        s->profiling = false;
        s->last_gain = 0;
        stats_add(STAT_PAR_PROFILE_STOPS, 1);
    } else {
        decide(s, n, trip, cur, speed, (double)longest / (double)m->size / 1e9, prev, next);
        if (!same || sites.lead == s || t > sites.lead_ns) { /* the longest leads */
            sites.lead = s;
            sites.lead_trip = trip;
            sites.lead_n = n;
            sites.lead_ns = t;
        }
    }
    for (int i = 0; i < threads_on(n, s->per_node, job()->rank); i++)
        s->threads[i].timed_iterations = s->threads[i].timed_ns = 0;
    settle_count(s, s->profiling);
    free(scratch);
    free(speed);
}

/* The node's threads of the team meet, and the last runs fn: off the
 * master's shared stack (base/stack.h), since the decision waits on the
 * network. With one thread here there is nobody to meet. */
struct meet_call {
    void          (*fn)(void *);
    struct meeting  m;
    int             on_node;
};

static void meet_call(void *arg)
{
    struct meet_call c = *(struct meet_call *)arg;
    if (c.on_node == 1)
        c.fn(&c.m);
    else
        sync_node_meet("a profiled loop's decision", c.fn, &c.m);
}

static void meet(void (*fn)(void *), struct loop_site *s, int tid, int n, int per_node,
                 uint64_t size)
{
    struct meet_call c = {.fn = fn, .m = {.s = s, .n = n, .per_node = per_node, .tid = tid,
                                          .size = size},
                          .on_node = threads_on(n, per_node, tid / per_node)};
    stack_private(meet_call, &c);
}

/* This thread's part of the division in use for `trip` iterations. */
static void plan_of(const struct loop_site *s, const struct sched_spec *spec, uint64_t trip,
                    int tid, int n, struct loop_plan *plan)
{
    const double *d = division(s, trip, n);
    plan->cyclic = spec->chunk > 0;
    if (plan->cyclic) {
        uint64_t c = (uint64_t)spec->chunk;
        if (d)
            profiled_chunk_of(n, d, c, tid, &plan->chunk, &plan->offset, &plan->round);
        else /* the static one: every chunk alike */
            plan->chunk = c, plan->offset = (uint64_t)tid * c, plan->round = (uint64_t)n * c;
        plan->count = 0;
        plan->first = trip;
        for (uint64_t k = 0;; k++) {
            uint64_t first, count = profiled_cyclic_next(trip, plan->chunk, plan->offset,
                                                        plan->round, k, &first);
            if (!count)
                break;
            if (k == 0)
                plan->first = first;
            plan->count += count;
        }
    } else if (d)
        plan->count = sched_weight_block(trip, n, d, tid, &plan->first);
    else
        plan->count = sched_static_block(trip, tid, n, &plan->first);
}

void parallel_profiled_begin(struct loop_site *s, const struct sched_spec *spec, uint64_t trip,
                             int tid, int n, int per_node, struct loop_plan *plan)
{
    if (n > PARALLEL_PROFILED_TEAM_MAX)
        log_fatal("the profiled schedule with a team of %d threads: it divides at most %d; use "
                  "fewer threads (num_threads, OMP_NUM_THREADS) or another schedule", n,
                  PARALLEL_PROFILED_TEAM_MAX);
    uint64_t skip = (uint64_t)spec->eval_skip;
    uint64_t size = spec->eval_size > 0 ? (uint64_t)spec->eval_size : 1;
    if (n != s->nthreads || per_node != s->per_node) /* a new team: start over */
        meet(start_over, s, tid, n, per_node, size);
    struct site_thread *me = &s->threads[tid % per_node];
    uint64_t e = me->executions++;
    if (s->profiling && e >= skip + size && (e - skip) % size == 0)
        meet(decide_here, s, tid, n, per_node, size);
    me->timing = s->profiling && e >= skip;
    if (me->timing && tid % per_node == 0) /* once a node */
        stats_add(STAT_PAR_PROFILED_RUNS, 1);
    plan_of(s, spec, trip, tid, n, plan);
    me->running_iterations = plan->count;
    me->trip = trip;
    me->started_ns = clock_ns();
}

void parallel_profiled_end(struct loop_site *s, int tid)
{
    struct site_thread *me = &s->threads[tid % s->per_node];
    if (!me->timing)
        return;
    me->timed_ns += clock_ns() - me->started_ns;
    me->timed_iterations += me->running_iterations;
    me->timing = false;
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
        free(s->weights);
        free(s->prev_weights);
        free(s->threads);
        free(s);
    }
    while (sites.gathering) {
        struct gathering *g = sites.gathering;
        sites.gathering = g->next;
        gathering_free(g);
    }
    sites.lead = NULL;
    sites.waiting = false;
}
