/*
 * omp_lock.c — OpenMP's lock routines (simple and nestable).
 *
 * An omp_lock_t holds a lock id, the same on every node (the lock usually
 * lives in shared memory and is initialised once). Holding the lock is a
 * claim at node 0 (parallel_claim), so omp_test_lock can be told "busy" at
 * once, plus dsm_lock of the same id, which carries the holders' writes
 * from one to the next. A nestable lock's owner and depth are known only
 * to the node that holds it: one thread per node, so the node is the owner.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "omp/omp_state.h"

typedef struct omp_lock_t { void *_lk; } omp_lock_t;
typedef struct omp_nest_lock_t { void *_lk; } omp_nest_lock_t;

/* Ids made on this node: unique across nodes without asking anyone. */
#define LOCK_IDS_PER_NODE 0x10000
static DSM_STATE atomic_uint next_lock;

static int new_id(void)
{
    unsigned n = atomic_fetch_add(&next_lock, 1);
    if (n >= LOCK_IDS_PER_NODE)
        log_fatal("more than %d OpenMP locks initialised on this node", LOCK_IDS_PER_NODE);
    return PARALLEL_LOCK_BASE + 16 + job()->rank * LOCK_IDS_PER_NODE + (int)n;
}

static int id_of(void *lk, const char *what)
{
    uintptr_t v = (uintptr_t)lk;
    if (v <= (uintptr_t)PARALLEL_LOCK_BASE || v > (uintptr_t)INT32_MAX)
        log_fatal("%s of a lock that omp_init_lock did not initialise", what);
    return (int)v;
}

/* In a program of one thread (no job, or one node) a lock is a flag. */
static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    held;
} alone = {.lock = PTHREAD_MUTEX_INITIALIZER, .held = {.size = sizeof(bool)}};

static bool *held_alone(int id)
{
    pthread_mutex_lock(&alone.lock);
    bool *h = idmap_get(&alone.held, id);
    pthread_mutex_unlock(&alone.lock);
    return h;
}

static bool try_take(int id)
{
    if (!omp_self()->distributed) {
        bool *h = held_alone(id);
        if (*h)
            return false;
        return *h = true;
    }
    if (!parallel_claim(id, true)) {
        /* Programs spin on omp_test_lock. Each try is a message to node 0,
         * whose service thread also serves the holder: a pause between
         * failed tries keeps a spinning team from starving it (under sc
         * with 8 nodes on 2 cores, spinning without one stalled the test
         * of this for tens of seconds). */
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        return false;
    }
    sync_lock(id);
    sync_flush_implied(); /* a successful test's flush (sync/flush.c) */
    return true;
}

static void take(int id)
{
    if (!omp_self()->distributed) {
        if (!try_take(id))
            log_fatal("omp_set_lock of a lock the only thread holds: a deadlock");
        return;
    }
    parallel_claim(id, false);
    sync_lock(id);
    sync_flush_implied(); /* a set's flush (sync/flush.c) */
}

static void drop(int id)
{
    if (!omp_self()->distributed) {
        bool *h = held_alone(id);
        if (!*h)
            log_fatal("omp_unset_lock of a lock nobody holds");
        *h = false;
        return;
    }
    sync_unlock(id);
    parallel_leave(id);
}

void omp_init_lock(omp_lock_t *l) { l->_lk = (void *)(uintptr_t)new_id(); }
void omp_init_lock_with_hint(omp_lock_t *l, int hint) { (void)hint, omp_init_lock(l); }
void omp_destroy_lock(omp_lock_t *l) { l->_lk = NULL; }
void omp_set_lock(omp_lock_t *l) { take(id_of(l->_lk, "omp_set_lock")); }
void omp_unset_lock(omp_lock_t *l) { drop(id_of(l->_lk, "omp_unset_lock")); }
int omp_test_lock(omp_lock_t *l) { return try_take(id_of(l->_lk, "omp_test_lock")); }

/* Nestable locks: the depth this node holds each at (0: not held here). */
static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    depth;
} nests = {.lock = PTHREAD_MUTEX_INITIALIZER, .depth = {.size = sizeof(int)}};

static int *depth_of(int id)
{
    pthread_mutex_lock(&nests.lock);
    int *d = idmap_get(&nests.depth, id);
    pthread_mutex_unlock(&nests.lock);
    return d;
}

void omp_init_nest_lock(omp_nest_lock_t *l) { l->_lk = (void *)(uintptr_t)new_id(); }
void omp_init_nest_lock_with_hint(omp_nest_lock_t *l, int hint) { (void)hint, omp_init_nest_lock(l); }
void omp_destroy_nest_lock(omp_nest_lock_t *l) { l->_lk = NULL; }

void omp_set_nest_lock(omp_nest_lock_t *l)
{
    int id = id_of(l->_lk, "omp_set_nest_lock");
    int *d = depth_of(id);
    if (*d == 0)
        take(id);
    ++*d;
}

void omp_unset_nest_lock(omp_nest_lock_t *l)
{
    int id = id_of(l->_lk, "omp_unset_nest_lock");
    int *d = depth_of(id);
    if (*d == 0)
        log_fatal("omp_unset_nest_lock of a lock this thread does not hold");
    if (--*d == 0)
        drop(id);
}

int omp_test_nest_lock(omp_nest_lock_t *l)
{
    int id = id_of(l->_lk, "omp_test_nest_lock");
    int *d = depth_of(id);
    if (*d == 0 && !try_take(id))
        return 0;
    return ++*d;
}
