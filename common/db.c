/*
 * db.c: opens graspd's SQLite database and owns its schema.  Every role
 * that touches the database (relayd, syncd, discoveryd, historyd) opens it
 * here; the roles that write run the migrations, so whichever starts first
 * creates the schema.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "db.h"
#include "event.h"
#include "fs.h"
#include "log.h"
#include "powercut.h"
#include "ready.h"
#include "walbuf.h"

/*
 * Ours: the page cache of a read-only connection.  The readers (syncd,
 * discoveryd, historyd) scan the events table in seq order once at start
 * and then read a few rows at a time; a larger cache only keeps that
 * scan resident in each of them.
 */
#define DB_RO_CACHE_KIB 1024
/*
 * Ours: SQLite virtual-machine steps between two calls of a migration's
 * progress handler; ready_progress() reads the clock every 1,024th call.
 */
#define DB_PROGRESS_OPS 1000

/*
 * The schema, one step per element, applied in order.  Append only: a
 * released step is never edited, since databases in the field already ran
 * it.  PRAGMA user_version counts the steps a database has run.
 */
static const char *const db_migrations[] = {
	/* 1: events, their tag index, NIP-09 deletions. */
	"CREATE TABLE events ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  id BLOB NOT NULL UNIQUE,"
	"  pubkey BLOB NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  kind INTEGER NOT NULL,"
	/* '' for replaceable, the d value for addressable, else NULL. */
	"  d TEXT,"
	/* NIP-40 expiration, NULL when the event has none. */
	"  expiration INTEGER,"
	"  json TEXT NOT NULL"
	");"
	/* Each index yields one list value's events newest first. */
	"CREATE INDEX events_created ON events(created_at);"
	"CREATE INDEX events_pubkey ON events(pubkey, created_at);"
	"CREATE INDEX events_kind ON events(kind, created_at);"
	"CREATE INDEX events_pubkey_kind ON events(pubkey, kind, created_at);"
	"CREATE UNIQUE INDEX events_address ON events(kind, pubkey, d)"
	"  WHERE d IS NOT NULL;"
	/*
	 * First value of every tag named by one letter a-z, A-Z (NIP-01).
	 * The key is the index: a "#x" value's events, newest first.
	 */
	"CREATE TABLE tags ("
	"  name TEXT NOT NULL,"
	"  value TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  event INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,"
	"  PRIMARY KEY (name, value, created_at, event)"
	") WITHOUT ROWID;"
	/* For the cascade when an event is removed. */
	"CREATE INDEX tags_event ON tags(event);"
	/* NIP-09 "e" deletions: that id by that author stays refused. */
	"CREATE TABLE deleted_ids ("
	"  id BLOB NOT NULL,"
	"  pubkey BLOB NOT NULL,"
	"  PRIMARY KEY (id, pubkey)"
	") WITHOUT ROWID;"
	/* NIP-09 "a" deletions: versions up to created_at stay refused. */
	"CREATE TABLE deleted_addresses ("
	"  kind INTEGER NOT NULL,"
	"  pubkey BLOB NOT NULL,"
	"  d TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (kind, pubkey, d)"
	") WITHOUT ROWID;",

	/*
	 * 2: GRASP-01 purgatory (store.h, "Purgatory"): events held until
	 * their git data arrives, persisted so that a crash loses none.
	 * Times are unix seconds.
	 */
	"CREATE TABLE purgatory_announcements ("
	"  pubkey BLOB NOT NULL,"
	"  d TEXT NOT NULL,"
	"  id BLOB NOT NULL UNIQUE,"
	"  created_at INTEGER NOT NULL,"
	"  json TEXT NOT NULL,"
	/* JSON array of the values of its "relays" tags. */
	"  relays TEXT NOT NULL,"
	"  entered_at INTEGER NOT NULL,"
	/* End of the current phase: the repository goes at expires_at;
	 * once soft_expired, the entry itself goes at expires_at. */
	"  expires_at INTEGER NOT NULL,"
	"  soft_expired INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (pubkey, d)"
	");"
	"CREATE INDEX purgatory_announcements_d ON purgatory_announcements(d);"
	"CREATE INDEX purgatory_announcements_expiry"
	"  ON purgatory_announcements(expires_at);"
	/* State (30618), PR (1618) and PR update (1619) events. */
	"CREATE TABLE purgatory_events ("
	"  id BLOB PRIMARY KEY,"
	"  pubkey BLOB NOT NULL,"
	"  kind INTEGER NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	/* The repository identifier: a state's d, a PR's first a tag's. */
	"  d TEXT NOT NULL,"
	"  json TEXT NOT NULL,"
	/* 1 when it came from another role (synced), 0 from a client. */
	"  remote INTEGER NOT NULL,"
	"  entered_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL"
	");"
	"CREATE INDEX purgatory_events_d ON purgatory_events(d, created_at);"
	"CREATE INDEX purgatory_events_expiry ON purgatory_events(expires_at);"
	/* The git objects each held event waits for (commits, tags). */
	"CREATE TABLE purgatory_wants ("
	"  event BLOB NOT NULL REFERENCES purgatory_events(id)"
	"    ON DELETE CASCADE,"
	"  oid TEXT NOT NULL,"
	"  PRIMARY KEY (event, oid)"
	") WITHOUT ROWID;"
	/* refs/nostr/<id> pushed before any PR event <id> was seen. */
	"CREATE TABLE purgatory_placeholders ("
	"  id BLOB NOT NULL,"
	"  owner BLOB NOT NULL,"
	"  d TEXT NOT NULL,"
	"  oid TEXT NOT NULL,"
	"  expires_at INTEGER NOT NULL,"
	"  PRIMARY KEY (id, owner, d)"
	") WITHOUT ROWID;"
	/* Ids that expired from purgatory without their git data. */
	"CREATE TABLE purgatory_expired ("
	"  id BLOB PRIMARY KEY,"
	"  expired_at INTEGER NOT NULL"
	");"
	/*
	 * GRASP-02 sync level of every repository: 'full' when its
	 * announcement is stored, 'state_only' while it is only held.
	 */
	"CREATE VIEW repo_sync_levels AS"
	"  SELECT pubkey, d, 'full' AS level, json, NULL AS relays,"
	"    0 AS soft_expired"
	"  FROM events WHERE kind = 30617 AND d IS NOT NULL"
	"  UNION ALL"
	"  SELECT p.pubkey, p.d, 'state_only', p.json, p.relays,"
	"    p.soft_expired"
	"  FROM purgatory_announcements p WHERE NOT EXISTS"
	"    (SELECT 1 FROM events e WHERE e.kind = 30617"
	"     AND e.pubkey = p.pubkey AND e.d = p.d);",

	/*
	 * 3: GRASP-03 fallback marks (plusmark.h): authors a successful
	 * user-index query found without an accepted kind 10002, and a
	 * generation bumped by every change so readers notice cheaply.
	 */
	"CREATE TABLE plus_marks ("
	"  pubkey BLOB PRIMARY KEY,"
	"  marked_at INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE plus_mark_generation ("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  generation INTEGER NOT NULL"
	");"
	"INSERT INTO plus_mark_generation VALUES (1, 0);",

	/*
	 * 4: fewer index entries per event.  events_pubkey and
	 * events_pubkey_kind become one index, by author newest first with
	 * the kind in each entry: an (author, kind) arm scans the author's
	 * entries and tests the kind there (store.c, "+e.kind"), without
	 * reading the rows of other kinds; replaceable and addressable
	 * kinds are read through events_address.
	 *
	 * Tag rows lose tags_event and their foreign key; store.c deletes an
	 * event's rows by their whole key, taken from its JSON.  Secondary
	 * keys of a WITHOUT ROWID table carry its primary key, so tags_event
	 * was a second copy of every tag row (18% of a 20,000-event store),
	 * and each tag row cost two B-tree inserts and a parent lookup.
	 * Removing a foreign key leaves the table's format as it was, so
	 * SQLite allows it as an edit of the table's SQL (lang_altertable,
	 * the simpler procedure); DROP INDEX bumps the schema cookie, so
	 * other connections reload, and RESET reloads this one's.
	 */
	"DROP INDEX events_pubkey;"
	"DROP INDEX events_pubkey_kind;"
	"CREATE INDEX events_pubkey ON events(pubkey, created_at, kind);"
	"DROP INDEX tags_event;"
	"PRAGMA writable_schema=ON;"
	"UPDATE sqlite_schema SET sql = 'CREATE TABLE tags ("
	"  name TEXT NOT NULL,"
	"  value TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  event INTEGER NOT NULL,"
	"  PRIMARY KEY (name, value, created_at, event)"
	") WITHOUT ROWID' WHERE type = 'table' AND name = 'tags';"
	"PRAGMA writable_schema=RESET;",

	/*
	 * 5: fewer and smaller tag leaves per event (db.h, "The key of a
	 * tag row").  The name becomes its lowercase letter, with the case
	 * after the time in the key, so that an event's E and e rows with
	 * one value, and its P and p rows, sit side by side: a NIP-22
	 * comment on a thread's root writes two random leaves of the key
	 * where it wrote four.  A query for one name skips only the other
	 * case's rows of its value.  A value of 64 lowercase hex digits, an
	 * id or a key, is kept as its 32 bytes: the key shrank by a third
	 * on a 200,000-event load.  tag_value() is db.c's, the same
	 * conversion as db_bind_tag_value().
	 */
	"CREATE TABLE tags_v5 ("
	"  letter TEXT NOT NULL,"
	"  value BLOB NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  upper INTEGER NOT NULL,"
	"  event INTEGER NOT NULL,"
	"  PRIMARY KEY (letter, value, created_at, upper, event)"
	") WITHOUT ROWID;"
	"INSERT INTO tags_v5 SELECT lower(name), tag_value(value), created_at,"
	"  name <> lower(name), event FROM tags;"
	"DROP TABLE tags;"
	"ALTER TABLE tags_v5 RENAME TO tags;",

	/*
	 * 6: GRASP-03 eligible identity authors (eligible.h), kept by
	 * relayd from its inventory so that discoveryd reads them instead
	 * of building an inventory of its own; a generation bumped by every
	 * change so readers notice cheaply.  relayd fills it at start.
	 */
	"CREATE TABLE eligible_authors ("
	"  pubkey BLOB PRIMARY KEY"
	") WITHOUT ROWID;"
	"CREATE TABLE eligible_generation ("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  generation INTEGER NOT NULL"
	");"
	"INSERT INTO eligible_generation VALUES (1, 0);",

	/*
	 * 7: the GRASP-03 inventory (invdb.h), kept by relayd in the
	 * transaction of each event it stores so that no role builds a copy
	 * in memory; empty and not built until relayd feeds it the stored
	 * events once (invdb_build()); seq is the last event the tables
	 * saw, so events stored behind relayd's back are noticed.
	 */
	"CREATE TABLE inv_repos ("
	"  coord TEXT PRIMARY KEY,"
	"  owner BLOB NOT NULL,"
	"  d TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  level INTEGER NOT NULL,"
	"  relays TEXT NOT NULL,"
	"  refused INTEGER NOT NULL,"
	"  maintainers BLOB NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE inv_roots ("
	"  num INTEGER PRIMARY KEY,"
	"  id BLOB NOT NULL UNIQUE,"
	"  author BLOB NOT NULL,"
	"  kind INTEGER NOT NULL,"
	"  coord TEXT NOT NULL,"
	"  deleted INTEGER NOT NULL,"
	"  ndesc INTEGER NOT NULL"
	");"
	"CREATE INDEX inv_roots_coord ON inv_roots (coord);"
	"CREATE TABLE inv_nodes ("
	"  id BLOB NOT NULL,"
	"  root INTEGER NOT NULL,"
	"  depth INTEGER NOT NULL,"
	"  author BLOB,"
	"  PRIMARY KEY (id, root)"
	") WITHOUT ROWID;"
	"CREATE INDEX inv_nodes_root ON inv_nodes (root);"
	"CREATE INDEX inv_nodes_author ON inv_nodes (author, root)"
	"  WHERE author IS NOT NULL;"
	"CREATE TABLE inv_addrs ("
	"  addr TEXT NOT NULL,"
	"  root INTEGER NOT NULL,"
	"  depth INTEGER NOT NULL,"
	"  PRIMARY KEY (addr, root)"
	") WITHOUT ROWID;"
	"CREATE INDEX inv_addrs_root ON inv_addrs (root);"
	"CREATE TABLE inv_state ("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  generation INTEGER NOT NULL,"
	"  built INTEGER NOT NULL,"
	"  seq INTEGER NOT NULL"
	");"
	"INSERT INTO inv_state VALUES (1, 0, 0, 0);",

	/*
	 * 8: fewer random index leaves per descendant (doc/performance.md).
	 * A node is keyed by its event's seq, so that new nodes go to the
	 * end of inv_nodes instead of a random leaf of an id key; its id is
	 * the event's, found through events.id, and the ids of node events
	 * that left the store (a NIP-09 deletion, a newer version) stay in
	 * inv_gone, written by a trigger whatever deleted them.  An author's
	 * nodes are found the same way, through events_pubkey and inv_gone's
	 * pubkey, instead of an index of their own.  A root's
	 * number of descendants is no longer a column updated by each of
	 * them: each node has its place n in its root (0 the root's own,
	 * then 1, 2, ... in arrival) and the count is the largest n, read
	 * from inv_nodes_root, whose leaf the new node goes into anyway.
	 * The tables are emptied and marked unbuilt: relayd builds them
	 * again at its next start.
	 */
	"DROP TABLE inv_nodes;"
	"DROP TABLE inv_roots;"
	"CREATE TABLE inv_roots ("
	"  num INTEGER PRIMARY KEY,"
	"  id BLOB NOT NULL UNIQUE,"
	"  author BLOB NOT NULL,"
	"  kind INTEGER NOT NULL,"
	"  coord TEXT NOT NULL,"
	"  deleted INTEGER NOT NULL"
	");"
	"CREATE INDEX inv_roots_coord ON inv_roots (coord);"
	"CREATE TABLE inv_nodes ("
	"  seq INTEGER NOT NULL,"
	"  root INTEGER NOT NULL,"
	"  n INTEGER NOT NULL,"
	"  depth INTEGER NOT NULL,"
	"  author BLOB,"
	"  PRIMARY KEY (seq, root)"
	") WITHOUT ROWID;"
	"CREATE INDEX inv_nodes_root ON inv_nodes (root, n);"
	"CREATE TABLE inv_gone ("
	"  seq INTEGER PRIMARY KEY,"
	"  id BLOB NOT NULL UNIQUE,"
	"  pubkey BLOB NOT NULL"
	");"
	"CREATE INDEX inv_gone_pubkey ON inv_gone (pubkey);"
	"CREATE TRIGGER inv_nodes_gone AFTER DELETE ON events"
	"  WHEN EXISTS (SELECT 1 FROM inv_nodes WHERE seq = old.seq)"
	"  BEGIN INSERT OR IGNORE INTO inv_gone"
	"    VALUES (old.seq, old.id, old.pubkey); END;"
	"DELETE FROM inv_repos;"
	"DELETE FROM inv_addrs;"
	"UPDATE inv_state SET built = 0, seq = 0 WHERE id = 1;",

	/*
	 * 9: one tag row for both cases of a name (db.h, "The key of a tag
	 * row").  A NIP-22 comment on a thread's root names the root by E
	 * and e and its author by P and p with the same values: two rows
	 * each, side by side in one leaf, inserted and found one by one.
	 * The case leaves the key for a cases column (DB_TAG_LOWER |
	 * DB_TAG_UPPER), which a query for one name tests on the rows of
	 * its value.  A comment writes three tag rows where it wrote six:
	 * 8% more events a second at 200,000 (doc/performance.md).  The old
	 * table's order is nearly the new one's, so the copy mostly
	 * appends: 6 s for a million events' rows.
	 */
	"CREATE TABLE tags_v9 ("
	"  letter TEXT NOT NULL,"
	"  value BLOB NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  event INTEGER NOT NULL,"
	"  cases INTEGER NOT NULL,"
	"  PRIMARY KEY (letter, value, created_at, event)"
	") WITHOUT ROWID;"
	"INSERT INTO tags_v9 SELECT letter, value, created_at, event,"
	"  CASE upper WHEN 1 THEN " DB_TAG_UPPER_SQL " ELSE " DB_TAG_LOWER_SQL
	"  END FROM tags WHERE true"
	"  ON CONFLICT (letter, value, created_at, event)"
	"  DO UPDATE SET cases = cases | excluded.cases;"
	"DROP TABLE tags;"
	"ALTER TABLE tags_v9 RENAME TO tags;",
};

