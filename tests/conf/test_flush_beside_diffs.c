/*
 * A flush's asks go beside its diffs (sync/flush.c,
 * coherence_release_unawaited): nodes that meet only through dsm_flush,
 * as NPB LU's pipeline does, still read every word written before the
 * flag that told them to read. Each round every node waits until every
 * node has read the last round (flags polled with a flush), writes its
 * words in `pages` pages homed at the next node, flushes, sets its
 * written flag (one flag page that every node writes) and flushes, waits
 * until every node's flag says written, reads and checks every node's
 * words, and sets its read flag. Under every protocol, and under loss and
 * duplication. Under hlrc, one thread a node and no local memory limit,
 * the flushes' diffs went beside their asks, unacknowledged (counted);
 * under the others none did.
 * Usage: test_flush_beside_diffs [rounds] [pages]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define WORDS_EACH 3 /* words a node writes in each of its pages a round */

static int64_t value(int round, int node, size_t page, size_t word)
{
    return ((int64_t)(round + 1) << 40) ^ ((int64_t)node << 32) ^ (int64_t)(page * 4099 + word);
}

/* Page j of node `node`'s row, in words: with cyclic homes page q is homed
 * at node q mod N, so the row's pages, q = (node * pages + j) * N +
 * (node + 1) mod N, are homed at the next node. */
static size_t row_page(int node, size_t j, size_t pages, int nodes, size_t words)
{
    return (((size_t)node * pages + j) * (size_t)nodes + (size_t)((node + 1) % nodes)) * words;
}

/* The word a round writes in a page: a different one each round. */
static size_t word_of(int round, size_t w, size_t words) { return ((size_t)round * 7 + w * 131) % words; }

/* Polls until every node's flag `which` (0: written, 1: read) is at
 * least `round`, a flush between looks. */
static void wait_all(volatile int64_t *flags, int nodes, int which, int round)
{
    for (int j = 0; j < nodes; j++)
        while (flags[j * 2 + which] < round)
            dsm_flush();
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int npages = argc > 2 ? atoi(argv[2]) : 4;
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    MP_CHECK(npages >= 1 && npages <= 64, "pages %d out of 1..64", npages);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), pages = (size_t)npages;

    int64_t *data = NULL, *flag_page = NULL;
    if (me == 0) {
        data = dsm_malloc_home((size_t)n * pages * (size_t)n * page, DSM_HOME_CYCLIC);
        flag_page = dsm_malloc_home(page, DSM_HOME_LOCAL);
        memset(flag_page, 0, page);
    }
    dsm_bcast(&data, sizeof data, 0);
    dsm_bcast(&flag_page, sizeof flag_page, 0);
    volatile int64_t *flags = flag_page;
    uint64_t beside0 = stats_get(STAT_DIFFS_BESIDE_ASKS);
    dsm_barrier();

    for (int r = 1; r <= rounds; r++) {
        wait_all(flags, n, 1, r - 1);
        for (size_t j = 0; j < pages; j++)
            for (size_t w = 0; w < WORDS_EACH; w++)
                data[row_page(me, j, pages, n, words) + word_of(r, w, words)] = value(r, me, j, w);
        dsm_flush();
        flags[me * 2] = r;
        dsm_flush();
        wait_all(flags, n, 0, r);
        for (int i = 0; i < n; i++)
            for (size_t j = 0; j < pages; j++)
                for (size_t w = 0; w < WORDS_EACH; w++) {
                    int64_t got = data[row_page(i, j, pages, n, words) + word_of(r, w, words)];
                    MP_CHECK(got == value(r, i, j, w),
                             "round %d: node %d's word %zu of page %zu is %#llx, not %#llx", r, i, w,
                             j, (unsigned long long)got, (unsigned long long)value(r, i, j, w));
                }
        flags[me * 2 + 1] = r;
        dsm_flush();
    }
    uint64_t beside = stats_get(STAT_DIFFS_BESIDE_ASKS) - beside0;
    dsm_barrier();

    const char *limit = getenv("DSM_LOCAL_MEM");
    bool hlrc = strcmp(coherence_name(), "hlrc") == 0;
    if (hlrc && !(limit && *limit))
        MP_CHECK(beside > 0, "no diff of %d flushes went beside its asks (hlrc)", 2 * rounds);
    if (!hlrc)
        MP_CHECK(beside == 0, "%llu diffs went beside a flush's asks under %s",
                 (unsigned long long)beside, coherence_name());
    if (me == 0)
        printf("flush_beside_diffs: %d nodes (%s), %d rounds of %zu pages: ok; %llu diffs beside "
               "the asks at node 0\n",
               n, coherence_name(), rounds, pages, (unsigned long long)beside);
    dsm_finish();
    return 0;
}
