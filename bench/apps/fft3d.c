/*
 * fft3d.c — the 3-D FFT of seed 001 (SMS 0.4.1's evaluation: 64 points on
 * each axis, double complex), by slabs with one all-to-all transpose.
 *
 *   fft3d [--size test|quick|full|large] [-n N]
 *         (test 32^3, quick 256^3, full 64^3, large 512^3)
 *
 * X[kz][ky][kx] = sum over z, y, x of a[z][y][x] w^(kz z + ky y + kx x),
 * w = exp(-2 pi i / N): N^2 one-dimensional N-point FFTs along each axis in
 * turn. The array is a stack of N planes a[z] (y rows of x points), split
 * into P slabs of contiguous planes, slab p on process p, each homed at
 * its process (PAR_HOME_BLOCK) and padded to whole pages so no two
 * processes share a page:
 *   1. every process transforms its planes along x and along y: both
 *      axes lie inside a plane, so this needs nothing from anyone;
 *   2. barrier; then the transpose: b[y][z][x] = a[z][y][x], b split by
 *      y the same way. Process p copies, from every plane a[z], its rows
 *      y = lo(p)..lo(p+1)-1: one contiguous run of (N/P) N points per
 *      plane (16 KiB of a 64 KiB plane on 4 nodes, whole pages), read
 *      from each other process in turn, starting with the next one so
 *      the processes spread their requests;
 *   3. every process transforms its planes of b along z, its own data
 *      again; b[ky][kz][kx] = X[kz][ky][kx].
 * The inverse runs the same steps backwards: b along z and x, barrier,
 * a[z][y][x] = b[y][z][x], a along y, times 1 / N^3.
 *
 * A 1-D FFT gathers its line into a private buffer (a stride-N column
 * along y or z, a row along x) and scatters it back, so the butterflies
 * run in the L1 cache. Only the forward transform is timed, and only its
 * second run (see par_main).
 *
 * Self-check (process 0, after the timed forward transform, from private
 * memory): the output against a direct O(N^3) DFT sum at a few points and
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

#define NCHECK 8  /* output points checked against a direct DFT */

/* ---- the slab layout ------------------------------------------------------ */

struct layout {
    int n, P;
    size_t part; /* points from one slab's start to the next's: whole pages */
};

static int lo_of(const struct layout *L, int p) { return (int)((int64_t)p * L->n / L->P); }

/* Plane i (the outer index: z of a, y of b) of array m. */
static cplx *plane(const struct layout *L, cplx *m, int i)
{
    int p = (int)(((int64_t)(i + 1) * L->P - 1) / L->n); /* lo_of(p) <= i < lo_of(p+1) */
    return m + (size_t)p * L->part + (size_t)(i - lo_of(L, p)) * (size_t)L->n * (size_t)L->n;
}

/* ---- the N-point FFT ------------------------------------------------------ */

struct plan {
    struct fft1d line;
    cplx *buf;      /* one line */
};

/* ---- the steps -------------------------------------------------------------- */

/* This process's planes of m along their middle axis (y of a, z of b),
 * after their inner axis x when `inner`; every point times `scale`. */
static void slab_ffts(const struct layout *L, const struct plan *pl, cplx *m, int me, int dir,
                      bool inner, double scale)
{
    int n = L->n;
    cplx *buf = pl->buf;
    for (int i = lo_of(L, me); i < lo_of(L, me + 1); i++) {
        cplx *pa = plane(L, m, i);
        if (inner)
            for (int r = 0; r < n; r++) {
                cplx *row = pa + (size_t)r * n;
                memcpy(buf, row, (size_t)n * sizeof *buf);
                fft1d_run(&pl->line, buf, dir);
                memcpy(row, buf, (size_t)n * sizeof *buf);
            }
        for (int c = 0; c < n; c++) {
            for (int r = 0; r < n; r++)
                buf[r] = pa[(size_t)r * n + c];
            fft1d_run(&pl->line, buf, dir);
            for (int r = 0; r < n; r++)
                pa[(size_t)r * n + c] = (cplx){buf[r].re * scale, buf[r].im * scale};
        }
    }
}

