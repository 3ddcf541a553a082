/*
 * roles_test.c: syncd, discoveryd and historyd as real processes, as the
 * supervisor and graspctl see them: readiness on GRASPD_READY_FD, the
 * control socket (status, show, stats, log, stop, errors), stats on the
 * stats channel, the accepted feed (notices and the poll that makes up
 * for a lost one), a role started before relayd's database exists,
 * signals and exit statuses.
 *
 * Most cases play relayd's part themselves (a store written through
 * store_put() with the inventory's tables through invdb_add(), a PUB
 * socket on "accepted", a PULL on "stats") so that
 * they pin the roles down alone; the last ones run the real relayd.
 * Roles are started by fork+exec with nothing else in the child, like
 * the supervisor does (nanomsg is not fork-safe).
 */
#define _GNU_SOURCE /* close_range */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/pubsub.h>
#include <nanomsg/reqrep.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "ctlcmd.h"
#include "event.h"
#include "gitutil.h"
#include "invdb.h"
#include "log.h"
#include "msg.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

#define TMO	  5000	/* ms, any single wait */
#define READY_TMO 10000 /* ms, for a role to become ready */

extern char **environ;

/* A role process started by the test. */
struct rolep {
	pid_t pid;     /* -1 once reaped */
	int   readyfd; /* read end of GRASPD_READY_FD, or -1 */
	int   status;  /* exit status once reaped */
	char  log[PATH_MAX + 64];
};

/* A directory laid out like relayproc's: relay/, git/, run/. */
struct fixture {
	char	      dir[PATH_MAX];
	char	      run[PATH_MAX + 8];
	struct store *store; /* relayd's part: writes */
	struct invdb *inv;   /* ... and the inventory's tables */
	int	      pub;   /* relayd's part: accepted PUB */
	int	      stats; /* relayd's part: stats PULL */
};

static struct fixture fx; /* the shared fixture */
static struct rolep   sy; /* syncd on fx */
static uint8_t	      sk_a[SECKEY_LEN], sk_b[SECKEY_LEN];
static char	      pk_a[PUBKEY_HEX_LEN + 1], pk_b[PUBKEY_HEX_LEN + 1];

static int
fixture_dirs(struct fixture *f)
{
	static const char *subdirs[] = { "relay", "git", "run" };
	char		   sub[PATH_MAX + 8];
	size_t		   i;

	memset(f, 0, sizeof(*f));
	f->pub = f->stats = -1;
	if (tdir_make(f->dir, sizeof(f->dir), "graspd-roles") == -1)
		return -1;
	for (i = 0; i < 3; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", f->dir, subdirs[i]);
		if (mkdir(sub, 0700) == -1)
			return -1;
	}
	snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
	return 0;
}

static void
fixture_free(struct fixture *f)
{
	chan_close(f->pub);
	chan_close(f->stats);
	if (f->inv != NULL)
		invdb_free(f->inv);
	f->inv = NULL;
	store_close(f->store);
	tdir_remove(f->dir);
	f->dir[0] = '\0';
}

/* The environment of a test instance on f, then extra (may be NULL). */
static char **
role_env(const struct fixture *f, const char *const extra[])
{
	static char e[5][PATH_MAX + 32];
	char	  **envp;
	size_t	    n = 0, i, k = 0;

	for (i = 0; environ[i] != NULL; i++)
		n++;
	for (i = 0; extra != NULL && extra[i] != NULL; i++)
		n++;
	if ((envp = calloc(n + 8, sizeof(*envp))) == NULL)
		abort();
	/* Ours replace the test's own NGIT_* settings. */
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "NGIT_", 5) != 0 &&
		    strncmp(environ[i], "GRASPD_READY_FD=", 16) != 0)
			envp[k++] = environ[i];
	snprintf(e[0], sizeof(e[0]), "NGIT_RELAY_DATA_PATH=%s/relay", f->dir);
	snprintf(e[1], sizeof(e[1]), "NGIT_GIT_DATA_PATH=%s/git", f->dir);
	snprintf(e[2], sizeof(e[2]), "NGIT_RUN_PATH=%s", f->run);
	snprintf(e[3], sizeof(e[3]), "NGIT_TEST=1");
	snprintf(e[4], sizeof(e[4]), "GRASPD_READY_FD=3");
	for (i = 0; i < 5; i++)
		envp[k++] = e[i];
	for (i = 0; extra != NULL && extra[i] != NULL; i++)
		envp[k++] = (char *)extra[i];
	envp[k] = NULL;
	return envp;
}

/*
 * Starts $GRASPD_BIN/prog -d [arg] on f, its output appended to
 * f->dir/<prog>.log, with the write end of a pipe as descriptor 3 and
 * GRASPD_READY_FD=3.  Later entries of extra override earlier ones
 * (the role reads the last).  Returns 0 or -1.
 */
