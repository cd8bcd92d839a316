/*
 * profile.c — the sharing profile's per-thread buffers, its sampled call
 * stacks, its lock table, and the file.
 *
 * A thread's records go to chunks from mmap (faults are recorded inside
 * the SIGSEGV handler, where malloc may not be called); a thread's first
 * record registers its buffer under a lock, once. Stacks come from glibc's
 * backtrace(), primed at the start (its first call loads libgcc's
 * unwinder), which unwinds through the signal frame of a fault to the
 * faulting code's callers.
 *
 * The file: struct profile_file_hdr, the node's /proc/self/maps (where
 * each object was loaded, so the tool can find the code at an address),
 * then for each thread a struct profile_file_thread and its records.
 */
#include "base/profile.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"

#define CHUNK_BYTES (1u << 20)

struct chunk {
    struct chunk *next;
    uint32_t      used; /* bytes of data[] */
    unsigned char data[CHUNK_BYTES - 16];
};

struct thread_buf {
    struct thread_buf *next;
    struct chunk      *first, *cur;
    uint32_t           index;
    uint32_t           role; /* 0: the application thread; 1: another */
};

#define PROFILE_MAGIC "DSMPROF1"
#define PROFILE_VERSION 1

struct profile_file_hdr {
    char     magic[8];
    uint32_t version, rank, nodes, nthreads;
    uint64_t page_size, npages, arena_pages;
    uint64_t base, gbase, gsize, gpages, prestart_size;
    uint64_t t_start, t_end;
    char     protocol[16];
    char     exe[256];
    uint64_t maps_len; /* bytes of /proc/self/maps that follow */
};

struct profile_file_thread {
    uint32_t index, role;
    uint64_t bytes;
};

DSM_STATE bool profile_enabled;
__thread const void *profile_site_pc;

/* The stack-sampling table: how many events each site (a return address,
 * or a fault's program counter) has had. Lock-free: faults insert from
 * the signal handler. */
#define SITES 4096
struct site_count {
    _Atomic uintptr_t key;
    _Atomic uint32_t  count;
};

/* Lock acquires, by lock and call site, counted (not recorded: see
 * profile.h). Under `lock_mu`; never touched by the fault handler. */
#define LOCK_SLOTS 8192
struct lock_count {
    int64_t   id; /* -1: empty */
    uintptr_t site;
    uint64_t  acquires, remote, wait_ns;
};

/* Diffs whose bytes were not kept, counted by page and kind (under
 * diff_mu; mmap'ed: a release in a fault, evicting a page, may diff). */
#define DIFF_SLOTS (1u << 18)
struct diff_count {
    uint32_t page1;  /* page + 1; 0: empty */
    uint32_t how;
    uint64_t diffs, sent;
};

/* lrc's intervals' epochs, by stamp (the last STAMPS of them). */
#define STAMPS 65536
struct stamp_epoch {
    uint32_t stamp, epoch;
};

static DSM_STATE struct {
    pthread_mutex_t      lock;
    struct thread_buf   *threads;
    uint32_t             nthreads;
    char                *path;
    struct profile_info  info;
    char                 protocol[16];
    uint64_t             t_start;
    _Atomic uint32_t     epoch;
    struct site_count   *sites;   /* SITES, mmap'ed */
    _Atomic uint64_t     unsited; /* events sampled once the table was full */
    pthread_mutex_t      lock_mu;
    struct lock_count   *locks;   /* LOCK_SLOTS, mmap'ed */
    struct lock_count    lock_other; /* when the table is full */
    pthread_mutex_t      diff_mu;
    struct diff_count   *diffs;      /* DIFF_SLOTS, mmap'ed */
    struct diff_count    diff_other; /* when the table is full */
    struct stamp_epoch  *stamps;     /* STAMPS, mmap'ed */
} pr = {.lock = PTHREAD_MUTEX_INITIALIZER, .lock_mu = PTHREAD_MUTEX_INITIALIZER,
        .diff_mu = PTHREAD_MUTEX_INITIALIZER};

