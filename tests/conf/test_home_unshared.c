/*
 * A home's writes to pages no other node holds any more (hlrc.c,
 * announce_home_writes): node 0 homes `pages` pages that every node reads
 * once, then changes every page every round; each round one or two pages
 * are read by one other node, so each page's copies elsewhere are
 * invalidated by its first notice and seldom fetched again. Every value
 * read must be the latest, through barriers and through a lock handed
 * from the writer to the readers, including a page written again after
 * its notice without another (read two rounds after its last read, with
 * no fetch between). Under hlrc (no DSM_LOCAL_MEM) node 0 must not have
 * compared, or faulted on, the pages nobody fetched again: at most one
 * compare a page and one for each page it served, where a home that kept every page
 * shared compared each at each release (NAS MG class A: 25,000 write
 * faults of 12 us an iteration on the node whose pages had moved there).
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
     * holds the round's value. */
    uint64_t compares0 = stats_get(STAT_HOME_COMPARES), faults0 = stats_get(STAT_WRITE_FAULTS);
    uint64_t served0 = stats_get(STAT_PAGES_SERVED);
    for (int r = 0; r < rounds; r++) {
        size_t w = 1 + (size_t)r % (words - 1);
        if (me == 0)
            for (size_t q = 0; q < np; q++) {
                a[q * words] = r + 1;
                a[q * words + w] = value(r, q);
            }
        dsm_barrier();
        if (n > 1 && me == 1 + r % (n - 1)) {
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
    uint64_t served = stats_get(STAT_PAGES_SERVED) - served0;

    /* Through a lock: node 0 changes every page and raises the flag
     * under it; each other node waits under the lock for the round and
     * reads one page there. */
    for (int r = 0; r < rounds; r++) {
        if (me == 0) {
            dsm_lock(0);
            for (size_t q = 0; q < np; q++)
                a[q * words] = rounds + r + 1;
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
                    MP_CHECK(got == rounds + f, "lock round %d: node %d reads page %zu as %lld "
                             "under the flag %lld (%lld expected)", r, me, q, (long long)got,
                             (long long)f, (long long)(rounds + f));
                    break;
                }
                dsm_unlock(0);
            }
        }
    }
    dsm_barrier();
    for (size_t q = 0; q < np; q++)
        MP_CHECK(a[q * words] == 2 * rounds, "at the end node %d reads page %zu as %lld (%d expected)",
                 me, q, (long long)a[q * words], 2 * rounds);
    dsm_barrier();

    const char *limit = getenv("DSM_LOCAL_MEM");
    if (me == 0 && strcmp(coherence_name(), "hlrc") == 0 && !(limit && *limit)) {
        /* Each page once (its first change, announced), and once more
         * for each time it was served again (a read, a read ahead, a
         * reader's pull at its acquires: DSM_PULL_CREDIT). */
        uint64_t most = np + served;
        MP_CHECK(compares <= most && faults <= most,
                 "node 0 compared %llu home pages and took %llu write faults in %d rounds of %zu "
                 "pages, serving %llu: at most %llu each expected", (unsigned long long)compares,
                 (unsigned long long)faults, rounds, np, (unsigned long long)served,
                 (unsigned long long)most);
        printf("home_unshared: %d nodes, %d rounds of %zu pages: ok; %llu compares, %llu write "
               "faults, %llu pages served\n", n, rounds, np, (unsigned long long)compares,
               (unsigned long long)faults, (unsigned long long)served);
    } else if (me == 0) {
        printf("home_unshared: %d nodes (%s), %d rounds of %zu pages: ok\n", n, coherence_name(),
               rounds, np);
    }
    dsm_finish();
    return 0;
}
