/*
 * nbody.c — the O(n^2) gravitational N-body problem of seed 001 (SMS
 * 0.4.1, §3.3.1: 100, 1000 and 2000 stars, static partition, barriers
 * only), as a plain OpenMP program: bench/apps/nbody.c's model with
 * OpenMP worksharing in place of its explicit blocks.
 *
 *   nbody_omp [--size test|quick|full] [-n BODIES] [-s STEPS]
 *
 * Every body feels every other through softened gravity (G = 1):
 *     a_i = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)
 * integrated with kick-drift-kick leapfrog (symplectic, so the energy error
 * stays bounded instead of drifting):
 *     v += a dt/2;  x += v dt;  a = a(x);  v += a dt/2.
 * dt = 1e-3; the bodies start uniform in the unit sphere with the virial
 * velocity dispersion (the same initial conditions as bench/apps/nbody.c).
 *
 * Parallel structure: one parallel region around the time steps; both
 * phases of a step are `omp for schedule(static)` loops over the bodies
 * with the same bounds, so each thread keeps the same bodies throughout.
 * Positions are double-buffered: a step's drift reads buffer `cur` and
 * writes the thread's own bodies into the other, whose loop barrier is the
 * step's one barrier; the force loop then reads all of the new buffer and
 * writes only its own bodies' accelerations and velocities, so it needs no
 * barrier after it (nowait): the next drift writes the old buffer, which
 * nobody reads any more.
 *
 * Self-check, outside the timed section: the same simulation run again
 * with the parallel region switched off (`if(0)`: the initial thread
 * alone). Each body's acceleration is summed over j = 0..n-1 in the same
 * order by the same code in both runs, so the final positions and
 * velocities must be equal bit for bit, whatever the number of threads.
 * Also checked on the parallel result: total momentum (zero at the start)
 * and total energy (bounds below), summed by parallel reductions, the
 * energy's triangular pair loop dealt out by schedule(guided).
 *
 * The initial conditions and the pairwise pull are ../kernels/nbody.h, the
 * same code the dsm-API version (bench/apps/nbody.c) runs.
 *
 * A standalone program: nothing but the C library, <omp.h> and the
 * headers ../kernels/nbody.h, rng.h and fnv1a.h, so that it can be built
 * unchanged by `clang -fopenmp` (threads) and by dsmcc (one thread per
 * node). It prints one line,
 *   RESULT app=nbody mode=omp procs=T size=N time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/fnv1a.h"
#include "../kernels/nbody.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bodies {
    int n;
    double (*pos[2])[3], (*vel)[3], (*acc)[3], *mass;
};

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        fprintf(stderr, "nbody: out of memory\n");
        exit(2);
    }
    return p;
}

static void alloc_bodies(struct bodies *b, int n)
{
    b->n = n;
    b->pos[0] = xcalloc((size_t)n, sizeof *b->pos[0]);
    b->pos[1] = xcalloc((size_t)n, sizeof *b->pos[1]);
    b->vel = xcalloc((size_t)n, sizeof *b->vel);
    b->acc = xcalloc((size_t)n, sizeof *b->acc);
    b->mass = xcalloc((size_t)n, sizeof *b->mass);
}

static void free_bodies(struct bodies *b)
{
    free(b->pos[0]);
    free(b->pos[1]);
    free(b->vel);
    free(b->acc);
    free(b->mass);
}

/* ---- initial conditions (../kernels/nbody.h's) -------------------------- */

/* All bodies, velocities in the centre-of-mass frame. The frame's velocity
 * is summed serially, in index order, so that both runs start from the
 * same bits; the bodies are then filled in parallel (each thread its own,
 * by the static schedule the steps use). */
static void init_bodies(struct bodies *b, int parallel)
{
    double p[3], mt;
    nbody_momentum(b->n, p, &mt);
#pragma omp parallel for if (parallel) schedule(static)
    for (int i = 0; i < b->n; i++) {
        double x[3], v[3], m;
        nbody_body_init(b->n, i, x, v, &m);
        for (int d = 0; d < 3; d++) {
            b->pos[0][i][d] = x[d];
            b->vel[i][d] = v[d] - p[d] / mt;
        }
        b->mass[i] = m;
    }
}

/* ---- the simulation ------------------------------------------------------ */

/* The acceleration of body i from all bodies at x, summed in index order;
 * the self term adds an exact zero, so it needs no test. */
static void accel(const struct bodies *b, const double (*x)[3], int i, double a[3])
{
    double xi[3] = {x[i][0], x[i][1], x[i][2]}, sum[3] = {0, 0, 0};
    for (int j = 0; j < b->n; j++)
        nbody_pull(xi, x[j], b->mass[j], sum);
    for (int d = 0; d < 3; d++)
        a[d] = sum[d];
}

/* `steps` leapfrog steps, in parallel or by the initial thread alone;
 * returns the buffer holding the final positions. */
