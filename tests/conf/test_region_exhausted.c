/*
 * Exhausting the shared region ends the job with a clear message (run with
 * a small region, DSM_REGION_SIZE=64M). Every node allocates 1 MiB blocks
 * — and a small block between them — until its arena runs out, writing into
 * each block so that the memory is really used. The test passes on the
 * message (PASS_REGEX "shared region exhausted"); an allocator that keeps
 * returning memory beyond the region size ends the program with a failure.
 * Usage: test_region_exhausted [region_mib]
 */
#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    long region_mib = argc > 1 ? atol(argv[1]) : 64;
    dsm_barrier();
    /* The region is split between the nodes; more than the whole region per
     * node cannot be served. */
    long limit = region_mib + 2;
    char *prev = NULL;
    for (long i = 0; i < limit; i++) {
        char *p = dsm_malloc(1u << 20);
        MP_CHECK(p != NULL, "dsm_malloc returned NULL instead of ending the job");
        MP_CHECK(p != prev, "the same block twice");
        p[0] = (char)me;
        p[(1u << 20) - 1] = (char)i;
        char *q = dsm_malloc(100);
        q[0] = 1;
        prev = p;
    }
    fprintf(stderr, "node %d: allocated %ld MiB from a %ld MiB region without running out\n", me,
            limit, region_mib);
    return 3;
}
