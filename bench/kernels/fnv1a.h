/*
 * fnv1a.h — FNV-1a, the checksum of results that the applications' RESULT
 * lines carry, one source for bench/apps (through par.h) and the
 * standalone OpenMP programs of bench/omp, so that both versions of a
 * kernel print comparable checksums.
 *
 * Header-only and C library only, so that the OpenMP programs stay one
 * standalone source each that includes it by a relative path.
 */
#ifndef FNV1A_H
#define FNV1A_H
#include <stddef.h>
#include <stdint.h>

#define FNV1A_START 0xcbf29ce484222325ull /* the offset basis: h for the first call */

/* FNV-1a over the n bytes at p, going on from h. */
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}
#endif
