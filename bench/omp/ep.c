/*
 * ep.c — NAS Parallel Benchmarks EP ("embarrassingly parallel"), classes
 * S, W and A, as a plain OpenMP program: the structure of NPB 3.x's
 * OpenMP EP (one parallel region, the batches shared out by a static
 * `omp for` with the sums reduced, the annulus counts added up in a
 * critical section).
 *
 *   ep_omp [--size test|quick|full] [-c S|W|A]   (test = S, quick = W, full = A)
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
 * the seed s * a^(2^17 k) mod 2^46, so any thread can start any batch
 * without generating the ones before it.
 *
 * The generator is exact integer arithmetic modulo 2^46. NPB's randlc
 * emulates it in double precision by splitting the operands into 23-bit
 * halves; here it is a 64-bit multiply, whose low 46 bits are the same
 * residue because 2^46 divides 2^64: the uniform numbers are NPB's, bit
 * for bit.
 *
 * Self-check: the official NPB verification values of sx and sy, to a
 * relative error of 1e-8 as NPB's own test (see classes[]).
 *
 * A standalone program: nothing but the C library and <omp.h>, so that it
 * can be built unchanged by `clang -fopenmp` (threads) and by dsmcc
 * (one thread per node). It prints one line,
 *   RESULT app=ep mode=omp procs=T size=A time=S check=ok|FAIL ...
 * (the format bench/run reads), and exits 1 when the check fails.
 */
#include <math.h>
#include <omp.h>
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

/* The official verification values of NPB EP (NPB3.3-SER/EP/ep.f, the
 * `if (m.eq.24) ... elseif (m.eq.28)` block; the same in NPB 2.x and the
 * C ports). */
static const struct ep_class {
    char name;
    int m;
    double sx, sy;
} classes[] = {
    {'S', 24, -3.247834652034740e+3, -6.958407078382297e+3},
    {'W', 25, -2.863319731645753e+3, -6.320053679109499e+3},
    {'A', 28, -4.295875165629892e+3, -1.580732573678431e+4},
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
    const struct ep_class *c = &classes[2];
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
            c = &classes[k];
            i++;
        } else if (!strcmp(argv[i], "-c") && v && strlen(v) == 1) {
            const struct ep_class *found = NULL;
            for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++)
                if (classes[k].name == (v[0] & ~0x20))
                    found = &classes[k];
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
    /* a^(2 NK): the generator's step from one batch's seed to the next */
    const uint64_t an = powmod46(LCG_A, 2 * (uint64_t)NK);

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
        for (int64_t k = first; k < last; k++) {
            if (!x)
                continue;
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
                        qq[l] += 1.0;
                    else
                        mybad = 1;
                    sx += t3;
                    sy += t4;
                }
            }
        }
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
