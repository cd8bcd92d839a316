/*
 * port_send.c — the sender side of seed 004's message protocol (port.c
 * describes it): a small message as one SMALL; a larger one as a REQ,
 * then, as the port's node grants, its inline data (KMSG) and its pages
 * from a copy the transfer keeps. Separate from the receiver's side
 * (port_assembly.c), which shares nothing with it but the wire.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/trace.h"
#include "ipc/blocks.h"
#include "ipc/ipc_state.h"

static struct transfer *find_transfer(uint64_t xfer)
{
    for (struct transfer *t = ipc.transfers; t; t = t->next)
        if (t->xfer == xfer)
            return t;
    return NULL;
}

/* The last datagram lent the transfer's data was acknowledged (or it lent
 * none). Under the transport's lock, maybe: only memory is freed here. */
static void release_transfer(struct net_ref *ref)
{
    struct transfer *t = (struct transfer *)((char *)ref - offsetof(struct transfer, ref));
    ipc_block_put(t->data, t->copy_len);
    free(t);
}

/* Sends a message whose body (d, extensions) is ready: SMALL when it is
 * small, else a transfer of a copy of data and regions, driven by grants.
 * Under ipc.lock. */
static void send_body(int node, struct ipc_dst *d, const unsigned char *ext, size_t ext_len,
                      const void *data, size_t len, const struct dsm_ool *ool, int nool)
{
    if (nool == 0 && len <= ipc.prm.inline_max) {
        struct ipc_small b = {.d = *d};
        if (ext_len)
            ipc_send4(node, IPC_SMALL, 0, &b, sizeof b, ext, ext_len, data, len);
        else
            ipc_send3(node, IPC_SMALL, 0, &b, sizeof b, data, len);
        stats_add(STAT_IPC_SMALL_SENT, 1);
        return;
    }
    uint64_t total_ool = 0;
    for (int i = 0; i < nool; i++)
        total_ool += ool[i].len;
    struct transfer *t = calloc(1, sizeof *t);
    if (!t)
        log_fatal("out of memory sending a message");
    unsigned char *copy = ipc_block_get(len + total_ool);
    memcpy(copy, data, len);
    t->xfer = ipc_nonce();
    t->dst = node;
    t->data = copy;
    t->copy_len = len + total_ool;
    t->len = len;
    t->nool = (uint32_t)nool;
    unsigned char *at = copy + len;
    for (int i = 0; i < nool; i++) {
        memcpy(at, ool[i].addr, ool[i].len);
        t->ool[i] = at;
        t->ool_len[i] = ool[i].len;
        at += ool[i].len;
    }
    t->pages = ipc_ool_pages(t->ool_len, t->nool);
    atomic_init(&t->ref.count, 1);
    t->ref.release = release_transfer;
    t->next = ipc.transfers;
    ipc.transfers = t;
    struct ipc_req b = {.d = *d, .nool = (uint32_t)nool, .xfer = t->xfer, .inline_len = len};
    ipc_send4(node, IPC_REQ, 0, &b, sizeof b, ext, ext_len, t->ool_len,
              (size_t)nool * sizeof(uint64_t));
    stats_add(STAT_IPC_LARGE_SENT, 1);
}

/* Sends one message through a send or send-once right. Takes a sequence
 * number only once the port has room, so a timed-out send leaves nothing
 * behind; the rights it carries are taken out of this node's table only
 * then, and a right moved that is also the destination goes after the
 * message (carry.c). */
