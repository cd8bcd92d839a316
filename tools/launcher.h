/*
 * launcher.h — dsmrun's state and the functions its three parts share:
 * dsmrun.c (the command line, one host's nodes, supervision), hosts.c (a
 * job on several hosts: one agent per host over ssh) and agent.c (the
 * agent, dsmrun --agent, on each of those hosts). Private to tools/dsmrun.
 */
#ifndef DSM_TOOLS_LAUNCHER_H
#define DSM_TOOLS_LAUNCHER_H

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "hostlist.h"
#include "remote.h"
#include "base/launch.h"

#define EXIT_USAGE       2
#define EXIT_TIMEOUT     124   /* as timeout(1) */
#define EXIT_LAUNCH      125   /* dsmrun itself failed, as timeout(1) and env(1) */
#define EXIT_EXEC_FAILED 127   /* as the shell's "command not found" */
#define EXIT_HOST_LOST   255   /* a host fell silent, as ssh's lost connection */
#define SOCKET_BUFFER    (4 << 20)
#define STOP_GRACE_S     2.0   /* between the stop signal and SIGKILL */
#define KILL_WAIT_S      2.0   /* after SIGKILL, before dsmrun gives up waiting */
#define READ_CHUNK       65536
/* dsmrun and every agent tell each other they are alive, each through its
 * ssh (remote.h), BEATS_PER_SILENCE times in the silence that counts as
 * lost: half the nodes' peer timeout (DSM_PEER_TIMEOUT, 10 s: 5 s), never
 * less than HOST_SILENCE_MIN_S. An agent that hears nothing from dsmrun
 * for that long stops its nodes; dsmrun that hears nothing from an agent
 * names that host and stops the job. The network or a host may be gone
 * without ssh ever noticing (no ServerAliveInterval in DSMRUN_RSH); half
 * the peer timeout names the silent host before nodes on the healthy hosts
 * time out on it and are blamed, and follows a peer timeout raised for a
 * loaded cluster. The floor: at load 21 on 2 CPUs, one of them held by a
 * real-time hog, dsmrun and a live agent went unheard through their ssh
 * for 1 s, and a peer timeout of 1-2 s named their host lost; a node on
 * another host that is silent meanwhile is judged by what its agent sees
 * (arbiter.c), not by this. */
#define BEATS_PER_SILENCE 5
#define PEER_TIMEOUT_S   10.0  /* DSM_PEER_TIMEOUT's default (src/base/config.c) */
#define HOST_SILENCE_MIN_S (PEER_TIMEOUT_S / 2)
/* --slow duty-cycles a node with SIGSTOP/SIGCONT on this period: short
 * beside the peer timeout (10 s), so a slowed node never looks dead, and
 * long beside the signals' cost (~12 us of dsmrun's CPU a switch, 2.5 %
 * of a CPU at 1 ms). Shorter makes a slowed node's speed steadier over one
 * loop execution, which the profiled schedule times, and bounds how long
 * a stopped node leaves a message unanswered (half the period at 0.5):
 * at 5 ms, a node at half speed got 0.45-0.75 of a CPU over 10 ms windows
 * and started a loop execution up to 2.5 ms after the barrier released it
 * (docs/performance.md, "EP class S with one slow node"). */
#define SLOW_PERIOD_S    0.001

/* What the command line asked for; pointers point into argv. */
struct options {
    int            nodes;
    double         timeout_s;     /* 0: none */
    bool           tag_output;
    struct in_addr bind_addr;
    bool           stats;
    bool           shared_globals; /* --shared-globals */
    const char    *threads;        /* --threads T: DSM_THREADS */
    const char    *stats_json;
    const char    *trace;         /* --trace FILE: DSM_TRACE */
    const char    *profile;       /* --profile FILE: DSM_PROFILE */
    const char    *protocol;      /* --protocol, NULL: DSM_PROTOCOL or its default */
    const char   **env;           /* NAME=VALUE from --env */
    int            nenv;
    char         **prog_argv;     /* NULL-terminated */
    const char    *hosts;         /* --hosts */
    const char    *hostfile;      /* --hostfile */
    bool           bind_given;
    bool           agent;         /* --agent: run by another dsmrun over ssh */
    double        *slow;          /* --slow: each rank's CPU fraction; 0: full
                                     speed (BOOT_MAX_NODES entries, or NULL) */
    int            slow_max;      /* the highest rank --slow names; -1: none */
    const char    *slow_arg;      /* the --slow item naming slow_max */
};

