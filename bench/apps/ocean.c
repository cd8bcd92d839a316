/*
 * ocean.c — SPLASH-2 Ocean, contiguous partitions (seed 000: a 258 x 258
 * ocean), reduced to the part that gives Ocean its communication pattern:
 * a time-stepped quasi-geostrophic model whose elliptic equations are
 * solved every step by a red-black Gauss-Seidel multigrid.
 *
 *   ocean [--size test|quick|full] [-n N] [-i STEPS] [-e TOL]
 *
 * What is kept of SPLASH-2 Ocean: the square basin of N x N points (N - 2
 * a power of two; the outer ring is the wall), 20 km between points, 8-hour
 * steps over two simulated days (6 steps), the two-layer constants (layer
 * depths 1000 m and 4000 m, f0, beta, reduced gravity 0.02), leapfrog time
 * stepping with Arakawa's Jacobian, and per step two elliptic solves, for
 * the barotropic mode (Poisson) and the baroclinic mode (Helmholtz, with
 * the inverse square of the deformation radius), each iterated with
 * multigrid cycles until the largest residual is below TOL (1e-7, SPLASH's
 * default) times the largest right-hand side. Barriers separate the phases
 * of a step and the half-sweeps of every level; the residual's maximum is
 * combined under a lock, as Ocean combines its error.
 * What is simplified: the physics is a two-mode model in vorticity form,
 *     d(zeta_b)/dt = -J(psi_b, zeta_b) - beta d(psi_b)/dx + curl(tau)/(rho H)
 *                    - r zeta_b + A lap(zeta_b),           zeta_b = lap psi_b
 *     d(q_c)/dt    = -J(psi_b, q_c) - beta d(psi_c)/dx + curl(tau)/(rho H1)
 *                    - r q_c + A lap(q_c),              q_c = lap psi_c - psi_c/Rd^2
 * (the baroclinic mode is carried by the barotropic flow and does not act
 * back on it); it starts from a few analytic eddies instead of rest; the
 * multigrid is a plain V-cycle (2 pre- and 2 post-smoothing red-black
 * sweeps per level, 4 on the 2 x 2 coarsest grid; the residual averaged
 * onto the coarse cells, the correction interpolated bilinearly) rather
 * than Ocean's adaptive W-cycle; the other per-step work of Ocean (its
 * many auxiliary fields) is left out.
 *
 * The grid is cell-centred. The elliptic operator puts the walls half a
 * cell outside the first and last interior points, where the stream
 * function vanishes (a point next to a wall has diagonal 4 + 1 per wall in
 * the 5-point operator), and each coarser grid has half the points with
 * the walls in the same place, so every level discretises the same
 * equation; the time step reads the ring outside the interior as zero.
 *
 * Layout for a page-based DSM: at every level each process owns a band of
 * whole rows (the per-level partition; with P a power of two the bands
 * nest, so restriction and interpolation stay in the band but for its edge
 * rows). Row bands rather than SPLASH's square subgrids, because a page
 * holds whole rows: a square subgrid's side column touches every page of
 * the neighbour's subgrid, a band's edge row only one or two. All of a
 * process's bands, of every field at every level, lie together in one
 * stretch of the shared allocation homed at it (PAR_HOME_BLOCK over P
 * equal stretches), each band aligned to 64 KiB; the wall rows go with the
 * first and last band. So every write is to a page homed at the writer,
 * and after each half-sweep only the pages holding a neighbour's edge rows
 * are fetched again.
 *
 * Self-check: process 0 then runs the same code alone in private memory
 * and the final fields must equal the parallel run's bit for bit, as must
 * the number of cycles. That holds because every value is computed by one
 * function from values nobody writes meanwhile: a red half-sweep reads
 * only black points and the other way round, restriction and interpolation
 * read one level and write the other, a time step reads the old fields and
 * writes the new, and the only reduction is a maximum, which is exact in
 * any order. Every solve must also have reached the tolerance.
 *
 * The model (constants, forcing, eddies, the time step of a row) is
 * ../kernels/ocean_model.h and the solver's row kernels are
 * ../kernels/ocean_multigrid.h, the same code bench/omp/ocean.c runs;
 * what is this program's own is the layout, the loops over each process's
 * rows and the synchronisation.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"
#include "../kernels/ocean_model.h"
#include "../kernels/ocean_multigrid.h"

/* Bands are aligned to the largest coherence unit the DSM allows
 * (DSM_PAGE_SIZE up to 64 KiB), so no setting puts two processes' bands
 * on one page. */
