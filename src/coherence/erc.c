/*
 * erc.c — eager release consistency, home-based, with multiple writers:
 * SCASH (seed 003; Harada et al., 1999), in its invalidate (`erc-inv`) and
 * update (`erc-upd`) variants.
 *
 * Every page has a home holding its current contents and a *copyset*: the
 * nodes it has served the page to that may still hold a copy. A writer
 * elsewhere keeps a twin from its first write; at its release it sends the
 * home a diff of each page it wrote. The home applies the diff, then
 * invalidates every other member of the copyset (erc-inv: they drop out of
 * it) or sends them the diff to apply (erc-upd: they stay), and answers the
 * writer only once every member has acknowledged. So when a release
 * completes, no node holds a copy without its writes, and an acquire needs
 * nothing: no intervals, no write notices.
 *
 * The home's own writes to a page others hold are announced the same way
 * at its release (erc-upd diffs them against a twin taken at the home's
 * first write while the page is shared), and the page is write-protected
 * again. A home page nobody else holds stays writable across releases;
 * serving it write-protects it, so the home's next write is seen (the copy
 * just served holds every earlier one).
 *
 * Members acknowledge at once, from the delivery thread, so the home never
 * waits: each invalidation or update in flight is a pending record with a
 * count of acknowledgements still due. A member that has the page dirty
 * write-protects it, sends its own diff home (ahead of its acknowledgement:
 * per-peer order), then drops it (erc-inv); its next release waits for that
 * diff's acknowledgement like any other. An update is applied to the page
 * and to its twin, so the member's own diff never carries another writer's
 * words.
 *
 * Homes are found as home.c finds them: a page whose home is not yet
 * known here is requested from its base node (the owner of the arena it
 * lies in), which always knows each page's home, as SCASH's does. erc adds
 * what its home does when serving (the copyset). Homes may move at
 * barriers (migrate.c): the copyset goes with the page, the former home
 * joins it with its read-only copy, and the new home tells every member
 * before anything else it sends them.
 *
 * Locks: the fault lock (coherence_lock) makes the program's protocol
 * actions (a fault, a release) one at a time. `lock` guards every page state change, the
 * directory and the pending records, on whichever thread; protections are
 * changed and flushed under it. It is never held across ipc_wait: a handler
 * run by the waiting thread takes it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "coherence/migrate.h"
#include "ipc/ipc.h"

/* erc's message types (coherence.h: the active protocol's own slots). */
enum erc_type {
    ERC_INV = COH_PROTOCOL_TYPES, /* erc-inv: a home invalidates a copy before a release ends */
    ERC_UPD, /* erc-upd: a home pushes a diff to a copy */
    ERC_ACK, /* the copy is invalidated or updated */
    ERC_TYPE_END
};
_Static_assert((int)ERC_TYPE_END <= (int)COHERENCE_TYPE_NEXT, "erc has more message types than slots");

/* ERC_INV and ERC_UPD (the diff follows); ERC_ACK sends it back. */
struct erc_note { uint32_t page, slot, gen, zero; };

#define DIR_CHUNK_PAGES 4096

/* A home's directory, for DIR_CHUNK_PAGES pages, made when the home first
 * serves one of them: the region has millions of pages, few of them shared. */
struct dir_chunk {
    /* The home wrote the page since its last release while others held it. */
    uint8_t  wrote_shared[DIR_CHUNK_PAGES];
    uint32_t pending[DIR_CHUNK_PAGES]; /* its first pending record, plus one */
    uint64_t copyset[];  /* erc.words per page */
};

/* At a home: an invalidation or update in flight, for a diff from `writer`
 * (or for this node's own release). */
struct pending {
    uint32_t  gen;      /* bumped at each reuse, so a stale ack is caught */
    int32_t   writer;   /* -1: free */
    uint32_t  page;
    int32_t   left;     /* acknowledgements still due */
    uint32_t  next;     /* the page's next pending record, plus one */
    uint64_t *targets;  /* the nodes that owe one */
};

static DSM_STATE struct {
    pthread_mutex_t    lock;
    bool               update;      /* erc-upd */
    size_t             words;       /* uint64_t per copyset */
    uint32_t          *dirty;       /* pages written since the last release (program only) */
    size_t             ndirty, cap;
    int                outstanding; /* our diffs and notes not yet acknowledged */
    unsigned char     *diffbuf;
    struct dir_chunk **dir;
    struct pending    *pend;
    size_t             npend;
    uint32_t          *free_slots;
    size_t             nfree;
} erc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void lock(void) { pthread_mutex_lock(&erc.lock); }

