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
 * (message-accept notification), naming the sender's link (its flow) and
 * the message's number. The receiver also grants memory for large messages
 * only while the port holds fewer than queue_limit messages, counting those
 * already reserved, so reserved memory stays bounded however many nodes
 * send to it at once.
 *
 * Order and rights: a node numbers everything it addresses to a port,
 * messages and rights operations alike (struct ipc_dst's seq), and the port
 * handles each node's in that order (port_run), wherever they travelled: a
 * message may arrive early (a small one overtaking a large one still in
 * transfer, or one sent straight to a port's new node overtaking one the
 * old node forwards), and waits its turn. At its turn a message is put on
 * the queue only if its node holds a right to send it (carry.c); anything
 * else is refused with one line. A node's items also wait while a right it
 * claimed is not yet confirmed by the node that gave it (carry.c).
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
#include "base/trace.h"
#include "ipc/blocks.h"
#include "ipc/ipc_state.h"

static void need_started(void)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
}

/* ---- slots -------------------------------------------------------------- */

/* Port numbers carry the slot's generation above its index, so that a
 * number kept after its port left or died does not name the port that
 * takes the slot next. */
#define SLOT_BITS 10
_Static_assert(IPC_MAX_SLOTS == 1u << SLOT_BITS, "a port number's slot field");
#define GEN_MASK ((1u << (31 - SLOT_BITS)) - 1)

int port_number(const struct port *p)
{
    return (int)(((p->gen & GEN_MASK) << SLOT_BITS) | (uint32_t)(p - ipc.ports));
}

/* The port a program's port number names, if this node holds its receive
 * right (and it is not in a message). */
static struct port *port_of_number(int number)
{
    if (number < 0)
        return NULL;
    struct port *p = &ipc.ports[(uint32_t)number & (IPC_MAX_SLOTS - 1)];
    if (p->state == PORT_FREE || p->in_transit || p->doomed ||
        (p->gen & GEN_MASK) != (uint32_t)number >> SLOT_BITS)
        return NULL;
    return p;
}

struct port *port_here(uint32_t slot, uint64_t uid)
{
    if (slot < IPC_MAX_SLOTS && ipc.ports[slot].state != PORT_FREE && ipc.ports[slot].uid == uid)
        return &ipc.ports[slot];
    struct dir_rec *r = dir_find(uid);
    return r && r->state == DIR_LOCAL ? &ipc.ports[r->slot] : NULL;
}

struct port *port_new(uint64_t uid, uint32_t limit, enum port_state state)
{
    struct port *p = NULL;
    for (int i = 0; i < IPC_MAX_SLOTS && !p; i++)
        if (ipc.ports[i].state == PORT_FREE)
            p = &ipc.ports[i];
    if (!p)
        return NULL;
    struct port_peer *peers = calloc((size_t)job()->nodes, sizeof *peers);
    if (!peers)
        log_fatal("out of memory making a port");
    uint32_t gen = p->gen;
    memset(p, 0, sizeof *p);
    p->gen = gen;
    p->peers = peers;
    for (int i = 0; i < job()->nodes; i++)
        p->peers[i].next_seq = 1;
    p->uid = uid;
    p->limit = limit;
    p->state = (uint8_t)state;
    dir_put(uid, DIR_LOCAL, job()->rank, (uint32_t)(p - ipc.ports), 0);
    return p;
}

void port_free(struct port *p)
{
    for (struct port_token *t = p->tokens, *n; t; t = n) {
        n = t->next;
        free(t);
    }
    free(p->peers);
    free(p->arriving);
    uint32_t gen = p->gen + 1;
    memset(p, 0, sizeof *p);
    p->gen = gen;
}

