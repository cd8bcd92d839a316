/*
 * ucx_state.h — the UCX transport's shared state and declarations, private
 * to its files in src/net (ucx.h is what the rest of net sees of it).
 *
 * ucx.c loads libucp (the table ucx_lib) and defines the transport's state
 * (ucx); the other files share them: ucx_frame.c (the messages: framed,
 * sent, received, delivered), ucx_service.c (who progresses the worker:
 * the service thread, net_wait, the timers), ucx_start.c (the start) and
 * ucx_end.c (a lost peer, the abort, the finish). The locks, in struct
 * ucx_state: `ucp` around every call into UCP, `rx_lock` for the one
 * thread that progresses the worker and delivers, `lock` for the waiters'
 * generation.
 */
#ifndef DSM_NET_UCX_STATE_H
#define DSM_NET_UCX_STATE_H

#include "net/ucx.h"

#ifdef DSM_HAVE_UCX
#include <pthread.h>
#include <stdatomic.h>

#include "net/transport.h" /* NET_TLS */
#include "net/wire.h"

#pragma GCC visibility push(hidden)

#define AM_ID            7                   /* the one active-message slot dsm uses */

/* ---- libucp, loaded at run time (ucx.c) -------------------------------- */

struct ucx_lib {
    ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *,
                                 ucp_context_h *);
    ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
    void (*config_release)(ucp_config_t *);
    void (*cleanup)(ucp_context_h);
    ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *);
    void (*worker_destroy)(ucp_worker_h);
    ucs_status_t (*worker_get_address)(ucp_worker_h, ucp_address_t **, size_t *);
    void (*worker_release_address)(ucp_worker_h, ucp_address_t *);
    ucs_status_t (*worker_get_efd)(ucp_worker_h, int *);
    ucs_status_t (*worker_arm)(ucp_worker_h);
    unsigned (*worker_progress)(ucp_worker_h);
    ucs_status_t (*worker_set_am_recv_handler)(ucp_worker_h, const ucp_am_handler_param_t *);
    ucs_status_ptr_t (*worker_flush_nbx)(ucp_worker_h, const ucp_request_param_t *);
    ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);
    ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t *);
    ucs_status_ptr_t (*am_send_nbx)(ucp_ep_h, unsigned, const void *, size_t, const void *,
                                    size_t, const ucp_request_param_t *);
    void (*am_data_release)(ucp_worker_h, void *);
    ucs_status_t (*request_check_status)(void *);
    void (*request_free)(void *);
    const char *(*status_string)(ucs_status_t);
};
extern struct ucx_lib ucx_lib;

/* ---- the message header (ucx_frame.c) ---------------------------------- */

enum ucx_kind {
    UCX_DATA  = 1, /* a message for the layer above */
    UCX_NOP   = 2, /* heartbeat: proves the sender alive */
    UCX_FIN   = 3, /* net_finish's marker (the job's tree, as in transport.c) */
    UCX_ABORT = 4, /* the sender ends the job; payload = reason */
    UCX_LOOK  = 5, /* "look RANK": a host mate's look at a silent peer, asked (supervise/witness.c) */
    UCX_SEEN  = 6, /* "seen RANK ...": the look, answered */
};

/* The active message's header; the payload is the message. */
struct ucx_hdr {
    uint64_t job;
    uint32_t seq;  /* per sender and receiver: 0, 1, 2, ... */
    uint16_t src, dst;
    uint32_t len;  /* payload bytes */
    uint16_t kind;
    uint16_t pad;
    uint64_t mac;  /* SipHash-2-4(k_hdr, header before mac || payload hash) */
};
_Static_assert(sizeof(struct ucx_hdr) == 32, "ucx header layout");

/* ---- state (defined in ucx.c) ------------------------------------------ */

/* A message received and not yet delivered: its data is UCX's until
 * released (ucx_owned), else it follows the struct. */
struct ucx_msg {
    struct ucx_msg *next;
    struct ucx_hdr  h;
    void           *data;
    bool            ucx_owned;
};

struct ucx_peer {
    ucp_ep_h         ep;
    uint32_t         tx_seq;      /* next to send; under ucx.ucp */
    uint64_t         last_tx_ns;  /* under ucx.ucp */
    uint32_t         rx_next;     /* next to deliver; under rx_lock */
    struct ucx_msg  *held;        /* arrived ahead of rx_next, by seq; under rx_lock */
    _Atomic uint64_t last_rx_ns;
    _Atomic bool     fin_rx;
    _Atomic int      failed;      /* the endpoint's error (a ucs_status_t), 0: none */
    _Atomic uint64_t lost_ns;     /* when this node first found it failed (verdict_due) */
    bool             same_host;   /* shares this host's CPUs (supervision's judging) */
};

