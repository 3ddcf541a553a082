/*
 * relayproto_test.c: relayd's client message layer (relayd/relay_proto.c,
 * compiled in): each message type's shape, REQ's id, filter count, room
 * for a subscription and filters, CLOSE's id, and an EVENT's or AUTH's
 * event checks at a clock the test sets, each accepted or refused with
 * the exact answer text relayd sends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../relayd/relay_proto.c"
#include "config.h"
#include "t.h"

#define NOW		     1790000000
/* A bound on events larger than every event the cases build. */
#define RELAY_TEST_MAX_EVENT (1024 * 1024)
#define CHALLENGE	     "0123456789abcdef0123456789abcdef"
#define SUBID64 \
	"0123456789012345678901234567890123456789" \
	"012345678901234567890123"

static const uint8_t sk[SECKEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
	31, 32 };

static struct json_doc	 *doc;
static const struct json *msg;
static char		  ans[RELAY_PROTO_ANSWER];

/* relay_proto_message() on s, keeping the document until the next. */
static enum relay_msg_type
parse(const char *s)
{
	json_free(doc);
	doc = NULL;
	return relay_proto_message(s, strlen(s), &doc, &msg, ans, sizeof(ans));
}

/* parse(s) is of type t, answered by want ("": none). */
#define IS(s, t, want) \
	do { \
		T_EQ_INT(parse(s), t); \
		T_EQ_STR(ans, want); \
	} while (0)

#define NOT_ARRAY \
	"invalid: a message must be a JSON array starting " \
	"with a string"

static void
message_types(void)
{
	IS("[\"EVENT\",{}]", RELAY_MSG_EVENT, "");
	IS("[\"REQ\",\"a\",{}]", RELAY_MSG_REQ, "");
	IS("[\"CLOSE\",\"a\"]", RELAY_MSG_CLOSE, "");
	IS("[\"AUTH\",{}]", RELAY_MSG_AUTH, "");
	IS("[\"NEG-OPEN\",\"a\",{},\"61\"]", RELAY_MSG_NEG, "");
	IS("[\"NEG-WHAT\"]", RELAY_MSG_NEG, "");
}

static void
message_refusals(void)
{
	T_EQ_INT(parse("[\"EVENT\","), RELAY_MSG_BAD);
	T_CHECK(doc == NULL && msg == NULL);
	T_CHECK(
	    strncmp(ans, "invalid: bad JSON: ", 19) == 0 && strlen(ans) > 19);
	IS("{\"EVENT\":1}", RELAY_MSG_BAD, NOT_ARRAY);
	IS("[1,\"EVENT\"]", RELAY_MSG_BAD, NOT_ARRAY);
	IS("[]", RELAY_MSG_BAD, NOT_ARRAY);
	IS("[\"EVENT\",{},{}]", RELAY_MSG_EVENT,
	    "invalid: EVENT takes exactly one event");
	IS("[\"EVENT\"]", RELAY_MSG_EVENT,
	    "invalid: EVENT takes exactly one event");
	IS("[\"AUTH\",\"x\"]", RELAY_MSG_AUTH,
	    "invalid: AUTH takes exactly one event");
	IS("[\"AUTH\"]", RELAY_MSG_AUTH,
	    "invalid: AUTH takes exactly one event");
	/* NIP-45 COUNT is shaped as a REQ; its refusals name it. */
	IS("[\"COUNT\",\"a\",{}]", RELAY_MSG_COUNT, "");
	IS("[\"COUNTS\",\"a\",{}]", RELAY_MSG_OTHER,
	    "error: unknown message type \"COUNTS\"");
	/* A verb with a NUL is not "EVENT". */
	IS("[\"EVENT\\u0000\",{}]", RELAY_MSG_OTHER,
	    "error: unknown message type \"EVENT\"");
	IS("[\"event\",{}]", RELAY_MSG_OTHER,
	    "error: unknown message type \"event\"");
	IS("[\"" SUBID64 "\"]", RELAY_MSG_OTHER,
	    "error: unknown message "
	    "type \"0123456789012345678901234567890123456789\"");
}

static int known_calls;

static int
known_a(const char *id, void *arg)
{
	known_calls++;
	T_CHECK(arg == &known_calls);
	return strcmp(id, "a") == 0;
}

