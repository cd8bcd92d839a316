/*
 * Notifications arrive as messages, each exactly when its condition holds.
 *  A. No-senders: node 0's port P, unregistered, asks for one. A send
 *     right made from P goes down the chain of nodes 1 .. n-1: each sends
 *     P one message, then copies its right on (odd nodes) or moves it
 *     (even nodes), and releases what it still holds. When node 0 takes
 *     the notification (count 1: one right was made), every node's
 *     message is already queued on P: the last right went after them.
 *  B. Send-once: a send-once right released unused, one destroyed in
 *     transit (its message was queued on a port that was destroyed), and
 *     one used (a message with no number, not a notification). The
 *     destroyed message's send right made from port T was the only one:
 *     T gets its no-senders notification.
 *  C. Dead name, when the holder's node ends: the last node makes port D
 *     and gives every other node a send right and a send-once right, on
 *     each of which it asks for a dead-name notification (cookies: its
 *     rank, and 0x100 more); node 0 also gave the last
 *     node the only send right to its port U. The last node calls
 *     dsm_finish: each other node gets its dead name (its handle, D's id,
 *     its cookie), sends on it fail with -EPIPE, and node 0 gets U's
 *     no-senders notification.
 */
#include <errno.h>
#include <stdbool.h>

#include "mp_util.h"

static int inbox;

static dsm_port_ref lookup_inbox(int node)
{
    dsm_port_ref r;
    MP_CHECK(dsm_port_lookup(node, "inbox", 60, &r) == 0, "lookup of node %d's inbox", node);
    return r;
}

static struct dsm_msg take(int port, double timeout)
{
    struct dsm_msg m;
    int rc = dsm_msg_recv(port, &m, timeout);
    MP_CHECK(rc == 0, "receive: %d", rc);
    return m;
}

static struct dsm_notification notification(const struct dsm_msg *m, int kind)
{
    struct dsm_notification n;
    MP_CHECK(m->notification == kind && m->len == sizeof n, "notification %d, got %d (%zu bytes)",
             kind, m->notification, m->len);
    memcpy(&n, m->data, sizeof n);
    MP_CHECK(n.kind == (uint32_t)kind && m->seq == 0 && m->nrights == 0, "a notification's shape");
    return n;
}

static void give(int node, const dsm_port_ref *right, int disposition, const void *data, size_t len)
{
    dsm_port_ref to = lookup_inbox(node);
    struct dsm_msg_right r = {.right = right, .disposition = disposition};
    MP_CHECK(dsm_msg_send_rights(&to, data, len, NULL, 0, &r, right ? 1 : 0, 60, NULL) == 0,
             "give to node %d", node);
    MP_CHECK(dsm_port_release(&to) == 0, "release");
}

static dsm_port_ref got_right(int kind)
{
    struct dsm_msg m = take(inbox, 120);
    MP_CHECK(m.nrights == 1 && (int)m.rights[0].kind == kind, "a right of kind %d", kind);
    dsm_port_ref r = m.rights[0];
    dsm_msg_free(&m);
    return r;
}

static void no_senders_down_a_chain(int me, int n)
{
    if (me == 0) {
        dsm_port_ref p, note;
        MP_CHECK(dsm_port_allocate(64, &p) == 0 && dsm_port_allocate(4, &note) == 0, "ports");
        MP_CHECK(dsm_port_request_notification(&p, DSM_NOTIFY_NO_SENDERS, &note, 0xa) == 0,
                 "request");
        give(1, &p, DSM_MAKE_SEND, NULL, 0);
        struct dsm_msg m = take(note.port, 120);
        struct dsm_notification ns = notification(&m, DSM_NOTIFY_NO_SENDERS);
        MP_CHECK(ns.cookie == 0xa && ns.count == 1 && ns.port_id == p.id, "cookie %llx count %llu",
                 (unsigned long long)ns.cookie, (unsigned long long)ns.count);
        dsm_msg_free(&m);
        for (int k = 1; k < n; k++) { /* queued before the notification was sent */
            m = take(p.port, 0);
            MP_CHECK(m.len == sizeof k && *(int *)m.data == m.src_node && m.src_node == k,
                     "node %d's message, in chain order (from node %d)", k, m.src_node);
            dsm_msg_free(&m);
        }
        MP_CHECK(dsm_msg_recv(p.port, &m, 0) == -ETIMEDOUT, "nothing more");
        MP_CHECK(dsm_port_release(&p) == 0 && dsm_port_release(&note) == 0, "release");
        return;
    }
    dsm_port_ref r = got_right(DSM_RIGHT_SEND);
    MP_CHECK(dsm_msg_send(&r, &me, sizeof me, NULL, 0, 60, NULL) == 0, "send");
    if (me + 1 < n)
        give(me + 1, &r, me % 2 ? DSM_COPY_SEND : DSM_MOVE_SEND, NULL, 0);
    if (me % 2 || me + 1 == n)
        MP_CHECK(dsm_port_release(&r) == 0, "release");
    else
        MP_CHECK(dsm_port_release(&r) == -EPERM, "moved away: nothing left");
}

