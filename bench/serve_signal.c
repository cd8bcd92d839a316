/*
 * serve_signal — would serving requests on the computing thread pay
 * (issue 27)? TreadMarks and seed 000 serve a request in a SIGIO handler
 * on whatever thread the node is running; dsm serves it on a service thread
 * that must first be woken and scheduled. This program measures the two
 * mechanisms alone, with nothing of dsm's in the path, on the situation
 * that costs dsm most on this machine: every CPU busy when the request
 * lands (LU 1024's remote fault: 225-267 µs median, ~130 µs of it waiting
 * for a thread to run).
 *
 * Two processes on 127.0.0.1. The server computes on its main thread (a
 * spin loop standing for the program) and answers each request with a
 * page-sized reply, in one of four ways, alternated round by round:
 *
 *   idle     no computing thread; a thread sleeps in recvfrom (the floor:
 *            what a request costs when its node waits)
 *   thread   a service thread sleeps in recvfrom beside the computing one
 *            (dsm today)
 *   thread+  the same, the computing thread made N nicer than the
 *            service thread (no privilege needed), so that a woken
 *            service thread preempts it
 *   sigio    no service thread; the socket raises SIGIO on the computing
 *            thread (F_SETOWN_EX to its tid, F_SETSIG), whose handler
 *            drains the socket and replies (recvfrom/sendto are
 *            async-signal-safe)
 *
 * The client, the faulting node, sends a request and polls for the reply
 * (recvfrom MSG_DONTWAIT with sched_yield between tries, as a waiting dsm
 * node with a core of its own does) and times the round trip; between
 * requests it computes for --gap µs, so both CPUs are busy whenever a
 * request arrives. Every round's median and 90th percentile are printed;
 * the last lines give the medians over rounds and the ratios to `thread`.
 *
 *   build/bench/serve_signal [--requests N] [--rounds R] [--reply BYTES]
 *                            [--gap US] [--nice N]
 *
 * Not a dsm program: it links nothing of dsm's (a plain fork).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

enum mode { MODE_IDLE, MODE_THREAD, MODE_THREAD_PRIO, MODE_SIGIO, MODES };
static const char *const mode_names[MODES] = {"idle", "thread", "thread+", "sigio"};

#define MAX_REPLY 65000
#define STOP_TAG 0xffffffffu

struct request {
    uint32_t seq;
    uint32_t phase; /* round * MODES + mode */
};

static int requests = 2000, rounds = 5, reply_bytes = 8192, gap_us = 200, compute_nice = 10;

static void fail(const char *what)
{
    fprintf(stderr, "serve_signal: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int udp_socket(struct sockaddr_in *bound)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        fail("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        fail("bind");
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    *bound = a;
    return fd;
}

/* ---- the server --------------------------------------------------------- */

static int server_fd;
static char reply_buf[MAX_REPLY];
static volatile sig_atomic_t server_stop;
static uint32_t server_phase; /* round * MODES + mode: a stop of another phase is stale */
static volatile uint64_t spin_sink;

/* Answer whatever is queued; returns false once the client said stop.
 * Async-signal-safe: only recvfrom and sendto. */
static bool serve_pending(int flags)
{
    for (;;) {
        struct request rq;
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(server_fd, &rq, sizeof rq, flags, (struct sockaddr *)&from, &len);
        if (n < 0)
            return true; /* EAGAIN: drained (or EINTR: try at the next signal) */
        if (n != sizeof rq)
            continue;
        if (rq.seq == STOP_TAG) {
            if (rq.phase == server_phase)
                return false;
            continue;
        }
        memcpy(reply_buf, &rq, sizeof rq);
        sendto(server_fd, reply_buf, (size_t)reply_bytes, 0, (struct sockaddr *)&from, len);
        if (flags == 0)
            return true; /* a blocking caller takes one at a time */
    }
}

static void on_sigio(int sig)
{
    (void)sig;
    int saved = errno;
    if (!serve_pending(MSG_DONTWAIT))
        server_stop = 1;
    errno = saved;
}

static void *service_thread(void *arg)
{
    (void)arg;
    while (serve_pending(0))
        ;
    server_stop = 1;
    return NULL;
}

static void compute_until_stop(void)
{
    while (!server_stop)
        for (int i = 0; i < 1000; i++)
            spin_sink += (uint64_t)i * 2654435761u;
}

/* The calling thread's nice, relative to the process's: setpriority on a
 * tid sets that thread alone (Linux), and its value is absolute. */
static void set_own_nice(int base, int delta)
{
    int n = base + delta > 19 ? 19 : base + delta;
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), n) < 0)
        fail("setpriority");
}

/* One round of one mode: serve until the client's stop datagram. */
static void server_round(int round, enum mode m)
{
    server_stop = 0;
    server_phase = (uint32_t)(round * MODES + (int)m);
    if (m == MODE_SIGIO) {
        struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid)};
        if (fcntl(server_fd, F_SETOWN_EX, &owner) < 0 || fcntl(server_fd, F_SETSIG, SIGIO) < 0 ||
            fcntl(server_fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0)
            fail("fcntl O_ASYNC");
        on_sigio(SIGIO); /* anything that came before the switch */
        compute_until_stop();
        if (fcntl(server_fd, F_SETFL, 0) < 0)
            fail("fcntl");
        return;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, service_thread, NULL))
        fail("pthread_create");
    if (m == MODE_IDLE) {
        pthread_join(t, NULL);
        return;
    }
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno)
        fail("getpriority");
    set_own_nice(base, m == MODE_THREAD_PRIO ? compute_nice : 0);
    compute_until_stop();
    pthread_join(t, NULL);
    set_own_nice(base, 0);
}

