/* omp_not_dsmcc.c — an OpenMP program linked with dsm but not built by
 * dsmcc (no master-only start): under dsmrun it must stop with a message
 * saying to use dsmcc, not run once per node. */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
#pragma omp single
        n = omp_get_num_threads();
    }
    printf("ran with %d threads\n", n);
    return 0;
}
