/*
 * inject.c — loss, duplication, reordering and delay, all of it: the
 * decisions (a seeded generator, tested alone in tests/unit/test_inject.c)
 * and what the transport does with them (drop, send twice, hold back,
 * deliver when due).
 *
 * The kernel here has no netem, so the sender injects loss, duplication
 * and reordering, on every datagram it puts on the wire through wire_out
 * (transport.h): data, acks and retransmissions alike. The delay of an
 * emulated link (DSM_NET_DELAY_US) is the receiver's: a datagram leaves at
 * once and is held from the moment it is read until D later, then
 * delivered by whoever reads the socket then — a polling waiter on its
 * next turn, or the service thread, whose timed sleep ends at the first
 * one due. Held at the sender instead, every datagram cost a timer set
 * and a wake-up to send it later, about 50 µs of system calls here
 * whatever the delay (timerfd_settime alone 9 % of the samples); held at
 * the receiver, the delay costs no system call, and the delay realized is
 * D on top of what the host's own costs are, as on a real link. Nothing
 * here runs unless a fault was asked for — wire_out and the timers test
 * net_state.inj first — so the paths of an ordinary run are those of a
 * build without it.
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

void inject_start(const struct net_params *prm)
{
    /* Without a seed of its own, each node of each job draws differently. */
    inject_init(&net_state.inj.decide, prm->loss, prm->dup, prm->reorder, prm->delay_us,
                prm->seed ? prm->seed : prm->job_id * 2654435761u + (uint64_t)job()->rank + 1);
    /* The delay is the receiver's (inject_hold): the send side has
     * nothing to do for it. */
    struct inject send_side = net_state.inj.decide;
    send_side.delay_ns = 0;
    net_state.inj.on = inject_active(&send_side);
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

static void release_held_dgram(void)
{
    struct delayed *h = net_state.inj.held;
    if (h) {
        net_state.inj.held = NULL;
        udp_send(&h->to, h->bytes, h->len, NULL, 0);
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
        udp_send(to, buf, len, ext, elen);
        udp_send(to, buf, len, ext, elen);
        break;
    case INJECT_HOLD:
        if (!net_state.inj.held) {
            stats_add(STAT_NET_INJECT_REORDERED, 1);
            net_state.inj.held = copy_dgram(to, buf, len, ext, elen);
            net_state.inj.held_since = clock_ns();
            return; /* the next datagram overtakes it */
        }
        udp_send(to, buf, len, ext, elen);
        break;
    case INJECT_SEND:
        udp_send(to, buf, len, ext, elen);
        break;
    }
    release_held_dgram();
}

uint64_t inject_flush(uint64_t now, uint64_t next)
{
    if (net_state.inj.held && now - net_state.inj.held_since > HOLD_MAX_NS)
        release_held_dgram();
    if (net_state.inj.held && net_state.inj.held_since + HOLD_MAX_NS < next)
        next = net_state.inj.held_since + HOLD_MAX_NS;
    return next;
}

/* ---- the emulated link, at the receiver (under net_state.rx_lock) -------- */

/* One queue for all peers, in the order read: every datagram waits the
 * same D from its read, so the queue is in due order too, and each peer's
 * datagrams leave it in the order they came, as from a link: the receive
 * window would put data back in order, but acknowledgements, markers and
 * liveness are taken as they come. A datagram is checked (job, key,
 * freshness) when it leaves, as any other: holding it trusts nothing. */
void inject_hold(const void *d, size_t len, const struct sockaddr_in *from, uint64_t read_ns)
{
    struct delayed *h = copy_dgram(from, d, len, NULL, 0);
    h->due_ns = read_ns + net_state.inj.decide.delay_ns;
    stats_add(STAT_NET_INJECT_DELAYED, 1);
    if (net_state.inj.rx_tail) {
        net_state.inj.rx_tail->next = h;
    } else {
        net_state.inj.rx_head = h;
        /* Nobody's timers are lowered for it, which would make the next
         * wait run them for nothing: a waiter that polls delivers it on
         * its own turn, the service thread reads rx_due before it sleeps,
         * and a claim that ends before it is due sets the service
         * thread's timer for it (release_socket). */
        atomic_store(&net_state.inj.rx_due, h->due_ns);
    }
    net_state.inj.rx_tail = h;
}

struct delayed *inject_next_due(uint64_t now)
{
    struct delayed *h = net_state.inj.rx_head;
    if (!h || h->due_ns > now)
        return NULL;
    net_state.inj.rx_head = h->next;
    if (!h->next)
        net_state.inj.rx_tail = NULL;
    atomic_store(&net_state.inj.rx_due, h->next ? h->next->due_ns : 0);
    return h;
}
