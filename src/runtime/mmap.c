/*
 * mmap.c — a dsmcc program's mappings are shared memory (include/dsm/
 * pthread.h; docs/unmodified-programs.md, "Memory from mmap").
 *
 * A program maps its input (or anonymous memory) on the master and hands
 * the pointer to its threads; on a node of its own a thread would find
 * nothing mapped there. So in a job of several nodes the program's own
 * mmap (dsmcc wraps it; the C library's and other libraries' stay theirs)
 * places the mapping in the shared region: whole coherence pages from the
 * calling node's arena, zeroed, and for a file its contents read in at the
 * call (private or shared, any protection). A writable MAP_SHARED file
 * mapping goes back to its file at msync, at munmap, and at the job's end
 * (the master, for those still mapped): what the caller sees then, which
 * release consistency makes every write ordered before the call. munmap,
 * mremap (shrink; grow in place while the allocation allows, or moved with
 * MREMAP_MAYMOVE), madvise (MADV_DONTNEED: a private mapping reads as
 * zeroes, or as its file, again) and mprotect act on the job's view.
 *
 * What the region cannot give: protections (the protocol owns them, so a
 * PROT_READ or PROT_NONE page does not fault on a write or a read, and
 * memory unmapped by munmap does not fault either); MAP_FIXED outside the
 * region, or inside it where the program mapped nothing, and a device's
 * memory (but /dev/zero, which is anonymous memory) end the job in one
 * line naming the call. Another process writing the file after the call
 * is not seen; the file gets the job's writes only at the calls above.
 *
 * The mappings are recorded in shared memory, so any node's munmap, msync
 * or mremap finds them: a table under the dsm lock SYNC_PTHREAD_MMAP_ID,
 * anchored in a variable of the program's own globals (libdsm-start's
 * __dsm_mmap_table), which every node shares. A file is found again for a
 * write-back by the mapping node's duplicate of its descriptor
 * (/proc/PID/fd/FD on the same host: it works after the file is unlinked)
 * or else by its path, checked against its device and inode.
 */
#include <dsm.h>
#include <dsm/pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "mem/mem.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

#define OS_PAGE 4096u
#define BOUNCE  (1u << 20) /* bytes a copy to or from a file moves at once */

/* Shared, under SYNC_PTHREAD_MMAP_ID. */
struct map_entry {
    uint64_t addr, len;     /* the program's mapping: [addr, addr + len), whole OS pages */
    uint64_t base;          /* the allocation it lies in; freed when no entry names it */
    uint64_t base_len;
    int64_t  offset;        /* the file offset of addr; -1: anonymous */
    uint32_t shared;        /* MAP_SHARED (else MAP_PRIVATE) */
    uint32_t writable;      /* PROT_WRITE, at the call or since (mprotect) */
    uint64_t dev, ino;
    int32_t  node, pid, fd; /* the mapping node's duplicate of the descriptor */
    char     path[196];
};

struct map_table {
    uint32_t         n, cap;
    struct map_entry e[];
};

/* In the program's globals (libdsm-start, wrap_mmap.c): shared memory,
 * the same variable on every node. */
extern struct map_table *__dsm_mmap_table __attribute__((weak));

/* The calls are the job's in a dsmcc program of several nodes, while it
 * runs; the C library's before and after, and on one node. */
static bool applies(void)
{
    return job()->started && rt()->share_globals && job()->nodes > 1 && &__dsm_mmap_table;
}

static uint64_t os_pages(uint64_t len) { return (len + OS_PAGE - 1) & ~(uint64_t)(OS_PAGE - 1); }

/* ---- the table (caller holds SYNC_PTHREAD_MMAP_ID) ----------------------- */

static struct map_entry *entry_add(const struct map_entry *e)
{
    struct map_table *t = __dsm_mmap_table;
    if (!t || t->n == t->cap) {
        uint32_t cap = t ? t->cap * 2 : 64;
        struct map_table *bigger = dsm_malloc(sizeof *bigger + cap * sizeof bigger->e[0]);
        if (!bigger)
            log_fatal("out of shared memory for the table of the program's mappings");
        if (t)
            memcpy(bigger->e, t->e, t->n * sizeof t->e[0]);
        bigger->n = t ? t->n : 0;
        bigger->cap = cap;
        if (t)
            dsm_free(t);
        __dsm_mmap_table = t = bigger;
    }
    t->e[t->n] = *e;
    return &t->e[t->n++];
}

