/*
 * lu.c — SPLASH-2 LU, contiguous-blocks version (seed 000: 1024 x 1024,
 * 16 x 16 blocks).
 *
 *   lu [--size test|quick|full] [-n N] [-b B]
 *
 * Dense LU factorisation without pivoting, A = L U (L unit lower, U upper,
 * both overwriting A), blocked and right-looking. For each diagonal block
 * K of the nb = N/B block rows:
 *   1. the owner of block (K,K) factors it in place;               barrier
 *   2. the perimeter: every block (K,J), J > K, becomes L_KK^-1 A_KJ and
 *      every block (I,K), I > K, becomes A_IK U_KK^-1;                barrier
 *   3. the interior: every block (I,J), I,J > K, loses A_IK A_KJ.
 * Step 3 of K and step 1 of K+1 need no barrier between them: block
 * (K+1,K+1) is updated in step 3 by the process that factors it in step 1,
 * and the perimeter blocks of K+1 likewise by their own owners.
 *
 * Blocks go to processes by a 2-D scatter over a pr x pc process grid
 * (pr <= pc, pr the largest divisor of P not above sqrt P): block (I,J)
 * belongs to process (I mod pr) * pc + (J mod pc). Each block is B*B
 * doubles stored contiguously, and all of a process's blocks lie together
 * in one page-aligned stretch of the shared allocation, homed at that
 * process (PAR_HOME_BLOCK over P equal stretches): a block never shares a
 * coherence unit with another process's block, every write is to a page
 * homed at the writer (no twins, no diffs), and what crosses the network is
 * whole pages of the perimeter blocks that other processes read in step 3.
 * Within a process's stretch the blocks are ordered so that the perimeter
 * blocks other processes read in step 3 lie side by side (place_blocks).
 *
 * The matrix is diagonally dominant by rows (off-diagonal entries in
 * [-1, 1), the diagonal N larger), so no pivoting is needed and the growth
 * factor is at most 2. Every block sees the same operations in the same
 * order whichever process owns it, so the factors are bit-identical for any
 * number of processes and any build; the checksum printed shows it. A's
 * entries and the four block kernels are ../kernels/lu_blocks.h, the same
 * code the OpenMP version (bench/omp/lu.c) runs.
 *
 * Self-check, after the timed section, in private memory: A is regenerated
 * and every element of the product of the computed factors is checked
 * against it (see check_factors for the bound); the processes share the
 * rows of that work.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"
#include "../kernels/lu_blocks.h"

/* Stretches are aligned to the largest coherence unit the DSM allows
 * (DSM_PAGE_SIZE up to 64 KiB), so no setting makes two processes' blocks
 * share a page. */
#define LAYOUT_ALIGN 65536

struct lu {
    int n, b, nb;     /* matrix order, block order, blocks per row */
    int pr, pc;       /* process grid */
    double **blk;     /* blk[I * nb + J]: block (I,J), row-major inside */
};

static int owner(const struct lu *lu, int bi, int bj)
{
    return (bi % lu->pr) * lu->pc + bj % lu->pc;
}

static double *block(const struct lu *lu, int bi, int bj)
{
    return lu->blk[(size_t)bi * lu->nb + bj];
}

/* ---- the parallel factorisation ----------------------------------------- */

static void factor(const struct lu *lu)
{
    int me = par_id(), nb = lu->nb, b = lu->b;
    for (int k = 0; k < nb; k++) {
        double *d = block(lu, k, k);
        if (owner(lu, k, k) == me)
            lu_factor_diag(d, b);
        par_barrier();
        for (int j = k + 1; j < nb; j++)
            if (owner(lu, k, j) == me)
                lu_solve_lower(d, block(lu, k, j), b);
        for (int i = k + 1; i < nb; i++)
            if (owner(lu, i, k) == me)
                lu_solve_upper(d, block(lu, i, k), b);
        par_barrier();
        for (int j = k + 1; j < nb; j++) {
            const double *u = block(lu, k, j);
            for (int i = k + 1; i < nb; i++)
                if (owner(lu, i, j) == me)
                    lu_update_interior(block(lu, i, k), u, block(lu, i, j), b);
        }
    }
}

/* ---- layout -------------------------------------------------------------- */

