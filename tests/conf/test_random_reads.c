/*
 * Random reads of a large array that one node filled: the pattern that
 * makes hlrc read a fault's block of pages ahead (pages this node has
 * never been told were written), where no stream of faults would. Then
 * pages are written after they were read ahead, and read again.
 *
 * A shared array of `pages` pages, all homed at node 0, which fills it.
 * After a barrier every participant reads `pages` words at random (about
 * 63 % of the pages, few of them neighbours) and checks each. With
 * `count`, under hlrc with read-ahead on, no DSM_LOCAL_MEM limit and one
 * thread a node, a
 * node other than the home must have taken at most a quarter as many
 * read faults as the pages this participant read: the rest came read
 * ahead (one round trip a page before).
 *
 * Then `rounds` rounds, each: a few random reads (which read blocks
 * ahead where pages are still unwritten here), a barrier, writes — node
 * 0 rewrites words 2.. of the pages with (q + r) % 3 == 0, and the last
 * participant word 1 of every fifth page (a diff its home applies) — a
 * barrier, and every participant reads every word of every page, from a
 * start that moves, checking each: a page read ahead before it was
 * written is seen at its new value after the acquire.
 * Usage: test_random_reads [pages] [rounds] [count]
 */
#include "mp_util.h"

#include <string.h>

#include "base/smp.h"
#include "base/stats.h"
#include "coherence/coherence.h"

static int64_t value(int round, size_t page, size_t word)
{
    return (int64_t)(round + 2) * 1000003 + (int64_t)page * 1031 + (int64_t)word;
}

/* What word w of page q holds after round r's writes (r = -1: the fill),
 * with n participants. */
static int64_t want(int r, size_t q, size_t w, int n)
{
    if (w == 0)
        return value(-1, q, w);
    if (w == 1)
        return n > 1 && q % 5 == 0 && r >= 0 ? value(r, q, 1) : value(-1, q, 1);
    for (; r >= 0; r--)
        if ((q + (size_t)r) % 3 == 0)
            return value(r, q, w);
    return value(-1, q, w);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int npages = argc > 1 ? atoi(argv[1]) : 1024;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    bool count = argc > 3 && strcmp(argv[3], "count") == 0;
    MP_CHECK(npages >= 1 && npages <= 65536, "pages %d out of 1..65536", npages);
    MP_CHECK(rounds >= 0 && rounds <= 1000, "rounds %d out of 0..1000", rounds);
    MP_CHECK(argc <= 3 || count, "the third argument is \"count\" or nothing, not \"%s\"", argv[3]);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t), pages = (size_t)npages;

    int64_t *a = NULL;
    if (me == 0) {
        a = dsm_malloc_home(pages * page, DSM_HOME_LOCAL);
        for (size_t q = 0; q < pages; q++)
            for (size_t w = 0; w < words; w++)
                a[q * words + w] = value(-1, q, w);
    }
    dsm_bcast(&a, sizeof a, 0);
    dsm_barrier();

    /* Random reads of pages nobody has written since the fill. */
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    uint64_t faults_before = stats_get(STAT_READ_FAULTS);
    unsigned char *seen = calloc(pages, 1);
    MP_CHECK(seen, "out of memory");
    size_t distinct = 0;
    for (size_t k = 0; k < pages; k++) {
        size_t q = mp_rand(&s) % pages, w = mp_rand(&s) % words;
        int64_t got = a[q * words + w];
        MP_CHECK(got == want(-1, q, w, n), "page %zu word %zu is %lld, not %lld", q, w,
                 (long long)got, (long long)want(-1, q, w, n));
        distinct += !seen[q];
        seen[q] = 1;
    }
    uint64_t faults = stats_get(STAT_READ_FAULTS) - faults_before;
    free(seen);
    const char *depth = getenv("DSM_READ_AHEAD");
    /* hlrc reads blocks ahead on a node of one thread only (hlrc_ahead.c). */
    bool counted = count && strcmp(coherence_name(), "hlrc") == 0 && !getenv("DSM_LOCAL_MEM") &&
                   !(depth && strcmp(depth, "0") == 0) && smp_threads() <= 1;
#ifdef CONF_THREADS
    bool home = conf_threads_node() == 0;
#else
    bool home = me == 0;
#endif
    if (counted && !home)
        MP_CHECK(faults * 4 <= distinct,
                 "%llu read faults for %zu pages read at random: not read ahead",
                 (unsigned long long)faults, distinct);
    dsm_barrier();

    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < pages / 16; k++) {
            size_t q = mp_rand(&s) % pages, w = mp_rand(&s) % words;
            int64_t got = a[q * words + w];
            MP_CHECK(got == want(r - 1, q, w, n), "round %d: page %zu word %zu is %lld, not %lld",
                     r, q, w, (long long)got, (long long)want(r - 1, q, w, n));
        }
        dsm_barrier();
        for (size_t q = 0; q < pages; q++) {
            if (me == 0 && (q + (size_t)r) % 3 == 0)
                for (size_t w = 2; w < words; w++)
                    a[q * words + w] = value(r, q, w);
            if (n > 1 && me == n - 1 && q % 5 == 0)
                a[q * words + 1] = value(r, q, 1);
        }
        dsm_barrier();
        size_t start = ((size_t)r * 7 + (size_t)me * 13) % pages;
        for (size_t k = 0; k < pages; k++) {
            size_t q = (start + k) % pages;
            for (size_t w = 0; w < words; w++) {
                int64_t got = a[q * words + w];
                MP_CHECK(got == want(r, q, w, n), "round %d: page %zu word %zu is %lld, not %lld",
                         r, q, w, (long long)got, (long long)want(r, q, w, n));
            }
        }
        dsm_barrier();
    }
    if (me == 0)
        printf("random_reads: %zu pages, %d rounds on %d nodes: ok, %llu read faults on node 0\n",
               pages, rounds, n, (unsigned long long)faults);
    dsm_finish();
    return 0;
}