static int
role_start(struct rolep *r, const struct fixture *f, const char *prog,
    const char *const extra[], const char *arg)
{
	char	    path[PATH_MAX], *real, **envp, *argv[4];
	const char *bin = getenv("GRASPD_BIN");
	pid_t	    parent = getpid();
	int	    p[2], logfd, nullfd;

	memset(r, 0, sizeof(*r));
	r->pid = -1;
	r->readyfd = -1;
	snprintf(path, sizeof(path), "%s/%s", bin && *bin ? bin : "bin", prog);
	if ((real = realpath(path, NULL)) == NULL) {
		printf("# %s: not found (build it with make)\n", path);
		return -1;
	}
	snprintf(r->log, sizeof(r->log), "%s/%s.log", f->dir, prog);
	logfd = open(r->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (logfd == -1 || nullfd == -1 || pipe2(p, O_CLOEXEC) == -1)
		abort();
	envp = role_env(f, extra);
	argv[0] = (char *)prog;
	argv[1] = "-d";
	argv[2] = (char *)arg;
	argv[3] = NULL;
	fflush(NULL);
	if ((r->pid = fork()) == -1)
		abort();
	if (r->pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (dup2(nullfd, 0) == -1 || dup2(logfd, 1) == -1 ||
		    dup2(logfd, 2) == -1 || chdir(f->dir) == -1)
			_exit(127);
		/* dup2 onto itself would keep close-on-exec. */
		if (p[1] == 3)
			fcntl(3, F_SETFD, 0);
		else if (dup2(p[1], 3) == -1)
			_exit(127);
		close_range(4, ~0U, 0);
		execve(real, argv, envp);
		_exit(127);
	}
	close(p[1]);
	close(logfd);
	close(nullfd);
	free(envp);
	free(real);
	r->readyfd = p[0];
	return 0;
}

/*
 * Waits at most ms for "READY=1\n".  1 when it came, 0 when the role
 * closed the descriptor without it (it exited), -1 on timeout.
 */
static int
role_wait_ready(struct rolep *r, int ms)
{
	struct pollfd pfd = { .fd = r->readyfd, .events = POLLIN };
	char	      buf[16];
	ssize_t	      n;
	size_t	      got = 0;
	int64_t	      deadline = wsc_now_ms() + ms;

	if (r->readyfd == -1)
		return 0;
	while (got < 8) {
		int left = (int)(deadline - wsc_now_ms());

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		if ((n = read(r->readyfd, buf + got, sizeof(buf) - got)) <= 0)
			break;
		got += (size_t)n;
	}
	close(r->readyfd);
	r->readyfd = -1;
	return got == 8 && memcmp(buf, "READY=1\n", 8) == 0;
}

/* Waits at most ms for the exit: its status (128+sig if killed) or -1. */
static int
role_wait_exit(struct rolep *r, int ms)
{
	int st;

	if ((st = relayproc_reap(&r->pid, &r->status, ms)) != -1 &&
	    r->readyfd != -1) {
		close(r->readyfd);
		r->readyfd = -1;
	}
	return st;
}

static void
role_dump_log(const struct rolep *r)
{
	char  line[1024];
	FILE *fp = fopen(r->log, "r");

	if (fp == NULL)
		return;
	fprintf(stderr, "# --- %s\n", r->log);
	while (fgets(line, sizeof(line), fp) != NULL)
		fprintf(stderr, "# %s", line);
	fclose(fp);
}

/* SIGTERM, then SIGKILL if it lingers; the exit status. */
static int
role_stop(struct rolep *r)
{
	relayproc_terminate(&r->pid, &r->status, TMO, "role");
	/* Reaped: the readiness pipe goes too. */
	return role_wait_exit(r, 0);
}

static cJSON *
ctl(const struct fixture *f, enum role role, const char *req)
{
	return ctl_role(f->run, role, MSG_CONTROL, req, TMO);
}

static const char *
jstr(const cJSON *o, const char *name)
{
	return ctl_jstr(o, name);
}

/* The value of metric name in a metrics array, or -1. */
static double
metric(const cJSON *metrics, const char *name)
{
	const cJSON *m, *n;

	cJSON_ArrayForEach(m, metrics) {
		n = cJSON_GetArrayItem(m, 0);
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 &&
		    cJSON_IsNumber(cJSON_GetArrayItem(m, 1)))
			return cJSON_GetArrayItem(m, 1)->valuedouble;
	}
	return -1;
}

/* A number in the "view" of `show` for role, or -1. */
static double
view_num(const struct fixture *f, enum role role, const char *name)
{
	cJSON *rep = ctl(f, role, "{\"cmd\":\"show\"}");
	double v = ctl_num(cJSON_GetObjectItem(rep, "view"), name);

	cJSON_Delete(rep);
	return v;
}

/* Polls view_num() until it equals want, at most TMO ms. */
static double
view_num_becomes(const struct fixture *f, enum role role, const char *name,
    double want)
{
	int64_t deadline = wsc_now_ms() + TMO;
	double	v;

	while ((v = view_num(f, role, name)) != want && wsc_now_ms() < deadline)
		relayproc_sleep_ms(50);
	return v;
}

static void
make_key(int n, uint8_t sk[SECKEY_LEN], char pkhex[PUBKEY_HEX_LEN + 1])
{
	uint8_t pk[PUBKEY_LEN];

	memset(sk, 0x5a, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, pkhex);
}

