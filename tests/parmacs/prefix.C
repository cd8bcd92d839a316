/*
 * prefix.C — a parallel prefix over a tree of PAUSE flags, as SPLASH-2's
 * radix sort computes its global ranks, for the PARMACS macro files.
 *
 *   prefix [-pP] [-rR]    P processes (a power of two), R rounds
 *
 * Each process counts keys into R_BINS bins (its leaf of the tree) and
 * sets its leaf's flag (SETPAUSE). The left-most process of each subtree
 * waits for both children (WAITPAUSE), adds them into the parent and sets
 * its flag; then each process adds the disjoint subtrees that cover the
 * processes before it, waiting for each, to get its exclusive prefix. A
 * barrier, every flag cleared by its writer (CLEARPAUSE), and the next
 * round with other keys. Every prefix is checked against a direct sum.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

MAIN_ENV

#define R_BINS 64
#define MAXP   64

struct prefix_node {
    long densities[R_BINS];
    PAUSEDEC(done)
};

struct GlobalMemory {
    LOCKDEC(idlock)
    long id;
    BARDEC(bar)
    long leaf_copy[MAXP][R_BINS];    /* for the check */
    struct prefix_node tree[2 * MAXP];
};

struct GlobalMemory *Global;
long P = 2;
long ROUNDS = 4;
long wrong;                          /* set by any process, read by the master */
long levels;

/* node of level l (0: leaves) covering processes [j << l, (j + 1) << l) */
static struct prefix_node *node(long l, long j)
{
    long at = 0;
    for (long i = 0; i < l; i++)
        at += P >> i;
    return &Global->tree[at + j];
}

static long key_count(long round, long proc, long bin)
{
    return (round * 7 + proc * 13 + bin * 3) % 11;
}

void SlaveStart(void)
{
    long MyNum;
    LOCK(Global->idlock)
    MyNum = Global->id++;
    UNLOCK(Global->idlock)

    for (long round = 0; round < ROUNDS; round++) {
        struct prefix_node *leaf = node(0, MyNum);
        for (long b = 0; b < R_BINS; b++)
            leaf->densities[b] = Global->leaf_copy[MyNum][b] = key_count(round, MyNum, b);
        SETPAUSE(leaf->done)
        /* up: the left-most process of each subtree fills its parent */
        for (long l = 0; l < levels; l++) {
            if (MyNum % (2L << l))
                break;
            struct prefix_node *left = node(l, MyNum >> l), *right = node(l, (MyNum >> l) + 1);
            struct prefix_node *parent = node(l + 1, MyNum >> (l + 1));
            WAITPAUSE(left->done)
            WAITPAUSE(right->done)
            for (long b = 0; b < R_BINS; b++)
                parent->densities[b] = left->densities[b] + right->densities[b];
            SETPAUSE(parent->done)
        }
        /* my exclusive prefix: the aligned subtrees that cover [0, MyNum) */
        long prefix[R_BINS] = {0};
        long covered = 0;
        for (long l = levels; l >= 0; l--) {
            if (covered + (1L << l) <= MyNum) {
                struct prefix_node *n = node(l, covered >> l);
                WAITPAUSE(n->done)
                for (long b = 0; b < R_BINS; b++)
                    prefix[b] += n->densities[b];
                covered += 1L << l;
            }
        }
        BARRIER(Global->bar, P)
        for (long b = 0; b < R_BINS; b++) {
            long expect = 0;
            for (long p = 0; p < MyNum; p++)
                expect += Global->leaf_copy[p][b];
            if (prefix[b] != expect) {
                LOCK(Global->idlock)
                wrong++;
                UNLOCK(Global->idlock)
                break;
            }
        }
        /* each node's flag is cleared by the process that set it */
        CLEARPAUSE(leaf->done)
        for (long l = 0; l < levels && MyNum % (2L << l) == 0; l++)
            CLEARPAUSE(node(l + 1, MyNum >> (l + 1))->done)
        BARRIER(Global->bar, P)
    }
}

static void InitEnv(void)
{
    MAIN_INITENV()
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "p:r:")) != -1) {
        switch (c) {
        case 'p': P = atol(optarg); break;
        case 'r': ROUNDS = atol(optarg); break;
        default: fprintf(stderr, "usage: prefix [-pP] [-rR]\n"); exit(2);
        }
    }
    if (P < 1 || P > MAXP || (P & (P - 1))) {
        fprintf(stderr, "prefix: P must be a power of two up to %d\n", MAXP);
        exit(2);
    }
    while ((1L << levels) < P)
        levels++;
    /* G_MALLOC before MAIN_INITENV, and MAIN_INITENV outside main */
    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    InitEnv();
    Global->id = 0;
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar)
    for (long i = 0; i < 2 * P; i++)
        PAUSEINIT(Global->tree[i].done)

    for (long i = 1; i < P; i++)
        CREATE(SlaveStart)
    SlaveStart();
    WAIT_FOR_END(P - 1)

    printf("prefix tree: %ld processes, %ld rounds: %s\n", P, ROUNDS, wrong ? "WRONG" : "ok");
    if (wrong)
        exit(1);
    MAIN_END
}