/* The entry that holds addr, or NULL. */
static struct map_entry *entry_at(uint64_t addr)
{
    struct map_table *t = __dsm_mmap_table;
    for (uint32_t i = 0; t && i < t->n; i++)
        if (addr >= t->e[i].addr && addr < t->e[i].addr + t->e[i].len)
            return &t->e[i];
    return NULL;
}

static bool base_named(uint64_t base)
{
    struct map_table *t = __dsm_mmap_table;
    for (uint32_t i = 0; t && i < t->n; i++)
        if (t->e[i].base == base)
            return true;
    return false;
}

static bool fd_named(int32_t node, int32_t fd)
{
    struct map_table *t = __dsm_mmap_table;
    for (uint32_t i = 0; t && i < t->n; i++)
        if (t->e[i].node == node && t->e[i].fd == fd)
            return true;
    return false;
}

/* Takes [a, b) out of every entry (cutting one in two if need be); the
 * allocations no entry names any more go to *freed (at most n). Returns
 * how many. */
static int entries_cut(uint64_t a, uint64_t b, uint64_t *freed, int n)
{
    struct map_table *t = __dsm_mmap_table;
    int nfreed = 0;
    for (uint32_t i = 0; t && i < t->n; i++) {
        struct map_entry *e = &t->e[i];
        uint64_t lo = e->addr, hi = e->addr + e->len;
        if (b <= lo || a >= hi)
            continue;
        if (a > lo && b < hi) { /* a hole in the middle: the tail is an entry of its own */
            struct map_entry tail = *e;
            tail.addr = b;
            tail.len = hi - b;
            if (tail.offset >= 0)
                tail.offset += (int64_t)(b - lo);
            e->len = a - lo;
            entry_add(&tail);
            t = __dsm_mmap_table; /* it may have moved */
            continue;
        }
        if (a <= lo && b >= hi)
            e->len = 0;
        else if (a <= lo) { /* the head */
            if (e->offset >= 0)
                e->offset += (int64_t)(b - lo);
            e->addr = b;
            e->len = hi - b;
        } else /* the tail */
            e->len = a - lo;
    }
    for (uint32_t i = 0; t && i < t->n;) {
        if (t->e[i].len) {
            i++;
            continue;
        }
        struct map_entry gone = t->e[i];
        t->e[i] = t->e[--t->n];
        if (!base_named(gone.base) && nfreed < n)
            freed[nfreed++] = gone.base;
        if (gone.fd >= 0 && gone.node == job()->rank && !fd_named(gone.node, gone.fd))
            close(gone.fd); /* this node's duplicate, of a mapping gone */
    }
    return nfreed;
}

/* ---- files ------------------------------------------------------------------ */

/* Reads [offset, offset + len) of fd into shared memory at p, through a
 * private buffer (a read straight into a page the protocol holds
 * inaccessible would fail with EFAULT); past the end of the file, zeroes
 * (already there). Returns 0 or an errno. */
static int file_read(int fd, int64_t offset, char *p, uint64_t len)
{
    char *buf = malloc(BOUNCE);
    if (!buf)
        return ENOMEM;
    int err = 0;
    for (uint64_t done = 0; done < len;) {
        size_t want = len - done < BOUNCE ? (size_t)(len - done) : BOUNCE;
        ssize_t got = pread(fd, buf, want, (off_t)(offset + (int64_t)done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            err = errno;
            break;
        }
        if (got == 0)
            break; /* the end of the file */
        memcpy(p + done, buf, (size_t)got);
        done += (uint64_t)got;
    }
    free(buf);
    return err;
}

/* The mapped file, opened on this node (O_RDONLY, O_WRONLY): the mapping
 * node's duplicate of the descriptor, else the path; it must be the same
 * file. */
static int file_open(const struct map_entry *e, int how)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%d/fd/%d", e->pid, e->fd);
    const char *tries[2] = {proc, e->path};
    for (int i = 0; i < 2; i++) {
        int fd = open(tries[i], how | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_dev == e->dev && st.st_ino == e->ino)
            return fd;
        close(fd);
    }
    return -1;
}

