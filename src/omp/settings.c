/*
 * settings.c — the OpenMP settings (OMP_NUM_THREADS, OMP_SCHEDULE, …):
 * read from the environment when a thread's runtime state is made, and
 * set again while the program runs by libomp's kmp_set_defaults.
 *
 * kmp_set_defaults("NAME=value|NAME=value") is libomp's way to give the
 * runtime settings "as the environment would" (kmp_settings.cpp,
 * __kmp_env_initialize with a string): the string is split at '|', each
 * item at its first '='; an item without a value and a name the runtime
 * does not read are skipped, as libomp does. Here a name takes effect on
 * the calling thread's ICVs — those its next regions inherit — and the
 * job-wide ones (max-task-priority, target-offload) reach the other nodes
 * with the master's next region (region.c copies them into the region's
 * description). OMP_CANCELLATION is read once per node at the start
 * (every node must agree on it); as libomp once a region has run, a later
 * value is ignored with a warning.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/job.h"
#include "base/log.h"
#include "base/spin.h"
#include "base/state.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"

/* A whole number in 1..INT_MAX (OMP_NUM_THREADS may list one number per
 * nesting level: the first is taken). */
static int parse_count(const char *name, const char *v)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || (*end && *end != ',') || x < 1 || x > INT_MAX)
        log_fatal("%s=%s: expected a positive whole number", name, v);
    return (int)x;
}

/* A whole number >= 0. */
static int parse_count_or_zero(const char *name, const char *v)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > INT_MAX)
        log_fatal("%s=%s: expected a whole number >= 0", name, v);
    return (int)x;
}

static bool parse_bool(const char *name, const char *v)
{
    if (!strcasecmp(v, "true") || !strcmp(v, "1"))
        return true;
    if (!strcasecmp(v, "false") || !strcmp(v, "0"))
        return false;
    log_fatal("%s=%s: expected true or false", name, v);
}

static void set_num_threads(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    t->icv.nthreads = parse_count(name, v);
}

static void set_dynamic(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    t->icv.dynamic = parse_bool(name, v);
}

static void set_cancellation(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    bool on = parse_bool(name, v);
    if (at_start)
        t->icv.cancellation = on;
    else if (on != t->icv.cancellation)
        log_warn("kmp_set_defaults(\"%s=%s\") ignored: cancel-var is read once, at the start, "
                 "on every node (set it in dsmrun's environment)",
                 name, v);
}

static void set_max_task_priority(struct omp_thread *t, const char *name, const char *v,
                                  bool at_start)
{
    (void)at_start;
    t->icv.max_task_priority = parse_count_or_zero(name, v);
}

static void set_schedule(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    char err[160];
    if (sched_parse(v, &t->icv.run_sched, err, sizeof err))
        log_fatal("%s=%s", name, err);
}

/* OpenMP 5.1 §6.17 leaves a value other than the three to the
 * implementation: libomp warns and takes DEFAULT, and so does dsm. dsm
 * runs no device construct (target fails to link), so with MANDATORY
 * nothing can be offloaded nor has to fail: the ICV is only reported
 * (__kmpc_get_target_offload). */
static void set_target_offload(struct omp_thread *t, const char *name, const char *v,
                               bool at_start)
{
    (void)at_start;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!strcasecmp(v, "mandatory"))
        t->icv.target_offload = OMP_TARGET_OFFLOAD_MANDATORY;
    else if (!strcasecmp(v, "disabled"))
        t->icv.target_offload = OMP_TARGET_OFFLOAD_DISABLED;
    else {
        if (strcasecmp(v, "default"))
            log_warn("%s=%s: expected MANDATORY, DISABLED or DEFAULT; using DEFAULT", name, v);
        t->icv.target_offload = OMP_TARGET_OFFLOAD_DEFAULT;
    }
}

static void set_num_teams(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    t->icv.nteams = parse_count(name, v);
}

static void set_teams_thread_limit(struct omp_thread *t, const char *name, const char *v,
                                   bool at_start)
{
    (void)at_start;
    t->icv.teams_thread_limit = parse_count(name, v);
}

/* As omp_set_max_active_levels and omp_set_nested (omp_api.c): at most
 * the levels supported; OMP_MAX_ACTIVE_LEVELS, read after OMP_NESTED,
 * wins over it, as OpenMP says. */
