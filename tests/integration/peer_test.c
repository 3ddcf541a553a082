/*
 * peer_test.c: the scriptable peer relay (tests/peer/) as a client sees
 * it: seeded and published events served newest first under limit, since
 * and until; live delivery; each misbehaviour that POST /config scripts;
 * NIP-42 AUTH; refused and hanging handshakes; what GET /log records; and
 * POST /reset.  One peer on loopback serves every case, reset in between.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "json.h"
#include "nostr.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tuser.h"
#include "wsclient.h"

#define TMO 5000

static struct relayproc *rp;

static struct wsc *
conn(void)
{
	return wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
}

/* POSTs body to path; returns the HTTP status (-1 if no answer). */
static int
post(const char *path, const char *body, char **resp)
{
	return peerctl_post(rp, path, body, resp);
}

static int
config(const char *json)
{
	return post("/config", json, NULL);
}

static int
reset(void)
{
	return post("/reset", "", NULL);
}

static void
seckey(int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, 0, SECKEY_LEN);
	sk[0] = 0x22;
	sk[31] = (uint8_t)n;
}

static struct event *
signed_ev(int n, int64_t created_at, uint32_t kind, const char *tags,
    const char *content)
{
	uint8_t sk[SECKEY_LEN];

	seckey(n, sk);
	return event_new_signed(sk, created_at, kind, tags, content);
}

