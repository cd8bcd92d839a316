/*
 * lrc.c — homeless lazy release consistency (TreadMarks: Keleher, Cox,
 * Dwarkadas and Zwaenepoel, 1994), with multiple writers.
 *
 * No page has a home. A writer keeps a twin from its first write; at its
 * release it records an interval of write notices and write-protects the
 * pages, but makes no diff yet (lazy diff creation): the twin is kept, and
 * when the page is written again in a later interval, the new twin is also
 * the old interval's "after" copy. A diff is made only when someone asks
 * for it (or a notice invalidates the page); a page nobody asks about costs
 * a page copy per interval and no diff at all. Diffs stay with their writers. The notices travel with lock
 * grants and barrier releases, as for HLRC; an acquirer invalidates every
 * page named. A fault on an invalid page asks each writer named in its
 * pending notices for exactly those intervals' diffs, and applies them all
 * in causal order. When they name two writers or more, it first asks the
 * latest of them for its whole copy, which that one gives if it holds
 * exactly what those diffs would make (`have`, per writer, says up to
 * which stamp a copy holds its writes): under a lock passed from node to
 * node it does, and the fault waits for one node instead of the slowest
 * of several.
 *
 * Causal order without vector timestamps per interval: every node keeps a
 * Lamport clock, raised to the stamp of every notice it applies; a release
 * stamps its interval clock+1, carried in the notice's version field. If
 * interval a happened before interval b, b's writer had applied a's notices
 * (or a was its own) before b's release, so stamp(a) < stamp(b). Diffs are
 * applied by (stamp, writer): concurrent intervals in a race-free program
 * write different words, so their relative order does not matter.
 *
 * A page's content here is: zero (the memfd's fresh frames, every node the
 * same), plus every diff applied, plus this node's own writes in place. So
 * a page never touched needs no transfer at all — only a check with its
 * base node that it is allocated, so that a stray access still crashes.
 *
 * The files: this one keeps the page records and the diffs they store,
 * made lazily from the release that closes an interval to the first
 * request or invalidation that needs them (under lrc.lock, from either
 * thread); release, acquire (the notices) and eviction (program thread,
 * fault lock held); and the protocol's start, end and table. lrc_fault.c brings a page up
 * to date at a fault; lrc_handlers.c answers other nodes' requests and
 * takes in the replies a fault waits for; lrc_gc.c collects diffs and
 * notices, at barriers and without them. lrc_state.h holds what they
 * share (private to them).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/lrc_state.h"
#include "ipc/ipc.h"

DSM_STATE struct lrc_state lrc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *grow(void *p, uint32_t *cap, size_t elem)
{
    *cap = *cap ? *cap * 2 : 8;
    p = realloc(p, *cap * elem);
    if (!p)
        log_fatal("out of memory for lrc page records");
    return p;
}

/* The page's record, made on first use. Caller holds lrc.lock. */
struct lpage *lrc_record(size_t page)
{
    struct lpage *p = lrc.tab[page];
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            log_fatal("out of memory for lrc page records");
        p->last_node = -1;
        p->base_from = -1;
        lrc.tab[page] = p;
        if (lrc.nrecorded == lrc.cap_recorded)
            lrc.recorded = libheap_grow(lrc.recorded, &lrc.cap_recorded, sizeof *lrc.recorded,
                                        1024, "for lrc page records");
        lrc.recorded[lrc.nrecorded++] = (uint32_t)page;
    }
    return p;
}

/* Records a notice of `node`'s interval `stamp` for the page: for the
 * choice of its keeper, and the collection count. Caller holds lrc.lock. */
static void note_written(size_t page, struct lpage *p, uint32_t stamp, int node)
{
    if (p->last_node < 0 || stamp > p->last_stamp ||
        (stamp == p->last_stamp && node > p->last_node)) {
        p->last_stamp = stamp;
        p->last_node = node;
    }
    if (!p->listed) {
        p->listed = 1;
        page_list_add(&lrc.touched, &lrc.ntouched, &lrc.cap_touched, page);
    }
    p->allocated = 1;
    lrc.notices++;
}

/* Stores the diff of `cur` against `before` as interval `stamp`'s. Caller
 * holds lrc.lock. */
