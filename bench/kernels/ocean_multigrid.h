/*
 * ocean_multigrid.h — the ocean model's elliptic solver, row by row, one
 * source for both of its programs: bench/apps/ocean.c (row tables into
 * per-process bands of shared memory) and bench/omp/ocean.c (one array per
 * field, rows split by OpenMP worksharing). Each keeps its layout, its
 * loops over rows and its barriers; every value either computes comes from
 * the functions here, so both compute the same numbers, bit for bit.
 *
 * A level has m x m interior points, rows and columns 0..m+1, the outer
 * ring a wall that holds 0; the operator is
 *     (A u)_ij = (u_N + u_S + u_E + u_W - d_ij u_ij) / h^2 - lam u_ij,
 * d_ij = 4 + the walls next to (i,j) (the grid is cell-centred: the walls
 * lie half a cell outside the first and last interior points). A row
 * function takes row i of u (`u`), the rows below and above it (`s`, `nn`)
 * and row i of the right side (`f`).
 *
 * Header-only and C library only, so that the OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef OCEAN_MULTIGRID_H
#define OCEAN_MULTIGRID_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fnv1a.h"

/* The V-cycle: red-black sweeps before the coarse correction and after,
 * and on the 2 x 2 coarsest grid (enough for its 4 unknowns); the most
 * cycles a solve may take, and the most levels (a 2^16-point side). */
#define NPRE 2
#define NPOST 2
#define NCOARSE 4
#define MAX_CYCLES 60
#define MAX_LEVELS 16

/* The walls next to row i of an m-row level: 0, 1, or 2 when m = 1. */
static inline int ocean_walls(int m, int i) { return (i == 1) + (i == m); }

/* Gauss-Seidel's divisors at spacing h: inv[w] = h^2 / diagonal for a
 * point with w walls next to it. */
static inline void ocean_sweep_divisors(double h, double lam, double inv[3])
{
    double h2 = h * h, lh2 = lam * h2;
    inv[0] = 1.0 / (4.0 + lh2);
    inv[1] = 1.0 / (5.0 + lh2);
    inv[2] = 1.0 / (6.0 + lh2);
}

/* Gauss-Seidel on the points of row i of one colour ((i + j) % 2 ==
 * colour): each reads only points of the other colour, so the rows can go
 * in any order. `from_zero`: u is 0 at the other colour (the first
 * half-sweep of a correction), so nothing but f is read and u need not be
 * cleared first. The first and last points are peeled off so that the
 * loop between has one divisor. */
static inline void ocean_sweep_row(double *u, const double *s, const double *nn, const double *f,
                                   int m, int i, int colour, bool from_zero, double h,
                                   const double inv[3])
{
    double h2 = h * h;
    int wi = ocean_walls(m, i);
    int j = 1 + ((i + 1 + colour) & 1);
    if (from_zero) {
        for (; j <= m; j += 2)
            u[j] = -h2 * f[j] * inv[wi + (j == 1) + (j == m)];
        return;
    }
    if (j == 1) {
        u[1] = (s[1] + nn[1] + u[0] + u[2] - h2 * f[1]) * inv[wi + 1];
        j += 2;
    }
    const double c = inv[wi];
    for (; j < m; j += 2)
        u[j] = (s[j] + nn[j] + u[j - 1] + u[j + 1] - h2 * f[j]) * c;
    if (j == m)
        u[m] = (s[m] + nn[m] + u[m - 1] + u[m + 1] - h2 * f[m]) * inv[wi + 1];
}

/* r[1..m] = f - A u on row i. */
static inline void ocean_residual_row(const double *u, const double *s, const double *nn,
                                      const double *f, int m, int i, double h, double lam,
                                      double *r)
{
    double ih2 = 1.0 / (h * h);
    int wi = ocean_walls(m, i);
    for (int j = 1; j <= m; j++) {
        double d = 4.0 + wi + (j == 1) + (j == m);
        r[j] = f[j] - ((s[j] + nn[j] + u[j - 1] + u[j + 1] - d * u[j]) * ih2 - lam * u[j]);
    }
}

