/*
 * watch.c — which pages the program wrote, from the kernel's own record
 * (mem.h, "Write watch"; issue 63).
 *
 * hlrc's home keeps a snapshot of each page it writes that other nodes
 * hold, and at each release must find the ones the program changed. A
 * compare of every such page with its snapshot finds them, but costs a
 * read of both whatever was written: NAS BT class W on 2 nodes compared
 * 14-23 million 8 KiB pages a node (500-800 a release), 8 % of them
 * changed, and memcmp was 37 % of the job's CPU time.
 *
 * Linux 6.7 and later can say it instead: a range registered with a
 * userfaultfd for write-protection in asynchronous mode
 * (UFFD_FEATURE_WP_ASYNC) takes a write to a protected page with no
 * signal and no message — the kernel lifts the protection itself (0.7 us
 * here) — and the PAGEMAP_SCAN ioctl lists the pages whose protection was
 * lifted and puts it back, in one call (24 us for 2,048 written pages of
 * 4 KiB). A page is armed when its snapshot is taken; at the release one
 * scan a run of the pages tells which were written since, and only those
 * are compared.
 *
 * Only the application's views are registered: the system view (where
 * dsm applies diffs and receives pages, to the snapshot as well) is not
 * the program's writing. A write by the kernel on the program's behalf
 * (read(2) into a shared buffer) faults on the protection like the
 * program's own and is seen. Where the kernel lacks the features (older
 * kernels, a DSM_HOME_DIR file, userfaultfd refused), or DSM_WRITE_WATCH
 * is off, nothing is registered and every page is reported written: the
 * caller compares them all, as before.
 *
 * Registering has a price the program pays at its read faults: the kernel
 * maps a faulting page's neighbours at once (fault-around), but not in a
 * range registered for write-protection, so every page of the view then
 * takes a fault of its own (bench/apps LU 1024, 2 nodes: 11,100 page
 * faults instead of 8,500, 8 % longer). So the caller starts the watch
 * (mem_watch_start) only once compares are many (hlrc.c,
 * WATCH_AFTER_COMPARES), or at once with DSM_WRITE_WATCH=on.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

/* The system's headers may predate the kernel it runs on (Linux 6.7's
 * interface; its numbers are the kernel's ABI). */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
    uint64_t start, end, categories;
};
struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
        category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN          _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WRITTEN       (1 << 1)
#define PM_SCAN_WP_MATCHING   (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#endif

/* Pages not listed that a scan's run may span: fewer system calls where
 * the listed pages lie close together (a home's tracked pages are holes
 * and stretches: pages retire, others stay). A page a run spans loses its
 * record (the scan re-arms what it finds written): the caller lists every
 * page whose record it needs. */
#define RUN_GAP 8

/* Listed pages a run needs for a scan to be cheaper than comparing them:
 * a scan is a system call (about 3 us), a compare of a page of 8 KiB with
 * its snapshot under 1 us. A shorter run's pages are reported written
 * without a scan (NAS SP class S tracks 12 pages a release, 2 of them
 * written, scattered: scanning each run made it 3 % slower). */
#define RUN_MIN 4

#define SCAN_REGIONS 256

static DSM_STATE struct {
    pthread_once_t once;
    bool           on;
    int            uffd, pagemap;
    struct { uint32_t page, index; } *order; /* scratch for mem_watch_collect */
    size_t         cap;
} watch = {.once = PTHREAD_ONCE_INIT, .uffd = -1, .pagemap = -1};

static bool register_range(char *addr, size_t len)
{
    struct uffdio_register r = {.range = {.start = (uintptr_t)addr, .len = len},
                                .mode = UFFDIO_REGISTER_MODE_WP};
    return !len || ioctl(watch.uffd, UFFDIO_REGISTER, &r) == 0;
}

/* Why the kernel keeps no record here, or NULL once registered. */
static const char *watch_open_why(void)
{
    if (mem.home_dir)
        return "the region is a DSM_HOME_DIR file";
    watch.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (watch.uffd < 0)
        return "userfaultfd refused";
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_HUGETLBFS_SHMEM};
    watch.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    const char *why = NULL;
    if (watch.pagemap < 0)
        why = "/proc/self/pagemap cannot be read";
    else if (ioctl(watch.uffd, UFFDIO_API, &api) < 0 || !(api.features & UFFD_FEATURE_WP_ASYNC))
        why = "the kernel has no asynchronous write-protection (Linux 6.7+)";
    /* The region's view of the globals' pages, [base, base + gsize), is
     * not the program's (mem_contains): its window at gbase is. */
    else if (!register_range(mem.base + mem.gsize, mem.size - mem.gsize) ||
             !register_range(mem.gbase, mem.gsize))
        why = "the region's views cannot be registered";
    if (why) {
        if (watch.pagemap >= 0)
            close(watch.pagemap);
        close(watch.uffd); /* unregisters whatever was */
        watch.uffd = watch.pagemap = -1;
    }
    return why;
}

static void watch_open(void)
{
    if (mem.write_watch == WRITE_WATCH_OFF)
        return;
    const char *why = watch_open_why();
    if (!why)
        __atomic_store_n(&watch.on, true, __ATOMIC_RELEASE);
    else if (mem.write_watch == WRITE_WATCH_ON)
        log_warn("DSM_WRITE_WATCH=on: %s; home pages are compared with their snapshots", why);
}

