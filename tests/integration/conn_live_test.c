/*
 * conn_live_test.c: common/conn.c on a real libwebsockets loop in the test
 * process, against the scriptable peer relay (tests/peer/) on loopback,
 * with NGIT_TEST=1 timings: one shared connection per relay, fetches and
 * their timeout, pagination over a capped relay with same-second events,
 * packed filters on the wire, the subscription ledger (cap, live first),
 * each rate-limit signal and its cooldown, NIP-42 AUTH, the backoff
 * schedule against an absent relay, connect timeouts, hostile relays
 * (garbage, forged, oversized, flood, abrupt close), a live subscription
 * that survives the peer's restart, and targets refused at connect time.
 *
 * The one rate-limit signal the peer cannot give us (OK false
 * "rate-limited:" to our AUTH event: we publish nothing else) comes from a
 * small scripted server on a second vhost of the same loop.
 */
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "conn.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tuser.h"
#include "wsclient.h"

#define TMO	    5000 /* ms, one HTTP call or one wait */
#define SELF_DOMAIN "graspd.example"
#define OWNER_HEX \
	"11111111111111111111111111111111" \
	"11111111111111111111111111111111"
/* NGIT_TEST: the 65 s cooldown lasts 65/60 s. */
#define COOL_MS ((int)(CONN_RATE_LIMIT_COOLDOWN * 1000 / 60))

static struct relayproc	     *rp;
static struct lws_context    *lws;
static struct lws_vhost	     *vh;
static char		      peer_key[RELAYURL_MAX + 1];
static lws_sorted_usec_list_t tick;

/* ------------------------------------------------------------------ */
/* What the hooks saw                                                  */

static char  **ingested;
static size_t  ningested;
static char    ingest_key[RELAYURL_MAX + 1];
static int     drop_every_other;
static int     live_drops;
static int64_t live_drop_at;

struct transition {
	int64_t		   at;
	const struct conn *c;
	enum conn_state	   from, to;
};
static struct transition trans[512];
static size_t		 ntrans;

static int
hook_ingest(void *arg, const char *relay_key, const char *json, size_t len)
{
	char *s;

	if ((s = malloc(len + 1)) == NULL)
		abort();
	memcpy(s, json, len);
	s[len] = '\0';
	ingested = realloc(ingested, (ningested + 1) * sizeof(*ingested));
	if (ingested == NULL)
		abort();
	ingested[ningested++] = s;
	snprintf(ingest_key, sizeof(ingest_key), "%s", relay_key);
	/* A lagging relayd, when a case asks for one: every other event
	 * is dropped (after it was recorded above). */
	if (drop_every_other && ningested % 2 == 0)
		return -1;
	return 0;
}

static void
hook_live_dropped(void *arg, struct conn *c, int64_t created_at)
{
	live_drops++;
	live_drop_at = created_at;
}

static void
hook_state(void *arg, struct conn *c, enum conn_state from, enum conn_state to)
{
	if (ntrans < sizeof(trans) / sizeof(trans[0]))
		trans[ntrans++] =
		    (struct transition){ wsc_now_ms(), c, from, to };
}

static const struct conn_hooks hooks = {
	.ingest = hook_ingest,
	.state = hook_state,
	.live_dropped = hook_live_dropped,
};

static void
seen_reset(void)
{
	size_t i;

	for (i = 0; i < ningested; i++)
		free(ingested[i]);
	free(ingested);
	ingested = NULL;
	ningested = 0;
	ntrans = 0;
	ingest_key[0] = '\0';
	drop_every_other = 0;
}

/* How many ingested events have id_hex; -1 if one does not parse. */
static int
ingested_count(const char *id_hex)
{
	struct event *ev;
	char	      err[128];
	size_t	      i;
	int	      n = 0;

	for (i = 0; i < ningested; i++) {
		ev = event_parse(ingested[i], strlen(ingested[i]), err,
		    sizeof(err));
		if (ev == NULL)
			return -1;
		n += strcmp(ev->id_hex, id_hex) == 0;
		event_destroy(ev);
	}
	return n;
}

/* 1 if the state hook saw c reach st. */
static int
saw_state(const struct conn *c, enum conn_state st)
{
	size_t i;

	for (i = 0; i < ntrans; i++)
		if (trans[i].c == c && trans[i].to == st)
			return 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */

/* Keeps lws_service() from sleeping past our deadlines. */
static void
tick_cb(lws_sorted_usec_list_t *sul)
{
	lws_sul_schedule(lws, 0, &tick, tick_cb, 10 * LWS_US_PER_MS);
}

static void
run_for(int ms)
{
	int64_t end = wsc_now_ms() + ms;

	while (wsc_now_ms() < end)
		lws_service(lws, 0);
}

struct fres {
	int			done;
	enum conn_fetch_result	res;
	char			reason[256];
	struct conn_fetch_stats st;
	int64_t			at;
	int			events;
};

static void
fres_event(void *arg, struct conn_req *r, const struct event *ev)
{
	((struct fres *)arg)->events++;
}

static void
fres_done(void *arg, struct conn_req *r, enum conn_fetch_result res,
    const char *reason, const struct conn_fetch_stats *st)
{
	struct fres *f = arg;

	f->done++;
	f->res = res;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	f->st = *st;
	f->at = wsc_now_ms();
}

static struct conn_fetch_cb
fcb(struct fres *f)
{
	struct conn_fetch_cb cb = { fres_event, fres_done, f };

	memset(f, 0, sizeof(*f));
	return cb;
}

/* Runs the loop until every fetch of f[0..n) is done. */
static int
run_until_all(struct fres *f, size_t n, int timeout_ms)
{
	int64_t end = wsc_now_ms() + timeout_ms;
	size_t	i;

	for (;;) {
		for (i = 0; i < n && f[i].done; i++)
			;
		if (i == n)
			return 0;
		if (wsc_now_ms() >= end)
			return -1;
		lws_service(lws, 0);
	}
}

/* ------------------------------------------------------------------ */
/* Configuration and managers                                          */

static void
cfg_make(struct config *cfg, int allow_private, int base, int max)
{
	char err[256], b[16], m[16];

	snprintf(b, sizeof(b), "%d", base);
	snprintf(m, sizeof(m), "%d", max);
	setenv("NGIT_TEST", "1", 1);
	setenv("NGIT_DOMAIN", SELF_DOMAIN, 1);
	setenv("NGIT_RELAY_OWNER_NSEC", OWNER_HEX, 1);
	setenv("NGIT_SYNC_ALLOW_PRIVATE_TARGETS",
	    allow_private ? "true" : "false", 1);
	setenv("NGIT_SYNC_BASE_BACKOFF_SECS", b, 1);
	setenv("NGIT_SYNC_MAX_BACKOFF_SECS", m, 1);
	if (config_load(cfg, NULL, err, sizeof(err)) == -1) {
		printf("# config: %s\n", err);
		abort();
	}
}

static struct config	cfg;
static struct conn_mgr *mgr;

static void mgr_stop(void);

/*
 * A fresh manager on a configuration with NGIT_TEST, allow_private, and
 * the base and max backoff.  One a failed case left behind goes first.
 */
static void
mgr_start(int allow_private, int base, int max)
{
	if (mgr != NULL)
		mgr_stop();
	seen_reset();
	config_free(&cfg);
	cfg_make(&cfg, allow_private, base, max);
	mgr = conn_mgr_new(lws, vh, &cfg, &hooks, NULL);
}

static void
mgr_stop(void)
{
	conn_mgr_free(mgr);
	mgr = NULL;
	/* Let lws close what the manager let go of. */
	run_for(30);
}

/* The show object of the connection named key, or NULL; caller frees
 * *arrp. */
static cJSON *
show(const char *key, cJSON **arrp)
{
	cJSON *arr = cJSON_CreateArray(), *o;

	conn_mgr_show(mgr, arr);
	*arrp = arr;
	cJSON_ArrayForEach(o, arr)
		if (strcmp(cJSON_GetObjectItem(o, "relay")->valuestring, key) ==
		    0)
			return o;
	return NULL;
}

static double
show_num(const char *key, const char *field)
{
	cJSON *arr, *o, *v;
	double d = -1;

	if ((o = show(key, &arr)) != NULL &&
	    cJSON_IsNumber(v = cJSON_GetObjectItem(o, field)))
		d = v->valuedouble;
	cJSON_Delete(arr);
	return d;
}

/* ------------------------------------------------------------------ */
/* The peer                                                            */

static int
post(const char *path, const char *body)
{
	return peerctl_post(rp, path, body, NULL);
}

static int
peer_config(const char *json)
{
	return post("/config", json);
}

static int
peer_reset(void)
{
	return post("/reset", "");
}

static const cJSON *
log_reqs(const cJSON *log)
{
	return cJSON_GetObjectItemCaseSensitive(log, "reqs");
}

/* at_ms of the i-th REQ in the log. */
static double
req_at(const cJSON *log, int i)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(log_reqs(log), i),
	    "at_ms")
	    ->valuedouble;
}

