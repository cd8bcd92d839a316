/*
 * task_deps.c — tracked tasks (task.c: proxy and detached tasks, and
 * those with dependences while such are about or that may leave the
 * node) and their dependences: the table that finds a task's
 * predecessors per (parent, address), submitting a tracked task (run at
 * once, queued, offered, or held for its predecessors) and completing it
 * part by part, which releases its successors. Under task_nodeq.lock
 * (the table and the records). The events that complete detached and
 * proxy tasks: task_event.c.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/smp.h"
#include "base/stats.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"

/* Dependences among a task's children, found as libomp finds them
 * (kmp_taskdeps.cpp): per (parent, address), the last sibling with an
 * `out` on it and the siblings with an `in` since, not complete yet. A new
 * task depends on the last `out` for an `in`, on the `in`s since (else the
 * last `out`) for any other type — so each new task costs its number of
 * items, never a scan of the tasks pending (the 6,000 dependent tasks of
 * tests/omp/omp_task_queue.c each compared with every pending one took
 * 36 s). `mutexinoutset` and `inoutset` order as `out` (stricter than
 * OpenMP asks: their tasks run one at a time, which OpenMP allows).
 * omp_all_memory is an `out` on the parent's key ALL_MEMORY, on which
 * every other task with dependences has an `in`: it follows every earlier
 * sibling with dependences, and every later one follows it. A task
 * completes: it leaves the entries it names (an entry no incomplete task
 * names is freed, so the table holds only what is pending and a parent's
 * record reused after it ended finds nothing of its children), and each
 * successor whose last predecessor it was is released. */
struct dep_entry {
    struct dep_entry      *next;     /* in its bucket */
    const struct task_rec *parent;
    intptr_t               addr;
    struct tracked        *last_out; /* NULL: none not complete */
    struct dep            *ins;      /* the `in` items since last_out, not complete */
    int                    refs;     /* items of incomplete tasks that name it */
};
struct dep {
    struct dep_entry *entry;
    struct tracked   *task;
    struct dep       *prev, *next; /* on entry->ins while listed */
    bool              in_only, listed;
};
static const char all_memory_key;
#define ALL_MEMORY ((intptr_t)&all_memory_key) /* no program's dependence is the runtime's byte */

/* A tracked task (task.c): not complete yet. */
struct tracked {
    kmp_task_t         *task;
    struct task_rec    *parent;
    struct taskgroup   *group;
    struct queued_task *waiting;  /* deferred for an earlier sibling; NULL once queued or run */
    int                 parts;    /* its routine's end, and for a proxy its completion */
    int                 npred;    /* earlier siblings it depends on, not complete */
    int                 nsucc, succ_cap;
    struct tracked    **succ;     /* later siblings that depend on it */
    uint64_t            mark;     /* the submission that last linked it (one edge a pair) */
    int                 ndeps;
    struct dep          deps[];
};

