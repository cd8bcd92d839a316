/*
 * atomic.c — the program's atomic operations, made coherent across nodes.
 *
 * A hardware atomic on a DSM page updates one node's copy of it: two nodes
 * adding to one counter each add to their own copy, and one sum is lost
 * when the copies' diffs meet at the home. dsmcc therefore has LLVM's
 * ThreadSanitizer pass turn every atomic instruction of the program (C11
 * and C++ atomics, __atomic and __sync builtins, OpenMP `atomic` in every
 * language) into a call of the __tsan_atomic* interface, and nothing else
 * (memory accesses and function entry stay as they are). Those calls land
 * here (LLVM's compiler-rt/include/sanitizer/tsan_interface_atomic.h names
 * them; written for dsm, not taken from it).
 *
 * An address outside the shared region runs as the hardware atomic it was.
 * One in it runs under a dsm lock named by its 16-byte block (every
 * naturally aligned atomic of 16 bytes or less lies in one; overlapping
 * atomics of different sizes meet on the same lock): the lock's grant
 * brings the intervals of every earlier holder, so the page is made
 * current by the protocol's own acquire (invalidated, and fetched again
 * at the access) under every protocol; the operation runs on the local
 * copy; the unlock is a release that carries it on to the next holder. A
 * lock taken again on the same node costs no message (lock.c keeps its
 * release), so a node adding in a loop pays one hand-over per change of
 * node, not per add.
 *
 * Memory orders: every atomic on shared memory is both an acquire and a
 * release in dsm terms, whatever its order, and the operations on one
 * block are linearised by its lock, so each is at least as strong as
 * seq_cst asks (OpenMP 5.x: an atomic with a release, acquire or seq_cst
 * order implies the matching flush). Fences therefore need only order the
 * node's own accesses: the hardware fence does.
 *
 * Under hlrc, an atomic whose block lock has just come from another node,
 * on a page this node has not written since its last release (a load: on
 * a page not valid here), is done at the page's home instead, in one
 * round trip and without the page (home_atomic.c); under the same lock,
 * so the two ways are linearised together. docs/design.md, "Atomics",
 * says why that keeps the memory model, and what each costs
 * (bench/omp/atomic_cost.c).
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/job.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "mem/mem.h"
#include "sync/sync.h"

/* Under any -fsanitize (the sanitizer build), gcc declares this interface
 * as builtins of its own, with untyped parameters (volatile void *, int
 * orders, unsigned values): the same registers, so the same ABI, as the
 * typed declarations below, which follow LLVM's header. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wbuiltin-declaration-mismatch"
#endif

/* The ids are the top SYNC_ATOMIC_LOCKS of the int range (sync.h): an
 * atomic never runs while its own thread waits for another lock, so these
 * locks are always taken last and cannot deadlock with the program's. */
#define ATOMIC_BLOCK_SHIFT 4

/* Threads of one node doing atomics on one block take its dsm lock one
 * after another (lock.c's locks belong to the node): a stripe of local
 * mutexes, indexed like the ids, orders them first. */
#define LOCAL_STRIPES 256

static DSM_STATE struct {
    atomic_bool     on;      /* a job of several nodes is running */
    bool            at_home; /* the protocol can, and DSM_ATOMIC_AT_HOME */
    bool            by_base; /* block locks managed by their page's base node */
    pthread_mutex_t local[LOCAL_STRIPES];
} at = {.local = {[0 ... LOCAL_STRIPES - 1] = PTHREAD_MUTEX_INITIALIZER}};

void sync_atomic_start(void)
{
    at.at_home = coh->atomic && sync_params()->atomic_at_home;
    /* The protocol alone decides, not DSM_ATOMIC_AT_HOME: every node must
     * name a block's lock alike, and the protocol is the job's. */
    at.by_base = coh->atomic != NULL;
    atomic_store(&at.on, job()->nodes > 1);
}

void sync_atomic_finish(void)
{
    atomic_store(&at.on, false);
}

int sync_atomic_lock_id_managed(uint32_t hash, int nodes, int manager)
{
    /* The ids of the range that `manager` manages (id mod nodes) are
     * first, first + nodes, ...; the last slot is left out, so that the
     * highest stays in range whatever `first` is. */
    int first = SYNC_ATOMIC_LOCK_BASE + (manager - SYNC_ATOMIC_LOCK_BASE % nodes + nodes) % nodes;
    uint32_t slots = SYNC_ATOMIC_LOCKS / (uint32_t)nodes - 1;
    return first + (int)(hash % slots) * nodes;
}

