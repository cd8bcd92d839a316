/*
 * ocean_model.h — the ocean model's physics, one source for both of its
 * programs: bench/apps/ocean.c (dsm's API through par.h, row bands per
 * process) and bench/omp/ocean.c (plain OpenMP). They differ in how the
 * grids are laid out and shared, not in the model: its constants, the
 * Helmholtz coefficient of the baroclinic mode, the wind's forcing, the
 * initial eddies and the time step, row by row, live here (the elliptic
 * solver is ocean_multigrid.h).
 *
 * Header-only and C library only, so that the OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef OCEAN_MODEL_H
#define OCEAN_MODEL_H
#include <math.h>

/* The finest level's fields: both stream functions, and three leapfrog
 * levels of each mode's vorticity (QB..QB+2, QC..QC+2). */
enum { PSI_B, PSI_C, QB, QC = QB + 3, NFINE = QC + 3 };

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

/* The wind's forcing of each row 0..m+1 of an m x m interior, for the
 * barotropic (fb) and the baroclinic (fc) mode: the curl of the wind
 * stress -TAU0 cos(pi y / L), y at the cell centres, over the depth. */
static inline void ocean_wind(int m, double *fb, double *fc)
{
    double len = m * RES;
    for (int i = 0; i < m + 2; i++) {
        double curl = TAU0 * M_PI / len * sin(M_PI * (i - 0.5) * RES / len);
        fb[i] = curl / (RHO0 * HT);
        fc[i] = curl / (RHO0 * H1);
    }
}

/* The initial eddies at interior point (i,j): a few basin modes in each
 * stream function (*pb barotropic, *pc baroclinic). */
static inline void ocean_eddies(int m, int i, int j, double *pb, double *pc)
{
    double x = M_PI * (j - 0.5) / m, y = M_PI * (i - 0.5) / m;
    *pb = PSI0 * (sin(3 * x) * sin(2 * y) + 0.5 * sin(5 * x) * sin(7 * y));
    *pc = 0.3 * PSI0 * sin(4 * x) * sin(3 * y);
}

/* One leapfrog step of one mode on row i (points 1..m) of the finest
 * level: out = q_old + c * (advection and beta at the current level,
 * forcing, friction and viscosity at the old one). a, q and qo hold rows
 * i-1, i, i+1 of the barotropic stream function (which carries both
 * modes), of the mode's current and of its old vorticity; psi is row i of
 * the mode's own stream function, force the row's wind forcing. The first
 * step passes q == qo and c = DT (forward Euler). */
static inline void ocean_step_row(double *out, const double *const a[3], const double *const q[3],
                                  const double *const qo[3], const double *psi, double force,
                                  int m, double c)
{
    const double h = RES, jac = 1.0 / (12.0 * h * h), bx = BETA / (2.0 * h), ih2 = 1.0 / (h * h);
    const double *o0 = qo[0], *o1 = qo[1], *o2 = qo[2];
    for (int j = 1; j <= m; j++) {
        double adv = -jac * ocean_arakawa(a[0], a[1], a[2], q[0], q[1], q[2], j) -
                     bx * (psi[j + 1] - psi[j - 1]);
        double lap = (o0[j] + o2[j] + o1[j - 1] + o1[j + 1] - 4.0 * o1[j]) * ih2;
        out[j] = o1[j] + c * (adv + force - RBOT * o1[j] + AVISC * lap);
    }
}
#endif
