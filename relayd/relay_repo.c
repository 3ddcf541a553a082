/*
 * relay_repo.c: relayd's repositories on disk (<git_data>/<npub>/<d>.git):
 * creating and removing them, reading their refs and checking their
 * objects in C (no process, so the checks can run inside a write
 * transaction), the git child processes relayd runs (common/child.c's
 * table: reaped from the loop after SIGCHLD, killed when overdue).
 * The queue of jobs that change refs is relay_job.c's.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "log.h"
#include "child.h"
#include "nip19.h"
#include "relayd.h"

extern char **environ;

/* Ours: how often children are checked while some run (SIGCHLD is the
 * fast path; this catches deadlines). */
#define CHILD_CHECK_MS 200
/* Ours: depth of nested ref directories read (refs/heads/a/b/c...). */
#define REFS_MAX_DEPTH 16

static int create_at(const char *path);
static int remove_at(const char *path);

/* Loose refs and packed-refs of a new repository start empty. */
static const char repo_config[] = "[core]\n"
				  "\trepositoryformatversion = 0\n"
				  "\tfilemode = true\n"
				  "\tbare = true\n";
/*
 * What `git init --bare` writes with no init.defaultBranch (git 2.39 of
 * Debian 12), as the reference ngit-grasp does (it runs git init --bare):
 * a clone of the empty repository is then on git's own default branch.
 * The first state event's HEAD (or relay_job.c's fallback) moves it.
 */
static const char repo_head[] = "ref: refs/heads/master\n";

int
relay_repo_path(const uint8_t owner[PUBKEY_LEN], const char *d, char *out,
    size_t outlen)
{
	char npub[NIP19_KEY_BUFSZ];
	int  n;

	if (nip19_encode("npub", owner, npub, sizeof(npub)) == -1)
		return -1;
	n = snprintf(out, outlen, "%s/%s/%s.git", relayd->cfg.git_data_path,
	    npub, d);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int
relay_repo_exists(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	char	    path[PATH_MAX];
	struct stat sb;

	if (relay_repo_path(owner, d, path, sizeof(path)) == -1)
		return 0;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int
write_file(const char *dir, const char *name, const char *text)
{
	char   path[PATH_MAX];
	size_t len = strlen(text);
	int    fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -1;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
	    -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int
mkdir_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -1;
	return mkdir(path, 0755) == -1 && errno != EEXIST ? -1 : 0;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) == -1 && errno != ENOENT ? -1 : 0;
	return unlink(path) == -1 && errno != ENOENT ? -1 : 0;
}

/* Removes a directory tree (not following symlinks); 0 or -1. */
static int
rm_tree(const char *path)
{
	return nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS) == -1 &&
		errno != ENOENT ?
	    -1 :
	    0;
}

/* op(path) on the repository of (owner, d) once d is safe, else -1. */
static int
at_repo(const uint8_t owner[PUBKEY_LEN], const char *d, int (*op)(const char *))
{
	char path[PATH_MAX];

	if (!policy_identifier_safe(d, strlen(d)) ||
	    relay_repo_path(owner, d, path, sizeof(path)) == -1)
		return -1;
	return op(path);
}

int
relay_repo_create(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	return at_repo(owner, d, create_at);
}

