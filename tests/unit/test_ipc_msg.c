/*
 * test_ipc_msg.c — the port protocol's message sizes, their validation
 * (the extensions a message's flags announce, rights carried, rights
 * operations and a port's moved state included), and the mapping of
 * out-of-line pages onto regions.
 */
#include "check.h"
#include "ipc/msg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


#define HDR sizeof(struct ipc_hdr)

/* A message under construction: header, body, then trailing bytes. */
static unsigned char msgbuf[HDR + 256 + 4 * IPC_PAGE_BYTES];

static size_t build(unsigned type, const void *body, size_t body_len, size_t trailing)
{
    struct ipc_hdr h = {.type = (uint8_t)type};
    memset(msgbuf, 0, sizeof msgbuf);
    memcpy(msgbuf, &h, HDR);
    memcpy(msgbuf + HDR, body, body_len);
    for (size_t i = 0; i < trailing; i++)
        msgbuf[HDR + body_len + i] = (unsigned char)(i * 7 + 1);
    return HDR + body_len + trailing;
}

/* Checks the message from an exactly sized heap copy, so any read past its
 * end is caught under AddressSanitizer. */
static int check_msg(size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, msgbuf, len);
    int rc = ipc_msg_check(copy, len);
    free(copy);
    return rc;
}

#define ACCEPTS(len) CHECK_EQ(check_msg(len), 0)
#define REJECTS(len) CHECK_EQ(check_msg(len), -EINVAL)

/* ---- sizes -------------------------------------------------------------- */

static void test_fixed_size_is_header_plus_body_for_every_type(void)
{
    /* The bodies' wire layout: these numbers change only with the protocol. */
    CHECK_EQ(ipc_fixed_size(IPC_LOOKUP_REQ), HDR + 8 + DSM_PORT_NAME_MAX + 1);
    CHECK_EQ(ipc_fixed_size(IPC_LOOKUP_REP), HDR + 16);
    CHECK_EQ(ipc_fixed_size(IPC_SMALL), HDR + 24);
    CHECK_EQ(ipc_fixed_size(IPC_REQ), HDR + 48);
    CHECK_EQ(ipc_fixed_size(IPC_GRANT), HDR + 24);
    CHECK_EQ(ipc_fixed_size(IPC_KMSG), HDR + 8);
    CHECK_EQ(ipc_fixed_size(IPC_PAGE), HDR + 16);
    CHECK_EQ(ipc_fixed_size(IPC_ACCEPT), HDR + 16);
    CHECK_EQ(ipc_fixed_size(IPC_REPLY), HDR + 16);
    CHECK_EQ(ipc_fixed_size(IPC_PORT_OP), HDR); /* its body's size goes by the operation */
    CHECK_EQ(sizeof(struct ipc_op), 40);
    CHECK_EQ(sizeof(struct ipc_wire_right), 40);
    CHECK_EQ(sizeof(struct ipc_fwd_ext), 24);
    CHECK_EQ(ipc_ext_size(IPC_MF_ALL, 2), 16 + 24 + 8 + 8 + 2 * 40);
    CHECK_EQ(ipc_fixed_size(IPC_LOOKUP_REQ), HDR + sizeof(struct ipc_lookup_req));
    CHECK_EQ(ipc_fixed_size(IPC_LOOKUP_REP), HDR + sizeof(struct ipc_lookup_rep));
    CHECK_EQ(ipc_fixed_size(IPC_SMALL), HDR + sizeof(struct ipc_small));
    CHECK_EQ(ipc_fixed_size(IPC_REQ), HDR + sizeof(struct ipc_req));
    CHECK_EQ(ipc_fixed_size(IPC_GRANT), HDR + sizeof(struct ipc_grant));
    CHECK_EQ(ipc_fixed_size(IPC_KMSG), HDR + sizeof(struct ipc_kmsg));
    CHECK_EQ(ipc_fixed_size(IPC_PAGE), HDR + sizeof(struct ipc_page));
    CHECK_EQ(ipc_fixed_size(IPC_ACCEPT), HDR + sizeof(struct ipc_accept));
    CHECK_EQ(ipc_fixed_size(IPC_REPLY), HDR + sizeof(struct ipc_reply));
    /* Not port-protocol types. */
    CHECK_EQ(ipc_fixed_size(IPC_TYPE_NONE), 0);
    CHECK_EQ(ipc_fixed_size(IPC_TYPE_NEXT), 0);
    CHECK_EQ(ipc_fixed_size(IPC_TYPE_NEXT + 1), 0);
    CHECK_EQ(ipc_fixed_size(IPC_TYPE_MAX), 0);
    CHECK_EQ(ipc_fixed_size(255), 0);
    CHECK_EQ(ipc_fixed_size(0xffffffffu), 0);
}

/* ---- well-formed messages ----------------------------------------------- */

static size_t lookup_req(const char *name, size_t trailing)
{
    struct ipc_lookup_req b = {.token = 42};
    memcpy(b.name, name, strnlen(name, sizeof b.name));
    return build(IPC_LOOKUP_REQ, &b, sizeof b, trailing);
}

static struct ipc_dst dst(uint32_t slot)
{
    return (struct ipc_dst){.slot = slot, .flow = 3, .uid = 0x1234, .seq = 9};
}

