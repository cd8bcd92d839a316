/*
 * Sequential consistency, store buffering (Dekker): two nodes each store to
 * their own flag, then load the other's. Some store comes first in any
 * interleaving, so at least one node must see the other's store; under
 * release consistency (or a hardware store buffer) both may read the old
 * value. The nodes pair up (0-1, 2-3, ...; an odd one out watches) and run
 * many rounds, each started by a barrier; in round r the stores write r + 1,
 * so "old" means anything less. Half the rounds the pair's flags lie on
 * two pages with different homes, half on one page. Each node records what
 * it read; after a barrier both check the pair's outcome.
 * With `flush`, each node flushes between its store and its load (dsm_flush,
 * OpenMP's flush): under every protocol flushes are seen in one order, so
 * the outcome must be the same (src/sync/flush.c).
 * Usage: test_sc_store_buffering [rounds] [flush]
 */
#include <stdbool.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    bool flush = argc > 2 && !strcmp(argv[2], "flush");
    size_t page = dsm_page_size(), pw = page / sizeof(int64_t);

    /* apart: node i's flag on page i (homes cyclic); together: the pair's
     * flags in one page, a page per pair; seen: what each node read, for
     * two rounds (a node may start round r + 1 while its partner still
     * checks round r). */
    int64_t *apart = NULL, *together = NULL, *seen = NULL;
    if (me == 0) {
        apart = dsm_malloc_home((size_t)n * page, DSM_HOME_CYCLIC);
        together = dsm_malloc_home((size_t)(n / 2 + 1) * page, DSM_HOME_CYCLIC);
        seen = dsm_malloc((size_t)n * sizeof(int64_t));
    }
    dsm_bcast(&apart, sizeof apart, 0);
    dsm_bcast(&together, sizeof together, 0);
    dsm_bcast(&seen, sizeof seen, 0);

    int partner = me ^ 1;
    bool paired = partner < n;
    int counts[3] = {0}; /* rounds in which 0, 1 or 2 of the pair saw the other */
    for (int r = 0; r < rounds; r++) {
        volatile int64_t *mine, *theirs;
        if (r % 2 == 0) {
            mine = apart + (size_t)me * pw;
            theirs = apart + (size_t)partner * pw;
        } else {
            /* Words far apart in the pair's page: same page, different lines. */
            volatile int64_t *p = together + (size_t)(me / 2) * pw;
            mine = p + (me & 1) * (pw / 2);
            theirs = p + (partner & 1) * (pw / 2);
        }
        int64_t old = r < 2 ? 0 : r - 1; /* each layout's flags were last set two rounds ago */
        dsm_barrier();
        if (paired) {
            *mine = r + 1;
            if (flush)
                dsm_flush();
            seen[me] = *theirs;
        }
        dsm_barrier();
        if (paired) {
            int64_t a = seen[me], b = seen[partner];
            MP_CHECK(a == r + 1 || b == r + 1,
                     "round %d (%s): node %d read %lld and node %d read %lld: neither saw the "
                     "other's store of %d", r, r % 2 ? "one page" : "two pages", me, (long long)a,
                     partner, (long long)b, r + 1);
            MP_CHECK((a == r + 1 || a == old) && (b == r + 1 || b == old),
                     "round %d: flags read %lld and %lld, neither this round's value nor the "
                     "layout's last (%lld)", r, (long long)a, (long long)b, (long long)old);
            counts[(a == r + 1) + (b == r + 1)]++;
        }
    }
    if (me == 0)
        printf("%s: %d nodes, %d rounds: never both old; node 0's pair saw one store in %d "
               "rounds, both in %d\n", flush ? "flush_store_buffering" : "sc_store_buffering", n,
               rounds, counts[1], counts[2]);
    dsm_finish();
    return 0;
}
