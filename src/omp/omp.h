/*
 * omp.h — what the runtime, the layer above, calls of the OpenMP layer,
 * and what it lends it.
 *
 * A region spans the nodes through fork style (runtime/fork.c): the
 * master runs the team's members on the other nodes with a create (a
 * dsm_create whose argument travels in it) and waits for them with
 * dsm_wait_for_end. Those are the runtime's; the
 * runtime hands them down at start, so the OpenMP layer never calls up.
 */
#ifndef DSM_OMP_H
#define DSM_OMP_H
#include <stdbool.h>
#include <stddef.h>

struct omp_runtime_ops {
    /* fn on every other node, given a copy of the len bytes at arg */
    void (*create)(void (*fn)(void *), const void *arg, size_t len);
    void (*wait_for_end)(void);                    /* for what create started */
};

/* What the OpenMP layer needs from the settings (runtime.c fills it from
 * the table: docs/design.md, Settings). */
struct omp_params {
    int         node_threads;     /* DSM_THREADS */
    bool        node_threads_set; /* whether the user set DSM_THREADS: else a region
                                     may run up to OMP_NODE_THREADS_MAX a node */
    const char *static_sched;     /* DSM_OMP_STATIC, NULL if unset */
    const char *protocol;         /* DSM_PROTOCOL's name: whether it runs threads a node */
    bool        local_mem;        /* DSM_LOCAL_MEM is set: the page cache runs one */
};

/* At dsm_startup, before any region spans the nodes. */
void omp_start(const struct omp_runtime_ops *ops, const struct omp_params *p);
/* On the master once the job has started, before main (dsm_main): the
 * OpenMP runtime's start, so that a tool is initialized before the
 * program's first line, as libomp's is. */
void omp_before_main(void);
#endif
