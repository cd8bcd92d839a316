/*
 * omp_profiled_threads.c — seed 003's profiled schedule with several
 * threads on a node (issue 40; src/parallel/loopsite.c): it measures every
 * thread and divides a loop over all of them, by node and then by thread.
 *
 * One region runs EXECUTIONS executions of three loops, nowait: a static
 * one (one block each: DSM_OMP_STATIC=profiled re-partitions it), a static
 * one with a chunk (chunks by speed when DSM_OMP_STATIC names a chunk) and
 * a schedule(runtime) one (OMP_SCHEDULE=profiled...). After every
 * execution the master checks that every iteration of each loop ran
 * exactly once: each thread stamps the iterations it ran with the
 * execution and its number, and the threads' counts add up to the trip;
 * and that the static block loop's blocks lie in thread order (node-major:
 * by node, then by thread).
 *
 *   omp_profiled_threads             those checks only (any runtime)
 *   omp_profiled_threads uneven      the odd threads' iterations cost 3
 *       times the even ones' (on every node): the division of each loop
 *       must change at least once in the run (the first decision sees a
 *       3x difference of speed between threads of one node)
 *   omp_profiled_threads heavy R T   node R's threads (T a node) do 8
 *       times the work an iteration: in the last execution of at least
 *       one of the three loops they must run under 40 % (by speed they
 *       should run 1/(1 + 8 (nodes - 1)), 11 % on 2 nodes; 50 % is their
 *       static share). Each loop's share is printed; not every loop's is
 *       asserted: on a loaded machine a thread's time over a few
 *       executions is whatever the scheduler gave it, and one measurement
 *       after a re-partition that looks slower than before makes the site
 *       go back to the static division and stop (loopsite.c) — at load
 *       13-19, 2 loops of 36 ended at 50 %, and once in 5 runs of the
 *       family two loops of one run did, over the 40 % of the three
 *       together that this test asked before. A schedule that never
 *       divides by speed fails every run.
 *   omp_profiled_threads slow R T    prints node R's share of each loop's
 *       last execution (run under dsmrun --slow R=F: a node stopped and
 *       continued, which the checks above must survive)
 *   WORK (an argument after the mode's): the cost of an iteration, in
 *       additions (default 2000)
 *
 * Why not assert that a --slow node's threads run less: --slow's duty
 * cycle is only as precise as dsmrun's wakeups, and on a loaded shared
 * machine (load 12-16 on 2 cores, dsmrun niced) node 1 at --slow 1=0.3
 * was measured no slower than node 0 in 7 runs of 8, with one thread per
 * node as with two; extra work on the node's threads slows them the same
 * way in every run.
 *
 * Prints "threads N" and "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXECUTIONS 30
#define TRIP       960
#define LOOPS      3
#define MAX_TEAM   64

static const char *const loop_names[LOOPS] = {"static", "static chunked", "runtime"};

static int stamp[LOOPS][TRIP];                 /* execution * MAX_TEAM + thread */
static long counts[LOOPS][EXECUTIONS][MAX_TEAM]; /* iterations each thread ran */
static int failed, changed[LOOPS];
static long work = 2000;
static double result[MAX_TEAM]; /* what the work computed, that it is not left out */
static int uneven, heavy, node = -1, per_node = 1; /* the mode, and its node R of T threads */

/* Which iterations of the loop in progress this thread ran: its own
 * memory (thread-local storage is the process's, not shared), so that
 * the timed loop touches no shared page and a thread's time is its own
 * speed, not waits for pages of a node that --slow has stopped. */
static _Thread_local unsigned char ran[TRIP];

/* No volatile here: under dsmcc a volatile access is a flush (issue 38). */
static double iteration(int i, int me)
{
    double x = i; /* not the same in every iteration: no hoisting it out of the loop */
    long w = uneven && me % 2 ? 3 * work : heavy && me / per_node == node ? 8 * work : work;
    for (long k = 0; k < w; k++)
        x += (double)k * 0.5;
    ran[i] = 1;
    return x;
}

/* After the loop (untimed): stamps what this thread ran, and how much. */
static void record(int loop, int e, int me)
{
    long mine = 0;
    for (int i = 0; i < TRIP; i++)
        if (ran[i]) {
            stamp[loop][i] = e * MAX_TEAM + me;
            ran[i] = 0;
            mine++;
        }
    counts[loop][e][me] = mine;
}

