/*
 * omp_icv.c — internal control variables and schedules as OpenMP says
 * (issue 37):
 *   - asking for more threads than dsm can give (omp_set_num_threads,
 *     OMP_NUM_THREADS beyond the nodes) gives fewer, with no error, and the
 *     team's barrier works;
 *   - omp_set_schedule keeps the monotonic modifier;
 *   - ICVs set inside a (nested, serialized) region do not leak out of it;
 *   - schedule(simd:guided) and schedule(simd:runtime) run every iteration
 *     once.
 * With the argument "pthread" it starts regions from threads the program
 * created instead (dsm gives them a team of one; "pthread insist", with
 * dyn-var false, is refused with one line).
 * Prints "PASSED: 0 failed" when every check passed.
 */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N 1000

static int failed;
static int hits[N];
static int slot[64];

static void check(int ok, const char *what)
{
    if (!ok) {
#pragma omp critical
        failed++;
        printf("FAILED: %s (thread %d)\n", what, omp_get_thread_num());
    }
}

static void more_threads_than_available(void)
{
    int limit = omp_get_thread_limit();
    int ask = limit < 64 ? limit + 2 : 8;
    omp_set_num_threads(ask);
    int n = 0;
    for (int i = 0; i < 64; i++)
        slot[i] = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
#pragma omp master
        n = omp_get_num_threads();
        slot[me] = me + 1;
#pragma omp barrier
        int ok = 1;
        for (int i = 0; i < omp_get_num_threads(); i++)
            ok = ok && slot[i] == i + 1;
        check(ok, "a thread passed the barrier before every thread's write");
    }
    check(n >= 1 && n <= ask, "a team larger than asked for");
}

static void schedule_keeps_monotonic(void)
{
    omp_set_schedule((omp_sched_t)(omp_sched_dynamic | omp_sched_monotonic), 3);
    omp_sched_t kind;
    int chunk;
    omp_get_schedule(&kind, &chunk);
    check(kind == (omp_sched_t)(omp_sched_dynamic | omp_sched_monotonic) && chunk == 3,
          "omp_get_schedule lost the monotonic modifier or the chunk");
}

static void icvs_set_in_a_region_stay_there(void)
{
    omp_set_num_threads(2);
    int max_before = omp_get_max_threads();
    omp_set_schedule(omp_sched_static, 5);
    int inner_ok = 1, outer_ok = 1;
#pragma omp parallel
    {
#pragma omp parallel num_threads(2)
        {
            omp_set_schedule(omp_sched_guided, 7);
            omp_set_num_threads(1);
        }
        omp_sched_t k;
        int c;
        omp_get_schedule(&k, &c);
        if (k != omp_sched_static || c != 5) {
#pragma omp critical
            inner_ok = 0;
        }
    }
    omp_sched_t k;
    int c;
    omp_get_schedule(&k, &c);
    outer_ok = k == omp_sched_static && c == 5 && omp_get_max_threads() == max_before;
    check(inner_ok, "a schedule set in a nested region leaked into the enclosing one");
    check(outer_ok, "ICVs set in a region leaked out of it");
}

static void simd_schedules_run_every_iteration(void)
{
    for (int i = 0; i < N; i++)
        hits[i] = 0;
    omp_set_schedule(omp_sched_dynamic, 4);
#pragma omp parallel
    {
#pragma omp for simd schedule(simd : guided, 8)
        for (int i = 0; i < N; i++)
            hits[i] += 1;
#pragma omp for simd schedule(simd : runtime)
        for (int i = 0; i < N; i++)
            hits[i] += 10;
    }
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok = ok && hits[i] == 11;
    check(ok, "a simd schedule did not run every iteration once");
}

/* Regions started on a thread the program created, one after another (as
 * LLVM's omp_foreign_thread_team_reuse): each at level 1, its loop run
 * once in all. On dsm the thread's locals are on its private stack, so
 * its regions get a team of one (dyn-var true; "insist" turns it off, and
 * dsm then ends the job in one line). */
static void *region_on_a_thread(void *arg)
{
    int iterations = (int)(long)arg, n = 0, level = -1;
    if (iterations < 0) { /* insist: dyn-var false on this thread */
        iterations = -iterations;
        omp_set_dynamic(0);
    }
    long sum = 0;
#pragma omp parallel reduction(+ : sum)
    {
#pragma omp master
        {
            n = omp_get_num_threads();
            level = omp_get_level();
        }
#pragma omp for
        for (int i = 0; i < iterations; i++)
            sum += i + 1;
    }
    check(n >= 1, "a region on a created thread had no threads");
    check(level == 1, "a region on a created thread is not at level 1");
    check(sum == (long)iterations * (iterations + 1) / 2,
          "a region on a created thread did not run its loop once");
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "pthread")) {
        long sign = argc > 2 && !strcmp(argv[2], "insist") ? -1 : 1;
        for (long k = 1; k <= 5; k++) {
            pthread_t th;
            pthread_create(&th, NULL, region_on_a_thread, (void *)(sign * k * 10));
            pthread_join(th, NULL);
        }
        printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
        return failed != 0;
    }
    if (argc > 1 && !strcmp(argv[1], "insist")) {
        /* Dynamic adjustment off and more threads than the job can give
         * (on dsm, than nodes): thread 8 must exist. */
        int seen = 0;
        omp_set_dynamic(0);
#pragma omp parallel num_threads(9) reduction(+ : seen)
        seen += omp_get_thread_num() == 8;
        check(seen == 1, "a region that insisted on 9 threads ran with fewer");
        printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
        return failed != 0;
    }
    int n = 0;
#pragma omp parallel
#pragma omp master
    n = omp_get_num_threads();
    printf("threads %d\n", n);
    more_threads_than_available();
    schedule_keeps_monotonic();
    icvs_set_in_a_region_stay_there();
    simd_schedules_run_every_iteration();
    printf("%s: %d failed\n", failed ? "FAILED" : "PASSED", failed);
    return failed != 0;
}
