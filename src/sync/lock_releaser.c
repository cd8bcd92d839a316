/*
 * lock_releaser.c — releases kept on the node, run aside (issue 27). An
 * unlock that nobody waits for leaves its release pending (lock.c), and a
 * request for such a lock reaches the delivery thread, which may not wait:
 * it queues the lock for the *releaser*, a thread of ours that runs the
 * pending release aside (coherence_release_aside: it takes the fault lock
 * and waits for the acknowledgements while the program runs on) and then
 * grants each lock of its batch still owned, not held and asked for
 * (lock_grant.c). The program's own lock or unlock, finding a batch
 * queued, runs it itself (lock_batch_help). Work that waits for every
 * release kept before it (sync_after_kept_releases) rides with a batch.
 *
 * The queue is locks.rel, under locks.lock (lock_state.h); the thread
 * starts on first use and stops at sync_lock_finish.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stats.h"
#include "sync/lock_state.h"

struct deferred {
    void (*fn)(void *);
    void *arg;
};

/* A batch is the locks queued for the releaser before it is taken; the
 * release that follows runs every release kept before them (each lock's
 * last unlock came before it was queued), and then a lock of the batch
 * still owned, not held and asked for goes to its successor. One the
 * program took again meanwhile goes at its unlock, which releases first;
 * one that left and came back is in a later batch (`batch` says which).
 * Caller holds locks.lock; *n is 0 when none is queued. */
static int *batch_take(size_t *n, uint64_t *batch, struct deferred **later, size_t *nlater)
{
    int *ids = locks.rel.ids;
    *n = locks.rel.n;
    if (*n)
        *batch = locks.rel.batch++;
    locks.rel.ids = NULL;
    locks.rel.n = locks.rel.cap = 0;
    *later = locks.rel.later;
    *nlater = locks.rel.nlater;
    locks.rel.later = NULL;
    locks.rel.nlater = locks.rel.caplater = 0;
    return ids;
}

/* The batch's deferred work, its release having run. Caller holds
 * locks.lock. */
static void batch_later(struct deferred *later, size_t nlater)
{
    for (size_t i = 0; i < nlater; i++)
        later[i].fn(later[i].arg);
    free(later);
}

/* The batch's grants, its release having run. Caller holds locks.lock. */
static void batch_grant(int *ids, size_t n, uint64_t batch)
{
    for (size_t i = 0; i < n; i++) {
        struct lock_state *l = lock_state_of(ids[i]);
        if (l->batch != batch)
            continue;
        l->batch = 0;
        if (l->owned && !l->held && l->successor)
            lock_grant_successor(ids[i], l);
    }
    free(ids);
}

/* The releaser's loop: each batch's release runs aside, while the program
 * runs on. */
static void *releaser_main(void *arg)
{
    (void)arg;
    smp_internal_thread(); /* the program's signals go to its threads */
    pthread_mutex_lock(&locks.lock);
    for (;;) {
        while (!locks.rel.n && !locks.rel.nlater && !locks.rel.stop)
            pthread_cond_wait(&locks.rel.cv, &locks.lock);
        if (locks.rel.stop)
            break;
        size_t n, nlater;
        uint64_t batch = 0;
        struct deferred *later;
        int *ids = batch_take(&n, &batch, &later, &nlater);
        pthread_mutex_unlock(&locks.lock);
        uint64_t t0 = clock_ns();
        coherence_release_aside();
        stats_add(STAT_LOCK_ASIDE_RELEASES, 1);
        stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
        pthread_mutex_lock(&locks.lock);
        batch_grant(ids, n, batch);
        batch_later(later, nlater);
    }
    pthread_mutex_unlock(&locks.lock);
    return NULL;
}

/* The program's own lock or unlock, with requests queued for the releaser:
 * it takes the batch and runs the release itself, as an unlock with a
 * successor does, rather than leave the requesters waiting until the
 * releaser is woken and gets a CPU (on 2 cores shared with 2 busy
 * programs, most of a contended hand-over). The releaser, woken, finds
 * nothing queued. Caller holds locks.lock; released and taken again.
 * Returns when it began (the call's time is the lock's), 0 when nothing
 * was queued. */
uint64_t lock_batch_help(void)
{
    if (!locks.rel.n && !locks.rel.nlater)
        return 0;
    uint64_t t0 = clock_ns();
    size_t n, nlater;
    uint64_t batch = 0;
    struct deferred *later;
    int *ids = batch_take(&n, &batch, &later, &nlater);
    pthread_mutex_unlock(&locks.lock);
    coherence_release();
    stats_add(STAT_LOCK_HELPED_RELEASES, 1);
    pthread_mutex_lock(&locks.lock);
    batch_grant(ids, n, batch);
    batch_later(later, nlater);
    pthread_mutex_unlock(&locks.lock);
    coherence_release_sent();
    pthread_mutex_lock(&locks.lock);
    return t0;
}

/* Starts the releaser on first use. Caller holds locks.lock. */
static void releaser_ensure(void)
{
    if (!locks.rel.started) {
        int err = pthread_create(&locks.rel.thread, NULL, releaser_main, NULL);
        if (err)
            log_fatal("cannot start the lock releaser thread: %s", strerror(err));
        locks.rel.started = true;
    }
}

void sync_after_kept_releases(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&locks.lock);
    if (!coherence_release_pending(coherence_release_kept())) {
        fn(arg);
        pthread_mutex_unlock(&locks.lock);
        return;
    }
    releaser_ensure();
    if (locks.rel.nlater == locks.rel.caplater)
        locks.rel.later = libheap_grow(locks.rel.later, &locks.rel.caplater, sizeof *locks.rel.later, 8,
                                       "for a flush");
    locks.rel.later[locks.rel.nlater++] = (struct deferred){fn, arg};
    pthread_cond_signal(&locks.rel.cv);
    pthread_mutex_unlock(&locks.lock);
}

/* Queues a lock for the releaser. Caller holds locks.lock. */
void lock_releaser_queue(int id, struct lock_state *l)
{
    releaser_ensure();
    if (locks.rel.n == locks.rel.cap)
        locks.rel.ids = libheap_grow(locks.rel.ids, &locks.rel.cap, sizeof *locks.rel.ids, 8, "for a lock");
    locks.rel.ids[locks.rel.n++] = id;
    l->batch = locks.rel.batch;
    pthread_cond_signal(&locks.rel.cv);
}

/* Stops the releaser, once no message can arrive (after ipc_finish): a
 * request still queued would be a lock nobody can take any more. */
void sync_lock_finish(void)
{
    pthread_mutex_lock(&locks.lock);
    bool started = locks.rel.started;
    locks.rel.stop = true;
    pthread_cond_signal(&locks.rel.cv);
    pthread_mutex_unlock(&locks.lock);
    if (started)
        pthread_join(locks.rel.thread, NULL);
    pthread_mutex_lock(&locks.lock);
    free(locks.rel.ids);
    locks.rel.ids = NULL;
    locks.rel.n = locks.rel.cap = 0;
    free(locks.rel.later);
    locks.rel.later = NULL;
    locks.rel.nlater = locks.rel.caplater = 0;
    locks.rel.started = locks.rel.stop = false;
    pthread_mutex_unlock(&locks.lock);
}
