/*
 * dsmrun.c — starts the N processes of a dsm job and watches over them, on
 * this machine or, with --hosts, on several hosts through ssh.
 *
 * The launcher binds every node's UDP socket itself before forking, so each
 * node starts knowing every peer's address and no rendezvous is needed
 * (src/base/launch.h is the contract). It then supervises the job: the job
 * succeeds when every node exits 0; the first failure (a node exiting
 * non-zero or killed by a signal, --timeout, or a signal sent to dsmrun)
 * stops the whole job: a signal to every node, SIGKILL STOP_GRACE_S later.
 * Once a failure is seen, every wait is bounded.
 *
 * On several hosts (--hosts, --hostfile), dsmrun starts one agent per host
 * over ssh — dsmrun itself, run as `dsmrun --agent` — and supervises the
 * agents as it supervises nodes (hosts.c); each agent starts and
 * supervises its host's nodes with the code here (agent.c). launcher.h
 * holds the state the three share.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher.h"
#include "base/config.h"
#include "net/net.h"
#include "runtime/settings.h"

/* ------------------------------------------------------------------------ */
/* Command line                                                             */

enum {
    OPT_TIMEOUT = 256, OPT_BIND, OPT_STATS, OPT_STATS_JSON, OPT_ENV,
    OPT_HELP_ENV, OPT_VERSION, OPT_PROTOCOL, OPT_LIST_PROTOCOLS, OPT_SHARED_GLOBALS, OPT_TRACE, OPT_PROFILE, OPT_THREADS,
    OPT_HOSTS, OPT_HOSTFILE, OPT_AGENT, OPT_SLOW,
};

static const struct option long_options[] = {
    {"nodes",      required_argument, NULL, 'n'},
    {"tag-output", no_argument,       NULL, 't'},
    {"timeout",    required_argument, NULL, OPT_TIMEOUT},
    {"bind",       required_argument, NULL, OPT_BIND},
    {"stats",      no_argument,       NULL, OPT_STATS},
    {"shared-globals", no_argument,   NULL, OPT_SHARED_GLOBALS},
    {"threads",    required_argument, NULL, OPT_THREADS},
    {"stats-json", required_argument, NULL, OPT_STATS_JSON},
    {"trace",      required_argument, NULL, OPT_TRACE},
    {"profile",    required_argument, NULL, OPT_PROFILE},
    {"env",        required_argument, NULL, OPT_ENV},
    {"protocol",   required_argument, NULL, OPT_PROTOCOL},
    {"list-protocols", no_argument,   NULL, OPT_LIST_PROTOCOLS},
    {"hosts",      required_argument, NULL, OPT_HOSTS},
    {"hostfile",   required_argument, NULL, OPT_HOSTFILE},
    {"agent",      no_argument,       NULL, OPT_AGENT},
    {"slow",       required_argument, NULL, OPT_SLOW},
    {"help-env",   optional_argument, NULL, OPT_HELP_ENV},
    {"help",       no_argument,       NULL, 'h'},
    {"version",    no_argument,       NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Variables dsmrun sets per job or per node: --env may not override them. */
static const char *const contract_vars[] = {
    BOOT_ENV_RANK, BOOT_ENV_NODES, BOOT_ENV_JOB,
    BOOT_ENV_SOCK_FD, BOOT_ENV_KEY_FD, BOOT_ENV_PEERS, BOOT_ENV_LAUNCH, BOOT_ENV_LIFE_FD,
    BOOT_ENV_ARBITER_FD,
};

/* The protocols, as coherence/protocols.def lists them. */
static const struct {
    const char *name, *description;
} protocols[] = {
#define PROTOCOL(name, ops, can, description) {name, description},
#include "coherence/protocols.def"
#undef PROTOCOL
};
#define NPROTOCOLS (sizeof protocols / sizeof protocols[0])

static void print_usage(FILE *out)
{
    fprintf(out,
        "usage: dsmrun -n N [options] prog [args...]\n"
        "       dsmrun --hosts H1,H2:2,... [-n N] [options] prog [args...]\n"
        "Starts N processes of prog, one per dsm node (node 0 is the master), on this\n"
        "machine or, with --hosts or --hostfile, on those hosts through ssh.\n"
        "\n"
        "  -n, -np, --nodes N     number of nodes, 1 to %d (with --hosts: default one per slot)\n"
        "      --hosts LIST       hosts, comma-separated, each HOST or HOST:SLOTS; nodes fill\n"
        "                         them in order (ssh, or the command in DSMRUN_RSH)\n"
        "      --hostfile FILE    hosts one a line: HOST, HOST:SLOTS or HOST slots=SLOTS\n"
        "  -t, --tag-output       prefix every line the nodes print with [rank]\n"
        "      --timeout S        stop the job after S seconds (decimals allowed); exit 124\n"
        "      --bind ADDR        IPv4 address the nodes' sockets bind to (default 127.0.0.1;\n"
        "                         0.0.0.0: every interface, the peers told 127.0.0.1;\n"
        "                         with --hosts, each host's address toward dsmrun)\n"
        "      --stats            print per-node statistics at the end (sets DSM_STATS=1)\n"
        "      --stats-json FILE  write the statistics as JSON to FILE (sets DSM_STATS_JSON)\n"
        "      --trace FILE       trace messages, faults and synchronisation into FILE.<rank>\n"
        "                         (sets DSM_TRACE; tools/dsm-trace and tools/dsm-model read it)\n"
        "      --profile FILE     record the sharing profile into FILE.<rank>: faults by source\n"
        "                         line, diffs' bytes by allocation site, locks, barriers (sets\n"
        "                         DSM_PROFILE; tools/dsm-profile FILE prints the report)\n"
        "      --env NAME=VALUE   set an environment variable on every node (repeatable)\n"
        "      --protocol P       coherence protocol, one of those below (sets DSM_PROTOCOL)\n"
        "      --list-protocols   list the coherence protocols, one a line, and exit\n"
        "      --shared-globals   share the program's globals (sets DSM_SHARED_GLOBALS=1)\n"
        "      --threads T        application threads per node (sets DSM_THREADS; docs/design.md)\n"
        "      --slow NODE=F,...  give node NODE only the fraction F (0 < F <= 1) of a CPU,\n"
        "                         to mimic a slower machine: dsmrun stops and continues it\n"
        "                         (SIGSTOP/SIGCONT), running F of every 1 ms (repeatable;\n"
        "                         one host only)\n"
        "      --help-env[=all]   list the environment settings users tune (all: the expert\n"
        "                         and test ones too, marked), and exit\n"
        "  -h, --help             print this help, and exit\n"
        "      --version          print the version, and exit\n"
        "\n"
        "Options after prog belong to prog. Exit status: 0 when every node exits 0;\n"
        "otherwise that of the first node to fail (128+N for signal N), 1 when a node\n"
        "exits 0 without joining the job (prog is not a dsm program) or before\n"
        "dsm_finish, 124 after --timeout, 125 when dsmrun itself fails, 255 when a\n"
        "host is lost (--hosts), 2 for a usage error (bad options and settings, an\n"
        "unwritable --stats-json, before any node starts), 127 when prog cannot be\n"
        "run (not found or not executable, as a shell says; before any node starts).\n",
        BOOT_MAX_NODES);
    fprintf(out, "\nCoherence protocols (docs/protocols.md):\n");
    for (size_t i = 0; i < NPROTOCOLS; i++)
        fprintf(out, "  %-9s %s\n", protocols[i].name, protocols[i].description);
}

enum parse_result { PARSE_RUN, PARSE_DONE, PARSE_ERROR };

static bool is_protocol(const char *s)
{
    for (size_t i = 0; i < NPROTOCOLS; i++)
        if (!strcmp(protocols[i].name, s))
            return true;
    return false;
}

static bool parse_nodes(const char *s, int *nodes)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;         /* strtol would accept " 4", "+4" and "-4" */
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno || *end || n < 1 || n > BOOT_MAX_NODES)
        return false;
    *nodes = (int)n;
    return true;
}

