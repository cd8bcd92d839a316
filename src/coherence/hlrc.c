/*
 * hlrc.c — home-based lazy release consistency (Zhou, Iftode and Li, 1996;
 * seed 000's HLRC), with multiple writers.
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
 * A page this node keeps re-reading (fetched again for a read after a
 * notice invalidated it) earns DSM_PULL_CREDIT *pulls*: the next acquires that bring
 * a notice for it fetch the new version at once, all such pages of the
 * acquire together, into the page as it stands (through the system view,
 * while the program waits in the acquire), instead of invalidating it and
 * taking a fault, a round trip and two protection changes at the first
 * read. When the credit is spent the page is invalidated as usual, and
 * earns more only by being read again: a page no longer read costs at
 * most DSM_PULL_CREDIT needless fetches.
 *
 * A barrier's release does not wait for the acknowledgements of the diffs
 * homed at the node's parent in the barrier's tree: its arrival follows
 * them there, and the parent fills their versions into it (home.c,
 * home_fill_arrival); the writer's interval is announced by nothing else
 * until release_sent has the acknowledgements (release_arriving,
 * arrival_acked). The diff round trip then overlaps the barrier's.
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
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "coherence/msgcheck.h"
#include "coherence/migrate.h"
#include "coherence/oneside.h"
#include "ipc/ipc.h"

/* A read-ahead run's bodies (struct run_req, run_rep) are in msgcheck.h. */

struct dirty_page {
    uint32_t page, version;
    uint32_t before_arrival; /* its diff went to the barrier parent, unacknowledged before the arrival */
};

/* hlrc's own state of a page (beside its page_entry). Only the program's
 * thread changes reread, pull and dirty_idx; version, need, pulling,
 * quiet and shared may also be read or changed by the delivering thread,
 * under hlrc.lock. */
struct hlrc_page {
    uint32_t version;   /* version of this node's copy (at the home: the home's) */
    uint32_t need;      /* highest version a write notice applied here named */
    uint32_t dirty_idx; /* its entry in hlrc.dirty, while dirty */
    uint16_t quiet;     /* at the home: releases since the snapshot last changed */
    uint8_t  shared;    /* at the home: some other node has fetched it */
    uint8_t  fetched;   /* at the home: announced changes it stays shared for
                         * (SHARED_AFTER_FETCH at each fetch served and each
                         * other node's diff applied) */
    uint8_t  patience;  /* at the home: retired and written again (see RETIRE_AFTER) */
    uint8_t  reread;    /* invalidated by a notice since its last fetch */
    uint8_t  pull;      /* acquires that may still refresh it in place */
    uint8_t  pulling;   /* a refresh is in flight */
    uint8_t  unsnapped; /* at the home: shared and writable without a snapshot */
    uint8_t  unarmed;   /* at the home: tracked before the write watch started and
                         * not armed yet (compared at its next release, then armed) */
    uint8_t  hidden;    /* no access until this node catches up: at the home,
                         * another node's diff changed it (see apply_diff); with
                         * threads, a copy fetched ahead (see make_valid) */
    uint8_t  unseen;    /* a pull brought it holding writes of intervals this node
                         * may not have seen (see unseen_by) */
    uint64_t hidden_at; /* with threads: coherence_pull_mark() when last hidden */
    uint32_t acked_round; /* migrate_rounds() at its home's last acknowledgement here */
};

/* Releases a tracked home page may stay unchanged before it is
 * write-protected and its snapshot dropped: a page read by others but no
 * longer written (a finished result) stops costing compares. A page the
 * home writes again after its retirement doubles its patience, up to
 * RETIRE_AFTER << RETIRE_PATIENCE_MAX releases: a vector written once in
 * every few barriers (NAS CG's, between its loops and reductions) would
 * otherwise pay a write-protect and a write fault each time (14,000 of
 * them per node in CG class A), where staying tracked costs a compare per
 * release. */
#define RETIRE_AFTER 2
#define RETIRE_PATIENCE_MAX 5

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

/* Announced changes a home page stays shared (tracked, its snapshot
 * published for one-sided reads) after a fetch served or another node's
 * diff applied: a page other nodes fetch, or write, at every interval
 * stays so — its home's writes compared, and counted for home migration
 * (migrate.c), which would otherwise see only the other writers' (NAS BT
 * class W on 2 nodes made 25-40 % more twins and diffs when a written
 * page was unshared however it was shared). One fetched by one-sided
 * reads alone, which the home does not see, is unshared after this many
 * changes and its next reader asks the home (1 read in 5 where every
 * read was one-sided). See announce_home_writes. */
#define SHARED_AFTER_FETCH 4

/* Acquires that refresh a re-read page in place before it must fault
 * again to show it is still read: DSM_PULL_CREDIT, 8 by default
 * (hlrc.pull_credit). */

/* Pages fetched ahead of a read fault at most (see read_ahead): a run
 * request's size; DSM_READ_AHEAD chooses up to it (hlrc.read_ahead). A
 * run's reply says which of its pages are unseen_by in one 32-bit word. */
#define READ_AHEAD_MAX HLRC_READ_AHEAD_MAX
_Static_assert(READ_AHEAD_MAX <= 32, "a run's unseen pages are bits of the reply's aux");

/* Read-ahead's streams (see read_ahead): how many the node follows at
 * once, the read faults it remembers to find a new one's stride in, and
 * the largest stride, in pages, it takes for a stream (a row of a
 * 4096-wide matrix of doubles is 4 pages; a stride of 64 reads 1 page in
 * 64 of a 512 KiB row). */
#define AHEAD_STREAMS    8
#define AHEAD_RECENT     8
#define AHEAD_STRIDE_MAX 64

