/*
 * ipc_state.h — the ipc layer's shared state (private to src/ipc).
 *
 * One mutex guards all of it. Delivery handlers take it; they never hold it
 * while waiting, and net never calls up into ipc with its own locks held, so
 * taking it around net_send is safe.
 *
 * Two sides of every port (seed 004's, with Mach's rights):
 *  - the port itself, at the node that holds its receive right: its queue,
 *    and what it knows of every node's rights to it (struct port);
 *  - each node's rights, in its table (struct right), and per port it has
 *    rights to, where the port lives and this node's traffic to it
 *    (struct link).
 * A port moves with its receive right; the node it left keeps a record
 * (struct dir_rec) and forwards what still reaches it there.
 */
#ifndef DSM_IPC_STATE_H
#define DSM_IPC_STATE_H
#include <pthread.h>

#include "ipc/ipc.h"
#include "ipc/msg.h"

/* A message fully received, queued on a port (or waiting its turn). */
struct queued_msg {
    struct queued_msg     *next;
    int                    src;         /* the node whose message it is */
    uint16_t               flow;        /* its link there (accept notifications) */
    uint16_t               flags;       /* IPC_MF_ONCE, _NOTIFY */
    uint64_t               seq;         /* in src's order for the port */
    uint64_t               ordinal;     /* its number among src's messages to the port */
    uint64_t               once_token;  /* IPC_MF_ONCE: the right it came through */
    uint64_t               reply_token;
    uint64_t               reply_cap;
    unsigned char         *data_block;  /* allocation holding the inline data */
    unsigned char         *data;
    size_t                 len;
    uint32_t               nool;
    struct dsm_ool        *ool;
    uint32_t               nrights;
    struct ipc_wire_right *rights;      /* the rights it carries, still in transit */
};

/* Receiver side of a large message: memory reserved before the transfer.
 * The provider holds the data and is granted; the message itself is its
 * origin's (they differ when a port's former node forwards the request,
 * or moves a message queued there). */
struct reservation {
    struct reservation *next;
    int                 provider;
    uint64_t            xfer;
    uint64_t            uid;          /* the port */
    uint32_t            slot;
    uint16_t            flags;        /* of the request (IPC_MF_*) */
    struct ipc_fwd_ext  fwd;          /* IPC_MF_FWD */
    struct queued_msg  *msg;
    uint64_t            ool_len[IPC_MAX_OOL];
    uint64_t            pages, pages_got, granted;
    bool                inline_got, reserved;
};

/* What a port knows of one node. */
struct port_peer {
    uint64_t next_seq;  /* the node's next message or operation to handle */
    uint64_t enq;       /* its messages queued so far (their ordinals) */
    uint32_t send;      /* send-right units it holds */
    uint32_t waiting;   /* its claims not yet matched by their giver's note */
};

/* A right the port issued, in transit or outstanding (enum ipc_token_kind). */
struct port_token {
    struct port_token *next;
    uint64_t           token;
    uint32_t           kind;
    int32_t            node;  /* IPC_TOK_CLAIM: the claimer */
};

/* A message or operation waiting for its turn in its node's order. */
struct port_item {
    struct port_item  *next;
    int                origin;   /* whose order */
    int                from;     /* the node it came from (PULL: where to send the port) */
    uint64_t           seq;
    struct queued_msg *msg;      /* a message, or NULL for an operation: */
    unsigned           op;
    uint64_t           token, arg;
};

/* A request for a notification, held with the send-once right it will be
 * sent through. */
struct notify_req {
    bool     armed;
    uint32_t link;    /* the notify port's link (index) */
    uint64_t token;   /* the send-once right to it */
    uint64_t cookie;
};

enum port_state { PORT_FREE = 0, PORT_LIVE, PORT_ARRIVING };

