/*
 * pt_histogram — an ordinary pthreads program: THREADS threads each count
 * a slice of a pseudo-random array into a local histogram and add it to
 * the global one under a mutex (PTHREAD_MUTEX_INITIALIZER); a
 * pthread_once initialises the bins; each thread's pthread_self is its own
 * and not main's; main checks the sum against a count
 * of its own. Its output is the same whatever runs it: built plainly
 * (cc -pthread) or with dsmcc, its threads spread over the nodes.
 *
 *   pt_histogram THREADS [N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BINS 64

static unsigned *data;
static long n, threads;
static long histogram[BINS];
static long counted_by[64];
static pthread_mutex_t histogram_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t bins_once = PTHREAD_ONCE_INIT;
static int once_runs;
static pthread_t main_thread;
static int not_main[64];

static void clear_bins(void)
{
    for (int b = 0; b < BINS; b++)
        histogram[b] = 0;
    once_runs++;
}

static void *count_slice(void *arg)
{
    long t = (long)arg;
    long from = n * t / threads, to = n * (t + 1) / threads;
    long local[BINS] = {0};
    not_main[t] = !pthread_equal(pthread_self(), main_thread) &&
                  pthread_equal(pthread_self(), pthread_self());
    pthread_once(&bins_once, clear_bins);
    for (long i = from; i < to; i++)
        local[data[i] % BINS]++;
    pthread_mutex_lock(&histogram_lock);
    for (int b = 0; b < BINS; b++)
        histogram[b] += local[b];
    counted_by[t] = to - from;
    pthread_mutex_unlock(&histogram_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    threads = argc > 1 ? atol(argv[1]) : 4;
    n = argc > 2 ? atol(argv[2]) : 1 << 20;
    if (threads < 1 || threads > 64 || n < threads)
        return 2;
    data = malloc(n * sizeof *data);
    unsigned x = 12345;
    for (long i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = x >> 8;
    }
    pthread_t th[64];
    main_thread = pthread_self();
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, count_slice, (void *)t))
            return 3;
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    long want[BINS] = {0}, total = 0, sum = 0;
    for (long i = 0; i < n; i++)
        want[data[i] % BINS]++;
    int bad = 0;
    for (int b = 0; b < BINS; b++) {
        bad += histogram[b] != want[b];
        total += histogram[b];
        sum += histogram[b] * (b + 1);
    }
    for (long t = 0; t < threads; t++)
        bad += counted_by[t] <= 0 || !not_main[t];
    printf("histogram of %ld values in %d bins by %ld threads: total %ld, weighted %ld, once %d: %s\n",
           n, BINS, threads, total, sum, once_runs, bad || once_runs != 1 ? "WRONG" : "ok");
    return bad != 0;
}
