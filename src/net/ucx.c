/*
 * ucx.c — net.h's messages over UCX (DSM_NET=ucx): each message one active
 * message (ucp_am_send_nbx), to a worker every node reaches through
 * whatever UCX finds — its shared-memory transports (posix, sysv; cma for
 * large copies) between nodes on one host, tcp (or InfiniBand/RoCE verbs
 * where present) between hosts.
 *
 * What the layers above rely on, and where it comes from here:
 *  - Reliability: UCX's. Every transport it drives delivers or fails the
 *    endpoint; nothing is retransmitted here.
 *  - Per-peer FIFO: a message's sequence number is taken under the lock
 *    that sends it, so per endpoint the sends are in sequence order; the
 *    receiver delivers in that order (an early one would be held, a
 *    repeated one dropped: neither happens on UCX's transports, but
 *    delivery never depends on that).
 *  - Authentication: every message's header carries the job id and a
 *    SipHash-2-4 MAC under the job key, over the header and (DSM_NET_AUTH=
 *    mac, or a message that ends or finishes the job) the payload. See
 *    docs/security.md for what that protects here and what it cannot.
 *  - A dead peer: endpoints use UCP_ERR_HANDLING_MODE_PEER, so a transport
 *    that loses its peer (a reset tcp connection; UCX's keepalive on shared
 *    memory) fails the endpoint and we end the job naming the peer, once
 *    the launcher has had DSM_PEER_TIMEOUT to name a death it saw
 *    (verdict_due). A peer that stops without its connections failing
 *    (stopped, or its host gone silent) is found as UDP finds it:
 *    heartbeats to the two ring neighbours every second, and silence
 *    beyond DSM_PEER_TIMEOUT ends the job. Either is said once (end_naming).
 *
 * Threads, as in the UDP transport (service.c): one thread at a time
 * progresses the worker and delivers (rx_lock) — the service thread, or
 * an application thread polling inside net_wait, which then keeps the
 * service thread off. The service thread sleeps on the worker's event fd
 * (ucp_worker_get_efd, armed with ucp_worker_arm), so an idle node costs
 * no CPU. The worker is UCS_THREAD_MODE_SERIALIZED: every call into UCP
 * holds `ucp`. Active-message callbacks only queue what arrived (the data
 * stays UCX's, UCP_AM_FLAG_PERSISTENT_DATA); delivery runs after
 * ucp_worker_progress returns, without `ucp`, so a handler may send.
 *
 * Start: worker addresses are not known before the processes run, so the
 * job starts on its UDP transport (the launcher's sockets, as ever),
 * exchanges the addresses over it — authenticated by the job key — and
 * finishes it. libucp is loaded at run time, as libpmix is: a program run
 * over UDP does not load UCX at all (its error-signal handlers included).
 */
#include "net/ucx.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/linkage.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/tree.h"
#include "net/transport.h" /* service_spin_ns, NET_TLS */
#include "net/wire.h"
#include "base/launch.h" /* BOOT_ARBITER_LINE_MAX: witness.c's lines */

DSM_STATE bool net_over_ucx;

#ifndef DSM_HAVE_UCX

int ucx_start(const struct net_params *p, const struct net_rx_ops *ops, void *ctx)
{
    (void)p, (void)ops, (void)ctx;
    log_fatal("DSM_NET=ucx, but this build has no UCX transport (install libucx-dev, "
              "then rebuild; or use DSM_NET=udp)");
}
int ucx_send_ref(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                 size_t lent_len, struct net_ref *ref)
{
    (void)peer, (void)iov, (void)iovcnt, (void)lent, (void)lent_len, (void)ref;
    return -ENOSYS;
}
int ucx_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns)
{
    (void)done, (void)arg, (void)deadline_ns;
    return -ENOSYS;
}
void ucx_notify(void) {}
void ucx_timer_at(uint64_t t) { (void)t; }
void ucx_finish(void) {}
void ucx_abort_peers(const char *reason) { (void)reason; }
void ucx_send_witness(int to, bool question, const void *line, size_t len)
{
    (void)to, (void)question, (void)line, (void)len;
}

#else /* DSM_HAVE_UCX */

#include <dlfcn.h>
#include <ucp/api/ucp.h>

#define AM_ID            7                   /* the one active-message slot dsm uses */
#define HEARTBEAT_NS     (1000ull * 1000000) /* the longest heartbeat interval */
#define LONG_WAIT_NS     (200ull * 1000)     /* as service.c */
#define LOOKBACK_MAX_NS  (16 * LONG_WAIT_NS)
#define HOST_KEY_LEN     128                 /* host_key */
#define FIN_GRACE_NS     (2000ull * 1000000) /* see failure_expected */
#define SEND_RETRY_NS    (50ull * 1000)     /* sends queued, nothing moved: look again after */
#define CLOSE_WAIT_NS    (1000ull * 1000000) /* closing the endpoints at the end, at most */
#define ABORT_WAIT_NS    (1000ull * 1000000) /* unreachable_at_start: a peer's ABORT, at most */
#define VERDICT_WAIT_NS  (2000ull * 1000000) /* verdict_due, when DSM_PEER_TIMEOUT is 0 */

/* ---- libucp, loaded at run time ---------------------------------------- */

static DSM_STATE struct {
    ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *,
                                 ucp_context_h *);
    ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
    void (*config_release)(ucp_config_t *);
    void (*cleanup)(ucp_context_h);
    ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *);
    void (*worker_destroy)(ucp_worker_h);
    ucs_status_t (*worker_get_address)(ucp_worker_h, ucp_address_t **, size_t *);
    void (*worker_release_address)(ucp_worker_h, ucp_address_t *);
    ucs_status_t (*worker_get_efd)(ucp_worker_h, int *);
    ucs_status_t (*worker_arm)(ucp_worker_h);
    unsigned (*worker_progress)(ucp_worker_h);
    ucs_status_t (*worker_set_am_recv_handler)(ucp_worker_h, const ucp_am_handler_param_t *);
    ucs_status_ptr_t (*worker_flush_nbx)(ucp_worker_h, const ucp_request_param_t *);
    ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);
    ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t *);
    ucs_status_ptr_t (*am_send_nbx)(ucp_ep_h, unsigned, const void *, size_t, const void *,
                                    size_t, const ucp_request_param_t *);
    void (*am_data_release)(ucp_worker_h, void *);
    ucs_status_t (*request_check_status)(void *);
    void (*request_free)(void *);
    const char *(*status_string)(ucs_status_t);
} uc;

