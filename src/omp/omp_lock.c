/*
 * omp_lock.c — OpenMP's lock routines (simple and nestable).
 *
 * An omp_lock_t holds a lock id, the same on every node (the lock usually
 * lives in shared memory and is initialised once). Holding the lock is a
 * claim at node 0 (parallel_claim), so omp_test_lock can be told "busy" at
 * once, plus dsm_lock of the same id, which carries the holders' writes
 * from one to the next. While a node runs several threads of a team
 * (team_layout.c), they take a mutex of the node per lock first, so that
 * one of them at a time claims it from node 0 (an error-checking mutex: a
 * thread setting a lock it holds is told so, not hung); in a job of one
 * node that mutex is the lock. A nestable lock's owner (a thread) and
 * depth are known only to the node that holds it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "omp/omp_state.h"

typedef struct omp_lock_t { void *_lk; } omp_lock_t;
typedef struct omp_nest_lock_t { void *_lk; } omp_nest_lock_t;

/* Ids made on this node: unique across nodes without asking anyone. The
 * top TASK_LOCK_SPAN of each node's range hold its task queue's (task.c):
 * the one of them the node itself manages (a lock's manager is its id
 * modulo the nodes, sync/lock.c), so that a thief's request goes straight
 * to the queue's node and the node's own takes stay local. */
#define LOCK_IDS_PER_NODE 0x10000
#define TASK_LOCK_SPAN    256 /* as many nodes as a job may have */
static DSM_STATE atomic_uint next_lock;

int omp_task_lock_id(int node)
{
    int top = PARALLEL_LOCK_BASE + 16 + node * LOCK_IDS_PER_NODE + LOCK_IDS_PER_NODE - 1;
    return top - (int)(((unsigned)top - (unsigned)node) % (unsigned)job()->nodes);
}

static int new_id(void)
{
    unsigned n = atomic_fetch_add(&next_lock, 1);
    if (n >= LOCK_IDS_PER_NODE - TASK_LOCK_SPAN)
        log_fatal("more than %d OpenMP locks initialised on this node",
                  LOCK_IDS_PER_NODE - TASK_LOCK_SPAN);
    return PARALLEL_LOCK_BASE + 16 + job()->rank * LOCK_IDS_PER_NODE + (int)n;
}

static int id_of(void *lk, const char *what)
{
    uintptr_t v = (uintptr_t)lk;
    if (v <= (uintptr_t)PARALLEL_LOCK_BASE || v > (uintptr_t)INT32_MAX)
        log_fatal("%s of a lock that omp_init_lock did not initialise", what);
    return (int)v;
}

/* The node's mutex of a lock, for its threads (made on first use). */
struct node_mutex {
    pthread_mutex_t mutex;
    bool            ready;
};
static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    map;
} node_mutexes = {.lock = PTHREAD_MUTEX_INITIALIZER, .map = {.size = sizeof(struct node_mutex)}};

static pthread_mutex_t *node_mutex(int id)
{
    pthread_mutex_lock(&node_mutexes.lock);
    struct node_mutex *m = idmap_get(&node_mutexes.map, id);
    if (!m->ready) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
        pthread_mutex_init(&m->mutex, &a);
        pthread_mutexattr_destroy(&a);
        m->ready = true;
    }
    pthread_mutex_unlock(&node_mutexes.lock);
    return &m->mutex;
}

/* Whether the node's mutex is part of holding locks now: the node runs
 * several threads of a team, or is the whole job. */
static bool by_node_mutex(void) { return smp_multi(); }

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
    if (by_node_mutex()) {
        int err = pthread_mutex_trylock(node_mutex(id));
        if (err == EBUSY)
            return false;
        if (err)
            log_fatal("omp_test_lock: %s", strerror(err));
        if (!omp_self()->distributed)
            return true;
        if (!parallel_claim(id, true)) {
            pthread_mutex_unlock(node_mutex(id));
            struct timespec pause = {0, 200000}; /* as below */
            nanosleep(&pause, NULL);
            return false;
        }
        sync_lock(id);
        sync_flush_implied();
        return true;
    }
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
    if (by_node_mutex()) {
        int err = pthread_mutex_lock(node_mutex(id));
        if (err == EDEADLK)
            log_fatal("omp_set_lock of a lock this thread holds: a deadlock");
        if (err)
            log_fatal("omp_set_lock: %s", strerror(err));
        if (!omp_self()->distributed)
            return;
    }
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
    if (by_node_mutex()) {
        if (omp_self()->distributed) {
            sync_unlock(id);
            parallel_leave(id);
        }
        int err = pthread_mutex_unlock(node_mutex(id));
        if (err)
            log_fatal("omp_unset_lock of a lock this thread does not hold (%s)", strerror(err));
        return;
    }
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

/* OMPT (ompt.c): a lock's events name it by its address (its wait id);
 * ompt_mutex_t: lock 1, nest_lock 3 — a test reports the lock's own kind,
 * as libomp does (tools written for OpenMP 5.0 know no other). */
#define WAIT_ID(l) ((uint64_t)(uintptr_t)(l))

/* A new lock's handle (kind: 1 a lock, 3 a nest lock) and its lock_init
 * event; destroy_any clears the handle and reports lock_destroy (the
 * handle's address is the lock's: omp.h's lock is the handle alone). */
static void *init_any(int kind, const void *lock, int hint, const void *codeptr)
{
    void *handle = (void *)(uintptr_t)new_id();
    if (omp_tool_on)
        omp_tool_lock_init(kind, (unsigned)hint, WAIT_ID(lock), codeptr);
    return handle;
}

