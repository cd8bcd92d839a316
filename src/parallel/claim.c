/*
 * claim.c — locks a program may test (parallel.h), held and queued at
 * node 0.
 *
 * dsm_lock's queue runs through the nodes themselves and cannot tell a
 * newcomer "busy" without joining it to the queue; OpenMP's omp_test_lock
 * must answer at once. Node 0 therefore keeps, per lock, its holder and
 * its waiters, and answers a try without queueing it. The writes still
 * travel with dsm_lock (the holder takes it after its claim), so this
 * module only decides who holds the lock next.
 *
 * A node may run several threads of an OpenMP team (src/omp/team_layout.c)
 * each claiming a different lock at once (one lock is claimed by one
 * thread of a node at a time: omp_lock.c's node mutex): a claim carries
 * the thread's index on its node in the message's aux field, the answer
 * carries it back, and each thread waits on its own slot.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "parallel/parallel.h"

struct claim_msg {
    int32_t id;
    int32_t try_; /* request: 1 for a try; reply: 1 granted, 0 busy */
};

struct claim_waiter {
    struct claim_waiter *next;
    int                  node, slot;
};

/* The most threads a node runs (DSM_THREADS's range, config.c). */
#define CLAIM_SLOTS 256
struct claimed {
    int                  holder;  /* plus one; 0: free */
    struct claim_waiter *waiters; /* in arrival order */
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    map;      /* at node 0: struct claimed by lock id */
    struct {                  /* each thread's outstanding claim, by its index */
        bool answered, granted;
    } slot[CLAIM_SLOTS];
} claims = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void answer(int node, int slot, int id, bool granted)
{
    if (node == job()->rank) {
        claims.slot[slot].granted = granted;
        claims.slot[slot].answered = true;
        ipc_notify();
        return;
    }
    struct claim_msg m = {.id = id, .try_ = granted};
    ipc_send(node, PAR_CLAIM_REP, (uint32_t)slot, &m, sizeof m);
}

/* At node 0. Caller holds claims.lock. */
static void claim(int node, int slot, int id, bool try)
{
    struct claimed *c = idmap_get(&claims.map, id);
    if (!c->holder) {
        c->holder = node + 1;
        answer(node, slot, id, true);
    } else if (c->holder == node + 1 && !try) {
        log_fatal("node %d claims OpenMP lock %d, which it holds already", node, id);
    } else if (try) {
        /* busy, held elsewhere or here: omp_test_lock by its holder finds
         * it locked (false), as libomp answers */
        answer(node, slot, id, false);
    } else {
        struct claim_waiter *w = malloc(sizeof *w), **pp = &c->waiters;
        if (!w)
            log_fatal("out of memory for an OpenMP lock's waiters");
        *w = (struct claim_waiter){.node = node, .slot = slot};
        while (*pp)
            pp = &(*pp)->next;
        *pp = w;
    }
}

/* At node 0. Caller holds claims.lock. */
static void leave(int node, int id)
{
    struct claimed *c = idmap_get(&claims.map, id);
    if (c->holder != node + 1)
        log_fatal("node %d releases OpenMP lock %d, which it does not hold", node, id);
    struct claim_waiter *w = c->waiters;
    if (!w) {
        c->holder = 0;
        return;
    }
    c->waiters = w->next;
    c->holder = w->node + 1;
    answer(w->node, w->slot, id, true);
    free(w);
}

static void parse(int src, const void *msg, size_t len, struct claim_msg *m, const char *what)
{
    ipc_body(src, msg, len, m, sizeof *m, NULL, what);
    if (m->id < 0 || (m->try_ != 0 && m->try_ != 1))
        log_fatal("node %d sent a malformed %s", src, what);
}

