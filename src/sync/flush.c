/*
 * flush.c — a flush: OpenMP's `flush`, and dsm_flush.
 *
 * OpenMP's memory model: a flush makes the thread's writes before it
 * visible to a thread whose own flush comes after it, and flushes are
 * seen by all threads in one order. Release consistency gives the first
 * half at a release; the second half needs an acquire from *every* node
 * that may have flushed, since a flush names no lock whose last holder
 * would carry the writes. So a flush here is:
 *
 *   1. a release (coherence_release): this node's writes go home (hlrc,
 *      erc) or become an interval others may ask for (lrc), with its write
 *      notices recorded;
 *   2. under a protocol with write notices (hlrc, lrc), an acquire from
 *      all the others: the node sends its vector timestamp to each
 *      (SYNC_FLUSH_ASK) and each answers with every interval it knows
 *      that the asker has not seen (SYNC_FLUSH_ANSWER), its own and those
 *      passed to it; the asker applies them as a lock grant's, so a page
 *      another node wrote and made visible is invalidated here and its
 *      next read fetches the new version. A node whose unlocks left their
 *      release pending (lock.c, issue 27) runs those releases first, on
 *      its releaser thread, so an unlock counts as the flush OpenMP says
 *      it implies.
 *
 * OpenMP also implies a flush at the entry of a critical section and at
 * a lock's set (and test's success), ordered, taskwait... (5.x
 * "implicit flushes"). A lock's acquire brings only the writes its
 * earlier holders saw; a flag another node published with a flush and
 * polled in a critical section would never change. A full flush at each
 * such entry would cost every program a round trip to every node. So a
 * flush's ask doubles as an announcement: each node keeps the largest
 * vector time it was asked with (the asker's knowledge once its release
 * is done), and the entry (sync_flush_implied) pulls, with a full flush,
 * only when an announcement names an interval it has not seen. A program
 * that never flushes pays one atomic load per entry. The asker waits for
 * every answer, and each node records the announcement before it
 * answers, so an entry after the flush ended (in real time) pulls; one
 * before it is ordered before the flush, as OpenMP allows.
 *
 * Pushes (issue 63: NPB LU's pipeline paid a round trip per flush per
 * stage, and one more per fault that caught up). Under hlrc, once a node
 * has seen a flush (made or asked of it), every release it makes ends by
 * pushing to each other node the intervals it has not yet sent that node
 * (SYNC_FLUSH_PUSH: every interval it knows, its own and those passed to
 * it, after what went before, in order; with its applied vector time, an
 * announcement as an ask's). The receiver queues them and acknowledges.
 * A node whose first flush has been answered by every node has every
 * other node pushing to it (each turned pushing on before it answered):
 * its flushes then ask nobody. Such a flush is the release, a wait for
 * the acknowledgements of the pushes sent so far (so that a flush
 * anywhere that starts after this one ended finds its intervals queued),
 * then the queued pushes applied. A flush that finds nothing to do sends
 * nothing. Unlocks keep no release pending while releases push
 * (coherence_release_keep: a flush that asks nobody would never run it),
 * and wait for their pushes' acknowledgements as a flush does
 * (sync_release_pushed).
 * A catch-up whose needs the faults could name (coherence_ahead_of: a
 * home page another node's diff changed names its writers and their
 * intervals; a reply whose only unseen writes are its home's, of
 * intervals made, names the last) waits for those writers' pushes, which
 * follow their releases, rather than ask (PUSH_WAIT_NS bounds the wait;
 * then it asks as before). With threads on the node, flushes and
 * catch-ups ask as before (a push served to one thread must not show a
 * page hidden from another: coherence.h, "catching up"). lrc never
 * hides pages and does not push.
 *
 * Under erc a release already invalidates (or updates) every copy before
 * it completes, and under sc every write is visible when its store runs:
 * there the flush is the release alone. A flush costs nothing to a
 * program that never flushes: no state, no message outside one. What one
 * costs: a round trip to every other node at once (answers carry only
 * intervals, a few bytes when nothing changed), then the invalidations of
 * what changed; under hlrc once pushes run, a release's pushes (one
 * message a node, and its acknowledgement) and no ask.
 * docs/openmp.md, "flush", gives the figures.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "sync/sync.h"

static DSM_STATE struct {
    pthread_mutex_t lock;
    uint32_t        seq;                       /* the asker's flushes so far */
    int             due;                       /* answers still to come */
    unsigned char  *answer[VT_MAX_NODES];      /* each node's, until applied */
    size_t          answer_len[VT_MAX_NODES];
    uint32_t        announced[VT_MAX_NODES];   /* the largest vector time asked with */
    atomic_bool     any_announced;             /* a flush was asked here, ever */
    struct pushed  *pushed, **pushed_tail;     /* pushes received, not yet applied */
    uint64_t        pushes_in;                 /* pushes received so far */
    atomic_bool     subscribed;                /* every other node pushes here: flushes ask nobody */
} fl = {.lock = PTHREAD_MUTEX_INITIALIZER, .pushed_tail = &fl.pushed};

