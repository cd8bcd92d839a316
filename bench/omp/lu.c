/*
 * lu.c — blocked dense LU factorisation without pivoting, as a plain
 * OpenMP program: the algorithm of SPLASH-2 LU (contiguous blocks) with
 * OpenMP worksharing in place of SPLASH's explicit block ownership.
 *
 *   lu_omp [--size test|quick|full] [-n N] [-b B]
 *
 * A = L U (L unit lower, U upper, both overwriting A), blocked and
 * right-looking. For each diagonal block K of the nb = N/B block rows:
 *   1. the panel: block (K,K) is factored in place and every block (I,K),
 *      I > K, becomes A_IK U_KK^-1 (a `single`: one thread; the panels
 *      are 3TB/(4N) of a thread's share of step 2, 1% at N = 2048 and
 *      T = 2 threads);                                               barrier
 *   2. every block column J > K: its block (K,J) becomes L_KK^-1 A_KJ and
 *      then every block (I,J), I > K, loses A_IK A_KJ.              barrier
 * Step 2 is an `omp for schedule(static,1)` over all nb block columns,
 * skipping those left of K, so that column J is always updated by thread
 * J mod T: a cyclic distribution that keeps the shrinking trailing matrix
 * balanced and gives every block column one thread for the whole run (its
 * cache; on a DSM, its pages). The blocks are B*B doubles each, stored
 * contiguously, block columns one after another, so a block column is one
 * contiguous stretch of memory.
 *
 * The matrix is diagonally dominant by rows (off-diagonal entries in
 * [-1, 1), the diagonal N larger), so no pivoting is needed and the growth
 * factor is at most 2. Every block sees the same operations in the same
 * order whatever the number of threads, so the factors are bit-identical
 * for any thread count; the checksum printed shows it. A's entries and the
 * four block kernels are ../kernels/lu_blocks.h, the same code the dsm-API
 * version (bench/apps/lu.c) runs.
 *
 * Self-check, after the timed section: A is regenerated and every element
 * of the product of the computed factors is checked against Higham's
 * rounding bound (see check_factors), the rows shared out by a
 * `schedule(dynamic)` loop since row i costs i + 1 row updates.
 *
 * A standalone program: nothing but the C library, <omp.h> and the headers
 * ../kernels/lu_blocks.h and fnv1a.h, so that it can be built unchanged by
 * `clang -fopenmp` (threads) and by dsmcc (one thread per node). It prints
 * one line,
 *   RESULT app=lu mode=omp procs=T size=N time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/fnv1a.h"
#include "../kernels/lu_blocks.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n, b, nb; /* matrix order, block order, blocks per row */
static double *mat;  /* nb * nb blocks of b * b doubles, by block columns */

/* Block (I,J): row-major inside, block column J contiguous. */
static double *block(int bi, int bj) { return mat + ((size_t)bj * nb + bi) * b * b; }

/* ---- the parallel factorisation ----------------------------------------- */

static void factor(void)
{
#pragma omp parallel default(shared)
    for (int k = 0; k < nb; k++) {
        const double *dg = block(k, k);
#pragma omp single
        {
            lu_factor_diag(block(k, k), b);
            for (int i = k + 1; i < nb; i++)
                lu_solve_upper(dg, block(i, k), b);
        }
        /* j < k + 1 is skipped rather than left out of the range, so that
         * the cyclic schedule deals column j to the same thread every k */
#pragma omp for schedule(static, 1)
        for (int j = 0; j < nb; j++) {
            if (j <= k)
                continue;
            double *u = block(k, j);
            lu_solve_lower(dg, u, b);
            for (int i = k + 1; i < nb; i++)
                lu_update_interior(block(i, k), u, block(i, j), b);
        }
    }
}

/* ---- the check ------------------------------------------------------------ */

static double factor_at(int i, int j) { return block(i / b, j / b)[(i % b) * b + j % b]; }

/*
 * The factors' product against A, within Higham's rounding bound
 * (lu_check_row, ../kernels/lu_blocks.h).
 *
 * The factors are first copied row-major (f), so the product streams rows
 * of U. Returns the elements beyond the bound; *worst is the largest
 * error/bound ratio, *sum a checksum of the factors.
 */
