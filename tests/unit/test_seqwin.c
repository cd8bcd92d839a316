/*
 * test_seqwin.c — sequence numbers across the wrap, the receive window,
 * acknowledgement coverage and the retransmission timer; and a model of the
 * whole reliable channel (sender, lossy network, receiver) that proves every
 * datagram is delivered exactly once and in order.
 */
#include "check.h"
#include "net/seqwin.h"

#include <stdint.h>
#include <string.h>


/* True with probability p. */
static int chance(double p)
{
    return (double)(rng() >> 11) / (double)(1ull << 53) < p;
}

/* ---- serial-number comparison ----------------------------------------- */

static void test_seq_order_holds_across_the_wrap(void)
{
    CHECK(seq_before(1, 2));
    CHECK(!seq_before(2, 1));
    CHECK(!seq_before(7, 7));
    CHECK_EQ(seq_diff(7, 7), 0);

    /* 0xffffffff is just before 0, 0 just after it. */
    CHECK(seq_before(0xffffffffu, 0));
    CHECK(!seq_before(0, 0xffffffffu));
    CHECK_EQ(seq_diff(0, 0xffffffffu), 1);
    CHECK_EQ(seq_diff(0xffffffffu, 0), -1);
    CHECK_EQ(seq_diff(5, 0xfffffffbu), 10);
    CHECK(seq_before(0xfffffff0u, 0x10));

    /* Half the space apart is the limit of the ordering. */
    CHECK_EQ(seq_diff(0x7fffffffu, 0), 0x7fffffff);
    CHECK(seq_before(0, 0x7fffffffu));
    CHECK_EQ(seq_diff(0x80000001u, 0), -0x7fffffff);
    CHECK(seq_before(0x80000001u, 0));

    /* The ordering is the same wherever the pair sits in the space. */
    seed(1);
    for (int i = 0; i < 10000; i++) {
        uint32_t base = (uint32_t)rng();
        int32_t d = (int32_t)(rng() % 2000001) - 1000000;
        uint32_t a = base + (uint32_t)d;
        CHECK_EQ(seq_diff(a, base), d);
        CHECK(seq_before(a, base) == (d < 0));
        CHECK(seq_before(base, a) == (d > 0));
    }
}

/* ---- receive window ----------------------------------------------------- */

static void test_in_order_seq_is_delivered_and_advances(void)
{
    struct rx_window w = {.expected = 100, .held = 0};
    CHECK_EQ(rxwin_classify(&w, 100), RX_IN_ORDER);
    CHECK(!rxwin_advance(&w));
    CHECK_EQ(w.expected, 101);
    CHECK_EQ(w.held, 0);
    CHECK_EQ(rxwin_classify(&w, 100), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 101), RX_IN_ORDER);
}

static void test_seq_ahead_within_window_is_held(void)
{
    struct rx_window w = {.expected = 1000, .held = 0};
    for (uint32_t d = 1; d <= SEQWIN_MAX; d++)
        CHECK_EQ(rxwin_classify(&w, 1000 + d), RX_HOLD);

    rxwin_hold(&w, 1001);
    CHECK_EQ(w.held, 1);
    rxwin_hold(&w, 1003);
    CHECK_EQ(w.held, 0x5);
    /* The last place of the window is bit 63. */
    rxwin_hold(&w, 1000 + SEQWIN_MAX);
    CHECK(w.held == (0x5ull | (1ull << 63)));
    CHECK_EQ(w.expected, 1000); /* holding never moves the window */
    CHECK_EQ(rxwin_classify(&w, 1000), RX_IN_ORDER);
    CHECK_EQ(rxwin_classify(&w, 1002), RX_HOLD);
}

static void test_duplicates_of_delivered_and_held_are_recognised(void)
{
    struct rx_window w = {.expected = 50, .held = 0};
    rxwin_hold(&w, 52);
    rxwin_hold(&w, 50 + SEQWIN_MAX);

    /* Already delivered: everything before expected, however far back. */
    CHECK_EQ(rxwin_classify(&w, 49), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 0), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 50 - 0x7fffffffu), RX_DUPLICATE);
    /* Already held. */
    CHECK_EQ(rxwin_classify(&w, 52), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 50 + SEQWIN_MAX), RX_DUPLICATE);
    /* Holding a duplicate again changes nothing. */
    uint64_t before = w.held;
    rxwin_hold(&w, 52);
    CHECK(w.held == before);
}