static DSM_STATE struct {
    pthread_mutex_t    lock;        /* versions, the dirty list, the pulls */
    struct hlrc_page  *pages;       /* per page, mapped at start (zero pages until used) */
    struct dirty_page *dirty;         /* pages written here, homed elsewhere */
    size_t             ndirty, cap;
    uint32_t          *tracked;       /* home pages with a snapshot (under lock) */
    size_t             ntracked, cap_tracked;
    uint8_t           *written;       /* per tracked page: written, by the watch (under lock) */
    size_t             cap_written;
    uint64_t           compares;      /* tracked pages compared at releases, for WATCH_AFTER_COMPARES */
    uint32_t          *unsnapped;     /* shared home pages writable without one */
    size_t             nunsnapped, cap_unsnapped;
    uint32_t          *unprotected;   /* read-only from the release, but for the */
    size_t             nunprotected,  /* write-protect, done at release_sent */
                       cap_unprotected;
    uint32_t          *pulls;         /* pages refreshed by the current acquire */
    size_t             npulls, cap_pulls;
    uint32_t          *to_pull;       /* of them, those whose requests are to go */
    size_t             nto_pull, cap_to_pull;
    int                pulls_due;     /* of them, replies still to come (under lock) */
    struct ahead_stream {         /* read-ahead's streams of faults (see read_ahead) */
        size_t   next;                /* the page its next fault is expected at */
        long     stride;              /* pages from one of its faults to the next */
        unsigned run;                 /* its faults so far */
        uint64_t used;                /* hlrc.ahead_clock when it last faulted */
    } streams[AHEAD_STREAMS];
    size_t             recent[AHEAD_RECENT]; /* the last fetching read faults' pages, + 1 (0: none) */
    uint64_t           ahead_clock;   /* read faults that fetched so far */
    int                ahead_stream;  /* the stream of the fault being fetched, or -1 */
    size_t             ahead_room;    /* pages the page cache has room for ahead */
    size_t             write_ahead_end; /* the page after a write fault's run fetched ahead */
    int                outstanding;  /* diffs sent, not yet acknowledged */
    int                outstanding_arrival; /* of them, those the barrier's arrival follows */
    int                outstanding_other;   /* and the others */
    struct notice     *arrival_n;    /* the unacked interval's notices (release_arriving) */
    uint32_t           arrival_count, arrival_dirty_at; /* its length, where the dirty pages' begin */
    size_t             read_ahead;   /* DSM_READ_AHEAD: at most READ_AHEAD_MAX */
    size_t             write_ahead;  /* DSM_WRITE_AHEAD: at most READ_AHEAD_MAX */
    uint8_t            pull_credit;  /* DSM_PULL_CREDIT */
    unsigned char     *diffbuf;
} hlrc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* What the copies a home serves hold (coherence.h, "catching up"): per
 * page, per writer, the newest interval whose writes to the page are in
 * the content this home serves (a diff's, an atomic's, its own announced
 * at a release). A copy holding a write of an interval its requester may
 * not have seen makes it catch up. Only from this node's first flush
 * (made or asked of it), when `on` is set; before, `seen` alone is kept
 * (one maximum per diff applied), and a page with no vector of its own
 * is taken to hold everything `seen` named then (`start`). Under
 * hlrc.lock. */
static DSM_STATE struct {
    bool       on;
    uint32_t  *seen;     /* per writer, over every page of this home */
    uint32_t  *start;    /* `seen` when `on` was set */
    uint32_t **page;     /* per page (mapped at start): its vector, or NULL */
    uint32_t  *listed;   /* the pages that have one, to free */
    size_t     nlisted, cap_listed;
} wr;

/* Whether this home records each page's writers: from its first flush
 * on. The home's own writes not yet announced belong to its next
 * interval at the latest. Caller holds hlrc.lock. */
static bool writers_on(void)
{
    if (wr.on)
        return true;
    if (!coherence_catching_up())
        return false;
    int me = job()->rank;
    memcpy(wr.start, wr.seen, (size_t)job()->nodes * sizeof *wr.start);
    uint32_t next = interval_next();
    if (next > wr.start[me])
        wr.start[me] = next;
    wr.on = true;
    return true;
}

/* `node`'s writes to a page of this home, announced in its interval
 * `interval` (or a later one), are in the content served from now on.
 * Caller holds hlrc.lock. */
static void note_writer(size_t page, int node, uint32_t interval)
{
    if (interval > wr.seen[node])
        wr.seen[node] = interval;
    if (!writers_on())
        return;
    uint32_t *w = wr.page[page];
    if (!w) {
        w = malloc((size_t)job()->nodes * sizeof *w);
        if (!w)
            log_fatal("out of memory for a page's writers");
        memcpy(w, wr.start, (size_t)job()->nodes * sizeof *w);
        wr.page[page] = w;
        page_list_add(&wr.listed, &wr.nlisted, &wr.cap_listed, page);
    }
    if (interval > w[node])
        w[node] = interval;
}

/* Whether the page as served now may hold writes of intervals that
 * `requester` has not seen: it must then catch up before it reads on
 * (its notices would not tell it that its other copies are stale). What
 * it has seen is known from its flushes' asks (interval_heard) and the
 * barriers (a lower bound: at worst it catches up for nothing). Caller
 * holds hlrc.lock. */
static bool unseen_by(size_t page, int requester)
{
    if (!writers_on())
        return false;
    const uint32_t *w = wr.page[page] ? wr.page[page] : wr.start;
    int me = job()->rank, nodes = job()->nodes;
    uint32_t next = interval_next();
    if (w[me] < next || coherence_release_unfinished())
        return interval_may_lack(requester, w);
    /* The home's own writes of its open interval (a page written here
     * that nobody else held, never announced), with no release of it
     * running or kept here, which no catch-up can bring: nothing orders
     * them before the requester's read but what came before them here.
     * So the requester must have seen what this home has — its vector
     * time, its own intervals up to the last — and the page's other
     * writers; not the open interval itself, which a catch-up would ask
     * for in vain (BOTS strassen's node 1 caught up at each first read of
     * a matrix node 0 had just summed into fresh memory: 20,000 catch-ups
     * a run). While a release runs (or is kept), `next` is the interval
     * it is making, which a flush's answer waits for: the catch-up
     * brings it, as the flag pattern needs (docs/protocols.md). */
    uint32_t ids[VT_MAX_NODES];
    interval_vt(ids);
    for (int x = 0; x < nodes; x++)
        if (w[x] > ids[x])
            ids[x] = w[x];
    ids[me] = next - 1;
    return interval_may_lack(requester, ids);
}

/* ---- fetching a page -------------------------------------------------- */

/* Gives a home page a snapshot of its present content and puts it on the
 * tracked list; under DSM_LOCAL_MEM, once the limit's number of snapshots
 * exist, puts it on the unsnapped list instead. Caller holds hlrc.lock. */
static void track(size_t page)
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
static void snapshot_drop(size_t page)
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
static void publish(size_t page)
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

/* A notice made this node's copy stale: the next read faults, and counts
 * as a re-read (see DSM_PULL_CREDIT). Caller holds the fault lock. */
static void invalidate(size_t page)
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

static void pull_landed(struct hlrc_page *h, uint32_t version, bool unseen);
static void hide(size_t page);

/* DSM_CHECK: a page's version at its home only grows (each diff applied
 * adds one; the page moves with its version), so a copy installed here is
 * never older than one installed before (`had`), nor than `need`. */
static void check_version(size_t page, uint32_t had, uint32_t need, uint32_t got, const char *how)
{
    if (check_on() && (got < had || got < need))
        check_violated("hlrc: page versions never go backwards",
                       "page %zu: node %d %s version %u, having had %u and needing %u (home: node %d)",
                       page, job()->rank, how, got, had, need, mem_home(page));
}

/* Counts the page as fetched into place (`stat` says why) and waiting for
 * its reply, which settle_pulls awaits. Caller holds the fault lock. */
static void pull_mark(size_t page, enum stats_counter stat)
{
    page_list_add(&hlrc.pulls, &hlrc.npulls, &hlrc.cap_pulls, page);
    pthread_mutex_lock(&hlrc.lock);
    hlrc.pages[page].pulling = 1;
    hlrc.pulls_due++;
    pthread_mutex_unlock(&hlrc.lock);
    stats_add(STAT_PAGES_FETCHED, 1);
    stats_add(stat, 1);
    PROFILE_PAGE(PROF_FETCH, stat == STAT_PAGES_PULLED ? PROF_FETCH_PULL
                             : stat == STAT_PAGES_WRITE_AHEAD ? PROF_FETCH_WRITE_AHEAD
                                                              : PROF_FETCH_AHEAD, page, 0);
}