/* The block's lock. Where the protocol does atomics at the page's home
 * (hlrc), its manager is the page's base node, which is the home of every
 * page the default placement (the allocating node) homes: a free block
 * lock is then granted by the node that performs the operation, with the
 * grant, in one round trip, on any number of nodes; hashed over all the
 * managers, the grant came from the home only once in `nodes` times, and
 * the operation cost a second round trip otherwise. Elsewhere neighbouring
 * blocks (an array of counters) spread over the managers. */
int sync_atomic_lock_id(const volatile void *addr)
{
    uintptr_t block = (uintptr_t)addr >> ATOMIC_BLOCK_SHIFT;
    /* Fibonacci hashing: neighbouring blocks fall on ids far apart. */
    uint32_t h = (uint32_t)((block * 0x9e3779b97f4a7c15ull) >> 32);
    if (at.by_base && mem_contains((const void *)addr))
        return sync_atomic_lock_id_managed(h, job()->nodes, mem_base_node(mem_page_of((const void *)addr)));
    return SYNC_ATOMIC_LOCK_BASE + (int)(h % SYNC_ATOMIC_LOCKS);
}

/* The same, under a name libdsm exports (src/libdsm.map reserves __dsm_
 * for the implementation): bench/omp/atomic_cost places its words by the
 * node that manages their lock. */
int __dsm_atomic_lock_id(const volatile void *addr) __attribute__((alias("sync_atomic_lock_id")));

/* Whether the atomic on addr must go through a lock. */
static inline bool coherent(const volatile void *addr)
{
    return atomic_load_explicit(&at.on, memory_order_relaxed) && mem_contains((const void *)addr);
}

bool sync_atomic_applies(const volatile void *addr) { return coherent(addr); }

/* A thread that spins on an atomic (a flag another thread sets) must let
 * that thread run when the node's threads take turns on its run slots
 * (base/smp.h): while others wait for a slot, every 64th atomic a thread
 * makes yields its slot first. */
static inline void let_others_run(void)
{
    static __thread unsigned n;
    if (smp_slot_waiters() && (++n & 63) == 0)
        smp_yield();
}

/* Returns the id taken; its local stripe is held until atomic_end. */
static int atomic_begin(const volatile void *addr)
{
    let_others_run();
    int id = sync_atomic_lock_id(addr);
    pthread_mutex_lock(&at.local[(unsigned)id % LOCAL_STRIPES]);
    sync_lock(id);
    stats_add(STAT_ATOMICS, 1);
    return id;
}

/* atomic_begin for an operation that may run at the page's home: when the
 * page is away (not written here, or for a load not valid here; homed
 * elsewhere: coherence_ops.atomic_away), `a` rides on the lock's
 * request, and the node that grants the lock performs it if it is the
 * home (sync_lock_atomic); *done says whether it did. The check runs off
 * the shared stack (base/stack.h): it holds the fault lock while it
 * writes its answer, which must never fault. */
struct begin_call {
    const volatile void *addr;
    int                  id;
    struct coh_atomic    a;
    bool                 done;
};

static void begin_run(void *arg)
{
    struct begin_call c = *(struct begin_call *)arg;
    size_t page = mem_page_of((const void *)c.addr);
    uint32_t need;
    if (coh->atomic_away(page, c.a.op, &need))
        c.done = sync_lock_atomic(c.id, page, (uintptr_t)c.addr & (mem.page_size - 1), need, &c.a);
    else
        sync_lock(c.id);
    *(struct begin_call *)arg = c;
}

static int atomic_begin_op(const volatile void *addr, struct coh_atomic *a, bool *done)
{
    *done = false;
    if (!at.at_home)
        return atomic_begin(addr);
    let_others_run();
    int id = sync_atomic_lock_id(addr);
    pthread_mutex_lock(&at.local[(unsigned)id % LOCAL_STRIPES]);
    struct begin_call c = {.addr = addr, .id = id, .a = *a};
    stack_private(begin_run, &c);
    *a = c.a;
    *done = c.done;
    stats_add(STAT_ATOMICS, 1);
    return id;
}

static void atomic_end(int id)
{
    sync_unlock(id);
    pthread_mutex_unlock(&at.local[(unsigned)id % LOCAL_STRIPES]);
}

int sync_atomic_begin(const volatile void *addr) { return atomic_begin(addr); }
void sync_atomic_end(int taken) { atomic_end(taken); }

/* The interface's memory order (tsan_interface_atomic.h): the values of
 * C11's memory_order and of the __ATOMIC_* constants, in the same order. */
typedef enum {
    tsan_relaxed, tsan_consume, tsan_acquire, tsan_release, tsan_acq_rel, tsan_seq_cst
} tsan_order;

