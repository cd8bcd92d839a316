/*
 * trace_cost.c — what one trace record costs (DSM_TRACE; src/base/trace.c).
 *
 *   build/bench/trace_cost [records]       (default 2000000)
 *
 * The cost of tracing a run is its records times this: a message's send
 * is two clock reads and one record, its handling two more reads and one
 * record, a fault one read and one record. Prints the median over 9 rounds
 * of ns per record with its two clock reads (as a send records it), and of
 * the off path: the branch alone. Writes its trace to /tmp and deletes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/trace.h"

#define ROUNDS 9

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    if (n < 1000 || n > 100000000) {
        fprintf(stderr, "usage: trace_cost [records, 1000 .. 100000000]\n");
        return 2;
    }
    double on[ROUNDS], off[ROUNDS];
    volatile uint64_t sink = 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/trace_cost.%d", (int)getpid());
    for (int r = 0; r < ROUNDS; r++) {
        /* off: the branch every trace point takes when tracing is off */
        uint64_t t0 = clock_ns();
        for (long i = 0; i < n; i++) {
            uint64_t s = TRACE_ON ? clock_ns() : 0;
            sink += (uint64_t)i;
            if (TRACE_ON)
                trace_put(TRACE_SEND, 1, 0, (uint64_t)i, s, clock_ns(), 0);
        }
        off[r] = (double)(clock_ns() - t0) / (double)n;
        struct trace_info ti = {.rank = 0, .nodes = 1, .protocol = "none"};
        if (trace_start(path, &ti)) {
            perror(path);
            return 1;
        }
        t0 = clock_ns();
        for (long i = 0; i < n; i++) {
            uint64_t s = TRACE_ON ? clock_ns() : 0;
            sink += (uint64_t)i;
            if (TRACE_ON)
                trace_put(TRACE_SEND, 1, 0, (uint64_t)i, s, clock_ns(), 0);
        }
        on[r] = (double)(clock_ns() - t0) / (double)n;
        trace_finish(NULL);
        char file[80];
        snprintf(file, sizeof file, "%s.0", path);
        unlink(file);
    }
    qsort(on, ROUNDS, sizeof on[0], cmp);
    qsort(off, ROUNDS, sizeof off[0], cmp);
    printf("trace record (two clock reads + append): %.1f ns median, %.1f min\n", on[ROUNDS / 2],
           on[0]);
    printf("trace point, tracing off (branch):       %.2f ns median, %.2f min\n",
           off[ROUNDS / 2], off[0]);
    return sink == 42;
}
