/*
 * ucx_frame.c — the UCX transport's messages (ucx.c describes what they
 * promise): each one active message whose header (struct ucx_hdr) carries
 * the job id, the sender's sequence number for the receiver and the MAC.
 * Sent from any thread, under ucx.ucp; received by ucx_on_am inside
 * ucp_worker_progress, which only queues what arrived (the data stays
 * UCX's, UCP_AM_FLAG_PERSISTENT_DATA); then checked, put in sequence
 * order and delivered by ucx_progress, under rx_lock, after
 * ucp_worker_progress has returned: without `ucp`, so a handler may send.
 * Which thread calls ucx_progress, and when, is ucx_service.c's; what a
 * failed endpoint means is ucx_end.c's.
 */
#include "net/ucx_state.h"

#ifdef DSM_HAVE_UCX

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "net/wire.h"

/* ---- the message header ------------------------------------------------ */

/* The payload hash the mac covers: the payload's keyed hash in mac mode
 * and for the messages that change the job's life; 0 for data in token
 * mode (the header is still authenticated). */
uint64_t ucx_seal(const struct wire_keys *k, const struct ucx_hdr *h, const void *payload)
{
    uint64_t ph = k->mac || h->kind != UCX_DATA ? wire_payload_hash_full(k, payload, h->len) : 0;
    struct siphash_state s;
    siphash_init(&s, &k->hdr);
    siphash_update(&s, h, offsetof(struct ucx_hdr, mac));
    siphash_update(&s, &ph, sizeof ph);
    return siphash_final(&s);
}

/* ---- sending ----------------------------------------------------------- */

void ucx_on_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status; /* a failure fails the endpoint, and on_ep_error says so */
    free(user_data);
    ucx_lib.request_free(request);
    atomic_fetch_sub(&ucx.sends, 1);
}

/* One message of `kind`: iov[0..iovcnt) then lent[0..lent_len), copied
 * into one buffer that lives until UCX is done with it. */
int ucx_send_kind(int dst, uint16_t kind, const struct iovec *iov, int iovcnt,
                  const void *lent, size_t lent_len)
{
    if (dst < 0 || dst >= ucx.nodes || iovcnt < 0)
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
    struct ucx_hdr h = {.job = ucx.job, .src = (uint16_t)ucx.rank, .dst = (uint16_t)dst,
                        .len = (uint32_t)len, .kind = kind};
    ucp_request_param_t prm = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_AM_SEND_FLAG_EAGER, /* the receiver's callback holds the data (ucx_on_am) */
        .cb.send = ucx_on_sent,
        .user_data = buf,
    };
    pthread_mutex_lock(&ucx.ucp);
    ucx_send_locked(dst, &h, buf, &prm);
    pthread_mutex_unlock(&ucx.ucp);
    stats_add(STAT_NET_MSGS_SENT, 1);
    stats_add(STAT_NET_BYTES_SENT, sizeof h + len);
    return 0;
}

/* Sends buf (h's room, then h->len bytes) to dst. Under ucx.ucp. */
void ucx_send_locked(int dst, struct ucx_hdr *hp, unsigned char *buf, const ucp_request_param_t *prm)
{
    struct ucx_hdr h = *hp;
    size_t len = h.len;
    struct ucx_peer *peer = &ucx.peers[dst];
    h.seq = peer->tx_seq++;
    h.mac = ucx_seal(&ucx.keys, &h, buf + sizeof h);
    memcpy(buf, &h, sizeof h);
    peer->last_tx_ns = clock_ns();
    ucs_status_ptr_t r = ucx_lib.am_send_nbx(peer->ep, AM_ID, buf, sizeof h, buf + sizeof h, len, prm);
    if (r == NULL) {
        free(buf);
    } else if (UCS_PTR_IS_ERR(r)) {
        free(buf);
        /* The endpoint failed: its error handler names the peer, unless
         * the job is finishing and the peer gone (ucx_check_failures). */
        atomic_store(&peer->failed, (int)UCS_PTR_STATUS(r));
        atomic_store(&ucx.any_failed, true);
    } else {
        atomic_fetch_add(&ucx.sends, 1);
    }
}

int ucx_send_ref(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                 size_t lent_len, struct net_ref *ref)
{
    /* The lent bytes are copied at once: the reference is the lender's
     * alone, and goes when it drops it. */
    (void)ref;
    return ucx_send_kind(peer, UCX_DATA, iov, iovcnt, lent, lent_len);
}

/* ---- receiving --------------------------------------------------------- */

/* Inside ucp_worker_progress, under ucx.ucp: queue what came; ucx_progress()
 * delivers it once the worker is left. */
