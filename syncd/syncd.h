/*
 * syncd.h: private header of syncd, graspd's GRASP-02 sync role: it keeps
 * this relay complete for every repository it hosts by pulling, from the
 * relays each accepted announcement names, everything about the
 * repository: history first (paginated), then live.
 *
 * syncd.c       main, the role hooks, the batch window, and the
 *               reconciliation that reads the inventory's tables
 *               (invdb.h) in one read transaction
 * sync_relay.c  one remote relay: wanted and fetched targets, historic
 *               requests (NIP-77 negentropy then the needed ids, or
 *               pagination), live subscriptions, catch-up after outages,
 *               the daily resync
 * sync_neg.c    negentropy's item sets from the database, the relays
 *               that do not speak NIP-77, the ids each relay delivered
 * sync_git.c    the git-data hunt for events held in purgatory: one
 *               state machine per repository identifier, relayd told
 *               when objects came; held announcements fed to syncd's
 *               small inventory of StateOnly repositories
 * sync_gitsrc.c the hunt's git source: the git children that check the
 *               repository and fetch from the vetted clone URLs
 *               (sync_git.h holds what the two share)
 * sync_plus.c   GRASP-03 in ordinary coverage: root authors' inboxes
 *               and fallback relays in the live subscriptions
 *               (sync_plus.h)
 *
 * Everything fetched goes to relayd over the ingest channel; syncd never
 * writes the database.  What it knows of repositories, roots and threads
 * it reads from the inventory's tables relayd keeps (invdb.h), one read
 * transaction per reconciliation, so that nothing it holds grows with
 * the store but the wanted targets themselves; only purgatory's StateOnly
 * announcements, which the tables do not hold, stay in a small inventory
 * of its own.  The rest of its state is rebuilt from the database at
 * start.
 */
#ifndef GRASPD_SYNCD_H
#define GRASPD_SYNCD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "conn.h"
#include "digest.h"
#include "hmap.h"
#include "inventory.h"
#include "role.h"

/* Reference brief 3.2: layer 1, every announcement and user grasp list. */
#define SYNC_L1_FILTER	       "{\"kinds\":[30617,10317]}"
/* Reference brief 3.2 (state), plus 30617 so that maintainers'
 * announcements refused before their owner's are fetched again. */
#define SYNC_STATE_BASE	       "\"kinds\":[30617,30618]"
/* Reference brief 3.7: an outage shorter than this resumes ... */
#define SYNC_QUICK_RECONNECT   900.0
/* ... from this long before the disconnect. */
#define SYNC_CATCHUP_MARGIN    900.0
/* Reference brief 3.7: the daily full resync, at a random moment ... */
#define SYNC_DAILY_MIN	       (23.0 * 3600)
#define SYNC_DAILY_MAX	       (25.0 * 3600)
/* Ours: accepted events gathered this long before targets are rebuilt
 * (the reference's 5 s self-subscriber window; 200 ms under NGIT_TEST)
 * while historic requests are in flight, and at most this long ... */
#define SYNC_BATCH_WINDOW      2.0
/* ... but while none is, only until no change came for this long (the
 * events of the last fetch are stored), and no sooner than twice this
 * after the last rebuild (both 200 ms under NGIT_TEST: cfg_period()). */
#define SYNC_BATCH_QUIET       0.25
/* Ours: freed heap is handed back to the kernel (malloc_trim) after a
 * rebuild of the targets or the end of the historic requests, at most
 * this often: glibc keeps the start's peak otherwise (at 10,000
 * repositories 304 MB resident where 134 MB were in use; a trim of a
 * heap that size takes milliseconds). */
#define SYNC_TRIM_INTERVAL     5.0
/* Ours: a failed historic fetch is tried again after this long. */
#define SYNC_RETRY	       60.0
/* Ours: needed ids asked in one REQ after a reconciliation: below the
 * 500-event cap of common relays (strfry's maxFilterLimit, nips.md
 * 1.10), so that the relay's limit never cuts the answer short, and
 * about 30 KB, within CONN_REQ_BUDGET.  450 rather than 250: a pull of
 * 20,000 events took 6.9-7.7 s instead of 8.3-8.6 (fewer paced REQs). */
#define SYNC_NEG_IDS_PER_REQ   450
/* Ours: how long a relay found without NIP-77 gets paginated REQs
 * before NEG-OPEN is tried again (a day, like the full resync). */
#define SYNC_NEG_RECHECK       (24.0 * 3600)
/* ... and under NGIT_TEST (not the 60-fold rule, whose 24 minutes no
 * test can wait for; longer than a fallback takes to be seen). */