static void test_seq_beyond_window_is_dropped_and_not_held(void)
{
    struct rx_window w = {.expected = 7, .held = 0};
    CHECK_EQ(rxwin_classify(&w, 7 + SEQWIN_MAX), RX_HOLD);
    CHECK_EQ(rxwin_classify(&w, 7 + SEQWIN_MAX + 1), RX_BEYOND);
    CHECK_EQ(rxwin_classify(&w, 7 + 1000000), RX_BEYOND);
    CHECK_EQ(rxwin_classify(&w, 7 + 0x7fffffffu), RX_BEYOND);

    /* Holding what is out of the window must not corrupt the map. */
    rxwin_hold(&w, 7 + SEQWIN_MAX + 1);
    rxwin_hold(&w, 7 + 1000);
    rxwin_hold(&w, 7);      /* expected itself is never "held" */
    rxwin_hold(&w, 6);      /* nor what was delivered */
    CHECK_EQ(w.held, 0);
    CHECK_EQ(w.expected, 7);
}

static void test_advance_runs_through_held_datagrams_and_stops_at_gap(void)
{
    struct rx_window w = {.expected = 10, .held = 0};
    rxwin_hold(&w, 11);
    rxwin_hold(&w, 12);
    rxwin_hold(&w, 14);
    rxwin_hold(&w, 15);

    /* 10 arrives: 11 and 12 follow, 13 is missing. */
    CHECK_EQ(rxwin_classify(&w, 10), RX_IN_ORDER);
    CHECK(rxwin_advance(&w)); /* now at 11, held */
    CHECK_EQ(w.expected, 11);
    CHECK(rxwin_advance(&w)); /* now at 12, held */
    CHECK(!rxwin_advance(&w)); /* now at 13, missing */
    CHECK_EQ(w.expected, 13);
    CHECK_EQ(w.held, 0x3); /* 14 and 15 */
    CHECK_EQ(rxwin_classify(&w, 12), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 14), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 13), RX_IN_ORDER);

    /* The gap fills: the rest drains and the map empties. */
    CHECK(rxwin_advance(&w));
    CHECK(rxwin_advance(&w));
    CHECK(!rxwin_advance(&w));
    CHECK_EQ(w.expected, 16);
    CHECK_EQ(w.held, 0);

    /* A full window of held datagrams drains completely. */
    for (uint32_t d = 1; d <= SEQWIN_MAX; d++)
        rxwin_hold(&w, 16 + d);
    CHECK(w.held == ~0ull);
    int runs = 0;
    while (rxwin_advance(&w))
        runs++;
    CHECK_EQ(runs, SEQWIN_MAX);
    CHECK_EQ(w.expected, 16 + SEQWIN_MAX + 1);
    CHECK_EQ(w.held, 0);
}

static void test_expected_wraps_past_zero(void)
{
    struct rx_window w = {.expected = 0xfffffffeu, .held = 0};
    CHECK_EQ(rxwin_classify(&w, 0xffffffffu), RX_HOLD);
    CHECK_EQ(rxwin_classify(&w, 0), RX_HOLD);
    CHECK_EQ(rxwin_classify(&w, SEQWIN_MAX - 2), RX_HOLD);
    CHECK_EQ(rxwin_classify(&w, SEQWIN_MAX - 1), RX_BEYOND);
    CHECK_EQ(rxwin_classify(&w, 0xfffffffdu), RX_DUPLICATE);

    rxwin_hold(&w, 0xffffffffu);
    rxwin_hold(&w, 0);
    rxwin_hold(&w, 1);
    CHECK_EQ(w.held, 0x7);
    CHECK_EQ(rxwin_classify(&w, 0), RX_DUPLICATE);

    CHECK_EQ(rxwin_classify(&w, 0xfffffffeu), RX_IN_ORDER);
    CHECK(rxwin_advance(&w));
    CHECK_EQ(w.expected, 0xffffffffu);
    CHECK(rxwin_advance(&w));
    CHECK_EQ(w.expected, 0);
    CHECK(rxwin_advance(&w));
    CHECK_EQ(w.expected, 1);
    CHECK(!rxwin_advance(&w));
    CHECK_EQ(w.expected, 2);
    CHECK_EQ(w.held, 0);
    CHECK_EQ(rxwin_classify(&w, 0xffffffffu), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 1), RX_DUPLICATE);
    CHECK_EQ(rxwin_classify(&w, 2), RX_IN_ORDER);
}

