/*
 * omp_dynamic_nodes.c — a dynamic loop is shared by the nodes (issue 85):
 * every node's threads run chunks of it, though each chunk first faults in
 * pages of a table the master filled (homed on node 0), which only the
 * other nodes must fetch. Before, node 0 held the loop's one counter and
 * took a chunk at no cost while another node paid a round trip for each,
 * and more for its faults: node 0 ran nearly all of them, often all (600
 * of 600 on 2 nodes). Now each node has a pool of chunks that no other
 * node takes from before it has begun, so its first request always finds
 * one. How large a share it ends with depends on the CPU it gets (on 2
 * CPUs with 4 nodes a node may sleep while the others run its pool): that
 * is measured (bench/omp/lookup), not asserted.
 *
 * Also, with results checked: every iteration runs exactly once under
 * schedule(dynamic), dynamic with a chunk, guided, and monotonic dynamic
 * (whose chunks come in order: each thread's first iterations increase).
 *
 * A node is a process: threads with the same process id share a node.
 * Prints "PASSED: 0 failed" (or what failed) and the share of each node.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TABLE_PAGES 2048 /* 8 MiB of 4 KiB pages */
#define PAGE_DOUBLES 512
#define CHUNKS 600
#define READS 32 /* pages a chunk reads */

static double *table;
static int failed;

static void fail(const char *what)
{
    printf("FAILED: %s\n", what);
    failed++;
}

/* Chunk c's reads: READS pages spread over the whole table. */
static double chunk_work(long c)
{
    double sum = 0;
    for (long k = 0; k < READS; k++) {
        long page = (c * 7919 + k * 257) % TABLE_PAGES;
        sum += table[page * PAGE_DOUBLES + (c + k) % PAGE_DOUBLES];
    }
    return sum;
}

/* Each node's chunks of a schedule(dynamic) loop over the table: fails
 * unless every node ran at least one. */
static void test_dynamic_shares_nodes(void)
{
    int n = omp_get_max_threads();
    long *counts = calloc((size_t)n, sizeof *counts), *pids = calloc((size_t)n, sizeof *pids);
    double sum = 0, want = 0;
    int team = 0;
#pragma omp parallel reduction(+ : sum)
    {
        long mine = 0;
#pragma omp for schedule(dynamic) nowait
        for (long c = 0; c < CHUNKS; c++) {
            sum += chunk_work(c);
            mine++;
        }
        counts[omp_get_thread_num()] = mine;
        pids[omp_get_thread_num()] = (long)getpid();
#pragma omp single nowait
        team = omp_get_num_threads();
    }
    for (long c = 0; c < CHUNKS; c++)
        want += chunk_work(c);
    if (sum != want)
        fail("the dynamic loop's sum differs from the serial one");
    int nodes = 0;
    long total = 0;
    for (int k = 0; k < team; k++)
        total += counts[k];
    if (total != CHUNKS)
        fail("the dynamic loop's chunks do not add up");
    for (int k = 0; k < team; k++)
        nodes += k == 0 || pids[k] != pids[k - 1];
    printf("nodes %d, chunks by node:", nodes);
    int starved = 0;
    for (int k = 0; k < team; k++) {
        if (k > 0 && pids[k] == pids[k - 1])
            continue;
        long node = 0;
        for (int j = k; j < team && pids[j] == pids[k]; j++)
            node += counts[j];
        printf(" %ld", node);
        starved += node == 0;
    }
    printf("\n");
    if (starved)
        fail("a node ran none of a dynamic loop's chunks");
    free(counts);
    free(pids);
}

/* Every iteration exactly once, under each schedule; monotonic chunks
 * reach each thread in increasing order. */
static void test_each_iteration_once(void)
{
    enum { N = 10007 };
    int *runs = calloc(N, sizeof *runs);
    long total;
    for (int s = 0; s < 4; s++) {
        memset(runs, 0, N * sizeof *runs);
        total = 0;
        int disorder = 0;
#pragma omp parallel reduction(+ : total, disorder)
        {
            long last = -1;
            switch (s) {
            case 0:
#pragma omp for schedule(dynamic)
                for (long i = 0; i < N; i++)
                    runs[i]++, total += i;
                break;
            case 1:
#pragma omp for schedule(dynamic, 7)
                for (long i = 0; i < N; i++)
                    runs[i]++, total += i;
                break;
            case 2:
#pragma omp for schedule(guided, 5)
                for (long i = 0; i < N; i++)
                    runs[i]++, total += i;
                break;
            default:
#pragma omp for schedule(monotonic : dynamic, 3)
                for (long i = 0; i < N; i++) {
                    runs[i]++, total += i;
                    disorder += i < last;
                    last = i;
                }
            }
        }
        for (int i = 0; i < N; i++)
            if (runs[i] != 1) {
                fail("an iteration ran other than once");
                break;
            }
        if (total != (long)N * (N - 1) / 2)
            fail("the iterations' sum is wrong");
        if (disorder)
            fail("a monotonic loop's chunks came out of order");
    }
    free(runs);
}

int main(void)
{
    table = malloc((size_t)TABLE_PAGES * PAGE_DOUBLES * sizeof *table);
    for (long i = 0; i < (long)TABLE_PAGES * PAGE_DOUBLES; i++)
        table[i] = (double)(i % 1000) * 0.5;
    printf("threads %d\n", omp_get_max_threads());
    test_dynamic_shares_nodes();
    test_each_iteration_once();
    printf("PASSED: %d failed\n", failed);
    free(table);
    return failed != 0;
}
