/*
 * inject.c — loss, duplication, reordering and delay, all of it: the
 * decisions (a seeded generator, tested alone in tests/unit/test_inject.c)
 * and what the transport does with them (drop, send twice, hold back,
 * queue until due).
 *
 * The kernel here has no netem, so the sender injects, on every datagram it
 * puts on the wire through wire_out (transport.h): data, acks and
 * retransmissions alike. Nothing here runs unless a fault was asked for —
 * wire_out and the timers test net_state.inj.on first — so the paths of an
 * ordinary run are those of a build without it.
 */
#include "net/inject.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "net/transport.h"

#define HOLD_MAX_NS 1000000 /* a held datagram leaves after 1 ms even if none overtakes it */

/* ---- the decisions ------------------------------------------------------ */

void inject_init(struct inject *in, double loss, double dup, double reorder,
                 uint64_t delay_us, uint64_t seed)
{
    in->loss = loss;
    in->dup = dup;
    in->reorder = reorder;
    in->delay_ns = delay_us * 1000;
    in->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

bool inject_active(const struct inject *in)
{
    return in->loss > 0 || in->dup > 0 || in->reorder > 0 || in->delay_ns > 0;
}

static double next_unit(struct inject *in)
{
    uint64_t x = in->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    in->rng = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

enum inject_action inject_decide(struct inject *in)
{
    if (in->loss > 0 && next_unit(in) < in->loss)
        return INJECT_DROP;
    if (in->dup > 0 && next_unit(in) < in->dup)
        return INJECT_DUPLICATE;
    if (in->reorder > 0 && next_unit(in) < in->reorder)
        return INJECT_HOLD;
    return INJECT_SEND;
}

/* ---- in the transport (under net_state.lock) ----------------------------- */

struct delayed {
    struct delayed    *next;
    uint64_t           due_ns;
    struct sockaddr_in to;
    size_t             len;
    unsigned char      bytes[];
};

void inject_start(const struct net_params *prm)
{
    /* Without a seed of its own, each node of each job draws differently. */
    inject_init(&net_state.inj.decide, prm->loss, prm->dup, prm->reorder, prm->delay_us,
                prm->seed ? prm->seed : prm->job_id * 2654435761u + (uint64_t)job()->rank + 1);
    net_state.inj.on = inject_active(&net_state.inj.decide);
}

/* Held datagrams are copied whole: lent memory may go before they leave. */
static struct delayed *copy_dgram(const struct sockaddr_in *to, const void *buf, size_t len,
                                  const void *ext, size_t elen)
{
    struct delayed *d = malloc(sizeof *d + len + elen);
    if (!d)
        log_fatal("out of memory holding a datagram for fault injection");
    d->next = NULL;
    d->to = *to;
    d->len = len + elen;
    memcpy(d->bytes, buf, len);
    if (elen)
        memcpy(d->bytes + len, ext, elen);
    return d;
}

static void emit(const struct sockaddr_in *to, const void *buf, size_t len, const void *ext,
                 size_t elen)
{
    if (net_state.inj.decide.delay_ns) {
        struct delayed *d = copy_dgram(to, buf, len, ext, elen);
        d->due_ns = clock_ns() + net_state.inj.decide.delay_ns;
        if (net_state.inj.delay_tail)
            net_state.inj.delay_tail->next = d;
        else
            net_state.inj.delay_head = d;
        net_state.inj.delay_tail = d;
        /* The timers send it when due: have them look then, not at the
         * next tick (up to 20 ms later). */
        service_timer_at(d->due_ns);
        return;
    }
    udp_send(to, buf, len, ext, elen);
}

static void release_held_dgram(void)
{
    struct delayed *h = net_state.inj.held;
    if (h) {
        net_state.inj.held = NULL;
        emit(&h->to, h->bytes, h->len, NULL, 0);
        free(h);
    }
}

void inject_out(const struct sockaddr_in *to, const void *buf, size_t len, const void *ext,
                size_t elen)
{
    switch (inject_decide(&net_state.inj.decide)) {
    case INJECT_DROP:
        stats_add(STAT_NET_INJECT_LOST, 1);
        break;
    case INJECT_DUPLICATE:
        stats_add(STAT_NET_INJECT_DUPED, 1);
        emit(to, buf, len, ext, elen);
        emit(to, buf, len, ext, elen);
        break;
    case INJECT_HOLD:
        if (!net_state.inj.held) {
            stats_add(STAT_NET_INJECT_REORDERED, 1);
            net_state.inj.held = copy_dgram(to, buf, len, ext, elen);
            net_state.inj.held_since = clock_ns();
            return; /* the next datagram overtakes it */
        }
        emit(to, buf, len, ext, elen);
        break;
    case INJECT_SEND:
        emit(to, buf, len, ext, elen);
        break;
    }
    release_held_dgram();
}

uint64_t inject_flush(uint64_t now, uint64_t next)
{
    if (net_state.inj.held && now - net_state.inj.held_since > HOLD_MAX_NS)
        release_held_dgram();
    while (net_state.inj.delay_head && net_state.inj.delay_head->due_ns <= now) {
        struct delayed *d = net_state.inj.delay_head;
        net_state.inj.delay_head = d->next;
        if (!net_state.inj.delay_head)
            net_state.inj.delay_tail = NULL;
        udp_send(&d->to, d->bytes, d->len, NULL, 0);
        free(d);
    }
    if (net_state.inj.held && net_state.inj.held_since + HOLD_MAX_NS < next)
        next = net_state.inj.held_since + HOLD_MAX_NS;
    if (net_state.inj.delay_head && net_state.inj.delay_head->due_ns < next)
        next = net_state.inj.delay_head->due_ns;
    return next;
}
