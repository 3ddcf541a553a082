/*
 * invdb.h: the GRASP-03 repository inventory (inventory.h's model) kept
 * in graspd's database, so that no role holds a copy that grows with the
 * store (doc/architecture.md, "Memory"; schema step 7 in db.c).
 *
 * relayd, the one writer, feeds every event it stores to invdb_add()
 * inside the write transaction that stores it, so the tables commit or
 * roll back with the events; at the first start on a database without
 * them it feeds every stored event once (invdb_build()).  syncd and
 * historyd read them per repository, root or participant, inside a read
 * transaction of their own, and read them again when the generation
 * moved (invdb_generation()).
 *
 * The tables hold what an inventory built by inv_add() from the same
 * events holds (tests/unit/invdb_test.c compares the two):
 *
 *   inv_repos	accepted announcements (always Full: purgatory's
 *		StateOnly announcements stay in syncd's memory): coordinate,
 *		owner, d, created_at, relays (canonical keys, one a line),
 *		the number hygiene refused, declared maintainers;
 *   inv_roots	every root (1617, 1618, 1621 naming a repository), in
 *		arrival order (num), with its author, kind, the coordinate
 *		it names and whether its author deleted it;
 *   inv_nodes	one row per event and root it descends from (a root's
 *		own event included, depth 0), keyed by the event's seq (its
 *		id is events.id, or inv_gone's once the event left the
 *		store), with its place n in the root (0 the root's own, then
 *		1, 2, ... in arrival: the largest is the root's number of
 *		descendants, at most INV_MAX_DESCENDANTS), the node's depth
 *		and the event's author (NULL once the author deleted it): a
 *		participant is an author with a row;
 *   inv_gone	the seq, id and author of every node event deleted from
 *		the store (a trigger on events, schema step 8); an author's
 *		nodes are found through events_pubkey and inv_gone's pubkey;
 *   inv_addrs	one row per address coordinate of an addressable or
 *		replaceable descendant and root.
 *
 * A root's repository is the inv_repos row of its coordinate, if any: a
 * root whose repository is unknown or deleted waits for it with no list
 * of its own.
 *
 * Every function returns -1 after logging on a database error and never
 * exits, but for allocation failure.
 */
#ifndef GRASPD_INVDB_H
#define GRASPD_INVDB_H

#include <stddef.h>
#include <stdint.h>

#include "inventory.h"
#include "nip01.h"

struct config;
struct event;
struct sqlite3;
struct store;

/* ------------------------------------------------------------------ */
/* The writer (relayd).                                                */

struct invdb;

/*
 * A writer on st (relayd's read-write store); cfg gives what
 * inv_announcement_relays() needs (our own relay keys, private targets).
 * Statements are prepared on first use and kept until invdb_free(),
 * which must come before store_close().
 */
struct invdb *invdb_new(struct store *st, const struct config *cfg);
void	      invdb_free(struct invdb *);

/* What invdb_add() changed (flags). */
#define INVDB_CHANGED 0x1 /* anything: the generation moves */
#define INVDB_WIDE \
	0x2 /* a repository or a root's liveness: anyone's
			   * eligibility may have changed */
#define INVDB_ROOTED \
	0x4 /* ev became a root or a descendant: its author
			   * may have become eligible */

/*
 * Feeds one stored event (seq: its events.seq), in seq order, inside the
 * caller's write transaction: what inv_add() does, in the tables.
 * Returns the INVDB_* flags of what changed (0 for nothing), or -1 on a
 * database error, after which the transaction must be rolled back.
 */
int invdb_add(struct invdb *, const struct event *ev, int64_t seq);

/*
 * Ends a transaction's run of invdb_add(): bumps the generation once if
 * anything changed since the last call, and records the last stored
 * event as seen.  Inside every transaction that stores events.
 */
int invdb_flush(struct invdb *);

/*
 * Forgets what invdb_flush() would have bumped (after a rollback: the
 * rows went with it).
 */
void invdb_discard(struct invdb *);

/*
 * 1 if the tables were built from the whole store, 0 if not (a database
 * older than them, until invdb_build() ends).
 */
int invdb_built(struct store *);

