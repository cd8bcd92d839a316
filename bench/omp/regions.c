/*
 * regions.c — many small parallel regions (issue 85): a time-stepped
 * one-dimensional gas dynamics code in the shape of a hydrodynamics proxy
 * application, where every operation of a step is its own short
 * `#pragma omp parallel for`, a few hundred regions a step.
 *
 *   regions_omp [--size test|quick|full] [-n CELLS] [-s STEPS] [-k SUBSTEPS]
 *
 *   size    cells   steps  substeps  (regions = steps * (3 + 4 * substeps))
 *   test    4096    4      50        812
 *   quick   16384   10     50        2030
 *   full    65536   20     50        4060
 *
 * The gas: density, momentum and energy on a periodic grid, Rusanov's
 * (local Lax-Friedrichs) flux, explicit Euler in time. Each substep is
 * four regions: pressure and sound speed, the time step (a `min`
 * reduction), the fluxes at the cell faces, the update of the cells.
 * Each step adds three more: the density's extremes (`min` and `max`
 * reductions), and a count of cells at the pressure floor kept, as such
 * codes often do, in a per-thread array on the master's stack that the
 * master sums afterwards. The ratio of specific heats, the cell width
 * and the CFL number are locals of the master's, shared into the loops.
 *
 * Self-check: the same run with every region off (`if(0)`, the initial
 * thread alone) must agree bit for bit; min and max are exact, so any
 * team gives the same numbers. The state must also stay physical
 * (positive density and pressure) and conserve mass to rounding.
 *
 * A standalone program: nothing but the C library and <omp.h>, so that
 * `clang -fopenmp` and dsmcc build it unchanged. It prints one line,
 *   RESULT app=regions mode=omp procs=T size=N time=S check=ok|FAIL ...
 * and exits 1 when the check fails, 2 on a bad option.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 256

struct gas {
    int     n;
    double *rho, *mom, *ene;    /* the conserved variables, per cell */
    double *pre, *snd;          /* pressure and sound speed, per cell */
    double *f_rho, *f_mom, *f_ene; /* fluxes; face i is between cells i and i+1 */
};

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        fprintf(stderr, "regions: out of memory (%zu x %zu bytes)\n", count, size);
        exit(2);
    }
    return p;
}

static void gas_alloc(struct gas *g, int n)
{
    g->n = n;
    double **arrays[] = {&g->rho, &g->mom, &g->ene, &g->pre, &g->snd,
                         &g->f_rho, &g->f_mom, &g->f_ene};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        *arrays[i] = xcalloc((size_t)n, sizeof(double));
}

static void gas_free(struct gas *g)
{
    free(g->rho), free(g->mom), free(g->ene), free(g->pre), free(g->snd);
    free(g->f_rho), free(g->f_mom), free(g->f_ene);
}

/* A smooth density wave at rest, pressure 1, set by the initial thread. */
static void gas_init(struct gas *g)
{
    const double pi = 3.14159265358979323846, gamma = 1.4;
    for (int i = 0; i < g->n; i++) {
        double x = (i + 0.5) / g->n;
        g->rho[i] = 1.0 + 0.2 * sin(2 * pi * x);
        g->mom[i] = 0.1 * g->rho[i] * sin(4 * pi * x);
        g->ene[i] = 1.0 / (gamma - 1) + 0.5 * g->mom[i] * g->mom[i] / g->rho[i];
    }
}

/* Runs `steps` steps of `substeps` each, every loop its own region when
 * `parallel`; returns the cells that met the pressure floor. */
static long simulate(struct gas *g, int steps, int substeps, int parallel, double *rho_lo,
                     double *rho_hi)
{
    const int n = g->n;
    double gamma = 1.4, cfl = 0.4, dx = 1.0 / n, p_floor = 1e-6;
    double *rho = g->rho, *mom = g->mom, *ene = g->ene, *pre = g->pre, *snd = g->snd;
    double *f_rho = g->f_rho, *f_mom = g->f_mom, *f_ene = g->f_ene;
    long floor_hits = 0;
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < substeps; k++) {
#pragma omp parallel for if (parallel) schedule(static)
            for (int i = 0; i < n; i++) {
                double u = mom[i] / rho[i];
                double p = (gamma - 1) * (ene[i] - 0.5 * rho[i] * u * u);
                pre[i] = p > p_floor ? p : p_floor;
                snd[i] = sqrt(gamma * pre[i] / rho[i]);
            }
            double dt = 1e30;
#pragma omp parallel for if (parallel) schedule(static) reduction(min : dt)
            for (int i = 0; i < n; i++) {
                double w = dx / (fabs(mom[i] / rho[i]) + snd[i]);
                dt = w < dt ? w : dt;
            }
            dt *= cfl;
#pragma omp parallel for if (parallel) schedule(static)
            for (int i = 0; i < n; i++) {
                int j = i + 1 < n ? i + 1 : 0;
                double ul = mom[i] / rho[i], ur = mom[j] / rho[j];
                double a = fmax(fabs(ul) + snd[i], fabs(ur) + snd[j]);
                f_rho[i] = 0.5 * (mom[i] + mom[j]) - 0.5 * a * (rho[j] - rho[i]);
                f_mom[i] = 0.5 * (mom[i] * ul + pre[i] + mom[j] * ur + pre[j]) -
                           0.5 * a * (mom[j] - mom[i]);
                f_ene[i] = 0.5 * ((ene[i] + pre[i]) * ul + (ene[j] + pre[j]) * ur) -
                           0.5 * a * (ene[j] - ene[i]);
            }
            double r = dt / dx;
#pragma omp parallel for if (parallel) schedule(static)
            for (int i = 0; i < n; i++) {
                int h = i > 0 ? i - 1 : n - 1;
                rho[i] -= r * (f_rho[i] - f_rho[h]);
                mom[i] -= r * (f_mom[i] - f_mom[h]);
                ene[i] -= r * (f_ene[i] - f_ene[h]);
            }
        }
        double lo = 1e30, hi = -1e30;
