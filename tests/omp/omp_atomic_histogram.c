/*
 * omp_atomic_histogram.c — `#pragma omp atomic` updates in a hot loop are
 * exact across nodes (issue 85, point 4): the shapes an update may take
 * mixed on the same words, so that whatever path one shape takes (an
 * update whose old value nobody uses may be sent on without waiting; one
 * whose value is used waits for it), the words keep one order of changes.
 *
 * In one loop over N iterations, shared out by `schedule(static, 7)` so
 * that every node's iterations interleave with the others':
 *   - `atomic update` h[b]++ of a 64-bin histogram (the value unused),
 *     and every 4th iteration an `atomic capture` of the same bin instead
 *     (the old value used: it must be below the bin's final count);
 *   - `atomic capture` of one ticket counter: every ticket 0..N-1 is
 *     handed out exactly once;
 *   - an `atomic update` of the thread's own counter mine[t], then a plain
 *     read of it: the thread must read its own updates (nobody else
 *     writes it; the counters share one page with the histogram);
 *   - an `atomic` add of a quarter-multiple to one shared double (every
 *     order gives the same sum).
 * Then every count against a serial recount, exactly. Prints "threads T"
 * and "PASSED: 0 failed" when every check holds.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N     12000
#define BINS  64
#define MAX_T 64

static unsigned bin_of(long i)
{
    unsigned long x = (unsigned long)i * 0x9e3779b97f4a7c15ul;
    return (unsigned)(x >> 58);
}

static struct {
    long   hist[BINS];
    long   ticket;
    long   mine[MAX_T];
    double sum;
} shared;

static long seen_ticket[N]; /* longs: no two nodes write one word */
static long captured_max[BINS];
static int wrong;

int main(void)
{
    int threads = 1;
#pragma omp parallel
    {
#pragma omp single
        threads = omp_get_num_threads();
        int me = omp_get_thread_num();
        long my_count = 0;
        long my_max[BINS] = {0};
#pragma omp for schedule(static, 7)
        for (long i = 0; i < N; i++) {
            unsigned b = bin_of(i);
            if (i % 4 == 0) {
                long old;
#pragma omp atomic capture
                old = shared.hist[b]++;
                if (old + 1 > my_max[b])
                    my_max[b] = old + 1;
            } else {
#pragma omp atomic
                shared.hist[b]++;
            }
            long t;
#pragma omp atomic capture
            t = shared.ticket++;
            if (t < 0 || t >= N) {
#pragma omp atomic
                wrong++;
            } else {
                seen_ticket[t] = 1; /* one thread per ticket: no race */
            }
            if (me < MAX_T) {
#pragma omp atomic
                shared.mine[me]++;
                my_count++;
                if (shared.mine[me] != my_count) {
                    printf("FAILED: thread %d read its own counter as %ld after %ld updates\n", me,
                           shared.mine[me], my_count);
#pragma omp atomic
                    wrong++;
                }
            }
            double x = (double)(i % 8) * 0.25;
#pragma omp atomic
            shared.sum += x;
        }
#pragma omp critical
        for (int b = 0; b < BINS; b++)
            if (my_max[b] > captured_max[b])
                captured_max[b] = my_max[b];
    }

    long want[BINS] = {0};
    double want_sum = 0;
    for (long i = 0; i < N; i++) {
        want[bin_of(i)]++;
        want_sum += (double)(i % 8) * 0.25;
    }
    for (int b = 0; b < BINS; b++) {
        if (shared.hist[b] != want[b]) {
            printf("FAILED: bin %d counted %ld, expected %ld\n", b, shared.hist[b], want[b]);
            wrong++;
        }
        if (captured_max[b] > want[b]) {
            printf("FAILED: bin %d captured %ld, above its final %ld\n", b, captured_max[b], want[b]);
            wrong++;
        }
    }
    long tickets = 0;
    for (long t = 0; t < N; t++)
        tickets += seen_ticket[t];
    if (shared.ticket != N || tickets != N) {
        printf("FAILED: %ld tickets handed out, %ld distinct, expected %d\n", shared.ticket, tickets, N);
        wrong++;
    }
    long mine = 0;
    for (int t = 0; t < MAX_T; t++)
        mine += shared.mine[t];
    if (mine != N) {
        printf("FAILED: the threads' own counters add up to %ld, expected %d\n", mine, N);
        wrong++;
    }
    if (shared.sum != want_sum) {
        printf("FAILED: the sum is %.17g, expected %.17g\n", shared.sum, want_sum);
        wrong++;
    }
    printf("threads %d\n", threads);
    printf("PASSED: %d failed\n", wrong);
    return wrong != 0;
}