/* A SMALL to `slot`, an RPC (with its reply buffer) when token is set. */
static size_t small(uint32_t slot, uint64_t token, uint64_t cap, size_t inline_len)
{
    struct ipc_small b = {.d = dst(slot)};
    struct ipc_call_ext call = {.reply_token = token, .reply_cap = cap};
    if (token || cap)
        b.d.flags |= IPC_MF_CALL;
    size_t len = build(IPC_SMALL, &b, sizeof b, 0);
    len += ipc_ext_write(msgbuf + len, b.d.flags, &call, NULL, 0, NULL, 0);
    for (size_t i = 0; i < inline_len; i++)
        msgbuf[len + i] = (unsigned char)(i * 7 + 1);
    return len + inline_len;
}

static struct ipc_wire_right wire_right(uint32_t kind)
{
    return (struct ipc_wire_right){.uid = 77, .token = 5, .node = 2, .slot = 9, .kind = kind,
                                   .limit = 4, .epoch = 1};
}

/* A SMALL with the extensions of `flags`, and nrights copies of w. */
static size_t small_ext(unsigned flags, const struct ipc_wire_right *w, uint32_t nrights,
                        size_t inline_len)
{
    struct ipc_small b = {.d = dst(1)};
    b.d.flags = (uint16_t)flags;
    if (flags & IPC_MF_ONCE)
        b.d.flow = IPC_NO_FLOW;
    struct ipc_call_ext call = {.reply_token = 1, .reply_cap = 8};
    struct ipc_fwd_ext fwd = {.origin = 1, .provider = 2};
    if (flags & IPC_MF_QUEUED)
        fwd = (struct ipc_fwd_ext){.origin = 1, .provider = 2, .queued_index = 0,
                                   .queued_count = 2, .ordinal = 5};
    struct ipc_wire_right rights[IPC_MAX_RIGHTS + 1];
    for (uint32_t i = 0; i < nrights; i++)
        rights[i] = *w;
    size_t len = build(IPC_SMALL, &b, sizeof b, 0);
    len += ipc_ext_write(msgbuf + len, flags, &call, &fwd, 42, rights, nrights);
    memset(msgbuf + len, 0, inline_len);
    return len + inline_len;
}

/* A REQ whose header says nool regions and that carries nlens lengths. */
static size_t req(uint32_t slot, uint32_t nool, const uint64_t *lens, uint32_t nlens)
{
    struct ipc_req b = {.d = dst(slot), .nool = nool, .xfer = 2, .inline_len = 100};
    size_t len = build(IPC_REQ, &b, sizeof b, 0);
    memcpy(msgbuf + len, lens, nlens * sizeof(uint64_t));
    return len + nlens * sizeof(uint64_t);
}

static size_t op(unsigned code, uint64_t token, uint64_t arg)
{
    struct ipc_op b = {.d = dst(4), .token = token, .arg = arg};
    b.d.flow = IPC_NO_FLOW;
    if (code == IPC_OP_PULL || code == IPC_OP_DROP_RECV)
        b.d.seq = 0; /* the two not numbered in their sender's order */
    size_t len = build(IPC_PORT_OP, &b, sizeof b, 0);
    struct ipc_hdr h = {.type = IPC_PORT_OP, .aux = code};
    memcpy(msgbuf, &h, HDR);
    return len;
}

static size_t grant(uint32_t count, uint32_t send_inline, size_t trailing)
{
    struct ipc_grant b = {.xfer = 5, .first = 3, .count = count, .send_inline = send_inline};
    return build(IPC_GRANT, &b, sizeof b, trailing);
}

static size_t page_run(uint32_t count, size_t data)
{
    struct ipc_page b = {.xfer = 5, .index = 2, .count = count};
    return build(IPC_PAGE, &b, sizeof b, data);
}

static size_t page(size_t data) { return page_run(1, data); }

static size_t reply(uint64_t full_len, size_t data)
{
    struct ipc_reply b = {.token = 8, .full_len = full_len};
    return build(IPC_REPLY, &b, sizeof b, data);
}

