/*
 * spin.h — a short, bounded busy wait before a thread of a node sleeps
 * (dsmrun --threads T; docs/design.md, "SMP nodes").
 *
 * A node's threads meet at barriers, hand over cohort locks and start and
 * end OpenMP regions many times a second (NPB CG: some 3,400 meetings in
 * 0.2 s). Sleeping on a condition variable or a contended mutex at each
 * costs a wake-up of tens of µs, and on a loaded machine the woken thread
 * lands on its waker's CPU, preempts it, and blocks on the mutex the waker
 * still holds. libomp waits spinning (KMP_BLOCKTIME); here a waiter first
 * spins for SPIN_NS, then yields its CPU a few times (so that with more
 * threads than cores the thread it waits for can run), and only then
 * sleeps. A wait that ends in time costs neither side a system call.
 */
#ifndef DSM_BASE_SPIN_H
#define DSM_BASE_SPIN_H
#include <pthread.h>
#include <stdbool.h>

/* Waits, bounded, until done(arg) is true; says whether it became true.
 * done must be cheap and read what it tests with acquire ordering. The
 * caller sleeps (its condition variable, its mutex) when it is false. */
bool spin_until(bool (*done)(void *), void *arg);

/* pthread_mutex_lock after a bounded spin of trylocks. */
void spin_mutex_lock(pthread_mutex_t *m);
#endif
