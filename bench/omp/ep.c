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
 * A standalone program: nothing but the C library, <omp.h> and the headers
 * ../kernels/npb_ep.h and npb_class.h, so that it can be built unchanged
 * by `clang -fopenmp` (threads) and by dsmcc (one thread per node). It
 * prints one line,
 *   RESULT app=ep mode=omp procs=T size=A time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include "../kernels/npb_class.h"
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

int main(int argc, char **argv)
{
    int k; /* ep_classes[k] */
    int rc = npb_class_option(argc, argv, usage, &k);
    if (rc != NPB_RUN)
        return rc;
    const struct ep_class *cls = &ep_classes[k];
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

    /* a thread that could not allocate its buffer fails the run too */
    int ok = ep_verify(cls, sx, sy, bad, "a deviate outside the 10 annuli or out of memory", true);
    double gc = ep_pairs(q);
    printf("RESULT app=ep mode=omp procs=%d size=%c time=%.6f check=%s M=%d pairs=%.0f "
           "sx=%.15e sy=%.15e\n",
           threads, cls->name, secs, ok ? "ok" : "FAIL", cls->m, gc, sx, sy);
    return ok ? 0 : 1;
}
