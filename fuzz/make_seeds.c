/*
 * make_seeds.c — writes the seed corpora (fuzz/corpus/<target>/): a few
 * well-formed inputs of each kind, from which the fuzzers mutate. Built and
 * run by hand when a format changes:
 *   cc -D_GNU_SOURCE -Isrc -Iinclude fuzz/make_seeds.c src/ipc/msg.c src/base/log.c -o /tmp/make_seeds && /tmp/make_seeds fuzz/corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg.h"
#include "net/wire.h"

static const char *dir;

static void put(const char *target, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

static struct wire_hdr hdr(uint16_t kind, uint16_t flags, uint32_t len, uint32_t seq,
                           uint32_t off, uint32_t msg_len)
{
    struct wire_hdr h = {.magic = WIRE_MAGIC, .kind = kind, .flags = flags, .src = 1,
                         .len = len, .seq = seq, .ack = 0, .msg_len = msg_len, .frag_off = off,
                         .fresh = seq + 1};
    return h;
}

/* fuzz_net_recv's records: [mode][len lo][len hi][datagram] */
static size_t record(unsigned char *out, int mode, struct wire_hdr h)
{
    size_t len = sizeof h + h.len;
    out[0] = (unsigned char)mode;
    out[1] = (unsigned char)len;
    out[2] = (unsigned char)(len >> 8);
    memcpy(out + 3, &h, sizeof h);
    for (uint32_t i = 0; i < h.len; i++)
        out[3 + sizeof h + i] = (unsigned char)(i * 7 + h.seq);
    return 3 + len;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    dir = argv[1];
    unsigned char buf[16384];

    /* fuzz_wire: one datagram of each kind */
    struct wire_hdr w[] = {
        hdr(WIRE_DATA, WIRE_FIRST | WIRE_LAST, 16, 3, 0, 16),
        hdr(WIRE_DATA, WIRE_FIRST, 64, 4, 0, 200),
        hdr(WIRE_DATA, WIRE_LAST, 8, 5, 192, 200),
        hdr(WIRE_DATA, WIRE_NOP, 0, 6, 0, 0),
        hdr(WIRE_ACK, 0, 0, 0, 0, 0),
        hdr(WIRE_ABORT, 0, 12, 0, 0, 0),
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        memcpy(buf, &w[i], sizeof w[i]);
        memset(buf + sizeof w[i], 'a' + (int)i, w[i].len);
        char name[32];
        snprintf(name, sizeof name, "kind%zu", i);
        put("fuzz_wire", name, buf, sizeof w[i] + w[i].len);
    }

    /* fuzz_net_recv: a 3-fragment message in order, reordered, duplicated;
     * single messages from both peers; a heartbeat and an ack */
    size_t n = 0;
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_FIRST, 100, 0, 0, 250));
    n += record(buf + n, 0, hdr(WIRE_DATA, 0, 100, 1, 100, 250));
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_LAST, 50, 2, 200, 250));
    put("fuzz_net_recv", "in_order", buf, n);
    n = 0;
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_LAST, 50, 2, 200, 250));
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_FIRST, 100, 0, 0, 250));
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_FIRST, 100, 0, 0, 250));
    n += record(buf + n, 0, hdr(WIRE_DATA, 0, 100, 1, 100, 250));
    put("fuzz_net_recv", "reordered_dup", buf, n);
    n = 0;
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_FIRST | WIRE_LAST, 20, 0, 0, 20));
    n += record(buf + n, 1, hdr(WIRE_DATA, WIRE_FIRST | WIRE_LAST, 30, 0, 0, 30));
    n += record(buf + n, 0, hdr(WIRE_DATA, WIRE_NOP, 0, 1, 0, 0));
    n += record(buf + n, 1, hdr(WIRE_ACK, 0, 0, 0, 0, 0));
    n += record(buf + n, 0x20, hdr(WIRE_DATA, WIRE_FIRST | WIRE_LAST, 20, 0, 0, 20));
    put("fuzz_net_recv", "two_peers", buf, n);

    /* fuzz_seqwin: a start, then arrivals (offset, counter step, flags) */
    unsigned char s1[] = {0xf0, 0xff, 0xff, 0xff, 0, 1, 0, 2, 1, 0, 1, 1, 0, 0xff, 0, 0};
    put("fuzz_seqwin", "wrap", s1, sizeof s1);
    unsigned char s2[] = {0, 0, 0, 0, 5, 1, 0, 3, 1, 0, 70, 1, 1, 0, 0xfe, 0, 1, 1, 0, 2, 1, 0};
    put("fuzz_seqwin", "gaps", s2, sizeof s2);

    /* fuzz_ipc_msg: the fixed part of each of the port protocol's types */
    for (unsigned t = 0; t < 32; t++) {
        size_t fixed = ipc_fixed_size(t);
        if (!fixed || fixed > sizeof buf)
            continue;
        memset(buf, 0, fixed);
        struct ipc_hdr h = {.type = (uint8_t)t};
        memcpy(buf, &h, sizeof h);
        if (t == IPC_PAGE) { /* count 1 */
            struct ipc_page p = {.xfer = 1, .index = 0, .count = 1};
            memcpy(buf + sizeof h, &p, sizeof p);
        }
        if (t == IPC_LOOKUP_REQ)
            buf[sizeof h + 8] = 'x';
        char name[32];
        snprintf(name, sizeof name, "type%u", t);
        put("fuzz_ipc_msg", name, buf, fixed);
    }

    /* fuzz_config: [setting index][value] */
    static const struct { int i; const char *v; } cfg[] = {
        {0, "10"}, {1, "0.3"}, {6, "61440"}, {7, "64"}, {8, "token"}, {12, "4G"},
        {13, "7f0000000000"}, {16, "erc-inv"}, {18, "yes"}, {19, "/tmp/x.json"}, {4, "-1"},
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        buf[0] = (unsigned char)cfg[i].i;
        size_t l = strlen(cfg[i].v);
        memcpy(buf + 1, cfg[i].v, l);
        char name[32];
        snprintf(name, sizeof name, "setting%zu", i);
        put("fuzz_config", name, buf, 1 + l);
    }
    return 0;
}
