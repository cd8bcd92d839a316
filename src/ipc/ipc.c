/*
 * ipc.c — the ipc layer's start, its dispatch of transport messages by
 * type, and the registry of handlers for the layers above.
 *
 * Messages whose data must land in a buffer chosen by their receiver (the
 * inline data and pages of a granted message, an RPC reply, a page reply of
 * the layers above) are *placed*: the transport copies each fragment
 * straight into that buffer, and a single-datagram message is copied there
 * once, so both paths look the same to the handler.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/trace.h"
#include "ipc/blocks.h"
#include "ipc/ipc_state.h"

DSM_STATE struct ipc_state ipc;

void ipc_register(unsigned type, const char *name, ipc_handler fn, ipc_placer place)
{
    if (type < IPC_TYPE_NEXT || type >= IPC_TYPE_MAX || !name)
        log_fatal("internal error: message type %u cannot be registered", type);
    ipc.names_of[type] = name;
    ipc.handlers[type] = fn;
    ipc.placers[type] = place;
}

void ipc_register_timer(uint64_t (*fn)(uint64_t now)) { ipc.timer = fn; }

void ipc_timer_at(uint64_t t) { net_timer_at(t); }

const char *ipc_type_name(unsigned type)
{
    const char *own = ipc_own_type_name(type);
    return own ? own : type < IPC_TYPE_MAX ? ipc.names_of[type] : NULL;
}

/* splitmix64 over a seed from the kernel: the values need only be
 * unguessable to a program that reads no other node's memory. */
uint64_t ipc_nonce(void)
{
    for (;;) {
        uint64_t z = (ipc.rng += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (z)
            return z;
    }
}

#define REFUSALS_PRINTED 10

void ipc_refuse(const char *fmt, ...)
{
    stats_add(STAT_IPC_REFUSED, 1);
    if (ipc.refusals >= REFUSALS_PRINTED)
        return;
    char line[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (++ipc.refusals == REFUSALS_PRINTED)
        log_warn("%s (further refusals are only counted: \"messages refused\" in --stats)", line);
    else
        log_warn("%s", line);
}

/* Attaches the accept notification pending for `peer`, if any. */
static void attach_accept(int peer, struct ipc_hdr *h)
{
    if (!atomic_load(&ipc.accepts_pending))
        return;
    pthread_mutex_lock(&ipc.accept_lock);
    struct pending_accept *a = &ipc.accepts[peer];
    if (a->set) {
        h->flags |= IPC_HF_ACCEPT;
        h->acc_port = a->flow;
        h->acc_seq = a->ordinal;
        a->set = false;
        atomic_fetch_sub(&ipc.accepts_pending, 1);
    }
    pthread_mutex_unlock(&ipc.accept_lock);
}

static void send_accept(int peer, uint16_t flow, uint64_t ordinal)
{
    struct ipc_accept a = {.flow = flow, .ordinal = ordinal};
    struct ipc_hdr h = {.type = IPC_ACCEPT};
    struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof h},
                           {.iov_base = &a, .iov_len = sizeof a}};
    uint64_t t0 = TRACE_ON ? clock_ns() : 0;
    net_send(peer, iov, 2);
    if (TRACE_ON)
        trace_put(TRACE_SEND, IPC_ACCEPT, peer, sizeof h + sizeof a, t0, clock_ns(), 0);
    stats_add(STAT_IPC_ACCEPTS_SENT, 1);
    stats_msg(IPC_ACCEPT, sizeof h + sizeof a);
}

void ipc_defer_accept(int peer, uint16_t flow, uint64_t ordinal)
{
    pthread_mutex_lock(&ipc.accept_lock);
    struct pending_accept *a = &ipc.accepts[peer];
    if (a->set && a->flow != flow) /* one slot per peer: the older one goes alone */
        send_accept(peer, a->flow, a->ordinal);
    if (!a->set)
        atomic_fetch_add(&ipc.accepts_pending, 1);
    a->set = true;
    a->flow = flow;
    a->ordinal = ordinal;
    pthread_mutex_unlock(&ipc.accept_lock);
}

