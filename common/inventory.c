/*
 * inventory.c: the repositories, roots, descendants and participants
 * derived from accepted events (see inventory.h).  Built by relayd, syncd
 * and historyd from the store at start and kept current as events are
 * accepted.
 */
#include <sys/mman.h>
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "event.h"
#include "feed.h"
#include "inventory.h"
#include "log.h"
#include "mem.h"
#include "relayurl.h"

/*
 * What an id or address leads to: the roots it descends from.  Almost
 * every node has one root, kept inline; the others, of the few nodes
 * with more, are in iv_more (node_root()).  A rebuild makes one node per
 * stored descendant, so nodes, like authors, are records in chunks freed
 * with the inventory (one allocation each would dominate start-up), known
 * by number: chunk number << rc_shift, plus the place in it.  Every
 * role's copy holds one per descendant: 48 bytes, not 64.
 */
struct inv_node {
	uint8_t nd_id[EVENT_ID_LEN]; /* the event's id; zero for an address */
	struct inv_root *nd_first;   /* root 0 */
	/* A descendant's author (its number plus one; 0 for an address,
	 * or once the author deleted it), for NIP-09 deletions. */
	uint32_t	 nd_author;
	uint16_t	 nd_n;
	uint8_t		 nd_depth; /* 0 for a root itself */
};

/* Chunks of these are whole huge pages (INV_NODE_SHIFT, INV_REC_SHIFT). */
_Static_assert(sizeof(struct inv_node) == 48, "a node is 48 bytes");
_Static_assert(sizeof(struct inv_root) == 128, "a root is 128 bytes");

/* A node's roots 1 .. nd_n - 1 (iv_more), grown by doubling. */
struct inv_more {
	struct inv_root **mo_roots;
	size_t		  mo_cap;
};

/* Ours: the most roots one node keeps (nd_n's bits; an address
 * descends from each root any of its versions named). */
#define INV_NODE_ROOTS UINT16_MAX

/*
 * Ours: 1 << INV_REC_SHIFT records per chunk (2.5 MiB of authors, 4 MiB
 * of roots); nodes
 * 1 << INV_NODE_SHIFT, 6 MiB, three whole huge pages (a chunk of 1.5 MiB
 * would take a huge page of 2).
 */
#define INV_REC_SHIFT  15
#define INV_NODE_SHIFT 17

/*
 * Event ids find their nodes, and pubkeys their authors, through an
 * inv_index: open addressing, linear probing, at most 3/4 full, never
 * shrunk (neither is ever removed).  A slot holds the upper 32 bits of
 * the key's keyed hash (hmap_hash(), so that ids ground by a peer cannot
 * pile up), which also choose the home slot, and the record's number plus
 * one; 0 is empty.  A probe reads a record only when its hash bits match,
 * no key is allocated, and growing moves slots without hashing again.
 */
#define ID_TAG(h)   ((uint32_t)((h) >> 32))
#define SLOT_TAG(s) ((uint32_t)((s) >> 32))
#define SLOT_NUM(s) ((size_t)((s)&0xffffffffu) - 1)

/* The key of record num. */
typedef const uint8_t *inv_key_fn(const struct inventory *, size_t num);

static struct inv_root *
node_root(const struct inventory *iv, const struct inv_node *nd, size_t i)
{
	const struct inv_more *mo;

	if (i == 0)
		return nd->nd_first;
	mo = hmap_get(&iv->iv_more, &nd, sizeof(nd));
	return mo->mo_roots[i - 1];
}

static void *
rec_at(const struct inv_recs *rc, size_t size, size_t num)
{
	return rc->rc_chunks[num >> rc->rc_shift] +
	    (num & (((size_t)1 << rc->rc_shift) - 1)) * size;
}

static struct inv_node *
node_at(const struct inventory *iv, size_t num)
{
	return rec_at(&iv->iv_nodes, sizeof(struct inv_node), num);
}

static struct inv_author *
author_at(const struct inventory *iv, size_t num)
{
	return rec_at(&iv->iv_authors, sizeof(struct inv_author), num);
}

static const uint8_t *
node_key(const struct inventory *iv, size_t num)
{
	return node_at(iv, num)->nd_id;
}

static const uint8_t *
author_key(const struct inventory *iv, size_t num)
{
	return author_at(iv, num)->au_pubkey;
}

/* Ours: parent ids (e, E, q values) decoded ahead per event; further
 * ones are decoded when the event's turn comes. */
#define INV_KEY_IDS 4

/*
 * What inv_add() needs to know of an event before it looks anything up:
 * the hashes of its id and pubkey, and its first distinct parent ids
 * decoded and hashed.  A rebuild works them out FEED_AHEAD events ahead
 * (feed_scan_ahead()) and meanwhile prefetches, one step at a time, the
 * slots, records and roots they lead to, so that those are in cache when
 * the event's turn comes; a live event has them worked out on the spot.
 * Only the hashes and ids are used: the rest is a guess at what memory
 * will be read, and may be stale.
 */
struct inv_keys {
	const struct event *ik_ev;
	uint64_t	    ik_hid; /* of ik_ev->id */
	uint64_t	    ik_hpk; /* of ik_ev->pubkey */
	uint32_t	    ik_nids;
	uint32_t	    ik_tag[INV_KEY_IDS]; /* the tags they are in */
	uint8_t		    ik_ids[INV_KEY_IDS][32];
	uint64_t	    ik_h[INV_KEY_IDS];
	/* Guesses: the parents' nodes and roots, the author. */
	ssize_t		    ik_node[INV_KEY_IDS];
	struct inv_root	   *ik_root[INV_KEY_IDS];
	ssize_t		    ik_author;
};

/* Roots that name a repository the inventory does not know (yet). */
struct inv_pending {
	struct inv_root **pd_roots;
	size_t		  pd_n;
	size_t		  pd_cap;
};

/*
 * Room for one more in arr, doubled from first when full.  cap may be
 * narrower than size_t (a node's nd_cap is 32 bits: no node has 2^32
 * roots).
 */
#define GROW_FROM(arr, n, cap, first) \
	do { \
		if ((n) == (cap)) { \
			size_t nc_ = (cap) ? (cap)*2 : (first); \
			void  *np_ = reallocarray((arr), nc_, sizeof(*(arr))); \
			if (np_ == NULL) \
				fatal("inventory"); \
			(arr) = np_; \
			(cap) = (__typeof__(cap))nc_; \
		} \
	} while (0)
#define GROW(arr, n, cap) GROW_FROM(arr, n, cap, 4)
/* Ours: an author's roots start with room for this many (a rebuild spent
 * its time in realloc() from 4). */
