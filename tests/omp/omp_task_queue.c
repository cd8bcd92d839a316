/*
 * omp_task_queue.c — KMP_ENABLE_TASK_THROTTLING (src/omp/task.c): with
 * it 0, every task is queued and runs at the next scheduling point, even
 * on a node of one thread (the master creates all its tasks before the
 * first runs), and tasks with dependences still run in their order (two
 * tasks on each element, depend(inout): the second's value stays). With
 * it unset, the same program passes too (tasks run at once, in order).
 * The queueing is checked where the master's node runs one thread: the
 * master itself runs none of its tasks before it has created them all.
 * Other nodes may run them meanwhile (the master's tasks leave their
 * node), so only the master's own first run counts (under load another
 * node took some before the master had made all 200, and the test counted
 * that as a task run at once). Prints "queued N" (the tasks the master
 * created before it ran one of them; all of them if it ran none) and
 * "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define TASKS 200
#define DEPS 3000

int main(void)
{
    int failed = 0, created = 0, created_at_first = -1;
    int *deps = calloc(DEPS, sizeof *deps);
    if (!deps)
        return 2;
#pragma omp parallel
#pragma omp master
    {
        for (int i = 0; i < TASKS; i++) {
            created++;
#pragma omp task shared(created, created_at_first)
            {
#pragma omp critical
                if (omp_get_thread_num() == 0 && created_at_first < 0)
                    created_at_first = created;
            }
        }
#pragma omp taskwait
        for (int i = 0; i < DEPS; i++) {
#pragma omp task firstprivate(i) depend(inout : deps[i])
            deps[i] = 1;
#pragma omp task firstprivate(i) depend(inout : deps[i])
            deps[i] = 2;
        }
    }
    if (created_at_first < 0) /* every task ran on another thread */
        created_at_first = TASKS;
    for (int i = 0; i < DEPS; i++)
        if (deps[i] != 2)
            failed++;
    if (failed)
        printf("%d elements kept the first task's value: dependences out of order\n", failed);
    /* With one thread on the master's node (dsm, one thread per node) no
     * other thread can start a queued task early; libomp's others do. */
#ifndef OMP_LIBOMP_REFERENCE
    const char *env = getenv("KMP_ENABLE_TASK_THROTTLING");
    const char *threads = getenv("DSM_THREADS"); /* dsmrun --threads: the node's others may */
    if (env && env[0] == '0' && (!threads || atoi(threads) <= 1) && created_at_first != TASKS) {
        printf("a task ran after %d of %d tasks were created, with throttling off\n",
               created_at_first, TASKS);
        failed++;
    }
#endif
    printf("queued %d\n", created_at_first);
    printf("PASSED: %d failed\n", failed);
    free(deps);
    return failed != 0;
}