/* An acquire's pulls of consecutive pages of one home, gathered into one
 * request (on_page_run_req) as read-ahead's are: a transform's transpose
 * refreshes whole rows of pages at each barrier (FFT 2^26 on 2 nodes:
 * 65k pulls a node, each a request and a reply of its own). */
struct pull_run {
    size_t   first, count;
    int      home;
    uint32_t need[READ_AHEAD_MAX];
};

/* Asks `home` for pages first .. first + count - 1, each at least at the
 * version in need[] (on_page_run_req). */
static void run_request(int home, size_t first, const uint32_t *need, size_t count)
{
    struct run_req q = {.first = (uint32_t)first, .count = (uint32_t)count};
    uint32_t vt[VT_MAX_NODES], aux;
    size_t vt_len = home_vt_out(vt, &aux);
    struct iovec iov[3] = {{.iov_base = &q, .iov_len = sizeof q},
                           {.iov_base = (void *)need, .iov_len = count * sizeof *need},
                           {.iov_base = vt, .iov_len = vt_len}};
    ipc_sendv(home, COH_PAGE_RUN_REQ, aux, iov, 3);
}

static void pull_run_send(struct pull_run *r)
{
    if (r->count == 1)
        home_request(r->first, r->home, r->need[0]);
    else if (r->count)
        run_request(r->home, r->first, r->need, r->count);
    r->count = 0;
}

/* Asks the home of a page marked for a pull (pull_mark) for its latest
 * version, received into the page as it stands (settle_pulls waits), the
 * request joining `r` or starting the next run. Caller holds the fault
 * lock. */
static void pull_in_run(struct pull_run *r, size_t page)
{
    pthread_mutex_lock(&hlrc.lock);
    int home = mem_home(page);
    struct hlrc_page *h = &hlrc.pages[page];
    bool here = home == job()->rank; /* it moved here meanwhile (migrate.c): nothing to ask */
    if (here)
        pull_landed(h, h->version, false);
    pthread_mutex_unlock(&hlrc.lock);
    if (here)
        return;
    if (r->count && (home != r->home || page != r->first + r->count || r->count == READ_AHEAD_MAX))
        pull_run_send(r);
    if (!r->count) {
        r->first = page;
        r->home = home;
    }
    r->need[r->count++] = h->need;
}

/* Waits for the pulls in flight and settles their pages: valid
 * (read-only) at the version received; or invalid, should that version be
 * older than a notice has named since the request went out (the homes
 * applied every diff of what this node has acquired before letting it
 * acquire, so this is a safeguard). Caller holds the fault lock. */
static void settle_pulls(void)
{
    if (!hlrc.npulls)
        return;
    coherence_wait_for(&hlrc.lock, &hlrc.pulls_due, 0);
    for (size_t i = 0; i < hlrc.npulls; i++) {
        size_t page = hlrc.pulls[i];
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        if (h->version < h->need) {
            if (e->state != PAGE_INVALID)
                invalidate(page);
        } else if ((h->version > h->need || h->unseen) && coherence_catching_up()) {
            /* Newer than our notices, or holding writes of intervals we
             * may lack (coherence.h, "catching up"): kept, but hidden, so
             * that its first access faults and catches up — or finds a
             * catch-up begun since it came here already ended (the fault
             * that read it ahead catches up right after, when its own
             * page was as new: BOTS strassen's node 1, whose pages read
             * ahead were all dropped and fetched again); no pull credit,
             * which would only fetch it ahead again. Under hlrc.lock: the
             * page may have moved here meanwhile (pull_in_run), and a
             * home's pages are hidden under it (hide). */
            pthread_mutex_lock(&hlrc.lock);
            hide(page);
            pthread_mutex_unlock(&hlrc.lock);
            if (e->state == PAGE_INVALID) {
                e->state = PAGE_READ;
                cache_admit(page);
            } else {
                mem_protect(page, PROT_NONE);
            }
            h->reread = 0;
            h->pull = 0;
        } else if (e->state == PAGE_INVALID) {
            e->state = PAGE_READ;
            mem_protect(page, PROT_READ);
            cache_admit(page);
        }
    }
    hlrc.npulls = 0;
    mem_protect_flush();
}

/* Read-ahead: read faults that follow one another at a constant stride
 * through one home's pages — consecutive pages (a loop over an array), or
 * every 2nd, 4th, ... page (a row of a sub-matrix: a quadrant's rows of
 * a row-major matrix, a block of a larger one) — form a *stream*, and a
 * stream's next fault also fetches the invalid pages that follow it at
 * its stride, 2, 4, ... up to DSM_READ_AHEAD (16) of them. Consecutive
 * pages go in one request whose one reply lands in place (consecutive
 * pages are consecutive in the system view): the home sends them in a
 * few datagrams instead of a message each; pages at a larger stride go
 * as requests of their own, in the same wake-up as the fault's. The node
 * follows AHEAD_STREAMS streams at once, so that loops reading several
 * arrays together (BOTS strassen's quadrant sums read four rows of pages
 * in turn, each every second page: 6,385 of node 1's 6,545 fetching read
 * faults on 2 nodes were such streams', where one stream of consecutive
 * pages saw 47) read each ahead. A fault no stream expected starts one,
 * its stride the distance from the nearest of the last AHEAD_RECENT
 * fetching read faults (at most AHEAD_STRIDE_MAX pages away), or 1 where
 * the pages between are valid here (consecutive pages some of which came
 * otherwise: SPLASH-3 FFT's node 1, whose scans took every other page's
 * fault for a stride of 2 and faulted on the rest, until this); it reads
 * ahead at once for consecutive pages, as before, and from the stream's
 * next fault for a larger stride, which a loop over scattered pages would
 * otherwise start by chance. A fault on a stream's stride past the pages
 * it expected, all valid here (read without a fault), continues it.
 *
 * Write-ahead: a program that writes pages homed elsewhere one after
 * another (a copy into a remote block, a radix sort's run of one digit)
 * takes a write fault on each, and each waits a round trip for its fetch;
 * such writes are interleaved with other streams (a radix sort fills
 * 2^r runs at once), so the read faults' streams do not see
 * them. So a write fault on an invalid page whose predecessor was
 * written here since the last release (it is dirty: a twin, homed
 * elsewhere) and has the same home also fetches the invalid pages after
 * it of that home, up to DSM_WRITE_AHEAD (8), in one run, and makes them
 * writable with the faulting page (a twin each, on the dirty list, one
 * protection change for the run): the program writes them without a
 * fault. A page fetched ahead that the program does not write costs its
 * transfer, its twin and a compare at the release, whose diff is empty
 * (nothing is sent, no notice).
 *
 * Both are sent with the faulting page's request.
 * Caller holds the fault lock; the faulting page's request is out. */

/* Whether every page from `from` on at `stride` before `to` is valid
 * here: the program may have read them without a fault. */
