/*
 * fork.c — fork style: the master alone runs main; dsm_create runs a
 * function on every other node, each starting from a copy of the master's
 * global variables as they are at that moment (SPLASH's CREATE,
 * tsm_create_procs).
 *
 * The globals are the executable's writable segment, .data and .bss, from
 * __data_start to _end. The library's own state is kept in its section
 * (DSM_STATE) and skipped; so are the few libc variables the executable
 * holds copies of whose values are per process (environ, the standard
 * streams). When the globals are shared memory (mem/globals.c: dsmcc,
 * DSM_SHARED_GLOBALS) nothing is copied. A create is a release on the
 * master and an acquire on the workers; a worker's return is a release,
 * and dsm_wait_for_end the master's acquire.
 */
#include <pthread.h>
#include <stdio.h>
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
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "parallel/threads.h"
#include "runtime/runtime.h"
#include "sync/sync.h"

extern char __data_start[] __attribute__((weak));
extern char __start_dsm_state[] __attribute__((weak));
extern char __stop_dsm_state[] __attribute__((weak));
extern char **environ;

/* whole_job: a dsm_create, run by every node (not PARMACS's CREATE of one):
 * its start and end are whole-job synchronisations for the profile.
 * arg_len: the bytes of the argument itself, which follow the header
 * (fork_create_copy); 0: `arg` is a pointer, passed as it is. */
struct create_hdr { uint64_t fn, arg, globals_len, whole_job, arg_len; };

struct fork_work {
    struct fork_work    *next;
    int            exit;    /* at workers: the master ended fork style */
    int            src;     /* at the master: the worker that finished */
    unsigned char *data;
    size_t         len;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    bool            fork_style;
    struct fork_work     *jobs;          /* at workers: creates and the exit, in order */
    int             outstanding;   /* at the master: creates not yet done */
    bool            all_busy;      /* at the master: a dsm_create not yet waited for */
    bool            ever_created;  /* at the master: some node was given work */
    bool            told_threads;  /* at the master: the threads line is out */
    int             some_busy;     /* at the master: one-node creates not yet waited for */
    struct fork_work     *done;          /* at the master: workers' intervals, in arrival order */
    uint32_t       *vt_at_create;
} forks = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Copies the globals byte by byte, uninstrumented: under AddressSanitizer
 * the segment holds the redzones it puts between globals, which a checked
 * copy of the whole segment would report as overflows. */
__attribute__((no_sanitize_address, noinline))
static void copy_globals(void *dst, const void *src, size_t len)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    for (size_t i = 0; i < len; i++)
        d[i] = s[i];
}

/* The pieces of the globals to copy: before and after our own section. */
static int global_pieces(char *start[2], size_t len[2])
{
    char *lo = __data_start, *hi = mem_globals_end();
    char *st_lo = __start_dsm_state, *st_hi = __stop_dsm_state;
    if (!lo || !hi || hi <= lo)
        log_fatal("fork style needs the executable's __data_start and _end symbols");
    if (st_lo && st_hi && st_lo >= lo && st_hi <= hi) {
        start[0] = lo;
        len[0] = (size_t)(st_lo - lo);
        start[1] = st_hi;
        len[1] = (size_t)(hi - st_hi);
        return 2;
    }
    start[0] = lo;
    len[0] = (size_t)(hi - lo);
    return 1;
}

/* Starts fn(arg) on nodes [from, to); with arg_len, fn gets a copy of
 * the arg_len bytes at arg instead, carried in the create. With shared
 * globals nothing is copied: the globals are coherent memory, and the
 * create's release makes the master's writes visible to the workers'
 * acquire like any other. */
