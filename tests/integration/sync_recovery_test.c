/*
 * sync_recovery_test.c: syncd (GRASP-02) finding peers, recovering from
 * their outages and refusals, and converging, inside a real graspd B on
 * loopback: discovery of a peer from an announcement published straight
 * to B (no bootstrap), a maintainer's announcement fetched again once the
 * owner's is accepted, catch-up after a short outage against a full
 * resync after a long one (seen in the peer's request log), the
 * rate-limit cooldown and what was posted while the peer refused us, an
 * unreachable relay in backoff as graspctl and /metrics report it, a
 * hostile relay among honest ones, and two graspd instances that list
 * each other converging on one event set.
 *
 * The peer keeps its store in memory: after a restart the test seeds it
 * again with everything it held.
 */
#define _GNU_SOURCE /* asprintf */
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "nostr.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x66

#define TMO	   5000
/* Events the test makes (all freed at the end). */
#define MAX_EVS	   128
/* The most graspds, and other relay URLs, one announcement names. */
#define MAX_HOSTS  4
#define MAX_RELAYS 4
/* NGIT_TEST: syncd's 900 s quick-reconnect limit and catch-up margin,
 * and conn's 65 s rate-limit cooldown, divided by 60. */
#define QUICK_SECS 15
#define COOL_MS	   1083
/* REQs already on their way when the rate-limit answer comes back. */
#define BURST_MS   300

/* Every graspd of the test: loopback peers, reconnects within 1 s. */
static const char *const graspd_env[] = {
	"NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", "NGIT_SYNC_MAX_BACKOFF_SECS=60",
	NULL
};

static struct relayproc *peer, *hostile, *b, *y;
static char		 tmpdir[256];
static int		 ndirs;
static struct event	*made[MAX_EVS];
static size_t		 nmade;
/* The events seeded on the peer, to seed it again after a restart. */
static struct event	*peer_evs[MAX_EVS];
static size_t		 npeer_evs;
static int64_t		 t_first; /* created_at of the history */

/* Takes e (may be NULL) to free it at the end of the test; returns it,
 * or NULL (e destroyed) when the test made MAX_EVS already. */
static struct event *
keep(struct event *e)
{
	if (e == NULL || nmade == MAX_EVS) {
		event_destroy(e);
		return NULL;
	}
	return made[nmade++] = e;
}

/* A signed event, freed at the end of the test; NULL on failure. */
static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return keep(tuser_event(KEYS, who, at, kind, tags, c));
}

/* Seeds the peer with e and remembers it for peer_back(). */
static int
seed_peer(struct event *e)
{
	if (npeer_evs == MAX_EVS)
		return -1;
	peer_evs[npeer_evs++] = e;
	return peerctl_seed(peer, &e, 1);
}

/* The events on rp matching filters, as nostr_req() gives them (NULL on
 * failure). */
static char **
query(struct relayproc *rp, const char *filters, size_t *n)
{
	struct wsc *ws;
	char	  **evs = NULL;
	int	    rc;

	*n = 0;
	if ((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		 TMO)) == NULL)
		return NULL;
	rc = nostr_req(ws, "q", filters, TMO, &evs, n, NULL);
	wsc_close(ws);
	if (rc != 0) {
		nostr_events_free(evs);
		return NULL;
	}
	return evs;
}

/* Publishes e to rp; 0 if rp answered OK true. */
static int
publish(struct relayproc *rp, const struct event *e)
{
	char msg[256];
	int  ok;

	if ((ok = client_publish(rp, e, msg, sizeof(msg))) == 0)
		printf("# %s refused kind %u: %s\n", relayproc_domain(rp),
		    e->kind, msg);
	return ok == 1 ? 0 : -1;
}

/*
 * A repository announcement by owner: clone and relays name every graspd
 * in hosts, relays also the URLs in relays; without hosts, clone names a
 * closed loopback port.  maint (may be NULL) is the hex of a declared
 * maintainer.
 */
static struct event *
announcement(int owner, const char *d, int64_t at,
    struct relayproc *const hosts[], size_t nhosts, const char *const relays[],
    size_t nrelays, const char *maint)
{
	const char *dom[MAX_HOSTS], *urls[MAX_HOSTS + MAX_RELAYS];
	char	    closed[32];
	size_t	    i, nd = 0, n = 0;

	for (i = 0; i < nhosts && nd < MAX_HOSTS; i++) {
		dom[nd++] = relayproc_domain(hosts[i]);
		urls[n++] = relayproc_url(hosts[i]);
	}
	if (nd == 0) {
		snprintf(closed, sizeof(closed), "127.0.0.1:%d",
		    relayproc_free_port("127.0.0.1"));
		dom[nd++] = closed;
	}
	for (i = 0; i < nrelays && n < TINT_N(urls); i++)
		urls[n++] = relays[i];
	return keep(
	    tint_announcement(KEYS, owner, at, d, dom, nd, urls, n, maint));
}

