/*
 * torture.c — generated race-free programs checked against a sequential
 * model (issue 36), over C11's whole memory model (issue 54).
 *
 * One job runs many generated programs in sequence. Every participant
 * derives the same program from (seed, program index) with splitmix64, so
 * the plan — objects, phases, who writes which bytes, which locks nest —
 * needs no communication; only the pointers dsm_malloc returns travel
 * (dsm_bcast). A program allocates 2 to 12 objects (from a few words,
 * several to a page, to a few pages, some of an odd number of bytes; every
 * home policy; each by a random node), runs 2 to 6 phases separated by
 * barriers, checks every byte of every object on every participant, and
 * frees them all (each by a random node, often not its owner).
 *
 * The model holds every byte (a memory location is what C11 says it is:
 * every byte is its own), with the participant and phase that last wrote
 * it, so a mismatch names the write that was lost. The accesses are of 1,
 * 2, 4, 8 and 16 bytes, aligned and not (crossing words, cache lines and
 * pages), and neighbouring bytes of one word are written by different
 * nodes, and by different threads of one node, in one interval. Phases:
 *  - locks: each node runs 0 to 10 (sometimes 40) critical sections, each
 *    under one lock or two or three nested in ascending id order, doing
 *    non-commutative read-modify-writes (x = x*K + c, truncated to the
 *    item's size) on items the locks guard: 1, 2, 4 or 8 bytes anywhere,
 *    and clusters of neighbouring bytes of one or two words split among
 *    different locks. Each critical section appends an entry to its lock's
 *    log in shared memory (who, a hash of the guarded items it read, its
 *    vector time), so the actual acquisition order is known; after the
 *    phase's barrier the model replays every log sequentially and checks
 *    each entry's hash and the final items. Before each critical section a
 *    node writes an item of its own once ("published"; neighbours of one
 *    word go to different nodes); under a lock it merges the vector time
 *    of the lock's last entry and reads every published item that vector
 *    time says happened before — the causality a lock chain through third
 *    nodes promises (what lrc's intervals carry);
 *  - barrier writes: rounds of read-modify-writes of whole words, each word
 *    by one node (runs of words with random writers, so pages have many
 *    writers), every read checked against the model, and unwritten words
 *    read meanwhile;
 *  - mixed sizes: rounds in which runs of elements of 1, 2, 4, 8 or 16
 *    bytes, aligned or not, some across a page boundary, get writers
 *    round-robin (neighbours on different nodes, or threads of one node),
 *    in blocks (OpenMP's static split: blocks that meet inside a word) or
 *    at random; stores or read-modify-writes checked before; bytes no one
 *    writes read meanwhile; after the barrier each run read back with
 *    accesses of another size (written as bytes, read as words, and the
 *    other way);
 *  - memory functions: memset, memcpy, memmove (overlapping), strcpy,
 *    strncpy, strcat and struct assignment (packed structs of 3 to 4,099
 *    bytes at any alignment, aligned ones of 16 to 264) of any length and
 *    alignment, across page boundaries, into ranges of one writer each, from
 *    private buffers or from shared bytes no one writes in the round; the
 *    model runs the same functions on its bytes;
 *  - atomics: 1-, 2-, 4-, 8- and (x86-64) 16-byte atomics through dsm's
 *    atomic interface (the __tsan_atomic* calls dsmcc makes of every
 *    atomic; src/sync/atomic.c), with plain bytes of other writers beside
 *    them in the same word and page: adds, subtracts and compare-and-swap
 *    loops by every node (the sum is checked), or-, xor- and and-masks of
 *    each node's own bits (checked by the node as it goes), a single
 *    owner's store, exchange, compare-and-swaps and nand (each result
 *    checked), and loads by every node of a value no one changes;
 *  - condition ring: a token passes along a random ring order through one
 *    lock and condition variables (one per node with signal, or one shared
 *    with broadcast); each holder's read-modify-writes of items, under the
 *    lock or outside it, are checked against the model as it goes. Half the
 *    time a chain: descending node order, each writer updating items of its
 *    own under its own lock before its turn, then a node A that owns
 *    (without holding) locks another node D takes meanwhile;
 *  - broadcasts: a root writes items then dsm_bcast's a private buffer of
 *    1 B to 64 KiB; every receiver checks the buffer and the root's items
 *    with no barrier between (a bcast carries its root's writes);
 *  - free and malloc: some objects freed (by any node), new ones allocated
 *    after the barrier, their pointers broadcast, and every byte read as
 *    zero on every node (a block is zeroed, whoever used it before).
 * Race-free by construction: every conflicting pair of accesses (the same
 * byte, one a write, not both atomic) is ordered by a lock, a barrier, a
 * condition hand-off or a bcast.
 *
 * A mismatch ends the job with the seed, program, phase, participant,
 * address (object, byte, page), expected and found values, the write the
 * model last saw there, the settings in force and a command that replays
 * it.
 *
 * The differential test: torture_hw is this file built with torture_hw.c,
 * dsm's API on threads of one process (plain pthreads, hardware shared
 * memory, no dsm). `torture_hw --participants P ... --dump FILE` writes
 * every object's bytes after every phase; `torture ... --reference FILE`
 * on dsm compares its memory with them byte for byte at the same points
 * (tests/torture/differential.sh runs both). Both imply --commutative: a
 * lock's sections add (x + c) rather than x*K + c, so that memory after a
 * phase does not depend on the order the locks were taken in (every other
 * phase's outcome is fixed by its plan).
 *
 * Usage: torture [--fork] [--seed S] [--count N] [--first I] [--commutative]
 *                [--dump FILE] [--reference FILE]
 *   runs programs I .. I+N-1 of seed S (defaults: 1, 20, 0). --fork runs
 *   them fork style, one participant per thread of every node under
 *   dsmrun --threads T (SMP nodes); without it, one per node (SPMD).
 *   torture_hw takes --participants P (default 2) too, and always runs
 *   fork style.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm.h"

#define MAX_NODES   64   /* participants */
#define MAX_OBJ     16   /* live objects at once */
#define MAX_LOCKS   12
#define MAX_GUARD   12   /* items a lock guards */
#define MAX_OPS     40   /* critical sections per node and phase */
#define MAX_RING    12   /* items a condition ring updates */
#define MAX_BCASTS  3
#define MAX_BWORDS  12   /* items a bcast root writes */
#define BCAST_MAX   65536
#define LOCK_POOL   256  /* lock and condition ids come from a bounded pool */
#define LOCK_BASE   4096
#define COND_BASE   4096
#define MAX_PHASES  6
#define MAX_SPANS   16   /* runs of elements a mixed-sizes round plans */
#define MAX_PIECES  4096 /* elements a mixed-sizes round writes */
#define MAX_MEMOPS  24   /* memory-function calls a round makes */
#define MAX_SLOTS   10   /* atomic slots of a phase */

/* ---- dsm's atomic interface ---------------------------------------------- */

/* What dsmcc turns every atomic of a program into (LLVM's
 * tsan_interface_atomic.h; src/sync/atomic.c performs them coherently
 * across nodes). No public header declares them: a program built with
 * dsmcc calls them without knowing. The memory order is an int of C11's
 * memory_order values. Under -fsanitize gcc declares them itself, untyped
 * (src/sync/atomic.c says the same). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wbuiltin-declaration-mismatch"
#endif
#define TSAN_DECLARE(N, T)                                                                     \
    T __tsan_atomic##N##_load(const volatile T *a, int mo);                                    \
    void __tsan_atomic##N##_store(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_exchange(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_fetch_add(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_and(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_or(volatile T *a, T v, int mo);                                 \
    T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, int mo);                                \
    T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, int mo);                               \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo); \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo);   \
    T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo);
TSAN_DECLARE(8, char)
TSAN_DECLARE(16, short)
TSAN_DECLARE(32, int)
TSAN_DECLARE(64, long)
/* 16 bytes: libdsm has them where it is built with x86-64's cmpxchg16b. */
#if defined(__x86_64__) && defined(__SIZEOF_INT128__)
#define ATOMIC16 1
TSAN_DECLARE(128, __int128)
typedef unsigned __int128 aval; /* an atomic's value, of any width */
#else
#define ATOMIC16 0
typedef uint64_t aval;
#endif
#define MO_SEQ_CST 5

/* ---- Deterministic randomness ------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t s = a ^ (b * 0xd1b54a32d192ed03ull);
    return splitmix(&s);
}

static uint64_t below(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }

/* An odd multiplier other than 1: x*K + c then depends on the order of
 * updates, so a lost, repeated or reordered update changes the result.
 * Under --commutative, 1: the result is the sum whatever the order. */
static bool commutative;
static uint64_t multiplier(uint64_t h) { return commutative ? 1 : (h | 1) == 1 ? 3 : (h | 1); }

static uint64_t fold(uint64_t acc, uint64_t v) { return (acc ^ v) * 0x100000001b3ull + 0x9e37; }

/* ---- Accesses of one size ------------------------------------------------- */

/* One load or store of exactly `width` bytes, at any alignment: volatile
 * (so the compiler neither merges nor splits it into a memcpy) through
 * packed types (so an unaligned one is defined, and UBSan agrees). */
typedef struct __attribute__((packed, may_alias)) { uint16_t v; } un16;
typedef struct __attribute__((packed, may_alias)) { uint32_t v; } un32;
typedef struct __attribute__((packed, may_alias)) { uint64_t v; } un64;
#ifdef __SIZEOF_INT128__
typedef struct __attribute__((packed, may_alias)) { unsigned __int128 v; } un128;
#else
typedef struct __attribute__((packed, may_alias)) { uint64_t a, b; } un128;
#endif

static void load_w(const void *p, void *out, int width)
{
    switch (width) {
    case 1: { uint8_t v = *(const volatile uint8_t *)p; memcpy(out, &v, 1); break; }
    case 2: { uint16_t v = ((const volatile un16 *)p)->v; memcpy(out, &v, 2); break; }
    case 4: { uint32_t v = ((const volatile un32 *)p)->v; memcpy(out, &v, 4); break; }
    case 8: { uint64_t v = ((const volatile un64 *)p)->v; memcpy(out, &v, 8); break; }
    default: { un128 v = *(const volatile un128 *)p; memcpy(out, &v, 16); break; }
    }
}

static void store_w(void *p, const void *in, int width)
{
    switch (width) {
    case 1: { uint8_t v; memcpy(&v, in, 1); *(volatile uint8_t *)p = v; break; }
    case 2: { uint16_t v; memcpy(&v, in, 2); ((volatile un16 *)p)->v = v; break; }
    case 4: { uint32_t v; memcpy(&v, in, 4); ((volatile un32 *)p)->v = v; break; }
    case 8: { uint64_t v; memcpy(&v, in, 8); ((volatile un64 *)p)->v = v; break; }
    default: { un128 v; memcpy(&v, in, 16); *(volatile un128 *)p = v; break; }
    }
}

/* A value of 1, 2, 4 or 8 bytes as the integer a load of that size gives
 * (the same conversion for memory and model, whatever the byte order). */
static uint64_t get_w(const void *p, int width)
{
    switch (width) {
    case 1: return *(const volatile uint8_t *)p;
    case 2: return ((const volatile un16 *)p)->v;
    case 4: return ((const volatile un32 *)p)->v;
    default: return ((const volatile un64 *)p)->v;
    }
}

static void put_w(void *p, uint64_t v, int width)
{
    switch (width) {
    case 1: *(volatile uint8_t *)p = (uint8_t)v; break;
    case 2: ((volatile un16 *)p)->v = (uint16_t)v; break;
    case 4: ((volatile un32 *)p)->v = (uint32_t)v; break;
    default: ((volatile un64 *)p)->v = v; break;
    }
}

static uint64_t mask_w(int width) { return width >= 8 ? ~0ull : (1ull << (8 * width)) - 1; }

/* ---- The program's state: objects and the model ------------------------- */

struct object {
    unsigned char *p;    /* shared */
    unsigned char *want; /* the model's bytes (private, the same on every participant) */
    uint16_t *who;       /* per byte: the participant that last wrote it in the model, plus 1; 0: none */
    uint8_t *when;       /* per byte: the phase of that write */
    size_t bytes;
    size_t words;        /* whole 8-byte words, what the word phases use: bytes / 8 */
    size_t base;         /* its first byte's index over every object */
    int owner;           /* the allocating participant */
};

/* 1, 2, 4 or 8 bytes of an object, at any offset: what the lock, ring and
 * bcast phases read and update. */
struct item {
    int16_t k;
    uint8_t width;
    uint32_t off;
};

/* The arguments, as the master parsed them (fork style copies them to
 * the other nodes at the create). */
static struct {
    uint64_t seed;
    long first, count;
    const char *argv0;
    bool fork;
    const char *dump, *reference;
} args = {.seed = 1, .count = 20};

/* The reference file (participant 0's). */
static FILE *ref_file;

static __thread struct {
    /* the job */
    int me, n, tpn;      /* participant, participants, threads a node */
    size_t page_size;
    uint64_t seed;
    long first, count;
    const char *argv0;
    /* the program */
    long index;
    int phase;
    const char *phase_name;
    const char *names[MAX_PHASES + 2]; /* each phase's, for the model's history of a byte */
    uint64_t prog_seed;
    int nobj;
    struct object obj[MAX_OBJ];
    size_t total;        /* words over every object */
    size_t total_bytes;  /* bytes over every object */
    uint8_t *taken;      /* per byte: what a phase (round) does with it (TAKEN_*) */
    size_t taken_cap;
    unsigned char *scratch[3]; /* private buffers of 4 pages + 16 bytes */
    struct plan *plan;   /* the mixed-sizes and atomics phases' */
    void *pending[MAX_OBJ + 1]; /* blocks freed after the next barrier */
    int pending_freer[MAX_OBJ + 1];
    int npending;
    /* totals, for the summary */
    long sections, handoffs, bcasts, rmw_items, objects, phases, pieces, memops, atomics, compared;
} T; /* each participant's own: a thread's with --fork under DSM_THREADS */