/*
 * relayd's part of storing ev: the inventory's tables (invdb.h), which
 * syncd and historyd read, in a write transaction of their own.
 */
static int
fx_invdb(const struct event *ev, int64_t seq)
{
	static struct config cfg; /* no domain: every relay is a target */
	struct sqlite3	    *db = store_sqlite(fx.store);

	if (fx.inv == NULL && (fx.inv = invdb_new(fx.store, &cfg)) == NULL)
		return -1;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (invdb_add(fx.inv, ev, seq) == -1 || invdb_flush(fx.inv) == -1) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		invdb_discard(fx.inv);
		return -1;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

/* Stores an event as relayd would and announces it (notice != 0). */
static int64_t
fx_put(const uint8_t sk[SECKEY_LEN], uint32_t kind, const char *tags,
    int notice)
{
	static int	    n;
	struct event	   *ev;
	struct msg_accepted ma;
	char		    content[32];
	int64_t		    seq = -1;

	snprintf(content, sizeof(content), "content %d", ++n);
	if ((ev = event_new_signed(sk, time(NULL), kind, tags, content)) ==
	    NULL)
		return -1;
	if (store_put(fx.store, ev, &seq) != STORE_OK ||
	    fx_invdb(ev, seq) == -1)
		seq = -1;
	if (seq > 0 && notice) {
		memset(&ma, 0, sizeof(ma));
		ma.ma_seq = seq;
		ma.ma_kind = kind;
		memcpy(ma.ma_id, ev->id, EVENT_ID_LEN);
		memcpy(ma.ma_pubkey, ev->pubkey, PUBKEY_LEN);
		msg_send(fx.pub, MSG_ACCEPTED, &ma, sizeof(ma), NN_DONTWAIT);
	}
	event_destroy(ev);
	return seq;
}

static int64_t
fx_announce(const uint8_t sk[SECKEY_LEN], const char *d, int notice)
{
	char tags[256];

	snprintf(tags, sizeof(tags), "[[\"d\",\"%s\"],[\"name\",\"%s\"]]", d,
	    d);
	return fx_put(sk, 30617, tags, notice);
}

static int64_t
fx_root(const uint8_t sk[SECKEY_LEN], uint32_t kind, const char *pk,
    const char *d, int notice)
{
	char tags[256];

	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:%s\"]]", pk, d);
	return fx_put(sk, kind, tags, notice);
}

static int64_t
fx_last_seq(void)
{
	int64_t s = -1;

	store_last_seq(fx.store, &s);
	return s;
}

/* Opens the fixture's database and relayd's two sockets. */
static int
fixture_play_relayd(struct fixture *f)
{
	char path[PATH_MAX + 16], ep[PATH_MAX + 64], err[256];
	int  tmo = TMO;

	snprintf(path, sizeof(path), "%s/relay/graspd.db", f->dir);
	if ((f->store = store_open(path, 0, err, sizeof(err))) == NULL) {
		printf("# store_open: %s\n", err);
		return -1;
	}
	chan_endpoint(f->run, CHAN_ACCEPTED, ep, sizeof(ep));
	if ((f->pub = chan_open(NN_PUB, ep, 1)) == -1)
		return -1;
	chan_endpoint(f->run, CHAN_STATS, ep, sizeof(ep));
	if ((f->stats = chan_open(NN_PULL, ep, 1)) == -1)
		return -1;
	nn_setsockopt(f->stats, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof(tmo));
	return 0;
}

/* A field of a role's JSON answer and the value it must have. */
struct field {
	const char *f_key;
	int	    f_bool; /* read with ctl_bool(), else ctl_num() */
	long	    f_want;
};

/* How many of the n fields of o lack their value (each printed). */
static int
fields_off(const cJSON *o, const struct field *f, size_t n)
{
	size_t i;
	long   got;
	int    off = 0;

	for (i = 0; i < n; i++) {
		got = f[i].f_bool ? ctl_bool(o, f[i].f_key) :
				    (long)ctl_num(o, f[i].f_key);
		if (got != f[i].f_want) {
			printf("# %s: %ld, not %ld\n", f[i].f_key, got,
			    f[i].f_want);
			off++;
		}
	}
	return off;
}

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

