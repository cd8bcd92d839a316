/*
 * npb_cg.h — NPB CG's numerical kernels, one source for both of its
 * programs: bench/apps/cg.c (dsm's API through par.h) and bench/omp/cg.c
 * (plain OpenMP, built by clang -fopenmp and by dsmcc). What differs
 * between them is the parallel layout (padded shared slots or OpenMP
 * worksharing over global vectors), not the arithmetic, so the class
 * table, NPB's generator and its matrix (makea), the sparse row product
 * and the verification live here, and both programs compute with the same
 * code.
 *
 * Header-only and C library only (static inline functions) because the
 * OpenMP program must stay a standalone source that any OpenMP compiler
 * builds from one file: it includes this header by a relative path.
 *
 * The matrix is NPB's: makea draws, for each i, a sparse vector v_i of
 * nonzer random positions and values (sprnvc, from the NPB generator
 * x <- 5^13 x mod 2^46 started at 314159265, one number discarded) plus
 * the element i itself set to 0.5 (vecset), and sums the outer products
 * size_i v_i v_i^T, size_i = rcond^(i/na), with rcond - shift added to the
 * diagonal. Duplicate entries are summed in the order NPB sums them, so
 * the matrix is NPB's to the bit and the official zeta holds.
 */
#ifndef NPB_CG_H
#define NPB_CG_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGITMAX 25
#define RCOND 0.1
#define MASK46 ((1ull << 46) - 1)

/* Class parameters and zeta_verify_value from NPB3.3-SER/CG/cg.f (the
 * `if( na .eq. 1400 ...` block; the same values in NPB 2.x and 3.x). The
 * order is --size's: test, quick, full. */
static const struct cg_class {
    char name;
    int na, nonzer, niter;
    double shift, zeta;
} cg_classes[] = {
    {'S', 1400, 7, 15, 10.0, 8.5971775078648},
    {'W', 7000, 8, 15, 12.0, 10.362595087124},
    {'A', 14000, 11, 15, 20.0, 17.130235054029},
};

/* NPB's randlc: x <- a x mod 2^46, returns x 2^-46. NPB computes it in
 * doubles split into 23-bit halves; a 64-bit product has the same low 46
 * bits (2^46 divides 2^64), so the numbers are the same. */
static inline double cg_randlc(uint64_t *x, uint64_t a)
{
    *x = (*x * a) & MASK46;
    return 0x1p-46 * (double)*x;
}

/* Rows lo..hi-1 of the matrix, CSR. col[] holds positions in the vectors
 * the caller multiplies by (see cg_makea's pos), not necessarily global
 * column numbers. */
struct cg_rows {
    int lo, hi;  /* global rows lo..hi-1 */
    int *start;  /* hi - lo + 1 */
    int *col;
    double *val;
};

/* The rows' storage, as cg_makea allocated it. */
static inline void cg_rows_free(struct cg_rows *a)
{
    free(a->start);
    free(a->col);
    free(a->val);
}

struct cg_entry {
    int col;
    double val;
};

/* Sorts a row's contributions by column, keeping the arrival order of
 * equal columns (insertion sort is stable; rows are ~nonzer^2 long). */
static inline void cg_sort_row(struct cg_entry *e, int n)
{
    for (int i = 1; i < n; i++) {
        struct cg_entry t = e[i];
        int k = i;
        while (k > 0 && e[k - 1].col > t.col) {
            e[k] = e[k - 1];
            k--;
        }
        e[k] = t;
    }
}

/* NPB's makea (with sprnvc, vecset and sparse), keeping rows lo..hi-1
 * only: every caller draws the whole random sequence, which is cheap, and
 * assembles only its rows. pos[c] is the position of global column c in
 * the caller's vectors (NULL: c itself). Returns false, having freed what
 * it took, when memory runs out; the caller says so its own way. */