/* Every protection change made under the lock takes effect before it is
 * dropped: the batch in mem_protect is not thread-safe, and a handler's
 * decision must not be undone by a change still pending. */
static void unlock(void)
{
    mem_protect_flush();
    pthread_mutex_unlock(&erc.lock);
}

static void set_state(size_t page, enum page_state s)
{
    static const int prot[] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE};
    mem.pages[page].state = (uint8_t)s;
    mem_protect(page, prot[s]);
}

/* ---- the directory (at homes; caller holds erc.lock) -------------------- */

static struct dir_chunk *chunk_of(size_t page, bool create)
{
    struct dir_chunk **c = &erc.dir[page / DIR_CHUNK_PAGES];
    if (!*c && create) {
        *c = calloc(1, sizeof **c + DIR_CHUNK_PAGES * erc.words * sizeof(uint64_t));
        if (!*c)
            log_fatal("out of memory for the page directory");
    }
    return *c;
}

/* The page's copyset, or NULL where no page of its chunk was ever served. */
static uint64_t *copyset_of(size_t page, bool create)
{
    struct dir_chunk *c = chunk_of(page, create);
    return c ? c->copyset + (page % DIR_CHUNK_PAGES) * erc.words : NULL;
}

static bool set_empty(const uint64_t *s)
{
    for (size_t i = 0; s && i < erc.words; i++)
        if (s[i])
            return false;
    return true;
}

static bool set_has(const uint64_t *s, int node) { return (s[node / 64] >> (node % 64)) & 1; }

/* ---- invalidations and updates, at the home --------------------------- */

/* Sends ERC_INV, or ERC_UPD with the diff, to every node of `targets` and
 * records what their acknowledgements complete: `writer`'s diff, or this
 * node's release (counted in erc.outstanding). Returns false when targets is
 * empty and the record need not wait `behind` earlier ones: nothing to wait
 * for. Caller holds erc.lock. */
static bool send_notes(size_t page, int writer, const uint64_t *targets, const void *diff, size_t len,
                       bool behind)
{
    if (set_empty(targets) && !behind)
        return false;
    if (!erc.nfree) {
        size_t n = erc.npend ? erc.npend * 2 : 64;
        struct pending *p = realloc(erc.pend, n * sizeof *p);
        uint32_t *f = realloc(erc.free_slots, n * sizeof *f);
        if (!p || !f)
            log_fatal("out of memory for pending invalidations");
        erc.pend = p;
        erc.free_slots = f;
        for (size_t i = n; i-- > erc.npend;) {
            p[i] = (struct pending){.writer = -1, .targets = calloc(erc.words, sizeof(uint64_t))};
            if (!p[i].targets)
                log_fatal("out of memory for pending invalidations");
            f[erc.nfree++] = (uint32_t)i;
        }
        erc.npend = n;
    }
    uint32_t slot = erc.free_slots[--erc.nfree];
    struct pending *p = &erc.pend[slot];
    p->gen++;
    p->writer = writer;
    p->page = (uint32_t)page;
    p->left = 0;
    memcpy(p->targets, targets, erc.words * sizeof *targets);
    struct dir_chunk *c = chunk_of(page, true);
    p->next = c->pending[page % DIR_CHUNK_PAGES];
    c->pending[page % DIR_CHUNK_PAGES] = slot + 1;
    if (writer == job()->rank)
        erc.outstanding++;
    struct erc_note n = {.page = (uint32_t)page, .slot = slot, .gen = p->gen};
    struct iovec iov[2] = {{.iov_base = &n, .iov_len = sizeof n},
                           {.iov_base = (void *)diff, .iov_len = erc.update ? len : 0}};
    for (int node = 0; node < job()->nodes; node++) {
        if (!set_has(targets, node))
            continue;
        p->left++;
        ipc_sendv(node, erc.update ? ERC_UPD : ERC_INV, 0, iov, 2);
    }
    return true;
}

static void pending_done(struct pending *p)
{
    uint32_t *link = &chunk_of(p->page, false)->pending[p->page % DIR_CHUNK_PAGES];
    while (*link != (uint32_t)(p - erc.pend) + 1)
        link = &erc.pend[*link - 1].next;
    *link = p->next;
    if (p->writer == job()->rank) {
        erc.outstanding--;
        ipc_notify();
    } else {
        home_ack_diff(p->writer, p->page, 0, 0);
    }
    p->writer = -1;
    erc.free_slots[erc.nfree++] = (uint32_t)(p - erc.pend);
}

