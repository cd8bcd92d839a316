/*
 * service.c — who drives the transport: the service thread, and
 * application threads that poll the socket while they wait (net_wait).
 *
 * Progress needs a thread to read the socket, deliver, and run the timers.
 * A waiting application thread does it itself for a while (it is awake
 * anyway, and a message for it is then handled without waking anyone);
 * meanwhile it holds a claim on the socket and the service thread keeps out
 * of its way. Otherwise the service thread does, sleeping on the socket.
 * On this machine a cross-CPU wake-up costs tens of µs, so most of what
 * follows is about who is woken, when, and why not more often.
 */
#include "net/transport.h"
#include "net/ucx.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"

#define LONG_WAIT_NS      (200ull * 1000)  /* a wait this long hands the socket back at once */
#define LOOKBACK_MAX_NS   (16 * LONG_WAIT_NS) /* see service_main */
#define HELD_SPIN_NS      (50ull * 1000)   /* see udp_wait */

DSM_STATE struct service_plan service_plan = {.cpu = -1};

/* A node with more CPUs than application threads (a cluster node that runs
 * one process of 2 threads on 16 cores, say) has a CPU on which its
 * service thread can poll: a request then waits for nobody's wake-up,
 * which on this VM costs 24-150 us, and no look-back delays it when the
 * program computes. Its CPU is the last of the node's share of the
 * affinity mask (nodes on one host take consecutive shares), the one
 * OpenMP's places and the scheduler fill last. Without a CPU to spare, a
 * polling service thread would take turns from the program: auto then
 * sleeps; `on` polls anyway, yielding between polls, unpinned. */
struct service_plan service_plan_make(const int *cpus, int ncpus, int setting, int threads,
                                      int nodes, int nodes_here, int index_here)
{
    if (nodes_here < 1)
        nodes_here = 1;
    if (index_here < 0 || index_here >= nodes_here)
        index_here = 0;
    int share = ncpus / nodes_here;
    /* A job of one node has nobody to serve: its CPUs are others' to use. */
    bool spare = nodes > 1 && share > (threads > 0 ? threads : 1);
    struct service_plan p = {.node_cpus = share, .cpu = -1};
    p.polls = setting == NET_SERVICE_POLL_ON || (setting == NET_SERVICE_POLL_AUTO && spare);
    if (p.polls && spare)
        p.cpu = cpus[index_here * share + share - 1];
    return p;
}

