/*
 * sync.h — barriers, locks, condition variables and broadcast (docs/design.md,
 * layer 5). Each carries the consistency actions of the active protocol:
 * a release runs coh->release first, and coherence_release_sent once its
 * message is out; the write notices travel with the lock grant, the
 * barrier release and the broadcast, and the receiving program applies
 * them before it goes on.
 */
#ifndef DSM_SYNC_SYNC_H
#define DSM_SYNC_SYNC_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "coherence/coherence.h"
#include "ipc/ipc.h"

/* The sync layer's message types (numbered on from coherence's; ipc.h). */
enum sync_type {
    SYNC_LOCK_ACQ = COHERENCE_TYPE_NEXT, /* acquire request, to the lock's manager */
    SYNC_LOCK_FWD,        /* the manager passes it to the last owner */
    SYNC_LOCK_GRANT,      /* the lock and the write notices the acquirer lacks */
    SYNC_LOCK_RELAY,      /* a grant with an atomic, by way of the page's home */
    SYNC_LOCK_TRY,        /* a try (granted or busy, never queued), to the manager */
    SYNC_LOCK_TRY_FWD,    /* the manager passes it to the last owner */
    SYNC_LOCK_TRIED,      /* the last owner tells the manager: taken, or busy */
    SYNC_LOCK_BUSY,       /* the manager tells the requester: busy */
    SYNC_COND_WAIT,       /* register as a waiter, at the condition's manager */
    SYNC_COND_QUEUED,     /* registered */
    SYNC_COND_SIGNAL,     /* wake one waiter, or all */
    SYNC_COND_WAKE,       /* to a waiter */
    SYNC_COND_SEEN,       /* the condition's first wait: to every other node */
    SYNC_COND_SEEN_ACK,   /* that node's signals of it go out from now on */
    SYNC_BARRIER_ARRIVE,  /* a subtree's arrival and intervals, to the parent */
    SYNC_BARRIER_RELEASE, /* every interval of the epoch, down the tree */
    SYNC_BCAST,           /* dsm_bcast data and the root's intervals */
    SYNC_FREE,            /* blocks of the receiver's arena freed elsewhere */
    SYNC_FLUSH_ASK,       /* a flush: the asker's vector timestamp, to every other node */
    SYNC_FLUSH_ANSWER,    /* the intervals the asker has not seen */
    SYNC_FLUSH_NEWS,      /* to a node that asked: a release since its ask, ask again */
    SYNC_TYPE_NEXT
};

/* Lock and condition ids: a program's run from 0 to SYNC_USER_ID_MAX
 * (dsm.h); those above are dsm's own (its OpenMP runtime's, parallel.h).
 * dsm_lock and the other public calls refuse dsm's ids, so that a program
 * can never take a lock the runtime relies on; the runtime takes its own
 * through these, which take any id >= 0. */
#define SYNC_USER_ID_MAX 0x5fffffff
void sync_lock(int id);
void sync_unlock(int id);
/* sync_lock by a thread that may give its node's run slot up while it
 * waits for the grant (base/smp.h): cohort.c's, for the program's locks.
 * Not for a lock taken under a node-local mutex that a slot holder may
 * wait for (atomic.c's block locks). */
void sync_lock_yielding(int id);
/* sync_lock with an atomic riding on the request, should one go out
 * (atomic.c): the word at `offset` of `page`, which is not valid here
 * and of which this node needs version `need`. The node that grants the
 * lock performs it when it is the page's home (coherence_atomic_here),
 * or sends the grant by way of the home, which performs it on the way;
 * the change becomes this node's write (coherence_ops.atomic_wrote).
 * Returns true when it was done (a->old set); false when not (the lock
 * was here, or the granter is not the home): the caller performs it. */
bool sync_lock_atomic(int id, size_t page, size_t offset, uint32_t need, struct coh_atomic *a);
/* sync_lock_yielding that takes the lock only if no node has it (held, or
 * asked for before): true when taken (with an acquire's consistency
 * actions), false at once when busy; the request never queues. */
bool sync_lock_try(int id);
/* Whether this node, holding lock id, had it come from another node
 * (its acquire took a message) rather than find it still here. */
bool sync_lock_came(int id);
void sync_cond_wait(int cond, int lock);
void sync_cond_broadcast(int cond);
/* Ends the job unless id is a program's: "call(id): a program's what ids
 * are 0 to ...". */
void sync_check_user_id(const char *call, const char *what, int id);

/* The program's atomics (atomic.c): the __tsan_atomic* calls dsmcc's
 * instrumentation makes of every atomic instruction. One on shared memory
 * runs under the dsm lock of its 16-byte block, one of the top
 * SYNC_ATOMIC_LOCKS ids of the int range (the OpenMP runtime's ids stay
 * below them). Coherent from sync_atomic_start, in a job of several nodes,
 * to sync_atomic_finish; the hardware's before and after. */
#define SYNC_ATOMIC_LOCKS     0x10000
#define SYNC_ATOMIC_LOCK_BASE (INT32_MAX - SYNC_ATOMIC_LOCKS + 1)
int sync_atomic_lock_id(const volatile void *addr);
/* The id, of that range, that hash `hash` names among those `manager`
 * manages in a job of `nodes` (id mod nodes == manager). */