static int simulate(struct bodies *b, int steps, int parallel)
{
    int final = 0;
    const int n = b->n;
#pragma omp parallel if (parallel) default(shared)
    {
        int cur = 0;
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++)
            accel(b, b->pos[cur], i, b->acc[i]);
        for (int s = 0; s < steps; s++) {
            /* half kick and drift into the other buffer; the barrier
             * ending the loop: every new position is written */
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++)
                nbody_kick_drift(b->vel[i], b->acc[i], b->pos[cur][i], b->pos[1 - cur][i]);
            cur = 1 - cur;
            /* new accelerations and the second half kick; nowait (see
             * the top): the same static schedule gives each thread the
             * same bodies in both loops */
#pragma omp for schedule(static) nowait
            for (int i = 0; i < n; i++) {
                accel(b, b->pos[cur], i, b->acc[i]);
                nbody_kick(b->vel[i], b->acc[i]);
            }
        }
#pragma omp single nowait
        final = cur;
    }
    return final;
}

/* ---- conserved quantities (for the check) ------------------------------- */

static double energy(const struct bodies *b, int cur)
{
    const double (*x)[3] = b->pos[cur];
    double k = 0, u = 0;
    /* row i has n - i - 1 pairs: guided hands out shrinking chunks */
#pragma omp parallel for schedule(guided) reduction(+ : k, u)
    for (int i = 0; i < b->n; i++) {
        double mi = b->mass[i];
        k += nbody_kinetic(mi, b->vel[i]);
        for (int j = i + 1; j < b->n; j++)
            u -= nbody_binding(mi, x[i], b->mass[j], x[j]);
    }
    return k + u;
}

/* |total momentum| and the sum of |m v| it is measured against. */
static void momentum(const struct bodies *b, double *norm, double *scale)
{
    double px = 0, py = 0, pz = 0, s = 0;
#pragma omp parallel for schedule(static) reduction(+ : px, py, pz, s)
    for (int i = 0; i < b->n; i++) {
        const double *v = b->vel[i];
        double m = b->mass[i];
        px += m * v[0];
        py += m * v[1];
        pz += m * v[2];
        s += m * sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    *norm = sqrt(px * px + py * py + pz * pz);
    *scale = s;
}

/* ---- driver --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: nbody_omp [--size test|quick|full] [-n BODIES] [-s STEPS]\n"
               "  --size   test: 256 bodies, 40 steps; quick: 1000 bodies (seed 001), 50 steps;\n"
               "           full (default): 1000 bodies, 400 steps\n"
               "  -n N     bodies, 2..100000\n"
               "  -s S     time steps of dt = 1e-3, 1..1000000\n"
               "  threads: OMP_NUM_THREADS\n");
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    int n = 1000, steps = 400, n_opt = 0, s_opt = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "test"))
                n = 256, steps = 40;
            else if (!strcmp(v, "quick"))
                n = 1000, steps = 50;
            else if (!strcmp(v, "full"))
                n = 1000, steps = 400;
            else
                bad = 1;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            bad = parse_int(argv[++i], 2, 100000, &n_opt) != 0;
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            bad = parse_int(argv[++i], 1, 1000000, &s_opt) != 0;
        } else {
            bad = 1;
        }
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (n_opt)
        n = n_opt;
    if (s_opt)
        steps = s_opt;

    struct bodies b, r;
    alloc_bodies(&b, n);
    init_bodies(&b, 1);
    double e0 = energy(&b, 0);

    double t0 = omp_get_wtime();
    int cur = simulate(&b, steps, 1);
    double secs = omp_get_wtime() - t0;

    alloc_bodies(&r, n);
    init_bodies(&r, 0);
    int rcur = simulate(&r, steps, 0);

    int ok = 1;
    size_t bad_bodies = 0;
    int first = -1;
    uint64_t h = FNV1A_START;
    for (int i = 0; i < n; i++) {
        /* memcmp, not ==: bit for bit, so -0.0 or a NaN is caught too */
        if (memcmp(b.pos[cur][i], r.pos[rcur][i], sizeof b.pos[cur][i]) ||
            memcmp(b.vel[i], r.vel[i], sizeof b.vel[i])) {
            if (first < 0)
                first = i;
            bad_bodies++;
        }
        h = fnv1a(h, b.pos[cur][i], sizeof b.pos[cur][i]);
    }
    if (bad_bodies) {
        nbody_report_mismatch(bad_bodies, n, first, b.pos[cur][first], r.pos[rcur][first]);
        ok = 0;
    }

    /* The physics: energy and momentum conserved (kernels/nbody.h). */
    double de, pn, ps;
    ok &= nbody_energy_ok(e0, energy(&b, cur), &de);
    momentum(&b, &pn, &ps);
    ok &= nbody_momentum_ok(pn, ps, n, steps);
    printf("RESULT app=nbody mode=omp procs=%d size=%d time=%.6f check=%s steps=%d dE=%.2e "
           "dP=%.2e checksum=%016llx\n",
           omp_get_max_threads(), n, secs, ok ? "ok" : "FAIL", steps, de, ps > 0 ? pn / ps : 0.0,
           (unsigned long long)h);
    free_bodies(&b);
    free_bodies(&r);
    return ok ? 0 : 1;
}
