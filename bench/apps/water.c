/*
 * water.c — SPLASH-2 Water-Nsquared (seed 000: 1331 molecules), written
 * from the algorithm's description.
 *
 *   water [--size test|quick|full] [-n MOLECULES] [-s STEPS] [-l block|mol]
 *
 * Molecular dynamics of n water molecules (three sites: O, H1, H2) in a
 * periodic cubic box at SPLASH's density (0.998 g/cm^3) and temperature
 * (298 K), with SPLASH's time step (1.5e-16 s) and default step count (3,
 * the `input` deck's NSTEP). Each step is SPLASH's MDMAIN:
 *
 *   PREDIC   Gear predictor for the owned molecules (NORDER = 6: position
 *            and six scaled time derivatives per coordinate);
 *   INTRAF   intramolecular forces of the owned molecules, which also
 *            (re)initialise their shared force records;
 *   barrier
 *   INTERF   the O(n^2) intermolecular forces: each owned molecule with
 *            the next n/2 molecules, cyclically (each pair once), into a
 *            private force array; then every touched record of the shared
 *            force array gets the private sums added under a lock: one
 *            lock per owner block by default, or SPLASH's lock per molecule
 *            (MolLock[mol % MAXLCKS]) with -l mol;
 *   barrier
 *   CORREC   Gear corrector of the owned molecules from their forces,
 *   BNDRY    periodic boundaries, KINETI kinetic energy;
 * the potential energy (SPLASH's POTENG, here summed inside INTERF and
 * INTRAF for every step) and the kinetic energy are added into shared
 * per-step sums under a lock. Before the steps, one INTRAF + INTERF gives
 * the initial accelerations, as SPLASH's MDMAIN does; like SPLASH we time
 * from there to the end.
 *
 * The potential is not SPLASH's MCY: it is SPC/Fw (Wu, Tepper and Voth,
 * J. Chem. Phys. 124, 024503, 2006), the flexible form of SPC: charges on
 * the three sites, Lennard-Jones between oxygens, harmonic O-H bonds and
 * H-O-H angle. SPLASH's molecules are flexible too (its INTRAF), so every
 * phase above keeps its work and its data-access pattern. Two molecules
 * interact, all nine site pairs between the images that the oxygens'
 * minimum image picks (SPLASH's CSHIFT), when their oxygens are within the
 * spherical cutoff of half the box (SPLASH's); the pair's energy is
 * switched off smoothly over the last tenth of the cutoff, so the total
 * energy is conserved up to the integrator's error.
 *
 * Units: Angstrom, femtosecond, amu, kcal/mol; charges in e.
 *
 * Layout for a page-based DSM: the molecules are split into one contiguous
 * block per process (SPLASH's StartMol), and each shared array has one
 * block per process, padded to BLOCK_GRAIN and homed on its owner
 * (PAR_HOME_BLOCK): positions (read by the others in INTERF), forces
 * (written by the others under the locks) and the higher derivatives
 * (owner only) are separate arrays, so the pages others read are not the
 * pages others write. The per-step energy sums sit on a page of their own.
 *
 * Self-check (process 0, outside the timed section): the same simulation
 * run sequentially in private memory by the same functions; positions,
 * velocities and every step's energies must agree within the tolerances
 * argued at check(); and the total energy must be conserved over the run.
 */
#include "blocks.h"
#include "par.h"
#include "../kernels/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSITE 3           /* O, H1, H2 */
#define REC   (3 * NSITE) /* doubles per molecule: [site][x, y, z] */
#define NDER  6           /* scaled derivatives r1..r6 (SPLASH's NORDER) */

/* SPLASH's conditions. */
#define TSTEP 0.15   /* fs (1.5e-16 s) */
#define RHO   0.998  /* g/cm^3 */
#define TEMP  298.0  /* K */

/* SPC/Fw. */
#define Q_O     (-0.82)
#define Q_H     0.41
#define LJ_SIG  3.165492   /* Angstrom */
#define LJ_EPS  0.1554253  /* kcal/mol */
#define K_BOND  1059.162   /* kcal/mol/A^2 (V = k/2 (r - r0)^2) */
#define R_BOND  1.012      /* A */
#define K_ANGLE 75.90      /* kcal/mol/rad^2 */
#define THETA0  (113.24 * M_PI / 180.0)
#define M_OXY   15.9994
#define M_HYD   1.008

