/*
 * omp_api.c — the OpenMP API routines (omp_get_thread_num, locks, wtime …)
 * and the runtime's settings (OMP_NUM_THREADS, OMP_SCHEDULE, OMP_DYNAMIC).
 *
 * A team runs on nodes × threads (team_layout.c): nthreads-var is
 * OMP_NUM_THREADS, else nodes × DSM_THREADS; asking for more threads than
 * nodes puts several on a node.
 */
#include <errno.h>
#include <limits.h>
#include <dsm/pthread.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp.h"
#include "omp/omp_state.h"
#include "base/launch.h"

/* The runtime's fork style, lent at start (omp.h). */
static DSM_STATE struct omp_runtime_ops runtime_ops;
static DSM_STATE struct omp_params params;

void omp_start(const struct omp_runtime_ops *ops, const struct omp_params *p)
{
    runtime_ops = *ops;
    params = *p;
}
const struct omp_runtime_ops *omp_runtime(void) { return &runtime_ops; }
const struct omp_params *omp_params(void) { return &params; }

/* Each thread of a node has its own (a region's helpers too). */
static __thread struct omp_thread self;

static void omp_init(struct omp_thread *t)
{
    if (getenv(BOOT_ENV_RANK) && !job()->started)
        log_fatal("this OpenMP program runs under dsmrun but never joined the job: build it "
                  "with dsmcc (dsmcc -fopenmp prog.c -o prog), which starts dsm before main");
    t->nthreads = 1;
    t->num_teams = 1;
    t->distributed = job()->started && job()->nodes > 1;
    /* nthreads-var: OMP_NUM_THREADS, else every thread of every node
     * (DSM_THREADS each, 1 by default); a region places them over the
     * nodes (team_layout.c). */
    int node_threads = job()->started && params.node_threads > 1 ? params.node_threads : 1;
    t->icv.nthreads = job()->nodes * node_threads;
    /* dyn-var's initial value is the implementation's to choose: true,
     * so that a region asking for more than nodes × DSM_THREADS gets
     * those (team_layout.c). */
    t->icv.dynamic = true;
    t->icv.max_active_levels = 1;
    t->icv.thread_limit = 0;
    t->icv.blocktime = -1;
    omp_affinity_init_icvs(t);
    t->icv.cancellation = false;
    t->icv.max_task_priority = 0;
    t->icv.target_offload = OMP_TARGET_OFFLOAD_DEFAULT;
    t->icv.run_sched = (struct sched_spec){.kind = SCHED_STATIC};
    omp_settings_from_env(t); /* settings.c */
    int job_limit = omp_thread_limit(&(struct omp_thread){0});
    if (!t->icv.dynamic && t->icv.nthreads > job_limit &&
        !(t->icv.thread_limit > 0 && t->icv.thread_limit < job_limit))
        log_fatal("OMP_NUM_THREADS=%d with OMP_DYNAMIC=false: %d nodes × %d threads give at most "
                  "%d (run with more nodes, or dsmrun --threads, or leave OMP_DYNAMIC unset)",
                  t->icv.nthreads, job()->nodes, job_limit / job()->nodes, job_limit);
    t->icv.static_sched = (struct sched_spec){.kind = SCHED_STATIC};
    const char *st = params.static_sched;
    if (st) { /* checked at start (runtime/settings.c): the same parser */
        char err[160];
        if (sched_parse_static(st, &t->icv.static_sched, err, sizeof err))
            log_fatal("DSM_OMP_STATIC=%s", err);
    }
    t->ready = true;
    omp_tool_thread_begin(); /* the node's tool starts with its runtime (ompt.c) */
}

struct omp_thread *omp_self_owing(void)
{
    if (__builtin_expect(!self.ready, 0))
        omp_init(&self);
    return &self;
}

struct omp_thread *omp_self(void)
{
    struct omp_thread *t = omp_self_owing();
    if (__builtin_expect(t->barrier_owed, 0))
        omp_pay_barrier(t);
    if (__builtin_expect(t->settings_owed, 0))
        omp_settings_since_main(t);
    return t;
}

