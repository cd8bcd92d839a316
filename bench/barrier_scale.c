/*
 * barrier_scale.c — the cost of dsm_barrier as the job grows, beside a
 * raw-UDP tree barrier measured in the same run, between the same
 * processes (issue 26: at 64 nodes within 2x the raw tree).
 *
 * The raw barrier is what dsm's would be with nothing but the messages:
 * the same tree (node i's parent (i - 1) / k, fan-out k as
 * DSM_BARRIER_FANOUT), 12-byte datagrams on a plain UDP socket of each
 * node, arrivals gathered up, the release passed down, every wait a
 * non-blocking receive that yields the CPU between tries (micro's "busy",
 * the stricter baseline: dsm's waits poll before they sleep). Loopback
 * UDP may still drop a datagram when a socket overflows, so a node that
 * waits long for its release sends its arrival again, and a parent answers
 * an arrival of a round it has released with that release again.
 *
 * Each round times, at node 0, a run of back-to-back raw barriers and then
 * a run of dsm barriers (mean per barrier, a tenth more run first as
 * warm-up), so the two alternate and share the machine's moments; the
 * report gives every round and the medians. Startup is also reported: the
 * slowest node's dsm_startup, from the process's start; then rounds of
 * dsm_bcast pairs (node 0's, then the last node's), and dsm_finish's time
 * at node 0.
 *
 *   dsmrun -n N barrier_scale [--rounds R] [--iters M] [--fanout K]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw_udp.h"

#define MAX_NODES 256
#define RESEND_S  1.0  /* a raw arrival unanswered this long goes again (loss is rare here: a slow parent is the usual cause, and a resend only adds load) */
#define WAIT_S    60.0 /* a live job answers long before */

enum { RAW_ARRIVE = 1, RAW_RELEASE = 2 };
#define RAW_MAGIC 0x7b3a9e51u

struct raw_msg { /* 12 bytes */
    uint32_t round;
    uint16_t kind, from;
    uint32_t magic;
};

struct board_entry {      /* in shared memory, written once by each node */
    uint32_t addr, port;     /* the raw socket, network order */
    double   startup_us;
};

struct board {
    int                nodes;
    struct board_entry node[];
};

struct bench {
    int                 me, nodes, k;
    int                 parent, first_child, nchild;
    int                 fd;
    struct sockaddr_in *addr;
    uint32_t            round, released;     /* last raw round begun; released to us */
    uint32_t            passed;              /* last round whose release we sent down */
    uint32_t           *child_round;         /* highest round each child arrived at */
    uint64_t            resends;
};

static void raw_send(struct bench *b, int to, uint32_t round, int kind)
{
    struct raw_msg m = {.round = round, .kind = (uint16_t)kind, .from = (uint16_t)b->me,
                        .magic = RAW_MAGIC};
    raw_udp_sendto(b->fd, &m, sizeof m, &b->addr[to]); /* if lost, a resend covers it */
}

/* Handles what arrived, without waiting; returns the datagrams read. */
static int raw_poll(struct bench *b)
{
    int got = 0;
    for (;;) {
        struct raw_msg m;
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(b->fd, &m, sizeof m, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                bench_fail("recvfrom: %s", strerror(errno));
            return got;
        }
        if (n != (ssize_t)sizeof m || m.magic != RAW_MAGIC || m.from >= b->nodes ||
            from.sin_port != b->addr[m.from].sin_port ||
            from.sin_addr.s_addr != b->addr[m.from].sin_addr.s_addr)
            continue;
        got++;
        int c = m.from - b->first_child;
        if (m.kind == RAW_ARRIVE && c >= 0 && c < b->nchild) {
            if (m.round > b->child_round[c])
                b->child_round[c] = m.round;
            /* An arrival at a round we released already: our release was lost. */
            if (m.round <= b->passed)
                raw_send(b, m.from, m.round, RAW_RELEASE);
        } else if (m.kind == RAW_RELEASE && m.from == b->parent && m.round > b->released) {
            b->released = m.round;
        }
    }
}

static bool children_in(const struct bench *b, uint32_t round)
{
    for (int c = 0; c < b->nchild; c++)
        if (b->child_round[c] < round)
            return false;
    return true;
}

