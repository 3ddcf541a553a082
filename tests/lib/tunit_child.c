/*
 * tunit_child.c: a child copy of a unit test expected to die with a
 * message (tunit_child.h).
 */
#include <stdio.h>
#include <string.h>

#include "selfrun.h"
#include "tunit_child.h"

int
tunit_child_dies(const char *argv0, const char *tmpdir, const char *what,
    const char *says)
{
	char dir[256], out[4096];
	int  st;

	snprintf(dir, sizeof(dir), "%s/child-%s", tmpdir, what);
	st = selfrun(argv0, dir, what, out, sizeof(out));
	if (st == 1 && strstr(out, says) != NULL)
		return 0;
	printf("# %s: status %d (want 1 and \"%s\"), stderr: %s\n", what, st,
	    says, out);
	return -1;
}
