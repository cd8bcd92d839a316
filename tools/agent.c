/*
 * agent.c — dsmrun --agent: the nodes of one host of a multi-host job.
 *
 * Started by dsmrun over ssh (hosts.c), it reads the job from stdin, binds
 * its nodes' sockets to the address sshd was reached at, reports them, and
 * once it has every node's address starts and supervises its nodes exactly
 * as dsmrun does on one host (dsmrun.c). Its stdin then carries the
 * launcher's orders and heartbeat: "stop SIG", EOF, or silence for
 * half the peer timeout stop the nodes. Its stdout carries its nodes' output, framed,
 * and its own heartbeat (remote.h). Its exit status is that of its first
 * failing node.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher.h"

void take_orders(struct launcher *l, const char *data, size_t len)
{
    l->heard = now_s();
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n') {
            if (l->ctl_len < 255)
                l->ctl_buf[l->ctl_len++] = data[i];
            continue;
        }
        l->ctl_buf[l->ctl_len] = 0;
        l->ctl_len = 0;
        int sig;
        char end;
        if (arbiter_order(l, l->ctl_buf))
            continue;
        if (sscanf(l->ctl_buf, "stop %d%c", &sig, &end) == 1 && sig > 0 && sig < 65)
            stop_job(l, sig, 128 + sig);   /* the launcher names the cause */
    }
}

/* An agent reads the launcher's orders: "stop SIG", or EOF (the launcher or
 * its ssh is gone). Either stops this host's nodes. */
void read_orders(struct launcher *l)
{
    char chunk[256];
    ssize_t got;
    do
        got = read(l->ctl_in, chunk, sizeof chunk);
    while (got < 0 && errno == EINTR);
    if (got < 0 && errno == EAGAIN)
        return;
    if (got <= 0) {
        close(l->ctl_in);
        l->ctl_in = -1;
        l->heard = now_s();     /* its last word: the stop's output may still go up */
        if (l->phase == JOB_RUNNING) {
            fprintf(stderr, "dsmrun: host %s: lost the launcher; stopping its nodes\n",
                    agent_host);
            stop_job(l, SIGTERM, EXIT_LAUNCH);
        }
        return;
    }
    take_orders(l, chunk, (size_t)got);
}

/* The launcher said nothing for silence_s: it, its host or the network
 * between is gone. */
static void launcher_lost(struct launcher *l)
{
    if (l->phase == JOB_RUNNING) {
        fprintf(stderr, "dsmrun: host %s: no word from the launcher for %g s; stopping its "
                "nodes\n", agent_host, l->silence_s);
        stop_job(l, SIGTERM, EXIT_LAUNCH);
    }
    l->launcher_lost = true;
}

/* Writes to stdout, which is non-blocking: when the launcher reads slowly
 * the agent waits for it (its nodes' output then waits in their pipes), but
 * never longer than the launcher stays silent, so that a dead connection
 * cannot hold the agent, and with it its nodes, forever. Meanwhile it
 * reads the launcher's orders. Returns -1 once the launcher is lost. */
int send_up(struct launcher *l, const char *data, size_t len)
{
    while (len > 0 && !l->launcher_lost) {
        ssize_t put = write(STDOUT_FILENO, data, len);
        if (put > 0) {
            data += put;
            len -= (size_t)put;
            continue;
        }
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0 && errno != EAGAIN) {
            launcher_lost(l);          /* the connection is gone */
            break;
        }
        double left = l->heard + l->silence_s - now_s();
        if (left <= 0) {
            launcher_lost(l);
            break;
        }
        /* After the launcher's EOF (the job is stopping) it still reads. */
        struct pollfd p[2] = {{.fd = STDOUT_FILENO, .events = POLLOUT},
                              {.fd = l->ctl_in, .events = POLLIN}};
        if (poll(p, l->ctl_in >= 0 ? 2 : 1, (int)ceil(left * 1000)) > 0 && p[1].revents)
            read_orders(l);
    }
    return l->launcher_lost ? -1 : 0;
}

/* The nodes' stdout and stderr reach the agent's through these streams
 * (fopencookie): each write becomes a frame. */
static struct launcher *framed_launcher;

static ssize_t write_frame(const char *kind, const char *buf, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof head, "%s %zu\n", kind, len);
    if (len && send_up(framed_launcher, head, (size_t)n) == 0)
        send_up(framed_launcher, buf, len);
    return (ssize_t)len;       /* what a lost launcher cannot take is dropped */
}

static ssize_t write_out_frame(void *cookie, const char *buf, size_t len)
{
    (void)cookie;
    return write_frame("o", buf, len);
}

static ssize_t write_err_frame(void *cookie, const char *buf, size_t len)
{
    (void)cookie;
    return write_frame("e", buf, len);
}