/* Completes, oldest first, the page's invalidation records that have all
 * their acknowledgements (erc-inv; see announce). Caller holds erc.lock. */
static void settle(uint32_t page)
{
    for (;;) {
        uint32_t oldest = 0;
        for (uint32_t i = chunk_of(page, false)->pending[page % DIR_CHUNK_PAGES]; i;
             i = erc.pend[i - 1].next)
            oldest = i;
        if (!oldest || erc.pend[oldest - 1].left)
            return;
        pending_done(&erc.pend[oldest - 1]);
    }
}

/* Announces a diff of `page` (from `writer`, or this node's own) to the
 * other holders of the page. Caller holds erc.lock. */
static bool announce(size_t page, int writer, const void *diff, size_t len)
{
    uint64_t *s = copyset_of(page, false);
    if (!s)
        return false;
    uint64_t targets[VT_MAX_NODES / 64];
    memcpy(targets, s, erc.words * sizeof *s);
    if (writer != job()->rank)
        targets[writer / 64] &= ~(1ull << (writer % 64));
    /* erc-inv: a node whose invalidation of this page is still unanswered
     * may not have seen it yet: it left the copyset when that was sent, but
     * a release that completed before it acted could pass it a lock it
     * would use with its stale copy. So this release completes only after
     * every earlier one of the page (settle): it waits for that answer
     * without asking again. (Sending such a node another invalidation, as
     * before, made every release of a page that many nodes write at once
     * go to all of them while answers lagged — N invalidations and N
     * answers per release, N^2 in all: at 256 nodes the home's socket
     * overflowed with them and the job ended "peer 0 silent".) */
    bool behind = false;
    if (!erc.update) {
        behind = chunk_of(page, false)->pending[page % DIR_CHUNK_PAGES] != 0;
        for (size_t i = 0; i < erc.words; i++) /* invalidated copies leave the copyset; the writer's stays */
            s[i] &= ~targets[i];
    }
    return send_notes(page, writer, targets, diff, len, behind);
}

/* ---- faults ----------------------------------------------------------- */

/* Makes an invalid page valid (read-only) — unless an invalidation that
 * followed the reply already took it again: the access then faults anew.
 * Caller holds the fault lock. */
static void make_valid(size_t page)
{
    int home = home_lookup(page);
    /* Taken even where the page is fetched: an invalidation that found it
     * dirty (on_note) holds the lock from the moment it takes the page
     * away until its diff is sent, and the program faults as soon as the
     * page is gone. Our request must follow that diff to the home (per-peer
     * order), or the copy we get back lacks our own last writes. */
    lock();
    if (home == job()->rank) {
        if (mem.pages[page].state == PAGE_INVALID)
            set_state(page, PAGE_READ);
        unlock();
        return;
    }
    unlock();
    uint32_t version;
    home_fetch(page, home, 0, &version, NULL, NULL); /* page_landed maps it */
}

static void erc_write_fault(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    if (e->state == PAGE_INVALID)
        make_valid(page);
    lock();
    if (e->state == PAGE_READ) {
        if (mem_home(page) != job()->rank) {
            mem_twin_make(page);
        } else {
            struct dir_chunk *c = chunk_of(page, false);
            if (c && !set_empty(copyset_of(page, false))) {
                c->wrote_shared[page % DIR_CHUNK_PAGES] = 1;
                /* A twin kept since an earlier write still tells every
                 * change the copies lack (a serve since then announced
                 * the writes and dropped it): keep it. (erc-inv takes one
                 * only to measure the home's writes, for home migration,
                 * and for the profile, which tells their bytes.) */
                if ((erc.update || migrate_counts_writes() || PROFILE_ON) && !e->twin)
                    mem_twin_make(page);
            }
        }
        set_state(page, PAGE_WRITE);
        if (!e->dirty) {
            page_list_add(&erc.dirty, &erc.ndirty, &erc.cap, page);
            e->dirty = 1;
        }
    }
    unlock();
}

/* ---- release ---------------------------------------------------------- */

/* Encodes the page's changes since its twin into erc.diffbuf and drops the
 * twin. Caller holds erc.lock, and the page is not writable in the
 * application view. Returns the diff's length. */
static size_t take_diff(size_t page) { return mem_twin_diff(page, erc.diffbuf); }

