/*
 * blocks.c — block-partitioned arrays of records (blocks.h).
 */
#include "blocks.h"

#include <stdlib.h>

#include "par.h"

void block_range(int n, int cap, int q, int *lo, int *hi)
{
    *lo = q * cap < n ? q * cap : n;
    *hi = *lo + cap < n ? *lo + cap : n;
}

void block_array_init(struct block_array *a, size_t rec, int cap, int nblk,
                      void *(*alloc)(size_t size))
{
    a->rec = rec;
    a->cap = cap;
    a->stride = block_round_up((size_t)cap * rec, BLOCK_GRAIN);
    a->base = alloc(a->stride * (size_t)nblk);
}

void *block_alloc_shared(size_t size) { return par_alloc_home(size, PAR_HOME_BLOCK); }

void *block_alloc_private(size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        par_die("out of memory (%zu bytes)", size);
    return p;
}
