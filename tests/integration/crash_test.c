/*
 * crash_test.c: crash without loss (issue #11).  A whole graspd on
 * loopback while publisher threads keep sending events:
 *
 *  - every role is killed with SIGKILL at seeded random moments, several
 *    times each (GRASPD_CRASH_KILLS, default 1 to keep make test short;
 *    "make soak" asks for 20), one at a time and each only after it has
 *    been ready for longer than the supervisor's stable time (so every
 *    death gets an immediate restart, as the policy promises a role that
 *    ran): no other role changes pid, the killed one is running again
 *    within a bound, and every event answered OK true is stored
 *    afterwards.  The times from kill to running again are printed
 *    (min/median/p95/max, and how many took over 2 s).
 *  - power cut: graspd and every role are killed with SIGKILL at once in
 *    the middle of commits (seeded delay), started again on the same store: the
 *    database passes PRAGMA integrity_check and holds every acknowledged
 *    event.  GRASPD_CRASH_CUTS times (default 2; 1 under the
 *    sanitizers; "make soak" asks for 5).
 *  - the same cut once relayd has written its WAL file's room
 *    (wal_room_mb) while nothing committed: the commits that went over
 *    those zeros are all there after it.
 *
 * The seed is GRASPD_CRASH_SEED or the clock; it is printed first, so a
 * failing schedule can be replayed.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "gdproc.h"
#include "nostr.h"
#include "t.h"
#include "wsclient.h"

/* supervisor.h SUP_STABLE_SECS, plus a margin for our observation. */
#define STABLE_MS	 10000
#define STABLE_MARGIN_MS 500
/* Spread of the random moment after the stable time. */
#define JITTER_MS	 2000
/* The figure for a role to be back; reported, not asserted. */
#define TARGET_MS	 2000
/* What a test asserts: back well within this, however slow the box. */
#define COMEBACK_MS	 15000
/* Publisher threads (concurrent commits). */
#define NPUB		 3
/* The room of the WAL case (MiB), and how long relayd may take to write
 * it once started. */
#define ROOM_MB		 24
#define ROOM_MS		 20000
/* Ids of a REQ in one verification query. */
#define IDS_PER_REQ	 200

/* The seeded schedule (nrand48; the seed is printed). */
static unsigned long long seed;
static unsigned short	  rng_xsubi[3];
/* Per run, so that two runs on one store never share a key. */
static uint8_t		  run_salt;
/* Events published by every thread so far: each gets its own key. */
static uint32_t		  published;

static long
rng(void)
{
	return nrand48(rng_xsubi);
}

static void
nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* What the publishers share: the port and the acknowledged ids. */
struct acked {
	pthread_mutex_t a_mu;
	int		a_port;
	volatile int	a_stop;
	char (*a_ids)[EVENT_ID_HEX_LEN + 1];
	size_t	 a_n, a_cap;
	unsigned a_tries, a_errors;
};

struct publisher {
	struct acked *p_acked;
	pthread_t     p_thread;
	int	      p_index;
};

static void
acked_add(struct acked *a, const char *id)
{
	pthread_mutex_lock(&a->a_mu);
	if (a->a_n == a->a_cap) {
		a->a_cap = a->a_cap ? 2 * a->a_cap : 1024;
		if ((a->a_ids = realloc(a->a_ids,
			 a->a_cap * sizeof(*a->a_ids))) == NULL)
			abort();
	}
	memcpy(a->a_ids[a->a_n++], id, EVENT_ID_HEX_LEN + 1);
	pthread_mutex_unlock(&a->a_mu);
}

/*
 * Publishes new 10317s (replaceable, one per author: a key per event, so
 * none replaces another) until told to stop; reconnects after errors.
 */
static void *
publish_loop(void *arg)
{
	struct publisher *p = arg;
	struct acked	 *a = p->p_acked;
	struct wsc	 *ws = NULL;
	struct event	 *ev;
	uint8_t		  sk[SECKEY_LEN];
	uint32_t	  seq;
	int		  ok;

	while (!a->a_stop) {
		if (ws == NULL &&
		    (ws = wsc_connect("127.0.0.1", a->a_port, "/", 1000)) ==
			NULL) {
			__atomic_add_fetch(&a->a_errors, 1, __ATOMIC_RELAXED);
			nap(200);
			continue;
		}
		memset(sk, 0, sizeof(sk));
		sk[0] = 0x3c;
		sk[1] = run_salt;
		seq = __atomic_add_fetch(&published, 1, __ATOMIC_RELAXED);
		memcpy(sk + 28, &seq, sizeof(seq));
		if ((ev = event_new_signed(sk, time(NULL), 10317, "[]", "")) ==
		    NULL)
			abort();
		__atomic_add_fetch(&a->a_tries, 1, __ATOMIC_RELAXED);
		ok = 0;
		if (nostr_publish(ws, ev, 5000, &ok, NULL) == -1) {
			wsc_drop(ws);
			ws = NULL;
			__atomic_add_fetch(&a->a_errors, 1, __ATOMIC_RELAXED);
		} else if (ok)
			acked_add(a, ev->id_hex);
		event_destroy(ev);
	}
	if (ws != NULL)
		wsc_drop(ws);
	return NULL;
}

