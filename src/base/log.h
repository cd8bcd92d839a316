/*
 * log.h — fatal errors and warnings, one line each, naming the node.
 *
 * A fatal condition ends the job: log_fatal prints
 * "dsm: node R: <what happened>", runs the abort hook (the transport tells
 * the peers, so every node stops at once), and exits with status 1.
 */
#ifndef DSM_BASE_LOG_H
#define DSM_BASE_LOG_H
#include <stdbool.h>

void log_set_rank(int rank);
int  log_rank(void);
/* Called once, before exiting, by log_fatal; receives the formatted reason. */
void log_set_abort_hook(void (*hook)(const char *reason));

__attribute__((noreturn, format(printf, 1, 2)))
void log_fatal(const char *fmt, ...);

/* A fatal condition every node may meet at once, alike (a limit of the
 * host they share): said once a job, not once a node. Each node hands
 * its line to the launcher, as a relay: the launcher prints the first,
 * and only when no node's own line said a failure. (Were one node to say
 * it, the launcher's SIGTERM after another's relay could end that node
 * between its line and its word to the launcher: two lines.) Without a
 * launcher, each node prints its own. Each tells its peers, as
 * log_fatal does. */
__attribute__((noreturn, format(printf, 1, 2)))
void log_fatal_alike(const char *fmt, ...);

__attribute__((format(printf, 1, 2)))
void log_warn(const char *fmt, ...);

/* Writes out what the program printed to stdout and is still buffered.
 * Called by an application thread before each release that lets another
 * node go on (a barrier, a create and its end, an unlock, a flush): each
 * node writes to the job's one stdout (dsmrun's, inherited), so a line a
 * node printed before such a release comes before every line printed
 * after it elsewhere — the job's output is in causal order, as one
 * process's would be. Never on the service thread: a program thread may
 * hold stdout's lock while it faults. */
void log_flush_output(void);

/* A process forked from a node (runtime/forked.c) is not a node of the
 * job: log_forked marks this process as one, in fork's child, before it
 * runs anything else; from then on log_fatal's line names fork, this
 * process and its parent node, and tells no peer (the job is the
 * parent's, which goes on). log_forked_child ends it so, with `what` the
 * child did ("wrote the shared memory at 0x..."). Async-signal-safe, as a
 * fork's child in a threaded program must be. */
void log_forked(void);
bool log_in_forked_child(void);
__attribute__((noreturn, format(printf, 1, 2)))
void log_forked_child(const char *fmt, ...);

/* Ends the process with status 1 after printing `line` verbatim (already
 * prefixed); no abort hook. Used when a peer reported the failure: the
 * line relays the peer's reason. Under a launcher (dsmrun) the line goes
 * to it instead (log_set_launcher), which prints it only when no node's
 * own line said the failure: one line per failure, not one per node. */
__attribute__((noreturn))
void log_exit_quietly(const char *line);

/* Claims this node's end: true for the first caller only. log_fatal and
 * log_exit_quietly claim it, and so does the program's exit (runtime/
 * exit.c); a thread that finds it claimed has nothing to report (the
 * job's end is decided) and waits to be ended with the process. */
bool log_claim_end(void);

/* The launcher's ear (runtime/boot_env.c, dsmrun's life pipe). said():
 * this node has printed the line that says its failure (log_fatal, a
 * crash); async-signal-safe. relayed(line): this node ends because a peer
 * failed, the line says so; returns false when there is no launcher to
 * take it (then it is printed). */
struct log_launcher {
    void (*said)(void);
    bool (*relayed)(const char *line);
};
void log_set_launcher(const struct log_launcher *ear);
/* For the crash path (mem/fault.c): log_set_launcher's said(), if any. */
void log_said_to_launcher(void);
#endif
