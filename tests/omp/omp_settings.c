/*
 * omp_settings.c — libomp's kmp_set_defaults("NAME=value|NAME=value")
 * while the program runs (src/omp/settings.c): nthreads-var for the next
 * region, dyn-var, max-task-priority (seen by every thread of the next
 * region, on every node), target-offload-var (__kmpc_get_target_offload:
 * DISABLED, DEFAULT, MANDATORY in any case, anything else DEFAULT, as
 * libomp), several settings in one string, and items without a value or
 * with a name no runtime reads left alone. Also two ICVs' effects:
 * max-active-levels 0 makes a region's team one thread, and a final
 * task and its descendants are in final (omp_in_final). Built with dsmcc and with
 * clang on libomp (the reference). Prints "PASSED: 0 failed" when every
 * check passed.
 */
#include <omp.h>
#include <stdio.h>

int __kmpc_get_target_offload(void);

static int failed;

static void check(int ok, const char *what)
{
    if (!ok) {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

int main(void)
{
    int team = 0, wrong_priority = 0;
    kmp_set_defaults("OMP_NUM_THREADS=3");
    check(omp_get_max_threads() == 3, "OMP_NUM_THREADS=3 sets nthreads-var");
#pragma omp parallel
#pragma omp master
    team = omp_get_num_threads();
    check(team == 3, "the next region has 3 threads");

    kmp_set_defaults("OMP_MAX_TASK_PRIORITY=7");
    check(omp_get_max_task_priority() == 7, "OMP_MAX_TASK_PRIORITY=7");
#pragma omp parallel reduction(+ : wrong_priority)
    wrong_priority += omp_get_max_task_priority() != 7;
    check(wrong_priority == 0, "every thread of the next region sees max-task-priority 7");

    kmp_set_defaults("OMP_DYNAMIC=true");
    check(omp_get_dynamic() == 1, "OMP_DYNAMIC=true");

    kmp_set_defaults("OMP_TARGET_OFFLOAD=disabled|OMP_MAX_TASK_PRIORITY=3");
    check(__kmpc_get_target_offload() == 0, "OMP_TARGET_OFFLOAD=disabled");
    check(omp_get_max_task_priority() == 3, "a second setting after '|'");
    kmp_set_defaults("OMP_TARGET_OFFLOAD");
    check(__kmpc_get_target_offload() == 0, "a name without a value changes nothing");
    kmp_set_defaults("OMP_TARGET_OFFLOAD=MANDATORY|KMP_NO_SUCH_SETTING=1");
    check(__kmpc_get_target_offload() == 2, "OMP_TARGET_OFFLOAD=MANDATORY, an unknown name beside it");
    kmp_set_defaults("OMP_TARGET_OFFLOAD=sometimes");
    check(__kmpc_get_target_offload() == 1, "an unknown OMP_TARGET_OFFLOAD value is DEFAULT");
    kmp_set_defaults("OMP_TARGET_OFFLOAD=Default");
    check(__kmpc_get_target_offload() == 1, "OMP_TARGET_OFFLOAD=Default");

    omp_set_max_active_levels(0);
    check(omp_get_max_active_levels() == 0, "omp_set_max_active_levels(0)");
#pragma omp parallel num_threads(2)
#pragma omp master
    team = omp_get_num_threads();
    check(team == 1, "with max-active-levels 0 a region has one thread");
    omp_set_max_active_levels(1);
    omp_set_dynamic(0); /* dyn-var true (above) would let libomp give fewer */
#pragma omp parallel num_threads(2)
#pragma omp master
    team = omp_get_num_threads();
    check(team == 2, "with max-active-levels 1 again, two threads");

    int outer = -1, inner = -1, plain = -1;
#pragma omp task final(1) shared(outer, inner)
    {
        outer = omp_in_final();
#pragma omp task shared(inner)
        inner = omp_in_final();
#pragma omp taskwait
    }
#pragma omp task shared(plain)
    plain = omp_in_final();
#pragma omp taskwait
    check(outer == 1 && inner == 1, "a final task and its child are in final");
    check(plain == 0 && omp_in_final() == 0, "other tasks are not in final");

    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
