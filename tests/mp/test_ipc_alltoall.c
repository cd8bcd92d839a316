/*
 * Every node sends every node (itself included) a series of messages of
 * random sizes from 1 B to 4 MiB — inline, out-of-line, or both — and checks
 * each one it receives byte for byte, and that each sender's messages
 * arrive in the order they were sent.
 *   args: [messages-per-peer] [max-bytes]
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mp_util.h"

struct header {
    int32_t  from;
    uint32_t index;
    uint64_t inline_len;
    uint64_t ool_len;
};

static uint64_t seed_of(int from, int to, unsigned index, int part)
{
    return ((uint64_t)from << 40) ^ ((uint64_t)to << 24) ^ ((uint64_t)index << 2) ^ (uint64_t)part;
}

struct receiver {
    int       port, me, n;
    unsigned  expected_total;
    long      pagesz;
};

static void check_message(const struct receiver *rx, struct dsm_msg *m, unsigned *next_index)
{
    struct header r;
    MP_CHECK(m->len >= sizeof r, "short message %zu", m->len);
    memcpy(&r, m->data, sizeof r);
    MP_CHECK(r.from >= 0 && r.from < rx->n && r.index == next_index[r.from],
             "order: from %d index %u", r.from, r.index);
    next_index[r.from]++;
    MP_CHECK(m->len == sizeof r + r.inline_len, "inline length");
    MP_CHECK(mp_verify((unsigned char *)m->data + sizeof r, r.inline_len,
                       seed_of(r.from, rx->me, r.index, 0)), "inline content from %d", r.from);
    if (r.ool_len) {
        MP_CHECK(m->nool == 1 && m->ool[0].len == r.ool_len, "ool shape");
        MP_CHECK(((uintptr_t)m->ool[0].addr % (uintptr_t)rx->pagesz) == 0, "ool alignment");
        MP_CHECK(mp_verify(m->ool[0].addr, r.ool_len, seed_of(r.from, rx->me, r.index, 1)),
                 "ool content from %d", r.from);
    } else
        MP_CHECK(m->nool == 0, "unexpected ool");
}

/* Receives on its own thread, so that every node keeps draining its port
 * while its main thread is blocked sending (queues are bounded: nodes that
 * only received between their own sends could all block on each other). */
static void *receive_all(void *arg)
{
    struct receiver *rx = arg;
    unsigned *next_index = calloc((size_t)rx->n, sizeof *next_index);
    for (unsigned got = 0; got < rx->expected_total; got++) {
        struct dsm_msg m;
        int rc = dsm_msg_recv(rx->port, &m, 120);
        MP_CHECK(rc == 0, "receive: %d after %u of %u", rc, got, rx->expected_total);
        check_message(rx, &m, next_index);
        dsm_msg_free(&m);
    }
    free(next_index);
    return NULL;
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    unsigned per_peer = argc > 1 ? (unsigned)atoi(argv[1]) : 6;
    size_t max_bytes = argc > 2 ? (size_t)atol(argv[2]) : (4u << 20);

    int port = dsm_port_create("alltoall", 4);
    MP_CHECK(port >= 0, "port create: %d", port);
    dsm_port_ref *dst = calloc((size_t)n, sizeof *dst);
    for (int i = 0; i < n; i++)
        MP_CHECK(dsm_port_lookup(i, "alltoall", 30, &dst[i]) == 0, "lookup of node %d", i);

    long pagesz = sysconf(_SC_PAGESIZE);
    struct receiver rx = {.port = port, .me = me, .n = n,
                          .expected_total = per_peer * (unsigned)n, .pagesz = pagesz};
    pthread_t thread;
    MP_CHECK(pthread_create(&thread, NULL, receive_all, &rx) == 0, "thread");

    /* Sizes are log-uniform so small, medium and 4 MiB messages all occur. */
    uint64_t rng = 0x1234567ull + (uint64_t)me * 7919;
    unsigned char *ool_buf = mmap(NULL, max_bytes + (size_t)pagesz, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *inl_buf = malloc(max_bytes + sizeof(struct header));
    MP_CHECK(ool_buf != MAP_FAILED && inl_buf, "memory");
    uint64_t last_seq = 0;
    for (unsigned k = 0; k < per_peer; k++) {
        for (int step = 0; step < n; step++) {
            int to = (me + step) % n;
            double u = (double)(mp_rand(&rng) % 1000000) / 1e6;
            size_t size = (size_t)__builtin_exp(u * __builtin_log((double)max_bytes));
            if (size < 1)
                size = 1;
            int kind = (int)(mp_rand(&rng) % 3); /* 0 inline, 1 ool, 2 both */
            size_t inl = kind == 1 ? 0 : (kind == 0 ? size : size / 2);
            size_t ool = size - inl;
            struct header h = {.from = me, .index = k, .inline_len = inl, .ool_len = ool};
            memcpy(inl_buf, &h, sizeof h);
            mp_fill(inl_buf + sizeof h, inl, seed_of(me, to, k, 0));
            mp_fill(ool_buf, ool, seed_of(me, to, k, 1));
            struct dsm_ool region = {.addr = ool_buf, .len = ool};
            uint64_t seq;
            int rc = dsm_msg_send(&dst[to], inl_buf, sizeof h + inl, ool ? &region : NULL,
                                  ool ? 1 : 0, 120, &seq);
            MP_CHECK(rc == 0, "send to %d: %d", to, rc);
            if (to == me)
                last_seq = seq;
        }
    }
    pthread_join(thread, NULL);
    /* Our last message to ourselves was taken: its accept came back. */
    MP_CHECK(dsm_msg_wait_accepted(&dst[me], last_seq, 30) == 0, "accept notification");
    MP_CHECK(dsm_msg_accepted(&dst[me]) == per_peer, "accepted count %llu",
             (unsigned long long)dsm_msg_accepted(&dst[me]));
    if (me == 0)
        printf("alltoall: %d nodes, %u messages each, all verified\n", n, rx.expected_total);
    free(inl_buf);
    munmap(ool_buf, max_bytes + (size_t)pagesz);
    free(dst);
    dsm_finish();
    return 0;
}
