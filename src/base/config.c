/*
 * config.c — the table of environment settings, its parser and its help.
 */
#include "base/config.h"
#include "base/launch.h"

#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* CFG_TEXT is stored as CFG_PATH is (a string; never empty: refuse_empty_or_blank); it names
 * what --help-env calls it: a value, not a file. */
#define REGION_BASE_DEFAULT "0x200000000000"
enum config_type { CFG_INT, CFG_DOUBLE, CFG_BOOL, CFG_CHOICE, CFG_PATH, CFG_SIZE, CFG_ADDR, CFG_TEXT };

/* RULE_ALIGN: the region's base must suit every coherence unit, the largest
 * (64 KiB) included, and the OS page that mmap needs. */
static const char RULE_POW2[] = "power of two", RULE_ALIGN[] = "aligned";
#define CONFIG_ALIGN 65536ull

struct config_entry {
    const char      *name;
    enum config_type type;
    const char      *def;      /* default, as text */
    double           min, max; /* range for CFG_INT / CFG_DOUBLE */
    const char      *choices;  /* "a|b|c" for CFG_CHOICE: stored as the index; for
                                  CFG_INT a word that stands for 0 ("auto"); for
                                  CFG_SIZE and CFG_ADDR a rule the value must
                                  also keep: RULE_POW2 or RULE_ALIGN */
    size_t           offset;   /* into struct dsm_config */
    const char      *help;
    enum config_audience audience; /* who tunes it: --help-env shows CFG_USER's */
    bool             job_wide; /* JOB_WIDE: every node of a job must share it; NODE_OWN */
};

/* The settings every node of a job must share: its transport and its
 * authentication, the protocol and what its messages assume (the unit,
 * the region, the threads, homes and their migration, the barrier's tree,
 * the flow control, the static schedule, where atomics run, the checks).
 * The others (timeouts, windows, fetching ahead, statistics, tracing,
 * injected faults) are a node's own. */
#define JOB_WIDE true
#define NODE_OWN false

#define OFF(f) offsetof(struct dsm_config, f)

/* "|hlrc|lrc|...": every name in protocols.def, each after a '|' (the
 * choices start after the first). */
static const char protocol_choices[] =
#define PROTOCOL(name, ops, can, description) "|" name
#include "coherence/protocols.def"
#undef PROTOCOL
    ;
const char *const config_protocols = protocol_choices + 1;