static void set_max_active_levels(struct omp_thread *t, const char *name, const char *v,
                                  bool at_start)
{
    (void)at_start;
    int n = parse_count_or_zero(name, v);
    t->icv.max_active_levels = n < OMP_SUPPORTED_LEVELS ? n : OMP_SUPPORTED_LEVELS;
}

static void set_nested(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    t->icv.max_active_levels = parse_bool(name, v) ? OMP_SUPPORTED_LEVELS : 1;
}

static void set_thread_limit(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    t->icv.thread_limit = parse_count(name, v);
}

/* blocktime-var, libomp's: how long (ms) a waiting thread spins before it
 * sleeps. dsm's waits spin and then sleep too (base/spin.c): the setting
 * bounds the spin; unset, dsm spins 50 µs at most, adaptively. */
static void set_blocktime(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    if (!strcasecmp(v, "infinite") || !strcasecmp(v, "infinity")) {
        t->icv.blocktime = INT_MAX;
        return;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!strcasecmp(end, "ms"))
        end += 2;
    if (errno || end == v || *end || x < 0 || x > INT_MAX)
        log_fatal("%s=%s: expected a whole number of milliseconds >= 0, or infinite", name, v);
    t->icv.blocktime = (int)x;
}

/* OMP_WAIT_POLICY: active spins (blocktime infinite), passive sleeps at
 * once (blocktime 0), as libomp; KMP_BLOCKTIME, read after it, wins. */
static void set_wait_policy(struct omp_thread *t, const char *name, const char *v, bool at_start)
{
    (void)at_start;
    if (!strcasecmp(v, "active"))
        t->icv.blocktime = INT_MAX;
    else if (!strcasecmp(v, "passive"))
        t->icv.blocktime = 0;
    else
        log_fatal("%s=%s: expected active or passive", name, v);
}

/* KMP_ENABLE_TASK_THROTTLING, libomp's: 1 (its default, and dsm's) lets
 * the runtime run a task at once rather than queue it (dsm does so with one
 * thread on a node); 0 queues every task, to run at the next scheduling
 * point (task.c). */
static void set_task_throttling(struct omp_thread *t, const char *name, const char *v,
                                bool at_start)
{
    (void)t, (void)at_start;
    omp_tasks_throttle(parse_bool(name, v));
}

static const struct setting {
    const char *name;
    void (*set)(struct omp_thread *t, const char *name, const char *value, bool at_start);
} settings[] = {
    {"OMP_NUM_THREADS", set_num_threads},
    {"OMP_DYNAMIC", set_dynamic},
    {"OMP_CANCELLATION", set_cancellation},
    {"OMP_MAX_TASK_PRIORITY", set_max_task_priority},
    {"OMP_SCHEDULE", set_schedule},
    {"OMP_TARGET_OFFLOAD", set_target_offload},
    {"OMP_NUM_TEAMS", set_num_teams},
    {"OMP_TEAMS_THREAD_LIMIT", set_teams_thread_limit},
    {"OMP_NESTED", set_nested},
    {"OMP_MAX_ACTIVE_LEVELS", set_max_active_levels},
    {"OMP_THREAD_LIMIT", set_thread_limit},
    {"OMP_WAIT_POLICY", set_wait_policy},
    {"KMP_BLOCKTIME", set_blocktime},
    {"KMP_ENABLE_TASK_THROTTLING", set_task_throttling},
};

static const struct setting *setting_named(const char *name, size_t len);

/* The settings that other runtimes read and dsm does not honour, each
 * with why: said at start, one line each (node 0), when the environment
 * sets them. Those honoured elsewhere (OMPT's, affinity's, DSM_*) are not
 * listed: every other OMP_ or KMP_ name is said too, as unknown. */