/* The interface's types. */
typedef char     tsan_a8;
typedef short    tsan_a16;
typedef int      tsan_a32;
typedef long     tsan_a64;

/* At the page's home instead of on the local copy (coherence_ops.atomic,
 * hlrc's), after the lock's grant, when the granter was not the home
 * (atomic_begin_op): when the block's lock has just come from another
 * node and the page is away (coherence_ops.atomic_away), one round trip
 * to the home replaces the page's fetch, its twin and the diff of the
 * next release. When the lock was still here (this node did the block's
 * last atomic) the page is fetched as before, and the atomics that follow
 * on the node cost no message at all. Off the shared stack (base/stack.h):
 * it waits for the reply. */
struct at_home_call {
    const volatile void *addr;
    int                  id;
    struct coh_atomic    a;
    bool                 done;
};

static void at_home_run(void *arg)
{
    struct at_home_call c = *(struct at_home_call *)arg;
    size_t page = mem_page_of((const void *)c.addr);
    size_t offset = (uintptr_t)c.addr & (mem.page_size - 1);
    c.done = sync_lock_came(c.id) && coh->atomic(page, offset, &c.a) == 0;
    *(struct at_home_call *)arg = c;
}

static bool at_home(const volatile void *addr, int id, struct coh_atomic *a)
{
    if (!at.at_home)
        return false;
    struct at_home_call c = {.addr = addr, .id = id, .a = *a};
    stack_private(at_home_run, &c);
    a->old = c.a.old;
    return c.done;
}

/* The operation `kind` (operand v, compared value e) either at the home,
 * which sets old_, or as the hardware's expression `expr` on the local
 * copy, seq_cst (the strongest: the order the program asked for is
 * implied, and a shared address runs under a lock anyway). */
#define HOME_OR(addr, kind, v, e, expr, from_old)                                                \
    do {                                                                                       \
        if (!coherent(addr))                                                                   \
            return expr;                                                                       \
        struct coh_atomic a_ = {.op = (kind), .size = sizeof *(addr), .value = (uint64_t)(v),     \
                                .expected = (uint64_t)(e)};                                    \
        bool done_;                                                                            \
        int id_ = atomic_begin_op(addr, &a_, &done_);                                          \
        __typeof__(expr) r_;                                                                   \
        if (done_ || at_home(addr, id_, &a_)) {                                                \
            uint64_t old_ = a_.old;                                                            \
            r_ = (from_old);                                                                   \
        } else {                                                                               \
            r_ = expr;                                                                         \
        }                                                                                      \
        atomic_end(id_);                                                                       \
        return r_;                                                                             \
    } while (0)

#define HOME_OR_VOID(addr, kind, v, stmt)                                                        \
    do {                                                                                       \
        if (!coherent(addr)) {                                                                 \
            stmt;                                                                              \
            return;                                                                            \
        }                                                                                      \
        struct coh_atomic a_ = {.op = (kind), .size = sizeof *(addr), .value = (uint64_t)(v)};   \
        bool done_;                                                                            \
        int id_ = atomic_begin_op(addr, &a_, &done_);                                          \
        if (!done_ && !at_home(addr, id_, &a_))                                                \
            stmt;                                                                              \
        atomic_end(id_);                                                                       \
    } while (0)

/* 16 bytes: always on the local copy, under the lock. */
#define COHERENT(addr, expr)                                                                   \
    do {                                                                                       \
        if (!coherent(addr))                                                                   \
            return expr;                                                                       \
        int id_ = atomic_begin(addr);                                                          \
        __typeof__(expr) r_ = expr;                                                            \
        atomic_end(id_);                                                                       \
        return r_;                                                                             \
    } while (0)

#define COHERENT_VOID(addr, stmt)                                                              \
    do {                                                                                       \
        if (!coherent(addr)) {                                                                 \
            stmt;                                                                              \
            return;                                                                            \
        }                                                                                      \
        int id_ = atomic_begin(addr);                                                          \
        stmt;                                                                                  \
        atomic_end(id_);                                                                       \
    } while (0)

#define SC __ATOMIC_SEQ_CST

/* A compare-and-exchange done at the home: whether it swapped (the word
 * was *c), and the value seen left in *c, as the interface asks. */
#define cas_result(c, seen) ({ __typeof__(*(c)) s_ = (seen); int ok_ = s_ == *(c); *(c) = s_; ok_; })

/* A compare-and-exchange that leaves the value seen in *c, as the
 * interface's compare_exchange_* do, and says whether it swapped. A weak
 * one is allowed to fail spuriously; ours never does. */
