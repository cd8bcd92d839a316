/*
 * ep.c — NAS Parallel Benchmarks EP ("embarrassingly parallel"), the
 * kernel seed 003 runs on Omni/SCASH, classes S, W and A.
 *
 *   ep [--size test|quick|full] [-c S|W|A]      (test = S, quick = W, full = A)
 *
 * The generator, the classes and the work of one batch are
 * ../kernels/npb_ep.h (which says what EP computes), the kernels this
 * program shares with its OpenMP version, bench/omp/ep.c.
 *
 * The batches are split among the processes in contiguous blocks and each
 * runs its own with no communication at all. Each process writes its
 * partial sums into its own page of shared memory (homed where it is
 * written, so writing it costs nothing); after one barrier every process
 * adds the N slots up in the same order, so all hold the same totals.
 *
 * Self-check: the official NPB verification values of sx and sy, to a
 * relative error of 1e-8 as NPB's own test (see ep_classes[]).
 */
#include "npb.h"
#include "../kernels/npb_ep.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 8192 /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */

/* One process's partial results; each in a page of its own, so no two
 * processes ever write the same page. */
struct partial {
    double sx, sy;
    double q[NQ];
    int32_t bad; /* a deviate fell outside the 10 annuli */
};
union slot {
    struct partial p;
    char pad[PAGE];
};

/* Batches lo..hi-1 into *out; x is a private buffer of 2 NK doubles. */
static void run_batches(int64_t lo, int64_t hi, double *x, struct partial *out)
{
    const uint64_t an = ep_batch_step();
    double sx = 0, sy = 0, q[NQ] = {0};
    int bad = 0;
    for (int64_t k = lo; k < hi; k++)
        ep_batch(k, an, x, &sx, &sy, q, &bad);
    out->sx = sx;
    out->sy = sy;
    memcpy(out->q, q, sizeof q);
    out->bad = bad;
}

static void usage(FILE *f)
{
    npb_usage(f, "ep", "NAS EP: 2^(M+1) random numbers, Gaussian pairs by the polar method",
              "class S (M=24), quick = W (M=25), full = A (M=28, default)");
}

int par_main(int argc, char **argv)
{
    int k; /* ep_classes[k] */
    int rc = npb_class_args(argc, argv, usage, &k);
    if (rc != ARGS_RUN)
        return rc;
    const struct ep_class *cls = &ep_classes[k];
    int me = par_id(), n = par_n();
    int64_t batches = (int64_t)1 << (cls->m - MK);
    int64_t lo = batches * me / n, hi = batches * (me + 1) / n;

    union slot *slots = par_alloc_home((size_t)n * sizeof *slots, PAR_HOME_BLOCK);
    double *x = malloc(2 * NK * sizeof *x);
    if (!x)
        par_die("out of memory");

    par_timer_start();
    run_batches(lo, hi, x, &slots[me].p);
    par_barrier();
    /* Every process adds the slots in the same order: identical totals. */
    struct partial tot = {0};
    for (int p = 0; p < n; p++) {
        tot.sx += slots[p].p.sx;
        tot.sy += slots[p].p.sy;
        for (int l = 0; l < NQ; l++)
            tot.q[l] += slots[p].p.q[l];
        tot.bad |= slots[p].p.bad;
    }
    double secs = par_timer_stop();
    free(x);

    bool ok = ep_verify(cls, tot.sx, tot.sy, tot.bad, "a deviate outside the 10 annuli", me == 0);
    double gc = ep_pairs(tot.q);
    char size[16], extra[160];
    snprintf(size, sizeof size, "%c", cls->name);
    snprintf(extra, sizeof extra, "M=%d pairs=%.0f sx=%.15e sy=%.15e", cls->m, gc, tot.sx,
             tot.sy);
    return par_report("ep", size, secs, ok, extra);
}
