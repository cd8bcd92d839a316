/*
 * ocean.c — SPLASH-2 Ocean reduced to the part that gives Ocean its
 * communication pattern, as a plain OpenMP program: a time-stepped
 * quasi-geostrophic model whose elliptic equations are solved every step
 * by a red-black Gauss-Seidel multigrid. The model, constants and solver
 * are those of bench/apps/ocean.c (which says what is kept of SPLASH-2
 * Ocean and what is simplified); only the parallel structure differs.
 *
 *   ocean_omp [--size test|quick|full] [-n N] [-i STEPS] [-e TOL]
 *
 * The model: a square basin of N x N points (N - 2 a power of two; the
 * outer ring is the wall), 20 km between points, 8-hour steps, two layers
 * (1000 m and 4000 m deep). Leapfrog time stepping with Arakawa's Jacobian
 * of the two-mode vorticity equations
 *     d(zeta_b)/dt = -J(psi_b, zeta_b) - beta d(psi_b)/dx + curl(tau)/(rho H)
 *                    - r zeta_b + A lap(zeta_b),           zeta_b = lap psi_b
 *     d(q_c)/dt    = -J(psi_b, q_c) - beta d(psi_c)/dx + curl(tau)/(rho H1)
 *                    - r q_c + A lap(q_c),              q_c = lap psi_c - psi_c/Rd^2
 * and per step two elliptic solves (Poisson for psi_b, Helmholtz for
 * psi_c), each iterated with V-cycles (2 pre- and 2 post-smoothing
 * red-black sweeps per level, 4 on the 2 x 2 coarsest grid, the residual
 * averaged onto the coarse cells, the correction interpolated bilinearly)
 * until the largest residual is below TOL (SPLASH's 1e-7) times the
 * largest right-hand side. The grid is cell-centred: the walls lie half a
 * cell outside the first and last interior points, on every level.
 *
 * Parallel structure: one parallel region around the whole simulation.
 * Every grid operation (a half-sweep, the restriction, the interpolation,
 * a time step) is an `omp for schedule(static)` over the rows of its
 * level, so a thread owns a band of rows on each level and its implicit
 * barrier is Ocean's barrier between phases; the convergence test is an
 * `omp for reduction(max:)`, and the statistics are kept by the master.
 *
 * Self-check: the same simulation is run again with the parallel region
 * switched off (`if(0)`: the initial thread alone) and the final fields
 * must equal the parallel run's bit for bit, as must the number of
 * multigrid cycles. That holds because every value is computed by the
 * same code from values nobody writes meanwhile: a red half-sweep reads
 * only black points and the other way round, restriction and interpolation
 * read one level and write another, a time step reads the old fields and
 * writes the new, and the only reduction is a maximum, exact in any order.
 * Every solve must also have reached the tolerance.
 *
 * The model (constants, forcing, eddies, the time step of a row) is
 * ../kernels/ocean_model.h and the solver's row kernels are
 * ../kernels/ocean_multigrid.h, the same code bench/apps/ocean.c runs, so
 * both print the same checksum for the same grid and steps; what is this
 * program's own is the layout, the worksharing loops over the rows and
 * the reductions.
 *
 * A standalone program: nothing but the C library, <omp.h> and the
 * headers ../kernels/ocean_model.h, ocean_multigrid.h and fnv1a.h, so
 * that it can be built unchanged by `clang -fopenmp` (threads) and by
 * dsmcc (one thread per node). It prints one line,
 *   RESULT app=ocean mode=omp procs=T size=N time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/fnv1a.h"
#include "../kernels/ocean_model.h"
#include "../kernels/ocean_multigrid.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct level {
    int m;           /* interior points per side; rows and columns 0..m+1 */
    double h;
    double *u, *f;   /* (m+2)^2, row-major: solution (or correction), right side */
};

struct ocean {
    int m, nlev, steps;
    double tol;
    struct level lev[MAX_LEVELS]; /* lev[0].u, .f: unused, the solve's fields */
    double *fine[NFINE];          /* (m+2)^2 each */
    double *force_b, *force_c;    /* wind forcing of each row */
    /* kept by the master thread */
    long cycles;                  /* V-cycles over the whole run */
    int most_cycles;              /* in one solve */
    int converged;                /* every solve reached the tolerance */
};

/* The targets of the convergence test's reduction (shared, so globals). */
static double res_max, rhs_max;

/* Row i of field p (u or f) of level L. */
static inline double *row(const struct level *L, double *p, int i)
{
    return p + (size_t)i * (size_t)(L->m + 2);
}

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        fprintf(stderr, "ocean: out of memory\n");
        exit(2);
    }
    return p;
}

