/*
 * fft.c — SPLASH-2 FFT: the radix-sqrt(N) "six-step" complex 1-D FFT of
 * Bailey (1990), the kernel seed 000 runs on TSM (262144 points, 12 MB).
 *
 *   fft [--size test|quick|full|large] [-m LOG2N]
 *       (test 2^16, quick 2^22, full 2^18, large 2^26)
 *
 * N = n1 * n1 points are an n1 x n1 matrix A, A[r][c] = x[r n1 + c]. With
 * w = exp(-2 pi i / N) and the output index k = k1 + n1 k2,
 *   X[k1 + n1 k2] = sum_c w_n1^(c k2) w^(c k1) sum_r A[r][c] w_n1^(r k1),
 * which the six steps compute with n1-point FFTs only:
 *   1. transpose A into B            4. transpose B into A
 *   2. FFT every row of B            5. FFT every row of A
 *   3. B[c][k1] *= w^(c k1)          6. transpose A into B
 * and B then holds X in natural order (B[k2][k1] = X[k2 n1 + k1]).
 *
 * Partitioning, as SPLASH-2: the rows of both matrices are split into P
 * contiguous blocks, process p owning rows lo(p)..lo(p+1)-1 of each, and
 * every step but the transposes touches only the owner's rows. A transpose
 * is blockwise: process p builds its rows of the destination from the
 * (p, q) sub-blocks of every process q's rows of the source, starting with
 * q = p + 1 so the processes do not all read from the same one at once.
 * One barrier follows each step that the next transpose reads.
 *
 * Layout for a page-based DSM: each process's rows of a matrix are one
 * partition, padded to whole pages and homed at it (PAR_HOME_BLOCK), so
 * its writes never leave the node and it never shares a written page.
 * Inside a partition the rows are stored panel by panel: columns
 * lo(q)..lo(q+1)-1 of all its rows (the sub-block that process q reads in
 * a transpose) are contiguous, row-major. A transpose therefore fetches
 * exactly the (N/P^2)-point sub-blocks it needs, each as a run of whole
 * pages, instead of every page of every remote row (with plain rows of
 * n1 = 512 points, one 8 KiB page each, process p would use only 1/P of
 * each page it fetched: at 2^18 points, 768 page faults a transform on each
 * of 2 nodes instead of 384, and 1152 instead of 288 on 4). A row FFT gathers its row from the P panels into
 * a private buffer and scatters it back, which also keeps the butterflies
 * in the L1 cache.
 *
 * The twiddles of step 3 are precomputed for the owner's rows, privately,
 * before the timed section (SPLASH-2's umain2, of which each process only
 * ever reads its own rows). Only the forward transform is timed, and only
 * its second run (see par_main).
 *
 * Self-check (process 0, after the timed section, from private memory):
 * the forward output against a direct O(N) DFT sum at a few points and
 * against Parseval's identity; then all processes run the inverse
 * transform, and its result must equal the input.
 */
#include "fft1d.h"
#include "fft_check.h"
#include "par.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE 16   /* transpose tile: two 16 x 16 tiles of 16 B fill 8 KiB of L1 */
#define NCHECK 8  /* output points checked against a direct DFT */

/* ---- the matrix layout -------------------------------------------------- */

struct layout {
    int n1, P;
    size_t part; /* points from one partition's start to the next's: whole pages */
};

static int lo_of(const struct layout *L, int p) { return (int)((int64_t)p * L->n1 / L->P); }
static int rows_of(const struct layout *L, int p) { return lo_of(L, p + 1) - lo_of(L, p); }

/* Sub-block (p, q): process p's rows, process q's columns; rows_of(q) wide. */
static cplx *sub(const struct layout *L, cplx *m, int p, int q)
{
    return m + (size_t)p * L->part + (size_t)rows_of(L, p) * (size_t)lo_of(L, q);
}

/* Element [r][c]: for the checks, not the kernel. */
static cplx *at(const struct layout *L, cplx *m, int r, int c)
{
    int p = (int)(((int64_t)(r + 1) * L->P - 1) / L->n1); /* lo_of(p) <= r < lo_of(p+1) */
    int q = (int)(((int64_t)(c + 1) * L->P - 1) / L->n1);
    return sub(L, m, p, q) + (size_t)(r - lo_of(L, p)) * (size_t)rows_of(L, q) + (c - lo_of(L, q));
}

/* ---- the n1-point FFT --------------------------------------------------- */

/* One process's private tables for the row FFTs and the twiddles. */
struct plan {
    struct fft1d row;
    cplx *tw;       /* w^(c k1) for this process's rows c, row-major */
    cplx *buf;      /* one row */
};

/* ---- the six steps ------------------------------------------------------ */