/* ---- acknowledgements --------------------------------------------------- */

static void test_cumulative_ack_covers_everything_before_it(void)
{
    CHECK(ack_covers(100, 0, 99));
    CHECK(ack_covers(100, 0, 0));
    CHECK(ack_covers(100, 0, 100 - 0x7fffffffu));
    CHECK(!ack_covers(100, 0, 100)); /* cum is the first one missing */
    CHECK(!ack_covers(100, 0, 101));
    CHECK(!ack_covers(100, 0, 164));
    CHECK(!ack_covers(100, 0, 100 + 1000));
}

static void test_selective_ack_covers_exactly_its_bits(void)
{
    uint64_t sack = (1ull << 0) | (1ull << 5) | (1ull << 62) | (1ull << 63);
    CHECK(ack_covers(100, sack, 101));     /* bit 0 */
    CHECK(!ack_covers(100, sack, 102));
    CHECK(ack_covers(100, sack, 106));     /* bit 5 */
    CHECK(!ack_covers(100, sack, 105));
    CHECK(ack_covers(100, sack, 163));     /* bit 62 */
    CHECK(ack_covers(100, sack, 164));     /* bit 63: the window's last place */
    CHECK(!ack_covers(100, sack, 165));    /* past the map */
    CHECK(!ack_covers(100, ~0ull, 165));
    CHECK(!ack_covers(100, ~0ull, 100));   /* cum itself is never covered */
    CHECK(!ack_covers(100, ~0ull, 100 + 0x7fffffffu));
    for (uint32_t d = 1; d <= 64; d++) {
        CHECK(ack_covers(100, ~0ull, 100 + d));
        CHECK(ack_covers(100, 1ull << (d - 1), 100 + d));
        CHECK(!ack_covers(100, ~(1ull << (d - 1)), 100 + d));
    }
}

static void test_ack_coverage_holds_across_the_wrap(void)
{
    uint32_t cum = 0xfffffffeu;
    uint64_t sack = (1ull << 0) | (1ull << 2) | (1ull << 63);
    CHECK(ack_covers(cum, sack, 0xfffffffdu));
    CHECK(!ack_covers(cum, sack, 0xfffffffeu));
    CHECK(ack_covers(cum, sack, 0xffffffffu)); /* bit 0 */
    CHECK(!ack_covers(cum, sack, 0));          /* bit 1 */
    CHECK(ack_covers(cum, sack, 1));           /* bit 2 */
    CHECK(ack_covers(cum, sack, 62));          /* bit 63 */
    CHECK(!ack_covers(cum, sack, 63));

    /* A cumulative point just past zero still covers the end of the space. */
    CHECK(ack_covers(3, 0, 0xffffffffu));
    CHECK(ack_covers(3, 0, 0xfffffff0u));
    CHECK(ack_covers(3, 0, 2));
    CHECK(!ack_covers(3, 0, 3));
}

static void test_rack_lost_needs_a_later_transmission_delivered_and_patience(void)
{
    /* Sent before the latest delivered transmission, patience passed: lost. */
    CHECK(rack_lost(100, 5, 200, 6, 400, 50));
    CHECK(rack_lost(100, 7, 200, 6, 400, 50)); /* by time, whatever the seq */
    /* Patience not yet passed: reordering may still bring it. */
    CHECK(!rack_lost(100, 5, 200, 6, 140, 50));
    /* Sent after (a copy on its way) or is itself the latest: not lost. */
    CHECK(!rack_lost(300, 5, 200, 6, 1000, 50));
    CHECK(!rack_lost(200, 6, 200, 6, 1000, 50));
    /* Sent at the same instant: the sequence orders them, across the wrap. */
    CHECK(rack_lost(200, 5, 200, 6, 1000, 50));
    CHECK(!rack_lost(200, 7, 200, 6, 1000, 50));
    CHECK(rack_lost(200, 0xffffffffu, 200, 1, 1000, 50));
    /* Nothing delivered yet (0, seq before the first): nothing lost. */
    CHECK(!rack_lost(100, 0, 0, 0xffffffffu, 1000, 50));
    CHECK(rack_after(201, 0, 200, 9) && !rack_after(199, 10, 200, 9));
}

