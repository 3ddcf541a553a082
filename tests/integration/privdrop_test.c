/*
 * privdrop_test.c: graspd started as root runs every role as NGIT_USER
 * (graspd(8), PRIVILEGES).  The roles' real and effective uids are the
 * user's, graspd's is root's; the run directory is the user's with mode
 * 0700 and its sockets have no group or other permission, so that
 * another user cannot connect to a control socket while the user can;
 * relayd still stores events and creates repositories.  Needs root: it
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
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

/* The user the test's graspd drops to. */
#define TEST_USER  "graspd-t"
/* Anyone else: the user a stranger's connection runs as. */
#define OTHER_USER "nobody"

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
	uint8_t	       sk[32], pk[32];
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
		    e = event_new_signed((uint8_t[32]){ 7 }, time(NULL), 10317,
			"[[\"g\",\"wss://example.org\"]]", "")) == 0);
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
	if (created_user) {
		snprintf(cmd, sizeof(cmd), "userdel %s", TEST_USER);
		if (system(cmd) != 0)
			printf("# could not remove user %s\n", TEST_USER);
	}
	return t_done();
}