enum { TAKEN_FREE = 0, TAKEN_WRITTEN = 1, TAKEN_READ = 2 };

#ifndef TORTURE_HW
static const char *const matrix_vars[] = {
    "DSM_PROTOCOL", "DSM_THREADS", "DSM_NET_LOSS", "DSM_NET_DUP", "DSM_NET_REORDER", "DSM_NET_SEED",
    "DSM_MIGRATE_PAGES", "DSM_MIGRATE_HOMES", "DSM_MIGRATE_PERIOD", "DSM_LOCAL_MEM",
    "DSM_REPLACEMENT", "DSM_PAGE_SIZE", "DSM_HOME", "DSM_BARRIER_FANOUT",
    "DSM_LRC_GC_NOTICES", "DSM_CHECK",
};
#endif

/* "node 2", "node 1's thread 1 (participant 3)", or under torture_hw
 * "thread 3". */
static const char *participant_name(int w)
{
    static __thread char buf[4][64];
    static __thread int next;
    char *b = buf[next++ % 4];
#ifdef TORTURE_HW
    snprintf(b, sizeof buf[0], "thread %d", w);
#else
    if (T.tpn > 1)
        snprintf(b, sizeof buf[0], "node %d's thread %d (participant %d)", w / T.tpn, w % T.tpn, w);
    else
        snprintf(b, sizeof buf[0], "node %d", w);
#endif
    return b;
}

static void out_of_memory(void)
{
    fprintf(stderr, "torture: out of memory\n");
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        out_of_memory();
    return p;
}

/* Ends the job: the failure, the settings, and the command that replays it. */
__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char extra[64] = "";
    if (commutative && !args.dump && !args.reference)
        snprintf(extra, sizeof extra, " --commutative");
#ifdef TORTURE_HW
    fprintf(stderr,
            "torture_hw: FAILED: seed %" PRIu64 " program %ld phase %d (%s), %s: %s\n"
            "torture_hw: %d threads in one process, no dsm\n"
            "torture_hw: replay: %s --participants %d --seed %" PRIu64 " --first %ld --count %ld%s%s%s"
            "   (this program alone: --first %ld --count 1)\n",
            T.seed, T.index, T.phase, T.phase_name, participant_name(T.me), what, T.n, T.argv0, T.n,
            T.seed, T.first, T.count, extra, args.reference ? " --reference " : "",
            args.reference ? args.reference : "", T.index);
#else
    char env[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof matrix_vars / sizeof *matrix_vars; i++) {
        const char *v = getenv(matrix_vars[i]);
        if (v && *v && strcmp(matrix_vars[i], "DSM_PROTOCOL") != 0 && len < sizeof env)
            len += (size_t)snprintf(env + len, sizeof env - len, "%s=%s ", matrix_vars[i], v);
    }
    const char *protocol = getenv("DSM_PROTOCOL") ? getenv("DSM_PROTOCOL") : "hlrc";
    /* The launcher that started this node, when it is dsmrun on this host. */
    char dsmrun[512], parent[64];
    snprintf(parent, sizeof parent, "/proc/%d/exe", (int)getppid());
    ssize_t got = readlink(parent, dsmrun, sizeof dsmrun - 1);
    dsmrun[got > 0 ? got : 0] = 0;
    size_t dl = strlen(dsmrun);
    if (dl < 6 || strcmp(dsmrun + dl - 6, "dsmrun") != 0)
        strcpy(dsmrun, "dsmrun");
    fprintf(stderr,
            "torture: FAILED: seed %" PRIu64 " program %ld phase %d (%s), %s: %s\n"
            "torture: matrix: protocol %s, %d nodes, %s\n"
            "torture: replay: %s%s -n %d --protocol %s %s%s --seed %" PRIu64
            " --first %ld --count %ld%s%s%s   (this program alone: --first %ld --count 1)\n",
            T.seed, T.index, T.phase, T.phase_name, participant_name(T.me), what, protocol,
            dsm_nodes(), len ? env : "no other settings", env, dsmrun, dsm_nodes(), protocol,
            T.argv0, args.fork ? " --fork" : "", T.seed, T.first, T.count, extra,
            args.reference ? " --reference " : "", args.reference ? args.reference : "", T.index);
    if (args.reference)
        fprintf(stderr, "torture: the reference: %s_hw --participants %d --seed %" PRIu64
                        " --first %ld --count %ld --dump %s\n",
                T.argv0, T.n, T.seed, T.first, T.count, args.reference);
#endif
    fflush(stderr);
    exit(1);
}

/* ---- The model --------------------------------------------------------- */

static const char *phase_name_of(int ph)
{
    return ph >= 0 && ph <= MAX_PHASES + 1 && T.names[ph] ? T.names[ph] : "?";
}

/* What the model knows of byte `off` of object k: who wrote it last. */
static const char *history(int k, size_t off)
{
    static __thread char buf[256];
    const struct object *o = &T.obj[k];
    if (!o->who[off])
        snprintf(buf, sizeof buf, "the model has it unwritten since the object's allocation");
    else if (o->who[off] == UINT16_MAX)
        snprintf(buf, sizeof buf, "the model has it last changed by several participants' atomics "
                 "in phase %d (%s)", o->when[off], phase_name_of(o->when[off]));
    else
        snprintf(buf, sizeof buf, "the model has it last written by %s in phase %d (%s)",
                 participant_name(o->who[off] - 1), o->when[off], phase_name_of(o->when[off]));
    return buf;
}

/* Where bytes [off, off + len) of object k are: the object, the offset, the
 * address, and the word, line and page boundaries they cross. */
static const char *where(int k, size_t off, size_t len)
{
    static __thread char buf[320];
    const struct object *o = &T.obj[k];
    uintptr_t a = (uintptr_t)(o->p + off), e = a + (len ? len : 1) - 1;
    char range[64];
    if (len > 1)
        snprintf(range, sizeof range, "bytes %zu..%zu", off, off + len - 1);
    else
        snprintf(range, sizeof range, "byte %zu", off);
    snprintf(buf, sizeof buf, "object %d (%zu bytes, allocated by %s), %s at %p (page offset %zu%s%s%s)",
             k, o->bytes, participant_name(o->owner), range, (void *)a, (size_t)(a % T.page_size),
             a / 8 != e / 8 ? ", crossing a word" : "", a / 64 != e / 64 ? ", crossing a cache line" : "",
             a / T.page_size != e / T.page_size ? ", crossing a page" : "");
    return buf;
}

/* `who` for a byte that several participants' atomics changed. */
#define WHO_MANY (-2)

static void mark_written(int k, size_t off, size_t len, int who)
{
    struct object *o = &T.obj[k];
    for (size_t i = off; i < off + len; i++) {
        o->who[i] = who == WHO_MANY ? UINT16_MAX : (uint16_t)(who + 1);
        o->when[i] = (uint8_t)T.phase;
    }
}

/* Sets the model's bytes [off, off + len) of object k, written by `who`. */
static void model_set(int k, size_t off, const void *src, size_t len, int who)
{
    memcpy(T.obj[k].want + off, src, len);
    mark_written(k, off, len, who);
}

/* Reads bytes [off, off + len) of object k from shared memory, in loads of
 * `width` bytes (the tail in single bytes), and compares them with the
 * model; a difference ends the job, naming the first byte that differs. */
static void check_range(int k, size_t off, size_t len, int width, const char *context)
{
    const struct object *o = &T.obj[k];
    unsigned char got[16];
    for (size_t i = 0; i < len;) {
        int w = i + (size_t)width <= len ? width : 1;
        load_w(o->p + off + i, got, w);
        if (memcmp(got, o->want + off + i, (size_t)w) != 0) {
            /* A byte among the w loaded differs: the scan stops by then,
             * reading only bytes load_w wrote. */
            int j = 0;
            while (j < w - 1 && got[j] == o->want[off + i + (size_t)j])
                j++;
            size_t b = off + i + (size_t)j;
            fail("%s: %s, read in %d-byte loads: byte %zu is 0x%02x, the model's 0x%02x; %s",
                 context, where(k, off, len), width, b, got[j], o->want[b], history(k, b));
        }
        i += (size_t)w;
    }
}

/* ---- Items and words --------------------------------------------------- */

static unsigned char *item_ptr(const struct item *it) { return T.obj[it->k].p + it->off; }
static uint64_t item_load(const struct item *it) { return get_w(item_ptr(it), it->width); }
static uint64_t item_want(const struct item *it) { return get_w(T.obj[it->k].want + it->off, it->width); }
static void item_store(const struct item *it, uint64_t v) { put_w(item_ptr(it), v, it->width); }

static void item_model(const struct item *it, uint64_t v, int who)
{
    put_w(T.obj[it->k].want + it->off, v, it->width);
    mark_written(it->k, it->off, it->width, who);
}

/* Reads an item and compares it with `expected`. */
static uint64_t item_check_value(const struct item *it, uint64_t expected, const char *context)
{
    uint64_t got = item_load(it);
    if (got != expected) {
        size_t j = 0;
        unsigned char g[8], e[8];
        put_w(g, got, it->width);
        put_w(e, expected, it->width);
        while (j + 1 < it->width && g[j] == e[j])
            j++;
        fail("%s: %s, a %d-byte item: expected 0x%0*" PRIx64 ", got 0x%0*" PRIx64
             "; byte %zu differs, %s",
             context, where(it->k, it->off, it->width), it->width, 2 * it->width, expected,
             2 * it->width, got, it->off + j, history(it->k, it->off + j));
    }
    return got;
}

static uint64_t item_check(const struct item *it, const char *context)
{
    return item_check_value(it, item_want(it), context);
}

/* Word g over every object's whole words, as an item. */
static struct item word_item(size_t g)
{
    for (int k = 0; k < T.nobj; k++) {
        if (g < T.obj[k].words)
            return (struct item){.k = (int16_t)k, .width = 8, .off = (uint32_t)(g * 8)};
        g -= T.obj[k].words;
    }
    fail("word %zu beyond the program's %zu words (torture's own bug)", g, T.total);
}

static volatile uint64_t *word_ptr(size_t g)
{
    struct item it = word_item(g);
    return (volatile uint64_t *)item_ptr(&it);
}

/* ---- Picking bytes ------------------------------------------------------- */

static void taken_reset(void)
{
    if (T.taken_cap < T.total_bytes) {
        free(T.taken);
        T.taken = xmalloc(T.total_bytes);
        T.taken_cap = T.total_bytes;
    }
    memset(T.taken, TAKEN_FREE, T.total_bytes);
}

/* Whether every byte of [off, off + len) of object k is free (or, with
 * `read_ok`, only read by others in this round). */
static bool range_free(int k, size_t off, size_t len, bool read_ok)
{
    const uint8_t *t = T.taken + T.obj[k].base + off;
    for (size_t i = 0; i < len; i++)
        if (t[i] != TAKEN_FREE && !(read_ok && t[i] == TAKEN_READ))
            return false;
    return true;
}

static void range_mark(int k, size_t off, size_t len, uint8_t what)
{
    memset(T.taken + T.obj[k].base + off, what, len);
}

/* An object, each as likely as its share of the bytes. */
static int pick_object(uint64_t *s)
{
    size_t b = (size_t)below(s, T.total_bytes);
    for (int k = 0; k < T.nobj; k++) {
        if (b < T.obj[k].bytes)
            return k;
        b -= T.obj[k].bytes;
    }
    return T.nobj - 1;
}

/* A word no one has taken in this phase: random probes, then a scan. */
static bool take_word(uint64_t *s, size_t *out)
{
    for (int t = 0; t < 16; t++) {
        size_t g = (size_t)below(s, T.total);
        struct item it = word_item(g);
        if (range_free(it.k, it.off, 8, false)) {
            range_mark(it.k, it.off, 8, TAKEN_WRITTEN);
            *out = g;
            return true;
        }
    }
    size_t start = (size_t)below(s, T.total);
    for (size_t j = 0; j < T.total; j++) {
        size_t g = (start + j) % T.total;
        struct item it = word_item(g);
        if (range_free(it.k, it.off, 8, false)) {
            range_mark(it.k, it.off, 8, TAKEN_WRITTEN);
            *out = g;
            return true;
        }
    }
    return false;
}

/* An item no one has taken in this phase: half the time a whole aligned
 * word, else 1, 2, 4 or 8 bytes at an aligned or any offset. */
static bool take_item(uint64_t *s, struct item *out)
{
    for (int t = 0; t < 16; t++) {
        int k = pick_object(s);
        const struct object *o = &T.obj[k];
        int width = 8;
        size_t off;
        if (below(s, 2) == 0 && o->words) {
            off = 8 * (size_t)below(s, o->words);
        } else {
            width = 1 << below(s, 4);
            if (o->bytes < (size_t)width)
                width = 1;
            off = below(s, 2) ? (size_t)width * (size_t)below(s, o->bytes / (size_t)width)
                              : (size_t)below(s, o->bytes - (size_t)width + 1);
        }
        if (range_free(k, off, (size_t)width, false)) {
            range_mark(k, off, (size_t)width, TAKEN_WRITTEN);
            *out = (struct item){.k = (int16_t)k, .width = (uint8_t)width, .off = (uint32_t)off};
            return true;
        }
    }
    size_t w;
    if (take_word(s, &w)) {
        *out = word_item(w);
        return true;
    }
    return false;
}