struct port {
    uint8_t             state;
    bool                in_transit;    /* its receive right is in a message */
    bool                doomed;        /* ARRIVING, and its receive right is gone: dies once here */
    bool                state_got;     /* ARRIVING: the former node's MIGRATE came */
    uint32_t            gen;           /* of the slot: port numbers carry it */
    uint64_t            uid;
    uint64_t            epoch;         /* moves so far */
    uint64_t            recv_token;    /* in_transit: the right's token */
    uint32_t            limit;
    struct queued_msg  *head, *tail;
    uint32_t            queued;        /* complete messages waiting */
    uint32_t            reserved;      /* large messages with memory reserved */
    struct port_peer   *peers;         /* per node */
    struct port_item   *items;         /* out of turn: early, behind a claim, or arriving */
    struct port_token  *tokens;
    uint64_t            transit;       /* send copies in transit */
    uint64_t            senders;       /* send-right units held, over all nodes */
    uint64_t            mscount;       /* send rights made from the receive right */
    struct notify_req   ns;            /* no-senders request */
    uint8_t             former[NET_MAX_NODES / 8]; /* nodes it lived at */
    int                 came_from;     /* ARRIVING: the node it comes from */
    uint32_t            nqueued;       /* ARRIVING: messages queued there, coming */
    uint32_t            queued_got;
    struct queued_msg **arriving;      /* ARRIVING: those, by their place */
};

/* Sender side of a large message: a copy of it, kept until its last page
 * is handed to the transport (the grants drive it, so the sender's
 * dsm_msg_send returns at once and successive sends overlap). */
struct transfer {
    struct transfer      *next;
    uint64_t              xfer;
    int                   dst;                  /* whoever grants it (the port may move) */
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
     * acknowledged (release_transfer). */
    struct net_ref        ref;
};

/* A right of this node's (its kind one of dsm.h's DSM_RIGHT_*), named to the program by
 * its index + 1 and nonce. */
struct right {
    uint64_t          nonce;   /* 0: free */
    uint32_t          kind;    /* DSM_RIGHT_* */
    uint32_t          urefs;   /* SEND: references the program holds (and names) */
    uint32_t          link;
    int32_t           slot;    /* RECEIVE: the local port */
    uint64_t          token;   /* SEND_ONCE: the right */
    struct notify_req dn;      /* dead-name request */
    uint32_t          next_free;
};

/* This node's view of a port it has, or had, rights to: where the port
 * lives, and this node's traffic to it. Kept until the port is dead: the
 * port numbers this node's messages and operations, and a new link would
 * start the count again. Its index is the flow that accepts name. */
struct link {
    uint64_t uid;          /* 0: free */
    int32_t  node;
    uint32_t slot;
    uint64_t epoch;
    uint32_t limit;
    uint32_t units;        /* send-right units claimed (given back at release) */
    uint64_t seq;          /* messages and operations sent to it */
    uint64_t sent, accepted; /* messages (flow control) */
    uint32_t send_entry;   /* the SEND right's index + 1, 0: none */
    bool     dead;
};

/* What this node knows of a port by uid: here (slot), gone to another
 * node (forwarding), or destroyed. */
enum dir_state { DIR_LOCAL = 1, DIR_FORWARD, DIR_DEAD };
struct dir_rec {
    uint64_t uid;          /* 0: empty */
    uint8_t  state;
    int32_t  node;
    uint32_t slot;
    uint64_t epoch;
    uint8_t  told[NET_MAX_NODES / 8];   /* DIR_FORWARD: nodes sent a REDIRECT */
    uint8_t  former[NET_MAX_NODES / 8]; /* nodes the port lived at: their forwards are trusted */
};

/* A name this node's name server hands out send rights under. */
struct name_rec {
    struct name_rec *next;
    char             name[DSM_PORT_NAME_MAX + 1];
    uint32_t         entry;  /* the server's SEND right (index + 1) */
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
    int                    status;
    uint32_t               entry;  /* the send right taken (index + 1) */
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
    uint16_t flow;
    uint64_t ordinal;
};

