/*
 * fault_parallel.c — how many pages a second one node's threads bring in
 * from another node, by thread count: whether a node fetches many pages
 * at once, or one at a time (issue 87).
 *
 *   dsmrun -n 2 --threads T fault_parallel [--mode read|write] [--pages P] [--rounds R]
 *
 * Node 0 homes the pages (it allocates them, DSM_HOME_LOCAL) and writes
 * every one of them before each round, so that node 1's copies are stale.
 * Then node 1's T threads, each on P pages of its own, either read a word
 * of each page (--mode read: a read fault and a fetch each) or write one
 * (--mode write: a write fault, a fetch and a twin each) and, together,
 * release them (the barrier that ends the round sends the diffs home and
 * waits for them: a node's release). Pages per second is the node's pages
 * over the slowest thread's time; the median of R rounds is printed.
 *
 * The order is one no read-ahead can follow: each thread visits its pages
 * in a shuffled order, and only every other page of the block is used, so
 * that no two pages a thread or its node faults on are neighbours with
 * valid pages between them (hlrc_ahead.c's streams): every fault is a
 * fetch of one page, a round trip. Under DSM_NET_DELAY_US (an emulated
 * link) the round trip is mostly waiting, which a node that fetches many
 * pages at once overlaps: the rate then grows with the threads.
 *
 * Node 1 checks every word it read (the round's stamp) and node 0 every
 * word written; a wrong one ends with status 1. Node 0 prints one line:
 *
 *   fault_parallel: read 4 threads 256 pages 5 rounds: 12345 pages/s (median; min 11000 max 13000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "dsm.h"
#include "raw_udp.h" /* bench_now_ns, bench_median */

#define MAX_THREADS 64
#define MAX_ROUNDS  50

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n 2 --threads T fault_parallel [--mode M] [--pages P] [--rounds R]\n"
               "  --mode M     read (default): node 1's threads read a word of each page;\n"
               "               write: they write one, then release together (a barrier)\n"
               "  --pages P    pages each of node 1's threads faults on, 1..4096 (default 256)\n"
               "  --rounds R   rounds, 1..%d (default 5)\n",
            MAX_ROUNDS);
}

static const char *const mode_words[] = {"read", "write", NULL};

/* What every thread of the job reads: set by the master before dsm_create. */
struct job {
    int       write, pages, rounds, threads;
    size_t    words;                          /* a page's 64-bit words */
    int64_t  *block;                          /* 2 * threads * pages pages, homed at node 0 */
    double    ns[MAX_ROUNDS][MAX_THREADS];    /* node 1's threads' times */
    long      bad;                            /* wrong words seen */
};
static struct job *job;

/* Page q of thread k's P pages: every other page of the block, the threads'
 * pages interleaved. */
static size_t page_of(int k, int q) { return 2 * ((size_t)q * (size_t)job->threads + (size_t)k); }

/* Thread k's visiting order: a shuffle of 0..P-1 (xorshift, seeded by k). */
static void shuffle(int *order, int n, int k)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void worker(void *arg)
{
    (void)arg;
    int id = dsm_thread_id(), t = dsm_node_threads(), node = id / t, k = id % t;
    int *order = malloc((size_t)job->pages * sizeof *order);
    if (!order) {
        fprintf(stderr, "fault_parallel: out of memory\n");
        exit(1);
    }
    shuffle(order, job->pages, k);
    size_t words = job->words;
    for (int r = 0; r < job->rounds; r++) {
        int64_t stamp = (int64_t)r * 1000003 + 17;
        if (node == 0 && k == 0)
            for (int q = 0; q < job->pages * t; q++)
                job->block[page_of(q % t, q / t) * words + (size_t)(q % (int)words)] = stamp + q;
        dsm_barrier();
        uint64_t t0 = bench_now_ns();
        long bad = 0;
        if (node == 1) {
            for (int i = 0; i < job->pages; i++) {
                int q = order[i];
                int64_t *w = &job->block[page_of(k, q) * words + (size_t)((q * t + k) % (int)words)];
                if (job->write)
                    *w = -(stamp + q * t + k);
                else
                    bad += *w != stamp + q * t + k;
            }
        }
        if (!job->write && node == 1)
            job->ns[r][k] = (double)(bench_now_ns() - t0);
        dsm_barrier(); /* the release of the written pages */
        if (job->write && node == 1)
            job->ns[r][k] = (double)(bench_now_ns() - t0);
        if (job->write && node == 0 && k == 0)
            for (int q = 0; q < job->pages * t; q++)
                bad += job->block[page_of(q % t, q / t) * words + (size_t)(q % (int)words)] !=
                       -(stamp + q);
        if (bad) {
            dsm_lock(1);
            job->bad += bad;
            dsm_unlock(1);
        }
        dsm_barrier();
    }
    free(order);
}

int main(int argc, char **argv)
{
    dsm_startup_fork(&argc, &argv);
    struct job opt = {.pages = 256, .rounds = 5};
    struct arg_option options[] = {
        {"--mode", ARG_WORD, &opt.write, "read or write", .words = mode_words},
        {"--pages", ARG_INT, &opt.pages, "a page count 1..4096", .lo = 1, .hi = 4096},
        {"--rounds", ARG_INT, &opt.rounds, "a round count 1..50", .lo = 1, .hi = MAX_ROUNDS},
        {0}};
    int status = args_read(argc, argv, options, usage, true);
    if (status == ARGS_RUN && dsm_nodes() != 2)
        status = args_bad(usage, true, "run it on 2 nodes (dsmrun -n 2 --threads T)");
    if (status == ARGS_RUN && dsm_node_threads() > MAX_THREADS)
        status = args_bad(usage, true, "at most %d threads a node", MAX_THREADS);
    if (status != ARGS_RUN) {
        dsm_finish();
        return status;
    }
    job = dsm_malloc(sizeof *job);
    *job = opt;
    job->threads = dsm_node_threads();
    job->words = dsm_page_size() / sizeof(int64_t);
    job->block = dsm_malloc_home(2 * (size_t)job->threads * (size_t)job->pages * dsm_page_size(),
                                 DSM_HOME_LOCAL);
    dsm_create(worker, NULL);
    worker(NULL);
    dsm_wait_for_end();

    double rate[MAX_ROUNDS];
    for (int r = 0; r < job->rounds; r++) {
        double slowest = 0;
        for (int k = 0; k < job->threads; k++)
            if (job->ns[r][k] > slowest)
                slowest = job->ns[r][k];
        rate[r] = (double)job->threads * job->pages / (slowest / 1e9);
    }
    double lo = rate[0], hi = rate[0];
    for (int r = 1; r < job->rounds; r++) {
        lo = rate[r] < lo ? rate[r] : lo;
        hi = rate[r] > hi ? rate[r] : hi;
    }
    double median = bench_median(rate, (size_t)job->rounds);
    printf("fault_parallel: %s %d threads %d pages %d rounds: %.0f pages/s (median; min %.0f max %.0f)\n",
           job->write ? "write" : "read", job->threads, job->pages, job->rounds, median, lo, hi);
    long bad = job->bad;
    if (bad)
        printf("fault_parallel: %ld words wrong\n", bad);
    dsm_finish();
    return bad ? 1 : 0;
}
