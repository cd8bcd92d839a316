/*
 * test_smp_faults_in_flight.c — a node's threads fault on pages another
 * node homes, and their fetches are in flight at once (issue 87): under
 * hlrc a fault that fetches its page alone does not hold the node's fault
 * lock across the round trip (src/coherence/hlrc_fetch.c).
 *
 *   dsmrun -n 2 --threads T test_smp_faults_in_flight PAGES
 *   (run with DSM_NET_DELAY_US, so that each fetch takes a while)
 *
 * Node 0 homes a block (DSM_HOME_LOCAL) and writes every page of it.
 * Then, in three rounds, node 1's threads:
 *   1. read PAGES pages each, their own, every other page of the block (no
 *      read-ahead follows them);
 *   2. all read the same pages, each thread starting at once on the first
 *      (a fault on a page another thread is fetching waits for that fetch);
 *   3. write their own pages, which node 0 then reads.
 * Each value is checked. At the end node 1 asks its statistics for the
 * most fetches in flight at once: with T >= 2 it must be above 1 (with
 * the emulated link's delay, T threads each fault PAGES times, a fetch
 * lasting two delays: their faults could only never overlap were every
 * thread kept off a CPU for each of the others' whole runs), and at most
 * T. With the fault lock held across the round trip (as before) it is 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/stats.h"
#include "dsm.h"
#include "smp_util.h"

static int64_t *block;
static int pages, threads;
static size_t words;

/* Thread k's page q: every other page, the threads' interleaved. */
static int64_t *page_word(int k, int q)
{
    return &block[2 * ((size_t)q * (size_t)threads + (size_t)k) * words + (size_t)(q % 7)];
}

static int64_t value(int round, int k, int q) { return (int64_t)round * 1000003 + k * 4099 + q + 1; }

static void setup(void)
{
    threads = dsm_node_threads();
    words = dsm_page_size() / sizeof(int64_t);
    block = dsm_malloc_home(2 * (size_t)threads * (size_t)pages * dsm_page_size(), DSM_HOME_LOCAL);
}

static void run(void *arg)
{
    (void)arg;
    int id = dsm_thread_id(), node = id / threads, k = id % threads;
    /* 1: each of node 1's threads reads its own pages. */
    if (node == 0 && k == 0)
        for (int t = 0; t < threads; t++)
            for (int q = 0; q < pages; q++)
                *page_word(t, q) = value(1, t, q);
    dsm_barrier();
    if (node == 1)
        for (int q = pages - 1; q >= 0; q--) {
            int64_t v = *page_word(k, (q * 5 + k) % pages);
            SMP_CHECK(v == value(1, k, (q * 5 + k) % pages), "round 1 page %d read %lld", q, (long long)v);
        }
    dsm_barrier();
    /* 2: node 1's threads all read thread 0's pages, at once. */
    if (node == 0 && k == 0)
        for (int q = 0; q < pages; q++)
            *page_word(0, q) = value(2, 0, q);
    dsm_barrier();
    if (node == 1)
        for (int q = 0; q < pages; q++) {
            int64_t v = *page_word(0, q);
            SMP_CHECK(v == value(2, 0, q), "round 2 page %d read %lld", q, (long long)v);
        }
    dsm_barrier();
    /* 3: node 1's threads write their pages; node 0 reads them. */
    if (node == 1)
        for (int q = 0; q < pages; q++)
            *page_word(k, q) = -value(3, k, q);
    dsm_barrier();
    if (node == 0 && k == 0)
        for (int t = 0; t < threads; t++)
            for (int q = 0; q < pages; q++)
                SMP_CHECK(*page_word(t, q) == -value(3, t, q), "round 3: thread %d's page %d", t, q);
    if (node == 1 && k == 0) {
        uint64_t most = stats_get(STAT_FETCHES_IN_FLIGHT_MAX);
        printf("node 1: at most %llu fetches in flight at once (%d threads)\n",
               (unsigned long long)most, threads);
        SMP_CHECK(most <= (uint64_t)threads, "more fetches in flight than threads");
        SMP_CHECK(threads < 2 || most >= 2,
                  "%d threads faulting on their own pages never had two fetches in flight", threads);
    }
    dsm_barrier();
}

int main(int argc, char **argv)
{
    pages = argc > 1 ? atoi(argv[1]) : 0;
    if (pages < 1 || pages > 4096) {
        fprintf(stderr, "usage: dsmrun -n 2 --threads T test_smp_faults_in_flight PAGES (1..4096)\n");
        return 2;
    }
    return smp_run(&argc, &argv, setup, run);
}
