/*
 * Signals to a condition nobody has waited on send nothing, and the first
 * wait on a condition is still woken by a signal ordered after it
 * (cond.c: a condition's first registration is announced to every node
 * before it is confirmed).
 *  1. Every node broadcasts and signals conditions of every manager,
 *     `reps` times each, under a lock, before anyone waits on them: a
 *     node sends nothing for those another node manages (the counter
 *     "condition signals that sent nothing" says exactly how many), and
 *     the manager's own signals never sent anything.
 *  2. For every (manager, waiter, signaller) triple with waiter !=
 *     signaller, `rounds` times, a condition nobody has used yet: the
 *     waiter takes the condition's lock, says it is registered (a flag
 *     and a broadcast of a second fresh condition), and waits until
 *     `go`; the signaller takes the lock, waits until the waiter is
 *     registered, sets `go` and broadcasts once. The waiter's release of
 *     the lock in its wait comes before the signaller's acquire, so a
 *     broadcast that a stale "nobody waits" swallowed would leave the
 *     waiter waiting forever: the job would hang (the test's limit).
 *     Then the same condition again, now known to have been waited on,
 *     with a plain signal: every node sends it.
 * No waiting is by time: every wait is a dsm_cond_wait on a predicate.
 * Usage: test_cond_first_wait [reps] [rounds]
 */
#include "mp_util.h"

#include "base/stats.h"

#define COND_BASE 1000   /* phase 1: COND_BASE + k, k < 4 * nodes */
#define PAIR_BASE 100000 /* phase 2: two fresh conditions a triple and round */
#define LOCKS     8

struct slot { int registered, go, again, woken; };

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    long reps = argc > 1 ? atol(argv[1]) : 10;
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    MP_CHECK(n >= 2 && n <= 16, "2 to 16 nodes");
    MP_CHECK(reps >= 1 && rounds >= 1, "reps >= 1, rounds >= 1");

    /* Phase 1. */
#ifdef CONF_THREADS
    /* With threads (conf_threads.h) a condition's manager is still a node
     * (cond mod nodes) and the counter is the node's: its threads read it
     * before any of them signals and after all have, and it counts all
     * their skipped signals. */
    int node = conf_threads_node(), nodes = conf_threads_nodes();
    dsm_barrier();
#endif
    uint64_t skipped0 = stats_get(STAT_COND_SIGNALS_SKIPPED), elsewhere = 0;
#ifdef CONF_THREADS
    dsm_barrier();
#endif
    for (long r = 0; r < reps; r++)
        for (int k = 0; k < 4 * n; k++) {
            int cond = COND_BASE + k;
            dsm_lock(k % LOCKS);
            if (r % 2)
                dsm_cond_broadcast(cond);
            else
                dsm_cond_signal(cond);
            dsm_unlock(k % LOCKS);
#ifdef CONF_THREADS
            elsewhere += (uint64_t)dsm_node_threads() * (cond % nodes != node);
#else
            elsewhere += cond % n != me;
#endif
        }
#ifdef CONF_THREADS
    dsm_barrier();
#endif
    uint64_t skipped = stats_get(STAT_COND_SIGNALS_SKIPPED) - skipped0;
    MP_CHECK(skipped == elsewhere, "%llu signals to conditions nobody waited on sent something"
             " (%llu of %llu skipped)", (unsigned long long)(elsewhere - skipped),
             (unsigned long long)skipped, (unsigned long long)elsewhere);
    dsm_barrier();

    /* Phase 2. */
    size_t nslots = (size_t)rounds * n * n * n;
    struct slot *s = NULL;
    if (me == 0)
        s = dsm_malloc(nslots * sizeof *s);
    dsm_bcast(&s, sizeof s, 0);
    dsm_barrier(); /* the zeroed slots */
    size_t i = 0;
    long woken = 0;
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < n; m++)
            for (int w = 0; w < n; w++)
                for (int g = 0; g < n; g++, i++) {
                    if (w == g || (me != w && me != g))
                        continue;
                    /* Conditions (cond % n == m: managed by m) nobody has used. */
                    int base = PAIR_BASE + (int)i * 2 * n;
                    int cond = base + m, reg = base + n + m;
                    int lock = (int)(i % LOCKS);
                    dsm_lock(lock);
                    if (me == w) {
                        s[i].registered = 1;
                        dsm_cond_broadcast(reg);
                        while (!s[i].go)
                            dsm_cond_wait(cond, lock);
                        s[i].woken = 1;
                        dsm_cond_broadcast(reg);
                        while (!s[i].again)
                            dsm_cond_wait(cond, lock);
                        woken++;
                    } else {
                        while (!s[i].registered)
                            dsm_cond_wait(reg, lock);
                        s[i].go = 1;
                        dsm_cond_broadcast(cond);
                        while (!s[i].woken)
                            dsm_cond_wait(reg, lock);
                        s[i].again = 1;
#ifdef CONF_THREADS
                        /* Not counted: another thread of this node may
                         * skip a signal to another condition meanwhile. */
                        dsm_cond_signal(cond);
#else
                        uint64_t before = stats_get(STAT_COND_SIGNALS_SKIPPED);
                        dsm_cond_signal(cond);
                        MP_CHECK(stats_get(STAT_COND_SIGNALS_SKIPPED) == before,
                                 "a signal to condition %d, waited on, sent nothing", cond);
#endif
                    }
                    dsm_unlock(lock);
                }
    dsm_barrier();
    MP_CHECK(woken == (long)rounds * n * (n - 1), "woken %ld times, expected %ld", woken,
             (long)rounds * n * (n - 1));
    if (me == 0)
        printf("cond_first_wait: %d nodes, %llu signals skipped in phase 1, %ld waits woken\n", n,
               (unsigned long long)skipped, woken);
    dsm_finish();
    return 0;
}
