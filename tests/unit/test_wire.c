/*
 * test_wire.c — SipHash-2-4 against the paper's vectors, and the datagram
 * checks: what a sealed datagram must satisfy to pass, and that nothing
 * malformed, altered or forged ever does.
 */
#include "check.h"
#include "net/siphash.h"
#include "net/wire.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


static void fill_random(void *buf, size_t len)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)rng();
}

/* ---- SipHash ------------------------------------------------------------ */

/* SipHash-2-4 of the messages 00, 00 01, 00 01 02, ... (lengths 0..63) under
 * the key 00 01 .. 0f: the 64-bit outputs of the reference implementation's
 * vectors.h (vectors_sip64, there as little-endian bytes). */
static const uint64_t sip64_vectors[64] = {
    0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull,
    0x85676696d7fb7e2dull, 0xcf2794e0277187b7ull, 0x18765564cd99a68dull,
    0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull, 0x93f5f5799a932462ull,
    0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
    0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull,
    0xa129ca6149be45e5ull, 0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull,
    0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull, 0xbed65cf21aa2ee98ull,
    0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
    0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull,
    0x2f2e6163076bcfadull, 0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull,
    0xad87a3535c49ef28ull, 0x32d892fad841c342ull, 0x7127512f72f27cceull,
    0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
    0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull,
    0x9abfd8766a33735cull, 0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull,
    0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull, 0xf935451de4f21df2ull,
    0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
    0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull,
    0xa192d576b245165aull, 0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full,
    0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull, 0xb78dbfaf3a8d83bdull,
    0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
    0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull,
    0x958a324ceb064572ull,
};

static struct siphash_key reference_key(void)
{
    unsigned char k[16];
    struct siphash_key key;
    for (int i = 0; i < 16; i++)
        k[i] = (unsigned char)i;
    memcpy(&key.k0, k, 8); /* little-endian, as the paper reads the key */
    memcpy(&key.k1, k + 8, 8);
    return key;
}

static void test_siphash_matches_paper_vectors(void)
{
    struct siphash_key key = reference_key();
    unsigned char msg[64];
    for (int i = 0; i < 64; i++)
        msg[i] = (unsigned char)i;
    /* The named lengths first, so a failure says which boundary broke. */
    CHECK(siphash(&key, msg, 0) == 0x726fdb47dd0e0e31ull);
    CHECK(siphash(&key, msg, 1) == 0x74f839c593dc67fdull);
    CHECK(siphash(&key, msg, 7) == 0xab0200f58b01d137ull);
    CHECK(siphash(&key, msg, 8) == 0x93f5f5799a932462ull);
    CHECK(siphash(&key, msg, 15) == 0xa129ca6149be45e5ull);
    CHECK(siphash(&key, msg, 63) == 0x958a324ceb064572ull);
    for (size_t len = 0; len < 64; len++) {
        /* From an unaligned copy as well: datagram payloads are not aligned. */
        unsigned char buf[72];
        memcpy(buf + 3, msg, len);
        uint64_t h = siphash(&key, msg, len);
        if (h != sip64_vectors[len])
            fprintf(stderr, "siphash length %zu: got %016llx want %016llx\n", len,
                    (unsigned long long)h, (unsigned long long)sip64_vectors[len]);
        CHECK(h == sip64_vectors[len]);
        CHECK(siphash(&key, buf + 3, len) == sip64_vectors[len]);
    }
}

static uint64_t siphash_in_pieces(const struct siphash_key *key, const unsigned char *msg,
                                  size_t len, const size_t *cuts, int ncuts)
{
    struct siphash_state s;
    siphash_init(&s, key);
    size_t at = 0;
    for (int i = 0; i < ncuts; i++) {
        siphash_update(&s, msg + at, cuts[i] - at);
        at = cuts[i];
    }
    siphash_update(&s, msg + at, len - at);
    return siphash_final(&s);
}

static void test_siphash_incremental_equals_one_shot(void)
{
    struct siphash_key key = reference_key();
    unsigned char msg[600];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)i;

    /* The vectors, fed a byte at a time, with empty updates in between. */
    for (size_t len = 0; len < 64; len++) {
        struct siphash_state s;
        siphash_init(&s, &key);
        siphash_update(&s, msg, 0);
        for (size_t i = 0; i < len; i++) {
            siphash_update(&s, msg + i, 1);
            siphash_update(&s, msg + i, 0);
        }
        CHECK(siphash_final(&s) == sip64_vectors[len]);
    }

    /* Every two-way split of every length up to 40. */
    for (size_t len = 0; len <= 40; len++)
        for (size_t cut = 0; cut <= len; cut++) {
            size_t cuts[1] = {cut};
            CHECK(siphash_in_pieces(&key, msg, len, cuts, 1) == siphash(&key, msg, len));
        }

    /* Random keys, contents and splits. */
    seed(3);
    for (int trial = 0; trial < 5000; trial++) {
        struct siphash_key k = {rng(), rng()};
        size_t len = rng() % sizeof msg;
        fill_random(msg, len);
        size_t cuts[12];
        int ncuts = (int)(rng() % 12);
        for (int i = 0; i < ncuts; i++)
            cuts[i] = len ? rng() % (len + 1) : 0;
        for (int i = 1; i < ncuts; i++) /* sort: cuts must not go backwards */
            for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
                size_t t = cuts[j];
                cuts[j] = cuts[j - 1];
                cuts[j - 1] = t;
            }
        CHECK(siphash_in_pieces(&k, msg, len, cuts, ncuts) == siphash(&k, msg, len));
    }
}

