/*
 * eligible.h: GRASP-03's eligible identity authors in graspd's database
 * (schema step 6 in db.c), so that a role that only needs the set reads
 * it instead of building an inventory of its own.
 *
 * relayd, the one writer, keeps the set equal to what its inventory's
 * inv_eligible_each() gives (relay_inv.c): inside the write transaction
 * of the events that change it, and once at start.  discoveryd reads it.
 * Every change bumps a generation, so a reader polls one row
 * (eligible_generation()) and reads the set (eligible_each()) only when
 * it moved.
 *
 * Every function returns -1 after logging on a database error and never
 * exits.
 */
#ifndef GRASPD_ELIGIBLE_H
#define GRASPD_ELIGIBLE_H

#include <stdint.h>

#include "nip01.h"

struct sqlite3;

/*
 * Adds (set != 0) or removes pubkey.  Returns 1 if the table changed, 0
 * if it already was so; the generation is not bumped (eligible_bump()
 * once after a run of changes).  Works inside or outside a transaction.
 */
int eligible_put(struct sqlite3 *, const uint8_t pubkey[PUBKEY_LEN], int set);

/* Bumps the generation: readers read the set again. */
int eligible_bump(struct sqlite3 *);

/* The current generation in *out. */
int eligible_generation(struct sqlite3 *, int64_t *out);

/*
 * Calls cb once for every pubkey in the set (valid during the call) and
 * stores the generation read with them in *gen (if not NULL), both from
 * one read transaction (or the caller's).  Returns the number of pubkeys.
 */
int eligible_each(struct sqlite3 *,
    void (*cb)(void *arg, const uint8_t pubkey[PUBKEY_LEN]), void *arg,
    int64_t *gen);

#endif
