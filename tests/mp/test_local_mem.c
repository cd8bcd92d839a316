/*
 * Bounded local memory (DSM_LOCAL_MEM, seed 002): a working set several
 * times a node's limit stays correct, the copies beyond the limit are
 * evicted (counted), at most the limit's pages (plus the two of the last
 * faults) are resident at once, and the node's shared-memory RSS stays
 * near its own pages plus the limit — far below what keeping every copy
 * would take.
 *
 * Each node owns a block of `pages` pages (homed there). In each round:
 *   1. every node fills its own block (first word of each page, and a
 *      word per node further in);
 *   2. barrier; every node writes its own word into every page of the
 *      next node's block — dirty copies that the limit evicts between the
 *      write and the next release, whose writes must still arrive;
 *   3. barrier; every node reads every block and checks every word, and
 *      loads a word across two pages of the previous node's block with
 *      one instruction (both must be resident at once: progress even
 *      when the limit is one page).
 * Usage: test_local_mem [pages] [rounds]   (DSM_LOCAL_MEM must be set)
 */
#include <inttypes.h>
#include <stdint.h>
#include <unistd.h>

#include "base/stats.h"
#include "mp_util.h"

static uint64_t value(int round, int owner, size_t page, int writer)
{
    return ((uint64_t)(round + 1) << 40) ^ ((uint64_t)owner << 32) ^ ((uint64_t)page << 8) ^
           (uint64_t)(writer + 1);
}

/* kB of the region's file resident in this process: the Rss of every
 * mapping of the file that holds `addr` (both views; a page mapped in
 * both counts twice), from /proc/self/smaps. -1 if it cannot be read. */
static long region_rss_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    unsigned long want_inode = 0, inode = 0;
    long kb = 0;
    /* First pass: the inode of the mapping holding addr. */
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, ino;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 &&
            (uintptr_t)addr >= lo && (uintptr_t)addr < hi)
            want_inode = ino;
    }
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, ino;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3)
            inode = ino;
        else if (inode == want_inode && want_inode && !strncmp(line, "Rss:", 4))
            kb += atol(line + 4);
    }
    fclose(f);
    return want_inode ? kb : -1;
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    size_t pages = argc > 1 ? (size_t)atol(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    const char *limit_s = getenv("DSM_LOCAL_MEM");
    MP_CHECK(limit_s && *limit_s, "DSM_LOCAL_MEM is not set");
    size_t ps = dsm_page_size(), words = ps / sizeof(uint64_t);
    size_t frames = parse_size(limit_s) / ps;
    if (!frames)
        frames = 1;
    MP_CHECK((size_t)n + 1 < words, "pages too small for %d nodes", n);

    uint64_t **block = calloc((size_t)n, sizeof *block);
    block[me] = dsm_malloc(pages * ps);
    for (int k = 0; k < n; k++)
        dsm_bcast(&block[k], sizeof block[k], k);

    int next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int r = 0; r < rounds; r++) {
        for (size_t p = 0; p < pages; p++)
            block[me][p * words] = value(r, me, p, me);
        dsm_barrier();
        for (size_t p = 0; p < pages; p++)
            block[next][p * words + 1 + (size_t)me] = value(r, next, p, me);
        dsm_barrier();
        for (int k = 0; k < n; k++)
            for (size_t p = 0; p < pages; p++) {
                uint64_t *pg = block[k] + p * words;
                MP_CHECK(pg[0] == value(r, k, p, k), "round %d: block %d page %zu: %#" PRIx64, r, k, p,
                         pg[0]);
                int w = (k + n - 1) % n;
                MP_CHECK(pg[1 + w] == value(r, k, p, w),
                         "round %d: block %d page %zu: node %d's write lost (%#" PRIx64 ")", r, k, p,
                         w, pg[1 + w]);
            }
        /* One load across the boundary of two pages of another node:
         * both must be resident at once, whatever the limit. */
        for (size_t p = 0; p + 1 < pages; p += 3) {
            uint64_t v;
            memcpy(&v, (const char *)(block[prev] + (p + 1) * words) - 4, sizeof v);
            uint64_t want = (uint64_t)(uint32_t)value(r, prev, p + 1, prev) << 32;
            MP_CHECK(v == want, "round %d: the load across pages %zu and %zu of block %d read %#" PRIx64
                     ", not %#" PRIx64, r, p, p + 1, prev, v, want);
        }
        dsm_barrier();
    }

    uint64_t ev = stats_get(STAT_CACHE_EVICTIONS), wb = stats_get(STAT_CACHE_WRITEBACKS);
    uint64_t high = stats_get(STAT_CACHE_RESIDENT_MAX);
    long mapped_kb = region_rss_kb(block[me]);
    MP_CHECK(mapped_kb >= 0, "cannot find the region's mappings in /proc/self/smaps");
    /* Every copy kept would be (n - 1) blocks; the limit lets `frames`
     * (and the two pages of the last faults) stay. A page is counted once
     * per view that maps it (two views): the own block, the copies
     * allowed, and some slack for runtime pages. */
    long bound_kb = (long)(2 * (pages + frames + 2 + 32) * ps / 1024);
    printf("node %d: %d rounds over %zu pages a node: evictions %" PRIu64 ", write-backs %" PRIu64
           ", resident high-water %" PRIu64 "/%zu pages, region mapped %ld kB (bound %ld kB)\n",
           me, rounds, pages, ev, wb, high, frames, mapped_kb, bound_kb);
    MP_CHECK(ev > 0, "no eviction: %zu pages of others read under a limit of %zu", (size_t)(n - 1) * pages,
             frames);
    /* Each round writes `pages` pages of the next node's block in one
     * interval, more than the limit holds: some are evicted dirty. */
    if (pages > frames + 2)
        MP_CHECK(wb > 0, "no dirty copy evicted: %zu pages written in one interval, limit %zu", pages,
                 frames);
    MP_CHECK(high <= frames + 2, "%" PRIu64 " copies resident at once, limit %zu pages", high, frames);
    MP_CHECK(mapped_kb <= bound_kb, "%ld kB of the region mapped, more than %ld kB", mapped_kb, bound_kb);
    free(block);
    dsm_finish();
    return 0;
}
