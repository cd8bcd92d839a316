/*
 * hosts.c — dsmrun's side of a job on several hosts (--hosts, --hostfile).
 *
 * One ssh per host runs that host's agent (`dsmrun --agent`, agent.c); the
 * job description goes down its stdin (remote.h), the agent's answers come
 * up its stdout. Once every agent has reported its nodes' addresses, each
 * is sent all of them and starts its nodes. From then on dsmrun forwards
 * the agents' output (framed, remote.h), exchanges a heartbeat with them,
 * and supervises the ssh processes as it supervises nodes on one host: the
 * first that ends badly, or the first host to fall silent, stops the job
 * on every host.
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
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher.h"

/* Agents are told through their stdin, then that stdin is closed: an agent
 * reads EOF as "stop" too, so one that misses the line still stops. Only
 * SIGKILL goes to the ssh processes themselves, whose end cuts the agents'
 * stdin. */
void tell_agents(struct launcher *l, int sig)
{
    for (int i = 0; i < l->count; i++) {
        struct node *h = &l->nodes[i];
        if (h->ctl < 0)
            continue;
        char line[32];
        int len = snprintf(line, sizeof line, "stop %d\n", sig), fd = h->ctl;
        h->ctl = -1;      /* first: the heartbeat's signal handler reads it */
        (void)!write(fd, line, (size_t)len);   /* best effort: EOF follows */
        close(fd);
    }
}

/* The last line of what a host's ssh printed on stderr, or "". */
static const char *last_err_line(struct node *h)
{
    if (!h->errs || !h->errs_len)
        return "";
    while (h->errs_len && (h->errs[h->errs_len - 1] == '\n' || h->errs[h->errs_len - 1] == '\r'))
        h->errs_len--;
    h->errs[h->errs_len] = 0;
    char *nl = strrchr(h->errs, '\n');
    return nl ? nl + 1 : h->errs;
}

/* "node 4" or "nodes 4-7": a host's nodes, for messages (here and in
 * its agent). */
const char *nodes_label(int first, int count, char *buf, size_t len)
{
    if (count == 1)
        snprintf(buf, len, "node %d", first);
    else
        snprintf(buf, len, "nodes %d-%d", first, first + count - 1);
    return buf;
}

static const char *host_nodes(const struct node *h, char *buf, size_t len)
{
    return nodes_label(h->rank, h->ranks, buf, len);
}

/* The ssh that runs a host's agent ended. The agent reports its own nodes'
 * failures (and exits with the first one's status); what is left to say
 * here is what the agent could not: ssh failed, or the host was lost. */
