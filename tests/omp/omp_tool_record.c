/*
 * omp_tool_record.c — an OMPT tool (OpenMP 5.x, LLVM's omp-tools.h) built
 * into the program it watches: it records every callback of a program
 * with parallel regions, worksharing loops, a single, tasks and a
 * taskwait, a lock, a critical section, master, and barriers, per thread
 * of the team, and the program checks the record against what it did.
 * On dsm (docs/openmp.md, "OMPT") the team runs on nodes × threads: each
 * node starts its own copy of the tool, the record is in shared memory
 * (the program's globals), and the threads' ids tell their nodes apart —
 * a dsm id is (thread on its node × 4096 + node + 1) << 40 — which the
 * check verifies when the runtime says it is dsm. Built with clang on
 * libomp too (omp_tool_record_libomp): the same record, the same checks
 * but the node's.
 */
#include <inttypes.h>
#include <omp-tools.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 64
#define REGIONS 2
#define TASKS 10

enum event {
    EV_IMPLICIT_BEGIN, EV_IMPLICIT_END, EV_LOOP_BEGIN, EV_LOOP_END, EV_SINGLE_EXECUTOR,
    EV_SINGLE_OTHER, EV_BARRIER_BEGIN, EV_BARRIER_END, EV_WAIT_BEGIN, EV_WAIT_END,
    EV_TASK_CREATE, EV_TASK_SWITCH, EV_TASK_COMPLETE, EV_TASKWAIT_BEGIN, EV_TASKWAIT_END,
    EV_LOCK_ACQUIRE, EV_LOCK_ACQUIRED, EV_LOCK_RELEASED, EV_CRITICAL_ACQUIRE,
    EV_CRITICAL_ACQUIRED, EV_CRITICAL_RELEASED, EV_MASTER_BEGIN, EV_MASTER_END, EV_COUNT
};
static const char *names[EV_COUNT] = {
    "implicit_begin", "implicit_end", "loop_begin", "loop_end", "single_executor",
    "single_other", "barrier_begin", "barrier_end", "wait_barrier_begin", "wait_barrier_end",
    "task_create", "task_switch", "task_complete", "taskwait_begin", "taskwait_end",
    "lock_acquire", "lock_acquired", "lock_released", "critical_acquire", "critical_acquired",
    "critical_released", "master_begin", "master_end"};

/* The record: one row per thread of the team (shared memory on dsm:
 * each thread writes its own row), and the master's events outside the
 * regions. */
static struct row {
    uint64_t thread_id;        /* what thread_begin gave the thread */
    uint64_t parallel_id[REGIONS]; /* the region's id as its implicit task saw it */
    long     n[EV_COUNT];
} rows[MAXT];
static struct {
    long     parallel_begin, parallel_end, lock_init, lock_destroy, thread_begin_initial;
    uint64_t parallel_id[REGIONS];
} outer;
static int dsm_runtime;        /* the runtime's version string names dsm */
static __thread uint64_t my_id; /* this thread's id (thread_begin) */
static __thread int region_no = -1;

static ompt_get_unique_id_t get_unique_id;
static ompt_get_thread_data_t get_thread_data;

static void count(enum event e)
{
    int t = omp_get_thread_num();
    if (t >= 0 && t < MAXT)
        rows[t].n[e]++;
}

static void on_thread_begin(ompt_thread_t type, ompt_data_t *data)
{
    data->value = my_id = get_unique_id();
    if (type == ompt_thread_initial)
        outer.thread_begin_initial++;
}

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame,
                              ompt_data_t *parallel, unsigned int requested, int flags,
                              const void *codeptr)
{
    (void)task, (void)frame, (void)requested, (void)flags, (void)codeptr;
    parallel->value = get_unique_id();
    if (outer.parallel_begin < REGIONS)
        outer.parallel_id[outer.parallel_begin] = parallel->value;
    outer.parallel_begin++;
}

static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags,
                            const void *codeptr)
{
    (void)parallel, (void)task, (void)flags, (void)codeptr;
    outer.parallel_end++;
}