/* Creates the bare repository at path (and its parent) if missing. */
static int
create_at(const char *path)
{
	static const char *const dirs[] = {
		"objects",
		"objects/info",
		"objects/pack",
		"refs",
		"refs/heads",
		"refs/tags",
		"info",
	};
	char	    parent[PATH_MAX], tmp[PATH_MAX];
	char	   *slash, c;
	struct stat sb;
	size_t	    i;

	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return 0;
	if (strncmp(path, relayd->cfg.git_data_path,
		strlen(relayd->cfg.git_data_path)) != 0)
		return -1;
	snprintf(parent, sizeof(parent), "%s", path);
	if ((slash = strrchr(parent, '/')) == NULL)
		return -1;
	*slash = '\0';
	if (mkdir(relayd->cfg.git_data_path, 0755) == -1 && errno != EEXIST)
		goto fail;
	/* Every directory below the git data path (prs/<hex>/ too). */
	for (slash = parent + strlen(relayd->cfg.git_data_path) + 1;; slash++) {
		if (*slash != '/' && *slash != '\0')
			continue;
		c = *slash;
		*slash = '\0';
		if (mkdir(parent, 0755) == -1 && errno != EEXIST)
			goto fail;
		if ((*slash = c) == '\0')
			break;
	}
	/* Built aside and renamed, so nobody sees half a repository. */
	if (snprintf(tmp, sizeof(tmp), "%s/.new-XXXXXX", parent) >=
		(int)sizeof(tmp) ||
	    mkdtemp(tmp) == NULL)
		goto fail;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir_in(tmp, dirs[i]) == -1)
			goto failtmp;
	if (write_file(tmp, "HEAD", repo_head) == -1 ||
	    write_file(tmp, "config", repo_config) == -1 ||
	    write_file(tmp, "description",
		"GRASP repository hosted by "
		"graspd\n") == -1)
		goto failtmp;
	if (rename(tmp, path) == -1) {
		if (errno == EEXIST || errno == ENOTEMPTY) {
			rm_tree(tmp);
			return 0;
		}
		goto failtmp;
	}
	log_debug("created repository %s", path);
	return 0;
failtmp:
	rm_tree(tmp);
fail:
	log_warn("cannot create repository %s", path);
	return -1;
}

int
relay_repo_remove(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	return at_repo(owner, d, remove_at);
}

/* Removes the repository at path; 0, or -1 after logging. */
static int
remove_at(const char *path)
{
	static unsigned serial;
	char		gone[PATH_MAX];
	char	       *slash;

	/* Renamed first, so a request never sees it half removed. */
	snprintf(gone, sizeof(gone), "%s", path);
	if ((slash = strrchr(gone, '/')) == NULL)
		return -1;
	if (snprintf(slash + 1, sizeof(gone) - (size_t)(slash + 1 - gone),
		".gone-%ld-%u", (long)getpid(),
		++serial) >= (int)(sizeof(gone) - (size_t)(slash + 1 - gone)))
		return -1;
	if (rename(path, gone) == -1) {
		if (errno == ENOENT)
			return 0;
		log_warn("cannot remove repository %s", path);
		return -1;
	}
	if (rm_tree(gone) == -1) {
		log_warn("cannot remove %s", gone);
		return -1;
	}
	log_debug("removed repository %s", path);
	return 0;
}

/* 1 if the pack index at path lists the 20-byte name, 0 if not. */
static int
idx_has(const char *path, const uint8_t name[20])
{
	struct stat	     sb;
	const unsigned char *m;
	const uint32_t	    *fan;
	size_t		     off, width, lo, hi, mid;
	uint32_t	     n, first;
	int		     fd, found = 0, c, v2;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (fstat(fd, &sb) == -1 || sb.st_size < 8 + 256 * 4) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	/* Version 2: "\377tOc", version, fanout, names; version 1: fanout,
	 * then (offset, name) entries. */
	v2 = memcmp(m, "\377tOc", 4) == 0;
	fan = (const uint32_t *)(m + (v2 ? 8 : 0));
	first = name[0] ? ntohl(fan[name[0] - 1]) : 0;
	n = ntohl(fan[name[0]]);
	off = (v2 ? 8 : 0) + 256 * 4;
	width = v2 ? 20 : 24;
	if (n < first ||
	    off + (size_t)ntohl(fan[255]) * width > (size_t)sb.st_size)
		goto done;
	lo = first;
	hi = n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(m + off + mid * width + (v2 ? 0 : 4), name, 20);
		if (c == 0) {
			found = 1;
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
done:
	munmap((void *)m, (size_t)sb.st_size);
	return found;
}

int
relay_repo_has_object(const char *repo, const char *oid)
{
	char	       path[PATH_MAX];
	uint8_t	       name[20];
	struct stat    sb;
	struct dirent *de;
	DIR	      *dir;
	size_t	       len;
	int	       found = 0;

	if (!pkt_is_oid(oid, strlen(oid)) ||
	    hex_decode(oid, GIT_OID_HEX, name, 20) == -1)
		return 0;
	if (snprintf(path, sizeof(path), "%s/objects/%.2s/%s", repo, oid,
		oid + 2) < (int)sizeof(path) &&
	    stat(path, &sb) == 0)
		return 1;
	if (snprintf(path, sizeof(path), "%s/objects/pack", repo) >=
		(int)sizeof(path) ||
	    (dir = opendir(path)) == NULL)
		return 0;
	while (!found && (de = readdir(dir)) != NULL) {
		len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".idx") != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/objects/pack/%s", repo,
			de->d_name) >= (int)sizeof(path))
			continue;
		found = idx_has(path, name);
	}
	closedir(dir);
	return found;
}