void host_ended(struct launcher *l, struct node *h, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && h->ready)
        return;
    if (l->phase != JOB_RUNNING)
        return;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const char *said = last_err_line(h);
    char nodes[48];
    host_nodes(h, nodes, sizeof nodes);
    if (!strncmp(said, "dsmrun: ", 8)) {
        /* The agent said what went wrong, naming the host: one line is enough. */
        fprintf(stderr, "%s\n", said);
    } else if (!h->ready) {
        /* ssh said nothing: its status is all there is to go on. */
        char how[64];
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, "ssh was killed by signal %d", WTERMSIG(status));
        else
            snprintf(how, sizeof how, "ssh ended with status %d", code);
        fprintf(stderr, "dsmrun: host %s (%s): could not start: %s%s; stopping the job\n",
                h->host, nodes, *said ? said : how,
                WIFEXITED(status) && code == 0 ? " before its agent answered" : "");
        code = EXIT_LAUNCH;
    } else if (WIFSIGNALED(status)) {
        fprintf(stderr, "dsmrun: host %s (%s): ssh was killed by signal %d (%s); stopping the job\n",
                h->host, nodes, WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (code == 255 && h->end_status != 255) {
        fprintf(stderr, "dsmrun: host %s (%s): lost the connection, or its agent (ssh ended with "
                "status 255%s%s); stopping the job\n", h->host, nodes, *said ? ": " : "", said);
    } else if (h->end_status != code) {
        fprintf(stderr, "dsmrun: host %s (%s): its agent ended without a word (status %d); "
                "stopping the job\n", h->host, nodes, code);
    }
    /* Otherwise the agent already printed the node's failure. */
    stop_job(l, SIGTERM, code);
}


/* For every agent to report its addresses: ssh's own ConnectTimeout ends a
 * host that cannot be reached; this ends one whose agent never answers.
 * Generous: at load 100 on 2 cores, starting two namespace hosts' agents
 * took over 30 s (tests/hosts). */
#define CONNECT_TIMEOUT_S 120.0
#define HELD_ERR_MAX      65536   /* stderr held back per host before it is ready */

extern char **environ;

static int load_hosts(struct launcher *l)
{
    char err[512];
    l->hl = calloc(1, sizeof *l->hl);
    if (!l->hl) {
        fprintf(stderr, "dsmrun: out of memory\n");
        return -ENOMEM;
    }
    if (l->opt.hosts) {
        if (hostlist_parse(l->hl, l->opt.hosts, err, sizeof err) < 0)
            goto bad;
    } else {
        FILE *f = fopen(l->opt.hostfile, "r");
        if (!f) {
            fprintf(stderr, "dsmrun: cannot read --hostfile %s: %s\n", l->opt.hostfile,
                    strerror(errno));
            return -EINVAL;
        }
        char *text = NULL;
        size_t cap = 0;
        ssize_t len = getdelim(&text, &cap, 0, f);   /* the whole file */
        fclose(f);
        int r = hostlist_parse_file(l->hl, len > 0 ? text : "", l->opt.hostfile, err,
                                    sizeof err);
        free(text);
        if (r < 0)
            goto bad;
    }
    int nodes = hostlist_assign(l->hl, l->opt.nodes, err, sizeof err);
    if (nodes < 0)
        goto bad;
    if (nodes > BOOT_MAX_NODES) {
        snprintf(err, sizeof err, "the host list gives %d slots; a job has at most %d nodes "
                 "(use -n)", nodes, BOOT_MAX_NODES);
        goto bad;
    }
    l->opt.nodes = nodes;
    return 0;
bad:
    fprintf(stderr, "dsmrun: %s\n", err);
    return -EINVAL;
}

/* The words of DSMRUN_RSH (default: ssh, never asking for a password, with
 * bounded waits for a host that does not answer), then the host and the
 * remote command. */
static char **rsh_argv(const char *host, const char *command, char **words)
{
    static const char *const ssh_default[] = {
        "ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", NULL};
    const char *rsh = getenv("DSMRUN_RSH");
    int n = 0;
    char **argv = calloc(64 + 3, sizeof *argv);
    if (!argv)
        return NULL;
    if (rsh && *rsh) {
        char *copy = strdup(rsh), *save = NULL;
        if (!copy) {
            free(argv);
            return NULL;
        }
        *words = copy;
        for (char *w = strtok_r(copy, " \t", &save); w && n < 64; w = strtok_r(NULL, " \t", &save))
            argv[n++] = w;
    } else {
        for (int i = 0; ssh_default[i]; i++)
            argv[n++] = (char *)ssh_default[i];
    }
    argv[n++] = (char *)host;
    argv[n++] = (char *)command;
    argv[n] = NULL;
    return argv;
}

/* What every remote node's environment gets from here: the DSM_ settings
 * and --env. (Not the whole environment: the remote host has its own.) */
static int collect_env(const struct launcher *l, struct remote_job *j)
{
    size_t max = (size_t)l->opt.nenv;
    for (char **e = environ; *e; e++)
        max++;
    j->env = calloc(max + 1, sizeof *j->env);
    if (!j->env)
        return -ENOMEM;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "DSM_", 4) && strchr(*e, '=') && !is_contract_var(*e))
            j->env[j->nenv++] = *e;
    for (int i = 0; i < l->opt.nenv; i++)
        j->env[j->nenv++] = (char *)l->opt.env[i];
    return 0;
}

