#include "base/log.h"
#include "base/state.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* msg, a char array, gets the message fmt and the caller's arguments say. */
#define FORMAT(msg, fmt)                        \
    do {                                        \
        va_list ap_;                            \
        va_start(ap_, fmt);                     \
        vsnprintf(msg, sizeof msg, fmt, ap_);   \
        va_end(ap_);                            \
    } while (0)

static DSM_STATE int log_node = -1;
static DSM_STATE void (*abort_hook)(const char *);
static DSM_STATE atomic_flag dying = ATOMIC_FLAG_INIT;
static DSM_STATE struct log_launcher launcher;
static DSM_STATE int forked_from; /* in fork's child: the node's pid; else 0 */

void log_set_rank(int rank) { log_node = rank; }
int  log_rank(void) { return log_node; }
void log_set_abort_hook(void (*hook)(const char *)) { abort_hook = hook; }
void log_set_launcher(const struct log_launcher *ear) { launcher = *ear; }

void log_said_to_launcher(void)
{
    if (launcher.said)
        launcher.said();
}

void log_warn(const char *fmt, ...)
{
    char msg[512];
    FORMAT(msg, fmt);
    if (log_node < 0) /* before the node knows its rank: no node to name */
        fprintf(stderr, "dsm: warning: %s\n", msg);
    else
        fprintf(stderr, "dsm: node %d: warning: %s\n", log_node, msg);
}

void log_forked(void)
{
    forked_from = (int)getppid();
    atomic_flag_clear(&dying); /* the parent's threads are not this process's */
}

bool log_in_forked_child(void) { return forked_from != 0; }

/* One line, written with one write(2): stdio's locks may have been held
 * by another of the parent's threads at the fork, and never released here. */
__attribute__((noreturn)) static void forked_child_exit(const char *msg)
{
    char line[768];
    int n = snprintf(line, sizeof line, "dsm: node %d: fork: process %d, a child that node %d's "
                     "process %d forked, %s; a forked child is not a node of the job and may only "
                     "exec (system, popen, posix_spawn, fork then exec; docs/api.md, \"fork\")\n",
                     log_node, (int)getpid(), log_node, forked_from, msg);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    _exit(1);
}

void log_forked_child(const char *fmt, ...)
{
    char msg[512];
    FORMAT(msg, fmt);
    forked_child_exit(msg);
}

/* log_fatal's end; `alike` as log_fatal_alike. */
__attribute__((noreturn)) static void fatal(const char *msg, bool alike)
{
    if (forked_from) {
        char what[560];
        snprintf(what, sizeof what, "called dsm, which ended it: %s", msg);
        forked_child_exit(what);
    }
    /* Two threads may fail at once (service thread and application), or
     * one fail while the program's exit ends the job; the first one
     * reports, the other waits to be ended with the process. */
    if (!log_claim_end())
        for (;;)
            pause();
    fflush(stdout);
    char line[560];
    if (log_node < 0)
        snprintf(line, sizeof line, "dsm: %s", msg);
    else
        snprintf(line, sizeof line, "dsm: node %d: %s", log_node, msg);
    if (!alike || !launcher.relayed || !launcher.relayed(line)) {
        fprintf(stderr, "%s\n", line);
        /* before the peers hear of it: their relays then find this said */
        log_said_to_launcher();
    }
    if (abort_hook)
        abort_hook(msg);
    _exit(1);
}

void log_fatal(const char *fmt, ...)
{
    char msg[512];
    FORMAT(msg, fmt);
    fatal(msg, false);
}

void log_fatal_alike(const char *fmt, ...)
{
    char msg[512];
    FORMAT(msg, fmt);
    fatal(msg, true);
}

void log_flush_output(void) { fflush(stdout); }

bool log_claim_end(void) { return !atomic_flag_test_and_set(&dying); }

void log_exit_quietly(const char *line)
{
    if (!log_claim_end())
        for (;;)
            pause();
    fflush(stdout);
    if (!launcher.relayed || !launcher.relayed(line))
        fprintf(stderr, "%s\n", line);
    _exit(1);
}
