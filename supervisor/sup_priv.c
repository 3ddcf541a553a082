/*
 * sup_priv.c: graspd's privilege drop (graspd(8), PRIVILEGES).  Started
 * as root, the supervisor stays root, with no network input, so that it
 * can start relayd again on a privileged port; every role is exec'ed as
 * the user of the configuration (NGIT_USER, default graspd), with umask
 * 077, so that its sockets and files are that user's alone.  relayd keeps
 * CAP_NET_BIND_SERVICE (an ambient capability) when its port is below
 * 1024 and nothing else.  Before the first role the run directory
 * becomes the user's with mode 0700, and the data directories the
 * user's, through descriptors opened without following links; then a
 * child running as the user checks that the data paths and the git
 * tree's repositories are theirs to use.  Root trusts nothing the user
 * can write: graspd's own socket in the run directory is bound with the
 * user's file-system ids (sup_priv_bind_begin()), never chown'ed by
 * name.  Not started as root, or with the user root, nothing changes.
 */
#define _GNU_SOURCE
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"
#include "supervisor.h"

/* The default of NGIT_USER (graspd.conf(5)). */
#define PRIV_DEFAULT_USER "graspd"
/* The files of relay_data_path the user must own (relayd writes them). */
static const char *const priv_owned[] = { "graspd.db", "graspd.db-wal",
	"graspd.db-shm", ".relay-owner.nsec" };
/*
 * Ours: the start-up check of the git tree looks at this many paths at
 * most (about a second on a cold disk), enough for every repository's
 * directories, objects fan-out included, of a few hundred repositories.
 */
#define PRIV_SCAN_MAX	100000
/* Ours: <npub>/<d>.git is at level 2, prs/<hex>/<d>.git at level 3. */
#define PRIV_SCAN_DEPTH 3
/* Ours: the umask of a socket graspd binds, without and with a drop. */
#define PRIV_UMASK_SOCK 0117
#define PRIV_UMASK_USER 0177

static int   priv_drop; /* roles run as priv_uid */
static uid_t priv_uid;
static gid_t priv_gid;
static char  priv_home[PATH_MAX + 8]; /* "HOME=..." */

/* "uid 0 (root)" for messages. */
static void
owner_name(uid_t uid, char *out, size_t outlen)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		snprintf(out, outlen, "uid %u (%s)", (unsigned)uid,
		    pw->pw_name);
	else
		snprintf(out, outlen, "uid %u", (unsigned)uid);
}

/*
 * Makes dir (created if missing) the user's; mode 0700 if private.  The
 * owner and mode are set on a descriptor opened without following a
 * link, so that a link planted where the user (or a role) can write
 * never leads root's fchown to another directory.  A symbolic link put
 * there by the operator is followed only to check: what it names must be
 * the user's already (and 0700 if private), graspd changes nothing.
 */
