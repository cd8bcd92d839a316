/*
 * pt_condbar — an ordinary pthreads program that synchronises every way
 * POSIX offers: THREADS workers
 *   1. take ITEMS items from a bounded queue main fills (a mutex and two
 *      condition variables: not full, not empty), each item looked up in
 *      a table under a read lock (rwlock), and add them up per thread;
 *   2. run ROUNDS steps of a 1-D relaxation, each step between two
 *      pthread_barrier_waits, the barrier's serial thread updating the
 *      table under the write lock;
 *   3. count their steps under a spin lock and post a semaphore that main
 *      waits on THREADS times before it joins them; a detached thread
 *      posts it once more, after adding its own step.
 * main checks every result against its own sequential run and prints
 * them: the output is the same whatever runs it.
 *
 *   pt_condbar THREADS [ITEMS [ROUNDS]]
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define QUEUE  8
#define CELLS  4096
#define TABLE  16

static long threads, items, rounds;

static long queue[QUEUE];
static int head, tail, queued;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static long taken_sum[64], taken_count[64];

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static long table[TABLE];

static pthread_barrier_t step;
static double cells[2][CELLS];
static long serial_steps;

static pthread_spinlock_t steps_lock;
static long steps_done;
static sem_t finished;

static long take(void)
{
    pthread_mutex_lock(&queue_lock);
    while (queued == 0)
        pthread_cond_wait(&not_empty, &queue_lock);
    long v = queue[head];
    head = (head + 1) % QUEUE;
    queued--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&queue_lock);
    return v;
}

static void put(long v)
{
    pthread_mutex_lock(&queue_lock);
    while (queued == QUEUE)
        pthread_cond_wait(&not_full, &queue_lock);
    queue[tail] = v;
    tail = (tail + 1) % QUEUE;
    queued++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&queue_lock);
}

static void *worker(void *arg)
{
    long t = (long)arg;
    for (long v; (v = take()) >= 0;) {
        pthread_rwlock_rdlock(&table_lock);
        long weight = table[v % TABLE];
        pthread_rwlock_unlock(&table_lock);
        taken_sum[t] += v * weight;
        taken_count[t]++;
    }
    long from = CELLS * t / threads, to = CELLS * (t + 1) / threads;
    for (long r = 0; r < rounds; r++) {
        const double *in = cells[r % 2];
        double *out = cells[(r + 1) % 2];
        for (long i = from; i < to; i++)
            out[i] = (in[(i + CELLS - 1) % CELLS] + in[i] + in[(i + 1) % CELLS]) / 3;
        if (pthread_barrier_wait(&step) == PTHREAD_BARRIER_SERIAL_THREAD) {
            pthread_rwlock_wrlock(&table_lock);
            table[r % TABLE]++;
            serial_steps++;
            pthread_rwlock_unlock(&table_lock);
        }
        pthread_barrier_wait(&step);
        pthread_spin_lock(&steps_lock);
        steps_done++;
        pthread_spin_unlock(&steps_lock);
    }
    sem_post(&finished);
    return NULL;
}

static void *detached_step(void *arg)
{
    (void)arg;
    pthread_spin_lock(&steps_lock);
    steps_done++;
    pthread_spin_unlock(&steps_lock);
    sem_post(&finished);
    return NULL;
}

int main(int argc, char **argv)
{
    threads = argc > 1 ? atol(argv[1]) : 4;
    items = argc > 2 ? atol(argv[2]) : 2000;
    rounds = argc > 3 ? atol(argv[3]) : 20;
    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < TABLE; i++)
        table[i] = i + 1;
    for (int i = 0; i < CELLS; i++)
        cells[0][i] = (i * 7919) % 1000;
    pthread_barrier_init(&step, NULL, threads);
    pthread_spin_init(&steps_lock, PTHREAD_PROCESS_PRIVATE);
    sem_init(&finished, 0, 0);

    /* What the threads must find, computed before they change anything. */
    long want_sum = 0;
    for (long v = 0; v < items; v++)
        want_sum += v * (v % TABLE + 1);
    static double want[2][CELLS];
    for (int i = 0; i < CELLS; i++)
        want[0][i] = cells[0][i];
    for (long r = 0; r < rounds; r++)
        for (long i = 0; i < CELLS; i++)
            want[(r + 1) % 2][i] = (want[r % 2][(i + CELLS - 1) % CELLS] + want[r % 2][i] +
                                    want[r % 2][(i + 1) % CELLS]) / 3;

    pthread_t th[64];
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t))
            return 3;
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    pthread_t helper;
    if (pthread_create(&helper, &detached, detached_step, NULL))
        return 3;
    pthread_attr_destroy(&detached);
    for (long v = 0; v < items; v++)
        put(v);
    for (long t = 0; t < threads; t++)
        put(-1);
    for (long t = 0; t < threads + 1; t++)
        sem_wait(&finished);
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);

    long sum = 0, count = 0;
    for (long t = 0; t < threads; t++) {
        sum += taken_sum[t];
        count += taken_count[t];
    }
    long wrong_cells = 0;
    double checksum = 0;
    for (int i = 0; i < CELLS; i++) {
        wrong_cells += cells[rounds % 2][i] != want[rounds % 2][i];
        checksum += cells[rounds % 2][i];
    }
    long table_sum = 0;
    for (int i = 0; i < TABLE; i++)
        table_sum += table[i];
    int sem_value = -1;
    sem_getvalue(&finished, &sem_value);
    int ok = sum == want_sum && count == items && wrong_cells == 0 && serial_steps == rounds &&
             steps_done == rounds * threads + 1 && table_sum == TABLE * (TABLE + 1) / 2 + rounds &&
             sem_value == 0;
    printf("condbar %ld threads: queue %ld items sum %ld; relaxation %ld rounds checksum %.6f, "
           "%ld cells wrong; serial steps %ld, steps %ld, table %ld, semaphore %d: %s\n",
           threads, count, sum, rounds, checksum, wrong_cells, serial_steps, steps_done, table_sum,
           sem_value, ok ? "ok" : "WRONG");
    pthread_barrier_destroy(&step);
    pthread_spin_destroy(&steps_lock);
    sem_destroy(&finished);
    return !ok;
}
