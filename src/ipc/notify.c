/*
 * notify.c — notifications (Mach's no-senders, dead-name and send-once),
 * and the death of ports.
 *
 * A notification is a message sent through a send-once right (flag
 * NOTIFY, data a struct dsm_notification), so it goes wherever that right
 * leads, port moves included, and never waits for queue space:
 *  - no-senders: the request lives with the port (and moves with it);
 *    sent when the port's send rights, held and in transit, are none
 *    (carry.c counts them);
 *  - dead name: the request lives with the holder's right; sent when the
 *    holder learns its port died: its node tells every node that holds
 *    send rights (DEAD) when it dies, every node when send-once rights to
 *    it are out, and anyone else who sends to it later;
 *  - send-once: a send-once right destroyed unused sends one through
 *    itself, to its own port.
 * A port dies when its receive right is released, when the message
 * carrying its receive right is destroyed, or when its node ends
 * (ipc_leave, from dsm_finish: a node that crashes ends the whole job).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/ipc_state.h"

/* Sends a notification through send-once right (link, token). */
static void send_notification(uint32_t link, uint64_t token, const struct dsm_notification *n)
{
    struct link *l = &ipc.links[link];
    if (l->dead)
        return;
    struct ipc_dst d = {.slot = l->slot, .flow = IPC_NO_FLOW,
                        .flags = IPC_MF_ONCE | IPC_MF_NOTIFY, .uid = l->uid, .seq = ++l->seq};
    struct ipc_small b = {.d = d};
    struct ipc_once_ext o = {.token = token};
    ipc_send4(l->node, IPC_SMALL, 0, &b, sizeof b, &o, sizeof o, n, sizeof *n);
    stats_add(STAT_IPC_NOTIFICATIONS, 1);
}

void notify_fire(struct notify_req *r, uint32_t kind, uint64_t count, uint64_t port_id,
                 const dsm_port_ref *right)
{
    if (!r->armed)
        return;
    r->armed = false;
    struct dsm_notification n = {.kind = kind, .cookie = r->cookie, .count = count,
                                 .port_id = port_id};
    if (right)
        n.right = *right;
    send_notification(r->link, r->token, &n);
}

void notify_once_destroyed(uint32_t link, uint64_t token)
{
    struct dsm_notification n = {.kind = DSM_NOTIFY_SEND_ONCE, .port_id = ipc.links[link].uid};
    send_notification(link, token, &n);
}

void notify_cancel(struct notify_req *r)
{
    if (!r->armed)
        return;
    r->armed = false;
    notify_once_destroyed(r->link, r->token);
}

/* The holder's side of a port's death: its rights become dead names. */
static void link_died(uint32_t li)
{
    struct link *l = &ipc.links[li];
    if (l->dead)
        return;
    l->dead = true;
    l->units = 0;
    for (uint32_t i = 0; i < ipc.nrights; i++) {
        struct right *e = &ipc.rights[i];
        if (!e->nonce || e->link != li || e->kind == DSM_RIGHT_RECEIVE || !e->dn.armed)
            continue;
        dsm_port_ref h;
        right_handle(i + 1, &h);
        notify_fire(&e->dn, DSM_NOTIFY_DEAD_NAME, 0, l->uid, &h);
    }
    names_forget_dead();
    ipc_notify(); /* senders waiting for queue space or an accept: it will not come */
}

void notify_on_dead(int src, uint64_t uid)
{
    (void)src;
    int li = link_find(uid);
    if (li >= 0)
        link_died((uint32_t)li);
    struct dir_rec *r = dir_find(uid);
    if (r && r->state == DIR_FORWARD)
        r->state = DIR_DEAD;
    /* A port coming here that died on the way (its pull found it gone). */
    if (r && r->state == DIR_LOCAL && ipc.ports[r->slot].state == PORT_ARRIVING)
        notify_port_dies(&ipc.ports[r->slot]);
}

static void destroy_msg(struct queued_msg *m)
{
    carry_destroy(m->rights, m->nrights);
    port_msg_free(m);
}

