/*
 * fft_check.h — the self-check the two FFT applications (fft.c, fft3d.c)
 * share: Parseval's identity, the round trip through the inverse, and the
 * RESULT line's fields. Each application keeps its own direct DFT, which
 * follows its dimensions.
 *
 * Both see the application's data in the input's index order, N = rows x
 * len points with the point j = r len + c at row r, through `point`, which
 * knows the application's layout. Sums go row by row, so that their rounding error
 * grows with the row count and the row length, not with N.
 */
#ifndef BENCH_APPS_FFT_CHECK_H
#define BENCH_APPS_FFT_CHECK_H
#include <stdbool.h>
#include <stdint.h>

#include "fft1d.h"

struct fft_check {
    double dft_err, parseval_err, rt_err, energy;
};

/* The point at linear index j of the application's array m, laid out as
 * its `layout` says. */
typedef cplx (*fft_point_fn)(const void *layout, cplx *m, uint64_t j);

/* Parseval, sum |X|^2 = N sum |x|^2, for the forward output (a sum of
 * positive terms on either side): ck->energy and ck->parseval_err. Returns
 * the input's L1 norm, which bounds every |X[k]|. */
double fft_check_parseval(uint64_t rows, uint64_t len, fft_point_fn point,
                          const void *layout, cplx *m, struct fft_check *ck);

/* The forward verdict, once ck->dft_err is set (the largest error of the
 * points checked against a direct DFT, relative to the L1 norm): within
 * 1e-9, and Parseval's within 1e-10. Each application argues both bounds
 * for its own sizes. */
bool fft_check_forward(const struct fft_check *ck);

/* The inverse transform's result against the input: ck->rt_err, the
 * largest difference relative to the largest input. True when within
 * 1e-9: forward and inverse each err by about log2(N) 5 eps relative to
 * the data's norm, ~1e-14 for the sizes here, while any wrong point is
 * off by about its own magnitude. */
bool fft_check_roundtrip(uint64_t rows, uint64_t len, fft_point_fn point,
                         const void *layout, cplx *m, struct fft_check *ck);

/* par_report with the check's figures as the extra fields; process 0 also
 * says so on stderr when the check failed. */
int fft_check_report(const char *app, const char *size, double secs, bool ok,
                     const struct fft_check *ck);
#endif
