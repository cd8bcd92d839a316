/* runtime.h — the runtime's context, reached through rt(); the node's
 * identity and settings are the job's (base/job.h). */
#ifndef DSM_RUNTIME_RUNTIME_H
#define DSM_RUNTIME_RUNTIME_H
#include <stdbool.h>

#include "base/job.h"
#include "parallel/parallel.h"

/* The runtime's message types (numbered on from parallel's; ipc.h). */
enum runtime_type {
    RUNTIME_STATS = PARALLEL_TYPE_NEXT, /* a node's statistics, to node 0 at finish */
    RUNTIME_CREATE,                 /* run a function with the master's globals */
    RUNTIME_CREATE_DONE,            /* it returned; the worker's intervals */
    RUNTIME_EXIT,                   /* fork style is over; leave */
    RUNTIME_TYPE_NEXT
};
_Static_assert((int)RUNTIME_TYPE_NEXT <= IPC_TYPE_MAX, "more message types than ipc has slots");

struct runtime {
    bool              started;
};

struct runtime *rt(void);

/* fork.c */
void fork_start(void);
void fork_finish(void);

/* report.c: statistics gathered at node 0 and printed at dsm_finish. */
void report_start(void);
void report_finish(void);
#endif