#define INV_FIRST_ROOM	  16
/* Ours: but a thread's descendants from 4: most threads have a few, and
 * every copy keeps a list for each thread (64 bytes for 16 held 1 to 3
 * on the 'ingest fill' stores). */
#define INV_FIRST_DESC	  4

/* Ours: a huge page (x86-64, arm64 with 4 KiB pages). */
#define INV_HUGE ((size_t)2 << 20)

/*
 * Memory for one of the large arrays (record chunks, index slots), in
 * huge pages where the kernel offers them for the asking (transparent
 * huge pages in "madvise" mode): a rebuild touches them at random, and
 * with 4 KiB pages its time went to TLB misses and page faults.  The
 * advice is only advice; free() releases it.
 */
static void *
big_alloc(size_t size)
{
	void *p;

	if (posix_memalign(&p, INV_HUGE, size) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, size, MADV_HUGEPAGE);
#endif
	return p;
}

/* A new record of size bytes, zeroed; its number in *num. */
static void *
rec_new(struct inv_recs *rc, size_t size, size_t *num)
{
	void *r;

	if (rc->rc_n >= UINT32_MAX - 1)
		fatalx("inventory: too many records");
	if (rc->rc_n == rc->rc_nchunks << rc->rc_shift) {
		GROW(rc->rc_chunks, rc->rc_nchunks, rc->rc_capchunks);
		/* The first one is paged in as it fills: small stores keep
		 * small inventories. */
		rc->rc_chunks[rc->rc_nchunks] = rc->rc_nchunks == 0 ?
		    malloc(size << rc->rc_shift) :
		    big_alloc(size << rc->rc_shift);
		if (rc->rc_chunks[rc->rc_nchunks++] == NULL)
			fatal("inventory");
	}
	*num = rc->rc_n++;
	r = rec_at(rc, size, *num);
	memset(r, 0, size);
	return r;
}

static void
recs_free(struct inv_recs *rc)
{
	strv_free(rc->rc_chunks, rc->rc_nchunks);
}

/* The slot of k (hash h) in ix, or the empty slot it would take. */
static uint64_t *
ix_slot(const struct inventory *iv, const struct inv_index *ix, inv_key_fn *key,
    const uint8_t k[32], uint64_t h)
{
	size_t	  mask = ix->ix_cap - 1, i;
	uint64_t *s;

	for (i = ID_TAG(h) & mask;; i = (i + 1) & mask) {
		s = &ix->ix_slots[i];
		if (*s == 0 ||
		    (SLOT_TAG(*s) == ID_TAG(h) &&
			memcmp(key(iv, SLOT_NUM(*s)), k, 32) == 0))
			return s;
	}
}

static void
ix_grow(struct inv_index *ix)
{
	uint64_t *old = ix->ix_slots;
	size_t	  oldcap = ix->ix_cap, size, mask, i, j;

	ix->ix_cap = oldcap ? oldcap * 2 : 1024;
	size = ix->ix_cap * sizeof(*ix->ix_slots);
	if (size < INV_HUGE)
		ix->ix_slots = calloc(ix->ix_cap, sizeof(*ix->ix_slots));
	else if ((ix->ix_slots = big_alloc(size)) != NULL)
		memset(ix->ix_slots, 0, size);
	if (ix->ix_slots == NULL)
		fatal("inventory");
	mask = ix->ix_cap - 1;
	for (i = 0; i < oldcap; i++) {
		if (old[i] == 0)
			continue;
		j = SLOT_TAG(old[i]) & mask;
		while (ix->ix_slots[j] != 0)
			j = (j + 1) & mask;
		ix->ix_slots[j] = old[i];
	}
	free(old);
}

/* The number of k's record in ix (k's hash h), or -1. */
static ssize_t
ix_find(const struct inventory *iv, const struct inv_index *ix, inv_key_fn *key,
    const uint8_t k[32], uint64_t h)
{
	uint64_t *s;

	if (ix->ix_n == 0)
		return -1;
	s = ix_slot(iv, ix, key, k, h);
	return *s ? (ssize_t)SLOT_NUM(*s) : -1;
}

/*
 * The slot of k (hash h) in ix, room made: k's if present, else the
 * empty slot that ix_fill() gives k once its record is made.
 */
static uint64_t *
ix_place(struct inventory *iv, struct inv_index *ix, inv_key_fn *key,
    const uint8_t k[32], uint64_t h)
{
	if ((ix->ix_n + 1) * 4 > ix->ix_cap * 3)
		ix_grow(ix);
	return ix_slot(iv, ix, key, k, h);
}

/*
 * A guess at the number of the record the key of hash h has in ix: the
 * first of the first two slots from its home whose hash bits match, or
 * -1.  The key is not compared: what the guess leads to is only
 * prefetched.
 */
static ssize_t
ix_guess(const struct inv_index *ix, uint64_t h)
{
	size_t mask = ix->ix_cap - 1, i, k;

	if (ix->ix_n == 0)
		return -1;
	for (i = ID_TAG(h) & mask, k = 0; k < 2; k++, i = (i + 1) & mask) {
		if (ix->ix_slots[i] == 0)
			return -1;
		if (SLOT_TAG(ix->ix_slots[i]) == ID_TAG(h))
			return (ssize_t)SLOT_NUM(ix->ix_slots[i]);
	}
	return -1;
}

/* Prefetches the home slot of the key of hash h in ix. */
static void
ix_prefetch(const struct inv_index *ix, uint64_t h)
{
	if (ix->ix_cap > 0)
		__builtin_prefetch(&ix->ix_slots[ID_TAG(h) & (ix->ix_cap - 1)]);
}

static void
ix_fill(struct inv_index *ix, uint64_t *s, uint64_t h, size_t num)
{
	*s = (uint64_t)ID_TAG(h) << 32 | (uint64_t)(num + 1);
	ix->ix_n++;
}

/* id's node (h is id's hash), or NULL. */
static struct inv_node *
id_node_h(const struct inventory *iv, const uint8_t id[EVENT_ID_LEN],
    uint64_t h)
{
	ssize_t num = ix_find(iv, &iv->iv_ids, node_key, id, h);

	return num == -1 ? NULL : node_at(iv, (size_t)num);
}

/*
 * id's node (h is id's hash), made if new; its depth lowered to depth if
 * deeper.  Its number in *num.
 */
static struct inv_node *
id_node_get(struct inventory *iv, const uint8_t id[EVENT_ID_LEN], uint64_t h,
    int depth, size_t *num)
{
	struct inv_node *nd;
	uint64_t	*s;

	s = ix_place(iv, &iv->iv_ids, node_key, id, h);
	if (*s != 0) {
		*num = SLOT_NUM(*s);
		nd = node_at(iv, *num);
		if (depth < nd->nd_depth)
			nd->nd_depth = (uint8_t)depth;
		return nd;
	}
	nd = rec_new(&iv->iv_nodes, sizeof(*nd), num);
	nd->nd_depth = (uint8_t)depth;
	memcpy(nd->nd_id, id, 32);
	ix_fill(&iv->iv_ids, s, h, *num);
	return nd;
}