/* One child output stream under --tag-output: bytes of the current line wait
 * in buf until its newline so that lines of different nodes never mix. */
struct output_stream {
    int    fd;                    /* read end of the pipe; -1 once closed */
    int    rank;                  /* of the node writing it; -1: no prefix */
    FILE  *to;                    /* stdout or stderr of dsmrun */
    char  *buf;
    size_t len, cap;
    bool   mid_line;              /* a line too long to buffer was started */
};

/* A child of dsmrun: a node, or with --hosts the ssh that runs a host's
 * agent (its nodes are ranks rank .. rank+ranks-1). */
struct node {
    int                  rank;
    pid_t                pid;     /* 0 before start and once reaped */
    int                  sock;    /* -1 once handed to the child */
    struct sockaddr_in   addr;    /* as bound */
    struct output_stream out[2];  /* stdout, stderr */
    bool                 stopped; /* by --slow's duty cycle, now */
    pid_t                pgid;    /* its own process group (its pid), or 0: dsmrun's */
    int                  life;    /* read end of its BOOT_ENV_LIFE_FD pipe; -1: none */
    int                  arbiter; /* MODE_AGENT: our end of its BOOT_ENV_ARBITER_FD
                                     socket (arbiter.c); -1: none */
    /* the agent of a host */
    const char          *host;
    int                  ranks;
    int                  ctl;     /* the agent's stdin; -1 once closed */
    int                  addrs;   /* addresses it reported */
    bool                 ready;
    char                *line;    /* its stdout's current line, before ready */
    size_t               line_len;
    char                *errs;    /* its stderr before ready, held back */
    size_t               errs_len;
    double               heard;   /* when its agent last said anything */
    size_t               frame_left; /* bytes of the current output frame still due */
    int                  frame_to;   /* that frame's stream: 0 stdout, 1 stderr */
    bool                 garbled; /* its agent broke the frame format: ignored */
    int                  end_status; /* as its agent said at its end; -1: unsaid */
};

enum launch_mode {
    MODE_LOCAL,                   /* every node here */
    MODE_HOSTS,                   /* an agent per host, over ssh */
    MODE_AGENT,                   /* the nodes of one host, for a MODE_HOSTS dsmrun */
};

enum job_phase {
    JOB_RUNNING,                  /* no failure seen */
    JOB_STOPPING,                 /* nodes were told to stop; SIGKILL at deadline */
    JOB_KILLED,                   /* SIGKILL sent; dsmrun gives up at deadline */
};

struct launcher {
    struct options  opt;
    enum launch_mode mode;
    int             count;        /* children: nodes, or hosts with MODE_HOSTS */
    struct node    *nodes;
    struct hostlist *hl;          /* MODE_HOSTS */
    struct sockaddr_in *peer_addr; /* MODE_HOSTS: every node's, as reported */
    struct remote_job job;        /* MODE_AGENT: as the launcher sent it */
    int             ctl_in;       /* MODE_AGENT: stdin, from the launcher; -1 at EOF */
    double          beat;         /* MODE_HOSTS, MODE_AGENT: when to say "alive"
                                     next, and to look for silence */
    double          heard;        /* MODE_AGENT: when the launcher last said anything */
    double          beat_s, silence_s; /* MODE_HOSTS, MODE_AGENT: the heartbeat's period,
                                     and the silence that counts as lost */
    FILE           *framed[2];    /* MODE_AGENT: the nodes' stdout and stderr, as
                                     frames on the agent's stdout (remote.h) */
    bool            launcher_lost; /* MODE_AGENT: its output is dropped */
    char           *ctl_buf;      /* its current line */
    unsigned char  *arbiter_due;  /* MODE_AGENT: per rank of the job, what the
                                     arbiter owes (arbiter.c) */
    double         *arbiter_asked; /* MODE_AGENT: per rank, when dsmrun was last
                                     asked about it */
    size_t          ctl_len;
    uint64_t        launch_ns;    /* CLOCK_REALTIME at dsmrun's start */
    uint64_t        job_id;
    unsigned char   key[BOOT_KEY_BYTES];
    sigset_t        orig_mask;    /* restored in the children */
    int             sigfd;
    double          slow_period;  /* start of the current --slow period; the
                                     slowed nodes run from there, each for its
                                     fraction of SLOW_PERIOD_S, then stop */
    double          slow_next;    /* the next stop or period; INFINITY: none */
    int             running;      /* started and not reaped */
    bool            interactive;  /* MODE_LOCAL in the foreground of the terminal
                                     on stdin: node 0 shares dsmrun's process
                                     group, so that it may read the terminal */
    enum job_phase  phase;
    double          deadline;     /* of --timeout, then of the phase; or INFINITY */
    int             exit_status;  /* of the first failure; 0 while none */
    bool            failure_said; /* a node printed its own failure's line */
    char           *relayed;      /* the first node's line relaying a peer's
                                     failure: printed at the end unless one
                                     was said (node_ended) */
    bool            auto_ucx;     /* DSM_NET=auto chose UCX (transport_choice.c) */
    bool            auto_ucx_tls; /* ... and its shared-memory transports */
    struct pollfd  *pfds;         /* the signalfd, then open output pipes */
    struct output_stream **pstreams; /* the stream of each pfds entry */
};

