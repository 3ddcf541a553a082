/*
 * sync_plus.h: syncd's part of GRASP-03 (issue #7): accepted root
 * authors' read/unmarked inboxes (at most four, RELAYLIST_INBOX) join
 * ordinary GRASP-02 coverage (historic, live, rotating) for their roots'
 * thread ids and descendant addresses; a root author without a stored
 * kind 10002 has its roots covered on the operator's fallback relays
 * (NGIT_SYNC_PLUS_FALLBACK_RELAYS) the same way.
 *
 * The fallback rule is GRASP-03's: a root author is on the fallback
 * relays iff discoveryd marked it (a successful user-index query returned
 * no accepted kind 10002; plusmark.h) and no accepted 10002 of it is
 * stored.  The marks are read at init, before the first reconciliation,
 * and again whenever their generation moves (polled every
 * PLUSMARK_POLL_PERIOD).
 */
#ifndef GRASPD_SYNC_PLUS_H
#define GRASPD_SYNC_PLUS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "nip01.h"

struct event;
struct syncd;
struct sync_relay;
struct sync_thread;

/* Reads the configuration (a no-op when NGIT_SYNC_PLUS_ENABLED=false). */
void sync_plus_init(struct syncd *);
/* One stored event; returns 1 if a root author's mailboxes may have
 * changed (a newer kind 10002), else 0. */
int  sync_plus_take(const struct event *);
/*
 * Inside reconcile(): sync_plus_begin() before the live roots of Full
 * repositories, sync_plus_root() for each root sync_plus_covers() (or
 * any other), and sync_plus_end() after them.
 */
void sync_plus_begin(void);
/* 1 if a root of author's is covered here: the author has a stored
 * relay list, or a fallback mark and there are fallback relays. */
int  sync_plus_covers(const uint8_t author[PUBKEY_LEN]);
/*
 * Marks the root author's inboxes (or the fallback relays, if it is
 * marked) with mark() and adds the root's thread th to each.
 */
void sync_plus_root(struct syncd *,
    struct sync_relay *(*mark)(struct syncd *, const char *key, int boot),
    const uint8_t author[PUBKEY_LEN], const struct sync_thread *th);
/* Counts what the roots since sync_plus_begin() marked, for the view. */
void sync_plus_end(void);
void sync_plus_show(cJSON *view);
void sync_plus_fini(void);

#endif