struct inventory *
inv_new(const struct config *cfg)
{
	return inv_new_parts(cfg, INV_ALL);
}

struct inventory *
inv_new_parts(const struct config *cfg, unsigned parts)
{
	struct inventory *iv;
	char		  self[4][RELAYURL_MAX + 1];
	int		  n, i;

	if ((iv = calloc(1, sizeof(*iv))) == NULL)
		fatal("inv_new");
	iv->iv_parts = parts;
	iv->iv_nodes.rc_shift = INV_NODE_SHIFT;
	iv->iv_rootrecs.rc_shift = INV_REC_SHIFT;
	iv->iv_authors.rc_shift = INV_REC_SHIFT;
	iv->iv_urlflags =
	    cfg && cfg->sync_allow_private_targets ? RELAYURL_ALLOW_PRIVATE : 0;
	n = cfg && cfg->domain ? relayurl_self_keys(cfg->domain, self, 4) : 0;
	if (n > 0) {
		if ((iv->iv_self = calloc((size_t)n, sizeof(*iv->iv_self))) ==
		    NULL)
			fatal("inv_new");
		for (i = 0; i < n; i++)
			snprintf(iv->iv_self[i], sizeof(iv->iv_self[i]), "%s",
			    self[i]);
		iv->iv_nself = n;
	}
	return iv;
}

static void
repo_free(struct inv_repo *r)
{
	strv_free(r->ir_relays, r->ir_nrelays);
	free(r->ir_maint);
	free(r->ir_roots);
	free(r->ir_coord);
	free(r->ir_d);
	free(r);
}

static void
root_free(struct inv_root *rt)
{
	strv_free(rt->rt_addrs, rt->rt_naddrs);
	free(rt->rt_desc);
}

void
inv_free(struct inventory *iv)
{
	size_t it;
	void  *v;

	if (iv == NULL)
		return;
	for (it = 0; hmap_next(&iv->iv_repos, &it, NULL, NULL, &v);)
		repo_free(v);
	for (it = 0; it < iv->iv_nroots; it++)
		root_free(iv->iv_roots[it]);
	free(iv->iv_roots);
	recs_free(&iv->iv_rootrecs);
	for (it = 0; hmap_next(&iv->iv_coords, &it, NULL, NULL, &v);)
		free(v);
	hmap_free(&iv->iv_coords);
	for (it = 0; hmap_next(&iv->iv_more, &it, NULL, NULL, &v);) {
		free(((struct inv_more *)v)->mo_roots);
		free(v);
	}
	hmap_free(&iv->iv_more);
	for (it = 0; it < iv->iv_authors.rc_n; it++) {
		free(author_at(iv, it)->au_roots);
		free(author_at(iv, it)->au_set);
	}
	recs_free(&iv->iv_nodes);
	recs_free(&iv->iv_authors);
	free(iv->iv_ids.ix_slots);
	free(iv->iv_pubkeys.ix_slots);
	hmap_free(&iv->iv_addrs);
	for (it = 0; hmap_next(&iv->iv_pending, &it, NULL, NULL, &v);) {
		free(((struct inv_pending *)v)->pd_roots);
		free(v);
	}
	hmap_free(&iv->iv_repos);
	hmap_free(&iv->iv_pending);
	free(iv->iv_self);
	free(iv);
}

static int
is_self(const struct inventory *iv, const char *key)
{
	const char *keys[4];
	int	    i;

	for (i = 0; i < iv->iv_nself && i < 4; i++)
		keys[i] = iv->iv_self[i];
	return relayurl_is_self(key, keys, (size_t)iv->iv_nself);
}

/* Adds a canonical key for raw (ws/wss URL) to out unless present. */
static size_t
add_relay(const struct inventory *iv, const char *raw, size_t len, char **out,
    size_t n, size_t max, size_t *refused)
{
	char	    key[RELAYURL_MAX + 1];
	const char *why;
	size_t	    i;

	if (relayurl_canon(raw, len, iv->iv_urlflags, key, sizeof(key), &why) ==
	    -1) {
		(*refused)++;
		return n;
	}
	if (n >= max || is_self(iv, key))
		return n;
	for (i = 0; i < n; i++)
		if (strcmp(out[i], key) == 0)
			return n;
	out[n] = xstrndup(key, strlen(key));
	return n + 1;
}

size_t
inv_announcement_relays(const struct inventory *iv, const struct event *ev,
    char **out, size_t max, size_t *refused)
{
	size_t	 n = 0, nrefused = 0;
	uint32_t i, j;
	char	 buf[RELAYURL_MAX + 16];

	for (i = 0; i < ev->ntags; i++) {
		const struct event_tag *t = &ev->tags[i];
		int			relays, clone;

		relays = strcmp(t->v[0].s, "relays") == 0;
		clone = strcmp(t->v[0].s, "clone") == 0;
		for (j = 1; j < t->n && (relays || clone); j++) {
			const char *v = t->v[j].s, *host, *end;
			int	    tls;

			if (relays) {
				n = add_relay(iv, v, t->v[j].len, out, n, max,
				    &nrefused);
				continue;
			}
			/* http(s)://host[:port]/... -> ws(s)://host[:port] */
			if (strncasecmp(v, "https://", 8) == 0) {
				tls = 1;
				host = v + 8;
			} else if (strncasecmp(v, "http://", 7) == 0) {
				tls = 0;
				host = v + 7;
			} else
				continue;
			end = host + strcspn(host, "/?#");
			if (end == host || (size_t)(end - host) > RELAYURL_MAX)
				continue;
			snprintf(buf, sizeof(buf), "%s://%.*s",
			    tls ? "wss" : "ws", (int)(end - host), host);
			n = add_relay(iv, buf, strlen(buf), out, n, max,
			    &nrefused);
		}
	}
	if (refused != NULL)
		*refused = nrefused;
	return n;
}

/* pk's author (h is pk's hash), made if new. */
static struct inv_author *
author_get(struct inventory *iv, const uint8_t pk[PUBKEY_LEN], uint64_t h)
{
	struct inv_author *a;
	uint64_t	  *s;
	size_t		   num;

	s = ix_place(iv, &iv->iv_pubkeys, author_key, pk, h);
	if (*s != 0)
		return author_at(iv, SLOT_NUM(*s));
	a = rec_new(&iv->iv_authors, sizeof(*a), &num);
	memcpy(a->au_pubkey, pk, 32);
	a->au_num = (uint32_t)num;
	ix_fill(&iv->iv_pubkeys, s, h, num);
	return a;
}

