/*
 * lu_blocks.h — SPLASH-2 LU's matrix and block kernels, one source for both
 * of its programs: bench/apps/lu.c (dsm's API through par.h) and
 * bench/omp/lu.c (plain OpenMP, built by clang -fopenmp and by dsmcc).
 * They differ in where the blocks live and who runs which step, not in the
 * arithmetic: A's entries, the four kernels of a blocked right-looking LU
 * without pivoting, on B x B blocks stored row-major, and the check of the
 * factors' product against A live here.
 *
 * Header-only and C library only because the OpenMP program must stay a
 * standalone source that any OpenMP compiler builds from one file: it
 * includes this header by a relative path.
 */
#ifndef LU_BLOCKS_H
#define LU_BLOCKS_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The block kernels are out of line and 64-byte aligned, so every build
 * (and the check's reference arithmetic) runs the same machine code at the
 * same alignment: inlined into par_main, the hot loops of one bench/apps
 * build ran 35% slower than the identical loops of another, only because
 * the link put them at different offsets. */
#define LU_KERNEL __attribute__((noinline, aligned(64))) static

/* A's entries (order n), the same in every build, process and check: a
 * hash of the position gives an off-diagonal value in [-1, 1); the
 * diagonal adds N, more than the sum of any row's other entries. */
static inline double lu_entry(int n, int i, int j)
{
    uint64_t z = (uint64_t)i * (uint64_t)n + (uint64_t)j + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double v = (double)(z >> 11) * 0x1p-52 - 1.0;
    return i == j ? v + n : v;
}

/* y -= l x over one block row: the inner loop of every kernel. Spelled out
 * for SPLASH's B = 16 too, where the fixed trip count lets the compiler
 * vectorise it (elementwise, so the results are the same bits either way). */
static inline void lu_row_update(double *restrict y, const double *restrict x, double l, int b)
{
    if (b == 16) {
        for (int j = 0; j < 16; j++)
            y[j] -= l * x[j];
    } else {
        for (int j = 0; j < b; j++)
            y[j] -= l * x[j];
    }
}

/* Diagonal block: in-place LU without pivoting. */
LU_KERNEL void lu_factor_diag(double *d, int b)
{
    for (int k = 0; k < b; k++) {
        const double *rk = d + (size_t)k * b;
        for (int i = k + 1; i < b; i++) {
            double *ri = d + (size_t)i * b;
            double l = ri[k] / rk[k];
            ri[k] = l;
            for (int j = k + 1; j < b; j++)
                ri[j] -= l * rk[j];
        }
    }
}

/* Row perimeter: a = L^-1 a, L the unit lower triangle of d. */
LU_KERNEL void lu_solve_lower(const double *d, double *a, int b)
{
    for (int k = 0; k < b; k++)
        for (int i = k + 1; i < b; i++)
            lu_row_update(a + (size_t)i * b, a + (size_t)k * b, d[(size_t)i * b + k], b);
}

/* Column perimeter: a = a U^-1, U the upper triangle of d. */
LU_KERNEL void lu_solve_upper(const double *d, double *a, int b)
{
    for (int i = 0; i < b; i++) {
        double *ai = a + (size_t)i * b;
        for (int k = 0; k < b; k++) {
            const double *dk = d + (size_t)k * b;
            double l = ai[k] / dk[k];
            ai[k] = l;
            for (int j = k + 1; j < b; j++)
                ai[j] -= l * dk[j];
        }
    }
}

/* Interior: c -= a * u. */
LU_KERNEL void lu_update_interior(const double *a, const double *u, double *c, int b)
{
    for (int i = 0; i < b; i++)
        for (int k = 0; k < b; k++)
            lu_row_update(c + (size_t)i * b, u + (size_t)k * b, a[(size_t)i * b + k], b);
}
/* ---- the check -------------------------------------------------------------
 * Higham, Accuracy and Stability of Numerical Algorithms, Thm 9.3: LU
 * without pivoting computed in floating point, with the inner products
 * accumulated in any order (a blocked right-looking factorisation only
 * reorders them), gives factors with A + dA = L U, |dA| <= g_n |L| |U|
 * elementwise, g_n = n u / (1 - n u), u = 2^-53. Forming the product adds
 * at most g_n |L| |U| again. And (|L| |U|)_ij <= rowsum_i |L| times
 * colmax_j |U|, both within a factor (1 + g_n) of what is computed; so
 * every element must satisfy
 *     |fl(L U) - A|_ij <= 3 g_n rowsum_i |L| colmax_j |U|.
 * Here |L| has row sums below 2 and U's column maxima are its diagonal,
 * about N, so the bound is about 6 N g_n: 7e-10 at N = 1024, 3e-9 at
 * 2048, against entries of order 1 (off the diagonal) and N (on it). A
 * block computed from stale or missing data is off by far more, 1e-3 and
 * up, and an unfactored matrix fails on nearly every element. */

/* Row i of the product against A (order n): prod[j] = fl(L U)_ij, li row
 * i of the factors (L left of the diagonal, its unit diagonal implied),
 * colmax[j] the largest |U_kj|. Adds the elements beyond the bound to
 * *bad and raises *worst to the largest error / bound (a NaN as
 * infinity: it fails). */
static inline void lu_check_row(int n, int i, const double *li, const double *prod,
                                const double *colmax, long *bad, double *worst)
{
    const double g = n * 0x1p-53 / (1.0 - n * 0x1p-53);
    double rowsum = 1.0;
    for (int k = 0; k < i; k++)
        rowsum += fabs(li[k]);
    for (int j = 0; j < n; j++) {
        double err = fabs(prod[j] - lu_entry(n, i, j));
        double bound = 3 * g * rowsum * colmax[j];
        if (!(err <= bound)) /* a NaN fails too */
            ++*bad;
        double rel = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
        if (!(rel <= *worst))
            *worst = isnan(rel) ? INFINITY : rel;
    }
}
#endif
