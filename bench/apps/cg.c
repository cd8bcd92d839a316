/*
 * cg.c — NAS Parallel Benchmarks CG, classes S, W and A: the estimate of
 * the smallest eigenvalue of a sparse symmetric positive definite matrix
 * by inverse power iteration, each step solving A z = x by 25 iterations
 * of the conjugate gradient method (the kernel seed 003 runs on
 * Omni/SCASH, class A).
 *
 *   cg [--size test|quick|full] [-c S|W|A]      (test = S, quick = W, full = A)
 *
 *   class   na     nonzer  niter  shift   (rcond = 0.1 for all)
 *   S       1400   7       15     10
 *   W       7000   8       15     12
 *   A       14000  11      15     20
 *
 * The matrix is NPB's, built by ../kernels/npb_cg.h (which says how), the
 * kernels this program shares with its OpenMP version, bench/omp/cg.c.
 *
 * Parallel layout. The rows are split among the processes in contiguous
 * blocks. The matrix is only ever read by the process that owns a row,
 * so each process generates its own rows into private memory (as the
 * NPB MPI version does: every process draws the whole random sequence,
 * which is cheap, and assembles only its rows). The vectors p, q, r, z and
 * x live in shared memory: each is N slots of whole pages, slot i homed at
 * process i and holding exactly process i's rows, so every element is
 * written only at its home and never shares a page with another process's
 * elements. Column indices are translated once into these padded
 * positions, so the sparse product reads p straight from the slots. Per
 * CG iteration the only communication is q = A p reading the other
 * processes' slices of p (a random sparse matrix touches nearly all of
 * them: whole pages, in runs), and two dot products, each reduced through
 * a per-process slot page and one barrier, every process adding the slots
 * in the same order so all compute the same alpha and beta.
 *
 * Self-check: zeta after niter steps against NPB's verification value, to
 * a relative error of 1e-10, as NPB's own test (see cg_classes[] in
 * ../kernels/npb_cg.h).
 */
#include "npb.h"
#include "../kernels/npb_cg.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 8192 /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */
#define PAGE_DOUBLES (PAGE / sizeof(double))

/* A process's partial dot products, each in a page of its own. Each field
 * has one reduction of its own, so a slot is never rewritten while another
 * process may still read the value it held (the barriers in between
 * order it). */
struct partial {
    double rho, d, res, xz, zz;
};
union slot {
    struct partial v;
    char pad[PAGE];
};

struct cg {
    int me, procs;
    size_t slot;            /* doubles per process slice of a vector */
    struct cg_rows a;
    double *p, *q, *r, *z, *x; /* whole padded vectors (shared) */
    union slot *red;
};

/* Sums one field (its offset in struct partial) over all processes'
 * slots, in process order: every process gets the same value. */
static double reduce(const struct cg *cg, size_t field)
{
    double s = 0;
    for (int p = 0; p < cg->procs; p++) {
        double v;
        memcpy(&v, (const char *)&cg->red[p].v + field, sizeof v);
        s += v;
    }
    return s;
}
#define REDUCE(cg, field) reduce((cg), offsetof(struct partial, field))

/* out (own slice) = A v, where v is a whole padded vector. */
static void matvec(const struct cg_rows *a, const double *v, double *out)
{
    for (int j = 0; j < a->hi - a->lo; j++)
        out[j] = cg_row_product(a, j, v);
}

/* NPB's conj_grad followed by the norms of the power step; returns zeta
 * and leaves x = z / ||z|| (every process its own slice). */
