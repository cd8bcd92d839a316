/*
 * test_config.c — the table of environment settings: defaults, parsing of
 * each type, rejection of bad values with a message naming the variable,
 * and the help listing every variable.
 */
#include "check.h"
#include "net/seqwin.h"
#include "base/config.h"
#include "runtime/settings.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const char *const names[] = {
    "DSM_PEER_TIMEOUT", "DSM_NET", "DSM_NET_LOSS",    "DSM_NET_DUP",      "DSM_NET_REORDER",
    "DSM_NET_DELAY_US", "DSM_NET_SEED",    "DSM_NET_DATAGRAM", "DSM_NET_WINDOW",
    "DSM_NET_AUTH",     "DSM_NET_SPIN_US", "DSM_IPC_WINDOW",   "DSM_IPC_INLINE_MAX",
    "DSM_STATS",        "DSM_STATS_JSON",  "DSM_REGION_SIZE",  "DSM_REGION_BASE",
    "DSM_PAGE_SIZE",    "DSM_HOME", "DSM_PROTOCOL", "DSM_LRC_GC_NOTICES", "DSM_NET_BIND",
    "DSM_SHARED_GLOBALS",
    "DSM_TRACE", "DSM_OMP_STATIC", "DSM_PROFILED_GAIN", "DSM_BARRIER_FANOUT",
    "DSM_MIGRATE_PAGES", "DSM_MIGRATE_HOMES", "DSM_MIGRATE_PERIOD", "DSM_MIGRATE_MAX",
    "DSM_LOCAL_MEM", "DSM_REPLACEMENT", "DSM_HOME_DIR", "DSM_SC_WINDOW_US", "DSM_CHECK",
    "DSM_THREADS", "DSM_CPUS", "DSM_NET_ONE_SIDED", "DSM_READ_AHEAD", "DSM_WRITE_AHEAD",
    "DSM_PULL_CREDIT", "DSM_WRITE_WATCH",
    "DSM_ATOMIC_AT_HOME", "DSM_SERVICE_POLL", "DSM_PROFILE",
};
#define NNAMES (sizeof names / sizeof names[0])

/* Removes every DSM_ variable, so the tests see only what they set. */
static void clear_env(void)
{
    for (;;) {
        char **e = environ;
        while (e && *e && strncmp(*e, "DSM_", 4) != 0)
            e++;
        if (!e || !*e)
            return;
        char name[256];
        size_t n = strcspn(*e, "=");
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = 0;
        unsetenv(name);
    }
}

static void expect_defaults(const struct dsm_config *c)
{
    CHECK(c->peer_timeout_s == 10);
    CHECK(c->net_loss == 0);
    CHECK(c->net_dup == 0);
    CHECK(c->net_reorder == 0);
    CHECK_EQ(c->net_delay_us, 0);
    CHECK_EQ(c->net_seed, 0);
    CHECK_EQ(c->net_datagram, 0);   /* auto: from the interface's MTU */
    CHECK_EQ(c->net_window, 64);
    CHECK_EQ(c->net_auth_mac, 1);
    CHECK_EQ(c->net_spin_us, -1);
    CHECK_EQ(c->ipc_window, 8);
    CHECK_EQ(c->ipc_inline_max, 1024);
    CHECK_EQ(c->stats, 0);
    CHECK(c->stats_json == NULL);
    CHECK_EQ(c->migrate_pages, 0);
    CHECK_EQ(c->migrate_homes, 0);
    CHECK_EQ(c->migrate_period, 4);
    CHECK_EQ(c->migrate_max, 0);
}

static void test_defaults_apply_without_environment(void)
{
    struct dsm_config c;
    memset(&c, 0x5a, sizeof c);
    config_defaults(&c);
    expect_defaults(&c);

    clear_env();
    char err[200] = "untouched";
    memset(&c, 0x5a, sizeof c);
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    expect_defaults(&c);
}

/* Loads with name=value as the only setting; returns config_load's result
 * and leaves the message in err. */
static int load_one(const char *name, const char *value, struct dsm_config *c, char *err,
                    size_t errlen)
{
    clear_env();
    setenv(name, value, 1);
    err[0] = 0;
    int rc = config_load(c, err, errlen);
    unsetenv(name);
    return rc;
}

static void expect_int(const char *name, const char *value, size_t offset, int64_t want, int line)
{
    struct dsm_config c;
    char err[200];
    int rc = load_one(name, value, &c, err, sizeof err);
    int64_t got;
    memcpy(&got, (char *)&c + offset, sizeof got);
    if (rc != 0 || got != want)
        fprintf(stderr, "line %d: %s=%s: rc %d, value %lld, want %lld (%s)\n", line, name,
                value, rc, (long long)got, (long long)want, err);
    CHECK_EQ(rc, 0);
    CHECK_EQ(got, want);
}
#define EXPECT_INT(name, value, field, want)                                   \
    expect_int(name, value, offsetof(struct dsm_config, field), want, __LINE__)

static void expect_number(const char *name, const char *value, size_t offset, double want,
                          int line)
{
    struct dsm_config c;
    char err[200];
    int rc = load_one(name, value, &c, err, sizeof err);
    double got;
    memcpy(&got, (char *)&c + offset, sizeof got);
    if (rc != 0 || got != want)
        fprintf(stderr, "line %d: %s=%s: rc %d, value %g, want %g (%s)\n", line, name, value,
                rc, got, want, err);
    CHECK_EQ(rc, 0);
    CHECK(got == want);
}
#define EXPECT_NUMBER(name, value, field, want)                                \
    expect_number(name, value, offsetof(struct dsm_config, field), want, __LINE__)

