/*
 * task_event.c — tasks that complete later than their routine returns
 * (task.c): detach(event)'s events, fulfilled by omp_fulfill_event, and
 * proxy tasks' completions (__kmpc_proxy_task_completed[_ooo]), from any
 * thread — one that is no OpenMP thread, or one of another node. Each
 * completes a part of its task's tracked record (task_deps.c) under
 * task_nodeq.lock; another node's fulfilment comes under the task-queue
 * lock of the event's node (omp_lock.c), which this node's waiting points
 * take while it has such events (task_take_fulfilments).
 *
 * detach(event): the handle is a record of this node's, on its list
 * until the event is fulfilled. In a job of several nodes the record is
 * shared memory and the handle names its node too (above the address's
 * EVENT_NODE_SHIFT bits): a thread of any node — this node's, a task
 * taken from here, a thread of the team on another — fulfils the event
 * by setting the record's word under the node's task-queue lock (a
 * release of what it wrote before), and the node takes it there: at
 * once when it is its own, else at its waiting points, which look under
 * the same lock (an acquire) while it has such events (task_await_locked).
 * The task itself may run on another node (offered as any other): the
 * node that made it keeps its tracked record and its event's, and counts
 * it complete when both its routine's end (the thief's completion, taken
 * under the same lock) and the fulfilment have come. A handle that
 * names no event still to be fulfilled ends the job with one line, never
 * a write through a pointer of another process. A record that could not
 * be shared (one node, or no shared memory left) is private, as is its
 * handle: once one is made, this node's tasks stay on it
 * (task_offer.completions: the one that fulfils it must run here).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/job.h"
#include "base/log.h"
#include "base/stack.h"
#include "base/state.h"
#include "dsm.h"
#include "mem/mem.h"
#include "omp/omp_state.h"
#include "omp/task_state.h"
#include "sync/sync.h"

/* Events of this node's detached tasks that another node may fulfil
 * (under task_nodeq.lock): its waiting points look for them. */
DSM_STATE int task_shared_events;

#define EVENT_MAGIC 0x65766e74u /* "evnt" */
#define EVENT_NODE_SHIFT 48     /* user addresses are below 2^47 (x86-64, AArch64's 48 bits) */
struct event {
    uint32_t      magic;
    int32_t       fulfilled; /* a shared record's: set under its node's task-queue lock */
    int32_t       node;
    kmp_task_t   *task;
    struct event *next;
};
static DSM_STATE struct event *events; /* under task_nodeq.lock */

/* The event a task's completion waits for (its parts: the routine's end
 * and this), as its handle: a detached task's, or a proxy task's. */
uintptr_t task_new_event(kmp_task_t *task)
{
    struct event *e = job()->nodes > 1 ? dsm_malloc(sizeof *e) : NULL;
    if (e && (uintptr_t)e >> EVENT_NODE_SHIFT) { /* no room for the node in the handle */
        dsm_free(e);
        e = NULL;
    }
    bool shared = e != NULL;
    if (!shared) {
        e = malloc(sizeof *e);
        if (!e)
            log_fatal("out of memory for an OpenMP event");
        task_offer.completions = true;
    }
    struct task_prefix *p = task_prefix_of(task);
    pthread_mutex_lock(&task_nodeq.lock);
    p->parts = 1;
    *e = (struct event){.magic = EVENT_MAGIC, .node = job()->rank, .task = task, .next = events};
    events = e;
    task_shared_events += shared;
    pthread_mutex_unlock(&task_nodeq.lock);
    if (!shared)
        return (uintptr_t)e;
    return (uintptr_t)e | (uintptr_t)(job()->rank + 1) << EVENT_NODE_SHIFT;
}

void *__kmpc_task_allow_completion_event(ident_t *loc, kmp_int32 gtid, kmp_task_t *task)
{
    (void)loc, (void)gtid;
    pthread_mutex_lock(&task_nodeq.lock);
    task_prefix_of(task)->flags |= TASK_DETACHABLE;
    pthread_mutex_unlock(&task_nodeq.lock);
    return (void *)task_new_event(task);
}

/* The event of record e, off the list, is fulfilled: its task completes
 * once its routine has returned too. Caller holds task_nodeq.lock. */
static void event_fulfilled_locked(struct event *e)
{
    struct task_prefix *p = task_prefix_of(e->task);
    e->magic = 0;
    p->parts = 0;
    if (p->tracked)
        task_finish_part_locked(p->tracked);
    if (mem_contains(e))
        dsm_free(e);
    else
        free(e);
    pthread_cond_broadcast(&task_nodeq.done); /* an undeferred one's encountering thread waits */
}

