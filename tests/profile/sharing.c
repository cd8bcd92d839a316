/*
 * sharing.c — a program whose sharing is known, for the profile's tests
 * (tests/profile/check_profile.py, docs/profile.md).
 *
 *   sharing [rounds]
 *
 * Each round, every node writes its own 64-byte blocks of one array, the
 * blocks of the nodes alternating (false sharing: disjoint bytes of every
 * page), adds one to a counter under lock 1 (true sharing: the same bytes),
 * and passes a barrier; then one node, a different one each round, fills
 * a buffer that the others read after the next barrier (a producer and its
 * consumers: true sharing by reads). Every value written differs from the
 * one before it (a diff carries the bytes that changed: a zero written
 * over a zero is no write to the profile either). Each node reads back only its own
 * blocks until the end, so that the array's misses are false ones. The comments in capitals mark the
 * lines the test expects the report to name. Ends 0 when every write
 * arrived.
 */
#include <dsm.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 64
#define PAGES 4
#define RING_INTS 4096

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    size_t bytes = PAGES * dsm_page_size();
    struct shared { unsigned char *blocks; long *counter; int *ring; } s = {0};
    if (me == 0) {
        /* The buffer first: hlrc fetches the invalid pages that follow a
         * page written or read (write-ahead, read-ahead), so a buffer
         * placed after the others could reach its consumers through
         * another line's fault and their reading line never fault (seen
         * when a lock's release made aside carried the producer's writes). */
        s.ring = dsm_malloc(RING_INTS * sizeof *s.ring);   /* PRODUCER-CONSUMER ALLOC */
        s.blocks = dsm_malloc(bytes);                      /* FALSE-SHARING ALLOC */
        s.counter = dsm_malloc(sizeof *s.counter);         /* TRUE-SHARING ALLOC */
    }
    dsm_bcast(&s, sizeof s, 0);
    long bad = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t b = (size_t)me; b < bytes / BLOCK; b += (size_t)n)
            for (int i = 0; i < BLOCK; i++)
                s.blocks[b * BLOCK + i] = (unsigned char)(r + me + 1); /* FALSE-SHARING WRITE */
        dsm_lock(1);                                       /* LOCK SITE */
        *s.counter += 1;                                   /* TRUE-SHARING WRITE */
        dsm_unlock(1);
        int producer = r % n;
        if (me == producer)
            for (int i = 0; i < RING_INTS; i++)
                s.ring[i] = r * 100000 + i + 1;            /* PRODUCER WRITE */
        dsm_barrier();                                     /* BARRIER SITE */
        if (me != producer)
            for (int i = 0; i < RING_INTS; i++)
                bad += s.ring[i] != r * 100000 + i + 1;    /* CONSUMER READ */
        for (size_t b = (size_t)me; b < bytes / BLOCK; b += (size_t)n)
            bad += s.blocks[b * BLOCK] != (unsigned char)(r + me + 1);
        dsm_barrier();                                     /* SECOND BARRIER */
    }
    /* every node's blocks, once: the writes of the last round all arrived */
    for (size_t b = 0; b < bytes / BLOCK; b++)
        bad += s.blocks[b * BLOCK] != (unsigned char)(rounds - 1 + (int)(b % (size_t)n) + 1);
    if (me == 0 && *s.counter != (long)rounds * n)
        bad++, fprintf(stderr, "counter %ld, expected %ld\n", *s.counter, (long)rounds * n);
    if (bad)
        fprintf(stderr, "node %d: %ld wrong values\n", me, bad);
    dsm_finish();
    return bad != 0;
}
