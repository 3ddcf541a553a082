/*
 * relay_proto.c: the pure part of reading a NIP-01 client message
 * (relay_proto.h): the message's shape and verb, a REQ's id and filters,
 * CLOSE's id, and an EVENT's or AUTH's event with the checks that need
 * neither the store nor the signature thread.  A refusal comes back as
 * the exact answer text relayd sends; relay_ws.c and relay_ingest.c send
 * it.  The caller passes the clock and the connection's state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "relay_proto.h"

/*
 * Parses data as one client message.  Returns its type with *docp (for
 * json_free(), NULL if the JSON was bad) and *msgp, the array.  ans is
 * set to "" or, if the message is answered by a NOTICE and nothing else
 * (bad JSON, a bad shape, an unknown verb, EVENT or AUTH without exactly
 * one event), to that NOTICE's text.
 */
enum relay_msg_type
relay_proto_message(const char *data, size_t len, struct json_doc **docp,
    const struct json **msgp, char *ans, size_t anslen)
{
	const struct json *msg, *verb;
	char		   err[160];

	ans[0] = '\0';
	*msgp = NULL;
	if ((msg = json_parse(data, len, docp, err, sizeof(err))) == NULL) {
		*docp = NULL;
		snprintf(ans, anslen, "invalid: bad JSON: %s", err);
		return RELAY_MSG_BAD;
	}
	*msgp = msg;
	verb = json_at(msg, 0);
	if (msg->type != JSON_ARRAY || verb == NULL ||
	    verb->type != JSON_STRING) {
		snprintf(ans, anslen,
		    "invalid: a message must be a JSON array starting with a string");
		return RELAY_MSG_BAD;
	}
	if (verb->len == 5 && strcmp(verb->s, "EVENT") == 0) {
		if (msg->n != 2)
			snprintf(ans, anslen,
			    "invalid: EVENT takes exactly one event");
		return RELAY_MSG_EVENT;
	}
	if (verb->len == 3 && strcmp(verb->s, "REQ") == 0)
		return RELAY_MSG_REQ;
	if (verb->len == 5 && strcmp(verb->s, "CLOSE") == 0)
		return RELAY_MSG_CLOSE;
	if (verb->len == 5 && strcmp(verb->s, "COUNT") == 0)
		return RELAY_MSG_COUNT;
	if (verb->len == 4 && strcmp(verb->s, "AUTH") == 0) {
		if (msg->n != 2 || json_at(msg, 1)->type != JSON_OBJECT)
			snprintf(ans, anslen,
			    "invalid: AUTH takes exactly one event");
		return RELAY_MSG_AUTH;
	}
	if (strncmp(verb->s, "NEG-", 4) == 0)
		return RELAY_MSG_NEG;
	snprintf(ans, anslen, "error: unknown message type \"%.40s\"", verb->s);
	return RELAY_MSG_OTHER;
}

void
relay_req_free(struct relay_req *rq)
{
	filters_free(rq->rq_filters, rq->rq_nfilters);
	rq->rq_filters = NULL;
	rq->rq_nfilters = 0;
}

/*
 * A REQ (NIP-01), or a COUNT (NIP-45, shaped alike: nsubs 0, as a COUNT
 * holds no subscription): the subscription id, the number of filters, room for
 * one more subscription (the connection holds nsubs; known(id, arg) says
 * whether id is one of them, which a REQ replaces), then each filter.
 * Returns RELAY_ANS_NONE with rq filled (relay_req_free() it), or the
 * answer with its text in ans (for CLOSED, rq->rq_closed_id is the id).
 */
enum relay_answer
relay_proto_req(const struct json *msg, size_t nsubs,
    int (*known)(const char *, void *), void *arg, struct relay_req *rq,
    char *ans, size_t anslen)
{
	const struct json *sid = json_at(msg, 1), *fj;
	const char	  *verb = json_at(msg, 0)->s; /* REQ or COUNT */
	size_t		   i, nf;

	memset(rq, 0, sizeof(*rq));
	ans[0] = '\0';
	if (sid == NULL || sid->type != JSON_STRING || sid->len == 0) {
		snprintf(ans, anslen,
		    "invalid: %s needs a subscription id string", verb);
		return RELAY_ANS_NOTICE;
	}
	rq->rq_closed_id = sid->s;
	if (sid->len > RELAY_MAX_SUBID || memchr(sid->s, '\0', sid->len)) {
		snprintf(ans, anslen,
		    "invalid: subscription id longer than %d characters",
		    RELAY_MAX_SUBID);
		return RELAY_ANS_CLOSED;
	}
	memcpy(rq->rq_id, sid->s, sid->len + 1);
	rq->rq_closed_id = rq->rq_id;
	nf = msg->n - 2;
	if (nf == 0) {
		snprintf(ans, anslen, "invalid: %s needs at least one filter",
		    verb);
		return RELAY_ANS_CLOSED;
	}
	if (nf > RELAY_MAX_FILTERS) {
		snprintf(ans, anslen,
		    "invalid: too many filters (at most %d per %s)",
		    RELAY_MAX_FILTERS, verb);
		return RELAY_ANS_CLOSED;
	}
	if (nsubs >= RELAY_MAX_SUBS && !known(rq->rq_id, arg)) {
		snprintf(ans, anslen,
		    "blocked: too many subscriptions (at most %d per connection)",
		    RELAY_MAX_SUBS);
		return RELAY_ANS_CLOSED;
	}
	if ((rq->rq_filters = calloc(nf, sizeof(struct filter))) == NULL)
		abort();
	for (i = 0, fj = json_at(msg, 2); fj; fj = fj->next, i++) {
		rq->rq_nfilters = i + 1;
		if (fj->type != JSON_OBJECT) {
			snprintf(ans, anslen,
			    "invalid: a filter must be a JSON object");
			relay_req_free(rq);
			return RELAY_ANS_CLOSED;
		}
		if (filter_parse(fj, &rq->rq_filters[i], ans, anslen) == -1) {
			relay_req_free(rq);
			return RELAY_ANS_CLOSED;
		}
	}
	return RELAY_ANS_NONE;
}