static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                             ompt_data_t *task, unsigned int team_size, unsigned int thread_num,
                             int flags)
{
    (void)team_size;
    if (flags & ompt_task_initial)
        return;
    if (endpoint == ompt_scope_begin) {
        task->value = get_unique_id();
        struct row *r = &rows[thread_num < MAXT ? thread_num : 0];
        r->thread_id = my_id;
        region_no = (int)r->n[EV_IMPLICIT_BEGIN];
        if (region_no < REGIONS)
            r->parallel_id[region_no] = parallel->value;
        r->n[EV_IMPLICIT_BEGIN]++;
    } else {
        rows[thread_num < MAXT ? thread_num : 0].n[EV_IMPLICIT_END]++;
    }
}

static void on_work(ompt_work_t type, ompt_scope_endpoint_t endpoint, ompt_data_t *parallel,
                    ompt_data_t *task, uint64_t n, const void *codeptr)
{
    (void)parallel, (void)task, (void)n, (void)codeptr;
    bool begin = endpoint == ompt_scope_begin;
    if (type == ompt_work_loop)
        count(begin ? EV_LOOP_BEGIN : EV_LOOP_END);
    else if (type == ompt_work_single_executor && begin)
        count(EV_SINGLE_EXECUTOR);
    else if (type == ompt_work_single_other && begin)
        count(EV_SINGLE_OTHER);
}

static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                           ompt_data_t *parallel, ompt_data_t *task, const void *codeptr)
{
    (void)parallel, (void)task, (void)codeptr;
    bool begin = endpoint == ompt_scope_begin;
    if (kind == ompt_sync_region_taskwait)
        count(begin ? EV_TASKWAIT_BEGIN : EV_TASKWAIT_END);
    else if (kind != ompt_sync_region_taskgroup && kind != ompt_sync_region_reduction)
        count(begin ? EV_BARRIER_BEGIN : EV_BARRIER_END);
}

static void on_sync_region_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                                ompt_data_t *parallel, ompt_data_t *task, const void *codeptr)
{
    (void)parallel, (void)task, (void)codeptr;
    if (kind != ompt_sync_region_taskwait && kind != ompt_sync_region_taskgroup &&
        kind != ompt_sync_region_reduction)
        count(endpoint == ompt_scope_begin ? EV_WAIT_BEGIN : EV_WAIT_END);
}

static void on_task_create(ompt_data_t *parent, const ompt_frame_t *frame, ompt_data_t *task,
                           int type, int deps, const void *codeptr)
{
    (void)parent, (void)frame, (void)deps, (void)codeptr;
    task->value = get_unique_id();
    if (type & ompt_task_explicit)
        count(EV_TASK_CREATE);
}

static void on_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next)
{
    (void)prior, (void)next;
    count(status == ompt_task_complete ? EV_TASK_COMPLETE : EV_TASK_SWITCH);
}

/* A mutex event of a lock or a critical (the program has no other). */
static void count_mutex(ompt_mutex_t kind, enum event lock_event, enum event critical_event)
{
    if (kind == ompt_mutex_lock)
        count(lock_event);
    else if (kind == ompt_mutex_critical)
        count(critical_event);
}

static void on_mutex_acquire(ompt_mutex_t kind, unsigned int hint, unsigned int impl,
                             ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)hint, (void)impl, (void)wait_id, (void)codeptr;
    count_mutex(kind, EV_LOCK_ACQUIRE, EV_CRITICAL_ACQUIRE);
}

static void on_mutex_acquired(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)wait_id, (void)codeptr;
    count_mutex(kind, EV_LOCK_ACQUIRED, EV_CRITICAL_ACQUIRED);
}

static void on_mutex_released(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)wait_id, (void)codeptr;
    count_mutex(kind, EV_LOCK_RELEASED, EV_CRITICAL_RELEASED);
}

static void on_lock_init(ompt_mutex_t kind, unsigned int hint, unsigned int impl,
                         ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)kind, (void)hint, (void)impl, (void)wait_id, (void)codeptr;
    outer.lock_init++;
}

static void on_lock_destroy(ompt_mutex_t kind, ompt_wait_id_t wait_id, const void *codeptr)
{
    (void)kind, (void)wait_id, (void)codeptr;
    outer.lock_destroy++;
}

static void on_master(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                      const void *codeptr)
{
    (void)parallel, (void)task, (void)codeptr;
    count(endpoint == ompt_scope_begin ? EV_MASTER_BEGIN : EV_MASTER_END);
}

static __thread int registered; /* this process's tool (each node starts its own) */

