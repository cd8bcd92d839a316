/*
 * Condition variables: a bounded buffer in shared memory under one lock.
 *  1. node 0 produces the items 1..K, waiting on "not full" when the buffer
 *     is full; the other nodes consume, waiting on "not empty" when it is
 *     empty. Every item is consumed exactly once: the counts, the sums and a
 *     per-item tally (kept under the lock) are exact. At the end the
 *     producer waits — on a third condition, signalled by each consumer
 *     that goes to wait — until the buffer is empty and every consumer has
 *     gone to wait, then sets `done` and releases them with one
 *     dsm_cond_broadcast.
 *  2. a broadcast must wake every waiter: each consumer registers and waits
 *     on a condition that nothing signals; once all of them are registered
 *     (the master knows under the lock) the master broadcasts once. A
 *     broadcast that missed one would leave it waiting: the job would hang.
 * No waiting is by time: every wait is a dsm_cond_wait on a predicate.
 * Usage: test_cond_producer_consumer [items] [capacity]
 */
#include "mp_util.h"

#define LOCK       7
#define NOT_EMPTY  1
#define NOT_FULL   2
#define IDLE       3   /* a consumer went to wait on NOT_EMPTY */
#define GO         4
#define REGISTERED 5   /* a consumer waits on GO */
#define MAX_CAP    64

struct shared {
    int64_t items[MAX_CAP];
    int     head, tail, count, cap;
    int     done, waiting;              /* phase 1 */
    int     go, registered, woken;      /* phase 2 */
    int     pad;
    int64_t consumed_sum[MP_MAX_NODES], consumed_count[MP_MAX_NODES];
};

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes(), consumers = n - 1;
    long items = argc > 1 ? atol(argv[1]) : 2000;
    int cap = argc > 2 ? atoi(argv[2]) : 4;
    MP_CHECK(n >= 2 && n <= MP_MAX_NODES, "2 to %d nodes", MP_MAX_NODES);
    MP_CHECK(cap >= 1 && cap <= MAX_CAP, "capacity 1..%d", MAX_CAP);

    struct shared *s = NULL;
    int32_t *tally = NULL;
    if (me == 0) {
        s = dsm_malloc(sizeof *s);
        tally = dsm_malloc((size_t)items * sizeof *tally);
        s->cap = cap;
    }
    dsm_bcast(&s, sizeof s, 0);
    dsm_bcast(&tally, sizeof tally, 0);
    dsm_barrier(); /* s->cap is visible */

    /* Phase 1. */
    if (me == 0) {
        for (long v = 1; v <= items; v++) {
            dsm_lock(LOCK);
            while (s->count == s->cap)
                dsm_cond_wait(NOT_FULL, LOCK);
            s->items[s->tail] = v;
            s->tail = (s->tail + 1) % s->cap;
            s->count++;
            dsm_cond_signal(NOT_EMPTY);
            dsm_unlock(LOCK);
        }
        dsm_lock(LOCK);
        while (!(s->count == 0 && s->waiting == consumers))
            dsm_cond_wait(IDLE, LOCK);
        s->done = 1;
        dsm_cond_broadcast(NOT_EMPTY);
        dsm_unlock(LOCK);
    } else {
        int64_t sum = 0, count = 0;
        for (;;) {
            dsm_lock(LOCK);
            while (s->count == 0 && !s->done) {
                s->waiting++;
                dsm_cond_signal(IDLE);
                dsm_cond_wait(NOT_EMPTY, LOCK);
                s->waiting--;
            }
            if (s->count == 0) { /* and done */
                dsm_unlock(LOCK);
                break;
            }
            int64_t v = s->items[s->head];
            s->head = (s->head + 1) % s->cap;
            s->count--;
            MP_CHECK(v >= 1 && v <= items, "took item %lld, not one of 1..%ld", (long long)v, items);
            tally[v - 1]++;
            dsm_cond_signal(NOT_FULL);
            dsm_unlock(LOCK);
            sum += v;
            count++;
        }
        s->consumed_sum[me] = sum;
        s->consumed_count[me] = count;
    }
    dsm_barrier();
    int64_t sum = 0, count = 0;
    for (int j = 1; j < n; j++) {
        sum += s->consumed_sum[j];
        count += s->consumed_count[j];
    }
    MP_CHECK(count == items, "%lld items consumed, %ld produced", (long long)count, items);
    MP_CHECK(sum == (int64_t)items * (items + 1) / 2, "consumed sum %lld, expected %lld",
             (long long)sum, (long long)items * (items + 1) / 2);
    for (long i = 0; i < items; i++)
        MP_CHECK(tally[i] == 1, "item %ld consumed %d times", i + 1, tally[i]);
    MP_CHECK(s->count == 0 && s->head == s->tail && s->waiting == 0 && s->done == 1,
             "buffer state at the end: count %d head %d tail %d waiting %d done %d", s->count,
             s->head, s->tail, s->waiting, s->done);

    /* Phase 2. */
    if (me == 0) {
        dsm_lock(LOCK);
        while (s->registered < consumers)
            dsm_cond_wait(REGISTERED, LOCK);
        s->go = 1;
        dsm_cond_broadcast(GO);
        dsm_unlock(LOCK);
    } else {
        dsm_lock(LOCK);
        s->registered++;
        dsm_cond_signal(REGISTERED);
        while (!s->go)
            dsm_cond_wait(GO, LOCK);
        s->woken++;
        dsm_unlock(LOCK);
    }
    dsm_barrier();
    MP_CHECK(s->woken == consumers, "%d consumers woken by the broadcast, expected %d", s->woken,
             consumers);

    if (me == 0)
        printf("cond_producer_consumer: %d nodes, %ld items through a buffer of %d, "
               "%d consumers released by broadcast: ok\n", n, items, cap, consumers);
    dsm_finish();
    return 0;
}
