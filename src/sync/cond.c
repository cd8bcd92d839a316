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

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/stats.h"
#include "base/trace.h"
#include "sync/sync.h"

struct cond_state {
    int      *waiters;   /* at the manager: FIFO of waiting nodes */
    uint32_t *tokens;    /* with DSM_THREADS > 1: which of the node's waits */
    size_t    n, cap;
};

/* With DSM_THREADS > 1 a node may have one wait per thread in progress:
 * each has a token, which its registration carries to the manager (in the
 * message's aux field) and the manager's confirmation and wake-up carry
 * back. With one thread the token is 0 and the messages are as before. */
struct thread_wait {
    uint32_t            token;
    bool                queued, woken;
    struct thread_wait *next;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    map;
    bool            queued, woken;  /* this node's single wait in progress */
    struct thread_wait *waits;      /* with threads: the node's waits in progress */
    uint32_t        last_token;
} conds = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* At the manager; caller holds conds.lock. */
static void enqueue(int cond, int node, uint32_t token)
{
    struct cond_state *c = idmap_get(&conds.map, cond);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->waiters = realloc(c->waiters, c->cap * sizeof *c->waiters);
        c->tokens = realloc(c->tokens, c->cap * sizeof *c->tokens);
        if (!c->waiters || !c->tokens)
            log_fatal("out of memory for a condition variable");
    }
    c->tokens[c->n] = token;
    c->waiters[c->n++] = node;
}

/* This node's wait with `token`; caller holds conds.lock. */
static struct thread_wait *wait_of(int src, uint32_t token)
{
    for (struct thread_wait *w = conds.waits; w; w = w->next)
        if (w->token == token)
            return w;
    log_fatal("node %d answered a condition wait this node is not in (token %u)", src, token);
}

/* Caller holds conds.lock. */
static void wake(int node, uint32_t token)
{
    if (node == job()->rank) {
        if (token)
            wait_of(node, token)->woken = true;
        else
            conds.woken = true;
        ipc_notify();
    } else
        ipc_send(node, SYNC_COND_WAKE, token, NULL, 0);
}

/* At the manager; caller holds conds.lock. */
static void signal_waiters(int cond, bool all)
{
    struct cond_state *c = idmap_get(&conds.map, cond);
    size_t n = all ? c->n : (c->n ? 1 : 0);
    for (size_t i = 0; i < n; i++)
        wake(c->waiters[i], c->tokens[i]);
    if (n && c->n > n) {
        memmove(c->waiters, c->waiters + n, (c->n - n) * sizeof *c->waiters);
        memmove(c->tokens, c->tokens + n, (c->n - n) * sizeof *c->tokens);
    }
    c->n -= n;
}

static int32_t cond_id(int src, const void *msg, size_t len)
{
    int32_t id;
    ipc_body(src, msg, len, &id, sizeof id, NULL, "condition message");
    if (id < 0 || id % job()->nodes != job()->rank)
        log_fatal("node %d sent condition %d to the wrong manager", src, id);
    return id;
}

static void on_wait(int src, const void *msg, size_t len)
{
    int32_t id = cond_id(src, msg, len);
    uint32_t token = ipc_msg_aux(msg);
    pthread_mutex_lock(&conds.lock);
    enqueue(id, src, token);
    pthread_mutex_unlock(&conds.lock);
    ipc_send(src, SYNC_COND_QUEUED, token, NULL, 0);
}

static void on_signal(int src, const void *msg, size_t len)
{
    int32_t id = cond_id(src, msg, len);
    pthread_mutex_lock(&conds.lock);
    signal_waiters(id, ipc_msg_aux(msg) != 0);
    pthread_mutex_unlock(&conds.lock);
}

static void on_queued(int src, const void *msg, size_t len)
{
    (void)len;
    uint32_t token = ipc_msg_aux(msg);
    pthread_mutex_lock(&conds.lock);
    if (token)
        wait_of(src, token)->queued = true;
    else
        conds.queued = true;
    pthread_mutex_unlock(&conds.lock);
    ipc_notify();
}

static void on_wake(int src, const void *msg, size_t len)
{
    (void)len;
    uint32_t token = ipc_msg_aux(msg);
    pthread_mutex_lock(&conds.lock);
    if (token)
        wait_of(src, token)->woken = true;
    else
        conds.woken = true;
    pthread_mutex_unlock(&conds.lock);
    ipc_notify();
}

static bool flag_set(void *arg)
{
    bool *flag = arg;
    pthread_mutex_lock(&conds.lock);
    bool v = *flag;
    pthread_mutex_unlock(&conds.lock);
    return v;
}

