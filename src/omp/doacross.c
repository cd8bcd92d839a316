/*
 * doacross.c — loops with cross-iteration dependences: `ordered(n)` with
 * `ordered depend(sink: ...)` / `depend(source)` (OpenMP 5.1 §2.19.9).
 *
 * Each iteration of the loop nest has a word in shared memory, set when the
 * iteration posts (depend(source)). A post notes the iteration in a
 * private map of this thread's posts and in a queue; the queue is
 * published as a release (sync_release: an interval, no round trip to
 * every node), then the queued words, then another release. The release
 * must come before the words: a node that is the home of the words' page
 * has them seen by the next fetch of the page, released or not, and a
 * waiter that sees a word must find the writes before it in the
 * intervals it pulls. A full flush per post (two, one before the word
 * and one after) made a 750 x 750 wavefront (LLVM's omp_doacross) run
 * for many minutes. A thread publishes (a) before it waits for an
 * iteration of another thread, so no two threads wait for each other's
 * unpublished posts, (b) at a post when the last publication is over a
 * millisecond old, so a poster that never waits still publishes soon,
 * and (c) at the loop's end. A wait for an iteration this thread posted
 * itself (most of them under a static schedule) costs nothing; one for
 * another thread's polls the word with a flush between reads (sync/
 * flush.c), and flushes once more after seeing it: the word may have
 * been read on a page fetched newer than the notices this node has
 * pulled, and the poster's writes before its post are seen only after
 * that flush. That flush also serves the words after it (LOOK_AHEAD)
 * that were seen set before it: a later wait for one of them returns at
 * once. A word per iteration (diffs carry exactly the bytes written, so
 * bytes would be right as well; a word is what a post's atomic store
 * takes in one instruction). The words are the team's: thread 0 allocates them and the team
 * meets once (a barrier) before the loop, after which the previous loop's
 * words are no longer used and are freed; the region's end frees the last.
 * Every iteration's word costs 4 bytes of shared memory while the loop
 * runs, and a byte of this node's memory.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

struct kmp_dim {
    kmp_int64 lo, up, st; /* bounds and stride, as clang passes them */
};

#define DOACROSS_MAX_DIMS 8

/* Each thread's own (its posts, what it knows of the words). */
static __thread struct {
    int       ndims;
    kmp_int64 lo[DOACROSS_MAX_DIMS], st[DOACROSS_MAX_DIMS];
    uint64_t  count[DOACROSS_MAX_DIMS];
    uint64_t  total;
    uint32_t *done;
    unsigned char *known;     /* per iteration: KNOWN_* */
    uint64_t *queue;          /* posted here, words not yet set */
    size_t    queued, cap;
    uint64_t  last_publish_ns;
} da;

/* What this thread knows of an iteration's word. */
enum { KNOWN_NOTHING, KNOWN_MINE, KNOWN_SEEN, KNOWN_DONE };

/* How far past the awaited iteration a wait looks: words seen set before
 * a flush are known done after it (the next row of a wavefront, so one
 * flush serves a row's waits when the poster is ahead). */
#define LOOK_AHEAD 4096

static void publish(void)
{
    da.last_publish_ns = clock_ns();
    if (!da.queued)
        return;
    sync_release(); /* the iterations' writes, before their words */
    for (size_t k = 0; k < da.queued; k++)
        da.done[da.queue[k]] = 1;
    da.queued = 0;
    sync_release(); /* the words */
}

/* The iteration's number in the nest, row-major; false outside it. */
static bool linear(const kmp_int64 *vec, uint64_t *out)
{
    uint64_t at = 0;
    for (int d = 0; d < da.ndims; d++) {
        kmp_int64 off = vec[d] - da.lo[d];
        if ((da.st[d] > 0 && off < 0) || (da.st[d] < 0 && off > 0) || off % da.st[d])
            return false;
        uint64_t i = (uint64_t)(off / da.st[d]);
        if (i >= da.count[d])
            return false;
        at = at * da.count[d] + i;
    }
    *out = at;
    return true;
}