/* Sends a non-home page's diff home, if it changed. Caller holds erc.lock. */
static void send_diff(size_t page)
{
    size_t len = take_diff(page);
    if (!len)
        return;
    int home = mem_home(page);
    if (home < 0 || home == job()->rank)
        log_fatal("internal error: page %zu has a twin but no other home", page);
    erc.outstanding++;
    home_send_diff(page, 0, erc.diffbuf, len, 0); /* erc has no intervals */
}

/* Whether a home page's copies lack some of its writes. Caller holds
 * erc.lock. */
static bool home_wrote_shared(size_t page)
{
    struct dir_chunk *c = chunk_of(page, false);
    return c && c->wrote_shared[page % DIR_CHUNK_PAGES];
}

/* A home page's changes, to the nodes holding it. Caller holds erc.lock, and
 * the page is not writable in the application view. */
static void announce_home_page(size_t page)
{
    if (!home_wrote_shared(page))
        return; /* nobody else holds it, or the copies hold every write */
    chunk_of(page, false)->wrote_shared[page % DIR_CHUNK_PAGES] = 0;
    if (!erc.update) {
        if (mem.pages[page].twin)
            migrate_note_write(page, job()->rank, take_diff(page));
        announce(page, job()->rank, NULL, 0);
        return;
    }
    if (!mem.pages[page].twin)
        log_fatal("internal error: home page %zu was written while shared, without a twin", page);
    size_t len = take_diff(page);
    migrate_note_write(page, job()->rank, len);
    if (len)
        announce(page, job()->rank, erc.diffbuf, len);
}

static bool all_acked(void)
{
    lock();
    bool d = erc.outstanding == 0;
    unlock();
    return d;
}

static void erc_release(void)
{
    coherence_lock();
    if (!erc.ndirty && all_acked()) {
        coherence_unlock();
        return;
    }
    lock();
    /* Write-protect first, in as few calls as the pages allow, so that
     * every diff below is final. */
    page_list_sort(erc.dirty, erc.ndirty);
    for (size_t i = 0; i < erc.ndirty; i++) {
        size_t page = erc.dirty[i];
        bool home = mem_home(page) == job()->rank;
        /* A home page whose copies go now is likely fetched again soon:
         * protected here, in a batch, rather than by the serve, where the
         * mprotect (a TLB shootdown while our thread runs) would delay the
         * fetch; the home's next write costs a local fault instead. */
        if (mem.pages[page].state == PAGE_WRITE && (!home || home_wrote_shared(page)))
            set_state(page, PAGE_READ);
    }
    mem_protect_flush();
    for (size_t i = 0; i < erc.ndirty; i++) {
        size_t page = erc.dirty[i];
        if (mem_home(page) == job()->rank)
            announce_home_page(page);
        else if (mem.pages[page].twin) /* else an invalidation sent it already */
            send_diff(page);
    }
    unlock();
    /* Waits also for the diffs invalidations took since the last release. */
    uint64_t t0 = clock_ns();
    coherence_wait_for(&erc.lock, &erc.outstanding, 0);
    stats_add(STAT_T_DIFF_SEND_NS, clock_ns() - t0);
    for (size_t i = 0; i < erc.ndirty; i++)
        mem.pages[erc.dirty[i]].dirty = 0;
    erc.ndirty = 0;
    coherence_unlock();
}

/* ---- handlers (delivery thread, or a waiting program thread) ---------- */

/* At the home (home.c's serve hook): the requester joins the copyset, and
 * the page is sent. */
static void serve(int to, size_t page, uint32_t need, size_t run)
{
    (void)need; /* erc has no versions: a copy is always current */
    lock();
    /* Our writes so far travel with the copy; later ones must fault. */
    if (mem.pages[page].state == PAGE_WRITE)
        set_state(page, PAGE_READ);
    mem_protect_flush();
    /* erc-upd: our writes since the twin go to the members first, and the
     * twin with them. Kept, it would be older than the copy sent below: a
     * word we then set back to the twin's value would be no change to our
     * release's diff, and the new member would keep the value in between
     * for good (omp_constructs' hits[i] read 1 after clear() zeroed it;
     * conf.home_writes_new_reader). */
    if (erc.update && home_wrote_shared(page))
        announce_home_page(page);
    uint64_t *s = copyset_of(page, true);
    s[to / 64] |= 1ull << (to % 64);
    /* Sent under the lock: no invalidation or update of this page may
     * overtake the copy to the new member. */
    home_send_page(to, page, 0, run, mem_sys(page), false);
    unlock();
    stats_add(STAT_PAGES_SERVED, 1);
}

