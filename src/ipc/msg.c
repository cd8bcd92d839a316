#include "ipc/msg.h"

#include <errno.h>
#include <string.h>

#include "base/log.h"

static const char *const type_names[] = {
    [IPC_TYPE_NONE] = "none",
#define IPC_TYPE_NAME(name) [IPC_##name] = #name,
    IPC_TYPES(IPC_TYPE_NAME)
#undef IPC_TYPE_NAME
};

const char *ipc_op_name(unsigned op)
{
    static const char *const names[] = {
        [IPC_OP_NOTE] = "note (a copy of a send right given)",
        [IPC_OP_CLAIM] = "claim (a send right taken)",
        [IPC_OP_RELEASE] = "release (send rights given back)",
        [IPC_OP_DROP] = "drop (a send right destroyed in transit)",
        [IPC_OP_PULL] = "pull (the receive right taken)",
        [IPC_OP_DROP_RECV] = "drop of the receive right",
        [IPC_OP_REDIRECT] = "redirect",
        [IPC_OP_DEAD] = "dead port",
        [IPC_OP_MIGRATE] = "port state",
    };
    return op < sizeof names / sizeof names[0] && names[op] ? names[op] : "unknown operation";
}

const char *ipc_own_type_name(unsigned type)
{
    return type < sizeof type_names / sizeof type_names[0] ? type_names[type] : NULL;
}

const void *ipc_body(int peer, const void *msg, size_t len, void *body, size_t size, size_t *rest,
                     const char *what)
{
    size_t fixed = sizeof(struct ipc_hdr) + size;
    if (len < fixed || (!rest && len != fixed))
        log_fatal("node %d sent a malformed %s (%zu bytes)", peer, what, len);
    memcpy(body, (const char *)msg + sizeof(struct ipc_hdr), size);
    if (rest)
        *rest = len - fixed;
    return (const char *)msg + fixed;
}

uint32_t ipc_msg_aux(const void *msg)
{
    struct ipc_hdr h;
    memcpy(&h, msg, sizeof h);
    return h.aux;
}

size_t ipc_fixed_size(unsigned type)
{
    size_t h = sizeof(struct ipc_hdr);
    switch (type) {
    case IPC_LOOKUP_REQ: return h + sizeof(struct ipc_lookup_req);
    case IPC_LOOKUP_REP: return h + sizeof(struct ipc_lookup_rep);
    case IPC_SMALL:      return h + sizeof(struct ipc_small);
    case IPC_REQ:        return h + sizeof(struct ipc_req);
    case IPC_GRANT:      return h + sizeof(struct ipc_grant);
    case IPC_KMSG:       return h + sizeof(struct ipc_kmsg);
    case IPC_PAGE:       return h + sizeof(struct ipc_page);
    case IPC_ACCEPT:     return h + sizeof(struct ipc_accept);
    case IPC_REPLY:      return h + sizeof(struct ipc_reply);
    case IPC_PORT_OP:    return h; /* the operation's body follows (its size by aux) */
    default:             return 0;
    }
}

size_t ipc_ext_size(unsigned flags, uint32_t nrights)
{
    size_t n = 0;
    if (flags & IPC_MF_CALL)
        n += sizeof(struct ipc_call_ext);
    if (flags & IPC_MF_FWD)
        n += sizeof(struct ipc_fwd_ext);
    if (flags & IPC_MF_ONCE)
        n += sizeof(struct ipc_once_ext);
    if (flags & IPC_MF_RIGHTS)
        n += sizeof(struct ipc_rights_ext) + (size_t)nrights * sizeof(struct ipc_wire_right);
    return n;
}

size_t ipc_ext_write(unsigned char *out, unsigned flags, const struct ipc_call_ext *call,
                     const struct ipc_fwd_ext *fwd, uint64_t once_token,
                     const struct ipc_wire_right *rights, uint32_t nrights)
{
    unsigned char *at = out;
    if (flags & IPC_MF_CALL) {
        memcpy(at, call, sizeof *call);
        at += sizeof *call;
    }
    if (flags & IPC_MF_FWD) {
        memcpy(at, fwd, sizeof *fwd);
        at += sizeof *fwd;
    }
    if (flags & IPC_MF_ONCE) {
        struct ipc_once_ext o = {.token = once_token};
        memcpy(at, &o, sizeof o);
        at += sizeof o;
    }
    if (flags & IPC_MF_RIGHTS) {
        struct ipc_rights_ext r = {.count = nrights};
        memcpy(at, &r, sizeof r);
        at += sizeof r;
        memcpy(at, rights, (size_t)nrights * sizeof *rights);
        at += (size_t)nrights * sizeof *rights;
    }
    return (size_t)(at - out);
}

/* The body size of a PORT_OP by its operation; 0 for an unknown one
 * (MIGRATE: its fixed part). */
