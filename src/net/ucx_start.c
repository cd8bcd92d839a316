/*
 * ucx_start.c — the UCX transport's start (net_start with DSM_NET=ucx):
 * libucp loaded (ucx.c), UCX's context and worker made, the worker
 * addresses exchanged, an endpoint made to every node, and the service
 * thread started (ucx_service.c). Once, on the thread that starts the
 * job; meanwhile the UDP transport's threads deliver the peers' addresses
 * (boot.lock).
 *
 * Worker addresses are not known before the processes run, so the job
 * starts on its UDP transport (the launcher's sockets, as ever),
 * exchanges the addresses over it — authenticated by the job key — and
 * finishes it.
 */
#include "net/backend.h"
#include "net/ucx_state.h"

#ifdef DSM_HAVE_UCX

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/tree.h"
#include "net/transport.h" /* service_spin_ns */

#define HEARTBEAT_NS     (1000ull * 1000000) /* the longest heartbeat interval */
#define HOST_KEY_LEN     128                 /* host_key */
#define ABORT_WAIT_NS    (1000ull * 1000000) /* unreachable_at_start: a peer's ABORT, at most */

/* ---- start: the addresses, over UDP ------------------------------------ */

/* What follows the host key in a node's start message: its worker
 * address, then the keys of the memory it exposes (ucx_rma.c). */
struct boot_lens {
    uint32_t addr, rma;
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    void          **addr;
    size_t         *len;
    int             got;
} boot;

static void *boot_place(void *ctx, int peer, const void *head, size_t head_len, size_t msg_len,
                        size_t *skip)
{
    (void)ctx, (void)peer, (void)head, (void)head_len;
    *skip = 0;
    return malloc(msg_len);
}

static void boot_deliver(void *ctx, int peer, void *msg, size_t len, bool placed)
{
    (void)ctx;
    pthread_mutex_lock(&boot.lock);
    struct boot_lens lens;
    if (len >= HOST_KEY_LEN + sizeof lens)
        memcpy(&lens, (char *)msg + HOST_KEY_LEN, sizeof lens);
    if (boot.addr[peer] || len <= HOST_KEY_LEN + sizeof lens || !lens.addr ||
        len != HOST_KEY_LEN + sizeof lens + (size_t)lens.addr + lens.rma)
        log_fatal("node %d sent its UCX address twice, empty or malformed; protocol error", peer);
    void *copy = placed ? msg : malloc(len);
    if (!copy)
        log_fatal("out of memory receiving node %d's UCX address", peer);
    if (!placed)
        memcpy(copy, msg, len);
    boot.addr[peer] = copy;
    boot.len[peer] = len;
    boot.got++;
    pthread_mutex_unlock(&boot.lock);
}

static bool boot_all(void *arg)
{
    pthread_mutex_lock(&boot.lock);
    bool all = boot.got == *(int *)arg;
    pthread_mutex_unlock(&boot.lock);
    return all;
}

/* Which host a node runs on, as UCX tells hosts apart for its shared-
 * memory transports (the same kernel: boot id), and as dsm's multi-host
 * tests make hosts (a network namespace each, with a name of its own). */
static void host_key(char key[HOST_KEY_LEN])
{
    char name[64] = "", boot_id[40] = "";
    gethostname(name, sizeof name - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot_id, sizeof boot_id, f))
            boot_id[0] = 0;
        fclose(f);
    }
    memset(key, 0, HOST_KEY_LEN);
    snprintf(key, HOST_KEY_LEN, "%s/%.36s", name, boot_id);
}

/* The job's UDP transport, which carries the UCX addresses: started
 * before UCX is opened, so that a node still in ucp_init (which can take
 * seconds on a loaded host, more with the one-sided pool to allocate)
 * acknowledges the addresses its peers already sent instead of looking
 * silent to them. */
static void boot_begin(const struct net_params *prm)
{
    pthread_mutex_init(&boot.lock, NULL);
    boot.addr = calloc((size_t)ucx.nodes, sizeof *boot.addr);
    boot.len = calloc((size_t)ucx.nodes, sizeof *boot.len);
    if (!boot.addr || !boot.len)
        log_fatal("out of memory starting the UCX transport");
    static const struct net_rx_ops ops = {.place = boot_place, .deliver = boot_deliver};
    int rc = udp_start(prm, &ops, NULL);
    if (rc)
        log_fatal("cannot start the transport: %s", strerror(-rc));
}

/* Every node's host key, worker address and memory keys, exchanged over
 * the job's UDP transport (boot_begin), which then finishes: from here on
 * it is UCX alone. */
