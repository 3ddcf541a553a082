/*
 * tdir.h: temporary directories of the tests, under $TMPDIR (tests/run.sh
 * gives each test program its own) or /tmp.
 */
#ifndef GRASPD_TDIR_H
#define GRASPD_TDIR_H

#include <stddef.h>

/*
 * Creates a new directory $TMPDIR/name.XXXXXX (TMPDIR defaulting to /tmp)
 * and puts its path in out (outlen bytes).  Returns 0, or -1 with the
 * reason printed as a "# " line and out set to "".
 */
int	 tdir_make(char *out, size_t outlen, const char *name);
/*
 * Removes the directory path and everything below it, not following
 * links; keeps it, printing its path, when GRASPD_KEEP_TMP is set.  An
 * empty path is ignored.
 */
void	 tdir_remove(const char *path);

#endif
