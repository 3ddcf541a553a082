/*
 * supervisor_test.c: graspd and graspctl as an operator sees them.  Real
 * processes on loopback in temporary directories: graspd starts the
 * roles that exist, graspctl reports them, a role killed with SIGKILL
 * comes back while the others keep running and relayd keeps serving,
 * every event relayd accepted survives relayd's own death, restart and
 * stop/start of one role, reload (SIGHUP and graspctl) with a broken and
 * a changed file, exit 78 and crash loops marked failed, the start-up
 * failures, daemon mode, sd_notify, graspd -n and the init script.  The
 * checks of the repository itself (format, manual pages, install) are
 * tests/lint/run.sh.
 *
 * graspd is started here with our own fork+exec (relayproc.c cannot pass
 * options, and graspd needs -d to stay in the foreground).  Every child
 * dies with the test (PR_SET_PDEATHSIG; the roles die with graspd).
 */
#define _GNU_SOURCE /* close_range */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "nostr.h"
#include "proc.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

extern char **environ;

#define NROLES	    4
/* How long a role may take to come back or to change state here. */
#define COMEBACK_MS 15000
/* graspd's own stop bound: SIGTERM + SIGKILL after 5 s, twice. */
#define STOP_MS	    20000

static const char *const roles[NROLES] = { "relayd", "syncd", "discoveryd",
	"historyd" };
static int		 role_exists[NROLES];
static char		 bindir[PATH_MAX];  /* graspd and graspctl */
static char		 libexec[PATH_MAX]; /* the roles */
static char		 topdir[PATH_MAX];  /* the checkout: man/, etc/ */

/* One graspd under test. */
struct gd {
	pid_t pid;    /* -1 once reaped */
	int   status; /* of the exit, as a shell shows it */
	int   port;
	char  dir[PATH_MAX];
	char  run[PATH_MAX + 8];
	char  log[PATH_MAX + 8];
	char  conf[PATH_MAX + 16];
};

/* Everything that may need killing at the end, whatever happened. */
static pid_t cleanup_pids[256];
static int   ncleanup;

static void
remember_pid(pid_t pid)
{
	int i;

	if (pid <= 0)
		return;
	for (i = 0; i < ncleanup; i++)
		if (cleanup_pids[i] == pid)
			return;
	if (ncleanup < (int)(sizeof(cleanup_pids) / sizeof(cleanup_pids[0])))
		cleanup_pids[ncleanup++] = pid;
}

/* The process name of pid, or "" if it is gone. */
static void
proc_comm(pid_t pid, char *out, size_t outlen)
{
	char  path[64];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return;
	if (fgets(out, (int)outlen, f) == NULL)
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* 1 if pid runs (a zombie does not count). */
static int
alive(pid_t pid)
{
	return proc_alive(pid);
}

/* Processes of process group pgid that are not zombies. */
static int
group_alive(pid_t pgid)
{
	struct dirent *de;
	DIR	      *d;
	char	       path[300], buf[512], *p, state;
	int	       n = 0, grp;
	size_t	       len;
	FILE	      *f;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		/* "pid (comm) S ppid pgrp ...": after the last ')'. */
		if ((p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 1, " %c %*d %d", &state, &grp) != 2)
			continue;
		if (grp == (int)pgid && state != 'Z' && state != 'X')
			n++;
	}
	closedir(d);
	return n;
}

/* Kills what is left of the processes the test saw (their names match). */
static void
cleanup_all(void)
{
	static const char *const names[] = { "graspd", "relayd", "syncd",
		"discoveryd", "historyd" };
	char			 comm[64];
	size_t			 j;
	int			 i;

	for (i = 0; i < ncleanup; i++) {
		if (!alive(cleanup_pids[i]))
			continue;
		proc_comm(cleanup_pids[i], comm, sizeof(comm));
		for (j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			if (strcmp(comm, names[j]) == 0) {
				kill(cleanup_pids[i], SIGKILL);
				break;
			}
	}
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	remove(path);
	return 0;
}

static void
rm_tree(const char *dir)
{
	const char *keep = getenv("GRASPD_KEEP_TMP");

	if (dir[0] == '\0')
		return;
	if (keep != NULL && *keep != '\0') {
		fprintf(stderr, "# kept %s\n", dir);
		return;
	}
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
make_tmpdir(char *out, size_t outlen)
{
	const char *tmp = getenv("TMPDIR");

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	snprintf(out, outlen, "%s/graspd-sup.XXXXXX", tmp);
	if (mkdtemp(out) == NULL) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

static int
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, mode);
}

static void
dump_log(const struct gd *g, int nlines)
{
	char *text, *p;
	int   seen = 0;

	if ((text = t_slurp(g->log, NULL)) == NULL)
		return;
	p = text + strlen(text);
	while (p > text && seen <= nlines)
		if (*--p == '\n')
			seen++;
	fprintf(stderr, "# --- last lines of %s\n", g->log);
	for (p = strtok(p, "\n"); p != NULL; p = strtok(NULL, "\n"))
		fprintf(stderr, "# %s\n", p);
	free(text);
}

/*
 * Runs a shell command line, stdout and stderr into *out (caller frees;
 * out may be NULL).  Returns its exit status, or -1.
 */
static int __attribute__((format(printf, 2, 3)))
run(char **out, const char *fmt, ...)
{
	struct buf b = BUF_INIT, cmd = BUF_INIT;
	char	   chunk[4096];
	va_list	   ap;
	size_t	   n;
	FILE	  *f;
	int	   st;
	char	  *v = NULL;

	va_start(ap, fmt);
	if (vasprintf(&v, fmt, ap) == -1)
		abort();
	va_end(ap);
	buf_printf(&cmd, "%s 2>&1", v);
	free(v);
	fflush(NULL);
	if ((f = popen(cmd.b_data, "r")) == NULL) {
		buf_free(&cmd);
		return -1;
	}
	buf_adds(&b, "");
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	st = pclose(f);
	buf_free(&cmd);
	if (out != NULL)
		*out = buf_release(&b, NULL);
	else
		buf_free(&b);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* graspctl -r RUN args..., output in *out. */
static int __attribute__((format(printf, 3, 4)))
ctl(const struct gd *g, char **out, const char *fmt, ...)
{
	va_list ap;
	char   *args = NULL;
	int	rc;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) == -1)
		abort();
	va_end(ap);
	rc = run(out, "'%s/graspctl' -r '%s' %s", bindir, g->run, args);
	free(args);
	return rc;
}

/* graspctl -j status, parsed; NULL if it failed.  Caller frees. */
static cJSON *
status(const struct gd *g)
{
	cJSON *j = NULL, *r, *roles_j;
	char  *out = NULL;

	if (run(&out, "'%s/graspctl' -j -r '%s' status 2>/dev/null", bindir,
		g->run) == 0)
		j = cJSON_Parse(out);
	free(out);
	roles_j = j ? cJSON_GetObjectItem(j, "roles") : NULL;
	cJSON_ArrayForEach(r, roles_j)
		if (cJSON_IsNumber(cJSON_GetObjectItem(r, "pid")))
			remember_pid(
			    (pid_t)cJSON_GetObjectItem(r, "pid")->valuedouble);
	return j;
}

static cJSON *
role_of(const cJSON *st, const char *name)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(st, "roles"))
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(r, "role")),
			name) == 0)
			return (cJSON *)r;
	return NULL;
}

static const char *
rstr(const cJSON *st, const char *name, const char *key)
{
	const char *s;

	s = cJSON_GetStringValue(cJSON_GetObjectItem(role_of(st, name), key));
	return s ? s : "";
}