void
relay_refs_free(struct relay_refs *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->v[i].rf_name);
	free(r->v);
	free(r->head);
	memset(r, 0, sizeof(*r));
}

static struct relay_ref *
refs_find(const struct relay_refs *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].rf_name, name) == 0)
			return &r->v[i];
	return NULL;
}

const char *
relay_refs_get(const struct relay_refs *r, const char *name)
{
	struct relay_ref *f = refs_find(r, name);

	return f ? f->rf_oid : NULL;
}

static int
wanted(const char *name, const char *const *prefixes)
{
	size_t i;

	if (prefixes == NULL)
		return 1;
	for (i = 0; prefixes[i] != NULL; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

void
relay_refs_set(struct relay_refs *r, const char *name, const char *oid)
{
	struct relay_ref *f;

	if ((f = refs_find(r, name)) == NULL) {
		if ((r->v = reallocarray(r->v, r->n + 1, sizeof(*r->v))) ==
			NULL ||
		    (r->v[r->n].rf_name = strdup(name)) == NULL)
			fatal("relay_refs_set");
		f = &r->v[r->n++];
	}
	memcpy(f->rf_oid, oid, GIT_OID_HEX);
	f->rf_oid[GIT_OID_HEX] = '\0';
}

static void
read_packed(const char *repo, const char *const *prefixes, struct relay_refs *r)
{
	char	path[PATH_MAX], *line = NULL;
	size_t	cap = 0;
	ssize_t len;
	FILE   *f;

	if (snprintf(path, sizeof(path), "%s/packed-refs", repo) >=
		(int)sizeof(path) ||
	    (f = fopen(path, "re")) == NULL)
		return;
	while ((len = getline(&line, &cap, f)) != -1) {
		while (
		    len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		/* "# pack-refs with:" header, "^<oid>" peeled lines. */
		if (len < GIT_OID_HEX + 2 || line[0] == '#' || line[0] == '^' ||
		    line[GIT_OID_HEX] != ' ' || !pkt_is_oid(line, GIT_OID_HEX))
			continue;
		if (wanted(line + GIT_OID_HEX + 1, prefixes))
			relay_refs_set(r, line + GIT_OID_HEX + 1, line);
	}
	free(line);
	fclose(f);
}

static void
read_loose(const char *repo, const char *rel, int depth,
    const char *const *prefixes, struct relay_refs *r)
{
	char	       path[PATH_MAX], sub[PATH_MAX], buf[GIT_OID_HEX + 2];
	struct dirent *de;
	struct stat    sb;
	DIR	      *dir;
	ssize_t	       n;
	int	       fd;

	if (depth > REFS_MAX_DEPTH ||
	    snprintf(path, sizeof(path), "%s/%s", repo, rel) >=
		(int)sizeof(path) ||
	    (dir = opendir(path)) == NULL)
		return;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".lock"))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >=
			(int)sizeof(sub) ||
		    snprintf(path, sizeof(path), "%s/%s", repo, sub) >=
			(int)sizeof(path) ||
		    lstat(path, &sb) == -1)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			read_loose(repo, sub, depth + 1, prefixes, r);
			continue;
		}
		if (!S_ISREG(sb.st_mode) || !wanted(sub, prefixes))
			continue;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n >= GIT_OID_HEX && pkt_is_oid(buf, GIT_OID_HEX))
			relay_refs_set(r, sub, buf);
	}
	closedir(dir);
}

int
relay_repo_read_refs(const char *repo, const char *const *prefixes,
    struct relay_refs *r)
{
	char	path[PATH_MAX], buf[512];
	ssize_t n;
	int	fd;

