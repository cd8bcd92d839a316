/*
 * raw_udp.h — the raw-UDP baseline that the messaging benchmarks measure
 * next to dsm's ports, between the same two processes, in the same run.
 *
 * Each process opens one plain UDP socket of its own on 127.0.0.1 (on
 * several hosts, on the address of dsm's socket), port 0 (besides dsm's), and the two learn each other's address through a dsm
 * port message. Every datagram starts with a struct raw_tag (8 bytes, part
 * of the payload: an "8 B" message is 8 bytes of UDP payload) naming the
 * phase, sequence number, kind and part, so that a loop can drop whatever a
 * previous phase or a retransmission left in the socket.
 *
 * Raw UDP is unreliable, so its loops never wait without limit: ping-pong
 * resends on a receive timeout and counts it; streams count what arrived. A
 * message larger than RAW_UDP_DGRAM_MAX travels as several equal datagrams.
 *
 * Two ways to wait for a datagram:
 *   RAW_BLOCKING  plain recvfrom, which sleeps and pays the cross-CPU
 *                 wake-up (24-30 µs on this machine);
 *   RAW_BUSY      recvfrom(MSG_DONTWAIT) in a loop (yielding the CPU
 *                 between tries), which holds a CPU but sees a datagram
 *                 within a few µs.
 *
 * Also here, because the loops below and both benchmark programs need them
 * (and the benchmarks own no other shared file): the dsm control channel
 * (small reliable messages that sequence phases and carry results), CPU
 * pinning (and its --pin option) and time/median helpers. Every failure ends the
 * process with exit status 1 and one line on stderr (bench_fail).
 */
#ifndef DSM_BENCH_RAW_UDP_H
#define DSM_BENCH_RAW_UDP_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "dsm.h"

/* ---- failure, time, statistics ----------------------------------------- */

static inline void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static inline void bench_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: node %d: ", program_invocation_short_name, dsm_rank());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1, nearest rank) of v[0..n-1]; sorts v in place. */
static inline double bench_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    size_t k = (size_t)(q * (double)n + 0.999999);
    return v[k == 0 ? 0 : (k > n ? n - 1 : k - 1)];
}

static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Where the benchmarks put the two nodes. Two processes that block in turn
 * are woken in 2-5 µs on one CPU but 24-30 µs across CPUs, and left alone
 * the scheduler flips between the two for seconds at a time (busy-polling
 * on a shared CPU even waits out time slices), so where it happens to put
 * the nodes would decide the results. */
enum bench_pin {
    PIN_APP,  /* the application thread of node i on CPU i, dsm's threads free */
    PIN_NODE, /* every thread of node i, dsm's included, on CPU i */
    PIN_NONE, /* the scheduler decides */
};

/* --pin's value into *(enum bench_pin *)out: 0, or -1 for another word.
 * An ARG_CUSTOM parser (args.h); BENCH_PIN_OPTION is the table row. */
static inline int bench_pin_parse(const char *s, void *out)
{
    static const char *const names[] = {[PIN_APP] = "app", [PIN_NODE] = "node",
                                        [PIN_NONE] = "none"};
    for (int i = 0; i <= PIN_NONE; i++)
        if (!strcmp(s, names[i])) {
            *(enum bench_pin *)out = (enum bench_pin)i;
            return 0;
        }
    return -1;
}

#define BENCH_PIN_OPTION(pin) \
    {"--pin", ARG_CUSTOM, (pin), "app, node or none", .parse = bench_pin_parse}

static inline const char *bench_pin_describe(enum bench_pin pin)
{
    switch (pin) {
    case PIN_APP:
        return "each node's application thread pinned to a CPU of its own, dsm's threads free";
    case PIN_NODE:
        return "each node's threads, dsm's included, pinned to a CPU of its own";
    default:
        return "NOT pinned: results depend on where the scheduler puts the nodes";
    }
}

/* Pins this process as `pin` says, node `index` taking the index-th
 * (modulo their number) of the CPUs it may run on now. Call it from the
 * application thread after dsm_startup. Returns 0 or a negative errno. */