/* Publishes the state of a new commit on rp and pushes it (purgatory
 * releases the announcement).  The local repository goes to dir. */
static int
release_dir(struct relayproc *rp, int owner, const char *d, char *dir,
    size_t dirlen, char oid[41])
{
	struct wsc *ws;
	uint8_t	    sk[SECKEY_LEN];
	int	    rc;

	tuser_sk(KEYS, owner, sk);
	snprintf(dir, dirlen, "%s/repo%d", tmpdir, ndirs++);
	if ((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		 TMO)) == NULL)
		return -1;
	rc = gt_release(ws, sk, relayproc_domain(rp), d, dir, oid);
	wsc_close(ws);
	return rc;
}

static int
release(struct relayproc *rp, int owner, const char *d)
{
	char dir[512];

	return release_dir(rp, owner, d, dir, sizeof(dir), NULL);
}

/* Publishes owner's announcement ann of d to B and releases it. */
static int
host_on_b(const struct event *ann, int owner, const char *d)
{
	return ann != NULL && publish(b, ann) == 0 &&
		release(b, owner, d) == 0 ?
	    0 :
	    -1;
}

/* The pid and restarts of a role from graspctl status; -1 if unknown. */
static long
role_pid(struct relayproc *rp, const char *role, long *restarts)
{
	cJSON *st = ctl_json(rp, "status"), *r;
	long   pid = -1;

	*restarts = -1;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(st, "roles")) {
		const char *n =
		    cJSON_GetStringValue(cJSON_GetObjectItem(r, "role"));

		if (n != NULL && strcmp(n, role) == 0) {
			pid = (long)ctl_num(r, "pid");
			*restarts = (long)ctl_num(r, "restarts");
		}
	}
	cJSON_Delete(st);
	return pid;
}

/*
 * What syncd on rp is doing with the relay at url, as one string: its
 * wanted sets, requests in flight and events so far; NULL while
 * historic requests are in flight or it never finished one.
 */
static char *
sync_doing(struct relayproc *rp, const char *url)
{
	cJSON *show = ctl_json(rp, "show syncd"), *r;
	char  *s = NULL;

	r = ctl_by_relay(ctl_view_list(show, "relays"), url);
	if (r != NULL && ctl_num(r, "historic_in_flight") == 0 &&
	    ctl_num(r, "historic_synced_at") > 0 &&
	    asprintf(&s, "%.0f %.0f %.0f %.0f %.0f %.0f",
		ctl_num(cJSON_GetObjectItem(show, "view"), "events_synced"),
		ctl_num(r, "identifiers"), ctl_num(r, "repositories"),
		ctl_num(r, "thread_ids"), ctl_num(r, "thread_addresses"),
		ctl_num(r, "events")) == -1)
		s = NULL;
	cJSON_Delete(show);
	return s;
}

/*
 * Waits (10 s at most) until syncd on rp is done with the relay at url:
 * nothing in flight, and nothing changed over more than a batch window
 * (200 ms in test), so that no reconcile is pending.  0 or -1.
 */
static int
wait_sync_quiet(struct relayproc *rp, const char *url)
{
	int64_t deadline = wsc_now_ms() + 10000;
	char   *prev = NULL, *now;
	int	same;

	for (;;) {
		now = sync_doing(rp, url);
		same = now != NULL && prev != NULL && strcmp(now, prev) == 0;
		free(prev);
		prev = now;
		if (same)
			break;
		if (wsc_now_ms() >= deadline) {
			printf("# syncd still busy with %s\n", url);
			free(prev);
			return -1;
		}
		usleep(600000);
	}
	free(prev);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The peer's request log                                              */

enum layer {
	LY_L1,	  /* announcements and grasp lists */
	LY_D,	  /* state and announcements by #d */
	LY_REPOS, /* #a, #A, #q with coordinates */
	LY_IDS,	  /* #e, #E, #q with ids */
	LY_OTHER,
};

/* The layer of one filter and the tag it asks by ("" for L1). */
static enum layer
layer_of(const cJSON *f, const char **field)
{
	static const char *const tags[] = { "#d", "#a", "#A", "#e", "#E",
		"#q" };
	const cJSON		*k, *v;
	size_t			 i;

	*field = "";
	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		if ((v = cJSON_GetObjectItemCaseSensitive(f, tags[i])) == NULL)
			continue;
		*field = tags[i];
		if (tags[i][1] == 'd')
			return LY_D;
		if (tags[i][1] == 'a' || tags[i][1] == 'A')
			return LY_REPOS;
		if (tags[i][1] == 'e' || tags[i][1] == 'E')
			return LY_IDS;
		v = cJSON_GetArrayItem(v, 0);
		return cJSON_GetStringValue(v) != NULL &&
			strncmp(cJSON_GetStringValue(v), "30617:", 6) == 0 ?
		    LY_REPOS :
		    LY_IDS;
	}
	k = cJSON_GetObjectItem(f, "kinds");
	if (cJSON_GetArraySize(k) == 2 && ctl_num(f, "ids") == -1 &&
	    cJSON_GetObjectItem(f, "authors") == NULL &&
	    cJSON_GetArrayItem(k, 0)->valuedouble == 30617 &&
	    cJSON_GetArrayItem(k, 1)->valuedouble == 10317)
		return LY_L1;
	return LY_OTHER;
}

