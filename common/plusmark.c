/*
 * plusmark.c: the GRASP-03 fallback marks table (see plusmark.h).
 * Statements are prepared per call: marks change rarely and readers poll
 * one row a second.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hmap.h"
#include "log.h"
#include "plusmark.h"

static int
fail(sqlite3 *db, const char *what, sqlite3_stmt *st)
{
	log_warnx("plusmark: %s: %s", what, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

/* Runs one statement without rows; returns the rows it changed. */
static int
exec_changes(sqlite3 *db, const char *sql, const uint8_t pubkey[32],
    int64_t now)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, "prepare", st);
	if (pubkey != NULL &&
	    sqlite3_bind_blob(st, 1, pubkey, 32, SQLITE_STATIC) != SQLITE_OK)
		return fail(db, "bind", st);
	if (sqlite3_bind_parameter_count(st) >= 2 &&
	    sqlite3_bind_int64(st, 2, now) != SQLITE_OK)
		return fail(db, "bind", st);
	if (sqlite3_step(st) != SQLITE_DONE)
		return fail(db, "write", st);
	sqlite3_finalize(st);
	return sqlite3_changes(db);
}

int
plusmark_set(sqlite3 *db, const uint8_t pubkey[32], int set, int64_t now)
{
	int n;

	n = exec_changes(db,
	    set ? "INSERT OR IGNORE INTO plus_marks (pubkey, marked_at) "
		  "VALUES (?1, ?2)" :
		  "DELETE FROM plus_marks WHERE pubkey = ?1",
	    pubkey, now);
	if (n <= 0)
		return n;
	if (exec_changes(db,
		"UPDATE plus_mark_generation "
		"SET generation = generation + 1 WHERE id = 1",
		NULL, 0) != 1)
		return -1;
	return 1;
}

int
plusmark_generation(sqlite3 *db, int64_t *out)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db,
		"SELECT generation FROM "
		"plus_mark_generation WHERE id = 1",
		-1, &st, NULL) != SQLITE_OK)
		return fail(db, "prepare", st);
	if (sqlite3_step(st) != SQLITE_ROW)
		return fail(db, "generation", st);
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

int
plusmark_load(sqlite3 *db, struct hmap *set, int64_t *gen)
{
	sqlite3_stmt *st = NULL;
	struct hmap   fresh = { 0 };
	int64_t	      g;
	int	      rc, n = 0, intx;

	/* The set and its generation from one snapshot. */
	intx = sqlite3_get_autocommit(db) &&
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	if (plusmark_generation(db, &g) == -1)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT pubkey FROM plus_marks", -1, &st,
		NULL) != SQLITE_OK) {
		fail(db, "prepare", st);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 0) != 32)
			continue;
		hmap_put(&fresh, sqlite3_column_blob(st, 0), 32, (void *)1);
		n++;
	}
	if (rc != SQLITE_DONE) {
		fail(db, "read", st);
		goto out;
	}
	sqlite3_finalize(st);
	hmap_free(set);
	*set = fresh;
	memset(&fresh, 0, sizeof(fresh));
	if (gen != NULL)
		*gen = g;
	rc = n;
	goto done;
out:
	rc = -1;
done:
	hmap_free(&fresh);
	if (intx)
		sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return rc;
}