static void test_rack_delivered_time_is_the_copy_the_ack_names(void)
{
    /* Sent once: that transmission arrived. */
    CHECK_EQ(rack_delivered_time(1, false, 500, 500), 500);
    CHECK_EQ(rack_delivered_time(1, true, 500, 500), 500);
    /* Sent again, and the receiver's latest new datagram was a copy: the
     * copy arrived (a loss repaired; what was sent before it is judged). */
    CHECK_EQ(rack_delivered_time(2, true, 900, 100), 900);
    /* ...or was an original: the first transmission arrived, late (a
     * receiver slow to read), and what followed it is still on its way. */
    CHECK_EQ(rack_delivered_time(2, false, 900, 100), 100);
    CHECK_EQ(rack_delivered_time(5, false, 900, 100), 100);
}

static void test_ack_highest_is_top_sack_bit_or_before_cum(void)
{
    CHECK_EQ(ack_highest(100, 0), 99);
    CHECK_EQ(ack_highest(0, 0), 0xffffffffu);
    CHECK_EQ(ack_highest(100, 1), 101);
    CHECK_EQ(ack_highest(100, 0x5), 103);
    CHECK_EQ(ack_highest(100, 1ull << 63), 164);
    CHECK_EQ(ack_highest(100, ~0ull), 164);
    CHECK_EQ(ack_highest(0xfffffffeu, 1), 0xffffffffu);
    CHECK_EQ(ack_highest(0xfffffffeu, 0x2), 0);
    CHECK_EQ(ack_highest(0xfffffffeu, 1ull << 63), 62);

    /* The highest reported seq is itself covered, and nothing after it is. */
    seed(2);
    for (int i = 0; i < 10000; i++) {
        uint32_t cum = (uint32_t)rng();
        uint64_t sack = rng() >> (rng() % 64);
        uint32_t hi = ack_highest(cum, sack);
        if (sack)
            CHECK(ack_covers(cum, sack, hi));
        else
            CHECK_EQ(hi, cum - 1);
        int later_covered = 0;
        for (uint32_t s = hi + 1; seq_diff(s, cum) <= 64; s++)
            later_covered |= ack_covers(cum, sack, s);
        CHECK(!later_covered);
    }
}

/* ---- retransmission timer ----------------------------------------------- */

/* The tests below take the floor T = RTO_MIN_NS as their unit of time, so
 * they hold whatever the floor is tuned to; they need room above it. */
#define T RTO_MIN_NS

static void test_rto_limits_leave_room_for_the_tests(void)
{
    CHECK(RTO_MIN_NS < RTO_INITIAL_NS);
    CHECK(RTO_INITIAL_NS < RTO_MAX_NS);
    CHECK(RTO_MAX_NS >= 16 * RTO_MIN_NS);
    CHECK(RTO_INITIAL_NS < RTO_BACKOFF_MAX_NS && RTO_BACKOFF_MAX_NS <= RTO_MAX_NS);
}

static void test_rto_starts_at_the_initial_value(void)
{
    struct rto_state r;
    memset(&r, 0xab, sizeof r);
    rto_init(&r);
    CHECK(!r.sampled);
    CHECK(r.rto_ns == RTO_INITIAL_NS);
}

static void test_first_rtt_sample_sets_srtt_and_half_variance(void)
{
    struct rto_state r;
    rto_init(&r);
    rto_sample(&r, 2 * T);
    CHECK(r.sampled);
    CHECK(r.srtt_ns == (int64_t)(2 * T));
    CHECK(r.rttvar_ns == (int64_t)T);
    CHECK(r.rto_ns == 2 * T + 4 * T); /* srtt + 4 rttvar = 3 rtt */
}

