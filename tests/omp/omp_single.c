/*
 * omp_single.c — `single` as OpenMP and libomp run it (issue 37): any
 * thread of the team may be the one that runs it, so
 *   - singles with nowait that wait for one another's work do not
 *     deadlock (LLVM's omp_single_nowait shape): the first single waits
 *     for a flag the second sets, which only another thread can run;
 *   - copyprivate broadcasts the value of whichever thread ran it, from
 *     its stack or its threadprivate copy;
 *   - a reduction's merge does not overtake the zeroing of its variable
 *     in a preceding `single nowait` (NPB CG's dot products).
 * Prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define POLL_LIMIT_S 30.0
#define N 4000
#define ROUNDS 20

static int failed;
static int flag;
static int tp_value;
#pragma omp threadprivate(tp_value)

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp critical
        failed++;
        printf("FAILED: %s (thread %d)\n", what, omp_get_thread_num());
    }
}

static void singles_wait_for_each_other(void)
{
    flag = 0;
    int seen = 1;
#pragma omp parallel
    {
#pragma omp single nowait
        {
            double t0 = omp_get_wtime();
            int ok = 0;
            while (omp_get_wtime() - t0 < POLL_LIMIT_S) {
#pragma omp flush
                if (flag) {
                    ok = 1;
                    break;
                }
            }
            seen = ok;
        }
#pragma omp single nowait
        {
            flag = 1;
#pragma omp flush
        }
    }
    check(seen, "a single nowait never saw the flag the next single sets");
}

static void copyprivate_from_any_thread(void)
{
    int runner = -1;
    int all_ok = 1;
#pragma omp parallel
    {
        int mine = -1;
        double big[3] = {0, 0, 0};
        for (int round = 0; round < 8; round++) {
#pragma omp single copyprivate(mine, big, tp_value)
            {
                runner = omp_get_thread_num();
                mine = 1000 * round + runner;
                big[0] = round, big[1] = runner, big[2] = -round;
                tp_value = 7 * round + runner;
            }
            int ok = mine == 1000 * round + runner && big[0] == round && big[1] == runner &&
                     big[2] == -round && tp_value == 7 * round + runner;
            if (!ok) {
#pragma omp critical
                all_ok = 0;
            }
#pragma omp barrier
        }
    }
    check(all_ok, "copyprivate did not broadcast the runner's values");
}

#ifndef OMP_LIBOMP_REFERENCE
static double x[N];
static double sum;

static void reduction_after_single_nowait(void)
{
    for (int i = 0; i < N; i++)
        x[i] = i % 7;
    double expect = 0;
    for (int i = 0; i < N; i++)
        expect += x[i] * x[i];
    int all_ok = 1;
#pragma omp parallel
    {
        for (int round = 0; round < ROUNDS; round++) {
#pragma omp single nowait
            sum = 0.0;
#pragma omp for reduction(+ : sum)
            for (int i = 0; i < N; i++) {
                sum += x[i] * x[i];
                /* The master's share takes longest: another thread's
                 * merge comes first whenever it can. */
                if (omp_get_thread_num() == 0 && i % 500 == 0) {
                    double t0 = omp_get_wtime();
                    while (omp_get_wtime() - t0 < 1e-3)
                        ;
                }
            }
            if (sum != expect) {
#pragma omp critical
                all_ok = 0;
            }
#pragma omp barrier
        }
    }
    check(all_ok, "a reduction merged before its variable was zeroed in a single nowait");
}
#endif

int main(void)
{
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    if (n > 1)
        singles_wait_for_each_other();
    copyprivate_from_any_thread();
    /* On libomp's threads this order is timing, not a promise: the zeroing
     * in a single nowait and another thread's merge have no barrier between
     * them (a data race by the standard's letter), and with 4 threads on 2
     * CPUs libomp lost it once in a make test (2026-11-26). dsm orders them
     * (NPB CG relies on it: src/omp, docs/openmp.md), which its builds of
     * this program check; the reference build (OMP_LIBOMP_REFERENCE) leaves
     * it out. */
#ifndef OMP_LIBOMP_REFERENCE
    reduction_after_single_nowait();
#endif
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