static double cg_step(struct cg *cg, double shift, double *rnorm)
{
    const int m = cg->a.hi - cg->a.lo;
    const size_t off = (size_t)cg->me * cg->slot;
    double *p = cg->p + off, *q = cg->q + off, *r = cg->r + off, *z = cg->z + off,
           *x = cg->x + off;
    struct partial *mine = &cg->red[cg->me].v;

    double s = 0;
    for (int j = 0; j < m; j++) {
        q[j] = 0.0;
        z[j] = 0.0;
        r[j] = x[j];
        p[j] = r[j];
        s += r[j] * r[j];
    }
    mine->rho = s;
    par_barrier(); /* also: every p slice is complete */
    double rho = REDUCE(cg, rho);

    for (int it = 0; it < CGITMAX; it++) {
        if (it > 0)
            par_barrier(); /* every p slice is complete */
        matvec(&cg->a, cg->p, q);
        s = 0;
        for (int j = 0; j < m; j++)
            s += p[j] * q[j];
        mine->d = s;
        par_barrier();
        double alpha = rho / REDUCE(cg, d);
        double rho0 = rho;
        s = 0;
        for (int j = 0; j < m; j++) {
            z[j] += alpha * p[j];
            r[j] -= alpha * q[j];
            s += r[j] * r[j];
        }
        mine->rho = s;
        par_barrier(); /* also: every z slice is final */
        rho = REDUCE(cg, rho);
        double beta = rho / rho0;
        for (int j = 0; j < m; j++)
            p[j] = r[j] + beta * p[j];
    }

    /* ||x - A z||, and the x.z and z.z of the power step, in one reduction. */
    matvec(&cg->a, cg->z, r);
    double res = 0, xz = 0, zz = 0;
    for (int j = 0; j < m; j++) {
        double d = x[j] - r[j];
        res += d * d;
        xz += x[j] * z[j];
        zz += z[j] * z[j];
    }
    mine->res = res;
    mine->xz = xz;
    mine->zz = zz;
    par_barrier(); /* after it, nobody reads z again this step */
    *rnorm = sqrt(REDUCE(cg, res));
    xz = REDUCE(cg, xz);
    double norm = 1.0 / sqrt(REDUCE(cg, zz));
    for (int j = 0; j < m; j++)
        x[j] = norm * z[j];
    return shift + 1.0 / xz;
}

static void usage(FILE *f)
{
    npb_usage(f, "cg", "NAS CG: inverse power method, 25 CG iterations per step",
              "class S (na=1400), quick = W (7000), full = A (14000, default)");
}

int par_main(int argc, char **argv)
{
    int k; /* cg_classes[k] */
    int rc = npb_class_args(argc, argv, usage, &k);
    if (rc != ARGS_RUN)
        return rc;
    const struct cg_class *cls = &cg_classes[k];
    struct cg cg = {.me = par_id(), .procs = par_n()};
    const int n = cls->na;
    size_t rows_max = (size_t)(n + cg.procs - 1) / (size_t)cg.procs;
    cg.slot = (rows_max + PAGE_DOUBLES - 1) / PAGE_DOUBLES * PAGE_DOUBLES;
    size_t vbytes = (size_t)cg.procs * cg.slot * sizeof(double);
    double **vecs[] = {&cg.p, &cg.q, &cg.r, &cg.z, &cg.x};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        *vecs[i] = par_alloc_home(vbytes, PAR_HOME_BLOCK);
    cg.red = par_alloc_home((size_t)cg.procs * sizeof *cg.red, PAR_HOME_BLOCK);

    /* Row blocks and the padded position of every global column. */
    int *pos = malloc((size_t)n * sizeof *pos);
    if (!pos)
        par_die("out of memory");
    for (int p = 0; p < cg.procs; p++) {
        int lo = (int)((int64_t)n * p / cg.procs), hi = (int)((int64_t)n * (p + 1) / cg.procs);
        for (int c = lo; c < hi; c++)
            pos[c] = (int)((size_t)p * cg.slot) + (c - lo);
    }
    if (!cg_makea(cls, (int)((int64_t)n * cg.me / cg.procs),
                  (int)((int64_t)n * (cg.me + 1) / cg.procs), pos, &cg.a))
        par_die("out of memory");
    free(pos);

    const int m = cg.a.hi - cg.a.lo;
    double *x = cg.x + (size_t)cg.me * cg.slot;
    double rnorm = 0, zeta = 0;
    /* As NPB: one untimed step to touch every page, then x = 1 again. */
    for (int j = 0; j < m; j++)
        x[j] = 1.0;
    cg_step(&cg, cls->shift, &rnorm);
    for (int j = 0; j < m; j++)
        x[j] = 1.0;

    par_timer_start();
    for (int it = 0; it < cls->niter; it++)
        zeta = cg_step(&cg, cls->shift, &rnorm);
    double secs = par_timer_stop();

    bool ok = cg_verify(cls, zeta, cg.me == 0);
    cg_rows_free(&cg.a);
    char size[16], extra[128];
    snprintf(size, sizeof size, "%c", cls->name);
    snprintf(extra, sizeof extra, "na=%d nonzer=%d zeta=%.13f rnorm=%.6e", n, cls->nonzer, zeta,
             rnorm);
    return par_report("cg", size, secs, ok, extra);
}