/* Puts rt in a's set; 0 if it was there already, 1 if added. */
static int
author_set_put(struct inv_author *a, struct inv_root *rt)
{
	size_t	 mask = a->au_setcap - 1, i;
	uint32_t key = rt->rt_num + 1;

	i = (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
	for (; a->au_set[i] != 0; i = (i + 1) & mask)
		if (a->au_set[i] == key)
			return 0;
	a->au_set[i] = key;
	return 1;
}

/* Makes a's set hold its roots list at most half full. */
static void
author_set_grow(struct inv_author *a)
{
	size_t cap = a->au_setcap ? a->au_setcap : 64, i;

	while (cap < 2 * (a->au_nroots + 1))
		cap *= 2;
	if (cap == a->au_setcap)
		return;
	free(a->au_set);
	if ((a->au_set = calloc(cap, sizeof(*a->au_set))) == NULL)
		fatal("inventory");
	a->au_setcap = cap;
	for (i = 0; i < a->au_nroots; i++)
		author_set_put(a, a->au_roots[i]);
}

/* Adds rt to pk's roots (h is pk's hash); returns pk's author. */
static struct inv_author *
author_add_root(struct inventory *iv, const uint8_t pk[PUBKEY_LEN], uint64_t h,
    struct inv_root *rt)
{
	struct inv_author *a = author_get(iv, pk, h);
	size_t		   i;

	if (a->au_nroots < INV_AUTHOR_SCAN) {
		for (i = 0; i < a->au_nroots; i++)
			if (a->au_roots[i] == rt)
				return a;
	} else {
		author_set_grow(a);
		if (!author_set_put(a, rt))
			return a;
	}
	GROW_FROM(a->au_roots, a->au_nroots, a->au_caproots, INV_FIRST_ROOM);
	a->au_roots[a->au_nroots++] = rt;
	return a;
}

/* Takes rt out of a's roots (NIP-09: a's last event in its thread). */
static void
author_remove_root(struct inv_author *a, struct inv_root *rt)
{
	size_t i;

	for (i = 0; i < a->au_nroots && a->au_roots[i] != rt; i++)
		;
	if (i == a->au_nroots)
		return;
	a->au_roots[i] = a->au_roots[--a->au_nroots];
	if (a->au_set != NULL) {
		/* Deletions are rare: the set is made again. */
		free(a->au_set);
		a->au_set = NULL;
		a->au_setcap = 0;
		if (a->au_nroots >= INV_AUTHOR_SCAN)
			author_set_grow(a);
	}
}

/* The same for an address coordinate. */
static struct inv_node *
addr_node_get(struct inventory *iv, const char *addr, int depth)
{
	struct inv_node *nd = hmap_get(&iv->iv_addrs, addr, strlen(addr));
	size_t		 num;

	if (nd == NULL) {
		nd = rec_new(&iv->iv_nodes, sizeof(*nd), &num);
		nd->nd_depth = (uint8_t)depth;
		hmap_put(&iv->iv_addrs, addr, strlen(addr), nd);
	} else if (depth < nd->nd_depth)
		nd->nd_depth = (uint8_t)depth;
	return nd;
}

static int
node_add_root(struct inventory *iv, struct inv_node *nd, struct inv_root *rt)
{
	struct inv_more *mo = NULL;
	size_t		 i, more;

	if (nd->nd_n > 1)
		mo = hmap_get(&iv->iv_more, &nd, sizeof(nd));
	for (i = 0; i < nd->nd_n; i++)
		if ((i == 0 ? nd->nd_first : mo->mo_roots[i - 1]) == rt)
			return 0;
	if (nd->nd_n == INV_NODE_ROOTS)
		return 0;
	if (nd->nd_n == 0)
		nd->nd_first = rt;
	else {
		if (mo == NULL) {
			if ((mo = calloc(1, sizeof(*mo))) == NULL)
				fatal("inventory");
			hmap_put(&iv->iv_more, &nd, sizeof(nd), mo);
		}
		more = nd->nd_n - 1;
		GROW(mo->mo_roots, more, mo->mo_cap);
		mo->mo_roots[more] = rt;
	}
	nd->nd_n++;
	return 1;
}

static void
repo_attach_root(struct inv_repo *r, struct inv_root *rt)
{
	/* rt_repo is r exactly while rt is in ir_roots: no search (a
	 * repository's roots number in the thousands). */
	if (rt->rt_repo == r)
		return;
	rt->rt_repo = r;
	GROW(r->ir_roots, r->ir_nroots, r->ir_caproots);
	r->ir_roots[r->ir_nroots++] = rt;
}

static void
repo_detach_root(struct inv_repo *r, struct inv_root *rt)
{
	size_t i;

	for (i = 0; i < r->ir_nroots; i++) {
		if (r->ir_roots[i] == rt) {
			r->ir_roots[i] = r->ir_roots[--r->ir_nroots];
			break;
		}
	}
	rt->rt_repo = NULL;
}

static void
pending_add(struct inventory *iv, struct inv_root *rt)
{
	struct inv_pending *pd =
	    hmap_get(&iv->iv_pending, rt->rt_coord, strlen(rt->rt_coord));

	if (pd == NULL) {
		if ((pd = calloc(1, sizeof(*pd))) == NULL)
			fatal("inventory");
		hmap_put(&iv->iv_pending, rt->rt_coord, strlen(rt->rt_coord),
		    pd);
	}
	GROW(pd->pd_roots, pd->pd_n, pd->pd_cap);
	pd->pd_roots[pd->pd_n++] = rt;
}

const struct estr *
inv_root_repo(const struct event *ev)
{
	uint32_t i;

	for (i = 0; i < ev->ntags; i++)
		if (ev->tags[i].n >= 2 &&
		    strcmp(ev->tags[i].v[0].s, "a") == 0 &&
		    strncmp(ev->tags[i].v[1].s, "30617:", 6) == 0)
			return &ev->tags[i].v[1];
	return NULL;
}

void
inv_event_addr(const struct event *ev, char *out, size_t len)
{
	enum kind_class kc = event_kind_class(ev->kind);

	out[0] = '\0';
	if (kc == KIND_ADDRESSABLE || kc == KIND_REPLACEABLE)
		snprintf(out, len, "%u:%s:%s", ev->kind, ev->pubkey_hex,
		    kc == KIND_ADDRESSABLE ? event_d(ev) : "");
}

int
inv_id_parent_tag(const struct event_tag *tg)
{
	return tg->n >= 2 && tg->v[0].len == 1 &&
	    (tg->v[0].s[0] == 'e' || tg->v[0].s[0] == 'E' ||
		tg->v[0].s[0] == 'q');
}

int
inv_addr_parent_tag(const struct event_tag *tg)
{
	return tg->n >= 2 && tg->v[0].len == 1 &&
	    (tg->v[0].s[0] == 'a' || tg->v[0].s[0] == 'A' ||
		tg->v[0].s[0] == 'q');
}

static int
same_value(const struct estr *a, const struct estr *b)
{
	return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* Works out k for ev (the first step ahead: the slots prefetched). */
static void
keys_make(const struct inventory *iv, const struct event *ev,
    struct inv_keys *k)
{
	uint32_t t, i;

	k->ik_ev = ev;
	k->ik_hid = hmap_hash(ev->id, 32);
	k->ik_hpk = hmap_hash(ev->pubkey, 32);
	ix_prefetch(&iv->iv_ids, k->ik_hid);
	ix_prefetch(&iv->iv_pubkeys, k->ik_hpk);
	k->ik_author = -1;
	k->ik_nids = 0;
	for (t = 0; t < ev->ntags && k->ik_nids < INV_KEY_IDS; t++) {
		const struct event_tag *tg = &ev->tags[t];
		uint8_t		       *id = k->ik_ids[k->ik_nids];

		if (!inv_id_parent_tag(tg))
			continue;
		/* NIP-22 names a top-level comment's root twice (E, e). */
		for (i = 0; i < k->ik_nids; i++)
			if (same_value(&ev->tags[k->ik_tag[i]].v[1], &tg->v[1]))
				break;
		if (i < k->ik_nids ||
		    hex_decode(tg->v[1].s, tg->v[1].len, id, 32) == -1)
			continue;
		k->ik_tag[i] = t;
		k->ik_h[i] = hmap_hash(id, 32);
		k->ik_node[i] = -1;
		k->ik_root[i] = NULL;
		ix_prefetch(&iv->iv_ids, k->ik_h[i]);
		k->ik_nids++;
	}
}

/* The second step: the records the slots hold, prefetched. */
static void
keys_records(const struct inventory *iv, struct inv_keys *k)
{
	struct inv_author *a;
	uint32_t	   i;

	for (i = 0; i < k->ik_nids; i++)
		if ((k->ik_node[i] = ix_guess(&iv->iv_ids, k->ik_h[i])) != -1)
			__builtin_prefetch(node_at(iv, (size_t)k->ik_node[i]));
	if ((k->ik_author = ix_guess(&iv->iv_pubkeys, k->ik_hpk)) != -1) {
		a = author_at(iv, (size_t)k->ik_author);
		__builtin_prefetch(a);
		__builtin_prefetch(&a->au_caproots);
	}
}

/* The third step: the parents' roots and the author's roots list. */
static void
keys_roots(const struct inventory *iv, struct inv_keys *k)
{
	struct inv_root	  *rt;
	struct inv_author *a;
	uint32_t	   i;

	for (i = 0; i < k->ik_nids; i++) {
		if (k->ik_node[i] == -1 ||
		    (rt = node_at(iv, (size_t)k->ik_node[i])->nd_first) == NULL)
			continue;
		k->ik_root[i] = rt;
		__builtin_prefetch(rt);
		__builtin_prefetch(&rt->rt_capdesc);
	}
	if (k->ik_author != -1) {
		a = author_at(iv, (size_t)k->ik_author);
		if (a->au_roots != NULL)
			__builtin_prefetch(a->au_roots);
		if (a->au_nroots > 8 && a->au_nroots <= INV_AUTHOR_SCAN)
			__builtin_prefetch(a->au_roots + 8);
	}
}

/* The last step: where the parents' roots add a descendant. */
static void
keys_descs(struct inv_keys *k)
{
	uint32_t i;

	for (i = 0; i < k->ik_nids; i++)
		if (k->ik_root[i] != NULL && k->ik_root[i]->rt_desc != NULL)
			__builtin_prefetch(k->ik_root[i]->rt_desc +
				k->ik_root[i]->rt_ndesc,
			    1);
}

/*
 * The id and hash of the parent named by value v in ev's tag t, from k
 * if k has them: 0, or -1 if v is not an id.
 */
static int
parent_id(const struct inv_keys *k, uint32_t t, const struct estr *v,
    uint8_t id[EVENT_ID_LEN], uint64_t *h)
{
	uint32_t i;

	for (i = 0; i < k->ik_nids; i++)
		if (k->ik_tag[i] == t) {
			memcpy(id, k->ik_ids[i], 32);
			*h = k->ik_h[i];
			return 0;
		}
	if (hex_decode(v->s, v->len, id, 32) == -1)
		return -1;
	*h = hmap_hash(id, 32);
	return 0;
}

static void
add_announcement(struct inventory *iv, const struct event *ev,
    enum inv_level level)
{
	struct inv_repo	   *r;
	struct inv_pending *pd;
	const struct estr  *d = event_tag_value(ev, "d");
	char		    coord[INV_COORD_MAX], *relays[INV_MAX_REPO_RELAYS];
	const struct event_tag *mt = NULL;
	size_t			i, n;
	uint32_t		k;

	if (d == NULL || d->len == 0 || d->len > 1000)
		return;
	snprintf(coord, sizeof(coord), "30617:%s:%s", ev->pubkey_hex, d->s);
	r = hmap_get(&iv->iv_repos, coord, strlen(coord));
	if (r != NULL) {
		/* Never downgrade; older announcements change nothing. */
		if (level == INV_STATE_ONLY && r->ir_level == INV_FULL)
			return;
		if (ev->created_at < r->ir_created_at && level <= r->ir_level)
			return;
	} else {
		if ((r = calloc(1, sizeof(*r))) == NULL)
			fatal("inventory");
		r->ir_coord = xstrndup(coord, strlen(coord));
		memcpy(r->ir_owner, ev->pubkey, 32);
		r->ir_d = xstrndup(d->s, d->len);
		hmap_put(&iv->iv_repos, coord, strlen(coord), r);
	}
	if (level > r->ir_level)
		r->ir_level = level;
	if (ev->created_at >= r->ir_created_at) {
		r->ir_created_at = ev->created_at;
		strv_free(r->ir_relays, r->ir_nrelays);
		n = inv_announcement_relays(iv, ev, relays, INV_MAX_REPO_RELAYS,
		    &r->ir_refused);
		r->ir_relays = NULL;
		r->ir_nrelays = 0;
		if (n) {
			if ((r->ir_relays = calloc(n, sizeof(char *))) == NULL)
				fatal("inventory");
			memcpy(r->ir_relays, relays, n * sizeof(char *));
			r->ir_nrelays = n;
		}
		/* The first "maintainers" tag (reference brief 1.3). */
		for (k = 0; k < ev->ntags && mt == NULL; k++)
			if (strcmp(ev->tags[k].v[0].s, "maintainers") == 0)
				mt = &ev->tags[k];
		free(r->ir_maint);
		r->ir_maint = NULL;
		r->ir_nmaint = 0;
		if (mt && mt->n > 1) {
			if ((r->ir_maint = calloc(mt->n - 1, 32)) == NULL)
				fatal("inventory");
			for (k = 1; k < mt->n; k++)
				if (hex_decode(mt->v[k].s, mt->v[k].len,
					r->ir_maint[r->ir_nmaint], 32) == 0)
					r->ir_nmaint++;
		}
	}
	/* Roots that were waiting for this repository attach now. */
	if ((pd = hmap_del(&iv->iv_pending, coord, strlen(coord))) != NULL) {
		for (i = 0; i < pd->pd_n; i++)
			if (!pd->pd_roots[i]->rt_deleted)
				repo_attach_root(r, pd->pd_roots[i]);
		free(pd->pd_roots);
		free(pd);
	}
	iv->iv_generation++;
}

/*
 * The root whose own node nd is, or NULL: a root's node is the one node
 * of depth 0, made with the root as its first (see add_root()).
 */
static struct inv_root *
node_own_root(const struct inv_node *nd)
{
	return nd->nd_depth == 0 ? nd->nd_first : NULL;
}

/* The root of id (hash h), or NULL. */
static struct inv_root *
root_find(const struct inventory *iv, const uint8_t id[EVENT_ID_LEN],
    uint64_t h)
{
	const struct inv_node *nd = id_node_h(iv, id, h);

	return nd != NULL ? node_own_root(nd) : NULL;
}

/* The inventory's one copy of coordinate c. */
static const char *
coord_copy(struct inventory *iv, const struct estr *c)
{
	char *s = hmap_get(&iv->iv_coords, c->s, c->len);

	if (s == NULL) {
		s = xstrndup(c->s, c->len);
		hmap_put(&iv->iv_coords, c->s, c->len, s);
	}
	return s;
}

static void
add_root(struct inventory *iv, const struct event *ev, const struct inv_keys *k)
{
	const struct estr *a;
	struct inv_root	  *rt;
	struct inv_repo	  *r;
	struct inv_node	  *nd;
	size_t		   num;

	if ((a = inv_root_repo(ev)) == NULL ||
	    root_find(iv, ev->id, k->ik_hid) != NULL)
		return;
	/* Roots are never freed before the inventory: records, with no
	 * allocation of their own. */
	rt = rec_new(&iv->iv_rootrecs, sizeof(*rt), &num);
	rt->rt_num = (uint32_t)num;
	memcpy(rt->rt_id, ev->id, 32);
	memcpy(rt->rt_author, ev->pubkey, 32);
	rt->rt_kind = ev->kind;
	rt->rt_coord = coord_copy(iv, a);
	GROW(iv->iv_roots, iv->iv_nroots, iv->iv_caproots);
	iv->iv_roots[iv->iv_nroots++] = rt;
	nd = id_node_get(iv, ev->id, k->ik_hid, 0, &num);
	node_add_root(iv, nd, rt);
	if (iv->iv_parts & INV_AUTHORS)
		author_add_root(iv, ev->pubkey, k->ik_hpk, rt);
	if ((r = hmap_get(&iv->iv_repos, a->s, a->len)) != NULL)
		repo_attach_root(r, rt);
	else
		pending_add(iv, rt);
	iv->iv_generation++;
}

static void
root_add_desc(struct inv_root *rt, size_t num)
{
	GROW_FROM(rt->rt_desc, rt->rt_ndesc, rt->rt_capdesc, INV_FIRST_DESC);
	rt->rt_desc[rt->rt_ndesc++] = (uint32_t)num;
}

static void
root_add_addr(struct inv_root *rt, const char *addr)
{
	size_t i;

	for (i = 0; i < rt->rt_naddrs; i++)
		if (strcmp(rt->rt_addrs[i], addr) == 0)
			return;
	GROW(rt->rt_addrs, rt->rt_naddrs, rt->rt_capaddrs);
	rt->rt_addrs[rt->rt_naddrs++] = xstrndup(addr, strlen(addr));
}

/*
 * Makes ev a descendant of the roots its parents (e/E/q ids, a/A/q
 * addresses already known as nodes) descend from, within the bounds.
 */
static void
add_descendant(struct inventory *iv, const struct event *ev,
    const struct inv_keys *keys)
{
	struct inv_root	  *roots[INV_EV_ROOTS];
	size_t		   nroots = 0, i, k, num;
	int		   depth = INV_MAX_DEPTH + 1, added = 0;
	uint32_t	   t;
	uint8_t		   id[EVENT_ID_LEN];
	uint64_t	   h;
	char		   addr[INV_COORD_MAX];
	struct inv_node	  *nd;
	const struct estr *found[INV_EV_FOUND];
	size_t		   nfound = 0, f;

	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];
		struct inv_node	       *p = NULL;

		if (!inv_id_parent_tag(tg) && !inv_addr_parent_tag(tg))
			continue;
		/* A value that already led to a node adds nothing again
		 * (NIP-22 names a top-level comment's root twice, E and e). */
		for (f = 0; f < nfound; f++)
			if (same_value(found[f], &tg->v[1]))
				break;
		if (f < nfound)
			continue;
		if (inv_id_parent_tag(tg) &&
		    parent_id(keys, t, &tg->v[1], id, &h) == 0)
			p = id_node_h(iv, id, h);
		else if (inv_addr_parent_tag(tg) &&
		    memchr(tg->v[1].s, ':', tg->v[1].len))
			p = hmap_get(&iv->iv_addrs, tg->v[1].s, tg->v[1].len);
		if (p == NULL || p->nd_depth >= INV_MAX_DEPTH)
			continue;
		if (nfound < INV_EV_FOUND)
			found[nfound++] = &tg->v[1];
		if (p->nd_depth + 1 < depth)
			depth = p->nd_depth + 1;
		for (i = 0; i < p->nd_n; i++) {
			struct inv_root *prt = node_root(iv, p, i);

			for (k = 0; k < nroots; k++)
				if (roots[k] == prt)
					break;
			if (k == nroots && nroots < INV_EV_ROOTS &&
			    !prt->rt_deleted)
				roots[nroots++] = prt;
		}
	}
	if (nroots == 0)
		return;
	inv_event_addr(ev, addr, sizeof(addr));
	for (k = 0; k < nroots; k++) {
		struct inv_root *rt = roots[k];

		if (memcmp(rt->rt_id, ev->id, 32) == 0)
			continue;
		if (rt->rt_ndesc >= INV_MAX_DESCENDANTS)
			continue;
		nd = id_node_get(iv, ev->id, keys->ik_hid, depth, &num);
		if (!node_add_root(iv, nd, rt))
			continue;
		root_add_desc(rt, num);
		if (addr[0]) {
			node_add_root(iv, addr_node_get(iv, addr, depth), rt);
			root_add_addr(rt, addr);
		}
		/* Without participants nd_author stays 0: no NIP-09
		 * deletion of a descendant has anything to take out. */
		if (iv->iv_parts & INV_AUTHORS)
			nd->nd_author =
			    author_add_root(iv, ev->pubkey, keys->ik_hpk, rt)
				->au_num +
			    1;
		added = 1;
	}
	if (added)
		iv->iv_generation++;
}

