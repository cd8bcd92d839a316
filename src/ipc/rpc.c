/*
 * rpc.c — calls whose request carries a pre-grant for the reply.
 *
 * The caller names, in its request, a token and the capacity of the buffer
 * the reply will land in; the server answers with one REPLY message that the
 * transport copies straight into that buffer. A call is therefore exactly
 * two messages when the request is small, with no reservation round for the
 * reply. A server never sends more than the granted capacity: it reports the
 * full length, so the caller learns how much was cut (-EMSGSIZE).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/ipc_state.h"

static struct pending_call *find_call(uint64_t token)
{
    for (struct pending_call *c = ipc.calls; c; c = c->next)
        if (c->token == token)
            return c;
    return NULL;
}

static bool call_done(void *arg)
{
    struct pending_call *c = arg;
    pthread_mutex_lock(&ipc.lock);
    bool d = c->done;
    pthread_mutex_unlock(&ipc.lock);
    return d;
}

static bool call_not_placing(void *arg)
{
    struct pending_call *c = arg;
    pthread_mutex_lock(&ipc.lock);
    bool d = !c->placing;
    pthread_mutex_unlock(&ipc.lock);
    return d;
}

long dsm_msg_call(const dsm_port_ref *dst, const void *req, size_t len,
                  void *reply, size_t reply_cap, double timeout)
{
    if (reply_cap && !reply)
        return -EINVAL;
    uint64_t deadline = clock_deadline(timeout);
    struct pending_call c = {.buf = reply, .cap = reply_cap};
    pthread_mutex_lock(&ipc.lock);
    c.token = ipc_nonce();
    c.next = ipc.calls;
    ipc.calls = &c;
    pthread_mutex_unlock(&ipc.lock);
    stats_add(STAT_IPC_RPCS, 1);

    int rc = port_send(dst, req, len, NULL, 0, NULL, 0, timeout, NULL, c.token, reply_cap);
    if (rc == 0)
        rc = ipc_wait(call_done, &c, deadline) ? -ETIMEDOUT : 0;

    /* A reply already landing in our buffer must finish before we leave. */
    if (rc)
        ipc_wait(call_not_placing, &c, 0);
    pthread_mutex_lock(&ipc.lock);
    for (struct pending_call **pp = &ipc.calls; *pp; pp = &(*pp)->next)
        if (*pp == &c) {
            *pp = c.next;
            break;
        }
    pthread_mutex_unlock(&ipc.lock);
    if (rc)
        return rc;
    return c.full_len > reply_cap ? -EMSGSIZE : (long)c.full_len;
}

int dsm_msg_reply(struct dsm_msg *msg, const void *data, size_t len)
{
    if (!msg || !msg->internal_ || (len && !data))
        return -EINVAL;
    struct queued_msg *m = msg->internal_;
    if (!m->reply_token)
        return -EINVAL;
    struct ipc_reply r = {.token = m->reply_token, .full_len = len};
    size_t send = len < m->reply_cap ? len : m->reply_cap;
    pthread_mutex_lock(&ipc.lock);
    int rc = ipc_send3(m->src, IPC_REPLY, 0, &r, sizeof r, data, send);
    pthread_mutex_unlock(&ipc.lock);
    m->reply_token = 0;
    msg->reply_token = 0;
    return rc;
}

void rpc_on_reply(int src, const struct ipc_reply *b, const void *data, size_t len)
{
    (void)src;
    struct pending_call *c = find_call(b->token);
    if (!c)
        return; /* the caller timed out and left: drop the late reply */
    memcpy(c->buf, data, len < c->cap ? len : c->cap);
    c->full_len = b->full_len;
    c->done = true;
    ipc_notify();
}

void *rpc_place_reply(int src, const struct ipc_reply *b, size_t msg_len, size_t *skip)
{
    *skip = ipc_fixed_size(IPC_REPLY);
    size_t dlen = msg_len - *skip;
    struct placement *pl = &ipc.placing[src];
    pl->call = find_call(b->token);
    if (pl->call && dlen <= pl->call->cap) {
        pl->call->full_len = b->full_len;
        pl->call->placing = true;
        return pl->call->buf;
    }
    /* A caller that left, or a server that ignored the grant: receive it
     * somewhere harmless and drop it. */
    pl->call = NULL;
    pl->scratch = malloc(dlen ? dlen : 1);
    return pl->scratch;
}

void rpc_reply_placed(int src)
{
    struct placement *pl = &ipc.placing[src];
    if (pl->call) {
        pl->call->placing = false;
        pl->call->done = true;
        ipc_notify();
    } else {
        free(pl->scratch);
    }
    pl->scratch = NULL;
    pl->call = NULL;
}
