/*
 * store.c: the event store over graspd's SQLite database (schema in
 * db.c).  relayd writes and answers REQs through it; syncd, discoveryd
 * and historyd read it and follow the accepted feed by seq.
 *
 * Every fixed statement is prepared once, on first use, and kept.  A REQ
 * filter becomes one SELECT whose shape depends on which members the
 * filter has and how long its lists are (qbuild.c); the last STORE_QCACHE
 * shapes stay prepared.  Values are always bound, never written into
 * the SQL text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "fnv.h"
#include "filter.h"
#include "idhint.h"
#include "log.h"
#include "qbuild.h"
#include "store.h"

/* Ours: how many query shapes stay prepared. */
#define STORE_QCACHE   64
/*
 * Ours: tag rows one INSERT carries at most (insert_tag_rows()).  An
 * event's rows go in one statement instead of one each: a statement's
 * step, halt, reset and bindings cost about as much as the B-tree insert
 * of its row.  Eight covers the 3 to 6 rows of the events relays see
 * most (issues, comments, statuses).
 */
#define STORE_TAG_ROWS 8
/*
 * How a tag row meets the row of its key already there (db.c, step 9):
 * the same value under the other case of the name, or again under the
 * same one, adds its case to the row's.
 */
#define TAG_UPSERT \
	" ON CONFLICT (letter, value, created_at, event)" \
	" DO UPDATE SET cases = cases | excluded.cases"
/*
 * Ours: rows of one created_at held beyond a query's limit before they
 * are cut to it (cut_ties()), so that a long run of equal times costs a
 * sort every 64 rows, not every row, and memory stays near the limit.
 */
#define STORE_TIES_SLACK 64
enum store_stmt {
	ST_BEGIN,
	ST_BEGIN_READ,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_HAS_ID,
	ST_GET_BY_ID,
	ST_IS_DELETED,
	ST_IS_DELETED_ANY,
	ST_ADDR_DELETED,
	ST_GET_ADDR,
	ST_HAS_ADDR,
	ST_GET_SEQ,
	ST_DELETE_SEQ,
	ST_INSERT,
	ST_INSERT_TAG,
	ST_DELETE_TAG,
	ST_DELETE_TAGS_SCAN,
	ST_MARK_DELETED,
	ST_MARK_ADDR_DELETED,
	ST_TAG_EXISTS,
	ST_COUNT,
	ST_LAST_SEQ,
	ST_SINCE_SEQ,
	ST_IDS_AFTER,
	ST_NSTMT,
};

static const char *const store_sql[ST_NSTMT] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	/* The first read takes the snapshot, and the WAL read lock. */
	[ST_BEGIN_READ] = "BEGIN DEFERRED",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_HAS_ID] = "SELECT 1 FROM events WHERE id = ?1",
	[ST_GET_BY_ID] = "SELECT seq, pubkey, kind FROM events WHERE id = ?1",
	[ST_IS_DELETED] =
	    "SELECT 1 FROM deleted_ids WHERE id = ?1 AND pubkey = ?2",
	[ST_IS_DELETED_ANY] = "SELECT 1 FROM deleted_ids WHERE id = ?1",
	[ST_ADDR_DELETED] = "SELECT created_at FROM deleted_addresses"
			    " WHERE kind = ?1 AND pubkey = ?2 AND d = ?3",
	[ST_GET_ADDR] = "SELECT seq, created_at, id FROM events"
			" WHERE kind = ?1 AND pubkey = ?2 AND d = ?3",
	[ST_HAS_ADDR] = "SELECT 1 FROM events"
			" WHERE kind = ?1 AND pubkey = ?2 AND d = ?3",
	[ST_GET_SEQ] = "SELECT json FROM events WHERE seq = ?1",
	[ST_DELETE_SEQ] = "DELETE FROM events WHERE seq = ?1",
	[ST_INSERT] = "INSERT INTO events"
		      " (id, pubkey, created_at, kind, d, expiration, json)"
		      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	/* A value under both cases of a name, or twice, is one row. */
	[ST_INSERT_TAG] = "INSERT INTO tags"
			  " (letter, cases, value, created_at, event)"
			  " VALUES (?1, ?2, ?3, ?4, ?5)" TAG_UPSERT,
	/*
	 * The whole key: tags has no index by event (db.c, step 4).  ?2,
	 * the case, is bound and unused: the row goes whatever its cases.
	 */
	[ST_DELETE_TAG] = "DELETE FROM tags WHERE letter = ?1"
			  " AND value = ?3 AND created_at = ?4 AND event = ?5",
	/* Only for a stored JSON that no longer parses: a full scan. */
	[ST_DELETE_TAGS_SCAN] = "DELETE FROM tags WHERE event = ?1",
	[ST_MARK_DELETED] =
	    "INSERT OR IGNORE INTO deleted_ids (id, pubkey) VALUES (?1, ?2)",
	[ST_MARK_ADDR_DELETED] =
	    "INSERT INTO deleted_addresses"
	    " (kind, pubkey, d, created_at) VALUES (?1, ?2, ?3, ?4)"
	    " ON CONFLICT (kind, pubkey, d) DO UPDATE"
	    " SET created_at = max(created_at, excluded.created_at)",
	[ST_TAG_EXISTS] = "SELECT 1 FROM tags WHERE letter = ?1"
			  " AND value = ?3 AND cases & ?2 LIMIT 1",
	[ST_COUNT] = "SELECT count(*) FROM events",
	[ST_LAST_SEQ] = "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
	[ST_SINCE_SEQ] = "SELECT seq, json FROM events WHERE seq > ?1"
			 " ORDER BY seq LIMIT ?2",
	/* The id index alone, in its order (covering: no events row). */
	[ST_IDS_AFTER] = "SELECT id FROM events WHERE id > ?1"
			 " ORDER BY id LIMIT ?2",
};

struct store_qslot {
	sqlite3_stmt *qs_stmt;
	uint64_t      qs_hash; /* of the SQL text */
	uint64_t      qs_used; /* s_qclock at last use */
};

struct store {
	sqlite3		  *s_db;
	sqlite3_stmt	  *s_stmt[ST_NSTMT];
	/* [k - 2]: the INSERT of k tag rows, 2 <= k <= STORE_TAG_ROWS. */
	sqlite3_stmt	  *s_tagins[STORE_TAG_ROWS - 1];
	struct store_qslot s_qcache[STORE_QCACHE];
	uint64_t	   s_qclock;
	int		   s_wal_frames; /* after the last commit */
	int		   s_autockpt;	 /* frames; 0: never */
	int		   s_failed;	 /* a put of the open transaction
						   failed: it must not commit */
	struct idhint	  *s_idhint;	 /* told each id inserted */
};

