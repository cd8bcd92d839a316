/*
 * ipc_stream.c — throughput of dsm's port messages from node 0 to node 1
 * against raw UDP between the same two processes, in one run (seed 004,
 * Fig. 7: throughput of out-of-line data).
 *
 *   dsmrun -n 2 build/bench/ipc_stream [--mib N] [--rounds N] [--quick] [--pin app|node|none]
 *
 * Node 0 streams to a port on node 1, which takes and frees every message:
 *   - messages of one 8 KiB out-of-line page each (the unit a page fetch
 *     moves), and the same 8 KiB as inline data;
 *   - messages of one 1 MiB out-of-line region (128 pages, granted a window
 *     at a time).
 * The baseline is raw UDP (raw_udp.h) streaming 8 KiB datagrams over the
 * same loopback, both paced by a credit window (the fair limit: like dsm it
 * never outruns the receiver) and unpaced ("blast", which may lose
 * datagrams when the receiver falls behind); and, for the 1 MiB messages,
 * which dsm's transport sends in datagrams of DSM_NET_DATAGRAM (60 KiB),
 * raw UDP windowed in datagrams of that size, the like-for-like limit. Two
 * more raw streams bound what dsm can reach with 1 MiB messages: "raw1m"
 * sends 1 MiB messages in such datagrams from and into whole 1 MiB
 * buffers (raw60 reuses one cache-warm 60 KiB), and "raw1mc" also copies
 * each message before sending it, as dsm_msg_send's copy semantics require
 * of any implementation. Only what arrived counts, and the loss is reported. Every stream ends when node 1 reports, over dsm, what it got; node
 * 0 times from its first send to that report.
 *
 * The measurements alternate in rounds (the order rotating), and each is
 * summarized by the median of its rounds, since absolute speed on this
 * shared machine drifts; the ratios to raw UDP are what to compare. Each
 * node's application thread is bound to a CPU of its own, as in
 * ipc_pingpong (--pin).
 * Node 0 prints; both exit 1 on any lost or late message, 2 on a bad option.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm.h"
#include "raw_udp.h"

#define MSG_TIMEOUT  10.0 /* seconds; a live peer takes a message within ms */
#define QUEUE_LIMIT  64   /* the stream port's: enough that flow control rarely holds the sender */
#define PAGE_BYTES   8192u
#define BIG_BYTES    (1u << 20)
#define RAW_WINDOW   64   /* datagrams, as many as dsm's transport window (DSM_NET_WINDOW) */
#define RAW_BIG_DGRAM 61440u /* dsm's own datagram payload (DSM_NET_DATAGRAM's default) */
#define MAX_ROUNDS   64
#define STRING(x)    STRING_(x) /* MAX_ROUNDS in --rounds' `want` */
#define STRING_(x)   #x

enum stream {
    S_DSM_OOL_PAGE,
    S_DSM_INLINE_PAGE,
    S_DSM_OOL_BIG,
    S_RAW_WINDOW,
    S_RAW_BLAST,
    S_RAW_BIG,
    S_RAW_BIG_MSG,
    S_RAW_BIG_COPY,
    S_COUNT
};

/* Short names for --streams. */
static const char *const stream_key[S_COUNT] = {
    [S_DSM_OOL_PAGE] = "ool", [S_DSM_INLINE_PAGE] = "inline", [S_DSM_OOL_BIG] = "big",
    [S_RAW_WINDOW] = "raw", [S_RAW_BLAST] = "blast", [S_RAW_BIG] = "raw60",
    [S_RAW_BIG_MSG] = "raw1m", [S_RAW_BIG_COPY] = "raw1mc",
};

