/*
 * window.c — the send side of reliability: the per-peer send window, its
 * acknowledgements, timers and retransmissions.
 *
 * A message becomes consecutive datagrams in the peer's queue. The first
 * `window` unacknowledged ones are on the wire; the rest wait. Each keeps
 * its bytes until acknowledged, cumulatively or selectively, and is sent
 * again when its timeout passes (adaptive, per peer) or when the receiver
 * reports a later datagram first (fast retransmission). The datagrams one
 * window opening releases leave in one sendmmsg; so does everything the
 * handlers of one received batch send (see the cork in udp.c).
 *
 * Liveness: a peer with unacknowledged data that stays silent for
 * DSM_PEER_TIMEOUT (longer where the host runs many nodes a CPU:
 * transport.c) ends the job, unless supervision finds it starved of CPU
 * rather than stopped (supervisor.c; src/supervise/liveness.c). So that a
 * dead peer is found even when nothing else is sent, each node watches
 * its two neighbours on a ring of the job (the next and the previous node
 * that has not finished): one silent for a second is sent a sequenced
 * heartbeat, which it must acknowledge. Every node is watched by two, and the one that finds it
 * dead ends the job everywhere; heartbeats to every silent peer instead
 * made N^2 datagrams a second, which at 256 nodes on 2 CPUs were most of
 * the machine's work and themselves kept nodes from answering.
 *
 * Everything here runs under net_state.lock but the building of a
 * message's datagrams (net_send_ref), which copies and hashes before it
 * takes the lock.
 */
#include "net/transport.h"
#include "net/ucx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"

#define MAX_MESSAGE       (1ull << 31)        /* lengths travel as 32 bits */

/* A datagram's payload is payload[0..inl) followed by ext[0..hdr.len-inl):
 * ext, when there is one, points into memory the sender lent us (net_send_ref)
 * and holds a reference on it until the datagram is acknowledged. */
struct txbuf {
    struct txbuf         *next;
    bool                  pooled;   /* a full-size buffer, returned to the pool */
    uint64_t              sent_ns;  /* last transmission; 0 = not yet sent */
    uint64_t              first_sent_ns; /* first transmission (rack_delivered_time) */
    uint64_t              phash;    /* payload hash, reused by retransmissions */
    uint32_t              xmits;
    uint32_t              inl;      /* payload bytes held here */
    const unsigned char  *ext;      /* the rest, lent; NULL when inl == hdr.len */
    struct net_ref       *ref;      /* what ext belongs to */
    struct wire_hdr       hdr;      /* the payload follows */
    unsigned char         payload[];
};

/* h carries the acknowledgement we owe p: nothing is owed after it. */
static void fill_ack(struct peer *p, struct wire_hdr *h)
{
    h->ack = p->ack.cum;
    h->sack = p->ack.sack;
    h->flags = (uint16_t)((h->flags & ~WIRE_ECHO_RTX) | (p->ack.echo_rtx ? WIRE_ECHO_RTX : 0));
    p->ack.pending = false;
    p->ack.urgent = false;
    p->ack.unacked = 0;
    p->ack.due_ns = 0;
}

/* How long after the last progress a tail-loss probe goes out. */
static uint64_t probe_timeout(const struct peer *p)
{
    uint64_t pto = 2 * (uint64_t)p->tx.rto.srtt_ns + ACK_DELAY_NS;
    uint64_t floor = 300000ull * (net_state.tx.crowd ? net_state.tx.crowd : 1);
    return pto < floor ? floor : pto;
}

/* The loss estimate's window: first transmissions counted before both
 * counts are halved. */
#define LOSS_WINDOW 512

/* Readies t for the wire: the current acknowledgement, the seal, the
 * bookkeeping of a transmission. */
