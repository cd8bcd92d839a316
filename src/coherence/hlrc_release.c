/*
 * hlrc_release.c — hlrc's release: every dirty page's diff goes home
 * and is acknowledged with the page's new version, the home's own writes
 * are announced (hlrc_snapshot.c), and the interval of write notices is
 * recorded (interval.c). Its pages are write-protected after; the
 * acknowledgements arrive here on the delivering thread (hlrc_diff_acked).
 *
 * A release's write-protects (of the pages it retires, and of the pages
 * homed elsewhere whose diffs it sent) wait until its message is out
 * (release_sent): until the program runs on, nothing writes those pages.
 * Removing rights costs a page-table change per OS page, and here each
 * exits to the hypervisor (a retirement of 18 pages took 60-420 µs),
 * which the nodes waiting for the release need not wait for.
 *
 * An unlock whose lock stays on the node leaves its release pending
 * (lock.c; docs/protocols.md). When another node asks for the lock, a
 * thread of lock.c runs it *aside* while the program runs on: then the
 * dirty pages, and the home's pages it may write, are write-protected
 * before their diffs are taken and their snapshots compared, so that no
 * later store is in the interval while an earlier one is not. With
 * threads on the node (--threads) every release but a barrier's is one
 * aside.
 *
 * A barrier's release does not wait for the acknowledgements of the diffs
 * homed at the node's parent in the barrier's tree: its arrival follows
 * them there, and the parent fills their versions into it (home.c,
 * home_fill_arrival); the writer's interval is announced by nothing else
 * until release_sent has the acknowledgements (release_arriving,
 * arrival_acked). The diff round trip then overlaps the barrier's.
 *
 * Under the fault lock (coherence_lock); the count of diffs in flight and
 * the dirty list's versions under hlrc.lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/migrate.h"
#include "ipc/ipc.h"

/* Sends the page's diff home, if it has a twin and changed. `parent`
 * (>= 0, a barrier's release gathering its diffs): the node's parent in
 * the barrier's tree, whose pages' diffs the arrival may follow without
 * waiting for their acknowledgements — where this node knows the parent
 * is the home for certain (its acknowledgement came since the last
 * migration round, or homes never move), since a diff a former home
 * passes on is acknowledged by the new home alone. */
void hlrc_flush_page(size_t page, int parent)
{
    /* COH_NO_PARENT (a flush's release): every diff unawaited, its home's
     * acknowledgement awaited at release_sent whoever sends it. */
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    if (!e->twin)
        return;
    size_t len = mem_twin_diff(page, hlrc.diffbuf);
    if (len == 0)
        return;
    pthread_mutex_lock(&hlrc.lock);
    bool before = parent == COH_NO_PARENT ||
                  (parent >= 0 && mem_home(page) == parent &&
                   (!migrate_counts_writes() || h->acked_round == migrate_rounds()));
    hlrc.outstanding++;
    if (before) {
        hlrc.outstanding_arrival++;
        hlrc.dirty[h->dirty_idx].before_arrival = 1;
    } else {
        hlrc.outstanding_other++;
    }
    pthread_mutex_unlock(&hlrc.lock);
    if (before && parent >= 0) {
        home_diff_before_arrival(parent);
        stats_add(STAT_DIFFS_BEFORE_ARRIVAL, 1);
    } else if (before) {
        stats_add(STAT_DIFFS_BESIDE_ASKS, 1);
    }
    home_send_diff(page, h->dirty_idx, hlrc.diffbuf, len, interval_next());
}

/* A dirty page's diff acknowledged at d->version: our copy is the home's
 * new version only if no other writer's diff came in between; otherwise a
 * later notice will tell. */
static void own_version(const struct dirty_page *d)
{
    struct page_entry *e = &mem.pages[d->page];
    struct hlrc_page *h = &hlrc.pages[d->page];
    if (e->state != PAGE_INVALID && d->version == h->version + 1)
        h->version = d->version;
}

/* The release: every dirty page's diff goes home and is acknowledged, the
 * home's own writes are announced, and the interval is recorded. On the
 * program's thread (`aside` false) nothing writes meanwhile, so the
 * write-protects wait for release_sent. Aside (lock.c's releaser thread,
 * for a release kept on the node) the program runs on: each dirty page is
 * write-protected before its diff is taken, so a later write faults and
 * waits for the fault lock, which we hold, and then starts a new twin.
 * `parent` >= 0: a barrier's release whose arrival goes to that node
 * (release_arriving): the diffs homed there are not waited for (see
 * hlrc_flush_page); returns true when some were not, the interval then
 * unacked until release_sent (arrival_acked). */