static inline int bench_pin_apply(enum bench_pin pin, int index)
{
    if (pin == PIN_NONE)
        return 0;
    cpu_set_t allowed, set;
    if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return -errno;
    int n = CPU_COUNT(&allowed), cpu = -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE && n > 0; c++)
        if (CPU_ISSET(c, &allowed) && seen++ == index % n) {
            cpu = c;
            break;
        }
    if (cpu < 0)
        return -EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pin == PIN_APP) /* threads made from now on inherit it; dsm's exist already */
        return sched_setaffinity(0, sizeof set, &set) < 0 ? -errno : 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -errno;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (sched_setaffinity((pid_t)atoi(e->d_name), sizeof set, &set) < 0)
            rc = -errno;
    }
    closedir(d);
    return rc;
}

/* ---- the dsm control channel -------------------------------------------- */

/* Generous: a peer that is alive answers a control message within ms. */
#define BENCH_CTL_TIMEOUT 10.0

enum bench_ctl_kind {
    CTL_ADDR = 1, /* a = IPv4 address, b = UDP port (network byte order) */
    CTL_READY,    /* the receiver of a stream phase is waiting for data */
    CTL_DONE,     /* a = messages (datagrams) received, b = bytes received */
    CTL_STOPPED,  /* the ping-pong server saw the phase's STOP datagram */
};

struct bench_ctl_msg {
    uint32_t kind;
    uint32_t phase;
    uint64_t a, b;
};

struct bench_ctl {
    int          port; /* ours */
    dsm_port_ref peer; /* the other node's */
};

/* Creates our control port and finds the other node's. */
static inline void bench_ctl_open(struct bench_ctl *c)
{
    c->port = dsm_port_create("bench_ctl", 16);
    if (c->port < 0)
        bench_fail("cannot create the control port: %s", strerror(-c->port));
    int rc = dsm_port_lookup(1 - dsm_rank(), "bench_ctl", BENCH_CTL_TIMEOUT, &c->peer);
    if (rc)
        bench_fail("cannot find node %d's control port: %s", 1 - dsm_rank(), strerror(-rc));
}

static inline void bench_ctl_send(struct bench_ctl *c, enum bench_ctl_kind kind, uint32_t phase,
                                  uint64_t a, uint64_t b)
{
    struct bench_ctl_msg m = {.kind = kind, .phase = phase, .a = a, .b = b};
    int rc = dsm_msg_send(&c->peer, &m, sizeof m, NULL, 0, BENCH_CTL_TIMEOUT, NULL);
    if (rc)
        bench_fail("control message %u of phase %u not sent: %s", kind, phase, strerror(-rc));
}

/* Takes the next control message, which must be `kind` of `phase`: both
 * nodes run the same schedule, so anything else is a bug. Returns 0, or
 * -ETIMEDOUT when none came within `timeout` seconds. */
static inline int bench_ctl_recv(struct bench_ctl *c, enum bench_ctl_kind kind, uint32_t phase,
                                 double timeout, struct bench_ctl_msg *out)
{
    struct dsm_msg m;
    int rc = dsm_msg_recv(c->port, &m, timeout);
    if (rc == -ETIMEDOUT)
        return rc;
    if (rc)
        bench_fail("control receive failed: %s", strerror(-rc));
    if (m.len != sizeof *out)
        bench_fail("control message of %zu bytes", m.len);
    memcpy(out, m.data, sizeof *out);
    dsm_msg_free(&m);
    if (out->kind != kind || out->phase != phase)
        bench_fail("expected control message %u of phase %u, got %u of phase %u", kind, phase,
                   out->kind, out->phase);
    return 0;
}

/* Like bench_ctl_recv, but a missing message is fatal. */
static inline struct bench_ctl_msg bench_ctl_expect(struct bench_ctl *c, enum bench_ctl_kind kind,
                                                    uint32_t phase)
{
    struct bench_ctl_msg m;
    if (bench_ctl_recv(c, kind, phase, BENCH_CTL_TIMEOUT, &m))
        bench_fail("no control message %u of phase %u from node %d within %.0f s", kind, phase,
                   c->peer.node, BENCH_CTL_TIMEOUT);
    return m;
}

