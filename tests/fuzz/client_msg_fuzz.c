/*
 * client_msg_fuzz.c: libFuzzer harness for the NIP-01 client message path
 * of relayd (relayd/relay_ws.c handle_message() and handle_req(),
 * relay_ingest.c relay_ingest_client() and check_event()).
 *
 * relayd's functions send replies and touch the store, so this harness
 * mirrors their parse layer step by step with the same common/ calls and
 * relayd.h's limits: json_parse(), the message shape, event_from_json()
 * and the database-free event checks for EVENT (with NIP-70's protected
 * tag), filter_parse() for each REQ filter, and for NIP-42's AUTH the
 * event and auth_check_event() against a fixed challenge, relay address
 * and time (FUZZ_AUTH_*; the corpus's AUTH events pass with them).  It
 * also reads the shapes relayd does not serve yet (COUNT, NEG-OPEN,
 * NEG-MSG, NEG-CLOSE of NIP-45/77) with the same parsers, since a client
 * may send them at any time.
 *
 * The input is a session: messages separated by newlines, as one
 * connection would send them.  Subscriptions are kept per session (REQ
 * replaces an id, CLOSE drops it, at most RELAY_MAX_SUBS), and each
 * accepted event is matched against them as relay_fanout() would.
 */
#include "auth.h"
#include "config.h"
#include "event_check.h"
#include "filter.h"
#include "json.h"
#include "policy.h"
#include "relayd.h"

/* The session's NIP-42 challenge, this relay's NGIT_DOMAIN and "now". */
#define FUZZ_AUTH_CHALLENGE	"0123456789abcdef0123456789abcdef"
#define FUZZ_AUTH_DOMAIN	"relay.example"
#define FUZZ_AUTH_NOW		1790000000

/* Subscriptions of the session: an id and its parsed filters. */
struct fsub {
	char		 id[RELAY_MAX_SUBID + 1];
	struct filter	*filters;
	size_t		 nfilters;
};

struct session {
	struct fsub	 subs[RELAY_MAX_SUBS];
	size_t		 nsubs;
	uint64_t	 replies;	/* what relayd would have sent */
};

static void
sub_clear(struct fsub *s)
{
	size_t	i;

	for (i = 0; i < s->nfilters; i++)
		filter_free(&s->filters[i]);
	free(s->filters);
	memset(s, 0, sizeof(*s));
}

static struct fsub *
sub_find(struct session *ss, const char *id)
{
	size_t	i;

	for (i = 0; i < ss->nsubs; i++)
		if (strcmp(ss->subs[i].id, id) == 0)
			return &ss->subs[i];
	return NULL;
}

static void
sub_drop(struct session *ss, struct fsub *s)
{
	sub_clear(s);
	*s = ss->subs[--ss->nsubs];
	memset(&ss->subs[ss->nsubs], 0, sizeof(ss->subs[0]));
}

