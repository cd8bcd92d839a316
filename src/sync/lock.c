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
 *
 * A release that stays on the node (issue 27): an unlock that nobody waits
 * for leaves its release pending where the protocol allows it
 * (coherence_release_keep), so a lock taken and released again and again
 * on one node costs no message. Whatever else lets the writes leave the
 * node runs the release first (a grant at an unlock, a barrier, ...). A
 * request for such a lock reaches the delivery thread, which may not wait:
 * it queues the lock for the *releaser*, a thread of ours that runs the
 * pending release aside (coherence_release_aside: it takes the fault lock
 * and waits for the acknowledgements while the program runs on) and then
 * grants each lock of its batch still owned, not held and asked for.
 *
 * A try (issue 89: pthread_mutex_trylock, pthread_spin_trylock) is a
 * request that is answered "busy" rather than queued. The manager passes
 * it to the last owner, which grants it, as it would a request, if it has
 * the lock and nobody holds it, and otherwise answers busy; either way it
 * tells the manager, which only then records the requester as the last
 * owner (taken) or not (busy). Meanwhile the manager holds back the lock's
 * other requests and tries, and then hands them on in their order: the
 * queue never contains a requester that may turn out not to want the lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/stats.h"
#include "base/trace.h"
#include "sync/sync.h"

/* An atomic riding on a lock request (sync_lock_atomic): the word's
 * page, its offset, the version the requester needs, the operation. */
struct lock_atomic {
    uint32_t page, offset, need;
    uint8_t  op, size;
    uint16_t on; /* 1: an atomic rides on the request; 0: none */
    uint64_t value, expected;
};

/* A grant's fixed head: what became of the atomic that rode on the
 * request (0: none, or not done: the granter is not the page's home). */
enum grant_atomic { GRANT_ATOMIC_NONE, GRANT_ATOMIC_UNCHANGED, GRANT_ATOMIC_CHANGED };
struct grant_head {
    int32_t  id;
    uint32_t atomic;  /* enum grant_atomic */
    uint32_t version; /* GRANT_ATOMIC_CHANGED: the page's at the home after it */
    uint32_t granter; /* plus one, when the home relayed it; 0: the sender */
    uint64_t old;     /* the word before it */
};

/* A grant on its way to `to` by way of the page's home (grant_to), which
 * performs the atomic riding on it; + the grant (head and intervals). */
struct lock_relay {
    int32_t            to;
    uint32_t           interval; /* the acquirer's that will announce it */
    struct lock_atomic op;
};

/* A request or a try the manager holds back while a try is out. */
struct held_request {
    struct held_request *next;
    bool                 try;
    int                  requester;
    struct lock_atomic   op;
    uint32_t             vt[]; /* the requester's vector timestamp: job()->nodes */
};

struct lock_state {
    bool           owned;       /* the token is here */
    bool           held;        /* the program holds the lock */
    bool           granted;     /* a grant arrived for our request */
    bool           busy;        /* our try was answered busy */
    bool           succ_try;    /* the successor only tried: the manager hears of its grant */
    bool           trying;      /* at the manager: a try is out, requests are held back */
    struct held_request *held_back, **held_tail; /* at the manager, in their order */
    bool           local;       /* the program took it without a message this time */
    int            successor;   /* plus one; 0: none */
    uint32_t      *succ_vt;
    struct lock_atomic succ_atomic; /* riding on the successor's request */
    struct grant_head  grant_head;  /* the grant's, for the program */
    unsigned char *grant;       /* the grant's intervals, applied by the program */
    size_t         grant_len;
    int            grant_from;  /* the node that sent them */
    int            last_owner;  /* at the manager: plus one; 0: never asked for */
    uint64_t       batch;       /* the releaser's batch that will grant it; 0: none */
    uint64_t       ticket;      /* its last unlock's kept release; 0: that unlock released */
};

struct lock_msg { int32_t id, requester; }; /* + the requester's vector timestamp */
/* A try's outcome, from the last owner to the manager. */
struct lock_tried { int32_t id, requester, taken; };

