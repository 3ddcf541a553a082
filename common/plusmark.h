/*
 * plusmark.h: GRASP-03 fallback marks in graspd's database (schema step 3
 * in db.c).
 *
 * GRASP-03: "If a successful user-index query returns no accepted kind
 * 10002, accepted roots associated with that author temporarily use the
 * operator-configured Sync+ fallback relay set as mailboxes."  Only
 * discoveryd makes that query, so it decides the mark; relayd, the one
 * writer, persists it when discoveryd's PLUSMARK message arrives on the
 * ingest channel (msg.h); syncd and historyd read it.  A reader treats an
 * author as on fallback iff the author is marked AND it has no accepted
 * kind 10002 stored: an accepted list removes the author from fallback
 * coverage at once, whatever the table says.
 *
 * Marks survive restarts of every role and have no expiry of their own:
 * discoveryd clears a mark once the author has a stored list or is no
 * longer eligible, and asks again on its normal cadence.  Every change
 * bumps a generation, so readers poll one row (plusmark_generation())
 * and reload the set (plusmark_load()) only when it moved.
 *
 * Every function returns -1 after logging on a database error and never
 * exits, except on allocation failure.
 */
#ifndef GRASPD_PLUSMARK_H
#define GRASPD_PLUSMARK_H

#include <stdint.h>

#include "nip01.h"

struct hmap;
struct sqlite3;

/* Ours: how often, in seconds, syncd polls the generation (historyd
 * polls it on its maintenance pass, discoveryd on its reconciliation). */
#define PLUSMARK_POLL_PERIOD 1.0

/*
 * Sets (set != 0, at unix time now) or clears pubkey's mark.  Returns 1
 * if the table changed (and the generation was bumped), 0 if it already
 * was so.  Works inside or outside a transaction (relayd runs it inside
 * its batched one).
 */
int plusmark_set(struct sqlite3 *, const uint8_t pubkey[PUBKEY_LEN], int set,
    int64_t now);

/* The current generation in *out. */
int plusmark_generation(struct sqlite3 *, int64_t *out);

/*
 * Replaces the contents of set with the marked pubkeys (32-byte keys,
 * value (void *)1) and stores the generation read with them in *gen (if
 * not NULL), both from one read transaction.  Returns the number of
 * marks.  set keeps its old contents on error.
 */
int plusmark_load(struct sqlite3 *, struct hmap *set, int64_t *gen);

#endif
