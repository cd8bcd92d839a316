/*
 * omp_task_reduction.c — task reductions (src/omp/task_reduction.c):
 * `taskgroup task_reduction` with tasks `in_reduction` (several items and
 * operators, an array section, tasks nested in participating tasks,
 * nested taskgroups), `taskloop reduction`, `taskloop in_reduction`, and
 * the `task` modifier of a parallel's and a loop's reduction, on every
 * thread of the team at once. Before, the program failed to link
 * (`__kmpc_taskred_init`). Prints "threads N" and "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>

#define TASKS 200
#define SLOTS 4

static int failed;

static void expect(const char *what, long got, long want)
{
    if (got != want) {
        printf("%s: %ld, want %ld\n", what, got, want);
#pragma omp atomic
        failed++;
    }
}

int main(void)
{
    long sum = 0, product_check = 0, loop = 0, loop_in = 0, outer = 0, inner = 0;
    double prod = 1.0;
    int top = -1;
    long hist[SLOTS] = {0};
    int threads = 0;
#pragma omp parallel
#pragma omp single
    {
        threads = omp_get_num_threads();
#pragma omp taskgroup task_reduction(+ : sum, hist[0:SLOTS]) task_reduction(* : prod) \
    task_reduction(max : top)
        {
            for (int i = 0; i < TASKS; i++) {
#pragma omp task in_reduction(+ : sum, hist[0:SLOTS]) in_reduction(* : prod) \
    in_reduction(max : top) firstprivate(i)
                {
                    sum += i;
                    hist[i % SLOTS] += 1;
                    if (i % 50 == 0)
                        prod *= 2.0;
                    if (i > top)
                        top = i;
                }
            }
            /* A task that contributes, and a task of its own that does
             * too (its in_reduction names the outer task's copy). */
            for (int i = 0; i < 10; i++) {
#pragma omp task in_reduction(+ : sum) firstprivate(i)
                {
                    sum += i;
#pragma omp task in_reduction(+ : sum) firstprivate(i)
                    sum += 2 * i;
                }
            }
        }
        product_check = (long)prod;

#pragma omp taskloop reduction(+ : loop) grainsize(7)
        for (int i = 0; i < 1000; i++)
            loop += i;

#pragma omp taskgroup task_reduction(+ : loop_in)
        {
#pragma omp taskloop in_reduction(+ : loop_in) num_tasks(9)
            for (int i = 0; i < 500; i++)
                loop_in += 3;
#pragma omp task in_reduction(+ : loop_in)
            loop_in += 1;
        }

#pragma omp taskgroup task_reduction(+ : outer)
        {
            for (int i = 0; i < 20; i++) {
#pragma omp task in_reduction(+ : outer)
                outer += 1;
            }
#pragma omp taskgroup task_reduction(+ : inner)
            for (int i = 0; i < 30; i++) {
#pragma omp task in_reduction(+ : outer, inner)
                {
                    outer += 10;
                    inner += 1;
                }
            }
            expect("inner taskgroup's reduction at its end", inner, 30);
        }
    }
    expect("taskgroup + reduction", sum, TASKS * (TASKS - 1) / 2 + 3 * 45);
    for (int s = 0; s < SLOTS; s++)
        expect("array section reduction", hist[s], TASKS / SLOTS);
    expect("taskgroup * reduction", product_check, 16);
    expect("taskgroup max reduction", top, TASKS - 1);
    expect("taskloop reduction", loop, 1000 * 999 / 2);
    expect("taskloop in_reduction", loop_in, 1501);
    expect("outer taskgroup's reduction", outer, 20 + 300);

    /* Every thread of the team makes tasks that reduce at once. */
    long per_thread = 0, in_loop = 0;
#pragma omp parallel reduction(task, + : per_thread)
    {
        for (int i = 0; i < 25; i++) {
#pragma omp task in_reduction(+ : per_thread) firstprivate(i)
            per_thread += i + 1;
        }
#pragma omp for reduction(task, + : in_loop)
        for (int i = 0; i < 100; i++) {
#pragma omp task in_reduction(+ : in_loop) firstprivate(i)
            in_loop += i;
        }
    }
    expect("parallel reduction(task, +)", per_thread, (long)threads * 25 * 26 / 2);
    expect("for reduction(task, +)", in_loop, 100 * 99 / 2);

    /* Each thread's own taskgroup reduction, on every node at once. */
    long mine[64] = {0};
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        if (me < 64) {
#pragma omp taskgroup task_reduction(+ : mine[me])
            for (int i = 0; i < 40; i++) {
#pragma omp task in_reduction(+ : mine[me]) firstprivate(i)
                mine[me] += me + i;
            }
        }
    }
    for (int t = 0; t < threads && t < 64; t++)
        expect("a thread's taskgroup reduction", mine[t], 40L * t + 40 * 39 / 2);

    printf("threads %d\n", threads);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