/* This process's rows of dst = the transpose of src's columns for them. */
static void transpose(const struct layout *L, cplx *src, cplx *dst, int me)
{
    int h = rows_of(L, me);
    for (int k = 1; k <= L->P; k++) {
        int q = (me + k) % L->P;
        int hq = rows_of(L, q);
        /* s: hq x h, row-major (q's rows, my columns); d: h x hq */
        const cplx *s = sub(L, src, q, me);
        cplx *d = sub(L, dst, me, q);
        for (int jj = 0; jj < hq; jj += TILE)
            for (int ii = 0; ii < h; ii += TILE) {
                int je = jj + TILE < hq ? jj + TILE : hq, ie = ii + TILE < h ? ii + TILE : h;
                for (int i = ii; i < ie; i++)
                    for (int j = jj; j < je; j++)
                        d[(size_t)i * hq + j] = s[(size_t)j * h + i];
            }
    }
}

/* FFT of each of this process's rows of m; then the twiddles of step 3
 * (twiddle) or the 1/N of an inverse transform (scale). */
static void row_ffts(const struct layout *L, const struct plan *pl, cplx *m, int me, int dir,
                     bool twiddle, double scale)
{
    int h = rows_of(L, me), n1 = L->n1;
    cplx *buf = pl->buf;
    for (int i = 0; i < h; i++) {
        for (int q = 0; q < L->P; q++)
            memcpy(buf + lo_of(L, q), sub(L, m, me, q) + (size_t)i * rows_of(L, q),
                   (size_t)rows_of(L, q) * sizeof *buf);
        fft1d_run(&pl->row, buf, dir);
        if (twiddle) {
            const cplx *t = pl->tw + (size_t)i * n1;
            for (int k = 0; k < n1; k++)
                buf[k] = cmul(buf[k], dir ? (cplx){t[k].re, -t[k].im} : t[k]);
        }
        if (scale != 1.0)
            for (int k = 0; k < n1; k++)
                buf[k] = (cplx){buf[k].re * scale, buf[k].im * scale};
        for (int q = 0; q < L->P; q++)
            memcpy(sub(L, m, me, q) + (size_t)i * rows_of(L, q), buf + lo_of(L, q),
                   (size_t)rows_of(L, q) * sizeof *buf);
    }
}

/* The transform of a (destroyed: it is the scratch matrix) into b.
 * dir 0: forward; 1: inverse, scaled by 1/N. */
static void fft6(const struct layout *L, const struct plan *pl, cplx *a, cplx *b, int me, int dir)
{
    double n = (double)L->n1 * L->n1;
    transpose(L, a, b, me);
    row_ffts(L, pl, b, me, dir, true, 1.0);
    par_barrier();
    transpose(L, b, a, me);
    row_ffts(L, pl, a, me, dir, false, dir ? 1.0 / n : 1.0);
    par_barrier();
    transpose(L, a, b, me);
    par_barrier();
}

/* ---- the check ------------------------------------------------------------ */

/* X[k] by the direct sum over all N inputs, with w^t for t = j k mod N
 * made as exp(-2 pi i th/n1) exp(-2 pi i tl/N), t = th n1 + tl, from two
 * n1-entry tables (no FFT code involved). Summed row by row, so the
 * rounding error grows with 2 sqrt(N), not N. */
static cplx direct_dft(int n1, uint64_t k, const cplx *hi, const cplx *lo)
{
    uint64_t n = (uint64_t)n1 * (uint64_t)n1;
    cplx sum = {0, 0};
    for (uint64_t r = 0; r < (uint64_t)n1; r++) {
        cplx row = {0, 0};
        for (uint64_t c = 0; c < (uint64_t)n1; c++) {
            uint64_t j = r * (uint64_t)n1 + c, t = (j * k) & (n - 1); /* N: a power of 2 */
            row = cadd(row, cmul(fft_input(j), cmul(hi[t / (uint64_t)n1], lo[t % (uint64_t)n1])));
        }
        sum = cadd(sum, row);
    }
    return sum;
}

/* Point j of m in the input's index order, for fft_check. */
static cplx point(const void *layout, cplx *m, uint64_t j)
{
    const struct layout *L = layout;
    return *at(L, m, (int)(j / (uint64_t)L->n1), (int)(j % (uint64_t)L->n1));
}

