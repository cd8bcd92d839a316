/*
 * omp_task_lists.c — a node's threads each queue their tasks on a list of
 * their own (src/omp/task_lists.h): a thread takes its own newest task,
 * another thread its oldest, and a thread with TASK_LIST_MAX (256) tasks
 * queued runs its next one at once, as libomp's deques and throttling do.
 * Run on one node of two threads (and on libomp, which does the same).
 *
 * Order: one thread makes tasks 0..3 and waits for them; each task waits
 * until both threads have started one. The maker starts its newest (3);
 * the other thread, waiting at the single's barrier, its oldest (0),
 * whenever it comes.
 *
 * Throttling: thread 1 busy, with no scheduling point, until thread 0 has
 * made 1,000 tasks: with throttling (the default) at most 256 wait queued,
 * so at least 744 ran as they were made; with KMP_ENABLE_TASK_THROTTLING=0
 * none ran before thread 0 reached a scheduling point.
 * Prints the first tasks and the count, then "PASSED: 0 failed".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omp_bounded_wait.h"

#define MADE     1000
#define LIST_MAX 256

static int failed;
static int started, first[2] = {-1, -1};
static int ran, all_made;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failed++;
    }
}

static void order(void)
{
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        for (int i = 0; i < 4; i++) {
#pragma omp task firstprivate(i)
            {
                int me = omp_get_thread_num();
#pragma omp critical
                if (first[me] < 0)
                    first[me] = i;
                add_int(&started, 1);
                wait_for(&started, 2);
            }
        }
#pragma omp taskwait
    }
    printf("first tasks: thread 0 ran %d, thread 1 ran %d\n", first[0], first[1]);
    int maker = first[0] == 3 ? 0 : 1;
    check(first[maker] == 3, "the making thread started its newest task first");
    check(first[1 - maker] == 0, "the other thread started the oldest task first");
    check(!gave_up, "a wait for both threads to start a task ran out");
}

static void throttling(void)
{
    const char *e = getenv("KMP_ENABLE_TASK_THROTTLING");
    int on = !e || strcmp(e, "0") != 0;
    int when_made = -1;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            for (int i = 0; i < MADE; i++) {
#pragma omp task
                add_int(&ran, 1);
            }
            when_made = read_int(&ran);
            add_int(&all_made, 1);
        } else
            check(wait_for(&all_made, 1), "thread 1's wait for thread 0's tasks ran out");
    }
    printf("throttling %s: %d of %d tasks ran as they were made\n", on ? "on" : "off", when_made, MADE);
    check(read_int(&ran) == MADE, "every task ran");
    if (on)
        check(when_made >= MADE - LIST_MAX, "a thread queues at most 256 tasks");
    else
        check(when_made == 0, "without throttling every task waits queued");
}

int main(void)
{
    order();
    throttling();
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
