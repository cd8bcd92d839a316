/*
 * port_migrate.c — ports that move with their receive right (NORMA IPC's
 * port migration, after Mach 3's norma/ipc_migrate.c: the new node pulls
 * the port, and the old one becomes a forwarder). Pages' homes move in
 * coherence (coherence/migrate.c).
 *
 *   holder R puts the receive right in a message (carry.c: in transit; the
 *   port stays at R and keeps queueing)
 *   node D takes that message: makes the port here, ARRIVING, and sends
 *   R a PULL (in D's order for the port)
 *   R, at the PULL's turn: sends D the port's state (MIGRATE), then every
 *   message of its queue (forwarded, QUEUED: they keep their place), then
 *   what waited its turn; requests not yet granted go on to D, which
 *   grants their senders; from then on R forwards whatever reaches it
 *   for the port to D, and tells each sender once (REDIRECT) where the
 *   port is now
 *   D, once the state and the queued messages are in: LIVE, and handles
 *   the rest in each node's order.
 *
 * The PULL itself is not numbered in the taker's order: the port's queue
 * may be full, with nobody to take from it until the port moves, and a
 * large message of the taker's own, ahead of the PULL, may be waiting for
 * room to be granted: in order, the PULL would wait for ever. What the
 * taker sent before it goes to the new node anyway (the items waiting
 * here are forwarded, requests not yet granted go on), numbered. A
 * receive right destroyed in transit (DROP_RECV) likewise.
 *
 * Nothing is lost or duplicated: a sender's messages and operations are
 * numbered (port.c), so one forwarded by R and a later one the sender
 * sent straight to D are put in order at D; the queued ones were counted
 * once at R and are put first. A forward is believed only from a node the
 * port lived at (`former`), so no node can speak for another through it.
 * Senders' rights keep working throughout: their units move with the
 * state, and R's forwarding covers the time until they learn.
 */
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stats.h"
#include "ipc/ipc_state.h"

static bool bit(const uint8_t *map, int i) { return map[i / 8] & (1u << (i % 8)); }
static void set_bit(uint8_t *map, int i) { map[i / 8] |= (uint8_t)(1u << (i % 8)); }

bool port_migrate_trusts(uint64_t uid, int from)
{
    struct dir_rec *r = dir_find(uid);
    if (!r)
        return false;
    if (r->state == DIR_LOCAL)
        return bit(ipc.ports[r->slot].former, from);
    return bit(r->former, from);
}

/* Tells a node once that the port lives elsewhere now. */
static void redirect(struct dir_rec *r, int origin)
{
    if (origin == job()->rank || origin == r->node || bit(r->told, origin))
        return;
    set_bit(r->told, origin);
    struct ipc_loc l = {.uid = r->uid, .node = r->node, .slot = r->slot, .epoch = r->epoch};
    ipc_send(origin, IPC_PORT_OP, IPC_OP_REDIRECT, &l, sizeof l);
}

static void forward_op(struct route_item *it, struct dir_rec *r)
{
    struct ipc_op b = {.d = {.slot = r->slot, .flow = IPC_NO_FLOW, .flags = IPC_MF_FWD,
                             .uid = r->uid, .seq = it->d.seq},
                       .token = it->token, .arg = it->arg};
    struct ipc_fwd_ext fwd = {.origin = it->origin, .provider = it->origin};
    ipc_send3(r->node, IPC_PORT_OP, it->op, &b, sizeof b, &fwd, sizeof fwd);
    stats_add(STAT_IPC_FORWARDED, 1);
}

