/*
 * mandel.c — the Mandelbrot set with lock-based dynamic work distribution,
 * seed 001's second application (SMS 0.4.1, Fig. 5).
 *
 *   mandel [--size test|quick|full] [-n N] [-i ITERS] [-t TILES]
 *
 * As in the seed: z[0] = 0, z[k+1] = z[k]^2 - c, for c = x + iy over
 * 0.3 < x < 0.4, 0.5 < y < 0.6 on an N x N image (4096 x 4096), cut into
 * 512 tiles that are handed out dynamically, since the work per pixel
 * varies over the region. A pixel's value is the number of iterations
 * before |z| > 2, at most ITERS (256; the seed does not give its limit).
 *
 * The work queue is a counter in shared memory under a DSM lock: a process
 * takes the next tile number under the lock and computes the whole tile
 * into the shared image. A tile is a band of consecutive rows, so its
 * pixels are contiguous in the row-major image; every tile starts on a
 * page boundary and occupies whole pages (at the full size a tile is 8
 * rows of 4096 16-bit counts, exactly 8 pages; otherwise its slot is
 * padded), so tiles computed by different processes never share a page.
 * The image is homed by first touch: a tile's pages are homed at the
 * process that computes it, whose writes then need no twins and no diffs.
 * The counter sits in a page of its own, so fetching it carries nothing
 * else.
 *
 * Self-check: process 0 recomputes the image alone in private memory with
 * the same function, and every count must be equal (integers from the
 * same floating-point operations in the same order).
 */
#include "par.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE 8192 /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */
#define QUEUE_LOCK 0

/* The region of the seed's Fig. 5. */
static const double X0 = 0.3, X1 = 0.4, Y0 = 0.5, Y1 = 0.6;

struct params {
    int n, iters, tiles;
};

/* Tile t covers rows row0(t) .. row0(t+1)-1; tiles differ by at most a row. */
static int row0(const struct params *pr, int t) { return (int)((int64_t)pr->n * t / pr->tiles); }

/* Bytes between the starts of consecutive tiles: the largest tile rounded
 * up to whole pages. */
static size_t tile_stride(const struct params *pr)
{
    size_t rows = (size_t)(pr->n + pr->tiles - 1) / (size_t)pr->tiles;
    size_t bytes = rows * (size_t)pr->n * sizeof(uint16_t);
    return (bytes + PAGE - 1) / PAGE * PAGE;
}

/* Computes tile t into out (its rows, row-major). The parallel run and the
 * check both call this one function, so the compiler makes the same
 * arithmetic of both. */
