/*
 * smp.h — a node's application threads (dsmrun --threads T; docs/design.md,
 * "SMP nodes").
 *
 * With T = 1 (the default) nothing here changes a path: smp_multi() is
 * false and every caller keeps today's code. With T > 1 the protocol acts
 * per node while T threads run: smp_concurrent() says whether other
 * threads of this node may be running now (they may not while the node's
 * barrier leader works, all the others being parked in it).
 */
#ifndef DSM_BASE_SMP_H
#define DSM_BASE_SMP_H
#include <stdbool.h>

/* T, set once at startup (DSM_THREADS) before any thread is started. */
void smp_set_threads(int threads);
int  smp_threads(void);
static inline bool smp_multi(void)
{
    extern int smp_threads_per_node;
    return smp_threads_per_node > 1;
}

/* The calling thread's index on its node, 0 .. T-1 (0: the thread that
 * joined the job, the master's caller of dsm_create, a worker node's
 * worker thread). A thread the runtime starts sets its own. */
int  smp_index(void);
void smp_set_index(int index);

/* Whether another application thread of this node may run now: T > 1 and
 * the node's threads are not all parked in a barrier (smp_park). */
bool smp_concurrent(void);
/* The barrier's leader, the node's other threads waiting for it. */
void smp_park(bool parked);
#endif