struct ucx_state {
    ucp_context_h     ctx;
    ucp_worker_h      worker;
    int               efd;
    int               rank, nodes;
    struct ucx_peer  *peers;
    struct net_rx_ops ops;
    void             *octx;
    struct wire_keys  keys;
    uint64_t          job;
    uint64_t          peer_timeout_ns, spin_ns;
    uint64_t          heartbeat_ns;  /* a ring neighbour we sent nothing this long gets a NOP */
    pthread_mutex_t   ucp;        /* every call into UCP */
    pthread_mutex_t   rx_lock;    /* who progresses the worker and delivers */
    pthread_mutex_t   lock;       /* gen, and the waiters' cv */
    pthread_cond_t    cv;
    uint64_t          gen;
    struct ucx_msg   *inbox, **inbox_tail; /* filled by ucx_on_am, under ucp */
    _Atomic int       sends;      /* sends not yet complete */
    /* When a progress last found nothing: every message that had reached
     * us by then had been read. A peer is declared dead only if it had
     * been silent for the timeout by then, so a node that was not
     * scheduled itself (its peers' messages waiting unread) blames nobody
     * (as net_socket.drained_ns over UDP). */
    _Atomic uint64_t  drained_ns;
    _Atomic bool      any_failed;
    /* the service thread */
    int               evfd, epfd;
    int               tfd;        /* its look-back when a claim took the worker's fd away */
    pthread_mutex_t   claim_lock; /* rx_claims' first and last, and efd_armed */
    bool              efd_armed;  /* the service thread's wait includes the worker's fd */
    pthread_t         thread;
    bool              running;
    _Atomic bool      stopping;
    _Atomic int       rx_claims;
    _Atomic uint64_t  timers_due;
    _Atomic uint64_t  upper_due;
    uint64_t          next_beat;  /* under rx_lock or by the timers' runner */
    pthread_mutex_t   timer_lock; /* one runner of the timers at a time */
    /* net_finish's tree */
    int               parent, first_child, nchildren;
    _Atomic bool      fin_sent, all_finished;
    uint64_t          parent_failed_ns; /* failure_expected; under rx_lock */
};
extern struct ucx_state ucx;

/* Set while this thread delivers a message to the layer above (ucx_handle):
 * it must not wait on the network then. */
extern __thread bool ucx_in_delivery NET_TLS;

/* ---- ucx.c ------------------------------------------------------------- */

/* dlopens libucp and fills ucx_lib; ends the job when it cannot. */
void ucx_load_ucp(void);

/* ---- ucx_frame.c: the messages ----------------------------------------- */

/* The MAC of a header and its payload under the job's keys. */
uint64_t ucx_seal(const struct wire_keys *k, const struct ucx_hdr *h, const void *payload);
/* A send's completion: frees its buffer. */
void ucx_on_sent(void *request, ucs_status_t status, void *user_data);
/* One message of `kind`, copied (iov, then lent). 0 or -errno. */
int  ucx_send_kind(int dst, uint16_t kind, const struct iovec *iov, int iovcnt,
                   const void *lent, size_t lent_len);
/* Sends buf (h's room, then h->len bytes) to dst. Under ucx.ucp. */
void ucx_send_locked(int dst, struct ucx_hdr *hp, unsigned char *buf,
                     const ucp_request_param_t *prm);
/* The worker's active-message callback (ucx_start.c sets it). */
ucs_status_t ucx_on_am(void *arg, const void *header, size_t header_length, void *data,
                       size_t length, const ucp_am_recv_param_t *param);
/* Acts on one message whose turn has come (a DATA delivered above). */
void ucx_handle(struct ucx_msg *m);
/* One round of progress, and delivery; events and messages. Under rx_lock. */
int  ucx_progress(void);

/* ---- ucx_service.c: who progresses the worker -------------------------- */

/* Wakes the service thread (unless it polls). */
void ucx_kick(void);
/* The service thread (ucx_start.c starts it). */
void *ucx_service_main(void *arg);

/* ---- ucx_end.c: a lost peer, the abort, the finish --------------------- */

/* Ends the job naming peer, said once for the job. */
void ucx_end_naming(int peer, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* Ends the job for a peer whose endpoint failed, when that counts. */
void ucx_check_failures(void);

#pragma GCC visibility pop
#endif /* DSM_HAVE_UCX */
#endif
