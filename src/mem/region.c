/*
 * region.c — the shared region's double mapping, protections and twins.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/state.h"
#include "base/stats.h"
#include "mem/mem.h"

/* default_home: DSM_HOME's default until mem_init sets the job's. */
DSM_STATE struct mem_region mem = {.default_home = DSM_HOME_LOCAL};

/* The pending run of protection changes (see mem_protect). */
static DSM_STATE struct {
    size_t first, count;
    int    prot;
} batch;

/* ENOMEM from a mapping that reserves no memory (MAP_NORESERVE): the
 * address space ran out, most often under an address-space limit (ulimit
 * -v). The region is reserved twice (the application and the system view)
 * plus its page table: a smaller DSM_REGION_SIZE is the fix. Every node
 * under the same limit meets it at once: said once for the job. */
static _Noreturn void no_address_space(const char *what)
{
    struct rlimit rl;
    char limit[64] = "";
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, " under an address-space limit (ulimit -v) of %llu MiB",
                 (unsigned long long)rl.rlim_cur >> 20);
    log_fatal_alike("cannot reserve address space for %s (2 x %zu MiB and a page table)%s; "
                    "set DSM_REGION_SIZE smaller", what, mem.size >> 20, limit);
}

/* The region's file: a memfd, or with DSM_HOME_DIR an unlinked file in
 * that directory, so the homes (and copies) live on its disk, with the
 * page cache in front of them; pages never written take no room in
 * either. */
