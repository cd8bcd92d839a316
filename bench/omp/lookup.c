/*
 * lookup.c — random lookups into a large read-only table under
 * schedule(dynamic), the shape of XSBench's cross-section lookups (issue
 * 85): the master fills the table, then every thread searches it at
 * random, chunk after chunk.
 *
 *   lookup_omp [--size test|quick|full] [-l LOOKUPS_PER_CHUNK] [-m]
 *
 *   size    entries     table     lookups a chunk (5,000 chunks)
 *   test    65,536      2.6 MB    20
 *   quick   655,360     26 MB     100
 *   full    6,000,000   240 MB    100
 *
 * The table: `n` sorted energies (each entry's grid point, increasing with
 * a random gap) and beside each four cross sections, 40 bytes an entry. A
 * lookup draws an energy, finds the grid interval holding it by binary
 * search (about log2 n reads scattered over the whole table) and
 * interpolates the four cross sections there, as XSBench's unionized grid
 * search does. Every page of the table is read by every thread, and
 * written by none after the master filled it.
 *
 * Parallel structure: one `parallel for schedule(dynamic)` over the 5,000
 * chunks (chunk i does lookups i*L .. i*L+L-1, each lookup's energy drawn
 * from its own index, so the work of a chunk is the same whoever runs it),
 * summing a checksum by reduction. Each thread counts the chunks it ran,
 * and stores the count, with its process id, into an array indexed by
 * omp_get_thread_num() once the loop is over: threads of one process
 * share a node (on dsm, node r's threads are r*p .. r*p+p-1), so the
 * report groups the counts by process id into each node's share.
 *
 * -m writes the loop schedule(monotonic: dynamic): chunks in order, which
 * dsm serves from one counter at node 0 (docs/openmp.md), for comparison
 * with its per-node pools of the default nonmonotonic schedule.
 *
 * Self-check, outside the timed section: the initial thread recomputes
 * every lookup; the checksums (integer sums of each lookup's result
 * bits, so the order of the sum cannot change them) must be equal.
 *
 * A standalone program: nothing but the C library, <omp.h> and
 * ../kernels/rng.h, so that it can be built unchanged by `clang -fopenmp`
 * (threads) and by dsmcc (nodes). It prints one line,
 *   RESULT app=lookup mode=omp procs=T size=N time=S check=ok|FAIL ...
 * (the format bench/run reads) with `nodes=` (processes seen) and
 * `node_share=` (each node's percentage of the chunks, in thread order),
 * and exits 1 when the check fails.
 */
#include "../kernels/rng.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNKS 5000
#define XS 4 /* cross sections an entry */

struct entry {
    double energy;
    double xs[XS];
};

static struct entry *table;
static long n_entries;

static void *xmalloc(size_t size)
{
    void *m = malloc(size ? size : 1);
    if (!m) {
        fprintf(stderr, "lookup: out of memory (%zu bytes)\n", size);
        exit(2);
    }
    return m;
}

/* The table as the master fills it: energies increasing from 0 by gaps
 * in [0.5, 1.5), cross sections random. */
static void fill_table(void)
{
    uint64_t s = 85;
    double e = 0;
    for (long i = 0; i < n_entries; i++) {
        table[i].energy = e;
        e += 0.5 + rng_uniform(&s);
        for (int k = 0; k < XS; k++)
            table[i].xs[k] = rng_uniform(&s);
    }
}

/* Lookup `i`: the grid interval holding its energy, its cross sections
 * interpolated there; the result's bits folded into one word. */
static uint64_t lookup(uint64_t i)
{
    uint64_t s = i * 0x9e3779b97f4a7c15ull + 1;
    double e = rng_uniform(&s) * table[n_entries - 1].energy;
    long lo = 0, hi = n_entries - 1; /* table[lo].energy <= e < table[hi].energy */
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (table[mid].energy <= e)
            lo = mid;
        else
            hi = mid;
    }
    const struct entry *a = &table[lo], *b = &table[hi];
    double f = (e - a->energy) / (b->energy - a->energy);
    uint64_t h = (uint64_t)lo;
    for (int k = 0; k < XS; k++) {
        double x = a->xs[k] + f * (b->xs[k] - a->xs[k]);
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        h = h * 31 + bits;
    }
    return h;
}

