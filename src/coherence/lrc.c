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
 * Collection: diffs and notices would grow without bound, so at a barrier
 * where the notices since the last collection reach DSM_LRC_GC_NOTICES,
 * every node collects. The decision needs no messages: after a barrier all
 * nodes have seen the same intervals and count the same. Each page written
 * since the last collection gets a keeper, the writer of its latest notice
 * (by stamp, then node): the keeper brings its copy up to date and keeps a
 * snapshot of it. A second barrier; then every node drops its diffs and
 * notices, and a node whose copy was invalid will fetch the keeper's
 * snapshot before its next access (then apply diffs made after it).
 *
 * Without barriers (a program that only uses locks), a writer also drops
 * a diff once every other node has asked it for that diff or a later one
 * of the page: a node asks for all the page's notices it has pending, and
 * a writer's notices reach it in the order of their stamps, so it never
 * asks for an earlier stamp again. A node that never reads the page holds
 * its diffs back until a barrier.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/check.h"
#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/msgcheck.h"
#include "ipc/ipc.h"

/* lrc's message types (coherence.h: the active protocol's own slots). */
enum lrc_type {
    LRC_DIFF_REQ = COH_PROTOCOL_TYPES, /* the diffs of a page's intervals, from their writer */
    LRC_DIFF_REP, /* those diffs */
    LRC_BASE_REQ, /* after a collection, a whole page from its keeper */
    LRC_BASE_REP, /* that page */
    LRC_COVER_REQ, /* the page whole, from its latest writer, if its copy has all we need */
    LRC_COVER_REP, /* that page and what it holds, or no */
    LRC_SEEN,      /* diffs of the receiver's that the sender will never ask for */
    LRC_TYPE_END
};
_Static_assert((int)LRC_TYPE_END <= (int)COHERENCE_TYPE_NEXT, "lrc has more message types than slots");

#define OPEN_STAMP LRC_OPEN_STAMP /* a diff of the interval still open: stamped at release */

struct ldiff {      /* a diff this node made */
    uint32_t       stamp;
    uint32_t       len;
    unsigned char *data;
};

struct lazy {       /* a closed interval's writes to the page, not yet diffed */
    uint32_t       stamp;
    unsigned char *before;   /* the page when the interval first wrote it */
    unsigned char *after;    /* the page when it closed; NULL: as it is now */
};

struct lnote {      /* a notice not yet applied to the local copy */
    uint32_t  stamp;
    int32_t   node;
    uint32_t *vt;   /* DSM_CHECK: its interval's vector time; else NULL */
};

struct lpage {
    struct ldiff  *diffs;
    uint32_t       ndiffs, cap_diffs;
    struct lnote  *pend;
    uint32_t       npend, cap_pend;
    struct lazy   *lazy;         /* oldest first; consecutive ones share copies */
    uint32_t       nlazy, cap_lazy;
    uint32_t       last_stamp;   /* the latest notice since the last collection: */
    int32_t        last_node;    /* its writer keeps the page at the next one (-1: none) */
    int32_t        base_from;    /* fetch a whole copy from this keeper first (-1: no) */
    uint8_t        allocated;    /* known to be allocated */
    uint8_t        listed;       /* in lrc.touched */
    uint32_t      *asked;        /* per node: the latest stamp it asked our diffs of the page for */
    uint32_t      *have;         /* per node: this copy holds its writes up to this stamp */
    uint8_t        cover_skip;   /* faults left to ask every writer (a cover was refused) */
    unsigned char *snapshot;     /* as keeper: the page at the last collection */
    unsigned char *next_snapshot;/* ... and at the collection under way */
    uint32_t      *seen;         /* DSM_CHECK: what the diffs applied here had seen (nodes) */
};

enum base_kind { BASE_PROBE = 0, BASE_COPY = 1 };
enum base_status { BASE_ALLOCATED = 0, BASE_UNALLOCATED = 1, BASE_DATA = 2 };

/* The diff fetch's bodies (struct diff_req, diff_rep, diff_item) are in
 * msgcheck.h, with their checks. */
struct base_req { uint32_t page, kind; };
struct base_rep { uint32_t page, status; };
/* A cover: LRC_COVER_REQ's body is followed by need[nodes], what the
 * asker's copy must come to hold (per writer, a stamp); LRC_COVER_REP's,
 * when status is 1, by the giver's have[nodes] and the page. */
struct cover_req { uint32_t page, nodes; };
struct cover_rep { uint32_t page, status; };

/* (page, stamp) pairs a node keeps for each writer before it sends them
 * as one LRC_SEEN: what the writer may keep meanwhile is bounded by it. */
#define SEEN_BATCH 16
/* Faults of a page that ask every writer after a cover was refused. */
#define COVER_SKIP 8

DSM_STATE uint64_t lrc_gc_notices = 8192;

