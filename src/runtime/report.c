/*
 * report.c — per-node statistics, gathered at node 0 when the job ends.
 *
 * With DSM_STATS (dsmrun --stats) or DSM_STATS_JSON, every node sends node 0
 * one RUNTIME_STATS message inside dsm_finish, before the transport shuts down:
 * its counters (base/stats.h) and the messages and bytes it sent by type.
 * Node 0 prints three sections with a column per node — the time split of
 * seed 000 (its figures 7-10: barrier, readsegv, writesegv, sigio, lock,
 * computing), the nonzero counts, the messages by type — and writes the JSON.
 * docs/statistics.md says how to read them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/job.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/smp.h"
#include "base/state.h"
#include "base/stats.h"
#include "base/trace.h"
#include "coherence/coherence.h"
#include "dsm.h"
#include "ipc/ipc.h"
#include "runtime/runtime.h"

/* Every message type ipc can number has its statistics slot. */
_Static_assert(STATS_MSG_TYPES >= IPC_TYPE_MAX, "fewer statistics slots than message types");

/* One node's report: the body of its RUNTIME_STATS message. Only uint64_t
 * fields, so the layout has no padding and is the same on every node. */
struct node_report {
    uint64_t counters[STAT_COUNT];
    uint64_t msgs[STATS_MSG_TYPES];  /* messages sent, by enum ipc_type */
    uint64_t bytes[STATS_MSG_TYPES]; /* bytes sent, by enum ipc_type */
};

static DSM_STATE struct {
    pthread_mutex_t     lock;
    uint64_t            start_ns; /* report_started: the end of dsm_startup */
    uint64_t            free_at_start; /* smp_slots_free_ns then */
    bool                frozen;   /* dsm_stats_freeze: `held` is the report */
    struct node_report  held;
    struct node_report *table;    /* at node 0: one per node */
    bool               *reported; /* at node 0: which nodes have reported */
    int                 received;
} rep = {.lock = PTHREAD_MUTEX_INITIALIZER};


static bool wanted(void)
{
    return job()->cfg.stats || job()->cfg.stats_json;
}

static void on_stats(int peer, const void *msg, size_t len)
{
    if (!rep.table || peer < 0 || peer >= job()->nodes)
        log_fatal("node %d sent a statistics report nobody asked for", peer);
    pthread_mutex_lock(&rep.lock);
    if (rep.reported[peer])
        log_fatal("node %d sent its statistics report twice", peer);
    ipc_body(peer, msg, len, &rep.table[peer], sizeof(struct node_report), NULL,
             "statistics report");
    rep.reported[peer] = true;
    rep.received++;
    pthread_mutex_unlock(&rep.lock);
    ipc_notify();
}

void dsm_stats_reset(void)
{
    for (int i = 0; i < STAT_COUNT; i++)
        /* set once, before any reset */
        if (i != STAT_T_STARTUP_NS && i != STAT_SVC_POLLING && i != STAT_HOST_CPUS && i != STAT_HOST_NODES)
            stats_set((enum stats_counter)i, 0);
    for (int i = 0; i < STATS_MSG_TYPES; i++) {
        atomic_store_explicit(&stats_msgs_by_type[i], 0, memory_order_relaxed);
        atomic_store_explicit(&stats_bytes_by_type[i], 0, memory_order_relaxed);
    }
    rep.start_ns = clock_ns();
    rep.free_at_start = smp_slots_free_ns();
    rep.frozen = false;
    trace_mark(TRACE_MARK_RESET);
}

/* A pthreads program's node (run slots, base/smp.h): its threads may
 * outnumber its T slots, and a thread that waits for another (a lock, a
 * condition, a join, a barrier) gives its slot up to one that computes.
 * Summed over the threads, those waits can pass the node's thread-time,
 * T x the run, and left computing 0 where a thread computed all along
 * (node 0: main waiting in pthread_join while the program thread placed
 * beside it ran). What they took from the node is the slot-time no
 * thread held: the waits off the slots (lock, barrier, idle) are scaled
 * down to it when they pass it, so the split still adds up and
 * computing is the slot-time threads ran. Fault waits hold the slot:
 * they stay as they are. */