/* Intervals another node pushed after a release (SYNC_FLUSH_PUSH). */
struct pushed {
    struct pushed *next;
    int            from;
    size_t         len;
    unsigned char *data;
};

/* What this node has pushed to each other node: every interval up to
 * sent[node] of each (interval_encode_since). Pushes go out under the
 * lock, so that each node receives them in the order they were encoded. */
static DSM_STATE struct {
    pthread_mutex_t lock;
    uint32_t        sent[VT_MAX_NODES][VT_MAX_NODES];
    uint32_t        seq[VT_MAX_NODES];         /* pushes sent to each node */
    uint32_t        acked[VT_MAX_NODES];       /* the last of them it acknowledged */
    uint64_t        sent_at[VT_MAX_NODES];     /* clock_ns() of the last push to each */
    _Atomic uint64_t round_trip_ns;            /* a push's, smoothed (0: none measured yet) */
} push = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* An ask to answer once our kept releases have run. */
struct pending_answer {
    int      to;
    uint32_t seq;
    uint32_t vt[];
};

static void answer_now(void *arg)
{
    struct pending_answer *p = arg;
    struct buf b = {0};
    interval_encode(&b, p->vt, -1, p->to);
    ipc_send(p->to, SYNC_FLUSH_ANSWER, p->seq, b.p, b.len);
    buf_free(&b);
    free(p);
}

/* An answer names every interval whose writes a home may show: a release
 * running here has applied its diffs before its interval exists, so the
 * answer waits for it (coherence_after_releases). */
static void answer(void *arg) { coherence_after_releases(answer_now, arg); }

static void flushes_seen(void);
static void flush_node(void *arg);
static bool pushed_since(void *seen);

static void on_ask(int src, const void *msg, size_t len)
{
    size_t rest;
    char none;
    const void *vt = ipc_body(src, msg, len, &none, 0, &rest, "flush");
    if (rest != (size_t)job()->nodes * sizeof(uint32_t) || src == job()->rank)
        log_fatal("node %d sent a malformed flush", src);
    uint64_t t0 = clock_ns();
    struct pending_answer *p = malloc(sizeof *p + rest);
    if (!p)
        log_fatal("out of memory for a flush");
    p->to = src;
    p->seq = ipc_msg_aux(msg);
    memcpy(p->vt, vt, rest);
    pthread_mutex_lock(&fl.lock);
    for (int j = 0; j < job()->nodes; j++)
        if (p->vt[j] > fl.announced[j])
            fl.announced[j] = p->vt[j];
    pthread_mutex_unlock(&fl.lock);
    interval_heard(src, p->vt); /* what it has seen: a home's copies tell it what it lacks */
    atomic_store(&fl.any_announced, true);
    flushes_seen();
    sync_after_kept_releases(answer, p);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_answer(int src, const void *msg, size_t len)
{
    pthread_mutex_lock(&fl.lock);
    if (ipc_msg_aux(msg) != fl.seq || fl.due <= 0 || fl.answer[src])
        log_fatal("node %d answered a flush that was not asked; protocol error", src);
    fl.answer[src] = ipc_copy_payload(msg, len, 0, &fl.answer_len[src]);
    fl.due--;
    pthread_mutex_unlock(&fl.lock);
    ipc_notify();
}

static bool answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&fl.lock);
    bool done = fl.due == 0;
    pthread_mutex_unlock(&fl.lock);
    return done;
}

