/*
 * oneside.c — one-sided page fetch: the words and the pool of published
 * pages, written by the home and read by its peers (oneside.h;
 * docs/protocols.md, "One-sided page fetch").
 *
 * Two ranges are asked of the transport, in this order on every node, so
 * that their indices are the same everywhere: the words (one per page of
 * the region; memory only where a page was published) and the pool (slots
 * of a page each, up to POOL_BYTES; memory as slots are used). The pages
 * themselves (the region's frames, a memfd) are not read: UCX reads on one
 * host only memory it allocated (net/ucx_rma.c), and a slot of our own
 * holds what a request would be sent, however the home writes its frame
 * meanwhile.
 *
 * The home writes a word as a seqlock's writer does: the sequence number
 * odd, a fence, the change (the slot's bytes, the word's slot and
 * version), a fence, the sequence number even again. A reader's gets of
 * the word, of the slot and of the word again are one after the other
 * (each waits for the one before), so when both words are equal and even,
 * no change began after the first word was read nor ended before the
 * second was (a change in between would have moved the sequence number,
 * which only grows), and the slot read between them holds the version the
 * word names, whole. The words are compared whole, so a word copied in
 * pieces while it changed cannot pass either.
 */
#include "coherence/oneside.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "ipc/ipc.h"
#include "mem/mem.h"

/* A page's word at its home. */
struct oneside_word {
    _Atomic uint32_t seq; /* odd while the home changes the word or its slot */
    uint32_t slot;        /* 0: not published; else the slot (from 1) */
    uint32_t version;     /* the version the slot holds */
    uint32_t zero;
};

enum { RANGE_WORDS, RANGE_POOL };

/* The pool's size at most: published pages are copies of home pages, and
 * a page that finds no slot is fetched with a request. */
#define POOL_BYTES (1ull << 30)

/* Reads that found the page changing before asking the home instead: a
 * publish takes a copy of a page, the request more. */
#define READ_TRIES 4

static DSM_STATE struct {
    bool                 on;
    int                  words_range, pool_range;
    struct oneside_word *words;   /* ours, once the transport runs */
    char                *pool;
    uint32_t             nslots;  /* slots 1 .. nslots */
    uint32_t            *free;    /* free slots (a stack; under the protocol's lock) */
    uint32_t             nfree;
    bool                 resolved; /* words and pool looked up */
} os;

void oneside_start(void)
{
    os.on = false;
    if (!coherence_params()->one_sided || job()->nodes < 2)
        return;
    size_t want = mem.size < POOL_BYTES ? mem.size : POOL_BYTES;
    os.nslots = (uint32_t)(want / mem.page_size);
    os.words_range = ipc_expose(mem.npages * sizeof *os.words);
    os.pool_range = ipc_expose((size_t)os.nslots * mem.page_size);
    if (os.words_range < 0 || os.pool_range < 0)
        log_fatal("internal error: one-sided page fetch cannot ask for its memory");
    os.on = true;
}

bool oneside_on(void) { return os.on; }

/* The transport provides the memory at its start, after ours: found at
 * the first publish (on the delivering thread, under the protocol's lock). */
static bool resolve(void)
{
    if (!os.resolved) {
        os.resolved = true;
        os.words = ipc_exposed(os.words_range);
        os.pool = ipc_exposed(os.pool_range);
        os.free = os.words && os.pool ? malloc(os.nslots * sizeof *os.free) : NULL;
        if (os.free)
            for (uint32_t i = 0; i < os.nslots; i++)
                os.free[os.nfree++] = os.nslots - i; /* slot 1 on top */
    }
    return os.free != NULL;
}

void oneside_publish(size_t page, uint32_t version, const void *content)
{
    if (!os.on || !resolve())
        return;
    struct oneside_word *w = &os.words[page];
    uint32_t s = atomic_load_explicit(&w->seq, memory_order_relaxed);
    if (!content && !w->slot)
        return; /* not published, and not to be */
    atomic_store_explicit(&w->seq, s + 1, memory_order_relaxed);
    /* The odd number is visible before any byte of the change. */
    atomic_thread_fence(memory_order_seq_cst);
    if (content && !w->slot && os.nfree)
        w->slot = os.free[--os.nfree];
    if (content && w->slot) {
        memcpy(os.pool + (size_t)(w->slot - 1) * mem.page_size, content, mem.page_size);
        w->version = version;
    } else if (w->slot) {
        os.free[os.nfree++] = w->slot;
        w->slot = 0;
    }
    /* Every byte of the change is visible before the even number. */
    atomic_thread_fence(memory_order_seq_cst);
    atomic_store_explicit(&w->seq, s + 2, memory_order_release);
}

/* The page's word at `home`, as a plain copy; false when it cannot be read. */
static bool read_word(int home, size_t page, struct oneside_word *w)
{
    int rc = ipc_get(home, os.words_range, page * sizeof *w, w, sizeof *w);
    if (rc && rc != -ENOTSUP)
        log_fatal("internal error: one-sided read of page %zu's word at node %d: %s", page, home,
                  strerror(-rc));
    return rc == 0;
}

bool oneside_fetch(size_t page, int home, uint32_t need, uint32_t *version)
{
    if (!os.on || !ipc_one_sided(home))
        return false;
    char *frame = mem_sys_fill(page, 1);
    for (int t = 0; t < READ_TRIES; t++) {
        struct oneside_word a, b;
        if (!read_word(home, page, &a))
            break;
        uint32_t seq = atomic_load_explicit(&a.seq, memory_order_relaxed);
        if (!(seq & 1) && (!a.slot || a.slot > os.nslots || a.version < need || a.zero)) {
            /* Not published (a page the home writes unnoticed, one it
             * gave away, one no slot was left for), or older than this
             * node needs: the home's own answer, which waits or ends the
             * job as the protocol says. */
            break;
        }
        if (!(seq & 1)) {
            int rc = ipc_get(home, os.pool_range, (size_t)(a.slot - 1) * mem.page_size, frame,
                             mem.page_size);
            if (rc == -ENOTSUP)
                break;
            if (rc)
                log_fatal("internal error: one-sided read of page %zu at node %d: %s", page, home,
                          strerror(-rc));
            if (read_word(home, page, &b) && !memcmp(&a, &b, sizeof a)) {
                *version = a.version;
                stats_add(STAT_PAGES_GOT, 1);
                return true;
            }
        }
        stats_add(STAT_ONESIDE_RETRIES, 1);
        sched_yield(); /* the home is in the middle of a change: let it finish */
    }
    stats_add(STAT_ONESIDE_ASKED, 1);
    return false;
}
