/*
 * client_msg_fuzz.c: libFuzzer harness for the NIP-01 client message path
 * of relayd: relayd/relay_proto.c itself (compiled in), as relay_ws.c
 * handle_message(), handle_req(), handle_close() and relay_ingest.c
 * client_submit() call it: the message's shape and verb, a REQ's id and
 * filters, CLOSE's id, and an EVENT's or AUTH's event with the checks
 * that need no store (NIP-42's AUTH against a fixed challenge, relay
 * address and time, FUZZ_AUTH_*; the corpus's AUTH events pass with
 * them), then the signature as the signature thread checks it.
 *
 * The input is a session: messages separated by newlines, as one
 * connection would send them.  Subscriptions are kept per session (REQ
 * replaces an id, CLOSE drops it, at most RELAY_MAX_SUBS), and each
 * accepted event is matched against them as relay_fanout() would.
 */
#include "config.h"
#include "event_check.h"
#include "../../relayd/relay_proto.c"

/* The session's NIP-42 challenge, this relay's NGIT_DOMAIN and "now". */
#define FUZZ_AUTH_CHALLENGE "0123456789abcdef0123456789abcdef"
#define FUZZ_AUTH_DOMAIN    "relay.example"
#define FUZZ_AUTH_NOW	    1790000000

/* Subscriptions of the session. */
struct session {
	struct relay_req subs[RELAY_MAX_SUBS];
	size_t		 nsubs;
	uint64_t	 replies; /* what relayd would have sent */
};

static struct relay_req *
sub_find(struct session *ss, const char *id)
{
	size_t i;

	for (i = 0; i < ss->nsubs; i++)
		if (strcmp(ss->subs[i].rq_id, id) == 0)
			return &ss->subs[i];
	return NULL;
}

static int
sub_known(const char *id, void *arg)
{
	return sub_find(arg, id) != NULL;
}

static void
sub_drop(struct session *ss, struct relay_req *s)
{
	relay_req_free(s);
	*s = ss->subs[--ss->nsubs];
	memset(&ss->subs[ss->nsubs], 0, sizeof(ss->subs[0]));
}

/*
 * An answer text: NIP-01's machine-readable prefix, then a reason
 * (filter_parse() answers an unindexed tag "unsupported: ").
 */
static void
check_answer(const char *ans)
{
	FUZZ_ASSERT(strncmp(ans, "invalid: ", 9) == 0 ||
	    strncmp(ans, "blocked: ", 9) == 0 ||
	    strncmp(ans, "unsupported: ", 13) == 0 ||
	    strncmp(ans, "error: ", 7) == 0);
}

static const struct policy *
fuzz_policy(void)
{
	static struct config cfg = { .domain = FUZZ_AUTH_DOMAIN };
	static struct policy pl;
	static int	     pl_ready;
	char		     err[256];

	if (!pl_ready) {
		FUZZ_ASSERT(policy_init(&pl, &cfg, err, sizeof(err)) == 0);
		pl_ready = 1;
	}
	return &pl;
}

/* client_submit() up to the signature thread, and the signature. */
static void
submit(struct session *ss, const struct json *evj, int auth)
{
	const struct json *idj = json_get(evj, "id");
	struct event	  *ev;
	char		   okid[EVENT_ID_HEX_LEN + 1], m[512];
	size_t		   i;

	/* The OK of a refused event echoes a 64-byte "id" string as is. */
	if (idj && idj->type == JSON_STRING && idj->len == 64)
		FUZZ_ASSERT(idj->s[64] == '\0');
	ss->replies++; /* an OK */
	ev = relay_proto_event(evj, auth ? FUZZ_AUTH_CHALLENGE : NULL,
	    fuzz_policy(), FUZZ_AUTH_NOW, 524288, okid, m, sizeof(m));
	FUZZ_ASSERT(strlen(okid) == 0 || strlen(okid) == 64);
	if (ev == NULL) {
		FUZZ_ASSERT(strncmp(m, "invalid: ", 9) == 0);
		return;
	}
	fuzz_check_event(ev);
	FUZZ_ASSERT(strcmp(okid, ev->id_hex) == 0);
	FUZZ_ASSERT(event_check_id(ev));
	if (auth)
		FUZZ_ASSERT(ev->kind == AUTH_KIND);
	if (event_check_sig(ev) && !auth) {
		(void)event_expiration(ev);
		(void)auth_protected(ev);
		for (i = 0; i < ss->nsubs; i++)
			ss->replies += filter_match_any(ss->subs[i].rq_filters,
			    ss->subs[i].rq_nfilters, ev);
	}
	event_destroy(ev);
}

