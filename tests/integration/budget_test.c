/*
 * budget_test.c: one REQ pacer and one subscription ledger per remote
 * relay, whichever role asks (GRASP-03: discovery draws "from the same
 * pacer and subscription ledger as historic work"; conn_budget.c).  A
 * real graspd whose syncd, discoveryd and historyd all work one scripted
 * peer relay: it is the bootstrap relay and the relay of the repositories
 * (syncd), the user index (discoveryd) and the fallback relay (historyd
 * probes participants without a relay list there, syncd follows root
 * authors without one), and it answers slowly so that subscriptions stay
 * open.  The peer logs every REQ with its time and the subscriptions
 * open over all its connections:
 *   - while the three roles work it, the subscriptions open summed over
 *     the roles never exceed CONN_MAX_SUBS, and the REQs of any second,
 *     summed, stay within one role's pacing (1 / CONN_REQ_INTERVAL_TEST);
 *   - historyd's connection to the relay, which syncd also serves, is
 *     closed once its due work is done, while syncd's stays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "conn.h"
#include "ctl.h"
#include "event.h"
#include "msg.h"
#include "nostr.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x77

#define TMO	   5000
#define WHO_OWNER  1
#define WHO_ROOT   100 /* the root authors, from */
#define NROOTS	   40
#define WHO_PART   300 /* the participants, from */
#define NPART	   150
#define NREPOS	   4
/* The peer holds every subscription this long before its EOSE. */
#define EOSE_DELAY 800
/* How long the roles are watched at most, seconds. */
#define WATCH_SECS 40
/* Ours: how much earlier than its pacing a REQ may reach the peer, on
 * a loaded machine (measured: a few a second arrive 0-3 ms after the
 * one before, behind one that was late). */
#define JITTER_MS  50
/* The most REQs the peer may see in one second from REQs paced at one
 * role's interval (conn.h, under NGIT_TEST), whatever the roles. */
#define RATE_MAX   ((int)((1000.0 + JITTER_MS) / (CONN_REQ_INTERVAL_TEST * 1000)))

/* The second case's stored descendants, on the peer only ... */
#define WHO_SEED  1000
#define NSEED	  600
/* ... which it serves two per REQ, at once. */
#define SEED_PAGE 2

static struct relayproc *peer, *b;
static char		 tmpdir[256];
static int64_t		 t0;
static struct event	*root[NROOTS];

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return tuser_event(KEYS, who, at, kind, tags, c);
}

/* role's connection to the peer in its `show` view, or NULL. */
static cJSON *
role_conn(enum role role, cJSON **viewp)
{
	char   url[64];
	cJSON *v;

	*viewp = NULL;
	if ((v = ctl_role_view(b, role, "connections", 2)) == NULL)
		return NULL;
	*viewp = v;
	snprintf(url, sizeof(url), "ws://127.0.0.1:%d", relayproc_port(peer));
	return ctl_by_relay(cJSON_GetObjectItem(v, "connections"), url);
}

/* 1 if role holds a connection to the peer now. */
static int
role_on_peer(enum role role)
{
	cJSON *v, *c = role_conn(role, &v);
	int    on = c != NULL;

	cJSON_Delete(v);
	return on;
}

/*
 * The most REQs the peer logged in any second (a window starting at each
 * REQ), into *most; the number of REQs into *n; the connections that
 * sent them into *nconns.
 */
static void
req_rate(const cJSON *log, int *most, int *n, int *nconns)
{
	cJSON  *reqs = cJSON_GetObjectItem(log, "reqs");
	double *at;
	int	i, j, k, seen[256], nseen = 0, c;

	*most = *nconns = 0;
	*n = cJSON_GetArraySize(reqs);
	if (*n == 0 || (at = calloc((size_t)*n, sizeof(*at))) == NULL)
		return;
	for (i = 0; i < *n; i++) {
		const cJSON *rq = cJSON_GetArrayItem(reqs, i);

		at[i] = ctl_num(rq, "at_ms");
		c = (int)ctl_num(rq, "conn");
		for (k = 0; k < nseen && seen[k] != c; k++)
			;
		if (k == nseen && nseen < 256)
			seen[nseen++] = c;
	}
	/* Logged in arrival order: times do not decrease. */
	for (i = 0, j = 0; i < *n; i++) {
		while (j < *n && at[j] < at[i] + 1000)
			j++;
		if (j - i > *most)
			*most = j - i;
	}
	*nconns = nseen;
	free(at);
}

