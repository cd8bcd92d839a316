/*
 * fuzz_wire.c — the datagram checks (src/net/wire.c) on any bytes.
 *
 * Each input is checked as it came (mac and token mode): it must never be
 * accepted, since the fuzzer cannot know the key. Then the same bytes are
 * made to pass the cheap checks (magic, job, ranks, length) and sealed with
 * the job's key, so that the kind, flag and fragment rules and the
 * authentication of what is accepted run as well: a sealed datagram passes
 * exactly when its header is well formed, and any change to a sealed one's
 * bytes is caught. The ABORT reason's sanitiser runs on the payload.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/wire.h"

#define JOB    0x5eed5eed12345678ull
#define SELF   2
#define NODES  4
#define MAXPAY 2048

static struct wire_keys keys[2]; /* token, mac */

static void init(void)
{
    static int done;
    if (done)
        return;
    uint8_t k[32];
    for (int i = 0; i < 32; i++)
        k[i] = (uint8_t)(i * 29 + 3);
    wire_keys_init(&keys[0], k, JOB, 0);
    wire_keys_init(&keys[1], k, JOB, 1);
    done = 1;
}

/* What a relayed reason may hold, decoded here independently of wire.c:
 * printable ASCII, and whole UTF-8 characters in shortest form, neither
 * surrogates nor C1 controls, nor those that reorder or break a terminal's
 * line (U+061C, U+200E-200F, U+2028-202E, U+2066-2069). */
static int printable_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char b = s[i];
        if (b < 0x80) {
            if (b < 0x20 || b == 0x7f)
                return 0;
            i++;
            continue;
        }
        size_t len = 0;
        while (len < 8 && (b << len & 0x80))
            len++;
        if (len < 2 || len > 4 || i + len > n)
            return 0;
        uint32_t c = b & (0xffu >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] >> 6) != 2)
                return 0;
            c = c << 6 | (s[i + k] & 0x3f);
        }
        uint32_t shortest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (c < shortest || c > 0x10ffff || (c >= 0xd800 && c < 0xe000) || c < 0xa0 ||
            c == 0x061c || (c >= 0x200e && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
            (c >= 0x2066 && c <= 0x2069))
            return 0;
        i += len;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    /* exactly sized, so ASan sees any read past the datagram */
    unsigned char *d = malloc(size ? size : 1);
    memcpy(d, data, size);
    for (int m = 0; m < 2; m++)
        if (wire_check(&keys[m], d, size, JOB, SELF, NODES, MAXPAY) == WIRE_OK)
            abort(); /* accepted without the key */

    char reason[257];
    size_t n = wire_abort_reason(data, size, reason, sizeof reason);
    if (n >= sizeof reason || reason[n] != 0)
        abort();
    if (!printable_text((const unsigned char *)reason, n))
        abort(); /* a control, broken UTF-8 or a reordering character got through */

    struct wire_hdr h;
    if (size >= sizeof h) {
        memcpy(&h, d, sizeof h);
        h.magic = WIRE_MAGIC;
        h.job = JOB;
        h.dst = SELF;
        h.src %= NODES;
        h.len = (uint32_t)(size - sizeof h);
        for (int m = 0; m < 2; m++) {
            wire_seal(&keys[m], &h, wire_payload_hash_of(&keys[m], &h, d + sizeof h, h.len));
            memcpy(d, &h, sizeof h);
            enum wire_verdict v = wire_check(&keys[m], d, size, JOB, SELF, NODES, MAXPAY);
            if (v == WIRE_FORGED)
                abort(); /* sealed with the right key */
            if (v == WIRE_OK && m == 1 && size > 0) {
                /* any one flipped bit, chosen by the input, is caught */
                size_t at = (size_t)h.seq % size;
                d[at] ^= (unsigned char)(1u << (h.ack % 8));
                if (wire_check(&keys[m], d, size, JOB, SELF, NODES, MAXPAY) == WIRE_OK)
                    abort();
                d[at] ^= (unsigned char)(1u << (h.ack % 8));
            }
        }
    }
    free(d);
    return 0;
}