/* "NODE=FRACTION[,NODE=FRACTION...]" into fractions[NODE]. On failure,
 * *bad points at the item at fault. The highest node named goes to *max
 * with its item, for the check against the node count once that is known. */
static bool parse_slow(const char *s, double *fractions, int *max, const char **max_item,
                       const char **bad)
{
    for (const char *item = s;; item++) {
        char *end;
        *bad = item;
        if (*item < '0' || *item > '9')
            return false;
        errno = 0;
        long node = strtol(item, &end, 10);
        if (errno || *end != '=' || node >= BOOT_MAX_NODES)
            return false;
        const char *f = end + 1;
        if (!((*f >= '0' && *f <= '9') || *f == '.'))
            return false;     /* no sign, space, "inf" or "nan" */
        double fraction = strtod(f, &end);
        if (errno || end == f || (*end && *end != ',') || !(fraction > 0 && fraction <= 1))
            return false;
        fractions[node] = fraction;
        if (node > *max) {
            *max = (int)node;
            *max_item = item;
        }
        if (!*end)
            return true;
        item = end;
    }
}

static bool parse_timeout(const char *s, double *seconds)
{
    char *end;
    errno = 0;
    double t = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(t) || t <= 0)
        return false;
    *seconds = t;
    return true;
}

bool is_contract_var(const char *assignment)
{
    size_t name_len = strcspn(assignment, "=");
    for (size_t i = 0; i < sizeof contract_vars / sizeof contract_vars[0]; i++)
        if (strlen(contract_vars[i]) == name_len &&
            !strncmp(assignment, contract_vars[i], name_len))
            return true;
    return false;
}

/* The option as the user wrote it, for error messages. */
static const char *option_text(char **argv, int opt, char *buf, size_t len)
{
    const char *arg = argv[optind - 1];
    if (opt > 0 && opt < 256 && strncmp(arg, "--", 2)) {
        snprintf(buf, len, "-%c", opt);
        return buf;
    }
    return arg;
}

/* For an unknown long option, " (did you mean --stats?)": the nearest
 * option if near enough to be the one meant (a third of its letters wrong,
 * or two), else those it abbreviates ambiguously; "" if none. */
static void suggest_option(const char *arg, char *out, size_t len)
{
    const char *word = arg + 2;
    size_t word_len = strcspn(word, "=");
    char name[64];
    int best = -1, best_d = 0, used = 0, prefixed = 0;
    out[0] = 0;
    if (strncmp(arg, "--", 2) || word_len == 0 || word_len >= sizeof name)
        return;
    snprintf(name, sizeof name, "%.*s", (int)word_len, word);
    for (int i = 0; long_options[i].name; i++) {
        int d = config_edit_distance(name, long_options[i].name);
        if (best < 0 || d < best_d) {
            best = i;
            best_d = d;
        }
    }
    if (config_typo_near(best_d, (int)word_len) && best_d < (int)word_len) {
        snprintf(out, len, " (did you mean --%s?)", long_options[best].name);
        return;
    }
    for (int i = 0; long_options[i].name; i++)
        prefixed += !strncmp(long_options[i].name, name, word_len);
    for (int i = 0, k = 0; long_options[i].name && prefixed > 1; i++) {
        if (strncmp(long_options[i].name, name, word_len))
            continue;
        k++;
        int n = snprintf(out + used, (size_t)used < len ? len - (size_t)used : 0, "%s--%s%s",
                         k == 1 ? " (did you mean " : k == prefixed ? " or " : ", ",
                         long_options[i].name, k == prefixed ? "?)" : "");
        used += n > 0 ? n : 0;
    }
}

/* Parses argv into *o. PARSE_DONE: --help and the like were answered. On
 * PARSE_ERROR, err holds one line without the "dsmrun: " prefix. */
static enum parse_result parse_options(struct options *o, int argc, char **argv,
                                       char *err, size_t errlen)
{
    char optbuf[8];
    int opt;

    *o = (struct options){.bind_addr.s_addr = htonl(INADDR_LOOPBACK), .slow_max = -1};
    o->env = calloc((size_t)argc, sizeof *o->env);
    if (!o->env) {
        snprintf(err, errlen, "out of memory");
        return PARSE_ERROR;
    }
    opterr = 0;     /* messages are ours, one line each */
    /* '+': stop at the program, so its options stay its own; ':': tell a
     * missing value apart from an unknown option. */
    while ((opt = getopt_long(argc, argv, "+:n:th", long_options, NULL)) != -1) {
        switch (opt) {
        case 'n':
            /* mpirun's -np N: getopt reads it as -n with the value "p". */
            if (strcmp(optarg, "p") == 0) {
                if (optind >= argc) {
                    snprintf(err, errlen, "option '-np' needs a value");
                    return PARSE_ERROR;
                }
                optarg = argv[optind++];
            }
            if (!parse_nodes(optarg, &o->nodes)) {
                snprintf(err, errlen, "-n needs a whole number of nodes from 1 to %d, not '%s'",
                         BOOT_MAX_NODES, optarg);
                return PARSE_ERROR;
            }
            break;
        case 't':
            o->tag_output = true;
            break;
        case OPT_TIMEOUT:
            if (!parse_timeout(optarg, &o->timeout_s)) {
                snprintf(err, errlen, "--timeout needs a positive number of seconds, not '%s'",
                         optarg);
                return PARSE_ERROR;
            }
            break;
        case OPT_HOSTS:
            o->hosts = optarg;
            break;
        case OPT_HOSTFILE:
            o->hostfile = optarg;
            break;
        case OPT_AGENT:
            o->agent = true;
            break;
        case OPT_SLOW: {
            const char *bad;
            if (!o->slow && !(o->slow = calloc(BOOT_MAX_NODES, sizeof *o->slow))) {
                snprintf(err, errlen, "out of memory");
                return PARSE_ERROR;
            }
            if (!parse_slow(optarg, o->slow, &o->slow_max, &o->slow_arg, &bad)) {
                snprintf(err, errlen, "--slow needs NODE=FRACTION[,...] with 0 < FRACTION <= 1, "
                         "not '%.*s'", *bad ? (int)strcspn(bad, ",") : (int)strlen(optarg),
                         *bad ? bad : optarg);
                return PARSE_ERROR;
            }
            break;
        }
        case OPT_BIND:
            o->bind_given = true;
            if (inet_pton(AF_INET, optarg, &o->bind_addr) != 1) {
                snprintf(err, errlen, "--bind needs an IPv4 address such as 127.0.0.1, not '%s'",
                         optarg);
                return PARSE_ERROR;
            }
            break;
        case OPT_STATS:
            o->stats = true;
            break;
        case OPT_SHARED_GLOBALS:
            o->shared_globals = true;
            break;
        case OPT_THREADS:
            o->threads = optarg; /* checked with the table's own range (check_settings) */
            break;
        case OPT_STATS_JSON:
            if (!*optarg) {
                snprintf(err, errlen, "--stats-json needs a file name");
                return PARSE_ERROR;
            }
            o->stats_json = optarg;
            break;
        case OPT_TRACE:
            if (!*optarg) {
                snprintf(err, errlen, "--trace needs a file name");
                return PARSE_ERROR;
            }
            o->trace = optarg;
            break;
        case OPT_PROFILE:
            if (!*optarg) {
                snprintf(err, errlen, "--profile needs a file name");
                return PARSE_ERROR;
            }
            o->profile = optarg;
            break;
        case OPT_ENV:
            if (!strchr(optarg, '=') || *optarg == '=') {
                snprintf(err, errlen, "--env needs NAME=VALUE, not '%s'", optarg);
                return PARSE_ERROR;
            }
            if (is_contract_var(optarg)) {
                snprintf(err, errlen, "--env cannot set %.*s: dsmrun sets it for every node",
                         (int)strcspn(optarg, "="), optarg);
                return PARSE_ERROR;
            }
            o->env[o->nenv++] = optarg;
            break;
        case OPT_PROTOCOL:
            if (!is_protocol(optarg)) {
                snprintf(err, errlen, "--protocol must be one of %s, not '%s'",
                         config_protocols, optarg);
                return PARSE_ERROR;
            }
            o->protocol = optarg;
            break;
        case OPT_LIST_PROTOCOLS:
            for (size_t i = 0; i < NPROTOCOLS; i++)
                printf("%s\n", protocols[i].name);
            return PARSE_DONE;
        case OPT_HELP_ENV:
            if (optarg && strcmp(optarg, "all")) {
                snprintf(err, errlen, "--help-env=%.64s: expected --help-env or --help-env=all", optarg);
                return PARSE_ERROR;
            }
            config_print_help(stdout, optarg != NULL);
            return PARSE_DONE;
        case 'h':
            print_usage(stdout);
            return PARSE_DONE;
        case OPT_VERSION:
            printf("dsmrun (dsm) %s\n", DSMRUN_VERSION);
            return PARSE_DONE;
        case ':':
            snprintf(err, errlen, "option '%s' needs a value",
                     option_text(argv, optopt, optbuf, sizeof optbuf));
            return PARSE_ERROR;
        default: {
            const char *text = option_text(argv, optopt, optbuf, sizeof optbuf);
            char hint[160];
            suggest_option(text, hint, sizeof hint);
            snprintf(err, errlen, "unknown option '%s'%s (see dsmrun --help)", text, hint);
            return PARSE_ERROR;
        }
        }
    }
    if (o->agent)
        return PARSE_RUN;     /* everything else comes on stdin */
    if (o->hosts && o->hostfile) {
        snprintf(err, errlen, "--hosts and --hostfile cannot be used together");
        return PARSE_ERROR;
    }
    if ((o->hosts || o->hostfile) && o->bind_given) {
        snprintf(err, errlen, "--bind is for one host: with --hosts each host binds its "
                 "address toward dsmrun");
        return PARSE_ERROR;
    }
    if (o->nodes == 0 && !o->hosts && !o->hostfile) {
        snprintf(err, errlen, "missing -n N, the number of nodes (see dsmrun --help)");
        return PARSE_ERROR;
    }
    if (o->slow && (o->hosts || o->hostfile)) {
        snprintf(err, errlen, "--slow is for jobs on one host, not with --hosts or --hostfile "
                 "(slow a host's nodes with its own means, e.g. a CPU quota)");
        return PARSE_ERROR;
    }
    if (o->slow_max >= o->nodes) {
        snprintf(err, errlen, "--slow names node %d ('%.*s'), but the job has %d node%s (0 to %d)",
                 o->slow_max, (int)strcspn(o->slow_arg, ","), o->slow_arg, o->nodes,
                 o->nodes == 1 ? "" : "s", o->nodes - 1);
        return PARSE_ERROR;
    }
    if (optind >= argc) {
        snprintf(err, errlen, "missing the program to run (see dsmrun --help)");
        return PARSE_ERROR;
    }
    o->prog_argv = argv + optind;
    return PARSE_RUN;
}