ucs_status_t ucx_on_am(void *arg, const void *header, size_t header_length, void *data,
                       size_t length, const ucp_am_recv_param_t *param)
{
    (void)arg;
    struct ucx_hdr h;
    bool persistent = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* dsm sends eager only; a rendezvous is someone else's */
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        ucx_lib.am_data_release(ucx.worker, data);
        return UCS_OK;
    }
    if (header_length != sizeof h) {
        stats_add(STAT_NET_FOREIGN_DROPPED, 1);
        return UCS_OK;
    }
    memcpy(&h, header, sizeof h);
    if (h.job != ucx.job || h.src >= ucx.nodes || h.dst != ucx.rank || h.len != length ||
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
    *ucx.inbox_tail = m;
    ucx.inbox_tail = &m->next;
    stats_add(STAT_NET_BYTES_RECV, sizeof h + length);
    return persistent ? UCS_INPROGRESS : UCS_OK;
}

static void release(struct ucx_msg *m)
{
    if (m->ucx_owned) {
        pthread_mutex_lock(&ucx.ucp);
        ucx_lib.am_data_release(ucx.worker, m->data);
        pthread_mutex_unlock(&ucx.ucp);
    }
    free(m);
}

void ucx_handle(struct ucx_msg *m)
{
    int src = m->h.src;
    switch (m->h.kind) {
    case UCX_DATA:
        stats_add(STAT_NET_MSGS_RECV, 1);
        ucx_in_delivery = true;
        ucx.ops.deliver(ucx.octx, src, m->data, m->h.len, false);
        ucx_in_delivery = false;
        break;
    case UCX_NOP:
        break;
    case UCX_FIN:
        /* From a child: its subtree has finished; from the parent: every
         * node has (ucx_finish). */
        atomic_store(&ucx.peers[src].fin_rx, true);
        if (src == ucx.parent)
            atomic_store(&ucx.all_finished, true);
        break;
    case UCX_ABORT: {
        char reason[257], line[400];
        wire_abort_reason(m->data, m->h.len, reason, sizeof reason);
        snprintf(line, sizeof line, "dsm: node %d: node %d ended the job: %s", ucx.rank, src, reason);
        log_exit_quietly(line);
        break;
    }
    case UCX_LOOK: {
        char reply[NET_WITNESS_LINE_MAX + 1];
        size_t n = net_witness_asked(src, m->data, m->h.len, reply, sizeof reply);
        if (n)
            ucx_send_kind(src, UCX_SEEN, &(struct iovec){.iov_base = reply, .iov_len = n}, 1, NULL, 0);
        break;
    }
    case UCX_SEEN:
        net_witness_answered(src, m->data, m->h.len);
        break;
    }
}

void ucx_send_witness(int to, bool question, const void *line, size_t len)
{
    ucx_send_kind(to, question ? UCX_LOOK : UCX_SEEN,
                  &(struct iovec){.iov_base = (void *)line, .iov_len = len}, 1, NULL, 0);
}

/* Checks a received message and delivers it and any it releases in
 * sequence order. Returns how many were delivered. Under rx_lock. */
static int accept_msg(struct ucx_msg *m)
{
    if (m->h.mac != ucx_seal(&ucx.keys, &m->h, m->data)) {
        stats_add(STAT_NET_AUTH_DROPPED, 1);
        release(m);
        return 0;
    }
    struct ucx_peer *p = &ucx.peers[m->h.src];
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
        ucx_handle(m);
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
int ucx_progress(void)
{
    /* One call: each of its transports' polls is a system call over tcp
     * (an epoll_wait per interface), and a caller that got events polls
     * again anyway. */
    uint64_t before = clock_ns();
    pthread_mutex_lock(&ucx.ucp);
    unsigned n = ucx_lib.worker_progress(ucx.worker);
    struct ucx_msg *in = ucx.inbox;
    if (!n && !in) /* everything sent to us before `before` has been read */
        atomic_store_explicit(&ucx.drained_ns, before, memory_order_relaxed);
    ucx.inbox = NULL;
    ucx.inbox_tail = &ucx.inbox;
    pthread_mutex_unlock(&ucx.ucp);
    /* What came first: a parent's FIN may arrive in the same round as
     * its endpoint's failure, when it has left after sending it. */
    while (in) {
        struct ucx_msg *next = in->next;
        in->next = NULL;
        n += (unsigned)accept_msg(in);
        in = next;
    }
    ucx_check_failures();
    return (int)n;
}

#endif /* DSM_HAVE_UCX */
