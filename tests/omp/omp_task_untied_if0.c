/*
 * omp_task_untied_if0.c — untied tasks undeferred by an if clause
 * (src/omp/task.c, __kmpc_omp_task_begin_if0).
 *
 * BOTS fib's if-clause cut-off: `#pragma omp task untied shared(x)
 * firstprivate(n) if(depth < cutoff)`. For the undeferred ones clang's
 * inline code runs none of the body itself: part 0 hands the task on
 * (__kmpc_omp_task) for part 1, the body, and then completes it. dsm ran
 * such a task and freed it in the hand-on, and freed it again at the
 * completion ("free(): invalid pointer"). Fibonacci with the cut-off at
 * 0 (every task undeferred), 3 and 100 (none), checked against the
 * closed answer. Prints "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>

static int cutoff;

static long fib(int n, int depth)
{
    long x, y;
    if (n < 2)
        return n;
#pragma omp task untied shared(x) firstprivate(n) if(depth < cutoff)
    x = fib(n - 1, depth + 1);
#pragma omp task untied shared(y) firstprivate(n) if(depth < cutoff)
    y = fib(n - 2, depth + 1);
#pragma omp taskwait
    return x + y;
}

int main(void)
{
    static const int cutoffs[] = {0, 3, 100};
    int failed = 0;
    for (int c = 0; c < 3; c++) {
        long got = 0;
        cutoff = cutoffs[c];
#pragma omp parallel
#pragma omp single
        got = fib(20, 0);
        if (got != 6765) {
            printf("FAILED: fib(20) with the cut-off at %d is %ld, not 6765\n", cutoff, got);
            failed++;
        }
    }
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