static void test_well_formed_messages_of_each_type_pass(void)
{
    ACCEPTS(lookup_req("a", 0));
    ACCEPTS(lookup_req("queue-0", 0));
    char longest[DSM_PORT_NAME_MAX + 1];
    memset(longest, 'x', DSM_PORT_NAME_MAX);
    longest[DSM_PORT_NAME_MAX] = 0;
    ACCEPTS(lookup_req(longest, 0));

    struct ipc_lookup_rep rep = {.token = 42, .status = -ENOENT}; /* a failed lookup */
    ACCEPTS(build(IPC_LOOKUP_REP, &rep, sizeof rep, 0));
    rep.status = 0; /* found: the send right follows */
    struct ipc_wire_right w = wire_right(IPC_WR_SEND);
    size_t len = build(IPC_LOOKUP_REP, &rep, sizeof rep, 0);
    memcpy(msgbuf + len, &w, sizeof w);
    ACCEPTS(len + sizeof w);

    ACCEPTS(small(0, 0, 0, 0));
    ACCEPTS(small(7, 0, 0, 1000));
    ACCEPTS(small(7, 99, 4096, 10)); /* an RPC with its reply buffer */
    ACCEPTS(small(7, 99, 0, 10));
    ACCEPTS(small(7, 99, IPC_MAX_BYTES, 10));
    ACCEPTS(small(IPC_MAX_SLOTS - 1, 0, 0, 1));

    /* Every extension, alone and together. */
    struct ipc_wire_right send = wire_right(IPC_WR_SEND), once = wire_right(IPC_WR_ONCE),
                          recv = wire_right(IPC_WR_RECV);
    ACCEPTS(small_ext(IPC_MF_RIGHTS, &send, 1, 8));
    ACCEPTS(small_ext(IPC_MF_RIGHTS, &once, 3, 0));
    ACCEPTS(small_ext(IPC_MF_RIGHTS, &recv, IPC_MAX_RIGHTS, 0));
    ACCEPTS(small_ext(IPC_MF_FWD, NULL, 0, 100));
    ACCEPTS(small_ext(IPC_MF_FWD | IPC_MF_QUEUED, NULL, 0, 100));
    ACCEPTS(small_ext(IPC_MF_ONCE, NULL, 0, 100));
    ACCEPTS(small_ext(IPC_MF_ONCE | IPC_MF_NOTIFY, NULL, 0, sizeof(struct dsm_notification)));
    ACCEPTS(small_ext(IPC_MF_ALL, &send, 2, sizeof(struct dsm_notification)));

    /* Rights operations addressed to a port. */
    ACCEPTS(op(IPC_OP_NOTE, 5, 0));
    ACCEPTS(op(IPC_OP_CLAIM, 5, 0));
    ACCEPTS(op(IPC_OP_RELEASE, 0, 3));
    ACCEPTS(op(IPC_OP_DROP, 5, 0));
    ACCEPTS(op(IPC_OP_PULL, 5, IPC_MAX_SLOTS - 1));
    ACCEPTS(op(IPC_OP_DROP_RECV, 5, 0));

    uint64_t lens[IPC_MAX_OOL];
    for (int i = 0; i < IPC_MAX_OOL; i++)
        lens[i] = 1 + (uint64_t)i * 5000;
    ACCEPTS(req(1, 0, lens, 0));
    ACCEPTS(req(1, 1, lens, 1));
    ACCEPTS(req(1, 3, lens, 3));
    ACCEPTS(req(1, IPC_MAX_OOL, lens, IPC_MAX_OOL));
    uint64_t whole[2] = {IPC_MAX_BYTES / 2, IPC_MAX_BYTES / 2}; /* total exactly the max */
    ACCEPTS(req(1, 2, whole, 2));
    uint64_t one[1] = {IPC_MAX_BYTES};
    ACCEPTS(req(1, 1, one, 1));

    ACCEPTS(grant(0, 0, 0));
    ACCEPTS(grant(8, 1, 0));
    ACCEPTS(grant(1u << 20, 1, 0));

    struct ipc_kmsg km = {.xfer = 5};
    ACCEPTS(build(IPC_KMSG, &km, sizeof km, 0));
    ACCEPTS(build(IPC_KMSG, &km, sizeof km, 200));

    ACCEPTS(page(0));
    ACCEPTS(page(1));
    ACCEPTS(page(IPC_PAGE_BYTES));

    struct ipc_accept acc = {.flow = 2, .ordinal = 11};
    ACCEPTS(build(IPC_ACCEPT, &acc, sizeof acc, 0));

    ACCEPTS(reply(0, 0));
    ACCEPTS(reply(100, 100));
    ACCEPTS(reply(100, 40)); /* the reply is larger than the granted buffer */
    ACCEPTS(reply(IPC_MAX_BYTES, 16));
}

/* ---- malformed messages ------------------------------------------------- */

static void test_messages_shorter_than_their_type_are_rejected(void)
{
    for (size_t len = 0; len < HDR; len++)
        REJECTS(len);
    static const unsigned types[] = {IPC_LOOKUP_REQ, IPC_LOOKUP_REP, IPC_SMALL, IPC_REQ,
                                     IPC_GRANT, IPC_KMSG, IPC_PAGE, IPC_ACCEPT, IPC_REPLY,
                                     IPC_PORT_OP};
    unsigned char zero[64] = {0};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t fixed = ipc_fixed_size(types[t]);
        for (size_t len = HDR; len < fixed; len++) {
            build(types[t], zero, sizeof zero, 0);
            REJECTS(len);
        }
    }
}

static void test_unknown_types_are_rejected(void)
{
    static const unsigned types[] = {IPC_TYPE_NONE, IPC_TYPE_NEXT, IPC_TYPE_NEXT + 1, 63, 64, 200, 255};
    unsigned char zero[64] = {0};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        REJECTS(build(types[t], zero, 0, 0));
        REJECTS(build(types[t], zero, sizeof zero, 0));
    }
}

