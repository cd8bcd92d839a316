/*
 * omp_regions.c — what back-to-back parallel regions cost across nodes
 * (issue 85), for tests/omp/check_regions.py, which reads the counts of
 * --stats-json.
 *
 *   omp_regions empty R        R regions that share no data: each thread
 *                              sums its iterations of a `parallel for` in a
 *                              private variable. Nothing but the fork and
 *                              the join crosses the nodes.
 *   omp_regions loops P L [one]
 *                              the master fills P pages of doubles, then
 *                              L `parallel for` loops update them (with
 *                              `one`: `omp for` loops in one region); the
 *                              array is checked against the same loops run
 *                              by the master alone.
 *
 * Prints "PASSED: 0 failed" (or FAILED and exits 1).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int empty_regions(int regions)
{
    for (int r = 0; r < regions; r++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 4096; i++) {
            long s = 0;
            for (int k = 0; k <= i % 64; k++)
                s += k;
            if (s != (long)(i % 64) * (i % 64 + 1) / 2) {
                fprintf(stderr, "FAILED: iteration %d summed %ld\n", i, s);
                abort();
            }
        }
    }
    return 0;
}

static double update(double v, long i, int k) { return v * 0.5 + (double)((i + k) & 7); }

static int loops(long n, int count, int one)
{
    double *a = malloc((size_t)n * sizeof *a), *ref = malloc((size_t)n * sizeof *ref);
    if (!a || !ref)
        return 1;
    for (long i = 0; i < n; i++)
        a[i] = ref[i] = (double)(i % 100);
    if (one) {
#pragma omp parallel
        for (int k = 0; k < count; k++) {
#pragma omp for schedule(static)
            for (long i = 0; i < n; i++)
                a[i] = update(a[i], i, k);
        }
    } else {
        for (int k = 0; k < count; k++) {
#pragma omp parallel for schedule(static)
            for (long i = 0; i < n; i++)
                a[i] = update(a[i], i, k);
        }
    }
    for (int k = 0; k < count; k++)
        for (long i = 0; i < n; i++)
            ref[i] = update(ref[i], i, k);
    int bad = memcmp(a, ref, (size_t)n * sizeof *a) != 0;
    free(a);
    free(ref);
    return bad;
}

int main(int argc, char **argv)
{
    int bad;
    if (argc == 3 && !strcmp(argv[1], "empty")) {
        bad = empty_regions(atoi(argv[2]));
    } else if ((argc == 4 || argc == 5) && !strcmp(argv[1], "loops")) {
        bad = loops(atol(argv[2]) * 512, atoi(argv[3]), argc == 5 && !strcmp(argv[4], "one"));
    } else {
        fprintf(stderr, "usage: omp_regions empty R | loops PAGES LOOPS [one]\n");
        return 2;
    }
    printf("threads %d\n%s: %d failed\n", omp_get_max_threads(), bad ? "FAILED" : "PASSED", bad);
    return bad;
}
