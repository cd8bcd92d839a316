/*
 * hlrc_ahead.c — hlrc's read-ahead and write-ahead: the pages a fault
 * fetches beside its own (described below), chosen from the streams of
 * read faults the node follows (hlrc.streams) or from the dirty page
 * before a write fault's. They are fetched as pulls (hlrc_acquire.c):
 * received in place, settled when the fault's own page is.
 *
 * On the program's thread, under the fault lock, from the fault path
 * (hlrc_fetch.c, make_valid), whose request for the faulting page is
 * already out.
 */
#include <stdlib.h>
#include <string.h>

#include "base/smp.h"
#include "coherence/coherence.h"
#include "coherence/hlrc_state.h"

/* Read-ahead: read faults that follow one another at a constant stride
 * through one home's pages — consecutive pages (a loop over an array), or
 * every 2nd, 4th, ... page (a row of a sub-matrix: a quadrant's rows of
 * a row-major matrix, a block of a larger one) — form a *stream*, and a
 * stream's next fault also fetches the invalid pages that follow it at
 * its stride, 2, 4, ... up to DSM_READ_AHEAD (16) of them. Consecutive
 * pages go in one request whose one reply lands in place (consecutive
 * pages are consecutive in the system view): the home sends them in a
 * few datagrams instead of a message each; pages at a larger stride go
 * as requests of their own, in the same wake-up as the fault's. The node
 * follows AHEAD_STREAMS streams at once, so that loops reading several
 * arrays together (BOTS strassen's quadrant sums read four rows of pages
 * in turn, each every second page: 6,385 of node 1's 6,545 fetching read
 * faults on 2 nodes were such streams', where one stream of consecutive
 * pages saw 47) read each ahead. A fault no stream expected starts one,
 * its stride the distance from the nearest of the last AHEAD_RECENT
 * fetching read faults (at most AHEAD_STRIDE_MAX pages away), or 1 where
 * the pages between are valid here (consecutive pages some of which came
 * otherwise: SPLASH-3 FFT's node 1, whose scans took every other page's
 * fault for a stride of 2 and faulted on the rest, until this); it reads
 * ahead at once for consecutive pages, as before, and from the stream's
 * next fault for a larger stride, which a loop over scattered pages would
 * otherwise start by chance. A fault on a stream's stride past the pages
 * it expected, all valid here (read without a fault), continues it.
 *
 * Random reads of data nobody writes (a binary search into a table the
 * master filled: XSBench's lookups, bench/omp/lookup) follow no stream,
 * and fetched a page a round trip (lookup on 2 nodes: node 1's 2,877
 * read faults took 1.9 s, and node 0 ran 99.7 % of the chunks meanwhile).
 * So a read fault that no stream reads ahead for also fetches the pages
 * of its aligned block of AHEAD_BLOCK_RUNS runs of DSM_READ_AHEAD pages
 * (64 of 8 KiB; at most AHEAD_BLOCK_BYTES) that are invalid here, of its
 * home, and *unwritten as far as this node knows*: never made invalid by
 * a notice since they were last valid here (hlrc_invalidate's `reread`)
 * and named by no notice newer than the copy this node last had (`need`
 * no higher than `version`; both 0 for a page never here). A page other
 * nodes write is invalid here because of a notice, so it is read ahead at
 * most once, before that notice. The block goes in one request per run,
 * each answered by one reply received in place. Only where the page
 * cache has no limit (DSM_LOCAL_MEM): a bounded cache holding random
 * reads would evict the pages it holds for the block's. And only on a
 * node of one application thread: a fault that reads ahead holds the
 * fault lock across its round trip, where with threads a fault that
 * fetches its page alone lets the node's other threads fault meanwhile
 * (hlrc_fetch.c); blocks would put them back in line behind each other
 * (smp.faults_in_flight: 1 in flight).
 *
 * Write-ahead: a program that writes pages homed elsewhere one after
 * another (a copy into a remote block, a radix sort's run of one digit)
 * takes a write fault on each, and each waits a round trip for its fetch;
 * such writes are interleaved with other streams (a radix sort fills
 * 2^r runs at once), so the read faults' streams do not see
 * them. So a write fault on an invalid page whose predecessor was
 * written here since the last release (it is dirty: a twin, homed
 * elsewhere) and has the same home also fetches the invalid pages after
 * it of that home, up to DSM_WRITE_AHEAD (8), in one run, and makes them
 * writable with the faulting page (a twin each, on the dirty list, one
 * protection change for the run): the program writes them without a
 * fault. A page fetched ahead that the program does not write costs its
 * transfer, its twin and a compare at the release, whose diff is empty
 * (nothing is sent, no notice).
 *
 * Both are sent with the faulting page's request.
 * Caller holds the fault lock; the faulting page's request is out. */

