/* An OpenMP program with nothing of dsm in it: each thread of a parallel
 * region records its process. On dsm a node is a process, so a team over
 * 2 nodes is 2 threads in 2 processes; built without -fopenmp it is 1 and 1. */
#include <stdio.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_THREADS 64

static pid_t pid[MAX_THREADS];

int main(void)
{
    int threads = 1;
#pragma omp parallel
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#pragma omp single
        threads = omp_get_num_threads();
#endif
        if (t < MAX_THREADS)
            pid[t] = getpid();
    }
    int processes = 0;
    for (int i = 0; i < threads && i < MAX_THREADS; i++) {
        int j = 0;
        while (j < i && pid[j] != pid[i])
            j++;
        processes += j == i;
    }
    printf("%d threads in %d processes\n", threads, processes);
    return 0;
}