static const struct config_entry table[] = {
    {"DSM_PEER_TIMEOUT", CFG_DOUBLE, "10", 0.2, 3600, NULL, OFF(peer_timeout_s),
     "seconds a peer may stay silent (no acknowledgement) before the job ends", CFG_USER, NODE_OWN},
    {"DSM_NET", CFG_CHOICE, "auto", 0, 0, "udp|ucx|auto", OFF(net_transport),
     "transport: udp (the seeds' reliable UDP, everywhere), ucx (UCX active messages: shared memory between nodes on one host, tcp or RDMA verbs between hosts; needs a build with libucx-dev), or auto (dsmrun chooses UCX's shared memory when every node runs on this host and UCX starts there, else udp)", CFG_USER, JOB_WIDE},
    {"DSM_NET_LOSS", CFG_DOUBLE, "0", 0, 0.9, NULL, OFF(net_loss),
     "injected loss: fraction of outgoing datagrams dropped (tests)", CFG_TEST, NODE_OWN},
    {"DSM_NET_DUP", CFG_DOUBLE, "0", 0, 0.9, NULL, OFF(net_dup),
     "injected duplication: fraction of the datagrams not dropped that are sent twice (tests)", CFG_TEST, NODE_OWN},
    {"DSM_NET_REORDER", CFG_DOUBLE, "0", 0, 0.9, NULL, OFF(net_reorder),
     "injected reordering: fraction of datagrams held back behind the next (tests)", CFG_TEST, NODE_OWN},
    {"DSM_NET_DELAY_US", CFG_INT, "0", 0, 1000000, NULL, OFF(net_delay_us),
     "injected delay in microseconds: each datagram is delivered this long after it is received (tests)", CFG_TEST, NODE_OWN},
    {"DSM_NET_SEED", CFG_INT, "0", 0, 9e15, NULL, OFF(net_seed),
     "seed of the fault injector (0: derived from the job id and rank)", CFG_TEST, NODE_OWN},
    {"DSM_NET_DATAGRAM", CFG_INT, "auto", 1024, 65000, "auto", OFF(net_datagram),
     "largest datagram payload in bytes (auto: the MTU of the node's interface less headers; 61440 on loopback)", CFG_EXPERT, NODE_OWN},
    {"DSM_NET_BIND", CFG_TEXT, "", 0, 0, NULL, OFF(net_bind),
     "under srun/mpirun: IPv4 address or interface name to bind, or any or 0.0.0.0 (every interface; the peers are told the unset choice) (unset: loopback if all nodes share the host, else the interface toward srun's host under Slurm, else the one that routes by default, else the first that is up)", CFG_USER, NODE_OWN},
    {"DSM_NET_WINDOW", CFG_INT, "64", 4, 64, NULL, OFF(net_window),
     "datagrams in flight per peer (at most 64: the width of the selective ack)", CFG_EXPERT, NODE_OWN},
    {"DSM_NET_AUTH", CFG_CHOICE, "mac", 0, 0, "token|mac", OFF(net_auth_mac),
     "datagram authentication: mac (SipHash-2-4 over every byte) or token (every header and the messages that end or finish the job authenticated; message data not)", CFG_EXPERT, JOB_WIDE},
    {"DSM_NET_ONE_SIDED", CFG_CHOICE, "auto", 0, 0, "off|auto|on", OFF(net_one_sided),
     "with DSM_NET=ucx, hlrc's read faults fetch pages with a one-sided UCX get from the home's memory, without its CPU: auto (peers on this host reached through shared memory), on (every peer: RDMA networks), off (always a request)", CFG_EXPERT, JOB_WIDE},
    {"DSM_SERVICE_POLL", CFG_CHOICE, "auto", 0, 0, "off|auto|on", OFF(service_poll),
     "whether each node's service thread polls for messages on a CPU of its own instead of sleeping until one comes: auto (where the node's share of the CPUs it may run on exceeds its application threads, DSM_THREADS), on, off; --stats says which ran", CFG_EXPERT, NODE_OWN},
    {"DSM_NET_SPIN_US", CFG_INT, "-1", -1, 100000, NULL, OFF(net_spin_us),
     "microseconds a waiting thread polls before blocking (-1: adapt to cores per node)", CFG_EXPERT, NODE_OWN},
    {"DSM_IPC_WINDOW", CFG_INT, "8", 1, 256, NULL, OFF(ipc_window),
     "out-of-line pages granted per window (seed 004 used 8)", CFG_EXPERT, JOB_WIDE},
    {"DSM_IPC_INLINE_MAX", CFG_INT, "1024", 0, 8192, NULL, OFF(ipc_inline_max),
     "largest inline message sent on the one-message fast path, in bytes", CFG_EXPERT, NODE_OWN},
    {"DSM_REGION_SIZE", CFG_SIZE, "2T", 1 << 20, 1ull << 46, NULL, OFF(region_size),
     "bytes of address space reserved for shared memory, split evenly into per-node arenas (at most what fits at DSM_REGION_BASE: 42T at the default)", CFG_USER, JOB_WIDE},
    {"DSM_REGION_BASE", CFG_ADDR, REGION_BASE_DEFAULT, 1ull << 32, 1ull << 46, RULE_ALIGN, OFF(region_base),
     "address of the shared region, the same on every node (hex, a multiple of 0x10000)", CFG_EXPERT, JOB_WIDE},
    {"DSM_PAGE_SIZE", CFG_SIZE, "8192", 4096, 65536, RULE_POW2, OFF(page_size),
     "coherence unit in bytes: a power of two from 4096 to 65536 (8192: measured, see README)", CFG_USER, JOB_WIDE},
    {"DSM_LOCAL_MEM", CFG_SIZE, "0", 0, 1ull << 46, NULL, OFF(local_mem),
     "most memory a node's copies of other nodes' pages may hold, in bytes (0: no limit; seed 002)", CFG_USER, NODE_OWN},
    {"DSM_REPLACEMENT", CFG_CHOICE, "clock", 0, 0, "fifo|clock", OFF(replacement),
     "which copy goes when DSM_LOCAL_MEM is reached: fifo (oldest fetched) or clock (software reference bits)", CFG_USER, NODE_OWN},
    {"DSM_HOME_DIR", CFG_PATH, "", 0, 0, NULL, OFF(home_dir),
     "keep the shared region (homes and copies) in an unlinked file in this directory, so shared data may exceed RAM", CFG_USER, NODE_OWN},
    {"DSM_HOME", CFG_CHOICE, "local", 0, 0, "local|cyclic|block|first-touch", OFF(home),
     "home of allocated pages unless dsm_malloc_home names one: allocating node, cyclic, block, first touch", CFG_USER, JOB_WIDE},
    {"DSM_PROTOCOL", CFG_CHOICE, "hlrc", 0, 0, protocol_choices + 1, OFF(protocol),
     "coherence protocol (dsmrun --protocol sets it; docs/protocols.md describes each)", CFG_USER, JOB_WIDE},
    {"DSM_LRC_GC_NOTICES", CFG_INT, "8192", 0, 1ll << 40, NULL, OFF(lrc_gc_notices),
     "lrc: collect diffs at the first barrier after this many write notices (0: at every barrier)", CFG_EXPERT, NODE_OWN},
    {"DSM_SC_WINDOW_US", CFG_INT, "100", 0, 1000000, NULL, OFF(sc_window_us),
     "sc: µs a node granted a page for writing keeps it before others' requests are served (0: off)", CFG_EXPERT, NODE_OWN},
    {"DSM_READ_AHEAD", CFG_INT, "16", 0, 16, NULL, OFF(read_ahead),
     "hlrc: most pages fetched ahead of a read fault that continues a run of faults on consecutive pages (0: off)", CFG_EXPERT, NODE_OWN},
    {"DSM_WRITE_AHEAD", CFG_INT, "8", 0, 16, NULL, OFF(write_ahead),
     "hlrc: most pages fetched, and made writable, ahead of a write fault whose page before was written here since the last release (0: off)", CFG_EXPERT, NODE_OWN},
    {"DSM_WRITE_WATCH", CFG_CHOICE, "auto", 0, 0, "off|auto|on", OFF(write_watch),
     "hlrc: how a home finds the pages it wrote that other nodes hold: auto (each compared with its snapshot at every release until the node has compared 16384, then the kernel's record, userfaultfd write-protection in async mode and PAGEMAP_SCAN, where the kernel has them: Linux 6.7 and later, memory not in DSM_HOME_DIR), on (the kernel's record from the first release; said once where the kernel lacks it), off (always compared)", CFG_EXPERT, NODE_OWN},
    {"DSM_PULL_CREDIT", CFG_INT, "8", 0, 255, NULL, OFF(pull_credit),
     "hlrc: acquires that refresh a page re-read after an invalidation in place, before it must fault again (0: never; a notice invalidates)", CFG_EXPERT, NODE_OWN},
    {"DSM_THREADS", CFG_INT, "1", 1, 256, NULL, OFF(threads),
     "application threads per node (dsmrun --threads sets it): fork-style programs run dsm_create's function on every thread of every node; an OpenMP region's team is laid over nodes x threads, at most nodes x DSM_THREADS (hlrc only; docs/design.md, SMP nodes; docs/openmp.md)", CFG_USER, JOB_WIDE},
    {"DSM_CPUS", CFG_INT, "auto", 1, 65536, "auto", OFF(cpus),
     "the CPUs a dsmcc program is told it has (sysconf(_SC_NPROCESSORS_ONLN), get_nprocs, sched_getaffinity, std::thread::hardware_concurrency, omp_get_num_procs; auto: nodes x DSM_THREADS, the threads the job runs at once; on one node, the host's unless OpenMP; docs/unmodified-programs.md)", CFG_USER, JOB_WIDE},
    {"DSM_BARRIER_FANOUT", CFG_INT, "8", 2, 32, NULL, OFF(barrier_fanout),
     "children per node in the barrier's tree (a fan-out of nodes - 1 or more is a star)", CFG_EXPERT, JOB_WIDE},
    {"DSM_SHARED_GLOBALS", CFG_BOOL, "0", 0, 1, NULL, OFF(shared_globals),
     "share the executable's .data and .bss like dsm_malloc memory (dsmcc's programs always do)", CFG_USER, JOB_WIDE},
    {"DSM_OMP_STATIC", CFG_TEXT, "", 0, 0, NULL, OFF(omp_static),
     "how OpenMP static loops are divided: static (as compiled) or profiled[,chunk[,eval_size[,eval_skip]]] (seed 003)", CFG_USER, JOB_WIDE},
    {"DSM_PROFILED_GAIN", CFG_DOUBLE, "0.05", 0, 1, NULL, OFF(profiled_gain),
     "profiled loops: the least predicted gain (fraction of the loop's time) that re-partitions them", CFG_EXPERT, NODE_OWN},
    {"DSM_ATOMIC_AT_HOME", CFG_BOOL, "1", 0, 1, NULL, OFF(atomic_at_home),
     "hlrc: an atomic whose block lock came from another node, on a page not valid here, runs at the page's home", CFG_EXPERT, JOB_WIDE},
    {"DSM_MIGRATE_PAGES", CFG_BOOL, "0", 0, 1, NULL, OFF(migrate_pages),
     "hlrc, erc: a page whose remote faults come mostly from one node moves its home there (seed 003, section 5)", CFG_USER, JOB_WIDE},
    {"DSM_MIGRATE_HOMES", CFG_BOOL, "0", 0, 1, NULL, OFF(migrate_homes),
     "hlrc, erc: a page written mostly by one node moves its home there, at barriers (seed 003, section 6)", CFG_USER, JOB_WIDE},
    {"DSM_MIGRATE_PERIOD", CFG_INT, "4", 1, 1000000, NULL, OFF(migrate_period),
     "with migration on: every this many barriers one more round moves the pages that qualify", CFG_EXPERT, JOB_WIDE},
    {"DSM_MIGRATE_MAX", CFG_INT, "0", 0, 1ll << 40, NULL, OFF(migrate_max),
     "with migration on: pages a node gives to new homes per migration round, at most (0: no limit)", CFG_EXPERT, NODE_OWN},
    {"DSM_STATS", CFG_BOOL, "0", 0, 1, NULL, OFF(stats),
     "print per-node statistics at dsm_finish (dsmrun --stats sets it)", CFG_USER, NODE_OWN},
    {"DSM_STATS_JSON", CFG_PATH, "", 0, 0, NULL, OFF(stats_json),
     "write the statistics as JSON to this file (dsmrun --stats-json sets it)", CFG_USER, NODE_OWN},
    {"DSM_CHECK", CFG_BOOL, "0", 0, 1, NULL, OFF(check),
     "check the protocols' invariants as they run (make test sets it); a violation ends the job naming the invariant, the page and the nodes; also a write after dsm_free to a node's last 256 freed small blocks (kept poisoned), named with the block and the freeing call", CFG_TEST, JOB_WIDE},
    {"DSM_TRACE", CFG_PATH, "", 0, 0, NULL, OFF(trace),
     "trace every message, fault and synchronisation into FILE.<rank> (dsmrun --trace sets it; tools/dsm-trace reads it)", CFG_USER, NODE_OWN},
    {"DSM_PROFILE", CFG_PATH, "", 0, 0, NULL, OFF(profile),
     "record the sharing profile into FILE.<rank>: faults by source line, diffs' bytes, allocation sites, locks and barriers (dsmrun --profile sets it; tools/dsm-profile reads it; docs/profile.md)", CFG_USER, NODE_OWN},
};

