/*
 * gdproc.c: a whole graspd under test (see gdproc.h).
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "nostr.h"
#include "proc.h" /* proc_alive(): a zombie counts as gone */
#include "relayproc.h"
#include "tdir.h"
#include "wsclient.h"

extern char **environ;

const char *const gd_roles[GD_NROLES] = { "relayd", "syncd", "discoveryd",
	"historyd" };

/* Environment entries a test may add. */
#define GD_MAX_ENV     32
/* How many ports gd_start() tries when one was taken. */
#define GD_START_TRIES 3
/* Processes read from /proc, and kept of graspd's tree, at most. */
#define GD_PROC_MAX    65536
#define GD_TREE_MAX    256
/* How long the killed roles may take to be gone. */
#define GD_GONE_MS     20000

struct gdproc {
	pid_t g_pid;
	int   g_port;
	char  g_dir[PATH_MAX];
	char  g_bin[PATH_MAX];
	char  g_libexec[PATH_MAX];
	char  g_db[PATH_MAX + 32];
	char *g_env[GD_MAX_ENV + 1];
};

static void
nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void
abs_dir(const char *dir, char *out, size_t outlen)
{
	if (realpath(dir, out) == NULL)
		snprintf(out, outlen, "%s", dir);
}

static void
put_env(void *arg, const char *kv)
{
	(void)arg;
	putenv(strdup(kv));
}

/* Forks graspd -d in its own process group, with our environment. */
static int
spawn(struct gdproc *g)
{
	char   path[PATH_MAX + 16], log[PATH_MAX + 16];
	char **e, name[256];
	pid_t  parent = getpid(), pid;
	int    fd, i;

	snprintf(path, sizeof(path), "%s/graspd", g->g_bin);
	snprintf(log, sizeof(log), "%s/log", g->g_dir);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) ==
	    -1)
		return -1;
	fflush(NULL);
	if ((pid = fork()) == -1) {
		close(fd);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		/* The test's own NGIT_* settings never leak in. */
		for (e = environ; *e != NULL;) {
			if (strncmp(*e, "NGIT_", 5) != 0 &&
			    strncmp(*e, "NOTIFY_SOCKET=", 14) != 0) {
				e++;
				continue;
			}
			snprintf(name, sizeof(name), "%.*s",
			    (int)strcspn(*e, "="), *e);
			unsetenv(name);
			e = environ;
		}
		relayproc_graspd_env(g->g_port, g->g_dir, g->g_libexec, put_env,
		    NULL);
		for (i = 0; g->g_env[i] != NULL; i++)
			putenv(g->g_env[i]);
		if (dup2(fd, 1) == -1 || dup2(fd, 2) == -1)
			_exit(127);
		execl(path, "graspd", "-d", (char *)NULL);
		_exit(127);
	}
	close(fd);
	g->g_pid = pid;
	return 0;
}

/* Waits until every role runs; 0, or -1 if graspd died or time ran out. */
static int
settle(struct gdproc *g)
{
	int64_t deadline = wsc_now_ms() + GD_SETTLE_MS;
	char	states[GD_NROLES][16];
	long	pids[GD_NROLES];
	int	i, n;

	while (wsc_now_ms() < deadline) {
		if (waitpid(g->g_pid, NULL, WNOHANG) == g->g_pid) {
			g->g_pid = -1;
			return -1;
		}
		if (gd_roles_now(g, states, pids) == 0) {
			for (i = n = 0; i < GD_NROLES; i++)
				n += strcmp(states[i], "running") == 0;
			if (n == GD_NROLES)
				return 0;
		}
		nap(100);
	}
	return -1;
}