static void
remove_repo(struct inventory *iv, const char *coord, size_t len)
{
	struct inv_repo *r = hmap_del(&iv->iv_repos, coord, len);

	if (r == NULL)
		return;
	while (r->ir_nroots > 0) {
		struct inv_root *rt = r->ir_roots[0];

		repo_detach_root(r, rt);
		pending_add(iv, rt);
	}
	repo_free(r);
	iv->iv_generation++;
}

/* 1 if author num (plus one) still has an event in rt's thread. */
static int
author_in_thread(const struct inventory *iv, uint32_t num,
    const struct inv_root *rt)
{
	size_t i;

	if (memcmp(rt->rt_author, author_at(iv, num - 1)->au_pubkey, 32) == 0)
		return 1;
	for (i = 0; i < rt->rt_ndesc; i++)
		if (node_at(iv, rt->rt_desc[i])->nd_author == num)
			return 1;
	return 0;
}

/*
 * NIP-09: pk withdraws the descendant whose node is nd (if pk wrote it).
 * Its thread keeps it (other events may descend from it), but a thread
 * where the author has no other event no longer makes them a
 * participant.
 */
static void
delete_descendant(struct inventory *iv, struct inv_node *nd,
    const uint8_t pk[PUBKEY_LEN])
{
	struct inv_author *a;
	uint32_t	   num;
	size_t		   i;

	if (nd == NULL || nd->nd_author == 0 ||
	    memcmp(author_at(iv, nd->nd_author - 1)->au_pubkey, pk, 32) != 0)
		return;
	num = nd->nd_author;
	nd->nd_author = 0;
	a = author_at(iv, num - 1);
	for (i = 0; i < nd->nd_n; i++)
		if (!author_in_thread(iv, num, node_root(iv, nd, i)))
			author_remove_root(a, node_root(iv, nd, i));
	iv->iv_generation++;
}