static int
own_dir(const char *key, const char *dir, int private, char *err, size_t errlen)
{
	struct stat st;
	char	    who[96], real[PATH_MAX];
	int	    fd, rc = -1;

	if (mkdir_p(dir, 0755) == -1) {
		snprintf(err, errlen, "%s %s: %s", key, dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* Linux: ENOTDIR for a link with O_DIRECTORY, else ELOOP. */
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR) &&
	    lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
		if (stat(dir, &st) == -1) {
			snprintf(err, errlen, "%s %s: %s", key, dir,
			    strerror(errno));
			return -1;
		}
		if (st.st_uid == priv_uid &&
		    (!private || (st.st_mode & 07777) == 0700))
			return 0;
		owner_name(st.st_uid, who, sizeof(who));
		/* chown -R does not follow a link named on its line. */
		if (realpath(dir, real) == NULL)
			snprintf(real, sizeof(real), "%s", dir);
		snprintf(err, errlen,
		    "%s %s is a symbolic link to %s, a directory of %s, mode %04o, that graspd does not change: run chown %s%s: %s%s%s",
		    key, dir, real, who, (unsigned)(st.st_mode & 07777),
		    private ? "" : "-R ", sv->sv_cfg.user, real,
		    private ? " && chmod 0700 " : "", private ? real : "");
		return -1;
	}
	if (fd == -1 || fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s %s: %s", key, dir, strerror(errno));
		goto done;
	}
	if ((st.st_uid != priv_uid || st.st_gid != priv_gid) &&
	    fchown(fd, priv_uid, priv_gid) == -1) {
		snprintf(err, errlen, "chown %s: %s", dir, strerror(errno));
		goto done;
	}
	if (private && (st.st_mode & 07777) != 0700 && fchmod(fd, 0700) == -1) {
		snprintf(err, errlen, "chmod %s: %s", dir, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (fd != -1)
		close(fd);
	return rc;
}

/*
 * The scan of the data paths (sup_priv_init()) runs in a child with the
 * roles' user's ids, so that access(2) answers for that user exactly
 * (owner, group, mode, ACLs, a read-only mount, every directory above);
 * it writes one line to the parent per problem (it stops at the first):
 * "reach<TAB>errno<TAB>git<TAB>path" when path, a directory above or
 * inside the data path, cannot be searched, "use<TAB>errno<TAB>git<TAB>
 * path" when path cannot be read and written (git: 0 while checking
 * relay_data_path, 1 git_data_path), and "capped<TAB>0<TAB>1<TAB>" when
 * it stopped at PRIV_SCAN_MAX.
 */
struct scan {
	int  sc_fd;	/* the pipe to the parent */
	int  sc_git;	/* 0: relay_data_path, 1: git_data_path */
	long sc_n;	/* paths checked */
	int  sc_capped; /* stopped at PRIV_SCAN_MAX */
};

/* Reports path's problem e; always -1. */
static int
scan_fail(struct scan *sc, const char *path, int e)
{
	char   prefix[PATH_MAX];
	size_t i;

	if (e == EACCES) {
		/* The first directory on the way that the user cannot search. */
		for (i = 1; path[i] != '\0' && i < sizeof(prefix); i++) {
			if (path[i] != '/')
				continue;
			memcpy(prefix, path, i);
			prefix[i] = '\0';
			if (access(prefix, X_OK) == -1) {
				dprintf(sc->sc_fd, "reach\t%d\t%d\t%s\n", errno,
				    sc->sc_git, prefix);
				return -1;
			}
		}
	}
	dprintf(sc->sc_fd, "use\t%d\t%d\t%s\n", e, sc->sc_git, path);
	return -1;
}

/* path (a directory when dir) usable by the user, or missing: 0 or -1. */
static int
scan_check(struct scan *sc, const char *path, int dir)
{
	if (sc->sc_n >= PRIV_SCAN_MAX) {
		sc->sc_capped = 1;
		return 0;
	}
	sc->sc_n++;
	if (access(path, dir ? R_OK | W_OK | X_OK : R_OK | W_OK) == 0 ||
	    errno == ENOENT)
		return 0;
	return scan_fail(sc, path, errno);
}

/* 1 if dir/name is a directory (not a link to one); path gets it. */
static int
scan_subdir(const char *dir, const char *name, char *path, size_t len)
{
	struct stat st;

	if ((size_t)snprintf(path, len, "%s/%s", dir, name) >= len)
		return 0;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A bare repository: itself, objects (its fan-out too) and refs. */
static int
scan_repo(struct scan *sc, const char *repo)
{
	static const char *const sub[] = { "refs", "refs/heads", "refs/tags",
		"objects/pack", "objects/info" };
	struct dirent		*e;
	char			 objects[PATH_MAX], path[PATH_MAX];
	size_t			 i;
	DIR			*d;
	int			 rc = 0;

	if (scan_check(sc, repo, 1) == -1)
		return -1;
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		if (scan_subdir(repo, sub[i], path, sizeof(path)) &&
		    scan_check(sc, path, 1) == -1)
			return -1;
	if (!scan_subdir(repo, "objects", objects, sizeof(objects)))
		return 0;
	if (scan_check(sc, objects, 1) == -1)
		return -1;
	if ((d = opendir(objects)) == NULL)
		return scan_fail(sc, objects, errno);
	while (rc == 0 && !sc->sc_capped && (e = readdir(d)) != NULL)
		if (strlen(e->d_name) == 2 && e->d_name[0] != '.' &&
		    scan_subdir(objects, e->d_name, path, sizeof(path)))
			rc = scan_check(sc, path, 1);
	closedir(d);
	return rc;
}

/*
 * The directories of the git tree down to its repositories: <npub>/<d>.git
 * and prs/<hex>/<d>.git, at most PRIV_SCAN_DEPTH levels.
 */
static int
scan_git(struct scan *sc, const char *dir, int depth)
{
	struct dirent *e;
	char	       path[PATH_MAX];
	size_t	       len;
	DIR	      *d;
	int	       rc = 0;

	if ((d = opendir(dir)) == NULL)
		return scan_fail(sc, dir, errno);
	while (rc == 0 && !sc->sc_capped && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' ||
		    !scan_subdir(dir, e->d_name, path, sizeof(path)))
			continue;
		len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".git") == 0)
			rc = scan_repo(sc, path);
		else if ((rc = scan_check(sc, path, 1)) == 0 &&
		    depth < PRIV_SCAN_DEPTH)
			rc = scan_git(sc, path, depth + 1);
	}
	closedir(d);
	return rc;
}

