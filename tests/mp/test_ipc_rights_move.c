/*
 * A port moves with its receive right while its senders keep sending, and
 * nothing is lost, duplicated or reordered.
 *
 * Node 0 makes an unregistered port P (queue limit 4) and gives every
 * other node a send right to it. Each of them (a thread of its own: node
 * 1 is also a holder) sends K messages, numbered, of every shape: inline
 * of varying size, out-of-line regions (request, grant, pages), and every
 * so often carrying a copy of its send right to P itself. The receive
 * right goes back and forth between nodes 0 and 1: a holder takes M
 * messages, then moves the receive right to the other in a message that
 * also says how far each sender has got. So P moves dozens of times with
 * messages queued (they go with it), requests half transferred, senders
 * blocked on its queue limit (their accept notifications come from
 * wherever it is), and messages in flight to its old node (forwarded, and
 * their senders redirected).
 *
 * Every holder checks each message as it takes it: from a sender that
 * holds a right, the next number of that sender (so none lost, none
 * twice, none out of order), the content intact; a right it carries is a
 * right to P. At the end every sender's K messages and its last word
 * arrived exactly once, in order.
 *
 *   test_ipc_rights_move [K] [M]
 */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <unistd.h>

#include "mp_util.h"

#define LIMIT     4
#define OOL_BYTES 20000 /* two pages and a part */

struct item { int32_t from; int32_t i; uint32_t len; uint32_t with_ool; };

struct handoff {
    int32_t total;
    int32_t moves;
    int32_t next[MP_MAX_NODES]; /* per sender: the number it is at */
};

static int K = 300, M = 37;
static int rights_port;

static uint64_t seed_of(int from, int i) { return (uint64_t)from * 1000003u + (uint64_t)i; }

static void *sender(void *arg)
{
    (void)arg;
    int me = dsm_rank();
    struct dsm_msg m;
    MP_CHECK(dsm_msg_recv(rights_port, &m, 120) == 0, "the send right");
    MP_CHECK(m.nrights == 1 && m.rights[0].kind == DSM_RIGHT_SEND && m.src_node == 0, "one send right");
    dsm_port_ref p = m.rights[0];
    dsm_msg_free(&m);
    unsigned char *buf = malloc(512);
    void *region = aligned_alloc(4096, 5 * 4096);
    for (int i = 0; i <= K; i++) {
        struct item it = {.from = me, .i = i};
        struct dsm_ool ool = {.addr = region, .len = OOL_BYTES};
        struct dsm_msg_right copy = {.right = &p, .disposition = DSM_COPY_SEND};
        bool with_ool = i < K && i % 7 == 3, with_right = i < K && i % 25 == 11;
        it.len = i == K ? 0 : 16 + (uint32_t)(i * 13) % 300;
        it.with_ool = with_ool;
        memcpy(buf, &it, sizeof it);
        mp_fill(buf + sizeof it, it.len, seed_of(me, i));
        if (with_ool)
            mp_fill(region, OOL_BYTES, seed_of(me, i) ^ 0xabc);
        int rc = dsm_msg_send_rights(&p, buf, sizeof it + it.len, with_ool ? &ool : NULL,
                                     with_ool, with_right ? &copy : NULL, with_right, 120, NULL);
        MP_CHECK(rc == 0, "send %d: %d", i, rc);
    }
    MP_CHECK(dsm_port_release(&p) == 0, "release");
    free(buf);
    free(region);
    return NULL;
}

/* Takes one message of P and checks it against what its sender must send
 * next. Returns whether it was a sender's last word. */