/* NIP-09: the author withdraws a root or an announcement. */
static void
apply_deletion(struct inventory *iv, const struct event *ev)
{
	uint32_t	 t, kind;
	uint8_t		 id[EVENT_ID_LEN], pk[PUBKEY_LEN];
	struct inv_node *nd;
	struct inv_root *rt;
	struct inv_repo *r;
	const char	*d;
	size_t		 dlen;

	for (t = 0; t < ev->ntags; t++) {
		const struct event_tag *tg = &ev->tags[t];

		if (tg->n < 2)
			continue;
		if (strcmp(tg->v[0].s, "e") == 0) {
			if (hex_decode(tg->v[1].s, tg->v[1].len, id, 32) ==
				-1 ||
			    (nd = id_node_h(iv, id, hmap_hash(id, 32))) == NULL)
				continue;
			if ((rt = node_own_root(nd)) == NULL)
				delete_descendant(iv, nd, ev->pubkey);
			else if (memcmp(rt->rt_author, ev->pubkey, 32) == 0 &&
			    !rt->rt_deleted) {
				rt->rt_deleted = 1;
				if (rt->rt_repo)
					repo_detach_root(rt->rt_repo, rt);
				iv->iv_generation++;
			}
		} else if (strcmp(tg->v[0].s, "a") == 0 &&
		    coord_parse(tg->v[1].s, tg->v[1].len, &kind, pk, &d,
			&dlen) == 0 &&
		    kind == KIND_REPO_ANNOUNCEMENT &&
		    memcmp(pk, ev->pubkey, 32) == 0 &&
		    ((r = hmap_get(&iv->iv_repos, tg->v[1].s, tg->v[1].len)) ==
			    NULL ||
			r->ir_created_at <= ev->created_at))
			/* NIP-09: versions up to the deletion's time only;
			 * a newer announcement stays (so does the store). */
			remove_repo(iv, tg->v[1].s, tg->v[1].len);
	}
}

