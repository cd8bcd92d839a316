/*
 * lock.c — distributed locks with a queue and no central bottleneck.
 *
 * Each lock has a manager (id mod N) that remembers only the last node to
 * ask for it. A request goes to the manager, which passes it to that last
 * owner and records the requester as the new last one: the requests form a
 * queue through the nodes themselves, and each releaser grants the lock
 * directly to its successor, with every interval the successor has not seen
 * (so a chain of locks carries writes transitively). A node that was the
 * last owner and has no successor takes the lock again without a message.
 * The requests travel in lock_queue.c, the grants in lock_grant.c.
 *
 * A release that stays on the node (issue 27): an unlock that nobody waits
 * for leaves its release pending where the protocol allows it
 * (coherence_release_keep), so a lock taken and released again and again
 * on one node costs no message. Whatever else lets the writes leave the
 * node runs the release first (a grant at an unlock, a barrier, ...). A
 * request for such a lock that finds its release pending goes to the
 * releaser, a thread of ours that runs the release aside and then grants
 * the lock (lock_releaser.c).
 *
 * A try (issue 89: pthread_mutex_trylock, pthread_spin_trylock) is a
 * request that is answered "busy" rather than queued (lock_queue.c).
 *
 * Here: the table of the node's locks (lock_state.h: one mutex,
 * locks.lock, for it and the releaser's queue), and the program's lock
 * and unlock, which run on the calling thread, off the master's shared
 * stack (base/stack.h), and wait for a grant without locks.lock; the
 * delivery thread's handlers live with what they serve, in the sibling
 * files.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/stats.h"
#include "base/trace.h"
#include "sync/lock_state.h"

DSM_STATE struct lock_table locks = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                     .rel.cv = PTHREAD_COND_INITIALIZER, .rel.batch = 1};

struct lock_state *lock_state_of(int id)
{
    return idmap_get(&locks.map, id);
}

/* The grant came, or (a try) the answer busy. */
static bool answered(void *arg)
{
    struct lock_state *l = arg;
    pthread_mutex_lock(&locks.lock);
    bool a = l->granted || l->busy;
    pthread_mutex_unlock(&locks.lock);
    return a;
}

/* A lock or unlock done without a message. Such a call is timed only when
 * it helped a pending release first (t0 set: lock_batch_help) or the run is
 * traced: on its own it costs about what two clock reads cost (42 ns each
 * here), and programs take such locks by the million (SPLASH-3 Barnes 64K:
 * 8.5 M on one node, where clock_gettime was 29% of the run's CPU
 * samples). Its untimed part counts as computing (docs/statistics.md). */
static void done_here(enum trace_kind kind, int id, uint64_t t0)
{
    if (!t0 && !TRACE_ON)
        return;
    uint64_t t1 = clock_ns();
    if (t0)
        stats_add(STAT_T_LOCK_NS, t1 - t0);
    if (TRACE_ON)
        trace_put(kind, 0, 0, (uint32_t)id, t0 ? t0 : t1, t1, t1);
}

/* The profile's view of the calling thread's last acquire, for sync_lock
 * to report once back on the program's stack (base/profile.h). */
static __thread struct {
    bool     remote;
    int      from;
    uint64_t t0, wait;
} acquired;

enum lock_outcome {
    LOCK_TOOK,
    LOCK_TOOK_ATOMIC, /* and the granter performed the atomic (l->grant_head says how) */
    LOCK_BUSY         /* a try, and another node has the lock */
};

/* Takes lock id; `op`, when on, rides on the request if one goes out.
 * `try`: a request the lock's manager answers busy rather than queue
 * (no atomic rides on it). `yield`: the calling thread gives its run slot
 * up while it waits for the grant (base/smp.h), and takes one again
 * before it applies the grant's notices, which is protocol work. */
static enum lock_outcome lock_here(int id, const struct lock_atomic *op, bool yield, bool try)
{
    if (id < 0)
        log_fatal("dsm_lock(%d): lock ids are >= 0", id);
    stats_add(STAT_LOCK_ACQUIRES, 1);
    pthread_mutex_lock(&locks.lock);
    uint64_t t0 = lock_batch_help();
    struct lock_state *l = lock_state_of(id);
    if (l->held && try) { /* by the node's only thread: the caller */
        pthread_mutex_unlock(&locks.lock);
        return LOCK_BUSY;
    }
    if (l->held)
        log_fatal("dsm_lock(%d): this node already holds it", id);
    if (l->owned) { /* ours since our last release, and nobody asked */
        l->held = true;
        l->local = true;
        if (l->successor && l->succ_try) {
            /* A try waits for our pending release: taken again first, the
             * lock is busy for it, which must not wait for our unlock. */
            lock_tried(id, l->successor - 1, false);
            l->successor = 0;
            l->succ_try = false;
            l->batch = 0;
        }
        pthread_mutex_unlock(&locks.lock);
        done_here(TRACE_LOCK, id, t0);
        if (PROFILE_ON)
            acquired.remote = false;
        return LOCK_TOOK;
    }
    if (!t0)
        t0 = clock_ns();
    stats_add(STAT_LOCK_REMOTE, 1);
    l->granted = false;
    l->busy = false;
    l->grant_head = (struct grant_head){.atomic = GRANT_ATOMIC_NONE};
    uint32_t vt[VT_MAX_NODES];
    interval_vt(vt);
    int manager = id % job()->nodes;
    if (manager == job()->rank && try)
        lock_on_try(id, job()->rank, vt);
    else if (manager == job()->rank)
        lock_on_request(id, job()->rank, vt, op);
    else
        lock_send_request(manager, try ? SYNC_LOCK_TRY : SYNC_LOCK_ACQ, id, job()->rank, vt, op);
    pthread_mutex_unlock(&locks.lock);
    if (yield)
        smp_wait_begin();
    ipc_wait(answered, l, 0);
    if (yield)
        smp_wait_end();
    uint64_t t_granted = TRACE_ON ? clock_ns() : 0;