/* This process's planes of dst: dst[i][j][x] = src[j][i][x] for its i. */
static void transpose(const struct layout *L, cplx *src, cplx *dst, int me)
{
    int n = L->n, lo = lo_of(L, me), hi = lo_of(L, me + 1);
    size_t row = (size_t)n * sizeof(cplx);
    for (int k = 1; k <= L->P; k++) {
        int q = (me + k) % L->P;
        for (int j = lo_of(L, q); j < lo_of(L, q + 1); j++) {
            const cplx *run = plane(L, src, j) + (size_t)lo * n; /* rows lo..hi-1 of plane j */
            for (int i = lo; i < hi; i++)
                memcpy(plane(L, dst, i) + (size_t)j * n, run + (size_t)(i - lo) * n, row);
        }
    }
}

static void forward(const struct layout *L, const struct plan *pl, cplx *a, cplx *b, int me)
{
    slab_ffts(L, pl, a, me, 0, true, 1.0);
    par_barrier();
    transpose(L, a, b, me);
    slab_ffts(L, pl, b, me, 0, false, 1.0);
    par_barrier();
}

static void inverse(const struct layout *L, const struct plan *pl, cplx *a, cplx *b, int me)
{
    double n = L->n;
    slab_ffts(L, pl, b, me, 1, true, 1.0);
    par_barrier();
    transpose(L, b, a, me);
    slab_ffts(L, pl, a, me, 1, false, 1.0 / (n * n * n));
    par_barrier();
}

/* ---- the check -------------------------------------------------------------- */

/* X[kz][ky][kx] by the direct sum over all N^3 inputs, with w^t from an
 * N-entry table (t = kz z + ky y + kx x mod N; no FFT code involved),
 * summed row by row and plane by plane so the rounding error grows with
 * about 3 N, not N^3. */
static cplx direct_dft(int n, const int k[3], const cplx *w)
{
    cplx sum = {0, 0};
    for (int z = 0; z < n; z++) {
        cplx pz = {0, 0};
        for (int y = 0; y < n; y++) {
            cplx ry = {0, 0};
            for (int x = 0; x < n; x++) {
                int t = (int)(((int64_t)k[0] * z + (int64_t)k[1] * y + (int64_t)k[2] * x) % n);
                uint64_t j = ((uint64_t)z * (uint64_t)n + (uint64_t)y) * (uint64_t)n + (uint64_t)x;
                ry = cadd(ry, cmul(fft_input(j), w[t]));
            }
            pz = cadd(pz, ry);
        }
        sum = cadd(sum, pz);
    }
    return sum;
}

/* Point j of m in the input's index order (plane by plane), for
 * fft_check. */
static cplx point(const void *layout, cplx *m, uint64_t j)
{
    const struct layout *L = layout;
    uint64_t nn = (uint64_t)L->n * (uint64_t)L->n;
    return plane(L, m, (int)(j / nn))[j % nn];
}

/* Process 0: the forward output (b[ky][kz][kx]) against the input. */
static bool check_forward(const struct layout *L, cplx *b, struct fft_check *ck)
{
    int n = L->n;
    double npts = (double)n * n * n;
    cplx *w = malloc((size_t)n * sizeof *w);
    if (!w)
        par_die("out of memory");
    for (int t = 0; t < n; t++)
        w[t] = fft_root(-1, (uint64_t)t, (uint64_t)n);
    double l1 = fft_check_parseval((uint64_t)n, (uint64_t)n * (uint64_t)n, point, L, b, ck);

    /* The points: the corners (0,0,0), (0,0,1), (N/2,N/2,N/2), (N-1,1,N-2)
     * and pseudo-random ones. */
    int ks[NCHECK][3] = {{0, 0, 0}, {0, 0, 1}, {n / 2, n / 2, n / 2}, {n - 1, 1, n - 2}};
    for (int i = 4; i < NCHECK; i++)
        for (int d = 0; d < 3; d++)
            ks[i][d] = (int)(fft_mix((uint64_t)npts + (uint64_t)(3 * i + d)) % (uint64_t)n);
    double err = 0;
    for (int i = 0; i < NCHECK; i++) {
        cplx want = direct_dft(n, ks[i], w);
        cplx got = plane(L, b, ks[i][1])[(size_t)ks[i][0] * n + ks[i][2]]; /* b[ky][kz][kx] */
        err = fmax(err, hypot(got.re - want.re, got.im - want.im) / l1);
    }
    ck->dft_err = err;
    free(w);
    /* Rounding alone: the FFTs' error is below about log2(N^3) 5 eps of
     * the output's 2-norm (Higham, Accuracy and Stability, thm 24.2), the
     * direct sums' below 3 N eps of the L1 norm; both are under 2e-13 of
     * L1 for N <= 512. A wrong result is off by at least one mis-placed
     * or mis-twiddled term, |x_j| ~ L1 / N^3 >= 7.4e-9 L1 for N <= 512:
     * 1e-9 separates the two. Parseval's sums are of positive terms, each
     * relative error under 2e-13 as well; one wrong point moves eX by
     * about 1 / N^3 >= 7.4e-9 of it. */
    return fft_check_forward(ck);
}