static int start_host(struct launcher *l, struct node *h, struct remote_job *j,
                      const char *command)
{
    int ctl[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    char *words = NULL, **argv = rsh_argv(h->host, command, &words);
    int r = 0;

    if (!argv)
        return -ENOMEM;
    if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        r = -errno;
        goto done;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        r = -errno;
        goto done;
    }
    if (pid == 0) {
        /* Its own process group: a terminal's ^C is dsmrun's to act on, and
         * the agents stop in order, not by a cut connection. */
        setpgid(0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(EXIT_LAUNCH);
        if (dup2(ctl[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
            dup2(err[1], STDERR_FILENO) < 0)
            _exit(EXIT_LAUNCH);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &l->orig_mask, NULL);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(EXIT_EXEC_FAILED);
    }
    h->pid = pid;
    l->running++;
    close(ctl[0]);
    close(out[1]);
    close(err[1]);
    ctl[0] = out[1] = err[1] = -1;
    h->ctl = ctl[1];
    ctl[1] = -1;
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    h->out[0].fd = out[0];
    h->out[1].fd = err[0];
    out[0] = err[0] = -1;

    /* The job, key included, goes through ssh's stdin. It is a few KiB: the
     * pipe takes it at once. */
    j->host = (char *)h->host;
    j->first_rank = h->rank;
    j->ranks = h->ranks;
    char *text = remote_job_format(j);
    if (!text)
        r = -ENOMEM;
    else if ((r = write_all(h->ctl, text, strlen(text))) == -EPIPE)
        r = 0;    /* ssh already ended: its status will say why */
    if (text) {
        explicit_bzero(text, strlen(text));
        free(text);
    }
done:
    close_pair(ctl);
    close_pair(out);
    close_pair(err);
    free(words);
    free(argv);
    return r;
}

/* One line the agent printed before it was ready. */
static void host_line(struct launcher *l, struct node *h, const char *line)
{
    size_t plen = strlen(REMOTE_REPLY);
    if (strncmp(line, REMOTE_REPLY, plen)) {
        /* A login script's chatter: the user's to see, but not the
         * program's output. */
        fprintf(stderr, "%s\n", line);
        return;
    }
    line += plen;
    int rank, consumed = 0;
    char ip[INET_ADDRSTRLEN + 1];
    unsigned port;
    struct in_addr a;
    if (!strcmp(line, "ready")) {
        if (h->addrs == h->ranks) {
            h->ready = true;
            return;
        }
    } else if (sscanf(line, "addr %d %15[0-9.]:%u%n", &rank, ip, &port, &consumed) == 3 &&
               !line[consumed] && rank >= h->rank && rank < h->rank + h->ranks &&
               port > 0 && port < 65536 && inet_pton(AF_INET, ip, &a) == 1 &&
               l->peer_addr[rank].sin_port == 0) {
        l->peer_addr[rank] = (struct sockaddr_in){
            .sin_family = AF_INET, .sin_addr = a, .sin_port = htons((uint16_t)port)};
        h->addrs++;
        return;
    }
    fprintf(stderr, "dsmrun: host %s: unexpected answer from its agent: '%.80s'; stopping the job\n",
            h->host, line);
    stop_job(l, SIGTERM, EXIT_LAUNCH);
}

/* What a host's ssh printed on stdout before its agent was ready: its
 * answers, a line each. */
static void take_answers(struct launcher *l, struct node *h, const char *data, size_t len)
{
    for (size_t i = 0; i < len && !h->ready; i++) {
        if (!h->line && !(h->line = malloc(REMOTE_LINE_MAX + 1)))
            return;
        if (data[i] != '\n') {
            if (h->line_len < REMOTE_LINE_MAX)
                h->line[h->line_len++] = data[i];
            continue;
        }
        h->line[h->line_len] = 0;
        h->line_len = 0;
        host_line(l, h, h->line);
    }
    /* Nothing is due after "ready" until dsmrun sends the peers. */
}

#define FRAME_HEAD_MAX BOOT_ARBITER_LINE_MAX /* a frame's head, or another line */

/* What a ready agent sends on stdout: frames of its nodes' output, each
 * passed on to dsmrun's own stdout or stderr through the host's stream
 * (whole lines, never mixed with another host's), and "alive" lines. */
static void take_frames(struct launcher *l, struct node *h, const char *data, size_t len)
{
    while (len > 0 && !h->garbled) {
        if (h->frame_left) {
            size_t take = len < h->frame_left ? len : h->frame_left;
            emit_output(&h->out[h->frame_to], data, take);
            h->frame_left -= take;
            data += take;
            len -= take;
            continue;
        }
        char c = *data++;
        len--;
        if (!h->line && !(h->line = malloc(REMOTE_LINE_MAX + 1)))
            return;
        if (c != '\n') {
            bool relay = h->line_len >= 6 && !strncmp(h->line, "relay ", 6);
            if (h->line_len < (relay ? 6 + REMOTE_RELAY_MAX : FRAME_HEAD_MAX))
                h->line[h->line_len++] = c;
            continue;
        }
        h->line[h->line_len] = 0;
        h->line_len = 0;
        char kind, end;
        unsigned long long n;
        if (!strcmp(h->line, "alive"))
            continue;
        /* One line per failure across the hosts (agent.c, dsmrun.c). */
        if (!strcmp(h->line, "said")) {
            l->failure_said = true;
            continue;
        }
        if (!strncmp(h->line, "relay ", 6)) {
            if (!l->relayed)
                l->relayed = strdup(h->line + 6);
            continue;
        }
        if (arbiter_relay(l, h, h->line))
            continue;
        int status;
        if (sscanf(h->line, "end %d%c", &status, &end) == 1 && status >= 0 && status < 256) {
            h->end_status = status;
            continue;
        }
        if (sscanf(h->line, "%c %llu%c", &kind, &n, &end) == 2 && (kind == 'o' || kind == 'e') &&
            n > 0 && n <= SIZE_MAX && h->line[2] >= '0' && h->line[2] <= '9') {
            h->frame_to = kind == 'e';
            h->frame_left = (size_t)n;
            continue;
        }
        fprintf(stderr, "dsmrun: host %s: unexpected output from its agent: '%.32s' (dsmrun "
                "differs between the hosts?); stopping the job\n", h->host, h->line);
        h->garbled = true;
        stop_job(l, SIGTERM, EXIT_LAUNCH);
    }
}

static struct node *stream_host(struct launcher *l, struct output_stream *s, int *which)
{
    for (int i = 0; i < l->count; i++)
        for (int j = 0; j < 2; j++)
            if (s == &l->nodes[i].out[j]) {
                *which = j;
                return &l->nodes[i];
            }
    return NULL;
}

/* Reads a host's ssh once: its stdout is the agent's answers, then frames;
 * its stderr is held back until the agent is ready (shown if all goes
 * well, its last line quoted if not), then the user's. Returns the bytes
 * read: 0 when none were waiting, and at EOF. */
ssize_t host_output(struct launcher *l, struct output_stream *s)
{
    int which = 0;
    struct node *h = stream_host(l, s, &which);
    if (!h) {                     /* every stream is a host's: not reached */
        close_stream(s);
        return 0;
    }
    char chunk[READ_CHUNK];
    ssize_t got;
    do
        got = read(s->fd, chunk, sizeof chunk);
    while (got < 0 && errno == EINTR);
    if (got < 0 && errno == EAGAIN)
        return 0;
    if (got <= 0) {
        close_stream(s);
        return 0;
    }
    h->heard = now_s();
    if (which == 0) {
        if (!h->ready)
            take_answers(l, h, chunk, (size_t)got);
        else
            take_frames(l, h, chunk, (size_t)got);
    } else if (!h->ready) {
        if (h->errs_len + (size_t)got > HELD_ERR_MAX)
            h->errs_len = 0;     /* keep the end, which says what went wrong */
        char *e = realloc(h->errs, h->errs_len + (size_t)got + 1);
        if (!e)
            return got;
        h->errs = e;
        memcpy(h->errs + h->errs_len, chunk, (size_t)got);
        h->errs_len += (size_t)got;
    } else {
        emit_output(s, chunk, (size_t)got);
    }
    return got;
}

/* The heartbeat's period and the silence that counts as lost, from the
 * peer timeout the nodes run with (launcher.h): on dsmrun, its environment
 * and --env (checked already); on an agent, the job's. */
void heartbeat_periods(struct launcher *l)
{
    const char *v = getenv("DSM_PEER_TIMEOUT");
    char *end;
    double peer = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(peer > 0))
        peer = PEER_TIMEOUT_S;
    l->silence_s = peer / 2 > HOST_SILENCE_MIN_S ? peer / 2 : HOST_SILENCE_MIN_S;
    l->beat_s = l->silence_s / BEATS_PER_SILENCE;
}

/* "alive" goes to every agent every beat_s from a timer's signal handler,
 * not from the supervision loop: dsmrun may block for long writing its own
 * stdout (piped into a pager the user is reading), and its agents must not
 * take that for a lost launcher. Short lines on non-blocking pipes: each
 * write is whole or nothing, and never blocks; a full pipe means the agent
 * has plenty unread already, a closed one that its ssh ended, which its
 * status will tell. */
static struct launcher *beating;

static void beat_agents(int sig)
{
    (void)sig;
    int saved = errno;
    for (int i = 0; i < beating->count; i++) {
        int fd = beating->nodes[i].ctl;
        if (fd >= 0)
            (void)!write(fd, "alive\n", 6);
    }
    errno = saved;
}

static void start_beating(struct launcher *l)
{
    struct sigaction sa = {.sa_handler = beat_agents, .sa_flags = SA_RESTART};
    struct timeval period = {(time_t)l->beat_s,
                             (suseconds_t)((l->beat_s - (double)(time_t)l->beat_s) * 1e6)};
    struct itimerval every = {period, period};
    beating = l;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &every, NULL) < 0)
        fprintf(stderr, "dsmrun: cannot start the heartbeat to the agents: %s\n", strerror(errno));
}

