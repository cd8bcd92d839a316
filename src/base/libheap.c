/*
 * libheap.c — the library's own allocator for its private memory.
 *
 * The fault handler allocates: a message's transmit buffer, a received
 * payload, the list of diffs a fetch applies, a dirty list that grows. It
 * runs in whatever the faulting thread was doing, and under master-only
 * start the master's main runs on a stack in the shared region
 * (base/stack.h), whose pages the protocol write-protects like any other:
 * a write fault on that stack can come while the program is inside the C
 * library's malloc (its own call, or printf's, or qsort's), holding the
 * lock of its arena, and a malloc in the handler, on the same thread, would
 * wait for that lock forever. (It happened in the sanitizer build, whose
 * allocator runs deeper: mem/copies.c.)
 *
 * So the library never calls the C library's allocator (base/libheap.h):
 * this one maps its own memory and takes locks the program never holds.
 * Blocks up to LARGEST come from per-size free lists, each with its own
 * lock, and from chunks it maps for them; larger ones are mappings of their own.
 * A list's lock is held on the thread's own stack only (put_op,
 * take_op), whoever calls: the library's protocol work runs off the shared
 * stack (base/stack.h), but not all of its code does — the OpenMP task
 * scheduler runs tasks there — and a write fault on a shared stack while
 * a list is held would wait for a thread that waits for the list. Should a
 * fault still come inside this file while the same thread holds a list's
 * lock, the thread notes that it is inside, and a call from the handler
 * takes a mapping of its own (no lock) or, to free a listed block, leaves
 * it on the thread's deferred list for its next call.
 *
 * Each thread keeps a few freed blocks of each small size for its own next
 * allocations (CACHE_BLOCKS, as the C library's per-thread cache): an
 * OpenMP task's records are allocated on one thread and freed on
 * another, and two threads of a node making and running fine tasks spent
 * a quarter of their time on the lists' locks (BOTS uts). They go back to
 * the lists when the thread ends.
 *
 * Memory on the lists is kept, as a heap keeps it; the largest blocks are
 * unmapped when freed. A pointer the C library allocated (none is expected:
 * the check is cheap) is told by its header and freed by the C library.
 */
#define DSM_LIBHEAP_ITSELF
#include "base/libheap.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"

/* A block's header, just before it: what it is, and a check that tells our
 * blocks from the C library's (whose header is a chunk size there). */
struct head {
    uint64_t info;  /* a list's index; a mapping's length; an offset */
    uint64_t check; /* the block's address ^ one of the keys below */
};

#define KEY_LISTED  0x6c68b10c6b5eed01ull
#define KEY_MAPPED  0x6c68b10c6b5eed02ull
#define KEY_ALIGNED 0x6c68b10c6b5eed03ull

#define HEAD        sizeof(struct head) /* 16: blocks stay 16-byte aligned */
#define LARGEST     (128u * 1024)       /* the largest listed block */
#define CHUNK_BYTES (256u * 1024)       /* a refill's mapping, at least */

/* Sizes: 16-byte steps to 128, then four steps to each power of two
 * (160, 192, 224, 256, 320, ...), as mem/alloc.c's classes. */
#define NLISTS (8 + 4 * 10) /* 128 · 2^10 = LARGEST */

struct free_block {
    struct free_block *next;
};

/* A list: blocks freed, then the untouched rest of its latest chunk (carved
 * one block at a time, so that a chunk's pages are touched only as blocks
 * are first used). */
static DSM_STATE struct {
    pthread_mutex_t    lock;
    struct free_block *free;
    char              *rest, *end;
} lists[NLISTS] = {[0 ... NLISTS - 1] = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL}};

/* Whether this thread is inside a list's locked section, and the blocks a
 * fault handler freed meanwhile. */
static __thread int inside;
static __thread struct free_block *deferred;

/* This thread's cache: blocks of the lists below CACHED_LISTS (up to 1 KiB),
 * at most CACHE_BLOCKS each, used only while `cached` (set once the
 * thread's end is sure to empty it). */
