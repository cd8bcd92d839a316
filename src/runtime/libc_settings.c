/*
 * libc_settings.c — the process-wide settings a dsmcc pthreads program
 * changes after its start are the job's (issue 89, point 3;
 * docs/unmodified-programs.md, "The C library's process-wide state").
 *
 * The working directory, the umask, the environment and the locale are a
 * process's: main's chdir holds for every thread. Here its threads run in
 * a process per node, so a change made by one thread reached its node
 * alone, and a thread elsewhere opened a relative path in the old
 * directory. So each change is made here and then on every other node,
 * whose delivery thread makes it too and answers, before the call
 * returns: whatever the caller does next (an unlock, a thread's creation)
 * finds every node changed. Changes are made one at a time in the job
 * (the dsm lock SYNC_PTHREAD_SETTINGS_ID), so every node makes them in
 * the same order. What a node is sent is the outcome, not the call: the
 * directory as an absolute path (a relative chdir or a fchdir, whose
 * descriptor is this node's own, resolved here), the locale by the name
 * setlocale gave here (setlocale(c, "") reads this node's environment), a
 * putenv as the variable's copy. A node that cannot make the change (a
 * directory or locale its host lacks) ends the job in one line: its
 * threads would otherwise see another process's settings.
 *
 * uselocale is not wrapped: a thread's own locale is the thread's, as in
 * one process.
 */
#include <dsm/pthread.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "ipc/ipc.h"
#include "sync/sync.h"
#include "runtime/runtime.h"

enum setting { SET_CHDIR, SET_UMASK, SET_SETENV, SET_UNSETENV, SET_CLEARENV, SET_SETLOCALE,
               SET_KINDS };

/* A change, to every other node: two strings follow (each with its 0),
 * together at most SETTING_MAX bytes (Linux takes 128 KiB for one
 * variable of a program's environment, MAX_ARG_STRLEN). */
#define SETTING_MAX (256 * 1024)
struct setting_msg {
    uint32_t kind;      /* enum setting */
    int32_t  arg;       /* umask's mask, setlocale's category */
    uint32_t len1, len2; /* the strings' lengths, their 0 included */
};

static DSM_STATE struct {
    pthread_mutex_t lock;
    int             waiting;  /* answers still to come */
    int             failed;   /* plus one: a node that could not; 0: none */
    int             err;      /* its errno */
} bc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Makes a change on this node; 0 or an errno. */
static int apply(uint32_t kind, int32_t arg, const char *s1, const char *s2)
{
    switch (kind) {
    case SET_CHDIR:
        return chdir(s1) ? errno : 0;
    case SET_UMASK:
        umask((mode_t)arg);
        return 0;
    case SET_SETENV:
        return setenv(s1, s2, 1) ? errno : 0;
    case SET_UNSETENV:
        return unsetenv(s1) ? errno : 0;
    case SET_CLEARENV:
        return clearenv() ? errno : 0;
    default: /* SET_SETLOCALE */
        return setlocale(arg, s1) ? 0 : ENOENT;
    }
}

static void on_setting(int src, const void *msg, size_t len)
{
    struct setting_msg m;
    size_t rest;
    const char *tail = ipc_body(src, msg, len, &m, sizeof m, &rest, "setting");
    if (m.kind >= SET_KINDS || !m.len1 || !m.len2 || m.len1 > rest || m.len2 != rest - m.len1 ||
        tail[m.len1 - 1] || tail[rest - 1])
        log_fatal("node %d sent a process-wide setting that does not fit this job", src);
    int32_t err = apply(m.kind, m.arg, tail, tail + m.len1);
    ipc_send(src, RUNTIME_SETTING_DONE, 0, &err, sizeof err);
}

static void on_setting_done(int src, const void *msg, size_t len)
{
    int32_t err;
    ipc_body(src, msg, len, &err, sizeof err, NULL, "setting's answer");
    pthread_mutex_lock(&bc.lock);
    if (bc.waiting <= 0)
        log_fatal("node %d answered a process-wide setting this node did not send", src);
    bc.waiting--;
    if (err && !bc.failed) {
        bc.failed = src + 1;
        bc.err = err;
    }
    pthread_mutex_unlock(&bc.lock);
    ipc_notify();
}

static bool all_answered(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&bc.lock);
    bool done = bc.waiting == 0;
    pthread_mutex_unlock(&bc.lock);
    return done;
}

/* A change made here, for every other node to make. */
struct change {
    const char *call;     /* the program's call, for the one line */
    uint32_t    kind;
    int32_t     arg;
    const char *s1, *s2;
};

static void send_call(void *p)
{
    struct change *c = p;
    char cwd[PATH_MAX]; /* on the process's own stack: getcwd writes it */
    if (c->kind == SET_CHDIR) {
        if (!getcwd(cwd, sizeof cwd))
            log_fatal("%s: the new working directory has no name here (%s), so the other nodes "
                      "cannot change to it", c->call, strerror(errno));
        c->s1 = cwd;
    }
    struct setting_msg m = {.kind = c->kind, .arg = c->arg, .len1 = (uint32_t)strlen(c->s1) + 1,
                            .len2 = (uint32_t)strlen(c->s2) + 1};
    if (m.len1 + m.len2 > SETTING_MAX)
        log_fatal("%s(\"%.40s...\"): %u bytes, more than dsm sends the other nodes (%d)",
                  c->call, c->s1, m.len1 + m.len2, SETTING_MAX);
    pthread_mutex_lock(&bc.lock);
    bc.waiting = job()->nodes - 1;
    bc.failed = 0;
    pthread_mutex_unlock(&bc.lock);
    struct iovec iov[3] = {{&m, sizeof m}, {(void *)c->s1, m.len1}, {(void *)c->s2, m.len2}};
    for (int n = 0; n < job()->nodes; n++)
        if (n != job()->rank) {
            int err = ipc_sendv(n, RUNTIME_SETTING, 0, iov, 3);
            if (err)
                log_fatal("%s: cannot reach node %d: %s", c->call, n, strerror(-err));
        }
    ipc_wait(all_answered, NULL, 0);
    if (bc.failed)
        log_fatal("%s(\"%s\"): node %d cannot make the change this node made (%s), and its "
                  "threads would see another process's %s (docs/unmodified-programs.md, \"The C "
                  "library's process-wide state\")", c->call, c->s1, bc.failed - 1,
                  strerror(bc.err), c->kind == SET_CHDIR ? "directory" : c->kind == SET_SETLOCALE
                  ? "locale" : "environment");
}