/* Writes [a, b) of a shared writable file mapping back to its file, as far
 * as the file goes (the kernel drops what a mapping holds past the end). */
static void file_write_back(const struct map_entry *e, uint64_t a, uint64_t b, const char *call)
{
    int fd = file_open(e, O_WRONLY);
    if (fd < 0)
        log_fatal("%s(%p): the file node %d mapped (%s) cannot be opened here to write it back "
                  "(removed, or on another host); call %s on node %d (docs/unmodified-programs.md)",
                  call, (void *)(uintptr_t)a, e->node, e->path, call, e->node);
    struct stat st;
    if (fstat(fd, &st))
        st.st_size = 0;
    char *buf = malloc(BOUNCE);
    if (!buf)
        log_fatal("out of memory writing a mapping back to %s", e->path);
    int64_t off = e->offset + (int64_t)(a - e->addr);
    if (off + (int64_t)(b - a) > st.st_size)
        b = st.st_size > off ? a + (uint64_t)(st.st_size - off) : a;
    for (uint64_t p = a; p < b;) {
        size_t n = b - p < BOUNCE ? (size_t)(b - p) : BOUNCE;
        memcpy(buf, (const void *)(uintptr_t)p, n);
        ssize_t put = pwrite(fd, buf, n, (off_t)(off + (int64_t)(p - a)));
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            log_fatal("%s(%p): cannot write the mapping back to %s: %s", call,
                      (void *)(uintptr_t)a, e->path, put < 0 ? strerror(errno) : "no room");
        p += (uint64_t)put;
    }
    free(buf);
    close(fd);
}

/* The entries' shared writable file mappings that meet [a, b), written
 * back; the table's lock is not held meanwhile (the copies fault). */
static void write_back_range(uint64_t a, uint64_t b, const char *call)
{
    struct map_entry *todo = NULL;
    uint32_t n = 0;
    sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
    struct map_table *t = __dsm_mmap_table;
    for (uint32_t i = 0; t && i < t->n; i++) {
        const struct map_entry *e = &t->e[i];
        if (!e->shared || !e->writable || e->offset < 0 || e->addr >= b || e->addr + e->len <= a)
            continue;
        struct map_entry *more = realloc(todo, (n + 1) * sizeof *todo);
        if (!more)
            log_fatal("out of memory writing mappings back to their files");
        todo = more;
        todo[n++] = *e;
    }
    sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
    for (uint32_t i = 0; i < n; i++) {
        const struct map_entry *e = &todo[i];
        uint64_t lo = e->addr > a ? e->addr : a, hi = e->addr + e->len < b ? e->addr + e->len : b;
        file_write_back(e, lo, hi, call);
    }
    free(todo);
}

/* ---- the calls ----------------------------------------------------------------- */

struct map_call {
    void    *addr;
    uint64_t len, new_len;
    int      prot, flags, fd, advice;
    int64_t  offset;
    void    *ret;   /* the result */
    int      err;   /* errno, 0: none */
};

/* /dev/zero is anonymous memory; any other device, one node's. */
static bool is_dev_zero(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 5;
}