#define NENTRIES (sizeof table / sizeof table[0])
_Static_assert(NENTRIES <= 64 * sizeof ((struct dsm_config *)0)->user_set /
                              sizeof ((struct dsm_config *)0)->user_set[0],
               "struct dsm_config's user_set has a bit for fewer settings than the table holds");


static int choice_index(const char *choices, const char *v)
{
    int idx = 0;
    size_t vlen = strlen(v);
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == vlen && strncmp(p, v, n) == 0)
            return idx;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

/* A size as the parser takes it back: the largest suffix that is exact
 * ("64T", "8K", "1000"); an address in hex. */
static void format_size(const struct config_entry *e, unsigned long long x, char *out, size_t len)
{
    static const char suffix[] = "KMGT";
    if (e->type == CFG_ADDR) {
        snprintf(out, len, "%#llx", x);
        return;
    }
    int s = -1;
    while (s < 3 && x && x % 1024 == 0) {
        x /= 1024;
        s++;
    }
    if (s < 0)
        snprintf(out, len, "%llu", x);
    else
        snprintf(out, len, "%llu%c", x, suffix[s]);
}

/* One rule for every setting, whatever its type: an empty value is not
 * the default (unset the variable for that), and a value with blanks
 * around it is not the value without them — `DSM_STATS=` or
 * `DSM_PEER_TIMEOUT=' 3'` is a mistake in a script more often than a
 * choice, and strtod would take the one and refuse '4 4'. */
