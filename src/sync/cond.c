/*
 * cond.c — condition variables (seed 001).
 *
 * Each condition has a manager (id mod N) holding its queue of waiting
 * nodes. A waiter registers and waits for the manager to confirm before it
 * releases the lock, so a signal sent by whoever takes the lock next can
 * never overtake the registration. A wake carries no data: the woken node
 * re-acquires the lock, and the lock brings the write notices.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "sync/sync.h"

struct cond_state {
    int   *waiters;   /* at the manager: FIFO of waiting nodes */
    size_t n, cap;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    int             rank, nodes;
    struct idmap    map;
    bool            queued, woken;  /* this node's single wait in progress */
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* At the manager; caller holds C.lock. */
static void enqueue(int cond, int node)
{
    struct cond_state *c = idmap_get(&C.map, cond);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->waiters = realloc(c->waiters, c->cap * sizeof *c->waiters);
        if (!c->waiters)
            log_fatal("out of memory for a condition variable");
    }
    c->waiters[c->n++] = node;
}

static void wake(int node)
{
    if (node == C.rank) {
        C.woken = true;
        ipc_notify();
    } else
        ipc_send(node, IPC_COND_WAKE, 0, NULL, 0);
}

/* At the manager; caller holds C.lock. */
static void signal_waiters(int cond, bool all)
{
    struct cond_state *c = idmap_get(&C.map, cond);
    size_t n = all ? c->n : (c->n ? 1 : 0);
    for (size_t i = 0; i < n; i++)
        wake(c->waiters[i]);
    if (n && c->n > n)
        memmove(c->waiters, c->waiters + n, (c->n - n) * sizeof *c->waiters);
    c->n -= n;
}

static int32_t cond_id(int src, const void *msg, size_t len)
{
    int32_t id;
    ipc_body(src, msg, len, &id, sizeof id, NULL, "condition message");
    if (id < 0 || id % C.nodes != C.rank)
        log_fatal("node %d sent condition %d to the wrong manager", src, id);
    return id;
}

static void on_wait(int src, const void *msg, size_t len)
{
    int32_t id = cond_id(src, msg, len);
    pthread_mutex_lock(&C.lock);
    enqueue(id, src);
    pthread_mutex_unlock(&C.lock);
    ipc_send(src, IPC_COND_QUEUED, 0, NULL, 0);
}

static void on_signal(int src, const void *msg, size_t len)
{
    int32_t id = cond_id(src, msg, len);
    pthread_mutex_lock(&C.lock);
    signal_waiters(id, ipc_msg_aux(msg) != 0);
    pthread_mutex_unlock(&C.lock);
}

static void on_queued(int src, const void *msg, size_t len)
{
    (void)src, (void)msg, (void)len;
    pthread_mutex_lock(&C.lock);
    C.queued = true;
    pthread_mutex_unlock(&C.lock);
    ipc_notify();
}

static void on_wake(int src, const void *msg, size_t len)
{
    (void)src, (void)msg, (void)len;
    pthread_mutex_lock(&C.lock);
    C.woken = true;
    pthread_mutex_unlock(&C.lock);
    ipc_notify();
}

static bool flag_set(void *arg)
{
    bool *flag = arg;
    pthread_mutex_lock(&C.lock);
    bool v = *flag;
    pthread_mutex_unlock(&C.lock);
    return v;
}

void dsm_cond_wait(int cond, int lock)
{
    if (cond < 0)
        log_fatal("dsm_cond_wait(%d): condition ids are >= 0", cond);
    uint64_t t0 = clock_ns();
    int manager = cond % C.nodes;
    pthread_mutex_lock(&C.lock);
    C.queued = C.woken = false;
    if (manager == C.rank) {
        enqueue(cond, C.rank);
        C.queued = true;
    }
    pthread_mutex_unlock(&C.lock);
    if (manager != C.rank) {
        int32_t id = cond;
        ipc_send(manager, IPC_COND_WAIT, 0, &id, sizeof id);
        ipc_wait(flag_set, &C.queued, 0);
    }
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
    dsm_unlock(lock); /* dsm_unlock and dsm_lock count their own time */
    uint64_t t1 = clock_ns();
    ipc_wait(flag_set, &C.woken, 0);
    stats_add(STAT_T_LOCK_NS, clock_ns() - t1);
    dsm_lock(lock);
}

static void cond_signal(int cond, bool all)
{
    if (cond < 0)
        log_fatal("dsm_cond_signal(%d): condition ids are >= 0", cond);
    int manager = cond % C.nodes;
    if (manager == C.rank) {
        pthread_mutex_lock(&C.lock);
        signal_waiters(cond, all);
        pthread_mutex_unlock(&C.lock);
        return;
    }
    int32_t id = cond;
    ipc_send(manager, IPC_COND_SIGNAL, all, &id, sizeof id);
}

void dsm_cond_signal(int cond) { cond_signal(cond, false); }
void dsm_cond_broadcast(int cond) { cond_signal(cond, true); }

void sync_cond_start(int rank, int nodes)
{
    C.rank = rank;
    C.nodes = nodes;
    C.map.size = sizeof(struct cond_state);
    ipc_register(IPC_COND_WAIT, on_wait, NULL);
    ipc_register(IPC_COND_QUEUED, on_queued, NULL);
    ipc_register(IPC_COND_SIGNAL, on_signal, NULL);
    ipc_register(IPC_COND_WAKE, on_wake, NULL);
}

void sync_start(int rank, int nodes)
{
    sync_lock_start(rank, nodes);
    sync_barrier_start(rank, nodes);
    sync_cond_start(rank, nodes);
}