static void destroy_any(int kind, void **handle, const void *codeptr)
{
    *handle = NULL;
    if (omp_tool_on)
        omp_tool_lock_destroy(kind, WAIT_ID(handle), codeptr);
}

void omp_init_lock(omp_lock_t *l) { l->_lk = init_any(1, l, 0, __builtin_return_address(0)); }
void omp_init_lock_with_hint(omp_lock_t *l, int hint)
{
    l->_lk = init_any(1, l, hint, __builtin_return_address(0));
}

void omp_destroy_lock(omp_lock_t *l) { destroy_any(1, &l->_lk, __builtin_return_address(0)); }

void omp_set_lock(omp_lock_t *l)
{
    PROFILE_SITE();
    int id = id_of(l->_lk, "omp_set_lock");
    if (!omp_tool_on) {
        take(id);
        return;
    }
    const void *codeptr = __builtin_return_address(0);
    omp_tool_mutex_acquire(1, 0, WAIT_ID(l), codeptr);
    take(id);
    omp_tool_mutex_acquired(1, WAIT_ID(l), codeptr);
}

void omp_unset_lock(omp_lock_t *l)
{
    drop(id_of(l->_lk, "omp_unset_lock"));
    if (omp_tool_on)
        omp_tool_mutex_released(1, WAIT_ID(l), __builtin_return_address(0));
}

int omp_test_lock(omp_lock_t *l)
{
    int id = id_of(l->_lk, "omp_test_lock");
    if (!omp_tool_on)
        return try_take(id);
    const void *codeptr = __builtin_return_address(0);
    omp_tool_mutex_acquire(1, 0, WAIT_ID(l), codeptr);
    int got = try_take(id);
    if (got)
        omp_tool_mutex_acquired(1, WAIT_ID(l), codeptr);
    return got;
}

/* Nestable locks: the thread of this node holding each, and at what
 * depth (0: not held here). Only the holder changes its record. */
struct nest_hold {
    int       depth;
    pthread_t owner;
};
static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    depth;
} nests = {.lock = PTHREAD_MUTEX_INITIALIZER, .depth = {.size = sizeof(struct nest_hold)}};

static struct nest_hold *hold_of(int id)
{
    pthread_mutex_lock(&nests.lock);
    struct nest_hold *d = idmap_get(&nests.depth, id);
    pthread_mutex_unlock(&nests.lock);
    return d;
}

/* Whether this thread holds it (read under the table's mutex: another
 * thread of the node may be changing the record). */
static bool held_here(struct nest_hold *d)
{
    pthread_mutex_lock(&nests.lock);
    bool mine = d->depth > 0 && pthread_equal(d->owner, pthread_self());
    pthread_mutex_unlock(&nests.lock);
    return mine;
}

static void set_hold(struct nest_hold *d, int depth)
{
    pthread_mutex_lock(&nests.lock);
    d->depth = depth;
    d->owner = pthread_self();
    pthread_mutex_unlock(&nests.lock);
}

void omp_init_nest_lock(omp_nest_lock_t *l)
{
    l->_lk = init_any(3, l, 0, __builtin_return_address(0));
}
void omp_init_nest_lock_with_hint(omp_nest_lock_t *l, int hint)
{
    l->_lk = init_any(3, l, hint, __builtin_return_address(0));
}

void omp_destroy_nest_lock(omp_nest_lock_t *l)
{
    destroy_any(3, &l->_lk, __builtin_return_address(0));
}

/* A nestable lock's events: acquire, then acquired when it is first
 * taken, nest_lock begin when taken again; released when it is let go
 * for the last time, nest_lock end before that. */
void omp_set_nest_lock(omp_nest_lock_t *l)
{
    PROFILE_SITE();
    int id = id_of(l->_lk, "omp_set_nest_lock");
    const void *codeptr = __builtin_return_address(0);
    if (omp_tool_on)
        omp_tool_mutex_acquire(3, 0, WAIT_ID(l), codeptr);
    struct nest_hold *d = hold_of(id);
    if (!held_here(d)) {
        take(id);
        set_hold(d, 1);
        if (omp_tool_on)
            omp_tool_mutex_acquired(3, WAIT_ID(l), codeptr);
        return;
    }
    set_hold(d, d->depth + 1);
    if (omp_tool_on)
        omp_tool_nest_lock(true, WAIT_ID(l), codeptr);
}

void omp_unset_nest_lock(omp_nest_lock_t *l)
{
    int id = id_of(l->_lk, "omp_unset_nest_lock");
    struct nest_hold *d = hold_of(id);
    if (!held_here(d))
        log_fatal("omp_unset_nest_lock of a lock this thread does not hold");
    int depth = d->depth - 1;
    set_hold(d, depth);
    if (depth == 0)
        drop(id);
    if (omp_tool_on) {
        if (depth == 0)
            omp_tool_mutex_released(3, WAIT_ID(l), __builtin_return_address(0));
        else
            omp_tool_nest_lock(false, WAIT_ID(l), __builtin_return_address(0));
    }
}

int omp_test_nest_lock(omp_nest_lock_t *l)
{
    int id = id_of(l->_lk, "omp_test_nest_lock");
    const void *codeptr = __builtin_return_address(0);
    if (omp_tool_on)
        omp_tool_mutex_acquire(3, 0, WAIT_ID(l), codeptr);
    struct nest_hold *d = hold_of(id);
    if (held_here(d)) {
        set_hold(d, d->depth + 1);
        if (omp_tool_on)
            omp_tool_nest_lock(true, WAIT_ID(l), codeptr);
        return d->depth;
    }
    if (!try_take(id))
        return 0;
    set_hold(d, 1);
    if (omp_tool_on)
        omp_tool_mutex_acquired(3, WAIT_ID(l), codeptr);
    return 1;
}
