/*
 * lock_queue.c — a lock's requests on their way (lock.c describes the
 * protocol). The manager (id mod N) remembers only the last node to ask
 * for the lock and passes each request to it, recording the requester as
 * the new last one; that last owner grants at once (lock_grant.c) or
 * records the requester as its successor, to grant at its unlock or once
 * its kept release has run (lock_releaser.c).
 *
 * A try (issue 89: pthread_mutex_trylock, pthread_spin_trylock) is a
 * request that is answered "busy" rather than queued. The manager passes
 * it to the last owner, which grants it, as it would a request, if it has
 * the lock and nobody holds it, and otherwise answers busy; either way it
 * tells the manager, which only then records the requester as the last
 * owner (taken) or not (busy). Meanwhile the manager holds back the lock's
 * other requests and tries, and then hands them on in their order: the
 * queue never contains a requester that may turn out not to want the lock.
 *
 * The handlers run on the delivery thread, the rest also on the program's
 * thread when this node is the manager (lock.c); all under locks.lock
 * (lock_state.h), and none waits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "sync/lock_state.h"

/* A request or a try the manager holds back while a try is out. */
struct held_request {
    struct held_request *next;
    bool                 try;
    int                  requester;
    struct lock_atomic   op;
    uint32_t             vt[]; /* the requester's vector timestamp: job()->nodes */
};

struct lock_msg { int32_t id, requester; }; /* + the requester's vector timestamp */
/* A try's outcome, from the last owner to the manager. */
struct lock_tried { int32_t id, requester, taken; };

/* At the previous owner: someone queued behind us, or tried (`try`: the
 * manager hears whether it took the lock). Caller holds locks.lock. */
static void on_successor(int id, int requester, const uint32_t *vt, const struct lock_atomic *op,
                         bool try)
{
    struct lock_state *l = lock_state_of(id);
    if (try && (!l->owned || l->held)) { /* held here, or on its way to a thread of ours */
        lock_tried(id, requester, false);
        return;
    }
    /* Pending: its own last unlock's release (or one before) has not run.
     * Releases kept after that unlock need not go with it. */
    bool pending = l->owned && !l->held && coherence_release_pending(l->ticket);
    if (l->owned && !l->held && !pending) {
        l->owned = false;
        lock_grant_to(id, requester, vt, op);
        if (try)
            lock_tried(id, requester, true);
        return;
    }
    if (l->successor)
        log_fatal("lock %d was passed two successors; protocol error", id);
    l->successor = requester + 1;
    l->succ_try = try;
    if (!l->succ_vt)
        l->succ_vt = malloc((size_t)job()->nodes * sizeof *l->succ_vt);
    if (!l->succ_vt)
        log_fatal("out of memory for a lock");
    memcpy(l->succ_vt, vt, (size_t)job()->nodes * sizeof *vt);
    l->succ_atomic = *op;
    if (pending) /* the releaser grants it once the release has run */
        lock_releaser_queue(id, l);
}

/* Keeps a request or try for when the try that is out has its answer.
 * Caller holds locks.lock. */
static void hold_back(struct lock_state *m, bool try, int requester, const uint32_t *vt,
                      const struct lock_atomic *op)
{
    size_t vt_len = (size_t)job()->nodes * sizeof *vt;
    struct held_request *h = malloc(sizeof *h + vt_len);
    if (!h)
        log_fatal("out of memory for a lock");
    *h = (struct held_request){.try = try, .requester = requester, .op = *op};
    memcpy(h->vt, vt, vt_len);
    if (!m->held_back)
        m->held_tail = &m->held_back;
    *m->held_tail = h;
    m->held_tail = &h->next;
}

