/* runtime.h — the runtime's context, reached through rt(); the node's
 * identity and settings are the job's (base/job.h). */
#ifndef DSM_RUNTIME_RUNTIME_H
#define DSM_RUNTIME_RUNTIME_H
#include <stdbool.h>

#include "base/job.h"

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