#define SYNC_NEG_RECHECK_TEST  10.0
/* Ours: ids remembered as delivered by one relay (32 bytes each plus
 * the map); beyond it the memory is cleared. */
#define SYNC_NEG_DELIVERED_MAX 1000000
/* Ours: live REQs left free for historic fetches (conn's ledger). */
#define SYNC_LIVE_RESERVE      2
/* Ours: filters that do not fit live are polled this often instead. */
#define SYNC_ROTATE_PERIOD     300.0
/* Ours: a replaced live subscription may leave a moment uncovered (its
 * replacement waits for REQ pacing or the ledger); that moment is caught
 * up like a short outage this long after it, at most once per period. */
#define SYNC_GAP_FILL	       60.0

/*
 * The git-data hunt (sync_git.c, sync_gitsrc.c).  Delays are scaled by
 * NGIT_TEST (cfg_scale_delay), the loop period by cfg_period.
 */
/* Ours: the purgatory tables are scanned this often, a safety net:
 * held events syncd itself sent are looked for at once, and each hunt
 * has a timer for when it is due (the reference's loop ran every 1 s,
 * brief 3.15, which put 0 to 1 s before every synced fetch). */
#define SYNC_GIT_TICK		   5.0
/* Ours: after syncd sends relayd a state, PR or PR update, the tables
 * are scanned every SYNC_GIT_POLL until it is held, or this long. */
#define SYNC_GIT_WATCH		   2.0
/* Ours: at most this many such events are watched at once (a historic
 * fetch sends thousands; the periodic scan finds the rest). */
#define SYNC_GIT_WATCH_MAX	   256
/* Reference brief 3.15: first attempt after a user-submitted event, so
 * that the user's own push comes first ... */
#define SYNC_GIT_DELAY_USER	   180.0
/* ... and after a synced one (not waited for when it came from a relay
 * that is one of the clone URLs' servers: GRASP-01 has it serve the
 * event only once it holds the git data). */
#define SYNC_GIT_DELAY_SYNCED	   0.5
/* Reference brief 3.15: an incomplete attempt waits 20 s, doubling ... */
#define SYNC_GIT_BACKOFF_FIRST	   20.0
/* ... up to 120 s. */
#define SYNC_GIT_BACKOFF_MAX	   120.0
/* Reference brief 3.15: fetches from one domain at once ... */
#define SYNC_GIT_DOMAIN_CONCURRENT 5
/* ... and started in any window of 60 s (production's 60, not the 30 of
 * the reference's docs). */
#define SYNC_GIT_DOMAIN_RATE	   60
#define SYNC_GIT_DOMAIN_WINDOW	   60.0
/* Ours: a git fetch is killed after this long (5 s under NGIT_TEST) ... */
#define SYNC_GIT_FETCH_TIMEOUT	   300.0
/* ... and git gives up by itself on a transfer stalled this long. */
#define SYNC_GIT_STALL_SECS	   60
/* Ours: an object check (git cat-file) is killed after this long. */
#define SYNC_GIT_CHECK_TIMEOUT	   30.0
/* Ours: git processes the hunt runs at once. */
#define SYNC_GIT_MAX_CHILDREN	   8
/* Ours: objects checked per identifier, asked per fetch, and clone URLs
 * tried per identifier. */
#define SYNC_GIT_MAX_OBJECTS	   4096
#define SYNC_GIT_MAX_WANTS	   256
#define SYNC_GIT_MAX_URLS	   16
/* Ours: bytes of a git fetch's error output kept (its tail). */
#define SYNC_GIT_ERR_KEEP	   4096
/* Ours: running git processes and relayd's answers are polled this
 * often while there are any. */
#define SYNC_GIT_POLL		   0.1
/* Ours: ended git children are reaped this often while any runs, so
 * that a clone URL's failed fetch hands over to the next one at once. */
#define SYNC_GIT_REAP		   0.02
/* Ours: how long relayd may take to answer a GIT_DATA notice.  It
 * answers after the release, which runs git on the repository: 1 s was
 * too short under the sanitizers (relayd released, syncd had given up),
 * and a large repository on a loaded machine takes longer still. */
#define SYNC_GIT_NOTICE_TIMEOUT	   10.0

/* Which wanted set a historic request covers. */
enum sync_set {
	SET_D,	   /* identifiers: state + announcements by #d */
	SET_REPOS, /* repository coordinates: layer 2 */
	SET_IDS,   /* root and descendant ids: layer 3 */
	SET_ADDRS, /* descendant address coordinates: layer 3 */
	SET_COUNT
};

struct syncd;
struct sync_hreq;
struct sync_git;

