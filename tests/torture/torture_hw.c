/*
 * torture_hw.c — the part of dsm's API the torture test uses, on threads of
 * one process: plain pthreads and hardware shared memory, no dsm. Linked
 * with torture.c (built with -DTORTURE_HW) it makes torture_hw, the other
 * side of the differential test (tests/torture/differential.sh): the same
 * generated programs, each participant a thread, memory the machine's.
 *
 * What each call means here is what it means on dsm with one thread a node
 * (include/dsm.h), with threads for nodes: dsm_startup_fork takes
 * --participants P (default 2) off the command line, as dsm_startup takes
 * dsm's options; dsm_create starts P - 1 threads beside the caller;
 * barriers, locks and conditions are pthreads'; dsm_bcast copies the root's
 * buffer to every other participant's; dsm_malloc is aligned_alloc
 * (aligned as dsm's blocks: 16 bytes, a page from a page up), zeroed; the
 * atomics (__tsan_atomic*, what dsmcc makes of a program's atomics) are
 * the hardware's, and 16-byte ones run under a lock. DSM_PAGE_SIZE (bytes,
 * or with K) sets the page size the programs are planned for, 8 KiB by
 * default as dsm's: a reference must be made with the job's.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"

#define HW_MAX_PARTICIPANTS 64
#define HW_MAX_ID 8192 /* lock and condition ids the torture test uses (4096 + 512) */

static int participants = 2;
static size_t page_size = 8192;
static __thread int me;
static pthread_barrier_t barrier;
static pthread_mutex_t locks[HW_MAX_ID];
static pthread_cond_t conds[HW_MAX_ID];
static pthread_t threads[HW_MAX_PARTICIPANTS];
static struct {
    void (*fn)(void *);
    void *arg;
} work;
static const void *bcast_src;

__attribute__((noreturn)) static void hw_fatal(const char *what, long value)
{
    fprintf(stderr, "torture_hw: %s (%ld)\n", what, value);
    exit(2);
}

int dsm_startup_fork(int *argc, char ***argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp((*argv)[i], "--participants") && i + 1 < *argc) {
            char *end;
            long p = strtol((*argv)[++i], &end, 10);
            if (*end || p < 1 || p > HW_MAX_PARTICIPANTS)
                hw_fatal("--participants takes 1 to 64", p);
            participants = (int)p;
            continue;
        }
        (*argv)[out++] = (*argv)[i];
    }
    *argc = out;
    (*argv)[out] = NULL;
    const char *ps = getenv("DSM_PAGE_SIZE");
    if (ps && *ps) {
        char *end;
        long v = strtol(ps, &end, 10);
        if (*end == 'k' || *end == 'K')
            v *= 1024, end++;
        if (*end || v < 4096 || v > 65536 || (v & (v - 1)))
            hw_fatal("DSM_PAGE_SIZE takes a power of two from 4096 to 65536", v);
        page_size = (size_t)v;
    }
    for (int i = 0; i < HW_MAX_ID; i++) {
        pthread_mutex_init(&locks[i], NULL);
        pthread_cond_init(&conds[i], NULL);
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)participants);
    return 0;
}

int dsm_startup(int *argc, char ***argv) { return dsm_startup_fork(argc, argv); }
void dsm_finish(void) {}
int dsm_rank(void) { return me; }
int dsm_nodes(void) { return participants; }
int dsm_thread_id(void) { return me; }
int dsm_thread_count(void) { return participants; }
int dsm_node_threads(void) { return 1; }
size_t dsm_page_size(void) { return page_size; }

static void *thread_main(void *arg)
{
    me = (int)(intptr_t)arg;
    work.fn(work.arg);
    return NULL;
}

void dsm_create(void (*fn)(void *), void *arg)
{
    work.fn = fn;
    work.arg = arg;
    for (int i = 1; i < participants; i++)
        if (pthread_create(&threads[i], NULL, thread_main, (void *)(intptr_t)i) != 0)
            hw_fatal("pthread_create failed for participant", i);
}

void dsm_wait_for_end(void)
{
    for (int i = 1; i < participants; i++)
        pthread_join(threads[i], NULL);
}

void dsm_barrier(void) { pthread_barrier_wait(&barrier); }

static int checked_id(int id)
{
    if (id < 0 || id >= HW_MAX_ID)
        hw_fatal("a lock or condition id beyond the table", id);
    return id;
}

void dsm_lock(int id) { pthread_mutex_lock(&locks[checked_id(id)]); }
void dsm_unlock(int id) { pthread_mutex_unlock(&locks[checked_id(id)]); }
void dsm_cond_wait(int cond, int lock) { pthread_cond_wait(&conds[checked_id(cond)], &locks[checked_id(lock)]); }
void dsm_cond_signal(int cond) { pthread_cond_signal(&conds[checked_id(cond)]); }
void dsm_cond_broadcast(int cond) { pthread_cond_broadcast(&conds[checked_id(cond)]); }

/* The root's buffer stays in place until every other participant has
 * copied it (the second barrier). */
void dsm_bcast(void *buf, size_t len, int root)
{
    if (me == root)
        bcast_src = buf;
    dsm_barrier();
    if (me != root)
        memcpy(buf, bcast_src, len);
    dsm_barrier();
}

void *dsm_malloc_home(size_t size, enum dsm_home home)
{
    (void)home;
    size_t align = size >= page_size ? page_size : 16;
    size_t rounded = (size + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded ? rounded : align);
    if (p)
        memset(p, 0, rounded);
    return p;
}

