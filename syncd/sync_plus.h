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

struct event;
struct syncd;
struct sync_relay;

/* Reads the configuration (a no-op when NGIT_SYNC_PLUS_ENABLED=false). */
void sync_plus_init(struct syncd *);
/* One stored event; returns 1 if a root author's mailboxes may have
 * changed (a newer kind 10002), else 0. */
int  sync_plus_take(const struct event *);
/*
 * Inside reconcile(): marks every root author's inbox (or fallback
 * relay) with mark() and adds the root's ids and addresses to it.
 */
void sync_plus_reconcile(struct syncd *,
    struct sync_relay *(*mark)(struct syncd *, const char *key, int boot));
void sync_plus_show(cJSON *view);
void sync_plus_fini(void);

#endif