static void load_ucp(void)
{
    /* UCX's own error-signal handlers would take SIGSEGV, which is how
     * every page fault reaches dsm; and its memory hooks would patch the
     * mmap and munmap the shared region is made of. Neither is wanted
     * unless the user asked for them. */
    setenv("UCX_ERROR_SIGNALS", "", 0);
    setenv("UCX_MEM_MALLOC_HOOKS", "n", 0);
    if (linkage_program_is_static())
        log_fatal("DSM_NET=ucx: this program is statically linked, and UCX is loaded at run time, "
                  "which needs a dynamically linked program; link it without -static, or use DSM_NET=udp");
    ucx_log_before_load();
    void *lib = dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        log_fatal("DSM_NET=ucx: cannot load UCX (%s); install libucx0 or use DSM_NET=udp", dlerror());
    ucx_log_attach(lib);
#define SYM(field, name)                                                              \
    do {                                                                              \
        *(void **)&uc.field = dlsym(lib, name);                                       \
        if (!uc.field)                                                                \
            log_fatal("DSM_NET=ucx: libucp.so.0 lacks %s (UCX 1.10 or later needed)", name); \
    } while (0)
    SYM(init_version, "ucp_init_version");
    SYM(config_read, "ucp_config_read");
    SYM(config_release, "ucp_config_release");
    SYM(cleanup, "ucp_cleanup");
    SYM(worker_create, "ucp_worker_create");
    SYM(worker_destroy, "ucp_worker_destroy");
    SYM(worker_get_address, "ucp_worker_get_address");
    SYM(worker_release_address, "ucp_worker_release_address");
    SYM(worker_get_efd, "ucp_worker_get_efd");
    SYM(worker_arm, "ucp_worker_arm");
    SYM(worker_progress, "ucp_worker_progress");
    SYM(worker_set_am_recv_handler, "ucp_worker_set_am_recv_handler");
    SYM(worker_flush_nbx, "ucp_worker_flush_nbx");
    SYM(ep_create, "ucp_ep_create");
    SYM(ep_close_nbx, "ucp_ep_close_nbx");
    SYM(am_send_nbx, "ucp_am_send_nbx");
    SYM(am_data_release, "ucp_am_data_release");
    SYM(request_check_status, "ucp_request_check_status");
    SYM(request_free, "ucp_request_free");
    SYM(status_string, "ucs_status_string");
#undef SYM
}

/* ---- the message header ------------------------------------------------ */

enum ucx_kind {
    UCX_DATA  = 1, /* a message for the layer above */
    UCX_NOP   = 2, /* heartbeat: proves the sender alive */
    UCX_FIN   = 3, /* net_finish's marker (the job's tree, as in transport.c) */
    UCX_ABORT = 4, /* the sender ends the job; payload = reason */
    UCX_LOOK  = 5, /* "look RANK": a host mate's look at a silent peer, asked (witness.c) */
    UCX_SEEN  = 6, /* "seen RANK ...": the look, answered */
};

/* The active message's header; the payload is the message. */
struct ucx_hdr {
    uint64_t job;
    uint32_t seq;  /* per sender and receiver: 0, 1, 2, ... */
    uint16_t src, dst;
    uint32_t len;  /* payload bytes */
    uint16_t kind;
    uint16_t pad;
    uint64_t mac;  /* SipHash-2-4(k_hdr, header before mac || payload hash) */
};
_Static_assert(sizeof(struct ucx_hdr) == 32, "ucx header layout");

/* The payload hash the mac covers: the payload's keyed hash in mac mode
 * and for the messages that change the job's life; 0 for data in token
 * mode (the header is still authenticated). */
static uint64_t seal(const struct wire_keys *k, const struct ucx_hdr *h, const void *payload)
{
    uint64_t ph = k->mac || h->kind != UCX_DATA ? wire_payload_hash_full(k, payload, h->len) : 0;
    struct siphash_state s;
    siphash_init(&s, &k->hdr);
    siphash_update(&s, h, offsetof(struct ucx_hdr, mac));
    siphash_update(&s, &ph, sizeof ph);
    return siphash_final(&s);
}

/* ---- state ------------------------------------------------------------- */

/* A message received and not yet delivered: its data is UCX's until
 * released (ucx_owned), else it follows the struct. */
struct ucx_msg {
    struct ucx_msg *next;
    struct ucx_hdr  h;
    void           *data;
    bool            ucx_owned;
};

struct ucx_peer {
    ucp_ep_h         ep;
    uint32_t         tx_seq;      /* next to send; under ux.ucp */
    uint64_t         last_tx_ns;  /* under ux.ucp */
    uint32_t         rx_next;     /* next to deliver; under rx_lock */
    struct ucx_msg  *held;        /* arrived ahead of rx_next, by seq; under rx_lock */
    _Atomic uint64_t last_rx_ns;
    _Atomic bool     fin_rx;
    _Atomic int      failed;      /* the endpoint's error (a ucs_status_t), 0: none */
    _Atomic uint64_t lost_ns;     /* when this node first found it failed (verdict_due) */
    bool             same_host;   /* shares this host's CPUs (liveness.c) */
};

static DSM_STATE struct {
    ucp_context_h     ctx;
    ucp_worker_h      worker;
    int               efd;
    int               rank, nodes;
    struct ucx_peer  *peers;
    struct net_rx_ops ops;
    void             *octx;
    struct wire_keys  keys;
    uint64_t          job;
    uint64_t          peer_timeout_ns, spin_ns;
    uint64_t          heartbeat_ns;  /* a ring neighbour we sent nothing this long gets a NOP */
    pthread_mutex_t   ucp;        /* every call into UCP */
    pthread_mutex_t   rx_lock;    /* who progresses the worker and delivers */
    pthread_mutex_t   lock;       /* gen, and the waiters' cv */
    pthread_cond_t    cv;
    uint64_t          gen;
    struct ucx_msg   *inbox, **inbox_tail; /* filled by on_am, under ucp */
    _Atomic int       sends;      /* sends not yet complete */
    /* When a progress last found nothing: every message that had reached
     * us by then had been read. A peer is declared dead only if it had
     * been silent for the timeout by then, so a node that was not
     * scheduled itself (its peers' messages waiting unread) blames nobody
     * (as net_socket.drained_ns over UDP). */
    _Atomic uint64_t  drained_ns;
    _Atomic bool      any_failed;
    /* the service thread */
    int               evfd, epfd;
    int               tfd;        /* its look-back when a claim took the worker's fd away */
    pthread_mutex_t   claim_lock; /* rx_claims' first and last, and efd_armed */
    bool              efd_armed;  /* the service thread's wait includes the worker's fd */
    pthread_t         thread;
    bool              running;
    _Atomic bool      stopping;
    _Atomic int       rx_claims;
    _Atomic uint64_t  timers_due;
    _Atomic uint64_t  upper_due;
    uint64_t          next_beat;  /* under rx_lock or by the timers' runner */
    pthread_mutex_t   timer_lock; /* one runner of the timers at a time */
    /* net_finish's tree */
    int               parent, first_child, nchildren;
    _Atomic bool      fin_sent, all_finished;
    uint64_t          parent_failed_ns; /* failure_expected; under rx_lock */
} ux;

