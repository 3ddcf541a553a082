/*
 * plusmark.c: the GRASP-03 fallback marks table (see plusmark.h), a
 * keyset.h set.  Statements are prepared per call: marks change rarely
 * and readers poll one row a second.
 */
#include "hmap.h"
#include "keyset.h"
#include "nip01.h"
#include "plusmark.h"

#define GEN_SQL "SELECT generation FROM plus_mark_generation WHERE id = 1"

int
plusmark_set(struct sqlite3 *db, const uint8_t pubkey[PUBKEY_LEN], int set,
    int64_t now)
{
	int n;

	n = keyset_write(db, "plusmark",
	    set ? "INSERT OR IGNORE INTO plus_marks (pubkey, marked_at) "
		  "VALUES (?1, ?2)" :
		  "DELETE FROM plus_marks WHERE pubkey = ?1",
	    pubkey, now);
	if (n <= 0)
		return n;
	if (keyset_write(db, "plusmark",
		"UPDATE plus_mark_generation "
		"SET generation = generation + 1 WHERE id = 1",
		NULL, 0) != 1)
		return -1;
	return 1;
}

int
plusmark_generation(struct sqlite3 *db, int64_t *out)
{
	return keyset_generation(db, "plusmark", GEN_SQL, out);
}

static void
put_key(void *arg, const uint8_t key[PUBKEY_LEN])
{
	hmap_put(arg, key, PUBKEY_LEN, (void *)1);
}

int
plusmark_load(struct sqlite3 *db, struct hmap *set, int64_t *gen)
{
	struct hmap fresh = HMAP_INIT;
	int	    n;

	n = keyset_each(db, "plusmark", GEN_SQL,
	    "SELECT pubkey FROM plus_marks", put_key, &fresh, gen);
	if (n == -1) {
		hmap_free(&fresh);
		return -1;
	}
	hmap_free(set);
	*set = fresh;
	return n;
}
