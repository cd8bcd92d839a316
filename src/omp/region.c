/*
 * region.c — parallel regions: __kmpc_fork_call, the fork of a team over
 * the nodes and its join, serialized regions, and what a thread takes
 * from the region it enters.
 *
 * A team runs on nodes × threads (team_layout.c). A region nested in an
 * active one gets a team of its node's threads when nesting is asked for
 * and possible (region_nested.c); otherwise nested regions, and regions
 * of one thread, run on the calling thread alone ("serialized", as OpenMP
 * allows for nested regions).
 *
 * The fork runs on the thread that meets the region (the master, for a
 * team over the nodes): it writes the region's description in its own
 * memory, the create carries a copy to every other node (run_member, on
 * the node's application thread), and each node's threads of the team
 * enter it (run_thread, node helpers); the join is dsm_wait_for_end. So a
 * region costs a node the create and its end, one message each way, and
 * nothing of the runtime's is fetched: only what the team's threads write
 * for one another (struct omp_team_shared: copyprivate, cancellation, a
 * partial team's barrier, doacross) is in shared memory, and a region
 * that uses none of it moves none of it. What the
 * team does together once it runs is its siblings': team_sync.c
 * (barrier, flush, critical, reductions) and team_single.c (single,
 * master, masked, copyprivate). region_state.h declares what the region
 * files share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/state.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "mem/mem.h"
#include "omp/kmpc.h"
#include "omp/omp.h"
#include "omp/omp_state.h"
#include "omp/region_state.h"
#include "parallel/threads.h"

/* Calls the outlined region with its arguments: clang's outlined functions
 * take (gtid*, btid*, arg0, ..., argN-1), every argument pointer-sized.
 * Its frame is the implicit task's exit frame for a tool (ompt.c): the
 * region's code sees it as its caller's, so no call of it (here or in
 * region_nested.c) is a tail call. */
