/*
 * udp.c — datagrams on and off the socket, in batches.
 *
 * It owns the system calls: sendmmsg for whatever a window opening or a
 * delivery batch lets out, recvmmsg for what waits on the socket, and the
 * per-thread cork that makes the sends of one batch of received datagrams
 * leave together. On this machine every system call is a hypervisor round
 * trip and every wake-up of a peer tens of µs, so the number of calls, not
 * the bytes, sets the cost of a message. What goes into a batch, and when,
 * is the send window's business (window.c); what the datagrams mean is the
 * receive side's (recv.c).
 */
#include "net/transport.h"
#include "net/ucx.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/trace.h"

/* ---- sending ------------------------------------------------------------ */

/* DSM_TRACE: the system call that sent data datagrams first, each by its
 * sequence number (a retransmission is not the message's latency). */
static void trace_sent(const struct tx_batch *b, unsigned from, int n, uint64_t t0, uint64_t t1)
{
    for (unsigned i = from; i < from + (unsigned)n; i++) {
        struct wire_hdr h;
        memcpy(&h, b->iov[i][0].iov_base, sizeof h);
        if (h.kind == WIRE_DATA && !(h.flags & (WIRE_RTX | WIRE_NOP)))
            trace_put(TRACE_DGRAM_OUT, 0, h.dst, h.seq, t0, t1, 0);
    }
}

void udp_flush(struct tx_batch *b)
{
    for (unsigned done = 0; done < b->n;) {
        uint64_t t0 = TRACE_ON ? clock_ns() : 0;
        int n = sendmmsg(net_state.sock.fd, b->m + done, b->n - done, 0);
        if (TRACE_ON && n > 0)
            trace_sent(b, done, n, t0, clock_ns());
        if (n > 0) {
            for (int i = 0; i < n; i++) {
                const struct iovec *v = b->iov[done + (unsigned)i];
                stats_add(STAT_NET_DGRAMS_SENT, 1);
                stats_add(STAT_NET_BYTES_SENT, v[0].iov_len + v[1].iov_len);
            }
            done += (unsigned)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        /* A full socket buffer or a refused port is a loss like any other:
         * retransmission will deal with it. */
        if (errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED || errno == EPERM) {
            done++;
            continue;
        }
        log_fatal("cannot send datagrams: %s", strerror(errno));
    }
    b->n = 0;
}

/* One datagram: buf[0..len) then ext[0..elen). */
void udp_send(const struct sockaddr_in *to, const void *buf, size_t len, const void *ext,
              size_t elen)
{
    struct tx_batch b;
    b.n = 0;
    batch_add(&b, to, (void *)buf, len, ext, elen);
    udp_flush(&b);
}

/* ---- receiving ---------------------------------------------------------- */

/* DSM_TRACE: when the kernel received each datagram (SO_TIMESTAMPNS,
 * CLOCK_REALTIME, set at udp_trace_start) on the trace's clock, and when
 * the receive call returned. 0 where the kernel gave no stamp. */
static void trace_received(struct net_socket *s, int n)
{
    struct timespec rt;
    uint64_t now = clock_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t offset = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
                     (int64_t)now;
    s->rx_return_ns = now;
    for (int i = 0; i < n; i++) {
        s->rx_kernel_ns[i] = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&s->msgs[i].msg_hdr); c;
             c = CMSG_NXTHDR(&s->msgs[i].msg_hdr, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(c), sizeof ts);
                int64_t k = (int64_t)((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
                s->rx_kernel_ns[i] = (uint64_t)(k - offset);
            }
    }
}

void udp_trace_start(void)
{
    int on = 1;
    if (setsockopt(net_state.sock.fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0)
        log_warn("cannot have the kernel stamp received datagrams (SO_TIMESTAMPNS: %s); the trace "
                 "leaves their arrival out", strerror(errno));
}

int udp_recv(void)
{
    struct net_socket *s = &net_state.sock; /* a constant address, not a load */
    size_t size = sizeof(struct wire_hdr) + s->max_payload + 1;
    for (int i = 0; i < RX_BATCH; i++) {
        s->iovs[i].iov_base = s->rxbuf + (size_t)i * size;
        s->iovs[i].iov_len = size;
        memset(&s->msgs[i].msg_hdr, 0, sizeof s->msgs[i].msg_hdr);
        s->msgs[i].msg_hdr.msg_iov = &s->iovs[i];
        s->msgs[i].msg_hdr.msg_iovlen = 1;
        s->msgs[i].msg_hdr.msg_name = &s->from[i];
        s->msgs[i].msg_hdr.msg_namelen = sizeof s->from[i];
        if (TRACE_ON) {
            s->msgs[i].msg_hdr.msg_control = s->rx_cmsg[i];
            s->msgs[i].msg_hdr.msg_controllen = sizeof s->rx_cmsg[i];
        }
    }
    int n = recvmmsg(s->fd, s->msgs, RX_BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNREFUSED)
            return 0;
        log_fatal("cannot receive from the network: %s", strerror(errno));
    }
    if (TRACE_ON && n > 0)
        trace_received(s, n);
    return n;
}

/* ---- the cork ----------------------------------------------------------- */

__thread struct udp_cork udp_cork NET_TLS;

/* Sends what was corked. */
void udp_cork_end(void)
{
    udp_cork.on = false;
    struct tx_batch b;
    b.n = 0;
    pthread_mutex_lock(&net_state.lock);
    uint64_t now = clock_ns();
    for (int w = 0; w < (int)(sizeof udp_cork.peers / sizeof udp_cork.peers[0]); w++)
        while (udp_cork.peers[w]) {
            int bit = __builtin_ctzll(udp_cork.peers[w]);
            udp_cork.peers[w] &= udp_cork.peers[w] - 1;
            window_push(&b, w * 64 + bit, now);
        }
    if (b.n)
        udp_flush(&b);
    pthread_mutex_unlock(&net_state.lock);
}

void udp_batch_begin(void)
{
    if (udp_cork.on)
        udp_cork.nested++;
    else
        cork_begin();
}

void udp_batch_end(void)
{
    if (udp_cork.nested) {
        udp_cork.nested--;
        return;
    }
    udp_cork_end();
}
