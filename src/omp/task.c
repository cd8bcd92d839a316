/*
 * task.c — explicit tasks, run at once by the thread that meets them or,
 * on a node that runs several threads of the team, queued for the node's
 * threads; and taskloop. Here: a task's block and its creation, its run,
 * the __kmpc entry points, taskgroups and their cancellation, taskloop.
 * It keeps the description of the whole, which the other task files
 * carry out: task_queue.c (the node's queue and its waiting points),
 * task_offer.c (which tasks may leave their node, and the cost model),
 * task_ring.c (the job's task queues in shared memory), task_steal.c
 * (tasks taken from other nodes), task_barrier.c (tasks at a barrier and
 * the region's end), task_deps.c (tracked tasks and their dependences)
 * and task_event.c (detach events and proxy tasks); task_state.h holds
 * what they share.
 *
 * OpenMP lets a task be executed immediately ("undeferred") by its
 * encountering thread; doing so always is a correct implementation, and on
 * a DSM it is also the one that never moves a task's private data between
 * nodes. taskwait and taskgroup then have nothing left to wait for, and
 * dependences are met by program order.
 *
 * An untied task may be suspended at a task scheduling point and resumed
 * by any thread: clang compiles it into parts, and at each such point the
 * running part hands the task back (__kmpc_omp_task on the task itself)
 * and returns. Here the part that returns is followed at once by the next
 * one, on the same thread (running an untied task as if tied is allowed).
 *
 * Several threads of the team on a node (team_layout.c): a task is
 * deferred into a queue of the node, which its threads run at their task
 * scheduling points — taskwait (until the waiting task's children are
 * done), a taskgroup's end (until the group's tasks are), a barrier and
 * the region's end (until every task of the node is), and a task's own
 * end (until its children are: a child's count lives in its parent's
 * record, so the parent waits for it; OpenMP allows the wait). A task
 * whose data means the same on every node (made on a shared stack by a
 * thread of a team over the nodes, its block and shareds in shared
 * memory) may instead be
 * offered to every node and run by another ("tasks that leave their
 * node", task_offer.c); any other stays on its node (its private data is this
 * process's). A task with dependences that stays, while no tracked task
 * (below) is about, waits for its siblings before it runs at once, which
 * meets any dependence among them. With one thread per node, a task that
 * stays is not queued: it runs at once.
 *
 * Tasks that complete later than their routine returns: a detachable
 * task (`detach(event)`: complete once its routine has returned and
 * omp_fulfill_event has been called) and libomp's proxy tasks (a target
 * task's stand-in, completed by __kmpc_proxy_task_completed[_ooo], which
 * any thread may call). Each is "tracked": counted among its parent's
 * children, its taskgroup's and the node's tasks until it completes, so
 * taskwait, a taskgroup's end, a barrier and the region's end wait for
 * it (on a condition: its completion may come from a thread that is no
 * OpenMP thread, or from another node: "detach(event)", task_event.c). A task
 * with dependences on a tracked sibling not yet complete cannot run at
 * once: it is deferred, tracked too, and queued for the node's threads
 * (or offered to every node, when it may leave its node: task_offer.c) once no
 * earlier sibling it depends on is left (in creation order, as OpenMP
 * orders dependences), so the encountering thread goes on at once, as
 * OpenMP asks. A task with dependences that may leave its node is
 * tracked too, wherever it runs. A tracked task's predecessors are found
 * per address, as libomp finds them ("struct dep_entry", task_deps.c).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/stack.h"
#include "base/stats.h"
#include "dsm.h"
#include "mem/mem.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"
#include "sync/sync.h"

/* Final tasks running on this thread (omp_in_final). */
__thread int task_in_final TASK_TLS;

/* A taskyield is looking for a task to run: the first it begins is
 * reported to a tool as ompt_task_yield. */
static __thread bool yielding;

int omp_in_final(void) { return task_in_final > 0; }

/* A task's block in shared memory (`shared`: one that may leave its
 * node, task_offer.c) or in the node's own. */