void port_migrate_route(struct route_item *it)
{
    const struct ipc_dst *d = &it->d;
    bool fwd = d->flags & IPC_MF_FWD;
    if (fwd && !it->trusted && !port_migrate_trusts(d->uid, it->from)) {
        ipc_refuse("node %d forwarded for port %016llx, which never lived there; refused",
                   it->from, (unsigned long long)d->uid);
        if (it->msg)
            port_msg_free(it->msg);
        return;
    }
    struct port *p = port_here(d->slot, d->uid);
    if (p) {
        if (d->flags & IPC_MF_QUEUED) {
            if (p->state != PORT_ARRIVING || (!it->trusted && it->from != p->came_from) ||
                !it->msg)
                log_fatal("node %d sent a queued message of port %016llx out of its move; "
                          "protocol error", it->from, (unsigned long long)d->uid);
            port_migrate_arrived_queued(p, it->msg, it->fwd.queued_index, it->fwd.queued_count);
            return;
        }
        if (!d->seq && p->state == PORT_LIVE) { /* PULL, DROP_RECV: not in any order */
            if (!carry_apply(p, it->origin, it->from, it->op, it->token, it->arg))
                ipc_refuse("node %d sent port %016llx a %s it holds no right for; refused",
                           it->origin, (unsigned long long)d->uid, ipc_op_name(it->op));
            return;
        }
        /* Its turn, and nothing waits: handled at once (the common case). */
        struct port_peer *pe = &p->peers[it->origin];
        if (p->state == PORT_LIVE && !p->items && d->seq == pe->next_seq && !pe->waiting) {
            pe->next_seq++;
            port_take_turn(p, it->origin, it->from, it->msg, it->op, it->token, it->arg);
            port_run(p);
            return;
        }
        struct port_item *item = calloc(1, sizeof *item);
        if (!item)
            log_fatal("out of memory queueing for a port");
        item->origin = it->origin;
        item->from = it->from;
        item->seq = d->seq;
        item->msg = it->msg;
        item->op = it->op;
        item->token = it->token;
        item->arg = it->arg;
        item->next = p->items;
        p->items = item;
        port_run(p);
        return;
    }
    struct dir_rec *r = dir_find(d->uid);
    if (r && r->state == DIR_FORWARD) {
        if (it->msg) {
            it->msg->src = it->origin;
            port_forward_msg(it->msg, d->uid, r->node, r->slot, false, 0, 0);
        } else {
            forward_op(it, r);
        }
        redirect(r, it->origin);
        return;
    }
    if (r && r->state == DIR_DEAD) {
        notify_dead_item(it->origin, d->uid, it->msg, it->op, it->token);
        return;
    }
    ipc_refuse("node %d sent %s to port %016llx, which never lived here; refused", it->from,
               it->msg ? "a message" : "a rights operation", (unsigned long long)d->uid);
    if (it->msg)
        port_msg_free(it->msg);
}

/* A request (the body parsed) sent on to where the port lives now: its
 * provider keeps the data and is granted from there. */
static void forward_req(int node, uint32_t slot, struct ipc_dst d, const struct ipc_fwd_ext *fwd,
                        const struct ipc_call_ext *call, uint64_t once_token,
                        const struct ipc_wire_right *rights, uint32_t nrights,
                        const struct ipc_req *req, const uint64_t *lens)
{
    d.slot = slot;
    d.flags |= IPC_MF_FWD;
    if (call->reply_token)
        d.flags |= IPC_MF_CALL;
    if (nrights)
        d.flags |= IPC_MF_RIGHTS;
    size_t ext_len = ipc_ext_size(d.flags, nrights);
    unsigned char *ext = malloc(ext_len);
    if (!ext)
        log_fatal("out of memory forwarding a request");
    ipc_ext_write(ext, d.flags, call, fwd, once_token, rights, nrights);
    struct ipc_req b = *req;
    b.d = d;
    ipc_send4(node, IPC_REQ, 0, &b, sizeof b, ext, ext_len, lens, b.nool * sizeof(uint64_t));
    free(ext);
    stats_add(STAT_IPC_FORWARDED, 1);
}

void port_migrate_forward_parsed_req(struct route_item *it, const struct ipc_parsed *p,
                                struct dir_rec *r)
{
    struct ipc_fwd_ext fwd = p->fwd;
    fwd.origin = it->origin;
    fwd.provider = it->provider;
    struct ipc_wire_right rights[IPC_MAX_RIGHTS];
    memcpy(rights, p->rights, p->nrights * sizeof *rights);
    uint64_t lens[IPC_MAX_OOL];
    memcpy(lens, p->data, p->req.nool * sizeof *lens);
    forward_req(r->node, r->slot, p->d, &fwd, &p->call, p->once_token, rights, p->nrights,
                &p->req, lens);
    redirect(r, it->origin);
}

/* A request the port's former node recorded and never granted: on to the
 * port's new node, and the record goes. */
