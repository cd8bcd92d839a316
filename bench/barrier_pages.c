/*
 * barrier_pages.c — what a barrier costs once the nodes have written to
 * pages homed at other nodes, beside the bare barrier in the same run
 * (issue 63: NAS SP makes a barrier of every step of its sweeps, each
 * after a few words written in pages another node homes).
 *
 * Each round, for each page count P of --pages (0 is the bare barrier, the
 * baseline), every node writes one 8-byte word in each of P pages homed at
 * the next node (page j of node i's row is homed at node (i + 1) mod N),
 * then calls dsm_barrier; --iters such barriers back to back, timed at
 * node 0 (mean per barrier). What a page adds is the write fault and its
 * twin, the diff made, sent, applied and acknowledged, the write-protect
 * at the release, and the notice at the acquire. Rounds alternate the page
 * counts, so they share the machine's moments; the report gives the
 * medians, each count's time against the bare barrier's, and the cost a
 * page adds. A last pass writes every page and every node reads them all.
 *
 * --sync flush: the same with dsm_flush in place of the barrier, every node
 * flushing at its own pace (NAS LU's pipeline flushes after each row it
 * writes): the flush's release sends the diffs, and its acquire asks every
 * other node for what it lacks.
 *
 *   dsmrun -n N barrier_pages [--pages 0,1,4,16] [--iters M] [--rounds R]
 *                             [--sync barrier|flush]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "dsm.h"
#include "raw_udp.h" /* bench_now_ns, bench_median */

#define MAX_COUNTS 8
#define MAX_PAGES  64
#define MAX_ROUNDS 50

static void usage(FILE *f)
{
    fprintf(f, "usage: dsmrun -n N barrier_pages [--pages LIST] [--iters M] [--rounds R] [--sync S]\n"
               "  --pages LIST  page counts to write before each barrier (or flush),\n"
               "                comma-separated, each 0..%d, at most %d of them (default 0,1,4,16)\n"
               "  --iters M     barriers (or flushes) per count and round, 1..100000\n"
               "                (default 2000)\n"
               "  --rounds R    rounds over the counts, 1..%d (default 5)\n"
               "  --sync S      barrier (default) or flush: what follows each node's writes\n",
            MAX_PAGES, MAX_COUNTS, MAX_ROUNDS);
}

struct counts {
    int n, v[MAX_COUNTS];
};

static int parse_counts(const char *text, void *dest)
{
    struct counts *c = dest;
    c->n = 0;
    for (const char *p = text; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > MAX_PAGES || c->n == MAX_COUNTS || (*end && *end != ','))
            return -1;
        c->v[c->n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return c->n ? 0 : -1;
}

static int parse_sync(const char *text, void *dest)
{
    bool *flush = dest;
    if (strcmp(text, "barrier") && strcmp(text, "flush"))
        return -1;
    *flush = strcmp(text, "flush") == 0;
    return 0;
}

/* The first word of page j of node `node`'s row, in words from the block's
 * start: with cyclic homes page q is homed at node q mod N, and the row's
 * pages are q = (node * MAX_PAGES + j) * N + (node + 1) mod N, each homed
 * at the next node. */
static size_t row_page(int node, int j, int nodes, size_t words)
{
    return ((size_t)(node * MAX_PAGES + j) * (size_t)nodes + (size_t)((node + 1) % nodes)) * words;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), nodes = dsm_nodes();
    struct counts counts = {4, {0, 1, 4, 16}};
    int iters = 2000, rounds = 5;
    bool flush = false;
    struct arg_option options[] = {
        {"--pages", ARG_CUSTOM, &counts, "page counts 0..64, comma-separated, at most 8",
         .parse = parse_counts},
        {"--iters", ARG_INT, &iters, "a barrier (or flush) count 1..100000", .lo = 1, .hi = 100000},
        {"--rounds", ARG_INT, &rounds, "a round count 1..50", .lo = 1, .hi = MAX_ROUNDS},
        {"--sync", ARG_CUSTOM, &flush, "barrier or flush", .parse = parse_sync},
        {0}};
    int status = args_read(argc, argv, options, usage, me == 0);
    if (status == ARGS_RUN && nodes < 2)
        status = args_bad(usage, me == 0, "run it on 2 nodes or more (dsmrun -n 2)");
    if (status != ARGS_RUN) {
        dsm_finish();
        return status;
    }
    size_t page = dsm_page_size(), words = page / sizeof(int64_t);
    int64_t *a = NULL;
    if (me == 0)
        a = dsm_malloc_home((size_t)nodes * MAX_PAGES * (size_t)nodes * page, DSM_HOME_CYCLIC);
    dsm_bcast(&a, sizeof a, 0);
    size_t mine[MAX_PAGES];
    for (int j = 0; j < MAX_PAGES; j++)
        mine[j] = row_page(me, j, nodes, words);

    static double us[MAX_COUNTS][MAX_ROUNDS];
    int64_t stamp = 0;
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < counts.n; c++) {
            int p = counts.v[c];
            dsm_barrier();
            uint64_t t0 = bench_now_ns();
            for (int it = 0; it < iters; it++) {
                stamp++;
                for (int j = 0; j < p; j++)
                    a[mine[j] + (size_t)(stamp % (int64_t)words)] = stamp * 131 + j;
                if (flush)
                    dsm_flush();
                else
                    dsm_barrier();
            }
            us[c][r] = (double)(bench_now_ns() - t0) / 1e3 / iters;
        }

    /* A last pass every node checks: each writes word 0 of all its pages
     * (and the word the timed runs wrote last, again), then every node
     * reads every node's. */
    stamp++;
    size_t last = (size_t)(stamp % (int64_t)words);
    for (int j = 0; j < MAX_PAGES; j++) {
        a[mine[j]] = stamp * 131 + j + me * 7;
        a[mine[j] + last] = -(stamp * 131 + j + me * 7);
    }
    dsm_barrier();
    long bad = 0;
    for (int i = 0; i < nodes; i++)
        for (int j = 0; j < MAX_PAGES; j++) {
            size_t at = row_page(i, j, nodes, words);
            int64_t want = stamp * 131 + j + i * 7;
            bad += a[at] != want || (last && a[at + last] != -want);
        }
    if (me == 0) {
        const char *what = flush ? "flush" : "barrier";
        printf("barrier_pages: %d nodes, %d %ses per count and round, %d rounds (medians)\n",
               nodes, iters, what, rounds);
        double base = 0;
        for (int c = 0; c < counts.n; c++) {
            double m = bench_median(us[c], (size_t)rounds);
            if (counts.v[c] == 0)
                base = m;
            printf("  %2d pages a node: %8.1f us a %s", counts.v[c], m, what);
            if (base > 0 && counts.v[c] > 0)
                printf("   %5.2f x the bare %s, %6.1f us a page", m / base, what,
                       (m - base) / counts.v[c]);
            printf("\n");
        }
        if (bad)
            printf("barrier_pages: node 0 read %ld pages without the words written before the last "
                   "barrier\n", bad);
    }
    dsm_finish();
    return bad ? 1 : 0;
}