static int port_make(const char *name, unsigned queue_limit, dsm_port_ref *recv)
{
    if (queue_limit < 1 || queue_limit > IPC_MAX_LIMIT)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    if (name)
        for (struct name_rec *n = ipc.names; n; n = n->next)
            if (!strcmp(n->name, name) && !ipc.links[right_at(n->entry)->link].dead) {
                pthread_mutex_unlock(&ipc.lock);
                return -EEXIST;
            }
    struct port *p = port_new(ipc_nonce(), queue_limit, PORT_LIVE);
    if (!p) {
        pthread_mutex_unlock(&ipc.lock);
        return -ENOSPC;
    }
    uint32_t slot = (uint32_t)(p - ipc.ports);
    uint32_t link = link_get(p->uid, job()->rank, slot, 0, queue_limit);
    uint32_t e = right_new(DSM_RIGHT_RECEIVE, link);
    if (!e) {
        port_free(p);
        pthread_mutex_unlock(&ipc.lock);
        return -ENOSPC;
    }
    right_at(e)->slot = (int32_t)slot;
    right_handle(e, recv);
    pthread_mutex_unlock(&ipc.lock);
    return 0;
}

int dsm_port_allocate(unsigned queue_limit, dsm_port_ref *recv)
{
    need_started();
    if (!recv)
        return -EINVAL;
    return port_make(NULL, queue_limit, recv);
}

int dsm_port_create(const char *name, unsigned queue_limit)
{
    need_started();
    if (!name || !name[0] || strlen(name) > DSM_PORT_NAME_MAX)
        return -EINVAL;
    dsm_port_ref recv;
    int rc = port_make(name, queue_limit, &recv);
    if (rc)
        return rc;
    rc = dsm_port_register(&recv, name);
    if (rc) { /* another thread registered the name meanwhile */
        dsm_port_release(&recv);
        return rc;
    }
    return recv.port;
}

