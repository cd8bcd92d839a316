/*
 * port.c — ports, the message protocol of seed 004 (NORMA IPC/DE), and
 * port-queue flow control.
 *
 *   small (inline <= DSM_IPC_INLINE_MAX, no OOL):  SMALL ............ 1 message
 *   otherwise:   REQ  ->  (receiver reserves all memory)  GRANT(window 0, 1)
 *                KMSG + PAGEs of the granted windows  ->  GRANT(next) ... 
 *
 * The receiver reserves every byte the message needs before it grants, so a
 * transfer never stalls half-way for memory, and it grants pages a window
 * (DSM_IPC_WINDOW pages) at a time, two windows ahead, into those buffers.
 * Seed 004's explicit "page copy done" and "receive done" messages are
 * implied here by the reliable FIFO transport: the receiver counts pages.
 *
 * Flow control: each sender may have at most queue_limit messages at a port
 * that the receiving program has not yet taken; a take sends an ACCEPT back
 * (message-accept notification). The receiver also grants memory for large
 * messages only while the port holds fewer than queue_limit messages,
 * counting those already reserved, so reserved memory stays bounded however
 * many nodes send to it at once.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/blocks.h"
#include "ipc/ipc_state.h"

static void need_started(void)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
}

/* ---- ports ------------------------------------------------------------ */

