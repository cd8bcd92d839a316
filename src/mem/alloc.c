/*
 * alloc.c — dsm_malloc from per-node arenas, with no communication.
 *
 * The region is cut into one arena per node; a node allocates only from its
 * own, so no other node need be asked. All bookkeeping is private to the
 * node (never in shared memory, which would fault and travel): a run-length
 * map for page-sized blocks, size classes for small ones.
 *
 * Small blocks come in size classes spaced as jemalloc's and tcmalloc's
 * are: 16-byte steps up to 128 bytes, then four steps between powers of
 * two (160, 192, 224, 256, 320, ...), up to half the largest page. A
 * class's blocks lie at multiples of its size in their page, so a block
 * is aligned to the largest power of two dividing its class (at least 16:
 * malloc's max_align_t); an aligned request takes the smallest class that
 * is aligned enough. Close classes pack blocks densely: NPB MG's 2,064-byte
 * rows take 2,560 bytes, three to an 8 KiB page, where a power-of-two
 * class (4 KiB) put two, and a page that is not shared is a page not
 * fetched.
 *
 * Blocks of a page or more are page-aligned and take the requested home
 * policy; the arena's owner (the pages' "base node") records it and answers
 * other nodes' questions about those pages' homes. Smaller blocks share
 * pages, homed at the allocating node.
 *
 * Fresh memory is zero everywhere (the memfd is), so it needs no clearing;
 * reused memory is cleared by the allocating node, through the protocol like
 * any other write.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/check.h"
#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/stack.h"
#include "base/state.h"
#include "mem/mem.h"

#define SMALL_MIN     16
#define SMALL_LINEAR  8           /* 16, 32, ..., 128: 16-byte steps */
#define SMALL_STEPS   4           /* classes per doubling above 128 */
#define SMALL_CLASSES (SMALL_LINEAR + 8 * SMALL_STEPS) /* .. 32 KiB, half the largest page */

struct free_run { size_t first, count; };

struct allocation_policy {        /* a page-level block with a non-local home */
    size_t        first, count;
    enum dsm_home home;
};

static DSM_STATE struct {
    size_t                    first_page, end_page, next_page; /* our arena; bump pointer */
    size_t                    top_page;   /* [top_page, arena's end): mem_alloc_top's blocks */
    size_t                    high_water;  /* pages below it have been allocated before */
    uint32_t                 *run;        /* run[i]: pages of the block starting at arena page i */
    uint8_t                  *small;      /* small[i]: size class + 1 of arena page i */
    uint32_t                 *inuse_of;   /* inuse_of[i]: index + 1 of small page i's map */
    uint64_t                 *inuse;      /* per small page, a bit per block: in use */
    size_t                    ninuse, capinuse; /* maps, and room for them */
    struct free_run          *runs;       /* freed page runs */
    size_t                    nruns, cap_runs;
    void                    **bins[SMALL_CLASSES];
    size_t                    nbin[SMALL_CLASSES], capbin[SMALL_CLASSES];
    struct allocation_policy *policies;
    size_t                    npolicies, cap_policies;
    uint64_t                **remote;     /* per owner: offsets of its blocks we freed */
    size_t                   *nremote, *capremote;
    bool                      ready;
} arenas;

/* The delivery thread decides homes and frees blocks while the program
 * allocates. */
static DSM_STATE pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void *grow(void *p, size_t *cap, size_t elem)
{
    size_t n = *cap ? *cap * 2 : 64;
    void *q = realloc(p, n * elem);
    if (!q)
        log_fatal("out of memory in the allocator's bookkeeping");
    *cap = n;
    return q;
}

