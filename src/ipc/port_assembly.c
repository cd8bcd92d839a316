/*
 * port_assembly.c — a message received at its port's node: a small one
 * whole (SMALL), a large one assembled: the receiver reserves every byte
 * the message needs before it grants, grants pages a window at a time,
 * two windows ahead, into those buffers, and counts them in (port.c
 * describes the protocol). Once whole, a message takes its turn
 * (port_queue.c). Apart from the sender's side (port_send.c).
 */
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/blocks.h"
#include "ipc/ipc_state.h"

static struct queued_msg *new_msg(int src, uint64_t seq, size_t len)
{
    struct queued_msg *m = calloc(1, sizeof *m);
    unsigned char *block = malloc(len ? len : 1);
    if (!m || !block)
        log_fatal("out of memory receiving a %zu-byte message from node %d", len, src);
    m->src = src;
    m->seq = seq;
    m->data_block = block;
    m->data = block;
    m->len = len;
    return m;
}

/* The fields of a message's body that go with it into the queue. */
static void msg_from_parsed(struct queued_msg *m, const struct ipc_parsed *p)
{
    m->flow = p->d.flow;
    m->flags = p->d.flags & (IPC_MF_ONCE | IPC_MF_NOTIFY);
    m->once_token = p->once_token;
    m->reply_token = p->call.reply_token;
    m->reply_cap = p->call.reply_cap;
    if (p->d.flags & IPC_MF_QUEUED)
        m->ordinal = p->fwd.ordinal;
    if (p->nrights) {
        m->rights = malloc(p->nrights * sizeof *m->rights);
        if (!m->rights)
            log_fatal("out of memory receiving a message's rights");
        memcpy(m->rights, p->rights, p->nrights * sizeof *m->rights);
        m->nrights = p->nrights;
    }
}

void port_msg_free(struct queued_msg *m)
{
    for (uint32_t i = 0; i < m->nool; i++)
        if (m->ool[i].addr)
            ipc_block_put(m->ool[i].addr, m->ool[i].len);
    if (m->ool)
        free(m->ool);
    if (m->rights)
        free(m->rights);
    free(m->data_block);
    free(m);
}

void port_on_small(int src, const struct ipc_parsed *p)
{
    int origin = p->d.flags & IPC_MF_FWD ? p->fwd.origin : src;
    if (origin >= job()->nodes)
        log_fatal("node %d forwarded a message of node %d, beyond the job; protocol error", src,
                  origin);
    struct queued_msg *m = new_msg(origin, p->d.seq, p->dlen);
    memcpy(m->data, p->data, p->dlen);
    msg_from_parsed(m, p);
    if (!(p->d.flags & IPC_MF_FWD) && port_in_turn(p->d.slot, p->d.uid, origin, src, p->d.seq, m))
        return;
    struct route_item it = {.origin = origin, .from = src, .d = p->d, .fwd = p->fwd, .msg = m};
    port_migrate_route(&it);
}

static struct reservation *find_reservation(int provider, uint64_t xfer)
{
    for (struct reservation *r = ipc.reservations; r; r = r->next)
        if (r->provider == provider && r->xfer == xfer)
            return r;
    return NULL;
}

static void grant(struct reservation *r, uint32_t first, uint32_t count, bool with_inline)
{
    struct ipc_grant g = {.xfer = r->xfer, .first = first, .count = count,
                          .send_inline = with_inline};
    ipc_send(r->provider, IPC_GRANT, 0, &g, sizeof g);
    r->granted = (uint64_t)first + count;
    stats_add(STAT_IPC_GRANTS_SENT, 1);
}

/* Reserves every buffer the message needs, then grants the first windows. */
static void reserve_and_grant(struct port *p, struct reservation *r)
{
    struct queued_msg *m = r->msg;
    for (uint32_t i = 0; i < m->nool; i++) {
        m->ool[i].addr = ipc_block_get(r->ool_len[i]);
        m->ool[i].len = r->ool_len[i];
    }
    r->reserved = true;
    if (p)
        p->reserved++;
    uint64_t ahead = 2ull * ipc.prm.window;
    grant(r, 0, (uint32_t)(r->pages < ahead ? r->pages : ahead), true);
}

