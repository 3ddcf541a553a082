/*
 * compat_test.c: relayd's answers that client libraries need (issue 38),
 * over real websockets on loopback, in C beside tests/interop/'s runs of
 * the clients themselves: NIP-45 COUNT (one filter, the union of several
 * counted once, limit ignored, its refusals, no subscription slot held),
 * NEG-OPEN with an array of filters as NDK's sync sends it (their union;
 * an empty array, a non-object and too many refused), and the NIP-42
 * challenge sent again after every "auth-required:" refusal, for a client
 * that missed the first (nostr-sdk in Node.js).
 *
 * Events are kind 10317 (user grasp lists: the policy takes them from
 * anyone, one per author), so each case uses its own users and tag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "buf.h"
#include "event.h"
#include "json.h"
#include "negentropy.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS	    0x45
#define TMO	    5000
/* relay_proto.h: the most filters of one REQ, COUNT or NEG-OPEN. */
#define MAX_FILTERS 50
/* relay_proto.h: the most subscriptions of one connection. */
#define MAX_SUBS    200

static struct relayproc *rp;

static struct wsc *
conn(void)
{
	return wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
}

/* User n's kind 10317 tagged ["t", tag], created secs_ago seconds ago. */
static struct event *
listed(int n, const char *tag, int secs_ago)
{
	char tags[256];

	snprintf(tags, sizeof(tags),
	    "[[\"t\",\"%s\"],[\"g\",\"wss://grasp.example\"]]", tag);
	return tuser_event(KEYS, n, time(NULL) - secs_ago, KIND_USER_GRASP_LIST,
	    tags, "");
}

/* Publishes evs[0..n); each must be accepted.  0 or -1. */
static int
publish(struct wsc *ws, struct event *const *evs, size_t n)
{
	char   msg[256];
	size_t i;

	for (i = 0; i < n; i++)
		if (nostr_publish_msg(ws, evs[i], TMO, msg, sizeof(msg)) != 1) {
			printf("# %s refused: %s\n", evs[i]->id_hex, msg);
			return -1;
		}
	return 0;
}

/*
 * The next message whose verb is one of types (NULL-terminated), within
 * TMO, as text; NULL if none.  Other messages are dropped.  Caller frees.
 */
static char *
next_of(struct wsc *ws, const char *const types[])
{
	int64_t		 deadline = wsc_now_ms() + TMO;
	struct json_doc *doc;
	struct json	*m;
	char		*s, err[128];
	size_t		 len, i;
	int		 hit;

	while (wsc_now_ms() < deadline) {
		if ((s = wsc_recv(ws, (int)(deadline - wsc_now_ms()), &len)) ==
		    NULL)
			return NULL;
		doc = NULL;
		m = json_parse(s, len, &doc, err, sizeof(err));
		hit = 0;
		if (m != NULL && m->type == JSON_ARRAY && m->n > 0 &&
		    json_at(m, 0)->type == JSON_STRING)
			for (i = 0; types[i] != NULL && !hit; i++)
				hit = strcmp(json_at(m, 0)->s, types[i]) == 0;
		json_free(doc);
		if (hit)
			return s;
		free(s);
	}
	return NULL;
}

/*
 * Sends text (a COUNT) and returns 1 if the next COUNT, CLOSED or NOTICE
 * is exactly want, else 0 (printing what came).
 */
static int
answers(struct wsc *ws, const char *text, const char *want)
{
	static const char *const types[] = { "COUNT", "CLOSED", "NOTICE",
		NULL };
	char			*got;
	int			 ok;

	if (wsc_send_text(ws, text, strlen(text)) == -1)
		return 0;
	got = next_of(ws, types);
	ok = got != NULL && strcmp(got, want) == 0;
	if (!ok)
		printf("# sent %s\n#  got %s\n# want %s\n", text,
		    got ? got : "(nothing)", want);
	free(got);
	return ok;
}

