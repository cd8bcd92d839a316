/*
 * Conditions and broadcasts across nodes x threads (dsmrun --threads T):
 *  1. dsm_bcast with every thread as root in turn: the root thread's
 *     private buffer (1 B to 20 KiB) reaches every other thread's, and so
 *     do the root's writes to shared memory made before it;
 *  2. a bounded buffer under one lock and two conditions: even threads
 *     produce, odd threads consume, several waits of one node in progress
 *     at once; every item is consumed exactly once (sums by producer).
 * Usage: test_smp_cond_bcast [items per producer] [capacity]
 */
#include <string.h>

#include "smp_util.h"

#define MAX_THR   1024
#define BUF_MAX   20000
#define LOCK      3
#define NOT_FULL  10
#define NOT_EMPTY 11

struct queue {
    int64_t taken, count, head, tail;
    int64_t by_producer[MAX_THR]; /* sum of what consumers took, per producer */
    int64_t slot[];
};

static struct queue *q;
static int64_t *published;
static long items = 200, capacity = 3;

static void setup(void)
{
    q = dsm_malloc(sizeof *q + (size_t)capacity * sizeof(int64_t));
    published = dsm_malloc_home(MAX_THR * sizeof *published, DSM_HOME_CYCLIC);
}

static unsigned char pattern(int round, int root, size_t i) { return (unsigned char)(round * 31 + root * 7 + i); }

static void work(void *arg)
{
    (void)arg;
    int me = dsm_thread_id(), n = dsm_thread_count();
    SMP_CHECK(n <= MAX_THR && n >= 2, "2 to %d threads", MAX_THR);
    static __thread unsigned char buf[BUF_MAX];

    /* 1. Broadcasts. */
    for (int round = 0; round < n + 2; round++) {
        int root = round % n;
        size_t len = round == 0 ? 1 : (size_t)(round * 1777) % BUF_MAX;
        if (me == root) {
            for (size_t i = 0; i < len; i++)
                buf[i] = pattern(round, root, i);
            published[root] = round + 1;
        } else
            memset(buf, 0xee, len);
        dsm_bcast(buf, len, root);
        for (size_t i = 0; i < len; i++)
            SMP_CHECK(buf[i] == pattern(round, root, i), "round %d from %d: byte %zu is %u", round,
                      root, i, buf[i]);
        SMP_CHECK(published[root] == round + 1, "round %d: root %d's write not seen (%lld)",
                  round, root, (long long)published[root]);
    }
    dsm_barrier();

    /* 2. The bounded buffer. */
    int producers = (n + 1) / 2;
    int64_t total = (int64_t)producers * items;
    if (me % 2 == 0) {
        for (long k = 0; k < items; k++) {
            dsm_lock(LOCK);
            while (q->count == capacity)
                dsm_cond_wait(NOT_FULL, LOCK);
            q->slot[q->tail] = (int64_t)me * 1000000 + k;
            q->tail = (q->tail + 1) % capacity;
            q->count++;
            dsm_cond_signal(NOT_EMPTY);
            dsm_unlock(LOCK);
        }
    } else {
        for (;;) {
            dsm_lock(LOCK);
            while (q->count == 0 && q->taken < total)
                dsm_cond_wait(NOT_EMPTY, LOCK);
            if (q->taken == total) {
                dsm_unlock(LOCK);
                break;
            }
            int64_t v = q->slot[q->head];
            q->head = (q->head + 1) % capacity;
            q->count--;
            q->by_producer[v / 1000000] += v % 1000000 + 1;
            if (++q->taken == total)
                dsm_cond_broadcast(NOT_EMPTY); /* the other consumers end too */
            dsm_cond_signal(NOT_FULL);
            dsm_unlock(LOCK);
        }
    }
    dsm_barrier();
    SMP_CHECK(q->taken == total && q->count == 0, "taken %lld of %lld, %lld left",
              (long long)q->taken, (long long)total, (long long)q->count);
    for (int p = 0; p < n; p += 2)
        SMP_CHECK(q->by_producer[p] == (int64_t)items * (items + 1) / 2,
                  "producer %d's items sum to %lld", p, (long long)q->by_producer[p]);
    dsm_barrier();
    if (me == 0)
        printf("%d threads on %d nodes: broadcasts and conditions ok\n", n, dsm_nodes());
}

int main(int argc, char **argv)
{
    if (argc > 1)
        items = atol(argv[1]);
    if (argc > 2)
        capacity = atol(argv[2]);
    return smp_run(&argc, &argv, setup, work);
}
