/*
 * ipc_pingpong.c — latency of dsm's port messages against raw UDP between
 * the same two processes, in one run (seed 004, Fig. 5: latency of inline
 * data by size).
 *
 *   dsmrun -n 2 build/bench/ipc_pingpong [--iters N] [--quick] [--pin app|node|none]
 *   dsmrun -n 2 --trace FILE build/bench/ipc_pingpong --breakdown [--iters N]
 *
 * Node 0 sends inline data of 8 B, 440 B, 1 KiB, 8 KiB and 64 KiB to a port
 * on node 1, which sends the same bytes back to a port on node 0; one-way
 * latency is half the round trip. Then an RPC of the shape of a page fetch:
 * dsm_msg_call with an 8 B request and a pre-granted 8 KiB reply.
 *
 * The same patterns run over a plain UDP socket pair (raw_udp.h), once with
 * blocking recvfrom (the plain way, which pays a cross-CPU wake-up per
 * message) and once busy-polling recvfrom(MSG_DONTWAIT). Absolute times on
 * this shared machine drift, so the three methods alternate in rounds (the
 * order rotating), each cell is the median of its per-round medians, and
 * the result that matters is the ratio to raw UDP measured alongside.
 *
 * Each node's application thread is bound to a CPU of its own, as if the
 * nodes were machines, and dsm's own threads are left to the scheduler
 * (--pin): left alone, the scheduler keeps both nodes on one CPU for seconds
 * at a time, where a blocking hand-off costs 2-5 µs instead of 24-30 µs and
 * busy-polling waits out time slices, so whole rounds come out several
 * times faster or slower at random (the spread table shows it).
 *
 * --breakdown (seed 004, Fig. 6: a 4-byte message's latency by protocol
 * step): only dsm's ping-pong of 4 bytes, traced (dsmrun --trace), the
 * statistics window (dsm_stats_reset) around the round trips after a
 * warm-up; `bench/model fig6` runs it and splits each message's latency
 * from the traces (tools/dsmtrace.py, breakdown).
 *
 * Node 0 prints; both exit 1 on any lost or late message (every wait is
 * bounded), 2 on a bad option.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"
#include "raw_udp.h"

#define MSG_TIMEOUT 10.0 /* seconds; a live peer answers within ms */
#define MAX_BYTES   (64u << 10)
#define MAX_ROUNDS  32

enum method { M_DSM, M_RAW_BLOCK, M_RAW_BUSY, M_COUNT };

struct row {
    const char *label;
    size_t      req, rep; /* bytes each way */
    bool        call;     /* dsm_msg_call / dsm_msg_reply instead of send / send */
};

static const struct row rows[] = {
    {"8 B", 8, 8, false},
    {"440 B", 440, 440, false},
    {"1 KiB", 1024, 1024, false},
    {"8 KiB", 8192, 8192, false},
    {"64 KiB", 65536, 65536, false},
    {"8 B->8 KiB", 8, 8192, true},
};
#define NROWS (sizeof rows / sizeof rows[0])

/* Everything measured for one row and method. */
struct cell {
    double   round_median[MAX_ROUNDS]; /* round trip, µs */
    double  *all;                      /* every recorded round trip, µs */
    size_t   nall;
    uint64_t resends;                  /* raw UDP only */
};

struct bench {
    int              me;
    unsigned         rounds, per_round, warmup;
    enum bench_pin   pin;
    int              port;   /* our ping-pong port */
    dsm_port_ref     peer;   /* the other node's */
    struct bench_ctl ctl;
    struct raw_udp   udp;
    unsigned char   *req, *rep; /* raw_udp_span(MAX_BYTES) each */
    double          *rtt;       /* per_round */
    struct cell      cells[NROWS][M_COUNT];
};

/* ---- dsm ------------------------------------------------------------------ */

static void dsm_client(struct bench *b, const struct row *r, double *rtt_us)
{
    for (unsigned k = 0; k < b->warmup + b->per_round; k++) {
        uint64_t tag = ((uint64_t)b->me << 32) | k; /* to check the answer is this round trip's */
        memcpy(b->req, &tag, sizeof tag);
        uint64_t t0 = bench_now_ns();
        if (r->call) {
            long n = dsm_msg_call(&b->peer, b->req, r->req, b->rep, r->rep, MSG_TIMEOUT);
            if (n != (long)r->rep)
                bench_fail("call %u of %s: %ld", k, r->label, n);
        } else {
            int rc = dsm_msg_send(&b->peer, b->req, r->req, NULL, 0, MSG_TIMEOUT, NULL);
            if (rc)
                bench_fail("send %u of %s: %s", k, r->label, strerror(-rc));
            struct dsm_msg m;
            rc = dsm_msg_recv(b->port, &m, MSG_TIMEOUT);
            if (rc)
                bench_fail("no answer %u of %s: %s", k, r->label, strerror(-rc));
            if (m.len != r->rep || m.nool || memcmp(m.data, &tag, sizeof tag))
                bench_fail("wrong answer %u of %s (%zu bytes)", k, r->label, m.len);
            dsm_msg_free(&m);
        }
        if (k >= b->warmup)
            rtt_us[k - b->warmup] = (double)(bench_now_ns() - t0) / 1e3;
    }
}

