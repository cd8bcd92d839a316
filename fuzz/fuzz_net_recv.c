/*
 * fuzz_net_recv.c — the transport's receive side (src/net/recv.c) with its
 * window (window.c): ordering, duplicate and replay suppression, fragment
 * reassembly and delivery, acknowledgement processing — run on any
 * sequence of datagrams from two peers.
 *
 * The real code runs unchanged; only the socket is replaced: recvmmsg and
 * sendmmsg are defined here (the program's own definitions come first), so
 * the input's datagrams arrive from the peers' addresses and what the
 * transport sends (acknowledgements) goes nowhere. Most datagrams are
 * normalised and sealed with the job's key so that they get past
 * authentication to the ordering and reassembly that follow (a peer's
 * build that is wrong, not an outsider); a few go in raw.
 *
 * Input: records of [peer+mode byte][2-byte length][bytes]. A protocol
 * error from an authenticated peer (a fragment out of place) ends a real
 * job through log_fatal: here log_fatal returns to the harness, which
 * resets the transport for the next input. The upper layer checks what it
 * is given: a placed message's bytes arrive whole, in order, and within the
 * buffer it placed.
 */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/log.h"
#include "base/trace.h"
#include "net/transport.h"
#include "supervise/supervise.h"

#define NODES   3
#define SELF    0
#define JOBID   0x0f0f0f0f12341234ull
#define MAXPAY  512  /* small datagrams: many fragments per message */
#define MAXMSG  (64 * 1024)

struct net net_state;

/* ---- the socket, replaced ----------------------------------------------- */

static struct {
    unsigned char *bytes[64];
    size_t         len[64];
    int            src[64];
    int            n, next;
} inbox;

int recvmmsg(int fd, struct mmsghdr *m, unsigned int vlen, int flags, struct timespec *t)
{
    (void)fd, (void)flags, (void)t;
    unsigned int k = 0;
    for (; k < vlen && inbox.next < inbox.n; k++, inbox.next++) {
        int i = inbox.next;
        struct msghdr *h = &m[k].msg_hdr;
        size_t room = h->msg_iov[0].iov_len;
        size_t n = inbox.len[i] < room ? inbox.len[i] : room;
        memcpy(h->msg_iov[0].iov_base, inbox.bytes[i], n);
        h->msg_flags = inbox.len[i] > room ? MSG_TRUNC : 0;
        m[k].msg_len = (unsigned)n;
        memcpy(h->msg_name, &net_state.peers[inbox.src[i]].addr, sizeof(struct sockaddr_in));
    }
    return (int)k;
}

int sendmmsg(int fd, struct mmsghdr *m, unsigned int vlen, int flags)
{
    (void)fd, (void)m, (void)flags;
    return (int)vlen;
}

/* ---- what the library would otherwise get from transport.c and log.c ---- */

static jmp_buf fatal_jump;
static int fatal_armed;

void log_fatal(const char *fmt, ...)
{
    if (!fatal_armed)
        abort();
    va_list ap;
    va_start(ap, fmt);
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    longjmp(fatal_jump, 1);
}

void log_exit_quietly(const char *line)
{
    (void)line;
    log_fatal("abort");
}

void log_warn(const char *fmt, ...) { (void)fmt; }

/* log.c's fork checks: the harness is never a forked child. */
bool log_in_forked_child(void) { return false; }
void log_forked_child(const char *fmt, ...) { (void)fmt; abort(); }

/* transport.c's: a host mate's look travels as the transport sends it. */
void net_send_witness(int to, bool question, const void *line, size_t len)
{
    window_send_control(to, question ? WIRE_LOOK : WIRE_SEEN, line, len);
}

/* service.c's: no service thread here; the harness runs the timers. */
void service_timer_at(uint64_t t) { (void)t; }

/* base/trace.c's: never tracing here (the datagram records' paths are the
 * trace's, not the receive side's). */
bool trace_enabled;
void trace_put(enum trace_kind kind, unsigned sub, int peer, uint64_t arg, uint64_t t0,
               uint64_t t1, uint64_t t2)
{
    (void)kind, (void)sub, (void)peer, (void)arg, (void)t0, (void)t1, (void)t2;
}

/* ---- the upper layer ---------------------------------------------------- */

static unsigned char *placed[NODES];
static size_t placed_len[NODES];

static void *place(void *ctx, int peer, const void *head, size_t head_len, size_t msg_len,
                   size_t *skip)
{
    (void)ctx, (void)head;
    if (msg_len > MAXMSG || head_len > msg_len || placed[peer])
        return NULL; /* the upper layer refuses: the job ends */
    *skip = head_len / 2; /* received straight into place, after a header it read */
    placed[peer] = malloc(msg_len - *skip + 1);
    placed_len[peer] = msg_len - *skip;
    return placed[peer];
}

static void deliver(void *ctx, int peer, void *msg, size_t len, bool is_placed)
{
    (void)ctx;
    unsigned char sum = 0;
    for (size_t i = 0; i < len; i++) /* every byte readable */
        sum ^= ((unsigned char *)msg)[i];
    __asm__ volatile("" : : "r"(sum));
    if (is_placed) {
        if (msg != placed[peer] || len != placed_len[peer])
            abort();
        free(placed[peer]);
        placed[peer] = NULL;
    } else if (len > MAXPAY)
        abort();
}

