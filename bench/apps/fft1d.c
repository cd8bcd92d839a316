/*
 * fft1d.c — the line FFT and input of the FFT applications (fft1d.h).
 */
#include "fft1d.h"

#include <math.h>
#include <stdlib.h>

#include "par.h"

cplx fft_root(int sign, uint64_t num, uint64_t den)
{
    double a = 2.0 * M_PI * (double)(num % den) / (double)den;
    return (cplx){cos(a), sign * sin(a)};
}

uint64_t fft_mix(uint64_t j)
{
    uint64_t z = j * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

cplx fft_input(uint64_t j)
{
    uint64_t z = fft_mix(j);
    return (cplx){(double)(z >> 32) * 0x1p-31 - 1.0, (double)(z & 0xffffffffu) * 0x1p-31 - 1.0};
}

void *fft_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        par_die("out of memory allocating %zu bytes", n);
    return p;
}

void fft1d_init(struct fft1d *f, int n)
{
    f->n = n;
    f->logn = 0;
    while ((1 << f->logn) < n)
        f->logn++;
    f->roots[0] = fft_xmalloc((size_t)n / 2 * sizeof(cplx));
    f->roots[1] = fft_xmalloc((size_t)n / 2 * sizeof(cplx));
    for (int k = 0; k < n / 2; k++) {
        f->roots[0][k] = fft_root(-1, (uint64_t)k, (uint64_t)n);
        f->roots[1][k] = fft_root(1, (uint64_t)k, (uint64_t)n);
    }
    f->rev = fft_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
        int r = 0;
        for (int b = 0; b < f->logn; b++)
            r |= ((i >> b) & 1) << (f->logn - 1 - b);
        f->rev[i] = r;
    }
}

void fft1d_free(struct fft1d *f)
{
    free(f->roots[0]);
    free(f->roots[1]);
    free(f->rev);
}

size_t fft_part_bytes(int n, int P, size_t len)
{
    int most = 0;
    for (int p = 0; p < P; p++) {
        int lines = (int)((int64_t)(p + 1) * n / P) - (int)((int64_t)p * n / P);
        most = lines > most ? lines : most;
    }
    return ((size_t)most * len * sizeof(cplx) + FFT_PAGE - 1) / FFT_PAGE * FFT_PAGE;
}
