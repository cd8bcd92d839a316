/*
 * trace.h — the per-node event trace (DSM_TRACE, dsmrun --trace).
 *
 * Seed 000 §3.3 analyses communication from a trace of every message; this
 * is that trace, and the faults and synchronisation around the messages.
 * Each thread appends fixed 32-byte binary records to buffers of its own (no
 * lock, no atomics on the way), and the node writes them all to FILE.<rank>
 * at dsm_finish. tools/dsm-trace reads them (docs in the README).
 *
 * Off, a trace point is one load and one predictable branch (TRACE_ON).
 */
#ifndef DSM_BASE_TRACE_H
#define DSM_BASE_TRACE_H
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

enum trace_kind {
    TRACE_SEND = 1, /* sub: message type, peer: to, arg: bytes; t0..t1: in the send call */
    TRACE_RECV,     /* sub: type, peer: from, arg: bytes; t0: first bytes in, t1..t2: handler */
    TRACE_FAULT,    /* sub: 0 read, 1 write; arg: page; t0..t1 */
    TRACE_BARRIER,  /* arg: epoch; t0 entry, t1 release done, t2 exit */
    TRACE_LOCK,     /* acquire. arg: lock id; t0 entry, t1 granted, t2 notices applied */
    TRACE_UNLOCK,   /* release. arg: lock id; t0 entry, t1 release done, t2 exit */
    TRACE_COND,     /* condition wait. arg: condition id; t0..t2 */
    TRACE_MARK,     /* sub: enum trace_mark; t0 */
    /* For the breakdown of a message's latency (seed 004's Fig. 6): */
    TRACE_CALL,     /* sub: 0 dsm_msg_send, 1 dsm_msg_recv; peer; arg: bytes; t0 entry,
                       t1 send: handed to ipc (recv: message taken), t2 return */
    TRACE_DGRAM_OUT,/* a data datagram's first transmission. peer: to, arg: its sequence
                       number; t0..t1: the system call that sent it */
    TRACE_DGRAM_IN, /* a data datagram received. peer: from, arg: its sequence number; t0: the
                       kernel's receive time stamp, t1: the receive call returned, t2: checked */
    TRACE_TASK,     /* an OpenMP task that leaves its node (omp/task.c). sub: enum
                       trace_task; peer: the other node (OFFERED: this one); arg: the
                       task's depth; t0..t1; t2: the task's address (the same on every
                       node: it lives in shared memory), which pairs the records */
};

enum trace_task {
    TRACE_TASK_OFFERED = 0, /* put on this node's queue; t0..t1: the queue's lock */
    TRACE_TASK_TAKEN,       /* taken from peer's queue by this node; t0..t1: the steal */
    TRACE_TASK_RAN,         /* ran here, taken from peer; t0..t1: it and its children */
    TRACE_TASK_DONE,        /* handed back complete to peer's queue; t0..t1 */
    TRACE_TASK_HARVESTED,   /* its completion elsewhere taken in by its creator; t0 */
};

enum trace_mark {
    TRACE_MARK_START = 1,  /* tracing began (end of dsm_startup) */
    TRACE_MARK_RESET,      /* dsm_stats_reset: the statistics start here */
    TRACE_MARK_FREEZE,     /* dsm_stats_freeze: the statistics end here */
    TRACE_MARK_TAKEN,      /* the statistics report was taken (unless frozen) */
    TRACE_MARK_FINISH,     /* dsm_finish */
};

/* The record, as written to the file (little-endian on every host we run). */
struct trace_rec {
    uint8_t  kind;
    uint8_t  sub;
    uint16_t peer;
    uint32_t arg;
    uint64_t t0, t1, t2; /* CLOCK_MONOTONIC, ns */
};
_Static_assert(sizeof(struct trace_rec) == 32, "trace records are 32 bytes");

extern bool trace_enabled;
#define TRACE_ON __builtin_expect(trace_enabled, 0)

/* Appends a record to the calling thread's buffer (only when TRACE_ON). */
void trace_put(enum trace_kind kind, unsigned sub, int peer, uint64_t arg, uint64_t t0,
               uint64_t t1, uint64_t t2);

/* What the file's header says about the run. */
struct trace_info {
    int         rank, nodes;
    uint32_t    page_size, datagram;
    uint64_t    delay_ns;  /* DSM_NET_DELAY_US: injected into this run */
    const char *protocol;
};

/* Starts recording for this node; the calling thread is the application's.
 * The file is `path`.<rank>. Returns 0 or a negative errno. */
int trace_start(const char *path, const struct trace_info *info);

/* The file names this many message types: every one the message header's
 * type byte can number (the file's reader takes the count from the file). */
#define TRACE_TYPES 256

/* Writes the file and stops recording; every other thread that recorded
 * must have stopped. type_name names message types for the file. Returns 0
 * or a negative errno (the file is then incomplete). */
int trace_finish(const char *(*type_name)(unsigned type));

/* A point in time worth finding in the trace (enum trace_mark). */
static inline void trace_mark(enum trace_mark m)
{
    if (TRACE_ON)
        trace_put(TRACE_MARK, m, 0, 0, clock_ns(), 0, 0);
}
#endif
