/*
 * discoveryd.h: private header of discoveryd, graspd's GRASP-03 identity
 * discovery role: the narrow control plane that keeps the latest profile
 * (kind 0) and relay list (kind 10002) of every eligible identity author
 * on this relay.
 *
 * discoveryd.c   main, the role hooks, the eligible authors and their
 *                retained relay lists, the once-per-minute
 *                reconciliation, rounds, the view and the metrics
 * disc_source.c  discovery sources (user indexes, bootstrap, outboxes):
 *                their due authors, the one batch in flight, admission
 *                of at most one new source per maintenance pass,
 *                retirement once drained
 * disc_policy.c  pure decisions on a caller-supplied clock: when the
 *                once-per-minute reconciliation runs
 *
 * Everything fetched goes to relayd over the ingest channel (relayd
 * checks it like any untrusted event); discoveryd never writes the
 * database.  So do its GRASP-03 fallback marks (PLUSMARK messages), which
 * relayd persists for syncd and historyd (plusmark.h).  It keeps no
 * repository inventory: the eligible authors are the set relayd keeps in
 * the database (eligible.h).  Its state is rebuilt from the database at
 * start and nothing else of it is persisted: after a restart every
 * eligible author is due.
 */
#ifndef GRASPD_DISCOVERYD_H
#define GRASPD_DISCOVERYD_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "hmap.h"
#include "relaylist.h"
#include "role.h"

/* GRASP-03 text: "A once-per-minute reconciliation derives sources". */
#define DISC_RECONCILE_PERIOD	60.0
/* Ours, after ngit-grasp's 2 s background tick (reference brief 3.7):
 * the maintenance pass, which may dial one new discovery source. */
#define DISC_MAINT_PERIOD	2.0
/* GRASP-03 text: "Remote queries contain at most 100 authors". */
#define DISC_BATCH_AUTHORS	100
/* GRASP-03 text: "Authors returned by a successful query refresh after
 * 24 hours ..." */
#define DISC_REFRESH		(24.0 * 3600)
/* ... "missing authors and failed queries retry after five minutes". */
#define DISC_RETRY		(5.0 * 60)
/* GRASP-03 text: the index is asked for the relay list, "requesting the
 * profile alongside it"; outboxes are asked the same. */
#define DISC_FILTER_BASE	"{\"kinds\":[0,10002]}"
/* Ours: outbox sources newer relay lists may add to one author's round
 * (four replacements of four outboxes); bounds a list chain that names
 * new relays forever.  Operator-configured index sources are not
 * counted. */
#define DISC_ROUND_MAX_OUTBOXES (4 * RELAYLIST_PER_PURPOSE)
/* Ours: how long, in seconds, a relay list an index delivered has to
 * reach the store before the author counts as having no accepted list:
 * two feed polls (ROLE_FEED_POLL_PERIOD).  Not scaled by NGIT_TEST. */
#define DISC_SETTLE		(2 * ROLE_FEED_POLL_PERIOD)
/* Ours: authors listed one by one in `graspctl show discoveryd`. */
#define DISC_VIEW_MAX_AUTHORS	1000

struct disc_source;

/* What discoveryd knows about one author. */
struct disc_author {
	uint8_t		 da_pk[PUBKEY_LEN];
	char		 da_hex[PUBKEY_HEX_LEN + 1];
	int		 da_eligible;
	int		 da_mark; /* seen by this eligibility pass */
	/* The stored kind 10002, as the feed delivered it. */
	int		 da_has_list;
	int64_t		 da_list_at; /* its created_at */
	uint8_t		 da_list_id[EVENT_ID_LEN];
	struct relaylist da_list;
	int		 da_has_profile; /* a kind 0 is stored */
	/* The discovery round (every source asked once). */
	int64_t		 da_due_ms; /* monotonic; 0: due now */
	int		 da_in_round;
	uint64_t	 da_round;   /* serial, bumped per round */
	unsigned	 da_pending; /* sources not yet answered */
	struct hmap	 da_visited; /* source key -> (void *)1 */
	unsigned	 da_outboxes_added;
	int		 da_found;	/* a successful query had it */
	int		 da_failed;	/* a query failed */
	int		 da_index_ok;	/* an index query succeeded */
	int		 da_index_list; /* ... and delivered a 10002 */
	/* The last completed round. */
	const char	*da_result; /* NULL before the first */
	int64_t		 da_done_ms;
	int		 da_fb_index_ok;
	int		 da_fb_index_list;
	uint64_t	 da_rounds;
	/* The GRASP-03 fallback mark in the database (plusmark.h), as
	 * last read or sent. */
	int		 da_marked;
};