static void server_main(void)
{
    struct sigaction sa = {.sa_handler = on_sigio, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGIO, &sa, NULL) < 0)
        fail("sigaction");
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < MODES; m++)
            server_round(r, (enum mode)m);
    exit(0);
}

/* ---- the client --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = (int)(q * (n - 1) + 0.5);
    return v[k];
}

static void spin_for_us(int us)
{
    uint64_t end = now_ns() + (uint64_t)us * 1000;
    while (now_ns() < end)
        spin_sink++;
}

/* Round trips of one round, in µs, into rtt[]; a lost datagram resends
 * after 20 ms (loopback loses only on overflow). */
static void client_round(int fd, const struct sockaddr_in *srv, uint32_t phase, uint32_t *seq, double *rtt)
{
    static char buf[MAX_REPLY];
    for (int i = 0; i < requests; i++) {
        struct request rq = {.seq = ++*seq, .phase = phase};
        uint64_t t0 = now_ns(), sent = t0;
        sendto(fd, &rq, sizeof rq, 0, (const struct sockaddr *)srv, sizeof *srv);
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n >= (ssize_t)sizeof rq && ((struct request *)buf)->seq == rq.seq)
                break;
            if (n < 0 && now_ns() - sent > 20000000ull) {
                sendto(fd, &rq, sizeof rq, 0, (const struct sockaddr *)srv, sizeof *srv);
                sent = now_ns();
            }
            if (n < 0)
                sched_yield();
        }
        rtt[i] = (double)(now_ns() - t0) / 1000.0;
        spin_for_us(gap_us);
    }
    /* Stop this round's server side; repeated, UDP being UDP. */
    struct request stop = {.seq = STOP_TAG, .phase = phase};
    for (int k = 0; k < 3; k++)
        sendto(fd, &stop, sizeof stop, 0, (const struct sockaddr *)srv, sizeof *srv);
    usleep(20000);
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) >= 0)
        ; /* late replies of this round */
}

static void usage(FILE *f)
{
    fprintf(f, "usage: serve_signal [--requests N] [--rounds R] [--reply BYTES] [--gap US] [--nice N]\n"
               "  four ways of serving a request while every CPU computes, alternated: idle,\n"
               "  thread, thread+ (the computing thread at nice N), sigio\n");
}

int main(int argc, char **argv)
{
    struct arg_option options[] = {
        {"--requests", ARG_INT, &requests, "a count 10..1000000", .lo = 10, .hi = 1000000},
        {"--rounds", ARG_INT, &rounds, "a count 1..100", .lo = 1, .hi = 100},
        {"--reply", ARG_INT, &reply_bytes, "bytes 8..65000", .lo = 8, .hi = MAX_REPLY},
        {"--gap", ARG_INT, &gap_us, "µs 0..100000", .lo = 0, .hi = 100000},
        {"--nice", ARG_INT, &compute_nice, "the computing thread's nice 1..19 in thread+", .lo = 1, .hi = 19},
        {0}};
    int status = args_read(argc, argv, options, usage, true);
    if (status != ARGS_RUN)
        return status;

    struct sockaddr_in srv, cli;
    server_fd = udp_socket(&srv);
    int client_fd = udp_socket(&cli);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork");
    if (pid == 0) {
        close(client_fd);
        server_main();
    }
    close(server_fd);

    printf("serve_signal: %d requests a round, %d-byte replies, %d µs of computing between them, "
           "thread+ at nice %d; round trips in µs\n\n",
           requests, reply_bytes, gap_us, compute_nice);
    printf("| round | mode | median | p90 |\n|---|---|---:|---:|\n");
    double *rtt = malloc(sizeof(double) * (size_t)requests);
    double med[MODES][100], p90[MODES][100];
    if (!rtt)
        fail("malloc");
    uint32_t seq = 0;
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < MODES; m++) {
            usleep(50000); /* the server sets the mode up */
            client_round(client_fd, &srv, (uint32_t)(r * MODES + m), &seq, rtt);
            med[m][r] = quantile(rtt, requests, 0.5);
            p90[m][r] = quantile(rtt, requests, 0.9);
            printf("| %d | %s | %.1f | %.1f |\n", r + 1, mode_names[m], med[m][r], p90[m][r]);
            fflush(stdout);
        }
    waitpid(pid, &status, 0);
    printf("\nmedians over %d rounds:\n\n| mode | median | p90 | median / thread |\n|---|---:|---:|---:|\n", rounds);
    double base = quantile(med[MODE_THREAD], rounds, 0.5);
    for (int m = 0; m < MODES; m++) {
        double mm = quantile(med[m], rounds, 0.5), pp = quantile(p90[m], rounds, 0.5);
        printf("| %s | %.1f | %.1f | %.2f |\n", mode_names[m], mm, pp, mm / base);
    }
    free(rtt);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
