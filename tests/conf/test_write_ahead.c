/*
 * Streams of writes over pages homed elsewhere, several at once: the
 * pattern of a radix sort's permutation, that makes hlrc fetch pages
 * ahead of a write fault (a write fault on an invalid page whose
 * predecessor this node wrote since its last release fetches the pages
 * after it of the same home in one run). Other protocols fetch page by
 * page; the answers must be the same.
 *
 * A shared array is homed in N contiguous blocks, each cut into RUNS runs
 * of `len` pages. In round r, run t is written by node (t + r) % N, so its
 * pages were last written by another node (this node's copy is stale or
 * absent, and each write fault must fetch): every node walks all its runs
 * at once, word by word (each run a stream, the streams interleaved), and
 * writes every word of each page but those with (w + q + r) % 5 == 0.
 * Those it leaves: in even rounds the next node writes them (two writers
 * of one page, a diff each), in odd rounds nobody does, so they must keep
 * the previous round's value, which only a fetch of the home's copy
 * brings (a page fetched ahead at a stale version would lose it). A
 * stream's last pages fetch ahead into the next run, which another node
 * (often the home) writes in the same round.
 * After odd rounds and the last, every node reads every word and checks it
 * (a read leaves a valid copy, so the rounds between let the writes
 * fault on invalid pages). Under hlrc without a page limit each node must
 * have fetched pages ahead of write faults, and none with DSM_WRITE_AHEAD=0.
 * Usage: test_write_ahead [rounds] [pages per run]
 */
#include "mp_util.h"

#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define RUNS 3 /* runs per home's block */

static int64_t value(int round, size_t page, size_t word)
{
    return (int64_t)(round + 2) * 1000003 + (int64_t)page * 1031 + (int64_t)word;
}

static bool left_by_writer(int r, size_t q, size_t w) { return (w + q + (size_t)r) % 5 == 0; }

/* Word w of page q after round r. */
static int64_t expected(int r, size_t q, size_t w)
{
    return left_by_writer(r, q, w) && r % 2 == 1 ? value(r - 1, q, w) : value(r, q, w);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    int len = argc > 2 ? atoi(argv[2]) : 12;
    MP_CHECK(rounds >= 2 && rounds <= 1000, "rounds %d out of 2..1000", rounds);
    MP_CHECK(len >= 1 && len <= 256, "pages per run %d out of 1..256", len);
    size_t page = dsm_page_size(), words = page / sizeof(int64_t);
    size_t runs = (size_t)n * RUNS, rpages = (size_t)len, pages = runs * rpages;

    int64_t *a = NULL;
    if (me == 0)
        a = dsm_malloc_home(pages * page, DSM_HOME_BLOCK);
    dsm_bcast(&a, sizeof a, 0);
    /* Each home writes its block first (round -1). */
    for (size_t q = (size_t)me * RUNS * rpages; q < (size_t)(me + 1) * RUNS * rpages; q++)
        for (size_t w = 0; w < words; w++)
            a[q * words + w] = value(-1, q, w);
    dsm_barrier();

    size_t *mine = malloc(runs * sizeof *mine);
    MP_CHECK(mine, "out of memory");
    for (int r = 0; r < rounds; r++) {
        size_t k = 0;
        for (size_t t = 0; t < runs; t++)
            if ((int)((t + (size_t)r) % (size_t)n) == me)
                mine[k++] = t;
        /* The streams, interleaved: word i of each of my runs in turn. */
        for (size_t i = 0; i < rpages * words; i++)
            for (size_t j = 0; j < k; j++) {
                size_t q = mine[j] * rpages + i / words, w = i % words;
                if (!left_by_writer(r, q, w))
                    a[q * words + w] = value(r, q, w);
            }
        /* The words my predecessor's runs leave, in even rounds. */
        if (r % 2 == 0)
            for (size_t t = 0; t < runs; t++)
                if ((int)((t + (size_t)r + 1) % (size_t)n) == me)
                    for (size_t q = t * rpages; q < (t + 1) * rpages; q++)
                        for (size_t w = 0; w < words; w++)
                            if (left_by_writer(r, q, w))
                                a[q * words + w] = value(r, q, w);
        dsm_barrier();

        if (r % 2 == 1 || r == rounds - 1) {
            for (size_t q = 0; q < pages; q++)
                for (size_t w = 0; w < words; w++) {
                    int64_t got = a[q * words + w], want = expected(r, q, w);
                    MP_CHECK(got == want, "round %d: page %zu word %zu is %lld, not %lld", r, q, w,
                             (long long)got, (long long)want);
                }
            dsm_barrier();
        }
    }
    free(mine);
    uint64_t ahead = stats_get(STAT_PAGES_WRITE_AHEAD);
    const char *limit = getenv("DSM_LOCAL_MEM"), *depth = getenv("DSM_WRITE_AHEAD");
    bool off = depth && strcmp(depth, "0") == 0;
    /* Nodes, not n: with threads (conf_threads.h) n counts them. On one
     * node nothing is fetched. */
    bool remote = dsm_thread_count() / dsm_node_threads() > 1;
    if (strcmp(coherence_name(), "hlrc") == 0 && off)
        MP_CHECK(ahead == 0, "DSM_WRITE_AHEAD=0, yet %llu pages were fetched ahead of a write fault",
                 (unsigned long long)ahead);
    else if (strcmp(coherence_name(), "hlrc") == 0 && !(limit && *limit) && len >= 3 && remote)
        MP_CHECK(ahead > 0, "hlrc fetched no page ahead of a write fault");
    if (me == 0)
        printf("write_ahead: %d rounds of %zu runs of %zu pages on %d nodes (%s): ok, %llu pages "
               "fetched ahead of write faults on node 0\n",
               rounds, runs, rpages, n, coherence_name(), (unsigned long long)ahead);
    dsm_finish();
    return 0;
}
