/*
 * A lock whose own release has run leaves at once (issue 27). Under hlrc
 * an unlock that nobody waits for keeps its release pending on the node,
 * whether the lock was taken here without a message or came from another
 * node; a request for such a lock must wait until the release runs. But a
 * requester needs only the writes before the lock's last unlock here: if
 * that unlock's release has run (here: at a barrier), releases kept after
 * it by other locks need not run first, and the lock is granted as the
 * request comes in. Nodes pair up (2k, 2k+1); in each round one of a pair
 * writes and the other checks, by turns:
 *  1. the writer takes L(w), which the checker had last (or nobody: the
 *     manager hands it out), writes words of every page of its block, and
 *     unlocks: under hlrc the release is kept, though the lock came with
 *     a message;
 *  2. a barrier runs it;
 *  3. the writer takes K(w), a lock of its own, `reps` times, writing other
 *     words of the same pages: each unlock keeps its release pending;
 *  4. it tells the checker by a port message (no consistency), and waits
 *     for the answer. The checker takes L(w), must see every write of
 *     step 1, and answers. Under hlrc no pending release ran for the
 *     request (neither aside nor by the program): the kept releases were
 *     still pending when L(w) left;
 *  5. after a barrier every node sees the writes of step 3 as well.
 * Usage: test_lock_leaves_released [reps] [rounds]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define PAGES  3
#define LOCK_L 800 /* + w: taken by the writer, then its checker */
#define LOCK_K 900 /* + w: the writer's own */

static int64_t value(int round, int node, int part, long i, int page)
{
    return ((int64_t)round * 7919 + node) * 1000003 + (int64_t)part * 100003 + i * 131 + page + 1;
}

static uint64_t runs_for_requests(void)
{
    return stats_get(STAT_LOCK_ASIDE_RELEASES) + stats_get(STAT_LOCK_HELPED_RELEASES);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long reps = argc > 1 ? atol(argv[1]) : 100;
    int rounds = argc > 2 ? atoi(argv[2]) : 4;
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), half = words / 2;
    MP_CHECK(n >= 2 && n <= MP_MAX_NODES, "2 to %d nodes", MP_MAX_NODES);
    MP_CHECK(reps >= 1 && (size_t)reps <= half, "reps 1..%zu (half a page of words)", half);
    bool keeps = strcmp(coherence_name(), "hlrc") == 0;

    int64_t *data = NULL;
    if (me == 0) {
        data = dsm_malloc_home((size_t)n * PAGES * page, DSM_HOME_CYCLIC);
        memset(data, 0, (size_t)n * PAGES * page);
    }
    dsm_bcast(&data, sizeof data, 0);

    int port = dsm_port_create("leaves-released", 4);
    MP_CHECK(port >= 0, "port");
    int mate = me ^ 1;
    dsm_port_ref to_mate;
    if (mate < n)
        MP_CHECK(dsm_port_lookup(mate, "leaves-released", 30, &to_mate) == 0, "lookup %d", mate);
    dsm_barrier();

    for (int round = 0; round < rounds; round++) {
        int w = (me & ~1) + round % 2;
        int64_t *block = data + (size_t)w * PAGES * words;
        int64_t r64 = round;
        if (mate < n && me == w) {
            uint64_t kept0 = stats_get(STAT_LOCK_KEPT_RELEASES);
            dsm_lock(LOCK_L + me); /* 1 */
            for (int p = 0; p < PAGES; p++)
                for (long i = 0; i < reps; i++)
                    block[(size_t)p * words + (size_t)i] = value(round, me, 1, i, p);
            dsm_unlock(LOCK_L + me);
            uint64_t kept = stats_get(STAT_LOCK_KEPT_RELEASES) - kept0;
            MP_CHECK(kept == (keeps ? 1u : 0u),
                     "round %d: the unlock of lock %d, which came from another node or its "
                     "manager, kept %llu release(s) under %s", round, LOCK_L + me,
                     (unsigned long long)kept, coherence_name());
        }
        dsm_barrier(); /* 2 */
        if (mate < n && me == w) {
            uint64_t runs0 = runs_for_requests(); /* 3 */
            uint64_t kept0 = stats_get(STAT_LOCK_KEPT_RELEASES);
            for (long i = 0; i < reps; i++) {
                dsm_lock(LOCK_K + me);
                for (int p = 0; p < PAGES; p++)
                    block[(size_t)p * words + half + (size_t)i] = value(round, me, 2, i, p);
                dsm_unlock(LOCK_K + me);
            }
            MP_CHECK(dsm_msg_send(&to_mate, &r64, sizeof r64, NULL, 0, DSM_FOREVER, NULL) == 0, "send");
            mp_recv_round(port, mate, round); /* 4 */
            uint64_t kept = stats_get(STAT_LOCK_KEPT_RELEASES) - kept0, runs = runs_for_requests() - runs0;
            if (keeps) {
                MP_CHECK(kept == (uint64_t)reps, "round %d: %llu of %ld unlocks of lock %d kept",
                         round, (unsigned long long)kept, reps, LOCK_K + me);
                MP_CHECK(runs == 0,
                         "round %d: node %d's request for lock %d, whose release had run, ran "
                         "%llu pending release(s) (kept after it: %llu)", round, mate, LOCK_L + me,
                         (unsigned long long)runs, (unsigned long long)kept);
            } else
                MP_CHECK(kept == 0 && runs == 0, "round %d: %s kept %llu releases and ran %llu",
                         round, coherence_name(), (unsigned long long)kept, (unsigned long long)runs);
        } else if (mate < n) {
            mp_recv_round(port, w, round);
            dsm_lock(LOCK_L + w);
            for (int p = 0; p < PAGES; p++)
                for (long i = 0; i < reps; i++) {
                    int64_t v = block[(size_t)p * words + (size_t)i];
                    MP_CHECK(v == value(round, w, 1, i, p),
                             "round %d: node %d's write %ld to page %d under lock %d reads %lld after "
                             "taking the lock, expected %lld", round, w, i, p, LOCK_L + w,
                             (long long)v, (long long)value(round, w, 1, i, p));
                }
            dsm_unlock(LOCK_L + w);
            MP_CHECK(dsm_msg_send(&to_mate, &r64, sizeof r64, NULL, 0, DSM_FOREVER, NULL) == 0, "send");
        }
        dsm_barrier(); /* 5 */
        for (int v = 0; v + 1 < n; v += 2) {
            int wv = v + round % 2;
            const int64_t *b = data + (size_t)wv * PAGES * words;
            for (int p = 0; p < PAGES; p++)
                for (long i = 0; i < reps; i++)
                    MP_CHECK(b[(size_t)p * words + (size_t)i] == value(round, wv, 1, i, p) &&
                             b[(size_t)p * words + half + (size_t)i] == value(round, wv, 2, i, p),
                             "round %d: node %d's writes %ld to page %d after the barrier: %lld %lld",
                             round, wv, i, p, (long long)b[(size_t)p * words + (size_t)i],
                             (long long)b[(size_t)p * words + half + (size_t)i]);
        }
        dsm_barrier();
    }

    if (me == 0)
        printf("lock_leaves_released: %d nodes, %d rounds of %ld kept releases under %s: ok\n", n,
               rounds, reps, coherence_name());
    dsm_finish();
    return 0;
}
