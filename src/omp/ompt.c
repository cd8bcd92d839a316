/*
 * ompt.c — the OpenMP tools interface (OMPT, OpenMP 5.1 chapter 4): a
 * tool's discovery, start and end, its entry points, and the events the
 * runtime reports to it. The interface is LLVM's omp-tools.h, the one
 * tools are built against.
 *
 * A tool is a node's: each node is a process with its own runtime, so
 * each finds, starts and ends the tool on its own (as each rank of an MPI
 * program does): ompt_start_tool in the program or a library loaded with
 * it (the program's own definition wins over dsm's weak one, which looks
 * further: dlsym(RTLD_NEXT)), else the first of OMP_TOOL_LIBRARIES whose
 * ompt_start_tool returns a result; OMP_TOOL=disabled starts none. The
 * tool tells nodes and threads apart by what dsm gives it: a thread's
 * unique ids (ompt_get_unique_id) carry its number on its node (in the
 * order the node's threads first asked for one) and its node in their
 * top bits — (thread × 4096 + node + 1) << 40 — so ids never meet across
 * the job, the initial thread's are the smallest, and every node's first
 * thread (the job's first team) comes before any node's second, as a
 * process's threads are numbered in the order they start;
 * only node 0's first thread is ompt_thread_initial (it runs main), every
 * other thread of the job, another node's first included, is a worker.
 *
 * A region's events on another node name what the master made: the
 * parallel region's data (what the tool put in it at parallel_begin) and
 * the encountering task's (its data, frames and type) travel in the
 * region's description, and each node keeps its own copy, so a worker
 * anywhere reports the master's parallel id and sees the master's task
 * one level up (ompt_get_task_info(1)). A tool's writes to a region's data
 * on one node are that node's.
 *
 * Frames: an implicit or explicit task's exit frame is the frame of the
 * runtime function that called its code (src/omp is built with frame
 * pointers, so that the code's __builtin_frame_address(1) is it), cleared
 * when the code returns; a task's enter frame is the frame of the runtime
 * entry it is in (fork, barrier, task creation, taskwait ...).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dsm_omp_tools.h" /* LLVM's omp-tools.h (CMakeLists.txt) */

#include "base/job.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp.h"
#include "omp/omp_state.h"
#include "parallel/threads.h"

_Static_assert(sizeof(ompt_data_t) == sizeof(uint64_t), "ompt_data_t is a word");
_Static_assert(offsetof(struct omp_tool_task, exit_frame) + sizeof(ompt_frame_t) ==
                   offsetof(struct omp_tool_task, type),
               "a task's frames are an ompt_frame_t");

#define MAX_EVENT 64

bool omp_tool_on DSM_STATE;

static DSM_STATE struct {
    pthread_once_t            once;
    ompt_start_tool_result_t *result;
    ompt_callback_t           cb[MAX_EVENT];
    bool                      finalized;
    atomic_uint               threads;      /* threads of this node that took ids */
    struct omp_tool_task      initial;      /* node 0: the initial task, */
    struct omp_tool_par       implicit_par; /* in its implicit parallel region */
} tool = {.once = PTHREAD_ONCE_INIT};

/* The calling thread, as the tool sees it. */
static __thread struct {
    bool                  begun, ended;
    ompt_data_t           data;
    uint64_t              ids;     /* its next unique id */
    int                   state;
    uint64_t              wait_id;
    struct omp_tool_task *task;    /* the task it runs */
} me = {.state = ompt_state_work_serial};

#define CBT(event, type) ((type)(omp_tool_on ? tool.cb[event] : NULL))
#define CB(event) CBT(event, event##_t)

static struct omp_tool_task *cur(void) { return me.task; }

/* ---- unique ids ------------------------------------------------------------- */

static uint64_t unique_id(void)
{
    if (!me.ids) {
        uint64_t seq = atomic_fetch_add(&tool.threads, 1);
        uint64_t who = (seq % 4096) * 4096 + (uint64_t)job()->rank % 4096 + 1;
        me.ids = who << 40;
    }
    return ++me.ids;
}

/* ---- entry points (the lookup's) ------------------------------------------- */

