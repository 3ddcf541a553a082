/*
 * eligible.c: the GRASP-03 eligible identity authors table (see
 * eligible.h).  Statements are prepared per call: relayd changes the set
 * only when an author first becomes eligible or after an announcement or
 * a deletion, and readers poll one row.
 */
#include <stddef.h>

#include <sqlite3.h>

#include "eligible.h"
#include "log.h"

static int
fail(sqlite3 *db, const char *what, sqlite3_stmt *st)
{
	log_warnx("eligible: %s: %s", what, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

/* Runs one statement without rows; returns the rows it changed. */
static int
exec_changes(sqlite3 *db, const char *sql, const uint8_t pubkey[32])
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, "prepare", st);
	if (pubkey != NULL &&
	    sqlite3_bind_blob(st, 1, pubkey, 32, SQLITE_STATIC) != SQLITE_OK)
		return fail(db, "bind", st);
	if (sqlite3_step(st) != SQLITE_DONE)
		return fail(db, "write", st);
	sqlite3_finalize(st);
	return sqlite3_changes(db);
}

int
eligible_put(sqlite3 *db, const uint8_t pubkey[32], int set)
{
	return exec_changes(db,
	    set ?
		"INSERT OR IGNORE INTO eligible_authors (pubkey) VALUES (?1)" :
		"DELETE FROM eligible_authors WHERE pubkey = ?1",
	    pubkey);
}

int
eligible_bump(sqlite3 *db)
{
	return exec_changes(db,
		   "UPDATE eligible_generation "
		   "SET generation = generation + 1 WHERE id = 1",
		   NULL) == 1 ?
	    0 :
	    -1;
}

int
eligible_generation(sqlite3 *db, int64_t *out)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db,
		"SELECT generation FROM eligible_generation WHERE id = 1", -1,
		&st, NULL) != SQLITE_OK)
		return fail(db, "prepare", st);
	if (sqlite3_step(st) != SQLITE_ROW)
		return fail(db, "generation", st);
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

int
eligible_each(sqlite3 *db, void (*cb)(void *, const uint8_t[32]), void *arg,
    int64_t *gen)
{
	sqlite3_stmt *st = NULL;
	int64_t	      g;
	int	      rc, n = 0, intx;

	/* The set and its generation from one snapshot. */
	intx = sqlite3_get_autocommit(db) &&
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	if (eligible_generation(db, &g) == -1)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT pubkey FROM eligible_authors", -1,
		&st, NULL) != SQLITE_OK) {
		fail(db, "prepare", st);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 0) != 32)
			continue;
		cb(arg, sqlite3_column_blob(st, 0));
		n++;
	}
	if (rc != SQLITE_DONE) {
		fail(db, "read", st);
		goto out;
	}
	sqlite3_finalize(st);
	if (gen != NULL)
		*gen = g;
	rc = n;
	goto done;
out:
	rc = -1;
done:
	if (intx)
		sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return rc;
}
