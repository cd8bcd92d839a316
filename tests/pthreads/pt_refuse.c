/*
 * pt_refuse — what cannot work across nodes ends the job with one line,
 * each mode a POSIX threads use dsm refuses (on two or more nodes):
 *
 *   trylock    pthread_mutex_trylock on a mutex in shared memory
 *   timedwait  pthread_cond_timedwait
 *   pshared    a PTHREAD_PROCESS_SHARED mutex
 *   fork       fork
 *   kill       pthread_kill of a thread
 *   cancel     pthread_cancel of a thread
 *   stack      a thread passing a pointer into its own stack to a thread
 *              placed on another node
 *   semopen    a named semaphore
 * Each prints "reached" if the call returned, which it must not.
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t gate;
static int value;

static void *wait_at_gate(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&gate);
    return NULL;
}

static void *read_value(void *arg)
{
    value = *(int *)arg;
    return NULL;
}

static void *start_child_with_local(void *arg)
{
    (void)arg;
    int local = 7;
    pthread_t child;
    pthread_create(&child, NULL, read_value, &local);
    pthread_join(child, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t th[4];
    if (!strcmp(mode, "trylock")) {
        pthread_mutex_trylock(&m);
    } else if (!strcmp(mode, "timedwait")) {
        struct timespec when;
        clock_gettime(CLOCK_REALTIME, &when);
        when.tv_sec += 1;
        pthread_mutex_lock(&m);
        pthread_cond_timedwait(&c, &m, &when);
    } else if (!strcmp(mode, "pshared")) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&m, &a);
    } else if (!strcmp(mode, "fork")) {
        fork();
    } else if (!strcmp(mode, "kill") || !strcmp(mode, "cancel")) {
        pthread_barrier_init(&gate, NULL, 2);
        pthread_create(&th[0], NULL, wait_at_gate, NULL);
        if (!strcmp(mode, "kill"))
            pthread_kill(th[0], SIGUSR1);
        else
            pthread_cancel(th[0]);
    } else if (!strcmp(mode, "stack")) {
        pthread_create(&th[0], NULL, start_child_with_local, NULL);
        pthread_join(th[0], NULL);
    } else if (!strcmp(mode, "semopen")) {
        sem_open("/dsm-pt-refuse", O_CREAT, 0600, 1);
    } else
        return 2;
    printf("reached: %s returned\n", mode);
    return 0;
}