/* What dsm reports of each event: always, or never (it runs no device). */
static const unsigned char supported[MAX_EVENT] = {
    [ompt_callback_thread_begin] = ompt_set_always,
    [ompt_callback_thread_end] = ompt_set_always,
    [ompt_callback_parallel_begin] = ompt_set_always,
    [ompt_callback_parallel_end] = ompt_set_always,
    [ompt_callback_task_create] = ompt_set_always,
    [ompt_callback_task_schedule] = ompt_set_always,
    [ompt_callback_implicit_task] = ompt_set_always,
    [ompt_callback_control_tool] = ompt_set_always,
    [ompt_callback_sync_region_wait] = ompt_set_always,
    [ompt_callback_mutex_released] = ompt_set_always,
    [ompt_callback_dependences] = ompt_set_always,
    [ompt_callback_task_dependence] = ompt_set_always,
    [ompt_callback_work] = ompt_set_always,
    [ompt_callback_masked] = ompt_set_always,
    [ompt_callback_sync_region] = ompt_set_always,
    [ompt_callback_lock_init] = ompt_set_always,
    [ompt_callback_lock_destroy] = ompt_set_always,
    [ompt_callback_mutex_acquire] = ompt_set_always,
    [ompt_callback_mutex_acquired] = ompt_set_always,
    [ompt_callback_nest_lock] = ompt_set_always,
    [ompt_callback_flush] = ompt_set_always,
    [ompt_callback_cancel] = ompt_set_always,
    [ompt_callback_reduction] = ompt_set_always,
    [ompt_callback_dispatch] = ompt_set_always,
};

static ompt_set_result_t set_callback(ompt_callbacks_t which, ompt_callback_t cb)
{
    if ((unsigned)which >= MAX_EVENT || which < ompt_callback_thread_begin ||
        which > ompt_callback_error)
        return ompt_set_error;
    if (!supported[which])
        return ompt_set_never;
    tool.cb[which] = cb;
    return (ompt_set_result_t)supported[which];
}

static int get_callback(ompt_callbacks_t which, ompt_callback_t *cb)
{
    if (!omp_tool_on || (unsigned)which >= MAX_EVENT || !tool.cb[which])
        return 0;
    if (cb)
        *cb = tool.cb[which];
    return 1;
}

static ompt_data_t *get_thread_data(void)
{
    return omp_tool_on && me.begun ? &me.data : NULL;
}

static uint64_t get_unique_id(void) { return unique_id(); }

static int get_state(ompt_wait_id_t *wait_id)
{
    if (!omp_tool_on)
        return ompt_state_work_serial; /* as libomp answers without a tool */
    if (wait_id)
        *wait_id = me.wait_id;
    return me.state;
}

struct named { const char *name; int value; };

static const struct named states[] = {
#define STATE(name, value) {#name, value},
    FOREACH_OMPT_STATE(STATE)
#undef STATE
};

static const struct named impls[] = {{"kmp_mutex_impl_none", 0}, {"dsm_lock_queuing", 2}};

/* The enumerations: the entry after the one whose value is current. */
static int next_named(const struct named *list, size_t n, int current, int *next,
                      const char **name)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (list[i].value == current) {
            *next = list[i + 1].value;
            *name = list[i + 1].name;
            return 1;
        }
    return 0;
}

static int enumerate_states(int current, int *next, const char **name)
{
    return next_named(states, sizeof states / sizeof states[0], current, next, name);
}

static int enumerate_mutex_impls(int current, int *next, const char **name)
{
    return next_named(impls, sizeof impls / sizeof impls[0], current, next, name);
}

static int get_parallel_info(int level, ompt_data_t **parallel_data, int *team_size)
{
    if (!omp_tool_on || !me.task)
        return 0;
    struct omp_tool_par *p = me.task->par;
    for (int i = 0; p && i < level; i++)
        p = p->outer;
    if (!p || level < 0)
        return 0;
    if (parallel_data)
        *parallel_data = (ompt_data_t *)&p->data;
    if (team_size)
        *team_size = p->team_size;
    return 2;
}

/* The next level of ompt_get_task_info: for an explicit task that runs,
 * the task its thread ran when it began it (its scheduling parent, as
 * libomp answers: on another node than its creator's, the only one there
 * is); for an implicit task, or one not begun, the task it was made in. */
static struct omp_tool_task *next_level(const struct omp_tool_task *t)
{
    return (t->type & ompt_task_explicit) && t->saved ? t->saved : t->parent;
}

static int get_task_info(int level, int *type, ompt_data_t **task_data, ompt_frame_t **frame,
                         ompt_data_t **parallel_data, int *thread_num)
{
    if (!omp_tool_on || !me.task || level < 0)
        return 0;
    struct omp_tool_task *t = me.task;
    for (int i = 0; t && i < level; i++)
        t = next_level(t);
    if (!t)
        return 0;
    if (type)
        *type = t->type;
    if (task_data)
        *task_data = (ompt_data_t *)&t->data;
    if (frame)
        *frame = (ompt_frame_t *)&t->exit_frame;
    if (parallel_data)
        *parallel_data = t->par ? (ompt_data_t *)&t->par->data : NULL;
    if (thread_num)
        *thread_num = t->thread_num;
    return 2;
}