static void raw_tree_barrier(struct bench *b)
{
    uint32_t r = ++b->round;
    uint64_t start = bench_now_ns();
    while (!children_in(b, r)) {
        if (!raw_poll(b))
            sched_yield(); /* lets a node sharing this CPU answer */
        if (bench_now_ns() - start > (uint64_t)(WAIT_S * 1e9))
            bench_fail("raw tree barrier %u: children missing after %.0f s", r, WAIT_S);
    }
    if (b->parent >= 0) {
        raw_send(b, b->parent, r, RAW_ARRIVE);
        uint64_t sent = bench_now_ns();
        while (b->released < r) {
            if (!raw_poll(b))
                sched_yield();
            uint64_t now = bench_now_ns();
            if (now - sent > (uint64_t)(RESEND_S * 1e9)) {
                b->resends++;
                raw_send(b, b->parent, r, RAW_ARRIVE);
                sent = now;
            }
            if (now - start > (uint64_t)(WAIT_S * 1e9))
                bench_fail("raw tree barrier %u: no release from node %d after %.0f s", r,
                           b->parent, WAIT_S);
        }
    } else {
        b->released = r;
    }
    for (int c = 0; c < b->nchild; c++)
        raw_send(b, b->first_child + c, r, RAW_RELEASE);
    b->passed = r;
}

static int cmp_double(const void *a, const void *b) { return bench_cmp_double(a, b); }

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n N barrier_scale [--rounds R] [--iters M] [--fanout K]\n"
               "  --rounds R  alternating rounds of raw and dsm barriers (default 5)\n"
               "  --iters M   barriers timed per round and kind (default 3200/N, 20..400)\n"
               "  --fanout K  the raw tree's fan-out (default DSM_BARRIER_FANOUT, or 8)\n");
}

