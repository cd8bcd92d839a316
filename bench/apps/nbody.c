/*
 * nbody.c — the O(n^2) gravitational N-body problem of seed 001 (SMS 0.4.1,
 * §3.3.1: 100, 1000 and 2000 stars, static partition, barriers only).
 *
 *   nbody [--size test|quick|full] [-n BODIES] [-s STEPS]
 *
 * Every body feels every other through softened gravity (G = 1):
 *     a_i = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)
 * integrated with kick-drift-kick leapfrog (symplectic, so the energy error
 * stays bounded instead of drifting):
 *     v += a dt/2;  x += v dt;  a = a(x);  v += a dt/2.
 * The seed gives no step count; we run 1000 steps of dt = 1e-3 (about a
 * crossing time of the unit-radius cluster) unless -s says otherwise.
 *
 * Parallel structure (seed 001): the bodies are split into one contiguous
 * block per process. Positions are double-buffered: in a step every
 * process reads all positions of buffer `cur` and writes its own bodies'
 * new positions into buffer `nxt`, which nobody reads until the next
 * step's barrier, so one barrier per step and no lock is needed.
 * Velocities and accelerations are touched by their owner alone.
 *
 * Layout for a page-based DSM: every array has one block per process, each
 * padded to BLOCK_GRAIN bytes and homed (PAR_HOME_BLOCK) on the process that
 * writes it, so a process's writes never share a page with another's
 * (no false sharing), and a step's remote reads are whole pages of
 * positions, fetched once per step per remote block, in order.
 *
 * Self-check (process 0, outside the timed section): the same computation
 * run sequentially in private memory. Each body's acceleration is summed
 * over j = 0..n-1 in the same order by the same function in both runs, so
 * the final positions and velocities must be equal bit for bit, whatever
 * the number of processes. Also checked on the parallel result: total
 * momentum (zero at the start) and total energy (bounds below).
 *
 * The initial conditions and the pairwise pull are ../kernels/nbody.h, the
 * same code the OpenMP version (bench/omp/nbody.c) runs.
 */
#include "blocks.h"
#include "par.h"
#include "../kernels/nbody.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records of 3 doubles (pos, vel, acc) or 1 (mass), in blocks of `cap`
 * bodies (blocks.h). */
struct bodies {
    int                n, nblk, cap;
    struct block_array pos[2], vel, acc, mass;
};

/* Lays out the arrays for nblk blocks; alloc is par_alloc_home (shared)
 * or a private allocator for the reference. */
static void layout(struct bodies *b, int n, int nblk, void *(*alloc)(size_t))
{
    b->n = n;
    b->nblk = nblk;
    b->cap = block_cap(n, nblk);
    struct block_array *all[] = {&b->pos[0], &b->pos[1], &b->vel, &b->acc, &b->mass};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        block_array_init(all[k], (all[k] == &b->mass ? 1 : 3) * sizeof(double), b->cap, nblk,
                         alloc);
}

static void free_bodies(struct bodies *b)
{
    free(b->pos[0].base);
    free(b->pos[1].base);
    free(b->vel.base);
    free(b->acc.base);
    free(b->mass.base);
}

/* ---- initial conditions ------------------------------------------------
 * A function of the body's index alone, so every process builds its own
 * bodies and the reference builds them all, identically. */

/* Fills bodies lo..hi-1, their velocities taken in the centre-of-mass
 * frame (computed over all n bodies, in the same order everywhere). */
static void init_bodies(struct bodies *b, int lo, int hi)
{
    double p[3], mt;
    nbody_momentum(b->n, p, &mt);
    for (int i = lo; i < hi; i++) {
        double x[3], v[3], m;
        nbody_body_init(b->n, i, x, v, &m);
        double *xi = block_at(&b->pos[0], i), *vi = block_at(&b->vel, i);
        for (int d = 0; d < 3; d++) {
            xi[d] = x[d];
            vi[d] = v[d] - p[d] / mt;
        }
        *block_at(&b->mass, i) = m;
    }
}

/* ---- the kernel ------------------------------------------------------- */

/* The acceleration of body i from all bodies of `pos`, summed in index
 * order; the self term adds an exact zero, so it needs no test. Both runs
 * call this one function, so the compiler makes the same arithmetic of
 * both (no reassociation without -ffast-math). */
__attribute__((noinline)) static void accel(const struct bodies *b,
                                            const struct block_array *pos, int i, double a[3])
{
    const double *p = block_at(pos, i);
    double xi[3] = {p[0], p[1], p[2]}, sum[3] = {0, 0, 0};
    for (int q = 0; q < b->nblk; q++) {
        int lo = q * b->cap, hi = lo + b->cap < b->n ? lo + b->cap : b->n;
        const double *xj = block_at(pos, lo), *mj = block_at(&b->mass, lo);
        for (int j = 0; j < hi - lo; j++)
            nbody_pull(xi, xj + 3 * j, mj[j], sum);
    }
    for (int d = 0; d < 3; d++)
        a[d] = sum[d];
}

/* Bodies lo..hi-1 of buffer *cur: accelerations (the start of the run). */
static void forces(struct bodies *b, int cur, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        accel(b, &b->pos[cur], i, block_at(&b->acc, i));
}

