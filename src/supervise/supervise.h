/*
 * supervise.h — job supervision: whether a peer the transport finds silent
 * is dead, or only starved of CPU or not started yet.
 *
 * The transport (net) measures silence and nothing more; it hands each
 * long silence to the net_supervisor that runtime puts in its params
 * (supervise_net), and supervision looks at the peer's process (through
 * /proc on this host, through the launcher's agent or a host mate of the
 * peer on another) before it lets the job end. liveness.c says how a
 * silent peer is judged, witness.c how a host mate is asked.
 *
 * Threads: the transport's timers and its delivering thread call in (see
 * net.h's struct net_supervisor); the state is under one lock, taken under
 * the transport's and never held across a wait.
 */
#ifndef DSM_SUPERVISE_SUPERVISE_H
#define DSM_SUPERVISE_SUPERVISE_H

#include "net/net.h"

struct supervise_params {
    int                       agent_fd; /* dsmrun's agent on this host, asked about a silent
                                           peer (base/launch.h); -1: none */
    const struct sockaddr_in *peers;    /* the address each node published at startup, rank
                                           order (copied): the nodes of one host share one */
};

/* Before net_start: what the job's launch tells of its hosts. */
void supervise_start(const struct supervise_params *p);

/* For net_params.supervisor. */
extern const struct net_supervisor supervise_net;

/* Whether `peer`, which this node waits on and has not heard from for
 * silent_ns (as of the last time this node had read all that arrived), is
 * dead rather than starved of CPU: past timeout_ns, a peer whose process
 * (looked at on this host, or by dsmrun's agent or a host mate on its own)
 * is gone, stopped, asleep or has had timeout_ns of CPU meanwhile; one
 * that is runnable, or not yet started by our launcher, is waited for.
 * *why says what was seen of its process (NULL: judged by its silence
 * alone). supervise_net's peer_silent. */
bool supervise_peer_dead(int peer, bool same_host, uint64_t silent_ns, uint64_t timeout_ns,
                         uint64_t now, const char **why);

#endif
