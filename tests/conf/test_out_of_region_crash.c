/*
 * A bad access is a real crash, reported with its address, not something
 * the protocol tries to serve:
 *   outside      node 1 writes to address 0x10 — outside the shared region;
 *   unallocated  node 1 reads an address inside the shared region but far
 *                beyond any allocation (in node 0's arena, 256 MiB past the
 *                block node 0 allocated).
 * The other nodes wait in a barrier that never completes; the launcher
 * stops them once node 1 has died. The test passes on the crash message
 * (PASS_REGEX); reaching the end of the program is a failure.
 * Usage: test_out_of_region_crash outside|unallocated
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    MP_CHECK(argc > 1, "usage: test_out_of_region_crash outside|unallocated");
    MP_CHECK(dsm_nodes() >= 2, "needs 2 nodes");
    const char *mode = argv[1];

    char *block = NULL;
    if (me == 0) {
        block = dsm_malloc(4096);
        block[0] = 1;
    }
    dsm_bcast(&block, sizeof block, 0);
    dsm_barrier();

    if (me == 1) {
        MP_CHECK(block[0] == 1, "the allocated block is readable");
        if (strcmp(mode, "outside") == 0) {
            /* Through a volatile, so the compiler neither sees nor
             * removes the wild store. */
            volatile uintptr_t where = 0x10;
            volatile int *bad = (volatile int *)where;
            fprintf(stderr, "node 1: writing to %p (outside the shared region)\n", (void *)bad);
            *bad = 42;
        } else if (strcmp(mode, "unallocated") == 0) {
            volatile char *bad = block + (256u << 20);
            fprintf(stderr, "node 1: reading %p (inside the shared region, not allocated)\n",
                    (void *)bad);
            char c = *bad;
            fprintf(stderr, "node 1: read %d\n", c);
        } else {
            MP_CHECK(0, "unknown mode %s", mode);
        }
        fprintf(stderr, "node 1: the bad access did not crash\n");
        exit(3);
    }
    dsm_barrier(); /* never completes: node 1 is gone */
    fprintf(stderr, "node %d: passed a barrier that node 1 never reached\n", me);
    return 3;
}
