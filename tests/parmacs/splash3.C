/*
 * splash3.C — the idioms SPLASH-3's programs use that SPLASH-2's do not,
 * each checked for its effect, so that one source builds and runs with both
 * shipped macro files (dsm/parmacs.m4, dsm/parmacs-threads.m4). The macro
 * names stay out of these comments: m4 would expand them here too.
 *
 *   splash3 [-pP] [-rR]    P processes, R rounds
 *
 *  - the region-of-interest markers around the parallel part;
 *  - an array of locks in shared memory, declared in a struct, each used
 *    by index, its element named as a lock (Barnes) and as the lock of a
 *    condition wait through the lock-getting macro (FMM);
 *  - the release and acquire fences (Barnes);
 *  - the page size from the main environment (LU), to pad slots;
 *  - a shared allocation with no semicolon after it (LU, Cholesky: SPLASH-3's
 *    macro files end it with one), beside one followed by a semicolon
 *    (SPLASH-2's programs);
 *  - m4's include of an expanded header (Radiosity);
 *  - locks taken with no semicolon; a create of all P processes at once,
 *    the caller one of them, and the wait for the P - 1 others.
 *
 * Every process takes an id under a lock, adds id+1 to every bucket for R
 * rounds under the bucket's own lock, meets the others through a
 * condition variable whose lock is one of the array's, and writes its
 * padded slot; the master checks every bucket sum, every slot and every
 * meeting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

MAIN_ENV
include(splash3.h)

struct Global *G;
long *slots;               /* one PAGE_SIZE-padded slot per process */
long P = 2;
long R = 50;

void Work(void)
{
    long id;
    LOCK(G->idlock)
    id = G->nextid++;
    UNLOCK(G->idlock)

    for (long r = 0; r < R; r++)
        for (int b = 0; b < BUCKETS; b++) {
            ALOCK(G->bucketlock, b)
            G->bucket[b] += id + 1;
            AULOCK(G->bucketlock, b)
        }

    /* A meeting through a condition variable whose lock is an array lock. */
    ALOCK(G->bucketlock, 0)
    G->arrived++;
    if (G->arrived == P)
        CONDVARBCAST(G->arrived_cv)
    while (G->arrived < P)
        CONDVARWAIT(G->arrived_cv, AGETL(G->bucketlock, 0))
    G->seen_all[id] = G->arrived;
    AULOCK(G->bucketlock, 0)

    /* A slot of its own, published the SPLASH-3 way: a fence, then a lock
     * (the lock orders it for the other nodes, the fence for this one). */
    slots[id * (PAGE_SIZE / sizeof(long))] = 1000 + id;
    RELEASE_FENCE();
    LOCK(G->bucketlock[BUCKETS - 1])     /* the array's element named directly */
    UNLOCK(G->bucketlock[BUCKETS - 1])
    ACQUIRE_FENCE();

    BARRIER(G->bar, P)
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "p:r:")) != -1) {
        if (c == 'p')
            P = atol(optarg);
        else if (c == 'r')
            R = atol(optarg);
        else {
            fprintf(stderr, "usage: splash3 [-pP] [-rR]\n");
            exit(2);
        }
    }
    if (P < 1 || P > MAXP || R < 1) {
        fprintf(stderr, "splash3: 1 <= P <= %d and R >= 1\n", MAXP);
        exit(2);
    }
    MAIN_INITENV(,8000000)
    G = (struct Global *)G_MALLOC(sizeof(struct Global));       /* SPLASH-2 style */
    long *raw = (long *) G_MALLOC((P + 1) * PAGE_SIZE)          /* SPLASH-3 style: no ; */
    slots = (long *)(((unsigned long)raw) + PAGE_SIZE - ((unsigned long)raw) % PAGE_SIZE);
    LOCKINIT(G->idlock);
    ALOCKINIT(G->bucketlock, BUCKETS)
    CONDVARINIT(G->arrived_cv);
    BARINIT(G->bar, P);

    SPLASH3_ROI_BEGIN();
    CREATE(Work, P)
    WAIT_FOR_END(P - 1)
    SPLASH3_ROI_END();

    long want = R * P * (P + 1) / 2;
    int ok = 1;
    for (int b = 0; b < BUCKETS; b++)
        if (G->bucket[b] != want) {
            printf("bucket %d: %ld, expected %ld\n", b, G->bucket[b], want);
            ok = 0;
        }
    for (long i = 0; i < P; i++) {
        if (slots[i * (PAGE_SIZE / sizeof(long))] != 1000 + i) {
            printf("slot %ld: %ld, expected %ld\n", i, slots[i * (PAGE_SIZE / sizeof(long))], 1000 + i);
            ok = 0;
        }
        if (G->seen_all[i] != P) {
            printf("process %ld left the meeting having seen %ld of %ld\n", i, G->seen_all[i], P);
            ok = 0;
        }
    }
    printf("splash3 idioms: %ld processes, %ld rounds: %s\n", P, R, ok ? "ok" : "FAILED");
    MAIN_END
}