void lock_on_request(int id, int requester, const uint32_t *vt, const struct lock_atomic *op)
{
    struct lock_state *m = lock_state_of(id);
    if (m->trying) {
        hold_back(m, false, requester, vt, op);
        return;
    }
    int prev = m->last_owner - 1;
    m->last_owner = requester + 1;
    if (prev < 0) { /* never held: the manager hands it out itself */
        if (requester == job()->rank) {
            struct lock_state *l = lock_state_of(id);
            l->granted = true;
            ipc_notify(); /* when a held-back request of ours is handed on */
        } else
            lock_grant_to(id, requester, vt, op);
    } else if (prev == job()->rank)
        on_successor(id, requester, vt, op, false);
    else
        lock_send_request(prev, SYNC_LOCK_FWD, id, requester, vt, op);
}

/* The requester hears its try failed. Caller holds locks.lock. */
static void busy_to(int id, int requester)
{
    if (requester == job()->rank) {
        lock_state_of(id)->busy = true;
        ipc_notify();
        return;
    }
    int32_t msg = id;
    ipc_send(requester, SYNC_LOCK_BUSY, 0, &msg, sizeof msg);
}

/* A try, at the manager: passed to the last owner, with the lock's other
 * requests held back until it answers. Caller holds locks.lock. */
void lock_on_try(int id, int requester, const uint32_t *vt)
{
    struct lock_state *m = lock_state_of(id);
    const struct lock_atomic none = {.on = 0};
    if (m->trying) {
        hold_back(m, true, requester, vt, &none);
        return;
    }
    int prev = m->last_owner - 1;
    if (prev < 0) /* never held: it is free */
        lock_on_request(id, requester, vt, &none);
    else if (prev == requester) /* it is on its way to a thread of the requester's */
        busy_to(id, requester);
    else {
        m->trying = true;
        if (prev == job()->rank)
            on_successor(id, requester, vt, &none, true);
        else
            lock_send_request(prev, SYNC_LOCK_TRY_FWD, id, requester, vt, &none);
    }
}

/* The try's outcome, at the manager: the requester is the last owner or
 * hears it is busy, and the requests held back meanwhile go on in their
 * order until one is a try again. Caller holds locks.lock. */
static void on_tried(int id, int requester, bool taken)
{
    struct lock_state *m = lock_state_of(id);
    if (!m->trying)
        log_fatal("lock %d: a try's answer for node %d, and no try is out; protocol error",
                  id, requester);
    m->trying = false;
    if (taken)
        m->last_owner = requester + 1;
    else
        busy_to(id, requester);
    while (m->held_back && !m->trying) {
        struct held_request *h = m->held_back;
        m->held_back = h->next;
        if (h->try)
            lock_on_try(id, h->requester, h->vt);
        else
            lock_on_request(id, h->requester, h->vt, &h->op);
        free(h);
    }
}

/* At the last owner: tells the manager what became of a try. Caller holds
 * locks.lock. */
void lock_tried(int id, int requester, bool taken)
{
    int manager = id % job()->nodes;
    if (manager == job()->rank) {
        on_tried(id, requester, taken);
        return;
    }
    struct lock_tried t = {.id = id, .requester = requester, .taken = taken};
    ipc_send(manager, SYNC_LOCK_TRIED, 0, &t, sizeof t);
}

/* A request (to the manager) or its forward (to the last owner): the
 * requester's vector timestamp, and the atomic riding on it if any. */
void lock_send_request(int to, enum sync_type type, int id, int requester, const uint32_t *vt,
                       const struct lock_atomic *op)
{
    struct buf b = {0};
    struct lock_msg msg = {.id = id, .requester = requester};
    buf_put(&b, &msg, sizeof msg);
    buf_put(&b, vt, (size_t)job()->nodes * sizeof *vt);
    if (op->on)
        buf_put(&b, op, sizeof *op);
    ipc_send(to, type, 0, b.p, b.len);
    buf_free(&b);
}

