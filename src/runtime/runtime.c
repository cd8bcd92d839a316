/*
 * runtime.c — joining and leaving the job.
 *
 * dsm_startup loads the configuration table, joins the job (bootstrap.h:
 * under dsmrun, under srun or mpirun through PMIx, or alone as a 1-node
 * job, so the same binary runs every way), and starts the layers bottom up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/profile.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stack.h"
#include "base/trace.h"
#include "base/stats.h"
#include "coherence/coherence.h"
#include "ipc/ipc.h"
#include "runtime/settings.h"
#include "supervise/supervise.h"
#include "mem/mem.h"
#include "omp/omp.h"
#include "sync/sync.h"
#include "base/launch.h"
#include "runtime/bootstrap.h"
#include "runtime/runtime.h"

static DSM_STATE struct runtime the_runtime;

/* Defined by an executable that shares its globals (DSM_SHARED_GLOBALS in
 * dsm.h); weak, so absent elsewhere. */
extern const int dsm_shared_globals_requested __attribute__((weak));

/* Defined by an OpenMP program that dsmcc built (src/start/omp_program.c). */
extern const int dsm_openmp_program __attribute__((weak));

struct runtime *rt(void) { return &the_runtime; }

/* Programs dsmcc built (started by dsm_main: SPLASH through PARMACS, OpenMP,
 * plain C) allocate everything on the master and then work on it in
 * parallel, each node its own part. Their defaults, unless the environment
 * says otherwise:
 * - homes move to their writers at barriers (DSM_MIGRATE_HOMES). NAS CG
 *   class A on 2 nodes: 13,528 diffs per node -> 2,449 (docs/openmp.md);
 * - a page allocated without a named policy is homed where it is first
 *   touched (DSM_HOME=first-touch; PARMACS and plain dsmcc programs: an
 *   OpenMP master initialises in serial code, where first touch is the
 *   allocating node anyway). Unmodified SPLASH-3 on 2 nodes, per node:
 *   Ocean contiguous 1026 sends 731 MiB -> 18 MiB, non-contiguous
 *   1131 -> 43, LU contiguous 51 -> 17, FFT 74 -> 64, none more than 10%
 *   more (docs/performance.md, bench/unmodified/run). The same with
 *   threads on a node (--threads): SPLASH-3 Ocean 514 on 2 nodes x 2
 *   threads, node 1 sent 417 MB -> 13 MB, 2.3-2.6 s -> 1.0-1.1 s. */
static void program_defaults(struct dsm_config *c, bool dsmcc_program)
{
    if ((dsmcc_program || &dsm_openmp_program) && !config_was_set(c, "DSM_MIGRATE_HOMES"))
        c->migrate_homes = 1;
}

static enum dsm_home default_home(const struct dsm_config *c, bool dsmcc_program)
{
    static const enum dsm_home homes[] = {DSM_HOME_LOCAL, DSM_HOME_CYCLIC, DSM_HOME_BLOCK,
                                          DSM_HOME_FIRST_TOUCH};
    if (dsmcc_program && !&dsm_openmp_program && !config_was_set(c, "DSM_HOME"))
        return DSM_HOME_FIRST_TOUCH;
    return homes[c->home];
}

/* Message buffers of a MiB and more are allocated on the delivery thread,
 * in an arena glibc shrinks eagerly: each message then handed its pages
 * back to the kernel and faulted fresh, zeroed ones in again (8-16% of a
 * stream's time). Keep freed memory instead — unless the user chose glibc's
 * settings. Measured, 1 MiB out-of-line messages between 2 nodes:
 * 0.9 -> 1.7-2.0 GB/s. */