int port_send(const dsm_port_ref *dst, const void *data, size_t len,
              const struct dsm_ool *ool, int nool, const struct dsm_msg_right *rights,
              int nrights, double timeout, uint64_t *seq_out, uint64_t reply_token,
              uint64_t reply_cap)
{
    port_need_started();
    long pagesz = sysconf(_SC_PAGESIZE);
    if (!dst || (len && !data) || len > IPC_MAX_BYTES || nool < 0 || nool > IPC_MAX_OOL ||
        (nool && !ool) || nrights < 0 || nrights > IPC_MAX_RIGHTS || (nrights && !rights))
        return -EINVAL;
    uint64_t total = 0;
    for (int i = 0; i < nool; i++) {
        if (!ool[i].addr || !ool[i].len || ((uintptr_t)ool[i].addr % (uintptr_t)pagesz))
            return -EINVAL;
        total += ool[i].len;
    }
    if (total > IPC_MAX_BYTES)
        return -EINVAL;

    uint64_t t_call = TRACE_ON ? clock_ns() : 0;
    uint64_t deadline = clock_deadline(timeout);
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc;
    for (;;) {
        rc = right_get(dst, 1u << DSM_RIGHT_SEND | 1u << DSM_RIGHT_SEND_ONCE, &e);
        if (rc)
            break;
        struct link *l = &ipc.links[e->link];
        if (l->dead) {
            rc = -EPIPE;
            break;
        }
        /* Send-once messages (replies, notifications) never wait. */
        if (e->kind == DSM_RIGHT_SEND_ONCE || l->sent - l->accepted < l->limit)
            break;
        struct credit_wait cw = {.link = e->link};
        pthread_mutex_unlock(&ipc.lock);
        stats_add(STAT_IPC_FLOW_BLOCKS, 1);
        if (ipc_wait(port_credit_available, &cw, deadline))
            return -ETIMEDOUT;
        pthread_mutex_lock(&ipc.lock);
    }
    if (!rc && nrights)
        rc = carry_check(rights, nrights, ipc.links[e->link].uid);
    if (!rc && nrights && e->kind == DSM_RIGHT_SEND_ONCE)
        for (int i = 0; i < nrights; i++)
            if (rights[i].right->name == dst->name)
                rc = -EINVAL; /* a send-once right used twice at once */
    if (rc) {
        pthread_mutex_unlock(&ipc.lock);
        return rc;
    }
    uint32_t li = e->link;
    uint32_t e_index1 = dst->name;
    bool once = e->kind == DSM_RIGHT_SEND_ONCE;
    uint64_t once_token = e->token;

    struct ipc_wire_right wire[IPC_MAX_RIGHTS];
    uint32_t after[IPC_MAX_RIGHTS]; /* send entries to drop a reference of once it is sent */
    int nafter = nrights ? carry_out(rights, nrights, wire, after) : 0;
    struct link *l = &ipc.links[li];
    struct ipc_dst d = {.slot = l->slot, .flow = IPC_NO_FLOW, .uid = l->uid, .seq = ++l->seq};
    uint64_t ordinal = 0;
    if (once) {
        d.flags |= IPC_MF_ONCE;
        right_free(e_index1); /* consumed */
    } else {
        d.flow = (uint16_t)li;
        ordinal = ++l->sent;
    }
    if (seq_out)
        *seq_out = ordinal;
    struct ipc_call_ext call = {.reply_token = reply_token, .reply_cap = reply_cap};
    if (reply_token)
        d.flags |= IPC_MF_CALL;
    if (nrights) {
        d.flags |= IPC_MF_RIGHTS;
        stats_add(STAT_IPC_RIGHTS_SENT, (uint64_t)nrights);
    }
    unsigned char ext[sizeof call + sizeof(struct ipc_once_ext) + sizeof(struct ipc_rights_ext) +
                      sizeof wire];
    size_t ext_len = d.flags ? ipc_ext_write(ext, d.flags, &call, NULL, once_token, wire,
                                             (uint32_t)nrights)
                             : 0;
    int node = l->node;
    uint64_t t_handed = TRACE_ON ? clock_ns() : 0;
    if (!ext_len && nool == 0 && len <= ipc.prm.inline_max) { /* send_body's first case, inline */
        struct ipc_small b = {.d = d};
        ipc_send3(node, IPC_SMALL, 0, &b, sizeof b, data, len);
        stats_add(STAT_IPC_SMALL_SENT, 1);
    } else {
        send_body(node, &d, ext, ext_len, data, len, ool, nool);
    }
    for (int i = 0; i < nafter; i++)
        right_send_unref(after[i]);
    pthread_mutex_unlock(&ipc.lock);
    if (TRACE_ON)
        trace_put(TRACE_CALL, 0, node, len, t_call, t_handed, clock_ns());
    return 0;
}