void *dsm_malloc(size_t size) { return dsm_malloc_home(size, DSM_HOME_DEFAULT); }
void dsm_free(void *p) { free(p); }

/* ---- Atomics: the hardware's ------------------------------------------------ */

#define HW_ATOMICS(N, T)                                                                       \
    T __tsan_atomic##N##_load(const volatile T *a, int mo);                                    \
    void __tsan_atomic##N##_store(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_fetch_add(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_and(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_or(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, int mo);                               \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo); \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo);   \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo);       \
    T __tsan_atomic##N##_load(const volatile T *a, int mo) { (void)mo; return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
    void __tsan_atomic##N##_store(volatile T *a, T v, int mo) { (void)mo; __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, int mo) { (void)mo; return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_add(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_and(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_or(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
    T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, int mo) { (void)mo; return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); } \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo)  \
    {                                                                                          \
        (void)mo, (void)fmo;                                                                   \
        return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    }                                                                                          \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo)    \
    {                                                                                          \
        (void)mo, (void)fmo;                                                                   \
        return __atomic_compare_exchange_n(a, c, v, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    }                                                                                          \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo)        \
    {                                                                                          \
        __tsan_atomic##N##_compare_exchange_strong(a, &c, v, mo, fmo);                         \
        return c;                                                                              \
    }

/* Under ThreadSanitizer (-fsanitize=thread: a check that the generated
 * programs are race-free) its runtime has these functions, and knows them
 * for atomics. */
#ifndef __SANITIZE_THREAD__
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wbuiltin-declaration-mismatch"
#endif
HW_ATOMICS(8, char)
HW_ATOMICS(16, short)
HW_ATOMICS(32, int)
HW_ATOMICS(64, long)

#if defined(__x86_64__) && defined(__SIZEOF_INT128__)
/* 16 bytes: under one lock (every 16-byte atomic of the program comes
 * here; plain accesses to them are ordered by barriers), so that no
 * libatomic or cmpxchg16b is needed. */
static pthread_mutex_t lock128 = PTHREAD_MUTEX_INITIALIZER;
typedef __int128 a128;
#define LOCKED(expr)                                                                           \
    ({                                                                                         \
        pthread_mutex_lock(&lock128);                                                          \
        __typeof__(expr) r_ = (expr);                                                          \
        pthread_mutex_unlock(&lock128);                                                        \
        r_;                                                                                    \
    })
static a128 rmw128(volatile a128 *a, a128 v, int op)
{
    pthread_mutex_lock(&lock128);
    a128 old = *a;
    unsigned __int128 o = (unsigned __int128)old, u = (unsigned __int128)v;
    switch (op) {
    case 0: *a = v; break;
    case 1: *a = (a128)(o + u); break;
    case 2: *a = (a128)(o - u); break;
    case 3: *a = old & v; break;
    case 4: *a = old | v; break;
    case 5: *a = old ^ v; break;
    default: *a = ~(old & v); break;
    }
    pthread_mutex_unlock(&lock128);
    return old;
}
a128 __tsan_atomic128_load(const volatile a128 *a, int mo);
void __tsan_atomic128_store(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_exchange(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_add(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_sub(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_and(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_or(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_xor(volatile a128 *a, a128 v, int mo);
a128 __tsan_atomic128_fetch_nand(volatile a128 *a, a128 v, int mo);
int __tsan_atomic128_compare_exchange_strong(volatile a128 *a, a128 *c, a128 v, int mo, int fmo);
int __tsan_atomic128_compare_exchange_weak(volatile a128 *a, a128 *c, a128 v, int mo, int fmo);
a128 __tsan_atomic128_compare_exchange_val(volatile a128 *a, a128 c, a128 v, int mo, int fmo);
a128 __tsan_atomic128_load(const volatile a128 *a, int mo) { (void)mo; return LOCKED(*a); }
void __tsan_atomic128_store(volatile a128 *a, a128 v, int mo) { (void)mo; rmw128(a, v, 0); }
a128 __tsan_atomic128_exchange(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 0); }
a128 __tsan_atomic128_fetch_add(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 1); }
a128 __tsan_atomic128_fetch_sub(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 2); }
a128 __tsan_atomic128_fetch_and(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 3); }
a128 __tsan_atomic128_fetch_or(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 4); }
a128 __tsan_atomic128_fetch_xor(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 5); }
a128 __tsan_atomic128_fetch_nand(volatile a128 *a, a128 v, int mo) { (void)mo; return rmw128(a, v, 6); }
int __tsan_atomic128_compare_exchange_strong(volatile a128 *a, a128 *c, a128 v, int mo, int fmo)
{
    (void)mo, (void)fmo;
    pthread_mutex_lock(&lock128);
    a128 old = *a;
    int ok = old == *c;
    if (ok)
        *a = v;
    *c = old;
    pthread_mutex_unlock(&lock128);
    return ok;
}
int __tsan_atomic128_compare_exchange_weak(volatile a128 *a, a128 *c, a128 v, int mo, int fmo)
{
    return __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo);
}
a128 __tsan_atomic128_compare_exchange_val(volatile a128 *a, a128 c, a128 v, int mo, int fmo)
{
    __tsan_atomic128_compare_exchange_strong(a, &c, v, mo, fmo);
    return c;
}
#endif
#endif /* __SANITIZE_THREAD__ */
