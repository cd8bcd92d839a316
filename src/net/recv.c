/*
 * recv.c — the receive side: checking datagrams, putting each peer's back
 * in order, reassembling messages and delivering them to the layer above.
 *
 * Datagrams are checked (job, ranks, sizes, key) before anything else reads
 * them. In-order ones are delivered at once — single-datagram messages
 * straight from the receive buffer, larger ones copied fragment by fragment
 * into the buffer the upper layer placed them in. Early ones are held (up
 * to 64 ahead) and duplicates dropped; the state travels back as the
 * acknowledgement, piggybacked on data or sent alone once per batch.
 *
 * Everything here runs under net_state.rx_lock, which one thread at a time
 * holds — the service thread or a polling waiter — so each peer's messages
 * are delivered in order without a lock of their own. The little it
 * shares with the send side (acknowledgements, liveness) it writes under
 * net_state.lock.
 */
#include "net/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/trace.h"

#define ACK_EVERY         2                /* in-order datagrams per immediate ack */

__thread bool recv_in_delivery NET_TLS;

static void deliver_fragment(int src, const struct wire_hdr *h, unsigned char *payload)
{
    struct peer *p = &net_state.peers[src];
    if (h->flags & WIRE_NOP)
        return;
    if (h->flags & WIRE_FIN) {
        /* From a child: its subtree has finished; from the parent: every
         * node has (net_finish). */
        p->fin_rx = true;
        if (src == net_state.tree.parent)
            atomic_store(&net_state.tree.all_finished, true);
        return;
    }
    if ((h->flags & (WIRE_FIRST | WIRE_LAST)) == (WIRE_FIRST | WIRE_LAST)) {
        if (p->rx.asm_buf)
            log_fatal("node %d started a message inside another; protocol error", src);
        stats_add(STAT_NET_MSGS_RECV, 1);
        net_state.up.ops.deliver(net_state.up.ctx, src, payload, h->len, false);
        return;
    }
    if (h->flags & WIRE_FIRST) {
        if (p->rx.asm_buf)
            log_fatal("node %d started a message inside another; protocol error", src);
        size_t skip = 0;
        p->rx.asm_buf = net_state.up.ops.place(net_state.up.ctx, src, payload, h->len, h->msg_len, &skip);
        if (!p->rx.asm_buf)
            log_fatal("no memory to receive a %u-byte message from node %d", h->msg_len, src);
        if (skip > h->len)
            log_fatal("internal error: placement skips %zu bytes of a %u-byte fragment", skip, h->len);
        p->rx.asm_len = h->msg_len;
        p->rx.asm_got = 0;
        p->rx.asm_skip = skip;
    }
    if (!p->rx.asm_buf || h->msg_len != p->rx.asm_len || h->frag_off != p->rx.asm_got)
        log_fatal("node %d sent a fragment out of place; protocol error", src);
    size_t from = h->frag_off < p->rx.asm_skip ? p->rx.asm_skip - h->frag_off : 0;
    if (from < h->len)
        memcpy(p->rx.asm_buf + (h->frag_off + from - p->rx.asm_skip), payload + from, h->len - from);
    p->rx.asm_got += h->len;
    if (h->flags & WIRE_LAST) {
        unsigned char *buf = p->rx.asm_buf;
        p->rx.asm_buf = NULL;
        stats_add(STAT_NET_MSGS_RECV, 1);
        net_state.up.ops.deliver(net_state.up.ctx, src, buf, p->rx.asm_len - p->rx.asm_skip, true);
    }
}

