/* smp_util.h — helpers for the SMP-node tests (dsmrun --threads T): fork
 * style, every thread of every node runs the same function. */
#ifndef DSM_TEST_SMP_UTIL_H
#define DSM_TEST_SMP_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dsm.h"

#define SMP_CHECK(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "node %d thread %d: %s:%d: check failed: %s: ",    \
                    dsm_rank(), dsm_thread_id(), __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static inline uint64_t smp_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Starts the job fork style and runs fn on every thread of every node
 * (the master's caller too), then ends it. */
static inline int smp_run(int *argc, char ***argv, void (*setup)(void), void (*fn)(void *))
{
    dsm_startup_fork(argc, argv);
    if (setup)
        setup();
    dsm_create(fn, NULL);
    fn(NULL);
    dsm_wait_for_end();
    dsm_finish();
    return 0;
}
#endif