static void stop_beating(void)
{
    struct itimerval never = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &never, NULL);
    signal(SIGALRM, SIG_IGN);
}

/* Every beat_s: a look for an agent that has said nothing for silence_s.
 * Such a host is lost — its network or the host itself, which its ssh may
 * take minutes to notice, or never — and named: otherwise the first to
 * fail would be nodes on the healthy hosts, timing out on its nodes. Its
 * ssh is killed at once (it may hang on the dead connection); the agents
 * still there stop their nodes. */
void hosts_beat(struct launcher *l)
{
    double now = now_s();
    for (int i = 0; i < l->count; i++) {
        struct node *h = &l->nodes[i];
        if (h->pid <= 0 || now - h->heard < l->silence_s)
            continue;
        /* What it said may wait unread: dsmrun itself was held up (writing
         * its stdout to a slow reader). That is no silence. */
        struct pollfd p[2] = {{.fd = h->out[0].fd, .events = POLLIN},
                              {.fd = h->out[1].fd, .events = POLLIN}};
        if (poll(p, 2, 0) > 0) {
            h->heard = now;
            continue;
        }
        char nodes[48];
        host_nodes(h, nodes, sizeof nodes);
        fprintf(stderr, "dsmrun: host %s (%s): no word from its agent for %g s (the host or "
                "its network is lost); stopping the job\n", h->host, nodes, l->silence_s);
        stop_job(l, SIGTERM, EXIT_HOST_LOST);
        kill(h->pid, SIGKILL);
        return;
    }
    l->beat = now + l->beat_s;
}