/* ------------------------------------------------------------------------ */
/* Preparing the job                                                        */

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A socket or pipe created while fd 0, 1 or 2 is closed would take its
 * number, and the children's stdin/stdout redirections would clobber it. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
            open("/dev/null", O_RDWR) != fd)
            exit(EXIT_LAUNCH);
}

static int fill_random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t got = getrandom(p, len, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += got;
        len -= (size_t)got;
    }
    return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t put = write(fd, p, len);
        if (put < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += put;
        len -= (size_t)put;
    }
    return 0;
}

/* Large buffers absorb bursts of page traffic. The FORCE variants exceed
 * net.core.rmem_max but need CAP_NET_ADMIN; without it the plain ones give
 * what the system allows, which is good enough. */
static void set_socket_buffer(int fd, int force_opt, int opt)
{
    int size = SOCKET_BUFFER;
    if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof size) < 0)
        (void)setsockopt(fd, SOL_SOCKET, opt, &size, sizeof size);
}

static int open_node_socket(struct node *n, struct in_addr addr)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr};
    socklen_t salen = sizeof sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    set_socket_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    set_socket_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    /* Port 0: the kernel picks, so two jobs on one machine never collide. */
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&n->addr, &salen) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    n->sock = fd;
    return 0;
}

/* "a.b.c.d:port,..." in rank order, from the addresses actually bound. */
char *format_peers(const struct node *nodes, int count)
{
    size_t cap = (size_t)count * sizeof "255.255.255.255:65535," + 1;
    char *peers = malloc(cap), *p = peers;
    if (!peers)
        return NULL;
    for (int i = 0; i < count; i++) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &nodes[i].addr.sin_addr, ip, sizeof ip);
        p += snprintf(p, cap - (size_t)(p - peers), "%s%s:%u", i ? "," : "", ip,
                      ntohs(nodes[i].addr.sin_port));
    }
    return peers;
}

static int make_absolute(const char *path, char **abs)
{
    if (path[0] == '/') {
        *abs = strdup(path);
        return *abs ? 0 : -ENOMEM;
    }
    char *cwd = getcwd(NULL, 0);
    if (!cwd)
        return -errno;
    int r = asprintf(abs, "%s/%s", cwd, path);
    free(cwd);
    return r < 0 ? -ENOMEM : 0;
}

/* The variables every node shares go into dsmrun's own environment, which
 * the children inherit; only the per-node ones are set after fork. Options
 * come after --env so that --stats wins over --env DSM_STATS=0. */
static int export_job_env(const struct launcher *l, const char *peers)
{
    const struct options *o = &l->opt;
    char buf[32];

    for (int i = 0; i < o->nenv; i++) {
        const char *eq = strchr(o->env[i], '=');
        char *name = strndup(o->env[i], (size_t)(eq - o->env[i]));
        int r = name ? setenv(name, eq + 1, 1) : -1;
        free(name);
        if (r < 0)
            return -errno;
    }
    if (o->protocol && setenv("DSM_PROTOCOL", o->protocol, 1) < 0)
        return -errno;
    if (export_transport(l) < 0)
        return -errno;
    if (o->stats && setenv("DSM_STATS", "1", 1) < 0)
        return -errno;
    if (o->shared_globals && setenv("DSM_SHARED_GLOBALS", "1", 1) < 0)
        return -errno;
    if (o->threads && setenv("DSM_THREADS", o->threads, 1) < 0)
        return -errno;
    if (o->stats_json) {
        char *abs;
        int r = make_absolute(o->stats_json, &abs);
        if (r < 0)
            return r;
        r = setenv("DSM_STATS_JSON", abs, 1);
        free(abs);
        if (r < 0)
            return -errno;
    }
    if (o->trace) {
        char *abs;
        int r = make_absolute(o->trace, &abs);
        if (r < 0)
            return r;
        r = setenv("DSM_TRACE", abs, 1);
        free(abs);
        if (r < 0)
            return -errno;
    }
    if (o->profile) {
        char *abs;
        int r = make_absolute(o->profile, &abs);
        if (r < 0)
            return r;
        r = setenv("DSM_PROFILE", abs, 1);
        free(abs);
        if (r < 0)
            return -errno;
    }

    if (!peers)                 /* MODE_HOSTS: the agents set the contract */
        return 0;
    if (setenv(BOOT_ENV_PEERS, peers, 1) < 0)
        return -errno;
    snprintf(buf, sizeof buf, "%d", o->nodes);
    if (setenv(BOOT_ENV_NODES, buf, 1) < 0)
        return -errno;
    snprintf(buf, sizeof buf, "%" PRIu64, l->launch_ns);
    if (setenv(BOOT_ENV_LAUNCH, buf, 1) < 0)
        return -errno;
    snprintf(buf, sizeof buf, "%016" PRIx64, l->job_id);
    return setenv(BOOT_ENV_JOB, buf, 1) < 0 ? -errno : 0;
}

