/*
 * ipc.h — ports and messages (seed 004, NORMA IPC/DE) over the transport,
 * and the message-type registry the runtime's own protocols use.
 *
 * Every transport message starts with a struct ipc_hdr whose type is a
 * numbered slot: the port protocol's own types (enum ipc_type), or a type of
 * a layer above (page requests, diffs, locks, barriers...), declared in that
 * layer's header and registered with ipc_register. Handlers run on the
 * delivery thread, in order per peer; they may send but must not wait.
 */
#ifndef DSM_IPC_IPC_H
#define DSM_IPC_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsm.h"
#include "net/net.h"

/* The port protocol's own message types; ipc_type_name names them. */
#define IPC_TYPES(X)                                                           \
    X(LOOKUP_REQ)  /* find a port by name */                                   \
    X(LOOKUP_REP)                                                              \
    X(SMALL)       /* one-message fast path: inline data travels with the request */ \
    X(REQ)         /* send request: sizes, so the receiver can reserve memory */ \
    X(GRANT)       /* memory reserved: send the inline data and these pages */ \
    X(KMSG)        /* the inline data of a granted message */                  \
    X(PAGE)        /* one out-of-line page of a granted message */             \
    X(ACCEPT)      /* message-accept notification: the receiver took it */     \
    X(REPLY)       /* an RPC reply, into the caller's pre-granted buffer */       \
    X(PORT_OP)     /* port rights: claims, releases, moves, redirects (aux: the operation) */

/* Message types are numbered slots of one byte. ipc owns the first; each
 * layer above declares its own types in its own header, numbered on from
 * the *_TYPE_NEXT of the layer below it (coherence from IPC_TYPE_NEXT, sync
 * from COHERENCE_TYPE_NEXT, ...), and registers a handler and a name for
 * each at start (ipc_register). */
enum ipc_type {
    IPC_TYPE_NONE = 0,
#define IPC_TYPE_ENUM(name) IPC_##name,
    IPC_TYPES(IPC_TYPE_ENUM)
#undef IPC_TYPE_ENUM
    IPC_TYPE_NEXT /* the first type the layers above may number */
};

/* Slots in all: every layer's last type stays below it. */
#define IPC_TYPE_MAX 96

/* The name of a message type, for statistics, traces and errors: ipc's own
 * or the one it was registered with; NULL for a type nobody registered. */
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

/* Gives a type of a layer above ipc its handler (and placer), and the name
 * statistics and traces show for it. A type has one wire format, whoever
 * registers it. Registering a type twice replaces its handler. */
void ipc_register(unsigned type, const char *name, ipc_handler fn, ipc_placer place);

/* Gives the layer above one timer: fn runs on the service thread's tick
 * (at least every NET_TICK_MS) and by ipc_timer_at's time, never under a
 * lock of ipc or net, and returns when it wants to run next (clock_ns()
 * time; 0: nothing due). It may send. Once, before ipc_run. */
void ipc_register_timer(uint64_t (*fn)(uint64_t now));
void ipc_timer_at(uint64_t t);

struct ipc_params {
    size_t   inline_max;  /* fast-path limit */
    unsigned window;      /* OOL pages per grant */
};

/* Sets the layer up; messages flow only from ipc_run, once every layer
 * above has registered its handlers (a peer may already be sending). */
int  ipc_start(const struct net_params *np, const struct ipc_params *ip);
int  ipc_run(void);
/* The program is done with ports (dsm_finish, before anything waits on
 * another node): this node's ports die and its rights go back, so that
 * nodes still running get their dead-name and no-senders notifications. */
void ipc_leave(void);
void ipc_finish(void);

/* Sends a message of a registered type: header then body (ipc_sendv: the
 * body gathered from at most IPC_SENDV_MAX pieces). */
#define IPC_SENDV_MAX 40
int  ipc_send(int peer, unsigned type, uint32_t aux, const void *body, size_t len);
int  ipc_sendv(int peer, unsigned type, uint32_t aux, const struct iovec *iov, int iovcnt);

/* Messages the calling thread has sent so far (every type): the lock
 * statistics count what a release sent with it. */
uint64_t ipc_sent_by_thread(void);

/* Sends between the two leave together; see net_batch_begin. */
void ipc_batch_begin(void);
void ipc_batch_end(void);

/* The body bytes a message may have and still travel in one datagram. */
size_t ipc_message_room(void);

/* Waits (driving progress) until done(arg); see net_wait. */
int  ipc_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns);
void ipc_notify(void);
/* A question to another node's handler and its answer (ask.c): open one
 * (its token goes in the question's body; the answer's body, up to cap
 * bytes, lands in answer), send the question with ipc_send, then wait.
 * The answer's handler passes the token and body to
 * ipc_question_answered, false when no open question has that token. */
struct ipc_question {
    struct ipc_question *next;
    uint64_t             token;
    void                *answer;
    size_t               cap;
    bool                 done;
};
uint64_t ipc_question_open(struct ipc_question *q, void *answer, size_t cap);
void     ipc_question_wait(struct ipc_question *q);
bool     ipc_question_answered(uint64_t token, const void *answer, size_t len);
/* This job's threads on this host outnumber its CPUs (net_cpus_shared). */
bool ipc_cpus_shared(void);

/* One-sided reads of peers' memory (ipc/remote.c over net_expose /
 * net_get; DSM_NET=ucx): ranges named before ipc_run, read without the
 * peer's CPU. See net.h. */
int  ipc_expose(size_t len);
void *ipc_exposed(int range);
bool ipc_one_sided(int peer);
int  ipc_get(int peer, int range, size_t offset, void *dst, size_t len);

/* The size of an out-of-line page on the wire. */
#define IPC_PAGE_BYTES 8192u
#endif