typedef int store_row_cb(const char *, size_t, int64_t, void *);

/* Logs an SQL error: what ran, and SQLite's message for it. */
static void
store_sqlerr_msg(const char *what, const char *msg)
{
	log_warnx("store: %s: %s", what, msg);
}

static void
store_sqlerr(struct store *s, const char *what)
{
	store_sqlerr_msg(what, sqlite3_errmsg(s->s_db));
}

/* The cached statement, reset and ready to bind; NULL after logging. */
static sqlite3_stmt *
stmt(struct store *s, enum store_stmt which)
{
	sqlite3_stmt *st = s->s_stmt[which];

	if (st != NULL)
		return st;
	if (sqlite3_prepare_v3(s->s_db, store_sql[which], -1,
		SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		store_sqlerr(s, store_sql[which]);
		return NULL;
	}
	s->s_stmt[which] = st;
	return st;
}

/* Runs a statement that returns no rows; 0 or -1 after logging. */
static int
exec_stmt(struct store *s, enum store_stmt which)
{
	sqlite3_stmt *st;
	int	      rc;

	if ((st = stmt(s, which)) == NULL)
		return -1;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		store_sqlerr(s, store_sql[which]);
		return -1;
	}
	return 0;
}

/*
 * Steps a bound single-row query: 1 if it gave a row (the caller reads
 * the columns, then resets), 0 if none (already reset), -1 on error.
 */
static int
step_row(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return 0;
	store_sqlerr(s, sqlite3_sql(st));
	return -1;
}

/*
 * Replaces SQLite's automatic checkpoint, which is a WAL hook too and
 * does the same at DB_WAL_AUTOCHECKPOINT frames; the store also notes the
 * WAL's size, so that its user can checkpoint sooner at a better moment.
 */
static int
wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store *s = arg;

	s->s_wal_frames = frames;
	if (s->s_autockpt > 0 && frames >= s->s_autockpt) {
		sqlite3_wal_checkpoint(db, name);
		s->s_wal_frames = 0;
	}
	return SQLITE_OK;
}

struct store *
store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct store *s;
	sqlite3	     *db;

	if (db_open(path, readonly ? DB_READONLY : 0, &db, err, errlen) == -1)
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("calloc");
	s->s_db = db;
	s->s_autockpt = DB_WAL_AUTOCHECKPOINT;
	if (!readonly)
		sqlite3_wal_hook(db, wal_hook, s);
	return s;
}

void
store_close(struct store *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < ST_NSTMT; i++)
		sqlite3_finalize(s->s_stmt[i]);
	for (i = 0; i < STORE_TAG_ROWS - 1; i++)
		sqlite3_finalize(s->s_tagins[i]);
	for (i = 0; i < STORE_QCACHE; i++)
		sqlite3_finalize(s->s_qcache[i].qs_stmt);
	db_close(s->s_db);
	free(s);
}

int
store_begin(struct store *s)
{
	s->s_failed = 0;
	return exec_stmt(s, ST_BEGIN);
}

int
store_commit(struct store *s)
{
	if (s->s_failed) {
		/* A put failed half-way: none of the transaction stays. */
		log_warnx(
		    "store: a put failed inside the transaction; rolling it back");
		s->s_failed = 0;
		exec_stmt(s, ST_ROLLBACK);
		return -1;
	}
	if (exec_stmt(s, ST_COMMIT) == 0)
		return 0;
	if (!sqlite3_get_autocommit(s->s_db))
		exec_stmt(s, ST_ROLLBACK);
	return -1;
}

int
store_wal_frames(const struct store *s)
{
	return s->s_wal_frames;
}

void
store_set_autocheckpoint(struct store *s, int frames)
{
	s->s_autockpt = frames;
}

int
store_rollback(struct store *s)
{
	s->s_failed = 0;
	/* A failed COMMIT (SQLITE_FULL) may have rolled back already. */
	if (sqlite3_get_autocommit(s->s_db))
		return 0;
	return exec_stmt(s, ST_ROLLBACK);
}

static int
is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * The d value an event is kept under: "" for replaceable kinds, the first
 * d tag's value (or "") for addressable ones, NULL for the rest.  Same
 * choice as event_d(), with the length, since a value may hold a NUL.
 */
static const char *
store_event_d(const struct event *ev, size_t *lenp)
{
	const struct estr *d;

	*lenp = 0;
	switch (event_kind_class(ev->kind)) {
	case KIND_REPLACEABLE:
		return "";
	case KIND_ADDRESSABLE:
		if ((d = event_tag_value(ev, "d")) == NULL)
			return "";
		*lenp = d->len;
		return d->s;
	default:
		return NULL;
	}
}

int
store_kind_has_d(uint32_t kind)
{
	switch (event_kind_class(kind)) {
	case KIND_REPLACEABLE:
	case KIND_ADDRESSABLE:
		return 1;
	default:
		return 0;
	}
}