bool hlrc_release_locked(bool aside, int parent)
{
    pthread_mutex_lock(&hlrc.lock);
    size_t ntracked = hlrc.ntracked, nunsnapped = hlrc.nunsnapped;
    pthread_mutex_unlock(&hlrc.lock);
    if (!hlrc.ndirty && !ntracked && !nunsnapped)
        return false;
    /* Only the program's own release, with one thread on the node: at a
     * barrier, with no flush ever (whose answers and catch-ups would read
     * versions this node does not have yet while the barrier waits for the
     * other nodes, theirs waiting for this one's); at a flush
     * (COH_NO_PARENT), which waits for nothing but the acknowledgements
     * before release_sent, its answers and catch-ups waiting meanwhile. */
    pthread_mutex_lock(&hlrc.lock);
    bool in_flight = hlrc.outstanding > 0; /* a notice's diff (apply_notices): its ack names no flag */
    pthread_mutex_unlock(&hlrc.lock);
    if (aside || smp_multi() || in_flight || (parent >= 0 && coherence_catching_up()))
        parent = -1;
    struct notice *n = malloc((hlrc.ndirty + ntracked + nunsnapped + 1) * sizeof *n);
    if (!n)
        log_fatal("out of memory for write notices");
    for (size_t i = 0; i < hlrc.ndirty; i++) {
        size_t page = hlrc.dirty[i].page;
        struct page_entry *e = &mem.pages[page];
        if (e->state != PAGE_WRITE)
            continue;
        e->state = PAGE_READ;
        if (aside)
            mem_protect(page, PROT_READ);
        else
            page_list_add(&hlrc.unprotected, &hlrc.nunprotected, &hlrc.cap_unprotected, page);
    }
    if (aside) {
        /* The home's tracked pages too, before they are compared: a
         * program that writes data on one home page and then a flag on
         * another would otherwise have the flag's store in this interval
         * and the data's in the next, when the compare passed the data's
         * page before the stores (issue 40: a node's other thread, or the
         * program beside lock.c's releaser). A later store faults, waits
         * for the fault lock, and makes the page writable again. */
        pthread_mutex_lock(&hlrc.lock);
        for (size_t i = 0; i < ntracked; i++) {
            size_t page = hlrc.tracked[i];
            if (mem.pages[page].state != PAGE_WRITE)
                continue;
            mem.pages[page].state = PAGE_READ;
            mem_protect(page, hlrc.pages[page].hidden ? PROT_NONE : PROT_READ);
        }
        /* Before the diffs and compares (no write may follow them), and
         * before the lock is dropped: a diff applied once it is dropped
         * hides its page at once (hide_if_catching_up), and a read-only
         * protection chosen before that diff but applied after it would
         * open the hidden page, whose program would then read the diff
         * (a flag) without catching up, and stale data after it. */
        mem_protect_flush();
        pthread_mutex_unlock(&hlrc.lock);
    }
    /* The diffs leave together: those of one home as one message (or a
     * few, a datagram each), applied and acknowledged together
     * (home_diffs_begin), each message one wake-up at its home. NPB 3.0 C
     * BT W on 2 nodes sent 24 diffs a release, each its own message and
     * acknowledgement. */
    ipc_batch_begin();
    home_diffs_begin();
    for (size_t i = 0; i < hlrc.ndirty; i++)
        hlrc_flush_page(hlrc.dirty[i].page, parent);
    home_diffs_end();
    ipc_batch_end();
    /* The interval this release creates (the fault lock held: no other). */
    uint32_t interval = interval_next();
    uint32_t count = hlrc_announce_home_writes(n, 0, ntracked, interval);
    count = hlrc_announce_unsnapped(n, count, nunsnapped, aside, interval);
    uint64_t t0 = clock_ns();
    coherence_wait_for(&hlrc.lock, &hlrc.outstanding_other, 0);
    stats_add(STAT_T_DIFF_SEND_NS, clock_ns() - t0);

    uint32_t dirty_at = count;
    bool pending = false;
    for (size_t i = 0; i < hlrc.ndirty; i++) {
        struct dirty_page *d = &hlrc.dirty[i];
        struct page_entry *e = &mem.pages[d->page];
        e->dirty = 0;
        if (d->before_arrival) {
            n[count++] = (struct notice){d->page, NOTICE_PENDING};
            pending = true;
            continue; /* its version comes with the acknowledgement (arrival_acked) */
        }
        if (!d->version)
            continue; /* written, but nothing changed */
        n[count++] = (struct notice){d->page, d->version};
        own_version(d);
    }
    if (pending) {
        interval_create_unacked(n, count);
        hlrc.arrival_n = n;
        hlrc.arrival_count = count;
        hlrc.arrival_dirty_at = dirty_at;
        return true; /* the dirty list stays: the acknowledgements name their entries */
    }
    hlrc.ndirty = 0;
    if (count)
        interval_create(n, count);
    free(n);
    return false;
}

