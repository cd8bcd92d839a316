/*
 * transport.c — reliable per-peer FIFO messages over one UDP socket: the
 * transport's state, and its life — start, finish, abort.
 *
 * The work is done elsewhere, one concern a file: udp.c puts datagrams on
 * and off the socket in batches; window.c keeps each peer's send window,
 * acknowledgements, timers and retransmissions; recv.c checks, orders,
 * reassembles and delivers; service.c decides which thread drives all
 * that; inject.c fakes a bad network for tests. transport.h holds the
 * state they share and says which lock guards what.
 *
 * Starting is all-or-nothing: net_start either leaves a running service
 * thread or gives back every resource it took, the socket included, since
 * the caller handed that over. Finishing waits until no peer can still
 * need anything from us (net_finish).
 */
#include "net/transport.h"
#include "net/backend.h"
#include "net/ucx.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/state.h"
#include "base/trace.h"
#include "base/tree.h"

#define LINGER_SILENCE_NS (2000ull * 1000000) /* see net_finish */

/* DSM_STATE: a fork-style create copies the master's globals, never these. */
DSM_STATE struct net net_state;

int net_rank(void) { return job()->rank; }
int net_nodes(void) { return job()->nodes; }
size_t net_datagram_payload(void) { return net_state.sock.max_payload; }

static void abort_hook(const char *reason)
{
    net_abort_peers(reason);
}

static void udp_abort_peers(const char *reason)
{
    if (!net_state.peers)
        return;
    /* Best effort and lock-free: the caller may hold net_state.lock. */
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < job()->nodes; i++)
            if (i != job()->rank)
                window_send_control(i, WIRE_ABORT, reason, strlen(reason));
}

static void udp_send_witness(int to, bool question, const void *line, size_t len)
{
    window_send_control(to, question ? WIRE_LOOK : WIRE_SEEN, line, len);
}

/* ---- net.h's calls, to the job's transport (backend.h) ---- */

static void udp_finish(void);

const struct net_backend udp_backend = {
    .name = "udp",
    .send_ref = udp_send_ref,
    .wait = udp_wait,
    .notify = udp_notify,
    .timer_at = udp_timer_at,
    .batch_begin = udp_batch_begin,
    .batch_end = udp_batch_end,
    .send_witness = udp_send_witness,
    .finish = udp_finish,
    .abort_peers = udp_abort_peers,
};

DSM_STATE const struct net_backend *net_backend = &udp_backend;

int net_send(int dst, const struct iovec *iov, int iovcnt)
{
    return net_send_ref(dst, iov, iovcnt, NULL, 0, NULL);
}

int net_send_ref(int dst, const struct iovec *iov, int iovcnt, const void *lent, size_t lent_len,
                 struct net_ref *ref)
{
    /* Every message leaves here, over either transport: a forked child
     * (runtime/forked.c) sending on its node's socket would speak for a
     * node it is not. */
    if (__builtin_expect(log_in_forked_child(), 0))
        log_forked_child("called dsm (a message to node %d)", dst);
    return net_backend->send_ref(dst, iov, iovcnt, lent, lent_len, ref);
}

int net_wait(bool (*done)(void *), void *arg, uint64_t deadline)
{
    /* A forked child has no service thread: nothing would ever come. */
    if (__builtin_expect(log_in_forked_child(), 0))
        log_forked_child("called dsm (a wait for its node's messages)");
    return net_backend->wait(done, arg, deadline);
}

void net_notify(void) { net_backend->notify(); }

void net_timer_at(uint64_t t) { net_backend->timer_at(t); }

void net_batch_begin(void)
{
    if (net_backend->batch_begin)
        net_backend->batch_begin();
}

void net_batch_end(void)
{
    if (net_backend->batch_end)
        net_backend->batch_end();
}

void net_send_witness(int to, bool question, const void *line, size_t len)
{
    net_backend->send_witness(to, question, line, len);
}

void net_finish(void) { net_backend->finish(); }

void net_abort_peers(const char *reason) { net_backend->abort_peers(reason); }

int net_expose(size_t len) { return ucx_rma_expose(len); }

void *net_exposed(int range) { return net_backend->exposed ? net_backend->exposed(range) : NULL; }

bool net_one_sided(int peer) { return net_backend->one_sided && net_backend->one_sided(peer); }

int net_get(int peer, int range, size_t offset, void *dst, size_t len)
{
    return net_backend->get ? net_backend->get(peer, range, offset, dst, len) : -ENOTSUP;
}

static DSM_STATE bool cpus_shared;

bool net_cpus_shared(void) { return cpus_shared; }

/* This job's nodes whose address is this node's: on this host. */
static long nodes_here(const struct net_params *prm)
{
    long here = 0;
    for (int i = 0; i < job()->nodes; i++)
        here += prm->peers[i].sin_addr.s_addr == prm->peers[job()->rank].sin_addr.s_addr;
    return here;
}

