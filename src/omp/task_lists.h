/*
 * task_lists.h — a node's queued tasks, one list per thread (task_queue.c).
 *
 * A thread queues the tasks it makes on a list of its own, newest on top,
 * and takes from its own top first: depth first, as libomp's deque, so
 * that a waiting task mostly runs its own children. Other threads take
 * from its bottom (the oldest, nearest the root: the most work for one
 * take). One list for the node made a waiting thread pass over every
 * task its node's other threads had queued, each checked against the
 * task it waits in (BOTS uts on 2 nodes of 2 threads: 6x the time of one
 * node). Tasks that are not one thread's (a dependent task released by a
 * completion; one whose offer to other nodes found no room; those of
 * threads beyond TASK_LISTS) go on the node's common list, which any
 * thread searches whole. The caller holds the lock that guards the lists
 * (task_queue.c's task_nodeq.lock).
 */
#ifndef DSM_OMP_TASK_LISTS_H
#define DSM_OMP_TASK_LISTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define TASK_LISTS 64 /* threads of a node with a list of their own */
/* A thread with this many tasks on its own list runs its next one at once
 * (libomp's throttling: its deque's 256 slots, beyond which it runs a new
 * task at once): the waiting threads have enough to take, and one lock
 * of the node's per task queued and taken cost a task program of fine
 * tasks (BOTS uts) 3.5x its time on 2 threads. */
#define TASK_LIST_MAX 256

struct task_list;

/* Embedded in what is queued (task_state.h's struct queued_task). */
struct task_link {
    struct task_link *newer, *older;
    struct task_list *on; /* NULL: on no list */
};

struct task_list {
    struct task_link *newest, *oldest;
    int               count;
};

struct task_lists {
    struct task_list own[TASK_LISTS];
    struct task_list common;
    uint64_t         used;   /* own lists held by a living thread */
    int              queued; /* on every list (read without the lock as a hint) */
};

void task_list_push(struct task_lists *ls, struct task_list *l, struct task_link *k);
void task_list_remove(struct task_lists *ls, struct task_link *k);

/* This thread's own list, given it at its first call (and back, with what
 * is still on it moved to the common list, when the thread ends); NULL
 * when TASK_LISTS threads of the node hold one: the common list is then
 * its. `lock` is the lists' lock, which the caller holds. */
struct task_list *task_list_mine(struct task_lists *ls, pthread_mutex_t *lock);

/* Whether this thread's own list holds TASK_LIST_MAX tasks (read without
 * the lock: a hint). */
bool task_list_mine_full(const struct task_lists *ls);

#endif
