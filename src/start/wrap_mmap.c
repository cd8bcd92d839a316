/*
 * wrap_mmap.c — libdsm-start.a: the program's own mappings (dsmcc links
 * with -Wl,--wrap= for each, tools/dsmcc.in) are shared memory in a job of
 * several nodes (runtime/mmap.c). The table of them is anchored here, in
 * the program's globals, which every node shares.
 */
#include <dsm/pthread.h>
#include <stdarg.h>
#include <sys/mman.h>

struct map_table;
struct map_table *__dsm_mmap_table;

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) { return dsm_mmap(addr, len, prot, flags, fd, offset); }

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t offset) { return dsm_mmap(addr, len, prot, flags, fd, offset); }

int __wrap_munmap(void *addr, size_t len);
int __wrap_munmap(void *addr, size_t len) { return dsm_munmap(addr, len); }

void *__wrap_mremap(void *addr, size_t old_len, size_t new_len, int flags, ...);
void *__wrap_mremap(void *addr, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    return dsm_mremap(addr, old_len, new_len, flags, new_addr);
}

int __wrap_madvise(void *addr, size_t len, int advice);
int __wrap_madvise(void *addr, size_t len, int advice) { return dsm_madvise(addr, len, advice); }

int __wrap_posix_madvise(void *addr, size_t len, int advice);
int __wrap_posix_madvise(void *addr, size_t len, int advice) { return dsm_posix_madvise(addr, len, advice); }

int __wrap_msync(void *addr, size_t len, int flags);
int __wrap_msync(void *addr, size_t len, int flags) { return dsm_msync(addr, len, flags); }

int __wrap_mprotect(void *addr, size_t len, int prot);
int __wrap_mprotect(void *addr, size_t len, int prot) { return dsm_mprotect(addr, len, prot); }
