/*
 * hooks.c — what the runtime lends the C library's names that mem defines
 * (kernel*.c): the job's streams, and the program's heap.
 *
 * A descriptor or stream another node opened, and a block of dsmcc's
 * malloc, are the runtime's (runtime/streams.c, runtime/heap.c), a layer
 * above; mem's wrappers reach them through these tables, which the runtime
 * fills, so that no call runs up the layers. They live apart from
 * kernel*.c because libdsm.a leaves those out (the C library's names are a
 * shared library's to interpose) while the runtime's objects, which set
 * the tables, are in it.
 */
#include "base/state.h"
#include "mem/mem.h"

DSM_STATE const struct mem_kernel_streams *_Atomic mem_kernel_streams;
DSM_STATE const struct mem_kernel_heap *_Atomic mem_kernel_heap;