static int
is_live(const cJSON *f)
{
	return ctl_num(f, "limit") == 0;
}

/* The peer-side connection of syncd: the one that asked for layer 1
 * live (other roles of B may talk to the peer too). */
static double
syncd_conn(const cJSON *log)
{
	const cJSON *r, *f;
	const char  *field;
	double	     c = -1;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs"))
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(r, "filters"))
			if (layer_of(f, &field) == LY_L1 && is_live(f))
				c = ctl_num(r, "conn");
	return c;
}

/* 1 if every value of the filter's tag field contains mark. */
static int
all_values_contain(const cJSON *f, const char *field, const char *mark)
{
	const cJSON *v;
	const char  *s;

	if (mark == NULL || *field == '\0')
		return 0;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(f, field))
		if ((s = cJSON_GetStringValue(v)) == NULL ||
		    strstr(s, mark) == NULL)
			return 0;
	return 1;
}

/*
 * Counts syncd's historic filters (not live) of layer ly asked by field
 * ("" for any): with a since in [lo, hi] into *in_range, without since
 * into *nosince, except those asking only for values that contain fresh
 * (may be NULL): values first wanted during an outage.
 */
static void
historic_count(const cJSON *log, enum layer ly, const char *field, int64_t lo,
    int64_t hi, const char *fresh, int *in_range, int *nosince)
{
	const cJSON *r, *f;
	const char  *fl;
	double	     conn = syncd_conn(log), since;

	*in_range = *nosince = 0;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs")) {
		if (ctl_num(r, "conn") != conn)
			continue;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(r, "filters")) {
			if (is_live(f) || layer_of(f, &fl) != ly ||
			    (*field && strcmp(fl, field) != 0))
				continue;
			if ((since = ctl_num(f, "since")) != -1) {
				if (since >= (double)lo && since <= (double)hi)
					(*in_range)++;
			} else if (!all_values_contain(f, fl, fresh))
				(*nosince)++;
		}
	}
}

/* What every layer is asked by (reference brief 3.2). */
static const struct {
	enum layer  ly;
	const char *field;
	const char *name;
} layers[] = {
	{ LY_L1, "", "layer 1" },
	{ LY_D, "#d", "state" },
	{ LY_REPOS, "#a", "layer 2" },
	{ LY_REPOS, "#A", "layer 2" },
	{ LY_REPOS, "#q", "layer 2" },
	{ LY_IDS, "#e", "layer 3" },
	{ LY_IDS, "#E", "layer 3" },
	{ LY_IDS, "#q", "layer 3" },
};
#define NLAYERS (sizeof(layers) / sizeof(layers[0]))

/*
 * Polls the peer's log (up to secs) until every layer was asked with a
 * since in [lo, hi] (catch-up) or, when lo is -1, without since (a full
 * resync).  Returns the log (caller deletes) or NULL, printing what is
 * missing.
 */
static cJSON *
wait_layers(int secs, int64_t lo, int64_t hi)
{
	int64_t deadline = wsc_now_ms() + secs * 1000;
	cJSON  *log, *r;
	char   *t;
	size_t	i;
	int	inr, nos, missing;

	for (;;) {
		if ((log = peerctl_log(peer)) == NULL)
			return NULL;
		missing = 0;
		for (i = 0; i < NLAYERS; i++) {
			historic_count(log, layers[i].ly, layers[i].field, lo,
			    hi, NULL, &inr, &nos);
			if ((lo == -1 ? nos : inr) == 0)
				missing++;
		}
		if (missing == 0)
			return log;
		if (wsc_now_ms() >= deadline)
			break;
		cJSON_Delete(log);
		usleep(200000);
	}
	for (i = 0; i < NLAYERS; i++) {
		historic_count(log, layers[i].ly, layers[i].field, lo, hi, NULL,
		    &inr, &nos);
		printf("# %s %s: %d with since in [%lld, %lld], %d without\n",
		    layers[i].name, layers[i].field, inr, (long long)lo,
		    (long long)hi, nos);
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs")) {
		if ((t = cJSON_PrintUnformatted(r)) != NULL)
			printf("# %.300s\n", t);
		free(t);
	}
	cJSON_Delete(log);
	return NULL;
}