static void send_once(int me)
{
    if (me == 0) {
        dsm_port_ref s, t, once, x;
        MP_CHECK(dsm_port_allocate(8, &s) == 0 && dsm_port_allocate(8, &t) == 0, "ports");
        MP_CHECK(dsm_port_request_notification(&t, DSM_NOTIFY_NO_SENDERS, &s, 0x7) == 0, "request");
        /* Released unused. */
        MP_CHECK(dsm_port_make_send_once(&s, &once) == 0, "once");
        give(1, &once, DSM_MOVE_SEND_ONCE, "drop", 4);
        struct dsm_msg m = take(s.port, 120);
        struct dsm_notification sn = notification(&m, DSM_NOTIFY_SEND_ONCE);
        MP_CHECK(sn.port_id == s.id && sn.cookie == 0 && m.src_node == 1, "send-once from node 1");
        dsm_msg_free(&m);
        /* Destroyed in transit, with the only send right to t. */
        x = got_right(DSM_RIGHT_SEND);
        MP_CHECK(dsm_port_make_send_once(&s, &once) == 0, "once");
        struct dsm_msg_right two[2] = {{&once, DSM_MOVE_SEND_ONCE}, {&t, DSM_MAKE_SEND}};
        MP_CHECK(dsm_msg_send_rights(&x, "in x", 4, NULL, 0, two, 2, 60, NULL) == 0, "into x");
        give(1, NULL, 0, "queued", 6);
        m = take(s.port, 120);
        sn = notification(&m, DSM_NOTIFY_SEND_ONCE);
        MP_CHECK(sn.port_id == s.id, "the destroyed message's send-once right");
        dsm_msg_free(&m);
        m = take(s.port, 120);
        sn = notification(&m, DSM_NOTIFY_NO_SENDERS);
        MP_CHECK(sn.port_id == t.id && sn.cookie == 0x7 && sn.count == 1, "t has no senders");
        dsm_msg_free(&m);
        /* Node 1 told this node x was dead before it sent the notification. */
        MP_CHECK(dsm_msg_send(&x, "y", 1, NULL, 0, 60, NULL) == -EPIPE, "x is dead");
        /* Used. */
        MP_CHECK(dsm_port_make_send_once(&s, &once) == 0, "once");
        give(1, &once, DSM_MOVE_SEND_ONCE, "use", 3);
        m = take(s.port, 120);
        MP_CHECK(m.notification == 0 && m.seq == 0 && m.len == 5 && !memcmp(m.data, "reply", 5),
                 "the reply through it");
        dsm_msg_free(&m);
        MP_CHECK(dsm_port_release(&s) == 0 && dsm_port_release(&t) == 0, "release");
        MP_CHECK(dsm_port_release(&x) == 0, "release x's dead name");
        return;
    }
    if (me != 1)
        return;
    dsm_port_ref once = got_right(DSM_RIGHT_SEND_ONCE);
    MP_CHECK(dsm_port_release(&once) == 0, "release unused");
    dsm_port_ref x;
    MP_CHECK(dsm_port_allocate(8, &x) == 0, "x");
    give(0, &x, DSM_MAKE_SEND, NULL, 0);
    struct dsm_msg m = take(inbox, 120); /* node 0's word: its message is on x */
    MP_CHECK(m.len == 6 && !memcmp(m.data, "queued", 6), "queued");
    dsm_msg_free(&m);
    MP_CHECK(dsm_port_release(&x) == 0, "destroy x with the message in it");
    once = got_right(DSM_RIGHT_SEND_ONCE);
    MP_CHECK(dsm_msg_send(&once, "reply", 5, NULL, 0, 60, NULL) == 0, "reply");
}