static void test_lookup_with_bad_name_or_trailing_bytes_is_rejected(void)
{
    char unterminated[DSM_PORT_NAME_MAX + 1];
    memset(unterminated, 'n', sizeof unterminated);
    REJECTS(lookup_req(unterminated, 0));
    /* Nor does a NUL just past the field count: that is a trailing byte. */
    size_t len = lookup_req(unterminated, 1);
    msgbuf[len - 1] = 0;
    REJECTS(len);
    REJECTS(lookup_req("", 0));
    REJECTS(lookup_req("ok", 1));
    REJECTS(lookup_req("ok", 8));

    struct ipc_lookup_rep rep = {.token = 1, .status = -ENOENT};
    REJECTS(build(IPC_LOOKUP_REP, &rep, sizeof rep, 1));
    rep.status = -EINVAL; /* only "not there" is an answer without a right */
    REJECTS(build(IPC_LOOKUP_REP, &rep, sizeof rep, 0));
    rep.status = 0; /* found, and no right, or a short one, or one not a send right */
    REJECTS(build(IPC_LOOKUP_REP, &rep, sizeof rep, 0));
    REJECTS(build(IPC_LOOKUP_REP, &rep, sizeof rep, sizeof(struct ipc_wire_right) - 1));
    struct ipc_wire_right w = wire_right(IPC_WR_ONCE);
    len = build(IPC_LOOKUP_REP, &rep, sizeof rep, 0);
    memcpy(msgbuf + len, &w, sizeof w);
    REJECTS(len + sizeof w);
    struct ipc_accept acc = {.flow = 1, .ordinal = 1};
    REJECTS(build(IPC_ACCEPT, &acc, sizeof acc, 4));
    acc.flow = IPC_NO_FLOW; /* no flow answers there */
    REJECTS(build(IPC_ACCEPT, &acc, sizeof acc, 0));
    acc = (struct ipc_accept){.flow = 1};
    REJECTS(build(IPC_ACCEPT, &acc, sizeof acc, 0));
}

static void test_small_with_bad_port_or_unbacked_reply_is_rejected(void)
{
    REJECTS(small(IPC_MAX_SLOTS, 0, 0, 0));
    REJECTS(small(UINT32_MAX, 99, 100, 10));
    REJECTS(small(3, 0, 1, 0));              /* a reply buffer but no token */
    REJECTS(small(3, 0, 4096, 10));
    REJECTS(small(3, 99, IPC_MAX_BYTES + 1, 0));
    REJECTS(small(3, 99, UINT64_MAX, 0));
    /* No port, or no place in its sender's order. */
    size_t len = small(3, 0, 0, 4);
    struct ipc_small b;
    memcpy(&b, msgbuf + HDR, sizeof b);
    b.d.uid = 0;
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    b.d.uid = 1;
    b.d.seq = 0;
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    /* An aux where ipc's own types have none. */
    len = small(3, 0, 0, 4);
    struct ipc_hdr h = {.type = IPC_SMALL, .aux = 1};
    memcpy(msgbuf, &h, HDR);
    REJECTS(len);
}

static void test_bad_extensions_and_rights_are_rejected(void)
{
    struct ipc_wire_right w = wire_right(IPC_WR_SEND);
    /* Unknown flags; a flag's extension cut short. */
    REJECTS(small_ext(0x40, NULL, 0, 0));
    REJECTS(small_ext(0x8000, NULL, 0, 0));
    REJECTS(small_ext(IPC_MF_FWD, NULL, 0, 0) - 1);
    REJECTS(small_ext(IPC_MF_RIGHTS, &w, 1, 0) - 1);
    /* QUEUED only forwarded, NOTIFY only through a send-once right, and a
     * notification is exactly one. */
    REJECTS(small_ext(IPC_MF_QUEUED, NULL, 0, 0));
    REJECTS(small_ext(IPC_MF_NOTIFY, NULL, 0, sizeof(struct dsm_notification)));
    REJECTS(small_ext(IPC_MF_ONCE | IPC_MF_NOTIFY, NULL, 0, sizeof(struct dsm_notification) + 1));
    REJECTS(small_ext(IPC_MF_ONCE | IPC_MF_NOTIFY, NULL, 0, 0));
    /* Sent through a send-once right: no flow for accepts. */
    size_t len = small_ext(IPC_MF_ONCE, NULL, 0, 0);
    struct ipc_small b;
    memcpy(&b, msgbuf + HDR, sizeof b);
    b.d.flow = 1;
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    /* Rights: none, too many, or any field out of range. */
    REJECTS(small_ext(IPC_MF_RIGHTS, &w, 0, 0));
    REJECTS(small_ext(IPC_MF_RIGHTS, &w, IPC_MAX_RIGHTS + 1, 0));
    struct ipc_wire_right bad[] = {w, w, w, w, w, w, w, w};
    bad[0].uid = 0;
    bad[1].token = 0;
    bad[2].node = -1;
    bad[3].node = NET_MAX_NODES;
    bad[4].slot = IPC_MAX_SLOTS;
    bad[5].kind = 0;
    bad[6].kind = IPC_WR_RECV + 1;
    bad[7].limit = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        REJECTS(small_ext(IPC_MF_RIGHTS, &bad[i], 1, 0));
    /* A forward from beyond the job's largest size; a queued place outside
     * its count. */
    len = small_ext(IPC_MF_FWD | IPC_MF_QUEUED, NULL, 0, 0);
    struct ipc_fwd_ext fwd;
    size_t at = HDR + sizeof b;
    memcpy(&fwd, msgbuf + at, sizeof fwd);
    fwd.queued_index = fwd.queued_count;
    memcpy(msgbuf + at, &fwd, sizeof fwd);
    REJECTS(len);
    fwd.queued_index = 0;
    fwd.origin = NET_MAX_NODES;
    memcpy(msgbuf + at, &fwd, sizeof fwd);
    REJECTS(len);

    /* Operations: unknown codes, missing tokens, trailing bytes, a port's
     * extensions other than a forward. */
    REJECTS(op(0, 5, 0));
    REJECTS(op(IPC_OP_LAST + 1, 5, 0));
    REJECTS(op(IPC_OP_CLAIM, 0, 0));
    REJECTS(op(IPC_OP_CLAIM, 5, 1));
    REJECTS(op(IPC_OP_RELEASE, 0, 0));
    REJECTS(op(IPC_OP_RELEASE, 5, 1));
    REJECTS(op(IPC_OP_RELEASE, 0, (uint64_t)UINT32_MAX + 1));
    REJECTS(op(IPC_OP_PULL, 5, IPC_MAX_SLOTS));
    size_t at_seq = HDR + offsetof(struct ipc_op, d) + offsetof(struct ipc_dst, seq);
    uint64_t one = 1, zero = 0;
    len = op(IPC_OP_PULL, 5, 1);
    memcpy(msgbuf + at_seq, &one, sizeof one); /* a pull in its sender's order */
    REJECTS(len);
    len = op(IPC_OP_CLAIM, 5, 0);
    memcpy(msgbuf + at_seq, &zero, sizeof zero); /* a claim in none */
    REJECTS(len);
    REJECTS(op(IPC_OP_NOTE, 5, 0) + 1);
    len = op(IPC_OP_NOTE, 5, 0);
    struct ipc_op o;
    memcpy(&o, msgbuf + HDR, sizeof o);
    o.d.flags = IPC_MF_RIGHTS;
    memcpy(msgbuf + HDR, &o, sizeof o);
    REJECTS(len);
}

