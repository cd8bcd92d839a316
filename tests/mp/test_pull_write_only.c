/*
 * A page a node writes again without reading earns no pulls (hlrc,
 * src/coherence/hlrc.c, make_valid): pages homed at node 0 are written
 * whole by node 1 once a cycle (a write fault on its invalid copy, which
 * fetches it), then rewritten by node 0 over several barriers, whose
 * notices reach node 1. Node 1 never reads them in between: a pull (a
 * refresh at each acquire that brings a notice) would carry a page nobody
 * here reads. NPB 3.0 C BT writes its lhs blocks so: each node's x_solve
 * overwrites pages the other node rewrote in y_solve and z_solve. With a
 * write fault's fetch counted as a re-read, node 1 pulled each page at
 * every one of node 0's writes (credit 8). Reads still earn pulls: a
 * second array is read by node 1 after each of node 0's writes, and must
 * be pulled. Every value is checked at the end of each cycle by every node
 * but node 1 (which checks them at the end of the run: its reads would
 * earn pulls), and node 0 checks node 1's writes.
 *
 *   test_pull_write_only   (2 nodes or more; nodes past 1 only read at the
 *                           cycle's end)
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES 4
#define CYCLES 12
#define HOME_WRITES 4

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    MP_CHECK(n >= 2, "test_pull_write_only needs 2 nodes or more");
    size_t words = dsm_page_size() / sizeof(int64_t), all = PAGES * words;
    int64_t *w = NULL, *r = NULL;
    if (me == 0) {
        w = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_LOCAL);
        r = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_LOCAL);
        for (size_t i = 0; i < all; i++)
            w[i] = r[i] = -1;
    }
    dsm_bcast(&w, sizeof w, 0);
    dsm_bcast(&r, sizeof r, 0);
    dsm_barrier();
    uint64_t pulled0 = stats_get(STAT_PAGES_PULLED);
    int64_t seen = 0;
    for (int cy = 0; cy < CYCLES; cy++) {
        int64_t base = (int64_t)cy * (HOME_WRITES + 1) * 1000;
        if (me == 1)
            for (size_t i = 0; i < all; i++)
                w[i] = base + (int64_t)i;
        dsm_barrier();
        if (me == 0)
            for (size_t i = 0; i < all; i++)
                MP_CHECK(w[i] == base + (int64_t)i, "cycle %d: node 1's word %zu is %lld, not %lld", cy, i,
                         (long long)w[i], (long long)(base + (int64_t)i));
        for (int k = 1; k <= HOME_WRITES; k++) {
            int64_t v = base + k * 1000;
            if (me == 0)
                for (size_t i = 0; i < all; i++)
                    w[i] = r[i] = v + (int64_t)i;
            dsm_barrier();
            if (me == 1)
                for (size_t i = 0; i < all; i += words)
                    seen += r[i] == v + (int64_t)i;
            dsm_barrier();
        }
        int64_t last = base + HOME_WRITES * 1000;
        if (me != 1) /* node 1 reads w only at the end: a read earns pulls */
            for (size_t i = 0; i < all; i++)
                MP_CHECK(w[i] == last + (int64_t)i && r[i] == last + (int64_t)i,
                         "cycle %d word %zu: %lld and %lld, not %lld", cy, i, (long long)w[i],
                         (long long)r[i], (long long)(last + (int64_t)i));
        dsm_barrier();
    }
    int64_t last = (int64_t)(CYCLES - 1) * (HOME_WRITES + 1) * 1000 + HOME_WRITES * 1000;
    for (size_t i = 0; i < all; i++)
        MP_CHECK(w[i] == last + (int64_t)i && r[i] == last + (int64_t)i, "at the end, word %zu: %lld and "
                 "%lld, not %lld", i, (long long)w[i], (long long)r[i], (long long)(last + (int64_t)i));
    uint64_t pulled = stats_get(STAT_PAGES_PULLED) - pulled0; /* the final check pulls none */
    printf("node %d: %llu pages pulled in %d cycles\n", me, (unsigned long long)pulled, CYCLES);
    if (me == 1) {
        MP_CHECK(seen == (int64_t)PAGES * CYCLES * HOME_WRITES, "node 1 read %lld current pages, not %d",
                 (long long)seen, PAGES * CYCLES * HOME_WRITES);
        /* The read pages: pulled at most at each of node 0's writes after
         * the first cycle's reads; the written ones never. */
        uint64_t most = (uint64_t)PAGES * CYCLES * HOME_WRITES;
        MP_CHECK(pulled > 0, "node 1 pulled none of the pages it reads after every write");
        MP_CHECK(pulled <= most, "node 1 pulled %llu pages in %d cycles, more than the %llu of the pages "
                 "it reads: it pulled pages it only writes", (unsigned long long)pulled, CYCLES,
                 (unsigned long long)most);
    }
    dsm_finish();
    return 0;
}
