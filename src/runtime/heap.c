/*
 * heap.c — the program's malloc in the shared-memory model (dsm.h,
 * dsm_heap_*; libdsm-start's wrappers call these).
 *
 * Under threads a malloc'ed block is visible to every thread; a program
 * built with dsmcc expects the same of its nodes. So the program's own
 * allocations (the linker redirects its references only, never the C
 * library's or dsm's own) come from the shared region.
 *
 * realloc and malloc_usable_size need a block's size, which any thread
 * may ask of any block, whichever node allocated it. The allocator's
 * bookkeeping is its node's own (mem/alloc.c: nothing of it travels), so
 * that node answers: here when the block is this node's, else by one
 * request and its answer (RUNTIME_HEAP_SIZE), served by the owner's
 * delivery thread from its tables. The answer is the block's capacity,
 * its size class's or its pages', at least what was asked for: realloc
 * copies up to it (what lies beyond the asked size is indeterminate, as
 * C says), and malloc_usable_size returns it, as the C library's does.
 * realloc then allocates here, copies, and frees the old block, wherever
 * it was (mem/alloc.c frees another node's block at the next barrier).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/stack.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "runtime/runtime.h"

/* A question to a block's node, and its answer (the same struct). */
struct heap_size_msg { uint64_t token, offset, capacity; };

struct capacity_call { const void *p; size_t capacity; };

static void capacity_call(void *arg)
{
    struct capacity_call *c = arg;
    int owner = mem_base_node(mem_page_of(c->p));
    if (owner == job()->rank) {
        c->capacity = mem_block_capacity(c->p);
        return;
    }
    struct ipc_question q;
    uint64_t capacity = 0;
    struct heap_size_msg m = {.token = ipc_question_open(&q, &capacity, sizeof capacity),
                              .offset = (uint64_t)((const char *)c->p - mem.base)};
    int rc = ipc_send(owner, RUNTIME_HEAP_SIZE, 0, &m, sizeof m);
    if (rc)
        log_fatal("cannot ask node %d the size of the block at %p: %s", owner, c->p, strerror(-rc));
    ipc_question_wait(&q);
    c->capacity = capacity;
}

/* The capacity of the heap block at p (not a pre-start one), from its
 * node; `call` names the program's call when p is no block at all. */
static size_t capacity_of(const void *p, const char *call)
{
    struct capacity_call c = {p, 0};
    if (mem_contains(p))
        stack_private(capacity_call, &c);
    if (!c.capacity)
        log_fatal("%s(%p): not a block that malloc returned, or one already freed", call, p);
    return c.capacity;
}

/* At a block's node: the question's answer (0: no such block). */
static void on_size(int src, const void *msg, size_t len)
{
    struct heap_size_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "heap block size");
    m.capacity = m.offset < mem.size ? mem_block_capacity(mem.base + m.offset) : 0;
    ipc_send(src, RUNTIME_HEAP_SIZE_IS, 0, &m, sizeof m);
}

static void on_size_is(int src, const void *msg, size_t len)
{
    struct heap_size_msg m;
    ipc_body(src, msg, len, &m, sizeof m, NULL, "heap block size answer");
    if (!ipc_question_answered(m.token, &m.capacity, sizeof m.capacity))
        log_fatal("node %d answered a block size question this node did not ask", src);
}

void heap_start(void)
{
    ipc_register(RUNTIME_HEAP_SIZE, "HEAP_SIZE", on_size, NULL);
    ipc_register(RUNTIME_HEAP_SIZE_IS, "HEAP_SIZE_IS", on_size_is, NULL);
}

int dsm_heap_owns(const void *p)
{
    return p && (mem_prestart_open() ? mem_prestart_block(p, NULL) : mem_contains(p));
}

int dsm_heap_prestart(void) { return mem_prestart_open(); }

/* mem's getline and getdelim grow a buffer of this heap through this
 * (mem/hooks.c); set as libdsm loads, since a program may read a line
 * into a block it allocated before the job started. */
static const struct mem_kernel_heap heap_for_mem = {.owns = dsm_heap_owns, .resize = dsm_heap_realloc};

__attribute__((constructor)) static void heap_lend_to_mem(void)
{
    atomic_store_explicit(&mem_kernel_heap, &heap_for_mem, memory_order_release);
}

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
    return p;
}

void dsm_heap_free(void *p)
{
    if (!p || mem_prestart_block(p, NULL)) /* a pre-start block stays (prestart.c) */
        return;
    dsm_free(p); /* a block of another node's: its owner frees it (dsm_free) */
}

size_t dsm_heap_usable_size(void *p)
{
    size_t size;
    if (!p)
        return 0;
    if (mem_prestart_block(p, &size))
        return size;
    return capacity_of(p, "malloc_usable_size");
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
    old = capacity_of(p, "realloc");
    void *q = dsm_heap_alloc(size, 0);
    memcpy(q, p, old < size ? old : size);
    dsm_free(p);
    return q;
}
