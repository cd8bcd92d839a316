/*
 * boot_probe.c — a node program that checks, from inside, what dsmrun hands
 * it (src/base/launch.h), then behaves as its arguments say so that the
 * tests can watch dsmrun's supervision.
 *
 * Plain libc on purpose: it tests the launcher, not the library.
 *
 *   boot_probe                  check the contract; every node sends its job
 *                               id and key to node 0, which compares them
 *   boot_probe exit R CODE      rank R exits CODE once every other node runs;
 *                               the others wait up to 30 s to be stopped
 *   boot_probe crash R          the same, but rank R kills itself (SIGKILL)
 *   boot_probe hang [ignore-term]  every node waits forever; node 0 says so
 *   boot_probe print            every node prints lines (see print_lines)
 *   boot_probe env NAME VALUE   every node checks that NAME is VALUE
 *   boot_probe envabs NAME FILE every node checks NAME is an absolute path to FILE
 *   boot_probe args ARGS...     node 0 prints "args: ARGS..."
 *   boot_probe stdin            node 0 prints "stdin: " and its first stdin line
 *
 * Every node tells dsmrun through the life pipe that it has joined the job
 * and, when it ends with status 0, that it has finished, as libdsm does.
 *
 * Exit status 1 means a contract check failed (the line on stderr says
 * which); 99 means a node timed out waiting for its peers.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/launch.h"

#define WAIT_MS      20000  /* for peers; generous, the machine may be loaded */
#define EXIT_TIMEOUT 99

struct contract {
    int                rank, nodes;
    char               job[17];
    int                sock;
    int                arbiter;  /* BOOT_ENV_ARBITER_FD (an agent's node); -1: none */
    struct sockaddr_in peers[BOOT_MAX_NODES];
    unsigned char      key[BOOT_KEY_BYTES];
};

/* What every node sends node 0 in the default mode. */
struct report {
    int32_t       rank;
    int32_t       pid;
    char          job[16];
    unsigned char key[BOOT_KEY_BYTES];
};

static int my_rank = -1;

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "boot_probe: node %d: ", my_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        fail("%s is not set", name);
    return v;
}

static int env_int(const char *name, int min, int max)
{
    const char *v = env_or_fail(name);
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max)
        fail("%s=%s is not an integer from %d to %d", name, v, min, max);
    return (int)x;
}

static int same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

static void parse_peers(struct contract *c)
{
    const char *v = env_or_fail(BOOT_ENV_PEERS);
    int count = 0;
    while (*v) {
        char ip[16];
        unsigned port;
        int used = 0;
        if (count == c->nodes || sscanf(v, "%15[0-9.]:%u%n", ip, &port, &used) != 2 ||
            port == 0 || port > 65535 || (v[used] != ',' && v[used] != '\0'))
            fail("%s is malformed near '%s'", BOOT_ENV_PEERS, v);
        struct sockaddr_in *sa = &c->peers[count++];
        sa->sin_family = AF_INET;
        sa->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1)
            fail("%s holds a bad address '%s'", BOOT_ENV_PEERS, ip);
        if (sa->sin_addr.s_addr == htonl(INADDR_ANY))
            fail("%s hands the peers 0.0.0.0, which reaches no one", BOOT_ENV_PEERS);
        v += used + (v[used] == ',');
    }
    if (count != c->nodes)
        fail("%s lists %d peers for %d nodes", BOOT_ENV_PEERS, count, c->nodes);
    for (int i = 0; i < count; i++)
        for (int j = 0; j < i; j++)
            if (same_addr(&c->peers[i], &c->peers[j]))
                fail("peers %d and %d share an address", j, i);
}

static void check_job_id(struct contract *c)
{
    const char *v = env_or_fail(BOOT_ENV_JOB);
    if (strlen(v) != 16 || strspn(v, "0123456789abcdef") != 16)
        fail("%s=%s is not 16 lowercase hex digits", BOOT_ENV_JOB, v);
    memcpy(c->job, v, sizeof c->job);
}