static int open_framed(struct launcher *l)
{
    framed_launcher = l;
    l->framed[0] = fopencookie(NULL, "w", (cookie_io_functions_t){.write = write_out_frame});
    l->framed[1] = fopencookie(NULL, "w", (cookie_io_functions_t){.write = write_err_frame});
    if (!l->framed[0] || !l->framed[1])
        return -1;
    for (int i = 0; i < l->count; i++)
        for (int j = 0; j < 2; j++) {
            l->nodes[i].out[j].to = l->framed[j];
            if (!l->opt.tag_output)
                l->nodes[i].out[j].rank = -1;
        }
    return 0;
}

/* Every beat_s: a look for the launcher's silence, and "alive" to it,
 * between frames. A full pipe takes no "alive" (a pipe takes 6 bytes whole
 * or not at all): what fills it tells the launcher as much. */
void agent_beat(struct launcher *l)
{
    double now = now_s();
    if (now - l->heard >= l->silence_s) {
        launcher_lost(l);
        return;
    }
    static const char alive[] = "alive\n";
    ssize_t put = l->launcher_lost ? 0 : write(STDOUT_FILENO, alive, 6);
    if (put > 0 && put < 6)       /* a socket, not a pipe, may take part of it */
        send_up(l, alive + put, (size_t)(6 - put));
    l->beat = now + l->beat_s;
}

#define AGENT_WAIT_S 60.0    /* for the job, then for the peers */

/* The next line of stdin into l->ctl_buf (NUL-terminated, no newline);
 * bytes after it stay buffered. Returns the line, or NULL at EOF, on a
 * line too long, or at the deadline. */
static char *agent_line(struct launcher *l, size_t *used, double deadline)
{
    /* Drop the line returned last time. */
    if (*used) {
        memmove(l->ctl_buf, l->ctl_buf + *used, l->ctl_len - *used);
        l->ctl_len -= *used;
        *used = 0;
    }
    for (;;) {
        char *nl = memchr(l->ctl_buf, '\n', l->ctl_len);
        if (nl) {
            *nl = 0;
            *used = (size_t)(nl - l->ctl_buf) + 1;
            return l->ctl_buf;
        }
        if (l->ctl_len == REMOTE_LINE_MAX)
            return NULL;
        double left = deadline - now_s();
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)ceil(left * 1000)) == 0)
            return NULL;
        ssize_t got = read(STDIN_FILENO, l->ctl_buf + l->ctl_len, REMOTE_LINE_MAX - l->ctl_len);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return NULL;
        l->ctl_len += (size_t)got;
    }
}

/* The address this host was reached at, from sshd's SSH_CONNECTION
 * ("client-ip client-port server-ip server-port"): the interface toward
 * the launcher, and so toward the other hosts. */
static int ssh_server_addr(struct in_addr *a)
{
    const char *c = getenv("SSH_CONNECTION");
    char ip[64];
    if (!c || sscanf(c, "%*s %*s %63s %*s", ip) != 1 || inet_pton(AF_INET, ip, a) != 1)
        return -1;
    return 0;
}