static void dsm_server(struct bench *b, const struct row *r)
{
    for (unsigned k = 0; k < b->warmup + b->per_round; k++) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(b->port, &m, MSG_TIMEOUT);
        if (rc)
            bench_fail("no request %u of %s: %s", k, r->label, strerror(-rc));
        if (m.len != r->req || m.nool || (r->call != (m.reply_token != 0)))
            bench_fail("wrong request %u of %s (%zu bytes)", k, r->label, m.len);
        if (r->call) {
            rc = dsm_msg_reply(&m, b->rep, r->rep);
        } else {
            rc = dsm_msg_send(&b->peer, m.data, m.len, NULL, 0, MSG_TIMEOUT, NULL);
        }
        if (rc)
            bench_fail("answer %u of %s: %s", k, r->label, strerror(-rc));
        dsm_msg_free(&m);
    }
}

/* ---- one phase: a row, a method, a round ---------------------------------- */

static void run_phase(struct bench *b, size_t ri, enum method me, unsigned round, uint16_t phase)
{
    const struct row *r = &rows[ri];
    enum raw_wait how = me == M_RAW_BUSY ? RAW_BUSY : RAW_BLOCKING;
    struct cell *c = &b->cells[ri][me];
    if (b->me == 1) {
        if (me == M_DSM)
            dsm_server(b, r);
        else
            raw_udp_pingpong_server(&b->udp, &b->ctl, phase, b->req, r->req, b->rep, r->rep, how);
        return;
    }
    if (me == M_DSM)
        dsm_client(b, r, b->rtt);
    else
        raw_udp_pingpong_client(&b->udp, &b->ctl, phase, b->req, r->req, b->rep, r->rep, how,
                                b->warmup, b->per_round, b->rtt, &c->resends);
    memcpy(c->all + c->nall, b->rtt, b->per_round * sizeof *b->rtt);
    c->nall += b->per_round;
    c->round_median[round] = bench_median(b->rtt, b->per_round);
}

/* ---- report ---------------------------------------------------------------- */

static size_t inline_max(void)
{
    /* The library does not export it; read the setting it reads. */
    const char *s = getenv("DSM_IPC_INLINE_MAX");
    char *end;
    long v = s ? strtol(s, &end, 10) : 1024;
    return s && (*end || v < 0) ? 1024 : (size_t)v;
}

static const char *dsm_path(const struct row *r)
{
    if (r->call)
        return r->req <= inline_max() ? "SMALL + REPLY" : "REQ,GRANT,KMSG + REPLY";
    return r->req <= inline_max() ? "fast: SMALL" : "REQ,GRANT,KMSG";
}

/* Median, least and greatest of the per-round medians and the 90th
 * percentile of all round trips, in µs, scaled. */
struct summary {
    double med, lo, hi, p90;
};

static struct summary summarize(struct cell *c, unsigned rounds, double scale)
{
    double m[MAX_ROUNDS];
    memcpy(m, c->round_median, rounds * sizeof *m);
    struct summary s;
    s.med = bench_median(m, rounds) * scale; /* sorts m */
    s.lo = m[0] * scale;
    s.hi = m[rounds - 1] * scale;
    s.p90 = bench_quantile(c->all, c->nall, 0.9) * scale;
    return s;
}

static void print_row(struct bench *b, size_t ri, double scale)
{
    const struct row *r = &rows[ri];
    double med[M_COUNT], p90[M_COUNT];
    for (int m = 0; m < M_COUNT; m++) {
        struct summary s = summarize(&b->cells[ri][m], b->rounds, scale);
        med[m] = s.med;
        p90[m] = s.p90;
    }
    char path[48];
    snprintf(path, sizeof path, "%s%s", dsm_path(r),
             raw_udp_parts(r->req) > 1 || raw_udp_parts(r->rep) > 1 ? " *" : "");
    printf("%-10s %-22s %7.1f %6.1f | %7.1f %6.1f %4llu | %7.1f %6.1f %4llu | %6.2f %7.2f\n",
           r->label, path, med[M_DSM], p90[M_DSM], med[M_RAW_BLOCK], p90[M_RAW_BLOCK],
           (unsigned long long)b->cells[ri][M_RAW_BLOCK].resends, med[M_RAW_BUSY], p90[M_RAW_BUSY],
           (unsigned long long)b->cells[ri][M_RAW_BUSY].resends, med[M_DSM] / med[M_RAW_BLOCK],
           med[M_DSM] / med[M_RAW_BUSY]);
}

