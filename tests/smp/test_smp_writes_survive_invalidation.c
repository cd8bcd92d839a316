/*
 * An acquire on one thread of a node never discards another local
 * thread's writes not yet released. Every thread keeps writing its own
 * words of pages every thread writes, and every few writes takes and
 * releases a lock: each release sends the node's diffs of those pages,
 * and each acquire brings other nodes' notices for them while the node's
 * other threads are still writing them (docs/design.md, SMP nodes: the
 * page is made inaccessible before its diff is taken). Every write adds
 * to its word, so after each round's barrier a word holding less than the
 * sum of its writer's additions shows a write lost at any time.
 * Usage: test_smp_writes_survive_invalidation [rounds] [writes]
 */
#include "smp_util.h"

#define PAGES 2

static int64_t *words, *counter;
static long rounds = 10, writes = 400;

static void setup(void)
{
    words = dsm_malloc_home(PAGES * dsm_page_size(), DSM_HOME_CYCLIC);
    counter = dsm_malloc(3 * sizeof *counter); /* one per lock */
}

static int64_t value(long round, long i, int thread) { return (round * 1009 + i) * 1024 + thread; }

/* A word's value after round r: every write added its value, so a write
 * lost at any time shows, not only the last one. */
static int64_t sum_to(long r, int thread)
{
    int64_t sum = 0;
    for (long q = 0; q <= r; q++)
        for (long i = 0; i < writes; i++)
            sum += value(q, i, thread);
    return sum;
}

static void work(void *arg)
{
    (void)arg;
    int me = dsm_thread_id(), n = dsm_thread_count();
    size_t nwords = PAGES * dsm_page_size() / sizeof(int64_t);
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < writes; i++) {
            for (size_t w = (size_t)me; w < nwords; w += (size_t)n)
                words[w] += value(r, i, me);
            if (i % 4 == 0) {
                dsm_lock(me % 3);
                ++counter[me % 3];
                dsm_unlock(me % 3);
            }
        }
        dsm_barrier();
        for (size_t w = 0; w < nwords; w++)
            SMP_CHECK(words[w] == sum_to(r, (int)(w % (size_t)n)),
                      "round %ld word %zu (thread %d's): %lld", r, w, (int)(w % (size_t)n),
                      (long long)words[w]);
        dsm_barrier();
    }
    int64_t total = counter[0] + counter[1] + counter[2];
    SMP_CHECK(total == (int64_t)n * rounds * ((writes + 3) / 4), "counters %lld, expected %lld",
              (long long)total, (long long)n * rounds * ((writes + 3) / 4));
    if (me == 0)
        printf("%d threads on %d nodes: no write lost\n", n, dsm_nodes());
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    if (argc > 2)
        writes = atol(argv[2]);
    return smp_run(&argc, &argv, setup, work);
}