struct sync_relay {
	struct syncd	*sr_sd;
	char		*sr_key;
	struct conn	*sr_conn;
	int		 sr_bootstrap;
	int		 sr_marked;	     /* still wanted this round */
	struct hmap	 sr_want[SET_COUNT]; /* value -> (void *)1 */
	struct hmap	 sr_have[SET_COUNT]; /* historic requested */
	int		 sr_l1_have;
	struct conn_req *sr_live[CONN_MAX_LIVE];
	/* The digest of each one's filters text (conn keeps the text). */
	uint8_t		 sr_live_sum[CONN_MAX_LIVE][DIGEST_SHA256_LEN];
	size_t		 sr_nlive;
	/* What the live REQs (and the rotation) were built from, and
	 * whether every one of them was taken: a wanted set within it
	 * keeps them (removal-only changes drain, GRASP-03). */
	struct hmap	 sr_live_cover[SET_COUNT];
	int		 sr_live_whole;
	char	       **sr_rotate; /* filters that do not fit live */
	size_t		 sr_nrotate;
	int64_t		 sr_rotated_at;	     /* unix time of the last poll */
	unsigned	 sr_historic;	     /* requests in flight */
	unsigned	 sr_failed;	     /* historic requests that failed */
	int64_t		 sr_connected_at;    /* unix time, 0 never */
	int64_t		 sr_disconnected_at; /* unix time, 0 connected */
	int64_t		 sr_synced_at;	     /* last historic completion */
	uint64_t	 sr_events;	     /* events it delivered */
	/* NIP-77 (sync_neg.c): ids it delivered (32-byte keys), and what
	 * its reconciliations cost and found. */
	struct hmap	 sr_delivered;
	/* ... and ids an id fetch is asking it for right now (32-byte
	 * keys; the one reconciliation that asks an id holds it), so that
	 * another reconciliation does not ask them again. */
	struct hmap	 sr_asking;
	uint64_t	 sr_neg_sessions;    /* reconciliations done */
	uint64_t	 sr_neg_fallbacks;   /* ended in a paginated REQ */
	uint64_t	 sr_neg_rounds;	     /* NEG-MSG answers */
	uint64_t	 sr_neg_bytes;	     /* NEG-* bytes both ways */
	uint64_t	 sr_neg_fetch_bytes; /* id fetches: REQs, events */
	uint64_t	 sr_neg_need;	     /* ids needed (to fetch) */
	uint64_t	 sr_neg_have;	     /* ids only we have (counted) */
	uint64_t	 sr_neg_skipped;     /* needed, delivered before */
	LIST_HEAD(, sync_hreq) sr_hreqs;     /* historic in flight */
	int64_t		       sr_catchup_since; /* pending catch-up, or 0 */
	int64_t		       sr_gap_at;	 /* first live replacement
						   not yet caught up, or 0 */
	lws_sorted_usec_list_t sr_sul_daily;
	lws_sorted_usec_list_t sr_sul_retry;
	lws_sorted_usec_list_t sr_sul_rotate;
	lws_sorted_usec_list_t sr_sul_gap;
};

/*
 * One root's thread as reconcile() reads it once (invdb_thread()) for
 * every relay that wants it: the root's id and its descendants' ids in
 * hex, and the descendants' address coordinates.  Reused root to root.
 */
struct sync_thread {
	char st_root[2 * EVENT_ID_LEN + 1];
	char (*st_ids)[2 * EVENT_ID_LEN + 1];
	size_t st_nids, st_capids;
	char **st_addrs;
	size_t st_naddrs;
};

/* The totals of the view and the metrics, and what they were read at. */
struct sync_totals {
	size_t	 tt_nrepos;    /* Full and held StateOnly */
	size_t	 tt_refused;   /* relay URLs target hygiene refused */
	size_t	 tt_bykind[3]; /* live attached roots: 1617, 1618, other */
	size_t	 tt_unlinked;  /* live roots waiting for their repository */
	int64_t	 tt_gen;       /* the tables' generation */
	uint64_t tt_held_gen;  /* sd_held's */
	int	 tt_valid;
};

