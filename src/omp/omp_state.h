/*
 * omp_state.h — the OpenMP runtime's state on a node (internal to src/omp).
 *
 * A team of n threads runs on nodes × threads (team_layout.c): p =
 * ceil(n / nodes) threads on each node, node-major, so thread i is thread
 * i % p of node i / p, and the master thread is node 0's first, which
 * alone runs the program's main (master-only start, dsmcc). With n no
 * larger than the nodes, p = 1: one thread per node, as dsm always ran.
 * A parallel region is a dsm_create of every node with a description of
 * the region that the master writes into shared memory; each node runs it
 * on its threads of the team (the SMP machinery: parallel/threads.c,
 * sync/cohort.c) and the region ends when every node has returned
 * (dsm_wait_for_end), which is the release and acquire the end of a
 * region needs. The state below is per thread.
 */
#ifndef DSM_OMP_STATE_H
#define DSM_OMP_STATE_H
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>

#include "base/smp.h"
#include "parallel/parallel.h"

/* The most arguments (shared variables) an outlined region may take. */
#define OMP_MAX_ARGS 64

/* ---- OMPT's records (ompt.c) ---- */

/* A parallel region, as a tool sees it. */
struct omp_tool_par {
    uint64_t             data;          /* ompt_data_t: the tool's */
    int32_t              team_size;
    struct omp_tool_par *outer;         /* the region around it (ompt_get_parallel_info) */
};

/* A task, as a tool sees it: data, frames, type. */
struct omp_tool_task {
    uint64_t              data;         /* ompt_data_t: the tool's */
    uint64_t              exit_frame, enter_frame; /* with the two flags: an ompt_frame_t */
    int32_t               exit_flags, enter_flags;
    int32_t               type, thread_num;
    struct omp_tool_par  *par;          /* the region it binds to */
    struct omp_tool_task *parent;       /* the task it was made in: ompt_get_task_info's next level */
    struct omp_tool_task *saved;        /* what its thread ran before it */
    int32_t               saved_state;
    void                 *memory;       /* an explicit task's data (ompt_get_task_memory) */
    size_t                memory_size;
};

/* A team of a teams region, as a tool sees it (libomp's shape): the
 * team's initial task in a region of its own, and in it a region of one
 * thread whose implicit task runs the team's code. */
struct omp_tool_team {
    struct omp_tool_par  team_par, inner_par;
    struct omp_tool_task initial, implicit;
};

/* What a team's threads on several nodes write for one another while a
 * region runs: in shared memory, the master's, reused region after region
 * (region.c clears at a fork only what a region left set, so that a region
 * that uses none of it moves none of it). */
struct omp_team_shared {
    uint64_t          copyprivate_src;  /* a single's data, for copyprivate */
    uint32_t          copyprivate_blob; /* copyprivate_src is a copy's blob (team_single.c) */
    uint32_t          cancelled_construct; /* the worksharing construct cancelled (cancel.c) */
    uint64_t          doacross, doacross_prev; /* ordered(n) loops' words (doacross.c) */
    struct team_count count;            /* a partial team's barrier */
};

/* A region, as the master describes it to the team: a copy on each node
 * (the create carries it, region.c), read only while the region runs;
 * what the team writes for one another is in `shared`. */
struct omp_region {
    uint64_t          microtask;
    int32_t           argc, nthreads;
    int32_t           per_node;         /* threads per node (team_layout.c) */
    uint32_t          team;             /* regions run so far, this one included */
    int32_t           league;           /* a teams region: each thread is its own team's (teams.c) */
    int32_t           thread_limit;     /* a teams region: each team's thread-limit-var (0: none) */
    struct sched_spec run_sched;        /* the master's run-sched-var */
    int32_t           max_task_priority, target_offload; /* the master's job-wide ICVs */
    int32_t           nthreads_var, dynamic, max_active_levels; /* the master's, inherited */
    int32_t           thread_limit_var, blocktime;              /* the master's, inherited */
    int8_t            bind, child_bind[8], nchild_bind; /* its binding, its threads' bind-var */
    int32_t           master_place, part_first, part_count; /* the master's, on node 0 */
    uint32_t          affinity_gen;     /* the master's affinity format (affinity.c) */
    uint64_t          affinity_fmt;
    /* OMPT (ompt.c): what the other nodes' threads report of the region
     * and see one level up (the master's encountering task). */
    int32_t           tool_on, tool_enc_type, tool_enc_thread_num, tool_enc_team_size;
    uint64_t          tool_par, tool_enc_data, tool_enc_par, tool_enc_exit, tool_enc_enter;
    int32_t           nested;           /* inner regions may have teams of a node's threads */
    int32_t           local;            /* a team of one node's threads, nested (region_nested.c) */
    int32_t           outer_tid, outer_nthreads; /* local: the encountering thread's in its active team */
    int32_t           level_base, outer_level; /* the encountering thread's level; local: its team's */
    uint64_t          group_barrier;    /* local, beside other teams of the node: its own barrier */
    uint64_t          tool_local_par, tool_local_enc; /* local: OMPT's records (node pointers) */
    uint64_t          task_nodes;       /* the nodes' task queues (task_ring.c); 0: none */
    int32_t           tasks_seen;       /* the master's node had made tasks before this region */
    struct omp_team_shared *shared;     /* the team's words for one another */
    uint64_t          args[OMP_MAX_ARGS]; /* argc of them: only those travel */
};

