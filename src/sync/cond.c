/*
 * cond.c — condition variables (seed 001).
 *
 * Each condition has a manager (id mod N) holding its queue of waiting
 * nodes. A waiter registers and waits for the manager to confirm before it
 * releases the lock, so a signal sent by whoever takes the lock next can
 * never overtake the registration. A wake carries no data: the woken node
 * re-acquires the lock, and the lock brings the write notices.
 *
 * A signal to a condition that no node has waited on wakes nobody, and
 * sends nothing. SPLASH-3's Barnes and FMM broadcast a fresh condition
 * after every cell they finish, nearly always with nobody waiting: with a
 * message each to the manager, a quarter of what FMM's master sends, and a
 * wake-up of the manager's delivery thread. Every node starts out knowing
 * that nobody waits on any condition. A waiter's node learns of its own
 * wait before it registers; at a condition's first registration its
 * manager tells every other node (COND_SEEN) and confirms that
 * registration, and any that come meanwhile, only once all have
 * acknowledged. A wait is confirmed before its waiter releases the lock,
 * so a signal ordered after a wait (by that lock, or anything else) is
 * sent by a node that knows of it; a signal sent by a node that knows of
 * none falls before every confirmed wait on the condition, where POSIX's
 * signal wakes nobody. What a node learns is never taken back: once a
 * condition was waited on, its signals go to the manager as before.
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
    bool      waited;    /* some node may have waited on it: signals go out
                          * (at the manager: the other nodes are told) */
    unsigned  acks_due;  /* at the manager: COND_SEEN not yet acknowledged */
    int      *pending;   /* at the manager: waits to confirm when they are */
    uint32_t *pending_tokens;
    size_t    npending, cap_pending;
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
static void enqueue(struct cond_state *c, int node, uint32_t token)
{
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

/* At the manager: (node, token)'s wait is registered. Caller holds
 * conds.lock. */
static void confirm(int node, uint32_t token)
{
    if (node == job()->rank) {
        if (token)
            wait_of(node, token)->queued = true;
        else
            conds.queued = true;
        ipc_notify();
    } else
        ipc_send(node, SYNC_COND_QUEUED, token, NULL, 0);
}

/* At the manager: a wait by (node, token) joins the condition's queue. It
 * is confirmed now, unless the other nodes are being told of the
 * condition's first wait: then once they all have acknowledged
 * (on_seen_ack). The waiter's node knows already. Caller holds conds.lock. */
static void register_wait(int cond, int node, uint32_t token)
{
    struct cond_state *c = idmap_get(&conds.map, cond);
    enqueue(c, node, token);
    if (!c->waited) {
        c->waited = true;
        int32_t id = cond;
        for (int p = 0; p < job()->nodes; p++)
            if (p != job()->rank && p != node) {
                ipc_send(p, SYNC_COND_SEEN, 0, &id, sizeof id);
                c->acks_due++;
            }
    }
    if (!c->acks_due) {
        confirm(node, token);
        return;
    }
    if (c->npending == c->cap_pending) {
        c->cap_pending = c->cap_pending ? c->cap_pending * 2 : 4;
        c->pending = realloc(c->pending, c->cap_pending * sizeof *c->pending);
        c->pending_tokens = realloc(c->pending_tokens, c->cap_pending * sizeof *c->pending_tokens);
        if (!c->pending || !c->pending_tokens)
            log_fatal("out of memory for a condition variable");
    }
    c->pending_tokens[c->npending] = token;
    c->pending[c->npending++] = node;
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
    register_wait(id, src, token);
    pthread_mutex_unlock(&conds.lock);
}

/* From the manager: some node waits on the condition; this node's signals
 * of it go out from now on. */
static void on_seen(int src, const void *msg, size_t len)
{
    int32_t id;
    ipc_body(src, msg, len, &id, sizeof id, NULL, "condition message");
    if (id < 0 || id % job()->nodes != src)
        log_fatal("node %d announced a wait on condition %d, which it does not manage", src, id);
    pthread_mutex_lock(&conds.lock);
    ((struct cond_state *)idmap_get(&conds.map, id))->waited = true;
    pthread_mutex_unlock(&conds.lock);
    ipc_send(src, SYNC_COND_SEEN_ACK, 0, &id, sizeof id);
}

/* At the manager: one more node knows; when all do, the waits that came
 * meanwhile are confirmed. */
static void on_seen_ack(int src, const void *msg, size_t len)
{
    int32_t id = cond_id(src, msg, len);
    pthread_mutex_lock(&conds.lock);
    struct cond_state *c = idmap_find(&conds.map, id);
    if (!c || !c->acks_due)
        log_fatal("node %d acknowledged a wait on condition %d that was not announced", src, id);
    if (--c->acks_due == 0) {
        for (size_t i = 0; i < c->npending; i++)
            confirm(c->pending[i], c->pending_tokens[i]);
        c->npending = 0;
    }
    pthread_mutex_unlock(&conds.lock);
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
    if (manager == job()->rank)
        register_wait(cond, job()->rank, 0);
    else
        ((struct cond_state *)idmap_get(&conds.map, cond))->waited = true;
    pthread_mutex_unlock(&conds.lock);
    if (manager != job()->rank) {
        int32_t id = cond;
        ipc_send(manager, SYNC_COND_WAIT, 0, &id, sizeof id);
    }
    ipc_wait(flag_set, &conds.queued, 0);
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

/* With DSM_THREADS > 1, or threads taking turns on run slots
 * (smp_threaded): the calling thread's wait, under the node's hold of
 * `lock` (cohort.c), which it gives up and takes again. */
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
    if (manager == job()->rank)
        register_wait(cond, job()->rank, w.token);
    else
        ((struct cond_state *)idmap_get(&conds.map, cond))->waited = true;
    pthread_mutex_unlock(&conds.lock);
    if (manager != job()->rank) {
        int32_t id = cond;
        ipc_send(manager, SYNC_COND_WAIT, w.token, &id, sizeof id);
    }
    smp_wait_begin(); /* a run slot's turn to another thread (base/smp.h) */
    ipc_wait(flag_set, &w.queued, 0);
    smp_wait_end();
    stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
    sync_cohort_unlock(lock);
    uint64_t t1 = clock_ns();
    smp_wait_begin();
    ipc_wait(flag_set, &w.woken, 0);
    smp_wait_end();
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
    pthread_mutex_lock(&conds.lock);
    const struct cond_state *c = idmap_find(&conds.map, cond);
    bool waited = c && c->waited;
    pthread_mutex_unlock(&conds.lock);
    if (!waited) { /* nobody waits: see the top of the file */
        stats_add(STAT_COND_SIGNALS_SKIPPED, 1);
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
    ipc_register(SYNC_COND_SEEN, "COND_SEEN", on_seen, NULL);
    ipc_register(SYNC_COND_SEEN_ACK, "COND_SEEN_ACK", on_seen_ack, NULL);
}

static DSM_STATE struct sync_params params;

const struct sync_params *sync_params(void) { return &params; }

void sync_start(const struct sync_params *p)
{
    params = *p;
    sync_barrier_fanout = p->barrier_fanout;
    sync_pthreads_on = p->pthreads;
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
    if (smp_threaded())
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
