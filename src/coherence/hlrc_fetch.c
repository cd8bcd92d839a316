/*
 * hlrc_fetch.c — hlrc's fault path: a read fault makes an invalid copy
 * valid (read-only), fetched from its home (home.c's home_fetch, or a
 * one-sided get, oneside.c); a write fault on a page homed elsewhere
 * gives it a twin and puts it on the interval's dirty list, and on a home
 * page tracks it (hlrc_snapshot.c). Here too: a copy invalidated by a
 * notice, and the hiding of a copy that may hold writes this node has not
 * seen (coherence.h, "catching up") until it has caught up.
 *
 * On the program's thread, under the fault lock (coherence_lock); what
 * the delivering thread also touches (a page's version and state at the
 * home, hidden pages) under hlrc.lock. The pages fetched with a fault are
 * hlrc_ahead.c's, their replies settled as pulls (hlrc_acquire.c).
 *
 * With threads (smp_multi), a fault that fetches its page alone (no
 * read-ahead or write-ahead with it, no one-sided get, an unbounded page
 * cache, the home known) drops the fault lock for the round trip: the
 * node's other threads fault, fetch, acquire and release meanwhile, each
 * fetch its own record (home.c). The page is marked `fetching` until it is
 * installed: a second thread's fault on it waits for that fetch, and
 * read-ahead passes it over. An acquire that names a newer version while
 * the fetch is out raises the page's `need`, and the fetch goes again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/check.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/migrate.h"
#include "coherence/oneside.h"
#include "ipc/ipc.h"

/* A notice made this node's copy stale: the next read faults, and counts
 * as a re-read (see DSM_PULL_CREDIT). Caller holds the fault lock. */
void hlrc_invalidate(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    e->state = PAGE_INVALID;
    h->hidden = 0; /* a copy homed elsewhere: the next fetch decides anew */
    h->reread = 1;
    mem_protect(page, PROT_NONE);
    stats_add(STAT_INVALIDATIONS, 1);
    PROFILE_PAGE(PROF_INVAL, 0, page, 0);
}

/* DSM_CHECK: a page's version at its home only grows (each diff applied
 * adds one; the page moves with its version), so a copy installed here is
 * never older than one installed before (`had`), nor than `need`. */
void hlrc_check_version(size_t page, uint32_t had, uint32_t need, uint32_t got, const char *how)
{
    if (check_on() && (got < had || got < need))
        check_violated("hlrc: page versions never go backwards",
                       "page %zu: node %d %s version %u, having had %u and needing %u (home: node %d)",
                       page, job()->rank, how, got, had, need, mem_home(page));
}

/* Hides a copy that may hold writes of intervals this node has not seen
 * (coherence.h, "catching up"): no access until a catch-up begun from now
 * on has ended. Caller holds the fault lock (a copy homed elsewhere) or
 * hlrc.lock (at the home). */
void hlrc_hide(size_t page)
{
    hlrc.pages[page].hidden = 1;
    hlrc.pages[page].hidden_at = coherence_pull_mark();
}

/* Whether a hidden page may be shown to the program now: once a
 * catch-up begun after it was hidden has ended, at once. Otherwise, with
 * one thread it may, and is no longer hidden: the faulting thread (the
 * only one) catches up before its access is retried. With several, it
 * stays hidden from all of them until then (which this thread's
 * catch-up will be, at worst). Caller holds hlrc.lock and the fault
 * lock. */
static bool may_show(size_t page)
{
    struct hlrc_page *h = &hlrc.pages[page];
    if (!h->hidden)
        return true;
    if (coherence_pulled_since(h->hidden_at)) {
        h->hidden = 0;
        return true;
    }
    coherence_fetched_ahead();
    if (smp_multi())
        return false;
    h->hidden = 0;
    return true;
}

enum ahead { AHEAD_NONE, AHEAD_READ, AHEAD_WRITE };

static bool fetch_ended(void *arg)
{
    const struct hlrc_page *h = arg;
    pthread_mutex_lock(&hlrc.lock);
    bool ended = !h->fetching;
    pthread_mutex_unlock(&hlrc.lock);
    return ended;
}

/* Waits, the fault lock dropped, while another thread's fetch of the page
 * is in flight. Returns whether it waited (the page's state may have
 * changed). Caller holds the fault lock, and holds it again on return. */
static bool wait_for_fetch(size_t page)
{
    struct hlrc_page *h = &hlrc.pages[page];
    bool waited = false;
    while (h->fetching) {
        coherence_unlock();
        ipc_wait(fetch_ended, h, 0);
        coherence_lock();
        waited = true;
    }
    return waited;
}