static void count_waits_off_slots(uint64_t *c)
{
    if (!smp_slots_enabled())
        return;
    uint64_t free_ns = smp_slots_free_ns() - rep.free_at_start;
    uint64_t waits = c[STAT_T_LOCK_NS] + c[STAT_T_BARRIER_NS] + c[STAT_T_IDLE_NS];
    if (waits <= free_ns)
        return;
    double k = (double)free_ns / (double)waits;
    c[STAT_T_LOCK_NS] = (uint64_t)((double)c[STAT_T_LOCK_NS] * k);
    c[STAT_T_BARRIER_NS] = (uint64_t)((double)c[STAT_T_BARRIER_NS] * k);
    c[STAT_T_IDLE_NS] = (uint64_t)((double)c[STAT_T_IDLE_NS] * k);
}

/* This node's statistics now; the total is its time since startup (or
 * since dsm_stats_reset). */
static void take(struct node_report *r)
{
    stats_set(STAT_T_TOTAL_NS, clock_ns() - rep.start_ns);
    for (int c = 0; c < STAT_COUNT; c++)
        r->counters[c] = stats_get((enum stats_counter)c);
    count_waits_off_slots(r->counters);
    for (unsigned t = 0; t < STATS_MSG_TYPES; t++) {
        r->msgs[t] = atomic_load_explicit(&stats_msgs_by_type[t], memory_order_relaxed);
        r->bytes[t] = atomic_load_explicit(&stats_bytes_by_type[t], memory_order_relaxed);
    }
}

void dsm_stats_freeze(void)
{
    take(&rep.held);
    rep.frozen = true;
    trace_mark(TRACE_MARK_FREEZE);
}

/* The total starts when dsm_startup returns (docs/statistics.md), not
 * before the transport and the boot's wait for every node: a node started
 * well before the others would otherwise count that wait as computing. */
void report_started(void)
{
    rep.start_ns = clock_ns();
    rep.free_at_start = smp_slots_free_ns();
}

void report_start(void)
{
    rep.start_ns = clock_ns();
    ipc_register(RUNTIME_STATS, "STATS", on_stats, NULL);
    if (job()->rank == 0 && wanted()) {
        rep.table = calloc((size_t)job()->nodes, sizeof *rep.table);
        rep.reported = calloc((size_t)job()->nodes, sizeof *rep.reported);
        if (!rep.table || !rep.reported)
            log_fatal("out of memory for the statistics table");
    }
}

static bool all_reported(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rep.lock);
    bool ok = rep.received == job()->nodes;
    pthread_mutex_unlock(&rep.lock);
    return ok;
}

/* ---- the time split ---------------------------------------------------- */

/* A counter name starting with T_ is a time in nanoseconds (stats.h). */
static bool is_time(int c)
{
    return strncmp(stats_names[c], "T_", 2) == 0;
}

/* A node's application threads (dsmrun --threads T): the waits below are
 * summed over them, so the split is of thread-time, T x the run's time. */
static uint64_t node_threads(void)
{
    return job()->cfg.threads > 1 ? job()->cfg.threads : 1;
}

static uint64_t thread_time_ns(const struct node_report *r)
{
    return r->counters[STAT_T_TOTAL_NS] * node_threads();
}

/* Computing is what remains of the node's thread-time once its application
 * threads' waits are taken out, idleness (fork style: no work given) among
 * them. Request service is not one of them: it runs on the service thread,
 * concurrently. Clamped at 0 in case the waits overlap. */
static uint64_t computing_ns(const struct node_report *r)
{
    const uint64_t *c = r->counters;
    uint64_t waits = c[STAT_T_BARRIER_NS] + c[STAT_T_READ_FAULT_NS] + c[STAT_T_WRITE_FAULT_NS] +
                     c[STAT_T_LOCK_NS] + c[STAT_T_IDLE_NS];
    uint64_t all = thread_time_ns(r);
    return waits < all ? all - waits : 0;
}

#define COMPUTING (-1) /* time_row.counter: derived, not a counter */
#define AURC      (-2)
#define THREAD_TIME (-3) /* the table's total: T x the run's time */

/* Seed 000 §3.2 estimates AURC, whose automatic update hardware makes
 * writes reach the home at no cost, from an HLRC run: its time less the
 * twins, the diffs' creation, and their sending and applying. */
static uint64_t aurc_ns(const struct node_report *r)
{
    const uint64_t *c = r->counters;
    uint64_t work = c[STAT_T_TWIN_NS] + c[STAT_T_DIFF_NS] + c[STAT_T_DIFF_SEND_NS] +
                    c[STAT_T_DIFF_APPLY_NS];
    uint64_t all = thread_time_ns(r);   /* the work is summed over the threads too */
    return work < all ? all - work : 0;
}

