/*
 * pt_realloc — realloc and malloc_usable_size of a block another thread
 * allocated, which may run on another node, as in one process:
 *
 *   pt_realloc W
 *
 * main allocates blocks of small and page sizes and fills them; W threads
 * start. In each round every thread reallocs, larger and then smaller,
 * the blocks its neighbour allocated or last resized (main's in the first
 * round), checks their contents and malloc_usable_size, and refills them.
 * After the join, main does the same to the threads' blocks. Prints
 * "pt_realloc: ok", or what went wrong.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 6
#define ROUNDS 3
#define MAXW   16

static const size_t sizes[BLOCKS] = {24, 100, 1000, 3000, 20000, 70000};
static unsigned char *block[MAXW][BLOCKS];
static size_t len[MAXW][BLOCKS];
static int nthreads, bad;
static pthread_barrier_t round_end;
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned char byte_at(int owner, int b, size_t i, int gen)
{
    return (unsigned char)(owner * 31 + b * 7 + gen * 13 + i % 251);
}

static void fill(int slot, int b, int gen)
{
    for (size_t i = 0; i < len[slot][b]; i++)
        block[slot][b][i] = byte_at(slot, b, i, gen);
}

static void fail(const char *what, int slot, int b, size_t at)
{
    pthread_mutex_lock(&bad_lock);
    if (bad++ < 5)
        printf("BAD: %s: slot %d block %d at %zu\n", what, slot, b, at);
    pthread_mutex_unlock(&bad_lock);
}

/* The block's bytes up to n must be generation gen's. */
static void check(int slot, int b, size_t n, int gen, const char *when)
{
    for (size_t i = 0; i < n; i++)
        if (block[slot][b][i] != byte_at(slot, b, i, gen)) {
            fail(when, slot, b, i);
            return;
        }
}

/* Block b of slot, realloc'ed to n bytes: its first `keep` bytes must be
 * generation gen's still, and malloc_usable_size at least n. */
static void resize(int slot, int b, size_t n, size_t keep, int gen, const char *what)
{
    unsigned char *p = realloc(block[slot][b], n);
    if (!p) {
        fail(what, slot, b, n);
        return;
    }
    block[slot][b] = p;
    check(slot, b, keep, gen, what);
    if (malloc_usable_size(p) < n)
        fail("malloc_usable_size below the size asked", slot, b, n);
}

/* Slot's blocks, written at generation gen: larger, then smaller than
 * they were, each checked; then back to their size, refilled at gen + 1. */
static void resize_slot(int slot, int gen)
{
    for (int b = 0; b < BLOCKS; b++) {
        size_t was = len[slot][b], smaller = was / 2 + 1;
        if (malloc_usable_size(block[slot][b]) < was)
            fail("malloc_usable_size below the size asked", slot, b, was);
        resize(slot, b, was * 3 + 17, was, gen, "realloc larger");
        resize(slot, b, smaller, smaller, gen, "realloc smaller");
        resize(slot, b, was, smaller, gen, "realloc back");
        fill(slot, b, gen + 1);
    }
}

static void *thread(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int round = 0; round < ROUNDS; round++) {
        /* Round 0: main's blocks (slot 0 .. W-1, filled by main); later:
         * the neighbour's, which it resized in the round before. */
        resize_slot((me + round) % nthreads, round);
        pthread_barrier_wait(&round_end);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 3;
    if (nthreads < 1 || nthreads > MAXW) {
        fprintf(stderr, "usage: pt_realloc THREADS (1 to %d)\n", MAXW);
        return 2;
    }
    for (int s = 0; s < nthreads; s++)
        for (int b = 0; b < BLOCKS; b++) {
            len[s][b] = sizes[b] + (size_t)s;
            block[s][b] = malloc(len[s][b]);
            fill(s, b, 0);
        }
    pthread_barrier_init(&round_end, NULL, (unsigned)nthreads);
    pthread_t t[MAXW];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, thread, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    for (int s = 0; s < nthreads; s++)
        resize_slot(s, ROUNDS);
    for (int s = 0; s < nthreads; s++)
        for (int b = 0; b < BLOCKS; b++) {
            check(s, b, len[s][b], ROUNDS + 1, "main's last check");
            free(block[s][b]);
        }
    if (bad)
        printf("pt_realloc: %d failures\n", bad);
    else
        printf("pt_realloc: ok\n");
    return bad != 0;
}