static long
rnum(const cJSON *st, const char *name, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(role_of(st, name), key);

	return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

/* The status of graspd, or -1 while it runs. */
static int
gd_reap(struct gd *g, int timeout_ms)
{
	return relayproc_reap(&g->pid, &g->status, timeout_ms);
}

/*
 * Starts graspd -d [-f conf] in a new temporary directory: conf_text is
 * the file to write (NULL: no -f), extra_env "KEY=VALUE" strings
 * (NULL-terminated, may be NULL) over the test instance's NGIT_*
 * settings.  The run directory is left for graspd to create.  Returns 0,
 * or -1 with the directory removed.
 */
/* Where env_add() appends: one buffer of strings, their offsets. */
struct env_acc {
	struct buf *buf;
	size_t	   *off;
	size_t	   *noff;
};

static void
env_add(void *arg, const char *kv)
{
	struct env_acc *ea = arg;

	ea->off[(*ea->noff)++] = ea->buf->b_len;
	buf_adds(ea->buf, kv);
	buf_addc(ea->buf, '\0');
}

static int
gd_spawn(struct gd *g, const char *conf_text, const char *const extra_env[])
{
	struct env_acc ea;
	struct buf     e = BUF_INIT;
	char	     **envp, *argv[6], path[PATH_MAX + 16], sub[PATH_MAX + 8];
	size_t	       n = 0, i, j, off[32], noff = 0;
	int	       logfd, argc = 0;
	pid_t	       pid, parent = getpid();

	memset(g, 0, sizeof(*g));
	g->pid = -1;
	if (make_tmpdir(g->dir, sizeof(g->dir)) == -1)
		return -1;
	snprintf(sub, sizeof(sub), "%s/relay", g->dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/git", g->dir);
	mkdir(sub, 0700);
	snprintf(g->run, sizeof(g->run), "%s/run", g->dir);
	snprintf(g->log, sizeof(g->log), "%s/log", g->dir);
	if ((g->port = relayproc_free_port("127.0.0.1")) == -1)
		goto fail;
	if (conf_text != NULL) {
		snprintf(g->conf, sizeof(g->conf), "%s/graspd.conf", g->dir);
		if (write_file(g->conf, conf_text, 0644) == -1)
			goto fail;
	}

	/* Offsets into one buffer: its data may move while it grows. */
#define ENV(...) \
	do { \
		off[noff++] = e.b_len; \
		buf_printf(&e, __VA_ARGS__); \
		buf_addc(&e, '\0'); \
	} while (0)
	ea.buf = &e;
	ea.off = off;
	ea.noff = &noff;
	/* g->run is g->dir/run, the NGIT_RUN_PATH it gives. */
	relayproc_graspd_env(g->port, g->dir, libexec, env_add, &ea);
	for (i = 0; extra_env != NULL && extra_env[i] != NULL; i++)
		ENV("%s", extra_env[i]);
#undef ENV
	for (i = 0; environ[i] != NULL; i++)
		n++;
	if ((envp = calloc(n + noff + 1, sizeof(*envp))) == NULL)
		abort();
	n = 0;
	for (i = 0; environ[i] != NULL; i++) {
		size_t kl = strcspn(environ[i], "=");

		/* Ours replace the test's; stray NGIT_* settings go. */
		if (strncmp(environ[i], "NGIT_", 5) == 0 ||
		    strncmp(environ[i], "NOTIFY_SOCKET=", 14) == 0)
			continue;
		for (j = 0; j < noff; j++)
			if (strncmp(e.b_data + off[j], environ[i], kl + 1) == 0)
				break;
		if (j == noff)
			envp[n++] = environ[i];
	}
	for (j = 0; j < noff; j++) {
		const char *kv = e.b_data + off[j];
		size_t	    k, kl = strcspn(kv, "=");

		/* A later setting of the same key wins. */
		for (k = j + 1; k < noff; k++)
			if (strncmp(e.b_data + off[k], kv, kl + 1) == 0)
				break;
		if (k == noff)
			envp[n++] = e.b_data + off[j];
	}
	envp[n] = NULL;

	snprintf(path, sizeof(path), "%s/graspd", bindir);
	argv[argc++] = "graspd";
	argv[argc++] = "-d";
	if (conf_text != NULL) {
		argv[argc++] = "-f";
		argv[argc++] = g->conf;
	}
	argv[argc] = NULL;
	logfd = open(g->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd == -1) {
		free(envp);
		goto fail;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		close(logfd);
		free(envp);
		goto fail;
	}
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (dup2(logfd, 1) == -1 || dup2(logfd, 2) == -1)
			_exit(127);
		close_range(3, ~0U, 0);
		execve(path, argv, envp);
		_exit(127);
	}
	close(logfd);
	free(envp);
	buf_free(&e);
	g->pid = pid;
	remember_pid(pid);
	return 0;
fail:
	buf_free(&e);
	rm_tree(g->dir);
	g->dir[0] = '\0';
	return -1;
}

/*
 * Waits until relayd runs and no role is starting, in backoff or
 * stopping.  Returns the last status (caller frees) or NULL on timeout.
 */
static cJSON *
gd_wait_settled(struct gd *g, int timeout_ms)
{
	int64_t	    deadline = wsc_now_ms() + timeout_ms;
	cJSON	   *st;
	const char *s;
	int	    i, busy;

	for (;;) {
		if ((st = status(g)) != NULL) {
			busy =
			    strcmp(rstr(st, "relayd", "state"), "running") != 0;
			for (i = 0; i < NROLES; i++) {
				s = rstr(st, roles[i], "state");
				if (strcmp(s, "starting") == 0 ||
				    strcmp(s, "backoff") == 0 ||
				    strcmp(s, "stopping") == 0)
					busy = 1;
			}
			if (!busy)
				return st;
			if (wsc_now_ms() >= deadline)
				return st;
			cJSON_Delete(st);
		} else if (wsc_now_ms() >= deadline || gd_reap(g, 0) != -1)
			return NULL;
		relayproc_sleep_ms(100);
	}
}

/*
 * Waits as gd_wait_settled() does and reads every role's pid into pids.
 * 0, or -1 if graspctl status failed.
 */
static int
settled_pids(struct gd *g, long pids[NROLES])
{
	cJSON *st;
	int    i;

	if ((st = gd_wait_settled(g, COMEBACK_MS)) == NULL)
		return -1;
	for (i = 0; i < NROLES; i++)
		pids[i] = rnum(st, roles[i], "pid");
	cJSON_Delete(st);
	return 0;
}

/* Starts graspd and waits for its roles; NULL-safe stop on failure. */
static int
gd_start(struct gd *g, const char *conf_text, const char *const extra_env[])
{
	cJSON *st;

	if (gd_spawn(g, conf_text, extra_env) == -1) {
		fprintf(stderr, "# cannot start graspd\n");
		return -1;
	}
	if ((st = gd_wait_settled(g, COMEBACK_MS)) == NULL) {
		fprintf(stderr, "# graspd did not answer in time\n");
		dump_log(g, 40);
		return -1;
	}
	cJSON_Delete(st);
	return 0;
}

/* SIGTERM, bounded wait, SIGKILL; removes the directory. */
static int
gd_stop(struct gd *g)
{
	int st = -1;

	/* kill(0) would signal this test's own process group. */
	if (g->pid > 0) {
		kill(g->pid, SIGTERM);
		if ((st = gd_reap(g, STOP_MS)) == -1) {
			fprintf(stderr, "# graspd did not stop; killing it\n");
			dump_log(g, 30);
			kill(-g->pid, SIGKILL);
			kill(g->pid, SIGKILL);
			st = gd_reap(g, STOP_MS);
		}
	} else
		st = g->status;
	cleanup_all();
	rm_tree(g->dir);
	g->dir[0] = '\0';
	return st;
}

/* Waits until role name is in state (and, if oldpid > 0, has another pid). */
static int
wait_role(struct gd *g, const char *name, const char *state, long oldpid,
    int timeout_ms)
{
	int64_t deadline = wsc_now_ms() + timeout_ms;
	cJSON  *st;
	int	ok;

	for (;;) {
		if ((st = status(g)) != NULL) {
			ok = strcmp(rstr(st, name, "state"), state) == 0 &&
			    (oldpid <= 0 || rnum(st, name, "pid") != oldpid);
			cJSON_Delete(st);
			if (ok)
				return 0;
		}
		if (wsc_now_ms() >= deadline)
			return -1;
		relayproc_sleep_ms(100);
	}
}

static int
log_has(const struct gd *g, const char *needle)
{
	char *text = t_slurp(g->log, NULL);
	int   found = text != NULL && strstr(text, needle) != NULL;

	free(text);
	return found;
}

/* ------------------------------------------------------------------ */

static void
test_configtest_sample_and_broken_files(void)
{
	char dir[PATH_MAX], f[PATH_MAX + 32], *out = NULL;
	int  rc;

	rc = run(&out,
	    "cd '%s' && env -u NGIT_RUN_PATH '%s/graspd' -n -f "
	    "etc/graspd.conf",
	    topdir, bindir);
	T_EQ_INT(rc, 0);
	T_CHECK(strstr(out, "configuration OK") != NULL);
	free(out);
	/* -n warns about an unknown NGIT_* variable as a start does. */
	rc = run(&out,
	    "cd '%s' && env -u NGIT_RUN_PATH NGIT_FROBNICATE=1 "
	    "'%s/graspd' -n -f etc/graspd.conf",
	    topdir, bindir);
	T_EQ_INT(rc, 0);
	T_CHECK(strstr(out, "NGIT_FROBNICATE is not a graspd setting") != NULL);
	free(out);
	rc = run(&out,
	    "cd '%s' && env -u NGIT_RUN_PATH '%s/graspd' -nv -f "
	    "etc/graspd.conf",
	    topdir, bindir);
	T_EQ_INT(rc, 0);
	T_CHECK(strstr(out, "run_path = /run/graspd") != NULL);
	free(out);
	T_EQ_INT(run(NULL, "'%s/graspd' -n", bindir), 0);

	T_ASSERT(make_tmpdir(dir, sizeof(dir)) == 0);
	snprintf(f, sizeof(f), "%s/bad.conf", dir);
	write_file(f, "nosuchkey = 1\n", 0644);
	rc = run(&out, "'%s/graspd' -n -f '%s'", bindir, f);
	T_CHECK(rc == 78);
	T_CHECK(strstr(out, ":1: unknown key \"nosuchkey\"") != NULL);
	free(out);
	write_file(f, "# fine\nmax_connections = 0\n", 0644);
	rc = run(&out, "'%s/graspd' -n -f '%s'", bindir, f);
	T_CHECK(rc == 78);
	T_CHECK(strstr(out,
		    "bad.conf:2: max_connections: \"0\" is out "
		    "of range") != NULL);
	free(out);
	write_file(f, "just words\n", 0644);
	rc = run(&out, "'%s/graspd' -n -f '%s'", bindir, f);
	T_CHECK(rc == 78);
	T_CHECK(strstr(out, "expected \"key = value\"") != NULL);
	free(out);
	rc = run(&out, "'%s/graspd' -n -f '%s/missing.conf'", bindir, dir);
	T_CHECK(rc == 78);
	T_CHECK(strstr(out, "missing.conf: No such file or directory") != NULL);
	free(out);
	rc = run(&out, "'%s/graspd' -x", bindir);
	T_CHECK(rc == 64);
	T_CHECK(strstr(out, "usage: graspd") != NULL);
	free(out);
	rm_tree(dir);
}

/* -h (usage on stdout) and -V (name and version) on every program; a
 * stray operand to a role is a usage error (78). */
static void
test_every_program_answers_h_and_V(void)
{
	static const char *const progs[] = { "graspd", "graspctl", "relayd",
		"syncd", "discoveryd", "historyd" };
	static const struct {
		const char *args;
		const char *want; /* with %s for the program */
		int	    status;
		int	    anywhere; /* else at the output's start */
		int	    roles_only;
	} probes[] = {
		{ "-h 2>/dev/null", "usage: %s [-", 0, 0, 0 },
		{ "-V 2>/dev/null", "%s 0.", 0, 0, 0 },
		/* The roles' skeleton (proc.c): an operand is a usage
		 * error, 78, before any configuration is read. */
		{ "stray", "usage: %s [-", 78, 1, 1 },
	};
	char	    want[64], *out = NULL;
	const char *dir;
	size_t	    i, j;
	int	    rc, ok;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		dir = i < 2 ? bindir : libexec;
		if (i >= 2 && !role_exists[i - 2])
			continue;
		for (j = 0; j < sizeof(probes) / sizeof(probes[0]); j++) {
			if (probes[j].roles_only && i < 2)
				continue;
			rc = run(&out, "'%s/%s' %s", dir, progs[i],
			    probes[j].args);
			snprintf(want, sizeof(want), probes[j].want, progs[i]);
			ok = rc == probes[j].status && out != NULL &&
			    (probes[j].anywhere ?
				    strstr(out, want) != NULL :
				    strncmp(out, want, strlen(want)) == 0);
			if (!ok)
				printf("# %s %s: %d: %s\n", progs[i],
				    probes[j].args, rc, out ? out : "");
			T_CHECK(ok);
			free(out);
			out = NULL;
		}
	}
}

