/*
 * powercut_test.c: an OK survives a power cut (issue #40), in the spirit
 * of SQLite's crash tests.  relayd runs alone on the recording VFS of
 * common/powercut.h (NGIT_TEST with GRASPD_POWERCUT_LOG): every write,
 * truncation and sync of its database files goes to a log.  Publisher
 * threads send events, each waiting for its OK, and keep the ids answered
 * OK true.  At a seeded operation of the log relayd kills itself
 * (GRASPD_POWERCUT_AT), in the middle of the load; tests/lib/tpowercut.c
 * then rebuilds the files as a power cut would leave them (every write
 * after its file's last sync lost, kept or torn by the seed), and the
 * rebuilt database is opened: PRAGMA integrity_check must say ok and,
 * with durability full, every acknowledged event must be in it.  With
 * durability normal the same cuts lose acknowledged events: the test
 * shows how many, and that some seed does.
 *
 * A first run without a cut measures the load in operations (its start
 * and its end), so that the cuts fall inside it; it also checks the
 * recorder, since the files rebuilt with every write kept must be the
 * files on disk.  A cut's seed decides the operation it falls on and every
 * draw of the rebuilding; the operations themselves depend on how the
 * events met in batches.  GRASPD_POWERCUT_SEED replays (printed first),
 * GRASPD_POWERCUT_CUTS sets the number of cuts with durability full (3;
 * "make soak" asks for 100), GRASPD_POWERCUT_NORMAL_CUTS with normal (3).
 *
 * The git side is checked as configuration: a pushed repository's
 * receive-pack sees core.fsync for objects and refs under full (a hook
 * writes down what it sees), git's default under normal.
 */
#include <sys/stat.h>

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tpowercut.h"
#include "wsclient.h"

/* Publisher threads, each one EVENT in flight: commits of 1 to NPUB. */
#define NPUB	     3
/* Events of the measured load; a cut's load may go on to twice that. */
#define LOAD_EVENTS  3000
/* How long relayd may take to die once the cut is due, or to start. */
#define WAIT_EXIT_MS 20000
/* Cuts with durability normal beyond the asked ones while none lost. */
#define NORMAL_MORE  5

static uint64_t seed;
static char	tmp[256];
static long	load_first, load_last; /* the measured load's operations */
static unsigned run_no;

/* What the publishers share. */
struct load {
	pthread_mutex_t l_mu;
	int		l_port;
	unsigned	l_max;	/* events to publish in all */
	unsigned	l_sent; /* events handed out */
	uint8_t (*l_ids)[EVENT_ID_LEN];
	size_t	 l_n, l_cap;
	unsigned l_salt;
};

static void *
publish_loop(void *arg)
{
	struct load  *l = arg;
	struct wsc   *ws;
	struct event *ev;
	uint8_t	      sk[SECKEY_LEN];
	unsigned      k;
	int	      ok;

	if ((ws = wsc_connect("127.0.0.1", l->l_port, "/", 5000)) == NULL)
		return NULL;
	for (;;) {
		pthread_mutex_lock(&l->l_mu);
		k = l->l_sent < l->l_max ? ++l->l_sent : 0;
		pthread_mutex_unlock(&l->l_mu);
		if (k == 0)
			break;
		/* A key per event: replaceable 10317s never replace. */
		memset(sk, 0, sizeof(sk));
		sk[0] = 0x5c;
		memcpy(sk + 20, &l->l_salt, sizeof(l->l_salt));
		memcpy(sk + 28, &k, sizeof(k));
		if ((ev = event_new_signed(sk, time(NULL), 10317, "[]", "")) ==
		    NULL)
			abort();
		ok = 0;
		if (nostr_publish(ws, ev, 10000, &ok, NULL) == -1) {
			/* The cut: relayd is gone. */
			event_destroy(ev);
			break;
		}
		if (ok) {
			pthread_mutex_lock(&l->l_mu);
			if (l->l_n == l->l_cap) {
				l->l_cap = l->l_cap ? 2 * l->l_cap : 1024;
				if ((l->l_ids = realloc(l->l_ids,
					 l->l_cap * sizeof(*l->l_ids))) == NULL)
					abort();
			}
			memcpy(l->l_ids[l->l_n++], ev->id, EVENT_ID_LEN);
			pthread_mutex_unlock(&l->l_mu);
		}
		event_destroy(ev);
	}
	wsc_drop(ws);
	return NULL;
}

