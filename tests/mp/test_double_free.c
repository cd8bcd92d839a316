/*
 * dsm_free of a block twice ends the job with one line naming the block.
 *
 *   test_double_free local    the last node frees a 64-byte block twice
 *   test_double_free remote   the last node frees node 0's 64-byte block
 *                             twice; node 0, its owner, finds it when the
 *                             frees reach it (at the next barrier)
 *   test_double_free large    the last node frees a page-sized block twice
 *   test_double_free after    the last node writes byte 3 of a 64-byte
 *                             block after freeing it, then frees 300
 *                             others (DSM_CHECK=1: found when the block
 *                             leaves the quarantine)
 *   test_double_free after-finish  the same write, then dsm_finish (found
 *                             there)
 *   test_double_free reuse    no misuse: freed small blocks are reused, two
 *                             live blocks are never the same (must pass)
 *
 * The misuse modes print the block's address first ("block 0x..."), so the
 * test can check that the error names it.
 */
#include <string.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "";
    int me = dsm_rank(), last = dsm_nodes() - 1;
    if (!strcmp(mode, "reuse")) {
        for (int round = 0; round < 100; round++) {
            char *a = dsm_malloc(64), *b = dsm_malloc(64);
            MP_CHECK(a && b && a != b, "two live blocks are distinct");
            dsm_free(a);
            char *c = dsm_malloc(64);
            MP_CHECK(c == a, "a freed block is reused first");
            dsm_free(b);
            dsm_free(c);
        }
        dsm_barrier();
        if (me == 0)
            printf("reuse: ok\n");
        dsm_finish();
        return 0;
    }
    if (!strncmp(mode, "after", 5)) {
        if (me == last) {
            char *p = dsm_malloc(64);
            printf("block %p\n", (void *)p);
            fflush(stdout);
            dsm_free(p);
            p[3] = 1; /* the program's bug */
            if (!strcmp(mode, "after"))
                for (int i = 0; i < 300; i++)
                    dsm_free(dsm_malloc(48));
        }
        dsm_barrier();
        if (me == 0)
            printf("after: not found\n");
        dsm_finish();
        return 0;
    }
    char *owned = me == 0 ? dsm_malloc(64) : NULL; /* node 0's block, for "remote" */
    dsm_bcast(&owned, sizeof owned, 0);
    if (me == last) {
        char *p = !strcmp(mode, "remote") ? owned
                  : dsm_malloc(!strcmp(mode, "large") ? 3 * dsm_page_size() : 64);
        printf("block %p\n", (void *)p);
        fflush(stdout);
        dsm_free(p);
        dsm_free(p);
    }
    dsm_barrier(); /* the owner of a remote block frees it here */
    dsm_barrier();
    dsm_finish();
    return 0;
}
