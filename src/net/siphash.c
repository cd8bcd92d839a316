/*
 * siphash.c — SipHash-2-4, written from the paper's description
 * ("SipHash: a fast short-input PRF", 2012). Checked against the paper's
 * test vectors in tests/unit/test_wire.c.
 */
#include "net/siphash.h"

#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)                                               \
    do {                                                                       \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);              \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                 \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                 \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);              \
    } while (0)

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8); /* x86-64 and aarch64 in LE mode: the wire order */
    return x;
}

void siphash_init(struct siphash_state *s, const struct siphash_key *k)
{
    s->v0 = k->k0 ^ 0x736f6d6570736575ull;
    s->v1 = k->k1 ^ 0x646f72616e646f6dull;
    s->v2 = k->k0 ^ 0x6c7967656e657261ull;
    s->v3 = k->k1 ^ 0x7465646279746573ull;
    s->tail = 0;
    s->ntail = 0;
    s->total = 0;
}

static inline void compress(struct siphash_state *s, uint64_t m)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    v3 ^= m;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= m;
    s->v0 = v0; s->v1 = v1; s->v2 = v2; s->v3 = v3;
}

void siphash_update(struct siphash_state *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->total += len;
    while (s->ntail && len) { /* finish a pending word first */
        s->tail |= (uint64_t)*p++ << (8 * s->ntail);
        len--;
        if (++s->ntail == 8) {
            compress(s, s->tail);
            s->tail = 0;
            s->ntail = 0;
        }
    }
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t m = load_le64(p);
        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    s->v0 = v0; s->v1 = v1; s->v2 = v2; s->v3 = v3;
    for (; len; len--)
        s->tail |= (uint64_t)*p++ << (8 * s->ntail++);
}

uint64_t siphash_final(struct siphash_state *s)
{
    uint64_t b = (s->total << 56) | s->tail;
    compress(s, b);
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2 ^ 0xff, v3 = s->v3;
    for (int i = 0; i < 4; i++)
        SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t siphash(const struct siphash_key *k, const void *data, size_t len)
{
    struct siphash_state s;
    siphash_init(&s, k);
    siphash_update(&s, data, len);
    return siphash_final(&s);
}