static __thread bool ucx_in_delivery NET_TLS;

static const char *status_str(int st)
{
    return uc.status_string ? uc.status_string((ucs_status_t)st) : "unknown";
}

/* ---- sending ----------------------------------------------------------- */

static void send_locked(int dst, struct ucx_hdr *hp, unsigned char *buf,
                        const ucp_request_param_t *prm);

static void on_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status; /* a failure fails the endpoint, and on_ep_error says so */
    free(user_data);
    uc.request_free(request);
    atomic_fetch_sub(&ux.sends, 1);
}

/* One message of `kind`: iov[0..iovcnt) then lent[0..lent_len), copied
 * into one buffer that lives until UCX is done with it. */
static int send_kind(int dst, uint16_t kind, const struct iovec *iov, int iovcnt,
                     const void *lent, size_t lent_len)
{
    if (dst < 0 || dst >= ux.nodes || iovcnt < 0)
        return -EINVAL;
    size_t len = lent_len;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    unsigned char *buf = malloc(sizeof(struct ucx_hdr) + len);
    if (!buf)
        log_fatal("out of memory sending %zu bytes to node %d", len, dst);
    unsigned char *p = buf + sizeof(struct ucx_hdr);
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len) /* an empty part may have no base (memcpy's NULL is undefined) */
            memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    if (lent_len)
        memcpy(p, lent, lent_len);
    struct ucx_hdr h = {.job = ux.job, .src = (uint16_t)ux.rank, .dst = (uint16_t)dst,
                        .len = (uint32_t)len, .kind = kind};
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_AM_SEND_FLAG_EAGER, /* the receiver's callback holds the data (on_am) */
        .cb.send = on_sent,
        .user_data = buf,
    };
    pthread_mutex_lock(&ux.ucp);
    send_locked(dst, &h, buf, &prm);
    pthread_mutex_unlock(&ux.ucp);
    stats_add(STAT_NET_MSGS_SENT, 1);
    stats_add(STAT_NET_BYTES_SENT, sizeof h + len);
    return 0;
}

/* Sends buf (h's room, then h->len bytes) to dst. Under ux.ucp. */
static void send_locked(int dst, struct ucx_hdr *hp, unsigned char *buf, const ucp_request_param_t *prm)
{
    struct ucx_hdr h = *hp;
    size_t len = h.len;
    struct ucx_peer *peer = &ux.peers[dst];
    h.seq = peer->tx_seq++;
    h.mac = seal(&ux.keys, &h, buf + sizeof h);
    memcpy(buf, &h, sizeof h);
    peer->last_tx_ns = clock_ns();
    ucs_status_ptr_t r = uc.am_send_nbx(peer->ep, AM_ID, buf, sizeof h, buf + sizeof h, len, prm);
    if (r == NULL) {
        free(buf);
    } else if (UCS_PTR_IS_ERR(r)) {
        free(buf);
        /* The endpoint failed: its error handler names the peer, unless
         * the job is finishing and the peer gone (check_failures). */
        atomic_store(&peer->failed, (int)UCS_PTR_STATUS(r));
        atomic_store(&ux.any_failed, true);
    } else {
        atomic_fetch_add(&ux.sends, 1);
    }
}

int ucx_send_ref(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                 size_t lent_len, struct net_ref *ref)
{
    /* The lent bytes are copied at once: the reference is the lender's
     * alone, and goes when it drops it. */
    (void)ref;
    return send_kind(peer, UCX_DATA, iov, iovcnt, lent, lent_len);
}

/* ---- receiving --------------------------------------------------------- */

/* Inside ucp_worker_progress, under ux.ucp: queue what came; progress()
 * delivers it once the worker is left. */
static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    (void)arg;
    struct ucx_hdr h;
    bool persistent = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* dsm sends eager only; a rendezvous is someone else's */
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        uc.am_data_release(ux.worker, data);
        return UCS_OK;
    }
    if (header_length != sizeof h) {
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        return UCS_OK;
    }
    memcpy(&h, header, sizeof h);
    if (h.job != ux.job || h.src >= ux.nodes || h.dst != ux.rank || h.len != length ||
        h.kind < UCX_DATA || h.kind > UCX_SEEN || h.pad ||
        ((h.kind == UCX_NOP || h.kind == UCX_FIN) && h.len)) {
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        return UCS_OK;
    }
    struct ucx_msg *m = malloc(sizeof *m + (persistent ? 0 : length));
    if (!m)
        log_fatal("out of memory receiving %zu bytes from node %u", length, h.src);
    m->next = NULL;
    m->h = h;
    if (persistent) {
        m->data = data;
        m->ucx_owned = true;
    } else {
        m->data = m + 1;
        m->ucx_owned = false;
        if (length)
            memcpy(m->data, data, length);
    }
    *ux.inbox_tail = m;
    ux.inbox_tail = &m->next;
    stats_add(STAT_NET_BYTES_RECV, sizeof h + length);
    return persistent ? UCS_INPROGRESS : UCS_OK;
}

static void release(struct ucx_msg *m)
{
    if (m->ucx_owned) {
        pthread_mutex_lock(&ux.ucp);
        uc.am_data_release(ux.worker, m->data);
        pthread_mutex_unlock(&ux.ucp);
    }
    free(m);
}

/* Whether an endpoint's failure may be ignored: the job is finishing and
 * the peer, its part done, may have left already. Until our FIN went up
 * every failure counts; after it only the parent's (whose FIN we wait
 * for), until that came. */
static bool failure_expected(int peer)
{
    if (atomic_load(&ux.all_finished))
        return true;
    if (!atomic_load(&ux.fin_sent))
        return false;
    if (peer != ux.parent)
        return true;
    /* The parent leaves right after its FIN to us has reached our side;
     * give that FIN a moment to be read before blaming it. */
    uint64_t now = clock_ns();
    if (!ux.parent_failed_ns)
        ux.parent_failed_ns = now;
    return now - ux.parent_failed_ns < FIN_GRACE_NS;
}