/* Runs the publishers until max events went out or relayd died. */
static void
load_run(struct load *l, int port, unsigned max)
{
	pthread_t th[NPUB];
	int	  i;

	l->l_port = port;
	l->l_max = max;
	l->l_salt = ++run_no ^ (unsigned)seed;
	for (i = 0; i < NPUB; i++)
		if (pthread_create(&th[i], NULL, publish_loop, l) != 0)
			abort();
	for (i = 0; i < NPUB; i++)
		pthread_join(th[i], NULL);
}

/* relayd on the recording VFS, logging to log, cut at op at (0: none). */
static struct relayproc *
start(const char *durability, const char *log, long at)
{
	char		  e_dur[64], e_log[512], e_at[64];
	const char *const env[] = { e_dur, e_log, e_at, NULL };

	snprintf(e_dur, sizeof(e_dur), "NGIT_DURABILITY=%s", durability);
	snprintf(e_log, sizeof(e_log), "GRASPD_POWERCUT_LOG=%s", log);
	snprintf(e_at, sizeof(e_at), "GRASPD_POWERCUT_AT=%ld", at);
	unlink(log);
	return relayproc_start("relayd", env);
}

/*
 * Opens the rebuilt database in dir: 1 when integrity_check says ok, with
 * the number of l's acknowledged events missing from it in *lost.
 */
static int
check_db(const char *dir, const struct load *l, size_t *lost)
{
	sqlite3	     *db;
	sqlite3_stmt *st;
	char	      path[512];
	int	      ok = 0;
	size_t	      i;

	*lost = l->l_n;
	snprintf(path, sizeof(path), "%s/graspd.db", dir);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		printf("# open %s: %s\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return 0;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		ok =
		    strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
		if (!ok)
			printf("# integrity_check: %s\n",
			    sqlite3_column_text(st, 0));
	} else
		printf("# integrity_check: %s\n", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (!ok)
		goto done;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM events WHERE id = ?", -1, &st,
		NULL) != SQLITE_OK) {
		printf("# events: %s\n", sqlite3_errmsg(db));
		ok = 0;
		goto done;
	}
	*lost = 0;
	for (i = 0; i < l->l_n; i++) {
		sqlite3_bind_blob(st, 1, l->l_ids[i], EVENT_ID_LEN,
		    SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_ROW)
			++*lost;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
done:
	sqlite3_close(db);
	return ok;
}

/* Byte for byte: 1 when the files a and b hold the same. */
static int
same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int   ca, cb, same = fa != NULL && fb != NULL;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		if (ca != cb)
			same = 0;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return same;
}

/* A fresh empty directory under tmp for a rebuilt store. */
static int
outdir(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmp, name);
	tdir_remove(out);
	return mkdir(out, 0755);
}

/*
 * The operations in the log once it has not grown for QUIET_MS (at most
 * QUIET_WAIT_MS): the load's, with the checkpoint that follows it, where
 * the other cases draw their cuts.
 */
#define QUIET_MS      500
#define QUIET_WAIT_MS 10000
static long
quiet_ops(const char *log)
{
	long n = tpc_ops(log), m;
	int  still = 0, waited = 0;

	while (still < QUIET_MS && waited < QUIET_WAIT_MS) {
		relayproc_sleep_ms(50);
		waited += 50;
		if ((m = tpc_ops(log)) == n)
			still += 50;
		else {
			n = m;
			still = 0;
		}
	}
	return n;
}

/*
 * The load without a cut: its operations, the recorder's faithfulness
 * (every write kept gives the files on disk), and a cut right after it.
 * relayd stops by SIGTERM, so that every operation it began is finished
 * and logged: the VFS logs a write after making it, and with SIGKILL,
 * even once the log had been still for 500 ms, the database on disk
 * twice held a page the log did not (clean-clone CI runs, both suites
 * loading the machine).  The cut then falls after relayd's stop too.
 */
