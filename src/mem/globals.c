/*
 * globals.c — the executable's global variables as shared memory.
 *
 * A program written for shared memory (PARMACS, OpenMP, fork style) writes
 * plain globals on one node and reads them on another. When it asks for it
 * (dsmcc, DSM_SHARED_GLOBALS, dsmrun --shared-globals), the executable's
 * writable data from __data_start to _end — its .data and .bss — becomes
 * pages of the region: the first pages of the master's arena, so their base
 * node and default home is the master, and every protocol treats them as it
 * treats an allocation of the master's.
 *
 * How: one more application view. The region is one memfd; the globals'
 * pages are its first pages, and the window at the globals' own address is
 * mapped onto them (MAP_FIXED over the executable's private mapping) beside
 * the region's usual view at DSM_REGION_BASE. The page table is unchanged:
 * page i < gpages is at gbase + i * page_size in the application, at
 * sys + i * page_size in the system view like any other page (mem.h). The
 * other way — linking the data segment inside the region — would tie the
 * executable to one region address and size, and the heap (brk) that
 * follows _end would then run into the region.
 *
 * What stays private:
 *   - everything outside [__data_start, _end): the executable's relro part
 *     before .data (GOT, .dynamic, init arrays, the thread-local templates),
 *     and every shared object's data — libc's, libm's and libdsm's own, which
 *     is why libdsm must be a shared library here (dsmcc links it so);
 *   - thread-locals (each thread's own block);
 *   - the heap (malloc), the stacks of threads other than the master's main.
 * Copy relocations — copies of a library's variables (stdout, stderr,
 * environ, optind, optarg) that a non-PIC executable keeps in its .bss and
 * the library then uses — are refused: those copies are per-process state
 * that libc and libdsm (on their service threads too) must reach without a
 * fault; dsmcc compiles with -fPIC so the executable has none.
 *
 * The window must be whole coherence pages: __data_start and _end on a
 * page boundary (dsmcc's linker script aligns them to 64 KiB, the largest
 * DSM_PAGE_SIZE), since the bytes before .data are private and the heap
 * begins right after _end.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "mem/mem.h"

/* Defined by the executable's link (crt1.o and the linker). Weak, so that
 * an executable without them says so instead of failing to load. */
extern char __data_start[] __attribute__((weak));
extern char _end[] __attribute__((weak));
/* dsmcc's linker script (src/start/globals.ld): the end of the shared
 * globals, before the language runtimes' own zeroed data. */
extern char __dsm_shared_end[] __attribute__((weak));

char *mem_globals_end(void) { return __dsm_shared_end ? __dsm_shared_end : _end; }

struct copy_relocs {
    char   names[256]; /* the symbols, comma-separated, cut short */
    size_t count;
};

static uintptr_t dyn_addr(uintptr_t v, uintptr_t load)
{
    /* ld.so relocates the main program's dynamic entries in place on some
     * versions and not on others: an address below the load bias is an
     * unrelocated offset. */
    return v >= load ? v : v + load;
}

/* The first object dl_iterate_phdr reports is the executable. */
static int scan_executable(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct copy_relocs *cr = arg;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 1; /* static executable: no copy relocations */
    uintptr_t rela = 0, relasz = 0, symtab = 0, strtab = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_RELA:   rela = dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_SYMTAB: symtab = dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr); break;
        case DT_STRTAB: strtab = dyn_addr(dyn->d_un.d_ptr, info->dlpi_addr); break;
        default: break;
        }
    }
    if (!rela || !symtab || !strtab)
        return 1;
    const ElfW(Rela) *r = (const ElfW(Rela) *)rela;
    for (size_t i = 0; i < relasz / sizeof *r; i++) {
#if defined(__x86_64__)
        if (ELF64_R_TYPE(r[i].r_info) != R_X86_64_COPY)
            continue;
#elif defined(__aarch64__)
        if (ELF64_R_TYPE(r[i].r_info) != R_AARCH64_COPY)
            continue;
#else
        continue;
#endif
        const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
        const char *name = (const char *)strtab + sym->st_name;
        size_t at = strlen(cr->names);
        if (at + strlen(name) + 3 < sizeof cr->names)
            strcat(strcat(cr->names, at ? ", " : ""), name);
        cr->count++;
    }
    return 1;
}

