/*
 * supervisor.c — the transport's side of supervision: a silent peer, and
 * the witnesses' lines, handed to the net_supervisor that runtime gave
 * net_start (src/supervise/ in a job). The transport measures how long a
 * peer has been silent; whether that silence is a death it does not know
 * (a peer starved of CPU is silent too), so it asks. Without a supervisor
 * (a test of the transport alone) silence past the timeout is death.
 */
#include "net/transport.h"

#include "base/state.h"

static DSM_STATE const struct net_supervisor *supervisor;

void net_supervisor_start(const struct net_supervisor *s)
{
    supervisor = s;
}

bool net_peer_dead(int peer, bool same_host, uint64_t silent_ns, uint64_t timeout_ns, uint64_t now,
                   const char **why)
{
    if (supervisor)
        return supervisor->peer_silent(peer, same_host, silent_ns, timeout_ns, now, why);
    *why = NULL;
    return timeout_ns && silent_ns > timeout_ns;
}

size_t net_witness_asked(int from, const void *line, size_t len, char *reply, size_t size)
{
    return supervisor ? supervisor->witness_asked(from, line, len, reply, size) : 0;
}

void net_witness_answered(int from, const void *line, size_t len)
{
    if (supervisor)
        supervisor->witness_answered(from, line, len);
}
