/*
 * tunit_rng.h: the unit tests' reproducible pseudo-random numbers, a
 * xorshift64 (Marsaglia's 13, 7, 17) on a state each test program owns
 * and seeds, so a failing random case repeats exactly.
 */
#ifndef GRASPD_TUNIT_RNG_H
#define GRASPD_TUNIT_RNG_H

#include <stdint.h>

/* Advances *state (never 0) and returns its new value. */
uint64_t tunit_rng_next(uint64_t *state);
/* Advances *state and returns its new value modulo n (n > 0). */
uint32_t tunit_rng_below(uint64_t *state, uint32_t n);

#endif
