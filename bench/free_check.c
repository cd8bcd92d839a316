/*
 * free_check — what DSM_CHECK=1's use-after-free check costs dsm_free
 * (src/mem/alloc.c, the quarantine): each node allocates and frees SIZE-byte
 * blocks COUNT times, in batches of 64 (so freed blocks are reused), and
 * prints the mean time a malloc+free pair took. Compare
 *   DSM_CHECK=0 dsmrun -n 2 free_check   and   DSM_CHECK=1 dsmrun -n 2 free_check
 * alternately, in one run (bench/README.md).
 *
 *   free_check [SIZE [COUNT]]   default 64 bytes, 200000 pairs
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dsm.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    long count = argc > 2 ? strtol(argv[2], NULL, 10) : 200000;
    void *batch[64];
    struct timespec t0, t1;
    dsm_barrier();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long done = 0; done < count; done += 64) {
        for (int i = 0; i < 64; i++)
            batch[i] = dsm_malloc(size);
        for (int i = 0; i < 64; i++)
            dsm_free(batch[i]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                (double)((count + 63) / 64 * 64);
    printf("node %d: %zu-byte dsm_malloc + dsm_free: %.0f ns a pair\n", dsm_rank(), size, ns);
    dsm_barrier();
    dsm_finish();
    return 0;
}