static int region_file(size_t size, const char *home_dir)
{
    if (!home_dir) {
        int fd = memfd_create("dsm-region", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
            log_fatal("cannot create the %zu MiB shared region: %s", size >> 20, strerror(errno));
        return fd;
    }
    int fd = open(home_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        log_fatal("DSM_HOME_DIR=%s: cannot create the home file there: %s", home_dir, strerror(errno));
    if (ftruncate(fd, (off_t)size) < 0)
        log_fatal("DSM_HOME_DIR=%s: cannot size the home file to %zu GiB: %s (a smaller "
                  "DSM_REGION_SIZE may fit)", home_dir, size >> 30, strerror(errno));
    mem_catch_sigbus(home_dir);
    return fd;
}

void mem_init(const struct mem_params *p)
{
    size_t region_size = p->region_size, page_size = p->page_size;
    uintptr_t base = p->base;
    const char *home_dir = p->home_dir;
    int nodes = job()->nodes;
    long os_page = sysconf(_SC_PAGESIZE);
    if (page_size < (size_t)os_page || (page_size & (page_size - 1)) || page_size > 65536)
        log_fatal("DSM_PAGE_SIZE=%zu: the coherence unit must be a power of two from %ld to 65536",
                  page_size, os_page);
    size_t arena = region_size / (size_t)nodes / page_size * page_size;
    if (arena < page_size)
        log_fatal("DSM_REGION_SIZE=%zu is too small for %d nodes", region_size, nodes);
    mem.page_size = page_size;
    mem.page_shift = (unsigned)__builtin_ctzl(page_size);
    mem.arena_pages = arena / page_size;
    mem.size = arena * (size_t)nodes;
    mem.npages = mem.size / page_size;
    mem.default_home = p->default_home;
    mem.write_watch = p->write_watch;

    mem.memfd = region_file(mem.size, home_dir);
    mem.home_dir = home_dir;
    mem.sys = mmap(NULL, mem.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, mem.memfd, 0);
    /* The program's allocations before the start lie where the master's
     * arena will be (prestart.c): into the file, before the view covers them. */
    if (mem.sys != MAP_FAILED)
        mem.prestart_size = mem_prestart_adopt((char *)base, job()->rank == 0);
    void *app = mmap((void *)base, mem.size, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
                     mem.memfd, 0);
    if (app == MAP_FAILED && errno == ENOMEM)
        no_address_space("the shared region");
    if (app == MAP_FAILED || app != (void *)base)
        log_fatal("cannot map the shared region of %zu MiB (DSM_REGION_SIZE) at %#lx (%s): "
                  "something else is mapped in that range; set DSM_REGION_BASE to a free range "
                  "or DSM_REGION_SIZE smaller", mem.size >> 20, (unsigned long)base,
                  app == MAP_FAILED ? strerror(errno) : "placed elsewhere");
    mem.base = app;
    mem.pages = mmap(NULL, mem.npages * sizeof *mem.pages, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if ((mem.sys == MAP_FAILED || mem.pages == MAP_FAILED) && errno == ENOMEM)
        no_address_space("the shared region's system view and page table");
    if (mem.sys == MAP_FAILED || mem.pages == MAP_FAILED)
        log_fatal("cannot map the shared region's system view: %s", strerror(errno));
    /* Untouched entries read as zeros; `home` is stored plus one so that
     * zero means unknown (see mem_home / mem_set_home). */
}

/* A page of the region's file gets memory at its first touch, and each
 * view its page-table entry at its own first touch; touched by a copy,
 * that costs a page fault per OS page, and here every fault exits to the
 * hypervisor: copying 128 KiB into fresh pages took 375-386 µs, where one
 * MADV_POPULATE_WRITE first and the copy took 42 + 6 (and a first read of
 * 128 KiB already in memory, 50-67 µs in faults). A kernel without it
 * (before 5.14) says EINVAL once, and the faults stay. */
char *mem_sys_fill(size_t first, size_t count)
{
    static DSM_STATE bool unsupported;
    size_t from = first, end = first + count;
    while (from < end && mem.pages[from].resident)
        from++;
    while (end > from && mem.pages[end - 1].resident)
        end--;
    if (from < end && !unsupported) {
        if (madvise(mem_sys(from), (end - from) << mem.page_shift, MADV_POPULATE_WRITE) == 0) {
            for (size_t p = from; p < end; p++)
                mem.pages[p].resident = 1;
        } else if (errno == EINVAL) {
            unsupported = true;
        } else {
            log_fatal("cannot populate %zu pages of the shared region: %s%s", end - from,
                      strerror(errno), mem.home_dir ? " (DSM_HOME_DIR: is its disk full?)" : "");
        }
    }
    return mem_sys(first);
}

/* Ends the job on a failed mprotect of the region. ENOMEM there means the
 * kernel's limit on a process's mappings: each run of pages with one
 * protection is a mapping, and a program whose rows are longer than what
 * it touches (SPLASH-3's Ocean, non-contiguous, at -n2050: rows of 64 KiB,
 * 24 KiB of them used) alternates touched and untouched pages. */
static void protect_failed(void)
{
    int err = errno;
    if (err == ENOMEM) {
        long most = -1;
        FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
        if (f) {
            if (fscanf(f, "%ld", &most) != 1)
                most = -1;
            fclose(f);
        }
        log_fatal("the shared region's page protections need more memory mappings than the"
                  " kernel allows a process (vm.max_map_count = %ld): raise it (sysctl -w"
                  " vm.max_map_count=...) or use larger coherence pages (DSM_PAGE_SIZE)", most);
    }
    log_fatal("mprotect of the shared region failed: %s", strerror(err));
}

void mem_protect_flush(void)
{
    if (!batch.count)
        return;
    if (mprotect(mem_app(batch.first), batch.count << mem.page_shift,
                 batch.prot) < 0)
        protect_failed();
    stats_add(STAT_PROTECT_CALLS, 1);
    stats_add(STAT_PROTECT_PAGES, batch.count);
    batch.count = 0;
}

void mem_protect_now(size_t page, int prot)
{
    if (mprotect(mem_app(page), mem.page_size, prot) < 0)
        protect_failed();
    stats_add(STAT_PROTECT_CALLS, 1);
    stats_add(STAT_PROTECT_PAGES, 1);
}

void mem_protect(size_t page, int prot)
{
    /* A run never crosses from the globals' window to the region: their
     * page numbers follow each other, their addresses do not. */
    if (batch.count && batch.prot == prot && page == batch.first + batch.count &&
        page != mem.gpages) {
        batch.count++;
        return;
    }
    mem_protect_flush();
    batch.first = page;
    batch.count = 1;
    batch.prot = prot;
}

void mem_twin_make(size_t page)
{
    uint64_t t0 = clock_ns();
    struct page_entry *e = &mem.pages[page];
    if (!e->twin)
        e->twin = mem_copy_get();
    mem_twin_copy(e->twin, mem_sys(page), mem.page_size);
    stats_add(STAT_TWINS, 1);
    stats_add(STAT_T_TWIN_NS, clock_ns() - t0);
}

void mem_twin_drop(size_t page)
{
    mem_copy_put(mem.pages[page].twin);
    mem.pages[page].twin = NULL;
}

size_t mem_twin_diff(size_t page, void *buf)
{
    uint64_t t0 = clock_ns();
    long len = mem_diff_create(mem_sys(page), mem.pages[page].twin, mem.page_size, buf,
                               mem_diff_bound(mem.page_size));
    if (len < 0)
        log_fatal("internal error: a diff did not fit its bound");
    mem_twin_drop(page);
    stats_add(STAT_T_DIFF_NS, clock_ns() - t0);
    if (len) {
        stats_add(STAT_DIFFS_CREATED, 1);
        stats_add(STAT_DIFF_BYTES, (uint64_t)len);
        if (PROFILE_ON)
            mem_profile_diff(PROF_DIFF_SENT, page, 0, buf, (size_t)len);
    }
    return (size_t)len;
}