static void
test_count_one_filter_and_union_once(void)
{
	struct wsc   *ws = conn();
	struct event *evs[7];
	char	      q[1024], a[3][65];
	size_t	      i;

	T_ASSERT(ws != NULL);
	for (i = 0; i < 5; i++)
		evs[i] = listed(1 + (int)i, "c-one", 60 * (int)i);
	evs[5] = listed(6, "c-two", 0);
	evs[6] = listed(7, "c-two", 60);
	T_ASSERT(publish(ws, evs, 7) == 0);
	T_CHECK(answers(ws,
	    "[\"COUNT\",\"c1\",{\"kinds\":[10317],"
	    "\"#t\":[\"c-one\"]}]",
	    "[\"COUNT\",\"c1\",{\"count\":5}]"));
	/* NIP-45 counts what matches, whatever the limit. */
	T_CHECK(answers(ws,
	    "[\"COUNT\",\"c2\",{\"#t\":[\"c-one\"],"
	    "\"limit\":1}]",
	    "[\"COUNT\",\"c2\",{\"count\":5}]"));
	/* Two of the first filter's authors and one other: 5 + 1. */
	tuser_hex(KEYS, 1, a[0]);
	tuser_hex(KEYS, 2, a[1]);
	tuser_hex(KEYS, 6, a[2]);
	snprintf(q, sizeof(q),
	    "[\"COUNT\",\"c3\",{\"#t\":[\"c-one\"]},"
	    "{\"kinds\":[10317],\"authors\":[\"%s\",\"%s\",\"%s\"]}]",
	    a[0], a[1], a[2]);
	T_CHECK(answers(ws, q, "[\"COUNT\",\"c3\",{\"count\":6}]"));
	T_CHECK(answers(ws, "[\"COUNT\",\"c4\",{\"#t\":[\"c-none\"]}]",
	    "[\"COUNT\",\"c4\",{\"count\":0}]"));
	tuser_events_destroy(evs, 7);
	wsc_close(ws);
}

static void
test_count_refusals_and_no_subscription_slot(void)
{
	static const char req[] = "[\"REQ\",\"r3\",{}]";
	struct wsc	 *ws = conn();
	struct buf	  b = BUF_INIT;
	char		  id[EVENT_ID_LEN], *s, **evs;
	int		  i, rc;

	T_ASSERT(ws != NULL);
	T_CHECK(answers(ws, "[\"COUNT\",\"r1\"]",
	    "[\"CLOSED\",\"r1\",\"invalid: COUNT needs at least one "
	    "filter\"]"));
	T_CHECK(answers(ws, "[\"COUNT\",5,{}]",
	    "[\"NOTICE\",\"invalid: COUNT needs a subscription id "
	    "string\"]"));
	buf_adds(&b, "[\"COUNT\",\"r2\"");
	for (i = 0; i <= MAX_FILTERS; i++)
		buf_adds(&b, ",{}");
	buf_adds(&b, "]");
	T_CHECK(answers(ws, b.b_data,
	    "[\"CLOSED\",\"r2\",\"invalid: too many filters (at most 50 per "
	    "COUNT)\"]"));
	buf_free(&b);
	/* Every subscription slot taken: a COUNT is still answered. */
	for (i = 0; i < MAX_SUBS; i++) {
		snprintf(id, sizeof(id), "s%d", i);
		rc = nostr_req(ws, id, "{\"#t\":[\"c-none\"]}", TMO, &evs, NULL,
		    NULL);
		nostr_events_free(evs);
		T_ASSERT(rc == 0);
	}
	T_CHECK(answers(ws, "[\"COUNT\",\"r3\",{\"#t\":[\"c-none\"]}]",
	    "[\"COUNT\",\"r3\",{\"count\":0}]"));
	/* ... and leaves none behind: a REQ "r3" is refused, not taken as
	 * replacing a subscription of that id. */
	T_ASSERT(wsc_send_text(ws, req, strlen(req)) == 0);
	s = nostr_wait_msg(ws, "CLOSED", TMO);
	T_CHECK(s != NULL && strstr(s, "\"r3\"") != NULL);
	free(s);
	wsc_close(ws);
}

