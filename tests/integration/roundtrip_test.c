/*
 * roundtrip_test.c: graspctl export then import (graspctl(8)) moves a
 * whole store.  A graspd holds a repository whose announcement was
 * replaced after its state, threads, a NIP-70 protected thread, a PR and
 * a repository held in purgatory, a deletion, replaced profiles and
 * grasp lists; its export, imported into an empty graspd on a copy of
 * its git tree, gives the same stored ids and the same purgatory ids,
 * and so does the export with its lines shuffled (a fixed seed), the
 * order a strfry or ngit-grasp export may have; the protected thread,
 * which import brings as the operator's, is refused to a websocket
 * client that did not authenticate as its author.  Also: export, import
 * and backup find the data through -r and -f, with one clear error when
 * there is none; and import as root into a graspd whose roles run as
 * another user refuses a git tree copied as root and says what to chown
 * (needs root; it creates the user and removes it again).
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "nostr.h"
#include "t.h"
#include "tdir.h"
#include "tuser.h"
#include "wsclient.h"

/* How long a released repository may take to be served. */
#define SERVED_MS    15000
/* How long the imported store may take to settle (releases). */
#define SETTLE_MS    10000
/* The test's key fill byte (tuser.h). */
#define FILL	     0x4e
/* The seed of the shuffled export. */
#define SHUFFLE_SEED 40u
/* The user the ownership test's roles run as (not privdrop_test's). */
#define TEST_USER    "graspd-rt"

/* T_ASSERT() that cleans up: a failed check ends the case at done. */
#define REQUIRE(c) \
	do { \
		if (!(c)) { \
			T_CHECK(c); \
			goto done; \
		} \
	} while (0)

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-roundtrip" };
static int		ndirs;

static const char *
bin_dir(void)
{
	const char *bin = getenv("GRASPD_BIN");

	return bin != NULL && *bin != '\0' ? bin : "bin";
}

/*
 * Runs graspctl args on g with env (shell assignments, may be "") before
 * it and no NGIT_* of the test's own, output in *out (stderr too when
 * err2 is set; the caller frees).  The exit status, or -1.
 */
static int
graspctl(const char *env, const char *args, int err2, char **out)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd),
	    "env -u NGIT_RELAY_DATA_PATH -u NGIT_GIT_DATA_PATH "
	    "-u NGIT_RUN_PATH -u NGIT_BIND_ADDRESS %s '%s/graspctl' %s%s",
	    env, bin_dir(), args, err2 ? " 2>&1" : "");
	return ctl_run(cmd, out);
}

/* graspctl -r <g's run directory> args. */
static int
ctl_r(struct gdproc *g, const char *args, int err2, char **out)
{
	char a[3000];

	snprintf(a, sizeof(a), "-r '%s/run' %s", gd_dir(g), args);
	return graspctl("", a, err2, out);
}

/*
 * graspctl args with g's paths in the environment (NGIT_RELAY_DATA_PATH,
 * NGIT_GIT_DATA_PATH, NGIT_RUN_PATH and NGIT_BIND_ADDRESS), as an
 * operator's shell would have them.
 */
static int
ctl_env(struct gdproc *g, const char *args, int err2, char **out)
{
	char env[2400];

	snprintf(env, sizeof(env),
	    "NGIT_RELAY_DATA_PATH='%s/relay' NGIT_GIT_DATA_PATH='%s/git' "
	    "NGIT_RUN_PATH='%s/run' NGIT_BIND_ADDRESS=127.0.0.1:%d",
	    gd_dir(g), gd_dir(g), gd_dir(g), gd_port(g));
	return graspctl(env, args, err2, out);
}

static void
domain_of(struct gdproc *g, char *out, size_t len)
{
	snprintf(out, len, "127.0.0.1:%d", gd_port(g));
}

/* User n's event, created at, or abort. */
static struct event *
ev_of(int n, int64_t at, uint32_t kind, const char *tags, const char *content)
{
	struct event *e;

	if ((e = tuser_event(FILL, n, at, kind, tags, content)) == NULL)
		abort();
	return e;
}

/* The announcement of user n's repository d on g, as gd_host_repo's. */
static struct event *
announcement(struct gdproc *g, int n, int64_t at, const char *d,
    const char *description)
{
	struct buf    t = BUF_INIT;
	struct event *e;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      domain[64], url[512];

	tuser_sk(FILL, n, sk);
	event_pubkey_of(sk, pk);
	domain_of(g, domain, sizeof(domain));
	gt_url(url, sizeof(url), domain, pk, d);
	buf_printf(&t,
	    "[[\"d\",\"%s\"],[\"name\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"ws://%s\"],[\"description\",\"%s\"]]",
	    d, d, url, domain, description);
	e = ev_of(n, at, 30617, t.b_data, "");
	buf_free(&t);
	return e;
}