static const char *const stream_name[S_COUNT] = {
    [S_DSM_OOL_PAGE] = "dsm 8 KiB OOL page/msg",
    [S_DSM_INLINE_PAGE] = "dsm 8 KiB inline/msg",
    [S_DSM_OOL_BIG] = "dsm 1 MiB OOL/msg",
    [S_RAW_WINDOW] = "raw UDP 8 KiB, window",
    [S_RAW_BLAST] = "raw UDP 8 KiB, blast",
    [S_RAW_BIG] = "raw UDP 60 KiB, window",
    [S_RAW_BIG_MSG] = "raw 1 MiB in 60 KiB",
    [S_RAW_BIG_COPY] = "raw 1 MiB, copied first",
};

/* The ratio columns' headings, one per raw stream. */
static const char *const raw_column[S_COUNT] = {
    [S_RAW_WINDOW] = "window", [S_RAW_BLAST] = "blast", [S_RAW_BIG] = "60 KiB",
    [S_RAW_BIG_MSG] = "1 MiB", [S_RAW_BIG_COPY] = "+copy",
};

/* Payload bytes per message (raw UDP: per message, one datagram but for
 * the 1 MiB streams) of each stream. */
static size_t unit_bytes(enum stream s)
{
    switch (s) {
    case S_DSM_OOL_BIG:
    case S_RAW_BIG_MSG:
    case S_RAW_BIG_COPY: return BIG_BYTES;
    case S_RAW_BIG: return RAW_BIG_DGRAM;
    default: return PAGE_BYTES;
    }
}


struct result {
    double   mbps[MAX_ROUNDS];
    uint64_t sent, received, stalls; /* raw UDP: datagrams, over all rounds */
};

struct bench {
    int              me;
    unsigned         rounds;
    uint64_t         bytes;  /* per measurement */
    enum bench_pin   pin;
    int              port;   /* node 1's stream port (unused on node 0) */
    dsm_port_ref     stream; /* node 1's stream port */
    struct bench_ctl ctl;
    struct raw_udp   udp;
    unsigned char   *big;    /* BIG_BYTES, page-aligned: OOL source, or raw UDP's buffer */
    unsigned char   *stage;  /* node 0: BIG_BYTES, raw1mc's copy; node 1: raw UDP's receive
                                buffer, a whole 1 MiB message's datagram slots */
    unsigned char   *inl;    /* PAGE_BYTES of inline data */
    struct result    res[S_COUNT];
    bool             run[S_COUNT]; /* the streams measured (--streams) */
};

/* How a raw stream cuts its messages into datagrams. */
static struct raw_stream_shape raw_shape(const struct bench *b, enum stream s)
{
    size_t unit = unit_bytes(s);
    bool big = s == S_RAW_BIG_MSG || s == S_RAW_BIG_COPY;
    return (struct raw_stream_shape){.msg = unit,
                                     .dgram = big ? RAW_BIG_DGRAM : unit,
                                     .stage = s == S_RAW_BIG_COPY && b->me == 0 ? b->stage : NULL};
}

/* ---- dsm ------------------------------------------------------------------ */

/* Sends `count` messages of stream s; returns seconds from the first send to
 * node 1's report that it took them all. */
static double dsm_stream_send(struct bench *b, enum stream s, uint64_t count, uint16_t phase)
{
    struct dsm_ool region = {.addr = b->big, .len = unit_bytes(s)};
    bench_ctl_expect(&b->ctl, CTL_READY, phase);
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < count; i++) {
        int rc;
        if (s == S_DSM_INLINE_PAGE) {
            memcpy(b->inl, &i, sizeof i); /* lets the receiver check the order */
            rc = dsm_msg_send(&b->stream, b->inl, PAGE_BYTES, NULL, 0, MSG_TIMEOUT, NULL);
        } else {
            rc = dsm_msg_send(&b->stream, &i, sizeof i, &region, 1, MSG_TIMEOUT, NULL);
        }
        if (rc)
            bench_fail("%s: send %llu: %s", stream_name[s], (unsigned long long)i, strerror(-rc));
    }
    struct bench_ctl_msg done = bench_ctl_expect(&b->ctl, CTL_DONE, phase);
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    if (done.a != count || done.b != count * unit_bytes(s))
        bench_fail("%s: node 1 took %llu messages, %llu bytes", stream_name[s],
                   (unsigned long long)done.a, (unsigned long long)done.b);
    return secs;
}