/* Looks up a stored event by id: 1 and its seq, pubkey, kind; 0; -1. */
static int
get_by_id(struct store *s, const uint8_t id[EVENT_ID_LEN], int64_t *seq,
    uint8_t pubkey[PUBKEY_LEN], uint32_t *kind)
{
	sqlite3_stmt *st;
	int	      r;

	if ((st = stmt(s, ST_GET_BY_ID)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if ((r = step_row(s, st)) != 1)
		return r;
	*seq = sqlite3_column_int64(st, 0);
	if (sqlite3_column_bytes(st, 1) == PUBKEY_LEN)
		memcpy(pubkey, sqlite3_column_blob(st, 1), PUBKEY_LEN);
	else
		memset(pubkey, 0, PUBKEY_LEN);
	*kind = (uint32_t)sqlite3_column_int64(st, 2);
	sqlite3_reset(st);
	return 1;
}

/*
 * Whether t makes a tag row: the first value of a tag named by one letter
 * a-z, A-Z (NIP-01).  One rule for insert and delete, so that a deletion
 * finds every row the insert made.
 */
static int
is_tag_row(const struct event_tag *t)
{
	return t->n >= 2 && t->v[0].len == 1 && is_letter(t->v[0].s[0]);
}

/*
 * Whether tag rows a and b have one key: their letter, in either case, and
 * their value.
 */
static int
same_tag_row(const struct event_tag *a, const struct event_tag *b)
{
	return db_tag_letter(a->v[0].s[0]) == db_tag_letter(b->v[0].s[0]) &&
	    a->v[1].len == b->v[1].len &&
	    memcmp(a->v[1].s, b->v[1].s, a->v[1].len) == 0;
}

/*
 * Binds the row of t, holding the cases given, at parameters base + 1 to
 * base + 5 of st.
 */
static void
bind_tag_row(sqlite3_stmt *st, int base, const struct event_tag *t, int cases,
    int64_t created_at, int64_t seq)
{
	sqlite3_bind_text(st, base + 1, db_tag_letter(t->v[0].s[0]), 1,
	    SQLITE_STATIC);
	sqlite3_bind_int(st, base + 2, cases);
	db_bind_tag_value(st, base + 3, t->v[1].s, t->v[1].len);
	sqlite3_bind_int64(st, base + 4, created_at);
	sqlite3_bind_int64(st, base + 5, seq);
}

/*
 * Runs ST_DELETE_TAG once for each tag row of ev stored as seq.  0, or -1
 * after logging.
 */
static int
delete_tag_rows(struct store *s, const struct event *ev, int64_t seq)
{
	sqlite3_stmt *st;
	uint32_t      i;

	if ((st = stmt(s, ST_DELETE_TAG)) == NULL)
		return -1;
	for (i = 0; i < ev->ntags; i++) {
		if (!is_tag_row(&ev->tags[i]))
			continue;
		bind_tag_row(st, 0, &ev->tags[i],
		    db_tag_case(ev->tags[i].v[0].s[0]), ev->created_at, seq);
		if (step_row(s, st) != 0)
			return -1;
	}
	return 0;
}

/* The cached INSERT of k tag rows (ST_INSERT_TAG's, k times); NULL after
 * logging. */
static sqlite3_stmt *
tag_insert_stmt(struct store *s, size_t k)
{
	sqlite3_stmt **slot, *st;
	struct buf     sql = BUF_INIT;
	size_t	       i;
	int	       rc;

	if (k == 1)
		return stmt(s, ST_INSERT_TAG);
	slot = &s->s_tagins[k - 2];
	if (*slot != NULL)
		return *slot;
	buf_adds(&sql,
	    "INSERT INTO tags"
	    " (letter, cases, value, created_at, event) VALUES");
	for (i = 0; i < k; i++)
		buf_adds(&sql, i == 0 ? " (?,?,?,?,?)" : ", (?,?,?,?,?)");
	buf_adds(&sql, TAG_UPSERT);
	buf_addc(&sql, '\0');
	rc = sqlite3_prepare_v3(s->s_db, sql.b_data, -1,
	    SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		store_sqlerr(s, sql.b_data);
		st = NULL;
	}
	buf_free(&sql);
	return *slot = st;
}

/*
 * Inserts the tag rows of ev stored as seq, STORE_TAG_ROWS a statement
 * (TAG_UPSERT: a value repeated within one event, in one statement or
 * not, under one case of its name or both, is one row).  0, or -1 after
 * logging.
 */
static int
insert_tag_rows(struct store *s, const struct event *ev, int64_t seq)
{
	const struct event_tag *rows[STORE_TAG_ROWS], *t;
	sqlite3_stmt	       *st;
	size_t			n = 0, j;
	uint32_t		i;
	int			cases[STORE_TAG_ROWS];

	for (i = 0; i <= ev->ntags; i++) {
		t = i < ev->ntags ? &ev->tags[i] : NULL;
		if (t != NULL && is_tag_row(t)) {
			/*
			 * The other case of a row of this statement joins
			 * it: the conflict TAG_UPSERT would meet costs a
			 * B-tree search of its own.
			 */
			for (j = 0; j < n && !same_tag_row(rows[j], t); j++)
				;
			if (j == n) {
				rows[n] = t;
				cases[n++] = 0;
			}
			cases[j] |= db_tag_case(t->v[0].s[0]);
		}
		if (n == 0 || (n < STORE_TAG_ROWS && i < ev->ntags))
			continue;
		if ((st = tag_insert_stmt(s, n)) == NULL)
			return -1;
		for (j = 0; j < n; j++)
			bind_tag_row(st, (int)j * 5, rows[j], cases[j],
			    ev->created_at, seq);
		if (step_row(s, st) != 0)
			return -1;
		n = 0;
	}
	return 0;
}

/*
 * Removes the stored event seq and its tag rows, found by their keys
 * from its JSON (tags has no index by event).  0, or -1 after logging.
 */
static int
delete_seq(struct store *s, int64_t seq)
{
	sqlite3_stmt *st;
	struct event *ev;
	char	      err[128];
	int	      r;

	if ((st = stmt(s, ST_GET_SEQ)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, seq);
	if ((r = step_row(s, st)) != 1)
		return r;
	ev = event_parse((const char *)sqlite3_column_text(st, 0),
	    (size_t)sqlite3_column_bytes(st, 0), err, sizeof(err));
	sqlite3_reset(st);
	if (ev != NULL) {
		r = delete_tag_rows(s, ev, seq);
		event_destroy(ev);
	} else {
		log_warnx(
		    "store: stored event %lld does not parse (%s); scanning the tags for its rows",
		    (long long)seq, err);
		if ((st = stmt(s, ST_DELETE_TAGS_SCAN)) == NULL)
			return -1;
		sqlite3_bind_int64(st, 1, seq);
		r = step_row(s, st) == 0 ? 0 : -1;
	}
	if (r == -1 || (st = stmt(s, ST_DELETE_SEQ)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, seq);
	return step_row(s, st) == 0 ? 0 : -1;
}

static int
mark_deleted(struct store *s, const uint8_t id[EVENT_ID_LEN],
    const uint8_t pk[PUBKEY_LEN])
{
	sqlite3_stmt *st;

	if ((st = stmt(s, ST_MARK_DELETED)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, pk, PUBKEY_LEN, SQLITE_STATIC);
	return step_row(s, st) == 0 ? 0 : -1;
}

/*
 * Parses a NIP-01 coordinate "<kind>:<pubkey hex>:<d>", splitting on the
 * first two colons only (d may hold colons).  0 on success, -1 if
 * malformed.
 */
static int
parse_coordinate(const struct estr *a, uint32_t *kind,
    uint8_t pubkey[PUBKEY_LEN], const char **d, size_t *dlen)
{
	const char *p = a->s, *end = a->s + a->len, *c;
	uint32_t    k = 0;

	for (c = p; c < end && *c != ':'; c++) {
		if (*c < '0' || *c > '9' || c - p >= 5)
			return -1;
		k = k * 10 + (uint32_t)(*c - '0');
	}
	if (c == p || c == end || k > EVENT_KIND_MAX)
		return -1;
	p = c + 1;
	if (end - p < PUBKEY_HEX_LEN + 1 || p[PUBKEY_HEX_LEN] != ':' ||
	    hex_decode(p, PUBKEY_HEX_LEN, pubkey, PUBKEY_LEN) == -1)
		return -1;
	*kind = k;
	*d = p + 65;
	*dlen = (size_t)(end - (p + 65));
	return 0;
}

/*
 * NIP-09: applies the deletion request ev (already known to be kind 5),
 * inside the put's savepoint.  Refuses it whole if an "e" names a stored
 * event of another author or an "a" names another author's address.
 */
static enum store_result
apply_deletion(struct store *s, const struct event *ev)
{
	sqlite3_stmt *st;
	uint8_t	      id[EVENT_ID_LEN], pk[PUBKEY_LEN];
	uint32_t      i, kind;
	int64_t	      seq;
	const char   *d;
	size_t	      dlen;
	int	      pass, r;

	/* Pass 0 only checks, pass 1 changes: a refusal writes nothing. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < ev->ntags; i++) {
			const struct event_tag *t = &ev->tags[i];

			if (t->n < 2 || t->v[0].len != 1)
				continue;
			if (t->v[0].s[0] == 'e') {
				if (hex_decode(t->v[1].s, t->v[1].len, id,
					EVENT_ID_LEN) == -1)
					continue;
				r = get_by_id(s, id, &seq, pk, &kind);
				if (r == -1)
					return STORE_ERROR;
				if (r == 1 &&
				    memcmp(pk, ev->pubkey, PUBKEY_LEN) != 0)
					return STORE_INVALID_DELETION;
				if (pass == 0)
					continue;
				/* Deleting a deletion has no effect. */
				if (r == 1 && kind == KIND_DELETION)
					continue;
				if (r == 1 && delete_seq(s, seq) == -1)
					return STORE_ERROR;
				if (mark_deleted(s, id, ev->pubkey) == -1)
					return STORE_ERROR;
			} else if (t->v[0].s[0] == 'a') {
				if (parse_coordinate(&t->v[1], &kind, pk, &d,
					&dlen) == -1)
					continue;
				if (memcmp(pk, ev->pubkey, PUBKEY_LEN) != 0)
					return STORE_INVALID_DELETION;
				if (pass == 0)
					continue;
				if (!store_kind_has_d(kind))
					continue;
				if ((st = stmt(s, ST_MARK_ADDR_DELETED)) ==
				    NULL)
					return STORE_ERROR;
				sqlite3_bind_int64(st, 1, kind);
				sqlite3_bind_blob(st, 2, pk, PUBKEY_LEN,
				    SQLITE_STATIC);
				sqlite3_bind_text(st, 3, d, (int)dlen,
				    SQLITE_STATIC);
				sqlite3_bind_int64(st, 4, ev->created_at);
				if (step_row(s, st) != 0)
					return STORE_ERROR;
				/* One version per address (events_address). */
				if ((st = stmt(s, ST_GET_ADDR)) == NULL)
					return STORE_ERROR;
				sqlite3_bind_int64(st, 1, kind);
				sqlite3_bind_blob(st, 2, pk, PUBKEY_LEN,
				    SQLITE_STATIC);
				sqlite3_bind_text(st, 3, d, (int)dlen,
				    SQLITE_STATIC);
				if ((r = step_row(s, st)) == -1)
					return STORE_ERROR;
				if (r == 0)
					continue;
				seq = sqlite3_column_int64(st, 0);
				r = sqlite3_column_int64(st, 1) <=
				    ev->created_at;
				sqlite3_reset(st);
				if (r && delete_seq(s, seq) == -1)
					return STORE_ERROR;
			}
		}
	}
	return STORE_OK;
}

/*
 * The replaceable/addressable rules for ev kept under (kind, pubkey, d):
 * refused if its address was deleted at or after its created_at, or if
 * an equal-or-newer version is stored; otherwise the older version goes.
 */
static enum store_result
apply_replacement(struct store *s, const struct event *ev, const char *d,
    size_t dlen)
{
	sqlite3_stmt *st;
	int64_t	      seq, created_at;
	int	      r, older;

	if ((st = stmt(s, ST_ADDR_DELETED)) == NULL)
		return STORE_ERROR;
	sqlite3_bind_int64(st, 1, ev->kind);
	sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, (int)dlen, SQLITE_STATIC);
	if ((r = step_row(s, st)) == -1)
		return STORE_ERROR;
	if (r == 1) {
		created_at = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (ev->created_at <= created_at)
			return STORE_DELETED;
	}

	if ((st = stmt(s, ST_GET_ADDR)) == NULL)
		return STORE_ERROR;
	sqlite3_bind_int64(st, 1, ev->kind);
	sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, (int)dlen, SQLITE_STATIC);
	if ((r = step_row(s, st)) == -1)
		return STORE_ERROR;
	if (r == 0)
		return STORE_OK;
	seq = sqlite3_column_int64(st, 0);
	created_at = sqlite3_column_int64(st, 1);
	/* NIP-01: newer created_at wins; on a tie the lower id stays. */
	older = created_at > ev->created_at ||
	    (created_at == ev->created_at &&
		sqlite3_column_bytes(st, 2) == EVENT_ID_LEN &&
		memcmp(sqlite3_column_blob(st, 2), ev->id, EVENT_ID_LEN) < 0);
	sqlite3_reset(st);
	if (older)
		return STORE_REPLACED;
	return delete_seq(s, seq) == 0 ? STORE_OK : STORE_ERROR;
}