static bool valid_between(long from, long to, long stride)
{
    for (long q = from; q != to; q += stride)
        if (q < 0 || (size_t)q >= mem.npages || mem.pages[q].state == PAGE_INVALID)
            return false;
    return true;
}

/* The stream whose next fault `page` is: the one that expected it, else
 * one it continues past pages still valid here (at most READ_AHEAD_MAX
 * strides on), or -1. */
static int stream_of(size_t page)
{
    int best = -1;
    long best_k = READ_AHEAD_MAX + 1;
    for (int i = 0; i < AHEAD_STREAMS; i++) {
        struct ahead_stream *st = &hlrc.streams[i];
        if (!st->run)
            continue;
        long d = (long)page - (long)st->next;
        if (d % st->stride || d / st->stride < 0 || d / st->stride >= best_k)
            continue;
        if (d && !valid_between((long)st->next, (long)page, st->stride))
            continue;
        best = i;
        best_k = d / st->stride;
    }
    return best;
}

/* Sets hlrc.ahead_stream: the stream a read fault on `page` belongs to,
 * found or started (the least recently used one replaced), or -1: no
 * stride in reach. A new
 * stream's stride is the smallest distance from a recent fault — taken
 * as 1 (or -1) where the pages between are all valid: consecutive pages
 * some of which came otherwise (read ahead, fetched before), not a
 * stride. */
static void stream_for(size_t page)
{
    int i = stream_of(page);
    if (i < 0) {
        long stride = 0;
        for (int k = 0; k < AHEAD_RECENT && hlrc.recent[k]; k++) {
            long d = (long)page - (long)(hlrc.recent[k] - 1);
            if (!d || d < -AHEAD_STRIDE_MAX || d > AHEAD_STRIDE_MAX)
                continue;
            long one = d > 0 ? 1 : -1;
            if (valid_between((long)page - d + one, (long)page, one))
                d = one;
            if (!stride || labs(d) < labs(stride))
                stride = d;
        }
        if (stride) {
            i = 0;
            for (int k = 1; k < AHEAD_STREAMS; k++)
                if (hlrc.streams[k].used < hlrc.streams[i].used)
                    i = k;
            /* A first stride of 1 reads ahead at once (a second fault
             * on consecutive pages); another from its next fault. */
            hlrc.streams[i] = (struct ahead_stream){.next = page, .stride = stride,
                                                    .run = stride == 1 ? 1 : 0};
        }
    }
    hlrc.ahead_stream = i;
}

/* Pages the read fault being fetched reads ahead (its stream's, as
 * stream_for found it), before the cache's room. */
static size_t ahead_depth(void)
{
    if (hlrc.ahead_stream < 0)
        return 0;
    unsigned run = hlrc.streams[hlrc.ahead_stream].run;
    size_t depth = run ? (size_t)1 << (run < 5 ? run : 5) : 0;
    return depth > hlrc.read_ahead ? hlrc.read_ahead : depth;
}

static size_t write_ahead_depth(size_t page, int home)
{
    /* Under DSM_LOCAL_MEM pages fetched ahead would evict the pages of the
     * other streams being written (measured: 4 frames, 3 streams, every
     * write faulted again), so only a cache without a limit writes ahead. */
    if (cache_frames() || page == 0 || !mem.pages[page - 1].dirty || mem_home(page - 1) != home)
        return 0;
    return hlrc.write_ahead;
}

/* Fetches up to `depth` invalid pages after `page` of `home` as pulls
 * (counted as `stat`), in one request; returns the page after the run. */
static size_t fetch_run(size_t page, int home, size_t depth, enum stats_counter stat)
{
    if (depth > hlrc.ahead_room) /* DSM_LOCAL_MEM: what make_valid made room for */
        depth = hlrc.ahead_room;
    uint32_t need[READ_AHEAD_MAX];
    size_t q = page + 1;
    for (; q <= page + depth && q < mem.npages; q++) {
        struct page_entry *e = &mem.pages[q];
        struct hlrc_page *h = &hlrc.pages[q];
        if (e->state != PAGE_INVALID || mem_home(q) != home || h->pulling)
            break;
        need[q - page - 1] = h->need;
        pull_mark(q, stat);
    }
    size_t count = q - page - 1;
    if (count)
        run_request(home, page + 1, need, count);
    return q;
}

/* Fetches the invalid pages of `home` among the `depth` pages after
 * `page` at `stride` from one another (as pulls, counted as read ahead):
 * consecutive ones in one request each run, others a request each; valid
 * pages on the way are passed over. Returns the page after the last one
 * looked at. */
static size_t fetch_ahead(size_t page, int home, long stride, size_t depth)
{
    if (depth > hlrc.ahead_room) /* DSM_LOCAL_MEM: what make_valid made room for */
        depth = hlrc.ahead_room;
    struct pull_run r = {.count = 0};
    long q = (long)page;
    for (size_t k = 0; k < depth; k++) {
        q += stride;
        if (q < 0 || (size_t)q >= mem.npages || mem_home((size_t)q) != home) {
            q -= stride;
            break;
        }
        if (mem.pages[q].state != PAGE_INVALID || hlrc.pages[q].pulling)
            continue;
        pull_mark((size_t)q, STAT_PAGES_AHEAD);
        pull_in_run(&r, (size_t)q);
    }
    pull_run_send(&r);
    return (size_t)(q + stride);
}

static void read_ahead(size_t page, int home)
{
    memmove(&hlrc.recent[1], &hlrc.recent[0], (AHEAD_RECENT - 1) * sizeof *hlrc.recent);
    hlrc.recent[0] = page + 1;
    hlrc.ahead_clock++;
    int i = hlrc.ahead_stream;
    if (i < 0)
        return;
    struct ahead_stream *st = &hlrc.streams[i];
    size_t depth = ahead_depth();
    st->next = fetch_ahead(page, home, st->stride, depth);
    st->run++;
    st->used = hlrc.ahead_clock;
}

static void write_ahead(size_t page, int home)
{
    hlrc.write_ahead_end = fetch_run(page, home, write_ahead_depth(page, home), STAT_PAGES_WRITE_AHEAD);
}

static void rehide(const uint32_t *pages, size_t n);

/* Hides a copy that may hold writes of intervals this node has not seen
 * (coherence.h, "catching up"): no access until a catch-up begun from now
 * on has ended. Caller holds the fault lock (a copy homed elsewhere) or
 * hlrc.lock (at the home). */
static void hide(size_t page)
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

/* Makes an invalid page valid (read-only), fetching ahead as `ahead`
 * says. Caller holds the fault lock. */
