/*
 * job.h — who this node is and how the job is configured.
 *
 * Set once by the runtime at startup, before any layer starts, and read
 * everywhere after: every layer asks job() for the node's rank, the node
 * count and its threads instead of keeping copies of its own. The
 * settings reach a layer through its start's params (docs/design.md,
 * Settings).
 */
#ifndef DSM_BASE_JOB_H
#define DSM_BASE_JOB_H
#include <stdbool.h>

#include "base/config.h"

struct job {
    int               rank;  /* this node, 0 .. nodes - 1; node 0 is the master */
    int               nodes; /* nodes in the job */
    int               node_threads; /* program threads a node runs: DSM_THREADS, at least 1 */
    int               cpus;  /* DSM_CPUS: what a dsmcc program is told; 0 = nodes x node_threads */
    struct dsm_config cfg;   /* the environment settings (config.c), for the runtime: each
                                layer below has what it needs in its own start's params */
    bool              started; /* between dsm_startup's end and dsm_finish's */
};

extern struct job job_state;

static inline const struct job *job(void) { return &job_state; }

/* The CPUs a dsmcc program is told the job has (runtime/cpus.c says
 * why): nodes x DSM_THREADS, or DSM_CPUS; 0 where the host's count
 * stands (not started, or one node of a program not OpenMP's). */
int job_cpus(void);

/* For the runtime's startup and for tests: the one place that writes it. */
static inline struct job *job_init(void) { return &job_state; }
#endif
