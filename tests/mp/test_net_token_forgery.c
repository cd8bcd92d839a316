/*
 * Token mode (DSM_NET_AUTH=token) against an outsider who has captured one
 * datagram of the job: it knows the token (every message fragment's mac
 * field) and the addresses. Node 1 plays the outsider toward node 0, from
 * node 1's own address, knowing nothing of the key but the token: it makes
 * up an acknowledgement far ahead in freshness (which would make node 1's
 * genuine datagrams look old: a forged peer death), a heartbeat, a finish
 * marker, a DONE and an ABORT. The datagrams that change the job's life
 * carry the full mac in every mode, and every header its own: node 0 drops
 * them all, and the job goes on and ends normally. (Before, the ABORT ended
 * the job at once: "node 1 ended the job: forged by an outsider".)
 */
#include <sys/socket.h>

#include "mp_util.h"
#include "net/transport.h"

static void forge(uint16_t kind, uint16_t flags, uint64_t fresh, const char *reason)
{
    struct {
        struct wire_hdr h;
        char            body[64];
    } d;
    memset(&d, 0, sizeof d);
    size_t len = reason ? strlen(reason) : 0;
    d.h.magic = WIRE_MAGIC;
    d.h.kind = kind;
    d.h.flags = flags;
    d.h.job = net_state.sock.job;
    d.h.src = 1;
    d.h.dst = 0;
    d.h.len = (uint32_t)len;
    d.h.seq = 1u << 20;
    d.h.ack = 0;
    d.h.fresh = fresh;
    d.h.hmac = d.h.mac = net_state.sock.keys.token; /* what a capture gives away */
    memcpy(d.body, reason ? reason : "", len);
    for (int rep = 0; rep < 3; rep++)
        MP_CHECK(sendto(net_state.sock.fd, &d, sizeof d.h + len, 0,
                        (const struct sockaddr *)&net_state.peers[0].addr,
                        sizeof net_state.peers[0].addr) == (ssize_t)(sizeof d.h + len),
                 "sendto");
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    MP_CHECK(dsm_nodes() >= 2, "needs 2 nodes");
    MP_CHECK(!net_state.sock.keys.mac, "run it with DSM_NET_AUTH=token");
    int *counter = NULL;
    if (me == 0)
        counter = dsm_malloc(sizeof *counter);
    dsm_bcast(&counter, sizeof counter, 0);
    dsm_barrier();
    if (me == 1) {
        uint64_t far = 1ull << 62;
        forge(WIRE_ACK, 0, far, NULL);
        forge(WIRE_DATA, WIRE_NOP, far + 1, NULL);
        forge(WIRE_DATA, WIRE_FIN, far + 2, NULL);
        forge(WIRE_DONE, 0, far + 3, NULL);
        forge(WIRE_ABORT, 0, far + 4, "forged by an outsider");
    }
    /* Node 1's genuine traffic still reaches node 0 (a poisoned freshness
     * window would drop it all, and node 0 would find node 1 silent after
     * DSM_PEER_TIMEOUT), and the job ends normally. */
    for (int i = 0; i < 30; i++) {
        dsm_lock(7);
        (*counter)++;
        dsm_unlock(7);
        dsm_barrier();
    }
    MP_CHECK(*counter == 30 * dsm_nodes(), "counter %d, expected %d", *counter, 30 * dsm_nodes());
    dsm_barrier();
    if (me == 0)
        printf("token forgery: ok, counter %d\n", *counter);
    dsm_finish();
    return 0;
}
