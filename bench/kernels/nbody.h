/*
 * nbody.h — the N-body problem's initial conditions and interaction, one
 * source for both of its programs: bench/apps/nbody.c (dsm's API through
 * par.h, bodies in padded blocks) and bench/omp/nbody.c (plain OpenMP,
 * plain arrays). They differ in layout and sharing, not in arithmetic.
 *
 * Header-only and C library only, so that the OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef NBODY_H
#define NBODY_H
#include "rng.h"

#include <math.h>
#include <stdint.h>

#define DT   1e-3
#define EPS2 (0.05 * 0.05) /* softening length 0.05: a close pair's
                            * orbit takes ~0.1 time units, 100 steps */

/* Body i of n: uniform in the unit sphere, mass (0.5..1.5)/n, velocity
 * with the virial dispersion of a uniform sphere of unit mass (K = 0.3).
 * A function of the index alone, so any process or thread builds any body,
 * and a reference run all of them, identically. */
static inline void nbody_body_init(int n, int i, double x[3], double v[3], double *m)
{
    uint64_t s = 0x6e626f6479ull * 1000003u + (uint64_t)i;
    do
        for (int d = 0; d < 3; d++)
            x[d] = 2.0 * rng_uniform(&s) - 1.0;
    while (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] > 1.0);
    for (int d = 0; d < 3; d++)
        v[d] = sqrt(0.6 / 3.0) * rng_gauss(&s);
    *m = (0.5 + rng_uniform(&s)) / n;
}

/* The total momentum p and mass *mt of all n bodies, summed in index order
 * (the same bits wherever it runs): the centre-of-mass frame moves at
 * p / mt, and the bodies' velocities are taken in it. */
static inline void nbody_momentum(int n, double p[3], double *mt)
{
    p[0] = p[1] = p[2] = 0;
    *mt = 0;
    for (int i = 0; i < n; i++) {
        double x[3], v[3], m;
        nbody_body_init(n, i, x, v, &m);
        for (int d = 0; d < 3; d++)
            p[d] += m * v[d];
        *mt += m;
    }
}

/* Adds to a the softened pull (G = 1) of a body of mass mj at xj on a body
 * at xi: a += mj (xj - xi) / (|xj - xi|^2 + eps^2)^(3/2). The self term
 * adds an exact zero, so callers need no test. */
static inline void nbody_pull(const double xi[3], const double xj[3], double mj, double a[3])
{
    double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
    double r2 = dx * dx + dy * dy + dz * dz + EPS2;
    double s = mj / (r2 * sqrt(r2));
    a[0] += dx * s;
    a[1] += dy * s;
    a[2] += dz * s;
}
#endif
