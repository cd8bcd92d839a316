/*
 * A home's snapshots stay within DSM_LOCAL_MEM, and the pages beyond them
 * still tell every reader of the home's writes (hlrc; docs/paging.md).
 *
 * Node 0 homes a block that the other nodes read, each its own slice of
 * `frames / 2` pages (their copies fit within the limit: a stale copy is
 * not refreshed by an eviction). Served to n - 1 readers, more pages are
 * shared than the limit has snapshots: under hlrc those beyond are
 * unsnapped, and only the release's announcement of them invalidates the
 * readers' copies. Each round node 0 writes a new value into every page;
 * after a barrier each reader checks its slice.
 * Usage: test_home_snapshots [rounds] [expect-unsnapped 0|1]
 * (DSM_LOCAL_MEM must be set; 3 nodes or more.)
 */
#include <inttypes.h>
#include <stdint.h>

#include "base/stats.h"
#include "mp_util.h"

static uint64_t value(int round, size_t page) { return ((uint64_t)(round + 1) << 32) | (page + 7); }

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    int expect_unsnapped = argc > 2 ? atoi(argv[2]) : 0;
    const char *limit_s = getenv("DSM_LOCAL_MEM");
    MP_CHECK(limit_s && *limit_s, "DSM_LOCAL_MEM is not set");
    MP_CHECK(n >= 3, "needs 3 nodes or more, not %d", n);
    size_t ps = dsm_page_size(), words = ps / sizeof(uint64_t);
    char *end;
    unsigned long long limit = strtoull(limit_s, &end, 10);
    if (*end == 'K' || *end == 'k')
        limit <<= 10;
    else if (*end == 'M' || *end == 'm')
        limit <<= 20;
    size_t frames = (size_t)limit / ps, slice = frames / 2 ? frames / 2 : 1;
    size_t pages = slice * (size_t)(n - 1);

    uint64_t *block = NULL;
    if (me == 0)
        block = dsm_malloc(pages * ps);
    dsm_bcast(&block, sizeof block, 0);

    for (int r = 0; r < rounds; r++) {
        if (me == 0)
            for (size_t p = 0; p < pages; p++)
                block[p * words] = value(r, p);
        dsm_barrier();
        if (me != 0)
            for (size_t p = (size_t)(me - 1) * slice; p < (size_t)me * slice; p++)
                MP_CHECK(block[p * words] == value(r, p),
                         "round %d: page %zu of node 0's block reads %#" PRIx64 ", not %#" PRIx64
                         " (a home write not announced)", r, p, block[p * words], value(r, p));
        dsm_barrier();
    }
    if (me == 0) {
        uint64_t unsnapped = stats_get(STAT_HOME_UNSNAPPED);
        printf("node 0: %d rounds, %zu pages read by %d nodes, %zu snapshots at most: %" PRIu64
               " shared without one\n", rounds, pages, n - 1, frames, unsnapped);
        if (expect_unsnapped)
            MP_CHECK(unsnapped > 0, "%zu pages shared, %zu snapshots allowed, none unsnapped", pages,
                     frames);
    }
    dsm_finish();
    return 0;
}