static void send_create(int from, int to, void (*fn)(void *), void *arg, size_t arg_len)
{
    if (!forks.fork_style || job()->rank != 0)
        log_fatal("dsm_create is for the master of a job started with dsm_startup_fork or dsmcc");
    log_flush_output();
    coherence_release();
    struct buf b = {0};
    char *start[2];
    size_t len[2];
    int n = mem.gpages ? 0 : global_pieces(start, len);
    bool whole_job = from == 1 && to == job()->nodes;
    struct create_hdr h = {.fn = (uint64_t)(uintptr_t)fn, .arg = (uint64_t)(uintptr_t)arg,
                           .globals_len = n ? len[0] + (n > 1 ? len[1] : 0) : 0,
                           .whole_job = whole_job, .arg_len = arg_len};
    buf_put(&b, &h, sizeof h);
    buf_put(&b, arg, arg_len);
    for (int i = 0; i < n; i++) {
        size_t at = b.len;
        buf_put(&b, NULL, len[i]); /* room, filled below */
        copy_globals(b.p + at, start[i], len[i]);
    }
    interval_encode(&b, NULL, -1, -1);
    pthread_mutex_lock(&forks.lock);
    interval_vt(forks.vt_at_create);
    forks.outstanding += to - from;
    forks.ever_created = true;
    pthread_mutex_unlock(&forks.lock);
    for (int i = from; i < to; i++)
        ipc_send(i, RUNTIME_CREATE, 0, b.p, b.len);
    buf_free(&b);
    coherence_release_sent();
    if (whole_job)
        PROFILE_JOB_SYNC();
}


static bool all_done(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&forks.lock);
    bool ok = forks.outstanding == 0;
    pthread_mutex_unlock(&forks.lock);
    return ok;
}

static void wait_for_end_here(void)
{
    if (!forks.fork_style || job()->rank != 0)
        log_fatal("dsm_wait_for_end is for the master of a job started with dsm_startup_fork");
    uint64_t t0 = clock_ns();
    threads_join(); /* the master's own helpers (DSM_THREADS) */
    ipc_wait(all_done, NULL, 0);
    stats_add(STAT_T_IDLE_NS, clock_ns() - t0);
    pthread_mutex_lock(&forks.lock);
    struct fork_work *done = forks.done;
    bool whole_job = forks.all_busy;
    forks.done = NULL;
    forks.all_busy = false;
    forks.some_busy = 0;
    pthread_mutex_unlock(&forks.lock);
    while (done) {
        struct fork_work *next = done->next;
        interval_apply(done->src, done->data, done->len);
        free(done->data);
        free(done);
        done = next;
    }
    if (whole_job && PROFILE_ON) {
        /* The master's own writes of the region are seen at its next
         * release, the next create's, in the next interval: profiled, it
         * releases here, so that they count in the region's. */
        coherence_release();
        coherence_release_sent();
        profile_job_sync();
    }
}

/* At a worker: the master's creates and its exit, run in order. */
static void queue_work(struct fork_work *j)
{
    pthread_mutex_lock(&forks.lock);
    struct fork_work **pp = &forks.jobs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    pthread_mutex_unlock(&forks.lock);
    ipc_notify();
}

static void on_create(int src, const void *msg, size_t len)
{
    if (src != 0 || job()->rank == 0)
        log_fatal("node %d sent a create; only the master may", src);
    struct fork_work *j = calloc(1, sizeof *j);
    if (!j)
        log_fatal("out of memory receiving a create");
    j->data = ipc_copy_payload(msg, len, 0, &j->len);
    queue_work(j);
}

static void on_exit_msg(int src, const void *msg, size_t len)
{
    (void)msg, (void)len;
    if (src != 0)
        log_fatal("node %d sent an exit; only the master may", src);
    struct fork_work *j = calloc(1, sizeof *j);
    if (!j)
        log_fatal("out of memory");
    j->exit = 1;
    queue_work(j);
}

static void on_create_done(int src, const void *msg, size_t len)
{
    struct fork_work *j = calloc(1, sizeof *j);
    if (!j)
        log_fatal("out of memory");
    j->src = src;
    j->data = ipc_copy_payload(msg, len, 0, &j->len);
    pthread_mutex_lock(&forks.lock);
    if (job()->rank != 0 || forks.outstanding <= 0)
        log_fatal("node %d reported a create that was not running", src);
    struct fork_work **pp = &forks.done;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    forks.outstanding--;
    pthread_mutex_unlock(&forks.lock);
    ipc_notify();
}

static bool job_ready(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&forks.lock);
    bool ok = forks.jobs != NULL;
    pthread_mutex_unlock(&forks.lock);
    return ok;
}

