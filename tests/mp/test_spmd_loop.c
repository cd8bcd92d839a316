/*
 * dsm_loop (include/dsm.h): under every schedule, every iteration of an
 * SPMD loop runs exactly once per execution, on some node, and only the
 * iterations of [lo, hi); the loop call and the begin/next pair alike, over
 * repeated executions (the profiled schedule measures, exchanges speeds and
 * may re-partition between them), and for empty ranges.
 *
 *   test_spmd_loop            every schedule
 *   test_spmd_loop SCHEDULE   that one only (a bad one must end the job)
 */
#include "mp_util.h"

#define N 1000
#define LO (-37)
#define EXECUTIONS 8

static int64_t *hits; /* shared: hits[i - LO] counts iteration i */

static void body(long from, long to, void *arg)
{
    long *mine = arg;
    MP_CHECK(from < to && from >= LO && to <= LO + N, "range [%ld, %ld) outside [%d, %d)", from, to,
             LO, LO + N);
    for (long i = from; i < to; i++) {
        hits[i - LO]++;
        /* some work, more on some iterations than others */
        volatile double x = 0;
        for (long k = 0; k < 200 + (i % 7) * 50; k++)
            x += (double)k * 0.5;
        (void)x; /* a volatile read: clang counts the stores alone as unused */
    }
    *mine += to - from;
}

static const char site_call[] = "test_spmd_loop: the loop call";
static const char site_pair[] = "test_spmd_loop: the pair";

static void check_all(int expect, const char *schedule, const char *how, int e)
{
    for (long i = 0; i < N; i++)
        MP_CHECK(hits[i] == expect, "schedule %s (%s), execution %d: iteration %ld ran %lld times, not %d",
                 schedule, how, e, i + LO, (long long)hits[i], expect);
}

static void run(const char *schedule)
{
    int me = dsm_rank();
    const char *name = schedule ? schedule : "(none: static)";
    /* The loop call. */
    for (int e = 1; e <= EXECUTIONS; e++) {
        long mine = 0;
        dsm_loop(site_call, LO, LO + N, schedule, body, &mine);
        dsm_barrier();
        check_all(e, name, "dsm_loop", e);
        dsm_barrier();
    }
    /* The pair; then the empty loops, which run nothing. */
    for (int e = 1; e <= EXECUTIONS; e++) {
        long mine = 0;
        dsm_loop_begin(site_pair, LO, LO + N, schedule);
        for (long from, to; dsm_loop_next(&from, &to);)
            body(from, to, &mine);
        dsm_loop(site_call, 5, 5, schedule, body, &mine);
        dsm_loop(site_call, 5, -5, schedule, body, &mine);
        dsm_barrier();
        check_all(EXECUTIONS + e, name, "dsm_loop_begin/next", e);
        dsm_barrier();
    }
    if (me == 0)
        memset(hits, 0, N * sizeof *hits);
    dsm_barrier();
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    if (dsm_rank() == 0)
        hits = dsm_malloc(N * sizeof *hits);
    dsm_bcast(&hits, sizeof hits, 0);
    if (dsm_rank() == 0)
        memset(hits, 0, N * sizeof *hits);
    dsm_barrier();
    static const char *const all[] = {NULL, "static", "static,3", "dynamic", "dynamic,7", "guided,2",
                                      "auto", "profiled", "profiled,0,2,1", "profiled,5", "profiled,3,1,0"};
    if (argc > 1) {
        run(argv[1]);
    } else {
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            run(all[k]);
    }
    if (dsm_rank() == 0)
        printf("dsm_loop: every iteration ran once per execution under every schedule\n");
    dsm_finish();
    return 0;
}
