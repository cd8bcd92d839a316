/*
 * task_lists.c — a node's queued tasks, one list per thread (task_lists.h).
 */
#include "omp/task_lists.h"

#include "base/log.h"
#include "base/state.h"

void task_list_push(struct task_lists *ls, struct task_list *l, struct task_link *k)
{
    k->on = l;
    k->older = l->newest;
    k->newer = NULL;
    if (l->newest)
        l->newest->newer = k;
    else
        l->oldest = k;
    l->newest = k;
    __atomic_store_n(&l->count, l->count + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->queued, ls->queued + 1, __ATOMIC_RELEASE);
}

void task_list_remove(struct task_lists *ls, struct task_link *k)
{
    struct task_list *l = k->on;
    if (k->newer)
        k->newer->older = k->older;
    else
        l->newest = k->older;
    if (k->older)
        k->older->newer = k->newer;
    else
        l->oldest = k->newer;
    k->newer = k->older = NULL;
    k->on = NULL;
    __atomic_store_n(&l->count, l->count - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ls->queued, ls->queued - 1, __ATOMIC_RELAXED);
}

/* The one set of lists (task.c's) and its lock, for a thread's end. */
static DSM_STATE struct task_lists *lists_of_node;
static DSM_STATE pthread_mutex_t *lists_lock;
static DSM_STATE pthread_key_t    slot_key;
static DSM_STATE pthread_once_t   slot_once = PTHREAD_ONCE_INIT;
static __thread int slot; /* this thread's own list + 1; 0: none yet */
static __thread bool slotless; /* every own list was held at its first call */

/* A thread ends: its list goes back, with anything still on it (a task no
 * thread has taken yet, which only a thread ending mid-region leaves)
 * moved to the common list, where any thread finds it. */
static void slot_release(void *arg)
{
    int s = (int)(intptr_t)arg - 1;
    pthread_mutex_lock(lists_lock);
    struct task_list *l = &lists_of_node->own[s];
    while (l->oldest) {
        struct task_link *k = l->oldest;
        task_list_remove(lists_of_node, k);
        task_list_push(lists_of_node, &lists_of_node->common, k);
    }
    lists_of_node->used &= ~(UINT64_C(1) << s);
    pthread_mutex_unlock(lists_lock);
}

static void slot_key_create(void)
{
    if (pthread_key_create(&slot_key, slot_release) != 0)
        log_fatal("no thread key left for OpenMP's task lists");
}

struct task_list *task_list_mine(struct task_lists *ls, pthread_mutex_t *lock)
{
    if (slot)
        return &ls->own[slot - 1];
    if (slotless)
        return NULL;
    pthread_once(&slot_once, slot_key_create);
    lists_of_node = ls;
    lists_lock = lock;
    if (ls->used == UINT64_MAX) {
        slotless = true;
        return NULL;
    }
    int s = __builtin_ctzll(~ls->used);
    ls->used |= UINT64_C(1) << s;
    slot = s + 1;
    pthread_setspecific(slot_key, (void *)(intptr_t)slot);
    return &ls->own[s];
}

bool task_list_mine_full(const struct task_lists *ls)
{
    return slot && __atomic_load_n(&ls->own[slot - 1].count, __ATOMIC_RELAXED) >= TASK_LIST_MAX;
}
