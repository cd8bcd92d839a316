/*
 * lock_grant.c — the lock handed to its next owner (lock.c describes the
 * protocol). A grant carries every interval the acquirer has not seen, so
 * that a chain of locks carries writes transitively, and performs the
 * atomic that rode on the request (sync_lock_atomic) when the granter is
 * the page's home, or goes by way of the home, which performs it
 * (lock_on_relay). At the acquirer the grant is kept (lock_on_grant) for the
 * program to apply in lock.c.
 *
 * Grants go out under locks.lock (lock_state.h): from the delivery thread
 * (lock_queue.c, at the last owner or the manager), from the program's
 * lock or unlock (lock.c) or from the releaser (lock_releaser.c); none
 * waits. The relay, at the home, uses no lock's state.
 */
#include <pthread.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "sync/lock_state.h"

/* A grant on its way to `to` by way of the page's home (lock_grant_to), which
 * performs the atomic riding on it; + the grant (head and intervals). */
struct lock_relay {
    int32_t            to;
    uint32_t           interval; /* the acquirer's that will announce it */
    struct lock_atomic op;
};

/* Whether an atomic riding on a request or a relayed grant is not one a
 * node of this job can have sent. */
bool lock_atomic_malformed(const struct lock_atomic *op)
{
    return op->on != 1 || !coh_atomic_fits(op->page, op->op, op->size, op->offset);
}

/* The atomic riding on a request for `to`, performed here if this node is
 * the page's home (`interval`: the acquirer's that will announce it);
 * the grant's head says what became of it. */
static void atomic_with_grant(struct grant_head *head, int to, uint32_t interval,
                              const struct lock_atomic *op)
{
    struct coh_atomic a = {.op = op->op, .size = op->size, .value = op->value,
                           .expected = op->expected};
    uint32_t version = 0;
    if (coherence_atomic_here(to, op->page, op->need, op->offset, &a, interval, &version) == 0) {
        head->atomic = version ? GRANT_ATOMIC_CHANGED : GRANT_ATOMIC_UNCHANGED;
        head->version = version;
        head->old = a.old;
    }
}

/* Sends the lock, with the intervals `to` lacks; the atomic riding on its
 * request is performed first when this node is the page's home: the
 * lock is in nobody's hands from here until `to` has it, so the operation
 * falls where `to`'s own would, first thing after its acquire. When the
 * home is a third node, the grant goes by way of it (lock_on_relay), which
 * performs the operation on the way: one message more than the grant
 * alone, where `to` would otherwise ask the home itself after the grant
 * (two). Caller holds locks.lock. */
void lock_grant_to(int id, int to, const uint32_t *vt, const struct lock_atomic *op)
{
    struct buf b = {0};
    struct grant_head head = {.id = id};
    int via = -1;
    if (op && op->on) {
        /* Announced in the acquirer's next interval (or a later one). */
        atomic_with_grant(&head, to, vt[to] + 1, op);
        via = head.atomic == GRANT_ATOMIC_NONE ? coherence_atomic_home(op->page) : -1;
        if (via == to || via == job()->rank)
            via = -1;
    }
    if (via >= 0) {
        struct lock_relay r = {.to = to, .interval = vt[to] + 1, .op = *op};
        buf_put(&b, &r, sizeof r);
    }
    buf_put(&b, &head, sizeof head);
    interval_encode(&b, vt, -1, to);
    ipc_send(via >= 0 ? via : to, via >= 0 ? SYNC_LOCK_RELAY : SYNC_LOCK_GRANT, 0, b.p, b.len);
    buf_free(&b);
}

/* At the page's home, as this node knew it: performs the atomic if it
 * still is the home, and passes the grant on, naming its granter. */
void lock_on_relay(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct lock_relay r;
    struct grant_head head;
    size_t rest;
    const unsigned char *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "relayed lock grant");
    if (rest >= sizeof head)
        memcpy(&head, tail, sizeof head);
    if (rest < sizeof head || r.to < 0 || r.to >= job()->nodes || r.to == job()->rank ||
        r.to == src || lock_atomic_malformed(&r.op) || head.atomic != GRANT_ATOMIC_NONE ||
        head.granter || head.id < 0)
        log_fatal("node %d sent a malformed relayed lock grant", src);
    atomic_with_grant(&head, r.to, r.interval, &r.op);
    head.granter = (uint32_t)src + 1;
    struct buf b = {0};
    buf_put(&b, &head, sizeof head);
    buf_put(&b, tail + sizeof head, rest - sizeof head);
    ipc_send(r.to, SYNC_LOCK_GRANT, 0, b.p, b.len);
    buf_free(&b);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

/* Grants the lock to the successor recorded (owned, not held here).
 * Caller holds locks.lock. */
void lock_grant_successor(int id, struct lock_state *l)
{
    int to = l->successor - 1;
    l->owned = false;
    lock_grant_to(id, to, l->succ_vt, &l->succ_atomic);
    l->successor = 0;
    if (l->succ_try)
        lock_tried(id, to, true);
    l->succ_try = false;
}

void lock_on_grant(int src, const void *msg, size_t len)
{
    struct grant_head head;
    size_t rest;
    ipc_body(src, msg, len, &head, sizeof head, &rest, "lock grant");
    int32_t id = head.id;
    if (head.atomic > GRANT_ATOMIC_CHANGED || head.granter > (uint32_t)job()->nodes ||
        head.granter == (uint32_t)job()->rank + 1 || head.granter == (uint32_t)src + 1 ||
        (head.atomic == GRANT_ATOMIC_CHANGED) != (head.version != 0))
        log_fatal("node %d sent a malformed grant of lock %d", src, id);
    pthread_mutex_lock(&locks.lock);
    struct lock_state *l = id >= 0 ? lock_state_of(id) : NULL;
    if (!l || l->granted || l->owned)
        log_fatal("node %d granted lock %d, which was not asked for", src, id);
    l->grant_head = head;
    l->grant = ipc_copy_payload(msg, len, sizeof head, &l->grant_len);
    l->grant_from = head.granter ? (int)head.granter - 1 : src;
    l->granted = true;
    pthread_mutex_unlock(&locks.lock);
    ipc_notify();
}