static void setup(struct ocean *o, int n, int steps, double tol)
{
    memset(o, 0, sizeof *o);
    o->m = n - 2;
    o->steps = steps;
    o->tol = tol;
    o->converged = 1;
    size_t w = (size_t)o->m + 2;
    for (int m = o->m; m >= 2; m /= 2) {
        struct level *L = &o->lev[o->nlev++];
        L->m = m;
        L->h = RES * (double)(o->m / m);
        if (L != o->lev) {
            L->u = xcalloc((size_t)(m + 2) * (m + 2), sizeof(double));
            L->f = xcalloc((size_t)(m + 2) * (m + 2), sizeof(double));
        }
    }
    for (int a = 0; a < NFINE; a++)
        o->fine[a] = xcalloc(w * w, sizeof(double));
    o->force_b = xcalloc(w, sizeof(double));
    o->force_c = xcalloc(w, sizeof(double));
    ocean_wind(o->m, o->force_b, o->force_c);
}

static void release(struct ocean *o)
{
    for (int l = 1; l < o->nlev; l++) {
        free(o->lev[l].u);
        free(o->lev[l].f);
    }
    for (int a = 0; a < NFINE; a++)
        free(o->fine[a]);
    free(o->force_b);
    free(o->force_c);
}

/* ---- the multigrid: ../kernels/ocean_multigrid.h's row kernels ------------
 * Every function below is called by all threads of the team (orphaned
 * worksharing), or by the initial thread alone in the reference run; tmp
 * is the calling thread's own scratch, two rows of the finest level. */

/* Gauss-Seidel on the points of one colour: each reads only points of the
 * other colour, so the rows can go in any order. */
static void half_sweep(const struct level *L, double lam, int colour, int from_zero)
{
    double inv[3];
    ocean_sweep_divisors(L->h, lam, inv);
#pragma omp for schedule(static)
    for (int i = 1; i <= L->m; i++)
        ocean_sweep_row(row(L, L->u, i), row(L, L->u, i - 1), row(L, L->u, i + 1),
                        row(L, L->f, i), L->m, i, colour, from_zero, L->h, inv);
}

/* r[1..m] = f - A u on row i. */
static void residual_row(const struct level *L, double lam, int i, double *r)
{
    ocean_residual_row(row(L, L->u, i), row(L, L->u, i - 1), row(L, L->u, i + 1),
                       row(L, L->f, i), L->m, i, L->h, lam, r);
}

/* The coarse right-hand side, row by coarse row. */
static void restrict_residual(const struct level *F, const struct level *C, double lam,
                              double *tmp)
{
    double *r1 = tmp, *r2 = tmp + F->m + 2;
#pragma omp for schedule(static)
    for (int I = 1; I <= C->m; I++) {
        residual_row(F, lam, 2 * I - 1, r1);
        residual_row(F, lam, 2 * I, r2);
        ocean_restrict_row(row(C, C->f, I), r1, r2, C->m);
    }
}

/* Coarse row I, or for a row beyond the wall the reflection of row
 * `inside`, into c[0..m+1]. */
static void coarse_row(const struct level *C, int I, int inside, double *c)
{
    int in = I >= 1 && I <= C->m;
    ocean_coarse_row(row(C, C->u, in ? I : inside), in ? 1.0 : -1.0, C->m, c);
}

/* Adds the interpolated coarse correction to every fine row. */
static void interpolate(const struct level *F, const struct level *C, double *tmp)
{
    double *c = tmp, *nb = tmp + C->m + 2;
#pragma omp for schedule(static)
    for (int i = 1; i <= F->m; i++) {
        int I = (i + 1) / 2, I2 = i % 2 ? I - 1 : I + 1;
        coarse_row(C, I, I, c);
        coarse_row(C, I2, I, nb);
        ocean_interpolate_row(row(F, F->u, i), c, nb, C->m);
    }
}

/* The largest |residual| and |right side| on the finest level, the same on
 * every thread (a NaN counts as infinity, so it fails the test). */
static void norms(const struct level *L, double lam, double v[2], double *tmp)
{
#pragma omp single
    res_max = rhs_max = 0.0;
#pragma omp for schedule(static) reduction(max : res_max, rhs_max)
    for (int i = 1; i <= L->m; i++) {
        double rv[2] = {res_max, rhs_max};
        residual_row(L, lam, i, tmp);
        ocean_row_max(tmp, row(L, L->f, i), L->m, rv);
        res_max = rv[0];
        rhs_max = rv[1];
    }
    v[0] = res_max;
    v[1] = rhs_max;
    /* everybody has read them before the next call's single clears them */
#pragma omp barrier
}

/* Level l of a solve: the solve's own fields at the finest level. */
static const struct level *level(const struct ocean *o, const struct level *top, int l)
{
    return l == 0 ? top : &o->lev[l];
}