static struct event *
mkev(int n, int64_t created_at, uint32_t kind, const char *tags)
{
	uint8_t sk[SECKEY_LEN];
	char	content[32];

	memset(sk, 0, sizeof(sk));
	sk[0] = 0x33;
	sk[30] = (uint8_t)(n >> 8);
	sk[31] = (uint8_t)n;
	snprintf(content, sizeof(content), "event %d", n);
	return event_new_signed(sk, created_at, kind, tags, content);
}

/* Runs the loop in slices until the peer logged at least n REQs. */
static int
run_until_peer_reqs(int n, int timeout_ms)
{
	int64_t end = wsc_now_ms() + timeout_ms;
	cJSON  *log;
	int	have;

	for (;;) {
		run_for(50);
		if ((log = peerctl_log(rp)) == NULL)
			have = -1;
		else
			have = cJSON_GetArraySize(log_reqs(log));
		cJSON_Delete(log);
		if (have >= n)
			return 0;
		if (wsc_now_ms() >= end)
			return -1;
	}
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */

static void
one_connection_per_relay_shared_then_retired(void)
{
	struct event	    *evs[3];
	struct fres	     f[3];
	struct conn_fetch_cb cb[3];
	struct conn	    *a, *b;
	const char	    *why = NULL;
	cJSON		    *log, *arr;
	int		     i;

	T_EQ_INT(peer_reset(), 200);
	for (i = 0; i < 3; i++)
		evs[i] = mkev(i, 1700000000 + i, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 3), 0);
	mgr_start(1, 5, 3600);

	T_ASSERT(conn_get(mgr, "wss://graspd.example/", 0, &why) == NULL);
	T_EQ_STR(why, "this relay itself");
	T_ASSERT(
	    conn_get(mgr, "ws://graspd.example/some/path", 0, NULL) == NULL);
	T_ASSERT(conn_get(mgr, "ws://127.0.0.1:80", 0, &why) == NULL);
	T_EQ_STR(why, "not a canonical relay key");

	a = conn_get(mgr, peer_key, 0, NULL);
	b = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(a != NULL && a == b);
	T_EQ_STR(conn_key(a), peer_key);
	T_EQ_INT(conn_state(a), CONN_IDLE);
	for (i = 0; i < 3; i++) {
		cb[i] = fcb(&f[i]);
		T_ASSERT(conn_fetch(i ? b : a, "{\"kinds\":[1]}",
			     CONN_PRIO_NORMAL, 0, &cb[i]) != NULL);
	}
	/* Never from inside conn_fetch(). */
	T_EQ_INT(f[0].done, 0);
	T_EQ_INT(run_until_all(f, 3, TMO), 0);
	for (i = 0; i < 3; i++) {
		T_EQ_INT(f[i].res, FETCH_EOSE);
		T_EQ_INT(f[i].st.cs_events, 3);
		T_EQ_INT(f[i].st.cs_new, 3);
		T_EQ_INT(f[i].st.cs_pages, 1);
		T_EQ_INT(f[i].events, 3);
		T_EQ_INT(f[i].st.cs_oldest, 1700000000);
	}
	T_EQ_INT(ningested, 9);
	T_EQ_STR(ingest_key, peer_key);
	T_EQ_INT(conn_state(a), CONN_CONNECTED);
	T_EQ_INT(show_num(peer_key, "holders"), 2);

	run_for(50); /* the last CLOSE leaves */
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	T_EQ_INT(ctl_num(log, "connections"), 1);
	/* Every fetch was CLOSEd after its EOSE. */
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(log, "closes")), 3);
	cJSON_Delete(log);

	/* Held, idle: stays connected.  Released: retires. */
	conn_release(a);
	run_for(50);
	T_EQ_INT(show_num(peer_key, "holders"), 1);
	conn_release(b);
	run_for(100);
	arr = cJSON_CreateArray();
	conn_mgr_show(mgr, arr);
	T_EQ_INT(cJSON_GetArraySize(arr), 0);
	cJSON_Delete(arr);
	run_for(100);
	log = peerctl_log(rp);
	T_EQ_INT(ctl_num(log, "open"), 0);
	cJSON_Delete(log);
	tuser_events_destroy(evs, 3);
	mgr_stop();
}

static void
bad_requests_are_refused_at_once(void)
{
	struct conn	    *c;
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct buf	     big = BUF_INIT;
	const char	    *why = NULL;
	int		     i;

	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(c != NULL);
	T_ASSERT(conn_fetch(c, "[{}]", CONN_PRIO_NORMAL, 0, &cb) == NULL);
	T_ASSERT(conn_fetch(c, "{", CONN_PRIO_NORMAL, 0, &cb) == NULL);
	T_ASSERT(conn_paginate(c, "{\"until\":\"x\"}", CONN_PRIO_NORMAL, 0,
		     &cb) == NULL);
	buf_adds(&big, "{\"#t\":[");
	for (i = 0; i < 5000; i++)
		buf_printf(&big, "%s\"tag%d\"", i ? "," : "", i);
	buf_adds(&big, "]}");
	T_ASSERT(conn_fetch(c, big.b_data, CONN_PRIO_NORMAL, 0, &cb) == NULL);
	T_ASSERT(conn_live(c, big.b_data, &why) == NULL);
	T_EQ_STR(why, "REQ larger than the byte budget");
	T_ASSERT(conn_live(c, "[]", &why) == NULL);
	buf_free(&big);
	run_for(50);
	T_EQ_INT(f.done, 0);
	conn_release(c);
	mgr_stop();
}

static void
pagination_across_a_capped_relay_loses_nothing(void)
{
	struct event	    *evs[60];
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	cJSON		    *log, *r, *fl, *until;
	double		     last = 1e18;
	int		     i, n, with_until = 0;

	T_EQ_INT(peer_reset(), 200);
	/* 20 events in each of three seconds; the relay answers 25. */
	for (i = 0; i < 60; i++)
		evs[i] = mkev(100 + i, 1700000100 - i / 20, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 60), 0);
	T_EQ_INT(peer_config("{\"max_results\":25}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_paginate(c, "{\"kinds\":[1]}", CONN_PRIO_BACKGROUND, 0,
		     &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, 3 * TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	T_EQ_INT(f.st.cs_new, 60);
	T_EQ_INT(f.events, 60);
	T_EQ_INT(f.st.cs_oldest, 1700000098);
	T_ASSERT(f.st.cs_pages >= 3);
	/* Each id reached the ingest hook exactly once. */
	T_EQ_INT(ningested, 60);
	for (i = 0; i < 60; i++)
		T_EQ_INT(ingested_count(evs[i]->id_hex), 1);

	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	n = cJSON_GetArraySize(log_reqs(log));
	T_EQ_INT(n, (int)f.st.cs_pages);
	for (i = 0; i < n; i++) {
		r = cJSON_GetArrayItem(log_reqs(log), i);
		fl = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "filters"), 0);
		until = cJSON_GetObjectItem(fl, "until");
		if (i == 0) {
			T_ASSERT(until == NULL);
			continue;
		}
		T_ASSERT(cJSON_IsNumber(until));
		/* Inclusive until, never rising. */
		T_ASSERT(until->valuedouble <= last);
		last = until->valuedouble;
		with_until++;
	}
	T_EQ_INT(with_until, n - 1);
	cJSON_Delete(log);
	tuser_events_destroy(evs, 60);
	conn_release(c);
	mgr_stop();
}