static void exchange_addresses(const void *mine, size_t len, const void *rma, size_t rma_len)
{
    int rc;
    char key[HOST_KEY_LEN];
    host_key(key);
    struct boot_lens lens = {.addr = (uint32_t)len, .rma = (uint32_t)rma_len};
    struct iovec v[4] = {{.iov_base = key, .iov_len = sizeof key},
                         {.iov_base = &lens, .iov_len = sizeof lens},
                         {.iov_base = (void *)mine, .iov_len = len},
                         {.iov_base = (void *)rma, .iov_len = rma_len}};
    for (int i = 0; i < ucx.nodes; i++)
        if (i != ucx.rank && (rc = net_send(i, v, 4)))
            log_fatal("cannot send the UCX address to node %d: %s", i, strerror(-rc));
    int want = ucx.nodes - 1;
    net_wait(boot_all, &want, 0);
    net_finish();
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    int peer = (int)(intptr_t)arg;
    atomic_store(&ucx.peers[peer].failed, (int)status);
    atomic_store(&ucx.any_failed, true);
}

static void ucx_abort_hook(const char *reason)
{
    ucx_abort_peers(reason);
}

/* A peer that cannot be reached as the job starts has most often just
 * ended it: it failed at its first call (dsm_bcast with a bad root), and
 * its process, whose shared memory our endpoint would map, is gone. Named
 * at once, this node blamed it for the job's end with a line of its own
 * beside the peer's (6 of 6 runs of that job on 2 nodes). The peer's
 * ABORT is on its way, over the endpoint it made to us: wait for one a
 * moment, and end as over UDP, quietly, the peer having said why. Without
 * one, the line still goes to the launcher as a relay, printed only if no
 * node says a failure of its own — so a late ABORT cannot make this node
 * the one named either. */
static void unreachable_at_start(int peer, ucs_status_t st)
{
    uint64_t until = clock_ns() + ABORT_WAIT_NS;
    while (clock_ns() < until) {
        pthread_mutex_lock(&ucx.ucp);
        ucx_lib.worker_progress(ucx.worker);
        struct ucx_msg *abort = NULL;
        for (struct ucx_msg *m = ucx.inbox; m && !abort; m = m->next)
            if (m->h.kind == UCX_ABORT && m->h.mac == ucx_seal(&ucx.keys, &m->h, m->data))
                abort = m;
        pthread_mutex_unlock(&ucx.ucp);
        if (abort)
            ucx_handle(abort); /* ends the process */
        usleep(1000);
    }
    char said[256], line[600];
    ucx_log_first_error(said, sizeof said);
    snprintf(line, sizeof line, "dsm: node %d: DSM_NET=ucx: cannot reach node %d over UCX: %s%s%s%s",
             ucx.rank, peer, ucx_status_string(st), said[0] ? " (UCX: " : "", said, said[0] ? ")" : "");
    log_exit_quietly(line);
}

