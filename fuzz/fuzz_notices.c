/*
 * fuzz_notices.c — intervals and their write notices, as lock grants and
 * barrier releases carry them (coh_notices_check, src/coherence/msgcheck.c).
 *
 * Input: [nodes-1][npages lo][npages hi][mode][body...]. Mode bit 0: the
 * body is taken as it is (any bytes); otherwise the harness first encodes
 * intervals made from the body, as interval_encode lays them out (bit 1:
 * with their vector times, as under DSM_CHECK), and the
 * check must accept them. Whatever is accepted must keep the promises
 * interval_apply relies on: it walks the body exactly, every node and page
 * is in range, a node's ids rise, and the notices counted match; no proper
 * prefix of an accepted body is accepted.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coherence/coherence.h"
#include "coherence/msgcheck.h"

static void walk(const unsigned char *p, size_t len, const struct coh_limits *l, uint64_t notices)
{
    const unsigned char *end = p + len;
    uint32_t count, last[VT_MAX_NODES] = {0};
    uint64_t total = 0;
    memcpy(&count, p, sizeof count);
    p += sizeof count;
    for (uint32_t k = 0; k < count; k++) {
        struct wire_interval w;
        if ((size_t)(end - p) < sizeof w)
            abort();
        memcpy(&w, p, sizeof w);
        p += sizeof w;
        if (w.node >= l->nodes || (w.flags & ~WIRE_INTERVAL_VT) || w.id <= last[w.node])
            abort();
        last[w.node] = w.id;
        if (w.flags & WIRE_INTERVAL_VT) {
            uint32_t own;
            if ((size_t)(end - p) < (size_t)l->nodes * sizeof own)
                abort();
            memcpy(&own, p + (size_t)w.node * sizeof own, sizeof own);
            if (own != w.id)
                abort();
            p += (size_t)l->nodes * sizeof own;
        }
        if ((size_t)(end - p) / sizeof(struct notice) < w.count)
            abort();
        for (uint32_t i = 0; i < w.count; i++) {
            struct notice n;
            memcpy(&n, p, sizeof n);
            p += sizeof n;
            if (n.page >= l->npages)
                abort();
        }
        total += w.count;
    }
    if (p != end || total != notices)
        abort();
}

/* Intervals made from the fuzzer's bytes, encoded as interval_encode does:
 * each byte pair (node, notices) opens an interval; notices' pages come
 * from the bytes that follow. */
static size_t encode(const uint8_t *d, size_t n, const struct coh_limits *l, bool with_vt,
                     unsigned char *out, size_t cap, uint64_t *notices)
{
    uint32_t count = 0, id[VT_MAX_NODES] = {0};
    size_t at = sizeof count;
    *notices = 0;
    while (n >= 2) {
        struct wire_interval w = {.node = (uint16_t)(d[0] % l->nodes), .count = d[1] % 8u};
        d += 2, n -= 2;
        /* ids rise, with gaps (a receiver that has seen some skips them) */
        w.id = id[w.node] += n ? 1 + d[0] % 3u : 1;
        size_t vt_len = with_vt ? (size_t)l->nodes * sizeof *id : 0;
        if (at + sizeof w + vt_len + w.count * sizeof(struct notice) > cap)
            break;
        w.flags = with_vt ? WIRE_INTERVAL_VT : 0;
        memcpy(out + at, &w, sizeof w);
        at += sizeof w;
        if (with_vt) { /* what its creator had seen: the ids so far */
            memcpy(out + at, id, vt_len);
            at += vt_len;
        }
        for (uint32_t i = 0; i < w.count; i++) {
            struct notice nt = {.page = (uint32_t)((n ? d[i % n] : i) % l->npages), .version = i};
            memcpy(out + at, &nt, sizeof nt);
            at += sizeof nt;
        }
        *notices += w.count;
        count++;
    }
    memcpy(out, &count, sizeof count);
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    struct coh_limits l = {.nodes = data[0] + 1, .rank = 0,
                           .npages = 1 + (size_t)(data[1] | data[2] << 8), .page_size = 4096};
    int raw = data[3] & 1;
    bool with_vt = data[3] & 2; /* as under DSM_CHECK */
    data += 4, size -= 4;

    unsigned char *m;
    size_t len;
    uint64_t expect = 0;
    if (raw) {
        len = size;
        m = malloc(len ? len : 1); /* exactly sized for ASan */
        memcpy(m, data, len);
    } else {
        static unsigned char buf[4096];
        len = encode(data, size, &l, with_vt, buf, sizeof buf, &expect);
        m = malloc(len);
        memcpy(m, buf, len);
    }
    uint64_t notices = ~0ull;
    const char *why = coh_notices_check(m, len, &l, &notices);
    if (!raw && (why || notices != expect))
        abort(); /* a well-formed encoding refused */
    if (!why) {
        walk(m, len, &l, notices);
        if (len > sizeof(uint32_t) && !coh_notices_check(m, len - 1, &l, NULL))
            abort(); /* a truncated body accepted */
    }
    free(m);
    return 0;
}