static void test_rto_converges_to_steady_rtt(void)
{
    const int64_t rtt = (int64_t)(2 * T);
    struct rto_state r;
    rto_init(&r);
    rto_sample(&r, 5 * T); /* one slow first sample... */
    for (int i = 0; i < 300; i++)
        rto_sample(&r, (uint64_t)rtt); /* ...then a steady 2T */
    /* Integer arithmetic leaves a few ns of residue; no more. */
    CHECK(r.srtt_ns >= rtt - 100 && r.srtt_ns <= rtt + 100);
    CHECK(r.rttvar_ns >= 0 && r.rttvar_ns <= 100);
    CHECK(r.rto_ns >= (uint64_t)rtt && r.rto_ns <= (uint64_t)rtt + 500);

    /* Jitter widens the timeout past the slowest sample it has seen. */
    for (int i = 0; i < 300; i++)
        rto_sample(&r, (i & 1) ? 3 * T : 1 * T);
    CHECK(r.srtt_ns > (int64_t)(T + T / 2) && r.srtt_ns < (int64_t)(2 * T + T / 2));
    CHECK(r.rttvar_ns > (int64_t)(T / 2) && r.rttvar_ns < (int64_t)(T + T / 2));
    CHECK(r.rto_ns > 3 * T);

    /* Each later sample moves srtt by an eighth of the error and rttvar by
     * a quarter of its own error (Jacobson/Karels). */
    struct rto_state s = {.srtt_ns = (int64_t)(8 * T), .rttvar_ns = (int64_t)T,
                          .rto_ns = 12 * T, .sampled = true};
    rto_sample(&s, 16 * T);
    CHECK(s.srtt_ns == (int64_t)(9 * T));
    CHECK(s.rttvar_ns == (int64_t)(T + (8 * T - T) / 4));
    CHECK(s.rto_ns == (uint64_t)(s.srtt_ns + 4 * s.rttvar_ns) || s.rto_ns == RTO_MAX_NS);
    rto_sample(&s, 0); /* an error below srtt counts by its size */
    CHECK(s.srtt_ns == (int64_t)(9 * T - 9 * T / 8));
}

static void test_rto_is_clamped_to_min_and_max(void)
{
    struct rto_state r;
    rto_init(&r);
    rto_sample(&r, T / 10); /* 0.3 T computed */
    CHECK(r.rto_ns == RTO_MIN_NS);
    for (int i = 0; i < 100; i++)
        rto_sample(&r, 0);
    CHECK(r.rto_ns == RTO_MIN_NS);

    rto_init(&r);
    rto_sample(&r, RTO_MAX_NS); /* 3 max computed */
    CHECK(r.rto_ns == RTO_MAX_NS);
    rto_sample(&r, 100 * RTO_MAX_NS);
    CHECK(r.rto_ns == RTO_MAX_NS);

    /* Just inside the limits nothing is clamped. */
    r = (struct rto_state){.srtt_ns = (int64_t)T, .rttvar_ns = 0, .sampled = true};
    rto_sample(&r, T + 8); /* srtt T+1, rttvar 2 */
    CHECK(r.rto_ns == T + 9);
    r = (struct rto_state){.srtt_ns = (int64_t)RTO_MAX_NS - 64, .rttvar_ns = 0, .sampled = true};
    rto_sample(&r, RTO_MAX_NS - 64);
    CHECK(r.rto_ns == RTO_MAX_NS - 64);
}

static void test_backoff_doubles_until_the_cap(void)
{
    struct rto_state r;
    rto_init(&r);
    rto_backoff(&r);
    CHECK(r.rto_ns == 2 * RTO_INITIAL_NS);

    rto_init(&r);
    uint64_t prev = r.rto_ns;
    for (int i = 0; i < 40; i++) {
        rto_backoff(&r);
        CHECK(r.rto_ns == (2 * prev < RTO_BACKOFF_MAX_NS ? 2 * prev : RTO_BACKOFF_MAX_NS));
        prev = r.rto_ns;
    }
    CHECK(r.rto_ns == RTO_BACKOFF_MAX_NS);

    /* From the floor it doubles as well. */
    rto_init(&r);
    rto_sample(&r, 1000);
    CHECK(r.rto_ns == RTO_MIN_NS);
    rto_backoff(&r);
    CHECK(r.rto_ns == 2 * RTO_MIN_NS);
    rto_backoff(&r);
    CHECK(r.rto_ns == 4 * RTO_MIN_NS);
    /* Progress brings it back to the measured value at once. */
    rto_reset_backoff(&r);
    CHECK(r.rto_ns == RTO_MIN_NS);

    /* A measured timeout above the cap is kept, and not doubled. */
    rto_init(&r);
    rto_sample(&r, RTO_BACKOFF_MAX_NS);
    uint64_t measured = r.rto_ns;
    CHECK(measured > RTO_BACKOFF_MAX_NS);
    rto_backoff(&r);
    CHECK(r.rto_ns == measured);

    /* A fresh sample after backing off brings the timeout back down. */
    rto_init(&r);
    rto_sample(&r, T);
    uint64_t base = r.rto_ns;
    for (int i = 0; i < 10; i++)
        rto_backoff(&r);
    CHECK(r.rto_ns == RTO_BACKOFF_MAX_NS);
    rto_sample(&r, T);
    CHECK(r.rto_ns <= base);
    CHECK(r.rto_ns == (uint64_t)(r.srtt_ns + 4 * r.rttvar_ns));
}

