/*
 * auth_test.c: NIP-42 authentication and NIP-70 protected events on
 * relayd, over real websockets on loopback: the challenge sent on
 * connect, AUTH answered with OK (good, wrong kind, challenge, relay,
 * time, signature), several keys per connection, protected events
 * accepted only from their authenticated author and still subject to
 * the write policy, and NIP-11 listing 42 and 70.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "buf.h"
#include "event.h"
#include "json.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define TMO 5000

static struct relayproc *rp;

static void
key(int n, uint8_t sk[SECKEY_LEN])
{
	memset(sk, 0, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	sk[0] = 0x42;
}

static struct event *
signed_by(int n, int64_t created_at, uint32_t kind, const char *tags)
{
	uint8_t sk[SECKEY_LEN];

	key(n, sk);
	return event_new_signed(sk, created_at, kind, tags, "");
}

/*
 * Opens a websocket and reads the challenge of its ["AUTH", <challenge>]
 * into ch (at most chlen - 1 characters).  NULL if none came.
 */
static struct wsc *
conn(char *ch, size_t chlen)
{
	struct wsc	*ws;
	struct json_doc *doc = NULL;
	struct json	*m;
	char		*s, err[128];

	if ((ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/",
		 TMO)) == NULL)
		return NULL;
	if ((s = nostr_wait_msg(ws, "AUTH", TMO)) == NULL) {
		wsc_close(ws);
		return NULL;
	}
	m = json_parse(s, strlen(s), &doc, err, sizeof(err));
	free(s);
	if (m == NULL || m->n != 2 || json_at(m, 1)->type != JSON_STRING) {
		json_free(doc);
		wsc_close(ws);
		return NULL;
	}
	snprintf(ch, chlen, "%s", json_at(m, 1)->s);
	json_free(doc);
	return ws;
}

/*
 * A kind 22242 event by key n with the given relay (no relay tag when
 * NULL) and challenge.
 */
static struct event *
auth_event(int n, int64_t at, uint32_t kind, const char *relay,
    const char *challenge)
{
	char tags[512];

	if (relay == NULL)
		snprintf(tags, sizeof(tags), "[[\"challenge\",\"%s\"]]",
		    challenge);
	else
		snprintf(tags, sizeof(tags),
		    "[[\"relay\",\"%s\"],"
		    "[\"challenge\",\"%s\"]]",
		    relay, challenge);
	return signed_by(n, at, kind, tags);
}

/*
 * Sends ["AUTH", json] and waits for the OK naming id.  Returns 1 or 0
 * (the OK's message in msg), -1 if none came.
 */
static int
send_auth_json(struct wsc *ws, const char *json, const char *id, char *msg,
    size_t msglen)
{
	char *m = NULL;
	int   ok = -1;

	if (nostr_auth_json(ws, json, id, TMO, &ok, &m) == -1)
		ok = -1;
	snprintf(msg, msglen, "%s", m ? m : "");
	free(m);
	return ok;
}

static int
send_auth(struct wsc *ws, const struct event *ev, char *msg, size_t msglen)
{
	if (ev == NULL)
		return -1;
	return send_auth_json(ws, ev->json, ev->id_hex, msg, msglen);
}

static int
stored(struct wsc *ws, const char *id)
{
	size_t n;

	return nostr_count_id(ws, "has", id, TMO, &n) == 0 ? (int)n : -1;
}

/* A protected kind 10317 (a user grasp list: the policy takes it). */
static struct event *
protected_list(int n)
{
	return signed_by(n, time(NULL), KIND_USER_GRASP_LIST,
	    "[[\"-\"],[\"g\",\"wss://grasp.example\"]]");
}

static void
test_challenge_sent_on_connect(void)
{
	char	    a[128], b[128];
	struct wsc *w1 = conn(a, sizeof(a)), *w2 = conn(b, sizeof(b));
	size_t	    i;

	T_ASSERT(w1 != NULL && w2 != NULL);
	T_EQ_INT(strlen(a), 32);
	for (i = 0; a[i]; i++)
		T_CHECK(strchr("0123456789abcdef", a[i]) != NULL);
	T_CHECK(strcmp(a, b) != 0);
	wsc_close(w1);
	wsc_close(w2);
}

