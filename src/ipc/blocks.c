/*
 * blocks.c — page-aligned buffers for large messages, kept for reuse.
 *
 * A large message needs a buffer on both sides: the sender's copy (send
 * semantics let the caller reuse its memory at once) and the receiver's
 * reserved OOL regions. A stream keeps a port's queue limit of them in
 * flight on each side, 64 MiB for 1 MiB messages at the default limit.
 * Taken fresh from malloc, every page of every message cost a page fault:
 * on this PVM guest a fault is a hypervisor round trip, and faults were a
 * quarter of a 1 MiB stream's samples (perf, 2026-11-23).
 *
 * So large buffers are mapped here, populated in one system call, and kept
 * when freed, by exact page-rounded size, since a stream repeats its sizes.
 * What is kept is bounded, and a buffer idle for IDLE_NS goes back to the
 * kernel from the service thread's tick, so a burst does not pin memory.
 */
#include "ipc/blocks.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"

#define CACHE_SLOTS  256
#define CACHE_BYTES  IPC_BLOCKS_KEPT_MAX
#define IDLE_NS      IPC_BLOCKS_IDLE_NS

struct cached {
    void    *addr;
    size_t   bytes;
    uint64_t put_ns;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    struct cached   slot[CACHE_SLOTS];  /* slot[0] kept longest */
    unsigned        used;
    size_t          bytes;
} blocks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t page_size(void)
{
    static DSM_STATE size_t pg;
    if (!pg)
        pg = (size_t)sysconf(_SC_PAGESIZE);
    return pg;
}

size_t ipc_block_bytes(size_t len)
{
    size_t pg = page_size();
    return len ? (len + pg - 1) / pg * pg : pg;
}

/* Removes slot i, keeping the rest in the order they were put; under lock. */
static void *take_slot(unsigned i)
{
    void *p = blocks.slot[i].addr;
    blocks.bytes -= blocks.slot[i].bytes;
    blocks.used--;
    for (; i < blocks.used; i++)
        blocks.slot[i] = blocks.slot[i + 1];
    return p;
}

void *ipc_block_get(size_t len)
{
    size_t bytes = ipc_block_bytes(len);
    if (bytes < IPC_BLOCK_MIN) {
        void *p = aligned_alloc(page_size(), bytes);
        if (!p)
            log_fatal("out of memory for a %zu-byte message buffer", bytes);
        return p;
    }
    pthread_mutex_lock(&blocks.lock);
    for (unsigned i = blocks.used; i-- > 0;) /* the most recently used is warmest */
        if (blocks.slot[i].bytes == bytes) {
            void *p = take_slot(i);
            pthread_mutex_unlock(&blocks.lock);
            return p;
        }
    pthread_mutex_unlock(&blocks.lock);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        log_fatal("out of memory for a %zu-byte message buffer", bytes);
    return p;
}

static void unmap(void *p, size_t bytes)
{
    if (munmap(p, bytes))
        log_fatal("cannot unmap a %zu-byte message buffer", bytes);
}

void ipc_block_put(void *p, size_t len)
{
    if (!p)
        return;
    size_t bytes = ipc_block_bytes(len);
    if (bytes < IPC_BLOCK_MIN) {
        free(p);
        return;
    }
    if (bytes > CACHE_BYTES / 4) {
        unmap(p, bytes);
        return;
    }
    struct cached drop[CACHE_SLOTS];
    unsigned ndrop = 0;
    pthread_mutex_lock(&blocks.lock);
    while (blocks.used == CACHE_SLOTS || blocks.bytes + bytes > CACHE_BYTES) {
        drop[ndrop] = blocks.slot[0];
        take_slot(0);
        ndrop++;
    }
    blocks.slot[blocks.used++] = (struct cached){.addr = p, .bytes = bytes, .put_ns = clock_ns()};
    blocks.bytes += bytes;
    pthread_mutex_unlock(&blocks.lock);
    for (unsigned i = 0; i < ndrop; i++) /* outside the lock: munmap is slow here */
        unmap(drop[i].addr, drop[i].bytes);
}

void ipc_blocks_trim(uint64_t now_ns)
{
    for (;;) {
        pthread_mutex_lock(&blocks.lock);
        if (!blocks.used || blocks.slot[0].put_ns + IDLE_NS > now_ns) {
            pthread_mutex_unlock(&blocks.lock);
            return;
        }
        struct cached c = blocks.slot[0];
        take_slot(0);
        pthread_mutex_unlock(&blocks.lock);
        unmap(c.addr, c.bytes);
    }
}

size_t ipc_blocks_kept(unsigned *count)
{
    pthread_mutex_lock(&blocks.lock);
    size_t bytes = blocks.bytes;
    if (count)
        *count = blocks.used;
    pthread_mutex_unlock(&blocks.lock);
    return bytes;
}

void ipc_blocks_release(void)
{
    ipc_blocks_trim(UINT64_MAX - IDLE_NS);
}
