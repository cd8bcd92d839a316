/*
 * msg.h — the port protocol's message bodies and their validation.
 *
 * Everything arriving here came through an authenticated transport, but a
 * bug or a mismatched build on the other side must still be caught before a
 * length or an index is used: ipc_msg_check verifies each body's size
 * against its type, and the counts and lengths inside it against the
 * protocol's limits. Whether the sender may do what a well-formed message
 * asks (holds the right it names) is the port's to decide (port_queue.c,
 * carry.c): that needs state, this file has none.
 */
#ifndef DSM_IPC_MSG_H
#define DSM_IPC_MSG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/ipc.h"

#define IPC_MAX_OOL     64            /* OOL regions per message */
#define IPC_MAX_BYTES   (1ull << 30)  /* inline or OOL bytes per message */
#define IPC_MAX_RUN     256           /* pages in one PAGE message (the largest window) */
#define IPC_MAX_RIGHTS  64            /* rights one message carries */
#define IPC_MAX_SLOTS   1024          /* port slots per node: a slot is < this */
#define IPC_NO_FLOW     0xffffu       /* a message no accept notification answers */
#define IPC_MAX_LIMIT   (1u << 20)    /* a port's queue limit */

/* A port as a message or an operation names it: where its sender believes
 * it lives (slot, at the node the message goes to), which port it means
 * (uid: a port keeps it wherever it moves), and its place in the sender's
 * order for that port: every message and operation a node addresses to a
 * port is numbered (seq from 1), and the port handles each node's in that
 * order, wherever they travelled (a port that moved has its former node
 * forward what still reaches it). */
struct ipc_dst {
    uint32_t slot;
    uint16_t flow;     /* the sender's link, echoed by accept notifications; IPC_NO_FLOW */
    uint16_t flags;    /* IPC_MF_*: which extensions follow the body */
    uint64_t uid;
    uint64_t seq;
};

/* Extensions, in this order after the fixed body of a SMALL, REQ or
 * PORT_OP, each present when its flag is set. */
#define IPC_MF_CALL    0x01u /* struct ipc_call_ext: an RPC's pre-granted reply */
#define IPC_MF_FWD     0x02u /* struct ipc_fwd_ext: forwarded by a node the port left */
#define IPC_MF_QUEUED  0x04u /* (with FWD) it was queued there: keeps its place */
#define IPC_MF_ONCE    0x08u /* struct ipc_once_ext: sent through a send-once right */
#define IPC_MF_NOTIFY  0x10u /* (with ONCE) a notification: data is a struct dsm_notification */
#define IPC_MF_RIGHTS  0x20u /* struct ipc_rights_ext, then count struct ipc_wire_right */
#define IPC_MF_ALL     0x3fu

struct ipc_call_ext { uint64_t reply_token; uint64_t reply_cap; };
struct ipc_fwd_ext {
    int32_t  origin;       /* the node whose message or operation it is */
    int32_t  provider;     /* REQ: the node that holds the data and awaits the grant */
    uint32_t queued_index; /* QUEUED: its place in the former node's queue */
    uint32_t queued_count; /* QUEUED: how many were queued there */
    uint64_t ordinal;      /* QUEUED: its number among the origin's messages to the port */
};
struct ipc_once_ext { uint64_t token; };
struct ipc_rights_ext { uint32_t count; uint32_t reserved; };

/* A right carried in a message. */
enum ipc_wire_kind { IPC_WR_SEND = 1, IPC_WR_ONCE = 2, IPC_WR_RECV = 3 };
struct ipc_wire_right {
    uint64_t uid;
    uint64_t token;  /* SEND: the copy in transit; ONCE: the right itself; RECV: the port's */
    int32_t  node;   /* where the port lives, as the giver knows it */
    uint32_t slot;
    uint32_t kind;   /* enum ipc_wire_kind */
    uint32_t limit;  /* the port's queue limit */
    uint64_t epoch;  /* of that location: the moves the port had made */
};

struct ipc_lookup_req { uint64_t token; char name[DSM_PORT_NAME_MAX + 1]; };
/* + one struct ipc_wire_right (a send right) when status is 0 */
struct ipc_lookup_rep { uint64_t token; int32_t status; uint32_t reserved; };

struct ipc_small {           /* + extensions + inline data */
    struct ipc_dst d;
};

struct ipc_req {             /* + extensions + uint64_t ool_len[nool] */
    struct ipc_dst d;
    uint32_t nool;
    uint32_t reserved;
    uint64_t xfer;           /* the sender's transfer id */
    uint64_t inline_len;
};

struct ipc_grant { uint64_t xfer; uint32_t first, count; uint32_t send_inline, reserved; };
struct ipc_kmsg  { uint64_t xfer; };               /* + inline data */
/* A run of `count` pages, consecutive within one region: their data. */
struct ipc_page  { uint64_t xfer; uint32_t index, count; };  /* + page data */
/* flow: the sender's link (IPC_MF's flow), ordinal: the message's number. */
struct ipc_accept { uint32_t flow; uint32_t reserved; uint64_t ordinal; };
struct ipc_reply { uint64_t token; uint64_t full_len; };  /* + data */

/* PORT_OP: the header's aux is the operation. The first ones are
 * addressed to a port, numbered in the sender's order like its messages
 * (struct ipc_op, + FWD when forwarded) but for PULL and DROP_RECV (seq 0:
 * handled when they come); the others go to a node. */
