/*
 * ocean_model.h — the ocean model's physics, one source for both of its
 * programs: bench/apps/ocean.c (dsm's API through par.h, row bands per
 * process) and bench/omp/ocean.c (plain OpenMP). They differ in how the
 * grids are laid out and shared, not in the model: its constants, the
 * Helmholtz coefficient of the baroclinic mode and Arakawa's Jacobian
 * live here.
 *
 * Header-only and C library only, so that the OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef OCEAN_MODEL_H
#define OCEAN_MODEL_H

/* SPLASH-2 Ocean's constants (its defaults -r 20000 -t 28800), in SI. */
static const double RES = 20000.0;   /* m between grid points */
static const double DT = 28800.0;    /* s per step */
static const double F0 = 8.3e-5;     /* Coriolis parameter, 1/s */
static const double BETA = 2.0e-11;  /* its northward gradient, 1/(m s) */
static const double H1 = 1000.0, H3 = 4000.0, HT = 5000.0; /* layer depths, m */
static const double GPR = 0.02;      /* reduced gravity, m/s^2 */
/* Ours: wind stress amplitude (N/m^2), water density, bottom friction (1/s),
 * lateral viscosity (m^2/s; 2 DT A / RES^2 = 0.07, well inside the 1/4
 * that keeps the lagged diffusion stable), initial eddies (m^2/s, flows of
 * a few cm/s). */
static const double TAU0 = 0.1, RHO0 = 1000.0, RBOT = 1e-7, AVISC = 500.0, PSI0 = 2e4;

/* The baroclinic mode's Helmholtz coefficient, f0^2 H / (g' H1 H3). */
static inline double ocean_helmholtz(void) { return F0 * F0 * HT / (GPR * H1 * H3); }

/* Arakawa's Jacobian J(a, b) = a_x b_y - a_y b_x at column j, from rows
 * i-1 (s), i, i+1 (n) of both fields, times 12 h^2. */
static inline double ocean_arakawa(const double *as, const double *a, const double *an,
                                   const double *bs, const double *b, const double *bn, int j)
{
    double j1 = (a[j + 1] - a[j - 1]) * (bn[j] - bs[j]) - (an[j] - as[j]) * (b[j + 1] - b[j - 1]);
    double j2 = a[j + 1] * (bn[j + 1] - bs[j + 1]) - a[j - 1] * (bn[j - 1] - bs[j - 1]) -
                an[j] * (bn[j + 1] - bn[j - 1]) + as[j] * (bs[j + 1] - bs[j - 1]);
    double j3 = bn[j] * (an[j + 1] - an[j - 1]) - bs[j] * (as[j + 1] - as[j - 1]) -
                b[j + 1] * (an[j + 1] - as[j + 1]) + b[j - 1] * (an[j - 1] - as[j - 1]);
    return j1 + j2 + j3;
}
#endif