/* ---- the raw socket ------------------------------------------------------ */

/* Largest UDP payload over IPv4 (65535 - 20 - 8). */
#define RAW_UDP_DGRAM_MAX 65507u

enum raw_wait { RAW_BLOCKING, RAW_BUSY };

enum raw_kind { RAW_DATA = 1, RAW_STOP, RAW_END, RAW_CREDIT };

struct raw_tag {
    uint32_t seq;
    uint16_t phase;
    uint8_t  kind;
    uint8_t  part;
};

struct raw_udp {
    int                fd;
    struct sockaddr_in self, peer;
    double             rcv_timeout; /* SO_RCVTIMEO now set, seconds (0: none yet) */
    int                rcvbuf, sndbuf; /* effective sizes, bytes */
};

/* The address dsm's inherited socket (DSM_SOCK_FD) is bound to: on several
 * hosts (dsmrun --hosts), this host's interface toward the others. Read
 * before main, because dsm_startup may close that socket (DSM_NET=ucx
 * starts on UDP, then finishes it) and its number be reused by one of
 * UCX's (a tcp listener on 0.0.0.0, whose address no peer can send to). */
static struct in_addr raw_udp_host_addr = {.s_addr = 0};

__attribute__((constructor)) static void raw_udp_note_host_addr(void)
{
    const char *dsm_fd = getenv("DSM_SOCK_FD");
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    int type = 0;
    socklen_t tl = sizeof type;
    if (dsm_fd && getsockopt(atoi(dsm_fd), SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
        type == SOCK_DGRAM && getsockname(atoi(dsm_fd), (struct sockaddr *)&a, &al) == 0 &&
        a.sin_family == AF_INET)
        raw_udp_host_addr = a.sin_addr;
}

/* Opens our socket with the same buffer sizes dsm's transport asks for
 * (8 MiB receive, 4 MiB send), so neither side gets more room to absorb
 * bursts than the other. */
static inline void raw_udp_open(struct raw_udp *u)
{
    memset(u, 0, sizeof *u);
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u->fd < 0)
        bench_fail("socket: %s", strerror(errno));
    int rcv = 8 << 20, snd = 4 << 20;
    if (setsockopt(u->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv) < 0)
        setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    if (setsockopt(u->fd, SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof snd) < 0)
        setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof snd);
    socklen_t sl = sizeof u->rcvbuf;
    getsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &u->rcvbuf, &sl);
    sl = sizeof u->sndbuf;
    getsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &u->sndbuf, &sl);

    u->self.sin_family = AF_INET;
    u->self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* On several hosts (dsmrun --hosts), the address dsm's own socket is
     * bound to: the host's interface toward the others. */
    if (raw_udp_host_addr.s_addr != htonl(INADDR_ANY))
        u->self.sin_addr = raw_udp_host_addr;
    u->self.sin_port = 0;
    if (bind(u->fd, (struct sockaddr *)&u->self, sizeof u->self) < 0)
        bench_fail("bind %s:0: %s", inet_ntoa(u->self.sin_addr), strerror(errno));
    socklen_t al = sizeof u->self;
    if (getsockname(u->fd, (struct sockaddr *)&u->self, &al) < 0)
        bench_fail("getsockname: %s", strerror(errno));
}

/* Tells the other node our address and learns its own. */
static inline void raw_udp_exchange(struct raw_udp *u, struct bench_ctl *c)
{
    bench_ctl_send(c, CTL_ADDR, 0, u->self.sin_addr.s_addr, u->self.sin_port);
    struct bench_ctl_msg m = bench_ctl_expect(c, CTL_ADDR, 0);
    if (m.b == 0 || m.b > 0xFFFF || m.a > 0xFFFFFFFFull)
        bench_fail("node %d sent a bad UDP address", c->peer.node);
    u->peer.sin_family = AF_INET;
    u->peer.sin_addr.s_addr = (in_addr_t)m.a;
    u->peer.sin_port = (in_port_t)m.b;
}

static inline void raw_udp_close(struct raw_udp *u)
{
    close(u->fd);
    u->fd = -1;
}