#define CACHED_LISTS (8 + 4 * 3)
#define CACHE_BLOCKS 16
static __thread struct {
    struct free_block *head;
    unsigned           n;
} cache[CACHED_LISTS];
static __thread bool cached, cache_ended; /* ended: the thread's end emptied it */
static DSM_STATE pthread_key_t  cache_key;
static DSM_STATE pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static DSM_STATE bool           cache_keyed;

static size_t list_size(unsigned i)
{
    if (i < 8)
        return 16 * (i + 1);
    unsigned octave = (i - 8) / 4, quarter = (i - 8) % 4;
    size_t base = (size_t)128 << octave;
    return base + (quarter + 1) * (base / 4);
}

static unsigned list_of(size_t size)
{
    if (size <= 128)
        return size ? (unsigned)((size - 1) / 16) : 0;
    unsigned octave = 0;
    while (((size_t)256 << octave) < size)
        octave++;
    size_t base = (size_t)128 << octave;
    unsigned quarter = (unsigned)((size - base + base / 4 - 1) / (base / 4)) - 1;
    return 8 + 4 * octave + quarter;
}

static struct head *head_of(void *p) { return (struct head *)((char *)p - HEAD); }

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void *tag(void *block, uint64_t info, uint64_t key)
{
    struct head *h = block;
    h->info = info;
    char *p = (char *)block + HEAD;
    h->check = (uintptr_t)p ^ key;
    return p;
}

/* A mapping of its own: for the largest blocks, and for a call from a fault
 * handler that interrupted this file. Zeroed. */
static void *mapped(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - HEAD - page)
        return NULL;
    size_t bytes = (size + HEAD + page - 1) / page * page;
    void *m = map(bytes);
    return m ? tag(m, bytes, KEY_MAPPED) : NULL;
}

/* A block of list i's size not on its free list. Caller holds the lock. */
static void *carve_locked(unsigned i)
{
    size_t slot = HEAD + list_size(i);
    if ((size_t)(lists[i].end - lists[i].rest) < slot) {
        size_t bytes = CHUNK_BYTES > 16 * slot ? CHUNK_BYTES : 16 * slot;
        char *chunk = map(bytes);
        if (!chunk)
            return NULL;
        lists[i].rest = chunk;
        lists[i].end = chunk + bytes;
    }
    void *b = lists[i].rest;
    lists[i].rest += slot;
    return b;
}

/* A list's lock is taken and held on the thread's own stack, never on a
 * shared one (base/stack.h): a store there — a call's return address —
 * faults when a release has write-protected the page, and the fault waits
 * for the protocol's lock, which a thread holding it may hold while it
 * waits for this list (a release allocating its messages: the releaser
 * thread against an OpenMP thread freeing a task's record on its stack in
 * the region, a deadlock seen in 1 run of 300). */
struct list_op {
    unsigned i;
    void    *block; /* put: the block; take: the one taken (NULL: none) */
};

static void put_op(void *arg)
{
    struct list_op *op = arg;
    unsigned i = op->i;
    struct free_block *b = op->block;
    inside++;
    pthread_mutex_lock(&lists[i].lock);
    b->next = lists[i].free;
    lists[i].free = b;
    pthread_mutex_unlock(&lists[i].lock);
    inside--;
}

static void take_op(void *arg)
{
    struct list_op *op = arg;
    unsigned i = op->i;
    inside++;
    pthread_mutex_lock(&lists[i].lock);
    void *b = lists[i].free;
    if (b)
        lists[i].free = lists[i].free->next;
    else
        b = carve_locked(i);
    pthread_mutex_unlock(&lists[i].lock);
    inside--;
    op->block = b;
}

static void put_listed(void *block, unsigned i)
{
    struct list_op op = {.i = i, .block = block};
    stack_private(put_op, &op);
}

/* Inside (above) while the cache changes: a fault handler's call meanwhile
 * leaves it alone. The signal fences keep the compiler from moving the
 * cache's loads and stores out from between. */
