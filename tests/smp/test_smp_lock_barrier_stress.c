/*
 * Randomized lock-and-barrier stress across nodes x threads. L arrays of
 * W words, array k guarded by lock k, with its running total beside it;
 * some arrays share a page, some span pages homed on different nodes.
 * Each thread, from its own seed, takes random locks (one, or two in id
 * order) and checks under them that each array sums to its total (every
 * earlier holder's writes are visible), then adds to random words, or
 * moves an amount from one array to the other. Every thread records what
 * it added; a barrier ends each round, and after it every thread checks
 * every array against the sum of all threads' records (a sequential
 * model of the run). The rounds' lengths differ per thread.
 * Usage: test_smp_lock_barrier_stress [rounds] [ops] [seed]
 */
#include "smp_util.h"

#define L        6
#define W        700 /* words per array: arrays 0-1 share pages, 2-5 span two */
#define MAX_THR  1024

struct array {
    int64_t total;
    int64_t w[W];
};

static struct array *arr;          /* L of them, contiguous */
static int64_t (*added)[L];        /* per thread, per array: what it added (its own words) */
static long rounds = 8, ops = 150;
static uint64_t seed = 12345;

static void setup(void)
{
    arr = dsm_malloc_home(L * sizeof *arr, DSM_HOME_CYCLIC);
    added = dsm_malloc_home(MAX_THR * sizeof *added, DSM_HOME_CYCLIC);
}

static void check_sum(int k, const char *when)
{
    int64_t sum = 0;
    for (int i = 0; i < W; i++)
        sum += arr[k].w[i];
    SMP_CHECK(sum == arr[k].total, "%s: array %d sums to %lld, its total says %lld", when, k,
              (long long)sum, (long long)arr[k].total);
}

static void work(void *arg)
{
    (void)arg;
    int me = dsm_thread_id(), n = dsm_thread_count();
    SMP_CHECK(n <= MAX_THR, "at most %d threads", MAX_THR);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)me * 7919 + 1;
    int64_t mine[L] = {0};
    for (long r = 0; r < rounds; r++) {
        long my_ops = ops / 2 + (long)(smp_rand(&s) % (uint64_t)(ops + 1));
        for (long o = 0; o < my_ops; o++) {
            int a = (int)(smp_rand(&s) % L);
            if (smp_rand(&s) % 4) {
                dsm_lock(a);
                check_sum(a, "under its lock");
                int64_t v = (int64_t)(smp_rand(&s) % 100) + 1;
                arr[a].w[smp_rand(&s) % W] += v;
                arr[a].total += v;
                mine[a] += v;
                dsm_unlock(a);
            } else {
                int b = (int)(smp_rand(&s) % L);
                if (b == a)
                    b = (a + 1) % L;
                int lo = a < b ? a : b, hi = a < b ? b : a;
                dsm_lock(lo);
                dsm_lock(hi);
                check_sum(a, "under two locks");
                check_sum(b, "under two locks");
                int64_t v = (int64_t)(smp_rand(&s) % 50) + 1;
                arr[a].w[smp_rand(&s) % W] -= v;
                arr[a].total -= v;
                arr[b].w[smp_rand(&s) % W] += v;
                arr[b].total += v;
                mine[a] -= v;
                mine[b] += v;
                dsm_unlock(hi);
                dsm_unlock(lo);
            }
        }
        for (int k = 0; k < L; k++)
            added[me][k] = mine[k];
        dsm_barrier();
        for (int k = 0; k < L; k++) {
            int64_t want = 0;
            for (int t = 0; t < n; t++)
                want += added[t][k];
            check_sum(k, "after the barrier");
            SMP_CHECK(arr[k].total == want, "round %ld: array %d's total %lld, the threads added %lld",
                      r, k, (long long)arr[k].total, (long long)want);
        }
        dsm_barrier();
    }
    if (me == 0)
        printf("%d threads on %d nodes: %ld rounds of random locks and barriers ok\n", n,
               dsm_nodes(), rounds);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atol(argv[1]);
    if (argc > 2)
        ops = atol(argv[2]);
    if (argc > 3)
        seed = strtoull(argv[3], NULL, 10);
    return smp_run(&argc, &argv, setup, work);
}
