/*
 * idhint.h: a Bloom filter of event ids that tells, without a database
 * lookup, that an id is certainly not stored.
 *
 * relayd looks up every arriving event's id before it checks the
 * signature, so that a copy it already holds costs a lookup rather than
 * a verification.  Almost every arriving event is new, and on a large
 * store each of those lookups reads an index leaf that no cache holds.
 * The filter answers "certainly not" for nearly all of them.
 *
 * It is a hint and nothing more: an id it calls new that is in fact
 * stored is verified and then found by the writer's own lookup, with
 * the same answer to the client; an id it calls possible is looked up
 * as before.  So an id stored behind its back, or a filter fuller than
 * it was sized for, costs time and never a wrong answer.
 *
 * Bits are set and read with atomic operations: a thread that fills the
 * filter from the store adds beside the loop that adds what it stores.
 * Until idhint_set_ready() every id is "possible".
 */
#ifndef GRASPD_IDHINT_H
#define GRASPD_IDHINT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Bits per id the filter is sized for, and bits set per id: about 1% of
 * new ids look possible at that fill (the false positive rate of a
 * Bloom filter, (1 - e^(-k/b))^k for k = 7, b = 10, is 0.8%).
 */
#define IDHINT_BITS_PER_ID 10
#define IDHINT_HASHES	   7

struct idhint {
	uint64_t *ih_words;
	uint64_t  ih_nbits; /* a multiple of 64 */
	int	  ih_ready;
};

/*
 * Sizes the filter for capacity ids, at most max_bytes; 0, or -1 if the
 * memory cannot be had (the filter then stays empty and never ready).
 */
int  idhint_init(struct idhint *, size_t capacity, size_t max_bytes);
void idhint_free(struct idhint *);
/* Adds an id (32 bytes, a SHA-256); from any thread. */
void idhint_add(struct idhint *, const uint8_t *id);
/* Once every stored id was added: "certainly not" answers start. */
void idhint_set_ready(struct idhint *);
/* 0 if id is certainly not in the filter, 1 if it may be (or not ready). */
int  idhint_maybe(const struct idhint *, const uint8_t *id);

#endif