static void
test_graspctl_usage_and_unreachable(void)
{
	struct gd g;
	char	  path[PATH_MAX + 96], *out = NULL;
	int	  rc;

	memset(&g, 0, sizeof(g));
	T_ASSERT(make_tmpdir(g.dir, sizeof(g.dir)) == 0);
	snprintf(g.run, sizeof(g.run), "%s", g.dir);
	T_EQ_INT(run(NULL, "'%s/graspctl'", bindir), 64);
	/* Each usage error names what was wrong before the usage. */
	T_EQ_INT(ctl(&g, &out, "frobnicate"), 64);
	T_CHECK(out &&
	    strstr(out,
		"graspctl: unknown command \"frobnicate\"\n"
		"usage: graspctl") != NULL);
	free(out);
	T_EQ_INT(ctl(&g, &out, "restart"), 64);
	T_CHECK(
	    out && strstr(out, "graspctl: restart: wrong arguments") != NULL);
	free(out);
	T_EQ_INT(ctl(&g, NULL, "restart nosuchrole"), 64);
	T_EQ_INT(ctl(&g, &out, "log loud"), 64);
	T_CHECK(out &&
	    strstr(out, "log takes verbose or brief, not \"loud\"") != NULL);
	free(out);
	out = NULL;

	rc = ctl(&g, &out, "status");
	T_CHECK(rc == 1);
	snprintf(path, sizeof(path),
	    "graspctl: graspd is not running (no "
	    "socket at %s/control-graspd.ipc)",
	    g.dir);
	T_CHECK(strstr(out, path) != NULL);
	free(out);
	rc = ctl(&g, &out, "show relayd");
	T_CHECK(rc == 1);
	T_CHECK(strstr(out, "graspctl: relayd is not running") != NULL);
	free(out);

	/* A socket file nobody listens on: a bounded wait, then an error. */
	snprintf(path, sizeof(path), "%s/control-graspd.ipc", g.dir);
	write_file(path, "", 0600);
	rc = ctl(&g, &out, "status");
	T_CHECK(rc == 1);
	T_CHECK(strstr(out, "graspctl: graspd does not answer") != NULL);
	free(out);
	rm_tree(g.dir);
}

/* The shared instance of the next cases; a NOTIFY_SOCKET listens. */
/* Not started until test_graspd_starts_every_role: pid -1, never 0. */
static struct gd G = { .pid = -1 };
static int	 G_up;
static int	 notify_fd = -1;
static char	 notify_dir[PATH_MAX];