struct syncd {
	struct role_ctx	      *sd_ctx;
	/* Purgatory's StateOnly announcements (sync_git.c), the only
	 * repositories the tables do not hold: inv_add_stateonly() only. */
	struct inventory      *sd_held;
	uint64_t	       sd_held_gen; /* its generation reconciled */
	int64_t		       sd_inv_gen;  /* invdb generation reconciled */
	struct conn_mgr	      *sd_conns;
	struct hmap	       sd_relays;    /* key -> struct sync_relay */
	char		      *sd_bootstrap; /* canonical key, or NULL */
	int		       sd_window_armed;
	lws_usec_t	       sd_window_at;	 /* when it fires */
	lws_usec_t	       sd_window_start;	 /* the first change */
	lws_usec_t	       sd_window_moved;	 /* sd_window_at last moved */
	lws_usec_t	       sd_reconciled_at; /* the last rebuild */
	lws_sorted_usec_list_t sd_sul_window;
	int		       sd_trim_armed;
	lws_usec_t	       sd_trimmed_at;
	lws_sorted_usec_list_t sd_sul_trim;
	uint64_t	       sd_trims;	 /* malloc_trim() calls */
	uint64_t	       sd_events;	 /* events sent to relayd */
	uint64_t	       sd_scanned;	 /* stored events at start */
	uint64_t	       sd_announcements; /* 30617 events taken */
	uint64_t	       sd_reconciles;
	struct hmap	       sd_no_neg; /* keys without NIP-77 */
	struct sync_git	      *sd_git;	  /* the git-data hunt */
	struct sync_totals     sd_totals; /* syncd.c's totals() */
};

/* sync_relay.c */
struct sync_relay *sync_relay_new(struct syncd *, const char *key, int boot);
void		   sync_relay_free(struct sync_relay *);
/* Clears the wanted sets before a new round of sync_relay_want(). */
void		   sync_relay_clear_want(struct sync_relay *);
void sync_relay_want(struct sync_relay *, enum sync_set, const char *v);
/* Wants a root's thread: its id, its descendants' ids and addresses. */
void sync_relay_want_thread(struct sync_relay *, const struct sync_thread *);
/*
 * Requests what is wanted and not yet fetched; refreshes live REQs when
 * something was added (a removal only leaves them as they are).
 */
void sync_relay_update(struct sync_relay *);
/* The connection's state changed (conn hook). */
void sync_relay_state(struct sync_relay *, enum conn_state old,
    enum conn_state now);
/* A live event created at created_at was dropped on its way to relayd. */
void sync_relay_dropped(struct sync_relay *, int64_t created_at);
void sync_relay_show(struct sync_relay *, cJSON *obj);

/* sync_neg.c */
/*
 * Our negentropy set for filter_json: (created_at, id) of every stored
 * event matching it (no limit, expired events left out), in *items
 * (malloc'd, caller frees) and *n.  Returns 0, or -1 with *why (static)
 * if the filter does not parse, the query fails or more than
 * NEG_MAX_ITEMS events match.
 */
int  sync_neg_items(struct syncd *, const char *filter_json,
     struct neg_item **items, size_t *n, const char **why);
/* 1 if historic filters to relay key try negentropy first: not disabled
 * (NGIT_SYNC_DISABLE_NEGENTROPY) and not remembered as unsupported. */
int  sync_neg_allowed(const struct syncd *, const char *key);
/* Remembers (in memory) that relay key does not speak NIP-77. */
void sync_neg_unsupported(struct syncd *, const char *key, const char *why);
/* Notes an id the relay delivered / asks whether it did. */
void sync_neg_delivered(struct sync_relay *, const uint8_t id[EVENT_ID_LEN]);
int  sync_neg_was_delivered(const struct sync_relay *,
     const uint8_t id[EVENT_ID_LEN]);
/* Frees the remembered relays. */
void sync_neg_fini(struct syncd *);

/* sync_git.c */
/* Starts the hunt's timers and its notice socket to relayd. */
void sync_git_init(struct syncd *);
/* Kills running git processes and frees everything; NULL-safe. */
void sync_git_fini(struct syncd *);
/* The "git_hunting" array and counters of `graspctl show syncd`. */
void sync_git_show(struct syncd *, cJSON *view);
void sync_git_stats(struct syncd *, cJSON *metrics);
/*
 * syncd sent relayd an event (json, len bytes) from relay_key: if it is
 * a state, PR or PR update, the hunt looks for it in purgatory at once
 * and remembers where it came from.  Never blocks.
 */
void sync_git_ingested(struct syncd *, const char *relay_key, const char *json,
    size_t len);

/* syncd.c */
double sync_delay(const struct syncd *, double secs);
/* The held StateOnly repositories (sd_held) changed: rebuild targets
 * after the batch window. */
void   sync_inventory_changed(struct syncd *);
/* Derives the targets again after the batch window (GRASP-03 marks). */
void   sync_reconcile_soon(struct syncd *);
/* A relay's last historic request ended: an armed window may end sooner. */
void   sync_historic_idle(struct syncd *);

#endif