/* Lays the blocks out in `shared` (P stretches of `stretch` bytes) and fills
 * lu->blk; every process computes the same table. A block is read by other
 * processes once, in the step K = min(I,J) that makes it a perimeter block
 * (or the diagonal one), and never changes after that step. So a process's
 * blocks on and below the diagonal go column by column, those above it row
 * by row: the column-K and the row-K perimeter blocks that step 3 reads
 * then lie side by side, four to an 8 KiB page at B = 16; and the blocks
 * of a page (but for a page where two such runs meet) reach their final
 * values in the same step, so a page once fetched is seldom fetched again. */
static void place_blocks(struct lu *lu, char *shared, size_t stretch)
{
    int p = par_n(), nb = lu->nb;
    size_t bytes = (size_t)lu->b * lu->b * sizeof(double);
    size_t *used = calloc((size_t)p, sizeof *used);
    if (!used)
        par_die("out of memory");
    for (int t = 0; t < 2; t++)
        for (int x = 0; x < nb; x++)
            for (int y = t ? x + 1 : x; y < nb; y++) {
                int i = t ? x : y, j = t ? y : x; /* t = 0: column x from the diagonal down */
                int o = owner(lu, i, j);
                lu->blk[(size_t)i * nb + j] = (double *)(shared + (size_t)o * stretch + used[o]);
                used[o] += bytes;
            }
    free(used);
}

/* The blocks of the process that has most: the size of every stretch. */
static size_t most_blocks(const struct lu *lu)
{
    size_t most = 0;
    for (int q = 0; q < lu->pr * lu->pc; q++) {
        size_t rows = 0, cols = 0;
        for (int i = 0; i < lu->nb; i++)
            rows += i % lu->pr == q / lu->pc;
        for (int j = 0; j < lu->nb; j++)
            cols += j % lu->pc == q % lu->pc;
        if (rows * cols > most)
            most = rows * cols;
    }
    return most;
}

/* ---- the check ------------------------------------------------------------ */

/*
 * The factors' product against A, within Higham's rounding bound
 * (lu_check_row, ../kernels/lu_blocks.h).
 *
 * The product costs N^3/3 multiply-adds, as much as the factorisation, so
 * every process checks its share of the rows (row i costs i + 1 row
 * updates: rows are dealt out cyclically) from its own private row-major
 * copy of the factors, CHECK_ROWS rows at a time so that each row of U,
 * streamed from memory, serves several; A is regenerated as it goes.
 */
#define CHECK_ROWS 8

struct check { long bad; double worst; uint64_t checksum; };

static void check_factors(const struct lu *lu, struct check *out)
{
    int n = lu->n, b = lu->b, p = par_n(), me = par_id();
    double *f = malloc((size_t)n * n * sizeof *f);
    double *prod = malloc((size_t)CHECK_ROWS * n * sizeof *prod);
    double *colmax = calloc((size_t)n, sizeof *colmax);
    if (!f || !prod || !colmax)
        par_die("out of memory for the check (N = %d)", n);
    /* the factors in row-major order: whole blocks, in page-sized runs */
    for (int bi = 0; bi < lu->nb; bi++)
        for (int bj = 0; bj < lu->nb; bj++) {
            const double *s = block(lu, bi, bj);
            for (int r = 0; r < b; r++)
                memcpy(f + (size_t)(bi * b + r) * n + (size_t)bj * b, s + (size_t)r * b,
                       (size_t)b * sizeof *f);
        }
    out->checksum = fnv1a(FNV1A_START, f, (size_t)n * n * sizeof *f);
    for (int k = 0; k < n; k++)
        for (int j = k; j < n; j++) {
            double a = fabs(f[(size_t)k * n + j]);
            if (!(a <= colmax[j])) /* a NaN sticks */
                colmax[j] = a;
        }

    out->bad = 0;
    out->worst = 0;
    for (int i0 = me; i0 < n; i0 += CHECK_ROWS * p) {
        int rows[CHECK_ROWS], nr = 0;
        for (int i = i0; nr < CHECK_ROWS && i < n; i += p)
            rows[nr++] = i;
        memset(prod, 0, (size_t)nr * n * sizeof *prod);
        /* row i of L U = sum over k <= i of L[i][k] U[k][:], L[i][i] = 1,
         * in 16-wide runs where it can (lu_row_update subtracts: -l) */
        for (int k = 0; k <= rows[nr - 1]; k++) {
            const double *uk = f + (size_t)k * n;
            for (int r = 0; r < nr; r++) {
                if (k > rows[r])
                    continue;
                double l = k == rows[r] ? 1.0 : f[(size_t)rows[r] * n + k];
                double *pr = prod + (size_t)r * n;
                int j = k;
                for (; j < n && j % 16; j++)
                    pr[j] += l * uk[j];
                for (; j + 16 <= n; j += 16)
                    lu_row_update(pr + j, uk + j, -l, 16);
                for (; j < n; j++)
                    pr[j] += l * uk[j];
            }
        }
        for (int r = 0; r < nr; r++)
            lu_check_row(n, rows[r], f + (size_t)rows[r] * n, prod + (size_t)r * n, colmax,
                         &out->bad, &out->worst);
    }
    free(f);
    free(prod);
    free(colmax);
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: lu [--size test|quick|full] [-n N] [-b B]\n"
               "  --size S  test: N = 256; quick: N = 3072; full: N = 1024 (seed 000, the\n"
               "            default); B = 16 for all\n"
               "  -n N      matrix order, a multiple of B, B..4096\n"
               "  -b B      block order, 1..256 (SPLASH-2's default 16)\n");
}