static void
test_three_roles_share_one_budget(void)
{
	struct wsc *ws;
	char	    tags[1024], coord[NREPOS][200], purl[64], d[24];
	const char *relays[2];
	cJSON	   *log = NULL;
	int	    i, k, on[3] = { 0, 0, 0 }, most, n, nconns, subs;
	int64_t	    end;

	snprintf(purl, sizeof(purl), "ws://127.0.0.1:%d", relayproc_port(peer));
	snprintf(tags, sizeof(tags), "{\"eose_delay_ms\":%d}", EOSE_DELAY);
	T_ASSERT(peerctl_config(peer, tags) == 0);
	/* Repositories hosted here that also name the peer: syncd's
	 * ordinary coverage. */
	relays[0] = relayproc_url(b);
	relays[1] = purl;
	for (k = 0; k < NREPOS; k++) {
		struct event *ann;
		char	      oh[PUBKEY_HEX_LEN + 1];

		snprintf(d, sizeof(d), "budget%d", k);
		T_ASSERT(tint_host_repo(b, KEYS, WHO_OWNER, t0, d, NULL,
			     tmpdir) == 0);
		ann = tint_announcement(KEYS, WHO_OWNER, t0 + 1, d,
		    (const char *[]){ relayproc_domain(b) }, 1, relays, 2,
		    NULL);
		T_ASSERT(ann != NULL);
		T_EQ_INT(client_publish(b, ann, tags, sizeof(tags)), 1);
		event_destroy(ann);
		tuser_hex(KEYS, WHO_OWNER, oh);
		snprintf(coord[k], sizeof(coord[k]), "30617:%s:%s", oh, d);
	}
	/* Roots by authors and replies by participants, none with a relay
	 * list: discoveryd asks the index (the peer), which answers none,
	 * so historyd probes the participants and syncd follows the root
	 * authors on the fallback relay (the peer). */
	T_ASSERT((ws = wsc_connect(relayproc_host(b), relayproc_port(b), "/",
		      TMO)) != NULL);
	for (i = 0; i < NROOTS; i++) {
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"%s\"],[\"subject\",\"s%d\"]]", coord[i % NREPOS],
		    i);
		root[i] = ev(WHO_ROOT + i, t0 + 10 + i, 1621, tags, "a root");
		T_ASSERT(root[i] != NULL);
		T_EQ_INT(
		    nostr_publish_msg(ws, root[i], TMO, tags, sizeof(tags)), 1);
	}
	for (i = 0; i < NPART; i++) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]",
		    root[i % NROOTS]->id_hex);
		T_EQ_INT(nostr_publish_take(ws,
			     ev(WHO_PART + i, t0 + 100 + i, 1, tags, "a reply"),
			     TMO, tags, sizeof(tags)),
		    1);
	}
	wsc_close(ws);

	/* Watch until each role has held a connection to the peer and the
	 * peer has seen REQs on three connections. */
	end = wsc_now_ms() + WATCH_SECS * 1000;
	while (wsc_now_ms() < end) {
		on[0] |= role_on_peer(ROLE_SYNCD);
		on[1] |= role_on_peer(ROLE_DISCOVERYD);
		on[2] |= role_on_peer(ROLE_HISTORYD);
		cJSON_Delete(log);
		log = peerctl_log(peer);
		req_rate(log, &most, &n, &nconns);
		if (on[0] && on[1] && on[2] && nconns >= 3 && n >= 40)
			break;
		usleep(200000);
	}
	/* Let them go on a little while all three work. */
	relayproc_sleep_ms(2000);
	cJSON_Delete(log);
	T_ASSERT((log = peerctl_log(peer)) != NULL);
	req_rate(log, &most, &n, &nconns);
	subs = (int)ctl_num(log, "max_total_subs");
	printf("# roles on the peer: syncd %d, discoveryd %d, historyd %d; "
	       "%d REQs on %d connections, at most %d in one second "
	       "(bound %d), at most %d subscriptions open (bound %d), at "
	       "most %d on one connection\n",
	    on[0], on[1], on[2], n, nconns, most, RATE_MAX, subs, CONN_MAX_SUBS,
	    (int)ctl_num(log, "max_concurrent_subs"));
	T_CHECK(on[0] && on[1] && on[2]);
	T_CHECK(nconns >= 3);
	T_CHECK(subs > 0 && subs <= CONN_MAX_SUBS);
	T_CHECK(most <= RATE_MAX);
	cJSON_Delete(log);
}

/* role's view entry of the peer in its list name, into *vp (deleted by
 * the caller); NULL if none. */
static cJSON *
view_entry(enum role role, const char *name, cJSON **vp)
{
	char url[64];

	snprintf(url, sizeof(url), "ws://127.0.0.1:%d", relayproc_port(peer));
	if ((*vp = ctl_role_view(b, role, name, 2)) == NULL)
		return NULL;
	return ctl_by_relay(cJSON_GetObjectItem(*vp, name), url);
}