static int refuse_empty_or_blank(const struct config_entry *e, const char *v, char *err,
                                 size_t errlen)
{
    size_t len = strlen(v);
    if (len == 0 || strspn(v, " \t\n\r\v\f") == len) {
        snprintf(err, errlen, "%s='%s': empty (unset %s for its default%s%s)", e->name, v, e->name,
                 *e->def ? ", " : "", e->def);
        return -EINVAL;
    }
    if (isspace((unsigned char)v[0]) || isspace((unsigned char)v[len - 1])) {
        snprintf(err, errlen, "%s='%s': blanks around the value (write it without them)", e->name, v);
        return -EINVAL;
    }
    return 0;
}

static int parse_entry(const struct config_entry *e, const char *v,
                       struct dsm_config *cfg, char *err, size_t errlen)
{
    char *base = (char *)cfg + e->offset;
    char *end = NULL;

    if (refuse_empty_or_blank(e, v, err, errlen))
        return -EINVAL;

    switch (e->type) {
    case CFG_INT: {
        if (e->choices && !strcmp(v, e->choices)) {
            *(int64_t *)base = 0;
            return 0;
        }
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < e->min || x > e->max) {
            snprintf(err, errlen, "%s=%s: expected an integer from %.0f to %.0f%s%s",
                     e->name, v, e->min, e->max, e->choices ? " or " : "",
                     e->choices ? e->choices : "");
            return -EINVAL;
        }
        *(int64_t *)base = x;
        return 0;
    }
    case CFG_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x) || x < e->min || x > e->max) {
            snprintf(err, errlen, "%s=%s: expected a number from %g to %g",
                     e->name, v, e->min, e->max);
            return -EINVAL;
        }
        *(double *)base = x;
        return 0;
    }
    case CFG_BOOL:
        if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on"))
            *(int64_t *)base = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") ||
                 !strcmp(v, "off"))
            *(int64_t *)base = 0;
        else {
            snprintf(err, errlen, "%s=%s: expected 0 or 1 (or yes/no, true/false, on/off)", e->name, v);
            return -EINVAL;
        }
        return 0;
    case CFG_CHOICE: {
        int idx = choice_index(e->choices, v);
        if (idx < 0) {
            snprintf(err, errlen, "%s=%s: expected one of %s", e->name, v, e->choices);
            return -EINVAL;
        }
        *(int64_t *)base = idx;
        return 0;
    }
    case CFG_PATH:
    case CFG_TEXT:
        /* What the text means (a directory, a file, a schedule, an
         * address) is the layer's that uses it: runtime/settings.c. */
        *(const char **)base = v;
        return 0;
    case CFG_SIZE:
    case CFG_ADDR: {
        char lo[24], hi[24];
        format_size(e, (unsigned long long)e->min, lo, sizeof lo);
        format_size(e, (unsigned long long)e->max, hi, sizeof hi);
        errno = 0;
        unsigned long long x = strtoull(v, &end, e->type == CFG_ADDR ? 16 : 10);
        unsigned long long mult = 1;
        if (e->type == CFG_SIZE && end != v && *end && !end[1]) {
            switch (*end) {
            case 'k': case 'K': mult = 1ull << 10; end++; break;
            case 'm': case 'M': mult = 1ull << 20; end++; break;
            case 'g': case 'G': mult = 1ull << 30; end++; break;
            case 't': case 'T': mult = 1ull << 40; end++; break;
            default: break;
            }
        }
        bool bad = errno || end == v || *end || *v == '-' || x > (unsigned long long)e->max / mult ||
                   x * mult < e->min || x * mult > e->max;
        x *= mult;
        if (!bad && e->choices == RULE_POW2 && (x & (x - 1)))
            bad = true;
        if (bad) {
            /* Exactly what the parser takes: hex for an address (0x
             * optional), else decimal with a suffix in powers of 1024. */
            if (e->type == CFG_ADDR)
                snprintf(err, errlen, "%s=%s: expected a hex address (0x optional) from %s to %s",
                         e->name, v, lo, hi);
            else
                snprintf(err, errlen, "%s=%s: expected %s from %s to %s: decimal bytes, or with a "
                         "K, M, G or T suffix (times 1024, 1024^2, 1024^3, 1024^4)", e->name, v,
                         e->choices == RULE_POW2 ? "a power of two" : "a size", lo, hi);
            return -EINVAL;
        }
        if (e->choices == RULE_ALIGN && x % CONFIG_ALIGN) {
            snprintf(err, errlen, "%s=%s: expected an address aligned to %#llx (64 KiB, the largest coherence unit)",
                     e->name, v, CONFIG_ALIGN);
            return -EINVAL;
        }
        *(int64_t *)base = (int64_t)x;
        return 0;
    }
    }
    return -EINVAL;
}

