/*
 * hlrc.c — home-based lazy release consistency (Zhou, Iftode and Li, 1996;
 * seed 000's HLRC), with multiple writers: its state, its start and
 * finish, the page cache's evictions, and its coherence_ops.
 *
 * Every page has a home whose copy is always up to date. A writer elsewhere
 * keeps a twin from its first write; at its release it sends the home a
 * byte-exact diff (mem/diff.c), waits for the home to apply it (the home's reply
 * names the page's new version), and records an interval of write notices
 * (page, version). The notices travel with lock grants and barrier
 * releases; an acquirer invalidates each page whose copy is older than the
 * version named. A fault then fetches the whole page from its home: one
 * request, one reply received straight into the page's frame.
 *
 * Invariant: a home applies every diff before the release that made it
 * completes, so a fetch that an acquire caused never finds the home behind
 * the version it needs (the home checks, and a violation ends the job).
 * A dirty page that a notice invalidates first sends its diff, so no local
 * write is lost, and its notice goes out at the next release.
 *
 * Homes, and the fetch of a page from its home, are home.c's; hlrc adds
 * what its home does when serving (the version a fetch needs, snapshots)
 * and the pulls, replies no fault waits for. Homes may move at barriers
 * (migrate.c): the page goes with its version, and the former home keeps
 * a read-only copy at that version.
 *
 * The protocol's concerns have a file each, their shared state and
 * declarations in hlrc_state.h (private to coherence/):
 *   hlrc_fetch.c     the fault path: a copy made valid, or writable (a twin)
 *   hlrc_ahead.c     read-ahead and write-ahead, fetched with a fault
 *   hlrc_acquire.c   the acquire: notices applied; pulls, fetches into place
 *   hlrc_release.c   the release: diffs sent home, the interval recorded
 *   hlrc_snapshot.c  the home's own writes: snapshots compared and announced
 *   hlrc_home.c      the home's service: fetches, runs, diffs, pages that move
 *   hlrc_atomic.c    atomics done at the home
 * The program's side runs under the fault lock (coherence_lock), the
 * home's side and the replies on the delivering thread; hlrc.lock guards
 * what both touch.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/migrate.h"
#include "coherence/oneside.h"
#include "ipc/ipc.h"

DSM_STATE struct hlrc_state hlrc = {.lock = PTHREAD_MUTEX_INITIALIZER};
DSM_STATE struct hlrc_writers hlrc_wr;

/* The page cache gives up a copy (coherence_ops.evict): its diff, if it
 * was written, goes home first and is acknowledged, as when a notice
 * invalidates a dirty page; its notice goes out at the next release. A
 * page whose pull is in flight is not given up: its frame is about to
 * receive the reply. Caller holds the fault lock. */