static void cond_wait_here(int cond, int lock)
{
    if (cond < 0)
        log_fatal("dsm_cond_wait(%d): condition ids are >= 0", cond);
    uint64_t t0 = clock_ns();
    int manager = cond % job()->nodes;
    pthread_mutex_lock(&conds.lock);
    conds.queued = conds.woken = false;
    if (manager == job()->rank) {
        enqueue(cond, job()->rank, 0);
        conds.queued = true;
    }
    pthread_mutex_unlock(&conds.lock);
    if (manager != job()->rank) {
        int32_t id = cond;
        ipc_send(manager, SYNC_COND_WAIT, 0, &id, sizeof id);
        ipc_wait(flag_set, &conds.queued, 0);
    }
    uint64_t t_queued = clock_ns();
    stats_add(STAT_T_LOCK_NS, t_queued - t0);
    if (TRACE_ON)
        trace_put(TRACE_COND, 0, 0, (uint32_t)cond, t0, t_queued, t_queued);
    sync_unlock(lock); /* sync_unlock and sync_lock count their own time */
    uint64_t t1 = clock_ns();
    ipc_wait(flag_set, &conds.woken, 0);
    uint64_t t_woken = clock_ns();
    stats_add(STAT_T_LOCK_NS, t_woken - t1);
    if (TRACE_ON)
        trace_put(TRACE_COND, 1, 0, (uint32_t)cond, t1, t_woken, t_woken);
    sync_lock(lock);
}

/* With DSM_THREADS > 1: the calling thread's wait, under the node's hold
 * of `lock` (cohort.c), which it gives up and takes again. */
static void cond_wait_threads(int cond, int lock)
{
    if (cond < 0)
        log_fatal("dsm_cond_wait(%d): condition ids are >= 0", cond);
    uint64_t t0 = clock_ns();
    int manager = cond % job()->nodes;
    struct thread_wait w = {0};
    pthread_mutex_lock(&conds.lock);
    w.token = ++conds.last_token ? conds.last_token : ++conds.last_token; /* never 0 */
    w.next = conds.waits;
    conds.waits = &w;
    if (manager == job()->rank) {
        enqueue(cond, job()->rank, w.token);
        w.queued = true;
    }
    pthread_mutex_unlock(&conds.lock);
    if (manager != job()->rank) {
        int32_t id = cond;
        ipc_send(manager, SYNC_COND_WAIT, w.token, &id, sizeof id);
        ipc_wait(flag_set, &w.queued, 0);
    }
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
    sync_cohort_unlock(lock);
    uint64_t t1 = clock_ns();
    ipc_wait(flag_set, &w.woken, 0);
    stats_add(STAT_T_LOCK_NS, clock_ns() - t1);
    pthread_mutex_lock(&conds.lock);
    struct thread_wait **pp = &conds.waits;
    while (*pp != &w)
        pp = &(*pp)->next;
    *pp = w.next;
    pthread_mutex_unlock(&conds.lock);
    sync_cohort_lock(lock);
}

static void cond_signal(int cond, bool all)
{
    if (cond < 0)
        log_fatal("dsm_cond_signal(%d): condition ids are >= 0", cond);
    int manager = cond % job()->nodes;
    if (manager == job()->rank) {
        pthread_mutex_lock(&conds.lock);
        signal_waiters(cond, all);
        pthread_mutex_unlock(&conds.lock);
        return;
    }
    int32_t id = cond;
    ipc_send(manager, SYNC_COND_SIGNAL, all, &id, sizeof id);
}


void sync_cond_start(void)
{
    conds.map.size = sizeof(struct cond_state);
    ipc_register(SYNC_COND_WAIT, "COND_WAIT", on_wait, NULL);
    ipc_register(SYNC_COND_QUEUED, "COND_QUEUED", on_queued, NULL);
    ipc_register(SYNC_COND_SIGNAL, "COND_SIGNAL", on_signal, NULL);
    ipc_register(SYNC_COND_WAKE, "COND_WAKE", on_wake, NULL);
}

void sync_start(void)
{
    sync_lock_start();
    sync_barrier_start();
    sync_cond_start();
    sync_flush_start();
    sync_atomic_start();
}

/* The entry points run off the master's shared stack (base/stack.h). */
struct cond_args { int cond, lock; bool all; };

static void cond_wait_call(void *arg)
{
    struct cond_args a = *(struct cond_args *)arg;
    if (smp_multi())
        cond_wait_threads(a.cond, a.lock);
    else
        cond_wait_here(a.cond, a.lock);
}

static void cond_signal_call(void *arg)
{
    struct cond_args a = *(struct cond_args *)arg;
    cond_signal(a.cond, a.all);
}

void sync_cond_wait(int cond, int lock)
{
    struct cond_args a = {cond, lock, false};
    stack_private(cond_wait_call, &a);
}

void sync_cond_broadcast(int cond)
{
    struct cond_args a = {cond, 0, true};
    stack_private(cond_signal_call, &a);
}

void dsm_cond_wait(int cond, int lock)
{
    sync_check_user_id("dsm_cond_wait", "condition", cond);
    sync_check_user_id("dsm_cond_wait", "lock", lock);
    sync_cond_wait(cond, lock);
}

void dsm_cond_signal(int cond)
{
    sync_check_user_id("dsm_cond_signal", "condition", cond);
    struct cond_args a = {cond, 0, false};
    stack_private(cond_signal_call, &a);
}

void dsm_cond_broadcast(int cond)
{
    sync_check_user_id("dsm_cond_broadcast", "condition", cond);
    sync_cond_broadcast(cond);
}
