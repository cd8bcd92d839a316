/*
 * pt_semantics — the return values POSIX gives, the same on threads placed
 * on other nodes as in one process: recursive and error-checking mutexes,
 * the try forms of read-write locks and semaphores, joining oneself, a
 * detached thread, a condition signalled by a thread of another node
 * while main waits, and joins that try or have a time limit
 * (pthread_tryjoin_np, pthread_timedjoin_np), the thread's name set by
 * itself (pthread_setname_np, pthread_getname_np). main prints each check's name and result; the output
 * is compared with the same source built plainly.
 *
 *   pt_semantics
 */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t checking;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem;
static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flag_set = PTHREAD_COND_INITIALIZER;
static int flag, failures;

/* Results are kept and printed by main at the end: a thread's printf on
 * another node goes to that node's output, in no set order with main's. */
static const char *names[64];
static long gots[64], wants[64];
static int checks;

static void check(const char *what, long got, long want)
{
    names[checks] = what;
    gots[checks] = got;
    wants[checks] = want;
    checks++;
}

static void *in_thread(void *arg)
{
    (void)arg;
    /* A thread elsewhere: the read lock main holds lets it read, not write. */
    check("thread: tryrdlock while main reads", pthread_rwlock_tryrdlock(&rw), 0);
    check("thread: rwlock unlock", pthread_rwlock_unlock(&rw), 0);
    check("thread: trywrlock while main reads", pthread_rwlock_trywrlock(&rw), EBUSY);
    check("thread: unlock of a mutex main holds", pthread_mutex_unlock(&checking), EPERM);
    check("thread: join itself", pthread_join(pthread_self(), NULL), EDEADLK);
    check("thread: sem_trywait at 1", sem_trywait(&sem), 0);
    check("thread: sem_trywait at 0", sem_trywait(&sem) == -1 && errno == EAGAIN, 1);
    pthread_mutex_lock(&flag_lock);
    flag = 1;
    pthread_cond_signal(&flag_set);
    pthread_mutex_unlock(&flag_lock);
    return (void *)42;
}

/* Says it ran: main waits for that before it ends (a detached thread
 * still running when main returns ends with the process, and so might
 * never have run, on one machine or on a node). */
static void *detached(void *arg)
{
    pthread_mutex_lock(&flag_lock);
    flag = 2;
    pthread_cond_signal(&flag_set);
    pthread_mutex_unlock(&flag_lock);
    return arg;
}

static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go;

/* Runs until main says go: joins that try or time out meanwhile. */
static void *waits_for_go(void *arg)
{
    char name[16] = "";
    long named = pthread_setname_np(pthread_self(), "waiter") == 0 &&
                 pthread_getname_np(pthread_self(), name, sizeof name) == 0 && !strcmp(name, "waiter");
    pthread_mutex_lock(&go_lock);
    while (!go)
        pthread_cond_wait(&go_cond, &go_lock);
    pthread_mutex_unlock(&go_lock);
    return (void *)(named + (long)arg);
}

int main(void)
{
    check("recursive: lock", pthread_mutex_lock(&recursive), 0);
    check("recursive: lock again", pthread_mutex_lock(&recursive), 0);
    check("recursive: unlock", pthread_mutex_unlock(&recursive), 0);
    check("recursive: unlock again", pthread_mutex_unlock(&recursive), 0);
    check("recursive: unlock unheld", pthread_mutex_unlock(&recursive), EPERM);

    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    check("errorcheck: init", pthread_mutex_init(&checking, &a), 0);
    pthread_mutexattr_destroy(&a);
    check("errorcheck: lock", pthread_mutex_lock(&checking), 0);
    check("errorcheck: lock again", pthread_mutex_lock(&checking), EDEADLK);

    check("rwlock: rdlock", pthread_rwlock_rdlock(&rw), 0);
    check("rwlock: wrlock while reading", pthread_rwlock_trywrlock(&rw), EBUSY);
    check("sem: init 1", sem_init(&sem, 0, 1), 0);

    pthread_t t;
    int created = pthread_create(&t, NULL, in_thread, NULL);
    pthread_mutex_lock(&flag_lock);
    while (!flag)
        pthread_cond_wait(&flag_set, &flag_lock);
    pthread_mutex_unlock(&flag_lock);
    check("create", created, 0); /* after the thread's checks: one writer at a time */
    void *value = NULL;
    check("join: value", pthread_join(t, &value) == 0 ? (long)value : -1, 42);
    check("join: main joins itself", pthread_join(pthread_self(), NULL), EDEADLK);

    pthread_attr_t da;
    pthread_attr_init(&da);
    pthread_attr_setdetachstate(&da, PTHREAD_CREATE_DETACHED);
    pthread_t d;
    check("create detached", pthread_create(&d, &da, detached, NULL), 0);
    pthread_attr_destroy(&da);
    pthread_mutex_lock(&flag_lock);
    while (flag != 2)
        pthread_cond_wait(&flag_set, &flag_lock);
    pthread_mutex_unlock(&flag_lock);

    check("rwlock: unlock", pthread_rwlock_unlock(&rw), 0);
    check("rwlock: trywrlock when free", pthread_rwlock_trywrlock(&rw), 0);
    check("rwlock: rdlock while writing (self)", pthread_rwlock_rdlock(&rw), EDEADLK);
    check("rwlock: unlock the write", pthread_rwlock_unlock(&rw), 0);
    check("errorcheck: unlock", pthread_mutex_unlock(&checking), 0);
    check("errorcheck: destroy", pthread_mutex_destroy(&checking), 0);
    int v = -1;
    sem_getvalue(&sem, &v);
    check("sem: value", v, 0);

    pthread_t w;
    pthread_create(&w, NULL, waits_for_go, (void *)10L);
    check("tryjoin: running", pthread_tryjoin_np(w, NULL), EBUSY);
    struct timespec soon;
    clock_gettime(CLOCK_REALTIME, &soon);
    soon.tv_nsec += 20000000;
    if (soon.tv_nsec >= 1000000000L) {
        soon.tv_sec++;
        soon.tv_nsec -= 1000000000L;
    }
    check("timedjoin: running, 20 ms", pthread_timedjoin_np(w, NULL, &soon), ETIMEDOUT);
    pthread_mutex_lock(&go_lock);
    go = 1;
    pthread_cond_signal(&go_cond);
    pthread_mutex_unlock(&go_lock);
    struct timespec later;
    clock_gettime(CLOCK_REALTIME, &later);
    later.tv_sec += 60;
    void *wv = NULL;
    check("timedjoin: ends, value (named itself)",
          pthread_timedjoin_np(w, &wv, &later) == 0 ? (long)wv : -1, 11);
    for (int i = 0; i < checks; i++) {
        printf("%-40s %ld%s\n", names[i], gots[i], gots[i] == wants[i] ? "" : " (WRONG)");
        failures += gots[i] != wants[i];
    }
    printf("semantics: %d checks, %d wrong: %s\n", checks, failures, failures ? "WRONG" : "ok");
    return failures != 0;
}
