/*
 * hmap.c: keyed-hash maps (see hmap.h).  Used by the roles' inventories.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hmap.h"
#include "log.h"

static uint64_t sip_k0, sip_k1;
static int	sip_seeded;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND \
	do { \
		v0 += v1; \
		v1 = ROTL(v1, 13); \
		v1 ^= v0; \
		v0 = ROTL(v0, 32); \
		v2 += v3; \
		v3 = ROTL(v3, 16); \
		v3 ^= v2; \
		v0 += v3; \
		v3 = ROTL(v3, 21); \
		v3 ^= v0; \
		v2 += v1; \
		v1 = ROTL(v1, 17); \
		v1 ^= v2; \
		v2 = ROTL(v2, 32); \
	} while (0)

uint64_t
hmap_hash(const void *key, size_t len)
{
	const uint8_t *p = key, *end = p + (len & ~(size_t)7);
	uint64_t       v0, v1, v2, v3, m, b = (uint64_t)len << 56;
	size_t	       left = len & 7;

	if (!sip_seeded) {
		uint64_t seed[2];

		if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
			fatal("getrandom");
		sip_k0 = seed[0];
		sip_k1 = seed[1];
		sip_seeded = 1;
	}
	v0 = sip_k0 ^ 0x736f6d6570736575ULL;
	v1 = sip_k1 ^ 0x646f72616e646f6dULL;
	v2 = sip_k0 ^ 0x6c7967656e657261ULL;
	v3 = sip_k1 ^ 0x7465646279746573ULL;
	/* SipHash-1-3: one round per word, three to finish. */
	for (; p != end; p += 8) {
		memcpy(&m, p, 8);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	while (left--)
		b |= (uint64_t)p[left] << (8 * left);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static struct hmap_slot *
find(const struct hmap *m, const void *key, size_t len, uint64_t h)
{
	size_t mask = m->hm_cap - 1, i;

	for (i = h & mask;; i = (i + 1) & mask) {
		struct hmap_slot *s = &m->hm_slots[i];

		if (s->hs_key == NULL)
			return s;
		if (s->hs_hash == h && s->hs_keylen == len &&
		    memcmp(s->hs_key, key, len) == 0)
			return s;
	}
}

static void
grow(struct hmap *m)
{
	struct hmap old = *m;
	size_t	    i;

	m->hm_cap = old.hm_cap ? old.hm_cap * 2 : 16;
	if ((m->hm_slots = calloc(m->hm_cap, sizeof(*m->hm_slots))) == NULL)
		fatal("hmap grow");
	for (i = 0; i < old.hm_cap; i++) {
		struct hmap_slot *s = &old.hm_slots[i];

		if (s->hs_key)
			*find(m, s->hs_key, s->hs_keylen, s->hs_hash) = *s;
	}
	free(old.hm_slots);
}

void *
hmap_get(const struct hmap *m, const void *key, size_t len)
{
	struct hmap_slot *s;

	if (m->hm_n == 0)
		return NULL;
	s = find(m, key, len, hmap_hash(key, len));
	return s->hs_key ? s->hs_val : NULL;
}

void *
hmap_put(struct hmap *m, const void *key, size_t len, void *val)
{
	struct hmap_slot *s;
	uint64_t	  h = hmap_hash(key, len);
	void		 *old;

	/* Keep the load under 3/4 so probes stay short. */
	if ((m->hm_n + 1) * 4 > m->hm_cap * 3)
		grow(m);
	s = find(m, key, len, h);
	if (s->hs_key) {
		old = s->hs_val;
		s->hs_val = val;
		return old;
	}
	if ((s->hs_key = malloc(len ? len : 1)) == NULL)
		fatal("hmap_put");
	memcpy(s->hs_key, key, len);
	s->hs_keylen = len;
	s->hs_hash = h;
	s->hs_val = val;
	m->hm_n++;
	return NULL;
}

void *
hmap_del(struct hmap *m, const void *key, size_t len)
{
	struct hmap_slot *s;
	size_t		  mask, i, j, home;
	void		 *val;

	if (m->hm_n == 0)
		return NULL;
	s = find(m, key, len, hmap_hash(key, len));
	if (s->hs_key == NULL)
		return NULL;
	val = s->hs_val;
	free(s->hs_key);
	memset(s, 0, sizeof(*s));
	m->hm_n--;
	/* Backward-shift the cluster behind the hole. */
	mask = m->hm_cap - 1;
	i = (size_t)(s - m->hm_slots);
	for (j = (i + 1) & mask; m->hm_slots[j].hs_key; j = (j + 1) & mask) {
		home = m->hm_slots[j].hs_hash & mask;
		/* Move j into the hole i unless its home lies in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			m->hm_slots[i] = m->hm_slots[j];
			memset(&m->hm_slots[j], 0, sizeof(m->hm_slots[j]));
			i = j;
		}
	}
	return val;
}

void
hmap_free(struct hmap *m)
{
	size_t i;

	for (i = 0; i < m->hm_cap; i++)
		free(m->hm_slots[i].hs_key);
	free(m->hm_slots);
	m->hm_slots = NULL;
	m->hm_cap = m->hm_n = 0;
}

int
hmap_next(const struct hmap *m, size_t *it, const void **key, size_t *len,
    void **val)
{
	while (*it < m->hm_cap) {
		struct hmap_slot *s = &m->hm_slots[(*it)++];

		if (s->hs_key) {
			if (key)
				*key = s->hs_key;
			if (len)
				*len = s->hs_keylen;
			if (val)
				*val = s->hs_val;
			return 1;
		}
	}
	return 0;
}
