/*
 * prestart.c — the program's heap before the job starts: what a static
 * initializer allocates (C++ `static double *g = new double[n]`, a
 * constructor's malloc) is shared memory too, with the master's contents.
 *
 * Every node runs the executable's static initializers before main, so
 * before dsm_main has started the job; a global they point at an
 * allocation is then shared (globals.c) but the block is not: each node's
 * global would hold the master's address of the master's private block.
 * So the program's allocations before the start (libdsm-start's wrappers
 * call dsm_heap_alloc, which comes here) are taken, by a bump pointer,
 * from the address range the master's arena will have right after the
 * shared globals: DSM_REGION_BASE plus the globals' size. Every node runs
 * the same initializers, so every node makes the same allocations at the
 * same addresses; the master's contents are the ones that count, as for
 * the globals. At the start (mem_prestart_adopt, from mem_init) the master
 * copies its blocks into the region's file and every node drops its private
 * range; the pages [gpages, gpages + epages) are then the master's, homed
 * there, allocated for good (alloc.c), and the workers receive their first
 * contents with the globals' (runtime/globals.c).
 *
 * A block carries its size in the 16 bytes before it (realloc needs it).
 * Freed before or after the start, a block stays: a static initializer's
 * temporaries are few, and the pages are the globals' kin.
 * The master's blocks are the ones that count: the workers' globals, and so
 * their pointers, are the master's. A worker's own pre-start blocks matter
 * only to a pointer kept outside the globals (a shared library's private
 * data), which finds the master's block at that address: the same object
 * when the initializers ran alike on every node.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "base/config.h"
#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

#define PRESTART_ALIGN  65536u     /* the globals' and the largest page's */
#define PRESTART_HEADER 16u        /* the block's size, keeping 16-byte alignment */
#define PRESTART_CHUNK  (64u << 20) /* address space reserved at a time */

extern char __data_start[] __attribute__((weak));

static DSM_STATE struct {
    pthread_mutex_t lock;
    char *base;   /* first byte; NULL until the first allocation */
    char *next;   /* bump pointer */
    char *end;    /* end of the mapped range */
    bool  closed; /* the job has started */
} early = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Where the master's arena continues after the globals: DSM_REGION_BASE,
 * as the job will have it, plus the globals' size. A setting the start
 * would refuse ends the program here, with the start's message. */
static char *first_address(void)
{
    uintptr_t lo = (uintptr_t)__data_start, hi = (uintptr_t)mem_globals_end();
    if (!lo || !hi || hi <= lo)
        log_fatal("the program allocates before the job starts (a static initializer), and the "
                  "executable has no __data_start and _end symbols; build it with dsmcc");
    struct dsm_config cfg;
    char err[256];
    if (config_load(&cfg, err, sizeof err))
        log_fatal("%s (see dsmrun --help-env)", err);
    uintptr_t globals = (hi - lo + PRESTART_ALIGN - 1) &
                        ~(uintptr_t)(PRESTART_ALIGN - 1);
    return (char *)(uintptr_t)cfg.region_base + globals;
}

static void reserve(size_t need)
{
    size_t len = (need + PRESTART_CHUNK - 1) / PRESTART_CHUNK * PRESTART_CHUNK;
    void *p = mmap(early.end, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || p != early.end) {
        if (p != MAP_FAILED)
            munmap(p, len);
        log_fatal("cannot map %zu MiB for the program's allocations before the job starts at %p "
                  "(%s): something else is mapped there; set DSM_REGION_BASE to a free range",
                  len >> 20, (void *)early.end, p == MAP_FAILED ? strerror(errno) : "placed elsewhere");
    }
    early.end += len;
}

bool mem_prestart_open(void) { return !early.closed; }

void *mem_prestart_alloc(size_t size, size_t align)
{
    /* Constructors run on one thread, but one may start threads. */
    pthread_mutex_lock(&early.lock);
    if (early.closed)
        log_fatal("internal error: the pre-start heap used after the start");
    if (!early.base)
        early.base = early.next = early.end = first_address();
    if (align < PRESTART_HEADER)
        align = PRESTART_HEADER;
    uintptr_t at = ((uintptr_t)early.next + PRESTART_HEADER + align - 1) & ~(uintptr_t)(align - 1);
    if (size > (uintptr_t)-1 / 4 || (align & (align - 1))) {
        pthread_mutex_unlock(&early.lock);
        errno = ENOMEM;
        return NULL;
    }
    if (at + size > (uintptr_t)early.end)
        reserve(at + size - (uintptr_t)early.end);
    memcpy((char *)at - PRESTART_HEADER, &size, sizeof size);
    early.next = (char *)(at + size);
    pthread_mutex_unlock(&early.lock);
    return (void *)at; /* fresh anonymous memory: zero */
}

bool mem_prestart_block(const void *p, size_t *size)
{
    if (!early.base || (const char *)p < early.base + PRESTART_HEADER || (const char *)p >= early.next)
        return false;
    if (size)
        memcpy(size, (const char *)p - PRESTART_HEADER, sizeof *size);
    return true;
}

static bool zero_page(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i += sizeof(uint64_t))
        if (*(const uint64_t *)(p + i))
            return false;
    return true;
}

size_t mem_prestart_adopt(char *base, bool master)
{
    early.closed = true;
    if (!early.base || early.next == early.base)
        return 0;
    if (early.base < base || early.next > base + mem.arena_pages * mem.page_size)
        log_fatal("the program allocated %zu MiB before the job started (static initializers), "
                  "more than the master's arena of %zu MiB holds; raise DSM_REGION_SIZE",
                  (size_t)(early.next - early.base) >> 20, (mem.arena_pages * mem.page_size) >> 20);
    size_t offset = (size_t)(early.base - base);
    size_t used = ((size_t)(early.next - early.base) + PRESTART_ALIGN - 1) & ~(size_t)(PRESTART_ALIGN - 1);
    if (master) /* the file is zero: copy what is not */
        for (size_t i = 0; i < used; i += 4096)
            if (!zero_page(early.base + i, 4096))
                memcpy(mem.sys + offset + i, early.base + i, 4096);
    if (munmap(early.base, (size_t)(early.end - early.base)) < 0)
        log_fatal("cannot release the pre-start heap: %s", strerror(errno));
    return used;
}

char *mem_prestart_base(void) { return early.base; }