/* The worksharing loop in progress on this node. */
struct omp_loop {
    struct loop_id  id;
    enum sched_kind kind;
    bool            ordered;
    bool            monotonic;  /* chunks in order: the one counter (parallel/dispatch.c) */
    bool            unsigned_;
    int64_t         lb, st;
    uint64_t        trip, chunk;
    uint64_t        next;       /* static: our next chunk (k-th); serial dynamic: next iteration */
    uint64_t        run_next, run_end; /* dynamic: the rest of a batch of chunks taken at once */
    uint64_t        ran;        /* dynamic: chunks this thread ran of the loop */
    bool            done;
    uint64_t        cur, end;   /* ordered: iteration running, end of its chunk */
    bool            has_turn;   /* ordered: `cur` has been given its turn */
    struct loop_site *site;     /* profiled: its site; NULL otherwise */
    struct loop_plan  plan;     /* profiled: this execution's division */
};

/* Internal control variables (OpenMP 5.1 §2.4), those dsm honours. */
struct omp_icv {
    int               nthreads;        /* nthreads-var: OMP_NUM_THREADS, omp_set_num_threads */
    struct sched_spec run_sched;       /* run-sched-var: OMP_SCHEDULE, omp_set_schedule */
    struct sched_spec static_sched;    /* DSM_OMP_STATIC: how static loops are divided */
    bool              dynamic;         /* dyn-var */
    int               max_active_levels;
    bool              cancellation;    /* cancel-var: OMP_CANCELLATION */
    int               max_task_priority; /* OMP_MAX_TASK_PRIORITY */
    int               target_offload;  /* target-offload-var: OMP_TARGET_OFFLOAD */
    int               nteams;          /* nteams-var: OMP_NUM_TEAMS (0: one team per node) */
    int               teams_thread_limit; /* teams-thread-limit-var: OMP_TEAMS_THREAD_LIMIT (0: none) */
    int               thread_limit;    /* thread-limit-var: OMP_THREAD_LIMIT (0: none but the job's) */
    int               blocktime;       /* ms a waiting thread may spin: KMP_BLOCKTIME, OMP_WAIT_POLICY,
                                        * kmp_set_blocktime (-1: dsm's own, 50 µs at most) */
    int8_t            bind[8];         /* bind-var, one per nesting level: OMP_PROC_BIND (affinity.c) */
    int               nbind;
};

/* Two levels of active regions: the job's teams, and inside them teams of
 * a node's threads (region_nested.c, region_fork_local). */
#define OMP_SUPPORTED_LEVELS 2

/* target-offload-var's values, as libomp's kmp_target_offload_kind. */
enum { OMP_TARGET_OFFLOAD_DISABLED = 0, OMP_TARGET_OFFLOAD_DEFAULT = 1, OMP_TARGET_OFFLOAD_MANDATORY = 2 };

/* The settings of the environment (OMP_NUM_THREADS, OMP_SCHEDULE, …) into
 * a thread's ICVs, over the defaults already there (settings.c). */
struct omp_thread;
void omp_settings_from_env(struct omp_thread *t);
/* The master's settings again at the program's first OpenMP call, for the
 * ones main changed since they were read before it (settings.c). */
void omp_settings_recheck_owed(struct omp_thread *t);
void omp_settings_since_main(struct omp_thread *t);

/* What a serialized (nested or one-thread) region hides while it runs. */
#define OMP_MAX_NESTING 32
struct omp_outer {
    struct omp_icv  icv;        /* ICVs set inside the region are its own */
    int             tid, nthreads;
    uint32_t        loop;
    struct omp_loop loop_state;
    struct omp_tool_par  tool_par;   /* OMPT: the serialized region and its task */
    struct omp_tool_task tool_task;
    const void          *tool_codeptr;
    bool                 tool_program;  /* if(0): the program calls the code */
};