#define DEFINE_ATOMICS(N, T)                                                                   \
    T __tsan_atomic##N##_load(const volatile T *a, tsan_order mo);                             \
    void __tsan_atomic##N##_store(volatile T *a, T v, tsan_order mo);                          \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, tsan_order mo);                          \
    T __tsan_atomic##N##_fetch_add(volatile T *a, T v, tsan_order mo);                         \
    T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, tsan_order mo);                         \
    T __tsan_atomic##N##_fetch_and(volatile T *a, T v, tsan_order mo);                         \
    T __tsan_atomic##N##_fetch_or(volatile T *a, T v, tsan_order mo);                          \
    T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, tsan_order mo);                         \
    T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, tsan_order mo);                        \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, tsan_order mo,    \
                                                   tsan_order fmo);                            \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, tsan_order mo,      \
                                                 tsan_order fmo);                              \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, tsan_order mo,          \
                                              tsan_order fmo);                                 \
    T __tsan_atomic##N##_load(const volatile T *a, tsan_order mo)                              \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_LOAD, 0, 0, __atomic_load_n(a, SC), (T)old_);                                                   \
    }                                                                                          \
    void __tsan_atomic##N##_store(volatile T *a, T v, tsan_order mo)                           \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR_VOID(a, COH_ATOMIC_STORE, v, __atomic_store_n(a, v, SC));                                          \
    }                                                                                          \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, tsan_order mo)                           \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_XCHG, v, 0, __atomic_exchange_n(a, v, SC), (T)old_);                                            \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_add(volatile T *a, T v, tsan_order mo)                          \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_ADD, v, 0, __atomic_fetch_add(a, v, SC), (T)old_);                                             \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, tsan_order mo)                          \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_SUB, v, 0, __atomic_fetch_sub(a, v, SC), (T)old_);                                             \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_and(volatile T *a, T v, tsan_order mo)                          \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_AND, v, 0, __atomic_fetch_and(a, v, SC), (T)old_);                                             \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_or(volatile T *a, T v, tsan_order mo)                           \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_OR, v, 0, __atomic_fetch_or(a, v, SC), (T)old_);                                              \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, tsan_order mo)                          \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_XOR, v, 0, __atomic_fetch_xor(a, v, SC), (T)old_);                                             \
    }                                                                                          \
    T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, tsan_order mo)                         \
    {                                                                                          \
        (void)mo;                                                                              \
        HOME_OR(a, COH_ATOMIC_NAND, v, 0, __atomic_fetch_nand(a, v, SC), (T)old_);                                            \
    }                                                                                          \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, tsan_order mo,    \
                                                   tsan_order fmo)                             \
    {                                                                                          \
        (void)mo, (void)fmo;                                                                   \
        HOME_OR(a, COH_ATOMIC_CAS, v, *c, (int)__atomic_compare_exchange_n(a, c, v, false, SC, SC), \
                cas_result(c, (T)old_));                 \
    }                                                                                          \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, tsan_order mo,      \
                                                 tsan_order fmo)                               \
    {                                                                                          \
        return __tsan_atomic##N##_compare_exchange_strong(a, c, v, mo, fmo);                   \
    }                                                                                          \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, tsan_order mo,          \
                                              tsan_order fmo)                                  \
    {                                                                                          \
        __tsan_atomic##N##_compare_exchange_strong(a, &c, v, mo, fmo);                         \
        return c;                                                                              \
    }

DEFINE_ATOMICS(8, tsan_a8)
DEFINE_ATOMICS(16, tsan_a16)
DEFINE_ATOMICS(32, tsan_a32)
DEFINE_ATOMICS(64, tsan_a64)
/* 16 bytes: the pass emits these only where the target has a 16-byte
 * compare-and-swap (x86-64 with -mcx16; clang calls libatomic otherwise,
 * which dsmcc refuses). This file is built with it there (CMakeLists.txt),
 * and every operation is that compare-and-swap, inlined by __sync (the
 * __atomic builtins would call libatomic for 16 bytes). */
#if defined(__SIZEOF_INT128__) && defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
typedef __int128 tsan_a128;

static tsan_a128 cas128(volatile tsan_a128 *a, tsan_a128 c, tsan_a128 v)
{
    return __sync_val_compare_and_swap(a, c, v);
}

/* new = OP(old, v) until the swap takes; returns old. */
#define RMW128(a, v, OP)                                                                       \
    ({                                                                                         \
        tsan_a128 old_ = cas128(a, 0, 0);                                                      \
        for (;;) {                                                                             \
            tsan_a128 seen_ = cas128(a, old_, OP(old_, v));                                    \
            if (seen_ == old_)                                                                 \
                break;                                                                         \
            old_ = seen_;                                                                      \
        }                                                                                      \
        old_;                                                                                  \
    })
