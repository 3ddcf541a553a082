/*
 * backup_test.c: graspctl export, import and backup (graspctl(8)) against
 * whole graspd instances.  A repository is announced and pushed, its
 * threads published; the export, imported into an empty graspd that
 * starts on the backup's git tree (the migration of README's
 * "Operations"), gives the same event set; relayd's answers are counted
 * by prefix; a backup taken while a client publishes holds every event
 * acknowledged before it began, and its repository passes git fsck.
 */
#include <sys/stat.h>

#include <pthread.h>
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
#include "nip19.h"
#include "nostr.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

/* How long a released repository may take to be served. */
#define SERVED_MS   15000
/* Events the load test's client has acknowledged before the backup. */
#define LOAD_BEFORE 40
/* Most events the load test's client publishes. */
#define LOAD_MAX    3000

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-backup" };
static int		ndirs;

static void
sk_of(int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, 0x5b, SECKEY_LEN);
	sk[31] = (uint8_t)n;
}

static void
domain_of(struct gdproc *g, char *out, size_t len)
{
	snprintf(out, len, "127.0.0.1:%d", gd_port(g));
}

/*
 * Runs graspctl args on the data of g (its directory and port), with
 * stdout in *out when not NULL (the caller frees).  The exit status, or
 * -1.
 */
static int
ctl_on(struct gdproc *g, const char *args, char **out)
{
	const char *bin = getenv("GRASPD_BIN");
	char	    cmd[4096];

	if (bin == NULL || *bin == '\0')
		bin = "bin";
	snprintf(cmd, sizeof(cmd),
	    "NGIT_RELAY_DATA_PATH='%s/relay' "
	    "NGIT_GIT_DATA_PATH='%s/git' NGIT_RUN_PATH='%s/run' "
	    "NGIT_BIND_ADDRESS=127.0.0.1:%d '%s/graspctl' %s",
	    gd_dir(g), gd_dir(g), gd_dir(g), gd_port(g), bin, args);
	return ctl_run(cmd, out);
}

/*
 * The repository d of owner announced on g and released by a push, then
 * served.  0 (the announcement into *annp when not NULL) or -1.
 */
static int
serve(struct gdproc *g, int owner, const char *d, char oid[41],
    struct event **annp)
{
	struct event *ann;
	uint8_t	      sk[SECKEY_LEN];
	char	      dir[600];
	int64_t	      end;
	int	      rc = 0;

	sk_of(owner, sk);
	snprintf(dir, sizeof(dir), "%s/work%d", tmpdir, ndirs++);
	if ((ann = gd_host_repo(g, sk, d, "", dir, oid)) == NULL)
		return -1;
	for (end = wsc_now_ms() + SERVED_MS;
	     rc == 0 && gd_has_event(g, ann->id_hex) != 1; usleep(100000))
		if (wsc_now_ms() > end) {
			printf("# the announcement is not served\n");
			rc = -1;
		}
	if (rc == 0 && annp != NULL)
		*annp = ann;
	else
		event_destroy(ann);
	return rc;
}

static struct event *
signed_by(int n, uint32_t kind, const char *tags, const char *content)
{
	uint8_t	      sk[SECKEY_LEN];
	struct event *e;

	sk_of(n, sk);
	if ((e = event_new_signed(sk, time(NULL), kind, tags, content)) == NULL)
		abort();
	return e;
}