/* Remembers e for the peer while it is down (seeded by peer_back()). */
static int
seed_on_later(struct event *e)
{
	if (npeer_evs == MAX_EVS)
		return -1;
	peer_evs[npeer_evs++] = e;
	return 0;
}

/* Restarts the peer after it was stopped and seeds it again. */
static int
peer_back(void)
{
	if (relayproc_restart(peer) == -1)
		return -1;
	return peerctl_seed(peer, peer_evs, npeer_evs);
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */

static char coord1[200]; /* the repository of the peer */

static void
discovery_without_bootstrap_pulls_patch_and_issue(void)
{
	struct relayproc *hosts[] = { b };
	const char	 *relays[] = { relayproc_url(peer) };
	struct event	 *ann, *patch, *issue;
	char		  tags[512];

	tuser_coord(KEYS, 1, "found", coord1, sizeof(coord1));
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"%s\"],[\"subject\","
	    "\"fix\"]]",
	    coord1);
	patch = ev(2, t_first, 1617, tags, "diff --git a/x b/x\n");
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"%s\"],[\"subject\","
	    "\"bug\"]]",
	    coord1);
	issue = ev(3, t_first + 1, 1621, tags, "an issue");
	T_ASSERT(patch != NULL && issue != NULL);
	T_ASSERT(seed_peer(patch) == 0);
	T_ASSERT(seed_peer(issue) == 0);

	/* B has no bootstrap: only this announcement names the peer. */
	ann = announcement(1, "found", t_first, hosts, 1, relays, 1, NULL);
	T_ASSERT(host_on_b(ann, 1, "found") == 0);
	T_ASSERT(seed_peer(ann) == 0);
	T_EQ_INT(client_wait_id(b, patch, 15), 1);
	T_EQ_INT(client_wait_id(b, issue, 15), 1);
}

static void
maintainer_announcement_is_fetched_again_after_the_owners(void)
{
	struct relayproc *hosts[] = { b };
	const char	 *relays[] = { relayproc_url(peer) };
	struct event	 *mann, *oann;
	char		  mhex[PUBKEY_HEX_LEN + 1], f[300];

	/* The maintainer's names neither B nor its clone: refused on B,
	 * which sees it live on the peer (layer 1). */
	tuser_hex(KEYS, 11, mhex);
	mann = announcement(11, "team", t_first + 5, NULL, 0, relays, 1, NULL);
	T_ASSERT(mann != NULL);
	T_ASSERT(seed_peer(mann) == 0);
	usleep(1000000);
	snprintf(f, sizeof(f), "{\"kinds\":[30617],\"authors\":[\"%s\"]}",
	    mhex);
	T_EQ_INT(client_count(b, f), 0);

	oann = announcement(10, "team", t_first, hosts, 1, relays, 1, mhex);
	T_ASSERT(oann != NULL);
	T_ASSERT(seed_peer(oann) == 0);
	T_ASSERT(publish(b, oann) == 0);
	T_ASSERT(release(b, 10, "team") == 0);
	T_EQ_INT(client_wait_count(b, f, 1, 15), 1);
}

static void
short_outage_catches_up_from_before_the_disconnect(void)
{
	struct relayproc *hosts[] = { b };
	const char	 *relays[] = { relayproc_url(peer) };
	char		  tags[300], coord[200];
	struct event	 *late, *ann, *during;
	cJSON		 *log;
	int64_t		  t0, t1;
	int		  inr, nos;
	size_t		  i;

	T_ASSERT(wait_sync_quiet(b, relayproc_url(peer)) == 0);
	t0 = time(NULL);
	relayproc_stop(peer);
	t1 = time(NULL);
	/* A repository naming the peer is released meanwhile: its first
	 * requests fail, and must not cost the others their catch-up. */
	ann = announcement(12, "during", t_first, hosts, 1, relays, 1, NULL);
	T_ASSERT(host_on_b(ann, 12, "during") == 0);
	T_ASSERT(seed_on_later(ann) == 0);
	tuser_coord(KEYS, 12, "during", coord, sizeof(coord));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	during = ev(13, t_first + 2, 1621, tags,
	    "issue of a repository "
	    "released during the outage");
	T_ASSERT(during != NULL && seed_on_later(during) == 0);
	sleep(2);
	T_ASSERT(time(NULL) - t0 < QUICK_SECS - 5);

	T_ASSERT(peer_back() == 0);
	/* Written during the outage. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord1);
	late = ev(4, t1 + 1, 1621, tags, "while you were away");
	T_ASSERT(late != NULL);
	T_ASSERT(seed_peer(late) == 0);

	/* Every layer again, from 15 s (900 s / 60) before the
	 * disconnect. */
	log = wait_layers(10, t0 - QUICK_SECS - 1, t1 - QUICK_SECS + 1);
	T_ASSERT(log != NULL);
	/* Nothing asked again in full: not layer 1, not the repository
	 * sets, but for the repository new since the disconnect (new
	 * roots may be asked without since too). */
	for (i = 0; i < NLAYERS; i++) {
		if (layers[i].ly == LY_IDS)
			continue;
		historic_count(log, layers[i].ly, layers[i].field, 0, 0,
		    "during", &inr, &nos);
		if (nos != 0)
			printf("# %s: %d full request(s)\n", layers[i].field,
			    nos);
		T_CHECK(nos == 0);
	}
	cJSON_Delete(log);
	T_EQ_INT(client_wait_id(b, late, 10), 1);
	T_EQ_INT(client_wait_id(b, during, 10), 1);
}