int omp_lock_id_of(const void *addr)
{
    /* Names are 32-byte globals (kmp_critical_name): distinct names are at
     * least 32 bytes apart. Two names meeting on one id only serialise
     * against each other, which is still correct. The atomics' ids, above
     * (sync.h), are never met: an atomic inside a critical section takes
     * its lock while the section's is held. */
    const unsigned space = SYNC_ATOMIC_LOCK_BASE - PARALLEL_LOCK_BASE - 0x1000000;
    return PARALLEL_LOCK_BASE + 0x1000000 + (int)(((uintptr_t)addr >> 5) % space);
}

/* ---- threadprivate --------------------------------------------------------- */

/* dsmcc builds with -fnoopenmp-use-tls, so threadprivate variables come
 * here. The master's copy is the variable itself; every other thread (of
 * node 0 or another) keeps its own copy in private memory, made on first
 * use from the variable's value then (copyin reads the master's copy, the
 * variable, through shared memory). clang's `cache` argument is a global
 * of the program, shared under shared globals, so it is not used: a
 * thread-private table is. A node's helper threads live from region to
 * region, and so do their copies, as OpenMP asks of threadprivate data. */
struct tp_copy {
    struct tp_copy *next;
    const void     *original;
    void           *copy;
    size_t          size;
};
static __thread struct tp_copy *tp_copies;

void *__kmpc_threadprivate_cached(ident_t *loc, kmp_int32 gtid, void *data, size_t size,
                                  void ***cache)
{
    (void)loc, (void)gtid, (void)cache;
    if (job()->rank == 0 && smp_index() == 0)
        return data;
    for (struct tp_copy *c = tp_copies; c; c = c->next)
        if (c->original == data)
            return c->copy;
    struct tp_copy *c = malloc(sizeof *c);
    void *copy = malloc(size ? size : 1);
    if (!c || !copy)
        log_fatal("out of memory for a threadprivate variable");
    memcpy(copy, data, size);
    *c = (struct tp_copy){.next = tp_copies, .original = data, .copy = copy, .size = size ? size : 1};
    tp_copies = c;
    return copy;
}

size_t omp_threadprivate_extent(const void *p)
{
    for (struct tp_copy *c = tp_copies; c; c = c->next)
        if ((const char *)p >= (const char *)c->copy && (const char *)p < (const char *)c->copy + c->size)
            return c->size - (size_t)((const char *)p - (const char *)c->copy);
    return 0;
}

void __kmpc_threadprivate_register(ident_t *loc, void *data, void *ctor, void *cctor, void *dtor)
{
    (void)loc, (void)data, (void)ctor, (void)cctor, (void)dtor; /* C: nothing to construct */
}

/* ---- the API --------------------------------------------------------------- */

typedef enum omp_sched_t {
    omp_sched_static = 1,
    omp_sched_dynamic = 2,
    omp_sched_guided = 3,
    omp_sched_auto = 4,
    omp_sched_monotonic = (int)0x80000000
} omp_sched_t;

int omp_get_thread_num(void) { return omp_self()->tid; }
int omp_get_num_threads(void) { return omp_self()->nthreads; }
int omp_get_max_threads(void) { return omp_self()->icv.nthreads; }
/* The job's CPUs: nodes x DSM_THREADS, or DSM_CPUS (runtime/cpus.c), as
 * sysconf and get_nprocs report them to a dsmcc program. */
int omp_get_num_procs(void)
{
    int n = job_cpus();
    return n > 0 ? n : job()->nodes;
}
int omp_get_thread_limit(void)
{
    struct omp_thread *t = omp_self();
    return t->thread_limit > 0 ? t->thread_limit : omp_thread_limit(t); /* a teams region's, else the job's */
}
int omp_in_parallel(void) { return omp_self()->active_level > 0; }
int omp_get_level(void) { return omp_self()->level; }
int omp_get_active_level(void) { return omp_self()->active_level; }
int omp_get_dynamic(void) { return omp_self()->icv.dynamic; }
void omp_set_dynamic(int on) { omp_self()->icv.dynamic = on != 0; }
/* OpenMP 5.1 (deprecated routines): true sets max-active-levels-var to
 * the levels supported, false to 1. */
int omp_get_nested(void) { return omp_self()->icv.max_active_levels > 1; }
void omp_set_nested(int on) { omp_self()->icv.max_active_levels = on ? OMP_SUPPORTED_LEVELS : 1; }
int omp_get_max_active_levels(void) { return omp_self()->icv.max_active_levels; }
/* max-active-levels-var: at most the levels supported; 0 makes every
 * region inactive (a team of one). A negative value is ignored, as libomp
 * does. */