static void dsm_stream_recv(struct bench *b, enum stream s, uint64_t count, uint16_t phase)
{
    uint64_t bytes = 0;
    bench_ctl_send(&b->ctl, CTL_READY, phase, 0, 0);
    for (uint64_t i = 0; i < count; i++) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(b->port, &m, MSG_TIMEOUT);
        if (rc)
            bench_fail("%s: message %llu of %llu not received: %s", stream_name[s],
                       (unsigned long long)i, (unsigned long long)count, strerror(-rc));
        uint64_t idx;
        bool inl = s == S_DSM_INLINE_PAGE;
        size_t got = inl ? m.len : (m.nool == 1 ? m.ool[0].len : 0);
        if (m.len < sizeof idx || (inl ? m.nool != 0 : m.nool != 1) || got != unit_bytes(s))
            bench_fail("%s: message %llu has the wrong shape", stream_name[s],
                       (unsigned long long)i);
        memcpy(&idx, m.data, sizeof idx);
        if (idx != i)
            bench_fail("%s: message %llu arrived as %llu", stream_name[s], (unsigned long long)idx,
                       (unsigned long long)i);
        bytes += got;
        dsm_msg_free(&m);
    }
    bench_ctl_send(&b->ctl, CTL_DONE, phase, count, bytes);
}

/* ---- one measurement --------------------------------------------------------- */

static void run_phase(struct bench *b, enum stream s, unsigned round, uint16_t phase)
{
    uint64_t count = b->bytes / unit_bytes(s);
    bool raw = s >= S_RAW_WINDOW;
    unsigned window = s == S_RAW_BLAST ? 0 : RAW_WINDOW;
    struct raw_stream_shape shape = raw_shape(b, s);
    if (b->me == 1) {
        if (raw)
            raw_udp_stream_recv(&b->udp, &b->ctl, phase, b->stage, &shape, window);
        else
            dsm_stream_recv(b, s, count, phase);
        return;
    }
    struct result *r = &b->res[s];
    if (raw) {
        uint64_t dgrams = count * ((shape.msg + shape.dgram - 1) / shape.dgram);
        struct raw_stream_result rr = raw_udp_stream_send(&b->udp, &b->ctl, phase, b->big, &shape,
                                                          dgrams, window);
        r->sent += rr.sent;
        r->received += rr.received;
        r->stalls += rr.stalls;
        r->mbps[round] = (double)rr.bytes / rr.seconds / 1e6;
    } else {
        double secs = dsm_stream_send(b, s, count, phase);
        r->mbps[round] = (double)(count * unit_bytes(s)) / secs / 1e6;
    }
}

/* ---- report ------------------------------------------------------------------ */

static double median_of(const struct result *r, unsigned rounds, double *lo, double *hi)
{
    double v[MAX_ROUNDS];
    memcpy(v, r->mbps, rounds * sizeof *v);
    double med = bench_median(v, rounds); /* sorts v */
    *lo = v[0];
    *hi = v[rounds - 1];
    return med;
}