static void
pagination_steps_past_a_second_fuller_than_the_cap(void)
{
	struct event	    *evs[40];
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	int		     i, got = 0;

	T_EQ_INT(peer_reset(), 200);
	/* 30 events in one second, 10 in the one before; cap 25. */
	for (i = 0; i < 40; i++)
		evs[i] =
		    mkev(300 + i, i < 30 ? 1700000200 : 1700000199, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 40), 0);
	T_EQ_INT(peer_config("{\"max_results\":25}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_paginate(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0,
		     &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, 3 * TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	/* 25 of the full second (the relay never shows the other 5) and
	 * every older event; no id twice. */
	T_EQ_INT(f.st.cs_new, 35);
	T_EQ_INT(ningested, 35);
	for (i = 0; i < 40; i++) {
		T_ASSERT(ingested_count(evs[i]->id_hex) <= 1);
		got += ingested_count(evs[i]->id_hex);
	}
	T_EQ_INT(got, 35);
	for (i = 30; i < 40; i++)
		T_EQ_INT(ingested_count(evs[i]->id_hex), 1);
	T_EQ_INT(f.st.cs_oldest, 1700000199);
	tuser_events_destroy(evs, 40);
	conn_release(c);
	mgr_stop();
}

/* 64 hex digits from n. */
static void
fake_id(unsigned n, char out[EVENT_ID_HEX_LEN + 1])
{
	uint8_t	 b[EVENT_ID_LEN];
	unsigned x = n;
	int	 i;

	for (i = 0; i < EVENT_ID_LEN; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
	hex_encode(b, EVENT_ID_LEN, out);
}

static void
packed_filters_stay_under_the_budget_on_the_wire(void)
{
	enum {
		NIDS = 1500
	};
	static char	     ids[NIDS][EVENT_ID_HEX_LEN + 1];
	const char	    *vals[NIDS];
	struct conn_filters  pf = { NULL, 0 };
	struct fres	     f[8];
	struct conn_fetch_cb cb[8];
	struct conn	    *c;
	cJSON		    *log, *r, *req, *e, *v;
	char		    *text;
	size_t		     i;
	int		     n, total = 0, k;

	T_EQ_INT(peer_reset(), 200);
	for (i = 0; i < NIDS; i++) {
		fake_id((unsigned)i, ids[i]);
		vals[i] = ids[i];
	}
	n = conn_pack_filters("{\"kinds\":[1111,7]}", "e", vals, NIDS,
	    CONN_REQ_BUDGET, 0, &pf, NULL);
	T_ASSERT(n >= 3 && n <= 8);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	for (k = 0; k < n; k++) {
		cb[k] = fcb(&f[k]);
		T_ASSERT(conn_fetch(c, pf.cf_v[k], CONN_PRIO_BACKGROUND, 0,
			     &cb[k]) != NULL);
	}
	T_EQ_INT(run_until_all(f, (size_t)n, TMO), 0);
	for (k = 0; k < n; k++)
		T_EQ_INT(f[k].res, FETCH_EOSE);
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	T_EQ_INT(cJSON_GetArraySize(log_reqs(log)), n);
	cJSON_ArrayForEach(r, log_reqs(log)) {
		/* The REQ as sent: ["REQ","<sub>",<filter>]. */
		req = cJSON_CreateArray();
		cJSON_AddItemToArray(req, cJSON_CreateString("REQ"));
		cJSON_AddItemToArray(req,
		    cJSON_CreateString(
			cJSON_GetObjectItem(r, "sub")->valuestring));
		cJSON_AddItemToArray(req,
		    cJSON_Duplicate(cJSON_GetArrayItem(
					cJSON_GetObjectItem(r, "filters"), 0),
			1));
		text = cJSON_PrintUnformatted(req);
		T_ASSERT(strlen(text) <= CONN_REQ_BUDGET);
		T_ASSERT(strlen(cJSON_GetObjectItem(r, "sub")->valuestring) <=
		    CONN_SUBID_MAX);
		free(text);
		cJSON_Delete(req);
		e = cJSON_GetObjectItem(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r, "filters"), 0),
		    "#e");
		cJSON_ArrayForEach(v, e)
			total++;
	}
	/* Every value went out once. */
	T_EQ_INT(total, NIDS);
	T_ASSERT(ctl_num(log, "bytes_in") > NIDS * 67);
	cJSON_Delete(log);
	conn_filters_free(&pf);
	conn_release(c);
	mgr_stop();
}

static void
ledger_caps_subscriptions_and_admits_live_first(void)
{
	enum {
		NBG = 15
	};
	struct fres	     f[NBG + 1];
	struct conn_fetch_cb cb[NBG + 1];
	struct conn	    *c;
	struct conn_req	    *live;
	cJSON		    *log, *r, *fl;
	int64_t		     end;
	double		     span;
	int		     i, live_at = -1, normal_at = -1;

	T_EQ_INT(peer_reset(), 200);
	T_EQ_INT(peer_config("{\"eose_delay_ms\":300}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	for (i = 0; i < NBG; i++) {
		cb[i] = fcb(&f[i]);
		T_ASSERT(conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_BACKGROUND,
			     0, &cb[i]) != NULL);
	}
	/* Wait until the ledger is full and the rest waits. */
	end = wsc_now_ms() + TMO;
	while (show_num(peer_key, "subscriptions") < CONN_MAX_SUBS &&
	    wsc_now_ms() < end)
		lws_service(lws, 0);
	T_EQ_INT(show_num(peer_key, "subscriptions"), CONN_MAX_SUBS);
	T_EQ_INT(show_num(peer_key, "queued"), NBG - CONN_MAX_SUBS);
	/* Now a normal fetch and a live subscription: live goes first. */
	cb[NBG] = fcb(&f[NBG]);
	T_ASSERT(conn_fetch(c, "{\"kinds\":[2]}", CONN_PRIO_NORMAL, 0,
		     &cb[NBG]) != NULL);
	live = conn_live(c, "{\"kinds\":[3],\"limit\":0}", NULL);
	T_ASSERT(live != NULL);
	T_EQ_INT(run_until_all(f, NBG + 1, 3 * TMO), 0);
	for (i = 0; i <= NBG; i++)
		T_EQ_INT(f[i].res, FETCH_EOSE);

	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	T_ASSERT(ctl_num(log, "max_concurrent_subs") <= CONN_MAX_SUBS);
	T_EQ_INT(ctl_num(log, "max_concurrent_subs"), CONN_MAX_SUBS);
	T_EQ_INT(cJSON_GetArraySize(log_reqs(log)), NBG + 2);
	i = 0;
	cJSON_ArrayForEach(r, log_reqs(log)) {
		fl = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "filters"), 0);
		switch (cJSON_GetArrayItem(cJSON_GetObjectItem(fl, "kinds"), 0)
			    ->valueint) {
		case 3:
			live_at = i;
			break;
		case 2:
			normal_at = i;
			break;
		}
		i++;
	}
	/* The first free slot went to live, the next to NORMAL, before the
	 * background fetches that were waiting already. */
	T_EQ_INT(live_at, CONN_MAX_SUBS);
	T_EQ_INT(normal_at, CONN_MAX_SUBS + 1);
	cJSON_Delete(log);

	/*
	 * Pacing: the first CONN_MAX_SUBS REQs left conn_req_interval()
	 * (CONN_REQ_INTERVAL_TEST here) apart.  The peer stamps arrivals, which jitter, so the
	 * span is checked with half the margin: unpaced, they would all
	 * arrive within a millisecond or two.
	 */
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	span = req_at(log, CONN_MAX_SUBS - 1) - req_at(log, 0);
	cJSON_Delete(log);
	if (span < (CONN_MAX_SUBS - 1) * conn_req_interval(&cfg) * 1000 / 2) {
		printf("# %d REQs in %.0f ms\n", CONN_MAX_SUBS, span);
		T_ASSERT(0);
	}
	conn_live_close(live);
	conn_release(c);
	mgr_stop();
}