void omp_set_max_active_levels(int levels)
{
    if (levels >= 0)
        omp_self()->icv.max_active_levels =
            levels < OMP_SUPPORTED_LEVELS ? levels : OMP_SUPPORTED_LEVELS;
}
int omp_get_cancellation(void) { return omp_self()->icv.cancellation; }
int omp_get_max_task_priority(void) { return omp_self()->icv.max_task_priority; }
int omp_get_supported_active_levels(void) { return OMP_SUPPORTED_LEVELS; }

/* omp_pause_resource: the runtime may release its resources between
 * regions. dsm holds none that it could give back while the job runs (the
 * nodes, their service threads and the shared region stay for the whole
 * job, and its OpenMP state is rebuilt by the next region as it is), so a
 * pause of either kind succeeds with nothing to do. */
typedef enum omp_pause_resource_t { omp_pause_soft = 1, omp_pause_hard = 2 } omp_pause_resource_t;
int omp_pause_resource(omp_pause_resource_t kind, int device_num)
{
    (void)device_num;
    return kind == omp_pause_soft || kind == omp_pause_hard ? 0 : -1;
}
int omp_pause_resource_all(omp_pause_resource_t kind) { return omp_pause_resource(kind, 0); }

/* No device but the host: OpenMP 5.1 numbers the host device
 * omp_get_num_devices(), 0 here, on which every region runs. */
int omp_get_num_devices(void) { return 0; }
int omp_get_device_num(void) { return omp_get_num_devices(); }
int omp_is_initial_device(void) { return 1; }
int omp_get_initial_device(void) { return omp_get_num_devices(); }
int omp_get_default_device(void) { return 0; }
void omp_set_default_device(int device) { (void)device; }

void omp_set_num_threads(int n)
{
    if (n < 1)
        log_fatal("omp_set_num_threads(%d): the number must be positive", n);
    omp_self()->icv.nthreads = n; /* a region places them over the nodes (team_layout.c) */
}

/* The thread number and team size at an enclosing level: the innermost
 * active region's (a serialized region nested in it hides it in outer[0]),
 * one level out of a nested team of a node's threads the thread that
 * started it; serialized levels and the initial thread's: 0 of 1. */
static void ancestor(const struct omp_thread *t, int level, int *tid, int *size)
{
    int active_top = t->level - t->serialized;
    *tid = 0, *size = 1;
    if (level == t->level)
        *tid = t->tid, *size = t->nthreads;
    else if (level == active_top && active_top > 0)
        *tid = t->outer[0].tid, *size = t->outer[0].nthreads;
    else if (t->local_team && level == t->outer_level && level > 0)
        *tid = t->outer_tid, *size = t->outer_nthreads;
}

int omp_get_ancestor_thread_num(int level)
{
    struct omp_thread *t = omp_self();
    if (level < 0 || level > t->level)
        return -1;
    int tid, size;
    ancestor(t, level, &tid, &size);
    return tid;
}

int omp_get_team_size(int level)
{
    struct omp_thread *t = omp_self();
    if (level < 0 || level > t->level)
        return -1;
    int tid, size;
    ancestor(t, level, &tid, &size);
    return size;
}

void omp_set_schedule(omp_sched_t kind, int chunk)
{
    int k = (int)kind & ~(int)omp_sched_monotonic;
    if (k < omp_sched_static || k > omp_sched_auto)
        log_fatal("omp_set_schedule(%d, %d): unknown kind", (int)kind, chunk);
    omp_self()->icv.run_sched = (struct sched_spec){
        .kind = (enum sched_kind)k,
        .chunk = chunk > 0 ? chunk : 0,
        .monotonic = ((unsigned)kind & (unsigned)omp_sched_monotonic) != 0};
}

void omp_get_schedule(omp_sched_t *kind, int *chunk)
{
    struct sched_spec *s = &omp_self()->icv.run_sched;
    unsigned k = (unsigned)s->kind;
    if (s->monotonic)
        k |= (unsigned)omp_sched_monotonic;
    *kind = (omp_sched_t)k;
    *chunk = (int)s->chunk;
}

double omp_get_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double omp_get_wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