#define LAYOUT_ALIGN 65536

/* Kernels are out of line and 64-byte aligned: the parallel and the
 * reference run execute the same machine code, and so do the three builds,
 * at the same alignment (a loop's speed here depends on its offset: the
 * same inlined loop ran 35% slower in one build of lu than in another). */
#define KERNEL __attribute__((noinline, aligned(64))) static

struct level {
    int m;              /* interior points per side; rows and columns 0..m+1 */
    double h;
    int lo, hi;         /* this process's interior rows */
    double **u, **f;    /* row tables: solution (or correction) and right side */
};

/* Largest values of a solve's residual and right-hand side, combined over
 * the processes under lock 0. Three slots in turn (see reduce_max). */
struct reduction { double v[3][2]; };

struct ocean {
    int n, m, nlev, steps;
    double tol;
    /* the team: every process on shared memory, or process 0 alone */
    bool shared;
    int id, np;
    struct level lev[MAX_LEVELS];
    double **fine[NFINE];
    double *force_b, *force_c;    /* wind forcing of each row */
    double *s1, *s2, *s3, *s4;    /* private scratch rows */
    struct reduction *red;
    unsigned nred;
    long cycles;                  /* V-cycles over the whole run */
    int most_cycles;              /* in one solve */
    bool converged;               /* every solve reached the tolerance */
    double **tables;              /* what the row tables were carved from */
    char *storage;                /* the reference run's private memory */
};

static void sync_team(const struct ocean *o)
{
    if (o->shared)
        par_barrier();
}

/* ---- layout ----------------------------------------------------------- */

/* First interior row of band p of an m-row level split np ways. */
static int band_lo(int m, int np, int p) { return 1 + (int)((long)p * m / np); }

/* Rows stored in band p: its interior rows, plus the wall row below the
 * first band and the one above the last. */
static int stored_first(int m, int np, int p) { return p == 0 ? 0 : band_lo(m, np, p); }
static int stored_end(int m, int np, int p) { return p == np - 1 ? m + 2 : band_lo(m, np, p + 1); }

static int level_of(int a) { return a < NFINE ? 0 : 1 + (a - NFINE) / 2; }
static int arrays(const struct ocean *o) { return NFINE + 2 * (o->nlev - 1); }

/* One stretch of `stretch` bytes per process at `base`, holding that
 * process's band of every array; the row tables point into them. With base
 * NULL only measures: returns the stretch. */
static size_t lay_out(struct ocean *o, char *base, int np, size_t stretch)
{
    size_t off = 0;
    double **t = o->tables;
    for (int a = 0; a < arrays(o); a++) {
        int m = o->lev[level_of(a)].m;
        size_t row = (size_t)(m + 2) * sizeof(double), most = 0;
        for (int p = 0; p < np; p++) {
            size_t b = (size_t)(stored_end(m, np, p) - stored_first(m, np, p)) * row;
            most = b > most ? b : most;
        }
        most = (most + LAYOUT_ALIGN - 1) / LAYOUT_ALIGN * LAYOUT_ALIGN;
        if (base) {
            for (int p = 0; p < np; p++)
                for (int i = stored_first(m, np, p); i < stored_end(m, np, p); i++)
                    t[i] = (double *)(base + (size_t)p * stretch + off +
                                      (size_t)(i - stored_first(m, np, p)) * row);
            if (a < NFINE)
                o->fine[a] = t;
            else if ((a - NFINE) % 2 == 0)
                o->lev[level_of(a)].u = t;
            else
                o->lev[level_of(a)].f = t;
            t += m + 2;
        }
        off += most;
    }
    return off;
}

/* Sets up the problem for a team (np processes, this one id) and its
 * private buffers; the caller then lays out the arrays. */