static void print_spread(struct bench *b)
{
    printf("%-10s %17s %17s %17s\n", "", "dsm", "raw-blk", "rawbusy");
    for (size_t ri = 0; ri < NROWS; ri++) {
        printf("%-10s", rows[ri].label);
        for (int m = 0; m < M_COUNT; m++) {
            struct summary s = summarize(&b->cells[ri][m], b->rounds, rows[ri].call ? 1.0 : 0.5);
            printf(" %7.1f .. %6.1f", s.lo, s.hi);
        }
        printf("\n");
    }
}

static void print_header(const char *what)
{
    printf("%-10s %-22s %7s %6s | %7s %6s %4s | %7s %6s %4s | %6s %7s\n", what, "dsm path",
           "dsm", "p90", "raw-blk", "p90", "rsnd", "rawbusy", "p90", "rsnd", "dsm/", "dsm/");
    printf("%-10s %-22s %7s %6s | %7s %6s %4s | %7s %6s %4s | %6s %7s\n", "", "(each way)",
           "med", "", "med", "", "", "med", "", "", "rawblk", "rawbusy");
}

/* What is measured, printed before the measuring starts: the results come
 * only when every cell is done (tens of seconds; more on a loaded machine). */
static void preamble(struct bench *b)
{
    printf("ipc_pingpong: dsm ports vs raw UDP between the same 2 processes, in one run\n");
    printf("  %u rounds x %u round trips (+%u warm-up) per cell; methods alternate each round;\n"
           "  med = median of per-round medians, p90 = 90th percentile of all round trips;\n"
           "  ratios compare medians, the headline one to raw UDP with BLOCKING recvfrom;\n"
           "  rsnd = raw UDP requests resent after %.0f ms without a reply\n",
           b->rounds, b->per_round, b->warmup, RAW_PP_RESEND_S * 1e3);
    printf("  raw UDP: own socket per process on 127.0.0.1, rcvbuf %d, sndbuf %d bytes\n",
           b->udp.rcvbuf, b->udp.sndbuf);
    printf("  %s\n", bench_pin_describe(b->pin));
    printf("  measuring %zu rows x %d methods x %u rounds; the tables follow when all are done%s\n\n",
           (size_t)NROWS, M_COUNT, b->rounds,
           b->per_round < 1000 ? "" : " (--quick: a ~1 s smoke test on an idle machine)");
}

static void report(struct bench *b)
{
    printf("One-way latency of inline data, µs (half the round trip)\n");
    print_header("size");
    for (size_t ri = 0; ri < NROWS; ri++)
        if (!rows[ri].call)
            print_row(b, ri, 0.5);
    printf("\nRPC round trip, µs (dsm_msg_call with pre-granted reply vs raw request/reply)\n");
    print_header("req->rep");
    for (size_t ri = 0; ri < NROWS; ri++)
        if (rows[ri].call)
            print_row(b, ri, 1.0);
    printf("\nSpread: least .. greatest per-round median, µs (one-way; RPC: round trip)\n");
    print_spread(b);

    printf("\nNotes:\n"
           "  dsm path: the port protocol's messages per direction (message-accept\n"
           "  notifications and transport acks not counted). Inline data up to\n"
           "  DSM_IPC_INLINE_MAX = %zu B takes the one-message fast path (SMALL); larger\n"
           "  takes request/grant (REQ, GRANT, KMSG: 3 messages, 1.5 round trips), as\n"
           "  expected.\n"
           "  * raw UDP carries at most %u B per datagram: 64 KiB goes as 2 datagrams of\n"
           "  32 KiB (dsm's transport also cuts it, at DSM_NET_DATAGRAM).\n",
           inline_max(), RAW_UDP_DGRAM_MAX);
}

/* ---- --breakdown ------------------------------------------------------------ */