#define K_COUL  332.0637      /* kcal A / (mol e^2) */
#define ACCEL   4.184e-4      /* (kcal/mol/A) / amu in A/fs^2 */
#define K_BOLTZ 0.0019872041  /* kcal/mol/K */
#define AMU_PER_A3 0.60221408 /* 1 g/cm^3 in amu/A^3 */
#define WTMOL   (M_OXY + 2 * M_HYD)

/* Lock ids. Lock id % N is its manager node (src/sync/lock.c), so block
 * q's lock is managed by q's owner, the node its force pages live on. */
#define LOCK_SUMS 0
#define MOL_LOCKS 2048 /* SPLASH's MAXLCKS role: ids for per-molecule locks */
static int block_lock(int nproc, int q) { return nproc + q; }
static int mol_lock(int nproc, int m) { return 2 * nproc + m % MOL_LOCKS; }

static const double site_mass[NSITE] = {M_OXY, M_HYD, M_HYD};
static const double site_q[NSITE] = {Q_O, Q_H, Q_H};

/* Gear corrector coefficients for second-order equations with seven values
 * (Gear 1971; SPLASH's PCC for NORDER = 6). */
static const double gear_c[NDER + 1] = {863.0 / 6048.0, 665.0 / 1008.0, 1.0, 25.0 / 36.0,
                                        35.0 / 144.0,   1.0 / 24.0,     1.0 / 360.0};

struct sums { double pot, kin; }; /* one step's energies, kcal/mol */

/* Records per molecule in blocks of `cap` molecules (blocks.h). */
struct water {
    int                n, nblk, cap;
    double             box, cut;
    struct block_array pos;  /* r0: the sites' positions */
    struct block_array frc;  /* forces, kcal/mol/A */
    struct block_array der;  /* r1..r6, rk = TSTEP^k / k! d^k x / dt^k */
    struct sums       *sums; /* steps + 1 entries; [0] is the start */
};

static void *shared_alloc_one(size_t size) { return par_alloc(size); }

static void setup(struct water *w, int n, int steps, int nblk, void *(*alloc)(size_t),
                  void *(*alloc_one)(size_t))
{
    w->n = n;
    w->nblk = nblk;
    w->cap = block_cap(n, nblk);
    w->box = cbrt(n * WTMOL / (RHO * AMU_PER_A3));
    w->cut = 0.5 * w->box;
    struct block_array *all[] = {&w->pos, &w->frc, &w->der};
    for (size_t k = 0; k < 3; k++)
        block_array_init(all[k], (all[k] == &w->der ? NDER : 1) * REC * sizeof(double), w->cap,
                         nblk, alloc);
    /* A whole BLOCK_GRAIN, so no other allocation shares the sums' page. */
    w->sums = alloc_one(block_round_up((size_t)(steps + 1) * sizeof *w->sums, BLOCK_GRAIN));
}

static void free_water(struct water *w)
{
    free(w->pos.base);
    free(w->frc.base);
    free(w->der.base);
    free(w->sums);
}

/* ---- initial state (SPLASH's INITIA, our own) --------------------------
 * A function of the molecule's index alone, so every process builds its
 * own molecules and the reference builds them all, identically. */

/* Molecule m, as SPLASH's INITIA places it: oxygens on a simple cubic
 * lattice filling the box (x outermost, z innermost), every molecule in
 * the equilibrium geometry with the same orientation (in the xy plane,
 * hydrogens towards +x); then Maxwell-Boltzmann velocities at TEMP for
 * each site (A/fs) from a generator seeded by m. */