struct gdproc *
gd_start(const char *const extra_env[])
{
	struct gdproc *g;
	const char    *b = getenv("GRASPD_BIN");
	const char    *l = getenv("GRASPD_LIBEXEC");
	char	       sub[PATH_MAX + 16], log[PATH_MAX + 16];
	int	       i, try;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		abort();
	g->g_pid = -1;
	for (i = 0; extra_env != NULL && extra_env[i] != NULL && i < GD_MAX_ENV;
	     i++)
		if ((g->g_env[i] = strdup(extra_env[i])) == NULL)
			abort();
	abs_dir(b != NULL && *b != '\0' ? b : "bin", g->g_bin,
	    sizeof(g->g_bin));
	abs_dir(l != NULL && *l != '\0' ? l : g->g_bin, g->g_libexec,
	    sizeof(g->g_libexec));
	if (tdir_make(g->g_dir, sizeof(g->g_dir), "graspd-gd") == -1) {
		gd_free(g);
		return NULL;
	}
	/* Roles that run as another user (NGIT_USER) reach their paths. */
	chmod(g->g_dir, 0711);
	snprintf(sub, sizeof(sub), "%s/relay", g->g_dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/git", g->g_dir);
	mkdir(sub, 0700);
	snprintf(g->g_db, sizeof(g->g_db), "%s/relay/graspd.db", g->g_dir);
	snprintf(log, sizeof(log), "%s/log", g->g_dir);
	for (try = 1;; try++) {
		if ((g->g_port = relayproc_free_port("127.0.0.1")) != -1 &&
		    spawn(g) == 0 && settle(g) == 0)
			return g;
		/* As relayproc_start(): a port taken meanwhile, another. */
		if (g->g_port == -1 || try == GD_START_TRIES ||
		    !relayproc_log_port_taken(log))
			break;
		fprintf(stderr,
		    "# graspd: port %d was taken, trying "
		    "another\n",
		    g->g_port);
		gd_kill_group(g);
	}
	fprintf(stderr, "# graspd did not start\n");
	gd_dump_log(g, 30);
	gd_free(g);
	return NULL;
}

int
gd_restart(struct gdproc *g)
{
	if (g->g_pid != -1)
		return -1;
	if (spawn(g) == -1 || settle(g) == -1) {
		fprintf(stderr, "# graspd did not start again\n");
		gd_dump_log(g, 30);
		return -1;
	}
	return 0;
}

/*
 * The processes of the tree under root, root first, at most cap of them
 * (the roles lead process groups of their own, outside graspd's).
 */
static size_t
proc_tree(pid_t root, pid_t *tree, size_t cap)
{
	static pid_t   pid[GD_PROC_MAX], ppid[GD_PROC_MAX];
	struct dirent *de;
	DIR	      *d;
	FILE	      *f;
	char	       path[300], line[512], *p;
	size_t	       n = 0, k = 0, i, j;
	long	       pp;

	if ((d = opendir("/proc")) != NULL) {
		while ((de = readdir(d)) != NULL && n < GD_PROC_MAX) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/stat",
			    de->d_name);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			/* "pid (comm) state ppid ...": comm may hold ")". */
			if (fgets(line, sizeof(line), f) != NULL &&
			    (p = strrchr(line, ')')) != NULL &&
			    sscanf(p + 1, " %*c %ld", &pp) == 1) {
				pid[n] = (pid_t)atol(de->d_name);
				ppid[n++] = (pid_t)pp;
			}
			fclose(f);
		}
		closedir(d);
	}
	if (cap > 0)
		tree[k++] = root;
	for (i = 0; i < k; i++)
		for (j = 0; j < n && k < cap; j++)
			if (ppid[j] == tree[i])
				tree[k++] = pid[j];
	return k;
}

/* Waits until none of tree[1..n) runs, for at most GD_GONE_MS. */
static void
tree_gone(const pid_t *tree, size_t n)
{
	int64_t deadline = wsc_now_ms() + GD_GONE_MS;
	size_t	i = 1;

	while (i < n && wsc_now_ms() < deadline) {
		if (!proc_alive(tree[i]))
			i++;
		else
			nap(20);
	}
	if (i < n)
		fprintf(stderr, "# pid %ld still runs after %d ms\n",
		    (long)tree[i], GD_GONE_MS);
}