/*
 * Runs a NIP-77 client over items against relayd with filters, the text
 * of NEG-OPEN's third element, as subid.  Returns the client (neg_free()
 * it) after reconciliation, or NULL (printing why).
 */
static struct neg *
sync_with(struct wsc *ws, const char *subid, const char *filters,
    struct neg_item *items, size_t n)
{
	static const char *const types[] = { "NEG-MSG", "NEG-ERR", NULL };
	struct buf		 b = BUF_INIT, out = BUF_INIT;
	struct json_doc		*doc = NULL;
	struct json		*m;
	struct neg		*ng;
	char			 err[256], *s = NULL;
	int			 r, rounds = 0;

	if ((ng = neg_client_new(items, n, 0, err, sizeof(err))) == NULL ||
	    neg_client_initiate(ng, &out) == -1)
		goto fail;
	buf_printf(&b, "[\"NEG-OPEN\",\"%s\",%s,\"%.*s\"]", subid, filters,
	    (int)out.b_len, out.b_data);
	for (;;) {
		if (wsc_send_text(ws, b.b_data, b.b_len) == -1 ||
		    (s = next_of(ws, types)) == NULL ||
		    (m = json_parse(s, strlen(s), &doc, err, sizeof(err))) ==
			NULL ||
		    m->n != 3 || json_at(m, 2)->type != JSON_STRING)
			goto fail;
		if (strcmp(json_at(m, 0)->s, "NEG-ERR") == 0) {
			printf("# NEG-ERR %s\n", json_at(m, 2)->s);
			goto fail;
		}
		buf_reset(&out);
		r = neg_client_reconcile(ng, json_at(m, 2)->s,
		    json_at(m, 2)->len, &out, err, sizeof(err));
		json_free(doc);
		doc = NULL;
		free(s);
		s = NULL;
		if (r <= 0 || ++rounds > 20)
			break;
		buf_reset(&b);
		buf_printf(&b, "[\"NEG-MSG\",\"%s\",\"%.*s\"]", subid,
		    (int)out.b_len, out.b_data);
	}
	if (r != 0)
		goto fail;
	buf_reset(&b);
	buf_printf(&b, "[\"NEG-CLOSE\",\"%s\"]", subid);
	wsc_send_text(ws, b.b_data, b.b_len);
	buf_free(&b);
	buf_free(&out);
	return ng;
fail:
	printf("# sync %s failed: %s\n", subid, s ? s : err);
	json_free(doc);
	free(s);
	buf_free(&b);
	buf_free(&out);
	neg_free(ng);
	return NULL;
}

/* 1 if list holds exactly the ids of evs[0..n), in any order. */
static int
same_ids(const struct neg_idlist *list, struct event *const *evs, size_t n)
{
	size_t i, j;

	if (list->il_n != n)
		return 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < list->il_n; j++)
			if (memcmp(list->il_ids[j], evs[i]->id, EVENT_ID_LEN) ==
			    0)
				break;
		if (j == list->il_n)
			return 0;
	}
	return 1;
}

