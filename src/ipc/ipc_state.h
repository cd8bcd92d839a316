/*
 * ipc_state.h — the ipc layer's shared state (private to src/ipc).
 *
 * One mutex guards all of it. Delivery handlers take it; they never hold it
 * while waiting, and net never calls up into ipc with its own locks held, so
 * taking it around net_send is safe.
 */
#ifndef DSM_IPC_STATE_H
#define DSM_IPC_STATE_H
#include <pthread.h>

#include "ipc/ipc.h"
#include "ipc/msg.h"

#define IPC_MAX_PORTS 256

/* A message fully received and queued on a port. */
struct queued_msg {
    struct queued_msg *next;
    int                src;
    uint64_t           seq;
    uint64_t           reply_token;
    uint64_t           reply_cap;
    unsigned char     *data_block;  /* allocation holding the inline data */
    unsigned char     *data;
    size_t             len;
    uint32_t           nool;
    struct dsm_ool    *ool;
};

/* Receiver side of a large message: memory reserved before the transfer. */
struct reservation {
    struct reservation *next;
    int                 src;
    int32_t             port;
    uint64_t            xfer;
    struct queued_msg  *msg;
    uint64_t            ool_len[IPC_MAX_OOL];
    uint64_t            pages, pages_got, granted;
    bool                inline_got, reserved;
};

struct port {
    bool                used;
    char                name[DSM_PORT_NAME_MAX + 1];
    uint32_t            limit;
    struct queued_msg  *head, *tail;
    uint32_t            queued;        /* complete messages waiting */
    uint32_t            reserved;      /* large messages with memory reserved */
    uint64_t           *next_seq;      /* per sender: the next sequence number to queue */
    struct queued_msg  *parked;        /* complete, but an earlier one is still arriving */
};

/* Sender side of a large message: a copy of it, kept until its last page
 * is handed to the transport (the grants drive it, so the sender's
 * dsm_msg_send returns at once and successive sends overlap). */
struct transfer {
    struct transfer      *next;
    uint64_t              xfer;
    int                   dst;
    unsigned char        *data;                 /* inline data, then each region */
    size_t                len;
    size_t                copy_len;             /* of data: len and every region */
    unsigned char        *ool[IPC_MAX_OOL];     /* into data */
    uint64_t              ool_len[IPC_MAX_OOL];
    uint32_t              nool;
    uint64_t              pages, pages_sent;
    bool                  inline_sent;
    /* data is lent to the transport page message by page message, and
     * freed with the transfer when the last datagram pointing into it is
     * acknowledged (port_release_transfer). */
    struct net_ref        ref;
};

/* What this node has sent to one remote port: the flow-control state. */
struct remote_port {
    struct remote_port *next;
    int                 node, port;
    uint64_t            sent, accepted;
};

struct pending_call {
    struct pending_call *next;
    uint64_t             token;
    void                *buf;
    size_t               cap;
    uint64_t             full_len;
    bool                 done;
    bool                 placing;  /* a reply is being copied into buf */
};

struct pending_lookup {
    struct pending_lookup *next;
    uint64_t               token;
    int32_t                port;
    uint32_t               limit;
    bool                   done;
};

/* The message being reassembled from each peer, when it was placed by ipc. */
struct placement {
    unsigned            type;
    struct reservation *res;      /* KMSG: the reservation */
    struct pending_call *call;    /* REPLY: the call */
    uint64_t            page_index;
    uint32_t            page_count;
    size_t              head_len;  /* registered types: bytes of head kept in scratch */
    unsigned char      *scratch;  /* REPLY beyond cap, or other oddities */
    uint64_t            trace_t0;  /* DSM_TRACE: when its first bytes came in */
    uint64_t            trace_len; /* DSM_TRACE: its length */
};

/* An accept notification waiting to ride on the next message to its peer. */
struct pending_accept {
    bool     set;
    uint16_t port;
    uint64_t seq;
};

struct ipc_state {
    pthread_mutex_t        lock;
    pthread_mutex_t        accept_lock;  /* guards `accepts` only: taken inside sends */
    struct pending_accept *accepts;      /* per peer */
    _Atomic int            accepts_pending;
    struct ipc_params      prm;
    struct port            ports[IPC_MAX_PORTS];
    struct reservation    *reservations;
    struct transfer       *transfers;
    struct remote_port    *remotes;
    struct pending_call   *calls;
    struct pending_lookup *lookups;
    struct placement      *placing;   /* per peer */
    uint64_t               next_token;
    const char            *names[IPC_TYPE_MAX];    /* of registered types */
    ipc_handler            handlers[IPC_TYPE_MAX];
    ipc_placer             placers[IPC_TYPE_MAX];
    uint64_t             (*timer)(uint64_t now); /* the layer above's (ipc_register_timer) */
};

extern struct ipc_state ipc;

/* port.c */
void port_on_lookup_req(int src, const struct ipc_lookup_req *b);
void port_on_lookup_rep(const struct ipc_lookup_rep *b);
void port_on_small(int src, const struct ipc_small *b, const void *data, size_t len);
void port_on_req(int src, const struct ipc_req *b, const uint64_t *ool_len);
void port_on_grant(int src, const struct ipc_grant *b);
void port_on_kmsg(int src, const struct ipc_kmsg *b, const void *data, size_t len);
void port_on_page(int src, const struct ipc_page *b, const void *data, size_t len);
void port_on_accept(int src, const struct ipc_accept *b);
void *port_place_kmsg(int src, const struct ipc_kmsg *b, size_t msg_len, size_t *skip);
void *port_place_page(int src, const struct ipc_page *b, size_t msg_len, size_t *skip);
void port_kmsg_placed(int src);
void port_page_placed(int src, uint64_t index, uint32_t count);
int port_send(const dsm_port_ref *dst, const void *data, size_t len,
              const struct dsm_ool *ool, int nool, double timeout, uint64_t *seq_out,
              uint64_t reply_token, uint64_t reply_cap);
/* rpc.c */
void rpc_on_reply(int src, const struct ipc_reply *b, const void *data, size_t len);
void *rpc_place_reply(int src, const struct ipc_reply *b, size_t msg_len, size_t *skip);
void rpc_reply_placed(int src);

/* Records that the program took message `seq` of `port` from `peer`; the
 * notification leaves with the next message to that peer, or soon. */
void ipc_defer_accept(int peer, int32_t port, uint64_t seq);
void ipc_flush_accepts(void);

/* Sends header + body + trailing data; the caller may hold ipc.lock. */
int ipc_send3(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
              const void *data, size_t dlen);

/* As ipc_send3, but data is lent, not copied (net_send_ref). */
int ipc_send3_lent(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
                   const void *data, size_t dlen, struct net_ref *ref);
#endif
