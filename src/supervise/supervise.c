/*
 * supervise.c — supervision's start, and the table the transport calls it
 * through (net.h's struct net_supervisor).
 */
#include "supervise/supervise.h"

#include "supervise/watch.h"

void supervise_start(const struct supervise_params *p)
{
    liveness_start(p->agent_fd);
    witness_start(p->peers);
}

const struct net_supervisor supervise_net = {
    .peer_silent = supervise_peer_dead,
    .witness_asked = witness_answer,
    .witness_answered = witness_heard,
};
