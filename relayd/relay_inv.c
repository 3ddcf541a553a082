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
 */
#include "inventory.h"
#include "log.h"
#include "relayd.h"

static struct inventory *inv;

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
}

void
relay_inv_add(const struct event *ev)
{
	inv_add(inv, ev);
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
}