static void test_siphash_depends_on_key_length_and_every_bit(void)
{
    struct siphash_key key = reference_key();
    unsigned char msg[64] = {0};
    uint64_t h = siphash(&key, msg, 16);
    CHECK(siphash(&key, msg, 15) != h); /* trailing zeros count: the length is hashed */
    CHECK(siphash(&key, msg, 17) != h);
    for (int bit = 0; bit < 128; bit++) {
        msg[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK(siphash(&key, msg, 16) != h);
        msg[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        struct siphash_key k2 = key;
        if (bit < 64)
            k2.k0 ^= 1ull << bit;
        else
            k2.k1 ^= 1ull << (bit - 64);
        CHECK(siphash(&k2, msg, 16) != h);
    }
}

/* ---- datagrams ---------------------------------------------------------- */

#define JOB      0x0123456789abcdefull
#define NODES    5
#define SELF     3
#define PEER     1
#define MAXPAY   1024
#define HDR      sizeof(struct wire_hdr)
#define LINE_MAX_BYTES 96 /* a look's line at most (base/launch.h, BOOT_ARBITER_LINE_MAX) */

static unsigned char key_bytes[32];

struct dgram {
    struct wire_hdr h;
    unsigned char   pay[MAXPAY + 64];
};

static void keys(struct wire_keys *k, int mac)
{
    for (int i = 0; i < 32; i++)
        key_bytes[i] = (unsigned char)(0x40 + 7 * i);
    wire_keys_init(k, key_bytes, JOB, mac);
}

/* A well-formed header from PEER to SELF. */
static struct wire_hdr header(uint16_t kind, uint16_t flags, uint32_t len)
{
    struct wire_hdr h;
    memset(&h, 0, sizeof h);
    h.magic = WIRE_MAGIC;
    h.kind = kind;
    h.flags = flags;
    h.job = JOB;
    h.src = PEER;
    h.dst = SELF;
    h.len = len;
    h.seq = 77;
    h.ack = 12;
    h.sack = 0x5;
    return h;
}

/* A data fragment [off, off+len) of a message of msg_len bytes. */
static struct wire_hdr fragment(uint16_t flags, uint32_t off, uint32_t len, uint32_t msg_len)
{
    struct wire_hdr h = header(WIRE_DATA, flags, len);
    h.frag_off = off;
    h.msg_len = msg_len;
    return h;
}

/* Fills d's payload with a pattern and seals it with k. Returns its size. */
static size_t seal(const struct wire_keys *k, struct dgram *d, struct wire_hdr h)
{
    d->h = h;
    size_t n = h.len < MAXPAY + 64 ? h.len : MAXPAY + 64;
    for (size_t i = 0; i < n; i++)
        d->pay[i] = (unsigned char)(i * 31 + 5);
    wire_seal(k, &d->h, wire_payload_hash_of(k, &d->h, d->pay, n));
    return HDR + h.len;
}

static enum wire_verdict check(const struct wire_keys *k, const struct dgram *d, size_t len)
{
    return wire_check(k, d, len, JOB, SELF, NODES, MAXPAY);
}

/* Seals h and checks the result. */
static enum wire_verdict seal_and_check(const struct wire_keys *k, struct wire_hdr h)
{
    static struct dgram d;
    size_t len = seal(k, &d, h);
    return check(k, &d, len);
}

/* Every well-formed kind of datagram, for the tests that alter one. */
static struct wire_hdr good_headers(int i)
{
    switch (i) {
    case 0: return fragment(WIRE_FIRST | WIRE_LAST, 0, 100, 100);    /* whole message */
    case 1: return fragment(WIRE_FIRST, 0, MAXPAY, 3 * MAXPAY);      /* first of three */
    case 2: return fragment(0, MAXPAY, MAXPAY, 3 * MAXPAY);          /* middle */
    case 3: return fragment(WIRE_LAST, 2 * MAXPAY, 17, 2 * MAXPAY + 17); /* last */
    case 4: return fragment(WIRE_FIRST | WIRE_LAST, 0, 0, 0);        /* empty message */
    case 5: return header(WIRE_DATA, WIRE_NOP, 0);
    case 6: return header(WIRE_DATA, WIRE_FIN, 0);
    case 7: return header(WIRE_ACK, 0, 0);
    case 8: return header(WIRE_DONE, 0, 0);
    case 9: return header(WIRE_ABORT, 0, 40);                       /* with its reason */
    case 10: return header(WIRE_ABORT, 0, 0);
    case 11: return fragment(WIRE_FIRST | WIRE_LAST, 0, MAXPAY, MAXPAY); /* at the max */
    case 12: return header(WIRE_LOOK, 0, 6);                        /* "look 3" */
    default: return header(WIRE_SEEN, 0, LINE_MAX_BYTES);           /* the longest line */
    }
}
#define NGOOD 14

static void test_sealed_datagrams_pass_in_mac_and_token_mode(void)
{
    for (int mac = 0; mac <= 1; mac++) {
        struct wire_keys k;
        keys(&k, mac);
        CHECK_EQ(k.mac, mac);
        for (int i = 0; i < NGOOD; i++)
            CHECK_EQ(seal_and_check(&k, good_headers(i)), WIRE_OK);
        /* Any sender rank inside the job, including self (loopback). */
        for (int src = 0; src < NODES; src++) {
            struct wire_hdr h = good_headers(0);
            h.src = (uint16_t)src;
            CHECK_EQ(seal_and_check(&k, h), WIRE_OK);
        }
        /* Sequence and acknowledgement fields take any value. */
        struct wire_hdr h = good_headers(0);
        h.seq = 0xffffffffu;
        h.ack = 0;
        h.sack = ~0ull;
        CHECK_EQ(seal_and_check(&k, h), WIRE_OK);
    }
    /* Token mode: a message fragment's mac field is the keyed job token,
     * whatever its payload; a life datagram's is its full mac. */
    struct wire_keys k;
    keys(&k, 0);
    CHECK(wire_payload_hash(&k, "abc", 3) == 0);
    static struct dgram d;
    for (int i = 0; i < NGOOD; i++) {
        seal(&k, &d, good_headers(i));
        CHECK_EQ(d.h.mac == k.token, !wire_is_life(&d.h));
    }
    CHECK(k.token != 0);
}

/* A datagram whose payload lies in two places (a head the transport holds,
 * then lent pages) hashes as the one payload it puts on the wire, wherever
 * the cut falls: at 0, inside an NH block, on a block's edge, past one. */
static void test_payload_hash_in_two_parts_equals_the_whole(void)
{
    struct wire_keys k;
    keys(&k, 1);
    enum { MAX = 3 * 8192 + 100 };
    unsigned char *buf = malloc(MAX);
    fill_random(buf, MAX);
    const size_t lens[] = {0, 1, 15, 16, 17, 100, 8191, 8192, 8193, 2 * 8192 + 24, MAX};
    const size_t cuts[] = {0, 1, 7, 16, 24, 40, 4096, 8191, 8192, 8193, 8192 + 24, 2 * 8192};
    int agree = 1;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        for (size_t j = 0; j < sizeof cuts / sizeof *cuts; j++) {
            size_t len = lens[i], cut = cuts[j] < len ? cuts[j] : len;
            /* b comes from elsewhere in memory, as lent pages do */
            unsigned char *b = malloc(len - cut + 1);
            memcpy(b, buf + cut, len - cut);
            if (wire_payload_hash2(&k, buf, cut, b, len - cut) != wire_payload_hash(&k, buf, len)) {
                agree = 0;
                fprintf(stderr, "length %zu cut at %zu: the parts hash differently\n", len, cut);
            }
            if (len > cut) { /* and the second part is hashed, not skipped */
                b[(len - cut) / 2] ^= 0x10;
                CHECK(wire_payload_hash2(&k, buf, cut, b, len - cut) !=
                      wire_payload_hash(&k, buf, len));
            }
            free(b);
        }
    CHECK(agree);
    free(buf);
}

/* Seals h and expects FOREIGN: the structural checks reject it whatever
 * its mac says. */
static void expect_foreign(struct wire_hdr h, int line)
{
    for (int mac = 0; mac <= 1; mac++) {
        struct wire_keys k;
        keys(&k, mac);
        enum wire_verdict v = seal_and_check(&k, h);
        if (v != WIRE_FOREIGN)
            fprintf(stderr, "line %d (mac %d): verdict %d, want FOREIGN\n", line, mac, v);
        CHECK_EQ(v, WIRE_FOREIGN);
    }
}
#define EXPECT_FOREIGN(h) expect_foreign((h), __LINE__)

static void test_foreign_header_fields_are_rejected(void)
{
    struct wire_hdr h;
    for (int i = 0; i < NGOOD; i++) {
        h = good_headers(i);
        h.magic ^= 1;
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.magic = 0;
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.job = JOB + 1; /* another job on the same port */
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.dst = SELF + 1; /* for another node */
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.dst = SELF + 0x100;
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.src = NODES; /* no such rank */
        EXPECT_FOREIGN(h);
        h = good_headers(i);
        h.src = 0xffff;
        EXPECT_FOREIGN(h);
    }
}

static void test_length_mismatch_is_rejected(void)
{
    for (int mac = 0; mac <= 1; mac++) {
        struct wire_keys k;
        keys(&k, mac);
        static struct dgram d;
        for (int i = 0; i < NGOOD; i++) {
            size_t len = seal(&k, &d, good_headers(i));
            CHECK_EQ(check(&k, &d, len), WIRE_OK);
            CHECK_EQ(check(&k, &d, len - 1), WIRE_FOREIGN); /* truncated by one */
            CHECK_EQ(check(&k, &d, len + 1), WIRE_FOREIGN); /* one byte extra */
        }
        /* Shorter than a header, down to nothing. */
        seal(&k, &d, good_headers(4));
        for (size_t len = 0; len < HDR; len++)
            CHECK_EQ(check(&k, &d, len), WIRE_FOREIGN);
        /* A header claiming more than the datagram has. */
        size_t len = seal(&k, &d, good_headers(0));
        d.h.len += 8;
        wire_seal(&k, &d.h, wire_payload_hash(&k, d.pay, d.h.len));
        CHECK_EQ(check(&k, &d, len), WIRE_FOREIGN);
    }
}

static void test_payload_over_the_maximum_is_rejected(void)
{
    EXPECT_FOREIGN(fragment(WIRE_FIRST | WIRE_LAST, 0, MAXPAY + 1, MAXPAY + 1));
    EXPECT_FOREIGN(fragment(WIRE_FIRST, 0, MAXPAY + 1, 4 * MAXPAY));
    EXPECT_FOREIGN(header(WIRE_ABORT, 0, MAXPAY + 1));
    EXPECT_FOREIGN(header(WIRE_ABORT, 0, MAXPAY + 64));
    /* The same datagram is fine where the maximum allows it. */
    struct wire_keys k;
    keys(&k, 1);
    static struct dgram d;
    size_t len = seal(&k, &d, fragment(WIRE_FIRST | WIRE_LAST, 0, MAXPAY + 1, MAXPAY + 1));
    CHECK_EQ(wire_check(&k, &d, len, JOB, SELF, NODES, MAXPAY + 1), WIRE_OK);
    CHECK_EQ(wire_check(&k, &d, len, JOB, SELF, NODES, MAXPAY), WIRE_FOREIGN);
}

static void test_unknown_kind_is_rejected(void)
{
    static const uint16_t kinds[] = {0, 7, 8, 0x100, 0x8001, 0xffff};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        EXPECT_FOREIGN(header(kinds[i], 0, 0));
        EXPECT_FOREIGN(header(kinds[i], 0, 10));
        struct wire_hdr h = fragment(WIRE_FIRST | WIRE_LAST, 0, 10, 10);
        h.kind = kinds[i];
        EXPECT_FOREIGN(h);
    }
}

static void test_bad_flag_combinations_are_rejected(void)
{
    /* Heartbeat and finish carry nothing and are nothing else. */
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_NOP, 1));
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_FIN, 8));
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_NOP | WIRE_FIN, 0));
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_NOP | WIRE_FIRST, 0));
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_NOP | WIRE_LAST, 0));
    EXPECT_FOREIGN(header(WIRE_DATA, WIRE_FIN | WIRE_FIRST | WIRE_LAST, 0));
    /* Which copy arrived: on data, and the echo alone on an ack. */
    struct wire_keys kr;
    keys(&kr, 1);
    CHECK_EQ(seal_and_check(&kr, fragment(WIRE_FIRST | WIRE_LAST | WIRE_RTX | WIRE_ECHO_RTX, 0, 10, 10)), WIRE_OK);
    CHECK_EQ(seal_and_check(&kr, header(WIRE_DATA, WIRE_NOP | WIRE_RTX, 0)), WIRE_OK);
    CHECK_EQ(seal_and_check(&kr, header(WIRE_ACK, WIRE_ECHO_RTX, 0)), WIRE_OK);
    EXPECT_FOREIGN(header(WIRE_ACK, WIRE_RTX, 0));
    EXPECT_FOREIGN(header(WIRE_DONE, WIRE_ECHO_RTX, 0));
    EXPECT_FOREIGN(header(WIRE_ABORT, WIRE_ECHO_RTX, 4));
    /* A host mate's look, asked and answered: a line, no flags. */
    for (uint16_t kind = WIRE_LOOK; kind <= WIRE_SEEN; kind++) {
        EXPECT_FOREIGN(header(kind, 0, 0));
        EXPECT_FOREIGN(header(kind, 0, LINE_MAX_BYTES + 1));
        EXPECT_FOREIGN(header(kind, WIRE_ECHO_RTX, 6));
        EXPECT_FOREIGN(header(kind, WIRE_FIRST | WIRE_LAST, 6));
    }
    /* Unknown flag bits. */
    for (int bit = 6; bit < 16; bit++) {
        EXPECT_FOREIGN(fragment((uint16_t)(WIRE_FIRST | WIRE_LAST | (1u << bit)), 0, 10, 10));
        EXPECT_FOREIGN(header(WIRE_DATA, (uint16_t)(WIRE_NOP | (1u << bit)), 0));
    }
    /* Fragments must lie inside their message. */
    EXPECT_FOREIGN(fragment(WIRE_FIRST, 8, 10, 100));          /* first not at 0 */
    EXPECT_FOREIGN(fragment(WIRE_FIRST | WIRE_LAST, 1, 9, 10));
    EXPECT_FOREIGN(fragment(WIRE_LAST, 50, 10, 100));          /* last not at the end */
    EXPECT_FOREIGN(fragment(WIRE_FIRST | WIRE_LAST, 0, 10, 11));
    EXPECT_FOREIGN(fragment(WIRE_FIRST | WIRE_LAST, 0, 0, 1));
    EXPECT_FOREIGN(fragment(0, 95, 10, 100));                  /* beyond msg_len */
    EXPECT_FOREIGN(fragment(0, 0, 10, 9));
    EXPECT_FOREIGN(fragment(0, 100, 1, 100));
    EXPECT_FOREIGN(fragment(0, 0xfffffff8u, 10, 0xffffffffu)); /* offset + len wraps */
    EXPECT_FOREIGN(fragment(0, 0xffffffffu, 1, 10));
    EXPECT_FOREIGN(fragment(WIRE_LAST, 0xfffffffcu, 8, 4));
    /* The same shapes inside their message pass. */
    struct wire_keys k;
    keys(&k, 1);
    CHECK_EQ(seal_and_check(&k, fragment(0, 90, 10, 100)), WIRE_OK);
    CHECK_EQ(seal_and_check(&k, fragment(0, 0xfffffff0u, 10, 0xffffffffu)), WIRE_OK);
    CHECK_EQ(seal_and_check(&k, fragment(WIRE_LAST, 0xfffffff5u, 10, 0xffffffffu)), WIRE_OK);
    /* Acknowledgements and "done" carry nothing and have no flags (an
     * acknowledgement but the echo of a retransmission); an abort carries
     * its reason but no flags either. */
    EXPECT_FOREIGN(header(WIRE_ACK, 0, 1));
    EXPECT_FOREIGN(header(WIRE_ACK, 0, 100));
    EXPECT_FOREIGN(header(WIRE_DONE, 0, 4));
    for (int bit = 0; bit < 16; bit++) {
        if ((1u << bit) != WIRE_ECHO_RTX)
            EXPECT_FOREIGN(header(WIRE_ACK, (uint16_t)(1u << bit), 0));
        EXPECT_FOREIGN(header(WIRE_DONE, (uint16_t)(1u << bit), 0));
        EXPECT_FOREIGN(header(WIRE_ABORT, (uint16_t)(1u << bit), 10));
    }
}

