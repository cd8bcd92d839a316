/*
 * home_atomic.c — an atomic operation performed at its page's home.
 *
 * A node that holds a word's block lock (sync/atomic.c) but no valid copy
 * of the word's page would otherwise fault the page in (a round trip, a
 * page's copy, a twin) to change a few bytes, and send a diff home at its
 * next release; one with a clean copy would still take the write fault,
 * the twin and the diff. Instead it sends the operation to the page's home
 * (COH_ATOMIC_REQ), which performs it on its copy with the hardware's
 * atomic, as it would apply a diff (the protocol's home_ops.atomic: the
 * page's version advances), and answers with the word's old value and the
 * new version (COH_ATOMIC_REP): one round trip, and the requester records
 * the version as a write notice of its own, as for a diff it sent. Why
 * that keeps the memory model: docs/design.md, "Atomics".
 *
 * The same operation may ride on the word's lock request instead
 * (sync/lock.c): when the node that grants the lock is the page's home,
 * it performs the operation as it grants (coherence_atomic_here), and the
 * grant carries the answer: the lock's round trip is the atomic's. A
 * granter that is not the home sends the grant by way of the home
 * (coherence_atomic_home), which performs it on the way.
 *
 * Like a page request, the operation goes to the home the requester knows,
 * or to the page's base node; a node that is not the home (the base node
 * of a page whose home is elsewhere, a former home) does nothing and says
 * so, naming the home it knows, and the requester runs the operation on
 * its own copy this time (the fault finds the home as fetches do).
 */
#include <errno.h>
#include <pthread.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "coherence/home.h"
#include "ipc/ipc.h"

static DSM_STATE struct {
    pthread_mutex_t        lock; /* the slot */
    const struct home_ops *ops;
    struct {                     /* the operation the program waits for */
        bool              waiting, done;
        uint32_t          page;
        struct atomic_rep rep;
    } slot;
} ha = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* One width of coh_atomic_apply: the operation on a T, seq_cst. */
#define APPLY(T)                                                                               \
    do {                                                                                       \
        volatile T *w = p;                                                                     \
        T v = (T)a->value, old;                                                                \
        switch (a->op) {                                                                       \
        case COH_ATOMIC_LOAD: old = __atomic_load_n(w, __ATOMIC_SEQ_CST); break;               \
        case COH_ATOMIC_STORE: old = __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST); break;       \
        case COH_ATOMIC_XCHG: old = __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST); break;        \
        case COH_ATOMIC_ADD: old = __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST); break;          \
        case COH_ATOMIC_SUB: old = __atomic_fetch_sub(w, v, __ATOMIC_SEQ_CST); break;          \
        case COH_ATOMIC_AND: old = __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST); break;          \
        case COH_ATOMIC_OR: old = __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST); break;            \
        case COH_ATOMIC_XOR: old = __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST); break;          \
        case COH_ATOMIC_NAND: old = __atomic_fetch_nand(w, v, __ATOMIC_SEQ_CST); break;        \
        default: /* COH_ATOMIC_CAS */                                                          \
            old = (T)a->expected;                                                              \
            __atomic_compare_exchange_n(w, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
            break;                                                                             \
        }                                                                                      \
        a->old = (uint64_t)old;                                                                \
        return __atomic_load_n(w, __ATOMIC_SEQ_CST) != old;                                    \
    } while (0)

bool coh_atomic_apply(void *p, struct coh_atomic *a)
{
    switch (a->size) {
    case 1: APPLY(uint8_t);
    case 2: APPLY(uint16_t);
    case 4: APPLY(uint32_t);
    default: APPLY(uint64_t);
    }
}

bool coh_atomic_fits(uint32_t page, uint8_t op, uint8_t size, uint32_t offset)
{
    return page < mem.npages && op < COH_ATOMIC_OPS &&
           (size == 1 || size == 2 || size == 4 || size == 8) && offset % size == 0 &&
           offset + size <= mem.page_size;
}

/* The word at p as a uint64_t, zero-extended. */
static uint64_t word_at(const void *p, uint8_t size)
{
    switch (size) {
    case 1: return __atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED);
    case 2: return __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED);
    case 4: return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
    default: return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
    }
}

bool coh_atomic_replay(void *p, const struct coh_atomic *a)
{
    if (word_at(p, a->size) != a->old)
        return false;
    struct coh_atomic again = *a;
    coh_atomic_apply(p, &again);
    return true;
}

/* ---- the requester (program thread, fault lock held) ------------------- */

static bool answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ha.lock);
    bool done = ha.slot.done;
    pthread_mutex_unlock(&ha.lock);
    return done;
}