int par_main(int argc, char **argv)
{
    struct lu lu = {.n = 1024, .b = 16};
    struct arg_option options[] = {
        {"--size", ARG_WORD, &lu.n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){256, 3072, 1024}},
        {"-n", ARG_INT, &lu.n, "a matrix order 1..4096", .overrides = true, .lo = 1, .hi = 4096},
        {"-b", ARG_INT, &lu.b, "a block order 1..256", .overrides = true, .lo = 1, .hi = 256},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    if (lu.n % lu.b)
        return par_bad_args(usage, "-n %d is not a multiple of -b %d", lu.n, lu.b);
    int p = par_n(), me = par_id();
    lu.nb = lu.n / lu.b;
    for (lu.pr = 1; (lu.pr + 1) * (lu.pr + 1) <= p; lu.pr++)
        ;
    while (p % lu.pr)
        lu.pr--;
    lu.pc = p / lu.pr;

    size_t stretch = most_blocks(&lu) * (size_t)lu.b * lu.b * sizeof(double);
    stretch = (stretch + LAYOUT_ALIGN - 1) / LAYOUT_ALIGN * LAYOUT_ALIGN;
    char *shared = par_alloc_home((size_t)p * stretch, PAR_HOME_BLOCK);
    lu.blk = malloc((size_t)lu.nb * lu.nb * sizeof *lu.blk);
    if (!lu.blk)
        par_die("out of memory");
    place_blocks(&lu, shared, stretch);

    /* each process fills its own blocks: first writes land at their home */
    for (int bi = 0; bi < lu.nb; bi++)
        for (int bj = 0; bj < lu.nb; bj++) {
            if (owner(&lu, bi, bj) != me)
                continue;
            double *a = block(&lu, bi, bj);
            for (int r = 0; r < lu.b; r++)
                for (int c = 0; c < lu.b; c++)
                    a[r * lu.b + c] = lu_entry(lu.n, bi * lu.b + r, bj * lu.b + c);
        }

    par_timer_start();
    factor(&lu);
    double t = par_timer_stop();

    /* outside the timed section: every process checks its rows, process 0
     * gathers the counts (one slot per process, each on its own page) */
    struct check *checks = par_alloc((size_t)p * LAYOUT_ALIGN);
    check_factors(&lu, (struct check *)((char *)checks + (size_t)me * LAYOUT_ALIGN));
    par_barrier();
    bool ok = true;
    char extra[160] = "";
    if (me == 0) {
        struct check all = {.checksum = checks->checksum};
        for (int q = 0; q < p; q++) {
            const struct check *c =
                (const struct check *)((char *)checks + (size_t)q * LAYOUT_ALIGN);
            all.bad += c->bad;
            if (!(c->worst <= all.worst))
                all.worst = c->worst;
        }
        ok = all.bad == 0;
        if (!ok)
            fprintf(stderr, "lu: %ld of %lld elements of L*U differ from A beyond the "
                            "rounding bound (worst %.3g times the bound)\n",
                    all.bad, (long long)lu.n * lu.n, all.worst);
        snprintf(extra, sizeof extra, "b=%d grid=%dx%d checksum=%016llx err/bound=%.3g", lu.b,
                 lu.pr, lu.pc, (unsigned long long)all.checksum, all.worst);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", lu.n);
    rc = par_report("lu", size, t, ok, extra);
    free(lu.blk);
    return rc;
}