static enum store_result
insert_event(struct store *s, const struct event *ev, const char *d,
    size_t dlen, int64_t *seq_out)
{
	sqlite3_stmt *st;
	int64_t	      seq, exp;
	int	      rc;

	if ((st = stmt(s, ST_INSERT)) == NULL)
		return STORE_ERROR;
	sqlite3_bind_blob(st, 1, ev->id, EVENT_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, ev->created_at);
	sqlite3_bind_int64(st, 4, ev->kind);
	if (d != NULL)
		sqlite3_bind_text(st, 5, d, (int)dlen, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 5);
	if ((exp = event_expiration(ev)) > 0)
		sqlite3_bind_int64(st, 6, exp);
	else
		sqlite3_bind_null(st, 6);
	sqlite3_bind_text(st, 7, ev->json, (int)ev->json_len, SQLITE_STATIC);
	sqlite3_step(st);
	if ((rc = sqlite3_reset(st)) != SQLITE_OK) {
		char why[256];

		/* Before the lookup below replaces it. */
		snprintf(why, sizeof(why), "%s", sqlite3_errmsg(s->s_db));
		/* A copy the caller took for new (relayd's filter of stored
		 * ids cannot know of one another process wrote) is no error:
		 * the statement failed alone, the transaction goes on. */
		if (rc == SQLITE_CONSTRAINT_UNIQUE &&
		    store_has_id(s, ev->id) == 1)
			return STORE_DUPLICATE;
		store_sqlerr_msg(sqlite3_sql(st), why);
		return STORE_ERROR;
	}
	/* Before the commit: a rollback leaves a false "maybe", harmless. */
	if (s->s_idhint != NULL)
		idhint_add(s->s_idhint, ev->id);
	seq = sqlite3_last_insert_rowid(s->s_db);
	if (insert_tag_rows(s, ev, seq) == -1)
		return STORE_ERROR;
	if (seq_out != NULL)
		*seq_out = seq;
	return STORE_OK;
}