static int get_task_memory(void **addr, size_t *size, int block)
{
    if (!omp_tool_on || !me.task || block != 0 || !me.task->memory)
        return 0;
    *addr = me.task->memory;
    *size = me.task->memory_size;
    return 1; /* a block, as libomp answers (its one block) */
}

int omp_get_num_procs(void);
/* As omp_get_num_procs (omp_api.c), which a tool compares it with. */
static int get_num_procs(void) { return omp_get_num_procs(); }

static int get_num_places(void) { return omp_tool_on ? omp_affinity_num_places() : 0; }

static int get_place_proc_ids(int place, int ids_size, int *ids)
{
    if (!omp_tool_on)
        return 0;
    int n = omp_get_place_num_procs(place);
    if (n > 0 && ids && ids_size >= n)
        omp_get_place_proc_ids(place, ids);
    return n;
}

static int get_place_num(void) { return omp_tool_on ? omp_affinity_place_num() : -1; }

static int get_partition_place_nums(int size, int *nums)
{
    if (!omp_tool_on)
        return 0;
    int n = omp_get_partition_num_places();
    if (nums && size >= n)
        omp_get_partition_place_nums(nums);
    return n;
}

static int get_proc_id(void) { return omp_tool_on ? sched_getcpu() : -1; }

static int get_num_devices(void) { return 0; }

static int get_target_info(uint64_t *device_num, ompt_id_t *target_id, ompt_id_t *host_op_id)
{
    (void)device_num, (void)target_id, (void)host_op_id;
    return 0; /* dsm runs no target region */
}

static void finalize_tool(void) { omp_tool_finish(); }

static void finish_at_exit(void) { omp_tool_finish(); }

static ompt_interface_fn_t lookup(const char *name)
{
    static const struct { const char *name; ompt_interface_fn_t fn; } fns[] = {
        {"ompt_enumerate_states", (ompt_interface_fn_t)enumerate_states},
        {"ompt_enumerate_mutex_impls", (ompt_interface_fn_t)enumerate_mutex_impls},
        {"ompt_set_callback", (ompt_interface_fn_t)set_callback},
        {"ompt_get_callback", (ompt_interface_fn_t)get_callback},
        {"ompt_get_state", (ompt_interface_fn_t)get_state},
        {"ompt_get_parallel_info", (ompt_interface_fn_t)get_parallel_info},
        {"ompt_get_task_info", (ompt_interface_fn_t)get_task_info},
        {"ompt_get_task_memory", (ompt_interface_fn_t)get_task_memory},
        {"ompt_get_thread_data", (ompt_interface_fn_t)get_thread_data},
        {"ompt_get_unique_id", (ompt_interface_fn_t)get_unique_id},
        {"ompt_finalize_tool", (ompt_interface_fn_t)finalize_tool},
        {"ompt_get_num_procs", (ompt_interface_fn_t)get_num_procs},
        {"ompt_get_num_places", (ompt_interface_fn_t)get_num_places},
        {"ompt_get_place_proc_ids", (ompt_interface_fn_t)get_place_proc_ids},
        {"ompt_get_place_num", (ompt_interface_fn_t)get_place_num},
        {"ompt_get_partition_place_nums", (ompt_interface_fn_t)get_partition_place_nums},
        {"ompt_get_proc_id", (ompt_interface_fn_t)get_proc_id},
        {"ompt_get_target_info", (ompt_interface_fn_t)get_target_info},
        {"ompt_get_num_devices", (ompt_interface_fn_t)get_num_devices},
    };
    for (size_t i = 0; name && i < sizeof fns / sizeof fns[0]; i++)
        if (!strcmp(fns[i].name, name))
            return fns[i].fn;
    return NULL;
}

/* ---- discovery and start ------------------------------------------------------ */

typedef ompt_start_tool_result_t *(*start_tool_fn)(unsigned int, const char *);

/* dsm's own, weak: a program's or a library's definition found first by
 * the dynamic linker wins; this one looks past dsm for a library loaded
 * after it (the tool linked after the runtime), as libomp's does. */
__attribute__((weak)) ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                                 const char *runtime_version)
{
    start_tool_fn next = (start_tool_fn)dlsym(RTLD_NEXT, "ompt_start_tool");
    return next ? next(omp_version, runtime_version) : NULL;
}

#define OMP_VERSION 201611 /* the OpenMP API version dsm reports (_OPENMP of 5.0 preview) */

