/*
 * A release that stays on the node (issue 27): under hlrc an unlock that
 * nobody waits for leaves its release pending, and whatever lets the
 * writes leave the node must run it first. Each phase would catch a
 * pending release that is lost or runs late:
 *  1. node r takes its lock W(r) `reps` times, each time writing one more
 *     word of every page of its block (pages homed all over: cyclic), and
 *     then tells its checker, node r+1, by a port message — which carries
 *     no consistency. The checker takes W(r): its request reaches node r
 *     while the lock is owned but not held and the release is pending, and
 *     must see every write. Meanwhile node r goes on writing other words of
 *     the same pages under a lock of its own, taken again and again without
 *     a message, while its pending release runs beside it: after a barrier
 *     every one of those writes is there too (a write let through between a
 *     diff and the write-protect would be lost).
 *  2. local-only lock use then a barrier: each node writes its block under
 *     a lock nobody else takes; after the barrier every node reads every
 *     block.
 *  3. a condition wait: in each pair of nodes one writes under C(r) and
 *     waits on a condition (its unlock leaves the release pending while it
 *     waits); the other takes C(r), must see the writes, answers and
 *     signals; the waiter, woken, sees the answer.
 * Under hlrc, a phase-1 loop's releases send no message at all (the
 * statistics "messages this node sent in those releases" stay where they
 * were) and are all counted as kept (the first too, whose lock came
 * with a message from the checker); under the other protocols none is
 * kept.
 * Usage: test_lock_release_stays [reps] [rounds]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define PAGES    4      /* pages a node's block spans */
#define LOCK_W   200    /* + r: node r's lock of phase 1 */
#define LOCK_X   300    /* + r: node r's own lock, taken beside it */
#define LOCK_B   400    /* + r: phase 2 */
#define LOCK_C   500    /* + r: phase 3 */
#define COND_ANS 600    /* + r: node r waits for its checker's answer */
#define COND_RDY 700    /* + r: the checker waits for node r's writes */

static int64_t value(int round, int node, int phase, long i, int page)
{
    return ((int64_t)round * 7919 + node) * 1000003 + (int64_t)phase * 100003 + i * 131 + page + 1;
}

