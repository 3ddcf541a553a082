/*
 * inventory.h: what graspd knows about the repositories it hosts, derived
 * only from accepted events (design.md, "Storage"; GRASP-03 text): the
 * accepted announcements with owners, declared maintainers, relays and sync
 * level; their root events (1617, 1618, 1621 whose "a" names the
 * repository); and a bounded recursive set of descendants of each root
 * (replies, reactions, zaps, statuses...) with root provenance carried
 * through event-id and address references.  From that: the eligible
 * identity authors and each participant's threads.
 *
 * No role keeps one: relayd keeps the same model in the database's
 * tables (invdb.h), which syncd and historyd read.  What is left here is
 * the model itself, used where it is made in memory: relayd's one-time
 * build of those tables (inv_rebuild(), inv_each_row()), syncd's small
 * copy of purgatory's held announcements (inv_add_stateonly()), an
 * announcement's relays (inv_announcement_relays()), and the tests,
 * which compare the tables with it.  Nothing here is persisted; nothing
 * here trusts an event the store did not accept.
 */
#ifndef GRASPD_INVENTORY_H
#define GRASPD_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "nip01.h"

struct config;
struct event;
struct store;

/* GRASP-03 "bounded recursive" descendants; ours: hops below a root. */
#define INV_MAX_DEPTH	    16
/* Ours: descendants followed per root; one thread cannot grow it more. */
#define INV_MAX_DESCENDANTS 10000
/* Ours: relays kept per repository from its relays and clone tags. */
#define INV_MAX_REPO_RELAYS 32
/* Ours: the roots one event is followed into, at most. */
#define INV_EV_ROOTS	    64
/* Ours: parent values remembered as having led to a node, per event. */
#define INV_EV_FOUND	    8
/* Ours: room for a coordinate: kind, 64 hex digits, a d of at most 1,000
 * bytes (longer ones are refused) and the separators. */
#define INV_COORD_MAX	    (64 + 16 + 1024)
/* Ours: an author's roots searched one by one up to this many; beyond,
 * through a set (an author in thousands of threads made it quadratic). */
#define INV_AUTHOR_SCAN	    64

/*
 * The parts of an inventory a role builds (inv_new_parts()).  Every
 * copy has the repositories, roots and descendants; INV_AUTHORS adds the
 * participants (each author's threads), which inv_author(),
 * inv_author_next(), inv_eligible() and inv_eligible_each() read.
 */
#define INV_AUTHORS 0x1
#define INV_ALL	    INV_AUTHORS

/* ngit-grasp brief 1.7: Full (served) or StateOnly (in purgatory). */
enum inv_level {
	INV_STATE_ONLY = 1,
	INV_FULL = 2,
};

struct inv_root;

/*
 * A map from 32-byte keys (event ids, pubkeys) to records numbered from
 * 0, and the records themselves in chunks: the two maps a rebuild fills
 * with a million entries (see inventory.c).
 */
struct inv_index {
	uint64_t *ix_slots;
	size_t	  ix_cap; /* a power of two, or 0 */
	size_t	  ix_n;
};

struct inv_recs {
	char   **rc_chunks;
	size_t	 rc_nchunks;
	size_t	 rc_capchunks;
	size_t	 rc_n;	   /* records made */
	unsigned rc_shift; /* 1 << rc_shift records a chunk */
};

struct inv_repo {
	char	      *ir_coord; /* "30617:<owner hex>:<d>" */
	uint8_t	       ir_owner[PUBKEY_LEN];
	char	      *ir_d;
	int64_t	       ir_created_at;
	enum inv_level ir_level;
	char	     **ir_relays; /* canonical keys, ourselves excluded */
	size_t	       ir_nrelays;
	size_t	       ir_refused; /* relay URLs hygiene refused */
	uint8_t (*ir_maint)[32];   /* declared maintainers */
	size_t		  ir_nmaint;
	struct inv_root **ir_roots; /* live roots (not deleted) */
	size_t		  ir_nroots;
	size_t		  ir_caproots;
};