/* Whether a change is the job's: a pthreads program on several nodes. */
static bool job_wide(void) { return sync_pthreads_on && job()->started && job()->nodes > 1; }

static void settings_lock(void)
{
    /* A thread dsm did not start, beside another on its node, is told so
     * (sync_pthread_object on an object of the job's), not left to take
     * the node's lock twice. */
    struct libc_rand *job_object = pthreads_libc_rand();
    if (job_object)
        sync_pthread_object(job_object);
    sync_pthread_lock(SYNC_PTHREAD_SETTINGS_ID);
}

static void settings_unlock(void) { sync_pthread_unlock(SYNC_PTHREAD_SETTINGS_ID); }

static void send_change(struct change c)
{
    stack_private(send_call, &c);
}

/* A chdir or fchdir made here (rc), then on every node by the path
 * (send_call names it). */
static int directory_changed(const char *call, int rc)
{
    if (rc == 0)
        send_change((struct change){call, SET_CHDIR, 0, NULL, ""});
    return rc;
}

int dsm_chdir(const char *path)
{
    if (!job_wide())
        return chdir(path);
    settings_lock();
    int rc = directory_changed("chdir", chdir(path));
    int err = errno;
    settings_unlock();
    errno = err;
    return rc;
}

int dsm_fchdir(int fd)
{
    if (!job_wide())
        return fchdir(fd);
    settings_lock();
    int rc = directory_changed("fchdir", fchdir(fd));
    int err = errno;
    settings_unlock();
    errno = err;
    return rc;
}

mode_t dsm_umask(mode_t mask)
{
    if (!job_wide())
        return umask(mask);
    settings_lock();
    mode_t old = umask(mask);
    send_change((struct change){"umask", SET_UMASK, (int32_t)(mask & 0777), "", ""});
    settings_unlock();
    return old;
}

/* An environment change made here (rc), then on every node. */
static int environment_changed(int rc, struct change c)
{
    int err = errno;
    if (rc == 0)
        send_change(c);
    settings_unlock();
    errno = err;
    return rc;
}

int dsm_setenv(const char *name, const char *value, int overwrite)
{
    if (!job_wide())
        return setenv(name, value, overwrite);
    settings_lock();
    int rc = setenv(name, value, overwrite);
    /* What the variable is now: overwrite 0 may have kept the old value. */
    const char *now = rc == 0 ? getenv(name) : NULL;
    return environment_changed(rc, (struct change){"setenv", SET_SETENV, 0, name, now ? now : ""});
}

int dsm_unsetenv(const char *name)
{
    if (!job_wide())
        return unsetenv(name);
    settings_lock();
    return environment_changed(unsetenv(name), (struct change){"unsetenv", SET_UNSETENV, 0, name, ""});
}

int dsm_putenv(char *string)
{
    if (!job_wide())
        return putenv(string);
    const char *eq = strchr(string, '=');
    if (!eq) /* glibc: a name alone removes it */
        return dsm_unsetenv(string);
    char name[256];
    size_t n = (size_t)(eq - string);
    if (n == 0 || n >= sizeof name)
        log_fatal("putenv(\"%.40s...\"): a variable's name of %zu bytes (dsm sends names of 1 to "
                  "%zu)", string, n, sizeof name - 1);
    memcpy(name, string, n);
    name[n] = 0;
    settings_lock();
    /* Here the string itself, as POSIX says; elsewhere a copy of it. */
    return environment_changed(putenv(string), (struct change){"putenv", SET_SETENV, 0, name, eq + 1});
}

int dsm_clearenv(void)
{
    if (!job_wide())
        return clearenv();
    settings_lock();
    return environment_changed(clearenv(), (struct change){"clearenv", SET_CLEARENV, 0, "", ""});
}

char *dsm_setlocale(int category, const char *locale)
{
    if (!locale || !job_wide()) /* a query changes nothing */
        return setlocale(category, locale);
    settings_lock();
    char *name = setlocale(category, locale);
    int err = errno;
    if (name) {
        /* setlocale's string may be overwritten by the next call: sent
         * from a copy. */
        char copy[1024];
        if (strlen(name) >= sizeof copy)
            log_fatal("setlocale(%d, \"%s\"): a locale's name of %zu bytes", category, locale,
                      strlen(name));
        strcpy(copy, name);
        send_change((struct change){"setlocale", SET_SETLOCALE, category, copy, ""});
    }
    settings_unlock();
    errno = err;
    return name;
}

void libc_settings_start(void)
{
    ipc_register(RUNTIME_SETTING, "SETTING", on_setting, NULL);
    ipc_register(RUNTIME_SETTING_DONE, "SETTING_DONE", on_setting_done, NULL);
}