	memset(r, 0, sizeof(*r));
	if (snprintf(path, sizeof(path), "%s/HEAD", repo) >=
		(int)sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 5 && strncmp(buf, "ref: ", 5) == 0) {
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		if ((r->head = strdup(buf + 5)) == NULL)
			fatal("strdup");
	}
	read_packed(repo, prefixes, r);
	read_loose(repo, "refs", 0, prefixes, r);
	return 0;
}

int
relay_repo_has_refs(const char *repo)
{
	static const char *const prefixes[] = { "refs/heads/", "refs/tags/",
		NULL };
	struct relay_refs	 r;
	int			 has;

	if (relay_repo_read_refs(repo, prefixes, &r) == -1)
		return 0;
	has = r.n > 0;
	relay_refs_free(&r);
	return has;
}

/* GRASP-06: contributors' repositories under prs/. */

int
relay_repo_prs_path(const uint8_t signer[PUBKEY_LEN], const char *d, char *out,
    size_t outlen)
{
	char hex[PUBKEY_HEX_LEN + 1];
	int  n;

	if (!policy_identifier_safe(d, strlen(d)))
		return -1;
	hex_encode(signer, PUBKEY_LEN, hex);
	n = snprintf(out, outlen, "%s/%s/%s/%s.git", relayd->cfg.git_data_path,
	    RELAY_PRS_DIR, hex, d);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int
relay_repo_prs_create(const uint8_t signer[PUBKEY_LEN], const char *d)
{
	char path[PATH_MAX];

	if (relay_repo_prs_path(signer, d, path, sizeof(path)) == -1)
		return -1;
	return create_at(path);
}

/* 1 if the repository at path holds no ref at all, else 0. */
static int
refless(const char *path)
{
	struct relay_refs r;
	int		  none;

	if (relay_repo_read_refs(path, NULL, &r) == -1)
		return 0;
	none = r.n == 0;
	relay_refs_free(&r);
	return none;
}

int
relay_repo_prs_prune(const char *path)
{
	char parent[PATH_MAX], *slash;

	if (!refless(path))
		return 0;
	if (remove_at(path) == -1)
		return -1;
	log_info("removed %s: no refs left", path);
	/* The signer's directory goes with its last repository. */
	snprintf(parent, sizeof(parent), "%s", path);
	if ((slash = strrchr(parent, '/')) != NULL) {
		*slash = '\0';
		(void)rmdir(parent);
	}
	return 1;
}

/* What a usage walk has summed, and the sum past which it stops. */
static uint64_t usage_sum, usage_stop = UINT64_MAX;

static int
usage_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		usage_sum += (uint64_t)sb->st_size;
	return usage_sum > usage_stop ? FTW_STOP : FTW_CONTINUE;
}

uint64_t
relay_repo_prs_usage(const uint8_t signer[PUBKEY_LEN])
{
	char dir[PATH_MAX], hex[PUBKEY_HEX_LEN + 1];

	hex_encode(signer, PUBKEY_LEN, hex);
	if (snprintf(dir, sizeof(dir), "%s/%s/%s", relayd->cfg.git_data_path,
		RELAY_PRS_DIR, hex) >= (int)sizeof(dir))
		return UINT64_MAX;
	usage_sum = 0;
	if (nftw(dir, usage_entry, 32, FTW_PHYS | FTW_ACTIONRETVAL) == -1 &&
	    errno != ENOENT)
		return UINT64_MAX;
	return usage_sum;
}

/*
 * The repository's size is walked at each push rather than kept: git's
 * own housekeeping (receive-pack runs "gc --auto", which packs loose
 * objects past gc.auto, 6700, and packs past gc.autoPackLimit, 50)
 * bounds the files under objects/ to a few thousand, a walk of a few
 * milliseconds once per push, and a walk sees every writer (pushes, the
 * jobs' fetches, an operator's gc) with nothing to invalidate.  It stops
 * once past the limit.
 */