/* The lines of a file, sorted, as one string; NULL if unreadable. */
static char *
sorted_lines(const char *path)
{
	char cmd[1200], *out = NULL;

	snprintf(cmd, sizeof(cmd), "LC_ALL=C sort '%s'", path);
	if (ctl_run(cmd, &out) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* 1 if the JSON lines in s hold the event with id_hex. */
static int
has_id(const char *s, const char *id_hex)
{
	char needle[80];

	snprintf(needle, sizeof(needle), "\"id\":\"%s\"", id_hex);
	return strstr(s, needle) != NULL;
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/*
 * Writes the events of the shared vectors (the "event" of each line) to
 * path, and a line that is no event.  Returns how many lines are
 * invalid events or not events at all, or -1.
 */
static int
vector_events(const char *path)
{
	const char *dir = getenv("GRASPD_VECTORS");
	char	    in[1024], line[65536], *text;
	FILE	   *f, *o;
	cJSON	   *v;
	int	    bad = 1;

	snprintf(in, sizeof(in), "%s/events.jsonl",
	    dir != NULL && *dir != '\0' ? dir : "tests/vectors");
	if ((f = fopen(in, "r")) == NULL || (o = fopen(path, "w")) == NULL) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((v = cJSON_Parse(line)) == NULL)
			continue;
		text = cJSON_PrintUnformatted(cJSON_GetObjectItem(v, "event"));
		if (text != NULL)
			fprintf(o, "%s\n", text);
		bad += !cJSON_IsTrue(cJSON_GetObjectItem(v, "valid"));
		free(text);
		cJSON_Delete(v);
	}
	fprintf(o, "not an event\n");
	fclose(f);
	fclose(o);
	return bad;
}

/* graspctl -j import path on g; its summary, or NULL. */
static cJSON *
import_on(struct gdproc *g, const char *path)
{
	char   args[1200], *out = NULL;
	cJSON *j = NULL;
	int    rc;

	snprintf(args, sizeof(args), "-j import '%s'", path);
	if ((rc = ctl_on(g, args, &out)) == 0)
		j = cJSON_Parse(out);
	else
		printf("# import: exit %d: %s\n", rc, out ? out : "");
	free(out);
	return j;
}

static void
test_export_import_gives_the_same_events(void)
{
	struct gdproc *a = NULL, *b = NULL;
	struct event  *ann = NULL, *ev[12];
	struct buf     t = BUF_INIT;
	char	    oid[41], coord[200], pkhex[PUBKEY_HEX_LEN + 1], domain[64];
	char	    env0[800];
	char	    env1[100], args[2000], path_a[700], path_b[700];
	char	    path_v[700], dir[700], *out = NULL, *la = NULL;
	char	   *lb = NULL;
	const char *benv[] = { env0, env1, NULL };
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	cJSON	   *sum = NULL, *reasons;
	int	    i, nev = 0, nlines, nbad;

	memset(ev, 0, sizeof(ev));
	T_ASSERT((a = gd_start(NULL)) != NULL);
	if (serve(a, 1, "moved", oid, &ann) == -1)
		goto done;
	sk_of(1, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, pkhex);
	snprintf(coord, sizeof(coord), "30617:%s:moved", pkhex);

	/* Threads, a profile, grasp lists and a deletion. */
	for (i = 2; i <= 5; i++) {
		buf_reset(&t);
		buf_printf(&t, "[[\"a\",\"%s\"],[\"subject\",\"issue %d\"]]",
		    coord, i);
		ev[nev++] = signed_by(i, 1621, t.b_data, "an issue");
	}
	buf_reset(&t);
	buf_printf(&t,
	    "[[\"E\",\"%s\"],[\"K\",\"1621\"],[\"e\",\"%s\"],"
	    "[\"k\",\"1621\"]]",
	    ev[0]->id_hex, ev[0]->id_hex);
	ev[nev++] = signed_by(3, 1111, t.b_data, "a comment");
	ev[nev++] = signed_by(2, 0, "[]", "{\"name\":\"two\"}");
	ev[nev++] = signed_by(7, 10317, "[[\"g\",\"wss://example.org\"]]", "");
	ev[nev++] = signed_by(8, 10317, "[[\"g\",\"wss://example.net\"]]", "");
	buf_reset(&t);
	buf_printf(&t, "[[\"e\",\"%s\"]]", ev[3]->id_hex);
	ev[nev++] = signed_by(5, 5, t.b_data, "withdrawn");
	for (i = 0; i < nev; i++)
		T_CHECK(gd_publish(a, ev[i]) == 0);

	snprintf(path_a, sizeof(path_a), "%s/a.jsonl", tmpdir);
	snprintf(path_b, sizeof(path_b), "%s/b.jsonl", tmpdir);
	snprintf(dir, sizeof(dir), "%s/backup", tmpdir);
	snprintf(args, sizeof(args), "export > '%s'", path_a);
	T_ASSERT(ctl_on(a, args, NULL) == 0);
	T_ASSERT((la = sorted_lines(path_a)) != NULL);
	/* The announcement, the state and all but the deleted issue. */
	nlines = count_lines(la);
	T_EQ_INT(nlines, 2 + nev - 1);
	T_CHECK(has_id(la, ann->id_hex));
	for (i = 0; i < nev; i++)
		if (has_id(la, ev[i]->id_hex) != (i != 3)) {
			printf("# event %d (kind %u)\n", i, ev[i]->kind);
			T_CHECK(!"exported as published");
		}

	/* A filter and --since. */
	T_ASSERT(ctl_on(a, "export '{\"kinds\":[1621]}'", &out) == 0);
	T_EQ_INT(count_lines(out), 3);
	T_CHECK(has_id(out, ev[0]->id_hex) && !has_id(out, ev[4]->id_hex));
	free(out);
	snprintf(args, sizeof(args), "export --since %lld '{\"kinds\":[1621]}'",
	    (long long)time(NULL) + 3600);
	T_ASSERT(ctl_on(a, args, &out) == 0);
	T_EQ_INT(count_lines(out), 0);
	free(out);
	out = NULL;
	T_CHECK(
	    ctl_on(a, "export '{\"kinds\":[1621],\"bogus\":1}'", NULL) == 64);

	/*
	 * The migration: the git tree first, then the events, into a new
	 * instance under the old one's name once the old one is gone.
	 */
	snprintf(args, sizeof(args), "backup '%s'", dir);
	T_ASSERT(ctl_on(a, args, NULL) == 0);
	domain_of(a, domain, sizeof(domain));
	gd_free(a);
	a = NULL;
	snprintf(env0, sizeof(env0), "NGIT_GIT_DATA_PATH=%s/git", dir);
	snprintf(env1, sizeof(env1), "NGIT_DOMAIN=%s", domain);
	T_ASSERT((b = gd_start(benv)) != NULL);
	T_ASSERT((sum = import_on(b, path_a)) != NULL);
	T_EQ_INT(num(sum, "lines"), nlines);
	T_EQ_INT(num(sum, "accepted"), nlines);
	T_EQ_INT(num(sum, "refused"), 0);
	cJSON_Delete(sum);
	snprintf(args, sizeof(args), "export > '%s'", path_b);
	T_ASSERT(ctl_on(b, args, NULL) == 0);
	T_ASSERT((lb = sorted_lines(path_b)) != NULL);
	T_EQ_STR(lb, la);

	/* Again: every event is a duplicate now. */
	T_ASSERT((sum = import_on(b, path_a)) != NULL);
	T_EQ_INT(num(sum, "duplicate"), nlines);
	T_EQ_INT(num(sum, "accepted"), 0);
	cJSON_Delete(sum);

	/* The vectors' events: refusals counted by their prefix. */
	snprintf(path_v, sizeof(path_v), "%s/vectors.jsonl", tmpdir);
	T_ASSERT((nbad = vector_events(path_v)) > 10);
	T_ASSERT((sum = import_on(b, path_v)) != NULL);
	reasons = cJSON_GetObjectItemCaseSensitive(sum, "reasons");
	T_CHECK(num(sum, "lines") > 40);
	T_CHECK(num(sum, "accepted") >= 2); /* kind 5, kind 10317 */
	T_CHECK(num(reasons, "invalid:") >= nbad);
	T_CHECK(num(reasons, "blocked:") > 0);
	T_EQ_INT(num(sum, "accepted") + num(sum, "duplicate") +
		num(sum, "refused"),
	    num(sum, "lines"));
	cJSON_Delete(sum);
done:
	for (i = 0; i < nev; i++)
		event_destroy(ev[i]);
	event_destroy(ann);
	buf_free(&t);
	free(la);
	free(lb);
	free(out);
	gd_free(b);
	gd_free(a);
}

/* The load test's client: issues, one at a time, until told to stop. */
struct load {
	struct gdproc  *ld_g;
	char		ld_coord[200];
	char		ld_ids[LOAD_MAX][EVENT_ID_HEX_LEN + 1];
	int		ld_acked;
	int		ld_stop;
	pthread_mutex_t ld_mu;
};

static void *
load_run(void *arg)
{
	struct load  *ld = arg;
	struct event *e;
	struct wsc   *ws;
	char	      tags[300], *msg = NULL;
	int	      i, ok, stop;

	if ((ws = wsc_connect("127.0.0.1", gd_port(ld->ld_g), "/", 5000)) ==
	    NULL)
		return NULL;
	for (i = 0; i < LOAD_MAX; i++) {
		pthread_mutex_lock(&ld->ld_mu);
		stop = ld->ld_stop;
		pthread_mutex_unlock(&ld->ld_mu);
		if (stop)
			break;
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"%s\"],[\"subject\","
		    "\"load %d\"]]",
		    ld->ld_coord, i);
		e = signed_by(10 + i % 200, 1621, tags, "under load");
		ok = 0;
		if (nostr_publish(ws, e, 10000, &ok, &msg) == 0 && ok) {
			pthread_mutex_lock(&ld->ld_mu);
			memcpy(ld->ld_ids[ld->ld_acked++], e->id_hex,
			    EVENT_ID_HEX_LEN + 1);
			pthread_mutex_unlock(&ld->ld_mu);
		}
		free(msg);
		msg = NULL;
		event_destroy(e);
	}
	wsc_close(ws);
	return NULL;
}

static void
test_backup_under_load_holds_every_acknowledged_event(void)
{
	static struct load ld;
	struct gdproc	  *g = NULL;
	struct store	  *st = NULL;
	pthread_t	   th;
	uint8_t		   sk[SECKEY_LEN], pk[PUBKEY_LEN], id[EVENT_ID_LEN];
	char	oid[41], pkhex[PUBKEY_HEX_LEN + 1], npub[NIP19_KEY_BUFSZ];
	char	dir[700], args[800], path[900], err[256];
	char	rev[41], *out = NULL;
	int64_t end;
	int	before = 0, after, i, missing = 0, started = 0;

	memset(&ld, 0, sizeof(ld));
	pthread_mutex_init(&ld.ld_mu, NULL);
	T_ASSERT((g = gd_start(NULL)) != NULL);
	if (serve(g, 1, "loaded", oid, NULL) == -1)
		goto done;
	sk_of(1, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, PUBKEY_LEN, pkhex);
	snprintf(ld.ld_coord, sizeof(ld.ld_coord), "30617:%s:loaded", pkhex);
	ld.ld_g = g;
	T_ASSERT(pthread_create(&th, NULL, load_run, &ld) == 0);
	started = 1;
	for (end = wsc_now_ms() + 30000; wsc_now_ms() < end; usleep(20000)) {
		pthread_mutex_lock(&ld.ld_mu);
		before = ld.ld_acked;
		pthread_mutex_unlock(&ld.ld_mu);
		if (before >= LOAD_BEFORE)
			break;
	}
	T_ASSERT(before >= LOAD_BEFORE);
	snprintf(dir, sizeof(dir), "%s/loaded-backup", tmpdir);
	snprintf(args, sizeof(args), "backup '%s'", dir);
	T_CHECK(ctl_on(g, args, NULL) == 0);
	pthread_mutex_lock(&ld.ld_mu);
	after = ld.ld_acked;
	ld.ld_stop = 1;
	pthread_mutex_unlock(&ld.ld_mu);
	pthread_join(th, NULL);
	started = 0;
	printf("# %d events acknowledged before the backup, %d when it "
	       "ended\n",
	    before, after);
	T_CHECK(after > before);

	snprintf(path, sizeof(path), "%s/relay/graspd.db", dir);
	T_ASSERT((st = store_open(path, 1, err, sizeof(err))) != NULL);
	for (i = 0; i < before; i++) {
		hex_decode(ld.ld_ids[i], EVENT_ID_HEX_LEN, id, EVENT_ID_LEN);
		if (store_has_id(st, id) != 1)
			missing++;
	}
	T_EQ_INT(missing, 0);
	T_CHECK(store_count(st) >= before + 2);
	/* The copy is a database on its own (no WAL needed). */
	{
		sqlite3_stmt *q;

		T_ASSERT(
		    sqlite3_prepare_v2(store_sqlite(st),
			"PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK);
		T_CHECK(sqlite3_step(q) == SQLITE_ROW &&
		    strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0);
		sqlite3_finalize(q);
	}

	/* The repository came along whole. */
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(path, sizeof(path), "%s/git/%s/loaded.git", dir, npub);
	T_CHECK(gt_git(path, &out, "fsck", "--strict", NULL) == 0);
	T_CHECK(
	    gt_rev(path, "refs/heads/main", rev) == 0 && strcmp(rev, oid) == 0);
	snprintf(path, sizeof(path), "%s/relay/.relay-owner.nsec", dir);
	{
		struct stat sb;

		T_CHECK(stat(path, &sb) == 0 && (sb.st_mode & 077) == 0);
	}
	/* An existing, non-empty directory is refused. */
	T_CHECK(ctl_on(g, args, NULL) == 1);
done:
	if (started) {
		pthread_mutex_lock(&ld.ld_mu);
		ld.ld_stop = 1;
		pthread_mutex_unlock(&ld.ld_mu);
		pthread_join(th, NULL);
	}
	free(out);
	store_close(st);
	gd_free(g);
}

static const struct t_case cases[] = {
	T_CASE(test_export_import_gives_the_same_events),
	T_CASE(test_backup_under_load_holds_every_acknowledged_event),
};

T_MAIN_FIXTURE(cases, &gt_fixture, &tp, T_IGN_SIGPIPE)