static size_t dep_hash(const struct task_rec *parent, intptr_t addr, size_t nbuckets)
{
    uint64_t k = (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ull ^ (uint64_t)addr;
    k = (k ^ k >> 31) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(k ^ k >> 29) & (nbuckets - 1);
}

/* The entry of (parent, addr), made when there is none (caller holds
 * task_nodeq.lock). */
static struct dep_entry *dep_entry_get(const struct task_rec *parent, intptr_t addr)
{
    if (task_nodeq.nentries >= task_nodeq.nbuckets) { /* double (64 at first): chains stay short */
        size_t n = task_nodeq.nbuckets ? task_nodeq.nbuckets * 2 : 64;
        struct dep_entry **b = calloc(n, sizeof *b);
        if (!b)
            log_fatal("out of memory for OpenMP task dependences");
        for (size_t i = 0; i < task_nodeq.nbuckets; i++)
            for (struct dep_entry *e = task_nodeq.buckets[i], *next; e; e = next) {
                next = e->next;
                size_t h = dep_hash(e->parent, e->addr, n);
                e->next = b[h];
                b[h] = e;
            }
        free(task_nodeq.buckets);
        task_nodeq.buckets = b;
        task_nodeq.nbuckets = n;
    }
    struct dep_entry **head = &task_nodeq.buckets[dep_hash(parent, addr, task_nodeq.nbuckets)];
    for (struct dep_entry *e = *head; e; e = e->next)
        if (e->parent == parent && e->addr == addr)
            return e;
    struct dep_entry *e = calloc(1, sizeof *e);
    if (!e)
        log_fatal("out of memory for OpenMP task dependences");
    e->parent = parent;
    e->addr = addr;
    e->next = *head;
    *head = e;
    task_nodeq.nentries++;
    return e;
}

static void dep_entry_free(struct dep_entry *e)
{
    struct dep_entry **pp = &task_nodeq.buckets[dep_hash(e->parent, e->addr, task_nodeq.nbuckets)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    task_nodeq.nentries--;
    free(e);
}

static void unlist(struct dep *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        d->entry->ins = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->prev = d->next = NULL;
    d->listed = false;
}

/* tr depends on pred (NULL: nothing), once however many items say so. */
static void link_pred(struct tracked *pred, struct tracked *tr)
{
    if (!pred || pred->mark == tr->mark)
        return;
    pred->mark = tr->mark;
    if (pred->nsucc == pred->succ_cap) {
        int cap = pred->succ_cap ? pred->succ_cap * 2 : 4;
        struct tracked **succ = realloc(pred->succ, (size_t)cap * sizeof *succ);
        if (!succ)
            log_fatal("out of memory for OpenMP task dependences");
        pred->succ = succ;
        pred->succ_cap = cap;
    }
    pred->succ[pred->nsucc++] = tr;
    tr->npred++;
    struct omp_tool_task *first = task_prefix_of(pred->task)->tool,
                         *second = task_prefix_of(tr->task)->tool;
    if (first && second) /* ompt_callback_task_dependence */
        omp_tool_task_dependence(first, second);
}

/* Enters tr's item d in its entry: tr follows what the item's type orders
 * it after, and later siblings find tr there (caller holds task_nodeq.lock). */
static void dep_enter(struct tracked *tr, struct dep *d, intptr_t addr)
{
    struct dep_entry *e = dep_entry_get(tr->parent, addr);
    d->entry = e;
    d->task = tr;
    e->refs++;
    if (d->in_only) {
        link_pred(e->last_out, tr);
        d->prev = NULL;
        d->next = e->ins;
        if (e->ins)
            e->ins->prev = d;
        e->ins = d;
        d->listed = true;
        return;
    }
    if (e->ins) /* each `in` since the last `out` follows that `out` already */
        while (e->ins) {
            link_pred(e->ins->task, tr);
            unlist(e->ins);
        }
    else
        link_pred(e->last_out, tr);
    e->last_out = tr;
}

static void add_deps(struct tracked *tr, int n, const struct kmp_depend_info *d, bool *all)
{
    for (int i = 0; i < n; i++) {
        bool every = (d[i].flags & 0x80) != 0;
        struct dep *dep = &tr->deps[tr->ndeps++];
        *dep = (struct dep){.in_only = !every && (d[i].flags & 0xff) == 1};
        dep_enter(tr, dep, every ? ALL_MEMORY : d[i].base_addr);
        *all |= every;
    }
}

/* Releases tr, no earlier sibling it depends on incomplete any more:
 * queued, or offered (task_run_one_locked) when it may leave the node, as it
 * would have been at its creation. Its predecessors' writes are this
 * node's by now: those run here, and those another node ran came back
 * under the queues' lock (an acquire, task_queue_call_end); its offer is a
 * release of them under the same lock. */
static void release_locked(struct tracked *tr)
{
    if (tr->waiting->movable) {
        tr->waiting->next = task_nodeq.to_offer;
        task_nodeq.to_offer = tr->waiting;
    } else /* not this thread's: its parent may wait on any thread */
        task_list_push(&task_nodeq.lists, &task_nodeq.lists.common, &tr->waiting->link);
    tr->waiting = NULL;
    pthread_cond_broadcast(&task_nodeq.done);
}

/* One of what a tracked task waits for has come (its routine's end, a
 * proxy's completion, a detached task's event): when it was the last, the
 * task is complete, leaves its entries, and releases each successor it
 * was the last predecessor of (in their creation order). */
void task_finish_part_locked(struct tracked *tr)
{
    if (--tr->parts > 0)
        return;
    /* read unlocked: task_wait_children */
    __atomic_fetch_sub(&tr->parent->children, 1, __ATOMIC_RELEASE);
    if (tr->group)
        tr->group->count--;
    __atomic_fetch_sub(&task_nodeq.outstanding, 1, __ATOMIC_RELEASE);
    task_nodeq.ntracked--;
    for (int i = 0; i < tr->ndeps; i++) {
        struct dep *d = &tr->deps[i];
        struct dep_entry *e = d->entry;
        if (d->listed)
            unlist(d);
        if (e->last_out == tr)
            e->last_out = NULL;
        if (--e->refs == 0)
            dep_entry_free(e);
    }
    for (int i = 0; i < tr->nsucc; i++) {
        struct tracked *s = tr->succ[i];
        if (--s->npred == 0 && s->waiting)
            release_locked(s);
    }
    free(tr->succ);
    task_free(tr->task);
    free(tr);
    pthread_cond_broadcast(&task_nodeq.done);
}

/* A task that completes later than its routine returns, or one with
 * dependences while tracked tasks are about or that may leave the node
 * (movable: task_offerable, the caller found): tracked until complete, here,
 * wherever it runs. It runs now on this thread unless an earlier sibling
 * it depends on is not complete (then it waits, queued or offered when
 * released), it is movable (then it is offered, if the queue has room),
 * or the node's threads share the queue (then it is queued at once). */
void task_submit_tracked(kmp_int32 gtid, kmp_task_t *task, int ndeps,
                         const struct kmp_depend_info *deps, int nnoalias,
                         const struct kmp_depend_info *noalias, bool movable)
{
    struct task_prefix *p = task_prefix_of(task);
    int nitems = ndeps + nnoalias > 0 ? ndeps + nnoalias + 1 : 0; /* + ALL_MEMORY's */
    struct tracked *tr = malloc(sizeof *tr + (size_t)nitems * sizeof(struct dep));
    struct queued_task *q = malloc(sizeof *q);
    if (!tr || !q)
        log_fatal("out of memory for an OpenMP task");
    struct task_rec *parent = task_current_rec();
    *tr = (struct tracked){.task = task, .parent = parent, .group = parent->group, .parts = 1};
    *q = (struct queued_task){.task = task, .gtid = gtid, .parent = parent, .group = parent->group,
                              .tracked = tr, .cancel = task_group_cancel(parent), .movable = movable};
    if ((p->flags & TASK_PROXY) && mem_contains(p) && !p->proxy_event)
        p->proxy_event = task_new_event(task); /* __kmpc_proxy_task_completed fulfils it */
    pthread_mutex_lock(&task_nodeq.lock);
    if ((p->flags & TASK_PROXY) && !p->proxy_event)
        tr->parts++; /* __kmpc_proxy_task_completed[_ooo] on this node */
    if ((p->flags & (TASK_DETACHABLE | TASK_PROXY)) && p->parts > 0)
        tr->parts++; /* the event's fulfilment, unless it came already */
    p->tracked = tr;
    parent->children++;
    if (tr->group)
        tr->group->count++;
    __atomic_fetch_add(&task_nodeq.outstanding, 1, __ATOMIC_RELAXED);
    task_nodeq.ntracked++;
    tr->mark = ++task_nodeq.marks; /* its own items never make it its own predecessor */
    bool all = false;
    add_deps(tr, ndeps, deps, &all);
    add_deps(tr, nnoalias, noalias, &all);
    if (nitems && !all) { /* after the last omp_all_memory sibling, before the next */
        tr->deps[tr->ndeps] = (struct dep){.in_only = true};
        dep_enter(tr, &tr->deps[tr->ndeps++], ALL_MEMORY);
    }
    bool held = tr->npred > 0;
    bool queued = smp_multi() || task_tool_should_defer();
    if (!held && movable) {
        pthread_mutex_unlock(&task_nodeq.lock);
        if (task_offer_queued(q, true))
            return;
        pthread_mutex_lock(&task_nodeq.lock);
    }
    if (held || queued)
        stats_add(STAT_PAR_TASKS_DEFERRED, 1);
    if (held)
        tr->waiting = q;
    else if (queued)
        task_queue_locked(q);
    else
        task_run_queued_locked(q);
    pthread_mutex_unlock(&task_nodeq.lock);
}

bool task_tracks(const kmp_task_t *task)
{
    return task_prefix_of((kmp_task_t *)task)->flags & (TASK_PROXY | TASK_DETACHABLE);
}

/* Whether a task with dependences must be tracked: some sibling may not
 * be complete when it would run. */
bool task_tracked_about(void)
{
    pthread_mutex_lock(&task_nodeq.lock);
    bool any = task_nodeq.ntracked > 0;
    pthread_mutex_unlock(&task_nodeq.lock);
    return any;
}