/* Parses table[i]'s value, and notes that the user set it. */
static int parse_set(size_t i, const char *v, struct dsm_config *cfg, char *err, size_t errlen)
{
    int rc = parse_entry(&table[i], v, cfg, err, errlen);
    if (!rc)
        cfg->user_set[i / 64] |= 1ull << (i % 64);
    return rc;
}

bool config_was_set(const struct dsm_config *cfg, const char *name)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (!strcmp(table[i].name, name))
            return cfg->user_set[i / 64] >> (i % 64) & 1;
    return false;
}

void config_defaults(struct dsm_config *cfg)
{
    char err[160];
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NENTRIES; i++)
        if (*table[i].def && /* "": unset, NULL */
            parse_entry(&table[i], table[i].def, cfg, err, sizeof err))
            abort(); /* a default outside its own range is a bug in the table */
}

int config_load(struct dsm_config *cfg, char *err, size_t errlen)
{
    return config_load_over(cfg, NULL, 0, err, errlen);
}

/* Where the shared region can go. x86-64 gives a program 128 TiB of
 * address space (47 bits); with address-space randomisation off, as dsmrun
 * starts every node, a position-independent executable is loaded at 2/3 of
 * it (0x555555554000) with its heap above, and the stack and the shared
 * libraries sit at the top. The region is mapped twice (mem/region.c): the
 * application's view at DSM_REGION_BASE, which must end below the program,
 * and the system view wherever one free range holds the size again — below
 * the base, between the region and the program, or above the program.
 * AS_ROOM leaves the program's heap, the stack, the libraries and the page
 * table their room. Checked here, so that dsmrun refuses a size that
 * cannot be mapped before any node starts (32T fits at the default base;
 * 43T, measured, does not). */
#define AS_TOP     (1ull << 47)
#define AS_LOW     (1ull << 32)        /* DSM_REGION_BASE's least value */
#define AS_PROGRAM 0x555555554000ull
#define AS_ROOM    (256ull << 30)

