/*
 * ucx_service.c — who progresses the UCX worker, and when: the service
 * thread, or a waiter in net_wait (ucx_wait) that polls it itself; and
 * the timers either of them runs (the upper layer's tick, heartbeats, the
 * silence check). What one round of progress does is ucx_frame.c's
 * (ucx_progress).
 *
 * Threads, as in the UDP transport (service.c): one thread at a time
 * progresses the worker and delivers (rx_lock) — the service thread, or
 * an application thread polling inside net_wait, which then keeps the
 * service thread off. The service thread sleeps on the worker's event fd
 * (ucp_worker_get_efd, armed with ucp_worker_arm), so an idle node costs
 * no CPU. The worker is UCS_THREAD_MODE_SERIALIZED: every call into UCP
 * holds `ucp`.
 */
#include "net/ucx_state.h"

#ifdef DSM_HAVE_UCX

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "net/transport.h" /* service_plan */

#define LONG_WAIT_NS     (200ull * 1000)     /* as service.c */
#define LOOKBACK_MAX_NS  (16 * LONG_WAIT_NS)
#define SEND_RETRY_NS    (50ull * 1000)     /* sends queued, nothing moved: look again after */

/* ---- waiting ----------------------------------------------------------- */

static void bump_gen(void)
{
    pthread_mutex_lock(&ucx.lock);
    ucx.gen++;
    pthread_cond_broadcast(&ucx.cv);
    pthread_mutex_unlock(&ucx.lock);
}

void ucx_notify(void) { bump_gen(); }