static void run_create(const unsigned char *data, size_t len)
{
    struct create_hdr h;
    if (len < sizeof h)
        log_fatal("the master sent a malformed create");
    memcpy(&h, data, sizeof h);
    if (h.arg_len > len - sizeof h)
        log_fatal("the master sent a create of %zu bytes with an argument of %llu", len,
                  (unsigned long long)h.arg_len);
    /* the argument's copy, aligned for whatever it holds */
    void *arg = (void *)(uintptr_t)h.arg;
    if (h.arg_len) {
        arg = malloc(h.arg_len);
        if (!arg)
            log_fatal("out of memory receiving a create");
        memcpy(arg, data + sizeof h, h.arg_len);
    }
    const unsigned char *p = data + sizeof h + h.arg_len;
    size_t rest = len - sizeof h - h.arg_len; /* the globals, then the master's intervals */
    char *start[2];
    size_t plen[2];
    int n = mem.gpages ? 0 : global_pieces(start, plen);
    if (h.globals_len != (n ? plen[0] + (n > 1 ? plen[1] : 0) : 0) || rest < h.globals_len)
        log_fatal("the master's globals differ in size from this node's: is every node running the same executable?");
    if (n) {
        char **saved_environ = environ;
        FILE *in = stdin, *out = stdout, *err = stderr;
        for (int i = 0; i < n; i++) {
            copy_globals(start[i], p, plen[i]);
            p += plen[i];
        }
        environ = saved_environ;
        stdin = in;
        stdout = out;
        stderr = err;
    }
    uint32_t master_vt[VT_MAX_NODES];
    interval_vt(master_vt); /* what the master has seen is at least what we had */
    interval_apply(0, p, rest - h.globals_len);
    interval_vt(master_vt);
    if (h.whole_job)
        PROFILE_JOB_SYNC();

    void (*fn)(void *) = (void (*)(void *))(uintptr_t)h.fn;
    threads_run(fn, arg); /* the node's other threads (DSM_THREADS) */
    fn(arg);
    threads_join();
    if (h.arg_len)
        free(arg);

    log_flush_output();
    coherence_release();
    struct buf b = {0};
    interval_encode(&b, master_vt, -1, 0);
    ipc_send(0, RUNTIME_CREATE_DONE, 0, b.p, b.len);
    buf_free(&b);
    coherence_release_sent();
    if (h.whole_job)
        PROFILE_JOB_SYNC();
}

static void worker_loop(void)
{
    for (;;) {
        /* Idle, not computing: a node the master gives no work (a program
         * whose threads all run on the master) shows as such in --stats. */
        uint64_t t0 = clock_ns(), busy0 = pthreads_busy_ns();
        ipc_wait(job_ready, NULL, 0);
        /* Nor is one that runs the program's threads (pthreads.c). */
        uint64_t idle = clock_ns() - t0, busy = pthreads_busy_ns() - busy0;
        stats_add(STAT_T_IDLE_NS, idle > busy ? idle - busy : 0);
        pthread_mutex_lock(&forks.lock);
        struct fork_work *j = forks.jobs;
        forks.jobs = j->next;
        pthread_mutex_unlock(&forks.lock);
        if (j->exit) {
            free(j);
            dsm_finish();
            exit(0);
        }
        run_create(j->data, j->len);
        free(j->data);
        free(j);
    }
}

int dsm_startup_fork(int *argc, char ***argv)
{
    if (rt()->master_only)
        return 0; /* dsm_main started the job; only the master runs main */
    rt()->fork_asked = true;
    dsm_startup(argc, argv);
    fork_begin();
    return 0;
}

/* Node 0 in fork style: the other nodes are at work (they can meet a
 * barrier) between a create and its wait. */
static bool others_at_work(void)
{
    if (job()->rank != 0 || job()->nodes < 2)
        return true;
    pthread_mutex_lock(&forks.lock);
    bool busy = forks.all_busy || forks.some_busy;
    pthread_mutex_unlock(&forks.lock);
    return busy;
}

void fork_begin(void)
{
    forks.fork_style = true;
    sync_collectives_guard(others_at_work);
    if (job()->rank != 0)
        worker_loop(); /* does not return */
}