static void setup(struct ocean *o, int n, int steps, double tol, bool shared, int id, int np)
{
    memset(o, 0, sizeof *o);
    o->n = n;
    o->m = n - 2;
    o->steps = steps;
    o->tol = tol;
    o->shared = shared;
    o->id = id;
    o->np = np;
    o->converged = true;
    size_t rows = 0;
    for (int m = o->m; m >= 2; m /= 2) {
        struct level *L = &o->lev[o->nlev++];
        L->m = m;
        L->h = RES * (double)(o->m / m);
        L->lo = band_lo(m, np, id);
        L->hi = band_lo(m, np, id + 1);
        rows += (size_t)(m + 2) * (L == o->lev ? NFINE : 2);
    }
    o->tables = malloc(rows * sizeof *o->tables);
    size_t w = (size_t)o->m + 2;
    o->force_b = malloc(w * sizeof(double));
    o->force_c = malloc(w * sizeof(double));
    o->s1 = calloc(w, sizeof(double));
    o->s2 = calloc(w, sizeof(double));
    o->s3 = calloc(w, sizeof(double));
    o->s4 = calloc(w, sizeof(double));
    if (!o->tables || !o->force_b || !o->force_c || !o->s1 || !o->s2 || !o->s3 || !o->s4)
        par_die("out of memory");
    ocean_wind(o->m, o->force_b, o->force_c);
}

static void release(struct ocean *o)
{
    free(o->tables);
    free(o->force_b);
    free(o->force_c);
    free(o->s1);
    free(o->s2);
    free(o->s3);
    free(o->s4);
    free(o->storage);
}

/* ---- the multigrid: ../kernels/ocean_multigrid.h's row kernels over this
 * process's rows of each level ---------------------------------------------- */

/* Gauss-Seidel on the points of one colour of the band. */
KERNEL void half_sweep(const struct level *L, double lam, int colour, bool from_zero)
{
    double inv[3];
    ocean_sweep_divisors(L->h, lam, inv);
    for (int i = L->lo; i < L->hi; i++)
        ocean_sweep_row(L->u[i], L->u[i - 1], L->u[i + 1], L->f[i], L->m, i, colour, from_zero,
                        L->h, inv);
}

/* r[1..m] = (f - A u) on row i. */
KERNEL void residual_row(const struct level *L, double lam, int i, double *r)
{
    ocean_residual_row(L->u[i], L->u[i - 1], L->u[i + 1], L->f[i], L->m, i, L->h, lam, r);
}

/* The coarse right-hand side on this process's coarse rows. */
KERNEL void restrict_residual(const struct ocean *o, int l, double lam)
{
    const struct level *F = &o->lev[l], *C = &o->lev[l + 1];
    for (int I = C->lo; I < C->hi; I++) {
        residual_row(F, lam, 2 * I - 1, o->s1);
        residual_row(F, lam, 2 * I, o->s2);
        ocean_restrict_row(C->f[I], o->s1, o->s2, C->m);
    }
}

/* Coarse row I, or for a row beyond the wall the reflection of row
 * `inside`, into c[0..m+1]. */
static void coarse_row(const struct level *C, int I, int inside, double *c)
{
    bool in = I >= 1 && I <= C->m;
    ocean_coarse_row(C->u[in ? I : inside], in ? 1.0 : -1.0, C->m, c);
}

/* Adds the interpolated coarse correction to this process's fine rows. */
KERNEL void interpolate(const struct ocean *o, int l)
{
    const struct level *F = &o->lev[l], *C = &o->lev[l + 1];
    for (int i = F->lo; i < F->hi; i++) {
        int I = (i + 1) / 2, I2 = i % 2 ? I - 1 : I + 1;
        coarse_row(C, I, I, o->s3);
        coarse_row(C, I2, I, o->s4);
        ocean_interpolate_row(F->u[i], o->s3, o->s4, C->m);
    }
}

/* The largest |residual| and |right side| over this process's rows of the
 * finest level. */
KERNEL void norms(const struct ocean *o, double lam, double v[2])
{
    const struct level *L = &o->lev[0];
    v[0] = v[1] = 0;
    for (int i = L->lo; i < L->hi; i++) {
        residual_row(L, lam, i, o->s1);
        ocean_row_max(o->s1, L->f[i], L->m, v);
    }
}

/* Combines v over the team: the maximum, under lock 0, then a barrier.
 * Reduction k uses slot k % 3 while process 0 clears slot k + 1: everybody
 * read that slot (reduction k - 2) before the barrier ending reduction
 * k - 1, and nobody writes it before the barrier ending this one. A NaN
 * has become infinity (ocean_row_max), so it wins whatever the order. */