    pthread_mutex_lock(&locks.lock);
    if (l->busy) {
        l->busy = false;
        pthread_mutex_unlock(&locks.lock);
        stats_add(STAT_LOCK_BUSY, 1);
        stats_add(STAT_T_LOCK_NS, clock_ns() - t0);
        return LOCK_BUSY;
    }
    unsigned char *g = l->grant;
    size_t glen = l->grant_len;
    int from = l->grant_from;
    l->grant = NULL;
    l->owned = true;
    l->held = true;
    l->local = false;
    pthread_mutex_unlock(&locks.lock);
    if (g) {
        interval_apply(from, g, glen);
        free(g);
    }
    uint64_t t1 = clock_ns();
    stats_add(STAT_T_LOCK_NS, t1 - t0);
    if (TRACE_ON)
        trace_put(TRACE_LOCK, 1, 0, (uint32_t)id, t0, t_granted, t1);
    if (PROFILE_ON) {
        acquired.remote = true;
        acquired.from = from;
        acquired.t0 = t0;
        acquired.wait = t1 - t0;
    }
    return l->grant_head.atomic != GRANT_ATOMIC_NONE ? LOCK_TOOK_ATOMIC : LOCK_TOOK;
}

static void unlock_here(int id)
{
    log_flush_output();
    pthread_mutex_lock(&locks.lock);
    uint64_t t0 = lock_batch_help();
    uint64_t sent0 = ipc_sent_by_thread();
    struct lock_state *l = id >= 0 ? lock_state_of(id) : NULL;
    if (!l || !l->held)
        log_fatal("dsm_unlock(%d): this node does not hold it", id);
    /* Nobody waits for it: the release may stay here (pending) until
     * something lets our writes leave the node; a request that comes
     * later finds it pending (on_successor). So too for a lock that has
     * just come from another node: Barnes's cell locks pass between the
     * nodes and are then taken here again and again, and each hand-over
     * that released at once cost its diffs' round trip to their homes
     * (2-node Barnes 64K: 1.9 -> 1.2 s kept). A contended lock mostly has
     * its successor waiting by the unlock, and releases at once below (a
     * 4-node counter under one lock took as long either way). A request
     * that finds its own release run is granted at once, though later
     * releases are pending (the ticket, on_successor). */
    uint64_t ticket = !l->successor ? coherence_release_keep() : 0;
    if (ticket) {
        l->held = false;
        l->ticket = ticket;
        if (l->local)
            stats_add(STAT_LOCK_LOCAL_RELEASES, 1);
        stats_add(STAT_LOCK_KEPT_RELEASES, 1);
        pthread_mutex_unlock(&locks.lock);
        sync_flush_kept_release(); /* after the ticket: an ask from now on runs it */
        done_here(TRACE_UNLOCK, id, t0);
        return;
    }
    l->ticket = 0; /* released below, before anyone can have it */
    pthread_mutex_unlock(&locks.lock);
    if (!t0)
        t0 = clock_ns();
    if (PROFILE_ON)
        profile_releasing(id); /* its diffs are this lock's data */
    coherence_release();
    /* What a release costs when the lock was taken again here (issue 27:
     * the messages of a release whose lock stays on the node): its diffs,
     * and whatever this thread served while it waited for their acks. */
    uint64_t sent = ipc_sent_by_thread() - sent0;
    uint64_t t_released = TRACE_ON ? clock_ns() : 0;
    pthread_mutex_lock(&locks.lock);
    if (l->local) {
        stats_add(STAT_LOCK_LOCAL_RELEASES, 1);
        stats_add(STAT_LOCK_LOCAL_REL_MSGS, sent);
    }
    l->held = false;
    if (l->successor) {
        lock_grant_successor(id, l);
        l->batch = 0; /* granted here, not by the releaser */
    }
    pthread_mutex_unlock(&locks.lock);
    coherence_release_sent();
    uint64_t t1 = clock_ns();
    stats_add(STAT_T_LOCK_NS, t1 - t0);
    if (TRACE_ON)
        trace_put(TRACE_UNLOCK, 0, 0, (uint32_t)id, t0, t_released, t1);
}

