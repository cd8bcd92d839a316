/*
 * Locks: mutual exclusion, and writes carried from releaser to acquirer.
 *  1. one counter under lock 0: every node adds 1, `incs` times; after a
 *     barrier every node reads exactly nodes * incs;
 *  2. several counters under different locks, some sharing one page (their
 *     diffs merge at the home) and some on pages homed on different nodes
 *     (DSM_HOME_CYCLIC), updated in an interleaved pattern, some with two
 *     locks held at once; the totals are exact;
 *  3. a lock chain is transitive: node j may enter only after node j-1 has
 *     released lock L(j), which node j-1 took before a barrier. Node j
 *     acquires L(j) alone — it never acquires the locks of the nodes before
 *     j-1 — yet must see what every node before it wrote, on pages of its
 *     own and on one page all of them write.
 * Usage: test_lock_counter [incs] [rounds]
 */
#include "mp_util.h"

#define K            4     /* counters per group */
#define LOCK_COUNTER 0
#define LOCK_NEAR    1     /* + k: counters sharing one page */
#define LOCK_FAR     11    /* + k: counters one per page, homes cyclic */
#define LOCK_CHAIN   100   /* + j: node j's way in */

struct shared {
    int64_t counter;
    int64_t near[K];
    int64_t chain_packed[MP_MAX_NODES]; /* one word per node, all on one page */
};

static int64_t chain_value(int round, int node, int word)
{
    return (int64_t)(round + 1) * 1000003 + (int64_t)node * 4099 + word;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long incs = argc > 1 ? atol(argv[1]) : 200;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    MP_CHECK(n <= MP_MAX_NODES, "at most %d nodes", MP_MAX_NODES);

    struct shared *s = NULL;
    int64_t *far = NULL, *chain = NULL;
    size_t page = dsm_page_size(), far_stride = page / sizeof(int64_t);
    const int SLOT_WORDS = (int)(page / sizeof(int64_t)); /* a page of int64 per node */
    if (me == 0) {
        s = dsm_malloc(sizeof *s);
        far = dsm_malloc_home(K * page, DSM_HOME_CYCLIC);
        chain = dsm_malloc((size_t)n * SLOT_WORDS * sizeof(int64_t));
    }
    dsm_bcast(&s, sizeof s, 0);
    dsm_bcast(&far, sizeof far, 0);
    dsm_bcast(&chain, sizeof chain, 0);

    /* 1. One counter. */
    for (long i = 0; i < incs; i++) {
        dsm_lock(LOCK_COUNTER);
        s->counter++;
        dsm_unlock(LOCK_COUNTER);
    }
    dsm_barrier();
    MP_CHECK(s->counter == (int64_t)n * incs, "counter %lld, expected %lld",
             (long long)s->counter, (long long)n * incs);

    /* 2. Several counters, several locks. Node r's step i updates counter
     * (r + i) % K of each group, and every 4th step also moves one unit
     * from near[a] to near[b] holding both locks (in id order). */
    int64_t want_near[K] = {0}, want_far[K] = {0};
    for (int r = 0; r < n; r++)
        for (long i = 0; i < incs; i++) {
            int k = (int)((r + i) % K);
            want_near[k] += r + 1;
            want_far[k] += i + 1;
        }
    for (long i = 0; i < incs; i++) {
        int k = (int)((me + i) % K);
        dsm_lock(LOCK_NEAR + k);
        s->near[k] += me + 1;
        dsm_unlock(LOCK_NEAR + k);
        dsm_lock(LOCK_FAR + k);
        far[(size_t)k * far_stride] += i + 1;
        dsm_unlock(LOCK_FAR + k);
        if (i % 4 == 3) {
            int a = k, b = (k + 1) % K;
            int lo = a < b ? a : b, hi = a < b ? b : a;
            dsm_lock(LOCK_NEAR + lo);
            dsm_lock(LOCK_NEAR + hi);
            s->near[a] -= 1;
            s->near[b] += 1;
            dsm_unlock(LOCK_NEAR + hi);
            dsm_unlock(LOCK_NEAR + lo);
        }
    }
    for (int r = 0; r < n; r++)
        for (long i = 3; i < incs; i += 4) {
            int a = (int)((r + i) % K);
            want_near[a] -= 1;
            want_near[(a + 1) % K] += 1;
        }
    dsm_barrier();
    for (int k = 0; k < K; k++) {
        MP_CHECK(s->near[k] == want_near[k], "near[%d] = %lld, expected %lld", k,
                 (long long)s->near[k], (long long)want_near[k]);
        MP_CHECK(far[(size_t)k * far_stride] == want_far[k], "far[%d] = %lld, expected %lld", k,
                 (long long)far[(size_t)k * far_stride], (long long)want_far[k]);
    }

    /* 3. The lock chain. */
    for (int round = 0; round < rounds; round++) {
        if (me + 1 < n)
            dsm_lock(LOCK_CHAIN + me + 1); /* node me+1 waits for us */
        dsm_barrier();
        if (me > 0)
            dsm_lock(LOCK_CHAIN + me);     /* granted once node me-1 is done */
        for (int j = 0; j < me; j++) {
            const int64_t *slot = chain + (size_t)j * SLOT_WORDS;
            for (int w = 0; w < SLOT_WORDS; w++)
                MP_CHECK(slot[w] == chain_value(round, j, w),
                         "round %d: node %d's word %d reads %lld through the chain, expected %lld",
                         round, j, w, (long long)slot[w], (long long)chain_value(round, j, w));
            MP_CHECK(s->chain_packed[j] == chain_value(round, j, -1),
                     "round %d: node %d's packed word reads %lld through the chain", round, j,
                     (long long)s->chain_packed[j]);
        }
        int64_t *mine = chain + (size_t)me * SLOT_WORDS;
        for (int w = 0; w < SLOT_WORDS; w++)
            mine[w] = chain_value(round, me, w);
        s->chain_packed[me] = chain_value(round, me, -1);
        if (me + 1 < n)
            dsm_unlock(LOCK_CHAIN + me + 1);
        if (me > 0)
            dsm_unlock(LOCK_CHAIN + me);
        dsm_barrier();
        for (int j = 0; j < n; j++) {
            MP_CHECK(chain[(size_t)j * SLOT_WORDS + SLOT_WORDS - 1] ==
                         chain_value(round, j, SLOT_WORDS - 1),
                     "round %d: node %d's slot after the barrier", round, j);
            MP_CHECK(s->chain_packed[j] == chain_value(round, j, -1),
                     "round %d: node %d's packed word after the barrier", round, j);
        }
    }

    dsm_barrier();
    if (me == 0)
        printf("lock_counter: %d nodes, %ld increments each: counter %lld, %d counters under "
               "%d locks, %d chain rounds: ok\n",
               n, incs, (long long)s->counter, 2 * K, 2 * K, rounds);
    dsm_finish();
    return 0;
}
