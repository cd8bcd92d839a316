/*
 * Homes that would bounce (src/coherence/migrate.c, "returns"): pages
 * homed at node 0 are rewritten whole, phase after phase, by node 0 and
 * node 1 in turn (NPB 3.0 C SP's pattern: x_solve and y_solve divide the
 * same pages differently, sweeps a few dozen barriers apart). Each phase
 * is longer than a moved page's first stay, so home migration moves the
 * pages to each phase's writer; a page that comes back to a node that gave
 * it away must then stay longer each time, so the pages settle instead of
 * moving at every phase. Every value is checked by every node after every
 * write.
 *
 *   test_migrate_bounce   (2 nodes or more; nodes past 1 only read)
 *
 * Run with DSM_MIGRATE_HOMES=1 DSM_MIGRATE_PERIOD=2: PHASE_WRITES writes,
 * two barriers each, are PHASE_WRITES windows a phase.
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES 8
#define PHASES 48
#define PHASE_WRITES 4
/* Moves per page per node, at most: with a stay of 2 windows at every
 * move the pages would move at every phase, PHASES / 2 times from each
 * node; with stays of 2, 8, 32, 128 windows on returns, 3 times each. */
#define MAX_GIVEN_PER_PAGE 6

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    MP_CHECK(n >= 2, "test_migrate_bounce needs 2 nodes or more");
    size_t words = dsm_page_size() / sizeof(int64_t);
    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_LOCAL);
        for (size_t i = 0; i < PAGES * words; i++)
            a[i] = -1;
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_barrier();
    for (int ph = 0; ph < PHASES; ph++)
        for (int r = 0; r < PHASE_WRITES; r++) {
            int64_t v = (int64_t)ph * PHASE_WRITES + r;
            if (me == ph % 2)
                for (size_t i = 0; i < PAGES * words; i++)
                    a[i] = v + (int64_t)i;
            dsm_barrier();
            for (size_t i = 0; i < PAGES * words; i++)
                MP_CHECK(a[i] == v + (int64_t)i, "phase %d write %d word %zu: %lld, not %lld", ph, r, i,
                         (long long)a[i], (long long)(v + (int64_t)i));
            dsm_barrier();
        }
    uint64_t given = stats_get(STAT_MIGRATE_HOMES), taken = stats_get(STAT_MIGRATE_IN);
    printf("node %d: gave %llu, received %llu pages as home in %d phases of %d pages\n", me,
           (unsigned long long)given, (unsigned long long)taken, PHASES, PAGES);
    if (me == 0)
        MP_CHECK(given > 0, "node 0 gave no page to node 1, which writes them half the time");
    MP_CHECK(given <= PAGES * MAX_GIVEN_PER_PAGE,
             "node %d gave %llu pages away in %d phases: the %d pages bounce between the writers", me,
             (unsigned long long)given, PHASES, PAGES);
    dsm_finish();
    return 0;
}
