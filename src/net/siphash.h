/* siphash.h — SipHash-2-4 (Aumasson & Bernstein), the datagram MAC. */
#ifndef DSM_NET_SIPHASH_H
#define DSM_NET_SIPHASH_H
#include <stddef.h>
#include <stdint.h>

struct siphash_key { uint64_t k0, k1; };

/* Incremental form, so a header and a payload need not be contiguous. */
struct siphash_state {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;   /* pending bytes, little-endian */
    size_t   ntail;  /* 0..7 */
    uint64_t total;
};

void     siphash_init(struct siphash_state *s, const struct siphash_key *k);
void     siphash_update(struct siphash_state *s, const void *data, size_t len);
uint64_t siphash_final(struct siphash_state *s);
uint64_t siphash(const struct siphash_key *k, const void *data, size_t len);
#endif