/* Whether byte `off` of a datagram lies in a field that only the mac
 * protects (the structural checks accept any value there). */
static int mac_only_byte(size_t off)
{
    return (off >= offsetof(struct wire_hdr, seq) && off < offsetof(struct wire_hdr, msg_len)) ||
           off >= offsetof(struct wire_hdr, fresh);
}

static void test_any_flipped_bit_is_caught_in_mac_mode(void)
{
    struct wire_keys k;
    keys(&k, 1);
    static struct dgram d, orig;
    for (int i = 0; i < NGOOD; i++) {
        size_t len = seal(&k, &orig, good_headers(i));
        for (size_t off = 0; off < len; off++)
            for (int bit = 0; bit < 8; bit++) {
                memcpy(&d, &orig, len);
                ((unsigned char *)&d)[off] ^= (unsigned char)(1u << bit);
                enum wire_verdict v = check(&k, &d, len);
                if (v == WIRE_OK)
                    fprintf(stderr, "header %d: flip of byte %zu bit %d passed\n", i, off, bit);
                CHECK(v != WIRE_OK);
                if (mac_only_byte(off))
                    CHECK_EQ(v, WIRE_FORGED);
            }
    }
}

/* A forgery is rejected on its header alone: the payload it claims lies on
 * a page that cannot be read, and the check must not touch it. A sealed
 * datagram's payload, by contrast, is read and authenticated: change a byte
 * of it and the header still passes but the datagram does not. */