/*
 * 1 if the tables were built with the configuration of this writer's
 * (our own relay keys, NGIT_SYNC_ALLOW_PRIVATE_TARGETS: what a
 * repository's relays depend on) and saw every stored event, 0 if not:
 * unbuilt, built by another instance (a copied database) or under
 * another NGIT_DOMAIN, or events were stored behind relayd's back (a
 * program writing through store.c, as make bench's fills do).
 */
int invdb_built_for(struct invdb *);

/*
 * Empties the tables and feeds every stored event in seq order, then
 * marks them built with this writer's configuration, in one transaction of the writer's store (not in a
 * transaction).  Returns the number of events fed.
 */
int invdb_build(struct invdb *);

/* ------------------------------------------------------------------ */
/* Readers (any store; statements are kept in the store's cache).      */

/*
 * Opens a read transaction on st unless one is open, so that the calls
 * up to invdb_read_end() read one snapshot; invdb_read_end() ends only
 * the one invdb_read_begin() opened (0 when it opened none).
 */
int  invdb_read_begin(struct store *st);
void invdb_read_end(struct store *st, int opened);

/* The generation, bumped by every transaction that changed the tables. */
int invdb_generation(struct store *, int64_t *out);

/* A repository as a reader gets it; valid during the callback. */
struct invdb_repo {
	const char    *ir_coord; /* "30617:<owner hex>:<d>" */
	const char    *ir_d;
	uint8_t	       ir_owner[PUBKEY_LEN];
	int64_t	       ir_created_at;
	enum inv_level ir_level;
	char	     **ir_relays; /* canonical keys */
	size_t	       ir_nrelays;
	size_t	       ir_refused;
	const uint8_t (*ir_maint)[PUBKEY_LEN];
	size_t ir_nmaint;
};

/* A root as a reader gets it; valid during the callback. */
struct invdb_root {
	int64_t	       rt_num;
	uint8_t	       rt_id[EVENT_ID_LEN];
	uint8_t	       rt_author[PUBKEY_LEN];
	uint32_t       rt_kind;
	int	       rt_deleted;
	const char    *rt_coord;
	/* Its repository's level, 0 while it has none. */
	enum inv_level rt_level;
};

/* Calls cb for every repository, in coordinate order. */
int invdb_repos(struct store *,
    void (*cb)(void *arg, const struct invdb_repo *), void *arg);

/* The number of repositories in *n. */
int invdb_nrepos(struct store *, size_t *n);

/* Calls cb for every live (not deleted) root naming coord, by num. */
int invdb_repo_roots(struct store *, const char		   *coord,
    void (*cb)(void *arg, const struct invdb_root *), void *arg);

/*
 * Calls id_cb for the id of every descendant of root num (never the
 * root's own id) and addr_cb for every descendant address coordinate;
 * either may be NULL.
 */
int invdb_thread(struct store *, int64_t num,
    void (*id_cb)(void *arg, const uint8_t id[EVENT_ID_LEN]),
    void (*addr_cb)(void *arg, const char *addr), void *arg);

/*
 * Calls cb for every root pubkey takes part in (as the root's author or
 * the author of one of its descendants), deleted or not, attached or
 * not, by num.
 */
int invdb_author_roots(struct store *, const uint8_t	    pubkey[PUBKEY_LEN],
    void (*cb)(void *arg, const struct invdb_root *), void *arg);

/*
 * Live roots attached to a repository by kind (patch, PR, other) in
 * bykind, and the live roots waiting for theirs in *unlinked.
 */
int invdb_count_roots(struct store *, size_t bykind[3], size_t *unlinked);

/*
 * 1 if pubkey is an eligible identity author (inv_eligible()'s rule over
 * the tables), 0 if not.
 */
int invdb_eligible(struct store *, const uint8_t pubkey[PUBKEY_LEN]);

/*
 * Calls cb once for every eligible identity author, in no particular
 * order (inv_eligible_each()'s rule).  Returns the number of authors.
 */
int invdb_eligible_each(struct store *,
    void (*cb)(void *arg, const uint8_t pubkey[PUBKEY_LEN]), void *arg);

#endif
