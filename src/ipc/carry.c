/*
 * carry.c — rights in messages (Mach's copyin and copyout), and their
 * accounting at the port, which is what makes a right unforgeable across
 * nodes.
 *
 * A right travels as a wire right: the port's uid and location, and a
 * random token. What the port knows (struct port, at its receiver):
 *  - send rights: units per node (peers[].send). A node that copies its
 *    send right into a message first tells the port (NOTE: a copy in
 *    transit, token T); the node that takes the message tells it (CLAIM T)
 *    and holds a unit from then on; a copy destroyed untaken is dropped
 *    (DROP T); a node whose last reference goes gives its units back
 *    (RELEASE). A NOTE is believed only from a node that holds a unit at
 *    its turn, and a CLAIM only for a token some NOTE announced: a claim
 *    that arrives first (the claimer's path to the port is not the
 *    giver's) waits for it, and so does everything of the claimer's after
 *    it. The giver's NOTE always comes: it left before the message did.
 *    Rights made from the receive right are counted at once (the port is
 *    here). senders + transit is every send right there is: none, and the
 *    no-senders notification goes.
 *  - send-once rights: outstanding tokens (made only here, from the
 *    receive right); a message through one names its token, which the
 *    port takes away. They travel without a word to the port: only their
 *    use or their destruction tells it.
 *  - the receive right: its token, while it is in a message; the node
 *    that takes that message pulls the port (port_migrate.c).
 * A message whose node holds no right for it, an operation of a node that
 * holds nothing to do it with, are refused (port_queue.c prints the line).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/ipc_state.h"

/* ---- tokens ------------------------------------------------------------- */

struct port_token *carry_token(struct port *p, uint64_t token, uint32_t kind)
{
    for (struct port_token *t = p->tokens; t; t = t->next)
        if (t->token == token && t->kind == kind)
            return t;
    return NULL;
}

void carry_token_add(struct port *p, uint64_t token, uint32_t kind, int node)
{
    struct port_token *t = malloc(sizeof *t);
    if (!t)
        log_fatal("out of memory recording a port right");
    t->token = token;
    t->kind = kind;
    t->node = node;
    t->next = p->tokens;
    p->tokens = t;
}

void carry_token_remove(struct port *p, struct port_token *t)
{
    for (struct port_token **pp = &p->tokens; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            free(t);
            return;
        }
}

uint64_t carry_new_send_token(struct port *p, bool make)
{
    uint64_t token = ipc_nonce();
    carry_token_add(p, token, IPC_TOK_SEND, -1);
    p->transit++;
    if (make)
        p->mscount++;
    return token;
}

uint64_t carry_new_once_token(struct port *p)
{
    uint64_t token = ipc_nonce();
    carry_token_add(p, token, IPC_TOK_ONCE, -1);
    return token;
}

void carry_check_no_senders(struct port *p)
{
    if (p->ns.armed && p->senders == 0 && p->transit == 0 && p->mscount > 0)
        notify_fire(&p->ns, DSM_NOTIFY_NO_SENDERS, p->mscount, p->uid, NULL);
}

/* ---- sending: the program's rights into wire rights -------------------- */

int carry_check(const struct dsm_msg_right *rights, int n, uint64_t dst_uid)
{
    for (int i = 0; i < n; i++) {
        struct right *e;
        unsigned kinds;
        switch (rights[i].disposition) {
        case DSM_MOVE_RECEIVE:
        case DSM_MAKE_SEND:
        case DSM_MAKE_SEND_ONCE:
            kinds = 1u << DSM_RIGHT_RECEIVE;
            break;
        case DSM_MOVE_SEND:
        case DSM_COPY_SEND:
            kinds = 1u << DSM_RIGHT_SEND;
            break;
        case DSM_MOVE_SEND_ONCE:
            kinds = 1u << DSM_RIGHT_SEND_ONCE;
            break;
        default:
            return -EINVAL;
        }
        int rc = right_get(rights[i].right, kinds, &e);
        if (rc)
            return rc;
        const struct link *l = &ipc.links[e->link];
        if (l->dead && rights[i].disposition != DSM_MOVE_SEND_ONCE)
            return -EPIPE;
        if (rights[i].disposition == DSM_MOVE_RECEIVE) {
            const struct port *p = &ipc.ports[e->slot];
            if (p->uid == dst_uid)
                return -EINVAL; /* a port cannot be inside its own queue */
        }
        /* The same right twice: moved twice, or moved and used otherwise;
         * a send right may give as many references as it has. */
        uint32_t moves = rights[i].disposition == DSM_MOVE_SEND;
        for (int j = 0; j < i; j++) {
            if (rights[j].right->name != rights[i].right->name)
                continue;
            int a = rights[i].disposition, b = rights[j].disposition;
            if (a == DSM_MOVE_RECEIVE || b == DSM_MOVE_RECEIVE || a == DSM_MOVE_SEND_ONCE ||
                b == DSM_MOVE_SEND_ONCE)
                return -EINVAL;
            moves += a == DSM_MOVE_SEND && b == DSM_MOVE_SEND;
        }
        if (moves > e->urefs)
            return -EINVAL;
    }
    return 0;
}