static void check_socket(struct contract *c)
{
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    struct sockaddr_in sa;
    c->sock = env_int(BOOT_ENV_SOCK_FD, 3, 1 << 20);
    if (getsockopt(c->sock, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
        fail("%s=%d is not a socket: %s", BOOT_ENV_SOCK_FD, c->sock, strerror(errno));
    len = sizeof domain;
    getsockopt(c->sock, SOL_SOCKET, SO_DOMAIN, &domain, &len);
    if (type != SOCK_DGRAM || domain != AF_INET)
        fail("the socket is not AF_INET/SOCK_DGRAM");
    len = sizeof sa;
    /* Bound to my entry, or (dsmrun --bind 0.0.0.0) to every interface on
     * my entry's port. */
    if (getsockname(c->sock, (struct sockaddr *)&sa, &len) < 0 ||
        !(same_addr(&sa, &c->peers[c->rank]) ||
          (sa.sin_addr.s_addr == htonl(INADDR_ANY) && sa.sin_port == c->peers[c->rank].sin_port)))
        fail("the socket is not bound to my entry of %s", BOOT_ENV_PEERS);
}

static void read_key(struct contract *c)
{
    int fd = env_int(BOOT_ENV_KEY_FD, 3, 1 << 20);
    unsigned char buf[2 * BOOT_KEY_BYTES];
    size_t total = 0;
    for (;;) {
        ssize_t got = read(fd, buf + total, sizeof buf - total);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            fail("reading the key: %s", strerror(errno));
        if (got == 0)
            break;
        total += (size_t)got;
        if (total == sizeof buf)
            break;
    }
    if (total != BOOT_KEY_BYTES)
        fail("the key pipe gave %zu bytes before EOF, not %d", total, BOOT_KEY_BYTES);
    memcpy(c->key, buf, sizeof c->key);
    close(fd);
}

/* Whether this node's parent is an agent (dsmrun --agent). */
static bool launched_by_agent(void)
{
    char path[64], args[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid());
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(args, 1, sizeof args - 1, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < n; i += strlen(args + i) + 1) {
        args[n] = 0;
        if (!strcmp(args + i, "--agent"))
            return true;
    }
    return false;
}

/* An agent's node has a socket to it (BOOT_ENV_ARBITER_FD): a
 * SOCK_SEQPACKET one; a node of a one-host job has none. */
static void check_arbiter(struct contract *c, bool agent)
{
    const char *v = getenv(BOOT_ENV_ARBITER_FD);
    c->arbiter = -1;
    if (!v)
        return;
    c->arbiter = env_int(BOOT_ENV_ARBITER_FD, 3, 1 << 20);
    int type;
    socklen_t tl = sizeof type;
    if (getsockopt(c->arbiter, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET)
        fail("%s=%d is not a SOCK_SEQPACKET socket", BOOT_ENV_ARBITER_FD, c->arbiter);
    if (!agent)
        fail("%s is set, but no agent started this node", BOOT_ENV_ARBITER_FD);
}

/* Only my own sockets may be open: the other nodes' must not leak in.
 * Pipes and files are not checked, since the test harness may pass its
 * own. */
static void check_no_foreign_sockets(const struct contract *c)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (!d)
        fail("cannot list /proc/self/fd: %s", strerror(errno));
    while ((e = readdir(d))) {
        char path[300], target[64];
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d) || fd == c->sock || fd == c->arbiter)
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0 && (target[n] = '\0', !strncmp(target, "socket:", 7)))
            fail("fd %d is a socket that is not mine (%s)", fd, target);
    }
    closedir(d);
}

static void check_stdin(const struct contract *c)
{
    char target[64];
    ssize_t n = readlink("/proc/self/fd/0", target, sizeof target - 1);
    if (c->rank == 0)
        return;      /* node 0 keeps dsmrun's stdin, whatever it is */
    if (n < 0 || (target[n] = '\0', strcmp(target, "/dev/null")))
        fail("stdin is not /dev/null");
}

