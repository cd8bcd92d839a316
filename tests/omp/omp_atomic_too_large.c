/*
 * omp_atomic_too_large.c — an atomic larger than the hardware's: clang
 * calls libatomic for it, which runs on one node's copy of the page and
 * which dsm cannot instrument; dsmcc must refuse to build it (issue 38).
 */
#include <stdatomic.h>

struct triple { int a, b, c; };
_Atomic struct triple shared_triple;

int read_triple(void)
{
    struct triple t = atomic_load(&shared_triple);
    return t.a + t.b + t.c;
}