/* A dead peer is named once per job. Its two ring neighbours watch it on
 * the same clock, and both named a stopped node, a line each (over UDP
 * the first line's ABORT most often reaches the others first; by luck).
 * So the peer's ring predecessor says it (log_fatal), and any other node
 * that finds it dead ends with the same line as a relay to the launcher,
 * which prints it only if no node said a failure of its own
 * (log_exit_quietly): one line, whoever is first, and a node that finds
 * it alone (the predecessor starved, or not watching) is still heard. */
static void end_naming(int peer, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void end_naming(int peer, const char *fmt, ...)
{
    char msg[400], line[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if ((ux.rank + 1) % ux.nodes == peer)
        log_fatal("%s", msg);
    snprintf(line, sizeof line, "dsm: node %d: %s", ux.rank, msg);
    log_exit_quietly(line);
}

/* A peer whose endpoint failed mid-job has most often ended: killed, or
 * crashed. Its launcher sees that end (its child, or its agent's) and
 * names the cause, "killed by signal 9", stopping the job; over UDP that
 * line always comes first, the nodes finding the peer silent only a
 * timeout later. Over UCX the peer's connections close with its process,
 * and the nodes that named it at once ("unreachable over UCX (Endpoint
 * timeout)", status 1) beat the launcher in 3 of 6 runs. So a failure
 * waits, as silence does, DSM_PEER_TIMEOUT (VERDICT_WAIT_NS if that is
 * 0) for the launcher's verdict, whose SIGTERM ends this node quietly;
 * only a failure no launcher sees (a link lost between hosts) is named
 * here. The first call starts the wait; true once it is over. */
static bool verdict_due(int peer)
{
    uint64_t now = clock_ns(), since = 0;
    if (atomic_compare_exchange_strong(&ux.peers[peer].lost_ns, &since, now))
        since = now;
    return now - since >= (ux.peer_timeout_ns ? ux.peer_timeout_ns : VERDICT_WAIT_NS);
}

void ucx_peer_lost(int peer, int status, const char *during)
{
    while (!verdict_due(peer))
        usleep(10000);
    end_naming(peer, "peer %d unreachable over UCX%s (%s); ending the job", peer, during,
               status_str(status));
}

static void check_failures(void)
{
    if (!atomic_load(&ux.any_failed))
        return;
    for (int i = 0; i < ux.nodes; i++) {
        int st = atomic_load(&ux.peers[i].failed);
        if (st && !failure_expected(i) && verdict_due(i))
            end_naming(i, "peer %d unreachable over UCX (%s); ending the job", i, status_str(st));
    }
}

static void handle(struct ucx_msg *m)
{
    int src = m->h.src;
    switch (m->h.kind) {
    case UCX_DATA:
        stats_add(STAT_NET_MSGS_RECV, 1);
        ucx_in_delivery = true;
        ux.ops.deliver(ux.octx, src, m->data, m->h.len, false);
        ucx_in_delivery = false;
        break;
    case UCX_NOP:
        break;
    case UCX_FIN:
        /* From a child: its subtree has finished; from the parent: every
         * node has (ucx_finish). */
        atomic_store(&ux.peers[src].fin_rx, true);
        if (src == ux.parent)
            atomic_store(&ux.all_finished, true);
        break;
    case UCX_ABORT: {
        char reason[257], line[400];
        wire_abort_reason(m->data, m->h.len, reason, sizeof reason);
        snprintf(line, sizeof line, "dsm: node %d: node %d ended the job: %s", ux.rank, src, reason);
        log_exit_quietly(line);
        break;
    }
    case UCX_LOOK: {
        char reply[BOOT_ARBITER_LINE_MAX + 1];
        size_t n = witness_answer(src, m->data, m->h.len, reply, sizeof reply);
        if (n)
            send_kind(src, UCX_SEEN, &(struct iovec){.iov_base = reply, .iov_len = n}, 1, NULL, 0);
        break;
    }
    case UCX_SEEN:
        witness_heard(src, m->data, m->h.len);
        break;
    }
}

void ucx_send_witness(int to, bool question, const void *line, size_t len)
{
    send_kind(to, question ? UCX_LOOK : UCX_SEEN,
              &(struct iovec){.iov_base = (void *)line, .iov_len = len}, 1, NULL, 0);
}

/* Checks a received message and delivers it and any it releases in
 * sequence order. Returns how many were delivered. Under rx_lock. */
static int accept_msg(struct ucx_msg *m)
{
    if (m->h.mac != seal(&ux.keys, &m->h, m->data)) {
        stats_add(STAT_NET_AUTH_DROPPED, 1);
        release(m);
        return 0;
    }
    struct ucx_peer *p = &ux.peers[m->h.src];
    atomic_store_explicit(&p->last_rx_ns, clock_ns(), memory_order_relaxed);
    if ((int32_t)(m->h.seq - p->rx_next) < 0) {
        stats_add(STAT_NET_DUPS_DROPPED, 1);
        release(m);
        return 0;
    }
    if (m->h.seq != p->rx_next) {
        struct ucx_msg **at = &p->held;
        while (*at && (int32_t)((*at)->h.seq - m->h.seq) < 0)
            at = &(*at)->next;
        if (*at && (*at)->h.seq == m->h.seq) {
            stats_add(STAT_NET_DUPS_DROPPED, 1);
            release(m);
            return 0;
        }
        m->next = *at;
        *at = m;
        stats_add(STAT_NET_OOO_BUFFERED, 1);
        return 0;
    }
    int n = 0;
    for (;;) {
        p->rx_next++;
        handle(m);
        release(m);
        n++;
        m = p->held;
        if (!m || m->h.seq != p->rx_next)
            break;
        p->held = m->next;
    }
    return n;
}

/* One round of progress: the worker's, then delivery of what it brought.
 * Returns the number of events and messages. Under rx_lock. */
static int progress(void)
{
    /* One call: each of its transports' polls is a system call over tcp
     * (an epoll_wait per interface), and a caller that got events polls
     * again anyway. */
    uint64_t before = clock_ns();
    pthread_mutex_lock(&ux.ucp);
    unsigned n = uc.worker_progress(ux.worker);
    struct ucx_msg *in = ux.inbox;
    if (!n && !in) /* everything sent to us before `before` has been read */
        atomic_store_explicit(&ux.drained_ns, before, memory_order_relaxed);
    ux.inbox = NULL;
    ux.inbox_tail = &ux.inbox;
    pthread_mutex_unlock(&ux.ucp);
    /* What came first: a parent's FIN may arrive in the same round as
     * its endpoint's failure, when it has left after sending it. */
    while (in) {
        struct ucx_msg *next = in->next;
        in->next = NULL;
        n += (unsigned)accept_msg(in);
        in = next;
    }
    check_failures();
    return (int)n;
}

/* ---- waiting ----------------------------------------------------------- */

static void bump_gen(void)
{
    pthread_mutex_lock(&ux.lock);
    ux.gen++;
    pthread_cond_broadcast(&ux.cv);
    pthread_mutex_unlock(&ux.lock);
}

void ucx_notify(void) { bump_gen(); }

static void kick(void)
{
    if (service_plan.polls) /* it is awake, and reads the worker by itself */
        return;
    uint64_t one = 1;
    if (write(ux.evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_fatal("cannot wake the service thread: %s", strerror(errno));
}

void ucx_timer_at(uint64_t t)
{
    uint64_t cur = atomic_load(&ux.upper_due);
    while ((!cur || t < cur) && !atomic_compare_exchange_weak(&ux.upper_due, &cur, t))
        ;
    /* The service thread sleeps until timers_due at most: wake it only
     * when that comes too late. */
    bool lowered = false;
    cur = atomic_load(&ux.timers_due);
    while (t < cur && !(lowered = atomic_compare_exchange_weak(&ux.timers_due, &cur, t)))
        ;
    if (lowered && !ucx_in_delivery && !atomic_load(&ux.rx_claims))
        kick();
}

/* The upper layer's tick, heartbeats, and the silence check. By the
 * service thread every time it wakes, by a polling waiter when due. */
static void run_timers(void)
{
    if (pthread_mutex_trylock(&ux.timer_lock))
        return;
    uint64_t now = clock_ns();
    atomic_store(&ux.upper_due, 0);
    uint64_t up = ux.ops.tick ? ux.ops.tick(now) : 0;
    uint64_t late = atomic_load(&ux.upper_due);
    if (late && (!up || late < up))
        up = late;
    uint64_t next = now + (uint64_t)NET_TICK_MS * 1000000;
    if (up && up < next)
        next = up;
    if (ux.nodes > 1 && !atomic_load(&ux.all_finished) && now >= ux.next_beat) {
        ux.next_beat = now + ux.heartbeat_ns / 2;
        int ring[2] = {(ux.rank + 1) % ux.nodes, (ux.rank + ux.nodes - 1) % ux.nodes};
        for (int i = 0; i < 2; i++) {
            struct ucx_peer *p = &ux.peers[ring[i]];
            if (i == 1 && ring[1] == ring[0])
                break;
            pthread_mutex_lock(&ux.ucp);
            bool quiet = now - p->last_tx_ns >= ux.heartbeat_ns;
            pthread_mutex_unlock(&ux.ucp);
            if (quiet)
                send_kind(ring[i], UCX_NOP, NULL, 0, NULL, 0);
            uint64_t seen = atomic_load_explicit(&p->last_rx_ns, memory_order_relaxed);
            uint64_t drained = atomic_load_explicit(&ux.drained_ns, memory_order_relaxed);
            const char *why;
            if (!atomic_load(&ux.fin_sent) && drained > seen &&
                net_peer_dead(ring[i], p->same_host, drained - seen, ux.peer_timeout_ns, now, &why))
                end_naming(ring[i], "peer %d silent for %.1f s (no message over UCX%s%s); ending the job",
                           ring[i], (double)(now - seen) / 1e9, why ? "; " : "", why ? why : "");
        }
    }
    atomic_store(&ux.timers_due, next);
    pthread_mutex_unlock(&ux.timer_lock);
}

/* By the service thread, about to sleep on the worker's event fd (armed
 * with ucp_worker_arm): the fd joins its wait unless a waiter has claimed
 * the worker meanwhile. One shot: a waiter's progress may leave the fd
 * ready; it wakes us once, not again and again. */
static bool arm_efd(void)
{
    pthread_mutex_lock(&ux.claim_lock);
    bool arm = atomic_load(&ux.rx_claims) == 0;
    if (arm) {
        struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = ux.efd};
        if (epoll_ctl(ux.epfd, EPOLL_CTL_MOD, ux.efd, &e) < 0)
            log_fatal("cannot wait on the UCX worker: %s", strerror(errno));
        ux.efd_armed = true;
    }
    pthread_mutex_unlock(&ux.claim_lock);
    return arm;
}

/* By a waiter that starts to poll the worker itself. If the service thread
 * sleeps on the worker's fd, the fd leaves its wait: otherwise the next
 * message would wake it too, for nothing (it sees the claim and steps
 * back), and that wake-up costs a CPU's turn on a machine whose CPUs the
 * program's threads hold (UDP's claim_socket, service.c, does the same).
 * It then looks back after LONG_WAIT_NS, as it would had the fd woken it. */
static void claim_worker(void)
{
    pthread_mutex_lock(&ux.claim_lock);
    if (atomic_fetch_add(&ux.rx_claims, 1) == 0 && ux.efd_armed) {
        struct epoll_event off = {.events = 0, .data.fd = ux.efd};
        if (epoll_ctl(ux.epfd, EPOLL_CTL_MOD, ux.efd, &off) < 0)
            log_fatal("cannot take the UCX worker out of the service thread's wait: %s", strerror(errno));
        ux.efd_armed = false;
        struct itimerspec at = {.it_value = {.tv_nsec = (long)LONG_WAIT_NS}};
        if (timerfd_settime(ux.tfd, 0, &at, NULL) < 0)
            log_fatal("cannot set the service thread's timer: %s", strerror(errno));
    }
    pthread_mutex_unlock(&ux.claim_lock);
}

/* The service thread: progresses the worker while no waiter does, and
 * otherwise sleeps on the worker's event fd (armed) and its wake-up
 * channel. While a waiter polls, it sleeps on the channel alone and looks
 * back after a while, as UDP's does (service.c), backing off. */
static void *ucx_service_main(void *arg)
{
    (void)arg;
    smp_internal_thread(); /* the program's signals go to its threads */
    service_pin();
    while (service_plan.polls && !atomic_load(&ux.stopping)) { /* a CPU of its own */
        int n = 0;
        if (atomic_load(&ux.rx_claims) == 0 && pthread_mutex_trylock(&ux.rx_lock) == 0) {
            n = progress();
            pthread_mutex_unlock(&ux.rx_lock);
        }
        if (n)
            bump_gen();
        if (clock_ns() >= atomic_load(&ux.timers_due))
            run_timers();
        if (!n)
            service_poll_pause();
    }
    uint64_t lookback = LONG_WAIT_NS;
    while (!atomic_load(&ux.stopping)) {
        bool on_efd = false;
        if (atomic_load(&ux.rx_claims) == 0 && pthread_mutex_trylock(&ux.rx_lock) == 0) {
            int n = progress();
            ucs_status_t st = UCS_OK;
            if (!n && atomic_load(&ux.sends) == 0) {
                pthread_mutex_lock(&ux.ucp);
                st = uc.worker_arm(ux.worker);
                pthread_mutex_unlock(&ux.ucp);
            }
            pthread_mutex_unlock(&ux.rx_lock);
            if (n) {
                bump_gen();
                lookback = LONG_WAIT_NS;
            }
            if (clock_ns() >= atomic_load(&ux.timers_due))
                run_timers();
            if (n || st == UCS_ERR_BUSY)
                continue;
            /* Sends still queued and nothing moved (a receiver's queue
             * full, a stopped peer): look again shortly, without
             * spinning on a CPU the program needs. */
            if (atomic_load(&ux.sends))
                goto sleep;
            if (st != UCS_OK)
                log_fatal("cannot arm the UCX worker's event: %s", status_str(st));
            on_efd = arm_efd();
        }
    sleep:;
        uint64_t now = clock_ns(), due = atomic_load(&ux.timers_due);
        uint64_t wait_ns = due > now ? due - now : 0;
        if (!on_efd && atomic_load(&ux.rx_claims) == 0) {
            if (wait_ns > SEND_RETRY_NS) /* sends queued (above) */
                wait_ns = SEND_RETRY_NS;
        } else if (!on_efd) {
            if (wait_ns > lookback)
                wait_ns = lookback;
            if (lookback < LOOKBACK_MAX_NS)
                lookback *= 2;
        }
        struct timespec ts = {.tv_sec = (time_t)(wait_ns / 1000000000ull),
                              .tv_nsec = (long)(wait_ns % 1000000000ull)};
        struct epoll_event ev[3];
        int r = epoll_pwait2(ux.epfd, ev, 3, &ts, NULL);
        if (r < 0 && errno != EINTR)
            log_fatal("waiting on the UCX worker failed: %s", strerror(errno));
        for (int i = 0; i < r; i++) {
            uint64_t v;
            if (ev[i].data.fd == ux.evfd) {
                if (read(ux.evfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_fatal("service wake-up channel failed: %s", strerror(errno));
                lookback = LONG_WAIT_NS;
            } else if (ev[i].data.fd == ux.tfd) {
                if (read(ux.tfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_fatal("service look-back timer failed: %s", strerror(errno));
            } else if (ev[i].data.fd == ux.efd) {
                pthread_mutex_lock(&ux.claim_lock); /* one shot: it fired, so it is off */
                ux.efd_armed = false;
                pthread_mutex_unlock(&ux.claim_lock);
            }
        }
        if (clock_ns() >= atomic_load(&ux.timers_due))
            run_timers();
    }
    return NULL;
}

int ucx_wait(bool (*done)(void *), void *arg, uint64_t deadline)
{
    if (ucx_in_delivery)
        log_fatal("internal error: a wait on the network inside a delivery");
    uint64_t spin_until = 0;
    bool claimed = false;
    int rc = 0;
    for (;;) {
        pthread_mutex_lock(&ux.lock);
        uint64_t g = ux.gen;
        pthread_mutex_unlock(&ux.lock);
        if (done(arg))
            break;
        uint64_t now = clock_ns();
        if (deadline && now >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        if (ux.spin_ns && smp_may_spin() && (spin_until == 0 || now < spin_until)) {
            if (!spin_until) {
                spin_until = now + ux.spin_ns;
                claim_worker();
                claimed = true;
            }
            if (pthread_mutex_trylock(&ux.rx_lock) == 0) {
                int n = progress();
                pthread_mutex_unlock(&ux.rx_lock);
                if (n) {
                    bump_gen();
                    continue;
                }
            }
            if (now >= atomic_load(&ux.timers_due))
                run_timers();
            sched_yield();
            continue;
        }
        if (claimed) {
            /* About to sleep until a delivery: the service thread must
             * take the worker back now. */
            atomic_fetch_sub(&ux.rx_claims, 1);
            claimed = false;
            kick();
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t rel = 20ull * 1000000;
        if (deadline && deadline - now < rel)
            rel = deadline - now;
        ts.tv_sec += (time_t)(rel / 1000000000ull);
        ts.tv_nsec += (long)(rel % 1000000000ull);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&ux.lock);
        if (ux.gen == g)
            pthread_cond_timedwait(&ux.cv, &ux.lock, &ts);
        pthread_mutex_unlock(&ux.lock);
    }
    if (claimed)
        atomic_fetch_sub(&ux.rx_claims, 1); /* the service thread looks back soon */
    return rc;
}

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
    boot.addr = calloc((size_t)ux.nodes, sizeof *boot.addr);
    boot.len = calloc((size_t)ux.nodes, sizeof *boot.len);
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
    for (int i = 0; i < ux.nodes; i++)
        if (i != ux.rank && (rc = net_send(i, v, 4)))
            log_fatal("cannot send the UCX address to node %d: %s", i, strerror(-rc));
    int want = ux.nodes - 1;
    net_wait(boot_all, &want, 0);
    net_finish();
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    int peer = (int)(intptr_t)arg;
    atomic_store(&ux.peers[peer].failed, (int)status);
    atomic_store(&ux.any_failed, true);
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
        pthread_mutex_lock(&ux.ucp);
        uc.worker_progress(ux.worker);
        struct ucx_msg *abort = NULL;
        for (struct ucx_msg *m = ux.inbox; m && !abort; m = m->next)
            if (m->h.kind == UCX_ABORT && m->h.mac == seal(&ux.keys, &m->h, m->data))
                abort = m;
        pthread_mutex_unlock(&ux.ucp);
        if (abort)
            handle(abort); /* ends the process */
        usleep(1000);
    }
    char said[256], line[600];
    ucx_log_first_error(said, sizeof said);
    snprintf(line, sizeof line, "dsm: node %d: DSM_NET=ucx: cannot reach node %d over UCX: %s%s%s%s",
             ux.rank, peer, status_str(st), said[0] ? " (UCX: " : "", said, said[0] ? ")" : "");
    log_exit_quietly(line);
}

int ucx_start(const struct net_params *prm, const struct net_rx_ops *ops, void *octx)
{
    load_ucp();
    ux.rank = job()->rank;
    ux.nodes = job()->nodes;
    ux.ops = *ops;
    ux.octx = octx;
    ux.job = prm->job_id;
    ux.peer_timeout_ns = (uint64_t)(prm->peer_timeout_s * 1e9);
    /* Silence is measured from the last message received, so a live
     * neighbour must send several times within the timeout. */
    ux.heartbeat_ns = ux.peer_timeout_ns / 4 < HEARTBEAT_NS ? ux.peer_timeout_ns / 4 : HEARTBEAT_NS;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ux.spin_ns = prm->spin_us < 0 ? service_spin_ns(ux.nodes, cpus) : (uint64_t)prm->spin_us * 1000;
    wire_keys_init(&ux.keys, prm->key, prm->job_id, prm->auth_mac);
    pthread_mutex_init(&ux.ucp, NULL);
    pthread_mutex_init(&ux.rx_lock, NULL);
    pthread_mutex_init(&ux.lock, NULL);
    pthread_mutex_init(&ux.timer_lock, NULL);
    pthread_mutex_init(&ux.claim_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ux.cv, &ca);
    pthread_condattr_destroy(&ca);
    ux.inbox_tail = &ux.inbox;
    int k = job()->cfg.barrier_fanout >= 2 ? (int)job()->cfg.barrier_fanout : 8;
    ux.parent = tree_parent(ux.rank, k);
    ux.nchildren = tree_children(ux.rank, k, ux.nodes, &ux.first_child);

    /* Through the environment, as a user would set them (never over the
     * user's own): ucp_config_modify does not reach the tcp transport's
     * settings in UCX 1.13. One this UCX does not know is ignored. Before
     * the UDP transport's thread starts: setenv is not thread-safe. */
    struct ucx_setting set[UCX_SETTINGS_MAX];
    int nset = ucx_choose_settings(prm, (size_t)job()->cfg.page_size, set);
    for (int i = 0; i < nset; i++) {
        char var[64];
        snprintf(var, sizeof var, "UCX_%s", set[i].name);
        setenv(var, set[i].value, 0);
    }

    boot_begin(prm);

    ucp_config_t *config;
    ucs_status_t st = uc.config_read(NULL, NULL, &config);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: UCX's configuration: %s", status_str(st));
    ucx_rma_configure(prm->one_sided);
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | (ucx_rma_wanted() ? UCP_FEATURE_RMA : 0),
        .estimated_num_eps = (size_t)ux.nodes,
        .name = "dsm",
    };
    st = uc.init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ux.ctx);
    uc.config_release(config);
    if (st != UCS_OK) {
        /* Under dsmrun on this host ucx_check.c has refused such a
         * setting already; started otherwise, the node says it. */
        char said[256];
        const char *tls = getenv("UCX_TLS");
        ucx_log_first_error(said, sizeof said);
        log_fatal("DSM_NET=ucx: cannot initialise UCX%s%s: %s%s%s%s", tls ? " with UCX_TLS=" : "",
                  tls ? tls : "", status_str(st), said[0] ? " (UCX: " : "", said, said[0] ? ")" : "");
    }
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    st = uc.worker_create(ux.ctx, &wp, &ux.worker);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot create a UCX worker: %s", status_str(st));
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB,
        .id = AM_ID,
        .flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA,
        .cb = on_am,
    };
    st = uc.worker_set_am_recv_handler(ux.worker, &hp);
    if (st == UCS_OK)
        st = uc.worker_get_efd(ux.worker, &ux.efd);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot set up the UCX worker: %s", status_str(st));
    ucp_address_t *mine;
    size_t mine_len;
    st = uc.worker_get_address(ux.worker, &mine, &mine_len);
    if (st != UCS_OK)
        log_fatal("DSM_NET=ucx: cannot get the UCX worker's address: %s", status_str(st));

    void *rma = NULL;
    size_t rma_len = ucx_rma_pack(ux.ctx, &rma);
    exchange_addresses(mine, mine_len, rma, rma_len);
    free(rma);

    ux.peers = calloc((size_t)ux.nodes, sizeof *ux.peers);
    if (!ux.peers)
        log_fatal("out of memory starting the UCX transport");
    uint64_t now = clock_ns();
    char key[HOST_KEY_LEN];
    host_key(key);
    for (int i = 0; i < ux.nodes; i++) {
        /* UCP_ERR_HANDLING_MODE_PEER keeps an endpoint on transports that
         * report a peer's failure; in UCX 1.13 the shared-memory ones
         * (posix, sysv) do not, so a co-located peer in that mode would
         * be reached over tcp on the loopback. Those get no error
         * handling from UCX: a dead co-located node is found by the
         * launcher, or by its silence (run_timers). */
        const size_t boot_head = HOST_KEY_LEN + sizeof(struct boot_lens);
        bool here = i == ux.rank || !memcmp(boot.addr[i], key, HOST_KEY_LEN);
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = i == ux.rank ? mine : (const ucp_address_t *)((char *)boot.addr[i] + boot_head),
            .err_mode = here ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = {.cb = on_ep_error, .arg = (void *)(intptr_t)i},
        };
        st = uc.ep_create(ux.worker, &ep, &ux.peers[i].ep);
        if (st != UCS_OK)
            unreachable_at_start(i, st);
        atomic_store(&ux.peers[i].last_rx_ns, now);
        ux.peers[i].last_tx_ns = now;
        ux.peers[i].same_host = here;
        if (i != ux.rank) {
            struct boot_lens lens;
            memcpy(&lens, (char *)boot.addr[i] + HOST_KEY_LEN, sizeof lens);
            ucx_rma_unpack(i, here, ux.peers[i].ep, (char *)boot.addr[i] + boot_head + lens.addr,
                           lens.rma);
        }
        free(boot.addr[i]);
    }
    uc.worker_release_address(ux.worker, mine);
    free(boot.addr);
    free(boot.len);

    ux.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ux.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    ux.epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = ux.evfd};
    struct epoll_event look = {.events = EPOLLIN, .data.fd = ux.tfd};
    struct epoll_event work = {.events = 0, .data.fd = ux.efd}; /* armed by arm_efd */
    if (ux.evfd < 0 || ux.tfd < 0 || ux.epfd < 0 || epoll_ctl(ux.epfd, EPOLL_CTL_ADD, ux.evfd, &wake) < 0 ||
        epoll_ctl(ux.epfd, EPOLL_CTL_ADD, ux.tfd, &look) < 0 || epoll_ctl(ux.epfd, EPOLL_CTL_ADD, ux.efd, &work) < 0)
        log_fatal("cannot set up the UCX service thread's wait: %s", strerror(errno));
    atomic_store(&ux.timers_due, now);
    net_over_ucx = true;
    log_set_abort_hook(ucx_abort_hook);
    int here = 0, index_here = 0;
    for (int i = 0; i < ux.nodes; i++) {
        here += ux.peers[i].same_host;
        index_here += ux.peers[i].same_host && i < ux.rank;
    }
    service_plan_decide(prm->service_poll, (int)job()->cfg.threads, ux.nodes, here, index_here);
    ux.running = true;
    int err = pthread_create(&ux.thread, NULL, ucx_service_main, NULL);
    if (err)
        log_fatal("cannot start the UCX service thread: %s", strerror(err));
    return 0;
}

/* ---- for ucx_rma.c ----------------------------------------------------- */

ucp_worker_h ucx_worker_lock(void)
{
    pthread_mutex_lock(&ux.ucp);
    return ux.worker;
}

void ucx_worker_unlock(void)
{
    /* A caller's progress may have queued messages (on_am) while the
     * service thread sleeps on an event that progress consumed. */
    bool queued = ux.inbox != NULL;
    pthread_mutex_unlock(&ux.ucp);
    if (queued)
        kick();
}

int ucx_peer_failed(int peer) { return atomic_load(&ux.peers[peer].failed); }
ucp_ep_h ucx_ep(int peer) { return ux.peers[peer].ep; }
const char *ucx_status_string(int status) { return status_str(status); }
uint64_t ucx_peer_timeout_ns(void) { return ux.peer_timeout_ns; }

/* ---- the end ----------------------------------------------------------- */

void ucx_abort_peers(const char *reason)
{
    if (!ux.peers)
        return;
    /* Best effort, from wherever log_fatal was called: if UCP is busy
     * (this thread may be inside it), a peer that misses the notice finds
     * this node gone instead. */
    size_t len = strlen(reason);
    if (len > 256)
        len = 256;
    bool locked = false;
    for (int t = 0; t < 100 && !(locked = pthread_mutex_trylock(&ux.ucp) == 0); t++)
        usleep(1000);
    if (!locked)
        return;
    for (int i = 0; i < ux.nodes; i++) {
        if (i == ux.rank || atomic_load(&ux.peers[i].failed))
            continue;
        unsigned char *buf = malloc(sizeof(struct ucx_hdr) + len);
        if (!buf)
            break;
        memcpy(buf + sizeof(struct ucx_hdr), reason, len);
        struct ucx_hdr h = {.job = ux.job, .src = (uint16_t)ux.rank, .dst = (uint16_t)i,
                            .len = (uint32_t)len, .kind = UCX_ABORT};
        ucp_request_param_t prm = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                            UCP_OP_ATTR_FIELD_FLAGS,
            .flags = UCP_AM_SEND_FLAG_EAGER, .cb.send = on_sent, .user_data = buf};
        send_locked(i, &h, buf, &prm);
    }
    /* Push them out; what cannot leave in this time does not. */
    uint64_t until = clock_ns() + 100ull * 1000000;
    while (atomic_load(&ux.sends) && clock_ns() < until)
        uc.worker_progress(ux.worker);
    pthread_mutex_unlock(&ux.ucp);
}