int dsm_port_receive_right(int port, dsm_port_ref *recv)
{
    need_started();
    if (!recv)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(port);
    int rc = -EINVAL;
    if (p)
        for (uint32_t i = 0; i < ipc.nrights; i++)
            if (ipc.rights[i].nonce && ipc.rights[i].kind == DSM_RIGHT_RECEIVE &&
                ipc.rights[i].slot == (int32_t)(p - ipc.ports)) {
                right_handle(i + 1, recv);
                rc = 0;
                break;
            }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

/* ---- sender side ------------------------------------------------------ */

struct credit_wait {
    uint32_t link;
};

static bool credit_available(void *arg)
{
    struct credit_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w->link];
    bool ok = l->dead || l->sent - l->accepted < l->limit;
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
    need_started();
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
        if (ipc_wait(credit_available, &cw, deadline))
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

void port_on_accept(int src, uint16_t flow, uint64_t ordinal)
{
    (void)src; /* a port that moved is answered for by its new node */
    if (flow >= ipc.nlinks)
        return;
    struct link *l = &ipc.links[flow];
    if (l->uid && ordinal > l->accepted && ordinal <= l->sent) {
        l->accepted = ordinal;
        ipc_notify();
    }
}

struct accept_wait {
    uint32_t link;
    uint64_t seq;
};

static bool accepted_reached(void *arg)
{
    struct accept_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w->link];
    bool ok = l->dead || l->accepted >= w->seq;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_wait_accepted(const dsm_port_ref *dst, uint64_t seq, double timeout)
{
    need_started();
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc = right_get(dst, 1u << DSM_RIGHT_SEND, &e);
    struct accept_wait w = {0};
    if (!rc) {
        w.link = e->link;
        w.seq = seq;
        if (seq > ipc.links[w.link].sent || seq == 0)
            rc = -EINVAL;
    }
    pthread_mutex_unlock(&ipc.lock);
    if (rc)
        return rc;
    if (ipc_wait(accepted_reached, &w, clock_deadline(timeout)))
        return -ETIMEDOUT;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w.link];
    rc = l->accepted >= seq ? 0 : -EPIPE;
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

uint64_t dsm_msg_accepted(const dsm_port_ref *dst)
{
    need_started();
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    uint64_t n = right_get(dst, 1u << DSM_RIGHT_SEND, &e) ? 0 : ipc.links[e->link].accepted;
    pthread_mutex_unlock(&ipc.lock);
    return n;
}

/* ---- receiver side ---------------------------------------------------- */

void port_append(struct port *p, struct queued_msg *m)
{
    if (!m->ordinal && !(m->flags & IPC_MF_ONCE))
        m->ordinal = ++p->peers[m->src].enq;
    m->next = NULL;
    if (p->tail)
        p->tail->next = m;
    else
        p->head = m;
    p->tail = m;
    p->queued++;
    ipc_notify();
}

/* Handles every message and operation whose turn has come: each node's in
 * its own order, none of a node's while a claim of its waits for its note. */
void port_run(struct port *p)
{
    while (p->state == PORT_LIVE && !p->doomed) {
        struct port_item *it = NULL;
        for (struct port_item **pp = &p->items; *pp;) {
            struct port_item *c = *pp;
            struct port_peer *pe = &p->peers[c->origin];
            if (!c->seq) { /* unnumbered (PULL, DROP_RECV), come while arriving */
                it = c;
                *pp = c->next;
                break;
            }
            if (c->seq < pe->next_seq) { /* its number came already */
                *pp = c->next;
                ipc_refuse("node %d sent message or operation %llu to a port twice; dropped",
                           c->origin, (unsigned long long)c->seq);
                if (c->msg)
                    port_msg_free(c->msg);
                free(c);
                continue;
            }
            if (c->seq == pe->next_seq && !pe->waiting) {
                it = c;
                *pp = c->next;
                break;
            }
            pp = &c->next;
        }
        if (!it)
            return;
        if (it->seq)
            p->peers[it->origin].next_seq++;
        port_take_turn(p, it->origin, it->from, it->msg, it->op, it->token, it->arg);
        free(it);
    }
}

void port_take_turn(struct port *p, int origin, int from, struct queued_msg *msg, unsigned op,
                    uint64_t token, uint64_t arg)
{
    if (msg) {
        if (carry_may_send(p, origin, msg)) {
            port_append(p, msg);
        } else {
            ipc_refuse("node %d sent a message to port %016llx through no right it holds; "
                       "refused", origin, (unsigned long long)p->uid);
            carry_destroy(msg->rights, msg->nrights);
            port_msg_free(msg);
        }
    } else if (!carry_apply(p, origin, from, op, token, arg)) {
        ipc_refuse("node %d sent port %016llx a %s it holds no right for; refused", origin,
                   (unsigned long long)p->uid, ipc_op_name(op));
    }
}

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

/* The common case, straight: a message for the port here, in its turn,
 * nothing waiting, is handled at once (migrate_route decides the same,
 * the long way). Whether it was. */
static bool in_turn(uint32_t slot, uint64_t uid, int origin, int from, uint64_t seq,
                    struct queued_msg *m)
{
    struct port *port = &ipc.ports[slot];
    if (port->uid != uid || port->state != PORT_LIVE || port->items || port->doomed)
        return false;
    struct port_peer *pe = &port->peers[origin];
    if (seq != pe->next_seq || pe->waiting)
        return false;
    pe->next_seq++;
    port_take_turn(port, origin, from, m, 0, 0, 0);
    return true;
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
    if (!(p->d.flags & IPC_MF_FWD) && in_turn(p->d.slot, p->d.uid, origin, src, p->d.seq, m))
        return;
    struct route_item it = {.origin = origin, .from = src, .d = p->d, .fwd = p->fwd, .msg = m};
    migrate_route(&it);
}

void port_on_op(int src, const struct ipc_parsed *p)
{
    int origin = p->d.flags & IPC_MF_FWD ? p->fwd.origin : src;
    if (origin >= job()->nodes)
        log_fatal("node %d forwarded an operation of node %d, beyond the job; protocol error",
                  src, origin);
    struct route_item it = {.origin = origin, .from = src, .d = p->d, .fwd = p->fwd,
                            .op = p->opcode, .token = p->op.token, .arg = p->op.arg};
    migrate_route(&it);
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
    if ((p->d.flags & IPC_MF_FWD) && !migrate_trusts(p->d.uid, src)) {
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
        migrate_forward_parsed_req(&it, p, rec);
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
        in_turn(r->slot, r->uid, r->msg->src, job()->rank, r->msg->seq, r->msg)) {
        free(r);
        return;
    }
    struct route_item it = {.origin = r->msg->src, .from = job()->rank, .d = {.slot = r->slot,
                            .uid = r->uid, .seq = r->msg->seq, .flags = r->flags},
                            .fwd = r->fwd, .msg = r->msg, .trusted = true};
    free(r);
    migrate_route(&it);
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
    int number;
};

/* The ports whose receive rights a message brought: the program gets them
 * once each port is here (its state and queue came from its former node),
 * or gone. */
struct arrival_wait {
    int                 n;
    const dsm_port_ref *rights;
};

static bool ports_arrived(void *arg)
{
    struct arrival_wait *w = arg;
    bool ok = true;
    pthread_mutex_lock(&ipc.lock);
    for (int i = 0; i < w->n && ok; i++) {
        if (w->rights[i].kind != DSM_RIGHT_RECEIVE)
            continue;
        const struct port *p = &ipc.ports[(uint32_t)w->rights[i].port & (IPC_MAX_SLOTS - 1)];
        ok = !(p->state == PORT_ARRIVING && p->uid == w->rights[i].id);
    }
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

static bool queue_nonempty(void *arg)
{
    struct queue_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(w->number);
    bool ok = !p || p->head != NULL || p->doomed;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_recv(int port, struct dsm_msg *msg, double timeout)
{
    need_started();
    if (!msg)
        return -EINVAL;
    uint64_t t_call = TRACE_ON ? clock_ns() : 0;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(port);
    struct queue_wait w = {.number = port};
    uint64_t deadline = clock_deadline(timeout);
    while (p && !p->head) {
        pthread_mutex_unlock(&ipc.lock);
        if (ipc_wait(queue_nonempty, &w, deadline))
            return -ETIMEDOUT;
        pthread_mutex_lock(&ipc.lock);
        p = port_of_number(port);
    }
    if (!p) { /* not a port, or its receive right went meanwhile */
        pthread_mutex_unlock(&ipc.lock);
        return -EINVAL;
    }
    uint64_t t_taken = TRACE_ON ? clock_ns() : 0;
    struct queued_msg *m = p->head;
    p->head = m->next;
    if (!p->head)
        p->tail = NULL;
    p->queued--;
    if (m->flow != IPC_NO_FLOW)
        ipc_defer_accept(m->src, m->flow, m->ordinal);
    port_grant_waiting(p);
    memset(msg, 0, sizeof *msg);
    if (m->nrights) {
        msg->rights = calloc(m->nrights, sizeof *msg->rights);
        if (!msg->rights)
            log_fatal("out of memory taking a message's rights");
        carry_in(m->rights, m->nrights, msg->rights);
        msg->nrights = (int)m->nrights;
    }
    pthread_mutex_unlock(&ipc.lock);

    msg->src_node = m->src;
    msg->seq = m->ordinal;
    msg->data = m->data;
    msg->len = m->len;
    msg->ool = m->ool;
    msg->nool = (int)m->nool;
    msg->reply_token = m->reply_token;
    if (msg->nrights) {
        struct arrival_wait aw = {.n = msg->nrights, .rights = msg->rights};
        ipc_wait(ports_arrived, &aw, 0);
    }
    if (m->flags & IPC_MF_NOTIFY) {
        struct dsm_notification n;
        memcpy(&n, m->data, sizeof n);
        msg->notification = (int)n.kind;
    }
    msg->internal_ = m;
    if (TRACE_ON)
        trace_put(TRACE_CALL, 1, m->src, m->len, t_call, t_taken, clock_ns());
    return 0;
}

void dsm_msg_free(struct dsm_msg *msg)
{
    if (!msg || !msg->internal_)
        return;
    struct queued_msg *m = msg->internal_;
    if (m->rights) { /* they are the program's now (dsm_msg_recv) */
        free(m->rights);
        m->rights = NULL;
        m->nrights = 0;
        free(msg->rights);
    }
    port_msg_free(m);
    memset(msg, 0, sizeof *msg);
}
