/*
 * make_seeds.c — writes the seed corpora (fuzz/corpus/<target>/): a few
 * well-formed inputs of each kind, from which the fuzzers mutate. Built and
 * run by hand when a format changes:
 *   cc -D_GNU_SOURCE -Isrc -Iinclude fuzz/make_seeds.c src/ipc/msg.c src/base/log.c src/mem/diff.c -o /tmp/make_seeds && /tmp/make_seeds fuzz/corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coherence/coherence.h"
#include "coherence/msgcheck.h"
#include "ipc/msg.h"
#include "mem/diff.h"
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
        hdr(WIRE_DATA, WIRE_FIRST | WIRE_LAST | WIRE_RTX | WIRE_ECHO_RTX, 16, 7, 0, 16),
        hdr(WIRE_ACK, WIRE_ECHO_RTX, 0, 0, 0, 0),
        hdr(WIRE_LOOK, 0, 6, 0, 0, 0),
        hdr(WIRE_SEEN, 0, 20, 0, 0, 0),
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

    /* fuzz_ipc_msg: a message with every extension and two rights, each
     * rights operation, and a port's moved state */
    {
        struct ipc_hdr h = {.type = IPC_SMALL};
        struct ipc_small b = {.d = {.slot = 3, .flow = IPC_NO_FLOW, .uid = 9, .seq = 1,
                                    .flags = IPC_MF_ALL}};
        struct ipc_call_ext call = {.reply_token = 1, .reply_cap = 8};
        struct ipc_fwd_ext fwd = {.origin = 1, .provider = 1, .queued_index = 0,
                                  .queued_count = 1, .ordinal = 1};
        struct ipc_wire_right w[2] = {
            {.uid = 7, .token = 5, .node = 1, .slot = 2, .kind = IPC_WR_SEND, .limit = 4},
            {.uid = 8, .token = 6, .node = 0, .slot = 1, .kind = IPC_WR_RECV, .limit = 4}};
        size_t n = 0;
        memcpy(buf, &h, sizeof h);
        n += sizeof h;
        memcpy(buf + n, &b, sizeof b);
        n += sizeof b;
        n += ipc_ext_write(buf + n, b.d.flags, &call, &fwd, 3, w, 2);
        memset(buf + n, 0, sizeof(struct dsm_notification));
        n += sizeof(struct dsm_notification);
        put("fuzz_ipc_msg", "small_all_ext", buf, n);
        for (unsigned op = IPC_OP_NOTE; op <= IPC_OP_PORT_LAST; op++) {
            struct ipc_hdr oh = {.type = IPC_PORT_OP, .aux = op};
            struct ipc_op o = {.d = {.slot = 1, .flow = IPC_NO_FLOW, .uid = 9, .seq = 2},
                               .token = 5};
            if (op == IPC_OP_RELEASE) {
                o.token = 0;
                o.arg = 1;
            }
            if (op == IPC_OP_PULL || op == IPC_OP_DROP_RECV)
                o.d.seq = 0;
            memcpy(buf, &oh, sizeof oh);
            memcpy(buf + sizeof oh, &o, sizeof o);
            char name[32];
            snprintf(name, sizeof name, "op%u", op);
            put("fuzz_ipc_msg", name, buf, sizeof oh + sizeof o);
        }
        struct ipc_hdr mh = {.type = IPC_PORT_OP, .aux = IPC_OP_MIGRATE};
        struct ipc_migrate mig = {.uid = 9, .slot = 1, .limit = 4, .epoch = 1, .nodes = 2,
                                  .ntokens = 1};
        struct ipc_migrate_peer peers[2] = {{.next_seq = 1}, {.next_seq = 3, .send = 1}};
        struct ipc_migrate_token tok = {.token = 5, .kind = IPC_TOK_SEND, .node = -1};
        n = 0;
        memcpy(buf, &mh, sizeof mh);
        n += sizeof mh;
        memcpy(buf + n, &mig, sizeof mig);
        n += sizeof mig;
        memcpy(buf + n, peers, sizeof peers);
        n += sizeof peers;
        memcpy(buf + n, &tok, sizeof tok);
        n += sizeof tok;
        put("fuzz_ipc_msg", "migrate", buf, n);
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

    /* fuzz_arbiter_lines: [nodes-1][line] */
    static const char *const arb[] = {"look 3", "seen 3 R 1234567 20000000", "seen 0 T 0 0"};
    for (size_t i = 0; i < sizeof arb / sizeof arb[0]; i++) {
        buf[0] = 7;
        size_t l = strlen(arb[i]);
        memcpy(buf + 1, arb[i], l);
        char name[32];
        snprintf(name, sizeof name, "line%zu", i);
        put("fuzz_arbiter_lines", name, buf, 1 + l);
    }

    /* fuzz_notices: [nodes-1][npages lo][npages hi][mode 1: raw][body]:
     * two nodes' intervals, as interval_encode writes them */
    {
        unsigned char *b = buf;
        b[0] = 3, b[1] = 0, b[2] = 1, b[3] = 1; /* 4 nodes, 257 pages */
        size_t at = 4;
        uint32_t count = 3;
        memcpy(b + at, &count, 4), at += 4;
        struct wire_interval iv[3] = {{.node = 0, .id = 1, .count = 2}, {.node = 0, .id = 2, .count = 0},
                                      {.node = 2, .id = 7, .count = 1}};
        for (int i = 0; i < 3; i++) {
            memcpy(b + at, &iv[i], sizeof iv[i]), at += sizeof iv[i];
            for (uint32_t k = 0; k < iv[i].count; k++) {
                struct notice nt = {.page = 10 * (uint32_t)i + k, .version = k + 1};
                memcpy(b + at, &nt, sizeof nt), at += sizeof nt;
            }
        }
        put("fuzz_notices", "three_intervals", b, at);
        unsigned char made[] = {7, 0, 2, 0, 1, 3, 2, 0, 1, 1, 5, 4, 3, 2};
        put("fuzz_notices", "encoded", made, sizeof made);
    }

    /* fuzz_coh_msg: [kind][nodes-1][rank][npages lo][npages hi][page size][body] */
    {
        unsigned char pre[6] = {0, 3, 0x21, 0, 4, 0}; /* 4 nodes, rank 1, src 2, 1024 pages, 64 B */
        struct page_req rq = {.page = 5, .need = 1, .requester = 2, .flags = HOME_FROM_BASE | 3u << HOME_RUN_SHIFT};
        memcpy(buf, pre, 6), memcpy(buf + 6, &rq, sizeof rq);
        put("fuzz_coh_msg", "page_req", buf, 6 + sizeof rq);
        struct page_rep rp = {.page = 5, .version = 2, .home = 2, .status = HOME_DATA, .run = 2};
        pre[0] = 1;
        memcpy(buf, pre, 6), memcpy(buf + 6, &rp, sizeof rp), memset(buf + 6 + sizeof rp, 7, 64);
        put("fuzz_coh_msg", "page_rep", buf, 6 + sizeof rp + 64);
        buf[3] = 8; /* 8 pages: the run reaches the last one */
        put("fuzz_coh_msg", "page_rep_edge", buf, 6 + sizeof rp + 64);
        unsigned char page[64] = {0}, twin[64] = {0}, diff[128];
        page[8] = page[9] = page[40] = 1;
        long dl = mem_diff_create(page, twin, 64, diff, sizeof diff);
        struct diff_hdr dh = {.page = 9, .idx = 1};
        pre[0] = 2;
        memcpy(buf, pre, 6), memcpy(buf + 6, &dh, sizeof dh), memcpy(buf + 6 + sizeof dh, diff, (size_t)dl);
        put("fuzz_coh_msg", "diff", buf, 6 + sizeof dh + (size_t)dl);
        uint32_t dq[4] = {9, 2, 3, 4};
        pre[0] = 3;
        memcpy(buf, pre, 6), memcpy(buf + 6, dq, sizeof dq);
        put("fuzz_coh_msg", "diff_req", buf, 6 + sizeof dq);
        struct diff_rep dr = {.page = 9, .count = 2};
        struct diff_item it = {.stamp = 3, .len = (uint32_t)dl};
        size_t at = 6;
        pre[0] = 4;
        memcpy(buf, pre, 6);
        memcpy(buf + at, &dr, sizeof dr), at += sizeof dr;
        for (int i = 0; i < 2; i++, it.stamp++) {
            memcpy(buf + at, &it, sizeof it), at += sizeof it;
            memcpy(buf + at, diff, (size_t)dl), at += (size_t)dl;
        }
        put("fuzz_coh_msg", "diff_rep", buf, at);
        struct run_req rr = {.first = 100, .count = 4};
        pre[0] = 5;
        memcpy(buf, pre, 6), memcpy(buf + 6, &rr, sizeof rr);
        put("fuzz_coh_msg", "run", buf, 6 + sizeof rr);
        struct diffs_item di = {.page = 9, .idx = 0, .len = (uint32_t)dl};
        at = 6;
        pre[0] = 6;
        memcpy(buf, pre, 6);
        for (int i = 0; i < 3; i++, di.page++, di.idx++) {
            memcpy(buf + at, &di, sizeof di), at += sizeof di;
            memcpy(buf + at, diff, (size_t)dl), at += (size_t)dl;
        }
        put("fuzz_coh_msg", "diffs", buf, at);
        struct diff_ack acks[2] = {{.page = 9, .idx = 0, .version = 3}, {.page = 10, .idx = 1, .version = 1}};
        pre[0] = 7;
        memcpy(buf, pre, 6), memcpy(buf + 6, acks, sizeof acks);
        put("fuzz_coh_msg", "diff_acks", buf, 6 + sizeof acks);
    }

    /* fuzz_diff: [page size][mode][bytes]: a diff off the network, and a
     * page to diff against its twin */
    {
        unsigned char page[256] = {0}, twin[256] = {0}, diff[512];
        for (int i = 0; i < 256; i += 24)
            page[i] = (unsigned char)i;
        long dl = mem_diff_create(page, twin, 256, diff, sizeof diff);
        buf[0] = 2, buf[1] = 1;
        memcpy(buf + 2, diff, (size_t)dl);
        put("fuzz_diff", "net", buf, 2 + (size_t)dl);
        buf[0] = 1, buf[1] = 0;
        for (int i = 0; i < 40; i++)
            buf[2 + i] = (unsigned char)(i * 37);
        put("fuzz_diff", "made", buf, 42);
    }
    return 0;
}