/* A bad value: -EINVAL, and one line that names the variable and the value. */
static void expect_bad(const char *name, const char *value, int line)
{
    struct dsm_config c;
    char err[200];
    int rc = load_one(name, value, &c, err, sizeof err);
    int named = strstr(err, name) != NULL && (!*value || strstr(err, value) != NULL);
    if (rc != -EINVAL || !named)
        fprintf(stderr, "line %d: %s=\"%s\": rc %d, message \"%s\"\n", line, name, value, rc, err);
    CHECK_EQ(rc, -EINVAL);
    CHECK(named);
    CHECK(strchr(err, '\n') == NULL);
}
#define EXPECT_BAD(name, value) expect_bad(name, value, __LINE__)

static void test_integers_parse_within_their_range(void)
{
    EXPECT_INT("DSM_NET_DATAGRAM", "1400", net_datagram, 1400);
    EXPECT_INT("DSM_NET_DATAGRAM", "1024", net_datagram, 1024);   /* both ends */
    EXPECT_INT("DSM_NET_DATAGRAM", "65000", net_datagram, 65000);
    EXPECT_INT("DSM_NET_DATAGRAM", "+8900", net_datagram, 8900);
    EXPECT_INT("DSM_NET_DATAGRAM", "auto", net_datagram, 0);
    EXPECT_INT("DSM_NET_DELAY_US", "0", net_delay_us, 0);
    EXPECT_INT("DSM_NET_DELAY_US", "1000000", net_delay_us, 1000000);
    EXPECT_INT("DSM_NET_SEED", "12345", net_seed, 12345);
    EXPECT_INT("DSM_NET_SEED", "9000000000000000", net_seed, 9000000000000000ll);
    EXPECT_INT("DSM_NET_WINDOW", "4", net_window, 4);
    EXPECT_INT("DSM_NET_WINDOW", "32", net_window, 32);
    EXPECT_INT("DSM_NET_SPIN_US", "-1", net_spin_us, -1);          /* negative minimum */
    EXPECT_INT("DSM_NET_SPIN_US", "0", net_spin_us, 0);
    EXPECT_INT("DSM_NET_SPIN_US", "100000", net_spin_us, 100000);
    EXPECT_INT("DSM_IPC_WINDOW", "1", ipc_window, 1);
    EXPECT_INT("DSM_IPC_WINDOW", "256", ipc_window, 256);
    EXPECT_INT("DSM_IPC_INLINE_MAX", "0", ipc_inline_max, 0);
    EXPECT_INT("DSM_IPC_INLINE_MAX", "8192", ipc_inline_max, 8192);
    EXPECT_INT("DSM_BARRIER_FANOUT", "2", barrier_fanout, 2);
    EXPECT_INT("DSM_BARRIER_FANOUT", "32", barrier_fanout, 32);
    EXPECT_INT("DSM_SC_WINDOW_US", "0", sc_window_us, 0);
    EXPECT_INT("DSM_SC_WINDOW_US", "1000000", sc_window_us, 1000000);
    EXPECT_INT("DSM_MIGRATE_PERIOD", "1", migrate_period, 1);
    EXPECT_INT("DSM_MIGRATE_MAX", "100000", migrate_max, 100000);
    EXPECT_INT("DSM_MIGRATE_MAX", "0", migrate_max, 0);
    EXPECT_INT("DSM_MIGRATE_HOMES", "on", migrate_homes, 1);
}

static void test_sizes_take_suffixes_and_addresses_hex(void)
{
    EXPECT_INT("DSM_REGION_SIZE", "64G", region_size, 64ll << 30);
    EXPECT_INT("DSM_REGION_SIZE", "512M", region_size, 512ll << 20);
    EXPECT_INT("DSM_REGION_SIZE", "1048576", region_size, 1048576);
    EXPECT_INT("DSM_PAGE_SIZE", "8K", page_size, 8192);
    EXPECT_INT("DSM_PAGE_SIZE", "65536", page_size, 65536);
    EXPECT_INT("DSM_REGION_BASE", "0x300000000000", region_base, 0x300000000000ll);
    EXPECT_BAD("DSM_REGION_SIZE", "64Q");
    EXPECT_BAD("DSM_REGION_SIZE", "-1G");
    EXPECT_BAD("DSM_REGION_SIZE", "1K");        /* below 1 MiB */
    EXPECT_BAD("DSM_REGION_SIZE", "99999999T"); /* overflows */
    EXPECT_BAD("DSM_PAGE_SIZE", "128K");
    EXPECT_BAD("DSM_REGION_BASE", "zz");
    EXPECT_BAD("DSM_HOME", "remote");
    EXPECT_BAD("DSM_PROTOCOL", "ivy");
}

/* A coherence unit that is not a power of two, and a region base that does
 * not suit the largest unit, fail validation (not later, at mapping). */
