/*
 * pt_oversub — more threads than the job has slots (issue 55, point 1):
 * a node runs more of the program's threads than dsmrun --threads, as one
 * process runs more threads than it has CPUs.
 *
 *   pt_oversub WORKERS ROUNDS
 *
 * Each round main creates WORKERS threads, all of which must be alive at
 * once: they meet main at a barrier of WORKERS + 1 (threads that waited
 * for a free slot before they started would never arrive). Each sums its
 * slice of a shared array into a total under a mutex, records its
 * pthread_self, and returns (or passes to pthread_exit) a value main
 * checks at the join, with pthread_equal against the id pthread_create
 * gave. One worker creates a thread of its own and joins it; another
 * polls a flag, under a mutex with sched_yield between polls, that the
 * last worker sets (with one slot per node both may sit on one node, and
 * the poller must let the setter run). Two detached threads a round tell
 * main they ran through a condition. main prints the totals; the output
 * is compared with the same source built plainly.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 40000
#define MAXW 64

static long data[N];
static long total;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_alive;
static pthread_t seen_self[MAXW];
static int workers;

static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static int flag, polls_done;

static pthread_mutex_t detached_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t detached_ran = PTHREAD_COND_INITIALIZER;
static int detached_count;

static void *grandchild(void *arg)
{
    return (void *)((long)arg * 3);
}

static void *detached(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&detached_lock);
    detached_count++;
    pthread_cond_signal(&detached_ran);
    pthread_mutex_unlock(&detached_lock);
    return NULL;
}

static void *worker(void *arg)
{
    long i = (long)arg;
    seen_self[i] = pthread_self();
    pthread_barrier_wait(&all_alive);
    long lo = N * i / workers, hi = N * (i + 1) / workers, sum = 0;
    for (long k = lo; k < hi; k++)
        sum += data[k];
    pthread_mutex_lock(&total_lock);
    total += sum;
    pthread_mutex_unlock(&total_lock);
    if (i == 0) { /* a thread's own thread */
        pthread_t t;
        void *v;
        if (pthread_create(&t, NULL, grandchild, (void *)7L) || pthread_join(t, &v) || (long)v != 21)
            return (void *)-1L;
    }
    if (i == 1) { /* waits for the last worker, yielding */
        for (;;) {
            pthread_mutex_lock(&flag_lock);
            int f = flag;
            pthread_mutex_unlock(&flag_lock);
            if (f)
                break;
            sched_yield();
        }
        pthread_mutex_lock(&flag_lock);
        polls_done++;
        pthread_mutex_unlock(&flag_lock);
    }
    if (i == workers - 1) {
        usleep(1000); /* a sleep lets the node's other threads run too */
        pthread_mutex_lock(&flag_lock);
        flag = 1;
        pthread_mutex_unlock(&flag_lock);
    }
    if (i % 2)
        pthread_exit((void *)(i * i + 1));
    return (void *)(i * i + 1);
}

int main(int argc, char **argv)
{
    workers = argc > 1 ? atoi(argv[1]) : 9;
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    if (workers < 2 || workers > MAXW)
        return 2;
    long want = 0;
    for (long k = 0; k < N; k++)
        want += data[k] = k % 1000;
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        pthread_t th[MAXW], d[2];
        total = 0;
        flag = 0;
        pthread_barrier_init(&all_alive, NULL, (unsigned)workers + 1);
        for (long i = 0; i < workers; i++)
            if (pthread_create(&th[i], NULL, worker, (void *)i))
                return 3;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        for (int i = 0; i < 2; i++)
            pthread_create(&d[i], &a, detached, NULL);
        pthread_attr_destroy(&a);
        pthread_barrier_wait(&all_alive);
        for (long i = 0; i < workers; i++) {
            void *v;
            int rc = pthread_join(th[i], &v);
            if (rc || (long)v != i * i + 1 || !pthread_equal(th[i], seen_self[i]))
                bad++;
        }
        pthread_mutex_lock(&detached_lock);
        while (detached_count < 2 * (r + 1))
            pthread_cond_wait(&detached_ran, &detached_lock);
        pthread_mutex_unlock(&detached_lock);
        pthread_barrier_destroy(&all_alive);
        printf("round %d: %d workers, total %ld (want %ld), polled %d, detached %d, bad %d\n", r,
               workers, total, want, polls_done, detached_count, bad);
        if (total != want)
            bad++;
    }
    printf("pt_oversub: %s\n", bad ? "FAILED" : "ok");
    return bad != 0;
}