void ipc_flush_accepts(void)
{
    if (!atomic_load(&ipc.accepts_pending))
        return;
    pthread_mutex_lock(&ipc.accept_lock);
    for (int i = 0; i < job()->nodes; i++) {
        struct pending_accept *a = &ipc.accepts[i];
        if (a->set) {
            send_accept(i, a->flow, a->ordinal);
            a->set = false;
            atomic_fetch_sub(&ipc.accepts_pending, 1);
        }
    }
    pthread_mutex_unlock(&ipc.accept_lock);
}

/* The service thread's tick: notifications nobody carried go alone, idle
 * message buffers go back to the kernel, and the layer above's timer runs. */
static uint64_t tick(uint64_t now)
{
    ipc_flush_accepts();
    ipc_blocks_trim(now);
    return ipc.timer ? ipc.timer(now) : 0;
}

static __thread uint64_t sent_by_thread;

uint64_t ipc_sent_by_thread(void) { return sent_by_thread; }

/* Every message leaves here: the header, then iov[0..iovcnt) (copied),
 * then lent[0..lent_len) (lent, when ref is given). */
static int send_msg(int peer, unsigned type, uint32_t aux, const struct iovec *iov, int iovcnt,
                    const void *lent, size_t lent_len, struct net_ref *ref)
{
    if (iovcnt < 0 || iovcnt > IPC_SENDV_MAX)
        return -EINVAL; /* before attach_accept, which takes a notification along */
    struct ipc_hdr h = {.type = (uint8_t)type, .aux = aux};
    attach_accept(peer, &h);
    struct iovec v[IPC_SENDV_MAX + 1];
    v[0] = (struct iovec){.iov_base = &h, .iov_len = sizeof h};
    memcpy(v + 1, iov, (size_t)iovcnt * sizeof *iov);
    size_t bytes = sizeof h + lent_len;
    for (int i = 0; i < iovcnt; i++)
        bytes += iov[i].iov_len;
    stats_msg(type, bytes);
    sent_by_thread++;
    if (!TRACE_ON)
        return net_send_ref(peer, v, iovcnt + 1, lent, lent_len, ref);
    uint64_t t0 = clock_ns();
    int rc = net_send_ref(peer, v, iovcnt + 1, lent, lent_len, ref);
    trace_put(TRACE_SEND, type, peer, bytes, t0, clock_ns(), 0);
    return rc;
}

int ipc_send3(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
              const void *data, size_t dlen)
{
    struct iovec iov[2] = {{.iov_base = (void *)body, .iov_len = blen},
                           {.iov_base = (void *)data, .iov_len = dlen}};
    return send_msg(peer, type, aux, iov, 2, NULL, 0, NULL);
}

int ipc_send4(int peer, unsigned type, uint32_t aux, const void *a, size_t alen, const void *b,
              size_t blen, const void *c, size_t clen)
{
    struct iovec iov[3] = {{.iov_base = (void *)a, .iov_len = alen},
                           {.iov_base = (void *)b, .iov_len = blen},
                           {.iov_base = (void *)c, .iov_len = clen}};
    return send_msg(peer, type, aux, iov, 3, NULL, 0, NULL);
}

int ipc_send3_lent(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
                   const void *data, size_t dlen, struct net_ref *ref)
{
    struct iovec iov[1] = {{.iov_base = (void *)body, .iov_len = blen}};
    return send_msg(peer, type, aux, iov, 1, data, dlen, ref);
}

unsigned char *ipc_copy_payload(const void *msg, size_t len, size_t fixed, size_t *out_len)
{
    size_t skip = sizeof(struct ipc_hdr) + fixed;
    if (len < skip)
        log_fatal("a message of %zu bytes is shorter than its %zu-byte header", len, skip);
    *out_len = len - skip;
    unsigned char *p = malloc(*out_len ? *out_len : 1);
    if (!p)
        log_fatal("out of memory keeping a %zu-byte message", *out_len);
    memcpy(p, (const char *)msg + skip, *out_len);
    return p;
}