static size_t op_body_size(unsigned op)
{
    if (op >= IPC_OP_NOTE && op <= IPC_OP_PORT_LAST)
        return sizeof(struct ipc_op);
    if (op == IPC_OP_REDIRECT || op == IPC_OP_DEAD)
        return sizeof(struct ipc_loc);
    if (op == IPC_OP_MIGRATE)
        return sizeof(struct ipc_migrate);
    return 0;
}

static bool wire_right_ok(const struct ipc_wire_right *w)
{
    return w->uid && w->token && w->node >= 0 && w->node < NET_MAX_NODES &&
           w->slot < IPC_MAX_SLOTS && w->kind >= IPC_WR_SEND && w->kind <= IPC_WR_RECV &&
           w->limit >= 1 && w->limit <= IPC_MAX_LIMIT;
}

/* The extensions after a fixed body at `at`, up to `end`: checked, and
 * recorded in p. Returns where they end, or NULL. */
static const unsigned char *parse_ext(const unsigned char *at, const unsigned char *end,
                                      unsigned flags, struct ipc_parsed *p)
{
    if (flags & ~IPC_MF_ALL)
        return NULL;
    if ((flags & IPC_MF_QUEUED) && !(flags & IPC_MF_FWD))
        return NULL;
    if ((flags & IPC_MF_NOTIFY) && !(flags & IPC_MF_ONCE))
        return NULL;
    if (flags & IPC_MF_CALL) {
        if ((size_t)(end - at) < sizeof p->call)
            return NULL;
        memcpy(&p->call, at, sizeof p->call);
        at += sizeof p->call;
        if (p->call.reply_token == 0 || p->call.reply_cap > IPC_MAX_BYTES)
            return NULL;
    }
    if (flags & IPC_MF_FWD) {
        if ((size_t)(end - at) < sizeof p->fwd)
            return NULL;
        memcpy(&p->fwd, at, sizeof p->fwd);
        at += sizeof p->fwd;
        if (p->fwd.origin < 0 || p->fwd.origin >= NET_MAX_NODES || p->fwd.provider < 0 ||
            p->fwd.provider >= NET_MAX_NODES)
            return NULL;
        if ((flags & IPC_MF_QUEUED) ? p->fwd.queued_index >= p->fwd.queued_count ||
                                          p->fwd.queued_count > (1u << 20)
                                    : p->fwd.queued_index || p->fwd.queued_count || p->fwd.ordinal)
            return NULL;
    }
    if (flags & IPC_MF_ONCE) {
        struct ipc_once_ext o;
        if ((size_t)(end - at) < sizeof o)
            return NULL;
        memcpy(&o, at, sizeof o);
        at += sizeof o;
        if (!o.token)
            return NULL;
        p->once_token = o.token;
    }
    if (flags & IPC_MF_RIGHTS) {
        struct ipc_rights_ext r;
        if ((size_t)(end - at) < sizeof r)
            return NULL;
        memcpy(&r, at, sizeof r);
        at += sizeof r;
        if (r.count < 1 || r.count > IPC_MAX_RIGHTS || r.reserved ||
            (size_t)(end - at) / sizeof(struct ipc_wire_right) < r.count)
            return NULL;
        for (uint32_t i = 0; i < r.count; i++) {
            struct ipc_wire_right w;
            memcpy(&w, at + i * sizeof w, sizeof w);
            if (!wire_right_ok(&w))
                return NULL;
        }
        p->nrights = r.count;
        p->rights = at;
        at += (size_t)r.count * sizeof(struct ipc_wire_right);
    }
    return at;
}

