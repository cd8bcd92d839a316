/*
 * dsm.h — the public API of dsm, a page-based software distributed shared
 * memory for clusters.
 *
 * A job is N processes ("nodes") started by `dsmrun -n N prog args`.
 * Errors inside calls that can fail return a negative errno value; fatal
 * conditions (a dead peer, bad configuration) end the whole job with one
 * line on stderr naming the node and the cause.
 */
#ifndef DSM_H
#define DSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Runtime ------------------------------------------------------------ */

/* Joins the job this process belongs to (SPMD: returns on every node).
 * Removes dsm's own options from argc/argv, if any. Without dsmrun, the
 * program runs as a 1-node job. Returns 0. */
int dsm_startup(int *argc, char ***argv);

/* This node's rank, 0 .. dsm_nodes()-1. Node 0 is the master. */
int dsm_rank(void);

/* Number of nodes in the job. */
int dsm_nodes(void);

/* Leaves the job: waits until every node has called dsm_finish, so no node
 * goes away while another may still need it, then releases everything. */
void dsm_finish(void);

/* ---- Ports and messages (seed 004, NORMA IPC/DE semantics) --------------
 *
 * A port is a message queue owned by one node and named (node, name). Any
 * number of nodes may send to it at once. A message has inline data and
 * optional out-of-line (OOL) regions. Before any large transfer the
 * receiver reserves all the memory the message needs (request -> grant), so
 * no transfer stalls half-way; OOL pages then travel in windows straight into
 * the reserved buffers. Small inline-only messages take a one-message path.
 *
 * Flow control: a port has a queue limit. A message counts against it from
 * the moment it is sent until the receiving program takes it (dsm_msg_recv),
 * at which point a message-accept notification goes back to the sender. A
 * sender whose unaccepted messages to a port reach the limit blocks, or gets
 * -ETIMEDOUT when its timeout passes.
 *
 * Timeouts are in seconds; DSM_FOREVER waits without limit.
 */
#define DSM_FOREVER (-1.0)
#define DSM_PORT_NAME_MAX 31

typedef struct dsm_port_ref {
    int32_t  node;        /* owning node */
    int32_t  port;        /* port number on that node */
    uint32_t queue_limit; /* the port's queue limit, learnt at lookup */
} dsm_port_ref;

struct dsm_ool {
    void  *addr;          /* page-aligned (sysconf(_SC_PAGESIZE)) */
    size_t len;           /* bytes; the last page may be partial */
};

struct dsm_msg {
    int             src_node;   /* sender */
    uint64_t        seq;        /* sender's sequence number for this port */
    void           *data;       /* inline data (owned by the message) */
    size_t          len;
    struct dsm_ool *ool;        /* received OOL regions (page-aligned, owned) */
    int             nool;
    uint64_t        reply_token;/* nonzero when the sender waits for a reply */
    void           *internal_;  /* owned by dsm */
};

/* Creates a port on this node with the given name and queue limit (>= 1).
 * Returns its port number (>= 0), or -EEXIST, -EINVAL, -ENOSPC. */
int dsm_port_create(const char *name, unsigned queue_limit);

/* Finds the port `name` on `node`, waiting up to `timeout` for it to be
 * created there. Returns 0, -ENOENT (timed out), or -EINVAL. */
int dsm_port_lookup(int node, const char *name, double timeout, dsm_port_ref *out);

/* Sends a message. Returns 0 and its sequence number in *seq (may be NULL)
 * once every byte is handed to the reliable transport; the caller may reuse
 * its buffers at once. Returns -ETIMEDOUT if the port's queue stayed full,
 * -EINVAL for bad arguments. */
int dsm_msg_send(const dsm_port_ref *dst, const void *data, size_t len,
                 const struct dsm_ool *ool, int nool, double timeout,
                 uint64_t *seq);

/* Takes the next message from a local port. Returns 0, or -ETIMEDOUT,
 * -EINVAL. The message must be released with dsm_msg_free. */
int dsm_msg_recv(int port, struct dsm_msg *msg, double timeout);

/* Releases a received message and its buffers. */
void dsm_msg_free(struct dsm_msg *msg);

/* Waits until the receiver has taken message `seq` sent to `dst`
 * (message-accept notification). Returns 0 or -ETIMEDOUT. */
int dsm_msg_wait_accepted(const dsm_port_ref *dst, uint64_t seq, double timeout);

/* Number of messages this node sent to `dst` that the receiver has taken. */
uint64_t dsm_msg_accepted(const dsm_port_ref *dst);

/* RPC: sends a request and waits for its reply. The request carries a
 * pre-grant for `reply_cap` bytes at `reply`, so the reply lands straight in
 * place in one message. Returns the reply's length (>= 0), or -ETIMEDOUT,
 * -EMSGSIZE (reply larger than reply_cap; truncated), -EINVAL. */
long dsm_msg_call(const dsm_port_ref *dst, const void *req, size_t len,
                  void *reply, size_t reply_cap, double timeout);

/* Answers a request received with a nonzero reply_token. Returns 0,
 * -EINVAL (no reply expected, or already answered). */
int dsm_msg_reply(struct dsm_msg *msg, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* DSM_H */