int dsm_msg_send(const dsm_port_ref *dst, const void *data, size_t len,
                 const struct dsm_ool *ool, int nool, double timeout, uint64_t *seq)
{
    return port_send(dst, data, len, ool, nool, NULL, 0, timeout, seq, 0, 0);
}

int dsm_msg_send_rights(const dsm_port_ref *dst, const void *data, size_t len,
                        const struct dsm_ool *ool, int nool, const struct dsm_msg_right *rights,
                        int nrights, double timeout, uint64_t *seq)
{
    return port_send(dst, data, len, ool, nool, rights, nrights, timeout, seq, 0, 0);
}

void port_forward_msg(struct queued_msg *m, uint64_t uid, int node, uint32_t slot,
                      bool queued, uint32_t index, uint32_t count)
{
    struct ipc_dst d = {.slot = slot, .flow = m->flow, .uid = uid, .seq = m->seq,
                        .flags = (uint16_t)(m->flags & (IPC_MF_ONCE | IPC_MF_NOTIFY)) | IPC_MF_FWD};
    struct ipc_fwd_ext fwd = {.origin = m->src, .provider = job()->rank};
    if (queued) {
        d.flags |= IPC_MF_QUEUED;
        fwd.queued_index = index;
        fwd.queued_count = count;
        fwd.ordinal = m->ordinal;
    }
    struct ipc_call_ext call = {.reply_token = m->reply_token, .reply_cap = m->reply_cap};
    if (m->reply_token)
        d.flags |= IPC_MF_CALL;
    if (m->nrights)
        d.flags |= IPC_MF_RIGHTS;
    size_t ext_len = ipc_ext_size(d.flags, m->nrights);
    unsigned char *ext = malloc(ext_len ? ext_len : 1);
    if (!ext)
        log_fatal("out of memory forwarding a message");
    ipc_ext_write(ext, d.flags, &call, &fwd, m->once_token, m->rights, m->nrights);
    send_body(node, &d, ext, ext_len, m->data, m->len, m->ool, (int)m->nool);
    free(ext);
    stats_add(STAT_IPC_FORWARDED, 1);
    port_msg_free(m);
}

static void unlink_transfer(struct transfer *t)
{
    for (struct transfer **pp = &ipc.transfers; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

/* Grants come from the port's node, which may not be the node the request
 * went to (the port moved, and its former node forwarded the request): the
 * transfer follows them. Its id is a random 64-bit value only the request
 * carried. */
void port_on_grant(int src, const struct ipc_grant *b)
{
    struct transfer *t = find_transfer(b->xfer);
    if (!t)
        log_fatal("node %d granted an unknown transfer; protocol error", src);
    t->dst = src;
    if (b->send_inline && !t->inline_sent) {
        struct ipc_kmsg k = {.xfer = t->xfer};
        ipc_send3(src, IPC_KMSG, 0, &k, sizeof k, t->data, t->len);
        t->inline_sent = true;
    }
    if ((uint64_t)b->first + b->count > t->pages)
        log_fatal("node %d granted pages beyond the message; protocol error", src);
    /* The window's pages go as few messages as possible: one per run of
     * pages that are consecutive within a region. */
    uint64_t end = (uint64_t)b->first + b->count;
    for (uint64_t i = b->first; i < end;) {
        uint32_t r;
        uint64_t off, bytes;
        ipc_ool_locate(t->ool_len, t->nool, i, &r, &off, &bytes);
        uint32_t run = 1;
        uint64_t run_bytes = bytes;
        while (i + run < end && run < IPC_MAX_RUN && off + run_bytes < t->ool_len[r]) {
            uint64_t left = t->ool_len[r] - (off + run_bytes);
            run_bytes += left < IPC_PAGE_BYTES ? left : IPC_PAGE_BYTES;
            run++;
        }
        struct ipc_page pg = {.xfer = t->xfer, .index = (uint32_t)i, .count = run};
        ipc_send3_lent(src, IPC_PAGE, 0, &pg, sizeof pg, t->ool[r] + off, run_bytes, &t->ref);
        t->pages_sent += run;
        stats_add(STAT_IPC_PAGES_SENT, run);
        i += run;
    }
    if (t->inline_sent && t->pages_sent == t->pages) {
        unlink_transfer(t);
        net_ref_put(&t->ref);
    }
}