/* The master, after execution e: each iteration once, blocks in order. */
static void check(int e, int nt)
{
    for (int l = 0; l < LOOPS; l++) {
        long sum = 0;
        for (int t = 0; t < nt; t++)
            sum += counts[l][e][t];
        int missing = 0, disorder = 0;
        for (int i = 0; i < TRIP; i++) {
            if (stamp[l][i] / MAX_TEAM != e)
                missing++;
            else if (l == 0 && i > 0 && stamp[l][i] % MAX_TEAM < stamp[l][i - 1] % MAX_TEAM)
                disorder++;
        }
        if (sum != TRIP || missing || disorder) {
            failed++;
            printf("FAILED: execution %d of the %s loop: %ld iterations run of %d, %d not run, "
                   "%d out of thread order\n", e, loop_names[l], sum, TRIP, missing, disorder);
        }
        if (e > 0 && memcmp(counts[l][e], counts[l][0], sizeof counts[l][0]))
            changed[l] = 1;
        if (getenv("VERBOSE")) {
            printf("execution %d, %s loop:", e, loop_names[l]);
            for (int t = 0; t < nt; t++)
                printf(" %ld", counts[l][e][t]);
            printf("\n");
        }
    }
}

int main(int argc, char **argv)
{
    int arg = 1;
    if (argc > 1 && !strcmp(argv[1], "uneven"))
        uneven = 1, arg = 2;
    else if (argc > 3 && (!strcmp(argv[1], "heavy") || !strcmp(argv[1], "slow"))) {
        heavy = !strcmp(argv[1], "heavy");
        node = atoi(argv[2]), per_node = atoi(argv[3]), arg = 4;
        if (per_node < 1)
            per_node = 1;
    }
    if (argc > arg)
        work = atol(argv[arg]);
    int n = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp master
        {
            n = nt;
            if (nt > MAX_TEAM) {
                printf("FAILED: a team of %d threads; this test counts at most %d\n", nt, MAX_TEAM);
                failed++;
            }
        }
#pragma omp barrier
        double x = 0;
        for (int e = 0; e < EXECUTIONS && nt <= MAX_TEAM; e++) {
#pragma omp for nowait
            for (int i = 0; i < TRIP; i++)
                x += iteration(i, me);
            record(0, e, me);
#pragma omp for schedule(static, 4) nowait
            for (int i = 0; i < TRIP; i++)
                x += iteration(i, me);
            record(1, e, me);
#pragma omp for schedule(runtime) nowait
            for (int i = 0; i < TRIP; i++)
                x += iteration(i, me);
            record(2, e, me);
#pragma omp barrier
#pragma omp master
            check(e, nt);
#pragma omp barrier
        }
        if (me < MAX_TEAM)
            result[me] = x;
    }
    double sum = 0;
    for (int t = 0; t < n && t < MAX_TEAM; t++)
        sum += result[t];
    printf("threads %d\n", n);
    printf("work done: %g\n", sum); /* read, so that it is done */
    long least = TRIP; /* node R's iterations in the last execution of its best loop */
    for (int l = 0; l < LOOPS && n <= MAX_TEAM; l++) {
        printf("%s loop, the last execution's division:", loop_names[l]);
        for (int t = 0; t < n; t++)
            printf(" %ld", counts[l][EXECUTIONS - 1][t]);
        printf("\n");
        if (uneven && !changed[l]) {
            failed++;
            printf("FAILED: the %s loop's division never changed, its odd threads 3 times "
                   "slower\n", loop_names[l]);
        }
        if (node >= 0) {
            long share = 0;
            for (int t = node * per_node; t < (node + 1) * per_node && t < n; t++)
                share += counts[l][EXECUTIONS - 1][t];
            printf("%s loop: node %d's threads ran %.1f %% of the last execution\n",
                   loop_names[l], node, 100.0 * (double)share / TRIP);
            if (share < least)
                least = share;
        }
    }
    if (heavy && least * 10 >= TRIP * 4) {
        failed++;
        printf("FAILED: node %d's threads, 8 times slower, ran at least %ld of the %d iterations "
               "of every loop's last execution (at least 40 %%)\n", node, least, TRIP);
    }
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