static void
an_uncut_load_measures_and_the_log_is_faithful(void)
{
	struct load	  l;
	struct relayproc *rp;
	struct tpc_stats  st;
	struct wsc	 *ws;
	char		  log[512], out[512], a[600], b[600];
	size_t		  lost;

	memset(&l, 0, sizeof(l));
	pthread_mutex_init(&l.l_mu, NULL);
	snprintf(log, sizeof(log), "%s/measure.log", tmp);
	T_ASSERT((rp = start("full", log, 0)) != NULL);
	/*
	 * relayd listens before it opens the database: once it serves a
	 * websocket, its start-up writes are all in the log.
	 */
	T_ASSERT((ws = relayproc_ws_retry(rp, WAIT_EXIT_MS)) != NULL);
	wsc_close(ws);
	load_first = tpc_ops(log);
	load_run(&l, relayproc_port(rp), LOAD_EVENTS);
	load_last = quiet_ops(log);
	relayproc_kill(rp, SIGTERM);
	T_CHECK(relayproc_wait(rp, WAIT_EXIT_MS) >= 0);
	printf("# load: %zu events acknowledged, operations %ld to %ld\n",
	    l.l_n, load_first, load_last);
	T_CHECK(l.l_n == LOAD_EVENTS);
	T_ASSERT(load_first > 0 && load_last > load_first);

	T_ASSERT(outdir(out, sizeof(out), "measure-all") == 0);
	T_ASSERT(tpc_replay(log, out, 0, TPC_KEEP_ALL, &st) == 0);
	printf("# %ld operations: %ld WAL syncs, %ld database syncs\n", st.ops,
	    st.wal_syncs, st.db_syncs);
	/* durability full: a WAL sync for every commit, so for each OK. */
	T_CHECK(st.wal_syncs > 0);
	snprintf(a, sizeof(a), "%s/graspd.db", out);
	snprintf(b, sizeof(b), "%s/relay/graspd.db", relayproc_dir(rp));
	T_CHECK(same_file(a, b));
	snprintf(a, sizeof(a), "%s/graspd.db-wal", out);
	snprintf(b, sizeof(b), "%s/relay/graspd.db-wal", relayproc_dir(rp));
	T_CHECK(same_file(a, b));

	/* And a power cut once the load is over. */
	T_ASSERT(outdir(out, sizeof(out), "measure-cut") == 0);
	T_ASSERT(tpc_replay(log, out, seed, 0, &st) == 0);
	T_CHECK(check_db(out, &l, &lost));
	T_CHECK(lost == 0);
	relayproc_free(rp);
	free(l.l_ids);
	pthread_mutex_destroy(&l.l_mu);
}

/*
 * One seeded cut: relayd under the load dies at a drawn operation, the
 * files are rebuilt; 0 when integrity_check passed, with the acknowledged
 * events lost in *lost and acknowledged in *acked.
 */