static ompt_start_tool_result_t *find_tool(void)
{
    const char *version = "dsm (LLVM OpenMP runtime interface)";
    ompt_start_tool_result_t *r = ompt_start_tool(OMP_VERSION, version);
    if (r)
        return r;
    const char *libs = getenv("OMP_TOOL_LIBRARIES");
    if (!libs || !*libs)
        return NULL;
    char *copy = strdup(libs), *save = NULL;
    if (!copy)
        log_fatal("out of memory for OMP_TOOL_LIBRARIES");
    for (char *lib = strtok_r(copy, ":", &save); lib && !r; lib = strtok_r(NULL, ":", &save)) {
        void *h = dlopen(lib, RTLD_LAZY);
        if (!h)
            continue;
        start_tool_fn start = (start_tool_fn)dlsym(h, "ompt_start_tool");
        if (start)
            r = start(OMP_VERSION, version);
    }
    free(copy);
    return r;
}

static void start(void)
{
    const char *setting = getenv("OMP_TOOL");
    if (setting && *setting) {
        if (!strcasecmp(setting, "disabled"))
            return;
        if (strcasecmp(setting, "enabled"))
            log_fatal("OMP_TOOL=%s: expected enabled or disabled", setting);
    }
    tool.result = find_tool();
    if (!tool.result || !tool.result->initialize)
        return;
    /* The entry points answer as soon as initialize runs. */
    omp_tool_on = true;
    if (!tool.result->initialize(lookup, 0, &tool.result->tool_data)) {
        omp_tool_on = false;
        memset(tool.cb, 0, sizeof tool.cb);
        tool.result = NULL;
        return;
    }
    /* At exit, before dsm's own end (registered before main) on the master. */
    if (atexit(finish_at_exit))
        log_fatal("cannot register the OpenMP tool's end at exit");
}

void omp_tool_node_init(void) { pthread_once(&tool.once, start); }

/* An OpenMP program's master starts its runtime, and with it the tool,
 * before main (dsm_main calls it; workers start theirs with their first
 * region). The settings main may set before its first OpenMP call are
 * read again at that call (settings.c). */
extern const int dsm_openmp_program __attribute__((weak));

void omp_before_main(void)
{
    if (&dsm_openmp_program)
        omp_settings_recheck_owed(omp_self());
}

/* A thread's first use of the runtime on this node. */
void omp_tool_thread_begin(void)
{
    omp_tool_node_init();
    if (!omp_tool_on || me.begun)
        return;
    me.begun = true;
    bool initial = job()->rank == 0 && smp_index() == 0 && !tool.initial.type;
    me.state = ompt_state_work_serial;
    if (CB(ompt_callback_thread_begin))
        CB(ompt_callback_thread_begin)(initial ? ompt_thread_initial : ompt_thread_worker,
                                       &me.data);
    if (!initial)
        return;
    /* The initial task, in its implicit parallel region of one. */
    tool.initial = (struct omp_tool_task){.type = ompt_task_initial, .thread_num = 0,
                                          .par = &tool.implicit_par};
    tool.implicit_par = (struct omp_tool_par){.team_size = 1};
    me.task = &tool.initial;
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_begin, (ompt_data_t *)&tool.implicit_par.data,
                                        (ompt_data_t *)&tool.initial.data, 1, 1,
                                        ompt_task_initial);
}

static void thread_end_here(void *arg)
{
    (void)arg;
    if (!me.begun || me.ended)
        return;
    me.ended = true;
    if (me.task == &tool.initial && CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_end, (ompt_data_t *)&tool.implicit_par.data,
                                        (ompt_data_t *)&tool.initial.data, 0, 1,
                                        ompt_task_initial);
    if (CB(ompt_callback_thread_end))
        CB(ompt_callback_thread_end)(&me.data);
}

/* The node's end (exit, or ompt_finalize_tool): every thread of the node
 * reports its end on itself, then the tool is finalized. */
void omp_tool_finish(void)
{
    if (!omp_tool_on || tool.finalized)
        return;
    tool.finalized = true;
    int helpers = threads_started();
    if (helpers > 0 && !smp_multi()) {
        smp_set_threads(helpers + 1);
        threads_run(thread_end_here, NULL);
        thread_end_here(NULL);
        threads_join();
        smp_set_threads(1);
    } else {
        thread_end_here(NULL);
    }
    threads_group_each(thread_end_here, NULL); /* nested teams' helpers */
    if (tool.result->finalize)
        tool.result->finalize(&tool.result->tool_data);
    log_flush_output();
    omp_tool_on = false;
}

/* ---- events ------------------------------------------------------------------ */

static void region_end_barrier(struct omp_tool_task *task, const void *codeptr);
static void join_end(struct omp_tool_task *task, const void *codeptr);

struct omp_tool_task *omp_tool_current(void) { return me.task; }

void omp_tool_set_state(int state) { me.state = state; }