/* Waits for one sd_notify datagram; returns it (static) or "". */
static const char *
notify_recv(int timeout_ms)
{
	static char    buf[256];
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	ssize_t	       n;

	setsockopt(notify_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(notify_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
test_graspd_starts_every_role(void)
{
	struct sockaddr_un sun;
	struct stat	   sb;
	cJSON		  *st;
	char		   env[PATH_MAX + 32], *out = NULL, *pidtext;
	char		   line[128];
	const char	  *extra[2] = { env, NULL };
	int		   i;

	T_ASSERT(make_tmpdir(notify_dir, sizeof(notify_dir)) == 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	T_ASSERT(strlen(notify_dir) + 8 < sizeof(sun.sun_path));
	memcpy(sun.sun_path, notify_dir, strlen(notify_dir));
	memcpy(sun.sun_path + strlen(notify_dir), "/notify", 8);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	T_ASSERT(notify_fd != -1);
	T_ASSERT(bind(notify_fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", sun.sun_path);

	T_ASSERT(gd_start(&G, NULL, extra) == 0);
	G_up = 1;
	T_EQ_STR(notify_recv(5000), "READY=1");
	st = status(&G);
	T_ASSERT(st != NULL);
	T_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(st, "ok")));
	T_EQ_INT((long)cJSON_GetNumberValue(cJSON_GetObjectItem(st, "pid")),
	    G.pid);
	for (i = 0; i < NROLES; i++) {
		if (role_exists[i]) {
			T_CHECK(strcmp(rstr(st, roles[i], "state"),
				    "running") == 0);
			T_CHECK(rnum(st, roles[i], "pid") > 0);
			T_CHECK(rnum(st, roles[i], "restarts") == 0);
		} else {
			printf("# %s does not exist: expecting it failed\n",
			    roles[i]);
			T_CHECK(
			    strcmp(rstr(st, roles[i], "state"), "failed") == 0);
			T_CHECK(strstr(rstr(st, roles[i], "reason"),
				    "cannot execute") != NULL);
		}
	}
	cJSON_Delete(st);

	/* The table people read. */
	T_EQ_INT(ctl(&G, &out, "status"), 0);
	T_CHECK(strncmp(out, "PROCESS", 7) == 0);
	snprintf(line, sizeof(line), "\ngraspd      running   %d ", (int)G.pid);
	T_CHECK(strstr(out, line) != NULL);
	for (i = 0; i < NROLES; i++) {
		snprintf(line, sizeof(line), "\n%-11s %s", roles[i],
		    role_exists[i] ? "running" : "failed");
		T_CHECK(strstr(out, line) != NULL);
	}
	free(out);

	/* graspd made the run directory and holds its pid file. */
	T_ASSERT(stat(G.run, &sb) == 0);
	T_CHECK((sb.st_mode & 0777) == 0755);
	snprintf(env, sizeof(env), "%s/graspd.pid", G.run);
	pidtext = t_slurp(env, NULL);
	T_ASSERT(pidtext != NULL);
	T_EQ_INT(atoi(pidtext), G.pid);
	free(pidtext);

	T_CHECK(relayproc_wait_port("127.0.0.1", G.port, 2000) == 0);
}

/* A role's argv and environment as it was exec'd. */
static void
test_roles_get_their_arguments_and_readiness_fd(void)
{
	cJSON *st;
	char   path[64], *text;
	size_t n;
	long   pid;
	FILE  *f;
	char   buf[65536];

	T_ASSERT(G_up);
	T_ASSERT(role_exists[0]);
	st = status(&G);
	T_ASSERT(st != NULL);
	pid = rnum(st, "relayd", "pid");
	cJSON_Delete(st);
	T_ASSERT(pid > 0);
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	T_ASSERT((f = fopen(path, "r")) != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	/* argv[0] is the role's name; -d because graspd runs with -d. */
	T_EQ_INT(n, sizeof("relayd\0-d"));
	T_CHECK(memcmp(buf, "relayd\0-d\0", n) == 0);

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	T_ASSERT((f = fopen(path, "r")) != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (text = buf; text < buf + n; text += strlen(text) + 1) {
		T_CHECK(strncmp(text, "NOTIFY_SOCKET=", 14) != 0);
		if (strncmp(text, "GRASPD_READY_FD=", 16) == 0)
			T_EQ_STR(text, "GRASPD_READY_FD=3");
	}
}

/* Publishing state: one connection, the ids relayd accepted. */
struct pubs {
	struct wsc *ws;
	int	    seq;
	char	    ids[512][EVENT_ID_HEX_LEN + 1];
	int	    nids;
	int	    tries, oks, errors;
};

/* Publishes one new 10317 (accepted by any key); 1 ok, 0 refused, -1. */
static int
publish_one(struct pubs *p)
{
	struct event *ev;
	uint8_t	      sk[SECKEY_LEN];
	int	      ok = -1;

	if (p->ws == NULL &&
	    (p->ws = wsc_connect("127.0.0.1", G.port, "/", 1000)) == NULL) {
		p->errors++;
		return -1;
	}
	memset(sk, 0, sizeof(sk));
	sk[0] = 0x5a;
	/* A key per event: 10317 is replaceable, one per author. */
	p->seq++;
	sk[30] = (uint8_t)(p->seq >> 8);
	sk[31] = (uint8_t)p->seq;
	if ((ev = event_new_signed(sk, time(NULL), 10317, "[]", "")) == NULL)
		abort();
	p->tries++;
	if (nostr_publish(p->ws, ev, 3000, &ok, NULL) == -1) {
		wsc_drop(p->ws);
		p->ws = NULL;
		p->errors++;
		ok = -1;
	} else if (ok && p->nids < (int)(sizeof(p->ids) / sizeof(p->ids[0]))) {
		snprintf(p->ids[p->nids++], sizeof(p->ids[0]), "%s",
		    ev->id_hex);
		p->oks++;
	}
	event_destroy(ev);
	return ok;
}

/* relayd's /metrics text, or NULL.  Caller frees. */
static char *
metrics_text(void)
{
	char *h = NULL, *body = NULL;
	int   status = 0;

	if (http_get("127.0.0.1", G.port, "/metrics", NULL, 5000, &status, &h,
		&body) == -1 ||
	    status != 200) {
		free(body);
		body = NULL;
	}
	free(h);
	return body;
}

/* The value of the /metrics sample line "name value", or -1. */
static double
metric_now(const char *name)
{
	char  *text = metrics_text(), line[256], *p;
	double v = -1;

	snprintf(line, sizeof(line), "\n%s ", name);
	if (text != NULL && (p = strstr(text, line)) != NULL)
		v = strtod(p + strlen(line), NULL);
	free(text);
	return v;
}

/* Waits at most timeout_ms for the sample name to read want. */
static int
metric_becomes(const char *name, double want, int timeout_ms)
{
	int64_t deadline = wsc_now_ms() + timeout_ms;

	while (metric_now(name) != want) {
		if (wsc_now_ms() >= deadline)
			return -1;
		relayproc_sleep_ms(200);
	}
	return 0;
}

/*
 * Checks the Prometheus text format of /metrics: every sample's family
 * (its name up to '{', less a histogram's _bucket/_sum/_count) has one
 * "# HELP" and one "# TYPE" line before its first sample, and its samples
 * are one run.  Returns NULL, or what is wrong (static).
 */
static const char *
exposition_error(const char *text)
{
	static char why[256];
	char	    fam[128 + 2], cur[128 + 2] = "", typed[128] = "";
	const char *l, *e;
	size_t	    n;
	int	    helped = 0;
	struct buf  done = BUF_INIT;

	for (l = text; *l; l = *e ? e + 1 : e) {
		e = l + strcspn(l, "\n");
		n = (size_t)(e - l);
		if (n > 7 && strncmp(l, "# HELP ", 7) == 0) {
			snprintf(fam, sizeof(fam), "%.*s",
			    (int)strcspn(l + 7, " \n"), l + 7);
			helped = 1;
			snprintf(cur, sizeof(cur), "%s", fam);
			continue;
		}
		if (n > 7 && strncmp(l, "# TYPE ", 7) == 0) {
			snprintf(typed, sizeof(typed), "%.*s",
			    (int)strcspn(l + 7, " \n"), l + 7);
			if (!helped || strcmp(typed, cur) != 0) {
				snprintf(why, sizeof(why),
				    "TYPE without its "
				    "HELP: %.*s",
				    (int)n, l);
				goto bad;
			}
			/* ",fam," in done: typed twice. */
			snprintf(fam, sizeof(fam), ",%s,", typed);
			if (done.b_data != NULL && strstr(done.b_data, fam)) {
				snprintf(why, sizeof(why),
				    "family %s typed "
				    "twice (samples not in one run)",
				    typed);
				goto bad;
			}
			buf_adds(&done, fam);
			buf_addc(&done, '\0');
			done.b_len--;
			continue;
		}
		if (n == 0 || *l == '#')
			continue;
		snprintf(fam, sizeof(fam), "%.*s", (int)strcspn(l, "{ "), l);
		if (strcmp(fam, typed) != 0 &&
		    !(strncmp(fam, typed, strlen(typed)) == 0 &&
			(strcmp(fam + strlen(typed), "_bucket") == 0 ||
			    strcmp(fam + strlen(typed), "_sum") == 0 ||
			    strcmp(fam + strlen(typed), "_count") == 0))) {
			snprintf(why, sizeof(why),
			    "sample without its TYPE "
			    "line: %.*s",
			    (int)n, l);
			goto bad;
		}
		helped = 0;
	}
	buf_free(&done);
	return NULL;
bad:
	buf_free(&done);
	return why;
}

static void
test_metrics_name_every_family_once_with_help_and_type(void)
{
	struct pubs p;
	char	   *text, **evs = NULL;
	const char *why;
	size_t	    nev = 0;

	T_ASSERT(G_up);
	memset(&p, 0, sizeof(p));
	T_ASSERT(publish_one(&p) == 1);
	T_ASSERT(
	    nostr_req(p.ws, "m", "{\"limit\":1}", 5000, &evs, &nev, NULL) == 0);
	nostr_events_free(evs);
	wsc_close(p.ws);
	/* Every role's snapshot and the supervisor's have come. */
	T_CHECK(metric_becomes("graspd_role_up{role=\"syncd\"}", 1,
		    COMEBACK_MS) == 0);
	T_CHECK(metric_becomes("graspd_role_ready{role=\"syncd\"}", 1,
		    COMEBACK_MS) == 0);
	T_ASSERT((text = metrics_text()) != NULL);
	why = exposition_error(text);
	if (why != NULL)
		printf("# %s\n", why);
	T_CHECK(why == NULL);
	T_CHECK(strstr(text,
		    "\n# TYPE graspd_relay_ok_latency_seconds "
		    "histogram\n") != NULL);
	T_CHECK(strstr(text, "\ngraspd_build_info{version=\"") != NULL);
	T_CHECK(strstr(text, "\n# TYPE graspd_role_restarts_total counter\n") !=
	    NULL);
	T_CHECK(strstr(text, "\ngraspd_role_failed{role=\"historyd\"} 0\n") !=
	    NULL);
	free(text);
	T_CHECK(metric_now("graspd_relay_ok_latency_seconds_count{role="
			   "\"relayd\"}") >= 1);
	T_CHECK(metric_now("graspd_relay_ok_latency_seconds_bucket{role="
			   "\"relayd\",le=\"+Inf\"}") >= 1);
	T_CHECK(metric_now("graspd_relay_req_eose_seconds_count{role="
			   "\"relayd\"}") >= 1);
}

/*
 * A role whose snapshot is stale counts as not ready (relay_metrics.c);
 * its graspd_role_ready sample joins the others of the family, under
 * their one TYPE line, not after every other family.
 */
static void
test_metrics_stale_role_sample_stays_in_its_family(void)
{
	long	    pids[NROLES];
	char	   *text;
	const char *why;

	T_ASSERT(G_up);
	if (!role_exists[2] || !role_exists[1])
		return;
	T_ASSERT(settled_pids(&G, pids) == 0);
	T_ASSERT(metric_becomes("graspd_role_ready{role=\"syncd\"}", 1,
		     COMEBACK_MS) == 0);
	T_ASSERT(kill((pid_t)pids[2], SIGSTOP) == 0);
	T_CHECK(metric_becomes("graspd_role_ready{role=\"discoveryd\"}", 0,
		    COMEBACK_MS) == 0);
	text = metrics_text();
	T_CHECK(kill((pid_t)pids[2], SIGCONT) == 0);
	T_ASSERT(text != NULL);
	if ((why = exposition_error(text)) != NULL)
		printf("# %s\n", why);
	T_CHECK(why == NULL);
	T_CHECK(strstr(text, "\ngraspd_role_ready{role=\"discoveryd\"} 0\n") !=
	    NULL);
	free(text);
	T_CHECK(metric_becomes("graspd_role_ready{role=\"discoveryd\"}", 1,
		    COMEBACK_MS) == 0);
}

static void
test_kill9_each_role_comes_back_while_clients_publish(void)
{
	struct pubs *p;
	struct buf   filter = BUF_INIT;
	struct wsc  *ws;
	cJSON	    *st;
	char	   **evs = NULL;
	size_t	     nev = 0;
	long	     before[NROLES], after[NROLES];
	int64_t	     deadline;
	int	     i, j, back, rc, fails;

	T_ASSERT(G_up);
	T_ASSERT((p = calloc(1, sizeof(*p))) != NULL);
	for (i = 0; i < NROLES; i++) {
		if (!role_exists[i])
			continue;
		T_ASSERT(settled_pids(&G, before) == 0);
		T_ASSERT(before[i] > 0);
		/* A few events before, so that there is something to lose. */
		for (j = 0; j < 3; j++)
			T_CHECK(publish_one(p) == 1);

		T_ASSERT(kill((pid_t)before[i], SIGKILL) == 0);
		deadline = wsc_now_ms() + COMEBACK_MS;
		back = fails = 0;
		while (!back && wsc_now_ms() < deadline) {
			rc = publish_one(p);
			if (rc != 1)
				fails++;
			if ((st = status(&G)) != NULL) {
				back = strcmp(rstr(st, roles[i], "state"),
					   "running") == 0 &&
				    rnum(st, roles[i], "pid") != before[i];
				for (j = 0; j < NROLES; j++)
					after[j] = rnum(st, roles[j], "pid");
				cJSON_Delete(st);
			}
			relayproc_sleep_ms(50);
		}
		printf("# %s killed: back %s, %d publish failures meanwhile\n",
		    roles[i], back ? "yes" : "no", fails);
		if (!back)
			dump_log(&G, 30);
		T_ASSERT(back);
		/* Nobody else was restarted. */
		for (j = 0; j < NROLES; j++)
			if (j != i)
				T_EQ_INT(after[j], before[j]);
		/* relayd served every event while another role was down. */
		if (i != 0)
			T_EQ_INT(fails, 0);
		T_CHECK(publish_one(p) == 1);
	}

	/* Every event that got OK true is stored, relayd's death or not. */
	T_ASSERT(p->nids > 0);
	buf_adds(&filter, "{\"ids\":[");
	for (i = 0; i < p->nids; i++)
		buf_printf(&filter, "%s\"%s\"", i ? "," : "", p->ids[i]);
	buf_printf(&filter, "],\"limit\":%d}", p->nids);
	ws = wsc_connect("127.0.0.1", G.port, "/", 5000);
	T_ASSERT(ws != NULL);
	rc = nostr_req(ws, "ids", filter.b_data, 10000, &evs, &nev, NULL);
	printf("# %d events accepted (%d tries), %zu found again\n", p->nids,
	    p->tries, nev);
	T_CHECK(rc == 0);
	T_EQ_INT(nev, p->nids);
	nostr_events_free(evs);
	wsc_close(ws);
	if (p->ws != NULL)
		wsc_close(p->ws);
	buf_free(&filter);
	free(p);
}

static void
test_graspctl_restart_historyd_changes_only_its_pid(void)
{
	cJSON *st;
	char  *out = NULL;
	long   before[NROLES];
	int    j, rc;

	T_ASSERT(G_up);
	if (!role_exists[3]) {
		printf("# skip: %s/historyd does not exist\n", libexec);
		return;
	}
	T_ASSERT(settled_pids(&G, before) == 0);
	rc = ctl(&G, &out, "restart historyd");
	T_CHECK(rc == 0);
	T_CHECK(strstr(out, "historyd: restart requested") != NULL);
	free(out);
	T_ASSERT(
	    wait_role(&G, "historyd", "running", before[3], COMEBACK_MS) == 0);
	st = status(&G);
	T_ASSERT(st != NULL);
	for (j = 0; j < NROLES; j++)
		if (j != 3)
			T_CHECK(rnum(st, roles[j], "pid") == before[j]);
	/* A requested restart is not a crash: no backoff, no exit reason. */
	T_CHECK(strcmp(rstr(st, "historyd", "reason"), "") == 0);
	T_CHECK(rnum(st, "historyd", "restarts") >= 1);
	cJSON_Delete(st);
}

static void
test_stopped_role_stays_down_until_started(void)
{
	const char *name = NULL;
	cJSON	   *st;
	char	   *out = NULL, sample[128];
	long	    pid;
	int	    i;

	T_ASSERT(G_up);
	for (i = NROLES - 1; i > 0 && name == NULL; i--)
		if (role_exists[i])
			name = roles[i];
	if (name == NULL)
		name = "relayd";
	st = status(&G);
	T_ASSERT(st != NULL);
	pid = rnum(st, name, "pid");
	cJSON_Delete(st);
	snprintf(sample, sizeof(sample), "graspd_role_up{role=\"%s\"}", name);
	T_CHECK(metric_becomes(sample, 1, COMEBACK_MS) == 0);
	T_EQ_INT(ctl(&G, NULL, "stop %s", name), 0);
	T_ASSERT(wait_role(&G, name, "stopped", 0, COMEBACK_MS) == 0);
	T_CHECK(!alive((pid_t)pid));
	/* /metrics follows: the supervisor's figure, and the role's last
	 * snapshot expires (3 stats periods of a second under NGIT_TEST). */
	T_CHECK(metric_becomes(sample, 0, COMEBACK_MS) == 0);
	snprintf(sample, sizeof(sample), "graspd_role_ready{role=\"%s\"}",
	    name);
	T_CHECK(metric_becomes(sample, 0, COMEBACK_MS) == 0);
	relayproc_sleep_ms(2500);
	st = status(&G);
	T_ASSERT(st != NULL);
	T_EQ_STR(rstr(st, name, "state"), "stopped");
	/* No process: "pid": null, never 0 (kill 0 is the caller's group). */
	T_CHECK(cJSON_IsNull(cJSON_GetObjectItem(role_of(st, name), "pid")));
	cJSON_Delete(st);
	T_EQ_INT(ctl(&G, &out, "start %s", name), 0);
	free(out);
	T_ASSERT(wait_role(&G, name, "running", pid, COMEBACK_MS) == 0);
	/* Errors come back as errors. */
	T_EQ_INT(ctl(&G, &out, "start graspd"), 64);
	free(out);
}

static void
test_direct_commands_work_while_graspd_is_stopped(void)
{
	char *out = NULL;
	int   rc;

	T_ASSERT(G_up);
	T_EQ_INT(ctl(&G, &out, "show graspd"), 0);
	T_CHECK(strstr(out, "pid: ") != NULL);
	T_CHECK(strstr(out, "roles:\n  relayd: running") != NULL);
	free(out);
	T_EQ_INT(ctl(&G, &out, "stats graspd"), 0);
	T_CHECK(strstr(out, "graspd_role_up{role=\"relayd\"} 1") != NULL);
	free(out);
	T_EQ_INT(ctl(&G, &out, "-j log verbose graspd"), 0);
	T_CHECK(strstr(out, "\"level\":\"debug\"") != NULL);
	free(out);
	T_EQ_INT(ctl(&G, &out, "log brief graspd"), 0);
	free(out);
	if (!role_exists[0])
		return;

	/* The supervisor frozen: its socket does not answer, relayd's does. */
	T_ASSERT(kill(G.pid, SIGSTOP) == 0);
	rc = ctl(&G, &out, "status");
	T_CHECK(rc == 1);
	T_CHECK(strstr(out, "graspd does not answer") != NULL);
	free(out);
	rc = ctl(&G, &out, "show relayd");
	T_CHECK(rc == 0);
	T_CHECK(out[0] != '\0');
	free(out);
	rc = ctl(&G, &out, "stats relayd");
	T_CHECK(rc == 0);
	T_CHECK(strstr(out, "graspd_relay_") != NULL);
	free(out);
	rc = ctl(&G, &out, "log verbose");
	/* Every process with a socket was asked; graspd did not answer. */
	T_CHECK(strstr(out, "relayd: log verbose") != NULL);
	T_CHECK(strstr(out, "graspd does not answer") != NULL);
	free(out);
	T_ASSERT(kill(G.pid, SIGCONT) == 0);
	T_EQ_INT(ctl(&G, &out, "log brief"), 0);
	free(out);
}

static void
test_sigterm_stops_every_role_relayd_last(void)
{
	char *text, *p_relayd, *p_other;
	long  pids[NROLES];
	int   i, rc;

	T_ASSERT(G_up);
	T_ASSERT(settled_pids(&G, pids) == 0);
	T_ASSERT(kill(G.pid, SIGTERM) == 0);
	rc = gd_reap(&G, STOP_MS);
	G_up = 0;
	T_EQ_INT(rc, 0);
	T_EQ_STR(notify_recv(2000), "STOPPING=1");
	for (i = 0; i < NROLES; i++)
		T_CHECK(!alive((pid_t)pids[i]));
	text = t_slurp(G.log, NULL);
	T_ASSERT(text != NULL);
	/* relayd is told to stop only once the others have exited. */
	p_relayd = strstr(text, "graspd: stopping relayd");
	T_CHECK(p_relayd != NULL);
	for (i = 1; i < NROLES; i++) {
		char needle[64];

		if (!role_exists[i])
			continue;
		snprintf(needle, sizeof(needle), "graspd: %s (pid %ld) ",
		    roles[i], pids[i]);
		p_other = strstr(text, needle);
		T_CHECK(
		    p_other != NULL && p_relayd != NULL && p_other < p_relayd);
	}
	T_CHECK(strstr(text, "graspd: exiting with status 0") != NULL);
	free(text);
	/* The pid file and the control socket are gone with it. */
	{
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/graspd.pid", G.run);
		T_CHECK(access(path, F_OK) == -1);
		snprintf(path, sizeof(path), "%s/control-graspd.ipc", G.run);
		T_CHECK(access(path, F_OK) == -1);
	}
}

/* "graspctl cmd" on g: 1 if it exits want_rc and says want, else 0. */
static int
ctl_says(const struct gd *g, const char *cmd, int want_rc, const char *want)
{
	char *out = NULL;
	int   rc, ok;

	rc = ctl(g, &out, "%s", cmd);
	ok = rc == want_rc && out != NULL && strstr(out, want) != NULL;
	if (!ok)
		printf("# graspctl %s: %d: %s\n", cmd, rc, out ? out : "");
	free(out);
	return ok;
}

/*
 * How many roles from index from on now run with another pid than in
 * pids (each printed), or -1 when graspctl status failed; pids takes the
 * pids of now.
 */
static int
pids_changed(const struct gd *g, long pids[NROLES], int from)
{
	cJSON *st;
	long   pid;
	int    i, n = 0;

	if ((st = status(g)) == NULL)
		return -1;
	for (i = 0; i < NROLES; i++) {
		pid = rnum(st, roles[i], "pid");
		if (i >= from && pid != pids[i]) {
			printf("# %s: pid %ld, was %ld\n", roles[i], pid,
			    pids[i]);
			n++;
		}
		pids[i] = pid;
	}
	cJSON_Delete(st);
	return n;
}

static void
test_reload_keeps_running_on_a_broken_file_restarts_on_a_change(void)
{
	struct gd h;
	cJSON	 *st;
	char	 *body = NULL;
	long	  before[NROLES];
	int	  i, status_code = 0;

	T_ASSERT(gd_start(&h, "relay_description = first\n", NULL) == 0);
	T_ASSERT(settled_pids(&h, before) == 0);

	/* A broken file: SIGHUP logs why and changes nothing. */
	write_file(h.conf, "relay_description = first\nnosuchkey = 2\n", 0644);
	T_ASSERT(kill(h.pid, SIGHUP) == 0);
	relayproc_sleep_ms(1500);
	T_CHECK(log_has(&h, "reload: "));
	T_CHECK(log_has(&h,
	    "unknown key \"nosuchkey\"; keeping the running "
	    "configuration"));
	st = status(&h);
	T_ASSERT(st != NULL);
	for (i = 0; i < NROLES; i++) {
		T_CHECK(rnum(st, roles[i], "pid") == before[i]);
		if (role_exists[i])
			T_CHECK(strcmp(rstr(st, roles[i], "state"),
				    "running") == 0);
	}
	cJSON_Delete(st);
	/* graspctl reload says so and fails. */
	T_CHECK(ctl_says(&h, "reload", 1, "unknown key \"nosuchkey\""));

	/* The same configuration again: nothing restarts. */
	write_file(h.conf, "# the same\nrelay_description = first\n", 0644);
	T_CHECK(ctl_says(&h, "reload", 0, "configuration unchanged"));
	relayproc_sleep_ms(500);
	T_EQ_INT(pids_changed(&h, before, 0), 0);

	/* A change of relayd's key: relayd alone restarts and serves the
	 * new value. */
	write_file(h.conf, "relay_description = second\n", 0644);
	T_CHECK(ctl_says(&h, "reload", 0, "configuration changed"));
	if (role_exists[0])
		T_CHECK(wait_role(&h, "relayd", "running", before[0],
			    COMEBACK_MS) == 0);
	relayproc_sleep_ms(500);
	/* before[0] takes relayd's new pid. */
	T_EQ_INT(pids_changed(&h, before, 1), 0);
	if (role_exists[0]) {
		T_CHECK(relayproc_wait_port("127.0.0.1", h.port, 5000) == 0);
		T_CHECK(http_get("127.0.0.1", h.port, "/",
			    "Accept: application/nostr+json\r\n", 5000,
			    &status_code, NULL, &body) == 0);
		T_CHECK(body != NULL && strstr(body, "\"second\"") != NULL);
		free(body);
	}

	/* log_level: applied live; no role restarts, a client stays. */
	if (role_exists[0]) {
		struct wsc *w;
		char	  **evs = NULL;
		size_t	    nev = 0;

		T_ASSERT(
		    (w = wsc_connect("127.0.0.1", h.port, "/", 5000)) != NULL);
		write_file(h.conf,
		    "relay_description = second\n"
		    "log_level = debug\n",
		    0644);
		T_EQ_INT(kill(h.pid, SIGHUP), 0);
		relayproc_sleep_ms(1500);
		T_EQ_INT(pids_changed(&h, before, 0), 0);
		for (i = 0; i < NROLES; i++) {
			char line[64];

			snprintf(line, sizeof(line),
			    "%s: reload: log level "
			    "applied",
			    roles[i]);
			if (role_exists[i])
				T_CHECK(log_has(&h, line));
		}
		/* The connection made before the reload still works. */
		T_CHECK(nostr_req(w, "r", "{\"limit\":1}", 5000, &evs, &nev,
			    NULL) == 0);
		nostr_events_free(evs);
		wsc_close(w);
	}

	/* graspctl stop: everything ends, graspctl returns after graspd. */
	T_CHECK(ctl_says(&h, "stop", 0, "graspd stopped"));
	T_EQ_INT(gd_reap(&h, 2000), 0);
	gd_stop(&h);
}

/* Start times of "NAME started" lines in the log, in ms of the day. */
static int
start_times(const struct gd *g, const char *name, long *t, int max)
{
	char *text = t_slurp(g->log, NULL), *line, needle[64];
	int   n = 0, hh, mm, ss, ms;

	if (text == NULL)
		return 0;
	snprintf(needle, sizeof(needle), "graspd: %s started", name);
	for (line = strtok(text, "\n"); line != NULL && n < max;
	     line = strtok(NULL, "\n"))
		if (strstr(line, needle) != NULL &&
		    sscanf(line, "%d:%d:%d.%d", &hh, &mm, &ss, &ms) == 4)
			t[n++] = ((hh * 60L + mm) * 60 + ss) * 1000 + ms;
	free(text);
	return n;
}

/* A directory of role programs: the real relayd, the others written by
 * the test with fake_role(); GRASPD_LIBEXEC=fake in env. */
static int
fake_libexec(char *fake, size_t len, char *env, size_t envlen)
{
	char path[PATH_MAX + 32], real[PATH_MAX + 32];

	if (make_tmpdir(fake, len) != 0)
		return -1;
	snprintf(real, sizeof(real), "%s/relayd", libexec);
	snprintf(path, sizeof(path), "%s/relayd", fake);
	snprintf(env, envlen, "GRASPD_LIBEXEC=%s", fake);
	return symlink(real, path);
}

/* A role program in fake: a shell script. */
static int
fake_role(const char *fake, const char *name, const char *script)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", fake, name);
	return write_file(path, script, 0755);
}

/*
 * Spawns graspd in f on fake role programs (fake_libexec() in fake): the
 * real relayd and the scripts syncd, disc and hist as syncd, discoveryd
 * and historyd; more_env ("KEY=VALUE" or NULL) after their
 * GRASPD_LIBEXEC.  0, or -1.
 */
static int
fake_graspd(struct gd *f, char *fake, size_t len, const char *syncd,
    const char *disc, const char *hist, const char *more_env)
{
	char	    env[PATH_MAX + 32];
	const char *extra[3] = { env, more_env, NULL };

	if (fake_libexec(fake, len, env, sizeof(env)) != 0 ||
	    fake_role(fake, "syncd", syncd) != 0 ||
	    fake_role(fake, "discoveryd", disc) != 0 ||
	    fake_role(fake, "historyd", hist) != 0)
		return -1;
	return gd_spawn(f, NULL, extra);
}

/* 1, saying so, when libexec has no relayd to run a case with. */
static int
no_relayd(void)
{
	if (role_exists[0])
		return 0;
	printf("# skip: no relayd in %s\n", libexec);
	return 1;
}

static void
test_exit78_is_permanent_and_crash_loops_fail(void)
{
	struct gd f;
	cJSON	 *st;
	char	  fake[PATH_MAX], path[PATH_MAX + 32], *out = NULL, *fds;
	long	  relayd_pid, hist_pid, t[8];
	int64_t	  t0;
	int	  n, i, backoff_seen = 0;
	int64_t	  deadline;

	if (no_relayd())
		return;
	/*
	 * syncd: a configuration error; it lists its descriptors first.
	 * discoveryd: dies at once, every time.  historyd: ready through
	 * the pipe, then deaf to SIGTERM.
	 */
	T_ASSERT(
	    fake_graspd(&f, fake, sizeof(fake),
		"#!/bin/sh\n(echo; ls /proc/$$/fd) > \"$0.fds\"\nexit 78\n",
		"#!/bin/sh\nexit 3\n",
		"#!/bin/sh\ntrap '' TERM\necho READY=1 >&3\nexec 3>&-\n"
		"while :; do sleep 1; done\n",
		NULL) == 0);
	T_ASSERT(wait_role(&f, "syncd", "failed", 0, COMEBACK_MS) == 0);
	st = status(&f);
	T_ASSERT(st != NULL);
	relayd_pid = rnum(st, "relayd", "pid");
	T_CHECK(strstr(rstr(st, "syncd", "reason"), "exited 78") != NULL);
	T_EQ_STR(rstr(st, "syncd", "last_exit"), "exited 78");
	T_CHECK(cJSON_IsNull(cJSON_GetObjectItem(role_of(st, "syncd"), "pid")));
	cJSON_Delete(st);

	/* A role that ignores SIGTERM gets SIGKILL (its group) 5 s later. */
	T_ASSERT(wait_role(&f, "historyd", "running", 0, COMEBACK_MS) == 0);
	st = status(&f);
	T_ASSERT(st != NULL);
	hist_pid = rnum(st, "historyd", "pid");
	cJSON_Delete(st);
	t0 = wsc_now_ms();
	T_EQ_INT(ctl(&f, NULL, "stop historyd"), 0);
	T_ASSERT(wait_role(&f, "historyd", "stopped", 0, COMEBACK_MS) == 0);
	printf("# historyd stopped %lld ms after the request\n",
	    (long long)(wsc_now_ms() - t0));
	T_CHECK(wsc_now_ms() - t0 >= 4900);
	/* Its helper (sleep) went too: a zombie at most, for init. */
	T_EQ_INT(group_alive((pid_t)hist_pid), 0);
	st = status(&f);
	T_ASSERT(st != NULL);
	T_EQ_STR(rstr(st, "historyd", "last_exit"), "killed by signal 9");
	cJSON_Delete(st);
	T_CHECK(log_has(&f, "still runs 5 s after SIGTERM: SIGKILL"));

	/* What a role inherits: 0-2 and the readiness pipe on 3, no more. */
	snprintf(path, sizeof(path), "%s/syncd.fds", fake);
	fds = t_slurp(path, NULL);
	T_ASSERT(fds != NULL);
	for (i = 0; i < 10; i++) {
		char needle[16];

		snprintf(needle, sizeof(needle), "\n%d\n", i);
		if (i <= 3)
			T_CHECK(strstr(fds, needle) != NULL);
		else
			T_CHECK(strstr(fds, needle) == NULL);
	}
	free(fds);

	/* discoveryd: backoff, then failed after five fast deaths. */
	deadline = wsc_now_ms() + 40000;
	for (;;) {
		st = status(&f);
		T_ASSERT(st != NULL);
		if (strcmp(rstr(st, "discoveryd", "state"), "backoff") == 0 &&
		    strstr(rstr(st, "discoveryd", "reason"),
			"exited 3 before "
			"ready; restarting in") != NULL)
			backoff_seen = 1;
		if (strcmp(rstr(st, "discoveryd", "state"), "failed") == 0)
			break;
		cJSON_Delete(st);
		T_ASSERT(wsc_now_ms() < deadline);
		relayproc_sleep_ms(200);
	}
	T_CHECK(backoff_seen);
	T_CHECK(strstr(rstr(st, "discoveryd", "reason"),
		    "5 fast deaths in a "
		    "row (last: exited 3)") != NULL);
	T_EQ_INT(rnum(st, "discoveryd", "restarts"), 4);
	/* syncd was never tried again, relayd never touched. */
	T_EQ_INT(rnum(st, "syncd", "restarts"), 0);
	T_EQ_STR(rstr(st, "relayd", "state"), "running");
	T_EQ_INT(rnum(st, "relayd", "pid"), relayd_pid);
	cJSON_Delete(st);
	/* The delays doubled: 1, 2, 4, 8 s between the five starts. */
	n = start_times(&f, "discoveryd", t, 8);
	T_EQ_INT(n, 5);
	for (i = 1; i < n; i++) {
		long gap = t[i] - t[i - 1], want = 1000L << (i - 1);

		printf("# discoveryd start %d after %ld ms\n", i + 1, gap);
		T_CHECK(gap >= want - 50 && gap < want + 1500);
	}
	/* graspd finished its start-up with failed roles: it is ready. */
	T_CHECK(log_has(&f, "graspd: ready: relayd running, syncd failed"));

	/* graspctl start tries again; 78 again. */
	T_EQ_INT(ctl(&f, &out, "start syncd"), 0);
	free(out);
	relayproc_sleep_ms(300);
	T_ASSERT(wait_role(&f, "syncd", "failed", 0, COMEBACK_MS) == 0);
	st = status(&f);
	T_ASSERT(st != NULL);
	T_EQ_INT(rnum(st, "syncd", "restarts"), 1);
	cJSON_Delete(st);

	/* relayd, ready for more than 10 s: restarted at once, no backoff. */
	T_ASSERT(kill((pid_t)relayd_pid, SIGKILL) == 0);
	t0 = wsc_now_ms();
	T_ASSERT(
	    wait_role(&f, "relayd", "running", relayd_pid, COMEBACK_MS) == 0);
	printf("# relayd back %lld ms after SIGKILL\n",
	    (long long)(wsc_now_ms() - t0));
	T_CHECK(wsc_now_ms() - t0 < 900);
	T_CHECK(!log_has(&f, "relayd: restarting in"));

	T_EQ_INT(gd_stop(&f), 0);
	rm_tree(fake);
}

/*
 * A role that reports progress (EXTEND=1 lines, common/ready.h) is given
 * more time to become ready; one that says nothing is stopped when the
 * readiness timeout ends.  GRASPD_READY_TIMEOUT shortens it to 1.5 s.
 */
static void
test_progress_extends_the_readiness_wait(void)
{
	struct gd f;
	cJSON	 *st;
	char	  fake[PATH_MAX];
	long	  sync_pid;
	int64_t	  deadline;
	int	  i;

	if (no_relayd())
		return;
	/*
	 * syncd: 4 s of start-up work with progress every 0.5 s, ready.
	 * discoveryd: starts and never says anything.  historyd: ready at
	 * once.
	 */
	T_ASSERT(
	    fake_graspd(&f, fake, sizeof(fake),
		"#!/bin/sh\ni=0\nwhile [ $i -lt 8 ]; do echo EXTEND=1 >&3; "
		"sleep 0.5; i=$((i + 1)); done\n"
		"echo READY=1 >&3\nexec 3>&-\nwhile :; do sleep 1; done\n",
		"#!/bin/sh\nwhile :; do sleep 1; done\n",
		"#!/bin/sh\necho READY=1 >&3\nexec 3>&-\n"
		"while :; do sleep 1; done\n",
		"GRASPD_READY_TIMEOUT=1.5") == 0);
	/* syncd: still starting at 2.5 s (past one timeout), then running
	 * in its first process. */
	relayproc_sleep_ms(2500);
	st = status(&f);
	T_ASSERT(st != NULL);
	T_EQ_STR(rstr(st, "syncd", "state"), "starting");
	sync_pid = rnum(st, "syncd", "pid");
	cJSON_Delete(st);
	T_ASSERT(wait_role(&f, "syncd", "running", 0, COMEBACK_MS) == 0);
	st = status(&f);
	T_ASSERT(st != NULL);
	T_EQ_INT(rnum(st, "syncd", "pid"), sync_pid);
	T_EQ_INT(rnum(st, "syncd", "restarts"), 0);
	cJSON_Delete(st);
	T_CHECK(!log_has(&f, "syncd (pid"));
	/* discoveryd: stopped for silence, and started again. */
	deadline = wsc_now_ms() + 20000;
	for (i = 0;
	     !log_has(&f, "discoveryd (pid") || !log_has(&f, "not ready");
	     i++) {
		T_ASSERT(wsc_now_ms() < deadline);
		relayproc_sleep_ms(200);
	}
	T_CHECK(log_has(&f, "s after its start: stopping it"));
	T_EQ_INT(gd_stop(&f), 0);
	rm_tree(fake);
}

static void
test_startup_fails_when_relayd_cannot_run(void)
{
	struct gd   g;
	char	    fake[PATH_MAX], path[PATH_MAX + 32], env[PATH_MAX + 32];
	char	   *out = NULL;
	const char *extra[2] = { env, NULL };
	int	    rc;

	T_ASSERT(make_tmpdir(fake, sizeof(fake)) == 0);
	snprintf(env, sizeof(env), "GRASPD_LIBEXEC=%s", fake);
	/* Foreground: exit 1 and the reason in the log. */
	T_ASSERT(gd_spawn(&g, NULL, extra) == 0);
	rc = gd_reap(&g, 10000);
	T_CHECK(rc == 1);
	T_CHECK(log_has(&g, "relayd failed: cannot execute"));
	gd_stop(&g);
	/* Daemon mode: the command itself fails and says why. */
	rc = run(&out,
	    "NGIT_RUN_PATH='%s/run' GRASPD_LIBEXEC='%s' "
	    "NGIT_RELAY_DATA_PATH='%s' '%s/graspd'",
	    fake, fake, fake, bindir);
	T_CHECK(rc == 1);
	T_CHECK(strstr(out, "graspd: relayd failed: cannot execute") != NULL);
	free(out);
	/* relayd exiting 78: graspd exits 78 too (do not respawn graspd). */
	snprintf(path, sizeof(path), "%s/relayd", fake);
	T_ASSERT(write_file(path, "#!/bin/sh\nexit 78\n", 0755) == 0);
	/* A run path of its own: the daemon above may still be leaving
	 * its pid file on a loaded machine. */
	rc = run(&out,
	    "NGIT_RUN_PATH='%s/run2' GRASPD_LIBEXEC='%s' "
	    "NGIT_RELAY_DATA_PATH='%s' '%s/graspd'",
	    fake, fake, fake, bindir);
	if (rc != 78)
		printf("# graspd said: %s\n", out ? out : "");
	T_CHECK(rc == 78);
	T_CHECK(strstr(out, "relayd failed: exited 78 (configuration error)") !=
	    NULL);
	free(out);
	rm_tree(fake);
}

/* A listening socket on 127.0.0.1:port, or -1. */
static int
hold_port(int port)
{
	struct sockaddr_in sin;
	int		   fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The environment of a graspd in a directory: port, port, dir, dir, dir,
 * libexec. */
#define DAEMON_ENV \
	"NGIT_BIND_ADDRESS=127.0.0.1:%d NGIT_DOMAIN=127.0.0.1:%d " \
	"NGIT_RELAY_DATA_PATH='%s/relay' NGIT_GIT_DATA_PATH='%s/git' " \
	"NGIT_RUN_PATH='%s/run' NGIT_TEST=1 GRASPD_LIBEXEC='%s' "

static void
test_taken_port_fails_at_once_with_its_cause(void)
{
	char	dir[PATH_MAX], want[128], *out = NULL;
	int	port, rc, fd;
	int64_t t0;

	if (no_relayd())
		return;
	T_ASSERT(make_tmpdir(dir, sizeof(dir)) == 0);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	T_ASSERT((fd = hold_port(port)) != -1);
	/* Daemon mode: the console shows the address and the cause, and
	 * graspd exits 78 without a round of restarts. */
	t0 = wsc_now_ms();
	rc = run(&out, DAEMON_ENV "'%s/graspd' 2>&1", port, port, dir, dir, dir,
	    libexec, bindir);
	T_EQ_INT(rc, 78);
	T_CHECK(wsc_now_ms() - t0 < 10000);
	snprintf(want, sizeof(want),
	    "relayd failed: 127.0.0.1:%d: Address "
	    "already in use",
	    port);
	if (out == NULL || strstr(out, want) == NULL)
		printf("# console: %s\n", out ? out : "(none)");
	T_CHECK(out != NULL && strstr(out, want) != NULL);
	T_CHECK(out != NULL && strstr(out, "fast deaths") == NULL);
	free(out);
	close(fd);
	rm_tree(dir);
}

static void
test_daemon_mode_returns_once_ready(void)
{
	char	  dir[PATH_MAX], path[PATH_MAX + 32], *out = NULL, *text;
	char	  comm[64], stat_line[512];
	pid_t	  pid = -1;
	int	  port, rc, ppid = 0;
	FILE	 *f;
	struct gd g;

	if (no_relayd())
		return;
	T_ASSERT(make_tmpdir(dir, sizeof(dir)) == 0);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	memset(&g, 0, sizeof(g));
	snprintf(g.run, sizeof(g.run), "%s/run", dir);
	rc = run(&out, DAEMON_ENV "'%s/graspd'", port, port, dir, dir, dir,
	    libexec, bindir);
	T_CHECK(rc == 0);
	free(out);
	snprintf(path, sizeof(path), "%s/run/graspd.pid", dir);
	text = t_slurp(path, NULL);
	T_ASSERT(text != NULL);
	pid = atoi(text);
	free(text);
	remember_pid(pid);
	T_ASSERT(alive(pid));
	proc_comm(pid, comm, sizeof(comm));
	T_EQ_STR(comm, "graspd");
	/* Detached: not our child, in a session of its own. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(stat_line, sizeof(stat_line), f) != NULL) {
			char *p = strrchr(stat_line, ')');

			if (p != NULL)
				sscanf(p + 2, "%*c %d", &ppid);
		}
		fclose(f);
	}
	T_CHECK(ppid != getpid());
	T_CHECK(getsid(pid) != getsid(0));
	/* Ready means relayd listens now, not later. */
	T_CHECK(relayproc_wait_port("127.0.0.1", port, 100) == 0);
	T_EQ_INT(ctl(&g, &out, "status"), 0);
	T_CHECK(strstr(out, "\nrelayd      running") != NULL);
	free(out);
	cJSON_Delete(status(&g)); /* remembers the roles' pids */

	/* A second graspd on the same run directory refuses. */
	rc = run(&out, DAEMON_ENV "'%s/graspd' -d", port, port, dir, dir, dir,
	    libexec, bindir);
	T_CHECK(rc == 1);
	T_CHECK(strstr(out, "graspd is already running") != NULL);
	free(out);
#undef DAEMON_ENV

	rc = ctl(&g, &out, "stop");
	T_CHECK(rc == 0);
	free(out);
	T_CHECK(!alive(pid));
	cleanup_all();
	rm_tree(dir);
}

/*
 * The init script (etc/graspd.init, its paths pointed into a temporary
 * directory) trusts its pid file only for a process of graspd: the run
 * directory is the roles' user's, who can write any number there.  With
 * the pid of another process of ours planted, stop says graspd is not
 * running and that process lives; start, status and stop then work on a
 * real graspd.  The system's own files are never touched (no
 * /etc/default/graspd, user root: no useradd).
 */
static void
test_init_script_signals_only_graspd(void)
{
	char  dir[PATH_MAX], script[PATH_MAX + 32], path[PATH_MAX + 64];
	char  text[6 * PATH_MAX], *out = NULL;
	pid_t victim, pid;
	int   port, rc;

	if (no_relayd())
		return;
	T_ASSERT(make_tmpdir(dir, sizeof(dir)) == 0);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	snprintf(script, sizeof(script), "%s/graspd.init", dir);
	T_ASSERT(run(NULL,
		     "sed -e 's|^GRASPD=.*|GRASPD=%s/graspd|' "
		     "-e 's|^GRASPCTL=.*|GRASPCTL=%s/graspctl|' "
		     "-e 's|/etc/default/graspd|%s/default|g' "
		     "'%s/etc/graspd.init' > '%s'",
		     bindir, bindir, dir, topdir, script) == 0);
	snprintf(path, sizeof(path), "%s/default", dir);
	snprintf(text, sizeof(text),
	    "CONF='%s/none.conf'\n"
	    "export NGIT_BIND_ADDRESS=127.0.0.1:%d NGIT_DOMAIN=127.0.0.1:%d\n"
	    "export NGIT_RELAY_DATA_PATH='%s/relay' "
	    "NGIT_GIT_DATA_PATH='%s/git'\n"
	    "export NGIT_RUN_PATH='%s/run' NGIT_TEST=1 NGIT_USER=root\n"
	    "export GRASPD_LIBEXEC='%s'\n",
	    dir, port, port, dir, dir, dir, libexec);
	T_ASSERT(write_file(path, text, 0644) == 0);
	snprintf(path, sizeof(path), "%s/run", dir);
	T_ASSERT(mkdir(path, 0700) == 0);

	/* The roles' user writes the pid of a process that is not graspd. */
	fflush(NULL);
	T_ASSERT((victim = fork()) != -1);
	if (victim == 0) {
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/run/graspd.pid", dir);
	snprintf(text, sizeof(text), "%d\n", (int)victim);
	T_ASSERT(write_file(path, text, 0644) == 0);
	rc = run(&out, "timeout 60 sh '%s' stop", script);
	T_EQ_INT(rc, 0);
	T_CHECK(out != NULL && strstr(out, "graspd is not running") != NULL);
	free(out);
	T_CHECK(alive(victim));
	rc = run(&out, "timeout 60 sh '%s' status", script);
	T_CHECK(rc != 0 && strstr(out, "is running") == NULL);
	free(out);
	/* A number the shell would take for a process group: never. */
	T_ASSERT(write_file(path, "-1\n", 0644) == 0);
	rc = run(&out, "timeout 60 sh '%s' stop", script);
	T_CHECK(rc == 0 && strstr(out, "graspd is not running") != NULL);
	free(out);
	T_CHECK(alive(victim));
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);

	/* The real graspd is found, and stopped. */
	rc = run(&out, "timeout 120 sh '%s' start", script);
	if (rc != 0)
		printf("# %s\n", out);
	T_CHECK(rc == 0);
	free(out);
	out = t_slurp(path, NULL);
	T_ASSERT(out != NULL);
	pid = atoi(out);
	free(out);
	remember_pid(pid);
	rc = run(&out, "timeout 60 sh '%s' status", script);
	snprintf(text, sizeof(text), "graspd is running (pid %d)", (int)pid);
	T_CHECK(rc == 0 && strstr(out, text) != NULL);
	free(out);
	rc = run(&out, "timeout 90 sh '%s' stop", script);
	T_CHECK(rc == 0 && strstr(out, "Stopping graspd") != NULL);
	free(out);
	T_CHECK(!alive(pid));
	cleanup_all();
	rm_tree(dir);
}

static void
absolute_dir(const char *in, char *out, size_t outlen)
{
	if (realpath(in, out) == NULL)
		snprintf(out, outlen, "%s", in);
}

int
main(void)
{
	const char *b = getenv("GRASPD_BIN"), *l = getenv("GRASPD_LIBEXEC");
	char	    path[PATH_MAX + 32];
	int	    i;

	signal(SIGPIPE, SIG_IGN);
	absolute_dir(b != NULL && *b != '\0' ? b : "bin", bindir,
	    sizeof(bindir));
	absolute_dir(l != NULL && *l != '\0' ? l : bindir, libexec,
	    sizeof(libexec));
	absolute_dir(".", topdir, sizeof(topdir));
	for (i = 0; i < NROLES; i++) {
		snprintf(path, sizeof(path), "%s/%s", libexec, roles[i]);
		role_exists[i] = access(path, X_OK) == 0;
	}
	printf("# graspd from %s, roles from %s\n", bindir, libexec);
	atexit(cleanup_all);

	T_RUN(test_configtest_sample_and_broken_files);
	T_RUN(test_graspctl_usage_and_unreachable);
	T_RUN(test_every_program_answers_h_and_V);
	T_RUN(test_graspd_starts_every_role);
	T_RUN(test_roles_get_their_arguments_and_readiness_fd);
	T_RUN(test_metrics_name_every_family_once_with_help_and_type);
	T_RUN(test_metrics_stale_role_sample_stays_in_its_family);
	T_RUN(test_kill9_each_role_comes_back_while_clients_publish);
	T_RUN(test_graspctl_restart_historyd_changes_only_its_pid);
	T_RUN(test_stopped_role_stays_down_until_started);
	T_RUN(test_direct_commands_work_while_graspd_is_stopped);
	T_RUN(test_sigterm_stops_every_role_relayd_last);
	gd_stop(&G);
	if (notify_fd != -1)
		close(notify_fd);
	rm_tree(notify_dir);
	T_RUN(test_reload_keeps_running_on_a_broken_file_restarts_on_a_change);
	T_RUN(test_exit78_is_permanent_and_crash_loops_fail);
	T_RUN(test_progress_extends_the_readiness_wait);
	T_RUN(test_startup_fails_when_relayd_cannot_run);
	T_RUN(test_taken_port_fails_at_once_with_its_cause);
	T_RUN(test_daemon_mode_returns_once_ready);
	T_RUN(test_init_script_signals_only_graspd);
	cleanup_all();
	return t_done();
}
