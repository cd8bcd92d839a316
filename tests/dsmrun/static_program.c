/*
 * static_program.c — an SPMD program linked fully static (cc -static with
 * libdsm.a): it runs over UDP, and a transport loaded at run time (UCX)
 * refuses it in one line (src/base/linkage.h) instead of crashing.
 */
#include <stdio.h>

#include <dsm.h>

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    long *sum = NULL;
    if (dsm_rank() == 0)
        sum = dsm_malloc(sizeof *sum);
    dsm_bcast(&sum, sizeof sum, 0);
    dsm_lock(0);
    *sum += dsm_rank() + 1;
    dsm_unlock(0);
    dsm_barrier();
    if (dsm_rank() == 0)
        printf("static: %d nodes, sum %ld\n", dsm_nodes(), *sum);
    dsm_finish();
    return 0;
}