/* The start of both messaging benchmarks (ipc_pingpong, ipc_stream), after
 * dsm_startup: a job of exactly 2 nodes; this process pinned as `pin`
 * says; the control channel open; the raw UDP sockets open and known to
 * each other. Ends the job on failure. */
static inline void bench_pair_start(enum bench_pin pin, struct bench_ctl *ctl, struct raw_udp *u)
{
    if (dsm_nodes() != 2)
        bench_fail("needs exactly 2 nodes (dsmrun -n 2), not %d", dsm_nodes());
    int rc = bench_pin_apply(pin, dsm_rank());
    if (rc)
        bench_fail("cannot pin to a CPU: %s", strerror(-rc));
    bench_ctl_open(ctl);
    raw_udp_open(u);
    raw_udp_exchange(u, ctl);
}

/* How a message of `size` bytes is cut: `parts` datagrams of `chunk` bytes,
 * the last one possibly shorter. A receive buffer must hold parts * chunk
 * bytes (raw_udp_span), since each part is received in its slot with room
 * for a whole chunk. */
static inline size_t raw_udp_parts(size_t size)
{
    return size <= RAW_UDP_DGRAM_MAX ? 1 : (size + RAW_UDP_DGRAM_MAX - 1) / RAW_UDP_DGRAM_MAX;
}

static inline size_t raw_udp_chunk(size_t size)
{
    size_t n = raw_udp_parts(size);
    return (size + n - 1) / n;
}

static inline size_t raw_udp_span(size_t size)
{
    return raw_udp_parts(size) * raw_udp_chunk(size);
}

/* Sends one datagram of len bytes on fd to `to`. A full socket buffer
 * (ENOBUFS, EAGAIN) is loss, like a drop on the way: returns -1, and the
 * loops count or retry it. */
static inline int raw_udp_sendto(int fd, const void *buf, size_t len, const struct sockaddr_in *to)
{
    for (;;) {
        ssize_t n = sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof *to);
        if (n == (ssize_t)len)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EWOULDBLOCK))
            return -1;
        bench_fail("sendto: %s", n < 0 ? strerror(errno) : "short datagram");
    }
}

/* Sends one datagram to the peer, tagging it in place (buf must be
 * writable and at least sizeof(struct raw_tag) long); -1 on loss, as
 * raw_udp_sendto. */
static inline int raw_udp_send_dgram(struct raw_udp *u, void *buf, size_t len, struct raw_tag tag)
{
    memcpy(buf, &tag, sizeof tag);
    return raw_udp_sendto(u->fd, buf, len, &u->peer);
}

/* Sends a message of `size` bytes from buf as raw_udp_parts(size)
 * datagrams. Returns 0, or -1 if a part could not be queued. */
static inline int raw_udp_send_msg(struct raw_udp *u, void *buf, size_t size, uint16_t phase,
                                   enum raw_kind kind, uint32_t seq)
{
    size_t n = raw_udp_parts(size), chunk = raw_udp_chunk(size);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = i + 1 < n ? chunk : size - i * chunk;
        struct raw_tag t = {.seq = seq, .phase = phase, .kind = (uint8_t)kind, .part = (uint8_t)i};
        rc |= raw_udp_send_dgram(u, (char *)buf + i * chunk, len, t);
    }
    return rc;
}

/* Receives one datagram from the peer into buf (cap bytes), waiting at most
 * `timeout` seconds. Returns its full length (larger than cap if it was cut)
 * and its tag, or -ETIMEDOUT. Datagrams from anyone else, or too short to
 * carry a tag, are dropped. */
