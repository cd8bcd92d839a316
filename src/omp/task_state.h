/*
 * task_state.h — what the task files share, private to them (task.c,
 * task_queue.c, task_offer.c, task_ring.c, task_steal.c, task_barrier.c,
 * task_deps.c, task_event.c; task.c describes the whole): a task's block
 * and its prefix, the records of running tasks and of taskgroups, the
 * node's queue and its lock, the state of the job's task queues, and the
 * functions one of them calls in another. The rest of src/omp sees tasks
 * through omp_state.h alone.
 */
#ifndef DSM_OMP_TASK_STATE_H
#define DSM_OMP_TASK_STATE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/trace.h"
#include "omp/kmpc.h"
#include "omp/omp_state.h"
#include "omp/task_lists.h"

/* local-dynamic, as the file-statics they were: the shared library finds
 * them the cheaper way, since they are always its own. */
#define TASK_TLS __attribute__((tls_model("local-dynamic")))

typedef kmp_int32 (*kmp_routine_entry_t)(kmp_int32, void *);

/* The head of clang's task object (kmp.h kmp_task_t); the compiler lays out
 * the privates after it and the shareds where `shareds` points. */
typedef struct kmp_task {
    void               *shareds;
    kmp_routine_entry_t routine;
    kmp_int32           part_id;
} kmp_task_t;

struct tracked;
struct node_tasks;

/* Before each task: what taskloop needs to copy it, and what completes
 * it. 32 bytes, so the task keeps malloc's 16-byte alignment. */
struct task_prefix {
    size_t          size;       /* the task, its privates and its shareds */
    size_t          shareds_at; /* offset of the shareds from the task; 0: none */
    struct tracked *tracked;    /* a tracked task's record (under task_nodeq.lock) */
    int32_t         flags;      /* libomp's kmp_tasking_flags, as allocated */
    int32_t         parts;      /* a detached task: its routine's end and the
                                   event's fulfilment still to come (under task_nodeq.lock) */
    struct omp_tool_task *tool; /* OMPT: the task as a tool sees it (NULL: no tool) */
    /* Its routine is running on the thread that started it (an untied
     * task's part that hands it back asks for the next part: `again`).
     * The task's own, so that a part finds it at once however deep the
     * nesting of tasks is. */
    int32_t         running;
    int32_t         again;
    /* Tasks that leave their node (task_offer.c): the shareds' bytes, the
     * task's depth (its parent's plus one), and its record on the node
     * that made it while it is offered to the other nodes. */
    uint32_t        shareds_len;
    int32_t         depth;
    struct queued_task *q;
    /* The cancel word of its taskgroup (below), for the node that runs it. */
    int            *cancel;
    /* Where its chain of ancestors last left the node that made it
     * (task_chain_from): a node and that node's record of the task taken from
     * it; 0: the chain begins at an implicit task there. */
    uint64_t        from;
    uint64_t        unused; /* to a multiple of 16 bytes */
    union {
        /* Taken by another node: what running it there cost (run_stolen),
         * for its creator's cut-off (task_queue_call_end). */
        struct {
            uint32_t stolen_us; /* from the steal to its end, children included */
            uint32_t moved_us;  /* of which the steal and the page faults */
        };
        /* A proxy task's (never taken): the handle of the event that
         * __kmpc_proxy_task_completed fulfils, from any node; 0: none. */
        uintptr_t proxy_event;
    };
};
_Static_assert(sizeof(struct task_prefix) % 16 == 0, "a task keeps malloc's alignment");

/* kmp_tasking_flags bits that matter here. */
enum { TASK_FINAL = 0x2, TASK_PROXY = 0x10, TASK_DETACHABLE = 0x40 };
/* Ours, above the compiler's bits: begun by __kmpc_omp_task_begin_if0. */
enum { TASK_BEGUN_IF0 = 0x40000000 };

static inline struct task_prefix *task_prefix_of(kmp_task_t *t) { return (struct task_prefix *)t - 1; }

/* A task's (or a thread's implicit task's) children still queued or
 * running, and the taskgroup its new tasks join. */
struct task_rec {
    int              children;
    int              depth : 31; /* 0: an implicit task */
    /* Its data block (its private and firstprivate variables, an untied
     * task's locals) is memory of this node alone: what it makes stays here
     * (task_offer_candidate). */
    unsigned         data_private : 1;
    struct taskgroup *group;
    struct task_rec  *parent;  /* NULL: an implicit task's */
    int              *cancel;  /* its taskgroup's cancel word where group is not its node's */
};
/* One on the stack for every level of nested tasks that run at once
 * (run_now): 10,000 levels fit the master's stack under ASan too. */
_Static_assert(sizeof(struct task_rec) <= 32, "a task's record stays 32 bytes");
/* A taskgroup: its tasks not yet done (counted when they are queued or
 * tracked), its task reduction, and under OMP_CANCELLATION=true its
 * cancel word: set by `cancel taskgroup`, read by its tasks wherever they
 * run — in shared memory where its tasks may leave the node. */