/* Neighbouring items: a free aligned word, or two, split into 2 to 16
 * items of 1, 2 or 4 bytes (a 4-byte one from an odd byte crosses the
 * word's halves). The caller gives them to different writers or locks. */
static int take_cluster(uint64_t *s, struct item *out, int max)
{
    size_t g;
    if (!take_word(s, &g))
        return 0;
    struct item w = word_item(g);
    size_t span = 8;
    if (w.off + 16 <= T.obj[w.k].bytes && below(s, 2) && range_free(w.k, w.off + 8, 8, false)) {
        range_mark(w.k, w.off + 8, 8, TAKEN_WRITTEN);
        span = 16;
    }
    int n = 0;
    for (size_t pos = 0; pos < span && n < max;) {
        static const int widths[] = {1, 1, 2, 4};
        int width = widths[below(s, 4)];
        while (pos + (size_t)width > span)
            width /= 2;
        out[n++] = (struct item){.k = w.k, .width = (uint8_t)width, .off = (uint32_t)(w.off + pos)};
        pos += (size_t)width;
    }
    return n;
}

/* ---- Objects -------------------------------------------------------------- */

static void rebase(void)
{
    T.total = T.total_bytes = 0;
    for (int k = 0; k < T.nobj; k++) {
        T.obj[k].base = T.total_bytes;
        T.total += T.obj[k].words;
        T.total_bytes += T.obj[k].bytes;
    }
}

static void free_later(void *p, int freer)
{
    T.pending[T.npending] = p;
    T.pending_freer[T.npending++] = freer;
}

/* After a barrier: every use of the blocks is over; each is freed by its
 * chosen node (another node's block goes back to its owner at the next
 * barrier). */
static void free_pending(void)
{
    for (int i = 0; i < T.npending; i++)
        if (T.pending_freer[i] == T.me)
            dsm_free(T.pending[i]);
    T.npending = 0;
}

static void drop_object(int k)
{
    free(T.obj[k].want);
    free(T.obj[k].who);
    free(T.obj[k].when);
    T.obj[k] = T.obj[--T.nobj];
    rebase();
}

/* Allocates objects planned from *s until `add` are made or the size cap is
 * reached; pointers travel from each owner by dsm_bcast (which also carries
 * the owner's zeroing of a reused block), then every node checks every new
 * byte reads zero. A quarter of the objects end in an odd number of bytes. */
static void allocate_objects(uint64_t *s, int add)
{
    size_t page_words = T.page_size / 8;
    size_t cap_words = page_words * (4 + (size_t)below(s, 9)), sum = T.total;
    int first_new = T.nobj;
    static const enum dsm_home homes[] = {DSM_HOME_DEFAULT, DSM_HOME_LOCAL, DSM_HOME_CYCLIC,
                                          DSM_HOME_BLOCK, DSM_HOME_FIRST_TOUCH};
    for (int a = 0; a < add && T.nobj < MAX_OBJ; a++) {
        size_t words;
        uint64_t r = below(s, 10);
        if (r < 5)
            words = 1 + (size_t)below(s, 16);                     /* several to a page */
        else if (r < 8)
            words = 17 + (size_t)below(s, page_words / 2 - 16);   /* a size class up to half a page */
        else
            words = page_words * (1 + (size_t)below(s, 3)) + (size_t)below(s, page_words);
        if (T.nobj > 0 && sum + words > cap_words)
            break;
        sum += words;
        size_t bytes = words * 8 + (below(s, 4) == 0 ? 1 + (size_t)below(s, 7) : 0);
        struct object *o = &T.obj[T.nobj++];
        o->bytes = bytes;
        o->words = bytes / 8;
        o->owner = (int)below(s, (uint64_t)T.n);
        enum dsm_home home = homes[below(s, 5)];
        o->want = xcalloc(bytes, 1);
        o->who = xcalloc(bytes, sizeof *o->who);
        o->when = xcalloc(bytes, 1);
        o->p = NULL;
        if (o->owner == T.me) {
            o->p = dsm_malloc_home(bytes, home);
            if (!o->p)
                fail("dsm_malloc_home(%zu) returned NULL", bytes);
        }
        T.objects++;
    }
    rebase();
    for (int k = first_new; k < T.nobj; k++) {
        dsm_bcast(&T.obj[k].p, sizeof T.obj[k].p, T.obj[k].owner);
        if ((uintptr_t)T.obj[k].p % 16)
            fail("dsm_malloc_home(%zu) returned %p, not aligned to 16 bytes (malloc's max_align_t)",
                 T.obj[k].bytes, (void *)T.obj[k].p);
    }
    for (int k = first_new; k < T.nobj; k++)
        check_range(k, 0, T.obj[k].bytes, 8, "a new block is not zero");
}

/* ---- Phase: locks ----------------------------------------------------------- */

struct lock_phase {
    int nlocks;
    int id[MAX_LOCKS];
    uint64_t K[MAX_LOCKS];
    int nguard[MAX_LOCKS];
    struct item guard[MAX_LOCKS][MAX_GUARD];
    int ops[MAX_NODES];
    struct item published[MAX_NODES][MAX_OPS]; /* the item each op publishes */
    size_t cap[MAX_LOCKS];                     /* entries each log will hold */
    size_t log_at[MAX_LOCKS];                  /* each log's first word in the log block */
    struct item readonly[16];                  /* items no one writes in this phase */
    int nreadonly;
    uint64_t seed;
};

/* Critical section `o` of `node`: its locks (indices, ascending), what it
 * adds, and which guarded items of each lock it updates. */
struct section {
    int nset;
    int set[3];
    uint64_t c;
    uint32_t mask[MAX_LOCKS];
};

static struct section section_of(const struct lock_phase *P, int node, int o)
{
    struct section x = {0};
    uint64_t h = mix(P->seed, (uint64_t)node << 16 | (uint64_t)o);
    int a = (int)(h % (uint64_t)P->nlocks);
    x.set[x.nset++] = a;
    for (int b = a + 1; b < P->nlocks && x.nset < 3; b++)
        if (mix(h, (uint64_t)b) % 4 == 0)
            x.set[x.nset++] = b; /* nested: a higher id, so never a deadlock */
    x.c = mix(h, 99);
    for (int l = 0; l < P->nlocks; l++) {
        uint32_t all = (1u << P->nguard[l]) - 1;
        x.mask[l] = (uint32_t)mix(h, 200 + (uint64_t)l) & all;
        if (!x.mask[l])
            x.mask[l] = all & 1;
    }
    return x;
}

static bool section_holds(const struct section *x, int l)
{
    for (int i = 0; i < x->nset; i++)
        if (x->set[i] == l)
            return true;
    return false;
}

static uint64_t published_value(const struct lock_phase *P, int node, int o, int width)
{
    return (mix(P->seed ^ 0x5eed, (uint64_t)node << 16 | (uint64_t)o) | 1) & mask_w(width); /* never 0 */
}

/* What a section does to lock l's guarded items, given their values. */
static void section_apply(const struct lock_phase *P, const struct section *x, int l, uint64_t *v)
{
    for (int j = 0; j < P->nguard[l]; j++)
        if (x->mask[l] >> j & 1)
            v[j] = (v[j] * P->K[l] + x->c + (uint64_t)j) & mask_w(P->guard[l][j].width);
}

static uint64_t guard_hash(const struct lock_phase *P, int l, const uint64_t *v)
{
    uint64_t h = 0;
    for (int j = 0; j < P->nguard[l]; j++)
        h = fold(h, v[j]);
    return h;
}

static void phase_locks(uint64_t *s)
{
    static __thread struct lock_phase P; /* a participant's own (a thread's with --fork) */
    memset(&P, 0, sizeof P);
    P.seed = splitmix(s);
    taken_reset();
    P.nlocks = 1 + (int)below(s, MAX_LOCKS);
    /* distinct ids from the pool, ascending: the global order of nesting */
    for (int l = 0; l < P.nlocks; l++) {
        int id;
        bool dup;
        do {
            id = LOCK_BASE + (int)below(s, LOCK_POOL);
            dup = false;
            for (int m = 0; m < l; m++)
                dup |= P.id[m] == id;
        } while (dup);
        int at = l;
        while (at > 0 && P.id[at - 1] > id) {
            P.id[at] = P.id[at - 1];
            at--;
        }
        P.id[at] = id;
    }
    size_t budget = T.total_bytes / 16; /* items this phase may claim */
    for (int l = 0; l < P.nlocks; l++) {
        P.K[l] = multiplier(splitmix(s));
        int want = 1 + (int)below(s, MAX_GUARD);
        for (int j = 0; j < want && budget > 0; j++, budget--)
            if (take_item(s, &P.guard[l][P.nguard[l]]))
                P.nguard[l]++;
    }
    /* Neighbouring bytes of one word guarded by different locks: sections
     * of different nodes write them at once, each under its own lock. */
    if (P.nlocks > 1 && below(s, 2)) {
        struct item cl[16];
        int ncl = take_cluster(s, cl, 16), l = (int)below(s, (uint64_t)P.nlocks);
        for (int c = 0; c < ncl; c++, l = (l + 1) % P.nlocks)
            if (P.nguard[l] < MAX_GUARD)
                P.guard[l][P.nguard[l]++] = cl[c];
    }
    /* Mostly a few sections per node; sometimes a storm of short ones, where
     * nodes keep asking for locks that others own but no longer hold. */
    int most_ops = below(s, 4) ? MAX_OPS / 4 : MAX_OPS;
    int max_ops = 0;
    for (int i = 0; i < T.n; i++) {
        P.ops[i] = (int)below(s, (uint64_t)most_ops + 1);
        if (P.ops[i] > max_ops)
            max_ops = P.ops[i];
    }
    /* The published items, each node's first ones often neighbours of one
     * word (a cluster), the rest anywhere. */
    struct item cl[16];
    int ncl = below(s, 2) ? take_cluster(s, cl, 16) : 0, next_cl = 0;
    for (int o = 0; o < max_ops; o++)
        for (int i = 0; i < T.n; i++) {
            if (o >= P.ops[i])
                continue;
            if (next_cl < ncl) {
                P.published[i][o] = cl[next_cl++];
                continue;
            }
            if (budget == 0 || !take_item(s, &P.published[i][o])) {
                P.ops[i] = o;
                continue;
            }
            budget--;
        }
    for (int r = 0; r < 16 && budget > 0; r++, budget--)
        if (take_item(s, &P.readonly[P.nreadonly]))
            P.nreadonly++;
    /* the logs: [count, then entries of (who, hash, vector time)] per lock,
     * at random gaps in one block, so several locks' logs share pages */
    size_t entry_words = 2 + (size_t)T.n, log_words = 0;
    for (int i = 0; i < T.n; i++)
        for (int o = 0; o < P.ops[i]; o++) {
            struct section x = section_of(&P, i, o);
            for (int k = 0; k < x.nset; k++)
                P.cap[x.set[k]]++;
        }
    for (int l = 0; l < P.nlocks; l++) {
        log_words += (size_t)below(s, 24);
        P.log_at[l] = log_words;
        log_words += 1 + P.cap[l] * entry_words;
    }
    int log_owner = (int)below(s, (uint64_t)T.n);
    int log_freer = (int)below(s, (uint64_t)T.n);
    uint64_t *log = NULL;
    if (log_owner == T.me)
        log = dsm_malloc(log_words * sizeof *log);
    dsm_bcast(&log, sizeof log, log_owner); /* with it the owner's zeroing */

    uint64_t vc[MAX_NODES] = {0};
    uint64_t checked[MAX_NODES] = {0};
    uint64_t v[MAX_GUARD];
    char context[192];
    for (int o = 0; o < P.ops[T.me]; o++) {
        struct section x = section_of(&P, T.me, o);
        const struct item *pub = &P.published[T.me][o];
        item_store(pub, published_value(&P, T.me, o, pub->width));
        if (P.nreadonly)
            item_check(&P.readonly[mix(x.c, 5) % (uint64_t)P.nreadonly],
                       "an item no one writes in this phase, read between critical sections");
        for (int k = 0; k < x.nset; k++)
            dsm_lock(P.id[x.set[k]]);
        uint64_t hash[3];
        for (int k = 0; k < x.nset; k++) {
            int l = x.set[k];
            volatile uint64_t *lg = log + P.log_at[l];
            uint64_t cnt = lg[0];
            if (cnt >= P.cap[l])
                fail("lock %d's log holds %" PRIu64 " entries before this node's section %d; "
                     "%zu are planned in all (a lost or repeated log update)",
                     P.id[l], cnt, o, P.cap[l]);
            if (cnt > 0) {
                volatile uint64_t *last = lg + 1 + (cnt - 1) * entry_words;
                for (int i = 0; i < T.n; i++)
                    if (last[2 + i] > vc[i])
                        vc[i] = last[2 + i];
            }
            for (int j = 0; j < P.nguard[l]; j++)
                v[j] = item_load(&P.guard[l][j]);
            hash[k] = guard_hash(&P, l, v);
        }
        vc[T.me] = (uint64_t)o + 1;
        /* Everything the merged vector time covers happened before this
         * acquire: each node's published items up to it are visible. */
        for (int i = 0; i < T.n; i++) {
            if (vc[i] > (uint64_t)P.ops[i])
                fail("a log entry's vector time says node %d ran %" PRIu64
                     " sections; it has %d planned", i, vc[i], P.ops[i]);
            for (; checked[i] < vc[i]; checked[i]++) {
                const struct item *it = &P.published[i][checked[i]];
                snprintf(context, sizeof context,
                         "the item %s published before its section %" PRIu64
                         ", read under lock %d after a chain of locks from it (causality)",
                         participant_name(i), checked[i], P.id[x.set[0]]);
                item_check_value(it, published_value(&P, i, (int)checked[i], it->width), context);
            }
        }
        for (int k = 0; k < x.nset; k++) {
            int l = x.set[k];
            for (int j = 0; j < P.nguard[l]; j++)
                v[j] = item_load(&P.guard[l][j]);
            section_apply(&P, &x, l, v);
            for (int j = 0; j < P.nguard[l]; j++)
                if (x.mask[l] >> j & 1)
                    item_store(&P.guard[l][j], v[j]);
            volatile uint64_t *lg = log + P.log_at[l];
            uint64_t cnt = lg[0];
            volatile uint64_t *e = lg + 1 + cnt * entry_words;
            e[0] = ((uint64_t)T.me << 16 | (uint64_t)o) + 1;
            e[1] = hash[k];
            for (int i = 0; i < T.n; i++)
                e[2 + i] = vc[i];
            lg[0] = cnt + 1;
            T.rmw_items += __builtin_popcount(x.mask[l]);
        }
        for (int k = x.nset - 1; k >= 0; k--)
            dsm_unlock(P.id[x.set[k]]);
    }
    dsm_barrier();

    /* The model: each lock's log replayed in the order the lock was taken. */
    for (int l = 0; l < P.nlocks; l++) {
        volatile uint64_t *lg = log + P.log_at[l];
        uint64_t cnt = lg[0];
        if (cnt != P.cap[l])
            fail("lock %d's log holds %" PRIu64 " entries after the barrier; %zu sections took it",
                 P.id[l], cnt, P.cap[l]);
        int last_writer[MAX_GUARD];
        for (int j = 0; j < P.nguard[l]; j++) {
            v[j] = item_want(&P.guard[l][j]);
            last_writer[j] = -1;
        }
        int last_op[MAX_NODES];
        for (int i = 0; i < T.n; i++)
            last_op[i] = -1;
        for (uint64_t e = 0; e < cnt; e++) {
            volatile uint64_t *en = lg + 1 + e * entry_words;
            uint64_t who = en[0] - 1;
            int node = (int)(who >> 16), o = (int)(who & 0xffff);
            if (en[0] == 0 || node >= T.n || o >= P.ops[node] || o <= last_op[node])
                fail("lock %d's log entry %" PRIu64 " names node %d's section %d, which is not "
                     "the next of that node's under this lock (log word 0x%016" PRIx64 ")",
                     P.id[l], e, node, o, (uint64_t)en[0]);
            struct section x = section_of(&P, node, o);
            if (!section_holds(&x, l))
                fail("lock %d's log entry %" PRIu64 " names node %d's section %d, which does "
                     "not take that lock", P.id[l], e, node, o);
            last_op[node] = o;
            uint64_t expect = guard_hash(&P, l, v);
            if (en[1] != expect)
                fail("%s's section %d, the %" PRIu64 "th to take lock %d, read its items "
                     "stale: their hash 0x%016" PRIx64 ", the model's 0x%016" PRIx64
                     " (a write under this lock was lost or applied out of order)",
                     participant_name(node), o, e + 1, P.id[l], (uint64_t)en[1], expect);
            if (en[2 + node] != (uint64_t)o + 1)
                fail("lock %d's log entry %" PRIu64 ": node %d's own time %" PRIu64 ", not %d",
                     P.id[l], e, node, (uint64_t)en[2 + node], o + 1);
            section_apply(&P, &x, l, v);
            for (int j = 0; j < P.nguard[l]; j++)
                if (x.mask[l] >> j & 1)
                    last_writer[j] = node;
        }
        for (int j = 0; j < P.nguard[l]; j++) {
            if (last_writer[j] >= 0)
                item_model(&P.guard[l][j], v[j], last_writer[j]);
            snprintf(context, sizeof context,
                     "item %d guarded by lock %d after the phase's barrier (the model replays the "
                     "lock's log of %" PRIu64 " sections)", j, P.id[l], cnt);
            item_check(&P.guard[l][j], context);
        }
    }
    for (int i = 0; i < T.n; i++)
        for (int o = 0; o < P.ops[i]; o++) {
            const struct item *it = &P.published[i][o];
            item_model(it, published_value(&P, i, o, it->width), i);
            item_check(it, "a published item after the phase's barrier");
            T.sections++;
        }
    free_later(log, log_freer);
}