static void
test_syncd_becomes_ready_with_inventory_from_database(void)
{
	/* The startup scan's counts, and the roots of each kind. */
	static const struct field counts[] = {
		{ "sync_enabled", 1, 1 },
		{ "repositories", 0, 1 },
		{ "announcement_events", 0, 1 },
		{ "scanned_at_start", 0, 5 },
		{ "root_kind_events_unlinked", 0, 1 },
	}, kinds[] = {
		{ "1617", 0, 1 },
		{ "1618", 0, 0 },
		{ "1621", 0, 1 },
	};
	cJSON *rep, *view;

	/* Stored before syncd starts: the startup scan finds them. */
	T_ASSERT(fx_announce(sk_a, "alpha", 0) > 0);
	T_ASSERT(fx_root(sk_b, 1621, pk_a, "alpha", 0) > 0);
	T_ASSERT(fx_root(sk_b, 1617, pk_a, "alpha", 0) > 0);
	T_ASSERT(fx_root(sk_b, 1621, pk_a, "unknown-repo", 0) > 0);
	T_ASSERT(fx_put(sk_b, 1, NULL, 0) > 0);

	T_ASSERT(role_start(&sy, &fx, "syncd", NULL, NULL) == 0);
	if (role_wait_ready(&sy, READY_TMO) != 1) {
		role_dump_log(&sy);
		T_ASSERT(!"syncd ready");
	}

	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"status\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_STR(jstr(rep, "role"), "syncd");
	T_EQ_INT(ctl_num(rep, "pid"), sy.pid);
	T_CHECK(ctl_num(rep, "uptime") >= 0);
	T_EQ_INT(ctl_bool(rep, "ready"), 1);
	T_EQ_INT(ctl_num(rep, "feed_seq"), fx_last_seq());
	T_CHECK(cJSON_GetObjectItem(rep, "waiting") == NULL);
	cJSON_Delete(rep);

	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"show\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_STR(jstr(rep, "role"), "syncd");
	view = cJSON_GetObjectItem(rep, "view");
	T_ASSERT(cJSON_IsObject(view));
	T_CHECK(cJSON_IsArray(cJSON_GetObjectItem(view, "relays")));
	T_EQ_INT(fields_off(view, counts, NFIELDS(counts)), 0);
	T_EQ_INT(fields_off(cJSON_GetObjectItem(view, "roots"), kinds,
		     NFIELDS(kinds)),
	    0);
	cJSON_Delete(rep);
}

static void
test_syncd_follows_notices_in_order(void)
{
	int64_t seq;

	T_ASSERT(sy.pid != -1);
	/* A repository, then a root that names it: the root counts only if
	 * the announcement was taken first. */
	T_ASSERT(fx_announce(sk_b, "beta", 1) > 0);
	T_ASSERT((seq = fx_root(sk_a, 1618, pk_b, "beta", 1)) > 0);
	T_EQ_INT(view_num_becomes(&fx, ROLE_SYNCD, "repositories", 2), 2);
	T_EQ_INT(
	    view_num_becomes(&fx, ROLE_SYNCD, "root_kind_events_unlinked", 1),
	    1);
	{
		cJSON *rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"show\"}");
		cJSON *roots = cJSON_GetObjectItem(
		    cJSON_GetObjectItem(rep, "view"), "roots");

		T_EQ_INT(ctl_num(roots, "1618"), 1);
		cJSON_Delete(rep);
	}
	/* A newer version of a repository is the same repository. */
	relayproc_sleep_ms(1100); /* a later created_at */
	T_ASSERT(fx_announce(sk_b, "beta", 1) > 0);
	T_EQ_INT(view_num_becomes(&fx, ROLE_SYNCD, "announcement_events", 3),
	    3);
	T_EQ_INT(view_num(&fx, ROLE_SYNCD, "repositories"), 2);
}

static void
test_syncd_polls_the_database_when_a_notice_is_lost(void)
{
	cJSON  *rep;
	int64_t seq, deadline;

	T_ASSERT(sy.pid != -1);
	T_ASSERT((seq = fx_announce(sk_a, "gamma", 0)) > 0);
	T_EQ_INT(view_num_becomes(&fx, ROLE_SYNCD, "repositories", 3), 3);
	/* The view counts from the tables (invdb.h), which have it at once;
	 * the feed's poll (ROLE_FEED_POLL_PERIOD) delivers it after. */
	for (deadline = wsc_now_ms() + TMO;; relayproc_sleep_ms(50)) {
		rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"status\"}");
		if (ctl_num(rep, "feed_seq") == seq || wsc_now_ms() >= deadline)
			break;
		cJSON_Delete(rep);
	}
	T_EQ_INT(ctl_num(rep, "feed_seq"), seq);
	cJSON_Delete(rep);
}

static void
test_stats_command_and_stats_channel(void)
{
	cJSON	  *rep, *metrics;
	struct msg m;
	int	   got = 0, i;

	T_ASSERT(sy.pid != -1);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"stats\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	metrics = cJSON_GetObjectItem(rep, "metrics");
	T_ASSERT(cJSON_IsArray(metrics));
	T_CHECK(metric(metrics, "graspd_role_uptime_seconds") >= 0);
	T_EQ_INT(metric(metrics, "graspd_role_ready"), 1);
	T_EQ_INT(metric(metrics, "graspd_feed_seq"), fx_last_seq());
	T_CHECK(metric(metrics, "graspd_feed_notices_total") >= 3);
	T_CHECK(metric(metrics, "graspd_feed_unnoticed_events_total") >= 1);
	T_EQ_INT(metric(metrics, "graspd_syncd_repositories"), 3);
	T_EQ_INT(metric(metrics, "graspd_syncd_roots"), 3);
	T_EQ_INT(metric(metrics, "graspd_syncd_enabled"), 1);
	cJSON_Delete(rep);

	/* Snapshots arrive every second under NGIT_TEST; older ones may
	 * still wait in the queue, so look for a current one. */
	for (i = 0; i < 10 && !got; i++) {
		cJSON *doc;

		if (msg_recv(fx.stats, &m, 0) != 1)
			break;
		T_EQ_INT(m.m_type, MSG_STATS);
		doc = cJSON_ParseWithLength((const char *)m.m_data, m.m_len);
		msg_free(&m);
		T_ASSERT(doc != NULL);
		T_EQ_STR(jstr(doc, "role"), "syncd");
		T_EQ_INT(ctl_num(doc, "pid"), sy.pid);
		metrics = cJSON_GetObjectItem(doc, "metrics");
		T_ASSERT(cJSON_IsArray(metrics));
		T_CHECK(metric(metrics, "graspd_role_uptime_seconds") >= 0);
		if (metric(metrics, "graspd_feed_seq") == fx_last_seq() &&
		    metric(metrics, "graspd_syncd_repositories") == 3)
			got = 1;
		cJSON_Delete(doc);
	}
	T_CHECK(got);
}