/* A relay asked for identities: user index, bootstrap or an outbox. */
struct disc_source {
	char	    *ds_key;
	int	     ds_index;	 /* operator-configured (trusted) */
	struct conn *ds_conn;	 /* held while it has due work */
	struct hmap  ds_pending; /* pubkey -> struct disc_author */
	uint64_t     ds_batches;
	uint64_t     ds_failed;
};

/* The one discovery batch in flight. */
struct disc_batch {
	struct discd	   *db_dd;
	struct disc_source *db_src;
	struct conn_req	   *db_req;
	size_t		    db_n;
	uint8_t		    db_pk[DISC_BATCH_AUTHORS][PUBKEY_LEN];
	uint64_t	    db_round[DISC_BATCH_AUTHORS];
	uint8_t		    db_got[DISC_BATCH_AUTHORS]; /* DISC_GOT_* */
	struct hmap	    db_index; /* pubkey -> index + 1 */
	int64_t		    db_started_ms;
	uint64_t	    db_events;
	uint64_t	    db_forged;
};
#define DISC_GOT_ANY  0x01 /* a kind 0 or 10002 of the author */
#define DISC_GOT_LIST 0x02 /* a kind 10002 */

struct discd {
	struct role_ctx	      *dd_ctx;
	int		       dd_enabled;
	int		       dd_started;  /* init done: changes start work */
	int64_t		       dd_elig_gen; /* eligible.h's, last read */
	int		       dd_elig_seen;
	struct hmap	       dd_authors; /* pubkey -> struct disc_author */
	size_t		       dd_neligible;
	unsigned	       dd_urlflags; /* for peers' relay lists */
	struct relayurl_self   dd_self;
	char		     **dd_index; /* user indexes, then bootstrap */
	size_t		       dd_nindex;
	struct conn_mgr	      *dd_conns;
	struct hmap	       dd_sources; /* key -> struct disc_source */
	struct disc_batch     *dd_batch;   /* in flight, or NULL */
	int		       dd_dialled; /* a new source this pass */
	int		       dd_last_ingest_ok;
	int64_t		       dd_reconciled_ms; /* disc_now_ms(); -1 never */
	lws_sorted_usec_list_t dd_sul_pass;
	/* Counters since start. */
	uint64_t	       dd_passes, dd_reconciles, dd_rounds;
	uint64_t	       dd_batches_ok, dd_batches_failed, dd_dials;
	uint64_t	       dd_found, dd_missing, dd_events, dd_forged;
	uint64_t	       dd_ingest_dropped;
	/* Fallback marks: the generation last read, messages sent. */
	int64_t		       dd_mark_gen;
	uint64_t	       dd_marks_sent, dd_marks_unsent;
};

/* disc_source.c */
/*
 * Puts author a on the due work of the source named key (a canonical
 * key), making the source if needed.
 */
void disc_source_add(struct discd *, const char *key, struct disc_author *a);
/* Takes a off every source's due work. */
void disc_source_forget(struct discd *, struct disc_author *a);
/*
 * Sends the next batch if none is in flight: a source already connected
 * first, else a new source if none was dialled in this pass.
 */
void disc_dispatch(struct discd *);
/* Ends the batch in flight and retires every source (fini). */
void disc_source_free_all(struct discd *);
/* 1 if key is one of the operator-configured index sources. */
int  disc_is_index(const struct discd *, const char *key);
void disc_source_show(struct discd *, cJSON *view);

/* disc_policy.c */
/*
 * 1 if the reconciliation runs in the maintenance pass at now_ms: the
 * first pass (*last_ms -1), then once per period_ms (GRASP-03: once a
 * minute), on the period's grid while the passes keep up.  Updates
 * *last_ms when it returns 1.
 */
int disc_reconcile_due(int64_t *last_ms, int64_t now_ms, int64_t period_ms);

/* discoveryd.c */
/*
 * The answer of one source for a in round `round`: ok (the query ended
 * with EOSE), got (DISC_GOT_* of the author's events), index (the source
 * is operator-configured).  Ends the round when no source is left.
 */
void disc_author_answer(struct discd *, struct disc_author *a, uint64_t round,
    int ok, unsigned got, int index);
int64_t disc_now_ms(void);

#endif