static void prepare(int dst, struct txbuf *t, uint64_t now)
{
    struct peer *p = &net_state.peers[dst];
    fill_ack(p, &t->hdr);
    if (t->xmits)
        t->hdr.flags |= WIRE_RTX;
    t->hdr.fresh = atomic_fetch_add_explicit(&p->fresh, 1, memory_order_relaxed) + 1;
    wire_seal(&net_state.sock.keys, &t->hdr, t->phash);
    if (t->sent_ns == 0) {
        p->tx.inflight_bytes += t->hdr.len + sizeof t->hdr;
        t->first_sent_ns = now;
    }
    t->sent_ns = now;
    if (t->xmits++ == 0 && ++p->tx.first_xmits >= LOSS_WINDOW) {
        p->tx.first_xmits /= 2;
        p->tx.re_xmits /= 2;
    }
    /* The oldest datagram's probe or retransmission must not wait for
     * the service thread's next idle wake-up (up to NET_TICK_MS): a loss
     * would cost that much, not a round trip. */
    if (t == p->tx.head) {
        uint64_t wait = probe_timeout(p);
        service_timer_at(now + (wait < p->tx.rto.rto_ns ? wait : p->tx.rto.rto_ns));
    }
}

static void transmit(int dst, struct txbuf *t, uint64_t now)
{
    prepare(dst, t, now);
    wire_out(&net_state.peers[dst].addr, &t->hdr, sizeof t->hdr + t->inl, t->ext, t->hdr.len - t->inl);
}

/* A retransmission after a timeout or probe: the datagram, and its ack,
 * have likely been lost once already. A small one (a request, a barrier
 * arrival, a heartbeat) goes twice, so that under heavy loss a round trip
 * is not a coin toss (at 30% loss: 0.49 -> 0.64 alone, 0.83 with the
 * receiver's doubled ack); a large one once, not to add to congestion.
 * Small jobs only (net_state.tx.redundant). */
#define RETRANSMIT_TWICE_MAX 1024

static void retransmit(int dst, struct txbuf *t, uint64_t now)
{
    stats_add(STAT_NET_RETRANSMITS, 1);
    net_state.peers[dst].tx.re_xmits++;
    transmit(dst, t, now);
    if (t->hdr.len <= RETRANSMIT_TWICE_MAX && net_state.tx.redundant)
        transmit(dst, t, now);
}

/* On a path that loses more than about one datagram in 20 (a twentieth of
 * the recent transmissions were sent again), a small datagram goes twice
 * the first time too: the same bytes, so a copy that arrives after the
 * first is dropped as a replay, unanswered. Each loss otherwise costs a
 * probe or timeout — at least 0.3 ms, a round trip or two, where the
 * exchange itself takes tens of µs — and a barrier or a request chains
 * many: Ocean on 2 nodes spent 91% of its time in barriers at 10% loss, 4–10
 * times its clean run. With the copy a small datagram is lost with
 * probability p² (1% at 10%, 9% at 30%). Small jobs only, like the doubled
 * retransmissions, and only once a few dozen datagrams have given an
 * estimate. */
static bool lossy_path(const struct peer *p, size_t len)
{
    return net_state.tx.redundant && len <= RETRANSMIT_TWICE_MAX && p->tx.first_xmits >= 32 &&
           p->tx.re_xmits * 20 > p->tx.first_xmits;
}

static bool send_twice(const struct peer *p, const struct txbuf *t)
{
    return lossy_path(p, t->hdr.len);
}

static bool window_open(struct peer *p, const struct txbuf *t)
{
    return seq_diff(t->hdr.seq, p->tx.head->hdr.seq) < (int32_t)net_state.tx.window &&
           (p->tx.inflight_bytes == 0 ||
            p->tx.inflight_bytes + t->hdr.len + sizeof t->hdr <= net_state.tx.window_bytes);
}

void window_push(struct tx_batch *b, int dst, uint64_t now)
{
    struct peer *p = &net_state.peers[dst];
    while (p->tx.unsent && window_open(p, p->tx.unsent)) {
        struct txbuf *t = p->tx.unsent;
        bool twice = send_twice(p, t);
        if (net_state.inj.on) { /* each datagram meets its own fate */
            transmit(dst, t, now);
            if (twice)
                wire_out(&p->addr, &t->hdr, sizeof t->hdr + t->inl, t->ext, t->hdr.len - t->inl);
        } else {
            prepare(dst, t, now);
            batch_add(b, &p->addr, &t->hdr, sizeof t->hdr + t->inl, t->ext, t->hdr.len - t->inl);
            if (twice)
                batch_add(b, &p->addr, &t->hdr, sizeof t->hdr + t->inl, t->ext, t->hdr.len - t->inl);
        }
        if (twice)
            stats_add(STAT_NET_LOSSY_COPIES, 1);
        p->tx.unsent = t->next;
    }
}