static size_t loc(unsigned code, struct ipc_loc l)
{
    size_t len = build(IPC_PORT_OP, &l, sizeof l, 0);
    struct ipc_hdr h = {.type = IPC_PORT_OP, .aux = code};
    memcpy(msgbuf, &h, HDR);
    return len;
}

static size_t migrate(struct ipc_migrate m, uint32_t nodes_given, uint32_t tokens_given,
                      struct ipc_migrate_token tok)
{
    size_t len = build(IPC_PORT_OP, &m, sizeof m, 0);
    struct ipc_hdr h = {.type = IPC_PORT_OP, .aux = IPC_OP_MIGRATE};
    memcpy(msgbuf, &h, HDR);
    memset(msgbuf + len, 0, nodes_given * sizeof(struct ipc_migrate_peer));
    len += nodes_given * sizeof(struct ipc_migrate_peer);
    for (uint32_t i = 0; i < tokens_given; i++, len += sizeof tok)
        memcpy(msgbuf + len, &tok, sizeof tok);
    return len;
}

static void test_redirect_dead_and_port_state_are_checked(void)
{
    struct ipc_loc l = {.uid = 9, .node = 3, .slot = 2, .epoch = 1};
    ACCEPTS(loc(IPC_OP_REDIRECT, l));
    REJECTS(loc(IPC_OP_REDIRECT, l) + 1);
    l.slot = IPC_MAX_SLOTS;
    REJECTS(loc(IPC_OP_REDIRECT, l));
    ACCEPTS(loc(IPC_OP_DEAD, (struct ipc_loc){.uid = 9}));
    REJECTS(loc(IPC_OP_DEAD, (struct ipc_loc){.uid = 0}));
    REJECTS(loc(IPC_OP_DEAD, (struct ipc_loc){.uid = 9, .node = 1}));

    struct ipc_migrate m = {.uid = 7, .slot = 3, .limit = 4, .epoch = 1, .nodes = 4,
                            .ntokens = 2};
    struct ipc_migrate_token tok = {.token = 11, .kind = IPC_TOK_CLAIM, .node = 3};
    ACCEPTS(migrate(m, 4, 2, tok));
    REJECTS(migrate(m, 4, 1, tok));       /* fewer rights than it says */
    REJECTS(migrate(m, 3, 3, tok));       /* fewer nodes */
    REJECTS(migrate(m, 4, 2, tok) + 1);
    struct ipc_migrate_token far = tok;
    far.node = 4;                          /* a claimer beyond its nodes */
    REJECTS(migrate(m, 4, 2, far));
    far = tok;
    far.kind = IPC_TOK_DROPPED + 1;
    REJECTS(migrate(m, 4, 2, far));
    struct ipc_migrate b = m;
    b.flags = IPC_MIG_IN_TRANSIT;          /* in transit, without its token */
    REJECTS(migrate(b, 4, 2, tok));
    b.recv_token = 5;
    ACCEPTS(migrate(b, 4, 2, tok));
    b = m;
    b.flags = IPC_MIG_NS_ARMED;            /* a request without its send-once right */
    REJECTS(migrate(b, 4, 2, tok));
    b.ns_right = wire_right(IPC_WR_ONCE);
    ACCEPTS(migrate(b, 4, 2, tok));
    b.ns_right = wire_right(IPC_WR_SEND);
    REJECTS(migrate(b, 4, 2, tok));
    b = m;
    b.nodes = NET_MAX_NODES + 1;
    REJECTS(migrate(b, NET_MAX_NODES + 1, 2, tok));
    b = m;
    b.limit = 0;
    REJECTS(migrate(b, 4, 2, tok));
}

