/*
 * radix.c — SPLASH-2 Radix: a parallel least-significant-digit radix sort
 * of integer keys, written from the algorithm's description (Blelloch et
 * al., "A comparison of sorting algorithms for the Connection Machine
 * CM-2", 1991, as SPLASH-2 implements it).
 *
 *   radix [--size test|quick|full] [-n KEYS] [-r RADIX_BITS] [-m KEY_BITS]
 *
 * n keys, uniformly random in 0 .. 2^m - 1, are sorted in ceil(m / r)
 * passes of one r-bit digit each, least significant first (SPLASH's
 * defaults: radix 1024, keys below 2^19 — m = 19 needs 2 passes; we keep
 * r = 10 and take m = 30, 3 passes, since in 2^19 values most of 4M or
 * 64M keys would be repeats). The keys are split into one contiguous
 * chunk per process. Each pass, as in SPLASH:
 *
 *   1. every process counts the digits of its own chunk: a private
 *      histogram of 2^r buckets;
 *   2. it writes the histogram to its row of a shared table; barrier;
 *   3. the prefix across processes: every process sums the table into its
 *      own rank for each digit value d, the number of keys that go before
 *      its first key of digit d: all keys of smaller digits (every
 *      process's) plus the keys of digit d held by processes before it.
 *      SPLASH builds these sums with a binary tree of processes; with the
 *      few nodes we run, each process summing the P rows itself costs
 *      P * 2^r additions and no more synchronisation than the tree's last
 *      level (the one barrier above);
 *   4. the permutation: every process walks its chunk in order and writes
 *      each key to the destination array at its digit's rank, then bumps
 *      the rank. Keys of one digit value from one process land together,
 *      but the 2^r runs of each process are spread over the whole
 *      destination array: every process writes into nearly every page of
 *      it, which is what makes Radix hard for a page-based DSM;
 *   5. barrier; source and destination swap.
 * Each pass is stable, so after the last the array is sorted.
 *
 * Layout: the key arrays are contiguous (a key's rank is its index) and
 * homed in one block of pages per process (PAR_HOME_BLOCK), which is
 * where its chunk lies (exactly, when n / P is a multiple of 16K keys; at
 * most a page shared at each boundary otherwise): a chunk's reads in steps
 * 1 and 4 are local, and only the scattered writes of step 4 travel. The
 * histogram rows are each padded to 64 KiB, so homed on their writers.
 *
 * Self-check, after the timed section: every process checks that its
 * chunk of the result is in order and not below the last key of the chunk
 * before; and the multiset of keys is unchanged: the sum (mod 2^64) of a
 * 64-bit mix of every key, taken over the input as it is generated and
 * over the output, must agree (a lost, doubled or corrupted key changes it
 * with probability 1 - 2^-64). That sum is the RESULT line's checksum, the
 * same for any number of processes and any build.
 */
#include "par.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Histogram rows and the check's slots start on a 64 KiB boundary, the largest
 * coherence unit (DSM_PAGE_SIZE) allows, so no two processes' share a page. */
#define GRAIN ((size_t)64 * 1024)

static size_t round_up(size_t x, size_t g) { return (x + g - 1) / g * g; }

/* Key i of the input: a hash of its index, so each process makes its own
 * chunk and nobody needs the rest. */
static uint32_t key_of(uint64_t i, int bits)
{
    uint64_t z = i * 0x9e3779b97f4a7c15ull + 0x7261646978ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (uint32_t)(z >> (64 - bits));
}

/* The multiset hash's mix of one key (splitmix64's finaliser). */
static uint64_t mix(uint32_t k)
{
    uint64_t z = (uint64_t)k + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct sort {
    long      n;          /* keys */
    int       rbits, mbits, passes;
    size_t    cap;        /* keys per chunk (the last may hold fewer) */
    uint32_t *keys[2];    /* source and destination, swapping each pass */
    uint64_t *hist;       /* P rows of 2^r counts, each row `hstride` apart */
    size_t    hstride;    /* counts between rows */
};

static void chunk(const struct sort *s, int q, long *lo, long *hi)
{
    long a = (long)(s->cap * (size_t)q), b = a + (long)s->cap;
    *lo = a < s->n ? a : s->n;
    *hi = b < s->n ? b : s->n;
}

/* One pass on digit `shift`: src's keys into dst, stably by that digit.
 * count and rank are private scratch of 2^r entries. */
static void pass(const struct sort *s, const uint32_t *src, uint32_t *dst, int shift,
                 uint64_t *count, uint64_t *rank)
{
    int p = par_n(), me = par_id();
    size_t buckets = (size_t)1 << s->rbits;
    uint32_t mask = (uint32_t)(buckets - 1);
    long lo, hi;
    chunk(s, me, &lo, &hi);

    memset(count, 0, buckets * sizeof *count);
    for (long i = lo; i < hi; i++)
        count[(src[i] >> shift) & mask]++;
    memcpy(s->hist + (size_t)me * s->hstride, count, buckets * sizeof *count);
    par_barrier();

    /* rank[d] = keys of smaller digits anywhere + keys of digit d before me */
    uint64_t below = 0;
    for (size_t d = 0; d < buckets; d++) {
        uint64_t before_me = 0, all = 0;
        for (int q = 0; q < p; q++) {
            uint64_t c = s->hist[(size_t)q * s->hstride + d];
            if (q < me)
                before_me += c;
            all += c;
        }
        rank[d] = below + before_me;
        below += all;
    }

    for (long i = lo; i < hi; i++) {
        uint32_t k = src[i];
        dst[rank[(k >> shift) & mask]++] = k;
    }
    /* every key is in place before anyone reads dst or rewrites hist */
    par_barrier();
}

static void radix_sort(struct sort *s)
{
    size_t buckets = (size_t)1 << s->rbits;
    uint64_t *count = malloc(buckets * sizeof *count), *rank = malloc(buckets * sizeof *rank);
    if (!count || !rank)
        par_die("out of memory");
    for (int k = 0; k < s->passes; k++)
        pass(s, s->keys[k % 2], s->keys[(k + 1) % 2], k * s->rbits, count, rank);
    free(count);
    free(rank);
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: radix [--size test|quick|full] [-n KEYS] [-r RADIX_BITS] [-m KEY_BITS]\n"
               "             [--home block|first-touch|cyclic|default]\n"
               "  --size S  test: 2^13 keys; quick: 2^16; full (default): 2^26 (64M)\n"
               "            (SPLASH-2's default: -n 262144)\n"
               "  -n N      keys, 1..2^28\n"
               "  -r R      bits per digit, 1..16 (SPLASH's radix 1024: 10)\n"
               "  -m M      keys are below 2^M, 1..32 (default 30)\n"
               "  --home H  home of the key arrays' pages (dsm build): block (default: each\n"
               "            chunk at its process), first-touch, cyclic, or default\n"
               "            (DSM_HOME's policy, the allocating node unless set)\n");
}

