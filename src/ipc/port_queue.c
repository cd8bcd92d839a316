/*
 * port_queue.c — turns: a port handles each node's messages and operations
 * in that node's order (port_run), wherever they travelled, and puts a
 * message on its queue only if its node holds a right to send it; the
 * receiving program takes messages from that queue. Apart from how a
 * message arrives (port_assembly.c): here it is whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/trace.h"
#include "ipc/ipc_state.h"

/* ---- receiver side ---------------------------------------------------- */

void port_append(struct port *p, struct queued_msg *m)
{
    if (!m->ordinal && !(m->flags & IPC_MF_ONCE))
        m->ordinal = ++p->peers[m->src].enq;
    m->next = NULL;
    if (p->tail)
        p->tail->next = m;
    else
        p->head = m;
    p->tail = m;
    p->queued++;
    ipc_notify();
}

/* Handles every message and operation whose turn has come: each node's in
 * its own order, none of a node's while a claim of its waits for its note. */
void port_run(struct port *p)
{
    while (p->state == PORT_LIVE && !p->doomed) {
        struct port_item *it = NULL;
        for (struct port_item **pp = &p->items; *pp;) {
            struct port_item *c = *pp;
            struct port_peer *pe = &p->peers[c->origin];
            if (!c->seq) { /* unnumbered (PULL, DROP_RECV), come while arriving */
                it = c;
                *pp = c->next;
                break;
            }
            if (c->seq < pe->next_seq) { /* its number came already */
                *pp = c->next;
                ipc_refuse("node %d sent message or operation %llu to a port twice; dropped",
                           c->origin, (unsigned long long)c->seq);
                if (c->msg)
                    port_msg_free(c->msg);
                free(c);
                continue;
            }
            if (c->seq == pe->next_seq && !pe->waiting) {
                it = c;
                *pp = c->next;
                break;
            }
            pp = &c->next;
        }
        if (!it)
            return;
        if (it->seq)
            p->peers[it->origin].next_seq++;
        port_take_turn(p, it->origin, it->from, it->msg, it->op, it->token, it->arg);
        free(it);
    }
}

void port_take_turn(struct port *p, int origin, int from, struct queued_msg *msg, unsigned op,
                    uint64_t token, uint64_t arg)
{
    if (msg) {
        if (carry_may_send(p, origin, msg)) {
            port_append(p, msg);
        } else {
            ipc_refuse("node %d sent a message to port %016llx through no right it holds; "
                       "refused", origin, (unsigned long long)p->uid);
            carry_destroy(msg->rights, msg->nrights);
            port_msg_free(msg);
        }
    } else if (!carry_apply(p, origin, from, op, token, arg)) {
        ipc_refuse("node %d sent port %016llx a %s it holds no right for; refused", origin,
                   (unsigned long long)p->uid, ipc_op_name(op));
    }
}

/* The common case, straight: a message for the port here, in its turn,
 * nothing waiting, is handled at once (port_migrate_route decides the same,
 * the long way). Whether it was. */
bool port_in_turn(uint32_t slot, uint64_t uid, int origin, int from, uint64_t seq,
                  struct queued_msg *m)
{
    struct port *port = &ipc.ports[slot];
    if (port->uid != uid || port->state != PORT_LIVE || port->items || port->doomed)
        return false;
    struct port_peer *pe = &port->peers[origin];
    if (seq != pe->next_seq || pe->waiting)
        return false;
    pe->next_seq++;
    port_take_turn(port, origin, from, m, 0, 0, 0);
    return true;
}

void port_on_op(int src, const struct ipc_parsed *p)
{
    int origin = p->d.flags & IPC_MF_FWD ? p->fwd.origin : src;
    if (origin >= job()->nodes)
        log_fatal("node %d forwarded an operation of node %d, beyond the job; protocol error",
                  src, origin);
    struct route_item it = {.origin = origin, .from = src, .d = p->d, .fwd = p->fwd,
                            .op = p->opcode, .token = p->op.token, .arg = p->op.arg};
    port_migrate_route(&it);
}

