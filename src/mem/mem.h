/*
 * mem.h — the shared region, its page table, faults, twins and diffs, and
 * the allocator (docs/design.md, layer 3).
 *
 * The region is one memfd mapped twice: the *application view* at the same
 * address on every node, whose protection encodes each page's state
 * (none = invalid, read = valid, read-write = being written), and the
 * *system view*, always read-write, through which the runtime installs
 * pages and applies diffs without touching the application's protections.
 */
#ifndef DSM_MEM_MEM_H
#define DSM_MEM_MEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "dsm.h"
#include "mem/diff.h"

enum page_state { PAGE_INVALID = 0, PAGE_READ = 1, PAGE_WRITE = 2 };

/* Per-page state every protocol uses; a protocol keeps what is its own
 * in an array of its own, indexed by page (hlrc.c, lrc.c, sc.c). Only the
 * application thread changes dirty; state and twin too, except where a
 * protocol says otherwise (hlrc's home pages, erc's and sc's handlers,
 * under the protocol's lock). */
struct page_entry {
    uint8_t  state;    /* enum page_state: mirrors the application view */
    uint8_t  dirty;    /* written in the current interval (on the protocol's dirty list) */
    uint8_t  resident; /* its system view is populated (mem_sys_fill) */
    int16_t  home1;    /* home node plus one; 0 while unknown here (zeroed tables) */
    void    *twin;     /* pristine copy while dirty; at an hlrc home, the snapshot */
};

struct mem_region {
    char              *base;        /* application view */
    char              *sys;         /* system view */
    size_t             size;
    size_t             page_size;
    unsigned           page_shift;
    size_t             npages;
    int                memfd;       /* the region's file (a memfd, or in home_dir) */
    const char        *home_dir;    /* DSM_HOME_DIR; NULL: memory */
    size_t             arena_pages; /* pages per node's allocation arena */
    struct page_entry *pages;
    /* Shared globals (globals.c): the executable's .data and .bss are pages
     * [0, gpages) of the master's arena, seen by the application at their
     * own address gbase instead of base. gpages is 0 when they are private. */
    char              *gbase;
    size_t             gsize;
    size_t             gpages;
    /* The program's allocations before the start (prestart.c): the master's
     * arena's pages [gpages, gpages + epages), at base + gsize, allocated for
     * good. prestart_size: their bytes, as mem_init found them. */
    size_t             prestart_size;
    size_t             epages;
    enum dsm_home      default_home; /* of a page allocated without a named policy */
    enum write_watch   write_watch;  /* DSM_WRITE_WATCH (watch.c) */
};

extern struct mem_region mem;

/* What mem_init needs from the settings (runtime.c fills it from the
 * table: docs/design.md, Settings). */
struct mem_params {
    size_t           region_size;  /* DSM_REGION_SIZE: over all nodes */
    size_t           page_size;    /* DSM_PAGE_SIZE: the coherence unit */
    uintptr_t        base;         /* DSM_REGION_BASE: the same on every node */
    const char      *home_dir;     /* DSM_HOME_DIR; NULL: memory */
    enum dsm_home    default_home; /* DSM_HOME, or the program's default */
    enum write_watch write_watch;  /* DSM_WRITE_WATCH */
};

/* Reserves the region at p->base, its file in p->home_dir when not NULL,
 * and installs the fault handler. Returns 0 or ends the job with a clear
 * message. */
void mem_init(const struct mem_params *p);
/* With a file-backed region, a store the file system has no room for
 * raises SIGBUS: it is reported as a full disk under `dir`, and the node
 * dies of it. */
void mem_catch_sigbus(const char *dir);

/* In fork's child (runtime/forked.c): the region read-only where the
 * node could read it, the system view without access, and [keep, keep +
 * keep_len) (the master's stack) a private writable copy, whose part from
 * keep_used up (the frames in use at the fork) is copied at once (forked.c). */
void mem_forked_child(void *keep, size_t keep_len, const void *keep_used);

/* Two application ranges, one page numbering: an address in the globals'
 * window is numbered from gbase, any other from base. The choice compiles
 * to a compare and a conditional move (no branch); with private globals
 * gsize is 0 and the window never matches. */
