/*
 * Reads of a sub-matrix: several interleaved streams of pages, each at a
 * constant stride (hlrc's read-ahead follows several streams at once, at
 * any stride up to AHEAD_STRIDE_MAX pages; other protocols fetch page by
 * page; the answers must be the same).
 *
 * A shared matrix of `rows` rows of 2 pages each, homed at node 0,
 * which rewrites every word of it every round. After a
 * barrier every other node reads the left half of the top and bottom
 * halves' rows in turn (row i, then row rows/2 + i: two streams, each
 * every second page, as a quadrant sum of a Strassen multiply reads), and
 * then the right half's pages from the last row up (a stride of -2),
 * checking every word. With `flush` every node flushes before the first
 * round, so that hlrc catches up (a copy that may hold writes it has not
 * seen — here every page, which its home wrote without announcing it —
 * is hidden until a catch-up; docs/protocols.md, "Catching up").
 *
 * Under hlrc with read-ahead on and no DSM_LOCAL_MEM (whose few frames
 * leave no room to read ahead), in the first round (before pages earn
 * pulls at acquires) at most a third of the pages a reader reads may be
 * fetched by its own fault: the rest come read ahead, and a page read
 * ahead is not fetched again (on the code before, neither held: a single
 * stream of consecutive pages read nothing ahead here, and with flush
 * every page read ahead was dropped and fetched again).
 * Usage: test_read_streams [rounds] [rows] [flush]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

static int64_t value(int round, size_t page, size_t word)
{
    return (int64_t)(round + 3) * 1000033 + (int64_t)page * 4099 + (int64_t)word;
}

static uint64_t fault_fetches(void)
{
    return stats_get(STAT_PAGES_FETCHED) - stats_get(STAT_PAGES_AHEAD) -
           stats_get(STAT_PAGES_WRITE_AHEAD) - stats_get(STAT_PAGES_PULLED) - stats_get(STAT_PAGES_GOT);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    int nrows = argc > 2 ? atoi(argv[2]) : 128;
    bool flush = argc > 3 && strcmp(argv[3], "flush") == 0;
    MP_CHECK(rounds >= 1 && rounds <= 1000, "rounds %d out of 1..1000", rounds);
    MP_CHECK(nrows >= 4 && nrows <= 2048 && nrows % 2 == 0, "rows %d: an even number in 4..2048", nrows);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), rows = (size_t)nrows;
    size_t pages = 2 * rows;

    int64_t *a = NULL;
    if (me == 0)
        a = dsm_malloc_home(pages * page, DSM_HOME_LOCAL);
    dsm_bcast(&a, sizeof a, 0);
    if (flush)
        dsm_flush();

    uint64_t first_read = 0, first_fetched = 0;
    for (int r = 0; r < rounds; r++) {
        if (me == 0)
            for (size_t q = 0; q < pages; q++)
                for (size_t w = 0; w < words; w++)
                    a[q * words + w] = value(r, q, w);
        dsm_barrier();
        if (me != 0) {
            uint64_t before = fault_fetches(), read = 0;
            for (size_t i = 0; i < rows / 2; i++)
                for (size_t half = 0; half < 2; half++) {
                    size_t q = 2 * (half * rows / 2 + i);
                    for (size_t w = 0; w < words; w++)
                        MP_CHECK(a[q * words + w] == value(r, q, w), "round %d: page %zu word %zu is %lld, not %lld",
                                 r, q, w, (long long)a[q * words + w], (long long)value(r, q, w));
                    read++;
                }
            for (size_t i = rows; i-- > 0;) {
                size_t q = 2 * i + 1;
                for (size_t w = 0; w < words; w++)
                    MP_CHECK(a[q * words + w] == value(r, q, w), "round %d: page %zu word %zu is %lld, not %lld", r,
                             q, w, (long long)a[q * words + w], (long long)value(r, q, w));
                read++;
            }
            if (r == 0) {
                first_read = read;
                first_fetched = fault_fetches() - before;
            }
        }
        dsm_barrier();
    }
    const char *depth = getenv("DSM_READ_AHEAD");
    bool ahead = strcmp(coherence_name(), "hlrc") == 0 && !(depth && strcmp(depth, "0") == 0) &&
                 !getenv("DSM_LOCAL_MEM");
    if (me != 0 && ahead)
        MP_CHECK(first_fetched * 3 <= first_read,
                 "node %d: %llu of the %llu pages it read in the first round were fetched by its own fault, "
                 "more than a third: its streams were not read ahead",
                 me, (unsigned long long)first_fetched, (unsigned long long)first_read);
    if (me == 1)
        printf("read_streams: %d rounds of %zu rows%s: ok, node 1 fetched %llu of its first round's %llu pages "
               "by a fault\n",
               rounds, rows, flush ? ", flushed" : "", (unsigned long long)first_fetched,
               (unsigned long long)first_read);
    dsm_finish();
    return 0;
}