static const struct unhonoured {
    const char *name, *why;
} unhonoured[] = {
    {"OMP_STACKSIZE", "a node's helper threads have the C library's default stack"},
    {"KMP_STACKSIZE", "a node's helper threads have the C library's default stack"},
    {"OMP_DEFAULT_DEVICE", "dsm has no device but the host"},
    {"OMP_ALLOCATOR", "dsm has no memory allocators (omp_alloc fails to link)"},
    {"OMP_DISPLAY_ENV", "dsm does not print its settings"},
    {"OMP_DEBUG", "dsm has no debugging interface (OMPD)"},
    {"KMP_SETTINGS", "dsm does not print its settings"},
    {"KMP_AFFINITY", "libomp's affinity syntax: use OMP_PLACES and OMP_PROC_BIND"},
    {"KMP_HW_SUBSET", "libomp's topology subset: a node's threads are as dsmrun --threads says"},
    {"KMP_TOPOLOGY_METHOD", "libomp's topology discovery"},
    {"KMP_LOCK_KIND", "dsm's locks are its own (sync/lock.c, cohort.c)"},
    {"KMP_USER_LOCK_KIND", "dsm's locks are its own (sync/lock.c, cohort.c)"},
    {"KMP_SPIN_BACKOFF_PARAMS", "dsm's locks are its own (sync/lock.c, cohort.c)"},
    {"KMP_DISP_NUM_BUFFERS", "dsm has no dispatch buffers: node 0 keeps each dynamic loop's "
                             "chunks, any number of loops at once"},
    {"KMP_TASKLOOP_MIN_TASKS", "taskloop cuts ten tasks per thread without grainsize or num_tasks"},
    {"KMP_LIBRARY", "libomp's wait modes: KMP_BLOCKTIME and OMP_WAIT_POLICY are honoured"},
    {"KMP_ALL_THREADS", "use OMP_THREAD_LIMIT"},
    {"KMP_DEVICE_THREAD_LIMIT", "use OMP_THREAD_LIMIT"},
    {"KMP_TEAMS_THREAD_LIMIT", "use OMP_TEAMS_THREAD_LIMIT"},
    {"KMP_FORCE_REDUCTION", "dsm's reductions always merge under a lock"},
    {"KMP_DETERMINISTIC_REDUCTION", "dsm's reductions always merge under a lock"},
    {"KMP_WARNINGS", "dsm says what it does not do whatever this says"},
};

/* Settings honoured by other files (ompt.c, affinity.c): not said. */
static const char *const honoured_elsewhere[] = {
    "OMP_TOOL", "OMP_TOOL_LIBRARIES", "OMP_TOOL_VERBOSE_INIT",
    "OMP_PLACES", "OMP_PROC_BIND", "OMP_DISPLAY_AFFINITY", "OMP_AFFINITY_FORMAT",
    "KMP_AFFINITY_FORMAT",
};

/* Node 0, once at its start: one line per OMP_ or KMP_ setting that dsm
 * reads as a name but does not honour, or does not know. */
static void say_unhonoured(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || (strncmp(*e, "OMP_", 4) && strncmp(*e, "KMP_", 4)))
            continue;
        size_t len = (size_t)(eq - *e);
        if (setting_named(*e, len))
            continue;
        bool known = false;
        for (size_t i = 0; i < sizeof honoured_elsewhere / sizeof honoured_elsewhere[0]; i++)
            known |= strlen(honoured_elsewhere[i]) == len && !strncmp(honoured_elsewhere[i], *e, len);
        if (known)
            continue;
        const char *why = "dsm does not know it";
        for (size_t i = 0; i < sizeof unhonoured / sizeof unhonoured[0]; i++)
            if (strlen(unhonoured[i].name) == len && !strncmp(unhonoured[i].name, *e, len))
                why = unhonoured[i].why;
        log_warn("%s is not honoured: %s", *e, why);
    }
}

static const struct setting *setting_named(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (strlen(settings[i].name) == len && !strncmp(settings[i].name, name, len))
            return &settings[i];
    return NULL;
}

void omp_settings_from_env(struct omp_thread *t)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *v = getenv(settings[i].name);
        if (v && *v)
            settings[i].set(t, settings[i].name, v, true);
    }
    static DSM_STATE bool said; /* the node's first thread, before any other runs */
    if (!said && job()->rank == 0)
        say_unhonoured();
    said = true;
    if (t->icv.blocktime >= 0)
        omp_apply_blocktime(t->icv.blocktime);
}

/* The settings as the master read them before main. libomp reads the
 * environment at the program's first OpenMP call, so a program may set
 * OMP_SCHEDULE (or any other) with setenv in main before it, and have it
 * honoured (LLVM's kmp_sch_simd_runtime_static does so); dsm reads them
 * before main, on every node, and at that first call the master takes
 * again those main changed, as kmp_set_defaults would: its next regions
 * carry them to every node's threads. */