static void test_forged_header_is_rejected_before_the_payload_is_read(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    CHECK(mprotect(map + pg, (size_t)pg, PROT_NONE) == 0);
    struct wire_hdr *at = (struct wire_hdr *)(map + pg - HDR); /* payload: the unreadable page */
    for (int mac = 0; mac <= 1; mac++) {
        struct wire_keys k, wrong;
        keys(&k, mac);
        unsigned char other[32];
        memcpy(other, key_bytes, 32);
        other[3] ^= 1;
        wire_keys_init(&wrong, other, JOB, mac);
        struct wire_hdr h = fragment(WIRE_FIRST | WIRE_LAST, 0, MAXPAY, MAXPAY);
        h.hmac = 0x1234;
        h.mac = 0x5678;
        memcpy(at, &h, HDR);
        CHECK_EQ(wire_check(&k, at, HDR + MAXPAY, JOB, SELF, NODES, MAXPAY), WIRE_FORGED);
        wire_seal(&wrong, &h, 0);        /* the wrong key's header mac */
        memcpy(at, &h, HDR);
        CHECK_EQ(wire_check(&k, at, HDR + MAXPAY, JOB, SELF, NODES, MAXPAY), WIRE_FORGED);
    }
    CHECK(munmap(map, (size_t)pg * 2) == 0);

    struct wire_keys k;
    keys(&k, 1);
    static struct dgram d;
    size_t len = seal(&k, &d, good_headers(11));
    CHECK_EQ(check(&k, &d, len), WIRE_OK);
    d.pay[MAXPAY - 1] ^= 0x80;          /* the header's own mac still holds */
    CHECK_EQ(check(&k, &d, len), WIRE_FORGED);
}

