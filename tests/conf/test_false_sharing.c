/*
 * Several writers to one page (multiple-writer protocol): in each round,
 * word w of every page is written by exactly one node — node (w + r) mod N
 * in round r, so the words interleave across the nodes and each word
 * changes writer from round to round. After a barrier every node must see
 * every node's writes merged, none lost to another writer's diff or to a
 * stale twin. Done for int64 and int32 words, on blocks whose pages are
 * homed at node 0 (dsm_malloc there), cyclically over the nodes
 * (DSM_HOME_CYCLIC), in blocks over the nodes allocated by the last node
 * (DSM_HOME_BLOCK), and at whichever node touches them first.
 * Usage: test_false_sharing [rounds] [pages]
 */
#include "mp_util.h"

#define VARIANTS 4
static const char *const variant_name[VARIANTS] = {"node 0", "cyclic", "block", "first touch"};

static int writer(int round, size_t word, int n)
{
    return (int)((word + (size_t)round) % (size_t)n);
}

static int64_t value64(int round, size_t word, int node)
{
    return (int64_t)(round + 1) * 1000000007LL + (int64_t)word * 31 + node;
}

static int32_t value32(int round, size_t word, int node)
{
    return (int32_t)((round + 1) * 100003 + (int32_t)word * 17 + node * 3);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    size_t pages = argc > 2 ? (size_t)atol(argv[2]) : 4;
    size_t page = dsm_page_size(), pw64 = page / sizeof(int64_t), pw32 = page / sizeof(int32_t);
    size_t bytes = pages * page, w64 = bytes / sizeof(int64_t), w32 = bytes / sizeof(int32_t);

    /* Each variant: an int64 block and an int32 block of `pages` pages. */
    struct { int64_t *a; int32_t *b; } v[VARIANTS] = {{0}};
    if (me == 0) {
        v[0].a = dsm_malloc(bytes);
        v[0].b = dsm_malloc(bytes);
        v[1].a = dsm_malloc_home(bytes, DSM_HOME_CYCLIC);
        v[1].b = dsm_malloc_home(bytes, DSM_HOME_CYCLIC);
    }
    if (me == n - 1) {
        v[2].a = dsm_malloc_home(bytes, DSM_HOME_BLOCK);
        v[2].b = dsm_malloc_home(bytes, DSM_HOME_BLOCK);
    }
    if (me == n / 2) {
        v[3].a = dsm_malloc_home(bytes, DSM_HOME_FIRST_TOUCH);
        v[3].b = dsm_malloc_home(bytes, DSM_HOME_FIRST_TOUCH);
    }
    dsm_bcast(&v[0], sizeof v[0], 0);
    dsm_bcast(&v[1], sizeof v[1], 0);
    dsm_bcast(&v[2], sizeof v[2], n - 1);
    dsm_bcast(&v[3], sizeof v[3], n / 2);

    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < VARIANTS; k++) {
            /* Start on a different page each time, so that first touches
             * (and the first twins) come from different nodes. */
            for (size_t i = 0; i < w64; i++) {
                size_t w = (i + (size_t)me * pw64 + (size_t)r * 97) % w64;
                if (writer(r, w, n) == me)
                    v[k].a[w] = value64(r, w, me);
            }
            for (size_t i = 0; i < w32; i++) {
                size_t w = (i + (size_t)me * pw32) % w32;
                if (writer(r, w, n) == me)
                    v[k].b[w] = value32(r, w, me);
            }
        }
        dsm_barrier();
        for (int k = 0; k < VARIANTS; k++) {
            for (size_t w = 0; w < w64; w++)
                MP_CHECK(v[k].a[w] == value64(r, w, writer(r, w, n)),
                         "round %d, %s, int64 word %zu (page %zu) = %lld, expected %lld from node %d",
                         r, variant_name[k], w, w / pw64, (long long)v[k].a[w],
                         (long long)value64(r, w, writer(r, w, n)), writer(r, w, n));
            for (size_t w = 0; w < w32; w++)
                MP_CHECK(v[k].b[w] == value32(r, w, writer(r, w, n)),
                         "round %d, %s, int32 word %zu (page %zu) = %d, expected %d from node %d",
                         r, variant_name[k], w, w / pw32, v[k].b[w],
                         value32(r, w, writer(r, w, n)), writer(r, w, n));
        }
        dsm_barrier(); /* nobody writes round r+1 while others still check r */
    }
    if (me == 0)
        printf("false_sharing: %d nodes, %d rounds, %zu pages x %d homes x 2 word sizes: ok\n", n,
               rounds, pages, VARIANTS);
    dsm_finish();
    return 0;
}