static void
test_good_auth_then_protected_event_accepted(void)
{
	char	      ch[128], msg[512];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *au, *ev;

	T_ASSERT(ws != NULL);
	au = auth_event(1, time(NULL), AUTH_KIND, relayproc_url(rp), ch);
	T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	ev = protected_list(1);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(stored(ws, ev->id_hex), 1);
	/* NIP-42: the AUTH event itself is never stored or served. */
	T_EQ_INT(stored(ws, au->id_hex), 0);
	event_destroy(au);
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_protected_event_without_auth_refused(void)
{
	char	      ch[128], msg[512];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *ev;

	T_ASSERT(ws != NULL);
	ev = protected_list(2);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "auth-required: ", 15) == 0);
	T_EQ_INT(stored(ws, ev->id_hex), 0);
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_protected_event_of_another_key_restricted(void)
{
	char	      ch[128], msg[512];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *au, *ev;

	T_ASSERT(ws != NULL);
	au = auth_event(3, time(NULL), AUTH_KIND, relayproc_url(rp), ch);
	T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 1);
	ev = protected_list(4);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "restricted: ", 12) == 0);
	event_destroy(au);
	/* A second key on the same connection: now its author is in. */
	au = auth_event(4, time(NULL), AUTH_KIND, relayproc_url(rp), ch);
	T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 1);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	event_destroy(ev);
	/* ... and the first still counts. */
	ev = protected_list(3);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	event_destroy(ev);
	event_destroy(au);
	wsc_close(ws);
}

static void
test_auth_is_per_connection(void)
{
	char	      c1[128], c2[128], msg[512];
	struct wsc   *w1 = conn(c1, sizeof(c1)), *w2 = conn(c2, sizeof(c2));
	struct event *au, *ev;

	T_ASSERT(w1 != NULL && w2 != NULL);
	/* The challenge of another connection does not do. */
	au = auth_event(5, time(NULL), AUTH_KIND, relayproc_url(rp), c1);
	T_EQ_INT(send_auth(w2, au, msg, sizeof(msg)), 0);
	T_EQ_INT(send_auth(w1, au, msg, sizeof(msg)), 1);
	ev = protected_list(5);
	T_EQ_INT(nostr_publish_msg(w2, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "auth-required: ", 15) == 0);
	T_EQ_INT(nostr_publish_msg(w1, ev, TMO, msg, sizeof(msg)), 1);
	event_destroy(au);
	event_destroy(ev);
	wsc_close(w1);
	wsc_close(w2);
}

