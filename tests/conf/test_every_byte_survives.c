/*
 * Every byte a race-free program writes survives (issue 54): the nodes
 * write neighbouring elements of shared arrays — elements of 1, 2, 4, 8
 * or 16 bytes, unaligned where the kind says so, so that one 32-bit or
 * 64-bit word holds elements of several writers — after a barrier at
 * which every node holds a copy of every page; then a barrier, and every
 * node checks every element. In C11 every byte is its own memory location:
 * two nodes writing different bytes of one word is race-free, and both
 * writes must survive under every protocol.
 *
 * Kinds:
 *   bool_flags          the program: a bool array of n elements
 *                       (1002 by default), read by every node (a sum that
 *                       must be 0), then every element set to true by the
 *                       node whose block (OpenMP's static split: the first
 *                       n % P blocks one longer) holds it, then counted;
 *                       each round on new arrays;
 *   chars               1-byte elements;
 *   shorts              2-byte elements, aligned;
 *   unaligned_ints      4-byte elements from byte 1 (each crosses a word);
 *   unaligned_longs     8-byte elements from byte 3;
 *   unaligned_16_bytes  16-byte elements from byte 5.
 * The writer of element i in round r: (i + r) mod P in rounds 0, 3, ...;
 * blocks in OpenMP's static split in rounds 1, 4, ... (the blocks' ends
 * fall inside words); a hash of (i, r) in rounds 2, 5, .... Every byte's
 * value changes from each round to the next, so a lost write shows. Two
 * arrays: one homed at its allocator (node 0; for bool_flags node r mod P
 * in round r), one cyclically over the nodes (allocated by the last node;
 * for bool_flags node (P - 1 + r) mod P). Every participant checks every
 * round and says what it lost; the job fails at the end if any did.
 * Every node's writes come before any node's release: after writing, each
 * node sends every other a go-ahead message (a port message carries no
 * consistency: the shared accesses stay ordered by the barriers alone)
 * and waits for theirs before the barrier. So the homes merge the writes
 * in a fixed order: without it, under erc a home's own writes and another
 * node's diff meet in the order the machine's timing gives, and on a
 * loaded machine the diffs of 32-bit words lost a write in only some runs.
 * With threads (test_every_byte_survives_thr, conf_threads.h) the writers
 * are the threads of every node, neighbours on one node as well as on two,
 * without the go-ahead (a port is its node's).
 * Usage: test_every_byte_survives KIND [elements] [rounds] [first byte]
 *   (the first byte: the elements' offset in the array, to try the other
 *   alignments by hand; the kind's by default).
 */
#include <stdbool.h>

#include "mp_util.h"

struct kind {
    const char *name;
    size_t      size;     /* bytes an element */
    size_t      offset;   /* the first element's byte in the array */
    size_t      elements; /* default count */
};

static const struct kind kinds[] = {
    {"bool_flags", sizeof(bool), 0, 1002},
    {"chars", 1, 0, 40000},
    {"shorts", 2, 0, 20000},
    {"unaligned_ints", 4, 1, 10000},
    {"unaligned_longs", 8, 3, 5000},
    {"unaligned_16_bytes", 16, 5, 2500},
};

/* The node this participant runs on (with threads, dsm_rank names the
 * participant: conf_threads.h). */
static int this_node(void)
{
#ifdef CONF_THREADS
    return conf_threads_node();
#else
    return dsm_rank();
#endif
}

/* The go-ahead: every node tells every other that its writes of a round
 * are done, and waits until all have said so (no consistency: a message). */
#ifndef CONF_THREADS
struct go_ahead {
    int port;
    dsm_port_ref *peer;
};

static struct go_ahead go_ahead_open(int me, int p)
{
    struct go_ahead g = {.port = dsm_port_create("every-byte", (unsigned)p + 1)};
    MP_CHECK(g.port >= 0, "dsm_port_create: %d", g.port);
    g.peer = calloc((size_t)p, sizeof *g.peer);
    MP_CHECK(g.peer, "out of memory");
    for (int k = 0; k < p; k++)
        if (k != me)
            MP_CHECK(dsm_port_lookup(k, "every-byte", 30, &g.peer[k]) == 0, "lookup of node %d", k);
    return g;
}