/* Under a node's task-queue lock: fulfils the shared record `e` (NULL:
 * none), and on its own node takes every fulfilled one. */
struct event_call {
    struct event *e;
    int           node; /* whose lock */
    int           taken;
    bool          bad;  /* e is no event of `node` still to be fulfilled */
};

/* Off the master's shared stack, as offer_call. */
static void event_call(void *arg)
{
    struct event_call c = *(struct event_call *)arg;
    int id = omp_task_lock_id(c.node);
    sync_lock(id);
    if (c.e) {
        c.bad = c.e->magic != EVENT_MAGIC || c.e->node != c.node || c.e->fulfilled;
        if (!c.bad)
            c.e->fulfilled = 1;
    }
    if (c.node == job()->rank && !c.bad) {
        pthread_mutex_lock(&task_nodeq.lock);
        for (struct event **pp = &events, *e; (e = *pp);) {
            if (!mem_contains(e) || !e->fulfilled) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            task_shared_events--;
            event_fulfilled_locked(e);
            c.taken++;
        }
        pthread_mutex_unlock(&task_nodeq.lock);
    }
    sync_unlock(id);
    *(struct event_call *)arg = c;
}

static void run_event_call(struct event_call *c)
{
    pthread_mutex_lock(&task_offer.lock); /* the node's threads one at a time at the queues' locks */
    stack_private(event_call, c);
    pthread_mutex_unlock(&task_offer.lock);
}

/* At a waiting point of a node with events another node may fulfil:
 * takes those fulfilled. Returns whether any was. */
bool task_take_fulfilments(void)
{
    struct event_call c = {.node = job()->rank};
    run_event_call(&c);
    return c.taken > 0;
}

/* Fulfils the event of `handle`: true, or false when it names no event
 * still to be fulfilled. */
static bool fulfil(uintptr_t handle)
{
    int node = (int)(handle >> EVENT_NODE_SHIFT) - 1;
    struct event *e = (struct event *)(handle & (((uintptr_t)1 << EVENT_NODE_SHIFT) - 1));
    if (node >= 0) { /* a shared record, of that node's */
        struct event_call c = {.e = e, .node = node, .bad = true};
        if (node < job()->nodes && mem_contains(e) && (uintptr_t)e % _Alignof(struct event) == 0)
            run_event_call(&c);
        return !c.bad;
    }
    pthread_mutex_lock(&task_nodeq.lock);
    struct event **pp = &events;
    while (*pp && (*pp != e || mem_contains(e)))
        pp = &(*pp)->next;
    bool found = (e = *pp) && e->magic == EVENT_MAGIC;
    if (found) {
        *pp = e->next;
        event_fulfilled_locked(e);
    }
    pthread_mutex_unlock(&task_nodeq.lock);
    return found;
}

void omp_fulfill_event(uintptr_t handle)
{
    if (!fulfil(handle))
        log_fatal("omp_fulfill_event(%#lx): no event still to be fulfilled (fulfilled already, or "
                  "not a handle that detach gave%s)",
                  (unsigned long)handle,
                  handle >> EVENT_NODE_SHIFT == 0 && job()->nodes > 1 ? " on this node" : "");
}

/* A proxy task's completion: from an OpenMP thread, or from any thread
 * ("out of order"); neither runs tasks here, the waiting threads do. In
 * a job of several nodes the proxy's block is shared memory and its
 * completion is an event (task_new_event), fulfilled from any node as a
 * detached task's; else the call must come from a thread of its node. */
static void proxy_completed(kmp_task_t *task)
{
    struct task_prefix *p = task_prefix_of(task);
    if (mem_contains(p) && job()->nodes > 1) {
        uintptr_t handle = (p->flags & TASK_PROXY) ? p->proxy_event : 0;
        if (!handle || !fulfil(handle))
            log_fatal("__kmpc_proxy_task_completed(%p): no proxy task still to be completed "
                      "(completed already, or not yet submitted)", (void *)task);
        return;
    }
    pthread_mutex_lock(&task_nodeq.lock);
    if (!(p->flags & TASK_PROXY) || !p->tracked)
        log_fatal("__kmpc_proxy_task_completed of a task that is no proxy task in flight on this "
                  "node");
    task_finish_part_locked(p->tracked);
    pthread_mutex_unlock(&task_nodeq.lock);
}

void __kmpc_proxy_task_completed(kmp_int32 gtid, kmp_task_t *task)
{
    (void)gtid;
    proxy_completed(task);
}

void __kmpc_proxy_task_completed_ooo(kmp_task_t *task) { proxy_completed(task); }