static int tool_initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data)
{
    (void)device, (void)data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    get_unique_id = (ompt_get_unique_id_t)lookup("ompt_get_unique_id");
    get_thread_data = (ompt_get_thread_data_t)lookup("ompt_get_thread_data");
#define REG(event, fn)                                                                  \
    if (set(event, (ompt_callback_t)(fn)) == ompt_set_always)                           \
        registered++;
    REG(ompt_callback_thread_begin, on_thread_begin)
    REG(ompt_callback_parallel_begin, on_parallel_begin)
    REG(ompt_callback_parallel_end, on_parallel_end)
    REG(ompt_callback_implicit_task, on_implicit_task)
    REG(ompt_callback_work, on_work)
    REG(ompt_callback_sync_region, on_sync_region)
    REG(ompt_callback_sync_region_wait, on_sync_region_wait)
    REG(ompt_callback_task_create, on_task_create)
    REG(ompt_callback_task_schedule, on_task_schedule)
    REG(ompt_callback_mutex_acquire, on_mutex_acquire)
    REG(ompt_callback_mutex_acquired, on_mutex_acquired)
    REG(ompt_callback_mutex_released, on_mutex_released)
    REG(ompt_callback_lock_init, on_lock_init)
    REG(ompt_callback_lock_destroy, on_lock_destroy)
    REG(ompt_callback_masked, on_master)
#undef REG
    return 1;
}

static void tool_finalize(ompt_data_t *data) { (void)data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    static ompt_start_tool_result_t result = {tool_initialize, tool_finalize, {0}};
    (void)omp_version;
    dsm_runtime = runtime_version && !strncmp(runtime_version, "dsm", 3);
    return &result;
}

/* ---- the program ---------------------------------------------------------- */

static int failed;

static void expect(long got, long want, const char *what, int t)
{
    if (got == want)
        return;
    printf("thread %d: %s %ld, expected %ld\n", t, what, got, want);
    failed++;
}

