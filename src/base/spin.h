/*
 * spin.h — a short, bounded busy wait before a thread of a node sleeps
 * (dsmrun --threads T; docs/design.md, "SMP nodes").
 *
 * A node's threads meet at barriers, hand over cohort locks and start and
 * end OpenMP regions many times a second (NPB CG: some 3,400 meetings in
 * 0.2 s). Sleeping on a condition variable or a contended mutex at each
 * costs a wake-up of tens of µs, and on a loaded machine the woken thread
 * lands on its waker's CPU, preempts it, and blocks on the mutex the waker
 * still holds. libomp waits spinning (KMP_BLOCKTIME); here a waiter spins
 * for at most SPIN_DEFAULT_NS (or what OpenMP's blocktime-var says) and
 * then sleeps, so a wait that ends in time
 * costs neither side a system call.
 *
 * Spinning pays only while the awaited thread is running. On a machine
 * shared with other work it often is not (descheduled, it comes back
 * after a time slice), and there every µs spent spinning is CPU time taken
 * from the job's share: a spin that never succeeds makes the program
 * slower than sleeping would. So each wait site keeps, per thread, how
 * long it may spin (struct spin): halved by each spin that ended without
 * the event, doubled by each that saw it. With more threads on the node
 * than CPUs to run them, a waiter does not spin at all: it yields once
 * (the awaited thread may be waiting for this CPU) and sleeps.
 */
#ifndef DSM_BASE_SPIN_H
#define DSM_BASE_SPIN_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* One wait site's spin allowance, for one thread: zero-initialised
 * (`static __thread struct spin s;`), it starts at the most. */
struct spin { uint32_t ns; };

/* Waits, bounded, until done(arg) is true; says whether it became true.
 * done must be cheap and read what it tests with acquire ordering. The
 * caller sleeps (its condition variable, its mutex) when it is false. */
bool spin_until(struct spin *s, bool (*done)(void *), void *arg);

/* The longest spin of every site of this process: dsm's own (50 µs) by
 * default; OpenMP's blocktime-var (KMP_BLOCKTIME, OMP_WAIT_POLICY) sets
 * it, 0 meaning that a waiter sleeps at once. At most about 4 s. */
#define SPIN_DEFAULT_NS 50000u
void spin_set_max(uint64_t ns);

/* pthread_mutex_lock after a bounded spin of trylocks. */
void spin_mutex_lock(struct spin *s, pthread_mutex_t *m);
#endif