/* A record of iv_rootrecs: 128 bytes, one per root in every copy. */
struct inv_root {
	uint8_t		 rt_id[EVENT_ID_LEN];
	uint8_t		 rt_author[PUBKEY_LEN];
	uint32_t	 rt_kind;
	int		 rt_deleted;
	uint32_t	 rt_num;   /* its record number, its place in
					   iv_roots */
	struct inv_repo *rt_repo;  /* NULL while its repo is unknown */
	const char	*rt_coord; /* the repository it names (one
					   copy per coordinate, the
					   inventory's) */
	uint32_t	*rt_desc;  /* descendants, by node number:
					   inv_desc_id() gives each id */
	uint32_t	 rt_ndesc; /* at most INV_MAX_DESCENDANTS */
	uint32_t	 rt_capdesc;
	char	       **rt_addrs; /* descendant address coordinates */
	uint32_t	 rt_naddrs;
	uint32_t	 rt_capaddrs;
};

/* The roots one author's events occur in (GRASP-03 participants). */
struct inv_author {
	uint8_t		  au_pubkey[PUBKEY_LEN];
	uint32_t	  au_num; /* its record number */
	struct inv_root **au_roots;
	size_t		  au_nroots;
	size_t		  au_caproots;
	/* Beyond INV_AUTHOR_SCAN roots: the same roots in an open-addressed
	 * set of their rt_num plus one (0 slots empty), so that adding one
	 * stays O(1). */
	uint32_t	 *au_set;
	size_t		  au_setcap;
};

struct inventory {
	struct hmap	  iv_repos; /* coord -> struct inv_repo */
	/* Every root, in arrival order (inv_root() finds one by id). */
	struct inv_root **iv_roots;
	size_t		  iv_nroots;
	size_t		  iv_caproots;
	struct hmap	  iv_coords;   /* coordinate -> its one copy */
	struct inv_index  iv_ids;      /* event id -> node number */
	struct hmap	  iv_addrs;    /* address -> struct inv_node */
	struct inv_recs	  iv_rootrecs; /* struct inv_root */
	struct inv_recs	  iv_nodes;    /* struct inv_node */
	struct hmap	  iv_more;     /* node address -> its other roots */
	struct inv_index  iv_pubkeys;  /* pubkey -> author number */
	struct inv_recs	  iv_authors;  /* struct inv_author */
	struct hmap	  iv_pending;  /* coord -> struct inv_pending */
	unsigned	  iv_urlflags; /* relayurl flags for repo relays */
	char (*iv_self)[256];	       /* our own relay keys */
	int	 iv_nself;
	unsigned iv_parts;	/* INV_* */
	uint64_t iv_generation; /* bumped on every change */
};

/*
 * Creates an empty inventory.  cfg gives NGIT_DOMAIN (our own relay,
 * never a target) and NGIT_SYNC_ALLOW_PRIVATE_TARGETS.  Fatal on
 * allocation failure.
 */
struct inventory *inv_new(const struct config *cfg);
/*
 * The same with only the parts INV_* that parts names: a copy without
 * INV_AUTHORS keeps no participant (inv_author() finds none, and
 * inv_eligible() and inv_eligible_each() exit as a caller's bug).
 */
struct inventory *inv_new_parts(const struct config *cfg, unsigned parts);
void		  inv_free(struct inventory *);

/*
 * Feeds one accepted event, in seq order.  Announcements become Full
 * repositories; roots attach to their repository (or wait for it);
 * events referring to a known root or descendant become descendants;
 * kind 5 deletions by a root's author remove that root, and by a
 * descendant's author take that author out of the threads where it has
 * no other event.
 */
void inv_add(struct inventory *, const struct event *);
/*
 * Feeds every event stored with seq <= upto to inv_add() in seq order,
 * reading of each only what inv_add() reads, a few events ahead so that
 * what each will look up is prefetched (feed_scan_ahead()): how every
 * role builds its new inventory at start.  The result is the inventory
 * feeding each event in full would give.  Returns the number
 * of events fed, or -1 on a store error (logged); exits only when out of
 * memory.
 */
