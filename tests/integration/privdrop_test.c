/*
 * privdrop_test.c: graspd started as root runs every role as NGIT_USER
 * (graspd(8), PRIVILEGES).  The roles' real and effective uids are the
 * user's, graspd's is root's; the run directory is the user's with mode
 * 0700 and its sockets have no group or other permission, so that
 * another user cannot connect to a control socket while the user can;
 * relayd still stores events and creates repositories.
 *
 * The user owns the run directory and the data, and root must not trust
 * what they put there (issue 39): a link planted as graspd.pid, or
 * swapped in for the control socket while graspd binds it, leaves its
 * root-owned target as it was; graspctl backup, run as root while the
 * user swaps git files for links to a root-only file, never copies that
 * file; a git tree or a relay data path the user cannot use stops graspd
 * at once with exit 78, the owner and the chown to run.  Needs root: it
 * creates the user (useradd) if missing and removes it again.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

/* The user the test's graspd drops to. */
#define TEST_USER	  "graspd-t"
/* Anyone else: the user a stranger's connection runs as. */
#define OTHER_USER	  "nobody"
/* What a root-only file of the attacks holds. */
#define SECRET		  "root-only: never copied, never changed"
/* Starts of graspd while the user races for its control socket. */
#define SOCK_RACE_TRIES	  8
/* Backups taken while the user swaps files for links. */
#define BACKUP_RACE_TRIES 30
/* Slows graspd down in the socket race, when it exists. */
#define STRACE		  "/usr/bin/strace"
/* Files of the git tree the user swaps. */
#define BACKUP_RACE_FILES 300

static int created_user;

/* The real and effective uid of pid from /proc, or -1. */
static int
proc_uids(long pid, long *ruid, long *euid)
{
	char v[128];

	if (relayproc_proc_status(pid, "Uid", v, sizeof(v)) == -1 ||
	    sscanf(v, "%ld %ld", ruid, euid) != 2)
		return -1;
	return 0;
}

/*
 * Connects to the unix socket path from a child running as uid/gid.
 * Returns 0 if it connected, the child's errno (EACCES, ...) if not, -1
 * if the child could not run.
 */
static int
connect_as(const char *path, uid_t uid, gid_t gid)
{
	struct sockaddr_un sun;
	pid_t		   pid;
	int		   st, fd;

	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) == -1 || setgid(gid) == -1 ||
		    setuid(uid) == -1)
			_exit(255);
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
		if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
			_exit(254);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
			_exit(errno > 0 && errno < 250 ? errno : 253);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) == -1 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) >= 250)
		return -1;
	return WEXITSTATUS(st);
}