static enum relay_answer
req(const char *s, size_t nsubs, struct relay_req *rq)
{
	if (parse(s) != RELAY_MSG_REQ)
		return (enum relay_answer) - 1;
	return relay_proto_req(msg, nsubs, known_a, &known_calls, rq, ans,
	    sizeof(ans));
}

static void
req_accepts(void)
{
	struct relay_req rq;

	T_EQ_INT(req("[\"REQ\",\"s1\",{\"kinds\":[1]},{\"limit\":3}]", 0, &rq),
	    RELAY_ANS_NONE);
	T_EQ_STR(rq.rq_id, "s1");
	T_EQ_INT(rq.rq_nfilters, 2);
	T_CHECK(rq.rq_filters[1].f_has_limit);
	relay_req_free(&rq);
	/* 64 characters, 50 filters. */
	{
		char s[2048];
		int  i, n;

		n = snprintf(s, sizeof(s), "[\"REQ\",\"%s\"", SUBID64);
		for (i = 0; i < RELAY_MAX_FILTERS; i++)
			n += snprintf(s + n, sizeof(s) - (size_t)n, ",{}");
		snprintf(s + n, sizeof(s) - (size_t)n, "]");
		T_EQ_INT(req(s, 0, &rq), RELAY_ANS_NONE);
		T_EQ_INT(rq.rq_nfilters, RELAY_MAX_FILTERS);
		T_EQ_STR(rq.rq_id, SUBID64);
		relay_req_free(&rq);
		n = snprintf(s, sizeof(s), "[\"REQ\",\"b\"");
		for (i = 0; i <= RELAY_MAX_FILTERS; i++)
			n += snprintf(s + n, sizeof(s) - (size_t)n, ",{}");
		snprintf(s + n, sizeof(s) - (size_t)n, "]");
		T_EQ_INT(req(s, 0, &rq), RELAY_ANS_CLOSED);
		T_EQ_STR(ans, "invalid: too many filters (at most 50 per REQ)");
		T_EQ_STR(rq.rq_closed_id, "b");
	}
	/* A full connection still replaces one of its subscriptions. */
	known_calls = 0;
	T_EQ_INT(req("[\"REQ\",\"a\",{}]", RELAY_MAX_SUBS, &rq),
	    RELAY_ANS_NONE);
	T_EQ_INT(known_calls, 1);
	relay_req_free(&rq);
	T_EQ_INT(req("[\"REQ\",\"b\",{}]", RELAY_MAX_SUBS - 1, &rq),
	    RELAY_ANS_NONE);
	relay_req_free(&rq);
}

/* A COUNT's refusals are a REQ's, named COUNT; it holds no slot. */
static void
count_refusals(void)
{
	struct relay_req rq;

	T_EQ_INT(parse("[\"COUNT\",\"c\"]"), RELAY_MSG_COUNT);
	T_EQ_INT(relay_proto_req(msg, 0, known_a, &known_calls, &rq, ans,
		     sizeof(ans)),
	    RELAY_ANS_CLOSED);
	T_EQ_STR(ans, "invalid: COUNT needs at least one filter");
	T_EQ_STR(rq.rq_closed_id, "c");
	T_EQ_INT(parse("[\"COUNT\",5,{}]"), RELAY_MSG_COUNT);
	T_EQ_INT(relay_proto_req(msg, 0, known_a, &known_calls, &rq, ans,
		     sizeof(ans)),
	    RELAY_ANS_NOTICE);
	T_EQ_STR(ans, "invalid: COUNT needs a subscription id string");
	T_EQ_INT(parse("[\"COUNT\",\"c\",{\"kinds\":[1]}]"), RELAY_MSG_COUNT);
	T_EQ_INT(relay_proto_req(msg, 0, known_a, &known_calls, &rq, ans,
		     sizeof(ans)),
	    RELAY_ANS_NONE);
	T_EQ_INT(rq.rq_nfilters, 1);
	relay_req_free(&rq);
}