extern char **environ;

/* A DSM_* name dsm does not know (DSM_PAGESIZE=4096) would be ignored in
 * silence by every node: said here once for the job, in one line, with the
 * name meant. The job runs: the name may be another program's. */
static void warn_unknown_settings(const struct options *o)
{
    int nenv = 0;
    while (environ[nenv])
        nenv++;
    const char **all = calloc((size_t)(nenv + o->nenv) + 1, sizeof *all);
    if (!all)
        return;
    memcpy(all, environ, (size_t)nenv * sizeof *all);
    memcpy(all + nenv, o->env, (size_t)o->nenv * sizeof *all);
    char names[1024];
    int n = config_unknown_names(all, nenv + o->nenv, names, sizeof names);
    if (n)
        fprintf(stderr, "dsmrun: warning: %s %s: ignored (dsmrun --help-env lists them)\n", names,
                n == 1 ? "is not a dsm setting" : "are not dsm settings");
    free(all);
}

void say_warnings(const char *warn)
{
    for (const char *w = warn; *w;) {
        size_t len = strcspn(w, "\n");
        fprintf(stderr, "dsmrun: warning: %.*s\n", (int)len, w);
        w += len + (w[len] == '\n');
    }
}

/* The settings the nodes will see — the environment, --env over it, and
 * the options that set a variable over both (export_job_env) — checked
 * with the nodes' own code (config.c), so that a bad value is said once,
 * here, not once per node. */
static int check_settings(struct launcher *l)
{
    const struct options *o = &l->opt;
    const char **over = calloc((size_t)o->nenv + 6, sizeof *over);
    char protocol[64], threads[64], trace[PATH_MAX + 16], profile[PATH_MAX + 16], err[PATH_MAX + 320];
    int n = 0;
    if (!over) {
        fprintf(stderr, "dsmrun: out of memory\n");
        return -ENOMEM;
    }
    for (int i = 0; i < o->nenv; i++)
        over[n++] = o->env[i];
    if (o->protocol) {
        snprintf(protocol, sizeof protocol, "DSM_PROTOCOL=%s", o->protocol);
        over[n++] = protocol;
    }
    if (o->stats)
        over[n++] = "DSM_STATS=1";
    if (o->shared_globals)
        over[n++] = "DSM_SHARED_GLOBALS=1";
    if (o->threads) {
        snprintf(threads, sizeof threads, "DSM_THREADS=%.40s", o->threads);
        over[n++] = threads;
    }
    if (o->trace) {
        snprintf(trace, sizeof trace, "DSM_TRACE=%s", o->trace);
        over[n++] = trace;
    }
    if (o->profile) {
        snprintf(profile, sizeof profile, "DSM_PROFILE=%s", o->profile);
        over[n++] = profile;
    }
    warn_unknown_settings(o);
    struct dsm_config cfg;
    /* The table's types and ranges, then what the values mean (a directory,
     * a file, a schedule, an address): on this host only when the nodes
     * run here; with --hosts each node checks its own at start. */
    int r = config_load_over(&cfg, over, n, err, sizeof err);
    if (r == 0)
        r = settings_check(&cfg, !o->hosts && !o->hostfile, err, sizeof err);
    if (r == 0)
        l->auto_ucx = choose_ucx(o, &cfg, over, n, &l->auto_ucx_tls);
    if (r == 0 && cfg.net_transport == NET_TRANSPORT_UCX && !o->hosts && !o->hostfile) {
        /* UCX_* are UCX's to judge, by the UCX the nodes will load. */
        char warn[1024];
        r = net_check_ucx_settings(over, n, err, sizeof err, warn, sizeof warn);
        say_warnings(warn);
        if (r < 0) {
            free(over);
            fprintf(stderr, "dsmrun: %s\n", err);
            return r;
        }
    }
    free(over);
    if (r < 0) {
        /* A bad value the user typed as an option is named as that option,
         * not as the variable it sets (other refusals name both already). */
        const struct { const char *var, *opt, *given; bool any; } typed[] = {
            {"DSM_THREADS=", "--threads ", o->threads, false},
            {"DSM_PROTOCOL=", "--protocol ", o->protocol, false},
            {"DSM_TRACE=", "--trace ", o->trace, true}, {"DSM_PROFILE=", "--profile ", o->profile, true}};
        for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
            size_t len = strlen(typed[i].var);
            const char *why = strstr(err, ": ");
            if (typed[i].given && !strncmp(err, typed[i].var, len) && why &&
                (typed[i].any || !strncmp(why, ": expected", 10))) {
                fprintf(stderr, "dsmrun: %s%s (see dsmrun --help)\n", typed[i].opt, err + len);
                return r;
            }
        }
        fprintf(stderr, "dsmrun: %s (see dsmrun --help-env)\n", err);
        return r;
    }
    /* With --hosts the file is on node 0's host: its agent checks it. */
    const char *json = o->stats_json ? o->stats_json : cfg.stats_json;
    if (json && !o->hosts && !o->hostfile) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, o->stats_json ? "--stats-json %s" : "DSM_STATS_JSON=%s", json);
        return check_stats_json(json, what);
    }
    return 0;
}

/* Signals arrive through a signalfd so that the supervision loop sees them,
 * output and the clock in one poll. A signal dsmrun was started with ignored
 * (nohup, a background job) stays ignored: it is not ours to act on. */
static int watch_signals(struct launcher *l)
{
    static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    /* Under a terminal, ^Z and the shell's continue reach dsmrun and node 0
     * (its process group); dsmrun passes them on to the other nodes. */
    if (l->interactive) {
        sigaddset(&set, SIGTSTP);
        sigaddset(&set, SIGCONT);
    }
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaddset(&set, stop_signals[i]);
    }
    /* An inherited SIG_IGN for SIGCHLD would make the kernel reap the nodes
     * itself, and their statuses would be lost. */
    signal(SIGCHLD, SIG_DFL);
    /* Nor is a child's stop or continue news: --slow's duty cycle makes
     * hundreds a second, each of which would wake the loop for nothing. */
    struct sigaction chld = {.sa_handler = SIG_DFL, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGCHLD, &chld, NULL);
    if (sigprocmask(SIG_BLOCK, &set, &l->orig_mask) < 0)
        return -errno;
    l->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return l->sigfd < 0 ? -errno : 0;
}

/* On an agent, messages name the host too. */
const char *agent_host;

/* "node 3", or on an agent "node 3 on host h2". */
const char *node_label(int rank, char *buf, size_t len)
{
    if (agent_host)
        snprintf(buf, len, "node %d on host %s", rank, agent_host);
    else
        snprintf(buf, len, "node %d", rank);
    return buf;
}

/* count children, the first with rank first_rank; their output goes to
 * dsmrun's with the prefix of their rank under --tag-output. */
int alloc_children(struct launcher *l, int count, int first_rank)
{
    l->count = count;
    l->nodes = calloc((size_t)count, sizeof *l->nodes);
    l->pfds = calloc(2 + 3 * (size_t)count, sizeof *l->pfds);
    l->pstreams = calloc(2 + 3 * (size_t)count, sizeof *l->pstreams);
    if (!l->nodes || !l->pfds || !l->pstreams) {
        fprintf(stderr, "dsmrun: out of memory\n");
        return -ENOMEM;
    }
    for (int i = 0; i < count; i++) {
        struct node *node = &l->nodes[i];
        node->rank = first_rank + i;
        node->sock = -1;
        node->ctl = -1;
        node->life = -1;
        node->arbiter = -1;
        node->out[0] = (struct output_stream){.fd = -1, .rank = node->rank, .to = stdout};
        node->out[1] = (struct output_stream){.fd = -1, .rank = node->rank, .to = stderr};
    }
    return 0;
}

