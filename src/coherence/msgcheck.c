/*
 * msgcheck.c — the coherence protocols' message bodies, checked before use
 * (msgcheck.h). Pure: bytes and limits in, a verdict out.
 */
#include <string.h>

#include "coherence/coherence.h"
#include "coherence/msgcheck.h"
#include "mem/diff.h"

const char *coh_notices_check(const void *data, size_t len, const struct coh_limits *l,
                              uint64_t *notices)
{
    const unsigned char *p = data, *end = p + len;
    uint32_t count;
    /* Each node's last interval id so far in this message (0: none yet).
     * A job has at most VT_MAX_NODES nodes. */
    uint32_t last[VT_MAX_NODES];
    uint64_t total = 0;
    if (l->nodes < 1 || l->nodes > VT_MAX_NODES)
        return "a job size out of range";
    if (len < sizeof count)
        return "no interval count";
    memcpy(&count, p, sizeof count);
    p += sizeof count;
    if (count > (size_t)(end - p) / sizeof(struct wire_interval))
        return "more intervals than the message holds";
    memset(last, 0, (size_t)l->nodes * sizeof *last);
    for (uint32_t k = 0; k < count; k++) {
        struct wire_interval w;
        if ((size_t)(end - p) < sizeof w)
            return "a truncated interval";
        memcpy(&w, p, sizeof w);
        p += sizeof w;
        if (w.node >= l->nodes)
            return "an interval of a node beyond the job";
        if (w.flags & ~WIRE_INTERVAL_VT)
            return "an interval with unknown flags";
        if (w.id == 0)
            return "an interval numbered 0";
        if (w.id <= last[w.node])
            return "a node's intervals out of order";
        last[w.node] = w.id;
        if (w.flags & WIRE_INTERVAL_VT) {
            size_t vt_len = (size_t)l->nodes * sizeof(uint32_t);
            uint32_t own;
            if ((size_t)(end - p) < vt_len)
                return "a truncated vector time";
            memcpy(&own, p + (size_t)w.node * sizeof own, sizeof own);
            if (own != w.id)
                return "an interval whose vector time names another";
            p += vt_len;
        }
        if ((size_t)(end - p) / sizeof(struct notice) < w.count)
            return "truncated write notices";
        for (uint32_t i = 0; i < w.count; i++) {
            struct notice n;
            memcpy(&n, p, sizeof n);
            p += sizeof n;
            if (n.page >= l->npages)
                return "a write notice for a page beyond the region";
        }
        total += w.count;
    }
    if (p != end)
        return "trailing bytes after the intervals";
    if (notices)
        *notices = total;
    return NULL;
}

const char *coh_page_req_check(const struct page_req *r, const struct coh_limits *l)
{
    uint32_t run = r->flags >> HOME_RUN_SHIFT;
    if (r->page >= l->npages)
        return "a page beyond the region";
    if (r->requester < 0 || r->requester >= l->nodes || r->requester == l->rank)
        return "a requester out of range";
    if (r->flags & ~(HOME_FROM_BASE | (0xffu << HOME_RUN_SHIFT)))
        return "unknown flags";
    if (run > HOME_RUN_MAX || (run && !(r->flags & HOME_FROM_BASE)))
        return "a run not from the base node, or too long";
    return NULL;
}

const char *coh_page_head_check(uint32_t page, uint32_t status, int32_t home, size_t data,
                                const struct coh_limits *l)
{
    if (page >= l->npages)
        return "a page beyond the region";
    if (status > HOME_UNALLOCATED)
        return "an unknown status";
    if (data != (status == HOME_DATA ? l->page_size : 0))
        return "data that is not one page";
    if (status != HOME_UNALLOCATED && (home < 0 || home >= l->nodes))
        return "a home out of range";
    return NULL;
}