/* Called with every right checked (carry_check). Moves take the right out
 * of this node's table at once, except a send reference, which goes after
 * the message (its last reference's RELEASE must come after the message
 * at the port, when the message goes to that same port): those entries
 * are returned in after[], and the count. */
int carry_out(const struct dsm_msg_right *rights, int n, struct ipc_wire_right *out,
              uint32_t *after)
{
    int nafter = 0;
    for (int i = 0; i < n; i++) {
        uint32_t i1 = rights[i].right->name;
        struct right *e = right_at(i1);
        uint32_t link = e->link;
        struct link *l = &ipc.links[link];
        struct ipc_wire_right *w = &out[i];
        memset(w, 0, sizeof *w);
        w->uid = l->uid;
        w->node = l->node;
        w->slot = l->slot;
        w->epoch = l->epoch;
        w->limit = l->limit;
        switch (rights[i].disposition) {
        case DSM_MOVE_SEND:
            after[nafter++] = i1;
            /* a copy, then a reference less */
            __attribute__((fallthrough));
        case DSM_COPY_SEND: {
            w->kind = IPC_WR_SEND;
            struct port *p = port_here(l->slot, l->uid);
            if (p && p->state == PORT_LIVE) {
                w->token = carry_new_send_token(p, false);
            } else {
                w->token = ipc_nonce();
                link_op(link, IPC_OP_NOTE, w->token, 0);
            }
            break;
        }
        case DSM_MAKE_SEND:
            w->kind = IPC_WR_SEND;
            w->token = carry_new_send_token(&ipc.ports[e->slot], true);
            break;
        case DSM_MAKE_SEND_ONCE:
            w->kind = IPC_WR_ONCE;
            w->token = carry_new_once_token(&ipc.ports[e->slot]);
            break;
        case DSM_MOVE_SEND_ONCE:
            w->kind = IPC_WR_ONCE;
            w->token = e->token;
            if (e->dn.armed)
                notify_cancel(&e->dn);
            right_free(i1);
            break;
        case DSM_MOVE_RECEIVE: {
            struct port *p = &ipc.ports[e->slot];
            w->kind = IPC_WR_RECV;
            w->token = ipc_nonce();
            w->node = job()->rank;
            w->slot = (uint32_t)(p - ipc.ports);
            w->epoch = p->epoch;
            w->limit = p->limit;
            p->in_transit = true;
            p->recv_token = w->token;
            right_free(i1);
            ipc_notify(); /* a thread waiting in dsm_msg_recv on it must see it gone */
            break;
        }
        }
    }
    return nafter;
}

/* ---- taking: wire rights into this node's ------------------------------- */

void carry_in(const struct ipc_wire_right *wr, uint32_t n, dsm_port_ref *out)
{
    for (uint32_t i = 0; i < n; i++) {
        struct ipc_wire_right w;
        memcpy(&w, &wr[i], sizeof w);
        uint32_t e = 0;
        switch (w.kind) {
        case IPC_WR_SEND: {
            uint32_t link = link_get(w.uid, w.node, w.slot, w.epoch, w.limit);
            struct link *l = &ipc.links[link];
            e = link_send_entry(link);
            if (!l->dead) {
                l->units++;
                link_op(link, IPC_OP_CLAIM, w.token, 0);
            }
            right_at(e)->urefs++;
            break;
        }
        case IPC_WR_ONCE: {
            uint32_t link = link_get(w.uid, w.node, w.slot, w.epoch, w.limit);
            e = right_new(DSM_RIGHT_SEND_ONCE, link);
            if (!e)
                log_fatal("this node's rights table is full");
            right_at(e)->token = w.token;
            break;
        }
        case IPC_WR_RECV: {
            struct port *p = port_here(w.slot, w.uid);
            uint32_t link;
            if (p && p->in_transit && w.node == job()->rank) {
                /* It never left: sent from here, taken here. */
                p->in_transit = false;
                p->recv_token = 0;
                link = link_get(w.uid, job()->rank, (uint32_t)(p - ipc.ports), p->epoch, p->limit);
            } else {
                p = port_new(w.uid, w.limit, PORT_ARRIVING);
                if (!p)
                    log_fatal("no free port slot for a port arriving here (at most %d ports a "
                              "node)", IPC_MAX_SLOTS);
                p->came_from = w.node;
                p->epoch = w.epoch + 1;
                uint32_t slot = (uint32_t)(p - ipc.ports);
                link = link_get(w.uid, w.node, w.slot, w.epoch, w.limit);
                /* The pull goes to the node that holds the port; from now
                 * on this node's own traffic to it stays here. */
                link_op_at(link, w.node, w.slot, IPC_OP_PULL, w.token, slot);
                struct link *l = &ipc.links[link];
                l->node = job()->rank;
                l->slot = slot;
                l->epoch = p->epoch;
            }
            e = right_new(DSM_RIGHT_RECEIVE, link);
            if (!e)
                log_fatal("this node's rights table is full");
            right_at(e)->slot = (int32_t)(p - ipc.ports);
            break;
        }
        }
        right_handle(e, &out[i]);
    }
}