int open_sockets(struct launcher *l)
{
    for (int i = 0; i < l->count; i++) {
        int r = open_node_socket(&l->nodes[i], l->opt.bind_addr);
        if (r < 0) {
            char ip[INET_ADDRSTRLEN], who[300];
            inet_ntop(AF_INET, &l->opt.bind_addr, ip, sizeof ip);
            fprintf(stderr, "dsmrun: cannot bind the UDP socket of %s to %s: %s\n",
                    node_label(l->nodes[i].rank, who, sizeof who), ip, strerror(-r));
            return r;
        }
        /* A socket bound to the wildcard (--bind 0.0.0.0) receives on every
         * interface, but 0.0.0.0 is no address to hand the peers: they are
         * all on this host, and reach it on the loopback. (An agent binds
         * the address its ssh came in on, never the wildcard.) */
        if (l->nodes[i].addr.sin_addr.s_addr == htonl(INADDR_ANY))
            l->nodes[i].addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    return 0;
}

int draw_key(struct launcher *l)
{
    int r;
    if ((r = fill_random(&l->job_id, sizeof l->job_id)) < 0 ||
        (r = fill_random(l->key, sizeof l->key)) < 0)
        fprintf(stderr, "dsmrun: cannot draw the job key: %s\n", strerror(-r));
    return r;
}

int prepare_env_and_signals(struct launcher *l, const char *peers)
{
    int r;
    if ((r = export_job_env(l, peers)) < 0) {
        fprintf(stderr, "dsmrun: cannot set the nodes' environment: %s\n", strerror(-r));
        return r;
    }
    if ((r = watch_signals(l)) < 0) {
        fprintf(stderr, "dsmrun: cannot watch signals: %s\n", strerror(-r));
        return r;
    }
    /* What a node starts and leaves behind becomes dsmrun's child, not
     * init's: reaped, and ended with the job (end_leftovers). */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        fprintf(stderr, "dsmrun: cannot become the nodes' subreaper: %s\n", strerror(errno));
        return -errno;
    }
    return 0;
}

static int prepare_job(struct launcher *l)
{
    int r;
    if ((r = alloc_children(l, l->opt.nodes, 0)) < 0 || (r = open_sockets(l)) < 0 ||
        (r = draw_key(l)) < 0)
        return r;
    char *peers = format_peers(l->nodes, l->count);
    if (!peers) {
        fprintf(stderr, "dsmrun: out of memory\n");
        return -ENOMEM;
    }
    r = prepare_env_and_signals(l, peers);
    free(peers);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Starting the nodes                                                       */

static int set_inheritable(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
        return -errno;
    return 0;
}

static int setenv_int(const char *name, int value)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", value);
    return setenv(name, buf, 1);
}

static _Noreturn void child_fail(int rank, const char *what)
{
    char who[300];
    int err = errno;
    dprintf(STDERR_FILENO, "dsmrun: %s: %s: %s\n", node_label(rank, who, sizeof who), what,
            strerror(err));
    _exit(EXIT_LAUNCH);
}

/* In the child, between fork and exec. dsmrun is single-threaded, so setenv
 * and the like are safe here. */
static _Noreturn void exec_node(const struct launcher *l, const struct node *n,
                                pid_t parent, int key_fd, int life_fd, int out_fd, int err_fd,
                                int arbiter_fd)
{
    int rank = n->rank;

    /* A node must not outlive its launcher. The getppid check closes the
     * window in which dsmrun died before the request took effect. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(rank, "cannot ask to die with dsmrun");
    if (getppid() != parent)
        _exit(EXIT_LAUNCH);
    /* Each node leads a process group of its own, so that stopping the job
     * reaches what the node started too (signal_nodes). Under an
     * interactive terminal node 0 stays in dsmrun's, the terminal's
     * foreground group, so that it may read the terminal; dsmrun passes
     * ^Z and the continue on to the others (handle_signals). */
    if (n->pgid && setpgid(0, 0) < 0)
        child_fail(rank, "cannot start a process group");

    /* Every node must map the executable at the same addresses, so that
     * pointers into it mean the same thing on every node. */
    int persona = personality(0xffffffff);
    if (persona < 0 || personality((unsigned long)persona | ADDR_NO_RANDOMIZE) < 0)
        child_fail(rank, "cannot turn off address-space randomisation");

    if (rank != 0 || l->mode == MODE_AGENT) {   /* an agent's stdin is dsmrun's */
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0)
            child_fail(rank, "cannot redirect stdin from /dev/null");
    }
    if (out_fd >= 0 && (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0))
        child_fail(rank, "cannot redirect the output");

    /* The other nodes' sockets are close-on-exec too; closing them now makes
     * the rule visible rather than incidental. */
    for (int i = 0; i < l->count; i++)
        if (&l->nodes[i] != n && l->nodes[i].sock >= 0)
            close(l->nodes[i].sock);
    if (set_inheritable(n->sock) < 0 || set_inheritable(key_fd) < 0 || set_inheritable(life_fd) < 0 ||
        (arbiter_fd >= 0 && set_inheritable(arbiter_fd) < 0))
        child_fail(rank, "cannot pass the socket and key");
    if (setenv_int(BOOT_ENV_RANK, rank) < 0 || setenv_int(BOOT_ENV_SOCK_FD, n->sock) < 0 ||
        setenv_int(BOOT_ENV_KEY_FD, key_fd) < 0 || setenv_int(BOOT_ENV_LIFE_FD, life_fd) < 0 ||
        (arbiter_fd >= 0 ? setenv_int(BOOT_ENV_ARBITER_FD, arbiter_fd)
                         : unsetenv(BOOT_ENV_ARBITER_FD)) < 0)
        child_fail(rank, "cannot set the environment");

    sigprocmask(SIG_SETMASK, &l->orig_mask, NULL);
    execvp(l->opt.prog_argv[0], l->opt.prog_argv);
    int err = errno;
    char who[300];
    dprintf(STDERR_FILENO, "dsmrun: %s: cannot run %s: %s\n", node_label(rank, who, sizeof who),
            l->opt.prog_argv[0], strerror(err));
    _exit(EXIT_EXEC_FAILED);
}

void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static int start_node(struct launcher *l, struct node *n)
{
    int key[2] = {-1, -1}, life[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int arbiter[2] = {-1, -1};
    int r = 0;

    if (pipe2(key, O_CLOEXEC) < 0)
        return -errno;
    /* Read only once the node has ended: never blocks on what the node's
     * own children may hold open. */
    if (pipe2(life, O_CLOEXEC | O_NONBLOCK) < 0) {
        r = -errno;
        goto fail;
    }
    /* The key fits in any pipe buffer, so it is written before the fork: the
     * node then reads the key and EOF, and the write end never reaches a
     * child. */
    if ((r = write_all(key[1], l->key, sizeof l->key)) < 0)
        goto fail;
    close(key[1]);
    key[1] = -1;
    /* An agent always reads its nodes' output: it goes to dsmrun framed. */
    bool piped = l->opt.tag_output || l->mode == MODE_AGENT;
    if (piped && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)) {
        r = -errno;
        goto fail;
    }
    /* An agent's node asks it about silent peers of other hosts (arbiter.c). */
    if (l->mode == MODE_AGENT &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, arbiter) < 0) {
        r = -errno;
        goto fail;
    }

    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    n->pgid = n->rank == 0 && l->interactive ? 0 : 1; /* the child makes it its pid */
    pid_t pid = fork();
    if (pid < 0) {
        r = -errno;
        goto fail;
    }
    if (pid == 0)
        exec_node(l, n, parent, key[0], life[1], out[1], err[1], arbiter[1]);

    n->pid = pid;
    if (n->pgid) {
        /* Here too, so that the group exists before any signal to it, whichever
         * of the two runs first (EACCES: the child has already exec'd). */
        (void)setpgid(pid, pid);
        n->pgid = pid;
    }
    l->running++;
    close(key[0]);
    close(life[1]);
    n->life = life[0];
    if (arbiter[1] >= 0)
        close(arbiter[1]);
    n->arbiter = arbiter[0];
    close(n->sock);
    n->sock = -1;
    if (piped) {
        close(out[1]);
        close(err[1]);
        /* Non-blocking: a wakeup that finds nothing must not block the
         * loop that watches the other nodes and the clock. */
        fcntl(out[0], F_SETFL, O_NONBLOCK);
        fcntl(err[0], F_SETFL, O_NONBLOCK);
        n->out[0].fd = out[0];
        n->out[1].fd = err[0];
    }
    return 0;

