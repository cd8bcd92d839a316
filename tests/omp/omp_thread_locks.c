/*
 * omp_thread_locks.c — OpenMP locks taken by several threads of a node at
 * once (issue 40): every thread sets and unsets a lock of its own while
 * the others do the same with theirs (on dsm, each claim is a message to
 * node 0 from a thread, not from a node), and all threads add to one
 * counter under a shared lock and a shared nest lock.
 * Prints "threads N" and "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 200
#define MAX_THREADS 64

static omp_lock_t own[MAX_THREADS];
static omp_lock_t shared_lock;
static omp_nest_lock_t nest;
static long counter, nested_counter;
static long own_count[MAX_THREADS];

int main(void)
{
    int failed = 0, threads = 0;
    omp_init_lock(&shared_lock);
    omp_init_nest_lock(&nest);
    for (int i = 0; i < MAX_THREADS; i++)
        omp_init_lock(&own[i]);
#pragma omp parallel
    {
        int me = omp_get_thread_num();
#pragma omp master
        threads = omp_get_num_threads();
        if (me < MAX_THREADS) {
            for (int r = 0; r < ROUNDS; r++) {
                omp_set_lock(&own[me]);
                own_count[me]++;
                omp_unset_lock(&own[me]);
                if (r % 10 == 0) {
                    omp_set_lock(&shared_lock);
                    counter++;
                    omp_unset_lock(&shared_lock);
                    omp_set_nest_lock(&nest);
                    omp_set_nest_lock(&nest);
                    nested_counter++;
                    omp_unset_nest_lock(&nest);
                    omp_unset_nest_lock(&nest);
                }
            }
        }
    }
    int counted = threads < MAX_THREADS ? threads : MAX_THREADS;
    for (int i = 0; i < counted; i++)
        if (own_count[i] != ROUNDS) {
            printf("FAILED: thread %d counted %ld under its own lock, not %d\n", i, own_count[i],
                   ROUNDS);
            failed++;
        }
    if (counter != (long)counted * (ROUNDS / 10) || nested_counter != counter) {
        printf("FAILED: %ld and %ld under the shared locks, not %ld\n", counter, nested_counter,
               (long)counted * (ROUNDS / 10));
        failed++;
    }
    printf("threads %d\n", threads);
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