static DSM_STATE struct {
    pthread_mutex_t lock;        /* the page records, twins of written pages, the fetch */
    struct lpage  **tab;         /* per page, made on first use */
    uint32_t       *recorded;    /* the pages with a record, for lrc_finish: the */
    size_t          nrecorded, cap_recorded; /* region is far larger than what is used */
    uint32_t        clock;       /* Lamport clock of intervals */
    uint32_t       *dirty;       /* pages written in the open interval */
    size_t          ndirty, cap_dirty;
    uint32_t       *touched;     /* pages named by notices since the last collection */
    size_t          ntouched, cap_touched;
    uint64_t        notices;     /* notices since the last collection (all nodes') */
    bool            collecting;
    unsigned char  *scratch;     /* diff creation, under lock */
    struct {                     /* the fetch the program waits for */
        bool            waiting;
        uint32_t        page;
        int             expected, got;
        bool           *asked;   /* per node: a diff reply is due */
        unsigned char **reply;   /* per node: its reply's payload */
        size_t         *reply_len;
        bool            base_done;
        uint32_t        base_status;
        bool            cover_done;
        int             cover_from;
    } f;
    struct seen_out {            /* per writer: LRC_SEEN pairs not sent yet (program thread) */
        uint32_t *v;
        size_t    n, cap;
    } *seen;
} lrc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *grow(void *p, uint32_t *cap, size_t elem)
{
    *cap = *cap ? *cap * 2 : 8;
    p = realloc(p, *cap * elem);
    if (!p)
        log_fatal("out of memory for lrc page records");
    return p;
}

