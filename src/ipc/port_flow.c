/*
 * port_flow.c — port-queue flow control, the sender's side: each sender
 * may have at most queue_limit messages at a port that the receiving
 * program has not yet taken; a take sends an ACCEPT back (message-accept
 * notification), naming the sender's link (its flow) and the message's
 * number (port.c). Here: the credit a send waits for, the accepts that
 * return it, and the program's view of them. Apart from the sender
 * protocol (port_send.c), which only asks whether there is credit.
 */
#include <errno.h>

#include "base/clock.h"
#include "ipc/ipc_state.h"

bool port_credit_available(void *arg)
{
    struct credit_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w->link];
    bool ok = l->dead || l->sent - l->accepted < l->limit;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

void port_on_accept(int src, uint16_t flow, uint64_t ordinal)
{
    (void)src; /* a port that moved is answered for by its new node */
    if (flow >= ipc.nlinks)
        return;
    struct link *l = &ipc.links[flow];
    if (l->uid && ordinal > l->accepted && ordinal <= l->sent) {
        l->accepted = ordinal;
        ipc_notify();
    }
}

struct accept_wait {
    uint32_t link;
    uint64_t seq;
};

static bool accepted_reached(void *arg)
{
    struct accept_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w->link];
    bool ok = l->dead || l->accepted >= w->seq;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_wait_accepted(const dsm_port_ref *dst, uint64_t seq, double timeout)
{
    port_need_started();
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc = right_get(dst, 1u << DSM_RIGHT_SEND, &e);
    struct accept_wait w = {0};
    if (!rc) {
        w.link = e->link;
        w.seq = seq;
        if (seq > ipc.links[w.link].sent || seq == 0)
            rc = -EINVAL;
    }
    pthread_mutex_unlock(&ipc.lock);
    if (rc)
        return rc;
    if (ipc_wait(accepted_reached, &w, clock_deadline(timeout)))
        return -ETIMEDOUT;
    pthread_mutex_lock(&ipc.lock);
    struct link *l = &ipc.links[w.link];
    rc = l->accepted >= seq ? 0 : -EPIPE;
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

uint64_t dsm_msg_accepted(const dsm_port_ref *dst)
{
    port_need_started();
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    uint64_t n = right_get(dst, 1u << DSM_RIGHT_SEND, &e) ? 0 : ipc.links[e->link].accepted;
    pthread_mutex_unlock(&ipc.lock);
    return n;
}
