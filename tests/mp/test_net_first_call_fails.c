/*
 * Node 0 ends the job at its first collective (dsm_bcast with a root no
 * node has); every other node calls it rightly. Node 0 fails at once,
 * while the others may still be connecting to it: over UCX a node then
 * found node 0's shared memory gone, printed UCX's raw log lines and
 * "cannot reach node 0", and so named itself as the job's end. The job
 * must end with node 0's line alone, over every transport.
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int x = 0;
    dsm_bcast(&x, sizeof x, dsm_rank() == 0 ? dsm_nodes() + 97 : 0);
    fprintf(stderr, "node %d: dsm_bcast returned, expected the job to end\n", dsm_rank());
    return 3;
}