int ipc_parse(const void *msg, size_t len, struct ipc_parsed *p)
{
    struct ipc_hdr h;
    /* Only what a message need not carry is cleared: this is on every
     * message's path (req and op are filled for their types alone). */
    memset(&p->call, 0, sizeof p->call);
    memset(&p->fwd, 0, sizeof p->fwd);
    p->once_token = 0;
    p->nrights = 0;
    p->rights = NULL;
    p->opcode = 0;
    if (len < sizeof h)
        return -EINVAL;
    memcpy(&h, msg, sizeof h);
    const unsigned char *at = (const unsigned char *)msg + sizeof h, *end = (const unsigned char *)msg + len;
    p->type = h.type;
    switch (h.type) {
    case IPC_SMALL:
        if ((size_t)(end - at) < sizeof(struct ipc_small))
            return -EINVAL;
        memcpy(&p->d, at, sizeof p->d);
        at += sizeof(struct ipc_small);
        break;
    case IPC_REQ:
        if ((size_t)(end - at) < sizeof p->req)
            return -EINVAL;
        memcpy(&p->req, at, sizeof p->req);
        p->d = p->req.d;
        at += sizeof p->req;
        if (p->req.nool > IPC_MAX_OOL || p->req.reserved || p->req.inline_len > IPC_MAX_BYTES ||
            !p->req.xfer)
            return -EINVAL;
        break;
    case IPC_PORT_OP:
        p->opcode = h.aux;
        if (h.aux < IPC_OP_NOTE || h.aux > IPC_OP_PORT_LAST || (size_t)(end - at) < sizeof p->op)
            return -EINVAL;
        memcpy(&p->op, at, sizeof p->op);
        p->d = p->op.d;
        at += sizeof p->op;
        break;
    default:
        return -EINVAL;
    }
    /* Numbered in the sender's order, but for what moves or destroys a
     * receive right in transit (port_migrate.c says why). */
    bool unnumbered = h.type == IPC_PORT_OP && (p->opcode == IPC_OP_PULL ||
                                                p->opcode == IPC_OP_DROP_RECV);
    if (p->d.slot >= IPC_MAX_SLOTS || !p->d.uid || !p->d.seq != unnumbered)
        return -EINVAL;
    unsigned allowed = h.type == IPC_PORT_OP ? IPC_MF_FWD : IPC_MF_ALL;
    if (p->d.flags & ~allowed)
        return -EINVAL;
    /* Only a message sent on a send right has a flow to answer. */
    if ((p->d.flags & IPC_MF_ONCE || h.type == IPC_PORT_OP) && p->d.flow != IPC_NO_FLOW)
        return -EINVAL;
    if (p->d.flags && !(at = parse_ext(at, end, p->d.flags, p)))
        return -EINVAL;
    p->data = at;
    p->dlen = (size_t)(end - at);
    if (h.type == IPC_REQ) {
        if (p->dlen != p->req.nool * sizeof(uint64_t))
            return -EINVAL;
        uint64_t total = 0;
        for (uint32_t i = 0; i < p->req.nool; i++) {
            uint64_t l;
            memcpy(&l, at + i * sizeof l, sizeof l);
            if (l == 0 || l > IPC_MAX_BYTES)
                return -EINVAL;
            total += l;
        }
        if (total > IPC_MAX_BYTES)
            return -EINVAL;
    }
    if (h.type == IPC_PORT_OP) {
        if (p->dlen)
            return -EINVAL;
        switch (p->opcode) {
        case IPC_OP_RELEASE:
            if (p->op.token || !p->op.arg || p->op.arg > UINT32_MAX)
                return -EINVAL;
            break;
        case IPC_OP_PULL:
            if (!p->op.token || p->op.arg >= IPC_MAX_SLOTS)
                return -EINVAL;
            break;
        default:
            if (!p->op.token || p->op.arg)
                return -EINVAL;
        }
    }
    if (h.type == IPC_SMALL && p->dlen > IPC_MAX_BYTES)
        return -EINVAL;
    /* A notification's data is the notification, and nothing larger goes
     * as one. */
    if ((p->d.flags & IPC_MF_NOTIFY) &&
        (h.type != IPC_SMALL || p->dlen != sizeof(struct dsm_notification)))
        return -EINVAL;
    return 0;
}

uint64_t ipc_ool_pages(const uint64_t *lens, uint32_t nool)
{
    uint64_t pages = 0;
    for (uint32_t i = 0; i < nool; i++)
        pages += (lens[i] + IPC_PAGE_BYTES - 1) / IPC_PAGE_BYTES;
    return pages;
}

int ipc_ool_locate(const uint64_t *lens, uint32_t nool, uint64_t index,
                   uint32_t *region, uint64_t *offset, uint64_t *bytes)
{
    for (uint32_t r = 0; r < nool; r++) {
        uint64_t pages = (lens[r] + IPC_PAGE_BYTES - 1) / IPC_PAGE_BYTES;
        if (index < pages) {
            *region = r;
            *offset = index * IPC_PAGE_BYTES;
            uint64_t left = lens[r] - *offset;
            *bytes = left < IPC_PAGE_BYTES ? left : IPC_PAGE_BYTES;
            return 0;
        }
        index -= pages;
    }
    return -EINVAL;
}

