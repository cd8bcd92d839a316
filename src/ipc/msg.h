/*
 * msg.h — the port protocol's message bodies and their validation.
 *
 * Everything arriving here came through an authenticated transport, but a
 * bug or a mismatched build on the other side must still be caught before a
 * length or an index is used: ipc_msg_check verifies each body's size
 * against its type, and the counts and lengths inside it against the
 * protocol's limits.
 */
#ifndef DSM_IPC_MSG_H
#define DSM_IPC_MSG_H
#include <stddef.h>
#include <stdint.h>

#include "ipc/ipc.h"

#define IPC_MAX_OOL     64            /* OOL regions per message */
#define IPC_MAX_BYTES   (1ull << 30)  /* inline or OOL bytes per message */
#define IPC_MAX_RUN     256           /* pages in one PAGE message (the largest window) */

struct ipc_lookup_req { uint64_t token; char name[DSM_PORT_NAME_MAX + 1]; };
struct ipc_lookup_rep { uint64_t token; int32_t port; uint32_t limit; };

struct ipc_small {           /* + inline data */
    int32_t  port;
    uint32_t reserved;
    uint64_t seq;
    uint64_t reply_token;    /* nonzero: an RPC; reply_cap bytes are granted */
    uint64_t reply_cap;
};

struct ipc_req {             /* + uint64_t ool_len[nool] */
    int32_t  port;
    uint32_t nool;
    uint64_t seq;
    uint64_t xfer;           /* the sender's transfer id */
    uint64_t inline_len;
    uint64_t reply_token;
    uint64_t reply_cap;
};

struct ipc_grant { uint64_t xfer; uint32_t first, count; uint32_t send_inline, reserved; };
struct ipc_kmsg  { uint64_t xfer; };               /* + inline data */
/* A run of `count` pages, consecutive within one region: their data. */
struct ipc_page  { uint64_t xfer; uint32_t index, count; };  /* + page data */
struct ipc_accept { int32_t port; uint32_t reserved; uint64_t seq; };
struct ipc_reply { uint64_t token; uint64_t full_len; };  /* + data */

/* The name of one of the port protocol's own types; NULL for any other. */
const char *ipc_own_type_name(unsigned type);

/* Bytes of header+body before any trailing data, or 0 for unknown types. */
size_t ipc_fixed_size(unsigned type);

/* Validates a port-protocol message (types LOOKUP_REQ .. REPLY). Returns 0
 * or -EINVAL. */
int ipc_msg_check(const void *msg, size_t len);

/* Number of IPC_PAGE-sized pages of OOL regions with these lengths. */
uint64_t ipc_ool_pages(const uint64_t *lens, uint32_t nool);

/* Maps a global page index to (region, byte offset in it). Returns 0 or
 * -EINVAL when out of range. */
int ipc_ool_locate(const uint64_t *lens, uint32_t nool, uint64_t index,
                   uint32_t *region, uint64_t *offset, uint64_t *bytes);
#endif
