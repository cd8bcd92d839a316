/*
 * copies.c — page copies (twins, snapshots) from a pool of populated slabs.
 *
 * A protocol takes a copy of a page before its first write in an interval
 * and frees it at the release or when its diff is made, thousands of times
 * a second. From malloc, such copies often land on memory the kernel has
 * not mapped yet (a fresh heap top, or one trimmed since), and on this
 * machine a first touch costs ~13.5 µs per 4 KiB page against ~1 µs for a
 * populated one: lrc's twins in LU took 8 µs each. The pool maps its slabs
 * populated and keeps every copy it ever made, so a copy's memory faults
 * never. It holds at most the peak number of copies alive at once, as a
 * heap would.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

#ifdef __SANITIZE_ADDRESS__
/* Under AddressSanitizer every copy is its own mapping, followed by a page
 * with no access, so that an overrun or a use after mem_copy_put still
 * faults. Not malloc: a copy is taken in the fault handler, and a write
 * fault on the master's shared stack can interrupt ASan's allocator while
 * it holds its lock (omp.constructs.lrc.n2 hung so in `make sanitize`);
 * mmap is safe there. */
void *mem_copy_get(void)
{
    unsigned char *c = mmap(NULL, 2 * mem.page_size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        log_fatal("out of memory for a page copy: %s", strerror(errno));
    if (mprotect(c + mem.page_size, mem.page_size, PROT_NONE))
        log_fatal("cannot protect a page copy's guard page: %s", strerror(errno));
    return c;
}

void mem_copy_put(void *copy)
{
    munmap(copy, 2 * mem.page_size);
}
#else

#define COPIES_PER_SLAB 64

struct free_copy {
    struct free_copy *next;
};

static DSM_STATE struct {
    pthread_mutex_t   lock;
    struct free_copy *free;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Maps a slab and puts its copies on the free list. Caller holds the lock. */
static void grow_locked(void)
{
    size_t bytes = COPIES_PER_SLAB * mem.page_size;
    char *slab = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (slab == MAP_FAILED)
        log_fatal("out of memory for page copies (%zu bytes more): %s", bytes, strerror(errno));
    for (size_t i = COPIES_PER_SLAB; i-- > 0;) {
        struct free_copy *c = (struct free_copy *)(slab + i * mem.page_size);
        c->next = pool.free;
        pool.free = c;
    }
}

void *mem_copy_get(void)
{
    pthread_mutex_lock(&pool.lock);
    if (!pool.free)
        grow_locked();
    struct free_copy *c = pool.free;
    pool.free = c->next;
    pthread_mutex_unlock(&pool.lock);
    return c;
}

void mem_copy_put(void *copy)
{
    if (!copy)
        return;
    struct free_copy *c = copy;
    pthread_mutex_lock(&pool.lock);
    c->next = pool.free;
    pool.free = c;
    pthread_mutex_unlock(&pool.lock);
}
#endif