static void forward_reservation(struct reservation *res, int node, uint32_t slot)
{
    struct queued_msg *m = res->msg;
    struct ipc_dst d = {.slot = slot, .flow = m->flow, .flags = res->flags & ~IPC_MF_FWD,
                        .uid = res->uid, .seq = m->seq};
    struct ipc_fwd_ext fwd = res->fwd;
    fwd.origin = m->src;
    fwd.provider = res->provider;
    struct ipc_call_ext call = {.reply_token = m->reply_token, .reply_cap = m->reply_cap};
    struct ipc_req req = {.nool = m->nool, .xfer = res->xfer, .inline_len = m->len};
    forward_req(node, slot, d, &fwd, &call, m->once_token, m->rights, m->nrights, &req,
                res->ool_len);
    port_unlink_reservation(res);
    port_msg_free(m);
    free(res);
}

void port_migrate_out(struct port *p, int node, uint32_t slot)
{
    uint64_t uid = p->uid;
    uint64_t epoch = p->epoch + 1;
    int nodes = job()->nodes;
    uint32_t ntokens = 0;
    for (struct port_token *t = p->tokens; t; t = t->next)
        ntokens++;
    set_bit(p->former, job()->rank);

    /* 1. The state. */
    struct ipc_migrate m = {.uid = uid, .slot = slot, .limit = p->limit, .epoch = epoch,
                            .mscount = p->mscount, .transit = p->transit,
                            .nodes = (uint32_t)nodes, .ntokens = ntokens, .nqueued = p->queued};
    memcpy(m.former, p->former, sizeof m.former);
    if (p->ns.armed) {
        struct link *l = &ipc.links[p->ns.link];
        m.flags |= IPC_MIG_NS_ARMED;
        m.ns_cookie = p->ns.cookie;
        m.ns_right = (struct ipc_wire_right){.uid = l->uid, .token = p->ns.token, .node = l->node,
                                             .slot = l->slot, .kind = IPC_WR_ONCE,
                                             .limit = l->limit, .epoch = l->epoch};
        p->ns.armed = false; /* it moves: not destroyed here */
    }
    size_t peers_len = (size_t)nodes * sizeof(struct ipc_migrate_peer);
    size_t tok_len = (size_t)ntokens * sizeof(struct ipc_migrate_token);
    unsigned char *rest = malloc(peers_len + tok_len + 1);
    if (!rest)
        log_fatal("out of memory moving a port");
    for (int i = 0; i < nodes; i++) {
        struct ipc_migrate_peer pe = {.next_seq = p->peers[i].next_seq, .enq = p->peers[i].enq,
                                      .send = p->peers[i].send, .waiting = p->peers[i].waiting};
        memcpy(rest + (size_t)i * sizeof pe, &pe, sizeof pe);
    }
    uint32_t k = 0;
    for (struct port_token *t = p->tokens; t; t = t->next, k++) {
        struct ipc_migrate_token mt = {.token = t->token, .kind = t->kind, .node = t->node};
        memcpy(rest + peers_len + (size_t)k * sizeof mt, &mt, sizeof mt);
    }
    ipc_send3(node, IPC_PORT_OP, IPC_OP_MIGRATE, &m, sizeof m, rest, peers_len + tok_len);
    free(rest);

    /* 2. This node forwards from now on, and its own links follow. */
    struct dir_rec *r = dir_put(uid, DIR_FORWARD, node, slot, epoch);
    memcpy(r->former, p->former, sizeof r->former);
    int li = link_find(uid);
    if (li >= 0) {
        ipc.links[li].node = node;
        ipc.links[li].slot = slot;
        ipc.links[li].epoch = epoch;
    }

    /* 3. The queue, in its order, keeping each message's place. */
    uint32_t count = p->queued, index = 0;
    for (struct queued_msg *q = p->head, *next; q; q = next, index++) {
        next = q->next;
        port_forward_msg(q, uid, node, slot, true, index, count);
    }
    p->head = p->tail = NULL;
    p->queued = 0;

    /* 4. What waited its turn: on, in any order (it is numbered). */
    for (struct port_item *it = p->items, *next; it; it = next) {
        next = it->next;
        if (it->msg) {
            port_forward_msg(it->msg, uid, node, slot, false, 0, 0);
        } else {
            struct route_item ri = {.origin = it->origin, .d = {.seq = it->seq}, .op = it->op,
                                    .token = it->token, .arg = it->arg};
            forward_op(&ri, r);
        }
        free(it);
    }
    p->items = NULL;

    /* 5. Requests: those not granted go on; granted ones finish here and
     * their message follows (port_assembly.c, maybe_complete). */
    for (struct reservation *res = ipc.reservations, *next; res; res = next) {
        next = res->next;
        if (res->uid == uid && !res->reserved)
            forward_reservation(res, node, slot);
    }
    port_free(p);
    stats_add(STAT_IPC_PORTS_MOVED, 1);
}