static void
fetch_times_out_without_eose_and_closes(void)
{
	struct event	    *evs[2];
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	cJSON		    *log;
	int64_t		     t0;

	T_EQ_INT(peer_reset(), 200);
	evs[0] = mkev(500, 1700000300, 1, NULL);
	evs[1] = mkev(501, 1700000301, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 2), 0);
	T_EQ_INT(peer_config("{\"drop_eose\":true}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	t0 = wsc_now_ms();
	T_ASSERT(
	    conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, 2 * TMO), 0);
	T_EQ_INT(f.res, FETCH_TIMEOUT);
	/* 3 s under NGIT_TEST, counted from the REQ. */
	T_ASSERT(f.at - t0 >= (int64_t)(CONN_FETCH_TIMEOUT_TEST * 1000));
	T_ASSERT(f.at - t0 < (int64_t)(CONN_FETCH_TIMEOUT_TEST * 1000) + 1500);
	/* What came before the timeout was kept. */
	T_EQ_INT(f.st.cs_new, 2);
	T_EQ_INT(ningested, 2);
	run_for(50);
	log = peerctl_log(rp);
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(log, "closes")), 1);
	T_EQ_INT(ctl_num(log, "open"), 1);
	cJSON_Delete(log);
	/* A timeout is not the relay failing. */
	T_EQ_INT(show_num(peer_key, "failures_total"), 0);
	tuser_events_destroy(evs, 2);
	conn_release(c);
	mgr_stop();
}

/* Common part of the NOTICE and CLOSED rate-limit cases. */
static void
cooldown_case(const char *config, enum conn_fetch_result first)
{
	struct event	    *ev;
	struct fres	     f[3];
	struct conn_fetch_cb cb[3];
	struct conn	    *c;
	cJSON		    *log;
	int		     i;

	T_EQ_INT(peer_reset(), 200);
	ev = mkev(600, 1700000400, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, &ev, 1), 0);
	event_destroy(ev);
	T_EQ_INT(peer_config(config), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	cb[0] = fcb(&f[0]);
	T_ASSERT(conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0,
		     &cb[0]) != NULL);
	T_EQ_INT(run_until_all(f, 1, TMO), 0);
	T_EQ_INT(f[0].res, first);
	if (first == FETCH_RATE_LIMITED)
		T_EQ_STR(f[0].reason, "rate-limited: slow down");
	T_EQ_INT(conn_state(c), CONN_RATE_LIMITED);
	T_ASSERT(saw_state(c, CONN_RATE_LIMITED));
	T_EQ_INT(show_num(peer_key, "rate_limits"), 1);
	/* Paced at twice the interval from now on. */
	T_EQ_INT(show_num(peer_key, "req_interval_ms"),
	    (int)(2 * conn_req_interval(&cfg) * 1000 + 0.5));

	/* The relay behaves again; our next requests wait all the same. */
	T_EQ_INT(peer_config("{\"notice_rate_limit\":false,"
			     "\"closed_rate_limited\":false}"),
	    200);
	for (i = 1; i < 3; i++) {
		cb[i] = fcb(&f[i]);
		T_ASSERT(conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0,
			     &cb[i]) != NULL);
	}
	run_for(COOL_MS / 2);
	T_EQ_INT(show_num(peer_key, "queued"), 2);
	T_EQ_INT(f[1].done, 0);
	T_EQ_INT(run_until_all(f, 3, 2 * TMO), 0);
	T_EQ_INT(f[1].res, FETCH_EOSE);
	T_EQ_INT(f[2].res, FETCH_EOSE);
	T_EQ_INT(conn_state(c), CONN_CONNECTED);

	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	T_EQ_INT(cJSON_GetArraySize(log_reqs(log)), 3);
	/* No REQ reached the peer during the cooldown (which began when
	 * the signal came, after the first REQ arrived). */
	T_ASSERT(req_at(log, 1) - req_at(log, 0) >= COOL_MS - 2);
	T_ASSERT(req_at(log, 1) - req_at(log, 0) < COOL_MS + 1000);
	T_EQ_INT(ctl_num(log, "connections"), 1);
	cJSON_Delete(log);
	conn_release(c);
	mgr_stop();
}

static void
notice_rate_limit_cools_down(void)
{
	/* The in-flight fetch still ends with its EOSE. */
	cooldown_case("{\"notice_rate_limit\":true}", FETCH_EOSE);
}

static void
closed_rate_limited_cools_down(void)
{
	cooldown_case("{\"closed_rate_limited\":true}", FETCH_RATE_LIMITED);
}

/* ------------------------------------------------------------------ */
/* A scripted server for OK false "rate-limited:" (to our AUTH).       */

static int     script_port;
static int64_t script_ok_at;
static int64_t script_req_at[8];
static int     script_nreq;
static int     script_authed_pubkey_ok;
static char    script_host[128];

struct script_pss {
	char q[4][512];
	int  nq;
};

static void
script_queue(struct lws *wsi, struct script_pss *p, const char *msg)
{
	if (p->nq < 4)
		snprintf(p->q[p->nq++], sizeof(p->q[0]), "%s", msg);
	lws_callback_on_writable(wsi);
}

static int
script_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct script_pss *p = user;
	struct json_doc	  *doc;
	const struct json *m, *ev;
	unsigned char	   buf[LWS_PRE + 512];
	char		   err[64], msg[512];
	size_t		   n;
	int		   i;

	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		if (lws_hdr_copy(wsi, script_host, sizeof(script_host),
			WSI_TOKEN_HOST) < 0)
			script_host[0] = '\0';
		return 0;
	case LWS_CALLBACK_ESTABLISHED:
		memset(p, 0, sizeof(*p));
		script_queue(wsi, p, "[\"AUTH\",\"challenge-1\"]");
		return 0;
	case LWS_CALLBACK_RECEIVE:
		m = json_parse(in, len, &doc, err, sizeof(err));
		if (m == NULL)
			return 0;
		if (strcmp(json_at(m, 0)->s, "AUTH") == 0) {
			ev = json_get(json_at(m, 1), "id");
			script_authed_pubkey_ok =
			    json_get(json_at(m, 1), "kind")->i == 22242;
			snprintf(msg, sizeof(msg),
			    "[\"OK\",\"%s\",false,"
			    "\"rate-limited: slow down\"]",
			    ev->s);
			script_queue(wsi, p, msg);
			script_ok_at = wsc_now_ms();
		} else if (strcmp(json_at(m, 0)->s, "REQ") == 0) {
			if (script_nreq < 8)
				script_req_at[script_nreq++] = wsc_now_ms();
			snprintf(msg, sizeof(msg), "[\"EOSE\",\"%s\"]",
			    json_at(m, 1)->s);
			script_queue(wsi, p, msg);
		}
		json_free(doc);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		if (p->nq == 0)
			return 0;
		n = strlen(p->q[0]);
		memcpy(buf + LWS_PRE, p->q[0], n);
		if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_TEXT) < 0)
			return -1;
		for (i = 1; i < p->nq; i++)
			memcpy(p->q[i - 1], p->q[i], sizeof(p->q[0]));
		if (--p->nq > 0)
			lws_callback_on_writable(wsi);
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols script_protocols[] = {
	{ "script", script_cb, sizeof(struct script_pss), 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static void
ok_rate_limited_to_auth_cools_down(void)
{
	struct fres	     f[2];
	struct conn_fetch_cb cb[2];
	struct conn	    *c;
	char		     key[64];

	snprintf(key, sizeof(key), "ws://127.0.0.1:%d/", script_port);
	script_nreq = 0;
	script_ok_at = 0;
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, key, 0, NULL);
	cb[0] = fcb(&f[0]);
	T_ASSERT(conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0,
		     &cb[0]) != NULL);
	T_EQ_INT(run_until_all(f, 1, TMO), 0);
	T_EQ_INT(f[0].res, FETCH_EOSE);
	/* The AUTH answer was refused as rate-limited. */
	run_for(50);
	T_ASSERT(script_ok_at != 0);
	T_ASSERT(script_authed_pubkey_ok);
	T_EQ_INT(conn_state(c), CONN_RATE_LIMITED);
	cb[1] = fcb(&f[1]);
	T_ASSERT(conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0,
		     &cb[1]) != NULL);
	T_EQ_INT(run_until_all(f, 2, 2 * TMO), 0);
	T_EQ_INT(f[1].res, FETCH_EOSE);
	T_EQ_INT(script_nreq, 2);
	T_ASSERT(script_req_at[1] - script_ok_at >= COOL_MS - 2);
	T_EQ_INT(show_num(key, "rate_limits"), 1);
	conn_release(c);
	mgr_stop();
}

