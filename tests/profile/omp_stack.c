/*
 * omp_stack.c — many small OpenMP regions over the master's stack, for
 * the profile's tests (tests/profile/check_omp_stack.py).
 *
 *   omp_stack [steps]
 *
 * Each step runs two `parallel for` loops. The first adds to an array on
 * the heap (the program's own data). The second has each thread add to its
 * own element of `partial`, an array of main's locals: the threads of two
 * nodes write neighbouring doubles of one page of the master's stack, false
 * sharing the profile must name by the variable, not by where the stack was
 * allocated. The outlined functions are the program's code at the
 * pragmas' lines. Exits 0 when the sums are right.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define MAX_THREADS 64

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    double *field = malloc(N * sizeof *field);
    double partial[MAX_THREADS] = {0};                          /* STACK VARIABLE */
    if (!field)
        return 1;
    for (int i = 0; i < N; i++)
        field[i] = 0;
    int nthreads = 1;
    for (int s = 0; s < steps; s++) {
#pragma omp parallel for schedule(static)                       /* FIELD LOOP */
        for (int i = 0; i < N; i++)
            field[i] += 1.0;
#pragma omp parallel                                            /* PARTIAL REGION */
        {
            int t = omp_get_thread_num();
            if (t < MAX_THREADS)
                partial[t] += 1.0;                              /* PARTIAL WRITE */
            if (t == 0)
                nthreads = omp_get_num_threads();
        }
    }
    long bad = 0;
    for (int i = 0; i < N; i++)
        bad += field[i] != (double)steps;
    for (int t = 0; t < nthreads && t < MAX_THREADS; t++)
        bad += partial[t] != (double)steps;
    printf("threads %d, %ld wrong\n", nthreads, bad);
    free(field);
    return bad != 0;
}