static inline long raw_udp_recv_dgram(struct raw_udp *u, void *buf, size_t cap, enum raw_wait how,
                                      double timeout, struct raw_tag *tag)
{
    uint64_t deadline = how == RAW_BUSY ? bench_now_ns() + (uint64_t)(timeout * 1e9) : 0;
    if (timeout < 1e-6) /* SO_RCVTIMEO of zero would mean "wait forever" */
        timeout = 1e-6;
    if (how == RAW_BLOCKING && timeout != u->rcv_timeout) {
        struct timeval tv = {.tv_sec = (time_t)timeout,
                             .tv_usec = (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6)};
        if (setsockopt(u->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
            bench_fail("SO_RCVTIMEO: %s", strerror(errno));
        u->rcv_timeout = timeout;
    }
    int flags = MSG_TRUNC | (how == RAW_BUSY ? MSG_DONTWAIT : 0);
    for (;;) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(u->fd, buf, cap, flags, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                bench_fail("recvfrom: %s", strerror(errno));
            if (how == RAW_BLOCKING || bench_now_ns() >= deadline)
                return -ETIMEDOUT;
            /* Free when this CPU has nothing else to run; when it has (both
             * nodes on one CPU, unpinned), lets the peer answer instead of
             * spinning out a whole time slice (milliseconds). */
            sched_yield();
            continue;
        }
        if (from.sin_addr.s_addr != u->peer.sin_addr.s_addr || from.sin_port != u->peer.sin_port ||
            (size_t)n < sizeof *tag || cap < sizeof *tag)
            continue;
        memcpy(tag, buf, sizeof *tag);
        return (long)n;
    }
}

/* Receives a whole RAW_DATA message of `size` bytes of `phase` into buf
 * (raw_udp_span(size) bytes): sequence want_seq, or any when want_seq is 0.
 * Parts of other phases or sequences, and messages cut short by a lost
 * part, are dropped. Returns 0 and the sequence in *seq_out, 1 if the
 * phase's RAW_STOP arrived instead, or -ETIMEDOUT if no datagram came for
 * `timeout` seconds. */
static inline int raw_udp_recv_msg(struct raw_udp *u, void *buf, size_t size, uint16_t phase,
                                   uint32_t want_seq, enum raw_wait how, double timeout,
                                   uint32_t *seq_out)
{
    size_t n = raw_udp_parts(size), chunk = raw_udp_chunk(size);
    size_t have = 0; /* parts of message `cur` received, in order */
    uint32_t cur = 0;
    while (have < n) {
        char *slot = (char *)buf + have * chunk;
        struct raw_tag t;
        long len = raw_udp_recv_dgram(u, slot, chunk, how, timeout, &t);
        if (len < 0)
            return (int)len;
        if (t.phase != phase)
            continue;
        if (t.kind == RAW_STOP)
            return 1;
        if (t.kind != RAW_DATA || t.part >= n ||
            (size_t)len != (t.part + 1u < n ? chunk : size - (size_t)t.part * chunk))
            continue;
        if (t.part == 0 && (want_seq == 0 || t.seq == want_seq)) {
            /* The start of a message; after a lost part, the resent one. */
            if (have)
                memmove(buf, slot, (size_t)len);
            cur = t.seq;
            have = 1;
        } else if (have && t.part == have && t.seq == cur) {
            have++;
        }
    }
    *seq_out = cur;
    return 0;
}

/* ---- ping-pong ----------------------------------------------------------- */

/* Resend a request whose reply has not come within this long; give up
 * after RAW_PP_MAX_TRIES sends of the same request. */
#define RAW_PP_RESEND_S  0.1
#define RAW_PP_MAX_TRIES 50

/* Client (node 0): `count` round trips of a `req`-byte request answered by
 * a `rep`-byte reply, the first `warmup` unrecorded; the others' round-trip
 * times in µs go to rtt_us[]. Bufs hold raw_udp_span of their size. Adds
 * the resends to *resends. Ends the phase by sending RAW_STOP until the
 * server confirms it over the control channel. */
static inline void raw_udp_pingpong_client(struct raw_udp *u, struct bench_ctl *c, uint16_t phase,
                                           void *req_buf, size_t req, void *rep_buf, size_t rep,
                                           enum raw_wait how, unsigned warmup, unsigned count,
                                           double *rtt_us, uint64_t *resends)
{
    static uint32_t next_seq; /* never reused in a run, so no reply is mistaken */
    for (unsigned k = 0; k < warmup + count; k++) {
        uint32_t seq = ++next_seq, got;
        uint64_t t0 = bench_now_ns();
        for (int tries = 1;; tries++) {
            raw_udp_send_msg(u, req_buf, req, phase, RAW_DATA, seq);
            if (raw_udp_recv_msg(u, rep_buf, rep, phase, seq, how, RAW_PP_RESEND_S, &got) == 0)
                break;
            if (tries == RAW_PP_MAX_TRIES)
                bench_fail("raw UDP: no reply to request %u after %d sends", seq, tries);
            (*resends)++;
        }
        if (k >= warmup)
            rtt_us[k - warmup] = (double)(bench_now_ns() - t0) / 1e3;
    }
    for (int tries = 1;; tries++) {
        struct raw_tag stop;
        raw_udp_send_dgram(u, &stop, sizeof stop,
                           (struct raw_tag){.phase = phase, .kind = RAW_STOP});
        struct bench_ctl_msg m;
        if (bench_ctl_recv(c, CTL_STOPPED, phase, RAW_PP_RESEND_S, &m) == 0)
            return;
        if (tries == RAW_PP_MAX_TRIES)
            bench_fail("raw UDP: ping-pong server did not stop");
    }
}

/* Server (node 1): answers every request of the phase with a `rep`-byte
 * reply of the same sequence (the request itself when rep == req: an echo),
 * until the phase's RAW_STOP arrives. */
static inline void raw_udp_pingpong_server(struct raw_udp *u, struct bench_ctl *c, uint16_t phase,
                                           void *req_buf, size_t req, void *rep_buf, size_t rep,
                                           enum raw_wait how)
{
    for (;;) {
        uint32_t seq = 0;
        int rc = raw_udp_recv_msg(u, req_buf, req, phase, 0, how, BENCH_CTL_TIMEOUT, &seq);
        if (rc < 0)
            bench_fail("raw UDP: no request from node 0 within %.0f s", BENCH_CTL_TIMEOUT);
        if (rc == 1)
            break;
        if (rep == req)
            raw_udp_send_msg(u, req_buf, req, phase, RAW_DATA, seq);
        else
            raw_udp_send_msg(u, rep_buf, rep, phase, RAW_DATA, seq);
    }
    bench_ctl_send(c, CTL_STOPPED, phase, 0, 0);
}

/* ---- streaming ----------------------------------------------------------- */

/* The receiver reports its cumulative count every window/RAW_CREDIT_EVERY
 * datagrams; a sender whose window stays full this long takes the
 * datagrams outstanding as lost and goes on. */
#define RAW_CREDIT_EVERY 4
#define RAW_STALL_S      0.005
/* The receiver takes the stream as over when nothing came for this long
 * (only when every copy of RAW_END was lost). */
#define RAW_IDLE_S       0.2
#define RAW_END_COPIES   3

struct raw_stream_result {
    double   seconds;    /* sender: first send to the receiver's report */
    uint64_t sent;       /* datagrams */
    uint64_t received;   /* datagrams */
    uint64_t bytes;      /* bytes received */
    uint64_t stalls;     /* windowed: times the window was given up as lost */
};

/* What a stream moves: messages of `msg` bytes cut into datagrams of at
 * most `dgram` (the last part possibly shorter), each part sent from, and
 * received into, its own slot of a message buffer. With msg == dgram every
 * datagram is a message and reuses one slot. A sender with `stage` set
 * first copies each message from its buffer into stage and sends the copy,
 * as an API with copy semantics must (dsm_msg_send's caller may reuse its
 * buffer at once). */
struct raw_stream_shape {
    size_t msg, dgram;
    void  *stage; /* sender: NULL, or msg bytes to copy each message into */
};

static inline size_t raw_stream_parts(const struct raw_stream_shape *sh)
{
    return (sh->msg + sh->dgram - 1) / sh->dgram;
}

static inline size_t raw_stream_part_len(const struct raw_stream_shape *sh, size_t part)
{
    size_t off = part * sh->dgram;
    return sh->msg - off < sh->dgram ? sh->msg - off : sh->dgram;
}

/* Sender (node 0): once the receiver is ready, sends `count` datagrams
 * shaped by sh from buf. window == 0 sends them back to back ("blast");
 * otherwise at most `window` may be unconfirmed by the receiver's credits. */
static inline struct raw_stream_result raw_udp_stream_send(struct raw_udp *u, struct bench_ctl *c,
                                                           uint16_t phase, void *buf,
                                                           const struct raw_stream_shape *sh,
                                                           uint64_t count, unsigned window)
{
    struct raw_stream_result r = {0};
    size_t parts = raw_stream_parts(sh);
    char *from = buf;
    /* Datagrams the receiver confirmed, and those given up as lost. A
     * datagram only late, not lost, makes the window briefly larger. */
    uint64_t credited = 0, written_off = 0;
    bench_ctl_expect(c, CTL_READY, phase);
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < count; i++) {
        while (window && i > credited + written_off && i - credited - written_off >= window) {
            struct raw_tag t;
            char cbuf[sizeof t];
            long len = raw_udp_recv_dgram(u, cbuf, sizeof cbuf, RAW_BLOCKING, RAW_STALL_S, &t);
            if (len == -ETIMEDOUT) {
                written_off = i - credited;
                r.stalls++;
            } else if (len == (long)sizeof t && t.phase == phase && t.kind == RAW_CREDIT &&
                       t.seq > credited && t.seq <= i) {
                credited = t.seq;
            }
        }
        size_t part = i % parts;
        if (part == 0 && sh->stage) {
            memcpy(sh->stage, buf, sh->msg);
            from = sh->stage;
        }
        struct raw_tag t = {.seq = (uint32_t)i, .phase = phase, .kind = RAW_DATA};
        raw_udp_send_dgram(u, from + part * sh->dgram, raw_stream_part_len(sh, part), t);
        r.sent++;
    }
    for (int k = 0; k < RAW_END_COPIES; k++) {
        struct raw_tag end;
        raw_udp_send_dgram(u, &end, sizeof end, (struct raw_tag){.phase = phase, .kind = RAW_END});
    }
    struct bench_ctl_msg done = bench_ctl_expect(c, CTL_DONE, phase);
    r.seconds = (double)(bench_now_ns() - t0) / 1e9;
    r.received = done.a;
    r.bytes = done.b;
    return r;
}