/* Whether every page from `from` on at `stride` before `to` is valid
 * here: the program may have read them without a fault. */
static bool valid_between(long from, long to, long stride)
{
    for (long q = from; q != to; q += stride)
        if (q < 0 || (size_t)q >= mem.npages || mem.pages[q].state == PAGE_INVALID)
            return false;
    return true;
}

/* The stream whose next fault `page` is: the one that expected it, else
 * one it continues past pages still valid here (at most READ_AHEAD_MAX
 * strides on), or -1. */
static int stream_of(size_t page)
{
    int best = -1;
    long best_k = READ_AHEAD_MAX + 1;
    for (int i = 0; i < AHEAD_STREAMS; i++) {
        struct ahead_stream *st = &hlrc.streams[i];
        if (!st->run)
            continue;
        long d = (long)page - (long)st->next;
        if (d % st->stride || d / st->stride < 0 || d / st->stride >= best_k)
            continue;
        if (d && !valid_between((long)st->next, (long)page, st->stride))
            continue;
        best = i;
        best_k = d / st->stride;
    }
    return best;
}

/* Pages the read fault being fetched reads ahead on its stream (as
 * hlrc_stream_for found it), before the cache's room. */
static size_t stream_depth(void)
{
    if (hlrc.ahead_stream < 0)
        return 0;
    unsigned run = hlrc.streams[hlrc.ahead_stream].run;
    size_t depth = run ? (size_t)1 << (run < 5 ? run : 5) : 0;
    return depth > hlrc.read_ahead ? hlrc.read_ahead : depth;
}

/* Whether page q may be read ahead with a fault on a page of `home`'s
 * that no stream reads ahead for: invalid here, and unwritten as far as
 * this node knows (see the head of this file). */
static bool unwritten_here(size_t q, int home)
{
    const struct hlrc_page *h = &hlrc.pages[q];
    return mem.pages[q].state == PAGE_INVALID && mem_home(q) == home && !h->reread &&
           h->need <= h->version && !h->pulling && !h->fetching;
}

/* The first page of the block holding `page`, and (in *end) the page
 * after it. */
static size_t block_of(size_t page, size_t *end)
{
    size_t pages = hlrc.read_ahead * AHEAD_BLOCK_RUNS;
    if (pages > AHEAD_BLOCK_BYTES / mem.page_size)
        pages = AHEAD_BLOCK_BYTES / mem.page_size;
    size_t first = page - page % pages;
    *end = first + pages < mem.npages ? first + pages : mem.npages;
    return first;
}

/* Sets hlrc.ahead_block: the pages of its block a read fault on `page`
 * reads ahead, where its stream reads none. */
static void block_for(size_t page)
{
    hlrc.ahead_block = 0;
    int home = mem_home(page);
    if (!hlrc.read_ahead || smp_multi() || stream_depth() || cache_frames() || home < 0 ||
        !unwritten_here(page, home))
        return;
    size_t end, first = block_of(page, &end);
    for (size_t q = first; q < end; q++)
        if (q != page && unwritten_here(q, home))
            hlrc.ahead_block++;
}

/* Sets hlrc.ahead_stream: the stream a read fault on `page` belongs to,
 * found or started (the least recently used one replaced), or -1: no
 * stride in reach. A new
 * stream's stride is the smallest distance from a recent fault — taken
 * as 1 (or -1) where the pages between are all valid: consecutive pages
 * some of which came otherwise (read ahead, fetched before), not a
 * stride. */
void hlrc_stream_for(size_t page)
{
    int i = stream_of(page);
    if (i < 0) {
        long stride = 0;
        for (int k = 0; k < AHEAD_RECENT && hlrc.recent[k]; k++) {
            long d = (long)page - (long)(hlrc.recent[k] - 1);
            if (!d || d < -AHEAD_STRIDE_MAX || d > AHEAD_STRIDE_MAX)
                continue;
            long one = d > 0 ? 1 : -1;
            if (valid_between((long)page - d + one, (long)page, one))
                d = one;
            if (!stride || labs(d) < labs(stride))
                stride = d;
        }
        if (stride) {
            i = 0;
            for (int k = 1; k < AHEAD_STREAMS; k++)
                if (hlrc.streams[k].used < hlrc.streams[i].used)
                    i = k;
            /* A first stride of 1 reads ahead at once (a second fault
             * on consecutive pages); another from its next fault. */
            hlrc.streams[i] = (struct ahead_stream){.next = page, .stride = stride,
                                                    .run = stride == 1 ? 1 : 0};
        }
    }
    hlrc.ahead_stream = i;
    block_for(page);
}