static void store_diff(size_t page, struct lpage *p, uint32_t stamp, const void *cur,
                       const void *before)
{
    uint64_t t0 = clock_ns();
    long len = mem_diff_create(cur, before, mem.page_size, lrc.scratch, mem_diff_bound(mem.page_size));
    if (len < 0)
        log_fatal("internal error: a diff did not fit its bound");
    if (len > 0) {
        if (p->ndiffs == p->cap_diffs)
            p->diffs = grow(p->diffs, &p->cap_diffs, sizeof *p->diffs);
        unsigned char *d = malloc((size_t)len);
        if (!d)
            log_fatal("out of memory for a diff");
        memcpy(d, lrc.scratch, (size_t)len);
        p->diffs[p->ndiffs++] = (struct ldiff){stamp, (uint32_t)len, d};
        stats_add(STAT_DIFFS_CREATED, 1);
        stats_add(STAT_DIFF_BYTES, (uint64_t)len);
        if (PROFILE_ON)
            mem_profile_diff(PROF_DIFF_LAZY, page, stamp, d, (size_t)len);
    }
    stats_add(STAT_T_DIFF_NS, clock_ns() - t0);
}

/* Page copies are shared (an interval's "after" is the next one's "before",
 * and the open interval's twin): frees `b` unless something still uses it. */
static void release_copy(size_t page, struct lpage *p, unsigned char *b)
{
    if (!b || b == mem.pages[page].twin)
        return;
    for (uint32_t i = 0; i < p->nlazy; i++)
        if (p->lazy[i].before == b || p->lazy[i].after == b)
            return;
    mem_copy_put(b);
}

/* Frees n pending notices. */
void lrc_pend_free(struct lnote *pend, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(pend[i].vt);
    free(pend);
}

/* The page's have[], made on first use. Caller holds lrc.lock. */
uint32_t *lrc_have_of(struct lpage *p)
{
    if (!p->have && !(p->have = calloc((size_t)job()->nodes, sizeof *p->have)))
        log_fatal("out of memory for lrc page records");
    return p->have;
}

/* Drops the page's lazy interval i, whose diff nobody will ask for. Caller
 * holds lrc.lock. */
void lrc_lazy_drop(size_t page, struct lpage *p, uint32_t i)
{
    struct lazy z = p->lazy[i];
    memmove(&p->lazy[i], &p->lazy[i + 1], (p->nlazy - i - 1) * sizeof *p->lazy);
    p->nlazy--;
    release_copy(page, p, z.before);
    release_copy(page, p, z.after);
}

/* Makes the diff of the page's lazy interval i, now. The page must not be
 * writable while its "after" is the page itself. Caller holds lrc.lock. */
void lrc_lazy_take(size_t page, struct lpage *p, uint32_t i)
{
    struct lazy z = p->lazy[i];
    store_diff(page, p, z.stamp, z.after ? z.after : (unsigned char *)mem_sys(page), z.before);
    memmove(&p->lazy[i], &p->lazy[i + 1], (p->nlazy - i - 1) * sizeof *p->lazy);
    p->nlazy--;
    release_copy(page, p, z.before);
    release_copy(page, p, z.after);
}

/* The open interval's writes to the page, as a diff stamped at release;
 * drops the twin. Caller holds lrc.lock. */
static void open_diff(size_t page, struct lpage *p)
{
    struct page_entry *e = &mem.pages[page];
    unsigned char *twin = e->twin;
    store_diff(page, p, OPEN_STAMP, mem_sys(page), twin);
    e->twin = NULL;
    release_copy(page, p, twin);
}

void lrc_free_page_record(struct lpage *p)
{
    for (uint32_t k = 0; k < p->ndiffs; k++)
        free(p->diffs[k].data);
    free(p->diffs);
    p->diffs = NULL;
    p->ndiffs = p->cap_diffs = 0;
}

/* Drops the page's lazy intervals, whose diffs nobody asked for, and
 * their copies. Caller holds lrc.lock. */
void lrc_drop_lazy(size_t page, struct lpage *p)
{
    while (p->nlazy) {
        struct lazy z = p->lazy[--p->nlazy];
        release_copy(page, p, z.before);
        release_copy(page, p, z.after);
    }
}

/* ---- release and acquire (program thread) ----------------------------- */

