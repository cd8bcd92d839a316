/*
 * fuzz_coh_msg.c — the coherence protocols' other message bodies
 * (src/coherence/msgcheck.c): page requests and replies, diffs to a home
 * (one, or a release's together) and their acknowledgements, lrc's diff
 * requests and replies, hlrc's read-ahead runs.
 *
 * Input: [kind][nodes-1][rank][npages lo][npages hi][page size][body...].
 * For each body accepted, what its handler relies on is checked again here
 * independently: indices in range, lengths exact, and every diff carried
 * applies to a page of the job's size (ASan watches the page's bounds).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coherence/msgcheck.h"
#include "mem/diff.h"

/* The fixed head of a body into *out; false when the body is shorter. */
static bool head(const unsigned char *m, size_t len, void *out, size_t size)
{
    if (len < size)
        return false;
    memcpy(out, m, size);
    return true;
}

/* Applies a diff that a check accepted: it must apply, inside the page. */
static void must_apply(const void *diff, size_t len, size_t page_size)
{
    unsigned char *page = malloc(page_size); /* exactly sized for ASan */
    memset(page, 0xa5, page_size);
    if (mem_diff_apply(page, page_size, diff, len) != 0)
        abort();
    free(page);
}

/* must_apply on a copy of the diff exactly sized for ASan (one of several
 * a body carries). */
static void must_apply_copy(const void *diff, size_t len, size_t page_size)
{
    unsigned char *one = malloc(len ? len : 1);
    memcpy(one, diff, len);
    must_apply(one, len, page_size);
    free(one);
}

static void page_req(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    struct page_req r;
    if (len != sizeof r)
        return;
    memcpy(&r, m, sizeof r);
    if (coh_page_req_check(&r, l))
        return;
    uint32_t run = r.flags >> HOME_RUN_SHIFT;
    if (r.page >= l->npages || r.requester < 0 || r.requester >= l->nodes || r.requester == l->rank ||
        run > HOME_RUN_MAX || (run && !(r.flags & HOME_FROM_BASE)))
        abort();
}

static void page_rep(const unsigned char *m, size_t len, int src, const struct coh_limits *l)
{
    struct page_rep r;
    if (!head(m, len, &r, sizeof r))
        return;
    size_t data = len - sizeof r;
    const char *head = coh_page_head_check(r.page, r.status, r.home, data, l);
    const char *rep = coh_page_rep_check(&r, src, data, l);
    if (head && !rep)
        abort(); /* the reply's check is the head's and more */
    if (rep)
        return;
    if (r.page + (size_t)r.run >= l->npages || r.run > HOME_RUN_MAX || r.status > HOME_UNALLOCATED ||
        data != (r.status == HOME_DATA ? l->page_size : 0) ||
        (r.status != HOME_UNALLOCATED && (r.home < 0 || r.home >= l->nodes)) ||
        (r.status == HOME_DATA && r.home != src))
        abort();
}

static void diff(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    struct diff_hdr d;
    if (!head(m, len, &d, sizeof d))
        return;
    size_t dlen = len - sizeof d;
    unsigned char *body = malloc(dlen ? dlen : 1);
    memcpy(body, m + sizeof d, dlen);
    if (!coh_diff_check(&d, body, dlen, l)) {
        if (d.page >= l->npages)
            abort();
        must_apply(body, dlen, l->page_size);
    }
    free(body);
}

static void diff_req(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    struct diff_req r;
    if (!head(m, len, &r, sizeof r))
        return;
    size_t rest = len - sizeof r;
    if (!coh_diff_req_check(&r, rest, l) &&
        (r.page >= l->npages || !r.count || rest / sizeof(uint32_t) != r.count || rest % sizeof(uint32_t)))
        abort();
}

static void diff_rep(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    if (coh_diff_rep_check(m, len, l))
        return;
    const unsigned char *q = m, *end = m + len;
    struct diff_rep h;
    memcpy(&h, q, sizeof h);
    q += sizeof h;
    if (h.page >= l->npages)
        abort();
    for (uint32_t k = 0; k < h.count; k++) {
        struct diff_item it;
        if ((size_t)(end - q) < sizeof it)
            abort();
        memcpy(&it, q, sizeof it);
        q += sizeof it;
        if ((size_t)(end - q) < it.len || it.stamp == LRC_OPEN_STAMP)
            abort();
        must_apply_copy(q, it.len, l->page_size);
        q += it.len;
    }
    if (q != end)
        abort();
}

static void diffs(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    uint32_t count;
    if (coh_diffs_check(m, len, l, &count))
        return;
    const unsigned char *q = m, *end = m + len;
    uint32_t n = 0;
    while (q < end) {
        struct diffs_item it;
        if ((size_t)(end - q) < sizeof it)
            abort();
        memcpy(&it, q, sizeof it);
        q += sizeof it;
        if ((size_t)(end - q) < it.len || it.page >= l->npages || (it.flags & ~DIFFS_BEFORE_ARRIVAL))
            abort();
        must_apply_copy(q, it.len, l->page_size);
        q += it.len;
        n++;
    }
    if (q != end || n == 0 || n != count)
        abort();
}

static void diff_acks(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    if (coh_diff_acks_check(m, len, l))
        return;
    if (len == 0 || len % sizeof(struct diff_ack))
        abort();
    for (size_t off = 0; off < len; off += sizeof(struct diff_ack)) {
        struct diff_ack a;
        memcpy(&a, m + off, sizeof a);
        if (a.page >= l->npages || a.zero)
            abort();
    }
}

static void run(const unsigned char *m, size_t len, const struct coh_limits *l)
{
    struct run_req r;
    if (!head(m, len, &r, sizeof r))
        return;
    size_t n = coh_run_pages(r.first, r.count, l);
    if (n && (n != r.count || n > HLRC_READ_AHEAD_MAX || (size_t)r.first + n > l->npages))
        abort();
    if (!n && r.count && r.count <= HLRC_READ_AHEAD_MAX && (size_t)r.first + r.count <= l->npages)
        abort(); /* a good run refused */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    struct coh_limits l = {.nodes = data[1] + 1, .npages = (size_t)(data[3] | data[4] << 8),
                           .page_size = (size_t)64 << (data[5] % 11)}; /* 64 B .. 64 KiB */
    l.rank = data[2] % l.nodes;
    int src = (data[2] >> 4) % l.nodes;
    unsigned kind = data[0] % 8;
    data += 6, size -= 6;
    unsigned char *m = malloc(size ? size : 1); /* exactly sized for ASan */
    memcpy(m, data, size);
    switch (kind) {
    case 0: page_req(m, size, &l); break;
    case 1: page_rep(m, size, src, &l); break;
    case 2: diff(m, size, &l); break;
    case 3: diff_req(m, size, &l); break;
    case 4: diff_rep(m, size, &l); break;
    case 6: diffs(m, size, &l); break;
    case 7: diff_acks(m, size, &l); break;
    default: run(m, size, &l); break;
    }
    free(m);
    return 0;
}