static void
publishers_start(struct publisher *ps, struct acked *a)
{
	int i;

	a->a_stop = 0;
	for (i = 0; i < NPUB; i++) {
		ps[i].p_acked = a;
		ps[i].p_index = i;
		if (pthread_create(&ps[i].p_thread, NULL, publish_loop,
			&ps[i]) != 0)
			abort();
	}
}

static void
publishers_stop(struct publisher *ps, struct acked *a)
{
	int i;

	a->a_stop = 1;
	for (i = 0; i < NPUB; i++)
		pthread_join(ps[i].p_thread, NULL);
}

/* How many of the acknowledged ids relayd returns; -1 on error. */
static long
count_stored(int port, const struct acked *a)
{
	struct buf  f = BUF_INIT;
	struct wsc *ws;
	char	  **evs;
	size_t	    i, j, n, nev;
	long	    found = 0;

	if ((ws = wsc_connect("127.0.0.1", port, "/", 5000)) == NULL)
		return -1;
	for (i = 0; i < a->a_n; i += IDS_PER_REQ) {
		n = a->a_n - i < IDS_PER_REQ ? a->a_n - i : IDS_PER_REQ;
		buf_reset(&f);
		buf_adds(&f, "{\"ids\":[");
		for (j = 0; j < n; j++)
			buf_printf(&f, "%s\"%s\"", j ? "," : "",
			    a->a_ids[i + j]);
		buf_printf(&f, "],\"limit\":%zu}", n);
		evs = NULL;
		nev = 0;
		if (nostr_req(ws, "ids", f.b_data, 20000, &evs, &nev, NULL) !=
			0 ||
		    nostr_close_sub(ws, "ids") == -1) {
			nostr_events_free(evs);
			found = -1;
			break;
		}
		found += (long)nev;
		nostr_events_free(evs);
	}
	wsc_close(ws);
	buf_free(&f);
	return found;
}

/* Prints min/median/p95/max of n times (sorted here). */
static void
print_times(const char *what, long *ms, size_t n)
{
	size_t i, over = 0;

	if (n == 0)
		return;
	qsort(ms, n, sizeof(*ms), t_cmp_long);
	for (i = 0; i < n; i++)
		over += ms[i] > TARGET_MS;
	printf("# %s: %zu restarts, back in min %ld ms, median %ld ms, "
	       "p95 %ld ms, max %ld ms; %zu over %d ms\n",
	    what, n, ms[0], ms[n / 2], ms[(n * 95 + 99) / 100 - 1], ms[n - 1],
	    over, TARGET_MS);
}