struct time_row {
    const char *label; /* in the printed table */
    const char *key;   /* in the JSON's time_ms */
    int         counter;
};

/* The split of seed 000 (figures 7-10: barrier, readsegv, writesegv, sigio,
 * lock, computing), computing first, each row in milliseconds. */
static const struct time_row split_rows[] = {
    {"total", "total", STAT_T_TOTAL_NS},
    {"computing", "computing", COMPUTING},
    {"barrier", "barrier", STAT_T_BARRIER_NS},
    {"read fault", "read_fault", STAT_T_READ_FAULT_NS},
    {"write fault", "write_fault", STAT_T_WRITE_FAULT_NS},
    {"request service *", "request_service", STAT_T_SERVICE_NS},
    {"lock", "lock", STAT_T_LOCK_NS},
    {"idle ***", "idle", STAT_T_IDLE_NS},
};

/* Under protocols whose accounting the estimate fits (coherence_ops
 * .aurc_estimate: hlrc's), the estimate of AURC (aurc_ns). */
static const struct time_row aurc_rows[] = {
    {"AURC estimate (seed 000 3.2) **", "aurc_estimate", AURC},
};

static bool shows_aurc(void) { return coh->aurc_estimate; }

/* Protocol work, already inside the rows above, not added to them: twins
 * are made in write faults, diffs created and sent at releases (barrier,
 * unlock), and applied at their home on its service thread, concurrently
 * like request service. */
static const struct time_row work_rows[] = {
    {"twin", "twin", STAT_T_TWIN_NS},
    {"diff creation", "diff_create", STAT_T_DIFF_NS},
    {"diff send", "diff_send", STAT_T_DIFF_SEND_NS},
    {"diff apply", "diff_apply", STAT_T_DIFF_APPLY_NS},
};

/* OpenMP constructs (docs/openmp.md), shown when a region ran: the time
 * in regions, and within the split above, the waits that belong to them. */
