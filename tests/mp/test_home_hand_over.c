/*
 * Homes handed over while requests for their pages arrive (issue 36,
 * docs/migration.md "Giving a home away").
 *
 * A home gives a page away on its program's thread, in the migration
 * round, while its delivering thread serves and forwards what reaches it:
 * at a barrier every node pulls the pages it keeps re-reading (hlrc's
 * pull credit), in runs of consecutive pages, from the homes it knows,
 * and those pulls land on a home while it hands the same pages over. Each
 * request must find the node either still the page's home or a former
 * home that knows where the page went. The version that recorded the new
 * home before the successor failed here, on a loaded machine, with "node N
 * asked node 0 for page P, which it is not the home of".
 *
 * Many pages, all starting homed at node 0; block b (PAGES_PER_BLOCK
 * pages) is rewritten whole in iteration t by node (b + t / 3) mod n, so
 * each block's home follows its writer from one node to the next every
 * three iterations (DSM_MIGRATE_HOMES, a window per barrier), and every
 * node reads every page after every write phase and checks it. With a
 * migration round at most barriers, pulls from every node meet moves of
 * the pages they ask for, at node 0 and at each later home.
 *
 *   test_home_hand_over   checks every value, every iteration; at the end
 *       the blocks must have moved (pages given and received: counted)
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES_PER_BLOCK 16
#define ITERATIONS 24

static int writer(int block, int t, int n) { return (block + t / 3) % n; }

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    size_t words = dsm_page_size() / sizeof(int64_t);
    size_t blocks = (size_t)n * 2, pages = blocks * PAGES_PER_BLOCK;
    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home(pages * dsm_page_size(), DSM_HOME_LOCAL);
        memset(a, 0, pages * dsm_page_size());
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_barrier();
    for (int t = 1; t <= ITERATIONS; t++) {
        for (size_t b = 0; b < blocks; b++) {
            if (writer((int)b, t, n) != me)
                continue;
            for (size_t i = b * PAGES_PER_BLOCK * words; i < (b + 1) * PAGES_PER_BLOCK * words; i++)
                a[i] = (int64_t)t * 1000000 + (int64_t)(i % 1000000);
        }
        dsm_barrier();
        for (size_t i = 0; i < pages * words; i++)
            MP_CHECK(a[i] == (int64_t)t * 1000000 + (int64_t)(i % 1000000),
                     "iteration %d: page %zu word %zu is %lld, not %lld", t, i / words, i % words,
                     (long long)a[i], (long long)((int64_t)t * 1000000 + (int64_t)(i % 1000000)));
        dsm_barrier();
    }
    uint64_t given = stats_get(STAT_MIGRATE_HOMES) + stats_get(STAT_MIGRATE_PAGES),
             in = stats_get(STAT_MIGRATE_IN), fwd = stats_get(STAT_MIGRATE_FORWARDS),
             rounds = stats_get(STAT_MIGRATE_ROUNDS);
    /* Every node writes some block after node 0 did (t / 3 moves each
     * block on), so each receives pages, and node 0 gives its own away. */
    MP_CHECK(in > 0, "node %d received no page as its home in %d iterations", me, ITERATIONS);
    if (me == 0)
        MP_CHECK(given > 0, "node 0 gave no page away");
    printf("node %d: gave %llu, received %llu, forwarded %llu pages in %llu migration rounds; every value "
           "checked\n",
           me, (unsigned long long)given, (unsigned long long)in, (unsigned long long)fwd,
           (unsigned long long)rounds);
    dsm_finish();
    return 0;
}