static __thread struct thread_buf *mine;
/* The locks this thread holds (innermost last) and the one whose release
 * runs now: the data a lock protects is what is written under it. */
#define HELD_MAX 8
static __thread int held[HELD_MAX];
static __thread int nheld;
static __thread int releasing; /* lock id + 1; 0: none */
/* Barriers this thread has passed. Every thread of the job passes every
 * barrier, and the node's epoch is the most any of its threads has passed:
 * the first thread out of a barrier starts the next interval for the node
 * (its siblings' records after it belong to it too). */
static __thread uint32_t barriers_passed;
/* Whole-job synchronisations other than barriers this node has passed (a
 * dsm_create's start and end on every node: an OpenMP region's fork and
 * join). Each ends an interval on every node alike; none happens while a
 * thread of the node is in a barrier, so a thread's epoch is its barriers
 * plus these. */
static DSM_STATE _Atomic uint32_t syncs_passed;

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static struct thread_buf *register_thread(uint32_t role)
{
    struct chunk *c = map_zeroed(sizeof(struct chunk));
    struct thread_buf *b = c ? map_zeroed(sizeof *b) : NULL;
    if (!b)
        log_fatal("out of memory for the profile (DSM_PROFILE)");
    b->first = b->cur = c;
    b->role = role;
    pthread_mutex_lock(&pr.lock);
    b->index = pr.nthreads++;
    b->next = pr.threads;
    pr.threads = b;
    pthread_mutex_unlock(&pr.lock);
    return b;
}

/* Appends a record and its extra words to the calling thread's buffer. */
static void put(struct profile_rec *r, const uint64_t *extra, size_t n)
{
    struct thread_buf *b = mine;
    if (!b)
        b = mine = register_thread(1);
    r->nextra = (uint16_t)n;
    size_t need = sizeof *r + n * sizeof *extra;
    struct chunk *c = b->cur;
    if (c->used + need > sizeof c->data) {
        struct chunk *nc = map_zeroed(sizeof *nc);
        if (!nc)
            log_fatal("out of memory for the profile (DSM_PROFILE)");
        c->next = nc;
        b->cur = c = nc;
    }
    memcpy(c->data + c->used, r, sizeof *r);
    if (n)
        memcpy(c->data + c->used + sizeof *r, extra, n * sizeof *extra);
    c->used += (uint32_t)need;
}

static int32_t lock_now(void)
{
    if (releasing)
        return releasing;
    int n = nheld < HELD_MAX ? nheld : HELD_MAX; /* deeper nesting: the 8th lock */
    return n ? held[n - 1] + 1 : 0;
}

static struct profile_rec rec(enum profile_kind kind, unsigned sub, size_t page)
{
    return (struct profile_rec){.kind = (uint8_t)kind, .sub = (uint8_t)sub,
                                .page = (uint32_t)page,
                                .epoch = atomic_load_explicit(&pr.epoch, memory_order_relaxed),
                                .lock = lock_now()};
}

/* How often each kind of event carries a call stack (about 3.6 µs to
 * unwind 8 frames here): the first ones of each site, then one in so
 * many. A fault costs 4 µs and more; a barrier 10 µs and more; a lock
 * kept on the node 50 ns, so its stacks are rare; an allocation's stack is
 * what names its site. */
#define FAULT_FIRST 4
#define FAULT_EVERY 64
#define ALLOC_FIRST 64
#define ALLOC_EVERY 16
#define BARRIER_FIRST 16
#define BARRIER_EVERY 8
#define LOCK_FIRST 16
#define LOCK_EVERY 1024

/* Whether this event of `key`'s should carry a call stack: the first
 * `first` of each key, then one in `every`. */