static void enter(void)
{
    inside++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static void leave(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    inside--;
}

static void *cache_take(unsigned i)
{
    enter();
    struct free_block *b = cache[i].head;
    if (b) {
        cache[i].head = b->next;
        cache[i].n--;
    }
    leave();
    return b;
}

static bool cache_put(void *block, unsigned i)
{
    if (i >= CACHED_LISTS || !cached)
        return false;
    enter(); /* the count too: a handler's free may fill the cache meanwhile */
    bool room = cache[i].n < CACHE_BLOCKS;
    if (room) {
        struct free_block *b = block;
        b->next = cache[i].head;
        cache[i].head = b;
        cache[i].n++;
    }
    leave();
    return room;
}

/* A thread ends: its cached blocks go back to the lists. */
static void cache_flush(void *arg)
{
    (void)arg;
    cached = false;
    cache_ended = true; /* a later destructor's malloc does not start it again */
    for (unsigned i = 0; i < CACHED_LISTS; i++)
        for (void *b; (b = cache_take(i));)
            put_listed(b, i);
}

static void cache_key_create(void) { cache_keyed = pthread_key_create(&cache_key, cache_flush) == 0; }

/* Starts this thread's cache, if its end can empty it. */
static void cache_start(void)
{
    pthread_once(&cache_once, cache_key_create);
    cached = cache_keyed && pthread_setspecific(cache_key, (void *)1) == 0;
}

/* The blocks a handler freed while this thread was inside (linked through
 * their bodies: their headers still name their lists). The list is taken
 * whole, inside: a handler's malloc drains it too, and one that came
 * between reading its first block and unlinking it put that block back on
 * its list, to be taken and reused, while this call then followed its
 * reused body as the list's next (the unit test crashed so, rarely at
 * its old signal rate, in 17 runs of 20 at its present one). */
static void drain_deferred(void)
{
    enter();
    struct free_block *b = deferred;
    deferred = NULL;
    leave();
    while (b) {
        struct free_block *next = b->next;
        put_listed(head_of(b), (unsigned)head_of(b)->info);
        b = next;
    }
}

void *libheap_malloc(size_t size)
{
    if (size > LARGEST || inside)
        return mapped(size);
    if (deferred)
        drain_deferred();
    unsigned i = list_of(size);
    void *b = i < CACHED_LISTS ? cache_take(i) : NULL;
    if (b)
        return tag(b, i, KEY_LISTED);
    if (!cached && !cache_ended && i < CACHED_LISTS) {
        enter(); /* a fault handler's call in pthread_once would wait for this one */
        cache_start();
        leave();
    }
    struct list_op op = {.i = i};
    stack_private(take_op, &op);
    b = op.block;
    if (!b) {
        errno = ENOMEM;
        return NULL;
    }
    return tag(b, i, KEY_LISTED);
}

/* What p's header says, read whole. Before a block of the C library's
 * this reads its chunk header: mapped memory, but AddressSanitizer's red
 * zone in the sanitizer build, where the look is deliberate. */
__attribute__((no_sanitize_address)) static struct head peek(const void *p)
{
    const volatile uint64_t *w = (const volatile uint64_t *)((const char *)p - HEAD);
    return (struct head){w[0], w[1]};
}

/* The usable size of a block of ours; 0 for the C library's. */
static size_t usable(void *p)
{
    struct head h = peek(p);
    if (h.check == ((uintptr_t)p ^ KEY_LISTED))
        return list_size((unsigned)h.info);
    if (h.check == ((uintptr_t)p ^ KEY_MAPPED))
        return h.info - HEAD;
    if (h.check == ((uintptr_t)p ^ KEY_ALIGNED)) {
        char *block = (char *)p - h.info;
        return usable(block) - h.info;
    }
    return 0;
}

void libheap_free(void *p)
{
    if (!p)
        return;
    struct head h = peek(p);
    if (h.check == ((uintptr_t)p ^ KEY_LISTED)) {
        head_of(p)->check = 0; /* a second free is then the C library's, which says so */
        if (inside) {
            struct free_block *b = p;
            b->next = deferred;
            deferred = b;
            return;
        }
        if (!cache_put(head_of(p), (unsigned)h.info))
            put_listed(head_of(p), (unsigned)h.info);
    } else if (h.check == ((uintptr_t)p ^ KEY_MAPPED)) {
        head_of(p)->check = 0;
        munmap(head_of(p), h.info);
    } else if (h.check == ((uintptr_t)p ^ KEY_ALIGNED)) {
        head_of(p)->check = 0;
        libheap_free((char *)p - h.info);
    } else
        (free)(p);
}

void *libheap_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    size_t bytes = n * size;
    void *p = libheap_malloc(bytes);
    if (p && peek(p).check == ((uintptr_t)p ^ KEY_LISTED))
        memset(p, 0, bytes); /* a mapping is zero already */
    return p;
}

