/*
 * right.c — this node's rights: the table the program's handles name,
 * and the links (per port this node has rights to: where it lives, and
 * this node's numbered traffic to it).
 *
 * A handle (dsm_port_ref) is an entry's index + 1 and the entry's random
 * 64-bit nonce, drawn when the entry is made: a handle that names a free
 * entry, or one made again since (another nonce), is refused with -EPERM,
 * so a program can neither make one up nor keep using one whose right it
 * gave away. That protects the node's rights from its own program; other
 * nodes never see handles: a message names a right by the port's uid and
 * the node it comes from (authenticated by the transport), and the port
 * checks that node's holdings (carry.c).
 *
 * Like Mach, a node has one SEND entry per port, with user references
 * (looked up twice, the same handle with two references), a SEND_ONCE
 * entry per send-once right, and the RECEIVE entry of each port it holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "ipc/ipc_state.h"

#define RIGHTS_MAX (1u << 20)

static void need_started(void)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
}

/* ---- entries ----------------------------------------------------------- */

int right_get(const dsm_port_ref *ref, unsigned kinds, struct right **out)
{
    if (!ref || ref->name == 0 || ref->name > RIGHTS_MAX)
        return -EINVAL;
    if (ref->name > ipc.nrights)
        return -EPERM;
    struct right *e = right_at(ref->name);
    if (!e->nonce || e->nonce != ref->nonce)
        return -EPERM;
    if (!(kinds & (1u << e->kind)))
        return -EINVAL;
    *out = e;
    return 0;
}

uint32_t right_new(uint32_t kind, uint32_t link)
{
    if (!ipc.free_right) {
        if (ipc.nrights >= RIGHTS_MAX)
            return 0;
        uint32_t n = ipc.nrights ? ipc.nrights * 2 : 64;
        struct right *t = realloc(ipc.rights, n * sizeof *t);
        if (!t)
            log_fatal("out of memory growing the rights table to %u entries", n);
        memset(t + ipc.nrights, 0, (n - ipc.nrights) * sizeof *t);
        for (uint32_t i = n; i > ipc.nrights; i--) { /* free list in index order */
            t[i - 1].next_free = ipc.free_right;
            ipc.free_right = i;
        }
        ipc.rights = t;
        ipc.nrights = n;
    }
    uint32_t i1 = ipc.free_right;
    struct right *e = right_at(i1);
    ipc.free_right = e->next_free;
    memset(e, 0, sizeof *e);
    e->nonce = ipc_nonce();
    e->kind = kind;
    e->urefs = 1;
    e->link = link;
    e->slot = -1;
    return i1;
}

void right_free(uint32_t index1)
{
    struct right *e = right_at(index1);
    if (e->kind == DSM_RIGHT_SEND && ipc.links[e->link].send_entry == index1)
        ipc.links[e->link].send_entry = 0;
    memset(e, 0, sizeof *e);
    e->next_free = ipc.free_right;
    ipc.free_right = index1;
}

void right_handle(uint32_t index1, dsm_port_ref *out)
{
    const struct right *e = right_at(index1);
    const struct link *l = &ipc.links[e->link];
    memset(out, 0, sizeof *out);
    out->node = e->kind == DSM_RIGHT_RECEIVE ? job()->rank : l->node;
    out->port = -1;
    if (e->kind == DSM_RIGHT_RECEIVE)
        out->port = port_number(&ipc.ports[e->slot]);
    out->queue_limit = l->limit;
    out->kind = e->kind;
    out->id = l->uid;
    out->name = index1;
    out->nonce = e->nonce;
}

/* ---- links -------------------------------------------------------------- */

int link_find(uint64_t uid)
{
    for (uint32_t i = 0; i < ipc.nlinks; i++)
        if (ipc.links[i].uid == uid)
            return (int)i;
    return -1;
}

uint32_t link_get(uint64_t uid, int node, uint32_t slot, uint64_t epoch, uint32_t limit)
{
    int found = link_find(uid);
    if (found >= 0) {
        struct link *l = &ipc.links[found];
        if (epoch > l->epoch) {
            l->node = node;
            l->slot = slot;
            l->epoch = epoch;
        }
        return (uint32_t)found;
    }
    uint32_t i = 0;
    while (i < ipc.nlinks && ipc.links[i].uid)
        i++;
    if (i == ipc.nlinks) {
        if (ipc.nlinks >= IPC_NO_FLOW)
            log_fatal("this node has rights to %u ports, the most it can hold (give some up: "
                      "dsm_port_release)", ipc.nlinks);
        uint32_t n = ipc.nlinks ? ipc.nlinks * 2 : 64;
        if (n > IPC_NO_FLOW)
            n = IPC_NO_FLOW;
        struct link *t = realloc(ipc.links, n * sizeof *t);
        if (!t)
            log_fatal("out of memory growing the port links to %u", n);
        memset(t + ipc.nlinks, 0, (n - ipc.nlinks) * sizeof *t);
        ipc.links = t;
        ipc.nlinks = n;
    }
    struct link *l = &ipc.links[i];
    memset(l, 0, sizeof *l);
    l->uid = uid;
    l->node = node;
    l->slot = slot;
    l->epoch = epoch;
    l->limit = limit;
    ipc.used_links++;
    return i;
}