/* The page's record, made on first use. Caller holds lrc.lock. */
static struct lpage *lp(size_t page)
{
    struct lpage *p = lrc.tab[page];
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            log_fatal("out of memory for lrc page records");
        p->last_node = -1;
        p->base_from = -1;
        lrc.tab[page] = p;
        if (lrc.nrecorded == lrc.cap_recorded) {
            size_t cap = lrc.cap_recorded ? 2 * lrc.cap_recorded : 1024;
            uint32_t *r = realloc(lrc.recorded, cap * sizeof *r);
            if (!r)
                log_fatal("out of memory for lrc page records");
            lrc.recorded = r;
            lrc.cap_recorded = cap;
        }
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
static void pend_free(struct lnote *pend, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(pend[i].vt);
    free(pend);
}

/* The page's have[], made on first use. Caller holds lrc.lock. */
static uint32_t *have_of(struct lpage *p)
{
    if (!p->have && !(p->have = calloc((size_t)job()->nodes, sizeof *p->have)))
        log_fatal("out of memory for lrc page records");
    return p->have;
}

/* Sends `node` the pairs kept for it (program thread). */
static void seen_flush(int node)
{
    struct seen_out *o = &lrc.seen[node];
    if (!o->n)
        return;
    uint32_t count = (uint32_t)(o->n / 2);
    struct iovec iov[2] = {{.iov_base = &count, .iov_len = sizeof count},
                           {.iov_base = o->v, .iov_len = o->n * sizeof *o->v}};
    ipc_sendv(node, LRC_SEEN, 0, iov, 2);
    o->n = 0;
}

/* This copy holds `node`'s writes to the page up to `stamp` without having
 * asked it for them (a cover brought them): this node will never ask for
 * them, which the writer needs to know to drop them (note_asked). Kept and
 * sent in batches (program thread). */
static void seen_add(int node, size_t page, uint32_t stamp)
{
    struct seen_out *o = &lrc.seen[node];
    page_list_add(&o->v, &o->n, &o->cap, page);
    page_list_add(&o->v, &o->n, &o->cap, stamp);
    if (o->n >= 2 * SEEN_BATCH)
        seen_flush(node);
}

/* Drops the page's lazy interval i, whose diff nobody will ask for. Caller
 * holds lrc.lock. */
static void lazy_drop(size_t page, struct lpage *p, uint32_t i)
{
    struct lazy z = p->lazy[i];
    memmove(&p->lazy[i], &p->lazy[i + 1], (p->nlazy - i - 1) * sizeof *p->lazy);
    p->nlazy--;
    release_copy(page, p, z.before);
    release_copy(page, p, z.after);
}

/* Makes the diff of the page's lazy interval i, now. The page must not be
 * writable while its "after" is the page itself. Caller holds lrc.lock. */
static void lazy_take(size_t page, struct lpage *p, uint32_t i)
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

/* ---- bringing a page up to date (program thread, fault lock held) ------ */

/* Asks `node` about the page (probe: allocated? copy: the snapshot, into
 * the system view). Returns the reply's status. */
static uint32_t ask_base(size_t page, int node, enum base_kind kind)
{
    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = true;
    lrc.f.page = (uint32_t)page;
    lrc.f.base_done = false;
    pthread_mutex_unlock(&lrc.lock);
    struct base_req r = {(uint32_t)page, kind};
    ipc_send(node, LRC_BASE_REQ, 0, &r, sizeof r);
    coherence_wait_flag(&lrc.lock, &lrc.f.base_done);
    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = false;
    uint32_t status = lrc.f.base_status;
    pthread_mutex_unlock(&lrc.lock);
    return status;
}

struct apply_item {
    uint32_t             stamp;
    int32_t              node;
    uint32_t             seq;    /* position in its writer's reply */
    uint32_t             len;
    const unsigned char *data;
};

/* DSM_CHECK: diffs reach a page in happens-before order. The item's
 * interval (node x, id i) must not be one that a diff already applied
 * here had seen: p->seen, the entrywise maximum of their intervals'
 * vector times, covers every interval that happened before one of them.
 * Items of one interval (a written page has at most one diff per stamp
 * and writer, but ask twice and it may come twice) are checked at the
 * first. pend: the notices asked for, which name the intervals. Caller
 * holds the fault lock. */
static void check_diff_order(size_t page, struct lpage *p, const struct apply_item *it,
                             const struct lnote *pend, uint32_t npend)
{
    int nodes = job()->nodes;
    const uint32_t *vt = NULL;
    for (uint32_t i = 0; i < npend && !vt; i++)
        if (pend[i].node == it->node && pend[i].stamp == it->stamp)
            vt = pend[i].vt;
    if (!vt)
        check_violated("diffs are applied in happens-before order",
                       "page %zu: node %d sent a diff of stamp %u, which no notice here names",
                       page, it->node, it->stamp);
    if (!p->seen && !(p->seen = calloc((size_t)nodes, sizeof *p->seen)))
        log_fatal("out of memory for lrc page records");
    uint32_t id = vt[it->node];
    if (p->seen[it->node] >= id)
        check_violated("diffs are applied in happens-before order",
                       "page %zu: node %d's interval %u (stamp %u), sent by node %d, comes after "
                       "a diff of an interval that had seen node %d's interval %u",
                       page, it->node, id, it->stamp, it->node, it->node, p->seen[it->node]);
    for (int x = 0; x < nodes; x++)
        if (vt[x] > p->seen[x])
            p->seen[x] = vt[x];
}

static int by_causal_order(const void *a, const void *b)
{
    const struct apply_item *x = a, *y = b;
    if (x->stamp != y->stamp)
        return x->stamp < y->stamp ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Fetches the diffs of every pending notice from their writers and applies
 * them in causal order into the system view. */
static void fetch_diffs(size_t page)
{
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lp(page);
    uint32_t npend = p->npend;
    struct lnote *pend = p->pend;
    p->pend = NULL;
    p->npend = p->cap_pend = 0;
    lrc.f.waiting = true;
    lrc.f.page = (uint32_t)page;
    lrc.f.expected = lrc.f.got = 0;
    memset(lrc.f.asked, 0, (size_t)job()->nodes * sizeof *lrc.f.asked);
    for (uint32_t i = 0; i < npend; i++)
        if (!lrc.f.asked[pend[i].node]) {
            lrc.f.asked[pend[i].node] = true;
            lrc.f.expected++;
        }
    pthread_mutex_unlock(&lrc.lock);

    uint32_t *stamps = malloc((npend + 2) * sizeof *stamps);
    uint32_t *top = calloc((size_t)job()->nodes, sizeof *top); /* per writer: the latest asked */
    if (!stamps || !top)
        log_fatal("out of memory for a diff request");
    for (int node = 0; node < job()->nodes; node++) {
        if (!lrc.f.asked[node])
            continue;
        uint32_t count = 0;
        for (uint32_t i = 0; i < npend; i++)
            if (pend[i].node == node) {
                stamps[2 + count++] = pend[i].stamp;
                if (pend[i].stamp > top[node])
                    top[node] = pend[i].stamp;
            }
        stamps[0] = (uint32_t)page;
        stamps[1] = count;
        ipc_send(node, LRC_DIFF_REQ, 0, stamps, (2 + count) * sizeof *stamps);
    }
    free(stamps);
    if (!check_on()) {
        pend_free(pend, npend);
        pend = NULL;
    }
    coherence_wait_for(&lrc.lock, &lrc.f.got, lrc.f.expected); /* expected: set above, by us */

    uint64_t t0 = clock_ns();
    struct apply_item *items = NULL;
    size_t nitems = 0, cap = 0;
    for (int node = 0; node < job()->nodes; node++) {
        if (!lrc.f.asked[node])
            continue;
        const unsigned char *q = lrc.f.reply[node];
        struct diff_rep h;
        memcpy(&h, q, sizeof h);
        q += sizeof h;
        /* Checked on arrival (on_diff_rep): well formed. */
        for (uint32_t k = 0; k < h.count; k++) {
            struct diff_item it;
            memcpy(&it, q, sizeof it);
            q += sizeof it;
            if (nitems == cap) {
                cap = cap ? cap * 2 : 16;
                items = realloc(items, cap * sizeof *items);
                if (!items)
                    log_fatal("out of memory applying diffs");
            }
            items[nitems++] = (struct apply_item){it.stamp, node, k, it.len, q};
            q += it.len;
        }
    }
    if (nitems) /* (none: items is NULL, which qsort may not take) */
        qsort(items, nitems, sizeof *items, by_causal_order);
    for (size_t i = 0; i < nitems; i++) {
        if (pend && (!i || items[i].stamp != items[i - 1].stamp || items[i].node != items[i - 1].node))
            check_diff_order(page, p, &items[i], pend, npend);
        if (mem_diff_apply(mem_sys(page), mem.page_size, items[i].data, items[i].len))
            log_fatal("node %d sent a malformed diff for page %zu", items[i].node, page);
    }
    free(items);
    if (pend)
        pend_free(pend, npend);
    for (int node = 0; node < job()->nodes; node++) {
        free(lrc.f.reply[node]);
        lrc.f.reply[node] = NULL;
    }
    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = false;
    uint32_t *have = have_of(p); /* the copy holds every writer's asked intervals now */
    for (int node = 0; node < job()->nodes; node++)
        if (top[node] > have[node])
            have[node] = top[node];
    pthread_mutex_unlock(&lrc.lock);
    free(top);
    stats_add(STAT_DIFFS_APPLIED, nitems);
    stats_add(STAT_T_DIFF_APPLY_NS, clock_ns() - t0);
}

/* Asks `from`, the writer of the latest notice pending here, for its whole
 * copy of the page, which it gives if that holds each writer's writes up
 * to need[writer] and no others: what the pending diffs would make of this
 * copy. Installs it, and puts this node's writes of its open interval
 * back on top (their diffs were made when the page was invalidated).
 * Returns whether it came. Program thread, fault lock held. */
static bool ask_cover(size_t page, struct lpage *p, int from, const uint32_t *need)
{
    size_t nodes = (size_t)job()->nodes;
    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = true;
    lrc.f.page = (uint32_t)page;
    lrc.f.cover_done = false;
    lrc.f.cover_from = from;
    pthread_mutex_unlock(&lrc.lock);
    struct cover_req r = {(uint32_t)page, (uint32_t)nodes};
    struct iovec iov[2] = {{.iov_base = &r, .iov_len = sizeof r},
                           {.iov_base = (void *)need, .iov_len = nodes * sizeof *need}};
    ipc_sendv(from, LRC_COVER_REQ, 0, iov, 2);
    coherence_wait_flag(&lrc.lock, &lrc.f.cover_done);

    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = false;
    unsigned char *q = lrc.f.reply[from]; /* checked on arrival (on_cover_rep) */
    lrc.f.reply[from] = NULL;
    struct cover_rep h;
    memcpy(&h, q, sizeof h);
    if (h.status) {
        memcpy(have_of(p), q + sizeof h, nodes * sizeof *p->have);
        memcpy(mem_sys(page), q + sizeof h + nodes * sizeof *p->have, mem.page_size);
        for (uint32_t k = 0; k < p->ndiffs; k++)
            if (p->diffs[k].stamp == OPEN_STAMP &&
                mem_diff_apply(mem_sys(page), mem.page_size, p->diffs[k].data, p->diffs[k].len))
                log_fatal("internal error: a diff of this node's own does not apply");
        pend_free(p->pend, p->npend);
        p->pend = NULL;
        p->npend = p->cap_pend = 0;
    }
    pthread_mutex_unlock(&lrc.lock);
    free(q);
    return h.status != 0;
}

/* Before the writers are asked for diffs: when the pending notices come
 * from two writers or more, asks the latest of them for its copy
 * (ask_cover) instead of every one for its diffs: one round trip to one
 * node where a fault would wait for the slowest of several. Returns true
 * when the copy came and nothing is left to fetch. Program thread, fault
 * lock held. */
static bool take_cover(size_t page)
{
    int nodes = job()->nodes;
    uint32_t *need = calloc((size_t)nodes, sizeof *need);
    bool *pending = calloc((size_t)nodes, sizeof *pending); /* writers with notices pending */
    if (!need || !pending)
        log_fatal("out of memory for lrc page records");
    int writers = 0, from = -1;
    uint32_t from_stamp = 0;
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lp(page);
    uint32_t *have = have_of(p);
    for (uint32_t i = 0; i < p->npend; i++) {
        struct lnote n = p->pend[i];
        if (!pending[n.node]) {
            pending[n.node] = true;
            writers++;
        }
        if (n.stamp > need[n.node])
            need[n.node] = n.stamp;
        if (from < 0 || n.stamp > from_stamp || (n.stamp == from_stamp && n.node > from)) {
            from = n.node;
            from_stamp = n.stamp;
        }
    }
    bool ask = writers >= 2 && !p->cover_skip;
    if (writers >= 2 && p->cover_skip)
        p->cover_skip--;
    for (int w = 0; w < nodes; w++)
        if (have[w] > need[w])
            need[w] = have[w];
    pthread_mutex_unlock(&lrc.lock);

    bool done = false;
    if (ask && ask_cover(page, p, from, need)) {
        /* The other writers were not asked: they learn it here. */
        for (int w = 0; w < nodes; w++)
            if (w != from && pending[w])
                seen_add(w, page, p->have[w]);
        stats_add(STAT_LRC_COVERS, 1);
        PROFILE_PAGE(PROF_FETCH, PROF_FETCH_FAULT, page, 0);
        done = true;
    } else if (ask) {
        pthread_mutex_lock(&lrc.lock);
        p->cover_skip = COVER_SKIP;
        pthread_mutex_unlock(&lrc.lock);
        stats_add(STAT_LRC_COVERS_REFUSED, 1);
    }
    free(need);
    free(pending);
    return done;
}

/* Makes an invalid page valid (read-only). */
static void make_valid(size_t page)
{
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lp(page);
    bool known = p->allocated;
    int base_from = p->base_from;
    bool pending = p->npend > 0;
    pthread_mutex_unlock(&lrc.lock);
    if (!known) {
        int base = mem_base_node(page);
        bool ok = base == job()->rank ? mem_home_decide(page, job()->rank) >= 0
                                 : ask_base(page, base, BASE_PROBE) == BASE_ALLOCATED;
        if (!ok)
            mem_crash_unallocated(mem_app(page));
        pthread_mutex_lock(&lrc.lock);
        p->allocated = 1;
        pthread_mutex_unlock(&lrc.lock);
    }
    cache_swap_in(page); /* evicted: its content as it left, the diffs since go on top */
    if (base_from >= 0) {
        if (ask_base(page, base_from, BASE_COPY) != BASE_DATA)
            log_fatal("internal error: node %d kept no copy of page %zu", base_from, page);
        pthread_mutex_lock(&lrc.lock);
        p->base_from = -1;
        pthread_mutex_unlock(&lrc.lock);
        stats_add(STAT_PAGES_FETCHED, 1);
        PROFILE_PAGE(PROF_FETCH, PROF_FETCH_FAULT, page, 0);
    }
    if (pending && !take_cover(page))
        fetch_diffs(page);
    pthread_mutex_lock(&lrc.lock); /* a cover served from this copy (on_cover_req) reads it */
    mem.pages[page].state = PAGE_READ;
    pthread_mutex_unlock(&lrc.lock);
    mem_protect(page, PROT_READ);
    mem_protect_flush();
}

static void lrc_write_fault(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    if (e->state == PAGE_INVALID)
        make_valid(page);
    if (e->state != PAGE_WRITE) {
        uint64_t t1 = clock_ns();
        unsigned char *twin = mem_copy_get();
        memcpy(twin, mem_sys(page), mem.page_size);
        stats_add(STAT_TWINS, 1);
        stats_add(STAT_T_TWIN_NS, clock_ns() - t1);
        pthread_mutex_lock(&lrc.lock);
        struct lpage *p = lp(page);
        if (p->nlazy && !p->lazy[p->nlazy - 1].after)
            p->lazy[p->nlazy - 1].after = twin; /* where the last closed interval left it */
        e->twin = twin;
        /* Under the lock, before the page opens: a cover served from this
         * copy (on_cover_req) is read under it, and must hold no write of
         * the interval now open. */
        if (!e->dirty) {
            e->dirty = 1;
            page_list_add(&lrc.dirty, &lrc.ndirty, &lrc.cap_dirty, page);
        }
        e->state = PAGE_WRITE;
        pthread_mutex_unlock(&lrc.lock);
        mem_protect(page, PROT_READ | PROT_WRITE);
        mem_protect_flush();
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
        struct lpage *p = lp(page);
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
        have_of(p)[job()->rank] = stamp; /* its writes are in the copy */
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
        struct lpage *p = lp(page);
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
            lazy_take(page, p, p->nlazy - 1);
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
    struct lpage *p = lp(page);
    if (e->twin) {
        open_diff(page, p);
        dirty = true;
    }
    if (p->nlazy && !p->lazy[p->nlazy - 1].after)
        lazy_take(page, p, p->nlazy - 1);
    pthread_mutex_unlock(&lrc.lock);
    cache_swap_out(page);
    return dirty ? CACHE_WRITTEN_BACK : CACHE_CLEAN;
}

/* ---- collection at barriers (program thread) -------------------------- */

static void free_page_record(struct lpage *p)
{
    for (uint32_t k = 0; k < p->ndiffs; k++)
        free(p->diffs[k].data);
    free(p->diffs);
    p->diffs = NULL;
    p->ndiffs = p->cap_diffs = 0;
}

/* Drops the page's lazy intervals, whose diffs nobody asked for, and
 * their copies. Caller holds lrc.lock. */
static void drop_lazy(size_t page, struct lpage *p)
{
    while (p->nlazy) {
        struct lazy z = p->lazy[--p->nlazy];
        release_copy(page, p, z.before);
        release_copy(page, p, z.after);
    }
}

/* A collection's first half, at the barrier that starts it: each keeper
 * brings its copy up to date and snapshots it; a node whose copy is
 * invalid will fetch the keeper's. */
static void collect_keep(void)
{
    coherence_lock();
    for (size_t i = 0; i < lrc.ntouched; i++) {
        size_t page = lrc.touched[i];
        pthread_mutex_lock(&lrc.lock);
        struct lpage *p = lp(page);
        int keeper = p->last_node;
        if (keeper != job()->rank && mem.pages[page].state == PAGE_INVALID) {
            pend_free(p->pend, p->npend);
            p->pend = NULL;
            p->npend = p->cap_pend = 0;
            p->base_from = keeper;
        }
        pthread_mutex_unlock(&lrc.lock);
        if (keeper != job()->rank)
            continue;
        if (mem.pages[page].state == PAGE_INVALID) {
            cache_reserve(1);
            make_valid(page);
            cache_admit(page);
        }
        unsigned char *snap = malloc(mem.page_size);
        if (!snap)
            log_fatal("out of memory for a page kept at collection");
        memcpy(snap, mem_sys(page), mem.page_size);
        pthread_mutex_lock(&lrc.lock);
        p->next_snapshot = snap;
        pthread_mutex_unlock(&lrc.lock);
    }
    coherence_unlock();
}

/* Its second half, after one more barrier round: every keeper is up to
 * date, so the diffs, copies and notices are needed no more. */
static void collect_drop(void)
{
    coherence_lock();
    pthread_mutex_lock(&lrc.lock);
    for (size_t i = 0; i < lrc.ntouched; i++) {
        size_t page = lrc.touched[i];
        struct lpage *p = lp(page);
        free_page_record(p);
        drop_lazy(page, p);
        free(p->snapshot);
        p->snapshot = p->next_snapshot; /* NULL unless we keep the page */
        p->next_snapshot = NULL;
        p->last_node = -1;
        p->last_stamp = 0;
        p->listed = 0;
        if (p->have) /* every copy, and every snapshot, holds all that came before */
            memset(p->have, 0, (size_t)job()->nodes * sizeof *p->have);
    }
    lrc.ntouched = 0;
    lrc.notices = 0;
    pthread_mutex_unlock(&lrc.lock);
    coherence_unlock();
}

/* Collects at the first barrier after lrc_gc_notices notices: keeps, asks
 * for one more round, and drops at its end. */
static bool lrc_barrier_done(uint32_t votes)
{
    (void)votes; /* lrc asks for no round by vote: every node counts the same notices */
    if (lrc.collecting) {
        collect_drop();
        lrc.collecting = false;
        return false;
    }
    if (lrc.notices < lrc_gc_notices)
        return false;
    lrc.collecting = true;
    collect_keep();
    return true;
}

/* ---- handlers (delivery thread, or a waiting program thread) ---------- */

/* `src` will never ask for the page's diffs up to stamp `latest` (it asked
 * for them, or its copy holds them): drops every closed diff, and every
 * lazy interval, that all other nodes are done with (see the top). Caller
 * holds lrc.lock. */
static void note_asked(size_t page, struct lpage *p, int src, uint32_t latest)
{
    int nodes = job()->nodes, me = job()->rank;
    if (!p->asked && !(p->asked = calloc((size_t)nodes, sizeof *p->asked)))
        log_fatal("out of memory for lrc page records");
    if (latest > p->asked[src])
        p->asked[src] = latest;
    uint32_t everyone = UINT32_MAX;
    for (int j = 0; j < nodes; j++)
        if (j != me && p->asked[j] < everyone)
            everyone = p->asked[j];
    uint32_t kept = 0;
    for (uint32_t k = 0; k < p->ndiffs; k++) {
        struct ldiff *d = &p->diffs[k];
        if (d->stamp != OPEN_STAMP && d->stamp <= everyone) {
            free(d->data);
            stats_add(STAT_DIFFS_COLLECTED, 1);
            continue;
        }
        p->diffs[kept++] = *d;
    }
    p->ndiffs = kept;
    for (uint32_t k = 0; k < p->nlazy;)
        if (p->lazy[k].stamp <= everyone) {
            lazy_drop(page, p, k);
            stats_add(STAT_DIFFS_COLLECTED, 1);
        } else {
            k++;
        }
}

static void on_diff_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct diff_req r;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "diff request");
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_diff_req_check(&r, rest, &lim);
    if (why)
        log_fatal("node %d sent a malformed diff request: %s", src, why);
    uint32_t *stamps = malloc(r.count * sizeof *stamps);
    if (!stamps)
        log_fatal("out of memory serving a diff request");
    memcpy(stamps, tail, r.count * sizeof *stamps);

    struct buf b = {0};
    struct diff_rep h = {.page = r.page};
    buf_put(&b, &h, sizeof h);
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lp(r.page);
    uint32_t latest = 0;
    for (uint32_t i = 0; i < r.count; i++) {
        if (stamps[i] == OPEN_STAMP || stamps[i] > lrc.clock)
            log_fatal("node %d asked for diffs of an interval node %d never closed", src, job()->rank);
        if (stamps[i] > latest)
            latest = stamps[i];
        for (uint32_t k = 0; k < p->nlazy; k++)
            if (p->lazy[k].stamp == stamps[i]) {
                /* An "after" that is the page itself is read-only here: stable. */
                lazy_take(r.page, p, k);
                break;
            }
    }
    for (uint32_t k = 0; k < p->ndiffs; k++) {
        struct ldiff *d = &p->diffs[k];
        bool wanted = false;
        for (uint32_t i = 0; i < r.count && !wanted; i++)
            wanted = d->stamp == stamps[i];
        if (!wanted)
            continue;
        struct diff_item it = {d->stamp, d->len};
        buf_put(&b, &it, sizeof it);
        buf_put(&b, d->data, d->len);
        h.count++;
    }
    note_asked(r.page, p, src, latest);
    pthread_mutex_unlock(&lrc.lock);
    memcpy(b.p, &h, sizeof h);
    ipc_send(src, LRC_DIFF_REP, 0, b.p, b.len);
    buf_free(&b);
    free(stamps);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_diff_rep(int src, const void *msg, size_t len)
{
    struct diff_rep h;
    size_t rest;
    ipc_body(src, msg, len, &h, sizeof h, &rest, "diff reply");
    pthread_mutex_lock(&lrc.lock);
    if (!lrc.f.waiting || h.page != lrc.f.page || !lrc.f.asked[src] || lrc.f.reply[src])
        log_fatal("node %d sent diffs nobody asked for", src);
    lrc.f.reply[src] = ipc_copy_payload(msg, len, 0, &lrc.f.reply_len[src]);
    struct coh_limits lim;
    coherence_limits(&lim);
    const char *why = coh_diff_rep_check(lrc.f.reply[src], lrc.f.reply_len[src], &lim);
    if (why)
        log_fatal("node %d sent a malformed diff reply: %s", src, why);
    lrc.f.got++;
    pthread_mutex_unlock(&lrc.lock);
    ipc_notify();
}

/* Gives the page whole if this copy holds exactly the writes the asker's
 * would after its pending diffs (ask_cover): per writer, up to the same
 * stamp, and none of this node's open interval. Nothing more: a node sees
 * an interval's writes only once its notice has come, all of its pages at
 * once, as the diffs would give them (a program that polls a flag set
 * after a row, with no flush between, relies on it: omp_row_pipeline). */
static void on_cover_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct cover_req r;
    size_t rest;
    const void *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "cover request");
    size_t nodes = (size_t)job()->nodes;
    if (r.page >= mem.npages || r.nodes != nodes || rest != nodes * sizeof(uint32_t))
        log_fatal("node %d sent a malformed cover request", src);
    uint32_t *need = malloc(rest);
    if (!need)
        log_fatal("out of memory serving a cover request");
    memcpy(need, tail, rest);
    struct cover_rep h = {.page = r.page};
    struct buf b = {0};
    buf_put(&b, &h, sizeof h);
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lrc.tab[r.page];
    bool whole = p && p->have && mem.pages[r.page].state == PAGE_READ && !mem.pages[r.page].dirty;
    for (size_t w = 0; whole && w < nodes; w++)
        whole = p->have[w] == need[w];
    if (whole) {
        h.status = 1;
        buf_put(&b, p->have, nodes * sizeof *p->have);
        buf_put(&b, mem_sys(r.page), mem.page_size);
        note_asked(r.page, p, src, p->have[job()->rank]);
    }
    pthread_mutex_unlock(&lrc.lock);
    memcpy(b.p, &h, sizeof h);
    ipc_send(src, LRC_COVER_REP, 0, b.p, b.len);
    if (whole)
        stats_add(STAT_PAGES_SERVED, 1);
    buf_free(&b);
    free(need);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_cover_rep(int src, const void *msg, size_t len)
{
    struct cover_rep h;
    size_t rest;
    ipc_body(src, msg, len, &h, sizeof h, &rest, "cover reply");
    size_t whole = (size_t)job()->nodes * sizeof(uint32_t) + mem.page_size;
    pthread_mutex_lock(&lrc.lock);
    if (!lrc.f.waiting || lrc.f.cover_done || src != lrc.f.cover_from || h.page != lrc.f.page ||
        lrc.f.reply[src])
        log_fatal("node %d sent a page nobody asked for", src);
    if (h.status > 1 || rest != (h.status ? whole : 0))
        log_fatal("node %d sent a malformed cover reply", src);
    lrc.f.reply[src] = ipc_copy_payload(msg, len, 0, &lrc.f.reply_len[src]);
    lrc.f.cover_done = true;
    pthread_mutex_unlock(&lrc.lock);
    ipc_notify();
}

/* `src` will never ask for our diffs of these pages up to these stamps. */
static void on_seen(int src, const void *msg, size_t len)
{
    uint32_t count;
    size_t rest;
    const unsigned char *q = ipc_body(src, msg, len, &count, sizeof count, &rest, "seen list");
    if (!count || count > rest / (2 * sizeof(uint32_t)) || rest != count * 2 * sizeof(uint32_t))
        log_fatal("node %d sent a malformed seen list", src);
    pthread_mutex_lock(&lrc.lock);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t pair[2];
        memcpy(pair, q + i * sizeof pair, sizeof pair);
        struct lpage *p = pair[0] < mem.npages ? lrc.tab[pair[0]] : NULL;
        if (!p || pair[1] > lrc.clock)
            log_fatal("node %d says it holds writes of node %d to page %u that it never made", src,
                      job()->rank, pair[0]);
        note_asked(pair[0], p, src, pair[1]);
    }
    pthread_mutex_unlock(&lrc.lock);
}