static void test_wrong_key_is_forged(void)
{
    for (int mac = 0; mac <= 1; mac++) {
        struct wire_keys good, bad;
        keys(&good, mac);
        for (int b = 0; b < 32; b++) {
            unsigned char other[32];
            memcpy(other, key_bytes, 32);
            other[b] ^= 0x10;
            wire_keys_init(&bad, other, JOB, mac);
            for (int i = 0; i < NGOOD; i++) {
                static struct dgram d;
                size_t len = seal(&bad, &d, good_headers(i));
                enum wire_verdict v = check(&good, &d, len);
                /* In token mode the payload half of the key serves only the
                 * life datagrams' full mac. */
                if (mac || b < 16 || wire_is_life(&d.h))
                    CHECK_EQ(v, WIRE_FORGED);
                else
                    CHECK_EQ(v, WIRE_OK);
            }
        }
    }
}

static void test_token_mode_authenticates_headers_not_data_payloads(void)
{
    struct wire_keys k;
    keys(&k, 0);
    static struct dgram d, orig;
    size_t len = seal(&k, &orig, good_headers(1));
    /* A message fragment's payload may change under a token... */
    for (size_t off = HDR; off < len; off += 97) {
        memcpy(&d, &orig, len);
        d.pay[off - HDR] ^= 0xff;
        CHECK_EQ(check(&k, &d, len), WIRE_OK);
    }
    /* ...its header may not: every field the transport acts on. */
    for (size_t off = 0; off < offsetof(struct wire_hdr, hmac); off++) {
        memcpy(&d, &orig, len);
        ((unsigned char *)&d.h)[off] ^= 0x01;
        CHECK(check(&k, &d, len) != WIRE_OK);
    }
    memcpy(&d, &orig, len);
    d.h.seq ^= 0x1234;
    d.h.sack = 0;
    CHECK_EQ(check(&k, &d, len), WIRE_FORGED);
    /* ...the structural checks still apply... */
    memcpy(&d, &orig, len);
    d.h.src = NODES;
    CHECK_EQ(check(&k, &d, len), WIRE_FOREIGN);
    /* ...and the token itself must be right. */
    memcpy(&d, &orig, len);
    d.h.mac ^= 1;
    CHECK_EQ(check(&k, &d, len), WIRE_FORGED);
    /* The token belongs to the job: another job's token fails here. */
    struct wire_keys other;
    wire_keys_init(&other, key_bytes, JOB + 1, 0);
    CHECK(other.token != k.token);
    memcpy(&d, &orig, len);
    d.h.mac = other.token;
    CHECK_EQ(check(&k, &d, len), WIRE_FORGED);
    /* A mac-mode receiver does not take a token. */
    struct wire_keys mk;
    keys(&mk, 1);
    CHECK_EQ(check(&mk, &orig, len), WIRE_FORGED);
}

