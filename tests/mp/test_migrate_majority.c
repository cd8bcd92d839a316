/*
 * Homes that bounce settle at the writer of most phases
 * (src/coherence/migrate.c, judged_over_stays): pages homed at node 0 are
 * rewritten whole by node 0 in one phase of three and by node 1 in the
 * other two (NPB 3.0 C BT's and SP's pattern: x_solve divides each
 * i-plane by j, y_solve and z_solve divide the planes by i, so a page of
 * an off-diagonal block has one writer in x and the other in y and z).
 * Each phase is several windows long, so home migration moves the pages
 * to each phase's writer at first; once they bounce, each stay is judged
 * on its whole counts, and the pages settle at node 1, where only node
 * 0's phase costs diffs (node 1 applies them). Judged on the last window
 * of each stay instead they settle wherever the phase of that window put
 * them (node 0 in this program), and node 0 applies a diff per page per
 * write of node 1's phases for the rest of the run. Every value is checked by every node after every
 * write.
 *
 *   test_migrate_majority   (2 nodes or more; nodes past 1 only read)
 *
 * Run with DSM_MIGRATE_HOMES=1 DSM_MIGRATE_PERIOD=2: PHASE_WRITES writes,
 * two barriers each, are PHASE_WRITES windows a phase.
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES 8
#define CYCLES 48
#define PHASE_WRITES 4
/* Diffs node 0 applies as home in the last half of the run, at most: the
 * pages have settled at node 1 long before (stays of 8 and 32 windows, a
 * cycle is 12); pages homed at node 0 cost PAGES diffs a write of node
 * 1's phases. */
#define MAX_LATE_DIFFS_AT_NODE0 (2 * PAGES)

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    MP_CHECK(n >= 2, "test_migrate_majority needs 2 nodes or more");
    size_t words = dsm_page_size() / sizeof(int64_t);
    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_LOCAL);
        for (size_t i = 0; i < PAGES * words; i++)
            a[i] = -1;
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_barrier();
    uint64_t late_diffs = 0;
    for (int cy = 0; cy < CYCLES; cy++) {
        uint64_t diffs0 = stats_get(STAT_DIFFS_APPLIED);
        for (int ph = 0; ph < 3; ph++)
            for (int r = 0; r < PHASE_WRITES; r++) {
                int64_t v = ((int64_t)cy * 3 + ph) * PHASE_WRITES + r;
                if (me == (ph == 0 ? 0 : 1))
                    for (size_t i = 0; i < PAGES * words; i++)
                        a[i] = v + (int64_t)i;
                dsm_barrier();
                for (size_t i = 0; i < PAGES * words; i++)
                    MP_CHECK(a[i] == v + (int64_t)i, "cycle %d phase %d write %d word %zu: %lld, not %lld",
                             cy, ph, r, i, (long long)a[i], (long long)(v + (int64_t)i));
                dsm_barrier();
            }
        if (cy >= CYCLES / 2)
            late_diffs += stats_get(STAT_DIFFS_APPLIED) - diffs0;
    }
    uint64_t given = stats_get(STAT_MIGRATE_HOMES), taken = stats_get(STAT_MIGRATE_IN);
    printf("node %d: gave %llu, received %llu pages as home; applied %llu diffs in the last %d cycles\n", me,
           (unsigned long long)given, (unsigned long long)taken, (unsigned long long)late_diffs,
           CYCLES - CYCLES / 2);
    if (me == 1)
        MP_CHECK(taken - given == PAGES, "node 1 writes the pages in two phases of three, and is home of "
                 "%lld of the %d at the end", (long long)(taken - given), PAGES);
    if (me == 0)
        MP_CHECK(late_diffs <= MAX_LATE_DIFFS_AT_NODE0,
                 "node 0 applied %llu diffs as home in the last %d cycles (at most %d): the pages did not "
                 "settle at node 1, the writer of most phases", (unsigned long long)late_diffs,
                 CYCLES - CYCLES / 2, MAX_LATE_DIFFS_AT_NODE0);
    dsm_finish();
    return 0;
}
