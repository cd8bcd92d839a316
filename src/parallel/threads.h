/*
 * threads.h — a node's helper threads (threads.c): the threads beside the
 * node's own that fork style (runtime/fork.c) and OpenMP's teams
 * (omp/team_layout.c, omp/region.c) run their functions on.
 */
#ifndef DSM_PARALLEL_THREADS_H
#define DSM_PARALLEL_THREADS_H

/* With DSM_THREADS > 1, fn(arg) on the node's T - 1 helper
 * threads (nothing when T = 1); and the wait for them to return. */
void threads_run(void (*fn)(void *), void *arg);
void threads_join(void);
/* The node's helper threads started so far (they live until the end). */
int  threads_started(void);
/* A group of helpers beside the node's round (an OpenMP team nested in
 * one of the several threads the node runs for the outer team): count
 * threads run fn(arg) at once, with smp indices the node does not use now
 * (taken from the top, above every round's); the k-th of them (1 ..
 * count) finds k in threads_group_position(). NULL when the node has not
 * that many indices free: the caller runs without them. */
struct threads_group;
struct threads_group *threads_group_run(int count, void (*fn)(void *), void *arg);
void threads_group_join(struct threads_group *g);
int  threads_group_position(void);
/* fn(arg) once on every group helper started so far, and the wait. */
void threads_group_each(void (*fn)(void *), void *arg);

#endif
