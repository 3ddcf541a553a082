/*
 * tstore.h: one store (common/store.h) for all the cases of a test
 * program, in a temporary directory of its own (tdir.h).
 */
#ifndef GRASPD_TSTORE_H
#define GRASPD_TSTORE_H

#include "tdir.h"
#include "tfix.h"

struct store;

struct tstore_prog {
	struct tdir_prog	  dir;	/* where the database lives */
	struct store		**st;	/* the program's store */
};

/*
 * A fixture for T_MAIN_FIXTURE() with a struct tstore_prog as arg: makes
 * dir as tdir_fixture does and opens dir/graspd.db read-write in *st
 * ("not ok - store_open: why" if it cannot); after the last case closes
 * it and removes the directory.
 */
extern const struct t_fixture tstore_fixture;

#endif
