/*
 * relay_inv.c: relayd's copy of the repository inventory (common/
 * inventory.h), which the write policy asks for GRASP-03's rule that kind
 * 0 and kind 10002 are stored only for eligible identity authors (owners
 * and declared maintainers of accepted Full repositories, authors of
 * accepted roots and their descendants).
 *
 * Built from the store at start and fed every event relayd stores, inside
 * the write transaction (relay_ingest.c), so an author made eligible by
 * an event earlier in the same batch counts.  If a transaction fails to
 * commit, the events it fed were not stored: the inventory is built again
 * from the store.
 *
 * It also keeps the database's set of eligible authors (common/
 * eligible.h) equal to the inventory's, for discoveryd, which reads it
 * instead of building an inventory of its own (doc/architecture.md,
 * "Memory").  An event that changed the inventory can only add its own
 * author, unless it is an announcement or a deletion: those make the
 * whole set be worked out again and compared, once per transaction
 * (relay_inv_flush()).  What the table holds is mirrored in a set here,
 * reloaded from the table after anything failed.
 */
#include <stdlib.h>
#include <string.h>

#include "eligible.h"
#include "inventory.h"
#include "log.h"
#include "relayd.h"

static struct inventory *inv;

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
	hmap_put(arg, pk, 32, (void *)1);
}

/*
 * Makes the table hold the inventory's whole eligible set, writing only
 * the difference.  Inside a transaction.  -1 on a database error.
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
	inv_eligible_each(inv, put_key, &now);
	for (it = 0; hmap_next(&elig.written, &it, &key, NULL, NULL);) {
		if (hmap_get(&now, key, 32) != NULL)
			continue;
		if ((n = eligible_put(db, key, 0)) == -1)
			goto done;
		elig.changed |= n;
	}
	for (it = 0; hmap_next(&now, &it, &key, NULL, NULL);) {
		if (hmap_get(&elig.written, key, 32) != NULL)
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

void
relay_inv_flush(void)
{
	struct sqlite3 *db = store_sqlite(relayd->store);

	if ((elig.full && elig_sync(db) == -1) ||
	    (elig.changed && eligible_bump(db) == -1)) {
		/* Whatever was written may or may not commit: read the
		 * table again and compare everything next time. */
		elig.stale = elig.full = 1;
		return;
	}
	elig.changed = 0;
}

void
relay_inv_init(void)
{
	int64_t last;

	inv_free(inv);
	inv = inv_new(&relayd->cfg);
	if (store_last_seq(relayd->store, &last) == -1 ||
	    inv_rebuild(inv, relayd->store, last) == -1)
		fatalx("cannot build the repository inventory from the store");
	policy_set_inventory(&relayd->policy, inv);
	/* The table may be anything: another version's, a backup's. */
	elig.stale = elig.full = 1;
	if (store_begin(relayd->store) == -1)
		return;
	relay_inv_flush();
	if (store_commit(relayd->store) == -1) {
		store_rollback(relayd->store);
		elig.stale = elig.full = 1;
	}
}

void
relay_inv_add(const struct event *ev)
{
	struct sqlite3 *db;
	uint64_t	gen = inv->iv_generation;
	int		n;

	inv_add(inv, ev);
	if (inv->iv_generation == gen || elig.full)
		return;
	if (ev->kind == KIND_REPO_ANNOUNCEMENT || ev->kind == KIND_DELETION) {
		elig.full = 1;
		return;
	}
	/* A root or a descendant: only its author can have become one. */
	if (hmap_get(&elig.written, ev->pubkey, 32) != NULL ||
	    !inv_eligible(inv, ev->pubkey))
		return;
	db = store_sqlite(relayd->store);
	if ((n = eligible_put(db, ev->pubkey, 1)) == -1) {
		elig.stale = elig.full = 1;
		return;
	}
	hmap_put(&elig.written, ev->pubkey, 32, (void *)1);
	elig.changed |= n;
}

void
relay_inv_rebuild(void)
{
	log_warnx("rebuilding the repository inventory from the store");
	relay_inv_init();
}

void
relay_inv_free(void)
{
	policy_set_inventory(&relayd->policy, NULL);
	inv_free(inv);
	inv = NULL;
	hmap_free(&elig.written);
}
