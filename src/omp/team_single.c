/*
 * team_single.c — the constructs one thread of the team runs: single
 * (the first to arrive, as node 0 decides), master and masked (by thread
 * number), and copyprivate, the single's broadcast of its variables to
 * the rest of the team.
 *
 * They run on the team's threads in the region's code. A single asks
 * node 0 as a dynamic loop's chunk does (parallel_single); copyprivate
 * publishes in the team's shared words (shared memory, region.c) and
 * meets the team at two barriers (__kmpc_barrier, team_sync.c). A single
 * or master met in a team tells the tasks (omp_tasks_single_met, task.c):
 * the team's next barrier waits for the tasks other nodes offer.
 */
#include <stdint.h>
#include <string.h>

#include "base/log.h"
#include "mem/mem.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

/* single: the first thread of the team to arrive runs it, as libomp's
 * does: node 0 decides, as it hands out a dynamic loop's chunks (one
 * request and one reply; node 0's own is answered in place). Another
 * choice (always the master) would deadlock a `single nowait` that waits
 * for another single's work, which OpenMP allows. */
kmp_int32 __kmpc_single(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    int mine = 1;
    if (t->nthreads > 1) {
        t->loop++;
        t->since_barrier++;
        mine = parallel_single((struct loop_id){t->team, t->loop}, t->nthreads);
        omp_tasks_single_met();
    }
    if (omp_tool_on) { /* ompt_work_single_executor 3, single_other 4 */
        const void *codeptr = __builtin_return_address(0);
        omp_tool_work(mine ? 3 : 4, true, 1, codeptr);
        if (!mine)
            omp_tool_work(4, false, 1, codeptr);
    }
    return mine;
}

void __kmpc_end_single(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (omp_tool_on)
        omp_tool_work(3, false, 1, __builtin_return_address(0));
}

kmp_int32 __kmpc_master(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    t->since_barrier++;
    if (t->nthreads > 1)
        omp_tasks_single_met(); /* the master may make tasks there, as a single's winner */
    if (t->tid == 0 && omp_tool_on)
        omp_tool_masked(true, __builtin_return_address(0));
    return t->tid == 0;
}

void __kmpc_end_master(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (omp_tool_on)
        omp_tool_masked(false, __builtin_return_address(0));
}

kmp_int32 __kmpc_masked(ident_t *loc, kmp_int32 gtid, kmp_int32 filter)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    t->since_barrier++;
    if (t->nthreads > 1)
        omp_tasks_single_met();
    if (t->tid == filter && omp_tool_on)
        omp_tool_masked(true, __builtin_return_address(0));
    return t->tid == filter;
}

void __kmpc_end_masked(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (omp_tool_on)
        omp_tool_masked(false, __builtin_return_address(0));
}

/* copyprivate: the thread that ran the single publishes where its
 * variables are, the others copy them (cpy_func, the compiler's) after a
 * barrier, and a second barrier keeps the source alive until all have.
 * The master's variables are on its stack in shared memory, readable
 * everywhere as they are. Another node's are in its private memory: it
 * copies each into a shared block first (copyprivate_blob), from the
 * variable's address to the end of what holds it (its stack above the
 * region's frames, or its threadprivate copy), and the others read them
 * there. */
struct cp_entry {
    uint64_t offset; /* in the blob; UINT64_MAX: the address itself is shared */
    uint64_t addr;
};

/* A stack variable is copied with the frames above it, which under
 * AddressSanitizer hold poisoned redzones between locals: there the copy
 * goes byte by byte, unchecked (copyprivate is rare and small). */
#ifdef __SANITIZE_ADDRESS__
__attribute__((no_sanitize("address")))
static void copy_frames(void *dst, const void *src, size_t n)
{
    const volatile unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
}
#else
static void copy_frames(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif

static void *copyprivate_blob(struct omp_thread *t, void **src, size_t n)
{
    size_t bytes = sizeof(uint64_t) + n * sizeof(struct cp_entry);
    size_t len[OMP_MAX_ARGS];
    for (size_t i = 0; i < n; i++) {
        char *p = src[i];
        size_t tp = omp_threadprivate_extent(p);
        if (mem_contains(p))
            len[i] = 0;
        else if (tp)
            len[i] = tp;
        else if (p < t->stack_hi && p >= (char *)__builtin_frame_address(0))
            len[i] = (size_t)(t->stack_hi - p);
        else
            log_fatal("copyprivate: a variable at %p is neither on the thread's stack, nor "
                      "threadprivate, nor shared memory; dsm cannot broadcast it",
                      (void *)p);
        bytes += len[i];
    }
    unsigned char *blob = dsm_malloc(bytes);
    if (!blob)
        log_fatal("no shared memory for copyprivate's %zu bytes", bytes);
    uint64_t count = n;
    memcpy(blob, &count, sizeof count);
    struct cp_entry *e = (struct cp_entry *)(blob + sizeof count);
    size_t at = sizeof count + n * sizeof *e;
    for (size_t i = 0; i < n; i++) {
        e[i] = (struct cp_entry){.offset = len[i] ? at : UINT64_MAX, .addr = (uintptr_t)src[i]};
        copy_frames(blob + at, src[i], len[i]);
        at += len[i];
    }
    return blob;
}

void __kmpc_copyprivate(ident_t *loc, kmp_int32 gtid, size_t cpy_size, void *cpy_data,
                        void (*cpy_func)(void *, void *), kmp_int32 didit)
{
    struct omp_thread *t = omp_self();
    if (t->nthreads <= 1)
        return;
    size_t n = cpy_size / sizeof(void *);
    if (n > OMP_MAX_ARGS)
        log_fatal("copyprivate of %zu variables; dsm supports at most %d", n, OMP_MAX_ARGS);
    void *blob = NULL;
    if (didit) {
        blob = t->tid == 0 ? NULL : copyprivate_blob(t, cpy_data, n);
        t->region->shared->copyprivate_src = (uint64_t)(uintptr_t)(blob ? blob : cpy_data);
        t->region->shared->copyprivate_blob = blob != NULL;
    }
    __kmpc_barrier(loc, gtid);
    if (!didit) {
        void *src = (void *)(uintptr_t)t->region->shared->copyprivate_src;
        if (t->region->shared->copyprivate_blob) {
            unsigned char *b = src;
            const struct cp_entry *e = (const struct cp_entry *)(b + sizeof(uint64_t));
            void *list[OMP_MAX_ARGS];
            for (size_t i = 0; i < n; i++)
                list[i] = e[i].offset == UINT64_MAX ? (void *)(uintptr_t)e[i].addr
                                                    : b + e[i].offset;
            cpy_func(cpy_data, list);
        } else
            cpy_func(cpy_data, src);
    }
    /* Nobody may change the source before everyone has copied it. */
    __kmpc_barrier(loc, gtid);
    if (blob)
        dsm_free(blob);
}
