/*
 * pt_first_touch — an ordinary pthreads program whose threads each fill
 * their own block of an array main allocated and left untouched, then
 * meet at a barrier, ROUNDS times; main checks every block. Under dsm
 * (docs/unmodified-programs.md) a program dsmcc built homes such pages
 * where they are first touched, with threads on a node as with one: a
 * worker on another node then writes its block at home, with no twin and
 * no diff (pthreads.first_touch_homes_with_threads compares node 1's diff
 * bytes with DSM_HOME=local's).
 *
 *   pt_first_touch THREADS [PAGES_PER_THREAD]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 4

static long per_thread = 32, words_per_page = 512;
static long *array;
static pthread_barrier_t barrier;

static long value(long round, long t, long i) { return (round * 131 + t) * 1000003 + i; }

static void fill(long t)
{
    long words = per_thread * words_per_page;
    for (long r = 0; r < ROUNDS; r++) {
        for (long i = 0; i < words; i++)
            array[t * words + i] = value(r, t, i);
        pthread_barrier_wait(&barrier);
    }
}

static void *worker(void *arg)
{
    fill((long)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pt_first_touch THREADS [PAGES_PER_THREAD]\n");
        return 2;
    }
    long threads = atol(argv[1]);
    if (argc > 2)
        per_thread = atol(argv[2]);
    if (threads < 1 || threads > 64 || per_thread < 1)
        return 2;
    array = malloc((size_t)(threads * per_thread * words_per_page) * sizeof *array);
    if (!array || pthread_barrier_init(&barrier, NULL, (unsigned)threads))
        return 1;
    pthread_t tid[64];
    for (long t = 1; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)t))
            return 1;
    fill(0);
    for (long t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
    long words = per_thread * words_per_page, bad = 0;
    for (long t = 0; t < threads; t++)
        for (long i = 0; i < words; i++)
            bad += array[t * words + i] != value(ROUNDS - 1, t, i);
    printf("%ld threads, %ld words each, %ld wrong\n", threads, words, bad);
    printf("pt_first_touch: %s\n", bad ? "FAILED" : "ok");
    return bad != 0;
}
