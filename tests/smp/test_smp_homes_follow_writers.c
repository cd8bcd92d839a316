/*
 * Homes move to their writers with several threads on a node
 * (src/coherence/migrate.c under dsmrun --threads). Every page starts
 * homed at node 0; block k is rewritten by node k's threads, each its own
 * words, every iteration, and read whole by every thread of every node,
 * while the node's threads also fault on the other blocks, take a lock
 * and cross barriers. Every value read is checked, every iteration: a
 * page given away while another thread of its giver or taker faults on it,
 * serves it or sends its diff must lose nothing. With `moves`, node k
 * (k > 0) must have received block k's pages (home migration: the writes
 * are all node k's).
 *
 * Every thread also adds one, under a lock, to a counter in block 0's
 * first page, every iteration.
 *
 * Usage: test_smp_homes_follow_writers [iterations] [moves]
 */
#include <string.h>

#include "base/stats.h"
#include "smp_util.h"

#define PAGES_PER_BLOCK 4

static int64_t *blocks;
static long iterations = 16;
static int moves;

static void setup(void)
{
    blocks = dsm_malloc_home((size_t)dsm_nodes() * PAGES_PER_BLOCK * dsm_page_size(), DSM_HOME_LOCAL);
}

/* Word w of block k after iteration i: written by node k's thread w mod T. */
static int64_t value(long i, int k, size_t w) { return ((int64_t)i * 64 + k) * 100003 + (int64_t)w; }

static void work(void *arg)
{
    (void)arg;
    int node = dsm_rank(), nodes = dsm_nodes(), t = dsm_node_threads();
    int local = dsm_thread_id() - node * t;
    size_t words = PAGES_PER_BLOCK * dsm_page_size() / sizeof(int64_t);
    int64_t *counter = &blocks[0]; /* word 0 of block 0 is the counter, never written as data */
    for (long i = 0; i < iterations; i++) {
        int64_t *mine = blocks + (size_t)node * words;
        for (size_t w = 1 + (size_t)local; w < words; w += (size_t)t)
            mine[w] = value(i, node, w);
        dsm_lock(1);
        ++*counter;
        dsm_unlock(1);
        dsm_barrier();
        /* Each thread reads the blocks in another order: faults on
         * different pages of one node at once. */
        for (int j = 0; j < nodes; j++) {
            int k = (j + local) % nodes;
            const int64_t *b = blocks + (size_t)k * words;
            for (size_t w = 1; w < words; w++)
                SMP_CHECK(b[w] == value(i, k, w), "iteration %ld, block %d word %zu: %lld, expected %lld",
                          i, k, w, (long long)b[w], (long long)value(i, k, w));
        }
        dsm_barrier();
    }
    SMP_CHECK(*counter == (int64_t)nodes * t * iterations, "counter %lld, expected %lld",
              (long long)*counter, (long long)nodes * t * iterations);
    if (moves && local == 0 && node > 0)
        SMP_CHECK(stats_get(STAT_MIGRATE_IN) >= PAGES_PER_BLOCK,
                  "node %d received %llu pages as their new home, expected its block's %d", node,
                  (unsigned long long)stats_get(STAT_MIGRATE_IN), PAGES_PER_BLOCK);
    dsm_barrier();
    if (dsm_thread_id() == 0)
        printf("%d threads on %d nodes: every value as written%s\n", nodes * t, nodes,
               moves ? ", every block moved to its writers" : "");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "moves"))
            moves = 1;
        else
            iterations = atol(argv[i]);
    }
    return smp_run(&argc, &argv, setup, work);
}