struct omp_thread {
    bool               ready;
    bool               distributed;     /* in a job of several nodes (else one thread in all) */
    int                tid, nthreads;   /* in the innermost region */
    int                team_nodes;      /* nodes the active region's team spans */
    int                gtid;            /* in the active region: its thread number there */
    int                level, active_level;
    int                team_num, num_teams; /* in a teams region (teams.c); else 0 and 1 */
    int                thread_limit;    /* a teams region's thread_limit (0: none) */
    int                pushed_teams, pushed_team_threads; /* num_teams, thread_limit for the next teams */
    bool               local_team;      /* in a nested team of this node's threads (region_nested.c) */
    int                outer_tid, outer_nthreads; /* then: the outer team's thread that started it */
    int                outer_level;     /* then: the outer team's level */
    uint32_t           local_teams;     /* nested teams this thread started */
    uint32_t           team;            /* the active region's number */
    uint32_t           loop;            /* worksharing loops met in it */
    int                pushed_threads;  /* num_threads clause for the next fork */
    struct omp_loop    loop_state;
    struct omp_icv     icv;
    struct omp_region *region;          /* the active region's description */
    struct omp_region *own_region;      /* at the master: where it writes them (its own memory) */
    struct omp_team_shared *own_shared; /* at the master: its teams' words (shared memory) */
    uint32_t           teams_started;   /* at the master */
    struct omp_outer   outer[OMP_MAX_NESTING];
    int                serialized;      /* entries of outer in use */
    bool               barrier_owed;    /* a blocking reduction's barrier, not yet run */
    bool               settings_owed;   /* at the master: main may have set OMP_ variables */
    /* Worksharing constructs (loops, sections, singles) and masters met
     * since the team's last barrier: a reduction after an earlier one
     * waits for the team first (team_sync.c, __kmpc_reduce_nowait). */
    int                since_barrier;
    char              *stack_hi;        /* at a member: its stack above the region's frames */
    int                place;           /* the place it is bound to, -1: none (affinity.c) */
    int                part_first, part_count; /* place-partition-var */
    int                pushed_bind;     /* proc_bind clause for the next fork (0: none) */
};

/* ---- places and affinity (affinity.c) ---- */

/* bind-var and the place partition of a thread's first use. */
void omp_affinity_init_icvs(struct omp_thread *t);
/* A thread enters a region as the k-th of its node's `count` threads of
 * the team: its place and partition, and its binding. */
void omp_affinity_enter(struct omp_thread *t, int bind, int master_place, int part_first,
                        int part_count, int k, int count);
/* OMP_DISPLAY_AFFINITY's line for the thread at a region's start. */
void omp_affinity_display(struct omp_thread *t, int bind);
/* The master's affinity format for the other nodes, and their taking it. */
void omp_affinity_publish(uint64_t *fmt, uint32_t *gen);
void omp_affinity_take(uint64_t fmt, uint32_t gen);
int  omp_affinity_num_places(void);
int  omp_affinity_place_num(void);
int  omp_get_place_num_procs(int place);
void omp_get_place_proc_ids(int place, int *ids);
int  omp_get_partition_num_places(void);
void omp_get_partition_place_nums(int *nums);

/* ---- OMPT: a tool's view of the runtime (ompt.c) ----
 * Every omp_tool_* call does nothing unless a tool runs on this node
 * (omp_tool_on); callers test it first where building the call costs. */
extern bool omp_tool_on;
/* The node's tool: found and started once, at the runtime's first use. */
void omp_tool_node_init(void);
/* The runtime's fork style (omp_api.c, lent by omp_start; omp.h). */
struct omp_runtime_ops;
const struct omp_runtime_ops *omp_runtime(void);
/* omp_start's params; zeros before it. */
const struct omp_params *omp_params(void);
/* A thread's first use (thread_begin; node 0's first: the initial task). */
void omp_tool_thread_begin(void);
/* The node's end: thread_end on every thread of the node, finalize. */
void omp_tool_finish(void);
struct omp_tool_task *omp_tool_current(void);
void omp_tool_set_state(int state);
/* The current task's frames: where the runtime was entered, where it
 * called the task's code (NULL clears). */
void omp_tool_enter_frame(void *frame);
void omp_tool_exit_frame(void *frame);
/* program: the program calls the region's code itself (if(0)). */
void omp_tool_parallel_begin(struct omp_tool_par *p, int requested, bool league, bool program,
                             const void *codeptr, void *frame);
void omp_tool_parallel_end(struct omp_tool_par *p, bool league, bool program, const void *codeptr);
void omp_tool_implicit_begin(struct omp_tool_task *task, struct omp_tool_par *p,
                             struct omp_tool_task *parent, int team_size, int thread_num,
                             bool initial);