static void
test_roles_run_as_the_user(void)
{
	const char    *env[] = { "NGIT_USER=" TEST_USER, NULL };
	struct gdproc *g = NULL;
	struct passwd *pw, *other;
	struct event  *e = NULL;
	struct buf     t = BUF_INIT;
	struct stat    st;
	struct dirent *de;
	DIR	      *d = NULL;
	char	       states[GD_NROLES][16], run[600], path[900];
	char	       url[512], domain[64];
	long	       pids[GD_NROLES], ruid, euid;
	uint8_t	       sk[SECKEY_LEN], pk[PUBKEY_LEN];
	uid_t	       uid;
	gid_t	       gid;
	int	       i, nsock = 0;

	T_ASSERT((pw = getpwnam(TEST_USER)) != NULL);
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	T_ASSERT((other = getpwnam(OTHER_USER)) != NULL);
	T_ASSERT((g = gd_start(env)) != NULL);

	T_ASSERT(proc_uids(gd_pid(g), &ruid, &euid) == 0);
	T_EQ_INT(euid, 0);
	T_ASSERT(gd_roles_now(g, states, pids) == 0);
	for (i = 0; i < GD_NROLES; i++) {
		T_CHECK(strcmp(states[i], "running") == 0);
		if (pids[i] <= 0 || proc_uids(pids[i], &ruid, &euid) == -1) {
			printf("# %s: no process\n", gd_roles[i]);
			T_CHECK(!"role process found");
			continue;
		}
		if (ruid != (long)uid || euid != (long)uid)
			printf("# %s runs as uid %ld/%ld, not %u\n",
			    gd_roles[i], ruid, euid, (unsigned)uid);
		T_CHECK(ruid == (long)uid && euid == (long)uid);
	}

	snprintf(run, sizeof(run), "%s/run", gd_dir(g));
	T_ASSERT(stat(run, &st) == 0);
	T_CHECK(st.st_uid == uid && (st.st_mode & 07777) == 0700);
	T_ASSERT((d = opendir(run)) != NULL);
	while ((de = readdir(d)) != NULL) {
		if (strstr(de->d_name, ".ipc") == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", run, de->d_name);
		if (stat(path, &st) == -1 || !S_ISSOCK(st.st_mode))
			continue;
		nsock++;
		if (st.st_uid != uid || (st.st_mode & 077) != 0)
			printf("# %s: uid %u mode %o\n", de->d_name,
			    (unsigned)st.st_uid, st.st_mode & 07777);
		T_CHECK(st.st_uid == uid && (st.st_mode & 077) == 0);
	}
	closedir(d);
	/* graspd's and the four roles' control sockets, and channels. */
	T_CHECK(nsock >= 5);

	/* The user reaches every control socket, a stranger none. */
	for (i = -1; i < GD_NROLES; i++) {
		snprintf(path, sizeof(path), "%s/control-%s.ipc", run,
		    i < 0 ? "graspd" : gd_roles[i]);
		T_CHECK(connect_as(path, uid, gid) == 0);
		T_CHECK(
		    connect_as(path, other->pw_uid, other->pw_gid) == EACCES);
	}

	/* relayd writes as the user: an event, a new bare repository. */
	T_CHECK(gd_publish(g,
		    e = event_new_signed((uint8_t[SECKEY_LEN]){ 7 }, time(NULL),
			10317, "[[\"g\",\"wss://example.org\"]]", "")) == 0);
	event_destroy(e);
	memset(sk, 0x3c, sizeof(sk));
	event_pubkey_of(sk, pk);
	snprintf(domain, sizeof(domain), "127.0.0.1:%d", gd_port(g));
	gt_url(url, sizeof(url), domain, pk, "dropped");
	buf_printf(&t,
	    "[[\"d\",\"dropped\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"ws://%s\"]]",
	    url, domain);
	T_ASSERT((e = event_new_signed(sk, time(NULL), 30617, t.b_data, "")) !=
	    NULL);
	T_CHECK(gd_publish(g, e) == 0);
	event_destroy(e);
	snprintf(path, sizeof(path), "%s/relay/graspd.db", gd_dir(g));
	T_CHECK(stat(path, &st) == 0 && st.st_uid == uid &&
	    (st.st_mode & 077) == 0);
	buf_free(&t);
	gd_free(g);
}

/* A free loopback port below 1024, or -1. */
static int
low_port(void)
{
	struct sockaddr_in sin;
	int		   fd, port;

	for (port = 990; port > 700; port--) {
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			return -1;
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)port);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0) {
			close(fd);
			return port;
		}
		close(fd);
	}
	return -1;
}

static void
test_relayd_binds_a_privileged_port_as_the_user(void)
{
	char	    bind_env[64], dom_env[64];
	const char *env[] = { "NGIT_USER=" TEST_USER, bind_env, dom_env, NULL };
	struct gdproc *g = NULL;
	struct passwd *pw;
	struct wsc    *ws;
	char	       states[GD_NROLES][16];
	long	       pids[GD_NROLES], ruid, euid, eff = -1;
	char	       line[256];
	int	       port;

	T_ASSERT((pw = getpwnam(TEST_USER)) != NULL);
	T_ASSERT((port = low_port()) > 0);
	snprintf(bind_env, sizeof(bind_env), "NGIT_BIND_ADDRESS=127.0.0.1:%d",
	    port);
	snprintf(dom_env, sizeof(dom_env), "NGIT_DOMAIN=127.0.0.1:%d", port);
	T_ASSERT((g = gd_start(env)) != NULL);
	T_ASSERT(gd_roles_now(g, states, pids) == 0);
	T_ASSERT(pids[0] > 0 && proc_uids(pids[0], &ruid, &euid) == 0);
	T_CHECK(euid == (long)pw->pw_uid);
	T_CHECK((ws = wsc_connect("127.0.0.1", port, "/", 5000)) != NULL);
	if (ws != NULL)
		wsc_close(ws);
	/* CAP_NET_BIND_SERVICE (bit 10) and nothing else. */
	if (relayproc_proc_status(pids[0], "CapEff", line, sizeof(line)) == 0)
		sscanf(line, "%lx", &eff);
	T_CHECK(eff == 1L << 10);
	gd_free(g);
}

