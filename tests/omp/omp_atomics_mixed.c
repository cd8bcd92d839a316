/*
 * omp_atomics_mixed.c — atomics on one 16-byte block from every node stay
 * exact and linearised when some run at the page's home and others on a
 * node's own copy of the page (issue 38; src/sync/atomic.c).
 *
 * Under hlrc an atomic whose block lock has just come from another node,
 * on a page not valid here, runs at the page's home (with the lock's
 * grant, or in a round trip after it); one whose lock was still here runs
 * on the local copy, fetching the page. So each thread works in bursts of
 * one to three atomics: the first of a burst takes the lock from another
 * node (the home path), the others find it here (the local copy); odd
 * threads also read the page just before, so that their copy is valid
 * until the grant's notices invalidate it. Every operation targets the
 * same block, in four sizes: a counter (8 bytes), tickets (4), a spin lock
 * (2) and a byte counter (1). Checked: the sums are exact, every ticket
 * was handed out once, and the spin lock (a compare-and-swap and a store,
 * each an acquire and a release in dsm terms) carries a plain counter on
 * another page from node to node. Prints "PASSED: 0 failed" when all
 * hold.
 */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 40
#define MAX_THREADS 64
#define MAX_TICKETS (MAX_THREADS * ROUNDS * 3)

struct block {
    long          count;
    int           tickets;
    short         spin;
    unsigned char bytes;
    unsigned char unused;
} __attribute__((aligned(16)));

/* The block and a word never written, on one page (64 KiB: the largest
 * coherence page); the plain counter the spin lock guards lies on
 * another. */
static struct {
    struct block b;
    long         anchor;
} shared __attribute__((aligned(65536)));
static long guarded __attribute__((aligned(65536)));
static long ticket_owner[MAX_TICKETS]; /* thread + 1; whole words: race-free */

static int burst(int me, int r) { return 1 + (me + r) % 3; }

int main(void)
{
    int n = omp_get_max_threads(), failed = 0;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
#pragma omp parallel num_threads(n)
    {
        int me = omp_get_thread_num();
        for (int r = 0; r < ROUNDS; r++) {
            if (me % 2) {
                volatile long seen = shared.anchor; /* the page comes here */
                (void)seen;
            }
            for (int k = 0; k < burst(me, r); k++) {
                int t = __atomic_fetch_add(&shared.b.tickets, 1, __ATOMIC_SEQ_CST);
                if (t >= 0 && t < MAX_TICKETS)
                    ticket_owner[t] = me + 1;
                __atomic_fetch_add(&shared.b.count, (long)me + 1, __ATOMIC_SEQ_CST);
                __atomic_fetch_add(&shared.b.bytes, 1, __ATOMIC_SEQ_CST);
            }
            short unlocked = 0;
            while (!__atomic_compare_exchange_n(&shared.b.spin, &unlocked, 1, 0, __ATOMIC_ACQUIRE,
                                                __ATOMIC_RELAXED))
                unlocked = 0;
            guarded++;
            __atomic_store_n(&shared.b.spin, 0, __ATOMIC_RELEASE);
        }
    }
    long tickets = 0, count = 0;
    for (int me = 0; me < n; me++)
        for (int r = 0; r < ROUNDS; r++) {
            tickets += burst(me, r);
            count += (long)burst(me, r) * (me + 1);
        }
    if (shared.b.tickets != tickets) {
        printf("FAILED: %d tickets handed out, expected %ld\n", shared.b.tickets, tickets);
        failed++;
    }
    for (long t = 0; t < tickets && t < MAX_TICKETS; t++)
        if (!ticket_owner[t]) {
            printf("FAILED: ticket %ld never handed out (another handed out twice)\n", t);
            failed++;
            break;
        }
    if (shared.b.count != count) {
        printf("FAILED: counter %ld, expected %ld\n", shared.b.count, count);
        failed++;
    }
    if (shared.b.bytes != (unsigned char)tickets) {
        printf("FAILED: byte counter %u, expected %u\n", shared.b.bytes, (unsigned char)tickets);
        failed++;
    }
    if (guarded != (long)n * ROUNDS) {
        printf("FAILED: the spin lock's plain counter %ld, expected %ld\n", guarded, (long)n * ROUNDS);
        failed++;
    }
    printf("threads %d\n", n);
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
