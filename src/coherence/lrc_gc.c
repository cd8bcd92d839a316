/*
 * lrc_gc.c — collecting homeless lrc's diffs and notices (lrc.c describes
 * the protocol), at barriers and, for programs that only use locks,
 * without them.
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
 *
 * The collection runs on the program thread, from the barrier
 * (coherence_ops.barrier_done), taking the fault lock. Without barriers,
 * a writer learns what no other node will ask for again from the diff
 * requests and covers it serves (lrc_handlers.c) and from the seen lists
 * below: the program thread keeps them when a cover (lrc_fault.c) brought
 * writes it did not ask for, and the writer's delivery thread takes them
 * in (lrc_on_seen).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/lrc_state.h"
#include "ipc/ipc.h"

/* ---- collection at barriers (program thread) -------------------------- */

/* A collection's first half, at the barrier that starts it: each keeper
 * brings its copy up to date and snapshots it; a node whose copy is
 * invalid will fetch the keeper's. */
static void collect_keep(void)
{
    coherence_lock();
    for (size_t i = 0; i < lrc.ntouched; i++) {
        size_t page = lrc.touched[i];
        pthread_mutex_lock(&lrc.lock);
        struct lpage *p = lrc_record(page);
        int keeper = p->last_node;
        if (keeper != job()->rank && mem.pages[page].state == PAGE_INVALID) {
            lrc_pend_free(p->pend, p->npend);
            p->pend = NULL;
            p->npend = p->cap_pend = 0;
            p->base_from = keeper;
        }
        pthread_mutex_unlock(&lrc.lock);
        if (keeper != job()->rank)
            continue;
        if (mem.pages[page].state == PAGE_INVALID) {
            cache_reserve(1);
            lrc_make_valid(page);
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
        struct lpage *p = lrc_record(page);
        lrc_free_page_record(p);
        lrc_drop_lazy(page, p);
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

/* Collects at the first barrier after DSM_LRC_GC_NOTICES notices: keeps, asks
 * for one more round, and drops at its end. */
bool lrc_barrier_done(uint32_t votes)
{
    (void)votes; /* lrc asks for no round by vote: every node counts the same notices */
    if (lrc.collecting) {
        collect_drop();
        lrc.collecting = false;
        return false;
    }
    if (lrc.notices < coherence_params()->lrc_gc_notices)
        return false;
    lrc.collecting = true;
    collect_keep();
    return true;
}

/* ---- without barriers: diffs every other node is done with ------------ */

/* (page, stamp) pairs a node keeps for each writer before it sends them
 * as one LRC_SEEN: what the writer may keep meanwhile is bounded by it. */
#define SEEN_BATCH 16

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
 * them, which the writer needs to know to drop them (lrc_note_asked).
 * Kept and sent in batches (program thread). */
void lrc_seen_add(int node, size_t page, uint32_t stamp)
{
    struct seen_out *o = &lrc.seen[node];
    page_list_add(&o->v, &o->n, &o->cap, page);
    page_list_add(&o->v, &o->n, &o->cap, stamp);
    if (o->n >= 2 * SEEN_BATCH)
        seen_flush(node);
}

/* `src` will never ask for the page's diffs up to stamp `latest` (it asked
 * for them, or its copy holds them): drops every closed diff, and every
 * lazy interval, that all other nodes are done with (see the top). Caller
 * holds lrc.lock. */
void lrc_note_asked(size_t page, struct lpage *p, int src, uint32_t latest)
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
            lrc_lazy_drop(page, p, k);
            stats_add(STAT_DIFFS_COLLECTED, 1);
        } else {
            k++;
        }
}

/* `src` will never ask for our diffs of these pages up to these stamps. */
void lrc_on_seen(int src, const void *msg, size_t len)
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
        lrc_note_asked(pair[0], p, src, pair[1]);
    }
    pthread_mutex_unlock(&lrc.lock);
}
