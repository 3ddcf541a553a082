/*
 * relay_inv.c: relayd keeps the repository inventory's tables (common/
 * invdb.h) and the database's set of eligible authors (common/
 * eligible.h), and answers the write policy's question of GRASP-03: kind
 * 0 and kind 10002 are stored only for eligible identity authors (owners
 * and declared maintainers of accepted Full repositories, authors of
 * accepted roots and their descendants).
 *
 * Every event relayd stores is fed to the tables inside the write
 * transaction that stores it (relay_ingest.c), so they commit or roll
 * back with it, and an author made eligible earlier in the same batch
 * counts.  A database without the tables' contents (an older version's)
 * has them built from the stored events once, at start.
 *
 * The eligible set: an event that became a root or a descendant can only
 * add its own author; an announcement or a deletion that changed the
 * tables makes the whole set be worked out again and compared, once per
 * transaction (relay_inv_flush()).  What the table holds is mirrored in
 * a set here, which answers the policy while no whole comparison is
 * pending; while one is, the tables answer.  The set is read back from
 * the table after anything failed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eligible.h"
#include "invdb.h"
#include "log.h"
#include "relayd.h"

static struct invdb *idb;
/* An invdb_add() of this transaction failed: it must not commit. */
static int	     failed;

/* The eligible set as the table holds it, and what it waits for. */
static struct {
	struct hmap written; /* pubkey -> (void *)1 */
	int	    stale;   /* written must be read from the table */
	int	    full;    /* the whole set must be worked out again */
	int	    changed; /* rows changed since the last bump */
} elig = { HMAP_INIT, 1, 1, 0 };

static void
put_key(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	hmap_put(arg, pk, PUBKEY_LEN, (void *)1);
}

/*
 * Makes the table hold the tables' whole eligible set, writing only the
 * difference.  Inside a transaction.  -1 on a database error.
 */
static int
elig_sync(struct sqlite3 *db)
{
	struct hmap now = HMAP_INIT;
	const void *key;
	size_t	    it;
	int	    rc = -1, n;

	if (elig.stale) {
		hmap_free(&elig.written);
		if (eligible_each(db, put_key, &elig.written, NULL) == -1)
			goto done;
		elig.stale = 0;
	}
	if (invdb_eligible_each(relayd->store, put_key, &now) == -1)
		goto done;
	for (it = 0; hmap_next(&elig.written, &it, &key, NULL, NULL);) {
		if (hmap_get(&now, key, PUBKEY_LEN) != NULL)
			continue;
		if ((n = eligible_put(db, key, 0)) == -1)
			goto done;
		elig.changed |= n;
	}
	for (it = 0; hmap_next(&now, &it, &key, NULL, NULL);) {
		if (hmap_get(&elig.written, key, PUBKEY_LEN) != NULL)
			continue;
		if ((n = eligible_put(db, key, 1)) == -1)
			goto done;
		elig.changed |= n;
	}
	hmap_free(&elig.written);
	elig.written = now;
	memset(&now, 0, sizeof(now));
	elig.full = 0;
	rc = 0;
done:
	hmap_free(&now);
	return rc;
}

/* The policy's question: 1 if pk is an eligible identity author. */
static int
eligible(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	(void)arg;
	if (!elig.full && !elig.stale)
		return hmap_get(&elig.written, pk, PUBKEY_LEN) != NULL;
	return invdb_eligible(relayd->store, pk);
}

int
relay_inv_flush(void)
{
	struct sqlite3 *db = store_sqlite(relayd->store);

	if (failed || invdb_flush(idb) == -1) {
		failed = 0;
		return -1;
	}
	if ((elig.full && elig_sync(db) == -1) ||
	    (elig.changed && eligible_bump(db) == -1)) {
		/* Whatever was written may or may not commit: read the
		 * table again and compare everything next time. */
		elig.stale = elig.full = 1;
		return 0;
	}
	elig.changed = 0;
	return 0;
}

void
relay_inv_rollback(void)
{
	failed = 0;
	invdb_discard(idb);
	elig.stale = elig.full = 1;
	elig.changed = 0;
}

void
relay_inv_init(void)
{
	struct timespec t0, t1;
	int		n;

	idb = invdb_new(relayd->store, &relayd->cfg);
	if ((n = invdb_built_for(idb)) == -1)
		fatalx("cannot read the repository inventory's tables");
	if (n == 0) {
		/* A repository's relays leave out our own relay: tables built
		 * by another instance (a copied database, a restored backup)
		 * or under another NGIT_DOMAIN are not ours. */
		log_info("building the repository inventory's tables from "
			 "the stored events (%s)",
		    invdb_built(relayd->store) == 1 ?
			"built for another domain or target setting" :
			"once");
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((n = invdb_build(idb)) == -1)
			fatalx("cannot build the repository inventory's "
			       "tables from the store");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		log_info("repository inventory's tables built from %d events "
			 "in %.1f s",
		    n,
		    (double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	policy_set_eligible(&relayd->policy, eligible, NULL);
	/* The set's table may be anything: another version's, a backup's. */
	elig.stale = elig.full = 1;
	if (store_begin(relayd->store) == -1)
		return;
	if (relay_inv_flush() == -1 || store_commit(relayd->store) == -1) {
		store_rollback(relayd->store);
		relay_inv_rollback();
	}
}

void
relay_inv_add(const struct event *ev, int64_t seq)
{
	struct sqlite3 *db;
	int		rc, n;

	if ((rc = invdb_add(idb, ev, seq)) == -1) {
		failed = 1;
		return;
	}
	if (rc == 0 || elig.full || elig.stale)
		return;
	if (rc & INVDB_WIDE) {
		elig.full = 1;
		return;
	}
	/* A root or a descendant: only its author can have become one. */
	if (!(rc & INVDB_ROOTED) ||
	    hmap_get(&elig.written, ev->pubkey, PUBKEY_LEN) != NULL)
		return;
	if ((n = invdb_eligible(relayd->store, ev->pubkey)) != 1) {
		if (n == -1)
			elig.full = 1;
		return;
	}
	db = store_sqlite(relayd->store);
	if ((n = eligible_put(db, ev->pubkey, 1)) == -1) {
		elig.stale = elig.full = 1;
		return;
	}
	hmap_put(&elig.written, ev->pubkey, PUBKEY_LEN, (void *)1);
	elig.changed |= n;
}

void
relay_inv_free(void)
{
	policy_set_eligible(&relayd->policy, NULL, NULL);
	invdb_free(idb);
	idb = NULL;
	hmap_free(&elig.written);
}
