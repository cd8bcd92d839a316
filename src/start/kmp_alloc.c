/*
 * kmp_alloc.c — libomp's allocation extensions (kmp_malloc, kmp_aligned_malloc,
 * kmp_calloc, kmp_realloc, kmp_free) for programs built with dsmcc.
 *
 * They live in libdsm-start.a, linked into the program, so that their
 * calls of malloc and friends are the program's own and dsmcc's
 * -Wl,--wrap makes them shared memory, as a block the master hands to a
 * parallel region must be (include/dsm.h, dsm_heap_alloc).
 */
#include <stdlib.h>

void *kmp_malloc(size_t size) { return malloc(size); }
void *kmp_calloc(size_t n, size_t size) { return calloc(n, size); }
void *kmp_realloc(void *p, size_t size) { return realloc(p, size); }
void  kmp_free(void *p) { free(p); }

void *kmp_aligned_malloc(size_t size, size_t alignment)
{
    void *p = NULL;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    return posix_memalign(&p, alignment, size ? size : 1) ? NULL : p;
}