static void
long_outage_resyncs_everything(void)
{
	cJSON *log;

	T_ASSERT(wait_sync_quiet(b, relayproc_url(peer)) == 0);
	relayproc_stop(peer);
	/* Longer than the quick-reconnect limit (15 s in test). */
	usleep((QUICK_SECS + 2) * 1000000);
	T_ASSERT(peer_back() == 0);
	log = wait_layers(10, -1, -1);
	T_ASSERT(log != NULL);
	cJSON_Delete(log);
}

static void
rate_limited_peer_is_left_alone_for_the_cooldown(void)
{
	struct event *root, *comment, *during;
	cJSON	     *log, *reqs, *r, *show, *c;
	char	      tags[300];
	double	      conn, first = -1, at, last_burst;
	int64_t	      t_sw;
	int	      n0, i, n, early = 0, later = 0, total = 0;

	T_ASSERT(wait_sync_quiet(b, relayproc_url(peer)) == 0);
	T_ASSERT((log = peerctl_log(peer)) != NULL);
	n0 = cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs"));
	cJSON_Delete(log);

	T_ASSERT(peerctl_config(peer, "{\"closed_rate_limited\":true}") == 0);
	t_sw = wsc_now_ms();
	/* The root reaches B live; its descendants need a new REQ. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord1);
	root = ev(5, time(NULL), 1621, tags, "new root");
	T_ASSERT(root != NULL);
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", root->id_hex);
	comment = ev(6, time(NULL), 1111, tags, "on the new root");
	T_ASSERT(comment != NULL);
	T_ASSERT(seed_peer(comment) == 0);
	T_ASSERT(seed_peer(root) == 0);
	T_EQ_INT(client_wait_id(b, root, 10), 1);
	/* The root changed syncd's live subscription, which the peer now
	 * refuses too: this issue has to be caught up later. */
	usleep(500000);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord1);
	during = ev(7, time(NULL), 1621, tags, "posted while we were refused");
	T_ASSERT(during != NULL);
	T_ASSERT(seed_peer(during) == 0);
	usleep(2000000);

	T_ASSERT((log = peerctl_log(peer)) != NULL);
	conn = syncd_conn(log);
	reqs = cJSON_GetObjectItem(log, "reqs");
	n = cJSON_GetArraySize(reqs);
	last_burst = -1;
	for (i = n0; i < n; i++) {
		r = cJSON_GetArrayItem(reqs, i);
		at = ctl_num(r, "at_ms");
		if (ctl_num(r, "conn") != conn || at < (double)t_sw)
			continue;
		if (first < 0)
			first = last_burst = at;
		total++;
		/* A REQ either rides with the burst that met the limit,
		 * or comes after the cooldown. */
		if (at > last_burst + BURST_MS &&
		    at < last_burst + COOL_MS - 10) {
			printf("# REQ %.0f ms after the burst at %.0f ms\n",
			    at - last_burst, last_burst - first);
			early++;
		} else if (at >= last_burst + COOL_MS - 10) {
			last_burst = at;
			later++;
		}
	}
	cJSON_Delete(log);
	printf("# rate limited: %d REQs in %d bursts over %.0f ms\n", total,
	    later + 1, last_burst - first);
	T_CHECK(first >= 0);
	T_CHECK(early == 0);
	/* Asked again after the cooldown (and limited again). */
	T_CHECK(later >= 1);
	T_EQ_INT(client_has_id(b, comment), 0);

	show = ctl_json(b, "show syncd");
	c = ctl_by_relay(ctl_view_list(show, "connections"),
	    relayproc_url(peer));
	T_CHECK(c != NULL && ctl_num(c, "rate_limits") >= 1);
	cJSON_Delete(show);

	/* The relay behaves again: the descendants are fetched, and what
	 * was posted meanwhile. */
	T_ASSERT(peerctl_config(peer, "{\"closed_rate_limited\":false}") == 0);
	T_EQ_INT(client_wait_id(b, comment, 10), 1);
	T_EQ_INT(client_wait_id(b, during, 10), 1);
}