uint32_t link_send_entry(uint32_t link)
{
    struct link *l = &ipc.links[link];
    if (!l->send_entry) {
        uint32_t e = right_new(DSM_RIGHT_SEND, link);
        if (!e)
            log_fatal("this node's rights table is full (%u rights)", RIGHTS_MAX);
        right_at(e)->urefs = 0;
        l->send_entry = e;
    }
    return l->send_entry;
}

void link_op_at(uint32_t link, int node, uint32_t slot, unsigned op, uint64_t token, uint64_t arg)
{
    struct link *l = &ipc.links[link];
    bool numbered = op != IPC_OP_PULL && op != IPC_OP_DROP_RECV;
    struct ipc_op b = {.d = {.slot = slot, .flow = IPC_NO_FLOW, .uid = l->uid,
                             .seq = numbered ? ++l->seq : 0},
                       .token = token, .arg = arg};
    ipc_send(node, IPC_PORT_OP, op, &b, sizeof b);
}

void link_op(uint32_t link, unsigned op, uint64_t token, uint64_t arg)
{
    struct link *l = &ipc.links[link];
    link_op_at(link, l->node, l->slot, op, token, arg);
}

void right_send_unref(uint32_t index1)
{
    struct right *e = right_at(index1);
    if (e->urefs > 1) {
        e->urefs--;
        return;
    }
    struct link *l = &ipc.links[e->link];
    if (e->dn.armed)
        notify_cancel(&e->dn);
    uint32_t link = e->link;
    right_free(index1);
    if (!l->dead && l->units) {
        uint32_t units = l->units;
        l->units = 0;
        link_op(link, IPC_OP_RELEASE, 0, units);
    }
}

/* ---- the program's calls ----------------------------------------------- */

int dsm_port_make_send(const dsm_port_ref *recv, dsm_port_ref *send)
{
    need_started();
    if (!send)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc = right_get(recv, 1u << DSM_RIGHT_RECEIVE, &e);
    if (!rc) {
        struct port *p = &ipc.ports[e->slot];
        uint32_t link = e->link;
        uint32_t s = link_send_entry(link);
        struct right *se = right_at(s);
        if (se->urefs == 0) {
            /* The port counts the new right as this node's; a node that
             * already has one only adds a reference. (The program holds
             * a receive right only once its port is here: LIVE.) */
            p->peers[job()->rank].send++;
            p->senders++;
            p->mscount++;
            ipc.links[link].units++;
        }
        se->urefs++;
        right_handle(s, send);
    }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

int dsm_port_make_send_once(const dsm_port_ref *recv, dsm_port_ref *once)
{
    need_started();
    if (!once)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc = right_get(recv, 1u << DSM_RIGHT_RECEIVE, &e);
    if (!rc) {
        uint32_t link = e->link;
        uint64_t token = carry_new_once_token(&ipc.ports[e->slot]);
        uint32_t o = right_new(DSM_RIGHT_SEND_ONCE, link);
        if (!o) {
            rc = -ENOSPC;
        } else {
            right_at(o)->token = token;
            right_handle(o, once);
        }
    }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}

int dsm_port_release(const dsm_port_ref *right)
{
    need_started();
    pthread_mutex_lock(&ipc.lock);
    struct right *e;
    int rc = right_get(right, 1u << DSM_RIGHT_RECEIVE | 1u << DSM_RIGHT_SEND |
                                  1u << DSM_RIGHT_SEND_ONCE, &e);
    if (!rc) {
        uint32_t i1 = right->name;
        switch (e->kind) {
        case DSM_RIGHT_SEND:
            right_send_unref(i1);
            break;
        case DSM_RIGHT_SEND_ONCE: {
            uint32_t link = e->link;
            uint64_t token = e->token;
            if (e->dn.armed)
                notify_cancel(&e->dn);
            right_free(i1);
            if (!ipc.links[link].dead)
                notify_once_destroyed(link, token);
            break;
        }
        case DSM_RIGHT_RECEIVE: {
            struct port *p = &ipc.ports[e->slot];
            right_free(i1);
            if (p->state == PORT_ARRIVING)
                p->doomed = true; /* it dies once it is here */
            else
                notify_port_dies(p);
            break;
        }
        }
    }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}
