/*
 * pt_trylock — the try forms of mutexes and spin locks (issue 89, point
 * 4), the same on threads placed on other nodes as in one process:
 * counters kept under trylock-spin loops (a mutex and a spin lock) reach
 * the expected totals; a mutex and a spin lock main holds are busy for
 * every worker, and free for each once main lets them go; a recursive
 * mutex's holder tries it again (0), an error-checking or normal one's
 * holder is told EBUSY, as is the holder of a spin lock. main prints each
 * check; the output is compared with the same source built plainly.
 *
 *   pt_trylock WORKERS ROUNDS
 */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t counted = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held_by_main = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t checking, normal;
static pthread_spinlock_t spin, spin_held;
static pthread_barrier_t phase;
static long counter, spin_counter;
static int rounds;
/* Per worker, written by the worker and read by main after the join. */
static int busy_mutex[64], busy_spin[64], got_mutex[64], got_spin[64], recursive_busy[64];

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    /* main holds both: busy for every thread of every node. */
    busy_mutex[me] = pthread_mutex_trylock(&held_by_main) == EBUSY;
    busy_spin[me] = pthread_spin_trylock(&spin_held) == EBUSY;
    /* main holds the recursive mutex too: busy for anyone else. */
    recursive_busy[me] = pthread_mutex_trylock(&recursive) == EBUSY;
    pthread_barrier_wait(&phase);
    pthread_barrier_wait(&phase); /* main let them go */
    while (pthread_mutex_trylock(&held_by_main) == EBUSY)
        sched_yield();
    got_mutex[me] = 1;
    pthread_mutex_unlock(&held_by_main);
    while (pthread_spin_trylock(&spin_held) == EBUSY)
        sched_yield();
    got_spin[me] = 1;
    pthread_spin_unlock(&spin_held);

    for (int i = 0; i < rounds; i++) {
        while (pthread_mutex_trylock(&counted) == EBUSY)
            sched_yield();
        counter++;
        pthread_mutex_unlock(&counted);
        while (pthread_spin_trylock(&spin) == EBUSY)
            sched_yield();
        spin_counter++;
        pthread_spin_unlock(&spin);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int workers = argc > 1 ? atoi(argv[1]) : 3;
    rounds = argc > 2 ? atoi(argv[2]) : 50;
    if (workers < 1 || workers > 64 || rounds < 1) {
        fprintf(stderr, "usage: pt_trylock WORKERS(1-64) ROUNDS\n");
        return 2;
    }
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checking, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
    pthread_mutex_init(&normal, &a);
    pthread_mutexattr_destroy(&a);
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_spin_init(&spin_held, PTHREAD_PROCESS_PRIVATE);
    pthread_barrier_init(&phase, NULL, (unsigned)workers + 1);

    printf("trylock free mutex: %d\n", pthread_mutex_trylock(&held_by_main));
    printf("trylock free spin: %d\n", pthread_spin_trylock(&spin_held));
    printf("recursive: trylock %d, again %d\n", pthread_mutex_trylock(&recursive),
           pthread_mutex_trylock(&recursive));
    printf("errorcheck: trylock %d, by its holder %d\n", pthread_mutex_trylock(&checking),
           pthread_mutex_trylock(&checking) == EBUSY);
    printf("normal: trylock %d, by its holder %d\n", pthread_mutex_trylock(&normal),
           pthread_mutex_trylock(&normal) == EBUSY);
    printf("spin: by its holder %d\n", pthread_spin_trylock(&spin_held) == EBUSY);

    pthread_t t[64];
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
    pthread_barrier_wait(&phase);
    pthread_mutex_unlock(&held_by_main);
    pthread_spin_unlock(&spin_held);
    printf("recursive: unlock %d, %d\n", pthread_mutex_unlock(&recursive),
           pthread_mutex_unlock(&recursive));
    printf("errorcheck: unlock %d\n", pthread_mutex_unlock(&checking));
    printf("normal: unlock %d\n", pthread_mutex_unlock(&normal));
    pthread_barrier_wait(&phase);
    for (int i = 0; i < workers; i++)
        pthread_join(t[i], NULL);

    int busy = 0, got = 0;
    for (int i = 0; i < workers; i++) {
        busy += busy_mutex[i] + busy_spin[i] + recursive_busy[i];
        got += got_mutex[i] + got_spin[i];
    }
    long want = (long)workers * rounds;
    printf("held by main: busy for %d of %d tries, then taken %d of %d times\n", busy,
           3 * workers, got, 2 * workers);
    printf("counters: mutex %ld, spin %ld (of %ld)\n", counter, spin_counter, want);
    int ok = busy == 3 * workers && got == 2 * workers && counter == want && spin_counter == want;
    printf("trylock: %s\n", ok ? "ok" : "WRONG");
    return !ok;
}
