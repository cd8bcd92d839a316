/*
 * test_threads_only — an ordinary pthreads program built with dsmcc: its
 * THREADS threads sum a global array's slices under a mutex. dsm places
 * them on the nodes (include/dsm/pthread.h): every node runs some and the
 * answer is right, with enough slots (dsmrun --threads) and with fewer
 * (a node then runs more threads than slots, in turns).
 */
#include <pthread.h>
#include <stdio.h>

#define WORDS   (1 << 16)
#define THREADS 4
#define ROUNDS  1000    /* some 50 ms or more: long beside node 1's start */

long data[WORDS];
long sum;
pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;

static void *add_slice(void *arg)
{
    long t = (long)arg, part = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (long i = t; i < WORDS; i += THREADS)
            part += data[i] ^ r;
    pthread_mutex_lock(&sum_lock);
    sum += part;
    pthread_mutex_unlock(&sum_lock);
    return NULL;
}

int main(void)
{
    for (long i = 0; i < WORDS; i++)
        data[i] = i;
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, add_slice, (void *)t);
    for (long t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    long want = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (long i = 0; i < WORDS; i++)
            want += data[i] ^ r;
    printf("threads only: sum %ld: %s\n", sum, sum == want ? "ok" : "WRONG");
    return sum != want;
}
