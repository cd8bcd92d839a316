/*
 * pt_tsd — thread-specific data across nodes (issue 55, point 3): keys
 * made by main, by pthread_once in whichever thread comes first, and by
 * C11's tss_create; values each thread's own; destructors at each
 * thread's end (its routine's return and pthread_exit), in rounds while a
 * destructor sets a value again; a deleted key's index made again holds
 * no old value; a key a thread of another node made works in main; and
 * C11 _Thread_local variables each thread's own.
 *
 *   pt_tsd WORKERS
 *
 * main prints what the destructors counted; the output is compared with
 * the same source built plainly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>

#define MAXW 32

static pthread_key_t key_main, key_once, key_again, key_reset, key_worker;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static tss_t tss;
static pthread_barrier_t all_set;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static long main_calls, main_sum, once_calls, reset_calls, tss_calls, tss_sum;
static int failures;
static _Thread_local long mine;

static void fail(void)
{
    pthread_mutex_lock(&count_lock);
    failures++;
    pthread_mutex_unlock(&count_lock);
}

static void count_main(void *v)
{
    pthread_mutex_lock(&count_lock);
    main_calls++;
    main_sum += *(long *)v;
    pthread_mutex_unlock(&count_lock);
    free(v);
}

static void count_once(void *v)
{
    (void)v;
    pthread_mutex_lock(&count_lock);
    once_calls++;
    pthread_mutex_unlock(&count_lock);
}

/* Sets its value again the first time: a second round must call it. */
static void count_reset(void *v)
{
    pthread_mutex_lock(&count_lock);
    reset_calls++;
    pthread_mutex_unlock(&count_lock);
    if ((long)v == 1)
        pthread_setspecific(key_reset, (void *)2L);
}

static void count_tss(void *v)
{
    pthread_mutex_lock(&count_lock);
    tss_calls++;
    tss_sum += (long)v;
    pthread_mutex_unlock(&count_lock);
}

static void make_once_key(void)
{
    if (pthread_key_create(&key_once, count_once) || pthread_key_create(&key_worker, NULL))
        fail();
}

static void *worker(void *arg)
{
    long i = (long)arg;
    pthread_once(&once, make_once_key);
    if (pthread_getspecific(key_main) || pthread_getspecific(key_again) || tss_get(tss))
        fail(); /* nothing set yet in this thread */
    long *v = malloc(sizeof *v);
    *v = i + 100;
    mine = i;
    if (pthread_setspecific(key_main, v) || pthread_setspecific(key_once, (void *)(i + 1)) ||
        pthread_setspecific(key_reset, (void *)1L) || tss_set(tss, (void *)(i + 1000)) != thrd_success)
        fail();
    pthread_barrier_wait(&all_set); /* every thread's values are set */
    if (pthread_getspecific(key_main) != v || pthread_getspecific(key_once) != (void *)(i + 1) ||
        tss_get(tss) != (void *)(i + 1000) || mine != i)
        fail();
    if (i % 2)
        pthread_exit(NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    int workers = argc > 1 ? atoi(argv[1]) : 5;
    if (workers < 1 || workers > MAXW)
        return 2;
    pthread_t th[MAXW];
    /* A key deleted, and its index made again: no value of the old key. */
    pthread_key_t old;
    pthread_key_create(&old, NULL);
    pthread_setspecific(old, (void *)7L);
    int deleted = pthread_key_delete(old);
    pthread_key_create(&key_again, NULL);
    pthread_key_create(&key_main, count_main);
    pthread_key_create(&key_reset, count_reset);
    int made = tss_create(&tss, count_tss);
    pthread_barrier_init(&all_set, NULL, (unsigned)workers);
    mine = -1;
    for (long i = 0; i < workers; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < workers; i++)
        pthread_join(th[i], NULL);
    /* A key a worker made, wherever it ran, is main's to use too. */
    pthread_setspecific(key_worker, (void *)9L);
    long worker_key = (long)pthread_getspecific(key_worker);
    int delete_twice = pthread_key_delete(key_worker) == 0 && pthread_key_delete(key_worker) == EINVAL;
    printf("deleted %d, again %s, tss_create %s\n", deleted,
           pthread_getspecific(key_again) ? "holds a value" : "empty",
           made == thrd_success ? "ok" : "failed");
    printf("destructors: main %ld (sum %ld), once %ld, reset %ld, tss %ld (sum %ld)\n", main_calls,
           main_sum, once_calls, reset_calls, tss_calls, tss_sum);
    printf("worker's key in main %ld, deleted once %d, main's own thread_local %ld\n", worker_key,
           delete_twice, mine);
    long want_sum = 0, want_tss = 0;
    for (long i = 0; i < workers; i++) {
        want_sum += i + 100;
        want_tss += i + 1000;
    }
    int ok = !failures && main_calls == workers && main_sum == want_sum && once_calls == workers &&
             reset_calls == 2 * workers && tss_calls == workers && tss_sum == want_tss &&
             worker_key == 9 && delete_twice && mine == -1 && made == thrd_success;
    printf("pt_tsd: %s\n", ok ? "ok" : "FAILED");
    return !ok;
}