static inline bool mem_contains(const void *addr)
{
    /* The region view of the globals' pages, [base, base + gsize), is not
     * the application's: an access there is a stray one. */
    return (uintptr_t)((const char *)addr - mem.base) - mem.gsize < mem.size - mem.gsize ||
           (uintptr_t)((const char *)addr - mem.gbase) < mem.gsize;
}
static inline size_t mem_page_of(const void *addr)
{
    const char *a = addr;
    const char *from = (uintptr_t)(a - mem.gbase) < mem.gsize ? mem.gbase : mem.base;
    return (size_t)(a - from) >> mem.page_shift;
}
static inline char *mem_app(size_t page)
{
    return (page < mem.gpages ? mem.gbase : mem.base) + (page << mem.page_shift);
}
static inline char *mem_sys(size_t page) { return mem.sys + (page << mem.page_shift); }

static inline int  mem_home(size_t page) { return mem.pages[page].home1 - 1; }
static inline void mem_set_home(size_t page, int node) { mem.pages[page].home1 = (int16_t)(node + 1); }

/* The node whose arena holds the page: it knows the page's home ("base
 * node" of SCASH). */
static inline int mem_base_node(size_t page) { return (int)(page / mem.arena_pages); }

/* The system view of pages [first, first + count), about to receive a
 * reply written into place, or to be served: mapped first, all with one
 * system call. Only the delivering thread calls it (one at a time). */
char *mem_sys_fill(size_t first, size_t count);

/* Shares the executable's .data and .bss (globals.c): on the master their
 * values now become the pages' contents; on every node the window at their
 * own address is remapped onto the region's first pages of node 0's arena,
 * homed at node 0. Before the allocator's first use; ends the job with a
 * clear message when the executable cannot share them. */
void mem_globals_share(void);
/* Where the shared globals end: dsmcc's linker script's __dsm_shared_end
 * (the language runtimes' own zeroed data lies after it, private: the
 * Fortran runtime's units and their buffers), else _end; NULL without
 * either. They begin at __data_start. */
char *mem_globals_end(void);
/* After the job: the window (and [stack, stack + len), the master's stack)
 * become plain read-write memory holding this node's last copy, so exit
 * handlers and destructors that touch globals run. */
void mem_globals_unshare(void *stack, size_t len);

/* The program's heap before the job starts (prestart.c): blocks at the
 * addresses the master's arena will have after the shared globals, the same
 * on every node. mem_prestart_open: still taking allocations. */
bool   mem_prestart_open(void);
void  *mem_prestart_alloc(size_t size, size_t align);
/* Whether p is a pre-start block, and its size. */
bool   mem_prestart_block(const void *p, size_t *size);
/* At the start, with the system view mapped and before the application
 * view: the master copies its blocks into the region's file at `base`'s
 * offsets, and every node unmaps the pre-start range. Returns its bytes
 * (a multiple of 64 KiB), 0 when the program allocated nothing before. */
size_t mem_prestart_adopt(char *base, bool master);
char  *mem_prestart_base(void);

/* Changes the application view's protection of pages. Changes are batched
 * into runs of contiguous pages with the same protection (an mprotect that
 * removes rights costs a TLB shootdown when another thread runs). */
void mem_protect(size_t page, int prot);
void mem_protect_flush(void);
/* One page's protection, now and outside the batch (which is the
 * program's thread's): for a delivering thread. */
void mem_protect_now(size_t page, int prot);

/* Faults inside the region go to these (on the faulting thread). */
struct mem_fault_ops {
    void (*read_fault)(size_t page);
    void (*write_fault)(size_t page);
};
void mem_set_fault_ops(const struct mem_fault_ops *ops);
/* A SIGSEGV handler the program installs while dsm's runs: kept for the
 * faults outside the region (dsm's own stays installed); old gets the
 * program's previous one. */
struct sigaction;
void mem_fault_chain(const struct sigaction *act, struct sigaction *old);
/* Reports an access to a page no allocation covers, as a crash. */
__attribute__((noreturn)) void mem_crash_unallocated(void *addr);
/* Gives the calling thread (a node's application thread) an alternate
 * signal stack and notes its own stack, so that its faults are handled
 * even with its stack exhausted, and a stack overflow is said as one. */
void mem_fault_watch_thread(void);

