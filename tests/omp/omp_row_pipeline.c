/*
 * omp_row_pipeline.c — NPB-CPP 4.1 LU's pipeline as it writes it (issues
 * 37, 38): rows of a plane (not page-aligned: neighbours' rows share
 * pages, written by different nodes), a `for nowait schedule(static)`
 * over the rows that first updates this thread's rows from the plane
 * before, then a second one that waits row by row for a flag per row
 * (`flag[j-1]` set, `flag[j]` cleared) polled with `flush` and reads row
 * j-1 with no flush between; flags set with no flush after them (the
 * next wait's flush releases them). A backward sweep does the same the
 * other way. Each value is an exact integer; the master recomputes every
 * plane alone and compares. Prints "PASSED: 0 failed" when every value
 * matched.
 *
 * NPB-CPP's pattern relies on more than OpenMP promises: with no flush
 * between a row's writes and its flag's, the flag may become visible
 * first (x86 hardware keeps them in order; erc-inv does not, see
 * docs/openmp.md). With FLUSH_AS_OPENMP_ASKS (omp_row_pipeline_flushed.c)
 * the writer flushes before it sets or clears a flag and the reader after
 * its wait: the conforming program, which every protocol must run.
 */
#include <omp.h>
#include <stdio.h>

#define NK 12
#define NJ 13          /* rows of 13 × 5 doubles: 520 bytes, as LU class S's */
#define NI 13
#define JST 1
#define JEND 11
#define STEPS 16
#define MOD 65521
#define POLL_LIMIT_S 60.0

static double v[NK][NJ][NI][5], ref[NK][NJ][NI][5];
static int flag[NJ], flag2[NJ];
static int stuck;

#ifdef FLUSH_AS_OPENMP_ASKS
static void publish_flush(void)
{
#pragma omp flush
}
#else
static void publish_flush(void) {}
#endif

static double mix(double own, double a, double b)
{
    return (double)(((long)own * 3 + (long)a * 5 + (long)b * 7 + 1) % MOD);
}

/* LU's wait, with a bound so that a broken runtime cannot hang the test. */
static int wait_while(int *f, int value)
{
    double t0 = omp_get_wtime();
    while (*f == value) {
#pragma omp flush
        if (omp_get_wtime() - t0 > POLL_LIMIT_S)
            return 0;
    }
    publish_flush();
    return 1;
}

/* blts: plane k from plane k-1, then row j from row j-1 in order. */
static void lower(double (*w)[NJ][NI][5], int k, int par)
{
    int ok = 1;
#pragma omp for nowait schedule(static)
    for (int j = JST; j < JEND; j++)
        for (int i = 1; i < NI - 1; i++)
            for (int m = 0; m < 5; m++)
                w[k][j][i][m] = mix(w[k][j][i][m], w[k - 1][j][i][m], 0);
#pragma omp for nowait schedule(static)
    for (int j = JST; j < JEND; j++) {
        if (par && j != JST && ok)
            ok = wait_while(&flag[j - 1], 0);
        if (par && j != JEND - 1 && ok)
            ok = wait_while(&flag[j], 1);
        for (int i = 1; i < NI - 1; i++)
            for (int m = 0; m < 5; m++)
                w[k][j][i][m] = mix(w[k][j][i][m], w[k][j - 1][i][m], w[k][j][i - 1][m]);
        if (par)
            publish_flush();
        if (par && j != JEND - 1)
            flag[j] = 1;
        if (par && j != JST)
            flag[j - 1] = 0;
    }
    if (!ok)
#pragma omp atomic
        stuck++;
}

/* buts: the same from the plane after, rows in reverse. */
static void upper(double (*w)[NJ][NI][5], int k, int par)
{
    int ok = 1;
#pragma omp for nowait schedule(static)
    for (int j = JEND - 1; j >= JST; j--)
        for (int i = NI - 2; i >= 1; i--)
            for (int m = 0; m < 5; m++)
                w[k][j][i][m] = mix(w[k][j][i][m], w[k + 1][j][i][m], 0);
#pragma omp for nowait schedule(static)
    for (int j = JEND - 1; j >= JST; j--) {
        if (par && j != JEND - 1 && ok)
            ok = wait_while(&flag2[j + 1], 0);
        if (par && j != JST && ok)
            ok = wait_while(&flag2[j], 1);
        for (int i = NI - 2; i >= 1; i--)
            for (int m = 0; m < 5; m++)
                w[k][j][i][m] = mix(w[k][j][i][m], w[k][j + 1][i][m], w[k][j][i + 1][m]);
        if (par)
            publish_flush();
        if (par && j != JEND - 1)
            flag2[j + 1] = 0;
        if (par && j != JST)
            flag2[j] = 1;
    }
    if (!ok)
#pragma omp atomic
        stuck++;
}

static void sweeps(double (*w)[NJ][NI][5], int par)
{
    for (int s = 0; s < STEPS; s++) {
        for (int k = 1; k < NK - 1; k++)
            lower(w, k, par);
#pragma omp barrier
        for (int k = NK - 2; k > 0; k--)
            upper(w, k, par);
#pragma omp barrier
    }
}

static void fill(double (*w)[NJ][NI][5])
{
    for (int k = 0; k < NK; k++)
        for (int j = 0; j < NJ; j++)
            for (int i = 0; i < NI; i++)
                for (int m = 0; m < 5; m++)
                    w[k][j][i][m] = (k * 7 + j * 5 + i * 3 + m) % 17;
}

int main(void)
{
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    fill(v);
    fill(ref);
    sweeps(ref, 0);
#pragma omp parallel
    sweeps(v, 1);
    long failed = 0;
    int shown = 0;
    for (int k = 0; k < NK; k++)
        for (int j = 0; j < NJ; j++)
            for (int i = 0; i < NI; i++)
                for (int m = 0; m < 5; m++)
                    if (v[k][j][i][m] != ref[k][j][i][m] && failed++ < 1 && shown++ < 1)
                        printf("FAILED: v[%d][%d][%d][%d] is %g, not %g\n", k, j, i, m, v[k][j][i][m],
                               ref[k][j][i][m]);
    if (stuck)
        printf("FAILED: a neighbour's flag was never seen in %.0f s\n", POLL_LIMIT_S);
    printf("%s: %ld failed\n", failed || stuck ? "FAILED" : "PASSED", failed + stuck);
    return failed || stuck;
}
