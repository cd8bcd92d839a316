#include "net/wire.h"

#include <string.h>

#include "net/net.h" /* NET_WITNESS_LINE_MAX */

void wire_keys_init(struct wire_keys *k, const uint8_t key[32], uint64_t job, int mac)
{
    memcpy(&k->hdr.k0, key, 8);
    memcpy(&k->hdr.k1, key + 8, 8);
    memcpy(&k->pay.k0, key + 16, 8);
    memcpy(&k->pay.k1, key + 24, 8);
    /* The NH key: SipHash under the payload key in counter mode, with a
     * domain tag so these outputs never coincide with a payload hash. */
    for (uint64_t i = 0; i < WIRE_NH_WORDS; i++) {
        uint64_t in[2] = {0x6e682d6b6579ull /* "nh-key" */, i};
        k->nh[i] = siphash(&k->pay, in, sizeof in);
    }
    /* The header-only key, likewise, with its own tag. */
    uint64_t hk[2][2] = {{0x686d61632d6b30ull /* "hmac-k0" */, 0}, {0x686d61632d6b31ull, 1}};
    k->hmac.k0 = siphash(&k->hdr, hk[0], sizeof hk[0]);
    k->hmac.k1 = siphash(&k->hdr, hk[1], sizeof hk[1]);
    k->token = siphash(&k->hdr, &job, sizeof job);
    k->mac = mac;
}

/* NH over one block of at most 8 KiB; a partial last 16 bytes is padded
 * with zeros (the length, hashed beside it, tells the paddings apart). */
static unsigned __int128 nh_block(const uint64_t *key, const unsigned char *p, size_t len)
{
    unsigned __int128 sum = 0;
    size_t i = 0;
    for (; len >= 16; len -= 16, p += 16, i += 2) {
        uint64_t m0, m1;
        memcpy(&m0, p, 8);
        memcpy(&m1, p + 8, 8);
        sum += (unsigned __int128)(m0 + key[i]) * (m1 + key[i + 1]);
    }
    if (len) {
        uint64_t m[2] = {0, 0};
        memcpy(m, p, len);
        sum += (unsigned __int128)(m[0] + key[i]) * (m[1] + key[i + 1]);
    }
    return sum;
}

/* Each NH block of the concatenation is hashed where it lies; only a block
 * that straddles the two parts is put together first. In every mode. */
static uint64_t keyed_payload_hash(const struct wire_keys *k, const void *a, size_t alen,
                                   const void *b, size_t blen)
{
    enum { BLOCK = WIRE_NH_WORDS * 8 };
    struct siphash_state s;
    siphash_init(&s, &k->pay);
    size_t len = alen + blen;
    uint64_t len64 = len;
    siphash_update(&s, &len64, sizeof len64);
    const unsigned char *pa = a, *pb = b;
    for (size_t off = 0; off < len; off += BLOCK) {
        size_t n = len - off < BLOCK ? len - off : BLOCK;
        unsigned __int128 h;
        if (off + n <= alen) {
            h = nh_block(k->nh, pa + off, n);
        } else if (off >= alen) {
            h = nh_block(k->nh, pb + (off - alen), n);
        } else {
            unsigned char joined[BLOCK];
            memcpy(joined, pa + off, alen - off);
            memcpy(joined + (alen - off), pb, n - (alen - off));
            h = nh_block(k->nh, joined, n);
        }
        siphash_update(&s, &h, sizeof h);
    }
    return siphash_final(&s);
}

uint64_t wire_payload_hash_full(const struct wire_keys *k, const void *payload, size_t len)
{
    return keyed_payload_hash(k, payload, len, NULL, 0);
}

uint64_t wire_payload_hash(const struct wire_keys *k, const void *payload, size_t len)
{
    return wire_payload_hash2(k, payload, len, NULL, 0);
}

uint64_t wire_payload_hash2(const struct wire_keys *k, const void *a, size_t alen, const void *b,
                            size_t blen)
{
    return k->mac ? keyed_payload_hash(k, a, alen, b, blen) : 0;
}

