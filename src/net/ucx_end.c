/*
 * ucx_end.c — how the UCX transport ends: a lost peer (its endpoint
 * failed, or, found by ucx_service.c's run_timers, silent) named once for
 * the job; the ABORT sent to every peer when this node ends the job; and
 * net_finish along the job's tree, then the endpoints closed.
 *
 * Endpoint failures are looked at by whoever progresses the worker
 * (ucx_check_failures, from ucx_progress, under rx_lock); the abort runs from
 * wherever log_fatal was called; the finish on the application thread,
 * which waits (ucx_wait) with the service thread running until the FINs
 * are through, then stops it.
 */
#include "net/ucx_state.h"

#ifdef DSM_HAVE_UCX

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

#define FIN_GRACE_NS     (2000ull * 1000000) /* see failure_expected */
#define CLOSE_WAIT_NS    (1000ull * 1000000) /* closing the endpoints at the end, at most */
#define VERDICT_WAIT_NS  (2000ull * 1000000) /* verdict_due, when DSM_PEER_TIMEOUT is 0 */

/* ---- a lost peer ------------------------------------------------------- */

/* Whether an endpoint's failure may be ignored: the job is finishing and
 * the peer, its part done, may have left already. Until our FIN went up
 * every failure counts; after it only the parent's (whose FIN we wait
 * for), until that came. */
static bool failure_expected(int peer)
{
    if (atomic_load(&ucx.all_finished))
        return true;
    if (!atomic_load(&ucx.fin_sent))
        return false;
    if (peer != ucx.parent)
        return true;
    /* The parent leaves right after its FIN to us has reached our side;
     * give that FIN a moment to be read before blaming it. */
    uint64_t now = clock_ns();
    if (!ucx.parent_failed_ns)
        ucx.parent_failed_ns = now;
    return now - ucx.parent_failed_ns < FIN_GRACE_NS;
}

/* A dead peer is named once per job. Its two ring neighbours watch it on
 * the same clock, and both named a stopped node, a line each (over UDP
 * the first line's ABORT most often reaches the others first; by luck).
 * So the peer's ring predecessor says it (log_fatal), and any other node
 * that finds it dead ends with the same line as a relay to the launcher,
 * which prints it only if no node said a failure of its own
 * (log_exit_quietly): one line, whoever is first, and a node that finds
 * it alone (the predecessor starved, or not watching) is still heard. */
void ucx_end_naming(int peer, const char *fmt, ...)
{
    char msg[400], line[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if ((ucx.rank + 1) % ucx.nodes == peer)
        log_fatal("%s", msg);
    snprintf(line, sizeof line, "dsm: node %d: %s", ucx.rank, msg);
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
    if (atomic_compare_exchange_strong(&ucx.peers[peer].lost_ns, &since, now))
        since = now;
    return now - since >= (ucx.peer_timeout_ns ? ucx.peer_timeout_ns : VERDICT_WAIT_NS);
}

void ucx_peer_lost(int peer, int status, const char *during)
{
    while (!verdict_due(peer))
        usleep(10000);
    ucx_end_naming(peer, "peer %d unreachable over UCX%s (%s); ending the job", peer, during,
                   ucx_status_string(status));
}

void ucx_check_failures(void)
{
    if (!atomic_load(&ucx.any_failed))
        return;
    for (int i = 0; i < ucx.nodes; i++) {
        int st = atomic_load(&ucx.peers[i].failed);
        if (st && !failure_expected(i) && verdict_due(i))
            ucx_end_naming(i, "peer %d unreachable over UCX (%s); ending the job", i, ucx_status_string(st));
    }
}

/* ---- the end ----------------------------------------------------------- */

void ucx_abort_peers(const char *reason)
{
    if (!ucx.peers)
        return;
    /* Best effort, from wherever log_fatal was called: if UCP is busy
     * (this thread may be inside it), a peer that misses the notice finds
     * this node gone instead. */
    size_t len = strlen(reason);
    if (len > 256)
        len = 256;
    bool locked = false;
    for (int t = 0; t < 100 && !(locked = pthread_mutex_trylock(&ucx.ucp) == 0); t++)
        usleep(1000);
    if (!locked)
        return;
    for (int i = 0; i < ucx.nodes; i++) {
        if (i == ucx.rank || atomic_load(&ucx.peers[i].failed))
            continue;
        unsigned char *buf = malloc(sizeof(struct ucx_hdr) + len);
        if (!buf)
            break;
        memcpy(buf + sizeof(struct ucx_hdr), reason, len);
        struct ucx_hdr h = {.job = ucx.job, .src = (uint16_t)ucx.rank, .dst = (uint16_t)i,
                            .len = (uint32_t)len, .kind = UCX_ABORT};
        ucp_request_param_t prm = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                            UCP_OP_ATTR_FIELD_FLAGS,
            .flags = UCP_AM_SEND_FLAG_EAGER, .cb.send = ucx_on_sent, .user_data = buf};
        ucx_send_locked(i, &h, buf, &prm);
    }
    /* Push them out; what cannot leave in this time does not. */
    uint64_t until = clock_ns() + 100ull * 1000000;
    while (atomic_load(&ucx.sends) && clock_ns() < until)
        ucx_lib.worker_progress(ucx.worker);
    pthread_mutex_unlock(&ucx.ucp);
}