static void map_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t len = os_pages(c->len);
    int type = c->flags & MAP_TYPE;
    bool anon = c->flags & MAP_ANONYMOUS;
    struct map_entry e = {.offset = -1, .shared = type != MAP_PRIVATE,
                          .writable = (c->prot & PROT_WRITE) != 0, .node = job()->rank,
                          .pid = getpid(), .fd = -1};
    if (!c->len || (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE)) {
        c->err = EINVAL;
        return;
    }
    if (!anon) {
        struct stat st;
        if (fstat(c->fd, &st)) {
            c->err = EBADF;
            return;
        }
        if (is_dev_zero(&st))
            anon = true;
        else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
            char link[64], path[160] = "?";
            snprintf(link, sizeof link, "/proc/self/fd/%d", c->fd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            path[n > 0 ? n : 1] = 0;
            log_fatal("mmap of a device (%s): its memory is node %d's and cannot be shared with "
                      "threads on other nodes (docs/unmodified-programs.md, mmap)", path,
                      job()->rank);
        } else if (!S_ISREG(st.st_mode)) {
            c->err = ENODEV;
            return;
        } else {
            int fl = fcntl(c->fd, F_GETFL);
            if (c->offset < 0 || c->offset % OS_PAGE) {
                c->err = EINVAL;
                return;
            }
            if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY ||
                (e.shared && e.writable && (fl & O_ACCMODE) != O_RDWR)) {
                c->err = EACCES;
                return;
            }
            e.offset = c->offset;
            e.dev = st.st_dev;
            e.ino = st.st_ino;
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", c->fd);
            ssize_t n = readlink(link, e.path, sizeof e.path - 1);
            e.path[n > 0 ? n : 0] = 0;
            if (e.shared && e.writable)
                e.fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3); /* -1: the path alone */
        }
    }
    uint64_t addr = (uint64_t)(uintptr_t)c->addr;
    if (c->flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
        /* Only over the program's own mapping: memory there is the job's. */
        sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
        struct map_entry *in = entry_at(addr);
        bool whole = in && addr % OS_PAGE == 0 && addr + len <= in->base + in->base_len;
        for (uint64_t p = addr; whole && p < addr + len; p += OS_PAGE)
            whole = entry_at(p) != NULL;
        if (whole && (c->flags & MAP_FIXED_NOREPLACE)) {
            sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
            c->err = EEXIST;
            return;
        }
        if (!whole) {
            sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
            log_fatal("mmap(%p, %llu, MAP_FIXED): %s, where memory would be node %d's alone; "
                      "map without MAP_FIXED (docs/unmodified-programs.md, mmap)", c->addr,
                      (unsigned long long)c->len,
                      mem_contains(c->addr) ? "inside the shared region but not over a mapping the "
                                              "program made there"
                                            : "outside dsm's shared region",
                      job()->rank);
        }
        e.base = in->base;
        e.base_len = in->base_len;
        uint64_t freed[4];
        entries_cut(addr, addr + len, freed, 0); /* the base stays named by `in`'s rest or below */
        e.addr = addr;
        e.len = len;
        entry_add(&e);
        sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
        memset(c->addr, 0, len);
    } else {
        uint64_t base_len = (len + mem.page_size - 1) & ~(uint64_t)(mem.page_size - 1);
        void *p = mem_alloc_aligned(base_len, mem.page_size); /* zeroed */
        if (!p) {
            c->err = ENOMEM;
            return;
        }
        e.addr = e.base = (uint64_t)(uintptr_t)p;
        e.len = len;
        e.base_len = base_len;
        addr = e.addr;
        sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
        entry_add(&e);
        sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
    }
    if (e.offset >= 0) {
        int err = file_read(c->fd, e.offset, (char *)(uintptr_t)addr, c->len);
        if (err) {
            c->err = err;
            return; /* the mapping stays, zeroed, as a failed read of the kernel's would SIGBUS */
        }
    }
    c->ret = (void *)(uintptr_t)addr;
}

void *dsm_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
    if (!applies())
        return mmap(addr, len, prot, flags, fd, offset);
    struct map_call c = {.addr = addr, .len = len, .prot = prot, .flags = flags, .fd = fd,
                         .offset = offset};
    stack_private(map_call, &c);
    if (c.err) {
        errno = c.err;
        return MAP_FAILED;
    }
    return c.ret;
}

static void unmap_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t a = (uint64_t)(uintptr_t)c->addr, b = a + os_pages(c->len);
    write_back_range(a, b, "munmap");
    uint64_t freed[64];
    sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
    int n = entries_cut(a, b, freed, 64);
    sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
    for (int i = 0; i < n; i++)
        dsm_free((void *)(uintptr_t)freed[i]);
}

