/*
 * omp_flag_pipeline.c — NPB LU's pipeline as LU writes it (issue 37):
 * each thread waits for its neighbour's flag with `flush(flag)` inside
 * the loop, and reads the neighbour's row right after the loop, with no
 * flush of its own between the flag and the row. On hardware the row is
 * current; on dsm the flag's page may come from its home (or be the
 * home's) with the neighbour's flag before this node has the notices of
 * the neighbour's row, which must then not be read as it was
 * (coherence.h, "catching up"). The rows' pages move home to their
 * writers first, as LU's do. A sweep goes forward (thread t takes t-1's
 * row) and back; each row of stage k must hold k times its depth.
 * Prints "PASSED: 0 failed" when every row read was current.
 */
#include <omp.h>
#include <stdio.h>

#define MAX_THREADS 16
#define ROW 2048 /* doubles: 16 KiB, a page or more whatever DSM_PAGE_SIZE is */
#define STAGES 100
#define SWEEPS 2
#define POLL_LIMIT_S 60.0

static int flag[MAX_THREADS];
static double row[MAX_THREADS][ROW] __attribute__((aligned(16384)));
static int failed, stuck;

/* The rows' homes go to their writers (homes follow writes at barriers). */
static void own_rows(void)
{
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        for (int r = 0; r < 40; r++) {
            for (int j = 0; j < ROW; j++)
                row[me][j] = r;
#pragma omp barrier
        }
    }
}

/* LU's wait: polls with flush(flag) and nothing after; a bound keeps a
 * broken runtime from hanging the test. */
static int wait_while(int *f, int value)
{
    double t0 = omp_get_wtime();
    while (*f == value) {
#pragma omp flush(flag)
        if (omp_get_wtime() - t0 > POLL_LIMIT_S)
            return 0;
    }
    return 1;
}

static void sweep(int forward)
{
#pragma omp parallel
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
        int prev = forward ? me - 1 : me + 1, next = forward ? me + 1 : me - 1;
        int has_prev = prev >= 0 && prev < n, has_next = next >= 0 && next < n;
        int depth = forward ? me : n - 1 - me, bad = 0, ok = 1;
        for (int k = 1; k <= STAGES && ok; k++) {
            if (has_prev)
                ok = wait_while(&flag[prev], 0);
            if (has_next && ok)
                ok = wait_while(&flag[me], 1);
            double base = has_prev ? row[prev][0] : 0;
            if (base != (double)k * depth && bad++ == 0)
                printf("FAILED: thread %d, %s stage %d: the neighbour's row holds %g, not %g\n", me,
                       forward ? "forward" : "backward", k, base, (double)k * depth);
            for (int j = 0; j < ROW; j++) {
                if (has_prev && row[prev][j] != base)
                    bad++;
                row[me][j] = base + k;
            }
            if (has_prev)
                flag[prev] = 0;
            if (has_next)
                flag[me] = 1;
#pragma omp flush(flag)
        }
#pragma omp critical
        {
            failed += bad;
            stuck += !ok;
        }
    }
}

int main(void)
{
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    if (n > MAX_THREADS) {
        printf("FAILED: more than %d threads\n", MAX_THREADS);
        return 1;
    }
    own_rows();
    for (int s = 0; s < SWEEPS && !stuck; s++) {
        sweep(1);
        sweep(0);
    }
    if (stuck)
        printf("FAILED: a neighbour's flag was never seen in %.0f s\n", POLL_LIMIT_S);
    printf("%s: %d failed\n", failed || stuck ? "FAILED" : "PASSED", failed + stuck);
    return failed || stuck;
}
