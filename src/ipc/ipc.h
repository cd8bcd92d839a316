/*
 * ipc.h — ports and messages (seed 004, NORMA IPC/DE) over the transport,
 * and the message-type registry the runtime's own protocols use.
 *
 * Every transport message starts with a struct ipc_hdr whose type is one of
 * enum ipc_type: the port protocol's own types, and the types of the layers
 * above (page requests, diffs, locks, barriers...), which register a handler
 * with ipc_register. Handlers run on the delivery thread, in order per peer;
 * they may send but must not wait.
 */
#ifndef DSM_IPC_IPC_H
#define DSM_IPC_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsm.h"
#include "net/net.h"

/* One enum for every message type, one table naming them (ipc_type_name). */
#define IPC_TYPES(X)                                                           \
    X(LOOKUP_REQ)  /* find a port by name */                                   \
    X(LOOKUP_REP)                                                              \
    X(SMALL)       /* one-message fast path: inline data travels with the request */ \
    X(REQ)         /* send request: sizes, so the receiver can reserve memory */ \
    X(GRANT)       /* memory reserved: send the inline data and these pages */ \
    X(KMSG)        /* the inline data of a granted message */                  \
    X(PAGE)        /* one out-of-line page of a granted message */             \
    X(ACCEPT)      /* message-accept notification: the receiver took it */     \
    X(REPLY)       /* an RPC reply, into the caller's pre-granted buffer */    \
    X(STATS)       /* runtime: a node's statistics, to node 0 at finish */        \
    X(PAGE_REQ)    /* coherence: fetch a page from its home (or its base node) */ \
    X(PAGE_REP)    /* coherence: the page, received straight into place */     \
    X(PAGE_RUN_REQ)/* hlrc: consecutive pages of one home, read ahead */        \
    X(PAGE_RUN_REP)/* hlrc: those pages, received straight into place */        \
    X(DIFF)        /* coherence: a writer's diff, to the page's home */         \
    X(DIFF_ACK)    /* coherence: the home applied it; the new version */        \
    X(LOCK_ACQ)    /* sync: acquire request, to the lock's manager */           \
    X(LOCK_FWD)    /* sync: the manager passes it to the last owner */          \
    X(LOCK_GRANT)  /* sync: the lock and the write notices the acquirer lacks */ \
    X(COND_WAIT)   /* sync: register as a waiter, at the condition's manager */ \
    X(COND_QUEUED) /* sync: registered */                                       \
    X(COND_SIGNAL) /* sync: wake one waiter, or all */                          \
    X(COND_WAKE)   /* sync: to a waiter */                                      \
    X(BARRIER_ARRIVE)  /* sync: arrival and this node's intervals, to node 0 */ \
    X(BARRIER_RELEASE) /* sync: every interval of the epoch, to all */         \
    X(BCAST)       /* sync: dsm_bcast data and the root's intervals */          \
    X(FREE)        /* mem: blocks of the receiver's arena freed elsewhere */    \
    X(CREATE)      /* runtime: run a function with the master's globals */      \
    X(CREATE_DONE) /* runtime: it returned; the worker's intervals */           \
    X(EXIT)        /* runtime: fork style is over; leave */                     \
    X(SC_REQ)      /* sc: read or write request, to the page's manager */       \
    X(SC_FWD)      /* sc: the manager asks the owner to send the page */        \
    X(SC_PAGE)     /* sc: the page (or the right to write it), to the requester */ \
    X(SC_INV)      /* sc: drop your copy */                                     \
    X(SC_INV_ACK)  /* sc: dropped */                                            \
    X(SC_DONE)     /* sc: the requester installed the page; manager moves on */ \
    X(ERC_INV)     /* erc-inv: a home invalidates a copy before a release ends */ \
    X(ERC_UPD)     /* erc-upd: a home pushes a diff to a copy */                \
    X(ERC_ACK)     /* erc: the copy is invalidated or updated */               \
    X(LRC_DIFF_REQ)/* lrc: the diffs of a page's intervals, from their writer */ \
    X(LRC_DIFF_REP)/* lrc: those diffs */                                       \
    X(LRC_BASE_REQ)/* lrc: after a collection, a whole page from its keeper */  \
    X(LRC_BASE_REP)/* lrc: that page */

enum ipc_type {
    IPC_TYPE_NONE = 0,
#define IPC_TYPE_ENUM(name) IPC_##name,
    IPC_TYPES(IPC_TYPE_ENUM)
#undef IPC_TYPE_ENUM
    IPC_TYPE_MAX = 64
};

/* Types from here on belong to the layers above and are registered. */
#define IPC_FIRST_UPPER IPC_STATS

const char *ipc_type_name(unsigned type);

/* Copies a received message's payload (what follows the header and `fixed`
 * bytes of body) into a fresh allocation, for a handler that must keep it
 * for the program (handlers' messages are valid only during the call). */
unsigned char *ipc_copy_payload(const void *msg, size_t len, size_t fixed, size_t *out_len);

/* Copies the fixed body that follows a received message's header into
 * `body` (the message may sit unaligned) and returns where the rest begins,
 * with its length in *rest; with rest NULL the message must be exactly the
 * header and the body. Ends the job, naming `peer` and `what`, when the
 * message is malformed: handlers check their peers' messages through it. */
const void *ipc_body(int peer, const void *msg, size_t len, void *body, size_t size, size_t *rest,
                     const char *what);

/* The aux field of a received message (which may sit unaligned). */
uint32_t ipc_msg_aux(const void *msg);

/* Every message can carry one message-accept notification for the peer it
 * goes to (seed 004 §7: piggybacking the notification saves a message). */
#define IPC_HF_ACCEPT 1

struct ipc_hdr {
    uint8_t  type;
    uint8_t  flags;
    uint16_t acc_port; /* IPC_HF_ACCEPT: the port whose message was taken */
    uint32_t aux;      /* type-specific small field */
    uint64_t acc_seq;  /* IPC_HF_ACCEPT: its sequence number */
};

/* A handler for a registered type: the whole message, header included.
 * `msg` is valid only during the call. */
typedef void (*ipc_handler)(int peer, const void *msg, size_t len);

/* Bytes of a registered type's message that the handler wants received into
 * a buffer of its own (for types whose messages may span datagrams and
 * should land in place, e.g. page replies). Optional. */
typedef void *(*ipc_placer)(int peer, const void *head, size_t head_len,
                            size_t msg_len, size_t *skip);

void ipc_register(unsigned type, ipc_handler fn, ipc_placer place);

struct ipc_params {
    size_t   inline_max;  /* fast-path limit */
    unsigned window;      /* OOL pages per grant */
};

/* Sets the layer up; messages flow only from ipc_run, once every layer
 * above has registered its handlers (a peer may already be sending). */
int  ipc_start(const struct net_params *np, const struct ipc_params *ip);
int  ipc_run(void);
void ipc_finish(void);

/* Sends a message of a registered type: header then body (ipc_sendv: the
 * body gathered from at most IPC_SENDV_MAX pieces). */
#define IPC_SENDV_MAX 40
int  ipc_send(int peer, unsigned type, uint32_t aux, const void *body, size_t len);
int  ipc_sendv(int peer, unsigned type, uint32_t aux, const struct iovec *iov, int iovcnt);

/* Sends between the two leave together; see net_batch_begin. */
void ipc_batch_begin(void);
void ipc_batch_end(void);

/* Waits (driving progress) until done(arg); see net_wait. */
int  ipc_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns);
void ipc_notify(void);

/* The size of an out-of-line page on the wire. */
#define IPC_PAGE_BYTES 8192u
#endif