/* Token mode, as an outsider sees it: one captured datagram gives away the
 * token, and once gave away the job — an ABORT made of the token ended it
 * in 6 ms, a made-up freshness counter cut a live peer off (its genuine
 * datagrams then looked old), a made-up DONE or FIN finished it. The
 * datagrams that change the job's life carry the full mac in every mode,
 * and every header its own. */
static void test_token_mode_life_datagrams_cannot_be_forged_from_a_captured_token(void)
{
    struct wire_keys k;
    keys(&k, 0);
    static struct dgram captured, d;
    size_t clen = seal(&k, &captured, good_headers(0));
    CHECK_EQ(check(&k, &captured, clen), WIRE_OK);
    uint64_t token = captured.h.mac;   /* all the outsider learns */
    /* Every life datagram, made by the outsider with the token. */
    static const struct {
        uint16_t kind, flags;
        uint32_t len;
    } life[] = {{WIRE_ABORT, 0, 12}, {WIRE_ABORT, 0, 0}, {WIRE_DONE, 0, 0},
                {WIRE_DATA, WIRE_FIN, 0}, {WIRE_DATA, WIRE_NOP, 0},
                {WIRE_LOOK, 0, 6},        {WIRE_SEEN, 0, 12}};
    for (size_t i = 0; i < sizeof life / sizeof life[0]; i++) {
        memset(&d, 0, sizeof d);
        d.h = header(life[i].kind, life[i].flags, life[i].len);
        d.h.fresh = 1000000;
        memcpy(d.pay, "forged: bye!", life[i].len);
        d.h.hmac = d.h.mac = token;
        CHECK(wire_is_life(&d.h));
        CHECK_EQ(check(&k, &d, HDR + life[i].len), WIRE_FORGED);
        /* ...or with the captured header's hmac, which is no better. */
        d.h.hmac = captured.h.hmac;
        CHECK_EQ(check(&k, &d, HDR + life[i].len), WIRE_FORGED);
    }
    /* The captured datagram again, under a made-up freshness counter or
     * acknowledgement. */
    memcpy(&d, &captured, clen);
    d.h.fresh += 1ull << 40;
    CHECK_EQ(check(&k, &d, clen), WIRE_FORGED);
    memcpy(&d, &captured, clen);
    d.h.ack += 100;
    CHECK_EQ(check(&k, &d, clen), WIRE_FORGED);
    /* A genuine ABORT passes; its reason cannot be altered on the way. */
    size_t alen = seal(&k, &d, header(WIRE_ABORT, 0, 40));
    CHECK_EQ(check(&k, &d, alen), WIRE_OK);
    CHECK(d.h.mac != k.token);
    d.pay[3] ^= 0x20;
    CHECK_EQ(check(&k, &d, alen), WIRE_FORGED);
}