/*
 * DNS rebinding: the socket goes to the address vetted at resolve time,
 * the Host header (and SNI) names the relay.
 */
static void
host_header_names_the_relay_not_its_address(void)
{
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	char		     key[64], host[64];

	snprintf(key, sizeof(key), "ws://localhost:%d/", script_port);
	snprintf(host, sizeof(host), "localhost:%d", script_port);
	script_host[0] = '\0';
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	T_EQ_STR(script_host, host);
	conn_release(c);
	mgr_stop();
}

/*
 * A TLS server on 127.0.0.1:port, openssl s_server answering HTTP (-www)
 * with certificate and key in dir (made by tls_cert()); its pid, or -1.
 */
static pid_t
tls_server(int port, const char *dir, const char *name)
{
	char  acc[32], cert[PATH_MAX + 16], keyf[PATH_MAX + 16];
	pid_t pid;
	int   fd;

	snprintf(acc, sizeof(acc), "127.0.0.1:%d", port);
	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, name);
	snprintf(keyf, sizeof(keyf), "%s/%s.key", dir, name);
	if ((pid = fork()) == 0) {
		if ((fd = open("/dev/null", O_RDWR)) >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("openssl", "openssl", "s_server", "-accept", acc,
		    "-cert", cert, "-key", keyf, "-www", "-quiet",
		    (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && relayproc_wait_port("127.0.0.1", port, TMO) != 0)
		relayproc_terminate(&pid, &fd, 5000, "openssl s_server");
	return pid;
}

/* A self-signed certificate for 127.0.0.1, dir/name.pem and .key. */
static int
tls_cert(const char *dir, const char *name)
{
	char cmd[2 * PATH_MAX + 300];

	snprintf(cmd, sizeof(cmd),
	    "openssl req -x509 -newkey ec -pkeyopt "
	    "ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
	    "-addext subjectAltName=IP:127.0.0.1 -keyout %s/%s.key "
	    "-out %s/%s.pem >/dev/null 2>&1",
	    dir, name, dir, name);
	return system(cmd) == 0 ? 0 : -1;
}

/* One fetch from the wss:// server on port; its result in *f. */
static void
wss_fetch(int port, struct fres *f, char *key, size_t keylen)
{
	struct conn_fetch_cb cb = fcb(f);
	struct conn	    *c;

	snprintf(key, keylen, "wss://127.0.0.1:%d/", port);
	c = conn_get(mgr, key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(f, 1, TMO), 0);
	T_EQ_INT(f->res, FETCH_DISCONNECTED);
	conn_release(c);
}

/*
 * wss:// in a context made as role.c makes it, without
 * LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT: the manager starts OpenSSL and
 * adds the vhost's client TLS context on the first wss:// dial, and the
 * certificate is checked against the system store (here SSL_CERT_FILE,
 * which OpenSSL reads then).  A self-signed server is a failed TLS
 * handshake, counted; a server whose certificate is in the store gets
 * past TLS to the websocket upgrade, which openssl s_server answers with
 * a web page.
 */
static void
wss_checks_the_certificate(void)
{
	struct fres f;
	char	    dir[PATH_MAX], ca[PATH_MAX + 16], key[64];
	pid_t	    srv;
	int	    port, st;

	T_ASSERT(tdir_make(dir, sizeof(dir), "conn-tls") == 0);
	if (tls_cert(dir, "trusted") != 0 || tls_cert(dir, "other") != 0) {
		printf("# no openssl(1): TLS case skipped\n");
		tdir_remove(dir);
		return;
	}
	snprintf(ca, sizeof(ca), "%s/trusted.pem", dir);
	T_ASSERT(setenv("SSL_CERT_FILE", ca, 1) == 0);
	mgr_start(1, 5, 3600);

	port = relayproc_free_port("127.0.0.1");
	T_ASSERT((srv = tls_server(port, dir, "other")) > 0);
	wss_fetch(port, &f, key, sizeof(key));
	printf("# wss to a self-signed server: %s\n", f.reason);
	/* lws got as far as the TLS handshake: the vhost had its client
	 * SSL by then (without it: "bio_create failed"). */
	T_ASSERT(strstr(f.reason, "cannot start") == NULL);
	T_ASSERT(strstr(f.reason, "timeout") == NULL);
	T_ASSERT(strstr(f.reason, "bio_create") == NULL);
	T_ASSERT(strstr(f.reason, "SSL err") != NULL);
	T_EQ_INT(show_num(key, "failures"), 1);
	relayproc_terminate(&srv, &st, 5000, "openssl s_server");

	port = relayproc_free_port("127.0.0.1");
	T_ASSERT((srv = tls_server(port, dir, "trusted")) > 0);
	wss_fetch(port, &f, key, sizeof(key));
	printf("# wss to a server the store trusts: %s\n", f.reason);
	T_ASSERT(strstr(f.reason, "ws upgrade response not 101") != NULL);
	relayproc_terminate(&srv, &st, 5000, "openssl s_server");

	mgr_stop();
	unsetenv("SSL_CERT_FILE");
	tdir_remove(dir);
	run_for(30);
}

static void
auth_is_answered_with_the_owner_key(void)
{
	struct event	    *evs[2];
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	cJSON		    *log, *a;
	uint8_t		     sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char		     pkhex[PUBKEY_HEX_LEN + 1];

	T_EQ_INT(peer_reset(), 200);
	evs[0] = mkev(700, 1700000500, 1, NULL);
	evs[1] = mkev(701, 1700000501, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 2), 0);
	T_EQ_INT(peer_config("{\"auth\":true}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(
	    conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	T_EQ_INT(f.st.cs_new, 2);
	T_EQ_INT(ningested, 2);

	T_ASSERT(hex_decode(OWNER_HEX, 64, sk, SECKEY_LEN) == 0);
	T_ASSERT(event_pubkey_of(sk, pk) == 0);
	hex_encode(pk, PUBKEY_LEN, pkhex);
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	a = cJSON_GetObjectItem(log, "auth");
	T_EQ_INT(cJSON_GetArraySize(a), 1);
	T_EQ_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "pubkey")
		     ->valuestring,
	    pkhex);
	/* Refused once for want of AUTH, then served on the same link. */
	T_EQ_INT(cJSON_GetArraySize(log_reqs(log)), 2);
	T_EQ_INT(ctl_num(log, "connections"), 1);
	cJSON_Delete(log);
	tuser_events_destroy(evs, 2);
	conn_release(c);
	mgr_stop();
}

static void
backoff_schedule_against_an_absent_relay(void)
{
	/* NGIT_TEST: base 5 s, cap 20 s, shrunk 60-fold. */
	static const int want[] = { 83, 166, 333, 333, 333 };
	struct conn_req *live;
	struct conn	*c;
	cJSON		*arr, *o;
	char		 key[64];
	int64_t		 at[8];
	size_t		 i, n = 0;
	int		 port;

	port = relayproc_free_port("127.0.0.1");
	T_ASSERT(port > 0);
	snprintf(key, sizeof(key), "ws://127.0.0.1:%d/", port);
	mgr_start(1, 5, 20);
	c = conn_get(mgr, key, 0, NULL);
	live = conn_live(c, "{\"kinds\":[1],\"limit\":0}", NULL);
	T_ASSERT(live != NULL);
	run_for(83 + 166 + 3 * 333 + 250);
	for (i = 0; i < ntrans && n < 8; i++)
		if (trans[i].c == c && trans[i].to == CONN_CONNECTING)
			at[n++] = trans[i].at;
	T_ASSERT(n >= 6);
	for (i = 0; i < 5; i++) {
		int64_t d = at[i + 1] - at[i];

		if (d < want[i] - 2 || d > want[i] + 150) {
			printf("# attempt %zu after %lld ms, want %d\n", i + 2,
			    (long long)d, want[i]);
			T_ASSERT(0);
		}
	}
	T_EQ_INT(conn_state(c), CONN_BACKOFF);
	T_ASSERT(show_num(key, "failures") >= 6);
	o = show(key, &arr);
	T_ASSERT(cJSON_IsNumber(cJSON_GetObjectItem(o, "until")));
	T_ASSERT(strstr(cJSON_GetObjectItem(o, "reason")->valuestring,
		     "connect") != NULL);
	T_EQ_STR(cJSON_GetObjectItem(o, "state")->valuestring, "backoff");
	cJSON_Delete(arr);
	conn_live_close(live);
	conn_release(c);
	mgr_stop();
}

static void
refused_upgrades_count_and_backoff_ends(void)
{
	struct fres	     f[3];
	struct conn_fetch_cb cb[3];
	struct conn	    *c;
	int		     i;

	T_EQ_INT(peer_reset(), 200);
	T_EQ_INT(peer_config("{\"refuse\":true}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	for (i = 0; i < 3; i++)
		cb[i] = fcb(&f[i]);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[0]) != NULL);
	T_EQ_INT(run_until_all(f, 1, TMO), 0);
	T_EQ_INT(f[0].res, FETCH_DISCONNECTED);
	T_EQ_INT(conn_state(c), CONN_BACKOFF);
	T_EQ_INT(show_num(peer_key, "failures"), 1);
	/* During the backoff a fetch ends at once, from the loop. */
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[1]) != NULL);
	T_EQ_INT(f[1].done, 0);
	run_for(5);
	T_EQ_INT(f[1].done, 1);
	T_EQ_INT(f[1].res, FETCH_DISCONNECTED);
	T_ASSERT(strstr(f[1].reason, "backoff") != NULL);
	/* After it, the relay is tried again and a success resets it. */
	T_EQ_INT(peer_reset(), 200);
	run_for(120);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[2]) != NULL);
	T_EQ_INT(run_until_all(f, 3, TMO), 0);
	T_EQ_INT(f[2].res, FETCH_EOSE);
	T_EQ_INT(show_num(peer_key, "failures"), 0);
	T_EQ_INT(show_num(peer_key, "failures_total"), 1);
	conn_release(c);
	mgr_stop();
}