int net_start(const struct net_params *prm, const struct net_rx_ops *ops, void *ctx)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), threads = prm->threads > 1 ? prm->threads : 1;
    cpus_shared = nodes_here(prm) * (threads + 1) > cpus;
    net_supervisor_start(prm->supervisor);
    if (prm->transport == NET_TRANSPORT_UCX)
        return ucx_start(prm, ops, ctx);
    return udp_start(prm, ops, ctx);
}

int udp_start(const struct net_params *prm, const struct net_rx_ops *ops, void *ctx)
{
    int rc;
    memset(&net_state, 0, sizeof net_state);
    net_state.sock.fd = prm->fd;
    net_state.svc.evfd = net_state.svc.epfd = net_state.svc.tfd = net_state.svc.timer_fd = -1; /* for err */
    pthread_mutex_init(&net_state.svc.claim_lock, NULL);
    pthread_mutex_init(&net_state.lock, NULL);
    pthread_mutex_init(&net_state.rx_lock, NULL);
    pthread_mutex_init(&net_state.tx.pool.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&net_state.svc.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (job()->nodes < 1 || job()->nodes > NET_MAX_NODES || job()->rank < 0 ||
        job()->rank >= job()->nodes) {
        rc = -EINVAL;
        goto err;
    }
    net_state.sock.job = prm->job_id;
    net_state.sock.max_payload = prm->datagram;
    net_state.tx.window = prm->window > SEQWIN_MAX ? SEQWIN_MAX : prm->window;
    net_state.tx.peer_timeout_ns = (uint64_t)(prm->peer_timeout_s * 1e9);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    net_state.svc.spin_ns = prm->spin_us < 0 ? service_spin_ns(job()->nodes, cpus)
                                             : (uint64_t)prm->spin_us * 1000;
    net_state.svc.service_core = cpus >= 2l * job()->nodes; /* nodes: all on this machine, for now */
    net_state.up.ops = *ops;
    net_state.up.ctx = ctx;
    wire_keys_init(&net_state.sock.keys, prm->key, prm->job_id, prm->auth_mac);
    inject_start(prm);
    /* A timer due less than this before the service thread wakes anyway
     * waits for that wake-up, saving a timerfd_settime: 100 µs for the
     * transport's own timers (acknowledgements, probes), but an emulated
     * link's delay (DSM_NET_DELAY_US) is kept to 5 % of it. */
    net_state.svc.late_ns = 100000;
    if (net_state.inj.decide.delay_ns && net_state.inj.decide.delay_ns / 20 < net_state.svc.late_ns)
        net_state.svc.late_ns = net_state.inj.decide.delay_ns / 20;

    /* Incast: all peers may stream to one node at once; keep what they may
     * have in flight within what its socket buffer holds. */
    int rcvbuf = 8 << 20;
    if (setsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0)
        setsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    int sndbuf = 4 << 20;
    if (setsockopt(net_state.sock.fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) < 0)
        setsockopt(net_state.sock.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (TRACE_ON)
        udp_trace_start(); /* the kernel's receive stamps, for the latency breakdown */
    socklen_t sl = sizeof rcvbuf;
    getsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &sl);
    size_t share = (size_t)rcvbuf / 2 / (size_t)(job()->nodes > 1 ? job()->nodes - 1 : 1);
    size_t floor_bytes = 2 * (sizeof(struct wire_hdr) + net_state.sock.max_payload);
    net_state.tx.window_bytes = share > floor_bytes ? share : floor_bytes;

    net_state.peers = calloc((size_t)job()->nodes, sizeof *net_state.peers);
    net_state.sock.rxbuf =
        malloc((size_t)RX_BATCH * (sizeof(struct wire_hdr) + net_state.sock.max_payload + 1));
    if (!net_state.peers || !net_state.sock.rxbuf) {
        rc = -ENOMEM;
        goto err;
    }
    /* Retransmissions to a peer that does not answer back off further in
     * a large job: at 256 nodes on 2 cores, a heartbeat retransmitted every
     * 100 ms (74 times in 10 s to one peer, measured) was itself what kept
     * nodes from answering. Heartbeats go to a node's two ring neighbours
     * only (window.c), so their interval need not grow with the job. */
    uint64_t per_node = (uint64_t)job()->nodes * 2000000ull;
    uint64_t backoff_cap = per_node < RTO_BACKOFF_MAX_NS ? RTO_BACKOFF_MAX_NS
                           : per_node > RTO_MAX_NS       ? RTO_MAX_NS
                                                         : per_node;
    net_state.tx.heartbeat_ns = 1000000000ull;
    /* Doubled retransmissions fight loss; in a large oversubscribed job
     * the losses are overload, which they would feed (256 nodes: a peer
     * declared dead after 10 s, measured with them, none without). */
    net_state.tx.redundant = job()->nodes <= 32;
    /* A peer starved of CPU is slow, not dead. Where this host runs more
     * than 16 nodes a CPU, their turns come so seldom that a live node may
     * not answer for seconds: the silence allowed grows in proportion
     * (256 nodes on 2 CPUs: 8 x DSM_PEER_TIMEOUT). A peer that answers at
     * all is never declared dead; this only bounds how long a stopped one
     * takes to be found. */
    long here = nodes_here(prm);
    long per_cpu = cpus > 0 ? here / cpus : here;
    if (per_cpu > 16)
        net_state.tx.peer_timeout_ns = net_state.tx.peer_timeout_ns / 16 * (uint64_t)per_cpu;
    /* For the same reason an answer takes longer than the loss timers'
     * floors (probe 0.3 ms, RTO 0.4 ms) where more than 4 nodes share a
     * CPU, and before a peer's first clean sample only the floor stands
     * between a message and its copy: at 256 nodes on 2 CPUs node 0 sent
     * 5.6k retransmissions (2.2k tail probes) for 2.8k messages in a
     * 2-barrier run, every one hashed, sent, dropped as a duplicate and
     * acknowledged again. The floors grow with the crowding (x 32 there). */
    net_state.tx.crowd = per_cpu > 4 ? (unsigned)(per_cpu / 4) : 1;
    /* net_finish's tree: the barrier's. */
    int k = prm->finish_fanout >= 2 ? prm->finish_fanout : 8;
    net_state.tree.parent = tree_parent(job()->rank, k);
    net_state.tree.nchildren = tree_children(job()->rank, k, job()->nodes, &net_state.tree.first_child);
    uint64_t now = clock_ns();
    for (int i = 0; i < job()->nodes; i++) {
        net_state.peers[i].addr = prm->peers[i];
        net_state.peers[i].same_host =
            prm->peers[i].sin_addr.s_addr == prm->peers[job()->rank].sin_addr.s_addr;
        net_state.peers[i].last_rx_ns = now;
        rto_init(&net_state.peers[i].tx.rto);
        net_state.peers[i].tx.rto.backoff_cap_ns = backoff_cap;
        net_state.peers[i].tx.rto.min_ns = RTO_MIN_NS * net_state.tx.crowd;
    }
    net_state.svc.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    net_state.svc.epfd = epoll_create1(EPOLL_CLOEXEC);
    net_state.svc.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    net_state.svc.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = net_state.svc.evfd};
    struct epoll_event timer = {.events = EPOLLIN, .data.fd = net_state.svc.tfd};
    struct epoll_event timer2 = {.events = EPOLLIN, .data.fd = net_state.svc.timer_fd};
    if (net_state.svc.evfd < 0 || net_state.svc.epfd < 0 || net_state.svc.tfd < 0 ||
        net_state.svc.timer_fd < 0 ||
        epoll_ctl(net_state.svc.epfd, EPOLL_CTL_ADD, net_state.svc.timer_fd, &timer2) < 0 ||
        epoll_ctl(net_state.svc.epfd, EPOLL_CTL_ADD, net_state.svc.evfd, &wake) < 0 ||
        epoll_ctl(net_state.svc.epfd, EPOLL_CTL_ADD, net_state.svc.tfd, &timer) < 0) {
        rc = -errno;
        goto err;
    }
    int index_here = 0;
    for (int i = 0; i < job()->rank; i++)
        index_here += net_state.peers[i].same_host;
    service_plan_decide(prm->service_poll, prm->threads, job()->nodes, (int)here, index_here);
    log_set_abort_hook(abort_hook);
    net_state.svc.running = true;
    int err = pthread_create(&net_state.svc.thread, NULL, service_main, NULL);
    if (err) {
        net_state.svc.running = false;
        rc = -err;
        goto err;
    }
    return 0;

err:
    /* Nothing runs yet: undo it all, in reverse. peers goes back to NULL so
     * that net_abort_peers finds nobody to tell. */
    log_set_abort_hook(NULL);
    if (net_state.svc.tfd >= 0)
        close(net_state.svc.tfd);
    if (net_state.svc.timer_fd >= 0)
        close(net_state.svc.timer_fd);
    if (net_state.svc.epfd >= 0)
        close(net_state.svc.epfd);
    if (net_state.svc.evfd >= 0)
        close(net_state.svc.evfd);
    free(net_state.sock.rxbuf);
    free(net_state.peers);
    net_state.sock.rxbuf = NULL;
    net_state.peers = NULL;
    pthread_cond_destroy(&net_state.svc.cv);
    pthread_mutex_destroy(&net_state.tx.pool.lock);
    pthread_mutex_destroy(&net_state.rx_lock);
    pthread_mutex_destroy(&net_state.lock);
    pthread_mutex_destroy(&net_state.svc.claim_lock);
    close(net_state.sock.fd); /* ours since the call, like the rest */
    net_state.sock.fd = -1;
    return rc;
}

