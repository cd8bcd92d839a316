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
} fl = {.lock = PTHREAD_MUTEX_INITIALIZER};

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

/* The acquire half: every interval another node knows and this one
 * lacks, applied. */
static DSM_STATE pthread_mutex_t one_pull = PTHREAD_MUTEX_INITIALIZER; /* threads of a node */

static void pull_locked(void (*after_asks)(void));

static void pull(void)
{
    pthread_mutex_lock(&one_pull);
    pull_locked(NULL);
    pthread_mutex_unlock(&one_pull);
}

/* The pull, one_pull held; after_asks (a flush's release_sent) runs once
 * the asks are out, before their answers are waited for. */
static void pull_locked(void (*after_asks)(void))
{
    uint64_t number = coherence_pull_begins(); /* before the asks (coherence.h) */
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
        coherence_release_unawaited();
        pull_locked(coherence_release_sent);
        pthread_mutex_unlock(&one_pull);
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
}