const char *coh_page_rep_check(const struct page_rep *r, int src, size_t data,
                               const struct coh_limits *l)
{
    const char *why = coh_page_head_check(r->page, r->status, r->home, data, l);
    if (why)
        return why;
    if (r->run > HOME_RUN_MAX || r->page + (size_t)r->run >= l->npages)
        return "a run too long or beyond the region";
    if (r->run && r->status == HOME_UNALLOCATED)
        return "a run of unallocated pages";
    if (r->status == HOME_DATA && r->home != src)
        return "data from a node that is not the home it names";
    if (r->status == HOME_YOU_ARE_HOME && r->home != l->rank)
        return "another node named home";
    return NULL;
}

const char *coh_diff_check(const struct diff_hdr *d, const void *diff, size_t len,
                           const struct coh_limits *l)
{
    if (d->page >= l->npages)
        return "a page beyond the region";
    if (mem_diff_check(diff, len, l->page_size) < 0)
        return "a malformed diff";
    return NULL;
}

const char *coh_diffs_check(const void *body, size_t len, const struct coh_limits *l,
                            uint32_t *count)
{
    const unsigned char *q = body, *end = q + len;
    uint32_t n = 0;
    if (len == 0)
        return "no diffs";
    while (q != end) {
        struct diffs_item it;
        if ((size_t)(end - q) < sizeof it)
            return "a truncated diff header";
        memcpy(&it, q, sizeof it);
        q += sizeof it;
        if ((size_t)(end - q) < it.len)
            return "a diff longer than the message";
        if (it.flags & ~DIFFS_BEFORE_ARRIVAL)
            return "a diff with unknown flags";
        const char *why = coh_diff_check(&(struct diff_hdr){.page = it.page, .idx = it.idx}, q,
                                         it.len, l);
        if (why)
            return why;
        q += it.len;
        n++;
    }
    if (count)
        *count = n;
    return NULL;
}

const char *coh_diff_acks_check(const void *body, size_t len, const struct coh_limits *l)
{
    if (len == 0 || len % sizeof(struct diff_ack))
        return "a length that is not a whole number of acknowledgements";
    for (size_t off = 0; off < len; off += sizeof(struct diff_ack)) {
        struct diff_ack a;
        memcpy(&a, (const unsigned char *)body + off, sizeof a);
        if (a.page >= l->npages || a.zero)
            return "an acknowledgement of a page beyond the region";
    }
    return NULL;
}

const char *coh_diff_req_check(const struct diff_req *r, size_t rest, const struct coh_limits *l)
{
    if (r->page >= l->npages)
        return "a page beyond the region";
    if (r->count == 0 || rest != (size_t)r->count * sizeof(uint32_t))
        return "a stamp count that does not match its stamps";
    return NULL;
}

const char *coh_diff_rep_check(const void *body, size_t len, const struct coh_limits *l)
{
    const unsigned char *q = body, *end = q + len;
    struct diff_rep h;
    if (len < sizeof h)
        return "a truncated header";
    memcpy(&h, q, sizeof h);
    q += sizeof h;
    if (h.page >= l->npages)
        return "a page beyond the region";
    for (uint32_t k = 0; k < h.count; k++) {
        struct diff_item it;
        if ((size_t)(end - q) < sizeof it)
            return "a truncated diff";
        memcpy(&it, q, sizeof it);
        q += sizeof it;
        if ((size_t)(end - q) < it.len)
            return "a diff longer than the message";
        if (it.stamp == LRC_OPEN_STAMP)
            return "a diff of an open interval";
        if (mem_diff_check(q, it.len, l->page_size) < 0)
            return "a malformed diff";
        q += it.len;
    }
    if (q != end)
        return "trailing bytes after the diffs";
    return NULL;
}

size_t coh_run_pages(uint32_t first, uint32_t count, const struct coh_limits *l)
{
    return count && count <= HLRC_READ_AHEAD_MAX && first < l->npages && count <= l->npages - first
               ? count
               : 0;
}
