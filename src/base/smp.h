/*
 * smp.h — a node's application threads (dsmrun --threads T; docs/design.md,
 * "SMP nodes").
 *
 * With T = 1 (the default) nothing here changes a path: smp_multi() is
 * false and every caller keeps today's code. With T > 1 the protocol acts
 * per node while T threads run: smp_concurrent() says whether other
 * threads of this node may be running now (they may not while the node's
 * barrier leader works, all the others being parked in it).
 */
#ifndef DSM_BASE_SMP_H
#define DSM_BASE_SMP_H
#include <stdbool.h>
#include <stdint.h>

/* T, set once at startup (DSM_THREADS) before any thread is started. */
void smp_set_threads(int threads);
int  smp_threads(void);
static inline bool smp_multi(void)
{
    extern int smp_threads_per_node;
    return smp_threads_per_node > 1;
}

/* Whether several of the node's threads may be inside the sync layer at
 * once: T > 1, or a pthreads program's node (run slots, below), whose
 * threads take turns and may each wait in a lock or a condition while
 * another runs. Locks and condition waits then take their per-thread
 * paths (cohort.c: a node-local mutex per lock, a token per wait), while
 * the protocol keeps its one-thread paths unless smp_multi(). */
static inline bool smp_threaded(void)
{
    extern int smp_threads_per_node;
    extern bool smp_slots_on;
    return smp_threads_per_node > 1 || smp_slots_on;
}

/* The calling thread's index on its node, 0 .. T-1 (0: the thread that
 * joined the job, the master's caller of dsm_create, a worker node's
 * worker thread). A thread the runtime starts sets its own. */
int  smp_index(void);
/* Whether the calling thread is one of the node's application threads
 * (it set its index): not the service thread, nor another of dsm's own. */
bool smp_is_application(void);
void smp_set_index(int index);

/* Whether another application thread of this node may run now: T > 1 and
 * the node's threads are not all parked in a barrier (smp_park). */
bool smp_concurrent(void);
/* The barrier's leader, the node's other threads waiting for it. */
void smp_park(bool parked);

/*
 * Run slots (runtime/pthreads.c): a pthreads program may place more
 * threads on a node than T, as one process may run more threads than it
 * has CPUs. At most T of them run at once, each holding one of the node's
 * T slots, so the protocol never sees more than T threads of the node (with
 * T = 1 the node is one thread to it, under every protocol). A thread
 * holds its slot while it runs and gives it up only while it waits on
 * another thread — a lock's grant, a condition, a contended node-local
 * mutex, a sleep — never inside protocol work; it takes one again, first
 * come first served, before it goes on. Every wait that may depend on
 * another program thread gives the slot up, so a thread holding one is
 * never blocked by a thread that waits for one: no deadlock the program
 * would not have in one process.
 */
void smp_slots_enable(int slots);
bool smp_slots_enabled(void);
/* The calling thread joins the turns: waits for a slot (a placed thread
 * before its routine; main), and gives it up for good at its end. */
void smp_slot_take(void);
void smp_slot_give(void);
/* Around a wait on another thread: nothing unless the calling thread holds
 * a slot; they nest (the outermost gives and takes). */
void smp_wait_begin(void);
void smp_wait_end(void);
/* Lets the threads waiting for a slot run first (sched_yield, a spin on an
 * atomic); nothing when none waits. */
void smp_yield(void);
/* Whether the calling thread waits without its slot now. */
bool smp_off_slot(void);
/* Whether a wait of the calling thread may spin: not while it waits off
 * its slot and another thread runs in it (the CPU is that thread's). */
bool smp_may_spin(void);
/* Threads waiting for a slot on this node (approximate, for statistics
 * and for smp_yield's quick test). */
int  smp_slot_waiters(void);
/* Slot-time no thread held so far: the integral over time of the free
 * slots, in ns (0 while the slots are off). The report's waits of
 * threads off their slots count only up to it (runtime/report.c). */
uint64_t smp_slots_free_ns(void);

/* Called first by each of dsm's own threads (the service thread, lock.c's
 * releaser, UCX's): they block every signal a program may send or catch,
 * so a signal sent to the process (kill, alarm, a timer) goes to one of
 * the program's threads, which runs its handler, never to a thread that
 * must not run the program's code. The signals of faults stay open. */
void smp_internal_thread(void);
#endif