void __kmpc_doacross_init(ident_t *loc, kmp_int32 gtid, kmp_int32 num_dims,
                          const struct kmp_dim *dims)
{
    struct omp_thread *t = omp_self();
    if (num_dims < 1 || num_dims > DOACROSS_MAX_DIMS)
        log_fatal("ordered(%d): dsm supports doacross loops of 1 to %d dimensions", num_dims,
                  DOACROSS_MAX_DIMS);
    da.ndims = num_dims;
    da.total = 1;
    for (int d = 0; d < num_dims; d++) {
        if (dims[d].st == 0)
            log_fatal("ordered(%d): dimension %d has a zero stride", num_dims, d);
        da.lo[d] = dims[d].lo;
        da.st[d] = dims[d].st;
        kmp_int64 span = dims[d].up - dims[d].lo;
        da.count[d] = (span >= 0) == (dims[d].st > 0) ? (uint64_t)(span / dims[d].st) + 1 : 0;
        da.total *= da.count[d];
    }
    if (t->nthreads <= 1) {
        da.done = NULL; /* one thread runs the iterations in order: nothing to wait for */
        return;
    }
    struct omp_team_shared *r = t->region->shared;
    uint32_t *previous = (uint32_t *)(uintptr_t)r->doacross_prev;
    if (t->tid == 0) {
        void *words = dsm_malloc(da.total ? da.total * sizeof(uint32_t) : sizeof(uint32_t));
        if (!words)
            log_fatal("no shared memory for the %llu iterations of an ordered(%d) loop",
                      (unsigned long long)da.total, num_dims);
        r->doacross = (uint64_t)(uintptr_t)words;
    }
    free(da.known);
    da.known = calloc(da.total ? da.total : 1, 1);
    if (!da.known)
        log_fatal("out of memory for the %llu iterations of an ordered(%d) loop",
                  (unsigned long long)da.total, num_dims);
    da.queued = 0;
    da.last_publish_ns = clock_ns();
    __kmpc_barrier(loc, gtid);
    da.done = (uint32_t *)(uintptr_t)r->doacross;
    if (t->tid == 0) {
        if (previous)
            dsm_free(previous);
        r->doacross_prev = r->doacross;
    }
}

void __kmpc_doacross_wait(ident_t *loc, kmp_int32 gtid, const kmp_int64 *vec)
{
    (void)loc, (void)gtid;
    uint64_t i;
    if (!da.done || !linear(vec, &i))
        return; /* a sink outside the iteration space is ignored */
    if (da.known[i] == KNOWN_MINE || da.known[i] == KNOWN_DONE)
        return; /* this thread's own (done before it in its order), or seen and flushed */
    publish(); /* ours first: the thread we wait for may wait for them */
    uint64_t end = i + LOOK_AHEAD < da.total ? i + LOOK_AHEAD : da.total;
    for (;;) {
        for (uint64_t j = i; j < end; j++)
            if (da.known[j] == KNOWN_NOTHING && __atomic_load_n(&da.done[j], __ATOMIC_RELAXED))
                da.known[j] = KNOWN_SEEN;
        bool seen = da.known[i] == KNOWN_SEEN;
        /* A word seen before this flush: the poster's writes are seen
         * after it, however new the word's page was. */
        sync_flush();
        for (uint64_t j = i; j < end; j++)
            if (da.known[j] == KNOWN_SEEN)
                da.known[j] = KNOWN_DONE;
        if (seen)
            return;
    }
}

void __kmpc_doacross_post(ident_t *loc, kmp_int32 gtid, const kmp_int64 *vec)
{
    (void)loc, (void)gtid;
    uint64_t i;
    if (!da.done || !linear(vec, &i))
        return;
    da.known[i] = KNOWN_MINE;
    if (da.queued == da.cap) {
        size_t cap = da.cap ? 2 * da.cap : 256;
        uint64_t *q = realloc(da.queue, cap * sizeof *q);
        if (!q)
            log_fatal("out of memory for an ordered(%d) loop's posts", da.ndims);
        da.queue = q;
        da.cap = cap;
    }
    da.queue[da.queued++] = i;
    if (clock_ns() - da.last_publish_ns > 1000000)
        publish();
}

void __kmpc_doacross_fini(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (da.done)
        publish();
    da.done = NULL; /* freed by the next loop's thread 0, or the region's end */
    free(da.known);
    da.known = NULL;
}

/* At the master, once the region has ended. */
void omp_doacross_region_end(struct omp_team_shared *r)
{
    if (r->doacross_prev)
        dsm_free((void *)(uintptr_t)r->doacross_prev);
    if (r->doacross || r->doacross_prev) /* a region without such loops writes nothing */
        r->doacross = r->doacross_prev = 0;
}