int ipc_msg_check(const void *msg, size_t len)
{
    struct ipc_hdr h;
    if (len < sizeof h)
        return -EINVAL;
    memcpy(&h, msg, sizeof h);
    size_t fixed = ipc_fixed_size(h.type);
    if (!fixed || len < fixed)
        return -EINVAL;
    const char *body = (const char *)msg + sizeof h;
    size_t extra = len - fixed;
    /* aux carries a PORT_OP's operation; ipc's other types have none. */
    if (h.type != IPC_PORT_OP && h.aux)
        return -EINVAL;

    switch (h.type) {
    case IPC_LOOKUP_REQ: {
        struct ipc_lookup_req b;
        memcpy(&b, body, sizeof b);
        if (extra || !b.token || !memchr(b.name, 0, sizeof b.name) || !b.name[0])
            return -EINVAL;
        return 0;
    }
    case IPC_LOOKUP_REP: {
        struct ipc_lookup_rep b;
        memcpy(&b, body, sizeof b);
        if (b.reserved || !b.token)
            return -EINVAL;
        if (b.status)
            return b.status == -ENOENT && !extra ? 0 : -EINVAL;
        if (extra != sizeof(struct ipc_wire_right))
            return -EINVAL;
        struct ipc_wire_right w;
        memcpy(&w, body + sizeof b, sizeof w);
        return wire_right_ok(&w) && w.kind == IPC_WR_SEND ? 0 : -EINVAL;
    }
    case IPC_SMALL:
    case IPC_REQ: {
        struct ipc_parsed p;
        return ipc_parse(msg, len, &p);
    }
    case IPC_GRANT: {
        struct ipc_grant b;
        memcpy(&b, body, sizeof b);
        if (extra || b.count > (1u << 20) || b.send_inline > 1)
            return -EINVAL;
        return 0;
    }
    case IPC_PAGE: {
        struct ipc_page b;
        memcpy(&b, body, sizeof b);
        if (b.count < 1 || b.count > IPC_MAX_RUN)
            return -EINVAL;
        return extra <= (size_t)b.count * IPC_PAGE_BYTES ? 0 : -EINVAL;
    }
    case IPC_ACCEPT: {
        struct ipc_accept b;
        memcpy(&b, body, sizeof b);
        return extra || b.flow >= IPC_NO_FLOW || b.reserved || !b.ordinal ? -EINVAL : 0;
    }
    case IPC_KMSG:
        return extra <= IPC_MAX_BYTES ? 0 : -EINVAL;
    case IPC_REPLY: {
        struct ipc_reply b;
        memcpy(&b, body, sizeof b);
        return extra <= b.full_len && b.full_len <= IPC_MAX_BYTES ? 0 : -EINVAL;
    }
    case IPC_PORT_OP: {
        size_t body_len = op_body_size(h.aux);
        if (!body_len || extra < body_len)
            return -EINVAL;
        if (h.aux <= IPC_OP_PORT_LAST) {
            struct ipc_parsed p;
            return ipc_parse(msg, len, &p);
        }
        if (h.aux == IPC_OP_REDIRECT || h.aux == IPC_OP_DEAD) {
            struct ipc_loc l;
            memcpy(&l, body, sizeof l);
            if (extra != sizeof l || !l.uid)
                return -EINVAL;
            if (h.aux == IPC_OP_DEAD)
                return l.node || l.slot || l.epoch ? -EINVAL : 0;
            return l.node >= 0 && l.node < NET_MAX_NODES && l.slot < IPC_MAX_SLOTS ? 0 : -EINVAL;
        }
        return ipc_migrate_check(body, extra) ? -EINVAL : 0;
    }
    }
    return -EINVAL;
}

const char *ipc_migrate_check(const void *body, size_t len)
{
    struct ipc_migrate m;
    if (len < sizeof m)
        return "a truncated port state";
    memcpy(&m, body, sizeof m);
    if (!m.uid || m.slot >= IPC_MAX_SLOTS || m.limit < 1 || m.limit > IPC_MAX_LIMIT)
        return "a port state with a bad port, slot or limit";
    if (m.nodes < 1 || m.nodes > NET_MAX_NODES || m.flags & ~(IPC_MIG_NS_ARMED | IPC_MIG_IN_TRANSIT))
        return "a port state with a bad node count or flags";
    if (((m.flags & IPC_MIG_IN_TRANSIT) != 0) != (m.recv_token != 0))
        return "a port state whose receive right is half in transit";
    if (m.flags & IPC_MIG_NS_ARMED) {
        if (!wire_right_ok(&m.ns_right) || m.ns_right.kind != IPC_WR_ONCE)
            return "a port state with a bad no-senders request";
    }
    if (m.nqueued > (1u << 20) || m.ntokens > (1u << 20))
        return "a port state with too many messages or rights";
    size_t rest = len - sizeof m;
    size_t need = (size_t)m.nodes * sizeof(struct ipc_migrate_peer) +
                  (size_t)m.ntokens * sizeof(struct ipc_migrate_token);
    if (rest != need)
        return "a port state of the wrong length";
    const unsigned char *t = (const unsigned char *)body + sizeof m +
                             (size_t)m.nodes * sizeof(struct ipc_migrate_peer);
    for (uint32_t i = 0; i < m.ntokens; i++) {
        struct ipc_migrate_token k;
        memcpy(&k, t + i * sizeof k, sizeof k);
        if (!k.token || k.kind < IPC_TOK_SEND || k.kind > IPC_TOK_DROPPED ||
            k.node < -1 || k.node >= (int32_t)m.nodes)
            return "a port state with a bad right";
    }
    return NULL;
}