int ipc_send(int peer, unsigned type, uint32_t aux, const void *body, size_t len)
{
    return ipc_send3(peer, type, aux, body, len, NULL, 0);
}

int ipc_sendv(int peer, unsigned type, uint32_t aux, const struct iovec *iov, int iovcnt)
{
    return send_msg(peer, type, aux, iov, iovcnt, NULL, 0, NULL);
}

void ipc_batch_begin(void) { net_batch_begin(); }
void ipc_batch_end(void) { net_batch_end(); }

size_t ipc_message_room(void)
{
    size_t payload = net_datagram_payload();
    return payload > sizeof(struct ipc_hdr) ? payload - sizeof(struct ipc_hdr) : 0;
}

int ipc_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns)
{
    /* About to wait: whoever waits on our accepts must not wait on us. */
    ipc_flush_accepts();
    return net_wait(done, arg, deadline_ns);
}

void ipc_notify(void) { net_notify(); }

static void malformed(int peer, unsigned type);

/* Applies the accept notification a message carries. */
static void take_accept(int peer, const struct ipc_hdr *h)
{
    if (!(h->flags & IPC_HF_ACCEPT))
        return;
    pthread_mutex_lock(&ipc.lock);
    port_on_accept(peer, h->acc_port, h->acc_seq);
    pthread_mutex_unlock(&ipc.lock);
}

static void malformed(int peer, unsigned type)
{
    const char *name = ipc_type_name(type);
    log_fatal("node %d sent a malformed %s message (type %u); protocol error (mismatched builds?)",
              peer, name ? name : "unknown", type);
}

/* ---- placement -------------------------------------------------------- */

static void *place(void *ctx, int peer, const void *head, size_t head_len, size_t msg_len,
                   size_t *skip)
{
    (void)ctx;
    struct ipc_hdr h;
    if (head_len < sizeof h)
        malformed(peer, 0);
    memcpy(&h, head, sizeof h);
    take_accept(peer, &h);
    struct placement *pl = &ipc.placing[peer];
    memset(pl, 0, sizeof *pl);
    pl->type = h.type;
    if (TRACE_ON) {
        pl->trace_t0 = clock_ns();
        pl->trace_len = msg_len;
    }
    size_t fixed = ipc_fixed_size(h.type);
    const char *body = (const char *)head + sizeof h;

    if (h.type >= IPC_TYPE_NEXT && h.type < IPC_TYPE_MAX && ipc.placers[h.type]) {
        void *buf = ipc.placers[h.type](peer, head, head_len, msg_len, skip);
        if (!buf || *skip > head_len)
            return NULL;
        pl->scratch = malloc(*skip); /* the handler gets the fixed part at the end */
        if (!pl->scratch)
            return NULL;
        memcpy(pl->scratch, head, *skip);
        pl->head_len = *skip;
        return buf;
    }
    if (h.type >= IPC_TYPE_NEXT && h.type < IPC_TYPE_MAX) {
        /* A registered type without a placer: assembled whole, dispatched
         * when complete (a large barrier release, a lock grant...). */
        void *buf = malloc(msg_len);
        *skip = 0;
        pl->scratch = buf;
        return buf;
    }
    if (!fixed || head_len < fixed)
        malformed(peer, h.type);
    pthread_mutex_lock(&ipc.lock);
    void *buf = NULL;
    switch (h.type) {
    case IPC_KMSG: {
        struct ipc_kmsg b;
        memcpy(&b, body, sizeof b);
        buf = port_place_kmsg(peer, &b, msg_len, skip);
        break;
    }
    case IPC_PAGE: {
        struct ipc_page b;
        memcpy(&b, body, sizeof b);
        buf = port_place_page(peer, &b, msg_len, skip);
        pl->page_index = b.index;
        pl->page_count = b.count;
        break;
    }
    case IPC_REPLY: {
        struct ipc_reply b;
        memcpy(&b, body, sizeof b);
        buf = rpc_place_reply(peer, &b, msg_len, skip);
        break;
    }
    case IPC_SMALL:
    case IPC_REQ: /* large only through misuse; keep them whole */
    default: {
        /* Any other message is simply assembled whole and dispatched. */
        buf = malloc(msg_len);
        *skip = 0;
        pl->scratch = buf;
        break;
    }
    }
    pthread_mutex_unlock(&ipc.lock);
    return buf;
}

