/*
 * omp_implied_flush.c — the flushes OpenMP implies at the entry of a
 * critical section, of omp_set_lock and at a successful omp_test_lock
 * (issue 37): thread 0 publishes data and a flag with explicit
 * flushes and no lock; the other threads poll the flag inside a critical
 * section (or holding a lock) with no flush of
 * their own, then read the data. Each wait is bounded (30 s): a flag
 * never seen is a failure, not a hang.
 * Prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define WORDS 2048 /* the data spans pages */

static int failed;
static int data[3][WORDS];
static int flag[3];
static omp_lock_t lock;

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp critical(report)
        failed++;
        printf("FAILED: %s (thread %d)\n", what, omp_get_thread_num());
    }
}

/* Thread 0: the data, a flush, the flag, a flush (the OpenMP examples'
 * producer). */
static void publish(int round)
{
    for (int i = 0; i < WORDS; i++)
        data[round][i] = round * 1000 + i;
#pragma omp flush
    flag[round] = 1;
#pragma omp flush
}

static int data_ok(int round)
{
    for (int i = 0; i < WORDS; i++)
        if (data[round][i] != round * 1000 + i)
            return 0;
    return 1;
}

enum how { IN_CRITICAL, WITH_SET_LOCK, WITH_TEST_LOCK, HOW_COUNT };
static const char *const how_name[] = {"critical", "omp_set_lock", "omp_test_lock"};

static int poll_once(enum how how, int round)
{
    int seen = 0;
    switch (how) {
    case IN_CRITICAL:
#pragma omp critical
        seen = flag[round];
        break;
    case WITH_SET_LOCK:
        omp_set_lock(&lock);
        seen = flag[round];
        omp_unset_lock(&lock);
        break;
    case WITH_TEST_LOCK:
        while (!omp_test_lock(&lock))
            ;
        seen = flag[round];
        omp_unset_lock(&lock);
        break;
    default:
        break;
    }
    return seen;
}

static void entry_sees_flushed_flag(enum how how)
{
    int round = how;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            publish(round);
        else {
            double until = omp_get_wtime() + 30;
            int seen = 0;
            while (!(seen = poll_once(how, round)) && omp_get_wtime() < until)
                ;
            char what[96];
            snprintf(what, sizeof what, "the entry of %s never saw a flag flushed elsewhere",
                     how_name[how]);
            check(seen, what);
            if (seen) {
                snprintf(what, sizeof what, "data flushed before the flag read old after %s",
                         how_name[how]);
                check(data_ok(round), what);
            }
        }
    }
}

int main(void)
{
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    omp_init_lock(&lock);
    for (enum how how = 0; how < HOW_COUNT; how++)
        entry_sees_flushed_flag(how);
    omp_destroy_lock(&lock);
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