static void
test_log_verbose_and_brief(void)
{
	cJSON *rep;
	FILE  *fp;
	char   line[1024];
	int    debug_lines = 0, kind1_lines = 0;

	T_ASSERT(sy.pid != -1);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"log\",\"args\":[\"verbose\"]}");
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_STR(jstr(rep, "level"), "debug");
	cJSON_Delete(rep);
	/*
	 * At debug level every event the feed hands over is logged: syncd's
	 * takes only its kinds (feed_only_kinds()), a relay list, not a
	 * note.
	 */
	T_ASSERT(fx_put(sk_a, 1, NULL, 1) > 0);
	T_ASSERT(fx_put(sk_a, 10002, NULL, 1) > 0);
	relayproc_sleep_ms(400);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"log\",\"args\":[\"brief\"]}");
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_STR(jstr(rep, "level"), "info");
	cJSON_Delete(rep);
	T_ASSERT((fp = fopen(sy.log, "r")) != NULL);
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strstr(line, "syncd: feed: seq ") != NULL) {
			debug_lines += strstr(line, " kind 10002 ") != NULL;
			kind1_lines += strstr(line, " kind 1 ") != NULL;
		}
	fclose(fp);
	T_CHECK(debug_lines >= 1);
	T_EQ_INT(kind1_lines, 0);

	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"log\",\"args\":[\"loud\"]}");
	T_EQ_INT(ctl_bool(rep, "ok"), 0);
	T_EQ_STR(jstr(rep, "error"), "usage: log verbose|brief");
	cJSON_Delete(rep);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"log\"}");
	T_EQ_INT(ctl_bool(rep, "ok"), 0);
	cJSON_Delete(rep);
}

static void
test_bad_requests_get_errors_and_the_role_goes_on(void)
{
	/* A bad request and its error: exact, "" for any, NULL unread. */
	static const struct {
		const char *req;
		const char *error;
	} bad[] = {
		{ "{\"cmd\":\"frobnicate\"}",
		    "unknown command \"frobnicate\"" },
		{ "{not json", "" },
		{ "[\"status\"]", NULL },
		{ "{\"cmd\":42}", NULL },
	};
	cJSON *rep;
	size_t i;

	T_ASSERT(sy.pid != -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rep = ctl(&fx, ROLE_SYNCD, bad[i].req);
		T_ASSERT(rep != NULL);
		T_EQ_INT(ctl_bool(rep, "ok"), 0);
		if (bad[i].error != NULL && bad[i].error[0] != '\0')
			T_EQ_STR(jstr(rep, "error"), bad[i].error);
		else if (bad[i].error != NULL)
			T_CHECK(strlen(jstr(rep, "error")) > 0);
		cJSON_Delete(rep);
	}

	/* graspctl is a local client, not a sibling: a wrong message type
	 * gets an answer, not an exit. */
	rep = ctl_role(fx.run, ROLE_SYNCD, MSG_STATS, "{}", TMO);
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 0);
	T_EQ_STR(jstr(rep, "error"), "unexpected STATS message");
	cJSON_Delete(rep);

	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"status\"}");
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_INT(ctl_num(rep, "pid"), sy.pid);
	cJSON_Delete(rep);
	T_EQ_INT(role_wait_exit(&sy, 0), -1);
}

static void
test_sighup_is_ignored(void)
{
	cJSON *rep;

	T_ASSERT(sy.pid != -1);
	kill(sy.pid, SIGHUP);
	relayproc_sleep_ms(200);
	T_EQ_INT(role_wait_exit(&sy, 0), -1);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"status\"}");
	T_EQ_INT(ctl_bool(rep, "ready"), 1);
	cJSON_Delete(rep);
}

static void
test_stop_command_replies_then_exits_zero(void)
{
	cJSON *rep;

	T_ASSERT(sy.pid != -1);
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"stop\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	cJSON_Delete(rep);
	T_EQ_INT(role_wait_exit(&sy, TMO), 0);
}

