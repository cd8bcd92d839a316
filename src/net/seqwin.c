#include "net/seqwin.h"

enum rx_verdict rxwin_classify(const struct rx_window *w, uint32_t seq)
{
    int32_t d = seq_diff(seq, w->expected);
    if (d < 0)
        return RX_DUPLICATE;
    if (d == 0)
        return RX_IN_ORDER;
    if (d > SEQWIN_MAX)
        return RX_BEYOND;
    return ((w->held >> (d - 1)) & 1) ? RX_DUPLICATE : RX_HOLD;
}

void rxwin_hold(struct rx_window *w, uint32_t seq)
{
    int32_t d = seq_diff(seq, w->expected);
    if (d >= 1 && d <= SEQWIN_MAX)
        w->held |= 1ull << (d - 1);
}

bool rxwin_advance(struct rx_window *w)
{
    bool next_held = w->held & 1;
    w->expected++;
    w->held >>= 1;
    return next_held;
}

uint32_t ack_highest(uint32_t cum, uint64_t sack)
{
    if (!sack)
        return cum - 1;
    return cum + (uint32_t)(64 - __builtin_clzll(sack));
}

bool rack_after(uint64_t sent, uint32_t seq, uint64_t dsent, uint32_t dseq)
{
    return sent > dsent || (sent == dsent && seq_before(dseq, seq));
}

uint64_t rack_delivered_time(uint32_t xmits, bool echo_rtx, uint64_t sent, uint64_t first_sent)
{
    return xmits <= 1 || echo_rtx ? sent : first_sent;
}

bool rack_lost(uint64_t sent, uint32_t seq, uint64_t dsent, uint32_t dseq, uint64_t now,
               uint64_t patience)
{
    return rack_after(dsent, dseq, sent, seq) && now >= sent && now - sent >= patience;
}

bool fresh_accept(struct fresh_window *w, uint64_t ctr)
{
    if (ctr == 0)
        return false;
    if (ctr > w->top) {
        uint64_t shift = ctr - w->top;
        w->seen = shift >= 64 ? 0 : w->seen << shift;
        w->seen |= 1;
        w->top = ctr;
        return true;
    }
    uint64_t back = w->top - ctr;
    if (back >= 64 || ((w->seen >> back) & 1))
        return false;
    w->seen |= 1ull << back;
    return true;
}

void rto_init(struct rto_state *r)
{
    r->srtt_ns = 0;
    r->rttvar_ns = 0;
    r->rto_ns = r->base_ns = RTO_INITIAL_NS;
    r->backoff_cap_ns = RTO_BACKOFF_MAX_NS;
    r->min_ns = RTO_MIN_NS;
    r->sampled = false;
}

static uint64_t clamp_rto(const struct rto_state *r, int64_t v)
{
    if (v < (int64_t)r->min_ns)
        return r->min_ns;
    if (v > (int64_t)RTO_MAX_NS)
        return RTO_MAX_NS;
    return (uint64_t)v;
}

void rto_sample(struct rto_state *r, uint64_t rtt_ns)
{
    int64_t rtt = (int64_t)rtt_ns;
    if (!r->sampled) {
        r->srtt_ns = rtt;
        r->rttvar_ns = rtt / 2;
        r->sampled = true;
    } else {
        int64_t err = rtt - r->srtt_ns;
        r->srtt_ns += err / 8;
        r->rttvar_ns += ((err < 0 ? -err : err) - r->rttvar_ns) / 4;
    }
    r->rto_ns = r->base_ns = clamp_rto(r, r->srtt_ns + 4 * r->rttvar_ns);
}

void rto_backoff(struct rto_state *r)
{
    uint64_t cap = r->base_ns > r->backoff_cap_ns ? r->base_ns : r->backoff_cap_ns;
    uint64_t next = clamp_rto(r, (int64_t)r->rto_ns * 2);
    if (next > cap)
        next = cap > r->rto_ns ? cap : r->rto_ns;
    r->rto_ns = next;
}

void rto_reset_backoff(struct rto_state *r)
{
    r->rto_ns = r->base_ns;
}