void service_plan_decide(int setting, int threads, int nodes, int nodes_here, int index_here)
{
    int cpus[CPU_SETSIZE];
    cpu_set_t set;
    int n = 0;
    CPU_ZERO(&set);
    /* The system calls themselves: a program linked statically with dsmcc
     * wraps the C library's, which report the job's CPUs, not this host's. */
    if (syscall(SYS_sched_getaffinity, 0, sizeof set, &set) > 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    service_plan = service_plan_make(cpus, n, setting, threads, nodes, nodes_here, index_here);
    stats_set(STAT_SVC_POLLING, service_plan.polls ? 1 : 0);
    /* For the report's line on CPUs shared by the nodes (report.c). */
    stats_set(STAT_HOST_CPUS, (uint64_t)n);
    stats_set(STAT_HOST_NODES, (uint64_t)(nodes_here > 0 ? nodes_here : 1));
}

void service_pin(void)
{
    if (service_plan.cpu < 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(service_plan.cpu, &one);
    if (syscall(SYS_sched_setaffinity, 0, sizeof one, &one) < 0) /* it polls unpinned: still right */
        log_warn("cannot pin the service thread to CPU %d: %s", service_plan.cpu, strerror(errno));
}

/* A yield, even on a CPU of its own: a poll is a system call anyway (the
 * socket's read), the yield costs about as much when nothing else waits for
 * the CPU, and when something does — another job's node pinned to the same
 * CPU (every job's node 0 picks the same one), a test run beside it — it
 * gets its turn at once instead of after a time slice. */
void service_poll_pause(void)
{
    sched_yield();
}

static void bump_gen(void);
static void run_timers_and_tick(void);

/* The service thread with a CPU of its own: reads the socket whenever no
 * waiter does, runs the timers when due (and the upper layer's tick at
 * least every IDLE_WAKE_MS), and never sleeps. */
static void *service_poll_main(void)
{
    uint64_t next_tick = 0;
    while (!atomic_load(&net_state.svc.stopping)) {
        int n = 0;
        if (atomic_load(&net_state.svc.rx_claims) == 0 && pthread_mutex_trylock(&net_state.rx_lock) == 0) {
            n = recv_progress();
            pthread_mutex_unlock(&net_state.rx_lock);
        }
        uint64_t now = clock_ns();
        if (now >= atomic_load(&net_state.svc.timers_due) || now >= next_tick) {
            run_timers_and_tick();
            next_tick = now + (uint64_t)IDLE_WAKE_MS * 1000000;
        }
        if (n)
            bump_gen();
        else
            service_poll_pause();
    }
    return NULL;
}

/* Tells the waiters (net_wait) to look again at what they wait for. */
static void bump_gen(void)
{
    pthread_mutex_lock(&net_state.lock);
    net_state.svc.gen++;
    pthread_cond_broadcast(&net_state.svc.cv);
    pthread_mutex_unlock(&net_state.lock);
}

void udp_notify(void) { bump_gen(); }

void service_kick(void)
{
    uint64_t one = 1;
    if (write(net_state.svc.evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_fatal("cannot wake the service thread: %s", strerror(errno));
}

/* A loss must cost a round trip or two, not the service thread's idle
 * sleep (NET_TICK_MS): when data goes out, or an acknowledgement is
 * delayed, while no waiter polls, the service thread's sleep is cut to
 * when the timer is due. Only then: a waiter runs the timers itself, and a
 * timer set for nothing (the acknowledgement came first) costs a wake-up. */
void service_timer_at(uint64_t t)
{
    uint64_t due = atomic_load_explicit(&net_state.svc.timers_due, memory_order_relaxed);
    while (t < due && !atomic_compare_exchange_weak(&net_state.svc.timers_due, &due, t))
        ;
    uint64_t until = atomic_load(&net_state.svc.sleep_until);
    if (atomic_load(&net_state.svc.rx_claims) || t + net_state.svc.late_ns >= until)
        return;
    if (!atomic_compare_exchange_strong(&net_state.svc.sleep_until, &until, t))
        return; /* it woke, or another thread set an earlier time */
    struct itimerspec at = {.it_value = {.tv_sec = (time_t)(t / 1000000000ull),
                                         .tv_nsec = (long)(t % 1000000000ull)}};
    if (timerfd_settime(net_state.svc.timer_fd, TFD_TIMER_ABSTIME, &at, NULL) < 0)
        log_fatal("cannot set the service thread's timer: %s", strerror(errno));
    atomic_store(&net_state.svc.timer_set, t);
}

/* A claim began: the claimant runs the timers now (net_wait), so a timer
 * set for the service thread would only wake it for nothing, and on a
 * machine whose CPUs the nodes' threads all hold, that wake-up lands on
 * one of them (60-90 µs here, measured on the emulated link's
 * datagrams). Done for the emulated link (DSM_NET_DELAY_US) alone, whose
 * held datagrams set the timer whenever a claim ends before they are due
 * (release_socket). The thread's sleep goes back to the end it chose;
 * release_socket sets the timer again for what is still due. Caller
 * holds claim_lock. */
static void unset_timer(void)
{
    if (!net_state.inj.decide.delay_ns || !atomic_exchange(&net_state.svc.timer_set, 0))
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    if (timerfd_settime(net_state.svc.timer_fd, 0, &off, NULL) < 0)
        log_fatal("cannot unset the service thread's timer: %s", strerror(errno));
    uint64_t until = atomic_load(&net_state.svc.sleep_until);
    if (until)
        atomic_compare_exchange_strong(&net_state.svc.sleep_until, &until,
                                       atomic_load(&net_state.svc.sleep_planned));
}

/* The upper layer's tick and the transport's timers, run by the service
 * thread each time it wakes, and by a polling waiter (run_due_timers). */
static void run_timers_and_tick(void)
{
    atomic_store(&net_state.svc.upper_due, 0);
    uint64_t up = net_state.up.ops.tick ? net_state.up.ops.tick(clock_ns()) : 0;
    pthread_mutex_lock(&net_state.lock);
    atomic_store(&net_state.svc.timers_due, window_timers(clock_ns()));
    pthread_mutex_unlock(&net_state.lock);
    /* After the store, which would undo it; a net_timer_at that came after
     * the tick had looked, and whose own lowering the store undid, is in
     * upper_due. */
    uint64_t late = atomic_load(&net_state.svc.upper_due);
    if (late && (!up || late < up))
        up = late;
    if (up)
        service_timer_at(up);
}

void udp_timer_at(uint64_t t)
{
    uint64_t cur = atomic_load(&net_state.svc.upper_due);
    while ((!cur || t < cur) && !atomic_compare_exchange_weak(&net_state.svc.upper_due, &cur, t))
        ;
    service_timer_at(t);
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
        unset_timer();
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
void *service_main(void *arg)
{
    (void)arg;
    smp_internal_thread(); /* the program's signals go to its threads */
    service_pin();
    /* An emulated link (DSM_NET_DELAY_US) has its held datagrams
     * delivered from here when due and no waiter polls: the kernel's
     * default slack of 50 µs on this thread's timed sleeps would add to
     * every one of them. */
    if (net_state.inj.decide.delay_ns)
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (service_plan.polls)
        return service_poll_main();
    uint64_t lookback = LONG_WAIT_NS;
    bool looked = false;
    while (!atomic_load(&net_state.svc.stopping)) {
        uint64_t now = clock_ns();
        /* An emulated link's held datagrams are not among the timers
         * (inject_hold): the first one's due time is read here. */
        uint64_t due = atomic_load(&net_state.svc.timers_due);
        uint64_t held = inject_due();
        if (held && held < due)
            due = held;
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
        uint64_t planned = clock_ns() + wait_ns;
        atomic_store(&net_state.svc.sleep_planned, planned);
        atomic_store(&net_state.svc.sleep_until, planned);
        struct epoll_event ev[4];
        int r = epoll_pwait2(net_state.svc.epfd, ev, 4, &timeout, NULL);
        atomic_store(&net_state.svc.sleep_until, 0);
        if (r < 0 && errno != EINTR)
            log_fatal("waiting on the network socket failed: %s", strerror(errno));
        bool woken = false, readable = false;
        for (int i = 0; i < r; i++) {
            woken |= ev[i].data.fd == net_state.svc.evfd;
            readable |= ev[i].data.fd == net_state.sock.fd; /* an error too: the read reports it */
            if (ev[i].data.fd == net_state.svc.tfd)
                drain_counter(net_state.svc.tfd, "service timer");
            if (ev[i].data.fd == net_state.svc.timer_fd) {
                drain_counter(net_state.svc.timer_fd, "service timer");
                atomic_store(&net_state.svc.timer_set, 0);
            }
        }
        if (woken)
            drain_counter(net_state.svc.evfd, "service wake-up channel");
        /* Slept on the socket, which stayed armed (a claim would have
         * disarmed it) and quiet: nothing waits unread. */
        if (on_socket && !readable && r >= 0) {
            pthread_mutex_lock(&net_state.svc.claim_lock);
            if (net_state.svc.sock_armed)
                atomic_store_explicit(&net_state.sock.drained_ns, clock_ns(), memory_order_relaxed);
            pthread_mutex_unlock(&net_state.svc.claim_lock);
        }
        int n = 0;
        held = inject_due();
        bool held_due = held && held <= clock_ns();
        if ((readable || held_due) && atomic_load(&net_state.svc.rx_claims) == 0 &&
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
    if (atomic_fetch_sub(&net_state.svc.rx_claims, 1) != 1 || service_plan.polls)
        return; /* a polling service thread reads the socket again by itself */
    if (blocking ||
        (net_state.svc.service_core && clock_ns() - atomic_load(&net_state.svc.claimed_since) > LONG_WAIT_NS))
        service_kick();
    else {
        uint64_t t = UINT64_MAX;
        if (atomic_load(&net_state.svc.inflight_peers)) /* its probe must not wait */
            t = atomic_load(&net_state.svc.timers_due);
        uint64_t held = inject_due(); /* nor what the emulated link holds (unset_timer) */
        if (held && held < t)
            t = held;
        if (t != UINT64_MAX)
            service_timer_at(t);
    }
}

int udp_wait(bool (*done)(void *), void *arg, uint64_t deadline)
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
         * handled without waking another thread. Not while another thread
         * runs in the run slot this one gave up (base/smp.h): the CPU is
         * that thread's. */
        if (net_state.svc.spin_ns && smp_may_spin() && (spin_until == 0 || now < spin_until)) {
            if (!spin_until) {
                spin_until = now + (uint64_t)net_state.svc.spin_ns;
                claim_socket();
                claimed = true;
            }
            bool polled = false;
            if (pthread_mutex_trylock(&net_state.rx_lock) == 0) {
                int n = recv_progress();
                pthread_mutex_unlock(&net_state.rx_lock);
                if (n) {
                    bump_gen();
                    continue;
                }
                polled = true;
            }
            run_due_timers(now);
            /* A datagram an emulated link holds and is due shortly is
             * waited for here, not across a yield: on a loaded machine a
             * yield may give the CPU away for tens of µs, every one of
             * them added to the delay. Bounded, so that a co-located node
             * still gets its turn. */
            uint64_t held = inject_due();
            if (polled && held && held < now + HELD_SPIN_NS)
                continue;
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
uint64_t service_spin_ns(int nodes, long cpus)
{
    if (cpus > 0 && nodes <= cpus)
        return 10ull * 1000 * 1000 * 1000; /* the core is ours: never pay a wake-up */
    return 5ull * 1000 * 1000;
}
