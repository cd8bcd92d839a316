/*
 * dsm/parmacs.h — what the PARMACS macro file (dsm/parmacs.m4) expands to.
 * A program does not include it itself: MAIN_ENV and EXTERN_ENV do.
 *
 * One PARMACS process per node: the master runs main (master-only start,
 * see dsm_main in dsm.h), each CREATE starts a process on the next node.
 */
#ifndef DSM_PARMACS_H
#define DSM_PARMACS_H
#include <dsm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Ends the job unless it was started by dsm_main (dsmcc). */
void dsm_parmacs_init(void);
/* CREATE(fn): fn on the next node. */
void dsm_parmacs_create(void (*fn)(void *));
/* CREATE(fn, n): fn on every other node, then here; n must be the node count. */
void dsm_parmacs_create_all(void (*fn)(void *), int procs);
/* WAIT_FOR_END: every node must have been given a process. */
void dsm_parmacs_wait_for_end(void);
/* BARRIER(b, n): n must be the node count. */
void dsm_parmacs_barrier(int procs);
/* count consecutive lock or condition ids, unique in the job. */
int dsm_parmacs_ids(int count);

#ifdef __cplusplus
}
#endif
#endif
