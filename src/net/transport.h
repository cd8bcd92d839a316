/*
 * transport.h — the transport's state, divided by what each part holds, and
 * the calls between the files that implement net.h. Private to src/net: the
 * layer above sees net.h alone.
 *
 * One struct, net_state, holds it all, as the single file's globals did:
 * every access is still one fixed offset from one symbol, with nothing to
 * follow on the per-datagram paths.
 *
 * Locks: `lock` guards every peer's send side, its acknowledgement and
 * liveness, the fault injector's queues and the waiters' generation;
 * `rx_lock` makes one thread at a time read the socket and deliver, which
 * keeps each peer's messages in order. Delivery runs with rx_lock only, so
 * callbacks may send.
 */
#ifndef DSM_NET_TRANSPORT_H
#define DSM_NET_TRANSPORT_H

#include "net/net.h"

#include <pthread.h>
#include <sys/socket.h>

#include "net/inject.h"
#include "net/seqwin.h"
#include "net/wire.h"

/* Hidden: these symbols stay inside the library, so the files reach one
 * another's functions and the state directly (PC-relative), as the single
 * file's statics were reached, not through the shared library's GOT and
 * PLT. */
#pragma GCC visibility push(hidden)

#define RX_BATCH          16               /* datagrams per recvmmsg */
#define IDLE_WAKE_MS      NET_TICK_MS      /* the timers run at least this often */
#define ACK_DELAY_NS      (200ull * 1000)  /* a lone in-order datagram's ack waits this long */

struct txbuf;   /* a datagram waiting for its acknowledgement */

/* A datagram the fault injector holds back: at the sender, until the next
 * one overtakes it (INJECT_HOLD); at the receiver, until its due time (an
 * emulated link's delay). `to` is where it goes, or where it came from. */
struct delayed {
    struct delayed    *next;
    uint64_t           due_ns;
    struct sockaddr_in to;
    size_t             len;
    unsigned char      bytes[];
};

/* ---- per peer ---------------------------------------------------------- */

/* What we sent the peer and it has not acknowledged; under net_state.lock. */
struct peer_send {
    uint32_t         next_seq;
    struct txbuf    *head, *tail;      /* unacknowledged, in seq order */
    struct txbuf    *unsent;           /* first one never sent, or NULL */
    size_t           inflight_bytes;
    struct rto_state rto;
    uint64_t         progress_ns;      /* last time the peer acknowledged something new */
    bool             probed;           /* a tail-loss probe went out since then */
    uint64_t         delivered_sent_ns; /* the latest transmission acknowledged: time, */
    uint32_t         delivered_seq;     /* ...and seq (rack_lost) */
    /* Datagrams sent for the first time, and sent again (timeout, probe,
     * fast retransmission), both halved every LOSS_WINDOW first ones: the
     * recent share of retransmissions estimates the loss (window.c). */
    uint32_t         first_xmits, re_xmits;
};

/* What we owe the peer: the acknowledgement of what we received from it.
 * The receive side updates it; any datagram to the peer carries it. Under
 * net_state.lock. */
struct peer_ack {
    uint32_t cum;
    uint64_t sack;
    bool     pending;                  /* something received is not yet acknowledged */
    bool     urgent;                   /* ...and it should be, at once */
    bool     twice;                    /* ...in two datagrams: it answers a retransmission */
    bool     echo_rtx;                 /* the latest data datagram read was a retransmission (WIRE_ECHO_RTX) */
    uint32_t unacked;                  /* datagrams received since our last ack */
    uint64_t due_ns;                   /* delayed ack deadline */
};

/* What we received from the peer and have not delivered; under
 * net_state.rx_lock. */
struct peer_recv {
    struct rx_window win;
    unsigned char   *held[SEQWIN_MAX]; /* datagrams held ahead of win.expected */
    size_t           held_len[SEQWIN_MAX];
    unsigned char   *asm_buf;          /* message being reassembled */
    size_t           asm_len, asm_got, asm_skip;
    struct fresh_window fresh;         /* the counters seen (a copy is dropped) */
};

struct peer {
    struct sockaddr_in addr;
    struct peer_send   tx;
    /* The counter of the last datagram put on the wire to the peer. Atomic:
     * net_abort_peers sends without the lock. */
    _Atomic uint64_t   fresh;
    uint64_t           last_rx_ns;     /* last valid datagram from the peer */
    bool               done_rx;        /* it sent WIRE_DONE */
    bool               fin_rx;         /* it sent WIRE_FIN (under rx_lock) */
    bool               same_host;      /* it shares this host's CPUs (supervision's judging) */
    struct peer_ack    ack;
    struct peer_recv   rx;
};