void omp_tool_enter_frame(void *frame)
{
    if (me.task)
        me.task->enter_frame = (uint64_t)(uintptr_t)frame,
        me.task->enter_flags = frame ? ompt_frame_runtime | ompt_frame_framepointer : 0;
}

void omp_tool_exit_frame(void *frame)
{
    if (me.task)
        me.task->exit_frame = (uint64_t)(uintptr_t)frame,
        me.task->exit_flags = frame ? ompt_frame_runtime | ompt_frame_framepointer : 0;
}

void omp_tool_parallel_begin(struct omp_tool_par *p, int requested, bool league, bool program,
                             const void *codeptr, void *frame)
{
    int invoker = program ? ompt_parallel_invoker_program : ompt_parallel_invoker_runtime;
    struct omp_tool_task *enc = cur();
    omp_tool_enter_frame(frame);
    *p = (struct omp_tool_par){.outer = enc ? enc->par : NULL};
    if (CB(ompt_callback_parallel_begin))
        CB(ompt_callback_parallel_begin)(
            enc ? (ompt_data_t *)&enc->data : NULL, enc ? (ompt_frame_t *)&enc->exit_frame : NULL,
            (ompt_data_t *)&p->data, (unsigned)requested,
            invoker | (league ? ompt_parallel_league : ompt_parallel_team), codeptr);
}

void omp_tool_parallel_end(struct omp_tool_par *p, bool league, bool program,
                           const void *codeptr)
{
    struct omp_tool_task *enc = cur();
    int invoker = program ? ompt_parallel_invoker_program : ompt_parallel_invoker_runtime;
    if (CB(ompt_callback_parallel_end))
        CB(ompt_callback_parallel_end)(
            (ompt_data_t *)&p->data, enc ? (ompt_data_t *)&enc->data : NULL,
            invoker | (league ? ompt_parallel_league : ompt_parallel_team), codeptr);
    omp_tool_enter_frame(NULL);
    me.state = enc && enc != &tool.initial ? ompt_state_work_parallel : ompt_state_work_serial;
}

void omp_tool_implicit_begin(struct omp_tool_task *task, struct omp_tool_par *p,
                             struct omp_tool_task *parent, int team_size, int thread_num,
                             bool initial)
{
    *task = (struct omp_tool_task){
        .type = initial ? ompt_task_initial : ompt_task_implicit | ompt_task_undeferred,
        .thread_num = thread_num, .par = p, .parent = parent, .saved = me.task,
        .saved_state = me.state};
    if (p)
        p->team_size = team_size;
    me.task = task;
    me.state = ompt_state_work_parallel;
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_begin, p ? (ompt_data_t *)&p->data : NULL,
                                        (ompt_data_t *)&task->data, (unsigned)team_size,
                                        (unsigned)(initial ? thread_num + 1 : thread_num),
                                        initial ? ompt_task_initial : ompt_task_implicit);
}

/* The implicit barrier that ends a region (its wait is the join), then
 * the implicit task's end; the region has ended for the barrier's end,
 * whose parallel data is none, as libomp reports it. */
void omp_tool_implicit_end(struct omp_tool_task *task, int team_size, const void *codeptr,
                           bool barrier, bool initial)
{
    omp_tool_exit_frame(NULL);
    if (barrier)
        join_end(task, codeptr);
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_end, NULL, (ompt_data_t *)&task->data,
                                        (unsigned)team_size,
                                        (unsigned)(initial ? task->thread_num + 1 : task->thread_num),
                                        initial ? ompt_task_initial : ompt_task_implicit);
    me.task = task->saved;
    me.state = task->saved_state;
}

/* The implicit barrier that ends a region (its wait is the join); the
 * region has ended for the barrier's end, whose parallel data is none,
 * as libomp reports it. Its begin comes before the region's tasks are
 * complete (omp_tool_join_begin; they run in it, as in libomp's join),
 * its end with the implicit task's (omp_tool_implicit_end). */
void omp_tool_join_begin(struct omp_tool_task *task, const void *codeptr)
{
    omp_tool_exit_frame(NULL);
    ompt_data_t *pd = task->par ? (ompt_data_t *)&task->par->data : NULL;
    ompt_data_t *td = (ompt_data_t *)&task->data;
    me.state = ompt_state_wait_barrier_implicit_parallel;
    /* kind 2 (barrier_implicit, deprecated in 5.1) as libomp reports
     * every implicit barrier: tools written for 5.0 know no other. */
    if (CB(ompt_callback_sync_region))
        CB(ompt_callback_sync_region)(ompt_sync_region_barrier_implicit, ompt_scope_begin, pd, td,
                                      codeptr);
    ompt_callback_sync_region_t wait =
        CBT(ompt_callback_sync_region_wait, ompt_callback_sync_region_t);
    if (wait)
        wait(ompt_sync_region_barrier_implicit, ompt_scope_begin, pd, td, codeptr);
}