struct ipc_state {
    pthread_mutex_t        lock;
    pthread_mutex_t        accept_lock;  /* guards `accepts` only: taken inside sends */
    struct pending_accept *accepts;      /* per peer */
    _Atomic int            accepts_pending;
    struct ipc_params      prm;
    struct port            ports[IPC_MAX_SLOTS];
    struct reservation    *reservations;
    struct transfer       *transfers;
    struct right          *rights;       /* this node's rights table */
    uint32_t               nrights, free_right; /* free_right: index + 1 of the first free */
    struct link           *links;
    uint32_t               nlinks, used_links;
    struct dir_rec        *dir;          /* open addressing by uid */
    uint32_t               dir_cap, dir_used;
    struct name_rec       *names;
    struct pending_call   *calls;
    struct pending_lookup *lookups;
    struct placement      *placing;   /* per peer */
    uint64_t               rng;       /* nonces, tokens, uids (ipc_nonce) */
    unsigned               refusals;  /* lines printed for refused messages */
    const char            *names_of[IPC_TYPE_MAX];    /* of registered types */
    ipc_handler            handlers[IPC_TYPE_MAX];
    ipc_placer             placers[IPC_TYPE_MAX];
    uint64_t             (*timer)(uint64_t now); /* the layer above's (ipc_register_timer) */
};

extern struct ipc_state ipc;

/* ---- ipc.c ---------------------------------------------------------------- */

/* A fresh random nonzero 64-bit value (nonces, tokens, uids). Under ipc.lock. */
uint64_t ipc_nonce(void);

/* Records that the program took message `ordinal` of flow `flow` from
 * `peer`; the notification leaves with the next message to that peer, or
 * soon. */
void ipc_defer_accept(int peer, uint16_t flow, uint64_t ordinal);
void ipc_flush_accepts(void);

/* Sends header + body + trailing data; the caller may hold ipc.lock. */
int ipc_send3(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
              const void *data, size_t dlen);
/* Header + three pieces. */
int ipc_send4(int peer, unsigned type, uint32_t aux, const void *a, size_t alen, const void *b,
              size_t blen, const void *c, size_t clen);

/* As ipc_send3, but data is lent, not copied (net_send_ref). */
int ipc_send3_lent(int peer, unsigned type, uint32_t aux, const void *body, size_t blen,
                   const void *data, size_t dlen, struct net_ref *ref);

/* Prints one line for a message or operation refused (the sender held no
 * right for it, or named a port that never lived here), and counts it. */
__attribute__((format(printf, 1, 2)))
void ipc_refuse(const char *fmt, ...);

/* ---- port.c: ports, the slot table ------------------------------------------- */
/* Ends the job when dsm_startup has not been called. */
void port_need_started(void);
/* A free slot made a port (uid, limit), in `state`; NULL when none is free. */
struct port *port_new(uint64_t uid, uint32_t limit, enum port_state state);
/* The port number the program knows a slot by. */
int port_number(const struct port *p);
/* Frees the slot of a port that died or left (its queue already emptied). */
void port_free(struct port *p);
/* The local port of a slot and uid, or NULL. */
struct port *port_here(uint32_t slot, uint64_t uid);
/* The port a program's port number names, if this node holds its receive
 * right (and it is not in a message). */
struct port *port_of_number(int number);

/* ---- port_send.c: the sender protocol ---------------------------------------- */
void port_on_grant(int src, const struct ipc_grant *b);
/* Sends a complete message to the port where it now lives (node, slot):
 * forwarded for its origin, keeping its number (QUEUED: its place in this
 * node's queue, index of count). Takes m. */
void port_forward_msg(struct queued_msg *m, uint64_t uid, int node, uint32_t slot,
                      bool queued, uint32_t index, uint32_t count);
/* Sends one message through a send or send-once right; reply_token/cap
 * make it an RPC request. */
int port_send(const dsm_port_ref *dst, const void *data, size_t len,
              const struct dsm_ool *ool, int nool, const struct dsm_msg_right *rights,
              int nrights, double timeout, uint64_t *seq_out, uint64_t reply_token,
              uint64_t reply_cap);

/* ---- port_flow.c: the sender's credits and accepts --------------------------- */
struct credit_wait {
    uint32_t link;
};
/* Whether the link has credit (or is dead): an ipc_wait condition. */
bool port_credit_available(void *arg);
void port_on_accept(int src, uint16_t flow, uint64_t ordinal);