static void
unreachable_relay_backs_off_and_is_reported(void)
{
	struct relayproc *hosts[] = { b };
	char		  dead[64], line[128];
	const char	 *relays[] = { dead };
	struct event	 *ann;
	cJSON		 *show, *c;
	char		 *h = NULL, *body = NULL, *p;
	int64_t		  deadline;
	int		  port, status, seen = 0, metric = 0;

	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	snprintf(dead, sizeof(dead), "ws://127.0.0.1:%d", port);
	ann = announcement(20, "nowhere", t_first, hosts, 1, relays, 1, NULL);
	T_ASSERT(host_on_b(ann, 20, "nowhere") == 0);

	deadline = wsc_now_ms() + 15000;
	while (!(seen && metric) && wsc_now_ms() < deadline) {
		show = ctl_json(b, "show syncd");
		c = ctl_by_relay(ctl_view_list(show, "connections"), dead);
		if (c != NULL &&
		    strcmp(
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "state")) ?:
			    "",
			"backoff") == 0 &&
		    ctl_num(c, "failures") >= 1 && ctl_num(c, "until") > 0 &&
		    ctl_by_relay(ctl_view_list(show, "relays"), dead))
			seen = 1;
		cJSON_Delete(show);
		if (http_get(relayproc_host(b), relayproc_port(b), "/metrics",
			NULL, TMO, &status, &h, &body) == 0 &&
		    status == 200) {
			snprintf(line, sizeof(line),
			    "graspd_conn_relays{role="
			    "\"syncd\",state=\"backoff\"} ");
			if ((p = strstr(body, line)) != NULL &&
			    atoi(p + strlen(line)) >= 1 &&
			    strstr(body,
				"graspd_conn_relays{role=\"syncd\","
				"state=\"connected\"} ") != NULL)
				metric = 1;
		}
		free(h);
		free(body);
		h = body = NULL;
		if (!(seen && metric))
			usleep(100000);
	}
	T_CHECK(seen);
	T_CHECK(metric);
}

static void
hostile_relay_does_not_stop_honest_sync_or_relayd(void)
{
	struct relayproc *hosts[] = { b };
	char		  hurl[64], tags[300], f[300];
	const char	 *relays[2] = { relayproc_url(peer), hurl };
	struct event	 *ann, *both, *forged, *live;
	struct event	 *on_h[2];
	char		  coord[200];
	cJSON		 *log, *show, *c;
	long		  rpid, rrest, spid, srest, r2, s2;
	long		  rrest2, srest2;
	int64_t		  deadline;
	int		  nreq, n, seen, last;

	rpid = role_pid(b, "relayd", &rrest);
	spid = role_pid(b, "syncd", &srest);
	T_ASSERT(rpid > 0 && spid > 0);
	T_ASSERT((hostile = relayproc_start_peer(NULL)) != NULL);
	snprintf(hurl, sizeof(hurl), "ws://127.0.0.1:%d",
	    relayproc_port(hostile));

	tuser_coord(KEYS, 30, "besieged", coord, sizeof(coord));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	/* One issue on both relays (forged on the hostile one), one only
	 * on the hostile relay. */
	both = ev(31, t_first + 10, 1621, tags, "honest issue");
	forged = ev(32, t_first + 11, 1621, tags, "forged issue");
	T_ASSERT(both != NULL && forged != NULL);
	on_h[0] = both;
	on_h[1] = forged;
	T_ASSERT(peerctl_seed(hostile, on_h, 2) == 0);
	T_ASSERT(peerctl_config(hostile,
		     "{\"forge\":true,\"flood\":20,"
		     "\"garbage\":true}") == 0);
	T_ASSERT(seed_peer(both) == 0);

	ann = announcement(30, "besieged", t_first, hosts, 1, relays, 2, NULL);
	T_ASSERT(host_on_b(ann, 30, "besieged") == 0);
	T_ASSERT(seed_peer(ann) == 0);
	T_EQ_INT(client_wait_id(b, both, 15), 1);

	/* Now messages larger than syncd takes, too. */
	T_ASSERT((log = peerctl_log(hostile)) != NULL);
	nreq = cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs"));
	cJSON_Delete(log);
	T_CHECK(nreq > 0);
	T_ASSERT(peerctl_config(hostile, "{\"oversized_bytes\":2000000}") == 0);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	live = ev(33, time(NULL), 1621, tags, "live honest issue");
	T_ASSERT(live != NULL);
	T_ASSERT(seed_peer(live) == 0);
	T_EQ_INT(client_wait_id(b, live, 10), 1);
	/* Let the hostile relay answer a few more REQs. */
	deadline = wsc_now_ms() + 10000;
	for (n = nreq; n < nreq + 2 && wsc_now_ms() < deadline;) {
		usleep(200000);
		if ((log = peerctl_log(hostile)) == NULL)
			break;
		n = cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs"));
		cJSON_Delete(log);
	}
	T_CHECK(n >= nreq + 2);
	/* syncd saw all of it: garbage, unasked and forged events, links
	 * dropped.  Whether a genuine event of the hostile relay came
	 * through between its garbage is up to the interleaving (its
	 * garbage may end every link before an answer): printed, not
	 * required; the honest relay's events are. */
	deadline = wsc_now_ms() + 20000;
	for (seen = 0, last = 0; !seen && !last;) {
		/* The last look comes after the deadline, and says why. */
		last = wsc_now_ms() >= deadline;
		show = ctl_json(b, "show syncd");
		c = ctl_by_relay(ctl_view_list(show, "connections"), hurl);
		seen = c != NULL && ctl_num(c, "malformed") >= 1 &&
		    ctl_num(c, "stray") >= 1 &&
		    ctl_num(c, "failures_total") >= 1;
		if (seen || last)
			printf("# hostile relay: %.0f malformed, %.0f unasked, "
			       "%.0f events passed to relayd, %.0f failures\n",
			    ctl_num(c, "malformed"), ctl_num(c, "stray"),
			    ctl_num(c, "events"), ctl_num(c, "failures_total"));
		cJSON_Delete(show);
		if (!seen)
			usleep(200000);
	}
	T_CHECK(seen);

	/* Forged copies and unasked events never reach the store. */
	T_EQ_INT(client_has_id(b, forged), 0);
	T_EQ_INT(client_count(b, "{\"#t\":[\"junk\"]}"), 0);
	snprintf(f, sizeof(f), "{\"#a\":[\"%s\"]}", coord);
	T_EQ_INT(client_count(b, f), 2);
	/* relayd never noticed; syncd did not crash either. */
	r2 = role_pid(b, "relayd", &rrest2);
	s2 = role_pid(b, "syncd", &srest2);
	T_EQ_INT(r2, rpid);
	T_EQ_INT(rrest2, rrest);
	T_EQ_INT(s2, spid);
	T_EQ_INT(srest2, srest);
	relayproc_free(hostile);
	hostile = NULL;
}

