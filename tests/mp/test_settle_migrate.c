/*
 * A profiled loop settles, and only then do homes move (issue 22: "data
 * and work do not chase each other"; src/parallel/loopsite.c,
 * src/coherence/migrate.c).
 *
 * Every page of an array starts homed at node 0; a profiled loop (dsm_loop)
 * over the pages rewrites page i whole in iteration i, and after each
 * execution every node reads every page back and checks it. Home migration
 * would give each page to the node that runs its iteration — but only once
 * the loop's division has settled:
 *
 *   - while the loop is still profiled (no stop counted yet on this node,
 *     STAT_PAR_PROFILE_STOPS), no migration round may have run;
 *   - the loop must stop profiling within the run (Fig. 4's stop rule
 *     bounds it: at most 8 re-partitions, so by its 9th decision);
 *   - after the stop, the division no longer changes, so a node other than
 *     0 that runs iterations must have received their pages as their home,
 *     and no node but 0 may give a page away (a page stays where the
 *     settled division put it);
 *   - every value is right after every execution.
 *
 *   test_settle_migrate [SCHEDULE]   a profiled one (default "profiled,0,2,1":
 *       two executions timed a decision, so the loop is profiled over
 *       several migration windows; its 9th decision comes at the latest
 *       with the 20th execution, "profiled,0,3"'s with the 28th, of 32)
 */
#include "base/stats.h"
#include "mp_util.h"

#define PAGES 64
#define EXECUTIONS 32

static int64_t *a;
static size_t words;

struct run {
    int64_t t;    /* this execution's value */
    long    mine; /* iterations this node ran in it */
};

static void body(long from, long to, void *arg)
{
    struct run *r = arg;
    for (long i = from; i < to; i++) {
        for (size_t w = 0; w < words; w++)
            a[(size_t)i * words + w] = r->t * 1000 + (int64_t)(w % 1000);
        /* some work, so that a node's speed can be measured */
        volatile double x = 0;
        for (long k = 0; k < 20000; k++)
            x += (double)k * 0.5;
        (void)x; /* a volatile read: clang counts the stores alone as unused */
    }
    r->mine += to - from;
}

static const char site[] = "test_settle_migrate: the loop";

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    const char *schedule = argc > 1 ? argv[1] : "profiled,0,2,1";
    words = dsm_page_size() / sizeof(int64_t);
    if (me == 0) {
        a = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_LOCAL);
        memset(a, 0, PAGES * dsm_page_size());
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_barrier();
    uint64_t rounds_at_stop = 0, stopped_at = 0;
    struct run r = {0};
    for (int t = 1; t <= EXECUTIONS; t++) {
        r = (struct run){.t = t};
        dsm_loop(site, 0, PAGES, schedule, body, &r);
        dsm_barrier();
        uint64_t stops = stats_get(STAT_PAR_PROFILE_STOPS), rounds = stats_get(STAT_MIGRATE_ROUNDS);
        if (!stops)
            MP_CHECK(rounds == 0, "execution %d: %llu migration rounds while the loop is still profiled", t,
                     (unsigned long long)rounds);
        else if (!stopped_at) {
            stopped_at = (uint64_t)t;
            rounds_at_stop = rounds;
        }
        for (size_t i = 0; i < PAGES; i++)
            for (size_t w = 0; w < words; w++)
                MP_CHECK(a[i * words + w] == t * 1000 + (int64_t)(w % 1000),
                         "execution %d: page %zu word %zu is %lld, not %lld", t, i, w,
                         (long long)a[i * words + w], (long long)(t * 1000 + (int64_t)(w % 1000)));
        dsm_barrier();
    }
    uint64_t reparts = stats_get(STAT_PAR_REPARTITIONS), in = stats_get(STAT_MIGRATE_IN),
             given = stats_get(STAT_MIGRATE_HOMES) + stats_get(STAT_MIGRATE_PAGES),
             rounds = stats_get(STAT_MIGRATE_ROUNDS);
    MP_CHECK(stopped_at > 0, "the loop never stopped profiling in %d executions (%llu re-partitions)",
             EXECUTIONS, (unsigned long long)reparts);
    MP_CHECK(reparts <= 8, "%llu re-partitions: more than the stop rule allows", (unsigned long long)reparts);
    if (me != 0) {
        MP_CHECK(given == 0, "node %d gave %llu pages away though the division is settled", me,
                 (unsigned long long)given);
        if (r.mine > 0)
            MP_CHECK(in > 0, "node %d runs %ld iterations of the settled loop but received none of their pages",
                     me, r.mine);
    }
    printf("node %d: stopped profiling at execution %llu after %llu re-partitions; %llu migration rounds "
           "(%llu at the stop); gave %llu, received %llu pages; runs %ld of %d; every value checked\n",
           me, (unsigned long long)stopped_at, (unsigned long long)reparts, (unsigned long long)rounds,
           (unsigned long long)rounds_at_stop, (unsigned long long)given, (unsigned long long)in, r.mine,
           PAGES);
    dsm_finish();
    return 0;
}
