/*
 * The last node stops answering (SIGSTOP: alive to the launcher, silent to
 * its peers). The transport of the others must notice — node 0 through a
 * call left unacknowledged, the rest through heartbeats while they wait —
 * and end the job with a message naming the silent peer, within seconds.
 * With the argument "quiet" node 0 makes no call either: nobody sends the
 * stopped node anything, and only the heartbeats of its two neighbours on
 * the ring (window.c) can find it.
 * Run with DSM_PEER_TIMEOUT=1. The test passes on that message.
 */
#include <signal.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int port = dsm_port_create("p", 8);
    dsm_port_ref last;
    MP_CHECK(dsm_port_lookup(n - 1, "p", 30, &last) == 0, "lookup");
    if (me == n - 1) {
        raise(SIGSTOP);
        return 0;
    }
    if (me == 0 && !(argc > 1 && strcmp(argv[1], "quiet") == 0)) {
        char reply[8];
        long rc = dsm_msg_call(&last, "ping", 4, reply, sizeof reply, DSM_FOREVER);
        fprintf(stderr, "node 0: call returned %ld, expected the job to end\n", rc);
        return 3;
    }
    struct dsm_msg m;
    dsm_msg_recv(port, &m, DSM_FOREVER);
    return 3;
}