struct deferred {
    void (*fn)(void *);
    void *arg;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    struct idmap    map;
    /* The releaser (under lock): locks asked for while their release was
     * pending, to grant once the batch `batch` has run it. */
    struct {
        pthread_t      thread;
        pthread_cond_t cv;
        bool           started, stop;
        int           *ids;
        size_t         n, cap;
        uint64_t       batch;
        /* Work that waits for every release kept before it was queued
         * (sync_after_kept_releases), run with the batch's grants. */
        struct deferred *later;
        size_t         nlater, caplater;
    } rel;
} locks = {.lock = PTHREAD_MUTEX_INITIALIZER, .rel.cv = PTHREAD_COND_INITIALIZER, .rel.batch = 1};

static struct lock_state *state_of(int id)
{
    return idmap_get(&locks.map, id);
}

static void grant_to(int id, int to, const uint32_t *vt, const struct lock_atomic *op);
static void grant_successor(int id, struct lock_state *l);

/* A batch is the locks queued for the releaser before it is taken; the
 * release that follows runs every release kept before them (each lock's
 * last unlock came before it was queued), and then a lock of the batch
 * still owned, not held and asked for goes to its successor. One the
 * program took again meanwhile goes at its unlock, which releases first;
 * one that left and came back is in a later batch (`batch` says which).
 * Caller holds locks.lock; *n is 0 when none is queued. */
static int *batch_take(size_t *n, uint64_t *batch, struct deferred **later, size_t *nlater)
{
    int *ids = locks.rel.ids;
    *n = locks.rel.n;
    if (*n)
        *batch = locks.rel.batch++;
    locks.rel.ids = NULL;
    locks.rel.n = locks.rel.cap = 0;
    *later = locks.rel.later;
    *nlater = locks.rel.nlater;
    locks.rel.later = NULL;
    locks.rel.nlater = locks.rel.caplater = 0;
    return ids;
}

/* The batch's deferred work, its release having run. Caller holds
 * locks.lock. */
static void batch_later(struct deferred *later, size_t nlater)
{
    for (size_t i = 0; i < nlater; i++)
        later[i].fn(later[i].arg);
    free(later);
}

/* The batch's grants, its release having run. Caller holds locks.lock. */
static void batch_grant(int *ids, size_t n, uint64_t batch)
{
    for (size_t i = 0; i < n; i++) {
        struct lock_state *l = state_of(ids[i]);
        if (l->batch != batch)
            continue;
        l->batch = 0;
        if (l->owned && !l->held && l->successor)
            grant_successor(ids[i], l);
    }
    free(ids);
}

/* The releaser's loop: each batch's release runs aside, while the program
 * runs on. */
static void *releaser_main(void *arg)
{
    (void)arg;
    smp_internal_thread(); /* the program's signals go to its threads */
    pthread_mutex_lock(&locks.lock);
    for (;;) {
        while (!locks.rel.n && !locks.rel.nlater && !locks.rel.stop)
            pthread_cond_wait(&locks.rel.cv, &locks.lock);
        if (locks.rel.stop)
            break;
        size_t n, nlater;
        uint64_t batch = 0;
        struct deferred *later;
        int *ids = batch_take(&n, &batch, &later, &nlater);
        pthread_mutex_unlock(&locks.lock);
        uint64_t t0 = clock_ns();
        coherence_release_aside();
        stats_add(STAT_LOCK_ASIDE_RELEASES, 1);
        stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
        pthread_mutex_lock(&locks.lock);
        batch_grant(ids, n, batch);
        batch_later(later, nlater);
    }
    pthread_mutex_unlock(&locks.lock);
    return NULL;
}

/* The program's own lock or unlock, with requests queued for the releaser:
 * it takes the batch and runs the release itself, as an unlock with a
 * successor does, rather than leave the requesters waiting until the
 * releaser is woken and gets a CPU (on 2 cores shared with 2 busy
 * programs, most of a contended hand-over). The releaser, woken, finds
 * nothing queued. Caller holds locks.lock; released and taken again.
 * Returns when it began (the call's time is the lock's), 0 when nothing
 * was queued. */
static uint64_t batch_help(void)
{
    if (!locks.rel.n && !locks.rel.nlater)
        return 0;
    uint64_t t0 = clock_ns();
    size_t n, nlater;
    uint64_t batch = 0;
    struct deferred *later;
    int *ids = batch_take(&n, &batch, &later, &nlater);
    pthread_mutex_unlock(&locks.lock);
    coherence_release();
    stats_add(STAT_LOCK_HELPED_RELEASES, 1);
    pthread_mutex_lock(&locks.lock);
    batch_grant(ids, n, batch);
    batch_later(later, nlater);
    pthread_mutex_unlock(&locks.lock);
    coherence_release_sent();
    pthread_mutex_lock(&locks.lock);
    return t0;
}

