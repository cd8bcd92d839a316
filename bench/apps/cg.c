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
 * The matrix is NPB's: makea draws, for each i, a sparse vector v_i of
 * nonzer random positions and values (sprnvc, from the NPB generator
 * x <- 5^13 x mod 2^46 started at 314159265, one number discarded) plus
 * the element i itself set to 0.5 (vecset), and sums the outer products
 * size_i v_i v_i^T, size_i = rcond^(i/na), with rcond - shift added to the
 * diagonal. Duplicate entries are summed in the order NPB sums them, so
 * the matrix is NPB's to the bit and the official zeta holds.
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
 * a relative error of 1e-10, as NPB's own test (see classes[]).
 */
#include "npb.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 8192 /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */
#define PAGE_DOUBLES (PAGE / sizeof(double))
#define CGITMAX 25
#define RCOND 0.1
#define MASK46 ((1ull << 46) - 1)

/* Class parameters and zeta_verify_value from NPB3.3-SER/CG/cg.f (the
 * `if( na .eq. 1400 ...` block; the same values in NPB 2.x and 3.x). */
static const struct cg_class {
    char name;
    int na, nonzer, niter;
    double shift, zeta;
} classes[] = {
    {'S', 1400, 7, 15, 10.0, 8.5971775078648},
    {'W', 7000, 8, 15, 12.0, 10.362595087124},
    {'A', 14000, 11, 15, 20.0, 17.130235054029},
};

/* NPB's randlc: x <- a x mod 2^46, returns x 2^-46. NPB computes it in
 * doubles split into 23-bit halves; a 64-bit product has the same low 46
 * bits (2^46 divides 2^64), so the numbers are the same. */
static double randlc(uint64_t *x, uint64_t a)
{
    *x = (*x * a) & MASK46;
    return 0x1p-46 * (double)*x;
}

/* The matrix rows of one process, in private memory, CSR. col[] holds
 * positions in the padded vectors, not global column numbers. */
struct rows {
    int lo, hi;      /* global rows lo..hi-1 */
    int *start;      /* hi - lo + 1 */
    int *col;
    double *val;
};

struct entry {
    int col;
    double val;
};

/* Sorts a row's contributions by column, keeping the arrival order of
 * equal columns (insertion sort is stable; rows are ~nonzer^2 long). */
static void sort_row(struct entry *e, int n)
{
    for (int i = 1; i < n; i++) {
        struct entry t = e[i];
        int k = i;
        while (k > 0 && e[k - 1].col > t.col) {
            e[k] = e[k - 1];
            k--;
        }
        e[k] = t;
    }
}

/* NPB's makea, keeping rows lo..hi-1 only. pos(c) maps a global column to
 * its position in the padded vectors. */