__attribute__((noinline)) void region_invoke(kmpc_micro fn, kmp_int32 gtid, kmp_int32 btid,
                                             int argc, const uint64_t *a)
{
    if (omp_tool_on)
        omp_tool_exit_frame(__builtin_frame_address(0));
#define A(i) (void *)(uintptr_t)a[i]
#define CASE(n, ...)                                                                   \
    case n:                                                                          \
        fn(&gtid, &btid, ##__VA_ARGS__);                                             \
        goto done;
#define A8(i) A(i), A(i + 1), A(i + 2), A(i + 3), A(i + 4), A(i + 5), A(i + 6), A(i + 7)
    switch (argc) {
    CASE(0)
    CASE(1, A(0))
    CASE(2, A(0), A(1))
    CASE(3, A(0), A(1), A(2))
    CASE(4, A(0), A(1), A(2), A(3))
    CASE(5, A(0), A(1), A(2), A(3), A(4))
    CASE(6, A(0), A(1), A(2), A(3), A(4), A(5))
    CASE(7, A(0), A(1), A(2), A(3), A(4), A(5), A(6))
    CASE(8, A8(0))
    CASE(9, A8(0), A(8))
    CASE(10, A8(0), A(8), A(9))
    CASE(11, A8(0), A(8), A(9), A(10))
    CASE(12, A8(0), A(8), A(9), A(10), A(11))
    CASE(13, A8(0), A(8), A(9), A(10), A(11), A(12))
    CASE(14, A8(0), A(8), A(9), A(10), A(11), A(12), A(13))
    CASE(15, A8(0), A(8), A(9), A(10), A(11), A(12), A(13), A(14))
    CASE(16, A8(0), A8(8))
    default:
        break;
    }
    /* Beyond 16: pass 64 (the callee reads only its own; the extra ones are
     * ignored by the x86-64 and AArch64 calling conventions). */
    uint64_t all[OMP_MAX_ARGS] = {0};
    memcpy(all, a, (size_t)argc * sizeof *a);
#undef A
#define A(i) (void *)(uintptr_t)all[i]
    fn(&gtid, &btid, A8(0), A8(8), A8(16), A8(24), A8(32), A8(40), A8(48), A8(56));
#undef A
#undef A8
#undef CASE
done:
    if (omp_tool_on)
        omp_tool_exit_frame(NULL);
}

/* OMPT: what the threads of the region a node started last report (the
 * node's first thread sets it before the others start): the region and
 * the task that encountered it (the master's, or another node's copy). */
static DSM_STATE struct {
    struct omp_tool_par  *par;
    struct omp_tool_task *enc;
} tool_ctx;

/* A region on this node alone begins: tid 0 of a team of 1 (`requested`
 * asked for; codeptr and frame: where the program entered the runtime). */
void region_serialized_begin(struct omp_thread *t, int requested, const void *codeptr,
                             void *frame, bool program)
{
    if (t->serialized == OMP_MAX_NESTING)
        log_fatal("OpenMP regions nested more than %d deep", OMP_MAX_NESTING);
    struct omp_outer *o = &t->outer[t->serialized++];
    *o = (struct omp_outer){.icv = t->icv, .tid = t->tid, .nthreads = t->nthreads,
                            .loop = t->loop, .loop_state = t->loop_state, .tool_codeptr = codeptr,
                            .tool_program = program};
    if (omp_tool_on) {
        struct omp_tool_task *enc = omp_tool_current();
        omp_tool_parallel_begin(&o->tool_par, requested, false, program, codeptr, frame);
        omp_tool_implicit_begin(&o->tool_task, &o->tool_par, enc, 1, 0, false);
        if (program) /* the program's frame calls the code */
            omp_tool_exit_frame(frame);
    }
    t->tid = 0;
    t->nthreads = 1;
    t->loop = 0;
    t->level++;
    t->pushed_threads = 0;
    t->pushed_bind = 0;
    omp_affinity_display(t, t->icv.nbind > 0 ? t->icv.bind[0] : 0);
}

void region_serialized_end(struct omp_thread *t)
{
    if (t->serialized == 0)
        log_fatal("__kmpc_end_serialized_parallel without a serialized region");
    struct omp_outer *o = &t->outer[--t->serialized];
    if (omp_tool_on) {
        omp_tool_implicit_end(&o->tool_task, 1, o->tool_codeptr, false, false);
        omp_tool_parallel_end(&o->tool_par, false, o->tool_program, o->tool_codeptr);
    }
    t->icv = o->icv;
    t->tid = o->tid;
    t->nthreads = o->nthreads;
    t->loop = o->loop;
    t->loop_state = o->loop_state;
    t->level--;
}

/* A thread enters the region as thread `tid` of its team; what it was
 * before comes back at the end (the ICVs set in the region were its own).
 * In a teams region, thread `tid` is the initial thread of team `tid`:
 * thread 0 of a team of one, at level 0, outside any parallel region
 * (OpenMP 5.1 §2.7). */
void region_enter(struct omp_thread *t, const struct omp_region *r, int tid)
{
    t->stack_hi = __builtin_frame_address(0);
    t->since_barrier = 0;
    t->tid = t->gtid = tid;
    t->nthreads = r->nthreads;
    t->team_nodes = (r->nthreads + r->per_node - 1) / r->per_node;
    /* one level below the encountering thread's: a region started inside
     * serialized ones (the master's) is still the first active level */
    t->level = r->level_base + 1;
    t->active_level = 1;
    t->serialized = 0; /* those of the encountering thread are outside it */
    t->team = r->team;
    t->loop = 0;
    t->region = (struct omp_region *)r;
    t->icv.max_task_priority = r->max_task_priority;
    t->icv.target_offload = r->target_offload;
    t->icv.nthreads = r->nthreads_var;
    t->icv.dynamic = r->dynamic;
    t->icv.max_active_levels = r->max_active_levels;
    t->icv.thread_limit = r->thread_limit_var;
    if (t->icv.blocktime != r->blocktime)
        omp_apply_blocktime(r->blocktime);
    t->icv.blocktime = r->blocktime;
    t->local_team = r->local;
    if (r->local) { /* a nested team of this node's threads (region_fork_local) */
        t->active_level = 2;
        t->team_nodes = 1;
        t->outer_tid = r->outer_tid;
        t->outer_nthreads = r->outer_nthreads;
        t->outer_level = r->outer_level;
    }
    if (r->league) {
        t->team_num = tid;
        t->num_teams = r->nthreads;
        t->thread_limit = r->thread_limit;
        t->tid = 0;
        t->nthreads = 1;
        t->level = t->active_level = 0;
        return;
    }
    /* Its place: the k-th of the node's threads of the team, bound as the
     * region says (affinity.c); node 0's first from the master's place. */
    t->icv.nbind = r->nchild_bind;
    memcpy(t->icv.bind, r->child_bind, sizeof t->icv.bind);
    int k, count, master_place = -1;
    if (r->local) {
        k = tid, count = r->nthreads, master_place = r->master_place;
    } else {
        k = tid % r->per_node;
        count = omp_team_on_node(r->nthreads, r->per_node, job()->rank);
        if (job()->rank == 0)
            master_place = r->master_place;
    }
    omp_affinity_enter(t, r->bind, master_place, r->part_first, r->part_count, k, count);
    omp_affinity_display(t, r->bind);
}

/* The region's binding (the proc_bind clause, else bind-var's first
 * value; none while bind-var is false, as libomp) and its threads'
 * bind-var (the rest of the list, or the list itself when it has one). */
void region_takes_binding(struct omp_thread *t, struct omp_region *r)
{
    int bind = t->icv.nbind > 0 ? t->icv.bind[0] : 0;
    if (t->pushed_bind && bind != 0)
        bind = t->pushed_bind;
    t->pushed_bind = 0;
    r->bind = (int8_t)bind;
    int n = t->icv.nbind;
    memset(r->child_bind, 0, sizeof r->child_bind);
    if (n > 1) {
        memcpy(r->child_bind, t->icv.bind + 1, (size_t)(n - 1));
        r->nchild_bind = (int8_t)(n - 1);
    } else {
        memcpy(r->child_bind, t->icv.bind, sizeof r->child_bind);
        r->nchild_bind = (int8_t)n;
    }
    r->master_place = t->place;
    r->part_first = t->part_first;
    r->part_count = t->part_count;
}

/* The region's code, in a team over several nodes, runs on a stack in
 * the shared region on every thread but node 0's master (whose main runs
 * on one already: runtime/master.c): the tasks a thread makes (after a
 * `single` it won, say) share variables of its frames, and may then be
 * offered to the other nodes, which steal them (task.c, "tasks that leave
 * their node"). The stack is the thread's for the job (a node's threads
 * are kept: threads.c), taken from the top of its node's arena (so its
 * pages are homed where it runs) at its first such region. A task a thread
 * steals at a barrier or the region's end runs on it too (omp_run_shared),
 * so that the tasks it makes may leave as well. */
static __thread char *shared_stack;
static __thread size_t shared_stack_len;

void omp_run_shared(void (*fn)(void *), void *arg)
{
    if (stack_on_shared()) {
        fn(arg);
        return;
    }
    if (!shared_stack) {
        shared_stack_len = stack_shared_size();
        shared_stack = mem_alloc_top(shared_stack_len);
        if (PROFILE_ON)
            profile_alloc(PROF_ALLOC_STACK, shared_stack, shared_stack_len);
    }
    stack_run_shared(shared_stack, shared_stack_len, fn, arg);
}

struct invocation {
    kmpc_micro      fn;
    kmp_int32       gtid, btid;
    int             argc;
    const uint64_t *args;
};

static void invoke_call(void *arg)
{
    const struct invocation *v = arg;
    region_invoke(v->fn, v->gtid, v->btid, v->argc, v->args);
}

static void invoke_region(kmpc_micro fn, kmp_int32 tid, int argc, const uint64_t *args)
{
    if (!omp_tasks_may_leave()) {
        region_invoke(fn, tid, tid, argc, args);
        return;
    }
    struct invocation v = {.fn = fn, .gtid = tid, .btid = tid, .argc = argc, .args = args};
    omp_run_shared(invoke_call, &v);
}

/* The bytes of a description with argc arguments: what a create carries. */
static size_t region_bytes(int argc)
{
    return offsetof(struct omp_region, args) + (size_t)argc * sizeof(uint64_t);
}

/* What the master's teams write for one another: cleared where the last
 * region left something (the master reads it, which costs nothing unless
 * another node wrote it), so that a region that uses none of it writes
 * none of it, and no node has it to fetch. */
static struct omp_team_shared *team_shared(struct omp_thread *t)
{
    struct omp_team_shared *w = t->own_shared;
    if (!w) {
        w = t->own_shared = dsm_malloc(sizeof *w);
        if (!w)
            log_fatal("no shared memory for an OpenMP team's shared words");
        return w; /* zero, as shared memory starts */
    }
    if (w->count.arrived || w->count.cancelled)
        w->count = (struct team_count){0, 0, 0};
    if (w->cancelled_construct)
        w->cancelled_construct = 0;
    return w;
}

/* One thread of a node, in the region: thread i of node r is team thread
 * r·p + i (node-major, as dsm_thread_id). The master's own thread takes
 * the path in __kmpc_fork_call instead. */
static void run_thread(void *arg)
{
    struct omp_region *r = arg;
    struct omp_thread *t = omp_self();
    int tid = job()->rank * r->per_node + smp_index();
    uint64_t t0 = clock_ns();
    struct omp_thread saved = *t;
    region_enter(t, r, tid);
    t->icv.run_sched = r->run_sched;
    int argc = r->argc;
    uint64_t args[OMP_MAX_ARGS];
    memcpy(args, r->args, (size_t)argc * sizeof args[0]);
    struct omp_tool_task tool_task;
    struct omp_tool_team tool_team;
    bool tool = r->tool_on && omp_tool_on;
    if (tool && r->league)
        omp_tool_team_begin(&tool_team, tool_ctx.enc, tool_ctx.par, r->nthreads, tid);
    else if (tool)
        omp_tool_implicit_begin(&tool_task, tool_ctx.par, tool_ctx.enc, r->nthreads, tid, false);
    invoke_region((kmpc_micro)(uintptr_t)r->microtask, tid, argc, args);
    if (tool && !r->league)
        omp_tool_join_begin(&tool_task, NULL);
    omp_tasks_complete(); /* the region's end is a barrier for its tasks */
    if (tool && r->league)
        omp_tool_team_end(&tool_team, r->nthreads, tid, NULL);
    else if (tool)
        omp_tool_implicit_end(&tool_task, 0, NULL, true, false);
    *t = saved;
    stats_add(STAT_PAR_REGIONS, 1);
    stats_add(STAT_T_PAR_REGION_NS, clock_ns() - t0);
}

/* On every node but the master: one region, on this node's threads of
 * the team (none: not in it). `arg` is the create's copy of the master's
 * description, its argc arguments only (omp_fork). */
static void run_member(void *arg)
{
    const struct omp_region *sent = arg;
    if (sent->argc < 0 || sent->argc > OMP_MAX_ARGS)
        log_fatal("the master sent a region of %d arguments (at most %d)", sent->argc,
                  OMP_MAX_ARGS);
    struct omp_region region = {0}, *r = &region;
    memcpy(r, sent, region_bytes(sent->argc));
    omp_affinity_take(r->affinity_fmt, r->affinity_gen);
    int local = omp_team_on_node(r->nthreads, r->per_node, job()->rank);
    /* OMPT: this node's copies of the master's region and its task. */
    struct omp_tool_par par, enc_par;
    struct omp_tool_task enc;
    if (r->tool_on && local > 0) {
        (void)omp_self(); /* the node's tool starts, this thread begins */
        enc_par = (struct omp_tool_par){.data = r->tool_enc_par, .team_size = r->tool_enc_team_size};
        enc = (struct omp_tool_task){.data = r->tool_enc_data, .exit_frame = r->tool_enc_exit,
                                     .enter_frame = r->tool_enc_enter, .type = r->tool_enc_type,
                                     .thread_num = r->tool_enc_thread_num, .par = &enc_par};
        enc.exit_flags = enc.enter_flags = 0x11; /* ompt_frame_runtime | framepointer */
        par = (struct omp_tool_par){.data = r->tool_par, .team_size = r->nthreads,
                                    .outer = &enc_par};
        tool_ctx.par = &par;
        tool_ctx.enc = &enc;
    }
    omp_node_threads_begin(local, run_thread, r);
    if (local > 0)
        run_thread(r);
    omp_node_threads_end(local);
    sync_join(); /* every node, in the team or not: the master's create reached all */
}

/* The master's ICVs that its team's threads inherit, on every node. */
void region_takes_icvs(struct omp_region *r, const struct omp_icv *icv)
{
    r->run_sched = icv->run_sched;
    r->max_task_priority = icv->max_task_priority;
    r->target_offload = icv->target_offload;
    r->nthreads_var = icv->nthreads;
    r->dynamic = icv->dynamic;
    r->max_active_levels = icv->max_active_levels;
    r->thread_limit_var = icv->thread_limit;
    r->blocktime = icv->blocktime;
}

void omp_take_args(const char *what, int argc, va_list ap, uint64_t *args)
{
    if (argc < 0 || argc > OMP_MAX_ARGS)
        log_fatal("%s shares %d variables; dsm supports at most %d", what, argc, OMP_MAX_ARGS);
    for (int i = 0; i < argc; i++)
        args[i] = (uint64_t)(uintptr_t)va_arg(ap, void *);
}

/* The job's initial thread: node 0's first, on main's stack. */
static bool master_thread(void)
{
    return job()->rank == 0 && smp_index() == 0 && (!job()->started || stack_on_shared());
}

void __kmpc_fork_call(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...)
{
    (void)loc;
    const void *codeptr = __builtin_return_address(0);
    void *frame = __builtin_frame_address(0);
    struct omp_thread *t = omp_self();
    uint64_t args[OMP_MAX_ARGS];
    va_list ap;
    va_start(ap, microtask);
    omp_take_args("an OpenMP region", argc, ap, args);
    va_end(ap);

    int asked = t->pushed_threads ? t->pushed_threads : t->icv.nthreads;
    t->pushed_threads = 0;
    if (region_nests_here(t, asked)) {
        region_fork_local(t, asked, microtask, argc, args, codeptr, frame);
        return;
    }
    /* Nested in another active region, or in a teams region (whose
     * teams' initial threads run on every node; dsm starts regions from
     * the master): a team of one, as OpenMP allows; so with
     * max-active-levels 0, as OpenMP asks. Under serialized regions only
     * (the master's), a region is the first active level: the job's team. */
    bool first_active = t->active_level == 0 && (t->level == 0 || master_thread());
    if (!first_active || t->num_teams > 1 || asked <= 1 || t->icv.max_active_levels < 1) {
        region_serialized_begin(t, asked, codeptr, frame, false);
        region_invoke(microtask, t->tid, 0, argc, args);
        region_serialized_end(t);
        return;
    }
    int n = omp_team_size(t, asked);
    /* A thread the program created (pthread_create) runs on a private
     * stack, where the region's shared variables (its locals) are out of
     * the other nodes' reach: its regions get a team of one, which OpenMP
     * allows while dyn-var is true (5.1 §2.6.1); with dyn-var false the
     * threads asked for cannot be given, and the job ends in one line. */
    if (t->distributed && !stack_on_shared()) {
        if (!t->icv.dynamic)
            log_fatal("an OpenMP parallel region of %d threads with dynamic adjustment off, "
                      "started on a thread the program created (pthread_create): its "
                      "variables are on that thread's private stack, so dsm gives such a "
                      "region one thread; leave dyn-var true (omp_set_dynamic, OMP_DYNAMIC)",
                      n);
        n = 1;
    }
    if (n <= 1) {
        region_serialized_begin(t, asked, codeptr, frame, false);
        region_invoke(microtask, t->tid, 0, argc, args);
        region_serialized_end(t);
        return;
    }
    omp_fork(t, n, false, 0, (void *)microtask, argc, args, asked, codeptr, frame);
}

void omp_fork(struct omp_thread *t, int n, bool league, int thread_limit, void *microtask,
              int argc, const uint64_t *args, int requested, const void *codeptr, void *frame)
{
    int per_node = omp_team_per_node(n);
    omp_team_check_threads(t, per_node);
    uint64_t t0 = clock_ns();
    /* A league of one team is the master's alone (as libomp serializes
     * it): no other node takes part, so a parallel region in it starts
     * the job's team as any region does; its description is private. */
    bool solo = league && n == 1;
    struct omp_region solo_region;
    struct omp_region *r = solo ? &solo_region : t->own_region;
    if (!r) {
        r = t->own_region = calloc(1, sizeof *r);
        if (!r)
            log_fatal("out of memory for an OpenMP region's description");
    }
    r->shared = team_shared(t);
    r->microtask = (uint64_t)(uintptr_t)microtask;
    r->argc = argc;
    r->nthreads = n;
    r->per_node = per_node;
    r->team = ++t->teams_started;
    r->league = league;
    r->thread_limit = thread_limit;
    region_takes_icvs(r, &t->icv);
    region_takes_binding(t, r);
    r->level_base = league ? -1 : t->level; /* a league's teams are at level 0 */
    omp_affinity_publish(&r->affinity_fmt, &r->affinity_gen);
    r->nested = !league && omp_nesting_possible(t);
    r->local = 0;
    memcpy(r->args, args, (size_t)argc * sizeof args[0]);
    /* OMPT: the region begins; its data and the encountering task's go
     * to the other nodes in the description (ompt.c). */
    struct omp_tool_par tool_par;
    struct omp_tool_task tool_task, *enc = NULL;
    r->tool_on = omp_tool_on;
    if (r->tool_on) {
        enc = omp_tool_current();
        omp_tool_parallel_begin(&tool_par, requested, league, false, codeptr, frame);
        r->tool_par = tool_par.data;
        r->tool_enc_data = enc ? enc->data : 0;
        r->tool_enc_exit = enc ? enc->exit_frame : 0;
        r->tool_enc_enter = enc ? enc->enter_frame : 0;
        r->tool_enc_type = enc ? enc->type : 0;
        r->tool_enc_thread_num = enc ? enc->thread_num : 0;
        r->tool_enc_par = enc && enc->par ? enc->par->data : 0;
        r->tool_enc_team_size = enc && enc->par ? enc->par->team_size : 1;
        tool_ctx.par = &tool_par;
        tool_ctx.enc = enc;
    }
    bool others = job()->nodes > 1 && !solo;
    r->task_nodes = others ? omp_task_nodes() : 0;
    r->tasks_seen = omp_tasks_seen();
    if (others)
        omp_runtime()->create(run_member, r, region_bytes(argc));
    int local = omp_team_on_node(n, per_node, 0);
    omp_node_threads_begin(local, run_thread, r);

    struct omp_thread saved = *t;
    region_enter(t, r, 0);
    struct omp_tool_team tool_team;
    if (r->tool_on && league)
        omp_tool_team_begin(&tool_team, enc, &tool_par, n, 0);
    else if (r->tool_on)
        omp_tool_implicit_begin(&tool_task, &tool_par, enc, n, 0, false);
    region_invoke((kmpc_micro)microtask, 0, 0, argc, args);
    if (r->tool_on && !league)
        omp_tool_join_begin(&tool_task, codeptr);
    omp_tasks_complete();
    if (r->tool_on && league)
        omp_tool_team_end(&tool_team, n, 0, codeptr);
    else if (r->tool_on)
        omp_tool_implicit_end(&tool_task, n, codeptr, true, false);
    *t = saved; /* with the ICVs as they were: those set in the region were its own */
    omp_node_threads_end(local);
    if (others) {
        sync_join(); /* a barrier where migration's window ends, as every node's join */
        omp_runtime()->wait_for_end();
    }
    if (r->tool_on)
        omp_tool_parallel_end(&tool_par, league, false, codeptr);
    omp_doacross_region_end(r->shared);
    stats_add(STAT_PAR_REGIONS, 1);
    stats_add(STAT_T_PAR_REGION_NS, clock_ns() - t0);
}

void __kmpc_push_num_threads(ident_t *loc, kmp_int32 gtid, kmp_int32 num_threads)
{
    (void)loc, (void)gtid;
    if (num_threads < 1)
        log_fatal("num_threads(%d): the number of threads must be positive", num_threads);
    omp_self()->pushed_threads = num_threads;
}

void __kmpc_push_proc_bind(ident_t *loc, kmp_int32 gtid, int proc_bind)
{
    (void)loc, (void)gtid;
    omp_self()->pushed_bind = proc_bind; /* affinity.c binds the next region's threads */
}

/* The region's `if` clause was false: the encountering thread runs it. */
void __kmpc_serialized_parallel(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    t->pushed_threads = 0;
    /* The program calls the region's code from its own frame (the saved
     * frame pointer: src/omp is built with them). */
    region_serialized_begin(t, 1, __builtin_return_address(0), *(void **)__builtin_frame_address(0),
                            true);
}

void __kmpc_end_serialized_parallel(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    region_serialized_end(omp_self());
}

/* Unique per thread while a region runs (its number in the active team,
 * kept in a nested serialized region); outside, the node's one thread:
 * its rank. */
kmp_int32 __kmpc_global_thread_num(ident_t *loc)
{
    (void)loc;
    struct omp_thread *t = omp_self();
    return t->active_level || t->num_teams > 1 ? t->gtid : job()->rank;
}

kmp_int32 __kmpc_global_num_threads(ident_t *loc)
{
    (void)loc;
    return omp_self()->nthreads;
}

kmp_int32 __kmpc_bound_thread_num(ident_t *loc)
{
    (void)loc;
    return omp_self()->tid;
}

kmp_int32 __kmpc_bound_num_threads(ident_t *loc)
{
    (void)loc;
    return omp_self()->nthreads;
}

kmp_int32 __kmpc_in_parallel(ident_t *loc)
{
    (void)loc;
    return omp_self()->active_level > 0;
}

kmp_int32 __kmpc_ok_to_fork(ident_t *loc)
{
    (void)loc;
    return 1;
}

void __kmpc_begin(ident_t *loc, kmp_int32 flags) { (void)loc, (void)flags; }
void __kmpc_end(ident_t *loc) { (void)loc; }
