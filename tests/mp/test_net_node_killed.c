/*
 * Node 1 is killed in the middle of an exchange; the launcher must stop the
 * job at once and say which node died and how. The test passes on that
 * message (and the ctest timeout bounds the time).
 */
#include <signal.h>

#include "mp_util.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int port = dsm_port_create("ring", 4);
    dsm_port_ref next;
    MP_CHECK(dsm_port_lookup((me + 1) % n, "ring", 30, &next) == 0, "lookup");
    for (int round = 0;; round++) {
        if (me == 1 && round == 50)
            raise(SIGKILL);
        MP_CHECK(dsm_msg_send(&next, &round, sizeof round, NULL, 0, DSM_FOREVER, NULL) == 0, "send");
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(port, &m, DSM_FOREVER) == 0, "recv");
        dsm_msg_free(&m);
    }
}