#define DB_NMIGRATIONS ((int)(sizeof(db_migrations) / sizeof(db_migrations[0])))

int
db_schema_version(void)
{
	return DB_NMIGRATIONS;
}

int
db_rewrite_version(sqlite3 *db)
{
	char sql[96];

	snprintf(sql, sizeof(sql),
	    "BEGIN IMMEDIATE; PRAGMA user_version = %d; COMMIT",
	    DB_NMIGRATIONS);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

long long
db_wal_room(long long bytes, long long page)
{
	long long frame = page + DB_WAL_FRAME_HDR;

	return DB_WAL_HDR + bytes / frame * frame;
}

/* Creates every missing directory above path's last component. */
static int
mkdir_parents(const char *path, char *err, size_t errlen)
{
	char *p, *s;
	int   rc = 0;

	if ((p = strdup(path)) == NULL)
		fatal("strdup");
	if ((s = strrchr(p, '/')) != NULL && s != p) {
		*s = '\0';
		if ((rc = mkdir_p(p, 0755)) == -1)
			snprintf(err, errlen, "mkdir %s: %s", p,
			    strerror(errno));
	}
	free(p);
	return rc;
}

/* Runs one statement that returns at most one integer row into *out. */
static int
db_int(sqlite3 *db, const char *sql, long long *out)
{
	sqlite3_stmt *st;
	int	      rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && out != NULL)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : -1;
}