static void
test_history_connection_closes_after_its_work(void)
{
	cJSON *hv = NULL, *r;
	char   state[32] = "";
	int    i, idle = 0, hconn = 1, sconn = 0;

	/* historyd's rotation on the peer drains (no group in flight, the
	 * next one due in 24 test minutes) ... */
	for (i = 0; i < 300; i++) {
		cJSON_Delete(hv);
		if ((r = view_entry(ROLE_HISTORYD, "relays", &hv)) != NULL)
			snprintf(state, sizeof(state), "%s",
			    ctl_str(r, "worker"));
		if (r != NULL && ctl_num(r, "rotations") >= 1 &&
		    strcmp(state, "idle") == 0) {
			idle = 1;
			hconn = role_on_peer(ROLE_HISTORYD);
			sconn = role_on_peer(ROLE_SYNCD);
			if (!hconn)
				break;
		}
		usleep(100000);
	}
	cJSON_Delete(hv);
	printf("# historyd %s on the peer; its connection %s, syncd's %s\n",
	    state, hconn ? "open" : "closed", sconn ? "open" : "closed");
	/* ... and its connection is gone, while syncd serves the relay. */
	T_CHECK(idle);
	T_EQ_INT(hconn, 0);
	T_EQ_INT(sconn, 1);
}

/* The websocket connections open on the peer, or -1. */
static int
peer_log_open(void)
{
	cJSON *log = peerctl_log(peer);
	int    n = log != NULL ? (int)ctl_num(log, "open") : -1;

	cJSON_Delete(log);
	return n;
}

static void
test_reqs_per_second_summed_over_roles(void)
{
	struct event *seed[NSEED];
	cJSON	     *log = NULL;
	char	      tags[200], cfg[100];
	int	      i, most = 0, n = 0, nconns = 0;
	int64_t	      end;

	/* Many descendants of the roots, one second apart, that the peer
	 * serves a page at a time without delay: syncd (descendants of
	 * its roots) and historyd (the participants' threads) page through
	 * them as fast as the pacing lets them. */
	for (i = 0; i < NSEED; i++) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]",
		    root[i % NROOTS]->id_hex);
		seed[i] = ev(WHO_SEED + i, t0 + 200 + i, 7, tags, "+");
		T_ASSERT(seed[i] != NULL);
	}
	/* The old roles' subscriptions gone from the peer first, so that
	 * it counts only the new ones. */
	relayproc_stop(b);
	for (i = 0; i < 100 && peer_log_open() != 0; i++)
		usleep(100000);
	T_EQ_INT(peer_log_open(), 0);
	T_ASSERT(peerctl_post(peer, "/reset", "", NULL) == 200);
	T_ASSERT(peerctl_seed(peer, seed, NSEED) == 0);
	snprintf(cfg, sizeof(cfg), "{\"max_results\":%d}", SEED_PAGE);
	T_ASSERT(peerctl_config(peer, cfg) == 0);
	/* Every role starts over: historyd from its first group, syncd
	 * with its historic sync. */
	T_ASSERT(relayproc_restart(b) == 0);
	end = wsc_now_ms() + WATCH_SECS * 1000;
	while (wsc_now_ms() < end) {
		cJSON_Delete(log);
		log = peerctl_log(peer);
		req_rate(log, &most, &n, &nconns);
		if (n >= 2 * NSEED / SEED_PAGE)
			break;
		usleep(200000);
	}
	relayproc_sleep_ms(1000);
	cJSON_Delete(log);
	T_ASSERT((log = peerctl_log(peer)) != NULL);
	req_rate(log, &most, &n, &nconns);
	printf("# %d REQs on %d connections after the restart, at most %d "
	       "in one second (bound %d), at most %d subscriptions open\n",
	    n, nconns, most, RATE_MAX, (int)ctl_num(log, "max_total_subs"));
	T_CHECK(n >= NSEED / SEED_PAGE);
	T_CHECK(most <= RATE_MAX);
	T_CHECK(ctl_num(log, "max_total_subs") <= CONN_MAX_SUBS);
	cJSON_Delete(log);
	tuser_events_destroy(seed, NSEED);
}

static int
budget_setup(void)
{
	struct relayproc **peers[] = { &peer };
	const char	  *keys[] = { "NGIT_SYNC_BOOTSTRAP_RELAY_URL",
		       "NGIT_SYNC_PLUS_USER_INDEX_RELAYS",
		       "NGIT_SYNC_PLUS_FALLBACK_RELAYS" };
	struct relayproc  *at[3];

	t0 = (int64_t)time(NULL) - 3600;
	if (tint_home(tmpdir, sizeof(tmpdir), "graspd-budget",
		"budget_setup") == -1 ||
	    tint_peers_start(peers, TINT_N(peers), "budget_setup") == -1)
		return 1;
	at[0] = at[1] = at[2] = peer;
	if ((b = tint_sync_graspd(keys, at, TINT_N(at), NULL,
		 "budget_setup")) == NULL)
		return 1;
	return 0;
}

static void
budget_cleanup(void)
{
	struct relayproc *rps[] = { b, peer };

	if (t_fail)
		relayproc_dump_log(b, 80);
	tuser_events_destroy(root, NROOTS);
	tint_relays_free(rps, TINT_N(rps));
	tdir_remove(tmpdir);
}

static const struct t_case cases[] = {
	T_CASE(test_three_roles_share_one_budget),
	T_CASE(test_history_connection_closes_after_its_work),
	T_CASE(test_reqs_per_second_summed_over_roles),
};

T_MAIN_WITH(cases, budget_setup, budget_cleanup, 0)