static void on_flushed(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    ucx_lib.request_free(request);
    atomic_store((_Atomic bool *)user_data, true);
}

static bool flag_set(void *arg) { return atomic_load((_Atomic bool *)arg); }

/* Waits until everything sent so far has reached its receiver's side. */
static void flush_worker(void)
{
    _Atomic bool done = false;
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                               .cb.send = on_flushed, .user_data = (void *)&done};
    pthread_mutex_lock(&ucx.ucp);
    ucs_status_ptr_t r = ucx_lib.worker_flush_nbx(ucx.worker, &prm);
    pthread_mutex_unlock(&ucx.ucp);
    if (r == NULL || UCS_PTR_IS_ERR(r))
        return; /* done, or an endpoint failed: ucx_check_failures tells */
    ucx_wait(flag_set, (void *)&done, 0);
}

static bool subtree_finished(void *arg)
{
    (void)arg;
    if (atomic_load(&ucx.sends))
        return false;
    for (int c = 0; c < ucx.nchildren; c++)
        if (!atomic_load(&ucx.peers[ucx.first_child + c].fin_rx))
            return false;
    return true;
}

static bool all_finished(void *arg)
{
    (void)arg;
    return atomic_load(&ucx.all_finished);
}

static bool sends_done(void *arg)
{
    (void)arg;
    return atomic_load(&ucx.sends) == 0;
}

void ucx_finish(void)
{
    if (!ucx.running)
        return;
    /* As transport.c's net_finish, along the job's tree: once our subtree
     * has finished and all we sent has reached its receivers (the flush),
     * a FIN goes up; the root's comes back down, and says every node has
     * finished and holds what was sent to it. */
    ucx_wait(subtree_finished, NULL, 0);
    flush_worker();
    if (ucx.parent >= 0)
        ucx_send_kind(ucx.parent, UCX_FIN, NULL, 0, NULL, 0);
    atomic_store(&ucx.fin_sent, true);
    if (ucx.parent < 0)
        atomic_store(&ucx.all_finished, true);
    ucx_wait(all_finished, NULL, 0);
    for (int c = 0; c < ucx.nchildren; c++)
        ucx_send_kind(ucx.first_child + c, UCX_FIN, NULL, 0, NULL, 0);
    ucx_wait(sends_done, NULL, 0);
    flush_worker();

    atomic_store(&ucx.stopping, true);
    ucx_kick();
    pthread_join(ucx.thread, NULL);
    ucx.running = false;
    log_set_abort_hook(NULL);
    /* Peers may be gone already: close without waiting for them. */
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void **reqs = calloc((size_t)ucx.nodes, sizeof *reqs);
    pthread_mutex_lock(&ucx.ucp);
    for (int i = 0; i < ucx.nodes; i++) {
        ucs_status_ptr_t r = ucx_lib.ep_close_nbx(ucx.peers[i].ep, &prm);
        if (reqs && r && !UCS_PTR_IS_ERR(r))
            reqs[i] = r;
    }
    uint64_t until = clock_ns() + CLOSE_WAIT_NS;
    for (int i = 0; reqs && i < ucx.nodes; i++) {
        while (reqs[i] && ucx_lib.request_check_status(reqs[i]) == UCS_INPROGRESS && clock_ns() < until)
            ucx_lib.worker_progress(ucx.worker);
        if (reqs[i] && ucx_lib.request_check_status(reqs[i]) != UCS_INPROGRESS)
            ucx_lib.request_free(reqs[i]);
    }
    pthread_mutex_unlock(&ucx.ucp);
    free(reqs);
    /* What is still queued was sent after every peer finished: nobody's.
     * The worker and the context stay: UCX's own teardown would wait on
     * requests left with peers that have gone, and the process ends. */
    close(ucx.evfd);
    close(ucx.tfd);
    close(ucx.epfd);
}

#endif /* DSM_HAVE_UCX */
