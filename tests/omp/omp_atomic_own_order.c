/*
 * omp_atomic_own_order.c — atomic updates whose value nobody uses, mixed
 * on the same words with updates whose value is used and with atomic
 * reads, keep one order per word and a thread's own order (issue 85,
 * point 4: under hlrc the first kind is queued and sent to the page's
 * home in batches, the others wait for the home).
 *
 * In one loop over N iterations (`schedule(static, 5)`, so that every
 * node's iterations interleave with the others'):
 *   - `atomic` cnt[k] += 1 (value unused) on 8 shared counters, and every
 *     3rd iteration an `atomic capture` of the same counter instead (the
 *     old value used: below the counter's final total);
 *   - the thread's own words, which nobody else writes: `atomic` adds and
 *     subtracts to mine[t], then an `atomic read` of it, and an `atomic`
 *     xor into bits[t], read every 4th iteration: each read must see the
 *     thread's own running result;
 * then a barrier, after which every thread checks every total with plain
 * reads: the counters, and each thread's words as their owner left them.
 * Then a burst of BURST updates alone (a histogram's loop: nothing but
 * updates whose value nobody uses, which go home many to a message), and
 * its totals checked the same way.
 * Prints "threads T" and "PASSED: 0 failed" when every check holds.
 */
#include <omp.h>
#include <stdio.h>

#define N       2000
#define COUNTS  8
#define MAX_T   64
#define BURST   (6 * N)

static struct {
    long          cnt[COUNTS];
    int           burst[COUNTS];
    long          mine[MAX_T];
    unsigned long bits[MAX_T];
} shared;

static long want_mine[MAX_T];
static unsigned long want_bits[MAX_T];

static unsigned long mask_of(long i)
{
    return 1ul << (i % 61);
}

int main(void)
{
    long wrong = 0;
    int threads = 1;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
#pragma omp single
        threads = omp_get_num_threads();
        long my_mine = 0;
        unsigned long my_bits = 0;
#pragma omp for schedule(static, 5)
        for (long i = 0; i < N; i++) {
            int k = (int)(i % COUNTS);
            if (i % 3 == 0) {
                long old;
#pragma omp atomic capture
                old = shared.cnt[k]++;
                if (old < 0 || old >= N) {
#pragma omp atomic
                    wrong++;
                }
            } else {
#pragma omp atomic
                shared.cnt[k] += 1;
            }
            if (me >= MAX_T)
                continue;
#pragma omp atomic
            shared.mine[me] += 3;
#pragma omp atomic
            shared.mine[me] -= 1;
            my_mine += 2;
            long seen;
#pragma omp atomic read
            seen = shared.mine[me];
            if (seen != my_mine) {
                printf("FAILED: thread %d read %ld in its own counter, having made it %ld\n", me,
                       seen, my_mine);
#pragma omp atomic
                wrong++;
            }
#pragma omp atomic
            shared.bits[me] ^= mask_of(i);
            my_bits ^= mask_of(i);
            if (i % 4 != 0)
                continue;
            unsigned long bits;
#pragma omp atomic read
            bits = shared.bits[me];
            if (bits != my_bits) {
                printf("FAILED: thread %d read bits %#lx, having made them %#lx\n", me, bits,
                       my_bits);
#pragma omp atomic
                wrong++;
            }
        }
        if (me < MAX_T) {
            want_mine[me] = my_mine;
            want_bits[me] = my_bits;
        }
#pragma omp barrier
        for (int k = 0; k < COUNTS; k++) {
            long want = N / COUNTS + (k < N % COUNTS);
            if (shared.cnt[k] != want) {
                printf("FAILED: thread %d saw counter %d at %ld, expected %ld\n", me, k,
                       shared.cnt[k], want);
#pragma omp atomic
                wrong++;
            }
        }
        for (int t = 0; t < threads && t < MAX_T; t++)
            if (shared.mine[t] != want_mine[t] || shared.bits[t] != want_bits[t]) {
                printf("FAILED: thread %d saw thread %d's words as %ld %#lx, expected %ld %#lx\n",
                       me, t, shared.mine[t], shared.bits[t], want_mine[t], want_bits[t]);
#pragma omp atomic
                wrong++;
            }
#pragma omp for schedule(static, 5)
        for (long i = 0; i < BURST; i++) {
#pragma omp atomic
            shared.burst[i % COUNTS] += 1;
        }
        /* the loop's barrier */
        for (int k = 0; k < COUNTS; k++) {
            int want = BURST / COUNTS + (k < BURST % COUNTS);
            if (shared.burst[k] != want) {
                printf("FAILED: thread %d saw burst counter %d at %d, expected %d\n", me, k,
                       shared.burst[k], want);
#pragma omp atomic
                wrong++;
            }
        }
    }
    printf("threads %d\n", threads);
    printf("PASSED: %ld failed\n", wrong);
    return wrong != 0;
}
