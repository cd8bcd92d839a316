/*
 * A flush that finds nothing to do asks nothing (sync/flush.c, quiet
 * flushes), yet a poller still sees what an unlock elsewhere released:
 * the unlock counts as the flush OpenMP says it implies, and under hlrc
 * its release may stay on its node (lock.c, a kept release) with no
 * interval and no message, so the node tells the nodes watching for news
 * to ask again. Each round one node (round mod N), inside its own lock,
 * which only it takes, writes words in pages homed at the other nodes,
 * flushes, and sets its flag (in a page homed at the next node): the
 * pattern of OpenMP's flag examples, the flag's write released by the
 * unlock alone. Then it waits for each reader by taking the lock that
 * reader holds while it reads (a lock for each round), releasing nothing
 * meanwhile. The readers
 * poll the flag with dsm_flush (quiet once they have asked, unless
 * told), for at most a minute, check every word and give their locks
 * up. Then, after a barrier, every node flushes with nothing
 * written: under hlrc and lrc some of those flushes asked nothing
 * (counted); under erc and sc, whose flush is a release alone, none is
 * counted. Under every protocol, with loss and duplication.
 * Usage: test_quiet_flush [rounds] [pages]
 */
#include "mp_util.h"

#include <string.h>
#include <time.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define WORDS_EACH  3   /* words the writer writes in each page a round */
#define LOCK_BASE   700 /* node i's own lock: LOCK_BASE + i */
#define ANSWER_BASE 800 /* node i's "read it" lock of round r, held while it reads:
                           ANSWER_BASE + r * N + i, each taken once */
#define POLL_LIMIT  60  /* seconds a poll may take before the test fails */
#define IDLE_FLUSHES 8

static int64_t value(int round, size_t page, size_t word)
{
    return ((int64_t)(round + 1) << 40) ^ (int64_t)(page * 4099 + word * 7 + 1);
}

static volatile int64_t *flag_of(int64_t *flag_pages, int node, int nodes, size_t words)
{
    return flag_pages + (size_t)((node + 1) % nodes) * words;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Polls with a flush between looks until *flag >= want; fails the test
 * after POLL_LIMIT seconds. */
static void poll_flag(volatile int64_t *flag, int64_t want, int node, int round)
{
    double t0 = now_s();
    long polls = 0;
    while (*flag < want) {
        dsm_flush();
        polls++;
        MP_CHECK(polls % 1024 || now_s() - t0 < POLL_LIMIT,
                 "round %d: node %d's flag, set before its unlock, is still %lld here, not %lld, after "
                 "%ld flushes in %d s",
                 round, node, (long long)*flag, (long long)want, polls, POLL_LIMIT);
    }
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int npages = argc > 2 ? atoi(argv[2]) : 4;
    MP_CHECK(rounds >= 1 && rounds <= 10000, "rounds %d out of 1..10000", rounds);
    MP_CHECK(npages >= 1 && npages <= 64, "pages %d out of 1..64", npages);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), pages = (size_t)npages;

    /* pages * N pages, cyclic: the writer's are those not homed at it;
     * node i's flag in flag page (i + 1) mod N, homed at the next node. */
    int64_t *data = NULL, *flag_pages = NULL;
    if (me == 0) {
        data = dsm_malloc_home(pages * (size_t)n * page, DSM_HOME_CYCLIC);
        flag_pages = dsm_malloc_home((size_t)n * page, DSM_HOME_CYCLIC);
        memset(flag_pages, 0, (size_t)n * page);
    }
    dsm_bcast(&data, sizeof data, 0);
    dsm_bcast(&flag_pages, sizeof flag_pages, 0);
    /* Each node's lock comes to it once: from then on its unlocks find
     * nobody waiting, the case a release may stay on the node. */
    dsm_lock(LOCK_BASE + me);
    dsm_unlock(LOCK_BASE + me);
    dsm_barrier();

    for (int r = 1; r <= rounds; r++) {
        int w = r % n;
        /* The readers hold their answer locks before the writer starts. */
        if (me != w)
            dsm_lock(ANSWER_BASE + r * n + me);
        dsm_barrier();
        if (me == w) {
            dsm_lock(LOCK_BASE + me);
            for (size_t p = 0; p < pages * (size_t)n; p++)
                if ((int)(p % (size_t)n) != me)
                    for (size_t k = 0; k < WORDS_EACH; k++)
                        data[p * words + (p + (size_t)r * 5 + k * 97) % words] = value(r, p, k);
            dsm_flush();
            *flag_of(flag_pages, me, n, words) = r;
            dsm_unlock(LOCK_BASE + me);
            /* Waits for every reader without releasing anything: a lock's
             * acquire is an acquire alone. */
            for (int j = 0; j < n; j++)
                if (j != me) {
                    dsm_lock(ANSWER_BASE + r * n + j);
                    dsm_unlock(ANSWER_BASE + r * n + j);
                }
        } else {
            poll_flag(flag_of(flag_pages, w, n, words), r, w, r);
            for (size_t p = 0; p < pages * (size_t)n; p++)
                if ((int)(p % (size_t)n) != w)
                    for (size_t k = 0; k < WORDS_EACH; k++) {
                        int64_t got = data[p * words + (p + (size_t)r * 5 + k * 97) % words];
                        MP_CHECK(got == value(r, p, k),
                                 "round %d: word %zu of page %zu, written by node %d before its "
                                 "flush, is %#llx here, not %#llx",
                                 r, k, p, w, (unsigned long long)got,
                                 (unsigned long long)value(r, p, k));
                    }
            dsm_unlock(ANSWER_BASE + r * n + me);
        }
    }
    dsm_barrier();

    uint64_t quiet0 = stats_get(STAT_QUIET_FLUSHES);
    for (int k = 0; k < IDLE_FLUSHES; k++)
        dsm_flush();
    uint64_t quiet = stats_get(STAT_QUIET_FLUSHES) - quiet0;
    const char *p = coherence_name();
    bool asks = strcmp(p, "hlrc") == 0 || strcmp(p, "lrc") == 0;
    if (asks && n > 1)
        MP_CHECK(quiet > 0, "none of %d flushes with nothing written, after a barrier, was quiet (%s)",
                 IDLE_FLUSHES, p);
    else
        MP_CHECK(quiet == 0, "%llu quiet flushes under %s, whose flush asks nothing anyway",
                 (unsigned long long)quiet, p);
    dsm_barrier();
    if (me == 0)
        printf("quiet_flush: %d nodes (%s), %d rounds of %zu pages: ok; %llu of %d idle flushes "
               "quiet at node 0\n",
               n, p, rounds, pages, (unsigned long long)quiet, IDLE_FLUSHES);
    dsm_finish();
    return 0;
}