void notify_port_dies(struct port *p)
{
    uint64_t uid = p->uid;
    struct dir_rec *rec = dir_put(uid, DIR_DEAD, -1, 0, p->epoch);
    memcpy(rec->former, p->former, sizeof rec->former);
    /* Every node that holds a send right, or waits for one, learns it; and
     * every node at all while send-once rights are out (who holds one is
     * not the port's to know: they travel without a word to it). Copies in
     * transit learn it when claimed. */
    bool once_out = false;
    for (struct port_token *t = p->tokens; t && !once_out; t = t->next)
        once_out = t->kind == IPC_TOK_ONCE;
    for (int i = 0; i < job()->nodes; i++) {
        if (!p->peers[i].send && !p->peers[i].waiting && !once_out)
            continue;
        if (i == job()->rank) {
            notify_on_dead(i, uid);
        } else {
            struct ipc_loc l = {.uid = uid};
            ipc_send(i, IPC_PORT_OP, IPC_OP_DEAD, &l, sizeof l);
        }
    }
    int li = link_find(uid);
    if (li >= 0)
        link_died((uint32_t)li);
    for (struct queued_msg *m = p->head, *next; m; m = next) {
        next = m->next;
        destroy_msg(m);
    }
    for (struct port_item *it = p->items, *next; it; it = next) {
        next = it->next;
        if (it->msg)
            destroy_msg(it->msg);
        free(it);
    }
    for (uint32_t i = 0; p->arriving && i < p->nqueued; i++)
        if (p->arriving[i])
            destroy_msg(p->arriving[i]);
    if (p->ns.armed)
        notify_cancel(&p->ns);
    /* A receive right still naming it (a port that died on its way here)
     * names nothing now. */
    for (uint32_t i = 0; i < ipc.nrights; i++)
        if (ipc.rights[i].nonce && ipc.rights[i].kind == DSM_RIGHT_RECEIVE &&
            ipc.rights[i].slot == (int32_t)(p - ipc.ports))
            right_free(i + 1);
    /* Requests still to come in are received and dropped (port_assembly.c). */
    port_free(p);
    port_grant_orphans(uid);
}

void notify_dead_item(int origin, uint64_t uid, struct queued_msg *m, unsigned op, uint64_t token)
{
    (void)token;
    if (m)
        destroy_msg(m);
    /* Tell the node, unless what it sent was itself about the port's end. */
    if (op == IPC_OP_RELEASE || op == IPC_OP_DROP || op == IPC_OP_DROP_RECV)
        return;
    if (origin == job()->rank) {
        notify_on_dead(origin, uid);
        return;
    }
    struct ipc_loc l = {.uid = uid};
    ipc_send(origin, IPC_PORT_OP, IPC_OP_DEAD, &l, sizeof l);
}

int dsm_port_request_notification(const dsm_port_ref *right, int kind, const dsm_port_ref *notify,
                                  uint64_t cookie)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
    if (kind != DSM_NOTIFY_NO_SENDERS && kind != DSM_NOTIFY_DEAD_NAME)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct right *e, *ne;
    unsigned kinds = kind == DSM_NOTIFY_NO_SENDERS
                         ? 1u << DSM_RIGHT_RECEIVE
                         : 1u << DSM_RIGHT_SEND | 1u << DSM_RIGHT_SEND_ONCE;
    int rc = right_get(right, kinds, &e);
    if (!rc)
        rc = right_get(notify, 1u << DSM_RIGHT_RECEIVE | 1u << DSM_RIGHT_SEND_ONCE, &ne);
    /* A port may be its own notify port (made a send-once right to
     * itself); a send-once right cannot be moved into its own request. */
    if (!rc && right->name == notify->name && ne->kind == DSM_RIGHT_SEND_ONCE)
        rc = -EINVAL;
    if (rc) {
        pthread_mutex_unlock(&ipc.lock);
        return rc;
    }
    /* The send-once right the notification will go through. */
    struct notify_req r = {.armed = true, .cookie = cookie, .link = ne->link};
    if (ne->kind == DSM_RIGHT_RECEIVE) {
        r.token = carry_new_once_token(&ipc.ports[ne->slot]);
    } else {
        r.token = ne->token;
        right_free(notify->name);
    }
    if (kind == DSM_NOTIFY_NO_SENDERS) {
        struct port *p = &ipc.ports[e->slot];
        notify_cancel(&p->ns);
        p->ns = r;
        carry_check_no_senders(p);
    } else {
        notify_cancel(&e->dn);
        e->dn = r;
        if (ipc.links[e->link].dead)
            notify_fire(&e->dn, DSM_NOTIFY_DEAD_NAME, 0, ipc.links[e->link].uid, right);
    }
    pthread_mutex_unlock(&ipc.lock);
    return 0;
}

/* dsm_finish, before anything waits on another node: this node's ports
 * die (their holders get dead names) and its rights go back (no-senders
 * notifications elsewhere may follow). Receive rights in messages stay
 * pullable: the port is the message's, and this node keeps serving until
 * every node has finished. */
void ipc_leave(void)
{
    pthread_mutex_lock(&ipc.lock);
    for (uint32_t i = 0; i < ipc.nrights; i++) {
        struct right *e = &ipc.rights[i];
        if (!e->nonce)
            continue;
        uint32_t i1 = i + 1;
        switch (e->kind) {
        case DSM_RIGHT_RECEIVE: {
            struct port *p = &ipc.ports[e->slot];
            right_free(i1);
            if (p->state == PORT_ARRIVING)
                p->doomed = true;
            else
                notify_port_dies(p);
            break;
        }
        case DSM_RIGHT_SEND:
            e->urefs = 1;
            right_send_unref(i1);
            break;
        case DSM_RIGHT_SEND_ONCE: {
            uint32_t link = e->link;
            uint64_t token = e->token;
            if (e->dn.armed)
                notify_cancel(&e->dn);
            right_free(i1);
            notify_once_destroyed(link, token);
            break;
        }
        }
    }
    for (struct name_rec *n = ipc.names, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    ipc.names = NULL;
    pthread_mutex_unlock(&ipc.lock);
}