static int
cmp_id(const void *p, const void *q)
{
	return strcmp(p, q);
}

/* ids of the events on rp matching filters, sorted, one string. */
static char *
id_set(struct relayproc *rp, const char *filters, int *n)
{
	struct buf set = BUF_INIT;
	char	 **evl, (*ids)[EVENT_ID_HEX_LEN + 1];
	size_t	   k, i;

	*n = -1;
	if ((evl = query(rp, filters, &k)) == NULL)
		return NULL;
	if ((ids = calloc(k + 1, sizeof(*ids))) == NULL)
		abort();
	for (i = 0; i < k; i++) {
		cJSON	   *j = cJSON_Parse(evl[i]);
		const char *id =
		    cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));

		snprintf(ids[i], sizeof(ids[i]), "%s", id ? id : "?");
		cJSON_Delete(j);
	}
	qsort(ids, k, sizeof(*ids), cmp_id);
	buf_adds(&set, "");
	for (i = 0; i < k; i++)
		buf_printf(&set, "%s%s", i ? "," : "", ids[i]);
	free(ids);
	nostr_events_free(evl);
	*n = (int)k;
	return buf_release(&set, NULL);
}

/* Publishes a state naming oid on rp and pushes dir's main there. */
static int
push_same(struct relayproc *rp, int owner, const char *d, const char *dir,
    const char *oid)
{
	struct event *st;
	char	      tags[300], url[512], *out = NULL;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	int	      rc;

	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"refs/heads/main\","
	    "\"%s\"],[\"HEAD\",\"ref: refs/heads/main\"]]",
	    d, oid);
	if ((st = ev(owner, time(NULL), 30618, tags, "")) == NULL ||
	    publish(rp, st) == -1)
		return -1;
	tuser_sk(KEYS, owner, sk);
	event_pubkey_of(sk, pk);
	gt_url(url, sizeof(url), relayproc_domain(rp), pk, d);
	rc = gt_git(dir, &out, "push", "-q", url, "main", NULL);
	if (rc != 0)
		printf("# push to %s: %s\n", url, out ? out : "");
	free(out);
	return rc == 0 ? 0 : -1;
}