/* After each release, once flushes are seen here: the intervals each
 * other node has not been sent, pushed to it (no answer). A home that a
 * diff of ours changed hides the page until it catches up, and its
 * catch-up needs the interval that diff belongs to (and all we had seen
 * then: the push carries every interval we know beyond what went
 * before); with the push on its way it need not ask (catch_up). */
static void push_intervals(void)
{
    int nodes = job()->nodes, me = job()->rank;
    size_t vt_len = (size_t)nodes * sizeof(uint32_t);
    uint32_t applied[VT_MAX_NODES];
    interval_vt_applied(applied);
    pthread_mutex_lock(&push.lock);
    for (int j = 0; j < nodes; j++) {
        if (j == me)
            continue;
        /* The body: what this node has applied (the receiver's record of
         * what we have seen, and an announcement, as an ask's), then the
         * intervals. */
        struct buf iv = {0};
        if (interval_encode_since(&iv, push.sent[j], j)) {
            struct buf b = {0};
            buf_put(&b, applied, vt_len);
            buf_put(&b, iv.p, iv.len);
            ipc_send(j, SYNC_FLUSH_PUSH, ++push.seq[j], b.p, b.len);
            push.sent_at[j] = clock_ns();
            buf_free(&b);
        }
        buf_free(&iv);
    }
    pthread_mutex_unlock(&push.lock);
}

static bool pushes_acked(void *want)
{
    const uint32_t *w = want;
    bool all = true;
    pthread_mutex_lock(&push.lock);
    for (int j = 0; j < job()->nodes && all; j++)
        all = push.acked[j] >= w[j];
    pthread_mutex_unlock(&push.lock);
    return all;
}

/* A flush completes when every node has the intervals pushed to it so
 * far: a flush that starts anywhere after it ended sees its writes
 * (an unacknowledged push could still be on its way to a node that asks
 * nobody). */
static bool wait_pushes_acked(void)
{
    uint32_t want[VT_MAX_NODES];
    pthread_mutex_lock(&push.lock);
    memcpy(want, push.seq, sizeof want);
    pthread_mutex_unlock(&push.lock);
    if (pushes_acked(want))
        return false;
    ipc_wait(pushes_acked, want, 0);
    return true;
}

static void on_push(int src, const void *msg, size_t len)
{
    int nodes = job()->nodes;
    size_t vt_len = (size_t)nodes * sizeof(uint32_t);
    struct pushed *p = malloc(sizeof *p);
    if (!p)
        log_fatal("out of memory for pushed intervals");
    p->from = src;
    p->next = NULL;
    p->data = ipc_copy_payload(msg, len, 0, &p->len);
    if (src == job()->rank || p->len < vt_len + sizeof(uint32_t))
        log_fatal("node %d pushed malformed intervals (%zu bytes)", src, p->len);
    uint32_t vt[VT_MAX_NODES];
    memcpy(vt, p->data, vt_len);
    uint32_t seq = ipc_msg_aux(msg);
    pthread_mutex_lock(&fl.lock);
    for (int j = 0; j < nodes; j++)
        if (vt[j] > fl.announced[j])
            fl.announced[j] = vt[j];
    *fl.pushed_tail = p;
    fl.pushed_tail = &p->next;
    fl.pushes_in++;
    pthread_mutex_unlock(&fl.lock);
    interval_heard(src, vt);
    atomic_store(&fl.any_announced, true);
    flushes_seen();
    ipc_send(src, SYNC_FLUSH_PUSH_ACK, seq, NULL, 0);
    ipc_notify();
}

