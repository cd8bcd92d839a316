/*
 * net_forged_flood.c — what a flood of forged datagrams costs a job (issue
 * 26, "cheap rejection").
 *
 *   dsmrun -n 2 build/bench/net_forged_flood [--rate N] [--rounds N] [--iters N]
 *
 * A process forked by node 1 sends node 0 forged datagrams of the largest
 * size (DSM_NET_DATAGRAM's default payload), with the right job id, ranks
 * and shape but sealed with a key that is not the job's: only
 * authentication can reject them. Meanwhile the two nodes pass 8 KiB port
 * messages back and forth (--iters round trips a measurement). Rounds
 * alternate between no flood and --rate forged datagrams per second (paced
 * in bursts every millisecond), and each is summarised by its median round,
 * since speed on a shared machine drifts. Node 0 prints both and the
 * slowdown, and the number of forged datagrams it dropped.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "args.h"
#include "base/stats.h"
#include "dsm.h"
#include "net/wire.h"

#define MAX_ROUNDS 32
#define PAYLOAD    61440u /* DSM_NET_DATAGRAM's default */
#define MSG_BYTES  8192u

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct sockaddr_in node_addr(int rank)
{
    const char *p = getenv("DSM_PEERS");
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (!p)
        return a;
    for (int i = 0; i < rank && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    char host[32];
    int port;
    if (p && sscanf(p, "%31[^:]:%d", host, &port) == 2) {
        inet_pton(AF_INET, host, &a.sin_addr);
        a.sin_port = htons((uint16_t)port);
    }
    return a;
}

/* The flooder: while *on, `rate` forged datagrams a second to node 0. */
static void flood(_Atomic int *on, _Atomic int *quit, int rate)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    int sndbuf = 8 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    struct sockaddr_in to = node_addr(0);
    const char *job_env = getenv("DSM_JOB_ID");
    uint64_t job = job_env ? strtoull(job_env, NULL, 16) : 0;
    unsigned char *buf = calloc(1, sizeof(struct wire_hdr) + PAYLOAD);
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 13 + 1);
    static struct wire_keys wrong;
    wire_keys_init(&wrong, key, job, 1);
    struct wire_hdr h = {.magic = WIRE_MAGIC, .kind = WIRE_DATA, .flags = WIRE_FIRST | WIRE_LAST,
                         .job = job, .src = 1, .dst = 0, .len = PAYLOAD, .msg_len = PAYLOAD};
    for (uint32_t i = 0; i < PAYLOAD; i++)
        buf[sizeof h + i] = (unsigned char)(i * 7);
    wire_seal(&wrong, &h, wire_payload_hash(&wrong, buf + sizeof h, PAYLOAD));
    memcpy(buf, &h, sizeof h);
    int per_ms = rate / 1000 > 0 ? rate / 1000 : 1;
    double next = now_s();
    while (!atomic_load(quit) && getppid() > 1) {
        if (atomic_load(on))
            for (int i = 0; i < per_ms; i++)
                sendto(s, buf, sizeof h + PAYLOAD, 0, (struct sockaddr *)&to, sizeof to);
        next += 1e-3;
        double d = next - now_s();
        if (d > 0) {
            struct timespec ts = {0, (long)(d * 1e9)};
            nanosleep(&ts, NULL);
        } else if (d < -0.1)
            next = now_s(); /* fell behind: do not burst to catch up */
    }
    _exit(0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 2 net_forged_flood [--rate N] [--rounds N] [--iters N]\n");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    int rate = 16000, rounds = 6, iters = 2000;
    struct arg_option options[] = {
        {"--rate", ARG_INT, &rate, "forged datagrams a second, 1..1000000", .lo = 1, .hi = 1000000},
        {"--rounds", ARG_INT, &rounds, "1..32 (each: one without, one with the flood)", .lo = 1,
         .hi = MAX_ROUNDS},
        {"--iters", ARG_INT, &iters, "round trips a measurement, 1..10000000", .lo = 1, .hi = 1e7},
        {0}};
    int status = args_read(argc, argv, options, usage, me == 0);
    if (status != ARGS_RUN)
        return status;
    if (dsm_nodes() != 2) {
        if (me == 0)
            fprintf(stderr, "net_forged_flood: run it on 2 nodes\n");
        return 2;
    }
    _Atomic int *ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t child = -1;
    if (me == 1) {
        child = fork();
        if (child == 0)
            flood(&ctl[0], &ctl[1], rate);
    }
    int port = dsm_port_create("f", 16);
    dsm_port_ref other;
    if (dsm_port_lookup(1 - me, "f", 30, &other) != 0)
        return 1;
    static unsigned char msg[MSG_BYTES];
    double t[2][MAX_ROUNDS];
    uint64_t dropped0 = stats_get(STAT_NET_AUTH_DROPPED);
    for (int r = 0; r < rounds; r++)
        for (int on = 0; on <= 1; on++) {
            /* node 1 sets the flood, then both start together */
            if (me == 1)
                atomic_store(&ctl[0], on);
            dsm_barrier();
            double t0 = now_s();
            for (int i = 0; i < iters; i++) {
                struct dsm_msg m;
                if (me == 0) {
                    if (dsm_msg_send(&other, msg, sizeof msg, NULL, 0, 30, NULL) ||
                        dsm_msg_recv(port, &m, 30))
                        return 1;
                } else {
                    if (dsm_msg_recv(port, &m, 30) ||
                        dsm_msg_send(&other, msg, sizeof msg, NULL, 0, 30, NULL))
                        return 1;
                }
                dsm_msg_free(&m);
            }
            t[on][r] = now_s() - t0;
        }
    if (me == 1) {
        atomic_store(&ctl[0], 0);
        atomic_store(&ctl[1], 1);
    }
    dsm_barrier();
    if (me == 0) {
        qsort(t[0], (size_t)rounds, sizeof(double), cmp_double);
        qsort(t[1], (size_t)rounds, sizeof(double), cmp_double);
        double a = t[0][rounds / 2], b = t[1][rounds / 2];
        printf("8 KiB round trips: %.1f us without, %.1f us with %d forged %u-byte datagrams/s: "
               "slowdown %.1f%%; forged dropped %llu\n",
               a / iters * 1e6, b / iters * 1e6, rate, PAYLOAD, (b / a - 1) * 100,
               (unsigned long long)(stats_get(STAT_NET_AUTH_DROPPED) - dropped0));
    }
    dsm_finish();
    return 0;
}
