/*
 * cache.c — bounded local memory: a per-node cache of other nodes' pages
 * with FIFO or clock replacement (seed 002, ATTEMPT-0's virtual memory).
 *
 * A node's copies of pages homed elsewhere are its cache; the homes are
 * the backing store (the seed kept its swap area in shared memory). Every
 * copy that comes in (a fault, a read-ahead) is counted; when a fetch
 * takes the count past DSM_LOCAL_MEM / page size, victims are chosen by
 * DSM_REPLACEMENT (replace.c), the protocol gives each one up
 * (coherence_ops.evict: a dirty copy's writes reach its home first, or
 * under lrc stay fetchable), and its frame goes back to the operating
 * system: a hole is punched in the region's file (MADV_REMOVE), which
 * unmaps it from both views, so the node's resident memory really falls.
 *
 * Clock's reference bits are software ones: when the hand clears a bit,
 * the page's access is taken away (its state, and so the protocol's idea
 * of it, unchanged), and the next touch faults here and gives it back
 * without the protocol. The changes are batched over contiguous pages
 * (mem_protect), and the hand clears bits only while looking for a victim,
 * so a node within its limit pays nothing. Under protocols whose handlers
 * change page states on the delivering thread (sc, erc), both are done
 * under their lock (coherence_ops.state_lock), so a handler's invalidation
 * is never undone.
 *
 * The cache's own state is touched only by the program's thread, under
 * the fault lock (faults, and the protocol's acquires and barriers that
 * make copies valid); victims are never chosen while a fetch is in flight
 * for them (hlrc refuses a page whose pull is out; the faulting page is
 * one of the last faults').
 *
 * Progress: the pages of the last RECENT faults are never victims, so an
 * instruction that touches two pages completes even when the limit is one
 * page (the limit is then passed by at most RECENT - 1 pages).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "mem/replace.h"

#define RECENT 2

static DSM_STATE struct {
    bool           on;
    size_t         frames;          /* the limit, in pages */
    struct replace r;
    size_t         recent[RECENT];  /* pages of the last faults (plus one) */
    unsigned       recent_at;
    uint8_t       *noaccess;        /* per page: access taken away by the clock */
    uint32_t      *cleared;         /* pages whose bit the hand just cleared */
    size_t         ncleared, cap_cleared;
    /* lrc's swap file */
    const char    *swap_dir;
    int            swap_fd;
    uint8_t       *swapped;         /* per page: its content is in the swap file */
} cache = {.swap_fd = -1};

static void *page_table(size_t elem)
{
    void *p = mmap(NULL, mem.npages * elem, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        log_fatal("out of memory for the page cache's tables (DSM_LOCAL_MEM)");
    return p;
}

void cache_start(size_t limit, int policy, const char *swap_dir)
{
    cache.swap_dir = swap_dir;
    if (!limit)
        return;
    if (!coh->evict)
        log_fatal("DSM_LOCAL_MEM: the %s protocol cannot bound its copies", coherence_name());
    cache.frames = limit >> mem.page_shift;
    if (!cache.frames)
        cache.frames = 1;
    if (replace_init(&cache.r, mem.npages, policy == REPLACE_CLOCK ? REPLACE_CLOCK : REPLACE_FIFO))
        log_fatal("out of memory for the page cache's tables (DSM_LOCAL_MEM)");
    cache.noaccess = page_table(sizeof *cache.noaccess);
    cache.on = true;
}

size_t cache_frames(void) { return cache.on ? cache.frames : 0; }

/* A copy of another node's page: the cache's. lrc has no homes: there
 * the pages of this node's own arena are its own. */
static bool cacheable(size_t page)
{
    int home = mem_home(page);
    if (home < 0)
        home = mem_base_node(page);
    return home != job()->rank;
}

static void state_lock(void)
{
    if (coh->state_lock)
        pthread_mutex_lock(coh->state_lock);
}

/* Protection changes made under the lock take effect before it is
 * dropped (mem_protect's batch is not thread-safe). */
static void state_unlock(void)
{
    mem_protect_flush();
    if (coh->state_lock)
        pthread_mutex_unlock(coh->state_lock);
}

static int prot_of(int state)
{
    return state == PAGE_WRITE ? PROT_READ | PROT_WRITE : state == PAGE_READ ? PROT_READ : PROT_NONE;
}

bool cache_touch(size_t page, bool write)
{
    if (!cache.on)
        return false;
    cache.recent[cache.recent_at++ % RECENT] = page + 1;
    if (!cache.noaccess[page]) {
        if (mem.pages[page].state == PAGE_INVALID)
            cache_reserve(1); /* room for the fetch to come */
        return false;
    }
    state_lock();
    cache.noaccess[page] = 0;
    int state = mem.pages[page].state;
    if (state != PAGE_INVALID)
        mem_protect(page, prot_of(state));
    state_unlock();
    replace_reference(&cache.r, page);
    stats_add(STAT_CACHE_REF_FAULTS, 1);
    return write ? state == PAGE_WRITE : state != PAGE_INVALID;
}

static bool refuse_recent(size_t page, void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < RECENT; i++)
        if (cache.recent[i] == page + 1)
            return true;
    return false;
}

