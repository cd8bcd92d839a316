/*
 * Threads of SMP nodes (dsmrun --threads T) share pages, locks and
 * barriers with every thread of every node:
 *  1. every thread writes its own words of pages all threads write (false
 *     sharing inside a node and across nodes); after a barrier every
 *     thread reads every other thread's words, round after round;
 *  2. one counter under one lock, incremented by every thread: exact;
 *  3. counters under several locks, on one page and on pages homed on
 *     different nodes, some updates holding two locks at once: exact;
 *  4. ids: dsm_thread_id is unique, node-major, below dsm_thread_count.
 * Usage: test_smp_threads_share_pages [rounds] [incs]
 */
#include "smp_util.h"

#define K        4
#define MAX_THR  1024
#define LOCK_ONE 0
#define LOCK_NEAR 1 /* + k */
#define LOCK_FAR  11 /* + k */

struct shared {
    int64_t counter;
    int64_t near[K];
    int64_t seen[MAX_THR]; /* one word per thread: ids taken */
};

static struct shared *s;
static int64_t *words, *far;
static long rounds = 20, incs = 100;
static size_t far_stride;

static void setup(void)
{
    size_t page = dsm_page_size();
    s = dsm_malloc(sizeof *s);
    words = dsm_malloc_home(3 * page, DSM_HOME_CYCLIC); /* slots spread over 3 pages */
    far = dsm_malloc_home(K * page, DSM_HOME_CYCLIC);
    far_stride = page / sizeof(int64_t);
}

static int64_t value(long round, int thread) { return round * 100003 + thread * 7 + 1; }

static void work(void *arg)
{
    (void)arg;
    int me = dsm_thread_id(), n = dsm_thread_count(), t = dsm_node_threads();
    SMP_CHECK(n == dsm_nodes() * t && me >= 0 && me < n && me / t == dsm_rank(),
              "thread %d of %d, node %d of %d, %d per node", me, n, dsm_rank(), dsm_nodes(), t);
    SMP_CHECK(n <= MAX_THR, "at most %d threads", MAX_THR);
    size_t nwords = 3 * dsm_page_size() / sizeof(int64_t);
    s->seen[me] = me + 1;
    /* 1. Words of shared pages, each written by one thread. */
    for (long r = 0; r < rounds; r++) {
        for (size_t w = (size_t)me; w < nwords; w += (size_t)n)
            words[w] = value(r, me);
        dsm_barrier();
        for (size_t w = 0; w < nwords; w++)
            SMP_CHECK(words[w] == value(r, (int)(w % (size_t)n)), "round %ld word %zu: %lld", r,
                      w, (long long)words[w]);
        dsm_barrier();
    }
    for (int j = 0; j < n; j++)
        SMP_CHECK(s->seen[j] == j + 1, "thread %d's id slot holds %lld", j, (long long)s->seen[j]);

    /* 2. One counter. */
    for (long i = 0; i < incs; i++) {
        dsm_lock(LOCK_ONE);
        s->counter++;
        dsm_unlock(LOCK_ONE);
    }
    dsm_barrier();
    SMP_CHECK(s->counter == (int64_t)n * incs, "counter %lld, expected %lld",
              (long long)s->counter, (long long)n * incs);

    /* 3. Several counters, several locks; every 4th step moves one unit
     * from near[a] to near[b] holding both (in id order). */
    for (long i = 0; i < incs; i++) {
        int k = (int)((me + i) % K);
        dsm_lock(LOCK_NEAR + k);
        s->near[k] += me + 1;
        dsm_unlock(LOCK_NEAR + k);
        dsm_lock(LOCK_FAR + k);
        far[(size_t)k * far_stride] += i + 1;
        dsm_unlock(LOCK_FAR + k);
        if (i % 4 == 3) {
            int a = k, b = (k + 1) % K, lo = a < b ? a : b, hi = a < b ? b : a;
            dsm_lock(LOCK_NEAR + lo);
            dsm_lock(LOCK_NEAR + hi);
            s->near[a] -= 1;
            s->near[b] += 1;
            dsm_unlock(LOCK_NEAR + hi);
            dsm_unlock(LOCK_NEAR + lo);
        }
    }
    dsm_barrier();
    int64_t want_near[K] = {0}, want_far[K] = {0};
    for (int r = 0; r < n; r++)
        for (long i = 0; i < incs; i++) {
            int k = (int)((r + i) % K);
            want_near[k] += r + 1;
            want_far[k] += i + 1;
            if (i % 4 == 3) {
                want_near[k] -= 1;
                want_near[(k + 1) % K] += 1;
            }
        }
    for (int k = 0; k < K; k++) {
        SMP_CHECK(s->near[k] == want_near[k], "near[%d] %lld, expected %lld", k,
                  (long long)s->near[k], (long long)want_near[k]);
        SMP_CHECK(far[(size_t)k * far_stride] == want_far[k], "far[%d] %lld, expected %lld", k,
                  (long long)far[(size_t)k * far_stride], (long long)want_far[k]);
    }
    dsm_barrier();
    if (me == 0)
        printf("%d threads on %d nodes: pages, locks and barriers ok\n", n, dsm_nodes());
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    if (argc > 2)
        incs = atol(argv[2]);
    return smp_run(&argc, &argv, setup, work);
}
