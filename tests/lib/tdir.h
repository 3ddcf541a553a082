/*
 * tdir.h: temporary directories of the tests, under $TMPDIR (tests/run.sh
 * gives each test program its own) or /tmp.
 */
#ifndef GRASPD_TDIR_H
#define GRASPD_TDIR_H

#include <stddef.h>

#include "tfix.h"

/*
 * Creates a new directory $TMPDIR/name.XXXXXX (TMPDIR defaulting to /tmp)
 * and puts its path in out (outlen bytes).  Returns 0, or -1 with the
 * reason printed as a "# " line and out set to "".
 */
int  tdir_make(char *out, size_t outlen, const char *name);
/*
 * Removes the directory path and everything below it, not following
 * links; keeps it, printing its path, when GRASPD_KEEP_TMP is set.  An
 * empty path is ignored.
 */
void tdir_remove(const char *path);

/* The temporary directory of a whole test program, for the fixtures. */
struct tdir_prog {
	char	   *path; /* tdir_make()'s out */
	size_t	    len;  /* and outlen */
	const char *name; /* and name */
};

/*
 * Fixtures for T_MAIN_FIXTURE() with a struct tdir_prog as arg: make the
 * directory before the first case and remove it after the last one.
 * tdir_log_fixture first logs as the program name (warnings and worse,
 * log_init(name, 1)); gitutil.h's gt_fixture also prepares git there.
 */
extern const struct t_fixture tdir_fixture;
extern const struct t_fixture tdir_log_fixture;

#endif
