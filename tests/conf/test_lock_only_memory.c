/*
 * A program that synchronises only with locks runs in bounded memory
 * (issue 26): every node takes one lock, increments a shared counter and
 * its own word of the same page, and lets the lock go, in turns, until the
 * counter reaches nodes * ops (each node counts ops), with no barrier until the end. Each node reads its
 * resident memory when it first sees a quarter of the total, half of it,
 * and at the end (the lazy protocols' intervals and write notices must be
 * collected without a barrier). What is bounded is a slope: memory that
 * grows with the operations grows in both stretches, a quarter of the
 * total and then half of it, so the smaller of the two growths (the first
 * doubled, for the same number of operations) may be at most `bound_kib`.
 * A step that a library takes once (UCX's pools grow by about 1 MiB at a
 * time, on one node sooner than on another) lies in one stretch and is
 * no slope. Every node's word must come out at ops. Each node prints the
 * figures and its lock operations per second in each stretch (for the
 * record; the test asserts counts and memory, never time). With
 * `barrier_every` B > 0 the load is mixed: every node also meets a
 * barrier after each B of its own operations (each node's B-th comes
 * within one round of turns, so all arrive), and memory must be bounded
 * all the same.
 * Usage: test_lock_only_memory [ops] [bound_kib] [barrier_every]
 */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "mp_util.h"

#define THE_LOCK 3

/* This process's resident memory in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long ops = argc > 1 ? atol(argv[1]) : 4000;
    long bound = argc > 2 ? atol(argv[2]) : 256;
    long barrier_every = argc > 3 ? atol(argv[3]) : 0;
    MP_CHECK(barrier_every >= 0 && barrier_every <= ops, "barrier_every %ld out of 0..%ld",
             barrier_every, ops);
    MP_CHECK(ops >= 8 && ops <= 100000000, "ops %ld out of 8..100000000", ops);
    MP_CHECK(bound >= 0, "bound_kib %ld below 0", bound);
    /* Over UCX its pools grow in steps of about 1 MiB a node to a cap (8
     * nodes: 13.4-14.1 MiB at the end after 800, 3,200 and 12,800 ops
     * each), whatever bound the arguments give for the protocols' own. */
    const char *net = getenv("DSM_NET");
    if (net && !strcmp(net, "ucx") && bound < 1536)
        bound = 1536;
    MP_CHECK((size_t)n < dsm_page_size() / sizeof(int64_t), "%d nodes do not fit a page", n);

    int64_t *page = NULL;
    if (me == 0)
        page = dsm_malloc(dsm_page_size());
    dsm_bcast(&page, sizeof page, 0);

    /* Turns: the node whose turn it is (counter mod nodes) counts, the
     * others let the lock go again, until the counter reaches the total.
     * So every node keeps taking the lock to the end (a node that stops
     * acquiring holds back the others' collection: it has not seen their
     * intervals), and none runs ahead with the lock kept local. */
    long total = (long)n * ops, quarter = total / 4, mine = 0, mine_q = 0, rss_q = -1, rss_h = -1;
    double t0 = now(), t_q = t0;
    for (;;) {
        dsm_lock(THE_LOCK);
        if (page[0] >= total) {
            dsm_unlock(THE_LOCK);
            break;
        }
        if (page[0] % n != me) {
            dsm_unlock(THE_LOCK);
            continue;
        }
        page[0]++;
        page[1 + me]++;
        mine++;
        bool first_quarter_done = rss_q < 0 && page[0] >= quarter;
        bool half_done = rss_h < 0 && page[0] >= 2 * quarter;
        dsm_unlock(THE_LOCK);
        if (first_quarter_done) {
            rss_q = rss_kib();
            mine_q = mine;
            t_q = now();
        }
        if (half_done)
            rss_h = rss_kib();
        if (barrier_every && mine % barrier_every == 0)
            dsm_barrier();
    }
    long rss_end = rss_kib();
    double t_end = now();
    if (rss_q < 0) { /* the others did the first quarter */
        rss_q = rss_end;
        t_q = t_end;
        mine_q = mine;
    }
    if (rss_h < 0)
        rss_h = rss_end;
    MP_CHECK(rss_q > 0 && rss_h > 0 && rss_end > 0, "cannot read VmRSS from /proc/self/status");
    printf("lock_only_memory: node %d: rss %ld KiB at a quarter of the total, %ld KiB at half, "
           "%ld KiB at the end; %ld ops at %.0f ops/s, then %ld at %.0f ops/s\n",
           me, rss_q, rss_h, rss_end, mine_q, (double)mine_q / (t_q - t0), mine - mine_q,
           (double)(mine - mine_q) / (t_end - t_q));
    fflush(stdout);

    dsm_barrier();
    MP_CHECK(page[0] == total, "the counter reads %lld, expected %ld", (long long)page[0], total);
    for (int k = 0; k < n; k++)
        MP_CHECK(page[1 + k] == ops, "node %d's word reads %lld, expected %ld", k,
                 (long long)page[1 + k], ops);
    long first = 2 * (rss_h - rss_q), second = rss_end - rss_h;
    MP_CHECK(first <= bound || second <= bound,
             "resident memory grew with the operations: by %ld KiB from a quarter of them to half "
             "and %ld KiB from half to the end (from %ld to %ld to %ld KiB), a slope of more than "
             "the %ld KiB allowed per half of the operations",
             rss_h - rss_q, second, rss_q, rss_h, rss_end, bound);
    dsm_barrier();
    if (me == 0)
        printf("lock_only_memory: %d nodes, %ld ops each: ok\n", n, ops);
    dsm_finish();
    return 0;
}