/* Coarse row fc[1..mc]: the mean of the residuals of the four fine cells
 * each coarse cell covers, r1 and r2 the residual rows 2I-1 and 2I. */
static inline void ocean_restrict_row(double *fc, const double *r1, const double *r2, int mc)
{
    for (int J = 1; J <= mc; J++)
        fc[J] = 0.25 * (r1[2 * J - 1] + r1[2 * J] + r2[2 * J - 1] + r2[2 * J]);
}

/* Copies coarse row `src` (row I; for a row beyond the wall, the row
 * inside it, with sign -1) into c[0..mc+1], with the wall values that make
 * the interpolant vanish on the walls (a reflection: c[0] = -c[1]). */
static inline void ocean_coarse_row(const double *src, double sign, int mc, double *c)
{
    for (int J = 1; J <= mc; J++)
        c[J] = sign * src[J];
    c[0] = -c[1];
    c[mc + 1] = -c[mc];
}

/* Adds the bilinear interpolation of the coarse correction to fine row i:
 * fine cell (i,j) lies in coarse cell (I,J) = ((i+1)/2, (j+1)/2), nearest
 * the coarse neighbours I' and J' on its side, and gets
 * (9 c(I,J) + 3 c(I',J) + 3 c(I,J') + c(I',J')) / 16; c is coarse row I
 * and nb row I', as ocean_coarse_row copies them. */
static inline void ocean_interpolate_row(double *u, const double *c, const double *nb, int mc)
{
    for (int J = 1; J <= mc; J++) {
        double mid = 9.0 * c[J] + 3.0 * nb[J];
        u[2 * J - 1] += (mid + 3.0 * c[J - 1] + nb[J - 1]) * 0.0625;
        u[2 * J] += (mid + 3.0 * c[J + 1] + nb[J + 1]) * 0.0625;
    }
}

/* Raises v[0] to the largest |r[j]| and v[1] to the largest |f[j]| of a
 * row, j = 1..m. A NaN counts as infinity, so it fails any tolerance and
 * wins any maximum, in whatever order the rows are combined. */
static inline void ocean_row_max(const double *r, const double *f, int m, double v[2])
{
    for (int j = 1; j <= m; j++) { /* comparisons, not fmax: a call each */
        double a = fabs(r[j]), b = fabs(f[j]);
        if (!(a <= v[0]))
            v[0] = isnan(a) ? INFINITY : a;
        if (!(b <= v[1]))
            v[1] = isnan(b) ? INFINITY : b;
    }
}

/* ---- the check: the parallel run against a sequential one --------------- */

/* Row x of a final field of the parallel run against the same row y of the
 * sequential run's (w points each): the points that differ in any bit
 * (memcmp: -0.0 and NaNs too); *sum goes on with x's checksum. */
static inline long ocean_compare_row(const double *x, const double *y, size_t w, uint64_t *sum)
{
    long bad = 0;
    *sum = fnv1a(*sum, x, w * sizeof *x);
    for (size_t j = 0; j < w; j++)
        bad += memcmp(&x[j], &y[j], sizeof *x) != 0;
    return bad;
}

/* The verdict: the final fields equal bit for bit (`bad` points differ),
 * the same number of multigrid cycles in both runs, every solve of both
 * within the tolerance tol; a line on stderr for each failure. */
static inline bool ocean_check(long bad, long cycles, long ref_cycles, bool converged, double tol)
{
    if (bad)
        fprintf(stderr, "ocean: %ld points of the final fields differ from the sequential run's\n",
                bad);
    if (cycles != ref_cycles)
        fprintf(stderr, "ocean: %ld multigrid cycles, the sequential run %ld\n", cycles,
                ref_cycles);
    if (!converged)
        fprintf(stderr, "ocean: a solve did not reach the tolerance %g in %d cycles\n", tol,
                MAX_CYCLES);
    return !bad && cycles == ref_cycles && converged;
}
#endif