static void makea(const struct cg_class *c, int lo, int hi, const int *pos, struct rows *out)
{
    const int n = c->na, nz1 = c->nonzer + 1;
    int *arow = malloc((size_t)n * sizeof *arow);
    int *acol = malloc((size_t)n * nz1 * sizeof *acol);
    double *aelt = malloc((size_t)n * nz1 * sizeof *aelt);
    if (!arow || !acol || !aelt)
        par_die("out of memory");

    uint64_t tran = 314159265, amult = 1220703125;
    randlc(&tran, amult); /* cg.f: zeta = randlc(tran, amult) before makea */
    int nn1 = 1;
    do
        nn1 *= 2;
    while (nn1 < n);

    for (int i = 0; i < n; i++) {
        int *iv = acol + (size_t)i * nz1;
        double *v = aelt + (size_t)i * nz1;
        /* sprnvc: nonzer distinct random positions with random values */
        int nzv = 0;
        while (nzv < c->nonzer) {
            double vecelt = randlc(&tran, amult);
            double vecloc = randlc(&tran, amult);
            int k = (int)(nn1 * vecloc); /* icnvrt, 0-based */
            if (k >= n)
                continue;
            int dup = 0;
            for (int m = 0; m < nzv; m++)
                dup |= iv[m] == k;
            if (dup)
                continue;
            v[nzv] = vecelt;
            iv[nzv++] = k;
        }
        /* vecset: element i becomes 0.5 */
        int set = 0;
        for (int m = 0; m < nzv; m++)
            if (iv[m] == i) {
                v[m] = 0.5;
                set = 1;
            }
        if (!set) {
            v[nzv] = 0.5;
            iv[nzv++] = i;
        }
        arow[i] = nzv;
    }

    /* sparse: the outer products, for our rows only, in NPB's order. */
    const int nrows = hi - lo;
    int *cnt = calloc((size_t)nrows + 1, sizeof *cnt);
    if (!cnt)
        par_die("out of memory");
    for (int i = 0; i < n; i++)
        for (int m = 0; m < arow[i]; m++) {
            int j = acol[(size_t)i * nz1 + m];
            if (j >= lo && j < hi)
                cnt[j - lo + 1] += arow[i];
        }
    for (int j = 0; j < nrows; j++)
        cnt[j + 1] += cnt[j];
    struct entry *e = malloc(((size_t)cnt[nrows] + 1) * sizeof *e);
    int *fill = malloc(((size_t)nrows + 1) * sizeof *fill);
    if (!e || !fill)
        par_die("out of memory");
    memcpy(fill, cnt, ((size_t)nrows + 1) * sizeof *fill);
    double size = 1.0;
    const double ratio = pow(RCOND, 1.0 / (double)n);
    for (int i = 0; i < n; i++) {
        const int *iv = acol + (size_t)i * nz1;
        const double *v = aelt + (size_t)i * nz1;
        for (int m = 0; m < arow[i]; m++) {
            int j = iv[m];
            if (j < lo || j >= hi)
                continue;
            double scale = size * v[m];
            for (int r = 0; r < arow[i]; r++) {
                int jcol = iv[r];
                double va = v[r] * scale;
                if (jcol == j && j == i)
                    va = va + RCOND - c->shift;
                e[fill[j - lo]++] = (struct entry){jcol, va};
            }
        }
        size *= ratio;
    }

    /* Per row: sorted by column, duplicates summed in arrival order (NPB
     * starts each entry at 0.0 and adds the contributions as they come). */
    out->lo = lo;
    out->hi = hi;
    out->start = malloc(((size_t)nrows + 1) * sizeof *out->start);
    out->col = malloc(((size_t)cnt[nrows] + 1) * sizeof *out->col);
    out->val = malloc(((size_t)cnt[nrows] + 1) * sizeof *out->val);
    if (!out->start || !out->col || !out->val)
        par_die("out of memory");
    int k = 0;
    for (int j = 0; j < nrows; j++) {
        out->start[j] = k;
        struct entry *row = e + cnt[j];
        int len = cnt[j + 1] - cnt[j];
        sort_row(row, len);
        for (int m = 0; m < len;) {
            int col = row[m].col;
            double sum = 0.0;
            for (; m < len && row[m].col == col; m++)
                sum += row[m].val;
            out->col[k] = pos[col];
            out->val[k++] = sum;
        }
    }
    out->start[nrows] = k;
    free(fill);
    free(e);
    free(cnt);
    free(aelt);
    free(acol);
    free(arow);
}

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
    struct rows a;
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
static void matvec(const struct rows *a, const double *v, double *out)
{
    for (int j = 0; j < a->hi - a->lo; j++) {
        double sum = 0.0;
        for (int k = a->start[j]; k < a->start[j + 1]; k++)
            sum += a->val[k] * v[a->col[k]];
        out[j] = sum;
    }
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
    int k; /* classes[k] */
    int rc = npb_class_args(argc, argv, usage, &k);
    if (rc != ARGS_RUN)
        return rc;
    const struct cg_class *cls = &classes[k];
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
    makea(cls, (int)((int64_t)n * cg.me / cg.procs), (int)((int64_t)n * (cg.me + 1) / cg.procs),
          pos, &cg.a);
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

    /* NPB's test: |zeta - zeta_verify| / zeta_verify <= 1e-10. The dot
     * products here are summed in another order than NPB's serial code
     * (per process, then across processes), which moves zeta by rounding
     * only, ~1e-14 relative after 15 well-conditioned steps; a wrong
     * matrix or a lost update moves it by orders of magnitude more. */
    double err = fabs(zeta - cls->zeta) / cls->zeta;
    bool ok = err <= 1e-10;
    if (cg.me == 0 && !ok)
        fprintf(stderr, "cg: class %c: zeta %.13f, want %.13f (relative error %.3g)\n", cls->name,
                zeta, cls->zeta, err);
    free(cg.a.start);
    free(cg.a.col);
    free(cg.a.val);
    char size[16], extra[128];
    snprintf(size, sizeof size, "%c", cls->name);
    snprintf(extra, sizeof extra, "na=%d nonzer=%d zeta=%.13f rnorm=%.6e", n, cls->nonzer, zeta,
             rnorm);
    return par_report("cg", size, secs, ok, extra);
}