int main(int argc, char **argv)
{
    /* Each result as it is measured: under dsmrun stdout is a pipe, and a
     * long run on a loaded machine would otherwise show nothing until it ends. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t t_start = bench_now_ns();
    dsm_startup(&argc, &argv);
    double startup_us = (double)(bench_now_ns() - t_start) / 1e3;

    static struct bench b;
    b.me = dsm_rank();
    b.nodes = dsm_nodes();
    const char *env_k = getenv("DSM_BARRIER_FANOUT"); /* dsm has checked it */
    b.k = env_k ? atoi(env_k) : 8;
    int rounds = 5, iters = 0;
    struct arg_option options[] = {
        {"--rounds", ARG_INT, &rounds, "a round count 1..100", .lo = 1, .hi = 100},
        {"--iters", ARG_INT, &iters, "a barrier count 1..100000", .lo = 1, .hi = 100000},
        {"--fanout", ARG_INT, &b.k, "a fan-out 2..255", .lo = 2, .hi = 255},
        {0}};
    int status = args_read(argc, argv, options, usage, b.me == 0);
    if (status != ARGS_RUN) {
        dsm_finish();
        return status;
    }
    if (b.nodes < 2 || b.nodes > MAX_NODES)
        bench_fail("needs 2 to %d nodes (dsmrun -n N), not %d", MAX_NODES, b.nodes);
    if (!iters) {
        iters = 3200 / b.nodes;
        iters = iters < 20 ? 20 : iters > 400 ? 400 : iters;
    }

    b.parent = b.me == 0 ? -1 : (b.me - 1) / b.k;
    long first = (long)b.me * b.k + 1;
    b.first_child = (int)(first < b.nodes ? first : b.nodes);
    b.nchild = first >= b.nodes ? 0 : (int)(b.nodes - first < b.k ? b.nodes - first : b.k);
    b.child_round = calloc((size_t)b.k, sizeof *b.child_round);
    b.addr = calloc((size_t)b.nodes, sizeof *b.addr);
    if (!b.child_round || !b.addr)
        bench_fail("out of memory");

    /* Every node's raw socket address, through shared memory. */
    struct board *board = NULL;
    if (b.me == 0 && !(board = dsm_malloc(sizeof *board + (size_t)b.nodes * sizeof board->node[0])))
        bench_fail("dsm_malloc returned NULL");
    dsm_bcast(&board, sizeof board, 0);
    struct raw_udp sock;
    raw_udp_open(&sock);
    b.fd = sock.fd;
    board->node[b.me].addr = sock.self.sin_addr.s_addr;
    board->node[b.me].port = sock.self.sin_port;
    board->node[b.me].startup_us = startup_us;
    dsm_barrier();
    for (int i = 0; i < b.nodes; i++) {
        b.addr[i].sin_family = AF_INET;
        b.addr[i].sin_addr.s_addr = board->node[i].addr;
        b.addr[i].sin_port = (in_port_t)board->node[i].port;
        if (!b.addr[i].sin_port)
            bench_fail("node %d's socket address did not come through shared memory", i);
    }
    double slowest = 0;
    if (b.me == 0)
        for (int i = 0; i < b.nodes; i++)
            if (board->node[i].startup_us > slowest)
                slowest = board->node[i].startup_us;
    dsm_barrier();

    double *raw = calloc((size_t)rounds, sizeof *raw), *dsm = calloc((size_t)rounds, sizeof *dsm);
    if (!raw || !dsm)
        bench_fail("out of memory");
    int warm = iters / 10 > 0 ? iters / 10 : 1;
    for (int r = 0; r < rounds; r++) {
        /* Raw first: every node is in the loop before the first arrival
         * can be missed, since arrivals wait in the socket. */
        dsm_barrier();
        for (int i = 0; i < warm; i++)
            raw_tree_barrier(&b);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < iters; i++)
            raw_tree_barrier(&b);
        raw[r] = (double)(bench_now_ns() - t0) / 1e3 / iters;

        dsm_barrier();
        for (int i = 0; i < warm; i++)
            dsm_barrier();
        t0 = bench_now_ns();
        for (int i = 0; i < iters; i++)
            dsm_barrier();
        dsm[r] = (double)(bench_now_ns() - t0) / 1e3 / iters;
        if (b.me == 0)
            printf("round %d: raw tree %9.1f us  dsm %9.1f us  ratio %5.2f\n", r + 1, raw[r], dsm[r],
                   dsm[r] / raw[r]);
    }
    /* dsm_bcast: node 0's, then the last node's, back to back. Node 0
     * waits for the last node's, which that node sends only once node 0's
     * reached it: a round is two broadcasts' latency to the farthest node. */
    double *bc = calloc((size_t)rounds, sizeof *bc);
    if (!bc)
        bench_fail("out of memory");
    for (int r = 0; r < rounds; r++) {
        uint64_t x = 0;
        dsm_barrier();
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < iters; i++) {
            if (b.me == 0)
                x = (uint64_t)i;
            dsm_bcast(&x, sizeof x, 0);
            if (x != (uint64_t)i)
                bench_fail("dsm_bcast from node 0 delivered %llu, not %d", (unsigned long long)x, i);
            dsm_bcast(&x, sizeof x, b.nodes - 1);
        }
        bc[r] = (double)(bench_now_ns() - t0) / 1e3 / iters;
        if (b.me == 0)
            printf("round %d: dsm_bcast from node 0 then node %d: %9.1f us\n", r + 1, b.nodes - 1, bc[r]);
    }
    /* Stragglers of the raw tree's last round (a resent release) may still
     * come: they are told apart by round, and nobody reads them now. */
    if (b.me == 0) {
        printf("barrier_scale: %d nodes: dsm_bcast pair %.1f us (median of round means)\n", b.nodes,
               median(bc, rounds));
        double mr = median(raw, rounds), md = median(dsm, rounds);
        printf("barrier_scale: %d nodes, fan-out %d, %d rounds of %d: raw tree %.1f us, dsm %.1f us "
               "(medians of round means), dsm/raw %.2f%s; startup (slowest node) %.3f s\n",
               b.nodes, b.k, rounds, iters, mr, md, md / mr,
               b.nodes == 64 ? (md / mr <= 2.0 ? ", target <= 2 met" : ", target <= 2 MISSED") : "",
               slowest / 1e6);
    }
    if (b.resends)
        fprintf(stderr, "barrier_scale: node %d resent %llu raw arrivals\n", b.me,
                (unsigned long long)b.resends);
    uint64_t t_finish = bench_now_ns();
    dsm_finish();
    if (b.me == 0)
        printf("barrier_scale: dsm_finish on node 0 took %.3f s\n", (double)(bench_now_ns() - t_finish) / 1e9);
    return 0;
}