long long
db_page_size(sqlite3 *db)
{
	long long size = -1;

	if (db_int(db, "PRAGMA page_size", &size) == -1)
		return -1;
	return size;
}

const char *
db_tag_letter(char name)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz";

	if (name >= 'A' && name <= 'Z')
		return &letters[name - 'A'];
	if (name >= 'a' && name <= 'z')
		return &letters[name - 'a'];
	return "";
}

int
db_tag_case(char name)
{
	return name >= 'A' && name <= 'Z' ? DB_TAG_UPPER : DB_TAG_LOWER;
}

void
db_bind_tag_value(sqlite3_stmt *st, int i, const char *value, size_t len)
{
	uint8_t bin[32];

	if (hex_decode(value, len, bin, sizeof(bin)) == 0)
		sqlite3_bind_blob(st, i, bin, sizeof(bin), SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(st, i, value, (int)len, SQLITE_TRANSIENT);
}

/* A migration's progress: the supervisor waits while there is some. */
static int
migrate_progress(void *arg)
{
	(void)arg;
	ready_progress();
	return 0;
}

/* SQL tag_value(v): v in its tag-row form, for schema step 5. */
static void
tag_value_sql(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	const char *v;
	uint8_t	    bin[32];
	int	    len;

	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_TEXT) {
		v = (const char *)sqlite3_value_text(argv[0]);
		len = sqlite3_value_bytes(argv[0]);
		if (v != NULL && len >= 0 &&
		    hex_decode(v, (size_t)len, bin, sizeof(bin)) == 0) {
			sqlite3_result_blob(cx, bin, sizeof(bin),
			    SQLITE_TRANSIENT);
			return;
		}
	}
	sqlite3_result_value(cx, argv[0]);
}

