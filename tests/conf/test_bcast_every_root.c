/*
 * dsm_bcast from every node in turn, with no barrier between them: each
 * node, as root, writes its slice of a shared array and fills a buffer,
 * then broadcasts the buffer. Every other node must receive exactly the
 * root's bytes, and must then see the root's writes to the shared array
 * (a broadcast is a release at the root and an acquire at the receivers).
 * Sizes vary by round: 8 bytes, a few KiB, and more than a datagram holds,
 * so the broadcast's message is also fragmented. The broadcast runs down
 * the tree of DSM_BARRIER_FANOUT rooted at the root (renumbered so that the
 * root is its top), relayed by the nodes between; a relay that mixed up
 * roots, dropped or reordered messages, or delivered before the root's
 * writes, fails a check here.
 * Usage: test_bcast_every_root [rounds]
 */
#include "mp_util.h"

#define SLICE_WORDS 64

static const size_t sizes[] = {8, 3000, 150000};

static int64_t slice_value(int round, int root, int i)
{
    return (int64_t)round * 1000003 + root * 1009 + i;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    MP_CHECK(rounds >= 1 && rounds <= 100000, "rounds %d out of 1..100000", rounds);

    int64_t *shared = NULL;
    if (me == 0)
        shared = dsm_malloc((size_t)n * SLICE_WORDS * sizeof *shared);
    dsm_bcast(&shared, sizeof shared, 0);
    MP_CHECK(shared != NULL, "the shared array's address did not arrive");

    size_t max = sizes[sizeof sizes / sizeof sizes[0] - 1];
    unsigned char *buf = malloc(max);
    MP_CHECK(buf != NULL, "out of memory");
    for (int r = 0; r < rounds; r++) {
        size_t len = sizes[r % (sizeof sizes / sizeof sizes[0])];
        for (int root = 0; root < n; root++) {
            uint64_t seed = (uint64_t)r * 4099 + (uint64_t)root;
            if (me == root) {
                for (int i = 0; i < SLICE_WORDS; i++)
                    shared[root * SLICE_WORDS + i] = slice_value(r, root, i);
                mp_fill(buf, len, seed);
            } else {
                memset(buf, 0xa5, len);
            }
            dsm_bcast(buf, len, root);
            MP_CHECK(mp_verify(buf, len, seed), "round %d: the %zu bytes from root %d differ", r,
                     len, root);
            for (int i = 0; i < SLICE_WORDS; i++)
                MP_CHECK(shared[root * SLICE_WORDS + i] == slice_value(r, root, i),
                         "round %d: root %d's word %d is %lld after its broadcast, expected %lld", r,
                         root, i, (long long)shared[root * SLICE_WORDS + i],
                         (long long)slice_value(r, root, i));
        }
    }
    dsm_barrier();
    if (me == 0)
        printf("bcast_every_root: %d nodes, %d rounds from every root: ok\n", n, rounds);
    free(buf);
    dsm_finish();
    return 0;
}
