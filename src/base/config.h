/*
 * config.h — the one table of environment settings.
 *
 * Every tunable of dsm is an environment variable described once in
 * config.c (name, type, default, range, one-line description). The table
 * parses them, rejects bad values with a clear message, and prints them for
 * `dsmrun --help-env`.
 */
#ifndef DSM_BASE_CONFIG_H
#define DSM_BASE_CONFIG_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

/* DSM_PROTOCOL's choices, "hlrc|lrc|...": the names coherence/protocols.def
 * lists (read here with the preprocessor, so the list is written once). */
extern const char *const config_protocols;

/* DSM_WRITE_WATCH (mem/watch.c): the index of its choice. */
enum write_watch { WRITE_WATCH_OFF, WRITE_WATCH_AUTO, WRITE_WATCH_ON };

struct dsm_config {
    double   peer_timeout_s;   /* DSM_PEER_TIMEOUT */
    double   net_loss;         /* DSM_NET_LOSS */
    double   net_dup;          /* DSM_NET_DUP */
    double   net_reorder;      /* DSM_NET_REORDER */
    int64_t  net_delay_us;     /* DSM_NET_DELAY_US */
    int64_t  net_seed;         /* DSM_NET_SEED */
    int64_t  net_datagram;     /* DSM_NET_DATAGRAM, 0 = auto */
    int64_t  net_window;       /* DSM_NET_WINDOW */
    int64_t  net_transport;    /* DSM_NET: 0 = udp, 1 = ucx */
    int64_t  net_auth_mac;     /* DSM_NET_AUTH: 1 = mac, 0 = token */
    int64_t  net_spin_us;      /* DSM_NET_SPIN_US, -1 = adapt */
    int64_t  net_one_sided;    /* DSM_NET_ONE_SIDED: enum net_one_sided */
    int64_t  service_poll;     /* DSM_SERVICE_POLL: enum net_service_poll */
    const char *net_bind;      /* DSM_NET_BIND, NULL if unset */
    int64_t  ipc_window;       /* DSM_IPC_WINDOW */
    int64_t  ipc_inline_max;   /* DSM_IPC_INLINE_MAX */
    int64_t  region_size;      /* DSM_REGION_SIZE */
    int64_t  region_base;      /* DSM_REGION_BASE */
    int64_t  page_size;        /* DSM_PAGE_SIZE */
    int64_t  local_mem;        /* DSM_LOCAL_MEM, 0 = no limit */
    int64_t  replacement;      /* DSM_REPLACEMENT: 0 = fifo, 1 = clock */
    const char *home_dir;      /* DSM_HOME_DIR, NULL if unset */
    int64_t  home;             /* DSM_HOME: index into local|cyclic|block|first-touch */
    int64_t  protocol;         /* DSM_PROTOCOL: index into config_protocols */
    int64_t  lrc_gc_notices;   /* DSM_LRC_GC_NOTICES */
    int64_t  barrier_fanout;   /* DSM_BARRIER_FANOUT */
    int64_t  threads;          /* DSM_THREADS */
    int64_t  cpus;             /* DSM_CPUS, 0 = auto */
    int64_t  sc_window_us;     /* DSM_SC_WINDOW_US */
    int64_t  read_ahead;       /* DSM_READ_AHEAD */
    int64_t  write_ahead;      /* DSM_WRITE_AHEAD */
    int64_t  pull_credit;      /* DSM_PULL_CREDIT */
    int64_t  write_watch;      /* DSM_WRITE_WATCH: enum write_watch */
    int64_t  shared_globals;   /* DSM_SHARED_GLOBALS */
    int64_t  stats;            /* DSM_STATS */
    const char *stats_json;    /* DSM_STATS_JSON, NULL if unset */
    const char *trace;         /* DSM_TRACE, NULL if unset */
    const char *profile;       /* DSM_PROFILE, NULL if unset */
    const char *omp_static;    /* DSM_OMP_STATIC, NULL if unset */
    double      profiled_gain; /* DSM_PROFILED_GAIN */
    int64_t     atomic_at_home; /* DSM_ATOMIC_AT_HOME */
    int64_t     migrate_pages;  /* DSM_MIGRATE_PAGES */
    int64_t     migrate_homes;  /* DSM_MIGRATE_HOMES */
    int64_t     migrate_period; /* DSM_MIGRATE_PERIOD */
    int64_t     migrate_max;    /* DSM_MIGRATE_MAX */
    int64_t     check;          /* DSM_CHECK: the invariant checks (base/check.h) */
    uint64_t    user_set[2];    /* which of the table's entries the user set (config_was_set) */
};