static void on_flushed(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    uc.request_free(request);
    atomic_store((_Atomic bool *)user_data, true);
}

static bool flag_set(void *arg) { return atomic_load((_Atomic bool *)arg); }

/* Waits until everything sent so far has reached its receiver's side. */
static void flush_worker(void)
{
    _Atomic bool done = false;
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.send = on_flushed, .user_data = (void *)&done};
    pthread_mutex_lock(&ux.ucp);
    ucs_status_ptr_t r = uc.worker_flush_nbx(ux.worker, &prm);
    pthread_mutex_unlock(&ux.ucp);
    if (r == NULL || UCS_PTR_IS_ERR(r))
        return; /* done, or an endpoint failed: check_failures tells */
    ucx_wait(flag_set, (void *)&done, 0);
}

static bool subtree_finished(void *arg)
{
    (void)arg;
    if (atomic_load(&ux.sends))
        return false;
    for (int c = 0; c < ux.nchildren; c++)
        if (!atomic_load(&ux.peers[ux.first_child + c].fin_rx))
            return false;
    return true;
}

static bool all_finished(void *arg)
{
    (void)arg;
    return atomic_load(&ux.all_finished);
}

static bool sends_done(void *arg)
{
    (void)arg;
    return atomic_load(&ux.sends) == 0;
}