/* The "id" of one event's JSON text, into out. */
static int
id_of(const char *evjson, char out[EVENT_ID_HEX_LEN + 1])
{
	struct event *ev;
	char	      err[128];

	if ((ev = event_parse(evjson, strlen(evjson), err, sizeof(err))) ==
	    NULL)
		return -1;
	memcpy(out, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	event_destroy(ev);
	return 0;
}

/* The event JSON of ev with its signature's first hex digit changed. */
static char *
forged_json(const struct event *ev)
{
	char *s, *sig;

	if ((s = strdup(ev->json)) == NULL)
		abort();
	sig = strstr(s, "\"sig\":\"") + 7;
	*sig = *sig == '0' ? '1' : '0';
	return s;
}

/* Seeds n kind-1 events at created_at 5000.. by key 6: 0, or -1. */
static int
seed_n(size_t n)
{
	struct event *evs[64] = { NULL };
	size_t	      i;
	int	      st;

	if (n > 64)
		return -1;
	for (i = 0; i < n; i++)
		evs[i] = signed_ev(6, 5000 + (int64_t)i, 1, NULL, "n");
	st = peerctl_seed(rp, evs, n);
	tuser_events_destroy(evs, n);
	return st;
}

/*
 * The start of a case: the peer reset, nseed events seeded (seed_n()),
 * cfg configured, and a connection in *w; *w stays NULL, and the case
 * failed, when a step did not work.
 */
static void
configured(size_t nseed, const char *cfg, struct wsc **w)
{
	*w = NULL;
	T_EQ_INT(reset(), 200);
	if (nseed > 0)
		T_EQ_INT(seed_n(nseed), 0);
	T_EQ_INT(config(cfg), 200);
	T_ASSERT((*w = conn()) != NULL);
}

static void
test_nip11_document(void)
{
	char  *body = NULL;
	int    status = 0;
	cJSON *doc, *nips;

	T_ASSERT(http_get(relayproc_host(rp), relayproc_port(rp), "/",
		     "Accept: application/nostr+json\r\n", TMO, &status, NULL,
		     &body) == 0);
	T_EQ_INT(status, 200);
	doc = cJSON_Parse(body);
	free(body);
	T_ASSERT(doc != NULL);
	T_CHECK(cJSON_IsString(cJSON_GetObjectItem(doc, "name")) &&
	    strcmp(cJSON_GetObjectItem(doc, "name")->valuestring,
		"graspd test peer") == 0);
	nips = cJSON_GetObjectItem(doc, "supported_nips");
	T_CHECK(cJSON_GetArraySize(nips) == 2 &&
	    cJSON_GetArrayItem(nips, 0)->valueint == 1 &&
	    cJSON_GetArrayItem(nips, 1)->valueint == 11);
	cJSON_Delete(doc);
}

static void
test_config_refuses_unknown_keys_and_bad_types(void)
{
	char *resp = NULL;

	T_EQ_INT(reset(), 200);
	T_EQ_INT(post("/config", "{\"drop_eos\":true}", &resp), 400);
	T_CHECK(resp && strstr(resp, "drop_eos") != NULL);
	free(resp);
	T_EQ_INT(config("{\"max_results\":\"3\"}"), 400);
	T_EQ_INT(config("{\"drop_eose\":1}"), 400);
	T_EQ_INT(config("{\"flood\":-1}"), 400);
	T_EQ_INT(config("not json"), 400);
	/* "neg" (NIP-77 mode) is a boolean like the others. */
	T_EQ_INT(post("/config", "{\"neg\":true,\"max_results\":7}", &resp),
	    200);
	T_CHECK(resp && strstr(resp, "\"max_results\":7") != NULL);
	free(resp);
	T_EQ_INT(reset(), 200);
}

static void
test_seeded_events_newest_first_with_limit_since_until(void)
{
	struct event *evs[6];
	struct wsc   *w = NULL;
	char	    **got = NULL, id[EVENT_ID_HEX_LEN + 1],
	     lowid[EVENT_ID_HEX_LEN + 1], highid[EVENT_ID_HEX_LEN + 1];
	size_t n = 0, i;
	int    rc;

	T_EQ_INT(reset(), 200);
	for (i = 0; i < 5; i++)
		evs[i] = signed_ev(1, 1000 + (int64_t)i, 1, NULL, "seeded");
	/* A tie on created_at: the lower id comes first. */
	evs[5] = signed_ev(2, 1004, 1, NULL, "tie");
	T_EQ_INT(peerctl_seed(rp, evs, 6), 0);
	if (strcmp(evs[4]->id_hex, evs[5]->id_hex) < 0) {
		memcpy(lowid, evs[4]->id_hex, EVENT_ID_HEX_LEN + 1);
		memcpy(highid, evs[5]->id_hex, EVENT_ID_HEX_LEN + 1);
	} else {
		memcpy(lowid, evs[5]->id_hex, EVENT_ID_HEX_LEN + 1);
		memcpy(highid, evs[4]->id_hex, EVENT_ID_HEX_LEN + 1);
	}
	w = conn();
	if (w == NULL)
		goto done;
	rc = nostr_req(w, "all", "{\"kinds\":[1]}", TMO, &got, &n, NULL);
	T_CHECK(rc == 0);
	T_CHECK(n == 6);
	if (n == 6) {
		T_CHECK(id_of(got[0], id) == 0 && strcmp(id, lowid) == 0);
		T_CHECK(id_of(got[1], id) == 0 && strcmp(id, highid) == 0);
		for (i = 2; i < 6; i++)
			T_CHECK(id_of(got[i], id) == 0 &&
			    strcmp(id, evs[5 - i]->id_hex) == 0);
	}
	nostr_events_free(got);
	got = NULL;

	rc = nostr_req(w, "lim", "{\"kinds\":[1],\"limit\":3}", TMO, &got, &n,
	    NULL);
	T_CHECK(rc == 0 && n == 3);
	if (n == 3)
		T_CHECK(
		    id_of(got[2], id) == 0 && strcmp(id, evs[3]->id_hex) == 0);
	nostr_events_free(got);
	got = NULL;

	rc = nostr_req(w, "range", "{\"since\":1001,\"until\":1003}", TMO, &got,
	    &n, NULL);
	T_CHECK(rc == 0 && n == 3);
	if (n == 3) {
		T_CHECK(
		    id_of(got[0], id) == 0 && strcmp(id, evs[3]->id_hex) == 0);
		T_CHECK(
		    id_of(got[2], id) == 0 && strcmp(id, evs[1]->id_hex) == 0);
	}
	nostr_events_free(got);
	got = NULL;

	rc = nostr_req(w, "zero", "{\"limit\":0}", TMO, &got, &n, NULL);
	T_CHECK(rc == 0 && n == 0);
	nostr_events_free(got);
	got = NULL;

	/* Two filters: the union, each under its own limit. */
	rc = nostr_req(w, "two",
	    "[{\"until\":1000},{\"since\":1004,"
	    "\"limit\":1}]",
	    TMO, &got, &n, NULL);
	T_CHECK(rc == 0 && n == 2);
done:
	nostr_events_free(got);
	if (w != NULL)
		wsc_close(w);
	tuser_events_destroy(evs, 6);
	T_ASSERT(w != NULL);
}

static void
test_published_events_stored_unchecked_unless_verify(void)
{
	struct event *ev, *dup;
	struct wsc   *w;
	char	     *forged = NULL, *msg = NULL, **got = NULL;
	size_t	      n = 0;
	int	      ok = -1;

	T_EQ_INT(reset(), 200);
	ev = signed_ev(3, 2000, 1, NULL, "forged");
	dup = signed_ev(3, 2001, 1, NULL, "twice");
	T_ASSERT(ev != NULL && dup != NULL);
	T_ASSERT((w = conn()) != NULL);
	forged = forged_json(ev);
	T_CHECK(
	    nostr_publish_json(w, forged, ev->id_hex, TMO, &ok, &msg) == 0 &&
	    ok == 1);
	free(msg);
	msg = NULL;
	T_CHECK(
	    nostr_req(w, "f", "{\"kinds\":[1]}", TMO, &got, &n, NULL) == 0 &&
	    n == 1);
	nostr_events_free(got);
	got = NULL;
	T_CHECK(nostr_publish(w, dup, TMO, &ok, &msg) == 0 && ok == 1);
	free(msg);
	msg = NULL;
	T_CHECK(nostr_publish(w, dup, TMO, &ok, &msg) == 0 && ok == 1 && msg &&
	    strncmp(msg, "duplicate:", 10) == 0);
	free(msg);
	msg = NULL;

	/* The same forgery again: refused now, before the duplicate check. */
	T_CHECK(config("{\"verify\":true}") == 200);
	T_CHECK(
	    nostr_publish_json(w, forged, ev->id_hex, TMO, &ok, &msg) == 0 &&
	    ok == 0 && msg && strncmp(msg, "invalid:", 8) == 0);
	free(msg);
	msg = NULL;
	wsc_close(w);
	free(forged);
	event_destroy(ev);
	event_destroy(dup);
	T_EQ_INT(reset(), 200);
}

static void
test_live_delivery_of_published_and_seeded_events(void)
{
	struct wsc   *a, *b;
	struct event *ev, *ev2;
	char	    **got = NULL, *msg = NULL;
	size_t	      n = 0;
	int	      ok = -1;

	T_EQ_INT(reset(), 200);
	ev = signed_ev(4, 3000, 7, NULL, "+");
	ev2 = signed_ev(4, 3001, 7, NULL, "-");
	T_ASSERT(ev != NULL && ev2 != NULL);
	T_ASSERT((a = conn()) != NULL);
	T_ASSERT((b = conn()) != NULL);
	T_CHECK(
	    nostr_req(a, "live", "{\"kinds\":[7]}", TMO, &got, &n, NULL) == 0 &&
	    n == 0);
	nostr_events_free(got);
	T_CHECK(nostr_publish(b, ev, TMO, &ok, &msg) == 0 && ok == 1);
	free(msg);
	T_CHECK(nostr_event_arrives(a, "live", ev->id_hex, TMO));
	T_CHECK(peerctl_seed(rp, &ev2, 1) == 0);
	T_CHECK(nostr_event_arrives(a, "live", ev2->id_hex, TMO));
	/* After CLOSE nothing more arrives. */
	T_CHECK(nostr_close_sub(a, "live") == 0);
	event_destroy(ev);
	ev = signed_ev(4, 3002, 7, NULL, "late");
	T_CHECK(nostr_publish(b, ev, TMO, &ok, &msg) == 0 && ok == 1);
	free(msg);
	T_CHECK(nostr_no_event(a, "live", 300));
	wsc_close(a);
	wsc_close(b);
	event_destroy(ev);
	event_destroy(ev2);
}

static void
test_closed_rate_limited(void)
{
	struct wsc *w;
	char	  **got = NULL, *why = NULL;
	size_t	    n = 0;

	configured(0, "{\"closed_rate_limited\":true}", &w);
	T_ASSERT(w != NULL);
	T_CHECK(nostr_req(w, "rl", "{}", TMO, &got, &n, &why) == 1);
	T_CHECK(why != NULL && strcmp(why, "rate-limited: slow down") == 0);
	free(why);
	nostr_events_free(got);
	wsc_close(w);
}

static void
test_notice_rate_limit_then_served(void)
{
	struct wsc *w;
	char	   *m;

	configured(0, "{\"notice_rate_limit\":true}", &w);
	T_ASSERT(w != NULL);
	T_ASSERT(wsc_send_text(w, "[\"REQ\",\"n\",{}]", 14) == 0);
	m = nostr_wait_msg(w, "NOTICE", TMO);
	T_CHECK(m != NULL &&
	    strcmp(m,
		"[\"NOTICE\",\"rate limit exceeded, "
		"slow down\"]") == 0);
	free(m);
	T_CHECK(nostr_msg_has(w, "EOSE", NULL, TMO));
	wsc_close(w);
}

static void
test_ok_rate_limited_does_not_store(void)
{
	struct wsc   *w;
	struct event *ev = signed_ev(5, 4000, 1, NULL, "x");
	char	     *msg = NULL;
	cJSON	     *log;
	int	      ok = -1;

	T_EQ_INT(reset(), 200);
	T_EQ_INT(config("{\"ok_rate_limited\":true}"), 200);
	T_ASSERT((w = conn()) != NULL && ev != NULL);
	T_CHECK(nostr_publish(w, ev, TMO, &ok, &msg) == 0 && ok == 0);
	T_CHECK(msg != NULL && strcmp(msg, "rate-limited: slow down") == 0);
	free(msg);
	log = peerctl_log(rp);
	T_CHECK(log != NULL && ctl_num(log, "stored") == 0 &&
	    ctl_num(log, "events_received") == 1);
	cJSON_Delete(log);
	wsc_close(w);
	event_destroy(ev);
}

static void
test_max_results_caps_each_req(void)
{
	struct wsc   *w;
	char	    **got = NULL;
	size_t	      n = 0;
	struct event *ev;

	configured(10, "{\"max_results\":3}", &w);
	T_ASSERT(w != NULL);
	T_CHECK(nostr_req(w, "cap", "{}", TMO, &got, &n, NULL) == 0 && n == 3);
	if (n == 3) {
		ev = event_parse(got[2], strlen(got[2]), NULL, 0);
		T_CHECK(ev != NULL && ev->created_at == 5007);
		event_destroy(ev);
	}
	nostr_events_free(got);
	wsc_close(w);
}

static void
test_drop_eose_leaves_req_waiting(void)
{
	struct wsc *w;
	char	  **got = NULL;
	size_t	    n = 0;
	int64_t	    t0;

	configured(4, "{\"drop_eose\":true}", &w);
	T_ASSERT(w != NULL);
	t0 = wsc_now_ms();
	T_CHECK(nostr_req(w, "no-eose", "{}", 500, &got, &n, NULL) == -1);
	T_CHECK(n == 4);
	T_CHECK(wsc_now_ms() - t0 >= 450);
	T_CHECK(!wsc_is_closed(w));
	nostr_events_free(got);
	wsc_close(w);
}

static void
test_eose_delay(void)
{
	struct wsc *w;
	char	  **got = NULL;
	size_t	    n = 0;
	int64_t	    t0, dt;

	configured(2, "{\"eose_delay_ms\":400}", &w);
	T_ASSERT(w != NULL);
	t0 = wsc_now_ms();
	T_CHECK(nostr_req(w, "slow", "{}", TMO, &got, &n, NULL) == 0);
	dt = wsc_now_ms() - t0;
	T_CHECK(n == 2);
	T_CHECK(dt >= 380 && dt < 3000);
	nostr_events_free(got);
	/* A CLOSE before the delay ends cancels the EOSE. */
	T_ASSERT(wsc_send_text(w, "[\"REQ\",\"c\",{}]", 14) == 0);
	T_CHECK(nostr_close_sub(w, "c") == 0);
	T_CHECK(!nostr_msg_has(w, "EOSE", NULL, 800));
	T_CHECK(!wsc_is_closed(w));
	wsc_close(w);
}

static void
test_close_after_events_drops_abruptly(void)
{
	struct wsc *w;
	char	  **got = NULL;
	size_t	    n = 0;

	configured(5, "{\"close_after_events\":3}", &w);
	T_ASSERT(w != NULL);
	T_CHECK(nostr_req(w, "cut", "{}", TMO, &got, &n, NULL) == -1);
	T_CHECK(n == 3);
	T_CHECK(wsc_is_closed(w));
	/* No close frame: the stream just ended. */
	T_CHECK(wsc_close_code(w) == 0);
	nostr_events_free(got);
	wsc_drop(w);
}

static void
test_garbage_text_and_binary_frames(void)
{
	struct wsc	*w;
	char		*m, err[64];
	size_t		 len;
	struct json_doc *doc = NULL;

	configured(0, "{\"garbage\":true}", &w);
	T_ASSERT(w != NULL);
	T_ASSERT(wsc_send_text(w, "[\"REQ\",\"g\",{}]", 14) == 0);
	m = wsc_recv(w, TMO, &len);
	T_ASSERT(m != NULL);
	T_CHECK(wsc_last_opcode(w) == WS_OP_TEXT);
	T_CHECK(json_parse(m, len, &doc, err, sizeof(err)) == NULL);
	json_free(doc);
	free(m);
	m = wsc_recv(w, TMO, &len);
	T_ASSERT(m != NULL);
	T_CHECK(wsc_last_opcode(w) == WS_OP_BINARY && len > 0);
	free(m);
	T_CHECK(nostr_msg_has(w, "EOSE", NULL, TMO));
	wsc_close(w);
}

static void
test_forge_flips_a_signature_byte(void)
{
	struct event *ev = signed_ev(7, 6000, 1, NULL, "genuine"), *got_ev;
	struct wsc   *w;
	char	    **got = NULL;
	size_t	      n = 0;

	T_EQ_INT(reset(), 200);
	T_ASSERT(ev != NULL);
	T_EQ_INT(peerctl_seed(rp, &ev, 1), 0);
	T_EQ_INT(config("{\"forge\":true}"), 200);
	T_ASSERT((w = conn()) != NULL);
	T_CHECK(nostr_req(w, "f", "{}", TMO, &got, &n, NULL) == 0 && n == 1);
	if (n == 1) {
		got_ev = event_parse(got[0], strlen(got[0]), NULL, 0);
		T_CHECK(got_ev != NULL && event_check_id(got_ev));
		T_CHECK(got_ev != NULL && !event_check_sig(got_ev));
		T_CHECK(
		    got_ev != NULL && memcmp(got_ev->sig, ev->sig, 63) == 0);
		event_destroy(got_ev);
	}
	nostr_events_free(got);
	got = NULL;
	T_EQ_INT(config("{\"forge\":false}"), 200);
	T_CHECK(nostr_req(w, "g", "{}", TMO, &got, &n, NULL) == 0 && n == 1);
	if (n == 1) {
		got_ev = event_parse(got[0], strlen(got[0]), NULL, 0);
		T_CHECK(got_ev != NULL && event_check_sig(got_ev));
		event_destroy(got_ev);
	}
	nostr_events_free(got);
	wsc_close(w);
	event_destroy(ev);
}

static void
test_oversized_notice_frame_arrives(void)
{
	struct wsc	*w;
	char		*m, err[64];
	size_t		 len = 0, want = 5 * 1024 * 1024;
	struct json_doc *doc = NULL;
	struct json	*j;

	configured(0, "{\"oversized_bytes\":5242880}", &w);
	T_ASSERT(w != NULL);
	T_ASSERT(wsc_send_text(w, "[\"REQ\",\"o\",{}]", 14) == 0);
	m = wsc_recv(w, TMO, &len);
	T_ASSERT(m != NULL);
	T_CHECK(len == want);
	j = json_parse(m, len, &doc, err, sizeof(err));
	T_CHECK(j != NULL && j->type == JSON_ARRAY && j->child != NULL &&
	    strcmp(j->child->s, "NOTICE") == 0);
	json_free(doc);
	free(m);
	T_CHECK(nostr_msg_has(w, "EOSE", NULL, TMO));
	wsc_close(w);
}

static void
test_flood_sends_unsolicited_events(void)
{
	struct wsc   *w;
	char	    **got = NULL;
	size_t	      n = 0, i;
	struct event *ev;

	configured(0, "{\"flood\":25}", &w);
	T_ASSERT(w != NULL);
	T_CHECK(nostr_req(w, "fl", "{\"kinds\":[30617]}", TMO, &got, &n,
		    NULL) == 0);
	T_CHECK(n == 25);
	for (i = 0; i < n; i++) {
		ev = event_parse(got[i], strlen(got[i]), NULL, 0);
		T_CHECK(ev != NULL && ev->kind != 30617);
		T_CHECK(ev != NULL && event_check_sig(ev));
		event_destroy(ev);
	}
	nostr_events_free(got);
	wsc_close(w);
}

/* The challenge of an ["AUTH",<challenge>] message, into out. */
static int
challenge_of(const char *msg, char *out, size_t outlen)
{
	struct json_doc *doc = NULL;
	struct json	*j, *c;
	char		 err[64];
	int		 rc = -1;

	j = json_parse(msg, strlen(msg), &doc, err, sizeof(err));
	if (j != NULL && (c = json_at(j, 1)) != NULL &&
	    c->type == JSON_STRING && c->len < outlen) {
		memcpy(out, c->s, c->len + 1);
		rc = 0;
	}
	json_free(doc);
	return rc;
}

static struct event *
auth_event(int key, const char *challenge)
{
	struct buf    b = BUF_INIT;
	struct event *ev;

	buf_printf(&b, "[[\"relay\",\"%s\"],[\"challenge\",\"%s\"]]",
	    relayproc_url(rp), challenge);
	ev = signed_ev(key, (int64_t)time(NULL), 22242, b.b_data, "");
	buf_free(&b);
	return ev;
}

/* Sends ["AUTH",<ev>].  0 or -1. */
static int
send_auth(struct wsc *w, const struct event *ev)
{
	struct buf b = BUF_INIT;
	int	   rc;

	buf_adds(&b, "[\"AUTH\",");
	buf_add(&b, ev->json, ev->json_len);
	buf_addc(&b, ']');
	rc = wsc_send_text(w, b.b_data, b.b_len);
	buf_free(&b);
	return rc;
}

static void
test_auth_challenge_then_req_works(void)
{
	struct wsc   *w;
	struct event *bad = NULL, *good = NULL;
	char	     *m = NULL, ch[128], **got = NULL, *why = NULL;
	char	      pk[PUBKEY_HEX_LEN + 1];
	size_t	      n = 0;
	cJSON	     *log, *a;

	configured(1, "{\"auth\":true}", &w);
	T_ASSERT(w != NULL);
	m = nostr_wait_msg(w, "AUTH", TMO);
	T_ASSERT(m != NULL && challenge_of(m, ch, sizeof(ch)) == 0);
	free(m);
	T_CHECK(nostr_req(w, "a", "{}", TMO, &got, &n, &why) == 1);
	T_CHECK(why != NULL && strncmp(why, "auth-required:", 14) == 0);
	free(why);
	why = NULL;
	nostr_events_free(got);
	got = NULL;

	bad = auth_event(8, "not-the-challenge");
	good = auth_event(8, ch);
	T_ASSERT(bad != NULL && good != NULL);
	T_CHECK(send_auth(w, bad) == 0);
	T_CHECK(nostr_msg_has(w, "OK", ",false,", TMO));
	T_CHECK(send_auth(w, good) == 0);
	m = nostr_wait_msg(w, "OK", TMO);
	T_CHECK(m != NULL && strstr(m, good->id_hex) != NULL &&
	    strstr(m, ",true,") != NULL);
	free(m);
	T_CHECK(nostr_req(w, "b", "{}", TMO, &got, &n, NULL) == 0 && n == 1);
	nostr_events_free(got);

	log = peerctl_log(rp);
	a = cJSON_GetArrayItem(cJSON_GetObjectItem(log, "auth"), 0);
	memcpy(pk, good->pubkey_hex, sizeof(pk));
	T_CHECK(a != NULL && cJSON_IsString(cJSON_GetObjectItem(a, "pubkey")) &&
	    strcmp(cJSON_GetObjectItem(a, "pubkey")->valuestring, pk) == 0);
	T_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(log, "auth")) == 1);
	cJSON_Delete(log);
	event_destroy(bad);
	event_destroy(good);
	wsc_close(w);
}

