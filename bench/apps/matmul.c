/*
 * matmul.c — dense matrix multiply C = A x B in doubles, the application
 * seed 002 (ATTEMPT-0) evaluates its virtual memory with.
 *
 *   matmul [--size test|quick|full] [-n N]
 *
 * The seed does not give its matrix size; the default is 1024 x 1024.
 *
 * The rows of A and C are split among the processes in contiguous blocks;
 * a process computes its rows of C from its rows of A and all of B. Each
 * process's block of rows (of A, B and C alike) lies in a slot of whole
 * pages homed at that process (PAR_HOME_BLOCK over N equal slots; at
 * 1024 x 1024 on 2 or 4 processes the slots are exactly the row blocks, so
 * each matrix is contiguous). A process initialises its own rows of A and
 * B, so every page is written only at its home; during the multiply the
 * only communication is each process fetching the other processes' rows
 * of B, once, in whole pages of consecutive elements, all at the start
 * (fetch_remote_rows), which it then keeps: nobody writes B again. C's
 * pages are written only at their home, so they need no twins and no
 * diffs.
 *
 * The multiply is blocked over columns and k, so the block of B in use
 * stays in the cache; every C[i][j] is still summed over k in increasing
 * order.
 *
 * Self-check: A and B hold small integers (|a| <= 5, |b| <= 6), so every
 * product and partial sum is an integer below 2^53 and exact in double,
 * whatever the order of summation. Process 0 computes C again alone in
 * private memory and every element must be equal.
 */
#include "par.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE 8192 /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */
#define JB 512    /* columns of a block: a C row segment of 4 KiB */
#define KB 64     /* rows of B in a block: with JB, 256 KiB, inside L2 */

static double a_elem(int i, int k) { return (double)((i + 2 * k) % 11 - 5); }
static double b_elem(int k, int j) { return (double)((3 * k + j) % 13 - 6); }

/* Where each process's block of rows lives in a matrix allocated as N
 * slots of `slot` bytes. */
struct layout {
    int n, procs;
    size_t slot;
};

static int first_row(const struct layout *l, int p) { return (int)((int64_t)l->n * p / l->procs); }

static double *row_ptr(const struct layout *l, char *base, int i)
{
    /* the owner of row i: the largest p with first_row(p) <= i */
    int p = (int)(((int64_t)i * l->procs + l->procs - 1) / l->n);
    while (p > 0 && first_row(l, p) > i)
        p--;
    while (p + 1 < l->procs && first_row(l, p + 1) <= i)
        p++;
    return (double *)(base + (size_t)p * l->slot) + (size_t)(i - first_row(l, p)) * l->n;
}

/* Loads one double from every page of the other processes' rows of B,
 * in address order, starting with the next process's so that N processes
 * do not all ask the same home first. Under the DSM this fetches them all
 * at the start of the multiply, while every process is fetching: a page
 * that a fault asks for in the middle of the computation waits for its
 * home to stop computing and serve it (about 2-3 times longer here). */
static void fetch_remote_rows(const struct layout *l, const char *base, int me)
{
    for (int q = 1; q < l->procs; q++) {
        int p = (me + q) % l->procs;
        size_t bytes = (size_t)(first_row(l, p + 1) - first_row(l, p)) * l->n * sizeof(double);
        const char *slot = base + (size_t)p * l->slot;
        for (size_t off = 0; off < bytes; off += PAGE)
            (void)*(const volatile double *)(slot + off);
    }
}

/* C rows lo..hi-1 += A rows x B; a[i], c[i], b[k] point at rows. Both the
 * parallel run and the check call this one function. */