#define OP_XCHG(o, v) (v)
#define OP_ADD(o, v)  ((tsan_a128)((unsigned __int128)(o) + (unsigned __int128)(v)))
#define OP_SUB(o, v)  ((tsan_a128)((unsigned __int128)(o) - (unsigned __int128)(v)))
#define OP_AND(o, v)  ((o) & (v))
#define OP_OR(o, v)   ((o) | (v))
#define OP_XOR(o, v)  ((o) ^ (v))
#define OP_NAND(o, v) (~((o) & (v)))

static tsan_a128 cmpxchg128(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v)
{
    tsan_a128 seen = cas128(a, *c, v);
    bool swapped = seen == *c;
    *c = seen;
    return swapped;
}

#define DEFINE_RMW128(name, OP)                                                                \
    tsan_a128 __tsan_atomic128_##name(volatile tsan_a128 *a, tsan_a128 v, tsan_order mo);      \
    tsan_a128 __tsan_atomic128_##name(volatile tsan_a128 *a, tsan_a128 v, tsan_order mo)       \
    {                                                                                          \
        (void)mo;                                                                              \
        COHERENT(a, RMW128(a, v, OP));                                                         \
    }
DEFINE_RMW128(exchange, OP_XCHG)
DEFINE_RMW128(fetch_add, OP_ADD)
DEFINE_RMW128(fetch_sub, OP_SUB)
DEFINE_RMW128(fetch_and, OP_AND)
DEFINE_RMW128(fetch_or, OP_OR)
DEFINE_RMW128(fetch_xor, OP_XOR)
DEFINE_RMW128(fetch_nand, OP_NAND)

tsan_a128 __tsan_atomic128_load(const volatile tsan_a128 *a, tsan_order mo);
void __tsan_atomic128_store(volatile tsan_a128 *a, tsan_a128 v, tsan_order mo);
int __tsan_atomic128_compare_exchange_strong(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v,
                                             tsan_order mo, tsan_order fmo);
int __tsan_atomic128_compare_exchange_weak(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v,
                                           tsan_order mo, tsan_order fmo);
tsan_a128 __tsan_atomic128_compare_exchange_val(volatile tsan_a128 *a, tsan_a128 c, tsan_a128 v,
                                                tsan_order mo, tsan_order fmo);

tsan_a128 __tsan_atomic128_load(const volatile tsan_a128 *a, tsan_order mo)
{
    (void)mo;
    volatile tsan_a128 *w = (volatile tsan_a128 *)a; /* a compare-and-swap writes */
    COHERENT(a, cas128(w, 0, 0));
}

void __tsan_atomic128_store(volatile tsan_a128 *a, tsan_a128 v, tsan_order mo)
{
    (void)mo;
    COHERENT_VOID(a, (void)RMW128(a, v, OP_XCHG));
}

int __tsan_atomic128_compare_exchange_strong(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v,
                                             tsan_order mo, tsan_order fmo)
{
    (void)mo, (void)fmo;
    COHERENT(a, (int)cmpxchg128(a, c, v));
}

int __tsan_atomic128_compare_exchange_weak(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v,
                                           tsan_order mo, tsan_order fmo)
{
    return __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo);
}

tsan_a128 __tsan_atomic128_compare_exchange_val(volatile tsan_a128 *a, tsan_a128 c, tsan_a128 v,
                                                tsan_order mo, tsan_order fmo)
{
    __tsan_atomic128_compare_exchange_strong(a, &c, v, mo, fmo);
    return c;
}
#endif

void __tsan_atomic_thread_fence(tsan_order mo);
void __tsan_atomic_signal_fence(tsan_order mo);
void __tsan_init(void);

/* Every atomic on shared memory is already an acquire and a release in
 * dsm terms (above): a fence orders this thread's own accesses. */
void __tsan_atomic_thread_fence(tsan_order mo)
{
    if (mo != tsan_relaxed)
        __atomic_thread_fence(SC);
}

void __tsan_atomic_signal_fence(tsan_order mo)
{
    if (mo != tsan_relaxed)
        __atomic_signal_fence(SC);
}

/* The pass's module constructor calls it in every instrumented object,
 * before main: ThreadSanitizer's runtime starts there. dsm's starts with
 * the job (dsm_main, dsm_startup); until then every address is private
 * and every atomic the hardware's, so there is nothing to do. */
void __tsan_init(void) {}
