/*
 * store.h: the event store: NIP-01 events in graspd's SQLite database,
 * with the replaceable/addressable rules, NIP-09 deletions and NIP-40
 * expiration applied.
 *
 * relayd writes through it (and reads REQs from it); the other roles read
 * it, and follow the accepted feed in seq order.  A struct store is one
 * connection with its cached prepared statements; it belongs to one
 * thread.  Callbacks given to the query functions must not call back into
 * the same store.
 */
#ifndef GRASPD_STORE_H
#define GRASPD_STORE_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct filter;
struct idhint;
struct store;
struct sqlite3;
struct sqlite3_stmt;

/* ngit-grasp brief 2.1: limit per filter when a REQ filter has none. */
#define STORE_DEFAULT_LIMIT 500
/* nips.md 1.10 (STRFRY maxFilterLimit): the largest limit honoured. */
#define STORE_MAX_LIMIT	    500

enum store_result {
	STORE_OK,		/* stored */
	STORE_DUPLICATE,	/* that id is already stored */
	STORE_DELETED,		/* refused: deleted by NIP-09 */
	STORE_REPLACED,		/* refused: an equal or newer version is
				   stored (NIP-01 replaceable rule) */
	STORE_INVALID_DELETION, /* kind 5 naming others' events */
	STORE_ERROR,		/* database error, or an ephemeral kind */
};

/*
 * Opens (read-write: creating and migrating) the database at path; see
 * db_open().  Returns the store, or NULL with the reason in err.  The
 * caller closes it with store_close().  Never exits, except on allocation
 * failure.
 */
struct store *store_open(const char *path, int readonly, char *err,
    size_t errlen);
/* Finalizes the cached statements and closes the connection.  NULL is fine. */
void	      store_close(struct store *);

/*
 * Transactions (BEGIN IMMEDIATE, so the write lock is taken up front).
 * relayd wraps the puts of one loop turn in one transaction and answers
 * OK only after store_commit() succeeds.  Each returns 0, or -1 after
 * logging; a failed commit leaves the transaction rolled back.
 */
int  store_begin(struct store *);
int  store_commit(struct store *);
int  store_rollback(struct store *);
/*
 * Frames in the WAL after the last commit or checkpoint of this
 * connection.  A read-write store checkpoints by itself once a commit
 * leaves DB_WAL_AUTOCHECKPOINT (db.h) of them, as SQLite would, unless
 * told otherwise (store_set_autocheckpoint()).
 */
int  store_wal_frames(const struct store *);
/*
 * Sets the WAL size in frames at which a commit checkpoints by itself
 * (DB_WAL_AUTOCHECKPOINT by default); 0 never.  A user that runs its
 * checkpoints on another connection (relayd's thread, relay_ckpt.c) sets
 * it higher, as a backstop for when they fall behind.
 */
void store_set_autocheckpoint(struct store *, int frames);

/*
 * Stores ev (already verified by the caller: id, signature, policy) and
 * applies its effects: a replaceable or addressable event removes the
 * older version it replaces; a kind 5 event (NIP-09) removes the events
 * and addresses of its author that it names and records them as deleted,
 * so that they are refused if they come back.  Works inside or outside a
 * store_begin() transaction.  A refused put changes nothing; a failed one
 * (STORE_ERROR) changes nothing outside a transaction, and inside one makes
 * every later put of it fail too and store_commit() roll the whole
 * transaction back and fail.  On
 * STORE_OK stores the new seq in *seq_out (if not NULL).  Ephemeral kinds
 * must not be passed in: they give STORE_ERROR, as does any write through
 * a read-only store.  Does not look at NIP-40 expiration; that is the
 * caller's policy.  Never exits, except on allocation failure.
 */
enum store_result store_put(struct store *, const struct event *ev,
    int64_t *seq_out);
/*
 * store_put() inside a store_begin() transaction for an event the caller
 * found, in that transaction, to be neither stored (store_has_id()) nor
 * deleted (store_is_deleted() with its author): the same put without
 * those two lookups, which relayd's batch has just made.  Outside a
 * transaction it gives STORE_ERROR and writes nothing.
 */
enum store_result store_put_new(struct store *, const struct event *ev,
    int64_t *seq_out);

/*
 * The NIP-01 OK message for a put result ("" for STORE_OK), a static
 * string.  store_result_ok() gives the OK flag to send with it: true for
 * STORE_OK and STORE_DUPLICATE, false for the rest (an older replaceable
 * version is refused with "invalid:", as ngit-grasp does).
 */
const char *store_result_message(enum store_result);
int	    store_result_ok(enum store_result);

/* 1 if an event with that id is stored, 0 if not, -1 on error. */
int store_has_id(struct store *, const uint8_t id[EVENT_ID_LEN]);
/*
 * store_has_id() for each of the n ids, its answer in out[i], all in one
 * read transaction (or in the caller's): outside a transaction each
 * lookup would take and release the WAL read lock, two system calls and
 * most of a lookup's cost.  Returns 0, or -1 on an error (logged; out
 * is then set only up to the id that failed, which holds -1).
 */