/* A fetched page is valid from its reply on (not from when the program
 * runs again), so that an invalidation right behind the reply finds it
 * valid and takes it. */
static bool page_landed(size_t page, enum home_status status, uint32_t version, bool unseen)
{
    (void)version;
    (void)unseen;
    lock();
    if (status != HOME_UNALLOCATED && mem.pages[page].state == PAGE_INVALID)
        set_state(page, PAGE_READ);
    unlock();
    return false;
}

/* At the home: applied, then announced to the other copies; the writer
 * is acknowledged once they all have it (pending_done). */
static void apply_diff(int src, size_t page, uint32_t idx, const void *diff, size_t len,
                       uint32_t interval)
{
    (void)interval;
    if (idx || mem_diff_check(diff, len, mem.page_size) < 0)
        log_fatal("node %d sent a malformed diff for page %zu", src, page);
    lock();
    mem_diff_apply(mem_sys(page), mem.page_size, diff, len);
    /* Our own next diff of the page must not carry these words. */
    if (mem.pages[page].twin)
        mem_diff_apply(mem.pages[page].twin, mem.page_size, diff, len);
    if (!announce(page, src, diff, len))
        home_ack_diff(src, (uint32_t)page, 0, 0);
    unlock();
}

static void diff_acked(int src, const struct diff_ack *a)
{
    lock();
    if (a->idx || a->version || mem_home(a->page) != src || erc.outstanding <= 0)
        log_fatal("node %d acknowledged a diff that was not sent", src);
    erc.outstanding--;
    unlock();
}

