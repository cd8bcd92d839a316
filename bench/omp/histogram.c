/*
 * histogram.c — atomics in a hot loop (issue 85, point 4): a plain OpenMP
 * program whose loops do nothing but `#pragma omp atomic` updates, the
 * shape of a histogram or a counter that many threads share.
 *
 *   histogram_omp [--size test|quick|full]
 *
 * Three loops of `parallel for`, each timed alone:
 *   large   N updates h[b]++ of a histogram of LARGE_BINS counters
 *           (256 KiB: 64 pages), b spread at random;
 *   small   N updates h[b]++ of a 64-bin histogram (one page's first
 *           quarter): every thread hits the same few words;
 *   sum     N / 8 adds of a quarter-multiple to one shared double.
 * N is 20,000 (test), 200,000 (quick) or 2,000,000 (full).
 *
 * Self-check: every count against a serial recount, exactly; the double
 * too, exactly (its terms are multiples of 1/4 and the sum stays far
 * below 2^53 quarters, so every order of the adds gives the same value).
 *
 * A standalone program: the C library and <omp.h> only, so that it is
 * built unchanged by `clang -fopenmp` (threads) and by dsmcc (one thread
 * per node). It prints one line,
 *   RESULT app=histogram mode=omp procs=T size=S time=S check=ok|FAIL ...
 * (the format bench/omp/run reads), and exits 1 when the check fails.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE_BINS (1 << 16)
#define SMALL_BINS 64

static void usage(FILE *f)
{
    fprintf(f, "usage: histogram_omp [--size test|quick|full]\n"
               "  atomic updates of a 65536-bin and a 64-bin histogram, and atomic adds\n"
               "  to one double\n"
               "  --size  test = 20,000 updates, quick = 200,000, full = 2,000,000 (default)\n"
               "  threads: OMP_NUM_THREADS\n");
}

/* The bin of update i: a mix of i's bits (splitmix64's finaliser), so
 * that neighbouring updates fall on bins far apart. */
static uint64_t mix(uint64_t i)
{
    i += 0x9e3779b97f4a7c15ull;
    i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9ull;
    i = (i ^ (i >> 27)) * 0x94d049bb133111ebull;
    return i ^ (i >> 31);
}

/* The term update i adds to the double: 0, 0.25, ..., 1.75. */
static double term(long i)
{
    return (double)(mix((uint64_t)i) & 7) * 0.25;
}

int main(int argc, char **argv)
{
    const char *size = "full";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            size = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "histogram: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    long n;
    char letter;
    if (strcmp(size, "test") == 0) {
        n = 20000, letter = 'S';
    } else if (strcmp(size, "quick") == 0) {
        n = 200000, letter = 'W';
    } else if (strcmp(size, "full") == 0) {
        n = 2000000, letter = 'A';
    } else {
        fprintf(stderr, "histogram: --size '%s': expected test, quick or full\n", size);
        return 2;
    }

    unsigned *large = calloc(LARGE_BINS, sizeof *large);
    unsigned *small = calloc(SMALL_BINS, sizeof *small);
    if (!large || !small) {
        fprintf(stderr, "histogram: out of memory\n");
        return 1;
    }
    double sum = 0;
    int threads = 1;

    double t0 = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; i++) {
        if (i == 0)
            threads = omp_get_num_threads();
        unsigned b = (unsigned)(mix((uint64_t)i) % LARGE_BINS);
#pragma omp atomic
        large[b]++;
    }
    double t1 = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; i++) {
        unsigned b = (unsigned)(mix((uint64_t)i) >> 58); /* 0..63 */
#pragma omp atomic
        small[b]++;
    }
    double t2 = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n / 8; i++) {
        double x = term(i);
#pragma omp atomic
        sum += x;
    }
    double t3 = omp_get_wtime();

    /* The serial recount. */
    unsigned *want = calloc(LARGE_BINS, sizeof *want);
    unsigned want_small[SMALL_BINS] = {0};
    double want_sum = 0;
    if (!want) {
        fprintf(stderr, "histogram: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        want[mix((uint64_t)i) % LARGE_BINS]++;
        want_small[mix((uint64_t)i) >> 58]++;
    }
    for (long i = 0; i < n / 8; i++)
        want_sum += term(i);
    long wrong = 0;
    for (long b = 0; b < LARGE_BINS; b++)
        wrong += large[b] != want[b];
    for (long b = 0; b < SMALL_BINS; b++)
        wrong += small[b] != want_small[b];
    int ok = wrong == 0 && sum == want_sum;
    if (!ok)
        fprintf(stderr, "histogram: %ld bins wrong; sum %.17g, expected %.17g\n", wrong, sum,
                want_sum);

    printf("RESULT app=histogram mode=omp procs=%d size=%c time=%.6f check=%s updates=%ld "
           "t_large=%.6f t_small=%.6f t_sum=%.6f\n",
           threads, letter, t3 - t0, ok ? "ok" : "FAIL", n, t1 - t0, t2 - t1, t3 - t2);
    free(want);
    free(large);
    free(small);
    return ok ? 0 : 1;
}
