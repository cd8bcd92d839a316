/*
 * runtime.c — joining and leaving the job.
 *
 * dsm_startup reads what dsmrun handed this process (boot.h), checks every
 * value, loads the configuration table, and starts the layers bottom up.
 * Started without dsmrun, the program is a 1-node job on a socket of its
 * own, so the same binary runs both ways.
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
#include "base/state.h"
#include "base/stack.h"
#include "base/trace.h"
#include "coherence/coherence.h"
#include "ipc/ipc.h"
#include "mem/mem.h"
#include "sync/sync.h"
#include "runtime/boot.h"
#include "runtime/runtime.h"

static DSM_STATE struct runtime the_runtime;

/* Defined by an executable that shares its globals (DSM_SHARED_GLOBALS in
 * dsm.h); weak, so absent elsewhere. */
extern const int dsm_shared_globals_requested __attribute__((weak));

struct runtime *rt(void) { return &the_runtime; }

static long parse_long(const char *name, const char *v, long min, long max)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < min || x > max)
        log_fatal("bad bootstrap value %s=%s (expected %ld..%ld); start the program with dsmrun",
                  name, v ? v : "(unset)", min, max);
    return x;
}

static void parse_peers(const char *list, int nodes, struct sockaddr_in *out)
{
    if (!list)
        log_fatal("%s is not set; start the program with dsmrun", BOOT_ENV_PEERS);
    const char *p = list;
    for (int i = 0; i < nodes; i++) {
        char host[64];
        const char *colon = strchr(p, ':');
        if (!colon || colon - p >= (long)sizeof host)
            log_fatal("bad peer address list in %s at entry %d", BOOT_ENV_PEERS, i);
        memcpy(host, p, (size_t)(colon - p));
        host[colon - p] = 0;
        char *end;
        errno = 0;
        long port = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || port < 1 || port > 65535 ||
            (i < nodes - 1 ? *end != ',' : *end != 0))
            log_fatal("bad peer address list in %s at entry %d", BOOT_ENV_PEERS, i);
        memset(&out[i], 0, sizeof out[i]);
        out[i].sin_family = AF_INET;
        out[i].sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &out[i].sin_addr) != 1)
            log_fatal("bad peer address '%s' in %s", host, BOOT_ENV_PEERS);
        p = end + 1;
    }
}

