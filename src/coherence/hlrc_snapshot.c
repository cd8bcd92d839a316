/*
 * hlrc_snapshot.c — the home's own writes in hlrc: the snapshots of its
 * shared pages, and their compares and notices at each release.
 *
 * The home's own writes need no twin and no diff, but its release must
 * announce those that other nodes' copies lack. A home page no other node
 * has fetched needs nothing: it stays writable, and nobody holds a copy to
 * invalidate. A shared home page that the home may write is *tracked*: it
 * has a snapshot, the content every copy elsewhere holds (fetches are
 * served from the snapshot, diffs are applied to both), and at each
 * release the home compares the page with its snapshot: if they differ, the
 * version advances, a notice goes out and the snapshot is refreshed. So a
 * page the home writes every interval costs a compare and a copy per
 * release instead of a write fault and a write-protect (on this machine
 * each is tens of µs, and serialises with the other CPU's page-table work),
 * and a page fetched after the home's last write is never announced (no
 * needless invalidation). A tracked page unchanged for RETIRE_AFTER
 * releases is write-protected and forgets its snapshot; the home's next
 * write faults and tracks it again.
 *
 * Snapshots are copies too: under DSM_LOCAL_MEM a home holds at most the
 * limit's number of them (homes in a file may be larger than RAM; a
 * snapshot per served page would not be). A shared page the home may
 * write beyond that is *unsnapped* instead: served from the page itself,
 * announced at the next release whether or not it changed, and
 * write-protected then, so that a later write faults — hlrc without the
 * snapshot refinement.
 *
 * Pages are tracked by the home's write fault (hlrc_fetch.c) and by the
 * fetches it serves (hlrc_home.c), announced by its release
 * (hlrc_release.c), under the fault lock; the lists and snapshots under
 * hlrc.lock, which the delivering thread takes to serve and apply diffs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/check.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/migrate.h"
#include "coherence/oneside.h"

/* Compares a home makes before DSM_WRITE_WATCH=auto starts the kernel's
 * write watch (mem/watch.c). Registering the region's views with a
 * userfaultfd costs every later read fault of the program the kernel's
 * fault-around (it maps a faulting page's mapped neighbours at once, but
 * not in a range registered for write-protection): bench/apps LU 1024 on
 * 2 nodes took 11,100 page faults instead of 8,500 and 8 % longer with
 * the watch, which spared it 1,700 compares. A compare costs 0.5-1 us: a
 * home that has made this many (about 10 ms of them) is one whose pages
 * are compared often enough for the watch to pay (NAS BT W: 14-23
 * million a node; bench/apps' programs: at most 4,000). */
#define WATCH_AFTER_COMPARES 16384

/* Gives a home page a snapshot of its present content and puts it on the
 * tracked list; under DSM_LOCAL_MEM, once the limit's number of snapshots
 * exist, puts it on the unsnapped list instead. Caller holds hlrc.lock. */
void hlrc_track(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    size_t most = cache_frames();
    if (most && hlrc.ntracked >= most) {
        if (!h->unsnapped) {
            h->unsnapped = 1;
            page_list_add(&hlrc.unsnapped, &hlrc.nunsnapped, &hlrc.cap_unsnapped, page);
            stats_add(STAT_HOME_UNSNAPPED, 1);
        }
        return;
    }
    e->twin = mem_copy_get();
    /* Armed first: a write that the copy misses is one the watch sees. */
    mem_watch_arm(page);
    h->unarmed = 0;
    memcpy(e->twin, mem_sys(page), mem.page_size);
    h->quiet = 0;
    page_list_add(&hlrc.tracked, &hlrc.ntracked, &hlrc.cap_tracked, page);
}

/* Drops a home page's snapshot. Caller holds hlrc.lock. */
void hlrc_snapshot_drop(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    mem_copy_put(e->twin);
    e->twin = NULL;
}

/* Publishes what a request for a home page would get now (oneside.h), for
 * one-sided fetches: its snapshot, while it has one (the home writes the
 * page freely); the page, while the home cannot write it without a fault
 * that comes here first; nothing while the home writes it unnoticed
 * (untracked or unsnapped), nor before some node fetched it with a request
 * (a page not `shared` is neither tracked nor announced when the home
 * writes it: nobody else is meant to hold it). Called after every change
 * of the page, its snapshot, version or state at the home. Caller holds
 * hlrc.lock. */
void hlrc_publish(size_t page)
{
    if (!oneside_on())
        return;
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    const void *content = NULL;
    if (mem_home(page) == job()->rank && h->shared && !h->unsnapped) {
        if (e->twin)
            content = e->twin;
        else if (e->state != PAGE_WRITE)
            content = mem_sys(page);
    }
    oneside_publish(page, h->version, content);
}

/* The bytes, by 8-byte words, in which two copies of a page differ: the
 * home's own modification, for home migration. */
