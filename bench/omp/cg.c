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
 * The matrix is NPB's: makea draws, for each i, a sparse vector v_i of
 * nonzer random positions and values (sprnvc, from the NPB generator
 * x <- 5^13 x mod 2^46 started at 314159265, one number discarded) plus
 * the element i itself set to 0.5 (vecset), and sums the outer products
 * size_i v_i v_i^T, size_i = rcond^(i/na), with rcond - shift added to the
 * diagonal. Duplicate entries are summed in the order NPB sums them, so
 * the matrix is NPB's to the bit and the official zeta holds. The matrix
 * is built once, by the initial thread, outside the timed section.
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
 * a relative error of 1e-10, as NPB's own test (see classes[]).
 *
 * A standalone program: nothing but the C library and <omp.h>, so that it
 * can be built unchanged by `clang -fopenmp` (threads) and by dsmcc
 * (one thread per node). It prints one line,
 *   RESULT app=cg mode=omp procs=T size=A time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The matrix (CSR, 0-based) and the vectors, globals as in NPB. */
static int n;
static int *rowstr, *colidx;
static double *a;
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

/* NPB's randlc: x <- a x mod 2^46, returns x 2^-46. NPB computes it in
 * doubles split into 23-bit halves; a 64-bit product has the same low 46
 * bits (2^46 divides 2^64), so the numbers are the same. */
static double randlc(uint64_t *seed, uint64_t mult)
{
    *seed = (*seed * mult) & MASK46;
    return 0x1p-46 * (double)*seed;
}

struct entry {
    int col;
    double val;
};

/* Sorts a row's contributions by column, keeping the arrival order of
 * equal columns (insertion sort is stable; rows are ~nonzer^2 long). */
static void sort_row(struct entry *e, int len)
{
    for (int i = 1; i < len; i++) {
        struct entry t = e[i];
        int k = i;
        while (k > 0 && e[k - 1].col > t.col) {
            e[k] = e[k - 1];
            k--;
        }
        e[k] = t;
    }
}

/* NPB's makea (with sprnvc, vecset and sparse) into rowstr, colidx, a. */
static void makea(const struct cg_class *c)
{
    const int nz1 = c->nonzer + 1;
    int *arow = xmalloc((size_t)n * sizeof *arow);
    int *acol = xmalloc((size_t)n * nz1 * sizeof *acol);
    double *aelt = xmalloc((size_t)n * nz1 * sizeof *aelt);

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

    /* sparse: the outer products, row by row in NPB's order. */
    int *cnt = calloc((size_t)n + 1, sizeof *cnt);
    if (!cnt) {
        fprintf(stderr, "cg: out of memory\n");
        exit(2);
    }
    for (int i = 0; i < n; i++)
        for (int m = 0; m < arow[i]; m++)
            cnt[acol[(size_t)i * nz1 + m] + 1] += arow[i];
    for (int j = 0; j < n; j++)
        cnt[j + 1] += cnt[j];
    struct entry *e = xmalloc((size_t)cnt[n] * sizeof *e);
    int *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, cnt, ((size_t)n + 1) * sizeof *fill);
    double size = 1.0;
    const double ratio = pow(RCOND, 1.0 / (double)n);
    for (int i = 0; i < n; i++) {
        const int *iv = acol + (size_t)i * nz1;
        const double *v = aelt + (size_t)i * nz1;
        for (int m = 0; m < arow[i]; m++) {
            int j = iv[m];
            double scale = size * v[m];
            for (int s = 0; s < arow[i]; s++) {
                int jcol = iv[s];
                double va = v[s] * scale;
                if (jcol == j && j == i)
                    va = va + RCOND - c->shift;
                e[fill[j]++] = (struct entry){jcol, va};
            }
        }
        size *= ratio;
    }

    /* Per row: sorted by column, duplicates summed in arrival order (NPB
     * starts each entry at 0.0 and adds the contributions as they come). */
    rowstr = xmalloc(((size_t)n + 1) * sizeof *rowstr);
    colidx = xmalloc((size_t)cnt[n] * sizeof *colidx);
    a = xmalloc((size_t)cnt[n] * sizeof *a);
    int k = 0;
    for (int j = 0; j < n; j++) {
        rowstr[j] = k;
        struct entry *row = e + cnt[j];
        int len = cnt[j + 1] - cnt[j];
        sort_row(row, len);
        for (int m = 0; m < len;) {
            int col = row[m].col;
            double sum = 0.0;
            for (; m < len && row[m].col == col; m++)
                sum += row[m].val;
            colidx[k] = col;
            a[k++] = sum;
        }
    }
    rowstr[n] = k;
    free(fill);
    free(e);
    free(cnt);
    free(aelt);
    free(acol);
    free(arow);
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
            for (int j = 0; j < n; j++) {
                double sum = 0.0;
                for (int k = rowstr[j]; k < rowstr[j + 1]; k++)
                    sum += a[k] * p[colidx[k]];
                q[j] = sum;
            }

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
        for (int j = 0; j < n; j++) {
            double sum = 0.0;
            for (int k = rowstr[j]; k < rowstr[j + 1]; k++)
                sum += a[k] * z[colidx[k]];
            r[j] = sum;
        }
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

static const struct cg_class *parse_args(int argc, char **argv, int *help)
{
    static const char *const sizes[] = {"test", "quick", "full"};
    const struct cg_class *c = &classes[2];
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            *help = 1;
            return NULL;
        } else if (!strcmp(argv[i], "--size") && v) {
            int k = 0;
            while (k < 3 && strcmp(v, sizes[k]))
                k++;
            if (k == 3)
                return NULL;
            c = &classes[k];
            i++;
        } else if (!strcmp(argv[i], "-c") && v && strlen(v) == 1) {
            const struct cg_class *found = NULL;
            for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++)
                if (classes[k].name == (v[0] & ~0x20))
                    found = &classes[k];
            if (!found)
                return NULL;
            c = found;
            i++;
        } else {
            return NULL;
        }
    }
    return c;
}

int main(int argc, char **argv)
{
    int help;
    const struct cg_class *cls = parse_args(argc, argv, &help);
    if (!cls) {
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    n = cls->na;
    makea(cls);
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

    /* NPB's test: |zeta - zeta_verify| / zeta_verify <= 1e-10. The dot
     * products are summed per thread, then across threads, which moves
     * zeta by rounding only, ~1e-14 relative after 15 well-conditioned
     * steps; a wrong matrix or a lost update moves it by orders of
     * magnitude more. */
    double err = fabs(zeta - cls->zeta) / cls->zeta;
    int ok = err <= 1e-10;
    if (!ok)
        fprintf(stderr, "cg: class %c: zeta %.13f, want %.13f (relative error %.3g)\n",
                cls->name, zeta, cls->zeta, err);
    printf("RESULT app=cg mode=omp procs=%d size=%c time=%.6f check=%s na=%d nonzer=%d "
           "zeta=%.13f rnorm=%.6e\n",
           omp_get_max_threads(), cls->name, secs, ok ? "ok" : "FAIL", n, cls->nonzer, zeta,
           rnorm);
    return ok ? 0 : 1;
}