int run_agent(struct launcher *l)
{
    struct remote_job *j = &l->job;
    char err[256];
    size_t used = 0;
    double deadline = now_s() + AGENT_WAIT_S;

    l->mode = MODE_AGENT;
    agent_host = "?";
    l->ctl_buf = malloc(REMOTE_LINE_MAX + 1);
    if (!l->ctl_buf)
        return EXIT_LAUNCH;
    while (!j->complete) {
        char *line = agent_line(l, &used, deadline);
        if (!line) {
            fprintf(stderr, "dsmrun: host %s: the agent got no job from the launcher\n",
                    agent_host);
            return EXIT_LAUNCH;
        }
        if (remote_job_line(j, line, err, sizeof err) < 0) {
            fprintf(stderr, "dsmrun: host %s: %s\n", agent_host, err);
            return EXIT_LAUNCH;
        }
        if (j->host)
            agent_host = j->host;
    }
    /* The key's line was read into this buffer: what is not still to be
     * read goes. */
    explicit_bzero(l->ctl_buf, used);
    explicit_bzero(l->ctl_buf + l->ctl_len, REMOTE_LINE_MAX + 1 - l->ctl_len);
    if (j->nodes > BOOT_MAX_NODES) {
        fprintf(stderr, "dsmrun: host %s: a job of %d nodes (at most %d)\n", agent_host,
                j->nodes, BOOT_MAX_NODES);
        return EXIT_LAUNCH;
    }
    if (chdir(j->cwd) < 0) {
        fprintf(stderr, "dsmrun: host %s: cannot enter the directory %s: %s\n", agent_host,
                j->cwd, strerror(errno));
        return EXIT_LAUNCH;
    }
    for (int i = 0; i < j->nenv; i++) {
        char *eq = strchr(j->env[i], '=');
        *eq = 0;
        int r = setenv(j->env[i], eq + 1, 1);
        *eq = '=';
        if (r < 0) {
            fprintf(stderr, "dsmrun: host %s: cannot set the environment\n", agent_host);
            return EXIT_LAUNCH;
        }
    }
    /* The statistics file is on node 0's host: checked here, before any
     * node starts (dsmrun.c, check_stats_json). */
    const char *json = getenv("DSM_STATS_JSON");
    if (j->first_rank == 0 && json && *json) {
        char what[PATH_MAX + 64];
        snprintf(what, sizeof what, "host %s: --stats-json %s", agent_host, json);
        if (check_stats_json(json, what) < 0)
            return EXIT_USAGE;
    }
    /* Every node of this host would fail its exec, each with its line. */
    char nodes[48], where[300];
    snprintf(where, sizeof where, "host %s (%s)", agent_host,
             nodes_label(j->first_rank, j->ranks, nodes, sizeof nodes));
    if (j->argc < 1 || check_program(j->argv[0], where) < 0)
        return EXIT_EXEC_FAILED;
    if (ssh_server_addr(&l->opt.bind_addr) < 0) {
        fprintf(stderr, "dsmrun: host %s: SSH_CONNECTION does not name this host's address "
                "(is DSMRUN_RSH an ssh?)\n", agent_host);
        return EXIT_LAUNCH;
    }
    l->opt.nodes = j->nodes;
    l->opt.tag_output = j->tag_output;
    l->opt.prog_argv = j->argv;
    l->job_id = j->job_id;
    memcpy(l->key, j->key, sizeof l->key);
    explicit_bzero(j->key, sizeof j->key);
    l->launch_ns = j->launch_ns;
    if (alloc_children(l, j->ranks, j->first_rank) < 0 || open_sockets(l) < 0)
        return EXIT_LAUNCH;
    for (int i = 0; i < l->count; i++) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &l->nodes[i].addr.sin_addr, ip, sizeof ip);
        printf(REMOTE_REPLY "addr %d %s:%u\n", l->nodes[i].rank, ip,
               ntohs(l->nodes[i].addr.sin_port));
    }
    printf(REMOTE_REPLY "ready\n");
    if (fflush(stdout) != 0)
        return EXIT_LAUNCH;

    char *line = agent_line(l, &used, now_s() + AGENT_WAIT_S);
    if (!line || !strncmp(line, "stop ", 5))
        return EXIT_LAUNCH;    /* the launcher stopped the job before it began */
    int commas = 0;
    for (const char *p = line; *p; p++)
        commas += *p == ',';
    if (strncmp(line, "peers ", 6) || commas != j->nodes - 1) {
        fprintf(stderr, "dsmrun: host %s: expected the peers' addresses from the launcher\n",
                agent_host);
        return EXIT_LAUNCH;
    }
    if (prepare_env_and_signals(l, line + 6) < 0)
        return EXIT_LAUNCH;
    /* From here stdin carries the launcher's orders; what followed the
     * peers line is the first of them. */
    size_t rest = l->ctl_len - used;
    char *pending = malloc(rest + 1);
    if (!pending)
        return EXIT_LAUNCH;
    memcpy(pending, l->ctl_buf + used, rest);
    l->ctl_len = 0;
    l->ctl_in = STDIN_FILENO;
    fcntl(l->ctl_in, F_SETFL, O_NONBLOCK);
    if (open_framed(l) < 0) {
        fprintf(stderr, "dsmrun: host %s: out of memory\n", agent_host);
        return EXIT_LAUNCH;
    }
    fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) | O_NONBLOCK);
    heartbeat_periods(l);
    l->heard = now_s();
    l->beat = l->heard + l->beat_s;
    start_nodes(l);
    take_orders(l, pending, rest);
    free(pending);
    int status = supervise(l);
    /* One line per failure in the whole job: whether a node here said its
     * own, and the relay of a peer's failure one of them kept, go to the
     * launcher, which prints the relay only if no node of any host said
     * its line (dsmrun.c, supervise). */
    if (l->failure_said)
        send_up(l, "said\n", 5);
    else if (l->relayed) {
        char relay[REMOTE_RELAY_MAX + 16];
        int n = snprintf(relay, sizeof relay, "relay %.*s\n", REMOTE_RELAY_MAX, l->relayed);
        send_up(l, relay, (size_t)n);
    }
    /* Without this word the launcher knows that the agent was killed or
     * the connection lost, whatever the remote shell's status says. */
    char end[32];
    int len = snprintf(end, sizeof end, "end %d\n", status);
    send_up(l, end, (size_t)len);
    return status;
}

