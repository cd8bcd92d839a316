/*
 * pt_stats — node 0 computes while its other threads wait: main fills a
 * shared array, then W threads start. The first of them on node 0
 * computes longest; every other thread computes a little and waits at a
 * barrier for it, and main waits in pthread_join. With one slot a node,
 * node 0's waits summed over its threads pass its time, and --stats must
 * still show what it computed (issue 89, point 6).
 *
 *   pt_stats W ROUNDS
 */
#define _GNU_SOURCE
#include <dsm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 65536

static double *data;
static int nthreads, rounds, long_taken;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t done;

static double work(long first, long count, int times)
{
    double sum = 0;
    for (int r = 0; r < times; r++)
        for (long i = first; i < first + count; i++) {
            data[i] = data[i] * 0.5 + (double)(i % 7) + r;
            sum += data[i];
        }
    return sum;
}

static void *thread(void *arg)
{
    long me = (long)arg;
    pthread_mutex_lock(&lock);
    int longest = dsm_rank() == 0 && !long_taken;
    long_taken |= longest;
    pthread_mutex_unlock(&lock);
    long share = N / nthreads;
    double s = work(me * share, share, longest ? rounds : 1);
    pthread_barrier_wait(&done);
    return s != s ? arg : NULL; /* never NaN: keeps the work */
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 4;
    rounds = argc > 2 ? atoi(argv[2]) : 200;
    if (nthreads < 1 || nthreads > 64 || rounds < 1) {
        fprintf(stderr, "usage: pt_stats THREADS ROUNDS\n");
        return 2;
    }
    data = malloc(N * sizeof *data);
    for (long i = 0; i < N; i++) /* main computes too: thousands of writes */
        data[i] = (double)i;
    pthread_barrier_init(&done, NULL, (unsigned)nthreads);
    pthread_t t[64];
    for (long i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, thread, (void *)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    printf("pt_stats: %s\n", long_taken ? "ok" : "no thread ran on node 0");
    return !long_taken;
}
