/*
 * How a node's process ends, as the launcher sees it (tools/dsmrun.c).
 *
 *   test_run_end return       the last node returns from main without
 *                             dsm_finish while the others wait in a barrier
 *   test_run_end exit         the same, by exit(0)
 *   test_run_end finish-exit  every node calls dsm_finish, then exit(0):
 *                             a normal end
 *   test_run_end leftover     every node starts `sleep 300` (holding the
 *                             node's stdout), then the last node fails
 *                             (exit 3); the sleeps must end with the job
 *
 * The first two must end the job at once with the launcher's line naming
 * the node, not with a peer's silence; the leftover case is watched by
 * tests/mp/leftover.sh through the stdout the sleeps hold.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "";
    int me = dsm_rank(), last = dsm_nodes() - 1;
    dsm_barrier();
    if (!strcmp(mode, "leftover")) {
        pid_t child = fork();
        MP_CHECK(child >= 0, "fork");
        if (child == 0) {
            execlp("sleep", "sleep", "300", (char *)NULL);
            _exit(127);
        }
        dsm_barrier(); /* every node has started its sleep */
        if (me == 0) {
            printf("sleeps started\n");
            fflush(stdout);
        }
        dsm_barrier(); /* node 0 has said so before the last node fails */
        if (me == last)
            exit(3);
        dsm_barrier(); /* never passes: the job ends */
        return 0;
    }
    if (!strcmp(mode, "finish-exit")) {
        dsm_finish();
        exit(0);
    }
    if (me == last) {
        if (!strcmp(mode, "exit"))
            exit(0);
        return 0; /* "return" */
    }
    dsm_barrier(); /* never passes: the last node has gone */
    dsm_finish();
    return 0;
}
