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
 *    (verdict_due, ucx_end.c). A peer that stops without its connections
 *    failing (stopped, or its host gone silent) is found as UDP finds it:
 *    heartbeats to the two ring neighbours every second, and silence
 *    beyond DSM_PEER_TIMEOUT ends the job (run_timers, ucx_service.c).
 *    Either is said once (ucx_end_naming).
 *
 * Its files: this one loads libucp (at run time, as libpmix is: a program
 * run over UDP does not load UCX at all, its error-signal handlers
 * included), holds the transport's state (ucx_state.h), and stands in for
 * the transport in a build without UCX; ucx_frame.c frames, sends,
 * receives and delivers the messages; ucx_service.c is who progresses the
 * worker (the service thread, net_wait, the timers); ucx_start.c starts
 * the transport, its worker addresses exchanged over UDP; ucx_end.c ends
 * it (a lost peer named, the abort, net_finish). ucx_rma.c reaches the
 * worker through the calls at the end of this file.
 */
#include "net/backend.h"
#include "net/ucx.h"

#include <errno.h>
#include <stdlib.h>

#include "base/linkage.h"
#include "base/log.h"
#include "base/state.h"
#include "net/ucx_state.h"


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

/* ---- libucp, loaded at run time ---------------------------------------- */

DSM_STATE struct ucx_lib ucx_lib;

void ucx_load_ucp(void)
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
        *(void **)&ucx_lib.field = dlsym(lib, name);                                  \
        if (!ucx_lib.field)                                                           \
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

const char *ucx_status_string(int st)
{
    return ucx_lib.status_string ? ucx_lib.status_string((ucs_status_t)st) : "unknown";
}

/* ---- state ------------------------------------------------------------- */

DSM_STATE struct ucx_state ucx;

__thread bool ucx_in_delivery NET_TLS;

/* ---- for ucx_rma.c ----------------------------------------------------- */

ucp_worker_h ucx_worker_lock(void)
{
    pthread_mutex_lock(&ucx.ucp);
    return ucx.worker;
}

void ucx_worker_unlock(void)
{
    /* A caller's progress may have queued messages (ucx_on_am) while the
     * service thread sleeps on an event that progress consumed. */
    bool queued = ucx.inbox != NULL;
    pthread_mutex_unlock(&ucx.ucp);
    if (queued)
        ucx_kick();
}

int ucx_peer_failed(int peer) { return atomic_load(&ucx.peers[peer].failed); }
ucp_ep_h ucx_ep(int peer) { return ucx.peers[peer].ep; }
uint64_t ucx_peer_timeout_ns(void) { return ucx.peer_timeout_ns; }

#endif /* DSM_HAVE_UCX */

/* net.h's calls over UCX (backend.h); a build without UCX never selects
 * it (ucx_start ends the job first). */
const struct net_backend ucx_backend = {
    .name = "ucx",
    .send_ref = ucx_send_ref,
    .wait = ucx_wait,
    .notify = ucx_notify,
    .timer_at = ucx_timer_at,
    .send_witness = ucx_send_witness,
    .finish = ucx_finish,
    .abort_peers = ucx_abort_peers,
    .exposed = ucx_rma_exposed,
    .one_sided = ucx_rma_one_sided,
    .get = ucx_rma_get,
};
