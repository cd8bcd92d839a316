/*
 * liveness.c — whether a silent peer is dead, or only starved of CPU.
 *
 * A peer we wait on that has sent nothing for DSM_PEER_TIMEOUT (as of the
 * last time this node had read everything that arrived: our own
 * starvation blames nobody) is a candidate. Silence alone cannot tell a
 * stopped, killed or hung node from a live one that gets no CPU: on a
 * machine shared with other jobs (load 30-190 on 2 CPUs) live nodes went
 * unheard for 10-17 s, and their jobs were ended as dead. A peer on this
 * host can be looked at instead of guessed about. Its process, as the
 * kernel shows it (/proc/PID/task/TID/stat), is
 *   - gone, or a zombie: killed, or exited — dead;
 *   - stopped (every thread 'T' or 't') without having run through the
 *     last half timeout: SIGSTOP — dead;
 *   - asleep (no thread runnable) without having run through the last
 *     half timeout: hung on a lock, or waiting on the disk or memory, which
 *     at load 50-500 kept live nodes unrun for 1.2-2 s — dead after
 *     ASLEEP_TIMEOUTS timeouts, or the silence a peer not looked at gets
 *     (below) if that is longer;
 *   - runnable ('R') or having run since the last look: alive, and what
 *     keeps it from answering is the CPU. It is waited for, unless it has
 *     had a full DSM_PEER_TIMEOUT of CPU time in this silence and still
 *     not answered (a node spinning in a loop that never reads): dead.
 * So a starved peer is never declared dead, however long its turn takes
 * (dsmrun's --timeout still bounds the job), and a stopped one is found
 * at the timeout itself, whatever the load (before: up to 6 x the
 * timeout under load, "silent for 6.9 s" against 2 s).
 *
 * The peer's process is found among this node's siblings (the processes
 * the same launcher started: same parent) by the job and rank in their
 * environment: dsmrun's DSM_JOB_ID and DSM_RANK (base/launch.h), or a
 * PMIx launcher's PMIX_NAMESPACE and PMIX_RANK (mpirun, srun; the PMIx
 * rank is the node's). It is looked up when a peer on this host not yet
 * found stays silent for a quarter of the timeout, and known by its start
 * time as well as its pid, so that a pid reused after its death is not
 * taken for it. A peer not found while our parent is seen to start the
 * job's nodes (a sibling names our job, or is still the parent's own
 * program, forked and not yet exec'd) has not been started yet: on a
 * loaded machine a node came up 0.6 s after its peers had begun to call
 * it. It is waited for; its launcher reports a node that cannot start.
 *
 * A peer on another host is looked at by someone on its host:
 *   - under dsmrun --hosts, by the launcher's agent there, its parent: this
 *     node asks its own agent (the socket BOOT_ENV_ARBITER_FD) "look RANK",
 *     the question goes through dsmrun to the peer's agent over their ssh
 *     connections, and the answer comes back the same way;
 *   - under mpirun or srun (no dsm agent), by a host mate: a node of this
 *     job on the peer's host (the nodes that published one address at
 *     startup), asked the same line in an authenticated datagram of the
 *     transport, each question to the next mate (witness.c).
 * Either is asked 8 times a timeout (at most every 100 ms) while the peer
 * is silent past a quarter of the timeout; each answer is a look, judged
 * by the same rules. Nothing new listens: the questions travel on the
 * channels the launch made, or on the job's own. A peer about which no
 * answer has come in this silence (the agents and dsmrun, or every mate,
 * held up as the peer may be — a host entirely starved — or its host
 * lost, which dsmrun names itself) is given ASLEEP_TIMEOUTS timeouts.
 *
 * What cannot be told apart: a peer alone on its host under mpirun or
 * srun (no agent, no mate) is judged by its silence, DSM_PEER_TIMEOUT, as
 * is a peer on this host whose process is not found where no sibling
 * shows our parent to be its launcher too (a program started through a
 * shell of its own); for a peer on this host the silence allowed grows
 * while the host's run queue holds more than 16 runnable threads a CPU
 * (silence_allowed_ns). A stopped peer there ends the job at the timeout;
 * a live one starved for longer does too: run such jobs with a timeout
 * longer than the starvation they may see, or give each host two nodes.
 */