static kmp_task_t *task_new(size_t size, size_t shareds_at, bool shared)
{
    struct task_prefix *p = shared ? dsm_malloc(sizeof *p + size) : NULL;
    if (p)
        memset(p, 0, sizeof *p + size);
    else
        p = calloc(1, sizeof *p + size);
    if (!p)
        log_fatal("out of memory for an OpenMP task");
    *p = (struct task_prefix){.size = size, .shareds_at = shareds_at};
    return (kmp_task_t *)(p + 1);
}

void task_free(kmp_task_t *t)
{
    struct task_prefix *p = task_prefix_of(t);
    if (mem_contains(p->tool))
        dsm_free(p->tool);
    else
        free(p->tool);
    if (mem_contains(p))
        dsm_free(p);
    else
        free(p);
}

/* ---- OMPT (ompt.c) ------------------------------------------------------------ */

/* kmp_tasking_flags bits OMPT reports (kmp.h): tiedness, final, merged_if0. */
enum { TASK_TIED = 0x1, TASK_MERGED_IF0 = 0x4 };

/* A task's OMPT type: explicit, undeferred when its team is one thread or
 * it is included (made in a final task) or if(0), untied, final,
 * mergeable (ompt_task_flag_t), as libomp reports them. */
static int tool_type(const kmp_task_t *task, bool if0)
{
    int32_t f = task_prefix_of((kmp_task_t *)task)->flags;
    int type = 0x4; /* ompt_task_explicit */
    if (if0 || task_in_final > 0 || omp_self()->nthreads <= 1)
        type |= 0x08000000; /* ompt_task_undeferred */
    if (!(f & TASK_TIED))
        type |= 0x10000000; /* ompt_task_untied */
    if (f & TASK_FINAL)
        type |= 0x20000000; /* ompt_task_final */
    if (f & TASK_MERGED_IF0)
        type |= 0x40000000; /* ompt_task_mergeable */
    return type;
}

/* The task's creation, reported from the runtime entry that made it. */
static void tool_create(kmp_task_t *task, bool if0, bool deps, const void *codeptr)
{
    struct task_prefix *p = task_prefix_of(task);
    if (p->tool)
        return;
    /* Beside a block in shared memory (a task that may leave its node)
     * the record is shared too: the node that runs the task reports it. */
    p->tool = mem_contains(p) ? dsm_malloc(sizeof *p->tool) : NULL;
    if (p->tool)
        memset(p->tool, 0, sizeof *p->tool);
    else
        p->tool = calloc(1, sizeof *p->tool);
    if (!p->tool)
        log_fatal("out of memory for an OpenMP task's tool record");
    omp_tool_task_create(p->tool, tool_type(task, if0), deps, codeptr);
    omp_tool_task_memory(p->tool, task, p->size);
}

struct taskgroup *omp_taskgroup_outer(struct taskgroup *g) { return g->outer; }
struct omp_taskred **omp_taskgroup_reduction(struct taskgroup *g) { return &g->reduction; }

struct taskgroup *omp_taskgroup_current(void) { return task_current_rec()->group; }

/* The cancel word of the taskgroup a task made now would belong to: the
 * innermost open in the current task, or, in a task another node made,
 * the one it came with. NULL: none, or cancellation is off. */
int *task_group_cancel(const struct task_rec *r) { return r->group ? r->group->cancel : r->cancel; }

/* Whether the current task's taskgroups (the innermost it came with,
 * where another node made it) were cancelled, as this node last saw. */
static bool group_cancelled(const struct task_rec *r)
{
    for (const struct taskgroup *g = r->group; g; g = g->outer)
        if (g->cancel && __atomic_load_n(g->cancel, __ATOMIC_RELAXED))
            return true;
    return r->cancel && __atomic_load_n(r->cancel, __ATOMIC_RELAXED);
}