static bool all_ready(const struct launcher *l)
{
    for (int i = 0; i < l->count; i++)
        if (!l->nodes[i].ready)
            return false;
    return true;
}

/* Waits until every agent has reported its nodes' addresses. Returns 0, or
 * -1 once the job is stopping. */
static int handshake(struct launcher *l)
{
    double deadline = now_s() + CONNECT_TIMEOUT_S;
    struct node **owner = calloc(1 + 2 * (size_t)l->count, sizeof *owner);
    int *which = calloc(1 + 2 * (size_t)l->count, sizeof *which);
    if (!owner || !which) {
        free(owner);
        free(which);
        fprintf(stderr, "dsmrun: out of memory; stopping the job\n");
        stop_job(l, SIGTERM, EXIT_LAUNCH);
        return -1;
    }
    while (l->phase == JOB_RUNNING && !all_ready(l)) {
        int n = 0;
        l->pfds[n++] = (struct pollfd){.fd = l->sigfd, .events = POLLIN};
        for (int i = 0; i < l->count; i++)
            for (int j = 0; j < 2; j++)
                if (l->nodes[i].out[j].fd >= 0) {
                    owner[n] = &l->nodes[i];
                    which[n] = j;
                    l->pfds[n++] = (struct pollfd){.fd = l->nodes[i].out[j].fd, .events = POLLIN};
                }
        double left = deadline - now_s();
        if (left <= 0) {
            for (int i = 0; i < l->count; i++)
                if (!l->nodes[i].ready) {
                    fprintf(stderr, "dsmrun: host %s did not answer within %g s; stopping the job\n",
                            l->nodes[i].host, CONNECT_TIMEOUT_S);
                    break;
                }
            stop_job(l, SIGTERM, EXIT_LAUNCH);
            break;
        }
        int ready = poll(l->pfds, (nfds_t)n, (int)ceil(left * 1000));
        if (ready < 0 && errno != EINTR) {
            fprintf(stderr, "dsmrun: poll: %s; stopping the job\n", strerror(errno));
            stop_job(l, SIGTERM, EXIT_LAUNCH);
            break;
        }
        for (int i = 1; ready > 0 && i < n; i++)
            if (l->pfds[i].revents)
                host_output(l, &owner[i]->out[which[i]]);
        /* Signals last: an ssh that ended has had its stderr read. */
        if (ready > 0 && l->pfds[0].revents)
            handle_signals(l);
    }
    free(owner);
    free(which);
    return l->phase == JOB_RUNNING ? 0 : -1;
}