/* The largest region that fits at base; 0 if none. */
static uint64_t region_room(uint64_t base)
{
    if (base < AS_LOW || base >= AS_PROGRAM)
        return 0;
    uint64_t view = AS_PROGRAM - base;                  /* the view at base: up to the program */
    uint64_t high = AS_TOP - AS_ROOM - (AS_PROGRAM + AS_ROOM);
    uint64_t sys = high;                                /* the system view: the largest range left */
    if (base - AS_LOW > sys)
        sys = base - AS_LOW;
    if (view / 2 > sys)
        sys = view / 2;
    return (view < sys ? view : sys) & ~(CONFIG_ALIGN - 1);
}

/* Rounded down to a whole number of its largest unit ("42T"), which the
 * parser takes back. */
static void format_size_down(uint64_t x, char *out, size_t len)
{
    static const char suffix[] = "KMGT";
    int s = -1;
    while (s < 3 && x >= 1024) {
        x /= 1024;
        s++;
    }
    if (s < 0)
        snprintf(out, len, "%llu", (unsigned long long)x);
    else
        snprintf(out, len, "%llu%c", (unsigned long long)x, suffix[s]);
}

int config_load_over(struct dsm_config *cfg, const char *const *over, int nover, char *err,
                     size_t errlen)
{
    const char *size_text = NULL, *base_text = NULL;
    config_defaults(cfg);
    for (size_t i = 0; i < NENTRIES; i++) {
        const char *v = getenv(table[i].name);
        size_t len = strlen(table[i].name);
        for (int k = 0; k < nover; k++) /* the last assignment of a name wins */
            if (!strncmp(over[k], table[i].name, len) && over[k][len] == '=')
                v = over[k] + len + 1;
        if (v && parse_set(i, v, cfg, err, errlen))
            return -EINVAL;
        if (table[i].offset == OFF(region_size))
            size_text = v ? v : table[i].def;
        if (table[i].offset == OFF(region_base))
            base_text = v ? v : table[i].def;
    }
    /* The fault injector works on UDP datagrams; over UCX it would do
     * nothing, and a test asking for it would test nothing. */
    if (cfg->net_transport == 1 &&
        (cfg->net_loss || cfg->net_dup || cfg->net_reorder || cfg->net_delay_us)) {
        snprintf(err, errlen, "DSM_NET_LOSS, DSM_NET_DUP, DSM_NET_REORDER and DSM_NET_DELAY_US "
                 "inject faults into UDP datagrams: not with DSM_NET=ucx");
        return -EINVAL;
    }
    uint64_t room = region_room((uint64_t)cfg->region_base);
    if ((uint64_t)cfg->region_size > room) {
        char most[24];
        format_size_down(room, most, sizeof most);
        snprintf(err, errlen, "DSM_REGION_SIZE=%s does not fit at DSM_REGION_BASE=%s: the region is "
                 "mapped twice in the 128 TiB address space, below the program at %#llx; at most "
                 "%s fits there", size_text, base_text, AS_PROGRAM, most);
        return -EINVAL;
    }
    /* SMP nodes (docs/design.md): the page cache's clock takes pages'
     * access away under a single thread's feet only. (Whether the protocol
     * runs several threads a node is its own to say: settings_check.) */
    if (cfg->threads > 1) {
        if (cfg->local_mem) {
            snprintf(err, errlen, "DSM_THREADS=%lld (dsmrun --threads) cannot be combined with "
                     "DSM_LOCAL_MEM: the page cache runs one thread per node",
                     (long long)cfg->threads);
            return -EINVAL;
        }
    }
    return 0;
}

int config_set(struct dsm_config *cfg, const char *name, const char *value, char *err,
               size_t errlen)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (!strcmp(table[i].name, name))
            return parse_set(i, value, cfg, err, errlen);
    snprintf(err, errlen, "%s: no such setting", name);
    return -ENOENT;
}

/* The DSM_* variables dsm reads or sets besides the table's: those a
 * launcher hands its nodes (base/launch.h), the one runtime/boot_pmix.c
 * sets across its re-execution, and those tools/dsm-hosts and the Slurm
 * tests (tests/slurm/run.sh) set for the commands they run. */
static const char *const other_names[] = {
    BOOT_ENV_RANK, BOOT_ENV_NODES, BOOT_ENV_JOB, BOOT_ENV_SOCK_FD, BOOT_ENV_KEY_FD,
    BOOT_ENV_PEERS, BOOT_ENV_LAUNCH, BOOT_ENV_LIFE_FD, BOOT_ENV_ARBITER_FD,
    "DSM_PMIX_REEXEC", "DSM_HOSTS", "DSM_SLURM_LIVENESS_RUNS",
};
#define NOTHERS (sizeof other_names / sizeof other_names[0])

#define DISTANCE_MAX_LEN 63
static int upper(char c)
{
    return toupper((unsigned char)c);
}