static void hand_cleared(size_t page, void *arg)
{
    (void)arg;
    page_list_add(&cache.cleared, &cache.ncleared, &cache.cap_cleared, page);
    stats_add(STAT_CACHE_SWEEPS, 1);
}

/* The hand's cleared bits: the pages' access goes, in as few calls as
 * their addresses allow. */
static void take_access(void)
{
    if (!cache.ncleared)
        return;
    page_list_sort(cache.cleared, cache.ncleared);
    state_lock();
    for (size_t i = 0; i < cache.ncleared; i++) {
        size_t page = cache.cleared[i];
        if (mem.pages[page].state != PAGE_INVALID) {
            mem_protect(page, PROT_NONE);
            cache.noaccess[page] = 1;
        }
    }
    state_unlock();
    cache.ncleared = 0;
}

/* The frame goes back to the system: a hole in the region's file, gone
 * from both views; the next fill populates it afresh. */
static void release_frame(size_t page)
{
    if (madvise(mem_sys(page), mem.page_size, MADV_REMOVE) < 0)
        log_fatal("cannot release the frame of page %zu: %s%s", page, strerror(errno),
                  cache.swap_dir ? " (DSM_HOME_DIR's file system must support punching holes)" : "");
    mem.pages[page].resident = 0;
}

/* Evicts until at most `target` copies are left, or every one left is
 * refused. */
static void balance(size_t target)
{
    size_t refused = 0;
    while (cache.r.count > target && refused < cache.r.count) {
        long v = replace_victim(&cache.r, refuse_recent, hand_cleared, NULL);
        take_access();
        if (v < 0)
            return;
        size_t page = (size_t)v;
        if (!cacheable(page)) { /* its home moved here (migrate.c): no longer a copy;
                                   * a cleared reference bit is restored at its touch */
            replace_remove(&cache.r, page);
            continue;
        }
        int done = coh->evict(page);
        replace_remove(&cache.r, page);
        if (done == CACHE_NOT_NOW) {
            replace_insert(&cache.r, page); /* to the back of the line */
            refused++;
            continue;
        }
        cache.noaccess[page] = 0;
        release_frame(page);
        stats_add(STAT_CACHE_EVICTIONS, 1);
        if (done == CACHE_WRITTEN_BACK)
            stats_add(STAT_CACHE_WRITEBACKS, 1);
    }
}

void cache_admit(size_t page)
{
    if (!cache.on || mem.pages[page].state == PAGE_INVALID || !cacheable(page))
        return;
    if (replace_has(&cache.r, page)) {
        replace_reference(&cache.r, page);
        return;
    }
    replace_insert(&cache.r, page);
    stats_max(STAT_CACHE_RESIDENT_MAX, cache.r.count);
}

void cache_faulted(size_t page)
{
    if (!cache.on)
        return;
    cache_admit(page);
    if (cache.r.count > cache.frames)
        balance(cache.frames);
}

size_t cache_reserve(size_t pages)
{
    if (!cache.on)
        return pages;
    if (pages > cache.frames)
        pages = cache.frames;
    if (cache.r.count + pages > cache.frames)
        balance(cache.frames - pages);
    size_t room = cache.frames > cache.r.count ? cache.frames - cache.r.count : 0;
    return room < pages ? room : pages;
}

/* ---- lrc's swap file ---------------------------------------------------- */

static void swap_open(void)
{
    const char *dir = cache.swap_dir;
    if (!dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    cache.swap_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (cache.swap_fd < 0)
        log_fatal("cannot create lrc's swap file in %s: %s (DSM_HOME_DIR names where)", dir,
                  strerror(errno));
    cache.swapped = page_table(sizeof *cache.swapped);
}

/* The page's frame to (out) or from its place in the swap file. */
static void swap_io(size_t page, bool out)
{
    char *frame = mem_sys(page); /* read into, the frame fills as it goes */
    off_t at = (off_t)page << mem.page_shift;
    for (size_t done = 0; done < mem.page_size;) {
        size_t left = mem.page_size - done;
        ssize_t n = out ? pwrite(cache.swap_fd, frame + done, left, at + (off_t)done)
                        : pread(cache.swap_fd, frame + done, left, at + (off_t)done);
        if (n <= 0)
            log_fatal("cannot %s page %zu %s lrc's swap file: %s", out ? "write" : "read", page,
                      out ? "to" : "back from", n < 0 ? strerror(errno) : "no progress");
        done += (size_t)n;
    }
}

void cache_swap_out(size_t page)
{
    if (cache.swap_fd < 0)
        swap_open();
    swap_io(page, true);
    cache.swapped[page] = 1;
}

bool cache_swap_in(size_t page)
{
    if (!cache.swapped || !cache.swapped[page])
        return false;
    swap_io(page, false);
    /* Its disk space is not needed until it goes out again. */
    (void)fallocate(cache.swap_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)page << mem.page_shift, (off_t)mem.page_size);
    cache.swapped[page] = 0;
    return true;
}