int ucx_start(const struct net_params *prm, const struct net_rx_ops *ops, void *octx)
{
    ucx_load_ucp();
    ucx.rank = job()->rank;
    ucx.nodes = job()->nodes;
    ucx.ops = *ops;
    ucx.octx = octx;
    ucx.job = prm->job_id;
    ucx.peer_timeout_ns = (uint64_t)(prm->peer_timeout_s * 1e9);
    /* Silence is measured from the last message received, so a live
     * neighbour must send several times within the timeout. */
    ucx.heartbeat_ns = ucx.peer_timeout_ns / 4 < HEARTBEAT_NS ? ucx.peer_timeout_ns / 4 : HEARTBEAT_NS;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ucx.spin_ns = prm->spin_us < 0 ? service_spin_ns(ucx.nodes, cpus) : (uint64_t)prm->spin_us * 1000;
    wire_keys_init(&ucx.keys, prm->key, prm->job_id, prm->auth_mac);
    pthread_mutex_init(&ucx.ucp, NULL);
    pthread_mutex_init(&ucx.rx_lock, NULL);
    pthread_mutex_init(&ucx.lock, NULL);
    pthread_mutex_init(&ucx.timer_lock, NULL);
    pthread_mutex_init(&ucx.claim_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ucx.cv, &ca);
    pthread_condattr_destroy(&ca);
    ucx.inbox_tail = &ucx.inbox;
    int k = prm->finish_fanout >= 2 ? prm->finish_fanout : 8;
    ucx.parent = tree_parent(ucx.rank, k);
    ucx.nchildren = tree_children(ucx.rank, k, ucx.nodes, &ucx.first_child);

    /* Through the environment, as a user would set them (never over the
     * user's own): ucp_config_modify does not reach the tcp transport's
     * settings in UCX 1.13. One this UCX does not know is ignored. Before
     * the UDP transport's thread starts: setenv is not thread-safe. */
    struct ucx_setting set[UCX_SETTINGS_MAX];
    int nset = ucx_choose_settings(prm, prm->page_size, set);
    for (int i = 0; i < nset; i++) {
        char var[64];
        snprintf(var, sizeof var, "UCX_%s", set[i].name);
        setenv(var, set[i].value, 0);
    }

    boot_begin(prm);

    ucp_config_t *config;
    ucs_status_t st = ucx_lib.config_read(NULL, NULL, &config);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: UCX's configuration: %s", ucx_status_string(st));
    ucx_rma_configure(prm->one_sided);
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | (ucx_rma_wanted() ? UCP_FEATURE_RMA : 0),
        .estimated_num_eps = (size_t)ucx.nodes,
        .name = "dsm",
    };
    st = ucx_lib.init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ucx.ctx);
    ucx_lib.config_release(config);
    if (st != UCS_OK) {
        /* Under dsmrun on this host ucx_check.c has refused such a
         * setting already; started otherwise, the node says it. */
        char said[256];
        const char *tls = getenv("UCX_TLS");
        ucx_log_first_error(said, sizeof said);
        log_fatal("DSM_NET=ucx: cannot initialise UCX%s%s: %s%s%s%s", tls ? " with UCX_TLS=" : "",
                  tls ? tls : "", ucx_status_string(st), said[0] ? " (UCX: " : "", said, said[0] ? ")" : "");
    }
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    st = ucx_lib.worker_create(ucx.ctx, &wp, &ucx.worker);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot create a UCX worker: %s", ucx_status_string(st));
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB,
        .id = AM_ID,
        .flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA,
        .cb = ucx_on_am,
    };
    st = ucx_lib.worker_set_am_recv_handler(ucx.worker, &hp);
    if (st == UCS_OK)
        st = ucx_lib.worker_get_efd(ucx.worker, &ucx.efd);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot set up the UCX worker: %s", ucx_status_string(st));
    ucp_address_t *mine;
    size_t mine_len;
    st = ucx_lib.worker_get_address(ucx.worker, &mine, &mine_len);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot get the UCX worker's address: %s", ucx_status_string(st));

    void *rma = NULL;
    size_t rma_len = ucx_rma_pack(ucx.ctx, &rma);
    exchange_addresses(mine, mine_len, rma, rma_len);
    free(rma);

    ucx.peers = calloc((size_t)ucx.nodes, sizeof *ucx.peers);
    if (!ucx.peers)
        log_fatal("out of memory starting the UCX transport");
    uint64_t now = clock_ns();
    char key[HOST_KEY_LEN];
    host_key(key);
    for (int i = 0; i < ucx.nodes; i++) {
        /* UCP_ERR_HANDLING_MODE_PEER keeps an endpoint on transports that
         * report a peer's failure; in UCX 1.13 the shared-memory ones
         * (posix, sysv) do not, so a co-located peer in that mode would
         * be reached over tcp on the loopback. Those get no error
         * handling from UCX: a dead co-located node is found by the
         * launcher, or by its silence (run_timers). */
        const size_t boot_head = HOST_KEY_LEN + sizeof(struct boot_lens);
        bool here = i == ucx.rank || !memcmp(boot.addr[i], key, HOST_KEY_LEN);
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = i == ucx.rank ? mine : (const ucp_address_t *)((char *)boot.addr[i] + boot_head),
            .err_mode = here ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = on_ep_error, .arg = (void *)(intptr_t)i},
        };
        st = ucx_lib.ep_create(ucx.worker, &ep, &ucx.peers[i].ep);
        if (st != UCS_OK)
            unreachable_at_start(i, st);
        atomic_store(&ucx.peers[i].last_rx_ns, now);
        ucx.peers[i].last_tx_ns = now;
        ucx.peers[i].same_host = here;
        if (i != ucx.rank) {
            struct boot_lens lens;
            memcpy(&lens, (char *)boot.addr[i] + HOST_KEY_LEN, sizeof lens);
            ucx_rma_unpack(i, here, ucx.peers[i].ep, (char *)boot.addr[i] + boot_head + lens.addr,
                           lens.rma);
        }
        free(boot.addr[i]);
    }
    ucx_lib.worker_release_address(ucx.worker, mine);
    free(boot.addr);
    free(boot.len);

    ucx.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ucx.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    ucx.epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = ucx.evfd};
    struct epoll_event look = {.events = EPOLLIN, .data.fd = ucx.tfd};
    struct epoll_event work = {.events = 0, .data.fd = ucx.efd}; /* armed by arm_efd */
    if (ucx.evfd < 0 || ucx.tfd < 0 || ucx.epfd < 0 || epoll_ctl(ucx.epfd, EPOLL_CTL_ADD, ucx.evfd, &wake) < 0 ||
        epoll_ctl(ucx.epfd, EPOLL_CTL_ADD, ucx.tfd, &look) < 0 || epoll_ctl(ucx.epfd, EPOLL_CTL_ADD, ucx.efd, &work) < 0)
        log_fatal("cannot set up the UCX service thread's wait: %s", strerror(errno));
    atomic_store(&ucx.timers_due, now);
    net_backend = &ucx_backend;
    log_set_abort_hook(ucx_abort_hook);
    int here = 0, index_here = 0;
    for (int i = 0; i < ucx.nodes; i++) {
        here += ucx.peers[i].same_host;
        index_here += ucx.peers[i].same_host && i < ucx.rank;
    }
    service_plan_decide(prm->service_poll, prm->threads, ucx.nodes, here, index_here);
    ucx.running = true;
    int err = pthread_create(&ucx.thread, NULL, ucx_service_main, NULL);
    if (err)
        log_fatal("cannot start the UCX service thread: %s", strerror(err));
    return 0;
}

#endif /* DSM_HAVE_UCX */
