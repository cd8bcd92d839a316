/*
 * remote.c — one-sided reads of peers' memory, for the layers above ipc
 * (coherence/oneside.c): the transport's (net_expose, net_get), passed on
 * as they are. No port, no message: nothing of seed 004's semantics
 * applies, and nothing is counted here (the caller knows what it read).
 */
#include "ipc/ipc.h"

int ipc_expose(size_t len) { return net_expose(len); }

void *ipc_exposed(int range) { return net_exposed(range); }

bool ipc_one_sided(int peer) { return net_one_sided(peer); }

bool ipc_cpus_shared(void) { return net_cpus_shared(); }

int ipc_get(int peer, int range, size_t offset, void *dst, size_t len)
{
    return net_get(peer, range, offset, dst, len);
}
