/*
 * tsm.h — the seed 000 programming interface (Table 1: tsm_startup,
 * tsm_alloc, tsm_create_procs, tsm_finish, tsm_barrier, tsm_lock,
 * tsm_unlock, TSM_PID, TSM_NUMNODES) on top of dsm.h, header-only.
 *
 * TSM programs are fork style: the master alone runs main, allocates the
 * shared data, then starts the other processes on a function. The pattern
 * this header is built for:
 *
 *     static double *a;                      // a global: copied to the others
 *     static void work(void)
 *     {
 *         ... a[TSM_PID * chunk ...] ...     // every node, the master too
 *         tsm_barrier();
 *     }
 *     int main(int argc, char **argv)
 *     {
 *         tsm_startup(&argc, &argv);         // returns on the master only
 *         a = tsm_alloc(n * sizeof *a);
 *         tsm_create_procs(work);            // nodes 1 .. N-1 run work()
 *         work();                            // the master runs it as well
 *         tsm_finish();                      // waits for the others, ends the job
 *     }
 *
 * Why the master calls the function itself: a TSM computation is spread over
 * TSM_NUMNODES processes and its barriers count all of them, the master
 * included (dsm_barrier is collective over every node). tsm_create_procs
 * therefore starts only the *other* nodes and returns at once, and the
 * master joins by calling the same function; a program that wants the
 * master to do something else instead simply must not call tsm_barrier in
 * code the master does not also run.
 *
 * Shared memory must not be read after tsm_finish: it ends the job.
 */
#ifndef TSM_H
#define TSM_H

#include <stddef.h>
#include <stdint.h>

#include "dsm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The process identifier, 0 .. TSM_NUMNODES-1; the master is 0.
 * -> dsm_rank(). */
#define TSM_PID (dsm_rank())

/* Number of nodes (processes) in the system. -> dsm_nodes(). */
#define TSM_NUMNODES (dsm_nodes())

/* System initialisation -> dsm_startup_fork: returns on the master only;
 * the other nodes wait in the library for tsm_create_procs, and exit when
 * the master calls tsm_finish. dsm's own options are removed from
 * argc/argv. */
static inline void tsm_startup(int *argc, char ***argv)
{
    dsm_startup_fork(argc, argv);
}

/* Shared memory allocation -> dsm_malloc: zeroed, valid at the same address
 * on every node. Allocate before tsm_create_procs and keep the pointer in a
 * global (the others receive a copy of the master's globals), or hand it
 * over through memory that is already shared. */
static inline void *tsm_alloc(size_t size)
{
    return dsm_malloc(size);
}

/* dsm_create runs void (*)(void *); TSM's process functions take nothing.
 * The function's address travels as the argument: every node runs the same
 * executable at the same addresses (dsmrun turns address randomisation off),
 * so the address means the same function on every node. */
static inline void tsm_trampoline_(void *fn)
{
    ((void (*)(void))(uintptr_t)fn)();
}

/* Remote process start -> dsm_create(fn) on nodes 1 .. N-1, each from a
 * copy of the master's globals as they are now (fork semantics). Master
 * only; returns at once and does NOT run fn on the master: the master calls
 * fn() itself (see the top of this file).
 * It may be called again for a next parallel phase: it first waits
 * (dsm_wait_for_end, which returns at once when nothing runs) until the
 * processes of the previous call have returned, so that the phases never
 * overlap and the new processes start from the master's globals as they
 * are after the previous phase. */
static inline void tsm_create_procs(void (*fn)(void))
{
    dsm_wait_for_end();
    dsm_create(tsm_trampoline_, (void *)(uintptr_t)fn);
}

/* System end. On the master -> dsm_wait_for_end (every process function
 * has returned; their writes are visible to the master from here — this
 * wait is an acquire) and then dsm_finish, which ends the job (the other
 * nodes exit). Called on another node — that is, inside a process function
 * — it does nothing: there a process ends by returning from its function. */
static inline void tsm_finish(void)
{
    if (dsm_rank() != 0)
        return;
    dsm_wait_for_end();
    dsm_finish();
}

/* Barrier over all TSM_NUMNODES nodes -> dsm_barrier (collective: the
 * master must take part, hence it runs the process function too). Every
 * write made before it by any node is visible after it on every node. */
static inline void tsm_barrier(void)
{
    dsm_barrier();
}

/* Lock acquire / release -> dsm_lock / dsm_unlock: ids 0 to 0x5fffffff. Writes made
 * before a tsm_unlock are visible to the next holder of the lock (and,
 * transitively, to whoever it synchronises with next). */
static inline void tsm_lock(int id)
{
    dsm_lock(id);
}

static inline void tsm_unlock(int id)
{
    dsm_unlock(id);
}

#ifdef __cplusplus
}
#endif
#endif /* TSM_H */
