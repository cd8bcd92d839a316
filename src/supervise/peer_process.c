/*
 * peer_process.c — a node's process as the kernel shows it (peer_process.h).
 */
#include "supervise/peer_process.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/launch.h"

int process_look_format(char *buf, size_t len, int rank)
{
    return snprintf(buf, len, "look %d", rank);
}

int process_seen_format(char *buf, size_t len, int rank, const struct process_sight *s)
{
    return snprintf(buf, len, "seen %d %c %llu %llu", rank, s->state,
                    (unsigned long long)s->cpu_ns, (unsigned long long)s->process_cpu_ns);
}

int process_look_parse(const char *line, int nodes)
{
    int rank, used = 0;
    char again[BOOT_ARBITER_LINE_MAX + 1];
    if (sscanf(line, "look %d%n", &rank, &used) != 1 || line[used] || rank < 0 || rank >= nodes)
        return -1;
    process_look_format(again, sizeof again, rank);
    return strcmp(again, line) ? -1 : rank;
}

int process_seen_parse(const char *line, int nodes, struct process_sight *s)
{
    int rank, used = 0;
    char state, again[BOOT_ARBITER_LINE_MAX + 1];
    unsigned long long cpu, process_cpu;
    if (sscanf(line, "seen %d %c %llu %llu%n", &rank, &state, &cpu, &process_cpu, &used) != 4 ||
        line[used] || rank < 0 || rank >= nodes || !state || !strchr("XTSR", state))
        return -1;
    struct process_sight got = {.state = state, .cpu_ns = cpu, .process_cpu_ns = process_cpu};
    process_seen_format(again, sizeof again, rank, &got);
    if (strcmp(again, line))
        return -1;
    *s = got;
    return rank;
}

size_t proc_read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return n > 0 ? (size_t)n : 0;
}

bool proc_parse_stat(const char *path, char *state, int *ppid, unsigned long long *start,
                     uint64_t *cpu_ns)
{
    char buf[1024];
    if (!proc_read_file(path, buf, sizeof buf))
        return false;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
    unsigned long long utime, stime;
    if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
                     state, ppid, &utime, &stime, start) != 5)
        return false;
    long hz = sysconf(_SC_CLK_TCK);
    *cpu_ns = (utime + stime) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
    return true;
}

void process_look(int pid, unsigned long long start, struct process_sight *s)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = pid > 0 ? opendir(path) : NULL;
    bool any = false, runnable = false, stopped = true;
    uint64_t cpu = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char stat[96], state;
        int ppid;
        unsigned long long begun;
        uint64_t t;
        snprintf(stat, sizeof stat, "/proc/%d/task/%.20s/stat", pid, e->d_name);
        if (!proc_parse_stat(stat, &state, &ppid, &begun, &t))
            continue;
        /* stat's CPU time is in clock ticks (10 ms); schedstat's in ns */
        char ss[64];
        unsigned long long run;
        snprintf(stat, sizeof stat, "/proc/%d/task/%.20s/schedstat", pid, e->d_name);
        if (proc_read_file(stat, ss, sizeof ss) && sscanf(ss, "%llu", &run) == 1 && run)
            t = run;
        any = true;
        cpu += t;
        runnable |= state == 'R';
        stopped &= state == 'T' || state == 't';
    }
    if (d)
        closedir(d);
    /* The process itself, by its start time: another with its pid is not it. */
    char state;
    int ppid;
    unsigned long long begun;
    uint64_t total;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (!any || !proc_parse_stat(path, &state, &ppid, &begun, &total) || (start && begun != start) ||
        state == 'Z' || state == 'X') {
        *s = (struct process_sight){.state = 'X'};
        return;
    }
    *s = (struct process_sight){.state = stopped ? 'T' : runnable ? 'R' : 'S', .cpu_ns = cpu,
                                .process_cpu_ns = total};
}