/* handle_req(), without the store query. */
static void
req(struct session *ss, const struct json *msg)
{
	struct relay_req rq, *old;
	char		 ans[RELAY_PROTO_ANSWER];

	ss->replies++;
	switch (relay_proto_req(msg, ss->nsubs, sub_known, ss, &rq, ans,
	    sizeof(ans))) {
	case RELAY_ANS_CLOSED:
		FUZZ_ASSERT(rq.rq_closed_id != NULL);
		/* FALLTHROUGH */
	case RELAY_ANS_NOTICE:
		check_answer(ans);
		FUZZ_ASSERT(rq.rq_filters == NULL);
		return;
	case RELAY_ANS_NONE:
		break;
	}
	FUZZ_ASSERT(rq.rq_nfilters >= 1 && rq.rq_nfilters <= RELAY_MAX_FILTERS);
	FUZZ_ASSERT(rq.rq_nfilters == msg->n - 2);
	FUZZ_ASSERT(rq.rq_closed_id == rq.rq_id && rq.rq_id[0] != '\0');
	if ((old = sub_find(ss, rq.rq_id)) != NULL)
		sub_drop(ss, old);
	FUZZ_ASSERT(ss->nsubs < RELAY_MAX_SUBS);
	ss->subs[ss->nsubs++] = rq;
}

static void
message(struct session *ss, const char *data, size_t len)
{
	struct json_doc	   *doc;
	const struct json  *msg;
	struct relay_req   *s;
	enum relay_msg_type t;
	const char	   *id;
	char		    ans[RELAY_PROTO_ANSWER];

	switch ((
	    t = relay_proto_message(data, len, &doc, &msg, ans, sizeof(ans)))) {
	case RELAY_MSG_BAD:
	case RELAY_MSG_OTHER:
		FUZZ_ASSERT(ans[0] != '\0');
		break;
	case RELAY_MSG_EVENT:
	case RELAY_MSG_AUTH:
		if (ans[0] == '\0')
			submit(ss, json_at(msg, 1), t == RELAY_MSG_AUTH);
		break;
	case RELAY_MSG_REQ:
		req(ss, msg);
		break;
	case RELAY_MSG_CLOSE:
		if (relay_proto_close(msg, &id, ans, sizeof(ans)) ==
			RELAY_ANS_NONE &&
		    id != NULL && (s = sub_find(ss, id)) != NULL)
			sub_drop(ss, s);
		break;
	case RELAY_MSG_NEG:
		/* relay_neg.c; negentropy_fuzz reads the payloads. */
		FUZZ_ASSERT(strncmp(json_at(msg, 0)->s, "NEG-", 4) == 0);
		break;
	}
	if (ans[0] != '\0') {
		check_answer(ans);
		ss->replies++;
	}
	json_free(doc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session *ss;
	const char     *p = (const char *)data, *nl;
	size_t		i, off = 0, n;

	fuzz_init_log();
	if ((ss = calloc(1, sizeof(*ss))) == NULL)
		abort();
	while (off < size) {
		nl = memchr(p + off, '\n', size - off);
		n = nl ? (size_t)(nl - (p + off)) : size - off;
		if (n > 0)
			message(ss, p + off, n);
		off += n + 1;
	}
	FUZZ_ASSERT(ss->nsubs <= RELAY_MAX_SUBS);
	for (i = 0; i < ss->nsubs; i++) {
		FUZZ_ASSERT(ss->subs[i].rq_nfilters >= 1 &&
		    ss->subs[i].rq_nfilters <= RELAY_MAX_FILTERS);
		relay_req_free(&ss->subs[i]);
	}
	free(ss);
	return 0;
}
