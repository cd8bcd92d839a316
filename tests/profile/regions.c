/*
 * regions.c — fork style's regions (an OpenMP program's parallel regions:
 * dsm_create and dsm_wait_for_end) for the profile's tests
 * (tests/profile/check_profile.py --regions).
 *
 *   regions [rounds]
 *
 * Each round is one region, run by every node. In round r, node r % N
 * writes the whole of one array (the same bytes each round, one writer a
 * region: no sharing within any interval, the page passed from region to
 * region), and every node writes its own 64-byte blocks of another array
 * (false sharing within the region). No barrier is passed: only the regions'
 * starts and ends separate the writers of the first array. Every value
 * written differs from the one before it. The master checks both arrays
 * after the last region; exits 0 when every write arrived.
 */
#include <dsm.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 64
#define PAGES 2

static struct { unsigned char *passed, *blocks; int round; size_t bytes; } *sh;

static void region(void *arg)
{
    (void)arg;
    int me = dsm_rank(), n = dsm_nodes(), r = sh->round;
    if (me == r % n)
        for (size_t i = 0; i < sh->bytes; i++)
            sh->passed[i] = (unsigned char)(r + 1);            /* PASSED-ON WRITE */
    for (size_t b = (size_t)me; b < sh->bytes / BLOCK; b += (size_t)n)
        for (int i = 0; i < BLOCK; i++)
            sh->blocks[b * BLOCK + i] = (unsigned char)(r + me + 1);
}

int main(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 8, n = dsm_nodes();
    sh = dsm_malloc(sizeof *sh);
    sh->bytes = PAGES * dsm_page_size();
    sh->passed = dsm_malloc(sh->bytes);                        /* PASSED-ON ALLOC */
    sh->blocks = dsm_malloc(sh->bytes);                        /* IN-REGION ALLOC */
    for (int r = 0; r < rounds; r++) {
        sh->round = r;
        dsm_create(region, NULL);
        region(NULL);
        dsm_wait_for_end();
    }
    long bad = 0;
    for (size_t i = 0; i < sh->bytes; i++)
        bad += sh->passed[i] != (unsigned char)rounds;
    for (size_t b = 0; b < sh->bytes / BLOCK; b++)
        bad += sh->blocks[b * BLOCK] != (unsigned char)(rounds - 1 + (int)(b % (size_t)n) + 1);
    if (bad)
        fprintf(stderr, "%ld wrong values\n", bad);
    dsm_finish();
    return bad != 0;
}
