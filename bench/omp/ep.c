/*
 * ep.c — NAS Parallel Benchmarks EP ("embarrassingly parallel"), classes
 * S, W and A, as a plain OpenMP program: the structure of NPB 3.x's
 * OpenMP EP (one parallel region, the batches shared out by a static
 * `omp for` with the sums reduced, the annulus counts added up in a
 * critical section).
 *
 *   ep_omp [--size test|quick|full] [-c S|W|A]   (test = S, quick = W, full = A)
 *
 * The generator, the classes and the work of one batch are
 * ../kernels/npb_ep.h (which says what EP computes), the kernels this
 * program shares with the dsm-API version, bench/apps/ep.c. Any thread can
 * start any batch without generating the ones before it.
 *
 * Self-check: the official NPB verification values of sx and sy, to a
 * relative error of 1e-8 as NPB's own test (see ep_classes[]).
 *
 * A standalone program: nothing but the C library, <omp.h> and the header
 * ../kernels/npb_ep.h, so that it can be built unchanged by `clang
 * -fopenmp` (threads) and by dsmcc (one thread per node). It prints one line,
 *   RESULT app=ep mode=omp procs=T size=A time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/npb_ep.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: ep_omp [--size test|quick|full] [-c S|W|A]\n"
               "  NAS EP: 2^(M+1) random numbers, Gaussian pairs by the polar method\n"
               "  --size  test = class S (M=24), quick = W (M=25), full = A (M=28, default)\n"
               "  -c      NPB class S, W or A\n"
               "  threads: OMP_NUM_THREADS\n");
}

/* The class, or NULL after a bad option (*help: asked for). */
static const struct ep_class *parse_args(int argc, char **argv, int *help)
{
    static const char *const sizes[] = {"test", "quick", "full"};
    const struct ep_class *c = &ep_classes[2];
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            *help = 1;
            return NULL;
        } else if (!strcmp(argv[i], "--size") && v) {
            int k = 0;
            while (k < 3 && strcmp(v, sizes[k]))
                k++;
            if (k == 3)
                return NULL;
            c = &ep_classes[k];
            i++;
        } else if (!strcmp(argv[i], "-c") && v && strlen(v) == 1) {
            const struct ep_class *found = NULL;
            for (size_t k = 0; k < sizeof ep_classes / sizeof ep_classes[0]; k++)
                if (ep_classes[k].name == (v[0] & ~0x20))
                    found = &ep_classes[k];
            if (!found)
                return NULL;
            c = found;
            i++;
        } else {
            return NULL;
        }
    }
    return c;
}

int main(int argc, char **argv)
{
    int help;
    const struct ep_class *cls = parse_args(argc, argv, &help);
    if (!cls) {
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    const int64_t batches = (int64_t)1 << (cls->m - MK);
    const uint64_t an = ep_batch_step();

    double sx = 0, sy = 0, q[NQ] = {0};
    int bad = 0, threads = 1;

    double t0 = omp_get_wtime();
#pragma omp parallel default(none) shared(q, bad, threads, cls, batches, an) reduction(+ : sx, sy)
    {
        /* each thread's buffer and annulus counts, private as in NPB */
        double *x = malloc(2 * NK * sizeof *x);
        double qq[NQ] = {0};
        int mybad = !x;
#pragma omp master
        threads = omp_get_num_threads();

/* Built with -DEP_SCHEDULE_RUNTIME (ep_rt_dsm, for bench/loadbalance), the
 * loop takes its schedule from OMP_SCHEDULE, as seed 003's EP did, and
 * runs in EP_PASSES executions over consecutive slices of the batches:
 * the profiled schedule measures a loop's executions (seed 003 Fig. 4),
 * so a loop executed once could never be re-partitioned. The sums are
 * the same. */
#ifdef EP_SCHEDULE_RUNTIME
#define EP_PASSES 16
        for (int64_t pass = 0; pass < EP_PASSES; pass++) {
        const int64_t first = batches * pass / EP_PASSES;
        const int64_t last = batches * (pass + 1) / EP_PASSES;
#pragma omp for schedule(runtime)
#else
        {
        const int64_t first = 0, last = batches;
#pragma omp for schedule(static)
#endif
        for (int64_t k = first; k < last; k++)
            if (x)
                ep_batch(k, an, x, &sx, &sy, qq, &mybad);
        }
        /* NPB adds each thread's counts into the shared ones under a
         * critical section: once per thread, so not a hot path. */
#pragma omp critical
        {
            for (int l = 0; l < NQ; l++)
                q[l] += qq[l];
            bad |= mybad;
        }
        free(x);
    }
    double secs = omp_get_wtime() - t0;

    /* NPB's test: the relative error of both sums at most 1e-8. The sums
     * of ~10^8 deviates carry rounding error near 1e-16 * sqrt(terms) *
     * max|term| relative to a magnitude of ~10^3..10^4, far inside 1e-8,
     * whatever order the threads' partial sums are added in; a wrong
     * generator, seed or batch split moves them by far more. The counts
     * are printed, not checked (NPB has no reference for them); but no
     * deviate may miss an annulus, and a thread that could not allocate
     * its buffer fails the run. */
    double sx_err = fabs((sx - cls->sx) / cls->sx);
    double sy_err = fabs((sy - cls->sy) / cls->sy);
    int ok = sx_err <= 1e-8 && sy_err <= 1e-8 && !bad;
    double gc = 0;
    for (int l = 0; l < NQ; l++)
        gc += q[l];
    if (!ok)
        fprintf(stderr,
                "ep: class %c: sx %.15e (want %.15e, rel. error %.3g), "
                "sy %.15e (want %.15e, rel. error %.3g)%s\n",
                cls->name, sx, cls->sx, sx_err, sy, cls->sy, sy_err,
                bad ? ", a deviate outside the 10 annuli or out of memory" : "");
    printf("RESULT app=ep mode=omp procs=%d size=%c time=%.6f check=%s M=%d pairs=%.0f "
           "sx=%.15e sy=%.15e\n",
           threads, cls->name, secs, ok ? "ok" : "FAIL", cls->m, gc, sx, sy);
    return ok ? 0 : 1;
}