bool mem_watch_start(void)
{
    pthread_once(&watch.once, watch_open);
    return mem_watch_on();
}

bool mem_watch_on(void)
{
    return __atomic_load_n(&watch.on, __ATOMIC_ACQUIRE);
}

/* A call the kernel refused: the watch ends here, and from now on every
 * page is reported written (compared), which is always right. Once only:
 * the pages armed before stay armed, and are compared like the rest. */
static void give_up(const char *call)
{
    if (!__atomic_exchange_n(&watch.on, false, __ATOMIC_ACQ_REL))
        return;
    log_warn("the write watch stops (%s: %s); home pages are compared with their snapshots from "
             "now on", call, strerror(errno));
}

void mem_watch_arm(size_t page)
{
    if (!mem_watch_on())
        return;
    struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)mem_app(page), .len = mem.page_size},
                                     .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    if (ioctl(watch.uffd, UFFDIO_WRITEPROTECT, &wp) < 0)
        give_up("UFFDIO_WRITEPROTECT");
}

static int by_page(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Marks the listed pages in [first, last] that a scan finds written
 * (order[from, to) are the pages of the run, ascending), re-arming them;
 * false when the kernel refused. */
static bool scan_run(size_t first, size_t last, size_t from, size_t to, uint8_t *written)
{
    struct page_region regions[SCAN_REGIONS];
    uintptr_t start = (uintptr_t)mem_app(first), end = (uintptr_t)mem_app(last) + mem.page_size;
    size_t at = from;
    while (start < end) {
        struct pm_scan_arg a = {.size = sizeof a,
                                .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
                                .start = start,
                                .end = end,
                                .vec = (uintptr_t)regions,
                                .vec_len = SCAN_REGIONS,
                                .category_mask = PAGE_IS_WRITTEN,
                                .return_mask = PAGE_IS_WRITTEN};
        long n = ioctl(watch.pagemap, PAGEMAP_SCAN, &a);
        if (n < 0)
            return false;
        for (long r = 0; r < n; r++) {
            size_t lo = mem_page_of((void *)(uintptr_t)regions[r].start);
            size_t hi = mem_page_of((void *)(uintptr_t)(regions[r].end - 1));
            while (at < to && watch.order[at].page < lo)
                at++;
            for (size_t k = at; k < to && watch.order[k].page <= hi; k++)
                written[watch.order[k].index] = 1;
        }
        if (a.walk_end <= start) {
            errno = EPROTO; /* no progress: never loop */
            return false;
        }
        start = a.walk_end;
    }
    return true;
}

void mem_watch_collect(const uint32_t *pages, size_t n, size_t take, uint8_t *written)
{
    if (n == 0) /* (written may be NULL then) */
        return;
    if (!mem_watch_on()) {
        memset(written, 1, n);
        return;
    }
    if (n < RUN_MIN) {
        memset(written, 1, n);
        return;
    }
    memset(written, 0, n);
    if (n > watch.cap) {
        free(watch.order);
        watch.cap = n > 2 * watch.cap ? n : 2 * watch.cap;
        watch.order = malloc(watch.cap * sizeof *watch.order);
        if (!watch.order)
            log_fatal("out of memory for the write watch's list of %zu pages", n);
    }
    bool ascending = true;
    for (size_t i = 0; i < n; i++) {
        watch.order[i].page = pages[i], watch.order[i].index = (uint32_t)i;
        ascending &= i == 0 || pages[i] > pages[i - 1];
    }
    if (!ascending) /* hlrc keeps its list in order: seldom */
        qsort(watch.order, n, sizeof *watch.order, by_page);
    /* Runs of listed pages at most RUN_GAP apart, within one view (the
     * globals' window and the region are not contiguous). */
    for (size_t from = 0; from < n;) {
        size_t to = from + 1;
        while (to < n && watch.order[to].page - watch.order[to - 1].page <= RUN_GAP &&
               (watch.order[to].page < mem.gpages) == (watch.order[from].page < mem.gpages))
            to++;
        if (to - from < RUN_MIN) { /* not scanned: records untouched (2, not 1: below) */
            for (size_t k = from; k < to; k++)
                written[watch.order[k].index] = 2;
        } else if (!scan_run(watch.order[from].page, watch.order[to - 1].page, from, to, written)) {
            give_up("PAGEMAP_SCAN");
            memset(written, 1, n);
            return;
        }
        from = to;
    }
    /* The pages whose records the caller keeps: found written, they are
     * written again for the next look (lifting the protection the scan
     * put back). Seldom: pages tracked during a release, written at once. */
    for (size_t i = take; i < n; i++)
        if (written[i] == 1) {
            struct uffdio_writeprotect wp = {
                .range = {.start = (uintptr_t)mem_app(pages[i]), .len = mem.page_size}, .mode = 0};
            if (ioctl(watch.uffd, UFFDIO_WRITEPROTECT, &wp) < 0) {
                give_up("UFFDIO_WRITEPROTECT");
                memset(written, 1, n);
                return;
            }
        }
}