/* Forks a child with TEST_USER's ids running fn(arg); its pid, or -1. */
static pid_t
as_user(int (*fn)(void *), void *arg)
{
	struct passwd *pw;
	pid_t	       pid;

	if ((pw = getpwnam(TEST_USER)) == NULL)
		return -1;
	fflush(NULL);
	if ((pid = fork()) != 0)
		return pid;
	if (setgroups(0, NULL) == -1 || setgid(pw->pw_gid) == -1 ||
	    setuid(pw->pw_uid) == -1)
		_exit(126);
	_exit(fn(arg));
}

/* fn(arg) as TEST_USER to its end: its exit status, or -1. */
static int
run_as_user(int (*fn)(void *), void *arg)
{
	pid_t pid;
	int   st;

	if ((pid = as_user(fn, arg)) == -1 || waitpid(pid, &st, 0) == -1 ||
	    !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Waits at most ms for every process of uid to be gone (roles that get
 * SIGTERM when graspd dies take a moment).  0, or -1 if some remain.
 */
static int
user_procs_gone(uid_t uid, int ms)
{
	int64_t	       end = wsc_now_ms() + ms;
	struct dirent *de;
	struct stat    st;
	char	       path[300];
	DIR	      *d;
	int	       n;

	do {
		if ((d = opendir("/proc")) == NULL)
			return -1;
		n = 0;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s", de->d_name);
			if (stat(path, &st) == 0 && st.st_uid == uid)
				n++;
		}
		closedir(d);
		if (n == 0)
			return 0;
		usleep(50000);
	} while (wsc_now_ms() < end);
	return -1;
}

/* A root-owned file of mode 0600 holding SECRET at path. */
static int
make_secret(const char *path)
{
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1)
		return -1;
	if (write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* 1 if path is still root's, mode 0600, holding SECRET alone. */
static int
secret_intact(const char *path)
{
	struct stat st;
	char	   *text;
	int	    ok;

	if (lstat(path, &st) == -1 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 07777) != 0600) {
		printf("# %s: uid %u mode %o\n", path, (unsigned)st.st_uid,
		    st.st_mode & 07777);
		return 0;
	}
	text = t_slurp(path, NULL);
	ok = text != NULL && strcmp(text, SECRET) == 0;
	if (!ok)
		printf("# %s now holds \"%.40s\"\n", path, text ? text : "");
	free(text);
	return ok;
}

struct plant {
	const char *pl_path;   /* where */
	const char *pl_target; /* a link to it, or NULL: a fifo */
};

static int
plant(void *arg)
{
	struct plant *p = arg;

	unlink(p->pl_path);
	if (p->pl_target != NULL)
		return symlink(p->pl_target, p->pl_path) == -1;
	return mkfifo(p->pl_path, 0600) == -1;
}

/*
 * The user (or a compromised relayd) plants a link to a root-owned file
 * as graspd.pid, then a fifo: graspd started again as root writes
 * through neither, hangs on neither, and puts its own pid file there.
 */
static void
test_planted_pid_file_link_is_not_followed(void)
{
	const char    *env[] = { "NGIT_USER=" TEST_USER, NULL };
	struct gdproc *g = NULL;
	struct passwd *pw;
	struct plant   p;
	struct stat    st;
	char	       secret[600], pidf[600], *text;
	int	       round;

	T_ASSERT((g = gd_start(env)) != NULL);
	snprintf(secret, sizeof(secret), "%s/secret", gd_dir(g));
	snprintf(pidf, sizeof(pidf), "%s/run/graspd.pid", gd_dir(g));
	T_ASSERT(make_secret(secret) == 0);
	T_ASSERT((pw = getpwnam(TEST_USER)) != NULL);
	for (round = 0; round < 2; round++) {
		gd_kill_group(g);
		/* The roles follow graspd (SIGTERM), before the next start. */
		T_CHECK(user_procs_gone(pw->pw_uid, 10000) == 0);
		p.pl_path = pidf;
		p.pl_target = round == 0 ? secret : NULL;
		T_ASSERT(run_as_user(plant, &p) == 0);
		T_CHECK(gd_restart(g) == 0);
		T_CHECK(secret_intact(secret));
		T_CHECK(lstat(pidf, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == 0 && st.st_nlink == 1);
		text = t_slurp(pidf, NULL);
		T_CHECK(text != NULL && atoi(text) == (int)gd_pid(g));
		free(text);
	}
	gd_free(g);
}

struct sock_race {
	const char *sr_path;   /* the control socket */
	const char *sr_target; /* a root-owned file */
	int	    sr_ms;     /* for so long */
};

/*
 * As the user, for sr_ms: clears the way, then each time a socket
 * appears at sr_path (graspd has bound it), swaps a link to the target
 * in for it at once.  0 if it swapped one in at least.
 */
static int
sock_race(void *arg)
{
	struct sock_race *r = arg;
	struct stat	  st;
	char		  tmp[700];
	int64_t		  end = wsc_now_ms() + r->sr_ms;
	long		  n = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", r->sr_path);
	unlink(r->sr_path);
	while (wsc_now_ms() < end) {
		if (lstat(r->sr_path, &st) == -1 || !S_ISSOCK(st.st_mode))
			continue;
		unlink(tmp);
		if (symlink(r->sr_target, tmp) == 0 &&
		    rename(tmp, r->sr_path) == 0)
			n++;
	}
	unlink(tmp);
	return n > 0 ? 0 : 1;
}

static void
putenv_copy(void *arg, const char *kv)
{
	(void)arg;
	putenv(strdup(kv));
}

/* An absolute directory from $name, else dflt. */
static void
env_dir(const char *name, const char *dflt, char *out, size_t outlen)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		v = dflt;
	if (realpath(v, out) == NULL)
		snprintf(out, outlen, "%s", v);
}

/*
 * graspd -d as root on dir (relayproc_graspd_env()'s layout) with the
 * roles as TEST_USER and extra ("KEY=VALUE", or NULL), in a process
 * group of its own, its output appended to dir/log.  With slow, under
 * strace(1), whose stop at every system call widens a race's window
 * (/usr/bin/strace must exist).  Its pid, or -1.
 */
static pid_t
spawn_graspd(const char *dir, int port, const char *extra, int slow)
{
	char  bin[PATH_MAX], libexec[PATH_MAX], path[PATH_MAX + 16];
	char  log[700];
	pid_t pid;
	int   fd;

	env_dir("GRASPD_BIN", "bin", bin, sizeof(bin));
	env_dir("GRASPD_LIBEXEC", bin, libexec, sizeof(libexec));
	snprintf(path, sizeof(path), "%s/graspd", bin);
	snprintf(log, sizeof(log), "%s/log", dir);
	fflush(NULL);
	if ((pid = fork()) != 0) {
		/* Both sides, so that kill(-pid) finds the group at once. */
		if (pid > 0)
			setpgid(pid, pid);
		return pid;
	}
	setpgid(0, 0);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)) == -1 ||
	    dup2(fd, 1) == -1 || dup2(fd, 2) == -1)
		_exit(127);
	clearenv();
	putenv("PATH=/usr/bin:/bin");
	relayproc_graspd_env(port, dir, libexec, putenv_copy, NULL);
	putenv("NGIT_USER=" TEST_USER);
	if (extra != NULL)
		putenv(strdup(extra));
	if (slow)
		execl(STRACE, "strace", "-f", "-o", "/dev/null", path, "-d",
		    (char *)NULL);
	else
		execl(path, "graspd", "-d", (char *)NULL);
	_exit(127);
}