#include "supervise/supervise.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/job.h"
#include "base/launch.h"
#include "base/state.h"
#include "supervise/peer_process.h"
#include "supervise/watch.h"

#define FREE_PER_CPU   16.0   /* runnable threads a CPU before answers slow (transport.c: 16 nodes) */
#define LOAD_EVERY_NS  (100 * 1000000ull)
#define LOOK_EVERY_NS  (20 * 1000000ull) /* a silent peer's process is looked at this often */
/* A peer asleep unrun, not stopped, is given this many timeouts: live
 * nodes slept unrun for 1.2-2 s with datagrams unread at load 50-500 (a
 * 0.5 s timeout); a hung node is still found, later. */
#define ASLEEP_TIMEOUTS 4
#define LOOK_UP_EVERY_NS (100 * 1000000ull) /* peers' processes not found are searched for this often */
/* A silent peer on another host is asked about at most this often, and 8
 * times a timeout: each question costs four hops through the launcher and
 * the agents, and at least two answers fall in the half timeout within
 * which a peer must be seen to run. */
#define ASK_EVERY_MAX_NS (100 * 1000000ull)

/* ---- a peer judged by its silence alone ---- */

static double host_load(void)
{
    static DSM_STATE _Atomic uint64_t read_ns;
    static DSM_STATE _Atomic double last;
    uint64_t now = clock_ns();
    if (now - atomic_load_explicit(&read_ns, memory_order_relaxed) < LOAD_EVERY_NS)
        return atomic_load_explicit(&last, memory_order_relaxed);
    double avg = 0, running = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %*f %*f %lf", &avg, &running) != 2)
            avg = running = 0;
        fclose(f);
    }
    double load = avg > running ? avg : running;
    atomic_store_explicit(&last, load, memory_order_relaxed);
    atomic_store_explicit(&read_ns, now, memory_order_relaxed);
    return load;
}

/* Measured (make test beside six other test suites, 256-node ones among
 * them, on 2 CPUs at load 114-175): live nodes of 4- and 8-node jobs went
 * unanswered for 10 to 32 s. Without a process to look at, the silence
 * allowed a co-located peer grows with the load beyond FREE_PER_CPU. The
 * load is the larger of the one-minute average and the runnable threads
 * now (/proc/loadavg), read at most every LOAD_EVERY_NS. */
static uint64_t silence_allowed_ns(uint64_t base_ns, bool same_host)
{
    if (!same_host)
        return base_ns;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double per_cpu = host_load() / (double)(cpus > 0 ? cpus : 1);
    if (per_cpu <= FREE_PER_CPU)
        return base_ns;
    return (uint64_t)((double)base_ns * (per_cpu / FREE_PER_CPU));
}

/* ---- a peer looked at: on this host by us, on another by its agent ---- */

struct watched {
    int                pid;       /* on this host; 0: not found */
    unsigned long long start;     /* its start time (/proc/PID/stat field 22) */
    uint64_t           since_ns;  /* this silence's first look; 0: not looking */
    uint64_t           looked_ns;
    uint64_t           asked_ns;  /* on another host: the last question to the agent or a mate */
    unsigned           turn;      /* questions put to its host mates (witness.c) */
    bool               asking;    /* since this silence began: answers count */
    uint64_t           moved_ns;  /* the last look that found it runnable or having run; 0: none */
    /* Its threads' CPU time at the last look, to see it run; and the
     * process's at the first look and the last, to see how much it ran
     * (peer_process.h). */
    uint64_t           cpu_ns;
    uint64_t           process_cpu0_ns, process_cpu_ns;
    char               state;     /* as last seen: 'X' gone, 'T' stopped, 'S' asleep, 'R' runnable */
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    uint64_t        looked_up_ns;  /* the last search; 0: none yet */
    struct watched *peer;          /* job()->nodes of them */
    /* Our parent, as of the last search, has been seen to start this
     * job's nodes: a sibling of ours named our job, or was still the
     * parent's own program (forked, not yet exec'd). Our peers on this
     * host are then its children too, and one not found is one it has not
     * yet started. */
    int             launcher;      /* that parent's pid; 0: none seen */
    int             agent_fd;      /* supervise_params.agent_fd; -1: none */
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER, .agent_fd = -1};

