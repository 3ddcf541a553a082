/*
 * gctl_backup.c: graspctl backup DIR (graspctl(8)), an online copy of
 * graspd's data while it runs: DIR/relay/graspd.db, the relay key file
 * beside it, and DIR/git, the hosted repositories.
 *
 * The database is copied first, with VACUUM INTO on a read-only
 * connection: one read transaction, so the copy holds exactly what was
 * committed when it began (every event relayd had acknowledged) and
 * relayd goes on writing meanwhile.  The git tree follows, so it holds
 * at least the objects the copied events name (relayd takes a state
 * only once its objects are in place).  Inside each directory the
 * entries a concurrent push or git gc changes last are copied last:
 * refs before packed-refs, everything before objects, loose objects
 * before packs; git writes objects before the refs that name them and
 * packs before it removes the loose copies, so every copied ref finds
 * its objects.  Runs in graspctl only.
 */
#define _GNU_SOURCE /* scandirat */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "config.h"
#include "db.h"
#include "graspctl.h"
#include "log.h"

/* The relay key file in relay_data_path (graspd.conf(5)). */
#define BACKUP_KEY_FILE ".relay-owner.nsec"

struct copied {
	long long cp_files;
	long long cp_bytes;
};

/*
 * Opens name in the directory dfd (AT_FDCWD: name is a path) for
 * reading: never through a symbolic link (O_NOFOLLOW), never blocking on
 * a fifo (O_NONBLOCK), and then checks with fstat that what it opened is
 * a regular file (a directory when dir).  graspctl backup runs as root
 * and the tree it reads is the roles' user's: a name they swap for a
 * link to a root-only file, or for a fifo, between the directory's
 * reading and this open is refused, never copied.  The descriptor with
 * *st filled, or -1 with errno (ENOENT: gone meanwhile; ELOOP or EINVAL:
 * not what it was).
 */
static int
open_checked(int dfd, const char *name, int dir, struct stat *st)
{
	int fd,
	    flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

	if ((fd = openat(dfd, name, flags | (dir ? O_DIRECTORY : 0))) == -1)
		return -1;
	if (fstat(fd, st) == -1) {
		close(fd);
		return -1;
	}
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* Says why open_checked() refused from. */
static void
open_failed(const char *from)
{
	if (errno == ELOOP || errno == EINVAL || errno == ENOTDIR)
		fprintf(stderr,
		    "graspctl: %s: changed into a link or a special file while copying: not followed\n",
		    from);
	else
		fprintf(stderr, "graspctl: %s: %s\n", from, strerror(errno));
}

/*
 * Copies the regular file name of the directory dfd (from is its path,
 * for messages) to the new file to, with mode, or the mode of what was
 * opened when mode is 0.  A file gone meanwhile is no error.
 */
static int
copy_file_at(int dfd, const char *name, const char *from, const char *to,
    mode_t mode, struct copied *c)
{
	struct stat st;
	char	    buf[65536];
	ssize_t	    n, w, off;
	int	    in, out, rc = -1;

	if ((in = open_checked(dfd, name, 0, &st)) == -1) {
		/* Gone since the directory was read (git gc, a ref). */
		if (errno == ENOENT)
			return 0;
		open_failed(from);
		return -1;
	}
	if (mode == 0)
		mode = st.st_mode;
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		 mode & 07777)) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", to, strerror(errno));
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += w)
			if ((w = write(out, buf + off, (size_t)(n - off))) <= 0)
				goto fail;
		c->cp_bytes += n;
	}
	if (n == -1)
		goto fail;
	if (fsync(out) == -1)
		goto fail;
	c->cp_files++;
	rc = 0;
fail:
	if (rc == -1)
		fprintf(stderr, "graspctl: copying %s: %s\n", from,
		    strerror(errno));
	if (close(out) == -1 && rc == 0) {
		fprintf(stderr, "graspctl: %s: %s\n", to, strerror(errno));
		rc = -1;
	}
	close(in);
	return rc;
}