/* ---- the transport ----------------------------------------------------- */

/* The socket, what every datagram on it carries, and the receive batch. */
struct net_socket {
    int                fd;
    uint64_t           job;
    struct wire_keys   keys;
    size_t             max_payload;
    /* receive batch, used by the rx_lock holder */
    struct mmsghdr     msgs[RX_BATCH];
    struct iovec       iovs[RX_BATCH];
    struct sockaddr_in from[RX_BATCH];
    unsigned char     *rxbuf;
    /* DSM_TRACE: each datagram's kernel receive time (SO_TIMESTAMPNS, as
     * clock_ns() time), and when the batch's receive call returned. */
    char               rx_cmsg[RX_BATCH][64];
    uint64_t           rx_kernel_ns[RX_BATCH];
    uint64_t           rx_return_ns;
    /* When the socket was last seen empty: every datagram that arrived
     * before has been read. A peer is declared dead only if it had been
     * silent for the timeout by then, so a node that was not scheduled
     * itself (its peers' datagrams waiting unread) blames nobody. */
    _Atomic uint64_t   drained_ns;
};

/* The send window's limits, and the buffers datagrams wait in. */
struct net_send {
    unsigned         window;
    size_t           window_bytes;
    uint64_t         peer_timeout_ns;
    uint64_t         heartbeat_ns;     /* a peer silent this long is sent a NOP */
    unsigned         crowd;            /* the timer floors' multiple (transport.c); 0 counts as 1 */
    bool             redundant;        /* small retransmissions and dup acks go twice */
    /* Full-size datagram buffers kept for reuse: allocated and freed in
     * bursts of tens of KiB each, they would otherwise make the allocator
     * trim and regrow its heap, and every regrown page costs a fault and a
     * clearing (16% of a stream's time, measured). */
    struct {
        pthread_mutex_t lock;
        struct txbuf   *free;
        unsigned        count;
    } pool;
};

/* The layer above: where received messages go. */
struct net_upper {
    struct net_rx_ops ops;
    void             *ctx;
};

/* The service thread, the waiters, and who reads the socket. */
struct net_service {
    int               evfd;           /* wakes the service thread */
    int               epfd;           /* the service thread's: evfd, tfd, and fd while armed */
    int               tfd;            /* wakes it for a look-back after a claim disarmed it */
    int               timer_fd;       /* wakes it for a timer set while it slept (service_timer_at) */
    _Atomic uint64_t  sleep_until;    /* when its sleep ends; 0 while it is awake */
    uint64_t          late_ns;        /* how late a timer may run rather than set it again */
    _Atomic uint64_t  sleep_planned;  /* the end of the sleep it chose itself (before any timer) */
    _Atomic uint64_t  timer_set;      /* when timer_fd is set for (service_timer_at); 0: not set */
    _Atomic int       inflight_peers; /* peers with unacknowledged data */
    uint64_t          spin_ns;        /* how long a waiter polls before it sleeps */
    bool              service_core;   /* a core to spare for the service thread */
    pthread_cond_t    cv;             /* waiters sleep here until gen moves (under lock) */
    uint64_t          gen;
    pthread_t         thread;
    bool              running;
    _Atomic bool      stopping;
    /* Application threads polling the socket themselves (see net_wait);
     * while any does, the service thread leaves the socket alone. */
    _Atomic int       rx_claims;
    _Atomic uint64_t  claimed_since;  /* when rx_claims last left zero */
    _Atomic uint64_t  timers_due;     /* when window_timers wants to run next */
    _Atomic uint64_t  upper_due;      /* the earliest net_timer_at since the tick began; 0: none */
    pthread_mutex_t   claim_lock;     /* a claim's start, and arming */
    bool              sock_armed;     /* fd is in epfd (under claim_lock) */
};

/* Fault injection (inject.c): the send side's under lock, the receive
 * side's (an emulated link's delay) under rx_lock. */
struct net_inject {
    struct inject    decide;
    bool             on;              /* loss, duplication or reordering: wire_out injects */
    struct delayed  *held;            /* INJECT_HOLD: waits for the next one */
    uint64_t         held_since;
    struct delayed  *rx_head, *rx_tail; /* read, held until due, in due order */
    _Atomic uint64_t rx_due;          /* rx_head's due time, 0 while none: read by the timers */
};

/* The job's tree (base/tree.h), along which net_finish runs. */
struct net_tree {
    int               parent;         /* -1 at node 0 */
    int               first_child, nchildren;
    _Atomic bool      all_finished;   /* the root's FIN has reached us */
};