static void lrc_release(void)
{
    coherence_lock();
    if (!lrc.ndirty) {
        coherence_unlock();
        return;
    }
    struct notice *n = malloc(lrc.ndirty * sizeof *n);
    if (!n)
        log_fatal("out of memory for write notices");
    page_list_sort(lrc.dirty, lrc.ndirty);
    pthread_mutex_lock(&lrc.lock);
    uint32_t stamp = ++lrc.clock;
    if (PROFILE_ON)
        profile_interval(stamp); /* its diffs are made later: their epoch */
    for (size_t i = 0; i < lrc.ndirty; i++) {
        size_t page = lrc.dirty[i];
        struct page_entry *e = &mem.pages[page];
        struct lpage *p = lrc_record(page);
        for (uint32_t k = 0; k < p->ndiffs; k++)
            if (p->diffs[k].stamp == OPEN_STAMP)
                p->diffs[k].stamp = stamp;
        if (e->twin) { /* the diff is made when first needed */
            if (p->nlazy == p->cap_lazy)
                p->lazy = grow(p->lazy, &p->cap_lazy, sizeof *p->lazy);
            p->lazy[p->nlazy++] = (struct lazy){stamp, e->twin, NULL};
            e->twin = NULL;
        }
        if (e->state == PAGE_WRITE) {
            e->state = PAGE_READ;
            mem_protect(page, PROT_READ);
        }
        e->dirty = 0;
        lrc_have_of(p)[job()->rank] = stamp; /* its writes are in the copy */
        note_written(page, p, stamp, job()->rank);
        n[i] = (struct notice){(uint32_t)page, stamp};
    }
    pthread_mutex_unlock(&lrc.lock);
    mem_protect_flush();
    interval_create(n, (uint32_t)lrc.ndirty);
    lrc.ndirty = 0;
    free(n);
    coherence_unlock();
}

static void lrc_apply_notices(int node, const uint32_t *vt, const struct notice *n, uint32_t count)
{
    size_t vt_len = (size_t)job()->nodes * sizeof *vt;
    coherence_lock();
    pthread_mutex_lock(&lrc.lock);
    for (uint32_t i = 0; i < count; i++) {
        size_t page = n[i].page;
        struct page_entry *e = &mem.pages[page];
        struct lpage *p = lrc_record(page);
        if (n[i].version > lrc.clock)
            lrc.clock = n[i].version;
        if (p->npend == p->cap_pend)
            p->pend = grow(p->pend, &p->cap_pend, sizeof *p->pend);
        uint32_t *note_vt = NULL;
        if (vt) {
            if (!(note_vt = malloc(vt_len)))
                log_fatal("out of memory for lrc page records");
            memcpy(note_vt, vt, vt_len);
        }
        p->pend[p->npend++] = (struct lnote){n[i].version, node, note_vt};
        note_written(page, p, n[i].version, node);
        if (e->state == PAGE_INVALID)
            continue;
        /* Our own writes stay in the copy; their diffs are made now, while
         * the copies still tell them apart from the diffs to be applied. */
        if (e->twin)
            open_diff(page, p);
        else if (p->nlazy && !p->lazy[p->nlazy - 1].after)
            lrc_lazy_take(page, p, p->nlazy - 1);
        e->state = PAGE_INVALID;
        mem_protect(page, PROT_NONE);
        stats_add(STAT_INVALIDATIONS, 1);
        PROFILE_PAGE(PROF_INVAL, 0, page, 0);
    }
    pthread_mutex_unlock(&lrc.lock);
    mem_protect_flush();
    coherence_unlock();
}

/* The page cache gives up a copy (coherence_ops.evict). Without homes,
 * the content goes to this node's swap file and comes back at the next
 * fault, before the diffs noticed meanwhile. What others may still ask of
 * it must not need the frame: the open interval's writes become a diff
 * now (stamped at the release, as when a notice invalidates a written
 * page), and so does a closed interval whose "after" is the page itself.
 * Caller holds the fault lock. */