static void
req_refusals(void)
{
	struct relay_req rq;

	T_EQ_INT(req("[\"REQ\"]", 0, &rq), RELAY_ANS_NOTICE);
	T_EQ_STR(ans, "invalid: REQ needs a subscription id string");
	T_EQ_INT(req("[\"REQ\",\"\",{}]", 0, &rq), RELAY_ANS_NOTICE);
	T_EQ_STR(ans, "invalid: REQ needs a subscription id string");
	T_EQ_INT(req("[\"REQ\",7,{}]", 0, &rq), RELAY_ANS_NOTICE);
	T_EQ_INT(req("[\"REQ\",\"" SUBID64 "x\",{}]", 0, &rq),
	    RELAY_ANS_CLOSED);
	T_EQ_STR(ans, "invalid: subscription id longer than 64 characters");
	T_EQ_STR(rq.rq_closed_id, SUBID64 "x");
	T_EQ_INT(req("[\"REQ\",\"a\\u0000b\",{}]", 0, &rq), RELAY_ANS_CLOSED);
	T_EQ_STR(ans, "invalid: subscription id longer than 64 characters");
	T_EQ_STR(rq.rq_closed_id, "a");
	T_EQ_INT(req("[\"REQ\",\"s\"]", 0, &rq), RELAY_ANS_CLOSED);
	T_EQ_STR(ans, "invalid: REQ needs at least one filter");
	T_EQ_STR(rq.rq_closed_id, "s");
	T_EQ_INT(req("[\"REQ\",\"b\",{}]", RELAY_MAX_SUBS, &rq),
	    RELAY_ANS_CLOSED);
	T_EQ_STR(ans,
	    "blocked: too many subscriptions (at most 200 per "
	    "connection)");
	T_EQ_INT(req("[\"REQ\",\"s\",{},[]]", 0, &rq), RELAY_ANS_CLOSED);
	T_EQ_STR(ans, "invalid: a filter must be a JSON object");
	T_CHECK(rq.rq_filters == NULL && rq.rq_nfilters == 0);
	T_EQ_INT(req("[\"REQ\",\"s\",{\"kinds\":\"x\"}]", 0, &rq),
	    RELAY_ANS_CLOSED);
	T_CHECK(strncmp(ans, "invalid: ", 9) == 0);
	T_CHECK(rq.rq_filters == NULL && rq.rq_nfilters == 0);
}

/* relay_proto_close() on the CLOSE s. */
static enum relay_answer
close_id(const char *s, const char **idp)
{
	if (parse(s) != RELAY_MSG_CLOSE)
		return (enum relay_answer) - 1;
	return relay_proto_close(msg, idp, ans, sizeof(ans));
}

static void
close_msgs(void)
{
	const char *id;

	T_EQ_INT(close_id("[\"CLOSE\",\"s1\"]", &id), RELAY_ANS_NONE);
	T_EQ_STR(id, "s1");
	T_EQ_STR(ans, "");
	/* No REQ opened an id with a NUL: nothing to drop. */
	T_EQ_INT(close_id("[\"CLOSE\",\"s\\u0000x\"]", &id), RELAY_ANS_NONE);
	T_CHECK(id == NULL);
	T_EQ_INT(close_id("[\"CLOSE\"]", &id), RELAY_ANS_NOTICE);
	T_EQ_STR(ans, "invalid: CLOSE needs a subscription id string");
	T_EQ_INT(close_id("[\"CLOSE\",{}]", &id), RELAY_ANS_NOTICE);
	T_EQ_STR(ans, "invalid: CLOSE needs a subscription id string");
}

/*
 * relay_proto_event() on the JSON of a signed event, after replacing
 * from (if set) by to in it; returns the event or NULL (okid, m set).
 */
static struct event *
check(const char *json, const char *from, const char *to, const char *challenge,
    const struct policy *pl, char okid[EVENT_ID_HEX_LEN + 1], char *m,
    size_t mlen)
{
	char	    s[8192];
	const char *p;
	size_t	    off;

	if (from && (p = strstr(json, from)) != NULL) {
		off = (size_t)(p - json);
		snprintf(s, sizeof(s), "%.*s%s%s", (int)off, json, to,
		    p + strlen(from));
	} else
		snprintf(s, sizeof(s), "%s", json);
	json_free(doc);
	if ((msg = json_parse(s, strlen(s), &doc, m, mlen)) == NULL)
		return NULL;
	return relay_proto_event(msg, challenge, pl, NOW, RELAY_TEST_MAX_EVENT,
	    okid, m, mlen);
}