struct net {
    struct net_socket  sock;
    struct peer       *peers;         /* job()->nodes of them, in rank order, self included */
    struct net_send    tx;
    struct net_upper   up;
    pthread_mutex_t    lock;          /* see the top of this file */
    pthread_mutex_t    rx_lock;
    struct net_service svc;
    struct net_inject  inj;
    struct net_tree    tree;
};

extern struct net net_state;

/* ---- datagram I/O and batching (udp.c) --------------------------------- */

/* Datagrams to one peer, sent with one system call: a window opening puts
 * many on the wire at once, and on this machine every system call is a
 * hypervisor round trip. */
#define TX_BATCH 32

struct tx_batch {
    unsigned       n;
    struct mmsghdr m[TX_BATCH];
    struct iovec   iov[TX_BATCH][2]; /* the txbuf's own bytes, then what it lends */
};

/* Sends everything in b, and empties it. */
void udp_flush(struct tx_batch *b);

static inline void batch_add(struct tx_batch *b, const struct sockaddr_in *to, void *buf,
                             size_t len, const void *ext, size_t elen)
{
    unsigned i = b->n++;
    b->iov[i][0] = (struct iovec){.iov_base = buf, .iov_len = len};
    b->iov[i][1] = (struct iovec){.iov_base = (void *)ext, .iov_len = elen};
    b->m[i].msg_hdr = (struct msghdr){.msg_name = (void *)to, .msg_namelen = sizeof *to,
                                      .msg_iov = b->iov[i], .msg_iovlen = elen ? 2 : 1};
    if (b->n == TX_BATCH)
        udp_flush(b);
}

/* One datagram: buf[0..len) then ext[0..elen), now, past the injector. */
void udp_send(const struct sockaddr_in *to, const void *buf, size_t len, const void *ext,
              size_t elen);

/* Reads up to RX_BATCH datagrams into net_state.sock's receive batch
 * without waiting. Returns how many; 0 when none waits. Caller holds
 * rx_lock. */
int udp_recv(void);
/* DSM_TRACE: has the kernel stamp each received datagram. */
void udp_trace_start(void);

/* While a delivery thread handles one batch of received datagrams, what its
 * handlers send is queued, not sent; the batch's end sends it all with one
 * system call, to every peer at once (a grant's data message and page run, a
 * home's replies to several requests). Per thread: other threads' sends go
 * at once, and push a corked peer's queue with their own. */
struct udp_cork {
    bool     on;
    unsigned nested; /* net_batch_begin calls inside a cork already on */
    uint64_t peers[(NET_MAX_NODES + 63) / 64];
};
/* local-dynamic, as the file-static it was: the shared library finds it
 * the cheaper way, since it is always its own. */
#define NET_TLS __attribute__((tls_model("local-dynamic")))
extern __thread struct udp_cork udp_cork NET_TLS;

static inline void cork_begin(void)
{
    udp_cork.on = true;
}

/* Sends what was corked. */
void udp_cork_end(void);

/* net_batch_begin/_end over UDP (backend.h): a cork of the calling thread,
 * nested calls counted. */
void udp_batch_begin(void);
void udp_batch_end(void);

/* ---- send window, timers, acknowledgements (window.c) ------------------ */

/* Adds what dst's window lets out to b (which may hold other peers'). */
void window_push(struct tx_batch *b, int dst, uint64_t now);

/* net_send_ref over UDP (backend.h): the message cut into datagrams,
 * queued on dst's window, and sent as far as the window lets. */
int udp_send_ref(int dst, const struct iovec *iov, int iovcnt, const void *lent, size_t lent_len,
                 struct net_ref *ref);

/* Applies a peer's acknowledgement to our queue for it. */
void window_on_ack(int src, uint32_t cum, uint64_t sack, bool echo_rtx, uint64_t now);

/* Retransmissions, heartbeats, the dead-peer check, delayed acks. Returns
 * the time of the next timer. */
uint64_t window_timers(uint64_t now);

/* A sequenced message with no payload (heartbeat or finish marker). */
void window_send_marker(int dst, uint16_t flag, uint64_t now);

/* An unsequenced datagram (WIRE_ACK, WIRE_DONE, WIRE_ABORT) that carries
 * the current acknowledgement. */
void window_send_control(int dst, uint16_t kind, const void *payload, size_t len);

/* ---- supervision's part (supervisor.c) ---------------------------------- */

/* Before the service starts: net_params.supervisor. */
void net_supervisor_start(const struct net_supervisor *s);
/* Whether `peer`, silent for silent_ns, is dead: the supervisor's
 * peer_silent, or without one its silence past timeout_ns. UDP: under
 * net_state.lock (a question to a witness is sent under it). */
