/*
 * keyset.c: sets of 32-byte keys with a generation in graspd's database
 * (see keyset.h).
 */
#include <stddef.h>

#include <sqlite3.h>

#include "keyset.h"
#include "log.h"
#include "nip01.h"

static int
fail(sqlite3 *db, const char *what, const char *step, sqlite3_stmt *st)
{
	log_warnx("%s: %s: %s", what, step, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

int
keyset_write(sqlite3 *db, const char *what, const char *sql,
    const uint8_t key[PUBKEY_LEN], int64_t now)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, what, "prepare", st);
	if (key != NULL &&
	    sqlite3_bind_blob(st, 1, key, PUBKEY_LEN, SQLITE_STATIC) !=
		SQLITE_OK)
		return fail(db, what, "bind", st);
	if (sqlite3_bind_parameter_count(st) >= 2 &&
	    sqlite3_bind_int64(st, 2, now) != SQLITE_OK)
		return fail(db, what, "bind", st);
	if (sqlite3_step(st) != SQLITE_DONE)
		return fail(db, what, "write", st);
	sqlite3_finalize(st);
	return sqlite3_changes(db);
}

int
keyset_generation(sqlite3 *db, const char *what, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, what, "prepare", st);
	if (sqlite3_step(st) != SQLITE_ROW)
		return fail(db, what, "generation", st);
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

int
keyset_each(sqlite3 *db, const char *what, const char *gen_sql,
    const char *keys_sql, void (*cb)(void *, const uint8_t[PUBKEY_LEN]),
    void *arg, int64_t *gen)
{
	sqlite3_stmt *st = NULL;
	int64_t	      g;
	int	      rc, n = 0, intx;

	/* The set and its generation from one snapshot. */
	intx = sqlite3_get_autocommit(db) &&
	    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	if (keyset_generation(db, what, gen_sql, &g) == -1)
		goto out;
	if (sqlite3_prepare_v2(db, keys_sql, -1, &st, NULL) != SQLITE_OK) {
		fail(db, what, "prepare", st);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 0) != PUBKEY_LEN)
			continue;
		cb(arg, sqlite3_column_blob(st, 0));
		n++;
	}
	if (rc != SQLITE_DONE) {
		fail(db, what, "read", st);
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