static void join_end(struct omp_tool_task *task, const void *codeptr)
{
    ompt_data_t *td = (ompt_data_t *)&task->data;
    ompt_callback_sync_region_t wait =
        CBT(ompt_callback_sync_region_wait, ompt_callback_sync_region_t);
    if (wait)
        wait(ompt_sync_region_barrier_implicit, ompt_scope_end, NULL, td, codeptr);
    if (CB(ompt_callback_sync_region))
        CB(ompt_callback_sync_region)(ompt_sync_region_barrier_implicit, ompt_scope_end, NULL, td,
                                      codeptr);
}

static void region_end_barrier(struct omp_tool_task *task, const void *codeptr)
{
    omp_tool_join_begin(task, codeptr);
    join_end(task, codeptr);
}

/* A league of several teams: every team's initial task is in the
 * league's region (its data), which ends with their barrier; one team:
 * the initial task is in a region of its own, as libomp reports them. */
void omp_tool_team_begin(struct omp_tool_team *tt, struct omp_tool_task *enc,
                         struct omp_tool_par *league, int num_teams, int team_num)
{
    *tt = (struct omp_tool_team){0};
    tt->team_par = (struct omp_tool_par){.team_size = 1, .outer = enc ? enc->par : NULL};
    struct omp_tool_par *in = num_teams > 1 && league ? league : &tt->team_par;
    tt->initial = (struct omp_tool_task){.type = ompt_task_initial, .par = in,
                                         .thread_num = team_num, .parent = enc,
                                         .saved = me.task, .saved_state = me.state};
    me.task = &tt->initial;
    me.state = ompt_state_work_parallel;
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_begin, (ompt_data_t *)&in->data,
                                        (ompt_data_t *)&tt->initial.data, (unsigned)num_teams,
                                        (unsigned)team_num, ompt_task_initial);
    tt->inner_par = (struct omp_tool_par){.team_size = 1, .outer = &tt->team_par};
    if (CB(ompt_callback_parallel_begin))
        CB(ompt_callback_parallel_begin)((ompt_data_t *)&tt->initial.data,
                                         (ompt_frame_t *)&tt->initial.exit_frame,
                                         (ompt_data_t *)&tt->inner_par.data, 1,
                                         ompt_parallel_invoker_runtime | ompt_parallel_team, NULL);
    tt->implicit = (struct omp_tool_task){.type = ompt_task_implicit | ompt_task_undeferred,
                                          .par = &tt->inner_par, .parent = &tt->initial,
                                          .saved = &tt->initial, .saved_state = me.state};
    me.task = &tt->implicit;
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_begin, (ompt_data_t *)&tt->inner_par.data,
                                        (ompt_data_t *)&tt->implicit.data, 1, 0,
                                        ompt_task_implicit);
}

void omp_tool_team_end(struct omp_tool_team *tt, int num_teams, int team_num,
                       const void *codeptr)
{
    omp_tool_exit_frame(NULL);
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_end, NULL, (ompt_data_t *)&tt->implicit.data,
                                        1, 0, ompt_task_implicit);
    me.task = &tt->initial;
    if (CB(ompt_callback_parallel_end))
        CB(ompt_callback_parallel_end)((ompt_data_t *)&tt->inner_par.data,
                                       (ompt_data_t *)&tt->initial.data,
                                       ompt_parallel_invoker_runtime | ompt_parallel_team, NULL);
    if (num_teams > 1) /* the league's teams meet: its implicit barrier */
        region_end_barrier(&tt->initial, codeptr);
    if (CB(ompt_callback_implicit_task))
        CB(ompt_callback_implicit_task)(ompt_scope_end, NULL, (ompt_data_t *)&tt->initial.data, 0,
                                        (unsigned)team_num, ompt_task_initial);
    me.task = tt->initial.saved;
    me.state = tt->initial.saved_state;
}

static int wait_state(int kind)
{
    switch (kind) {
    case ompt_sync_region_taskwait: return ompt_state_wait_taskwait;
    case ompt_sync_region_taskgroup: return ompt_state_wait_taskgroup;
    case ompt_sync_region_barrier_explicit: return ompt_state_wait_barrier_explicit;
    case ompt_sync_region_barrier_implicit:
        return ompt_state_wait_barrier_implicit;
    default: return ompt_state_wait_barrier_implicit_workshare;
    }
}

