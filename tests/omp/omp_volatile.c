/*
 * omp_volatile.c — OpenMP's volatile (issue 38): a volatile read behaves
 * as if a flush of the object preceded it, a volatile write as if one
 * followed it, so a flag set through a volatile store on one node is seen
 * by a thread polling it with volatile loads on another, with no flush,
 * lock or barrier written between them (LLVM's omp_for_nowait test polls
 * so). A poll that does not see the flag within POLL_LIMIT_S seconds is a
 * failure (the bound keeps a broken runtime from hanging the test).
 * Prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define POLL_LIMIT_S 30.0
#define STAGES 20

static volatile int flag;
static volatile int stage[64];
static int failed;

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp master
        n = nt;
        /* Thread 0 raises the flag; every other thread polls it. */
        if (me == 0)
            flag = 1;
        else {
            double t0 = omp_get_wtime();
            while (flag == 0 && omp_get_wtime() - t0 < POLL_LIMIT_S)
                ;
            if (flag == 0) {
#pragma omp atomic
                failed++;
                printf("FAILED: thread %d never saw the volatile flag\n", me);
            }
        }
        /* A token passed round the threads STAGES times, each waiting for
         * its predecessor's volatile store. */
        for (int s = 1; s <= STAGES && nt > 1; s++) {
            int prev = (me + nt - 1) % nt;
            if (me != 0 || s > 1) {
                int want = me == 0 ? s - 1 : s;
                double t0 = omp_get_wtime();
                while (stage[prev] < want && omp_get_wtime() - t0 < POLL_LIMIT_S)
                    ;
                if (stage[prev] < want) {
#pragma omp atomic
                    failed++;
                    printf("FAILED: thread %d stage %d never came\n", me, s);
                    break;
                }
            }
            stage[me] = s;
        }
    }
    printf("threads %d\n", n);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