static void
test_neg_open_filter_array_is_their_union(void)
{
	struct wsc	*ws = conn();
	struct event	*relay_only[4], *client_only[2], *shared[2], *pub[6];
	struct neg_item *items;
	struct neg	*ng;
	char		 filters[1024], a[3][65];
	size_t		 i;

	T_ASSERT(ws != NULL);
	for (i = 0; i < 3; i++)
		relay_only[i] = listed(20 + (int)i, "n-tag", 60 * (int)i);
	/* Outside the tag, by an author the second filter names. */
	relay_only[3] = listed(23, "n-other", 0);
	for (i = 0; i < 2; i++) {
		client_only[i] = listed(24 + (int)i, "n-tag", 30);
		shared[i] = listed(26 + (int)i, "n-tag", 90);
	}
	memcpy(pub, relay_only, sizeof(relay_only));
	memcpy(pub + 4, shared, sizeof(shared));
	T_ASSERT(publish(ws, pub, 6) == 0);

	if ((items = calloc(4, sizeof(*items))) == NULL)
		abort();
	for (i = 0; i < 2; i++) {
		items[i].ni_ts = (uint64_t)client_only[i]->created_at;
		memcpy(items[i].ni_id, client_only[i]->id, EVENT_ID_LEN);
		items[2 + i].ni_ts = (uint64_t)shared[i]->created_at;
		memcpy(items[2 + i].ni_id, shared[i]->id, EVENT_ID_LEN);
	}
	/* The second filter also names events the first one matches. */
	tuser_hex(KEYS, 23, a[0]);
	tuser_hex(KEYS, 20, a[1]);
	tuser_hex(KEYS, 26, a[2]);
	snprintf(filters, sizeof(filters),
	    "[{\"kinds\":[10317],\"#t\":[\"n-tag\"]},"
	    "{\"kinds\":[10317],\"authors\":[\"%s\",\"%s\",\"%s\"]}]",
	    a[0], a[1], a[2]);
	ng = sync_with(ws, "n1", filters, items, 4);
	T_ASSERT(ng != NULL);
	T_CHECK(same_ids(neg_client_need(ng), relay_only, 4));
	T_CHECK(same_ids(neg_client_have(ng), client_only, 2));
	neg_free(ng);
	tuser_events_destroy(relay_only, 4);
	tuser_events_destroy(client_only, 2);
	tuser_events_destroy(shared, 2);
	wsc_close(ws);
}

static void
test_neg_open_bad_filter_arrays_refused(void)
{
	static const char *const types[] = { "NEG-MSG", "NEG-ERR", NULL };
	struct wsc		*ws = conn();
	struct buf		 b = BUF_INIT, init = BUF_INIT;
	struct neg		*ng;
	char			 err[128], *s;
	int			 i;

	T_ASSERT(ws != NULL);
	ng = neg_client_new(NULL, 0, 0, err, sizeof(err));
	T_ASSERT(ng != NULL && neg_client_initiate(ng, &init) == 0);
	for (i = 0; i < 4; i++) {
		buf_reset(&b);
		buf_printf(&b, "[\"NEG-OPEN\",\"b%d\",", i);
		if (i == 0)
			buf_adds(&b, "[]");
		else if (i == 1)
			buf_adds(&b, "[{},5]");
		else if (i == 2)
			buf_adds(&b, "[{\"kinds\":\"x\"}]");
		else {
			buf_adds(&b, "[{}");
			for (int j = 0; j < MAX_FILTERS; j++)
				buf_adds(&b, ",{}");
			buf_adds(&b, "]");
		}
		buf_printf(&b, ",\"%.*s\"]", (int)init.b_len, init.b_data);
		T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
		s = next_of(ws, types);
		T_CHECK(s != NULL && strncmp(s, "[\"NEG-ERR\",", 11) == 0 &&
		    strstr(s, "\"invalid: ") != NULL);
		if (s != NULL)
			printf("# array %d: %s\n", i, s);
		free(s);
	}
	/* The connection still syncs. */
	buf_reset(&b);
	buf_printf(&b, "[\"NEG-OPEN\",\"b9\",[{\"#t\":[\"b-none\"]}],\"%.*s\"]",
	    (int)init.b_len, init.b_data);
	T_ASSERT(wsc_send_text(ws, b.b_data, b.b_len) == 0);
	s = next_of(ws, types);
	T_CHECK(s != NULL && strncmp(s, "[\"NEG-MSG\",\"b9\",", 16) == 0);
	free(s);
	neg_free(ng);
	buf_free(&b);
	buf_free(&init);
	wsc_close(ws);
}

/* The challenge of ["AUTH", <challenge>] text s into ch; 0 or -1. */
static int
challenge_of(const char *s, char *ch, size_t chlen)
{
	struct json_doc *doc = NULL;
	struct json	*m;
	char		 err[128];
	int		 rc = -1;

	if (s != NULL &&
	    (m = json_parse(s, strlen(s), &doc, err, sizeof(err))) != NULL &&
	    m->n == 2 && json_at(m, 1)->type == JSON_STRING) {
		snprintf(ch, chlen, "%s", json_at(m, 1)->s);
		rc = 0;
	}
	json_free(doc);
	return rc;
}

