/*
 * An ABORT's reason comes from the network: a peer's words, or an
 * impostor's where the job runs with DSM_NET_AUTH=token. Node 1 ends the
 * job with a reason full of terminal escape sequences, control characters
 * and bytes outside ASCII, longer than any line should be; node 0 must
 * print it as plain, bounded text. The test (expect.sh) checks node 0's
 * line is there and that no byte of the output is outside printable ASCII.
 * Over UDP or UCX alike.
 */
#include <string.h>

#include "mp_util.h"
#include "net/transport.h"
#include "net/backend.h"
#include "net/ucx.h"

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    int port = dsm_port_create("p", 8);
    dsm_port_ref other;
    MP_CHECK(dsm_port_lookup(1 - me, "p", 30, &other) == 0, "lookup");
    if (me == 1) {
        char reason[601];
        const char evil[] = "\x1b[2J\x1b]0;owned\x07\x9b" "31m\r\n\x7f\xff";
        for (size_t i = 0; i < sizeof reason - 1; i++)
            reason[i] = i < sizeof evil - 1 ? evil[i] : (char)('a' + i % 26);
        reason[sizeof reason - 1] = 0;
        /* As net_abort_peers sends it, minus the sanitising a real node's
         * own log line gets: the bytes go out as they are. */
        if (net_backend == &ucx_backend) /* DSM_NET=ucx: its ABORT message (at most 256 bytes of reason) */
            ucx_abort_peers(reason);
        else
            window_send_control(0, WIRE_ABORT, reason, sizeof reason - 1);
    }
    struct dsm_msg m;
    dsm_msg_recv(port, &m, DSM_FOREVER);
    return 3;
}
