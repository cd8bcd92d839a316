/*
 * Port rights are unforgeable, at the API and on the wire.
 *  - At the API: a handle made up (any name, any nonce), a real one with
 *    another nonce, one whose right was released, moved away in a
 *    message (send, send-once, receive), or used up (a send-once right
 *    after its message) is refused with -EPERM; a handle of the wrong
 *    kind, or no handle, with -EINVAL; a port number whose receive right
 *    left no longer receives.
 *  - On the wire: node 1 learns node 0's unregistered port's identity and
 *    slot as plain data, holds no right to it, and puts datagrams on the
 *    wire as the port protocol would (a message, a send-once message with
 *    a made-up token, a note giving away a right it lacks, a release of
 *    rights it never had, a forward on another node's behalf): node 0
 *    refuses each (counted, one line each), delivers none, and the port
 *    keeps working for the nodes that hold rights. A claim of a made-up
 *    token gives node 1 nothing: its message after it is never delivered.
 * Then the rights that are legitimately given work: a send right and a
 * send-once right made from the receive right, sent to every node, used
 * once each (the send-once right's message carries no sequence number).
 */
#include <errno.h>

#include "base/stats.h"
#include "ipc/ipc_state.h"
#include "mp_util.h"

struct setup { uint64_t id; int32_t slot; int32_t pad; };

static dsm_port_ref lookup_inbox(int node)
{
    dsm_port_ref r;
    MP_CHECK(dsm_port_lookup(node, "inbox", 60, &r) == 0, "lookup of node %d's inbox", node);
    return r;
}

static struct dsm_msg take(int port)
{
    struct dsm_msg m;
    int rc = dsm_msg_recv(port, &m, 60);
    MP_CHECK(rc == 0, "receive: %d", rc);
    return m;
}

/* The datagrams a node that holds no right would have to send. */
static void forge(const struct setup *s)
{
    struct ipc_dst d = {.slot = (uint32_t)s->slot, .flow = 5, .uid = s->id, .seq = 1};
    struct ipc_small b = {.d = d};
    const char text[] = "forged";
    ipc_send3(0, IPC_SMALL, 0, &b, sizeof b, text, sizeof text);

    /* Through a send-once right it never got. */
    b.d.seq = 2;
    b.d.flow = IPC_NO_FLOW;
    b.d.flags = IPC_MF_ONCE;
    struct ipc_once_ext once = {.token = 0x5eed5eed5eedull};
    ipc_send4(0, IPC_SMALL, 0, &b, sizeof b, &once, sizeof once, text, sizeof text);

    /* Gives away a copy of a send right it does not hold, and gives back
     * rights it never had. */
    struct ipc_op op = {.d = {.slot = d.slot, .flow = IPC_NO_FLOW, .uid = d.uid, .seq = 3},
                        .token = 77};
    ipc_send(0, IPC_PORT_OP, IPC_OP_NOTE, &op, sizeof op);
    op.d.seq = 4;
    op.token = 0;
    op.arg = 5;
    ipc_send(0, IPC_PORT_OP, IPC_OP_RELEASE, &op, sizeof op);

    /* Speaks for node 0 as if the port had lived here and moved on. */
    struct ipc_small f = {.d = {.slot = d.slot, .flow = 5, .flags = IPC_MF_FWD, .uid = d.uid,
                                .seq = 1}};
    struct ipc_fwd_ext fwd = {.origin = 0, .provider = 0};
    ipc_send4(0, IPC_SMALL, 0, &f, sizeof f, &fwd, sizeof fwd, text, sizeof text);

    /* Claims a copy nobody gave: its next message waits for ever. */
    op.d.seq = 5;
    op.token = 0xc1a1c1a1ull;
    op.arg = 0;
    ipc_send(0, IPC_PORT_OP, IPC_OP_CLAIM, &op, sizeof op);
    b.d = (struct ipc_dst){.slot = d.slot, .flow = 5, .uid = d.uid, .seq = 6};
    ipc_send3(0, IPC_SMALL, 0, &b, sizeof b, text, sizeof text);
}