void liveness_start(int agent_fd)
{
    watch.agent_fd = agent_fd;
}

/* The value of `name` (with its '=') in an environment block of len bytes. */
static const char *env_value(const char *block, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len; i += strlen(block + i) + 1)
        if (len - i > nl && !strncmp(block + i, name, nl))
            return block + i + nl;
    return NULL;
}

/* The job and the rank an environment block names: dsmrun's (base/launch.h),
 * or a PMIx launcher's (mpirun, srun: the job's namespace and the rank in
 * it, which is the node's rank, runtime/boot_pmix.c). */
static const char *job_in(const char *env, size_t n, const char **rank)
{
    const char *job = env_value(env, n, BOOT_ENV_JOB "=");
    if (job) {
        *rank = env_value(env, n, BOOT_ENV_RANK "=");
        return job;
    }
    *rank = env_value(env, n, "PMIX_RANK=");
    return env_value(env, n, "PMIX_NAMESPACE=");
}

/* Whether process pid runs the program `exe` names (a readlink of
 * /proc/PID/exe). */
static bool runs(int pid, const char *exe)
{
    char path[64], link[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return false;
    link[n] = 0;
    return !strcmp(link, exe);
}

/* Finds the processes of this node's peers on this host: the siblings
 * whose environment names our job and their rank. A sibling still
 * running our parent's program has been forked to become a node, and
 * has not yet exec'd: it names nothing yet, but tells that our parent
 * starts the job's nodes (watch.launcher). */
static void look_up_peers(void)
{
    static DSM_STATE char env[65536];
    size_t n = proc_read_file("/proc/self/environ", env, sizeof env);
    const char *my_rank, *mine = job_in(env, n, &my_rank);
    if (!mine)
        return;
    char ours[300]; /* a PMIx namespace: at most 255 characters */
    snprintf(ours, sizeof ours, "%s", mine);
    int parent = (int)getppid();
    char launcher_exe[4096], path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", parent);
    ssize_t len = readlink(path, launcher_exe, sizeof launcher_exe - 1);
    launcher_exe[len > 0 ? len : 0] = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        int pid = atoi(e->d_name), ppid;
        char state;
        unsigned long long start;
        uint64_t cpu;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        if (pid == (int)getpid() || !proc_parse_stat(path, &state, &ppid, &start, &cpu) || ppid != parent)
            continue;
        snprintf(path, sizeof path, "/proc/%d/environ", pid);
        n = proc_read_file(path, env, sizeof env);
        const char *rank, *theirs = job_in(env, n, &rank);
        if ((theirs && !strcmp(theirs, ours)) || (len > 0 && runs(pid, launcher_exe)))
            watch.launcher = parent;
        if (!theirs || !rank || strcmp(theirs, ours))
            continue;
        int r = atoi(rank);
        if (r >= 0 && r < job()->nodes && r != job()->rank) {
            watch.peer[r].pid = pid;
            watch.peer[r].start = start;
        }
    }
    closedir(d);
}