void ucx_kick(void)
{
    if (service_plan.polls) /* it is awake, and reads the worker by itself */
        return;
    uint64_t one = 1;
    if (write(ucx.evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_fatal("cannot wake the service thread: %s", strerror(errno));
}

void ucx_timer_at(uint64_t t)
{
    uint64_t cur = atomic_load(&ucx.upper_due);
    while ((!cur || t < cur) && !atomic_compare_exchange_weak(&ucx.upper_due, &cur, t))
        ;
    /* The service thread sleeps until timers_due at most: wake it only
     * when that comes too late. */
    bool lowered = false;
    cur = atomic_load(&ucx.timers_due);
    while (t < cur && !(lowered = atomic_compare_exchange_weak(&ucx.timers_due, &cur, t)))
        ;
    if (lowered && !ucx_in_delivery && !atomic_load(&ucx.rx_claims))
        ucx_kick();
}

/* The upper layer's tick, heartbeats, and the silence check. By the
 * service thread every time it wakes, by a polling waiter when due. */
static void run_timers(void)
{
    if (pthread_mutex_trylock(&ucx.timer_lock))
        return;
    uint64_t now = clock_ns();
    atomic_store(&ucx.upper_due, 0);
    uint64_t up = ucx.ops.tick ? ucx.ops.tick(now) : 0;
    uint64_t late = atomic_load(&ucx.upper_due);
    if (late && (!up || late < up))
        up = late;
    uint64_t next = now + (uint64_t)NET_TICK_MS * 1000000;
    if (up && up < next)
        next = up;
    if (ucx.nodes > 1 && !atomic_load(&ucx.all_finished) && now >= ucx.next_beat) {
        ucx.next_beat = now + ucx.heartbeat_ns / 2;
        int ring[2] = {(ucx.rank + 1) % ucx.nodes, (ucx.rank + ucx.nodes - 1) % ucx.nodes};
        for (int i = 0; i < 2; i++) {
            struct ucx_peer *p = &ucx.peers[ring[i]];
            if (i == 1 && ring[1] == ring[0])
                break;
            pthread_mutex_lock(&ucx.ucp);
            bool quiet = now - p->last_tx_ns >= ucx.heartbeat_ns;
            pthread_mutex_unlock(&ucx.ucp);
            if (quiet)
                ucx_send_kind(ring[i], UCX_NOP, NULL, 0, NULL, 0);
            uint64_t seen = atomic_load_explicit(&p->last_rx_ns, memory_order_relaxed);
            uint64_t drained = atomic_load_explicit(&ucx.drained_ns, memory_order_relaxed);
            const char *why;
            if (!atomic_load(&ucx.fin_sent) && drained > seen &&
                net_peer_dead(ring[i], p->same_host, drained - seen, ucx.peer_timeout_ns, now, &why))
                ucx_end_naming(ring[i], "peer %d silent for %.1f s (no message over UCX%s%s); ending the job",
                               ring[i], (double)(now - seen) / 1e9, why ? "; " : "", why ? why : "");
        }
    }
    atomic_store(&ucx.timers_due, next);
    pthread_mutex_unlock(&ucx.timer_lock);
}

/* By the service thread, about to sleep on the worker's event fd (armed
 * with ucp_worker_arm): the fd joins its wait unless a waiter has claimed
 * the worker meanwhile. One shot: a waiter's progress may leave the fd
 * ready; it wakes us once, not again and again. */
static bool arm_efd(void)
{
    pthread_mutex_lock(&ucx.claim_lock);
    bool arm = atomic_load(&ucx.rx_claims) == 0;
    if (arm) {
        struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = ucx.efd};
        if (epoll_ctl(ucx.epfd, EPOLL_CTL_MOD, ucx.efd, &e) < 0)
            log_fatal("cannot wait on the UCX worker: %s", strerror(errno));
        ucx.efd_armed = true;
    }
    pthread_mutex_unlock(&ucx.claim_lock);
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
    pthread_mutex_lock(&ucx.claim_lock);
    if (atomic_fetch_add(&ucx.rx_claims, 1) == 0 && ucx.efd_armed) {
        struct epoll_event off = {.events = 0, .data.fd = ucx.efd};
        if (epoll_ctl(ucx.epfd, EPOLL_CTL_MOD, ucx.efd, &off) < 0)
            log_fatal("cannot take the UCX worker out of the service thread's wait: %s", strerror(errno));
        ucx.efd_armed = false;
        struct itimerspec at = {.it_value = {.tv_nsec = (long)LONG_WAIT_NS}};
        if (timerfd_settime(ucx.tfd, 0, &at, NULL) < 0)
            log_fatal("cannot set the service thread's timer: %s", strerror(errno));
    }
    pthread_mutex_unlock(&ucx.claim_lock);
}

/* The service thread: progresses the worker while no waiter does, and
 * otherwise sleeps on the worker's event fd (armed) and its wake-up
 * channel. While a waiter polls, it sleeps on the channel alone and looks
 * back after a while, as UDP's does (service.c), backing off. */
void *ucx_service_main(void *arg)
{
    (void)arg;
    smp_internal_thread(); /* the program's signals go to its threads */
    service_pin();
    while (service_plan.polls && !atomic_load(&ucx.stopping)) { /* a CPU of its own */
        int n = 0;
        if (atomic_load(&ucx.rx_claims) == 0 && pthread_mutex_trylock(&ucx.rx_lock) == 0) {
            n = ucx_progress();
            pthread_mutex_unlock(&ucx.rx_lock);
        }
        if (n)
            bump_gen();
        if (clock_ns() >= atomic_load(&ucx.timers_due))
            run_timers();
        if (!n)
            service_poll_pause();
    }
    uint64_t lookback = LONG_WAIT_NS;
    while (!atomic_load(&ucx.stopping)) {
        bool on_efd = false;
        if (atomic_load(&ucx.rx_claims) == 0 && pthread_mutex_trylock(&ucx.rx_lock) == 0) {
            int n = ucx_progress();
            ucs_status_t st = UCS_OK;
            if (!n && atomic_load(&ucx.sends) == 0) {
                pthread_mutex_lock(&ucx.ucp);
                st = ucx_lib.worker_arm(ucx.worker);
                pthread_mutex_unlock(&ucx.ucp);
            }
            pthread_mutex_unlock(&ucx.rx_lock);
            if (n) {
                bump_gen();
                lookback = LONG_WAIT_NS;
            }
            if (clock_ns() >= atomic_load(&ucx.timers_due))
                run_timers();
            if (n || st == UCS_ERR_BUSY)
                continue;
            /* Sends still queued and nothing moved (a receiver's queue
             * full, a stopped peer): look again shortly, without
             * spinning on a CPU the program needs. */
            if (atomic_load(&ucx.sends))
                goto sleep;
            if (st != UCS_OK)
                log_fatal("cannot arm the UCX worker's event: %s", ucx_status_string(st));
            on_efd = arm_efd();
        }
    sleep:;
        uint64_t now = clock_ns(), due = atomic_load(&ucx.timers_due);
        uint64_t wait_ns = due > now ? due - now : 0;
        if (!on_efd && atomic_load(&ucx.rx_claims) == 0) {
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
        int r = epoll_pwait2(ucx.epfd, ev, 3, &ts, NULL);
        if (r < 0 && errno != EINTR)
            log_fatal("waiting on the UCX worker failed: %s", strerror(errno));
        for (int i = 0; i < r; i++) {
            uint64_t v;
            if (ev[i].data.fd == ucx.evfd) {
                if (read(ucx.evfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_fatal("service wake-up channel failed: %s", strerror(errno));
                lookback = LONG_WAIT_NS;
            } else if (ev[i].data.fd == ucx.tfd) {
                if (read(ucx.tfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    log_fatal("service look-back timer failed: %s", strerror(errno));
            } else if (ev[i].data.fd == ucx.efd) {
                pthread_mutex_lock(&ucx.claim_lock); /* one shot: it fired, so it is off */
                ucx.efd_armed = false;
                pthread_mutex_unlock(&ucx.claim_lock);
            }
        }
        if (clock_ns() >= atomic_load(&ucx.timers_due))
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
        pthread_mutex_lock(&ucx.lock);
        uint64_t g = ucx.gen;
        pthread_mutex_unlock(&ucx.lock);
        if (done(arg))
            break;
        uint64_t now = clock_ns();
        if (deadline && now >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        if (ucx.spin_ns && smp_may_spin() && (spin_until == 0 || now < spin_until)) {
            if (!spin_until) {
                spin_until = now + ucx.spin_ns;
                claim_worker();
                claimed = true;
            }
            if (pthread_mutex_trylock(&ucx.rx_lock) == 0) {
                int n = ucx_progress();
                pthread_mutex_unlock(&ucx.rx_lock);
                if (n) {
                    bump_gen();
                    continue;
                }
            }
            if (now >= atomic_load(&ucx.timers_due))
                run_timers();
            sched_yield();
            continue;
        }
        if (claimed) {
            /* About to sleep until a delivery: the service thread must
             * take the worker back now. */
            atomic_fetch_sub(&ucx.rx_claims, 1);
            claimed = false;
            ucx_kick();
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
        pthread_mutex_lock(&ucx.lock);
        if (ucx.gen == g)
            pthread_cond_timedwait(&ucx.cv, &ucx.lock, &ts);
        pthread_mutex_unlock(&ucx.lock);
    }
    if (claimed)
        atomic_fetch_sub(&ucx.rx_claims, 1); /* the service thread looks back soon */
    return rc;
}

#endif /* DSM_HAVE_UCX */
