/*
 * transport.c — reliable per-peer FIFO messages over one UDP socket.
 *
 * The state and its locks: transport.h.
 */
#include "net/transport.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
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
#include "base/stats.h"

DSM_STATE struct net net_state;

int net_rank(void) { return job()->rank; }
int net_nodes(void) { return job()->nodes; }
size_t net_datagram_payload(void) { return net_state.sock.max_payload; }

static void bump_gen(void)
{
    pthread_mutex_lock(&net_state.lock);
    net_state.svc.gen++;
    pthread_cond_broadcast(&net_state.svc.cv);
    pthread_mutex_unlock(&net_state.lock);
}

void net_notify(void) { bump_gen(); }

static void kick_service(void)
{
    uint64_t one = 1;
    if (write(net_state.svc.evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_fatal("cannot wake the service thread: %s", strerror(errno));
}

/* The upper layer's tick and the transport's timers, run by the service
 * thread each time it wakes, and by a polling waiter (run_due_timers). */
static void run_timers_and_tick(void)
{
    if (net_state.up.ops.tick)
        net_state.up.ops.tick(clock_ns());
    pthread_mutex_lock(&net_state.lock);
    atomic_store(&net_state.svc.timers_due, window_timers(clock_ns()));
    pthread_mutex_unlock(&net_state.lock);
}

/* Reads an eventfd's or timerfd's count, so that it stops being ready. */
static void drain_counter(int fd, const char *what)
{
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
        log_fatal("%s failed: %s", what, strerror(errno));
}

static void set_socket_armed(bool on)
{
    struct epoll_event e = {.events = EPOLLIN, .data.fd = net_state.sock.fd};
    if (epoll_ctl(net_state.svc.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, net_state.sock.fd, &e) < 0)
        log_fatal("cannot %s the network socket's wait: %s", on ? "arm" : "disarm", strerror(errno));
    net_state.svc.sock_armed = on;
}

/* By the service thread, before it sleeps while no claim lasts. */
static void arm_socket(void)
{
    pthread_mutex_lock(&net_state.svc.claim_lock);
    if (!net_state.svc.sock_armed && atomic_load(&net_state.svc.rx_claims) == 0)
        set_socket_armed(true);
    pthread_mutex_unlock(&net_state.svc.claim_lock);
}

/* No wake-up here. If the service thread sleeps on the socket, the socket
 * leaves its wait: otherwise the next datagram would wake it, for nothing
 * (it sees the claim and steps back), and that wake-up cost the datagram's
 * sender 60-90 µs inside its sendmmsg here, and a CPU's turn. */
static void claim_socket(void)
{
    pthread_mutex_lock(&net_state.svc.claim_lock);
    if (atomic_fetch_add(&net_state.svc.rx_claims, 1) == 0) {
        atomic_store(&net_state.svc.claimed_since, clock_ns());
        if (net_state.svc.sock_armed) {
            set_socket_armed(false);
            /* It slept on the socket, with a long timeout: have it look
             * back after LONG_WAIT_NS, as it would had the socket woken it. */
            struct itimerspec at = {.it_value = {.tv_nsec = (long)LONG_WAIT_NS}};
            if (timerfd_settime(net_state.svc.tfd, 0, &at, NULL) < 0)
                log_fatal("cannot set the service thread's timer: %s", strerror(errno));
        }
    }
    pthread_mutex_unlock(&net_state.svc.claim_lock);
}

/* The service thread reads the socket only while no application thread
 * does: two readers would both be woken by every datagram, and the loser's
 * wake-up and lock hand-off cost a cross-CPU wake (tens of µs here) on the
 * path of every message. While a claim lasts, the claimant also runs the
 * timers (net_wait), and we sleep.
 *
 * A claim takes the socket out of our wait (claim_socket), so that its
 * datagrams do not wake us only to find it claimed; we put it back when we
 * next go to sleep with no claim. A claim may end without waking us (see
 * release_socket), so we look back after a while. Each look-back that
 * finds a claim again doubles the interval to the next, up to
 * LOOKBACK_MAX_NS: while the program waits again and again (a run of lock
 * transfers, faults, calls) or long (a barrier), we keep out of its way,
 * since each of our wake-ups costs it tens of µs when the CPUs are all
 * busy: 2 nodes passing a lock spent a quarter of their time in them.
 * The interval starts again from LONG_WAIT_NS when we have datagrams to
 * read ourselves or are woken. The price: a request that reaches a node
 * whose program has just stopped waiting and computes now waits for the
 * next look-back. */
static void *service_main(void *arg)
{
    (void)arg;
    uint64_t lookback = LONG_WAIT_NS;
    bool looked = false;
    while (!atomic_load(&net_state.svc.stopping)) {
        uint64_t now = clock_ns();
        uint64_t due = atomic_load(&net_state.svc.timers_due);
        uint64_t wait_ns = due > now ? due - now : 0;
        bool on_socket = atomic_load(&net_state.svc.rx_claims) == 0;
        if (!on_socket) {
            wait_ns = (uint64_t)IDLE_WAKE_MS * 1000000;
            uint64_t since = atomic_load(&net_state.svc.claimed_since);
            /* A long wait wakes us when it ends if we have a core of our
             * own; then we sleep on. */
            if (!net_state.svc.service_core || now - since < LONG_WAIT_NS) {
                if (looked && lookback < LOOKBACK_MAX_NS)
                    lookback *= 2;
                looked = true;
                uint64_t w = since + lookback > now ? since + lookback - now : lookback;
                if (wait_ns > w)
                    wait_ns = w;
            }
        }
        struct timespec timeout = {.tv_sec = (time_t)(wait_ns / 1000000000ull),
                                   .tv_nsec = (long)(wait_ns % 1000000000ull)};
        if (on_socket)
            arm_socket();
        struct epoll_event ev[3];
        int r = epoll_pwait2(net_state.svc.epfd, ev, 3, &timeout, NULL);
        if (r < 0 && errno != EINTR)
            log_fatal("waiting on the network socket failed: %s", strerror(errno));
        bool woken = false, readable = false;
        for (int i = 0; i < r; i++) {
            woken |= ev[i].data.fd == net_state.svc.evfd;
            readable |= ev[i].data.fd == net_state.sock.fd; /* an error too: the read reports it */
            if (ev[i].data.fd == net_state.svc.tfd)
                drain_counter(net_state.svc.tfd, "service timer");
        }
        if (woken)
            drain_counter(net_state.svc.evfd, "service wake-up channel");
        int n = 0;
        if (readable && atomic_load(&net_state.svc.rx_claims) == 0 &&
            pthread_mutex_trylock(&net_state.rx_lock) == 0) {
            n = recv_progress();
            pthread_mutex_unlock(&net_state.rx_lock);
        }
        if (woken || n) {
            lookback = LONG_WAIT_NS;
            looked = false;
        }
        run_timers_and_tick();
        if (n)
            bump_gen();
    }
    return NULL;
}

/* Done by a waiter that polls the socket when the timers are due: while a
 * claim lasts the service thread sleeps, and waking it for timers would
 * cost a waiter tens of µs when the CPUs are shared. */
static void run_due_timers(uint64_t now)
{
    if (now >= atomic_load(&net_state.svc.timers_due))
        run_timers_and_tick();
}

/* The service thread must take the socket back at once when the caller is
 * about to sleep until it delivers (`blocking`). When the wait was long (a
 * barrier, a contended lock), the program will likely compute now, and
 * other nodes' requests should not wait for the look-back: we wake the
 * service thread if it has a core to spare, where the wake-up costs the
 * program nothing. Where it has none, its wake-up would take a CPU from a
 * program, and the look-back suffices: with 8 nodes on 2 cores, waking it
 * after every barrier made a barrier cost 470 µs instead of 105, and Ocean
 * on 2 nodes run 1.6 times as long. After a short wait — a fault, a call,
 * a ping-pong, which come in runs — the look-back always suffices, and the
 * waiter's path stays free of a cross-CPU wake-up. */
static void release_socket(bool blocking)
{
    if (atomic_fetch_sub(&net_state.svc.rx_claims, 1) == 1 &&
        (blocking ||
         (net_state.svc.service_core && clock_ns() - atomic_load(&net_state.svc.claimed_since) > LONG_WAIT_NS)))
        kick_service();
}

int net_wait(bool (*done)(void *), void *arg, uint64_t deadline)
{
    if (recv_in_delivery || udp_cork.on)
        log_fatal("internal error: a wait on the network while sends are held back");
    uint64_t spin_until = 0;
    bool claimed = false;
    int rc = 0;
    for (;;) {
        pthread_mutex_lock(&net_state.lock);
        uint64_t g = net_state.svc.gen;
        pthread_mutex_unlock(&net_state.lock);
        if (done(arg))
            break;
        uint64_t now = clock_ns();
        if (deadline && now >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }

        /* Poll the socket ourselves for a while: a message for us is then
         * handled without waking another thread. */
        if (net_state.svc.spin_ns && (spin_until == 0 || now < spin_until)) {
            if (!spin_until) {
                spin_until = now + (uint64_t)net_state.svc.spin_ns;
                claim_socket();
                claimed = true;
            }
            if (pthread_mutex_trylock(&net_state.rx_lock) == 0) {
                int n = recv_progress();
                pthread_mutex_unlock(&net_state.rx_lock);
                if (n) {
                    bump_gen();
                    continue;
                }
            }
            run_due_timers(now);
            sched_yield(); /* lets a co-located node run when cores are shared */
            continue;
        }
        if (claimed) {
            release_socket(true);
            claimed = false;
        }

        uint64_t wake = now + 20ull * 1000000;
        if (deadline && deadline < wake)
            wake = deadline;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t rel = wake - now;
        ts.tv_sec += (time_t)(rel / 1000000000ull);
        ts.tv_nsec += (long)(rel % 1000000000ull);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&net_state.lock);
        if (net_state.svc.gen == g)
            pthread_cond_timedwait(&net_state.svc.cv, &net_state.lock, &ts);
        pthread_mutex_unlock(&net_state.lock);
    }
    if (claimed)
        release_socket(false);
    return rc;
}

/* ---- start, finish, abort --------------------------------------------- */

static void abort_hook(const char *reason)
{
    net_abort_peers(reason);
}

void net_abort_peers(const char *reason)
{
    if (!net_state.peers)
        return;
    /* Best effort and lock-free: the caller may hold net_state.lock. */
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < job()->nodes; i++)
            if (i != job()->rank)
                window_send_control(i, WIRE_ABORT, reason, strlen(reason));
}

