/*
 * alternating.c — a buffer that one node fills and the others read after a
 * barrier, for the profile's true sharing (tests/profile/check_alternating.py).
 *
 *   alternating WRITER
 *
 * Every other step the writer (node WRITER, or with -1 a different node
 * every two steps) writes every int of a 4-page buffer, a value that
 * differs from the one before it; after the barrier every other node reads
 * them all. Each read miss on the buffer is true sharing: the node reads
 * ints another node wrote. Each int keeps its low byte (i's, from the
 * first write on): a diff carries only the bytes that changed, so a miss
 * told by the faulting instruction's first byte alone looked false. Node 0 allocates the buffer and is its home, so WRITER
 * 0 writes at the home and WRITER 1 elsewhere. Prints the readers' sum.
 */
#include <dsm.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), nodes = dsm_nodes();
    int writer = argc > 1 ? atoi(argv[1]) : 0;
    size_t n = 4 * dsm_page_size() / sizeof(int);
    int *buf = NULL;
    if (me == 0)
        buf = dsm_malloc(n * sizeof *buf);
    dsm_bcast(&buf, sizeof buf, 0);
    long sum = 0;
    for (int step = 0; step < 20; step++) {
        int w = writer < 0 ? step / 2 % nodes : writer;
        if (me == w && step % 2 == 0)
            for (size_t i = 0; i < n; i++)
                buf[i] = (step + 1) << 8 | (int)(i & 0xff);
        dsm_barrier();
        if (me != w)
            for (size_t i = 0; i < n; i++)
                sum += buf[i];
        dsm_barrier();
    }
    printf("alternating: node %d read sum %ld\n", me, sum);
    dsm_finish();
    return 0;
}