static void
test_restarted_syncd_rebuilds_and_resumes(void)
{
	cJSON  *rep, *roots;
	int64_t stored;

	/* Stored while syncd was down, announced to nobody. */
	T_ASSERT(fx_announce(sk_a, "delta", 1) > 0);
	T_ASSERT(fx_root(sk_b, 1621, pk_a, "delta", 1) > 0);
	stored = store_count(fx.store);
	T_ASSERT(role_start(&sy, &fx, "syncd", NULL, NULL) == 0);
	T_EQ_INT(role_wait_ready(&sy, READY_TMO), 1);
	T_EQ_INT(view_num(&fx, ROLE_SYNCD, "repositories"), 4);
	/* The replaced version of "beta" is gone from the database. */
	T_EQ_INT(view_num(&fx, ROLE_SYNCD, "scanned_at_start"), stored);
	T_EQ_INT(view_num(&fx, ROLE_SYNCD, "announcement_events"), 4);
	/* The 1618 names "beta", whose stored version came after it. */
	rep = ctl(&fx, ROLE_SYNCD, "{\"cmd\":\"show\"}");
	roots = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "view"), "roots");
	T_EQ_INT(ctl_num(roots, "1617"), 1);
	T_EQ_INT(ctl_num(roots, "1618"), 1);
	T_EQ_INT(ctl_num(roots, "1621"), 2);
	T_EQ_INT(ctl_num(cJSON_GetObjectItem(rep, "view"),
		     "root_kind_events_unlinked"),
	    1);
	cJSON_Delete(rep);
	/* And it goes on from there. */
	T_ASSERT(fx_announce(sk_b, "epsilon", 1) > 0);
	T_EQ_INT(view_num_becomes(&fx, ROLE_SYNCD, "repositories", 5), 5);
	T_EQ_INT(view_num(&fx, ROLE_SYNCD, "scanned_at_start"), stored);
}

static void
test_sigterm_exits_zero(void)
{
	T_ASSERT(sy.pid != -1);
	T_EQ_INT(role_stop(&sy), 0);
}

/*
 * Starts prog (the role of control channel role) on fx with env and
 * waits until it is ready; its "show" answer, which must name it, into
 * *repp (the caller cJSON_Delete()s it), which stays NULL when a check
 * failed.
 */
static void
role_start_show(struct rolep *r, const char *prog, enum role role,
    const char *const env[], cJSON **repp)
{
	cJSON *rep;

	*repp = NULL;
	T_ASSERT(role_start(r, &fx, prog, env, NULL) == 0);
	T_EQ_INT(role_wait_ready(r, READY_TMO), 1);
	rep = ctl(&fx, role, "{\"cmd\":\"show\"}");
	T_ASSERT(rep != NULL);
	T_EQ_STR(jstr(rep, "role"), prog);
	*repp = rep;
}

static void
test_discoveryd_view(void)
{
	static const char *const env[] = {
		"NGIT_SYNC_PLUS_USER_INDEX_RELAYS=wss://index1.example,"
		"wss://index2.example",
		"NGIT_SYNC_PLUS_FALLBACK_RELAYS=wss://fallback.example", NULL
	};
	static const char *const off[] = { "NGIT_SYNC_ENABLED=false", NULL };
	static const struct field on_view[] = {
		{ "grasp03_enabled", 1, 1 },
		{ "user_index_relays", 0, 2 },
		{ "fallback_relays", 0, 1 },
	}, off_view[] = {
		{ "grasp03_enabled", 1, 0 },
		{ "sync_plus_enabled", 1, 1 },
		{ "user_index_relays", 0, 0 },
	};
	struct rolep r;
	cJSON	    *rep, *view;

	role_start_show(&r, "discoveryd", ROLE_DISCOVERYD, env, &rep);
	T_ASSERT(rep != NULL);
	view = cJSON_GetObjectItem(rep, "view");
	T_EQ_INT(fields_off(view, on_view, NFIELDS(on_view)), 0);
	T_EQ_STR(jstr(view, "discovery"), "on");
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(view, "index_sources")),
	    2);
	T_CHECK(ctl_num(view, "eligible_authors") >= 0);
	cJSON_Delete(rep);
	rep = ctl(&fx, ROLE_DISCOVERYD, "{\"cmd\":\"status\"}");
	T_EQ_INT(ctl_num(rep, "feed_seq"), fx_last_seq());
	cJSON_Delete(rep);
	T_EQ_INT(role_stop(&r), 0);

	/* GRASP-03 is an overlay: off when syncd's sync is off. */
	role_start_show(&r, "discoveryd", ROLE_DISCOVERYD, off, &rep);
	T_ASSERT(rep != NULL);
	view = cJSON_GetObjectItem(rep, "view");
	T_EQ_INT(fields_off(view, off_view, NFIELDS(off_view)), 0);
	T_CHECK(strncmp(jstr(view, "discovery"), "off: ", 5) == 0);
	cJSON_Delete(rep);
	T_EQ_INT(role_stop(&r), 0);
}