kmp_task_t *__kmpc_omp_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                  size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                  kmp_routine_entry_t task_entry)
{
    (void)loc, (void)gtid;
    /* The task, then its shareds, 16-byte aligned as libomp lays them. */
    size_t head = (sizeof_kmp_task_t + 15) & ~(size_t)15;
    task_offer.seen = true;
    /* A proxy task's block is shared memory in a job of several nodes, so
     * that a thread of any node may complete it (proxy_completed); it
     * never leaves its node. */
    bool proxy = flags & TASK_PROXY;
    kmp_task_t *t = task_new(head + sizeof_shareds + 16, sizeof_shareds ? head : 0,
                             task_offer_candidate(flags, task_entry) || (proxy && job()->nodes > 1));
    if (proxy && !mem_contains(t)) /* completed by a thread of this node: none leave it */
        task_offer.completions = true;
    t->shareds = sizeof_shareds ? (char *)t + head : NULL;
    t->routine = task_entry;
    /* A final task's descendants are final (and included) too. */
    task_prefix_of(t)->flags = flags | (task_in_final ? TASK_FINAL : 0);
    task_prefix_of(t)->shareds_len = (uint32_t)sizeof_shareds;
    task_prefix_of(t)->depth = task_current_rec()->depth + 1;
    if (mem_contains(t) && !proxy)
        task_prefix_of(t)->from = task_chain_from();
    return t;
}

/* `target nowait` without offloading (dsm has no device: clang emits the
 * target region as host code): the task that stands for it, a plain
 * task of the host, as libomp makes it. */
kmp_task_t *__kmpc_omp_target_task_alloc(ident_t *loc, kmp_int32 gtid, kmp_int32 flags,
                                         size_t sizeof_kmp_task_t, size_t sizeof_shareds,
                                         kmp_routine_entry_t task_entry, kmp_int64 device_id)
{
    (void)device_id;
    return __kmpc_omp_task_alloc(loc, gtid, flags, sizeof_kmp_task_t, sizeof_shareds, task_entry);
}


/* `cancel taskgroup`: the innermost taskgroup of the current task.
 * Its tasks not begun are discarded where they would run; those running
 * see it at their cancellation points. Where its tasks may run on other
 * nodes, the word is shared memory, and the flush publishes it. */
int omp_taskgroup_cancel(void)
{
    int *cancel = task_group_cancel(task_current_rec());
    if (!cancel)
        return 0; /* no taskgroup: nothing to cancel */
    __atomic_store_n(cancel, 1, __ATOMIC_RELAXED);
    if (mem_contains(cancel))
        sync_flush();
    return 1;
}

int omp_taskgroup_cancelled(void)
{
    int *cancel = task_group_cancel(task_current_rec());
    if (cancel && mem_contains(cancel) && !__atomic_load_n(cancel, __ATOMIC_RELAXED))
        sync_flush(); /* another node's cancel */
    return group_cancelled(task_current_rec());
}

/* Its frame is the task's exit frame for a tool: the routine's caller's. */
__attribute__((noinline)) void task_run(kmp_int32 gtid, kmp_task_t *task)
{
    struct task_prefix *p = task_prefix_of(task);
    struct omp_tool_task *tool = omp_tool_on ? task_prefix_of(task)->tool : NULL;
    if (group_cancelled(task_current_rec())) { /* its taskgroup was cancelled before it began */
        if (tool)
            omp_tool_task_discarded(tool);
        return;
    }
    p->running = 1;
    stats_add(STAT_PAR_TASKS_RUN, 1);
    bool final = p->flags & TASK_FINAL;
    if (tool) {
        omp_tool_task_begin_as(tool, yielding ? 2 : 7); /* ompt_task_yield, ompt_task_switch */
        yielding = false;
        omp_tool_exit_frame(__builtin_frame_address(0));
    }
    task_in_final += final;
    int depth = p->depth;
    struct task_cost *cost =
        depth >= 1 && depth <= OFFER_DEPTH && job()->nodes > 1 ? task_cost_of(task->routine, depth, true)
                                                               : NULL;
    uint64_t start = cost ? clock_ns() : 0;
    do {
        p->again = 0;
        task->routine(gtid, task);
    } while (p->again);
    if (cost) { /* for the cut-off by time (task_offer_candidate) */
        __atomic_fetch_add(&cost->ns, clock_ns() - start, __ATOMIC_RELAXED);
        __atomic_fetch_add(&cost->runs, 1, __ATOMIC_RELAXED);
    }
    task_in_final -= final;
    if (tool) /* ompt_task_cancel where its taskgroup was cancelled, else ompt_task_complete */
        omp_tool_task_end(tool, group_cancelled(task_current_rec()) ? 3 : 1);
    p->running = 0;
}