static void on_data(int src, struct wire_hdr *h, unsigned char *dgram, size_t len)
{
    struct peer *p = &net_state.peers[src];
    enum rx_verdict v = rxwin_classify(&p->rx.win, h->seq);
    bool twice = false;
    switch (v) {
    case RX_DUPLICATE:
        stats_add(STAT_NET_DUPS_DROPPED, 1);
        twice = true;
        break;
    case RX_BEYOND:
        break;
    case RX_HOLD: {
        unsigned slot = h->seq % SEQWIN_MAX;
        unsigned char *copy = malloc(len);
        if (!copy)
            log_fatal("out of memory holding a datagram from node %d", src);
        memcpy(copy, dgram, len);
        p->rx.held[slot] = copy;
        p->rx.held_len[slot] = len;
        rxwin_hold(&p->rx.win, h->seq);
        stats_add(STAT_NET_OOO_BUFFERED, 1);
        break;
    }
    case RX_IN_ORDER:
        deliver_fragment(src, h, dgram + sizeof *h);
        while (rxwin_advance(&p->rx.win)) {
            unsigned slot = p->rx.win.expected % SEQWIN_MAX;
            unsigned char *d = p->rx.held[slot];
            struct wire_hdr hh;
            memcpy(&hh, d, sizeof hh);
            deliver_fragment(src, &hh, d + sizeof hh);
            p->rx.held[slot] = NULL; /* only now: a fatal error inside leaves it owned */
            free(d);
        }
        break;
    }
    /* Every data datagram, even a duplicate, is answered: the sender may
     * have lost our previous acknowledgement. A lone in-order one waits a
     * little, so the reply the program is about to send can carry it; a
     * gap or a duplicate is reported at once, to start a fast
     * retransmission or stop a useless one. */
    pthread_mutex_lock(&net_state.lock);
    p->ack.cum = p->rx.win.expected;
    p->ack.sack = p->rx.win.held;
    p->ack.pending = true;
    p->ack.twice |= twice;
    p->ack.echo_rtx = (h->flags & WIRE_RTX) != 0; /* new or not: rack_delivered_time */
    if (v != RX_IN_ORDER || p->rx.win.held || ++p->ack.unacked >= ACK_EVERY)
        p->ack.urgent = true;
    else if (!p->ack.due_ns) {
        p->ack.due_ns = clock_ns() + ACK_DELAY_NS;
        service_timer_at(p->ack.due_ns);
    }
    pthread_mutex_unlock(&net_state.lock);
}

/* kernel_ns and read_ns: for the trace, when the datagram reached this
 * host (the kernel's stamp, or an emulated link's due time) and was taken. */
static void on_datagram(unsigned char *d, size_t len, const struct sockaddr_in *from,
                        uint64_t kernel_ns, uint64_t read_ns)
{
    enum wire_verdict v = wire_check(&net_state.sock.keys, d, len, net_state.sock.job, job()->rank, job()->nodes,
                                     net_state.sock.max_payload);
    if (v != WIRE_OK) {
        stats_add(v == WIRE_FORGED ? STAT_NET_AUTH_DROPPED : STAT_NET_FOREIGN_DROPPED, 1);
        return;
    }
    struct wire_hdr h;
    memcpy(&h, d, sizeof h);
    struct peer *p = &net_state.peers[h.src];
    if (from->sin_port != p->addr.sin_port || from->sin_addr.s_addr != p->addr.sin_addr.s_addr) {
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        return;
    }
    /* A copy of a datagram already received — the network's duplicate or
     * someone's replay of a captured one — says nothing new, and above all
     * not that the peer is alive: a stopped node's replayed acknowledgements
     * and heartbeats would otherwise keep it "alive" for ever. */
    if (!fresh_accept(&p->rx.fresh, h.fresh)) {
        stats_add(STAT_NET_DUPS_DROPPED, 1);
        return;
    }
    stats_add(STAT_NET_DGRAMS_RECV, 1);
    stats_add(STAT_NET_BYTES_RECV, len);
    if (TRACE_ON && h.kind == WIRE_DATA && !(h.flags & WIRE_NOP))
        trace_put(TRACE_DGRAM_IN, 0, h.src, h.seq, kernel_ns, read_ns, clock_ns());

    uint64_t now = clock_ns();
    pthread_mutex_lock(&net_state.lock);
    p->last_rx_ns = now;
    if (h.kind != WIRE_ABORT)
        window_on_ack(h.src, h.ack, h.sack, (h.flags & WIRE_ECHO_RTX) != 0, now);
    if (h.kind == WIRE_DONE)
        p->done_rx = true;
    pthread_mutex_unlock(&net_state.lock);

    if (h.kind == WIRE_DATA)
        on_data(h.src, &h, d, len);
    else if (h.kind == WIRE_ABORT) {
        /* A peer's words, maybe an impostor's (token mode): printed only
         * as plain, bounded text. */
        char reason[257];
        wire_abort_reason(d + sizeof h, h.len, reason, sizeof reason);
        char line[400];
        snprintf(line, sizeof line, "dsm: node %d: node %d ended the job: %s", job()->rank, h.src, reason);
        log_exit_quietly(line);
    } else if (h.kind == WIRE_LOOK) {
        char reply[NET_WITNESS_LINE_MAX + 1];
        size_t n = net_witness_asked(h.src, d + sizeof h, h.len, reply, sizeof reply);
        if (n) {
            pthread_mutex_lock(&net_state.lock);
            window_send_control(h.src, WIRE_SEEN, reply, n);
            pthread_mutex_unlock(&net_state.lock);
        }
    } else if (h.kind == WIRE_SEEN) {
        net_witness_answered(h.src, d + sizeof h, h.len);
    }
}

