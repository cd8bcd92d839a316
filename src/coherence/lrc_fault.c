/*
 * lrc_fault.c — bringing a page up to date at a fault (program thread,
 * fault lock held). A page never touched is only checked with its base
 * node (allocated?); after a collection, the keeper's copy comes first
 * (lrc_gc.c); then the pending notices' diffs, fetched from each writer
 * and applied in causal order (lrc.c describes the stamps), or, when
 * they name two writers or more, the latest writer's whole copy (a
 * cover), if it holds exactly what those diffs would make. And the write
 * fault's twin. The replies are taken in on the delivery thread
 * (lrc_handlers.c) into lrc.f, which the fault waits on.
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
#include "base/stats.h"
#include "coherence/lrc_state.h"
#include "ipc/ipc.h"

/* Faults of a page that ask every writer after a cover was refused. */
#define COVER_SKIP 8

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
    struct lpage *p = lrc_record(page);
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
        lrc_pend_free(pend, npend);
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
        /* Checked on arrival (lrc_on_diff_rep): well formed. */
        for (uint32_t k = 0; k < h.count; k++) {
            struct diff_item it;
            memcpy(&it, q, sizeof it);
            q += sizeof it;
            if (nitems == cap)
                items = libheap_grow(items, &cap, sizeof *items, 16, "applying diffs");
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
        lrc_pend_free(pend, npend);
    for (int node = 0; node < job()->nodes; node++) {
        free(lrc.f.reply[node]);
        lrc.f.reply[node] = NULL;
    }
    pthread_mutex_lock(&lrc.lock);
    lrc.f.waiting = false;
    uint32_t *have = lrc_have_of(p); /* the copy holds every writer's asked intervals now */
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
    unsigned char *q = lrc.f.reply[from]; /* checked on arrival (lrc_on_cover_rep) */
    lrc.f.reply[from] = NULL;
    struct cover_rep h;
    memcpy(&h, q, sizeof h);
    if (h.status) {
        memcpy(lrc_have_of(p), q + sizeof h, nodes * sizeof *p->have);
        memcpy(mem_sys(page), q + sizeof h + nodes * sizeof *p->have, mem.page_size);
        for (uint32_t k = 0; k < p->ndiffs; k++)
            if (p->diffs[k].stamp == OPEN_STAMP &&
                mem_diff_apply(mem_sys(page), mem.page_size, p->diffs[k].data, p->diffs[k].len))
                log_fatal("internal error: a diff of this node's own does not apply");
        lrc_pend_free(p->pend, p->npend);
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
    struct lpage *p = lrc_record(page);
    uint32_t *have = lrc_have_of(p);
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
                lrc_seen_add(w, page, p->have[w]);
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
void lrc_make_valid(size_t page)
{
    pthread_mutex_lock(&lrc.lock);
    struct lpage *p = lrc_record(page);
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
    pthread_mutex_lock(&lrc.lock); /* a cover served from this copy (lrc_on_cover_req) reads it */
    mem.pages[page].state = PAGE_READ;
    pthread_mutex_unlock(&lrc.lock);
    mem_protect(page, PROT_READ);
    mem_protect_flush();
}

void lrc_write_fault(size_t page)
{
    struct page_entry *e = &mem.pages[page];
    if (e->state == PAGE_INVALID)
        lrc_make_valid(page);
    if (e->state != PAGE_WRITE) {
        uint64_t t1 = clock_ns();
        unsigned char *twin = mem_copy_get();
        memcpy(twin, mem_sys(page), mem.page_size);
        stats_add(STAT_TWINS, 1);
        stats_add(STAT_T_TWIN_NS, clock_ns() - t1);
        pthread_mutex_lock(&lrc.lock);
        struct lpage *p = lrc_record(page);
        if (p->nlazy && !p->lazy[p->nlazy - 1].after)
            p->lazy[p->nlazy - 1].after = twin; /* where the last closed interval left it */
        e->twin = twin;
        /* Under the lock, before the page opens: a cover served from this
         * copy (lrc_on_cover_req) is read under it, and must hold no write of
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