/* Chunk c's lookups, summed. */
static uint64_t lookup_chunk(long c, long per_chunk)
{
    uint64_t sum = 0;
    for (long i = c * per_chunk; i < (c + 1) * per_chunk; i++)
        sum += lookup((uint64_t)i);
    return sum;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: lookup_omp [--size test|quick|full] [-l LOOKUPS] [-m]\n"
               "  random lookups into a read-only table, %d chunks under schedule(dynamic)\n"
               "  --size  test: 65,536 entries (2.6 MB), 20 lookups a chunk;\n"
               "          quick: 655,360 (26 MB), 100; full (default): 6,000,000 (240 MB), 100\n"
               "  -l L    lookups a chunk, 1..100000\n"
               "  -m      schedule(monotonic: dynamic) instead of schedule(dynamic)\n"
               "  threads: OMP_NUM_THREADS\n",
               CHUNKS);
}

int main(int argc, char **argv)
{
    const char *size = "full";
    long per_chunk = 100, l_opt = 0;
    n_entries = 6000000;
    int bad = 0, monotonic = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            size = argv[++i];
            if (!strcmp(size, "test"))
                n_entries = 65536, per_chunk = 20;
            else if (!strcmp(size, "quick"))
                n_entries = 655360, per_chunk = 100;
            else if (!strcmp(size, "full"))
                n_entries = 6000000, per_chunk = 100;
            else
                bad = 1;
        } else if (!strcmp(argv[i], "-m")) {
            monotonic = 1;
        } else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
            char *end;
            l_opt = strtol(argv[++i], &end, 10);
            bad = *end || l_opt < 1 || l_opt > 100000;
        } else {
            bad = 1;
        }
    }
    if (bad) {
        usage(stderr);
        return 2;
    }
    if (l_opt)
        per_chunk = l_opt;

    table = xmalloc((size_t)n_entries * sizeof *table);
    fill_table();
    int nthreads = omp_get_max_threads();
    long *counts = xmalloc((size_t)nthreads * sizeof *counts);
    long *pids = xmalloc((size_t)nthreads * sizeof *pids);
    memset(counts, 0, (size_t)nthreads * sizeof *counts);
    int team = 0;

    uint64_t sum = 0;
    double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sum)
    {
        long mine = 0;
        if (monotonic) {
#pragma omp for schedule(monotonic : dynamic) nowait
            for (long c = 0; c < CHUNKS; c++) {
                sum += lookup_chunk(c, per_chunk);
                mine++;
            }
        } else {
#pragma omp for schedule(dynamic) nowait
            for (long c = 0; c < CHUNKS; c++) {
                sum += lookup_chunk(c, per_chunk);
                mine++;
            }
        }
        counts[omp_get_thread_num()] = mine;
        pids[omp_get_thread_num()] = (long)getpid();
#pragma omp single nowait
        team = omp_get_num_threads();
    }
    double secs = omp_get_wtime() - t0;

    uint64_t want = 0;
    for (uint64_t i = 0; i < (uint64_t)CHUNKS * (uint64_t)per_chunk; i++)
        want += lookup(i);
    long total = 0;
    for (int k = 0; k < team; k++)
        total += counts[k];
    int ok = sum == want && total == CHUNKS;

    /* Each node's share: the threads of one process, in thread order. */
    char shares[512] = "", *p = shares;
    int nodes = 0;
    for (int k = 0; k < team; k++) {
        if (k > 0 && pids[k] == pids[k - 1])
            continue;
        long node = 0;
        for (int j = k; j < team && pids[j] == pids[k]; j++)
            node += counts[j];
        if (p < shares + sizeof shares - 16)
            p += sprintf(p, "%s%.1f", nodes ? "," : "", 100.0 * (double)node / CHUNKS);
        nodes++;
    }
    printf("RESULT app=lookup mode=omp procs=%d size=%s time=%.6f check=%s entries=%ld "
           "lookups=%ld chunks=%d schedule=%s nodes=%d node_share=%s checksum=%016llx\n",
           team, size, secs, ok ? "ok" : "FAIL", n_entries, per_chunk * CHUNKS, CHUNKS,
           monotonic ? "monotonic:dynamic" : "dynamic", nodes, shares, (unsigned long long)sum);
    free(table);
    free(counts);
    free(pids);
    return ok ? 0 : 1;
}