/*
 * Publishes e on g after authenticating as user n (NIP-42).  0 if it was
 * accepted, -1 (the answer printed) if not.
 */
static int
publish_authed(struct gdproc *g, int n, const struct event *e)
{
	struct wsc *ws;
	uint8_t	    sk[SECKEY_LEN];
	char	    url[128], *msg = NULL;
	int	    ok = 0, rc;

	tuser_sk(FILL, n, sk);
	snprintf(url, sizeof(url), "ws://127.0.0.1:%d", gd_port(g));
	if ((ws = wsc_connect("127.0.0.1", gd_port(g), "/", 5000)) == NULL)
		return -1;
	if (nostr_auth(ws, sk, url, 5000) == -1) {
		printf("# AUTH refused\n");
		wsc_close(ws);
		return -1;
	}
	rc = nostr_publish(ws, e, 10000, &ok, &msg);
	if (rc == 0 && !ok)
		printf("# protected event refused: %s\n", msg ? msg : "");
	free(msg);
	wsc_close(ws);
	return rc == 0 && ok ? 0 : -1;
}

/*
 * Publishes e on g over TCP with no AUTH; 1 if relayd refused it with an
 * answer starting prefix, else 0 (the answer printed).
 */
static int
refused_with(struct gdproc *g, const struct event *e, const char *prefix)
{
	struct wsc *ws;
	char	   *msg = NULL;
	int	    ok = 0, rc;

	if ((ws = wsc_connect("127.0.0.1", gd_port(g), "/", 5000)) == NULL)
		return 0;
	rc = nostr_publish(ws, e, 10000, &ok, &msg) == 0 && !ok &&
	    msg != NULL && strncmp(msg, prefix, strlen(prefix)) == 0;
	if (!rc)
		printf("# kind %u: %s %s\n", e->kind,
		    ok ? "accepted" : "refused", msg ? msg : "");
	free(msg);
	wsc_close(ws);
	return rc;
}

/*
 * The ids of the store at db, as text: the stored events', then the
 * purgatory's announcements' and events', each list sorted.  NULL if
 * the database cannot be read; the caller frees.
 */
