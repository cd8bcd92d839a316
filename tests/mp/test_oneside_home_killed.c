/*
 * A home killed while the others read its page one-sided: the job ends,
 * naming it, and nobody hangs on its memory (coherence/oneside.c; the
 * launcher sees the death, and a node that stays blocked on the dead home
 * finds it silent). The test passes on the launcher's line; ctest's
 * timeout bounds the rest.
 *
 * One page homed at node 0; every node in turn adds one to each of its
 * words under a lock, so every other node's fault on it reads it from the
 * home (one-sided over UCX) while the home applies diffs. Node 0 kills
 * itself after `rounds` rounds; the others go on until the job ends.
 * Usage: test_oneside_home_killed [rounds]
 */
#include <signal.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    size_t ps = dsm_page_size(), words = ps / sizeof(uint64_t);
    uint64_t *page = NULL;
    if (me == 0) {
        page = dsm_malloc_home(ps, DSM_HOME_LOCAL);
        MP_CHECK(page != NULL, "dsm_malloc_home");
    }
    dsm_bcast(&page, sizeof page, 0);
    dsm_barrier();
    for (int r = 0;; r++) {
        if (me == 0 && r == rounds)
            raise(SIGKILL);
        dsm_lock(1);
        volatile uint64_t *w = page;
        uint64_t v = w[0];
        for (size_t i = 0; i < words; i++) {
            MP_CHECK(w[i] == v, "word %zu holds %llu, word 0 %llu", i, (unsigned long long)w[i],
                     (unsigned long long)v);
            w[i] = v + 1;
        }
        dsm_unlock(1);
    }
}
