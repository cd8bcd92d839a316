/*
 * remote.h — what dsmrun says to its agent on another host.
 *
 * For a multi-host job dsmrun starts one agent per host over ssh
 * (`ssh HOST /path/to/dsmrun --agent`) and talks to it through the remote
 * command's stdin and stdout, so nothing secret is ever on a command line or
 * in a remote environment:
 *
 *   launcher -> agent   the job, one "word value" a line (remote_job_format),
 *                       ending with "go"; the key is one of these lines
 *   agent -> launcher   "dsmrun-agent addr RANK IP:PORT" for each of its nodes,
 *                       then "dsmrun-agent ready"; each socket is bound to
 *                       the host's address toward the launcher
 *   launcher -> agent   "peers IP:PORT,..." (every node, rank order): the
 *                       agent starts its nodes under the usual contract
 *                       (src/base/launch.h) and supervises them
 *   launcher -> agent   "alive" every beat_s, "stop SIG", or EOF: stop the
 *                       nodes and exit
 *   agent -> launcher   on stdout, frames: "o LEN" or "e LEN" and a newline,
 *                       then LEN bytes of its nodes' stdout or stderr;
 *                       "alive" lines between frames, every beat_s; then
 *                       "said" if one of its nodes printed the line of its
 *                       own failure, or else "relay TEXT" if one kept a
 *                       peer's failure to relay (the launcher prints it
 *                       when no node of any host said its own); and last
 *                       "end STATUS", once its nodes have ended and it has
 *                       said on stderr why the first one failed
 *   either way          while the job runs, the arbiter (arbiter.c): an
 *                       agent's "look RANK" (a node of its host finds that
 *                       node of another host silent) goes to the agent of
 *                       RANK's host, whose "seen RANK STATE CPU_NS
 *                       PROCESS_CPU_NS" (what the kernel shows of that
 *                       node's process) goes to every other agent
 *
 * The nodes' output goes through the agent, framed, so that the agent's
 * heartbeat shares the one channel ssh gives without ever being taken for
 * the program's output, whatever bytes the program writes. The agent's
 * stderr carries only its own messages (and the remote shell's). Its exit
 * status is the job's status on that host (that of its first failing
 * node); ssh's own failures exit 255.
 */
#ifndef DSM_TOOLS_REMOTE_H
#define DSM_TOOLS_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REMOTE_VERSION    "4"       /* of this protocol, on the job's first line */
#define REMOTE_REPLY      "dsmrun-agent "
#define REMOTE_LINE_MAX   65536
#define REMOTE_KEY_BYTES  32
#define REMOTE_RELAY_MAX  1024      /* a relayed failure's line, at most */

struct remote_job {
    char          *host;          /* the name the launcher used, for messages */
    uint64_t       job_id;
    unsigned char  key[REMOTE_KEY_BYTES];
    int            nodes;         /* in the whole job */
    int            first_rank, ranks; /* this host's */
    uint64_t       launch_ns;     /* CLOCK_REALTIME when dsmrun started */
    bool           tag_output;
    char          *cwd;
    char         **env;           /* NAME=VALUE */
    int            nenv;
    char         **argv;          /* NULL-terminated */
    int            argc;
    unsigned       seen;          /* which lines arrived (bit per word) */
    bool           complete;      /* "go" arrived with everything before it */
};

/* The job as text for one host; malloc'd, NULL when out of memory. */
char *remote_job_format(const struct remote_job *j);

/* Takes one line (no newline) of the job. Returns 0, or -1 with one line
 * in err; j->complete once "go" arrived. */
int remote_job_line(struct remote_job *j, const char *line, char *err, size_t errlen);

void remote_job_free(struct remote_job *j);

/* A word for a POSIX shell: 'text' with every ' written as '\''. */
char *remote_shell_quote(const char *s);

#endif