/* Starts the releaser on first use. Caller holds locks.lock. */
static void releaser_ensure(void)
{
    if (!locks.rel.started) {
        int err = pthread_create(&locks.rel.thread, NULL, releaser_main, NULL);
        if (err)
            log_fatal("cannot start the lock releaser thread: %s", strerror(err));
        locks.rel.started = true;
    }
}

void sync_after_kept_releases(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&locks.lock);
    if (!coherence_release_pending(coherence_release_kept())) {
        fn(arg);
        pthread_mutex_unlock(&locks.lock);
        return;
    }
    releaser_ensure();
    if (locks.rel.nlater == locks.rel.caplater) {
        locks.rel.caplater = locks.rel.caplater ? locks.rel.caplater * 2 : 8;
        locks.rel.later = realloc(locks.rel.later, locks.rel.caplater * sizeof *locks.rel.later);
        if (!locks.rel.later)
            log_fatal("out of memory for a flush");
    }
    locks.rel.later[locks.rel.nlater++] = (struct deferred){fn, arg};
    pthread_cond_signal(&locks.rel.cv);
    pthread_mutex_unlock(&locks.lock);
}

/* Queues a lock for the releaser. Caller holds locks.lock. */
static void releaser_queue(int id, struct lock_state *l)
{
    releaser_ensure();
    if (locks.rel.n == locks.rel.cap) {
        locks.rel.cap = locks.rel.cap ? locks.rel.cap * 2 : 8;
        locks.rel.ids = realloc(locks.rel.ids, locks.rel.cap * sizeof *locks.rel.ids);
        if (!locks.rel.ids)
            log_fatal("out of memory for a lock");
    }
    locks.rel.ids[locks.rel.n++] = id;
    l->batch = locks.rel.batch;
    pthread_cond_signal(&locks.rel.cv);
}

/* Whether an atomic riding on a request or a relayed grant is not one a
 * node of this job can have sent. */
static bool atomic_malformed(const struct lock_atomic *op)
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
 * home is a third node, the grant goes by way of it (on_relay), which
 * performs the operation on the way: one message more than the grant
 * alone, where `to` would otherwise ask the home itself after the grant
 * (two). Caller holds locks.lock. */