/* A task run at once by the thread that meets it, with a record of its
 * own: a task it creates that is tracked or queued counts there, and the
 * task ends after it (as a queued task does). */
static void run_now(kmp_int32 gtid, kmp_task_t *task)
{
    struct task_rec *parent = task_current_rec();
    struct task_rec rec = {.children = 0, .group = parent->group, .parent = parent,
                           .depth = parent->depth + 1, .cancel = parent->cancel,
                           .data_private = !mem_contains(task)};
    struct task_rec *outer = task_current;
    task_current = &rec;
    task_run(gtid, task);
    if (__atomic_load_n(&rec.children, __ATOMIC_ACQUIRE) > 0)
        task_run_until_zero(&rec.children);
    task_current = outer;
}

static kmp_int32 omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, bool may_move);

kmp_int32 __kmpc_omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    if (!task_prefix_of(task)->running) /* else an untied task's next part */
        stats_add(STAT_PAR_TASKS_CREATED, 1);
    if (!omp_tool_on)
        return omp_task(loc, gtid, task, true);
    if (task_prefix_of(task)->running) /* an untied task's next part: no new task */
        return omp_task(loc, gtid, task, true);
    omp_tool_enter_frame(__builtin_frame_address(0));
    tool_create(task, false, false, __builtin_return_address(0));
    kmp_int32 r = omp_task(loc, gtid, task, true);
    omp_tool_enter_frame(NULL);
    return r;
}

/* may_move: false for a task with dependences that stays (run here, in order). */
static kmp_int32 omp_task(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, bool may_move)
{
    (void)loc;
    if (task_prefix_of(task)->running) { /* an untied task's next part */
        task_prefix_of(task)->again = 1;
        return 0;
    }
    bool cancelled = group_cancelled(task_current_rec());
    if (task_prefix_of(task)->flags & TASK_BEGUN_IF0) { /* an untied if(0) task's body */
        if (!cancelled)
            run_now(gtid, task);
        return 0; /* freed by __kmpc_omp_task_complete_if0 */
    }
    if (task_tracks(task) && !cancelled) { /* a detached task may leave, a proxy one not */
        task_submit_tracked(gtid, task, 0, NULL, 0, NULL, may_move && task_offerable(task));
        return 0;
    }
    if (may_move && !cancelled && task_offerable(task) && task_offer_task(gtid, task))
        return 0;
    /* In a final task, a new task is included: run now by this thread. */
    if (task_should_defer() && !cancelled && !task_in_final) {
        task_defer(gtid, task);
        return 0;
    }
    if (!cancelled) /* in a cancelled taskgroup, a new task is discarded */
        run_now(gtid, task);
    task_free(task);
    return 0;
}

/* OMPT's view of a dependence (omp-tools.h ompt_dependence_t). */
struct tool_dep {
    void    *variable;
    uint32_t type; /* ompt_dependence_type_t: in 1, out 2, inout 3, mutexinoutset 4 ... */
};

