/*
 * heap.c — the program's malloc in the shared-memory model (dsm.h,
 * dsm_heap_*; libdsm-start's wrappers call these).
 *
 * Under threads a malloc'ed block is visible to every thread; a program
 * built with dsmcc expects the same of its nodes. So the program's own
 * allocations (the linker redirects its references only, never the C
 * library's or dsm's own) come from the shared region. The allocator does
 * not record block sizes the way realloc needs, so this node keeps a table
 * of the blocks it handed out and their sizes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "mem/mem.h"

struct heap_block {
    uintptr_t addr;
    size_t    size;
};

static DSM_STATE struct {
    pthread_mutex_t    lock;
    struct heap_block *slots; /* open addressing; addr 0: empty, 1: deleted */
    size_t             cap, used, live;
} heap = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t slot_of(uintptr_t a, size_t cap) { return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1); }

/* Caller holds heap.lock. */
static void grow(void)
{
    size_t cap = heap.cap ? heap.cap * 2 : 1024;
    struct heap_block *s = calloc(cap, sizeof *s);
    if (!s)
        log_fatal("out of memory for the heap's block table");
    for (size_t i = 0; i < heap.cap; i++)
        if (heap.slots[i].addr > 1) {
            size_t j = slot_of(heap.slots[i].addr, cap);
            while (s[j].addr)
                j = (j + 1) & (cap - 1);
            s[j] = heap.slots[i];
        }
    free(heap.slots);
    heap.slots = s;
    heap.cap = cap;
    heap.used = heap.live;
}

/* The slot of addr, or NULL. Caller holds heap.lock. */
static struct heap_block *find(uintptr_t addr)
{
    if (!heap.cap)
        return NULL;
    for (size_t j = slot_of(addr, heap.cap);; j = (j + 1) & (heap.cap - 1)) {
        if (heap.slots[j].addr == addr)
            return &heap.slots[j];
        if (!heap.slots[j].addr)
            return NULL;
    }
}

static void remember(void *p, size_t size)
{
    pthread_mutex_lock(&heap.lock);
    if ((heap.used + 1) * 4 > heap.cap * 3)
        grow();
    size_t j = slot_of((uintptr_t)p, heap.cap);
    while (heap.slots[j].addr > 1)
        j = (j + 1) & (heap.cap - 1);
    if (!heap.slots[j].addr)
        heap.used++;
    heap.slots[j] = (struct heap_block){(uintptr_t)p, size};
    heap.live++;
    pthread_mutex_unlock(&heap.lock);
}

/* The size of a block of ours, forgetting it; (size_t)-1 if not ours. */
static size_t forget(const void *p)
{
    pthread_mutex_lock(&heap.lock);
    struct heap_block *b = find((uintptr_t)p);
    size_t size = (size_t)-1;
    if (b) {
        size = b->size;
        b->addr = 1;
        heap.live--;
    }
    pthread_mutex_unlock(&heap.lock);
    return size;
}

int dsm_heap_owns(const void *p)
{
    return p && (mem_prestart_open() ? mem_prestart_block(p, NULL) : mem_contains(p));
}

int dsm_heap_prestart(void) { return mem_prestart_open(); }

void *dsm_heap_alloc(size_t size, size_t align)
{
    PROFILE_SITE();
    if (mem_prestart_open()) /* a static initializer's: prestart.c */
        return mem_prestart_alloc(size, align);
    if (align > dsm_page_size() || (align & (align - 1))) { /* as glibc's aligned_alloc */
        errno = EINVAL;
        return NULL;
    }
    void *p = mem_alloc_aligned(size, align);
    if (((uintptr_t)p & (align ? align - 1 : 0)) != 0)
        log_fatal("internal error: a %zu-byte block is not %zu-aligned", size, align);
    remember(p, size);
    return p;
}

void dsm_heap_free(void *p)
{
    if (!p || mem_prestart_block(p, NULL)) /* a pre-start block stays (prestart.c) */
        return;
    forget(p); /* a block of another node's: its owner frees it (dsm_free) */
    dsm_free(p);
}

void *dsm_heap_realloc(void *p, size_t size)
{
    PROFILE_SITE();
    if (!p)
        return dsm_heap_alloc(size, 0);
    size_t old;
    if (mem_prestart_block(p, &old)) { /* it stays; a copy in a new block */
        void *q = dsm_heap_alloc(size, 0);
        if (q)
            memcpy(q, p, old < size ? old : size);
        return q;
    }
    old = forget(p);
    if (old == (size_t)-1)
        log_fatal("realloc(%p): a block another node allocated; only its node knows its size "
                  "(allocate a new block and copy instead)", p);
    void *q = dsm_heap_alloc(size, 0);
    memcpy(q, p, old < size ? old : size);
    dsm_free(p);
    return q;
}
