/*
 * Calls with pre-granted replies, and port lookup.
 *  - every node serves a port; every node calls every node with replies from
 *    0 B to 1 MiB, which land straight in the caller's buffer, checked;
 *  - a reply larger than the grant is cut to the grant and reported as
 *    -EMSGSIZE;
 *  - a call that is never answered times out with -ETIMEDOUT;
 *  - lookup waits for a port created later, and gives -ENOENT when it never
 *    appears.
 */
#include <errno.h>
#include <pthread.h>

#include "mp_util.h"

struct request { int32_t from; uint32_t op; uint64_t reply_len, cap; };
enum { OP_ECHO = 1, OP_SILENT = 2, OP_STOP = 3 };

static int serve_port;

static void *serve(void *arg)
{
    (void)arg;
    unsigned char *buf = malloc(2u << 20);
    for (;;) {
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(serve_port, &m, 120) == 0, "server receive");
        struct request r;
        MP_CHECK(m.len == sizeof r, "request size");
        memcpy(&r, m.data, sizeof r);
        if (r.op == OP_STOP) {
            dsm_msg_free(&m);
            break;
        }
        if (r.op == OP_ECHO) {
            MP_CHECK(m.reply_token != 0, "a call carries a reply token");
            mp_fill(buf, r.reply_len, r.reply_len ^ (uint64_t)r.from);
            MP_CHECK(dsm_msg_reply(&m, buf, r.reply_len) == 0, "reply");
            MP_CHECK(dsm_msg_reply(&m, buf, 1) == -EINVAL, "a second reply is refused");
        }
        dsm_msg_free(&m);
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    serve_port = dsm_port_create("server", 16);
    MP_CHECK(serve_port >= 0, "port");
    MP_CHECK(dsm_port_create("server", 16) == -EEXIST, "duplicate name refused");
    pthread_t thread;
    pthread_create(&thread, NULL, serve, NULL);

    unsigned char *reply = malloc(1u << 20);
    static const size_t sizes[] = {0, 1, 8, 440, 1024, 8192, 8193, 65536, 200000, 1u << 20};
    for (int step = 0; step < n; step++) {
        int to = (me + step) % n;
        dsm_port_ref srv;
        MP_CHECK(dsm_port_lookup(to, "server", 30, &srv) == 0, "lookup %d", to);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            struct request r = {.from = me, .op = OP_ECHO, .reply_len = sizes[i]};
            long got = dsm_msg_call(&srv, &r, sizeof r, reply, 1u << 20, 60);
            MP_CHECK(got == (long)sizes[i], "reply of %zu from %d: %ld", sizes[i], to, got);
            MP_CHECK(mp_verify(reply, sizes[i], sizes[i] ^ (uint64_t)me), "reply content %zu", sizes[i]);
        }
        /* A reply larger than the grant: cut to the grant, and reported. */
        struct request big = {.from = me, .op = OP_ECHO, .reply_len = 100000};
        memset(reply, 0, 100000);
        long got = dsm_msg_call(&srv, &big, sizeof big, reply, 5000, 60);
        MP_CHECK(got == -EMSGSIZE, "oversized reply: %ld", got);
        MP_CHECK(mp_verify(reply, 5000, 100000 ^ (uint64_t)me), "the granted part arrived");
        MP_CHECK(reply[5000] == 0, "nothing beyond the grant was written");
    }
    /* Never answered: the call times out. */
    dsm_port_ref self;
    MP_CHECK(dsm_port_lookup(me, "server", 5, &self) == 0, "lookup self");
    struct request silent = {.from = me, .op = OP_SILENT};
    MP_CHECK(dsm_msg_call(&self, &silent, sizeof silent, reply, 64, 0.3) == -ETIMEDOUT, "timeout");

    /* Lookup waits for a port created later by the next node... */
    int next = (me + 1) % n;
    dsm_port_ref late;
    if (me % 2 == 0)
        MP_CHECK(dsm_port_create("late", 1) >= 0, "late port");
    dsm_port_ref ignored;
    MP_CHECK(dsm_port_lookup(next, "never", 0.2, &ignored) == -ENOENT, "missing port");
    if (me % 2 == 1)
        MP_CHECK(dsm_port_create("late", 1) >= 0, "late port");
    MP_CHECK(dsm_port_lookup(next, "late", 30, &late) == 0, "late lookup");
    MP_CHECK(dsm_port_lookup(n, "late", 1, &late) == -EINVAL, "bad node");

    /* Stop our server, after every node is done calling it. */
    dsm_port_ref done_port;
    int done = dsm_port_create("done", 1024);
    for (int i = 0; i < n; i++) {
        MP_CHECK(dsm_port_lookup(i, "done", 30, &done_port) == 0, "done lookup");
        MP_CHECK(dsm_msg_send(&done_port, "x", 1, NULL, 0, 30, NULL) == 0, "done send");
    }
    for (int i = 0; i < n; i++) {
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(done, &m, 60) == 0, "done receive");
        dsm_msg_free(&m);
    }
    struct request stop = {.op = OP_STOP};
    MP_CHECK(dsm_msg_send(&self, &stop, sizeof stop, NULL, 0, 30, NULL) == 0, "stop");
    pthread_join(thread, NULL);
    free(reply);
    if (me == 0)
        printf("rpc: %d nodes, replies 0 B .. 1 MiB in place, truncation, timeout, lookup: ok\n", n);
    dsm_finish();
    return 0;
}