static void mol_init(const struct water *w, int m, double x[REC], double v[REC])
{
    uint64_t s = 0x7761746572ull * 1000003u + (uint64_t)m;
    int k = (int)lround(cbrt((double)w->n)); /* n is a cube (par_main) */
    double a = w->box / k;
    double o[3] = {(m / k / k + 0.5) * a, ((m / k) % k + 0.5) * a, (m % k + 0.5) * a};
    double c = R_BOND * cos(0.5 * THETA0), sn = R_BOND * sin(0.5 * THETA0);
    double site[NSITE][3] = {{0, 0, 0}, {c, sn, 0}, {c, -sn, 0}};
    for (int t = 0; t < NSITE; t++)
        for (int d = 0; d < 3; d++) {
            x[3 * t + d] = o[d] + site[t][d];
            v[3 * t + d] = sqrt(K_BOLTZ * TEMP * ACCEL / site_mass[t]) * rng_gauss(&s);
        }
}

static double intra_mol(const double x[REC], double f[REC]);

/* Fills molecules lo..hi-1: positions; r1 from velocities taken in the
 * frame where the total momentum is zero (summed over all n molecules, in
 * the same order everywhere); r2 is set from the first forces (in the
 * timed section, as SPLASH does); r3, the jerk, from the stiff part of
 * the forces, the bonds and angle: without it the Gear corrector spends
 * its first ~10 steps learning the hydrogens' vibration and the total
 * energy jumps by ~1e-3 of the kinetic energy (measured), with it by
 * ~1e-6. The jerk is the change of the acceleration along the velocity,
 * a central difference over +-JERK_H fs (error ~JERK_H^2 of it). */
#define JERK_H 1e-3
static void init_state(struct water *w, int lo, int hi)
{
    double p[3] = {0, 0, 0}, mt = 0, x[REC], v[REC];
    for (int m = 0; m < w->n; m++) {
        mol_init(w, m, x, v);
        for (int t = 0; t < NSITE; t++) {
            for (int d = 0; d < 3; d++)
                p[d] += site_mass[t] * v[3 * t + d];
            mt += site_mass[t];
        }
    }
    for (int m = lo; m < hi; m++) {
        mol_init(w, m, x, v);
        double *r0 = block_at(&w->pos, m), *r = block_at(&w->der, m);
        double xp[REC], xm[REC], fp[REC], fm[REC];
        for (int c = 0; c < REC; c++) {
            r0[c] = x[c];
            v[c] -= p[c % 3] / mt;
            r[c] = TSTEP * v[c];
            xp[c] = x[c] + JERK_H * v[c];
            xm[c] = x[c] - JERK_H * v[c];
        }
        intra_mol(xp, fp);
        intra_mol(xm, fm);
        for (int c = 0; c < REC; c++)
            r[2 * REC + c] = TSTEP * TSTEP * TSTEP / 6 * ACCEL / site_mass[c / 3] *
                             (fp[c] - fm[c]) / (2 * JERK_H);
    }
}

/* ---- the phases -------------------------------------------------------- */

/* PREDIC: the Taylor expansion of every value, rk += sum_{j>k} C(j,k) rj. */
static void predic(struct water *w, int lo, int hi)
{
    for (int m = lo; m < hi; m++) {
        double *r0 = block_at(&w->pos, m), *der = block_at(&w->der, m);
        for (int c = 0; c < REC; c++) {
            double r[NDER + 1];
            r[0] = r0[c];
            for (int k = 1; k <= NDER; k++)
                r[k] = der[(k - 1) * REC + c];
            for (int k = 0; k < NDER; k++)
                for (int j = NDER; j > k; j--) /* Pascal's triangle, in place */
                    r[j - 1] += r[j];
            r0[c] = r[0];
            for (int k = 1; k <= NDER; k++)
                der[(k - 1) * REC + c] = r[k];
        }
    }
}

/* The bond and angle forces of one molecule at x into f (overwritten);
 * returns its intramolecular energy. */