static void grant_to(int id, int to, const uint32_t *vt, const struct lock_atomic *op)
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
static void on_relay(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct lock_relay r;
    struct grant_head head;
    size_t rest;
    const unsigned char *tail = ipc_body(src, msg, len, &r, sizeof r, &rest, "relayed lock grant");
    if (rest >= sizeof head)
        memcpy(&head, tail, sizeof head);
    if (rest < sizeof head || r.to < 0 || r.to >= job()->nodes || r.to == job()->rank ||
        r.to == src || atomic_malformed(&r.op) || head.atomic != GRANT_ATOMIC_NONE ||
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

static void tried(int id, int requester, bool taken);

/* Grants the lock to the successor recorded (owned, not held here).
 * Caller holds locks.lock. */
static void grant_successor(int id, struct lock_state *l)
{
    int to = l->successor - 1;
    l->owned = false;
    grant_to(id, to, l->succ_vt, &l->succ_atomic);
    l->successor = 0;
    if (l->succ_try)
        tried(id, to, true);
    l->succ_try = false;
}

/* At the previous owner: someone queued behind us, or tried (`try`: the
 * manager hears whether it took the lock). Caller holds locks.lock. */
static void on_successor(int id, int requester, const uint32_t *vt, const struct lock_atomic *op,
                         bool try)
{
    struct lock_state *l = state_of(id);
    if (try && (!l->owned || l->held)) { /* held here, or on its way to a thread of ours */
        tried(id, requester, false);
        return;
    }
    /* Pending: its own last unlock's release (or one before) has not run.
     * Releases kept after that unlock need not go with it. */
    bool pending = l->owned && !l->held && coherence_release_pending(l->ticket);
    if (l->owned && !l->held && !pending) {
        l->owned = false;
        grant_to(id, requester, vt, op);
        if (try)
            tried(id, requester, true);
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
        releaser_queue(id, l);
}

/* At the manager. Caller holds locks.lock. */
static void send_request(int to, enum sync_type type, int id, int requester, const uint32_t *vt,
                         const struct lock_atomic *op);

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

static void on_try(int id, int requester, const uint32_t *vt);

static void on_request(int id, int requester, const uint32_t *vt, const struct lock_atomic *op)
{
    struct lock_state *m = state_of(id);
    if (m->trying) {
        hold_back(m, false, requester, vt, op);
        return;
    }
    int prev = m->last_owner - 1;
    m->last_owner = requester + 1;
    if (prev < 0) { /* never held: the manager hands it out itself */
        if (requester == job()->rank) {
            struct lock_state *l = state_of(id);
            l->granted = true;
            ipc_notify(); /* when a held-back request of ours is handed on */
        } else
            grant_to(id, requester, vt, op);
    } else if (prev == job()->rank)
        on_successor(id, requester, vt, op, false);
    else
        send_request(prev, SYNC_LOCK_FWD, id, requester, vt, op);
}

/* The requester hears its try failed. Caller holds locks.lock. */
static void busy_to(int id, int requester)
{
    if (requester == job()->rank) {
        state_of(id)->busy = true;
        ipc_notify();
        return;
    }
    int32_t msg = id;
    ipc_send(requester, SYNC_LOCK_BUSY, 0, &msg, sizeof msg);
}

/* A try, at the manager: passed to the last owner, with the lock's other
 * requests held back until it answers. Caller holds locks.lock. */
static void on_try(int id, int requester, const uint32_t *vt)
{
    struct lock_state *m = state_of(id);
    const struct lock_atomic none = {.on = 0};
    if (m->trying) {
        hold_back(m, true, requester, vt, &none);
        return;
    }
    int prev = m->last_owner - 1;
    if (prev < 0) /* never held: it is free */
        on_request(id, requester, vt, &none);
    else if (prev == requester) /* it is on its way to a thread of the requester's */
        busy_to(id, requester);
    else {
        m->trying = true;
        if (prev == job()->rank)
            on_successor(id, requester, vt, &none, true);
        else
            send_request(prev, SYNC_LOCK_TRY_FWD, id, requester, vt, &none);
    }
}

/* The try's outcome, at the manager: the requester is the last owner or
 * hears it is busy, and the requests held back meanwhile go on in their
 * order until one is a try again. Caller holds locks.lock. */
static void on_tried(int id, int requester, bool taken)
{
    struct lock_state *m = state_of(id);
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
            on_try(id, h->requester, h->vt);
        else
            on_request(id, h->requester, h->vt, &h->op);
        free(h);
    }
}

/* At the last owner: tells the manager what became of a try. Caller holds
 * locks.lock. */
static void tried(int id, int requester, bool taken)
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
static void send_request(int to, enum sync_type type, int id, int requester, const uint32_t *vt,
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
        if (atomic_malformed(op))
            log_fatal("node %d sent a malformed atomic with a lock request", src);
    }
    if (m->id < 0 || m->requester < 0 || m->requester >= job()->nodes)
        log_fatal("node %d sent a malformed lock message", src);
}

static void on_acq(int src, const void *msg, size_t len)
{
    struct lock_msg m;
    uint32_t vt[VT_MAX_NODES];
    struct lock_atomic op;
    parse_lock_msg(src, msg, len, &m, vt, &op);
    if (m.id % job()->nodes != job()->rank)
        log_fatal("node %d asked node %d to manage lock %d; protocol error", src, job()->rank, m.id);
    uint64_t t0 = clock_ns();
    pthread_mutex_lock(&locks.lock);
    on_request(m.id, m.requester, vt, &op);
    pthread_mutex_unlock(&locks.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_fwd(int src, const void *msg, size_t len)
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

/* A try: to the manager (on_try), or passed to the last owner. */
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
        on_try(m.id, m.requester, vt);
    else
        on_successor(m.id, m.requester, vt, &op, true);
    pthread_mutex_unlock(&locks.lock);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

static void on_try_msg(int src, const void *msg, size_t len) { try_msg(src, msg, len, true); }
static void on_try_fwd(int src, const void *msg, size_t len) { try_msg(src, msg, len, false); }

static void on_tried_msg(int src, const void *msg, size_t len)
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

static void on_busy(int src, const void *msg, size_t len)
{
    int32_t id;
    size_t rest;
    ipc_body(src, msg, len, &id, sizeof id, &rest, "lock busy");
    pthread_mutex_lock(&locks.lock);
    struct lock_state *l = id >= 0 && !rest ? state_of(id) : NULL;
    if (!l || l->busy || l->granted || l->owned)
        log_fatal("node %d answered busy to a try of lock %d, which was not tried", src, id);
    l->busy = true;
    pthread_mutex_unlock(&locks.lock);
    ipc_notify();
}

static void on_grant(int src, const void *msg, size_t len)
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
    struct lock_state *l = id >= 0 ? state_of(id) : NULL;
    if (!l || l->granted || l->owned)
        log_fatal("node %d granted lock %d, which was not asked for", src, id);
    l->grant_head = head;
    l->grant = ipc_copy_payload(msg, len, sizeof head, &l->grant_len);
    l->grant_from = head.granter ? (int)head.granter - 1 : src;
    l->granted = true;
    pthread_mutex_unlock(&locks.lock);
    ipc_notify();
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
 * it helped a pending release first (t0 set: batch_help) or the run is
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
    uint64_t t0 = batch_help();
    struct lock_state *l = state_of(id);
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
            tried(id, l->successor - 1, false);
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
        on_try(id, job()->rank, vt);
    else if (manager == job()->rank)
        on_request(id, job()->rank, vt, op);
    else
        send_request(manager, try ? SYNC_LOCK_TRY : SYNC_LOCK_ACQ, id, job()->rank, vt, op);
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
    uint64_t t0 = batch_help();
    uint64_t sent0 = ipc_sent_by_thread();
    struct lock_state *l = id >= 0 ? state_of(id) : NULL;
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
        grant_successor(id, l);
        l->batch = 0; /* granted here, not by the releaser */
    }
    pthread_mutex_unlock(&locks.lock);
    coherence_release_sent();
    uint64_t t1 = clock_ns();
    stats_add(STAT_T_LOCK_NS, t1 - t0);
    if (TRACE_ON)
        trace_put(TRACE_UNLOCK, 0, 0, (uint32_t)id, t0, t_released, t1);
}

/* Stops the releaser, once no message can arrive (after ipc_finish): a
 * request still queued would be a lock nobody can take any more. */
void sync_lock_finish(void)
{
    pthread_mutex_lock(&locks.lock);
    bool started = locks.rel.started;
    locks.rel.stop = true;
    pthread_cond_signal(&locks.rel.cv);
    pthread_mutex_unlock(&locks.lock);
    if (started)
        pthread_join(locks.rel.thread, NULL);
    pthread_mutex_lock(&locks.lock);
    free(locks.rel.ids);
    locks.rel.ids = NULL;
    locks.rel.n = locks.rel.cap = 0;
    free(locks.rel.later);
    locks.rel.later = NULL;
    locks.rel.nlater = locks.rel.caplater = 0;
    locks.rel.started = locks.rel.stop = false;
    pthread_mutex_unlock(&locks.lock);
}

void sync_lock_start(void)
{
    locks.map.size = sizeof(struct lock_state);
    ipc_register(SYNC_LOCK_ACQ, "LOCK_ACQ", on_acq, NULL);
    ipc_register(SYNC_LOCK_FWD, "LOCK_FWD", on_fwd, NULL);
    ipc_register(SYNC_LOCK_GRANT, "LOCK_GRANT", on_grant, NULL);
    ipc_register(SYNC_LOCK_RELAY, "LOCK_RELAY", on_relay, NULL);
    ipc_register(SYNC_LOCK_TRY, "LOCK_TRY", on_try_msg, NULL);
    ipc_register(SYNC_LOCK_TRY_FWD, "LOCK_TRY_FWD", on_try_fwd, NULL);
    ipc_register(SYNC_LOCK_TRIED, "LOCK_TRIED", on_tried_msg, NULL);
    ipc_register(SYNC_LOCK_BUSY, "LOCK_BUSY", on_busy, NULL);
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
        struct grant_head head = state_of(c.id)->grant_head;
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
    struct lock_state *l = state_of(id);
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
