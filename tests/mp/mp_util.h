/* mp_util.h — helpers for the multi-process test programs. */
#ifndef DSM_TEST_MP_UTIL_H
#define DSM_TEST_MP_UTIL_H

/* The most nodes a job may have (the documented maximum): per-node
 * tables in the tests are this long. */
#define MP_MAX_NODES 256
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"

#define MP_CHECK(cond, ...)                                                    \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "node %d: %s:%d: check failed: %s: ", dsm_rank(),  \
                    __FILE__, __LINE__, #cond);                                \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static inline uint64_t mp_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Deterministic content for (from, to, index): the receiver can check it. */
static inline void mp_fill(unsigned char *buf, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < len; i++) {
        if ((i & 7) == 0)
            mp_rand(&s);
        buf[i] = (unsigned char)(s >> ((i & 7) * 8));
    }
}

static inline int mp_verify(const unsigned char *buf, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < len; i++) {
        if ((i & 7) == 0)
            mp_rand(&s);
        if (buf[i] != (unsigned char)(s >> ((i & 7) * 8)))
            return 0;
    }
    return 1;
}

/* Receives on `port` the message of node `from` that says `round` (an
 * int64_t): a go-ahead between two nodes, carrying no consistency. */
static inline void mp_recv_round(int port, int from, int64_t round)
{
    struct dsm_msg m;
    MP_CHECK(dsm_msg_recv(port, &m, DSM_FOREVER) == 0, "recv");
    MP_CHECK(m.src_node == from && m.len == sizeof round && *(int64_t *)m.data == round,
             "round %lld: a message from node %d (expected node %d)", (long long)round, m.src_node, from);
    dsm_msg_free(&m);
}
#endif