fail:
    close_pair(key);
    close_pair(life);
    close_pair(out);
    close_pair(err);
    close_pair(arbiter);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Supervision                                                              */

static void signal_nodes(struct launcher *l, int sig)
{
    if (l->mode == MODE_HOSTS && sig != SIGKILL) {
        tell_agents(l, sig);
        return;
    }
    for (int i = 0; i < l->count; i++) {
        struct node *n = &l->nodes[i];
        if (n->pid <= 0)
            continue;
        pid_t to = n->pgid ? -n->pgid : n->pid;  /* the node and what it started */
        kill(to, sig);
        /* A stopped node would hold the signal pending until the SIGKILL
         * a grace later: stopped by ^Z or --slow (n->stopped), or by a
         * SIGSTOP from anyone else, which dsmrun is not told of. A job
         * whose peers found a node stopped ended 2-3 s after they said so
         * (4 nodes, DSM_PEER_TIMEOUT=1: 3.3-3.9 s in all, now 1.1 s), and
         * under --hosts the agent's grace came before its ssh's end. */
        if (sig != SIGKILL)
            kill(to, SIGCONT);
        n->stopped = false;
    }
}

/* Signals what the nodes started and left behind, still in their process
 * groups; whether any is left. */
static bool signal_leftovers(struct launcher *l, int sig)
{
    bool any = false;
    for (int i = 0; i < l->count; i++)
        if (l->nodes[i].pgid > 0 && kill(-l->nodes[i].pgid, sig) == 0)
            any = true;
    return any;
}

/* dsmrun is the subreaper of what the nodes start (prepare_env_and_signals):
 * orphans are its children, reaped here. */
static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* Once every node has ended, what they left behind ends with the job:
 * SIGTERM, then SIGKILL after STOP_GRACE_S. */
static void end_leftovers(struct launcher *l)
{
    reap_orphans();
    if (!signal_leftovers(l, SIGTERM))
        return;
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (double until = now_s() + STOP_GRACE_S; now_s() < until;) {
        nanosleep(&tick, NULL);
        reap_orphans();
        if (!signal_leftovers(l, 0))
            return;
    }
    signal_leftovers(l, SIGKILL);
    for (double until = now_s() + KILL_WAIT_S; now_s() < until && signal_leftovers(l, 0);) {
        nanosleep(&tick, NULL);
        reap_orphans();
    }
}

/* An agent needs its own grace and kill wait before dsmrun's SIGKILL. */
static double stop_grace_s(const struct launcher *l)
{
    return l->mode == MODE_HOSTS ? STOP_GRACE_S + KILL_WAIT_S + 1.0 : STOP_GRACE_S;
}

/* The first failure decides the exit status; later ones are its echoes. */
void stop_job(struct launcher *l, int sig, int exit_status)
{
    if (l->phase != JOB_RUNNING)
        return;
    l->exit_status = exit_status;
    l->phase = JOB_STOPPING;
    l->deadline = now_s() + stop_grace_s(l);
    signal_nodes(l, sig);
}

static void kill_nodes(struct launcher *l)
{
    l->phase = JOB_KILLED;
    l->deadline = now_s() + KILL_WAIT_S;
    signal_nodes(l, SIGKILL);
}

static struct node *node_by_pid(struct launcher *l, pid_t pid)
{
    for (int i = 0; i < l->count; i++)
        if (l->nodes[i].pid == pid)
            return &l->nodes[i];
    return NULL;
}

static void node_ended(struct launcher *l, struct node *n, pid_t pid, int status)
{
    if (l->mode == MODE_HOSTS) {
        host_ended(l, n, status);
        return;
    }
    /* What the node told through its life pipe before it ended: flags,
     * then maybe the line relaying a peer's failure (BOOT_LIFE_RELAYED). */
    bool started = false, finished = false, said = false;
    char relayed[520];
    size_t rlen = 0;
    bool in_relay = false;
    if (n->life >= 0) {
        char got_buf[256];
        ssize_t got;
        while ((got = read(n->life, got_buf, sizeof got_buf)) > 0)
            for (ssize_t i = 0; i < got; i++) {
                char c = got_buf[i];
                if (in_relay) {
                    if (c != '\n' && rlen < sizeof relayed - 1)
                        relayed[rlen++] = c;
                    continue;
                }
                started |= c == BOOT_LIFE_STARTED;
                finished |= c == BOOT_LIFE_FINISHED;
                said |= c == BOOT_LIFE_SAID;
                in_relay = c == BOOT_LIFE_RELAYED;
            }
        close(n->life);
        n->life = -1;
    }
    relayed[rlen] = 0;
    /* One line per failure: the node that failed printed its own; a peer
     * that ends because of it is silent, its relay kept in case no node's
     * own line comes (an ABORT from a node that said nothing). */
    l->failure_said |= said;
    if (in_relay && !l->relayed)
        l->relayed = strdup(relayed);
    if ((said || in_relay) && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        stop_job(l, SIGTERM, WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
        return;
    }
    char who[300];
    node_label(n->rank, who, sizeof who);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        /* Never joined: a program not built for dsm (no dsm_startup, no
         * dsmcc), whose copies ran on their own, each unaware of the
         * others; or a dsm program that ended before dsm_startup. Said
         * once: the job stops, and the later nodes' ends are its echoes. */
        if (!started && l->phase == JOB_RUNNING) {
            fprintf(stderr, "dsmrun: %s (pid %d) ended without joining the job: %s is not a dsm "
                    "program (it never called dsm_startup; link it with -ldsm or build it with "
                    "dsmcc, not dsmcc --pthreads, whose program runs alone); stopping the job\n",
                    who, (int)pid, l->opt.prog_argv[0]);
            stop_job(l, SIGTERM, EXIT_FAILURE);
            return;
        }
        /* done, and the others go on; unless it joined the job and left
         * without dsm_finish: its peers would wait for it in vain */
        if (started && !finished && l->phase == JOB_RUNNING) {
            fprintf(stderr, "dsmrun: %s (pid %d) exited (status 0) before dsm_finish; stopping the job\n",
                    who, (int)pid);
            stop_job(l, SIGTERM, EXIT_FAILURE);
        }
        return;
    }
    if (l->phase != JOB_RUNNING)
        return;        /* stopped by us, or after the failure that decides */
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "dsmrun: %s (pid %d) was killed by signal %d (%s); stopping the job\n",
                who, (int)pid, sig, strsignal(sig));
        stop_job(l, SIGTERM, 128 + sig);
    } else {
        fprintf(stderr, "dsmrun: %s (pid %d) exited with status %d; stopping the job\n",
                who, (int)pid, WEXITSTATUS(status));
        stop_job(l, SIGTERM, WEXITSTATUS(status));
    }
}

static void reap_nodes(struct launcher *l)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct node *n = node_by_pid(l, pid);
        if (!n)
            continue;  /* not a node: dsmrun has no other children */
        n->pid = 0;
        l->running--;
        node_ended(l, n, pid, status);
    }
}

/* ^Z at the terminal: the nodes in groups of their own stop too, then
 * dsmrun; the continue that follows continues them. */