static void
test_kill9_roles_at_random_moments_nothing_acked_lost(void)
{
	struct publisher ps[NPUB];
	struct acked	 a;
	struct gdproc	*g;
	char		 states[GD_NROLES][16];
	long		 pids[GD_NROLES], before[GD_NROLES];
	long		 expect[GD_NROLES];
	long		*times[GD_NROLES + 1], found;
	int64_t		 ready_at[GD_NROLES], due[GD_NROLES], t0, now;
	int		 kills[GD_NROLES], i, v, back, total = 0, want;
	size_t		 nt[GD_NROLES + 1];
	char		 what[64];

	want = t_env_int("GRASPD_CRASH_KILLS", 1);
	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&a.a_mu, NULL);
	g = gd_start(NULL);
	T_ASSERT(g != NULL);
	a.a_port = gd_port(g);
	for (i = 0; i <= GD_NROLES; i++) {
		nt[i] = 0;
		if ((times[i] = calloc((size_t)want * GD_NROLES,
			 sizeof(long))) == NULL)
			abort();
	}
	T_ASSERT(gd_roles_now(g, states, expect) == 0);
	now = wsc_now_ms();
	for (i = 0; i < GD_NROLES; i++) {
		kills[i] = 0;
		ready_at[i] = now;
		due[i] = now + STABLE_MS + STABLE_MARGIN_MS +
		    (int64_t)(rng() % JITTER_MS);
	}
	publishers_start(ps, &a);

	while (total < want * GD_NROLES) {
		/* The next victim: the role due first among those left. */
		for (v = -1, i = 0; i < GD_NROLES; i++)
			if (kills[i] < want && (v == -1 || due[i] < due[v]))
				v = i;
		while ((now = wsc_now_ms()) < due[v])
			nap((int)(due[v] - now < 50 ? due[v] - now : 50));
		if (gd_roles_now(g, states, before) == -1 ||
		    strcmp(states[v], "running") != 0 || before[v] <= 0) {
			printf("# %s is %s before its kill\n", gd_roles[v],
			    states[v]);
			gd_dump_log(g, 30);
			T_CHECK(!"role running before its kill");
			break;
		}
		/* Nobody restarted since the last kill either. */
		for (i = 0; i < GD_NROLES; i++)
			if (before[i] != expect[i]) {
				printf("# %s changed pid %ld -> %ld between "
				       "kills\n",
				    gd_roles[i], expect[i], before[i]);
				T_CHECK(!"a role restarted on its own");
			}
		T_CHECK(kill((pid_t)before[v], SIGKILL) == 0);
		t0 = wsc_now_ms();
		for (back = 0; !back && wsc_now_ms() - t0 < COMEBACK_MS;) {
			nap(20);
			if (gd_roles_now(g, states, pids) == -1)
				continue;
			for (i = 0; i < GD_NROLES; i++)
				if (i != v && pids[i] != before[i]) {
					printf("# killing %s changed %s's pid "
					       "%ld -> %ld\n",
					    gd_roles[v], gd_roles[i], before[i],
					    pids[i]);
					T_CHECK(!"another role kept its pid");
					before[i] = pids[i];
				}
			back = strcmp(states[v], "running") == 0 &&
			    pids[v] > 0 && pids[v] != before[v];
		}
		now = wsc_now_ms();
		if (!back) {
			printf("# %s not back after %d ms\n", gd_roles[v],
			    COMEBACK_MS);
			gd_dump_log(g, 30);
			T_CHECK(back);
			break;
		}
		times[v][nt[v]++] = (long)(now - t0);
		times[GD_NROLES][nt[GD_NROLES]++] = (long)(now - t0);
		memcpy(expect, pids, sizeof(expect));
		kills[v]++;
		total++;
		ready_at[v] = now;
		due[v] = ready_at[v] + STABLE_MS + STABLE_MARGIN_MS +
		    (int64_t)(rng() % JITTER_MS);
	}
	/* A little more load on the restarted set, then stop publishing. */
	nap(500);
	publishers_stop(ps, &a);

	for (i = 0; i < GD_NROLES; i++) {
		snprintf(what, sizeof(what), "kill -9 %s", gd_roles[i]);
		print_times(what, times[i], nt[i]);
	}
	print_times("kill -9 any role", times[GD_NROLES], nt[GD_NROLES]);
	found = count_stored(gd_port(g), &a);
	printf("# %u publish attempts, %zu acknowledged, %ld of them stored, "
	       "%u connection errors\n",
	    a.a_tries, a.a_n, found, a.a_errors);
	T_CHECK(total == want * GD_NROLES);
	T_CHECK(a.a_n > 0);
	T_CHECK(found == (long)a.a_n);
	for (i = 0; i <= GD_NROLES; i++)
		free(times[i]);
	free(a.a_ids);
	pthread_mutex_destroy(&a.a_mu);
	gd_free(g);
}

/* PRAGMA integrity_check on the store; 1 if it answers "ok". */
static int
integrity_ok(const char *path)
{
	sqlite3	     *db = NULL;
	sqlite3_stmt *st = NULL;
	int	      ok = 0;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto done;
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
	    SQLITE_OK)
		goto done;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);

		if (r != NULL && strcmp(r, "ok") == 0)
			ok = 1;
		else {
			printf("# integrity_check: %s\n", r ? r : "(null)");
			ok = 0;
			break;
		}
	}
done:
	if (!ok && db != NULL)
		printf("# %s: %s\n", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return ok;
}