static void sync_event(int kind, bool begin, bool wait, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    ompt_data_t *pd = t && t->par ? (ompt_data_t *)&t->par->data : NULL;
    ompt_data_t *td = t ? (ompt_data_t *)&t->data : NULL;
    if (wait && CBT(ompt_callback_sync_region_wait, ompt_callback_sync_region_t))
        CBT(ompt_callback_sync_region_wait, ompt_callback_sync_region_t)(
            kind, begin ? ompt_scope_begin : ompt_scope_end, pd, td, codeptr);
    if (!wait && CB(ompt_callback_sync_region))
        CB(ompt_callback_sync_region)(kind, begin ? ompt_scope_begin : ompt_scope_end, pd, td,
                                      codeptr);
}

void omp_tool_sync_region(int kind, bool begin, const void *codeptr)
{
    sync_event(kind, begin, false, codeptr);
}

void omp_tool_sync_wait(int kind, bool begin, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    if (begin)
        me.state = wait_state(kind);
    sync_event(kind, begin, true, codeptr);
    if (!begin)
        me.state = t && t != &tool.initial ? ompt_state_work_parallel : ompt_state_work_serial;
}

/* A region and its wait together: begin, wait begin; wait end, end. */
void omp_tool_sync(int kind, bool begin, const void *codeptr)
{
    if (begin) {
        omp_tool_sync_region(kind, true, codeptr);
        omp_tool_sync_wait(kind, true, codeptr);
    } else {
        omp_tool_sync_wait(kind, false, codeptr);
        omp_tool_sync_region(kind, false, codeptr);
    }
}

void omp_tool_reduction(bool begin, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    if (CBT(ompt_callback_reduction, ompt_callback_sync_region_t))
        CBT(ompt_callback_reduction, ompt_callback_sync_region_t)(ompt_sync_region_reduction,
                                    begin ? ompt_scope_begin : ompt_scope_end,
                                    t && t->par ? (ompt_data_t *)&t->par->data : NULL,
                                    t ? (ompt_data_t *)&t->data : NULL, codeptr);
}

void omp_tool_work(int wstype, bool begin, uint64_t count, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    if (CB(ompt_callback_work))
        CB(ompt_callback_work)(wstype, begin ? ompt_scope_begin : ompt_scope_end,
                               t && t->par ? (ompt_data_t *)&t->par->data : NULL,
                               t ? (ompt_data_t *)&t->data : NULL, count, codeptr);
}

void omp_tool_dispatch(bool section, uint64_t instance, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    (void)codeptr;
    if (CB(ompt_callback_dispatch))
        CB(ompt_callback_dispatch)(t && t->par ? (ompt_data_t *)&t->par->data : NULL,
                                   t ? (ompt_data_t *)&t->data : NULL,
                                   section ? ompt_dispatch_section : ompt_dispatch_iteration,
                                   (ompt_data_t){.value = instance});
}

void omp_tool_masked(bool begin, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    if (CB(ompt_callback_masked))
        CB(ompt_callback_masked)(begin ? ompt_scope_begin : ompt_scope_end,
                                 t && t->par ? (ompt_data_t *)&t->par->data : NULL,
                                 t ? (ompt_data_t *)&t->data : NULL, codeptr);
}

void omp_tool_mutex_acquire(int kind, unsigned hint, uint64_t wait_id, const void *codeptr)
{
    me.wait_id = wait_id;
    me.state = kind == ompt_mutex_critical  ? ompt_state_wait_critical
               : kind == ompt_mutex_ordered ? ompt_state_wait_ordered
               : kind == ompt_mutex_atomic  ? ompt_state_wait_atomic
                                            : ompt_state_wait_lock;
    if (CB(ompt_callback_mutex_acquire))
        CB(ompt_callback_mutex_acquire)(kind, hint, 2, wait_id, codeptr);
}

void omp_tool_mutex_acquired(int kind, uint64_t wait_id, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    me.state = t && t != &tool.initial ? ompt_state_work_parallel : ompt_state_work_serial;
    me.wait_id = 0;
    if (CBT(ompt_callback_mutex_acquired, ompt_callback_mutex_t))
        CBT(ompt_callback_mutex_acquired, ompt_callback_mutex_t)(kind, wait_id, codeptr);
}

void omp_tool_mutex_released(int kind, uint64_t wait_id, const void *codeptr)
{
    if (CBT(ompt_callback_mutex_released, ompt_callback_mutex_t))
        CBT(ompt_callback_mutex_released, ompt_callback_mutex_t)(kind, wait_id, codeptr);
}

void omp_tool_nest_lock(bool begin, uint64_t wait_id, const void *codeptr)
{
    if (CB(ompt_callback_nest_lock))
        CB(ompt_callback_nest_lock)(begin ? ompt_scope_begin : ompt_scope_end, wait_id, codeptr);
}

