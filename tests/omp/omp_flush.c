/*
 * omp_flush.c — OpenMP's flush as the memory model says (issue 37): a
 * thread's writes before its flush are seen by a thread whose flush comes
 * after it, with no lock or barrier between them. Each check polls a flag
 * with flush, as the OpenMP examples and NPB LU's pipeline do; a poll
 * that does not see the flag within POLL_LIMIT_S seconds is a failure
 * (the bound keeps a broken runtime from hanging the test). Prints
 * "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define POLL_LIMIT_S 30.0
#define STAGES 40

static int failed;
static int data[64], flag;
static int isync[64];
static double v[STAGES][64];
static int locked_value;

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp critical
        failed++;
        printf("FAILED: %s (thread %d)\n", what, omp_get_thread_num());
    }
}

/* The OpenMP examples' producer/consumer (Example flush with a flag):
 * thread 0 writes the data, flushes, sets the flag and flushes; the
 * others wait for the flag, flush, and read the data. */
static void producer_consumer(void)
{
    flag = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
        if (me == 0) {
            for (int i = 0; i < n; i++)
                data[i] = 100 + i;
#pragma omp flush
            flag = 1;
#pragma omp flush(flag)
        } else {
            int seen = 0;
            double t0 = omp_get_wtime();
            while (omp_get_wtime() - t0 < POLL_LIMIT_S) {
#pragma omp flush(flag)
                if (flag) {
                    seen = 1;
                    break;
                }
            }
            check(seen, "the flag set and flushed by thread 0 was never seen after a flush");
#pragma omp flush
            check(!seen || data[me] == 100 + me, "data written before the flag's flush was old");
        }
    }
}

/* NPB LU's pipeline (sync_left/sync_right of ssor): thread i waits until
 * its left neighbour has done stage k, does its own part of stage k from
 * the neighbour's value, and tells its right neighbour. isync[i] is 1
 * while thread i's part waits to be taken. */
static int wait_while(volatile int *p, int value)
{
    double t0 = omp_get_wtime();
    while (omp_get_wtime() - t0 < POLL_LIMIT_S) {
#pragma omp flush(isync)
        if (*p != value)
            return 1;
    }
    return 0;
}

static void pipeline(void)
{
    for (int i = 0; i < 64; i++)
        isync[i] = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
        int ok = 1;
        for (int k = 0; k < STAGES && ok; k++) {
            if (me > 0) { /* sync_left */
                ok = wait_while(&isync[me - 1], 0);
                isync[me - 1] = 0;
#pragma omp flush(isync, v)
            }
            v[k][me] = (me > 0 ? v[k][me - 1] : 0.0) + k + 1;
            if (me < n - 1) { /* sync_right */
#pragma omp flush(isync, v)
                ok = ok && wait_while(&isync[me], 1);
                isync[me] = 1;
#pragma omp flush(isync)
            }
        }
        check(ok, "a pipeline neighbour's flag was never seen after a flush");
#pragma omp barrier
        for (int k = 0; k < STAGES && ok; k++)
            check(v[k][me] == (double)(me + 1) * (k + 1), "a pipeline stage read an old value");
    }
}

/* An unlock implies a flush: a value written under an OpenMP lock is
 * seen by a thread that only flushes (the writer's release, kept on its
 * node while nobody asks for the lock, runs for the flush). */
static omp_lock_t lock;

static void unlock_is_a_flush(void)
{
    locked_value = 0;
    omp_init_lock(&lock);
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        if (me == 0) {
            omp_set_lock(&lock);
            locked_value = 42;
            omp_unset_lock(&lock);
        } else {
            int seen = 0;
            double t0 = omp_get_wtime();
            while (omp_get_wtime() - t0 < POLL_LIMIT_S) {
#pragma omp flush
                if (locked_value == 42) {
                    seen = 1;
                    break;
                }
            }
            check(seen, "a value written under a lock was never seen after a flush");
        }
    }
    omp_destroy_lock(&lock);
}

int main(void)
{
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    producer_consumer();
    pipeline();
    unlock_is_a_flush();
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