static bool sample(uintptr_t key, uint32_t first, uint32_t every)
{
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 52) & (SITES - 1);
    for (uint32_t i = 0; i < 64; i++) {
        struct site_count *s = &pr.sites[(h + i) & (SITES - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (!k) {
            uintptr_t zero = 0;
            if (!atomic_compare_exchange_strong(&s->key, &zero, key) && zero != key)
                continue;
            k = key;
        }
        if (k == key) {
            uint32_t c = atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
            return c < first || c % every == 0;
        }
    }
    uint64_t c = atomic_fetch_add_explicit(&pr.unsited, 1, memory_order_relaxed);
    return c % every == 0;
}

/* The calling thread's stack into out (at most PROFILE_STACK_MAX frames),
 * from the frame after `from` when it is found among the first ones
 * (the handler's own frames and the signal frame before a fault's code),
 * else after `skip` frames (ours). */
static size_t stack_of(uint64_t *out, const void *from, int skip)
{
    void *f[PROFILE_STACK_MAX + 8];
    int n = backtrace(f, PROFILE_STACK_MAX + 8);
    int at = skip;
    if (from) {
        at = n; /* not found: no stack */
        for (int i = 0; i < n && i < 8; i++)
            if (f[i] == from) {
                at = i + 1;
                break;
            }
    }
    size_t k = 0;
    for (int i = at; i < n && k < PROFILE_STACK_MAX; i++)
        out[k++] = (uint64_t)(uintptr_t)f[i];
    return k;
}

const void *profile_site_enter(const void *pc)
{
    if (profile_site_pc)
        return NULL;
    profile_site_pc = pc;
    return pc;
}

/* Unmaps the tables profile_start made (those it made, where it failed
 * half way) and forgets the file's name. */
static void release_tables(void)
{
    if (pr.sites)
        munmap(pr.sites, SITES * sizeof *pr.sites);
    if (pr.locks)
        munmap(pr.locks, LOCK_SLOTS * sizeof *pr.locks);
    if (pr.diffs)
        munmap(pr.diffs, DIFF_SLOTS * sizeof *pr.diffs);
    if (pr.stamps)
        munmap(pr.stamps, STAMPS * sizeof *pr.stamps);
    pr.sites = NULL;
    pr.locks = NULL;
    pr.diffs = NULL;
    pr.stamps = NULL;
    free(pr.path);
    pr.path = NULL;
}

int profile_start(const char *path, const struct profile_info *info)
{
    size_t n = strlen(path) + 16;
    pr.path = malloc(n);
    if (!pr.path)
        return -ENOMEM;
    snprintf(pr.path, n, "%s.%d", path, info->rank);
    pr.info = *info;
    snprintf(pr.protocol, sizeof pr.protocol, "%s", info->protocol ? info->protocol : "");
    pr.info.protocol = pr.protocol;
    int rc = 0;
    FILE *f = fopen(pr.path, "w"); /* fail now, not after the run */
    if (!f) {
        rc = -errno;
        goto err;
    }
    fclose(f);
    pr.sites = map_zeroed(SITES * sizeof *pr.sites);
    pr.locks = map_zeroed(LOCK_SLOTS * sizeof *pr.locks);
    pr.diffs = map_zeroed(DIFF_SLOTS * sizeof *pr.diffs);
    pr.stamps = map_zeroed(STAMPS * sizeof *pr.stamps);
    if (!pr.sites || !pr.locks || !pr.diffs || !pr.stamps) {
        rc = -ENOMEM;
        goto err;
    }
    for (size_t i = 0; i < LOCK_SLOTS; i++)
        pr.locks[i].id = -1;
    pr.lock_other.id = -1;
    void *prime[2];
    backtrace(prime, 2); /* loads the unwinder now, not in a signal handler */
    mine = register_thread(0);
    atomic_store(&pr.epoch, 0);
    barriers_passed = 0;
    pr.t_start = clock_ns();
    profile_enabled = true;
    return 0;
err:
    release_tables();
    return rc;
}

/* ---- hooks ---------------------------------------------------------------- */

void profile_fault(size_t page, const void *addr, const void *pc, bool write, uint64_t t0,
                   uint64_t fetched)
{
    uint64_t t1 = clock_ns();
    struct profile_rec r = rec(PROF_FAULT, write ? PROF_WRITE : 0, page);
    r.t = t0;
    r.dur = t1 - t0;
    r.a = (uint64_t)(uintptr_t)pc;
    r.b = ((uint64_t)(uintptr_t)addr & (pr.info.page_size - 1)) | fetched << 32;
    uint64_t st[PROFILE_STACK_MAX];
    size_t k = 0;
    if (sample((uintptr_t)pc, FAULT_FIRST, FAULT_EVERY)) {
        k = stack_of(st, pc, 0);
        if (k)
            r.sub |= PROF_STACKED;
    }
    put(&r, st, k);
}

void profile_page(enum profile_kind kind, unsigned sub, size_t page, uint64_t a)
{
    struct profile_rec r = rec(kind, sub, page);
    r.t = clock_ns();
    r.a = a;
    put(&r, NULL, 0);
}

/* The epoch of lrc's interval `stamp` (0: the current one). */
static uint32_t epoch_of(uint32_t stamp)
{
    uint32_t now = atomic_load_explicit(&pr.epoch, memory_order_relaxed);
    if (!stamp)
        return now;
    const struct stamp_epoch *s = &pr.stamps[stamp % STAMPS];
    return s->stamp == stamp ? s->epoch : now;
}

void profile_interval(uint32_t stamp)
{
    uint32_t epoch = atomic_load_explicit(&pr.epoch, memory_order_relaxed);
    pr.stamps[stamp % STAMPS] = (struct stamp_epoch){stamp, epoch};
    profile_page(PROF_INTERVAL, 0, stamp, 0);
}

bool profile_bytes_wanted(size_t page, uint32_t stamp)
{
    uint32_t epoch = epoch_of(stamp);
    if (epoch < PROFILE_BYTES_ALL)
        return true;
    uint64_t r = 1;
    while (r * 2 <= epoch / PROFILE_BYTES_ALL)
        r *= 2;
    uint64_t h = (uint64_t)page * 0x9E3779B97F4A7C15ull ^ (uint64_t)epoch * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 31;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return (h & (r - 1)) == 0;
}

void profile_diff_counted(enum profile_diff how, size_t page, uint64_t sent)
{
    uint64_t h = ((uint64_t)page * 0x9E3779B97F4A7C15ull + how) >> 40;
    pthread_mutex_lock(&pr.diff_mu);
    struct diff_count *c = &pr.diff_other;
    for (uint32_t i = 0; i < 64; i++) {
        struct diff_count *d = &pr.diffs[(h + i) & (DIFF_SLOTS - 1)];
        if (d->page1 == page + 1 && d->how == how) {
            c = d;
            break;
        }
        if (!d->page1) {
            d->page1 = (uint32_t)page + 1;
            d->how = how;
            c = d;
            break;
        }
    }
    c->diffs++;
    c->sent += sent;
    pthread_mutex_unlock(&pr.diff_mu);
}

void profile_written(enum profile_diff how, size_t page, uint64_t stamp, uint64_t sent,
                     uint64_t payload, const uint64_t *words, size_t n, bool bitmap)
{
    struct profile_rec r = rec(PROF_DIFF, how | (bitmap ? PROF_BITMAP : 0), page);
    r.epoch = epoch_of((uint32_t)stamp);
    r.t = clock_ns();
    r.site = stamp;
    r.a = sent;
    r.b = payload;
    put(&r, words, n);
}

/* The frames of the calling thread's stack that lie in the region: the
 * master's main and the functions it calls (the master's stack is there
 * under master-only start), a team's threads on their shared stacks. An
 * OpenMP program's shared locals live in them, and another node's thread
 * writes them through a pointer: the tool names the variable at such an
 * address from the frame that holds it (its function's debug information
 * places each local at an offset from the frame's base: the CFA, the stack
 * pointer or the frame pointer, found from the first two). One unwind at each region's
 * fork and join (microseconds, where a region across nodes costs hundreds),
 * a sampled barrier's; a stack already noted is not recorded again. */
#define FRAMES_MAX 16
#define FRAMES_DEPTH 64 /* frames walked before giving up */
#define FRAMES_SEEN 64  /* stacks remembered, by hash, per thread */

struct frames_walk {
    uint64_t lo, hi;     /* the region's addresses */
    uint64_t ip, sp;     /* the frame the unwinder returned to last */
    uint64_t w[3 * FRAMES_MAX];
    size_t   n;
    int      depth;
};

static __thread uint64_t frames_seen[FRAMES_SEEN];

/* The unwinder's context at each step is the frame that returns to the
 * program counter it gives: its CFA is the caller's stack pointer at the
 * call, and the caller's own CFA comes with the next step. (Not the
 * unwinder's registers: a frame's may have no saved place, and libgcc's
 * _Unwind_GetGR then reads address 0; a frame pointer, where a function
 * keeps one, is its CFA less the return address and the saved pointer:
 * the tool's.) */
static _Unwind_Reason_Code frame_step(struct _Unwind_Context *ctx, void *arg)
{
    struct frames_walk *f = arg;
    uint64_t cfa = _Unwind_GetCFA(ctx);
    if (f->ip && cfa > f->lo && cfa <= f->hi && f->sp >= f->lo && f->sp < cfa) {
        uint64_t *w = f->w + 3 * f->n;
        w[0] = f->ip;
        w[1] = cfa;
        w[2] = f->sp;
        if (++f->n == FRAMES_MAX)
            return _URC_END_OF_STACK;
    }
    f->ip = _Unwind_GetIP(ctx);
    f->sp = cfa;
    return ++f->depth < FRAMES_DEPTH ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static void note_frames(void)
{
    struct frames_walk f = {.lo = pr.info.base,
                            .hi = pr.info.base + pr.info.npages * pr.info.page_size};
    _Unwind_Backtrace(frame_step, &f);
    if (!f.n)
        return;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < 3 * f.n; i++)
        h = (h ^ f.w[i]) * 0x100000001b3ull;
    uint64_t *seen = &frames_seen[h % FRAMES_SEEN];
    if (*seen == h)
        return;
    *seen = h;
    struct profile_rec r = rec(PROF_FRAMES, 0, 0);
    r.t = clock_ns();
    r.a = f.n;
    put(&r, f.w, 3 * f.n);
}

/* A sampled stack of the calling thread's site into out; 0 frames when
 * not sampled. skip: our own frames (this and the hook). */
static size_t site_stack(uint64_t *out, uint32_t first, uint32_t every)
{
    uintptr_t site = (uintptr_t)profile_site_pc;
    if (!sample(site ? site : 1, first, every))
        return 0;
    return stack_of(out, NULL, 2);
}

/* Puts a record made at the program's call site (profile_site_pc), with
 * its call stack where site_stack samples it (the first `first` at a
 * site, then one in `every`). */
static void put_at_site(struct profile_rec *r, uint32_t first, uint32_t every)
{
    r->site = (uint64_t)(uintptr_t)profile_site_pc;
    uint64_t st[PROFILE_STACK_MAX];
    size_t k = site_stack(st, first, every);
    if (k)
        r->sub |= PROF_STACKED;
    put(r, st, k);
}

void profile_alloc(enum profile_alloc how, const void *p, size_t size)
{
    struct profile_rec r = rec(PROF_ALLOC, how, 0);
    r.t = clock_ns();
    r.a = (uint64_t)(uintptr_t)p;
    r.b = size;
    put_at_site(&r, ALLOC_FIRST, ALLOC_EVERY);
}

void profile_free(const void *p)
{
    struct profile_rec r = rec(PROF_FREE, 0, 0);
    r.t = clock_ns();
    r.a = (uint64_t)(uintptr_t)p;
    put(&r, NULL, 0);
}


void profile_barrier(uint64_t t0, uint64_t wait)
{
    struct profile_rec r = rec(PROF_BARRIER, 0, 0);
    r.page = barriers_passed;
    r.t = t0;
    r.dur = wait;
    put_at_site(&r, BARRIER_FIRST, BARRIER_EVERY);
    if (r.sub & PROF_STACKED)
        note_frames();
    uint32_t mine_now = ++barriers_passed + atomic_load_explicit(&syncs_passed, memory_order_relaxed);
    uint32_t e = atomic_load_explicit(&pr.epoch, memory_order_relaxed);
    while (e < mine_now && !atomic_compare_exchange_weak_explicit(&pr.epoch, &e, mine_now,
                                                                    memory_order_relaxed,
                                                                    memory_order_relaxed)) {
    }
}

void profile_job_sync(void)
{
    note_frames();
    atomic_fetch_add_explicit(&syncs_passed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pr.epoch, 1, memory_order_relaxed);
}

static struct lock_count *lock_slot(int id, uintptr_t site)
{
    uint64_t h = ((uint64_t)(uint32_t)id * 0x9E3779B97F4A7C15ull) ^ (site * 0xC2B2AE3D27D4EB4Full);
    for (uint32_t i = 0; i < 64; i++) {
        struct lock_count *c = &pr.locks[(h + i) & (LOCK_SLOTS - 1)];
        if (c->id == id && c->site == site)
            return c;
        if (c->id < 0) {
            c->id = id;
            c->site = site;
            return c;
        }
    }
    return &pr.lock_other;
}

void profile_lock(int id, bool remote, int from, uint64_t t0, uint64_t wait)
{
    uintptr_t site = (uintptr_t)profile_site_pc;
    pthread_mutex_lock(&pr.lock_mu);
    struct lock_count *c = lock_slot(id, site);
    c->acquires++;
    if (remote) {
        c->remote++;
        c->wait_ns += wait;
    }
    pthread_mutex_unlock(&pr.lock_mu);
    if (nheld < HELD_MAX)
        held[nheld] = id;
    nheld++;
    uint64_t st[PROFILE_STACK_MAX];
    if (remote) {
        struct profile_rec r = rec(PROF_LOCK, 0, (size_t)id);
        r.t = t0;
        r.dur = wait;
        r.a = (uint64_t)from;
        r.site = site;
        put(&r, NULL, 0);
    }
    size_t k = site_stack(st, LOCK_FIRST, LOCK_EVERY);
    if (k) {
        struct profile_rec r = rec(PROF_STACK, 0, (size_t)id);
        r.site = site;
        put(&r, st, k);
    }
}

void profile_unlock(int id)
{
    /* Usually the innermost; locks may be released in any order. */
    int n = nheld < HELD_MAX ? nheld : HELD_MAX;
    for (int i = n - 1; i >= 0; i--)
        if (held[i] == id) {
            memmove(&held[i], &held[i + 1], (size_t)(n - i - 1) * sizeof held[0]);
            break;
        }
    if (nheld)
        nheld--;
    releasing = 0;
}

void profile_releasing(int id) { releasing = id + 1; }

void profile_release(bool aside, uint64_t t0, uint64_t wait)
{
    struct profile_rec r = rec(PROF_RELEASE, aside, 0);
    r.t = t0;
    r.dur = wait;
    put(&r, NULL, 0);
}

/* ---- the file ------------------------------------------------------------ */

/* The diffs counted without their bytes, as records. */
static void put_diff_table(void)
{
    for (size_t i = 0; i <= DIFF_SLOTS; i++) {
        const struct diff_count *c = i < DIFF_SLOTS ? &pr.diffs[i] : &pr.diff_other;
        if (!c->diffs)
            continue;
        struct profile_rec r = {.kind = PROF_DIFFSUM, .sub = (uint8_t)c->how,
                                .page = c->page1 ? c->page1 - 1 : UINT32_MAX,
                                .a = c->diffs, .b = c->sent};
        put(&r, NULL, 0);
    }
}

/* The lock table, as records of the application thread's buffer. */
static void put_lock_table(void)
{
    for (size_t i = 0; i <= LOCK_SLOTS; i++) {
        const struct lock_count *c = i < LOCK_SLOTS ? &pr.locks[i] : &pr.lock_other;
        if (c->id < 0)
            continue;
        struct profile_rec r = {.kind = PROF_LOCKSTAT, .page = (uint32_t)c->id,
                                .a = c->acquires, .b = c->remote, .dur = c->wait_ns,
                                .site = c->site};
        put(&r, NULL, 0);
    }
}

static char *read_maps(size_t *len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    while (s) {
        size_t got = fread(s + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *bigger = realloc(s, cap * 2);
        if (!bigger) {
            free(s);
            s = NULL;
            break;
        }
        s = bigger;
        cap *= 2;
    }
    fclose(f);
    *len = n;
    return s;
}

static uint64_t bytes_of(const struct thread_buf *b)
{
    uint64_t n = 0;
    for (const struct chunk *c = b->first; c; c = c->next)
        n += c->used;
    return n;
}

int profile_finish(void)
{
    if (!profile_enabled)
        return 0;
    mine = mine ? mine : register_thread(1);
    put_lock_table();
    put_diff_table();
    profile_enabled = false;
    struct profile_file_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PROFILE_MAGIC, 8);
    h.version = PROFILE_VERSION;
    h.rank = (uint32_t)pr.info.rank;
    h.nodes = (uint32_t)pr.info.nodes;
    h.nthreads = pr.nthreads;
    h.page_size = pr.info.page_size;
    h.npages = pr.info.npages;
    h.arena_pages = pr.info.arena_pages;
    h.base = pr.info.base;
    h.gbase = pr.info.gbase;
    h.gsize = pr.info.gsize;
    h.gpages = pr.info.gpages;
    h.prestart_size = pr.info.prestart_size;
    h.t_start = pr.t_start;
    h.t_end = clock_ns();
    memcpy(h.protocol, pr.protocol, sizeof h.protocol);
    ssize_t el = readlink("/proc/self/exe", h.exe, sizeof h.exe - 1);
    if (el < 0)
        h.exe[0] = 0;
    size_t maps_len = 0;
    char *maps = read_maps(&maps_len);
    h.maps_len = maps ? maps_len : 0;

    int rc = 0;
    FILE *f = fopen(pr.path, "w");
    if (!f) {
        rc = -errno;
        goto out;
    }
    if (fwrite(&h, sizeof h, 1, f) != 1 ||
        (h.maps_len && fwrite(maps, 1, h.maps_len, f) != h.maps_len))
        rc = -EIO;
    for (uint32_t i = 0; i < pr.nthreads && !rc; i++) {
        struct thread_buf *b = pr.threads;
        while (b && b->index != i)
            b = b->next;
        struct profile_file_thread th = {.index = b->index, .role = b->role, .bytes = bytes_of(b)};
        if (fwrite(&th, sizeof th, 1, f) != 1)
            rc = -EIO;
        for (struct chunk *c = b->first; c && !rc; c = c->next)
            if (c->used && fwrite(c->data, 1, c->used, f) != c->used)
                rc = -EIO;
    }
    if (fclose(f) && !rc)
        rc = -errno;
out:
    free(maps);
    for (struct thread_buf *b = pr.threads, *next; b; b = next) {
        next = b->next;
        for (struct chunk *c = b->first, *cn; c; c = cn) {
            cn = c->next;
            munmap(c, sizeof *c);
        }
        munmap(b, sizeof *b);
    }
    pr.threads = NULL;
    pr.nthreads = 0;
    mine = NULL;
    release_tables();
    return rc;
}
