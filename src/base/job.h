/*
 * job.h — who this node is and how the job is configured.
 *
 * Set once by the runtime at startup, before any layer starts, and read
 * everywhere after: every layer asks job() for the node's rank, the node
 * count and the settings instead of keeping copies of its own.
 */
#ifndef DSM_BASE_JOB_H
#define DSM_BASE_JOB_H
#include <stdbool.h>

#include "base/config.h"

struct job {
    int               rank;  /* this node, 0 .. nodes - 1; node 0 is the master */
    int               nodes; /* nodes in the job */
    struct dsm_config cfg;   /* the environment settings (config.c) */
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
