/*
 * Release/acquire is transitive across two locks, under every protocol:
 * node A writes x and unlocks L1; node B locks L1, reads x, writes y from
 * it and unlocks L2; node C locks L2 — never L1 — and must see both x and
 * y. A holds L1 and B holds L2 from before a barrier, so B's lock follows
 * A's unlock and C's follows B's. The roles move one node on each round
 * (on 2 nodes C is A again), the values change every round, x and y fill
 * whole pages homed on different nodes, and every node reads both after
 * each round, so everyone holds copies that the next round makes stale.
 * Usage: test_lock_chain_two_locks [rounds]
 */
#include "mp_util.h"

#define L1 1
#define L2 2

static int64_t xval(int round, size_t word)
{
    return (int64_t)(round + 1) * 1000003 + (int64_t)word * 31;
}

static int64_t yval(int round, int64_t x)
{
    return x * 3 + round;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    size_t pw = dsm_page_size() / sizeof(int64_t);

    int64_t *pages = NULL;
    if (me == 0)
        pages = dsm_malloc_home(2 * dsm_page_size(), DSM_HOME_CYCLIC);
    dsm_bcast(&pages, sizeof pages, 0);
    int64_t *x = pages, *y = pages + pw;

    for (int r = 0; r < rounds; r++) {
        int a = r % n, b = (r + 1) % n, c = (r + 2) % n;
        if (me == a)
            dsm_lock(L1);
        if (me == b)
            dsm_lock(L2);
        dsm_barrier();
        if (me == a) {
            for (size_t w = 0; w < pw; w++)
                x[w] = xval(r, w);
            dsm_unlock(L1);
        }
        if (me == b) {
            dsm_lock(L1);
            for (size_t w = 0; w < pw; w++) {
                MP_CHECK(x[w] == xval(r, w), "round %d: B (node %d) read x[%zu] = %lld after "
                         "locking L1, expected %lld from A (node %d)", r, me, w, (long long)x[w],
                         (long long)xval(r, w), a);
                y[w] = yval(r, x[w]);
            }
            dsm_unlock(L1);
            dsm_unlock(L2);
        }
        if (me == c) {
            dsm_lock(L2);
            for (size_t w = 0; w < pw; w++) {
                MP_CHECK(x[w] == xval(r, w), "round %d: C (node %d) read x[%zu] = %lld after "
                         "locking L2, expected %lld from A (node %d) through B (node %d)", r, me,
                         w, (long long)x[w], (long long)xval(r, w), a, b);
                MP_CHECK(y[w] == yval(r, xval(r, w)), "round %d: C (node %d) read y[%zu] = %lld "
                         "after locking L2, expected %lld from B (node %d)", r, me, w,
                         (long long)y[w], (long long)yval(r, xval(r, w)), b);
            }
            dsm_unlock(L2);
        }
        dsm_barrier();
        for (size_t w = 0; w < pw; w++)
            MP_CHECK(x[w] == xval(r, w) && y[w] == yval(r, xval(r, w)),
                     "round %d: after the barrier x[%zu] = %lld, y[%zu] = %lld", r, w,
                     (long long)x[w], w, (long long)y[w]);
        dsm_barrier(); /* nobody writes round r + 1 while another still reads round r */
    }
    if (me == 0)
        printf("lock_chain_two_locks: %d nodes, %d rounds: C saw A's x and B's y through L2 "
               "alone\n", n, rounds);
    dsm_finish();
    return 0;
}