static inline bool cg_makea(const struct cg_class *c, int lo, int hi, const int *pos,
                            struct cg_rows *out)
{
    const int n = c->na, nz1 = c->nonzer + 1;
    const int nrows = hi - lo;
    int *arow = malloc((size_t)n * sizeof *arow);
    int *acol = malloc((size_t)n * nz1 * sizeof *acol);
    double *aelt = malloc((size_t)n * nz1 * sizeof *aelt);
    int *cnt = calloc((size_t)nrows + 1, sizeof *cnt);
    struct cg_entry *e = NULL;
    int *fill = NULL;
    bool ok = false;
    *out = (struct cg_rows){.lo = lo, .hi = hi};
    if (!arow || !acol || !aelt || !cnt)
        goto done;

    uint64_t tran = 314159265, amult = 1220703125;
    cg_randlc(&tran, amult); /* cg.f: zeta = randlc(tran, amult) before makea */
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
            double vecelt = cg_randlc(&tran, amult);
            double vecloc = cg_randlc(&tran, amult);
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

    /* sparse: the outer products, for rows lo..hi-1 only, in NPB's order. */
    for (int i = 0; i < n; i++)
        for (int m = 0; m < arow[i]; m++) {
            int j = acol[(size_t)i * nz1 + m];
            if (j >= lo && j < hi)
                cnt[j - lo + 1] += arow[i];
        }
    for (int j = 0; j < nrows; j++)
        cnt[j + 1] += cnt[j];
    e = malloc(((size_t)cnt[nrows] + 1) * sizeof *e);
    fill = malloc(((size_t)nrows + 1) * sizeof *fill);
    if (!e || !fill)
        goto done;
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
                e[fill[j - lo]++] = (struct cg_entry){jcol, va};
            }
        }
        size *= ratio;
    }

    /* Per row: sorted by column, duplicates summed in arrival order (NPB
     * starts each entry at 0.0 and adds the contributions as they come). */
    out->start = malloc(((size_t)nrows + 1) * sizeof *out->start);
    out->col = malloc(((size_t)cnt[nrows] + 1) * sizeof *out->col);
    out->val = malloc(((size_t)cnt[nrows] + 1) * sizeof *out->val);
    if (!out->start || !out->col || !out->val)
        goto done;
    int k = 0;
    for (int j = 0; j < nrows; j++) {
        out->start[j] = k;
        struct cg_entry *row = e + cnt[j];
        int len = cnt[j + 1] - cnt[j];
        cg_sort_row(row, len);
        for (int m = 0; m < len;) {
            int col = row[m].col;
            double sum = 0.0;
            for (; m < len && row[m].col == col; m++)
                sum += row[m].val;
            out->col[k] = pos ? pos[col] : col;
            out->val[k++] = sum;
        }
    }
    out->start[nrows] = k;
    ok = true;

done:
    if (!ok)
        cg_rows_free(out);
    free(fill);
    free(e);
    free(cnt);
    free(aelt);
    free(acol);
    free(arow);
    return ok;
}

/* Row j (counted from lo) of A times v: NPB's inner loop of q = A p, the
 * products added in the row's column order. */
static inline double cg_row_product(const struct cg_rows *a, int j, const double *v)
{
    double sum = 0.0;
    for (int k = a->start[j]; k < a->start[j + 1]; k++)
        sum += a->val[k] * v[a->col[k]];
    return sum;
}

/* NPB's test: |zeta - zeta_verify| / zeta_verify <= 1e-10; false, with a
 * line on stderr when `say`, when zeta fails it. The dot products are
 * summed in another order than NPB's serial code (per process or thread,
 * then across them), which moves zeta by rounding only, ~1e-14 relative
 * after 15 well-conditioned steps; a wrong matrix or a lost update moves
 * it by orders of magnitude more. */
static inline bool cg_verify(const struct cg_class *c, double zeta, bool say)
{
    double err = fabs(zeta - c->zeta) / c->zeta;
    if (err <= 1e-10)
        return true;
    if (say)
        fprintf(stderr, "cg: class %c: zeta %.13f, want %.13f (relative error %.3g)\n", c->name,
                zeta, c->zeta, err);
    return false;
}
#endif