/* ---- port_queue.c: turns, and the program taking messages -------------------- */
void port_on_op(int src, const struct ipc_parsed *p);
/* Handles every message and operation whose turn has come. */
void port_run(struct port *p);
/* Handles one whose turn it is (its number already counted). */
void port_take_turn(struct port *p, int origin, int from, struct queued_msg *msg, unsigned op,
                    uint64_t token, uint64_t arg);
/* Appends a message the port accepted to its queue, numbered for its
 * origin unless `ordinal` is already set. */
void port_append(struct port *p, struct queued_msg *m);
/* Handles at once a message for the port here whose turn it is, nothing
 * waiting (port_migrate_route is the long way); whether it did. */
bool port_in_turn(uint32_t slot, uint64_t uid, int origin, int from, uint64_t seq,
                  struct queued_msg *m);

/* ---- port_assembly.c: messages received and assembled ------------------------ */
void port_on_small(int src, const struct ipc_parsed *p);
void port_on_req(int src, const struct ipc_parsed *p);
void port_on_kmsg(int src, const struct ipc_kmsg *b, const void *data, size_t len);
void port_on_page(int src, const struct ipc_page *b, const void *data, size_t len);
void *port_place_kmsg(int src, const struct ipc_kmsg *b, size_t msg_len, size_t *skip);
void *port_place_page(int src, const struct ipc_page *b, size_t msg_len, size_t *skip);
void port_kmsg_placed(int src);
void port_page_placed(int src, uint64_t index, uint32_t count);
/* Grants the port's waiting requests while it has room. */
void port_grant_waiting(struct port *p);
/* Grants every waiting request for uid, whose port is gone (received, then dropped). */
void port_grant_orphans(uint64_t uid);
void port_unlink_reservation(struct reservation *r);
/* Frees a message and its buffers (rights already dealt with). */
void port_msg_free(struct queued_msg *m);

/* ---- right.c: this node's rights -------------------------------------------- */
/* The entry a program's handle names, if it is one of `kinds` (a bit per
 * DSM_RIGHT_*): 0, -EINVAL (not a handle, or another kind), -EPERM (made
 * up, or revoked). */
int right_get(const dsm_port_ref *ref, unsigned kinds, struct right **out);
/* A new entry (its index + 1), or 0 when the table cannot grow. */
uint32_t right_new(uint32_t kind, uint32_t link);
/* Frees an entry (its handles are revoked). */
void right_free(uint32_t index1);
static inline struct right *right_at(uint32_t index1) { return &ipc.rights[index1 - 1]; }
/* Fills a handle for entry index1. */
void right_handle(uint32_t index1, dsm_port_ref *out);
/* The link to port uid (made, at the location given, when new; a newer
 * location given updates it). Its index, or ends the job when out of room. */
uint32_t link_get(uint64_t uid, int node, uint32_t slot, uint64_t epoch, uint32_t limit);
/* The link to uid, or -1. */
int link_find(uint64_t uid);
/* The send entry of a link (made with no references when missing). */
uint32_t link_send_entry(uint32_t link);
/* Drops one reference of a SEND entry; the last gives its units back. */
void right_send_unref(uint32_t index1);
/* Sends a port operation from this node on link `link`. */
void link_op(uint32_t link, unsigned op, uint64_t token, uint64_t arg);
/* As link_op, but to (node, slot), where the giver of a right said the
 * port is (a PULL goes to the node that holds the receive right). */
void link_op_at(uint32_t link, int node, uint32_t slot, unsigned op, uint64_t token, uint64_t arg);

/* ---- dir.c: ports by uid ------------------------------------------------------ */
struct dir_rec *dir_find(uint64_t uid);
struct dir_rec *dir_put(uint64_t uid, enum dir_state state, int node, uint32_t slot,
                        uint64_t epoch);

/* ---- carry.c: rights in messages, and their accounting at the port --------- */
/* Turns the rights a program puts in a message into wire rights (checked
 * first: 0, or -EPERM/-EINVAL/-EPIPE with nothing changed). `dst_uid` is
 * the destination's (a port's receive right cannot travel to itself). */
int carry_check(const struct dsm_msg_right *rights, int n, uint64_t dst_uid);
int carry_out(const struct dsm_msg_right *rights, int n, struct ipc_wire_right *out,
              uint32_t *after);