static int
copy_file(const char *from, const char *to, mode_t mode, struct copied *c)
{
	return copy_file_at(AT_FDCWD, from, from, to, mode, c);
}

/* The later an entry is copied, the higher its rank (see the top). */
static int
rank(const char *name)
{
	if (strcmp(name, "objects") == 0)
		return 3;
	if (strcmp(name, "pack") == 0)
		return 2;
	if (strcmp(name, "packed-refs") == 0)
		return 1;
	return 0;
}

static int
by_rank(const struct dirent **a, const struct dirent **b)
{
	int ra = rank((*a)->d_name), rb = rank((*b)->d_name);

	if (ra != rb)
		return ra - rb;
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int
not_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/*
 * Copies the directory open at fd (from is its path, for messages) into
 * to, created with its mode.  Every entry is reached from its
 * directory's descriptor (fstatat, openat, readlinkat), never by a path
 * that a link swapped in above it could redirect; each descriptor is
 * closed here.
 */
static int
copy_tree_at(int fd, const char *from, const char *to, struct copied *c)
{
	struct dirent **ents = NULL;
	struct stat	st;
	char		src[PATH_MAX], dst[PATH_MAX], link[PATH_MAX];
	const char     *name;
	ssize_t		len;
	int		n = 0, i, sub, rc = -1;

	if (fstat(fd, &st) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", from, strerror(errno));
		goto done;
	}
	if (mkdir(to, st.st_mode & 07777) == -1 && errno != EEXIST) {
		fprintf(stderr, "graspctl: %s: %s\n", to, strerror(errno));
		goto done;
	}
	if ((n = scandirat(fd, ".", &ents, not_dots, by_rank)) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", from, strerror(errno));
		n = 0;
		goto done;
	}
	for (i = 0; i < n; i++) {
		name = ents[i]->d_name;
		if ((size_t)snprintf(src, sizeof(src), "%s/%s", from, name) >=
			sizeof(src) ||
		    (size_t)snprintf(dst, sizeof(dst), "%s/%s", to, name) >=
			sizeof(dst)) {
			fprintf(stderr, "graspctl: %s: name too long\n", from);
			goto done;
		}
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno == ENOENT)
				continue;
			fprintf(stderr, "graspctl: %s: %s\n", src,
			    strerror(errno));
			goto done;
		}
		if (S_ISDIR(st.st_mode)) {
			if ((sub = open_checked(fd, name, 1, &st)) == -1) {
				if (errno == ENOENT)
					continue;
				open_failed(src);
				goto done;
			}
			if (copy_tree_at(sub, src, dst, c) == -1)
				goto done;
		} else if (S_ISREG(st.st_mode)) {
			if (copy_file_at(fd, name, src, dst, 0, c) == -1)
				goto done;
		} else if (S_ISLNK(st.st_mode)) {
			if ((len = readlinkat(fd, name, link,
				 sizeof(link) - 1)) == -1 &&
			    errno == EINVAL) {
				fprintf(stderr,
				    "graspctl: %s: changed from a link while copying: not copied\n",
				    src);
				goto done;
			}
			if (len == -1 ||
			    (link[len] = '\0', symlink(link, dst)) == -1) {
				fprintf(stderr, "graspctl: %s: %s\n", src,
				    strerror(errno));
				goto done;
			}
		}
		/* Sockets, fifos and devices have no place in git data. */
	}
	rc = 0;
done:
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	close(fd);
	return rc;
}