static void setup(void)
{
    arenas.first_page = (size_t)job()->rank * mem.arena_pages;
    arenas.end_page = arenas.first_page + mem.arena_pages;
    arenas.top_page = arenas.end_page;
    /* The master's arena begins with the shared globals (globals.c) and the
     * program's allocations before the start (prestart.c): pages allocated
     * for good, homed where the arena is. */
    arenas.next_page = arenas.first_page + (job()->rank == 0 ? mem.gpages + mem.epages : 0);
    arenas.high_water = arenas.next_page;
    arenas.run = mmap(NULL, mem.arena_pages * sizeof *arenas.run, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arenas.small = mmap(NULL, mem.arena_pages, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arenas.inuse_of = mmap(NULL, mem.arena_pages * sizeof *arenas.inuse_of, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arenas.remote = calloc((size_t)job()->nodes, sizeof *arenas.remote);
    arenas.nremote = calloc((size_t)job()->nodes, sizeof *arenas.nremote);
    arenas.capremote = calloc((size_t)job()->nodes, sizeof *arenas.capremote);
    if (arenas.run == MAP_FAILED || arenas.small == MAP_FAILED || arenas.inuse_of == MAP_FAILED ||
        !arenas.remote || !arenas.nremote || !arenas.capremote)
        log_fatal("out of memory setting up the allocator");
    arenas.ready = true;
}

static void exhausted(size_t bytes)
{
    log_fatal("shared region exhausted: node %d's arena (%zu MiB) has no room for %zu more bytes; "
              "raise DSM_REGION_SIZE", job()->rank, (mem.arena_pages << mem.page_shift) >> 20, bytes);
}

/* First fit among freed runs, else the bump pointer. Returns a page index. */
static size_t take_pages(size_t count, bool *reused)
{
    for (size_t i = 0; i < arenas.nruns; i++) {
        if (arenas.runs[i].count >= count) {
            size_t first = arenas.runs[i].first;
            arenas.runs[i].first += count;
            arenas.runs[i].count -= count;
            if (!arenas.runs[i].count)
                arenas.runs[i] = arenas.runs[--arenas.nruns];
            *reused = true;
            return first;
        }
    }
    if (arenas.end_page - arenas.next_page < count)
        exhausted(count << mem.page_shift);
    size_t first = arenas.next_page;
    arenas.next_page += count;
    /* Pages given back to the bump pointer hold old data: only those never
     * handed out before are known to be zero. */
    *reused = first < arenas.high_water;
    if (arenas.next_page > arenas.high_water)
        arenas.high_water = arenas.next_page;
    return first;
}

static void give_pages(size_t first, size_t count)
{
    if (first + count == arenas.next_page) { /* give back to the bump pointer */
        arenas.next_page = first;
        return;
    }
    if (arenas.nruns == arenas.cap_runs)
        arenas.runs = grow(arenas.runs, &arenas.cap_runs, sizeof *arenas.runs);
    arenas.runs[arenas.nruns++] = (struct free_run){first, count};
}

/* The block size of class k (the file's opening comment). */
static size_t class_size(int k)
{
    if (k < SMALL_LINEAR)
        return (size_t)SMALL_MIN * (size_t)(k + 1);
    int j = k - SMALL_LINEAR;
    size_t base = (size_t)SMALL_MIN * SMALL_LINEAR << (j / SMALL_STEPS);
    return base + (size_t)(j % SMALL_STEPS + 1) * (base / SMALL_STEPS);
}

/* The alignment every block of class k has: its blocks start at multiples
 * of the class size in a page-aligned page. */
static size_t class_align(int k)
{
    size_t c = class_size(k);
    return c & -c;
}

/* The smallest class of at least `size` bytes aligned to `align` (a power
 * of two), -1 if no small class is: a page-level block then. */
static int class_of(size_t size, size_t align)
{
    /* Straight to the first class that can hold size: a page or more (the
     * common dsm_malloc) scans nothing, and the 16-byte steps are skipped
     * by division (the scan cost 30 ns of an 8 KiB dsm_malloc's 60). */
    if (size > mem.page_size / 2)
        return -1;
    int first = size <= (size_t)SMALL_MIN * SMALL_LINEAR ? (int)((size + SMALL_MIN - 1) / SMALL_MIN) - 1
                                                         : SMALL_LINEAR;
    for (int k = first > 0 ? first : 0; k < SMALL_CLASSES && class_size(k) <= mem.page_size / 2; k++)
        if (size <= class_size(k) && class_align(k) >= align)
            return k;
    return -1;
}

/* Words of a small page's in-use map: a bit for each block of the smallest
 * class. */
static size_t inuse_words(void)
{
    return mem.page_size / SMALL_MIN / 64;
}

/* The in-use bit of the small block p of class k, in page `page`; the
 * caller tests, sets or clears it (*word, mask). */
static uint64_t *inuse_bit(size_t page, int k, const void *p, uint64_t *mask)
{
    size_t i = page - arenas.first_page;
    size_t block = (size_t)((const char *)p - mem_app(page)) / class_size(k);
    *mask = 1ull << (block % 64);
    return &arenas.inuse[(arenas.inuse_of[i] - 1) * inuse_words() + block / 64];
}

/* *clear: bytes at the result to zero once the allocator lock is dropped
 * (clearing reused memory may fault, and a fault waits on the network,
 * whose delivery thread may need the allocator to answer another node). */
static void *alloc_small(int k, size_t *clear)
{
    size_t bsize = class_size(k);
    if (!arenas.nbin[k]) {
        bool reused;
        size_t page = take_pages(1, &reused);
        arenas.small[page - arenas.first_page] = (uint8_t)(k + 1);
        /* A map for the page (small pages stay small: never given back). */
        size_t words = inuse_words();
        while (arenas.capinuse < (arenas.ninuse + 1) * words)
            arenas.inuse = grow(arenas.inuse, &arenas.capinuse, sizeof *arenas.inuse);
        memset(arenas.inuse + arenas.ninuse * words, 0, words * sizeof *arenas.inuse);
        arenas.inuse_of[page - arenas.first_page] = (uint32_t)++arenas.ninuse;
        size_t n = mem.page_size / bsize;
        while (arenas.capbin[k] < arenas.nbin[k] + n)
            arenas.bins[k] = grow(arenas.bins[k], &arenas.capbin[k], sizeof(void *));
        for (size_t i = n; i-- > 0;) /* lowest address first out */
            arenas.bins[k][arenas.nbin[k]++] = mem_app(page) + i * bsize;
        *clear = reused ? bsize : 0;
    } else {
        *clear = bsize; /* a reused block */
    }
    void *p = arenas.bins[k][--arenas.nbin[k]];
    uint64_t mask;
    *inuse_bit(mem_page_of(p), k, p, &mask) |= mask;
    return p;
}

static void *alloc_locked(size_t size, size_t align, enum dsm_home home, size_t *clear);

void *mem_alloc(size_t size, size_t align, enum dsm_home home)
{
    if (!mem.base)
        log_fatal("dsm_malloc called before dsm_startup");
    if (align > mem.page_size || (align & (align - 1)))
        log_fatal("internal error: an allocation aligned to %zu bytes (a power of two up to the "
                  "page, %zu, is allowed)", align, mem.page_size);
    size_t clear = 0;
    pthread_mutex_lock(&alloc_lock);
    void *p = alloc_locked(size, align, home, &clear);
    pthread_mutex_unlock(&alloc_lock);
    if (clear)
        memset(p, 0, clear);
    return p;
}

static void *alloc_locked(size_t size, size_t align, enum dsm_home home, size_t *clear)
{
    if (!arenas.ready)
        setup();
    if (size == 0)
        size = 1;
    if (home == DSM_HOME_DEFAULT)
        home = mem.default_home;
    int k = class_of(size, align);
    if (k >= 0)
        return alloc_small(k, clear);
    if (size > (mem.arena_pages << mem.page_shift))
        exhausted(size);
    size_t count = (size + mem.page_size - 1) >> mem.page_shift;
    bool reused;
    size_t first = take_pages(count, &reused);
    arenas.run[first - arenas.first_page] = (uint32_t)count;
    if (home != DSM_HOME_LOCAL) {
        if (arenas.npolicies == arenas.cap_policies)
            arenas.policies = grow(arenas.policies, &arenas.cap_policies, sizeof *arenas.policies);
        arenas.policies[arenas.npolicies++] = (struct allocation_policy){first, count, home};
    }
    *clear = reused ? count << mem.page_shift : 0;
    return mem_app(first);
}

static void free_local(size_t page, void *p)
{
    size_t i = page - arenas.first_page;
    if (arenas.small[i]) {
        int k = arenas.small[i] - 1;
        size_t bsize = class_size(k), offset = (size_t)((char *)p - mem_app(page));
        if (offset % bsize || offset / bsize >= mem.page_size / bsize)
            log_fatal("dsm_free(%p): not the start of a block", p);
        uint64_t mask, *word = inuse_bit(page, k, p, &mask);
        if (!(*word & mask))
            log_fatal("dsm_free(%p): the block is not allocated (freed twice?)", p);
        *word &= ~mask;
        if (arenas.nbin[k] == arenas.capbin[k])
            arenas.bins[k] = grow(arenas.bins[k], &arenas.capbin[k], sizeof(void *));
        arenas.bins[k][arenas.nbin[k]++] = p;
        return;
    }
    if (p != mem_app(page) || !arenas.run[i])
        log_fatal("dsm_free(%p): not a block dsm_malloc returned", p);
    size_t count = arenas.run[i];
    arenas.run[i] = 0;
    for (size_t j = 0; j < arenas.npolicies; j++)
        if (arenas.policies[j].first == page) {
            arenas.policies[j] = arenas.policies[--arenas.npolicies];
            break;
        }
    give_pages(page, count);
}

static void free_locked(void *p);

void mem_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&alloc_lock);
    free_locked(p);
    pthread_mutex_unlock(&alloc_lock);
}

/* ---- a write after dsm_free, under DSM_CHECK (base/check.h) ---------------
 *
 * A small block the program frees on its own node is filled with POISON
 * and kept out of use while the node's next QUARANTINE frees go by; when it
 * leaves (and for those still kept, at dsm_finish) every byte must still be
 * POISON, or the job ends naming the block, its size and the call that
 * freed it. A write by another node after the free shows once it has
 * reached this node's copy (a release of the writer's, an acquire here).
 * Off, none of this runs: one predictable branch a dsm_free. */
#define QUARANTINE 256
#define POISON     0xdb

struct freed_block { char *p; size_t size; const void *caller; };

static DSM_STATE struct {
    struct freed_block ring[QUARANTINE];
    size_t             next, count;
} quarantine;

/* Under the lock: keeps b, and hands back in *out the block it pushes
 * out (size 0: none). */
static void quarantine_put(struct freed_block b, struct freed_block *out)
{
    out->size = 0;
    if (quarantine.count == QUARANTINE)
        *out = quarantine.ring[quarantine.next];
    else
        quarantine.count++;
    quarantine.ring[quarantine.next] = b;
    quarantine.next = (quarantine.next + 1) % QUARANTINE;
}

static void quarantine_verify(const struct freed_block *b)
{
    for (size_t i = 0; i < b->size; i++)
        if ((unsigned char)b->p[i] != POISON)
            log_fatal("dsm_free(%p): the %zu-byte block was written after it was freed (by the "
                      "call at %p): its byte %zu holds 0x%02x, not the 0x%02x dsm_free left "
                      "(DSM_CHECK=1 poisons each node's last %d freed blocks)", (void *)b->p,
                      b->size, b->caller, i, (unsigned char)b->p[i], POISON, QUARANTINE);
}

/* The small block at p of this node's arena: its size, or 0 (another
 * node's, a page-level block, or not a block's start: free_locked says). */
static size_t own_small_block(const void *p)
{
    if (!arenas.ready || !mem_contains(p))
        return 0;
    size_t page = mem_page_of(p);
    if (page < arenas.first_page || page >= arenas.first_page + mem.arena_pages ||
        !arenas.small[page - arenas.first_page])
        return 0;
    size_t bsize = class_size(arenas.small[page - arenas.first_page] - 1);
    return ((size_t)((const char *)p - mem_app(page)) % bsize) ? 0 : bsize;
}

static void free_checked(void *p, const void *caller)
{
    size_t size = own_small_block(p);
    if (!size) {
        mem_free(p);
        return;
    }
    struct freed_block out;
    pthread_mutex_lock(&alloc_lock);
    size_t page = mem_page_of(p);
    uint64_t mask, *word = inuse_bit(page, arenas.small[page - arenas.first_page] - 1, p, &mask);
    if (!(*word & mask))
        log_fatal("dsm_free(%p): the block is not allocated (freed twice?)", p);
    *word &= ~mask; /* freed; its bin gets it when it leaves the quarantine */
    pthread_mutex_unlock(&alloc_lock);
    /* Outside the lock: a write may fault, and a fault waits on the
     * network, whose delivery thread may need the allocator. */
    memset(p, POISON, size);
    pthread_mutex_lock(&alloc_lock);
    quarantine_put((struct freed_block){p, size, caller}, &out);
    pthread_mutex_unlock(&alloc_lock);
    if (!out.size)
        return;
    quarantine_verify(&out);
    int k = arenas.small[mem_page_of(out.p) - arenas.first_page] - 1;
    pthread_mutex_lock(&alloc_lock);
    if (arenas.nbin[k] == arenas.capbin[k])
        arenas.bins[k] = grow(arenas.bins[k], &arenas.capbin[k], sizeof(void *));
    arenas.bins[k][arenas.nbin[k]++] = out.p;
    pthread_mutex_unlock(&alloc_lock);
}

void mem_check_freed(void)
{
    if (!check_on())
        return;
    pthread_mutex_lock(&alloc_lock);
    size_t n = quarantine.count;
    struct freed_block kept[QUARANTINE];
    memcpy(kept, quarantine.ring, sizeof kept);
    pthread_mutex_unlock(&alloc_lock);
    for (size_t i = 0; i < n; i++)
        quarantine_verify(&kept[i]);
}

static void free_locked(void *p)
{
    if (!mem_contains(p))
        log_fatal("dsm_free(%p): not in the shared region", p);
    if (!arenas.ready)
        setup();
    size_t page = mem_page_of(p);
    if (page < mem.gpages)
        log_fatal("dsm_free(%p): a global variable, not a block dsm_malloc returned", p);
    if (page < mem.gpages + mem.epages)
        log_fatal("dsm_free(%p): a block allocated before the job started, not by dsm_malloc", p);
    int owner = mem_base_node(page);
    if (owner == job()->rank) {
        free_local(page, p);
        return;
    }
    /* Another node's block: its owner frees it when this list reaches it
     * (at the next barrier), so dsm_free needs no communication. */
    if (arenas.nremote[owner] == arenas.capremote[owner])
        arenas.remote[owner] = grow(arenas.remote[owner], &arenas.capremote[owner], sizeof(uint64_t));
    arenas.remote[owner][arenas.nremote[owner]++] = (uint64_t)((char *)p - mem.base);
}

size_t mem_block_capacity(const void *p)
{
    if (!mem_contains(p))
        return 0;
    size_t page = mem_page_of(p);
    if (page < mem.gpages + mem.epages || mem_base_node(page) != job()->rank)
        return 0;
    size_t cap = 0;
    pthread_mutex_lock(&alloc_lock);
    size_t i = page - arenas.first_page;
    if (!arenas.ready) {
        /* nothing allocated yet */
    } else if (arenas.small[i]) {
        int k = arenas.small[i] - 1;
        size_t bsize = class_size(k), offset = (size_t)((const char *)p - mem_app(page));
        uint64_t mask;
        if (offset % bsize == 0 && offset / bsize < mem.page_size / bsize &&
            (*inuse_bit(page, k, p, &mask) & mask))
            cap = bsize;
    } else if (p == mem_app(page) && arenas.run[i]) {
        cap = (size_t)arenas.run[i] << mem.page_shift;
    }
    pthread_mutex_unlock(&alloc_lock);
    return cap;
}

size_t mem_take_remote_frees(int owner, uint64_t *out, size_t max)
{
    pthread_mutex_lock(&alloc_lock);
    size_t n = 0;
    if (arenas.ready) {
        n = arenas.nremote[owner] < max ? arenas.nremote[owner] : max;
        if (n)
            memcpy(out, arenas.remote[owner] + (arenas.nremote[owner] - n), n * sizeof *out);
        arenas.nremote[owner] -= n;
    }
    pthread_mutex_unlock(&alloc_lock);
    return n;
}

void mem_free_remote_block(uint64_t offset)
{
    if (offset >= mem.size || mem_base_node(offset >> mem.page_shift) != job()->rank)
        log_fatal("a node asked to free %#llx, which is not in this node's arena",
                  (unsigned long long)offset);
    pthread_mutex_lock(&alloc_lock);
    if (!arenas.ready)
        setup();
    free_local(offset >> mem.page_shift, mem.base + offset);
    pthread_mutex_unlock(&alloc_lock);
}

static int decide_locked(size_t page, int requester);

int mem_home_decide(size_t page, int requester)
{
    pthread_mutex_lock(&alloc_lock);
    int home = decide_locked(page, requester);
    pthread_mutex_unlock(&alloc_lock);
    return home;
}

static int decide_locked(size_t page, int requester)
{
    if (!arenas.ready)
        setup();
    if (page < arenas.first_page || (page >= arenas.next_page && page < arenas.top_page) ||
        page >= arenas.first_page + mem.arena_pages)
        return -1; /* beyond every allocation so far */
    int known = mem_home(page);
    if (known >= 0)
        return known;
    int home = job()->rank;
    for (size_t j = 0; j < arenas.npolicies; j++) {
        const struct allocation_policy *a = &arenas.policies[j];
        if (page < a->first || page >= a->first + a->count)
            continue;
        size_t i = page - a->first;
        switch (a->home) {
        case DSM_HOME_CYCLIC:
            home = (int)(page % (size_t)job()->nodes);
            break;
        case DSM_HOME_BLOCK:
            home = (int)(i * (size_t)job()->nodes / a->count);
            break;
        case DSM_HOME_FIRST_TOUCH:
            home = requester;
            break;
        default:
            break;
        }
        break;
    }
    mem_set_home(page, home);
    return home;
}

bool mem_home_pinned(size_t page)
{
    pthread_mutex_lock(&alloc_lock);
    bool pinned = arenas.ready && page >= arenas.top_page && page < arenas.first_page + mem.arena_pages;
    pthread_mutex_unlock(&alloc_lock);
    return pinned;
}

static enum dsm_home policy_of(size_t page)
{
    for (size_t j = 0; j < arenas.npolicies; j++)
        if (page >= arenas.policies[j].first && page < arenas.policies[j].first + arenas.policies[j].count)
            return arenas.policies[j].home;
    return DSM_HOME_LOCAL;
}

size_t mem_home_run(size_t page, int home, size_t max)
{
    pthread_mutex_lock(&alloc_lock);
    if (!arenas.ready)
        setup();
    size_t n = 0;
    for (size_t q = page + 1; n < max && q >= arenas.first_page && q < arenas.next_page; q++, n++) {
        int h = mem_home(q);
        if (h < 0 && policy_of(q) != DSM_HOME_FIRST_TOUCH)
            h = decide_locked(q, -1);
        if (h != home)
            break;
    }
    pthread_mutex_unlock(&alloc_lock);
    return n;
}

/* The entry points run off the master's shared stack (base/stack.h): a
 * first touch of one of its pages takes the allocator's lock, which
 * mem_alloc holds. */
struct alloc_args { size_t size, align; enum dsm_home home; void *p; const void *caller; };

static void alloc_call(void *arg)
{
    struct alloc_args *a = arg;
    a->p = mem_alloc(a->size, a->align, a->home);
}

static void free_call(void *arg)
{
    struct alloc_args *a = arg;
    if (__builtin_expect(check_on(), 0) && a->p)
        free_checked(a->p, a->caller);
    else
        mem_free(a->p);
}

void *mem_alloc_top(size_t size)
{
    pthread_mutex_lock(&alloc_lock);
    if (!arenas.ready)
        setup();
    size_t count = (size + mem.page_size - 1) >> mem.page_shift;
    if (arenas.end_page - arenas.next_page < count)
        exhausted(size);
    arenas.end_page -= count; /* the bump allocator stops below it */
    arenas.top_page = arenas.end_page;
    /* Read under the lock: another thread's call may lower it next (two
     * threads of a node taking their shared stacks at once got one). */
    void *block = mem_app(arenas.top_page);
    pthread_mutex_unlock(&alloc_lock);
    return block;
}

/* The profile's allocation sites (base/profile.h) are the program's calls
 * of these: PROFILE_SITE notes the caller, and the call stack is sampled
 * here, on the program's own stack (not stack_private's). */
void *dsm_malloc(size_t size)
{
    PROFILE_SITE();
    struct alloc_args a = {size, SMALL_MIN, DSM_HOME_DEFAULT, NULL, NULL};
    stack_private(alloc_call, &a);
    if (PROFILE_ON)
        profile_alloc(PROF_ALLOC_HEAP, a.p, size);
    return a.p;
}

void *mem_alloc_aligned(size_t size, size_t align)
{
    struct alloc_args a = {size, align < SMALL_MIN ? SMALL_MIN : align, DSM_HOME_DEFAULT, NULL, NULL};
    stack_private(alloc_call, &a);
    if (PROFILE_ON)
        profile_alloc(PROF_ALLOC_HEAP, a.p, size);
    return a.p;
}

void *dsm_malloc_home(size_t size, enum dsm_home home)
{
    PROFILE_SITE();
    if (home < DSM_HOME_DEFAULT || home > DSM_HOME_FIRST_TOUCH)
        log_fatal("dsm_malloc_home: unknown home policy %d", (int)home);
    struct alloc_args a = {size, SMALL_MIN, home, NULL, NULL};
    stack_private(alloc_call, &a);
    if (PROFILE_ON)
        profile_alloc(PROF_ALLOC_HEAP, a.p, size);
    return a.p;
}

void dsm_free(void *p)
{
    struct alloc_args a = {0, SMALL_MIN, DSM_HOME_DEFAULT, p, __builtin_return_address(0)};
    stack_private(free_call, &a);
    if (PROFILE_ON)
        profile_free(p);
}

size_t dsm_page_size(void)
{
    if (!mem.base)
        log_fatal("dsm_page_size called before dsm_startup");
    return mem.page_size;
}