void carry_destroy(const struct ipc_wire_right *wr, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct ipc_wire_right w;
        memcpy(&w, &wr[i], sizeof w);
        uint32_t link = link_get(w.uid, w.node, w.slot, w.epoch, w.limit);
        if (ipc.links[link].dead)
            continue;
        switch (w.kind) {
        case IPC_WR_SEND:
            link_op(link, IPC_OP_DROP, w.token, 0);
            break;
        case IPC_WR_ONCE:
            notify_once_destroyed(link, w.token);
            break;
        case IPC_WR_RECV:
            link_op_at(link, w.node, w.slot, IPC_OP_DROP_RECV, w.token, 0);
            break;
        }
    }
}

/* ---- at the port ---------------------------------------------------------- */

bool carry_may_send(struct port *p, int origin, const struct queued_msg *m)
{
    if (m->flags & IPC_MF_ONCE) {
        struct port_token *t = carry_token(p, m->once_token, IPC_TOK_ONCE);
        if (!t)
            return false;
        carry_token_remove(p, t);
        return true;
    }
    return p->peers[origin].send > 0;
}

bool carry_apply(struct port *p, int origin, int from, unsigned op, uint64_t token, uint64_t arg)
{
    struct port_peer *pe = &p->peers[origin];
    switch (op) {
    case IPC_OP_NOTE: {
        if (!pe->send)
            return false;
        struct port_token *t = carry_token(p, token, IPC_TOK_CLAIM);
        if (t) { /* its claim came first: the claimer holds it now */
            p->peers[t->node].send++;
            p->peers[t->node].waiting--;
            p->senders++;
            carry_token_remove(p, t);
            return true; /* port_run goes on with the claimer's */
        }
        t = carry_token(p, token, IPC_TOK_DROPPED);
        if (t) { /* destroyed before it was announced */
            carry_token_remove(p, t);
            return true;
        }
        carry_token_add(p, token, IPC_TOK_SEND, -1);
        p->transit++;
        return true;
    }
    case IPC_OP_CLAIM: {
        struct port_token *t = carry_token(p, token, IPC_TOK_SEND);
        if (t) {
            carry_token_remove(p, t);
            p->transit--;
            pe->send++;
            p->senders++;
            return true;
        }
        carry_token_add(p, token, IPC_TOK_CLAIM, origin);
        pe->waiting++;
        return true;
    }
    case IPC_OP_RELEASE:
        if (pe->send < arg)
            return false;
        pe->send -= (uint32_t)arg;
        p->senders -= arg;
        carry_check_no_senders(p);
        return true;
    case IPC_OP_DROP: {
        struct port_token *t = carry_token(p, token, IPC_TOK_SEND);
        if (t) {
            carry_token_remove(p, t);
            p->transit--;
            carry_check_no_senders(p);
        } else {
            carry_token_add(p, token, IPC_TOK_DROPPED, origin);
        }
        return true;
    }
    case IPC_OP_PULL:
        if (!p->in_transit || token != p->recv_token || origin != from)
            return false;
        port_migrate_out(p, origin, (uint32_t)arg);
        return true;
    case IPC_OP_DROP_RECV:
        if (!p->in_transit || token != p->recv_token)
            return false;
        p->in_transit = false;
        notify_port_dies(p);
        return true;
    }
    return false;
}