/* ERC_INV and ERC_UPD, at a node holding a copy. */
static void on_note(int src, const void *msg, size_t len, bool update)
{
    uint64_t t0 = clock_ns();
    struct erc_note n;
    size_t dlen = 0;
    const char *diff = ipc_body(src, msg, len, &n, sizeof n, update ? &dlen : NULL,
                                update ? "update" : "invalidation");
    if (n.page >= mem.npages || n.zero || update != erc.update || mem_home(n.page) != src)
        log_fatal("node %d sent an %s for page %u, which it is not the home of here", src,
                  update ? "update" : "invalidation", n.page);
    if (update && mem_diff_check(diff, dlen, mem.page_size) < 0)
        log_fatal("node %d sent a malformed update for page %u", src, n.page);
    struct page_entry *e = &mem.pages[n.page];
    lock();
    if (update) {
        /* On the page and on its twin: our own diff carries only our words. */
        if (e->state != PAGE_INVALID) {
            mem_diff_apply(mem_sys(n.page), mem.page_size, diff, dlen);
            if (e->twin)
                mem_diff_apply(e->twin, mem.page_size, diff, dlen);
        }
    } else if (e->state != PAGE_INVALID) {
        set_state(n.page, PAGE_INVALID);
        if (e->twin) {
            /* Protected before the diff is taken, so no write is lost;
             * the diff reaches the home before our acknowledgement. */
            mem_protect_flush();
            send_diff(n.page);
        }
        stats_add(STAT_INVALIDATIONS, 1);
        PROFILE_PAGE(PROF_INVAL, 0, n.page, 0);
    }
    unlock();
    ipc_send(src, ERC_ACK, 0, &n, sizeof n);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_inv(int src, const void *msg, size_t len) { on_note(src, msg, len, false); }
static void on_upd(int src, const void *msg, size_t len) { on_note(src, msg, len, true); }

static void on_ack(int src, const void *msg, size_t len)
{
    struct erc_note n;
    ipc_body(src, msg, len, &n, sizeof n, NULL, "invalidation acknowledgement");
    lock();
    struct pending *p = n.slot < erc.npend ? &erc.pend[n.slot] : NULL;
    if (!p || p->writer < 0 || p->gen != n.gen || p->page != n.page || n.zero || !set_has(p->targets, src))
        log_fatal("node %d acknowledged an invalidation or update that was not sent", src);
    p->targets[src / 64] &= ~(1ull << (src % 64));
    if (--p->left == 0) {
        if (erc.update)
            pending_done(p);
        else
            settle(p->page);
    }
    unlock();
}

/* ---- homes that move (migrate.c) -------------------------------------- */

/* At the home, in a migration window (under the fault lock): the page and
 * its copyset, this node included while it keeps a valid copy, go to `to`.
 * Not while an invalidation or update of it is unanswered. */
static bool give(size_t page, int to)
{
    struct page_entry *e = &mem.pages[page];
    uint64_t set[VT_MAX_NODES / 64] = {0};
    const void *data = mem_sys_fill(page, 1);
    lock();
    struct dir_chunk *c = chunk_of(page, false);
    if (c && c->pending[page % DIR_CHUNK_PAGES]) {
        unlock();
        return false;
    }
    uint64_t *s = copyset_of(page, false);
    if (s) {
        memcpy(set, s, erc.words * sizeof *s);
        memset(s, 0, erc.words * sizeof *s);
        c->wrote_shared[page % DIR_CHUNK_PAGES] = 0;
    }
    if (e->twin)
        mem_twin_drop(page);
    if (e->state == PAGE_WRITE)
        set_state(page, PAGE_READ);
    if (e->state != PAGE_INVALID)
        set[job()->rank / 64] |= 1ull << (job()->rank % 64);
    migrate_send(to, page, 0, set, erc.words, data);
    unlock();
    return true;
}

/* At the new home (delivering thread): the page and its copyset. */
static void take(int from, size_t page, uint32_t version, const uint64_t *set, size_t words,
                 const void *data)
{
    struct page_entry *e = &mem.pages[page];
    int me = job()->rank;
    lock();
    if (version || words != erc.words || e->twin || e->dirty)
        log_fatal("node %d migrated page %zu here in a state it cannot be in", from, page);
    memcpy(mem_sys_fill(page, 1), data, mem.page_size);
    uint64_t *s = copyset_of(page, true);
    memcpy(s, set, erc.words * sizeof *s);
    s[me / 64] &= ~(1ull << (me % 64));
    chunk_of(page, false)->wrote_shared[page % DIR_CHUNK_PAGES] = 0;
    mem_set_home(page, me);
    unlock();
}

/* The page cache gives up a copy (coherence_ops.evict): as an
 * invalidation would, it is protected and its diff, if written, goes home;
 * unlike one, we wait for the home to have it. The copyset still names
 * this node: the home's next invalidation or update finds the page invalid
 * and is acknowledged as usual. Caller holds the fault lock. */
static int erc_evict(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    lock();
    bool dirty = false;
    if (e->state != PAGE_INVALID) {
        set_state(page, PAGE_INVALID);
        mem_protect_flush(); /* before the diff: no write may follow it */
        dirty = e->twin != NULL;
        if (dirty)
            send_diff(page);
    }
    unlock();
    if (dirty)
        coherence_wait_for(&erc.lock, &erc.outstanding, 0);
    return dirty ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

static void erc_start(bool update)
{
    erc.update = update;
    erc.words = ((size_t)job()->nodes + 63) / 64;
    erc.diffbuf = malloc(mem_diff_bound(mem.page_size));
    erc.dir = calloc((mem.npages + DIR_CHUNK_PAGES - 1) / DIR_CHUNK_PAGES, sizeof *erc.dir);
    if (!erc.diffbuf || !erc.dir)
        log_fatal("out of memory starting the %s protocol", update ? "erc-upd" : "erc-inv");
    if (job()->nodes > VT_MAX_NODES)
        log_fatal("erc: at most %d nodes", VT_MAX_NODES);
    static const struct home_ops hops = {.serve = serve, .landed = page_landed, .diff = apply_diff,
                                         .diff_acked = diff_acked, .give = give, .take = take};
    home_start(&hops);
    if (update)
        ipc_register(ERC_UPD, "ERC_UPD", on_upd, NULL);
    else
        ipc_register(ERC_INV, "ERC_INV", on_inv, NULL);
    ipc_register(ERC_ACK, "ERC_ACK", on_ack, NULL);
}

static void erc_inv_start(void) { erc_start(false); }
static void erc_upd_start(void) { erc_start(true); }

/* The two variants differ only in their start. */
#define ERC_OPS(start_fn)                                                                         \
    {.start = start_fn, .read_fault = make_valid, .write_fault = erc_write_fault, .release = erc_release, \
     .barrier_vote = migrate_barrier_vote, .barrier_done = migrate_barrier_done,                      \
     .join_wants_barrier = migrate_join_wants_barrier,                                                \
     .finish = migrate_finish, .evict = erc_evict, .state_lock = &erc.lock}
const struct coherence_ops erc_inv_ops = ERC_OPS(erc_inv_start);
const struct coherence_ops erc_upd_ops = ERC_OPS(erc_upd_start);
