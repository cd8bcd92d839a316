/*
 * lrc_handlers.c — homeless lrc's messages from other nodes: requests
 * served (a page's diffs, made now from its lazy intervals if need be; a
 * cover, the whole page; a base node's probe, a keeper's snapshot), and
 * the replies a fault waits for (lrc_fault.c), taken into lrc.f. On the
 * delivery thread, or a program thread waiting for a reply; they take
 * lrc.lock alone and never hold it while they send. Serving diffs and
 * covers tells a writer what the asker will never ask for again
 * (lrc_note_asked, lrc_gc.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "coherence/lrc_state.h"
#include "ipc/ipc.h"

void lrc_on_diff_req(int src, const void *msg, size_t len)
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
    struct lpage *p = lrc_record(r.page);
    uint32_t latest = 0;
    for (uint32_t i = 0; i < r.count; i++) {
        if (stamps[i] == OPEN_STAMP || stamps[i] > lrc.clock)
            log_fatal("node %d asked for diffs of an interval node %d never closed", src, job()->rank);
        if (stamps[i] > latest)
            latest = stamps[i];
        for (uint32_t k = 0; k < p->nlazy; k++)
            if (p->lazy[k].stamp == stamps[i]) {
                /* An "after" that is the page itself is read-only here: stable. */
                lrc_lazy_take(r.page, p, k);
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
    lrc_note_asked(r.page, p, src, latest);
    pthread_mutex_unlock(&lrc.lock);
    memcpy(b.p, &h, sizeof h);
    ipc_send(src, LRC_DIFF_REP, 0, b.p, b.len);
    buf_free(&b);
    free(stamps);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

void lrc_on_diff_rep(int src, const void *msg, size_t len)
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
void lrc_on_cover_req(int src, const void *msg, size_t len)
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
        lrc_note_asked(r.page, p, src, p->have[job()->rank]);
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

void lrc_on_cover_rep(int src, const void *msg, size_t len)
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

void lrc_on_base_req(int src, const void *msg, size_t len)
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

void *lrc_place_base_rep(int src, const void *head, size_t head_len, size_t msg_len,
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

void lrc_on_base_rep(int src, const void *msg, size_t len)
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
