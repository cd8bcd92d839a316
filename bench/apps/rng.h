/*
 * rng.h — the particle codes' (nbody.c, water.c) random numbers: a
 * splitmix64 stream seeded by an item's index, so that every process
 * builds its own items, and a reference run all of them, identically.
 */
#ifndef RNG_H
#define RNG_H
#include <stdint.h>

uint64_t rng_next(uint64_t *s);   /* splitmix64: the next 64 bits of stream s */
double   rng_uniform(uint64_t *s); /* uniform in [0, 1), 53 bits */
double   rng_gauss(uint64_t *s);   /* standard normal (Box-Muller) */
#endif