/* Parses the environment into *cfg. On a bad value, writes one line naming
 * the variable, the value and the accepted range into err and returns -EINVAL. */
int config_load(struct dsm_config *cfg, char *err, size_t errlen);

/* config_load, with NAME=VALUE assignments (`nover` of them, the last of a
 * name winning) over the environment's values: what a launcher will hand
 * its nodes, checked once before it starts them. */
int config_load_over(struct dsm_config *cfg, const char *const *over, int nover, char *err,
                     size_t errlen);

/* Parses one setting's value into *cfg, as config_load does for each
 * variable it finds (the parser alone: tests and fuzzing). Returns 0, or
 * -EINVAL with the line in err, or -ENOENT for a name not in the table. */
int config_set(struct dsm_config *cfg, const char *name, const char *value, char *err,
               size_t errlen);

/* The DSM_* variables among env (NAME=VALUE strings, as environ; a name
 * twice is said once) that dsm neither reads nor hands its nodes, each with
 * the known name nearest to it where one is near enough to be the one
 * meant ("DSM_PAGESIZE (did you mean DSM_PAGE_SIZE?), DSM_FOO"), into out
 * (truncated to len). Returns how many there are: a misspelt name would
 * otherwise be ignored in silence, where every bad value is refused. */
int config_unknown_names(const char *const *env, int nenv, char *out, size_t len);

/* The fewest one-character insertions, deletions, substitutions and swaps
 * of neighbours that make a into b, letters' case aside (the first 63
 * characters of each): how far a typo is from a name. */
int config_edit_distance(const char *a, const char *b);

/* Whether a name `distance` edits from a known one, of `letters` letters
 * that count, is near enough to be that one mistyped: a third of them
 * wrong, or two (dsmrun's options and the settings both judge so). */
bool config_typo_near(int distance, int letters);

/* Whether the user gave the setting `name` a value (the environment, or an
 * assignment config_load_over took), rather than it keeping its default:
 * a default that depends on the program (runtime.c) yields to any value
 * the user chose, the default's own included. False for a name the table
 * does not hold. */
bool config_was_set(const struct dsm_config *cfg, const char *name);

/* The name of the chosen protocol (DSM_PROTOCOL), into out. */
void config_protocol_name(const struct dsm_config *cfg, char *out, size_t outlen);

/* The settings every node of a job must share, as "NAME=VALUE NAME=VALUE
 * ...", into out (truncated to len; returns the length it needed):
 * launchers that do not pass the environment to every host (mpirun without
 * -x) could otherwise start nodes that disagree, which then misread each
 * other's messages. */
size_t config_job_wide(const struct dsm_config *cfg, char *out, size_t len);
/* Whether two such strings differ; if so the first setting that does, and
 * its value in each, into name, my_value and their_value. */
int config_job_wide_differ(const char *mine, const char *theirs, char *name, size_t name_len,
                           char *my_value, char *their_value, size_t value_len);

/* Who a setting is for: what users tune (`dsmrun --help-env`), what
 * those who know the protocols tune, and what the tests use (fault
 * injection, checks); `--help-env=all` shows every one, marked. */
enum config_audience { CFG_USER, CFG_EXPERT, CFG_TEST };

/* Prints the table (name, type, default, range, description): the users'
 * settings, or with all every one, the others marked as expert or test. */
void config_print_help(FILE *out, bool all);

/* Applies defaults only (no environment); for tests. */
void config_defaults(struct dsm_config *cfg);

#endif