static const struct time_row parallel_rows[] = {
    {"parallel regions", "parallel_regions", STAT_T_PAR_REGION_NS},
    {"waiting for loop chunks", "loop_chunks", STAT_T_PAR_CHUNK_NS},
    {"waiting for ordered turns", "ordered", STAT_T_PAR_ORDERED_NS},
    {"entering critical", "critical", STAT_T_PAR_CRITICAL_NS},
    {"entering reductions", "reductions", STAT_T_PAR_REDUCE_NS},
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

static bool shows_parallel(int nodes)
{
    for (int n = 0; n < nodes; n++)
        if (rep.table[n].counters[STAT_PAR_REGIONS])
            return true;
    return false;
}

static uint64_t row_ns(const struct time_row *row, const struct node_report *r)
{
    return row->counter == COMPUTING ? computing_ns(r)
         : row->counter == AURC      ? aurc_ns(r)
         : row->counter == THREAD_TIME ? thread_time_ns(r)
                                     : r->counters[row->counter];
}

/* ---- the printed table ------------------------------------------------- */

#define CELL 12   /* characters per node column, so 8 nodes fit */
#define INDENT "  "

/* A time cell: milliseconds, then the share of the total. */
static void time_cell(char *buf, size_t size, uint64_t ns, uint64_t total_ns)
{
    double ms = (double)ns / 1e6;
    const char *fmt = ms < 1e5 ? "%.1f" : "%.0f";
    char val[32];
    snprintf(val, sizeof val, fmt, ms);
    if (total_ns)
        snprintf(buf, size, "%s %3.0f%%", val, 100.0 * (double)ns / (double)total_ns);
    else
        snprintf(buf, size, "%s    -", val);
}

/* A count in at most 6 characters: exact below 100000, else k/M/G/T (1000s). */
static void compact(char *buf, size_t size, uint64_t v)
{
    static const char units[] = "kMGTPE";
    if (v < 100000) {
        snprintf(buf, size, "%llu", (unsigned long long)v);
        return;
    }
    double x = (double)v;
    int u = -1;
    do {
        x /= 1000;
        u++;
    } while (x >= 1000 && units[u + 1]);
    snprintf(buf, size, x < 100 ? "%.1f%c" : "%.0f%c", x, units[u]);
}

/* Counters described as "of which ..." refine the line above: indent them. */
static const char *count_indent(int c)
{
    return strncmp(stats_descriptions[c], "of which", 8) == 0 ? INDENT INDENT : INDENT;
}

static const char *type_label(unsigned t, char *buf, size_t size)
{
    const char *name = ipc_type_name(t);
    if (name)
        return name;
    snprintf(buf, size, "type_%u", t);
    return buf;
}

static bool count_shown(int c, int nodes)
{
    if (is_time(c) || c == STAT_HOST_CPUS || c == STAT_HOST_NODES) /* the "cpus:" line says them */
        return false;
    for (int n = 0; n < nodes; n++)
        if (rep.table[n].counters[c])
            return true;
    return false;
}

static bool type_shown(unsigned t, int nodes)
{
    for (int n = 0; n < nodes; n++)
        if (rep.table[n].msgs[t] || rep.table[n].bytes[t])
            return true;
    return false;
}

/* A section's first line: its title in the label column, then the nodes. */
static void section(FILE *out, int width, const char *title, int nodes)
{
    fprintf(out, "\n%-*s", width, title);
    for (int n = 0; n < nodes; n++) {
        char head[16];
        snprintf(head, sizeof head, "node %d", n);
        fprintf(out, " %*s", CELL, head);
    }
    fputc('\n', out);
}

static void time_rows(FILE *out, int width, const char *indent, const struct time_row *rows,
                      size_t count, int nodes)
{
    for (size_t i = 0; i < count; i++) {
        fprintf(out, "%s%-*s", indent, width - (int)strlen(indent), rows[i].label);
        for (int n = 0; n < nodes; n++) {
            char cell[48];
            const struct node_report *r = &rep.table[n];
            /* the table's total is thread-time, the share's base too */
            int counter = rows[i].counter == STAT_T_TOTAL_NS ? THREAD_TIME : rows[i].counter;
            struct time_row row = {rows[i].label, rows[i].key, counter};
            time_cell(cell, sizeof cell, row_ns(&row, r), thread_time_ns(r));
            fprintf(out, " %*s", CELL, cell);
        }
        fputc('\n', out);
    }
}

#define TITLE_TIME   "time split, ms (% of total)"
#define TITLE_COUNTS "counts"
#define TITLE_MSGS   "messages sent by type (messages/bytes)"
#define TITLE_WORK   "of which protocol work:"

/* With several threads a node, the split is of thread-time (node_threads). */
static const char *time_title(char *buf, size_t size)
{
    if (node_threads() == 1)
        return TITLE_TIME;
    snprintf(buf, size, "time split, ms of thread-time (%llu threads x the run; %% of it)",
             (unsigned long long)node_threads());
    return buf;
}

static int label_width(int nodes)
{
    char title[96];
    int w = (int)strlen(time_title(title, sizeof title));
    if ((int)strlen(TITLE_MSGS) > w)
        w = (int)strlen(TITLE_MSGS);
    for (int c = 0; c < STAT_COUNT; c++)
        if (count_shown(c, nodes)) {
            int l = (int)(strlen(count_indent(c)) + strlen(stats_descriptions[c]));
            w = l > w ? l : w;
        }
    for (unsigned t = 0; t < STATS_MSG_TYPES; t++)
        if (type_shown(t, nodes)) {
            char buf[16];
            int l = (int)(strlen(INDENT) + strlen(type_label(t, buf, sizeof buf)));
            w = l > w ? l : w;
        }
    return w;
}

/* The node whose dsm_startup returned last after the launch. */
static int slowest_start(int nodes)
{
    int last = 0;
    for (int n = 1; n < nodes; n++)
        if (rep.table[n].counters[STAT_T_STARTUP_NS] > rep.table[last].counters[STAT_T_STARTUP_NS])
            last = n;
    return last;
}

/* One line when a host runs more application threads than it has CPUs (the
 * demo's 4 nodes on a 2-CPU machine): its nodes take turns on the CPUs, so
 * the job runs slower than one node would, and a peer waiting for its turn
 * looks, to its senders, like a lost datagram. Said so that a first reader
 * blames neither dsm nor the network; computed from what each node found
 * (service.c), never assumed. */
static void cpus_shared_line(FILE *out, int nodes)
{
    uint64_t threads = job()->cfg.threads > 1 ? job()->cfg.threads : 1;
    for (int n = 0; n < nodes; n++) {
        const uint64_t *c = rep.table[n].counters;
        if (!c[STAT_HOST_CPUS] || c[STAT_HOST_NODES] * threads <= c[STAT_HOST_CPUS])
            continue;
        uint64_t resent = 0;
        for (int m = 0; m < nodes; m++)
            resent += rep.table[m].counters[STAT_NET_RETRANSMITS] + rep.table[m].counters[STAT_NET_LOSSY_COPIES];
        fprintf(out, "cpus: %llu node%s x %llu thread%s share %llu CPU%s on node %d's host: they take "
                     "turns, so a speedup below 1 is expected here\n",
                (unsigned long long)c[STAT_HOST_NODES], c[STAT_HOST_NODES] == 1 ? "" : "s",
                (unsigned long long)threads, threads == 1 ? "" : "s",
                (unsigned long long)c[STAT_HOST_CPUS], c[STAT_HOST_CPUS] == 1 ? "" : "s", n);
        if (resent)
            fprintf(out, "      (and the resends counted below are mostly a peer waiting for its turn, not loss)\n");
        return;
    }
}

/* The transport the nodes ran over (DSM_NET), and over UCX the transports
 * UCX was told to use (UCX_TLS; unset, UCX chooses among all it finds):
 * the same program's times differ by several times between them. */
static void transport_name(char *out, size_t len)
{
    const char *tls = getenv("UCX_TLS");
    if (job()->cfg.net_transport != NET_TRANSPORT_UCX)
        snprintf(out, len, "udp");
    else if (tls)
        snprintf(out, len, "ucx (UCX_TLS=%s)", tls);
    else
        snprintf(out, len, "ucx (UCX_TLS unset: whichever UCX finds)");
}

static void print_report(FILE *out, int nodes)
{
    char transport[160];
    transport_name(transport, sizeof transport);
    int width = label_width(nodes);
    fprintf(out, "\n== dsm statistics: %d node%s ==\n", nodes, nodes == 1 ? "" : "s");
    fprintf(out, "protocol: %s\n", coherence_name());
    fprintf(out, "transport: %s\n", transport);
    int last = slowest_start(nodes);
    fprintf(out, "startup: %.1f ms (the job's launch to node %d's dsm_startup return, the last)\n",
            (double)rep.table[last].counters[STAT_T_STARTUP_NS] / 1e6, last);
    int polling = 0;
    for (int n = 0; n < nodes; n++)
        polling += rep.table[n].counters[STAT_SVC_POLLING] != 0;
    if (polling == 0)
        fprintf(out, "service threads: sleep until a message comes (no node has a CPU beyond its "
                     "application threads; DSM_SERVICE_POLL)\n");
    else
        fprintf(out, "service threads: poll on %d of %d node%s%s (DSM_SERVICE_POLL)\n", polling, nodes,
                nodes == 1 ? "" : "s", polling < nodes ? ", sleep on the rest" : "");

    cpus_shared_line(out, nodes);

    char title[96];
    section(out, width, time_title(title, sizeof title), nodes);
    time_rows(out, width, INDENT, split_rows, NROWS(split_rows), nodes);
    fprintf(out, INDENT "%s\n", TITLE_WORK);
    time_rows(out, width, INDENT INDENT, work_rows, NROWS(work_rows), nodes);
    if (shows_aurc())
        time_rows(out, width, INDENT, aurc_rows, NROWS(aurc_rows), nodes);
    if (shows_parallel(nodes)) {
        fprintf(out, INDENT "OpenMP (within the rows above)\n");
        time_rows(out, width, INDENT INDENT, parallel_rows, NROWS(parallel_rows), nodes);
    }
    fprintf(out, INDENT "* request service runs on the service thread, concurrently with the\n"
                 INDENT "  application: shown, but not subtracted from computing.\n");
    if (shows_aurc())
        fprintf(out, INDENT "** the total less twin, diff creation, send and apply: the same run\n"
                     INDENT "   under AURC, whose writes would reach the home by hardware.\n");
    fprintf(out, INDENT "*** fork style (dsmcc, dsm_startup_fork): a node waiting for the master's\n"
                 INDENT "    next create, or the master waiting for its workers to end.\n");
    fprintf(out, INDENT "A row can pass 100%%: it sums the waits of all the node's threads (a\n"
                 INDENT "pthreads program's), several of which can wait at once.\n");

    section(out, width, TITLE_COUNTS, nodes);
    bool none = true;
    for (int c = 0; c < STAT_COUNT; c++) {
        if (!count_shown(c, nodes))
            continue;
        none = false;
        const char *indent = count_indent(c);
        fprintf(out, "%s%-*s", indent, width - (int)strlen(indent), stats_descriptions[c]);
        for (int n = 0; n < nodes; n++)
            fprintf(out, " %*llu", CELL, (unsigned long long)rep.table[n].counters[c]);
        fputc('\n', out);
    }
    if (none)
        fprintf(out, INDENT "(none)\n");

    section(out, width, TITLE_MSGS, nodes);
    none = true;
    for (unsigned t = 0; t < STATS_MSG_TYPES; t++) {
        if (!type_shown(t, nodes))
            continue;
        none = false;
        char name[16];
        fprintf(out, INDENT "%-*s", width - (int)strlen(INDENT), type_label(t, name, sizeof name));
        for (int n = 0; n < nodes; n++) {
            char m[16], b[16], cell[40] = "-"; /* "-": this node sent none */
            if (rep.table[n].msgs[t] || rep.table[n].bytes[t]) {
                compact(m, sizeof m, rep.table[n].msgs[t]);
                compact(b, sizeof b, rep.table[n].bytes[t]);
                snprintf(cell, sizeof cell, "%s/%s", m, b);
            }
            fprintf(out, " %*s", CELL, cell);
        }
        fputc('\n', out);
    }
    if (none)
        fprintf(out, INDENT "(none)\n");
    fflush(out);
}

/* ---- the JSON ------------------------------------------------------------ */

static void json_times(FILE *f, const struct time_row *rows, size_t count,
                       const struct node_report *r, bool first)
{
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%s\"%s\": %.3f", first && i == 0 ? "" : ", ", rows[i].key,
                (double)row_ns(&rows[i], r) / 1e6);
}