/* A look at w's process, taken now: whether it ran since the last. */
static void observe(struct watched *w, const struct process_sight *s, uint64_t now)
{
    uint64_t before = w->cpu_ns;
    w->state = s->state;
    if (s->state != 'X') {
        w->cpu_ns = s->cpu_ns;
        w->process_cpu_ns = s->process_cpu_ns;
    }
    if (!w->since_ns) {
        w->since_ns = now;
        w->moved_ns = 0;
        w->process_cpu0_ns = w->process_cpu_ns;
    } else if (w->state == 'R' || w->cpu_ns != before) {
        w->moved_ns = now;
    }
    if (w->state == 'R' && !w->moved_ns)
        w->moved_ns = now;
    w->looked_ns = now;
}

/* Whether w, silent for silent_ns and looked at in this silence, is dead
 * (the rules at the top); *why says what was seen. */
static bool judged_dead(const struct watched *w, bool same_host, uint64_t silent_ns,
                        uint64_t timeout_ns, uint64_t now, const char **why)
{
    if (silent_ns <= timeout_ns)
        return false;
    if (w->state == 'X') {
        *why = "its process has ended";
        return true;
    }
    if (!w->moved_ns || now - w->moved_ns >= timeout_ns / 2) {
        /* Stopped: dead now. Asleep (a lock, a page, the disk): at load
         * 300-500 live nodes slept unrun for 2 s with our datagrams
         * waiting, so it gets the silence a peer not looked at would. */
        if (w->state == 'T') {
            *why = "its process is stopped";
            return true;
        }
        if (silent_ns > ASLEEP_TIMEOUTS * timeout_ns &&
            silent_ns > silence_allowed_ns(timeout_ns, same_host)) {
            *why = "its process is asleep, not running";
            return true;
        }
        return false;
    }
    if (w->process_cpu_ns > w->process_cpu0_ns &&
        w->process_cpu_ns - w->process_cpu0_ns >= timeout_ns) {
        *why = "its process ran all the while without answering";
        return true;
    }
    return false;
}

/* The agent's answers that have come: each a look at a peer of another
 * host. What the socket carries came from dsmrun, which formats it from
 * values it checked; still, a line that is not exactly as the agent
 * formats it, or names this node or a rank beyond the job, is dropped. */
static void hear_agent(int fd, uint64_t now)
{
    char line[BOOT_ARBITER_LINE_MAX + 1];
    ssize_t got;
    while ((got = recv(fd, line, sizeof line - 1, MSG_DONTWAIT)) > 0) {
        line[got] = 0;
        struct process_sight s;
        int rank = (size_t)got == strlen(line) ? process_seen_parse(line, job()->nodes, &s) : -1;
        if (rank < 0 || rank == job()->rank)
            continue;
        /* An answer to a question of an earlier silence, or to another
         * node's (the agent tells all its nodes), is not a look now. */
        if (!watch.peer[rank].asking)
            continue;
        observe(&watch.peer[rank], &s, now);
    }
}

/* Asks this host's agent about peer: never waits (a full socket: the
 * question is asked again later). */
