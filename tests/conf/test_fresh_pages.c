/*
 * Fresh pages a home fills and other nodes then read, once the nodes
 * flush (hlrc catches up: a copy that may hold writes of an interval its
 * reader has not seen makes the reader pull every node's intervals
 * first; docs/protocols.md, "Catching up").
 *
 * Each round node 0 takes a fresh block of `pages` pages homed at node 0,
 * writes it (writes hlrc never announces: nobody else holds the pages),
 * and publishes it through a barrier; every other node reads and checks
 * every word. The writes were made in node 0's interval the barrier
 * closed, which every reader has seen: under hlrc, outside DSM_LOCAL_MEM,
 * a reader may catch up at most a few times a round (on the code before,
 * a page written and never announced was taken to hold node 0's *open*
 * interval, which no catch-up can bring, so each fetch — a fault, or each
 * page read ahead — caught up: once per page a round).
 *
 * Then the flag pattern the catch-up exists for, with the flag on a
 * fresh page: node 0 writes a round's value into every page of a block
 * the readers hold (each has read it: valid copies, stale once node 0
 * writes), flushes, sets a flag in a fresh page of its own, and flushes;
 * each reader polls the flag with flushes and then reads the block with
 * no flush between: every word must be the round's (NPB LU's
 * blts/buts read their neighbour's rows so).
 * Usage: test_fresh_pages [rounds] [pages]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define FLAG_WAIT_POLLS 100000000L /* a bound, not a timing: a lost flag fails */

static int64_t value(int round, size_t page, size_t word)
{
    return (int64_t)(round + 5) * 1000037 + (int64_t)page * 8191 + (int64_t)word;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    int npages = argc > 2 ? atoi(argv[2]) : 32;
    MP_CHECK(rounds >= 1 && rounds <= 1000, "rounds %d out of 1..1000", rounds);
    MP_CHECK(npages >= 1 && npages <= 1024, "pages %d out of 1..1024", npages);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), np = (size_t)npages;
    dsm_flush();

    /* Fresh blocks through barriers. */
    uint64_t catch_before = stats_get(STAT_CATCH_UPS);
    for (int r = 0; r < rounds; r++) {
        int64_t *a = NULL;
        if (me == 0) {
            a = dsm_malloc_home(np * page, DSM_HOME_LOCAL);
            for (size_t q = 0; q < np; q++)
                for (size_t w = 0; w < words; w++)
                    a[q * words + w] = value(r, q, w);
        }
        dsm_bcast(&a, sizeof a, 0);
        if (me != 0)
            for (size_t q = 0; q < np; q++)
                for (size_t w = 0; w < words; w++)
                    MP_CHECK(a[q * words + w] == value(r, q, w), "round %d: fresh page %zu word %zu is %lld, not %lld",
                             r, q, w, (long long)a[q * words + w], (long long)value(r, q, w));
        dsm_barrier();
    }
    uint64_t catch_ups = stats_get(STAT_CATCH_UPS) - catch_before;
    bool counted = strcmp(coherence_name(), "hlrc") == 0 && !getenv("DSM_LOCAL_MEM");
    if (me != 0 && counted)
        MP_CHECK(catch_ups <= 2 * (uint64_t)rounds,
                 "node %d caught up %llu times reading %d fresh blocks of %zu pages: a page its home "
                 "wrote before the barrier the reader passed was taken to need a catch-up",
                 me, (unsigned long long)catch_ups, rounds, np);

    /* The flag pattern, the flag on a fresh page each round. */
    int64_t *block = NULL;
    if (me == 0) {
        block = dsm_malloc_home(np * page, DSM_HOME_LOCAL);
        memset(block, 0, np * page);
    }
    dsm_bcast(&block, sizeof block, 0);
    for (int r = 0; r < rounds; r++) {
        volatile int64_t *flag = NULL;
        if (me == 0)
            flag = dsm_malloc_home(page, DSM_HOME_LOCAL);
        dsm_bcast(&flag, sizeof flag, 0);
        if (me != 0) /* valid copies of the block here, which node 0's writes make stale */
            for (size_t q = 0; q < np; q++)
                MP_CHECK(block[q * words] == (r ? value(r - 1, q, 0) : 0), "round %d: block page %zu before", r,
                         q);
        dsm_barrier();
        if (me == 0) {
            for (size_t q = 0; q < np; q++)
                for (size_t w = 0; w < words; w++)
                    block[q * words + w] = value(r, q, w);
            dsm_flush();
            *flag = r + 1;
            dsm_flush();
        } else {
            long polls = 0;
            for (;;) {
                dsm_flush();
                if (*flag == r + 1)
                    break;
                MP_CHECK(++polls < FLAG_WAIT_POLLS, "round %d: the flag never came", r);
            }
            for (size_t q = 0; q < np; q++)
                for (size_t w = 0; w < words; w++)
                    MP_CHECK(block[q * words + w] == value(r, q, w),
                             "round %d: after the flag, block page %zu word %zu is %lld, not %lld", r, q, w,
                             (long long)block[q * words + w], (long long)value(r, q, w));
        }
        dsm_barrier();
    }
    if (me == 1)
        printf("fresh_pages: %d rounds of %zu pages: ok, node 1 caught up %llu times reading fresh blocks\n",
               rounds, np, (unsigned long long)catch_ups);
    dsm_finish();
    return 0;
}
