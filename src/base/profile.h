/*
 * profile.h — the sharing profile (DSM_PROFILE, dsmrun --profile; issue 57).
 *
 * Where a program's DSM time goes, in its own terms: every fault with its
 * program counter and address, every diff with the exact bytes it carries,
 * every invalidation, fetch, pull and migration of a page, every
 * allocation with its call site, every barrier and remote lock acquire
 * with its call site and wait. Each thread appends records to buffers of
 * its own (mmap'ed chunks: faults are recorded in the SIGSEGV handler);
 * the node writes them to FILE.<rank> at dsm_finish, and
 * tools/dsm-profile merges the nodes' files, maps program counters to
 * source lines and addresses to allocation sites, and tells true sharing
 * from false (docs/profile.md).
 *
 * What is too frequent to record one by one is counted here instead: lock
 * acquires (a lock kept on the node is taken by the million, at ~50 ns) by
 * lock and call site. Call stacks cost microseconds to unwind, so they are
 * sampled: the first few of each call site, then one in so many (profile.c).
 * An event's own site, the return address at the public call the program
 * made (dsm_malloc, dsm_lock, dsm_barrier, __kmpc_barrier, ...), is exact
 * and free: PROFILE_SITE() at the top of such a call notes it for the
 * thread (the outermost call's wins).
 *
 * Off, every hook is one load and a predictable branch (PROFILE_ON).
 */
#ifndef DSM_BASE_PROFILE_H
#define DSM_BASE_PROFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A record's kind. The file format (docs/profile.md, tools/dsmprofile.py)
 * is a struct profile_rec followed by `nextra` 64-bit words. */
enum profile_kind {
    PROF_FAULT = 1, /* sub: PROF_WRITE bit, PROF_STACKED bit (extra: the
                       callers of pc); page; a: pc; b: offset in page | pages
                       fetched during it << 32; dur: time in the fault */
    PROF_FETCH,     /* sub: enum profile_fetch; page: fetched (its bytes: a page) */
    PROF_DIFF,      /* sub: enum profile_diff, PROF_BITMAP bit; page; a: bytes
                       sent (encoded); b: bytes of page data; site: lrc, the
                       interval's stamp (0: the interval still open); extra:
                       the bytes written, as runs (u32 start | u32 end << 32)
                       or, with PROF_BITMAP, a bitmap of the page (bit i:
                       byte i) */
    PROF_INVAL,     /* page: invalidated by another node's write notice */
    PROF_MIGRATE,   /* sub: 0 given to node a, 1 received from node a; page */
    PROF_ALLOC,     /* sub: enum profile_alloc; a: address; b: bytes; site;
                       extra: a sampled call stack (PROF_STACKED in sub) */
    PROF_FREE,      /* a: address */
    PROF_BARRIER,   /* page: barriers passed before it; dur: time in it; site;
                       extra: a sampled call stack (PROF_STACKED in sub) */
    PROF_LOCK,      /* an acquire that needed another node. page: lock id;
                       a: the node that granted it; dur: the wait; site */
    PROF_LOCKSTAT,  /* at the end, per lock and call site: page: lock id;
                       a: acquires; b: of which remote; dur: their wait; site */
    PROF_RELEASE,   /* sub: 1 when run aside (the program did not wait);
                       dur: time sending diffs and waiting for their acks */
    PROF_STACK,     /* a sampled call stack of a lock acquire: page: lock
                       id; site; extra: the frames */
    PROF_INTERVAL,  /* lrc: page: the stamp of an interval this node made
                       (its release), in epoch: its diffs, made later when
                       asked for, belong to that epoch */
    PROF_DIFFSUM,   /* at the end, per page and enum profile_diff (sub): the
                       diffs whose bytes were not kept (profile_bytes_wanted):
                       a: how many, b: bytes sent */
    PROF_FRAMES,    /* the frames of a thread's stack that lie in the
                       region (the master's stack, a team's shared stacks),
                       outermost last: a: frames; extra: per frame its
                       program counter (a return address), CFA and stack
                       pointer, by which the tool names the local variable
                       at a shared address */
};

#define PROF_WRITE  0x01 /* PROF_FAULT: a write fault */
#define PROF_STACKED 0x80 /* the extra words are a call stack */
#define PROF_BITMAP 0x80 /* PROF_DIFF: the extra words are a bitmap */

enum profile_fetch {
    PROF_FETCH_FAULT = 0, /* for a fault */
    PROF_FETCH_AHEAD,     /* read ahead of a fault */
    PROF_FETCH_WRITE_AHEAD,
    PROF_FETCH_PULL,      /* refreshed at an acquire, without a fault */
    PROF_FETCH_GET,       /* read one-sided from the home's memory */
};

enum profile_diff {
    PROF_DIFF_SENT = 0,   /* a writer's diff, to the page's home */
    PROF_DIFF_HOME = 1,   /* the home's own writes, announced (no diff sent) */
    PROF_DIFF_LAZY = 2,   /* lrc: a diff made for the nodes that will ask */
};

enum profile_alloc {
    PROF_ALLOC_HEAP = 0,  /* dsm_malloc and the program's malloc (dsmcc) */
    PROF_ALLOC_STACK = 1, /* the master's stack in the region */
};