static void on_base_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct base_req r;
    ipc_body(src, msg, len, &r, sizeof r, NULL, "page request");
    if (r.page >= mem.npages || r.kind > BASE_COPY)
        log_fatal("node %d sent a malformed page request", src);
    struct base_rep rep = {.page = r.page};
    const void *data = NULL;
    if (r.kind == BASE_PROBE) {
        if (mem_base_node(r.page) != job()->rank)
            log_fatal("node %d asked node %d about page %u, which it is not the base of", src,
                      job()->rank, r.page);
        rep.status = mem_home_decide(r.page, src) >= 0 ? BASE_ALLOCATED : BASE_UNALLOCATED;
    } else {
        pthread_mutex_lock(&lrc.lock);
        /* During a collection the new snapshot is served as soon as it is
         * made: a node may leave the collection's barrier, and ask for it,
         * before this node has put it in place of the old one. The old one
         * is asked for only before that barrier, by the new keeper. */
        struct lpage *p = lrc.tab[r.page];
        data = !p ? NULL : p->next_snapshot ? p->next_snapshot : p->snapshot;
        pthread_mutex_unlock(&lrc.lock);
        if (!data)
            log_fatal("node %d asked node %d for page %u, which it does not keep", src, job()->rank,
                      r.page);
        rep.status = BASE_DATA;
        stats_add(STAT_PAGES_SERVED, 1);
    }
    struct iovec iov[2] = {{.iov_base = &rep, .iov_len = sizeof rep},
                           {.iov_base = (void *)data, .iov_len = data ? mem.page_size : 0}};
    ipc_sendv(src, LRC_BASE_REP, 0, iov, 2);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void *place_base_rep(int src, const void *head, size_t head_len, size_t msg_len,
                            size_t *skip)
{
    struct base_rep r;
    coherence_place_head(src, head, head_len, &r, sizeof r, skip, "page reply");
    pthread_mutex_lock(&lrc.lock);
    bool expected = lrc.f.waiting && !lrc.f.base_done && r.page == lrc.f.page;
    pthread_mutex_unlock(&lrc.lock);
    if (!expected || r.status > BASE_DATA ||
        msg_len - *skip != (r.status == BASE_DATA ? mem.page_size : 0))
        log_fatal("node %d sent a page reply nobody asked for, or a malformed one", src);
    return mem_sys_fill(r.page, r.status == BASE_DATA ? 1 : 0);
}