static void report(struct bench *b)
{
    double med[S_COUNT], lo[S_COUNT], hi[S_COUNT];
    for (int s = 0; s < S_COUNT; s++)
        med[s] = median_of(&b->res[s], b->rounds, &lo[s], &hi[s]);

    printf("ipc_stream: throughput node 0 -> node 1, dsm ports vs raw UDP, same 2 processes, "
           "one run\n");
    printf("  %.0f MiB of payload per measurement, %u rounds, order rotating each round;\n"
           "  MB/s = 10^6 payload bytes received per second, first send to the receiver's report;\n"
           "  med = median of the rounds; ratios compare medians\n",
           (double)b->bytes / (1 << 20), b->rounds);
    printf("  dsm: port queue limit %u; raw UDP: rcvbuf %d, sndbuf %d bytes\n", QUEUE_LIMIT,
           b->udp.rcvbuf, b->udp.sndbuf);
    printf("  %s\n\n", bench_pin_describe(b->pin));

    printf("%-24s %6s %8s %17s |", "stream", "msgs", "MB/s med", "least .. greatest");
    for (int raw = S_RAW_WINDOW; raw < S_COUNT; raw++)
        printf(" %7s", "dsm/raw");
    printf("\n%-24s %6s %8s %17s |", "", "/round", "", "");
    for (int raw = S_RAW_WINDOW; raw < S_COUNT; raw++)
        printf(" %7s", raw_column[raw]);
    printf("\n");
    for (int s = 0; s < S_COUNT; s++) {
        if (!b->run[s])
            continue;
        printf("%-24s %6llu %8.0f %7.0f .. %7.0f", stream_name[s],
               (unsigned long long)(b->bytes / unit_bytes((enum stream)s)), med[s], lo[s], hi[s]);
        if (s < S_RAW_WINDOW) {
            printf(" |");
            for (int raw = S_RAW_WINDOW; raw < S_COUNT; raw++)
                if (b->run[raw])
                    printf(" %7.2f", med[s] / med[raw]);
                else
                    printf(" %7s", "-");
            printf("\n");
        } else {
            printf(" |\n");
        }
    }
    for (int s = S_RAW_WINDOW; s < S_COUNT; s++) {
        if (!b->run[s])
            continue;
        const struct result *r = &b->res[s];
        double loss = r->sent ? 100.0 * (double)(r->sent - r->received) / (double)r->sent : 0;
        printf("  %s: %llu of %llu datagrams lost (%.2f %%)", stream_name[s],
               (unsigned long long)(r->sent - r->received), (unsigned long long)r->sent, loss);
        if (s != S_RAW_BLAST)
            printf(", window given up as lost %llu times", (unsigned long long)r->stalls);
        printf("\n");
    }
    printf("\nNotes:\n"
           "  The headline ratio is to raw UDP paced by a credit window: at most %u datagrams\n"
           "  unconfirmed, the receiver confirming every %u; a window unconfirmed for %.0f ms\n"
           "  is taken as lost. \"blast\" sends back to back with no pacing. \"60 KiB\" is the\n"
           "  same window of datagrams as large as dsm's own (DSM_NET_DATAGRAM): the limit for\n"
           "  large messages, which dsm sends in datagrams of that size. \"1 MiB\" moves 1 MiB\n"
           "  messages in such datagrams, from and into whole 1 MiB buffers as dsm does (not\n"
           "  one cache-warm 60 KiB); \"+copy\" also copies each message before sending it,\n"
           "  the least work dsm_msg_send's copy semantics allow (no authentication).\n"
           "  dsm messages carry 8 B inline (a sequence number) besides an OOL region; an\n"
           "  8 KiB inline message is above DSM_IPC_INLINE_MAX (default 1024 B), so every\n"
           "  message here takes request/grant (REQ, GRANT, KMSG[, PAGEs]) and is accepted.\n",
           RAW_WINDOW, RAW_WINDOW / RAW_CREDIT_EVERY, RAW_STALL_S * 1e3);
}

/* ---- main -------------------------------------------------------------------- */

/* Parses --streams' list into run[S_COUNT]; -1 on an unknown or empty
 * name. An ARG_CUSTOM parser (args.h). */