/* The record, as written to the file (little-endian on every host we run). */
struct profile_rec {
    uint8_t  kind, sub;
    uint16_t nextra; /* 64-bit words that follow */
    uint32_t page;   /* or a lock id, or a barrier count */
    uint32_t epoch;  /* barriers this node had passed */
    int32_t  lock;   /* the lock this thread held (or was releasing) + 1; 0: none */
    uint64_t t;      /* CLOCK_MONOTONIC, ns: the event's start */
    uint64_t dur;    /* ns waited */
    uint64_t a, b;   /* by kind */
    uint64_t site;   /* the program's call site (return address), 0: none */
};
_Static_assert(sizeof(struct profile_rec) == 56, "profile records are 56 bytes");

#define PROFILE_STACK_MAX 12  /* frames kept of a sampled stack */

extern bool profile_enabled;
#define PROFILE_ON __builtin_expect(profile_enabled, 0)

/* What the file's header says about the run: the job, and the region's
 * layout, by which the tool turns pages into addresses. */
struct profile_info {
    int         rank, nodes;
    const char *protocol;
    uint64_t    page_size, npages, arena_pages;
    uint64_t    base;           /* the region's application view */
    uint64_t    gbase, gsize;   /* the shared globals' window (0: private) */
    uint64_t    gpages;         /* pages [0, gpages) are the globals' */
    uint64_t    prestart_size;  /* after the globals: the pre-start heap's bytes */
};

/* Starts recording for this node (the calling thread is the
 * application's). The file is `path`.<rank>. Returns 0 or a negative errno. */
int profile_start(const char *path, const struct profile_info *info);
/* Writes the file and stops; every other thread that recorded must have
 * stopped. Returns 0 or a negative errno. */
int profile_finish(void);

/* ---- the hooks ---------------------------------------------------------- */

/* The public call the program made: its return address is the site of
 * what the call does (the thread's until the outermost call returns). */
const void *profile_site_enter(const void *pc);
static inline void profile_site_leave(const void *const *mark)
{
    extern __thread const void *profile_site_pc;
    if (*mark)
        profile_site_pc = NULL;
}
/* The mark is never read: it lives for its cleanup (clang calls it unused). */
#define PROFILE_SITE()                                                     \
    __attribute__((cleanup(profile_site_leave), unused)) const void *const \
        profile_mark_ = PROFILE_ON ? profile_site_enter(__builtin_return_address(0)) : NULL

/* Called by the fault handler (in it) around the protocol's handling. */
void profile_fault(size_t page, const void *addr, const void *pc, bool write, uint64_t t0,
                   uint64_t fetched);
/* A page fetched from its home (or read one-sided), a pull, an
 * invalidation, a migration. */
void profile_page(enum profile_kind kind, unsigned sub, size_t page, uint64_t a);
#define PROFILE_PAGE(kind, sub, page, a)             \
    do {                                             \
        if (PROFILE_ON)                              \
            profile_page((kind), (sub), (page), (a)); \
    } while (0)
/* Whether the bytes of a diff of `page` are worth recording (then
 * profile_written), or only its count (profile_diff_counted). Every page's
 * are, in the first PROFILE_BYTES_ALL intervals; after that a page's are in
 * one of R of its intervals, R the power of two below the interval's
 * number / PROFILE_BYTES_ALL, chosen by a hash of the page and the
 * interval: every node chooses alike, so the writers of a page in a chosen
 * interval all record it, and a long run keeps about
 * PROFILE_BYTES_ALL x log2(intervals / PROFILE_BYTES_ALL) intervals of each
 * page. lrc's diffs belong to the interval of their release (stamp, as
 * profile_interval recorded it); other protocols' pass 0: the current one. */
#define PROFILE_BYTES_ALL 32
bool profile_bytes_wanted(size_t page, uint32_t stamp);
/* A diff (or the home's own writes): lrc's interval `stamp`, `sent`
 * bytes on the wire, `payload` bytes of page data; the bytes it writes as
 * `n` words: runs, each start | end << 32, or (bitmap) a bit per byte of
 * the page. The mem layer decodes its diffs into these (mem_profile_diff). */
void profile_written(enum profile_diff how, size_t page, uint64_t stamp, uint64_t sent,
                     uint64_t payload, const uint64_t *words, size_t n, bool bitmap);
/* A diff whose bytes are not recorded, of `sent` bytes: counted by page. */
void profile_diff_counted(enum profile_diff how, size_t page, uint64_t sent);
/* lrc: this node's release of interval `stamp` (its diffs come later). */
void profile_interval(uint32_t stamp);
void profile_alloc(enum profile_alloc how, const void *p, size_t size);
void profile_free(const void *p);
/* Synchronisation: a barrier passed (wait: ns in it); a lock acquired
 * (remote: from node `from`, after `wait` ns); a lock released. */
void profile_barrier(uint64_t t0, uint64_t wait);
/* Every node passed a whole-job synchronisation that is not a barrier
 * (the start or the end of a dsm_create, an OpenMP region's fork and
 * join): the node's next interval begins, as at a barrier, so that writes
 * of successive regions are not taken for simultaneous ones. Called on
 * each node at the same points, when none of its threads is in a barrier. */
void profile_job_sync(void);
#define PROFILE_JOB_SYNC()      \
    do {                        \
        if (PROFILE_ON)         \
            profile_job_sync(); \
    } while (0)
void profile_lock(int id, bool remote, int from, uint64_t t0, uint64_t wait);
void profile_unlock(int id);
/* A lock's release runs (in unlock): its diffs are that lock's. */
void profile_releasing(int id);
void profile_release(bool aside, uint64_t t0, uint64_t wait);

#endif