static void dispatch(int peer, const void *msg, size_t len);

static void placed(int peer, void *buf, size_t len)
{
    struct placement *pl = &ipc.placing[peer];
    unsigned type = pl->type;
    if (type >= IPC_TYPE_NEXT && type < IPC_TYPE_MAX && ipc.placers[type]) {
        ipc.handlers[type](peer, pl->scratch, pl->head_len);
        free(pl->scratch);
        pl->scratch = NULL;
        return;
    }
    switch (type) {
    case IPC_KMSG:
        pthread_mutex_lock(&ipc.lock);
        port_kmsg_placed(peer);
        pthread_mutex_unlock(&ipc.lock);
        break;
    case IPC_PAGE:
        pthread_mutex_lock(&ipc.lock);
        port_page_placed(peer, pl->page_index, pl->page_count);
        pthread_mutex_unlock(&ipc.lock);
        break;
    case IPC_REPLY:
        pthread_mutex_lock(&ipc.lock);
        rpc_reply_placed(peer);
        pthread_mutex_unlock(&ipc.lock);
        break;
    default:
        if (buf == pl->scratch) {
            pl->scratch = NULL;
            dispatch(peer, buf, len);
            free(buf);
        }
        break;
    }
}

/* ---- dispatch --------------------------------------------------------- */

static void dispatch(int peer, const void *msg, size_t len)
{
    struct ipc_hdr h;
    if (len < sizeof h)
        malformed(peer, 0);
    memcpy(&h, msg, sizeof h);
    if (h.flags & ~IPC_HF_ACCEPT)
        malformed(peer, h.type);
    take_accept(peer, &h);
    if (h.type >= IPC_TYPE_NEXT) {
        if (h.type >= IPC_TYPE_MAX || !ipc.handlers[h.type])
            log_fatal("node %d sent a message of unknown type %u; mismatched builds?", peer, h.type);
        if (ipc.placers[h.type]) {
            size_t skip = 0;
            void *buf = ipc.placers[h.type](peer, msg, len, len, &skip);
            if (!buf || skip > len)
                log_fatal("no memory to place a %s message from node %d", ipc.names_of[h.type], peer);
            memcpy(buf, (const char *)msg + skip, len - skip);
            ipc.handlers[h.type](peer, msg, skip);
        } else
            ipc.handlers[h.type](peer, msg, len);
        return;
    }
    /* A message to a port is taken apart once: ipc_parse checks all that
     * ipc_msg_check would. */
    struct ipc_parsed p;
    bool to_port = h.type == IPC_SMALL || h.type == IPC_REQ ||
                   (h.type == IPC_PORT_OP && h.aux >= IPC_OP_NOTE && h.aux <= IPC_OP_PORT_LAST);
    if (to_port ? ipc_parse(msg, len, &p) : ipc_msg_check(msg, len))
        malformed(peer, h.type);
    const char *body = (const char *)msg + sizeof h;
    size_t fixed = ipc_fixed_size(h.type);
    const char *data = (const char *)msg + fixed;
    size_t dlen = len - fixed;

    pthread_mutex_lock(&ipc.lock);
    switch (h.type) {
    case IPC_LOOKUP_REQ: {
        struct ipc_lookup_req b;
        memcpy(&b, body, sizeof b);
        names_on_lookup_req(peer, &b);
        break;
    }
    case IPC_LOOKUP_REP: {
        struct ipc_lookup_rep b;
        memcpy(&b, body, sizeof b);
        names_on_lookup_rep(peer, &b, data, dlen);
        break;
    }
    case IPC_SMALL:
        port_on_small(peer, &p);
        break;
    case IPC_REQ:
        port_on_req(peer, &p);
        break;
    case IPC_GRANT: {
        struct ipc_grant b;
        memcpy(&b, body, sizeof b);
        port_on_grant(peer, &b);
        break;
    }
    case IPC_KMSG: {
        struct ipc_kmsg b;
        memcpy(&b, body, sizeof b);
        port_on_kmsg(peer, &b, data, dlen);
        break;
    }
    case IPC_PAGE: {
        struct ipc_page b;
        memcpy(&b, body, sizeof b);
        port_on_page(peer, &b, data, dlen);
        break;
    }
    case IPC_ACCEPT: {
        struct ipc_accept b;
        memcpy(&b, body, sizeof b);
        port_on_accept(peer, (uint16_t)b.flow, b.ordinal);
        break;
    }
    case IPC_REPLY: {
        struct ipc_reply b;
        memcpy(&b, body, sizeof b);
        rpc_on_reply(peer, &b, data, dlen);
        break;
    }
    case IPC_PORT_OP:
        if (to_port) {
            port_on_op(peer, &p);
        } else if (h.aux == IPC_OP_MIGRATE) {
            port_migrate_on_state(peer, body, len - sizeof h);
        } else {
            struct ipc_loc l;
            memcpy(&l, body, sizeof l);
            if (h.aux == IPC_OP_REDIRECT)
                port_migrate_on_redirect(peer, &l);
            else
                notify_on_dead(peer, l.uid);
        }
        break;
    }
    pthread_mutex_unlock(&ipc.lock);
}