/* ---- Phase: barrier writes --------------------------------------------------- */

static void phase_barrier_writes(uint64_t *s)
{
    int rounds = 1 + (int)below(s, 3);
    size_t *words = xmalloc(T.total * sizeof *words);
    int *writer = xmalloc(T.total * sizeof *writer);
    for (int r = 0; r < rounds; r++) {
        uint64_t rs = splitmix(s), K = multiplier(splitmix(s));
        taken_reset();
        size_t nw = 0;
        int runs = 1 + (int)below(s, 16);
        for (int run = 0; run < runs; run++) {
            size_t start = (size_t)below(s, T.total), len = 1 + (size_t)below(s, 96);
            int w = (int)below(s, (uint64_t)T.n);
            for (size_t g = start; g < start + len && g < T.total; g++) {
                struct item it = word_item(g);
                if (range_free(it.k, it.off, 8, false)) {
                    range_mark(it.k, it.off, 8, TAKEN_WRITTEN);
                    words[nw] = g;
                    writer[nw++] = w;
                }
            }
        }
        char context[128];
        snprintf(context, sizeof context, "round %d: a word this node updates, before its update", r);
        for (size_t i = 0; i < nw; i++)
            if (writer[i] == T.me) {
                struct item it = word_item(words[i]);
                uint64_t x = item_check(&it, context);
                item_store(&it, x * K + mix(rs, words[i]));
                T.rmw_items++;
            }
        for (int t = 0; t < 8; t++) {
            struct item it = word_item((size_t)below(s, T.total));
            if (range_free(it.k, it.off, 8, false))
                item_check(&it, "a word no one writes in this round, read during it");
        }
        dsm_barrier();
        for (size_t i = 0; i < nw; i++) {
            struct item it = word_item(words[i]);
            item_model(&it, item_want(&it) * K + mix(rs, words[i]), writer[i]);
        }
        snprintf(context, sizeof context, "round %d: a word updated in the round, after its barrier", r);
        for (int t = 0; t < 32 && nw; t++) {
            struct item it = word_item(words[below(s, nw)]);
            item_check(&it, context);
        }
        if (r + 1 < rounds)
            dsm_barrier(); /* the checks above read what the next round writes */
    }
    free(words);
    free(writer);
}

/* ---- Phase: mixed sizes ------------------------------------------------------ */

/* One element a round writes: `width` bytes at `off` of object k, by
 * `writer`, a store or a read-modify-write. */
struct piece {
    int16_t k;
    uint8_t width;
    uint8_t rmw;
    int16_t writer;
    uint32_t off;
    uint64_t val;
};

/* A run of elements, read back after the round with loads of another size. */
struct span {
    int16_t k;
    uint8_t width;
    uint32_t off, len;
};

struct plan {
    struct piece *p;
    size_t n, cap;
    struct span sp[MAX_SPANS];
    int nsp;
};

/* The new bytes of a piece, given its old ones (read-modify-writes
 * depend on them, stores do not). */
static void piece_new(const struct piece *pc, const unsigned char *old, unsigned char *out)
{
    uint64_t vs = pc->val;
    for (int i = 0; i < pc->width; i += 8) {
        uint64_t r = splitmix(&vs);
        for (int j = 0; j < 8 && i + j < pc->width; j++)
            out[i + j] = (unsigned char)(r >> (8 * j));
    }
    if (pc->rmw)
        for (int i = 0; i < pc->width; i++)
            out[i] = (unsigned char)(old[i] * 0x1d + out[i] + i);
}

static void plan_push(struct plan *pl, struct piece pc)
{
    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? 2 * pl->cap : 256;
        pl->p = realloc(pl->p, pl->cap * sizeof *pl->p);
        if (!pl->p)
            out_of_memory();
    }
    pl->p[pl->n++] = pc;
}

/* OpenMP's static split of n among p: the first n % p blocks one longer. */
static int block_owner(size_t i, size_t n, int p)
{
    size_t q = n / (size_t)p, rem = n % (size_t)p, big = rem * (q + 1);
    if (i < big)
        return (int)(i / (q + 1));
    return (int)(rem + (i - big) / (q ? q : 1));
}

/* A run of `count` elements of `width` bytes from byte `start` of object
 * k, each free one taken and given a writer: round-robin (neighbours on
 * different nodes, or threads of one), in blocks (OpenMP's static split),
 * at random, or all one participant's. */
static void plan_run(uint64_t *s, struct plan *pl, int k, size_t start, size_t count, int width,
                     bool rmw)
{
    int mode = (int)below(s, 4), shift = (int)below(s, (uint64_t)T.n), one = (int)below(s, (uint64_t)T.n);
    uint64_t vs = splitmix(s);
    for (size_t i = 0; i < count && pl->n < MAX_PIECES; i++) {
        size_t off = start + i * (size_t)width;
        if (!range_free(k, off, (size_t)width, false))
            continue;
        range_mark(k, off, (size_t)width, TAKEN_WRITTEN);
        int w = mode == 0 ? (int)((i + (size_t)shift) % (size_t)T.n)
              : mode == 1 ? block_owner(i, count, T.n)
              : mode == 2 ? (int)(mix(vs, i) % (uint64_t)T.n) : one;
        plan_push(pl, (struct piece){.k = (int16_t)k, .width = (uint8_t)width, .rmw = rmw,
                                     .writer = (int16_t)w, .off = (uint32_t)off, .val = mix(vs, i + 77)});
    }
    if (pl->nsp < MAX_SPANS && count)
        pl->sp[pl->nsp++] = (struct span){.k = (int16_t)k, .width = (uint8_t)width,
                                          .off = (uint32_t)start, .len = (uint32_t)(count * (size_t)width)};
}

static int random_width(uint64_t *s)
{
    static const int widths[] = {1, 1, 2, 2, 4, 8, 16};
    return widths[below(s, 7)];
}

/* A run of elements somewhere: aligned to their size or not, a third of
 * the time across a page boundary of the object (its pages are the
 * system's: objects of a page or more are page-aligned). */
static void plan_random_run(uint64_t *s, struct plan *pl)
{
    int k = pick_object(s);
    const struct object *o = &T.obj[k];
    int width = random_width(s);
    while ((size_t)width > o->bytes)
        width /= 2;
    bool aligned = below(s, 3) != 0;
    size_t most = o->bytes / (size_t)width;
    if (most > 2 * T.page_size / (size_t)width)
        most = 2 * T.page_size / (size_t)width;
    size_t count = below(s, 2) ? 1 + (size_t)below(s, most < 16 ? most : 16) : 1 + (size_t)below(s, most);
    size_t len = count * (size_t)width, start;
    if (o->bytes > T.page_size && below(s, 3) == 0) {
        size_t boundary = T.page_size * (1 + (size_t)below(s, (o->bytes - 1) / T.page_size));
        size_t before = (size_t)below(s, len);
        start = boundary > before ? boundary - before : 0;
    } else {
        start = (size_t)below(s, o->bytes - len + 1);
    }
    if (start + len > o->bytes)
        start = o->bytes - len;
    if (aligned)
        start -= start % (size_t)width;
    else if (width > 1 && start % (size_t)width == 0 && start + len < o->bytes)
        start += 1 + (size_t)below(s, (uint64_t)width - 1 < o->bytes - len - start
                                         ? (uint64_t)width - 1 : o->bytes - len - start);
    plan_run(s, pl, k, start, count, width, below(s, 3) == 0);
}

/* This participant's pieces of the plan: read-modify-writes checked
 * against the model first, then each written with one store of its size,
 * then a few read back. */
static void run_pieces(const struct plan *pl, const char *what)
{
    unsigned char old[16], val[16], got[16];
    char context[160];
    for (size_t i = 0; i < pl->n; i++) {
        const struct piece *pc = &pl->p[i];
        if (pc->writer != T.me)
            continue;
        unsigned char *p = T.obj[pc->k].p + pc->off;
        const unsigned char *model = T.obj[pc->k].want + pc->off;
        if (pc->rmw) {
            load_w(p, old, pc->width);
            if (memcmp(old, model, pc->width) != 0) {
                snprintf(context, sizeof context, "%s: a %d-byte element this participant "
                         "updates, read before its update", what, pc->width);
                check_range(pc->k, pc->off, pc->width, pc->width, context);
            }
        }
        piece_new(pc, model, val);
        store_w(p, val, pc->width);
        T.pieces++;
    }
    /* its own writes, as it sees them (every 7th) */
    size_t seen = 0;
    for (size_t i = 0; i < pl->n; i++) {
        const struct piece *pc = &pl->p[i];
        if (pc->writer != T.me || seen++ % 7)
            continue;
        piece_new(pc, T.obj[pc->k].want + pc->off, val);
        load_w(T.obj[pc->k].p + pc->off, got, pc->width);
        if (memcmp(got, val, pc->width) != 0) {
            int j = 0;
            while (got[j] == val[j])
                j++;
            fail("%s: this participant's own %d-byte write at %s reads back before the barrier "
                 "with byte %u 0x%02x, not 0x%02x (before the round %s)", what, pc->width,
                 where(pc->k, pc->off, pc->width), pc->off + (unsigned)j, got[j], val[j],
                 history(pc->k, pc->off + (size_t)j));
        }
    }
}