uint64_t
relay_repo_push_room(const char *repo, enum push_limit *which, char *why,
    size_t whylen, uint64_t *repo_room)
{
	uint64_t push = (uint64_t)relayd->cfg.max_push_bytes;
	uint64_t cap = (uint64_t)relayd->cfg.max_repo_bytes;
	uint64_t room = UINT64_MAX;
	char	 dir[PATH_MAX];

	*which = PUSH_LIMIT_PUSH;
	*repo_room = UINT64_MAX;
	why[0] = '\0';
	if (push > 0) {
		room = push;
		snprintf(why, whylen, "a push may send at most %llu bytes here",
		    (unsigned long long)push);
	}
	if (cap == 0 ||
	    snprintf(dir, sizeof(dir), "%s/objects", repo) >= (int)sizeof(dir))
		return room;
	usage_sum = 0;
	usage_stop = cap;
	if (nftw(dir, usage_entry, 32, FTW_PHYS | FTW_ACTIONRETVAL) == -1 &&
	    errno != ENOENT)
		log_warn("%s", dir);
	usage_stop = UINT64_MAX;
	*repo_room = usage_sum >= cap ? 0 : cap - usage_sum;
	if (usage_sum >= cap) {
		*which = PUSH_LIMIT_REPO;
		snprintf(why, whylen,
		    "the repository is full: it holds %s%llu bytes, and %llu is the most here",
		    usage_sum > cap ? "over " : "", (unsigned long long)cap,
		    (unsigned long long)cap);
		return 0;
	}
	if (cap - usage_sum < room) {
		room = cap - usage_sum;
		*which = PUSH_LIMIT_REPO;
		snprintf(why, whylen,
		    "the repository would pass %llu bytes (%llu used)",
		    (unsigned long long)cap, (unsigned long long)usage_sum);
	}
	return room;
}

int
relay_repo_count(const uint8_t owner[PUBKEY_LEN])
{
	char	       npub[NIP19_KEY_BUFSZ], dir[PATH_MAX];
	DIR	      *dp;
	struct dirent *e;
	size_t	       len;
	int	       n = 0;

	if (nip19_encode("npub", owner, npub, sizeof(npub)) == -1 ||
	    snprintf(dir, sizeof(dir), "%s/%s", relayd->cfg.git_data_path,
		npub) >= (int)sizeof(dir))
		return -1;
	if ((dp = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	/* Not the ".new-" and ".gone-" of a creation or removal. */
	while ((e = readdir(dp)) != NULL) {
		len = strlen(e->d_name);
		if (e->d_name[0] != '.' && len > 4 &&
		    strcmp(e->d_name + len - 4, ".git") == 0)
			n++;
	}
	closedir(dp);
	return n;
}

void
relay_repo_drop_incoming(const char *repo)
{
	char	       dir[PATH_MAX], sub[PATH_MAX];
	DIR	      *d;
	struct dirent *e;

	if (snprintf(dir, sizeof(dir), "%s/objects", repo) >=
		(int)sizeof(dir) ||
	    (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "tmp_objdir-incoming-", 20) == 0 &&
		    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) <
			(int)sizeof(sub) &&
		    rm_tree(sub) == -1)
			log_warn("cannot remove %s", sub);
	closedir(d);
}

const char *
relay_repo_prs_empty(void)
{
	static char path[PATH_MAX];

	if (path[0] == '\0')
		snprintf(path, sizeof(path), "%s/%s/.empty.git",
		    relayd->cfg.git_data_path, RELAY_PRS_DIR);
	return path;
}

/*
 * At start: the empty repository fetches of missing ones are served from,
 * and no repository left without refs (a crash mid-push, a push that
 * ended with none).
 */
static void
prs_init(void)
{
	char	       dir[PATH_MAX], sub[PATH_MAX], repo[PATH_MAX];
	DIR	      *top, *in;
	struct dirent *e, *f;
	int	       removed = 0;

	if (create_at(relay_repo_prs_empty()) == -1)
		fatal("cannot create %s", relay_repo_prs_empty());
	snprintf(dir, sizeof(dir), "%s/%s", relayd->cfg.git_data_path,
	    RELAY_PRS_DIR);
	if ((top = opendir(dir)) == NULL)
		fatal("cannot read %s", dir);
	while ((e = readdir(top)) != NULL) {
		if (e->d_name[0] == '.' ||
		    strlen(e->d_name) != PUBKEY_HEX_LEN ||
		    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >=
			(int)sizeof(sub) ||
		    (in = opendir(sub)) == NULL)
			continue;
		while ((f = readdir(in)) != NULL) {
			size_t len = strlen(f->d_name);

			if (f->d_name[0] == '.' || len <= 4 ||
			    strcmp(f->d_name + len - 4, ".git") != 0 ||
			    snprintf(repo, sizeof(repo), "%s/%s", sub,
				f->d_name) >= (int)sizeof(repo))
				continue;
			if (refless(repo) && remove_at(repo) == 0)
				removed++;
		}
		closedir(in);
		(void)rmdir(sub);
	}
	closedir(top);
	if (removed > 0)
		log_info("removed %d repositories without refs under %s",
		    removed, dir);
}

/* Children (common/child.c keeps the table). */

/*
 * With durability full (graspd.conf(5)), every git command relayd runs
 * syncs what it commits: objects (loose ones too: a small push is
 * unpacked) and pack indexes before the refs that name them, and the
 * refs, before it reports; git >= 2.36 (Debian 12 has 2.39) reads them
 * from the environment (git-config(1), GIT_CONFIG_COUNT) as from -c.
 * Git's default syncs packs only.  In the environment rather than each
 * repository's config: it covers the repositories that exist already,
 * and the setting follows durability back and forth.
 */
static const char *const git_fsync_env[] = {
	"GIT_CONFIG_COUNT=2",
	"GIT_CONFIG_KEY_0=core.fsync",
	"GIT_CONFIG_VALUE_0=objects,derived-metadata,reference",
	"GIT_CONFIG_KEY_1=core.fsyncMethod",
	"GIT_CONFIG_VALUE_1=fsync",
	NULL,
};

/* relayd's environment without GIT_*, then git_fsync_env, then env. */
static char **
child_env(const char *const *env)
{
	const char *const *fs = relayd->cfg.durability == CFG_DURABILITY_FULL ?
	    git_fsync_env :
	    NULL;
	char		 **e;
	size_t		   n = 0, k = 0, i;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	for (i = 0; env != NULL && env[i] != NULL; i++)
		n++;
	for (i = 0; fs != NULL && fs[i] != NULL; i++)
		n++;
	if ((e = calloc(n + 1, sizeof(*e))) == NULL)
		fatal("child_env");
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "GIT_", 4) != 0)
			e[k++] = environ[i];
	for (i = 0; fs != NULL && fs[i] != NULL; i++)
		e[k++] = (char *)fs[i];
	for (i = 0; env != NULL && env[i] != NULL; i++)
		e[k++] = (char *)env[i];
	e[k] = NULL;
	return e;
}