static int lrc_evict(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    bool dirty = false;
    pthread_mutex_lock(&lrc.lock);
    if (e->state != PAGE_INVALID) {
        e->state = PAGE_INVALID;
        mem_protect(page, PROT_NONE);
        mem_protect_flush(); /* before the diffs: no write may follow them */
    }
    struct lpage *p = lrc_record(page);
    if (e->twin) {
        open_diff(page, p);
        dirty = true;
    }
    if (p->nlazy && !p->lazy[p->nlazy - 1].after)
        lrc_lazy_take(page, p, p->nlazy - 1);
    pthread_mutex_unlock(&lrc.lock);
    cache_swap_out(page);
    return dirty ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

static void lrc_start(void)
{
    lrc.tab = mmap(NULL, mem.npages * sizeof *lrc.tab, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    lrc.scratch = malloc(mem_diff_bound(mem.page_size));
    lrc.f.asked = calloc((size_t)job()->nodes, sizeof *lrc.f.asked);
    lrc.f.reply = calloc((size_t)job()->nodes, sizeof *lrc.f.reply);
    lrc.f.reply_len = calloc((size_t)job()->nodes, sizeof *lrc.f.reply_len);
    lrc.seen = calloc((size_t)job()->nodes, sizeof *lrc.seen);
    if (lrc.tab == MAP_FAILED || !lrc.scratch || !lrc.f.asked || !lrc.f.reply || !lrc.f.reply_len ||
        !lrc.seen)
        log_fatal("out of memory for the lrc page table");
    ipc_register(LRC_DIFF_REQ, "LRC_DIFF_REQ", lrc_on_diff_req, NULL);
    ipc_register(LRC_DIFF_REP, "LRC_DIFF_REP", lrc_on_diff_rep, NULL);
    ipc_register(LRC_BASE_REQ, "LRC_BASE_REQ", lrc_on_base_req, NULL);
    ipc_register(LRC_BASE_REP, "LRC_BASE_REP", lrc_on_base_rep, lrc_place_base_rep);
    ipc_register(LRC_COVER_REQ, "LRC_COVER_REQ", lrc_on_cover_req, NULL);
    ipc_register(LRC_COVER_REP, "LRC_COVER_REP", lrc_on_cover_rep, NULL);
    ipc_register(LRC_SEEN, "LRC_SEEN", lrc_on_seen, NULL);
}

/* Frees the page records, with their diffs and copies, and the tables. */
static void lrc_finish(void)
{
    pthread_mutex_lock(&lrc.lock);
    for (size_t i = 0; i < lrc.nrecorded; i++) {
        size_t page = lrc.recorded[i];
        struct lpage *p = lrc.tab[page];
        if (!p)
            continue;
        lrc_free_page_record(p);
        lrc_drop_lazy(page, p);
        mem_copy_put(mem.pages[page].twin);
        mem.pages[page].twin = NULL;
        free(p->lazy);
        lrc_pend_free(p->pend, p->npend);
        free(p->seen);
        free(p->snapshot);
        free(p->next_snapshot);
        free(p->asked);
        free(p->have);
        free(p);
    }
    free(lrc.recorded);
    lrc.recorded = NULL;
    lrc.nrecorded = lrc.cap_recorded = 0;
    munmap(lrc.tab, mem.npages * sizeof *lrc.tab);
    lrc.tab = NULL;
    for (int node = 0; node < job()->nodes; node++) {
        free(lrc.f.reply[node]);
        free(lrc.seen[node].v);
    }
    free(lrc.seen);
    lrc.seen = NULL;
    free(lrc.f.reply);
    free(lrc.f.reply_len);
    free(lrc.f.asked);
    free(lrc.scratch);
    free(lrc.dirty);
    free(lrc.touched);
    lrc.f.reply = NULL;
    lrc.f.reply_len = NULL;
    lrc.f.asked = NULL;
    lrc.scratch = NULL;
    lrc.dirty = lrc.touched = NULL;
    lrc.ndirty = lrc.cap_dirty = lrc.ntouched = lrc.cap_touched = 0;
    pthread_mutex_unlock(&lrc.lock);
}

/* One line per concern: life, faults, release, acquire, barriers. */
const struct coherence_ops lrc_ops = {
    .start = lrc_start, .finish = lrc_finish,
    .read_fault = lrc_make_valid, .write_fault = lrc_write_fault,
    .release = lrc_release,
    .apply_notices = lrc_apply_notices,
    .evict = lrc_evict,
    .barrier_done = lrc_barrier_done,
};
