/*
 * fft_check.c — the FFT applications' shared self-check (fft_check.h).
 */
#include "fft_check.h"

#include <math.h>
#include <stdio.h>

#include "par.h"

double fft_check_parseval(uint64_t rows, uint64_t len, fft_point_fn point,
                          const void *layout, cplx *m, struct fft_check *ck)
{
    double ex = 0, eX = 0, l1 = 0;
    for (uint64_t r = 0; r < rows; r++) {
        double rx = 0, rX = 0, rl = 0;
        for (uint64_t c = 0; c < len; c++) {
            uint64_t j = r * len + c;
            cplx v = fft_input(j), w = point(layout, m, j);
            rx += v.re * v.re + v.im * v.im;
            rl += hypot(v.re, v.im);
            rX += w.re * w.re + w.im * w.im;
        }
        ex += rx;
        eX += rX;
        l1 += rl;
    }
    double n = (double)rows * (double)len;
    ck->energy = eX;
    ck->parseval_err = fabs(eX - n * ex) / (n * ex);
    return l1;
}

bool fft_check_forward(const struct fft_check *ck)
{
    return ck->dft_err < 1e-9 && ck->parseval_err < 1e-10;
}

bool fft_check_roundtrip(uint64_t rows, uint64_t len, fft_point_fn point,
                         const void *layout, cplx *m, struct fft_check *ck)
{
    double err = 0, mag = 0;
    for (uint64_t j = 0; j < rows * len; j++) {
        cplx v = fft_input(j), w = point(layout, m, j);
        err = fmax(err, hypot(w.re - v.re, w.im - v.im));
        mag = fmax(mag, hypot(v.re, v.im));
    }
    ck->rt_err = err / mag;
    return ck->rt_err < 1e-9;
}

int fft_check_report(const char *app, const char *size, double secs, bool ok,
                     const struct fft_check *ck)
{
    char extra[160];
    snprintf(extra, sizeof extra, "energy=%.10e dft_err=%.1e parseval_err=%.1e roundtrip_err=%.1e",
             ck->energy, ck->dft_err, ck->parseval_err, ck->rt_err);
    if (par_id() == 0 && !ok)
        fprintf(stderr, "%s: CHECK FAILED: %s\n", app, extra);
    return par_report(app, size, secs, ok, extra);
}