/* The region's ending barrier begins (before its tasks complete, which
 * run in it); omp_tool_implicit_end's barrier: it ends there (not in a
 * serialized region, nor a team's initial task). */
void omp_tool_join_begin(struct omp_tool_task *task, const void *codeptr);
void omp_tool_implicit_end(struct omp_tool_task *task, int team_size, const void *codeptr,
                           bool barrier, bool initial);
/* ompt_sync_region_t kinds: barrier_explicit 3, implementation 4,
 * taskwait 5, taskgroup 6, implicit_workshare 8, implicit_parallel 9. */
/* A teams region's team on this thread: its initial task and what runs
 * in it (team_num: the index reported). */
void omp_tool_team_begin(struct omp_tool_team *tt, struct omp_tool_task *enc,
                         struct omp_tool_par *league, int num_teams, int team_num);
void omp_tool_team_end(struct omp_tool_team *tt, int num_teams, int team_num,
                       const void *codeptr);
void omp_tool_sync(int kind, bool begin, const void *codeptr);
void omp_tool_sync_region(int kind, bool begin, const void *codeptr);
void omp_tool_sync_wait(int kind, bool begin, const void *codeptr);
void omp_tool_reduction(bool begin, const void *codeptr);
/* ompt_work_t: loop 1, sections 2, single_executor 3, single_other 4,
 * distribute 6, taskloop 7. */
void omp_tool_work(int wstype, bool begin, uint64_t count, const void *codeptr);
void omp_tool_dispatch(bool section, uint64_t instance, const void *codeptr);
void omp_tool_masked(bool begin, const void *codeptr);
/* ompt_mutex_t: lock 1, test_lock 2, nest_lock 3, test_nest_lock 4,
 * critical 5, atomic 6, ordered 7. */
void omp_tool_mutex_acquire(int kind, unsigned hint, uint64_t wait_id, const void *codeptr);
void omp_tool_mutex_acquired(int kind, uint64_t wait_id, const void *codeptr);
void omp_tool_mutex_released(int kind, uint64_t wait_id, const void *codeptr);
void omp_tool_nest_lock(bool begin, uint64_t wait_id, const void *codeptr);
void omp_tool_lock_init(int kind, unsigned hint, uint64_t wait_id, const void *codeptr);
void omp_tool_lock_destroy(int kind, uint64_t wait_id, const void *codeptr);
void omp_tool_flush(const void *codeptr);
void omp_tool_cancel(int flags, const void *codeptr);
/* Explicit tasks: created (ompt_task_flag_t type), begun and ended on the
 * thread that runs them (ompt_task_status_t status). */
void omp_tool_task_create(struct omp_tool_task *task, int type, bool deps, const void *codeptr);
void omp_tool_dependences(struct omp_tool_task *task, const void *deps, int ndeps);
void omp_tool_task_dependence(struct omp_tool_task *first, struct omp_tool_task *second);
void omp_tool_task_begin(struct omp_tool_task *task);
void omp_tool_task_begin_as(struct omp_tool_task *task, int status);
void omp_tool_task_discarded(struct omp_tool_task *task);
void omp_tool_task_end(struct omp_tool_task *task, int status);
void omp_tool_task_memory(struct omp_tool_task *task, void *addr, size_t size);

/* This node's state, made ready (settings read, checked) on first use.
 * It first runs a barrier a blocking reduction left owed (team_sync.c):
 * every entry to the runtime but __kmpc_barrier itself pays it. */
struct omp_thread *omp_self(void);
/* The same, leaving an owed barrier to the caller. */
struct omp_thread *omp_self_owing(void);
/* Runs the owed barrier (omp_self calls it). */
void omp_pay_barrier(struct omp_thread *t);

/* A lock id for an address the compiler names a critical section or a
 * reduction by (the same on every node: the executable's layout is). */
int omp_lock_id_of(const void *addr);

/* A fork's shared variables, taken from its variadic arguments (region.c);
 * more than dsm keeps ends the job, naming `what`. */
void omp_take_args(const char *what, int argc, va_list ap, uint64_t *args);
/* Starts a team of n threads on the nodes (region.c): a parallel region,
 * or with `league` a teams region of n teams of one initial thread each,
 * whose thread-limit-var is thread_limit (0: none). */
struct omp_region;
void omp_fork(struct omp_thread *t, int n, bool league, int thread_limit, void *microtask,
              int argc, const uint64_t *args, int requested, const void *codeptr, void *frame);
/* Whether the thread runs a teams region itself (not a region nested in
 * it): constructs that bind to the league act across its teams. */