/* The barrier's arrival is out: the acknowledgements of the diffs it
 * followed give their versions to the interval, which the parent has
 * filled in alike. Caller holds the fault lock (since release_arriving). */
static void arrival_acked(void)
{
    uint64_t t0 = clock_ns();
    coherence_wait_for(&hlrc.lock, &hlrc.outstanding_arrival, 0);
    coherence_wait_for(&hlrc.lock, &hlrc.outstanding, 0);
    stats_add(STAT_T_DIFF_SEND_NS, clock_ns() - t0);
    struct notice *n = hlrc.arrival_n;
    uint32_t k = hlrc.arrival_dirty_at;
    for (size_t i = 0; i < hlrc.ndirty; i++) {
        struct dirty_page *d = &hlrc.dirty[i];
        if (!d->before_arrival && !d->version)
            continue; /* no notice: as hlrc_release_locked skipped it */
        if (k >= hlrc.arrival_count || n[k].page != d->page)
            log_fatal("internal error: page %u's notice is not where its release put it", d->page);
        if (d->before_arrival) {
            if (!d->version)
                log_fatal("internal error: page %u's diff was acknowledged without a version", d->page);
            n[k].version = d->version;
            own_version(d);
        }
        k++;
    }
    interval_acked(n, hlrc.arrival_count);
    free(n);
    hlrc.arrival_n = NULL;
    hlrc.ndirty = 0;
}

static void release(bool aside)
{
    coherence_lock();
    hlrc_release_locked(aside, -1);
    coherence_unlock();
}

/* The barrier's release (coherence_ops.release_arriving): when it leaves
 * diffs unacknowledged, the fault lock stays held until release_sent, so
 * that no other release (lock.c's releaser) makes an interval meanwhile. */
bool hlrc_release_arriving(int parent)
{
    coherence_lock();
    bool open = hlrc_release_locked(smp_concurrent(), parent);
    if (!open)
        coherence_unlock();
    return open;
}

/* With T > 1 other threads of the node may write while a thread releases:
 * every release is then made as one aside is, but at a barrier, where the
 * leader runs it with the node's other threads parked. */
void hlrc_release(void) { release(smp_concurrent()); }
void hlrc_release_aside(void) { release(true); }

/* The release's write-protects, its message being out. */
void hlrc_release_sent(void)
{
    if (hlrc.arrival_n)
        arrival_acked(); /* the fault lock held since release_arriving */
    else
        coherence_lock();
    page_list_sort(hlrc.unprotected, hlrc.nunprotected);
    for (size_t i = 0; i < hlrc.nunprotected; i++)
        mem_protect(hlrc.unprotected[i], PROT_READ);
    mem_protect_flush();
    hlrc_rehide(hlrc.unprotected, hlrc.nunprotected);
    hlrc.nunprotected = 0;
    coherence_unlock();
}

void hlrc_diff_acked(int src, const struct diff_ack *a)
{
    pthread_mutex_lock(&hlrc.lock);
    if (a->idx >= hlrc.ndirty || hlrc.dirty[a->idx].page != a->page || hlrc.outstanding <= 0)
        log_fatal("node %d acknowledged a diff that was not sent", src);
    if (a->version > hlrc.dirty[a->idx].version)
        hlrc.dirty[a->idx].version = a->version;
    if (hlrc.dirty[a->idx].before_arrival)
        hlrc.outstanding_arrival--;
    else
        hlrc.outstanding_other--;
    hlrc.outstanding--;
    if (src == mem_home(a->page))
        hlrc.pages[a->page].acked_round = migrate_rounds();
    pthread_mutex_unlock(&hlrc.lock);
}
