/*
 * ucx_check.c — the user's UCX_* settings, judged by UCX itself before any
 * node starts (dsmrun; docs/launcher.md).
 *
 * UCX reads its settings as each node starts it. A transport list it
 * cannot use (UCX_TLS=bogus, or rc,ud on a host without InfiniBand, or
 * empty) failed every node alike, after the job had started, with
 * "cannot initialise UCX: No such device" and nothing naming UCX_TLS; one
 * it can partly use (tcp,bogus) ran in silence, UCX's warning hidden by
 * the log level the nodes give it (ucx_log.c). So dsmrun asks the UCX the
 * nodes will load: a child process, in the environment the nodes will
 * have, loads libucp as a node does, reads the configuration, makes a
 * context and a worker (where the transports' own settings are read), and
 * reports UCX's warnings and errors. A list no transport of which UCX can
 * use is refused, naming the variable, its value and what UCX offers
 * here; a list part of which it cannot use is a warning, once: UCX runs
 * on the rest, as it does for any program, and a site's UCX_TLS may name
 * transports some of its hosts lack. UCX_LOG_LEVEL, which UCX ignores in
 * silence when it is no level of its own (and then shows nothing), is
 * parsed by UCX's parser and refused when it does not parse.
 *
 * A child, not dsmrun: UCX's memory hooks, signal handlers and threads
 * stay out of the launcher. A child that cannot say (it crashed) refuses
 * nothing: the nodes find what it would have.
 */
#include "net/ucx.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef DSM_HAVE_UCX

int net_check_ucx_settings(const char *const *over, int nover, char *err, size_t errlen,
                           char *warn, size_t warnlen)
{
    (void)over, (void)nover, (void)err, (void)errlen;
    if (warnlen)
        warn[0] = 0;
    return 0; /* the node says this build has no UCX (ucx.c) */
}

bool net_ucx_built(void) { return false; }

#else /* DSM_HAVE_UCX */

#include <dlfcn.h>
#include <stdarg.h>

#include <ucs/debug/log_def.h>

bool net_ucx_built(void) { return true; }

#include "base/state.h"
#include "net/wire.h"

#define CHECK_TIMEOUT_S 20  /* a child UCX keeps longer refuses nothing */
#define REPORT_MAX      4096

/* In the child: what UCX logged at warning or error, one line each. */
static DSM_STATE char   logged[REPORT_MAX];
static DSM_STATE size_t logged_len;

static ucs_log_func_rc_t collect(const char *file, unsigned line, const char *function,
                                 ucs_log_level_t level, const ucs_log_component_config_t *comp,
                                 const char *fmt, va_list ap)
{
    (void)file, (void)line, (void)function, (void)comp;
    if (level > UCS_LOG_LEVEL_WARN)
        return UCS_LOG_FUNC_RC_STOP;
    char raw[512], text[400];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    wire_abort_reason(raw, n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1, text,
                      sizeof text);
    int w = snprintf(logged + logged_len, sizeof logged - logged_len, "%c%s\n",
                     level == UCS_LOG_LEVEL_WARN ? 'W' : 'E', text);
    if (w > 0 && (size_t)w < sizeof logged - logged_len)
        logged_len += (size_t)w;
    return UCS_LOG_FUNC_RC_STOP;
}

/* The variable of the user's a line of UCX's is about, into var:
 * "transport 'x' is not available..." is UCX_TLS's, "Invalid value for
 * TX_SEG_SIZE: ..." that of the UCX_..._TX_SEG_SIZE set. false: none. */
static bool variable_of(const char *text, char *var, size_t size)
{
    static const struct {
        const char *says, *var;
    } about[] = {{"transport", "UCX_TLS"},
                 {"The TLs list", "UCX_TLS"},
                 {"network device", "UCX_NET_DEVICES"},
                 {"shared memory device", "UCX_SHM_DEVICES"}};
    for (size_t i = 0; i < sizeof about / sizeof about[0]; i++)
        if (!strncmp(text, about[i].says, strlen(about[i].says))) {
            snprintf(var, size, "%s", about[i].var);
            return getenv(var) != NULL;
        }
    static const char invalid[] = "Invalid value for ";
    if (strncmp(text, invalid, sizeof invalid - 1))
        return false;
    const char *name = text + sizeof invalid - 1;
    size_t      n = strcspn(name, ":");
    for (char **e = environ; *e; e++) {
        size_t len = strcspn(*e, "=");
        if (!strncmp(*e, "UCX_", 4) && len >= 4 + n && !strncmp(*e + len - n, name, n) &&
            (*e)[len - n - 1] == '_') {
            snprintf(var, size, "%.*s", (int)len, *e);
            return true;
        }
    }
    return false;
}

/* A line of UCX's as dsmrun says it: naming the variable it is about,
 * with the value the nodes would have. */
static void say(FILE *out, bool refused, const char *text, size_t len)
{
    char line[600];
    snprintf(line, sizeof line, "%.*s", (int)len, text);
    char var[128];
    const char *val = variable_of(line, var, sizeof var) ? getenv(var) : NULL;
    if (val)
        fprintf(out, "%c%s=%s: %s%s\n", refused ? 'E' : 'W', var, val,
                refused ? "UCX cannot start with it: " : "", line);
    else
        fprintf(out, "%cDSM_NET=ucx: UCX %s: %s\n", refused ? 'E' : 'W',
                refused ? "cannot start with this environment" : "says", line);
}