static inline bool omp_in_league(const struct omp_thread *t)
{
    return t->num_teams > 1 && t->level == 0;
}

/* Barrier of the team (team_sync.c). */
struct ident;
void __kmpc_barrier(struct ident *loc, int32_t gtid);

/* ---- the team over nodes × threads (team_layout.c) ---- */

/* The number of threads a region asking for `asked` gets (OpenMP 5.1
 * §2.6.1: dyn-var, the thread limit); ends the job in one line when dyn-var
 * is false and they cannot be given. */
int omp_team_size(const struct omp_thread *t, int asked);
/* The most threads a region may have: nodes × threads per node, less
 * where thread-limit-var (OMP_THREAD_LIMIT) says less. */
int omp_thread_limit(const struct omp_thread *t);
/* The spin a waiting thread of this node may make before it sleeps, as
 * blocktime-var says (ms; -1: dsm's own). */
void omp_apply_blocktime(int ms);
/* The most threads a node runs: DSM_THREADS, else 256. */
int omp_node_thread_limit(void);
/* Threads per node for a team of n, and the team's threads on `node`. */
int omp_team_per_node(int n);
int omp_team_on_node(int n, int per_node, int node);
/* What threads on a node need, checked at the master before the first
 * region that has them (protocol, settings, cancellation), in one line. */
void omp_team_check_threads(const struct omp_thread *t, int per_node);
/* Whether a region may hold nested regions with teams of a node's
 * threads (max-active-levels above 1, what threads on a node need). */
bool omp_nesting_possible(const struct omp_thread *t);
/* On every node, before and after its threads of a region run fn(arg):
 * `local` threads (this one and local - 1 helpers) as SMP threads. */
void omp_node_threads_begin(int local, void (*fn)(void *), void *arg);
void omp_node_threads_end(int local);
/* Locks of the runtime's own (critical, reductions, ordered): inside the
 * node first when the node has several threads (sync/cohort.c). */
void omp_lock_take(int id);
void omp_lock_give(int id);
/* Whether locks must act: several nodes, or several threads running on
 * this one (a nested region's team of one included). */
static inline bool omp_shared(const struct omp_thread *t)
{
    return t->distributed || smp_multi();
}

/* Frees the region's last doacross words, at the master after the join. */
void omp_doacross_region_end(struct omp_team_shared *r);

/* Cancellation of the innermost taskgroup of this node (task.c): cancel
 * returns 1 (the task ends); the tasks created after it are discarded
 * until the taskgroup ends. */
int omp_taskgroup_cancel(void);
int omp_taskgroup_cancelled(void);

/* Runs the node's queued tasks until none is left (task_barrier.c): at a barrier
 * and at the region's end, where every task of the team must be done. */
void omp_tasks_complete(void);
/* Tasks that leave their node (task_offer.c, task_ring.c): the queues every node's page of
 * which a region's description carries (made once, on node 0), whether
 * node 0 has made a task yet, and a single or master met by a thread of a team
 * over the nodes (its next barrier waits for tasks other nodes offer). */
uint64_t omp_task_nodes(void);
bool     omp_tasks_seen(void);
void     omp_tasks_single_met(void);
int      omp_task_lock_id(int node);
/* Whether the calling thread's tasks may be offered to other nodes (a
 * team over several nodes with the job's task queues). */
bool     omp_tasks_may_leave(void);
void     omp_run_shared(void (*fn)(void *), void *arg); /* on the thread's shared stack (region.c) */
/* KMP_ENABLE_TASK_THROTTLING: true (the default) lets a node of one
 * thread run a task at once; false queues every task (task_queue.c). */
void omp_tasks_throttle(bool on);

/* Taskgroups (task.c) and their task reductions (task_reduction.c). */
struct taskgroup;
struct omp_taskred;
void __kmpc_taskgroup(struct ident *loc, int32_t gtid);
void __kmpc_end_taskgroup(struct ident *loc, int32_t gtid);
/* The current task's innermost taskgroup (NULL: none), the one around a
 * group, and where a group keeps its task reduction (NULL: none). */
struct taskgroup   *omp_taskgroup_current(void);
struct taskgroup   *omp_taskgroup_outer(struct taskgroup *g);
struct omp_taskred **omp_taskgroup_reduction(struct taskgroup *g);
/* At a taskgroup's end, its tasks complete: every private copy combined
 * into its item's variable, and the reduction freed. */
void omp_taskred_finish(struct omp_taskred *r);

/* The bytes from p to the end of this node's threadprivate copy holding
 * it; 0 when p is in none. */
size_t omp_threadprivate_extent(const void *p);
#endif
