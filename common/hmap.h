/*
 * hmap.h: a hash map from byte-string keys to pointers, with a keyed hash
 * (SipHash-1-3, seeded at random per process) so that keys chosen by a
 * remote peer cannot force collisions.  Open addressing, linear probing,
 * backward-shift deletion.  The map copies keys; values are the caller's.
 */
#ifndef GRASPD_HMAP_H
#define GRASPD_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
	uint64_t hs_hash;
	void	*hs_key; /* NULL: empty */
	size_t	 hs_keylen;
	void	*hs_val;
};

struct hmap {
	struct hmap_slot *hm_slots;
	size_t		  hm_cap; /* power of two, or 0 */
	size_t		  hm_n;
};

#define HMAP_INIT \
	{ \
		NULL, 0, 0 \
	}

/* The value for key, or NULL. */
void *hmap_get(const struct hmap *, const void *key, size_t len);
/*
 * Sets key to val; returns the previous value (NULL if none).  val must
 * not be NULL.  Allocation failure is fatal.
 */
void *hmap_put(struct hmap *, const void *key, size_t len, void *val);
/* Removes key; returns its value or NULL. */
void *hmap_del(struct hmap *, const void *key, size_t len);
/* Frees the map's own memory (not the values). */
void  hmap_free(struct hmap *);
/*
 * Iteration: for (i = 0; hmap_next(m, &i, &key, &len, &val); ) ...
 * Do not change the map while iterating.
 */
int   hmap_next(const struct hmap *, size_t *it, const void **key, size_t *len,
      void **val);
/* The keyed hash itself, for callers that bucket by it. */
uint64_t hmap_hash(const void *key, size_t len);

#endif
