/*
 * port.c — ports: the slot table that numbers them, and making them. It
 * keeps the description of seed 004's (NORMA IPC/DE) message protocol and
 * of port-queue flow control, which the other port files carry out:
 * port_send.c (the sender protocol), port_assembly.c (a message received
 * and assembled at the port's node), port_queue.c (turns, and the program
 * taking messages), port_flow.c (the sender's credits and accepts).
 *
 *   small (inline <= DSM_IPC_INLINE_MAX, no OOL):  SMALL ............ 1 message
 *   otherwise:   REQ  ->  (receiver reserves all memory)  GRANT(window 0, 1)
 *                KMSG + PAGEs of the granted windows  ->  GRANT(next) ...
 *
 * The receiver reserves every byte the message needs before it grants, so a
 * transfer never stalls half-way for memory, and it grants pages a window
 * (DSM_IPC_WINDOW pages) at a time, two windows ahead, into those buffers.
 * Seed 004's explicit "page copy done" and "receive done" messages are
 * implied here by the reliable FIFO transport: the receiver counts pages.
 *
 * Flow control: each sender may have at most queue_limit messages at a port
 * that the receiving program has not yet taken; a take sends an ACCEPT back
 * (message-accept notification), naming the sender's link (its flow) and
 * the message's number. The receiver also grants memory for large messages
 * only while the port holds fewer than queue_limit messages, counting those
 * already reserved, so reserved memory stays bounded however many nodes
 * send to it at once.
 *
 * Order and rights: a node numbers everything it addresses to a port,
 * messages and rights operations alike (struct ipc_dst's seq), and the port
 * handles each node's in that order (port_run), wherever they travelled: a
 * message may arrive early (a small one overtaking a large one still in
 * transfer, or one sent straight to a port's new node overtaking one the
 * old node forwards), and waits its turn. At its turn a message is put on
 * the queue only if its node holds a right to send it (carry.c); anything
 * else is refused with one line. A node's items also wait while a right it
 * claimed is not yet confirmed by the node that gave it (carry.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/log.h"
#include "ipc/ipc_state.h"

void port_need_started(void)
{
    if (!job()->nodes)
        log_fatal("dsm_startup must be called before using ports");
}

/* ---- slots -------------------------------------------------------------- */

/* Port numbers carry the slot's generation above its index, so that a
 * number kept after its port left or died does not name the port that
 * takes the slot next. */
#define SLOT_BITS 10
_Static_assert(IPC_MAX_SLOTS == 1u << SLOT_BITS, "a port number's slot field");
#define GEN_MASK ((1u << (31 - SLOT_BITS)) - 1)

int port_number(const struct port *p)
{
    return (int)(((p->gen & GEN_MASK) << SLOT_BITS) | (uint32_t)(p - ipc.ports));
}

/* The port a program's port number names, if this node holds its receive
 * right (and it is not in a message). */
struct port *port_of_number(int number)
{
    if (number < 0)
        return NULL;
    struct port *p = &ipc.ports[(uint32_t)number & (IPC_MAX_SLOTS - 1)];
    if (p->state == PORT_FREE || p->in_transit || p->doomed ||
        (p->gen & GEN_MASK) != (uint32_t)number >> SLOT_BITS)
        return NULL;
    return p;
}

struct port *port_here(uint32_t slot, uint64_t uid)
{
    if (slot < IPC_MAX_SLOTS && ipc.ports[slot].state != PORT_FREE && ipc.ports[slot].uid == uid)
        return &ipc.ports[slot];
    struct dir_rec *r = dir_find(uid);
    return r && r->state == DIR_LOCAL ? &ipc.ports[r->slot] : NULL;
}

struct port *port_new(uint64_t uid, uint32_t limit, enum port_state state)
{
    struct port *p = NULL;
    for (int i = 0; i < IPC_MAX_SLOTS && !p; i++)
        if (ipc.ports[i].state == PORT_FREE)
            p = &ipc.ports[i];
    if (!p)
        return NULL;
    struct port_peer *peers = calloc((size_t)job()->nodes, sizeof *peers);
    if (!peers)
        log_fatal("out of memory making a port");
    uint32_t gen = p->gen;
    memset(p, 0, sizeof *p);
    p->gen = gen;
    p->peers = peers;
    for (int i = 0; i < job()->nodes; i++)
        p->peers[i].next_seq = 1;
    p->uid = uid;
    p->limit = limit;
    p->state = (uint8_t)state;
    dir_put(uid, DIR_LOCAL, job()->rank, (uint32_t)(p - ipc.ports), 0);
    return p;
}

void port_free(struct port *p)
{
    for (struct port_token *t = p->tokens, *n; t; t = n) {
        n = t->next;
        free(t);
    }
    free(p->peers);
    free(p->arriving);
    uint32_t gen = p->gen + 1;
    memset(p, 0, sizeof *p);
    p->gen = gen;
}

static int port_make(const char *name, unsigned queue_limit, dsm_port_ref *recv)
{
    if (queue_limit < 1 || queue_limit > IPC_MAX_LIMIT)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    if (name)
        for (struct name_rec *n = ipc.names; n; n = n->next)
            if (!strcmp(n->name, name) && !ipc.links[right_at(n->entry)->link].dead) {
                pthread_mutex_unlock(&ipc.lock);
                return -EEXIST;
            }
    struct port *p = port_new(ipc_nonce(), queue_limit, PORT_LIVE);
    if (!p) {
        pthread_mutex_unlock(&ipc.lock);
        return -ENOSPC;
    }
    uint32_t slot = (uint32_t)(p - ipc.ports);
    uint32_t link = link_get(p->uid, job()->rank, slot, 0, queue_limit);
    uint32_t e = right_new(DSM_RIGHT_RECEIVE, link);
    if (!e) {
        port_free(p);
        pthread_mutex_unlock(&ipc.lock);
        return -ENOSPC;
    }
    right_at(e)->slot = (int32_t)slot;
    right_handle(e, recv);
    pthread_mutex_unlock(&ipc.lock);
    return 0;
}

int dsm_port_allocate(unsigned queue_limit, dsm_port_ref *recv)
{
    port_need_started();
    if (!recv)
        return -EINVAL;
    return port_make(NULL, queue_limit, recv);
}

int dsm_port_create(const char *name, unsigned queue_limit)
{
    port_need_started();
    if (!name || !name[0] || strlen(name) > DSM_PORT_NAME_MAX)
        return -EINVAL;
    dsm_port_ref recv;
    int rc = port_make(name, queue_limit, &recv);
    if (rc)
        return rc;
    rc = dsm_port_register(&recv, name);
    if (rc) { /* another thread registered the name meanwhile */
        dsm_port_release(&recv);
        return rc;
    }
    return recv.port;
}

int dsm_port_receive_right(int port, dsm_port_ref *recv)
{
    port_need_started();
    if (!recv)
        return -EINVAL;
    pthread_mutex_lock(&ipc.lock);
    struct port *p = port_of_number(port);
    int rc = -EINVAL;
    if (p)
        for (uint32_t i = 0; i < ipc.nrights; i++)
            if (ipc.rights[i].nonce && ipc.rights[i].kind == DSM_RIGHT_RECEIVE &&
                ipc.rights[i].slot == (int32_t)(p - ipc.ports)) {
                right_handle(i + 1, recv);
                rc = 0;
                break;
            }
    pthread_mutex_unlock(&ipc.lock);
    return rc;
}