/* What wire.h promises about a header that passes, written independently
 * of wire.c: the fuzz below compares the two. */
static int model_well_formed(const struct wire_hdr *h, size_t len, size_t maxpay)
{
    if (len < HDR || h->magic != WIRE_MAGIC || h->job != JOB || h->dst != SELF ||
        h->src >= NODES || h->len != len - HDR || h->len > maxpay)
        return 0;
    int nop = !!(h->flags & WIRE_NOP), fin = !!(h->flags & WIRE_FIN);
    int first = !!(h->flags & WIRE_FIRST), last = !!(h->flags & WIRE_LAST);
    uint64_t end = (uint64_t)h->frag_off + h->len;
    switch (h->kind) {
    case WIRE_DATA:
        if (h->flags & ~(unsigned)(WIRE_FIRST | WIRE_LAST | WIRE_NOP | WIRE_FIN | WIRE_RTX | WIRE_ECHO_RTX))
            return 0;
        if (nop || fin)
            return !(nop && fin) && !first && !last && h->len == 0;
        return end <= h->msg_len && (!first || h->frag_off == 0) &&
               (!last || end == h->msg_len);
    case WIRE_ACK:
        return (h->flags & ~(unsigned)WIRE_ECHO_RTX) == 0 && h->len == 0;
    case WIRE_DONE:
        return h->flags == 0 && h->len == 0;
    case WIRE_ABORT:
        return h->flags == 0;
    case WIRE_LOOK:
    case WIRE_SEEN:
        return h->flags == 0 && h->len >= 1 && h->len <= LINE_MAX_BYTES;
    default:
        return 0;
    }
}

static void test_random_buffers_never_pass(void)
{
    struct wire_keys k;
    keys(&k, 1);
    struct wire_keys t;
    keys(&t, 0);
    seed(4);
    int ok = 0;
    for (int i = 0; i < 100000; i++) {
        size_t len = rng() % (HDR + 300);
        /* An exactly sized heap buffer, so a read past it is caught. */
        unsigned char *b = malloc(len ? len : 1);
        fill_random(b, len);
        if (wire_check(&k, b, len, JOB, SELF, NODES, MAXPAY) == WIRE_OK)
            ok++;
        if (wire_check(&t, b, len, JOB, SELF, NODES, MAXPAY) == WIRE_OK)
            ok++;
        free(b);
    }
    CHECK_EQ(ok, 0);
}

/* Random headers that get past the first checks (right magic, job, ranks
 * and length) exercise the kind and flag rules: each is sealed with the
 * right key, so wire_check must pass it exactly when the model says it is
 * well formed; unsealed, it never passes. */
static void test_random_headers_pass_exactly_when_well_formed(void)
{
    struct wire_keys k;
    keys(&k, 1);
    seed(5);
    int passed = 0, agree = 1;
    for (int i = 0; i < 100000; i++) {
        struct wire_hdr h;
        fill_random(&h, sizeof h);
        h.magic = WIRE_MAGIC;
        h.job = JOB;
        h.dst = SELF;
        h.src = (uint16_t)(rng() % (NODES + 1));
        h.kind = (uint16_t)(rng() % 8);
        h.flags = (uint16_t)(rng() % 8 ? rng() % 16 : rng() % 0x10000);
        uint32_t plen = (uint32_t)(rng() % 3 ? 0 : rng() % (MAXPAY + 2));
        h.len = plen;
        switch (rng() % 4) { /* make the fragment fields plausible often */
        case 0: h.msg_len = plen; h.frag_off = 0; break;
        case 1: h.msg_len = plen + (uint32_t)(rng() % 50); h.frag_off = h.msg_len - plen; break;
        case 2: h.msg_len = (uint32_t)(rng() % 4096); h.frag_off = (uint32_t)(rng() % 4096); break;
        default: break;
        }
        size_t len = HDR + plen;
        if (rng() % 16 == 0) /* sometimes one byte too many or too few */
            len = rng() % 2 ? len + 1 : plen ? len - 1 : len;
        unsigned char *b = malloc(len);
        fill_random(b + HDR, len - HDR);
        struct wire_hdr sealed = h;
        wire_seal(&k, &sealed, wire_payload_hash(&k, b + HDR, plen <= len - HDR ? plen : 0));
        memcpy(b, &h, HDR);
        if (wire_check(&k, b, len, JOB, SELF, NODES, MAXPAY) == WIRE_OK)
            agree = 0; /* unsealed: random mac */
        memcpy(b, &sealed, HDR);
        int want = model_well_formed(&sealed, len, MAXPAY);
        enum wire_verdict v = wire_check(&k, b, len, JOB, SELF, NODES, MAXPAY);
        if ((v == WIRE_OK) != want) {
            agree = 0;
            fprintf(stderr, "kind %u flags %#x len %u off %u msg %u size %zu: verdict %d, model %d\n",
                    h.kind, h.flags, h.len, h.frag_off, h.msg_len, len, v, want);
        }
        if (want && v != WIRE_OK)
            CHECK_EQ(v, WIRE_OK);
        passed += v == WIRE_OK;
        free(b);
    }
    CHECK(agree);
    CHECK(passed > 1000); /* the generator reached the accepting paths */
}

