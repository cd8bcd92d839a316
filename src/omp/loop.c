/*
 * loop.c — worksharing loops: the static bounds clang asks for
 * (__kmpc_for_static_init_*) and the chunks it takes one by one
 * (__kmpc_dispatch_*), for every integer width clang uses.
 *
 * Under LLVM's interface the runtime, not the compiler, divides a static
 * loop, so dsm can re-partition static loops (seed 003's profiled schedule)
 * without recompiling; dynamic and guided chunks come from node 0
 * (src/parallel/dispatch.c): from a pool of each node's own, unless the
 * loop is monotonic (the modifier given, or ordered), whose chunks come
 * in order from one counter. Ordered loops take turns there too, and pass
 * the ordered part's writes on with a lock.
 */
#include <stdbool.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

enum { ORDERED_LOCK = PARALLEL_LOCK_BASE + 1 };

int kmp_sched_base(kmp_int32 schedule, int *ordered)
{
    int s = schedule & ~(KMP_SCH_MODIFIER_MONOTONIC | KMP_SCH_MODIFIER_NONMONOTONIC);
    if (s >= kmp_nm_lower && s < kmp_nm_upper)
        s -= kmp_nm_lower - kmp_sch_lower;
    *ordered = s >= kmp_ord_lower && s < kmp_ord_upper;
    if (*ordered)
        s -= kmp_ord_lower - kmp_sch_lower;
    return s > kmp_sch_lower && s < kmp_sch_upper ? s : -1;
}

/* The kind dsm runs a kmp_sched as (chunk: the clause's, 0 if none). */
static enum sched_kind kind_of(int base, const struct omp_thread *t, int64_t *chunk)
{
    switch (base) {
    case kmp_sch_static_chunked:
    case kmp_sch_static:
    case kmp_sch_static_greedy:
    case kmp_sch_static_balanced:
    case kmp_sch_static_balanced_chunked:
    case kmp_sch_auto:
        return SCHED_STATIC;
    case kmp_sch_dynamic_chunked:
    case kmp_sch_static_steal:
        return SCHED_DYNAMIC;
    case kmp_sch_guided_chunked:
    case kmp_sch_trapezoidal:
    case kmp_sch_guided_iterative_chunked:
    case kmp_sch_guided_analytical_chunked:
    case kmp_sch_guided_simd: /* chunks a multiple of the chunk (schedule.c) */
        return SCHED_GUIDED;
    case kmp_sch_runtime:
        *chunk = t->icv.run_sched.chunk;
        return t->icv.run_sched.kind == SCHED_AUTO ? SCHED_STATIC : t->icv.run_sched.kind;
    default:
        return 0;
    }
}

/* ---- static loops ---------------------------------------------------------- */

/* Whether a loop of the team may be profiled: a nested team of one
 * node's threads (region_nested.c's local teams, several of which may
 * run the same loop at once on a node) is divided static instead, having
 * no nodes to balance and no node-wide meeting of its own. Else seed 003's
 * schedule measures every thread and divides over all of them, by node
 * and then by thread (loopsite.c). */
static bool profiled_team(const struct omp_thread *t) { return !t->local_team; }

/* A static loop divided by seed 003's profiled schedule (DSM_OMP_STATIC):
 * a block by speed, or, for a loop compiled with a chunk, chunks by speed. */
static void profiled_static(struct omp_thread *t, const void *site, bool chunked, uint64_t trip,
                            int64_t lb, int64_t incr, kmp_int32 *plast, int64_t *lower,
                            int64_t *upper, int64_t *stride)
{
    struct omp_loop *l = &t->loop_state;
    struct sched_spec spec = t->icv.static_sched;
    if (!chunked)
        spec.chunk = 0; /* clang runs an unchunked static loop's one block only */
    l->site = parallel_site(site);
    parallel_profiled_begin(l->site, &spec, trip, t->tid, t->nthreads, t->region->per_node,
                            &l->plan);
    struct loop_plan *p = &l->plan;
    uint64_t first = p->first, count = p->count, round = trip;
    if (p->cyclic) {
        round = p->round;
        count = parallel_plan_chunk(p, trip, 0, &first);
        if (count)
            count = p->chunk;
        else
            first = trip;
        *plast = 0;
        for (uint64_t k = 0;; k++) { /* does one of our chunks hold the last iteration? */
            uint64_t f, c = parallel_plan_chunk(p, trip, k, &f);
            if (!c)
                break;
            if (f + c == trip)
                *plast = 1;
        }
    } else
        *plast = count > 0 && first + count == trip;
    if (count == 0) {
        *lower = sched_value(lb, incr, trip);
        *upper = sched_value(lb, incr, trip - 1);
    } else {
        *lower = sched_value(lb, incr, first);
        *upper = sched_value(lb, incr, first + count - 1);
    }
    *stride = (int64_t)(round * (uint64_t)incr);
}

