/*
 * omp_nested.c — nested parallelism (omp_set_nested, max-active-levels
 * 2; src/omp/region_nested.c, region_fork_local): each thread of the
 * outer team starts an inner team of its own, whose threads see level 2,
 * their ancestors' numbers and team sizes, and share worksharing (a
 * dynamic loop, a single, a barrier, a reduction, critical, tasks) among
 * themselves only. Without nesting asked for, and one level deeper,
 * regions have one thread. Built with dsmcc and with clang on libomp
 * (the reference).
 * Prints "inner N" (the inner teams' size) and "PASSED: 0 failed" when
 * every check passed.
 */
#include <omp.h>
#include <stdio.h>

#define OUTER_MAX 8
#define M 100

static int failed;
static int cover[OUTER_MAX][M];      /* inner loop iterations, per outer thread */
static int singles[OUTER_MAX], sums[OUTER_MAX], tasks[OUTER_MAX], inner_size[OUTER_MAX];
static int wrong[OUTER_MAX];

static void check(int ok, const char *what)
{
    if (!ok) {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

int main(void)
{
    int counter = 0, outer_n = 0, deeper = -1, unnested = -1;
    omp_set_nested(1);
    check(omp_get_nested() == 1, "omp_set_nested(1)");
    check(omp_get_max_active_levels() >= 2, "max-active-levels after omp_set_nested(1)");
    omp_set_dynamic(0);
    if (omp_get_max_threads() > OUTER_MAX)
        omp_set_num_threads(OUTER_MAX);
#pragma omp parallel
    {
        int o = omp_get_thread_num(), on = omp_get_num_threads();
#pragma omp master
        outer_n = omp_get_num_threads();
#pragma omp critical
        counter += 10;
        int sum = 0; /* the inner team's, on its encountering thread's stack */
#pragma omp parallel num_threads(2)
        {
            int n = omp_get_num_threads();
#pragma omp master
            inner_size[o] = n;
            if (omp_get_level() != 2 || omp_get_active_level() != (omp_get_team_size(1) > 1) + (n > 1) ||
                omp_get_ancestor_thread_num(1) != o || omp_get_team_size(1) != on ||
                omp_get_team_size(2) != n || omp_get_ancestor_thread_num(2) != omp_get_thread_num())
#pragma omp atomic
                wrong[o]++;
#pragma omp critical
            counter--;
#pragma omp for schedule(dynamic, 3) reduction(+ : sum)
            for (int i = 0; i < M; i++) {
                cover[o][i]++;
                sum += i;
            }
            /* after the loop's barrier: every iteration of this team's loop is done */
#pragma omp single
            {
                singles[o]++;
                sums[o] = sum;
            }
#pragma omp single
            for (int k = 0; k < 5; k++) {
#pragma omp task
                {
#pragma omp atomic
                    tasks[o]++;
                }
            }
#pragma omp barrier
#pragma omp parallel
#pragma omp master
            if (omp_get_thread_num() == 0 && o == 0)
                deeper = omp_get_num_threads();
        }
    }
    int levels = omp_get_max_active_levels();
    omp_set_nested(0);
#pragma omp parallel
#pragma omp parallel
#pragma omp master
    if (omp_get_ancestor_thread_num(1) == 0)
        unnested = omp_get_num_threads();

    int inner = inner_size[0];
    check(outer_n >= 1 && outer_n <= OUTER_MAX, "the outer team");
    int all = 0;
    for (int o = 0; o < outer_n; o++) {
        check(inner_size[o] == inner, "every inner team has the same size");
        check(wrong[o] == 0, "level, active level, ancestor thread numbers and team sizes");
        int once = 1;
        for (int i = 0; i < M; i++)
            once &= cover[o][i] == 1;
        check(once, "each inner team ran its dynamic loop's iterations once");
        check(singles[o] == 1, "each inner team ran its single once");
        check(sums[o] == M * (M - 1) / 2, "each inner team's reduction");
        check(tasks[o] == 5, "each inner team ran its tasks");
        all += inner_size[o];
    }
    check(counter == 10 * outer_n - all, "critical across every thread of every team");
    check(levels >= 3 || deeper == 1,
          "a third level has one thread when max-active-levels is 2");
    check(unnested == 1, "without nesting, an inner region has one thread");
    printf("inner %d\n", inner);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