static void go_ahead_exchange(const struct go_ahead *g, int me, int p, int64_t round)
{
    for (int k = 0; k < p; k++)
        if (k != me)
            MP_CHECK(dsm_msg_send(&g->peer[k], &round, sizeof round, NULL, 0, DSM_FOREVER, NULL) == 0,
                     "go-ahead to node %d", k);
    for (int k = 1; k < p; k++) {
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(g->port, &m, DSM_FOREVER) == 0, "go-ahead");
        MP_CHECK(m.len == sizeof round && *(int64_t *)m.data == round,
                 "round %lld: a go-ahead from node %d of another round", (long long)round, m.src_node);
        dsm_msg_free(&m);
    }
}
#endif

static uint64_t hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Byte j of element i in round r: 0x9d more than the round before, so no
 * byte keeps its value from one round to the next. */
static unsigned char value_byte(size_t i, size_t j, int r)
{
    return (unsigned char)(hash(i * 16 + j + 1) + (uint64_t)r * 0x9d);
}

static void value(unsigned char *v, const struct kind *k, size_t i, int r)
{
    if (!strcmp(k->name, "bool_flags")) {
        v[0] = 1; /* true */
        return;
    }
    for (size_t j = 0; j < k->size; j++)
        v[j] = value_byte(i, j, r);
}

/* OpenMP's static split of n among p: the first n % p blocks one longer. */
static int block_owner(size_t i, size_t n, int p)
{
    size_t q = n / (size_t)p, rem = n % (size_t)p;
    size_t big = rem * (q + 1);
    if (i < big)
        return (int)(i / (q + 1));
    return (int)(rem + (i - big) / (q ? q : 1));
}

static int writer(const struct kind *k, size_t i, size_t n, int r, int p)
{
    if (!strcmp(k->name, "bool_flags"))
        return block_owner(i, n, p);
    switch (r % 3) {
    case 0:
        return (int)((i + (size_t)r) % (size_t)p);
    case 1:
        return block_owner(i, n, p);
    default:
        return (int)(hash(i * 131 + (size_t)r) % (size_t)p);
    }
}

/* Stores one element with one store of its size (an unaligned one where
 * the address is), as a program's assignment of that type does. */
static void store(unsigned char *p, const unsigned char *v, size_t size)
{
    switch (size) {
    case 1: { uint8_t x; memcpy(&x, v, 1); memcpy(p, &x, 1); break; }
    case 2: { uint16_t x; memcpy(&x, v, 2); memcpy(p, &x, 2); break; }
    case 4: { uint32_t x; memcpy(&x, v, 4); memcpy(p, &x, 4); break; }
    case 8: { uint64_t x; memcpy(&x, v, 8); memcpy(p, &x, 8); break; }
    default: { struct { uint64_t a, b; } x; memcpy(&x, v, 16); memcpy(p, &x, 16); break; }
    }
}

/* Checks every element of a against round r's values (r < 0: all zero);
 * returns the number wrong, and describes the first in *first. */
static size_t check(const unsigned char *a, const struct kind *k, size_t n, int r, int p,
                    char *first, size_t first_len)
{
    size_t wrong = 0;
    unsigned char want[16] = {0};
    for (size_t i = 0; i < n; i++) {
        const volatile unsigned char *e = a + k->offset + i * k->size;
        if (r >= 0)
            value(want, k, i, r);
        unsigned char got[16];
        for (size_t j = 0; j < k->size; j++)
            got[j] = e[j];
        if (memcmp(got, want, k->size) == 0)
            continue;
        if (wrong++ == 0) {
            size_t off = (size_t)((const unsigned char *)e - a), j = 0;
            while (got[j] == want[j])
                j++;
            snprintf(first, first_len,
                     "element %zu (array byte %zu, its byte %zu%s) written by participant %d: "
                     "0x%02x, expected 0x%02x",
                     i, off + j, j, (off + j) % 4 ? ", inside a 32-bit word" : "",
                     r >= 0 ? writer(k, i, n, r, p) : -1, got[j], want[j]);
        }
    }
    return wrong;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), p = dsm_nodes();
    const struct kind *k = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(argv[1], kinds[i].name))
            k = &kinds[i];
    if (!k) {
        if (me == 0)
            fprintf(stderr, "usage: test_every_byte_survives bool_flags|chars|shorts|unaligned_ints|"
                            "unaligned_longs|unaligned_16_bytes [elements] [rounds] [first byte]\n");
        exit(2);
    }
    struct kind kk = *k;
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : kk.elements;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (argc > 4)
        kk.offset = (size_t)atol(argv[4]);
    /* bool_flags sets each flag once: every round is the program
     * again, on new arrays (zeroed by dsm_malloc). */
    bool fresh = !strcmp(kk.name, "bool_flags");
    size_t bytes = kk.offset + n * kk.size;

    unsigned char *arrays[2] = {NULL, NULL};
    int alloc[2] = {0, 0};
    static const char *const array_name[2] = {"homed at its allocator", "homed cyclically"};