static double intra_mol(const double x[REC], double f[REC])
{
    double u[2][3], len[2];
    for (int b = 0; b < 2; b++) {
        for (int d = 0; d < 3; d++)
            u[b][d] = x[3 * (b + 1) + d] - x[d];
        len[b] = sqrt(u[b][0] * u[b][0] + u[b][1] * u[b][1] + u[b][2] * u[b][2]);
    }
    double cs = (u[0][0] * u[1][0] + u[0][1] * u[1][1] + u[0][2] * u[1][2]) / (len[0] * len[1]);
    double th = acos(cs), sn = sin(th);
    double pot = 0.5 * K_ANGLE * (th - THETA0) * (th - THETA0);
    /* -dV/dx_H = K_ANGLE (th - th0) / sin(th) * d cos(th) / d x_H */
    double g = K_ANGLE * (th - THETA0) / sn;
    for (int d = 0; d < 3; d++)
        f[d] = 0;
    for (int b = 0; b < 2; b++) {
        double dl = len[b] - R_BOND;
        pot += 0.5 * K_BOND * dl * dl;
        const double *other = u[1 - b];
        for (int d = 0; d < 3; d++) {
            double dcos = other[d] / (len[0] * len[1]) - cs * u[b][d] / (len[b] * len[b]);
            double fh = -K_BOND * dl * u[b][d] / len[b] + g * dcos;
            f[3 * (b + 1) + d] = fh;
            f[d] -= fh;
        }
    }
    return pot;
}

/* INTRAF: molecules lo..hi-1, whose force records start each step from
 * their intramolecular part. Returns their potential energy. */
static double intraf(struct water *w, int lo, int hi)
{
    double pot = 0;
    for (int m = lo; m < hi; m++)
        pot += intra_mol(block_at(&w->pos, m), block_at(&w->frc, m));
    return pot;
}

/* The spherical cutoff acts on molecules, by their oxygens' distance, and
 * switches a pair's whole energy off smoothly over the last SWITCH of it:
 * E = S(r_OO) E_pair, S going from 1 to 0 with zero first and second
 * derivatives at both ends. A pair thus enters and leaves the cutoff
 * without a jump in energy or force, and the minimum image only changes
 * where S = 0, so the total energy stays conserved. */
#define SWITCH 0.1

struct pairk {
    double cut2, on2, on, inv_width, qq[NSITE][NSITE];
};

static void pair_constants(const struct water *w, struct pairk *k)
{
    double rc = w->cut;
    k->cut2 = rc * rc;
    k->on = (1 - SWITCH) * rc;
    k->on2 = k->on * k->on;
    k->inv_width = 1 / (rc - k->on);
    for (int a = 0; a < NSITE; a++)
        for (int b = 0; b < NSITE; b++)
            k->qq[a][b] = K_COUL * site_q[a] * site_q[b];
}

/* One molecule pair: forces into fa and fb, returns the energy. The image
 * of b is the one that puts its oxygen nearest a's (SPLASH's CSHIFT); the
 * oxygens stay inside the box (BNDRY), so one shift per axis suffices. */
static inline double pair(const struct pairk *k, double box, const double *xa, const double *xb,
                          double *fa, double *fb)
{
    double sh[3], doo[3];
    for (int d = 0; d < 3; d++) {
        double dd = xa[d] - xb[d];
        sh[d] = dd > 0.5 * box ? box : dd < -0.5 * box ? -box : 0.0;
        doo[d] = dd - sh[d];
    }
    double roo2 = doo[0] * doo[0] + doo[1] * doo[1] + doo[2] * doo[2];
    if (roo2 >= k->cut2)
        return 0;
    double e = 0, f[NSITE][NSITE][3];
    for (int a = 0; a < NSITE; a++)
        for (int b = 0; b < NSITE; b++) {
            double dx = xa[3 * a] - xb[3 * b] - sh[0];
            double dy = xa[3 * a + 1] - xb[3 * b + 1] - sh[1];
            double dz = xa[3 * a + 2] - xb[3 * b + 2] - sh[2];
            double r2 = dx * dx + dy * dy + dz * dz, ir2 = 1 / r2, ir = sqrt(ir2);
            double qq = k->qq[a][b] * ir;
            e += qq;
            double fr = qq * ir2; /* radial force / r */
            if (a == 0 && b == 0) {
                double s6 = LJ_SIG * LJ_SIG * ir2;
                s6 = s6 * s6 * s6;
                e += 4 * LJ_EPS * (s6 * s6 - s6);
                fr += 24 * LJ_EPS * (2 * s6 * s6 - s6) * ir2;
            }
            f[a][b][0] = fr * dx;
            f[a][b][1] = fr * dy;
            f[a][b][2] = fr * dz;
        }
    double sw = 1;
    if (roo2 > k->on2) {
        /* S(t) = 1 - 10t^3 + 15t^4 - 6t^5; the oxygens also feel -E dS/dr */
        double roo = sqrt(roo2), t = (roo - k->on) * k->inv_width, t2 = t * t;
        sw = 1 - t2 * t * (10 - 15 * t + 6 * t2);
        double dsw = -30 * t2 * (1 - 2 * t + t2) * k->inv_width;
        double fo = -e * dsw / roo;
        for (int d = 0; d < 3; d++) {
            fa[d] += fo * doo[d];
            fb[d] -= fo * doo[d];
        }
    }
    for (int a = 0; a < NSITE; a++)
        for (int b = 0; b < NSITE; b++)
            for (int d = 0; d < 3; d++) {
                fa[3 * a + d] += sw * f[a][b][d];
                fb[3 * b + d] -= sw * f[a][b][d];
            }
    return sw * e;
}