static void tool_deps(kmp_task_t *task, kmp_int32 ndeps, const struct kmp_depend_info *deps,
                      kmp_int32 nnoalias, const struct kmp_depend_info *noalias)
{
    int n = ndeps + nnoalias;
    struct tool_dep *d = calloc((size_t)(n ? n : 1), sizeof *d);
    if (!d)
        log_fatal("out of memory for an OpenMP task's dependences");
    for (int i = 0; i < n; i++) {
        const struct kmp_depend_info *k = i < ndeps ? &deps[i] : &noalias[i - ndeps];
        uint8_t f = k->flags;
        d[i].variable = (void *)k->base_addr;
        d[i].type = (f & 0x80) ? 1 /* all memory: as an in */
                    : (f & 3) == 3 ? 3 : (f & 2) ? 2 : (f & 4) ? 4 : (f & 8) ? 6 : 1;
    }
    omp_tool_dependences(task_prefix_of(task)->tool, d, n);
    free(d);
}

static kmp_int32 omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias);

kmp_int32 __kmpc_omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias)
{
    stats_add(STAT_PAR_TASKS_CREATED, 1);
    if (!omp_tool_on)
        return omp_task_with_deps(loc, gtid, task, ndeps, deps, ndeps_noalias, noalias);
    omp_tool_enter_frame(__builtin_frame_address(0));
    tool_create(task, false, ndeps + ndeps_noalias > 0, __builtin_return_address(0));
    tool_deps(task, ndeps, deps, ndeps_noalias, noalias);
    kmp_int32 r = omp_task_with_deps(loc, gtid, task, ndeps, deps, ndeps_noalias, noalias);
    omp_tool_enter_frame(NULL);
    return r;
}

static kmp_int32 omp_task_with_deps(ident_t *loc, kmp_int32 gtid, kmp_task_t *task,
                                    kmp_int32 ndeps, const struct kmp_depend_info *deps,
                                    kmp_int32 ndeps_noalias, const struct kmp_depend_info *noalias)
{
    bool cancelled = group_cancelled(task_current_rec());
    /* One that may leave the node is tracked here wherever it runs: its
     * later siblings find it until it completes. */
    bool movable = !cancelled && task_offerable(task);
    if (!cancelled &&
        (task_tracks(task) || movable || task_tracked_about() || task_tool_should_defer())) {
        task_submit_tracked(gtid, task, ndeps, deps, ndeps_noalias, noalias, movable);
        return 0;
    }
    if (smp_multi() || task_queue_all) { /* its siblings first, then it, at once: every dependence met */
        task_wait_children();
        if (!cancelled)
            run_now(gtid, task);
        task_free(task);
        return 0;
    }
    return omp_task(loc, gtid, task, false);
}

/* if(0) tasks: the compiler calls the routine itself between these. For
 * a tool the task begins and ends here; the program's frame that calls
 * the routine is its exit frame. */
void __kmpc_omp_task_begin_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    stats_add(STAT_PAR_TASKS_CREATED, 1);
    stats_add(STAT_PAR_TASKS_RUN, 1); /* the compiler's code runs it, here */
    /* clang's inline code for an untied if(0) task runs none of the body:
     * its part 0 hands the task on (__kmpc_omp_task) for part 1, the body,
     * and then completes it here (__kmpc_omp_task_complete_if0). So that
     * hand-on runs the task at once and leaves its freeing to the
     * completion (BOTS fib with its if-clause cut-off freed it twice:
     * "free(): invalid pointer"; libomp asserts on it). */
    task_prefix_of(task)->flags |= TASK_BEGUN_IF0;
    if (!omp_tool_on)
        return;
    /* The caller's frame: the saved frame pointer (built with them). */
    void *program_frame = *(void **)__builtin_frame_address(0);
    omp_tool_enter_frame(program_frame);
    tool_create(task, true, false, __builtin_return_address(0));
    omp_tool_task_begin(task_prefix_of(task)->tool);
    omp_tool_exit_frame(program_frame);
}