/* The child's report, on fd: one "E<line>" (refused), or "W<line>" lines,
 * each warning once (UCX may say one for every device it looks at). */
__attribute__((noreturn)) static void check_in_child(const char *const *over, int nover, int fd)
{
    for (int i = 0; i < nover; i++) {
        const char *eq = strchr(over[i], '=');
        if (eq && !strncmp(over[i], "UCX_", 4)) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - over[i]), over[i]);
            setenv(name, eq + 1, 1);
        }
    }
    const char *level = getenv("UCX_LOG_LEVEL");
    char *level_given = level ? strdup(level) : NULL;
    /* As a node loads it (ucx.c's load_ucp), but showing warnings; and
     * what UCX would print itself before its log comes here goes nowhere. */
    setenv("UCX_ERROR_SIGNALS", "", 0);
    setenv("UCX_MEM_MALLOC_HOOKS", "n", 0);
    setenv("UCX_LOG_LEVEL", "warn", 1);
    FILE *out = fdopen(fd, "w");
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (!out || null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
        _exit(1);
    void *lib = dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(out, "EDSM_NET=ucx: cannot load UCX (%s); install libucx0 or use DSM_NET=udp\n",
                dlerror());
        fclose(out);
        _exit(0);
    }
    int (*sscanf_enum)(const char *, void *, const void *);
    void (*push)(ucs_log_func_t);
    ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
    ucs_status_t (*init)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *,
                         ucp_context_h *);
    ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *);
    const char *(*status_string)(ucs_status_t);
    const char **levels = dlsym(lib, "ucs_log_level_names");
    *(void **)&sscanf_enum = dlsym(lib, "ucs_config_sscanf_enum");
    *(void **)&push = dlsym(lib, "ucs_log_push_handler");
    *(void **)&config_read = dlsym(lib, "ucp_config_read");
    *(void **)&init = dlsym(lib, "ucp_init_version");
    *(void **)&worker_create = dlsym(lib, "ucp_worker_create");
    *(void **)&status_string = dlsym(lib, "ucs_status_string");
    if (!config_read || !init || !worker_create || !status_string)
        _exit(1); /* the node names what its UCX lacks */
    /* UCX's own parser, as it reads UCX_LOG_LEVEL (an enum of these). */
    int parsed;
    if (level_given && levels && sscanf_enum && !sscanf_enum(level_given, &parsed, levels)) {
        fprintf(out, "EUCX_LOG_LEVEL=%s: not one of UCX's log levels (", level_given);
        for (int i = 0; levels[i]; i++)
            fprintf(out, "%s%s", i ? ", " : "", levels[i]);
        fprintf(out, ")\n");
        fclose(out);
        _exit(0);
    }
    if (push)
        push(collect);
    ucp_config_t *config;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP};
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    ucs_status_t st = config_read(NULL, NULL, &config);
    if (st == UCS_OK)
        st = init(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ctx);
    if (st == UCS_OK)
        st = worker_create(ctx, &wp, &worker);
    if (st != UCS_OK) {
        /* The first line UCX said names what it lacked (its warning
         * comes before its error); without one, the status. */
        const char *why = logged_len ? logged + 1 : status_string(st);
        say(out, true, why, strcspn(why, "\n"));
    } else {
        for (char *l = logged; *l; l += strcspn(l, "\n") + 1) {
            size_t n = strcspn(l + 1, "\n");
            bool again = false;
            for (char *p = logged; p < l; p += strcspn(p, "\n") + 1)
                again |= strcspn(p + 1, "\n") == n && !memcmp(p + 1, l + 1, n);
            if (!again)
                say(out, false, l + 1, n);
        }
    }
    fclose(out);
    _exit(0); /* UCX's teardown is the process's end */
}

int net_check_ucx_settings(const char *const *over, int nover, char *err, size_t errlen,
                           char *warn, size_t warnlen)
{
    err[0] = warn[0] = 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the alarm must end it */
        close(fds[0]);
        alarm(CHECK_TIMEOUT_S);
        check_in_child(over, nover, fds[1]);
    }
    close(fds[1]);
    char report[REPORT_MAX];
    size_t len = 0;
    ssize_t got;
    while (len < sizeof report - 1 &&
           (got = read(fds[0], report + len, sizeof report - 1 - len)) != 0) {
        if (got < 0 && errno != EINTR)
            break;
        if (got > 0)
            len += (size_t)got;
    }
    close(fds[0]);
    report[len] = 0;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 0;
    /* "E<line>": refused; "W<line>"s: warnings, into warn one a line. */
    for (char *l = report; *l == 'E' || *l == 'W'; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")]) {
        char  *to = *l == 'E' ? err : warn;
        size_t size = *l == 'E' ? errlen : warnlen, used = strlen(to);
        snprintf(to + used, size - used, "%s%.*s", used ? "\n" : "", (int)strcspn(l + 1, "\n"), l + 1);
    }
    return err[0] ? -EINVAL : 0;
}
#endif /* DSM_HAVE_UCX */
