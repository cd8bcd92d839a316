/*
 * blocks.h — what the particle codes (nbody.c, water.c) share: arrays of
 * per-item records split into one contiguous block per process.
 *
 * Layout for a page-based DSM: each block is padded to BLOCK_GRAIN and,
 * in the shared arrays, homed on the process that owns it
 * (PAR_HOME_BLOCK), so a process's writes never share a page with
 * another's, and its remote reads are whole pages of another's block.
 * The reference runs of the self-checks lay the same arrays out in
 * private memory, as one block.
 */
#ifndef BLOCKS_H
#define BLOCKS_H
#include <stddef.h>

/* Blocks are padded to 64 KiB, the largest coherence unit DSM_PAGE_SIZE
 * allows, so every process's block starts on a page of its own whatever
 * the page size; pages past a block's end are never touched. */
#define BLOCK_GRAIN ((size_t)64 * 1024)

/* One array of `rec`-byte records, split in blocks of `cap` items, block
 * q at base + q * stride. */
struct block_array {
    char  *base;
    size_t stride, rec; /* bytes per block, per item */
    int    cap;
};

/* Item i's record. Inline: the kernels' inner loops resolve records. */
static inline double *block_at(const struct block_array *a, int i)
{
    return (double *)(a->base + (size_t)(i / a->cap) * a->stride + (size_t)(i % a->cap) * a->rec);
}

static inline size_t block_round_up(size_t x, size_t g) { return (x + g - 1) / g * g; }

/* Items per block when n items are split in nblk blocks. */
static inline int block_cap(int n, int nblk) { return (n + nblk - 1) / nblk; }

/* Process q's items lo..hi-1 of n in blocks of cap (empty past the end). */
void block_range(int n, int cap, int q, int *lo, int *hi);

/* Lays out a: nblk blocks of cap records of rec bytes, from alloc. */
void block_array_init(struct block_array *a, size_t rec, int cap, int nblk,
                      void *(*alloc)(size_t size));

/* The allocators for block_array_init. Shared: collective, every block on
 * its owner (par_alloc_home, PAR_HOME_BLOCK). Private: zeroed, or the job
 * ends. */
void *block_alloc_shared(size_t size);
void *block_alloc_private(size_t size);
#endif