static void go_live(struct port *p)
{
    for (uint32_t i = 0; i < p->nqueued; i++)
        port_append(p, p->arriving[i]);
    free(p->arriving);
    p->arriving = NULL;
    p->state = PORT_LIVE;
    ipc_notify(); /* the program waits for its receive right to arrive */
    if (p->doomed) {
        notify_port_dies(p);
        return;
    }
    carry_check_no_senders(p);
    port_grant_waiting(p);
    port_run(p);
}

void port_migrate_arrived_queued(struct port *p, struct queued_msg *m, uint32_t index, uint32_t count)
{
    if (!p->state_got || count != p->nqueued || index >= count || p->arriving[index])
        log_fatal("node %d moved message %u of %u of port %016llx, which does not fit its state; "
                  "protocol error", p->came_from, index, count, (unsigned long long)p->uid);
    p->arriving[index] = m;
    if (++p->queued_got == p->nqueued)
        go_live(p);
}

void port_migrate_on_state(int src, const void *body, size_t len)
{
    const char *bad = ipc_migrate_check(body, len);
    if (bad)
        log_fatal("node %d sent %s; protocol error", src, bad);
    struct ipc_migrate m;
    memcpy(&m, body, sizeof m);
    struct port *p = port_here(m.slot, m.uid);
    if (!p || p->state != PORT_ARRIVING || p->state_got || p->came_from != src ||
        m.nodes != (uint32_t)job()->nodes)
        log_fatal("node %d sent the state of port %016llx, which is not coming here from it; "
                  "protocol error", src, (unsigned long long)m.uid);
    const unsigned char *rest = (const unsigned char *)body + sizeof m;
    for (uint32_t i = 0; i < m.nodes; i++) {
        struct ipc_migrate_peer pe;
        memcpy(&pe, rest + i * sizeof pe, sizeof pe);
        p->peers[i] = (struct port_peer){.next_seq = pe.next_seq, .enq = pe.enq,
                                         .send = pe.send, .waiting = pe.waiting};
        p->senders += pe.send;
    }
    rest += (size_t)m.nodes * sizeof(struct ipc_migrate_peer);
    for (uint32_t i = 0; i < m.ntokens; i++) {
        struct ipc_migrate_token mt;
        memcpy(&mt, rest + i * sizeof mt, sizeof mt);
        carry_token_add(p, mt.token, mt.kind, mt.node);
    }
    p->limit = m.limit;
    p->epoch = m.epoch;
    p->mscount = m.mscount;
    p->transit = m.transit;
    memcpy(p->former, m.former, sizeof p->former);
    if (m.flags & IPC_MIG_NS_ARMED) {
        const struct ipc_wire_right *w = &m.ns_right;
        p->ns = (struct notify_req){.armed = true, .cookie = m.ns_cookie, .token = w->token,
                                    .link = link_get(w->uid, w->node, w->slot, w->epoch,
                                                     w->limit)};
    }
    p->state_got = true;
    p->nqueued = m.nqueued;
    if (m.nqueued) {
        p->arriving = calloc(m.nqueued, sizeof *p->arriving);
        if (!p->arriving)
            log_fatal("out of memory receiving a port's %u queued messages", m.nqueued);
    } else {
        go_live(p);
    }
}

void port_migrate_on_redirect(int src, const struct ipc_loc *l)
{
    (void)src;
    int li = link_find(l->uid);
    if (li < 0)
        return;
    struct link *k = &ipc.links[li];
    if (l->epoch > k->epoch && !k->dead) {
        k->node = l->node;
        k->slot = l->slot;
        k->epoch = l->epoch;
    }
}