/* Copies the tree from (the operator's path) into to. */
static int
copy_tree(const char *from, const char *to, struct copied *c)
{
	int fd;

	if ((fd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", from, strerror(errno));
		return -1;
	}
	return copy_tree_at(fd, from, to, c);
}

/* DIR made, or found empty.  0 or -1. */
static int
empty_dir(const char *dir)
{
	DIR	      *d;
	struct dirent *e;
	int	       n = 0;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST || (d = opendir(dir)) == NULL) {
		fprintf(stderr, "graspctl: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL)
		n += not_dots(e);
	closedir(d);
	if (n > 0) {
		fprintf(stderr, "graspctl: %s is not empty\n", dir);
		return -1;
	}
	return 0;
}

/* VACUUM INTO: the database as one transaction saw it. */
static int
copy_db(const char *from, const char *to)
{
	sqlite3	     *db;
	sqlite3_stmt *st = NULL;
	char	      err[512];
	int	      rc = -1;

	if (db_open(from, DB_READONLY, &db, err, sizeof(err)) == -1) {
		/* err names the file already, or says what failed. */
		fprintf(stderr, "graspctl: %s\n", err);
		return -1;
	}
	if (sqlite3_prepare_v2(db, "VACUUM INTO ?", -1, &st, NULL) !=
		SQLITE_OK ||
	    sqlite3_bind_text(st, 1, to, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		fprintf(stderr, "graspctl: copying %s: %s\n", from,
		    sqlite3_errmsg(db));
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	db_close(db);
	return rc;
}

int
gctl_backup(const struct gctl_where *w, int argc, char *argv[], int jflag)
{
	const struct config *cfg = &w->cw_cfg;
	struct copied	     keyc = { 0, 0 }, gitc = { 0, 0 };
	struct stat	     st;
	cJSON		    *o;
	char		     from[PATH_MAX], to[PATH_MAX], *text;
	const char	    *dir;

	if (argc != 2)
		return GCTL_USAGE_EXIT;
	dir = argv[1];
	/* The database first: a wrong -f or -r leaves no empty DIR behind. */
	if (gctl_db_path(w, from, sizeof(from)) == -1)
		return 1;
	if (empty_dir(dir) == -1)
		return 1;
	if ((size_t)snprintf(to, sizeof(to), "%s/relay", dir) >= sizeof(to)) {
		fprintf(stderr, "graspctl: path too long\n");
		return 1;
	}
	if (mkdir(to, 0700) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", to, strerror(errno));
		return 1;
	}
	strncat(to, "/graspd.db", sizeof(to) - strlen(to) - 1);
	if (copy_db(from, to) == -1)
		return 1;
	snprintf(from, sizeof(from), "%s/%s", cfg->relay_data_path,
	    BACKUP_KEY_FILE);
	snprintf(to, sizeof(to), "%s/relay/%s", dir, BACKUP_KEY_FILE);
	if (stat(from, &st) == 0 && copy_file(from, to, 0600, &keyc) == -1)
		return 1;
	snprintf(to, sizeof(to), "%s/git", dir);
	if (stat(cfg->git_data_path, &st) == 0) {
		if (copy_tree(cfg->git_data_path, to, &gitc) == -1)
			return 1;
	} else if (mkdir(to, 0700) == -1) {
		fprintf(stderr, "graspctl: %s: %s\n", to, strerror(errno));
		return 1;
	}
	if (jflag) {
		if ((o = cJSON_CreateObject()) == NULL ||
		    cJSON_AddStringToObject(o, "dir", dir) == NULL ||
		    cJSON_AddBoolToObject(o, "key", keyc.cp_files > 0) ==
			NULL ||
		    cJSON_AddNumberToObject(o, "git_files",
			(double)gitc.cp_files) == NULL ||
		    cJSON_AddNumberToObject(o, "git_bytes",
			(double)gitc.cp_bytes) == NULL ||
		    (text = cJSON_Print(o)) == NULL)
			fatalx("out of memory");
		printf("%s\n", text);
		free(text);
		cJSON_Delete(o);
	} else
		printf(
		    "%s/relay/graspd.db: the database\n%s%s/git: %lld files, %lld bytes\n",
		    dir, keyc.cp_files > 0 ? "the relay key file\n" : "", dir,
		    gitc.cp_files, gitc.cp_bytes);
	return 0;
}