/* `sweeps` red-black sweeps (each half ends in the loop's barrier). */
static void relax(const struct level *L, double lam, int sweeps, int from_zero)
{
    for (int s = 0; s < sweeps; s++) {
        half_sweep(L, lam, 0, from_zero && s == 0);
        half_sweep(L, lam, 1, 0);
    }
}

/* One V-cycle from level l down; below the finest level u starts at 0. */
static void vcycle(const struct ocean *o, const struct level *top, int l, double lam,
                   double *tmp)
{
    const struct level *L = level(o, top, l);
    if (l == o->nlev - 1) {
        relax(L, lam, NCOARSE, l > 0);
        return;
    }
    relax(L, lam, NPRE, l > 0);
    restrict_residual(L, &o->lev[l + 1], lam, tmp);
    vcycle(o, top, l + 1, lam, tmp);
    interpolate(L, &o->lev[l + 1], tmp);
    relax(L, lam, NPOST, 0);
}

/* Solves (lap - lam) u = f on the finest level from u's current values
 * (the previous step's solution), cycling until max |residual| <= tol *
 * max |f|. Every thread takes the same decisions: v is the same on all. */
static void solve(struct ocean *o, int u, int f, double lam, double *tmp)
{
    struct level top = o->lev[0];
    top.u = o->fine[u];
    top.f = o->fine[f];
    double v[2];
    norms(&top, lam, v, tmp);
    int cycles = 0, converged = 1;
    while (!(v[0] <= o->tol * v[1])) {
        if (cycles == MAX_CYCLES) {
            converged = 0;
            break;
        }
        vcycle(o, &top, 0, lam, tmp);
        cycles++;
        norms(&top, lam, v, tmp);
    }
#pragma omp master
    {
        o->cycles += cycles;
        if (cycles > o->most_cycles)
            o->most_cycles = cycles;
        o->converged &= converged;
    }
}

/* ---- the ocean model ----------------------------------------------------- */

/* One leapfrog step of both modes (the first step passes old == cur and
 * c = DT). */
static void time_step(const struct ocean *o, int old, int cur, int nw, double c)
{
    const struct level *L = &o->lev[0];
    for (int mode = 0; mode < 2; mode++) {
        double *qo = o->fine[(mode ? QC : QB) + old];
        double *qc = o->fine[(mode ? QC : QB) + cur];
        double *qn = o->fine[(mode ? QC : QB) + nw];
        double *pb = o->fine[PSI_B], *ps = o->fine[mode ? PSI_C : PSI_B];
        const double *force = mode ? o->force_c : o->force_b;
        /* nowait: the two modes write different fields and read only
         * fields nobody writes in this phase */
#pragma omp for schedule(static) nowait
        for (int i = 1; i <= o->m; i++) {
            const double *a[3] = {row(L, pb, i - 1), row(L, pb, i), row(L, pb, i + 1)};
            const double *q[3] = {row(L, qc, i - 1), row(L, qc, i), row(L, qc, i + 1)};
            const double *q0[3] = {row(L, qo, i - 1), row(L, qo, i), row(L, qo, i + 1)};
            ocean_step_row(row(L, qn, i), a, q, q0, row(L, ps, i), force[i], o->m, c);
        }
    }
#pragma omp barrier
}

/* Initial eddies: a few basin modes in each stream function, and the
 * vorticities the discrete operators give them (q = A psi, f = 0 there). */
static void initialise(struct ocean *o, double *tmp)
{
    const struct level *L = &o->lev[0];
    int m = o->m;
#pragma omp for schedule(static)
    for (int i = 1; i <= m; i++)
        for (int j = 1; j <= m; j++)
            ocean_eddies(m, i, j, &row(L, o->fine[PSI_B], i)[j], &row(L, o->fine[PSI_C], i)[j]);
    for (int mode = 0; mode < 2; mode++) {
        struct level l0 = o->lev[0];
        l0.u = o->fine[mode ? PSI_C : PSI_B];
        l0.f = o->fine[mode ? QC : QB];
        double lam = mode ? ocean_helmholtz() : 0.0;
        /* each thread writes its rows of f after reading only u: no
         * point's residual reads another point's f */
#pragma omp for schedule(static)
        for (int i = 1; i <= m; i++) {
            residual_row(&l0, lam, i, tmp);
            for (int j = 1; j <= m; j++)
                row(&l0, l0.f, i)[j] = -tmp[j];
        }
    }
}

/* The whole simulation, in parallel or by the initial thread alone;
 * returns which leapfrog buffer holds the final q. */