/* Write watch (watch.c): which pages the application wrote since each was
 * armed, from the kernel's record (userfaultfd write-protection in async
 * mode and PAGEMAP_SCAN, Linux 6.7+), without a signal or a compare.
 * mem_watch_start: registers the application's views, once, after the
 * globals' window is mapped, where the kernel keeps the record
 * (DSM_WRITE_WATCH not off, not a DSM_HOME_DIR file); whether it watches.
 * mem_watch_on: whether it watches now (false until started, and after a
 * refused call). mem_watch_arm: from now on a write to the page is
 * recorded (arm before copying the page that later writes are to be told
 * from). mem_watch_collect: written[i] = whether pages[i] was written
 * since it was armed; pages[0, take) are armed again, pages[take, n)
 * keep their records (one written stays written for the next call), and
 * a page not listed may lose its record (list every page whose record
 * you need). Every page counts as written when the watch is off, or
 * stopped (a call the kernel refused: said once). Callers serialise
 * collect. */
bool mem_watch_start(void);
bool mem_watch_on(void);
void mem_watch_arm(size_t page);
void mem_watch_collect(const uint32_t *pages, size_t n, size_t take, uint8_t *written);

/* Twins: a pristine copy of a page, taken before its first write. */
void mem_twin_make(size_t page);
void mem_twin_drop(size_t page);
/* The page's changes since its twin, as a diff into buf (mem_diff_bound
 * bytes), and drops the twin; counted and timed (STAT_DIFFS_CREATED,
 * STAT_DIFF_BYTES, STAT_T_DIFF_NS). Returns the diff's length, 0 when
 * nothing changed. The page must not be writable meanwhile. */
size_t mem_twin_diff(size_t page, void *buf);

/* The sharing profile (written.c; base/profile.h): the bytes a diff
 * writes, recorded as `how` (enum profile_diff; lrc: of the interval of
 * `stamp`, 0 for others); and a home's own writes
 * to a page, found by diffing it with its snapshot into `scratch`
 * (mem_diff_bound bytes). Only while PROFILE_ON. */
void mem_profile_diff(int how, size_t page, uint32_t stamp, const void *diff, size_t len);
void mem_profile_home_writes(size_t page, const void *now, const void *snapshot, void *scratch);

/* Page copies (twins, snapshots; copies.c): mem.page_size bytes each, from
 * a pool whose memory is mapped populated. Any thread; never NULL (out of
 * memory is fatal). mem_copy_put(NULL) does nothing. */
void *mem_copy_get(void);
void  mem_copy_put(void *copy);

/* Allocation (alloc.c). align: a power of two up to the page; every
 * block is at least 16-byte aligned (malloc's max_align_t). */
void *mem_alloc(size_t size, size_t align, enum dsm_home home);
/* dsm_malloc with an alignment (malloc's aligned forms): off the shared
 * stack like dsm_malloc. */
void *mem_alloc_aligned(size_t size, size_t align);
/* Whole pages from the top of this node's arena, homed here, for good:
 * the pages below them stay unallocated until the arena is nearly full, so
 * running off their bottom (the master's stack overflowing) is reported as
 * an access to unallocated memory. */
void *mem_alloc_top(size_t size);
void  mem_free(void *p);
/* Under DSM_CHECK: the small blocks dsm_free keeps poisoned still hold
 * the poison, or the job ends naming one (alloc.c); at dsm_finish. */
void  mem_check_freed(void);
/* At the base node: whether the page is one of mem_alloc_top's (the
 * master's stack), whose home stays where it is (migrate.c). */
bool  mem_home_pinned(size_t page);
/* At the base node: the page's home under its allocation's policy, the
 * requesting node's claim deciding a first-touch page. -1: not allocated. */
int   mem_home_decide(size_t page, int requester);
/* At the base node: how many of the pages after `page` (at most max) have
 * home `home`, as far as their allocation's policy decides it without a
 * first touch; a requester learns them with one reply. */
size_t mem_home_run(size_t page, int home, size_t max);
/* Frees of other nodes' blocks, batched: takes the pending list for `owner`. */
size_t mem_take_remote_frees(int owner, uint64_t *pages_out, size_t max);
/* The bytes the block at p holds (its size class's, or its pages'); 0
 * when p is not the start of a block of this node's arena that is
 * allocated. Only the arena's node knows: the bookkeeping is its own. */