static void on_push_ack(int src, const void *msg, size_t len)
{
    (void)len;
    uint32_t seq = ipc_msg_aux(msg);
    pthread_mutex_lock(&push.lock);
    if (seq > push.seq[src] || seq <= push.acked[src])
        log_fatal("node %d acknowledged push %u, which was not sent; protocol error", src, seq);
    push.acked[src] = seq;
    if (seq == push.seq[src]) { /* the last one sent: its round trip */
        uint64_t rtt = clock_ns() - push.sent_at[src], avg = atomic_load(&push.round_trip_ns);
        atomic_store(&push.round_trip_ns, avg ? (7 * avg + rtt) / 8 : rtt);
    }
    pthread_mutex_unlock(&push.lock);
    ipc_notify();
}

/* The pushes received so far, applied in the order they came (each
 * follows on what its sender pushed before). Caller holds one_pull. */
static void apply_pushed(void)
{
    pthread_mutex_lock(&fl.lock);
    struct pushed *p = fl.pushed;
    fl.pushed = NULL;
    fl.pushed_tail = &fl.pushed;
    pthread_mutex_unlock(&fl.lock);
    size_t vt_len = (size_t)job()->nodes * sizeof(uint32_t);
    while (p) {
        struct pushed *next = p->next;
        interval_apply(p->from, p->data + vt_len, p->len - vt_len);
        free(p->data);
        free(p);
        p = next;
    }
}

/* The acquire half: every interval another node knows and this one
 * lacks, applied. */
static DSM_STATE pthread_mutex_t one_pull = PTHREAD_MUTEX_INITIALIZER; /* threads of a node */

static void pull(void)
{
    pthread_mutex_lock(&one_pull);
    uint64_t number = coherence_pull_begins(); /* before the asks (coherence.h) */
    apply_pushed(); /* what came before the asks, in its order */
    int nodes = job()->nodes, me = job()->rank;
    uint32_t vt[VT_MAX_NODES];
    interval_vt_applied(vt);
    pthread_mutex_lock(&fl.lock);
    uint32_t seq = ++fl.seq;
    fl.due = nodes - 1;
    pthread_mutex_unlock(&fl.lock);
    ipc_batch_begin();
    for (int j = 0; j < nodes; j++)
        if (j != me)
            ipc_send(j, SYNC_FLUSH_ASK, seq, vt, (size_t)nodes * sizeof *vt);
    ipc_batch_end();
    ipc_wait(answered, NULL, 0);
    /* Each answer holds every interval after our timestamp at the ask
     * that its sender knew, so applying them one after another never
     * skips an interval (interval_apply drops what it has seen). */
    for (int j = 0; j < nodes; j++) {
        pthread_mutex_lock(&fl.lock);
        unsigned char *a = fl.answer[j];
        size_t alen = fl.answer_len[j];
        fl.answer[j] = NULL;
        pthread_mutex_unlock(&fl.lock);
        if (a) {
            interval_apply(j, a, alen);
            free(a);
        }
    }
    coherence_pull_ends(number);
    pthread_mutex_unlock(&one_pull);
    /* Every node that answered pushes to us from now on (flushes_seen,
     * before it answered). */
    if (coh->reveal && !smp_multi())
        atomic_store(&fl.subscribed, true);
}

/* How long a flush that finds nothing, after one that found nothing,
 * waits for a push where the CPUs are shared: a program polling a flag
 * with flush would otherwise spin through the turn of the node it waits
 * for (flush_here's yield is not enough at a load of 10 on 2 CPUs). At
 * most what its ask cost before pushes (a round trip: a push's, as
 * measured), so that a program that flushes often with nothing to see
 * (a volatile read in a loop) pays no more than it did; and never more
 * than this. */
#define IDLE_FLUSH_WAIT_NS 200000ull

/* A flush's acquire half where every other node pushes here: what they
 * pushed, applied; nobody asked. */