/* Half kick and drift of bodies lo..hi-1 from buffer cur into 1 - cur. */
static void kick_drift(struct bodies *b, int cur, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        nbody_kick_drift(block_at(&b->vel, i), block_at(&b->acc, i), block_at(&b->pos[cur], i),
                         block_at(&b->pos[1 - cur], i));
}

/* New accelerations from buffer cur, and the second half kick. */
static void force_kick(struct bodies *b, int cur, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        double *a = block_at(&b->acc, i);
        accel(b, &b->pos[cur], i, a);
        nbody_kick(block_at(&b->vel, i), a);
    }
}

/* ---- conserved quantities (for the check) ----------------------------- */

static double energy(const struct bodies *b, int cur)
{
    double k = 0, u = 0;
    for (int i = 0; i < b->n; i++) {
        const double *xi = block_at(&b->pos[cur], i);
        double mi = *block_at(&b->mass, i);
        k += nbody_kinetic(mi, block_at(&b->vel, i));
        for (int j = i + 1; j < b->n; j++)
            u -= nbody_binding(mi, xi, *block_at(&b->mass, j), block_at(&b->pos[cur], j));
    }
    return k + u;
}

/* |total momentum| and the sum of |m v| it is measured against. */
static void momentum(const struct bodies *b, double *norm, double *scale)
{
    double p[3] = {0, 0, 0};
    *scale = 0;
    for (int i = 0; i < b->n; i++) {
        const double *v = block_at(&b->vel, i);
        double m = *block_at(&b->mass, i);
        for (int d = 0; d < 3; d++)
            p[d] += m * v[d];
        *scale += m * sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    *norm = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
}

/* ---- driver ----------------------------------------------------------- */

/* The whole simulation over bodies lo..hi-1 of b (all of them for the
 * reference); returns the buffer holding the final positions. `sync` is
 * par_barrier in the parallel run, nothing in the reference. */
static int simulate(struct bodies *b, int steps, int lo, int hi, void (*sync)(void))
{
    int cur = 0;
    forces(b, cur, lo, hi);
    for (int s = 0; s < steps; s++) {
        kick_drift(b, cur, lo, hi);
        cur = 1 - cur;
        /* Every position of the new buffer is written before anyone reads
         * it; the old buffer is rewritten only after the next barrier, by
         * which time everybody has finished reading it. */
        sync();
        force_kick(b, cur, lo, hi);
    }
    return cur;
}

static void no_sync(void) {}

static void usage(FILE *f)
{
    fprintf(f, "usage: nbody [--size test|quick|full] [-n BODIES] [-s STEPS]\n"
               "  --size   test: 256 bodies, 40 steps; quick: 1000 bodies, 600 steps;\n"
               "           full (default): 1000 bodies (seed 001), 1000 steps\n"
               "  -n N     bodies, 2..100000\n"
               "  -s S     time steps of dt = 1e-3, 1..1000000\n");
}

int par_main(int argc, char **argv)
{
    int n = 1000, steps = 1000;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){256, 1000, 1000}},
        {"--size", ARG_WORD, &steps, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){40, 600, 1000}},
        {"-n", ARG_INT, &n, "a body count 2..100000", .overrides = true, .lo = 2, .hi = 100000},
        {"-s", ARG_INT, &steps, "a step count 1..1000000", .overrides = true,
         .lo = 1, .hi = 1000000},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;

    int P = par_n(), me = par_id();
    struct bodies b;
    layout(&b, n, P, block_alloc_shared);
    int lo, hi;
    block_range(n, b.cap, me, &lo, &hi);
    init_bodies(&b, lo, hi);

    par_timer_start();
    int cur = simulate(&b, steps, lo, hi, par_barrier);
    double secs = par_timer_stop();

    bool ok = true;
    char extra[160] = "";
    if (me == 0) {
        struct bodies r;
        layout(&r, n, 1, block_alloc_private);
        init_bodies(&r, 0, n);
        double e0 = energy(&r, 0);
        int rcur = simulate(&r, steps, 0, n, no_sync);

        size_t bad_bodies = 0;
        int first = -1;
        uint64_t h = FNV1A_START;
        for (int i = 0; i < n; i++) {
            /* memcmp, not ==: bit for bit, so -0.0 or a NaN is caught too */
            if (memcmp(block_at(&b.pos[cur], i), block_at(&r.pos[rcur], i), 3 * sizeof(double)) ||
                memcmp(block_at(&b.vel, i), block_at(&r.vel, i), 3 * sizeof(double))) {
                if (first < 0)
                    first = i;
                bad_bodies++;
            }
            h = fnv1a(h, block_at(&b.pos[cur], i), 3 * sizeof(double));
        }
        if (bad_bodies) {
            nbody_report_mismatch(bad_bodies, n, first, block_at(&b.pos[cur], first),
                                  block_at(&r.pos[rcur], first));
            ok = false;
        }
        /* The physics of both runs: energy and momentum conserved. */
        double de, pn, ps;
        ok &= nbody_energy_ok(e0, energy(&b, cur), &de);
        momentum(&b, &pn, &ps);
        ok &= nbody_momentum_ok(pn, ps, n, steps);
        snprintf(extra, sizeof extra, "steps=%d dE=%.2e dP=%.2e checksum=%016llx", steps, de,
                 ps > 0 ? pn / ps : 0.0, (unsigned long long)h);
        free_bodies(&r);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    return par_report("nbody", size, secs, ok, extra);
}
