/*
 * region_state.h — what the files of parallel regions share (private to
 * src/omp; other layers see omp_state.h's omp_fork and the __kmpc_*
 * entries): region.c forks and joins a region and enters its threads,
 * region_nested.c makes a nested team of a node's threads with them, and
 * team_sync.c waits at such a team's own barrier.
 */
#ifndef DSM_OMP_REGION_STATE_H
#define DSM_OMP_REGION_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "omp/kmpc.h"
#include "omp/omp_state.h"

/* ---- region.c: forking a region, and entering it ------------------------- */

/* Calls the outlined region with its arguments; its frame is the implicit
 * task's exit frame for a tool (never called as a tail call). */
void region_invoke(kmpc_micro fn, kmp_int32 gtid, kmp_int32 btid, int argc, const uint64_t *a);
/* A region on this node alone begins and ends: the calling thread is tid 0
 * of a team of 1, and what it was before comes back. */
void region_serialized_begin(struct omp_thread *t, int requested, const void *codeptr,
                             void *frame, bool program);
void region_serialized_end(struct omp_thread *t);
/* A thread enters the region as thread `tid` of its team. */
void region_enter(struct omp_thread *t, const struct omp_region *r, int tid);
/* The region's binding and its threads' bind-var, from the encountering
 * thread's; the ICVs the team's threads inherit. */
void region_takes_binding(struct omp_thread *t, struct omp_region *r);
void region_takes_icvs(struct omp_region *r, const struct omp_icv *icv);

/* ---- region_nested.c: nested teams of a node's threads ------------------- */

/* Whether a region asking for `asked` threads, met by t, gets a team of
 * this node's threads; and that region's fork and join. */
bool region_nests_here(const struct omp_thread *t, int asked);
void region_fork_local(struct omp_thread *t, int asked, kmpc_micro microtask, int argc,
                       const uint64_t *args, const void *codeptr, void *frame);

/* A nested team's own barrier, when the node runs several threads of the
 * outer team (each may start a nested team: their threads must not meet
 * at the node's barrier). Its threads share memory in hardware. On the
 * stack of the thread that forks the team (region_fork_local); its
 * threads wait at it in team_sync.c. */
struct group_barrier {
    pthread_mutex_t lock;
    pthread_cond_t  cv;
    int             count, arrived;
    uint64_t        generation;
};
#endif