static void make_valid(size_t page, enum ahead ahead)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    int home = home_lookup(page);
    if (home != job()->rank) {
        void (*also)(size_t, int) = NULL;
        size_t depth = 0;
        if (ahead == AHEAD_READ) {
            also = read_ahead;
            stream_for(page);
            depth = ahead_depth();
        } else if (ahead == AHEAD_WRITE && home >= 0 && (depth = write_ahead_depth(page, home))) {
            also = write_ahead;
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
        if (got || home_fetch(page, home, h->need, &version, &unseen, also) == HOME_DATA) {
            check_version(page, h->version, h->need, version, "fetched");
            h->version = version;
            if ((version > h->need || unseen) && coherence_catching_up()) {
                /* With threads, hidden from all of them until a catch-up
                 * begun now has ended: another thread polling the page
                 * would otherwise read the flag in it at once, and then
                 * data this one's catch-up has not yet invalidated. */
                if (smp_multi())
                    hide(page);
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
     * changes (apply_diff) either before (the page stays hidden) or
     * after (it takes the access away itself). */
    pthread_mutex_lock(&hlrc.lock);
    e->state = PAGE_READ;
    mem_protect_now(page, may_show(page) ? PROT_READ : PROT_NONE);
    pthread_mutex_unlock(&hlrc.lock);
    settle_pulls();
    mem_protect_flush();
}

static void hlrc_read_fault(size_t page) { make_valid(page, AHEAD_READ); }

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

static void hlrc_reveal(size_t page) { reveal(page); }

/* After the program's own protection changes of these pages: a page
 * hidden meanwhile stays hidden. */
static void rehide(const uint32_t *pages, size_t n)
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
static void dirty_add(size_t page)
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
        dirty_add(page);
        pthread_mutex_unlock(&hlrc.lock);
    }
    e->state = PAGE_WRITE;
    mem_protect(page, PROT_READ | PROT_WRITE);
}

static void hlrc_write_fault(size_t page)
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
            track(page);
        }
        e->state = PAGE_WRITE;
        publish(page); /* before the page is writable: from its snapshot now, or not at all */
        /* Under the lock: a diff's hiding (apply_diff) comes before or after. */
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

/* ---- diffs ------------------------------------------------------------ */

/* Sends the page's diff home, if it has a twin and changed. `parent`
 * (>= 0, a barrier's release gathering its diffs): the node's parent in
 * the barrier's tree, whose pages' diffs the arrival may follow without
 * waiting for their acknowledgements — where this node knows the parent
 * is the home for certain (its acknowledgement came since the last
 * migration round, or homes never move), since a diff a former home
 * passes on is acknowledged by the new home alone. */
static void flush_page(size_t page, int parent)
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
static uint32_t announce_home_writes(struct notice *n, uint32_t count, size_t limit,
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
                note_writer(page, job()->rank, interval);
                /* Every copy elsewhere is older than this notice (a copy
                 * served since the last release is the snapshot) and is
                 * invalidated by it before its holder may see any later
                 * write of ours: unless it was fetched lately, the home
                 * writes it from here as a page nobody holds — untracked,
                 * writable, announced by nothing — until another node
                 * fetches it again. */
                if (h->fetched == 0) {
                    snapshot_drop(page);
                    h->unarmed = 0;
                    h->shared = 0;
                    publish(page);
                    continue;
                }
                h->fetched--;
                memcpy(e->twin, mem_sys(page), mem.page_size);
                h->quiet = 0;
                publish(page);
            } else if (++h->quiet >= RETIRE_AFTER << h->patience) {
                snapshot_drop(page);
                h->unarmed = 0; /* tracked again, it is armed then */
                if (e->state == PAGE_WRITE) {
                    e->state = PAGE_READ;
                    page_list_add(&hlrc.unprotected, &hlrc.nunprotected, &hlrc.cap_unprotected, page);
                }
                publish(page);
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
    if (!mem_watch_on() && job()->cfg.write_watch != WRITE_WATCH_OFF &&
        (job()->cfg.write_watch == WRITE_WATCH_ON || hlrc.compares >= WATCH_AFTER_COMPARES))
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
static uint32_t announce_unsnapped(struct notice *n, uint32_t count, size_t limit, bool aside,
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
        note_writer(page, job()->rank, interval);
        if (e->state == PAGE_WRITE) {
            e->state = PAGE_READ;
            page_list_add(&hlrc.unprotected, &hlrc.nunprotected, &hlrc.cap_unprotected, page);
        }
        publish(page); /* read-only from here (write-protected before the program runs on) */
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
 * flush_page); returns true when some were not, the interval then
 * unacked until release_sent (arrival_acked). */
static bool release_locked(bool aside, int parent)
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
        flush_page(hlrc.dirty[i].page, parent);
    home_diffs_end();
    ipc_batch_end();
    /* The interval this release creates (the fault lock held: no other). */
    uint32_t interval = interval_next();
    uint32_t count = announce_home_writes(n, 0, ntracked, interval);
    count = announce_unsnapped(n, count, nunsnapped, aside, interval);
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
            continue; /* no notice: as release_locked skipped it */
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
    release_locked(aside, -1);
    coherence_unlock();
}

/* The barrier's release (coherence_ops.release_arriving): when it leaves
 * diffs unacknowledged, the fault lock stays held until release_sent, so
 * that no other release (lock.c's releaser) makes an interval meanwhile. */
static bool hlrc_release_arriving(int parent)
{
    coherence_lock();
    bool open = release_locked(smp_concurrent(), parent);
    if (!open)
        coherence_unlock();
    return open;
}

/* With T > 1 other threads of the node may write while a thread releases:
 * every release is then made as one aside is, but at a barrier, where the
 * leader runs it with the node's other threads parked. */
static void hlrc_release(void) { release(smp_concurrent()); }
static void hlrc_release_aside(void) { release(true); }

/* The release's write-protects, its message being out. */
static void hlrc_release_sent(void)
{
    if (hlrc.arrival_n)
        arrival_acked(); /* the fault lock held since release_arriving */
    else
        coherence_lock();
    page_list_sort(hlrc.unprotected, hlrc.nunprotected);
    for (size_t i = 0; i < hlrc.nunprotected; i++)
        mem_protect(hlrc.unprotected[i], PROT_READ);
    mem_protect_flush();
    rehide(hlrc.unprotected, hlrc.nunprotected);
    hlrc.nunprotected = 0;
    coherence_unlock();
}

/* The acquire's pulls (see hlrc_apply_notices). */
static void hlrc_notices_applied(void)
{
    coherence_lock();
    settle_pulls();
    coherence_unlock();
}

/* Whether a notice makes a copy stale that this node has written since
 * its last release. Caller holds the fault lock. */
static bool stales_dirty(const struct notice *n, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        size_t page = n[i].page;
        struct page_entry *e = &mem.pages[page];
        if (e->dirty && e->state != PAGE_INVALID && mem_home(page) != job()->rank &&
            hlrc.pages[page].version < n[i].version)
            return true;
    }
    return false;
}

