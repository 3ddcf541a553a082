/*
 * tunit_rng.c: the unit tests' xorshift64 (tunit_rng.h).
 */
#include "tunit_rng.h"

uint64_t
tunit_rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

uint32_t
tunit_rng_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(tunit_rng_next(state) % n);
}