/* The page from `home`, the fault lock dropped across the round trip
 * (see the head of this file); again while a notice applied meanwhile
 * named a version newer than the one that came. The caller installs the
 * page and then ends the fetch (end_fetch). Caller holds the fault lock,
 * and holds it again on return. */
static enum home_status fetch_unlocked(size_t page, int home, uint32_t *version, bool *unseen)
{
    struct hlrc_page *h = &hlrc.pages[page];
    pthread_mutex_lock(&hlrc.lock);
    h->fetching = 1;
    pthread_mutex_unlock(&hlrc.lock);
    for (;;) {
        uint32_t need = h->need;
        coherence_unlock();
        enum home_status status = home_fetch(page, home, need, version, unseen, NULL);
        coherence_lock();
        if (status != HOME_DATA || *version >= h->need)
            return status;
    }
}

/* The page installed: its fetch is over. Returns whether one was, whose
 * waiters the caller wakes (ipc_notify) once it has dropped hlrc.lock.
 * Caller holds hlrc.lock. */
static bool end_fetch(struct hlrc_page *h)
{
    bool was = h->fetching;
    h->fetching = 0;
    return was;
}

/* Makes an invalid page valid (read-only), fetching ahead as `ahead`
 * says. Caller holds the fault lock. */
static void make_valid(size_t page, enum ahead ahead)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    if (wait_for_fetch(page) && e->state != PAGE_INVALID)
        return; /* another thread's fetch brought it */
    int home = home_lookup(page);
    if (home != job()->rank) {
        void (*also)(size_t, int) = NULL;
        size_t depth = 0;
        if (ahead == AHEAD_READ) {
            also = hlrc_read_ahead;
            hlrc_stream_for(page);
            depth = hlrc_ahead_depth();
        } else if (ahead == AHEAD_WRITE && home >= 0 && (depth = hlrc_write_ahead_depth(page, home))) {
            also = hlrc_write_ahead;
        }
        if (also) { /* the page itself has room already (cache_touch) */
            size_t room = cache_reserve(1 + depth);
            hlrc.ahead_room = room ? room - 1 : 0;
        }
        uint32_t version;
        /* One-sided first, where the home publishes the page (oneside.c);
         * not while homes may move, whose decisions count the requests;
         * nor while a diff of ours is unacknowledged (a notice made a
         * dirty page send its diff, and invalidated it, in this acquire):
         * a request follows that diff to the home and is served after it,
         * but a get may read the page before the diff is applied, and so
         * lose our own writes under a version that claims them. */
        /* Nor while catching up: a get cannot say whether the copy holds
         * writes we have not seen (unseen_by). */
        pthread_mutex_lock(&hlrc.lock);
        bool diffs_out = hlrc.outstanding > 0;
        pthread_mutex_unlock(&hlrc.lock);
        bool unseen = false;
        bool got = home >= 0 && oneside_on() && !migrate_counts_writes() && !diffs_out &&
                   !coherence_catching_up() && oneside_fetch(page, home, h->need, &version);
        if (got) {
            stats_add(STAT_PAGES_FETCHED, 1);
            PROFILE_PAGE(PROF_FETCH, PROF_FETCH_GET, page, 0);
            if (also)
                also(page, home);
        }
        /* Alone, with threads: the round trip without the fault lock. */
        bool alone = !got && smp_multi() && home >= 0 && !depth && !cache_frames();
        if (alone && also) {
            also(page, home); /* read-ahead's record of the fault; nothing fetched */
            also = NULL;
        }
        enum home_status status = got     ? HOME_DATA
                                  : alone ? fetch_unlocked(page, home, &version, &unseen)
                                          : home_fetch(page, home, h->need, &version, &unseen, also);
        if (status == HOME_DATA) {
            hlrc_check_version(page, h->version, h->need, version, "fetched");
            h->version = version;
            if ((version > h->need || unseen) && coherence_catching_up()) {
                /* With threads, hidden from all of them until a catch-up
                 * begun now has ended: another thread polling the page
                 * would otherwise read the flag in it at once, and then
                 * data this one's catch-up has not yet invalidated. */
                if (smp_multi())
                    hlrc_hide(page);
                coherence_fetched_ahead();
            }
            /* With other threads on the node a pull could land while one
             * reads the page, or twins it for writing (docs/design.md).
             * Only a read re-reads: a page this node overwrites once a
             * phase while another node rewrites it in between (NPB BT's
             * lhs in x_solve) would be pulled at each of the other's
             * notices and read by nobody here. */
            if (h->reread && ahead == AHEAD_READ && !smp_multi())
                h->pull = hlrc.pull_credit;
            h->reread = 0;
        }
    }
    /* Under the lock, the delivery thread hiding a home page a diff
     * changes (hlrc_apply_diff) either before (the page stays hidden) or
     * after (it takes the access away itself). */
    pthread_mutex_lock(&hlrc.lock);
    e->state = PAGE_READ;
    mem_protect_now(page, may_show(page) ? PROT_READ : PROT_NONE);
    bool fetched_alone = end_fetch(h);
    pthread_mutex_unlock(&hlrc.lock);
    if (fetched_alone)
        ipc_notify(); /* threads waiting for this fetch (wait_for_fetch) */
    hlrc_settle_pulls();
    mem_protect_flush();
}