static void reduce_max(struct ocean *o, double v[2])
{
    if (!o->shared)
        return;
    unsigned k = o->nred++ % 3;
    double *slot = o->red->v[k];
    if (o->id == 0)
        o->red->v[(k + 1) % 3][0] = o->red->v[(k + 1) % 3][1] = 0;
    par_lock(0);
    for (int c = 0; c < 2; c++)
        slot[c] = fmax(slot[c], v[c]);
    par_unlock(0);
    par_barrier();
    v[0] = slot[0];
    v[1] = slot[1];
}

/* `sweeps` red-black sweeps at level l, a barrier after each half. */
static void relax(const struct ocean *o, int l, double lam, int sweeps, bool from_zero)
{
    for (int s = 0; s < sweeps; s++) {
        half_sweep(&o->lev[l], lam, 0, from_zero && s == 0);
        sync_team(o);
        half_sweep(&o->lev[l], lam, 1, false);
        sync_team(o);
    }
}

/* One V-cycle from level l down. Below the finest level u starts from zero.
 * Restriction needs no barrier after it: the coarse level's first
 * half-sweep reads only its own rows of the right side. */
static void vcycle(const struct ocean *o, int l, double lam)
{
    if (l == o->nlev - 1) {
        relax(o, l, lam, NCOARSE, l > 0);
        return;
    }
    relax(o, l, lam, NPRE, l > 0);
    restrict_residual(o, l, lam);
    vcycle(o, l + 1, lam);
    interpolate(o, l);
    sync_team(o);
    relax(o, l, lam, NPOST, false);
}

/* Solves (lap - lam) u = f on the finest level from u's current values
 * (the previous step's solution), cycling until max |residual| <= tol *
 * max |f|. */
static void solve(struct ocean *o, int u, int f, double lam)
{
    o->lev[0].u = o->fine[u];
    o->lev[0].f = o->fine[f];
    double v[2];
    norms(o, lam, v);
    reduce_max(o, v);
    int cycles = 0;
    while (!(v[0] <= o->tol * v[1])) {
        if (cycles == MAX_CYCLES) {
            o->converged = false;
            break;
        }
        vcycle(o, 0, lam);
        cycles++;
        norms(o, lam, v);
        reduce_max(o, v);
    }
    o->cycles += cycles;
    if (cycles > o->most_cycles)
        o->most_cycles = cycles;
}

/* ---- the ocean model --------------------------------------------------- */

/* One leapfrog step of both modes on this process's rows (the first step
 * passes old == cur and c = DT). */
KERNEL void time_step(const struct ocean *o, int old, int cur, int nw, double c)
{
    double *const *pb = o->fine[PSI_B];
    for (int mode = 0; mode < 2; mode++) {
        double *const *qo = o->fine[(mode ? QC : QB) + old];
        double *const *qc = o->fine[(mode ? QC : QB) + cur];
        double *const *qn = o->fine[(mode ? QC : QB) + nw];
        double *const *ps = o->fine[mode ? PSI_C : PSI_B];
        const double *force = mode ? o->force_c : o->force_b;
        for (int i = o->lev[0].lo; i < o->lev[0].hi; i++) {
            const double *a[3] = {pb[i - 1], pb[i], pb[i + 1]};
            const double *q[3] = {qc[i - 1], qc[i], qc[i + 1]};
            const double *q0[3] = {qo[i - 1], qo[i], qo[i + 1]};
            ocean_step_row(qn[i], a, q, q0, ps[i], force[i], o->m, c);
        }
    }
}

/* Initial eddies: a few basin modes in each stream function, and the
 * vorticities the discrete operators give them (so the first solve starts
 * consistent). */
static void initialise(struct ocean *o)
{
    const struct level *L = &o->lev[0];
    int m = o->m;
    for (int i = L->lo; i < L->hi; i++)
        for (int j = 1; j <= m; j++)
            ocean_eddies(m, i, j, &o->fine[PSI_B][i][j], &o->fine[PSI_C][i][j]);
    sync_team(o);
    for (int mode = 0; mode < 2; mode++) {
        struct level l0 = *L;
        l0.u = o->fine[mode ? PSI_C : PSI_B];
        l0.f = o->fine[mode ? QC : QB]; /* f = 0 there, so the residual is -A u */
        for (int i = L->lo; i < L->hi; i++) {
            residual_row(&l0, mode ? ocean_helmholtz() : 0.0, i, o->s1);
            for (int j = 1; j <= m; j++)
                l0.f[i][j] = -o->s1[j];
        }
    }
    sync_team(o);
}