struct slot { uint64_t in, out; long disorder; }; /* one per process, its own page */

int par_main(int argc, char **argv)
{
    int n = 1 << 26, rbits = 10, mbits = 30, home = PAR_HOME_BLOCK;
    struct arg_option options[] = {
        {"--size", ARG_WORD, &n, PAR_SIZE_WANT, .words = par_size_words,
         .values = (const int[]){1 << 13, 1 << 16, 1 << 26}},
        {"-n", ARG_INT, &n, "a key count 1..268435456", .overrides = true, .lo = 1,
         .hi = 1 << 28},
        {"-r", ARG_INT, &rbits, "digit bits 1..16", .overrides = true, .lo = 1, .hi = 16},
        {"-m", ARG_INT, &mbits, "key bits 1..32", .overrides = true, .lo = 1, .hi = 32},
        {"--home", ARG_WORD, &home, "block, first-touch, cyclic or default",
         .words = (const char *const[]){"block", "first-touch", "cyclic", "default", NULL},
         .values = (const int[]){PAR_HOME_BLOCK, PAR_HOME_FIRST_TOUCH, PAR_HOME_CYCLIC,
                                 PAR_HOME_DEFAULT}},
        {0}};
    int rc = par_parse_args(argc, argv, options, usage);
    if (rc != ARGS_RUN)
        return rc;

    int p = par_n(), me = par_id();
    struct sort s = {.n = n, .rbits = rbits, .mbits = mbits};
    s.passes = (mbits + rbits - 1) / rbits;
    s.cap = ((size_t)n + (size_t)p - 1) / (size_t)p;
    for (int k = 0; k < 2; k++)
        s.keys[k] = par_alloc_home(round_up(s.cap * (size_t)p * sizeof(uint32_t), GRAIN),
                                   (enum par_home)home);
    s.hstride = round_up(((size_t)1 << rbits) * sizeof(uint64_t), GRAIN) / sizeof(uint64_t);
    s.hist = par_alloc_home(s.hstride * (size_t)p * sizeof(uint64_t), PAR_HOME_BLOCK);
    struct slot *slots = par_alloc_home((size_t)p * GRAIN, PAR_HOME_BLOCK);
    struct slot *mine = (struct slot *)((char *)slots + (size_t)me * GRAIN);

    long lo, hi;
    chunk(&s, me, &lo, &hi);
    for (long i = lo; i < hi; i++) {
        s.keys[0][i] = key_of((uint64_t)i, mbits);
        mine->in += mix(s.keys[0][i]);
    }

    par_timer_start();
    radix_sort(&s);
    double t = par_timer_stop();

    /* the check: my chunk in order, after the previous chunk's last key */
    const uint32_t *out = s.keys[s.passes % 2];
    for (long i = lo; i < hi; i++) {
        mine->out += mix(out[i]);
        if (i > 0 && out[i - 1] > out[i])
            mine->disorder++;
    }
    par_barrier();
    bool ok = true;
    char extra[160] = "";
    if (me == 0) {
        struct slot all = {0, 0, 0};
        for (int q = 0; q < p; q++) {
            const struct slot *o = (const struct slot *)((const char *)slots + (size_t)q * GRAIN);
            all.in += o->in;
            all.out += o->out;
            all.disorder += o->disorder;
        }
        ok = all.in == all.out && all.disorder == 0;
        if (!ok)
            fprintf(stderr,
                    "radix: FAILED: %ld keys out of order; multiset hash of the output %016llx, "
                    "of the input %016llx\n",
                    all.disorder, (unsigned long long)all.out, (unsigned long long)all.in);
        snprintf(extra, sizeof extra, "radix=%d keybits=%d passes=%d checksum=%016llx",
                 1 << rbits, mbits, s.passes, (unsigned long long)all.out);
    }
    char size[32];
    snprintf(size, sizeof size, "%d", n);
    return par_report("radix", size, t, ok, extra);
}