static void push_unsent(int dst, uint64_t now)
{
    struct tx_batch b;
    b.n = 0;
    window_push(&b, dst, now);
    if (b.n)
        udp_flush(&b);
}

/* Sends what dst's window lets out now, or at the end of the delivery batch. */
static void push_or_cork(int dst, uint64_t now)
{
    if (udp_cork.on)
        udp_cork.peers[dst / 64] |= 1ull << (dst % 64);
    else
        push_unsent(dst, now);
}

static void enqueue(int dst, struct txbuf *t, uint64_t now)
{
    struct peer *p = &net_state.peers[dst];
    t->next = NULL;
    t->sent_ns = 0;
    t->xmits = 0;
    t->hdr.seq = p->tx.next_seq++;
    if (p->tx.tail)
        p->tx.tail->next = t;
    else {
        p->tx.head = t;
        p->tx.progress_ns = now; /* the silence clock starts with the first unacked datagram */
        atomic_fetch_add(&net_state.svc.inflight_peers, 1);
    }
    p->tx.tail = t;
    if (!p->tx.unsent)
        p->tx.unsent = t;
}

#define POOL_MAX      256   /* buffers kept, at most ~16 MiB */
#define POOL_MIN_LEN  4096  /* smaller datagrams come from malloc */

/* A datagram of `len` payload bytes, `inl` of them to be held in the buffer. */
static struct txbuf *new_txbuf(int dst, uint16_t flags, uint32_t msg_len,
                               uint32_t off, uint32_t len, uint32_t inl)
{
    struct txbuf *t = NULL;
    bool pooled = inl >= POOL_MIN_LEN;
    if (pooled) {
        pthread_mutex_lock(&net_state.tx.pool.lock);
        t = net_state.tx.pool.free;
        if (t) {
            net_state.tx.pool.free = t->next;
            net_state.tx.pool.count--;
        }
        pthread_mutex_unlock(&net_state.tx.pool.lock);
        if (!t)
            t = malloc(sizeof *t + net_state.sock.max_payload);
    } else
        t = malloc(sizeof *t + inl);
    if (!t)
        log_fatal("out of memory queueing %u bytes for node %d", len, dst);
    t->pooled = pooled;
    t->inl = inl;
    t->ext = NULL;
    t->ref = NULL;
    memset(&t->hdr, 0, sizeof t->hdr);
    t->hdr.magic = WIRE_MAGIC;
    t->hdr.kind = WIRE_DATA;
    t->hdr.flags = flags;
    t->hdr.job = net_state.sock.job;
    t->hdr.src = (uint16_t)job()->rank;
    t->hdr.dst = (uint16_t)dst;
    t->hdr.len = len;
    t->hdr.msg_len = msg_len;
    t->hdr.frag_off = off;
    return t;
}

static void free_txbuf(struct txbuf *t)
{
    if (t->ref)
        net_ref_put(t->ref);
    if (t->pooled) {
        pthread_mutex_lock(&net_state.tx.pool.lock);
        if (net_state.tx.pool.count < POOL_MAX) {
            t->next = net_state.tx.pool.free;
            net_state.tx.pool.free = t;
            net_state.tx.pool.count++;
            t = NULL;
        }
        pthread_mutex_unlock(&net_state.tx.pool.lock);
    }
    free(t);
}

/* Copies `len` bytes starting at byte `off` of the iovec sequence into dst. */
static void gather(unsigned char *dst, const struct iovec *iov, int iovcnt, size_t off, size_t len)
{
    for (int i = 0; i < iovcnt && len; i++) {
        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        size_t n = iov[i].iov_len - off;
        if (n > len)
            n = len;
        memcpy(dst, (const char *)iov[i].iov_base + off, n);
        dst += n;
        len -= n;
        off = 0;
    }
}