static void on_base_rep(int src, const void *msg, size_t len)
{
    struct base_rep r;
    size_t data;
    ipc_body(src, msg, len, &r, sizeof r, &data, "page reply");
    pthread_mutex_lock(&lrc.lock);
    lrc.f.base_status = r.status;
    lrc.f.base_done = true;
    pthread_mutex_unlock(&lrc.lock);
    ipc_notify();
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
    ipc_register(LRC_DIFF_REQ, "LRC_DIFF_REQ", on_diff_req, NULL);
    ipc_register(LRC_DIFF_REP, "LRC_DIFF_REP", on_diff_rep, NULL);
    ipc_register(LRC_BASE_REQ, "LRC_BASE_REQ", on_base_req, NULL);
    ipc_register(LRC_BASE_REP, "LRC_BASE_REP", on_base_rep, place_base_rep);
    ipc_register(LRC_COVER_REQ, "LRC_COVER_REQ", on_cover_req, NULL);
    ipc_register(LRC_COVER_REP, "LRC_COVER_REP", on_cover_rep, NULL);
    ipc_register(LRC_SEEN, "LRC_SEEN", on_seen, NULL);
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
        free_page_record(p);
        drop_lazy(page, p);
        mem_copy_put(mem.pages[page].twin);
        mem.pages[page].twin = NULL;
        free(p->lazy);
        pend_free(p->pend, p->npend);
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
    .read_fault = make_valid, .write_fault = lrc_write_fault,
    .release = lrc_release,
    .apply_notices = lrc_apply_notices,
    .evict = lrc_evict,
    .barrier_done = lrc_barrier_done,
};