void *libheap_realloc(void *p, size_t size)
{
    if (!p)
        return libheap_malloc(size);
    size_t have = usable(p);
    if (!have)
        return (realloc)(p, size);
    if (size <= have && (size > have / 2 || have <= 128) &&
        peek(p).check == ((uintptr_t)p ^ KEY_LISTED))
        return p; /* fits, and not twice too big for it */
    void *q = libheap_malloc(size);
    if (!q)
        return NULL;
    memcpy(q, p, have < size ? have : size);
    libheap_free(p);
    return q;
}

char *libheap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = libheap_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int libheap_posix_memalign(void **out, size_t align, size_t size)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    if (align <= HEAD) {
        *out = libheap_malloc(size);
        return *out ? 0 : ENOMEM;
    }
    if (size > SIZE_MAX - align - HEAD)
        return ENOMEM;
    /* A block with room to move up to the boundary, and a header there
     * that leads back to it. */
    char *block = libheap_malloc(size + align + HEAD);
    if (!block)
        return ENOMEM;
    uintptr_t at = ((uintptr_t)block + HEAD + align - 1) & ~(uintptr_t)(align - 1);
    char *p = (char *)at;
    struct head *h = head_of(p);
    h->info = (uint64_t)(p - block);
    h->check = (uintptr_t)p ^ KEY_ALIGNED;
    *out = p;
    return 0;
}

void *libheap_aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    int e = libheap_posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
    if (e)
        errno = e;
    return e ? NULL : p;
}

/* Merge sort, stable, with a buffer of n elements from libheap: what glibc's
 * qsort does above 1 KiB, with glibc's malloc. */
static void merge_sort(char *v, char *tmp, size_t n, size_t size,
                       int (*cmp)(const void *, const void *))
{
    if (n < 2)
        return;
    if (n <= 8) { /* insertion */
        for (size_t i = 1; i < n; i++) {
            size_t j = i;
            memcpy(tmp, v + i * size, size);
            while (j > 0 && cmp(v + (j - 1) * size, tmp) > 0) {
                memcpy(v + j * size, v + (j - 1) * size, size);
                j--;
            }
            memcpy(v + j * size, tmp, size);
        }
        return;
    }
    size_t h = n / 2;
    merge_sort(v, tmp, h, size, cmp);
    merge_sort(v + h * size, tmp, n - h, size, cmp);
    size_t a = 0, b = h, k = 0;
    while (a < h && b < n) {
        if (cmp(v + b * size, v + a * size) < 0)
            memcpy(tmp + k++ * size, v + b++ * size, size);
        else
            memcpy(tmp + k++ * size, v + a++ * size, size);
    }
    while (a < h)
        memcpy(tmp + k++ * size, v + a++ * size, size);
    /* what is left of the upper half is in place already */
    memcpy(v, tmp, k * size);
}

void libheap_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n < 2 || !size)
        return;
    char *tmp = libheap_malloc(n * size);
    if (!tmp)
        log_fatal("out of memory sorting %zu items", n);
    merge_sort(base, tmp, n, size, cmp);
    libheap_free(tmp);
}

void *libheap_grow(void *v, size_t *cap, size_t elem, size_t first, const char *what)
{
    size_t n = *cap ? 2 * *cap : first;
    void *grown = NULL;
    if (n > *cap && n <= SIZE_MAX / elem)
#ifdef __SANITIZE_ADDRESS__ /* the library's blocks are the C library's there (libheap.h) */
        grown = realloc(v, n * elem);
#else
        grown = libheap_realloc(v, n * elem);
#endif
    if (!grown)
        log_fatal("out of memory %s", what);
    *cap = n;
    return grown;
}