static void dead_name_at_node_end(int me, int n)
{
    int last = n - 1;
    if (me == last) {
        dsm_port_ref d;
        MP_CHECK(dsm_port_allocate(64, &d) == 0, "d");
        for (int k = 0; k < last; k++) {
            give(k, &d, DSM_MAKE_SEND, NULL, 0);
            give(k, &d, DSM_MAKE_SEND_ONCE, NULL, 0);
        }
        dsm_port_ref u = got_right(DSM_RIGHT_SEND);
        MP_CHECK(dsm_msg_send(&u, "u", 1, NULL, 0, 60, NULL) == 0, "use u");
        for (int k = 0; k < last; k++) { /* each has its right and has used it */
            struct dsm_msg m = take(d.port, 120);
            dsm_msg_free(&m);
        }
        return; /* and end: dsm_finish */
    }
    dsm_port_ref note, d, o, u;
    MP_CHECK(dsm_port_allocate(4, &note) == 0, "note");
    if (me == 0) {
        MP_CHECK(dsm_port_allocate(4, &u) == 0, "u");
        MP_CHECK(dsm_port_request_notification(&u, DSM_NOTIFY_NO_SENDERS, &note, 0x55) == 0, "ns");
        give(last, &u, DSM_MAKE_SEND, NULL, 0);
    }
    d = got_right(DSM_RIGHT_SEND);
    o = got_right(DSM_RIGHT_SEND_ONCE);
    MP_CHECK(dsm_port_request_notification(&d, DSM_NOTIFY_DEAD_NAME, &note, (uint64_t)me) == 0,
             "request");
    MP_CHECK(dsm_port_request_notification(&o, DSM_NOTIFY_DEAD_NAME, &note,
                                           0x100 + (uint64_t)me) == 0, "request on send-once");
    MP_CHECK(dsm_msg_send(&d, &me, sizeof me, NULL, 0, 60, NULL) == 0, "send before it ends");
    bool dead = false, once_dead = false, no_senders = me != 0;
    while (!dead || !once_dead || !no_senders) {
        struct dsm_msg m = take(note.port, 120);
        if (m.notification == DSM_NOTIFY_DEAD_NAME) {
            struct dsm_notification dn = notification(&m, DSM_NOTIFY_DEAD_NAME);
            const dsm_port_ref *h = dn.cookie == (uint64_t)me ? &d : &o;
            bool *seen = dn.cookie == (uint64_t)me ? &dead : &once_dead;
            MP_CHECK((dn.cookie == (uint64_t)me || dn.cookie == 0x100 + (uint64_t)me) &&
                     dn.port_id == d.id && dn.right.name == h->name &&
                     dn.right.nonce == h->nonce, "my dead names");
            MP_CHECK(!*seen, "one dead-name notification a right");
            *seen = true;
        } else {
            struct dsm_notification ns = notification(&m, DSM_NOTIFY_NO_SENDERS);
            MP_CHECK(me == 0 && ns.cookie == 0x55 && ns.port_id == u.id && !no_senders,
                     "u's no-senders, once");
            no_senders = true;
        }
        dsm_msg_free(&m);
    }
    MP_CHECK(dsm_msg_send(&d, "x", 1, NULL, 0, 1, NULL) == -EPIPE, "sending to a dead name");
    MP_CHECK(dsm_msg_send(&o, "x", 1, NULL, 0, 1, NULL) == -EPIPE, "nor through send-once");
    MP_CHECK(dsm_port_release(&d) == 0, "release the dead name");
    MP_CHECK(dsm_port_release(&d) == -EPERM, "and it is gone");
    MP_CHECK(dsm_port_release(&o) == 0, "release the dead send-once right");
    if (me == 0) {
        struct dsm_msg m = take(u.port, 0);
        MP_CHECK(m.len == 1 && m.src_node == last, "u's message, before its last right went");
        dsm_msg_free(&m);
        MP_CHECK(dsm_port_release(&u) == 0, "release");
    }
    MP_CHECK(dsm_port_release(&note) == 0, "release");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    MP_CHECK(n >= 2, "2 nodes or more");
    inbox = dsm_port_create("inbox", 16);
    MP_CHECK(inbox >= 0, "inbox");
    no_senders_down_a_chain(me, n);
    dsm_barrier();
    send_once(me);
    dsm_barrier();
    dead_name_at_node_end(me, n);
    if (me == 0)
        printf("notify: %d nodes, no-senders, send-once and dead-name notifications: ok\n", n);
    dsm_finish();
    return 0;
}
