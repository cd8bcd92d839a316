/*
 * seqwin.h — sequence numbers, the receive window and the retransmission
 * timer: the pure logic of the reliable transport, kept apart so it can be
 * tested without sockets.
 *
 * Sequence numbers are 32-bit and compared in serial-number arithmetic, so a
 * long job may wrap them. The receiver keeps `expected` (every earlier seq
 * has been delivered) and a 64-bit map of what it holds beyond it; the same
 * pair travels back as the cumulative and selective acknowledgement, which
 * is why no more than SEQWIN_MAX datagrams may be in flight per peer.
 */
#ifndef DSM_NET_SEQWIN_H
#define DSM_NET_SEQWIN_H
#include <stdbool.h>
#include <stdint.h>

#define SEQWIN_MAX 64

static inline int32_t seq_diff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }
static inline bool seq_before(uint32_t a, uint32_t b) { return seq_diff(a, b) < 0; }

struct rx_window {
    uint32_t expected; /* next seq to deliver */
    uint64_t held;     /* bit i: seq expected+1+i is buffered */
};

enum rx_verdict {
    RX_IN_ORDER,  /* seq == expected: deliver now */
    RX_HOLD,      /* in the window ahead of expected, not yet held: buffer it */
    RX_DUPLICATE, /* already delivered or already held */
    RX_BEYOND,    /* too far ahead: drop, the sender will retransmit */
};

enum rx_verdict rxwin_classify(const struct rx_window *w, uint32_t seq);

/* Records that `seq` (classified RX_HOLD) is now buffered. */
void rxwin_hold(struct rx_window *w, uint32_t seq);

/* The datagram at `expected` has been consumed: advances the window.
 * Returns true when the new `expected` is already buffered. */
bool rxwin_advance(struct rx_window *w);

/* Whether the peer's acknowledgement (cum, sack) covers `seq`. */
static inline bool ack_covers(uint32_t cum, uint64_t sack, uint32_t seq)
{
    int32_t d = seq_diff(seq, cum);
    if (d < 0)
        return true;
    return d >= 1 && d <= 64 && ((sack >> (d - 1)) & 1);
}

/* Highest seq the acknowledgement reports as received beyond the cumulative
 * point, or cum-1 when there is none. */
uint32_t ack_highest(uint32_t cum, uint64_t sack);

/* Loss by transmission order (RACK, RFC 8985), the basis of fast
 * retransmission: a datagram last transmitted at (sent, seq) — time, then
 * sequence for datagrams sent at the same instant — was lost if one
 * transmitted after it, the latest delivered (dsent, dseq), has been
 * acknowledged, and `patience` (room for reordering) has passed since its
 * transmission. The path keeps order, so what was sent first arrives
 * first. */
bool rack_lost(uint64_t sent, uint32_t seq, uint64_t dsent, uint32_t dseq, uint64_t now,
               uint64_t patience);

/* Whether (sent, seq) was transmitted after (dsent, dseq): the order
 * rack_lost judges by, and the one the latest delivered is kept in. */
bool rack_after(uint64_t sent, uint32_t seq, uint64_t dsent, uint32_t dseq);

/* As of when an acknowledgement of a datagram tells what arrived: its last
 * transmission `sent` if it went once, or if the acknowledgement says
 * (echo_rtx, WIRE_ECHO_RTX) that the latest datagram the receiver read
 * from us was a retransmission, new or a duplicate — the path keeps order,
 * so what we sent before that copy and the receiver still lacks was lost;
 * otherwise its first transmission, `first_sent`. A receiver only slow to
 * read — descheduled past our timeout — acknowledges the original after we
 * sent the copy; taking the copy's time then would mark every datagram
 * sent between the two lost (rack_lost) and send them all again: FFT 2^26
 * on 2 nodes retransmitted 87k datagrams of 357k, with no loss injected,
 * after ~160 timeouts. */
uint64_t rack_delivered_time(uint32_t xmits, bool echo_rtx, uint64_t sent, uint64_t first_sent);

/* Freshness (wire.h, the header's counter): the highest counter received
 * from a peer and a map of the 63 below it, as IPsec's anti-replay window
 * keeps them. A counter seen before, or older than the map, is a copy: the
 * network's duplicate or a replay. A datagram overtaken by more than 63
 * later ones is dropped too, and retransmitted like any loss. */
struct fresh_window {
    uint64_t top;  /* highest counter accepted; 0 = none yet (counters start at 1) */
    uint64_t seen; /* bit i: counter top - i was accepted */
};

/* Whether `ctr` is new; if so, records it. */
bool fresh_accept(struct fresh_window *w, uint64_t ctr);

/* Retransmission timeout, after Jacobson/Karels: srtt + 4 rttvar, clamped.
 * Each timeout doubles it, up to RTO_BACKOFF_MAX (or the measured timeout,
 * if that is longer), and an acknowledgement of anything new brings it
 * back to the measured value (rto_reset_backoff), as Linux does. Under
 * heavy loss the backoff is what costs time: every loss of a retransmission
 * doubled the wait, up to half a second, and a clean sample (Karn: only
 * from a datagram sent once) was needed to come down. The cap also keeps a
 * peer that is alive behind a very lossy network heard from often enough
 * within DSM_PEER_TIMEOUT. */
struct rto_state {
    int64_t  srtt_ns, rttvar_ns;
    uint64_t base_ns;   /* the measured timeout, without backoff */
    uint64_t rto_ns;    /* the timeout in force */
    uint64_t backoff_cap_ns; /* RTO_BACKOFF_MAX_NS, or more for a large job */
    uint64_t min_ns;    /* RTO_MIN_NS, or more where nodes crowd the CPUs */
    bool     sampled;
};

#define RTO_INITIAL_NS      (20ull * 1000000)
#define RTO_MIN_NS          (400ull * 1000)
#define RTO_BACKOFF_MAX_NS  (100ull * 1000000)
#define RTO_MAX_NS          (500ull * 1000000)

void rto_init(struct rto_state *r);
void rto_sample(struct rto_state *r, uint64_t rtt_ns);
void rto_backoff(struct rto_state *r);
void rto_reset_backoff(struct rto_state *r);
#endif