static void test_req_with_bad_regions_is_rejected(void)
{
    uint64_t lens[IPC_MAX_OOL + 2];
    for (int i = 0; i < IPC_MAX_OOL + 2; i++)
        lens[i] = IPC_PAGE_BYTES;

    /* Too many regions, with or without their lengths. */
    REJECTS(req(1, IPC_MAX_OOL + 1, lens, IPC_MAX_OOL + 1));
    REJECTS(req(1, IPC_MAX_OOL + 1, lens, 0));
    REJECTS(req(1, 0xffffffffu, lens, 0));
    REJECTS(req(1, 0x20000000u, lens, 0)); /* nool * 8 would wrap to 0 in 32 bits */
    /* A count that does not match the lengths that follow. */
    REJECTS(req(1, 2, lens, 1));
    REJECTS(req(1, 2, lens, 3));
    REJECTS(req(1, 0, lens, 1));
    size_t len = req(1, 2, lens, 2);
    REJECTS(len - 1);
    REJECTS(len + 1);
    /* A zero-length region, anywhere. */
    for (int at = 0; at < 3; at++) {
        uint64_t l[3] = {100, 200, 300};
        l[at] = 0;
        REJECTS(req(1, 3, l, 3));
    }
    /* Regions too large, alone or together. */
    uint64_t big[1] = {IPC_MAX_BYTES + 1};
    REJECTS(req(1, 1, big, 1));
    uint64_t huge[1] = {UINT64_MAX};
    REJECTS(req(1, 1, huge, 1));
    uint64_t over[2] = {IPC_MAX_BYTES / 2, IPC_MAX_BYTES / 2 + 1};
    REJECTS(req(1, 2, over, 2));
    uint64_t many[IPC_MAX_OOL];
    for (int i = 0; i < IPC_MAX_OOL; i++)
        many[i] = IPC_MAX_BYTES / IPC_MAX_OOL + 1;
    REJECTS(req(1, IPC_MAX_OOL, many, IPC_MAX_OOL));
    /* Lengths chosen so a 64-bit sum would wrap to something small. */
    uint64_t wrap[2] = {UINT64_MAX - 10, 20};
    REJECTS(req(1, 2, wrap, 2));

    /* The fixed fields. */
    uint64_t ok[1] = {100};
    len = req(IPC_MAX_SLOTS, 1, ok, 1);
    REJECTS(len);
    struct ipc_req b;
    len = req(1, 1, ok, 1);
    memcpy(&b, msgbuf + HDR, sizeof b);
    b.inline_len = IPC_MAX_BYTES + 1;
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    b.inline_len = 0;
    b.xfer = 0; /* no transfer to grant */
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    b.xfer = 2;
    b.reserved = 1;
    memcpy(msgbuf + HDR, &b, sizeof b);
    REJECTS(len);
    /* The extensions come before the lengths. */
    b.reserved = 0;
    b.d.flags = IPC_MF_CALL;
    len = build(IPC_REQ, &b, sizeof b, 0);
    struct ipc_call_ext call = {.reply_token = 7, .reply_cap = 10};
    len += ipc_ext_write(msgbuf + len, b.d.flags, &call, NULL, 0, NULL, 0);
    memcpy(msgbuf + len, ok, sizeof ok);
    ACCEPTS(len + sizeof ok);
    REJECTS(len + sizeof ok - 1);
    call.reply_token = 0; /* a reply buffer but no token */
    ipc_ext_write(msgbuf + HDR + sizeof b, b.d.flags, &call, NULL, 0, NULL, 0);
    REJECTS(len + sizeof ok);
    call = (struct ipc_call_ext){.reply_token = 7, .reply_cap = IPC_MAX_BYTES + 1};
    ipc_ext_write(msgbuf + HDR + sizeof b, b.d.flags, &call, NULL, 0, NULL, 0);
    REJECTS(len + sizeof ok);
}

static void test_grant_page_and_reply_bounds_are_enforced(void)
{
    REJECTS(grant(8, 0, 1));          /* trailing bytes */
    REJECTS(grant(8, 0, 16));
    REJECTS(grant((1u << 20) + 1, 0, 0));
    REJECTS(grant(0xffffffffu, 0, 0));
    REJECTS(grant(8, 2, 0));          /* send_inline is a flag */

    REJECTS(page(IPC_PAGE_BYTES + 1)); /* more than one page of data */
    REJECTS(page(IPC_PAGE_BYTES + 64));
    REJECTS(page_run(0, 0));           /* a run of no pages */
    REJECTS(page_run(IPC_MAX_RUN + 1, 0));
    REJECTS(page_run(3, 3 * IPC_PAGE_BYTES + 1));
    ACCEPTS(page_run(3, 3 * IPC_PAGE_BYTES));
    ACCEPTS(page_run(IPC_MAX_RUN, 2 * IPC_PAGE_BYTES));

    REJECTS(reply(10, 11));            /* more data than the reply has */
    REJECTS(reply(0, 1));
    REJECTS(reply(IPC_MAX_BYTES + 1, 0));
    REJECTS(reply(UINT64_MAX, 10));
}