static void
event_checks(void)
{
	struct event *ev, *got;
	char	      okid[EVENT_ID_HEX_LEN + 1], m[512], tags[40000];
	size_t	      i, n;

	T_ASSERT((ev = event_new_signed(sk, NOW, 1, "[[\"t\",\"x\"]]",
		      "hello")) != NULL);
	T_ASSERT((got = check(ev->json, NULL, NULL, NULL, NULL, okid, m,
		      sizeof(m))) != NULL);
	T_EQ_STR(okid, ev->id_hex);
	T_EQ_STR(got->id_hex, ev->id_hex);
	event_destroy(got);
	/* The content changed: the id no longer matches. */
	T_CHECK(check(ev->json, "hello", "hellp", NULL, NULL, okid, m,
		    sizeof(m)) == NULL);
	T_EQ_STR(m, "invalid: event id does not match its content");
	T_EQ_STR(okid, ev->id_hex);
	/* Not an event: the OK names the id as sent. */
	T_CHECK(check(ev->json, "\"kind\":1", "\"kind\":\"1\"", NULL, NULL,
		    okid, m, sizeof(m)) == NULL);
	T_CHECK(strncmp(m, "invalid: ", 9) == 0);
	T_EQ_STR(okid, ev->id_hex);
	T_CHECK(check("{\"id\":\"short\"}", NULL, NULL, NULL, NULL, okid, m,
		    sizeof(m)) == NULL);
	T_EQ_STR(okid, "");
	event_destroy(ev);

	/* created_at against the clock the caller passes. */
	T_ASSERT((ev = event_new_signed(sk, NOW + RELAY_CREATED_AT_AHEAD, 1,
		      NULL, "")) != NULL);
	T_ASSERT((got = check(ev->json, NULL, NULL, NULL, NULL, okid, m,
		      sizeof(m))) != NULL);
	event_destroy(got);
	event_destroy(ev);
	T_ASSERT((ev = event_new_signed(sk, NOW + RELAY_CREATED_AT_AHEAD + 1, 1,
		      NULL, "")) != NULL);
	T_CHECK(check(ev->json, NULL, NULL, NULL, NULL, okid, m, sizeof(m)) ==
	    NULL);
	T_EQ_STR(m,
	    "invalid: created_at is more than 900 seconds in the "
	    "future");
	T_CHECK(relay_proto_check_event(ev, NOW + 1, RELAY_TEST_MAX_EVENT, m,
		    sizeof(m)) == 0);
	event_destroy(ev);

	/* RELAY_MAX_TAGS tags pass, one more does not. */
	for (n = 0, i = 0; i <= RELAY_MAX_TAGS; i++)
		n += (size_t)snprintf(tags + n, sizeof(tags) - n, "%s[\"t\"]",
		    i ? "," : "[");
	snprintf(tags + n, sizeof(tags) - n, "]");
	T_ASSERT((ev = event_new_signed(sk, NOW, 1, tags, "")) != NULL);
	T_CHECK(relay_proto_check_event(ev, NOW, RELAY_TEST_MAX_EVENT, m,
		    sizeof(m)) == -1);
	T_EQ_STR(m, "invalid: too many tags (at most 2000)");
	event_destroy(ev);
	tags[n - 6] = ']';
	tags[n - 5] = '\0';
	T_ASSERT((ev = event_new_signed(sk, NOW, 1, tags, "")) != NULL);
	T_EQ_INT(ev->ntags, RELAY_MAX_TAGS);
	T_CHECK(relay_proto_check_event(ev, NOW, RELAY_TEST_MAX_EVENT, m,
		    sizeof(m)) == 0);
	event_destroy(ev);
}