static int simulate(struct ocean *o, int parallel, double *seconds)
{
    int final = 0;
    double t0 = 0;
#pragma omp parallel if (parallel) default(shared)
    {
        double tmp[2 * (o->m + 2)]; /* this thread's scratch rows (its stack) */
        initialise(o, tmp);
#pragma omp master
        t0 = omp_get_wtime();
        int cur = 0;
        for (int s = 0; s < o->steps; s++) {
            int nw = (cur + 1) % 3, old = s == 0 ? cur : (cur + 2) % 3;
            time_step(o, old, cur, nw, s == 0 ? DT : 2.0 * DT);
            cur = nw;
            solve(o, PSI_B, QB + cur, 0.0, tmp);
            solve(o, PSI_C, QC + cur, ocean_helmholtz(), tmp);
        }
#pragma omp master
        {
            *seconds = omp_get_wtime() - t0;
            final = cur;
        }
    }
    return final;
}

/* ---- the check ------------------------------------------------------------ */

/* Points of the final fields (both stream functions, both vorticities)
 * that differ from the reference's in any bit; *sum: a's checksum. */
static long compare(const struct ocean *a, int qa, const struct ocean *b, int qb, uint64_t *sum)
{
    const int fields[4][2] = {
        {PSI_B, PSI_B}, {PSI_C, PSI_C}, {QB + qa, QB + qb}, {QC + qa, QC + qb}};
    size_t w = (size_t)a->m + 2;
    long bad = 0;
    *sum = FNV1A_START;
    for (int k = 0; k < 4; k++)
        bad += ocean_compare_row(a->fine[fields[k][0]], b->fine[fields[k][1]], w * w, sum);
    return bad;
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: ocean_omp [--size test|quick|full] [-n N] [-i STEPS] [-e TOL]\n"
               "  --size S  test: N = 66, 3 steps; quick: N = 258, 6 steps (SPLASH-2's);\n"
               "            full (the default): N = 1026, 6 steps\n"
               "  -n N      grid N x N including the walls; N - 2 a power of two, 6..4098\n"
               "  -i STEPS  8-hour time steps, 1..10000 (6: two days, as SPLASH-2)\n"
               "  -e TOL    multigrid tolerance, max residual / max right side, 1e-14..1e-2\n"
               "            (SPLASH-2's 1e-7)\n"
               "  threads: OMP_NUM_THREADS\n");
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

/* 0: run; 1: --help; 2: bad option. */
static int options(int argc, char **argv, int *n, int *steps, double *tol)
{
    int nopt = 0, iopt = 0;
    double eopt = 0;
    *n = 1026;
    *steps = 6;
    *tol = 1e-7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (i + 1 >= argc)
            return 2;
        const char *v = argv[++i];
        if (!strcmp(a, "--size")) {
            if (!strcmp(v, "test")) {
                *n = 66;
                *steps = 3;
            } else if (!strcmp(v, "quick")) {
                *n = 258;
                *steps = 6;
            } else if (!strcmp(v, "full")) {
                *n = 1026;
                *steps = 6;
            } else {
                return 2;
            }
        } else if (!strcmp(a, "-n")) {
            if (!parse_int(v, 6, 4098, &nopt) || (nopt - 2) & (nopt - 3))
                return 2;
        } else if (!strcmp(a, "-i")) {
            if (!parse_int(v, 1, 10000, &iopt))
                return 2;
        } else if (!strcmp(a, "-e")) {
            char *end;
            errno = 0;
            eopt = strtod(v, &end);
            if (errno || end == v || *end || !(eopt >= 1e-14 && eopt <= 1e-2))
                return 2;
        } else {
            return 2;
        }
    }
    if (nopt)
        *n = nopt;
    if (iopt)
        *steps = iopt;
    if (eopt > 0)
        *tol = eopt;
    return 0;
}

int main(int argc, char **argv)
{
    int n, steps;
    double tol;
    int rc = options(argc, argv, &n, &steps, &tol);
    if (rc) {
        usage(rc == 1 ? stdout : stderr);
        return rc == 1 ? 0 : 2;
    }

    struct ocean o, ref;
    double secs, ref_secs;
    setup(&o, n, steps, tol);
    int q = simulate(&o, 1, &secs);
    setup(&ref, n, steps, tol);
    int rq = simulate(&ref, 0, &ref_secs);

    uint64_t sum;
    long bad = compare(&o, q, &ref, rq, &sum);
    int ok = ocean_check(bad, o.cycles, ref.cycles, o.converged && ref.converged, tol);
    printf("RESULT app=ocean mode=omp procs=%d size=%d time=%.6f check=%s steps=%d levels=%d "
           "cycles=%ld most=%d checksum=%016llx\n",
           omp_get_max_threads(), n, secs, ok ? "ok" : "FAIL", steps, o.nlev, o.cycles,
           o.most_cycles, (unsigned long long)sum);
    release(&o);
    release(&ref);
    return ok ? 0 : 1;
}