static void check_contract(struct contract *c)
{
    c->nodes = env_int(BOOT_ENV_NODES, 1, BOOT_MAX_NODES);
    c->rank = my_rank = env_int(BOOT_ENV_RANK, 0, c->nodes - 1);
    check_job_id(c);
    parse_peers(c);
    check_socket(c);
    read_key(c);
    if (!(personality(0xffffffff) & ADDR_NO_RANDOMIZE))
        fail("address-space randomisation is on");
    check_arbiter(c, launched_by_agent());
    check_no_foreign_sockets(c);
    check_stdin(c);
}

/* Receives one datagram within WAIT_MS; exits EXIT_TIMEOUT otherwise. */
static ssize_t receive(const struct contract *c, void *buf, size_t len, struct sockaddr_in *from)
{
    struct pollfd p = {.fd = c->sock, .events = POLLIN};
    socklen_t fromlen = sizeof *from;
    if (poll(&p, 1, WAIT_MS) != 1) {
        fprintf(stderr, "boot_probe: node %d: no datagram within %d ms\n", c->rank, WAIT_MS);
        exit(EXIT_TIMEOUT);
    }
    return recvfrom(c->sock, buf, len, 0, (struct sockaddr *)from, &fromlen);
}

static void send_to(const struct contract *c, int rank, const void *buf, size_t len)
{
    if (sendto(c->sock, buf, len, 0, (const struct sockaddr *)&c->peers[rank],
               sizeof c->peers[rank]) != (ssize_t)len)
        fail("sendto node %d: %s", rank, strerror(errno));
}

/* Returns once the process has ended (it is not our child, hence a pidfd). */
static void wait_for_exit(int pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return;          /* ESRCH: gone already */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, WAIT_MS) != 1) {
        fprintf(stderr, "boot_probe: node 0: pid %d did not end within %d ms\n", pid, WAIT_MS);
        exit(EXIT_TIMEOUT);
    }
    close(fd);
}

/* Every node reports its job id and key to node 0, which checks that they
 * all hold the same and that each datagram comes from the sender's entry of
 * DSM_PEERS. Node 0 then waits for the others to exit 0 before it exits:
 * dsmrun must let a job go on after some of its nodes ended well. */
static int mode_check(const struct contract *c)
{
    struct report mine = {.rank = c->rank, .pid = getpid()};
    memcpy(mine.job, c->job, sizeof mine.job);
    memcpy(mine.key, c->key, sizeof mine.key);
    if (c->rank != 0) {
        send_to(c, 0, &mine, sizeof mine);
        return 0;
    }

    char seen[BOOT_MAX_NODES] = {0};
    int pids[BOOT_MAX_NODES];
    for (int i = 1; i < c->nodes; i++) {
        struct report r;
        struct sockaddr_in from;
        if (receive(c, &r, sizeof r, &from) != sizeof r)
            fail("a report has the wrong size");
        if (r.rank < 1 || r.rank >= c->nodes || seen[r.rank]++)
            fail("a report names rank %d, unexpected", (int)r.rank);
        if (!same_addr(&from, &c->peers[r.rank]))
            fail("node %d's report does not come from its address in %s", (int)r.rank,
                 BOOT_ENV_PEERS);
        if (memcmp(r.job, mine.job, sizeof r.job))
            fail("node %d has another job id", (int)r.rank);
        if (memcmp(r.key, mine.key, sizeof r.key))
            fail("node %d has another key", (int)r.rank);
        pids[r.rank] = r.pid;
    }
    for (int i = 1; i < c->nodes; i++)
        wait_for_exit(pids[i]);
    return 0;
}

static int rank_arg(const struct contract *c, const char *s)
{
    int r = atoi(s);
    if (r < 0 || r >= c->nodes)
        fail("rank %s is out of range", s);
    return r;
}

/* Rank `who` returns once every other node has said it runs; the others
 * return after saying so. */
static void meet_at(const struct contract *c, int who)
{
    char byte = 'r';
    if (c->rank != who) {
        send_to(c, who, &byte, 1);
        return;
    }
    for (int i = 1; i < c->nodes; i++) {
        struct sockaddr_in from;
        receive(c, &byte, 1, &from);
    }
}

