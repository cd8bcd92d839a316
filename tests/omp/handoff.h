/*
 * handoff.h — what omp_detach_nodes.c and omp_proxy_nodes.c share: a team
 * of threads on several nodes in which one thread makes a task whose
 * completion another brings from its node (an event fulfilled, a proxy
 * task completed), round 0 from thread 0 to the last thread, round 1 the
 * other way. Every wait is bounded: a failure is a check that fails,
 * never a hang. Include once, in the test's one source file.
 */
#ifndef TESTS_OMP_HANDOFF_H
#define TESTS_OMP_HANDOFF_H

#include <omp.h>
#include <stdio.h>

#define BOUND_S 60.0

static int failed;

static void fail(const char *what, int round)
{
#pragma omp atomic
    failed++;
    printf("FAILED: %s (round %d)\n", what, round);
}

static int read_int(int *p)
{
    int v;
#pragma omp atomic read
    v = *p;
    return v;
}

/* Waits until *flag is set (another thread's atomic write), at most
 * BOUND_S; then false, with `what` failed. */
static int await_flag(int *flag, const char *what, int round)
{
    double start = omp_get_wtime();
    while (!read_int(flag))
        if (omp_get_wtime() - start > BOUND_S) {
            fail(what, round);
            return 0;
        }
    return 1;
}

/* Called by every thread of the team: in each round the maker runs
 * make(round) and the completer complete(round, twice); a barrier ends
 * each round. Nothing in a team of one. */
static void handoff_rounds(void (*make)(int round), void (*complete)(int round, int twice),
                           int twice)
{
    int me = omp_get_thread_num(), last = omp_get_num_threads() - 1;
    for (int round = 0; round < 2 && last > 0; round++) {
        int maker = round == 0 ? 0 : last, completer = round == 0 ? last : 0;
        if (me == maker)
            make(round);
        else if (me == completer)
            complete(round, twice);
#pragma omp barrier
    }
}

#endif