static void ask_agent(int fd, int peer)
{
    char q[BOOT_ARBITER_LINE_MAX + 1];
    int n = process_look_format(q, sizeof q, peer);
    if (send(fd, q, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        /* the agent is busy or gone: its host's silence tells */
    }
}

/* The watch table, made at the first need. Under watch.lock. */
static struct watched *watched(int peer)
{
    if (!watch.peer)
        watch.peer = calloc((size_t)job()->nodes, sizeof *watch.peer);
    return watch.peer ? &watch.peer[peer] : NULL;
}

/* A peer of this host not yet found is searched for, at most every
 * LOOK_UP_EVERY_NS. Under watch.lock. */
static void look_up_if_due(uint64_t now)
{
    if (!watch.looked_up_ns || now - watch.looked_up_ns >= LOOK_UP_EVERY_NS) {
        watch.looked_up_ns = now;
        look_up_peers();
    }
}

bool liveness_look_here(int rank, struct process_sight *s)
{
    pthread_mutex_lock(&watch.lock);
    struct watched *w = watched(rank);
    if (w && !w->pid)
        look_up_if_due(clock_ns());
    bool found = w && w->pid;
    if (found)
        process_look(w->pid, w->start, s);
    pthread_mutex_unlock(&watch.lock);
    return found;
}

void liveness_seen(int rank, const struct process_sight *s)
{
    pthread_mutex_lock(&watch.lock);
    /* An answer to a question of an earlier silence is not a look now. */
    if (watch.peer && watch.peer[rank].asking)
        observe(&watch.peer[rank], s, clock_ns());
    pthread_mutex_unlock(&watch.lock);
}

bool supervise_peer_dead(int peer, bool same_host, uint64_t silent_ns, uint64_t timeout_ns,
                         uint64_t now, const char **why)
{
    *why = NULL;
    if (!timeout_ns)
        return false;
    if (peer == job()->rank) /* this node runs: its own datagrams wait for it */
        return false;
    if (job()->nodes < 2)
        return silent_ns > timeout_ns;
    int agent = watch.agent_fd;
    pthread_mutex_lock(&watch.lock);
    struct watched *w = watched(peer);
    if (w && silent_ns <= timeout_ns / 4) {
        w->since_ns = 0; /* heard again: a new silence starts afresh */
        w->asking = false;
    }
    /* A peer on this host is searched for again while it is not found: a
     * node may look before its peer has even been exec'd (no rendezvous
     * at start), and that peer's environment is then still the
     * launcher's. */
    if (w && same_host && !w->pid && silent_ns > timeout_ns / 4)
        look_up_if_due(now);
    uint64_t every = timeout_ns / 8 < ASK_EVERY_MAX_NS ? timeout_ns / 8 : ASK_EVERY_MAX_NS;
    bool dead;
    if (w && same_host && w->pid) {
        if (silent_ns > timeout_ns / 4 && (!w->since_ns || now - w->looked_ns >= LOOK_EVERY_NS)) {
            struct process_sight s;
            process_look(w->pid, w->start, &s);
            observe(w, &s, now);
        }
        dead = w->since_ns && judged_dead(w, true, silent_ns, timeout_ns, now, why);
    } else if (w && same_host && watch.launcher && watch.launcher == (int)getppid()) {
        /* Not started yet: our launcher, which started this node and its
         * siblings, has not yet forked or exec'd it (at load 20-40 a node
         * came up 0.6 s after its peers, and was declared dead), and it
         * says so itself if the node cannot start or ends. */
        dead = false;
    } else if (w && (agent >= 0 || witness_can_ask(peer))) {
        /* Another host's, or this kernel's but not our launcher's child
         * (hosts that share a kernel, which UCX takes for one): its
         * agent's answers, or its host mates' (witness.c), come in their
         * own time, each a look at arrival. */
        if (silent_ns > timeout_ns / 4) {  /* no system call while all is heard */
            if (agent >= 0)
                hear_agent(agent, now);
            if (!w->asking || now - w->asked_ns >= every) {
                if (agent >= 0)
                    ask_agent(agent, peer);
                else
                    witness_ask(peer, &w->turn);
                w->asked_ns = now;
                w->asking = true;
            }
        }
        /* No answer yet: the agents and dsmrun, or the mates, are held
         * up as the peer may be (load), and a host that is lost dsmrun
         * names itself; it gets what an asleep peer gets. */
        dead = w->since_ns ? judged_dead(w, same_host, silent_ns, timeout_ns, now, why)
                           : silent_ns > ASLEEP_TIMEOUTS * timeout_ns &&
                                 silent_ns > silence_allowed_ns(timeout_ns, same_host);
    } else {
        dead = silent_ns > timeout_ns && silent_ns > silence_allowed_ns(timeout_ns, same_host);
    }
    pthread_mutex_unlock(&watch.lock);
    return dead;
}
