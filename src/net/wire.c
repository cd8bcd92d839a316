#include "net/wire.h"

#include <string.h>

void wire_keys_init(struct wire_keys *k, const uint8_t key[32], uint64_t job, int mac)
{
    memcpy(&k->hdr.k0, key, 8);
    memcpy(&k->hdr.k1, key + 8, 8);
    memcpy(&k->pay.k0, key + 16, 8);
    memcpy(&k->pay.k1, key + 24, 8);
    k->token = siphash(&k->hdr, &job, sizeof job);
    k->mac = mac;
}

uint64_t wire_payload_hash(const struct wire_keys *k, const void *payload, size_t len)
{
    return k->mac ? siphash(&k->pay, payload, len) : 0;
}

static uint64_t header_mac(const struct wire_keys *k, const struct wire_hdr *h,
                           uint64_t payload_hash)
{
    struct siphash_state s;
    siphash_init(&s, &k->hdr);
    siphash_update(&s, h, offsetof(struct wire_hdr, mac));
    siphash_update(&s, &payload_hash, sizeof payload_hash);
    return siphash_final(&s);
}

void wire_seal(const struct wire_keys *k, struct wire_hdr *h, uint64_t payload_hash)
{
    h->mac = k->mac ? header_mac(k, h, payload_hash) : k->token;
}

enum wire_verdict wire_check(const struct wire_keys *k, const void *dgram, size_t len,
                             uint64_t job, int self, int nodes, size_t max_payload)
{
    struct wire_hdr h;
    if (len < sizeof h)
        return WIRE_FOREIGN;
    memcpy(&h, dgram, sizeof h);
    if (h.magic != WIRE_MAGIC || h.job != job || h.dst != self || h.src >= nodes)
        return WIRE_FOREIGN;
    if (h.len != len - sizeof h || h.len > max_payload)
        return WIRE_FOREIGN;
    switch (h.kind) {
    case WIRE_DATA:
        if (h.flags & ~(WIRE_FIRST | WIRE_LAST | WIRE_NOP | WIRE_FIN))
            return WIRE_FOREIGN;
        if ((h.flags & (WIRE_NOP | WIRE_FIN)) &&
            (h.len || (h.flags & (WIRE_FIRST | WIRE_LAST)) ||
             (h.flags & (WIRE_NOP | WIRE_FIN)) == (WIRE_NOP | WIRE_FIN)))
            return WIRE_FOREIGN;
        if (!(h.flags & (WIRE_NOP | WIRE_FIN)) &&
            ((uint64_t)h.frag_off + h.len > h.msg_len ||
             ((h.flags & WIRE_FIRST) && h.frag_off != 0) ||
             ((h.flags & WIRE_LAST) && h.frag_off + h.len != h.msg_len)))
            return WIRE_FOREIGN;
        break;
    case WIRE_ACK:
    case WIRE_DONE:
        if (h.len || h.flags)
            return WIRE_FOREIGN;
        break;
    case WIRE_ABORT:
        if (h.flags)
            return WIRE_FOREIGN;
        break;
    default:
        return WIRE_FOREIGN;
    }
    uint64_t want = k->mac ? header_mac(k, &h, wire_payload_hash(k, (const char *)dgram + sizeof h, h.len))
                           : k->token;
    return want == h.mac ? WIRE_OK : WIRE_FORGED;
}
