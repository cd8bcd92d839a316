/*
 * nbody.h — the N-body problem's initial conditions, interaction,
 * integrator steps, conserved quantities and checks, one source for both
 * of its programs: bench/apps/nbody.c (dsm's API through par.h, bodies in
 * padded blocks) and bench/omp/nbody.c (plain OpenMP, plain arrays). They
 * differ in layout and sharing (which bodies a process or thread moves,
 * where the barriers are, how sums are reduced), not in arithmetic.
 *
 * Header-only and C library only, so that the OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef NBODY_H
#define NBODY_H
#include "rng.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Kick-drift-kick leapfrog, one body (velocity v, acceleration a): the
 * first half kick and the drift from position x into xn ... */
static inline void nbody_kick_drift(double v[3], const double a[3], const double x[3],
                                    double xn[3])
{
    for (int d = 0; d < 3; d++) {
        v[d] += 0.5 * DT * a[d];
        xn[d] = x[d] + DT * v[d];
    }
}

/* ... and, a having been computed at xn, the second half kick. */
static inline void nbody_kick(double v[3], const double a[3])
{
    for (int d = 0; d < 3; d++)
        v[d] += 0.5 * DT * a[d];
}

/* ---- conserved quantities and the checks on them ------------------------- */

/* A body's kinetic energy. */
static inline double nbody_kinetic(double m, const double v[3])
{
    return 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Minus the (softened) potential energy of a pair: the energy sums
 * u -= nbody_binding(...) over the pairs i < j. */
static inline double nbody_binding(double mi, const double xi[3], double mj, const double xj[3])
{
    double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
    return mi * mj / sqrt(dx * dx + dy * dy + dz * dz + EPS2);
}

/* The run's energy, e1 against e0 at the start: *de is the relative
 * error; false (and a line on stderr) when it is too large. Leapfrog keeps
 * the error bounded, of order (dt/tau)^2 for the shortest orbital time
 * tau; at dt = 1e-3 with softening 0.05 it measures 7e-8..8e-7 of |E|
 * over 1000 steps for 100..2000 bodies, so 1e-4 leaves a hundred times
 * that. This guards the physics (force law, integrator, a step applied
 * twice or not at all); a single stale read barely moves the energy, and
 * the bit-for-bit comparison with a sequential run is what catches that. */
static inline bool nbody_energy_ok(double e0, double e1, double *de)
{
    *de = fabs(e1 - e0) / fabs(e0);
    if (*de <= 1e-4)
        return true;
    fprintf(stderr, "nbody: energy not conserved: %.17g -> %.17g (relative %.3g)\n", e0, e1,
            *de);
    return false;
}

/* The run's momentum, |P| = pn against the scale ps = sum |m v|, after
 * `steps` steps of n bodies; false (and a line on stderr) when too large.
 * Every pair's forces cancel exactly in real arithmetic; what is left is
 * rounding, about 1e-16 of each term of each sum, growing at most linearly
 * over the steps: < 1e-16 * n * steps of the scale, i.e. < 2e-10 at 2000
 * bodies and 1000 steps (measured: 2e-17..1.3e-16). Forces from a body
 * missing from the sums, or from positions a step old, do not cancel: they
 * leave ~dt m |a| (a missing body) or ~dt^2 |v| m |da/dx| (stale ones) per
 * step, 1e-6 of the scale or more. */
static inline bool nbody_momentum_ok(double pn, double ps, int n, int steps)
{
    double ptol = 1e-16 * n * (double)steps * ps + 1e-300;
    if (pn <= ptol)
        return true;
    fprintf(stderr, "nbody: momentum not conserved: |P| = %.3g > %.3g\n", pn, ptol);
    return false;
}

/* Says that `bad` of n bodies differ from the sequential run's, the first
 * (body `first`) at x where the sequential run has it at y. */
static inline void nbody_report_mismatch(size_t bad, int n, int first, const double x[3],
                                         const double y[3])
{
    fprintf(stderr,
            "nbody: %zu of %d bodies differ from the sequential run; body %d at "
            "(%.17g, %.17g, %.17g), expected (%.17g, %.17g, %.17g)\n",
            bad, n, first, x[0], x[1], x[2], y[0], y[1], y[2]);
}
#endif