void __kmpc_omp_task_complete_if0(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    if (omp_tool_on && task_prefix_of(task)->tool) { /* ompt_task_cancel, ompt_task_complete */
        omp_tool_task_end(task_prefix_of(task)->tool, group_cancelled(task_current_rec()) ? 3 : 1);
        omp_tool_enter_frame(NULL);
    }
    struct task_prefix *p = task_prefix_of(task);
    if (p->flags & TASK_DETACHABLE) { /* undeferred: complete once its event is fulfilled */
        pthread_mutex_lock(&task_nodeq.lock);
        struct waiting w = {0};
        while (p->parts > 0)
            if (!task_run_one_locked())
                task_await_locked(&p->parts, &w);
        pthread_mutex_unlock(&task_nodeq.lock);
    }
    task_free(task);
}

void __kmpc_omp_wait_deps(ident_t *loc, kmp_int32 gtid, kmp_int32 ndeps, void *deps,
                          kmp_int32 ndeps_noalias, void *noalias)
{
    (void)loc, (void)gtid, (void)ndeps, (void)deps, (void)ndeps_noalias, (void)noalias;
    task_wait_children(); /* an if(0) task with dependences: its siblings first */
}

/* taskwait, taskyield and a taskgroup's end have nothing to wait for
 * (tasks ran at once), but OpenMP implies a flush there: the acquire
 * half, as at a critical's entry (sync/flush.c); the release half is a
 * later release's. */
static void implied_flush(void)
{
    if (omp_self()->distributed)
        sync_flush_implied();
}

kmp_int32 __kmpc_omp_taskwait(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    const void *codeptr = __builtin_return_address(0);
    if (omp_tool_on) { /* ompt_sync_region_taskwait */
        omp_tool_enter_frame(__builtin_frame_address(0));
        omp_tool_sync(5, true, codeptr);
    }
    task_wait_children();
    implied_flush();
    if (omp_tool_on) {
        omp_tool_sync(5, false, codeptr);
        omp_tool_enter_frame(NULL);
    }
    return 0;
}

/* taskyield: one task this thread may run now, if there is one (as
 * libomp: a loop that yields while it waits for another task's work lets
 * that work run here), the node's queued first, then one it offered. */
kmp_int32 __kmpc_omp_taskyield(ident_t *loc, kmp_int32 gtid, int end_part)
{
    (void)loc, (void)gtid, (void)end_part;
    yielding = true;
    bool ran = false;
    if (task_queue_in_use()) {
        pthread_mutex_lock(&task_nodeq.lock);
        ran = task_run_one_locked();
        bool offered = task_offered_out > 0;
        pthread_mutex_unlock(&task_nodeq.lock);
        if (!ran && offered)
            task_offered_work();
    }
    yielding = false;
    implied_flush();
    return 0;
}

void __kmpc_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (omp_tool_on) /* ompt_sync_region_taskgroup; its wait is at the end */
        omp_tool_sync_region(6, true, __builtin_return_address(0));
    struct taskgroup *g = calloc(1, sizeof *g);
    if (!g)
        log_fatal("out of memory for an OpenMP taskgroup");
    if (omp_self_owing()->icv.cancellation) {
        /* Shared where its tasks may be offered (the tasks of a team over
         * the nodes made on a shared stack): they read it on any node. */
        g->cancel = task_team_queues() && stack_on_shared() ? dsm_malloc(sizeof *g->cancel) : NULL;
        if (g->cancel)
            *g->cancel = 0;
        else
            g->cancel = &g->cancelled;
    }
    struct task_rec *r = task_current_rec();
    g->outer = r->group;
    r->group = g;
}

static void end_taskgroup(void);

void __kmpc_end_taskgroup(ident_t *loc, kmp_int32 gtid)
{
    (void)loc, (void)gtid;
    if (!omp_tool_on) {
        end_taskgroup();
        return;
    }
    const void *codeptr = __builtin_return_address(0);
    omp_tool_enter_frame(__builtin_frame_address(0));
    omp_tool_sync_wait(6, true, codeptr);
    end_taskgroup();
    omp_tool_sync_wait(6, false, codeptr);
    omp_tool_sync_region(6, false, codeptr);
    omp_tool_enter_frame(NULL);
}

