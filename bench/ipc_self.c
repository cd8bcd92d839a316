/*
 * ipc_self.c — the CPU cost of a port message, alone: one node sends to a
 * port of its own and takes the message, again and again. The whole path
 * runs on one thread (the send call, the transport to its own socket,
 * delivery, the port, the receive call), with no other process to wake
 * or wait for, so the median moves only with the work done, not with the
 * scheduling that makes ipc_pingpong's figures drift on a shared machine:
 * the figure to compare builds by (docs/performance.md, "Port rights").
 *
 *   dsmrun -n 1 build/bench/ipc_self [--bytes N] [--ool] [--iters N]
 *
 * --bytes N of inline data (8 by default), or with --ool one out-of-line
 * region of N bytes (request, grant, pages). Prints the median, 10th and
 * 90th percentile per message, in ns. Uses only the calls that predate
 * port rights, so the same source builds against an older library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "dsm.h"

static unsigned long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 1 ipc_self [--bytes N] [--ool] [--iters N]\n"
               "  --bytes N  the message's size (default 8)\n"
               "  --ool      as one out-of-line region (else inline)\n"
               "  --iters N  messages measured (default 200000; 1000 more warm up)\n");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int bytes = 8, ool = 0, iters = 200000;
    struct arg_option options[] = {
        {"--bytes", ARG_INT, &bytes, "a size 1..67108864", .lo = 1, .hi = 64 << 20},
        {"--ool", ARG_SET, &ool, .value = 1},
        {"--iters", ARG_INT, &iters, "a count 100..100000000", .lo = 100, .hi = 100000000},
        {0}};
    int status = args_read(argc, argv, options, usage, dsm_rank() == 0);
    if (status != ARGS_RUN)
        return status;
    int port = dsm_port_create("self", 4);
    dsm_port_ref self;
    if (port < 0 || dsm_port_lookup(dsm_rank(), "self", 10, &self)) {
        fprintf(stderr, "ipc_self: no port\n");
        return 1;
    }
    unsigned long long *t = malloc(sizeof *t * (size_t)iters);
    size_t span = ((size_t)bytes + 4095) & ~(size_t)4095;
    void *buf = aligned_alloc(4096, span);
    if (!t || !buf)
        return 1;
    memset(buf, 1, (size_t)bytes);
    struct dsm_ool region = {.addr = buf, .len = (size_t)bytes};
    int warmup = 1000;
    for (int i = 0; i < warmup + iters; i++) {
        unsigned long long t0 = now_ns();
        int rc = ool ? dsm_msg_send(&self, &i, sizeof i, &region, 1, 10, NULL)
                     : dsm_msg_send(&self, buf, (size_t)bytes, NULL, 0, 10, NULL);
        struct dsm_msg m;
        if (rc || dsm_msg_recv(port, &m, 10)) {
            fprintf(stderr, "ipc_self: message %d lost\n", i);
            return 1;
        }
        dsm_msg_free(&m);
        if (i >= warmup)
            t[i - warmup] = now_ns() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp);
    printf("ipc_self: %d B %s, %d messages: median %llu ns, p10 %llu ns, p90 %llu ns\n", bytes,
           ool ? "out of line" : "inline", iters, t[iters / 2], t[iters / 10],
           t[(size_t)iters * 9 / 10]);
    free(t);
    free(buf);
    dsm_finish();
    return 0;
}