/* OMPT's kind of a worksharing construct, from what clang marks in its
 * location (kmp.h's KMP_IDENT_WORK_*): a loop, sections, distribute. */
static int tool_work_kind(const ident_t *loc, bool dist)
{
    if (dist || (loc && (loc->flags & 0x800)))
        return 6; /* ompt_work_distribute */
    if (loc && (loc->flags & 0x400))
        return 2; /* ompt_work_sections */
    return 1;     /* ompt_work_loop */
}

static void static_init(const ident_t *loc, kmp_int32 schedtype, kmp_int32 *plast,
                        int64_t *lower, int64_t *upper, int64_t *stride, int64_t incr,
                        int64_t chunk, bool is_unsigned, const void *codeptr)
{
    struct omp_thread *t = omp_self();
    int ordered = 0;
    /* distribute: the loop divided over the league's teams, each team's
     * initial thread taking its team's part (teams.c). */
    bool dist = schedtype == kmp_distribute_static || schedtype == kmp_distribute_static_chunked;
    int base = schedtype == kmp_distribute_static ? kmp_sch_static
             : schedtype == kmp_distribute_static_chunked ? kmp_sch_static_chunked
             : kmp_sched_base(schedtype, &ordered);
    if (base < 0)
        log_fatal("OpenMP static loop with schedule type %d, which dsm does not know", schedtype);
    t->loop++;
    t->since_barrier++;
    stats_add(STAT_PAR_LOOPS, 1);
    int64_t lb = *lower;
    uint64_t trip = sched_trip(lb, *upper, incr, is_unsigned);
    if (omp_tool_on)
        omp_tool_work(tool_work_kind(loc, dist), true, trip, codeptr);
    int n = dist ? t->num_teams : t->nthreads, tid = dist ? t->team_num : t->tid;
    t->loop_state.site = NULL;
    if (trip == 0) {
        *plast = 0;
        *stride = incr;
        return; /* lower..upper is already empty */
    }
    if (t->icv.static_sched.kind == SCHED_PROFILED && !dist && n > 1 && loc && loc->psource &&
        profiled_team(t)) {
        profiled_static(t, loc->psource, base == kmp_sch_static_chunked && chunk >= 1, trip, lb,
                        incr, plast, lower, upper, stride);
        return;
    }
    if (base == kmp_sch_static_chunked && chunk >= 1) {
        uint64_t c = (uint64_t)chunk;
        *lower = sched_value(lb, incr, (uint64_t)tid * c);
        *upper = sched_value(lb, incr, (uint64_t)tid * c + c - 1);
        *stride = (int64_t)((uint64_t)n * c * (uint64_t)incr);
        *plast = sched_static_chunked_has_last(trip, c, tid, n);
        return;
    }
    uint64_t first, count = sched_static_block(trip, tid, n, &first);
    if (count == 0) { /* an empty range past the end */
        *lower = sched_value(lb, incr, trip);
        *upper = sched_value(lb, incr, trip - 1);
    } else {
        *lower = sched_value(lb, incr, first);
        *upper = sched_value(lb, incr, first + count - 1);
    }
    *stride = (int64_t)(trip * (uint64_t)incr);
    *plast = count > 0 && first + count == trip;
}

#define STATIC_INIT(suffix, T, UNSIGNED)                                                         \
    void __kmpc_for_static_init_##suffix(ident_t *loc, kmp_int32 gtid, kmp_int32 schedtype,     \
                                         kmp_int32 *plastiter, T *plower, T *pupper,            \
                                         T *pstride, T incr, T chunk)                           \
    {                                                                                            \
        (void)gtid;                                                                              \
        int64_t lo = (int64_t)*plower, hi = (int64_t)*pupper, st = 0;                            \
        static_init(loc, schedtype, plastiter, &lo, &hi, &st, (int64_t)incr, (int64_t)chunk,    \
                    UNSIGNED, __builtin_return_address(0));                                      \
        *plower = (T)lo;                                                                         \
        *pupper = (T)hi;                                                                         \
        *pstride = (T)st;                                                                        \
    }