/* After the round's barrier: every piece into the model. */
static void model_pieces(const struct plan *pl)
{
    unsigned char val[16];
    for (size_t i = 0; i < pl->n; i++) {
        const struct piece *pc = &pl->p[i];
        piece_new(pc, T.obj[pc->k].want + pc->off, val);
        model_set(pc->k, pc->off, val, pc->width, pc->writer);
    }
}

/* Reads of bytes no one writes in the round (during it), or of anything
 * (after it), at random sizes, offsets and lengths. */
static void random_reads(uint64_t *s, int tries, bool during, const char *context)
{
    for (int t = 0; t < tries; t++) {
        int k = pick_object(s);
        size_t bytes = T.obj[k].bytes, len = 1 + (size_t)below(s, bytes < 96 ? bytes : 96);
        size_t off = (size_t)below(s, bytes - len + 1);
        int width = random_width(s);
        if (!during || range_free(k, off, len, true))
            check_range(k, off, len, width, context);
    }
}

static void phase_sizes(uint64_t *s)
{
    struct plan *pl = T.plan;
    int rounds = 1 + (int)below(s, 3);
    char context[160];
    for (int r = 0; r < rounds; r++) {
        taken_reset();
        pl->n = 0;
        pl->nsp = 0;
        int runs = 1 + (int)below(s, 6);
        for (int i = 0; i < runs; i++)
            plan_random_run(s, pl);
        snprintf(context, sizeof context, "round %d", r);
        run_pieces(pl, context);
        random_reads(s, 8, true, "a byte no one writes in this round, read during it");
        dsm_barrier();
        model_pieces(pl);
        /* Each run read back with loads of another size: written as bytes,
         * read as words, and the other way. */
        for (int i = 0; i < pl->nsp; i++) {
            const struct span *sp = &pl->sp[i];
            int width;
            do
                width = random_width(s);
            while (width == sp->width);
            snprintf(context, sizeof context, "round %d: a run of %d-byte elements after the "
                     "barrier, read in %d-byte loads", r, sp->width, width);
            check_range(sp->k, sp->off, sp->len, width, context);
        }
        random_reads(s, 16, false, "bytes anywhere after the round's barrier");
        if (r + 1 < rounds)
            dsm_barrier(); /* the checks above read what the next round writes */
    }
}

/* ---- Phase: memory functions ------------------------------------------------- */

/* Structs to assign: packed ones of odd sizes at any alignment, aligned
 * ones (no padding, so every byte is a member's) where their alignment is. */
struct __attribute__((packed)) st3 { char c[3]; };
struct __attribute__((packed)) st7 { uint32_t a; uint16_t b; uint8_t c; };
struct __attribute__((packed)) st13 { uint64_t a; uint32_t b; uint8_t c; };
struct st16 { uint64_t a; uint32_t b; uint16_t c; uint8_t d, e; };
struct st24 { uint64_t a, b; uint32_t c, d; };
struct __attribute__((packed)) st100 { uint32_t a[25]; };
struct st264 { uint64_t a[33]; };
struct __attribute__((packed)) st4099 { char c[4099]; };
#define STRUCTS(X) X(st3) X(st7) X(st13) X(st16) X(st24) X(st100) X(st264) X(st4099)
#define STRUCT_SIZE(t) sizeof(struct t),
#define STRUCT_ALIGN(t) _Alignof(struct t),
static const size_t struct_size[] = {STRUCTS(STRUCT_SIZE)};
static const size_t struct_align[] = {STRUCTS(STRUCT_ALIGN)};
#define NSTRUCTS (sizeof struct_size / sizeof *struct_size)

static void assign_struct(int t, void *dst, const void *src)
{
    int i = 0;
#define STRUCT_ASSIGN(name)                                                                    \
    if (t == i++) {                                                                            \
        *(struct name *)dst = *(const struct name *)src;                                       \
        return;                                                                                \
    }
    STRUCTS(STRUCT_ASSIGN)
#undef STRUCT_ASSIGN
}

enum memop_kind { MO_MEMSET, MO_MEMCPY, MO_MEMMOVE, MO_STRCPY, MO_STRNCPY, MO_STRCAT, MO_STRUCT, MO_KINDS };
static const char *const memop_name[MO_KINDS] = {"memset", "memcpy", "memmove", "strcpy",
                                                 "strncpy", "strcat", "struct assignment"};

/* One call: into [off, off + len) of object k (its writer's alone this
 * round), from a private buffer made from `seed` or from bytes of object
 * sk (sk >= 0) that no one writes in the round. */
struct memop {
    uint8_t kind, type;     /* type: the struct's index */
    int16_t k, sk, writer;
    size_t off, len, soff;
    size_t a, b, n;         /* memmove: dst + a, src + b, n bytes; strcat: the two lengths */
    uint64_t seed;
};

/* The private source of an op: `len` bytes; a string's are non-zero but
 * for the terminator at `nul` (len when none). */
static void private_source(const struct memop *m, unsigned char *buf, size_t len, size_t nul)
{
    uint64_t s = m->seed;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = splitmix(&s);
        for (size_t j = 0; j < 8 && i + j < len; j++)
            buf[i + j] = (unsigned char)(r >> (8 * j));
    }
    if (m->kind == MO_STRCPY || m->kind == MO_STRCAT || m->kind == MO_STRNCPY)
        for (size_t i = 0; i < len; i++)
            buf[i] = i == nul ? 0 : buf[i] ? buf[i] : 'x';
}

/* Runs op m with dst and (shared) src as given: on shared memory by its
 * writer, on the model's bytes by everyone. `priv` is a scratch buffer. */
static void memop_run(const struct memop *m, unsigned char *dst, const unsigned char *src,
                      unsigned char *priv)
{
    switch (m->kind) {
    case MO_MEMSET:
        memset(dst, (int)(m->seed & 0xff), m->len);
        break;
    case MO_MEMCPY:
        if (!src) {
            private_source(m, priv, m->len, m->len);
            src = priv;
        }
        memcpy(dst, src, m->len);
        break;
    case MO_MEMMOVE:
        memmove(dst + m->a, dst + m->b, m->n);
        break;
    case MO_STRCPY:
        if (!src) {
            private_source(m, priv, m->len, m->len - 1);
            src = priv;
        }
        strcpy((char *)dst, (const char *)src);
        break;
    case MO_STRNCPY:
        if (!src) {
            private_source(m, priv, m->len, m->n);
            src = priv;
        }
        strncpy((char *)dst, (const char *)src, m->len);
        break;
    case MO_STRCAT:
        private_source(m, priv, m->b + 1, m->b);
        strcat((char *)dst, (const char *)priv);
        break;
    default:
        if (!src) {
            private_source(m, priv, m->len, m->len);
            src = priv;
        }
        assign_struct(m->type, dst, src);
        break;
    }
}

/* A free destination of `len` bytes aligned to `align`: random probes,
 * some across a page boundary of the object. */
static bool take_dst(uint64_t *s, size_t len, size_t align, int *kp, size_t *offp)
{
    for (int t = 0; t < 8; t++) {
        int k = pick_object(s);
        const struct object *o = &T.obj[k];
        if (o->bytes < len + align)
            continue;
        size_t off;
        if (o->bytes > T.page_size && below(s, 3) == 0) {
            size_t boundary = T.page_size * (1 + (size_t)below(s, (o->bytes - 1) / T.page_size));
            size_t before = 1 + (size_t)below(s, len);
            off = boundary > before ? boundary - before : 0;
            if (off + len > o->bytes)
                off = o->bytes - len;
        } else {
            off = (size_t)below(s, o->bytes - len + 1);
        }
        off -= off % align;
        if (range_free(k, off, len, false)) {
            range_mark(k, off, len, TAKEN_WRITTEN);
            *kp = k;
            *offp = off;
            return true;
        }
    }
    return false;
}

/* A source of `len` bytes aligned to `align` that no one writes in the
 * round (others may read it too). */
static bool take_src(uint64_t *s, size_t len, size_t align, int *kp, size_t *offp)
{
    for (int t = 0; t < 4; t++) {
        int k = pick_object(s);
        const struct object *o = &T.obj[k];
        if (o->bytes < len + align)
            continue;
        size_t off = (size_t)below(s, o->bytes - len + 1);
        off -= off % align;
        if (range_free(k, off, len, true)) {
            range_mark(k, off, len, TAKEN_READ);
            *kp = k;
            *offp = off;
            return true;
        }
    }
    return false;
}

/* A length: mostly short, sometimes up to three pages. */
static size_t random_len(uint64_t *s)
{
    uint64_t r = below(s, 8);
    return r < 5 ? 1 + (size_t)below(s, 64) : r < 7 ? 1 + (size_t)below(s, 1024)
                                                    : 1 + (size_t)below(s, 3 * T.page_size);
}

/* Plans one op of a random kind, or none when no room is found. */
static bool plan_memop(uint64_t *s, struct memop *m)
{
    memset(m, 0, sizeof *m);
    m->kind = (uint8_t)below(s, MO_KINDS);
    m->writer = (int16_t)below(s, (uint64_t)T.n);
    m->seed = splitmix(s);
    m->sk = -1;
    int k;
    size_t off, align = 1;
    bool shared_src = below(s, 2);
    switch (m->kind) {
    case MO_MEMSET:
    case MO_MEMCPY:
        m->len = random_len(s);
        break;
    case MO_MEMMOVE:
        m->len = 2 + random_len(s);
        m->n = 1 + (size_t)below(s, m->len - 1);
        m->a = (size_t)below(s, m->len - m->n + 1);
        m->b = (size_t)below(s, m->len - m->n + 1); /* overlapping or not, either direction */
        break;
    case MO_STRCPY:
        if (shared_src) {
            /* a string already in shared memory: its terminator within reach */
            size_t room = 1 + (size_t)below(s, 256);
            if (!take_src(s, room, 1, &k, &off))
                return false;
            const unsigned char *w = T.obj[k].want + off;
            size_t l = strnlen((const char *)w, room);
            if (l == room) { /* none: the bytes stay read, the string comes from a buffer */
                shared_src = false;
                m->len = 1 + (size_t)below(s, 300);
            } else {
                m->sk = (int16_t)k;
                m->soff = off;
                m->len = l + 1;
            }
        } else {
            m->len = 1 + (size_t)below(s, 300);
        }
        break;
    case MO_STRNCPY:
        m->len = 1 + (size_t)below(s, below(s, 4) ? 128 : 2 * T.page_size);
        m->n = (size_t)below(s, m->len + 1); /* a private source's terminator; len: none */
        break;
    case MO_STRCAT:
        m->len = 2 + (size_t)below(s, 300);
        break;
    default:
        m->type = (uint8_t)below(s, NSTRUCTS);
        m->len = struct_size[m->type];
        align = struct_align[m->type];
        break;
    }
    if (!take_dst(s, m->len, align, &k, &off))
        return false;
    m->k = (int16_t)k;
    m->off = off;
    if (m->kind == MO_STRCAT) {
        /* the string the destination holds, and one that fits after it */
        size_t l1 = strnlen((const char *)T.obj[k].want + off, m->len);
        if (l1 + 1 >= m->len) {
            m->kind = MO_MEMSET; /* no room: the destination is set instead */
            return true;
        }
        m->a = l1;
        m->b = (size_t)below(s, m->len - l1); /* l1 + b + 1 <= len */
        return true;
    }
    if (shared_src && m->sk < 0 && (m->kind == MO_MEMCPY || m->kind == MO_STRNCPY || m->kind == MO_STRUCT)) {
        if (take_src(s, m->len, align, &k, &off)) {
            m->sk = (int16_t)k;
            m->soff = off;
        }
    }
    return true;
}

/* The bytes an op writes: [off + lo, off + hi). */
static void memop_written(const struct memop *m, size_t *lo, size_t *hi)
{
    *lo = 0;
    *hi = m->len;
    if (m->kind == MO_MEMMOVE) {
        *lo = m->a;
        *hi = m->a + m->n;
    } else if (m->kind == MO_STRCAT) {
        *lo = m->a;
        *hi = m->a + m->b + 1;
    }
}