static void write_json(const char *path, int nodes)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        log_warn("cannot write statistics to %s: %s", path, strerror(errno));
        return;
    }
    char transport[160];
    transport_name(transport, sizeof transport);
    fprintf(f, "{\n  \"nodes\": %d,\n  \"protocol\": \"%s\",\n  \"transport\": \"%s\",\n"
               "  \"startup_ms\": %.3f,\n  \"per_node\": [\n", nodes,
            coherence_name(), transport, (double)rep.table[slowest_start(nodes)].counters[STAT_T_STARTUP_NS] / 1e6);
    for (int n = 0; n < nodes; n++) {
        const struct node_report *r = &rep.table[n];
        fprintf(f, "    {\"rank\": %d, \"threads\": %llu,\n     \"time_ms\": {", n,
                (unsigned long long)node_threads());
        json_times(f, split_rows, NROWS(split_rows), r, true);
        json_times(f, work_rows, NROWS(work_rows), r, false);
        if (shows_aurc())
            json_times(f, aurc_rows, NROWS(aurc_rows), r, false);
        if (shows_parallel(nodes))
            json_times(f, parallel_rows, NROWS(parallel_rows), r, false);
        fprintf(f, "},\n     \"counters\": {");
        for (int c = 0; c < STAT_COUNT; c++)
            fprintf(f, "%s\"%s\": %llu", c ? ", " : "", stats_names[c],
                    (unsigned long long)r->counters[c]);
        /* The same types for every node: those any node sent. */
        fprintf(f, "},\n     \"messages\": {");
        bool first = true;
        for (unsigned t = 0; t < STATS_MSG_TYPES; t++) {
            if (!type_shown(t, nodes))
                continue;
            char name[16];
            fprintf(f, "%s\"%s\": {\"count\": %llu, \"bytes\": %llu}", first ? "" : ", ",
                    type_label(t, name, sizeof name), (unsigned long long)r->msgs[t],
                    (unsigned long long)r->bytes[t]);
            first = false;
        }
        fprintf(f, "}}%s\n", n + 1 < nodes ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    if (fclose(f))
        log_warn("cannot write statistics to %s: %s", path, strerror(errno));
}

void report_finish(void)
{
    if (!wanted())
        return;
    struct node_report mine;
    if (rep.frozen)
        mine = rep.held;
    else {
        take(&mine);
        trace_mark(TRACE_MARK_TAKEN);
    }
    int rc = ipc_send(0, RUNTIME_STATS, 0, &mine, sizeof mine);
    if (rc)
        log_fatal("cannot send the statistics report to node 0: %s", strerror(-rc));
    if (job()->rank != 0)
        return;
    ipc_wait(all_reported, NULL, 0);
    if (job()->cfg.stats)
        print_report(stdout, job()->nodes);
    if (job()->cfg.stats_json)
        write_json(job()->cfg.stats_json, job()->nodes);
}
