/*
 * Many senders to one receiver through a port with a small queue limit:
 * flow control holds each sender at the limit until the receiver takes
 * messages, accept notifications come back for every message, and nothing
 * is lost, duplicated or reordered — small and large (out-of-line) alike.
 *   node 0 receives; nodes 1..N-1 send.   args: [messages-per-sender]
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mp_util.h"

#define LIMIT 2

struct header { int32_t from; uint32_t index; uint64_t ool_len; };

static uint64_t seed_of(int from, unsigned index) { return ((uint64_t)from << 32) | index; }

static void receiver(int n, unsigned per_sender)
{
    int port = dsm_port_create("sink", LIMIT);
    int ctl = dsm_port_create("control", 1024);
    MP_CHECK(port >= 0 && ctl >= 0, "ports");
    /* Wait until every sender has found its sends held at the limit. */
    for (int i = 1; i < n; i++) {
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(ctl, &m, 60) == 0, "control message");
        dsm_msg_free(&m);
    }
    unsigned *next = calloc((size_t)n, sizeof *next);
    unsigned total = per_sender * (unsigned)(n - 1);
    long pagesz = sysconf(_SC_PAGESIZE);
    for (unsigned got = 0; got < total; got++) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(port, &m, 60);
        MP_CHECK(rc == 0, "receive %u of %u: %d", got, total, rc);
        struct header h;
        MP_CHECK(m.len >= sizeof h, "short");
        memcpy(&h, m.data, sizeof h);
        MP_CHECK(h.from == m.src_node && h.from > 0 && h.from < n, "sender %d", h.from);
        MP_CHECK(h.index == next[h.from], "order from %d: %u, expected %u", h.from, h.index, next[h.from]);
        MP_CHECK(m.seq == h.index + 1, "sequence number %llu for index %u",
                 (unsigned long long)m.seq, h.index);
        next[h.from]++;
        MP_CHECK(mp_verify((unsigned char *)m.data + sizeof h, m.len - sizeof h, seed_of(h.from, h.index)),
                 "inline content");
        if (h.ool_len) {
            MP_CHECK(m.nool == 1 && m.ool[0].len == h.ool_len &&
                     (uintptr_t)m.ool[0].addr % (uintptr_t)pagesz == 0, "ool shape");
            MP_CHECK(mp_verify(m.ool[0].addr, h.ool_len, ~seed_of(h.from, h.index)), "ool content");
        }
        dsm_msg_free(&m);
    }
    for (int i = 1; i < n; i++)
        MP_CHECK(next[i] == per_sender, "sender %d delivered %u of %u", i, next[i], per_sender);
    printf("flow: %d senders x %u messages through a queue of %d, all in order and intact\n",
           n - 1, per_sender, LIMIT);
    free(next);
}

static void sender(int me, unsigned per_sender)
{
    dsm_port_ref sink, ctl;
    MP_CHECK(dsm_port_lookup(0, "sink", 60, &sink) == 0, "lookup sink");
    MP_CHECK(dsm_port_lookup(0, "control", 60, &ctl) == 0, "lookup control");
    MP_CHECK(sink.queue_limit == LIMIT, "limit learnt at lookup: %u", sink.queue_limit);

    size_t max_ool = 256 * 1024;
    unsigned char *ool = mmap(NULL, max_ool, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *buf = malloc(4096 + sizeof(struct header));
    uint64_t rng = 77 + (uint64_t)me;
    uint64_t last = 0;
    for (unsigned i = 0; i < per_sender; i++) {
        /* The first LIMIT messages are small: they must all go out at once,
         * before the receiver takes anything. */
        size_t inl = mp_rand(&rng) % 2000;
        size_t ool_len = i >= LIMIT && mp_rand(&rng) % 3 == 0 ? 1 + mp_rand(&rng) % max_ool : 0;
        if (i < LIMIT)
            inl %= 512;
        struct header h = {.from = me, .index = i, .ool_len = ool_len};
        memcpy(buf, &h, sizeof h);
        mp_fill(buf + sizeof h, inl, seed_of(me, i));
        mp_fill(ool, ool_len, ~seed_of(me, i));
        struct dsm_ool region = {.addr = ool, .len = ool_len};

        if (i == LIMIT) {
            /* The receiver takes nothing until every sender reports in, so
             * our unaccepted messages now equal the limit: held, and with a
             * timeout, refused. */
            int rc = dsm_msg_send(&sink, buf, sizeof h + inl, NULL, 0, 0.2, NULL);
            MP_CHECK(rc == -ETIMEDOUT, "send at the limit returned %d, expected -ETIMEDOUT", rc);
            MP_CHECK(dsm_msg_accepted(&sink) == 0, "nothing accepted yet");
            MP_CHECK(dsm_msg_send(&ctl, "held", 4, NULL, 0, 60, NULL) == 0, "report");
        }
        int rc = dsm_msg_send(&sink, buf, sizeof h + inl, ool_len ? &region : NULL,
                              ool_len ? 1 : 0, DSM_FOREVER, &last);
        MP_CHECK(rc == 0, "send %u: %d", i, rc);
        MP_CHECK(last == i + 1, "sequence numbers count messages: %llu", (unsigned long long)last);
    }
    MP_CHECK(dsm_msg_wait_accepted(&sink, last, 60) == 0, "every message accepted");
    MP_CHECK(dsm_msg_accepted(&sink) == per_sender, "accepted %llu",
             (unsigned long long)dsm_msg_accepted(&sink));
    free(buf);
    munmap(ool, max_ool);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    unsigned per_sender = argc > 1 ? (unsigned)atoi(argv[1]) : 40;
    MP_CHECK(dsm_nodes() >= 2, "needs at least 2 nodes");
    if (dsm_rank() == 0)
        receiver(dsm_nodes(), per_sender);
    else
        sender(dsm_rank(), per_sender);
    dsm_finish();
    return 0;
}
