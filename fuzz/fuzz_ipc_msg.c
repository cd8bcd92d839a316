/*
 * fuzz_ipc_msg.c — the port protocol's message bodies (src/ipc/msg.c):
 * ipc_msg_check on any bytes, and what the receiver relies on for each
 * message it accepts — the body fits, the extensions its flags announce
 * and the rights it carries lie inside it and within the protocol's
 * limits, the counts and lengths inside are within bounds, the OOL
 * regions' page arithmetic holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *m = malloc(size ? size : 1); /* exactly sized for ASan */
    memcpy(m, data, size);
    if (ipc_msg_check(m, size) == 0) {
        struct ipc_hdr h;
        if (size < sizeof h)
            abort();
        memcpy(&h, m, sizeof h);
        size_t fixed = ipc_fixed_size(h.type);
        if (!fixed || size < fixed || !ipc_own_type_name(h.type))
            abort();
        if (h.type == IPC_SMALL || h.type == IPC_REQ ||
            (h.type == IPC_PORT_OP && h.aux <= IPC_OP_PORT_LAST)) {
            struct ipc_parsed p;
            if (ipc_parse(m, size, &p) != 0)
                abort(); /* checked, then not parsable */
            if (p.data < m + fixed || p.data + p.dlen != m + size)
                abort();
            if (p.d.slot >= IPC_MAX_SLOTS || p.nrights > IPC_MAX_RIGHTS ||
                (p.nrights && (p.rights < m + fixed ||
                               p.rights + p.nrights * sizeof(struct ipc_wire_right) > p.data)))
                abort();
            for (uint32_t i = 0; i < p.nrights; i++) {
                struct ipc_wire_right w;
                memcpy(&w, p.rights + i * sizeof w, sizeof w);
                if (!w.uid || !w.token || w.node < 0 || w.node >= NET_MAX_NODES ||
                    w.slot >= IPC_MAX_SLOTS || w.kind < IPC_WR_SEND || w.kind > IPC_WR_RECV)
                    abort();
            }
            if ((p.d.flags & IPC_MF_NOTIFY) && p.dlen != sizeof(struct dsm_notification))
                abort();
        }
        if (h.type == IPC_REQ) {
            struct ipc_parsed p;
            ipc_parse(m, size, &p);
            struct ipc_req b = p.req;
            if (b.nool > IPC_MAX_OOL || p.dlen != b.nool * sizeof(uint64_t))
                abort();
            uint64_t lens[IPC_MAX_OOL];
            memcpy(lens, p.data, b.nool * sizeof(uint64_t));
            uint64_t pages = ipc_ool_pages(lens, b.nool);
            if (pages > (IPC_MAX_BYTES / IPC_PAGE_BYTES) + IPC_MAX_OOL)
                abort();
            /* every page index maps into a region, and the last past it fails */
            for (uint64_t idx = 0; idx < pages && idx < 64; idx++) {
                uint32_t region;
                uint64_t off, len;
                if (ipc_ool_locate(lens, b.nool, idx, &region, &off, &len) != 0 ||
                    region >= b.nool || off + len > lens[region] || len == 0)
                    abort();
            }
            uint32_t region;
            uint64_t off, len;
            if (ipc_ool_locate(lens, b.nool, pages, &region, &off, &len) == 0)
                abort();
        }
        if (h.type == IPC_PORT_OP && h.aux == IPC_OP_MIGRATE &&
            ipc_migrate_check(m + sizeof h, size - sizeof h))
            abort();
        if (h.type == IPC_PAGE) {
            struct ipc_page b;
            memcpy(&b, m + sizeof h, sizeof b);
            if (b.count < 1 || b.count > IPC_MAX_RUN || size - fixed > (size_t)b.count * IPC_PAGE_BYTES)
                abort();
        }
    }
    free(m);
    return 0;
}