/* Copies the globals uninstrumented: under AddressSanitizer the segment
 * holds redzones between globals, which a checked copy would report. */
__attribute__((no_sanitize_address, noinline))
static void copy_bytes(void *dst, const void *src, size_t len)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    for (size_t i = 0; i < len; i++)
        d[i] = s[i];
}

void mem_globals_share(void)
{
    char *lo = __data_start, *hi = mem_globals_end();
    if (!lo || !hi || hi <= lo)
        log_fatal("shared globals: the executable has no __data_start and _end symbols; "
                  "build it with dsmcc");
    if ((char *)&mem >= lo && (char *)&mem < hi)
        log_fatal("shared globals: libdsm is linked into the executable, so its own state would "
                  "be shared too; link libdsm as a shared library (dsmcc does)");
    size_t unit = mem.page_size;
    if ((uintptr_t)lo % unit || (uintptr_t)hi % unit)
        log_fatal("shared globals: the executable's globals [%p, %p) are not on %zu-byte "
                  "boundaries (DSM_PAGE_SIZE); build it with dsmcc, whose linker script aligns "
                  "them to 64 KiB", (void *)lo, (void *)hi, unit);
    struct copy_relocs cr = {.count = 0};
    dl_iterate_phdr(scan_executable, &cr);
    if (cr.count)
        log_fatal("shared globals: the executable holds copies of %zu library variable(s) (%s): "
                  "copy relocations, which must stay private; compile it with -fPIC (dsmcc does)",
                  cr.count, cr.names);
    size_t pages = (size_t)(hi - lo) >> mem.page_shift;
    if (pages > mem.arena_pages)
        log_fatal("shared globals: %zu MiB of globals do not fit in the master's arena of %zu MiB; "
                  "raise DSM_REGION_SIZE", (size_t)(hi - lo) >> 20,
                  (mem.arena_pages << mem.page_shift) >> 20);
    /* The master's values are the pages' first contents; the other nodes'
     * copies arrive from it (runtime/globals.c), before any of its writes. */
    if (job()->rank == 0)
        copy_bytes(mem_sys(0), lo, (size_t)(hi - lo));
    if (mmap(lo, (size_t)(hi - lo), PROT_NONE, MAP_SHARED | MAP_FIXED, mem.memfd, 0) != lo)
        log_fatal("shared globals: cannot map the globals onto the region: %s", strerror(errno));
    mem.gbase = lo;
    mem.gsize = (size_t)(hi - lo);
    mem.gpages = pages;
    /* The program's allocations before the start follow (prestart.c). */
    if (mem.prestart_size) {
        if (mem_prestart_base() != mem.base + mem.gsize)
            log_fatal("internal error: the pre-start heap is at %p, not after the globals (%p)",
                      (void *)mem_prestart_base(), (void *)(mem.base + mem.gsize));
        mem.epages = mem.prestart_size >> mem.page_shift;
        if (pages + mem.epages > mem.arena_pages)
            log_fatal("shared globals: %zu MiB of globals and %zu MiB allocated before the start "
                      "do not fit in the master's arena of %zu MiB; raise DSM_REGION_SIZE",
                      mem.gsize >> 20, mem.prestart_size >> 20,
                      (mem.arena_pages << mem.page_shift) >> 20);
    }
}

void mem_globals_unshare(void *stack, size_t len)
{
    if (mem.gpages && mprotect(mem.gbase, mem.gsize, PROT_READ | PROT_WRITE) < 0)
        log_fatal("cannot open the globals after the job: %s", strerror(errno));
    if (mem.epages && mprotect(mem.base + mem.gsize, mem.epages << mem.page_shift,
                               PROT_READ | PROT_WRITE) < 0)
        log_fatal("cannot open the blocks allocated before the job, after it: %s", strerror(errno));
    if (stack && mprotect(stack, len, PROT_READ | PROT_WRITE) < 0)
        log_fatal("cannot open the master's stack after the job: %s", strerror(errno));
}