int main(void)
{
    omp_lock_t lock;
    omp_init_lock(&lock);
    int nthreads = 0, tasks_done = 0;
    /* one count per mutual exclusion: the lock and the critical section
     * are different locks, so one count under both would race */
    long by_lock = 0, by_critical = 0;
    static int a[1000];

    for (int region = 0; region < REGIONS; region++) {
#pragma omp parallel
        {
#pragma omp single
            nthreads = omp_get_num_threads();
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++)
                a[i] = i;
#pragma omp for schedule(dynamic, 7) nowait
            for (int i = 0; i < 1000; i++)
                a[i] += 1;
#pragma omp barrier
            omp_set_lock(&lock);
            by_lock += 1;
            omp_unset_lock(&lock);
#pragma omp critical
            by_critical += 1;
#pragma omp master
            {
                for (int k = 0; k < TASKS; k++) {
#pragma omp task shared(tasks_done)
                    {
#pragma omp atomic
                        tasks_done++;
                    }
                }
#pragma omp taskwait
            }
#pragma omp barrier
        }
    }
    omp_destroy_lock(&lock);

    int n = nthreads;
    printf("threads %d\n", n);
    if (registered != 15) {
        printf("the tool registered %d of its 15 callbacks with ompt_set_always\n", registered);
        failed++;
    }
    expect(by_lock, (long)n * REGIONS, "count under the lock", 0);
    expect(by_critical, (long)n * REGIONS, "count under critical", 0);
    expect(tasks_done, TASKS * REGIONS, "tasks done", 0);
    expect(outer.thread_begin_initial, 1, "initial thread_begin", 0);
    expect(outer.parallel_begin, REGIONS, "parallel_begin", 0);
    expect(outer.parallel_end, REGIONS, "parallel_end", 0);
    expect(outer.lock_init, 1, "lock_init", 0);
    expect(outer.lock_destroy, 1, "lock_destroy", 0);
    long executors = 0, others = 0, creates = 0, switches = 0, completes = 0;
    for (int t = 0; t < n; t++) {
        struct row *r = &rows[t];
        /* libomp's workers report the last region's ending barrier and
         * implicit task end when they wake again (later than the master's
         * parallel_end: LLVM's tests say so too); dsm's before the region
         * ends, which the check then asks of every thread. */
        long late = !dsm_runtime && t > 0 ? 1 : 0;
        expect(r->n[EV_IMPLICIT_BEGIN], REGIONS, "implicit task begin", t);
        expect(r->n[EV_IMPLICIT_END] + late * (r->n[EV_IMPLICIT_END] < REGIONS), REGIONS,
               "implicit task end", t);
        for (int k = 0; k < REGIONS; k++)
            if (r->parallel_id[k] != outer.parallel_id[k]) {
                printf("thread %d: region %d's id %" PRIu64 ", the master's %" PRIu64 "\n", t, k,
                       r->parallel_id[k], outer.parallel_id[k]);
                failed++;
            }
        expect(r->n[EV_LOOP_BEGIN], 2L * REGIONS, "loop begin", t);
        expect(r->n[EV_LOOP_END], 2L * REGIONS, "loop end", t);
        /* a region's barriers: the single's, the static loop's, two of
         * the program's and the region's end */
        expect(r->n[EV_BARRIER_BEGIN], 5L * REGIONS, "barrier begin", t);
        expect(r->n[EV_BARRIER_END] + late * (r->n[EV_BARRIER_END] < 5L * REGIONS), 5L * REGIONS,
               "barrier end", t);
        expect(r->n[EV_WAIT_BEGIN], 5L * REGIONS, "barrier wait begin", t);
        expect(r->n[EV_WAIT_END] + late * (r->n[EV_WAIT_END] < 5L * REGIONS), 5L * REGIONS,
               "barrier wait end", t);
        expect(r->n[EV_LOCK_ACQUIRE], REGIONS, "lock acquire", t);
        expect(r->n[EV_LOCK_ACQUIRED], REGIONS, "lock acquired", t);
        expect(r->n[EV_LOCK_RELEASED], REGIONS, "lock released", t);
        expect(r->n[EV_CRITICAL_ACQUIRE], REGIONS, "critical acquire", t);
        expect(r->n[EV_CRITICAL_ACQUIRED], REGIONS, "critical acquired", t);
        expect(r->n[EV_CRITICAL_RELEASED], REGIONS, "critical released", t);
        expect(r->n[EV_MASTER_BEGIN], t == 0 ? REGIONS : 0, "master begin", t);
        expect(r->n[EV_MASTER_END], t == 0 ? REGIONS : 0, "master end", t);
        expect(r->n[EV_TASKWAIT_BEGIN], t == 0 ? REGIONS : 0, "taskwait begin", t);
        expect(r->n[EV_TASKWAIT_END], t == 0 ? REGIONS : 0, "taskwait end", t);
        expect(r->n[EV_TASK_CREATE], t == 0 ? (long)TASKS * REGIONS : 0, "task create", t);
        executors += r->n[EV_SINGLE_EXECUTOR];
        others += r->n[EV_SINGLE_OTHER];
        creates += r->n[EV_TASK_CREATE];
        switches += r->n[EV_TASK_SWITCH];
        completes += r->n[EV_TASK_COMPLETE];
        for (int u = 0; u < t; u++)
            if (rows[u].thread_id == r->thread_id) {
                printf("threads %d and %d have one id, %" PRIu64 "\n", u, t, r->thread_id);
                failed++;
            }
    }
    expect(creates, (long)TASKS * REGIONS, "tasks created (all threads)", 0);
    expect(executors, REGIONS, "singles run (all threads)", 0);
    expect(others, (long)(n - 1) * REGIONS, "singles skipped (all threads)", 0);
    expect(switches, (long)TASKS * REGIONS, "tasks begun (all threads)", 0);
    expect(completes, (long)TASKS * REGIONS, "tasks completed (all threads)", 0);
    /* dsm: the ids name the nodes, node-major in thread number from node 0 */
    if (dsm_runtime) {
        printf("nodes:");
        int last = 0;
        for (int t = 0; t < n; t++) {
            int node = (int)(((rows[t].thread_id >> 40) - 1) % 4096);
            printf(" %d", node);
            if (node < last || (t == 0 && node != 0)) {
                printf(" (thread %d: node %d after node %d)", t, node, last);
                failed++;
            }
            last = node;
        }
        printf("\n");
    }
    for (int t = 0; t < n && failed; t++) {
        printf("thread %d:", t);
        for (int e = 0; e < EV_COUNT; e++)
            if (rows[t].n[e])
                printf(" %s=%ld", names[e], rows[t].n[e]);
        printf("\n");
    }
    printf("PASSED: %d failed\n", failed);
    return failed != 0;
}