int store_has_ids(struct store *, const uint8_t (*ids)[EVENT_ID_LEN], size_t n,
    int *out);
/*
 * 1 if a NIP-09 deletion by pubkey recorded that id as deleted (pubkey
 * NULL: by anyone), 0 if not, -1 on error.
 */
int store_is_deleted(struct store *, const uint8_t id[EVENT_ID_LEN],
    const uint8_t pubkey[PUBKEY_LEN]);
/*
 * 1 if an event of that kind by that author with that d value ("" for a
 * replaceable kind) is stored, 0 if not, -1 on error.  d is NUL-terminated.
 */
int store_has_address(struct store *, uint32_t kind,
    const uint8_t pubkey[PUBKEY_LEN], const char *d);
/*
 * 1 if some stored event has a tag whose one-letter name is one of the
 * letters in names (e.g. "aAq") and whose first value is exactly value,
 * 0 if not, -1 on error.  Expired events count.
 */
int store_tag_exists(struct store *, const char *names, const char *value);

/*
 * Runs the stored-events phase of a REQ: for each of the n filters, the
 * newest matching events first (created_at descending, then id
 * ascending), at most the filter's limit (clamped to max_limit;
 * default_limit when absent, or the number of ids for an ids filter).
 * Events already delivered for an earlier filter are not repeated, and
 * events whose NIP-40 expiration is before now are skipped.  cb gets the
 * stored JSON (valid only during the call) and seq; a non-zero return
 * stops the query.  Returns the number of events delivered, or -1 on a
 * database error.
 */
int store_query(struct store *, const struct filter *f, size_t n,
    size_t max_limit, size_t default_limit, int64_t now,
    int (*cb)(const char *json, size_t len, int64_t seq, void *arg), void *arg);

/*
 * Where a REQ's stored-events phase stands between store_query_page()
 * calls, so that it can be answered in parts as its reader takes them:
 * the filter being run, the rows it has given (those skipped as already
 * delivered included: they count toward its limit), the (created_at, id)
 * of the last of them, and the highest seq the query may see, fixed when
 * it first pauses so that events stored later are left out (they reach a
 * subscription live).  The caller zeroes it with store_cursor_init() and
 * releases it with store_cursor_free(); the rest is the store's.
 */
struct store_cursor {
	size_t	sc_filter;
	size_t	sc_rows;
	int	sc_has_pos;
	int64_t sc_created_at;
	uint8_t sc_id[EVENT_ID_LEN];
	int64_t sc_max_seq; /* -1 until the first pause */
	int64_t sc_now;	    /* NIP-40 expiration is judged at this time */
	int	sc_done;    /* every filter has been run to its end */
	void   *sc_seen;    /* the seqs delivered (several filters) */
};

/* Readies cur for a query run at time now.  Never fails. */
void store_cursor_init(struct store_cursor *cur, int64_t now);
/*
 * Fixes cur's view now, before its first page, as its first pause would:
 * events stored from now on are left out.  For a query whose first page
 * waits while new events reach its subscription live.  0, or -1 on a
 * database error.
 */
int  store_cursor_fix(struct store *, struct store_cursor *cur);
/* Frees what cur holds; it may be initialized again after. */
void store_cursor_free(struct store_cursor *cur);

/*
 * store_query() from where cur stands: the same events in the same order
 * as one store_query() at cur's start would give, except those removed
 * meanwhile (deleted or replaced; the limit counts events given, so the
 * next one takes such an event's place).  A non-zero return of cb pauses
 * after
 * that event: call again with the same f, n, limits and cur to go on.
 * Sets cur->sc_done once every filter is exhausted.  Returns the number
 * delivered by this call, or -1 on a database error (cur must then only
 * be freed).
 */
int store_query_page(struct store *, const struct filter *f, size_t n,
    size_t max_limit, size_t default_limit, struct store_cursor *cur,
    int (*cb)(const char *json, size_t len, int64_t seq, void *arg), void *arg);

/*
 * The (created_at, id) of every stored event matching filter f, for a
 * NIP-77 set: the filter's limit is ignored, events whose NIP-40
 * expiration is before now are skipped, and the order is created_at
 * ascending, then id ascending.  cb gets each pair (id valid only during
 * the call); a non-zero return stops the query.  At most max are
 * delivered; *more is set to 1 if more events match, else 0.  Returns
 * the number delivered, or -1 on a database error.
 */
int store_query_items(struct store *, const struct filter *f, int64_t now,
    size_t max,
    int (*cb)(int64_t created_at, const uint8_t id[EVENT_ID_LEN], void *arg),
    void *arg, int *more);

