/*
 * cohort.c — a node's threads synchronise among themselves first
 * (dsmrun --threads T > 1; docs/design.md, "SMP nodes").
 *
 * Barrier: the node's T threads meet in memory; the last to arrive runs
 * the node's barrier (barrier.c: one arrival up the tree, one release
 * down) while the others are parked, then wakes them. They wait spinning
 * briefly before they sleep (base/spin.h), and the leader signals only
 * those that sleep. A lock: a mutex of
 * the node per lock id is taken first, then lock.c's lock of the node,
 * which stays here without a message until another node asks for it
 * (ArgoDSM's cohort locks; lock.c keeps the release on the node). A try
 * tries both, and gives the node's mutex back when the job's is busy. Only
 * with T > 1, or a pthreads program's threads taking turns on a node's run
 * slots: the public calls take these paths behind smp_threaded(). A lock's
 * waits (the node's mutex, the grant) give the waiter's run slot up.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/spin.h"
#include "base/state.h"
#include "sync/sync.h"

struct cohort {
    pthread_mutex_t mutex;
    bool            ready;
    _Atomic bool      held;  /* by `owner` (written by the holder only) */
    _Atomic pthread_t owner;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    pthread_cond_t  cv;
    int             arrived;    /* threads in the barrier of this generation */
    const char     *op;         /* what the first of them called */
    /* Barriers the node has passed: written under lock, read without it
     * by spinning waiters (the leader's store releases what it did). */
    _Atomic uint64_t generation;
    int             sleepers;   /* waiters on cv (under lock) */
    struct idmap    cohorts;    /* lock id -> struct cohort (under lock) */
    /* The broadcast in progress (under lock): each thread's buffer, and
     * the length and root it asked for. */
    struct bcast_part { void *buf; size_t len; int root; } *parts;
} node = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
          .cohorts = {.size = sizeof(struct cohort)}};

/* The arrival of the calling thread at `op`; caller holds node.lock. A
 * thread that calls another collective than its node's first arrival did
 * would wait forever: said instead. */
/* One allowance for every wait on node.lock (spin.h). */
static void node_lock(void)
{
    static __thread struct spin spin;
    spin_mutex_lock(&spin, &node.lock);
}

static void arrive(const char *op)
{
    if (node.arrived && strcmp(node.op, op))
        log_fatal("threads of node %d called %s and %s at once: every thread must make the "
                  "same collective call", job()->rank, node.op, op);
    node.op = op;
}

struct generation_wait { uint64_t generation; };

static bool generation_passed(void *arg)
{
    const struct generation_wait *w = arg;
    return atomic_load_explicit(&node.generation, memory_order_acquire) != w->generation;
}

/* A thread that is not the last waits until the leader has passed the
 * node's barrier: spinning first, then on cv, counted as a sleeper. */
static void node_wait(uint64_t generation)
{
    static __thread struct spin spin;
    struct generation_wait w = {generation};
    if (spin_until(&spin, generation_passed, &w))
        return;
    pthread_mutex_lock(&node.lock);
    node.sleepers++;
    while (!generation_passed(&w))
        pthread_cond_wait(&node.cv, &node.lock);
    node.sleepers--;
    pthread_mutex_unlock(&node.lock);
}

/* The leader lets the others go. The store is made under lock, so a
 * waiter that counted itself a sleeper either saw it or is on cv by now:
 * the broadcast, after the unlock, reaches it (and is skipped when every
 * waiter is still spinning). */
static void node_advance(void)
{
    pthread_mutex_lock(&node.lock);
    atomic_fetch_add_explicit(&node.generation, 1, memory_order_release);
    bool sleepers = node.sleepers > 0;
    pthread_mutex_unlock(&node.lock);
    if (sleepers)
        pthread_cond_broadcast(&node.cv);
}

void sync_node_meet(const char *op, void (*fn)(void *), void *arg)
{
    node_lock();
    arrive(op);
    uint64_t generation = node.generation;
    if (++node.arrived < smp_threads()) {
        pthread_mutex_unlock(&node.lock);
        node_wait(generation);
        return;
    }
    node.arrived = 0;
    pthread_mutex_unlock(&node.lock);
    /* Every other thread of the node waits above: a barrier's release may
     * leave its write-protects for after its message, as with one thread. */
    smp_park(true);
    fn(arg);
    smp_park(false);
    node_advance();
}

struct barrier_call { void (*node_barrier)(void); };

static void barrier_call(void *arg) { ((struct barrier_call *)arg)->node_barrier(); }