int sync_atomic_lock_id_managed(uint32_t hash, int nodes, int manager);
/* Whether an access the compiler routed to the runtime (an atomic, an
 * OpenMP program's volatile access) to addr needs more than the hardware:
 * a job of several nodes runs, and addr is shared memory. */
bool sync_atomic_applies(const volatile void *addr);
/* The lock of addr's 16-byte block, taken and given back as the
 * atomics above do, for an operation the caller runs on the local copy
 * in between (libomp's __kmpc_atomic_* calls, omp/kmpc_atomic.c): only
 * when sync_atomic_applies(addr). Returns what sync_atomic_end takes. */
int sync_atomic_begin(const volatile void *addr);
void sync_atomic_end(int taken);
void sync_atomic_start(void);
void sync_atomic_finish(void);

/* A node's threads first (cohort.c; with DSM_THREADS > 1 only): the
 * node's barrier run by the last of its threads to arrive; a lock taken
 * inside the node first; and the one line for a call that has no meaning
 * across a node's threads yet (nothing when T = 1). */
void sync_node_barrier(void (*node_barrier)(void));

/* barrier.c: the runtime says whether the other nodes can meet node 0 in a
 * collective now (fork style: only while they run a create); dsm_barrier
 * and dsm_bcast on node 0 refuse in one line when they cannot, rather than
 * wait for ever. NULL (the default): they always can (SPMD). */
void sync_collectives_guard(bool (*others_can_meet)(void));
/* barrier.c: a parallel region's join over every node, on each node once
 * its threads of the region are done (one thread each): a barrier when the
 * protocol wants one there (coherence_ops.join_wants_barrier: migration's
 * window ends); returns whether it was one. */
bool sync_join(void);
/* The same meeting for another collective of the node's threads: the last
 * to arrive runs fn(its own arg) while the others wait, then lets them go
 * (what fn wrote is theirs to read). `op` names the call in the one line
 * for threads of a node that call different collectives at once. */
void sync_node_meet(const char *op, void (*fn)(void *), void *arg);
/* dsm_bcast across the node's threads: root is a thread id (dsm.h); the
 * node's broadcast runs once, from the last thread to arrive. */
void sync_node_bcast(void *buf, size_t len, int root,
                     void (*node_bcast)(void *buf, size_t len, int root_node));
void sync_cohort_lock(int id);
/* sync_cohort_lock that takes it only if it is free: in the node (another
 * thread's) and in the job (sync_lock_try). */
bool sync_cohort_trylock(int id);
void sync_cohort_unlock(int id);
void sync_refuse_threads(const char *call);

/* What sync needs from the settings (runtime.c fills it from the table:
 * docs/design.md, Settings); sync_params() reads it from sync_start on. */
struct sync_params {
    int  barrier_fanout; /* DSM_BARRIER_FANOUT: the barrier tree's */
    bool atomic_at_home; /* DSM_ATOMIC_AT_HOME (atomic.c) */
    bool pthreads;       /* the program's threads spread over the nodes (sync_pthreads_on) */
};
void sync_start(const struct sync_params *p);
const struct sync_params *sync_params(void);
void sync_lock_start(void);
/* Stops the lock releaser thread (lock_releaser.c), after ipc_finish. */
void sync_lock_finish(void);
void sync_barrier_start(void);
void sync_cond_start(void);
void sync_flush_start(void);

/* Runs fn(arg) once every release kept on this node so far
 * (coherence_release_keep) has run: at once when none is pending, else on
 * lock_releaser.c's thread after the release it runs aside. fn runs under
 * the lock table's lock and must not wait. For the delivery thread, which
 * may not wait itself. */
void sync_after_kept_releases(void (*fn)(void *), void *arg);

/* A flush (flush.c): this node's writes become visible to every node's
 * next flush or acquire, and the writes every other node made visible
 * (flushed, unlocked, ...) before this flush began become visible here. */
void sync_flush(void);
/* A release this node keeps (lock.c: an unlock's, coherence_release_keep)
 * comes out without an interval: every node whose next flush would ask
 * nothing on the strength of its last ask is told to ask (flush.c, quiet
 * flushes). */
void sync_flush_kept_release(void);
/* Its release half alone: what this node wrote so far is in an interval
 * that every later flush (or acquire that carries it) elsewhere pulls. */
void sync_release(void);
/* The flush OpenMP implies at a critical section's or a lock's entry
 * (and ordered, taskwait, taskgroup's end): a full flush when another
 * node's flush announced an interval this node has not seen, else
 * nothing (flush.c). Call it after the lock's acquire. */
void sync_flush_implied(void);
/* A flush's acquire half alone (flush.c): every interval another node
 * released that this one lacks, applied. From a thread's own context or
 * a signal handler on its alternate stack that interrupted the program's
 * code (as a fault's catch-up). */
void sync_pull(void);
/* While a thread runs a task another node made (refresh.c): a pull when
 * a timer of its CPU time (50 ms, doubling after each pull) interrupts
 * the program's own code, so a task that polls a plain variable sees its
 * creator's released writes. */