static void
test_refuse_answers_upgrades_503(void)
{
	struct wsc *w;
	int	    status = 0;

	T_EQ_INT(reset(), 200);
	T_EQ_INT(config("{\"refuse\":true}"), 200);
	w = wsc_connect_ex(relayproc_host(rp), relayproc_port(rp), "/", NULL,
	    TMO, &status);
	T_CHECK(w == NULL);
	T_CHECK(status == 503);
	if (w != NULL)
		wsc_close(w);
	T_EQ_INT(config("{\"refuse\":false}"), 200);
	T_ASSERT((w = conn()) != NULL);
	wsc_close(w);
}

static void
test_hang_never_completes_handshake(void)
{
	struct wsc *w;
	cJSON	   *log;
	int64_t	    t0;
	int	    hang_port;

	T_EQ_INT(reset(), 200);
	T_ASSERT((log = peerctl_log(rp)) != NULL);
	hang_port = (int)ctl_num(log, "hang_port");
	cJSON_Delete(log);
	T_ASSERT(hang_port > 0);
	/* The hang port accepts TCP and never answers. */
	t0 = wsc_now_ms();
	w = wsc_connect(relayproc_host(rp), hang_port, "/", 400);
	T_CHECK(w == NULL && wsc_now_ms() - t0 >= 350);
	if (w != NULL)
		wsc_close(w);
	/* So does the main port while "hang" is set. */
	T_EQ_INT(config("{\"hang\":true}"), 200);
	t0 = wsc_now_ms();
	w = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", 400);
	T_CHECK(w == NULL && wsc_now_ms() - t0 >= 350);
	if (w != NULL)
		wsc_close(w);
	T_EQ_INT(config("{\"hang\":false}"), 200);
	T_ASSERT((w = conn()) != NULL);
	wsc_close(w);
	T_EQ_INT(reset(), 200);
}