static void
connect_timeout_on_a_silent_port(void)
{
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	cJSON		    *log;
	char		     key[64];
	int64_t		     t0;
	int		     hang;

	T_EQ_INT(peer_reset(), 200);
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	hang = (int)ctl_num(log, "hang_port");
	cJSON_Delete(log);
	T_ASSERT(hang > 0);
	snprintf(key, sizeof(key), "ws://127.0.0.1:%d/", hang);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, key, 0, NULL);
	t0 = wsc_now_ms();
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_DISCONNECTED);
	T_EQ_STR(f.reason, "connect timeout");
	T_ASSERT(f.at - t0 >= (int64_t)(CONN_CONNECT_TIMEOUT_MIN * 1000) - 5);
	T_ASSERT(f.at - t0 < 1500);
	T_EQ_INT(conn_state(c), CONN_BACKOFF);
	conn_release(c);
	mgr_stop();
	T_EQ_INT(peer_reset(), 200);
}

static void
garbage_counts_against_the_relay_then_drops_it(void)
{
	struct fres	     f[12];
	struct conn_fetch_cb cb[12];
	struct conn	    *c;
	int		     i, dropped = -1;

	T_EQ_INT(peer_reset(), 200);
	T_EQ_INT(peer_config("{\"garbage\":true}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	/* One text and one binary frame of junk per REQ. */
	for (i = 0; i < 12; i++) {
		cb[i] = fcb(&f[i]);
		T_ASSERT(
		    conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[i]) != NULL);
		T_EQ_INT(run_until_all(&f[i], 1, TMO), 0);
		if (f[i].res != FETCH_EOSE) {
			dropped = i;
			break;
		}
		T_EQ_INT(show_num(peer_key, "malformed"), 2 * (i + 1));
	}
	/* Past CONN_MALFORMED_MAX on one link: dropped as a failure. */
	T_EQ_INT(dropped, CONN_MALFORMED_MAX / 2);
	T_EQ_INT(f[dropped].res, FETCH_DISCONNECTED);
	T_ASSERT(strstr(f[dropped].reason, "malformed") != NULL);
	T_EQ_INT(show_num(peer_key, "failures"), 1);
	T_EQ_INT(conn_state(c), CONN_BACKOFF);
	conn_release(c);
	mgr_stop();
}

static void
forged_events_go_to_relayd_unverified(void)
{
	struct event	    *evs[3], *got, *bad;
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	char		     err[128], *p;
	size_t		     i;

	T_EQ_INT(peer_reset(), 200);
	for (i = 0; i < 3; i++)
		evs[i] = mkev(800 + (int)i, 1700000600, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 3), 0);
	/* And one whose content no longer hashes to its id. */
	bad = mkev(810, 1700000601, 1, NULL);
	p = strstr(bad->json, "event 810");
	T_ASSERT(p != NULL);
	p[0] = 'E';
	T_EQ_INT(peerctl_seed(rp, &bad, 1), 0);
	event_destroy(bad);
	T_EQ_INT(peer_config("{\"forge\":true}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	/* The id checks out, the signature does not: relayd decides. */
	T_EQ_INT(ningested, 3);
	for (i = 0; i < ningested; i++) {
		got = event_parse(ingested[i], strlen(ingested[i]), err,
		    sizeof(err));
		T_ASSERT(got != NULL);
		T_CHECK(event_check_id(got));
		T_CHECK(!event_check_sig(got));
		event_destroy(got);
	}
	T_EQ_INT(show_num(peer_key, "malformed"), 0);
	T_EQ_INT(show_num(peer_key, "bad_events"), 1);
	T_EQ_INT(f.st.cs_events, 3);
	tuser_events_destroy(evs, 3);
	conn_release(c);
	mgr_stop();
}

/* relayd lagging: events the ingest hook drops are counted in the
 * fetch's stats and not shown to its event callback (so that syncd does
 * not take them as delivered); a live one is reported with its time. */
static void
ingest_drops_are_counted_not_delivered(void)
{
	struct event	    *evs[6], *ev;
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn_req	    *live;
	struct conn	    *c;
	int64_t		     end;
	size_t		     i;

	T_EQ_INT(peer_reset(), 200);
	for (i = 0; i < 6; i++)
		evs[i] = mkev(1200 + (int)i, 1700000700 + (int)i, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, evs, 6), 0);
	mgr_start(1, 5, 3600);
	drop_every_other = 1;
	live_drops = 0;
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(
	    conn_fetch(c, "{\"kinds\":[1]}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	T_EQ_INT(ningested, 6);
	T_EQ_INT(f.st.cs_new, 6);
	T_EQ_INT(f.st.cs_dropped, 3);
	T_EQ_INT(f.events, 3);
	T_EQ_INT(live_drops, 0);

	/* Live: the dropped one is reported, the taken one is not. */
	live = conn_live(c, "{\"kinds\":[1],\"limit\":0}", NULL);
	T_ASSERT(live != NULL);
	T_EQ_INT(run_until_peer_reqs(2, TMO), 0);
	ev = mkev(1210, 1700000800, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, &ev, 1), 0);
	end = wsc_now_ms() + TMO;
	while (ningested < 7 && wsc_now_ms() < end)
		run_for(20);
	T_EQ_INT(ningested, 7);
	T_EQ_INT(live_drops, 0);
	event_destroy(ev);
	ev = mkev(1211, 1700000801, 1, NULL);
	T_EQ_INT(peerctl_seed(rp, &ev, 1), 0);
	end = wsc_now_ms() + TMO;
	while (ningested < 8 && wsc_now_ms() < end)
		run_for(20);
	T_EQ_INT(ningested, 8);
	T_EQ_INT(live_drops, 1);
	T_EQ_INT(live_drop_at, 1700000801);
	event_destroy(ev);
	drop_every_other = 0;
	tuser_events_destroy(evs, 6);
	conn_live_close(live);
	conn_release(c);
	mgr_stop();
}

static void
oversized_message_drops_the_link(void)
{
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	char		     conf[64];

	T_EQ_INT(peer_reset(), 200);
	snprintf(conf, sizeof(conf), "{\"oversized_bytes\":%u}",
	    CONN_MAX_MESSAGE + 1000);
	T_EQ_INT(peer_config(conf), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_DISCONNECTED);
	T_ASSERT(strstr(f.reason, "size limit") != NULL);
	T_EQ_INT(show_num(peer_key, "failures"), 1);
	T_EQ_INT(show_num(peer_key, "malformed"), 1);
	/* A message just under the limit is fine. */
	T_EQ_INT(peer_reset(), 200);
	snprintf(conf, sizeof(conf), "{\"oversized_bytes\":%u}",
	    CONN_MAX_MESSAGE - 100);
	T_EQ_INT(peer_config(conf), 200);
	run_for(120);
	cb = fcb(&f);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	conn_release(c);
	mgr_stop();
}

static void
flood_of_unasked_events_is_counted_not_ingested(void)
{
	struct event	    *evs[2];
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;

	T_EQ_INT(peer_reset(), 200);
	evs[0] = mkev(900, 1700000700, 30617, "[[\"d\",\"r1\"]]");
	evs[1] = mkev(901, 1700000701, 30617, "[[\"d\",\"r2\"]]");
	T_EQ_INT(peerctl_seed(rp, evs, 2), 0);
	T_EQ_INT(peer_config("{\"flood\":1500}"), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	/* The peer signs each junk event: slow under sanitizers. */
	T_ASSERT(conn_fetch(c, "{\"kinds\":[30617]}", CONN_PRIO_NORMAL, 10,
		     &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, 2 * TMO), 0);
	T_EQ_INT(f.res, FETCH_EOSE);
	/* Junk kind 1 events on our subscription match nothing we asked. */
	T_EQ_INT(ningested, 2);
	T_EQ_INT(f.st.cs_new, 2);
	T_EQ_INT(show_num(peer_key, "stray"), 1500);
	T_EQ_INT(conn_state(c), CONN_CONNECTED);
	tuser_events_destroy(evs, 2);
	conn_release(c);
	mgr_stop();
}

/* Runs the loop while c backs off; -1 if it still does after TMO. */
static int
wait_not_backoff(struct conn *c)
{
	int64_t end = wsc_now_ms() + TMO;

	while (conn_state(c) == CONN_BACKOFF) {
		if (wsc_now_ms() >= end)
			return -1;
		run_for(10);
	}
	return 0;
}

/*
 * A fresh manager and its connection to the peer, which holds n events
 * (made into evs, ids from first) and closes the link after sending
 * close_after of them; NULL if the peer could not be set up.
 */
static struct conn *
closing_peer(struct event **evs, int n, int first, int close_after)
{
	char conf[64];
	int  i;

	if (peer_reset() != 200)
		return NULL;
	for (i = 0; i < n; i++)
		evs[i] = mkev(first + i, 1700000000 + first + i, 1, NULL);
	snprintf(conf, sizeof(conf), "{\"close_after_events\":%d}",
	    close_after);
	if (peerctl_seed(rp, evs, n) != 0 || peer_config(conf) != 200)
		return NULL;
	mgr_start(1, 5, 3600);
	return conn_get(mgr, peer_key, 0, NULL);
}

/* A relay that takes the handshake and drops every request part-way
 * never answers in full: its failures add up and the backoff grows
 * (a handshake alone used to reset them: a redial loop at the base). */
static void
drops_after_the_handshake_grow_the_backoff(void)
{
	struct event	    *evs[3];
	struct fres	     f[3];
	struct conn_fetch_cb cb;
	struct conn	    *c;
	int		     i;

	c = closing_peer(evs, 3, 1300, 1);
	T_ASSERT(c != NULL);
	for (i = 0; i < 3; i++) {
		/* The next try waits out the backoff of the last failure. */
		T_EQ_INT(wait_not_backoff(c), 0);
		cb = fcb(&f[i]);
		T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
		T_EQ_INT(run_until_all(&f[i], 1, TMO), 0);
		T_EQ_INT(f[i].res, FETCH_DISCONNECTED);
		T_EQ_INT(show_num(peer_key, "failures"), i + 1);
	}
	/* An answer in full ends the streak. */
	T_EQ_INT(peer_config("{\"close_after_events\":0}"), 200);
	T_EQ_INT(wait_not_backoff(c), 0);
	cb = fcb(&f[0]);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f[0], 1, TMO), 0);
	T_EQ_INT(f[0].res, FETCH_EOSE);
	T_EQ_INT(show_num(peer_key, "failures"), 0);
	tuser_events_destroy(evs, 3);
	conn_release(c);
	mgr_stop();
}

static void
abrupt_close_mid_stream_is_a_failure(void)
{
	struct event	    *evs[10];
	struct fres	     f[2];
	struct conn_fetch_cb cb[2];
	struct conn	    *c;

	c = closing_peer(evs, 10, 1000, 4);
	T_ASSERT(c != NULL);
	cb[0] = fcb(&f[0]);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[0]) != NULL);
	T_EQ_INT(run_until_all(f, 1, TMO), 0);
	T_EQ_INT(f[0].res, FETCH_DISCONNECTED);
	T_ASSERT(f[0].st.cs_new <= 4);
	T_EQ_INT(ningested, f[0].st.cs_new);
	T_EQ_INT(show_num(peer_key, "failures"), 1);
	T_EQ_INT(conn_state(c), CONN_BACKOFF);
	T_EQ_INT(peer_config("{\"close_after_events\":0}"), 200);
	run_for(120);
	cb[1] = fcb(&f[1]);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[1]) != NULL);
	T_EQ_INT(run_until_all(&f[1], 1, TMO), 0);
	T_EQ_INT(f[1].res, FETCH_EOSE);
	T_EQ_INT(f[1].st.cs_new, 10);
	T_EQ_INT(show_num(peer_key, "failures"), 0);
	tuser_events_destroy(evs, 10);
	conn_release(c);
	mgr_stop();
}

