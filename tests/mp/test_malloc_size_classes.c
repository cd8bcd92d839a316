/*
 * The allocator's size classes (src/mem/alloc.c), on every node at once:
 *  - every block is 16-byte aligned (malloc's max_align_t) and, through
 *    dsm_heap_alloc (malloc's aligned forms), aligned as asked, for sizes
 *    from 1 byte to two pages and alignments from 16 bytes to the page;
 *  - no two blocks of any node overlap, and each keeps what its node wrote
 *    (every node checks every node's blocks after a barrier);
 *  - small blocks are packed densely: a class wastes at most a quarter of
 *    its block (16-byte steps up to 128 bytes), so blocks of 2,064 bytes
 *    (NPB MG's rows) lie three to an 8 KiB page, not two;
 *  - freed blocks come back zeroed, without disturbing the blocks kept.
 * Usage: test_malloc_size_classes
 */
#include "mp_util.h"

#define MAX_BLOCKS 4096

struct block {
    uint64_t addr, size, align, seed;
};

static size_t nsizes;
static size_t sizes[MAX_BLOCKS];

static void add_size(size_t s)
{
    if (nsizes < MAX_BLOCKS)
        sizes[nsizes++] = s;
}

/* Every size to 300 bytes, then a step that is no class's multiple, with
 * the sizes around each power of two and each class of a doubling. */
static void choose_sizes(size_t page)
{
    for (size_t s = 1; s <= 300; s++)
        add_size(s);
    size_t step = 61 * (page > 8192 ? page / 8192 : 1); /* a few hundred sizes */
    for (size_t s = 301; s <= 2 * page; s += step)
        add_size(s);
    for (size_t p2 = 256; p2 <= 2 * page; p2 *= 2)
        for (size_t q = 4; q <= 8; q++) {
            size_t c = p2 / 8 * q;
            add_size(c - 1);
            add_size(c);
            add_size(c + 1);
        }
}