/* An ABORT's reason reaches the terminal as plain, bounded text. */
static void test_abort_reason_is_printable_and_bounded(void)
{
    char out[257];
    const char evil[] = "\x1b[31mred\x1b]0;title\x07 \x9b" "2J\r\nline\x7f\x00" "end";
    size_t n = wire_abort_reason(evil, sizeof evil - 1, out, sizeof out);
    CHECK_EQ(n, sizeof evil - 1);
    CHECK(strcmp(out, "?[31mred?]0;title? ?2J??line??end") == 0);
    for (size_t i = 0; i < n; i++)
        CHECK(out[i] >= 0x20 && out[i] <= 0x7e);
    /* Every byte value, and a reason longer than the room. */
    unsigned char all[1000];
    for (size_t i = 0; i < sizeof all; i++)
        all[i] = (unsigned char)i;
    n = wire_abort_reason(all, sizeof all, out, sizeof out);
    CHECK_EQ(n, sizeof out - 1);
    CHECK_EQ(strlen(out), sizeof out - 1);
    for (size_t i = 0; i < n; i++)
        CHECK(out[i] == (all[i] >= 0x20 && all[i] <= 0x7e ? (char)all[i] : '?'));
    CHECK_EQ(wire_abort_reason(all, 0, out, sizeof out), 0);
    CHECK_EQ(out[0], 0);
    CHECK_EQ(wire_abort_reason(all, 10, out, 1), 0);
    CHECK_EQ(out[0], 0);
}

/* Non-ASCII text a node's reason holds survives the relay whole; what
 * could still steer a terminal does not. */
static void test_abort_reason_keeps_utf8_text(void)
{
    char out[64];
    const char times[] = "2 nodes \xc3\x97 2 threads, caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82";
    size_t n = wire_abort_reason(times, sizeof times - 1, out, sizeof out);
    CHECK_EQ(n, sizeof times - 1);
    CHECK(strcmp(out, times) == 0);
    /* C1 controls as UTF-8 (U+0085, U+009B CSI), overlong '/', a surrogate,
     * a right-to-left override, U+2028, a lone lead byte, a cut sequence. */
    const char bad[] = "a\xc2\x85" "b\xc2\x9b" "c\xc0\xaf" "d\xed\xa0\x80" "e\xe2\x80\xae" "f\xe2\x80\xa8" "g\xc3" "h\xe2\x82";
    n = wire_abort_reason(bad, sizeof bad - 1, out, sizeof out);
    CHECK(strcmp(out, "a??b??c??d???e???f???g?h??") == 0);
    /* a character that does not fit whole is left out, not cut */
    n = wire_abort_reason("ab\xc3\x97", 4, out, 4);
    CHECK_EQ(n, 2);
    CHECK(strcmp(out, "ab") == 0);
}

int main(void)
{
    test_abort_reason_keeps_utf8_text();
    test_siphash_matches_paper_vectors();
    test_siphash_incremental_equals_one_shot();
    test_siphash_depends_on_key_length_and_every_bit();
    test_sealed_datagrams_pass_in_mac_and_token_mode();
    test_payload_hash_in_two_parts_equals_the_whole();
    test_foreign_header_fields_are_rejected();
    test_length_mismatch_is_rejected();
    test_payload_over_the_maximum_is_rejected();
    test_unknown_kind_is_rejected();
    test_bad_flag_combinations_are_rejected();
    test_any_flipped_bit_is_caught_in_mac_mode();
    test_forged_header_is_rejected_before_the_payload_is_read();
    test_wrong_key_is_forged();
    test_token_mode_authenticates_headers_not_data_payloads();
    test_token_mode_life_datagrams_cannot_be_forged_from_a_captured_token();
    test_random_buffers_never_pass();
    test_random_headers_pass_exactly_when_well_formed();
    test_abort_reason_is_printable_and_bounded();
    return check_report("test_wire");
}