/*
 * SIGKILL to graspd's group, then waits for graspd and for the rest of
 * tree[0..n): a restart waits for them, or relayd's port and store would
 * still be the old relayd's.
 */
static void
kill_and_wait(struct gdproc *g, const pid_t *tree, size_t n)
{
	kill(-g->g_pid, SIGKILL);
	waitpid(g->g_pid, NULL, 0);
	g->g_pid = -1;
	tree_gone(tree, n);
}

void
gd_kill_group(struct gdproc *g)
{
	pid_t tree[GD_TREE_MAX];

	/* The roles follow graspd (SIGTERM). */
	if (g->g_pid != -1)
		kill_and_wait(g, tree, proc_tree(g->g_pid, tree, GD_TREE_MAX));
}

void
gd_power_cut(struct gdproc *g)
{
	pid_t  tree[GD_TREE_MAX];
	size_t n, i;

	if (g->g_pid == -1)
		return;
	/* Stopped, graspd starts no role again while they die. */
	kill(g->g_pid, SIGSTOP);
	n = proc_tree(g->g_pid, tree, GD_TREE_MAX);
	for (i = n; i-- > 1;) {
		kill(-tree[i], SIGKILL);
		kill(tree[i], SIGKILL);
	}
	kill_and_wait(g, tree, n);
}

void
gd_free(struct gdproc *g)
{
	int64_t deadline;
	int	i;

	if (g == NULL)
		return;
	if (g->g_pid != -1) {
		kill(g->g_pid, SIGTERM);
		deadline = wsc_now_ms() + 20000;
		while (waitpid(g->g_pid, NULL, WNOHANG) != g->g_pid) {
			if (wsc_now_ms() >= deadline) {
				kill(-g->g_pid, SIGKILL);
				waitpid(g->g_pid, NULL, 0);
				break;
			}
			nap(50);
		}
		/* Roles that outlived graspd go with its group. */
		kill(-g->g_pid, SIGKILL);
	}
	tdir_remove(g->g_dir);
	for (i = 0; g->g_env[i] != NULL; i++)
		free(g->g_env[i]);
	free(g);
}

int
gd_roles_now(struct gdproc *g, char states[GD_NROLES][16], long pids[GD_NROLES])
{
	struct buf  out = BUF_INIT;
	cJSON	   *j, *r, *pid;
	const char *name, *st;
	char	    cmd[3 * PATH_MAX], chunk[4096];
	size_t	    n;
	FILE	   *f;
	int	    i, rc;

	for (i = 0; i < GD_NROLES; i++) {
		states[i][0] = '\0';
		pids[i] = 0;
	}
	snprintf(cmd, sizeof(cmd),
	    "'%s/graspctl' -j -r '%s/run' status "
	    "2>/dev/null",
	    g->g_bin, g->g_dir);
	fflush(NULL);
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	buf_adds(&out, "");
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&out, chunk, n);
	rc = pclose(f);
	j = rc == 0 ? cJSON_Parse(out.b_data) : NULL;
	buf_free(&out);
	if (j == NULL)
		return -1;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "roles")) {
		name = cJSON_GetStringValue(cJSON_GetObjectItem(r, "role"));
		st = cJSON_GetStringValue(cJSON_GetObjectItem(r, "state"));
		if (name == NULL || (i = gd_role_index(name)) == -1)
			continue;
		snprintf(states[i], sizeof(states[i]), "%s", st ? st : "");
		/* "pid": null for a role that is down. */
		pid = cJSON_GetObjectItem(r, "pid");
		pids[i] = cJSON_IsNumber(pid) ? (long)pid->valuedouble : 0;
	}
	cJSON_Delete(j);
	return 0;
}

int
gd_role_index(const char *name)
{
	int i;

	for (i = 0; i < GD_NROLES; i++)
		if (strcmp(gd_roles[i], name) == 0)
			return i;
	return -1;
}

int
gd_port(const struct gdproc *g)
{
	return g->g_port;
}