static void
live_subscription_survives_a_peer_restart(void)
{
	struct event	*ev;
	struct conn_req *live;
	struct conn	*c;
	cJSON		*log, *fl;
	int64_t		 end;

	T_EQ_INT(peer_reset(), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	live = conn_live(c, "{\"kinds\":[1],\"limit\":0}", NULL);
	T_ASSERT(live != NULL);
	T_EQ_INT(run_until_peer_reqs(1, TMO), 0);
	T_EQ_INT(conn_state(c), CONN_CONNECTED);

	T_EQ_INT(relayproc_restart(rp), 0);
	/* Our loop notices the drop, backs off, reconnects, re-sends. */
	T_EQ_INT(run_until_peer_reqs(1, TMO), 0);
	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	fl = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(log_reqs(log), 0),
		"filters"),
	    0);
	T_EQ_INT(cJSON_GetObjectItem(fl, "limit")->valueint, 0);
	cJSON_Delete(log);
	T_ASSERT(show_num(peer_key, "failures_total") >= 1);
	T_EQ_INT(conn_state(c), CONN_CONNECTED);

	/* A new event reaches us through the restored subscription. */
	ev = mkev(1100, (int64_t)time(NULL), 1, NULL);
	T_EQ_INT(peerctl_seed(rp, &ev, 1), 0);
	end = wsc_now_ms() + TMO;
	while (ingested_count(ev->id_hex) == 0 && wsc_now_ms() < end)
		run_for(20);
	T_EQ_INT(ingested_count(ev->id_hex), 1);
	event_destroy(ev);
	conn_live_close(live);
	conn_release(c);
	mgr_stop();
}