/* transport_choice.c: DSM_NET=auto. Whether the job runs over UCX, and
 * whether dsmrun sets its UCX_TLS; then sets both for the nodes. */
struct dsm_config;
bool   choose_ucx(const struct options *o, const struct dsm_config *cfg, const char *const *over,
                  int n, bool *set_tls);
int    export_transport(const struct launcher *l);

/* dsmrun.c */
extern const char *agent_host;      /* on an agent, the host's name for messages */
double now_s(void);
int    write_all(int fd, const void *buf, size_t len);
/* Whether node 0 can write the statistics to path (--stats-json); says
 * why not in one line, naming `what`, and returns -EINVAL. */
int    check_stats_json(const char *path, const char *what);
int    check_program(const char *prog, const char *where);
/* WARN's lines, each as one "dsmrun: warning:" line on stderr. */
void   say_warnings(const char *warn);
/* execvp's search for PROG: 0 and its path in FOUND, or the errno. */
int    find_program(const char *prog, char *found, size_t len);
void   close_pair(int fds[2]);
bool   is_contract_var(const char *assignment);
char  *format_peers(const struct node *nodes, int count);
const char *node_label(int rank, char *buf, size_t len);
int    alloc_children(struct launcher *l, int count, int first_rank);
int    open_sockets(struct launcher *l);
int    draw_key(struct launcher *l);
int    prepare_env_and_signals(struct launcher *l, const char *peers);
void   start_nodes(struct launcher *l);
void   stop_job(struct launcher *l, int sig, int exit_status);
void   handle_signals(struct launcher *l);
void   emit_output(struct output_stream *s, const char *data, size_t len);
void   close_stream(struct output_stream *s);
int    supervise(struct launcher *l);   /* returns the job's exit status */

/* hosts.c */
int    run_hosts(struct launcher *l);
const char *nodes_label(int first, int count, char *buf, size_t len);
void   tell_agents(struct launcher *l, int sig);
void   host_ended(struct launcher *l, struct node *h, int status);
ssize_t host_output(struct launcher *l, struct output_stream *s);
void   heartbeat_periods(struct launcher *l);
void   hosts_beat(struct launcher *l);

/* arbiter.c */
void   arbiter_question(struct launcher *l, int fd);
bool   arbiter_order(struct launcher *l, const char *line);
void   arbiter_serve(struct launcher *l);
bool   arbiter_relay(struct launcher *l, struct node *h, const char *line);

/* agent.c */
int    run_agent(struct launcher *l);
void   read_orders(struct launcher *l);
void   take_orders(struct launcher *l, const char *data, size_t len);
void   agent_beat(struct launcher *l);
/* Writes to the launcher (stdout), waiting for it no longer than it may
 * stay silent; -1 once it is lost. */
int    send_up(struct launcher *l, const char *data, size_t len);

#endif