__attribute__((noinline)) static void compute_tile(const struct params *pr, int t, uint16_t *out)
{
    const double dx = (X1 - X0) / pr->n, dy = (Y1 - Y0) / pr->n;
    const int maxit = pr->iters;
    for (int row = row0(pr, t); row < row0(pr, t + 1); row++) {
        const double cy = Y0 + dy * row;
        for (int col = 0; col < pr->n; col++) {
            const double cx = X0 + dx * col;
            double zx = 0, zy = 0;
            int k = 0;
            /* z^2 - c; stops once |z|^2 > 4 */
            while (k < maxit) {
                double xx = zx * zx, yy = zy * zy;
                if (xx + yy > 4.0)
                    break;
                zy = 2.0 * zx * zy - cy;
                zx = xx - yy - cx;
                k++;
            }
            *out++ = (uint16_t)k;
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mandel [--size test|quick|full] [-n N] [-i ITERS] [-t TILES]\n"
               "  Mandelbrot set z <- z^2 - c over 0.3<x<0.4, 0.5<y<0.6 (seed 001),\n"
               "  tiles handed out dynamically from a lock-protected counter\n"
               "  --size   test: 512x512, 64 tiles; quick: 2048x2048, 512 tiles;\n"
               "           full: 4096x4096, 512 tiles (default); all 256 iterations\n"
               "  -n N     image N x N, 8..16384\n"
               "  -i ITERS most iterations per pixel, 1..65535\n"
               "  -t TILES tiles (bands of rows), 1..N\n");
}

int par_main(int argc, char **argv)
{
    struct params pr = {.n = 4096, .iters = 256, .tiles = 512};
    struct arg_option options[] = {
        {"--size", ARG_WORD, &pr.n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){512, 2048, 4096}},
        {"--size", ARG_WORD, &pr.iters, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){256, 256, 256}},
        {"--size", ARG_WORD, &pr.tiles, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){64, 512, 512}},
        {"-n", ARG_INT, &pr.n, "an image side 8..16384", .lo = 8, .hi = 16384},
        {"-i", ARG_INT, &pr.iters, "an iteration count 1..65535", .lo = 1, .hi = 65535},
        {"-t", ARG_INT, &pr.tiles, "a tile count 1..N", .lo = 1, .hi = 16384},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    if (pr.tiles > pr.n)
        return par_bad_args(usage, "%d tiles (-t) but only %d rows (-n)", pr.tiles, pr.n);
    const size_t stride = tile_stride(&pr);
    /* The counter's page first, then the tiles', all homed by first touch. */
    char *shared = par_alloc_home(PAGE + (size_t)pr.tiles * stride, PAR_HOME_FIRST_TOUCH);
    int *next = (int *)shared;
    char *image = shared + PAGE;

    par_timer_start();
    int mine = 0;
    for (;;) {
        par_lock(QUEUE_LOCK);
        int t = (*next)++;
        par_unlock(QUEUE_LOCK);
        if (t >= pr.tiles)
            break;
        compute_tile(&pr, t, (uint16_t *)(image + (size_t)t * stride));
        mine++;
    }
    double secs = par_timer_stop();

    /* Counts per process, to show how the queue balanced the load. */
    int *counts = par_alloc_home((size_t)par_n() * PAGE, PAR_HOME_BLOCK);
    counts[par_id() * (PAGE / sizeof(int))] = mine;
    par_barrier();

    bool ok = true;
    uint64_t sum = 0;
    char extra[128] = "";
    if (par_id() == 0) {
        uint16_t *ref = malloc(stride);
        if (!ref)
            par_die("out of memory");
        size_t bad = 0, first_bad = 0;
        for (int t = 0; t < pr.tiles; t++) {
            size_t npix = (size_t)(row0(&pr, t + 1) - row0(&pr, t)) * (size_t)pr.n;
            const uint16_t *got = (const uint16_t *)(image + (size_t)t * stride);
            compute_tile(&pr, t, ref);
            for (size_t k = 0; k < npix; k++) {
                if (got[k] != ref[k] && !bad++)
                    first_bad = (size_t)row0(&pr, t) * (size_t)pr.n + k;
                sum += ref[k];
            }
        }
        free(ref);
        int total = 0, lo = pr.tiles, hi = 0;
        for (int p = 0; p < par_n(); p++) {
            int c = counts[p * (PAGE / sizeof(int))];
            total += c;
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        if (bad)
            fprintf(stderr, "mandel: %zu of %zu pixels differ from the sequential image; "
                            "first at row %zu column %zu\n",
                    bad, (size_t)pr.n * pr.n, first_bad / (size_t)pr.n, first_bad % (size_t)pr.n);
        if (total != pr.tiles)
            fprintf(stderr, "mandel: %d tiles computed, want %d\n", total, pr.tiles);
        ok = !bad && total == pr.tiles;
        snprintf(extra, sizeof extra, "iters=%d tiles=%d tiles_per_proc=%d..%d checksum=%llu",
                 pr.iters, pr.tiles, lo, hi, (unsigned long long)sum);
    }
    char size[16];
    snprintf(size, sizeof size, "%d", pr.n);
    return par_report("mandel", size, secs, ok, extra);
}