/* Number of stored events, or -1 on error. */
int64_t store_count(struct store *);
/*
 * The highest seq ever assigned (0 for a new database), even if that
 * event has since been removed, into *out.  Returns 0, or -1 on error.
 */
int	store_last_seq(struct store *, int64_t *out);
/*
 * From now on each event this store inserts has its id added to h
 * (idhint.h), NULL to stop; h outlives the store or the next call.
 */
void	store_set_idhint(struct store *, struct idhint *h);
/*
 * Passes cb the ids of at most max stored events whose id sorts after
 * after (its first *afterlen bytes: 0 for the first id of all), in id
 * order, in one read transaction of their own; leaves the last one in
 * after.  Returns how many, 0 at the end, or -1 on a database error.
 */
int	store_ids_after(struct store *, uint8_t after[EVENT_ID_LEN],
	size_t *afterlen, size_t max, void (*cb)(const uint8_t *, void *),
	void *arg);
/*
 * Delivers the stored events with seq > after in seq order, at most max
 * of them, through cb as in store_query() (expired events included).
 * Returns the number delivered, or -1 on error.
 */
int	store_since_seq(struct store *, int64_t after, size_t max,
	int (*cb)(const char *json, size_t len, int64_t seq, void *arg), void *arg);
/*
 * store_since_seq() where only the events of the nkinds kinds listed
 * are wanted: every row still reaches cb, in seq order, but one of
 * another kind comes with json NULL and len 0, its text not read, so
 * that the caller moves past it.  Returns the rows delivered, or -1.
 */
int	store_since_seq_kinds(struct store *, int64_t after, size_t max,
	const uint32_t *kinds, size_t nkinds,
	int (*cb)(const char *json, size_t len, int64_t seq, void *arg), void *arg);

/*
 * 1 if a NIP-09 "a" deletion by pubkey covers (kind, d) at created_at, so
 * that store_put() would refuse a version of that age; 0 if not; -1 on
 * error.  d is NUL-terminated.
 */
int store_address_deleted(struct store *, uint32_t kind,
    const uint8_t pubkey[PUBKEY_LEN], const char *d, int64_t created_at);

/*
 * The store's SQLite connection, for the modules that own other tables of
 * the same database (purg.c).  Owned by the store; do not close it.
 */
struct sqlite3	    *store_sqlite(struct store *);
/*
 * The prepared statement of sql (a constant text) from the store's cache
 * of statements (the one REQ query shapes use), prepared and kept if new,
 * reset with its bindings cleared; NULL after logging.  It stays valid
 * while fewer than the cache's size of other texts are asked for: a
 * caller may nest a few, never keep one.
 */
struct sqlite3_stmt *store_cached(struct store *, const char *sql);

/*
 * Purgatory (GRASP-01; schema step 2 in db.c, accessed through purg.h).
 * Events whose git data has not arrived are held here, not in events, so
 * REQ never serves them; relayd moves them to events when the data lands.
 *
 *   purgatory_announcements  one row per (pubkey, d): a kind 30617 that
 *	lists this service and has no stored version yet.  Columns: pubkey
 *	(owner, 32-byte blob), d, id, created_at, json (the event), relays
 *	(JSON array of its "relays" tag values), entered_at, expires_at
 *	(unix seconds), soft_expired.  Phase one ends at expires_at (30
 *	minutes after entry or the last extension): the bare repository is
 *	deleted, soft_expired becomes 1 and expires_at moves 24 hours on; a
 *	state event of an authorised author revives it (repository
 *	re-created, 30 minutes again).  At the end of phase two the row goes
 *	and its id enters purgatory_expired.
 *   purgatory_events  kind 30618 states, 1618 PRs and 1619 PR updates:
 *	id, pubkey, kind, created_at, d (the repository identifier: the
 *	state's d, the d of a PR's first "a 30617:" tag), json, remote (1 when
 *	a sibling role fetched it, 0 from a client), entered_at, expires_at
 *	(30 minutes).  Expired rows go and their ids enter purgatory_expired.
 *   purgatory_wants  (event, oid): the commit and tag objects a held event
 *	waits for (a state's heads and tags, a PR's "c").  syncd's git-data
 *	hunt reads what is missing here; the clone URLs to try are in the
 *	announcements (events and purgatory_announcements) with that d.
 *   purgatory_placeholders  (id, owner, d, oid, expires_at): a push to
 *	refs/nostr/<id> of <owner>/<d>.git before any event <id> was seen.
 *   purgatory_expired  (id, expired_at): ids that expired without their
 *	git data; their synced copies are refused for 7 days.
 *   repo_sync_levels (view)  pubkey, d, level, json, relays, soft_expired:
 *	every repository of an accepted announcement.  level is 'full' when
 *	the announcement is stored in events (sync states, layer 2 and
 *	layer 3) and 'state_only' while it is only in purgatory (sync kind
 *	30618 for d on its relays, so that states, and with them the git
 *	data, can arrive).  relays is set for 'state_only' rows.
 */

#endif