static void job_control(struct launcher *l, int sig)
{
    for (int i = 0; i < l->count; i++) {
        struct node *n = &l->nodes[i];
        if (n->pid > 0 && n->pgid > 0)
            kill(-n->pgid, sig == SIGTSTP ? SIGSTOP : SIGCONT);
        if (sig == SIGCONT)
            n->stopped = false; /* --slow's cycle starts afresh */
    }
    if (sig == SIGTSTP)
        raise(SIGSTOP);
}

void handle_signals(struct launcher *l)
{
    struct signalfd_siginfo si;
    bool child = false;

    while (read(l->sigfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            child = true;
        } else if (sig == SIGTSTP || sig == SIGCONT) {
            job_control(l, sig);
        } else if (l->phase == JOB_RUNNING) {
            if (l->mode == MODE_AGENT)
                fprintf(stderr, "dsmrun: host %s: its agent got signal %d (%s); stopping the "
                        "job\n", agent_host, sig, strsignal(sig));
            else
                fprintf(stderr, "dsmrun: got signal %d (%s); stopping the job\n", sig,
                        strsignal(sig));
            stop_job(l, sig, 128 + sig);   /* forwards it to the nodes */
        } else if (l->phase == JOB_STOPPING) {
            kill_nodes(l);                 /* asked again: no more grace */
        }
    }
    if (child)
        reap_nodes(l);
}

/* Acts on --timeout and on the end of a stop phase. Returns false when dsmrun
 * should give up waiting for nodes that survive SIGKILL. */
static bool check_deadline(struct launcher *l)
{
    if (now_s() < l->deadline)
        return true;
    switch (l->phase) {
    case JOB_RUNNING:
        fprintf(stderr, "dsmrun: the job exceeded --timeout %g s; stopping all nodes\n",
                l->opt.timeout_s);
        stop_job(l, SIGTERM, EXIT_TIMEOUT);
        return true;
    case JOB_STOPPING:
        kill_nodes(l);
        return true;
    case JOB_KILLED:
        reap_nodes(l);   /* an end whose SIGCHLD came with the deadline */
        for (int i = 0; i < l->count; i++) {
            char who[300];
            const struct node *n = &l->nodes[i];
            if (n->pid <= 0)
                continue;
            if (l->mode == MODE_HOSTS)
                snprintf(who, sizeof who, "the ssh to host %s", n->host);
            else
                node_label(n->rank, who, sizeof who);
            fprintf(stderr, "dsmrun: %s (pid %d) survives SIGKILL; leaving it\n", who,
                    (int)n->pid);
        }
        return false;
    }
    return true;
}

/* ppoll's timeout: NULL for none. Nanoseconds, not poll's milliseconds,
 * for --slow's duty cycle. */
static struct timespec *poll_timeout(const struct launcher *l, struct timespec *ts)
{
    double until = l->deadline;
    if (l->mode != MODE_LOCAL && l->phase == JOB_RUNNING && l->beat < until)
        until = l->beat;
    if (l->slow_next < until)
        until = l->slow_next;
    if (isinf(until))
        return NULL;
    double s = until - now_s();
    if (s <= 0)
        s = 0;
    if (s > (double)INT_MAX)
        s = (double)INT_MAX;
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)((s - (double)ts->tv_sec) * 1e9);
    return ts;
}

/* --slow: every SLOW_PERIOD_S, the slowed nodes are continued; each runs
 * its fraction of the period, then is stopped. SIGSTOP stops all of a
 * node's threads at once, so the node is slower as a whole, its replies to
 * its peers included, as a slower machine is. A late wakeup of dsmrun (a
 * loaded machine) starts a fresh period rather than catching up with a
 * burst of short ones. Once the job stops, the nodes run free. */
static void duty_cycle(struct launcher *l)
{
    const double *fraction = l->opt.slow;
    l->slow_next = INFINITY;
    if (!fraction || l->phase != JOB_RUNNING)
        return;
    double now = now_s();
    if (now >= l->slow_period + SLOW_PERIOD_S) {
        l->slow_period = now < l->slow_period + 2 * SLOW_PERIOD_S
                         ? l->slow_period + SLOW_PERIOD_S : now;
        for (int i = 0; i < l->count; i++) {
            struct node *n = &l->nodes[i];
            if (n->stopped && n->pid > 0)
                kill(n->pid, SIGCONT);
            n->stopped = false;
        }
    }
    double next = l->slow_period + SLOW_PERIOD_S;
    for (int i = 0; i < l->count; i++) {
        struct node *n = &l->nodes[i];
        double f = fraction[n->rank];
        if (n->pid <= 0 || n->stopped || f <= 0 || f >= 1)
            continue;
        double stop_at = l->slow_period + f * SLOW_PERIOD_S;
        if (now >= stop_at) {
            kill(n->pid, SIGSTOP);
            n->stopped = true;
        } else if (stop_at < next) {
            next = stop_at;
        }
    }
    l->slow_next = next;
}

/* The heartbeat between the launcher and its agents (hosts.c, agent.c). */
static void heartbeat(struct launcher *l)
{
    if (l->mode == MODE_LOCAL || l->phase != JOB_RUNNING || now_s() < l->beat)
        return;
    if (l->mode == MODE_AGENT)
        agent_beat(l);
    else
        hosts_beat(l);
}

/* Writes a piece of the current line, behind its prefix when the line starts
 * here, with what was buffered of it. */
static void write_piece(struct output_stream *s, const char *data, size_t len, bool ends_line)
{
    if (!s->mid_line && s->rank >= 0)
        fprintf(s->to, "[%d] ", s->rank);
    if (s->len > 0)      /* buf may still be NULL */
        fwrite(s->buf, 1, s->len, s->to);
    fwrite(data, 1, len, s->to);
    s->len = 0;
    s->mid_line = !ends_line;
}

static bool buffer_append(struct output_stream *s, const char *data, size_t len)
{
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + len)
            cap *= 2;
        char *buf = realloc(s->buf, cap);
        if (!buf)
            return false;
        s->buf = buf;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return true;
}

/* Whole lines go out at once. A line that memory cannot hold goes out in
 * pieces rather than being lost. */
void emit_output(struct output_stream *s, const char *data, size_t len)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) + 1 : len;
        if (nl || s->mid_line || !buffer_append(s, data, take))
            write_piece(s, data, take, nl != NULL);
        data += take;
        len -= take;
    }
    fflush(s->to);
}