pid_t
gd_pid(const struct gdproc *g)
{
	return g->g_pid;
}

const char *
gd_dir(const struct gdproc *g)
{
	return g->g_dir;
}

const char *
gd_db_path(const struct gdproc *g)
{
	return g->g_db;
}

int
gd_publish(struct gdproc *g, const struct event *e)
{
	struct wsc *ws;
	char	   *msg = NULL;
	int	    ok = 0, rc;

	if ((ws = wsc_connect("127.0.0.1", g->g_port, "/", 5000)) == NULL)
		return -1;
	rc = nostr_publish(ws, e, 10000, &ok, &msg);
	if (rc == 0 && !ok)
		printf("# kind %u refused: %s\n", e->kind, msg ? msg : "");
	free(msg);
	wsc_close(ws);
	return rc == 0 && ok ? 0 : -1;
}

int
gd_has_event(struct gdproc *g, const char *id_hex)
{
	struct wsc *ws;
	char	    f[128], **evs = NULL;
	size_t	    n = 0;
	int	    rc;

	if ((ws = wsc_connect("127.0.0.1", g->g_port, "/", 5000)) == NULL)
		return -1;
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id_hex);
	rc = nostr_req(ws, "q", f, 10000, &evs, &n, NULL);
	nostr_events_free(evs);
	wsc_close(ws);
	return rc == 0 ? n > 0 : -1;
}

struct event *
gd_host_repo(struct gdproc *g, const uint8_t sk[SECKEY_LEN], const char *d,
    const char *extra_relays, const char *dir, char oid[41])
{
	struct buf    t = BUF_INIT;
	struct event *ann;
	struct wsc   *ws;
	uint8_t	      pk[PUBKEY_LEN];
	char	      domain[64], url[512];
	int	      rc;

	event_pubkey_of(sk, pk);
	snprintf(domain, sizeof(domain), "127.0.0.1:%d", g->g_port);
	gt_url(url, sizeof(url), domain, pk, d);
	buf_printf(&t,
	    "[[\"d\",\"%s\"],[\"name\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"ws://%s\"%s]]",
	    d, d, url, domain, extra_relays);
	if ((ann = event_new_signed(sk, time(NULL), 30617, t.b_data, "")) ==
	    NULL)
		abort();
	buf_free(&t);
	if (gd_publish(g, ann) == -1 ||
	    (ws = wsc_connect("127.0.0.1", g->g_port, "/", 5000)) == NULL) {
		event_destroy(ann);
		return NULL;
	}
	rc = gt_release(ws, sk, domain, d, dir, oid);
	wsc_close(ws);
	if (rc == -1) {
		event_destroy(ann);
		return NULL;
	}
	return ann;
}

int
gd_refused_urls(struct buf *out, const char *prefix, const char *suffix)
{
	const char *dir = getenv("GRASPD_VECTORS");
	char	    path[1024], line[2048], *tab;
	FILE	   *f;
	int	    n = 0;

	snprintf(path, sizeof(path), "%s/relay-urls.tsv",
	    dir != NULL && *dir != '\0' ? dir : "tests/vectors");
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || (tab = strrchr(line, '\t')) == NULL ||
		    strcmp(tab + 1, "REJECT") != 0)
			continue;
		*tab = '\0';
		buf_printf(out, ",%s", prefix);
		buf_add_jstr(out, line, strlen(line));
		buf_adds(out, suffix);
		n++;
	}
	fclose(f);
	return n;
}

void
gd_dump_log(const struct gdproc *g, int nlines)
{
	char cmd[PATH_MAX + 64];

	if (g->g_dir[0] == '\0')
		return;
	snprintf(cmd, sizeof(cmd), "tail -n %d '%s/log' | sed 's/^/# /' >&2",
	    nlines, g->g_dir);
	fflush(NULL);
	if (system(cmd) == -1)
		fprintf(stderr, "# cannot show %s/log\n", g->g_dir);
}