/* Unsigned loops still step by a signed increment. */
#define STATIC_INIT_U(suffix, T, ST)                                                             \
    void __kmpc_for_static_init_##suffix(ident_t *loc, kmp_int32 gtid, kmp_int32 schedtype,     \
                                         kmp_int32 *plastiter, T *plower, T *pupper,            \
                                         ST *pstride, ST incr, ST chunk)                        \
    {                                                                                            \
        (void)gtid;                                                                              \
        int64_t lo = (int64_t)*plower, hi = (int64_t)*pupper, st = 0;                            \
        static_init(loc, schedtype, plastiter, &lo, &hi, &st, (int64_t)incr, (int64_t)chunk,    \
                    true, __builtin_return_address(0));                                          \
        *plower = (T)lo;                                                                         \
        *pupper = (T)hi;                                                                         \
        *pstride = (ST)st;                                                                       \
    }
STATIC_INIT(4, kmp_int32, false)
STATIC_INIT(8, kmp_int64, false)
STATIC_INIT_U(4u, kmp_uint32, kmp_int32)
STATIC_INIT_U(8u, kmp_uint64, kmp_int64)

void __kmpc_for_static_fini(ident_t *loc, kmp_int32 gtid)
{
    (void)gtid;
    if (omp_tool_on)
        omp_tool_work(tool_work_kind(loc, false), false, 0, __builtin_return_address(0));
    struct omp_loop *l = &omp_self()->loop_state;
    if (l->site) {
        parallel_profiled_end(l->site, omp_self()->tid);
        l->site = NULL;
    }
}

/* ---- dispatched loops ------------------------------------------------------- */

/* schedule(simd: runtime): the compiler passes the simd width as the
 * chunk, and every chunk but the last is a whole number of widths, as
 * libomp does it: a static run-sched-var without a chunk (or auto)
 * becomes one chunk per thread rounded up to the width
 * (static_balanced_chunked); static with a chunk, dynamic and guided take
 * their chunk (1 if none) times the width. */
static enum sched_kind runtime_simd(const struct omp_thread *t, uint64_t trip, int64_t *chunk)
{
    uint64_t width = *chunk > 0 ? (uint64_t)*chunk : 1;
    struct sched_spec run = t->icv.run_sched;
    if (run.kind == SCHED_DYNAMIC || run.kind == SCHED_GUIDED ||
        (run.kind == SCHED_STATIC && run.chunk > 0)) {
        *chunk = (int64_t)((run.chunk > 0 ? (uint64_t)run.chunk : 1) * width);
        return run.kind;
    }
    uint64_t share = (trip + (uint64_t)t->nthreads - 1) / (uint64_t)t->nthreads;
    *chunk = (int64_t)((share + width - 1) / width * width);
    if (*chunk == 0)
        *chunk = (int64_t)width;
    return SCHED_STATIC;
}

static void dispatch_init(const ident_t *loc, kmp_int32 schedule, int64_t lb, int64_t ub,
                          int64_t st, int64_t chunk, bool is_unsigned, const void *codeptr)
{
    struct omp_thread *t = omp_self();
    int ordered = 0;
    int base = kmp_sched_base(schedule, &ordered);
    uint64_t trip = sched_trip(lb, ub, st, is_unsigned);
    enum sched_kind kind = base < 0 ? 0 : kind_of(base, t, &chunk);
    if (base == kmp_sch_runtime_simd)
        kind = runtime_simd(t, trip, &chunk);
    if (kind == SCHED_PROFILED &&
        (ordered || t->nthreads == 1 || !loc || !loc->psource || !profiled_team(t)))
        kind = SCHED_STATIC; /* nothing to balance, or turns to keep: as static */
    if (!kind)
        log_fatal("OpenMP loop with schedule type %d, which dsm does not know", schedule);
    if (omp_tool_on)
        omp_tool_work(tool_work_kind(loc, false), true, trip, codeptr);
    t->loop++;
    t->since_barrier++;
    stats_add(STAT_PAR_LOOPS, 1);
    /* OpenMP 5.1 §2.11.4: dynamic and guided are nonmonotonic unless the
     * monotonic modifier is given or the loop is ordered (clang marks
     * ordered loops nonmonotonic too, so the ordered flag decides). */
    bool monotonic = ordered || (schedule & KMP_SCH_MODIFIER_MONOTONIC) ||
                     ((base == kmp_sch_runtime || base == kmp_sch_runtime_simd) &&
                      t->icv.run_sched.monotonic);
    struct omp_loop *l = &t->loop_state;
    *l = (struct omp_loop){
        .id = {t->team, t->loop},
        .kind = kind,
        .ordered = ordered && t->nthreads > 1,
        .monotonic = monotonic,
        .unsigned_ = is_unsigned,
        .lb = lb,
        .st = st,
        .trip = trip,
        /* static with no chunk: one block each; else at least 1 */
        .chunk = chunk > 0 ? (uint64_t)chunk : kind == SCHED_STATIC ? 0 : 1,
    };
    if (kind == SCHED_PROFILED) {
        l->site = parallel_site(loc->psource);
        parallel_profiled_begin(l->site, &t->icv.run_sched, l->trip, t->tid, t->nthreads,
                                t->region->per_node, &l->plan);
    }
}