int udp_send_ref(int dst, const struct iovec *iov, int iovcnt, const void *lent, size_t lent_len,
                 struct net_ref *ref)
{
    if (dst < 0 || dst >= job()->nodes || iovcnt < 0 || (lent_len && (!lent || !ref)))
        return -EINVAL;
    size_t head = 0;
    for (int i = 0; i < iovcnt; i++)
        head += iov[i].iov_len;
    size_t total = head + lent_len;
    if (total >= MAX_MESSAGE)
        return -EMSGSIZE;

    /* Build the datagrams (copy and hash) before taking the lock: the
     * payload work of a large message must not stall the receiving thread.
     * The message is head (copied) then the lent bytes (referenced): each
     * datagram holds its part of the head, and points at its part of the
     * rest. */
    size_t nfrag = total ? (total + net_state.sock.max_payload - 1) / net_state.sock.max_payload : 1;
    struct txbuf *first = NULL, *last = NULL;
    for (size_t f = 0; f < nfrag; f++) {
        size_t off = f * net_state.sock.max_payload;
        size_t len = total - off < net_state.sock.max_payload ? total - off : net_state.sock.max_payload;
        size_t inl = off >= head ? 0 : head - off < len ? head - off : len;
        uint16_t flags = (f == 0 ? WIRE_FIRST : 0) | (f == nfrag - 1 ? WIRE_LAST : 0);
        struct txbuf *t = new_txbuf(dst, flags, (uint32_t)total, (uint32_t)off, (uint32_t)len,
                                    (uint32_t)inl);
        gather(t->payload, iov, iovcnt, off, inl);
        if (inl < len) {
            t->ext = (const unsigned char *)lent + (off + inl - head);
            t->ref = ref;
            atomic_fetch_add(&ref->count, 1);
        }
        t->phash = wire_payload_hash2(&net_state.sock.keys, t->payload, inl, t->ext, len - inl);
        t->next = NULL;
        if (last)
            last->next = t;
        else
            first = t;
        last = t;
    }

    pthread_mutex_lock(&net_state.lock);
    uint64_t now = clock_ns();
    for (struct txbuf *t = first, *next; t; t = next) {
        next = t->next;
        enqueue(dst, t, now);
    }
    push_or_cork(dst, now);
    pthread_mutex_unlock(&net_state.lock);
    stats_add(STAT_NET_MSGS_SENT, 1);
    return 0;
}

/* A sequenced message with no payload (heartbeat or finish marker). */
void window_send_marker(int dst, uint16_t flag, uint64_t now)
{
    struct txbuf *t = new_txbuf(dst, flag, 0, 0, 0, 0);
    t->phash = wire_payload_hash_of(&net_state.sock.keys, &t->hdr, NULL, 0);
    enqueue(dst, t, now);
    push_unsent(dst, now);
}

void window_send_control(int dst, uint16_t kind, const void *payload, size_t len)
{
    struct {
        struct wire_hdr h;
        unsigned char   body[256];
    } d = {0};   /* all of it: -O3 cannot see that only len bytes are read */
    if (len > sizeof d.body)
        len = sizeof d.body;
    d.h.magic = WIRE_MAGIC;
    d.h.kind = kind;
    d.h.job = net_state.sock.job;
    d.h.src = (uint16_t)job()->rank;
    d.h.dst = (uint16_t)dst;
    d.h.len = (uint32_t)len;
    if (len)
        memcpy(d.body, payload, len);
    struct peer *p = &net_state.peers[dst];
    if (kind == WIRE_ACK) { /* what we owe is paid: fill_ack, before the seal */
        fill_ack(p, &d.h);
        stats_add(STAT_NET_ACKS_SENT, 1);
    } else { /* carried along, no flags (wire_check) */
        d.h.ack = p->ack.cum;
        d.h.sack = p->ack.sack;
    }
    d.h.fresh = atomic_fetch_add_explicit(&p->fresh, 1, memory_order_relaxed) + 1;
    wire_seal(&net_state.sock.keys, &d.h, wire_payload_hash_of(&net_state.sock.keys, &d.h, d.body, len));
    if (kind == WIRE_ABORT)
        udp_send(&p->addr, &d, sizeof d.h + len, NULL, 0); /* no injection: it must get out */
    else
        wire_out(&p->addr, &d, sizeof d.h + len, NULL, 0);
    /* A lost acknowledgement costs the sender a probe, as a lost datagram
     * does: on a lossy path it goes twice too (send_twice). */
    if (kind == WIRE_ACK && lossy_path(p, len)) {
        wire_out(&p->addr, &d, sizeof d.h + len, NULL, 0);
        stats_add(STAT_NET_LOSSY_COPIES, 1);
    }
}