/* Whether a request may be granted now: the port has room (messages
 * queued at the port's former node come in regardless: they were counted
 * there), or no port will take it (it died: the data is received and
 * dropped, so the sender's transfer ends). */
static bool may_grant(struct port *p, const struct reservation *r)
{
    if (!p)
        return true;
    if (r->flags & IPC_MF_QUEUED)
        return true;
    return p->state == PORT_LIVE && p->queued + p->reserved < p->limit;
}

void port_on_req(int src, const struct ipc_parsed *p)
{
    int origin = p->d.flags & IPC_MF_FWD ? p->fwd.origin : src;
    int provider = p->d.flags & IPC_MF_FWD ? p->fwd.provider : src;
    if (origin >= job()->nodes || provider >= job()->nodes)
        log_fatal("node %d forwarded a request of node %d, beyond the job; protocol error", src,
                  origin);
    struct port *port = port_here(p->d.slot, p->d.uid);
    struct dir_rec *rec = port ? NULL : dir_find(p->d.uid);
    if ((p->d.flags & IPC_MF_FWD) && !port_migrate_trusts(p->d.uid, src)) {
        ipc_refuse("node %d forwarded a request for port %016llx it never held; refused", src,
                   (unsigned long long)p->d.uid);
        return;
    }
    if (!port && (!rec || rec->state == DIR_FORWARD)) {
        struct route_item it = {.origin = origin, .from = src, .provider = provider, .d = p->d,
                                .fwd = p->fwd};
        if (!rec) {
            ipc_refuse("node %d sent a request to port %016llx, which never lived here; refused",
                       src, (unsigned long long)p->d.uid);
            return;
        }
        /* Not reserved here: the port's new node grants the provider. */
        port_migrate_forward_parsed_req(&it, p, rec);
        return;
    }
    struct reservation *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory recording a request from node %d", src);
    r->provider = provider;
    r->xfer = p->req.xfer;
    r->uid = p->d.uid;
    r->slot = p->d.slot;
    r->flags = p->d.flags;
    r->fwd = p->fwd;
    memcpy(r->ool_len, p->data, p->req.nool * sizeof(uint64_t));
    r->pages = ipc_ool_pages(r->ool_len, p->req.nool);
    r->msg = new_msg(origin, p->d.seq, p->req.inline_len);
    msg_from_parsed(r->msg, p);
    r->msg->nool = p->req.nool;
    if (p->req.nool) {
        r->msg->ool = calloc(p->req.nool, sizeof *r->msg->ool);
        if (!r->msg->ool)
            log_fatal("out of memory recording a request from node %d", src);
    }
    r->next = ipc.reservations;
    ipc.reservations = r;
    /* Otherwise it waits, unreserved, until a take frees queue space. */
    if (may_grant(port, r))
        reserve_and_grant(port, r);
}

/* Grants waiting requests, oldest first (the list is newest first), while
 * the port has room. */
void port_grant_waiting(struct port *p)
{
    for (;;) {
        struct reservation *oldest = NULL;
        for (struct reservation *r = ipc.reservations; r; r = r->next)
            if (!r->reserved && r->uid == p->uid && may_grant(p, r))
                oldest = r;
        if (!oldest)
            return;
        reserve_and_grant(p, oldest);
    }
}

void port_grant_orphans(uint64_t uid)
{
    for (struct reservation *r = ipc.reservations; r; r = r->next)
        if (!r->reserved && r->uid == uid)
            reserve_and_grant(NULL, r);
}