/*
 * The put, inside a transaction.  unseen: the caller found, in this
 * transaction, that ev's id is neither stored nor deleted, so those two
 * lookups are not made again.
 */
static enum store_result
put_locked(struct store *s, const struct event *ev, int unseen,
    int64_t *seq_out)
{
	enum store_result r;
	sqlite3_stmt	 *st;
	const char	 *d;
	size_t		  dlen;
	int		  found;

	if (!unseen && (found = store_has_id(s, ev->id)) != 0)
		return found == 1 ? STORE_DUPLICATE : STORE_ERROR;
	/* A deletion cannot be deleted, so it is never refused as one. */
	if (!unseen && ev->kind != KIND_DELETION) {
		if ((st = stmt(s, ST_IS_DELETED)) == NULL)
			return STORE_ERROR;
		sqlite3_bind_blob(st, 1, ev->id, EVENT_ID_LEN, SQLITE_STATIC);
		sqlite3_bind_blob(st, 2, ev->pubkey, PUBKEY_LEN, SQLITE_STATIC);
		if ((found = step_row(s, st)) == -1)
			return STORE_ERROR;
		if (found) {
			sqlite3_reset(st);
			return STORE_DELETED;
		}
	}
	d = store_event_d(ev, &dlen);
	if (d != NULL && (r = apply_replacement(s, ev, d, dlen)) != STORE_OK)
		return r;
	if (ev->kind == KIND_DELETION &&
	    (r = apply_deletion(s, ev)) != STORE_OK)
		return r;
	return insert_event(s, ev, d, dlen, seq_out);
}

/* Whether ev may be put at all: a kind that is stored, a size SQLite takes. */
static int
put_allowed(const struct event *ev)
{
	if (event_kind_class(ev->kind) == KIND_EPHEMERAL) {
		log_warnx("store: ephemeral kind %u passed to store_put",
		    ev->kind);
		return 0;
	}
	return ev->json_len <= INT32_MAX;
}

enum store_result
store_put_new(struct store *s, const struct event *ev, int64_t *seq_out)
{
	enum store_result r;

	if (!put_allowed(ev) || s->s_failed || sqlite3_get_autocommit(s->s_db))
		return STORE_ERROR;
	if ((r = put_locked(s, ev, 1, seq_out)) == STORE_ERROR)
		s->s_failed = 1;
	return r;
}

enum store_result
store_put(struct store *s, const struct event *ev, int64_t *seq_out)
{
	enum store_result r;
	int		  own;

	if (!put_allowed(ev))
		return STORE_ERROR;
	/*
	 * Outside a transaction the put makes its own.  Inside one there is
	 * no savepoint (it would copy every page the put touches into a
	 * statement journal): a refused put writes nothing, since every
	 * check comes before the first write, and a failed one marks the
	 * transaction, which store_commit() then rolls back whole.  Nothing
	 * more of a marked transaction is written: SQLITE_FULL may have
	 * rolled it back already, and later puts would then make and commit
	 * transactions of their own.
	 */
	if (s->s_failed)
		return STORE_ERROR;
	own = sqlite3_get_autocommit(s->s_db);
	if (own && exec_stmt(s, ST_BEGIN) == -1)
		return STORE_ERROR;
	r = put_locked(s, ev, 0, seq_out);
	if (!own) {
		if (r == STORE_ERROR)
			s->s_failed = 1;
		return r;
	}
	if (r == STORE_OK) {
		if (store_commit(s) == 0)
			return STORE_OK;
		return STORE_ERROR;
	}
	exec_stmt(s, ST_ROLLBACK);
	return r;
}

const char *
store_result_message(enum store_result r)
{
	switch (r) {
	case STORE_OK:
		return "";
	case STORE_DUPLICATE:
		return "duplicate: already have this event";
	case STORE_DELETED:
		return "blocked: this event is deleted";
	case STORE_REPLACED:
		return "invalid: a newer version of this replaceable event "
		       "is stored";
	case STORE_INVALID_DELETION:
		return "invalid: deletion targets events of another author";
	default:
		return "error: database error";
	}
}

int
store_result_ok(enum store_result r)
{
	return r == STORE_OK || r == STORE_DUPLICATE;
}