static void read_key(int fd, uint8_t key[BOOT_KEY_BYTES])
{
    size_t got = 0;
    while (got < BOOT_KEY_BYTES) {
        ssize_t n = read(fd, key + got, BOOT_KEY_BYTES - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            log_fatal("cannot read the job key from fd %d; start the program with dsmrun", fd);
        got += (size_t)n;
    }
    close(fd);
}

/* A 1-node job: our own socket, key and job id. */
static void solo_bootstrap(struct net_params *np, struct sockaddr_in *self)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        log_fatal("cannot create a UDP socket: %s", strerror(errno));
    memset(self, 0, sizeof *self);
    self->sin_family = AF_INET;
    self->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *self;
    if (bind(fd, (struct sockaddr *)self, sizeof *self) < 0 ||
        getsockname(fd, (struct sockaddr *)self, &len) < 0)
        log_fatal("cannot bind a UDP socket on the loopback: %s", strerror(errno));
    if (getrandom(np->key, sizeof np->key, 0) != sizeof np->key ||
        getrandom(&np->job_id, sizeof np->job_id, 0) != sizeof np->job_id)
        log_fatal("cannot get random bytes for the job key");
    np->fd = fd;
    np->peers = self;
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

int dsm_startup(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct runtime *r = rt();
    if (r->started && r->master_only)
        return 0; /* dsm_main started the job before main; the program's own call is a no-op */
    if (r->started)
        log_fatal("dsm_startup called twice");
    tune_malloc();
    char err[256];
    struct job *j = job_init();
    if (config_load(&j->cfg, err, sizeof err))
        log_fatal("%s (see dsmrun --help-env)", err);

    struct net_params np;
    memset(&np, 0, sizeof np);
    static DSM_STATE struct sockaddr_in solo_addr;
    struct sockaddr_in *peers = NULL;
    if (!getenv(BOOT_ENV_RANK)) {
        solo_bootstrap(&np, &solo_addr);
    } else {
        j->nodes = (int)parse_long(BOOT_ENV_NODES, getenv(BOOT_ENV_NODES), 1, BOOT_MAX_NODES);
        j->rank = (int)parse_long(BOOT_ENV_RANK, getenv(BOOT_ENV_RANK), 0, j->nodes - 1);
        log_set_rank(j->rank);
        np.fd = (int)parse_long(BOOT_ENV_SOCK_FD, getenv(BOOT_ENV_SOCK_FD), 0, INT_MAX);
        int keyfd = (int)parse_long(BOOT_ENV_KEY_FD, getenv(BOOT_ENV_KEY_FD), 0, INT_MAX);
        const char *job = getenv(BOOT_ENV_JOB);
        char *end;
        errno = 0;
        np.job_id = job ? strtoull(job, &end, 16) : 0;
        if (!job || errno || end == job || *end || strlen(job) != 16)
            log_fatal("bad bootstrap value %s=%s; start the program with dsmrun",
                      BOOT_ENV_JOB, job ? job : "(unset)");
        peers = calloc((size_t)j->nodes, sizeof *peers);
        if (!peers)
            log_fatal("out of memory at startup");
        parse_peers(getenv(BOOT_ENV_PEERS), j->nodes, peers);
        np.peers = peers;
        read_key(keyfd, np.key);
        int type;
        socklen_t tl = sizeof type;
        if (getsockopt(np.fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_DGRAM)
            log_fatal("%s=%d is not a UDP socket; start the program with dsmrun",
                      BOOT_ENV_SOCK_FD, np.fd);
        /* The program's own children must not inherit the job's socket. */
        if (fcntl(np.fd, F_SETFD, FD_CLOEXEC) < 0)
            log_fatal("cannot mark the job socket close-on-exec: %s", strerror(errno));
    }
    log_set_rank(j->rank);

    const struct dsm_config *c = &j->cfg;
    np.peer_timeout_s = c->peer_timeout_s;
    np.loss = c->net_loss;
    np.dup = c->net_dup;
    np.reorder = c->net_reorder;
    np.delay_us = (uint64_t)c->net_delay_us;
    np.seed = (uint64_t)c->net_seed;
    np.datagram = (size_t)c->net_datagram;
    np.window = (unsigned)c->net_window;
    np.auth_mac = c->net_auth_mac != 0;
    np.spin_us = (int)c->net_spin_us;
    struct ipc_params ip = {.inline_max = (size_t)c->ipc_inline_max,
                            .window = (unsigned)c->ipc_window};
    int rc = ipc_start(&np, &ip);
    if (rc)
        log_fatal("cannot start the transport: %s", strerror(-rc));

    static const enum dsm_home homes[] = {DSM_HOME_LOCAL, DSM_HOME_CYCLIC, DSM_HOME_BLOCK,
                                          DSM_HOME_FIRST_TOUCH};
    mem_default_home = homes[c->home];
    lrc_gc_notices = (uint64_t)c->lrc_gc_notices;
    mem_init((size_t)c->region_size, (size_t)c->page_size,
             (uintptr_t)c->region_base);
    if (c->shared_globals || r->share_globals || &dsm_shared_globals_requested)
        mem_globals_share();
    interval_init();
    char name[32];
    config_protocol_name(c, name, sizeof name);
    const struct coherence_protocol *protocol = coherence_find(name);
    if (!protocol)
        log_fatal("internal error: protocol %s is configured but not built", name);
    coherence_start(protocol);
    sync_start();
    parallel_start();
    fork_start();
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
    rc = ipc_run();
    if (rc)
        log_fatal("cannot start the transport: %s", strerror(-rc));
    free(peers);
    globals_sync();
    r->started = true;
    return 0;
}

/* Before dsm_startup and after dsm_finish, the program is node 0 of 1. */
int dsm_rank(void) { return rt()->started ? job()->rank : 0; }
int dsm_nodes(void) { return rt()->started ? job()->nodes : 1; }

static void finish_here(void *arg)
{
    (void)arg;
    struct runtime *r = rt();
    if (!r->started)
        return;
    fork_finish();
    report_finish();
    ipc_finish();
    int rc = trace_finish(ipc_type_name); /* the service thread has stopped */
    if (rc)
        log_warn("cannot write the trace %s.%d: %s", job()->cfg.trace, job()->rank,
                 strerror(-rc));
    coherence_finish();
    parallel_finish();
    r->started = false;
    /* What runs after the job (exit handlers, destructors, the C runtime's
     * own flags) may touch globals and the master's stack: plain memory
     * from here on. */
    mem_globals_unshare(r->main_stack, r->main_stack_len);
}

/* Off the master's shared stack (base/stack.h): at the end it stops being
 * shared memory under our feet. */
void dsm_finish(void) { stack_private(finish_here, NULL); }