/* ---- set-up and reset --------------------------------------------------- */

static void start(void)
{
    memset(&net_state, 0, sizeof net_state);
    job_init()->rank = SELF;
    job_init()->nodes = NODES;
    pthread_mutex_init(&net_state.lock, NULL);
    pthread_mutex_init(&net_state.rx_lock, NULL);
    pthread_mutex_init(&net_state.tx.pool.lock, NULL);
    pthread_mutex_init(&net_state.svc.claim_lock, NULL);
    pthread_cond_init(&net_state.svc.cv, NULL);
    net_state.sock.fd = 1000;
    net_state.sock.job = JOBID;
    net_state.sock.max_payload = MAXPAY;
    static struct wire_keys keys; /* derived once: it takes a thousand hashes */
    if (!keys.mac) {
        uint8_t key[32];
        for (int i = 0; i < 32; i++)
            key[i] = (uint8_t)(i + 100);
        wire_keys_init(&keys, key, JOBID, 1);
    }
    net_state.sock.keys = keys;
    net_state.tx.window = 64;
    net_state.tx.window_bytes = 1 << 20;
    net_state.up.ops.place = place;
    net_state.up.ops.deliver = deliver;
    net_state.peers = calloc(NODES, sizeof *net_state.peers);
    /* Two hosts (supervise/witness.c): the last node on one of its own, so
     * that its questions about SELF's host mates, and the mates' answers,
     * parse. */
    struct sockaddr_in addrs[NODES];
    for (int i = 0; i < NODES; i++) {
        addrs[i].sin_addr.s_addr = htonl(i == NODES - 1 ? 0x7f000002 : 0x7f000001);
        net_state.peers[i].addr.sin_family = AF_INET;
        net_state.peers[i].addr.sin_addr.s_addr = htonl(0x7f000001);
        net_state.peers[i].addr.sin_port = htons((uint16_t)(20000 + i));
        rto_init(&net_state.peers[i].tx.rto);
    }
    supervise_start(&(struct supervise_params){.agent_fd = -1, .peers = addrs});
    net_supervisor_start(&supervise_net);
    static unsigned char *rxbuf;
    if (!rxbuf)
        rxbuf = malloc((size_t)RX_BATCH * (sizeof(struct wire_hdr) + MAXPAY + 1));
    net_state.sock.rxbuf = rxbuf;
}

static void stop(void)
{
    for (int i = 0; i < NODES; i++) {
        struct peer *p = &net_state.peers[i];
        for (int s = 0; s < SEQWIN_MAX; s++)
            free(p->rx.held[s]);
        free(placed[i]);
        placed[i] = NULL;
    }
    free(net_state.peers);
    recv_in_delivery = false;
    udp_cork.on = false;
    udp_cork.nested = 0;
    memset(udp_cork.peers, 0, sizeof udp_cork.peers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    start();
    inbox.n = inbox.next = 0;
    uint64_t fresh[NODES] = {0};
    while (size >= 3 && inbox.n < 64) {
        int mode = data[0];
        size_t len = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        if (len > sizeof(struct wire_hdr) + MAXPAY + 8)
            len = sizeof(struct wire_hdr) + MAXPAY + 8;
        int src = 1 + (mode & 1); /* the two peers */
        unsigned char *d = malloc(len ? len : 1);
        memcpy(d, data, len);
        data += len;
        size -= len;
        struct wire_hdr h;
        if (!(mode & 0x80) && len >= sizeof h) { /* a peer's datagram, sealed */
            memcpy(&h, d, sizeof h);
            h.magic = WIRE_MAGIC;
            h.job = JOBID;
            h.src = (uint16_t)src;
            h.dst = SELF;
            h.len = (uint32_t)(len - sizeof h);
            if (!(mode & 0x40))
                h.kind = (uint16_t)(1 + h.kind % 4);
            if (!(mode & 0x20)) /* fresh counters, mostly: the input may replay */
                h.fresh = ++fresh[src];
            if (!(mode & 0x10)) /* plausible sequence numbers, mostly */
                h.seq %= 128;
            wire_seal(&net_state.sock.keys, &h, wire_payload_hash_of(&net_state.sock.keys, &h, d + sizeof h, h.len));
            memcpy(d, &h, sizeof h);
        }
        inbox.bytes[inbox.n] = d;
        inbox.len[inbox.n] = len;
        inbox.src[inbox.n] = src;
        inbox.n++;
    }
    fatal_armed = 1;
    if (setjmp(fatal_jump) == 0) {
        while (inbox.next < inbox.n) {
            recv_progress();
            pthread_mutex_lock(&net_state.lock);
            window_timers(clock_ns());
            pthread_mutex_unlock(&net_state.lock);
        }
    } else {
        /* log_fatal: the job would end; a fresh transport for the next */
        pthread_mutex_init(&net_state.lock, NULL);
    }
    fatal_armed = 0;
    for (int i = 0; i < inbox.n; i++)
        free(inbox.bytes[i]);
    stop();
    return 0;
}