static void
loopback_names_are_refused_without_allow_private(void)
{
	struct fres	     f[3];
	struct conn_fetch_cb cb[3];
	struct conn	    *c, *d;
	cJSON		    *log, *arr, *o;
	char		     key[64];
	int		     i;

	T_EQ_INT(peer_reset(), 200);
	snprintf(key, sizeof(key), "ws://localhost:%d/", relayproc_port(rp));
	mgr_start(0, 5, 3600);
	for (i = 0; i < 3; i++)
		cb[i] = fcb(&f[i]);
	/* "localhost" resolves to a loopback address: refused at connect. */
	c = conn_get(mgr, key, 0, NULL);
	T_ASSERT(c != NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[0]) != NULL);
	d = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_fetch(d, "{}", CONN_PRIO_NORMAL, 0, &cb[1]) != NULL);
	T_EQ_INT(run_until_all(f, 2, TMO), 0);
	T_EQ_INT(f[0].res, FETCH_DISCONNECTED);
	T_EQ_INT(f[1].res, FETCH_DISCONNECTED);
	T_EQ_INT(conn_state(c), CONN_REFUSED);
	T_EQ_INT(conn_state(d), CONN_REFUSED);
	o = show(key, &arr);
	T_ASSERT(strstr(cJSON_GetObjectItem(o, "reason")->valuestring,
		     "refused address") != NULL);
	cJSON_Delete(arr);
	log = peerctl_log(rp);
	T_EQ_INT(ctl_num(log, "connections"), 0);
	cJSON_Delete(log);
	conn_release(c);
	conn_release(d);
	mgr_stop();

	/* The same name with NGIT_SYNC_ALLOW_PRIVATE_TARGETS. */
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb[2]) != NULL);
	T_EQ_INT(run_until_all(&f[2], 1, TMO), 0);
	T_EQ_INT(f[2].res, FETCH_EOSE);
	conn_release(c);
	mgr_stop();
}

static void
stats_have_fixed_names_without_urls(void)
{
	struct fres	     f;
	struct conn_fetch_cb cb = fcb(&f);
	struct conn	    *c;
	cJSON		    *m, *pair;
	char		    *text;
	int		     nstate = 0;

	T_EQ_INT(peer_reset(), 200);
	mgr_start(1, 5, 3600);
	c = conn_get(mgr, peer_key, 0, NULL);
	T_ASSERT(conn_fetch(c, "{}", CONN_PRIO_NORMAL, 0, &cb) != NULL);
	T_EQ_INT(run_until_all(&f, 1, TMO), 0);
	m = cJSON_CreateArray();
	conn_mgr_stats(mgr, m);
	text = cJSON_PrintUnformatted(m);
	T_ASSERT(strstr(text, "ws://") == NULL);
	T_ASSERT(strstr(text, "127.0.0.1") == NULL);
	free(text);
	cJSON_ArrayForEach(pair, m) {
		const char *name = cJSON_GetArrayItem(pair, 0)->valuestring;

		if (strncmp(name, "graspd_conn_relays{state=", 25) == 0)
			nstate++;
		if (strcmp(name, "graspd_conn_relays{state=\"connected\"}") ==
		    0)
			T_EQ_INT(cJSON_GetArrayItem(pair, 1)->valueint, 1);
		if (strcmp(name,
			"graspd_conn_fetches_total{result=\"eose\"}") == 0)
			T_EQ_INT(cJSON_GetArrayItem(pair, 1)->valueint, 1);
	}
	T_EQ_INT(nstate, CONN_NSTATES);
	cJSON_Delete(m);
	conn_release(c);
	mgr_stop();
}

static void
lws_log(int level, const char *line)
{
	printf("# lws: %s", line);
}

static int64_t conn_live_t0; /* when conn_live_setup() began */

static int
conn_live_setup(void)
{
	static const struct lws_protocols protos[] = { CONN_LWS_PROTOCOL,
		{ NULL, NULL, 0, 0, 0, NULL, 0 } };
	struct lws_context_creation_info  info;

	conn_live_t0 = wsc_now_ms();
	log_init("conn_live_test", 1);
	log_setlevel(
	    getenv("CONN_TEST_VERBOSE") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
	lws_set_log_level(LLL_ERR, lws_log);
	rp = relayproc_start_peer(NULL);
	if (rp == NULL) {
		printf("not ok - peer_start: the peer did not start\n");
		return 1;
	}
	snprintf(peer_key, sizeof(peer_key), "ws://127.0.0.1:%d/",
	    relayproc_port(rp));

	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protos;
	/* As role.c makes it: no TLS until the manager's first wss:// dial
	 * starts OpenSSL and adds the vhost's client TLS context. */
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.gid = -1;
	info.uid = -1;
	if ((lws = lws_create_context(&info)) == NULL) {
		printf("not ok - lws: no context\n");
		return 1;
	}
	info.options = 0;
	info.vhost_name = "default";
	if ((vh = lws_create_vhost(lws, &info)) == NULL) {
		printf("not ok - lws: no vhost\n");
		return 1;
	}
	tick_cb(&tick);
	memset(&info, 0, sizeof(info));
	info.port = script_port = relayproc_free_port("127.0.0.1");
	info.iface = "127.0.0.1";
	info.protocols = script_protocols;
	info.vhost_name = "script";
	if (script_port <= 0 || lws_create_vhost(lws, &info) == NULL) {
		printf("not ok - lws: no scripted server\n");
		return 1;
	}
	return 0;
}

static void
conn_live_cleanup(void)
{
	if (mgr != NULL)
		conn_mgr_free(mgr);
	lws_sul_cancel(&tick);
	lws_context_destroy(lws);
	config_free(&cfg);
	seen_reset();
	if (t_fail)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
	printf("# %lld ms in all\n", (long long)(wsc_now_ms() - conn_live_t0));
}

static const struct t_case cases[] = {
	T_CASE(one_connection_per_relay_shared_then_retired),
	T_CASE(bad_requests_are_refused_at_once),
	T_CASE(pagination_across_a_capped_relay_loses_nothing),
	T_CASE(pagination_steps_past_a_second_fuller_than_the_cap),
	T_CASE(packed_filters_stay_under_the_budget_on_the_wire),
	T_CASE(ledger_caps_subscriptions_and_admits_live_first),
	T_CASE(fetch_times_out_without_eose_and_closes),
	T_CASE(notice_rate_limit_cools_down),
	T_CASE(closed_rate_limited_cools_down),
	T_CASE(ok_rate_limited_to_auth_cools_down),
	T_CASE(host_header_names_the_relay_not_its_address),
	T_CASE(wss_checks_the_certificate),
	T_CASE(auth_is_answered_with_the_owner_key),
	T_CASE(backoff_schedule_against_an_absent_relay),
	T_CASE(refused_upgrades_count_and_backoff_ends),
	T_CASE(connect_timeout_on_a_silent_port),
	T_CASE(garbage_counts_against_the_relay_then_drops_it),
	T_CASE(forged_events_go_to_relayd_unverified),
	T_CASE(ingest_drops_are_counted_not_delivered),
	T_CASE(oversized_message_drops_the_link),
	T_CASE(flood_of_unasked_events_is_counted_not_ingested),
	T_CASE(abrupt_close_mid_stream_is_a_failure),
	T_CASE(drops_after_the_handshake_grow_the_backoff),
	T_CASE(live_subscription_survives_a_peer_restart),
	T_CASE(loopback_names_are_refused_without_allow_private),
	T_CASE(stats_have_fixed_names_without_urls),
};

T_MAIN_WITH(cases, conn_live_setup, conn_live_cleanup, T_IGN_SIGPIPE)