static size_t changed_bytes(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    size_t n = 0;
    for (size_t i = 0; i < mem.page_size / sizeof *x; i++)
        n += x[i] != y[i];
    return n * sizeof *x;
}

/* Puts tracked[0, n) in ascending order, for the write watch's scans (one
 * a run of neighbouring pages). The list stays in order from one release
 * to the next but for the pages tracked since, at its end: they are
 * sorted alone and merged in. Caller holds hlrc.lock. */
static void sort_tracked(size_t n)
{
    uint32_t *t = hlrc.tracked;
    size_t k = 1;
    while (k < n && t[k] > t[k - 1])
        k++;
    if (k >= n)
        return;
    page_list_sort(t + k, n - k);
    uint32_t *head = malloc(k * sizeof *head);
    if (!head)
        log_fatal("out of memory sorting %zu tracked home pages", n);
    memcpy(head, t, k * sizeof *head);
    size_t i = 0, j = k, out = 0;
    while (i < k && j < n)
        t[out++] = head[i] < t[j] ? head[i++] : t[j++];
    while (i < k)
        t[out++] = head[i++];
    free(head);
}

/* Starts the kernel's write watch (WATCH_AFTER_COMPARES) at the end of a
 * release's compares: tracked[0, looked) were just compared, so their
 * snapshots are the pages and nothing writes them until the program runs
 * on (see release): armed now, every later write is seen. Any after them
 * were tracked during this release, unarmed, and the program may have
 * written them since: each is compared at its next release and armed
 * then (unarmed). Caller holds hlrc.lock. */
static void start_watch(size_t looked)
{
    if (!mem_watch_start()) /* once: where the kernel has none, false at once */
        return;
    for (size_t i = 0; i < hlrc.ntracked; i++) {
        if (i < looked)
            mem_watch_arm(hlrc.tracked[i]);
        else
            hlrc.pages[hlrc.tracked[i]].unarmed = 1;
    }
}

/* Announces the home's own writes: each tracked page that differs from its
 * snapshot gets a new version and a notice in n (from n[count]); unless
 * a fetch was served, or another node's diff applied, in its last
 * SHARED_AFTER_FETCH changes, it is then no longer shared: its snapshot
 * dropped, untracked, left writable. The notice reaches every node whose
 * copy is older before that node may see any later write of ours
 * (intervals travel in order), and a node that fetches it again makes it
 * shared and tracked again (serve_locked), so the home's later writes
 * need neither a compare nor a fault until then; a page fetched at every
 * interval stays tracked (its snapshot refreshed, as before). NAS MG
 * class A on 2 nodes: the pages moved to node 1 (migrate.c) stayed
 * shared, retired between their writes (about 100 releases apart) and
 * took 25,000 write faults of 12 us an iteration, where node 0's own
 * pages, never fetched, took none: 1.79 s an iteration, now 0.4 s. A
 * page quiet for RETIRE_AFTER releases is untracked and made read-only
 * (write-protected at release_sent; serving it from the page itself is
 * already right). Only the first `limit`
 * tracked pages are looked at: any after them were tracked by fetches
 * served during this release, while the program writes nothing, so they
 * cannot differ yet (in a release aside, they differ at the next one).
 * In a release aside the first `limit` were write-protected before (see
 * release), so no write falls between a compare and the retirement.
 * Returns the new count. Caller holds the fault lock. */
