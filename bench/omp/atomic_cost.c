/*
 * atomic_cost.c — what an atomic operation on shared memory costs under
 * dsmcc (issue 38), beside a free remote lock, in the same run.
 *
 *   dsmrun -n 2 build/bench/omp/atomic_cost_dsm [-s SAMPLES] [-r ROUNDS]
 *
 * Thread 1 (node 1) measures; thread 0 (node 0, the master) is the home of
 * every page and waits. Each sample is one operation, timed with
 * omp_get_wtime; the figures are medians over all samples (µs):
 *   lock, free remote   dsm_lock + dsm_unlock of a fresh lock id that node 0
 *                       manages and nobody holds: a request and its grant
 *   atomic, page away   __atomic_fetch_add on a word of a page homed on
 *                       node 0 that node 1 has no copy of, under a fresh
 *                       block lock that node 0 manages: the lock's request
 *                       and grant, then the page's fetch (under hlrc: the
 *                       home performs it with the grant). The page's first
 *                       atomic: under hlrc its home also maps the page in
 *                       its system view (a minor fault, once a page)
 *   atomic, page away,  the same on a page that has had an atomic at its
 *     home warm         home before (one on another word, in the set-up),
 *                       as a counter added to again and again does: the
 *                       cost of every atomic after a page's first
 *   atomic, any word    the same on the first word of such a page, its
 *                       block lock whichever node the runtime has manage
 *                       it (under hlrc the page's base node, here node
 *                       0, the home; elsewhere a hash over all nodes)
 *   atomic, third node  (3 nodes or more) the same, "page away", on a
 *                       page of node 0's arena homed on node 2 (block
 *                       placement) under a block lock node 0 manages: the
 *                       grant comes from a node that is not the page's
 *                       home
 *   atomic, page here   the same on a page node 1 has just read (valid
 *                       here): under hlrc the home performs it with the
 *                       grant and node 1's copy replays it; elsewhere the
 *                       lock, a write fault and a twin, and the diff
 *   atomic, again       the same word again and again: the lock stays on
 *                       the node, no message
 *   atomic, ping-pong   nodes 0 and 1 add in turn to one counter (each
 *                       waits for its turn with atomic loads): half the
 *                       round trip, i.e. one add that takes the counter
 *                       from the other node
 * The block locks are chosen through the runtime's own id function so
 * that node 0 manages them, as it manages the free lock: the comparison is
 * of like with like ("any word" shows what a program gets without the
 * choice). Issue 38's target: "atomic, page away" <= 1.5 x "lock, free
 * remote". The counters' sums are checked. Prints RESULT.
 */
#include <dsm.h>
#include <stdint.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dsm's runtime (src/sync/atomic.c): the lock id of an address's block. */
int __dsm_atomic_lock_id(const volatile void *addr);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long pingpong;