/* Every node's address to every agent: they start their nodes. */
static int send_peers(struct launcher *l)
{
    bool loopback = false, other = false;
    const char *lo_host = NULL;
    for (int i = 0; i < l->count; i++) {
        const struct node *h = &l->nodes[i];
        for (int r = h->rank; r < h->rank + h->ranks; r++) {
            bool lo = (ntohl(l->peer_addr[r].sin_addr.s_addr) >> 24) == 127;
            if (lo && !lo_host)
                lo_host = h->host;
            loopback |= lo;
            other |= !lo;
        }
    }
    if (loopback && other) {
        fprintf(stderr, "dsmrun: host %s: its nodes bound a loopback address, which the other "
                "hosts cannot reach; name it by an address they reach; stopping the job\n",
                lo_host);
        stop_job(l, SIGTERM, EXIT_LAUNCH);
        return -1;
    }
    struct node tmp[BOOT_MAX_NODES];
    for (int r = 0; r < l->opt.nodes; r++)
        tmp[r].addr = l->peer_addr[r];
    char *peers = format_peers(tmp, l->opt.nodes);
    if (!peers) {
        fprintf(stderr, "dsmrun: out of memory; stopping the job\n");
        stop_job(l, SIGTERM, EXIT_LAUNCH);
        return -1;
    }
    for (int i = 0; i < l->count; i++) {
        struct node *h = &l->nodes[i];
        /* What ssh said on the way (warnings) is the user's. */
        if (h->errs_len)
            fwrite(h->errs, 1, h->errs_len, stderr);
        h->errs_len = 0;
        if (h->ctl >= 0 && (write_all(h->ctl, "peers ", 6) < 0 ||
                            write_all(h->ctl, peers, strlen(peers)) < 0 ||
                            write_all(h->ctl, "\n", 1) < 0))
            continue;   /* that ssh ended: its status will tell */
        /* From here only short lines go down: an agent that stopped
         * reading must not stall dsmrun. */
        if (h->ctl >= 0)
            fcntl(h->ctl, F_SETFL, O_NONBLOCK);
        h->heard = now_s();   /* its heartbeat starts with its nodes */
    }
    heartbeat_periods(l);
    l->beat = now_s() + l->beat_s;
    fflush(stderr);
    free(peers);
    return 0;
}