size_t hlrc_ahead_depth(void)
{
    size_t depth = stream_depth();
    return depth ? depth : hlrc.ahead_block;
}

size_t hlrc_write_ahead_depth(size_t page, int home)
{
    /* Under DSM_LOCAL_MEM pages fetched ahead would evict the pages of the
     * other streams being written (measured: 4 frames, 3 streams, every
     * write faulted again), so only a cache without a limit writes ahead. */
    if (cache_frames() || page == 0 || !mem.pages[page - 1].dirty || mem_home(page - 1) != home)
        return 0;
    return hlrc.write_ahead;
}

/* Fetches up to `depth` invalid pages after `page` of `home` as pulls
 * (counted as `stat`), in one request; returns the page after the run. */
static size_t fetch_run(size_t page, int home, size_t depth, enum stats_counter stat)
{
    if (depth > hlrc.ahead_room) /* DSM_LOCAL_MEM: what make_valid made room for */
        depth = hlrc.ahead_room;
    uint32_t need[READ_AHEAD_MAX];
    size_t q = page + 1;
    for (; q <= page + depth && q < mem.npages; q++) {
        struct page_entry *e = &mem.pages[q];
        struct hlrc_page *h = &hlrc.pages[q];
        if (e->state != PAGE_INVALID || mem_home(q) != home || h->pulling || h->fetching)
            break;
        need[q - page - 1] = h->need;
        hlrc_pull_mark(q, stat);
    }
    size_t count = q - page - 1;
    if (count)
        hlrc_run_request(home, page + 1, need, count);
    return q;
}

/* Fetches the invalid pages of `home` among the `depth` pages after
 * `page` at `stride` from one another (as pulls, counted as read ahead):
 * consecutive ones in one request each run, others a request each; valid
 * pages on the way are passed over. Returns the page after the last one
 * looked at. */
static size_t fetch_ahead(size_t page, int home, long stride, size_t depth)
{
    if (depth > hlrc.ahead_room) /* DSM_LOCAL_MEM: what make_valid made room for */
        depth = hlrc.ahead_room;
    struct pull_run r = {.count = 0};
    long q = (long)page;
    for (size_t k = 0; k < depth; k++) {
        q += stride;
        if (q < 0 || (size_t)q >= mem.npages || mem_home((size_t)q) != home) {
            q -= stride;
            break;
        }
        if (mem.pages[q].state != PAGE_INVALID || hlrc.pages[q].pulling || hlrc.pages[q].fetching)
            continue;
        hlrc_pull_mark((size_t)q, STAT_PAGES_AHEAD);
        hlrc_pull_in_run(&r, (size_t)q);
    }
    hlrc_pull_run_send(&r);
    return (size_t)(q + stride);
}

/* Fetches the pages of page's block that may be read ahead (as pulls,
 * counted as read ahead), up to the cache's room: consecutive ones in one
 * request each run. */
static void fetch_block(size_t page, int home)
{
    size_t room = hlrc.ahead_room; /* DSM_LOCAL_MEM: what make_valid made room for */
    struct pull_run r = {.count = 0};
    size_t end, first = block_of(page, &end);
    for (size_t q = first; q < end && room; q++) {
        if (q == page || !unwritten_here(q, home))
            continue;
        hlrc_pull_mark(q, STAT_PAGES_AHEAD);
        hlrc_pull_in_run(&r, q);
        room--;
    }
    hlrc_pull_run_send(&r);
}

void hlrc_read_ahead(size_t page, int home)
{
    memmove(&hlrc.recent[1], &hlrc.recent[0], (AHEAD_RECENT - 1) * sizeof *hlrc.recent);
    hlrc.recent[0] = page + 1;
    hlrc.ahead_clock++;
    if (hlrc.ahead_block)
        fetch_block(page, home);
    hlrc.ahead_block = 0;
    int i = hlrc.ahead_stream;
    if (i < 0)
        return;
    struct ahead_stream *st = &hlrc.streams[i];
    size_t depth = hlrc_ahead_depth();
    st->next = fetch_ahead(page, home, st->stride, depth);
    st->run++;
    st->used = hlrc.ahead_clock;
}

void hlrc_write_ahead(size_t page, int home)
{
    hlrc.write_ahead_end = fetch_run(page, home, hlrc_write_ahead_depth(page, home),
                                     STAT_PAGES_WRITE_AHEAD);
}
