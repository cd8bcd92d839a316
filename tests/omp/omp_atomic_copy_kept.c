/*
 * omp_atomic_copy_kept.c — an atomic done at its page's home leaves a
 * current copy of the page here right (issue 38; src/coherence/hlrc.c,
 * wrote_at_home).
 *
 * Under hlrc an atomic whose block lock comes from another node, on a page
 * this node has not written, is performed by the page's home; a copy here
 * that was current replays it and stays valid. So the nodes take turns:
 * in its round a node reads the page (fetching it), adds to a word of
 * that round (a fresh block: its lock comes from the home), reads the
 * word back plainly, and reads every earlier round's word. A copy kept
 * without the operation, or with a wrong one, reads a stale value. Run
 * under every protocol (the others keep the lock path). Prints "PASSED:
 * 0 failed" when every read is right.
 */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 64

/* One page (64 KiB: the largest coherence page), homed on the master. */
static struct {
    long anchor;
    long word[2 * ROUNDS]; /* one in two: a 16-byte block each */
} page __attribute__((aligned(65536)));
static int wrong;

int main(void)
{
    int n = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
#pragma omp single
        n = omp_get_num_threads();
        for (int r = 0; r < ROUNDS; r++) {
#pragma omp barrier
            if (r % n != me)
                continue;
            volatile long seen = page.anchor; /* the page comes here */
            (void)seen;
            long *w = &page.word[2 * r];
            long old = __atomic_fetch_add(w, r + 1, __ATOMIC_SEQ_CST);
            long now = *w;
            if (old != 0 || now != r + 1) {
                printf("FAILED: thread %d found %ld and read back %ld in round %d, expected 0 and %d\n",
                       me, old, now, r, r + 1);
                wrong++;
            }
            for (int k = 0; k < r; k++)
                if (page.word[2 * k] != k + 1) {
                    printf("FAILED: thread %d read %ld in round %d's word in round %d, expected %d\n",
                           me, page.word[2 * k], k, r, k + 1);
                    wrong++;
                    break;
                }
        }
    }
    for (int r = 0; r < ROUNDS; r++)
        if (page.word[2 * r] != r + 1) {
            printf("FAILED: round %d's word is %ld at the end, expected %d\n", r, page.word[2 * r], r + 1);
            wrong++;
            break;
        }
    printf("threads %d\n", n);
    printf("PASSED: %d failed\n", wrong);
    return wrong != 0;
}
