/*
 * forked.c — the shared region in a process that a node forked.
 *
 * The region is a memfd mapped MAP_SHARED, so fork's child shares its
 * pages with the node: a store of the child would land in the node's
 * copies and reach the job without any protocol (issue 61), and a fault
 * would run the protocol in a process the job does not know, on the
 * node's socket. So the child gets, before it runs anything else, a
 * region it can read where the node could and write nowhere: every
 * writable range of the application view is made read-only (a page the
 * node could not read stays without access), the system view loses all
 * access, and a store or a fault then ends the child in one line
 * (fault.c). `keep` (the master's main stack, under master-only start)
 * becomes the child's own copy, private and writable, so that the child
 * can run on to its exec. Everything here is a system call: a fork's child
 * in a threaded program may call nothing else.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "mem/mem.h"

static uintptr_t hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (d == 16)
            return v;
        v = v * 16 + d;
    }
}

/* Makes [lo, hi) ∩ [from, to) read-only, skipping keep. */
static void read_only(uintptr_t lo, uintptr_t hi, uintptr_t from, uintptr_t to, uintptr_t klo,
                      uintptr_t khi)
{
    if (lo < from)
        lo = from;
    if (hi > to)
        hi = to;
    if (lo >= hi)
        return;
    if (klo < khi && klo < hi && khi > lo) { /* around keep */
        read_only(lo, klo, from, to, 0, 0);
        read_only(khi, hi, from, to, 0, 0);
        return;
    }
    if (mprotect((void *)lo, hi - lo, PROT_READ) < 0)
        log_forked_child("cannot write-protect the shared region it inherited");
}

/* One line of /proc/self/maps, "lo-hi rwxp ...": the writable ones in the
 * application's views made read-only. */
static void maps_line(const char *l, uintptr_t klo, uintptr_t khi)
{
    uintptr_t lo = hex(&l);
    if (*l++ != '-')
        return;
    uintptr_t hi = hex(&l);
    if (*l++ != ' ' || l[1] != 'w')
        return;
    uintptr_t base = (uintptr_t)mem.base, gbase = (uintptr_t)mem.gbase;
    read_only(lo, hi, base, base + mem.size, klo, khi);
    if (mem.gsize)
        read_only(lo, hi, gbase, gbase + mem.gsize, klo, khi);
}

void mem_forked_child(void *keep, size_t keep_len, const void *keep_used)
{
    if (!mem.base)
        return;
    uintptr_t klo = (uintptr_t)keep, khi = klo + keep_len;
    /* First the stack the child runs on, if it is in the region: a copy of
     * the node's pages, the child's own from now on. */
    if (keep_len &&
        mmap(keep, keep_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, mem.memfd,
             (off_t)(klo - (uintptr_t)mem.base)) != keep)
        log_forked_child("cannot copy the stack it runs on out of the shared region");
    /* A private file mapping copies a page at its first write only; until
     * then a read sees the file, which the node goes on writing. The
     * frames in use, from `used` up, are copied now. */
    uintptr_t used = (uintptr_t)keep_used & ~(uintptr_t)4095;
    if (keep_len && used > klo && used < khi &&
        madvise((void *)(used - 4096), khi - used + 4096, MADV_POPULATE_WRITE) < 0)
        log_forked_child("cannot copy the stack it runs on out of the shared region");
    if (mprotect(mem.sys, mem.size, PROT_NONE) < 0)
        log_forked_child("cannot take the shared region's system view away");
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        log_forked_child("cannot read its mappings to write-protect the shared region");
    /* Lines are read in chunks; a line split by a chunk's end is carried
     * over. Changing protections splits and merges mappings as the file is
     * read, which at worst shows a range again: made read-only twice. */
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
            *nl = 0;
            maps_line(line, klo, khi);
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
    }
    close(fd);
}
