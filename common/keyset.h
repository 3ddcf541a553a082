/*
 * keyset.h: a set of 32-byte keys in one table of graspd's database with
 * a one-row generation beside it, which its writer bumps on every change
 * so that readers poll one row and read the set only when it moved: the
 * GRASP-03 fallback marks (plusmark.h) and eligible authors (eligible.h).
 * Statements are prepared per call: these sets change rarely.
 *
 * Every function returns -1 after logging (prefixed with what) on a
 * database error and never exits.
 */
#ifndef GRASPD_KEYSET_H
#define GRASPD_KEYSET_H

#include <stdint.h>

#include "nip01.h"

struct sqlite3;

/*
 * Runs sql, a statement without rows, with key bound to ?1 (if key is
 * not NULL) and now to ?2 (if sql has it).  Returns the rows it changed.
 */
int keyset_write(struct sqlite3 *, const char *what, const char *sql,
    const uint8_t key[PUBKEY_LEN], int64_t now);

/* The one integer sql selects, in *out. */
int keyset_generation(struct sqlite3 *, const char *what, const char *sql,
    int64_t *out);

/*
 * Calls cb once for each 32-byte key keys_sql selects (valid during the
 * call), and stores what gen_sql selects in *gen (if not NULL), both from
 * one read transaction (or the caller's).  Returns the number of keys.
 */
int keyset_each(struct sqlite3 *, const char *what, const char *gen_sql,
    const char *keys_sql, void (*cb)(void *arg, const uint8_t key[PUBKEY_LEN]),
    void *arg, int64_t *gen);

#endif
