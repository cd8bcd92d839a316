/*
 * Barriers order message passing through memory: in round r every node
 * writes its slot of a shared array (a few words on a page shared with the
 * other nodes' slots, and a page of its own), then a barrier, then every
 * node reads every slot and checks the round-r values, then a barrier so
 * that no slot is overwritten while someone may still be reading it. The
 * slot pages live at node 0 (small blocks) and cyclically on all nodes
 * (DSM_HOME_CYCLIC), so both home and remote writers are covered.
 * Usage: test_barrier_messages [rounds]
 */
#include "mp_util.h"

#define PACKED_WORDS 4     /* per node, on pages shared with the others */

static int64_t value(int round, int node, int word)
{
    return ((int64_t)round << 32) ^ ((int64_t)node << 20) ^ (word * 7919 + 1);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    const size_t PAGE_WORDS = dsm_page_size() / sizeof(int64_t); /* a page per node */

    int64_t *packed = NULL, *paged = NULL;
    if (me == 0) {
        packed = dsm_malloc((size_t)n * PACKED_WORDS * sizeof(int64_t));
        paged = dsm_malloc_home((size_t)n * PAGE_WORDS * sizeof(int64_t), DSM_HOME_CYCLIC);
    }
    dsm_bcast(&packed, sizeof packed, 0);
    dsm_bcast(&paged, sizeof paged, 0);

    for (int r = 0; r < rounds; r++) {
        for (int w = 0; w < PACKED_WORDS; w++)
            packed[me * PACKED_WORDS + w] = value(r, me, w);
        /* Every round writes the page's words in a different subset, so
         * some rounds change only part of the page. */
        for (size_t w = (size_t)r % 3; w < PAGE_WORDS; w += 1 + (size_t)r % 3)
            paged[(size_t)me * PAGE_WORDS + w] = value(r, me, (int)w);
        paged[(size_t)me * PAGE_WORDS] = value(r, me, 0);
        dsm_barrier();
        for (int j = 0; j < n; j++) {
            for (int w = 0; w < PACKED_WORDS; w++)
                MP_CHECK(packed[j * PACKED_WORDS + w] == value(r, j, w),
                         "round %d: node %d's packed word %d = %#llx, expected %#llx", r, j, w,
                         (unsigned long long)packed[j * PACKED_WORDS + w],
                         (unsigned long long)value(r, j, w));
            const int64_t *page = paged + (size_t)j * PAGE_WORDS;
            MP_CHECK(page[0] == value(r, j, 0), "round %d: node %d's page word 0", r, j);
            for (size_t w = (size_t)r % 3; w < PAGE_WORDS; w += 1 + (size_t)r % 3)
                MP_CHECK(page[w] == value(r, j, (int)w),
                         "round %d: node %d's page word %zu = %#llx, expected %#llx", r, j, w,
                         (unsigned long long)page[w], (unsigned long long)value(r, j, (int)w));
        }
        dsm_barrier();
    }
    if (me == 0)
        printf("barrier_messages: %d nodes, %d rounds of %d slots: ok\n", n, rounds, n);
    dsm_finish();
    return 0;
}
