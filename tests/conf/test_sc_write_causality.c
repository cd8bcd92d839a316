/*
 * Sequential consistency, write-to-read causality (WRC): node A stores x;
 * node B waits until it sees x, then stores y; every other node waits until
 * it sees y, then must see x too — B's store depends on A's, so no node may
 * see them in the other order. No lock or barrier orders the three (barriers
 * only separate rounds). The roles move one node on each round, x and y lie
 * on pages homed on different nodes, and every node holds copies of both
 * from the round before, so a stale copy would be caught.
 * Usage: test_sc_write_causality [rounds]   (3 nodes or more)
 */
#include <sched.h>

#include "mp_util.h"

/* More nodes than cores: a spinning node must let the others run. */
static void await(volatile int64_t *word, int64_t want)
{
    while (*word != want)
        sched_yield();
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    MP_CHECK(n >= 3, "the causality chain needs 3 nodes");
    size_t pw = dsm_page_size() / sizeof(int64_t);

    int64_t *pages = NULL;
    if (me == 0)
        pages = dsm_malloc_home(2 * dsm_page_size(), DSM_HOME_CYCLIC);
    dsm_bcast(&pages, sizeof pages, 0);
    volatile int64_t *x = pages, *y = pages + pw;

    for (int r = 0; r < rounds; r++) {
        int a = r % n, b = (r + 1) % n;
        int64_t want = r + 1;
        if (me == a)
            *x = want;
        else if (me == b) {
            await(x, want);
            *y = want;
        } else {
            await(y, want);
            int64_t seen = *x;
            MP_CHECK(seen == want,
                     "round %d: saw node %d's y = %lld, which it stored after seeing node %d's "
                     "x = %lld, but x reads %lld here", r, b, (long long)want, a, (long long)want,
                     (long long)seen);
        }
        dsm_barrier();
        MP_CHECK(*x == want && *y == want, "round %d: after the barrier x = %lld, y = %lld", r,
                 (long long)*x, (long long)*y);
        dsm_barrier(); /* nobody stores round r + 1 while another still reads round r */
    }
    if (me == 0)
        printf("sc_write_causality: %d nodes, %d rounds: y seen implied x seen, %d observers\n", n,
               rounds, n - 2);
    dsm_finish();
    return 0;
}
