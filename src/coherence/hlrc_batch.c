/*
 * hlrc_batch.c — atomic updates whose result the program never uses,
 * sent to the page's home in batches (hlrc).
 *
 * A relaxed read-modify-write whose old value goes nowhere (OpenMP's
 * `#pragma omp atomic x += e`, a histogram's `h[b]++`; dsmcc finds them,
 * sync/atomic.c receives them) need not wait for an answer. On a page
 * homed on another node and not written here, it is queued on this node
 * (address, operation, operand, width) and sent to the home with the
 * others queued for it in one message (HLRC_ATOMIC_BATCH); the home
 * performs them one by one in the order sent, each as home_atomic.c's
 * COH_ATOMIC_REQ would (the hardware's atomic on its copy, the page's
 * version advanced), and acknowledges them all in one message. Never as
 * a diff: only the operations travel, so they combine at the home with
 * every other node's, in one modification order per word.
 *
 * The queue is the node's (its threads' operations in the order they
 * made them), under the fault lock, and is flushed — sent, and every
 * acknowledgement awaited and recorded as this node's writes — before
 * anything that must see it: every release (hlrc.c wraps them), every
 * fault (a thread reading what it added faults, below, and so sees it),
 * every other atomic on shared memory (sync/atomic.c), and when full.
 * docs/design.md, "Atomics", says why this keeps the memory model.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_batch.h"
#include "coherence/hlrc_state.h"
#include "coherence/home.h"
#include "coherence/migrate.h"
#include "ipc/ipc.h"

/* hlrc's own message types (coherence.h: a protocol numbers its own). */
enum {
    HLRC_ATOMIC_BATCH = COH_PROTOCOL_TYPES, /* queued updates, to their pages' home */
    HLRC_ATOMIC_BATCH_ACK,                  /* performed: each one's new version */
};

/* Operations in one batch: a bound on the queue, and so on the work a
 * flush waits for; fewer where a datagram holds fewer (queue_max). */
#define BATCH_MAX 128

struct batch_hdr {  /* both messages: a header, then `count` items */
    uint32_t count, zero;
};
struct batch_op {   /* HLRC_ATOMIC_BATCH's items (aux: the requester's next interval) */
    uint32_t page, offset;
    uint32_t need;  /* as a page request's */
    uint8_t  op, size;
    uint16_t idx;   /* its place in the sender's queue, sent back in the ack */
    uint64_t value;
};
struct batch_ack {  /* HLRC_ATOMIC_BATCH_ACK's items */
    uint32_t version; /* the page's after it; 0: the word did not change */
    int32_t  home;    /* status HOME_ATOMIC_NOT_HOME: the home the sender knows */
    uint32_t status;  /* enum home_atomic_status */
    uint32_t idx;     /* the operation's batch_op.idx */
    uint64_t old;
};

static DSM_STATE struct {
    bool             on;
    size_t           max;         /* queue bound: queue_max() */
    _Atomic size_t   pending;     /* n, readable without the fault lock */
    size_t           n;           /* queued (under the fault lock) */
    struct batch_op  q[BATCH_MAX];
    struct batch_op  out[BATCH_MAX]; /* one home's batch being built */
    pthread_mutex_t  lock;        /* the acknowledgements below */
    int              awaited;     /* batches sent, not yet acknowledged */
    struct batch_ack ack[BATCH_MAX];
} hb = {.lock = PTHREAD_MUTEX_INITIALIZER};

void hlrc_batch_start(void)
{
    hb.on = job()->nodes > 1 && coherence_params()->atomic_at_home;
}

/* The queue's bound: as many operations as their acknowledgements fit in
 * one datagram, at most BATCH_MAX (the transport is up by the first). */
static size_t queue_max(void)
{
    if (hb.max == 0) {
        size_t room = ipc_message_room();
        size_t fits = room > sizeof(struct batch_hdr)
                          ? (room - sizeof(struct batch_hdr)) / sizeof(struct batch_ack) : 0;
        hb.max = fits == 0 || fits > BATCH_MAX ? BATCH_MAX : fits;
    }
    return hb.max;
}

/* Not on nodes of several threads (dsmrun --threads), which keep the
 * block lock's way for every atomic: there a thread's plain read of a
 * word it had just added to was seen, about once in ten runs of
 * omp.atomic_histogram_exact.t2.n2, to miss its own update (a copy
 * landing from another thread's fetch, it seems; not found yet). */
bool hlrc_batch_on(void) { return hb.on && !smp_multi(); }

