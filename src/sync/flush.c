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
 * The two halves overlap: the asks go as soon as the release's diffs
 * are sent, and the diffs' acknowledgements come back beside the answers
 * (coherence_release_unawaited). The release's interval exists from the
 * asks on, so each ask announces it, but no answer, grant or catch-up
 * gives it out before its acknowledgements are in: an answer waits for
 * a running release. NPB LU's pipeline flushes after every row it writes,
 * and each flush was two round trips, the diffs' and then the asks'.
 *
 * A flush that finds nothing to do asks nothing (quiet). A flush that
 * released nothing since this node's last ask is a poll, and its ask
 * asks to be watched: the node answering counts the asker as a watcher,
 * and its next release that no flush's ask announces (an unlock's, kept
 * or not, a barrier's, a sync_release) sends the watcher news
 * (SYNC_FLUSH_NEWS): ask again. The next poll is quiet when every other
 * node answered that ask and has sent no news since, and no ask since
 * named an interval not applied here (flush_kind). It is ordered before
 * whatever release elsewhere has not reached it, as a flush that asked
 * just before that release would have been. A program polling a flag
 * with flush asked every node at every poll.
 *
 * Under erc a release already invalidates (or updates) every copy before
 * it completes, and under sc every write is visible when its store runs:
 * there the flush is the release alone. A flush costs nothing to a
 * program that never flushes: no state, no message outside one. What one
 * costs: a round trip to every other node at once (answers carry only
 * intervals, a few bytes when nothing changed), then the invalidations of
 * what changed. docs/openmp.md, "flush", gives the figures.
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
    /* Quiet flushes. Here as the node asked: each asker's round (seq)
     * whose ask made it a watcher, 0 once told of a release since. Here
     * as the asker: each node's latest round answered, and the latest
     * round its news ended; this node's own entry of the vector time its
     * last ask sent. */
    uint32_t        watching[VT_MAX_NODES];
    bool            answering[VT_MAX_NODES]; /* its answer is being encoded, or sent */
    uint32_t        answered[VT_MAX_NODES];
    uint32_t        told[VT_MAX_NODES];
    uint32_t        own_asked;
    uint32_t        watch_round; /* our last round that asked to be watched; 0: none */
    uint64_t        heard;     /* asks and news received: a quiet flush's wait ends */
} fl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The flushing thread's own release: its interval is announced by the
 * flush's asks, not by news. */
static __thread bool releasing_for_flush;

/* An ask to answer once our kept releases have run. */
struct pending_answer {
    int      to;
    uint32_t seq;
    uint32_t vt[];
};