static void
test_historyd_view(void)
{
	static const char *const  env[] = { "NGIT_PRIVATE_MODE=true", NULL };
	static const struct field fields[] = {
		{ "private_mode", 1, 1 },
		{ "workers", 0, 0 },
	};
	struct rolep r;
	cJSON	    *rep, *view;

	role_start_show(&r, "historyd", ROLE_HISTORYD, env, &rep);
	T_ASSERT(rep != NULL);
	view = cJSON_GetObjectItem(rep, "view");
	T_EQ_INT(fields_off(view, fields, NFIELDS(fields)), 0);
	/* No repository, no participant: nothing to probe. */
	T_CHECK(jstr(view, "history")[0] != '\0');
	T_CHECK(ctl_num(view, "desired_relays") <= 0);
	cJSON_Delete(rep);
	T_EQ_INT(role_stop(&r), 0);
}

static void
test_configuration_error_exits_78(void)
{
	static const char *const bad[] = { "NGIT_MAX_CONNECTIONS=0", NULL };
	struct rolep		 r;

	T_ASSERT(role_start(&r, &fx, "historyd", bad, NULL) == 0);
	T_EQ_INT(role_wait_ready(&r, TMO), 0);
	T_EQ_INT(role_wait_exit(&r, TMO), 78);
	T_ASSERT(role_start(&r, &fx, "syncd", NULL, "-x") == 0);
	T_EQ_INT(role_wait_ready(&r, TMO), 0);
	T_EQ_INT(role_wait_exit(&r, TMO), 78);
}

static void
test_sigterm_while_waiting_for_the_database_exits_zero(void)
{
	struct fixture f;
	struct rolep   r;
	cJSON	      *rep;

	T_ASSERT(fixture_dirs(&f) == 0);
	T_ASSERT(role_start(&r, &f, "discoveryd", NULL, NULL) == 0);
	T_EQ_INT(role_wait_ready(&r, 300), -1);
	rep = ctl(&f, ROLE_DISCOVERYD, "{\"cmd\":\"stats\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(
	    metric(cJSON_GetObjectItem(rep, "metrics"), "graspd_role_ready"),
	    0);
	/* The role's own metrics wait for its state. */
	T_EQ_INT(metric(cJSON_GetObjectItem(rep, "metrics"),
		     "graspd_discoveryd_enabled"),
	    -1);
	cJSON_Delete(rep);
	T_EQ_INT(role_stop(&r), 0);
	fixture_free(&f);
}

/*
 * The real relayd from here on.  A role started before relayd has made
 * the database waits, says so, and becomes ready once relayd is up.
 */
static struct fixture	 fr;
static struct relayproc *rp;

static void
test_role_started_before_the_database_waits_for_relayd(void)
{
	struct rolep r;
	cJSON	    *rep;
	char	     env[3][PATH_MAX + 32];
	const char  *extra[4];

	T_ASSERT(fixture_dirs(&fr) == 0);
	T_ASSERT(role_start(&sy, &fr, "syncd", NULL, NULL) == 0);
	T_ASSERT(role_start(&r, &fr, "historyd", NULL, NULL) == 0);
	T_EQ_INT(role_wait_ready(&sy, 600), -1);
	rep = ctl(&fr, ROLE_SYNCD, "{\"cmd\":\"status\"}");
	T_ASSERT(rep != NULL);
	T_EQ_INT(ctl_bool(rep, "ok"), 1);
	T_EQ_INT(ctl_bool(rep, "ready"), 0);
	T_CHECK(strstr(jstr(rep, "waiting"), "graspd.db") != NULL);
	cJSON_Delete(rep);
	rep = ctl(&fr, ROLE_SYNCD, "{\"cmd\":\"show\"}");
	T_EQ_INT(ctl_bool(cJSON_GetObjectItem(rep, "view"), "ready"), 0);
	cJSON_Delete(rep);

	snprintf(env[0], sizeof(env[0]), "NGIT_RELAY_DATA_PATH=%s/relay",
	    fr.dir);
	snprintf(env[1], sizeof(env[1]), "NGIT_GIT_DATA_PATH=%s/git", fr.dir);
	snprintf(env[2], sizeof(env[2]), "NGIT_RUN_PATH=%s", fr.run);
	extra[0] = env[0];
	extra[1] = env[1];
	extra[2] = env[2];
	extra[3] = NULL;
	T_ASSERT((rp = relayproc_start("relayd", extra)) != NULL);
	if (role_wait_ready(&sy, READY_TMO) != 1) {
		role_dump_log(&sy);
		T_ASSERT(!"syncd ready after relayd started");
	}
	T_EQ_INT(role_wait_ready(&r, READY_TMO), 1);
	rep = ctl(&fr, ROLE_SYNCD, "{\"cmd\":\"status\"}");
	T_EQ_INT(ctl_bool(rep, "ready"), 1);
	T_EQ_INT(ctl_num(rep, "feed_seq"), 0);
	cJSON_Delete(rep);
	T_EQ_INT(role_stop(&r), 0);
}