static void test_page_size_and_region_base_keep_their_rules(void)
{
    EXPECT_INT("DSM_PAGE_SIZE", "4096", page_size, 4096);
    EXPECT_INT("DSM_PAGE_SIZE", "16K", page_size, 16384);
    EXPECT_BAD("DSM_PAGE_SIZE", "12288");
    EXPECT_BAD("DSM_PAGE_SIZE", "5000");
    EXPECT_INT("DSM_REGION_BASE", "200000010000", region_base, 0x200000010000ll);
    EXPECT_BAD("DSM_REGION_BASE", "200000001000");
    EXPECT_BAD("DSM_REGION_BASE", "200000000001");
    struct dsm_config c;
    char err[200];
    CHECK(config_set(&c, "DSM_REGION_BASE", "0x300000008000", err, sizeof err) == -EINVAL);
    CHECK(strstr(err, "DSM_REGION_BASE=0x300000008000") && strstr(err, "aligned to 0x10000"));
}

/* config_load_over: what a launcher will hand its nodes, assignments over
 * the environment, the last of a name winning. */
static void test_assignments_override_the_environment(void)
{
    struct dsm_config c;
    char err[200];
    clear_env();
    setenv("DSM_NET_LOSS", "2", 1);
    CHECK_EQ(config_load_over(&c, NULL, 0, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_NET_LOSS=2") != NULL);
    const char *fix[] = {"DSM_NET_LOSSY=1", "DSM_NET_LOSS=0.5", "DSM_NET_LOSS=0.25"};
    CHECK_EQ(config_load_over(&c, fix, 3, err, sizeof err), 0);
    CHECK(c.net_loss == 0.25);
    unsetenv("DSM_NET_LOSS");
    const char *bad[] = {"DSM_PAGE_SIZE=8192", "DSM_NET_WINDOW=65"};
    CHECK_EQ(config_load_over(&c, bad, 2, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_NET_WINDOW=65") != NULL);
}

/* A default that depends on the program yields to the user's value, even
 * one equal to the table's default (runtime.c's DSM_MIGRATE_HOMES). */
static void test_was_set_tells_a_value_given_from_the_default(void)
{
    struct dsm_config c;
    char err[200];
    clear_env();
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(!config_was_set(&c, "DSM_MIGRATE_HOMES"));
    CHECK(!config_was_set(&c, "DSM_THREADS"));
    setenv("DSM_MIGRATE_HOMES", "0", 1);
    const char *over[] = {"DSM_THREADS=1"};
    CHECK_EQ(config_load_over(&c, over, 1, err, sizeof err), 0);
    CHECK(config_was_set(&c, "DSM_MIGRATE_HOMES"));
    CHECK(config_was_set(&c, "DSM_THREADS"));
    CHECK(!config_was_set(&c, "DSM_HOME"));
    CHECK(!config_was_set(&c, "DSM_NO_SUCH_SETTING"));
    unsetenv("DSM_MIGRATE_HOMES");
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(!config_was_set(&c, "DSM_MIGRATE_HOMES"));
    config_defaults(&c);
    CHECK_EQ(config_set(&c, "DSM_HOME", "local", err, sizeof err), 0);
    CHECK(config_was_set(&c, "DSM_HOME"));
}

static void test_local_memory_settings_parse_and_reject_bad_values(void)
{
    EXPECT_INT("DSM_LOCAL_MEM", "0", local_mem, 0);
    EXPECT_INT("DSM_LOCAL_MEM", "64K", local_mem, 64ll << 10);
    EXPECT_INT("DSM_LOCAL_MEM", "3m", local_mem, 3ll << 20);
    EXPECT_INT("DSM_LOCAL_MEM", "2G", local_mem, 2ll << 30);
    EXPECT_INT("DSM_LOCAL_MEM", "12345", local_mem, 12345);
    EXPECT_BAD("DSM_LOCAL_MEM", "-1M");
    EXPECT_BAD("DSM_LOCAL_MEM", "1.5M");
    EXPECT_BAD("DSM_LOCAL_MEM", "64KB");
    EXPECT_BAD("DSM_LOCAL_MEM", "lots");
    EXPECT_BAD("DSM_LOCAL_MEM", "99999999T");
    EXPECT_INT("DSM_REPLACEMENT", "fifo", replacement, 0);
    EXPECT_INT("DSM_REPLACEMENT", "clock", replacement, 1);
    EXPECT_BAD("DSM_REPLACEMENT", "lru");
    EXPECT_BAD("DSM_REPLACEMENT", "FIFO");
    EXPECT_BAD("DSM_REPLACEMENT", "");
    struct dsm_config c;
    char err[200];
    clear_env();
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK_EQ(c.local_mem, 0);   /* no limit */
    CHECK_EQ(c.replacement, 1); /* clock */
    CHECK(c.home_dir == NULL);
    setenv("DSM_LOCAL_MEM", "8Q", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_LOCAL_MEM=8Q") != NULL);
    setenv("DSM_LOCAL_MEM", "1M", 1);
    setenv("DSM_REPLACEMENT", "random", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_REPLACEMENT=random: expected one of fifo|clock") != NULL);
    setenv("DSM_REPLACEMENT", "fifo", 1);
    setenv("DSM_HOME_DIR", "/var/tmp", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK_EQ(c.local_mem, 1 << 20);
    CHECK_EQ(c.replacement, 0);
    CHECK(c.home_dir && strcmp(c.home_dir, "/var/tmp") == 0);
    clear_env();
}

static void test_bad_integers_are_rejected_by_name(void)
{
    EXPECT_BAD("DSM_NET_DATAGRAM", "1023");   /* out of range */
    EXPECT_BAD("DSM_NET_DATAGRAM", "65001");
    EXPECT_BAD("DSM_NET_DATAGRAM", "-1400");
    EXPECT_BAD("DSM_NET_DATAGRAM", "1400x");  /* trailing junk */
    EXPECT_BAD("DSM_NET_DATAGRAM", "1400 ");
    EXPECT_BAD("DSM_NET_DATAGRAM", "1.5e3");
    EXPECT_BAD("DSM_NET_DATAGRAM", "0x1000");
    EXPECT_BAD("DSM_NET_DATAGRAM", "");       /* empty */
    EXPECT_BAD("DSM_NET_DATAGRAM", " ");
    EXPECT_BAD("DSM_NET_DATAGRAM", "big");
    EXPECT_BAD("DSM_NET_DATAGRAM", "99999999999999999999"); /* past int64 */
    EXPECT_BAD("DSM_NET_SEED", "-1");
    EXPECT_BAD("DSM_NET_SEED", "9000000000000001");
    EXPECT_BAD("DSM_NET_SEED", "-9223372036854775809");
    EXPECT_BAD("DSM_NET_SPIN_US", "-2");
    EXPECT_BAD("DSM_NET_SPIN_US", "100001");
    EXPECT_BAD("DSM_NET_DELAY_US", "1000001");
    EXPECT_BAD("DSM_NET_WINDOW", "3");
    EXPECT_BAD("DSM_BARRIER_FANOUT", "1");  /* a chain of one: no tree */
    EXPECT_BAD("DSM_BARRIER_FANOUT", "33"); /* past what one arrival message gathers */
    EXPECT_BAD("DSM_SC_WINDOW_US", "-1");
    EXPECT_BAD("DSM_SC_WINDOW_US", "1000001"); /* past a second: a window, not a lease */
    EXPECT_BAD("DSM_SC_WINDOW_US", "1ms");
    EXPECT_BAD("DSM_IPC_WINDOW", "0");
    EXPECT_BAD("DSM_IPC_WINDOW", "257");
    EXPECT_BAD("DSM_IPC_INLINE_MAX", "8193");
    EXPECT_BAD("DSM_MIGRATE_PERIOD", "0");
    EXPECT_BAD("DSM_MIGRATE_MAX", "-1");
    EXPECT_BAD("DSM_MIGRATE_PAGES", "sometimes");
}

/* The transport keeps at most SEQWIN_MAX datagrams in flight (the width of
 * the selective acknowledgement, as the README says): a larger window must
 * be refused, not silently cut down. */
static void test_net_window_beyond_the_sack_width_is_rejected(void)
{
    char v[16];
    snprintf(v, sizeof v, "%d", SEQWIN_MAX);
    EXPECT_INT("DSM_NET_WINDOW", v, net_window, SEQWIN_MAX);
    snprintf(v, sizeof v, "%d", SEQWIN_MAX + 1);
    EXPECT_BAD("DSM_NET_WINDOW", v);
    EXPECT_BAD("DSM_NET_WINDOW", "1024");
}

static void test_numbers_parse_within_their_range(void)
{
    EXPECT_NUMBER("DSM_NET_LOSS", "0.25", net_loss, 0.25);
    EXPECT_NUMBER("DSM_NET_LOSS", "0", net_loss, 0);
    EXPECT_NUMBER("DSM_NET_LOSS", "0.9", net_loss, 0.9);  /* the ceiling itself */
    EXPECT_NUMBER("DSM_NET_LOSS", "1e-3", net_loss, 1e-3);
    EXPECT_NUMBER("DSM_NET_DUP", ".5", net_dup, 0.5);
    EXPECT_NUMBER("DSM_NET_REORDER", "0.125", net_reorder, 0.125);
    EXPECT_NUMBER("DSM_PEER_TIMEOUT", "0.2", peer_timeout_s, 0.2);
    EXPECT_NUMBER("DSM_PEER_TIMEOUT", "3600", peer_timeout_s, 3600);
    EXPECT_NUMBER("DSM_PEER_TIMEOUT", "30", peer_timeout_s, 30);
}

static void test_bad_numbers_are_rejected_by_name(void)
{
    EXPECT_BAD("DSM_NET_LOSS", "0.91");       /* out of range */
    EXPECT_BAD("DSM_NET_LOSS", "1");
    EXPECT_BAD("DSM_NET_LOSS", "-0.1");
    EXPECT_BAD("DSM_NET_LOSS", "0.1x");       /* trailing junk */
    EXPECT_BAD("DSM_NET_LOSS", "0.1 ");
    EXPECT_BAD("DSM_NET_LOSS", "10%");
    EXPECT_BAD("DSM_NET_LOSS", "");           /* empty */
    EXPECT_BAD("DSM_NET_LOSS", "nan");        /* not finite */
    EXPECT_BAD("DSM_NET_LOSS", "NAN");
    EXPECT_BAD("DSM_NET_LOSS", "-nan");
    EXPECT_BAD("DSM_NET_DUP", "inf");
    EXPECT_BAD("DSM_NET_DUP", "-inf");
    EXPECT_BAD("DSM_NET_REORDER", "infinity");
    EXPECT_BAD("DSM_PEER_TIMEOUT", "0.1");
    EXPECT_BAD("DSM_PEER_TIMEOUT", "3601");
    EXPECT_BAD("DSM_PEER_TIMEOUT", "1e400");  /* overflows a double */
    EXPECT_BAD("DSM_PEER_TIMEOUT", "ten");
}

static void test_booleans_take_the_usual_words(void)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        EXPECT_INT("DSM_STATS", yes[i], stats, 1);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        EXPECT_INT("DSM_STATS", no[i], stats, 0);
    EXPECT_BAD("DSM_STATS", "2");
    EXPECT_BAD("DSM_STATS", "-1");
    EXPECT_BAD("DSM_STATS", "maybe");
    EXPECT_BAD("DSM_STATS", "yes ");
    EXPECT_BAD("DSM_STATS", "10");
}

/* One rule for every setting: empty, blank, or blanks around a value are
 * refused, whatever the type (an empty yes/no once meant no, an empty
 * number was refused, and strtod took ' 3' but not '4 4'). */
static void test_empty_and_blank_values_are_refused_alike(void)
{
    static const char *const names[] = {"DSM_STATS", "DSM_CHECK", "DSM_MIGRATE_PAGES",
                                        "DSM_MIGRATE_HOMES", "DSM_PEER_TIMEOUT", "DSM_NET_WINDOW",
                                        "DSM_PAGE_SIZE", "DSM_REGION_BASE", "DSM_PROTOCOL",
                                        "DSM_HOME_DIR", "DSM_TRACE", "DSM_OMP_STATIC",
                                        "DSM_NET_BIND", "DSM_STATS_JSON", "DSM_PROFILE"};
    static const char *const values[] = {"", " ", "\t", " 3", "3 ", " 1", "1\n", " hlrc"};
    struct dsm_config c;
    char err[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            config_defaults(&c);
            err[0] = 0;
            CHECK_EQ(config_set(&c, names[i], values[k], err, sizeof err), -EINVAL);
            CHECK(strncmp(err, names[i], strlen(names[i])) == 0);
            bool blank = strspn(values[k], " \t\n") == strlen(values[k]);
            CHECK(strstr(err, blank ? ": empty (unset " : ": blanks around the value") != NULL);
        }
    EXPECT_BAD("DSM_PEER_TIMEOUT", " 3");     /* as '4 4' is */
    EXPECT_BAD("DSM_PEER_TIMEOUT", "4 4");
}

/* The fault injector acts on UDP datagrams: asking for it over UCX is an
 * error, not a test that injects nothing. */
static void test_fault_injection_is_refused_over_ucx(void)
{
    static const char *const faults[] = {"DSM_NET_LOSS=0.1", "DSM_NET_DUP=0.1",
                                         "DSM_NET_REORDER=0.1", "DSM_NET_DELAY_US=5"};
    struct dsm_config c;
    char err[256];
    clear_env();
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        const char *over[] = {"DSM_NET=ucx", faults[i]};
        err[0] = 0;
        CHECK_EQ(config_load_over(&c, over, 2, err, sizeof err), -EINVAL);
        CHECK(strstr(err, "DSM_NET=ucx") != NULL);
        CHECK(strchr(err, '\n') == NULL);
        const char *udp[] = {"DSM_NET=udp", faults[i]};
        CHECK_EQ(config_load_over(&c, udp, 2, err, sizeof err), 0);
    }
    const char *none[] = {"DSM_NET=ucx", "DSM_NET_LOSS=0"};
    CHECK_EQ(config_load_over(&c, none, 2, err, sizeof err), 0);
    CHECK_EQ(c.net_transport, 1);
}

static void test_choices_take_exactly_their_names(void)
{
    EXPECT_INT("DSM_NET", "udp", net_transport, 0);
    EXPECT_INT("DSM_NET", "ucx", net_transport, 1);
    EXPECT_INT("DSM_NET", "auto", net_transport, 2);
    EXPECT_INT("DSM_NET_ONE_SIDED", "off", net_one_sided, 0);
    EXPECT_INT("DSM_NET_ONE_SIDED", "auto", net_one_sided, 1);
    EXPECT_INT("DSM_NET_ONE_SIDED", "on", net_one_sided, 2);
    EXPECT_INT("DSM_WRITE_WATCH", "off", write_watch, 0);
    EXPECT_INT("DSM_WRITE_WATCH", "auto", write_watch, 1);
    EXPECT_INT("DSM_WRITE_WATCH", "on", write_watch, 2);
    EXPECT_BAD("DSM_WRITE_WATCH", "yes");
    EXPECT_INT("DSM_SERVICE_POLL", "off", service_poll, 0);
    EXPECT_INT("DSM_SERVICE_POLL", "auto", service_poll, 1);
    EXPECT_INT("DSM_SERVICE_POLL", "on", service_poll, 2);
    EXPECT_BAD("DSM_SERVICE_POLL", "1");
    EXPECT_BAD("DSM_NET", "tcp");
    EXPECT_BAD("DSM_NET", "UCX");
    EXPECT_BAD("DSM_NET_ONE_SIDED", "yes");
    EXPECT_INT("DSM_NET_AUTH", "token", net_auth_mac, 0);
    EXPECT_INT("DSM_NET_AUTH", "mac", net_auth_mac, 1);
    EXPECT_BAD("DSM_NET_AUTH", "md5");
    EXPECT_BAD("DSM_NET_AUTH", "");
    EXPECT_BAD("DSM_NET_AUTH", "ma");         /* a prefix is not a name */
    EXPECT_BAD("DSM_NET_AUTH", "macs");
    EXPECT_BAD("DSM_NET_AUTH", "tok");
    EXPECT_BAD("DSM_NET_AUTH", "token|mac");
    EXPECT_BAD("DSM_NET_AUTH", "|");
    EXPECT_BAD("DSM_NET_AUTH", "1");
}

static void test_paths_are_kept_and_unset_means_none(void)
{
    struct dsm_config c;
    char err[200];
    clear_env();
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(!c.stats_json && !c.trace && !c.profile && !c.home_dir && !c.omp_static && !c.net_bind);
    setenv("DSM_STATS_JSON", "/tmp/stats.json", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(c.stats_json && strcmp(c.stats_json, "/tmp/stats.json") == 0);
    setenv("DSM_STATS_JSON", "", 1);          /* empty is refused, not unset */
    CHECK_EQ(config_load(&c, err, sizeof err), -EINVAL);
    unsetenv("DSM_STATS_JSON");
    setenv("DSM_TRACE", "/tmp/run.trace", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(c.trace && strcmp(c.trace, "/tmp/run.trace") == 0);
    unsetenv("DSM_TRACE");
    setenv("DSM_PROFILE", "/tmp/run.profile", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(c.profile && strcmp(c.profile, "/tmp/run.profile") == 0);
    CHECK(c.trace == NULL); /* each its own */
    clear_env();
}

static void test_every_variable_is_read_together(void)
{
    clear_env();
    setenv("DSM_PEER_TIMEOUT", "2.5", 1);
    setenv("DSM_NET_LOSS", "0.1", 1);
    setenv("DSM_NET_DUP", "0.2", 1);
    setenv("DSM_NET_REORDER", "0.3", 1);
    setenv("DSM_NET_DELAY_US", "50", 1);
    setenv("DSM_NET_SEED", "7", 1);
    setenv("DSM_NET_DATAGRAM", "8900", 1);
    setenv("DSM_NET_WINDOW", "16", 1);
    setenv("DSM_NET_AUTH", "token", 1);
    setenv("DSM_NET_SPIN_US", "20", 1);
    setenv("DSM_IPC_WINDOW", "4", 1);
    setenv("DSM_IPC_INLINE_MAX", "512", 1);
    setenv("DSM_STATS", "yes", 1);
    setenv("DSM_STATS_JSON", "out.json", 1);
    struct dsm_config c;
    char err[200] = "";
    CHECK_EQ(config_load(&c, err, sizeof err), 0);
    CHECK(c.peer_timeout_s == 2.5);
    CHECK(c.net_loss == 0.1);
    CHECK(c.net_dup == 0.2);
    CHECK(c.net_reorder == 0.3);
    CHECK_EQ(c.net_delay_us, 50);
    CHECK_EQ(c.net_seed, 7);
    CHECK_EQ(c.net_datagram, 8900);
    CHECK_EQ(c.net_window, 16);
    CHECK_EQ(c.net_auth_mac, 0);
    CHECK_EQ(c.net_spin_us, 20);
    CHECK_EQ(c.ipc_window, 4);
    CHECK_EQ(c.ipc_inline_max, 512);
    CHECK_EQ(c.stats, 1);
    CHECK(c.stats_json && strcmp(c.stats_json, "out.json") == 0);

    /* One bad value among good ones fails the load, and names the bad one. */
    setenv("DSM_IPC_WINDOW", "999", 1);
    CHECK_EQ(config_load(&c, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_IPC_WINDOW=999") != NULL);
    clear_env();
}

static void test_error_message_fits_a_small_buffer(void)
{
    struct dsm_config c;
    char err[16];
    memset(err, 'z', sizeof err);
    CHECK_EQ(load_one("DSM_NET_DATAGRAM", "123456789012345678901234567890", &c, err, 12), -EINVAL);
    CHECK(memchr(err, 0, 12) != NULL); /* terminated inside the limit */
    CHECK(err[12] == 'z');             /* and nothing written past it */
    CHECK(strncmp(err, "DSM_NET_DAT", 11) == 0);
}

static void test_help_lists_every_variable(void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CHECK(f != NULL);
    if (!f)
        return;
    config_print_help(f, true);
    fclose(f);
    for (size_t i = 0; i < NNAMES; i++) {
        const char *at = strstr(text, names[i]);
        /* As a whole word: DSM_STATS must not be found only inside DSM_STATS_JSON. */
        while (at && (at[strlen(names[i])] == '_' || (at > text && at[-1] == '_')))
            at = strstr(at + 1, names[i]);
        if (!at)
            fprintf(stderr, "help does not list %s\n", names[i]);
        CHECK(at != NULL);
    }
    /* One entry per variable, each with its default: a line that starts
     * "  DSM_" (a wrapped description's lines start deeper). */
    size_t entries = 0, defaults = 0;
    for (const char *p = text; (p = strstr(p, "\n  DSM_")) != NULL; p++) {
        entries++;
        const char *end = strchr(p + 1, '\n');
        const char *d = strstr(p + 1, " default ");
        defaults += d && (!end || d < end);
    }
    CHECK_EQ(entries, NNAMES);
    CHECK_EQ(defaults, NNAMES);
    CHECK(strstr(text, "token|mac") != NULL);
    free(text);
}

/* DSM_REGION_SIZE against what the address space holds at DSM_REGION_BASE
 * (the region is mapped twice, below the program): a size that cannot be
 * mapped is refused here, naming the size and the most that fits, not at
 * mapping time naming the base. 42T maps at the default base, 43T does not
 * (measured); 64T and 63T passed validation before. */
static int load_region(const char *size, const char *base, char *err, size_t errlen)
{
    struct dsm_config c;
    clear_env();
    setenv("DSM_REGION_SIZE", size, 1);
    if (base)
        setenv("DSM_REGION_BASE", base, 1);
    err[0] = 0;
    int rc = config_load(&c, err, errlen);
    clear_env();
    return rc;
}

static void test_region_size_beyond_the_address_space_is_refused_naming_the_size(void)
{
    char err[400];
    static const char *const too_big[] = {"64T", "63T", "43T", "48T"};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        CHECK_EQ(load_region(too_big[i], NULL, err, sizeof err), -EINVAL);
        char named[40];
        snprintf(named, sizeof named, "DSM_REGION_SIZE=%s does not fit", too_big[i]);
        CHECK(strstr(err, named) != NULL);
        CHECK(strstr(err, "at most 42T fits") != NULL);
        CHECK(strchr(err, '\n') == NULL);
    }
    CHECK_EQ(load_region("42T", NULL, err, sizeof err), 0);
    CHECK_EQ(load_region("32T", NULL, err, sizeof err), 0);
    /* Higher up, less fits below the program. */
    CHECK_EQ(load_region("32T", "0x400000000000", err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_REGION_BASE=0x400000000000") && strstr(err, "at most 21T"));
    CHECK_EQ(load_region("21T", "0x400000000000", err, sizeof err), 0);
    /* The most it names is itself accepted. */
    CHECK_EQ(load_region("43T", "100000000", err, sizeof err), -EINVAL);
    const char *most = strstr(err, "at most ");
    CHECK(most != NULL);
    if (most) {
        char size[24];
        CHECK(sscanf(most, "at most %23s", size) == 1);
        CHECK_EQ(load_region(size, "100000000", err, sizeof err), 0);
    }
}

/* A size's message describes exactly what the parser takes: decimal (hex
 * is refused, and the message does not print its range in hex), every
 * suffix it names is taken, and the range's ends as printed parse back. */
static void test_size_message_describes_exactly_what_is_accepted(void)
{
    static const char *const names_[] = {"DSM_REGION_SIZE", "DSM_PAGE_SIZE", "DSM_LOCAL_MEM"};
    for (size_t i = 0; i < sizeof names_ / sizeof names_[0]; i++) {
        struct dsm_config c;
        char err[400];
        CHECK_EQ(load_one(names_[i], "0x100000", &c, err, sizeof err), -EINVAL);
        CHECK(strstr(err, "0x100000:") != NULL);
        CHECK(strstr(err + strlen(names_[i]) + sizeof "=0x100000:", "0x") == NULL);
        CHECK(strstr(err, "decimal") != NULL);
        CHECK(strstr(err, "K, M, G or T suffix") != NULL);
        char lo[24], hi[24];
        const char *from = strstr(err, " from ");
        CHECK(from && sscanf(from, " from %23s to %23[^:]", lo, hi) == 2);
        if (!from)
            continue;
        char loaded[400];
        CHECK_EQ(load_one(names_[i], lo, &c, loaded, sizeof loaded), 0);
        /* The region's upper end is the syntax's; the address space says
         * less (above), so only the other two load their maximum. */
        if (strcmp(names_[i], "DSM_REGION_SIZE"))
            CHECK_EQ(load_one(names_[i], hi, &c, loaded, sizeof loaded), 0);
    }
    EXPECT_INT("DSM_LOCAL_MEM", "1T", local_mem, 1ll << 40);
    EXPECT_INT("DSM_REGION_SIZE", "1T", region_size, 1ll << 40);
    EXPECT_INT("DSM_PAGE_SIZE", "16k", page_size, 16384);
    EXPECT_BAD("DSM_REGION_SIZE", "0x10000000");
}

/* SMP nodes: threads per node within 1..256, and only with what runs them
 * (hlrc, no page cache, no migration), each refusal naming both settings. */
static void test_threads_refuse_what_cannot_run_them(void)
{
    struct dsm_config c;
    char err[240];
    clear_env();
    const char *ok[] = {"DSM_THREADS=4"};
    CHECK_EQ(config_load_over(&c, ok, 1, err, sizeof err), 0);
    CHECK_EQ(c.threads, 4);
    const char *zero[] = {"DSM_THREADS=0"};
    CHECK_EQ(config_load_over(&c, zero, 1, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_THREADS=0") != NULL);
    /* The protocol says whether it runs several threads a node
     * (coherence_can): the runtime's settings check asks it. */
    const char *lrc[] = {"DSM_THREADS=2", "DSM_PROTOCOL=lrc"};
    CHECK_EQ(config_load_over(&c, lrc, 2, err, sizeof err), 0);
    CHECK_EQ(settings_check(&c, false, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "needs the hlrc protocol; lrc") != NULL);
    const char *hlrc[] = {"DSM_THREADS=2", "DSM_PROTOCOL=hlrc"};
    CHECK_EQ(config_load_over(&c, hlrc, 2, err, sizeof err), 0);
    CHECK_EQ(settings_check(&c, false, err, sizeof err), 0);
    const char *mem[] = {"DSM_THREADS=2", "DSM_LOCAL_MEM=64K"};
    CHECK_EQ(config_load_over(&c, mem, 2, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "DSM_LOCAL_MEM") != NULL);
    const char *mig[] = {"DSM_THREADS=2", "DSM_MIGRATE_PAGES=1", "DSM_MIGRATE_HOMES=1"};
    CHECK_EQ(config_load_over(&c, mig, 3, err, sizeof err), 0); /* homes move with threads too */
    CHECK(c.migrate_pages && c.migrate_homes);
    const char *one[] = {"DSM_THREADS=1", "DSM_PROTOCOL=sc", "DSM_LOCAL_MEM=64K"};
    CHECK_EQ(config_load_over(&c, one, 3, err, sizeof err), 0);
}

/* The settings every node must share: listed with their values (a choice
 * by name, a size as the parser takes it), and the first that differs
 * named with both values. */
static void test_job_wide_settings_name_the_first_difference(void)
{
    struct dsm_config a, b;
    config_defaults(&a);
    config_defaults(&b);
    char sa[2048], sb[2048], name[64], va[64], vb[64];
    CHECK(config_job_wide(&a, sa, sizeof sa) < sizeof sa);
    CHECK(strstr(sa, "DSM_NET=auto") != NULL);
    CHECK(strstr(sa, "DSM_PROTOCOL=hlrc") != NULL);
    CHECK(strstr(sa, "DSM_PAGE_SIZE=8K") != NULL);
    CHECK(strstr(sa, "DSM_PEER_TIMEOUT") == NULL); /* a node's own */
    config_job_wide(&b, sb, sizeof sb);
    CHECK_EQ(config_job_wide_differ(sa, sb, name, sizeof name, va, vb, sizeof va), 0);
    char err[160];
    CHECK_EQ(config_set(&b, "DSM_PAGE_SIZE", "16K", err, sizeof err), 0);
    CHECK_EQ(config_set(&b, "DSM_THREADS", "2", err, sizeof err), 0);
    config_job_wide(&b, sb, sizeof sb);
    CHECK_EQ(config_job_wide_differ(sb, sa, name, sizeof name, va, vb, sizeof va), 1);
    CHECK(!strcmp(name, "DSM_PAGE_SIZE") && !strcmp(va, "16K") && !strcmp(vb, "8K"));
    /* A list from another build: the differing token whole. */
    CHECK_EQ(config_job_wide_differ("DSM_NET=udp DSM_X=1", "DSM_NET=udp DSM_Y=1", name, sizeof name, va,
                                    vb, sizeof va), 1);
    CHECK(!strcmp(name, "DSM_X") && !strcmp(va, "1") && !strcmp(vb, "DSM_Y=1"));
    CHECK_EQ(config_job_wide_differ("DSM_NET=udp", "DSM_NET=udp DSM_Y=1", name, sizeof name, va, vb,
                                    sizeof va), 1);
    /* Truncated output still says how much it needed. */
    char small[8];
    CHECK(config_job_wide(&a, small, sizeof small) == strlen(sa));
}

static void test_unknown_names_are_said_with_the_nearest_setting(void)
{
    CHECK_EQ(config_edit_distance("DSM_PAGESIZE", "DSM_PAGE_SIZE"), 1);
    CHECK_EQ(config_edit_distance("stat", "stats"), 1);
    CHECK_EQ(config_edit_distance("DSM_NTE", "DSM_NET"), 1); /* a swap is one edit */
    CHECK_EQ(config_edit_distance("dsm_net", "DSM_NET"), 0);
    CHECK_EQ(config_edit_distance("", "abc"), 3);
    const char *env[] = {"PATH=/bin", "DSM_PAGESIZE=4096", "DSM_PAGE_SIZE=8192", "DSM_RANK=1",
                         "DSM_HOSTS=a", "DSM_FROB=1", "DSM_PAGESIZE=1", "DSM_NET_SPIN=1", "DSM_X"};
    char out[256];
    CHECK_EQ(config_unknown_names(env, 9, out, sizeof out), 3);
    CHECK(!strcmp(out, "DSM_PAGESIZE (did you mean DSM_PAGE_SIZE?), DSM_FROB, "
                       "DSM_NET_SPIN (did you mean DSM_NET_SPIN_US?)"));
    CHECK_EQ(config_unknown_names(env, 5, out, sizeof out), 1);
    CHECK_EQ(config_unknown_names(env + 2, 3, out, sizeof out), 0);
    CHECK(out[0] == 0);
    char small[8];
    CHECK_EQ(config_unknown_names(env, 9, small, sizeof small), 3);
    CHECK(strlen(small) == 7);
}

int main(void)
{
    test_unknown_names_are_said_with_the_nearest_setting();
    test_threads_refuse_what_cannot_run_them();
    test_sizes_take_suffixes_and_addresses_hex();
    test_defaults_apply_without_environment();
    test_integers_parse_within_their_range();
    test_bad_integers_are_rejected_by_name();
    test_page_size_and_region_base_keep_their_rules();
    test_assignments_override_the_environment();
    test_was_set_tells_a_value_given_from_the_default();
    test_local_memory_settings_parse_and_reject_bad_values();
    test_net_window_beyond_the_sack_width_is_rejected();
    test_numbers_parse_within_their_range();
    test_bad_numbers_are_rejected_by_name();
    test_booleans_take_the_usual_words();
    test_choices_take_exactly_their_names();
    test_fault_injection_is_refused_over_ucx();
    test_paths_are_kept_and_unset_means_none();
    test_empty_and_blank_values_are_refused_alike();
    test_every_variable_is_read_together();
    test_error_message_fits_a_small_buffer();
    test_help_lists_every_variable();
    test_region_size_beyond_the_address_space_is_refused_naming_the_size();
    test_size_message_describes_exactly_what_is_accepted();
    test_job_wide_settings_name_the_first_difference();
    return check_report("test_config");
}