static void hlrc_apply_notices(int node, const uint32_t *vt, const struct notice *n, uint32_t count)
{
    (void)vt; /* versions order hlrc's copies, not vector times */
    (void)node;
    coherence_lock();
    if ((smp_multi() || coherence_catching_up()) && stales_dirty(n, count)) {
        /* A page written here goes home before it is invalidated, so that
         * no local write is lost. Its diff alone would be wrong where the
         * program may have written data on other pages and then a flag on
         * this one (NPB LU's pipeline): the flag's diff would reach the
         * home ahead of the data's, announced by no interval, and a node
         * that polls the flag would read the data as it was. With threads
         * another thread may have (issue 40); with one, a catch-up runs at
         * a fault between the program's stores and its next flush (NPB-CPP
         * LU class S on 4 nodes ended in NaN). So all the node's writes go
         * home together, as a release (write-protected first), and make
         * an interval: a node that sees the flag catches up with it. A
         * program that never flushes keeps the page's diff alone. */
        coherence_release_begins();
        release_locked(true, -1);
        coherence_release_ends();
    }
    for (uint32_t i = 0; i < count; i++) {
        size_t page = n[i].page;
        struct page_entry *e = &mem.pages[page];
        struct hlrc_page *h = &hlrc.pages[page];
        if (mem_home(page) == job()->rank)
            continue; /* the home's copy already holds it */
        pthread_mutex_lock(&hlrc.lock);
        if (n[i].version > h->need)
            h->need = n[i].version;
        pthread_mutex_unlock(&hlrc.lock);
        if (e->state == PAGE_INVALID || h->version >= n[i].version || h->pulling)
            continue; /* a pull in flight brings the home's latest */
        if (e->dirty)
            flush_page(page, -1); /* keep our own writes: they go home first */
        else if (h->pull) {
            h->pull--;
            pull_mark(page, STAT_PAGES_PULLED);
            page_list_add(&hlrc.to_pull, &hlrc.nto_pull, &hlrc.cap_to_pull, page);
            continue;
        }
        invalidate(page);
    }
    /* In page order, so that consecutive pages go in runs. */
    page_list_sort(hlrc.to_pull, hlrc.nto_pull);
    struct pull_run run = {.count = 0};
    for (size_t i = 0; i < hlrc.nto_pull; i++)
        pull_in_run(&run, hlrc.to_pull[i]);
    pull_run_send(&run);
    hlrc.nto_pull = 0;
    mem_protect_flush();
    coherence_unlock();
}

/* ---- handlers (delivery thread) --------------------------------------- */

/* The home's copy of a page for `requester`, which needs at least version
 * `need`: the snapshot, if the page has one or is writable here (then it
 * gets one), else the page, which the home cannot write without the fault
 * that tracks it. Caller holds hlrc.lock until the copy is sent. */
static void *serve_locked(size_t page, uint32_t need, int requester, uint32_t *version, bool *unseen)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    if (h->version < need)
        log_fatal("internal error: home of page %zu is at version %u, node %d needs %u", page,
                  h->version, requester, need);
    h->shared = 1;
    h->fetched = SHARED_AFTER_FETCH;
    /* Writable here without a snapshot: the home's writes in it were
     * never announced (a page nobody else held), or will be at its next
     * release (unsnapped). */
    if (!e->twin && e->state == PAGE_WRITE)
        note_writer(page, job()->rank, interval_next());
    if (!e->twin && !h->unsnapped && e->state == PAGE_WRITE)
        track(page);
    *version = h->version;
    *unseen = unseen_by(page, requester);
    publish(page); /* shared now: later fetches may read it one-sided */
    stats_add(STAT_PAGES_SERVED, 1);
    return e->twin ? e->twin : mem_sys(page);
}

/* At the home: the page to the requester (home.c's serve hook). */
static void serve(int requester, size_t page, uint32_t need, size_t run)
{
    mem_sys_fill(page, 1); /* written through the application view */
    pthread_mutex_lock(&hlrc.lock);
    uint32_t v;
    bool unseen;
    const void *data = serve_locked(page, need, requester, &v, &unseen);
    home_send_page(requester, page, v, run, data, unseen);
    pthread_mutex_unlock(&hlrc.lock);
}

/* A pull's reply is expected, and lands in place; settle_pulls maps it. */
static bool pull_expected(size_t page)
{
    pthread_mutex_lock(&hlrc.lock);
    bool pulling = hlrc.pages[page].pulling;
    pthread_mutex_unlock(&hlrc.lock);
    return pulling;
}

/* Caller holds hlrc.lock. */
static void pull_landed(struct hlrc_page *h, uint32_t version, bool unseen)
{
    h->unseen = unseen;
    h->version = version;
    h->pulling = 0;
    hlrc.pulls_due--;
}

static bool page_landed(size_t page, enum home_status status, uint32_t version, bool unseen)
{
    pthread_mutex_lock(&hlrc.lock);
    struct hlrc_page *h = &hlrc.pages[page];
    bool pulled = h->pulling;
    /* "You are home": the page moved here while the pull was on its way,
     * with its version (take). */
    if (pulled && status == HOME_DATA)
        check_version(page, h->version, 0, version, "pulled");
    if (pulled)
        pull_landed(h, status == HOME_DATA ? version : h->version, status == HOME_DATA && unseen);
    pthread_mutex_unlock(&hlrc.lock);
    return pulled;
}

/* Checks a run's bounds; returns its size in pages, or 0 if malformed. */
static size_t run_pages(uint32_t first, uint32_t count)
{
    struct coh_limits lim;
    coherence_limits(&lim);
    return coh_run_pages(first, count, &lim);
}

static void on_page_run_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct run_req r;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "read-ahead request");
    size_t count = run_pages(r.first, r.count);
    if (!count || rest < count * sizeof(uint32_t) ||
        !home_vt_in(src, ipc_msg_aux(msg), (const char *)tail + count * sizeof(uint32_t),
                    rest - count * sizeof(uint32_t)))
        log_fatal("node %d sent a malformed read-ahead request", src);
    uint32_t need[READ_AHEAD_MAX], version[READ_AHEAD_MAX];
    memcpy(need, tail, count * sizeof *need);
    bool all_here = true;
    for (size_t i = 0; i < count; i++) {
        /* The base node records the home it decides before its reply
         * naming us reaches us, and its own threads may ask us for the
         * page in between (a run built on that record, overtaking the
         * reply): the base's word is the decision, as in home_route. */
        if (mem_home(r.first + i) < 0 && mem_base_node(r.first + i) == src)
            mem_set_home(r.first + i, job()->rank);
        if (mem_home(r.first + i) != job()->rank) {
            if (migrate_successor(r.first + i) < 0)
                home_unreachable(src, r.first + i, "a read-ahead request");
            all_here = false;
        }
    }
    if (!all_here) {
        /* Some moved away (migrate.c): each page on its own, served here or
         * by its new home; the requester expects each as a pull. */
        for (size_t i = 0; i < count; i++) {
            if (mem_home(r.first + i) == job()->rank) {
                migrate_note_fault(r.first + i, src);
                serve(src, r.first + i, need[i], 0);
            } else
                home_forward(r.first + i, src, need[i]);
        }
        stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
        return;
    }
    for (size_t i = 0; i < count; i++)
        migrate_note_fault(r.first + i, src);
    struct run_rep rep = {.first = r.first, .count = r.count};
    struct iovec iov[2 + READ_AHEAD_MAX] = {{.iov_base = &rep, .iov_len = sizeof rep},
                                            {.iov_base = version, .iov_len = count * sizeof *version}};
    int n = 2;
    /* Runs of pages without a snapshot go as one piece of the system view. */
    mem_sys_fill(r.first, count); /* written through the application view */
    uint32_t unseen = 0; /* bit i: page first + i (unseen_by) */
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < count; i++) {
        bool u;
        char *data = serve_locked(r.first + i, need[i], src, &version[i], &u);
        unseen |= (uint32_t)u << i;
        struct iovec *last = &iov[n - 1];
        if (n > 2 && (char *)last->iov_base + last->iov_len == data)
            last->iov_len += mem.page_size;
        else
            iov[n++] = (struct iovec){.iov_base = data, .iov_len = mem.page_size};
    }
    ipc_sendv(src, COH_PAGE_RUN_REP, unseen, iov, n);
    pthread_mutex_unlock(&hlrc.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void *place_page_run_rep(int src, const void *head, size_t head_len, size_t msg_len,
                                size_t *skip)
{
    struct run_rep r;
    size_t rest;
    ipc_body(src, head, head_len, &r, sizeof r, &rest, "read-ahead reply");
    size_t count = run_pages(r.first, r.count);
    size_t versions = count * sizeof(uint32_t);
    *skip = head_len - rest + versions;
    bool expected = count && rest >= versions && msg_len == *skip + count * mem.page_size;
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; expected && i < count; i++)
        expected = hlrc.pages[r.first + i].pulling;
    pthread_mutex_unlock(&hlrc.lock);
    if (!expected)
        log_fatal("node %d sent pages nobody asked for, or a malformed read-ahead reply", src);
    return mem_sys_fill(r.first, count);
}