/* The nodes of the team as pools of a nonmonotonic loop's chunks: node
 * by node, as the team lies (team_layout.c); a nested team of one node's
 * threads is one pool. */
static struct chunk_pools team_pools(const struct omp_thread *t)
{
    int per = t->region && t->region->per_node > 0 ? t->region->per_node : 1;
    if (t->local_team || per >= t->nthreads)
        return (struct chunk_pools){.pool = 0, .pools = 1, .per_pool = t->nthreads};
    return (struct chunk_pools){.pool = t->tid / per, .pools = (t->nthreads + per - 1) / per,
                                .per_pool = per};
}

/* A dynamic or guided chunk from node 0, or of a batch of dynamic chunks
 * it gave before (dispatch.c): one chunk at a time, as OpenMP asks. */
static uint64_t served_chunk(const struct omp_thread *t, struct omp_loop *l, uint64_t *first)
{
    if (l->run_next == l->run_end) {
        if (l->monotonic)
            return parallel_next_chunk(l->id, l->kind, l->trip, l->chunk, t->nthreads, first);
        struct chunk_pools pools = team_pools(t);
        pools.ran = l->ran;
        uint64_t count = parallel_next_chunks(l->id, l->kind, l->trip, l->chunk, t->nthreads,
                                              &pools, first);
        if (l->kind != SCHED_DYNAMIC || count <= l->chunk) {
            l->ran += count != 0;
            return count; /* a guided chunk is one, whatever its size */
        }
        l->run_next = *first;
        l->run_end = *first + count;
    }
    *first = l->run_next;
    uint64_t count = l->run_end - l->run_next < l->chunk ? l->run_end - l->run_next : l->chunk;
    l->run_next += count;
    l->ran++;
    return count;
}

/* The next chunk of ours: its first iteration and its size (0: none). */
static uint64_t next_chunk(struct omp_thread *t, struct omp_loop *l, uint64_t *first)
{
    if (l->done)
        return 0;
    uint64_t count;
    if (l->kind == SCHED_PROFILED) {
        count = parallel_plan_chunk(&l->plan, l->trip, l->next++, first);
        if (count == 0) {
            parallel_profiled_end(l->site, t->tid);
            l->site = NULL;
        }
    } else if (l->kind == SCHED_STATIC) {
        if (l->chunk == 0) {
            count = l->next++ == 0 ? sched_static_block(l->trip, t->tid, t->nthreads, first) : 0;
        } else {
            uint64_t k = (uint64_t)t->tid + l->next++ * (uint64_t)t->nthreads;
            if (k >= (l->trip + l->chunk - 1) / l->chunk) {
                count = 0;
            } else {
                *first = k * l->chunk;
                count = l->trip - *first < l->chunk ? l->trip - *first : l->chunk;
            }
        }
    } else if (t->nthreads == 1) {
        uint64_t left = l->trip - l->next;
        count = l->kind == SCHED_GUIDED ? sched_guided_chunk(left, 1, l->chunk)
                                        : (l->chunk < left ? l->chunk : left);
        *first = l->next;
        l->next += count;
    } else {
        count = served_chunk(t, l, first);
    }
    if (count == 0)
        l->done = true;
    return count;
}

