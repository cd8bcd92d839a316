#include "base/log.h"
#include "base/state.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static DSM_STATE int log_node = -1;
static DSM_STATE void (*abort_hook)(const char *);
static DSM_STATE atomic_flag dying = ATOMIC_FLAG_INIT;
static DSM_STATE struct log_launcher launcher;

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
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log_node < 0) /* before the node knows its rank: no node to name */
        fprintf(stderr, "dsm: warning: %s\n", msg);
    else
        fprintf(stderr, "dsm: node %d: warning: %s\n", log_node, msg);
}

void log_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Two threads may fail at once (service thread and application); the
     * first one reports, the other waits to be ended with the process. */
    if (atomic_flag_test_and_set(&dying))
        for (;;)
            pause();
    fflush(stdout);
    if (log_node < 0)
        fprintf(stderr, "dsm: %s\n", msg);
    else
        fprintf(stderr, "dsm: node %d: %s\n", log_node, msg);
    /* before the peers hear of it: their relays then find this said */
    log_said_to_launcher();
    if (abort_hook)
        abort_hook(msg);
    _exit(1);
}

void log_flush_output(void) { fflush(stdout); }

void log_exit_quietly(const char *line)
{
    if (atomic_flag_test_and_set(&dying))
        for (;;)
            pause();
    fflush(stdout);
    if (!launcher.relayed || !launcher.relayed(line))
        fprintf(stderr, "%s\n", line);
    _exit(1);
}