void sync_lock_start(void)
{
    locks.map.size = sizeof(struct lock_state);
    ipc_register(SYNC_LOCK_ACQ, "LOCK_ACQ", lock_on_acq, NULL);
    ipc_register(SYNC_LOCK_FWD, "LOCK_FWD", lock_on_fwd, NULL);
    ipc_register(SYNC_LOCK_GRANT, "LOCK_GRANT", lock_on_grant, NULL);
    ipc_register(SYNC_LOCK_RELAY, "LOCK_RELAY", lock_on_relay, NULL);
    ipc_register(SYNC_LOCK_TRY, "LOCK_TRY", lock_on_try_msg, NULL);
    ipc_register(SYNC_LOCK_TRY_FWD, "LOCK_TRY_FWD", lock_on_try_fwd, NULL);
    ipc_register(SYNC_LOCK_TRIED, "LOCK_TRIED", lock_on_tried_msg, NULL);
    ipc_register(SYNC_LOCK_BUSY, "LOCK_BUSY", lock_on_busy, NULL);
}

/* The entry points run off the master's shared stack (base/stack.h). */
static void lock_call(void *arg) { lock_here(*(int *)arg, &(struct lock_atomic){.on = 0}, false, false); }
static void lock_yield_call(void *arg) { lock_here(*(int *)arg, &(struct lock_atomic){.on = 0}, true, false); }
struct try_call { int id; bool took; };
static void try_call(void *arg)
{
    struct try_call *c = arg;
    c->took = lock_here(c->id, &(struct lock_atomic){.on = 0}, true, true) != LOCK_BUSY;
}
static void unlock_call(void *arg) { unlock_here(*(int *)arg); }
/* The profile hears of an acquire here, on the program's stack, where
 * the call's stack can be sampled. */
static void profile_acquired(int id)
{
    if (PROFILE_ON)
        profile_lock(id, acquired.remote, acquired.from, acquired.t0, acquired.wait);
}

void sync_lock(int id)
{
    stack_private(lock_call, &id);
    profile_acquired(id);
}

void sync_lock_yielding(int id)
{
    stack_private(lock_yield_call, &id);
    profile_acquired(id);
}

bool sync_lock_try(int id)
{
    struct try_call c = {.id = id};
    stack_private(try_call, &c);
    if (c.took)
        profile_acquired(id);
    return c.took;
}

void sync_unlock(int id)
{
    stack_private(unlock_call, &id);
    if (PROFILE_ON)
        profile_unlock(id);
}

struct lock_atomic_call {
    int                id;
    size_t             page, offset;
    uint32_t           need;
    struct coh_atomic *a;
    bool               done;
};

static void lock_atomic_call(void *arg)
{
    struct lock_atomic_call c = *(struct lock_atomic_call *)arg;
    struct coh_atomic a = *c.a;
    struct lock_atomic op = {.page = (uint32_t)c.page, .offset = (uint32_t)c.offset, .need = c.need,
                             .op = a.op, .size = a.size, .on = 1, .value = a.value,
                             .expected = a.expected};
    c.done = lock_here(c.id, &op, false, false) == LOCK_TOOK_ATOMIC;
    if (c.done) {
        pthread_mutex_lock(&locks.lock);
        struct grant_head head = lock_state_of(c.id)->grant_head;
        pthread_mutex_unlock(&locks.lock);
        a.old = head.old;
        if (head.atomic == GRANT_ATOMIC_CHANGED)
            coh->atomic_wrote(c.page, c.offset, &a, head.version);
        stats_add(STAT_ATOMICS_AT_HOME, 1);
        stats_add(STAT_ATOMICS_WITH_GRANT, 1);
        if (head.granter)
            stats_add(STAT_ATOMICS_RELAYED, 1);
    }
    *c.a = a;
    ((struct lock_atomic_call *)arg)->done = c.done;
}

bool sync_lock_atomic(int id, size_t page, size_t offset, uint32_t need, struct coh_atomic *a)
{
    struct lock_atomic_call c = {.id = id, .page = page, .offset = offset, .need = need, .a = a};
    stack_private(lock_atomic_call, &c);
    profile_acquired(id);
    return c.done;
}

bool sync_lock_came(int id)
{
    pthread_mutex_lock(&locks.lock);
    struct lock_state *l = lock_state_of(id);
    bool came = l->held && !l->local;
    pthread_mutex_unlock(&locks.lock);
    return came;
}

/* A program's id, or the end of the job naming the call (sync.h). */
void sync_check_user_id(const char *call, const char *what, int id)
{
    if (id < 0 || id > SYNC_USER_ID_MAX)
        log_fatal("%s(%d): a program's %s ids are 0 to %#x (those above are dsm's own, for its "
                  "OpenMP runtime)", call, id, what, SYNC_USER_ID_MAX);
}

void dsm_lock(int id)
{
    PROFILE_SITE();
    sync_check_user_id("dsm_lock", "lock", id);
    if (smp_threaded())
        sync_cohort_lock(id);
    else
        sync_lock(id);
}

void dsm_unlock(int id)
{
    sync_check_user_id("dsm_unlock", "lock", id);
    if (smp_threaded())
        sync_cohort_unlock(id);
    else
        sync_unlock(id);
}