#define SETTINGS_COUNT (sizeof settings / sizeof settings[0])
static DSM_STATE char *read_before_main[SETTINGS_COUNT];

void omp_settings_recheck_owed(struct omp_thread *t)
{
    for (size_t i = 0; i < SETTINGS_COUNT; i++) {
        const char *v = getenv(settings[i].name);
        if (v && !(read_before_main[i] = strdup(v)))
            log_fatal("out of memory for the OpenMP settings");
    }
    t->settings_owed = true;
}

void omp_settings_since_main(struct omp_thread *t)
{
    t->settings_owed = false;
    for (size_t i = 0; i < SETTINGS_COUNT; i++) {
        const char *name = settings[i].name, *now = getenv(name);
        char *before = read_before_main[i];
        read_before_main[i] = NULL;
        if (now && !*now)
            now = NULL; /* an empty setting is no setting, as at the start */
        if ((!now && (!before || !*before)) || (now && before && !strcmp(now, before))) {
            free(before);
            continue;
        }
        if (!now)
            log_warn("%s was unset by the program before its first OpenMP call: the value read "
                     "at the start, %s, stays",
                     name, before);
        else if (settings[i].set == set_cancellation)
            log_warn("%s=%s, set by the program, is ignored: cancel-var is read once, at the "
                     "start, on every node (set it in dsmrun's environment)",
                     name, now);
        else
            settings[i].set(t, name, now, false);
        free(before);
    }
    if (t->icv.blocktime >= 0)
        omp_apply_blocktime(t->icv.blocktime);
}

void kmp_set_defaults(const char *str)
{
    struct omp_thread *t = omp_self();
    if (!str)
        return;
    char *copy = strdup(str), *save = NULL;
    if (!copy)
        log_fatal("out of memory for kmp_set_defaults");
    for (char *item = strtok_r(copy, "|", &save); item; item = strtok_r(NULL, "|", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || !eq[1])
            continue; /* no value: nothing to set, as libomp */
        const struct setting *s = setting_named(item, (size_t)(eq - item));
        if (s) {
            *eq = '\0';
            s->set(t, item, eq + 1, false);
        }
    }
    free(copy);
}

/* libomp's entry for libomptarget: target-offload-var (0 disabled, 1
 * default, 2 mandatory, as kmp.h's kmp_target_offload_kind). */
int __kmpc_get_target_offload(void) { return omp_self()->icv.target_offload; }

/* ---- libomp's kmp_* settings routines ------------------------------------ */

void omp_apply_blocktime(int ms)
{
    spin_set_max(ms < 0 ? SPIN_DEFAULT_NS : (uint64_t)ms * 1000000u);
}

/* The calling thread's blocktime-var; its team's threads on every node
 * take it with its next region (region.c). */
int kmp_get_blocktime(void)
{
    int ms = omp_self()->icv.blocktime;
    return ms < 0 ? 0 : ms; /* dsm's own: 50 µs at most, less than a millisecond */
}

void kmp_set_blocktime(int ms)
{
    struct omp_thread *t = omp_self();
    t->icv.blocktime = ms < 0 ? 0 : ms;
    omp_apply_blocktime(t->icv.blocktime);
}

/* libomp's dispatch buffers bound how many nowait dynamic loops a team
 * may have in flight; dsm's chunks come from node 0, loop by loop, with
 * no such bound: nothing to set (KMP_DISP_NUM_BUFFERS is said at start). */
void kmp_set_disp_num_buffers(int n) { (void)n; }

/* libomp's library modes (serial, turnaround, throughput) choose how its
 * threads wait; dsm's wait as blocktime-var says. Reported as set. */
static DSM_STATE int library_mode = 3; /* throughput, libomp's default */
void kmp_set_library(int mode)
{
    if (mode >= 1 && mode <= 3)
        library_mode = mode;
}
void kmp_set_library_serial(void) { kmp_set_library(1); }
void kmp_set_library_turnaround(void) { kmp_set_library(2); }
void kmp_set_library_throughput(void) { kmp_set_library(3); }
int kmp_get_library(void) { return library_mode; }

void kmp_set_warnings_on(void) {}
void kmp_set_warnings_off(void) {}