int config_edit_distance(const char *a, const char *b)
{
    /* The optimal string alignment (Damerau's distance, each substring
     * edited once), row i of its table in rows[i % 3]: a swap looks two
     * rows back. */
    int rows[3][DISTANCE_MAX_LEN + 1];
    size_t la = strnlen(a, DISTANCE_MAX_LEN), lb = strnlen(b, DISTANCE_MAX_LEN);
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *row = rows[i % 3], *one = rows[(i + 2) % 3], *two = rows[(i + 1) % 3];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int best = one[j - 1] + (upper(a[i - 1]) != upper(b[j - 1]));
            if (one[j] + 1 < best)
                best = one[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) &&
                upper(a[i - 2]) == upper(b[j - 1]) && two[j - 2] + 1 < best)
                best = two[j - 2] + 1;
            row[j] = best;
        }
    }
    return rows[la % 3][lb];
}

bool config_typo_near(int distance, int letters)
{
    return distance <= (letters / 3 > 2 ? letters / 3 : 2);
}

/* Whether the first name_len characters of name are a name dsm knows. */
static bool known_name(const char *name, size_t name_len)
{
    for (size_t i = 0; i < NENTRIES + NOTHERS; i++) {
        const char *k = i < NENTRIES ? table[i].name : other_names[i - NENTRIES];
        if (strlen(k) == name_len && !strncmp(k, name, name_len))
            return true;
    }
    return false;
}

/* The setting nearest to the unknown name, if near enough to be the one
 * meant: a third of the letters after DSM_ wrong, or two (DSM_PAGESIZE is
 * one from DSM_PAGE_SIZE, DSM_FOO three from DSM_NET); else the shortest
 * the name begins (DSM_NET_SPIN: DSM_NET_SPIN_US). NULL if none. */
static const char *nearest_setting(const char *name)
{
    const char *best = NULL, *longer = NULL;
    int best_d = 0, len = (int)strlen(name) - 4;
    for (size_t i = 0; i < NENTRIES; i++) {
        int d = config_edit_distance(name, table[i].name);
        if (!best || d < best_d) {
            best = table[i].name;
            best_d = d;
        }
        if (!strncmp(table[i].name, name, (size_t)len + 4) &&
            (!longer || strlen(table[i].name) < strlen(longer)))
            longer = table[i].name;
    }
    if (config_typo_near(best_d, len))
        return best;
    return len >= 3 ? longer : NULL;
}

int config_unknown_names(const char *const *env, int nenv, char *out, size_t len)
{
    int count = 0;
    size_t used = 0;
    if (len)
        out[0] = 0;
    for (int i = 0; i < nenv; i++) {
        size_t name_len = strcspn(env[i], "=");
        if (strncmp(env[i], "DSM_", 4) || env[i][name_len] != '=' || known_name(env[i], name_len))
            continue;
        bool said = false;
        for (int k = 0; k < i && !said; k++)
            said = !strncmp(env[k], env[i], name_len + 1);
        if (said)
            continue;
        char name[DISTANCE_MAX_LEN + 1];
        snprintf(name, sizeof name, "%.*s", (int)name_len, env[i]);
        const char *near = nearest_setting(name);
        int n = snprintf(out + used, used < len ? len - used : 0, "%s%.*s%s%s%s", count ? ", " : "",
                         (int)name_len, env[i], near ? " (did you mean " : "", near ? near : "",
                         near ? "?)" : "");
        used += n > 0 ? (size_t)n : 0;
        count++;
    }
    return count;
}

/* Text at most HELP_WIDTH columns wide, broken at spaces, each line after
 * the first behind `indent`; `col` is where the first line's text starts. */
#define HELP_WIDTH 100
static void print_wrapped(FILE *out, const char *text, int col, const char *indent)
{
    while (*text) {
        int room = HELP_WIDTH - col, n = (int)strlen(text);
        if (n > room) {
            n = room;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0) /* one word longer than the line: whole */
                n = (int)strcspn(text, " ");
        }
        fprintf(out, "%.*s\n", n, text);
        text += n;
        while (*text == ' ')
            text++;
        if (*text) {
            fputs(indent, out);
            col = (int)strlen(indent);
        }
    }
}

