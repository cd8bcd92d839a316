/*
 * A node's own bytes survive other nodes' diffs of the same words applied
 * while it writes (issue 54): byte j of every 32-bit word of a shared array
 * belongs to node j mod N. In each round every node writes a new value into
 * all its bytes, reads them back at once (its own writes, no synchronisation
 * needed), and flushes (dsm_flush: its diffs go out, and the others' come
 * in), with no barrier between rounds — so the home of the pages (node 0,
 * which allocates them) keeps writing its bytes while it applies the
 * others' diffs of the same words, and a member keeps writing while updates
 * arrive. Race-free: no byte has two writers, and no node reads another's
 * bytes before the final barrier, after which every node checks every byte.
 * A diff applied by reading and writing back whole words (or 16 bytes at a
 * time) around the bytes it names would put back a value the home's own
 * write had just replaced: the reading back in the round sees it.
 * Usage: test_own_bytes_under_diffs [rounds] [pages]
 */
#include "mp_util.h"

static unsigned char value(int round, size_t byte) { return (unsigned char)(round * 0x3b + byte * 7 + 1); }

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    size_t pages = argc > 2 ? (size_t)atol(argv[2]) : 4;
    size_t bytes = pages * dsm_page_size();
    MP_CHECK(rounds >= 1 && pages >= 1, "rounds %d, pages %zu", rounds, pages);

    unsigned char *a = NULL;
    if (me == 0)
        a = dsm_malloc(bytes); /* homed at node 0 */
    dsm_bcast(&a, sizeof a, 0);
    /* Byte b belongs to node (b mod 4) mod N: on 2 nodes bytes 0 and 2 of
     * every word are node 0's, 1 and 3 node 1's; above 4 nodes the others
     * have none. */
    dsm_barrier();
    size_t reverted = 0;
    int first_round = -1;
    size_t first_byte = 0;
    unsigned char first_got = 0, first_want = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t b = 0; b < bytes; b++)
            if ((int)(b % 4) % n == me)
                ((volatile unsigned char *)a)[b] = value(r, b);
        for (size_t b = 0; b < bytes; b++)
            if ((int)(b % 4) % n == me) {
                unsigned char got = ((volatile unsigned char *)a)[b];
                if (got != value(r, b)) {
                    if (reverted++ == 0) {
                        first_round = r;
                        first_byte = b;
                        first_got = got;
                        first_want = value(r, b);
                    }
                }
            }
        dsm_flush();
    }
    MP_CHECK(reverted == 0,
             "%zu of this node's own bytes read back as another value just after it wrote them "
             "(first: round %d, byte %zu of the array, page %zu: 0x%02x, written 0x%02x, the round "
             "before's 0x%02x)", reverted, first_round, first_byte, first_byte / dsm_page_size(),
             first_got, first_want, first_round > 0 ? value(first_round - 1, first_byte) : 0);
    dsm_barrier();
    size_t wrong = 0;
    for (size_t b = 0; b < bytes; b++) {
        int owner = (int)(b % 4) % n;
        unsigned char want = value(rounds - 1, b);
        if (a[b] != want && wrong++ == 0)
            fprintf(stderr, "node %d: byte %zu (node %d's) is 0x%02x after the barrier, expected 0x%02x\n",
                    me, b, owner, a[b], want);
    }
    MP_CHECK(wrong == 0, "%zu of %zu bytes wrong after the final barrier", wrong, bytes);
    if (me == 0)
        printf("own_bytes_under_diffs: %d nodes, %d rounds, %zu pages: every byte survives\n", n,
               rounds, pages);
    dsm_finish();
    return 0;
}