int64_t home_atomic(size_t page, int home, uint32_t need, size_t offset, struct coh_atomic *a,
                    uint32_t interval)
{
    pthread_mutex_lock(&ha.lock);
    ha.slot.waiting = true;
    ha.slot.done = false;
    ha.slot.page = (uint32_t)page;
    pthread_mutex_unlock(&ha.lock);
    struct atomic_req r = {.page = (uint32_t)page, .need = need, .offset = (uint32_t)offset,
                           .op = a->op, .size = a->size, .value = a->value, .expected = a->expected};
    ipc_send(home >= 0 ? home : mem_base_node(page), COH_ATOMIC_REQ, interval, &r, sizeof r);
    ipc_wait(answered, NULL, 0);
    pthread_mutex_lock(&ha.lock);
    ha.slot.waiting = false;
    struct atomic_rep rep = ha.slot.rep;
    pthread_mutex_unlock(&ha.lock);
    if (rep.status == HOME_ATOMIC_NOT_HOME)
        return -EAGAIN;
    a->old = rep.old;
    stats_add(STAT_ATOMICS_AT_HOME, 1);
    return rep.status == HOME_ATOMIC_CHANGED ? rep.version : 0;
}

static void on_atomic_rep(int src, const void *msg, size_t len)
{
    struct atomic_rep r;
    ipc_body(src, msg, len, &r, sizeof r, NULL, "atomic reply");
    pthread_mutex_lock(&ha.lock);
    bool expected = ha.slot.waiting && !ha.slot.done && r.page == ha.slot.page;
    pthread_mutex_unlock(&ha.lock);
    if (!expected || r.status > HOME_ATOMIC_NOT_HOME || r.home < -1 || r.home >= job()->nodes ||
        (r.status == HOME_ATOMIC_CHANGED && r.version == 0))
        log_fatal("node %d sent an atomic reply nobody asked for, or a malformed one", src);
    /* Recorded here, as a page reply's home is: the next fault or atomic
     * goes there. A home keeps its own knowledge. */
    if (r.status == HOME_ATOMIC_NOT_HOME && r.home >= 0 && mem_home(r.page) != job()->rank)
        mem_set_home(r.page, r.home);
    pthread_mutex_lock(&ha.lock);
    ha.slot.rep = r;
    ha.slot.done = true;
    pthread_mutex_unlock(&ha.lock);
    ipc_notify();
}

/* ---- the home (delivering thread) -------------------------------------- */

static void on_atomic_req(int src, const void *msg, size_t len)
{
    uint64_t t0 = clock_ns();
    struct atomic_req r;
    ipc_body(src, msg, len, &r, sizeof r, NULL, "atomic request");
    if (r.zero || !coh_atomic_fits(r.page, r.op, r.size, r.offset) || src == job()->rank)
        log_fatal("node %d sent a malformed atomic request", src);
    struct atomic_rep rep = {.page = r.page, .home = mem_home(r.page)};
    if (rep.home != job()->rank) {
        rep.status = HOME_ATOMIC_NOT_HOME;
    } else {
        struct coh_atomic a = {.op = r.op, .size = r.size, .value = r.value, .expected = r.expected};
        rep.version = ha.ops->atomic(src, r.page, r.need, r.offset, &a, ipc_msg_aux(msg));
        rep.status = rep.version ? HOME_ATOMIC_CHANGED : HOME_ATOMIC_UNCHANGED;
        rep.old = a.old;
        stats_add(STAT_ATOMICS_SERVED, 1);
    }
    ipc_send(src, COH_ATOMIC_REP, 0, &rep, sizeof rep);
    stats_add(STAT_T_SERVICE_NS, clock_ns() - t0);
}

int coherence_atomic_here(int requester, size_t page, uint32_t need, size_t offset,
                          struct coh_atomic *a, uint32_t interval, uint32_t *version)
{
    if (!ha.ops || requester == job()->rank || mem_home(page) != job()->rank)
        return -EAGAIN;
    *version = ha.ops->atomic(requester, page, need, offset, a, interval);
    stats_add(STAT_ATOMICS_SERVED, 1);
    return 0;
}

int coherence_atomic_home(size_t page)
{
    if (!ha.ops)
        return -1;
    int home = mem_home(page);
    return home >= 0 || mem_base_node(page) == job()->rank ? home : mem_base_node(page);
}

void home_atomic_start(const struct home_ops *ops)
{
    ha.ops = ops;
    ipc_register(COH_ATOMIC_REQ, "ATOMIC_REQ", on_atomic_req, NULL);
    ipc_register(COH_ATOMIC_REP, "ATOMIC_REP", on_atomic_rep, NULL);
}
