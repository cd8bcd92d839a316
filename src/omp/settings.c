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
};

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