void port_unlink_reservation(struct reservation *r)
{
    for (struct reservation **pp = &ipc.reservations; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

/* Every byte is in: the message goes where its port is now. */
static void maybe_complete(struct reservation *r)
{
    if (!r->inline_got || r->pages_got < r->pages)
        return;
    port_unlink_reservation(r);
    struct port *p = port_here(r->slot, r->uid);
    if (p && r->reserved && p->reserved)
        p->reserved--;
    if (!(r->flags & IPC_MF_FWD) &&
        port_in_turn(r->slot, r->uid, r->msg->src, job()->rank, r->msg->seq, r->msg)) {
        free(r);
        return;
    }
    struct route_item it = {.origin = r->msg->src, .from = job()->rank, .d = {.slot = r->slot,
                            .uid = r->uid, .seq = r->msg->seq, .flags = r->flags},
                            .fwd = r->fwd, .msg = r->msg, .trusted = true};
    free(r);
    port_migrate_route(&it);
}

static struct reservation *granted_reservation(int src, uint64_t xfer)
{
    struct reservation *r = find_reservation(src, xfer);
    if (!r || !r->reserved)
        log_fatal("node %d sent data for a transfer that was not granted; protocol error", src);
    return r;
}

void port_on_kmsg(int src, const struct ipc_kmsg *b, const void *data, size_t len)
{
    struct reservation *r = granted_reservation(src, b->xfer);
    if (len != r->msg->len || r->inline_got)
        log_fatal("node %d sent inline data that does not match its request", src);
    memcpy(r->msg->data, data, len);
    r->inline_got = true;
    maybe_complete(r);
}

void *port_place_kmsg(int src, const struct ipc_kmsg *b, size_t msg_len, size_t *skip)
{
    struct reservation *r = granted_reservation(src, b->xfer);
    *skip = ipc_fixed_size(IPC_KMSG);
    if (msg_len - *skip != r->msg->len || r->inline_got)
        log_fatal("node %d sent inline data that does not match its request", src);
    ipc.placing[src].res = r;
    return r->msg->data;
}

void port_kmsg_placed(int src)
{
    struct reservation *r = ipc.placing[src].res;
    r->inline_got = true;
    maybe_complete(r);
}

/* Where the run of `count` pages from `index` goes, checking that it lies
 * in one region, was granted, and has the right length. */
static unsigned char *page_slot(int src, struct reservation *r, uint64_t index, uint32_t count,
                                size_t len)
{
    uint32_t region;
    uint64_t off, bytes;
    if (count < 1 || index + count > r->granted ||
        ipc_ool_locate(r->ool_len, r->msg->nool, index, &region, &off, &bytes))
        log_fatal("node %d sent pages %llu+%u that were not granted", src,
                  (unsigned long long)index, count);
    uint64_t run_end = off + (uint64_t)count * IPC_PAGE_BYTES;
    uint64_t expect = (run_end < r->ool_len[region] ? run_end : r->ool_len[region]) - off;
    if (run_end - IPC_PAGE_BYTES >= r->ool_len[region] || expect != len)
        log_fatal("node %d sent pages %llu+%u of the wrong size", src,
                  (unsigned long long)index, count);
    return (unsigned char *)r->msg->ool[region].addr + off;
}

static void pages_arrived(struct reservation *r, uint32_t count)
{
    r->pages_got += count;
    /* At most two windows outstanding: when one completes, grant another. */
    uint64_t w = ipc.prm.window;
    while (r->granted < r->pages && r->granted - r->pages_got <= w) {
        uint64_t n = r->pages - r->granted < w ? r->pages - r->granted : w;
        grant(r, (uint32_t)r->granted, (uint32_t)n, false);
    }
    maybe_complete(r);
}

void port_on_page(int src, const struct ipc_page *b, const void *data, size_t len)
{
    struct reservation *r = granted_reservation(src, b->xfer);
    memcpy(page_slot(src, r, b->index, b->count, len), data, len);
    pages_arrived(r, b->count);
}

void *port_place_page(int src, const struct ipc_page *b, size_t msg_len, size_t *skip)
{
    struct reservation *r = granted_reservation(src, b->xfer);
    *skip = ipc_fixed_size(IPC_PAGE);
    ipc.placing[src].res = r;
    return page_slot(src, r, b->index, b->count, msg_len - *skip);
}

void port_page_placed(int src, uint64_t index, uint32_t count)
{
    (void)index;
    pages_arrived(ipc.placing[src].res, count);
}