/* ---- model of the whole channel ----------------------------------------- */

/*
 * A sender of n datagrams and a receiver, joined by a network that loses,
 * duplicates and reorders datagrams in both directions (acknowledgements
 * included). The receiver uses rxwin_* and buffers what it holds in slots
 * seq % SEQWIN_MAX, as the transport does; the sender keeps at most `window`
 * datagrams past its oldest unacknowledged one, forgets what ack_covers
 * reports, retransmits on a timer and fast-retransmits what lies before
 * ack_highest. Time is in ticks.
 */
#define MODEL_MAX_N     6000
#define MODEL_NET_CAP   8192

struct model_params {
    uint64_t seed;
    uint32_t first_seq;
    int      n;
    unsigned window;
    double   loss, dup, reorder;
};

struct packet {
    uint32_t seq, cum; /* data: seq (and its index is seq - first) / ack: cum */
    uint64_t sack;
};

struct net_queue {
    struct packet p[MODEL_NET_CAP];
    int           len;
};

static struct net_queue to_rx, to_tx;

/* Puts a packet on the network, maybe losing or duplicating it. */
static void net_put(struct net_queue *q, const struct model_params *mp, struct packet p)
{
    if (chance(mp->loss))
        return;
    int copies = chance(mp->dup) ? 2 : 1;
    for (int c = 0; c < copies && q->len < MODEL_NET_CAP; c++)
        q->p[q->len++] = p;
}

/* Takes the next packet: usually the oldest, sometimes a random later one. */
static int net_take(struct net_queue *q, const struct model_params *mp, struct packet *out)
{
    if (!q->len)
        return 0;
    int i = chance(mp->reorder) ? (int)(rng() % (uint64_t)q->len) : 0;
    *out = q->p[i];
    memmove(&q->p[i], &q->p[i + 1], (size_t)(q->len - i - 1) * sizeof q->p[0]);
    q->len--;
    return 1;
}