static void end_taskgroup(void)
{
    struct task_rec *r = task_current_rec();
    if (r->group) { /* opened with the node's threads running: its tasks first */
        struct taskgroup *g = r->group;
        task_run_until_zero(&g->count);
        if (g->reduction)
            omp_taskred_finish(g->reduction);
        r->group = g->outer;
        if (g->cancel && g->cancel != &g->cancelled)
            dsm_free(g->cancel);
        free(g);
    }
    implied_flush();
}

/* taskloop: the loop's iterations cut into tasks as its clause says
 * (grainsize: each task at least that many iterations and fewer than
 * twice; num_tasks: that many, or one per iteration; neither: ten per
 * thread of the team, as libomp), each a copy of the pattern task with
 * its bounds set (lb and ub point into the pattern; the copy's are at
 * the same offsets), task_dup copying its firstprivates and telling the
 * last one it is last (lastprivate), and each run at once. */
typedef void (*kmp_task_dup_t)(kmp_task_t *dst, kmp_task_t *src, kmp_int32 lastpriv);

void __kmpc_taskloop(ident_t *loc, kmp_int32 gtid, kmp_task_t *task, kmp_int32 if_val,
                     kmp_uint64 *lb, kmp_uint64 *ub, kmp_int64 st, kmp_int32 nogroup,
                     kmp_int32 sched, kmp_uint64 grainsize, void *task_dup)
{
    (void)loc, (void)if_val, (void)nogroup;
    const void *codeptr = __builtin_return_address(0);
    kmp_int64 lo = (kmp_int64)*lb, hi = (kmp_int64)*ub;
    if (st == 0)
        log_fatal("taskloop with a zero increment");
    uint64_t trip = sched_trip(lo, hi, st, false);
    uint64_t ntasks;
    if (sched == 1) /* grainsize */
        ntasks = grainsize ? trip / grainsize : trip;
    else if (sched == 2) /* num_tasks */
        ntasks = grainsize < trip ? grainsize : trip;
    else
        ntasks = (uint64_t)omp_self()->nthreads * 10;
    if (ntasks < 1)
        ntasks = 1;
    if (ntasks > trip)
        ntasks = trip ? trip : 1;
    size_t lb_at = (size_t)((char *)lb - (char *)task), ub_at = (size_t)((char *)ub - (char *)task);
    struct task_prefix *p = task_prefix_of(task);
    uint64_t first = 0;
    if (omp_tool_on) { /* ompt_work_taskloop */
        omp_tool_enter_frame(__builtin_frame_address(0));
        omp_tool_work(7, true, trip, codeptr);
    }
    for (uint64_t k = 0; k < ntasks && trip; k++) {
        uint64_t count = trip / ntasks + (k < trip % ntasks);
        kmp_task_t *c = task_new(p->size, p->shareds_at, false);
        memcpy(c, task, p->size);
        if (p->shareds_at)
            c->shareds = (char *)c + p->shareds_at;
        kmp_uint64 clo = (kmp_uint64)sched_value(lo, st, first);
        kmp_uint64 chi = (kmp_uint64)sched_value(lo, st, first + count - 1);
        memcpy((char *)c + lb_at, &clo, sizeof clo);
        memcpy((char *)c + ub_at, &chi, sizeof chi);
        if (task_dup)
            ((kmp_task_dup_t)task_dup)(c, task, k == ntasks - 1);
        task_prefix_of(c)->tool = NULL; /* the copy's own, below */
        task_prefix_of(c)->flags = p->flags;
        if (omp_tool_on)
            tool_create(c, false, false, codeptr);
        stats_add(STAT_PAR_TASKS_CREATED, 1);
        task_run(gtid, c);
        task_free(c);
        first += count;
    }
    if (omp_tool_on) {
        omp_tool_work(7, false, trip, codeptr);
        omp_tool_enter_frame(NULL);
    }
    task_free(task);
}