static void phase_memory_functions(uint64_t *s)
{
    static __thread struct memop ops[MAX_MEMOPS];
    int rounds = 1 + (int)below(s, 2);
    char context[200];
    for (int r = 0; r < rounds; r++) {
        taken_reset();
        int nops = 0, want = 1 + (int)below(s, MAX_MEMOPS);
        for (int i = 0; i < want; i++)
            if (plan_memop(s, &ops[nops]))
                nops++;
        for (int i = 0; i < nops; i++) {
            const struct memop *m = &ops[i];
            if (m->writer != T.me)
                continue;
            snprintf(context, sizeof context, "round %d: the source of a %s of %zu bytes into %s, "
                     "read before it", r, memop_name[m->kind], m->len, where(m->k, m->off, m->len));
            const unsigned char *src = NULL;
            if (m->sk >= 0) {
                check_range(m->sk, m->soff, m->len, 8, context); /* (a string's terminator too) */
                src = T.obj[m->sk].p + m->soff;
            }
            if (m->kind == MO_STRCAT || m->kind == MO_MEMMOVE) /* they read their destination */
                check_range(m->k, m->off, m->len, 8, context);
            memop_run(m, T.obj[m->k].p + m->off, src, T.scratch[0]);
            T.memops++;
            /* what it wrote, as this participant sees it at once */
            unsigned char *expect = T.scratch[1];
            memcpy(expect, T.obj[m->k].want + m->off, m->len);
            memop_run(m, expect, m->sk >= 0 ? T.obj[m->sk].want + m->soff : NULL, T.scratch[2]);
            const unsigned char *got = T.obj[m->k].p + m->off;
            for (size_t b = 0; b < m->len; b++)
                if (got[b] != expect[b])
                    fail("round %d: this participant's %s of %zu bytes into %s: byte %zu reads "
                         "0x%02x just after it, not 0x%02x", r, memop_name[m->kind], m->len,
                         where(m->k, m->off, m->len), m->off + b, got[b], expect[b]);
        }
        /* Bytes no one writes, compared whole and as strings meanwhile. */
        for (int t = 0; t < 4; t++) {
            int k = pick_object(s);
            size_t len = 1 + (size_t)below(s, T.obj[k].bytes < 512 ? T.obj[k].bytes : 512);
            size_t off = (size_t)below(s, T.obj[k].bytes - len + 1);
            if (!range_free(k, off, len, true))
                continue;
            if (memcmp(T.obj[k].p + off, T.obj[k].want + off, len) != 0)
                check_range(k, off, len, 1, "bytes no one writes in this round, compared during it");
            size_t l = strnlen((const char *)T.obj[k].p + off, len);
            if (l != strnlen((const char *)T.obj[k].want + off, len))
                check_range(k, off, len, 1, "a string no one writes in this round, measured during it");
        }
        dsm_barrier();
        /* The model: every op on its bytes (destinations are disjoint, and
         * sources unchanged in the round, so the order does not matter). */
        for (int i = 0; i < nops; i++) {
            const struct memop *m = &ops[i];
            memop_run(m, T.obj[m->k].want + m->off, m->sk >= 0 ? T.obj[m->sk].want + m->soff : NULL,
                      T.scratch[0]);
            size_t lo, hi;
            memop_written(m, &lo, &hi);
            mark_written(m->k, m->off + lo, hi - lo, m->writer);
        }
        for (int i = 0; i < nops; i++) {
            const struct memop *m = &ops[i];
            snprintf(context, sizeof context, "round %d: the destination of %s's %s of %zu bytes, "
                     "after the barrier", r, participant_name(m->writer), memop_name[m->kind], m->len);
            check_range(m->k, m->off, m->len, random_width(s), context);
        }
        random_reads(s, 8, false, "bytes anywhere after the round's barrier");
        if (r + 1 < rounds)
            dsm_barrier();
    }
}

/* ---- Phase: atomics ------------------------------------------------------------ */

static aval at_load(void *p, int w)
{
    switch (w) {
    case 1: return (uint8_t)__tsan_atomic8_load(p, MO_SEQ_CST);
    case 2: return (uint16_t)__tsan_atomic16_load(p, MO_SEQ_CST);
    case 4: return (uint32_t)__tsan_atomic32_load(p, MO_SEQ_CST);
    case 8: return (uint64_t)__tsan_atomic64_load(p, MO_SEQ_CST);
#if ATOMIC16
    default: return (aval)__tsan_atomic128_load(p, MO_SEQ_CST);
#else
    default: abort();
#endif
    }
}

static void at_store(void *p, int w, aval v)
{
    switch (w) {
    case 1: __tsan_atomic8_store(p, (char)v, MO_SEQ_CST); break;
    case 2: __tsan_atomic16_store(p, (short)v, MO_SEQ_CST); break;
    case 4: __tsan_atomic32_store(p, (int)v, MO_SEQ_CST); break;
    case 8: __tsan_atomic64_store(p, (long)v, MO_SEQ_CST); break;
#if ATOMIC16
    default: __tsan_atomic128_store(p, (__int128)v, MO_SEQ_CST); break;
#else
    default: abort();
#endif
    }
}

enum at_op { AT_XCHG, AT_ADD, AT_SUB, AT_AND, AT_OR, AT_XOR, AT_NAND };

#define AT_RMW(N, T, U)                                                                        \
    switch (op) {                                                                              \
    case AT_XCHG: return (U)__tsan_atomic##N##_exchange(p, (T)v, MO_SEQ_CST);                  \
    case AT_ADD: return (U)__tsan_atomic##N##_fetch_add(p, (T)v, MO_SEQ_CST);                  \
    case AT_SUB: return (U)__tsan_atomic##N##_fetch_sub(p, (T)v, MO_SEQ_CST);                  \
    case AT_AND: return (U)__tsan_atomic##N##_fetch_and(p, (T)v, MO_SEQ_CST);                  \
    case AT_OR: return (U)__tsan_atomic##N##_fetch_or(p, (T)v, MO_SEQ_CST);                    \
    case AT_XOR: return (U)__tsan_atomic##N##_fetch_xor(p, (T)v, MO_SEQ_CST);                  \
    default: return (U)__tsan_atomic##N##_fetch_nand(p, (T)v, MO_SEQ_CST);                    \
    }

/* A read-modify-write; returns the old value. */
static aval at_rmw(enum at_op op, void *p, int w, aval v)
{
    switch (w) {
    case 1: AT_RMW(8, char, uint8_t)
    case 2: AT_RMW(16, short, uint16_t)
    case 4: AT_RMW(32, int, uint32_t)
    case 8: AT_RMW(64, long, uint64_t)
#if ATOMIC16
    default: AT_RMW(128, __int128, aval)
#else
    default: abort();
#endif
    }
}

/* A compare-and-swap (strong or weak: dsm's never fails spuriously, the
 * hardware's weak one may, so a weak one is retried while it fails and
 * the value is still the expected one); returns whether it swapped, and
 * leaves the value seen in *expected. */
#define AT_CAS(N, T, U)                                                                        \
    {                                                                                          \
        T c = (T)*expected;                                                                    \
        int ok;                                                                                \
        do {                                                                                   \
            c = (T)*expected;                                                                  \
            ok = weak ? __tsan_atomic##N##_compare_exchange_weak(p, &c, (T)desired, MO_SEQ_CST, \
                                                                 MO_SEQ_CST)                   \
                      : __tsan_atomic##N##_compare_exchange_strong(p, &c, (T)desired,          \
                                                                   MO_SEQ_CST, MO_SEQ_CST);    \
        } while (!ok && weak && (U)c == (U)*expected);                                         \
        *expected = (U)c;                                                                      \
        return ok;                                                                             \
    }

static bool at_cas(void *p, int w, aval *expected, aval desired, bool weak)
{
    switch (w) {
    case 1: AT_CAS(8, char, uint8_t)
    case 2: AT_CAS(16, short, uint16_t)
    case 4: AT_CAS(32, int, uint32_t)
    case 8: AT_CAS(64, long, uint64_t)
#if ATOMIC16
    default: AT_CAS(128, __int128, aval)
#else
    default: abort();
#endif
    }
}

static aval at_cas_val(void *p, int w, aval expected, aval desired)
{
    switch (w) {
    case 1: return (uint8_t)__tsan_atomic8_compare_exchange_val(p, (char)expected, (char)desired, MO_SEQ_CST, MO_SEQ_CST);
    case 2: return (uint16_t)__tsan_atomic16_compare_exchange_val(p, (short)expected, (short)desired, MO_SEQ_CST, MO_SEQ_CST);
    case 4: return (uint32_t)__tsan_atomic32_compare_exchange_val(p, (int)expected, (int)desired, MO_SEQ_CST, MO_SEQ_CST);
    case 8: return (uint64_t)__tsan_atomic64_compare_exchange_val(p, (long)expected, (long)desired, MO_SEQ_CST, MO_SEQ_CST);
#if ATOMIC16
    default: return (aval)__tsan_atomic128_compare_exchange_val(p, (__int128)expected, (__int128)desired, MO_SEQ_CST, MO_SEQ_CST);
#else
    default: abort();
#endif
    }
}

static aval amask(int w) { return w >= (int)sizeof(aval) ? ~(aval)0 : ((aval)1 << (8 * w)) - 1; }

static aval aval_of(uint64_t a, uint64_t b, int w)
{
    aval v = a;
#if ATOMIC16
    v |= (aval)b << 64;
#else
    (void)b;
#endif
    return v & amask(w);
}

static aval model_aval(int k, size_t off, int w)
{
    aval v = 0;
    memcpy(&v, T.obj[k].want + off, (size_t)w); /* the slot's bytes as a native value (below) */
    return v;
}

/* Stores a native value of w bytes as the memory a w-byte store makes:
 * the low w bytes of v in memory order on a little-endian machine, which
 * every host dsm runs on is (x86-64, aarch64). */
static void aval_bytes(aval v, int w, unsigned char *out) { memcpy(out, &v, (size_t)w); }

enum slot_class { SLOT_ADD, SLOT_BITS, SLOT_SOLO, SLOT_LOAD, SLOT_CLASSES };
static const char *const slot_class_name[SLOT_CLASSES] = {"adds", "own bits", "one owner's",
                                                          "loads"};

/* An atomic variable of the phase: width bytes at off of object k (aligned
 * to its size), what is done to it, and by whom. */
struct slot {
    int16_t k;
    uint8_t width, cls;
    int16_t owner; /* SLOT_SOLO */
    uint32_t off;
    uint64_t seed;
};

/* Participant i's operations on slot x: the number, and the i-th's value. */
static int slot_ops(const struct slot *x, int i) { return (int)(mix(x->seed, (uint64_t)i) % 4); }

static aval slot_value(const struct slot *x, int i, int j)
{
    return aval_of(mix(x->seed, 1000 + (uint64_t)i * 64 + (uint64_t)j),
                   mix(x->seed, 5000 + (uint64_t)i * 64 + (uint64_t)j), x->width);
}

/* The bits of a w-byte slot that participant i owns: every n-th. */
static aval own_bits(int w, int i, int n)
{
    aval m = 0;
    for (int b = i; b < 8 * w; b += n)
        m |= (aval)1 << b;
    return m;
}

/* What participant i's j-th operation on a SLOT_ADD slot adds (a
 * subtract adds the negation), and on a SLOT_BITS slot does to its bits. */
static int add_kind(const struct slot *x, int i, int j) { return (int)(mix(x->seed ^ 0xadd, (uint64_t)i * 64 + (uint64_t)j) % 4); }

/* A SLOT_BITS operation: 0 or, 1 xor, 2 and-not, with the value's bits
 * that the participant owns. */
static aval bits_apply(int kind, aval cur, aval m)
{
    return kind == 0 ? (cur | m) : kind == 1 ? (cur ^ m) : (cur & ~m);
}

/* The final value of a slot after every participant's operations. */
static aval slot_final(const struct slot *x, aval init)
{
    aval v = init;
    int w = x->width;
    switch (x->cls) {
    case SLOT_ADD:
        for (int i = 0; i < T.n; i++)
            for (int j = 0; j < slot_ops(x, i); j++) {
                aval d = slot_value(x, i, j);
                v = add_kind(x, i, j) == 1 ? v - d : v + d;
            }
        break;
    case SLOT_BITS:
        for (int i = 0; i < T.n; i++)
            for (int j = 0; j < slot_ops(x, i); j++)
                v = bits_apply(add_kind(x, i, j) % 3, v, slot_value(x, i, j) & own_bits(w, i, T.n));
        break;
    case SLOT_SOLO: {
        aval v5 = slot_value(x, 0, 5), v6 = slot_value(x, 0, 6);
        v = ~(v5 & v6);
        break;
    }
    default:
        break;
    }
    return v & amask(w);
}

static void fail_atomic(const struct slot *x, const char *what, aval got, aval expected)
{
    fail("an atomic of %d bytes (%s) at %s: %s: 0x%016" PRIx64 "%016" PRIx64 ", expected 0x%016" PRIx64
         "%016" PRIx64, x->width, slot_class_name[x->cls], where(x->k, x->off, x->width), what,
#if ATOMIC16
         (uint64_t)(got >> 64), (uint64_t)got, (uint64_t)(expected >> 64), (uint64_t)expected
#else
         (uint64_t)0, (uint64_t)got, (uint64_t)0, (uint64_t)expected
#endif
    );
}