/* deliver, recording the message: when its first bytes came in (placed
 * messages: at place()), and when its handling began and ended. */
static void deliver_traced(int peer, void *msg, size_t len, bool was_placed)
{
    uint64_t t1 = clock_ns();
    const struct placement *pl = &ipc.placing[peer];
    unsigned type = was_placed ? pl->type : len ? *(const uint8_t *)msg : 0;
    uint64_t t0 = was_placed ? pl->trace_t0 : t1;
    uint64_t bytes = was_placed ? pl->trace_len : len;
    if (was_placed)
        placed(peer, msg, len);
    else
        dispatch(peer, msg, len);
    trace_put(TRACE_RECV, type, peer, bytes, t0, t1, clock_ns());
}

static void deliver(void *ctx, int peer, void *msg, size_t len, bool was_placed)
{
    (void)ctx;
    if (TRACE_ON)
        deliver_traced(peer, msg, len, was_placed);
    else if (was_placed)
        placed(peer, msg, len); /* its accept was taken at place() */
    else
        dispatch(peer, msg, len);
}

static DSM_STATE struct net_params pending_net;

int ipc_start(const struct net_params *np, const struct ipc_params *ip)
{
    pthread_mutex_init(&ipc.lock, NULL);
    ipc.prm = *ip;
    if (getrandom(&ipc.rng, sizeof ipc.rng, 0) != sizeof ipc.rng)
        return -EIO;
    pthread_mutex_init(&ipc.accept_lock, NULL);
    ipc.placing = calloc((size_t)job()->nodes, sizeof *ipc.placing);
    ipc.accepts = calloc((size_t)job()->nodes, sizeof *ipc.accepts);
    if (!ipc.placing || !ipc.accepts)
        return -ENOMEM;
    pending_net = *np;
    return 0;
}

int ipc_run(void)
{
    static const struct net_rx_ops ops = {.place = place, .deliver = deliver, .tick = tick};
    return net_start(&pending_net, &ops, NULL);
}

void ipc_finish(void)
{
    ipc_flush_accepts();
    net_finish();
    ipc_blocks_release();
}
