/*
 * conf_threads.h — a conformance program, written SPMD (one participant a
 * node), run with every thread of every node as a participant (dsmrun
 * --threads T; docs/testing.md, SMP nodes). CMake builds such a program a
 * second time as <prog>_thr: compiled with -Dmain=conf_spmd_main and this
 * header force-included (-include), and linked with conf_threads_main.c,
 * whose main starts the job fork style and runs the program's main on
 * every thread of every node (dsm_create), the master's caller too.
 *
 * Inside the program:
 *   dsm_startup         does nothing: the job has started;
 *   dsm_rank, dsm_nodes are dsm_thread_id and dsm_thread_count, the
 *                       participant's index and how many there are;
 *   dsm_finish          does nothing: conf_threads_main.c ends the job
 *                       once every thread has returned;
 *   MP_CHECK            names the node and the thread.
 * What the programs synchronise with means over threads what it meant over
 * nodes (include/dsm.h, SMP nodes): dsm_barrier is met by every thread,
 * dsm_bcast is collective over every thread with a thread id as its root,
 * a lock is held by one thread, and a node's threads may wait on one
 * condition at once. What the protocol counts (base/stats.h) is the node's
 * and a port is the node's: a program that reads them per participant
 * says so under CONF_THREADS, or is not built this way (tests/conf/
 * CMakeLists.txt lists which and why). Static storage is the node's too,
 * shared by its threads: the programs built this way keep nothing per
 * participant there.
 */
#ifndef DSM_TEST_CONF_THREADS_H
#define DSM_TEST_CONF_THREADS_H
#include "mp_util.h"

#define CONF_THREADS 1

/* The node and the number of nodes, which dsm_rank and dsm_nodes no
 * longer name below. */
static inline int conf_threads_node(void) { return dsm_rank(); }
static inline int conf_threads_nodes(void) { return dsm_nodes(); }

static inline int conf_threads_startup(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}
static inline void conf_threads_finish(void) {}

/* The program's main, renamed (-Dmain=conf_spmd_main). */
int conf_spmd_main(int argc, char **argv);

#define dsm_startup conf_threads_startup
#define dsm_finish  conf_threads_finish
#define dsm_rank    dsm_thread_id
#define dsm_nodes   dsm_thread_count

#undef MP_CHECK
#define MP_CHECK(cond, ...)                                                    \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "node %d thread %d: %s:%d: check failed: %s: ",    \
                    conf_threads_node(), dsm_thread_id(), __FILE__, __LINE__,  \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#endif