/*
 * Waits at most ms for graspd pid to exit: its exit status, or -1 if it
 * still runs (then it and its group are killed) or was killed.
 */
static int
wait_graspd(pid_t pid, int ms)
{
	int64_t end = wsc_now_ms() + ms;
	int	st;

	while (wsc_now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(50000);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* A test directory the user can reach, with run/ relay/ git/ in it. */
static int
make_instance(char *dir, size_t len)
{
	char sub[700];

	if (tdir_make(dir, len, "graspd-priv") == -1 || chmod(dir, 0711) == -1)
		return -1;
	snprintf(sub, sizeof(sub), "%s/relay", dir);
	if (mkdir(sub, 0700) == -1)
		return -1;
	snprintf(sub, sizeof(sub), "%s/git", dir);
	return mkdir(sub, 0700);
}

/*
 * The user swaps links to a root-owned file in for graspd's control
 * socket, as fast as they can, while graspd starts as root and binds it:
 * graspd makes the socket the user's by the bind itself, so no chown or
 * chmod by name follows a link to that file.  graspd need not start
 * (the user can break their own run directory); the file stays root's.
 * On the old code a link that lands between the bind and the chmod
 * gives the file mode 0660 and the user as its owner.
 */
static void
test_control_socket_link_race_leaves_its_target_alone(void)
{
	struct sock_race r;
	char		 dir[600], secret[700], sock[700];
	pid_t		 racer, gd;
	int		 try, port, st, swapped = 0;

	T_ASSERT(make_instance(dir, sizeof(dir)) == 0);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	snprintf(sock, sizeof(sock), "%s/run/control-graspd.ipc", dir);
	T_ASSERT(make_secret(secret) == 0);
	r.sr_path = sock;
	r.sr_target = secret;
	r.sr_ms = 2500;
	for (try = 0; try < SOCK_RACE_TRIES; try++) {
		T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
		/* The first start makes run/ the user's; later ones race. */
		if (try > 0) {
			T_ASSERT((racer = as_user(sock_race, &r)) > 0);
			usleep(100 * 1000);
		}
		T_ASSERT((gd = spawn_graspd(dir, port, NULL,
			      try > 0 && access(STRACE, X_OK) == 0)) > 0);
		if (try > 0) {
			if (waitpid(racer, &st, 0) == racer && WIFEXITED(st) &&
			    WEXITSTATUS(st) == 0)
				swapped++;
		} else
			usleep(1500 * 1000);
		kill(-gd, SIGKILL);
		waitpid(gd, NULL, 0);
		if (!secret_intact(secret)) {
			printf("# start %d wrote through the link\n", try);
			T_CHECK(!"the root-owned file is untouched");
			break;
		}
	}
	/* The attack ran: links took the socket's place. */
	printf("# a link took the socket's place in %d starts\n", swapped);
	T_CHECK(swapped > 0);
	tdir_remove(dir);
}

struct swap_race {
	const char *sw_dir;    /* the user's directory in the git tree */
	const char *sw_store;  /* a directory of theirs outside it */
	const char *sw_target; /* the root-only file */
	int	    sw_ms;
};

/*
 * As the user: every file of sw_dir becomes a link to the root-only file
 * and a regular file again, round and round, for sw_ms.
 */
static int
swap_race(void *arg)
{
	struct swap_race *r = arg;
	char		  reg[700], tmp[700], name[700];
	int64_t		  end = wsc_now_ms() + r->sw_ms;
	int		  i, fd, pass;

	snprintf(reg, sizeof(reg), "%s/plain", r->sw_store);
	snprintf(tmp, sizeof(tmp), "%s/tmp", r->sw_store);
	if ((fd = open(reg, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, "plain\n", 6) != 6 || close(fd) == -1)
		return 1;
	for (i = 0; i < BACKUP_RACE_FILES; i++) {
		snprintf(name, sizeof(name), "%s/f%03d", r->sw_dir, i);
		unlink(tmp);
		if (link(reg, tmp) == -1 || rename(tmp, name) == -1)
			return 1;
	}
	/* A pass makes every file a link, the next a file again. */
	for (pass = 0; wsc_now_ms() < end; pass ^= 1)
		for (i = 0; i < BACKUP_RACE_FILES; i++) {
			snprintf(name, sizeof(name), "%s/f%03d", r->sw_dir, i);
			unlink(tmp);
			if ((pass == 0 ? symlink(r->sw_target, tmp) :
					 link(reg, tmp)) == 0)
				rename(tmp, name);
		}
	return 0;
}

/*
 * graspctl backup, run by root, while the user swaps the files of a git
 * directory for links to a root-only file and back: lstat may see a
 * regular file and the open a link.  The backup opens without following
 * links and checks what it opened, so no copy ever holds the file; on
 * the old code a copy takes the root-only content (with the mode of the
 * user's file).
 */
static void
test_backup_never_copies_a_link_swapped_in(void)
{
	const char	*env[] = { "NGIT_USER=" TEST_USER, NULL };
	struct gdproc	*g = NULL;
	struct swap_race r;
	char		 secret[600], race[600], store[600], out[700];
	struct buf	 cmd = BUF_INIT;
	char		 bin[PATH_MAX], *text = NULL;
	pid_t		 racer;
	int		 try, rc, slow, refused = 0, leaked = 0;

	T_ASSERT((g = gd_start(env)) != NULL);
	env_dir("GRASPD_BIN", "bin", bin, sizeof(bin));
	snprintf(secret, sizeof(secret), "%s/secret", gd_dir(g));
	snprintf(race, sizeof(race), "%s/git/race", gd_dir(g));
	snprintf(store, sizeof(store), "%s/store", gd_dir(g));
	T_ASSERT(make_secret(secret) == 0);
	T_ASSERT(mkdir(race, 0755) == 0 && mkdir(store, 0755) == 0);
	{
		struct passwd *pw = getpwnam(TEST_USER);

		T_ASSERT(pw != NULL &&
		    chown(race, pw->pw_uid, pw->pw_gid) == 0 &&
		    chown(store, pw->pw_uid, pw->pw_gid) == 0);
	}
	r.sw_dir = race;
	r.sw_store = store;
	r.sw_target = secret;
	r.sw_ms = 60000;
	T_ASSERT((racer = as_user(swap_race, &r)) > 0);
	usleep(300 * 1000);
	for (try = 0; try < BACKUP_RACE_TRIES && !leaked; try++) {
		snprintf(out, sizeof(out), "%s/backup%d", gd_dir(g), try);
		/*
		 * Under strace, if any, its stops widen the race's window
		 * (LeakSanitizer cannot run under ptrace: a -fsanitize build).
		 */
		slow = access(STRACE, X_OK) == 0;
		buf_reset(&cmd);
		buf_printf(&cmd,
		    "%sNGIT_RELAY_DATA_PATH='%s/relay' "
		    "NGIT_GIT_DATA_PATH='%s/git' NGIT_RUN_PATH='%s/run' "
		    "timeout 60 %s '%s/graspctl' backup '%s' 2>&1",
		    slow ? "ASAN_OPTIONS=detect_leaks=0 " : "", gd_dir(g),
		    gd_dir(g), gd_dir(g), slow ? STRACE " -o /dev/null" : "",
		    bin, out);
		rc = ctl_run(cmd.b_data, &text);
		if (rc != 0) {
			refused++;
			if (text == NULL ||
			    strstr(text, "while copying: not") == NULL)
				printf("# backup: %s\n", text ? text : "");
		}
		free(text);
		text = NULL;
		buf_reset(&cmd);
		buf_printf(&cmd, "grep -rlF '%s' '%s' 2>/dev/null", SECRET,
		    out);
		if (ctl_run(cmd.b_data, &text) == 0) {
			printf("# backup %d copied the root-only file: %s\n",
			    try, text);
			leaked = 1;
		}
		free(text);
		text = NULL;
	}
	kill(racer, SIGKILL);
	waitpid(racer, NULL, 0);
	buf_free(&cmd);
	printf("# %d of %d backups refused a link swapped in\n", refused, try);
	T_CHECK(!leaked);
	T_CHECK(secret_intact(secret));
	gd_free(g);
}

/*
 * A git tree copied in as root (the migration of issue 40): the roles'
 * user cannot write its repositories, so every push and import would
 * fail unlogged.  graspd stops at once with exit 78, naming the
 * repository, its owner and the chown to run.  On the old code graspd
 * starts (and runs past the wait).
 */
static void
test_root_owned_git_tree_stops_graspd_with_the_chown(void)
{
	char  dir[600], path[800], want[PATH_MAX + 64], real[PATH_MAX], *log;
	pid_t gd;
	int   port, rc;

	T_ASSERT(make_instance(dir, sizeof(dir)) == 0);
	snprintf(path, sizeof(path), "%s/git/npub1copied", dir);
	T_ASSERT(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/git/npub1copied/repo.git", dir);
	T_ASSERT(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/git/npub1copied/repo.git/objects",
	    dir);
	T_ASSERT(mkdir(path, 0755) == 0);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	T_ASSERT((gd = spawn_graspd(dir, port, NULL, 0)) > 0);
	rc = wait_graspd(gd, 15000);
	T_EQ_INT(rc, 78);
	snprintf(path, sizeof(path), "%s/log", dir);
	log = t_slurp(path, NULL);
	T_ASSERT(log != NULL);
	snprintf(want, sizeof(want),
	    "%s/git/npub1copied belongs to uid 0 (root)", dir);
	T_CHECK(strstr(log, want) != NULL);
	/* The hint names the real path (chown -R does not follow links). */
	snprintf(path, sizeof(path), "%s/git", dir);
	if (realpath(path, real) == NULL)
		snprintf(real, sizeof(real), "%s", path);
	snprintf(want, sizeof(want), "run chown -R %s: %s", TEST_USER, real);
	T_CHECK(strstr(log, want) != NULL);
	if (strstr(log, want) == NULL)
		printf("# log: %s\n", log);
	free(log);
	/* Mended as it says, graspd starts. */
	snprintf(path, sizeof(path), "chown -R %s: '%s/git'", TEST_USER, dir);
	T_ASSERT(system(path) == 0);
	T_ASSERT((gd = spawn_graspd(dir, port, NULL, 0)) > 0);
	usleep(1000 * 1000);
	T_CHECK(waitpid(gd, NULL, WNOHANG) == 0);
	kill(-gd, SIGKILL);
	waitpid(gd, NULL, 0);
	tdir_remove(dir);
}

/*
 * relay_data_path where the roles' user cannot reach it (a directory
 * above it is root's, mode 0700): graspd stops at once with exit 78 and
 * names the directory, not after five restarts of relayd with exit 1.
 */
static void
test_unreachable_relay_data_path_stops_graspd_at_once(void)
{
	char  dir[600], path[800], want[900], extra[900], *log;
	pid_t gd;
	int   port, rc;

	T_ASSERT(make_instance(dir, sizeof(dir)) == 0);
	snprintf(path, sizeof(path), "%s/closed", dir);
	T_ASSERT(mkdir(path, 0700) == 0);
	snprintf(extra, sizeof(extra), "NGIT_RELAY_DATA_PATH=%s/closed/relay",
	    dir);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	T_ASSERT((gd = spawn_graspd(dir, port, extra, 0)) > 0);
	rc = wait_graspd(gd, 15000);
	T_EQ_INT(rc, 78);
	snprintf(path, sizeof(path), "%s/log", dir);
	log = t_slurp(path, NULL);
	T_ASSERT(log != NULL);
	snprintf(want, sizeof(want),
	    "%s/closed belongs to uid 0 (root), mode 0700, and %s may not "
	    "search it",
	    dir, TEST_USER);
	T_CHECK(strstr(log, want) != NULL);
	if (strstr(log, want) == NULL)
		printf("# log: %s\n", log);
	T_CHECK(strstr(log, "exited 1") == NULL);
	free(log);
	tdir_remove(dir);
}

int
main(void)
{
	char cmd[256];

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("ok - test_roles_run_as_the_user # SKIP needs root "
		       "(graspd drops privileges only when started as root)\n");
		return 0;
	}
	if (getpwnam(TEST_USER) == NULL) {
		snprintf(cmd, sizeof(cmd),
		    "useradd --system --no-create-home "
		    "--home-dir /nonexistent --shell /usr/sbin/nologin %s",
		    TEST_USER);
		if (system(cmd) != 0) {
			printf("not ok - test_roles_run_as_the_user: cannot "
			       "create user %s\n",
			    TEST_USER);
			return 1;
		}
		created_user = 1;
	}
	T_RUN(test_roles_run_as_the_user);
	T_RUN(test_relayd_binds_a_privileged_port_as_the_user);
	T_RUN(test_planted_pid_file_link_is_not_followed);
	T_RUN(test_control_socket_link_race_leaves_its_target_alone);
	T_RUN(test_backup_never_copies_a_link_swapped_in);
	T_RUN(test_root_owned_git_tree_stops_graspd_with_the_chown);
	T_RUN(test_unreachable_relay_data_path_stops_graspd_at_once);
	if (created_user) {
		if (user_procs_gone(getpwnam(TEST_USER)->pw_uid, 10000) == -1)
			printf("# processes of %s remain\n", TEST_USER);
		snprintf(cmd, sizeof(cmd), "userdel %s", TEST_USER);
		if (system(cmd) != 0)
			printf("# could not remove user %s\n", TEST_USER);
	}
	return t_done();
}