static int hlrc_evict(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    if (hlrc_pull_expected(page))
        return CACHE_NOT_NOW;
    e->state = PAGE_INVALID;
    mem_protect(page, PROT_NONE);
    mem_protect_flush(); /* before the diff: no write may follow it */
    bool dirty = e->twin != NULL;
    if (dirty) {
        hlrc_flush_page(page, -1);
        coherence_wait_for(&hlrc.lock, &hlrc.outstanding, 0);
    }
    return dirty ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

static void hlrc_start(void)
{
    static const struct home_ops hops = {.serve = hlrc_serve, .expects = hlrc_pull_expected,
                                         .landed = hlrc_page_landed, .diff = hlrc_apply_diff,
                                         .diff_acked = hlrc_diff_acked, .give = hlrc_give,
                                         .take = hlrc_take, .atomic = hlrc_perform_atomic};
    const struct coherence_params *c = coherence_params();
    /* The table bounds them (config.c); a run request holds READ_AHEAD_MAX. */
    hlrc.read_ahead = c->read_ahead <= READ_AHEAD_MAX ? c->read_ahead : READ_AHEAD_MAX;
    hlrc.write_ahead = c->write_ahead <= READ_AHEAD_MAX ? c->write_ahead : READ_AHEAD_MAX;
    hlrc.pull_credit = c->pull_credit;
    hlrc.diffbuf = malloc(mem_diff_bound(mem.page_size));
    hlrc.pages = mmap(NULL, mem.npages * sizeof *hlrc.pages, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    hlrc_wr.seen = calloc((size_t)job()->nodes, sizeof *hlrc_wr.seen);
    hlrc_wr.start = calloc((size_t)job()->nodes, sizeof *hlrc_wr.start);
    hlrc_wr.page = mmap(NULL, mem.npages * sizeof *hlrc_wr.page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!hlrc.diffbuf || hlrc.pages == MAP_FAILED || !hlrc_wr.seen || !hlrc_wr.start ||
        hlrc_wr.page == MAP_FAILED)
        log_fatal("out of memory for hlrc's page table");
    oneside_start();
    home_start(&hops);
    ipc_register(COH_PAGE_RUN_REQ, "PAGE_RUN_REQ", hlrc_on_page_run_req, NULL);
    ipc_register(COH_PAGE_RUN_REP, "PAGE_RUN_REP", hlrc_on_page_run_rep, hlrc_place_page_run_rep);
}

/* Frees the home pages' snapshots and the lists. */
static void hlrc_finish(void)
{
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < hlrc.ntracked; i++)
        hlrc_snapshot_drop(hlrc.tracked[i]);
    for (size_t i = 0; i < hlrc.ndirty; i++) {
        struct page_entry *e = &mem.pages[hlrc.dirty[i].page];
        mem_copy_put(e->twin);
        e->twin = NULL;
    }
    free(hlrc.tracked);
    free(hlrc.written);
    free(hlrc.unsnapped);
    free(hlrc.unprotected);
    free(hlrc.dirty);
    free(hlrc.pulls);
    free(hlrc.to_pull);
    free(hlrc.diffbuf);
    hlrc.tracked = hlrc.unsnapped = hlrc.pulls = hlrc.to_pull = hlrc.unprotected = NULL;
    hlrc.dirty = NULL;
    hlrc.written = NULL;
    hlrc.cap_written = 0;
    hlrc.compares = 0;
    hlrc.diffbuf = NULL;
    hlrc.ntracked = hlrc.cap_tracked = hlrc.ndirty = hlrc.cap = hlrc.npulls = hlrc.cap_pulls = 0;
    hlrc.nto_pull = hlrc.cap_to_pull = 0;
    hlrc.nunprotected = hlrc.cap_unprotected = hlrc.nunsnapped = hlrc.cap_unsnapped = 0;
    for (size_t i = 0; i < hlrc_wr.nlisted; i++) {
        free(hlrc_wr.page[hlrc_wr.listed[i]]);
        hlrc_wr.page[hlrc_wr.listed[i]] = NULL;
    }
    free(hlrc_wr.listed);
    hlrc_wr.listed = NULL;
    hlrc_wr.nlisted = hlrc_wr.cap_listed = 0;
    pthread_mutex_unlock(&hlrc.lock);
    migrate_finish();
}

/* One line per concern: life, faults, release, acquire, statistics. */
const struct coherence_ops hlrc_ops = {
    .start = hlrc_start, .finish = hlrc_finish,
    .read_fault = hlrc_read_fault, .write_fault = hlrc_write_fault,
    .release = hlrc_release, .release_sent = hlrc_release_sent,
    .release_aside = hlrc_release_aside, .release_arriving = hlrc_release_arriving,
    .reveal = hlrc_reveal,
    .apply_notices = hlrc_apply_notices, .notices_applied = hlrc_notices_applied,
    .barrier_vote = migrate_barrier_vote, .barrier_done = migrate_barrier_done,
    .join_wants_barrier = migrate_join_wants_barrier,
    .evict = hlrc_evict,
    .atomic = hlrc_atomic, .atomic_away = hlrc_atomic_away, .atomic_wrote = hlrc_atomic_wrote,
    .aurc_estimate = true,
};
