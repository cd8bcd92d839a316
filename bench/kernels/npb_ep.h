/*
 * npb_ep.h — NPB EP's numerical kernels, one source for both of its
 * programs: bench/apps/ep.c (dsm's API through par.h) and bench/omp/ep.c
 * (plain OpenMP, built by clang -fopenmp and by dsmcc). They differ in how
 * the batches are shared out and the sums reduced, not in the arithmetic:
 * the class table, NPB's generator, the work of one batch and the
 * verification live here.
 *
 * Header-only and C library only (static inline functions) because the
 * OpenMP program must stay a standalone source that any OpenMP compiler
 * builds from one file: it includes this header by a relative path.
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
 * the seed s * a^(2^17 k) mod 2^46, so any process or thread can start any
 * batch without generating the ones before it.
 *
 * The generator is exact integer arithmetic modulo 2^46. NPB's randlc
 * emulates it in double precision by splitting the operands into 23-bit
 * halves; here it is a 64-bit multiply, whose low 46 bits are the same
 * residue because 2^46 divides 2^64. The uniform numbers x * 2^-46 are
 * therefore identical to NPB's, bit for bit.
 */
#ifndef NPB_EP_H
#define NPB_EP_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MK 16               /* log2 of the pairs in a batch (NPB's mk) */
#define NK (1 << MK)
#define NQ 10               /* annuli */
#define LCG_A 1220703125ull /* 5^13 */
#define LCG_S 271828183ull  /* NPB's starting seed */
#define MASK46 ((1ull << 46) - 1)

/* The official verification values of NPB EP (NPB3.3-SER/EP/ep.f, the
 * `if (m.eq.24) ... elseif (m.eq.28)` block; the same in NPB 2.x and the
 * C ports, e.g. GMAP/NPB-CPP). The order is --size's: test, quick, full. */
static const struct ep_class {
    char name;
    int m;
    double sx, sy;
} ep_classes[] = {
    {'S', 24, -3.247834652034740e+3, -6.958407078382297e+3},
    {'W', 25, -2.863319731645753e+3, -6.320053679109499e+3},
    {'A', 28, -4.295875165629892e+3, -1.580732573678431e+4},
};

static inline uint64_t mulmod46(uint64_t a, uint64_t b) { return (a * b) & MASK46; }

static inline uint64_t powmod46(uint64_t base, uint64_t e)
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
static inline uint64_t vranlc(int n, uint64_t x, double *y)
{
    const double r46 = 0x1p-46;
    for (int i = 0; i < n; i++) {
        x = mulmod46(x, LCG_A);
        y[i] = r46 * (double)x;
    }
    return x;
}

/* a^(2 NK): the generator's step from one batch's seed to the next. */
static inline uint64_t ep_batch_step(void) { return powmod46(LCG_A, 2 * (uint64_t)NK); }

/* Batch k (an = ep_batch_step()), x a buffer of 2 NK doubles: adds its
 * deviates to *sx and *sy and its pairs to the annulus counts q, in the
 * order NPB adds them; sets *bad when a deviate falls outside the NQ
 * annuli. The sums are carried in locals, which nothing else can alias
 * (q could), so they stay in registers. */
static inline void ep_batch(int64_t k, uint64_t an, double *x, double *sx, double *sy,
                            double q[NQ], int *bad)
{
    double bsx = *sx, bsy = *sy;
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
                *bad = 1;
            bsx += t3;
            bsy += t4;
        }
    }
    *sx = bsx;
    *sy = bsy;
}

/* NPB's test: the relative error of both sums at most 1e-8, and `bad`
 * (what it stands for in `bad_what`, e.g. "a deviate outside the 10
 * annuli") not set; false, with a line on stderr when `say`, when either
 * fails. The sums of ~10^8 deviates carry rounding error near 1e-16 *
 * sqrt(terms) * max|term| relative to a magnitude of ~10^3..10^4, far
 * inside 1e-8, whatever order the partial sums are added in; a wrong
 * generator, seed or batch split moves them by far more. The annulus
 * counts are printed, not checked: NPB has no reference for them. */
static inline bool ep_verify(const struct ep_class *c, double sx, double sy, int bad,
                             const char *bad_what, bool say)
{
    double sx_err = fabs((sx - c->sx) / c->sx);
    double sy_err = fabs((sy - c->sy) / c->sy);
    bool ok = sx_err <= 1e-8 && sy_err <= 1e-8 && !bad;
    if (!ok && say)
        fprintf(stderr,
                "ep: class %c: sx %.15e (want %.15e, rel. error %.3g), "
                "sy %.15e (want %.15e, rel. error %.3g)%s%s\n",
                c->name, sx, c->sx, sx_err, sy, c->sy, sy_err, bad ? ", " : "",
                bad ? bad_what : "");
    return ok;
}

/* The accepted pairs: the annulus counts' sum. */
static inline double ep_pairs(const double q[NQ])
{
    double gc = 0;
    for (int l = 0; l < NQ; l++)
        gc += q[l];
    return gc;
}
#endif
