/*
 * idhint.c: see idhint.h.
 *
 * An id is a SHA-256, so its bytes are already uniform: the k bit
 * positions come from two of its 64-bit words by double hashing
 * (h1 + i * h2), each reduced to the filter's size by a multiply and a
 * shift instead of a division.
 */
#include <stdlib.h>
#include <string.h>

#include "idhint.h"

int
idhint_init(struct idhint *h, size_t capacity, size_t max_bytes)
{
	uint64_t nbits;

	memset(h, 0, sizeof(*h));
	nbits = (uint64_t)capacity * IDHINT_BITS_PER_ID;
	if (nbits > (uint64_t)max_bytes * 8)
		nbits = (uint64_t)max_bytes * 8;
	/* The reduction takes 32 bits of each hash: at most 2^32 bits. */
	if (nbits > UINT32_MAX)
		nbits = UINT32_MAX;
	nbits = (nbits + 63) & ~(uint64_t)63;
	if (nbits == 0)
		return -1;
	if ((h->ih_words = calloc(nbits / 64, sizeof(uint64_t))) == NULL)
		return -1;
	h->ih_nbits = nbits;
	return 0;
}

void
idhint_free(struct idhint *h)
{
	free(h->ih_words);
	memset(h, 0, sizeof(*h));
}

/* The i-th bit position of the id whose hash words are h1, h2. */
static inline uint64_t
position(const struct idhint *h, uint64_t h1, uint64_t h2, int i)
{
	uint64_t x = h1 + (uint64_t)i * h2;

	return ((x >> 32) * h->ih_nbits) >> 32;
}

static void
hash_words(const uint8_t *id, uint64_t *h1, uint64_t *h2)
{
	memcpy(h1, id, sizeof(*h1));
	memcpy(h2, id + 8, sizeof(*h2));
	/* Odd, so that the k positions differ. */
	*h2 |= 1;
}

void
idhint_add(struct idhint *h, const uint8_t *id)
{
	uint64_t h1, h2, b;
	int	 i;

	if (h->ih_words == NULL)
		return;
	hash_words(id, &h1, &h2);
	for (i = 0; i < IDHINT_HASHES; i++) {
		b = position(h, h1, h2, i);
		__atomic_fetch_or(&h->ih_words[b / 64], (uint64_t)1 << (b % 64),
		    __ATOMIC_RELAXED);
	}
}

void
idhint_set_ready(struct idhint *h)
{
	if (h->ih_words != NULL)
		__atomic_store_n(&h->ih_ready, 1, __ATOMIC_RELEASE);
}

int
idhint_maybe(const struct idhint *h, const uint8_t *id)
{
	uint64_t h1, h2, b, w;
	int	 i;

	if (h->ih_words == NULL ||
	    !__atomic_load_n(&h->ih_ready, __ATOMIC_ACQUIRE))
		return 1;
	hash_words(id, &h1, &h2);
	for (i = 0; i < IDHINT_HASHES; i++) {
		b = position(h, h1, h2, i);
		w = __atomic_load_n(&h->ih_words[b / 64], __ATOMIC_RELAXED);
		if ((w & ((uint64_t)1 << (b % 64))) == 0)
			return 0;
	}
	return 1;
}