void config_print_help(FILE *out, bool all)
{
    static const char *const type_names[] = {"int", "number", "bool", "choice", "path", "size", "addr",
                                             "text"};
    static const char *const marks[] = {"", " [expert]", " [test]"};
    size_t hidden = 0;
    fprintf(out, "Environment settings (all optional)%s:\n\n",
            all ? "; [expert]: tuning the protocols, [test]: faults and checks" : "");
    for (size_t i = 0; i < NENTRIES; i++) {
        const struct config_entry *e = &table[i];
        if (!all && e->audience != CFG_USER) {
            hidden++;
            continue;
        }
        char head[256];
        int n = snprintf(head, sizeof head, "  %-20s %-6s default %s", e->name, type_names[e->type],
                         *e->def ? e->def : "(unset)");
        if (e->type == CFG_INT)
            n += snprintf(head + n, sizeof head - (size_t)n, ", range %.0f .. %.0f%s%s", e->min, e->max,
                          e->choices ? " or " : "", e->choices ? e->choices : "");
        else if (e->type == CFG_DOUBLE)
            n += snprintf(head + n, sizeof head - (size_t)n, ", range %g .. %g", e->min, e->max);
        else if (e->type == CFG_CHOICE)
            n += snprintf(head + n, sizeof head - (size_t)n, ", one of %s", e->choices);
        else if (e->type == CFG_SIZE || e->type == CFG_ADDR) {
            char lo[24], hi[24];
            format_size(e, (unsigned long long)e->min, lo, sizeof lo);
            format_size(e, (unsigned long long)e->max, hi, sizeof hi);
            /* The region's most is what fits at the default base (a higher
             * or lower DSM_REGION_BASE changes it: config_load_over says). */
            if (e->offset == OFF(region_size))
                format_size_down(region_room(strtoull(REGION_BASE_DEFAULT, NULL, 16)), hi, sizeof hi);
            n += snprintf(head + n, sizeof head - (size_t)n, ", range %s .. %s%s, %s", lo, hi,
                          e->offset == OFF(region_size) ? " at the default base" : "",
                          e->type == CFG_ADDR ? "hex" : "bytes, or with a K, M, G or T suffix");
        }
        snprintf(head + n, sizeof head - (size_t)n, "%s", marks[e->audience]);
        print_wrapped(out, head, 0, "        ");
        fputs("      ", out);
        print_wrapped(out, e->help, 6, "      ");
    }
    if (hidden)
        fprintf(out, "\n%zu more, for tuning the protocols and for tests: dsmrun --help-env=all\n", hidden);
}

/* The name of choice `index` of "a|b|c", into out. */
static void choice_name(const char *choices, int64_t index, char *out, size_t outlen)
{
    const char *p = choices;
    for (int64_t i = 0; i < index && *p; i++)
        p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
    snprintf(out, outlen, "%.*s", (int)strcspn(p, "|"), p);
}

void config_protocol_name(const struct dsm_config *cfg, char *out, size_t outlen)
{
    choice_name(config_protocols, cfg->protocol, out, outlen);
}


/* One entry's value as text (a choice by its name). */
static void format_entry(const struct config_entry *e, const struct dsm_config *cfg, char *out,
                         size_t len)
{
    const char *base = (const char *)cfg + e->offset;
    switch (e->type) {
    case CFG_DOUBLE:
        snprintf(out, len, "%g", *(const double *)base);
        return;
    case CFG_CHOICE:
        choice_name(e->choices, *(const int64_t *)base, out, len);
        return;
    case CFG_PATH:
    case CFG_TEXT:
        snprintf(out, len, "%s", *(const char *const *)base ? *(const char *const *)base : "");
        return;
    case CFG_SIZE:
    case CFG_ADDR:
        format_size(e, (unsigned long long)*(const int64_t *)base, out, len);
        return;
    case CFG_INT:
    case CFG_BOOL:
        snprintf(out, len, "%lld", (long long)*(const int64_t *)base);
        return;
    }
}

size_t config_job_wide(const struct dsm_config *cfg, char *out, size_t len)
{
    size_t used = 0;
    if (len)
        out[0] = 0;
    for (size_t j = 0; j < NENTRIES; j++) {
        if (!table[j].job_wide)
            continue;
        char v[128];
        format_entry(&table[j], cfg, v, sizeof v);
        int n = snprintf(out + used, used < len ? len - used : 0, "%s%s=%s", used ? " " : "",
                         table[j].name, v);
        used += n > 0 ? (size_t)n : 0;
    }
    return used;
}

int config_job_wide_differ(const char *mine, const char *theirs, char *name, size_t name_len,
                           char *my_value, char *their_value, size_t value_len)
{
    /* Both list the same names in the same order (the same build); a
     * token that differs is reported whole where the names differ too. */
    while (*mine || *theirs) {
        size_t a = strcspn(mine, " "), b = strcspn(theirs, " ");
        if (a != b || strncmp(mine, theirs, a)) {
            size_t na = strcspn(mine, "=");
            na = na < a ? na : a;
            bool same_name = b > na && theirs[na] == '=' && !strncmp(mine, theirs, na);
            snprintf(name, name_len, "%.*s", (int)na, mine);
            snprintf(my_value, value_len, "%.*s", na < a ? (int)(a - na - 1) : 0, mine + na + (na < a));
            if (same_name)
                snprintf(their_value, value_len, "%.*s", (int)(b - na - 1), theirs + na + 1);
            else
                snprintf(their_value, value_len, "%.*s", (int)b, theirs);
            return 1;
        }
        mine += a + (mine[a] == ' ');
        theirs += b + (theirs[b] == ' ');
    }
    return 0;
}
