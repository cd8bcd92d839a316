/*
 * A process-shared pthread object in dsm's shared memory, in a program on
 * dsm's API (not dsmcc): refused at its init in one line naming the call
 * and the address (src/sync/pshared.c); before, two nodes' threads took
 * one such mutex each in its own copy and the job hung in futex_wait.
 *
 *   test_pshared mutex|cond|barrier|rwlock|sem   node 0 inits one in
 *                          dsm_malloc memory (must end the job)
 *   test_pshared private   what stays the C library's works: process-shared
 *                          objects in private memory, private ones in
 *                          shared memory (prints "private: ok")
 *   test_pshared fork      fork style (dsm_startup_fork; --threads 2 too):
 *                          main inits a process-shared mutex in dsm_malloc
 *                          memory and every thread of every node takes it
 *                          (must end the job at the init; issue 83, point
 *                          3: linked with libdsm.a it was not refused, and
 *                          the job hung)
 */
#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#include "mp_util.h"

static void init_shared(const char *kind, void *obj)
{
    if (!strcmp(kind, "mutex")) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(obj, &a);
    } else if (!strcmp(kind, "cond")) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_cond_init(obj, &a);
    } else if (!strcmp(kind, "barrier")) {
        pthread_barrierattr_t a;
        pthread_barrierattr_init(&a);
        pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_barrier_init(obj, &a, 2);
    } else if (!strcmp(kind, "rwlock")) {
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_rwlock_init(obj, &a);
    } else {
        sem_init(obj, 1, 1);
    }
}

/* Fork style's workers, and main: each thread takes the mutex in turn. */
struct counted { pthread_mutex_t m; long count; };

static void take_turns(void *arg)
{
    struct counted *c = arg;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&c->m);
        c->count++;
        pthread_mutex_unlock(&c->m);
    }
}

static int fork_style(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv);
    struct counted *c = dsm_malloc(sizeof *c);
    printf("object %p\n", (void *)&c->m);
    fflush(stdout);
    init_shared("mutex", &c->m);
    printf("reached\n");
    fflush(stdout);
    dsm_create(take_turns, c);
    take_turns(c);
    dsm_wait_for_end();
    printf("count %ld of %d\n", c->count, 100 * dsm_thread_count());
    dsm_finish();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "fork"))
        return fork_style(argc, argv);
    dsm_startup(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "private";
    void *shared = dsm_malloc(4096);
    if (!strcmp(mode, "private")) {
        static char priv[256] __attribute__((aligned(64)));
        static const char *const kinds[] = {"mutex", "cond", "barrier", "rwlock", "sem"};
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            init_shared(kinds[i], priv);      /* process-shared, private memory */
        pthread_mutex_t *m = shared;           /* private, shared memory */
        MP_CHECK(pthread_mutex_init(m, NULL) == 0, "pthread_mutex_init");
        MP_CHECK(pthread_mutex_lock(m) == 0 && pthread_mutex_unlock(m) == 0, "lock and unlock");
        dsm_barrier();
        if (dsm_rank() == 0)
            printf("private: ok\n");
    } else {
        dsm_barrier();
        if (dsm_rank() == 0) {
            printf("object %p\n", shared);
            fflush(stdout);
            init_shared(mode, shared);
            printf("reached\n");
        }
        dsm_barrier();
    }
    dsm_finish();
    return 0;
}