pid_t
relay_child_spawn(char *const argv[], int fd_in, int fd_out,
    const char *const *env, int timeout_s, child_done_cb *cb, void *arg)
{
	char **envp;
	pid_t  pid;

	/* git's output pipes, or /dev/null; its stderr is relayd's log. */
	envp = child_env(env);
	pid = child_start(argv, fd_in, fd_out, CHILD_INHERIT, envp,
	    (int64_t)timeout_s * 1000, "git", cb, arg);
	free(envp);
	if (pid == -1)
		log_warn("cannot run %s", argv[0]);
	return pid;
}

int
relay_repo_prs_drop_ref(const uint8_t signer[PUBKEY_LEN], const char *d,
    const char *ref, const char *oid)
{
	struct relay_refs r;
	const char	 *cur;
	char		  repo[PATH_MAX], path[PATH_MAX];
	int		  rc = 0;

	if (relay_repo_prs_path(signer, d, repo, sizeof(repo)) == -1 ||
	    relay_repo_read_refs(repo, NULL, &r) == -1)
		return 0;
	/* Loose, as receive-pack wrote it (nothing here packs refs). */
	if ((cur = relay_refs_get(&r, ref)) != NULL && strcmp(cur, oid) == 0 &&
	    snprintf(path, sizeof(path), "%s/%s", repo, ref) <
		(int)sizeof(path) &&
	    unlink(path) == 0) {
		log_info("dropped %s from %s: not the PR event's commit", ref,
		    repo);
		rc = 1;
		relay_repo_prs_prune(repo);
	}
	relay_refs_free(&r);
	return rc;
}

void
relay_repo_init(void)
{
	/* relayd.c has made the git data directory and its parents. */
	if (relayd->cfg.grasp06_enable)
		prs_init();
}

void
relay_children_init(void)
{
	child_init(relayd->ctx, CHILD_CHECK_MS);
}