/* 1 if the log's req i is on conn with sub and exactly filters_json. */
static int
req_is(const cJSON *reqs, int i, double conn_no, const char *sub,
    const char *filters_json)
{
	const cJSON *r = cJSON_GetArrayItem(reqs, i);
	cJSON	    *want;
	int	     same;

	if (r == NULL || ctl_num(r, "conn") != conn_no ||
	    !cJSON_IsString(cJSON_GetObjectItem(r, "sub")) ||
	    strcmp(cJSON_GetObjectItem(r, "sub")->valuestring, sub) != 0)
		return 0;
	want = cJSON_Parse(filters_json);
	same = cJSON_Compare(cJSON_GetObjectItem(r, "filters"), want, 1);
	cJSON_Delete(want);
	return same;
}

static void
test_log_records_reqs_closes_and_concurrency(void)
{
	struct wsc *w, *w2;
	char	  **got = NULL;
	size_t	    n = 0;
	int64_t	    t0, t1;
	double	    c1, at;
	cJSON	   *log, *reqs, *closes;

	T_EQ_INT(reset(), 200);
	t0 = wsc_now_ms();
	T_ASSERT((w = conn()) != NULL);
	T_ASSERT((w2 = conn()) != NULL);
	T_CHECK(nostr_req(w, "s1", "{\"kinds\":[1],\"limit\":5}", TMO, &got, &n,
		    NULL) == 0);
	nostr_events_free(got);
	T_CHECK(nostr_req(w, "s2",
		    "[{\"kinds\":[30617]},{\"#a\":[\"x\"],"
		    "\"since\":10}]",
		    TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	T_CHECK(nostr_req(w, "s3", "{}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	T_CHECK(nostr_close_sub(w, "s2") == 0);
	T_CHECK(nostr_req(w, "s4", "{}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	T_CHECK(nostr_req(w2, "other", "{}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	t1 = wsc_now_ms();

	log = peerctl_log(rp);
	T_ASSERT(log != NULL);
	reqs = cJSON_GetObjectItem(log, "reqs");
	closes = cJSON_GetObjectItem(log, "closes");
	T_CHECK(cJSON_GetArraySize(reqs) == 5);
	c1 = ctl_num(cJSON_GetArrayItem(reqs, 0), "conn");
	T_CHECK(req_is(reqs, 0, c1, "s1", "[{\"kinds\":[1],\"limit\":5}]"));
	T_CHECK(req_is(reqs, 1, c1, "s2",
	    "[{\"kinds\":[30617]},{\"#a\":"
	    "[\"x\"],\"since\":10}]"));
	T_CHECK(req_is(reqs, 2, c1, "s3", "[{}]"));
	T_CHECK(req_is(reqs, 3, c1, "s4", "[{}]"));
	T_CHECK(ctl_num(cJSON_GetArrayItem(reqs, 4), "conn") != c1);
	at = ctl_num(cJSON_GetArrayItem(reqs, 0), "at_ms");
	T_CHECK(at >= (double)t0 && at <= (double)t1);
	T_CHECK(cJSON_GetArraySize(closes) == 1 &&
	    strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(closes, 0), "sub")
		       ->valuestring,
		"s2") == 0);
	T_CHECK(ctl_num(log, "max_concurrent_subs") == 3);
	T_CHECK(ctl_num(log, "connections") == 2);
	T_CHECK(ctl_num(log, "open") == 2);
	T_CHECK(ctl_num(log, "bytes_in") > 0 && ctl_num(log, "bytes_out") > 0);
	cJSON_Delete(log);
	wsc_close(w);
	wsc_close(w2);
}

/* GET /stats: the subscriptions open now, the live ones (every filter
 * limit 0) and when the newest of those opened, and the counts. */
static void
test_stats_counts_open_and_live_subscriptions(void)
{
	struct wsc *w;
	char	  **got = NULL, *body = NULL;
	size_t	    n = 0;
	int	    status = 0;
	int64_t	    t0, t1;
	cJSON	   *st = NULL;

	T_EQ_INT(reset(), 200);
	T_ASSERT((w = conn()) != NULL);
	t0 = wsc_now_ms();
	T_CHECK(
	    nostr_req(w, "hist", "{\"kinds\":[1]}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	got = NULL;
	T_CHECK(nostr_req(w, "live",
		    "[{\"kinds\":[1],\"limit\":0},{\"#a\":[\"x\"],"
		    "\"limit\":0}]",
		    TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	got = NULL;
	t1 = wsc_now_ms();
	T_CHECK(nostr_close_sub(w, "hist") == 0);
	/* Answered after the CLOSE before it was handled. */
	T_CHECK(nostr_req(w, "mixed", "[{\"limit\":0},{\"kinds\":[1]}]", TMO,
		    &got, &n, NULL) == 0);
	nostr_events_free(got);
	T_CHECK(http_get(relayproc_host(rp), relayproc_port(rp), "/stats", NULL,
		    TMO, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	T_ASSERT(body != NULL && (st = cJSON_Parse(body)) != NULL);
	T_CHECK(ctl_num(st, "connections") == 1 && ctl_num(st, "open") == 1);
	T_CHECK(ctl_num(st, "subs") == 2);
	T_CHECK(ctl_num(st, "live") == 1);
	T_CHECK(ctl_num(st, "live_last_ms") >= (double)t0 &&
	    ctl_num(st, "live_last_ms") <= (double)t1);
	T_CHECK(ctl_num(st, "reqs") == 3 && ctl_num(st, "negs") == 0);
	T_CHECK(ctl_num(st, "last_ms") >= ctl_num(st, "live_last_ms"));
	cJSON_Delete(st);
	free(body);
	wsc_close(w);
}

static void
test_oversized_client_message_gets_notice(void)
{
	struct wsc *w;
	char	   *big, **got = NULL;
	size_t	    len = 4 * 1024 * 1024 + 100, n = 0;

	T_EQ_INT(reset(), 200);
	T_ASSERT((w = conn()) != NULL);
	T_ASSERT((big = malloc(len)) != NULL);
	memset(big, ' ', len);
	memcpy(big, "[\"REQ\",\"big\",{}", 15);
	big[len - 1] = ']';
	T_CHECK(wsc_send_text(w, big, len) == 0);
	free(big);
	T_CHECK(nostr_msg_has(w, "NOTICE", "too large", TMO));
	T_CHECK(nostr_req(w, "after", "{}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	wsc_close(w);
}

static void
test_reset_clears_store_log_and_config(void)
{
	struct wsc *w;
	char	  **got = NULL, *resp = NULL;
	size_t	    n = 0;
	cJSON	   *log;

	T_EQ_INT(seed_n(3), 0);
	T_EQ_INT(config("{\"max_results\":1,\"drop_eose\":true}"), 200);
	T_ASSERT((w = conn()) != NULL);
	T_CHECK(nostr_req(w, "x", "{}", 300, &got, &n, NULL) == -1 && n == 1);
	nostr_events_free(got);
	got = NULL;
	T_EQ_INT(post("/reset", "", &resp), 200);
	T_CHECK(resp != NULL && strstr(resp, "\"drop_eose\":false") != NULL &&
	    strstr(resp, "\"max_results\":0") != NULL);
	free(resp);
	log = peerctl_log(rp);
	T_CHECK(log != NULL && ctl_num(log, "stored") == 0 &&
	    cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs")) == 0 &&
	    ctl_num(log, "connections") == 0 && ctl_num(log, "open") == 1 &&
	    ctl_num(log, "max_concurrent_subs") == 0);
	cJSON_Delete(log);
	T_CHECK(nostr_req(w, "y", "{}", TMO, &got, &n, NULL) == 0 && n == 0);
	nostr_events_free(got);
	wsc_close(w);
}

static void
test_seeding_reports_bad_lines(void)
{
	char	     *resp = NULL;
	struct event *ev = signed_ev(9, 7000, 1, NULL, "ok");
	struct buf    b = BUF_INIT;

	T_EQ_INT(reset(), 200);
	T_ASSERT(ev != NULL);
	buf_add(&b, ev->json, ev->json_len);
	buf_adds(&b, "\n\n{\"not\":\"an event\"}\n");
	T_EQ_INT(post("/events", b.b_data, &resp), 400);
	T_CHECK(resp != NULL && strstr(resp, "\"stored\":1") != NULL &&
	    strstr(resp, "line 3:") != NULL);
	free(resp);
	buf_free(&b);
	event_destroy(ev);
	T_EQ_INT(reset(), 200);
}

/* Clients that vanish mid-answer or before a delayed EOSE harm nothing. */
static void
test_clients_dropping_mid_answer_leave_peer_serving(void)
{
	struct wsc *w;
	char	  **got = NULL;
	size_t	    n = 0;
	cJSON	   *log;
	int64_t	    deadline;
	int	    open = -1;

	T_EQ_INT(reset(), 200);
	T_EQ_INT(seed_n(3), 0);
	T_EQ_INT(config("{\"flood\":5000,\"oversized_bytes\":8000000,"
			"\"eose_delay_ms\":300}"),
	    200);
	T_ASSERT((w = conn()) != NULL);
	T_CHECK(wsc_send_text(w, "[\"REQ\",\"d\",{}]", 14) == 0);
	wsc_drop(w);
	T_EQ_INT(config("{\"flood\":0,\"oversized_bytes\":0}"), 200);
	T_ASSERT((w = conn()) != NULL);
	T_CHECK(wsc_send_text(w, "[\"REQ\",\"e\",{}]", 14) == 0);
	wsc_drop(w);
	usleep(500 * 1000);
	T_EQ_INT(reset(), 200);
	T_ASSERT((w = conn()) != NULL);
	T_CHECK(nostr_req(w, "alive", "{}", TMO, &got, &n, NULL) == 0);
	nostr_events_free(got);
	deadline = wsc_now_ms() + TMO;
	while (wsc_now_ms() < deadline) {
		log = peerctl_log(rp);
		open = log ? (int)ctl_num(log, "open") : -1;
		cJSON_Delete(log);
		if (open == 1)
			break;
		usleep(20 * 1000);
	}
	T_CHECK(open == 1);
	wsc_close(w);
}

static void
test_sigterm_exits_zero_and_quietly(void)
{
	FILE *f;
	long  size = -1;

	T_EQ_INT(relayproc_stop(rp), 0);
	if ((f = fopen(relayproc_log_path(rp), "r")) != NULL) {
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
	}
	/* Without -v the peer says nothing. */
	T_CHECK(size == 0);
}

static const struct t_case cases[] = {
	T_CASE(test_nip11_document),
	T_CASE(test_config_refuses_unknown_keys_and_bad_types),
	T_CASE(test_seeded_events_newest_first_with_limit_since_until),
	T_CASE(test_published_events_stored_unchecked_unless_verify),
	T_CASE(test_live_delivery_of_published_and_seeded_events),
	T_CASE(test_closed_rate_limited),
	T_CASE(test_notice_rate_limit_then_served),
	T_CASE(test_ok_rate_limited_does_not_store),
	T_CASE(test_max_results_caps_each_req),
	T_CASE(test_drop_eose_leaves_req_waiting),
	T_CASE(test_eose_delay),
	T_CASE(test_close_after_events_drops_abruptly),
	T_CASE(test_garbage_text_and_binary_frames),
	T_CASE(test_forge_flips_a_signature_byte),
	T_CASE(test_oversized_notice_frame_arrives),
	T_CASE(test_flood_sends_unsolicited_events),
	T_CASE(test_auth_challenge_then_req_works),
	T_CASE(test_refuse_answers_upgrades_503),
	T_CASE(test_hang_never_completes_handshake),
	T_CASE(test_log_records_reqs_closes_and_concurrency),
	T_CASE(test_stats_counts_open_and_live_subscriptions),
	T_CASE(test_oversized_client_message_gets_notice),
	T_CASE(test_reset_clears_store_log_and_config),
	T_CASE(test_seeding_reports_bad_lines),
	T_CASE(test_clients_dropping_mid_answer_leave_peer_serving),
	T_CASE(test_sigterm_exits_zero_and_quietly),
};

T_MAIN_FIXTURE(cases, &relayproc_peer_fixture, &rp, T_IGN_SIGPIPE)
