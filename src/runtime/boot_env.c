/*
 * boot_env.c — joining a job that dsmrun started (base/launch.h), or a job of one.
 *
 * Every value dsmrun hands over is checked before use; a bad one ends the
 * process with a line that names it and says to start with dsmrun.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/state.h"
#include "base/launch.h"
#include "runtime/bootstrap.h"

static long parse_long(const char *name, const char *v, long min, long max)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < min || x > max)
        log_fatal("bad bootstrap value %s=%s (expected %ld..%ld); start the program with dsmrun",
                  name, v ? v : "(unset)", min, max);
    return x;
}

static void parse_peers(const char *list, int nodes, struct sockaddr_in *out)
{
    if (!list)
        log_fatal("%s is not set; start the program with dsmrun", BOOT_ENV_PEERS);
    const char *p = list;
    for (int i = 0; i < nodes; i++) {
        char host[64];
        const char *colon = strchr(p, ':');
        if (!colon || colon - p >= (long)sizeof host)
            log_fatal("bad peer address list in %s at entry %d", BOOT_ENV_PEERS, i);
        memcpy(host, p, (size_t)(colon - p));
        host[colon - p] = 0;
        char *end;
        errno = 0;
        long port = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || port < 1 || port > 65535 ||
            (i < nodes - 1 ? *end != ',' : *end != 0))
            log_fatal("bad peer address list in %s at entry %d", BOOT_ENV_PEERS, i);
        memset(&out[i], 0, sizeof out[i]);
        out[i].sin_family = AF_INET;
        out[i].sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &out[i].sin_addr) != 1)
            log_fatal("bad peer address '%s' in %s", host, BOOT_ENV_PEERS);
        p = end + 1;
    }
}

static void read_key(int fd, uint8_t key[BOOT_KEY_BYTES])
{
    size_t got = 0;
    while (got < BOOT_KEY_BYTES) {
        ssize_t n = read(fd, key + got, BOOT_KEY_BYTES - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            log_fatal("cannot read the job key from fd %d; start the program with dsmrun", fd);
        got += (size_t)n;
    }
    close(fd);
}

/* The launcher's life pipe (BOOT_ENV_LIFE_FD); -1: none. */
static DSM_STATE int life_fd = -1;

void boot_tell_launcher(char what)
{
    if (life_fd < 0)
        return;
    ssize_t n;
    do
        n = write(life_fd, &what, 1);
    while (n < 0 && errno == EINTR);
    /* Once finished, nothing more to say; a launcher gone is not our
     * failure to report. */
    if (what == BOOT_LIFE_FINISHED) {
        close(life_fd);
        life_fd = -1;
    }
}

/* log.h's launcher: a failure said, or a peer's relayed (BOOT_LIFE_SAID,
 * BOOT_LIFE_RELAYED). write() alone: said() runs in the crash handler. */
static void said_to_launcher(void)
{
    if (life_fd >= 0 && write(life_fd, (char[]){BOOT_LIFE_SAID}, 1) < 0) {
        /* the launcher is gone: nobody to tell */
    }
}

static bool relayed_to_launcher(const char *line)
{
    if (life_fd < 0)
        return false;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%c%s\n", BOOT_LIFE_RELAYED, line);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    if (len < 2 || buf[len - 1] != '\n')
        buf[len > 0 ? len - 1 : 0] = '\n';
    return write(life_fd, buf, len) == (ssize_t)len;
}

/* The optional life pipe: a pipe's write end, kept from the program's own
 * children (close-on-exec). */
static void open_life(void)
{
    const char *v = getenv(BOOT_ENV_LIFE_FD);
    if (!v)
        return;
    int fd = (int)parse_long(BOOT_ENV_LIFE_FD, v, 0, INT_MAX);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
        log_fatal("%s=%d is not a pipe; start the program with dsmrun", BOOT_ENV_LIFE_FD, fd);
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        log_fatal("cannot mark the launcher's pipe close-on-exec: %s", strerror(errno));
    life_fd = fd;
    log_set_launcher(&(struct log_launcher){.said = said_to_launcher, .relayed = relayed_to_launcher});
    boot_tell_launcher(BOOT_LIFE_STARTED);
}

