/*
 * omp_homes.c — an OpenMP program's data moves to the nodes that write it.
 *
 * The master allocates a vector (so node 0 is every page's home), then
 * static loops write it in parallel, each thread its own block, for
 * several rounds. Under dsmcc's OpenMP defaults (home migration on,
 * docs/openmp.md) the pages each other node writes move there: the test
 * looks for the moves in dsmrun --stats, and checks the vector's content
 * after every round, whoever its homes are.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (64 * 1024) /* 512 KiB: 64 pages of 8 KiB, 128 of 4 KiB */
#define ROUNDS 24

int main(void)
{
    double *v = malloc(N * sizeof *v);
    if (!v) {
        fprintf(stderr, "omp_homes: out of memory\n");
        return 2;
    }
    for (int i = 0; i < N; i++)
        v[i] = 0;
    long wrong = 0;
#pragma omp parallel reduction(+ : wrong)
    for (int round = 1; round <= ROUNDS; round++) {
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++)
            v[i] += i % 97;
        /* After the loop's barrier, every thread checks a part another
         * thread wrote. */
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int lo = (int)((long)N * ((t + 1) % nt) / nt), hi = (int)((long)N * ((t + 1) % nt + 1) / nt);
        for (int i = lo; i < hi; i++)
            wrong += v[i] != (double)(i % 97) * round;
#pragma omp barrier
    }
    printf("threads %d\n", omp_get_max_threads());
    printf("%s: %ld failed\n", wrong ? "FAILED" : "PASSED", wrong);
    free(v);
    return wrong != 0;
}
