/*
 * cg.c — NAS Parallel Benchmarks CG, classes S, W and A, as a plain OpenMP
 * program: the estimate of the smallest eigenvalue of a sparse symmetric
 * positive definite matrix by inverse power iteration, each step solving
 * A z = x by 25 iterations of the conjugate gradient method.
 *
 *   cg_omp [--size test|quick|full] [-c S|W|A]   (test = S, quick = W, full = A)
 *
 *   class   na     nonzer  niter  shift   (rcond = 0.1 for all)
 *   S       1400   7       15     10
 *   W       7000   8       15     12
 *   A       14000  11      15     20
 *
 * The matrix is NPB's, built by ../kernels/npb_cg.h (which says how), the
 * kernels this program shares with the dsm-API version, bench/apps/cg.c;
 * it is built once, by the initial thread, outside the timed section.
 *
 * Parallel structure: NPB 3.x's OpenMP CG. conj_grad is one parallel
 * region around the 25 CG iterations; inside it the sparse product q = A p
 * and the vector updates are `omp for schedule(static)` loops over the
 * rows (so a thread keeps the same rows of every vector throughout), each
 * dot product an `omp for reduction(+:)` into a shared scalar that a
 * `single` clears beforehand, and the implicit barriers of the loops are
 * the only synchronisation. The power step's norms are one more parallel
 * loop with a reduction, as in NPB's main loop.
 *
 * Self-check: zeta after niter steps against NPB's verification value, to
 * a relative error of 1e-10, as NPB's own test (see cg_classes[] in
 * ../kernels/npb_cg.h).
 *
 * A standalone program: nothing but the C library, <omp.h> and the headers
 * ../kernels/npb_cg.h and npb_class.h, so that it can be built unchanged
 * by `clang -fopenmp` (threads) and by dsmcc (one thread per node). It
 * prints one line,
 *   RESULT app=cg mode=omp procs=T size=A time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/npb_class.h"
#include "../kernels/npb_cg.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The matrix (CSR, 0-based, all n rows) and the vectors, globals as in
 * NPB. */
static int n;
static struct cg_rows mat;
static double *x, *z, *p, *q, *r;

/* Shared scalars of conj_grad's parallel region: the reductions' targets. */
static double rho, rho0, d, rnorm_sum;

static void *xmalloc(size_t size)
{
    void *m = malloc(size ? size : 1);
    if (!m) {
        fprintf(stderr, "cg: out of memory (%zu bytes)\n", size);
        exit(2);
    }
    return m;
}

/* NPB's conj_grad: 25 CG iterations on A z = x from z = 0; returns
 * ||x - A z||. One parallel region; every loop is worksharing over the
 * rows with the same static schedule, so each thread's rows of p, q, r and
 * z are written by that thread alone, and the reads of other threads' rows
 * (p in the sparse product) come after a loop's implicit barrier. */
static double conj_grad(void)
{
#pragma omp parallel default(shared)
    {
#pragma omp single
        rho = 0.0;

#pragma omp for schedule(static) reduction(+ : rho)
        for (int j = 0; j < n; j++) {
            q[j] = 0.0;
            z[j] = 0.0;
            r[j] = x[j];
            p[j] = r[j];
            rho += r[j] * r[j];
        }

        for (int cgit = 0; cgit < CGITMAX; cgit++) {
            /* As NPB: keep rho and clear the reductions' targets. nowait is
             * safe: every thread read rho (for beta) before the barrier
             * ending the previous loop, and nobody reads rho0, d or rho
             * again before the barrier ending the product below, which the
             * thread running the single reaches only after it. */
#pragma omp single nowait
            {
                rho0 = rho;
                d = 0.0;
                rho = 0.0;
            }

            /* q = A p: the rows of the sparse matrix, each a dot product */
#pragma omp for schedule(static)
            for (int j = 0; j < n; j++)
                q[j] = cg_row_product(&mat, j, p);

#pragma omp for schedule(static) reduction(+ : d)
            for (int j = 0; j < n; j++)
                d += p[j] * q[j];

            double alpha = rho0 / d;

#pragma omp for schedule(static) reduction(+ : rho)
            for (int j = 0; j < n; j++) {
                z[j] += alpha * p[j];
                r[j] -= alpha * q[j];
                rho += r[j] * r[j];
            }

            double beta = rho / rho0;

#pragma omp for schedule(static)
            for (int j = 0; j < n; j++)
                p[j] = r[j] + beta * p[j];
        }

        /* ||x - A z||: r = A z, then the norm of the difference */
#pragma omp single nowait
        rnorm_sum = 0.0;
#pragma omp for schedule(static)
        for (int j = 0; j < n; j++)
            r[j] = cg_row_product(&mat, j, z);
#pragma omp for schedule(static) reduction(+ : rnorm_sum)
        for (int j = 0; j < n; j++) {
            double dd = x[j] - r[j];
            rnorm_sum += dd * dd;
        }
    }
    return sqrt(rnorm_sum);
}

/* One step of the inverse power method: z from conj_grad, zeta from x.z,
 * then x = z / ||z||. Returns zeta. */
static double power_step(double shift, double *rnorm)
{
    *rnorm = conj_grad();
    double xz = 0.0, zz = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : xz, zz)
    for (int j = 0; j < n; j++) {
        xz += x[j] * z[j];
        zz += z[j] * z[j];
    }
    double norm = 1.0 / sqrt(zz);
#pragma omp parallel for schedule(static)
    for (int j = 0; j < n; j++)
        x[j] = norm * z[j];
    return shift + 1.0 / xz;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cg_omp [--size test|quick|full] [-c S|W|A]\n"
               "  NAS CG: inverse power method, 25 CG iterations per step\n"
               "  --size  test = class S (na=1400), quick = W (7000), full = A (14000, default)\n"
               "  -c      NPB class S, W or A\n"
               "  threads: OMP_NUM_THREADS\n");
}

int main(int argc, char **argv)
{
    int k; /* cg_classes[k] */
    int rc = npb_class_option(argc, argv, usage, &k);
    if (rc != NPB_RUN)
        return rc;
    const struct cg_class *cls = &cg_classes[k];
    n = cls->na;
    if (!cg_makea(cls, 0, n, NULL, &mat)) {
        fprintf(stderr, "cg: out of memory\n");
        exit(2);
    }
    size_t vbytes = (size_t)n * sizeof(double);
    x = xmalloc(vbytes);
    z = xmalloc(vbytes);
    p = xmalloc(vbytes);
    q = xmalloc(vbytes);
    r = xmalloc(vbytes);

    /* As NPB: one untimed step to touch every page (each thread its own
     * rows first, by the same static schedule), then x = 1 again. */
#pragma omp parallel for schedule(static)
    for (int j = 0; j < n; j++)
        x[j] = 1.0;
    double rnorm = 0, zeta = 0;
    power_step(cls->shift, &rnorm);
#pragma omp parallel for schedule(static)
    for (int j = 0; j < n; j++)
        x[j] = 1.0;

    double t0 = omp_get_wtime();
    for (int it = 0; it < cls->niter; it++)
        zeta = power_step(cls->shift, &rnorm);
    double secs = omp_get_wtime() - t0;

    int ok = cg_verify(cls, zeta, true);
    printf("RESULT app=cg mode=omp procs=%d size=%c time=%.6f check=%s na=%d nonzer=%d "
           "zeta=%.13f rnorm=%.6e\n",
           omp_get_max_threads(), cls->name, secs, ok ? "ok" : "FAIL", n, cls->nonzer, zeta,
           rnorm);
    return ok ? 0 : 1;
}