/* Publishes an announcement relayd's GRASP-01 policy accepts. */
static int
relay_announce(struct wsc *ws, const uint8_t sk[SECKEY_LEN], const char *d)
{
	struct event *ev;
	struct buf    b = BUF_INIT;
	uint8_t	      pk[PUBKEY_LEN];
	char	      npub[NIP19_KEY_BUFSZ];
	int	      ok = -1;

	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	buf_printf(&b,
	    "[[\"d\",\"%s\"],[\"clone\",\"http://%s/%s/%s.git\"],"
	    "[\"relays\",\"ws://%s\"]]",
	    d, relayproc_domain(rp), npub, d, relayproc_domain(rp));
	ev = event_new_signed(sk, time(NULL), 30617, b.b_data, "");
	buf_free(&b);
	if (ev == NULL || nostr_publish(ws, ev, TMO, &ok, NULL) == -1)
		ok = -1;
	event_destroy(ev);
	return ok;
}

static void
test_syncd_follows_relayd(void)
{
	struct wsc *ws;
	cJSON	   *rep;
	char	   *hdrs = NULL, *body = NULL, home[PATH_MAX + 8];
	char	    work[PATH_MAX + 8];
	double	    notices = 0;
	int	    status = 0, i;

	T_ASSERT(rp != NULL && sy.pid != -1);
	T_ASSERT((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		      TMO)) != NULL);
	/* A new announcement is held in purgatory (GRASP-01) until git
	 * data arrives: a state event and a push release it. */
	T_EQ_INT(relay_announce(ws, sk_a, "relayed"), 1);
	snprintf(home, sizeof(home), "%s/home", fr.dir);
	snprintf(work, sizeof(work), "%s/work", fr.dir);
	T_ASSERT(gt_setup(home) == 0);
	T_ASSERT(gt_release(ws, sk_a, relayproc_domain(rp), "relayed", work,
		     NULL) == 0);
	T_EQ_INT(view_num_becomes(&fr, ROLE_SYNCD, "repositories", 1), 1);
	/* relayd's notices reach syncd once its SUB has connected. */
	for (i = 0; i < 10 && notices < 1; i++) {
		struct event *ev;
		char	      g[64];
		int	      ok = -1;

		snprintf(g, sizeof(g), "[[\"g\",\"ws://relayed-%d.example\"]]",
		    i);
		ev = event_new_signed(sk_b, time(NULL) + i, 10317, g, "");
		T_ASSERT(ev != NULL);
		T_EQ_INT(nostr_publish(ws, ev, TMO, &ok, NULL), 0);
		event_destroy(ev);
		T_EQ_INT(ok, 1);
		relayproc_sleep_ms(300);
		rep = ctl(&fr, ROLE_SYNCD, "{\"cmd\":\"stats\"}");
		notices = metric(cJSON_GetObjectItem(rep, "metrics"),
		    "graspd_feed_notices_total");
		cJSON_Delete(rep);
	}
	T_CHECK(notices >= 1);
	wsc_close(ws);

	/* syncd's snapshots reach relayd's /metrics. */
	for (i = 0; i < 30; i++) {
		free(hdrs);
		free(body);
		hdrs = body = NULL;
		if (http_get(relayproc_host(rp), relayproc_port(rp), "/metrics",
			NULL, TMO, &status, &hdrs, &body) == 0 &&
		    status == 200 && body != NULL &&
		    strstr(body, "graspd_syncd_repositories{role=\"syncd\"}"))
			break;
		relayproc_sleep_ms(200);
	}
	T_CHECK(body != NULL &&
	    strstr(body, "graspd_syncd_repositories{role=\"syncd\"}") != NULL);
	free(hdrs);
	free(body);
	T_EQ_INT(role_stop(&sy), 0);
}

int
main(void)
{
	int rc;

	log_init("roles_test", 1);
	log_setlevel(LOG_LVL_WARN);
	signal(SIGPIPE, SIG_IGN);
	make_key(1, sk_a, pk_a);
	make_key(2, sk_b, pk_b);
	sy.pid = -1;
	if (fixture_dirs(&fx) == -1 || fixture_play_relayd(&fx) == -1) {
		printf("not ok - fixture\n");
		fixture_free(&fx);
		return 1;
	}

	T_RUN(test_syncd_becomes_ready_with_inventory_from_database);
	T_RUN(test_syncd_follows_notices_in_order);
	T_RUN(test_syncd_polls_the_database_when_a_notice_is_lost);
	T_RUN(test_stats_command_and_stats_channel);
	T_RUN(test_log_verbose_and_brief);
	T_RUN(test_bad_requests_get_errors_and_the_role_goes_on);
	T_RUN(test_sighup_is_ignored);
	T_RUN(test_stop_command_replies_then_exits_zero);
	T_RUN(test_restarted_syncd_rebuilds_and_resumes);
	T_RUN(test_sigterm_exits_zero);
	T_RUN(test_discoveryd_view);
	T_RUN(test_historyd_view);
	T_RUN(test_configuration_error_exits_78);
	T_RUN(test_sigterm_while_waiting_for_the_database_exits_zero);
	role_stop(&sy);
	fixture_free(&fx);

	T_RUN(test_role_started_before_the_database_waits_for_relayd);
	T_RUN(test_syncd_follows_relayd);
	role_stop(&sy);
	relayproc_free(rp);
	fixture_free(&fr);
	rc = t_done();
	return rc;
}
