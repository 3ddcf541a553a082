/*
 * tdir.c: the tests' temporary directories (tdir.h).
 */
#define _GNU_SOURCE /* nftw */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tdir.h"
#include "tfix.h"

int
tdir_make(char *out, size_t outlen, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int	    n;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	n = snprintf(out, outlen, "%s/%s.XXXXXX", tmp, name);
	if (n < 0 || (size_t)n >= outlen) {
		printf("# tdir: %s/%s.XXXXXX is too long\n", tmp, name);
		goto fail;
	}
	if (mkdtemp(out) == NULL) {
		printf("# tdir: mkdtemp %s: %s\n", out, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (outlen > 0)
		out[0] = '\0';
	return -1;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	if (remove(path) == -1)
		fprintf(stderr, "# tdir: remove %s: %s\n", path,
		    strerror(errno));
	return 0;
}

void
tdir_remove(const char *path)
{
	const char *keep = getenv("GRASPD_KEEP_TMP");

	if (path == NULL || *path == '\0')
		return;
	if (keep != NULL && *keep != '\0')
		fprintf(stderr, "# kept %s\n", path);
	else
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
tdir_fixture_make(void *arg)
{
	struct tdir_prog *tp = arg;

	return tdir_make(tp->path, tp->len, tp->name) == -1 ? 1 : 0;
}

static int
tdir_fixture_log(void *arg)
{
	struct tdir_prog *tp = arg;

	log_init(tp->name, 1);
	log_setlevel(LOG_LVL_WARN);
	return tdir_fixture_make(arg);
}

static void
tdir_fixture_remove(void *arg, int failed)
{
	struct tdir_prog *tp = arg;

	(void)failed;
	tdir_remove(tp->path);
}

const struct t_fixture tdir_fixture = { tdir_fixture_make,
	tdir_fixture_remove };
const struct t_fixture tdir_log_fixture = { tdir_fixture_log,
	tdir_fixture_remove };