__attribute__((noinline)) static void multiply(int n, int lo, int hi, double *const *a,
                                               double *const *b, double *const *c)
{
    for (int jj = 0; jj < n; jj += JB) {
        int je = jj + JB < n ? jj + JB : n;
        for (int kk = 0; kk < n; kk += KB) {
            int ke = kk + KB < n ? kk + KB : n;
            for (int i = lo; i < hi; i++) {
                double *restrict ci = c[i];
                const double *ai = a[i];
                for (int k = kk; k < ke; k++) {
                    const double aik = ai[k];
                    const double *restrict bk = b[k];
                    for (int j = jj; j < je; j++)
                        ci[j] += aik * bk[j];
                }
            }
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: matmul [--size test|quick|full] [-n N]\n"
               "  C = A x B, N x N doubles, rows of A and C block-partitioned (seed 002)\n"
               "  --size  test: N=256; quick: N=2048; full: N=1024 (default)\n"
               "  -n N    matrix order, 1..8192\n");
}

int par_main(int argc, char **argv)
{
    int n = 1024;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){256, 2048, 1024}},
        {"-n", ARG_INT, &n, "a matrix order 1..8192", .lo = 1, .hi = 8192},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    const int me = par_id(), procs = par_n();
    struct layout l = {.n = n, .procs = procs};
    size_t rows_max = (size_t)(n + procs - 1) / (size_t)procs;
    l.slot = (rows_max * (size_t)n * sizeof(double) + PAGE - 1) / PAGE * PAGE;
    char *abase = par_alloc_home((size_t)procs * l.slot, PAR_HOME_BLOCK);
    char *bbase = par_alloc_home((size_t)procs * l.slot, PAR_HOME_BLOCK);
    char *cbase = par_alloc_home((size_t)procs * l.slot, PAR_HOME_BLOCK);

    /* Private row pointers: the layout is computed once, not per element. */
    double **a = malloc(3 * (size_t)n * sizeof *a);
    if (!a)
        par_die("out of memory");
    double **b = a + n, **c = b + n;
    for (int i = 0; i < n; i++) {
        a[i] = row_ptr(&l, abase, i);
        b[i] = row_ptr(&l, bbase, i);
        c[i] = row_ptr(&l, cbase, i);
    }
    /* C's rows are zeroed here too, though fresh shared memory reads as
     * zero: the first touch of a page (a fault, and another when a read
     * comes before the write, as in C += A B) belongs to the set-up, not
     * to the multiply. */
    const int lo = first_row(&l, me), hi = first_row(&l, me + 1);
    for (int i = lo; i < hi; i++)
        for (int j = 0; j < n; j++) {
            a[i][j] = a_elem(i, j);
            b[i][j] = b_elem(i, j);
            c[i][j] = 0.0;
        }

    par_timer_start();
    fetch_remote_rows(&l, bbase, me);
    multiply(n, lo, hi, a, b, c);
    double secs = par_timer_stop();

    bool ok = true;
    char extra[96] = "";
    if (me == 0) {
        /* The reference: private, contiguous, from the element formulas. */
        double *ra = calloc(3 * (size_t)n * n, sizeof *ra);
        /* calloc, though every entry is set below: GCC cannot see that n,
         * which the option table sets, is at least 1 (-Wmaybe-uninitialized) */
        double **rp = calloc(3 * (size_t)n, sizeof *rp);
        if (!ra || !rp)
            par_die("out of memory");
        for (int i = 0; i < 3 * n; i++)
            rp[i] = ra + (size_t)i * n;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                rp[i][j] = a_elem(i, j);
                rp[n + i][j] = b_elem(i, j);
            }
        multiply(n, 0, n, rp, rp + n, rp + 2 * n);
        size_t bad = 0;
        int bi = 0, bj = 0;
        double sum = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double want = rp[2 * n + i][j];
                if (c[i][j] != want && !bad++) {
                    bi = i;
                    bj = j;
                }
                sum += want * want;
            }
        if (bad)
            fprintf(stderr, "matmul: %zu of %zu elements of C wrong; first C[%d][%d] = %.17g, "
                            "want %.17g\n",
                    bad, (size_t)n * n, bi, bj, c[bi][bj], rp[2 * n + bi][bj]);
        ok = !bad;
        snprintf(extra, sizeof extra, "sumsq=%.17g", sum);
        free(rp);
        free(ra);
    }
    free(a);
    char size[16];
    snprintf(size, sizeof size, "%d", n);
    return par_report("matmul", size, secs, ok, extra);
}
