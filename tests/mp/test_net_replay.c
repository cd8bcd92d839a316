/*
 * A stopped node's own datagrams, captured and replayed to its peer, must
 * not keep it "alive". Node 1 records what its transport sends node 0 (an
 * interposed sendmmsg), hands the copies to a child that shares its socket
 * and so its address, and stops (SIGSTOP). The child sends the copies to
 * node 0 again and again, exactly as captured: authentic, well-formed, from
 * the right address, and stale. Node 0 waits for a message that never comes;
 * its heartbeat to node 1 goes unanswered, and it must end the job naming
 * node 1 within DSM_PEER_TIMEOUT (run with 1 s). The test passes on that
 * message; before the freshness counter, the replay kept node 0 from ever
 * sending the heartbeat, and the job hung until the launcher's timeout.
 */
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"
#include "base/clock.h"
#include "ipc/ipc_state.h"
#include "net/transport.h"
#include "net/wire.h"

enum { MAX_CAPTURED = 64, MAX_DGRAM = 2048 };

static struct {
    unsigned char      bytes[MAX_DGRAM];
    size_t             len;
    struct sockaddr_in to;
} captured[MAX_CAPTURED];
static int ncaptured, capture_fd = -1;
static volatile int capturing;

/* Every datagram the transport sends passes here (udp.c sends with
 * sendmmsg alone); the test keeps copies of node 1's to node 0. */
int sendmmsg(int fd, struct mmsghdr *m, unsigned int n, int flags)
{
    if (capturing)
        for (unsigned i = 0; i < n && ncaptured < MAX_CAPTURED; i++) {
            const struct msghdr *h = &m[i].msg_hdr;
            size_t len = 0;
            unsigned char buf[MAX_DGRAM];
            for (size_t v = 0; v < h->msg_iovlen; v++) {
                if (len + h->msg_iov[v].iov_len > sizeof buf)
                    goto next;
                memcpy(buf + len, h->msg_iov[v].iov_base, h->msg_iov[v].iov_len);
                len += h->msg_iov[v].iov_len;
            }
            struct wire_hdr w;
            if (len < sizeof w || !h->msg_name)
                continue;
            memcpy(&w, buf, sizeof w);
            if (w.magic != WIRE_MAGIC || w.dst != 0)
                continue;
            memcpy(captured[ncaptured].bytes, buf, len);
            captured[ncaptured].len = len;
            memcpy(&captured[ncaptured].to, h->msg_name, sizeof captured[ncaptured].to);
            capture_fd = fd;
            ncaptured++;
        next:;
        }
    return (int)syscall(SYS_sendmmsg, fd, m, n, flags);
}

/* The child: replays the copies from node 1's socket until node 1 is gone
 * (the launcher kills it when the job ends), or for a minute at most. */
static void replay_forever(pid_t parent)
{
    for (int round = 0; round < 60 * 50 && getppid() == parent; round++) {
        for (int i = 0; i < ncaptured; i++)
            sendto(capture_fd, captured[i].bytes, captured[i].len, 0,
                   (struct sockaddr *)&captured[i].to, sizeof captured[i].to);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    dsm_startup(&argc, &argv);
    int me = dsm_rank();
    MP_CHECK(dsm_nodes() == 2, "a 2-node test");
    int port = dsm_port_create("p", 8);
    dsm_port_ref other;
    MP_CHECK(dsm_port_lookup(1 - me, "p", 30, &other) == 0, "lookup");
    if (me == 1)
        capturing = 1;
    /* Enough traffic both ways that node 1 sends data and acknowledgements. */
    uint64_t last = 0;
    for (int i = 0; i < 20; i++) {
        MP_CHECK(dsm_msg_send(&other, &i, sizeof i, NULL, 0, 30, &last) == 0, "send");
        struct dsm_msg m;
        MP_CHECK(dsm_msg_recv(port, &m, 30) == 0, "recv");
        dsm_msg_free(&m);
    }
    /* Node 1 stops only once node 0 owes and awaits nothing, so that only
     * node 0's heartbeat can find it stopped: node 0 has taken node 1's last
     * message (its accept notification came back), node 1's own
     * notification has gone, and a transport heartbeat from node 1 —
     * carrying the acknowledgement of all node 0 sent — has been
     * acknowledged. */
    if (me == 1) {
        MP_CHECK(dsm_msg_wait_accepted(&other, last, 30) == 0, "accepted");
        ipc_flush_accepts();
        pthread_mutex_lock(&net_state.lock);
        window_send_marker(0, WIRE_NOP, clock_ns());
        pthread_mutex_unlock(&net_state.lock);
        for (bool empty = false; !empty; sched_yield()) {
            pthread_mutex_lock(&net_state.lock);
            empty = !net_state.peers[0].tx.head;
            pthread_mutex_unlock(&net_state.lock);
        }
        capturing = 0;
        MP_CHECK(ncaptured > 0 && capture_fd >= 0, "nothing captured");
        pid_t self = getpid();
        pid_t child = fork();
        MP_CHECK(child >= 0, "fork");
        if (child == 0)
            replay_forever(self);
        fprintf(stderr, "node 1: stopping; %d captured datagrams replayed to node 0\n", ncaptured);
        raise(SIGSTOP);
        return 0;
    }
    struct dsm_msg m;
    dsm_msg_recv(port, &m, DSM_FOREVER);
    fprintf(stderr, "node 0: a message came, expected the job to end\n");
    return 3;
}
