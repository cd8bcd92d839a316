/*
 * volatile.c — an OpenMP program's volatile accesses, as OpenMP's memory
 * model says: "a reference that reads the value of an object with a
 * volatile-qualified type behaves as if there were a flush operation on
 * that object at the previous sequence point, while a reference that
 * modifies the value of an object with a volatile-qualified type behaves
 * as if there were a flush operation on that object at the next sequence
 * point" (OpenMP 4.5 §1.4.4; so in 5.x). Programs poll volatile flags on
 * that promise (LLVM's omp_for_nowait test, hand-written pipelines).
 *
 * dsmcc, compiling OpenMP (-fopenmp), calls __dsm_volatile_read before
 * every volatile load of the program and __dsm_volatile_write after every
 * volatile store (its IR pass, tools/dsmcc.in), with the address and the
 * size. One on private memory, or before the job, costs the check alone;
 * one on shared memory flushes (sync_flush: the whole node's view, which
 * includes the object's). Not for programs other than OpenMP ones, where
 * volatile promises nothing between threads.
 */
#include <stddef.h>

#include "sync/sync.h"

void __dsm_volatile_read(const volatile void *addr, size_t size);
void __dsm_volatile_write(const volatile void *addr, size_t size);

void __dsm_volatile_read(const volatile void *addr, size_t size)
{
    (void)size;
    if (sync_atomic_applies(addr))
        sync_flush();
}

void __dsm_volatile_write(const volatile void *addr, size_t size)
{
    (void)size;
    if (sync_atomic_applies(addr))
        sync_flush();
}