void sync_refresh_begin(void);
void sync_refresh_end(void);

/* Barriers this node has entered (barrier.c): every node's count is the
 * same between the same two barriers. */
uint64_t sync_barrier_epoch(void);

/* The barrier's tree (barrier.c): fan-out DSM_BARRIER_FANOUT, set by
 * sync_start. Node i's parent (-1 for node 0), and the number of its
 * children, the first at *first (consecutive). */
extern int sync_barrier_fanout;
int sync_tree_parent(int i, int k);
int sync_tree_children(int i, int k, int nodes, int *first);

/* A map from an int id to a zeroed record of `size` bytes, created on
 * first use (locks, conditions); a record never moves. The table grows
 * with the ids in use. The caller holds its own lock. */
struct idmap {
    struct idmap_entry **buckets;
    size_t               nbuckets, count, size;
    unsigned             shift; /* nbuckets = 1 << shift */
};
void *idmap_get(struct idmap *m, int id);
/* The record of id, or NULL when it has none (none is made). */
void *idmap_find(const struct idmap *m, int id);
/* The most records one lookup may pass: the map's health, for tests. */
size_t idmap_longest_chain(const struct idmap *m);
/* Frees every record and the table; the map is empty again. */
void idmap_free(struct idmap *m);

/* A dsmcc program's pthread objects in shared memory (pthread_*.c;
 * include/dsm/pthread.h): dsm locks and conditions named by ids of
 * [SYNC_PTHREAD_ID_BASE, SYNC_PTHREAD_ID_END), inside the program's range:
 * the first SYNC_PTHREAD_FIXED_IDS for the runtime's own (runtime/pthreads.c,
 * pthread_once), then one block of SYNC_PTHREAD_ID_SPAN per node, handed
 * out with no communication. sync_pthreads_on: the runtime spreads a
 * program's threads over the nodes (two or more), so its objects in shared
 * memory must be the job's; else they stay the C library's. */
#define SYNC_PTHREAD_ID_BASE   0x20000000
#define SYNC_PTHREAD_ID_SPAN   (1 << 21)
#define SYNC_PTHREAD_ID_END    (SYNC_PTHREAD_ID_BASE + VT_MAX_NODES * SYNC_PTHREAD_ID_SPAN)
#define SYNC_PTHREAD_FIXED_IDS 16
enum { SYNC_PTHREAD_THREADS_ID = SYNC_PTHREAD_ID_BASE, /* runtime/pthreads.c's table */
       SYNC_PTHREAD_NAMING_ID,                        /* naming a statically initialised object */
       SYNC_PTHREAD_ONCE_ID,                          /* every pthread_once */
       SYNC_PTHREAD_KEYS_ID,                          /* thread-specific data keys */
       SYNC_PTHREAD_MMAP_ID,                          /* the program's mappings */
       SYNC_PTHREAD_RAND_ID,                          /* rand, random, drand48 (runtime/libc_rand.c) */
       SYNC_PTHREAD_SETTINGS_ID,                      /* chdir, umask, setenv, setlocale (libc_settings.c) */
       SYNC_PTHREAD_ATEXIT_ID };                      /* its exit handlers (runtime/exit.c) */
extern bool sync_pthreads_on;
/* After the job the program's objects are the C library's again (its exit
 * handlers run on). */
void sync_pthreads_finish(void);
/* The calling thread is one runtime/pthreads.c placed on this node. */
void sync_pthread_mark_placed(void);
/* Whether an object at addr is the job's (sync_pthreads_on, in shared
 * memory); the caller must be a thread dsm knows: the process's first (main,
 * a worker node's worker), one pthreads.c placed (sync_pthread_mark_placed), or
 * any with T > 1. */
bool sync_pthread_object(const volatile void *addr);
/* A new id from this node's block. */
uint32_t sync_pthread_new_id(void);
/* The id in *slot, given one (under SYNC_PTHREAD_NAMING_ID) if still 0: an
 * object made by a static initializer is named at its first use. */
uint32_t sync_pthread_id_of(uint32_t *slot);
/* The calling thread's number in the job, never 0 (an owner field). */
uint32_t sync_pthread_me(void);
/* A node's lock, taken by one of its threads (cohort or plain). */
void sync_pthread_lock(uint32_t id);
void sync_pthread_unlock(uint32_t id);
/* sync_pthread_lock only if no thread of the job has it: true when taken. */
bool sync_pthread_trylock(uint32_t id);
/* pthread_cond_wait's mutex (pthread_mutex.c): its id if this thread holds
 * it once (0: it does not hold it), and its holder leaving and coming back
 * around the wait. */
uint32_t sync_pthread_mutex_held(pthread_mutex_t *m, const char *call);
void sync_pthread_mutex_leave(pthread_mutex_t *m);
void sync_pthread_mutex_return(pthread_mutex_t *m);
/* One line: `call` on an object that cannot work across nodes. */
__attribute__((noreturn)) void sync_pthread_refuse(const char *call, const char *why);

#endif
