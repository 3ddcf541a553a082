/*
 * tstore.h: one store (common/store.h) for all the cases of a test
 * program, in a temporary directory of its own (tdir.h), and the made-up
 * pubkeys and unsigned events that tests and benchmarks fill stores with.
 */
#ifndef GRASPD_TSTORE_H
#define GRASPD_TSTORE_H

#include "tdir.h"
#include "tfix.h"

#include <stddef.h>
#include <stdint.h>

struct event;
struct store;

struct tstore_prog {
	struct tdir_prog dir; /* where the database lives */
	struct store   **st;  /* the program's store */
};

/*
 * A fixture for T_MAIN_FIXTURE() with a struct tstore_prog as arg: makes
 * dir as tdir_fixture does and opens dir/graspd.db read-write in *st
 * ("not ok - store_open: why" if it cannot); after the last case closes
 * it and removes the directory.
 */
extern const struct t_fixture tstore_fixture;

/*
 * Writes to out (65 bytes: hex and NUL) the made-up pubkey number n of a
 * series: 32 bytes of fill, n big-endian in the last four.  For stores
 * whose events nothing verifies; distinct n give distinct keys.
 */
void tstore_fake_pubkey(uint8_t fill, uint32_t n, char out[PUBKEY_HEX_LEN + 1]);

/*
 * An event by the pubkey pk (hex) with a zero signature and its real id,
 * in the canonical text store_put() keeps (the store checks neither the
 * signature nor the id); tags is JSON, content JSON string text.  Exits
 * (fatalx, naming the text) if the event does not parse.
 */
struct event *tstore_unsigned_event(const char *pk, int64_t at, uint32_t kind,
    const char *tags, const char *content);

#endif