/* relay_ingest.c utf8_chars(). */
static size_t
utf8_chars(const char *s, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

/*
 * relay_ingest_client() up to the batch: event_from_json(), then
 * check_event()'s database-free checks.  Returns the event if relayd
 * would queue it, else NULL.
 */
static struct event *
ingest(struct session *ss, const struct json *evj)
{
	const struct json	*idj = json_get(evj, "id");
	struct event		*ev;
	char			 msg[512];

	/* The OK of a refused event echoes a 64-byte "id" string as is. */
	if (idj && idj->type == JSON_STRING && idj->len == 64)
		FUZZ_ASSERT(idj->s[64] == '\0');
	if ((ev = event_from_json(evj, msg, sizeof(msg))) == NULL) {
		FUZZ_ASSERT(strncmp(msg, "invalid: ", 9) == 0);
		ss->replies++;
		return NULL;
	}
	fuzz_check_event(ev);
	if (ev->ntags > RELAY_MAX_TAGS ||
	    utf8_chars(ev->content.s, ev->content.len) > RELAY_MAX_CONTENT ||
	    !event_check_id(ev) || !event_check_sig(ev)) {
		ss->replies++;
		event_destroy(ev);
		return NULL;
	}
	(void)event_expiration(ev);
	(void)auth_protected(ev);
	return ev;
}

static void
fanout(struct session *ss, const struct event *ev)
{
	size_t	i;

	for (i = 0; i < ss->nsubs; i++)
		ss->replies += filter_match_any(ss->subs[i].filters,
		    ss->subs[i].nfilters, ev);
}

/* A subscription id as handle_req() checks it; NULL if refused. */
static const char *
subid(const struct json *sid)
{
	if (sid == NULL || sid->type != JSON_STRING || sid->len == 0)
		return NULL;
	if (sid->len > RELAY_MAX_SUBID || memchr(sid->s, '\0', sid->len))
		return NULL;
	return sid->s;
}

/*
 * Parses the filters from fj on (at most max) into a new array; returns
 * their number, or -1 (nothing left allocated) if one is refused.
 */
static long
parse_filters(const struct json *fj, size_t max, struct filter **outp)
{
	struct filter	*fs;
	size_t		 i, n = 0;
	char		 err[256];

	if ((fs = calloc(max ? max : 1, sizeof(*fs))) == NULL)
		abort();
	for (; fj && n < max; fj = fj->next) {
		if (fj->type != JSON_OBJECT ||
		    filter_parse(fj, &fs[n], err, sizeof(err)) == -1) {
			for (i = 0; i < n; i++)
				filter_free(&fs[i]);
			free(fs);
			return -1;
		}
		n++;
	}
	*outp = fs;
	return (long)n;
}

/* handle_req(), without the store query. */
static void
req(struct session *ss, const struct json *msg)
{
	const char	*id = subid(json_at(msg, 1));
	struct fsub	*old, *s;
	struct filter	*fs;
	size_t		 nf;
	long		 n;

	ss->replies++;
	if (id == NULL || msg->n < 3 || msg->n - 2 > RELAY_MAX_FILTERS)
		return;
	nf = msg->n - 2;
	old = sub_find(ss, id);
	if (old == NULL && ss->nsubs >= RELAY_MAX_SUBS)
		return;
	if ((n = parse_filters(json_at(msg, 2), nf, &fs)) < 0)
		return;
	FUZZ_ASSERT((size_t)n == nf);
	if (old)
		sub_drop(ss, old);
	s = &ss->subs[ss->nsubs++];
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->filters = fs;
	s->nfilters = nf;
}

/*
 * handle_message() and relay_ingest_auth() up to the signature thread:
 * one event object, event_from_json(), auth_check_event().
 */
static void
auth(struct session *ss, const struct json *msg)
{
	static struct config	 cfg = { .domain = FUZZ_AUTH_DOMAIN };
	static struct policy	 pl;
	static int		 pl_ready;
	struct event		*ev;
	char			 err[512];

	if (!pl_ready) {
		FUZZ_ASSERT(policy_init(&pl, &cfg, err, sizeof(err)) == 0);
		pl_ready = 1;
	}
	ss->replies++;		/* a NOTICE or an OK */
	if (msg->n != 2 || json_at(msg, 1)->type != JSON_OBJECT)
		return;
	if ((ev = event_from_json(json_at(msg, 1), err, sizeof(err))) == NULL)
		return;
	fuzz_check_event(ev);
	if (auth_check_event(ev, FUZZ_AUTH_CHALLENGE, &pl, FUZZ_AUTH_NOW, err,
	    sizeof(err)) == 0) {
		FUZZ_ASSERT(ev->kind == AUTH_KIND);
		FUZZ_ASSERT(event_check_id(ev));
		(void)event_check_sig(ev);
	} else
		FUZZ_ASSERT(strncmp(err, "invalid: ", 9) == 0);
	event_destroy(ev);
}

/* NIP-77 NEG-OPEN / NEG-MSG payload: hex of the negentropy message. */
static void
neg_payload(const struct json *hex)
{
	uint8_t	*raw;
	size_t	 n;

	if (hex == NULL || hex->type != JSON_STRING || hex->len % 2 != 0)
		return;
	n = hex->len / 2;
	if ((raw = malloc(n ? n : 1)) == NULL)
		abort();
	(void)hex_decode(hex->s, hex->len, raw, n);
	free(raw);
}

static void
message(struct session *ss, const char *data, size_t len)
{
	struct json_doc		*doc;
	const struct json	*msg, *verb;
	struct filter		*fs;
	struct fsub		*s;
	struct event		*ev;
	char			 err[160];
	const char		*id;
	long			 n;

	if ((msg = json_parse(data, len, &doc, err, sizeof(err))) == NULL) {
		ss->replies++;
		return;
	}
	verb = json_at(msg, 0);
	if (msg->type != JSON_ARRAY || verb == NULL ||
	    verb->type != JSON_STRING) {
		ss->replies++;
	} else if (strcmp(verb->s, "EVENT") == 0) {
		/* handle_message(): EVENT takes exactly one event. */
		if (msg->n == 2 && (ev = ingest(ss, json_at(msg, 1))) != NULL) {
			fanout(ss, ev);
			event_destroy(ev);
		}
	} else if (strcmp(verb->s, "REQ") == 0)
		req(ss, msg);
	else if (strcmp(verb->s, "CLOSE") == 0) {
		/* handle_close() looks up the id as a C string. */
		const struct json *sid = json_at(msg, 1);

		if (sid != NULL && sid->type == JSON_STRING &&
		    (s = sub_find(ss, sid->s)) != NULL)
			sub_drop(ss, s);
	} else if (strcmp(verb->s, "COUNT") == 0) {
		if (subid(json_at(msg, 1)) != NULL && msg->n >= 3 &&
		    msg->n - 2 <= RELAY_MAX_FILTERS &&
		    (n = parse_filters(json_at(msg, 2), msg->n - 2, &fs)) >=
		    0) {
			while (n-- > 0)
				filter_free(&fs[n]);
			free(fs);
		}
	} else if (strcmp(verb->s, "AUTH") == 0)
		auth(ss, msg);
	else if (strcmp(verb->s, "NEG-OPEN") == 0) {
		/* ["NEG-OPEN", subid, filter, initial message hex] */
		if ((id = subid(json_at(msg, 1))) != NULL && msg->n == 4 &&
		    (n = parse_filters(json_at(msg, 2), 1, &fs)) == 1) {
			neg_payload(json_at(msg, 3));
			filter_free(&fs[0]);
			free(fs);
		}
	} else if (strcmp(verb->s, "NEG-MSG") == 0) {
		if (subid(json_at(msg, 1)) != NULL && msg->n == 3)
			neg_payload(json_at(msg, 2));
	} else if (strcmp(verb->s, "NEG-CLOSE") == 0) {
		(void)subid(json_at(msg, 1));
	} else
		ss->replies++;
	json_free(doc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session	*ss;
	const char	*p = (const char *)data, *nl;
	size_t		 i, off = 0, n;

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
		FUZZ_ASSERT(ss->subs[i].nfilters >= 1 &&
		    ss->subs[i].nfilters <= RELAY_MAX_FILTERS);
		sub_clear(&ss->subs[i]);
	}
	free(ss);
	return 0;
}
