/*
 * loops.c — back-to-back parallel loops over an array the master filled
 * (issue 85): the most common shape of an OpenMP program. The initial
 * thread fills the array, then `-l` loops update it, each its own
 * `#pragma omp parallel for` (the default) or, with --one-region, each
 * an `omp for` of one `parallel` region around them all, for comparison.
 * Both forms divide the iterations alike (schedule(static)), so a thread
 * updates the same part of the array in every loop: on dsm the pages of
 * that part should come to live on its node (docs/migration.md) whichever
 * form the program takes.
 *
 *   loops_omp [--size test|quick|full] [-n DOUBLES] [-l LOOPS] [--one-region]
 *
 *   size    doubles (pages of 4 KiB)   loops
 *   test    65536 (128)                20
 *   quick   262144 (512)               20
 *   full    1048576 (2048)             20
 *
 * Self-check: the array against the same loops run by the initial thread
 * alone, bit for bit.
 *
 * A standalone program: nothing but the C library and <omp.h>, so that
 * `clang -fopenmp` and dsmcc build it unchanged. It prints one line,
 *   RESULT app=loops mode=omp procs=T size=N time=S check=ok|FAIL ...
 * and exits 1 when the check fails, 2 on a bad option.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loop k's update of element i: a few flops, the same in both forms. */
static inline double update(double v, long i, int k)
{
    return v * 0.999 + (double)((i + k) & 15) * 0.25;
}

static void separate_regions(double *a, long n, int loops)
{
    for (int k = 0; k < loops; k++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = update(a[i], i, k);
    }
}

static void one_region(double *a, long n, int loops)
{
#pragma omp parallel
    for (int k = 0; k < loops; k++) {
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = update(a[i], i, k);
    }
}

static void fill(double *a, long n)
{
    for (long i = 0; i < n; i++)
        a[i] = (double)(i % 1000) * 0.5;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: loops_omp [--size test|quick|full] [-n DOUBLES] [-l LOOPS] [--one-region]\n"
               "  --size        test: 65536 doubles; quick: 262144; full (default): 1048576\n"
               "  -n N          doubles in the array, 512..1000000000\n"
               "  -l L          loops, 1..100000 (default 20)\n"
               "  --one-region  the loops as `omp for` in one parallel region\n"
               "                (default: each its own `parallel for`)\n"
               "  threads: OMP_NUM_THREADS\n");
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    long n = 1048576, n_opt = 0, loops = 20;
    int one = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "test"))
                n = 65536;
            else if (!strcmp(v, "quick"))
                n = 262144;
            else if (!strcmp(v, "full"))
                n = 1048576;
            else
                bad = 1;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            bad = parse_long(argv[++i], 512, 1000000000, &n_opt) != 0;
        } else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
            bad = parse_long(argv[++i], 1, 100000, &loops) != 0;
        } else if (!strcmp(argv[i], "--one-region")) {
            one = 1;
        } else {
            bad = 1;
        }
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (n_opt)
        n = n_opt;

    double *a = malloc((size_t)n * sizeof *a), *ref = malloc((size_t)n * sizeof *ref);
    if (!a || !ref) {
        fprintf(stderr, "loops: out of memory (2 x %ld doubles)\n", n);
        return 2;
    }
    fill(a, n);
    double t0 = omp_get_wtime();
    if (one)
        one_region(a, n, (int)loops);
    else
        separate_regions(a, n, (int)loops);
    double secs = omp_get_wtime() - t0;

    fill(ref, n);
    for (int k = 0; k < loops; k++)
        for (long i = 0; i < n; i++)
            ref[i] = update(ref[i], i, k);
    long first = -1;
    for (long i = 0; i < n && first < 0; i++)
        if (memcmp(&a[i], &ref[i], sizeof *a))
            first = i;
    if (first >= 0)
        fprintf(stderr, "loops: element %ld is %.17g, expected %.17g\n", first, a[first],
                ref[first]);
    printf("RESULT app=loops mode=omp procs=%d size=%ld time=%.6f check=%s loops=%ld form=%s\n",
           omp_get_max_threads(), n, secs, first < 0 ? "ok" : "FAIL", loops,
           one ? "one-region" : "regions");
    free(a);
    free(ref);
    return first < 0 ? 0 : 1;
}