uint32_t hlrc_announce_home_writes(struct notice *n, uint32_t count, size_t limit,
                                   uint32_t interval)
{
    size_t kept = 0;
    pthread_mutex_lock(&hlrc.lock);
    /* The pages the kernel saw written since their last look (all of them
     * without the write watch): only those can differ from their
     * snapshots. Every tracked page is listed, so that no scan takes the
     * record of one tracked during this release (after `limit`: the
     * program may write it at once in a release aside, and its next
     * release must see that). */
    size_t all = hlrc.ntracked;
    if (all > hlrc.cap_written) {
        free(hlrc.written);
        hlrc.cap_written = all > 2 * hlrc.cap_written ? all : 2 * hlrc.cap_written;
        hlrc.written = malloc(hlrc.cap_written);
        if (!hlrc.written)
            log_fatal("out of memory for the list of %zu home pages written", all);
    }
    if (mem_watch_on())
        sort_tracked(limit);
    mem_watch_collect(hlrc.tracked, all, limit, hlrc.written);
    size_t unwritten = 0, looked_kept = 0;
    for (size_t i = 0; i < hlrc.ntracked; i++) {
        size_t page = hlrc.tracked[i];
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        if (i < limit) {
            bool written = hlrc.written[i] || h->unarmed;
            unwritten += !written;
            /* DSM_CHECK: what the watch calls unwritten is its snapshot. */
            if (!written && check_on() && memcmp(mem_sys(page), e->twin, mem.page_size))
                check_violated("hlrc: a home page the write watch found unwritten equals its snapshot",
                               "page %zu differs from its snapshot (tracked %zu of %zu)", page, i,
                               limit);
            /* Home migration counts the bytes (a compare of its own). */
            size_t changed = !written                  ? 0
                             : migrate_counts_writes() ? changed_bytes(mem_sys(page), e->twin)
                                                       : memcmp(mem_sys(page), e->twin, mem.page_size) != 0;
            if (changed) {
                if (PROFILE_ON)
                    mem_profile_home_writes(page, mem_sys(page), e->twin, hlrc.diffbuf);
                if (migrate_counts_writes())
                    migrate_note_write(page, job()->rank, changed);
                n[count++] = (struct notice){(uint32_t)page, ++h->version};
                hlrc_note_writer(page, job()->rank, interval);
                /* Every copy elsewhere is older than this notice (a copy
                 * served since the last release is the snapshot) and is
                 * invalidated by it before its holder may see any later
                 * write of ours: unless it was fetched lately, the home
                 * writes it from here as a page nobody holds — untracked,
                 * writable, announced by nothing — until another node
                 * fetches it again. */
                if (h->fetched == 0) {
                    hlrc_snapshot_drop(page);
                    h->unarmed = 0;
                    h->shared = 0;
                    hlrc_publish(page);
                    continue;
                }
                h->fetched--;
                memcpy(e->twin, mem_sys(page), mem.page_size);
                h->quiet = 0;
                hlrc_publish(page);
            } else if (++h->quiet >= RETIRE_AFTER << h->patience) {
                hlrc_snapshot_drop(page);
                h->unarmed = 0; /* tracked again, it is armed then */
                if (e->state == PAGE_WRITE) {
                    e->state = PAGE_READ;
                    page_list_add(&hlrc.unprotected, &hlrc.nunprotected, &hlrc.cap_unprotected, page);
                }
                hlrc_publish(page);
                continue;
            }
            /* Its snapshot is the page, and nothing writes it until the
             * program runs on (see release): armed from here, its next
             * write is seen. */
            if (h->unarmed) {
                mem_watch_arm(page);
                h->unarmed = 0;
            }
            looked_kept++;
        }
        hlrc.tracked[kept++] = (uint32_t)page;
    }
    hlrc.ntracked = kept;
    hlrc.compares += limit - unwritten;
    if (!mem_watch_on() && mem.write_watch != WRITE_WATCH_OFF &&
        (mem.write_watch == WRITE_WATCH_ON || hlrc.compares >= WATCH_AFTER_COMPARES))
        start_watch(looked_kept);
    pthread_mutex_unlock(&hlrc.lock);
    stats_add(STAT_HOME_COMPARES, limit - unwritten);
    stats_add(STAT_HOME_UNWRITTEN, unwritten);
    return count;
}

/* Announces every unsnapped page (it may have changed: there is nothing
 * to compare with) and makes it read-only, so that the home's next write
 * faults; from n[count]. Aside, the program runs on: each page is
 * write-protected before it is announced, so that no write falls between.
 * Returns the new count. Caller holds the fault lock. */
uint32_t hlrc_announce_unsnapped(struct notice *n, uint32_t count, size_t limit, bool aside,
                                 uint32_t interval)
{
    pthread_mutex_lock(&hlrc.lock);
    if (aside) {
        for (size_t i = 0; i < limit; i++)
            if (mem.pages[hlrc.unsnapped[i]].state == PAGE_WRITE) {
                mem.pages[hlrc.unsnapped[i]].state = PAGE_READ;
                mem_protect(hlrc.unsnapped[i], hlrc.pages[hlrc.unsnapped[i]].hidden ? PROT_NONE : PROT_READ);
            }
        mem_protect_flush();
    }
    for (size_t i = 0; i < limit; i++) {
        size_t page = hlrc.unsnapped[i];
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        h->unsnapped = 0;
        n[count++] = (struct notice){(uint32_t)page, ++h->version};
        hlrc_note_writer(page, job()->rank, interval);
        if (e->state == PAGE_WRITE) {
            e->state = PAGE_READ;
            page_list_add(&hlrc.unprotected, &hlrc.nunprotected, &hlrc.cap_unprotected, page);
        }
        hlrc_publish(page); /* read-only from here (write-protected before the program runs on) */
    }
    /* Any after `limit` were unsnapped by fetches served during this
     * release: they stay for the next. */
    if (limit) { /* (an empty list may be NULL) */
        memmove(hlrc.unsnapped, hlrc.unsnapped + limit, (hlrc.nunsnapped - limit) * sizeof *hlrc.unsnapped);
        hlrc.nunsnapped -= limit;
    }
    pthread_mutex_unlock(&hlrc.lock);
    return count;
}
