/*
 * Datagrams that are not the job's — random garbage, truncated headers,
 * another job's id, well-formed headers with a wrong key, and copies of the
 * right shape from a stranger's address — are sent at every node's socket.
 * Each must be dropped and counted, and the job must go on unaffected.
 */
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/stats.h"
#include "mp_util.h"
#include "net/wire.h"

static struct sockaddr_in peer_addr(int rank)
{
    const char *p = getenv("DSM_PEERS");
    MP_CHECK(p, "DSM_PEERS");
    for (int i = 0; i < rank; i++)
        p = strchr(p, ',') + 1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    char host[32];
    int port;
    MP_CHECK(sscanf(p, "%31[^:]:%d", host, &port) == 2, "peer list");
    inet_pton(AF_INET, host, &a.sin_addr);
    a.sin_port = htons((uint16_t)port);
    return a;
}

enum { GARBAGE = 200, TRUNCATED = 50, OTHER_JOB = 50, FORGED = 50 };

static void attack(int victim, int me, int n)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = peer_addr(victim);
    uint64_t job = strtoull(getenv("DSM_JOB_ID"), NULL, 16);
    uint64_t rng = 99 + (uint64_t)me;
    unsigned char buf[2048];
    for (int i = 0; i < GARBAGE; i++) {
        size_t len = 1 + mp_rand(&rng) % sizeof buf;
        mp_fill(buf, len, mp_rand(&rng));
        sendto(s, buf, len, 0, (struct sockaddr *)&to, sizeof to);
    }
    struct wire_hdr h = {.magic = WIRE_MAGIC, .kind = WIRE_DATA, .flags = WIRE_FIRST | WIRE_LAST,
                         .job = job, .src = (uint16_t)me, .dst = (uint16_t)victim,
                         .len = 16, .msg_len = 16};
    memcpy(buf, &h, sizeof h);
    for (int i = 0; i < TRUNCATED; i++)
        sendto(s, buf, 1 + (size_t)i % (sizeof h - 1), 0, (struct sockaddr *)&to, sizeof to);
    for (int i = 0; i < OTHER_JOB; i++) {
        struct wire_hdr o = h;
        o.job = job ^ (1ull + (uint64_t)i);
        memcpy(buf, &o, sizeof o);
        sendto(s, buf, sizeof o + 16, 0, (struct sockaddr *)&to, sizeof to);
    }
    /* Right job, ranks and shape, but sealed with a key that is not the
     * job's: only the MAC can tell. */
    struct wire_keys wrong;
    uint8_t key[32];
    mp_fill(key, sizeof key, 12345);
    wire_keys_init(&wrong, key, job, 1);
    for (int i = 0; i < FORGED; i++) {
        struct wire_hdr f = h;
        f.seq = (uint32_t)i;
        f.src = (uint16_t)((victim + 1) % n);
        mp_fill(buf + sizeof f, 16, (uint64_t)i);
        wire_seal(&wrong, &f, wire_payload_hash(&wrong, buf + sizeof f, 16));
        memcpy(buf, &f, sizeof f);
        sendto(s, buf, sizeof f + 16, 0, (struct sockaddr *)&to, sizeof to);
    }
    close(s);
}

static void exchange(int me, int n, int port, int round)
{
    dsm_port_ref next;
    MP_CHECK(dsm_port_lookup((me + 1) % n, "x", 30, &next) == 0, "lookup");
    for (int i = 0; i < 20; i++) {
        int v = round * 1000 + i;
        MP_CHECK(dsm_msg_send(&next, &v, sizeof v, NULL, 0, 30, NULL) == 0, "send");
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(port, &m, 30) == 0, "recv");
        int got;
        memcpy(&got, m.data, sizeof got);
        MP_CHECK(got == v && m.src_node == (me + n - 1) % n, "value %d from %d", got, m.src_node);
        dsm_msg_free(&m);
    }
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank(), n = dsm_nodes();
    int port = dsm_port_create("x", 64);
    exchange(me, n, port, 0);
    attack((me + 1) % n, me, n);
    exchange(me, n, port, 1);
    /* Wait until the attack on us has been read, then check the counts. */
    uint64_t want_foreign = GARBAGE + TRUNCATED + OTHER_JOB;
    for (int i = 0; i < 3000 && (stats_get(STAT_NET_FOREIGN_DROPPED) < want_foreign ||
                                 stats_get(STAT_NET_AUTH_DROPPED) < FORGED); i++)
        usleep(1000);
    MP_CHECK(stats_get(STAT_NET_FOREIGN_DROPPED) >= want_foreign, "foreign dropped %llu",
             (unsigned long long)stats_get(STAT_NET_FOREIGN_DROPPED));
    MP_CHECK(stats_get(STAT_NET_AUTH_DROPPED) == FORGED, "forged dropped %llu",
             (unsigned long long)stats_get(STAT_NET_AUTH_DROPPED));
    exchange(me, n, port, 2);
    if (me == 0)
        printf("foreign: %d garbage, %d truncated, %d other-job, %d forged datagrams per node dropped; job unaffected\n",
               GARBAGE, TRUNCATED, OTHER_JOB, FORGED);
    dsm_finish();
    return 0;
}