/* Applies a peer's acknowledgement to our queue for it. */
void window_on_ack(int src, uint32_t cum, uint64_t sack, bool echo_rtx, uint64_t now)
{
    struct peer *p = &net_state.peers[src];
    if (!p->tx.head)
        return;
    /* An acknowledgement of what was never sent is forged or corrupt. */
    if (seq_diff(cum, p->tx.next_seq) > 0)
        return;
    bool advanced = false, sampled = false;
    struct txbuf **link = &p->tx.head, *prev = NULL;
    while (*link && (*link)->sent_ns) {
        struct txbuf *t = *link;
        if (ack_covers(cum, sack, t->hdr.seq)) {
            if (t->xmits == 1) { /* Karn: only unambiguous samples */
                rto_sample(&p->tx.rto, now - t->sent_ns);
                sampled = true;
            }
            uint64_t arrived = rack_delivered_time(t->xmits, echo_rtx, t->sent_ns, t->first_sent_ns);
            if (rack_after(arrived, t->hdr.seq, p->tx.delivered_sent_ns, p->tx.delivered_seq)) {
                p->tx.delivered_sent_ns = arrived;
                p->tx.delivered_seq = t->hdr.seq;
            }
            p->tx.inflight_bytes -= t->hdr.len + sizeof t->hdr;
            *link = t->next;
            if (p->tx.tail == t)
                p->tx.tail = prev;
            free_txbuf(t);
            advanced = true;
        } else {
            prev = t;
            link = &t->next;
        }
    }
    if (advanced) {
        p->tx.progress_ns = now;
        p->tx.probed = false;
        /* Karn's rule, second half: a backed-off timeout stands until a
         * datagram sent once is acknowledged. An acknowledgement of a
         * retransmission says nothing of the round trip: resetting on it,
         * a receiver starved of CPU (64 nodes on 2 cores, one home serving
         * all) saw every datagram sent 10-16 times at the floor's pace, and
         * the copies were most of what kept it busy. */
        if (sampled)
            rto_reset_backoff(&p->tx.rto);
        if (!p->tx.head)
            atomic_fetch_sub(&net_state.svc.inflight_peers, 1);
    }
    /* Anything still unacknowledged and last transmitted before a datagram
     * that has since arrived was lost (rack_lost): send it again now.
     * Judged by transmission time, not sequence, two things hold: a copy
     * already on its way is not sent again at every acknowledgement — a
     * receiver starved of CPU acknowledges often and drains its socket
     * slowly, and copies sent at each of its acknowledgements filled that
     * socket (64 nodes on 2 cores, erc-upd: 6.4 million retransmissions
     * for 256k messages, two in three datagrams lost to the full socket);
     * and the answer to a timeout's retransmission of the oldest datagram
     * (window_timers) reveals the later ones lost with it. `patience`
     * allows for the reordering the loss injector does. */
    uint64_t patience = (uint64_t)(p->tx.rto.srtt_ns + p->tx.rto.rttvar_ns);
    if (patience < 50000)
        patience = 50000;
    for (struct txbuf *t = p->tx.head; t && t->sent_ns; t = t->next) {
        if (rack_lost(t->sent_ns, t->hdr.seq, p->tx.delivered_sent_ns, p->tx.delivered_seq, now,
                      patience)) {
            stats_add(STAT_NET_RETRANSMITS, 1);
            stats_add(STAT_NET_FAST_RETRANSMITS, 1);
            p->tx.re_xmits++;
            transmit(src, t, now);
        }
    }
    push_or_cork(src, now);
}

/* The nearest node after us (step 1) or before us (step -1) on the ring
 * of the job that has not finished; -1 if there is none. */