static int
db_migrate(sqlite3 *db, char *err, size_t errlen)
{
	long long version = 0;
	char	 *msg = NULL, sql[64];
	int	  i;

	if (sqlite3_create_function(db, "tag_value", 1,
		SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, tag_value_sql, NULL,
		NULL) != SQLITE_OK)
		goto fail;
	/* IMMEDIATE: two roles starting together must not both migrate. */
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	if (db_int(db, "PRAGMA user_version", &version) == -1)
		goto fail;
	if (version > DB_NMIGRATIONS) {
		snprintf(err, errlen,
		    "database schema version %lld is newer than this program's %d",
		    version, DB_NMIGRATIONS);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	/* Step 5 rewrites every tag row: 2 s a million on a fast disk. */
	sqlite3_progress_handler(db, DB_PROGRESS_OPS, migrate_progress, NULL);
	for (i = (int)version; i < DB_NMIGRATIONS; i++) {
		if (sqlite3_exec(db, db_migrations[i], NULL, NULL, &msg) !=
		    SQLITE_OK)
			goto fail;
	}
	sqlite3_progress_handler(db, 0, NULL, NULL);
	/*
	 * Only a migration writes: setting user_version, even to its own
	 * value, writes a page, and relayd must start on a full disk to
	 * serve what it has.
	 */
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", DB_NMIGRATIONS);
	if ((version < DB_NMIGRATIONS &&
		sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	if (version < DB_NMIGRATIONS)
		log_info("database schema migrated from version %lld to %d",
		    version, DB_NMIGRATIONS);
	return 0;

fail:
	snprintf(err, errlen, "schema migration: %s",
	    msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int
db_open(const char *path, int flags, sqlite3 **out, char *err, size_t errlen)
{
	sqlite3	 *db = NULL;
	long long version = 0;
	char	 *msg = NULL;
	int	  ro = (flags & DB_READONLY) != 0, oflags;
	char	  mode[16] = "", pragmas[256];

	*out = NULL;
	if (!ro && strcmp(path, ":memory:") != 0 &&
	    mkdir_parents(path, err, errlen) == -1)
		return -1;
	oflags = ro ? SQLITE_OPEN_READONLY :
		      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	/*
	 * The writer gathers each commit's WAL frames into one write; a
	 * power-cut test records what reaches the files beneath it.
	 */
	if (!ro)
		powercut_from_env();
	if (sqlite3_open_v2(path, &db, oflags | SQLITE_OPEN_NOMUTEX,
		!ro && walbuf_register() == 0 ? WALBUF_VFS : NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		    db ? sqlite3_errmsg(db) : "out of memory");
		goto fail;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, DB_BUSY_TIMEOUT_MS);

	if (!ro) {
		sqlite3_stmt *st;

		/* A read-only connection cannot switch; the writer did. */
		if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st,
			NULL) != SQLITE_OK)
			goto sqlfail;
		if (sqlite3_step(st) == SQLITE_ROW)
			snprintf(mode, sizeof(mode), "%s",
			    (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		if (strcmp(mode, "wal") != 0 && strcmp(path, ":memory:") != 0) {
			snprintf(err, errlen,
			    "%s: cannot enable WAL (journal mode %s)", path,
			    mode);
			goto fail;
		}
	}
	/*
	 * synchronous: a writer syncs the WAL at each commit (FULL), so a
	 * commit that returned is on stable storage (db.h, "Durability"); a
	 * reader never writes a frame, so its setting is moot.  temp_store:
	 * sorters, UNION merges and the statement journal of each put's
	 * savepoint would otherwise go through temporary files.
	 */
	snprintf(pragmas, sizeof(pragmas),
	    "PRAGMA synchronous=%s;"
	    "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;"
	    "PRAGMA cache_size=-%d; PRAGMA wal_autocheckpoint=%d;",
	    ro ? "NORMAL" : "FULL", ro ? DB_RO_CACHE_KIB : DB_CACHE_KIB,
	    DB_WAL_AUTOCHECKPOINT);
	if (sqlite3_exec(db, pragmas, NULL, NULL, &msg) != SQLITE_OK)
		goto sqlfail;

	if (!ro) {
		if (db_migrate(db, err, errlen) == -1)
			goto fail;
	} else {
		if (db_int(db, "PRAGMA user_version", &version) == -1)
			goto sqlfail;
		if (version != DB_NMIGRATIONS) {
			snprintf(err, errlen,
			    "%s: schema version %lld, this program needs %d",
			    path, version, DB_NMIGRATIONS);
			goto fail;
		}
	}
	*out = db;
	return 0;

sqlfail:
	snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
fail:
	sqlite3_free(msg);
	sqlite3_close(db);
	return -1;
}

int
db_set_durability(sqlite3 *db, int full)
{
	return sqlite3_exec(db,
		   full ? "PRAGMA synchronous=FULL" :
			  "PRAGMA synchronous=NORMAL",
		   NULL, NULL, NULL) == SQLITE_OK ?
	    0 :
	    -1;
}

void
db_close(sqlite3 *db)
{
	if (db == NULL)
		return;
	if (sqlite3_close(db) != SQLITE_OK) {
		log_warnx("db_close: %s", sqlite3_errmsg(db));
		sqlite3_close_v2(db);
	}
}