/* ---- out-of-line pages -------------------------------------------------- */

/* Locates every page of the layout and checks that the pages tile every
 * region exactly, in order, and that the next index is out of range. */
static void check_layout(const uint64_t *lens, uint32_t nool)
{
    uint64_t pages = ipc_ool_pages(lens, nool);
    uint64_t want_pages = 0;
    for (uint32_t r = 0; r < nool; r++)
        want_pages += lens[r] / IPC_PAGE_BYTES + (lens[r] % IPC_PAGE_BYTES != 0);
    CHECK(pages == want_pages);

    uint32_t expect_region = 0;
    uint64_t expect_off = 0;
    int tiled = 1;
    for (uint64_t i = 0; i < pages; i++) {
        while (expect_region < nool && expect_off == lens[expect_region]) {
            expect_region++;
            expect_off = 0;
        }
        uint32_t region = 0xdead;
        uint64_t off = 1, bytes = 0;
        int rc = ipc_ool_locate(lens, nool, i, &region, &off, &bytes);
        uint64_t left = expect_region < nool ? lens[expect_region] - expect_off : 0;
        if (rc != 0 || region != expect_region || off != expect_off ||
            bytes != (left < IPC_PAGE_BYTES ? left : IPC_PAGE_BYTES) || bytes == 0 ||
            off % IPC_PAGE_BYTES != 0) {
            tiled = 0;
            break;
        }
        expect_off += bytes;
    }
    CHECK(tiled);
    /* Every byte was covered. */
    if (tiled && nool) {
        while (expect_region < nool && expect_off == lens[expect_region]) {
            expect_region++;
            expect_off = 0;
        }
        CHECK_EQ(expect_region, nool);
    }
    uint32_t region;
    uint64_t off, bytes;
    CHECK_EQ(ipc_ool_locate(lens, nool, pages, &region, &off, &bytes), -EINVAL);
    CHECK_EQ(ipc_ool_locate(lens, nool, pages + 1, &region, &off, &bytes), -EINVAL);
    CHECK_EQ(ipc_ool_locate(lens, nool, UINT64_MAX, &region, &off, &bytes), -EINVAL);
}

static void test_ool_pages_map_onto_regions(void)
{
    uint32_t region;
    uint64_t off, bytes;

    /* Exact multiples of a page. */
    const uint64_t exact[] = {IPC_PAGE_BYTES, 2 * IPC_PAGE_BYTES};
    CHECK(ipc_ool_pages(exact, 2) == 3);
    CHECK_EQ(ipc_ool_locate(exact, 2, 0, &region, &off, &bytes), 0);
    CHECK(region == 0 && off == 0 && bytes == IPC_PAGE_BYTES);
    CHECK_EQ(ipc_ool_locate(exact, 2, 1, &region, &off, &bytes), 0);
    CHECK(region == 1 && off == 0 && bytes == IPC_PAGE_BYTES);
    CHECK_EQ(ipc_ool_locate(exact, 2, 2, &region, &off, &bytes), 0);
    CHECK(region == 1 && off == IPC_PAGE_BYTES && bytes == IPC_PAGE_BYTES);
    CHECK_EQ(ipc_ool_locate(exact, 2, 3, &region, &off, &bytes), -EINVAL);
    check_layout(exact, 2);

    /* Partial last pages. */
    const uint64_t partial[] = {1, IPC_PAGE_BYTES + 1, 100};
    CHECK(ipc_ool_pages(partial, 3) == 4);
    CHECK_EQ(ipc_ool_locate(partial, 3, 0, &region, &off, &bytes), 0);
    CHECK(region == 0 && off == 0 && bytes == 1);
    CHECK_EQ(ipc_ool_locate(partial, 3, 1, &region, &off, &bytes), 0);
    CHECK(region == 1 && off == 0 && bytes == IPC_PAGE_BYTES);
    CHECK_EQ(ipc_ool_locate(partial, 3, 2, &region, &off, &bytes), 0);
    CHECK(region == 1 && off == IPC_PAGE_BYTES && bytes == 1);
    CHECK_EQ(ipc_ool_locate(partial, 3, 3, &region, &off, &bytes), 0);
    CHECK(region == 2 && off == 0 && bytes == 100);
    CHECK_EQ(ipc_ool_locate(partial, 3, 4, &region, &off, &bytes), -EINVAL);
    check_layout(partial, 3);

    const uint64_t one_short[] = {3 * IPC_PAGE_BYTES - 1};
    CHECK(ipc_ool_pages(one_short, 1) == 3);
    CHECK_EQ(ipc_ool_locate(one_short, 1, 2, &region, &off, &bytes), 0);
    CHECK(region == 0 && off == 2 * IPC_PAGE_BYTES && bytes == IPC_PAGE_BYTES - 1);
    check_layout(one_short, 1);

    /* No regions at all. */
    CHECK(ipc_ool_pages(exact, 0) == 0);
    CHECK_EQ(ipc_ool_locate(exact, 0, 0, &region, &off, &bytes), -EINVAL);

    /* The largest region the protocol allows. */
    const uint64_t max[] = {IPC_MAX_BYTES};
    CHECK(ipc_ool_pages(max, 1) == IPC_MAX_BYTES / IPC_PAGE_BYTES);
    CHECK_EQ(ipc_ool_locate(max, 1, IPC_MAX_BYTES / IPC_PAGE_BYTES - 1, &region, &off, &bytes), 0);
    CHECK(region == 0 && off == IPC_MAX_BYTES - IPC_PAGE_BYTES && bytes == IPC_PAGE_BYTES);

    /* Many regions of random sizes. */
    seed(6);
    for (int trial = 0; trial < 200; trial++) {
        uint64_t lens[IPC_MAX_OOL];
        uint32_t nool = 1 + (uint32_t)(rng() % IPC_MAX_OOL);
        for (uint32_t r = 0; r < nool; r++) {
            switch (rng() % 4) {
            case 0: lens[r] = 1 + rng() % 16; break;
            case 1: lens[r] = IPC_PAGE_BYTES * (1 + rng() % 4); break;
            case 2: lens[r] = IPC_PAGE_BYTES * (1 + rng() % 4) + (rng() % 3) - 1; break;
            default: lens[r] = 1 + rng() % (10 * IPC_PAGE_BYTES); break;
            }
        }
        check_layout(lens, nool);
    }
}