/* How long a waiting thread polls before it sleeps. A polling waiter also
 * serves the requests that reach its node, at a few µs instead of the tens
 * of µs a sleeping thread's wake-up costs here — paid twice, in fact: the
 * sender's sendto wakes the sleeper, then the sleeper takes its time. With a
 * core per node the waiter never stops polling (its core is idle anyway).
 * With more nodes than cores it yields between polls, so that the node
 * that must answer gets the CPU, and sleeps after 5 ms: a wake-up then
 * costs a few per cent of the wait, and the yields no longer take turns
 * from nodes that compute. (nodes counts the whole job, all on this
 * machine for now.) Measured on 2 cores: 2 nodes, remote read fault with
 * the home in a barrier, 44 µs (50 µs budget) -> 14 µs; 8 nodes, barrier,
 * 470 µs after 200 µs of polling -> 130 µs after 5 ms. */
static uint64_t auto_spin_ns(int nodes, long cpus)
{
    if (cpus > 0 && nodes <= cpus)
        return 10ull * 1000 * 1000 * 1000; /* the core is ours: never pay a wake-up */
    return 5ull * 1000 * 1000;
}

int net_start(const struct net_params *prm, const struct net_rx_ops *ops, void *ctx)
{
    if (job()->nodes < 1 || job()->nodes > NET_MAX_NODES || job()->rank < 0 || job()->rank >= job()->nodes)
        return -EINVAL;
    memset(&net_state, 0, sizeof net_state);
    net_state.sock.fd = prm->fd;
    net_state.sock.job = prm->job_id;
    net_state.sock.max_payload = prm->datagram;
    net_state.tx.window = prm->window > SEQWIN_MAX ? SEQWIN_MAX : prm->window;
    net_state.tx.peer_timeout_ns = (uint64_t)(prm->peer_timeout_s * 1e9);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    net_state.svc.spin_ns = prm->spin_us < 0 ? auto_spin_ns(job()->nodes, cpus) : (uint64_t)prm->spin_us * 1000;
    net_state.svc.service_core = cpus >= 2l * job()->nodes; /* nodes: all on this machine, for now */
    net_state.up.ops = *ops;
    net_state.up.ctx = ctx;
    wire_keys_init(&net_state.sock.keys, prm->key, prm->job_id, prm->auth_mac);
    inject_start(prm);

    /* Incast: all peers may stream to one node at once; keep what they may
     * have in flight within what its socket buffer holds. */
    int rcvbuf = 8 << 20;
    if (setsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0)
        setsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    int sndbuf = 4 << 20;
    if (setsockopt(net_state.sock.fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) < 0)
        setsockopt(net_state.sock.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    socklen_t sl = sizeof rcvbuf;
    getsockopt(net_state.sock.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &sl);
    size_t share = (size_t)rcvbuf / 2 / (size_t)(job()->nodes > 1 ? job()->nodes - 1 : 1);
    size_t floor_bytes = 2 * (sizeof(struct wire_hdr) + net_state.sock.max_payload);
    net_state.tx.window_bytes = share > floor_bytes ? share : floor_bytes;

    net_state.peers = calloc((size_t)job()->nodes, sizeof *net_state.peers);
    net_state.sock.rxbuf = malloc((size_t)RX_BATCH * (sizeof(struct wire_hdr) + net_state.sock.max_payload + 1));
    if (!net_state.peers || !net_state.sock.rxbuf)
        return -ENOMEM;
    uint64_t now = clock_ns();
    for (int i = 0; i < job()->nodes; i++) {
        net_state.peers[i].addr = prm->peers[i];
        net_state.peers[i].last_rx_ns = now;
        rto_init(&net_state.peers[i].tx.rto);
    }
    net_state.svc.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (net_state.svc.evfd < 0)
        return -errno;
    net_state.svc.epfd = epoll_create1(EPOLL_CLOEXEC);
    net_state.svc.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event wake = {.events = EPOLLIN, .data.fd = net_state.svc.evfd};
    struct epoll_event timer = {.events = EPOLLIN, .data.fd = net_state.svc.tfd};
    if (net_state.svc.epfd < 0 || net_state.svc.tfd < 0 || epoll_ctl(net_state.svc.epfd, EPOLL_CTL_ADD, net_state.svc.evfd, &wake) < 0 ||
        epoll_ctl(net_state.svc.epfd, EPOLL_CTL_ADD, net_state.svc.tfd, &timer) < 0)
        return -errno;
    pthread_mutex_init(&net_state.svc.claim_lock, NULL);
    pthread_mutex_init(&net_state.lock, NULL);
    pthread_mutex_init(&net_state.rx_lock, NULL);
    pthread_mutex_init(&net_state.tx.pool.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&net_state.svc.cv, &ca);
    pthread_condattr_destroy(&ca);
    log_set_abort_hook(abort_hook);
    net_state.svc.running = true;
    int err = pthread_create(&net_state.svc.thread, NULL, service_main, NULL);
    if (err) {
        net_state.svc.running = false;
        return -err;
    }
    return 0;
}

static bool all_finished(void *arg)
{
    (void)arg;
    bool ok = true;
    pthread_mutex_lock(&net_state.lock);
    for (int i = 0; i < job()->nodes && ok; i++)
        if (net_state.peers[i].tx.head || (i != job()->rank && !net_state.peers[i].fin_rx))
            ok = false;
    pthread_mutex_unlock(&net_state.lock);
    return ok;
}

void net_finish(void)
{
    if (!net_state.svc.running)
        return;
    /* Phase 1: FIN behind everything we sent; wait for every peer's FIN
     * (so we hold all it sent us) and every acknowledgement of ours (so it
     * holds all we sent). After that nobody needs anything from us but
     * re-acknowledgements, which the service thread keeps answering. */
    pthread_mutex_lock(&net_state.lock);
    uint64_t now = clock_ns();
    for (int i = 0; i < job()->nodes; i++)
        if (i != job()->rank)
            window_send_marker(i, WIRE_FIN, now);
    pthread_mutex_unlock(&net_state.lock);
    net_wait(all_finished, NULL, 0);

    /* Phase 2: tell everyone we are done, and linger until every peer has
     * said the same or has been silent long enough that it has surely
     * stopped retransmitting (RTO_MAX is far below LINGER_SILENCE). */
    for (;;) {
        bool all = true;
        pthread_mutex_lock(&net_state.lock);
        now = clock_ns();
        for (int i = 0; i < job()->nodes; i++) {
            struct peer *p = &net_state.peers[i];
            if (i == job()->rank || p->done_rx)
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
    /* Answer the stragglers' DONE once more on the way out. */
    pthread_mutex_lock(&net_state.lock);
    for (int i = 0; i < job()->nodes; i++)
        if (i != job()->rank)
            window_send_control(i, WIRE_DONE, NULL, 0);
    pthread_mutex_unlock(&net_state.lock);

    atomic_store(&net_state.svc.stopping, true);
    kick_service();
    pthread_join(net_state.svc.thread, NULL);
    net_state.svc.running = false;
    log_set_abort_hook(NULL);
    close(net_state.svc.evfd);
    close(net_state.svc.epfd);
    close(net_state.svc.tfd);
    close(net_state.sock.fd);
}