static int dispatch_next(kmp_int32 *plast, int64_t *plb, int64_t *pub, int64_t *pst)
{
    struct omp_thread *t = omp_self();
    struct omp_loop *l = &t->loop_state;
    uint64_t first, count = next_chunk(t, l, &first);
    if (count == 0)
        return 0;
    *plb = sched_value(l->lb, l->st, first);
    *pub = sched_value(l->lb, l->st, first + count - 1);
    *pst = l->st;
    if (plast)
        *plast = first + count == l->trip;
    l->cur = first;
    l->end = first + count;
    l->has_turn = false;
    return 1;
}

/* Ordered loops: clang calls it at the end of every iteration. */
static void dispatch_fini(void)
{
    struct omp_thread *t = omp_self();
    struct omp_loop *l = &t->loop_state;
    if (!l->ordered)
        return;
    if (!l->has_turn)
        parallel_turn_wait(l->id, l->cur);
    parallel_turn_done(l->id, l->cur, l->trip);
    l->cur++;
    l->has_turn = false;
}

#define DISPATCH(suffix, T, ST, UNSIGNED)                                                        \
    void __kmpc_dispatch_init_##suffix(ident_t *loc, kmp_int32 gtid, kmp_int32 schedule, T lb,  \
                                       T ub, ST st, ST chunk)                                   \
    {                                                                                            \
        (void)gtid;                                                                              \
        dispatch_init(loc, schedule, (int64_t)lb, (int64_t)ub, (int64_t)st, (int64_t)chunk,    \
                      UNSIGNED, __builtin_return_address(0));                                    \
    }                                                                                            \
    int __kmpc_dispatch_next_##suffix(ident_t *loc, kmp_int32 gtid, kmp_int32 *p_last, T *p_lb, \
                                      T *p_ub, ST *p_st)                                        \
    {                                                                                            \
        (void)gtid;                                                                              \
        int64_t lo, hi, st;                                                                      \
        if (!dispatch_next(p_last, &lo, &hi, &st)) {                                             \
            if (omp_tool_on) /* the loop's end, as libomp reports it */                          \
                omp_tool_work(tool_work_kind(loc, false), false, 0, __builtin_return_address(0)); \
            return 0;                                                                            \
        }                                                                                        \
        if (omp_tool_on) /* the chunk, named by its first iteration */                           \
            omp_tool_dispatch(false, (uint64_t)lo, __builtin_return_address(0));                 \
        *p_lb = (T)lo;                                                                           \
        *p_ub = (T)hi;                                                                           \
        if (p_st)                                                                                \
            *p_st = (ST)st;                                                                      \
        return 1;                                                                                \
    }                                                                                            \
    void __kmpc_dispatch_fini_##suffix(ident_t *loc, kmp_int32 gtid)                             \
    {                                                                                            \
        (void)loc, (void)gtid;                                                                   \
        dispatch_fini();                                                                         \
    }
DISPATCH(4, kmp_int32, kmp_int32, false)
DISPATCH(4u, kmp_uint32, kmp_int32, true)
DISPATCH(8, kmp_int64, kmp_int64, false)
DISPATCH(8u, kmp_uint64, kmp_int64, true)

/* ---- ordered ------------------------------------------------------------------ */

/* OMPT's wait id of an ordered construct: the loop's. */
static uint64_t ordered_wait_id(const struct omp_thread *t)
{
    return ((uint64_t)t->loop_state.id.team << 32) | t->loop_state.id.loop;
}

void __kmpc_ordered(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    struct omp_loop *l = &t->loop_state;
    const void *codeptr = __builtin_return_address(0);
    if (omp_tool_on)
        omp_tool_mutex_acquire(7, 0, ordered_wait_id(t), codeptr); /* ompt_mutex_ordered */
    if (l->ordered) {
        if (!l->has_turn) {
            parallel_turn_wait(l->id, l->cur);
            l->has_turn = true;
        }
        omp_lock_take(ORDERED_LOCK);
        sync_flush_implied(); /* the entry's flush (sync/flush.c) */
    }
    if (omp_tool_on)
        omp_tool_mutex_acquired(7, ordered_wait_id(t), codeptr);
}

void __kmpc_end_ordered(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    if (t->loop_state.ordered)
        omp_lock_give(ORDERED_LOCK);
    if (omp_tool_on)
        omp_tool_mutex_released(7, ordered_wait_id(t), __builtin_return_address(0));
}