/* How many following molecules molecule m interacts with, so that every
 * pair is computed exactly once: (n-1)/2 each when n is odd; when n is
 * even, the pair at distance n/2 belongs to the molecule of the first
 * half. */
static int partners(int n, int m) { return n % 2 ? (n - 1) / 2 : m < n / 2 ? n / 2 : n / 2 - 1; }

/* The molecules whose private forces molecules lo..hi-1 touch: the cyclic
 * run from lo of this length (m + partners(n, m) never decreases in m). */
static int touched(int n, int lo, int hi)
{
    if (lo >= hi)
        return 0;
    int len = hi - 1 + partners(n, hi - 1) - lo + 1;
    return len < n ? len : n;
}

static void zero_private(double *pf, int n, int lo, int len)
{
    for (int k = 0; k < len; k++)
        memset(pf + (size_t)((lo + k) % n) * REC, 0, REC * sizeof *pf);
}

/* INTERF, the computing part: molecules lo..hi-1 with their partners,
 * forces into the private array pf (REC doubles per molecule, all n).
 * Returns the intermolecular potential energy. */
static double interf(const struct water *w, const struct pairk *k, double *pf, int lo, int hi)
{
    int n = w->n;
    zero_private(pf, n, lo, touched(n, lo, hi));
    double e = 0;
    for (int m = lo; m < hi; m++) {
        const double *xa = block_at(&w->pos, m);
        double *fa = pf + (size_t)m * REC;
        /* Walk the partners' records in address order, resolving the
         * address only where a block ends or the walk wraps. */
        int j = m + 1 < n ? m + 1 : 0;
        const double *xb = block_at(&w->pos, j);
        int left = w->cap - j % w->cap;
        for (int t = partners(n, m); t > 0; t--) {
            e += pair(k, w->box, xa, xb, fa, pf + (size_t)j * REC);
            if (++j == n) {
                j = 0;
                xb = block_at(&w->pos, 0);
                left = w->cap;
            } else if (--left == 0) {
                xb = block_at(&w->pos, j);
                left = w->cap;
            } else {
                xb += REC;
            }
        }
    }
    return e;
}

enum lock_mode { LOCK_BLOCK, LOCK_MOL, LOCK_NONE };

static void add_forces(struct water *w, const double *pf, int m, int cnt)
{
    for (int i = 0; i < cnt; i++) {
        double *f = block_at(&w->frc, m + i);
        const double *p = pf + (size_t)(m + i) * REC;
        for (int c = 0; c < REC; c++)
            f[c] += p[c];
    }
}

/* INTERF, the updating part: adds the private sums of every touched
 * molecule into the shared force records, under the owner block's lock or
 * (SPLASH) the molecule's lock. A process starts with its own block, so
 * on the first lock the processes do not meet. */
