/*
 * fnv.h: FNV-1a 64, an unkeyed hash that is the same in every process
 * and every run (ETags, statement cache slots, the inventory tables'
 * configuration mark).  Not for a map whose keys a peer chooses: those
 * use hmap_hash() (keyed).
 */
#ifndef GRASPD_FNV_H
#define GRASPD_FNV_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64's offset basis and prime (draft-eastlake-fnv, section 5). */
#define FNV1A64_BASIS 0xcbf29ce484222325ULL
#define FNV1A64_PRIME 0x100000001b3ULL

/* h (FNV1A64_BASIS to start) carried over len bytes of p. */
static inline uint64_t
fnv1a64(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t		     i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * FNV1A64_PRIME;
	return h;
}

#endif