/* The rights of a message the program takes, made this node's: handles. */
void carry_in(const struct ipc_wire_right *w, uint32_t n, dsm_port_ref *out);
/* Destroys rights in transit (their message is destroyed). */
void carry_destroy(const struct ipc_wire_right *w, uint32_t n);
/* A port operation whose turn came; false: the origin holds no right for it. */
bool carry_apply(struct port *p, int origin, int from, unsigned op, uint64_t token,
                 uint64_t arg);
/* Whether origin may put message m on the port (and consumes a send-once
 * right it came through). */
bool carry_may_send(struct port *p, int origin, const struct queued_msg *m);
/* Receiver-side acts: a copy of a send right in transit, made here (MAKE) or
 * copied by this node, the port's (COPY); a new send-once right. */
uint64_t carry_new_send_token(struct port *p, bool make);
uint64_t carry_new_once_token(struct port *p);
/* Sends the no-senders notification when it is due. */
void carry_check_no_senders(struct port *p);
struct port_token *carry_token(struct port *p, uint64_t token, uint32_t kind);
void carry_token_add(struct port *p, uint64_t token, uint32_t kind, int node);
void carry_token_remove(struct port *p, struct port_token *t);

/* ---- port_migrate.c: ports that move ------------------------------------------- */
/* A message (msg) or an operation that reached this node for a port. */
struct route_item {
    int                 origin;   /* whose it is */
    int                 from;     /* the node it came from */
    int                 provider; /* a request's: who holds its data */
    bool                trusted;  /* checked already (a request's message, complete) */
    struct ipc_dst      d;
    struct ipc_fwd_ext  fwd;
    struct queued_msg  *msg;
    unsigned            op;
    uint64_t            token, arg;
};
/* Routes it: to the port here, onward to where it moved, or refused/dead. */
void port_migrate_route(struct route_item *it);
/* Whether `from` may forward for port uid: the port lived there. */
bool port_migrate_trusts(uint64_t uid, int from);
/* Forwards a large message's request (not reserved here) to where its port
 * lives now (r). */
void port_migrate_forward_parsed_req(struct route_item *it, const struct ipc_parsed *p,
                                struct dir_rec *r);
/* The receive right's taker (node, slot) pulled the port: it goes there. */
void port_migrate_out(struct port *p, int node, uint32_t slot);
void port_migrate_on_state(int src, const void *body, size_t len);
void port_migrate_on_redirect(int src, const struct ipc_loc *l);
/* A message queued at the former node, forwarded with its place. */
void port_migrate_arrived_queued(struct port *p, struct queued_msg *m, uint32_t index, uint32_t count);

/* ---- notify.c: notifications and port death ---------------------------------- */
/* Sends a notification through a request's send-once right (disarms it). */
void notify_fire(struct notify_req *r, uint32_t kind, uint64_t count, uint64_t port_id,
                 const dsm_port_ref *right);
/* Destroys a request's send-once right unused (a send-once notification). */
void notify_cancel(struct notify_req *r);
/* Sends a send-once notification through a send-once right (uid, token). */
void notify_once_destroyed(uint32_t link, uint64_t token);
/* Destroys a port: its queue, its rights in transit; tells its holders. */
void notify_port_dies(struct port *p);
/* What reached a destroyed port: its rights are destroyed, and the node
 * it came from is told the port is dead. */
void notify_dead_item(int origin, uint64_t uid, struct queued_msg *m, unsigned op, uint64_t token);
void notify_on_dead(int src, uint64_t uid);

/* ---- names.c: the name server ------------------------------------------------- */
void names_on_lookup_req(int src, const struct ipc_lookup_req *b);
void names_on_lookup_rep(int src, const struct ipc_lookup_rep *b, const void *rest, size_t len);
/* Drops the names whose right died. */
void names_forget_dead(void);

/* ---- rpc.c ------------------------------------------------------------------- */
void rpc_on_reply(int src, const struct ipc_reply *b, const void *data, size_t len);
void *rpc_place_reply(int src, const struct ipc_reply *b, size_t msg_len, size_t *skip);
void rpc_reply_placed(int src);
#endif