/* The whole simulation; returns which leapfrog buffer holds the final q. */
static int simulate(struct ocean *o)
{
    int cur = 0;
    for (int s = 0; s < o->steps; s++) {
        int nw = (cur + 1) % 3, old = s == 0 ? cur : (cur + 2) % 3;
        time_step(o, old, cur, nw, s == 0 ? DT : 2.0 * DT);
        sync_team(o); /* neighbours read psi's edge rows until here */
        cur = nw;
        solve(o, PSI_B, QB + cur, 0.0);
        solve(o, PSI_C, QC + cur, ocean_helmholtz());
    }
    return cur;
}

/* ---- the check ----------------------------------------------------------- */

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
        for (size_t i = 0; i < w; i++)
            bad += ocean_compare_row(a->fine[fields[k][0]][i], b->fine[fields[k][1]][i], w, sum);
    return bad;
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: ocean [--size test|quick|full] [-n N] [-i STEPS] [-e TOL]\n"
               "  --size S  test: N = 66, 3 steps; quick: N = 1026, 12 steps;\n"
               "            full: N = 258, 6 steps (seed 000, the default)\n"
               "  -n N      grid N x N including the walls; N - 2 a power of two, 6..2050\n"
               "  -i STEPS  8-hour time steps, 1..10000 (6: two days, as SPLASH-2)\n"
               "  -e TOL    multigrid tolerance, max residual / max right side, 1e-14..1e-2\n"
               "            (SPLASH-2's 1e-7)\n");
}

/* N - 2 a power of two: the multigrid's levels halve the interior. */
static bool interior_power_of_2(long n) { return ((n - 2) & (n - 3)) == 0; }

int par_main(int argc, char **argv)
{
    int n = 258, steps = 6;
    double tol = 1e-7;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){66, 1026, 258}},
        {"--size", ARG_WORD, &steps, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){3, 12, 6}},
        {"-n", ARG_INT, &n, "N with N - 2 a power of two, 6..2050", .overrides = true,
         .lo = 6, .hi = 2050, .valid = interior_power_of_2},
        {"-i", ARG_INT, &steps, "a step count 1..10000", .overrides = true, .lo = 1, .hi = 10000},
        {"-e", ARG_DOUBLE, &tol, "a tolerance 1e-14..1e-2", .overrides = true,
         .lo = 1e-14, .hi = 1e-2},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;
    int me = par_id(), p = par_n();

    struct ocean o;
    setup(&o, n, steps, tol, true, me, p);
    size_t stretch = lay_out(&o, NULL, p, 0);
    char *shared = par_alloc_home((size_t)p * stretch, PAR_HOME_BLOCK);
    lay_out(&o, shared, p, stretch);
    o.red = par_alloc(LAYOUT_ALIGN); /* a page of its own */
    initialise(&o);

    par_timer_start();
    int q = simulate(&o);
    double t = par_timer_stop();

    bool ok = true;
    char extra[200] = "";
    if (me == 0) {
        struct ocean ref;
        setup(&ref, n, steps, tol, false, 0, 1);
        size_t bytes = lay_out(&ref, NULL, 1, 0);
        ref.storage = calloc(1, bytes);
        if (!ref.storage)
            par_die("out of memory for the reference run (%zu bytes)", bytes);
        lay_out(&ref, ref.storage, 1, bytes);
        initialise(&ref);
        int rq = simulate(&ref);
        uint64_t sum;
        long bad = compare(&o, q, &ref, rq, &sum);
        ok = ocean_check(bad, o.cycles, ref.cycles, o.converged && ref.converged, tol);
        snprintf(extra, sizeof extra, "steps=%d levels=%d cycles=%ld most=%d checksum=%016llx",
                 steps, o.nlev, o.cycles, o.most_cycles, (unsigned long long)sum);
        release(&ref);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    rc = par_report("ocean", size, t, ok, extra);
    release(&o);
    return rc;
}