/* This participant's operations on slot x. */
static void slot_run(const struct slot *x, aval init)
{
    void *p = T.obj[x->k].p + x->off;
    int w = x->width;
    switch (x->cls) {
    case SLOT_ADD:
        for (int j = 0; j < slot_ops(x, T.me); j++) {
            aval d = slot_value(x, T.me, j);
            switch (add_kind(x, T.me, j)) {
            case 0: at_rmw(AT_ADD, p, w, d); break;
            case 1: at_rmw(AT_SUB, p, w, d); break;
            default: { /* a compare-and-swap loop, as a program's own add */
                aval cur = at_load(p, w);
                while (!at_cas(p, w, &cur, (cur + d) & amask(w), add_kind(x, T.me, j) == 3))
                    ;
                break;
            }
            }
            T.atomics++;
        }
        break;
    case SLOT_BITS: {
        aval mine = own_bits(w, T.me, T.n), expect = init & mine;
        for (int j = 0; j < slot_ops(x, T.me); j++) {
            aval m = slot_value(x, T.me, j) & mine;
            int kind = add_kind(x, T.me, j) % 3;
            aval old = at_rmw(kind == 0 ? AT_OR : kind == 1 ? AT_XOR : AT_AND, p, w,
                              kind == 2 ? (~m & amask(w)) : m);
            if ((old & mine) != expect)
                fail_atomic(x, "this participant's own bits, as its next operation found them",
                            old & mine, expect);
            expect = bits_apply(kind, expect, m) & mine;
            aval now = at_load(p, w) & mine;
            if (now != expect)
                fail_atomic(x, "this participant's own bits, loaded after its operation", now, expect);
            T.atomics += 2;
        }
        break;
    }
    case SLOT_SOLO: {
        if (x->owner != T.me)
            break;
        aval v1 = slot_value(x, 0, 1), v2 = slot_value(x, 0, 2), v3 = slot_value(x, 0, 3);
        aval v4 = slot_value(x, 0, 4), v5 = slot_value(x, 0, 5), v6 = slot_value(x, 0, 6);
        at_store(p, w, v1);
        aval got = at_rmw(AT_XCHG, p, w, v2);
        if (got != v1)
            fail_atomic(x, "an exchange after a store returned", got, v1);
        aval c = v2;
        if (!at_cas(p, w, &c, v3, false))
            fail_atomic(x, "a compare-and-swap that must succeed failed, seeing", c, v2);
        c = v3 ^ 1;
        if (at_cas(p, w, &c, v4, false) || c != v3)
            fail_atomic(x, "a compare-and-swap that must fail (it expects another value) saw", c, v3);
        got = at_cas_val(p, w, v3, v5);
        if (got != v3)
            fail_atomic(x, "a compare-and-swap (value) returned", got, v3);
        got = at_rmw(AT_NAND, p, w, v6);
        if (got != v5)
            fail_atomic(x, "a nand returned", got, v5);
        got = at_load(p, w);
        if (got != (~(v5 & v6) & amask(w)))
            fail_atomic(x, "a load after a nand", got, ~(v5 & v6) & amask(w));
        T.atomics += 7;
        break;
    }
    default: {
        aval got = at_load(p, w);
        if (got != init)
            fail_atomic(x, "an atomic load of a value no one changes in this phase", got, init);
        T.atomics++;
        break;
    }
    }
}

static void phase_atomics(uint64_t *s)
{
    struct plan *pl = T.plan;
    struct slot slots[MAX_SLOTS];
    taken_reset();
    pl->n = 0;
    pl->nsp = 0;
    int nslots = 0, want = 1 + (int)below(s, MAX_SLOTS);
    for (int i = 0; i < want; i++) {
        static const int widths[] = {1, 2, 4, 8, 16};
        int w = widths[below(s, ATOMIC16 ? 5 : 4)];
        int k = pick_object(s);
        const struct object *o = &T.obj[k];
        if (o->bytes < (size_t)w)
            continue;
        size_t off = (size_t)w * (size_t)below(s, o->bytes / (size_t)w);
        if (!range_free(k, off, (size_t)w, false))
            continue;
        range_mark(k, off, (size_t)w, TAKEN_WRITTEN);
        struct slot *x = &slots[nslots++];
        *x = (struct slot){.k = (int16_t)k, .width = (uint8_t)w, .cls = (uint8_t)below(s, SLOT_CLASSES),
                           .owner = (int16_t)below(s, (uint64_t)T.n), .off = (uint32_t)off,
                           .seed = splitmix(s)};
        /* Plain bytes of other writers beside it, in its word and page:
         * elements of 1, 2 or 4 bytes on either side, round-robin. */
        if (below(s, 3)) {
            static const int plain[] = {1, 1, 2, 4};
            int pw = plain[below(s, 4)];
            size_t lo = off >= 24 ? off - 24 : 0, hi = off + (size_t)w + 24;
            if (hi > o->bytes)
                hi = o->bytes;
            lo -= lo % (size_t)pw;
            plan_run(s, pl, k, lo, (hi - lo) / (size_t)pw, pw, below(s, 4) == 0);
        }
    }
    for (int r = (int)below(s, 3); r > 0; r--)
        plan_random_run(s, pl); /* and elsewhere */
    aval init[MAX_SLOTS];
    for (int i = 0; i < nslots; i++)
        init[i] = model_aval(slots[i].k, slots[i].off, slots[i].width);
    /* Half the plain writes before the atomics, half after. */
    struct plan half = *pl;
    half.n = pl->n / 2;
    run_pieces(&half, "plain bytes beside atomics");
    for (int i = 0; i < nslots; i++)
        slot_run(&slots[i], init[i]);
    half.p = pl->p + pl->n / 2;
    half.n = pl->n - pl->n / 2;
    run_pieces(&half, "plain bytes beside atomics");
    random_reads(s, 4, true, "a byte no one writes in this phase, read beside atomics");
    dsm_barrier();
    model_pieces(pl);
    char context[160];
    for (int i = 0; i < nslots; i++) {
        const struct slot *x = &slots[i];
        unsigned char b[16];
        aval_bytes(slot_final(x, init[i]), x->width, b);
        if (x->cls != SLOT_LOAD)
            model_set(x->k, x->off, b, x->width, x->cls == SLOT_SOLO ? x->owner : WHO_MANY);
        snprintf(context, sizeof context, "an atomic variable (%s) after the phase's barrier, "
                 "read plainly", slot_class_name[x->cls]);
        check_range(x->k, x->off, x->width, x->width, context);
    }
    for (int i = 0; i < pl->nsp; i++)
        check_range(pl->sp[i].k, pl->sp[i].off, pl->sp[i].len, random_width(s),
                    "plain bytes beside atomics, after the phase's barrier");
}

/* ---- Phase: condition ring ----------------------------------------------------- */

/* Reads item it, checks it against the model, and writes x*K + c. */
static void update_checked(const struct item *it, uint64_t K, uint64_t c, const char *context)
{
    uint64_t x = item_check(it, context);
    item_store(it, x * K + c);
    T.rmw_items++;
}

static void model_update(const struct item *it, uint64_t K, uint64_t c, int who)
{
    item_model(it, item_want(it) * K + c, who);
}

#define MAX_CHAIN_LOCKS 16
#define MAX_OWN 4