void ucx_finish(void)
{
    if (!ux.running)
        return;
    /* As transport.c's net_finish, along the job's tree: once our subtree
     * has finished and all we sent has reached its receivers (the flush),
     * a FIN goes up; the root's comes back down, and says every node has
     * finished and holds what was sent to it. */
    ucx_wait(subtree_finished, NULL, 0);
    flush_worker();
    if (ux.parent >= 0)
        send_kind(ux.parent, UCX_FIN, NULL, 0, NULL, 0);
    atomic_store(&ux.fin_sent, true);
    if (ux.parent < 0)
        atomic_store(&ux.all_finished, true);
    ucx_wait(all_finished, NULL, 0);
    for (int c = 0; c < ux.nchildren; c++)
        send_kind(ux.first_child + c, UCX_FIN, NULL, 0, NULL, 0);
    ucx_wait(sends_done, NULL, 0);
    flush_worker();

    atomic_store(&ux.stopping, true);
    kick();
    pthread_join(ux.thread, NULL);
    ux.running = false;
    log_set_abort_hook(NULL);
    /* Peers may be gone already: close without waiting for them. */
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void **reqs = calloc((size_t)ux.nodes, sizeof *reqs);
    pthread_mutex_lock(&ux.ucp);
    for (int i = 0; i < ux.nodes; i++) {
        ucs_status_ptr_t r = uc.ep_close_nbx(ux.peers[i].ep, &prm);
        if (reqs && r && !UCS_PTR_IS_ERR(r))
            reqs[i] = r;
    }
    uint64_t until = clock_ns() + CLOSE_WAIT_NS;
    for (int i = 0; reqs && i < ux.nodes; i++) {
        while (reqs[i] && uc.request_check_status(reqs[i]) == UCS_INPROGRESS && clock_ns() < until)
            uc.worker_progress(ux.worker);
        if (reqs[i] && uc.request_check_status(reqs[i]) != UCS_INPROGRESS)
            uc.request_free(reqs[i]);
    }
    pthread_mutex_unlock(&ux.ucp);
    free(reqs);
    /* What is still queued was sent after every peer finished: nobody's.
     * The worker and the context stay: UCX's own teardown would wait on
     * requests left with peers that have gone, and the process ends. */
    close(ux.evfd);
    close(ux.tfd);
    close(ux.epfd);
}

#endif /* DSM_HAVE_UCX */
