/*
 * Lock and condition ids above 0x5fffffff are dsm's own (its OpenMP
 * runtime's, include/dsm.h): a program that names one ends the job with
 * one line naming the call and the id, never takes a lock the runtime
 * relies on. Node 1 makes the call the mode names; node 0 waits in a
 * barrier that never completes, and is stopped once node 1 has ended.
 * The highest program id, 0x5fffffff, works as any other.
 * Usage: test_reserved_ids lock|unlock|negative|cond_wait_cond|cond_wait_lock|
 *                           cond_signal|cond_broadcast|highest
 */
#include <limits.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    MP_CHECK(argc > 1, "usage: test_reserved_ids MODE");
    const char *mode = argv[1];
    int *counter = NULL;
    if (dsm_rank() == 0)
        counter = dsm_malloc(sizeof *counter);
    dsm_bcast(&counter, sizeof counter, 0);
    if (!strcmp(mode, "highest")) {
        /* Every node, under the highest id a program may use. */
        for (int i = 0; i < 20; i++) {
            dsm_lock(0x5fffffff);
            (*counter)++;
            dsm_unlock(0x5fffffff);
        }
        dsm_barrier();
        MP_CHECK(*counter == 20 * dsm_nodes(), "counter %d", *counter);
        if (dsm_rank() == 0)
            printf("highest id: ok\n");
        dsm_finish();
        return 0;
    }
    if (dsm_rank() == 1) {
        if (!strcmp(mode, "lock"))
            dsm_lock(INT_MAX);
        else if (!strcmp(mode, "unlock"))
            dsm_unlock(0x60000000);
        else if (!strcmp(mode, "negative"))
            dsm_lock(-1);
        else if (!strcmp(mode, "cond_wait_cond")) {
            dsm_lock(1);
            dsm_cond_wait(0x60000000, 1);
        } else if (!strcmp(mode, "cond_wait_lock"))
            dsm_cond_wait(1, 0x7ffffff0);
        else if (!strcmp(mode, "cond_signal"))
            dsm_cond_signal(INT_MAX);
        else if (!strcmp(mode, "cond_broadcast"))
            dsm_cond_broadcast(0x60000000);
        else
            MP_CHECK(0, "unknown mode %s", mode);
        fprintf(stderr, "node 1: %s with a reserved id returned\n", mode);
        return 3;
    }
    dsm_barrier();
    return 3;
}
