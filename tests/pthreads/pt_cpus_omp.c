/*
 * pt_cpus_omp — an OpenMP program's omp_get_num_procs agrees with
 * sysconf(_SC_NPROCESSORS_ONLN) and get_nprocs (issue 55, point 2).
 *
 *   pt_cpus_omp          prints "omp_get_num_procs N" and "ok"
 */
#include <omp.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

int main(void)
{
    int procs = omp_get_num_procs(), np = get_nprocs();
    long onln = sysconf(_SC_NPROCESSORS_ONLN);
    int ok = procs == onln && np == onln;
    printf("omp_get_num_procs %d, sysconf %ld, get_nprocs %d\npt_cpus_omp: %s\n", procs, onln, np,
           ok ? "ok" : "FAILED");
    return !ok;
}
