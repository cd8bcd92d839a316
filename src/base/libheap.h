/*
 * libheap.h — the library's private memory comes from base/libheap.c, not
 * from the C library's allocator.
 *
 * The build includes this header first in every source of the library
 * (CMakeLists.txt, -include), so that malloc, calloc, realloc, free,
 * strdup, aligned_alloc, posix_memalign and qsort written anywhere in src/
 * are libheap's. Why: the fault handler allocates (a message's buffer, a
 * received payload, a list of diffs), and it can interrupt the program
 * inside the C library's malloc, holding its lock (libheap.c). A unit test
 * checks that libdsm.so asks the C library for none of them.
 *
 * Under AddressSanitizer the names are left alone: ASan's allocator then
 * checks the library's own blocks too (and mem/copies.c keeps page copies
 * out of it).
 */
#ifndef DSM_BASE_LIBHEAP_H
#define DSM_BASE_LIBHEAP_H
#include <stddef.h>
#include <stdlib.h> /* declared before the names below are redirected */
#include <string.h>

void *libheap_malloc(size_t size);
void *libheap_calloc(size_t n, size_t size);
void *libheap_realloc(void *p, size_t size);
void  libheap_free(void *p);
char *libheap_strdup(const char *s);
void *libheap_aligned_alloc(size_t align, size_t size);
int   libheap_posix_memalign(void **out, size_t align, size_t size);

/* qsort's contract, sorting with a buffer from libheap (the C library's
 * qsort takes one from malloc above 1 KiB). Stable. */
void libheap_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Room for one more element in a full growing array v of *cap elements of
 * elem bytes: twice the capacity (first, when it has none), or the job ends
 * "out of memory <what>". Returns the array, and *cap its new capacity; the
 * array is the library's realloc's, as a caller's own would be. */
void *libheap_grow(void *v, size_t *cap, size_t elem, size_t first, const char *what);

#if !defined(__SANITIZE_ADDRESS__) && !defined(DSM_LIBHEAP_ITSELF)
#define malloc(size)                    libheap_malloc(size)
#define calloc(n, size)                 libheap_calloc(n, size)
#define realloc(p, size)                libheap_realloc(p, size)
#define free(p)                         libheap_free(p)
#define strdup(s)                       libheap_strdup(s)
#define aligned_alloc(align, size)      libheap_aligned_alloc(align, size)
#define posix_memalign(out, align, size) libheap_posix_memalign(out, align, size)
#define qsort(base, n, size, cmp)       libheap_qsort(base, n, size, cmp)
#endif
#endif