/*
 * A CLOSE (NIP-01).  Returns RELAY_ANS_NONE with *idp the subscription
 * id to drop (NULL if it holds a NUL: no REQ opened such an id), or
 * RELAY_ANS_NOTICE with its text in ans.
 */
enum relay_answer
relay_proto_close(const struct json *msg, const char **idp, char *ans,
    size_t anslen)
{
	const struct json *sid = json_at(msg, 1);

	*idp = NULL;
	ans[0] = '\0';
	if (sid == NULL || sid->type != JSON_STRING) {
		snprintf(ans, anslen,
		    "invalid: CLOSE needs a subscription id string");
		return RELAY_ANS_NOTICE;
	}
	if (sid->len == strlen(sid->s))
		*idp = sid->s;
	return RELAY_ANS_NONE;
}

/*
 * The id an OK for evj names before the event is parsed: its "id" if
 * that is a 64-character string (as sent), else "".
 */
void
relay_proto_okid(const struct json *evj, char okid[EVENT_ID_HEX_LEN + 1])
{
	const struct json *idj = json_get(evj, "id");

	okid[0] = '\0';
	if (idj && idj->type == JSON_STRING && idj->len == EVENT_ID_HEX_LEN)
		memcpy(okid, idj->s, EVENT_ID_HEX_LEN + 1);
}

/* Unicode characters of a valid UTF-8 string. */
static size_t
utf8_chars(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

/*
 * An event's checks that need neither the database nor the signature,
 * at time now, its JSON being at most max_size bytes.  Returns 0, or -1
 * with the OK message.
 */
int
relay_proto_check_event(const struct event *ev, int64_t now, size_t max_size,
    char *msg, size_t msglen)
{
	if (ev->json_len > max_size) {
		snprintf(msg, msglen,
		    "invalid: event too large (%zu bytes, max %zu)",
		    ev->json_len, max_size);
		return -1;
	}
	if (ev->ntags > RELAY_MAX_TAGS) {
		snprintf(msg, msglen, "invalid: too many tags (at most %d)",
		    RELAY_MAX_TAGS);
		return -1;
	}
	if (utf8_chars(ev->content.s, ev->content.len) > RELAY_MAX_CONTENT) {
		snprintf(msg, msglen,
		    "invalid: content too long (at most %d characters)",
		    RELAY_MAX_CONTENT);
		return -1;
	}
	if (ev->created_at > now + RELAY_CREATED_AT_AHEAD) {
		snprintf(msg, msglen,
		    "invalid: created_at is more than %d seconds in the future",
		    RELAY_CREATED_AT_AHEAD);
		return -1;
	}
	return event_check_id_msg(ev, msg, msglen);
}

/*
 * The event of an EVENT or, with challenge set, of a NIP-42 AUTH (with
 * pl, this relay's address): parsed and checked at time now, all but the
 * signature.  Returns it, or NULL with the OK message in msg.  Either
 * way okid is the id the OK names.
 */
struct event *
relay_proto_event(const struct json *evj, const char *challenge,
    const struct policy *pl, int64_t now, size_t max_size,
    char okid[EVENT_ID_HEX_LEN + 1], char *msg, size_t msglen)
{
	struct event *ev;
	int	      rc;

	relay_proto_okid(evj, okid);
	if ((ev = event_from_json(evj, msg, msglen)) == NULL)
		return NULL;
	memcpy(okid, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	if (challenge != NULL)
		rc = auth_check_event(ev, challenge, pl, now, msg, msglen);
	else
		rc = relay_proto_check_event(ev, now, max_size, msg, msglen);
	if (rc == -1) {
		event_destroy(ev);
		return NULL;
	}
	return ev;
}