static long check_factors(double *worst, uint64_t *sum)
{
    double *f = malloc((size_t)n * n * sizeof *f);
    double *colmax = calloc((size_t)n, sizeof *colmax);
    if (!f || !colmax) {
        fprintf(stderr, "lu: out of memory for the check (N = %d)\n", n);
        exit(2);
    }
    long bad = 0;
    double w = 0;
#pragma omp parallel default(shared)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                f[(size_t)i * n + j] = factor_at(i, j);
#pragma omp for schedule(static)
        for (int j = 0; j < n; j++) {
            double m = 0;
            for (int k = 0; k <= j; k++) {
                double v = fabs(f[(size_t)k * n + j]);
                if (!(v <= m)) /* a NaN sticks */
                    m = v;
            }
            colmax[j] = m;
        }
        double *prod = malloc((size_t)n * sizeof *prod);
        /* row i of L U costs i + 1 row updates: dealt out dynamically */
#pragma omp for schedule(dynamic, 8) reduction(+ : bad) reduction(max : w)
        for (int i = 0; i < n; i++) {
            if (!prod) {
                bad += n;
                continue;
            }
            const double *li = f + (size_t)i * n;
            memset(prod, 0, (size_t)n * sizeof *prod);
            /* row i of L U = sum over k <= i of L[i][k] U[k][:], L[i][i] = 1 */
            for (int k = 0; k <= i; k++) {
                double l = k == i ? 1.0 : li[k];
                const double *uk = f + (size_t)k * n;
                for (int j = k; j < n; j++)
                    prod[j] += l * uk[j];
            }
            lu_check_row(n, i, li, prod, colmax, &bad, &w);
        }
        free(prod);
    }
    *sum = fnv1a(FNV1A_START, f, (size_t)n * n * sizeof *f);
    *worst = w;
    free(f);
    free(colmax);
    return bad;
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *fp)
{
    fprintf(fp, "usage: lu_omp [--size test|quick|full] [-n N] [-b B]\n"
                "  --size S  test: N = 256; quick: N = 1024 (SPLASH-2's); full: N = 2048\n"
                "            (the default); B = 16 for all\n"
                "  -n N      matrix order, a multiple of B, B..8192\n"
                "  -b B      block order, 1..256 (SPLASH-2's default 16)\n"
                "  threads: OMP_NUM_THREADS\n");
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

/* 0: run; 1: --help; 2: bad option. */
static int options(int argc, char **argv)
{
    int nopt = 0, bopt = 0;
    n = 2048;
    b = 16;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help"))
            return 1;
        if (i + 1 >= argc)
            return 2;
        const char *v = argv[++i];
        if (!strcmp(o, "--size")) {
            if (!strcmp(v, "test"))
                n = 256;
            else if (!strcmp(v, "quick"))
                n = 1024;
            else if (!strcmp(v, "full"))
                n = 2048;
            else
                return 2;
        } else if (!strcmp(o, "-n")) {
            if (!parse_int(v, 1, 8192, &nopt))
                return 2;
        } else if (!strcmp(o, "-b")) {
            if (!parse_int(v, 1, 256, &bopt))
                return 2;
        } else {
            return 2;
        }
    }
    if (nopt)
        n = nopt;
    if (bopt)
        b = bopt;
    return n % b ? 2 : 0;
}

int main(int argc, char **argv)
{
    int rc = options(argc, argv);
    if (rc) {
        usage(rc == 1 ? stdout : stderr);
        return rc == 1 ? 0 : 2;
    }
    nb = n / b;
    mat = malloc((size_t)n * n * sizeof *mat);
    if (!mat) {
        fprintf(stderr, "lu: out of memory (N = %d)\n", n);
        return 2;
    }
    /* each block column filled by the thread that will update it */
#pragma omp parallel for schedule(static, 1)
    for (int bj = 0; bj < nb; bj++)
        for (int bi = 0; bi < nb; bi++) {
            double *blk = block(bi, bj);
            for (int r = 0; r < b; r++)
                for (int c = 0; c < b; c++)
                    blk[r * b + c] = lu_entry(n, bi * b + r, bj * b + c);
        }

    double t0 = omp_get_wtime();
    factor();
    double secs = omp_get_wtime() - t0;

    double worst;
    uint64_t sum;
    long bad = check_factors(&worst, &sum);
    if (bad)
        fprintf(stderr, "lu: %ld of %lld elements of L*U differ from A beyond the rounding bound "
                        "(worst %.3g times the bound)\n",
                bad, (long long)n * n, worst);
    printf("RESULT app=lu mode=omp procs=%d size=%d time=%.6f check=%s b=%d "
           "checksum=%016llx err/bound=%.3g\n",
           omp_get_max_threads(), n, secs, bad ? "FAIL" : "ok", b, (unsigned long long)sum,
           worst);
    free(mat);
    return bad ? 1 : 0;
}