static void parse_lock_msg(int src, const void *msg, size_t len, struct lock_msg *m, uint32_t *vt,
                           struct lock_atomic *op)
{
    size_t rest, vt_len = (size_t)job()->nodes * sizeof *vt;
    const unsigned char *tail = ipc_body(src, msg, len, m, sizeof *m, &rest, "lock message");
    *op = (struct lock_atomic){.on = 0};
    if (rest != vt_len && rest != vt_len + sizeof *op)
        log_fatal("node %d sent a malformed lock message", src);
    memcpy(vt, tail, vt_len);
    if (rest > vt_len) {
        memcpy(op, tail + vt_len, sizeof *op);
        if (lock_atomic_malformed(op))
            log_fatal("node %d sent a malformed atomic with a lock request", src);
    }
    if (m->id < 0 || m->requester < 0 || m->requester >= job()->nodes)
        log_fatal("node %d sent a malformed lock message", src);
}

void lock_on_acq(int src, const void *msg, size_t len)
{
    struct lock_msg m;
    uint32_t vt[VT_MAX_NODES];
    struct lock_atomic op;
    parse_lock_msg(src, msg, len, &m, vt, &op);
    if (m.id % job()->nodes != job()->rank)
        log_fatal("node %d asked node %d to manage lock %d; protocol error", src, job()->rank, m.id);
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&locks.lock);
    lock_on_request(m.id, m.requester, vt, &op);
    pthread_mutex_unlock(&locks.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

void lock_on_fwd(int src, const void *msg, size_t len)
{
    struct lock_msg m;
    uint32_t vt[VT_MAX_NODES];
    struct lock_atomic op;
    parse_lock_msg(src, msg, len, &m, vt, &op);
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&locks.lock);
    on_successor(m.id, m.requester, vt, &op, false);
    pthread_mutex_unlock(&locks.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

/* A try: to the manager (lock_on_try), or passed to the last owner. */
static void try_msg(int src, const void *msg, size_t len, bool at_manager)
{
    struct lock_msg m;
    uint32_t vt[VT_MAX_NODES];
    struct lock_atomic op;
    parse_lock_msg(src, msg, len, &m, vt, &op);
    if (op.on || m.requester == job()->rank ||
        (at_manager && (m.id % job()->nodes != job()->rank || m.requester != src)))
        log_fatal("node %d sent a malformed try of lock %d", src, m.id);
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&locks.lock);
    if (at_manager)
        lock_on_try(m.id, m.requester, vt);
    else
        on_successor(m.id, m.requester, vt, &op, true);
    pthread_mutex_unlock(&locks.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

void lock_on_try_msg(int src, const void *msg, size_t len) { try_msg(src, msg, len, true); }
void lock_on_try_fwd(int src, const void *msg, size_t len) { try_msg(src, msg, len, false); }

void lock_on_tried_msg(int src, const void *msg, size_t len)
{
    struct lock_tried t;
    size_t rest;
    ipc_body(src, msg, len, &t, sizeof t, &rest, "lock try's answer");
    if (rest || t.id < 0 || t.id % job()->nodes != job()->rank || t.requester < 0 ||
        t.requester >= job()->nodes || (t.taken != 0 && t.taken != 1))
        log_fatal("node %d sent a malformed answer to a try of lock %d", src, t.id);
    pthread_mutex_lock(&locks.lock);
    on_tried(t.id, t.requester, t.taken);
    pthread_mutex_unlock(&locks.lock);
}

void lock_on_busy(int src, const void *msg, size_t len)
{
    int32_t id;
    size_t rest;
    ipc_body(src, msg, len, &id, sizeof id, &rest, "lock busy");
    pthread_mutex_lock(&locks.lock);
    struct lock_state *l = id >= 0 && !rest ? lock_state_of(id) : NULL;
    if (!l || l->busy || l->granted || l->owned)
        log_fatal("node %d answered busy to a try of lock %d, which was not tried", src, id);
    l->busy = true;
    pthread_mutex_unlock(&locks.lock);
    ipc_notify();
}
