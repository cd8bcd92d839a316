/*
 * One-sided page fetch never reads a torn page nor one older than the
 * acquire needs (coherence/oneside.c; docs/protocols.md), while the home
 * applies diffs and announces its own writes all the time.
 *
 * One page homed at node 0, split in two halves, each guarded by a lock of
 * its own (false sharing: two writers' diffs of one page reach the home
 * at once). Every node, the home included, takes the locks in turn, checks
 * that every word of its half holds one value (a page read half-way
 * through a diff, or a slot half-way through its copy, would mix two),
 * and writes that value plus one into each. Each fault refetches the page
 * the other half's writers keep changing at the home; a copy older than
 * the lock's last holder left would lose an increment, which the final
 * count finds. A barrier begins each round: free-running rounds could
 * all run on one node before the other started (UCX's shared memory passes
 * a lock in microseconds), and then the locks never moved and node 1
 * fetched the page once (make test failed 1 run in 8). After the barrier
 * each node's lock comes from another node, so each round faults, and the
 * other writers' diffs still reach the home while the page is read.
 * Usage: test_oneside_false_sharing [rounds] [expect-one-sided 0|1]
 * (1: the nodes but the home must have read some pages one-sided.)
 */
#include <inttypes.h>

#include "base/stats.h"
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    int expect_got = argc > 2 ? atoi(argv[2]) : 0;
    size_t ps = dsm_page_size(), half = ps / 2 / sizeof(uint64_t);
    uint64_t *page = NULL;
    if (me == 0) {
        page = dsm_malloc_home(ps, DSM_HOME_LOCAL);
        MP_CHECK(page != NULL, "dsm_malloc_home");
    }
    dsm_bcast(&page, sizeof page, 0);
    dsm_barrier();
    for (int r = 0; r < rounds; r++) {
        dsm_barrier();
        int h = (r + me) % 2;
        volatile uint64_t *w = page + (size_t)h * half;
        dsm_lock(1 + h);
        uint64_t v = w[0];
        for (size_t i = 1; i < half; i++)
            MP_CHECK(w[i] == v, "round %d, half %d: word %zu holds %" PRIu64 ", word 0 %" PRIu64
                     " (a torn page)", r, h, i, w[i], v);
        for (size_t i = 0; i < half; i++)
            w[i] = v + 1;
        dsm_unlock(1 + h);
    }
    dsm_barrier();
    for (int h = 0; h < 2; h++) {
        dsm_lock(1 + h);
        uint64_t want = 0;
        for (int node = 0; node < n; node++) /* the rounds in which `node` took half h */
            want += (uint64_t)(rounds / 2 + (rounds % 2 && (node % 2) == h));
        MP_CHECK(page[(size_t)h * half] == want, "half %d: %" PRIu64 " increments kept of %" PRIu64
                 " (an update lost to a stale copy)", h, page[(size_t)h * half], want);
        dsm_unlock(1 + h);
    }
    uint64_t got = stats_get(STAT_PAGES_GOT);
    if (expect_got && me != 0)
        MP_CHECK(got > 0, "no page was read one-sided (DSM_NET=ucx, DSM_NET_ONE_SIDED=auto): %" PRIu64
                 " fetched, %" PRIu64 " one-sided reads asked the home, %" PRIu64 " read again",
                 stats_get(STAT_PAGES_FETCHED), stats_get(STAT_ONESIDE_ASKED), stats_get(STAT_ONESIDE_RETRIES));
    if (!expect_got)
        MP_CHECK(got == 0, "%" PRIu64 " pages read one-sided, none expected", got);
    dsm_barrier();
    if (me == 0)
        printf("one-sided false sharing: %d rounds on %d nodes, every increment kept\n", rounds, n);
    dsm_finish();
    return 0;
}
