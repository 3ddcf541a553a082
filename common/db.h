/*
 * db.h: opening graspd's SQLite database, shared by every role that reads
 * or writes it.
 *
 * Every connection gets WAL, a busy timeout, foreign keys, in-memory
 * temporary storage and a DB_CACHE_KIB page cache (a smaller one when
 * read-only), and WAL checkpoints spaced out (db.c).  A read-write open
 * also brings the schema up to date with the ordered migrations in db.c,
 * keyed by PRAGMA user_version.
 *
 * Durability: a read-write connection runs with synchronous=FULL, so
 * SQLite syncs the WAL at the end of each commit, before the commit
 * returns (walbuf.c hands the frames to the file first, on that sync):
 * a transaction committed is on stable storage, and one sync serves every
 * event of a batch.  db_set_durability() turns that down to NORMAL (the
 * WAL synced only by checkpoints: a power cut may lose the last commits,
 * never the database's integrity).  relayd runs its writer under NORMAL
 * and syncs the WAL itself after each commit, on a thread, before it
 * answers the batch (relayd/relay_sync.c).  Checkpoints sync the WAL before they
 * copy it and the database file before the WAL may start over, under
 * either setting.
 */
#ifndef GRASPD_DB_H
#define GRASPD_DB_H

#include <stddef.h>

#include <sqlite3.h>

#include "buf.h"

/* db_open() flags. */
#define DB_READONLY 0x01

/* Ours: how long a connection waits for another process's write lock. */
#define DB_BUSY_TIMEOUT_MS    5000
/*
 * Ours: the writer's page cache in KiB.  The kernel's page cache holds
 * the file anyway: 4 MiB ingested 19.4-19.9k ev/s against 17.8-19.9k
 * with 32 MiB, A B A B in the ingest benchmark, and relayd holds 28 MB
 * less after it (issue #22).
 */
#define DB_CACHE_KIB	      4096
/*
 * Ours: WAL pages (4 KiB) after which a commit checkpoints on its own.
 * SQLite's default (1000) puts a checkpoint, with its syncs, inside one
 * commit in every few hundred; relayd turns it off and checkpoints on
 * a thread of its own (relay_ckpt.c), so this bound (a WAL of about
 * 160 MiB) serves the database's other writers, such as the tools of
 * tests/bench.  Under sustained ingest a checkpoint copies
 * each changed page once however often it changed, so fewer, larger ones
 * cost less: 40,000 gave 12.1k ev/s in the ingest benchmark against
 * 10.2-10.9k with 10,000.
 */
#define DB_WAL_AUTOCHECKPOINT 40000
/* SQLite's WAL format (its wal.c): the file's header, then frames,
 * each a page after a header of DB_WAL_FRAME_HDR bytes. */
#define DB_WAL_HDR	      32
#define DB_WAL_FRAME_HDR      24

/*
 * Opens the database at path (a file name; ":memory:" works for tests).
 * Read-write: creates the file and its missing parent directories, turns
 * on WAL and runs the pending migrations in one transaction, reporting
 * progress (ready_progress(), ready.h) while they run.  Read-only:
 * the file must exist with exactly the schema this build knows.  On
 * success stores the connection in *out (close it with db_close) and
 * returns 0; on failure returns -1, writes the reason into err and leaves
 * *out NULL.  Never exits.
 */
int db_open(const char *path, int flags, sqlite3 **out, char *err,
    size_t errlen);

/*
 * Sets db's synchronous setting: FULL when full is non-zero (the
 * default of a read-write db_open()), else NORMAL.  0, or -1 when SQLite
 * refused (a transaction is open).  Never exits.
 */
int db_set_durability(sqlite3 *db, int full);

/* Closes a connection from db_open(); NULL is fine. */
void db_close(sqlite3 *);

/* The page size of db's main database (PRAGMA page_size), or -1. */
long long db_page_size(sqlite3 *db);

/* The schema version a read-write db_open() leaves behind. */
int	  db_schema_version(void);
/*
 * Writes the schema version again, unchanged: the smallest write
 * transaction, for a writer that needs one (relayd makes its WAL start
 * over with it before it keeps the file at a stop).  0 or -1.
 */
int	  db_rewrite_version(sqlite3 *db);
/*
 * The size of a WAL file (its header and whole frames of page-byte pages)
 * that holds as many frames as bytes has room for: what relayd writes
 * for a room of bytes (wal_room_mb).
 */
long long db_wal_room(long long bytes, long long page);

/*
 * The key of a tag row (schema steps 5 and 9 in db.c): the tag's name as
 * its lowercase letter, and its value as 32 bytes when it is 64 lowercase
 * hex digits (an event id or a public key), else as the text itself; the
 * row's cases column says under which forms of the letter the event has
 * that value, DB_TAG_LOWER, DB_TAG_UPPER or both.  Every statement that
 * binds a tag row's letter, case or value goes through these, so that a
 * filter's value finds the rows.
 */
#define DB_TAG_LOWER	 1
#define DB_TAG_UPPER	 2
/* The two as SQL text, for statements written out whole. */
#define DB_TAG_LOWER_SQL BUF_XSTR(DB_TAG_LOWER)
#define DB_TAG_UPPER_SQL BUF_XSTR(DB_TAG_UPPER)
/* The lowercase form of the letter name as a one-byte string. */
const char *db_tag_letter(char name);
/* DB_TAG_UPPER when name is an uppercase letter, else DB_TAG_LOWER. */
int	    db_tag_case(char name);
/* Binds value (len bytes) to parameter i of st as its tag-row form. */
void db_bind_tag_value(sqlite3_stmt *st, int i, const char *value, size_t len);

#endif
