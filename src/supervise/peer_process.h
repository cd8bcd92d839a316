/*
 * peer_process.h — a node's process as the kernel shows it (/proc): what
 * liveness.c looks at for a silent peer on its host, and what the
 * launcher's agent looks at for a node of its host that a node on another
 * host finds silent (tools/arbiter.c). Reads /proc only; no state.
 */
#ifndef DSM_SUPERVISE_PEER_PROCESS_H
#define DSM_SUPERVISE_PEER_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One look at a process. */
struct process_sight {
    char     state;          /* 'X' gone (or a zombie), 'T' stopped (every thread),
                                'R' a thread runnable, 'S' asleep */
    uint64_t cpu_ns;         /* its threads' CPU time now (schedstat: precise, but
                                a sum over the threads that exist now) */
    uint64_t process_cpu_ns; /* the process's (stat: 10 ms ticks, but never
                                decreasing: exited threads count) */
};

/* The arbiter's lines (base/launch.h, BOOT_ENV_ARBITER_FD; the agents'
 * channel, tools/arbiter.c): "look RANK", and "seen RANK STATE CPU_NS
 * PROCESS_CPU_NS". Formatting returns the length (at most
 * BOOT_ARBITER_LINE_MAX, no newline). Parsing returns the rank, in
 * [0, nodes), or -1 unless the line is exactly as formatted: no sign, no
 * extra blank or leading zero, a state of the four, nothing after. */
int process_look_format(char *buf, size_t len, int rank);
int process_seen_format(char *buf, size_t len, int rank, const struct process_sight *s);
int process_look_parse(const char *line, int nodes);
int process_seen_parse(const char *line, int nodes, struct process_sight *s);

/* path's contents, NUL-terminated, at most size - 1 bytes; 0 if unreadable. */
size_t proc_read_file(const char *path, char *buf, size_t size);

/* State, parent, start time and CPU time (ns) from a /proc stat file;
 * false if it cannot be read. */
bool proc_parse_stat(const char *path, char *state, int *ppid, unsigned long long *start,
                     uint64_t *cpu_ns);

/* Looks at process pid now. start: its start time (stat field 22), so that
 * another process given its pid after its end is not taken for it; 0: the
 * caller knows the pid is still its (a parent that has not reaped it). */
void process_look(int pid, unsigned long long start, struct process_sight *s);

#endif