bool net_peer_dead(int peer, bool same_host, uint64_t silent_ns, uint64_t timeout_ns, uint64_t now,
                   const char **why);
/* A witness's question (WIRE_LOOK, UCX_LOOK) from `from`: the answer to
 * send it (a line of at most size - 1 bytes) and its length; 0: none. */
size_t net_witness_asked(int from, const void *line, size_t len, char *reply, size_t size);
/* A witness's answer (WIRE_SEEN, UCX_SEEN) from `from`. */
void net_witness_answered(int from, const void *line, size_t len);

/* ---- receive and reassembly (recv.c) ----------------------------------- */

/* True while this thread delivers (inside recv_progress). */
extern __thread bool recv_in_delivery NET_TLS;

/* One round of progress by the caller, who holds rx_lock: reads and
 * handles everything waiting on the socket. Returns the number of
 * datagrams handled. */
int recv_progress(void);

/* ---- the service thread and the polling waiters (service.c) ------------ */

/* The service thread. */
void *service_main(void *arg);

/* net_wait, net_notify and net_timer_at over UDP (backend.h). */
int  udp_wait(bool (*done)(void *), void *arg, uint64_t deadline);
void udp_notify(void);
void udp_timer_at(uint64_t t);

/* Whether the service threads (UDP's, UCX's) poll for messages instead of
 * sleeping until one comes (DSM_SERVICE_POLL), decided once at start from
 * the CPUs this process may run on, shared evenly among the job's nodes on
 * this host, against the node's application threads. */
struct service_plan {
    bool polls;
    int  cpu;       /* the CPU it is pinned to when it polls: -1, none */
    int  node_cpus; /* this node's share of the CPUs */
};
extern struct service_plan service_plan;
void service_plan_decide(int setting, int threads, int nodes, int nodes_here, int index_here);
/* The decision itself, from the CPUs this process may run on (ascending):
 * the node index_here of nodes_here on this host (of `nodes` in the job)
 * takes the index_here-th equal share of them. */
struct service_plan service_plan_make(const int *cpus, int ncpus, int setting, int threads,
                                      int nodes, int nodes_here, int index_here);
/* By a service thread as it starts: onto its CPU, when it has one. */
void service_pin(void);
/* Between two polls: a turn for whatever else waits for the CPU. */
void service_poll_pause(void);

/* Wakes the service thread. */
void service_kick(void);

/* The timers must run by `t` (a delayed ack, a probe, a retransmission
 * just scheduled): lowers svc.timers_due, which a polling waiter checks on
 * every turn, and, when nobody polls and the service thread sleeps past
 * `t`, sets its timer for `t`. */
void service_timer_at(uint64_t t);

/* How long a waiting thread polls before it sleeps, by default. */
uint64_t service_spin_ns(int nodes, long cpus);

/* ---- fault injection (inject.c) ---------------------------------------- */

/* Sets up net_state.inj from the parameters. */
void inject_start(const struct net_params *prm);

/* Sends one datagram the way the injector decides. */
void inject_out(const struct sockaddr_in *to, const void *buf, size_t len, const void *ext,
                size_t elen);

/* Sends the held datagram if it waited too long; returns the earlier of
 * `next` and when the injector wants to run again. */
uint64_t inject_flush(uint64_t now, uint64_t next);

/* An emulated link (DSM_NET_DELAY_US), at the receiver, under rx_lock:
 * holds a datagram of len bytes from `from`, read at read_ns (copied),
 * until read_ns + the delay. */
void inject_hold(const void *d, size_t len, const struct sockaddr_in *from, uint64_t read_ns);
/* Takes the first held datagram if it is due by `now` (the caller frees
 * it); NULL if none is. Under rx_lock. */
struct delayed *inject_next_due(uint64_t now);
/* When the first held datagram is due; 0 while none is held. Any thread:
 * the service thread sleeps until then (it is not among the timers). */
static inline uint64_t inject_due(void)
{
    return atomic_load_explicit(&net_state.inj.rx_due, memory_order_acquire);
}

/* Every datagram passes here while faults are injected, under
 * net_state.lock: buf[0..len), then ext[0..elen). (Otherwise window_push
 * batches a window's first transmissions straight to udp.c.) */
static inline void wire_out(const struct sockaddr_in *to, const void *buf, size_t len,
                            const void *ext, size_t elen)
{
    if (!net_state.inj.on) {
        udp_send(to, buf, len, ext, elen);
        return;
    }
    inject_out(to, buf, len, ext, elen);
}

#pragma GCC visibility pop
#endif