static void phase_ring(uint64_t *s)
{
    taken_reset();
    /* lock ids: the ring's, then the chain's M_j, then each writer's own */
    int id0 = (int)below(s, LOCK_POOL);
    int lock = LOCK_BASE + id0;
    bool per_node = below(s, 2);   /* one condition per node and signal, or one shared and broadcast */
    bool under_lock = below(s, 2); /* the holder's updates under the lock or between its two holds */
    int cond_base = COND_BASE + (int)below(s, LOCK_POOL);
    int perm[MAX_NODES];
    for (int i = 0; i < T.n; i++)
        perm[i] = i;
    for (int i = T.n - 1; i > 0; i--) {
        int j = (int)below(s, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* Half the time a chain, the pattern of issue 36's lrc defect: the ring
     * runs in descending node order with an owner A and a taker D last; A
     * first takes every lock M_j once, so it owns them without holding
     * them, and D takes them all while A takes in the ring's grants, whose
     * intervals (each writer makes some of its own under its own lock
     * before its turn) depend on each other across nodes. */
    size_t turn;
    take_word(s, &turn); /* (the ring's phase has words: T.total > 0) */
    bool chain = T.n >= 3 && below(s, 2);
    int A = -1, D = -1, nm = 0, nown = 0, sections = 0;
    struct item cw[MAX_CHAIN_LOCKS], own[MAX_NODES][MAX_OWN];
    if (chain) {
        A = (int)below(s, (uint64_t)T.n);
        D = (A + 1 + (int)below(s, (uint64_t)T.n - 1)) % T.n;
        int k = 0;
        for (int v = T.n - 1; v >= 0; v--)
            if (v != A && v != D)
                perm[k++] = v;
        perm[k++] = A;
        perm[k++] = D;
        int want_m = 4 + (int)below(s, MAX_CHAIN_LOCKS - 3);
        while (nm < want_m && take_item(s, &cw[nm]))
            nm++;
        nown = 1 + (int)below(s, MAX_OWN);
        for (int w = 0; w < T.n; w++)
            for (int i = 0; i < nown; i++)
                if (!take_item(s, &own[w][i]))
                    nown = i; /* a small program: fewer items of their own */
        sections = 1 + (int)below(s, 3);
    }
    int steps = T.n * (1 + (int)below(s, 2));
    struct item ring[MAX_RING];
    int nring = 0;
    int want = 1 + (int)below(s, MAX_RING);
    for (int j = 0; j < want && T.total > 0; j++)
        if (take_item(s, &ring[nring]))
            nring++;
    uint64_t K = multiplier(splitmix(s)), rs = splitmix(s);
    char context[128];
    if (chain) {
        if (T.me == A)
            for (int j = 0; j < nm; j++) {
                dsm_lock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                update_checked(&cw[j], K, mix(rs, 1000 + (uint64_t)j), "chain: a counter A updates");
                dsm_unlock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
            }
        for (int j = 0; j < nm; j++)
            model_update(&cw[j], K, mix(rs, 1000 + (uint64_t)j), A);
        dsm_barrier(); /* A owns the M_j now; the ring starts from here */
    }
    struct item turn_item = word_item(turn);
    uint64_t base = item_want(&turn_item);
    volatile uint64_t *tw = word_ptr(turn);
    for (int st = 0; st < steps; st++) {
        uint32_t mask = (uint32_t)mix(rs, (uint64_t)st) & ((1u << nring) - 1);
        int holder = perm[st % T.n];
        bool writer = chain && holder != A && holder != D;
        if (holder == T.me) {
            if (writer)
                for (int q = 0; q < sections; q++) {
                    int own_lock = LOCK_BASE + (id0 + 1 + MAX_CHAIN_LOCKS + T.me) % LOCK_POOL;
                    dsm_lock(own_lock);
                    for (int i = 0; i < nown; i++) {
                        uint64_t c = mix(rs, (uint64_t)(st * 8 + q) * 8 + (uint64_t)i + 5000);
                        update_checked(&own[T.me][i], K, c,
                                       "chain: an item of the writer's own, under its own lock");
                        model_update(&own[T.me][i], K, c, T.me);
                    }
                    dsm_unlock(own_lock);
                }
            if (chain && T.me == D && st < T.n)
                for (int j = 0; j < nm; j++) {
                    dsm_lock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                    update_checked(&cw[j], K, mix(rs, 2000 + (uint64_t)j),
                                   "chain: a counter A updated under its lock, D's update");
                    dsm_unlock(LOCK_BASE + (id0 + 1 + j) % LOCK_POOL);
                }
            int mycond = per_node ? cond_base + T.me : cond_base;
            dsm_lock(lock);
            while (*tw != base + (uint64_t)st) {
                uint64_t t = *tw;
                if (t - base > (uint64_t)st) /* (modulo 2^64, as the token counts) */
                    fail("condition ring, step %d: the token word at %p reads 0x%016" PRIx64
                         ", not one of the steps 0..%d after its start 0x%016" PRIx64,
                         st, (void *)tw, t, st, base);
                dsm_cond_wait(mycond, lock);
            }
            if (!under_lock)
                dsm_unlock(lock);
            snprintf(context, sizeof context,
                     "condition ring, step %d: an item the previous holders updated", st);
            for (int j = 0; j < nring; j++) {
                uint64_t x = item_check(&ring[j], context);
                if (mask >> j & 1) {
                    item_store(&ring[j], x * K + mix(rs, (uint64_t)st * 64 + (uint64_t)j));
                    T.rmw_items++;
                }
            }
            if (!under_lock)
                dsm_lock(lock);
            *tw = base + (uint64_t)st + 1;
            if (per_node)
                dsm_cond_signal(cond_base + perm[(st + 1) % T.n]);
            else
                dsm_cond_broadcast(cond_base);
            dsm_unlock(lock);
        }
        if (writer && holder != T.me) /* (the holder kept its model as it went) */
            for (int q = 0; q < sections; q++)
                for (int i = 0; i < nown; i++)
                    model_update(&own[holder][i], K,
                                 mix(rs, (uint64_t)(st * 8 + q) * 8 + (uint64_t)i + 5000), holder);
        if (chain && holder == D && st < T.n)
            for (int j = 0; j < nm; j++)
                model_update(&cw[j], K, mix(rs, 2000 + (uint64_t)j), D);
        for (int j = 0; j < nring; j++)
            if (mask >> j & 1)
                model_update(&ring[j], K, mix(rs, (uint64_t)st * 64 + (uint64_t)j), holder);
    }
    item_model(&turn_item, base + (uint64_t)steps, perm[(steps - 1) % T.n]);
    T.handoffs += steps;
}

/* ---- Phase: broadcasts ------------------------------------------------------------ */

static void phase_bcasts(uint64_t *s)
{
    taken_reset();
    static __thread unsigned char buf[BCAST_MAX];
    int count = 1 + (int)below(s, MAX_BCASTS);
    for (int b = 0; b < count; b++) {
        int root = (int)below(s, (uint64_t)T.n);
        size_t len = below(s, 4) == 0 ? 1 + (size_t)below(s, BCAST_MAX) : 1 + (size_t)below(s, 256);
        uint64_t bs = splitmix(s), K = multiplier(splitmix(s));
        struct item items[MAX_BWORDS];
        int nw = 0, want = (int)below(s, MAX_BWORDS + 1);
        for (int j = 0; j < want; j++)
            if (take_item(s, &items[nw])) /* disjoint from earlier bcasts': they are read meanwhile */
                nw++;
        if (root == T.me) {
            for (int j = 0; j < nw; j++) {
                uint64_t x = item_check(&items[j], "an item a bcast's root updates, before its update");
                item_store(&items[j], x * K + mix(bs, (uint64_t)j));
                T.rmw_items++;
            }
            uint64_t fs = bs;
            for (size_t i = 0; i < len; i++)
                buf[i] = (unsigned char)splitmix(&fs);
        } else {
            memset(buf, 0, len);
        }
        dsm_bcast(buf, len, root);
        uint64_t fs = bs;
        for (size_t i = 0; i < len; i++) {
            unsigned char expect = (unsigned char)splitmix(&fs);
            if (buf[i] != expect)
                fail("bcast %d of %zu bytes from node %d: byte %zu is 0x%02x, expected 0x%02x",
                     b, len, root, i, buf[i], expect);
        }
        for (int j = 0; j < nw; j++) {
            model_update(&items[j], K, mix(bs, (uint64_t)j), root);
            item_check(&items[j], "an item the bcast's root updated before it, read just after it");
        }
        T.bcasts++;
    }
}

/* ---- Phase: free and malloc ----------------------------------------------------- */

static void phase_realloc(uint64_t *s)
{
    int drop = (int)below(s, (uint64_t)T.nobj + 1);
    for (int d = 0; d < drop && T.nobj > 0; d++) {
        int k = (int)below(s, (uint64_t)T.nobj);
        free_later(T.obj[k].p, (int)below(s, (uint64_t)T.n));
        drop_object(k);
    }
    dsm_barrier();
    free_pending();
    dsm_barrier(); /* a block another node frees goes back to its owner here */
    allocate_objects(s, 1 + (int)below(s, 4));
}

/* ---- The differential test's reference ------------------------------------------- */

/* The file: a header, then after every phase of every program (and its
 * allocation) a record, the program's objects' bytes. */
struct ref_head {
    char magic[8];
    uint64_t seed;
    int64_t first, count;
    int32_t participants, page_size;
};
struct ref_rec {
    int64_t program;
    int32_t phase, nobj;
};
static const char ref_magic[8] = "TORTREF1";

/* Opens --dump or --reference (participant 0, before anything runs). */
static void reference_open(void)
{
    const char *path = args.dump ? args.dump : args.reference;
    if (!path)
        return;
    struct ref_head h = {.seed = T.seed, .first = T.first, .count = T.count,
                         .participants = T.n, .page_size = (int32_t)T.page_size};
    memcpy(h.magic, ref_magic, sizeof h.magic);
    if (args.dump) {
        ref_file = fopen(path, "wb");
        if (!ref_file || fwrite(&h, sizeof h, 1, ref_file) != 1) {
            fprintf(stderr, "torture: cannot write %s\n", path);
            exit(2);
        }
        return;
    }
    struct ref_head r;
    ref_file = fopen(path, "rb");
    if (!ref_file || fread(&r, sizeof r, 1, ref_file) != 1 || memcmp(r.magic, ref_magic, 8) != 0) {
        fprintf(stderr, "torture: %s is not a reference torture_hw --dump wrote\n", path);
        exit(2);
    }
    if (r.seed != h.seed || r.first != h.first || r.count != h.count ||
        r.participants != h.participants || r.page_size != h.page_size) {
        fprintf(stderr, "torture: %s was made for seed %" PRIu64 ", programs %" PRId64 "+%" PRId64
                        ", %d participants, pages of %d bytes; this job is seed %" PRIu64
                        ", programs %ld+%ld, %d participants, pages of %zu bytes\n",
                path, r.seed, r.first, r.count, r.participants, r.page_size, T.seed, T.first,
                T.count, T.n, T.page_size);
        exit(2);
    }
}

/* After a phase's barrier: participant 0 writes the objects' bytes
 * (--dump) or compares them with the reference's (--reference), the
 * others wait at a barrier (no one writes meanwhile). */
static void reference_point(void)
{
    if (!ref_file && !args.dump && !args.reference)
        return;
    if (T.me == 0) {
        struct ref_rec rec = {.program = T.index, .phase = T.phase, .nobj = T.nobj};
        if (args.dump) {
            bool ok = fwrite(&rec, sizeof rec, 1, ref_file) == 1;
            for (int k = 0; k < T.nobj && ok; k++) {
                uint64_t bytes = T.obj[k].bytes;
                ok = fwrite(&bytes, sizeof bytes, 1, ref_file) == 1 &&
                     fwrite(T.obj[k].p, 1, bytes, ref_file) == bytes;
            }
            if (!ok) {
                fprintf(stderr, "torture: cannot write %s\n", args.dump);
                exit(2);
            }
        } else {
            struct ref_rec want;
            if (fread(&want, sizeof want, 1, ref_file) != 1 || want.program != rec.program ||
                want.phase != rec.phase || want.nobj != rec.nobj)
                fail("the reference %s is out of step: it has no record of %d objects after "
                     "phase %d of program %ld here (a different build or settings?)",
                     args.reference, T.nobj, T.phase, T.index);
            for (int k = 0; k < T.nobj; k++) {
                uint64_t bytes;
                if (fread(&bytes, sizeof bytes, 1, ref_file) != 1 || bytes != T.obj[k].bytes)
                    fail("the reference %s is out of step at object %d after phase %d",
                         args.reference, k, T.phase);
                unsigned char *hw = T.scratch[0];
                for (uint64_t at = 0; at < bytes;) {
                    size_t chunk = bytes - at < 4 * T.page_size ? (size_t)(bytes - at) : 4 * T.page_size;
                    if (fread(hw, 1, chunk, ref_file) != chunk)
                        fail("the reference %s ends early", args.reference);
                    const unsigned char *mine = T.obj[k].p + at;
                    if (memcmp(mine, hw, chunk) != 0) {
                        size_t j = 0, differ = 0;
                        while (mine[j] == hw[j])
                            j++;
                        for (size_t b = j; b < chunk; b++)
                            differ += mine[b] != hw[b];
                        size_t b = (size_t)at + j;
                        fail("differs from the threads run (no dsm) after phase %d (%s): %s: "
                             "dsm has 0x%02x, the threads run 0x%02x (%zu bytes of this part of "
                             "the object differ, the first here); the model has 0x%02x, %s",
                             T.phase, T.phase_name, where(k, b, 1), mine[j], hw[j], differ,
                             T.obj[k].want[b], history(k, b));
                    }
                    at += chunk;
                }
                T.compared += (long)bytes;
            }
        }
    }
    dsm_barrier();
}

/* ---- One program ---------------------------------------------------------------- */

static void run_program(long index)
{
    T.index = index;
    T.phase = 0;
    T.phase_name = "allocation";
    memset(T.names, 0, sizeof T.names);
    T.names[0] = T.phase_name;
    T.prog_seed = mix(T.seed, (uint64_t)index);
    uint64_t s = T.prog_seed;
    allocate_objects(&s, 2 + (int)below(&s, 11));
    dsm_barrier();
    reference_point();
    int phases = 2 + (int)below(&s, MAX_PHASES - 1);
    static const char *const names[] = {"locks", "barrier writes", "condition ring", "broadcasts",
                                        "free and malloc", "mixed sizes", "memory functions",
                                        "atomics"};
    for (int p = 1; p <= phases; p++) {
        /* of 20: locks 5, barrier writes 2, ring 3, bcasts 1, free and
         * malloc 2, mixed sizes 3, memory functions 2, atomics 2 */
        static const int kinds[20] = {0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7};
        int kind = kinds[below(&s, 20)];
        if (T.total == 0)
            kind = 4;
        T.phase = p;
        T.phase_name = T.names[p] = names[kind];
        switch (kind) {
        case 0: phase_locks(&s); break;
        case 1: phase_barrier_writes(&s); break;
        case 2: phase_ring(&s); break;
        case 3: phase_bcasts(&s); break;
        case 4: phase_realloc(&s); break;
        case 5: phase_sizes(&s); break;
        case 6: phase_memory_functions(&s); break;
        default: phase_atomics(&s); break;
        }
        dsm_barrier();
        free_pending();
        reference_point();
        T.phases++;
    }
    T.phase = phases + 1;
    T.phase_name = T.names[phases + 1] = "the final check of every byte";
    for (int k = 0; k < T.nobj; k++)
        check_range(k, 0, T.obj[k].bytes, 8, "the final check");
    dsm_barrier();
    while (T.nobj > 0) {
        free_later(T.obj[0].p, (int)below(&s, (uint64_t)T.n));
        drop_object(0);
    }
    free_pending();
}

static bool parse_number(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end)
        return false;
    *out = v;
    return true;
}

/* One participant's run: every node's program, or with --fork every
 * thread's (dsmrun --threads: the participants are the job's threads). */
static void run_all(void *unused)
{
    (void)unused;
    T.me = dsm_thread_id();
    T.n = dsm_thread_count();
    T.tpn = dsm_node_threads();
    T.argv0 = args.argv0;
    T.seed = args.seed;
    T.first = args.first;
    T.count = args.count;
    if (T.n > MAX_NODES) {
        if (T.me == 0)
            fprintf(stderr, "torture: %d participants; it runs on at most %d\n", T.n, MAX_NODES);
        exit(2);
    }
    T.page_size = dsm_page_size();
    for (int i = 0; i < 3; i++)
        T.scratch[i] = xmalloc(4 * T.page_size + 16);
    T.plan = xcalloc(1, sizeof *T.plan);
    if (T.me == 0)
        reference_open();
    for (long i = T.first; i < T.first + T.count; i++)
        run_program(i);
    dsm_barrier();
    if (T.me == 0) {
        const char *protocol = getenv("DSM_PROTOCOL") ? getenv("DSM_PROTOCOL") : "hlrc";
        char threads[64] = "", compared[96] = "";
#ifdef TORTURE_HW
        snprintf(threads, sizeof threads, " (threads of one process, no dsm)");
        protocol = "hardware shared memory";
#else
        if (dsm_node_threads() > 1)
            snprintf(threads, sizeof threads, " (%d threads each)", dsm_node_threads());
#endif
        if (args.reference)
            snprintf(compared, sizeof compared, "; %ld bytes the same as the threads run's",
                     T.compared);
        printf("torture: %ld programs ok (seed %" PRIu64 ", programs %ld..%ld, %d %s%s, %s%s): "
               "%ld phases, %ld objects, %ld critical sections, %ld ring hand-offs, %ld bcasts; "
               "participant 0 updated %ld items, wrote %ld elements of mixed sizes, made %ld "
               "memory-function calls and %ld atomic operations%s\n",
               T.count, T.seed, T.first, T.first + T.count - 1, dsm_nodes(),
#ifdef TORTURE_HW
               "participants",
#else
               "nodes",
#endif
               threads, protocol, commutative ? ", commutative" : "", T.phases, T.objects,
               T.sections, T.handoffs, T.bcasts, T.rmw_items, T.pieces, T.memops, T.atomics,
               compared);
        if (ref_file)
            fclose(ref_file);
    }
    free(T.taken);
    T.taken = NULL;
    T.taken_cap = 0;
    for (int i = 0; i < 3; i++)
        free(T.scratch[i]);
    free(T.plan->p);
    free(T.plan);
}

int main(int argc, char **argv)
{
    /* --fork: fork style, so that every thread of every node takes part
     * under dsmrun --threads T (an SPMD program runs one thread a node).
     * torture_hw always runs so, on its threads. */
#ifdef TORTURE_HW
    args.fork = true;
#endif
    for (int i = 1; i < argc; i++)
        args.fork |= !strcmp(argv[i], "--fork");
    if (args.fork)
        dsm_startup_fork(&argc, &argv);
    else
        dsm_startup(&argc, &argv);
    args.argv0 = argv[0];
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (!strcmp(argv[i], "--fork"))
            continue;
        if (!strcmp(argv[i], "--commutative")) {
            commutative = true;
            continue;
        }
        if (i + 1 < argc && (!strcmp(argv[i], "--dump") || !strcmp(argv[i], "--reference"))) {
            if (!strcmp(argv[i], "--dump"))
                args.dump = argv[i + 1];
            else
                args.reference = argv[i + 1];
            commutative = true; /* memory after a phase must not depend on the lock order */
            i++;
            continue;
        }
        if (i + 1 < argc && parse_number(argv[i + 1], &v) &&
            (!strcmp(argv[i], "--seed") || !strcmp(argv[i], "--count") || !strcmp(argv[i], "--first"))) {
            if (!strcmp(argv[i], "--seed"))
                args.seed = v;
            else if (!strcmp(argv[i], "--count"))
                args.count = (long)v;
            else
                args.first = (long)v;
            i++;
            continue;
        }
        if (dsm_rank() == 0)
            fprintf(stderr, "torture: bad argument '%s' (usage: torture [--fork] [--seed S] "
                            "[--count N] [--first I] [--commutative] [--dump FILE] "
                            "[--reference FILE], numbers decimal or 0x hex%s)\n", argv[i],
#ifdef TORTURE_HW
                    "; torture_hw takes --participants P too"
#else
                    ""
#endif
            );
        exit(2);
    }
    if (args.dump && args.reference) {
        if (dsm_rank() == 0)
            fprintf(stderr, "torture: --dump and --reference: one or the other\n");
        exit(2);
    }
    if (args.fork) {
        dsm_create(run_all, NULL);
        run_all(NULL);
        dsm_wait_for_end();
    } else
        run_all(NULL);
    dsm_finish();
    return 0;
}