void close_stream(struct output_stream *s)
{
    if (s->rank < 0) {
        if (s->len > 0)
            write_piece(s, "", 0, false);   /* untagged (an agent's): the bytes as written */
    } else if (s->len > 0 || s->mid_line) {
        write_piece(s, "\n", 1, true);   /* the last line had no newline */
    }
    fflush(s->to);
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

/* Reads once. Returns the bytes read: 0 when none were waiting, and at EOF. */
static ssize_t pump_stream(struct output_stream *s)
{
    char chunk[READ_CHUNK];
    ssize_t got;
    do
        got = read(s->fd, chunk, sizeof chunk);
    while (got < 0 && errno == EINTR);
    if (got > 0) {
        emit_output(s, chunk, (size_t)got);
        return got;
    }
    if (got < 0 && errno == EAGAIN)
        return 0;
    close_stream(s);           /* EOF, or an error that will not go away */
    return 0;
}

/* A child's output: an agent's goes through hosts.c, which takes its
 * answers and frames apart from its nodes' output. */
static ssize_t read_stream(struct launcher *l, struct output_stream *s)
{
    return l->mode == MODE_HOSTS ? host_output(l, s) : pump_stream(s);
}

/* After the last node ended, what the nodes wrote is in the pipes already:
 * dsmrun reads that much and no more, so that a grandchild still holding a
 * pipe and writing on cannot keep it waiting. */
static void drain_output(struct launcher *l)
{
    for (int i = 0; i < l->count; i++)
        for (int j = 0; j < 2; j++) {
            struct output_stream *s = &l->nodes[i].out[j];
            int pending = 0;
            if (s->fd < 0)
                continue;
            if (ioctl(s->fd, FIONREAD, &pending) < 0)
                pending = 0;
            for (ssize_t got; pending > 0 && (got = read_stream(l, s)) > 0; pending -= (int)got)
                ;
            if (s->fd >= 0)
                close_stream(s);
        }
}

static int build_pollfds(struct launcher *l)
{
    int count = 0;
    l->pfds[count++] = (struct pollfd){.fd = l->sigfd, .events = POLLIN};
    for (int i = 0; i < l->count; i++)
        for (int j = 0; j < 2; j++) {
            struct output_stream *s = &l->nodes[i].out[j];
            if (s->fd < 0)
                continue;
            l->pstreams[count] = s;
            l->pfds[count++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
        }
    /* An agent's nodes' questions (arbiter.c): no stream. */
    for (int i = 0; i < l->count; i++)
        if (l->nodes[i].arbiter >= 0) {
            l->pstreams[count] = NULL;
            l->pfds[count++] = (struct pollfd){.fd = l->nodes[i].arbiter, .events = POLLIN};
        }
    if (l->ctl_in >= 0)   /* last: see supervise */
        l->pfds[count++] = (struct pollfd){.fd = l->ctl_in, .events = POLLIN};
    return count;
}

/* Returns the job's exit status. */
int supervise(struct launcher *l)
{
    if (l->opt.timeout_s > 0 && l->phase == JOB_RUNNING)
        l->deadline = now_s() + l->opt.timeout_s;

    l->slow_period = now_s();
    while (l->running > 0) {
        struct timespec ts;
        duty_cycle(l);
        int count = build_pollfds(l);
        int ready = ppoll(l->pfds, (nfds_t)count, poll_timeout(l, &ts), NULL);
        if (ready < 0 && errno != EINTR) {
            fprintf(stderr, "dsmrun: poll: %s; stopping the job\n", strerror(errno));
            stop_job(l, SIGTERM, EXIT_LAUNCH);
            kill_nodes(l);
            break;
        }
        int streams = l->ctl_in >= 0 ? count - 1 : count;
        for (int i = 1; ready > 0 && i < streams; i++)
            if (l->pfds[i].revents && l->pstreams[i])
                read_stream(l, l->pstreams[i]);
            else if (l->pfds[i].revents)
                arbiter_question(l, l->pfds[i].fd);
        if (ready > 0 && streams < count && l->pfds[streams].revents)
            read_orders(l);
        if (ready > 0 && l->pfds[0].revents)
            handle_signals(l);
        if (!check_deadline(l))
            break;
        heartbeat(l);
        if (l->mode == MODE_AGENT)
            arbiter_serve(l);
    }
    if (l->mode != MODE_HOSTS)
        end_leftovers(l);
    drain_output(l);
    /* An agent's nodes are some of the job's: whether one of another host
     * said its failure is the launcher's to know (agent.c sends both up). */
    if (l->relayed && !l->failure_said && l->mode != MODE_AGENT)
        fprintf(stderr, "%s\n", l->relayed);
    return l->exit_status;
}

void start_nodes(struct launcher *l)
{
    for (int i = 0; i < l->count; i++) {
        int r = start_node(l, &l->nodes[i]);
        if (r < 0) {
            char who[300];
            fprintf(stderr, "dsmrun: cannot start %s: %s; stopping the job\n",
                    node_label(l->nodes[i].rank, who, sizeof who), strerror(-r));
            stop_job(l, SIGTERM, EXIT_LAUNCH);
            return;
        }
    }
}


/* Everything is freed so that a sanitizer build reports real leaks only. */
static void launcher_free(struct launcher *l)
{
    for (int i = 0; l->nodes && i < l->count; i++) {
        struct node *n = &l->nodes[i];
        if (n->sock >= 0)
            close(n->sock);
        if (n->ctl >= 0)
            close(n->ctl);
        if (n->life >= 0)
            close(n->life);
        if (n->arbiter >= 0)
            close(n->arbiter);
        free(n->line);
        free(n->errs);
        for (int j = 0; j < 2; j++)
            if (n->out[j].fd >= 0)
                close_stream(&n->out[j]);
    }
    free(l->arbiter_due);
    free(l->arbiter_asked);
    if (l->sigfd >= 0)
        close(l->sigfd);
    for (int j = 0; j < 2; j++)
        if (l->framed[j])
            fclose(l->framed[j]);
    free(l->relayed);
    free(l->nodes);
    free(l->pfds);
    free(l->pstreams);
    free(l->opt.env);
    free(l->opt.slow);
    free(l->hl);
    free(l->peer_addr);
    free(l->ctl_buf);
    remote_job_free(&l->job);
    explicit_bzero(l->key, sizeof l->key);
}

/* A program no node could run: one line before any starts, rather than
 * one from each node's failed exec (an agent checks it on its host: `where`
 * names the host). The search is execvp's: a name with a slash as it is,
 * else each directory of PATH. */
int find_program(const char *prog, char *found, size_t len)
{
    struct stat st;
    int err = ENOENT;
    if (strchr(prog, '/')) {
        if (stat(prog, &st) < 0)
            err = errno;
        else if (!S_ISREG(st.st_mode) || access(prog, X_OK) < 0)
            err = EACCES;
        else
            return snprintf(found, len, "%s", prog) < (int)len ? 0 : ENAMETOOLONG;
    } else {
        const char *path = getenv("PATH");
        for (const char *d = path && *path ? path : "/bin:/usr/bin"; *d;) {
            size_t dlen = strcspn(d, ":");
            if (snprintf(found, len, "%.*s/%s", (int)(dlen ? dlen : 1), dlen ? d : ".", prog) <
                    (int)len &&
                stat(found, &st) == 0 && S_ISREG(st.st_mode)) {
                if (access(found, X_OK) == 0)
                    return 0;
                err = EACCES;
            }
            d += dlen + (d[dlen] == ':');
        }
    }
    return err;
}

int check_program(const char *prog, const char *where)
{
    struct stat st;
    char full[PATH_MAX];
    int err = find_program(prog, full, sizeof full);
    if (!err)
        return 0;
    /* A program in this directory is not found through PATH, as in a
     * shell: the name the user surely meant. */
    char local[PATH_MAX];
    bool here = err == ENOENT && !strchr(prog, '/') &&
                snprintf(local, sizeof local, "./%s", prog) < (int)sizeof local &&
                stat(local, &st) == 0 && S_ISREG(st.st_mode) && access(local, X_OK) == 0;
    fprintf(stderr, "dsmrun: %s%scannot run %s: %s%s%s%s\n", where ? where : "", where ? ": " : "",
            prog, strerror(err), here ? " (did you mean ./" : "", here ? prog : "", here ? "?)" : "");
    return -1;
}

static int run(struct launcher *l, int argc, char **argv)
{
    char err[256];

    switch (parse_options(&l->opt, argc, argv, err, sizeof err)) {
    case PARSE_DONE:
        return fflush(stdout) == 0 ? 0 : EXIT_LAUNCH;
    case PARSE_ERROR:
        fprintf(stderr, "dsmrun: %s\n", err);
        return EXIT_USAGE;
    case PARSE_RUN:
        break;
    }
    ensure_std_fds();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    l->launch_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (l->opt.agent)
        return run_agent(l);
    if (check_settings(l) < 0)
        return EXIT_USAGE;
    if (l->opt.hosts || l->opt.hostfile) {
        l->mode = MODE_HOSTS;
        return run_hosts(l);
    }
    if (check_program(l->opt.prog_argv[0], NULL) < 0)
        return EXIT_EXEC_FAILED;
    l->interactive = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    if (prepare_job(l) < 0)
        return EXIT_LAUNCH;
    start_nodes(l);
    return supervise(l);
}

int main(int argc, char **argv)
{
    struct launcher l = {.sigfd = -1, .deadline = INFINITY, .ctl_in = -1};
    int status = run(&l, argc, argv);
    launcher_free(&l);
    return status;
}
