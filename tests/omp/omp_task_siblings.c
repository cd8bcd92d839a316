/*
 * omp_task_siblings.c — tasks whose progress needs another task or thread
 * running at the same time, as LLVM's OpenMP tests and programs that poll
 * a flag are written. OpenMP does not promise that concurrency (a task may
 * be undeferred), but libomp gives it and programs count on it; dsm gives
 * it by letting another node take the task. Every wait here is bounded,
 * so a runtime that does not give it fails a check instead of hanging.
 *
 *   1. The master, in `master`, makes a task that signals, then waits for
 *      the signal: another thread of the team must run the task (with
 *      two threads or more); the same in a team of two threads, which
 *      spans two nodes of a larger job.
 *   2. A task is made; its creator yields (`taskyield`) until it has run:
 *      a yield lets a waiting task run (run with throttling off, the task
 *      is queued, and only the yield can run it on a node of one thread).
 *   3. A task polls a plain variable, with no flush, until its creator
 *      clears it (a data race, which OpenMP gives no meaning and libomp
 *      runs: dsm refreshes a stolen task's copies, sync/refresh.c).
 *   4. Under OMP_CANCELLATION=true, a taskgroup of three tasks that each
 *      wait until the taskgroup is cancelled, and an undeferred task that
 *      cancels it once one has started: every task that started sees the
 *      cancellation at its cancellation point, the rest are discarded.
 */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define BOUND_S 60.0 /* a wait past this is a failure, not a hang */
#define GROUP   3

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

static int read_int(int *p)
{
    int v;
#pragma omp atomic read
    v = *p;
    return v;
}

static void add_int(int *p)
{
#pragma omp atomic
    (*p)++;
}

/* Until *p >= v, or the bound: whether it came. */
static int wait_for(int *p, int v)
{
    double start = omp_get_wtime();
    while (read_int(p) < v)
        if (omp_get_wtime() - start > BOUND_S)
            return 0;
        else
            usleep(10);
    return 1;
}

static int signalled, ran_on = -1;
static int done_yield;
static int started, ended, issued, cancel_returned;

int main(void)
{
    int threads = 0;
#pragma omp parallel
    {
#pragma omp master
        {
            threads = omp_get_num_threads();
            if (threads > 1) { /* a team of one has no other thread */
#pragma omp task shared(signalled, ran_on)
                {
                    ran_on = omp_get_thread_num();
                    add_int(&signalled);
                }
                check(wait_for(&signalled, 1), "a task the master waits for ran on another thread");
            }
        }
#pragma omp barrier
#pragma omp master
        {
#pragma omp task shared(done_yield)
            add_int(&done_yield);
            double start = omp_get_wtime();
            while (!read_int(&done_yield) && omp_get_wtime() - start < BOUND_S) {
#pragma omp taskyield
            }
            check(read_int(&done_yield) == 1, "a task ran while its creator yielded");
        }
    }
    /* The same in a team of two threads, on nodes 0 and 1 of a larger job. */
    static int signalled2, ran_on2 = -1;
#pragma omp parallel num_threads(2)
#pragma omp master
    if (omp_get_num_threads() > 1) {
#pragma omp task shared(signalled2, ran_on2)
        {
            ran_on2 = omp_get_thread_num();
            add_int(&signalled2);
        }
        check(wait_for(&signalled2, 1), "a task the master of a team of two waits for ran");
    }
    check(threads == 1 || ran_on2 == 1, "the task of a team of two ran on its other thread");
    printf("threads %d master's task ran on thread %d\n", threads, ran_on);
    check(threads == 1 || ran_on > 0, "the master's task ran on a thread other than the master");

    /* A task polls a plain variable (no flush, no atomic: a data race
     * OpenMP gives no meaning, which libomp runs) until its creator
     * clears it, after the task has started. */
    static int plain_flag = 1, polling, saw_clear;
    if (threads > 1) {
#pragma omp parallel
#pragma omp master
        {
#pragma omp task shared(plain_flag, polling, saw_clear)
            {
                add_int(&polling);
                double start = omp_get_wtime();
                while (*(int *)&plain_flag && omp_get_wtime() - start < BOUND_S)
                    __asm__ volatile("" ::: "memory"); /* a load each time, no more */
                if (!*(int *)&plain_flag)
                    add_int(&saw_clear);
            }
            if (wait_for(&polling, 1))
                plain_flag = 0;
        }
        check(read_int(&saw_clear) == 1, "a task polling a plain variable saw its creator clear it");
    }

    if (omp_get_cancellation()) {
#pragma omp parallel
#pragma omp master
#pragma omp taskgroup
        {
            for (int i = 0; i < GROUP; i++) {
#pragma omp task shared(started, ended, issued)
                {
                    add_int(&started);
                    check(wait_for(&issued, 1), "the taskgroup's cancel came");
#pragma omp cancellation point taskgroup
                    add_int(&ended); /* only where the cancellation was not seen */
                }
            }
#pragma omp task if(0) shared(started, issued, cancel_returned)
            {
                check(wait_for(&started, 1), "a task of the taskgroup started elsewhere");
#pragma omp cancel taskgroup
                cancel_returned = 1; /* not reached: cancel leaves the task */
            }
            add_int(&issued);
        }
        printf("cancellation: %d of %d started, %d ended\n", started, GROUP, ended);
        check(started >= 1 && started <= GROUP, "a task of the taskgroup started");
        check(ended == 0, "every task that started saw the cancellation");
        check(cancel_returned == 0, "cancel taskgroup left the cancelling task");
    }
    printf("PASSED: %d failed\n", failures);
    return failures != 0;
}