/* The agent's socket (BOOT_ENV_ARBITER_FD), for liveness.c; -1: none. */
static DSM_STATE int arbiter_fd = -1;

int boot_arbiter_fd(void)
{
    return arbiter_fd;
}

/* The optional socket to this host's agent: non-blocking (liveness.c asks
 * and reads from the service thread, which must never wait on it), kept
 * from the program's own children. */
static void open_arbiter(void)
{
    const char *v = getenv(BOOT_ENV_ARBITER_FD);
    if (!v)
        return;
    int fd = (int)parse_long(BOOT_ENV_ARBITER_FD, v, 0, INT_MAX);
    int type;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET)
        log_fatal("%s=%d is not the agent's socket; start the program with dsmrun",
                  BOOT_ENV_ARBITER_FD, fd);
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
        log_fatal("cannot set up the agent's socket: %s", strerror(errno));
    arbiter_fd = fd;
}

int boot_env_present(void)
{
    return getenv(BOOT_ENV_RANK) != NULL;
}

void boot_env(struct net_params *np)
{
    job_init()->nodes = (int)parse_long(BOOT_ENV_NODES, getenv(BOOT_ENV_NODES), 1, BOOT_MAX_NODES);
    job_init()->rank = (int)parse_long(BOOT_ENV_RANK, getenv(BOOT_ENV_RANK), 0, job_init()->nodes - 1);
    log_set_rank(job_init()->rank);
    np->fd = (int)parse_long(BOOT_ENV_SOCK_FD, getenv(BOOT_ENV_SOCK_FD), 0, INT_MAX);
    int keyfd = (int)parse_long(BOOT_ENV_KEY_FD, getenv(BOOT_ENV_KEY_FD), 0, INT_MAX);
    const char *job = getenv(BOOT_ENV_JOB);
    char *end;
    errno = 0;
    np->job_id = job ? strtoull(job, &end, 16) : 0;
    if (!job || errno || end == job || *end || strlen(job) != 16)
        log_fatal("bad bootstrap value %s=%s; start the program with dsmrun",
                  BOOT_ENV_JOB, job ? job : "(unset)");
    struct sockaddr_in *peers = calloc((size_t)job_init()->nodes, sizeof *peers);
    if (!peers)
        log_fatal("out of memory at startup");
    parse_peers(getenv(BOOT_ENV_PEERS), job_init()->nodes, peers);
    np->peers = peers;
    read_key(keyfd, np->key);
    int type;
    socklen_t tl = sizeof type;
    if (getsockopt(np->fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_DGRAM)
        log_fatal("%s=%d is not a UDP socket; start the program with dsmrun",
                  BOOT_ENV_SOCK_FD, np->fd);
    /* The program's own children must not inherit the job's socket. */
    if (fcntl(np->fd, F_SETFD, FD_CLOEXEC) < 0)
        log_fatal("cannot mark the job socket close-on-exec: %s", strerror(errno));
    open_life();
    open_arbiter();
}

/* A 1-node job: our own socket, key and job id. */
void boot_solo(struct net_params *np)
{
    struct sockaddr_in *self = calloc(1, sizeof *self);
    if (!self)
        log_fatal("out of memory at startup");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        log_fatal("cannot create a UDP socket: %s", strerror(errno));
    self->sin_family = AF_INET;
    self->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *self;
    if (bind(fd, (struct sockaddr *)self, sizeof *self) < 0 ||
        getsockname(fd, (struct sockaddr *)self, &len) < 0)
        log_fatal("cannot bind a UDP socket on the loopback: %s", strerror(errno));
    if (getrandom(np->key, sizeof np->key, 0) != sizeof np->key ||
        getrandom(&np->job_id, sizeof np->job_id, 0) != sizeof np->job_id)
        log_fatal("cannot get random bytes for the job key");
    job_init()->rank = 0;
    job_init()->nodes = 1;
    np->fd = fd;
    np->peers = self;
}