void sync_node_barrier(void (*node_barrier)(void))
{
    struct barrier_call c = {node_barrier};
    sync_node_meet("dsm_barrier", barrier_call, &c);
}

/* The threads of the node meet as at a barrier, each leaving its buffer;
 * the last runs the node's broadcast (root node: from the root thread's
 * buffer; elsewhere into a buffer of the node's) and copies the data into
 * every other thread's buffer before it wakes them. */
void sync_node_bcast(void *buf, size_t len, int root,
                     void (*node_bcast)(void *buf, size_t len, int root_node))
{
    int threads = smp_threads(), me = smp_index();
    int all = job()->nodes * threads;
    if (root < 0 || root >= all)
        log_fatal("dsm_bcast: root %d is not a thread of the job (0 to %d with DSM_THREADS=%d)",
                  root, all - 1, threads);
    node_lock();
    arrive("dsm_bcast");
    if (!node.parts && !(node.parts = calloc((size_t)threads, sizeof *node.parts)))
        log_fatal("out of memory for a broadcast");
    node.parts[me] = (struct bcast_part){buf, len, root};
    uint64_t generation = node.generation;
    if (++node.arrived < threads) {
        pthread_mutex_unlock(&node.lock);
        node_wait(generation);
        return;
    }
    node.arrived = 0;
    pthread_mutex_unlock(&node.lock);
    for (int t = 0; t < threads; t++)
        if (node.parts[t].len != len || node.parts[t].root != root)
            log_fatal("dsm_bcast: threads of node %d asked for %zu bytes from thread %d and %zu "
                      "bytes from thread %d: every thread must make the same call",
                      job()->rank, len, root, node.parts[t].len, node.parts[t].root);
    int root_node = root / threads;
    void *data = root_node == job()->rank ? node.parts[root % threads].buf : malloc(len ? len : 1);
    if (!data)
        log_fatal("out of memory for a broadcast");
    smp_park(true);
    node_bcast(data, len, root_node);
    smp_park(false);
    /* Outside the lock: a buffer may be shared memory, and touching it may
     * fault. */
    for (int t = 0; t < threads; t++)
        if (node.parts[t].buf != data)
            memcpy(node.parts[t].buf, data, len);
    if (root_node != job()->rank)
        free(data);
    node_advance();
}

static struct cohort *cohort_of(int id)
{
    node_lock();
    struct cohort *c = idmap_get(&node.cohorts, id);
    if (!c->ready) {
        pthread_mutex_init(&c->mutex, NULL);
        c->ready = true;
    }
    pthread_mutex_unlock(&node.lock);
    return c;
}

void sync_cohort_lock(int id)
{
    struct cohort *c = cohort_of(id);
    /* Read without the mutex: only this thread can have set it to itself. */
    if (c->held && pthread_equal(c->owner, pthread_self()))
        log_fatal("dsm_lock(%d): this thread already holds it", id);
    static __thread struct spin spin;
    if (pthread_mutex_trylock(&c->mutex)) {
        /* Held by another thread of the node, which may need our run slot
         * to get to its unlock. */
        smp_wait_begin();
        if (smp_may_spin())
            spin_mutex_lock(&spin, &c->mutex);
        else
            pthread_mutex_lock(&c->mutex);
        smp_wait_end();
    }
    c->owner = pthread_self();
    c->held = true;
    sync_lock_yielding(id);
}

bool sync_cohort_trylock(int id)
{
    struct cohort *c = cohort_of(id);
    if (pthread_mutex_trylock(&c->mutex))
        return false; /* this thread or another of the node has it */
    c->owner = pthread_self();
    c->held = true;
    if (sync_lock_try(id))
        return true;
    c->held = false;
    pthread_mutex_unlock(&c->mutex);
    return false;
}

void sync_cohort_unlock(int id)
{
    struct cohort *c = cohort_of(id);
    if (!c->held || !pthread_equal(c->owner, pthread_self()))
        log_fatal("dsm_unlock(%d): this thread does not hold it", id);
    sync_unlock(id);
    c->held = false;
    pthread_mutex_unlock(&c->mutex);
}

/* One line for a call that has no meaning across a node's threads yet. */
void sync_refuse_threads(const char *call)
{
    if (smp_multi())
        log_fatal("%s with DSM_THREADS=%d (dsmrun --threads): not supported across a node's "
                  "threads yet; run with --threads 1 (docs/design.md, SMP nodes)",
                  call, smp_threads());
}
