/*
 * omp_task_depth.c — tasks nest as deep as memory allows (src/omp/task.c):
 * a recursion of DEPTH tasks, each creating the next and waiting for it
 * with taskwait, and an untied task's parts at the bottom of it (an untied
 * task hands itself back at each scheduling point; the part that resumes
 * must be found however deep it runs). Before, the 257th nested task
 * ended the job ("OpenMP tasks nested more than 256 deep").
 * Prints "depth N" and "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static long untied_parts;

/* An untied task whose parts meet two scheduling points. */
static long bottom(void)
{
    long parts = 0;
#pragma omp task untied shared(parts)
    {
        parts++;
#pragma omp taskyield
        parts++;
#pragma omp task shared(parts)
        parts += 10;
#pragma omp taskwait
        parts++;
    }
#pragma omp taskwait
    return parts;
}

static long nest(int n)
{
    if (n == 0) {
        untied_parts = bottom();
        return 0;
    }
    long below = -1;
#pragma omp task shared(below) firstprivate(n)
    below = nest(n - 1);
#pragma omp taskwait
    return below + 1;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 10000;
    int failed = 0;
    long got = -1;
#pragma omp parallel
#pragma omp single
    got = nest(depth);
    if (got != depth) {
        printf("nested %d tasks, the innermost counted %ld\n", depth, got);
        failed++;
    }
    if (untied_parts != 13) {
        printf("the untied task at the bottom counted %ld, not 13\n", untied_parts);
        failed++;
    }
    printf("depth %d\n", depth);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
