/*
 * A read-mostly table: written once, each node its own contiguous part
 * (pages homed in blocks over the nodes, DSM_HOME_BLOCK, so each node
 * writes its own home pages), then read whole by every node in every round
 * across barriers. Every fourth round, every node adds to a few entries
 * under a lock (read-modify-write; several nodes may hit one entry), and
 * every node then sees exactly the model it keeps privately. Once an entry
 * was fetched, reading it again needs no traffic until it changes; the
 * values prove that the changes do arrive. Under hlrc with
 * DSM_PULL_CREDIT=0 no page may have been refreshed in place (pulled).
 * Usage: test_read_mostly [entries] [rounds]
 */
#include "mp_util.h"

#include <string.h>

#include "base/stats.h"
#include "coherence/coherence.h"

#define LOCK    1
#define UPDATES 8   /* entries each node updates in an update round */

static size_t update_index(int round, int j, size_t entries)
{
    return ((size_t)round * 7919u + (size_t)j * 104729u) % entries;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    size_t entries = argc > 1 ? (size_t)atol(argv[1]) : 65536;
    int rounds = argc > 2 ? atoi(argv[2]) : 20;

    int64_t *table = NULL;
    if (me == 0)
        table = dsm_malloc_home(entries * sizeof *table, DSM_HOME_BLOCK);
    dsm_bcast(&table, sizeof table, 0);
    int64_t *model = malloc(entries * sizeof *model);
    MP_CHECK(model != NULL, "out of memory");
    for (size_t i = 0; i < entries; i++)
        model[i] = (int64_t)i * 3 + 1;

    size_t lo = entries * (size_t)me / (size_t)n, hi = entries * (size_t)(me + 1) / (size_t)n;
    for (size_t i = lo; i < hi; i++)
        table[i] = model[i];
    dsm_barrier();

    int64_t each_round = (int64_t)n * (n + 1) / 2; /* sum of everyone's me + 1 */
    for (int r = 0; r < rounds; r++) {
        /* Read everything, starting at a different place on each node. */
        int64_t sum = 0, want = 0;
        for (size_t k = 0; k < entries; k++) {
            size_t i = (k + lo) % entries;
            MP_CHECK(table[i] == model[i], "round %d: entry %zu = %lld, expected %lld", r, i,
                     (long long)table[i], (long long)model[i]);
            sum += table[i];
            want += model[i];
        }
        MP_CHECK(sum == want, "round %d: sum", r);
        dsm_barrier(); /* everyone has read round r's values */
        if (r % 4 == 3) {
            dsm_lock(LOCK);
            for (int j = 0; j < UPDATES; j++)
                table[update_index(r, j, entries)] += me + 1;
            dsm_unlock(LOCK);
            for (int j = 0; j < UPDATES; j++)
                model[update_index(r, j, entries)] += each_round;
            dsm_barrier();
        }
    }
    uint64_t pulled = stats_get(STAT_PAGES_PULLED);
    const char *credit = getenv("DSM_PULL_CREDIT");
    if (strcmp(coherence_name(), "hlrc") == 0 && credit && strcmp(credit, "0") == 0)
        MP_CHECK(pulled == 0, "DSM_PULL_CREDIT=0, yet %llu pages were pulled", (unsigned long long)pulled);
    if (me == 0)
        printf("read_mostly: %d nodes, %zu entries read in %d rounds, %d update rounds: ok, %llu pages "
               "pulled on node 0\n", n, entries, rounds, rounds / 4, (unsigned long long)pulled);
    free(model);
    dsm_finish();
    return 0;
}