int dsm_port_create(const char *name, unsigned queue_limit)
{
    need_started();
    if (!name || !name[0] || strlen(name) > DSM_PORT_NAME_MAX || queue_limit < 1 ||
        queue_limit > (1u << 20))
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    int free_slot = -1;
    for (int i = 0; i < IPC_MAX_PORTS; i++) {
        if (ipc.ports[i].used && !strcmp(ipc.ports[i].name, name)) {
            pthread_mutex_unlock(&ipc.lock);
            return -EEXIST;
        }
        if (!ipc.ports[i].used && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        pthread_mutex_unlock(&ipc.lock);
        return -ENOSPC;
    }
    struct port *p = &ipc.ports[free_slot];
    uint64_t *next_seq = calloc((size_t)job()->nodes, sizeof *next_seq);
    if (!next_seq) {
        pthread_mutex_unlock(&ipc.lock);
        return -ENOMEM;
    }
    memset(p, 0, sizeof *p);
    p->next_seq = next_seq;
    for (int i = 0; i < job()->nodes; i++)
        p->next_seq[i] = 1;
    strcpy(p->name, name);
    p->limit = queue_limit;
    p->used = true;
    pthread_mutex_unlock(&ipc.lock);
    return free_slot;
}

void port_on_lookup_req(int src, const struct ipc_lookup_req *b)
{
    struct ipc_lookup_rep rep = {.token = b->token, .port = -1, .limit = 0};
    for (int i = 0; i < IPC_MAX_PORTS; i++)
        if (ipc.ports[i].used && !strcmp(ipc.ports[i].name, b->name)) {
            rep.port = i;
            rep.limit = ipc.ports[i].limit;
            break;
        }
    ipc_send(src, IPC_LOOKUP_REP, 0, &rep, sizeof rep);
}

void port_on_lookup_rep(const struct ipc_lookup_rep *b)
{
    for (struct pending_lookup *l = ipc.lookups; l; l = l->next)
        if (l->token == b->token) {
            l->port = b->port;
            l->limit = b->limit;
            l->done = true;
        }
}

static bool lookup_done(void *arg)
{
    struct pending_lookup *l = arg;
    pthread_mutex_lock(&ipc.lock);
    bool d = l->done;
    pthread_mutex_unlock(&ipc.lock);
    return d;
}

int dsm_port_lookup(int node, const char *name, double timeout, dsm_port_ref *out)
{
    need_started();
    if (node < 0 || node >= job()->nodes || !name || !name[0] ||
        strlen(name) > DSM_PORT_NAME_MAX || !out)
        return -EINVAL;
    uint64_t deadline = clock_deadline(timeout);
    for (;;) {
        struct pending_lookup l = {.port = -1};
        struct ipc_lookup_req req = {0};
        strcpy(req.name, name);
        pthread_mutex_lock(&ipc.lock);
        l.token = req.token = ipc.next_token++;
        l.next = ipc.lookups;
        ipc.lookups = &l;
        ipc_send(node, IPC_LOOKUP_REQ, 0, &req, sizeof req);
        pthread_mutex_unlock(&ipc.lock);

        int rc = ipc_wait(lookup_done, &l, deadline);
        pthread_mutex_lock(&ipc.lock);
        for (struct pending_lookup **pp = &ipc.lookups; *pp; pp = &(*pp)->next)
            if (*pp == &l) {
                *pp = l.next;
                break;
            }
        pthread_mutex_unlock(&ipc.lock);
        if (l.done && l.port >= 0) {
            out->node = node;
            out->port = l.port;
            out->queue_limit = l.limit;
            return 0;
        }
        if (rc || (deadline && clock_ns() >= deadline))
            return -ENOENT;
        /* Not created yet: ask again shortly. */
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

/* ---- sender side ------------------------------------------------------ */

static struct remote_port *remote(int node, int port)
{
    for (struct remote_port *r = ipc.remotes; r; r = r->next)
        if (r->node == node && r->port == port)
            return r;
    struct remote_port *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory tracking a remote port");
    r->node = node;
    r->port = port;
    r->next = ipc.remotes;
    ipc.remotes = r;
    return r;
}

struct credit_wait {
    struct remote_port *r;
    uint32_t            limit;
};

static bool credit_available(void *arg)
{
    struct credit_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    bool ok = w->r->sent - w->r->accepted < w->limit;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

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

/* Sends one message; reply_token/reply_cap make it an RPC request. Takes a
 * sequence number only once the port has room, so a timed-out send leaves
 * nothing behind. */
int port_send(const dsm_port_ref *dst, const void *data, size_t len,
              const struct dsm_ool *ool, int nool, double timeout, uint64_t *seq_out,
              uint64_t reply_token, uint64_t reply_cap)
{
    need_started();
    long pagesz = sysconf(_SC_PAGESIZE);
    if (!dst || dst->node < 0 || dst->node >= job()->nodes || dst->port < 0 ||
        dst->port >= IPC_MAX_PORTS || dst->queue_limit < 1 || (len && !data) ||
        len > IPC_MAX_BYTES || nool < 0 || nool > IPC_MAX_OOL || (nool && !ool))
        return -EINVAL;
    uint64_t total = 0;
    for (int i = 0; i < nool; i++) {
        if (!ool[i].addr || !ool[i].len || ((uintptr_t)ool[i].addr % (uintptr_t)pagesz))
            return -EINVAL;
        total += ool[i].len;
    }
    if (total > IPC_MAX_BYTES)
        return -EINVAL;

    uint64_t deadline = clock_deadline(timeout);
    pthread_mutex_lock(&ipc.lock);
    struct credit_wait cw = {.r = remote(dst->node, dst->port), .limit = dst->queue_limit};
    while (cw.r->sent - cw.r->accepted >= cw.limit) {
        pthread_mutex_unlock(&ipc.lock);
        stats_add(STAT_IPC_FLOW_BLOCKS, 1);
        if (ipc_wait(credit_available, &cw, deadline))
            return -ETIMEDOUT;
        pthread_mutex_lock(&ipc.lock);
    }
    uint64_t seq = ++cw.r->sent;
    if (seq_out)
        *seq_out = seq;

    if (nool == 0 && len <= ipc.prm.inline_max) {
        struct ipc_small b = {.port = dst->port, .seq = seq,
                              .reply_token = reply_token, .reply_cap = reply_cap};
        ipc_send3(dst->node, IPC_SMALL, 0, &b, sizeof b, data, len);
        pthread_mutex_unlock(&ipc.lock);
        stats_add(STAT_IPC_SMALL_SENT, 1);
        return 0;
    }

    uint64_t total_ool = 0;
    for (int i = 0; i < nool; i++)
        total_ool += ool[i].len;
    struct transfer *t = calloc(1, sizeof *t);
    if (!t)
        log_fatal("out of memory sending a message");
    unsigned char *copy = ipc_block_get(len + total_ool);
    memcpy(copy, data, len);
    t->xfer = ipc.next_token++;
    t->dst = dst->node;
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
    struct ipc_req b = {.port = dst->port, .nool = (uint32_t)nool, .seq = seq, .xfer = t->xfer,
                        .inline_len = len, .reply_token = reply_token, .reply_cap = reply_cap};
    ipc_send3(dst->node, IPC_REQ, 0, &b, sizeof b, t->ool_len, (size_t)nool * sizeof(uint64_t));
    pthread_mutex_unlock(&ipc.lock);
    stats_add(STAT_IPC_LARGE_SENT, 1);
    return 0;
}

int dsm_msg_send(const dsm_port_ref *dst, const void *data, size_t len,
                 const struct dsm_ool *ool, int nool, double timeout, uint64_t *seq)
{
    return port_send(dst, data, len, ool, nool, timeout, seq, 0, 0);
}

static void unlink_transfer(struct transfer *t)
{
    for (struct transfer **pp = &ipc.transfers; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

void port_on_grant(int src, const struct ipc_grant *b)
{
    struct transfer *t = find_transfer(b->xfer);
    if (!t || t->dst != src)
        log_fatal("node %d granted an unknown transfer; protocol error", src);
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

void port_on_accept(int src, const struct ipc_accept *b)
{
    struct remote_port *r = remote(src, b->port);
    if (b->seq > r->accepted && b->seq <= r->sent)
        r->accepted = b->seq;
    ipc_notify();
}

struct accept_wait {
    struct remote_port *r;
    uint64_t            seq;
};

static bool accepted_reached(void *arg)
{
    struct accept_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    bool ok = w->r->accepted >= w->seq;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_wait_accepted(const dsm_port_ref *dst, uint64_t seq, double timeout)
{
    need_started();
    if (!dst || dst->node < 0 || dst->node >= job()->nodes)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct accept_wait w = {.r = remote(dst->node, dst->port), .seq = seq};
    bool never = seq > w.r->sent;
    pthread_mutex_unlock(&ipc.lock);
    if (never)
        return -EINVAL;
    return ipc_wait(accepted_reached, &w, clock_deadline(timeout)) ? -ETIMEDOUT : 0;
}

uint64_t dsm_msg_accepted(const dsm_port_ref *dst)
{
    need_started();
    if (!dst)
        return 0;
    pthread_mutex_lock(&ipc.lock);
    uint64_t n = remote(dst->node, dst->port)->accepted;
    pthread_mutex_unlock(&ipc.lock);
    return n;
}

/* ---- receiver side ---------------------------------------------------- */

static struct port *valid_port(int src, int32_t port)
{
    if (port < 0 || port >= IPC_MAX_PORTS || !ipc.ports[port].used)
        log_fatal("node %d sent to port %d, which does not exist here; protocol error", src, port);
    return &ipc.ports[port];
}

static void append(struct port *p, struct queued_msg *m)
{
    m->next = NULL;
    if (p->tail)
        p->tail->next = m;
    else
        p->head = m;
    p->tail = m;
    p->queued++;
    p->next_seq[m->src]++;
}

/* Queues a complete message in its sender's order: a small message can
 * complete before a large one sent ahead of it, still transferring, so it
 * waits (parked) for its predecessors. */
static void enqueue_msg(struct port *p, struct queued_msg *m)
{
    if (m->seq != p->next_seq[m->src]) {
        if (m->seq < p->next_seq[m->src])
            log_fatal("node %d sent message %llu twice; protocol error", m->src,
                      (unsigned long long)m->seq);
        m->next = p->parked;
        p->parked = m;
        return;
    }
    append(p, m);
    for (bool more = true; more;) {
        more = false;
        for (struct queued_msg **pp = &p->parked; *pp; pp = &(*pp)->next) {
            struct queued_msg *q = *pp;
            if (q->seq == p->next_seq[q->src]) {
                *pp = q->next;
                append(p, q);
                more = true;
                break;
            }
        }
    }
    ipc_notify();
}

static struct queued_msg *new_msg(int src, uint64_t seq, uint64_t token, uint64_t cap, size_t len)
{
    struct queued_msg *m = calloc(1, sizeof *m);
    unsigned char *block = malloc(len ? len : 1);
    if (!m || !block)
        log_fatal("out of memory receiving a %zu-byte message from node %d", len, src);
    m->src = src;
    m->seq = seq;
    m->reply_token = token;
    m->reply_cap = cap;
    m->data_block = block;
    m->data = block;
    m->len = len;
    return m;
}

void port_on_small(int src, const struct ipc_small *b, const void *data, size_t len)
{
    struct port *p = valid_port(src, b->port);
    struct queued_msg *m = new_msg(src, b->seq, b->reply_token, b->reply_cap, len);
    memcpy(m->data, data, len);
    enqueue_msg(p, m);
}

static struct reservation *find_reservation(int src, uint64_t xfer)
{
    for (struct reservation *r = ipc.reservations; r; r = r->next)
        if (r->src == src && r->xfer == xfer)
            return r;
    return NULL;
}

static void grant(struct reservation *r, uint32_t first, uint32_t count, bool with_inline)
{
    struct ipc_grant g = {.xfer = r->xfer, .first = first, .count = count,
                          .send_inline = with_inline};
    ipc_send(r->src, IPC_GRANT, 0, &g, sizeof g);
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
    p->reserved++;
    uint64_t ahead = 2ull * ipc.prm.window;
    grant(r, 0, (uint32_t)(r->pages < ahead ? r->pages : ahead), true);
}

void port_on_req(int src, const struct ipc_req *b, const uint64_t *ool_len)
{
    struct port *p = valid_port(src, b->port);
    struct reservation *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory recording a request from node %d", src);
    r->src = src;
    r->port = b->port;
    r->xfer = b->xfer;
    memcpy(r->ool_len, ool_len, b->nool * sizeof *ool_len);
    r->pages = ipc_ool_pages(ool_len, b->nool);
    r->msg = new_msg(src, b->seq, b->reply_token, b->reply_cap, b->inline_len);
    r->msg->nool = b->nool;
    if (b->nool) {
        r->msg->ool = calloc(b->nool, sizeof *r->msg->ool);
        if (!r->msg->ool)
            log_fatal("out of memory recording a request from node %d", src);
    }
    r->next = ipc.reservations;
    ipc.reservations = r;
    /* Otherwise it waits, unreserved, until a take frees queue space. */
    if (p->queued + p->reserved < p->limit)
        reserve_and_grant(p, r);
}

/* Grants waiting requests, oldest first (the list is newest first), while
 * the port has room. */
static void grant_waiting(int32_t port)
{
    struct port *p = &ipc.ports[port];
    while (p->queued + p->reserved < p->limit) {
        struct reservation *oldest = NULL;
        for (struct reservation *r = ipc.reservations; r; r = r->next)
            if (!r->reserved && r->port == port)
                oldest = r;
        if (!oldest)
            return;
        reserve_and_grant(p, oldest);
    }
}

static void unlink_reservation(struct reservation *r)
{
    for (struct reservation **pp = &ipc.reservations; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

static void maybe_complete(struct reservation *r)
{
    if (!r->inline_got || r->pages_got < r->pages)
        return;
    struct port *p = &ipc.ports[r->port];
    unlink_reservation(r);
    p->reserved--;
    enqueue_msg(p, r->msg);
    free(r);
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

/* ---- the receiving program -------------------------------------------- */

struct queue_wait {
    struct port *p;
};

static bool queue_nonempty(void *arg)
{
    struct queue_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    bool ok = w->p->head != NULL;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_recv(int port, struct dsm_msg *msg, double timeout)
{
    need_started();
    if (port < 0 || port >= IPC_MAX_PORTS || !msg)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = &ipc.ports[port];
    if (!p->used) {
        pthread_mutex_unlock(&ipc.lock);
        return -EINVAL;
    }
    struct queue_wait w = {.p = p};
    uint64_t deadline = clock_deadline(timeout);
    while (!p->head) {
        pthread_mutex_unlock(&ipc.lock);
        if (ipc_wait(queue_nonempty, &w, deadline))
            return -ETIMEDOUT;
        pthread_mutex_lock(&ipc.lock);
    }
    struct queued_msg *m = p->head;
    p->head = m->next;
    if (!p->head)
        p->tail = NULL;
    p->queued--;
    ipc_defer_accept(m->src, port, m->seq);
    grant_waiting(port);
    pthread_mutex_unlock(&ipc.lock);

    memset(msg, 0, sizeof *msg);
    msg->src_node = m->src;
    msg->seq = m->seq;
    msg->data = m->data;
    msg->len = m->len;
    msg->ool = m->ool;
    msg->nool = (int)m->nool;
    msg->reply_token = m->reply_token;
    msg->internal_ = m;
    return 0;
}

void dsm_msg_free(struct dsm_msg *msg)
{
    if (!msg || !msg->internal_)
        return;
    struct queued_msg *m = msg->internal_;
    for (uint32_t i = 0; i < m->nool; i++)
        ipc_block_put(m->ool[i].addr, m->ool[i].len);
    free(m->ool);
    free(m->data_block);
    free(m);
    memset(msg, 0, sizeof *msg);
}