void fork_finish(void)
{
    if (forks.fork_style && job()->rank == 0)
        for (int i = 1; i < job()->nodes; i++)
            ipc_send(i, RUNTIME_EXIT, 0, NULL, 0);
}

void fork_start(void)
{
    forks.vt_at_create = calloc((size_t)job()->nodes, sizeof *forks.vt_at_create);
    if (!forks.vt_at_create)
        log_fatal("out of memory at startup");
    ipc_register(RUNTIME_CREATE, "CREATE", on_create, NULL);
    ipc_register(RUNTIME_CREATE_DONE, "CREATE_DONE", on_create_done, NULL);
    ipc_register(RUNTIME_EXIT, "EXIT", on_exit_msg, NULL);
}

/* A dsmcc program's pthread_create (libdsm-start.a wraps it): its threads
 * all run on the master, so before any node has been given work it says
 * once, in one line, that the other nodes will sit idle — a pthreads
 * program otherwise gives the right answer on node 0 alone, silently. */
void dsm_program_thread_created(void)
{
    if (!job()->started || !forks.fork_style || job()->rank != 0 || job()->nodes < 2)
        return;
    pthread_mutex_lock(&forks.lock);
    bool tell = !forks.ever_created && !forks.told_threads;
    forks.told_threads = true;
    pthread_mutex_unlock(&forks.lock);
    char others[32];
    snprintf(others, sizeof others, job()->nodes == 2 ? "node 1 stays" : "nodes 1-%d stay",
             job()->nodes - 1);
    if (tell)
        log_warn("the program starts POSIX threads, and they all run on node 0: %s idle until "
                 "it starts work there (PARMACS CREATE, an OpenMP region, dsm_create; "
                 "docs/unmodified-programs.md)", others);
}

/* The entry points run off the master's shared stack (base/stack.h). */
struct create_args { int from, to; void (*fn)(void *); void *arg; size_t arg_len; };

static void create_call(void *arg)
{
    struct create_args a = *(struct create_args *)arg;
    send_create(a.from, a.to, a.fn, a.arg, a.arg_len);
}

/* dsm_create runs fn on every other node, so a second one before
 * dsm_wait_for_end cannot mean what a pthread_create or PARMACS CREATE
 * caller means by it (one more worker): every worker would run both, and
 * a program that creates once per worker would do its work N-1 times over.
 * It is refused, in one line, rather than guessed at. */
static void create_everywhere(void (*fn)(void *), void *arg, size_t arg_len)
{
    if (forks.fork_style && job()->rank == 0 && (forks.all_busy || forks.some_busy))
        log_fatal("dsm_create called again before dsm_wait_for_end: %s; call "
                  "dsm_wait_for_end before the next dsm_create (dsm.h)",
                  forks.all_busy ? "the first call already runs its function on every other node"
                                 : "PARMACS CREATE has already started processes on other nodes");
    struct create_args a = {1, job()->nodes, fn, arg, arg_len};
    stack_private(create_call, &a);
    forks.all_busy = true;
    threads_run(fn, arg); /* the master's other threads (DSM_THREADS) */
}

void dsm_create(void (*fn)(void *), void *arg) { create_everywhere(fn, arg, 0); }

/* The OpenMP layer's create (omp.h): what fn needs travels in the create
 * itself, so that no node fetches it from shared memory (a parallel
 * region's description, every region). */
void fork_create_copy(void (*fn)(void *), const void *arg, size_t len)
{
    create_everywhere(fn, (void *)arg, len);
}

void fork_create_on(int node, void (*fn)(void *), void *arg)
{
    if (node < 1 || node >= job()->nodes)
        log_fatal("internal error: create on node %d of %d", node, job()->nodes);
    if (smp_multi())
        log_fatal("PARMACS CREATE with DSM_THREADS=%d (dsmrun --threads): a CREATE starts one "
                  "process, not a node's threads; run with --threads 1", smp_threads());
    forks.some_busy++;
    struct create_args a = {node, node + 1, fn, arg, 0};
    stack_private(create_call, &a);
}

static void wait_for_end_call(void *arg)
{
    (void)arg;
    wait_for_end_here();
}

void dsm_wait_for_end(void) { stack_private(wait_for_end_call, NULL); }