struct taskgroup {
    int                 count;
    struct taskgroup   *outer;
    struct omp_taskred *reduction; /* task_reduction.c; NULL: none */
    int                *cancel;    /* NULL: cancellation is off */
    int                 cancelled; /* the word, when it is the node's own */
};
struct queued_task {
    struct task_link    link;     /* on a list of the node's (task_lists.h) */
    struct queued_task *next;     /* on task_nodeq.to_offer */
    kmp_task_t         *task;
    kmp_int32           gtid;
    struct task_rec    *parent;
    struct taskgroup   *group;
    struct tracked     *tracked;  /* a deferred dependent task's record; else NULL */
    int                *cancel;   /* its taskgroup's cancel word (struct taskgroup) */
    bool                offered;  /* in this node's queue for every node (task_ring.c) */
    bool                movable;  /* a deferred dependent task that may be offered once released */
};

/* One dependence of a task (kmp.h's kmp_depend_info_t). */
struct kmp_depend_info {
    intptr_t base_addr;
    size_t   len;
    uint8_t  flags; /* 1 in, 2 out, 4 mutexinoutset, 8 inoutset, 0x80 omp_all_memory */
};

/* The node's queue (task_queue.c). */
struct task_nodeq {
    pthread_mutex_t     lock;  /* the queue and every count below and in records */
    pthread_cond_t      done;  /* a task finished, or one was queued */
    /* Each thread's, newest first, taken from the top by their thread: a
     * waiting task then mostly runs its own children, depth first, as
     * libomp's own deque does, and the nesting of waits stays as deep as
     * the program's tasks (taken oldest first, fib(15)'s waits nested
     * hundreds deep); other threads take the oldest (task_run_one_locked). */
    struct task_lists   lists;
    /* Dependent tasks just released that may leave the node: offered by
     * the next of the node's threads at a waiting point (task_run_one_locked),
     * as the releasing one may hold the queues' lock (task_queue_call_end). */
    struct queued_task *to_offer;
    int                 outstanding; /* queued, running, or tracked and not complete */
    int                 ntracked;    /* tracked tasks not complete */
    /* The dependence entries (task_deps.c), chained by a hash of (parent,
     * address); doubled when they outnumber the buckets. */
    struct dep_entry  **buckets;
    size_t              nbuckets, nentries;
    uint64_t            marks;       /* submissions of tracked tasks */
};
extern struct task_nodeq task_nodeq;

/* The task this thread runs now (its implicit task's record when none). */
extern __thread struct task_rec task_implicit_rec TASK_TLS;
extern __thread struct task_rec *task_current TASK_TLS;

static inline struct task_rec *task_current_rec(void)
{
    return task_current ? task_current : &task_implicit_rec;
}

/* A task taken from another node, as the node that runs it records it
 * (run_stolen_call): the only record whose parent is NULL at a depth
 * above 0 (an implicit task's is at 0). Its ancestors are on other
 * nodes; `self` names it to the nodes below it (task_chain_from), `from` is
 * where its own chain last left its creator's node (its prefix's). */
struct stolen_rec {
    struct task_rec rec;
    uint64_t        self; /* its creator's node and that node's record of it */
    uint64_t        from;
};

/* A chain's crossing: a node and that node's record (struct queued_task)
 * of a task another node took; 0: none. Shared-region addresses and
 * malloc's lie below 2^48. */
static inline uint64_t task_chain_mark(int node, const struct queued_task *q)
{
    return (uint64_t)node << 48 | (uint64_t)(uintptr_t)q;
}
static inline int task_chain_node(uint64_t m) { return (int)(m >> 48); }
static inline struct queued_task *task_chain_record(uint64_t m)
{
    return (struct queued_task *)(uintptr_t)(m & ((UINT64_C(1) << 48) - 1));
}

/* One wait of a thread for a count (task_wait_zero_locked): the pause while
 * nothing comes, and when next to try taking a descendant back from
 * another node (task_take_back: a lock's round trip; after each that found
 * nothing the next comes twice as many polls later, at most
 * TAKE_BACK_GAP). */
#define TAKE_BACK_GAP 64
struct waiting {
    unsigned us;
    unsigned polls, next_back, gap;
};

#define OFFER_RING  128 /* a power of two: the ring's indices wrap with uint32_t */
#define OFFER_DEPTH 8

/* The time tasks of a kind took (task_offer.c). */
struct task_cost {
    uintptr_t key; /* 0: free */
    uint64_t  ns, runs;                    /* run here */
    uint64_t  stolen;                      /* taken by other nodes (task_queue_call_end) */
    int       costly;                      /* the latest steals in a row that cost more than their work */
    int       kept;                        /* stays: costlier to move than to run */
};