static int
one_cut(const char *durability, uint64_t s, size_t *lost, size_t *acked)
{
	struct load	  l;
	struct relayproc *rp;
	struct tpc_stats  st;
	char		  log[512], out[512];
	uint64_t	  z = s * 0x9e3779b97f4a7c15ULL;
	long		  at;
	int		  died, ok = 0;

	*lost = *acked = 0;
	memset(&l, 0, sizeof(l));
	pthread_mutex_init(&l.l_mu, NULL);
	z ^= z >> 29;
	at = load_first + 1 + (long)(z % (uint64_t)(load_last - load_first));
	snprintf(log, sizeof(log), "%s/cut.log", tmp);
	if ((rp = start(durability, log, at)) == NULL)
		goto done;
	load_run(&l, relayproc_port(rp), 2 * LOAD_EVENTS);
	/* Not reached in twice the load: the cut comes after it. */
	died = relayproc_wait(rp,
		   l.l_sent >= 2 * LOAD_EVENTS ? 0 : WAIT_EXIT_MS) >= 0;
	if (!died) {
		relayproc_kill(rp, SIGKILL);
		relayproc_wait(rp, WAIT_EXIT_MS);
	}
	if (outdir(out, sizeof(out), "cut") == -1 ||
	    tpc_replay(log, out, s, 0, &st) == -1)
		goto done;
	ok = check_db(out, &l, lost);
	*acked = l.l_n;
	printf("# %s seed %llu: cut at operation %ld (%ld logged)%s, %zu "
	       "acknowledged, %ld WAL and %ld database syncs, after the "
	       "last sync %ld writes (%ld lost, %ld torn, %ld kept): "
	       "integrity %s, %zu acknowledged lost\n",
	    durability, (unsigned long long)s, at, st.ops,
	    st.cut ? "" : " (after the load)", l.l_n, st.wal_syncs, st.db_syncs,
	    st.pending, st.lost, st.torn, st.kept, ok ? "ok" : "BAD", *lost);
	if (!ok && getenv("GRASPD_KEEP_TMP") == NULL)
		relayproc_dump_log(rp, 20);
done:
	relayproc_free(rp);
	free(l.l_ids);
	pthread_mutex_destroy(&l.l_mu);
	unlink(log);
	return ok ? 0 : -1;
}

static void
power_cuts_lose_no_acknowledged_event(void)
{
	size_t lost, acked, all = 0;
	int    i, n = t_env_int("GRASPD_POWERCUT_CUTS", 3), bad = 0;

	T_ASSERT(load_last > load_first);
	for (i = 0; i < n; i++) {
		if (one_cut("full", seed + (uint64_t)i, &lost, &acked) == -1 ||
		    lost > 0)
			bad++;
		all += acked;
	}
	printf("# durability full: %d cuts, %zu events acknowledged, %d "
	       "with a loss or a damaged database\n",
	    n, all, bad);
	T_EQ_INT(bad, 0);
}

static void
durability_normal_shows_the_loss_it_allows(void)
{
	size_t lost, acked, all = 0, alllost = 0;
	int    i, n = t_env_int("GRASPD_POWERCUT_NORMAL_CUTS", 3), bad = 0;
	int    losing = 0;

	T_ASSERT(load_last > load_first);
	/*
	 * A cut inside a checkpoint's copy, after its sync of the WAL and
	 * before the next commit, loses nothing (1 in 6 or so): while no
	 * cut lost any, up to NORMAL_MORE more are made.
	 */
	for (i = 0; i < n || (losing == 0 && i < n + NORMAL_MORE); i++) {
		if (one_cut("normal", seed + 1000003 + (uint64_t)i, &lost,
			&acked) == -1)
			bad++;
		all += acked;
		alllost += lost;
		losing += lost > 0;
	}
	printf("# durability normal: %d cuts, %d lost acknowledged events "
	       "(%zu of %zu), %d damaged databases\n",
	    i, losing, alllost, all, bad);
	/* Never the integrity; the last acknowledged events, yes. */
	T_EQ_INT(bad, 0);
	T_CHECK(losing > 0);
}

/*
 * The git side: a push to a hosted repository runs receive-pack with
 * core.fsync on for objects and refs under durability full, and with
 * git's default under normal.  A pre-receive hook (it runs inside
 * receive-pack, with its configuration) writes down what git sees.
 */
