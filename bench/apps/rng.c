/*
 * rng.c — splitmix64 and the deviates drawn from it (rng.h).
 */
#include "rng.h"

#include <math.h>

uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }

double rng_gauss(uint64_t *s)
{
    double u = rng_uniform(s), v = rng_uniform(s);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}