static void
test_auth_then_event_in_one_write_keeps_order(void)
{
	char	      ch[128], msg[512];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *au, *ev;
	struct buf    b = BUF_INIT;

	T_ASSERT(ws != NULL);
	au = auth_event(6, time(NULL), AUTH_KIND, relayproc_url(rp), ch);
	ev = protected_list(6);
	T_ASSERT(au != NULL && ev != NULL);
	/* No wait for the AUTH's OK: the EVENT must see its result. */
	buf_printf(&b, "[\"AUTH\",%s]", au->json);
	T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	buf_free(&b);
	event_destroy(au);
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_bad_auth_events_refused(void)
{
	char	      ch[128], msg[512], other[256];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *au, *ev;
	char	     *s, *sig;
	const char   *url = relayproc_url(rp);
	int64_t	      now = time(NULL);
	/* AUTH events of key 7 that are refused, and why. */
	const struct {
		int64_t	    at;
		uint32_t    kind;
		const char *relay; /* NULL: no relay tag */
		const char *challenge;
		const char *want;
	} bad[] = {
		/* Wrong challenge. */
		{ now, AUTH_KIND, url, "not-it", "invalid: the challenge tag" },
		/* Wrong relay: another host, another port, none. */
		{ now, AUTH_KIND, "wss://relay.example/", ch,
		    "invalid: the relay tag" },
		{ now, AUTH_KIND, other, ch, "invalid: the relay tag" },
		{ now, AUTH_KIND, NULL, ch, "invalid: the relay tag" },
		/* Stale and future times, beyond NIP-42's 10 minutes. */
		{ now - AUTH_WINDOW_S - 60, AUTH_KIND, url, ch,
		    "invalid: an AUTH event's created_at" },
		{ now + AUTH_WINDOW_S + 60, AUTH_KIND, url, ch,
		    "invalid: an AUTH event's created_at" },
		/* Wrong kind. */
		{ now, 22243, url, ch,
		    "invalid: an AUTH event must be of kind" },
	};
	size_t i;

	T_ASSERT(ws != NULL);
	snprintf(other, sizeof(other), "ws://127.0.0.1:%d/",
	    relayproc_port(rp) == 1 ? 2 : relayproc_port(rp) - 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		au = auth_event(7, bad[i].at, bad[i].kind, bad[i].relay,
		    bad[i].challenge);
		T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 0);
		T_CHECK(strncmp(msg, bad[i].want, strlen(bad[i].want)) == 0);
		event_destroy(au);
	}
	/* Bad signature: a good event with one bit of sig flipped. */
	au = auth_event(7, now, AUTH_KIND, relayproc_url(rp), ch);
	T_ASSERT(au != NULL);
	s = strdup(au->json);
	sig = strstr(s, "\"sig\":\"") + 7;
	sig[0] = sig[0] == '0' ? '1' : '0';
	T_EQ_INT(send_auth_json(ws, s, au->id_hex, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "invalid: bad signature");
	free(s);
	/* Bad id: one more character in content. */
	T_ASSERT((s = malloc(strlen(au->json) + 2)) != NULL);
	memcpy(s, au->json, strlen(au->json) + 1);
	sig = strstr(s, "\"content\":\"") + 11;
	memmove(sig + 1, sig, strlen(sig) + 1);
	sig[0] = 'x';
	T_EQ_INT(send_auth_json(ws, s, au->id_hex, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "invalid: event id", 17) == 0);
	free(s);
	/* None of those authenticated key 7. */
	ev = protected_list(7);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "auth-required: ", 15) == 0);
	event_destroy(ev);
	/* The good one still works on the same connection. */
	T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 1);
	event_destroy(au);
	/* Not an event: a NOTICE, and the connection goes on. */
	T_ASSERT(wsc_send_text(ws, "[\"AUTH\",\"x\"]", 12) == 0);
	s = nostr_wait_msg(ws, "NOTICE", TMO);
	T_CHECK(s != NULL && strstr(s, "invalid: AUTH") != NULL);
	free(s);
	wsc_close(ws);
}

static void
test_protected_event_still_subject_to_write_policy(void)
{
	char	      ch[128], msg[512];
	struct wsc   *ws = conn(ch, sizeof(ch));
	struct event *au, *ev;

	T_ASSERT(ws != NULL);
	au = auth_event(8, time(NULL), AUTH_KIND, relayproc_url(rp), ch);
	T_EQ_INT(send_auth(ws, au, msg, sizeof(msg)), 1);
	/* A note about nothing hosted here: the policy refuses it. */
	ev = signed_by(8, time(NULL), 1, "[[\"-\"]]");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0);
	T_EQ_INT(stored(ws, ev->id_hex), 0);
	event_destroy(ev);
	event_destroy(au);
	wsc_close(ws);
}

static void
test_nip11_lists_42_and_70(void)
{
	struct json_doc *doc = NULL;
	struct json	*root, *nips, *n;
	int		 has42 = 0, has70 = 0;

	T_ASSERT((root = relayproc_nip11(rp, &doc)) != NULL);
	nips = json_get(root, "supported_nips");
	T_ASSERT(nips != NULL && nips->type == JSON_ARRAY);
	for (n = json_at(nips, 0); n; n = n->next) {
		has42 |= n->type == JSON_NUMBER && n->d == 42;
		has70 |= n->type == JSON_NUMBER && n->d == 70;
	}
	json_free(doc);
	T_CHECK(has42 && has70);
}

static const struct t_case cases[] = {
	T_CASE(test_challenge_sent_on_connect),
	T_CASE(test_good_auth_then_protected_event_accepted),
	T_CASE(test_protected_event_without_auth_refused),
	T_CASE(test_protected_event_of_another_key_restricted),
	T_CASE(test_auth_is_per_connection),
	T_CASE(test_auth_then_event_in_one_write_keeps_order),
	T_CASE(test_bad_auth_events_refused),
	T_CASE(test_protected_event_still_subject_to_write_policy),
	T_CASE(test_nip11_lists_42_and_70),
};

T_MAIN_FIXTURE(cases, &relayproc_relayd_fixture, &rp, 0)