int
store_has_id(struct store *s, const uint8_t id[EVENT_ID_LEN])
{
	sqlite3_stmt *st;
	int	      r;

	if ((st = stmt(s, ST_HAS_ID)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if ((r = step_row(s, st)) == 1)
		sqlite3_reset(st);
	return r;
}

int
store_has_ids(struct store *s, const uint8_t (*ids)[EVENT_ID_LEN], size_t n,
    int *out)
{
	size_t i;
	int    own = sqlite3_get_autocommit(s->s_db), rc = 0;

	if (n == 0)
		return 0;
	if (own && exec_stmt(s, ST_BEGIN_READ) == -1)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		if ((out[i] = store_has_id(s, ids[i])) == -1)
			rc = -1;
	/* Ending a transaction that only read cannot fail for lack of
	 * space; if it fails anyway, what was read is still right. */
	if (own && exec_stmt(s, ST_COMMIT) == -1 &&
	    !sqlite3_get_autocommit(s->s_db))
		exec_stmt(s, ST_ROLLBACK);
	return rc;
}

int
store_is_deleted(struct store *s, const uint8_t id[EVENT_ID_LEN],
    const uint8_t pubkey[PUBKEY_LEN])
{
	sqlite3_stmt *st;
	int	      r;

	if ((st = stmt(s, pubkey ? ST_IS_DELETED : ST_IS_DELETED_ANY)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if (pubkey != NULL)
		sqlite3_bind_blob(st, 2, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	if ((r = step_row(s, st)) == 1)
		sqlite3_reset(st);
	return r;
}

int
store_has_address(struct store *s, uint32_t kind,
    const uint8_t pubkey[PUBKEY_LEN], const char *d)
{
	sqlite3_stmt *st;
	int	      r;

	if ((st = stmt(s, ST_HAS_ADDR)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, kind);
	sqlite3_bind_blob(st, 2, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, -1, SQLITE_STATIC);
	if ((r = step_row(s, st)) == 1)
		sqlite3_reset(st);
	return r;
}

int
store_tag_exists(struct store *s, const char *names, const char *value)
{
	sqlite3_stmt *st;
	const char   *c;
	int	      r;

	if ((st = stmt(s, ST_TAG_EXISTS)) == NULL)
		return -1;
	/* Bindings outlive a reset: the value is converted once. */
	db_bind_tag_value(st, 3, value, strlen(value));
	for (c = names; *c != '\0'; c++) {
		if (!is_letter(*c))
			continue;
		sqlite3_bind_text(st, 1, db_tag_letter(*c), 1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, db_tag_case(*c));
		if ((r = step_row(s, st)) != 0) {
			if (r == 1)
				sqlite3_reset(st);
			return r;
		}
	}
	return 0;
}

int64_t
store_count(struct store *s)
{
	sqlite3_stmt *st;
	int64_t	      n;

	if ((st = stmt(s, ST_COUNT)) == NULL || step_row(s, st) != 1)
		return -1;
	n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}

int
store_last_seq(struct store *s, int64_t *out)
{
	sqlite3_stmt *st;
	int	      r;

	*out = 0;
	if ((st = stmt(s, ST_LAST_SEQ)) == NULL)
		return -1;
	if ((r = step_row(s, st)) == -1)
		return -1;
	if (r == 1) {
		*out = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
	}
	return 0;
}

void
store_set_idhint(struct store *s, struct idhint *h)
{
	s->s_idhint = h;
}

int
store_ids_after(struct store *s, uint8_t after[EVENT_ID_LEN], size_t *afterlen,
    size_t max, void (*cb)(const uint8_t *, void *), void *arg)
{
	sqlite3_stmt *st;
	const void   *id;
	int	      r, n = 0;

	if ((st = stmt(s, ST_IDS_AFTER)) == NULL)
		return -1;
	sqlite3_bind_blob(st, 1, after, (int)*afterlen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 0) != EVENT_ID_LEN ||
		    (id = sqlite3_column_blob(st, 0)) == NULL)
			continue;
		cb(id, arg);
		memcpy(after, id, EVENT_ID_LEN);
		*afterlen = EVENT_ID_LEN;
		n++;
	}
	if (r != SQLITE_DONE) {
		store_sqlerr(s, "ids");
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return n;
}

/* The seqs a multi-filter query has delivered. */
struct seqset {
	int64_t *ss_v;	 /* open addressing, 0 = empty */
	size_t	 ss_cap; /* power of two */
	size_t	 ss_n;
};

/* Adds seq (> 0); returns 1 if it was new, 0 if already there. */
static int
seqset_add(struct seqset *ss, int64_t seq)
{
	size_t i;

	if (ss->ss_n * 2 >= ss->ss_cap) {
		struct seqset bigger;
		size_t	      j;

		bigger.ss_cap = ss->ss_cap ? ss->ss_cap * 2 : 64;
		bigger.ss_n = 0;
		if ((bigger.ss_v = calloc(bigger.ss_cap,
			 sizeof(*bigger.ss_v))) == NULL)
			fatal("calloc");
		for (j = 0; j < ss->ss_cap; j++)
			if (ss->ss_v[j] != 0)
				seqset_add(&bigger, ss->ss_v[j]);
		free(ss->ss_v);
		*ss = bigger;
	}
	i = ((uint64_t)seq * 0x9e3779b97f4a7c15ULL) >> 20;
	for (;; i++) {
		i &= ss->ss_cap - 1;
		if (ss->ss_v[i] == seq)
			return 0;
		if (ss->ss_v[i] == 0)
			break;
	}
	ss->ss_v[i] = seq;
	ss->ss_n++;
	return 1;
}

/* A query row has been read: cur (if any) stands after it. */
static void
cursor_step(struct store_cursor *cur, int64_t created_at, const void *id,
    size_t idlen)
{
	if (cur == NULL)
		return;
	cur->sc_rows++;
	cur->sc_has_pos = 1;
	cur->sc_created_at = created_at;
	if (id != NULL && idlen == sizeof(cur->sc_id))
		memcpy(cur->sc_id, id, sizeof(cur->sc_id));
}

/*
 * Steps st, handing each (seq, json) row to cb.  *stopped is set if cb
 * asked to stop.  Skips rows whose seq is already in seen (and adds new
 * ones) when seen is not NULL.  With cur, a query row (columns 2 and 3
 * its created_at and id) moves cur past it.  Returns rows delivered or
 * -1; st is reset.
 */
static int
deliver_rows(struct store *s, sqlite3_stmt *st, struct seqset *seen,
    struct store_cursor *cur, store_row_cb *cb, void *arg, int *stopped)
{
	int	rc, n = 0;
	int64_t seq;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		seq = sqlite3_column_int64(st, 0);
		if (cur != NULL)
			cursor_step(cur, sqlite3_column_int64(st, 2),
			    sqlite3_column_blob(st, 3),
			    (size_t)sqlite3_column_bytes(st, 3));
		if (seen != NULL && !seqset_add(seen, seq))
			continue;
		n++;
		if (cb((const char *)sqlite3_column_text(st, 1),
			(size_t)sqlite3_column_bytes(st, 1), seq, arg) != 0) {
			*stopped = 1;
			break;
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_sqlerr(s, "query");
		return -1;
	}
	return n;
}

/* A row of an ids query, held for deliver_sorted(). */
struct heldrow {
	int64_t hr_seq;
	int64_t hr_created_at;
	uint8_t hr_id[EVENT_ID_LEN];
	size_t	hr_off; /* its JSON in the held text */
	size_t	hr_len;
};

/* NIP-01 order: newest first, then the lowest id. */
static int
cmp_heldrow(const void *a, const void *b)
{
	const struct heldrow *x = a, *y = b;

	if (x->hr_created_at != y->hr_created_at)
		return x->hr_created_at > y->hr_created_at ? -1 : 1;
	return memcmp(x->hr_id, y->hr_id, EVENT_ID_LEN);
}

/*
 * Holds st's current row (columns seq, json, created_at, id; json its
 * text) at the end of *v, its text appended to text.
 */
static void
hold_row(struct heldrow **v, size_t *nv, size_t *cap, struct buf *text,
    sqlite3_stmt *st, const unsigned char *json)
{
	struct heldrow *h;

	if (*nv == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if ((*v = reallocarray(*v, *cap, sizeof(**v))) == NULL)
			fatal("hold_row");
	}
	h = &(*v)[(*nv)++];
	h->hr_seq = sqlite3_column_int64(st, 0);
	h->hr_created_at = sqlite3_column_int64(st, 2);
	memcpy(h->hr_id, sqlite3_column_blob(st, 3), EVENT_ID_LEN);
	h->hr_off = text->b_len;
	h->hr_len = (size_t)sqlite3_column_bytes(st, 1);
	buf_add(text, json, h->hr_len);
}

/*
 * Delivers held rows in NIP-01 order (newest first, then the lowest id),
 * at most left of them, counting each in *used (those seen already too,
 * as a LIMIT would).  Returns the rows delivered.
 */
static int
deliver_held(struct heldrow *v, size_t nv, const struct buf *text, size_t left,
    struct seqset *seen, struct store_cursor *cur, store_row_cb *cb, void *arg,
    int *stopped, size_t *used)
{
	size_t i;
	int    n = 0;

	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_heldrow);
	for (i = 0; i < nv && i < left; i++) {
		(*used)++;
		cursor_step(cur, v[i].hr_created_at, v[i].hr_id,
		    sizeof(v[i].hr_id));
		if (seen != NULL && !seqset_add(seen, v[i].hr_seq))
			continue;
		n++;
		if (cb(text->b_data + v[i].hr_off, v[i].hr_len, v[i].hr_seq,
			arg) != 0) {
			*stopped = 1;
			break;
		}
	}
	return n;
}


/*
 * Keeps the first keep held rows in NIP-01 order (of a run of one
 * created_at: the lowest ids), and only their text: memory stays bounded
 * by the limit, as SQLite's sorter bounded it.
 */
static void
cut_ties(struct heldrow *v, size_t *nv, struct buf *text, size_t keep)
{
	struct buf kept;
	size_t	   i;

	qsort(v, *nv, sizeof(*v), cmp_heldrow);
	memset(&kept, 0, sizeof(kept));
	for (i = 0; i < keep && i < *nv; i++) {
		buf_add(&kept, text->b_data + v[i].hr_off, v[i].hr_len);
		v[i].hr_off = kept.b_len - v[i].hr_len;
	}
	*nv = i;
	buf_free(text);
	*text = kept;
}

/*
 * deliver_rows() for a query without a LIMIT, whose rows store.c orders:
 * an ids query's few rows in any order (runs 0: all held, then sorted), or
 * one index scan in created_at order alone (runs 1, qb_ctie: the rows of
 * one created_at held and delivered by id once a row of another, or the
 * end, shows the run complete; one row past the limit read at most).
 * Either way the first limit rows in NIP-01 order.
 */
static int
deliver_sorted(struct store *s, sqlite3_stmt *st, size_t limit, int runs,
    struct seqset *seen, struct store_cursor *cur, store_row_cb *cb, void *arg,
    int *stopped)
{
	struct heldrow	    *v = NULL;
	const unsigned char *json;
	struct buf	     text;
	size_t		     nv = 0, cap = 0, used = 0;
	int		     rc, n = 0;

	memset(&text, 0, sizeof(text));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json = sqlite3_column_text(st, 1);
		if (json == NULL || sqlite3_column_bytes(st, 3) != EVENT_ID_LEN)
			continue;
		if (runs && nv > 0 &&
		    sqlite3_column_int64(st, 2) != v[0].hr_created_at) {
			n += deliver_held(v, nv, &text, limit - used, seen, cur,
			    cb, arg, stopped, &used);
			nv = 0;
			text.b_len = 0;
			if (*stopped || used >= limit)
				break;
		}
		hold_row(&v, &nv, &cap, &text, st, json);
		if (nv >= limit - used + STORE_TIES_SLACK)
			cut_ties(v, &nv, &text, limit - used);
	}
	if (rc == SQLITE_DONE && nv > 0)
		n += deliver_held(v, nv, &text, limit - used, seen, cur, cb,
		    arg, stopped, &used);
	sqlite3_reset(st);
	buf_free(&text);
	free(v);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_sqlerr(s, "query");
		return -1;
	}
	return n;
}

int
store_since_seq(struct store *s, int64_t after, size_t max, store_row_cb *cb,
    void *arg)
{
	sqlite3_stmt *st;
	int	      stopped = 0;

	if ((st = stmt(s, ST_SINCE_SEQ)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int64(st, 2, max > INT64_MAX ? INT64_MAX : (int64_t)max);
	return deliver_rows(s, st, NULL, NULL, cb, arg, &stopped);
}

int
store_since_seq_kinds(struct store *s, int64_t after, size_t max,
    const uint32_t *kinds, size_t nkinds, store_row_cb *cb, void *arg)
{
	struct buf    sql = BUF_INIT;
	sqlite3_stmt *st;
	size_t	      i;
	int	      stopped = 0;

	/* The kinds are the caller's constants: one text, cached. */
	buf_adds(&sql, "SELECT seq, CASE WHEN kind IN (");
	for (i = 0; i < nkinds; i++)
		buf_printf(&sql, "%s%u", i > 0 ? "," : "", kinds[i]);
	buf_adds(&sql,
	    ") THEN json END FROM events WHERE seq > ?1"
	    " ORDER BY seq LIMIT ?2");
	st = store_cached(s, sql.b_data);
	buf_free(&sql);
	if (st == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int64(st, 2, max > INT64_MAX ? INT64_MAX : (int64_t)max);
	return deliver_rows(s, st, NULL, NULL, cb, arg, &stopped);
}

static uint64_t
hash_text(const char *p)
{
	return fnv1a64(FNV1A64_BASIS, p, strlen(p));
}

/* The prepared statement for this SQL text, from the cache or new. */
static sqlite3_stmt *
query_stmt(struct store *s, const char *sql)
{
	struct store_qslot *slot, *victim = NULL;
	uint64_t	    h = hash_text(sql);
	size_t		    i;

	s->s_qclock++;
	for (i = 0; i < STORE_QCACHE; i++) {
		slot = &s->s_qcache[i];
		if (slot->qs_stmt != NULL && slot->qs_hash == h &&
		    strcmp(sqlite3_sql(slot->qs_stmt), sql) == 0) {
			slot->qs_used = s->s_qclock;
			return slot->qs_stmt;
		}
		if (victim == NULL || slot->qs_used < victim->qs_used)
			victim = slot;
	}
	sqlite3_finalize(victim->qs_stmt);
	memset(victim, 0, sizeof(*victim));
	if (sqlite3_prepare_v3(s->s_db, sql, -1, SQLITE_PREPARE_PERSISTENT,
		&victim->qs_stmt, NULL) != SQLITE_OK) {
		store_sqlerr(s, "prepare query");
		victim->qs_stmt = NULL;
		return NULL;
	}
	victim->qs_hash = h;
	victim->qs_used = s->s_qclock;
	return victim->qs_stmt;
}

sqlite3_stmt *
store_cached(struct store *s, const char *sql)
{
	sqlite3_stmt *st = query_stmt(s, sql);

	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	return st;
}

/* The number of events filter f may deliver. */
static size_t
filter_limit(const struct filter *f, size_t max_limit, size_t default_limit)
{
	size_t limit;

	if (f->f_has_limit)
		limit = (uint64_t)f->f_limit < max_limit ? (size_t)f->f_limit :
							   max_limit;
	else if (f->f_has_ids)
		limit = f->f_nids;
	else
		limit = default_limit;
	return limit < max_limit ? limit : max_limit;
}

void
store_cursor_init(struct store_cursor *cur, int64_t now)
{
	memset(cur, 0, sizeof(*cur));
	cur->sc_max_seq = -1;
	cur->sc_now = now;
}

void
store_cursor_free(struct store_cursor *cur)
{
	struct seqset *seen = cur->sc_seen;

	if (seen != NULL)
		free(seen->ss_v);
	free(seen);
	cur->sc_seen = NULL;
}

int
store_cursor_fix(struct store *s, struct store_cursor *cur)
{
	if (cur->sc_max_seq >= 0)
		return 0;
	/* What is stored from now on reaches the subscription live. */
	cur->sc_max_seq = 0;
	return store_last_seq(s, &cur->sc_max_seq);
}

/* cur goes on to the next filter, from its start. */
static void
cursor_next_filter(struct store_cursor *cur)
{
	cur->sc_filter++;
	cur->sc_rows = 0;
	cur->sc_has_pos = 0;
}

int
store_query_page(struct store *s, const struct filter *f, size_t n,
    size_t max_limit, size_t default_limit, struct store_cursor *cur,
    store_row_cb *cb, void *arg)
{
	const struct filter *fi;
	struct qbuild	     qb;
	struct seqset	    *seen = NULL;
	sqlite3_stmt	    *st;
	size_t		     limit, left;
	int		     total = 0, r, stopped = 0;

	if (n > 1) {
		if (cur->sc_seen == NULL &&
		    (cur->sc_seen = calloc(1, sizeof(*seen))) == NULL)
			fatal("calloc");
		seen = cur->sc_seen;
	}
	while (cur->sc_filter < n && !stopped) {
		fi = &f[cur->sc_filter];
		if (fi->f_empty ||
		    (limit = filter_limit(fi, max_limit, default_limit)) <=
			cur->sc_rows) {
			cursor_next_filter(cur);
			continue;
		}
		left = limit - cur->sc_rows;
		memset(&qb, 0, sizeof(qb));
		qb.qb_cur = cur;
		qb_plan(&qb, fi, cur->sc_now,
		    left > INT64_MAX ? INT64_MAX : (int64_t)left);
		qb_build(&qb, fi);
		st = query_stmt(s, qb.qb_sql.b_data);
		if (st != NULL)
			qb_bind(&qb, st);
		buf_free(&qb.qb_sql);
		free(qb.qb_bind);
		free(qb.qb_tags);
		if (st == NULL)
			return -1;
		if (qb.qb_csort || qb.qb_ctie)
			r = deliver_sorted(s, st, left, qb.qb_ctie, seen, cur,
			    cb, arg, &stopped);
		else
			r = deliver_rows(s, st, seen, cur, cb, arg, &stopped);
		sqlite3_clear_bindings(st);
		if (r == -1)
			return -1;
		total += r;
		if (!stopped)
			cursor_next_filter(cur);
	}
	if (cur->sc_filter >= n)
		cur->sc_done = 1;
	else if (store_cursor_fix(s, cur) == -1)
		return -1;
	return total;
}

int
store_query(struct store *s, const struct filter *f, size_t n, size_t max_limit,
    size_t default_limit, int64_t now, store_row_cb *cb, void *arg)
{
	struct store_cursor cur;
	int		    r;

	store_cursor_init(&cur, now);
	r = store_query_page(s, f, n, max_limit, default_limit, &cur, cb, arg);
	store_cursor_free(&cur);
	return r;
}

int
store_query_items(struct store *s, const struct filter *f, int64_t now,
    size_t max,
    int (*cb)(int64_t created_at, const uint8_t id[EVENT_ID_LEN], void *arg),
    void *arg, int *more)
{
	struct qbuild qb;
	sqlite3_stmt *st;
	size_t	      n = 0;
	int	      rc;

	*more = 0;
	if (f->f_empty)
		return 0;
	memset(&qb, 0, sizeof(qb));
	qb.qb_items = 1;
	/* One row past max tells that there are more. */
	qb_plan(&qb, f, now, max >= INT64_MAX ? INT64_MAX : (int64_t)max + 1);
	qb_build(&qb, f);
	st = query_stmt(s, qb.qb_sql.b_data);
	if (st != NULL)
		qb_bind(&qb, st);
	buf_free(&qb.qb_sql);
	free(qb.qb_bind);
	free(qb.qb_tags);
	if (st == NULL)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == max) {
			*more = 1;
			break;
		}
		if (sqlite3_column_bytes(st, 3) != EVENT_ID_LEN)
			continue;
		n++;
		if (cb(sqlite3_column_int64(st, 2), sqlite3_column_blob(st, 3),
			arg) != 0)
			break;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		store_sqlerr(s, "query");
		return -1;
	}
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int
store_address_deleted(struct store *s, uint32_t kind,
    const uint8_t pubkey[PUBKEY_LEN], const char *d, int64_t created_at)
{
	sqlite3_stmt *st;
	int64_t	      at;
	int	      r;

	if ((st = stmt(s, ST_ADDR_DELETED)) == NULL)
		return -1;
	sqlite3_bind_int64(st, 1, kind);
	sqlite3_bind_blob(st, 2, pubkey, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, -1, SQLITE_STATIC);
	if ((r = step_row(s, st)) != 1)
		return r;
	at = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return created_at <= at;
}

struct sqlite3 *
store_sqlite(struct store *s)
{
	return s->s_db;
}