int dsm_munmap(void *addr, size_t len)
{
    if (!mem.base || !mem_contains(addr) || !job()->started || !&__dsm_mmap_table)
        return munmap(addr, len);
    if ((uintptr_t)addr % OS_PAGE || !len) {
        errno = EINVAL;
        return -1;
    }
    struct map_call c = {.addr = addr, .len = len};
    stack_private(unmap_call, &c);
    return 0; /* a range with nothing mapped is no error (POSIX) */
}

static void remap_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t a = (uint64_t)(uintptr_t)c->addr, old_len = os_pages(c->len),
             new_len = os_pages(c->new_len);
    sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
    struct map_entry *in = entry_at(a);
    struct map_entry e = in ? *in : (struct map_entry){0};
    bool whole = in && in->addr == a && in->len == old_len;
    sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
    if (!whole) {
        c->err = EFAULT; /* the kernel's answer for an address not mapped so */
        return;
    }
    if (new_len <= old_len) { /* shrinks: the tail is unmapped */
        if (new_len < old_len) {
            struct map_call u = {.addr = (char *)c->addr + new_len, .len = old_len - new_len};
            unmap_call(&u);
        }
        c->ret = c->addr;
        return;
    }
    if (a + new_len <= e.base + e.base_len) { /* grows in place, inside its allocation */
        sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
        bool room = true;
        for (uint64_t p = a + old_len; p < a + new_len && room; p += OS_PAGE)
            room = entry_at(p) == NULL;
        struct map_entry *now = entry_at(a);
        if (room && now)
            now->len = new_len;
        sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
        if (room && now) {
            memset((char *)c->addr + old_len, 0, new_len - old_len);
            c->ret = c->addr;
            goto fill;
        }
    }
    if (!(c->flags & MREMAP_MAYMOVE)) {
        c->err = ENOMEM;
        return;
    }
    /* Moves: a new allocation with the contents, the old one unmapped. */
    uint64_t base_len = (new_len + mem.page_size - 1) & ~(uint64_t)(mem.page_size - 1);
    void *p = mem_alloc_aligned(base_len, mem.page_size);
    if (!p) {
        c->err = ENOMEM;
        return;
    }
    memcpy(p, c->addr, old_len);
    struct map_entry moved = e;
    moved.addr = moved.base = (uint64_t)(uintptr_t)p;
    moved.len = new_len;
    moved.base_len = base_len;
    uint64_t freed[4];
    sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
    int n = entries_cut(a, a + old_len, freed, 4);
    entry_add(&moved);
    sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
    for (int i = 0; i < n; i++)
        dsm_free((void *)(uintptr_t)freed[i]);
    c->ret = p;
fill:
    if (e.offset >= 0) { /* the file's next pages, as far as it goes */
        int fd = file_open(&e, O_RDONLY);
        if (fd >= 0) {
            file_read(fd, e.offset + (int64_t)old_len, (char *)c->ret + old_len, new_len - old_len);
            close(fd);
        }
    }
}

void *dsm_mremap(void *addr, size_t old_len, size_t new_len, int flags, void *new_addr)
{
    if (!mem.base || !mem_contains(addr) || !job()->started || !&__dsm_mmap_table)
        return mremap(addr, old_len, new_len, flags, new_addr);
    if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP))
        log_fatal("mremap(%p, %zu, %zu, %s): a mapping in dsm's shared region moves only where "
                  "dsm places it; use MREMAP_MAYMOVE alone (docs/unmodified-programs.md, mmap)",
                  addr, old_len, new_len, flags & MREMAP_FIXED ? "MREMAP_FIXED" : "MREMAP_DONTUNMAP");
    if ((uintptr_t)addr % OS_PAGE || !new_len) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    struct map_call c = {.addr = addr, .len = old_len, .new_len = new_len, .flags = flags};
    stack_private(remap_call, &c);
    if (c.err) {
        errno = c.err;
        return MAP_FAILED;
    }
    return c.ret;
}

