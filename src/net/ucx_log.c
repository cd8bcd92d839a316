/*
 * ucx_log.c — UCX's own log, through dsm's.
 *
 * UCX prints its errors itself, raw, on the process's stderr: a node that
 * could not map a peer's shared memory printed
 *   [1795719625.48] [vm:13369:0] mm_sysv.c:57 UCX ERROR shmat(...) failed
 * before dsm's own line, and what UCX logs (file names, a peer's path) is
 * not checked for what a terminal would do with it. So UCX's log level is
 * dsm's choice unless the user sets UCX_LOG_LEVEL (theirs always wins, as
 * ucx_settings.c's), and every line UCX logs comes here instead:
 *  - the user set UCX_LOG_LEVEL: each line is theirs to see, printed as
 *    dsm's warnings are ("dsm: node 1: warning: UCX error: mm_sysv.c:57
 *    shmat(...) failed"), made fit for a terminal (wire_abort_reason);
 *  - otherwise UCX logs errors only, and the first one is kept: an error
 *    that ends the job is said in dsm's one line for it (ucx_start.c adds it),
 *    and one UCX recovers from is not the user's business. A fatal one
 *    (UCX is about to abort the process) is printed at once.
 */
#ifdef DSM_HAVE_UCX
#include "net/ucx.h"
#include "net/wire.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/debug/log_def.h>

#include "base/log.h"
#include "base/state.h"

static DSM_STATE struct {
    pthread_mutex_t lock;  /* UCX may log from its own async thread */
    bool            users; /* the user set UCX_LOG_LEVEL */
    char            first[400];
} ucx_log = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *level_name(ucs_log_level_t level)
{
    static const char *const names[] = {"fatal", "error", "warning", "diag", "info", "debug"};
    return (unsigned)level < sizeof names / sizeof names[0] ? names[level] : "trace";
}

static ucs_log_func_rc_t on_ucx_log(const char *file, unsigned line, const char *function,
                                    ucs_log_level_t level, const ucs_log_component_config_t *comp,
                                    const char *fmt, va_list ap)
{
    (void)function;
    (void)comp;
    char raw[512], text[300];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    wire_abort_reason(raw, len, text, sizeof text);
    const char *base = file ? file : "?", *slash = strrchr(base, '/');
    if (slash)
        base = slash + 1;
    char where[80];
    wire_abort_reason(base, strlen(base), where, sizeof where);
    if (ucx_log.users || level == UCS_LOG_LEVEL_FATAL) {
        log_warn("UCX %s: %s:%u %s", level_name(level), where, line, text);
        return UCS_LOG_FUNC_RC_STOP;
    }
    pthread_mutex_lock(&ucx_log.lock);
    if (!ucx_log.first[0])
        snprintf(ucx_log.first, sizeof ucx_log.first, "%s:%u %s", where, line, text);
    pthread_mutex_unlock(&ucx_log.lock);
    return UCS_LOG_FUNC_RC_STOP;
}

void ucx_log_before_load(void)
{
    /* Read by libucs as it loads: before dlopen. */
    ucx_log.users = getenv("UCX_LOG_LEVEL") != NULL;
    setenv("UCX_LOG_LEVEL", "error", 0);
}

void ucx_log_attach(void *lib)
{
    void (*push)(ucs_log_func_t);
    *(void **)&push = dlsym(lib, "ucs_log_push_handler");
    if (push) /* a UCX without it still logs errors alone (the level above) */
        push(on_ucx_log);
}

size_t ucx_log_first_error(char *out, size_t size)
{
    pthread_mutex_lock(&ucx_log.lock);
    size_t n = (size_t)snprintf(out, size, "%s", ucx_log.first);
    pthread_mutex_unlock(&ucx_log.lock);
    return n < size ? n : size - 1;
}
#endif /* DSM_HAVE_UCX */
