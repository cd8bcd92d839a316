/*
 * pt_exit — exit(3) ends the whole job with status 3, whichever thread
 * calls it, while the program's other threads are blocked in a mutex, a
 * condition or a barrier, or computing on shared memory:
 *
 *   pt_exit worker W   a thread on node 1 calls exit(3)
 *   pt_exit node0 W    a thread on node 0, not main, calls exit(3)
 *   pt_exit main W     main calls exit(3)
 *   pt_exit return W   main returns 3 once every thread has ended (the
 *                      job's ordinary end, in step on every node)
 *
 * W threads are started (at least 4, so that every kind of wait is
 * there). The program's exit handler prints "atexit ran" once, on the
 * node that called exit (POSIX: exit runs them in the calling process);
 * nothing else may end the job. "returned" would say exit returned.
 */
#define _GNU_SOURCE
#include <dsm.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* counts the started */
static pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;  /* main holds it to the end */
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t never_full;
static int started, exiter_taken, nthreads, exit_node = -1, threads_return;
static volatile long work[64];

static void said_at_exit(void) { printf("atexit ran on node %d\n", dsm_rank()); }

/* Every other thread is waiting or computing before anyone exits. */
static void wait_for_all(int want)
{
    pthread_mutex_lock(&lock);
    while (started < want)
        pthread_cond_wait(&started_cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void *thread(void *arg)
{
    long i = (long)arg;
    if (threads_return)
        return NULL;
    pthread_mutex_lock(&lock);
    bool exiter = exit_node == dsm_rank() && !exiter_taken;
    exiter_taken |= exiter;
    started += !exiter;
    pthread_cond_broadcast(&started_cond);
    pthread_mutex_unlock(&lock);
    if (exiter) {
        wait_for_all(nthreads - 1);
        printf("thread %ld on node %d exits\n", i, dsm_rank());
        fflush(stdout);
        exit(3);
    }
    switch (i % 4) {
    case 0: /* blocked in a mutex main holds */
        pthread_mutex_lock(&held);
        break;
    case 1: /* blocked in a condition nobody signals */
        pthread_mutex_lock(&lock);
        for (;;)
            pthread_cond_wait(&never, &lock);
    case 2: /* blocked in a barrier that never fills */
        pthread_barrier_wait(&never_full);
        break;
    default: /* computing on shared memory */
        for (long n = 0;; n++) {
            work[i % 64] += n;
            if (n % 1024 == 0)
                sched_yield();
        }
    }
    printf("returned\n");
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "worker") && strcmp(argv[1], "node0") && strcmp(argv[1], "main") &&
                      strcmp(argv[1], "return"))) {
        fprintf(stderr, "usage: pt_exit worker|node0|main|return THREADS\n");
        return 2;
    }
    nthreads = atoi(argv[2]);
    if (nthreads < 4 || nthreads > 64) {
        fprintf(stderr, "pt_exit: THREADS from 4 to 64\n");
        return 2;
    }
    exit_node = !strcmp(argv[1], "worker") ? 1 : !strcmp(argv[1], "node0") ? 0 : -1;
    threads_return = !strcmp(argv[1], "return");
    atexit(said_at_exit);
    pthread_barrier_init(&never_full, NULL, (unsigned)nthreads + 1);
    pthread_mutex_lock(&held);
    pthread_t t[64];
    for (long i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, thread, (void *)i);
    if (threads_return) {
        for (int i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
        printf("main returns\n");
        return 3;
    }
    if (exit_node < 0) {
        wait_for_all(nthreads);
        printf("main exits\n");
        fflush(stdout);
        exit(3);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    printf("returned\n");
    return 0;
}