static void merge(struct water *w, const double *pf, int lo, int hi, enum lock_mode mode)
{
    int n = w->n, len = touched(n, lo, hi), P = par_n();
    for (int k = 0; k < len;) {
        int m = (lo + k) % n, q = m / w->cap;
        int end = (q + 1) * w->cap < n ? (q + 1) * w->cap : n;
        int cnt = end - m < len - k ? end - m : len - k;
        if (mode == LOCK_BLOCK) {
            par_lock(block_lock(P, q));
            add_forces(w, pf, m, cnt);
            par_unlock(block_lock(P, q));
        } else if (mode == LOCK_MOL) {
            for (int i = 0; i < cnt; i++) {
                par_lock(mol_lock(P, m + i));
                add_forces(w, pf, m + i, 1);
                par_unlock(mol_lock(P, m + i));
            }
        } else {
            add_forces(w, pf, m, cnt);
        }
        k += cnt;
    }
}

/* Kinetic energy of molecules lo..hi-1 (kcal/mol), from r1 = TSTEP v. */
static double kineti(const struct water *w, int lo, int hi)
{
    double e = 0;
    for (int m = lo; m < hi; m++) {
        const double *r1 = block_at(&w->der, m);
        for (int c = 0; c < REC; c++)
            e += 0.5 * site_mass[c / 3] * r1[c] * r1[c];
    }
    return e / (TSTEP * TSTEP * ACCEL);
}

/* r2 = TSTEP^2/2 a: the start of the Gear history, from the first forces. */
static void init_acc(struct water *w, int lo, int hi)
{
    for (int m = lo; m < hi; m++) {
        const double *f = block_at(&w->frc, m);
        double *r2 = block_at(&w->der, m) + REC;
        for (int c = 0; c < REC; c++)
            r2[c] = 0.5 * TSTEP * TSTEP * ACCEL * f[c] / site_mass[c / 3];
    }
}

/* CORREC and BNDRY: every value corrected by its share of the difference
 * between the acceleration the forces give and the predicted one; then a
 * molecule whose oxygen left the box is moved back whole. */
static void correc(struct water *w, int lo, int hi)
{
    for (int m = lo; m < hi; m++) {
        const double *f = block_at(&w->frc, m);
        double *r0 = block_at(&w->pos, m), *der = block_at(&w->der, m);
        for (int c = 0; c < REC; c++) {
            double diff = 0.5 * TSTEP * TSTEP * ACCEL * f[c] / site_mass[c / 3] - der[REC + c];
            r0[c] += gear_c[0] * diff;
            for (int k = 1; k <= NDER; k++)
                der[(k - 1) * REC + c] += gear_c[k] * diff;
        }
        for (int d = 0; d < 3; d++) {
            double s = r0[d] < 0 ? w->box : r0[d] >= w->box ? -w->box : 0.0;
            if (s != 0)
                for (int t = 0; t < NSITE; t++)
                    r0[3 * t + d] += s;
        }
    }
}

/* Adds to one step's shared energy sums, under SPLASH's sum lock. */
static void add_sum(double *field, double v, bool parallel)
{
    if (parallel)
        par_lock(LOCK_SUMS);
    *field += v;
    if (parallel)
        par_unlock(LOCK_SUMS);
}

/* MDMAIN over molecules lo..hi-1: the whole run in parallel (every
 * process, with its block) or, for the reference, alone over all of them
 * (mode LOCK_NONE: no barriers, no locks). pf is this process's private
 * force array. */
static void simulate(struct water *w, int steps, int lo, int hi, double *pf, enum lock_mode mode)
{
    bool par = mode != LOCK_NONE;
    struct pairk k;
    pair_constants(w, &k);

    /* The initial accelerations. */
    double pot = intraf(w, lo, hi);
    if (par)
        par_barrier();
    pot += interf(w, &k, pf, lo, hi);
    add_sum(&w->sums[0].pot, pot, par);
    merge(w, pf, lo, hi, mode);
    if (par)
        par_barrier();
    init_acc(w, lo, hi);
    add_sum(&w->sums[0].kin, kineti(w, lo, hi), par);

    for (int s = 1; s <= steps; s++) {
        predic(w, lo, hi);
        pot = intraf(w, lo, hi);
        /* Everyone's predicted positions and freshly initialised force
         * records are in place before anyone reads or adds to them. */
        if (par)
            par_barrier();
        pot += interf(w, &k, pf, lo, hi);
        add_sum(&w->sums[s].pot, pot, par);
        merge(w, pf, lo, hi, mode);
        /* Every force is complete before its owner corrects; after this
         * barrier nobody reads another's positions or writes another's
         * forces until the next step's barrier, so the corrector and the
         * next predictor need no other. */
        if (par)
            par_barrier();
        correc(w, lo, hi);
        add_sum(&w->sums[s].kin, kineti(w, lo, hi), par);
    }
}