/* Phase 1 of net_finish at this node: every child has sent FIN (its
 * subtree has finished, and everything it sent is acknowledged) and
 * everything we sent is acknowledged. */
static bool subtree_finished(void *arg)
{
    (void)arg;
    bool ok = true;
    pthread_mutex_lock(&net_state.lock);
    for (int i = 0; i < job()->nodes && ok; i++)
        ok = !net_state.peers[i].tx.head;
    for (int c = 0; c < net_state.tree.nchildren && ok; c++)
        ok = net_state.peers[net_state.tree.first_child + c].fin_rx;
    pthread_mutex_unlock(&net_state.lock);
    return ok;
}

/* Phase 2: the parent's FIN came down: every node has finished. */
static bool all_finished(void *arg)
{
    (void)arg;
    return atomic_load(&net_state.tree.all_finished);
}

/* Phase 3: our children hold the FIN we sent them. */
static bool children_hold_fin(void *arg)
{
    (void)arg;
    bool ok = true;
    pthread_mutex_lock(&net_state.lock);
    for (int c = 0; c < net_state.tree.nchildren && ok; c++)
        ok = !net_state.peers[net_state.tree.first_child + c].tx.head;
    pthread_mutex_unlock(&net_state.lock);
    return ok;
}

static bool tree_neighbour(int i)
{
    return i == net_state.tree.parent || (i >= net_state.tree.first_child &&
                                          i < net_state.tree.first_child + net_state.tree.nchildren);
}