#pragma omp parallel for if (parallel) schedule(static) reduction(min : lo)
        for (int i = 0; i < n; i++)
            lo = rho[i] < lo ? rho[i] : lo;
#pragma omp parallel for if (parallel) schedule(static) reduction(max : hi)
        for (int i = 0; i < n; i++)
            hi = rho[i] > hi ? rho[i] : hi;
        *rho_lo = lo, *rho_hi = hi;
        /* each thread counts into its own slot, the master sums them */
        long hits[MAX_THREADS] = {0};
#pragma omp parallel if (parallel)
        {
            int me = omp_get_thread_num();
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++)
                if (pre[i] <= p_floor)
                    hits[me]++;
        }
        for (int t = 0; t < MAX_THREADS; t++)
            floor_hits += hits[t];
    }
    return floor_hits;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: regions_omp [--size test|quick|full] [-n CELLS] [-s STEPS] [-k SUBSTEPS]\n"
               "  --size  test: 4096 cells, 4 steps; quick: 16384 cells, 10 steps;\n"
               "          full (default): 65536 cells, 20 steps; 50 substeps each\n"
               "  -n N    cells, 16..100000000\n"
               "  -s S    steps, 1..1000000 (3 + 4 x substeps regions each)\n"
               "  -k K    substeps a step, 1..100000\n"
               "  threads: OMP_NUM_THREADS (at most %d)\n",
            MAX_THREADS);
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
    int n = 65536, steps = 20, substeps = 50, n_opt = 0, s_opt = 0, k_opt = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "test"))
                n = 4096, steps = 4;
            else if (!strcmp(v, "quick"))
                n = 16384, steps = 10;
            else if (!strcmp(v, "full"))
                n = 65536, steps = 20;
            else
                bad = 1;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            bad = parse_int(argv[++i], 16, 100000000, &n_opt) != 0;
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            bad = parse_int(argv[++i], 1, 1000000, &s_opt) != 0;
        } else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            bad = parse_int(argv[++i], 1, 100000, &k_opt) != 0;
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
    if (k_opt)
        substeps = k_opt;
    if (omp_get_max_threads() > MAX_THREADS) {
        fprintf(stderr, "regions: %d threads; at most %d\n", omp_get_max_threads(), MAX_THREADS);
        return 2;
    }

    struct gas g, ref;
    gas_alloc(&g, n);
    gas_init(&g);
    double mass0 = 0;
    for (int i = 0; i < n; i++)
        mass0 += g.rho[i];

    double lo, hi, ref_lo, ref_hi;
    double t0 = omp_get_wtime();
    long hits = simulate(&g, steps, substeps, 1, &lo, &hi);
    double secs = omp_get_wtime() - t0;

    gas_alloc(&ref, n);
    gas_init(&ref);
    long ref_hits = simulate(&ref, steps, substeps, 0, &ref_lo, &ref_hi);

    int ok = hits == ref_hits && lo == ref_lo && hi == ref_hi && lo > 0;
    int first = -1;
    double mass = 0;
    for (int i = 0; i < n; i++) {
        /* memcmp, not ==: bit for bit, so -0.0 or a NaN is caught too */
        if (first < 0 && (memcmp(&g.rho[i], &ref.rho[i], sizeof(double)) ||
                          memcmp(&g.mom[i], &ref.mom[i], sizeof(double)) ||
                          memcmp(&g.ene[i], &ref.ene[i], sizeof(double))))
            first = i;
        mass += g.rho[i];
    }
    if (first >= 0) {
        fprintf(stderr, "regions: cell %d differs from the run without regions: rho %.17g, "
                        "expected %.17g\n", first, g.rho[first], ref.rho[first]);
        ok = 0;
    }
    if (fabs(mass - mass0) > 1e-9 * mass0) {
        fprintf(stderr, "regions: mass %.17g, started at %.17g\n", mass, mass0);
        ok = 0;
    }
    int regions = steps * (3 + 4 * substeps);
    printf("RESULT app=regions mode=omp procs=%d size=%d time=%.6f check=%s steps=%d "
           "regions=%d us_per_region=%.1f rho=%.6f..%.6f floor=%ld\n",
           omp_get_max_threads(), n, secs, ok ? "ok" : "FAIL", steps, regions,
           secs * 1e6 / regions, lo, hi, hits);
    gas_free(&g);
    gas_free(&ref);
    return ok ? 0 : 1;
}