static void
test_auth_required_sends_the_challenge_again(void)
{
	static const char *const types[] = { "OK", "AUTH", NULL };
	struct wsc		*ws = conn();
	struct event		*prot, *other, *au;
	char			 first[128], again[128], tags[512], *s;
	uint8_t			 sk[SECKEY_LEN];
	int			 i;

	T_ASSERT(ws != NULL);
	s = nostr_wait_msg(ws, "AUTH", TMO);
	T_ASSERT(challenge_of(s, first, sizeof(first)) == 0);
	free(s);
	prot = tuser_event(KEYS, 30, time(NULL), KIND_USER_GRASP_LIST,
	    "[[\"-\"],[\"g\",\"wss://grasp.example\"]]", "");
	T_ASSERT(prot != NULL);
	/* Twice: every auth-required: refusal brings the challenge, after
	 * its OK. */
	for (i = 0; i < 2; i++) {
		s = nostr_event_msg(prot);
		T_ASSERT(wsc_send_text(ws, s, strlen(s)) == 0);
		free(s);
		s = next_of(ws, types);
		T_CHECK(s != NULL && strncmp(s, "[\"OK\",", 6) == 0 &&
		    strstr(s, ",false,\"auth-required: ") != NULL);
		free(s);
		s = next_of(ws, types);
		T_ASSERT(s != NULL && strncmp(s, "[\"AUTH\",", 8) == 0);
		T_ASSERT(challenge_of(s, again, sizeof(again)) == 0);
		free(s);
		T_EQ_STR(again, first);
	}
	/* Another refusal (restricted:, a protected event of someone else
	 * once authenticated) brings no challenge: the next message is its
	 * OK, then the next event's. */
	snprintf(tags, sizeof(tags),
	    "[[\"relay\",\"%s\"],[\"challenge\",\"%s\"]]", relayproc_url(rp),
	    again);
	tuser_sk(KEYS, 31, sk);
	au = event_new_signed(sk, time(NULL), AUTH_KIND, tags, "");
	T_ASSERT(au != NULL);
	T_EQ_INT(nostr_auth_json(ws, au->json, au->id_hex, TMO, &i, NULL), 0);
	T_EQ_INT(i, 1);
	s = nostr_event_msg(prot);
	T_ASSERT(wsc_send_text(ws, s, strlen(s)) == 0);
	free(s);
	other = listed(31, "a-other", 0);
	T_ASSERT(other != NULL);
	s = nostr_event_msg(other);
	T_ASSERT(wsc_send_text(ws, s, strlen(s)) == 0);
	free(s);
	s = next_of(ws, types);
	T_CHECK(s != NULL && strstr(s, ",false,\"restricted: ") != NULL);
	free(s);
	s = next_of(ws, types);
	T_CHECK(s != NULL && strncmp(s, "[\"OK\",", 6) == 0 &&
	    strstr(s, other->id_hex) != NULL);
	free(s);
	/* The challenge answered by its author: the event is taken. */
	event_destroy(au);
	tuser_sk(KEYS, 30, sk);
	au = event_new_signed(sk, time(NULL), AUTH_KIND, tags, "");
	T_ASSERT(au != NULL);
	T_EQ_INT(nostr_auth_json(ws, au->json, au->id_hex, TMO, &i, NULL), 0);
	T_EQ_INT(i, 1);
	T_EQ_INT(nostr_publish_msg(ws, prot, TMO, NULL, 0), 1);
	event_destroy(au);
	event_destroy(prot);
	event_destroy(other);
	wsc_close(ws);
}

static const struct t_case cases[] = {
	T_CASE(test_count_one_filter_and_union_once),
	T_CASE(test_count_refusals_and_no_subscription_slot),
	T_CASE(test_neg_open_filter_array_is_their_union),
	T_CASE(test_neg_open_bad_filter_arrays_refused),
	T_CASE(test_auth_required_sends_the_challenge_again),
};

T_MAIN_FIXTURE(cases, &relayproc_relayd_fixture, &rp, 0)