static int by_addr(const void *a, const void *b)
{
    const struct block *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void check_no_overlap(struct block *all, size_t n)
{
    qsort(all, n, sizeof *all, by_addr);
    for (size_t i = 1; i < n; i++)
        MP_CHECK(all[i - 1].addr + all[i - 1].size <= all[i].addr,
                 "block %#llx (%llu bytes) overlaps block %#llx (%llu bytes)",
                 (unsigned long long)all[i - 1].addr, (unsigned long long)all[i - 1].size,
                 (unsigned long long)all[i].addr, (unsigned long long)all[i].size);
}

static void allocate(struct block *b, size_t size, size_t align, uint64_t seed)
{
    unsigned char *p = align ? dsm_heap_alloc(size, align) : dsm_malloc(size);
    MP_CHECK(p != NULL, "%zu bytes aligned to %zu: NULL", size, align);
    MP_CHECK(((uintptr_t)p & 15) == 0, "a %zu-byte block at %p is not 16-byte aligned", size,
             (void *)p);
    if (align)
        MP_CHECK(((uintptr_t)p & (align - 1)) == 0, "a %zu-byte block asked %zu-aligned is at %p",
                 size, align, (void *)p);
    for (size_t i = 0; i < size; i++)
        MP_CHECK(p[i] == 0, "a new %zu-byte block at %p: byte %zu is %#x, not 0", size, (void *)p,
                 i, p[i]);
    mp_fill(p, size, seed);
    *b = (struct block){(uint64_t)(uintptr_t)p, size, align, seed};
}

static void release(const struct block *b)
{
    if (b->align)
        dsm_heap_free((void *)(uintptr_t)b->addr);
    else
        dsm_free((void *)(uintptr_t)b->addr);
}

/* Blocks of `size` allocated one after another fill pages: no more pages
 * than a class at most a quarter larger than the size (rounded up to 16)
 * allows. A power-of-two class (2,064 -> 4,096) fails this for 2,064. */
static void check_density(size_t size, size_t page)
{
    size_t bound = (size + size / 4 + 15) & ~(size_t)15;
    size_t per = page / bound ? page / bound : 1;
    enum { PAGES = 6 };
    size_t n = PAGES * per, npages = 0;
    void **p = malloc(n * sizeof *p);
    uintptr_t *pages = malloc(n * sizeof *pages);
    MP_CHECK(p && pages, "out of memory");
    for (size_t i = 0; i < n; i++) {
        p[i] = dsm_malloc(size);
        uintptr_t pg = (uintptr_t)p[i] / page;
        size_t j = 0;
        while (j < npages && pages[j] != pg)
            j++;
        if (j == npages)
            pages[npages++] = pg;
    }
    /* One page more: the class's bin may hold a page's leftovers. */
    MP_CHECK(npages <= PAGES + 1, "%zu blocks of %zu bytes take %zu pages of %zu bytes; at most "
             "%d expected (%zu a page)", n, size, npages, page, PAGES + 1, per);
    for (size_t i = 0; i < n; i++)
        dsm_free(p[i]);
    free(p);
    free(pages);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), nodes = dsm_nodes();
    size_t page = dsm_page_size();

    /* First, before any other block: each class's first pages are fresh. */
    const size_t dense[] = {2064, 100, 600, 1100, 1500, 3000};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
        if (dense[i] <= page / 2)
            check_density(dense[i], page);

    choose_sizes(page);
    struct block **table = NULL;
    if (me == 0)
        table = dsm_malloc((size_t)nodes * sizeof *table);
    dsm_bcast(&table, sizeof table, 0);
    struct block *mine = dsm_malloc(nsizes * sizeof *mine);
    table[me] = mine;

    /* Alignments rotate over the sizes: 0 (dsm_malloc), 16 .. the page. */
    size_t aligns[16], naligns = 0;
    aligns[naligns++] = 0;
    for (size_t a = 16; a <= page; a *= 2)
        aligns[naligns++] = a;
    for (size_t i = 0; i < nsizes; i++)
        allocate(&mine[i], sizes[i], aligns[i % naligns], ((uint64_t)me << 32) | i);
    dsm_barrier();

    /* Every node's blocks, seen from every node: intact, no overlap. */
    size_t total = (size_t)nodes * nsizes;
    struct block *all = malloc(total * sizeof *all);
    MP_CHECK(all != NULL, "out of memory");
    for (int n = 0; n < nodes; n++)
        for (size_t i = 0; i < nsizes; i++) {
            struct block b = table[n][i];
            MP_CHECK(mp_verify((const unsigned char *)(uintptr_t)b.addr, b.size, b.seed),
                     "node %d's %llu-byte block %zu at %#llx is not what it wrote", n,
                     (unsigned long long)b.size, i, (unsigned long long)b.addr);
            all[(size_t)n * nsizes + i] = b;
        }
    check_no_overlap(all, total);
    dsm_barrier();

    /* Free every other block, allocate the same sizes again: zeroed, aligned,
     * no overlap with the blocks kept, which are untouched. */
    for (size_t i = 0; i < nsizes; i += 2)
        release(&mine[i]);
    for (size_t i = 0; i < nsizes; i += 2)
        allocate(&mine[i], sizes[i], aligns[(i / 2) % naligns], ((uint64_t)(me + 64) << 32) | i);
    dsm_barrier();
    for (int n = 0; n < nodes; n++)
        for (size_t i = 0; i < nsizes; i++) {
            struct block b = table[n][i];
            MP_CHECK(mp_verify((const unsigned char *)(uintptr_t)b.addr, b.size, b.seed),
                     "after reuse: node %d's %llu-byte block %zu at %#llx is not what it wrote", n,
                     (unsigned long long)b.size, i, (unsigned long long)b.addr);
            all[(size_t)n * nsizes + i] = b;
        }
    check_no_overlap(all, total);
    dsm_barrier();
    for (size_t i = 0; i < nsizes; i++)
        release(&mine[i]);
    free(all);
    if (me == 0)
        printf("size classes: %zu blocks a node on %d nodes aligned, dense, disjoint, reused\n",
               nsizes, nodes);
    dsm_finish();
    return 0;
}