struct talk {
    int64_t ready, answer;
};

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long reps = argc > 1 ? atol(argv[1]) : 200;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), half = words / 2;
    MP_CHECK(n >= 2 && n <= MP_MAX_NODES, "2 to %d nodes", MP_MAX_NODES);
    MP_CHECK(reps >= 2 && (size_t)reps <= half, "reps 2..%zu (half a page of words)", half);
    bool keeps = strcmp(coherence_name(), "hlrc") == 0;

    int64_t *data = NULL, *local = NULL;
    struct talk *talk = NULL;
    if (me == 0) {
        data = dsm_malloc_home((size_t)n * PAGES * page, DSM_HOME_CYCLIC);
        local = dsm_malloc_home((size_t)n * PAGES * page, DSM_HOME_CYCLIC);
        talk = dsm_malloc((size_t)n * sizeof *talk);
        memset(talk, 0, (size_t)n * sizeof *talk);
    }
    dsm_bcast(&data, sizeof data, 0);
    dsm_bcast(&local, sizeof local, 0);
    dsm_bcast(&talk, sizeof talk, 0);

    int port = dsm_port_create("release-stays", 4);
    MP_CHECK(port >= 0, "port");
    int checker = (me + 1) % n, writer = (me + n - 1) % n;
    dsm_port_ref to_checker;
    MP_CHECK(dsm_port_lookup(checker, "release-stays", 30, &to_checker) == 0, "lookup %d", checker);
    dsm_barrier();

    int64_t *mine = data + (size_t)me * PAGES * words;
    int64_t *theirs = data + (size_t)writer * PAGES * words;
    for (int round = 0; round < rounds; round++) {
        /* 1. Taken here again and again, then asked for. */
        uint64_t msgs0 = stats_get(STAT_LOCK_LOCAL_REL_MSGS);
        uint64_t local0 = stats_get(STAT_LOCK_LOCAL_RELEASES);
        uint64_t kept0 = stats_get(STAT_LOCK_KEPT_RELEASES);
        for (long i = 0; i < reps; i++) {
            dsm_lock(LOCK_W + me);
            for (int p = 0; p < PAGES; p++)
                mine[(size_t)p * words + (size_t)i] = value(round, me, 1, i, p);
            dsm_unlock(LOCK_W + me);
        }
        uint64_t msgs = stats_get(STAT_LOCK_LOCAL_REL_MSGS) - msgs0;
        uint64_t locals = stats_get(STAT_LOCK_LOCAL_RELEASES) - local0;
        uint64_t kept = stats_get(STAT_LOCK_KEPT_RELEASES) - kept0;
        /* The first take may need a message (the checker had it last). */
        MP_CHECK(locals >= (uint64_t)reps - 1, "round %d: %llu of %ld releases were of a lock taken here",
                 round, (unsigned long long)locals, reps);
        if (keeps) {
            MP_CHECK(msgs == 0, "round %d: %llu messages sent by releases of a lock taken here again",
                     round, (unsigned long long)msgs);
            /* Every release is kept, of a lock taken here without a
             * message or of one that came from another node. */
            MP_CHECK(kept == (uint64_t)reps, "round %d: %llu of %ld releases kept on the node",
                     round, (unsigned long long)kept, reps);
        } else
            MP_CHECK(kept == 0, "round %d: %s kept %llu releases", round, coherence_name(),
                     (unsigned long long)kept);
        int64_t r64 = round;
        MP_CHECK(dsm_msg_send(&to_checker, &r64, sizeof r64, NULL, 0, DSM_FOREVER, NULL) == 0, "send");

        /* Beside the checker's request: more writes to the same pages. */
        for (long i = 0; i < reps; i++) {
            dsm_lock(LOCK_X + me);
            for (int p = 0; p < PAGES; p++)
                mine[(size_t)p * words + half + (size_t)i] = value(round, me, 2, i, p);
            dsm_unlock(LOCK_X + me);
        }

        mp_recv_round(port, writer, round);
        dsm_lock(LOCK_W + writer);
        for (long i = 0; i < reps; i++)
            for (int p = 0; p < PAGES; p++) {
                int64_t v = theirs[(size_t)p * words + (size_t)i];
                MP_CHECK(v == value(round, writer, 1, i, p),
                         "round %d: node %d's write %ld to page %d under lock %d reads %lld after "
                         "taking the lock, expected %lld", round, writer, i, p, LOCK_W + writer,
                         (long long)v, (long long)value(round, writer, 1, i, p));
            }
        dsm_unlock(LOCK_W + writer);
        dsm_barrier();
        for (int w = 0; w < n; w++)
            for (long i = 0; i < reps; i++)
                for (int p = 0; p < PAGES; p++) {
                    const int64_t *b = data + ((size_t)w * PAGES + (size_t)p) * words;
                    MP_CHECK(b[i] == value(round, w, 1, i, p) && b[half + (size_t)i] == value(round, w, 2, i, p),
                             "round %d: node %d's writes %ld to page %d after the barrier: %lld %lld",
                             round, w, i, p, (long long)b[i], (long long)b[half + (size_t)i]);
                }

        /* 2. Local-only lock use, then a barrier. */
        int64_t *block = local + (size_t)me * PAGES * words;
        for (long i = 0; i < reps; i++) {
            dsm_lock(LOCK_B + me);
            for (int p = 0; p < PAGES; p++)
                block[(size_t)p * words + (size_t)i] = value(round, me, 3, i, p);
            dsm_unlock(LOCK_B + me);
        }
        dsm_barrier();
        for (int w = 0; w < n; w++)
            for (long i = 0; i < reps; i++)
                for (int p = 0; p < PAGES; p++) {
                    int64_t v = local[((size_t)w * PAGES + (size_t)p) * words + (size_t)i];
                    MP_CHECK(v == value(round, w, 3, i, p),
                             "round %d: node %d's write %ld to page %d under its own lock reads %lld "
                             "after the barrier", round, w, i, p, (long long)v);
                }

        /* 3. A condition wait leaves the release pending. Nodes pair up
         * (2k, 2k+1); the waiter of a pair alternates by round. */
        int waiter = (me & ~1) + round % 2, other = (me & ~1) + 1 - round % 2;
        if (other < n && me == waiter) {
            dsm_lock(LOCK_C + me);
            for (int p = 0; p < PAGES; p++)
                for (long i = 0; i < reps; i++)
                    block[(size_t)p * words + half + (size_t)i] = value(round, me, 4, i, p);
            talk[me].ready = round + 1;
            dsm_cond_signal(COND_RDY + me);
            while (talk[me].answer != round + 1)
                dsm_cond_wait(COND_ANS + me, LOCK_C + me);
            dsm_unlock(LOCK_C + me);
        } else if (other < n) {
            dsm_lock(LOCK_C + waiter);
            while (talk[waiter].ready != round + 1)
                dsm_cond_wait(COND_RDY + waiter, LOCK_C + waiter);
            const int64_t *wb = local + (size_t)waiter * PAGES * words;
            for (int p = 0; p < PAGES; p++)
                for (long i = 0; i < reps; i++) {
                    int64_t v = wb[(size_t)p * words + half + (size_t)i];
                    MP_CHECK(v == value(round, waiter, 4, i, p),
                             "round %d: node %d's write %ld to page %d before its condition wait "
                             "reads %lld", round, waiter, i, p, (long long)v);
                }
            talk[waiter].answer = round + 1;
            dsm_cond_signal(COND_ANS + waiter);
            dsm_unlock(LOCK_C + waiter);
        }
        dsm_barrier();
    }

    dsm_barrier();
    if (me == 0)
        printf("lock_release_stays: %d nodes, %d rounds of %ld re-takes under %s: ok\n", n, rounds,
               reps, coherence_name());
    dsm_finish();
    return 0;
}