static void advise_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t a = (uint64_t)(uintptr_t)c->addr, b = a + os_pages(c->len);
    /* MADV_DONTNEED, MADV_REMOVE: a private mapping reads as it was made
     * again (zeroes, or its file); a shared one keeps its contents
     * (MADV_REMOVE of a shared mapping would also free the file's blocks:
     * zeroes, written back when the mapping is). */
    for (uint64_t p = a; p < b;) {
        sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
        struct map_entry *in = entry_at(p);
        struct map_entry e = in ? *in : (struct map_entry){0};
        sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
        if (!in) {
            p += OS_PAGE;
            continue;
        }
        uint64_t hi = e.addr + e.len < b ? e.addr + e.len : b;
        bool zero = c->advice == MADV_REMOVE || !e.shared;
        if (zero)
            memset((void *)(uintptr_t)p, 0, hi - p);
        if (zero && !e.shared && e.offset >= 0) {
            int fd = file_open(&e, O_RDONLY);
            if (fd >= 0) {
                file_read(fd, e.offset + (int64_t)(p - e.addr), (char *)(uintptr_t)p, hi - p);
                close(fd);
            }
        }
        p = hi;
    }
}

int dsm_madvise(void *addr, size_t len, int advice)
{
    if (!mem.base || !mem_contains(addr) || !job()->started)
        return madvise(addr, len, advice);
    if ((uintptr_t)addr % OS_PAGE) {
        errno = EINVAL;
        return -1;
    }
    /* The region's pages are the protocol's: no advice reaches the kernel;
     * what changes contents is done here. The others (WILLNEED,
     * SEQUENTIAL, HUGEPAGE, FREE: contents kept or zero, kept is right)
     * change nothing a program can see. */
    if ((advice == MADV_DONTNEED || advice == MADV_REMOVE) && &__dsm_mmap_table) {
        struct map_call c = {.addr = addr, .len = len, .advice = advice};
        stack_private(advise_call, &c);
    }
    return 0;
}

int dsm_posix_madvise(void *addr, size_t len, int advice)
{
    if (!mem.base || !mem_contains(addr) || !job()->started)
        return posix_madvise(addr, len, advice);
    return 0; /* POSIX_MADV_DONTNEED may leave the contents as they are (glibc's does) */
}

static void sync_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t a = (uint64_t)(uintptr_t)c->addr;
    write_back_range(a, a + os_pages(c->len), "msync");
}

int dsm_msync(void *addr, size_t len, int flags)
{
    if (!mem.base || !mem_contains(addr) || !job()->started || !&__dsm_mmap_table)
        return msync(addr, len, flags);
    if ((uintptr_t)addr % OS_PAGE) {
        errno = EINVAL;
        return -1;
    }
    if (flags & (MS_SYNC | MS_ASYNC)) {
        struct map_call c = {.addr = addr, .len = len};
        stack_private(sync_call, &c);
    }
    return 0;
}

static void protect_call(void *arg)
{
    struct map_call *c = arg;
    uint64_t a = (uint64_t)(uintptr_t)c->addr, b = a + os_pages(c->len);
    sync_pthread_lock(SYNC_PTHREAD_MMAP_ID);
    struct map_table *t = __dsm_mmap_table;
    for (uint32_t i = 0; t && i < t->n; i++)
        if (t->e[i].addr < b && t->e[i].addr + t->e[i].len > a && (c->prot & PROT_WRITE))
            t->e[i].writable = 1; /* written back from now on */
    sync_pthread_unlock(SYNC_PTHREAD_MMAP_ID);
}

int dsm_mprotect(void *addr, size_t len, int prot)
{
    if (!mem.base || !mem_contains(addr) || !job()->started)
        return mprotect(addr, len, prot);
    if ((uintptr_t)addr % OS_PAGE) {
        errno = EINVAL;
        return -1;
    }
    /* The protocol owns the region's protections: recorded, not applied. */
    if (&__dsm_mmap_table) {
        struct map_call c = {.addr = addr, .len = len, .prot = prot};
        stack_private(protect_call, &c);
    }
    return 0;
}

/* The job's end, on the master: the shared writable file mappings still
 * mapped go back to their files, as the kernel's would at exit. */
static void finish_call(void *arg)
{
    (void)arg;
    write_back_range(0, UINT64_MAX, "exit");
}

void mmap_write_back(void)
{
    if (applies())
        stack_private(finish_call, NULL);
}

void mmap_finish(void)
{
    if (job()->rank == 0)
        mmap_write_back();
}