/* inv_add() with ev's keys worked out. */
static void
add_keyed(struct inventory *iv, const struct event *ev,
    const struct inv_keys *k)
{
	switch (ev->kind) {
	case KIND_REPO_ANNOUNCEMENT:
		add_announcement(iv, ev, INV_FULL);
		return;
	case KIND_DELETION:
		apply_deletion(iv, ev);
		return;
	case KIND_PATCH:
	case KIND_PR:
	case KIND_ISSUE:
		add_root(iv, ev, k);
		break;
	default:
		break;
	}
	/* Roots may also answer another thread (patch revisions do). */
	add_descendant(iv, ev, k);
}

void
inv_add(struct inventory *iv, const struct event *ev)
{
	struct inv_keys k;

	keys_make(iv, ev, &k);
	add_keyed(iv, ev, &k);
}

/* A rebuild's events between feed_scan_ahead()'s hint and its turn. */
struct rebuild {
	struct inventory *rb_iv;
	struct inv_keys	  rb_keys[FEED_AHEAD + 1];
	size_t		  rb_hinted; /* events hinted */
	size_t		  rb_taken;  /* events added */
};

/* The keys of the event hinted back-th before the last, if not taken. */
static struct inv_keys *
rebuild_keys(struct rebuild *rb, size_t back)
{
	if (rb->rb_hinted < back + 1 || rb->rb_hinted - back - 1 < rb->rb_taken)
		return NULL;
	return &rb->rb_keys[(rb->rb_hinted - back - 1) % (FEED_AHEAD + 1)];
}

/*
 * A new event FEED_AHEAD events before its turn: its keys are worked
 * out, and each event already waiting takes its next step.
 */
static void
rebuild_hint(void *arg, int64_t seq, const struct event *ev)
{
	struct rebuild	*rb = arg;
	struct inv_keys *k;

	(void)seq;
	rb->rb_hinted++;
	keys_make(rb->rb_iv, ev, rebuild_keys(rb, 0));
	if ((k = rebuild_keys(rb, 1)) != NULL)
		keys_records(rb->rb_iv, k);
	if ((k = rebuild_keys(rb, 2)) != NULL)
		keys_roots(rb->rb_iv, k);
	if ((k = rebuild_keys(rb, 3)) != NULL)
		keys_descs(k);
}