static void api_refusals(int inbox, int me, int n)
{
    dsm_port_ref recv, send, once, made_up;
    MP_CHECK(dsm_port_allocate(4, &recv) == 0, "allocate");
    MP_CHECK(recv.kind == DSM_RIGHT_RECEIVE && recv.port >= 0 && recv.id, "a receive right");
    MP_CHECK(dsm_port_make_send(&recv, &send) == 0 && send.kind == DSM_RIGHT_SEND, "make send");
    MP_CHECK(send.id == recv.id && send.port == -1, "the same port, no port number");

    /* Made up: any name, any nonce; a real name with another nonce. */
    uint64_t rng = 0x1234 + (uint64_t)me;
    for (int i = 0; i < 1000; i++) {
        memset(&made_up, 0, sizeof made_up);
        made_up.name = 1 + (uint32_t)(mp_rand(&rng) % 4096);
        made_up.nonce = mp_rand(&rng);
        MP_CHECK(dsm_msg_send(&made_up, "x", 1, NULL, 0, 1, NULL) == -EPERM, "made-up handle %d", i);
    }
    made_up = send;
    made_up.nonce ^= 1;
    MP_CHECK(dsm_msg_send(&made_up, "x", 1, NULL, 0, 1, NULL) == -EPERM, "another nonce");
    MP_CHECK(dsm_port_make_send(&made_up, &once) == -EPERM, "another nonce");
    memset(&made_up, 0, sizeof made_up);
    MP_CHECK(dsm_msg_send(&made_up, "x", 1, NULL, 0, 1, NULL) == -EINVAL, "no handle");
    MP_CHECK(dsm_msg_send(NULL, "x", 1, NULL, 0, 1, NULL) == -EINVAL, "NULL");
    /* The wrong kind. */
    MP_CHECK(dsm_msg_send(&recv, "x", 1, NULL, 0, 1, NULL) == -EINVAL, "send through a receive right");
    MP_CHECK(dsm_port_make_send(&send, &once) == -EINVAL, "make from a send right");
    MP_CHECK(dsm_port_request_notification(&send, DSM_NOTIFY_NO_SENDERS, &recv, 1) == -EINVAL,
             "no-senders on a send right");
    MP_CHECK(dsm_port_request_notification(&recv, 99, &recv, 1) == -EINVAL, "unknown kind");

    /* Released: the last reference revokes the handle. */
    dsm_port_ref send2;
    MP_CHECK(dsm_port_make_send(&recv, &send2) == 0 && send2.name == send.name, "one entry per port");
    MP_CHECK(dsm_port_release(&send2) == 0, "release one reference");
    MP_CHECK(dsm_msg_send(&send, "a", 1, NULL, 0, 1, NULL) == 0, "still one reference");
    MP_CHECK(dsm_port_release(&send) == 0, "release the last");
    MP_CHECK(dsm_msg_send(&send, "x", 1, NULL, 0, 1, NULL) == -EPERM, "released");
    MP_CHECK(dsm_port_release(&send) == -EPERM, "released twice");

    /* Used up: a send-once right after its message. */
    MP_CHECK(dsm_port_make_send_once(&recv, &once) == 0 && once.kind == DSM_RIGHT_SEND_ONCE, "once");
    uint64_t seq = 99;
    MP_CHECK(dsm_msg_send(&once, "b", 1, NULL, 0, 1, &seq) == 0 && seq == 0, "through send-once");
    MP_CHECK(dsm_msg_send(&once, "x", 1, NULL, 0, 1, NULL) == -EPERM, "a send-once right twice");
    struct dsm_msg m = take(recv.port);
    MP_CHECK(m.len == 1 && ((char *)m.data)[0] == 'a' && m.seq == 1 && m.src_node == me, "a");
    dsm_msg_free(&m);
    m = take(recv.port);
    MP_CHECK(m.len == 1 && ((char *)m.data)[0] == 'b' && m.seq == 0 && !m.notification, "b");
    dsm_msg_free(&m);

    /* Moved away: send, send-once and receive rights in one message to
     * the next node, whose program gets them. */
    MP_CHECK(dsm_port_make_send(&recv, &send) == 0, "make send");
    MP_CHECK(dsm_port_make_send_once(&recv, &once) == 0, "make send-once");
    dsm_port_ref next = lookup_inbox((me + 1) % n);
    struct dsm_msg_right give[3] = {{&send, DSM_MOVE_SEND}, {&once, DSM_MOVE_SEND_ONCE},
                                    {&recv, DSM_MOVE_RECEIVE}};
    int number = recv.port;
    /* A message cannot carry the receive right of its own port, nor one
     * right twice; nothing is taken when it is refused. */
    struct dsm_msg_right twice[2] = {{&once, DSM_MOVE_SEND_ONCE}, {&once, DSM_MOVE_SEND_ONCE}};
    MP_CHECK(dsm_msg_send_rights(&next, "r", 1, NULL, 0, twice, 2, 30, NULL) == -EINVAL, "twice");
    struct dsm_msg_right bad = {&recv, 42};
    MP_CHECK(dsm_msg_send_rights(&next, "r", 1, NULL, 0, &bad, 1, 30, NULL) == -EINVAL,
             "unknown disposition");
    MP_CHECK(dsm_msg_send_rights(&send, "r", 1, NULL, 0, &give[2], 1, 30, NULL) == -EINVAL,
             "a port inside its own queue");
    MP_CHECK(dsm_msg_send_rights(&next, "r", 1, NULL, 0, give, 3, 30, NULL) == 0, "move three");
    MP_CHECK(dsm_msg_send(&send, "x", 1, NULL, 0, 1, NULL) == -EPERM, "moved send");
    MP_CHECK(dsm_msg_send(&once, "x", 1, NULL, 0, 1, NULL) == -EPERM, "moved send-once");
    MP_CHECK(dsm_port_make_send(&recv, &send2) == -EPERM, "moved receive");
    MP_CHECK(dsm_msg_recv(number, &m, 0.01) == -EINVAL, "a port number whose right left");

    /* The previous node's three rights arrive here: all of one port. */
    m = take(inbox);
    int from = (me + n - 1) % n;
    MP_CHECK(m.src_node == from && m.nrights == 3, "three rights from node %d: %d", from, m.nrights);
    MP_CHECK(m.rights[0].kind == DSM_RIGHT_SEND && m.rights[1].kind == DSM_RIGHT_SEND_ONCE &&
             m.rights[2].kind == DSM_RIGHT_RECEIVE, "kinds");
    MP_CHECK(m.rights[0].id == m.rights[2].id && m.rights[1].id == m.rights[2].id, "one port");
    dsm_port_ref got_send = m.rights[0], got_once = m.rights[1], got_recv = m.rights[2];
    dsm_msg_free(&m);
    MP_CHECK(dsm_msg_send(&got_send, "c", 1, NULL, 0, 30, NULL) == 0, "send through it");
    MP_CHECK(dsm_msg_send(&got_once, "d", 1, NULL, 0, 30, NULL) == 0, "send-once through it");
    m = take(got_recv.port);
    MP_CHECK(((char *)m.data)[0] == 'c' && m.src_node == me, "c");
    dsm_msg_free(&m);
    m = take(got_recv.port);
    MP_CHECK(((char *)m.data)[0] == 'd' && m.seq == 0, "d");
    dsm_msg_free(&m);
    MP_CHECK(dsm_port_release(&got_send) == 0 && dsm_port_release(&got_recv) == 0, "release");
    MP_CHECK(dsm_msg_send(&got_send, "x", 1, NULL, 0, 1, NULL) == -EPERM, "released");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int inbox = dsm_port_create("inbox", 16);
    MP_CHECK(inbox >= 0, "inbox");
    api_refusals(inbox, me, n);
    dsm_barrier();

    /* Node 0's port, named nowhere; node 1 learns what it is, as data. */
    if (me == 0) {
        dsm_port_ref victim, send, once;
        MP_CHECK(dsm_port_allocate(8, &victim) == 0, "victim port");
        struct setup s = {.id = victim.id, .slot = victim.port & (IPC_MAX_SLOTS - 1)};
        dsm_port_ref one = lookup_inbox(1);
        MP_CHECK(dsm_msg_send(&one, &s, sizeof s, NULL, 0, 30, NULL) == 0, "setup");
        /* Node 1 says it has sent its datagrams, through its own inbox
         * right: they were handled before this message, in order. */
        struct dsm_msg m = take(inbox);
        MP_CHECK(m.src_node == 1, "node 1's word");
        dsm_msg_free(&m);
        uint64_t refused = stats_get(STAT_IPC_REFUSED);
        MP_CHECK(refused == 5, "5 forgeries refused, %llu counted", (unsigned long long)refused);
        MP_CHECK(dsm_msg_recv(victim.port, &m, 0.05) == -ETIMEDOUT, "nothing forged was delivered");

        /* Those it gives rights reach it. (Node 1's forgeries took its
         * first numbers for the port, and its claim of nothing left it
         * waiting: the port would refuse or hold whatever it sent now.) */
        MP_CHECK(dsm_port_make_send(&victim, &send) == 0, "send");
        for (int k = 2; k < n; k++) {
            MP_CHECK(dsm_port_make_send_once(&victim, &once) == 0, "once");
            struct dsm_msg_right give[2] = {{&send, DSM_COPY_SEND}, {&once, DSM_MOVE_SEND_ONCE}};
            dsm_port_ref to = lookup_inbox(k);
            MP_CHECK(dsm_msg_send_rights(&to, "g", 1, NULL, 0, give, 2, 30, NULL) == 0, "give");
        }
        int got[MP_MAX_NODES] = {0}, once_got[MP_MAX_NODES] = {0};
        for (int i = 0; i < 2 * (n - 2); i++) {
            m = take(victim.port);
            MP_CHECK(m.len == sizeof(int) && *(int *)m.data == m.src_node, "from %d", m.src_node);
            if (m.seq)
                got[m.src_node]++;
            else
                once_got[m.src_node]++;
            dsm_msg_free(&m);
        }
        for (int k = 2; k < n; k++)
            MP_CHECK(got[k] == 1 && once_got[k] == 1, "node %d: %d, %d", k, got[k], once_got[k]);
        MP_CHECK(dsm_msg_recv(victim.port, &m, 0.05) == -ETIMEDOUT, "nothing more");
    } else {
        if (me == 1) {
            struct dsm_msg m = take(inbox);
            struct setup s;
            MP_CHECK(m.len == sizeof s, "setup");
            memcpy(&s, m.data, sizeof s);
            dsm_msg_free(&m);
            pthread_mutex_lock(&ipc.lock); /* as the library sends */
            forge(&s);
            pthread_mutex_unlock(&ipc.lock);
            dsm_port_ref zero = lookup_inbox(0);
            MP_CHECK(dsm_msg_send(&zero, "sent", 4, NULL, 0, 30, NULL) == 0, "tell node 0");
        } else {
        struct dsm_msg m = take(inbox);
        MP_CHECK(m.nrights == 2 && m.rights[0].kind == DSM_RIGHT_SEND &&
                 m.rights[1].kind == DSM_RIGHT_SEND_ONCE, "a send and a send-once right");
        dsm_port_ref send = m.rights[0], once = m.rights[1];
        dsm_msg_free(&m);
        MP_CHECK(dsm_msg_send(&send, &me, sizeof me, NULL, 0, 30, NULL) == 0, "send");
        MP_CHECK(dsm_msg_send(&once, &me, sizeof me, NULL, 0, 30, NULL) == 0, "send once");
        }
    }
    dsm_barrier();
    if (me == 0)
        printf("rights: %d nodes, forged and revoked handles refused at the API, 5 forgeries "
               "refused on the wire, given rights work: ok\n", n);
    dsm_finish();
    return 0;
}
