/*
 * Homes that move while the program runs (src/coherence/migrate.c): every
 * page starts homed at node 0, and the access pattern asks for each block
 * to move elsewhere. Every value read is checked, every iteration, while
 * pages move under nodes that fault on them, write them under locks and
 * cross barriers; at the end the migrations the pattern demands must have
 * happened (counted), and nothing was lost.
 *
 *   test_migrate homes [moves] [forwards]  block i is rewritten by node i and read
 *       by every node: home migration (DSM_MIGRATE_HOMES) moves it to i.
 *   test_migrate pages [moves] [forwards]  block i gets 16 words from node
 *       i and is read whole by node i+1: page migration (DSM_MIGRATE_PAGES)
 *       moves it to i+1 (for 0 < i < n-1: block 0 is written by its home,
 *       block n-1 read by it), with 3 nodes or more, where the reads fault
 *       (`moves`: not under erc-upd, whose updates keep the copy valid).
 *   test_migrate stay  block i is homed at node i, which rewrites it; every
 *       node reads only its own: no page qualifies to move, so no
 *       migration round may run (a round runs only when some node has a
 *       page to give away: the barriers carry the votes).
 *   `forwards`: some request or diff must have reached node 0 after it
 *       gave a page away (hlrc: nodes not told of the move ask it).
 *
 * In every mode the loop's barriers must have taken exactly one round
 * each, plus the migration rounds counted (a round runs on every node
 * alike); where moves are demanded, at least one migration round.
 *
 * Every node also adds one, under the block's lock, to a counter in the
 * first page of every block, every iteration.
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES_PER_BLOCK 4
#define ITERATIONS 16
#define WRITTEN_WORDS 16 /* pages mode: words 2 .. 17 */
#define LOCK_BASE 100

static int64_t expected(int mode_homes, size_t w, int t, int64_t init)
{
    if (w < 2)
        return init;
    if (mode_homes || w < 2 + WRITTEN_WORDS)
        return t;
    return init;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    MP_CHECK(argc >= 2 && (!strcmp(argv[1], "homes") || !strcmp(argv[1], "pages") || !strcmp(argv[1], "stay")),
             "usage: test_migrate homes|pages|stay [moves] [forwards]");
    int stay = !strcmp(argv[1], "stay");
    int homes = !strcmp(argv[1], "homes") || stay, moves = 0, forwards = 0;
    for (int i = 2; i < argc; i++) {
        moves |= !strcmp(argv[i], "moves");
        forwards |= !strcmp(argv[i], "forwards");
    }
    size_t words = dsm_page_size() / sizeof(int64_t);
    size_t pages = (size_t)n * PAGES_PER_BLOCK;
    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home(pages * dsm_page_size(), stay ? DSM_HOME_BLOCK : DSM_HOME_LOCAL);
        for (size_t i = 0; i < (stay ? 0 : pages * words); i++)
            a[i] = -(int64_t)i;
    }
    dsm_bcast(&a, sizeof a, 0);
#define WORD(block, p, w) a[((size_t)(block) * PAGES_PER_BLOCK + (p)) * words + (w)]
#define INIT(block, p, w) (-(int64_t)(((size_t)(block) * PAGES_PER_BLOCK + (p)) * words + (w)))
    if (stay) /* each block by its home: no node writes another's */
        for (size_t p = 0; p < PAGES_PER_BLOCK; p++)
            for (size_t w = 0; w < words; w++)
                WORD(me, p, w) = INIT(me, p, w);
    dsm_barrier();
    uint64_t barriers0 = stats_get(STAT_BARRIERS), rounds0 = stats_get(STAT_MIGRATE_ROUNDS);
    for (int t = 1; t <= ITERATIONS; t++) {
        /* Write: this node's block. */
        size_t last = homes ? words : 2 + WRITTEN_WORDS;
        for (size_t p = 0; p < PAGES_PER_BLOCK; p++)
            for (size_t w = 2; w < last; w++)
                WORD(me, p, w) = t;
        /* Every node adds to every block's counter, under its lock. */
        for (int b = 0; b < n; b++) {
            int blk = (b + me) % n;
            dsm_lock(LOCK_BASE + blk);
            WORD(blk, 0, 1) += 1;
            dsm_unlock(LOCK_BASE + blk);
        }
        dsm_barrier();
        /* Read: every block (homes), the block before this node's
         * (pages), or its own (stay). */
        for (int b = 0; b < n; b++) {
            if ((!homes && b != (me + n - 1) % n) || (stay && b != me))
                continue;
            for (size_t p = 0; p < PAGES_PER_BLOCK; p++)
                for (size_t w = 0; w < words; w++) {
                    if (p == 0 && w == 1)
                        continue;
                    int64_t want = expected(homes, w, t, INIT(b, p, w));
                    MP_CHECK(WORD(b, p, w) == want, "iteration %d block %d page %zu word %zu: %lld, not %lld",
                             t, b, p, w, (long long)WORD(b, p, w), (long long)want);
                }
        }
        dsm_barrier();
    }
    uint64_t barriers = stats_get(STAT_BARRIERS) - barriers0, rounds = stats_get(STAT_MIGRATE_ROUNDS) - rounds0;
    MP_CHECK(barriers == 2 * ITERATIONS + rounds, "%d barriers took %llu rounds, with %llu migration rounds",
             2 * ITERATIONS, (unsigned long long)barriers, (unsigned long long)rounds);
    if (stay)
        MP_CHECK(rounds == 0, "%llu migration rounds where no page qualifies to move", (unsigned long long)rounds);
    if (moves && (homes || n >= 3)) /* as below: the moves the pattern demands */
        MP_CHECK(rounds > 0, "no migration round, though pages must move");
    for (int b = 0; b < n; b++)
        MP_CHECK(WORD(b, 0, 1) == INIT(b, 0, 1) + (int64_t)ITERATIONS * n, "block %d counter: %lld, not %lld", b,
                 (long long)WORD(b, 0, 1), (long long)(INIT(b, 0, 1) + (int64_t)ITERATIONS * n));
    dsm_barrier();

    uint64_t out = stats_get(homes ? STAT_MIGRATE_HOMES : STAT_MIGRATE_PAGES);
    uint64_t in = stats_get(STAT_MIGRATE_IN), fwd = stats_get(STAT_MIGRATE_FORWARDS);
    if (moves && homes) {
        if (me == 0)
            MP_CHECK(out > 0, "node 0 gave no page to its writer");
        else
            MP_CHECK(in > 0, "node %d received none of the pages it writes", me);
    } else if (moves && n >= 3) {
        if (me == 0)
            MP_CHECK(out > 0, "node 0 gave no page to its reader");
        if (me == 2)
            MP_CHECK(in > 0, "node 2 received none of the pages it reads");
    }
    if (forwards && me == 0 && n >= 3)
        MP_CHECK(fwd > 0, "node 0 forwarded nothing after giving pages away");
    printf("node %d: %s: gave %llu, received %llu, forwarded %llu, %llu migration rounds; every value checked\n",
           me, argv[1], (unsigned long long)out, (unsigned long long)in, (unsigned long long)fwd,
           (unsigned long long)rounds);
    dsm_finish();
    return 0;
}
