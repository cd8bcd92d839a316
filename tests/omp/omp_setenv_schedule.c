/*
 * omp_setenv_schedule.c — a program that sets OMP_SCHEDULE with setenv
 * before its first OpenMP call has it honoured, as on libomp, which reads
 * the environment at that call (LLVM's kmp_sch_simd_runtime_static does
 * so): every thread of the team, on every node, sees run-sched-var
 * dynamic,3, and a schedule(runtime) loop hands out chunks of 3. Before,
 * dsm read the settings before main, and the loop was static. Prints
 * "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100

int main(void)
{
    setenv("OMP_SCHEDULE", "dynamic,3", 1);
    int failed = 0;
    static int owner[N];
#pragma omp parallel reduction(+ : failed)
    {
        omp_sched_t kind;
        int chunk;
        omp_get_schedule(&kind, &chunk);
        if (kind != omp_sched_dynamic || chunk != 3) {
            printf("thread %d: schedule %d,%d, not dynamic,3\n", omp_get_thread_num(), (int)kind,
                   chunk);
            failed++;
        }
#pragma omp for schedule(runtime)
        for (int i = 0; i < N; i++)
            owner[i] = omp_get_thread_num();
    }
    /* chunks of 3: each run of one owner starting at a multiple of 3 is
     * 3 long (the last 1) */
    for (int i = 0; i < N; i++)
        if (i % 3 && owner[i] != owner[i - 1]) {
            printf("iteration %d: thread %d, iteration %d: thread %d (chunks of 3?)\n", i,
                   owner[i], i - 1, owner[i - 1]);
            failed++;
        }
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
