/*
 * ep.c — NAS Parallel Benchmarks EP ("embarrassingly parallel"), the
 * kernel seed 003 runs on Omni/SCASH, classes S, W and A.
 *
 *   ep [--size test|quick|full] [-c S|W|A]      (test = S, quick = W, full = A)
 *
 * 2^(M+1) uniform numbers from the NPB linear congruential generator
 *   x[k+1] = a * x[k] mod 2^46,  a = 5^13,  x[0] = s = 271828183,
 * taken in consecutive pairs (x1, x2) mapped to (-1, 1). A pair inside the
 * unit circle (t = x1^2 + x2^2 <= 1) gives two independent Gaussian
 * deviates by the Marsaglia polar method, X = x1 sqrt(-2 ln t / t) and
 * Y = x2 sqrt(-2 ln t / t); the benchmark sums X and Y and counts the pairs
 * in each square annulus l <= max(|X|, |Y|) < l + 1, l = 0..9.
 *
 * The numbers come in 2^(M-16) batches of 2^16 pairs. Batch k starts from
 * the seed s * a^(2^17 k) mod 2^46, so any process can start any batch
 * without generating the ones before it: the batches are split among the
 * processes in contiguous blocks and each runs its own with no
 * communication at all. Each process writes its partial sums into its own
 * page of shared memory (homed where it is written, so writing it costs
 * nothing); after one barrier every process adds the N slots up in the
 * same order, so all hold the same totals.
 *
 * The generator is exact integer arithmetic modulo 2^46. NPB's randlc
 * emulates it in double precision by splitting the operands into 23-bit
 * halves; here it is a 64-bit multiply, whose low 46 bits are the same
 * residue because 2^46 divides 2^64. The uniform numbers x * 2^-46 are
 * therefore identical to NPB's, bit for bit.
 *
 * Self-check: the official NPB verification values of sx and sy, to a
 * relative error of 1e-8 as NPB's own test (see verify_values).
 */
#include "npb.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MK 16               /* log2 of the pairs in a batch (NPB's mk) */
#define NK (1 << MK)
#define NQ 10               /* annuli */
#define LCG_A 1220703125ull /* 5^13 */
#define LCG_S 271828183ull  /* NPB's starting seed */
#define MASK46 ((1ull << 46) - 1)
#define PAGE 8192           /* the DSM's coherence unit (DSM_PAGE_SIZE's default) */

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

static inline uint64_t mulmod46(uint64_t a, uint64_t b) { return (a * b) & MASK46; }

static uint64_t powmod46(uint64_t base, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1) {
        if (e & 1)
            r = mulmod46(r, base);
        base = mulmod46(base, base);
    }
    return r;
}

/* NPB's vranlc: advances the seed n times and stores each new value,
 * scaled by 2^-46, in y. */
static uint64_t vranlc(int n, uint64_t x, double *y)
{
    const double r46 = 0x1p-46;
    for (int i = 0; i < n; i++) {
        x = mulmod46(x, LCG_A);
        y[i] = r46 * (double)x;
    }
    return x;
}

/* Batches lo..hi-1 into *out; x is a private buffer of 2 NK doubles. */
static void run_batches(int64_t lo, int64_t hi, double *x, struct partial *out)
{
    /* a^(2 NK): the generator's step from one batch's seed to the next */
    const uint64_t an = powmod46(LCG_A, 2 * (uint64_t)NK);
    double sx = 0, sy = 0, q[NQ] = {0};
    int bad = 0;
    for (int64_t k = lo; k < hi; k++) {
        vranlc(2 * NK, mulmod46(LCG_S, powmod46(an, (uint64_t)k)), x);
        for (int i = 0; i < NK; i++) {
            double x1 = 2.0 * x[2 * i] - 1.0;
            double x2 = 2.0 * x[2 * i + 1] - 1.0;
            double t1 = x1 * x1 + x2 * x2;
            if (t1 <= 1.0) {
                double t2 = sqrt(-2.0 * log(t1) / t1);
                double t3 = x1 * t2, t4 = x2 * t2;
                int l = (int)fmax(fabs(t3), fabs(t4));
                if (l < NQ)
                    q[l] += 1.0;
                else
                    bad = 1;
                sx += t3;
                sy += t4;
            }
        }
    }
    out->sx = sx;
    out->sy = sy;
    memcpy(out->q, q, sizeof q);
    out->bad = bad;
}

/* The official verification values of NPB EP (NPB3.3-SER/EP/ep.f, the
 * `if (m.eq.24) ... elseif (m.eq.28)` block; the same in NPB 2.x and the
 * C ports, e.g. GMAP/NPB-CPP). */
static const struct ep_class {
    char name;
    int m;
    double sx, sy;
} classes[] = {
    {'S', 24, -3.247834652034740e+3, -6.958407078382297e+3},
    {'W', 25, -2.863319731645753e+3, -6.320053679109499e+3},
    {'A', 28, -4.295875165629892e+3, -1.580732573678431e+4},
};

static void usage(FILE *f)
{
    npb_usage(f, "ep", "NAS EP: 2^(M+1) random numbers, Gaussian pairs by the polar method",
              "class S (M=24), quick = W (M=25), full = A (M=28, default)");
}

int par_main(int argc, char **argv)
{
    int k; /* classes[k] */
    int rc = npb_class_args(argc, argv, usage, &k);
    if (rc != ARGS_RUN)
        return rc;
    const struct ep_class *cls = &classes[k];
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

    /* NPB's test: the relative error of both sums at most 1e-8. The sums
     * of ~10^8 deviates carry rounding error near 1e-16 * sqrt(terms) *
     * max|term| relative to a magnitude of ~10^3..10^4, far inside 1e-8,
     * whatever the order the partial sums are added in; a wrong generator,
     * seed or batch split moves them by far more. The counts must add up
     * to the number of accepted pairs, which is not known in advance, so
     * they are printed rather than checked; no deviate may miss an annulus. */
    double sx_err = fabs((tot.sx - cls->sx) / cls->sx);
    double sy_err = fabs((tot.sy - cls->sy) / cls->sy);
    bool ok = sx_err <= 1e-8 && sy_err <= 1e-8 && !tot.bad;
    double gc = 0;
    for (int l = 0; l < NQ; l++)
        gc += tot.q[l];
    if (me == 0 && !ok)
        fprintf(stderr,
                "ep: class %c: sx %.15e (want %.15e, rel. error %.3g), "
                "sy %.15e (want %.15e, rel. error %.3g)%s\n",
                cls->name, tot.sx, cls->sx, sx_err, tot.sy, cls->sy, sy_err,
                tot.bad ? ", a deviate outside the 10 annuli" : "");
    char size[16], extra[160];
    snprintf(size, sizeof size, "%c", cls->name);
    snprintf(extra, sizeof extra, "M=%d pairs=%.0f sx=%.15e sy=%.15e", cls->m, gc, tot.sx,
             tot.sy);
    return par_report("ep", size, secs, ok, extra);
}
