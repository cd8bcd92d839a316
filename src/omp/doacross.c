/*
 * doacross.c — loops with cross-iteration dependences: `ordered(n)` with
 * `ordered depend(sink: ...)` / `depend(source)` (OpenMP 5.1 §2.19.9).
 *
 * Each iteration of the loop nest has a word in shared memory, set when the
 * iteration posts (depend(source)); a wait (depend(sink: vec)) polls the
 * word of iteration vec with a flush between reads (sync/flush.c), so the
 * poster's writes before its post are seen once the wait ends (the post
 * flushes after setting the word). Words, not bytes: diffs are made of
 * 32-bit words, and two nodes setting neighbouring bytes would undo each
 * other's. The words are the team's: thread 0 allocates them and the team
 * meets once (a barrier) before the loop, after which the previous loop's
 * words are no longer used and are freed; the region's end frees the last.
 * Every iteration's word costs 4 bytes of shared memory while the loop
 * runs.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

struct kmp_dim {
    kmp_int64 lo, up, st; /* bounds and stride, as clang passes them */
};

#define DOACROSS_MAX_DIMS 8

static DSM_STATE struct {
    int       ndims;
    kmp_int64 lo[DOACROSS_MAX_DIMS], st[DOACROSS_MAX_DIMS];
    uint64_t  count[DOACROSS_MAX_DIMS];
    uint64_t  total;
    uint32_t *done;
} da;

/* The iteration's number in the nest, row-major; false outside it. */
static bool linear(const kmp_int64 *vec, uint64_t *out)
{
    uint64_t at = 0;
    for (int d = 0; d < da.ndims; d++) {
        kmp_int64 off = vec[d] - da.lo[d];
        if ((da.st[d] > 0 && off < 0) || (da.st[d] < 0 && off > 0) || off % da.st[d])
            return false;
        uint64_t i = (uint64_t)(off / da.st[d]);
        if (i >= da.count[d])
            return false;
        at = at * da.count[d] + i;
    }
    *out = at;
    return true;
}

void __kmpc_doacross_init(ident_t *loc, kmp_int32 gtid, kmp_int32 num_dims,
                          const struct kmp_dim *dims)
{
    struct omp_thread *t = omp_self();
    if (num_dims < 1 || num_dims > DOACROSS_MAX_DIMS)
        log_fatal("ordered(%d): dsm supports doacross loops of 1 to %d dimensions", num_dims,
                  DOACROSS_MAX_DIMS);
    da.ndims = num_dims;
    da.total = 1;
    for (int d = 0; d < num_dims; d++) {
        if (dims[d].st == 0)
            log_fatal("ordered(%d): dimension %d has a zero stride", num_dims, d);
        da.lo[d] = dims[d].lo;
        da.st[d] = dims[d].st;
        kmp_int64 span = dims[d].up - dims[d].lo;
        da.count[d] = (span >= 0) == (dims[d].st > 0) ? (uint64_t)(span / dims[d].st) + 1 : 0;
        da.total *= da.count[d];
    }
    if (t->nthreads <= 1) {
        da.done = NULL; /* one thread runs the iterations in order: nothing to wait for */
        return;
    }
    struct omp_region *r = t->region;
    uint32_t *previous = (uint32_t *)(uintptr_t)r->doacross_prev;
    if (t->tid == 0) {
        void *words = dsm_malloc(da.total ? da.total * sizeof(uint32_t) : sizeof(uint32_t));
        if (!words)
            log_fatal("no shared memory for the %llu iterations of an ordered(%d) loop",
                      (unsigned long long)da.total, num_dims);
        r->doacross = (uint64_t)(uintptr_t)words;
    }
    __kmpc_barrier(loc, gtid);
    da.done = (uint32_t *)(uintptr_t)r->doacross;
    if (t->tid == 0) {
        if (previous)
            dsm_free(previous);
        r->doacross_prev = r->doacross;
    }
}

void __kmpc_doacross_wait(ident_t *loc, kmp_int32 gtid, const kmp_int64 *vec)
{
    (void)loc, (void)gtid;
    uint64_t i;
    if (!da.done || !linear(vec, &i))
        return; /* a sink outside the iteration space is ignored */
    while (!__atomic_load_n(&da.done[i], __ATOMIC_RELAXED))
        sync_flush();
    sync_flush(); /* the poster's writes, if the word was seen without one */
}

void __kmpc_doacross_post(ident_t *loc, kmp_int32 gtid, const kmp_int64 *vec)
{
    (void)loc, (void)gtid;
    uint64_t i;
    if (!da.done || !linear(vec, &i))
        return;
    sync_flush(); /* the iteration's writes before its word */
    da.done[i] = 1;
    sync_flush();
}

void __kmpc_doacross_fini(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    da.done = NULL; /* freed by the next loop's thread 0, or the region's end */
}

/* At the master, once the region has ended. */
void omp_doacross_region_end(struct omp_region *r)
{
    if (r->doacross_prev)
        dsm_free((void *)(uintptr_t)r->doacross_prev);
    r->doacross = r->doacross_prev = 0;
}
