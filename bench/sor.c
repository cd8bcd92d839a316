/*
 * sor.c — red-black successive over-relaxation on a grid in shared memory,
 * the classic page-based DSM program (TreadMarks and its successors used it
 * to show the pattern below).
 *
 *   dsmrun -n 4 build/bench/sor [-n M] [-i ITERS]     (default 1024, 100)
 *
 * An M x M grid of doubles with fixed boundary values; each iteration
 * updates the interior points of one colour ("red": i + j even), then of
 * the other, each from its four neighbours, which are all of the other
 * colour:
 *     u[i][j] = (1 - w) u[i][j] + w/4 (u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1])
 * Node 0 allocates the grid with DSM_HOME_BLOCK and hands the pointer out
 * with dsm_bcast; the rows are split among the nodes in the same contiguous
 * blocks as the pages' homes, so each node writes rows homed where it
 * computes them, and after every half-sweep's barrier only the rows at the
 * edge of a block, which a neighbour wrote, are fetched again.
 *
 * Node 0 then runs the same computation alone on private memory and checks
 * that every point equals the shared grid's. A half-sweep reads only
 * points of the other colour, which nobody writes during it, and every
 * point is computed by the same function with the same operations in the
 * same order, so the two results are identical to the bit, whatever the
 * number of nodes. Prints the checksum, both times, the speedup and "OK";
 * exits 1 on any mismatch (on every node), 2 on a bad option.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dsm.h"

#define OMEGA 1.5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "sor: node %d: ", dsm_rank());
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

/* The value a point starts with: fixed on the boundary, 0 inside. Exact
 * in binary (a multiple of 1/128), so no rounding anywhere decides it. */
static double initial(int m, int i, int j)
{
    if (i == 0 || j == 0 || i == m - 1 || j == m - 1)
        return (double)((i * 7 + j * 13) % 101) / 128.0;
    return 0.0;
}

static void init_rows(double *g, int m, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        for (int j = 0; j < m; j++)
            g[(size_t)i * m + j] = initial(m, i, j);
}

/* Updates the points of `colour` in rows lo..hi-1 (interior rows only).
 * Both the parallel and the sequential run call this one function, so the
 * compiler makes the same arithmetic of both. */
__attribute__((noinline)) static void half_sweep(double *g, int m, int colour, int lo, int hi)
{
    const double a = 1.0 - OMEGA, b = OMEGA / 4.0;
    for (int i = lo; i < hi; i++) {
        double *row = g + (size_t)i * m;
        const double *up = row - m, *down = row + m;
        for (int j = 1 + ((i + 1 + colour) & 1); j < m - 1; j += 2)
            row[j] = a * row[j] + b * (up[j] + down[j] + row[j - 1] + row[j + 1]);
    }
}

/* The first row of node p's block: the first row whose first byte lies in
 * the p-th of the N blocks of pages that DSM_HOME_BLOCK makes (page k of
 * `pages` is homed at node k * N / pages). Rows whose start shares a page
 * with the previous node's block go to the next node. */
static int first_row(int p, int nodes, int m, size_t page)
{
    size_t pages = ((size_t)m * m * sizeof(double) + page - 1) / page;
    for (int i = 0; i < m; i++) {
        size_t pg = (size_t)i * m * sizeof(double) / page;
        if ((int)(pg * (size_t)nodes / pages) >= p)
            return i;
    }
    return m;
}

static size_t page_size(void) { return dsm_page_size(); }

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n N sor [-n M] [-i ITERS]\n"
               "  -n M      grid size M x M, 3..4096 (default 1024)\n"
               "  -i ITERS  iterations, each a red and a black half-sweep (default 100)\n");
}

static int parse(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), nodes = dsm_nodes();
    int m = 1024, iters = 100;
    for (int i = 1; i < argc; i++) {
        bool ok;
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            ok = parse(argv[++i], 3, 4096, &m) == 0;
        else if (!strcmp(argv[i], "-i") && i + 1 < argc)
            ok = parse(argv[++i], 0, 1000000, &iters) == 0;
        else
            ok = false;
        if (!ok) {
            bool help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            if (me == 0)
                usage(help ? stdout : stderr);
            dsm_finish();
            return help ? 0 : 2;
        }
    }
    size_t bytes = (size_t)m * m * sizeof(double);

    double *grid = NULL;
    if (me == 0) {
        grid = dsm_malloc_home(bytes, DSM_HOME_BLOCK);
        if (!grid)
            fail("%s", "dsm_malloc_home returned NULL");
    }
    dsm_bcast(&grid, sizeof grid, 0);

    /* This node's rows, for initialising (boundary rows included) and for
     * the sweeps (interior rows only). */
    size_t page = page_size();
    int lo = first_row(me, nodes, m, page), hi = first_row(me + 1, nodes, m, page);
    int slo = lo < 1 ? 1 : lo, shi = hi > m - 1 ? m - 1 : hi;
    init_rows(grid, m, lo, hi);
    dsm_barrier();

    double t0 = now();
    for (int it = 0; it < iters; it++)
        for (int colour = 0; colour < 2; colour++) {
            if (slo < shi)
                half_sweep(grid, m, colour, slo, shi);
            dsm_barrier();
        }
    double t_par = now() - t0;

    int ok = 1;
    if (me == 0) {
        double *seq = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (seq == MAP_FAILED)
            fail("mmap: %s", strerror(errno));
        init_rows(seq, m, 0, m);
        double t1 = now();
        for (int it = 0; it < iters; it++)
            for (int colour = 0; colour < 2; colour++)
                half_sweep(seq, m, colour, 1, m - 1);
        double t_seq = now() - t1;

        size_t bad = 0, first_bad = 0;
        double sum = 0;
        for (size_t k = 0; k < (size_t)m * m; k++) {
            /* bit-for-bit: memcmp, not ==, so -0.0 vs 0.0 or a NaN is caught too */
            if (memcmp(&grid[k], &seq[k], sizeof seq[k])) {
                if (!bad)
                    first_bad = k;
                bad++;
            }
            sum += seq[k];
        }
        printf("sor: red-black SOR, %dx%d grid, %d iterations (w = %.2f), %d nodes\n", m, m,
               iters, OMEGA, nodes);
        printf("  rows per node: block split along the pages' homes (DSM_HOME_BLOCK), "
               "node 0 rows %d..%d\n", lo, hi - 1);
        printf("  checksum   sum %.17g, fnv1a %016llx\n", sum,
               (unsigned long long)fnv1a(seq, bytes));
        printf("  parallel   %.3f s (node 0, first barrier to last)\n", t_par);
        printf("  sequential %.3f s (node 0, private memory)\n", t_seq);
        printf("  speedup    %.2f\n", t_par > 0 ? t_seq / t_par : 0.0);
        if (bad) {
            size_t i = first_bad / (size_t)m, j = first_bad % (size_t)m;
            printf("  MISMATCH: %zu of %zu points differ; first at [%zu][%zu]: "
                   "parallel %.17g, sequential %.17g\n",
                   bad, (size_t)m * m, i, j, grid[first_bad], seq[first_bad]);
            ok = 0;
        } else {
            printf("  all %zu points equal the sequential result bit for bit\nOK\n",
                   (size_t)m * m);
        }
        fflush(stdout);
        munmap(seq, bytes);
    }
    dsm_bcast(&ok, sizeof ok, 0);
    dsm_finish();
    return ok ? 0 : 1;
}