int wire_is_life(const struct wire_hdr *h)
{
    return h->kind == WIRE_ABORT || h->kind == WIRE_DONE || h->kind == WIRE_LOOK || h->kind == WIRE_SEEN ||
           (h->kind == WIRE_DATA && (h->flags & (WIRE_FIN | WIRE_NOP)));
}

/* Whether h's mac covers its payload: always in mac mode; in token mode
 * for the datagrams that change the job's life only. */
static int full_mac(const struct wire_keys *k, const struct wire_hdr *h)
{
    return k->mac || wire_is_life(h);
}

uint64_t wire_payload_hash_of(const struct wire_keys *k, const struct wire_hdr *h,
                              const void *payload, size_t len)
{
    return full_mac(k, h) ? keyed_payload_hash(k, payload, len, NULL, 0) : 0;
}

/* The header alone, the fields before hmac. */
static uint64_t header_only_mac(const struct wire_keys *k, const struct wire_hdr *h)
{
    return siphash(&k->hmac, h, offsetof(struct wire_hdr, hmac));
}

/* Everything: the header with its hmac, then the payload's hash. */
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
    h->hmac = header_only_mac(k, h);
    h->mac = full_mac(k, h) ? header_mac(k, h, payload_hash) : k->token;
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
        if (h.flags & ~(WIRE_FIRST | WIRE_LAST | WIRE_NOP | WIRE_FIN | WIRE_RTX | WIRE_ECHO_RTX))
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
        if (h.len || (h.flags & ~WIRE_ECHO_RTX))
            return WIRE_FOREIGN;
        break;
    case WIRE_DONE:
        if (h.len || h.flags)
            return WIRE_FOREIGN;
        break;
    case WIRE_ABORT:
        if (h.flags)
            return WIRE_FOREIGN;
        break;
    case WIRE_LOOK:
    case WIRE_SEEN: /* a witness's line (net_send_witness) */
        if (h.flags || !h.len || h.len > NET_WITNESS_LINE_MAX)
            return WIRE_FOREIGN;
        break;
    default:
        return WIRE_FOREIGN;
    }
    /* The header first, in every mode: a forgery of any size is caught
     * before its payload is read, and no field the transport acts on
     * (freshness, acknowledgements, kind) can be made up. */
    if (header_only_mac(k, &h) != h.hmac)
        return WIRE_FORGED;
    if (!full_mac(k, &h))
        return h.mac == k->token ? WIRE_OK : WIRE_FORGED;
    uint64_t want = header_mac(k, &h, keyed_payload_hash(k, (const char *)dgram + sizeof h, h.len,
                                                         NULL, 0));
    return want == h.mac ? WIRE_OK : WIRE_FORGED;
}

/* The length of the UTF-8 sequence at p (at most len bytes) when it is
 * one printable character: shortest form, no surrogate, at most U+10FFFF,
 * not a C1 control (U+0080..U+009F) nor a character that reorders or
 * breaks what a terminal shows (bidirectional controls, U+2028, U+2029).
 * Else 0. */
static size_t printable_utf8(const unsigned char *p, size_t len)
{
    size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    if (n == 0 || n > len || p[0] > 0xf4)
        return 0;
    uint32_t c = p[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c <= 0x9f)
        return 0;
    if (c == 0x061c || (c >= 0x200e && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
        (c >= 0x2066 && c <= 0x2069))
        return 0;
    return n;
}

size_t wire_abort_reason(const void *payload, size_t len, char *out, size_t size)
{
    const unsigned char *p = payload;
    size_t o = 0;
    for (size_t i = 0; i < len && o < size - 1;) {
        size_t u = p[i] >= 0x80 ? printable_utf8(p + i, len - i) : 0;
        if (u && o + u > size - 1)
            break;                      /* a character cut in two is none */
        if (u) {
            memcpy(out + o, p + i, u);
            o += u;
            i += u;
        } else {
            out[o++] = p[i] >= 0x20 && p[i] <= 0x7e ? (char)p[i] : '?';
            i++;
        }
    }
    out[o] = 0;
    return o;
}