int run_hosts(struct launcher *l)
{
    int r;
    if (load_hosts(l) < 0)
        return EXIT_USAGE;
    /* An agent that ended makes writes to its stdin fail; its status says
     * why, so the write's EPIPE is enough. (ssh gets SIGPIPE back.) */
    signal(SIGPIPE, SIG_IGN);
    int hosts = 0;
    for (int i = 0; i < l->hl->count; i++)
        hosts += l->hl->hosts[i].ranks > 0;
    l->peer_addr = calloc((size_t)l->opt.nodes, sizeof *l->peer_addr);
    if (!l->peer_addr || alloc_children(l, hosts, 0) < 0 || draw_key(l) < 0 ||
        prepare_env_and_signals(l, NULL) < 0)
        return EXIT_LAUNCH;
    for (int i = 0, k = 0; i < l->hl->count; i++) {
        const struct host_entry *e = &l->hl->hosts[i];
        if (e->ranks == 0)
            continue;
        struct node *h = &l->nodes[k++];
        h->host = e->name;
        h->rank = e->first_rank;
        h->ranks = e->ranks;
        h->out[0].rank = h->out[1].rank = -1;   /* the agents prefix their nodes' lines */
        h->end_status = -1;
    }

    char self[PATH_MAX], cwd[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0 || !getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "dsmrun: cannot find its own path or the working directory: %s\n",
                strerror(errno));
        return EXIT_LAUNCH;
    }
    self[len] = 0;
    char *quoted = remote_shell_quote(self), *command = NULL;
    if (!quoted || asprintf(&command, "%s --agent", quoted) < 0) {
        free(quoted);
        fprintf(stderr, "dsmrun: out of memory\n");
        return EXIT_LAUNCH;
    }
    free(quoted);
    struct remote_job j = {
        .job_id = l->job_id, .nodes = l->opt.nodes, .launch_ns = l->launch_ns,
        .tag_output = l->opt.tag_output, .cwd = cwd, .argv = l->opt.prog_argv,
    };
    memcpy(j.key, l->key, sizeof j.key);
    while (j.argv[j.argc])
        j.argc++;
    if (collect_env(l, &j) < 0) {
        fprintf(stderr, "dsmrun: out of memory\n");
        free(command);
        return EXIT_LAUNCH;
    }
    for (int i = 0; i < l->count; i++)
        if ((r = start_host(l, &l->nodes[i], &j, command)) < 0) {
            fprintf(stderr, "dsmrun: cannot start ssh for host %s: %s; stopping the job\n",
                    l->nodes[i].host, strerror(-r));
            stop_job(l, SIGTERM, EXIT_LAUNCH);
            break;
        }
    explicit_bzero(j.key, sizeof j.key);
    free(j.env);
    free(command);
    if (l->phase == JOB_RUNNING && handshake(l) == 0 && send_peers(l) == 0)
        start_beating(l);
    r = supervise(l);
    stop_beating();
    return r;
}