/* ---- fuzz --------------------------------------------------------------- */

/* Random messages, mostly of port-protocol types and near their sizes:
 * ipc_msg_check never reads outside them, and what it accepts has a
 * consistent layout. */
static void test_random_messages_never_read_outside_the_buffer(void)
{
    seed(7);
    int accepted = 0, consistent = 1;
    for (int i = 0; i < 100000; i++) {
        unsigned type = rng() % 8 ? 1 + (unsigned)(rng() % 10) : (unsigned)(rng() % 256);
        unsigned aux = type == IPC_PORT_OP ? (unsigned)(rng() % 12) : 0;
        size_t fixed = ipc_fixed_size(type);
        size_t len;
        switch (rng() % 4) {
        case 0: len = rng() % 64; break;
        case 1: len = fixed + rng() % 16; break;
        case 2: len = fixed + 8 * (rng() % 66); break;
        default: len = rng() % (HDR + 256 + IPC_PAGE_BYTES + 64); break;
        }
        unsigned char *m = malloc(len ? len : 1);
        for (size_t j = 0; j < len; j++)
            m[j] = (unsigned char)(rng() % 4 ? rng() % 3 : rng()); /* small values pass more */
        if (len >= HDR) {
            struct ipc_hdr h = {.type = (uint8_t)type, .aux = aux};
            memcpy(m, &h, HDR);
        } else if (len) {
            m[0] = (unsigned char)type;
        }
        if (type == IPC_REQ && len >= fixed) { /* a plausible region count */
            uint32_t nool = (uint32_t)((len - fixed) / 8);
            memcpy(m + HDR + offsetof(struct ipc_req, nool), &nool, 4);
        }
        if (ipc_msg_check(m, len) == 0) {
            accepted++;
            if (len < HDR || !fixed || len < fixed)
                consistent = 0;
            if (type == IPC_REQ) {
                struct ipc_parsed p;
                struct ipc_req b;
                memcpy(&b, m + HDR, sizeof b);
                uint64_t lens[IPC_MAX_OOL];
                if (ipc_parse(m, len, &p) || b.nool > IPC_MAX_OOL ||
                    p.dlen != 8 * (size_t)b.nool || p.data + p.dlen != m + len)
                    consistent = 0;
                else {
                    memcpy(lens, p.data, 8 * (size_t)b.nool);
                    uint64_t pages = ipc_ool_pages(lens, b.nool);
                    uint32_t region;
                    uint64_t off, bytes;
                    if (b.nool && (ipc_ool_locate(lens, b.nool, pages - 1, &region, &off, &bytes) ||
                                   region != b.nool - 1))
                        consistent = 0;
                }
            }
        }
        free(m);
    }
    CHECK(consistent);
    CHECK(accepted > 1000);
}

int main(void)
{
    test_fixed_size_is_header_plus_body_for_every_type();
    test_well_formed_messages_of_each_type_pass();
    test_messages_shorter_than_their_type_are_rejected();
    test_unknown_types_are_rejected();
    test_lookup_with_bad_name_or_trailing_bytes_is_rejected();
    test_small_with_bad_port_or_unbacked_reply_is_rejected();
    test_bad_extensions_and_rights_are_rejected();
    test_redirect_dead_and_port_state_are_checked();
    test_req_with_bad_regions_is_rejected();
    test_grant_page_and_reply_bounds_are_enforced();
    test_ool_pages_map_onto_regions();
    test_random_messages_never_read_outside_the_buffer();
    return check_report("test_ipc_msg");
}