int main(int argc, char **argv)
{
    int samples = 200, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: atomic_cost [-s SAMPLES] [-r ROUNDS]\n");
            return 2;
        }
    }
    if (samples < 1 || rounds < 1) {
        fprintf(stderr, "atomic_cost: -s and -r take positive counts\n");
        return 2;
    }
    int n = samples * rounds, nodes = dsm_nodes();
    if (nodes < 2) {
        fprintf(stderr, "atomic_cost: run it under dsmrun -n 2 (or more)\n");
        return 2;
    }
    size_t page = dsm_page_size();
    /* Four pages a sample (away, here, any, warm), homed on node 0, visited in
     * a shuffled order: hlrc reads ahead after faults on consecutive
     * pages, which would fetch "away" pages before their turn. The third
     * node's: the third of `nodes` blocks of pages, homed on node 2. */
    char *pages = dsm_malloc_home(4 * (size_t)n * page, DSM_HOME_LOCAL);
    char *blocks = nodes > 2 ? dsm_malloc_home((size_t)nodes * n * page, DSM_HOME_BLOCK) : NULL;
    int *order = calloc((size_t)4 * n, sizeof(int));
    double *t_lock = calloc((size_t)n, sizeof(double)), *t_away = calloc((size_t)n, sizeof(double));
    double *t_here = calloc((size_t)n, sizeof(double)), *t_again = calloc((size_t)n, sizeof(double));
    long **away = calloc((size_t)n, sizeof(long *)), **here = calloc((size_t)n, sizeof(long *));
    double *t_third = calloc((size_t)n, sizeof(double)), *t_any = calloc((size_t)n, sizeof(double));
    long **third = calloc((size_t)n, sizeof(long *)), **any = calloc((size_t)n, sizeof(long *));
    double *t_warm = calloc((size_t)n, sizeof(double));
    long **warm = calloc((size_t)n, sizeof(long *)), **warmup = calloc((size_t)n, sizeof(long *));
    if (!pages || (nodes > 2 && !blocks) || !order || !t_lock || !t_away || !t_here || !t_again ||
        !away || !here || !t_third || !third || !t_any || !any || !t_warm || !warm || !warmup) {
        fprintf(stderr, "atomic_cost: out of memory\n");
        return 1;
    }
    if ((uintptr_t)pages % page || (uintptr_t)blocks % page) {
        fprintf(stderr, "atomic_cost: dsm_malloc_home returned a block not on a page boundary\n");
        return 1;
    }
    /* A word of each page whose block lock node 0 manages (the first
     * word for "any"; for "warm" two, the second warms the home). */
    for (int k = 0; k < 4 * n; k++)
        order[k] = k;
    unsigned rng = 12345;
    for (int k = 4 * n - 1; k > 0; k--) {
        rng = rng * 1103515245u + 12345u;
        int j = (int)((rng >> 8) % (unsigned)(k + 1)), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < 4 * n; k++) {
        long *w = (long *)(pages + (size_t)order[k] * page);
        while (k % 4 != 2 && __dsm_atomic_lock_id(w) % nodes != 0)
            w += 2;
        *w = 0;
        if (k % 4 == 1)
            here[k / 4] = w;
        else if (k % 4 == 0)
            away[k / 4] = w;
        else if (k % 4 == 2)
            any[k / 4] = w;
        else {
            warm[k / 4] = w;
            do
                w += 2;
            while (__dsm_atomic_lock_id(w) % nodes != 0);
            *w = 0;
            warmup[k / 4] = w;
        }
    }
    for (int s = 0; nodes > 2 && s < n; s++) {
        long *w = (long *)(blocks + ((size_t)2 * n + s) * page);
        while (__dsm_atomic_lock_id(w) % nodes != 0)
            w += 2;
        *w = 0;
        third[s] = w;
    }
    long again = 0, sum_ok = 1;
    double t_pp = 0;
    int pp_rounds = samples;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num(), lock_id = 0;
        if (me == 1)
            for (int s = 0; s < n; s++)
                __atomic_fetch_add(warmup[s], 1, __ATOMIC_SEQ_CST);
        for (int r = 0; r < rounds; r++) {
#pragma omp barrier
            if (me == 1) {
                for (int s = r * samples; s < (r + 1) * samples; s++) {
                    lock_id += nodes; /* fresh, and node 0 manages it */
                    double t0 = omp_get_wtime();
                    dsm_lock(lock_id);
                    dsm_unlock(lock_id);
                    t_lock[s] = omp_get_wtime() - t0;

                    t0 = omp_get_wtime();
                    __atomic_fetch_add(away[s], 1, __ATOMIC_SEQ_CST);
                    t_away[s] = omp_get_wtime() - t0;

                    t0 = omp_get_wtime();
                    __atomic_fetch_add(warm[s], 1, __ATOMIC_SEQ_CST);
                    t_warm[s] = omp_get_wtime() - t0;

                    t0 = omp_get_wtime();
                    __atomic_fetch_add(any[s], 1, __ATOMIC_SEQ_CST);
                    t_any[s] = omp_get_wtime() - t0;

                    if (nodes > 2) {
                        t0 = omp_get_wtime();
                        __atomic_fetch_add(third[s], 1, __ATOMIC_SEQ_CST);
                        t_third[s] = omp_get_wtime() - t0;
                    }

                    volatile long seen = *here[s]; /* the page comes here first */
                    (void)seen;
                    t0 = omp_get_wtime();
                    __atomic_fetch_add(here[s], 1, __ATOMIC_SEQ_CST);
                    t_here[s] = omp_get_wtime() - t0;

                    t0 = omp_get_wtime();
                    __atomic_fetch_add(&again, 1, __ATOMIC_SEQ_CST);
                    t_again[s] = omp_get_wtime() - t0;
                }
            }
        }
#pragma omp barrier
        /* Ping-pong: node 0 adds when the counter is even, node 1 when odd. */
        double t0 = omp_get_wtime();
        for (int k = 0; k < pp_rounds; k++) {
            long want = 2L * k + me;
            while (__atomic_load_n(&pingpong, __ATOMIC_ACQUIRE) != want)
                ;
            __atomic_fetch_add(&pingpong, 1, __ATOMIC_ACQ_REL);
        }
        if (me == 0)
            t_pp = (omp_get_wtime() - t0) / pp_rounds / 2;
    }
    for (int s = 0; s < n; s++)
        sum_ok &= *away[s] == 1 && *here[s] == 1 && *any[s] == 1 && *warm[s] == 1 &&
                  *warmup[s] == 1 && (nodes < 3 || *third[s] == 1);
    sum_ok &= again == n && pingpong == 2L * pp_rounds;
    double lock = median(t_lock, n) * 1e6, a_away = median(t_away, n) * 1e6;
    double a_warm = median(t_warm, n) * 1e6;
    double a_here = median(t_here, n) * 1e6, a_again = median(t_again, n) * 1e6;
    double a_third = nodes > 2 ? median(t_third, n) * 1e6 : 0, a_any = median(t_any, n) * 1e6;
    printf("nodes %d, %d samples (%d rounds), medians in us\n", nodes, n, rounds);
    printf("  lock, free remote (lock + unlock)   %8.1f\n", lock);
    printf("  atomic add, page away, home warm    %8.1f   %.2f x the free remote lock (target <= 1.5)\n",
           a_warm, a_warm / lock);
    printf("  atomic add, page away, page's first %8.1f   %.2f x\n", a_away, a_away / lock);
    printf("  atomic add, page away, any word     %8.1f   %.2f x\n", a_any, a_any / lock);
    if (nodes > 2)
        printf("  atomic add, page away, home 3rd node%8.1f   %.2f x\n", a_third, a_third / lock);
    printf("  atomic add, page here               %8.1f   %.2f x\n", a_here, a_here / lock);
    printf("  atomic add, same word again         %8.2f\n", a_again);
    printf("  atomic add, ping-pong (per add)     %8.1f   (mean)\n", t_pp * 1e6);
    printf("RESULT app=atomic_cost procs=%d lock_us=%.2f warm_us=%.2f away_us=%.2f any_us=%.2f third_us=%.2f "
           "here_us=%.2f again_us=%.3f pingpong_us=%.2f check=%s\n",
           nodes, lock, a_warm, a_away, a_any, a_third, a_here, a_again, t_pp * 1e6,
           sum_ok ? "ok" : "FAILED");
    return sum_ok ? 0 : 1;
}