static void apply_pushed_only(bool released)
{
    static DSM_STATE uint64_t seen_at_last; /* pushes_in at the last such flush */
    pthread_mutex_lock(&fl.lock);
    uint64_t in = fl.pushes_in;
    pthread_mutex_unlock(&fl.lock);
    uint64_t wait = atomic_load(&push.round_trip_ns);
    if (wait > IDLE_FLUSH_WAIT_NS)
        wait = IDLE_FLUSH_WAIT_NS;
    if (!released && in == seen_at_last && wait && ipc_cpus_shared())
        ipc_wait(pushed_since, &in, clock_ns() + wait);
    pthread_mutex_lock(&one_pull);
    uint64_t number = coherence_pull_begins();
    pthread_mutex_lock(&fl.lock);
    seen_at_last = fl.pushes_in;
    pthread_mutex_unlock(&fl.lock);
    apply_pushed();
    coherence_pull_ends(number);
    pthread_mutex_unlock(&one_pull);
    stats_add(STAT_FLUSHES_LOCAL, 1);
}

/* A fault made a copy readable that holds writes whose notices this node
 * lacks (coherence.h, "catching up"): the flag of a writer, say, whose
 * data pages here are still the old ones. Pulling the intervals makes
 * them current before the program reads on. Runs on the faulting thread,
 * off the shared stack (the fault handler's own), the fault lock free. */
/* Whether the intervals applied here reach `need` (each node's). */
static bool covered(void *need)
{
    const uint32_t *n = need;
    uint32_t vt[VT_MAX_NODES];
    interval_vt_applied(vt);
    for (int x = 0; x < job()->nodes; x++)
        if (n[x] > vt[x])
            return false;
    return true;
}

/* A push arrived since *seen. */
static bool pushed_since(void *seen)
{
    pthread_mutex_lock(&fl.lock);
    bool more = fl.pushes_in != *(uint64_t *)seen;
    pthread_mutex_unlock(&fl.lock);
    return more;
}

/* How long a catch-up waits for the pushes it needs before it asks: a
 * writer pushes at the end of its release, one message after its diffs'
 * acknowledgements; a diff that no release of its writer follows soon (a
 * barrier's arrival, whose intervals the barrier brings) costs this wait
 * and then the ask that was all there was before. */
#define PUSH_WAIT_NS 20000000ull

/* With one thread, a catch-up whose needs the faults could name
 * (coherence_ahead_of: the writers of a home page their diffs changed)
 * waits for those writers' pushes and applies them, asking nobody. */
static bool catch_up_by_pushes(void)
{
    uint32_t need[VT_MAX_NODES];
    if (smp_multi() || !coherence_catch_up_needs(need))
        return false;
    uint64_t deadline = clock_ns() + PUSH_WAIT_NS;
    pthread_mutex_lock(&one_pull);
    for (;;) {
        pthread_mutex_lock(&fl.lock);
        uint64_t seen = fl.pushes_in;
        pthread_mutex_unlock(&fl.lock);
        apply_pushed();
        if (covered(need))
            break;
        if (clock_ns() >= deadline) {
            pthread_mutex_unlock(&one_pull);
            return false;
        }
        ipc_wait(pushed_since, &seen, deadline);
    }
    pthread_mutex_unlock(&one_pull);
    stats_add(STAT_CATCH_UPS_PUSHED, 1);
    return true;
}

static void catch_up(void)
{
    uint64_t t0 = clock_ns();
    if (!catch_up_by_pushes())
        pull();
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
}

/* From the first flush asked or made here, faults catch up; under a
 * protocol that hides home pages until then (hlrc), releases push. */
static void flushes_seen(void)
{
    if (coh->apply_notices && !coherence_catching_up()) {
        if (coh->reveal)
            coherence_set_after_release(push_intervals);
        coherence_set_catch_up(catch_up);
    }
}

static void release_pushed_here(void *arg)
{
    (void)arg;
    wait_pushes_acked();
}

/* Off the master's shared stack: a fault there could release, and push
 * under push.lock. */
void sync_release_pushed(void)
{
    if (coherence_releases_push() && job()->nodes > 1)
        stack_private(release_pushed_here, NULL);
}