static void run_channel_model(const struct model_params *mp)
{
    static unsigned char delivered[MODEL_MAX_N], acked[MODEL_MAX_N];
    static uint64_t sent_at[MODEL_MAX_N];
    int slot_idx[SEQWIN_MAX]; /* receiver's buffer: index held in the slot, or -1 */
    const uint32_t first = mp->first_seq;
    const int n = mp->n;
    const uint64_t rto = 40; /* ticks */

    seed(mp->seed);
    memset(delivered, 0, sizeof delivered);
    memset(acked, 0, sizeof acked);
    for (int i = 0; i < SEQWIN_MAX; i++)
        slot_idx[i] = -1;
    to_rx.len = to_tx.len = 0;

    struct rx_window w = {.expected = first, .held = 0};
    int next_delivery = 0, base = 0, next_send = 0;
    int dup_seen = 0, beyond_seen = 0, held_seen = 0, wrong_order = 0;
    int bad_slot = 0, false_ack = 0, overflow = 0;
    uint64_t tick, dsent = 0; /* the latest transmission acknowledged */
    uint32_t dseq = first - 1;

    for (tick = 1; tick < 2000000 && (base < n || next_delivery < n); tick++) {
        /* Sender: new datagrams while the window is open. */
        while (next_send < n && next_send - base < (int)mp->window) {
            sent_at[next_send] = tick;
            net_put(&to_rx, mp, (struct packet){.seq = first + (uint32_t)next_send});
            next_send++;
        }
        /* Sender: retransmission timer, for the oldest unacknowledged
         * datagram only (window.c); the answer reveals the rest. */
        for (int i = base; i < next_send; i++)
            if (!acked[i]) {
                if (tick - sent_at[i] >= rto) {
                    sent_at[i] = tick;
                    net_put(&to_rx, mp, (struct packet){.seq = first + (uint32_t)i});
                }
                break;
            }

        /* Network to receiver: a few datagrams per tick. */
        for (int k = 0; k < 8; k++) {
            struct packet p;
            if (!net_take(&to_rx, mp, &p))
                break;
            uint32_t idx = p.seq - first;
            switch (rxwin_classify(&w, p.seq)) {
            case RX_DUPLICATE:
                dup_seen++;
                if (idx < (uint32_t)n && !delivered[idx] &&
                    slot_idx[p.seq % SEQWIN_MAX] != (int)idx)
                    bad_slot++; /* called a duplicate but we do not have it */
                break;
            case RX_BEYOND:
                beyond_seen++;
                break;
            case RX_HOLD:
                held_seen++;
                if (slot_idx[p.seq % SEQWIN_MAX] != -1)
                    bad_slot++; /* two held datagrams in one slot */
                slot_idx[p.seq % SEQWIN_MAX] = (int)idx;
                rxwin_hold(&w, p.seq);
                break;
            case RX_IN_ORDER:
                if ((int)idx != next_delivery || delivered[idx])
                    wrong_order++;
                delivered[idx]++;
                next_delivery++;
                while (rxwin_advance(&w)) {
                    int *s = &slot_idx[w.expected % SEQWIN_MAX];
                    if (*s != (int)(w.expected - first)) {
                        bad_slot++;
                        break;
                    }
                    if (*s != next_delivery || delivered[*s])
                        wrong_order++;
                    delivered[*s]++;
                    next_delivery++;
                    *s = -1;
                }
                break;
            }
            /* Every datagram is answered with the receiver's state. */
            net_put(&to_tx, mp, (struct packet){.cum = w.expected, .sack = w.held});
        }

        /* Network to sender: acknowledgements, possibly stale. */
        for (int k = 0; k < 8; k++) {
            struct packet a;
            if (!net_take(&to_tx, mp, &a))
                break;
            for (int i = base; i < next_send; i++) {
                if (acked[i] || !ack_covers(a.cum, a.sack, first + (uint32_t)i))
                    continue;
                /* The receiver has it now: delivered, or held in its slot. */
                uint32_t s = first + (uint32_t)i;
                if (!delivered[i] && slot_idx[s % SEQWIN_MAX] != i)
                    false_ack++;
                acked[i] = 1;
                if (rack_after(sent_at[i], s, dsent, dseq)) {
                    dsent = sent_at[i];
                    dseq = s;
                }
            }
            while (base < next_send && acked[base])
                base++;
            /* Fast retransmission of what a later transmission overtook. */
            for (int i = base; i < next_send; i++) {
                uint32_t s = first + (uint32_t)i;
                if (!acked[i] && rack_lost(sent_at[i], s, dsent, dseq, tick, rto / 4)) {
                    sent_at[i] = tick;
                    net_put(&to_rx, mp, (struct packet){.seq = s});
                }
            }
        }
        if (to_rx.len >= MODEL_NET_CAP || to_tx.len >= MODEL_NET_CAP)
            overflow++;
    }

    int exactly_once = 1;
    for (int i = 0; i < n; i++)
        if (delivered[i] != 1)
            exactly_once = 0;
    CHECK(tick < 2000000);          /* it finished */
    CHECK_EQ(next_delivery, n);
    CHECK(exactly_once);
    CHECK_EQ(wrong_order, 0);
    CHECK_EQ(bad_slot, 0);
    CHECK_EQ(false_ack, 0);
    CHECK_EQ(overflow, 0);
    CHECK_EQ(w.expected, first + (uint32_t)n);
    CHECK_EQ(w.held, 0);
    if (mp->loss > 0 || mp->dup > 0) /* the faults were really exercised */
        CHECK(dup_seen > 0);
    if (mp->reorder > 0 || mp->loss > 0)
        CHECK(held_seen > 0);
    CHECK((mp->window > SEQWIN_MAX) == (beyond_seen > 0));
}