static void answer_now(void *arg)
{
    struct pending_answer *p = arg;
    pthread_mutex_lock(&fl.lock);
    fl.answering[p->to] = true; /* an interval out from here on is news to it */
    pthread_mutex_unlock(&fl.lock);
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
static bool flush_node(void);

static void on_ask(int src, const void *msg, size_t len)
{
    size_t rest;
    char none;
    /* The asker's vector time, then whether it asks to be watched. */
    const unsigned char *body = ipc_body(src, msg, len, &none, 0, &rest, "flush");
    size_t vt_len = (size_t)job()->nodes * sizeof(uint32_t);
    uint32_t watch = 0;
    if (rest == vt_len + sizeof watch)
        memcpy(&watch, body + vt_len, sizeof watch);
    if (rest != vt_len + sizeof watch || watch > 1 || src == job()->rank)
        log_fatal("node %d sent a malformed flush", src);
    uint64_t t0 = clock_ns();
    struct pending_answer *p = malloc(sizeof *p + vt_len);
    if (!p)
        log_fatal("out of memory for a flush");
    p->to = src;
    p->seq = ipc_msg_aux(msg);
    memcpy(p->vt, body, vt_len);
    pthread_mutex_lock(&fl.lock);
    /* A watcher from here on, if it asks to be: a release after this
     * point is in the answer (which waits for kept and running releases)
     * or is news. */
    fl.watching[src] = watch ? p->seq : 0;
    fl.answering[src] = false;
    fl.heard++;
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
    fl.answered[src] = fl.seq;
    fl.due--;
    pthread_mutex_unlock(&fl.lock);
    ipc_notify();
}

/* A release at src since it answered our round `aux`: the next flush
 * asks. Tagged with the round, so that news of an older round, however
 * late, does not end a newer one's watch. */
static void on_news(int src, const void *msg, size_t len)
{
    size_t rest;
    char none;
    ipc_body(src, msg, len, &none, 0, &rest, "flush news");
    uint32_t round = ipc_msg_aux(msg);
    pthread_mutex_lock(&fl.lock);
    uint32_t asked = fl.seq;
    bool ok = rest == 0 && src != job()->rank && round > 0 && round <= asked;
    if (ok && round > fl.told[src])
        fl.told[src] = round;
    fl.heard++;
    pthread_mutex_unlock(&fl.lock);
    if (!ok)
        log_fatal("node %d sent malformed flush news (round %u; %u asked here)", src, round, asked);
}

/* A release here that no flush's ask announces: each watcher is told to
 * ask again, once (it is a watcher again from its next ask). An interval
 * (`kept` false) is news only to a node whose answer is already being
 * encoded: one not yet will carry it (the kept releases an ask runs make
 * theirs so). A kept release has no interval yet: news to every watcher
 * from its ask on, whose check for kept releases may have passed. Runs
 * where the release ran, the fault lock perhaps held; sends, never
 * waits. */
static void tell_watchers_of(bool kept)
{
    if (!atomic_load(&fl.any_announced) || releasing_for_flush)
        return;
    int nodes = job()->nodes, told = 0;
    int to[VT_MAX_NODES];
    uint32_t round[VT_MAX_NODES];
    pthread_mutex_lock(&fl.lock);
    for (int j = 0; j < nodes; j++)
        if (fl.watching[j] && (kept || fl.answering[j])) {
            to[told] = j;
            round[told++] = fl.watching[j];
            fl.watching[j] = 0;
        }
    pthread_mutex_unlock(&fl.lock);
    for (int k = 0; k < told; k++)
        ipc_send(to[k], SYNC_FLUSH_NEWS, round[k], NULL, 0);
    stats_add(STAT_FLUSH_NEWS, (uint64_t)told);
}

static void tell_watchers(void) { tell_watchers_of(false); }

void sync_flush_kept_release(void) { tell_watchers_of(true); }

/* What a flush asks, its release done. A *poll* (this node made no
 * interval since its last ask) asks to be watched: each node asked will
 * send news of its next release that no ask announces. A flush that
 * released asks not to be, so that a node that writes between flushes
 * (NPB LU's atomics) is sent no news it has no use for. A poll is *quiet*
 * and asks nothing when its last round asked to be watched, every other
 * node answered it and has sent no news since, and no ask since named an
 * interval not applied here. Its acquire would bring nothing; it is
 * ordered before whatever release elsewhere has not reached us yet, as a
 * flush that asked before that release would have been. Caller holds
 * one_pull. */
enum flush_kind { FLUSH_RELEASED, FLUSH_POLL, FLUSH_QUIET };

static enum flush_kind flush_kind(void)
{
    int nodes = job()->nodes, me = job()->rank;
    uint32_t vt[VT_MAX_NODES];
    interval_vt_applied(vt);
    pthread_mutex_lock(&fl.lock);
    enum flush_kind k = fl.seq > 0 && fl.own_asked == vt[me] ? FLUSH_POLL : FLUSH_RELEASED;
    bool q = k == FLUSH_POLL && fl.watch_round == fl.seq;
    for (int j = 0; j < nodes && q; j++)
        if (j != me)
            q = fl.answered[j] == fl.seq && fl.told[j] < fl.seq && fl.announced[j] <= vt[j];
    pthread_mutex_unlock(&fl.lock);
    return q ? FLUSH_QUIET : k;
}

static bool answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&fl.lock);
    bool done = fl.due == 0;
    pthread_mutex_unlock(&fl.lock);
    return done;
}

/* The acquire half: every interval another node knows and this one
 * lacks, applied. */
static DSM_STATE pthread_mutex_t one_pull = PTHREAD_MUTEX_INITIALIZER; /* threads of a node */

static void pull_locked(void (*after_asks)(void), bool watch);

static void pull(void)
{
    pthread_mutex_lock(&one_pull);
    pull_locked(NULL, false);
    pthread_mutex_unlock(&one_pull);
}

/* The pull, one_pull held; after_asks (a flush's release_sent) runs once
 * the asks are out, before their answers are waited for. The ask: our
 * vector time, then whether we ask to be watched (flush_kind). */