#ifndef CONF_THREADS
    struct go_ahead go = go_ahead_open(me, p);
    dsm_barrier(); /* every port exists before any go-ahead is sent */
#endif
    char first[256];
    size_t mine = 0, total_lost = 0;
    int rounds_lost = 0;
    for (int r = 0; r < rounds; r++) {
        if (r == 0 || fresh) {
            /* New arrays allocated by other participants each round, so
             * that the home's own writes and the others' diffs meet there
             * in either order. */
            if (r > 0 && me == alloc[0])
                dsm_free(arrays[0]);
            if (r > 0 && me == alloc[1])
                dsm_free(arrays[1]);
            alloc[0] = r % p;
            alloc[1] = (p - 1 + r) % p;
            if (me == alloc[0])
                arrays[0] = dsm_malloc(bytes);
            if (me == alloc[1])
                arrays[1] = dsm_malloc_home(bytes, DSM_HOME_CYCLIC);
            dsm_bcast(&arrays[0], sizeof arrays[0], alloc[0]);
            dsm_bcast(&arrays[1], sizeof arrays[1], alloc[1]);
        }
        /* Every node reads every element (what round r - 1 wrote, or zero):
         * each now holds a copy of every page, stale neighbours included. */
        for (int a = 0; a < 2; a++) {
            if (r == 0 || fresh) {
                size_t wrong = check(arrays[a], &kk, n, -1, p, first, sizeof first);
                MP_CHECK(wrong == 0, "%s, array %s, a new block: %zu of %zu elements not zero; "
                         "first: %s", kk.name, array_name[a], wrong, n, first);
            } else {
                unsigned sum = 0;
                for (size_t b = 0; b < bytes; b++)
                    sum += ((volatile unsigned char *)arrays[a])[b];
                (void)sum;
            }
        }
        dsm_barrier();
        unsigned char v[16];
        for (int a = 0; a < 2; a++)
            for (size_t i = 0; i < n; i++)
                if (writer(&kk, i, n, r, p) == me) {
                    value(v, &kk, i, r);
                    store(arrays[a] + kk.offset + i * kk.size, v, kk.size);
                    mine++;
                }
#ifndef CONF_THREADS
        go_ahead_exchange(&go, me, p, r);
#endif
        dsm_barrier();
        size_t lost = 0;
        for (int a = 0; a < 2; a++) {
            size_t wrong = check(arrays[a], &kk, n, r, p, first, sizeof first);
            if (wrong)
                fprintf(stderr, "node %d participant %d: %s, array %s, round %d: %zu of %zu writes "
                                "lost (%zu survive); first: %s\n",
                        this_node(), me, kk.name, array_name[a], r, wrong, n,
                        n - wrong, first);
            lost += wrong;
        }
        total_lost += lost;
        rounds_lost += lost > 0;
        dsm_barrier(); /* no one writes round r + 1 while another checks round r */
    }
#ifndef CONF_THREADS
    free(go.peer);
#endif
    MP_CHECK(total_lost == 0, "%s: %zu of %zu writes lost, in %d of %d rounds (lines above)",
             kk.name, total_lost, 2 * n * (size_t)rounds, rounds_lost, rounds);
    if (me == 0)
        printf("every_byte_survives: %s, %d participants, %zu elements of %zu bytes from byte %zu, "
               "%d rounds x 2 arrays: every write survives (participant 0 wrote %zu)\n",
               kk.name, p, n, kk.size, kk.offset, rounds, mine);
    dsm_finish();
    return 0;
}