size_t mem_block_capacity(const void *p);
void   mem_free_remote_block(uint64_t addr_offset);
/* System calls whose pointers lie in the region (kernel.c and the
 * kernel_*.c files that interpose the C library's names): the kernel's
 * own access to a page the application view protects fails with EFAULT
 * instead of faulting, so those calls hand the kernel private memory and
 * copy between it and the region in user space, where a fault is the
 * protocol's. mem_kernel_touches: whether [p, p + len) reaches into the
 * region (outside, a wrapper calls the C library's at once). */
static inline bool mem_kernel_touches(const void *p, size_t len)
{
    return mem.base && len && (mem_contains(p) || mem_contains((const char *)p + len - 1));
}
/* The C library's function of that name (the next definition after
 * libdsm's), found once into *cache; fatal when there is none. */
void *mem_kernel_next(_Atomic(void *) *cache, const char *name);
/* Private memory for one call's copies, at least len bytes (len at most
 * MEM_KERNEL_CHUNK plus a few small objects), on the calling thread, given
 * back in reverse order (a signal handler's call nests inside). */
#define MEM_KERNEL_CHUNK ((size_t)256 << 10)
void *mem_kernel_take(size_t len);
void  mem_kernel_give(void *p);
/* How a transfer of n bytes on fd moves through private memory: returns
 * the bytes of its first step, and *more says whether a complete step is
 * followed by the next. Up to MEM_KERNEL_CHUNK: n, in one step. Beyond: a
 * datagram socket's is never cut (one step of n); a regular file's or
 * block device's is cut into chunks (consecutive transfers mean the same
 * as one); on a pipe, stream socket or terminal an output continues while
 * each chunk goes whole (as a blocking one would), an input returns after
 * one chunk (a short count, which POSIX allows there) unless `whole` (as
 * recv's MSG_WAITALL asks). */
size_t mem_kernel_step(int fd, size_t n, bool output, bool whole, bool *more);
/* The C library's function `name` (a string literal) as fn, of type
 * ret (*)params: the first lines of a wrapper. */
#define MEM_KERNEL_REAL(ret, name, params)                                      \
    static DSM_STATE _Atomic(void *) real_;                                     \
    ret(*fn) params = (ret(*) params)mem_kernel_next(&real_, name)
/* path copied into private memory (mem_kernel_take), or path itself when
 * it lies outside the region; give it back with mem_kernel_give_path. */
const char *mem_kernel_path(const char *path);
void        mem_kernel_give_path(const char *copy, const char *path);
/* The C library's end of a _FORTIFY_SOURCE check (the __*_chk forms). */
void __chk_fail(void) __attribute__((noreturn));
/* A call's fixed-size result (a struct stat, two descriptors) and path,
 * through private memory: begin takes their copies (the result's holding
 * the caller's bytes when `in`: the call reads them too); end copies len
 * bytes of the result back when ok, and gives the copies back, errno kept. */
struct mem_kernel_out {
    const char *user_path, *path;
    void       *user, *copy;
};
void mem_kernel_out_begin(struct mem_kernel_out *o, const char *path, void *out, size_t size, bool in);
void mem_kernel_out_end(struct mem_kernel_out *o, bool ok, size_t len);
/* A wrapper's body: `call`, in which P stands for path and O for out
 * (size bytes the kernel writes, after reading them when `in`); outside
 * the region as it is, inside through private copies, the result copied
 * back when the call returned 0 or more. */
#define MEM_KERNEL_THROUGH(path_, out_, size_, in_, call)                       \
    do {                                                                        \
        const char *P = (path_);                                                \
        void       *O = (out_);                                                 \
        if (!mem_kernel_touches(P, 1) && !mem_kernel_touches(O, size_))         \
            return call;                                                        \
        struct mem_kernel_out o_;                                               \
        mem_kernel_out_begin(&o_, P, O, size_, in_);                            \
        P = o_.path;                                                            \
        O = o_.copy;                                                            \
        __typeof__(call) r_ = call;                                             \
        mem_kernel_out_end(&o_, r_ >= 0, size_);                                \
        return r_;                                                              \
    } while (0)