static void
rebuild_take(void *arg, int64_t seq, const struct event *ev)
{
	struct rebuild	*rb = arg;
	struct inv_keys *k, own;

	(void)seq;
	k = &rb->rb_keys[rb->rb_taken++ % (FEED_AHEAD + 1)];
	if (k->ik_ev != ev) {
		/* Not the event hinted: cannot happen, but costs nothing. */
		keys_make(rb->rb_iv, ev, &own);
		k = &own;
	}
	add_keyed(rb->rb_iv, ev, k);
}

int
inv_rebuild(struct inventory *iv, struct store *st, int64_t upto)
{
	struct rebuild *rb;
	int		n;

	if ((rb = calloc(1, sizeof(*rb))) == NULL)
		fatal("inventory");
	rb->rb_iv = iv;
	n = feed_scan_ahead(st, 0, upto, rebuild_hint, rebuild_take, rb, NULL);
	free(rb);
	return n;
}

void
inv_add_stateonly(struct inventory *iv, const struct event *ev)
{
	if (ev->kind == KIND_REPO_ANNOUNCEMENT)
		add_announcement(iv, ev, INV_STATE_ONLY);
}

struct inv_repo *
inv_repo(const struct inventory *iv, const char *coord)
{
	return hmap_get(&iv->iv_repos, coord, strlen(coord));
}

struct inv_repo *
inv_repo_next(const struct inventory *iv, size_t *it)
{
	void *v;

	return hmap_next(&iv->iv_repos, it, NULL, NULL, &v) ? v : NULL;
}

struct inv_root *
inv_root(const struct inventory *iv, const uint8_t id[EVENT_ID_LEN])
{
	return root_find(iv, id, hmap_hash(id, 32));
}

struct inv_root *
inv_root_next(const struct inventory *iv, size_t *it)
{
	return *it < iv->iv_nroots ? iv->iv_roots[(*it)++] : NULL;
}

const uint8_t *
inv_desc_id(const struct inventory *iv, const struct inv_root *rt, size_t i)
{
	return node_at(iv, rt->rt_desc[i])->nd_id;
}

struct inv_author *
inv_author(const struct inventory *iv, const uint8_t pubkey[PUBKEY_LEN])
{
	ssize_t num = ix_find(iv, &iv->iv_pubkeys, author_key, pubkey,
	    hmap_hash(pubkey, 32));

	return num == -1 ? NULL : author_at(iv, (size_t)num);
}

struct inv_author *
inv_author_next(const struct inventory *iv, size_t *it)
{
	return *it < iv->iv_authors.rc_n ? author_at(iv, (*it)++) : NULL;
}

int
inv_eligible(const struct inventory *iv, const uint8_t pk[PUBKEY_LEN])
{
	const struct inv_author *a;
	const struct inv_repo	*r;
	size_t			 i, it = 0;

	if (!(iv->iv_parts & INV_AUTHORS))
		fatalx("inv_eligible: an inventory without participants");
	a = inv_author(iv, pk);
	if (a) {
		for (i = 0; i < a->au_nroots; i++) {
			const struct inv_root *rt = a->au_roots[i];

			if (!rt->rt_deleted && rt->rt_repo &&
			    rt->rt_repo->ir_level == INV_FULL)
				return 1;
		}
	}
	while ((r = inv_repo_next(iv, &it)) != NULL) {
		if (r->ir_level != INV_FULL)
			continue;
		if (memcmp(r->ir_owner, pk, 32) == 0)
			return 1;
		for (i = 0; i < r->ir_nmaint; i++)
			if (memcmp(r->ir_maint[i], pk, 32) == 0)
				return 1;
	}
	return 0;
}

/* Adds pk to the set once; calls cb the first time. */
static void
each_once(struct hmap *set, const uint8_t	 pk[PUBKEY_LEN],
    void (*cb)(void *, const uint8_t[32]), void *arg)
{
	if (hmap_get(set, pk, 32) != NULL)
		return;
	hmap_put(set, pk, 32, (void *)1);
	cb(arg, pk);
}

size_t
inv_eligible_each(const struct inventory *iv,
    void (*cb)(void *arg, const uint8_t pubkey[PUBKEY_LEN]), void *arg)
{
	struct hmap		 set = HMAP_INIT;
	const struct inv_author *a;
	const struct inv_repo	*r;
	size_t			 it, i, n;

	if (!(iv->iv_parts & INV_AUTHORS))
		fatalx("inv_eligible_each: an inventory without participants");
	for (it = 0; (r = inv_repo_next(iv, &it)) != NULL;) {
		if (r->ir_level != INV_FULL)
			continue;
		each_once(&set, r->ir_owner, cb, arg);
		for (i = 0; i < r->ir_nmaint; i++)
			each_once(&set, r->ir_maint[i], cb, arg);
	}
	for (it = 0; (a = inv_author_next(iv, &it)) != NULL;) {
		for (i = 0; i < a->au_nroots; i++) {
			const struct inv_root *rt = a->au_roots[i];

			if (!rt->rt_deleted && rt->rt_repo &&
			    rt->rt_repo->ir_level == INV_FULL) {
				each_once(&set, a->au_pubkey, cb, arg);
				break;
			}
		}
	}
	n = set.hm_n;
	hmap_free(&set);
	return n;
}

void
inv_each_row(const struct inventory *iv, const struct inv_rows *cb, void *arg)
{
	const struct inv_root *rt;
	const struct inv_node *nd;
	size_t		       it, i;

	if (!(iv->iv_parts & INV_AUTHORS))
		fatalx("inv_each_row: an inventory without participants");
	for (it = 0; (rt = inv_root_next(iv, &it)) != NULL;) {
		cb->ir_root(arg, rt);
		nd = id_node_h(iv, rt->rt_id, hmap_hash(rt->rt_id, 32));
		cb->ir_node(arg, rt->rt_id, rt->rt_num, 0,
		    nd ? nd->nd_depth : 0, rt->rt_author);
		for (i = 0; i < rt->rt_ndesc; i++) {
			nd = node_at(iv, rt->rt_desc[i]);
			cb->ir_node(arg, nd->nd_id, rt->rt_num, (uint32_t)i + 1,
			    nd->nd_depth,
			    nd->nd_author ?
				author_at(iv, nd->nd_author - 1)->au_pubkey :
				NULL);
		}
		for (i = 0; i < rt->rt_naddrs; i++) {
			nd = hmap_get(&iv->iv_addrs, rt->rt_addrs[i],
			    strlen(rt->rt_addrs[i]));
			cb->ir_addr(arg, rt->rt_addrs[i], rt->rt_num,
			    nd ? nd->nd_depth : 0);
		}
	}
}