/* At a barrier: the pushes that came are applied (their intervals are
 * mostly the barrier's), so that a node that stops flushing does not
 * keep them. */
void sync_flush_drain(void)
{
    pthread_mutex_lock(&one_pull);
    apply_pushed();
    pthread_mutex_unlock(&one_pull);
}

void sync_pull(void)
{
    if (!coh->apply_notices || job()->nodes <= 1)
        return;
    flushes_seen();
    catch_up();
}

/* A node's threads (DSM_THREADS, an OpenMP team's) flush one at a time:
 * a flush's ask and answers are the node's (fl.seq, fl.due). */
static DSM_STATE pthread_mutex_t one_flush = PTHREAD_MUTEX_INITIALIZER;

static void flush_here(void *arg)
{
    bool threads = smp_multi();
    if (threads)
        pthread_mutex_lock(&one_flush);
    flush_node(arg);
    if (threads)
        pthread_mutex_unlock(&one_flush);
    /* A program that polls a flag with flush (or volatile loads) asks
     * nothing of the network under sc, or erc with nothing written: where
     * the CPUs are shared it would spin through the turns of the nodes it
     * waits for. libomp yields in its own waits when oversubscribed; here
     * the flush does, after the node's other threads may flush. Measured
     * (omp_volatile, sc, 4 nodes on 2 CPUs beside two busy processes, 8
     * runs each alternated): 409-1,700 ms a run without, 57-127 ms with;
     * at the same load a run once stalled 14 s, and a node was taken for
     * dead (make test). */
    if (ipc_cpus_shared())
        sched_yield();
}

static void flush_node(void *arg)
{
    (void)arg;
    uint64_t t0 = clock_ns();
    stats_add(STAT_FLUSHES, 1);
    flushes_seen();
    log_flush_output();
    coherence_release();
    coherence_release_sent();
    if (coh->apply_notices && job()->nodes > 1) {
        if (atomic_load(&fl.subscribed) && !smp_multi()) {
            apply_pushed_only(wait_pushes_acked());
        } else {
            pull();
        }
    }
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
}

static void release_here(void *arg)
{
    (void)arg;
    log_flush_output();
    coherence_release();
    coherence_release_sent();
}

/* A flush's first half alone: this node's writes so far become an
 * interval that the next flush or acquire elsewhere pulls. */
void sync_release(void) { stack_private(release_here, NULL); }

/* Off the master's shared stack (base/stack.h): applying notices may
 * invalidate the page holding the caller's frame. */
void sync_flush(void) { stack_private(flush_here, NULL); }

void dsm_flush(void)
{
    sync_refuse_threads("dsm_flush");
    sync_flush();
}

/* Off the master's shared stack: the vector time is copied under the
 * intervals' lock (interval_vt). */
static void flush_implied_here(void *unused)
{
    (void)unused;
    int nodes = job()->nodes;
    uint32_t vt[VT_MAX_NODES];
    interval_vt(vt);
    bool unseen = false;
    pthread_mutex_lock(&fl.lock);
    for (int j = 0; j < nodes && !unseen; j++)
        unseen = fl.announced[j] > vt[j];
    pthread_mutex_unlock(&fl.lock);
    if (unseen) {
        stats_add(STAT_IMPLIED_FLUSHES, 1);
        flush_here(NULL);
    }
}

void sync_flush_implied(void)
{
    if (atomic_load(&fl.any_announced))
        stack_private(flush_implied_here, NULL);
}


void sync_flush_start(void)
{
    ipc_register(SYNC_FLUSH_ASK, "FLUSH_ASK", on_ask, NULL);
    ipc_register(SYNC_FLUSH_ANSWER, "FLUSH_ANSWER", on_answer, NULL);
    ipc_register(SYNC_FLUSH_PUSH, "FLUSH_PUSH", on_push, NULL);
    ipc_register(SYNC_FLUSH_PUSH_ACK, "FLUSH_PUSH_ACK", on_push_ack, NULL);
}