/* ---- the receiving program -------------------------------------------- */

struct queue_wait {
    int number;
};

/* The ports whose receive rights a message brought: the program gets them
 * once each port is here (its state and queue came from its former node),
 * or gone. */
struct arrival_wait {
    int                 n;
    const dsm_port_ref *rights;
};

static bool ports_arrived(void *arg)
{
    struct arrival_wait *w = arg;
    bool ok = true;
    pthread_mutex_lock(&ipc.lock);
    for (int i = 0; i < w->n && ok; i++) {
        if (w->rights[i].kind != DSM_RIGHT_RECEIVE)
            continue;
        const struct port *p = &ipc.ports[(uint32_t)w->rights[i].port & (IPC_MAX_SLOTS - 1)];
        ok = !(p->state == PORT_ARRIVING && p->uid == w->rights[i].id);
    }
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

static bool queue_nonempty(void *arg)
{
    struct queue_wait *w = arg;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(w->number);
    bool ok = !p || p->head != NULL || p->doomed;
    pthread_mutex_unlock(&ipc.lock);
    return ok;
}

int dsm_msg_recv(int port, struct dsm_msg *msg, double timeout)
{
    port_need_started();
    if (!msg)
        return -EINVAL;
    uint64_t t_call = TRACE_ON ? clock_ns() : 0;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(port);
    struct queue_wait w = {.number = port};
    uint64_t deadline = clock_deadline(timeout);
    while (p && !p->head) {
        pthread_mutex_unlock(&ipc.lock);
        if (ipc_wait(queue_nonempty, &w, deadline))
            return -ETIMEDOUT;
        pthread_mutex_lock(&ipc.lock);
        p = port_of_number(port);
    }
    if (!p) { /* not a port, or its receive right went meanwhile */
        pthread_mutex_unlock(&ipc.lock);
        return -EINVAL;
    }
    uint64_t t_taken = TRACE_ON ? clock_ns() : 0;
    struct queued_msg *m = p->head;
    p->head = m->next;
    if (!p->head)
        p->tail = NULL;
    p->queued--;
    if (m->flow != IPC_NO_FLOW)
        ipc_defer_accept(m->src, m->flow, m->ordinal);
    port_grant_waiting(p);
    memset(msg, 0, sizeof *msg);
    if (m->nrights) {
        msg->rights = calloc(m->nrights, sizeof *msg->rights);
        if (!msg->rights)
            log_fatal("out of memory taking a message's rights");
        carry_in(m->rights, m->nrights, msg->rights);
        msg->nrights = (int)m->nrights;
    }
    pthread_mutex_unlock(&ipc.lock);

    msg->src_node = m->src;
    msg->seq = m->ordinal;
    msg->data = m->data;
    msg->len = m->len;
    msg->ool = m->ool;
    msg->nool = (int)m->nool;
    msg->reply_token = m->reply_token;
    if (msg->nrights) {
        struct arrival_wait aw = {.n = msg->nrights, .rights = msg->rights};
        ipc_wait(ports_arrived, &aw, 0);
    }
    if (m->flags & IPC_MF_NOTIFY) {
        struct dsm_notification n;
        memcpy(&n, m->data, sizeof n);
        msg->notification = (int)n.kind;
    }
    msg->internal_ = m;
    if (TRACE_ON)
        trace_put(TRACE_CALL, 1, m->src, m->len, t_call, t_taken, clock_ns());
    return 0;
}

void dsm_msg_free(struct dsm_msg *msg)
{
    if (!msg || !msg->internal_)
        return;
    struct queued_msg *m = msg->internal_;
    if (m->rights) { /* they are the program's now (dsm_msg_recv) */
        free(m->rights);
        m->rights = NULL;
        m->nrights = 0;
        free(msg->rights);
    }
    port_msg_free(m);
    memset(msg, 0, sizeof *msg);
}