/* In the child, as the user: the whole scan.  Its exit status. */
static int
scan_run(int fd)
{
	struct scan sc = { fd, 0, 0, 0 };
	char	    path[PATH_MAX];
	size_t	    i;

	if (scan_check(&sc, sv->sv_cfg.relay_data_path, 1) == -1)
		return 1;
	for (i = 0; i < sizeof(priv_owned) / sizeof(priv_owned[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s",
		    sv->sv_cfg.relay_data_path, priv_owned[i]);
		if (scan_check(&sc, path, 0) == -1)
			return 1;
	}
	sc.sc_git = 1;
	if (scan_check(&sc, sv->sv_cfg.git_data_path, 1) == -1 ||
	    scan_git(&sc, sv->sv_cfg.git_data_path, 1) == -1)
		return 1;
	if (sc.sc_capped)
		dprintf(fd, "capped\t0\t1\t\n");
	return 0;
}

/*
 * The message for the scan's report line: what is wrong, whose it is and
 * the command that mends it.  -1 with err set, or 0 (nothing wrong).
 */
static int
scan_verdict(char *line, char *err, size_t errlen)
{
	const char *user = sv->sv_cfg.user, *key, *root, *path;
	struct stat st;
	char	   *tab, who[96], real[PATH_MAX];
	size_t	    rl;
	int	    e, git, inside;

	if ((tab = strchr(line, '\t')) == NULL)
		return 0;
	*tab++ = '\0';
	e = atoi(tab);
	if ((tab = strchr(tab, '\t')) == NULL)
		return 0;
	git = atoi(tab + 1);
	if ((tab = strchr(tab + 1, '\t')) == NULL)
		return 0;
	path = tab + 1;
	if (strcmp(line, "capped") == 0) {
		log_info("checked the first %d paths of %s for %s",
		    PRIV_SCAN_MAX, sv->sv_cfg.git_data_path, user);
		return 0;
	}
	key = git ? "git_data_path" : "relay_data_path";
	root = git ? sv->sv_cfg.git_data_path : sv->sv_cfg.relay_data_path;
	rl = strlen(root);
	inside = strncmp(path, root, rl) == 0 &&
	    (path[rl] == '\0' || path[rl] == '/');
	if (e == EROFS) {
		snprintf(err, errlen,
		    "%s %s: %s is on a read-only file system: the roles (user %s) must write there",
		    key, root, path, user);
		return -1;
	}
	if (e != EACCES && e != EPERM) {
		snprintf(err, errlen, "%s %s: %s: %s (as user %s)", key, root,
		    path, strerror(e), user);
		return -1;
	}
	if (stat(path, &st) == -1)
		memset(&st, 0, sizeof(st));
	owner_name(st.st_uid, who, sizeof(who));
	if (!inside) {
		snprintf(err, errlen,
		    "%s %s: the roles' user %s cannot reach it: %s belongs to %s, mode %04o, and %s may not search it: run chmod o+x %s, or move %s",
		    key, root, user, path, who, (unsigned)(st.st_mode & 07777),
		    user, path, key);
		return -1;
	}
	/* chown -R does not follow a link named on its line. */
	if (realpath(root, real) == NULL)
		snprintf(real, sizeof(real), "%s", root);
	snprintf(err, errlen,
	    "%s %s: %s belongs to %s, mode %04o, and the roles' user %s cannot %s it: run chown -R %s: %s",
	    key, root, path, who, (unsigned)(st.st_mode & 07777), user,
	    strcmp(line, "reach") == 0 ? "search" : "write", user, real);
	return -1;
}

/*
 * Checks, in a child running as the roles' user, that the data paths and
 * the git tree's repositories are theirs to use (scan_run()).  0, or -1
 * with the problem and its mend in err.
 */
static int
priv_scan(char *err, size_t errlen)
{
	char	line[PATH_MAX + 64];
	size_t	len = 0;
	ssize_t n;
	pid_t	pid;
	int	p[2], st, rc = 0;

	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		if (setgroups(1, &priv_gid) == -1 ||
		    setresgid(priv_gid, priv_gid, priv_gid) == -1 ||
		    setresuid(priv_uid, priv_uid, priv_uid) == -1) {
			dprintf(p[1], "use\t%d\t0\tsetresuid\n", errno);
			_exit(1);
		}
		_exit(scan_run(p[1]));
	}
	close(p[1]);
	while (len < sizeof(line) - 1) {
		n = read(p[0], line + len, sizeof(line) - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	line[len] = '\0';
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	line[strcspn(line, "\n")] = '\0';
	if (line[0] != '\0')
		rc = scan_verdict(line, err, errlen);
	if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
		snprintf(err, errlen,
		    "the check of the data paths as %s failed",
		    sv->sv_cfg.user);
		rc = -1;
	}
	return rc;
}

int
sup_priv_init(char *err, size_t errlen)
{
	const char    *user = sv->sv_cfg.user;
	struct passwd *pw;
	struct stat    st;
	char	       path[PATH_MAX], who[96];
	size_t	       i;

	if (geteuid() != 0 || user == NULL || *user == '\0')
		return 0;
	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		if (strcmp(user, PRIV_DEFAULT_USER) == 0) {
			log_warnx(
			    "user %s does not exist: every role runs as root (create it, or set NGIT_USER=root)",
			    user);
			return 0;
		}
		snprintf(err, errlen, "NGIT_USER: no user \"%s\"", user);
		return -1;
	}
	if (pw->pw_uid == 0)
		return 0;
	priv_uid = pw->pw_uid;
	priv_gid = pw->pw_gid;
	snprintf(priv_home, sizeof(priv_home), "HOME=%s", pw->pw_dir);
	if (own_dir("run_path", sv->sv_cfg.run_path, 1, err, errlen) == -1 ||
	    own_dir("relay_data_path", sv->sv_cfg.relay_data_path, 0, err,
		errlen) == -1 ||
	    own_dir("git_data_path", sv->sv_cfg.git_data_path, 0, err,
		errlen) == -1)
		return -1;
	/* Files of an earlier run as root: say so rather than fail later. */
	for (i = 0; i < sizeof(priv_owned) / sizeof(priv_owned[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s",
		    sv->sv_cfg.relay_data_path, priv_owned[i]);
		if (stat(path, &st) == 0 && st.st_uid != priv_uid) {
			owner_name(st.st_uid, who, sizeof(who));
			snprintf(err, errlen,
			    "relay_data_path %s: %s belongs to %s, not to %s: run chown -R %s: %s %s",
			    sv->sv_cfg.relay_data_path, path, who, user, user,
			    sv->sv_cfg.relay_data_path,
			    sv->sv_cfg.git_data_path);
			return -1;
		}
	}
	if (priv_scan(err, errlen) == -1)
		return -1;
	priv_drop = 1;
	log_info("roles run as %s (uid %u, gid %u)", user, (unsigned)priv_uid,
	    (unsigned)priv_gid);
	return 0;
}

mode_t
sup_priv_bind_begin(void)
{
	mode_t old = umask(priv_drop ? PRIV_UMASK_USER : PRIV_UMASK_SOCK);

	if (priv_drop) {
		setfsgid(priv_gid);
		setfsuid(priv_uid);
	}
	return old;
}

void
sup_priv_bind_end(mode_t old)
{
	if (priv_drop) {
		setfsuid(0);
		setfsgid(0);
	}
	umask(old);
}

uid_t
sup_priv_uid(void)
{
	return priv_drop ? priv_uid : geteuid();
}

const char *
sup_priv_home(void)
{
	return priv_drop ? priv_home : NULL;
}

int
sup_priv_child(int bind_cap)
{
	struct __user_cap_header_struct hdr;
	struct __user_cap_data_struct	data[2];
	gid_t				gid = priv_gid;

	if (!priv_drop)
		return 0;
	umask(077);
	/* Raw system calls: this runs in a forked copy before exec. */
	if (bind_cap && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1)
		return -1;
	if (syscall(SYS_setgroups, 1, &gid) == -1 ||
	    syscall(SYS_setresgid, gid, gid, gid) == -1 ||
	    syscall(SYS_setresuid, priv_uid, priv_uid, priv_uid) == -1)
		return -1;
	if (!bind_cap)
		return 0;
	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	data[0].effective = data[0].permitted = data[0].inheritable = 1u
	    << CAP_NET_BIND_SERVICE;
	if (syscall(SYS_capset, &hdr, data) == -1 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0,
		0) == -1)
		return -1;
	return prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
}