/* An emulated link's held datagrams that are due by now, delivered. The
 * trace sees each arrive at its due time: the delay is the link's. */
static int deliver_due(void)
{
    int n = 0;
    struct delayed *h;
    while ((h = inject_next_due(clock_ns()))) {
        on_datagram(h->bytes, h->len, &h->to, h->due_ns, TRACE_ON ? clock_ns() : 0);
        free(h);
        n++;
    }
    return n;
}

/* Reads and handles everything waiting on the socket, and what an
 * emulated link holds that is due. Returns the number of datagrams
 * handled (those an emulated link took to hold are not, yet). Caller
 * holds rx_lock. */
static int rx_drain(void)
{
    int total = 0;
    bool delayed = net_state.inj.decide.delay_ns != 0;
    for (int rounds = 0; rounds < 8; rounds++) {
        uint64_t t = clock_ns();
        int n = udp_recv();
        if (n < RX_BATCH) /* all that had arrived by t is read now */
            atomic_store_explicit(&net_state.sock.drained_ns, t, memory_order_relaxed);
        uint64_t due = delayed ? inject_due() : 0;
        if (n == 0 && !(due && due <= t))
            break;
        /* Held from when the read returned, which is after it arrived:
         * never delivered before D has passed since. */
        uint64_t read_ns = delayed ? clock_ns() : 0;
        cork_begin();
        for (int i = 0; i < n; i++) {
            if (net_state.sock.msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
                stats_add(STAT_NET_FOREIGN_DROPPED, 1);
                continue;
            }
            if (delayed)
                inject_hold(net_state.sock.iovs[i].iov_base, net_state.sock.msgs[i].msg_len,
                            &net_state.sock.from[i], read_ns);
            else
                on_datagram(net_state.sock.iovs[i].iov_base, net_state.sock.msgs[i].msg_len,
                            &net_state.sock.from[i], TRACE_ON ? net_state.sock.rx_kernel_ns[i] : 0,
                            net_state.sock.rx_return_ns);
        }
        total += delayed ? deliver_due() : n;
        udp_cork_end(); /* carries acknowledgements with it */
        if (n < RX_BATCH)
            break;
    }
    if (total) { /* acknowledge at once what must not wait */
        pthread_mutex_lock(&net_state.lock);
        for (int i = 0; i < job()->nodes; i++)
            if (net_state.peers[i].ack.pending && net_state.peers[i].ack.urgent) {
                /* A duplicate means our last ack was likely lost, and the
                 * sender is waiting: under heavy loss one more copy
                 * halves the chance that this one is lost too. */
                bool twice = net_state.peers[i].ack.twice;
                net_state.peers[i].ack.twice = false;
                window_send_control(i, WIRE_ACK, NULL, 0);
                if (twice && net_state.tx.redundant)
                    window_send_control(i, WIRE_ACK, NULL, 0);
            }
        pthread_mutex_unlock(&net_state.lock);
    }
    return total;
}

/* One round of progress by the caller, who holds rx_lock. */
int recv_progress(void)
{
    recv_in_delivery = true;
    int n = rx_drain();
    recv_in_delivery = false;
    return n;
}