static void on_claim_req(int src, const void *msg, size_t len)
{
    struct claim_msg m;
    parse(src, msg, len, &m, "lock claim");
    uint32_t slot = ipc_msg_aux(msg);
    if (job()->rank != 0)
        log_fatal("node %d sent a lock claim to node %d; node 0 keeps them", src, job()->rank);
    if (slot >= CLAIM_SLOTS)
        log_fatal("node %d sent a malformed lock claim", src);
    pthread_mutex_lock(&claims.lock);
    claim(src, (int)slot, m.id, m.try_);
    pthread_mutex_unlock(&claims.lock);
}

static void on_claim_leave(int src, const void *msg, size_t len)
{
    struct claim_msg m;
    parse(src, msg, len, &m, "lock release");
    if (job()->rank != 0)
        log_fatal("node %d sent a lock release to node %d; node 0 keeps them", src, job()->rank);
    pthread_mutex_lock(&claims.lock);
    leave(src, m.id);
    pthread_mutex_unlock(&claims.lock);
}

static void on_claim_rep(int src, const void *msg, size_t len)
{
    struct claim_msg m;
    parse(src, msg, len, &m, "lock claim reply");
    uint32_t slot = ipc_msg_aux(msg);
    pthread_mutex_lock(&claims.lock);
    if (src != 0 || slot >= CLAIM_SLOTS || claims.slot[slot].answered)
        log_fatal("node %d answered a lock claim nobody made", src);
    claims.slot[slot].granted = m.try_;
    claims.slot[slot].answered = true;
    pthread_mutex_unlock(&claims.lock);
    ipc_notify();
}

static bool answered(void *arg)
{
    int slot = (int)(intptr_t)arg;
    pthread_mutex_lock(&claims.lock);
    bool a = claims.slot[slot].answered;
    pthread_mutex_unlock(&claims.lock);
    return a;
}

static bool claim_here(int id, bool try)
{
    int me = smp_index();
    pthread_mutex_lock(&claims.lock);
    claims.slot[me].answered = false;
    if (job()->rank == 0)
        claim(0, me, id, try);
    pthread_mutex_unlock(&claims.lock);
    if (job()->rank != 0) {
        struct claim_msg m = {.id = id, .try_ = try};
        ipc_send(0, PAR_CLAIM_REQ, (uint32_t)me, &m, sizeof m);
    }
    ipc_wait(answered, (void *)(intptr_t)me, 0);
    pthread_mutex_lock(&claims.lock);
    bool granted = claims.slot[me].granted;
    pthread_mutex_unlock(&claims.lock);
    return granted;
}

static void leave_here(int id)
{
    if (job()->rank == 0) {
        pthread_mutex_lock(&claims.lock);
        leave(0, id);
        pthread_mutex_unlock(&claims.lock);
        return;
    }
    struct claim_msg m = {.id = id};
    ipc_send(0, PAR_CLAIM_LEAVE, 0, &m, sizeof m);
}

/* Off the master's shared stack (base/stack.h): they wait on the network. */
struct claim_call {
    int  id;
    bool try, granted;
};

static void claim_call(void *arg)
{
    struct claim_call c = *(struct claim_call *)arg;
    ((struct claim_call *)arg)->granted = claim_here(c.id, c.try);
}

bool parallel_claim(int id, bool try)
{
    struct claim_call c = {.id = id, .try = try};
    stack_private(claim_call, &c);
    return c.granted;
}

static void leave_call(void *arg)
{
    struct claim_call c = *(struct claim_call *)arg;
    leave_here(c.id);
}

void parallel_leave(int id)
{
    struct claim_call c = {.id = id};
    stack_private(leave_call, &c);
}

void parallel_claim_finish(void)
{
    idmap_free(&claims.map);
}

void parallel_claim_start(void)
{
    claims.map.size = sizeof(struct claimed);
    ipc_register(PAR_CLAIM_REQ, "CLAIM_REQ", on_claim_req, NULL);
    ipc_register(PAR_CLAIM_REP, "CLAIM_REP", on_claim_rep, NULL);
    ipc_register(PAR_CLAIM_LEAVE, "CLAIM_LEAVE", on_claim_leave, NULL);
}