void omp_tool_lock_init(int kind, unsigned hint, uint64_t wait_id, const void *codeptr)
{
    if (CBT(ompt_callback_lock_init, ompt_callback_mutex_acquire_t))
        CBT(ompt_callback_lock_init, ompt_callback_mutex_acquire_t)(kind, hint, 2, wait_id, codeptr);
}

void omp_tool_lock_destroy(int kind, uint64_t wait_id, const void *codeptr)
{
    if (CBT(ompt_callback_lock_destroy, ompt_callback_mutex_t))
        CBT(ompt_callback_lock_destroy, ompt_callback_mutex_t)(kind, wait_id, codeptr);
}

void omp_tool_flush(const void *codeptr)
{
    if (CB(ompt_callback_flush))
        CB(ompt_callback_flush)(&me.data, codeptr);
}

void omp_tool_cancel(int flags, const void *codeptr)
{
    struct omp_tool_task *t = cur();
    if (CB(ompt_callback_cancel))
        CB(ompt_callback_cancel)(t ? (ompt_data_t *)&t->data : NULL, flags, codeptr);
}

void omp_tool_task_create(struct omp_tool_task *task, int type, bool deps, const void *codeptr)
{
    struct omp_tool_task *enc = cur();
    *task = (struct omp_tool_task){.type = type, .parent = enc,
                                   .par = enc ? enc->par : NULL,
                                   .thread_num = enc ? enc->thread_num : 0};
    if (CB(ompt_callback_task_create))
        CB(ompt_callback_task_create)(enc ? (ompt_data_t *)&enc->data : NULL,
                                      enc ? (ompt_frame_t *)&enc->exit_frame : NULL,
                                      (ompt_data_t *)&task->data, type, deps, codeptr);
}

void omp_tool_dependences(struct omp_tool_task *task, const void *deps, int ndeps)
{
    if (CB(ompt_callback_dependences))
        CB(ompt_callback_dependences)((ompt_data_t *)&task->data, deps, ndeps);
}

void omp_tool_task_dependence(struct omp_tool_task *first, struct omp_tool_task *second)
{
    if (CB(ompt_callback_task_dependence))
        CB(ompt_callback_task_dependence)((ompt_data_t *)&first->data,
                                          (ompt_data_t *)&second->data);
}

/* A task begins to run on this thread, which suspends the one it ran
 * (ompt_task_switch; ompt_task_yield for the first after a taskyield),
 * or was made undeferred and runs at once. On another node than its
 * creator's the record is the task's copy in shared memory: its parent
 * is a pointer of the creator's process, never followed here. */
void omp_tool_task_begin(struct omp_tool_task *task)
{
    omp_tool_task_begin_as(task, ompt_task_switch);
}

void omp_tool_task_begin_as(struct omp_tool_task *task, int status)
{
    struct omp_tool_task *prior = cur();
    task->saved = prior;
    task->saved_state = me.state;
    /* It runs where it is run: the parallel region and thread number of
     * the task that runs it. */
    if (prior) {
        task->par = prior->par;
        task->thread_num = prior->thread_num;
    }
    if (CB(ompt_callback_task_schedule) && prior)
        CB(ompt_callback_task_schedule)((ompt_data_t *)&prior->data, status,
                                        (ompt_data_t *)&task->data);
    me.task = task;
    me.state = ompt_state_work_parallel;
}

void omp_tool_task_end(struct omp_tool_task *task, int status)
{
    struct omp_tool_task *prior = task->saved;
    task->exit_frame = 0, task->exit_flags = 0;
    if (CB(ompt_callback_task_schedule) && prior)
        CB(ompt_callback_task_schedule)((ompt_data_t *)&task->data, status,
                                        (ompt_data_t *)&prior->data);
    me.task = prior;
    me.state = task->saved_state;
}

/* A task of a cancelled taskgroup that had not begun: discarded, never run. */
void omp_tool_task_discarded(struct omp_tool_task *task)
{
    if (CB(ompt_callback_cancel))
        CB(ompt_callback_cancel)((ompt_data_t *)&task->data,
                                 ompt_cancel_taskgroup | ompt_cancel_discarded_task, NULL);
}

void omp_tool_task_memory(struct omp_tool_task *task, void *addr, size_t size)
{
    task->memory = addr;
    task->memory_size = size;
}

int omp_control_tool(int command, int modifier, void *arg)
{
    if (!omp_tool_on)
        return -2; /* omp_control_tool_notool */
    if (!CB(ompt_callback_control_tool))
        return -1; /* omp_control_tool_nocallback */
    omp_tool_enter_frame(__builtin_frame_address(0));
    int r = CB(ompt_callback_control_tool)((uint64_t)command, (uint64_t)modifier, arg,
                                           __builtin_return_address(0));
    omp_tool_enter_frame(NULL);
    return r;
}