static void pull_locked(void (*after_asks)(void), bool watch)
{
    uint64_t number = coherence_pull_begins(); /* before the asks (coherence.h) */
    int nodes = job()->nodes, me = job()->rank;
    uint32_t vt[VT_MAX_NODES + 1];
    interval_vt_applied(vt);
    vt[nodes] = watch;
    pthread_mutex_lock(&fl.lock);
    uint32_t seq = ++fl.seq;
    fl.due = nodes - 1;
    fl.own_asked = vt[me];
    fl.watch_round = watch ? seq : 0;
    pthread_mutex_unlock(&fl.lock);
    ipc_batch_begin();
    for (int j = 0; j < nodes; j++)
        if (j != me)
            ipc_send(j, SYNC_FLUSH_ASK, seq, vt, (size_t)(nodes + 1) * sizeof *vt);
    ipc_batch_end();
    if (after_asks)
        after_asks();
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
}

/* A fault made a copy readable that holds writes whose notices this node
 * lacks (coherence.h, "catching up"): the flag of a writer, say, whose
 * data pages here are still the old ones. Pulling the intervals makes
 * them current before the program reads on. Runs on the faulting thread,
 * off the shared stack (the fault handler's own), the fault lock free. */
static void catch_up(void)
{
    uint64_t t0 = clock_ns();
    pull();
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
}

/* From the first flush asked or made here, faults catch up. */
static void flushes_seen(void)
{
    if (coh->apply_notices && !coherence_catching_up())
        coherence_set_catch_up(catch_up);
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

/* A program polling a flag with flush on a host whose CPUs the job's
 * threads share: after a quiet flush the poller waits, driving the
 * network itself, until an ask or news arrives, or for about what the
 * ask it skipped took on 2 nodes here. Spinning instead (a yield between
 * polls) took the CPU from the very node it waited for: bench/omp/
 * flag_poll on 2 nodes, hlrc, a token's round 414-455 us spinning
 * against 115-122 us with the asks, 121-125 us with this wait; a flush
 * with nothing new 0.7 us spinning, 11 us with the wait. */
#define QUIET_WAIT_NS 10000

static bool heard_since(void *arg)
{
    pthread_mutex_lock(&fl.lock);
    bool heard = fl.heard != *(const uint64_t *)arg;
    pthread_mutex_unlock(&fl.lock);
    return heard;
}

static void flush_here(void *arg)
{
    (void)arg;
    bool threads = smp_multi();
    if (threads)
        pthread_mutex_lock(&one_flush);
    pthread_mutex_lock(&fl.lock);
    uint64_t heard = fl.heard;
    pthread_mutex_unlock(&fl.lock);
    bool quiet = flush_node();
    if (threads)
        pthread_mutex_unlock(&one_flush);
    if (quiet && ipc_cpus_shared()) {
        ipc_wait(heard_since, &heard, clock_ns() + QUIET_WAIT_NS);
        return;
    }
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

/* The node's flush; true when it was quiet (asked nothing). */
static bool flush_node(void)
{
    bool quiet_one = false;
    uint64_t t0 = clock_ns();
    stats_add(STAT_FLUSHES, 1);
    flushes_seen();
    log_flush_output();
    if (!coh->apply_notices || job()->nodes <= 1) {
        coherence_release();
        coherence_release_sent();
    } else {
        /* The asks go while the release's diffs are on their way, and its
         * acknowledgements come back beside the answers: one round trip,
         * not two (coherence_release_unawaited). one_pull first: a
         * catch-up takes it before the fault lock, which the release
         * leaves held until release_sent. */
        pthread_mutex_lock(&one_pull);
        releasing_for_flush = true;
        coherence_release_unawaited();
        enum flush_kind kind = flush_kind();
        quiet_one = kind == FLUSH_QUIET;
        if (quiet_one) {
            coherence_release_sent();
            stats_add(STAT_QUIET_FLUSHES, 1);
        } else
            pull_locked(coherence_release_sent, kind == FLUSH_POLL);
        releasing_for_flush = false;
        pthread_mutex_unlock(&one_pull);
    }
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
    return quiet_one;
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
    ipc_register(SYNC_FLUSH_NEWS, "FLUSH_NEWS", on_news, NULL);
    interval_on_own(tell_watchers);
}