static void breakdown(struct bench *b, unsigned iters)
{
    if (!getenv("DSM_TRACE"))
        bench_fail("--breakdown reads the trace: run it under dsmrun --trace FILE (bench/model "
                   "fig6 does, and prints the table)");
    unsigned warmup = iters / 10 < 20 ? 20 : iters / 10;
    struct row r = {"4 B", 4, 4, false};
    for (int phase = 0; phase < 2; phase++) {
        b->warmup = 0;
        b->per_round = phase ? iters : warmup;
        dsm_barrier();
        if (phase)
            dsm_stats_reset(); /* the window the breakdown reads */
        if (b->me == 0)
            dsm_client(b, &r, b->rtt);
        else
            dsm_server(b, &r);
    }
    dsm_stats_freeze();
    if (b->me == 0)
        printf("ipc_pingpong --breakdown: %u round trips of 4 bytes traced (after %u of warm-up), "
               "median %.1f us one way\n", iters, warmup, bench_median(b->rtt, iters) / 2);
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 2 ipc_pingpong [--iters N] [--quick] [--pin app|node|none]\n"
               "       dsmrun -n 2 --trace FILE ipc_pingpong --breakdown [--iters N]\n"
               "  --iters N  round trips per size and method, over all rounds (default 20000)\n"
               "  --quick    few round trips (a ~1 s smoke test)\n"
               "  --pin app  each node's application thread on a CPU of its own (default)\n"
               "  --pin node all of each node's threads, dsm's included, on one CPU each\n"
               "  --pin none leave every thread to the scheduler\n"
               "  --breakdown  4-byte messages only, traced, for bench/model fig6 (seed 004's Fig. 6)\n");
}

int main(int argc, char **argv)
{
    /* Each result as it is measured: under dsmrun stdout is a pipe, and a
     * long run on a loaded machine would otherwise show nothing until it ends. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    dsm_startup(&argc, &argv);
    static struct bench b;
    b.me = dsm_rank();
    int iters = 20000, rounds = 16, split = 0;
    struct arg_option options[] = {
        {"--iters", ARG_INT, &iters, "a round-trip count 1..10000000", .lo = 1, .hi = 10000000},
        {"--quick", ARG_SET, &iters, .value = 1000},
        {"--quick", ARG_SET, &rounds, .value = 4},
        BENCH_PIN_OPTION(&b.pin),
        {"--breakdown", ARG_SET, &split, .value = 1},
        {0}};
    int status = args_read(argc, argv, options, usage, b.me == 0);
    if (status != ARGS_RUN)
        return status;
    b.rounds = (unsigned)rounds;
    bench_pair_start(b.pin, &b.ctl, &b.udp);
    if ((unsigned)iters < b.rounds)
        b.rounds = (unsigned)iters;
    b.per_round = (unsigned)iters / b.rounds;
    b.warmup = b.per_round / 10 < 5 ? 5 : b.per_round / 10;

    b.port = dsm_port_create("pingpong", 4);
    if (b.port < 0)
        bench_fail("cannot create the ping-pong port: %s", strerror(-b.port));
    int rc = dsm_port_lookup(1 - b.me, "pingpong", MSG_TIMEOUT, &b.peer);
    if (rc)
        bench_fail("cannot find node %d's ping-pong port: %s", 1 - b.me, strerror(-rc));

    b.req = aligned_alloc(4096, raw_udp_span(MAX_BYTES));
    b.rep = aligned_alloc(4096, raw_udp_span(MAX_BYTES));
    if (split) {
        if (!(b.rtt = calloc((size_t)iters, sizeof *b.rtt)))
            bench_fail("out of memory");
        breakdown(&b, (unsigned)iters);
        raw_udp_close(&b.udp);
        dsm_finish();
        return 0;
    }
    b.rtt = calloc(b.per_round, sizeof *b.rtt);
    if (!b.req || !b.rep || !b.rtt)
        bench_fail("out of memory");
    memset(b.req, 0xA5, raw_udp_span(MAX_BYTES));
    memset(b.rep, 0x5A, raw_udp_span(MAX_BYTES));
    for (size_t ri = 0; b.me == 0 && ri < NROWS; ri++)
        for (int m = 0; m < M_COUNT; m++)
            if (!(b.cells[ri][m].all = calloc((size_t)b.rounds * b.per_round, sizeof(double))))
                bench_fail("out of memory");

    if (b.me == 0)
        preamble(&b);
    /* Both nodes walk the same schedule, so each knows what comes next. */
    uint16_t phase = 0;
    for (size_t ri = 0; ri < NROWS; ri++)
        for (unsigned round = 0; round < b.rounds; round++)
            for (int j = 0; j < M_COUNT; j++)
                run_phase(&b, ri, (enum method)((round + (unsigned)j) % M_COUNT), round, ++phase);

    if (b.me == 0)
        report(&b);
    raw_udp_close(&b.udp);
    dsm_finish();
    return 0;
}