/* ---- the requester ----------------------------------------------------- */

static bool all_acked(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hb.lock);
    bool done = hb.awaited == 0;
    pthread_mutex_unlock(&hb.lock);
    return done;
}

/* Sends, in one message, the queue's operations on pages homed at
 * `home`, in queue order, and marks them sent. */
static void send_to(int home, uint32_t interval, bool *sent)
{
    size_t k = 0;
    for (size_t i = 0; i < hb.n; i++) {
        if (sent[i] || mem_home(hb.q[i].page) != home)
            continue;
        hb.out[k] = hb.q[i];
        hb.out[k].idx = (uint16_t)i;
        hb.out[k].need = hlrc.pages[hb.q[i].page].need;
        sent[i] = true;
        k++;
    }
    struct batch_hdr h = {.count = (uint32_t)k};
    struct iovec iov[2] = {{&h, sizeof h}, {hb.out, k * sizeof *hb.out}};
    pthread_mutex_lock(&hb.lock);
    hb.awaited++;
    pthread_mutex_unlock(&hb.lock);
    ipc_sendv(home, HLRC_ATOMIC_BATCH, interval, iov, 2);
    stats_add(STAT_ATOMIC_BATCHES, 1);
    stats_add(STAT_ATOMICS_BATCHED, k);
}

/* Flushes the queue. Caller holds the fault lock. */
void hlrc_batch_flush_locked(void)
{
    while (hb.n > 0) {
        bool sent[BATCH_MAX] = {false};
        uint32_t interval = interval_next();
        /* Every operation goes in one round: batches to every home at
         * once, then every acknowledgement. */
        for (;;) {
            size_t i = 0;
            while (i < hb.n && sent[i])
                i++;
            if (i == hb.n)
                break;
            send_to(mem_home(hb.q[i].page), interval, sent);
        }
        ipc_wait(all_acked, NULL, 0);
        /* Each performed operation is this node's write, as an atomic at
         * the home is (hlrc_atomic_wrote); one sent to a node that is no
         * longer the home (the page moved at a barrier this node did not
         * hear of) goes again, to the home it names, in its order. */
        size_t again = 0;
        for (size_t i = 0; i < hb.n; i++) {
            struct batch_op *o = &hb.q[i];
            struct batch_ack *a = &hb.ack[i];
            if (a->status == HOME_ATOMIC_NOT_HOME) {
                if (a->home < 0 || a->home == job()->rank)
                    log_fatal("internal error: node %d is not the home of page %u, and names "
                              "node %d", mem_home(o->page), o->page, a->home);
                mem_set_home(o->page, a->home);
                hb.q[again++] = *o;
                continue;
            }
            if (a->status == HOME_ATOMIC_CHANGED) {
                struct coh_atomic c = {.op = o->op, .size = o->size, .value = o->value,
                                       .old = a->old};
                hlrc_atomic_wrote_locked(o->page, o->offset, &c, a->version);
            }
        }
        hb.n = again;
    }
    atomic_store_explicit(&hb.pending, 0, memory_order_relaxed);
}

static void flush_run(void *arg)
{
    (void)arg;
    coherence_lock();
    hlrc_batch_flush_locked();
    coherence_unlock();
}

void hlrc_batch_flush(void)
{
    if (atomic_load_explicit(&hb.pending, memory_order_relaxed) == 0)
        return;
    stack_private(flush_run, NULL);
}

struct queue_call {
    size_t            page, offset;
    struct coh_atomic a;
    bool              queued;
};

/* Queues the update if its page is homed on another node that this node
 * knows, not written here since its last release (the home's copy must
 * hold this node's writes before the update: those go home as a diff,
 * which would also overwrite the word), and no copy of it on its way (a
 * pull, another thread's fetch: it could land without the update, and be
 * read). A copy here is made invalid: a thread reading it faults, and the
 * fault flushes the queue first (hlrc.c), so it reads its own updates.
 * The others go the way of any atomic, at the home all the same
 * (hlrc_atomic.c). */
