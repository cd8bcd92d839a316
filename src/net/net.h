/*
 * net.h — the transport layer: reliable, per-peer FIFO messages over UDP.
 *
 * One UDP socket per process reaches every peer. A message of any size is
 * cut into datagrams, each sequenced, acknowledged (cumulative plus a 64-bit
 * selective map), retransmitted on an adaptive timeout or when a later
 * datagram is acknowledged first, and authenticated with the job's key.
 * Messages from one peer are delivered in the order that peer sent them.
 *
 * Threads: net_send may be called from any thread and never blocks on the
 * network (datagrams beyond the send window wait in the peer's queue).
 * Received messages are delivered by whichever thread is driving progress —
 * the service thread, or an application thread inside net_wait — one at a
 * time, in order, through the callbacks in struct net_rx_ops. Callbacks may
 * call net_send but must not wait.
 *
 * With DSM_NET=ucx (net/ucx.c) the same calls carry the messages as UCX
 * active messages instead, with the same order, delivery and failure
 * semantics; the job still starts on its UDP socket.
 */
#ifndef DSM_NET_NET_H
#define DSM_NET_NET_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* DSM_NET. AUTO reaches a node only where its launcher chose nothing (a
 * job across hosts, or not started by dsmrun): it runs over UDP. */
enum net_transport { NET_TRANSPORT_UDP = 0, NET_TRANSPORT_UCX = 1, NET_TRANSPORT_AUTO = 2 };

/* A witness's line (net_send_witness) is at most this long: the launcher's
 * agents carry the same lines (base/launch.h, BOOT_ARBITER_LINE_MAX). */
#define NET_WITNESS_LINE_MAX 96

/* What the transport asks of the job's supervision (src/supervise/), the
 * layer above, about a peer it waits on that stays silent: the transport
 * only measures silence, supervision tells a dead peer from a starved one.
 * Each is called with the transport's timer or delivery locks held: it
 * must not wait, and it may call net.h's net_send_witness alone. */
struct net_supervisor {
    /* `peer` has sent nothing for silent_ns (as of the last time this node
     * had read all that arrived), timeout_ns being DSM_PEER_TIMEOUT (as
     * the crowding of its host stretched it; 0: never dead): whether it is
     * dead, which ends the job. *why: what was seen of it, NULL if
     * nothing. */
    bool   (*peer_silent)(int peer, bool same_host, uint64_t silent_ns, uint64_t timeout_ns,
                          uint64_t now, const char **why);
    /* A witness's question of len bytes from `from` (net_send_witness,
     * question): the answer to send back, at most size - 1 bytes, and its
     * length; 0: none. */
    size_t (*witness_asked)(int from, const void *line, size_t len, char *reply, size_t size);
    /* A witness's answer from `from`. */
    void   (*witness_answered)(int from, const void *line, size_t len);
};

struct net_params {
    int                 transport;    /* enum net_transport (DSM_NET) */
    int                 fd;           /* bound UDP socket, owned by net from now on */
    struct sockaddr_in *peers;        /* nodes entries, rank order (copied) */
    uint64_t            job_id;
    uint8_t             key[32];
    double              peer_timeout_s;
    double              loss, dup, reorder;
    uint64_t            delay_us;
    uint64_t            seed;
    size_t              datagram;     /* largest payload per datagram */
    unsigned            window;       /* datagrams in flight per peer */
    bool                auth_mac;
    int                 spin_us;      /* -1: adapt */
    int                 one_sided;    /* enum net_one_sided (DSM_NET_ONE_SIDED) */
    int                 service_poll; /* enum net_service_poll (DSM_SERVICE_POLL) */
    int                 threads;      /* the program's threads a node (DSM_THREADS) */
    int                 finish_fanout; /* net_finish's tree: the barrier's (DSM_BARRIER_FANOUT) */
    size_t              page_size;    /* the shared region's page (DSM_PAGE_SIZE) */
    /* Told of a silent peer (above); NULL: a peer silent past the
     * timeout is dead. */
    const struct net_supervisor *supervisor;
};

struct net_rx_ops {
    /* A message of msg_len bytes that spans several datagrams begins; `head`
     * is its first head_len bytes. Returns where to assemble it: bytes from
     * *skip on go to buf[i - *skip] (received straight into place); the
     * first *skip bytes (<= head_len) are dropped, the upper layer having
     * read them from head. NULL ends the job: the upper layer could not find
     * memory it had promised. */
    void *(*place)(void *ctx, int peer, const void *head, size_t head_len,
                   size_t msg_len, size_t *skip);
    /* A whole message. When `placed`, msg is the buffer place() returned
     * (len = msg_len - skip) and belongs to the upper layer again; otherwise
     * msg is the whole message, valid only during the call. */
    void (*deliver)(void *ctx, int peer, void *msg, size_t len, bool placed);
    /* Called by the service thread every time it wakes (at least every
     * NET_TICK_MS), and by a polling waiter when a timer is due: for the
     * upper layer's own deferred work. Returns when it wants to run again
     * (clock_ns() time; 0: no sooner than the next idle wake-up). */
    uint64_t (*tick)(uint64_t now_ns);
};

#define NET_TICK_MS 20
#define NET_MAX_NODES 256 /* the launcher's limit too */

/* Starts the transport and its service thread. Returns 0 or -errno. */
int  net_start(const struct net_params *p, const struct net_rx_ops *ops, void *ctx);