/* Process 0: the forward output in b against the input. */
static bool check_forward(const struct layout *L, cplx *b, struct fft_check *ck)
{
    int n1 = L->n1;
    uint64_t n = (uint64_t)n1 * (uint64_t)n1;
    cplx *hi = malloc((size_t)n1 * sizeof *hi), *lo = malloc((size_t)n1 * sizeof *lo);
    if (!hi || !lo)
        par_die("out of memory");
    for (int t = 0; t < n1; t++) {
        hi[t] = fft_root(-1, (uint64_t)t, (uint64_t)n1);
        lo[t] = fft_root(-1, (uint64_t)t, n);
    }
    double l1 = fft_check_parseval((uint64_t)n1, (uint64_t)n1, point, L, b, ck);

    /* The points: both ends, the middle, and pseudo-random ones. */
    uint64_t ks[NCHECK] = {0, 1, n / 2, n - 1};
    for (int i = 4; i < NCHECK; i++)
        ks[i] = fft_mix(n + (uint64_t)i) % n;
    double err = 0;
    for (int i = 0; i < NCHECK; i++) {
        uint64_t k = ks[i];
        cplx want = direct_dft(n1, k, hi, lo);
        cplx got = *at(L, b, (int)(k / (uint64_t)n1), (int)(k % (uint64_t)n1));
        double e = hypot(got.re - want.re, got.im - want.im) / l1;
        if (e > err)
            err = e;
    }
    ck->dft_err = err;
    free(hi);
    free(lo);
    /* Rounding alone: the FFT's error is below about log2(N) * 5 eps of
     * the output's 2-norm (Higham, Accuracy and Stability, thm 24.2) and
     * the row-by-row sums' below 2 sqrt(N) eps of the L1 norm; both are
     * under 1e-11 of L1 for N <= 2^26. A wrong result is off by at least
     * one mis-placed or mis-twiddled term, |x_j| ~ L1 / N >= 1.5e-8 L1
     * for N <= 2^26: 1e-9 separates the two. Parseval's sums are of
     * positive terms, each relative error under log2(N) 5 eps + 2 sqrt(N)
     * eps < 1e-11; one wrong point moves eX by about 1/N >= 1.5e-8 of it. */
    return fft_check_forward(ck);
}

/* ---- options, setup ------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: fft [--size test|quick|full|large] [-m LOG2N]\n"
               "  SPLASH-2 FFT: six-step complex 1-D FFT of N = 2^LOG2N points\n"
               "  --size  test = 2^16, quick = 2^22, full = 2^18 (the seed's, default),\n"
               "          large = 2^26 (2 GiB shared; over half a second on 2 threads)\n"
               "  -m      LOG2N, even, 4..26\n");
}

static bool is_even(long v) { return v % 2 == 0; }

static void plan_init(struct plan *pl, const struct layout *L, int me)
{
    int n1 = L->n1, h = rows_of(L, me), lo = lo_of(L, me);
    uint64_t n = (uint64_t)n1 * (uint64_t)n1;
    fft1d_init(&pl->row, n1);
    pl->tw = fft_xmalloc((size_t)h * (size_t)n1 * sizeof(cplx));
    for (int i = 0; i < h; i++)
        for (int k = 0; k < n1; k++)
            pl->tw[(size_t)i * n1 + k] = fft_root(-1, (uint64_t)(lo + i) * (uint64_t)k, n);
    pl->buf = fft_xmalloc((size_t)n1 * sizeof(cplx));
}

/* This process's rows of x: the input. */
static void set_input(const struct layout *L, cplx *x, int me)
{
    for (int r = lo_of(L, me); r < lo_of(L, me + 1); r++)
        for (int c = 0; c < L->n1; c++)
            *at(L, x, r, c) = fft_input((uint64_t)r * (uint64_t)L->n1 + (uint64_t)c);
}

static void plan_free(struct plan *pl)
{
    fft1d_free(&pl->row);
    free(pl->tw);
    free(pl->buf);
}

int par_main(int argc, char **argv)
{
    int m = 18;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &m, PAR_SIZE_WANT_LARGE, .words = par_size_words_large,
         .values = (const int[]){16, 22, 18, 26}},
        {"-m", ARG_INT, &m, "LOG2N, even, 4..26", .lo = 4, .hi = 26, .valid = is_even},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    int me = par_id(), P = par_n();
    struct layout L = {.n1 = 1 << (m / 2), .P = P};
    size_t bytes = fft_part_bytes(L.n1, P, (size_t)L.n1);
    L.part = bytes / sizeof(cplx);
    /* P partitions of whole pages: block homing puts partition p on node p. */
    cplx *x = par_alloc_home((size_t)P * bytes, PAR_HOME_BLOCK);
    cplx *s = par_alloc_home((size_t)P * bytes, PAR_HOME_BLOCK);

    struct plan pl;
    plan_init(&pl, &L, me);
    /* One untimed transform first, as NAS FT does: every page then has a
     * frame (and under the DSM a known home) on every process that uses
     * it, as the threaded build's pages have from par_alloc's zeroing.
     * It saves no communication: each transpose reads only pages that
     * their homes have rewritten since, and so fetches every one again. */
    set_input(&L, x, me);
    fft6(&L, &pl, x, s, me, 0);
    set_input(&L, x, me);

    par_timer_start();
    fft6(&L, &pl, x, s, me, 0);
    double secs = par_timer_stop();

    struct fft_check ck = {0};
    bool ok = true;
    if (me == 0)
        ok = check_forward(&L, s, &ck);
    /* The inverse reads s and writes x first; process 0's reads of s end
     * before it reaches the barrier after which s is written again. */
    fft6(&L, &pl, s, x, me, 1);
    if (me == 0)
        ok = fft_check_roundtrip((uint64_t)L.n1, (uint64_t)L.n1, point, &L, x, &ck) && ok;
    plan_free(&pl);

    char size[16];
    snprintf(size, sizeof size, "2^%d", m);
    return fft_check_report("fft", size, secs, ok, &ck);
}
