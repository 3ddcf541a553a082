/*
 * eligible.c: the GRASP-03 eligible identity authors table (see
 * eligible.h), a keyset.h set.
 */
#include <stddef.h>

#include "eligible.h"
#include "keyset.h"
#include "nip01.h"

#define GEN_SQL "SELECT generation FROM eligible_generation WHERE id = 1"

int
eligible_put(struct sqlite3 *db, const uint8_t pubkey[PUBKEY_LEN], int set)
{
	return keyset_write(db, "eligible",
	    set ?
		"INSERT OR IGNORE INTO eligible_authors (pubkey) VALUES (?1)" :
		"DELETE FROM eligible_authors WHERE pubkey = ?1",
	    pubkey, 0);
}

int
eligible_bump(struct sqlite3 *db)
{
	return keyset_write(db, "eligible",
		   "UPDATE eligible_generation "
		   "SET generation = generation + 1 WHERE id = 1",
		   NULL, 0) == 1 ?
	    0 :
	    -1;
}

int
eligible_generation(struct sqlite3 *db, int64_t *out)
{
	return keyset_generation(db, "eligible", GEN_SQL, out);
}

int
eligible_each(struct sqlite3 *db, void (*cb)(void *, const uint8_t[PUBKEY_LEN]),
    void *arg, int64_t *gen)
{
	return keyset_each(db, "eligible", GEN_SQL,
	    "SELECT pubkey FROM eligible_authors", cb, arg, gen);
}