static bool check_one(const struct dsm_msg *m, uint64_t port_id, struct handoff *h)
{
    struct item it;
    MP_CHECK(m->len >= sizeof it, "a short message (%zu bytes)", m->len);
    memcpy(&it, m->data, sizeof it);
    MP_CHECK(it.from == m->src_node && it.from >= 1 && it.from < dsm_nodes(), "from %d (node %d)",
             it.from, m->src_node);
    MP_CHECK(it.i == h->next[it.from], "node %d's message %d where %d was next: lost, twice or "
             "out of order", it.from, it.i, h->next[it.from]);
    MP_CHECK(m->len == sizeof it + it.len, "length");
    MP_CHECK(mp_verify((const unsigned char *)m->data + sizeof it, it.len, seed_of(it.from, it.i)),
             "node %d's message %d: content", it.from, it.i);
    MP_CHECK(m->nool == (int)it.with_ool, "node %d's message %d: %d regions", it.from, it.i, m->nool);
    if (it.with_ool)
        MP_CHECK(m->ool[0].len == OOL_BYTES &&
                 mp_verify(m->ool[0].addr, OOL_BYTES, seed_of(it.from, it.i) ^ 0xabc),
                 "node %d's message %d: region", it.from, it.i);
    bool with_right = it.i < K && it.i % 25 == 11;
    MP_CHECK(m->nrights == (int)with_right, "node %d's message %d: %d rights", it.from, it.i,
             m->nrights);
    if (with_right) {
        MP_CHECK(m->rights[0].kind == DSM_RIGHT_SEND && m->rights[0].id == port_id,
                 "the right carried is a send right to the port");
        MP_CHECK(dsm_port_release(&m->rights[0]) == 0, "release it");
    }
    h->next[it.from]++;
    h->total++;
    return it.i == K;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    if (argc > 1)
        K = atoi(argv[1]);
    if (argc > 2)
        M = atoi(argv[2]);
    MP_CHECK(n >= 2 && K >= 1 && M >= 1, "2 nodes or more, K >= 1, M >= 1");
    rights_port = dsm_port_create("rights", 4);
    int inbox = dsm_port_create("inbox", 4);
    MP_CHECK(rights_port >= 0 && inbox >= 0, "ports");
    pthread_t thread;
    if (me > 0)
        pthread_create(&thread, NULL, sender, NULL);

    int other = 1 - me;
    dsm_port_ref to_other;
    dsm_port_ref recv = {0};
    bool holding = false;
    uint64_t port_id = 0;
    struct handoff h = {0};
    int goal = (n - 1) * (K + 1);
    if (me == 0) {
        MP_CHECK(dsm_port_allocate(LIMIT, &recv) == 0, "allocate");
        port_id = recv.id;
        holding = true;
        for (int s = 1; s < n; s++) {
            dsm_port_ref to;
            MP_CHECK(dsm_port_lookup(s, "rights", 60, &to) == 0, "lookup");
            struct dsm_msg_right give = {.right = &recv, .disposition = DSM_MAKE_SEND};
            MP_CHECK(dsm_msg_send_rights(&to, NULL, 0, NULL, 0, &give, 1, 60, NULL) == 0, "give");
            MP_CHECK(dsm_port_release(&to) == 0, "release");
        }
    }
    if (me <= 1) {
        MP_CHECK(dsm_port_lookup(other, "inbox", 60, &to_other) == 0, "lookup");
        while (h.total < goal) {
            if (!holding) {
                struct dsm_msg m;
                MP_CHECK(dsm_msg_recv(inbox, &m, 300) == 0, "hand-over");
                MP_CHECK(m.len == sizeof h && m.nrights == 1 &&
                         m.rights[0].kind == DSM_RIGHT_RECEIVE, "a hand-over");
                memcpy(&h, m.data, sizeof h);
                recv = m.rights[0];
                port_id = recv.id;
                dsm_msg_free(&m);
                holding = true;
                if (h.total == goal)
                    break; /* the other holder finished */
            }
            for (int taken = 0; taken < M && h.total < goal; taken++) {
                struct dsm_msg m;
                int rc = dsm_msg_recv(recv.port, &m, 300);
                MP_CHECK(rc == 0, "receive: %d (total %d of %d)", rc, h.total, goal);
                check_one(&m, port_id, &h);
                dsm_msg_free(&m);
            }
            /* Over to the other holder, done or not (it must hear). */
            if (h.total < goal)
                h.moves++;
            struct dsm_msg_right give = {.right = &recv, .disposition = DSM_MOVE_RECEIVE};
            MP_CHECK(dsm_msg_send_rights(&to_other, &h, sizeof h, NULL, 0, &give, 1, 60, NULL) == 0,
                     "hand over");
            holding = false;
            if (h.total == goal)
                break;
        }
        if (holding) {
            /* Nothing more ever comes: every sender's last word is in. */
            struct dsm_msg m;
            MP_CHECK(dsm_msg_recv(recv.port, &m, 0.2) == -ETIMEDOUT, "a message after the last");
            for (int s = 1; s < n; s++)
                MP_CHECK(h.next[s] == K + 1, "node %d: %d of %d", s, h.next[s], K + 1);
            printf("move: %d nodes, %d senders x %d messages, the receive right moved %d times: "
                   "all delivered once, in order\n", n, n - 1, K, h.moves);
            MP_CHECK(dsm_port_release(&recv) == 0, "release");
        }
    }
    if (me > 0)
        pthread_join(thread, NULL);
    dsm_barrier();
    dsm_finish();
    return 0;
}
