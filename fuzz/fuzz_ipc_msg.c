/*
 * fuzz_ipc_msg.c — the port protocol's message bodies (src/ipc/msg.c):
 * ipc_msg_check on any bytes, and what the receiver relies on for each
 * message it accepts — the body fits, the counts and lengths inside are
 * within the protocol's limits, the OOL regions' page arithmetic holds.
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
        if (h.type == IPC_REQ) {
            struct ipc_req b;
            memcpy(&b, m + sizeof h, sizeof b);
            if (b.nool > IPC_MAX_OOL || size != fixed + b.nool * sizeof(uint64_t))
                abort();
            uint64_t lens[IPC_MAX_OOL];
            memcpy(lens, m + fixed, b.nool * sizeof(uint64_t));
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