enum ipc_op_code {
    IPC_OP_NOTE = 1,   /* a holder put a copy of its send right (token) in a message */
    IPC_OP_CLAIM,      /* the taker of a message claims the copy (token) it carried */
    IPC_OP_RELEASE,    /* a holder gives back its send rights (arg: units) */
    IPC_OP_DROP,       /* a copy in transit was destroyed unclaimed (token) */
    IPC_OP_PULL,       /* the taker of the receive right (token) wants the port: arg = its slot */
    IPC_OP_DROP_RECV,  /* the receive right in transit (token) was destroyed: the port dies */
    IPC_OP_PORT_LAST = IPC_OP_DROP_RECV,
    IPC_OP_REDIRECT,   /* to a holder: the port lives elsewhere now (struct ipc_loc) */
    IPC_OP_DEAD,       /* to a holder: the port was destroyed (struct ipc_loc, uid only) */
    IPC_OP_MIGRATE,    /* to the receive right's taker: the port's state (struct ipc_migrate) */
    IPC_OP_LAST = IPC_OP_MIGRATE,
};
struct ipc_op { struct ipc_dst d; uint64_t token; uint64_t arg; };
struct ipc_loc { uint64_t uid; int32_t node; uint32_t slot; uint64_t epoch; };

/* MIGRATE: the port's state as its former node had it, then per node
 * (nodes of them) a struct ipc_migrate_peer, then ntokens struct
 * ipc_migrate_token. The queued messages follow as their own messages
 * (FWD | QUEUED). */
#define IPC_MIG_NS_ARMED 1u  /* a no-senders request is armed: ns_* */
#define IPC_MIG_IN_TRANSIT 2u /* its receive right is in a message again (recv_token) */
struct ipc_migrate {
    uint64_t uid;
    uint32_t slot;           /* the taker's slot for it */
    uint32_t limit;
    uint64_t epoch;
    uint64_t mscount;
    uint64_t transit;        /* send copies in transit */
    uint64_t recv_token;
    uint32_t nodes;
    uint32_t ntokens;
    uint32_t nqueued;
    uint32_t flags;          /* IPC_MIG_* */
    uint64_t ns_cookie;
    struct ipc_wire_right ns_right; /* the no-senders request's send-once right */
    uint8_t  former[32];     /* nodes it lived at (a bitmap): their forwards are trusted */
};
struct ipc_migrate_peer { uint64_t next_seq; uint64_t enq; uint32_t send; uint32_t waiting; };
enum ipc_token_kind { IPC_TOK_SEND = 1, IPC_TOK_ONCE, IPC_TOK_CLAIM, IPC_TOK_DROPPED };
struct ipc_migrate_token { uint64_t token; uint32_t kind; int32_t node; };

/* A SMALL, REQ or PORT_OP taken apart: the fixed body, each extension the
 * flags announce, and what follows (SMALL: inline data; REQ: the region
 * lengths; PORT_OP: nothing). Pointers into the message (unaligned). */
struct ipc_parsed {
    unsigned              type;
    struct ipc_dst        d;
    struct ipc_req        req;   /* REQ */
    struct ipc_op         op;    /* PORT_OP */
    unsigned              opcode;
    struct ipc_call_ext   call;  /* zero unless IPC_MF_CALL */
    struct ipc_fwd_ext    fwd;   /* IPC_MF_FWD */
    uint64_t              once_token;
    uint32_t              nrights;
    const unsigned char  *rights;     /* nrights struct ipc_wire_right */
    const unsigned char  *data;
    size_t                dlen;
};

/* What a PORT_OP's operation is, in words. */
const char *ipc_op_name(unsigned op);

/* The name of one of the port protocol's own types; NULL for any other. */
const char *ipc_own_type_name(unsigned type);

/* Bytes of header+body before any extension or trailing data, or 0 for
 * unknown types. */
size_t ipc_fixed_size(unsigned type);

/* Bytes of the extensions `flags` announces, the rights' included. */
size_t ipc_ext_size(unsigned flags, uint32_t nrights);

/* Validates a port-protocol message (types LOOKUP_REQ .. PORT_OP). Returns
 * 0 or -EINVAL. */
int ipc_msg_check(const void *msg, size_t len);

/* A MIGRATE body (what follows the header): NULL when well formed, else
 * what is wrong. */
const char *ipc_migrate_check(const void *body, size_t len);

/* Takes a SMALL, REQ or port-addressed PORT_OP apart (ipc_msg_check first
 * passed it). Returns 0 or -EINVAL. */
int ipc_parse(const void *msg, size_t len, struct ipc_parsed *p);

/* Writes the extensions of `flags` into out (ipc_ext_size bytes): the
 * pieces given, each used when its flag is set. */
size_t ipc_ext_write(unsigned char *out, unsigned flags, const struct ipc_call_ext *call,
                     const struct ipc_fwd_ext *fwd, uint64_t once_token,
                     const struct ipc_wire_right *rights, uint32_t nrights);

/* Number of IPC_PAGE-sized pages of OOL regions with these lengths. */
uint64_t ipc_ool_pages(const uint64_t *lens, uint32_t nool);

/* Maps a global page index to (region, byte offset in it). Returns 0 or
 * -EINVAL when out of range. */
int ipc_ool_locate(const uint64_t *lens, uint32_t nool, uint64_t index,
                   uint32_t *region, uint64_t *offset, uint64_t *bytes);
#endif