static void on_page_run_rep(int src, const void *msg, size_t len)
{
    struct run_rep r;
    uint32_t version[READ_AHEAD_MAX];
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "read-ahead reply");
    memcpy(version, tail, r.count * sizeof *version);
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < r.count; i++) {
        check_version(r.first + i, hlrc.pages[r.first + i].version, 0, version[i], "pulled");
        pull_landed(&hlrc.pages[r.first + i], version[i], ipc_msg_aux(msg) >> i & 1);
    }
    pthread_mutex_unlock(&hlrc.lock);
    ipc_notify();
}

/* At the home: applied to the page and its snapshot; the new version
 * goes back. */
/* The home's program could read another node's write here before it
 * has that writer's notices, and then read the writer's earlier writes
 * to other pages as they were (a flag polled with flush: coherence.h,
 * "catching up"). So while this node catches up, a page a diff changed
 * is hidden (no access) until the program's next access to it faults,
 * reveals it and catches up. The program's own protection changes of
 * home pages hide again what is hidden (rehide). Caller holds
 * hlrc.lock; on the delivering thread. */
static void hide_if_catching_up(size_t page)
{
    if (!coherence_catching_up())
        return;
    hide(page); /* an invalid one is hidden already */
    if (mem.pages[page].state != PAGE_INVALID)
        mem_protect_now(page, PROT_NONE);
    stats_add(STAT_PAGES_HIDDEN, 1);
}

static void apply_diff(int src, size_t page, uint32_t idx, const void *diff, size_t len,
                       uint32_t interval)
{
    pthread_mutex_lock(&hlrc.lock);
    hide_if_catching_up(page); /* before the diff: the program must not see it first */
    void *snap = mem.pages[page].twin;
    if (mem_diff_apply(mem_sys(page), mem.page_size, diff, len) ||
        (snap && mem_diff_apply(snap, mem.page_size, diff, len)))
        log_fatal("node %d sent a malformed diff for page %zu", src, page);
    uint32_t v = ++hlrc.pages[page].version;
    hlrc.pages[page].fetched = SHARED_AFTER_FETCH; /* another writer: stays shared */
    note_writer(page, src, interval);
    publish(page);
    pthread_mutex_unlock(&hlrc.lock);
    home_ack_diff(src, (uint32_t)page, idx, v);
}

static void diff_acked(int src, const struct diff_ack *a)
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

/* ---- atomics at the home (home_atomic.c) ------------------------------ */

/* At the requester, holding the word's block lock: an operation that may
 * write, on a page this node has not written since its last release (no
 * twin: invalid, or a clean copy), and a load on a page not valid here,
 * are done at the page's home. A changed word is this node's write in
 * its interval, as a diff acknowledged: the page goes on the dirty list
 * (with no twin, nothing to diff) at the home's new version, and the next
 * release announces it. `need` rises to it: a later fault here must see
 * this node's own write. A page written here runs the atomic on its copy
 * (the caller: the home's copy lacks the node's writes, which may be to
 * the same word), and so does a load on a valid copy (after the lock's
 * acquire the copy holds all the load may return, and costs nothing
 * more), or an operation on a page whose home is this node or whose pull
 * is in flight, or whose home this node would decide (its base node, the
 * home not known yet: the fault decides it). */
/* Whether the page is away for `op` (see hlrc_atomic). Caller holds the
 * fault lock. */
static bool away_locked(size_t page, uint8_t op, uint32_t *need)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    int home = mem_home(page);
    int to = home >= 0 ? home : mem_base_node(page); /* where the request would go */
    bool unwritten = op == COH_ATOMIC_LOAD ? e->state == PAGE_INVALID
                                           : e->state != PAGE_WRITE && !e->twin;
    pthread_mutex_lock(&hlrc.lock);
    bool away = unwritten && to != job()->rank && !h->pulling && !smp_multi();
    *need = h->need;
    pthread_mutex_unlock(&hlrc.lock);
    return away;
}

static bool hlrc_atomic_away(size_t page, uint8_t op, uint32_t *need)
{
    coherence_lock();
    bool away = away_locked(page, op, need);
    coherence_unlock();
    return away;
}

/* This node's atomic `a` at `offset` made the page `v` at its home: a
 * write of ours. A copy here that is one version behind, and held the
 * word the home found, becomes version v by the same operation on it
 * (what a fetch of v would bring: the home's copy at v - 1 is what copies
 * were served, and the operation changed one word): it stays valid, and
 * a node that reads the page it adds to keeps reading it without a fault.
 * Any other copy older than v (further behind, or with another word there;
 * one that came in meanwhile, a read-ahead run landing, may be either)
 * lacks our own write: invalidated. Caller holds the fault lock. */
static void wrote_at_home(size_t page, size_t offset, const struct coh_atomic *a, uint32_t v)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    pthread_mutex_lock(&hlrc.lock);
    if (!e->dirty)
        dirty_add(page);
    struct dirty_page *d = &hlrc.dirty[h->dirty_idx];
    if (v > d->version)
        d->version = v;
    if (v > h->need)
        h->need = v;
    bool stale = e->state != PAGE_INVALID && h->version < v;
    if (stale && !e->twin && h->version + 1 == v && coh_atomic_replay(mem_sys(page) + offset, a)) {
        h->version = v;
        stale = false;
        stats_add(STAT_ATOMICS_COPY_KEPT, 1);
    }
    pthread_mutex_unlock(&hlrc.lock);
    if (stale) {
        invalidate(page);
        mem_protect_flush();
    }
}

static void hlrc_atomic_wrote(size_t page, size_t offset, const struct coh_atomic *a,
                              uint32_t version)
{
    coherence_lock();
    wrote_at_home(page, offset, a, version);
    coherence_unlock();
}