static void
event_content_length(void)
{
	struct event *ev;
	char	     *c, m[512];
	size_t	      i;

	/* Characters, not bytes: "é" is two bytes, one character. */
	T_ASSERT((c = malloc(2 * RELAY_MAX_CONTENT + 2)) != NULL);
	for (i = 0; i < RELAY_MAX_CONTENT; i++)
		memcpy(c + 2 * i, "\xc3\xa9", 2);
	c[2 * i] = '\0';
	T_ASSERT((ev = event_new_signed(sk, NOW, 1, NULL, c)) != NULL);
	T_CHECK(relay_proto_check_event(ev, NOW, RELAY_TEST_MAX_EVENT, m,
		    sizeof(m)) == 0);
	event_destroy(ev);
	memcpy(c + 2 * i, "x", 2);
	T_ASSERT((ev = event_new_signed(sk, NOW, 1, NULL, c)) != NULL);
	T_CHECK(relay_proto_check_event(ev, NOW, RELAY_TEST_MAX_EVENT, m,
		    sizeof(m)) == -1);
	T_EQ_STR(m, "invalid: content too long (at most 262144 characters)");
	event_destroy(ev);
	free(c);
}

/*
 * The whole event counts toward max_size, tags included: a small content
 * with one large tag value is refused, with the sizes in the answer.
 */
static void
event_size(void)
{
	struct event *ev;
	char	     *tags, m[512], want[128];
	size_t	      n = 4000;

	T_ASSERT((tags = malloc(n + 16)) != NULL);
	memcpy(tags, "[[\"t\",\"", 7);
	memset(tags + 7, 'x', n);
	memcpy(tags + 7 + n, "\"]]", 4);
	T_ASSERT((ev = event_new_signed(sk, NOW, 1, tags, "hi")) != NULL);
	T_CHECK(ev->json_len > n);
	T_CHECK(
	    relay_proto_check_event(ev, NOW, ev->json_len, m, sizeof(m)) == 0);
	T_CHECK(relay_proto_check_event(ev, NOW, ev->json_len - 1, m,
		    sizeof(m)) == -1);
	snprintf(want, sizeof(want),
	    "invalid: event too large (%zu bytes, max %zu)", ev->json_len,
	    ev->json_len - 1);
	T_EQ_STR(m, want);
	event_destroy(ev);
	free(tags);
}

static void
auth_events(void)
{
	static struct config cfg = { .domain = "relay.example" };
	struct policy	     pl;
	struct event	    *ev, *got;
	char		     okid[EVENT_ID_HEX_LEN + 1], m[512];

	T_ASSERT(policy_init(&pl, &cfg, m, sizeof(m)) == 0);
	T_ASSERT(
	    (ev = event_new_signed(sk, NOW, 22242,
		 "[[\"relay\","
		 "\"wss://relay.example/\"],[\"challenge\",\"" CHALLENGE "\"]]",
		 "")) != NULL);
	T_ASSERT((got = check(ev->json, NULL, NULL, CHALLENGE, &pl, okid, m,
		      sizeof(m))) != NULL);
	T_EQ_STR(okid, ev->id_hex);
	event_destroy(got);
	/* Another connection's challenge. */
	T_CHECK(check(ev->json, NULL, NULL, "ffff", &pl, okid, m, sizeof(m)) ==
	    NULL);
	T_CHECK(strncmp(m, "invalid: ", 9) == 0);
	T_EQ_STR(okid, ev->id_hex);
	/* An AUTH event is not an EVENT's: the EVENT checks pass it. */
	T_ASSERT((got = check(ev->json, NULL, NULL, NULL, &pl, okid, m,
		      sizeof(m))) != NULL);
	event_destroy(got);
	event_destroy(ev);
	/* A kind 1 event is no AUTH. */
	T_ASSERT(
	    (ev = event_new_signed(sk, NOW, 1,
		 "[[\"relay\","
		 "\"wss://relay.example/\"],[\"challenge\",\"" CHALLENGE "\"]]",
		 "")) != NULL);
	T_CHECK(check(ev->json, NULL, NULL, CHALLENGE, &pl, okid, m,
		    sizeof(m)) == NULL);
	T_CHECK(strncmp(m, "invalid: ", 9) == 0);
	event_destroy(ev);
}

static void
relayproto_cleanup(void)
{
	json_free(doc);
}

static const struct t_case cases[] = {
	T_CASE(message_types),
	T_CASE(message_refusals),
	T_CASE(req_accepts),
	T_CASE(req_refusals),
	T_CASE(count_refusals),
	T_CASE(close_msgs),
	T_CASE(event_checks),
	T_CASE(event_content_length),
	T_CASE(event_size),
	T_CASE(auth_events),
};

T_MAIN_WITH(cases, NULL, relayproto_cleanup, 0)
