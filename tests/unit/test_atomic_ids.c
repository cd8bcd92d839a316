/*
 * test_atomic_ids.c — the dsm locks that the program's atomics take
 * (src/sync/atomic.c): every atomic of 16 bytes or less, naturally
 * aligned, that overlaps another meets it on one lock; the ids stay in
 * their own range, above every id the OpenMP runtime gives its critical
 * sections and locks (an atomic inside a critical section takes its lock
 * while the section's is held, so the two must never be one lock);
 * neighbouring counters fall on many managers (id mod nodes); and where a
 * block's manager is chosen (its page's base node, under hlrc) every id
 * is that node's, in range, and the blocks still spread over its ids.
 */
#include "check.h"
#include "omp/omp_state.h"
#include "parallel/parallel.h"
#include "sync/sync.h"

#include <limits.h>

static void test_overlapping_atomics_share_one_lock(void)
{
    int same = 1;
    for (uintptr_t base = 0x10000000; base < 0x10000000 + 4096; base += 16) {
        int id = sync_atomic_lock_id((void *)base);
        for (unsigned size = 1; size <= 16; size *= 2)
            for (uintptr_t a = base; a < base + 16; a += size)
                same &= sync_atomic_lock_id((void *)a) == id;
    }
    CHECK(same);
}

static void test_ids_in_their_own_range(void)
{
    int in_range = 1, below = 1;
    for (int i = 0; i < 200000; i++) {
        uintptr_t a = (uintptr_t)(rng() & 0x7ffffffffff0ull);
        int id = sync_atomic_lock_id((void *)a);
        in_range &= id >= SYNC_ATOMIC_LOCK_BASE && id <= INT_MAX;
        /* critical names are 32-byte globals; any address may be one */
        int crit = omp_lock_id_of((void *)(a & ~(uintptr_t)31));
        below &= crit >= PARALLEL_LOCK_BASE && crit < SYNC_ATOMIC_LOCK_BASE;
    }
    CHECK(in_range);
    CHECK(below);
    CHECK(SYNC_ATOMIC_LOCK_BASE > SYNC_USER_ID_MAX);
}

static void test_neighbouring_counters_spread_over_managers(void)
{
    /* 64 consecutive 16-byte counters on 8 nodes: every node manages some,
     * none more than a third. */
    int per_node[8] = {0};
    for (uintptr_t a = 0x20000000; a < 0x20000000 + 64 * 16; a += 16)
        per_node[sync_atomic_lock_id((void *)a) % 8]++;
    int all = 1, fair = 1;
    for (int n = 0; n < 8; n++) {
        all &= per_node[n] > 0;
        fair &= per_node[n] <= 64 / 3;
    }
    CHECK(all);
    CHECK(fair);
}

static void test_chosen_managers_in_range_and_spread(void)
{
    int managed = 1, in_range = 1;
    for (int nodes = 1; nodes <= 256; nodes += nodes < 12 ? 1 : 61)
        for (int manager = 0; manager < nodes; manager++)
            for (int i = 0; i < 200; i++) {
                uint32_t h = (uint32_t)rng();
                int id = sync_atomic_lock_id_managed(i < 2 ? (i ? UINT32_MAX : 0) : h, nodes, manager);
                managed &= id % nodes == manager;
                in_range &= id >= SYNC_ATOMIC_LOCK_BASE && id <= INT_MAX;
            }
    CHECK(managed);
    CHECK(in_range);
    /* 1,000 hashes on 8 nodes: many distinct ids of one manager. */
    static char seen[SYNC_ATOMIC_LOCKS];
    int distinct = 0;
    for (uint32_t h = 0; h < 1000; h++) {
        int id = sync_atomic_lock_id_managed(h * 0x9e3779b9u, 8, 3) - SYNC_ATOMIC_LOCK_BASE;
        distinct += !seen[id];
        seen[id] = 1;
    }
    CHECK(distinct > 900);
}

int main(void)
{
    seed(38);
    test_overlapping_atomics_share_one_lock();
    test_ids_in_their_own_range();
    test_neighbouring_counters_spread_over_managers();
    test_chosen_managers_in_range_and_spread();
    return check_report("atomic_ids");
}