static void
two_instances_listing_each_other_converge(void)
{
	struct relayproc *hosts[2];
	struct event	 *ann, *ib, *iy, *cb, *cy;
	char		  dir[512], oid[41], coord[200], tags[300];
	char		  f[1000], *sb = NULL, *sy = NULL;
	int64_t		  deadline;
	int		  nb = -1, ny = -1;

	T_ASSERT((y = relayproc_start("graspd", graspd_env)) != NULL);
	hosts[0] = b;
	hosts[1] = y;
	ann = announcement(40, "mutual", t_first, hosts, 2, NULL, 0, NULL);
	T_ASSERT(ann != NULL);
	T_ASSERT(publish(b, ann) == 0);
	T_ASSERT(publish(y, ann) == 0);
	T_ASSERT(release_dir(b, 40, "mutual", dir, sizeof(dir), oid) == 0);
	tuser_coord(KEYS, 40, "mutual", coord, sizeof(coord));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	/* Published on B before Y serves the repository. */
	ib = ev(41, t_first + 30, 1621, tags, "issue on B");
	T_ASSERT(ib != NULL);
	T_ASSERT(publish(b, ib) == 0);
	T_ASSERT(push_same(y, 40, "mutual", dir, oid) == 0);
	iy = ev(42, time(NULL), 1621, tags, "issue on Y");
	T_ASSERT(iy != NULL);
	T_ASSERT(publish(y, iy) == 0);
	T_EQ_INT(client_wait_id(y, ib, 15), 1);
	T_EQ_INT(client_wait_id(b, iy, 15), 1);

	/* Comments crossing over: each on the other side's issue. */
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", iy->id_hex);
	cb = ev(43, time(NULL), 1111, tags, "on B about Y's issue");
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", ib->id_hex);
	cy = ev(44, time(NULL), 1111, tags, "on Y about B's issue");
	T_ASSERT(cb != NULL && cy != NULL);
	T_ASSERT(publish(b, cb) == 0);
	T_ASSERT(publish(y, cy) == 0);
	T_EQ_INT(client_wait_id(y, cb, 15), 1);
	T_EQ_INT(client_wait_id(b, cy, 15), 1);

	/* One set on both: announcement, state, two issues, two
	 * comments. */
	snprintf(f, sizeof(f),
	    "[{\"kinds\":[30617,30618],\"#d\":"
	    "[\"mutual\"]},{\"#a\":[\"%s\"]},{\"#E\":[\"%s\",\"%s\"]}]",
	    coord, ib->id_hex, iy->id_hex);
	deadline = wsc_now_ms() + 15000;
	for (;;) {
		free(sb);
		free(sy);
		sb = id_set(b, f, &nb);
		sy = id_set(y, f, &ny);
		if ((sb && sy && nb == 6 && strcmp(sb, sy) == 0) ||
		    wsc_now_ms() >= deadline)
			break;
		usleep(200000);
	}
	if (nb != 6 || ny != 6 || sb == NULL || sy == NULL ||
	    strcmp(sb, sy) != 0)
		printf("# B (%d): %s\n# Y (%d): %s\n", nb, sb ? sb : "?", ny,
		    sy ? sy : "?");
	T_CHECK(nb == 6 && sb != NULL && sy != NULL && strcmp(sb, sy) == 0);
	free(sb);
	free(sy);
}


static int
sync_recovery_setup(void)
{
	t_first = time(NULL) - 7200;
	if (tint_home(tmpdir, sizeof(tmpdir), "graspd-syncrec",
		"sync_recovery_setup") == -1)
		return 1;
	if ((peer = relayproc_start_peer(NULL)) == NULL ||
	    (b = relayproc_start("graspd", graspd_env)) == NULL) {
		printf("not ok - sync_recovery_setup: peer or graspd did not "
		       "start\n");
		relayproc_free(peer);
		tdir_remove(tmpdir);
		return 1;
	}
	return 0;
}

static void
sync_recovery_cleanup(void)
{
	struct relayproc *rps[] = { y, hostile, b, peer };

	if (t_fail)
		relayproc_dump_log(b, 60);
	tint_relays_free(rps, TINT_N(rps));
	tuser_events_destroy(made, nmade);
	tdir_remove(tmpdir);
}

static const struct t_case cases[] = {
	T_CASE(discovery_without_bootstrap_pulls_patch_and_issue),
	T_CASE(maintainer_announcement_is_fetched_again_after_the_owners),
	T_CASE(short_outage_catches_up_from_before_the_disconnect),
	T_CASE(long_outage_resyncs_everything),
	T_CASE(rate_limited_peer_is_left_alone_for_the_cooldown),
	T_CASE(unreachable_relay_backs_off_and_is_reported),
	T_CASE(hostile_relay_does_not_stop_honest_sync_or_relayd),
	T_CASE(two_instances_listing_each_other_converge),
};

T_MAIN_WITH(cases, sync_recovery_setup, sync_recovery_cleanup, 0)