/* ---- options, setup ------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: fft3d [--size test|quick|full|large] [-n N]\n"
               "  3-D complex FFT of N x N x N points, slabs and one transpose\n"
               "  --size  test = 32^3, quick = 256^3, full = 64^3 (the seed's, default),\n"
               "          large = 512^3 (4 GiB shared; over half a second on 2 threads)\n"
               "  -n      N, a power of 2, 4..512\n");
}

static bool is_power_of_2(long v) { return (v & (v - 1)) == 0; }

static void plan_init(struct plan *pl, int n)
{
    fft1d_init(&pl->line, n);
    pl->buf = fft_xmalloc((size_t)n * sizeof(cplx));
}

/* This process's planes of a: the input. */
static void set_input(const struct layout *L, cplx *a, int me)
{
    size_t nn = (size_t)L->n * (size_t)L->n;
    for (int i = lo_of(L, me); i < lo_of(L, me + 1); i++) {
        cplx *pa = plane(L, a, i);
        for (size_t j = 0; j < nn; j++)
            pa[j] = fft_input((uint64_t)i * nn + j);
    }
}

static void plan_free(struct plan *pl)
{
    fft1d_free(&pl->line);
    free(pl->buf);
}

int par_main(int argc, char **argv)
{
    int n = 64;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT_LARGE, .words = par_size_words_large,
         .values = (const int[]){32, 256, 64, 512}},
        {"-n", ARG_INT, &n, "N, a power of 2, 4..512", .lo = 4, .hi = 512, .valid = is_power_of_2},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    int me = par_id(), P = par_n();
    struct layout L = {.n = n, .P = P};
    size_t bytes = fft_part_bytes(n, P, (size_t)n * (size_t)n);
    L.part = bytes / sizeof(cplx);
    /* P slabs of whole pages: block homing puts slab p on node p. */
    cplx *a = par_alloc_home((size_t)P * bytes, PAR_HOME_BLOCK);
    cplx *b = par_alloc_home((size_t)P * bytes, PAR_HOME_BLOCK);

    struct plan pl;
    plan_init(&pl, n);
    /* One untimed transform first, as NAS FT does: every page then has a
     * frame (and under the DSM a known home) on every process that uses
     * it, as the threaded build's pages have from par_alloc's zeroing.
     * It saves no communication: the transpose reads only planes that
     * their homes have rewritten since, and so fetches every page again. */
    set_input(&L, a, me);
    forward(&L, &pl, a, b, me);
    set_input(&L, a, me);

    par_timer_start();
    forward(&L, &pl, a, b, me);
    double secs = par_timer_stop();

    struct fft_check ck = {0};
    bool ok = true;
    if (me == 0)
        ok = check_forward(&L, b, &ck);
    par_barrier(); /* the inverse overwrites b, which process 0 has just read */
    inverse(&L, &pl, a, b, me);
    if (me == 0)
        ok = fft_check_roundtrip((uint64_t)n, (uint64_t)n * (uint64_t)n, point, &L, a, &ck) &&
             ok;
    plan_free(&pl);

    char size[16];
    snprintf(size, sizeof size, "%d^3", n);
    return fft_check_report("fft3d", size, secs, ok, &ck);
}
