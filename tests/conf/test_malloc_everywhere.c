/*
 * dsm_malloc on every node at once, with every home policy:
 *  - each node allocates blocks of 1 B .. max (1 MiB by default) under each
 *    of DSM_HOME_DEFAULT, LOCAL, CYCLIC, BLOCK and FIRST_TOUCH, checks that
 *    they read as zeros and that blocks of a page or more are page-aligned,
 *    fills them with a pattern of its own and publishes them in a shared
 *    table; after a barrier every node checks every node's blocks, and that
 *    no two blocks overlap;
 *  - then each node frees some of its own blocks and some of the next
 *    node's (a free of another node's block), allocates the same sizes
 *    again (memory that comes back must read as zeros too), and everything
 *    is checked again: the new blocks, the blocks that stayed, no overlap.
 * Usage: test_malloc_everywhere [max_size]
 */
#include "mp_util.h"

static const size_t all_sizes[] = {1,    3,    8,    16,    17,    100,   1000,  2048,
                                   2049, 4095, 4096, 4097,  8191,  8192,  8193,  10000,
                                   65536, 300000, 1u << 20};
#define NSIZES (sizeof all_sizes / sizeof all_sizes[0])
static const enum dsm_home homes[] = {DSM_HOME_DEFAULT, DSM_HOME_LOCAL, DSM_HOME_CYCLIC,
                                      DSM_HOME_BLOCK, DSM_HOME_FIRST_TOUCH};
#define NHOMES (sizeof homes / sizeof homes[0])

struct entry {
    uint64_t addr, size, seed;
};

static uint64_t seed_of(int gen, int node, size_t idx)
{
    return ((uint64_t)gen << 40) | ((uint64_t)node << 20) | idx;
}

/* sizes[0 .. nsizes): the sizes up to the largest asked for, a local of
 * main's: with threads a node's participants share its statics
 * (conf_threads.h). */
static void allocate(struct entry *e, size_t idx, int gen, int me, const size_t *sizes,
                     size_t nsizes)
{
    size_t size = sizes[idx % nsizes];
    enum dsm_home home = homes[idx / nsizes];
    unsigned char *p = dsm_malloc_home(size, home);
    MP_CHECK(p != NULL, "dsm_malloc_home(%zu, %d) returned NULL", size, (int)home);
    size_t page = dsm_page_size();
    if (size >= page)
        MP_CHECK(((uintptr_t)p & (page - 1)) == 0, "a %zu-byte block at %p is not page-aligned",
                 size, (void *)p);
    for (size_t i = 0; i < size; i++)
        MP_CHECK(p[i] == 0, "new %zu-byte block (home %d, round %d) at %p: byte %zu is %#x, not 0",
                 size, (int)home, gen, (void *)p, i, p[i]);
    e->addr = (uint64_t)(uintptr_t)p;
    e->size = size;
    e->seed = seed_of(gen, me, idx);
    mp_fill(p, size, e->seed);
}

static int by_addr(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Every block in the table holds its pattern, and no two overlap. */
static void verify_all(const struct entry *table, size_t count, int round)
{
    struct entry *sorted = malloc(count * sizeof *sorted);
    MP_CHECK(sorted != NULL, "out of memory");
    size_t live = 0;
    for (size_t i = 0; i < count; i++) {
        if (!table[i].addr)
            continue;
        MP_CHECK(mp_verify((const unsigned char *)(uintptr_t)table[i].addr, table[i].size,
                           table[i].seed),
                 "round %d: block %zu (node %zu, %llu bytes at %#llx) does not hold its pattern",
                 round, i, i / (NSIZES * NHOMES), (unsigned long long)table[i].size,
                 (unsigned long long)table[i].addr);
        sorted[live++] = table[i];
    }
    qsort(sorted, live, sizeof *sorted, by_addr);
    for (size_t i = 1; i < live; i++)
        MP_CHECK(sorted[i - 1].addr + sorted[i - 1].size <= sorted[i].addr,
                 "round %d: blocks at %#llx (%llu bytes) and %#llx overlap", round,
                 (unsigned long long)sorted[i - 1].addr, (unsigned long long)sorted[i - 1].size,
                 (unsigned long long)sorted[i].addr);
    free(sorted);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    size_t max = argc > 1 ? (size_t)atol(argv[1]) : 1u << 20;
    size_t sizes[NSIZES], nsizes = 0;
    for (size_t i = 0; i < NSIZES; i++)
        if (all_sizes[i] <= max)
            sizes[nsizes++] = all_sizes[i];
    size_t per_node = nsizes * NHOMES; /* block idx: home (idx / nsizes), size (idx % nsizes) */

    struct entry *table = NULL;
    if (me == 0)
        table = dsm_malloc((size_t)n * per_node * sizeof *table);
    dsm_bcast(&table, sizeof table, 0);
    struct entry *mine = table + (size_t)me * per_node;

    /* Round 0: everything, on every node at once. */
    for (size_t idx = 0; idx < per_node; idx++)
        allocate(&mine[idx], idx, 0, me, sizes, nsizes);
    dsm_barrier();
    verify_all(table, (size_t)n * per_node, 0);
    dsm_barrier(); /* everyone has read the table before it changes */

    /* Round 1: free the odd blocks of our own and every fourth (idx % 4 ==
     * 2) block of the next node, then allocate those again. With one node,
     * "the next node" is ourselves. */
    int next = (me + 1) % n;
    struct entry *theirs = table + (size_t)next * per_node;
    for (size_t idx = 0; idx < per_node; idx++) {
        if (idx % 2 == 1) {
            dsm_free((void *)(uintptr_t)mine[idx].addr);
            mine[idx].addr = 0;
        }
        if (idx % 4 == 2) {
            dsm_free((void *)(uintptr_t)theirs[idx].addr);
            theirs[idx].addr = 0;
        }
    }
    dsm_barrier(); /* the frees of other nodes' blocks reach their owners */
    for (size_t idx = 0; idx < per_node; idx++)
        if (idx % 2 == 1 || idx % 4 == 2)
            allocate(&mine[idx], idx, 1, me, sizes, nsizes);
    dsm_barrier();
    verify_all(table, (size_t)n * per_node, 1);
    for (size_t idx = 0; idx < per_node; idx++)
        MP_CHECK(mine[idx].seed == seed_of(idx % 2 == 1 || idx % 4 == 2, me, idx),
                 "block %zu is from the wrong round", idx);
    dsm_barrier();

    if (me == 0) {
        size_t bytes = 0;
        for (size_t i = 0; i < nsizes; i++)
            bytes += sizes[i];
        printf("malloc_everywhere: %d nodes, %zu blocks each (%zu sizes up to %zu B, %zu homes, "
               "%zu bytes per home), freed and reallocated: ok\n",
               n, per_node, nsizes, sizes[nsizes - 1], NHOMES, bytes);
    }
    dsm_finish();
    return 0;
}
