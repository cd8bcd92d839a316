/*
 * Long sequential reads of pages that change between barriers: the pattern
 * that makes hlrc read pages ahead of a fault, a run of one home's pages
 * in one request and one reply received in place (other protocols fetch
 * page by page; the answers must be the same).
 *
 * A shared array of `pages` pages, homed in N contiguous blocks (so a run
 * read ahead meets the end of its home's block), is rewritten every round:
 *  - its home writes page q's words 1.. in every round but those with
 *    (q + r) % 3 == 0, so some pages of a run change and others do not
 *    (a run meets pages still valid here, and carries pages at different
 *    versions);
 *  - for q % 5 == 0, the next node after the home writes word 0 (a diff
 *    that the home applies: another writer's version in the run).
 * After a barrier every node reads every word of every page in address
 * order, from a start that moves each round, and checks it. Under hlrc
 * with DSM_READ_AHEAD=0 no page may have been read ahead.
 * Usage: test_read_ahead [rounds] [pages]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

static int64_t value(int round, size_t page, size_t word)
{
    return (int64_t)(round + 2) * 1000003 + (int64_t)page * 1031 + (int64_t)word;
}

/* The last round, up to r, in which the home wrote page q (-1: the
 * initial write, before round 0). */
static int last_home_write(int r, size_t q)
{
    for (; r >= 0; r--)
        if ((q + (size_t)r) % 3 != 0)
            return r;
    return -1;
}

/* DSM_HOME_BLOCK's home of page q of the allocation (src/mem/alloc.c). */
static int home_of(size_t q, size_t pages, int n) { return (int)(q * (size_t)n / pages); }

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 12;
    int npages = argc > 2 ? atoi(argv[2]) : 96;
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    MP_CHECK(npages >= n && npages <= 4096, "pages %d out of %d..4096", npages, n);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), pages = (size_t)npages;

    int64_t *a = NULL;
    if (me == 0)
        a = dsm_malloc_home(pages * page, DSM_HOME_BLOCK);
    dsm_bcast(&a, sizeof a, 0);
    for (size_t q = 0; q < pages; q++)
        if (home_of(q, pages, n) == me)
            for (size_t w = 0; w < words; w++)
                a[q * words + w] = value(-1, q, w);
    dsm_barrier();

    for (int r = 0; r < rounds; r++) {
        for (size_t q = 0; q < pages; q++) {
            int home = home_of(q, pages, n);
            if (home == me && (q + (size_t)r) % 3 != 0)
                for (size_t w = 1; w < words; w++)
                    a[q * words + w] = value(r, q, w);
            if (n > 1 && q % 5 == 0 && (home + 1) % n == me)
                a[q * words] = value(r, q, 0);
        }
        dsm_barrier();

        size_t start = ((size_t)r * 7 + (size_t)me * 13) % pages;
        for (size_t k = 0; k < pages; k++) {
            size_t q = (start + k) % pages;
            int home_round = last_home_write(r, q);
            for (size_t w = 0; w < words; w++) {
                int64_t want = value(home_round, q, w);
                if (w == 0)
                    want = n > 1 && q % 5 == 0 ? value(r, q, 0) : value(-1, q, 0);
                int64_t got = a[q * words + w];
                MP_CHECK(got == want, "round %d: page %zu word %zu is %lld, not %lld", r, q, w,
                         (long long)got, (long long)want);
            }
        }
        dsm_barrier();
    }
    uint64_t ahead = stats_get(STAT_PAGES_AHEAD);
    const char *depth = getenv("DSM_READ_AHEAD");
    if (strcmp(coherence_name(), "hlrc") == 0 && depth && strcmp(depth, "0") == 0)
        MP_CHECK(ahead == 0, "DSM_READ_AHEAD=0, yet %llu pages were read ahead", (unsigned long long)ahead);
    if (me == 0)
        printf("read_ahead: %d rounds of %zu pages on %d nodes: ok, %llu pages read ahead on node 0\n",
               rounds, pages, n, (unsigned long long)ahead);
    dsm_finish();
    return 0;
}
