/*
 * A home's writes to pages no other node holds any more (hlrc.c,
 * announce_home_writes): node 0 homes `pages` pages that every node reads
 * once, then changes every page every round. In the first rounds one
 * other node reads two pages a round (each read checks the latest
 * values); in the next, no other node reads: under hlrc (no
 * DSM_LOCAL_MEM) node 0 must not compare, or fault on, pages nobody
 * fetches any more (at most one each once the readers' pulls and the
 * pages' fetch credit have run out), where a home that kept every page
 * shared compared each at each release (NAS MG class A: 25,000 write
 * faults of 12 us an iteration on the node whose pages had moved there).
 * Then node 0 writes every page under a lock whose next holders read
 * them: writes announced by no notice of their own (the pages are no
 * longer shared) must still be seen, and at the end every node reads
 * every page's last value.
 * Usage: test_home_unshared [rounds] [pages]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

static int64_t value(int round, size_t page)
{
    return ((int64_t)(round + 1) << 32) ^ (int64_t)(page * 7919 + 13);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    int npages = argc > 2 ? atoi(argv[2]) : 32;
    MP_CHECK(rounds >= 3 && rounds <= 10000, "rounds %d out of 3..10000", rounds);
    MP_CHECK(npages >= 4 && npages <= 4096, "pages %d out of 4..4096", npages);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), np = (size_t)npages;

    int64_t *a = NULL;
    int64_t *flag = NULL;
    if (me == 0) {
        a = dsm_malloc_home(np * page, DSM_HOME_LOCAL);
        flag = dsm_malloc_home(page, DSM_HOME_LOCAL);
        memset(a, 0, np * page);
        *flag = 0;
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_bcast(&flag, sizeof flag, 0);
    dsm_barrier();
    for (size_t q = 0; q < np; q++)
        MP_CHECK(a[q * words] == 0, "page %zu not zero at the start", q);
    dsm_barrier();

    /* Through barriers: word 0 counts the rounds, one other word a round
     * holds the round's value. In the first `rounds` rounds one other
     * node reads two pages a round; in the next, nobody reads: after
     * QUIET_FROM of them (a reader's pulls at its acquires end,
     * DSM_PULL_CREDIT, and a page fetched stays shared for a few changes,
     * SHARED_AFTER_FETCH) node 0's writes are counted. */
    enum { QUIET_FROM = 12 };
    uint64_t compares0 = 0, faults0 = 0;
    for (int r = 0; r < 2 * rounds + QUIET_FROM; r++) {
        if (r == rounds + QUIET_FROM) {
            compares0 = stats_get(STAT_HOME_COMPARES);
            faults0 = stats_get(STAT_WRITE_FAULTS);
        }
        size_t w = 1 + (size_t)r % (words - 1);
        if (me == 0)
            for (size_t q = 0; q < np; q++) {
                a[q * words] = r + 1;
                a[q * words + w] = value(r, q);
            }
        dsm_barrier();
        if (r < rounds && n > 1 && me == 1 + r % (n - 1)) {
            size_t read[2] = {(size_t)r % np, ((size_t)r + np - 2) % np};
            for (int k = 0; k < 2; k++) {
                size_t q = read[k];
                MP_CHECK(a[q * words] == r + 1 && a[q * words + w] == value(r, q),
                         "round %d: node %d reads page %zu as round %lld, word %zu %#llx (%#llx "
                         "expected)", r, me, q, (long long)a[q * words], w,
                         (unsigned long long)a[q * words + w], (unsigned long long)value(r, q));
            }
        }
        dsm_barrier();
    }
    uint64_t compares = stats_get(STAT_HOME_COMPARES) - compares0;
    uint64_t faults = stats_get(STAT_WRITE_FAULTS) - faults0;
    int last = 2 * rounds + QUIET_FROM; /* word 0's value now */

    /* Through a lock: node 0 changes every page and raises the flag
     * under it; each other node waits under the lock for the round and
     * reads one page there. */
    for (int r = 0; r < rounds; r++) {
        if (me == 0) {
            dsm_lock(0);
            for (size_t q = 0; q < np; q++)
                a[q * words] = last + r + 1;
            *flag = r + 1;
            dsm_unlock(0);
        } else {
            for (;;) {
                dsm_lock(0);
                int64_t f = *flag;
                if (f >= r + 1) {
                    size_t q = ((size_t)r * 3 + (size_t)me) % np;
                    int64_t got = a[q * words];
                    dsm_unlock(0);
                    MP_CHECK(got == last + f, "lock round %d: node %d reads page %zu as %lld "
                             "under the flag %lld (%lld expected)", r, me, q, (long long)got,
                             (long long)f, (long long)(last + f));
                    break;
                }
                dsm_unlock(0);
            }
        }
    }
    dsm_barrier();
    for (size_t q = 0; q < np; q++)
        MP_CHECK(a[q * words] == last + rounds, "at the end node %d reads page %zu as %lld (%d "
                 "expected)", me, q, (long long)a[q * words], last + rounds);
    dsm_barrier();

    const char *limit = getenv("DSM_LOCAL_MEM");
    if (me == 0 && strcmp(coherence_name(), "hlrc") == 0 && !(limit && *limit)) {
        MP_CHECK(compares <= np && faults <= np,
                 "node 0 compared %llu home pages and took %llu write faults in %d rounds that "
                 "changed %zu pages no other node read: at most %zu each expected",
                 (unsigned long long)compares, (unsigned long long)faults, rounds, np, np);
        printf("home_unshared: %d nodes, %d rounds of %zu pages: ok; %llu compares, %llu write "
               "faults in the rounds nobody read\n", n, rounds, np, (unsigned long long)compares,
               (unsigned long long)faults);
    } else if (me == 0) {
        printf("home_unshared: %d nodes (%s), %d rounds of %zu pages: ok\n", n, coherence_name(),
               rounds, np);
    }
    dsm_finish();
    return 0;
}