static void sleep_s(int seconds)
{
    struct timespec ts = {.tv_sec = seconds};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int mode_fail(const struct contract *c, int who, int code, int crash)
{
    meet_at(c, who);
    if (c->rank != who) {
        sleep_s(30);   /* dsmrun should stop us long before */
        return 0;
    }
    if (crash)
        raise(SIGKILL);
    return code;
}

static _Noreturn void mode_hang(const struct contract *c, int ignore_term)
{
    if (ignore_term)
        signal(SIGTERM, SIG_IGN);
    if (c->rank == 0) {
        printf("node 0 hanging\n");
        fflush(stdout);
    }
    for (;;)
        pause();
}

/* Two lines and an unterminated one on stdout, one line on stderr; node 1
 * adds a line longer than any pipe buffer. */
static int mode_print(const struct contract *c)
{
    printf("node %d stdout line 1\n", c->rank);
    fflush(stdout);
    fprintf(stderr, "node %d stderr line\n", c->rank);
    printf("node %d stdout line 2\n", c->rank);
    if (c->rank == 1) {
        printf("long:");
        for (int i = 0; i < 200000; i++)
            putchar('x');
        printf(":end\n");
    }
    printf("node %d partial", c->rank);
    return 0;
}

static int mode_env(const char *name, const char *want)
{
    const char *v = getenv(name);
    if (!v || strcmp(v, want))
        fail("%s is '%s', expected '%s'", name, v ? v : "(unset)", want);
    return 0;
}

static int mode_envabs(const char *name, const char *file)
{
    const char *v = getenv(name);
    size_t vl = v ? strlen(v) : 0, fl = strlen(file);
    if (!v || v[0] != '/' || vl <= fl || strcmp(v + vl - fl, file) || v[vl - fl - 1] != '/')
        fail("%s is '%s', expected an absolute path to %s", name, v ? v : "(unset)", file);
    return 0;
}

static int mode_args(const struct contract *c, int argc, char **argv)
{
    if (c->rank != 0)
        return 0;
    printf("args:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    return 0;
}

static int mode_stdin(const struct contract *c)
{
    char line[256];
    if (c->rank != 0)
        return 0;
    if (!fgets(line, sizeof line, stdin))
        fail("nothing on stdin");
    printf("stdin: %s", line);
    return 0;
}

/* The life pipe (BOOT_ENV_LIFE_FD): a node tells dsmrun that it has joined
 * the job, and later that it has finished, as libdsm does (dsm_startup,
 * dsm_finish); a node that exits 0 without joining is no dsm program. */
static void tell_launcher(char what)
{
    const char *v = env_or_fail(BOOT_ENV_LIFE_FD);
    int fd = atoi(v);
    if (write(fd, &what, 1) != 1)
        fail("cannot write to the life pipe %s=%s: %s", BOOT_ENV_LIFE_FD, v, strerror(errno));
}

static int run_mode(struct contract *c, int argc, char **argv);

int main(int argc, char **argv)
{
    static struct contract c;
    check_contract(&c);
    tell_launcher(BOOT_LIFE_STARTED);
    int rc = run_mode(&c, argc, argv);
    if (rc == 0)
        tell_launcher(BOOT_LIFE_FINISHED);
    return rc;
}

static int run_mode(struct contract *c, int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    if (!strcmp(mode, "check"))
        return mode_check(c);
    if (!strcmp(mode, "exit") && argc == 4)
        return mode_fail(c, rank_arg(c, argv[2]), atoi(argv[3]), 0);
    if (!strcmp(mode, "crash") && argc == 3)
        return mode_fail(c, rank_arg(c, argv[2]), 0, 1);
    if (!strcmp(mode, "hang"))
        mode_hang(c, argc > 2 && !strcmp(argv[2], "ignore-term"));
    if (!strcmp(mode, "print"))
        return mode_print(c);
    if (!strcmp(mode, "env") && argc == 4)
        return mode_env(argv[2], argv[3]);
    if (!strcmp(mode, "envabs") && argc == 4)
        return mode_envabs(argv[2], argv[3]);
    if (!strcmp(mode, "args"))
        return mode_args(c, argc - 2, argv + 2);
    if (!strcmp(mode, "stdin"))
        return mode_stdin(c);
    fail("unknown mode '%s'", mode);
}
