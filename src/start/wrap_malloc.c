/*
 * wrap_malloc.c — libdsm-start.a: the program's malloc and friends in the
 * shared-memory model (dsm.h, dsm_heap_*). dsmcc links with
 * -Wl,--wrap=malloc and the others, which redirects the program's own
 * references only: the C library and dsm keep the C library's allocator.
 * Before the job starts (constructors, static initializers) dsm's pre-start
 * heap allocates, the same blocks on every node; in a 1-node run the C
 * library allocates after the start; a free goes to whichever allocator
 * owns the block.
 */
#include <dsm.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void  __real_free(void *p);
int   __real_posix_memalign(void **out, size_t align, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
void *__real_memalign(size_t align, size_t size);
size_t __real_malloc_usable_size(void *p);

/* Shared once the job has begun (dsm_main starts it before main), and
 * before it (static initializers: dsm_heap_prestart). */
static int shared(void) { return dsm_nodes() > 1 || dsm_heap_prestart(); }

void *__wrap_malloc(size_t size) { return shared() ? dsm_heap_alloc(size, 0) : __real_malloc(size); }

void *__wrap_calloc(size_t n, size_t size)
{
    if (!shared())
        return __real_calloc(n, size);
    if (size && n > (size_t)-1 / size) {
        errno = ENOMEM;
        return NULL;
    }
    return dsm_heap_alloc(n * size, 0); /* dsm_malloc zeroes */
}

void *__wrap_realloc(void *p, size_t size)
{
    if (p && !dsm_heap_owns(p))
        return __real_realloc(p, size);
    if (!p && !shared())
        return __real_malloc(size);
    return dsm_heap_realloc(p, size);
}

/* reallocarray's overflow check, then realloc (glibc's own would call
 * the C library's realloc on a shared block). */
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size) {
        errno = ENOMEM;
        return NULL;
    }
    return __wrap_realloc(p, n * size);
}
size_t __wrap_malloc_usable_size(void *p)
{
    return p && dsm_heap_owns(p) ? dsm_heap_usable_size(p) : __real_malloc_usable_size(p);
}
void __wrap_free(void *p)
{
    if (dsm_heap_owns(p)) {
        if (shared()) /* after the job, shared memory is left as it is */
            dsm_heap_free(p);
    } else
        __real_free(p);
}

int __wrap_posix_memalign(void **out, size_t align, size_t size)
{
    if (!shared())
        return __real_posix_memalign(out, align, size);
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    void *p = dsm_heap_alloc(size, align);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
    return shared() ? dsm_heap_alloc(size, align) : __real_aligned_alloc(align, size);
}

void *__wrap_memalign(size_t align, size_t size)
{
    return shared() ? dsm_heap_alloc(size, align) : __real_memalign(align, size);
}