static void test_lossy_channel_delivers_each_datagram_once_in_order(void)
{
    const struct model_params cases[] = {
        {.seed = 1, .first_seq = 0, .n = 2000, .window = 64},
        {.seed = 2, .first_seq = 0, .n = 5000, .window = 64, .loss = 0.1, .dup = 0.05, .reorder = 0.2},
        {.seed = 3, .first_seq = 0xffffff00u, .n = 5000, .window = 64, .loss = 0.2, .dup = 0.1, .reorder = 0.5},
        {.seed = 4, .first_seq = 0xfffffff0u, .n = 3000, .window = 64, .loss = 0.4, .dup = 0.3, .reorder = 0.9},
        {.seed = 5, .first_seq = 0x7ffffff0u, .n = 3000, .window = 16, .loss = 0.3, .dup = 0.0, .reorder = 0.3},
        {.seed = 6, .first_seq = 0xffffffc0u, .n = 4000, .window = 64, .loss = 0.0, .dup = 0.5, .reorder = 1.0},
        /* A sender that overruns the window: the excess is dropped as
         * RX_BEYOND and comes back by retransmission. */
        {.seed = 7, .first_seq = 0xfffff000u, .n = 4000, .window = 100, .loss = 0.1, .dup = 0.1, .reorder = 0.3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_channel_model(&cases[i]);
    for (uint64_t s = 100; s < 120; s++) {
        struct model_params mp = {.seed = s, .first_seq = (uint32_t)(0u - (uint32_t)s * 37),
                                  .n = 1500, .window = 64,
                                  .loss = (double)(s % 5) / 10, .dup = (double)(s % 3) / 10,
                                  .reorder = (double)(s % 4) / 4};
        run_channel_model(&mp);
    }
}

/* ---- freshness ---------------------------------------------------------- */

static void test_fresh_counters_pass_once_and_copies_never(void)
{
    struct fresh_window w = {0};
    CHECK(!fresh_accept(&w, 0)); /* counters start at 1 */
    for (uint64_t c = 1; c <= 200; c++) {
        CHECK(fresh_accept(&w, c));
        CHECK(!fresh_accept(&w, c));     /* the network's duplicate */
        CHECK(!fresh_accept(&w, c / 2)); /* a replay of anything older */
    }
    /* A little reordering passes, each counter once. */
    w = (struct fresh_window){0};
    CHECK(fresh_accept(&w, 5));
    CHECK(fresh_accept(&w, 3));
    CHECK(fresh_accept(&w, 4));
    CHECK(!fresh_accept(&w, 3));
    CHECK(fresh_accept(&w, 1));
    CHECK(fresh_accept(&w, 2));
    CHECK(!fresh_accept(&w, 5));
    /* A jump ahead forgets the map behind it: what is 64 or more behind
     * the top is refused, what is less and unseen passes. */
    CHECK(fresh_accept(&w, 1000));
    CHECK(!fresh_accept(&w, 1000 - 64));
    CHECK(!fresh_accept(&w, 6));
    CHECK(fresh_accept(&w, 1000 - 63));
    CHECK(!fresh_accept(&w, 1000 - 63));
    CHECK(fresh_accept(&w, 999));
    /* The far end of the counter. */
    w = (struct fresh_window){.top = UINT64_MAX - 1, .seen = 1};
    CHECK(fresh_accept(&w, UINT64_MAX));
    CHECK(!fresh_accept(&w, UINT64_MAX));
    CHECK(!fresh_accept(&w, UINT64_MAX - 1));
}

/* Against a model that remembers every counter: random arrivals with
 * duplicates and reordering, each accepted exactly when it is new and no
 * more than 63 behind the highest seen. */
static void test_fresh_window_matches_a_full_history(void)
{
    seed(11);
    static unsigned char seen[20000];
    struct fresh_window w = {0};
    uint64_t top = 0;
    for (int i = 0; i < 200000; i++) {
        uint64_t c = 1 + rng() % (top + 70 < 19999 ? top + 70 : 19999);
        int want = !seen[c] && (c > top || top - c < 64);
        CHECK_EQ(fresh_accept(&w, c), want);
        if (want) {
            seen[c] = 1;
            if (c > top)
                top = c;
        }
    }
}

int main(void)
{
    test_seq_order_holds_across_the_wrap();
    test_in_order_seq_is_delivered_and_advances();
    test_seq_ahead_within_window_is_held();
    test_duplicates_of_delivered_and_held_are_recognised();
    test_seq_beyond_window_is_dropped_and_not_held();
    test_advance_runs_through_held_datagrams_and_stops_at_gap();
    test_expected_wraps_past_zero();
    test_cumulative_ack_covers_everything_before_it();
    test_selective_ack_covers_exactly_its_bits();
    test_ack_coverage_holds_across_the_wrap();
    test_ack_highest_is_top_sack_bit_or_before_cum();
    test_rack_lost_needs_a_later_transmission_delivered_and_patience();
    test_rack_delivered_time_is_the_copy_the_ack_names();
    test_rto_limits_leave_room_for_the_tests();
    test_rto_starts_at_the_initial_value();
    test_first_rtt_sample_sets_srtt_and_half_variance();
    test_rto_converges_to_steady_rtt();
    test_rto_is_clamped_to_min_and_max();
    test_backoff_doubles_until_the_cap();
    test_lossy_channel_delivers_each_datagram_once_in_order();
    test_fresh_counters_pass_once_and_copies_never();
    test_fresh_window_matches_a_full_history();
    return check_report("test_seqwin");
}
