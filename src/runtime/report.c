/*
 * report.c — per-node statistics, gathered at node 0 when the job ends.
 *
 * With DSM_STATS (dsmrun --stats) or DSM_STATS_JSON, every node sends its
 * counters to node 0 inside dsm_finish, before the transport shuts down;
 * node 0 prints one table with a column per node and writes the JSON.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "ipc/ipc.h"
#include "runtime/runtime.h"

static struct {
    pthread_mutex_t lock;
    uint64_t       *table;     /* nodes x STAT_COUNT, at node 0 */
    int             received;
} rep = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool wanted(void)
{
    return rt()->cfg.stats || rt()->cfg.stats_json;
}

static void on_stats(int peer, const void *msg, size_t len)
{
    if (len != sizeof(struct ipc_hdr) + STAT_COUNT * sizeof(uint64_t) || !rep.table)
        log_fatal("node %d sent a malformed statistics report", peer);
    pthread_mutex_lock(&rep.lock);
    memcpy(rep.table + (size_t)peer * STAT_COUNT, (const char *)msg + sizeof(struct ipc_hdr),
           STAT_COUNT * sizeof(uint64_t));
    rep.received++;
    pthread_mutex_unlock(&rep.lock);
    ipc_notify();
}

void report_start(void)
{
    ipc_register(IPC_STATS, on_stats, NULL);
    if (rt()->rank == 0 && wanted()) {
        rep.table = calloc((size_t)rt()->nodes * STAT_COUNT, sizeof(uint64_t));
        if (!rep.table)
            log_fatal("out of memory for the statistics table");
    }
}

static bool all_reported(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rep.lock);
    bool ok = rep.received == rt()->nodes;
    pthread_mutex_unlock(&rep.lock);
    return ok;
}

static void print_table(FILE *out, int nodes)
{
    fprintf(out, "\n== dsm statistics (%d node%s) ==\n", nodes, nodes == 1 ? "" : "s");
    fprintf(out, "%-44s", "counter");
    for (int n = 0; n < nodes; n++)
        fprintf(out, " %12s%d", "node", n);
    fputc('\n', out);
    for (int c = 0; c < STAT_COUNT; c++) {
        bool any = false;
        for (int n = 0; n < nodes; n++)
            any |= rep.table[(size_t)n * STAT_COUNT + c] != 0;
        if (!any)
            continue;
        fprintf(out, "%-44s", stats_descriptions[c]);
        for (int n = 0; n < nodes; n++)
            fprintf(out, " %13llu", (unsigned long long)rep.table[(size_t)n * STAT_COUNT + c]);
        fputc('\n', out);
    }
    fflush(out);
}

static void write_json(const char *path, int nodes)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        log_warn("cannot write statistics to %s: %s", path, strerror(errno));
        return;
    }
    fprintf(f, "{\n  \"nodes\": %d,\n  \"per_node\": [\n", nodes);
    for (int n = 0; n < nodes; n++) {
        fprintf(f, "    {\"rank\": %d, \"counters\": {", n);
        for (int c = 0; c < STAT_COUNT; c++)
            fprintf(f, "%s\"%s\": %llu", c ? ", " : "", stats_names[c],
                    (unsigned long long)rep.table[(size_t)n * STAT_COUNT + c]);
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
    uint64_t mine[STAT_COUNT];
    for (int c = 0; c < STAT_COUNT; c++)
        mine[c] = stats_get((enum stats_counter)c);
    ipc_send(0, IPC_STATS, 0, mine, sizeof mine);
    if (rt()->rank != 0)
        return;
    ipc_wait(all_reported, NULL, 0);
    if (rt()->cfg.stats)
        print_table(stdout, rt()->nodes);
    if (rt()->cfg.stats_json)
        write_json(rt()->cfg.stats_json, rt()->nodes);
}