/* Descriptors and streams are the process's, not a node's (issue 89;
 * runtime/streams.c): output through one that another node opened is
 * shipped to that node, which does it; input through one is refused. The
 * runtime sets mem_kernel_streams when a job of several nodes runs a
 * dsmcc program; until then (NULL) every call is this node's. */
enum mem_stream_op {
    MEM_STREAM_WRITE,   /* write(fd): key the descriptor */
    MEM_STREAM_PWRITE,  /* pwrite(fd, at) */
    MEM_STREAM_CLOSE,   /* close(fd) */
    MEM_STREAM_FWRITE,  /* fwrite(f): key the FILE's address */
    MEM_STREAM_FFLUSH,  /* fflush(f) */
    MEM_STREAM_FCLOSE,  /* fclose(f) */
    MEM_STREAM_OPS
};
struct mem_kernel_streams {
    /* The node that opened fd or f when it is another's; -1: this node's. */
    int  (*fd_node)(int fd);
    int  (*file_node)(void *f);
    /* op on that node, with len bytes of buf: its result, errno set as
     * the call set it there. */
    long (*ship)(int node, enum mem_stream_op op, uint64_t key, int64_t at, const void *buf, size_t len);
    /* The numbers of this node's descriptors, [*lo, *hi): a descriptor
     * opened here is moved among them (mem_kernel_fd_opened). */
    void (*fd_band)(int *lo, int *hi);
    /* A stream this node opened, made the job's: 0, or -EEXIST when its
     * address is a stream another node holds open (the opener makes
     * another on the same descriptor and tries that). */
    int  (*file_claim)(void *f);
    /* This node closed f: the other nodes forget it. */
    void (*file_closed)(void *f);
};
extern const struct mem_kernel_streams *_Atomic mem_kernel_streams;
/* The program's heap (dsmcc's malloc, runtime/heap.c), for getline and
 * getdelim growing a buffer of it. Set as libdsm loads; NULL: none. */
struct mem_kernel_heap {
    int   (*owns)(const void *p);
    void *(*resize)(void *p, size_t size); /* dsm_heap_realloc */
};
extern const struct mem_kernel_heap *_Atomic mem_kernel_heap;
/* kernel_streams.c: the node that opened fd or f when another one did
 * (-1: this node's); op shipped there; a call refused in one line; a
 * descriptor (two: a pipe's, rc its call's result) or stream this node
 * opened, made the job's (returned as the program is to see it). */
int   mem_kernel_fd_node(int fd);
int   mem_kernel_file_node(void *f);
long  mem_kernel_ship(int node, enum mem_stream_op op, uint64_t key, int64_t at, const void *buf, size_t len);
void  mem_kernel_refuse(const char *call, const char *what, int node) __attribute__((noreturn));
int   mem_kernel_fd_opened(int fd);
int   mem_kernel_fds_opened(int rc, int fds[2]);
void *mem_kernel_file_opened(void *f, const char *mode);
/* A call dsm does not ship, on fd or f: refused when another node's. */
static inline void mem_kernel_fd_here(const char *call, int fd)
{
    int node = mem_kernel_fd_node(fd);
    if (node >= 0)
        mem_kernel_refuse(call, "a descriptor", node);
}
static inline void mem_kernel_file_here(const char *call, void *f)
{
    int node = mem_kernel_file_node(f);
    if (node >= 0)
        mem_kernel_refuse(call, "a stream", node);
}

/* The same for a call whose only pointer is the string path (P), or two
 * (P and Q), whatever its result. */
#define MEM_KERNEL_PATHS(path_, path2_, call)                                   \
    do {                                                                        \
        const char *P = (path_), *Q = (path2_);                                 \
        if (!mem_kernel_touches(P, 1) && !mem_kernel_touches(Q, 1))             \
            return call;                                                        \
        P = mem_kernel_path(P);                                                 \
        Q = mem_kernel_path(Q);                                                 \
        __typeof__(call) r_ = call;                                             \
        int e_ = errno;                                                         \
        mem_kernel_give_path(Q, path2_);                                        \
        mem_kernel_give_path(P, path_);                                         \
        errno = e_;                                                             \
        return r_;                                                              \
    } while (0)
#endif