static int parse_streams(const char *list, void *run)
{
    bool any = false;
    bool want[S_COUNT] = {false};
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int s = 0; s < S_COUNT; s++)
            if (strlen(stream_key[s]) == n && !strncmp(p, stream_key[s], n))
                found = s;
        if (found < 0)
            return -1;
        want[found] = any = true;
        p += n + (p[n] == ',');
    }
    if (!any)
        return -1;
    memcpy(run, want, sizeof want);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 2 ipc_stream [--mib N] [--rounds N] [--quick] [--streams L]\n"
               "                              [--pin app|node|none]\n"
               "  --mib N     MiB of payload per measurement (default 128)\n"
               "  --rounds N  rounds of all the measurements (default 11, at most %d)\n"
               "  --quick     16 MiB, 3 rounds (a ~1 s smoke test)\n"
               "  --streams L measure only the streams in the comma-separated list L of\n"
               "              ool, inline, big, raw, blast, raw60, raw1m, raw1mc (default: all)\n"
               "  --pin app   each node's application thread on a CPU of its own (default)\n"
               "  --pin node  all of each node's threads, dsm's included, on one CPU each\n"
               "  --pin none  leave every thread to the scheduler\n",
            MAX_ROUNDS);
}

int main(int argc, char **argv)
{
    /* Each result as it is measured: under dsmrun stdout is a pipe, and a
     * long run on a loaded machine would otherwise show nothing until it ends. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    dsm_startup(&argc, &argv);
    static struct bench b;
    b.me = dsm_rank();
    int mib = 128, rounds = 11;
    for (int s = 0; s < S_COUNT; s++)
        b.run[s] = true;
    struct arg_option options[] = {
        {"--mib", ARG_INT, &mib, "a MiB count 1..4096", .lo = 1, .hi = 4096},
        {"--rounds", ARG_INT, &rounds, "a round count 1.." STRING(MAX_ROUNDS), .lo = 1, .hi = MAX_ROUNDS},
        {"--quick", ARG_SET, &mib, .value = 16},
        {"--quick", ARG_SET, &rounds, .value = 3},
        {"--streams", ARG_CUSTOM, b.run, "a comma-separated list of stream names",
         .parse = parse_streams},
        BENCH_PIN_OPTION(&b.pin),
        {0}};
    int status = args_read(argc, argv, options, usage, b.me == 0);
    if (status != ARGS_RUN)
        return status;
    bench_pair_start(b.pin, &b.ctl, &b.udp);
    b.rounds = (unsigned)rounds;
    b.bytes = (uint64_t)mib << 20;

    b.port = dsm_port_create("stream", QUEUE_LIMIT);
    if (b.port < 0)
        bench_fail("cannot create the stream port: %s", strerror(-b.port));
    int rc = dsm_port_lookup(1, "stream", MSG_TIMEOUT, &b.stream);
    if (rc)
        bench_fail("cannot find node 1's stream port: %s", strerror(-rc));

    /* Page-aligned, as OOL regions must be; touched so no first-use fault
     * lands in a measurement. */
    b.big = aligned_alloc((size_t)sysconf(_SC_PAGESIZE), BIG_BYTES);
    b.inl = malloc(PAGE_BYTES);
    size_t span = (BIG_BYTES + RAW_BIG_DGRAM - 1) / RAW_BIG_DGRAM * RAW_BIG_DGRAM;
    b.stage = aligned_alloc((size_t)sysconf(_SC_PAGESIZE), span);
    if (!b.big || !b.inl || !b.stage)
        bench_fail("out of memory");
    memset(b.big, 0xA5, BIG_BYTES);
    memset(b.inl, 0x5A, PAGE_BYTES);
    memset(b.stage, 0x3C, span);

    /* Both nodes walk the same schedule, so each knows what comes next. */
    uint16_t phase = 0;
    for (unsigned round = 0; round < b.rounds; round++)
        for (int j = 0; j < S_COUNT; j++)
            if (b.run[(round + (unsigned)j) % S_COUNT])
                run_phase(&b, (enum stream)((round + (unsigned)j) % S_COUNT), round, ++phase);

    if (b.me == 0)
        report(&b);
    raw_udp_close(&b.udp);
    dsm_finish();
    return 0;
}