/* ---- the check --------------------------------------------------------- */

/* The potential energy of a state by the plain double loop over all pairs
 * i < j: an enumeration independent of INTERF's cyclic half-neighbour
 * scheme, so a pair that scheme skipped or counted twice shows. */
static double direct_potential(const struct water *w)
{
    struct pairk k;
    pair_constants(w, &k);
    double *f = block_alloc_private((size_t)w->n * REC * sizeof *f), e = 0;
    for (int i = 0; i < w->n; i++) {
        e += intra_mol(block_at(&w->pos, i), f + (size_t)i * REC);
        for (int j = i + 1; j < w->n; j++)
            e += pair(&k, w->box, block_at(&w->pos, i), block_at(&w->pos, j), f + (size_t)i * REC,
                      f + (size_t)j * REC);
    }
    free(f);
    return e;
}

struct verdict {
    double dx, dv, de; /* largest differences from the reference (A, A/fs, K0) */
    double du;         /* |initial potential - direct_potential()| / K0 */
    double drift;      /* largest |E(s) - E(0)| / K0; K0 = the kinetic energy at the start */
};

static double total(const struct sums *s) { return s->pot + s->kin; }

/* The larger of cur and e, a NaN counting as the worst difference. */
static double worse(double cur, double e)
{
    return e != e ? INFINITY : e > cur ? e : cur;
}

static bool check(const struct water *w, const struct water *r, int steps, double u0,
                  struct verdict *v)
{
    int n = w->n;
    memset(v, 0, sizeof *v);
    v->du = worse(0, fabs(w->sums[0].pot - u0) / r->sums[0].kin);
    for (int m = 0; m < n; m++) {
        const double *x = block_at(&w->pos, m), *y = block_at(&r->pos, m);
        const double *a = block_at(&w->der, m), *b = block_at(&r->der, m);
        for (int c = 0; c < REC; c++) {
            v->dx = worse(v->dx, fabs(x[c] - y[c]));
            v->dv = worse(v->dv, fabs(a[c] - b[c]) / TSTEP);
        }
    }
    double k0 = r->sums[0].kin;
    for (int s = 0; s <= steps; s++) {
        v->de = worse(v->de, fabs(w->sums[s].pot - r->sums[s].pot) / k0);
        v->de = worse(v->de, fabs(w->sums[s].kin - r->sums[s].kin) / k0);
        v->drift = worse(v->drift, fabs(total(&w->sums[s]) - total(&w->sums[0])) / k0);
    }
    /* Against the reference. The two runs differ only in the order of
     * additions: a molecule's force is the sum of up to N private partial
     * sums, added in lock order, and the energies likewise. So the
     * positions differ by the rounding of a site's position (~4e-15 A at
     * 20 A) plus what force roundings move them; the energies by ~1e-16
     * of the sum of |terms|, which grows as n^2 against K0's n. Molecular
     * dynamics then amplifies differences by ~e per 150 steps here (its
     * Lyapunov time, ~20 fs: measured from 1e-15 to 2e-6 A over 3000
     * steps), hence the factor g = e^(steps/100) and -s <= 1000. Measured
     * over 3..1000 steps and 27..1331 molecules: dx <= 8e-12 A, dv <=
     * 6e-13 A/fs, de <= 1.1e-12 K0; the bounds leave a hundred to a
     * thousand times that. A lost or doubled force update of one molecule
     * pair (~1..100 kcal/mol/A) moves a hydrogen by 7e-7 A per kcal/mol/A
     * in one step, and the energies by the pair's energy, ~1e-5 K0 or
     * more: far outside. The initial potential against the plain
     * all-pairs sum: the same rounding argument, at step 0. */
    double g = exp(steps / 100.0);
    bool same = v->dx <= 1e-11 * g && v->dv <= 1e-12 * g && v->de <= 1e-13 * n * g &&
                v->du <= 1e-13 * n;
    /* Energy conservation over the run: the Gear corrector's error at
     * TSTEP = 0.15 fs (a hydrogen vibrates in ~9 fs, 60 steps), plus the
     * potential being taken at the predicted and the kinetic energy at
     * the corrected state: measured 1e-6..3e-6 K0 over 3..3000 steps. A
     * force that does not match the energy (a wrong derivative, a missing
     * update) does work that shows here; 1e-4 K0 leaves 30 to 100 times
     * the measured drift. */
    bool conserved = v->drift <= 1e-4;
    return same && conserved;
}