static int hlrc_atomic(size_t page, size_t offset, struct coh_atomic *a)
{
    coherence_lock();
    uint32_t need;
    if (!away_locked(page, a->op, &need)) {
        coherence_unlock();
        return -EAGAIN;
    }
    int64_t v = home_atomic(page, mem_home(page), need, offset, a, interval_next());
    if (v > 0)
        wrote_at_home(page, offset, a, (uint32_t)v);
    coherence_unlock();
    return v < 0 ? (int)v : 0;
}

/* At the home: the atomic on the page and its snapshot (the content the
 * copies elsewhere hold: the requester's notice, not the home's release,
 * announces the change), which advances the version as a diff does. */
static uint32_t perform_atomic(int src, size_t page, uint32_t need, size_t offset, struct coh_atomic *a,
                               uint32_t interval)
{
    char *sys = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    struct hlrc_page *h = &hlrc.pages[page];
    if (h->version < need)
        log_fatal("internal error: home of page %zu is at version %u, node %d needs %u", page,
                  h->version, src, need);
    uint32_t v = 0;
    if (coh_atomic_apply(sys + offset, a)) {
        char *snap = mem.pages[page].twin;
        if (snap)
            memcpy(snap + offset, sys + offset, a->size);
        v = ++h->version;
        note_writer(page, src, interval);
    }
    pthread_mutex_unlock(&hlrc.lock);
    if (v)
        migrate_note_write(page, src, a->size);
    return v;
}

/* ---- homes that move (migrate.c) -------------------------------------- */

/* At the home, in a migration window (under the fault lock): the page and
 * its version go to `to`; this node keeps a read-only copy at that
 * version, without a snapshot. */
static bool give(size_t page, int to)
{
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    const void *data = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    oneside_publish(page, h->version, NULL); /* no longer served here */
    if (e->twin) {
        snapshot_drop(page);
        size_t kept = 0;
        for (size_t i = 0; i < hlrc.ntracked; i++)
            if (hlrc.tracked[i] != page)
                hlrc.tracked[kept++] = hlrc.tracked[i];
        hlrc.ntracked = kept;
    }
    if (h->unsnapped) {
        h->unsnapped = 0;
        size_t kept = 0;
        for (size_t i = 0; i < hlrc.nunsnapped; i++)
            if (hlrc.unsnapped[i] != page)
                hlrc.unsnapped[kept++] = hlrc.unsnapped[i];
        hlrc.nunsnapped = kept;
    }
    if (e->state == PAGE_WRITE) {
        e->state = PAGE_READ;
        mem_protect(page, PROT_READ);
    }
    h->shared = 0;
    h->quiet = 0;
    migrate_send(to, page, h->version, NULL, 0, data);
    pthread_mutex_unlock(&hlrc.lock);
    return true;
}

/* At the new home (delivering thread): the page's content and version.
 * Its copy elsewhere may be shared, so the home's first write here tracks
 * it (hlrc_write_fault). The page keeps its protection: no program runs
 * while it moves. */
static void take(int from, size_t page, uint32_t version, const uint64_t *set, size_t words,
                 const void *data)
{
    (void)set;
    struct page_entry *e = &mem.pages[page];
    struct hlrc_page *h = &hlrc.pages[page];
    char *frame = mem_sys_fill(page, 1);
    pthread_mutex_lock(&hlrc.lock);
    if (words || e->twin || e->dirty || version < h->need)
        log_fatal("node %d migrated page %zu here in a state it cannot be in (version %u, need %u)",
                  from, page, version, h->need);
    check_version(page, h->version, 0, version, "took the page as its home at");
    memcpy(frame, data, mem.page_size);
    h->version = version;
    h->shared = 1;
    h->fetched = 0; /* a copy at its former home, to be invalidated by the first notice */
    h->quiet = 0;
    h->pull = 0;
    h->reread = 0;
    mem_set_home(page, job()->rank);
    publish(page);
    pthread_mutex_unlock(&hlrc.lock);
}

/* The page cache gives up a copy (coherence_ops.evict): its diff, if it
 * was written, goes home first and is acknowledged, as when a notice
 * invalidates a dirty page; its notice goes out at the next release. A
 * page whose pull is in flight is not given up: its frame is about to
 * receive the reply. Caller holds the fault lock. */
static int hlrc_evict(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    if (pull_expected(page))
        return CACHE_NOT_NOW;
    e->state = PAGE_INVALID;
    mem_protect(page, PROT_NONE);
    mem_protect_flush(); /* before the diff: no write may follow it */
    bool dirty = e->twin != NULL;
    if (dirty) {
        flush_page(page, -1);
        coherence_wait_for(&hlrc.lock, &hlrc.outstanding, 0);
    }
    return dirty ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

static void hlrc_start(void)
{
    static const struct home_ops hops = {.serve = serve, .expects = pull_expected, .landed = page_landed,
                                         .diff = apply_diff, .diff_acked = diff_acked, .give = give,
                                         .take = take, .atomic = perform_atomic};
    const struct dsm_config *c = &job()->cfg;
    /* The table bounds them (config.c); a run request holds READ_AHEAD_MAX. */
    hlrc.read_ahead = (size_t)c->read_ahead <= READ_AHEAD_MAX ? (size_t)c->read_ahead : READ_AHEAD_MAX;
    hlrc.write_ahead = (size_t)c->write_ahead <= READ_AHEAD_MAX ? (size_t)c->write_ahead : READ_AHEAD_MAX;
    hlrc.pull_credit = (uint8_t)c->pull_credit;
    hlrc.diffbuf = malloc(mem_diff_bound(mem.page_size));
    hlrc.pages = mmap(NULL, mem.npages * sizeof *hlrc.pages, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    wr.seen = calloc((size_t)job()->nodes, sizeof *wr.seen);
    wr.start = calloc((size_t)job()->nodes, sizeof *wr.start);
    wr.page = mmap(NULL, mem.npages * sizeof *wr.page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!hlrc.diffbuf || hlrc.pages == MAP_FAILED || !wr.seen || !wr.start || wr.page == MAP_FAILED)
        log_fatal("out of memory for hlrc's page table");
    oneside_start();
    home_start(&hops);
    ipc_register(COH_PAGE_RUN_REQ, "PAGE_RUN_REQ", on_page_run_req, NULL);
    ipc_register(COH_PAGE_RUN_REP, "PAGE_RUN_REP", on_page_run_rep, place_page_run_rep);
}

/* Frees the home pages' snapshots and the lists. */
static void hlrc_finish(void)
{
    pthread_mutex_lock(&hlrc.lock);
    for (size_t i = 0; i < hlrc.ntracked; i++)
        snapshot_drop(hlrc.tracked[i]);
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
    for (size_t i = 0; i < wr.nlisted; i++) {
        free(wr.page[wr.listed[i]]);
        wr.page[wr.listed[i]] = NULL;
    }
    free(wr.listed);
    wr.listed = NULL;
    wr.nlisted = wr.cap_listed = 0;
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
    .evict = hlrc_evict,
    .atomic = hlrc_atomic, .atomic_away = hlrc_atomic_away, .atomic_wrote = hlrc_atomic_wrote,
    .aurc_estimate = true,
};