static void tune_malloc(void)
{
    if (!getenv("MALLOC_TRIM_THRESHOLD_"))
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (!getenv("MALLOC_MMAP_THRESHOLD_"))
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

/* SMP nodes (docs/design.md): T threads per node run fork style's
 * creates; what has no thread-level meaning yet is refused here, in one
 * line, rather than run on one thread per node against the user's ask. */
static void smp_start(int threads)
{
    /* An OpenMP program's threads are its regions' (src/omp/team_layout.c):
     * each region sets how many run on the node while it lasts, up to
     * DSM_THREADS; between regions the node runs one. */
    smp_set_threads(&dsm_openmp_program ? 1 : threads);
    if (threads <= 1 || &dsm_openmp_program)
        return;
    if (!rt()->fork_asked)
        log_fatal("DSM_THREADS=%d (dsmrun --threads): an SPMD program (dsm_startup) runs one "
                  "thread per node; threads run the functions of dsm_create (dsm_startup_fork, "
                  "dsmcc)", threads);
}

/* Each layer's settings, from the table (docs/design.md, Settings): a
 * layer below reads its own params, never the table. */
static void start_mem(const struct dsm_config *c, bool dsmcc_program)
{
    mem_init(&(struct mem_params){.region_size = (size_t)c->region_size,
                                  .page_size = (size_t)c->page_size,
                                  .base = (uintptr_t)c->region_base, .home_dir = c->home_dir,
                                  .default_home = default_home(c, dsmcc_program),
                                  .write_watch = (enum write_watch)c->write_watch});
}

static void start_coherence(const struct dsm_config *c, const struct coherence_protocol *protocol)
{
    coherence_start(protocol, &(struct coherence_params){
        .lrc_gc_notices = (uint64_t)c->lrc_gc_notices,
        .sc_window_ns = (uint64_t)c->sc_window_us * 1000,
        .one_sided = c->net_transport == NET_TRANSPORT_UCX && c->net_one_sided != NET_ONE_SIDED_OFF,
        .migrate_pages = c->migrate_pages != 0, .migrate_homes = c->migrate_homes != 0,
        .migrate_period = (uint64_t)c->migrate_period, .migrate_max = (uint64_t)c->migrate_max,
        .read_ahead = (size_t)c->read_ahead, .write_ahead = (size_t)c->write_ahead,
        .pull_credit = (uint8_t)c->pull_credit});
}

/* dsmcc's programs (shared globals, master-only start) other than
 * OpenMP's, whose runtime owns the nodes, on two or more nodes: their
 * threads spread over the nodes (pthreads.c), and their pthread objects in
 * shared memory are the job's (sync). */
static bool pthreads_spread(bool dsmcc_program)
{
    return dsmcc_program && !&dsm_openmp_program && job()->nodes > 1;
}

static void start_upper(const struct dsm_config *c, const char *protocol, bool dsmcc_program)
{
    sync_start(&(struct sync_params){.barrier_fanout = (int)c->barrier_fanout,
                                     .atomic_at_home = c->atomic_at_home != 0,
                                     .pthreads = pthreads_spread(dsmcc_program)});
    parallel_start(&(struct parallel_params){.profiled_gain = c->profiled_gain});
    omp_start(&(struct omp_runtime_ops){.create = fork_create_copy,
                                        .wait_for_end = dsm_wait_for_end},
              &(struct omp_params){.node_threads = (int)c->threads,
                                   .node_threads_set = config_was_set(c, "DSM_THREADS"),
                                   .static_sched = c->omp_static, .protocol = protocol,
                                   .local_mem = c->local_mem != 0});
}

int dsm_startup(int *argc, char ***argv)
{
    struct runtime *r = rt();
    if (job()->started && r->master_only)
        return 0; /* dsm_main started the job before main; the program's own call is a no-op */
    if (job()->started)
        log_fatal("dsm_startup called twice");
    tune_malloc();
    char err[256];
    struct job *j = job_init();
    if (config_load(&j->cfg, err, sizeof err) || settings_check(&j->cfg, true, err, sizeof err))
        log_fatal("%s (see dsmrun --help-env)", err);
    /* DSM_NET=auto here: no launcher chose UCX for the job (dsmrun does,
     * tools/transport_choice.c), so UDP, as every node of it decides. */
    if (j->cfg.net_transport == NET_TRANSPORT_AUTO)
        j->cfg.net_transport = NET_TRANSPORT_UDP;
    program_defaults(&j->cfg, r->share_globals);

    struct net_params np;
    memset(&np, 0, sizeof np);
    boot_join(&np, &j->cfg, argc, argv);
    log_set_rank(j->rank);
    /* Every node writes to the job's one stdout: a whole line at a time,
     * so that no line of one node is cut by another's (a full buffer is
     * written at 4 KiB, in the middle of a line), and in the order the
     * nodes print them (log_flush_output keeps that for a stream the
     * program makes fully buffered again). */
    if (j->nodes > 1)
        setvbuf(stdout, NULL, _IOLBF, BUFSIZ);

    const struct dsm_config *c = &j->cfg;
    j->node_threads = c->threads > 1 ? (int)c->threads : 1;
    j->cpus = (int)c->cpus;
    smp_start((int)c->threads);
    np.peer_timeout_s = c->peer_timeout_s;
    np.loss = c->net_loss;
    np.dup = c->net_dup;
    np.reorder = c->net_reorder;
    np.delay_us = (uint64_t)c->net_delay_us;
    np.seed = (uint64_t)c->net_seed;
    np.datagram = c->net_datagram ? (size_t)c->net_datagram : boot_datagram(np.fd);
    np.window = (unsigned)c->net_window;
    np.auth_mac = c->net_auth_mac != 0;
    np.spin_us = (int)c->net_spin_us;
    np.transport = c->net_transport == NET_TRANSPORT_UCX ? NET_TRANSPORT_UCX : NET_TRANSPORT_UDP;
    np.one_sided = (int)c->net_one_sided;
    np.service_poll = (int)c->service_poll;
    np.threads = (int)c->threads;
    np.finish_fanout = (int)c->barrier_fanout;
    np.page_size = (size_t)c->page_size;
    supervise_start(&(struct supervise_params){.agent_fd = boot_arbiter_fd(), .peers = np.peers});
    np.supervisor = &supervise_net;
    struct ipc_params ip = {.inline_max = (size_t)c->ipc_inline_max,
                            .window = (unsigned)c->ipc_window};
    int rc = ipc_start(&np, &ip);
    if (rc)
        log_fatal("cannot start the transport: %s", strerror(-rc));

    start_mem(c, r->share_globals);
    if (c->shared_globals || r->share_globals || &dsm_shared_globals_requested)
        mem_globals_share();
    if (mem.prestart_size && !mem.gpages)
        log_fatal("the program allocated through dsm_heap_alloc before the job started, which only "
                  "a program with shared globals can (build it with dsmcc)");
    interval_init();
    char name[32];
    config_protocol_name(c, name, sizeof name);
    const struct coherence_protocol *protocol = coherence_find(name);
    if (!protocol)
        log_fatal("internal error: protocol %s is configured but not built", name);
    start_coherence(c, protocol);
    mem_fault_watch_thread();
    cache_start((size_t)c->local_mem, (int)c->replacement, c->home_dir);
    start_upper(c, protocol->name, r->share_globals);
    fork_start();
    exit_start();
    heap_start();
    forked_start();
    pthreads_start(pthreads_spread(r->share_globals));
    signals_start();
    libc_settings_start();
    streams_start();
    globals_start();
    report_start();
    if (c->trace) {
        struct trace_info ti = {.rank = j->rank, .nodes = j->nodes,
                                .page_size = (uint32_t)c->page_size,
                                .datagram = (uint32_t)c->net_datagram,
                                .delay_ns = (uint64_t)c->net_delay_us * 1000, .protocol = name};
        rc = trace_start(c->trace, &ti);
        if (rc)
            log_fatal("cannot write the trace %s.%d: %s (DSM_TRACE)", c->trace, j->rank,
                      strerror(-rc));
    }
    if (c->profile) {
        struct profile_info pi = {.rank = j->rank, .nodes = j->nodes, .protocol = name,
                                  .page_size = mem.page_size, .npages = mem.npages,
                                  .arena_pages = mem.arena_pages,
                                  .base = (uint64_t)(uintptr_t)mem.base,
                                  .gbase = (uint64_t)(uintptr_t)mem.gbase, .gsize = mem.gsize,
                                  .gpages = mem.gpages, .prestart_size = mem.prestart_size};
        rc = profile_start(c->profile, &pi);
        if (rc)
            log_fatal("cannot write the profile %s.%d: %s (DSM_PROFILE)", c->profile, j->rank,
                      strerror(-rc));
    }
    rc = ipc_run();
    if (rc)
        log_fatal("cannot start the transport: %s", strerror(-rc));
    boot_done(&np);
    globals_sync();
    stats_add(STAT_T_STARTUP_NS, boot_since_launch_ns());
    report_started();
    job_init()->started = true;
    return 0;
}

/* Before dsm_startup and after dsm_finish, the program is node 0 of 1. */
int dsm_rank(void) { return job()->started ? job()->rank : 0; }
int dsm_nodes(void) { return job()->started ? job()->nodes : 1; }
int dsm_thread_id(void) { return job()->started ? job()->rank * smp_threads() + smp_index() : 0; }
int dsm_thread_count(void) { return job()->started ? job()->nodes * smp_threads() : 1; }
int dsm_node_threads(void) { return smp_threads(); }

/* The flush implied by an access to a volatile object (OpenMP 3.1-4.5,
 * "volatile": a read as if preceded by a flush of the object, a write as
 * if followed by one); dsmcc's volatile hooks call it. An object outside
 * shared memory (a worker's stack, a private global) is seen by no other
 * node: nothing to do, and no cost. A shared one gets the full flush,
 * which flushes more than the object, as a flush may: a flush of only
 * its pages would not be cheaper and correct at once. The release half
 * cannot leave out the other pages written since the last release (an
 * interval covers all of them, and later notices assume it), and the
 * acquire half must ask every node all the same, because any of them may
 * have written the object's page and flushed; what it would save is the
 * invalidation of other pages that changed, which the next flush,
 * acquire or barrier pays anyway. Before the job starts and after it
 * ends (exit handlers) memory is plain: nothing to do. */
void dsm_flush_object(const void *p, size_t n)
{
    const char *first = p, *last = first + (n ? n - 1 : 0);
    if (dsm_nodes() <= 1 || (!mem_contains(first) && !mem_contains(last)))
        return;
    sync_flush();
}

/* The trace names every message type (trace_finish(ipc_type_name) below). */
_Static_assert(IPC_TYPE_MAX <= TRACE_TYPES, "the trace names fewer message types than ipc numbers");

static void finish_here(void *arg)
{
    (void)arg;
    struct runtime *r = rt();
    if (!job()->started)
        return;
    mem_check_freed();    /* a write after dsm_free, under DSM_CHECK */
    streams_finish();     /* before ipc_leave: after it no other node answers */
    ipc_leave();          /* first: nodes still running may wait for its notifications */
    mmap_finish();        /* the program's shared file mappings back to their files */
    sync_atomic_finish(); /* the program's atomics are the hardware's again */
    pthreads_finish();    /* and its pthread objects the C library's */
    fork_finish();
    report_finish();
    ipc_finish();
    sync_lock_finish();
    int rc = trace_finish(ipc_type_name); /* the service thread has stopped */
    if (rc)
        log_warn("cannot write the trace %s.%d: %s", job()->cfg.trace, job()->rank,
                 strerror(-rc));
    rc = profile_finish(); /* after the releaser thread, which records too */
    if (rc)
        log_warn("cannot write the profile %s.%d: %s", job()->cfg.profile, job()->rank,
                 strerror(-rc));
    coherence_finish();
    parallel_finish();
    job_init()->started = false;
    boot_tell_launcher(BOOT_LIFE_FINISHED);
    /* What runs after the job (exit handlers, destructors, the C runtime's
     * own flags) may touch globals and the master's stack: plain memory
     * from here on. */
    mem_globals_unshare(r->main_stack, r->main_stack_len);
}

/* Off the master's shared stack (base/stack.h): at the end it stops being
 * shared memory under our feet. */
void dsm_finish(void) { stack_private(finish_here, NULL); }
