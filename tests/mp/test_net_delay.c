/*
 * An emulated link (DSM_NET_DELAY_US = D) holds each datagram at its
 * receiver, from the moment it is read until D later. Around a ring, every
 * node sends its neighbour messages stamped with the send time (one host:
 * every node reads the same CLOCK_MONOTONIC), small ones and ones of many
 * datagrams. Each must arrive whole, in its sender's order, and never
 * sooner than D after it was sent; every datagram a node took in must
 * have been held. No timing is asserted beyond that lower bound, which
 * load can only make easier to meet.
 */
#include <time.h>

#include "base/stats.h"
#include "mp_util.h"

enum { ROUNDS = 60, BIG = 20000 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct stamped {
    uint64_t sent_ns;
    int32_t  index;
    unsigned char body[];
};

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    const char *d = getenv("DSM_NET_DELAY_US");
    MP_CHECK(d && atol(d) > 0, "run with DSM_NET_DELAY_US set");
    uint64_t delay_ns = (uint64_t)atol(d) * 1000;
    int port = dsm_port_create("ring", 64);
    dsm_port_ref next;
    MP_CHECK(dsm_port_lookup((me + 1) % n, "ring", 30, &next) == 0, "lookup");
    int from = (me + n - 1) % n;

    struct stamped *out = malloc(sizeof *out + BIG);
    MP_CHECK(out, "memory");
    unsigned early = 0;
    for (int i = 0; i < ROUNDS; i++) {
        size_t body = i % 3 == 2 ? BIG : (size_t)(8 + i);
        out->index = i;
        mp_fill(out->body, body, (uint64_t)me * 1000 + (uint64_t)i);
        out->sent_ns = now_ns();
        MP_CHECK(dsm_msg_send(&next, out, sizeof *out + body, NULL, 0, 30, NULL) == 0, "send");
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(port, &m, 30) == 0, "recv");
        uint64_t got_ns = now_ns();
        const struct stamped *in = m.data;
        MP_CHECK(m.src_node == from && m.len == sizeof *in + body && in->index == i,
                 "message %d: %zu bytes, index %d, from node %d", i, m.len,
                 m.len >= sizeof *in ? in->index : -1, m.src_node);
        MP_CHECK(mp_verify(in->body, body, (uint64_t)from * 1000 + (uint64_t)i),
                 "message %d: content", i);
        if (got_ns - in->sent_ns < delay_ns)
            early++;
        dsm_msg_free(&m);
    }
    free(out);
    uint64_t held = stats_get(STAT_NET_INJECT_DELAYED), taken = stats_get(STAT_NET_DGRAMS_RECV);
    MP_CHECK(early == 0, "%u of %d messages arrived sooner than the delay after they were sent",
             early, ROUNDS);
    MP_CHECK(taken > 0 && held >= taken, "%llu datagrams taken in, %llu held by the delay",
             (unsigned long long)taken, (unsigned long long)held);
    dsm_barrier();
    if (me == 0)
        printf("delay: %d messages a node, none sooner than %s us after sent; every datagram "
               "held\n", ROUNDS, d);
    dsm_finish();
    return 0;
}