/* Sends the concatenation of iov[0..iovcnt) to `peer` (may be self).
 * Returns 0, or -EMSGSIZE / -EINVAL. */
int  net_send(int peer, const struct iovec *iov, int iovcnt);

/* Memory lent to the transport (net_send_ref): each datagram that points
 * into it holds a reference until the peer acknowledges it. Whoever drops
 * the last one calls release, from any thread, possibly under the
 * transport's lock: release must not call into net. The lender holds one
 * reference of its own from the start (count = 1) and drops it with
 * net_ref_put when it has sent all it will. */
struct net_ref {
    atomic_uint count;
    void      (*release)(struct net_ref *);
};

static inline void net_ref_put(struct net_ref *r)
{
    if (atomic_fetch_sub(&r->count, 1) == 1)
        r->release(r);
}

/* As net_send, for the concatenation of iov[0..iovcnt) (copied) and
 * lent[0..lent_len) (not copied): the lent bytes must stay unchanged until
 * `ref` is released. */
int  net_send_ref(int peer, const struct iovec *iov, int iovcnt, const void *lent,
                  size_t lent_len, struct net_ref *ref);

/* What this thread sends between the two leaves together, in one system
 * call, at net_batch_end: a request and its companions reach a sleeping
 * peer in one wake-up of its service thread, not one each (a wake-up costs
 * tens of µs here). Nothing may wait in between. Inside a delivery
 * callback, whose sends are batched already, both do nothing. */
void net_batch_begin(void);
void net_batch_end(void);

/* Runs the transport until done(arg) is true or the deadline passes
 * (clock_ns() time; 0 = none). Returns 0 or -ETIMEDOUT. Must not be called
 * from a delivery callback. */
int  net_wait(bool (*done)(void *), void *arg, uint64_t deadline_ns);

/* Tells waiters that state they wait on changed outside a delivery. */
void net_notify(void);

/* Has the upper layer's tick run by clock_ns() time t (soon after: a
 * sleeping service thread is woken for it), for deferred work that a
 * message will not prompt. Any thread, delivery callbacks included. */
void net_timer_at(uint64_t t);

/* Leaves the job: waits until every peer has finished too and everything
 * sent has been acknowledged, then stops the service thread. */
void net_finish(void);

/* Sends every peer a best-effort notice that this node is ending the job. */
void net_abort_peers(const char *reason);

/* Sends a witness's line (at most NET_WITNESS_LINE_MAX bytes) to `to`:
 * a question (a net_supervisor's witness_asked there) or an answer (its
 * witness_answered), authenticated as every message is but outside the
 * messages' order, and best effort. Only from within a net_supervisor's
 * peer_silent, whose caller holds what the send needs. */
void net_send_witness(int to, bool question, const void *line, size_t len);

/* One-sided access (DSM_NET=ucx; net/ucx_rma.c). Before net_start, the
 * layers above ask for memory that peers may read without this node's
 * CPU: net_expose returns the range's index (the same on every node when
 * every node asks in the same order), or -errno. The transport provides it
 * at start (UCX allocates it where its transports can reach it: shared
 * memory on one host, registered memory for RDMA), zeroed, and gives every
 * peer its key; net_exposed then says where it lies (NULL: it could not be
 * had, and nothing of it is readable). */
#define NET_EXPOSE_MAX 4
enum net_one_sided { NET_ONE_SIDED_OFF = 0, NET_ONE_SIDED_AUTO = 1, NET_ONE_SIDED_ON = 2 };
enum net_service_poll { NET_SERVICE_POLL_OFF = 0, NET_SERVICE_POLL_AUTO = 1, NET_SERVICE_POLL_ON = 2 };
int   net_expose(size_t len);
void *net_exposed(int range);
/* Whether net_get may work with `peer` (DSM_NET_ONE_SIDED: auto = peers
 * on this host whose memory UCX maps here, a copy from shared memory; on =
 * every peer, e.g. RDMA verbs; off = none). */
bool  net_one_sided(int peer);
/* Reads len bytes at `offset` in `peer`'s exposed range `range` into dst,
 * without the peer's CPU, and waits for them. 0; -ENOTSUP when the range
 * is not readable at that peer (the caller sends a message instead);
 * -EINVAL out of bounds. A peer that fails meanwhile ends the job naming
 * it. No ordering with messages, nor with the peer's own writes: what the
 * bytes mean is the caller's to check (coherence/oneside.c). */
int   net_get(int peer, int range, size_t offset, void *dst, size_t len);

int  net_rank(void);
int  net_nodes(void);
/* Whether this job's threads on this host (each node's program threads
 * and its service thread) outnumber the host's CPUs, as net_start found
 * them: a thread that only polls then takes turns the others need. */
bool net_cpus_shared(void);
/* The payload size of one datagram (messages up to this travel in one). */
size_t net_datagram_payload(void);

/* For dsmrun, before any node of a DSM_NET=ucx job starts on this host:
 * whether UCX starts with the user's UCX_* settings, in the environment
 * the nodes will have (this process's, then over[0..nover), NAME=VALUE).
 * Returns 0, with warn holding UCX's warnings one a line ("" if none),
 * or -EINVAL with the one line that refuses them in err (ucx_check.c). */
int net_check_ucx_settings(const char *const *over, int nover, char *err, size_t errlen,
                           char *warn, size_t warnlen);
/* Whether this build has the UCX transport (built with libucx-dev). */
bool net_ucx_built(void);
#endif