int  inv_rebuild(struct inventory *, struct store *, int64_t upto);
/*
 * Feeds an announcement that is held in purgatory: its repository is
 * StateOnly unless it is already Full (never downgraded).
 */
void inv_add_stateonly(struct inventory *, const struct event *);

struct inv_repo *inv_repo(const struct inventory *, const char *coord);
/* Iterates repositories: for (it = 0; (r = inv_repo_next(iv, &it)); ) */
struct inv_repo *inv_repo_next(const struct inventory *, size_t *it);
struct inv_root *inv_root(const struct inventory *,
    const uint8_t id[EVENT_ID_LEN]);
/* Iterates roots: for (it = 0; (rt = inv_root_next(iv, &it)); ) */
struct inv_root *inv_root_next(const struct inventory *, size_t *it);
/* The id of rt's descendant i (i < rt->rt_ndesc). */
const uint8_t	*inv_desc_id(const struct inventory *, const struct inv_root *,
      size_t i);
struct inv_author *inv_author(const struct inventory *,
    const uint8_t pubkey[PUBKEY_LEN]);
struct inv_author *inv_author_next(const struct inventory *, size_t *it);

/*
 * 1 if pubkey is an eligible identity author (GRASP-03): an owner or
 * declared maintainer of an accepted Full repository, or the author of
 * an accepted root of a Full repository or of one of its descendants.
 */
int inv_eligible(const struct inventory *, const uint8_t pubkey[PUBKEY_LEN]);

/*
 * Calls cb once for every eligible identity author (as inv_eligible()
 * decides), in no particular order; pubkey is valid during the call.
 * cb must not change the inventory.  Returns the number of authors.
 */
size_t inv_eligible_each(const struct inventory *,
    void (*cb)(void *arg, const uint8_t pubkey[PUBKEY_LEN]), void *arg);

struct event_tag;
struct estr;
/*
 * The repository a patch, PR or issue names: its first "a" value of kind
 * 30617 (NIP-34), or NULL.
 */
const struct estr *inv_root_repo(const struct event *);
/*
 * ev's own address coordinate in out ("kind:pubkey:d", NIP-01) if it is
 * addressable or replaceable (d empty), else "" in out.
 */
void		   inv_event_addr(const struct event *, char *out, size_t len);
/* 1 if tag names a parent by id (NIP-10 e, NIP-22 E, NIP-18 q). */
int		   inv_id_parent_tag(const struct event_tag *tag);
/* 1 if tag names a parent by address (NIP-01 a, NIP-22 A, NIP-18 q). */
int		   inv_addr_parent_tag(const struct event_tag *tag);

/*
 * The inventory as rows of invdb.h's tables, for building them in one
 * pass (invdb_build()): root for every root in arrival order (its row
 * number there is rt_num plus one); node for every id and root it
 * descends from, a root's own id (depth 0, place 0) included, with its
 * place among the root's descendants (1 for rt_desc[0]), the node's
 * depth and the event's author (NULL once the author deleted it; a
 * root's own author for its own node); addr for every descendant address
 * and root with the address's depth.  Needs INV_AUTHORS.
 */
struct inv_rows {
	void (*ir_root)(void *arg, const struct inv_root *rt);
	void (*ir_node)(void *arg, const uint8_t id[EVENT_ID_LEN],
	    uint32_t root, uint32_t place, unsigned depth,
	    const uint8_t *author);
	void (*ir_addr)(void *arg, const char *addr, uint32_t root,
	    unsigned depth);
};
void inv_each_row(const struct inventory *, const struct inv_rows *, void *arg);

/*
 * Adds the relay part of an announcement's "relays" values and http(s)
 * "clone" URLs to out (canonical keys, deduplicated, hygiene-checked,
 * ourselves excluded).  If refused is not NULL, *refused is set to the
 * number of values target hygiene refused (never dialled; counted so
 * that an operator sees them).  Exposed for tests.
 */
size_t inv_announcement_relays(const struct inventory *, const struct event *,
    char **out, size_t max, size_t *refused);

#endif
