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

int main(int argc, char **argv)
{
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