/* Receiver (node 1): counts the phase's datagrams shaped by sh until
 * RAW_END (or silence), each received into the slot of buf where the next
 * part in order belongs (buf holds parts * dgram bytes), crediting the
 * sender when window > 0, then reports the count over the control channel.
 * A datagram of another length than that part's is not counted. */
static inline void raw_udp_stream_recv(struct raw_udp *u, struct bench_ctl *c, uint16_t phase,
                                       void *buf, const struct raw_stream_shape *sh,
                                       unsigned window)
{
    uint64_t got = 0, bytes = 0;
    size_t parts = raw_stream_parts(sh);
    unsigned every = window / RAW_CREDIT_EVERY ? window / RAW_CREDIT_EVERY : 1;
    bench_ctl_send(c, CTL_READY, phase, 0, 0);
    for (;;) {
        struct raw_tag t;
        size_t part = got % parts;
        long len = raw_udp_recv_dgram(u, (char *)buf + part * sh->dgram, sh->dgram, RAW_BLOCKING,
                                      got ? RAW_IDLE_S : BENCH_CTL_TIMEOUT, &t);
        if (len == -ETIMEDOUT) {
            if (!got)
                bench_fail("raw UDP: no stream from node 0 within %.0f s", BENCH_CTL_TIMEOUT);
            break;
        }
        if (t.phase != phase)
            continue;
        if (t.kind == RAW_END)
            break;
        if (t.kind != RAW_DATA || (size_t)len != raw_stream_part_len(sh, t.seq % parts))
            continue;
        got++;
        bytes += (uint64_t)len;
        if (window && got % every == 0) {
            struct raw_tag credit;
            raw_udp_send_dgram(u, &credit, sizeof credit,
                               (struct raw_tag){.seq = (uint32_t)got, .phase = phase,
                                                .kind = RAW_CREDIT});
        }
    }
    bench_ctl_send(c, CTL_DONE, phase, got, bytes);
}

#endif