void hlrc_read_fault(size_t page) { make_valid(page, AHEAD_READ); }

/* A hidden page's fault (hide_if_catching_up, make_valid): accessible as
 * its state says, unless it must stay hidden until this thread has caught
 * up. Returns whether it is accessible. Caller holds the fault lock. */
static bool reveal(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    pthread_mutex_lock(&hlrc.lock);
    bool shown = may_show(page);
    if (e->state != PAGE_INVALID)
        mem_protect_now(page, !shown ? PROT_NONE
                              : e->state == PAGE_WRITE ? PROT_READ | PROT_WRITE : PROT_READ);
    pthread_mutex_unlock(&hlrc.lock);
    return shown;
}

void hlrc_reveal(size_t page) { reveal(page); }

/* After the program's own protection changes of these pages: a page
 * hidden meanwhile stays hidden. */
void hlrc_rehide(const uint32_t *pages, size_t n)
{
    if (!coherence_catching_up())
        return;
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < n; i++)
        if (hlrc.pages[pages[i]].hidden)
            mem_protect_now(pages[i], PROT_NONE);
    pthread_mutex_unlock(&hlrc.lock);
}

/* Puts a page on the dirty list (it was written here since the last
 * release). Caller holds hlrc.lock; the page is not on it yet. */
void hlrc_dirty_add(size_t page)
{
    if (hlrc.ndirty == hlrc.cap) {
        hlrc.cap = hlrc.cap ? hlrc.cap * 2 : 256;
        hlrc.dirty = realloc(hlrc.dirty, hlrc.cap * sizeof *hlrc.dirty);
        if (!hlrc.dirty)
            log_fatal("out of memory for the dirty-page list");
    }
    hlrc.pages[page].dirty_idx = (uint32_t)hlrc.ndirty;
    hlrc.dirty[hlrc.ndirty++] = (struct dirty_page){(uint32_t)page, 0, 0};
    mem.pages[page].dirty = 1;
}

/* A valid page homed elsewhere becomes writable: a twin, and the
 * interval's dirty list. The caller flushes the protection change.
 * Caller holds the fault lock. */
static void begin_writing(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    mem_twin_make(page);
    if (!e->dirty) {
        pthread_mutex_lock(&hlrc.lock);
        hlrc_dirty_add(page);
        pthread_mutex_unlock(&hlrc.lock);
    }
    e->state = PAGE_WRITE;
    mem_protect(page, PROT_READ | PROT_WRITE);
}

void hlrc_write_fault(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    size_t ahead_end = 0;
    if (h->hidden && !reveal(page))
        return; /* this thread catches up first; the store faults again */
    if (e->state == PAGE_INVALID) {
        make_valid(page, AHEAD_WRITE);
        ahead_end = hlrc.write_ahead_end;
        hlrc.write_ahead_end = 0;
        if (h->hidden)
            return; /* fetched ahead, with threads: as above */
    }
    if (e->state != PAGE_WRITE && mem_home(page) == job()->rank) {
        /* Under the lock, so that a fetch served meanwhile either comes
         * before (the page is then shared, and tracked here) or sees it
         * writable (and tracks it itself). */
        pthread_mutex_lock(&hlrc.lock);
        if (h->shared && !e->twin && !h->unsnapped) {
            if (h->patience < RETIRE_PATIENCE_MAX)
                h->patience++; /* written again, untracked: more patience */
            hlrc_track(page);
        }
        e->state = PAGE_WRITE;
        hlrc_publish(page); /* before the page is writable: from its snapshot now, or not at all */
        /* Under the lock: a diff's hiding (hlrc_apply_diff) comes before or after. */
        mem_protect_now(page, h->hidden ? PROT_NONE : PROT_READ | PROT_WRITE);
        pthread_mutex_unlock(&hlrc.lock);
    } else if (e->state != PAGE_WRITE) {
        begin_writing(page);
        /* The pages fetched ahead with it are about to be written too
         * (those still valid: a pull may settle invalid; homed elsewhere:
         * a page may have moved here, migrate.c). */
        for (size_t q = page + 1; q < ahead_end; q++)
            if (mem.pages[q].state == PAGE_READ && mem_home(q) != job()->rank)
                begin_writing(q);
        mem_protect_flush();
    }
}
