/*
 * fft1d.h — what the two FFT applications (fft.c, fft3d.c) share: complex
 * arithmetic, their pseudo-random input, the radix-2 FFT of one line
 * that both apply along every axis of their data, and the size of the
 * page-aligned partitions their data is split in. (Their self-check is
 * fft_check.h.)
 */
#ifndef BENCH_APPS_FFT1D_H
#define BENCH_APPS_FFT1D_H
#include <stddef.h>
#include <stdint.h>

typedef struct { double re, im; } cplx;

static inline cplx cadd(cplx a, cplx b) { return (cplx){a.re + b.re, a.im + b.im}; }

/* Plain multiply: C99's complex * calls __muldc3 for Annex G's infinities,
 * several times slower, and no value here is infinite. */
static inline cplx cmul(cplx a, cplx b)
{
    return (cplx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/* exp(sign 2 pi i num / den), num reduced modulo den first so the angle
 * is exact before rounding: the tables are then accurate to an ulp or so. */
cplx fft_root(int sign, uint64_t num, uint64_t den);

/* splitmix64's output function: the source of the inputs and of the points
 * the checks pick. */
uint64_t fft_mix(uint64_t j);

/* The input at linear index j: a fixed pseudo-random function, so that any
 * process makes its own part and the check makes all of it, without
 * communication. Components uniform in [-1, 1). */
cplx fft_input(uint64_t j);

/* The tables of an n-point FFT (n a power of two), private to a process. */
struct fft1d {
    int n, logn;
    cplx *roots[2]; /* [0]: exp(-2 pi i k / n), [1]: conjugates; k < n / 2 */
    int *rev;       /* bit reversal of logn-bit indices */
};

void fft1d_init(struct fft1d *f, int n);
void fft1d_free(struct fft1d *f);

/* In-place iterative radix-2 decimation-in-time FFT of a[0..n): forward
 * (dir 0) or unscaled inverse (dir 1). Inline, so that the callers' loops
 * over lines compile as they did when each application had its own copy:
 * callgrind counts 214 M instructions in fft's 2^18-point transforms
 * either way, 222 M with the function out of line. */
static inline void fft1d_run(const struct fft1d *f, cplx *a, int dir)
{
    int n = f->n;
    const cplx *w = f->roots[dir];
    for (int i = 0; i < n; i++) {
        int j = f->rev[i];
        if (i < j) {
            cplx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (int half = 1, stride = n / 2; half < n; half *= 2, stride /= 2)
        for (int i = 0; i < n; i += 2 * half)
            for (int j = 0; j < half; j++) {
                cplx u = a[i + j], v = cmul(a[i + j + half], w[j * stride]);
                a[i + j] = (cplx){u.re + v.re, u.im + v.im};
                a[i + j + half] = (cplx){u.re - v.re, u.im - v.im};
            }
}

/* malloc, or the job ends with a message. */
void *fft_xmalloc(size_t n);

/* The DSM's coherence unit (DSM_PAGE_SIZE's default). */
#define FFT_PAGE 8192

/* Bytes of each process's partition when n lines of len points are split
 * over P processes in blocks, process p taking lines p n / P up to
 * (p + 1) n / P: the most lines any takes, in whole FFT_PAGEs, so that
 * every partition starts on a page of its own. */
size_t fft_part_bytes(int n, int P, size_t len);
#endif