static void queue_run(void *arg)
{
    struct queue_call *c = arg;
    coherence_lock();
    struct page_entry *e = &mem.pages[c->page];
    int home = mem_home(c->page);
    pthread_mutex_lock(&hlrc.lock);
    bool landing = hlrc.pages[c->page].pulling || hlrc.pages[c->page].fetching;
    pthread_mutex_unlock(&hlrc.lock);
    c->queued = hlrc_batch_on() && home >= 0 && home != job()->rank && !e->twin && !landing &&
                e->state != PAGE_WRITE;
    if (c->queued) {
        if (e->state != PAGE_INVALID) {
            hlrc_invalidate(c->page);
            mem_protect_flush();
        }
        if (hb.n == queue_max())
            hlrc_batch_flush_locked();
        hb.q[hb.n++] = (struct batch_op){.page = (uint32_t)c->page, .offset = (uint32_t)c->offset,
                                         .op = c->a.op, .size = c->a.size, .value = c->a.value};
        atomic_store_explicit(&hb.pending, hb.n, memory_order_relaxed);
    }
    coherence_unlock();
}

bool hlrc_batch_queue(size_t page, size_t offset, const struct coh_atomic *a)
{
    if (!hlrc_batch_on())
        return false;
    struct queue_call c = {.page = page, .offset = offset, .a = *a};
    stack_private(queue_run, &c);
    return c.queued;
}

static void on_batch_ack(int src, const void *msg, size_t len)
{
    struct batch_hdr h;
    size_t rest;
    const unsigned char *items = ipc_body(src, msg, len, &h, sizeof h, &rest, "atomic batch ack");
    pthread_mutex_lock(&hb.lock);
    bool fits = hb.awaited > 0 && h.zero == 0 && h.count > 0 && h.count <= BATCH_MAX &&
                rest == h.count * sizeof(struct batch_ack);
    for (uint32_t i = 0; fits && i < h.count; i++) {
        struct batch_ack a;
        memcpy(&a, items + i * sizeof a, sizeof a);
        if (a.idx >= BATCH_MAX || a.status > HOME_ATOMIC_NOT_HOME || a.home >= job()->nodes ||
            (a.status == HOME_ATOMIC_CHANGED && a.version == 0))
            fits = false;
        else
            hb.ack[a.idx] = a;
    }
    if (fits)
        hb.awaited--;
    pthread_mutex_unlock(&hb.lock);
    if (!fits)
        log_fatal("node %d sent an atomic batch acknowledgement nobody asked for, or a malformed one",
                  src);
    ipc_notify();
}

/* ---- the home (delivering thread) -------------------------------------- */

static bool batchable(uint8_t op)
{
    return op == COH_ATOMIC_ADD || op == COH_ATOMIC_SUB || op == COH_ATOMIC_AND ||
           op == COH_ATOMIC_OR || op == COH_ATOMIC_XOR;
}

static void on_batch(int src, const void *msg, size_t len)
{
    struct batch_hdr h;
    size_t rest;
    const unsigned char *items = ipc_body(src, msg, len, &h, sizeof h, &rest, "atomic batch");
    if (src == job()->rank || h.zero || h.count == 0 || h.count > BATCH_MAX ||
        rest != h.count * sizeof(struct batch_op))
        log_fatal("node %d sent a malformed atomic batch", src);
    uint32_t interval = ipc_msg_aux(msg);
    struct batch_ack acks[BATCH_MAX];
    for (uint32_t i = 0; i < h.count; i++) {
        struct batch_op o;
        memcpy(&o, items + i * sizeof o, sizeof o);
        if (o.idx >= BATCH_MAX || !batchable(o.op) || !coh_atomic_fits(o.page, o.op, o.size, o.offset))
            log_fatal("node %d sent a malformed atomic batch", src);
        struct batch_ack *a = &acks[i];
        *a = (struct batch_ack){.home = mem_home(o.page), .idx = o.idx};
        if (a->home != job()->rank) {
            a->status = HOME_ATOMIC_NOT_HOME;
            continue;
        }
        struct coh_atomic c = {.op = o.op, .size = o.size, .value = o.value};
        a->version = hlrc_perform_atomic(src, o.page, o.need, o.offset, &c, interval);
        a->status = a->version ? HOME_ATOMIC_CHANGED : HOME_ATOMIC_UNCHANGED;
        a->old = c.old;
        stats_add(STAT_ATOMICS_SERVED, 1);
    }
    struct iovec iov[2] = {{&h, sizeof h}, {acks, h.count * sizeof *acks}};
    ipc_sendv(src, HLRC_ATOMIC_BATCH_ACK, 0, iov, 2);
}

void hlrc_batch_register(void)
{
    ipc_register(HLRC_ATOMIC_BATCH, "ATOMIC_BATCH", on_batch, NULL);
    ipc_register(HLRC_ATOMIC_BATCH_ACK, "ATOMIC_BATCH_ACK", on_batch_ack, NULL);
}