/* ---- driver ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: water [--size test|quick|full] [-n MOLECULES] [-s STEPS] [-l block|mol]\n"
               "  --size   test: 343 molecules, 20 steps; quick: 1331 molecules, 60 steps;\n"
               "           full (default): 1331 molecules (seed 000), 3 steps (SPLASH's input)\n"
               "  -n N     molecules, a cube (SPLASH's lattice): 8, 27, 64, ..., 97336\n"
               "  -s S     time steps of 1.5e-16 s, 1..1000\n"
               "  -l L     force-update locks: block (one per owner block, default) or mol\n"
               "           (one per molecule, as SPLASH)\n");
}

static bool is_cube(long n)
{
    int k = (int)lround(cbrt((double)n));
    return k * k * k == n;
}

int par_main(int argc, char **argv)
{
    int n = 1331, steps = 3;
    int mode = LOCK_BLOCK;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){343, 1331, 1331}},
        {"--size", ARG_WORD, &steps, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){20, 60, 3}},
        {"-n", ARG_INT, &n, "a cube 8..97336 (8, 27, 64, ...)", .overrides = true,
         .lo = 8, .hi = 97336, .valid = is_cube},
        {"-s", ARG_INT, &steps, "a step count 1..1000", .overrides = true, .lo = 1, .hi = 1000},
        {"-l", ARG_WORD, &mode, "block or mol",
         .words = (const char *const[]){"block", "mol", NULL},
         .values = (const int[]){LOCK_BLOCK, LOCK_MOL}},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;

    int P = par_n(), me = par_id();
    struct water w;
    setup(&w, n, steps, P, block_alloc_shared, shared_alloc_one);
    int lo, hi;
    block_range(n, w.cap, me, &lo, &hi);
    init_state(&w, lo, hi);
    double *pf = block_alloc_private((size_t)n * REC * sizeof *pf);

    par_timer_start();
    simulate(&w, steps, lo, hi, pf, mode);
    double secs = par_timer_stop();
    free(pf);

    bool ok = true;
    char extra[200] = "";
    if (me == 0) {
        struct water r;
        setup(&r, n, steps, 1, block_alloc_private, block_alloc_private);
        init_state(&r, 0, n);
        double u0 = direct_potential(&r);
        double *rpf = block_alloc_private((size_t)n * REC * sizeof *rpf);
        simulate(&r, steps, 0, n, rpf, LOCK_NONE);
        free(rpf);
        struct verdict v;
        ok = check(&w, &r, steps, u0, &v);
        if (!ok)
            fprintf(stderr,
                    "water: FAILED: against the sequential run, positions differ by up to %.3g A, "
                    "velocities by %.3g A/fs, energies by %.3g K0; the initial potential differs "
                    "from a plain all-pairs sum by %.3g K0; total energy moved by %.3g K0\n",
                    v.dx, v.dv, v.de, v.du, v.drift);
        snprintf(extra, sizeof extra, "steps=%d locks=%s E=%.6f dE=%.2e dx=%.1e", steps,
                 mode == LOCK_MOL ? "mol" : "block", total(&w.sums[steps]) / n, v.drift, v.dx);
        free_water(&r);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    return par_report("water", size, secs, ok, extra);
}