static void udp_finish(void)
{
    if (!net_state.svc.running)
        return;
    /* Along the job's tree (base/tree.h), as the barrier gathers: once our
     * subtree has finished and everything we sent is acknowledged (so its
     * receiver holds it), a FIN goes up behind it; the root's FIN comes
     * back down, and says that every node has finished and holds all that
     * was sent to it. After that nobody needs anything from anyone but
     * re-acknowledgements, which the service thread keeps answering. One
     * FIN per node each way: a FIN to and from every peer was N^2
     * datagrams, which at 256 nodes on 2 CPUs made dsm_finish take 12-17 s
     * at node 0. */
    udp_wait(subtree_finished, NULL, 0);
    pthread_mutex_lock(&net_state.lock);
    if (net_state.tree.parent >= 0)
        window_send_marker(net_state.tree.parent, WIRE_FIN, clock_ns());
    else
        atomic_store(&net_state.tree.all_finished, true);
    pthread_mutex_unlock(&net_state.lock);
    udp_wait(all_finished, NULL, 0);
    pthread_mutex_lock(&net_state.lock);
    uint64_t now = clock_ns();
    for (int c = 0; c < net_state.tree.nchildren; c++)
        window_send_marker(net_state.tree.first_child + c, WIRE_FIN, now);
    pthread_mutex_unlock(&net_state.lock);
    udp_wait(children_hold_fin, NULL, 0);

    /* Tell our tree neighbours we are done, and linger until each has said
     * the same or has been silent long enough that it has surely stopped
     * retransmitting (RTO_MAX is far below LINGER_SILENCE): the parent may
     * still want our acknowledgement of its FIN. Other peers need nothing
     * from us: all they sent us was acknowledged before their FIN went up. */
    for (;;) {
        bool all = true;
        pthread_mutex_lock(&net_state.lock);
        now = clock_ns();
        for (int i = 0; i < job()->nodes; i++) {
            struct peer *p = &net_state.peers[i];
            if (!tree_neighbour(i) || p->done_rx)
                continue;
            if (now - p->last_rx_ns < LINGER_SILENCE_NS) {
                all = false;
                window_send_control(i, WIRE_DONE, NULL, 0);
            }
        }
        pthread_mutex_unlock(&net_state.lock);
        if (all)
            break;
        usleep(2000);
    }
    /* Answer the stragglers' DONE once more on the way out — three times:
     * a neighbour whose DONE reached us first hears ours only here, and
     * waits LINGER_SILENCE for it if it is lost (2-node runs at 30%
     * injected loss often ended seconds after their timed part). */
    pthread_mutex_lock(&net_state.lock);
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < job()->nodes; i++)
            if (tree_neighbour(i))
                window_send_control(i, WIRE_DONE, NULL, 0);
    pthread_mutex_unlock(&net_state.lock);

    atomic_store(&net_state.svc.stopping, true);
    service_kick();
    pthread_join(net_state.svc.thread, NULL);
    net_state.svc.running = false;
    log_set_abort_hook(NULL);
    close(net_state.svc.evfd);
    close(net_state.svc.epfd);
    close(net_state.svc.tfd);
    close(net_state.svc.timer_fd);
    close(net_state.sock.fd);
}