static char *
stored_ids(const char *db)
{
	static const char *const sql[] = {
		"SELECT lower(hex(id)) FROM events ORDER BY 1",
		"SELECT lower(hex(id)) FROM purgatory_announcements "
		"ORDER BY 1",
		"SELECT lower(hex(id)) FROM purgatory_events ORDER BY 1",
	};
	static const char *const name[] = { "events", "held announcements",
		"held events" };
	struct buf		 b = BUF_INIT;
	sqlite3			*h = NULL;
	sqlite3_stmt		*st;
	size_t			 i;
	int			 rc = -1;

	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto done;
	sqlite3_busy_timeout(h, 5000);
	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		if (sqlite3_prepare_v2(h, sql[i], -1, &st, NULL) != SQLITE_OK)
			goto done;
		buf_printf(&b, "%s:\n", name[i]);
		while (sqlite3_step(st) == SQLITE_ROW)
			buf_printf(&b, "  %s\n",
			    (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	rc = 0;
done:
	sqlite3_close(h);
	if (rc == -1) {
		buf_free(&b);
		return NULL;
	}
	buf_add(&b, "", 1);
	return (char *)b.b_data;
}

/* 1 if the id list of section (a stored_ids() name) in ids has id. */
static int
ids_have(const char *ids, const char *section, const char *id)
{
	const char *s, *e;
	char	    head[64], line[80];

	snprintf(head, sizeof(head), "%s:\n", section);
	snprintf(line, sizeof(line), "  %s\n", id);
	if ((s = strstr(ids, head)) == NULL)
		return 0;
	s += strlen(head);
	if ((e = strstr(s, ":\n")) == NULL)
		e = s + strlen(s);
	s = strstr(s, line);
	return s != NULL && s < e;
}

/* Lines of the section in ids. */
static int
ids_count(const char *ids, const char *section)
{
	const char *s;
	char	    head[64];
	int	    n = 0;

	snprintf(head, sizeof(head), "%s:\n", section);
	if ((s = strstr(ids, head)) == NULL)
		return -1;
	for (s += strlen(head); strncmp(s, "  ", 2) == 0; n++)
		s = strchr(s, '\n') + 1;
	return n;
}

/* Waits until g's ids are want; the last seen into *got (caller frees). */
static int
ids_settle(struct gdproc *g, const char *want, char **got)
{
	int64_t end = wsc_now_ms() + SETTLE_MS;

	for (;;) {
		free(*got);
		*got = stored_ids(gd_db_path(g));
		if ((*got != NULL && strcmp(*got, want) == 0) ||
		    wsc_now_ms() > end)
			break;
		usleep(200000);
	}
	return *got != NULL && strcmp(*got, want) == 0 ? 0 : -1;
}

/* The file from with its lines shuffled (Fisher-Yates, seed) into to. */
static int
shuffle_file(const char *from, const char *to, unsigned seed)
{
	FILE   *f, *o;
	char  **lines = NULL, *line = NULL, *tmp;
	size_t	n = 0, cap = 0, lcap = 0, i, j;
	ssize_t len;
	int	rc = -1;

	if ((f = fopen(from, "r")) == NULL)
		return -1;
	while ((len = getline(&line, &lcap, f)) != -1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((lines = realloc(lines, cap * sizeof(*lines))) ==
			    NULL)
				abort();
		}
		lines[n++] = line;
		line = NULL;
		lcap = 0;
	}
	free(line);
	fclose(f);
	for (i = n; i > 1; i--) {
		seed = seed * 1103515245u + 12345u;
		j = (seed >> 8) % i;
		tmp = lines[i - 1];
		lines[i - 1] = lines[j];
		lines[j] = tmp;
	}
	if ((o = fopen(to, "w")) != NULL) {
		for (i = 0; i < n; i++)
			fputs(lines[i], o);
		rc = fclose(o) == 0 ? 0 : -1;
	}
	for (i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return rc;
}

/* graspctl -j import path on g; its summary, or NULL. */
static cJSON *
import_on(struct gdproc *g, const char *path)
{
	char   args[1200], *out = NULL;
	cJSON *j = NULL;
	int    rc;

	snprintf(args, sizeof(args), "-j import '%s'", path);
	if ((rc = ctl_env(g, args, 0, &out)) == 0)
		j = cJSON_Parse(out);
	free(out);
	out = j != NULL ? cJSON_PrintUnformatted(j) : NULL;
	printf("# import: exit %d: %s\n", rc, out ? out : "");
	free(out);
	return j;
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/*
 * A new graspd on a copy of the git tree in dir/git under the name
 * domain, the export at path imported into it: its ids must be want.
 */
static void
import_into_new(const char *dir, const char *domain, const char *path,
    const char *want, const struct event *prot)
{
	char	       env0[800], env1[100], *got = NULL;
	const char    *env[] = { env0, env1, NULL };
	struct gdproc *g;
	cJSON	      *sum;

	snprintf(env0, sizeof(env0), "NGIT_GIT_DATA_PATH=%s/git", dir);
	snprintf(env1, sizeof(env1), "NGIT_DOMAIN=%s", domain);
	if ((g = gd_start(env)) == NULL) {
		T_CHECK(!"the new graspd starts");
		return;
	}
	/* A websocket client cannot do what import does. */
	T_CHECK(refused_with(g, prot, "auth-required:"));
	sum = import_on(g, path);
	T_CHECK(sum != NULL && num(sum, "refused") == 0);
	cJSON_Delete(sum);
	if (ids_settle(g, want, &got) == -1) {
		printf("# want:\n%s# got:\n%s", want, got ? got : "(none)\n");
		T_CHECK(!"the same ids, purgatory included");
	}
	free(got);
	gd_free(g);
}

static void
test_export_import_round_trip(void)
{
	struct gdproc *a = NULL;
	struct event  *ann = NULL, *ev[16];
	struct wsc    *ws = NULL;
	struct buf     t = BUF_INIT;
	uint8_t	       sk[SECKEY_LEN];
	char	       oid[41], coord[200], domain[64];
	char	       path[700], shuf[700], dir1[700], dir2[700], wdir[600];
	char	       args[1600], *ids = NULL;
	int64_t	       now = time(NULL);
	int	       i, nev = 0;
	size_t	       ndel, nprot, npr, nann2, nrepl;

	memset(ev, 0, sizeof(ev));
	REQUIRE((a = gd_start(NULL)) != NULL);
	domain_of(a, domain, sizeof(domain));

	/* Repository alpha of user 1, served; its state made now. */
	tuser_sk(FILL, 1, sk);
	snprintf(wdir, sizeof(wdir), "%s/work%d", tmpdir, ndirs++);
	REQUIRE((ann = gd_host_repo(a, sk, "alpha", "", wdir, oid)) != NULL);
	tuser_coord(FILL, 1, "alpha", coord, sizeof(coord));
	for (i = 0; gd_has_event(a, ann->id_hex) != 1; i++) {
		REQUIRE(i < SERVED_MS / 100);
		usleep(100000);
	}

	/* The announcement replaced after its state: later in seq. */
	ev[nrepl = nev++] = announcement(a, 1, now + 5, "alpha", "moved");
	/* Threads, one of them protected, a reply, a deletion. */
	for (i = 2; i <= 3; i++) {
		buf_reset(&t);
		buf_printf(&t, "[[\"a\",\"%s\"],[\"subject\",\"issue %d\"]]",
		    coord, i);
		ev[nev++] = ev_of(i, now - 50 + i, 1621, t.b_data, "an issue");
	}
	buf_reset(&t);
	buf_printf(&t, "[[\"a\",\"%s\"],[\"subject\",\"doomed\"]]", coord);
	ev[ndel = nev++] = ev_of(3, now - 40, 1621, t.b_data, "withdrawn");
	buf_reset(&t);
	buf_printf(&t, "[[\"e\",\"%s\"]]", ev[ndel]->id_hex);
	ev[nev++] = ev_of(3, now - 30, 5, t.b_data, "");
	buf_reset(&t);
	buf_printf(&t,
	    "[[\"E\",\"%s\"],[\"K\",\"1621\"],[\"e\",\"%s\"],"
	    "[\"k\",\"1621\"]]",
	    ev[1]->id_hex, ev[1]->id_hex);
	ev[nev++] = ev_of(2, now - 20, 1111, t.b_data, "a reply");
	/* Replaceable events, each replaced by a newer one. */
	ev[nev++] = ev_of(2, now - 45, 0, "[]", "{\"name\":\"old\"}");
	ev[nev++] = ev_of(2, now - 10, 0, "[]", "{\"name\":\"two\"}");
	ev[nev++] =
	    ev_of(7, now - 45, 10317, "[[\"g\",\"wss://a.example\"]]", "");
	ev[nev++] =
	    ev_of(7, now - 10, 10317, "[[\"g\",\"wss://b.example\"]]", "");
	/* A PR whose commit never came: held in purgatory. */
	buf_reset(&t);
	buf_printf(&t,
	    "[[\"a\",\"%s\"],[\"subject\",\"a PR\"],[\"c\",\"%040d\"]]", coord,
	    7);
	ev[npr = nev++] = ev_of(6, now - 15, 1618, t.b_data, "please pull");
	/* Repository beta of user 5, announced and never pushed: held. */
	ev[nann2 = nev++] = announcement(a, 5, now - 35, "beta", "held");
	for (i = 0; i < nev; i++)
		T_CHECK(gd_publish(a, ev[i]) == 0);
	/* Publishing the replaced versions did not keep them. */
	T_CHECK(gd_has_event(a, ev[nrepl]->id_hex) == 1);
	T_CHECK(gd_has_event(a, ann->id_hex) == 0);
	/* A protected issue, from its authenticated author (NIP-70). */
	buf_reset(&t);
	buf_printf(&t, "[[\"a\",\"%s\"],[\"subject\",\"mine\"],[\"-\"]]",
	    coord);
	ev[nprot = nev++] = ev_of(4, now - 25, 1621, t.b_data, "protected");
	T_CHECK(publish_authed(a, 4, ev[nprot]) == 0);
	/* beta's state, naming a commit that never came: held too. */
	tuser_sk(FILL, 5, sk);
	REQUIRE((ws = wsc_connect("127.0.0.1", gd_port(a), "/", 5000)) != NULL);
	T_CHECK(gt_state(ws, sk, now - 34, "beta",
		    "1111111111111111111111111111111111111111") == 0);
	wsc_close(ws);
	ws = NULL;

	REQUIRE((ids = stored_ids(gd_db_path(a))) != NULL);
	T_CHECK(ids_have(ids, "events", ev[nprot]->id_hex));
	T_CHECK(!ids_have(ids, "events", ev[ndel]->id_hex));
	T_CHECK(ids_have(ids, "held announcements", ev[nann2]->id_hex));
	T_CHECK(ids_have(ids, "held events", ev[npr]->id_hex));
	T_CHECK(ids_count(ids, "held events") == 2);
	printf("# the store:\n%s", ids);

	snprintf(path, sizeof(path), "%s/export.jsonl", tmpdir);
	snprintf(shuf, sizeof(shuf), "%s/shuffled.jsonl", tmpdir);
	snprintf(dir1, sizeof(dir1), "%s/backup1", tmpdir);
	snprintf(dir2, sizeof(dir2), "%s/backup2", tmpdir);
	snprintf(args, sizeof(args), "export > '%s'", path);
	REQUIRE(ctl_env(a, args, 0, NULL) == 0);
	REQUIRE(shuffle_file(path, shuf, SHUFFLE_SEED) == 0);
	snprintf(args, sizeof(args), "backup '%s'", dir1);
	REQUIRE(ctl_env(a, args, 0, NULL) == 0);
	snprintf(args, sizeof(args), "backup '%s'", dir2);
	REQUIRE(ctl_env(a, args, 0, NULL) == 0);
	gd_free(a);
	a = NULL;

	import_into_new(dir1, domain, path, ids, ev[nprot]);
	import_into_new(dir2, domain, shuf, ids, ev[nprot]);
done:
	for (i = 0; i < nev; i++)
		event_destroy(ev[i]);
	event_destroy(ann);
	buf_free(&t);
	free(ids);
	gd_free(a);
}

/* 1 if s holds needle exactly once. */
static int
once(const char *s, const char *needle)
{
	const char *p;

	if (s == NULL || (p = strstr(s, needle)) == NULL)
		return 0;
	return strstr(p + 1, needle) == NULL;
}

static void
test_data_found_through_r_and_f(void)
{
	struct gdproc *g = NULL;
	struct event  *e = NULL;
	FILE	      *f;
	char	       conf[700], args[1600], dir[700], env[800], *out = NULL;
	char	       imp[1700];
	char	       db[800], *by_env = NULL;

	REQUIRE((g = gd_start(NULL)) != NULL);
	e = ev_of(7, time(NULL), 10317, "[[\"g\",\"wss://r.example\"]]", "");
	REQUIRE(gd_publish(g, e) == 0);

	/* -r: the running relayd says where its data is. */
	T_CHECK(ctl_r(g, "export", 0, &out) == 0);
	T_CHECK(once(out, e->id_hex));
	free(out);
	out = NULL;
	snprintf(dir, sizeof(dir), "%s/rbackup", tmpdir);
	snprintf(args, sizeof(args), "backup '%s'", dir);
	T_CHECK(ctl_r(g, args, 0, NULL) == 0);
	snprintf(db, sizeof(db), "%s/relay/graspd.db", dir);
	T_CHECK(access(db, R_OK) == 0);
	snprintf(args, sizeof(args), "%s/one.jsonl", tmpdir);
	if ((f = fopen(args, "w")) != NULL) {
		fprintf(f, "%s\n", e->json);
		fclose(f);
	}
	snprintf(imp, sizeof(imp), "-j import '%s'", args);
	T_CHECK(ctl_r(g, imp, 0, &out) == 0);
	T_CHECK(out != NULL && strstr(out, "\"duplicate\":\t1") != NULL);
	free(out);
	out = NULL;

	/* -f: the configuration's paths. */
	snprintf(conf, sizeof(conf), "%s/graspd.conf", tmpdir);
	REQUIRE((f = fopen(conf, "w")) != NULL);
	fprintf(f, "relay_data_path = %s/relay\ngit_data_path = %s/git\n",
	    gd_dir(g), gd_dir(g));
	fclose(f);
	snprintf(args, sizeof(args), "-f '%s' export", conf);
	T_CHECK(graspctl("", args, 0, &out) == 0);
	T_CHECK(once(out, e->id_hex));
	free(out);
	out = NULL;
	/* NGIT_RELAY_DATA_PATH, as before. */
	snprintf(env, sizeof(env), "NGIT_RELAY_DATA_PATH='%s/relay'",
	    gd_dir(g));
	T_CHECK(graspctl(env, "export", 0, &by_env) == 0);
	T_CHECK(once(by_env, e->id_hex));

	/* No database: one line, the path once, and what to do. */
	snprintf(env, sizeof(env),
	    "NGIT_RUN_PATH='%s/none' NGIT_RELAY_DATA_PATH='%s/none'", tmpdir,
	    tmpdir);
	snprintf(db, sizeof(db), "%s/none/graspd.db", tmpdir);
	T_CHECK(graspctl(env, "export", 1, &out) == 1);
	printf("# %s", out ? out : "(nothing)\n");
	T_CHECK(once(out, db));
	T_CHECK(out != NULL && strchr(out, '\n') == out + strlen(out) - 1);
	T_CHECK(out != NULL && strstr(out, "-f") != NULL &&
	    strstr(out, "-r") != NULL);
	free(out);
	out = NULL;
	snprintf(dir, sizeof(dir), "%s/nobackup", tmpdir);
	snprintf(args, sizeof(args), "backup '%s'", dir);
	T_CHECK(graspctl(env, args, 1, &out) == 1);
	T_CHECK(once(out, db));
	T_CHECK(access(dir, F_OK) == -1);
	free(out);
	out = NULL;
	/* -r where nothing runs. */
	snprintf(args, sizeof(args), "-r '%s/none' export", tmpdir);
	T_CHECK(graspctl("", args, 1, &out) == 1);
	printf("# %s", out ? out : "(nothing)\n");
	T_CHECK(out != NULL && strstr(out, "-f") != NULL &&
	    strchr(out, '\n') == out + strlen(out) - 1);
done:
	free(out);
	free(by_env);
	event_destroy(e);
	gd_free(g);
}

static int created_user;

static void
test_import_says_what_to_chown(void)
{
	const char    *env[] = { "NGIT_USER=" TEST_USER, NULL };
	struct gdproc *g = NULL;
	struct event  *e = NULL;
	struct passwd *pw;
	FILE	      *f;
	char	       cmd[600], repo[700], path[700], args[1000];
	char	      *out = NULL;

	if (geteuid() != 0) {
		printf("# SKIP needs root (roles run as another user)\n");
		return;
	}
	if ((pw = getpwnam(TEST_USER)) == NULL) {
		snprintf(cmd, sizeof(cmd),
		    "useradd --system --no-create-home --home-dir "
		    "/nonexistent --shell /usr/sbin/nologin %s",
		    TEST_USER);
		REQUIRE(system(cmd) == 0);
		created_user = 1;
		REQUIRE((pw = getpwnam(TEST_USER)) != NULL);
	}
	REQUIRE((g = gd_start(env)) != NULL);
	/* A repository copied in as root, as "cp -a" or rsync would. */
	snprintf(repo, sizeof(repo), "%s/git/npub1copied", gd_dir(g));
	REQUIRE(mkdir(repo, 0755) == 0);
	snprintf(repo, sizeof(repo), "%s/git/npub1copied/alpha.git", gd_dir(g));
	REQUIRE(mkdir(repo, 0755) == 0);
	e = ev_of(7, time(NULL), 10317, "[[\"g\",\"wss://c.example\"]]", "");
	snprintf(path, sizeof(path), "%s/chown.jsonl", tmpdir);
	REQUIRE((f = fopen(path, "w")) != NULL);
	fprintf(f, "%s\n", e->json);
	fclose(f);
	snprintf(args, sizeof(args), "import '%s'", path);
	T_CHECK(ctl_env(g, args, 1, &out) == 1);
	printf("# %s", out ? out : "(nothing)\n");
	snprintf(cmd, sizeof(cmd), "chown -R %s: %s/git", TEST_USER, gd_dir(g));
	T_CHECK(out != NULL && strstr(out, cmd) != NULL);
	T_CHECK(out != NULL && strstr(out, "npub1copied") != NULL);
	T_CHECK(gd_has_event(g, e->id_hex) == 0);
	free(out);
	out = NULL;
	/* Once chowned, it imports. */
	REQUIRE(system(cmd) == 0);
	T_CHECK(ctl_env(g, args, 1, &out) == 0);
	T_CHECK(gd_has_event(g, e->id_hex) == 1);
done:
	free(out);
	event_destroy(e);
	gd_free(g);
	if (created_user) {
		snprintf(cmd, sizeof(cmd), "userdel %s", TEST_USER);
		if (system(cmd) != 0)
			printf("# userdel %s failed\n", TEST_USER);
	}
}

static const struct t_case cases[] = {
	T_CASE(test_export_import_round_trip),
	T_CASE(test_data_found_through_r_and_f),
	T_CASE(test_import_says_what_to_chown),
};

T_MAIN_FIXTURE(cases, &gt_fixture, &tp, T_IGN_SIGPIPE)
