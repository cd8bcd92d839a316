/*
 * pt_refuse — what cannot work across nodes ends the job with one line,
 * each mode a POSIX threads use dsm refuses (on two or more nodes):
 *
 *   timedwait  pthread_cond_timedwait
 *   pshared    a PTHREAD_PROCESS_SHARED mutex
 *   kill       pthread_kill of a thread
 *   cancel     pthread_cancel of a thread
 *   stack      a thread passing a pointer into its own stack to a thread
 *              placed on another node
 *   semopen    a named semaphore
 *   sigqueue   pthread_sigqueue to a thread
 *   setname    pthread_setname_np of another thread (and getattr:
 *              pthread_getattr_np), whose C library record is its node's
 *   pshared_file  a process-shared mutex another process made in a file
 *              both map (here: its bytes, copied into a shared file mapping)
 *   daemon     daemon (it forks)
 *   mmap_dev   mmap of a device
 *   mmap_fixed mmap with MAP_FIXED outside the shared region
 *   stream_input  fgets on a stream main opened, from a thread on another
 *              node (fd_input: read on main's descriptor)
 * and faults that say why (the job ends with the signal):
 *   null       a store through a null pointer
 *   rodata     a store into a string literal
 * Each prints "reached" if the call returned, which it must not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
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

static FILE *main_stream;
static int main_fd;

static void *read_main_stream(void *arg)
{
    char line[64];
    if (arg)
        fgets(line, sizeof line, main_stream);
    else
        read(main_fd, line, sizeof line);
    printf("reached: %s returned\n", arg ? "fgets" : "read");
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
    if (!strcmp(mode, "timedwait")) {
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
    } else if (!strcmp(mode, "kill") || !strcmp(mode, "cancel") || !strcmp(mode, "sigqueue") ||
               !strcmp(mode, "setname") || !strcmp(mode, "getattr")) {
        pthread_barrier_init(&gate, NULL, 2);
        pthread_create(&th[0], NULL, wait_at_gate, NULL);
        pthread_attr_t a;
        if (!strcmp(mode, "kill"))
            pthread_kill(th[0], SIGUSR1);
        else if (!strcmp(mode, "sigqueue"))
            pthread_sigqueue(th[0], SIGUSR1, (union sigval){.sival_int = 1});
        else if (!strcmp(mode, "setname"))
            pthread_setname_np(th[0], "worker");
        else if (!strcmp(mode, "getattr"))
            pthread_getattr_np(th[0], &a);
        else
            pthread_cancel(th[0]);
    } else if (!strcmp(mode, "stack")) {
        pthread_create(&th[0], NULL, start_child_with_local, NULL);
        pthread_join(th[0], NULL);
    } else if (!strcmp(mode, "semopen")) {
        sem_open("/dsm-pt-refuse", O_CREAT, 0600, 1);
    } else if (!strcmp(mode, "pshared_file")) {
        /* Another process's mutex: made in memory of its own, then found
         * in the file both map (here, its bytes copied in). */
        static _Thread_local pthread_mutex_t theirs;
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&theirs, &a);
        char path[] = "/tmp/pt_refuse_XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        if (fd < 0 || ftruncate(fd, 4096))
            return 3;
        pthread_mutex_t *in_file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        memcpy(in_file, &theirs, sizeof theirs);
        pthread_mutex_lock(in_file);
    } else if (!strcmp(mode, "daemon")) {
        if (daemon(1, 1))
            return 3;
    } else if (!strcmp(mode, "mmap_dev")) {
        int fd = open("/dev/null", O_RDWR);
        mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    } else if (!strcmp(mode, "mmap_fixed")) {
        mmap((void *)0x100000000000ul, 4096, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    } else if (!strcmp(mode, "stream_input") || !strcmp(mode, "fd_input")) {
        main_stream = fopen("/dev/null", "r");
        main_fd = open("/dev/null", O_RDONLY);
        pthread_create(&th[0], NULL, read_main_stream, !strcmp(mode, "stream_input") ? main_stream : NULL);
        pthread_join(th[0], NULL);
    } else if (!strcmp(mode, "null")) {
        *(volatile int *)(uintptr_t)argc = 1; /* argc is 2: a null pointer's page */
    } else if (!strcmp(mode, "rodata")) {
        char *literal = (char *)(uintptr_t)"constant";
        ((volatile char *)literal)[0] = 'C';
    } else
        return 2;
    printf("reached: %s returned\n", mode);
    return 0;
}
