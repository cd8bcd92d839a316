/*
 * region.c — parallel regions: __kmpc_fork_call and what belongs to the
 * team as a whole (barrier, single, master, copyprivate, flush).
 *
 * A team runs on nodes × threads (team_layout.c). A region nested in an
 * active one gets a team of its node's threads when nesting is asked for
 * and possible (fork_local, below); otherwise nested regions, and regions
 * of one thread, run on the calling thread alone ("serialized", as OpenMP
 * allows for nested regions).
 */
#include <pthread.h>
#include <stdarg.h>
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
#include "parallel/threads.h"

/* Calls the outlined region with its arguments: clang's outlined functions
 * take (gtid*, btid*, arg0, ..., argN-1), every argument pointer-sized.
 * Its frame is the implicit task's exit frame for a tool (ompt.c): the
 * region's code sees it as its caller's, so no call here is a tail call. */
__attribute__((noinline)) static void invoke(kmpc_micro fn, kmp_int32 gtid, kmp_int32 btid,
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
static void serialized_begin(struct omp_thread *t, int requested, const void *codeptr, void *frame,
                             bool program)
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

static void serialized_end(struct omp_thread *t)
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
static void enter(struct omp_thread *t, const struct omp_region *r, int tid)
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
    if (r->local) { /* a nested team of this node's threads (fork_local) */
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
static void region_takes_binding(struct omp_thread *t, struct omp_region *r)
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
    invoke(v->fn, v->gtid, v->btid, v->argc, v->args);
}

static void invoke_region(kmpc_micro fn, kmp_int32 tid, int argc, const uint64_t *args)
{
    if (!omp_tasks_may_leave()) {
        invoke(fn, tid, tid, argc, args);
        return;
    }
    struct invocation v = {.fn = fn, .gtid = tid, .btid = tid, .argc = argc, .args = args};
    omp_run_shared(invoke_call, &v);
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
    enter(t, r, tid);
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
 * the team (none: not in it). */
static void run_member(void *arg)
{
    struct omp_region *r = arg;
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
}

/* ---- nested regions with teams of a node's threads ---------------------- */

/* A region nested in an active one gets a team of its own (OpenMP's
 * nested parallelism, max-active-levels 2) when the outer region allows
 * it (omp_fork: nesting asked for, hlrc, home migration stopped on every
 * node) and this node runs one thread of the outer team: the team is this
 * node's threads, the encountering thread and node helpers (a node's
 * threads share its pages in hardware; another node cannot read the
 * encountering thread's private stack, which the region shares). Its
 * barrier is the node's threads meeting in memory; its dynamic chunks,
 * singles and ordered turns come from node 0 as any team's, under a team
 * number no other team has. Otherwise the region is serialized. */
static bool nests_here(const struct omp_thread *t, int asked)
{
    return asked > 1 && t->active_level == 1 && !t->local_team && t->num_teams <= 1 &&
           t->region && t->region->nested && t->icv.max_active_levels >= 2;
}

/* A nested team's own barrier, when the node runs several threads of the
 * outer team (each may start a nested team: their threads must not meet
 * at the node's barrier). Its threads share memory in hardware. */
struct group_barrier {
    pthread_mutex_t lock;
    pthread_cond_t  cv;
    int             count, arrived;
    uint64_t        generation;
};

static void group_barrier_wait(struct group_barrier *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t gen = b->generation;
    if (++b->arrived == b->count) {
        b->arrived = 0;
        b->generation++;
        pthread_mutex_unlock(&b->lock);
        pthread_cond_broadcast(&b->cv);
        return;
    }
    while (b->generation == gen)
        pthread_cond_wait(&b->cv, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

static void run_local_thread(void *arg)
{
    struct omp_region *r = arg;
    struct omp_thread *t = omp_self();
    int tid = r->group_barrier ? threads_group_position() : smp_index();
    struct omp_thread saved = *t;
    enter(t, r, tid);
    t->icv.run_sched = r->run_sched;
    uint64_t args[OMP_MAX_ARGS];
    memcpy(args, r->args, (size_t)r->argc * sizeof args[0]);
    struct omp_tool_task tool_task;
    bool tool = r->tool_on && omp_tool_on;
    if (tool)
        omp_tool_implicit_begin(&tool_task, (struct omp_tool_par *)(uintptr_t)r->tool_local_par,
                                (struct omp_tool_task *)(uintptr_t)r->tool_local_enc, r->nthreads,
                                tid, false);
    invoke((kmpc_micro)(uintptr_t)r->microtask, tid, tid, r->argc, args);
    if (tool)
        omp_tool_join_begin(&tool_task, NULL);
    omp_tasks_complete();
    if (tool)
        omp_tool_implicit_end(&tool_task, 0, NULL, true, false);
    *t = saved;
}

/* The master's ICVs that its team's threads inherit, on every node. */
static void region_takes_icvs(struct omp_region *r, const struct omp_icv *icv)
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

static void fork_local(struct omp_thread *t, int asked, kmpc_micro microtask, int argc,
                       const uint64_t *args, const void *codeptr, void *frame)
{
    int n = asked, limit = omp_node_thread_limit();
    /* thread-limit-var counts every thread of the contention group: the
     * outer team's others are busy (OpenMP 5.1 §2.6.1, ThreadsBusy), and
     * OMP_THREAD_LIMIT gives what is left, as libomp, dyn-var or not. */
    if (t->icv.thread_limit > 0) {
        int left = t->icv.thread_limit - (t->nthreads - 1);
        if (n > left)
            n = left > 1 ? left : 1;
    }
    if (n > limit) {
        if (!t->icv.dynamic)
            log_fatal("a nested parallel region asks for %d threads with dynamic adjustment off: "
                      "a nested team is one node's threads, at most %d (dsmrun --threads)",
                      n, limit);
        n = limit;
    }
    if (n <= 1) {
        serialized_begin(t, asked, codeptr, frame, false);
        invoke(microtask, t->tid, 0, argc, args);
        serialized_end(t);
        return;
    }
    struct omp_region *r = calloc(1, sizeof *r);
    if (!r)
        log_fatal("out of memory for a nested OpenMP region");
    r->microtask = (uint64_t)(uintptr_t)microtask;
    r->argc = argc;
    r->nthreads = r->per_node = n;
    /* Dynamic chunks and singles are node 0's, keyed by team: a number
     * the master's teams (counted up from 1) never reach, and no other
     * thread of any node makes (its node and smp index are in it). */
    r->team = 0x80000000u | ((uint32_t)(job()->rank & 0xff) << 23) |
              ((uint32_t)(smp_index() & 0xff) << 15) | (++t->local_teams & 0x7fffu);
    region_takes_icvs(r, &t->icv);
    region_takes_binding(t, r);
    r->local = 1;
    /* the thread's place in its active team: under serialized regions,
     * what the first of them hides */
    r->outer_tid = t->serialized ? t->outer[0].tid : t->tid;
    r->outer_nthreads = t->serialized ? t->outer[0].nthreads : t->nthreads;
    r->outer_level = t->level - t->serialized;
    r->level_base = t->level;
    memcpy(r->args, args, (size_t)argc * sizeof args[0]);
    uint64_t t0 = clock_ns();
    struct omp_tool_par tool_par;
    struct omp_tool_task tool_task, *enc = NULL;
    r->tool_on = omp_tool_on;
    if (r->tool_on) {
        enc = omp_tool_current();
        omp_tool_parallel_begin(&tool_par, asked, false, false, codeptr, frame);
        r->tool_local_par = (uint64_t)(uintptr_t)&tool_par;
        r->tool_local_enc = (uint64_t)(uintptr_t)enc;
    }
    /* The node runs one thread of the outer team: the node's round of
     * helpers is the nested team's (the node's barrier is its barrier).
     * Several: a group of helpers of its own, and a barrier of its own. */
    struct threads_group *group = NULL;
    struct group_barrier gb;
    if (smp_multi()) {
        gb = (struct group_barrier){.lock = PTHREAD_MUTEX_INITIALIZER,
                                    .cv = PTHREAD_COND_INITIALIZER, .count = n};
        r->group_barrier = (uint64_t)(uintptr_t)&gb;
        group = threads_group_run(n - 1, run_local_thread, r);
        if (!group) { /* no thread slots left on the node: a team of one */
            free(r);
            serialized_begin(t, asked, codeptr, frame, false);
            invoke(microtask, t->tid, 0, argc, args);
            serialized_end(t);
            return;
        }
    } else {
        omp_node_threads_begin(n, run_local_thread, r);
    }
    struct omp_thread saved = *t;
    enter(t, r, 0);
    if (r->tool_on)
        omp_tool_implicit_begin(&tool_task, &tool_par, enc, n, 0, false);
    invoke(microtask, 0, 0, argc, args);
    if (r->tool_on)
        omp_tool_join_begin(&tool_task, codeptr);
    omp_tasks_complete();
    if (r->tool_on)
        omp_tool_implicit_end(&tool_task, n, codeptr, true, false);
    *t = saved;
    if (group)
        threads_group_join(group);
    else
        omp_node_threads_end(n);
    if (r->tool_on)
        omp_tool_parallel_end(&tool_par, false, false, codeptr);
    omp_doacross_region_end(r);
    free(r);
    stats_add(STAT_PAR_REGIONS, 1);
    stats_add(STAT_T_PAR_REGION_NS, clock_ns() - t0);
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
    if (nests_here(t, asked)) {
        fork_local(t, asked, microtask, argc, args, codeptr, frame);
        return;
    }
    /* Nested in another active region, or in a teams region (whose
     * teams' initial threads run on every node; dsm starts regions from
     * the master): a team of one, as OpenMP allows; so with
     * max-active-levels 0, as OpenMP asks. Under serialized regions only
     * (the master's), a region is the first active level: the job's team. */
    bool first_active = t->active_level == 0 && (t->level == 0 || master_thread());
    if (!first_active || t->num_teams > 1 || asked <= 1 || t->icv.max_active_levels < 1) {
        serialized_begin(t, asked, codeptr, frame, false);
        invoke(microtask, t->tid, 0, argc, args);
        serialized_end(t);
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
        serialized_begin(t, asked, codeptr, frame, false);
        invoke(microtask, t->tid, 0, argc, args);
        serialized_end(t);
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
        r = t->own_region = dsm_malloc(sizeof *r);
        if (!r)
            log_fatal("no shared memory for an OpenMP region's description");
    }
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
    r->copyprivate_src = 0;
    r->cancelled_construct = 0;
    r->count = (struct team_count){0, 0, 0};
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
        omp_runtime()->create(run_member, r);
    int local = omp_team_on_node(n, per_node, 0);
    omp_node_threads_begin(local, run_thread, r);

    struct omp_thread saved = *t;
    enter(t, r, 0);
    struct omp_tool_team tool_team;
    if (r->tool_on && league)
        omp_tool_team_begin(&tool_team, enc, &tool_par, n, 0);
    else if (r->tool_on)
        omp_tool_implicit_begin(&tool_task, &tool_par, enc, n, 0, false);
    invoke((kmpc_micro)microtask, 0, 0, argc, args);
    if (r->tool_on && !league)
        omp_tool_join_begin(&tool_task, codeptr);
    omp_tasks_complete();
    if (r->tool_on && league)
        omp_tool_team_end(&tool_team, n, 0, codeptr);
    else if (r->tool_on)
        omp_tool_implicit_end(&tool_task, n, codeptr, true, false);
    *t = saved; /* with the ICVs as they were: those set in the region were its own */
    omp_node_threads_end(local);
    if (others)
        omp_runtime()->wait_for_end();
    if (r->tool_on)
        omp_tool_parallel_end(&tool_par, league, false, codeptr);
    omp_doacross_region_end(r);
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
    serialized_begin(t, 1, __builtin_return_address(0), *(void **)__builtin_frame_address(0),
                     true);
}

void __kmpc_end_serialized_parallel(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    serialized_end(omp_self());
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

/* A nested team is one node's: nothing to do beyond the node's threads. */
static void no_node_barrier(void) {}

/* A team on some of the nodes, several threads on this one: the node's
 * threads meet (cohort.c), and the last of them passes the team's
 * barrier of nodes for all. */
static void team_nodes_barrier(void)
{
    struct omp_thread *t = omp_self_owing();
    parallel_team_barrier(&t->region->count, t->team_nodes);
}

static void team_barrier(struct omp_thread *t)
{
    omp_tasks_complete(); /* a barrier completes the team's tasks (OpenMP 5.1 §2.19.2) */
    t->since_barrier = 0;
    if (t->nthreads <= 1)
        return;
    if (t->local_team) { /* a nested team of this node's threads: they meet in memory */
        if (t->region->group_barrier)
            group_barrier_wait((struct group_barrier *)(uintptr_t)t->region->group_barrier);
        else
            sync_node_barrier(no_node_barrier);
        return;
    }
    if (t->icv.cancellation && !smp_multi())
        /* A member may have left by `cancel parallel` (cancel.c): the
         * barrier must not wait for it. Where OpenMP's barrier is no
         * cancellation point, the caller goes on to its next one. (One
         * thread per node: with several, cancel.c refuses `cancel
         * parallel`, and the barriers are the usual ones.) */
        parallel_team_barrier_cancellable(&t->region->count, t->nthreads);
    else if (t->team_nodes == job()->nodes)
        dsm_barrier(); /* the node's threads meet first (cohort.c) */
    else if (smp_multi())
        sync_node_barrier(team_nodes_barrier);
    else
        parallel_team_barrier(&t->region->count, t->team_nodes);
}

/* An owed barrier (see __kmpc_end_reduce) is this one: one barrier serves
 * both. */
void __kmpc_barrier(ident_t *loc, kmp_int32 gtid)
{
    PROFILE_SITE();
    (void)gtid;
    struct omp_thread *t = omp_self_owing();
    t->barrier_owed = false;
    if (!omp_tool_on) {
        team_barrier(t);
        return;
    }
    /* kmp.h's KMP_IDENT_BARRIER_EXPL: the program's own barrier; else the
     * implicit one at a worksharing construct's end (ompt_sync_region_t
     * 3 and 2, as libomp reports them). */
    int kind = loc && (loc->flags & 0x20) ? 3 : 2;
    const void *codeptr = __builtin_return_address(0);
    omp_tool_enter_frame(__builtin_frame_address(0));
    omp_tool_sync(kind, true, codeptr);
    team_barrier(t);
    omp_tool_sync(kind, false, codeptr);
    omp_tool_enter_frame(NULL);
}

void omp_pay_barrier(struct omp_thread *t)
{
    t->barrier_owed = false;
    team_barrier(t);
}

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
        t->region->copyprivate_src = (uint64_t)(uintptr_t)(blob ? blob : cpy_data);
        t->region->copyprivate_blob = blob != NULL;
    }
    __kmpc_barrier(loc, gtid);
    if (!didit) {
        void *src = (void *)(uintptr_t)t->region->copyprivate_src;
        if (t->region->copyprivate_blob) {
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

/* flush (with or without a list: a list may only name fewer variables,
 * and every variable is flushed): this node's writes become visible, and
 * the writes other nodes made visible become visible here (sync/flush.c). */
void __kmpc_flush(ident_t *loc)
{
    (void)loc;
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the node's threads share memory in hardware */
    if (omp_self()->distributed)
        sync_flush();
    if (omp_tool_on)
        omp_tool_flush(__builtin_return_address(0));
}

static void critical(kmp_critical_name *crit, uint32_t hint, const void *codeptr)
{
    if (omp_tool_on) /* ompt_mutex_critical: its wait id is its name */
        omp_tool_mutex_acquire(5, hint, (uint64_t)(uintptr_t)crit, codeptr);
    if (omp_shared(omp_self())) {
        uint64_t t0 = clock_ns();
        omp_lock_take(omp_lock_id_of(crit));
        sync_flush_implied(); /* the entry's flush (sync/flush.c) */
        stats_add(STAT_PAR_CRITICALS, 1);
        stats_add(STAT_T_PAR_CRITICAL_NS, clock_ns() - t0);
    }
    if (omp_tool_on)
        omp_tool_mutex_acquired(5, (uint64_t)(uintptr_t)crit, codeptr);
}

void __kmpc_critical(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit)
{
    PROFILE_SITE();
    (void)loc, (void)gtid;
    critical(crit, 0, __builtin_return_address(0));
}

void __kmpc_critical_with_hint(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit,
                               uint32_t hint)
{
    PROFILE_SITE();
    (void)loc, (void)gtid;
    critical(crit, hint, __builtin_return_address(0));
}

void __kmpc_end_critical(ident_t *loc, kmp_int32 gtid, kmp_critical_name *crit)
{
    (void)loc, (void)gtid;
    if (omp_shared(omp_self()))
        omp_lock_give(omp_lock_id_of(crit));
    if (omp_tool_on)
        omp_tool_mutex_released(5, (uint64_t)(uintptr_t)crit, __builtin_return_address(0));
}

/* Reductions: always the "critical" method (return 1): each thread merges
 * its private copies into the shared variables holding a lock, which also
 * carries the writes from one thread to the next. The "atomic" method
 * (return 2) would have clang merge with hardware atomics on the shared
 * variables, which a page-based DSM cannot make coherent across nodes. */
kmp_int32 __kmpc_reduce_nowait(ident_t *loc, kmp_int32 gtid, kmp_int32 num_vars,
                               size_t reduce_size, void *reduce_data,
                               void (*reduce_func)(void *, void *), kmp_critical_name *lck)
{
    PROFILE_SITE();
    (void)loc, (void)gtid, (void)num_vars, (void)reduce_size, (void)reduce_data, (void)reduce_func;
    struct omp_thread *t = omp_self();
    stats_add(STAT_PAR_REDUCTIONS, 1);
    if (omp_tool_on) /* the merge, as OMPT's reduction (ended at the end entry) */
        omp_tool_reduction(true, __builtin_return_address(0));
    /* A teams region's reduction merges the teams' values: its initial
     * threads take the lock as a team's threads do (teams.c). */
    int merging = omp_in_league(t) ? t->num_teams : t->nthreads;
    /* libomp merges once every thread has arrived (its tree gathers
     * first), so what a thread did before the construct — zeroing the
     * variable in a `single nowait`, as NPB CG does — is never overtaken
     * by another thread's merge. The lock orders only the merges: after
     * another worksharing construct or master since the team's last
     * barrier, the team meets first. (The construct itself counts one.) */
    if (t->nthreads > 1 && t->since_barrier > 1)
        team_barrier(t);
    if (merging > 1 || smp_multi()) {
        uint64_t t0 = clock_ns();
        omp_lock_take(omp_lock_id_of(lck));
        stats_add(STAT_T_PAR_REDUCE_NS, clock_ns() - t0);
    }
    return 1;
}

void __kmpc_end_reduce_nowait(ident_t *loc, kmp_int32 gtid, kmp_critical_name *lck)
{
    (void)loc, (void)gtid;
    struct omp_thread *t = omp_self();
    if (t->nthreads > 1 || omp_in_league(t) || smp_multi())
        omp_lock_give(omp_lock_id_of(lck));
    if (omp_tool_on)
        omp_tool_reduction(false, __builtin_return_address(0));
}

kmp_int32 __kmpc_reduce(ident_t *loc, kmp_int32 gtid, kmp_int32 num_vars, size_t reduce_size,
                        void *reduce_data, void (*reduce_func)(void *, void *),
                        kmp_critical_name *lck)
{
    PROFILE_SITE();
    return __kmpc_reduce_nowait(loc, gtid, num_vars, reduce_size, reduce_data, reduce_func, lck);
}

/* The blocking form ends with a barrier (libomp runs one here), but the
 * construct's own implicit barrier always follows: clang emits
 * __kmpc_barrier right after, with nothing between (checked for `for`,
 * `sections` and dynamic loops, clang 14). A DSM barrier costs a round of
 * messages and every node's release, so this one is only owed: the next
 * entry to the runtime pays it, and when that is __kmpc_barrier, as clang
 * makes it, one barrier serves both. A region's end (the join) settles it
 * too: restoring the thread's state outside the region clears it. */
void __kmpc_end_reduce(ident_t *loc, kmp_int32 gtid, kmp_critical_name *lck)
{
    __kmpc_end_reduce_nowait(loc, gtid, lck);
    struct omp_thread *t = omp_self_owing();
    if (t->nthreads > 1)
        t->barrier_owed = true;
}