/* The job's task queues, as this node uses them (task_ring.c). */
struct task_offer {
    pthread_mutex_t    lock;     /* the node's threads one at a time at the queues' locks */
    struct node_tasks *nodes;    /* node 0: the queues (one page a node); NULL: none yet */
    bool               tried;    /* node 0: allocated them, or could not */
    bool               seen;     /* a task was made on this node */
    /* A proxy task whose block, or a detached one whose event, could not
     * be shared memory was made here: its completion (a proxy completed,
     * such an event fulfilled) is this node's to take, so no task leaves
     * the node from then on — the one that completes it could. */
    bool               completions;
    int                stealing; /* a thread of this node is taking a task from another */
    kmp_task_t        *harvest[OFFER_RING]; /* completions just taken (under lock) */
};
extern struct task_offer task_offer;

/* This thread's team over the nodes, as the task files last saw it. */
struct task_team {
    const struct omp_region *region;
    uint32_t                 team;
    bool                     seen;   /* the region began after node 0 made a task */
    bool                     single; /* a single met since the last barrier */
    struct node_tasks       *nodes;
};
extern __thread struct task_team task_team TASK_TLS;

/* The queues' operations, under their node's dsm lock (task_ring.c). */
enum offer_op { OFFER_PUT, OFFER_TAKE_OWN, OFFER_STEAL, OFFER_TAKE_BACK, OFFER_DONE, OFFER_PUBLISH };

struct offer_call {
    enum offer_op      op;
    struct node_tasks *nodes;
    int                node;     /* whose queue */
    kmp_task_t        *task;     /* PUT, DONE: the task; TAKE_OWN, STEAL, TAKE_BACK: the one taken */
    uint64_t           point;    /* PUBLISH: the point passed; STEAL: the one waited at */
    int                harvested; /* PUT, TAKE_OWN: completions now in task_offer.harvest */
    bool               ok;       /* PUT: queued; STEAL: the node has passed `point` */
};

/* ---- task.c: a task's block, its run, taskgroups ----------------------------- */
/* Final tasks running on this thread (omp_in_final). */
extern __thread int task_in_final TASK_TLS;
void task_free(kmp_task_t *t);
/* Runs the task's routine (every part of an untied one) on this thread. */
void task_run(kmp_int32 gtid, kmp_task_t *task);
/* The cancel word of the taskgroup a task made now would belong to. */
int *task_group_cancel(const struct task_rec *r);

/* ---- task_queue.c: the node's queue and its waiting points ------------------- */
/* KMP_ENABLE_TASK_THROTTLING=0: every task is queued. */
extern bool task_queue_all;
uint64_t task_chain_from(void);
bool task_descends_rec(const struct task_rec *r, const struct task_rec *a);
bool task_descends(const struct queued_task *q, const struct task_rec *a);
void task_complete_locked(struct queued_task *q);
void task_routine_done_locked(struct queued_task *q);
void task_run_queued_locked(struct queued_task *q);
void task_queue_locked(struct queued_task *q);
bool task_run_one_locked(void);
void task_pause_locked(unsigned *us);
void task_await_locked(const int *count, struct waiting *w);
void task_wait_zero_locked(const int *count);
void task_run_until_zero(const int *count);
bool task_tool_should_defer(void);
bool task_should_defer(void);
void task_defer(kmp_int32 gtid, kmp_task_t *task);
bool task_queue_in_use(void);
void task_wait_children(void);

/* ---- task_offer.c: which tasks may leave their node -------------------------- */
struct task_cost *task_cost_of(kmp_routine_entry_t routine, int depth, bool add);
bool task_offer_candidate(int32_t flags, kmp_routine_entry_t routine);
void task_stolen_cost(kmp_task_t *task);
bool task_offerable(kmp_task_t *task);

/* ---- task_ring.c: the job's task queues -------------------------------------- */
/* Tasks of this node offered to every node and not complete yet (under
 * task_nodeq.lock). */
extern int task_offered_out;
struct node_tasks *task_team_queues(void);
void task_trace(enum trace_task what, int peer, const kmp_task_t *task, uint64_t t0);
void task_queue_call(struct offer_call *c);
void task_queue_call_end(int harvested);
bool task_offer_queued(struct queued_task *q, bool make_room);
bool task_offer_task(kmp_int32 gtid, kmp_task_t *task);
bool task_offered_work(void);

/* ---- task_steal.c: tasks taken from other nodes ------------------------------ */
bool task_take_back(void);
void task_steal_until(struct node_tasks *nodes, int team_nodes, uint64_t point);

/* ---- task_deps.c: tracked tasks and their dependences ------------------------ */
void task_finish_part_locked(struct tracked *tr);
void task_submit_tracked(kmp_int32 gtid, kmp_task_t *task, int ndeps,
                         const struct kmp_depend_info *deps, int nnoalias,
                         const struct kmp_depend_info *noalias, bool movable);
bool task_tracks(const kmp_task_t *task);
bool task_tracked_about(void);

/* ---- task_event.c: detach events and proxy tasks ----------------------------- */
/* Events of this node's detached tasks that another node may fulfil
 * (under task_nodeq.lock): its waiting points look for them. */
extern int task_shared_events;
uintptr_t task_new_event(kmp_task_t *task);
bool task_take_fulfilments(void);

#endif
