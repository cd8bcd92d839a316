/*
 * rng.h — the particle codes' random numbers (bench/apps' nbody, water and
 * barnes, bench/omp's nbody): a splitmix64 stream seeded by an item's
 * index, so that every process or thread builds its own items, and a
 * reference run all of them, identically.
 *
 * Header-only and C library only, so that an OpenMP program stays one
 * standalone source that includes it by a relative path.
 */
#ifndef RNG_H
#define RNG_H
#include <math.h>
#include <stdint.h>

/* splitmix64: the next 64 bits of stream s. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static inline double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }

/* Standard normal (Box-Muller). */
static inline double rng_gauss(uint64_t *s)
{
    double u = rng_uniform(s), v = rng_uniform(s);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}
#endif
