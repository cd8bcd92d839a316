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
    default:             return 0;
    }
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

    switch (h.type) {
    case IPC_LOOKUP_REQ: {
        struct ipc_lookup_req b;
        memcpy(&b, body, sizeof b);
        if (extra || !memchr(b.name, 0, sizeof b.name) || !b.name[0])
            return -EINVAL;
        return 0;
    }
    case IPC_SMALL: {
        struct ipc_small b;
        memcpy(&b, body, sizeof b);
        if (b.port < 0 || (b.reply_token == 0 && b.reply_cap) || b.reply_cap > IPC_MAX_BYTES)
            return -EINVAL;
        return 0;
    }
    case IPC_REQ: {
        struct ipc_req b;
        memcpy(&b, body, sizeof b);
        if (b.port < 0 || b.nool > IPC_MAX_OOL || extra != b.nool * sizeof(uint64_t) ||
            b.inline_len > IPC_MAX_BYTES || b.reply_cap > IPC_MAX_BYTES ||
            (b.reply_token == 0 && b.reply_cap))
            return -EINVAL;
        uint64_t lens[IPC_MAX_OOL], total = 0;
        memcpy(lens, body + sizeof b, extra);
        for (uint32_t i = 0; i < b.nool; i++) {
            if (lens[i] == 0 || lens[i] > IPC_MAX_BYTES)
                return -EINVAL;
            total += lens[i];
        }
        if (total > IPC_MAX_BYTES)
            return -EINVAL;
        return 0;
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
    case IPC_LOOKUP_REP:
    case IPC_ACCEPT:
        return extra ? -EINVAL : 0;
    case IPC_KMSG:
        return extra <= IPC_MAX_BYTES ? 0 : -EINVAL;
    case IPC_REPLY: {
        struct ipc_reply b;
        memcpy(&b, body, sizeof b);
        return extra <= b.full_len && b.full_len <= IPC_MAX_BYTES ? 0 : -EINVAL;
    }
    }
    return -EINVAL;
}