static void
test_power_cut_during_commits_keeps_every_acked_event(void)
{
	struct publisher ps[NPUB];
	struct acked	 a;
	struct gdproc	*g;
	long		 found;
	const char	*label = getenv("RUN_LABEL");
	int		 cut, ms, ncuts;

	ncuts = t_env_int("GRASPD_CRASH_CUTS",
	    label != NULL && strcmp(label, "sanitize") == 0 ? 1 : 2);
	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&a.a_mu, NULL);
	g = gd_start(NULL);
	T_ASSERT(g != NULL);
	a.a_port = gd_port(g);
	for (cut = 0; cut < ncuts; cut++) {
		publishers_start(ps, &a);
		ms = 700 + (int)(rng() % 1500);
		nap(ms);
		gd_power_cut(g);
		publishers_stop(ps, &a);
		printf("# power cut %d after %d ms of publishing: %zu "
		       "acknowledged so far\n",
		    cut + 1, ms, a.a_n);
		T_ASSERT(gd_restart(g) == 0);
		T_CHECK(integrity_ok(gd_db_path(g)));
		found = count_stored(gd_port(g), &a);
		printf("# after restart %d: %ld of %zu stored\n", cut + 1,
		    found, a.a_n);
		T_CHECK(found == (long)a.a_n);
	}
	T_CHECK(a.a_n > 0);
	free(a.a_ids);
	pthread_mutex_destroy(&a.a_mu);
	gd_free(g);
}

static long long
file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/*
 * relayd writes its WAL file's room while no commit comes, to the byte:
 * the header and as many whole frames as fit.  A power cut in the
 * middle of the commits that go over those zeros keeps every
 * acknowledged event, and the database whole.
 */
static void
test_power_cut_over_the_wal_room_keeps_every_acked_event(void)
{
	static const char *const env[] = { "NGIT_WAL_ROOM_MB=24", NULL };
	struct publisher	 ps[NPUB];
	struct acked		 a;
	struct gdproc		*g;
	char			 wal[PATH_MAX + 48];
	long long		 room, size = -1;
	int64_t			 end;
	long			 found;
	int			 ms;

	room = db_wal_room((long long)ROOM_MB << 20, 4096);
	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&a.a_mu, NULL);
	g = gd_start(env);
	T_ASSERT(g != NULL);
	a.a_port = gd_port(g);
	snprintf(wal, sizeof(wal), "%s-wal", gd_db_path(g));
	for (end = wsc_now_ms() + ROOM_MS;
	     (size = file_size(wal)) < room && wsc_now_ms() < end;)
		nap(50);
	printf("# the WAL file holds %lld bytes of a %lld-byte room\n", size,
	    room);
	T_CHECK(size == room);
	publishers_start(ps, &a);
	ms = 700 + (int)(rng() % 800);
	nap(ms);
	gd_power_cut(g);
	publishers_stop(ps, &a);
	T_ASSERT(gd_restart(g) == 0);
	T_CHECK(integrity_ok(gd_db_path(g)));
	found = count_stored(gd_port(g), &a);
	printf("# cut after %d ms over the room: %ld of %zu stored\n", ms,
	    found, a.a_n);
	T_CHECK(a.a_n > 0 && found == (long)a.a_n);
	free(a.a_ids);
	pthread_mutex_destroy(&a.a_mu);
	gd_free(g);
}

static int
crash_setup(void)
{
	uint8_t	      sk[SECKEY_LEN] = { 1 };
	struct event *ev;
	const char   *s = getenv("GRASPD_CRASH_SEED");

	seed = s != NULL && *s != '\0' ? strtoull(s, NULL, 0) :
					 (unsigned long long)time(NULL) ^
		((unsigned long long)getpid() << 20);
	rng_xsubi[0] = (unsigned short)seed;
	rng_xsubi[1] = (unsigned short)(seed >> 16);
	rng_xsubi[2] = (unsigned short)(seed >> 32);
	printf("# seed %llu (GRASPD_CRASH_SEED to replay)\n", seed);
	run_salt = (uint8_t)rng();
	/* The signing context is set up here, before any thread. */
	if ((ev = event_new_signed(sk, time(NULL), 1, "[]", "")) != NULL)
		event_destroy(ev);
	return 0;
}

static const struct t_case cases[] = {
	T_CASE(test_kill9_roles_at_random_moments_nothing_acked_lost),
	T_CASE(test_power_cut_during_commits_keeps_every_acked_event),
	T_CASE(test_power_cut_over_the_wal_room_keeps_every_acked_event),
};

T_MAIN_WITH(cases, crash_setup, NULL, T_IGN_SIGPIPE)