static int ring_neighbour(int step)
{
    int n = job()->nodes, r = job()->rank;
    if (atomic_load(&net_state.tree.all_finished))
        return -1; /* every node has finished: some may be gone */
    for (int d = 1; d < n; d++) {
        int j = ((r + step * d) % n + n) % n;
        if (!net_state.peers[j].fin_rx)
            return j;
    }
    return -1;
}

/* Retransmissions, heartbeats, the dead-peer check. Returns the time of the
 * next timer, so the service thread knows how long it may sleep. */
uint64_t window_timers(uint64_t now)
{
    uint64_t next = now + (uint64_t)IDLE_WAKE_MS * 1000000;
    int watch_next = ring_neighbour(1), watch_prev = ring_neighbour(-1);

    for (int i = 0; i < job()->nodes; i++) {
        struct peer *p = &net_state.peers[i];
        if (p->ack.pending) {
            if (p->ack.urgent || p->ack.due_ns <= now)
                window_send_control(i, WIRE_ACK, NULL, 0);
            else if (p->ack.due_ns < next)
                next = p->ack.due_ns;
        }
        if (!p->tx.head) {
            /* A peer that sent FIN may leave once it holds everything;
             * probing it then would mistake a clean exit for a death. */
            if ((i == watch_next || i == watch_prev) && net_state.svc.running &&
                !atomic_load(&net_state.svc.stopping) && now - p->last_rx_ns > net_state.tx.heartbeat_ns)
                window_send_marker(i, WIRE_NOP, now);
            continue;
        }
        /* Dead: we wait on the peer (data or a heartbeat unacknowledged)
         * and have heard nothing fresh from it — acknowledgement or
         * anything else; a replay does not count (recv.c) — for the
         * timeout, as of the last time we had read everything that had
         * arrived. A slow peer that answers at all, a node that was not
         * scheduled itself, or a peer on this host whose process waits
         * for a CPU (supervise/liveness.c) is not dead. */
        uint64_t heard = p->last_rx_ns > p->tx.progress_ns ? p->last_rx_ns : p->tx.progress_ns;
        uint64_t drained = atomic_load_explicit(&net_state.sock.drained_ns, memory_order_relaxed);
        const char *why;
        if (drained > heard &&
            net_peer_dead(i, p->same_host, drained - heard, net_state.tx.peer_timeout_ns, now, &why))
            log_fatal("peer %d silent for %.1f s (no acknowledgement%s%s); ending the job",
                      i, (double)(now - heard) / 1e9, why ? "; " : "", why ? why : "");
        /* Tail-loss probe: when nothing has been acknowledged for a couple
         * of round trips (plus the receiver's ack delay), send the oldest
         * datagram again once, without backing off. A lost datagram at the
         * end of an exchange — no later one to reveal the gap through the
         * selective ack — is then repaired in about a millisecond instead
         * of a retransmission timeout. */
        struct txbuf *h = p->tx.head;
        if (h->sent_ns && !p->tx.probed) {
            uint64_t pto = probe_timeout(p);
            uint64_t since = p->tx.progress_ns > h->sent_ns ? p->tx.progress_ns : h->sent_ns;
            if (now - since >= pto && now - h->sent_ns < p->tx.rto.rto_ns) {
                p->tx.probed = true;
                stats_add(STAT_NET_TAIL_PROBES, 1);
                retransmit(i, h, now);
            } else if (since + pto < next)
                next = since + pto;
        }
        /* A timeout sends the oldest datagram again, not the window: if
         * the peer is only slow, the rest are still in its socket, and a
         * copy of each would only fill it; if they were lost, the answer
         * to this one reveals them (above), one round trip later. */
        if (h->sent_ns && now - h->sent_ns >= p->tx.rto.rto_ns) {
            rto_backoff(&p->tx.rto);
            retransmit(i, h, now);
        }
        if (p->tx.head->sent_ns) {
            uint64_t due = p->tx.head->sent_ns + p->tx.rto.rto_ns;
            if (due < next)
                next = due;
        }
    }
    /* Last: the acknowledgements, probes and retransmissions above may
     * have gone to the injector, whose held datagram's time the returned
     * time must cover, or it would wait for the next timer that happens
     * to be set. */
    if (net_state.inj.on)
        next = inject_flush(now, next);
    return next;
}