static int
push_sees_fsync(const char *durability, char *seen, size_t seenlen)
{
	char		  e_dur[64], home[600], dir[600], hook[700], url[512];
	char		  seenpath[600], script[1024], oid[41], *out = NULL;
	const char *const env[] = { e_dur, NULL };
	struct relayproc *rp;
	struct wsc	 *ws = NULL;
	uint8_t		  sk[SECKEY_LEN] = { 0x77 }, pk[PUBKEY_LEN];
	char		  npub[100], *text;
	FILE		 *f;
	int		  rc = -1;
	size_t		  n;

	seen[0] = '\0';
	snprintf(e_dur, sizeof(e_dur), "NGIT_DURABILITY=%s", durability);
	if ((rp = relayproc_start("relayd", env)) == NULL)
		return -1;
	snprintf(home, sizeof(home), "%s/home", relayproc_dir(rp));
	snprintf(dir, sizeof(dir), "%s/work", relayproc_dir(rp));
	if (gt_setup(home) == -1 ||
	    client_host_repo(rp, sk, time(NULL) - 10, "fs", NULL, dir) == -1 ||
	    event_pubkey_of(sk, pk) == -1 ||
	    nip19_encode("npub", pk, npub, sizeof(npub)) == -1)
		goto done;
	snprintf(seenpath, sizeof(seenpath), "%s/fsync-seen",
	    relayproc_dir(rp));
	snprintf(hook, sizeof(hook), "%s/git/%s/fs.git/hooks",
	    relayproc_dir(rp), npub);
	mkdir(hook, 0755);
	snprintf(hook + strlen(hook), sizeof(hook) - strlen(hook),
	    "/pre-receive");
	snprintf(script, sizeof(script),
	    "#!/bin/sh\ncat >/dev/null\n"
	    "{ git config --get core.fsync; git config --get "
	    "core.fsyncMethod; } >'%s'\nexit 0\n",
	    seenpath);
	if ((f = fopen(hook, "w")) == NULL || fputs(script, f) == EOF ||
	    fclose(f) != 0 || chmod(hook, 0755) == -1)
		goto done;
	if ((ws = wsc_connect("127.0.0.1", relayproc_port(rp), "/", 5000)) ==
		NULL ||
	    gt_commit(dir, "b", "second\n", "second", oid) == -1 ||
	    gt_state(ws, sk, time(NULL), "fs", oid) == -1)
		goto done;
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, "fs");
	if (gt_git(dir, &out, "push", "-q", url, "main", NULL) != 0) {
		printf("# push: %s\n", out ? out : "");
		goto done;
	}
	if ((text = t_slurp(seenpath, &n)) == NULL) {
		printf("# the pre-receive hook did not run\n");
		goto done;
	}
	snprintf(seen, seenlen, "%s", text);
	free(text);
	for (n = 0; seen[n] != '\0'; n++)
		if (seen[n] == '\n')
			seen[n] = ' ';
	printf("# durability %s: receive-pack sees core.fsync, "
	       "core.fsyncMethod: \"%s\"\n",
	    durability, seen);
	rc = 0;
done:
	free(out);
	if (ws != NULL)
		wsc_close(ws);
	relayproc_free(rp);
	return rc;
}

static void
a_push_is_synced_by_git_unless_normal(void)
{
	char seen[256];

	T_ASSERT(push_sees_fsync("full", seen, sizeof(seen)) == 0);
	T_EQ_STR(seen, "objects,derived-metadata,reference fsync ");
	T_ASSERT(push_sees_fsync("normal", seen, sizeof(seen)) == 0);
	T_EQ_STR(seen, "");
}

static int
powercut_setup(void)
{
	uint8_t	      sk[SECKEY_LEN] = { 1 };
	struct event *ev;
	const char   *s = getenv("GRASPD_POWERCUT_SEED");

	seed = s != NULL && *s != '\0' ?
	    strtoull(s, NULL, 0) :
	    (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	printf("# seed %llu (GRASPD_POWERCUT_SEED to replay)\n",
	    (unsigned long long)seed);
	if (tdir_make(tmp, sizeof(tmp), "powercut") == -1)
		return -1;
	/* The signing context is set up here, before any thread. */
	if ((ev = event_new_signed(sk, time(NULL), 1, "[]", "")) != NULL)
		event_destroy(ev);
	return 0;
}

static void
powercut_cleanup(void)
{
	tdir_remove(tmp);
}

static const struct t_case cases[] = {
	T_CASE(an_uncut_load_measures_and_the_log_is_faithful),
	T_CASE(power_cuts_lose_no_acknowledged_event),
	T_CASE(durability_normal_shows_the_loss_it_allows),
	T_CASE(a_push_is_synced_by_git_unless_normal),
};

T_MAIN_WITH(cases, powercut_setup, powercut_cleanup, T_IGN_SIGPIPE)
