/*
 * peer_ws.c: the test peer's NIP-01 websocket side: EVENT (stored without
 * checks unless "verify"), REQ (stored matches newest first, EOSE, live
 * delivery), CLOSE, NIP-42 AUTH and, in "neg" mode, NIP-77 negentropy
 * (common/negentropy.c's server), each bent by the scripted
 * misbehaviour of peer_config, and every client's output queue.  Runs in
 * peer, the scriptable relay of the integration tests.
 */
#define _GNU_SOURCE /* dup3 */
#include <sys/random.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "negentropy.h"
#include "peer.h"
#include "proc.h"

static void
send_buf(struct peer_conn *c, struct buf *b)
{
	wss_send(&c->pc_out, b->b_data, b->b_len, 0);
}

static void
send_auth_challenge(struct peer_conn *c)
{
	wss_send_msg(&c->pc_out, "AUTH", c->pc_challenge, NULL);
	c->pc_challenge_sent = 1;
}

/*
 * Flips the low bit of the signature's last hex digit in the event JSON
 * at p[0..len): still well-formed hex, no longer a valid signature.  The
 * canonical form ends with "sig":"<128 hex>"}.
 */
static void
forge_sig(char *p, size_t len)
{
	static const char key[] = "\"sig\":\"";
	char		 *h;
	int		  v;

	if (len < 130 + sizeof(key) - 1 ||
	    memcmp(p + len - 130 - (sizeof(key) - 1), key, sizeof(key) - 1) !=
		0)
		return;
	h = p + len - 3;
	v = *h >= 'a' ? *h - 'a' + 10 : *h - '0';
	v ^= 1;
	*h = (char)(v < 10 ? '0' + v : 'a' + v - 10);
}

/*
 * Sends ["EVENT",subid,ev] unless the connection already sent its
 * close_after_events; reaching that number schedules the abrupt drop.
 */
static void
send_event(struct peer_conn *c, const char *subid, const struct event *ev)
{
	struct buf b = BUF_INIT;
	int	   limit = peer->cfg.close_after_events;

	if (c->pc_out.wq_shut)
		return;
	wss_event_msg(&b, subid, ev->json, ev->json_len);
	if (peer->cfg.forge)
		forge_sig(b.b_data + b.b_len - 1 - ev->json_len, ev->json_len);
	send_buf(c, &b);
	buf_free(&b);
	c->pc_events_sent++;
	if (limit > 0 && c->pc_events_sent >= (uint64_t)limit) {
		log_debug("conn %llu: %d events sent, dropping it",
		    (unsigned long long)c->pc_serial, limit);
		c->pc_out.wq_shut = 1;
		lws_callback_on_writable(c->pc_wsi);
	}
}

static void
sub_free(struct peer_sub *s)
{
	lws_sul_cancel(&s->ps_sul);
	filters_free(s->ps_filters, s->ps_nfilters);
	free(s);
}

static struct peer_sub *
sub_find(struct peer_conn *c, const char *id)
{
	struct peer_sub *s;

	LIST_FOREACH(s, &c->pc_subs, ps_entry)
		if (strcmp(s->ps_id, id) == 0)
			return s;
	return NULL;
}

static void
sub_remove(struct peer_conn *c, struct peer_sub *s)
{
	LIST_REMOVE(s, ps_entry);
	c->pc_nsubs--;
	peer->nsubs--;
	sub_free(s);
}

void
peer_fanout(const struct event *ev)
{
	struct peer_conn *c;
	struct peer_sub	 *s;

	LIST_FOREACH(c, &peer->conns, pc_entry)
		LIST_FOREACH(s, &c->pc_subs, ps_entry)
			if (filter_match_any(s->ps_filters, s->ps_nfilters, ev))
				send_event(c, s->ps_id, ev);
}

static void
eose_timer(lws_sorted_usec_list_t *sul)
{
	struct peer_sub *s = lws_container_of(sul, struct peer_sub, ps_sul);

	wss_send_msg(&s->ps_conn->pc_out, "EOSE", s->ps_id, NULL);
}

/* The value of a json.h tree as cJSON, for the log.  Never NULL. */
static cJSON *
to_cjson(const struct json *j)
{
	const struct json *m;
	cJSON		  *o = NULL;

	switch (j->type) {
	case JSON_NULL:
		o = cJSON_CreateNull();
		break;
	case JSON_FALSE:
		o = cJSON_CreateFalse();
		break;
	case JSON_TRUE:
		o = cJSON_CreateTrue();
		break;
	case JSON_NUMBER:
		o = cJSON_CreateNumber(j->is_int ? (double)j->i : j->d);
		break;
	case JSON_STRING:
		o = cJSON_CreateString(j->s);
		break;
	case JSON_ARRAY:
		if ((o = cJSON_CreateArray()) == NULL)
			break;
		for (m = j->child; m != NULL; m = m->next)
			cJSON_AddItemToArray(o, to_cjson(m));
		break;
	case JSON_OBJECT:
		if ((o = cJSON_CreateObject()) == NULL)
			break;
		for (m = j->child; m != NULL; m = m->next)
			cJSON_AddItemToObject(o, m->key, to_cjson(m));
		break;
	}
	if (o == NULL)
		fatal("to_cjson");
	return o;
}

/*
 * A new entry of the log about c, its "conn" and "sub", the id sid
 * names (null unless sid is a string; no "sub" with_sub 0).  The caller
 * adds the rest.
 */
static cJSON *
log_entry(const struct peer_conn *c, int with_sub, const struct json *sid)
{
	cJSON *e;

	if ((e = cJSON_CreateObject()) == NULL)
		fatal("log_entry");
	cJSON_AddNumberToObject(e, "conn", (double)c->pc_serial);
	if (with_sub && sid != NULL && sid->type == JSON_STRING)
		cJSON_AddStringToObject(e, "sub", sid->s);
	else if (with_sub)
		cJSON_AddNullToObject(e, "sub");
	return e;
}

/* Records a REQ as received: conn, sub, the filter objects, when. */
static void
log_req(struct peer_conn *c, const struct json *msg)
{
	const struct json *f;
	cJSON		  *e, *fl;

	e = log_entry(c, 1, json_at(msg, 1));
	fl = cJSON_AddArrayToObject(e, "filters");
	for (f = json_at(msg, 2); f != NULL; f = f->next)
		cJSON_AddItemToArray(fl, to_cjson(f));
	peer->log_last_ms = proc_now_ms();
	peer->log_nreqs++;
	cJSON_AddNumberToObject(e, "at_ms", (double)peer->log_last_ms);
	peer_log_add(peer->log_reqs, e);
}

struct req_ctx {
	struct peer_conn *c;
	const char	 *subid;
};

static void
req_event_cb(const struct event *ev, void *arg)
{
	struct req_ctx *rq = arg;

	send_event(rq->c, rq->subid, ev);
}

/* The extra frames of "oversized_bytes" and "garbage". */
static void
send_junk_frames(struct peer_conn *c)
{
	static const char garbage[] = "}{ this is not JSON [\"EVENT\"";
	unsigned char	  bin[64];
	struct buf	  b = BUF_INIT;
	size_t		  i, n;

	if (peer->cfg.oversized_bytes > 0) {
		/* ["NOTICE","xxx..."]: 13 bytes around the text. */
		n = (size_t)peer->cfg.oversized_bytes;
		buf_reserve(&b, n);
		buf_adds(&b, "[\"NOTICE\",\"");
		for (i = 13; i < n; i++)
			buf_addc(&b, 'x');
		buf_adds(&b, "\"]");
		send_buf(c, &b);
		buf_free(&b);
	}
	if (peer->cfg.garbage) {
		wss_send(&c->pc_out, garbage, sizeof(garbage) - 1, 0);
		for (i = 0; i < sizeof(bin); i++)
			bin[i] = (unsigned char)(i * 37 + 5);
		wss_send(&c->pc_out, bin, sizeof(bin), 1);
	}
}

/* "flood": n freshly signed junk events the subscription never asked for. */
static void
send_flood(struct peer_conn *c, const char *subid, int n)
{
	struct event *ev;
	char	      content[64];
	int	      i;

	for (i = 0; i < n && !c->pc_out.wq_shut; i++) {
		snprintf(content, sizeof(content), "junk %llu",
		    (unsigned long long)++peer->junk_seq);
		ev = event_new_signed(peer->junk_sk, (int64_t)time(NULL), 1,
		    "[[\"t\",\"junk\"]]", content);
		if (ev == NULL)
			fatalx("cannot sign a junk event");
		send_event(c, subid, ev);
		event_destroy(ev);
	}
}

static void
handle_req(struct peer_conn *c, const struct json *msg)
{
	const struct json *sid = json_at(msg, 1), *fj;
	struct peer_sub	  *s, *old;
	struct req_ctx	   rq;
	char		   err[256], subid[PEER_MAX_SUBID + 1];
	size_t		   i, nf;

	log_req(c, msg);
	if (sid == NULL || sid->type != JSON_STRING || sid->len == 0) {
		wss_notice(&c->pc_out,
		    "invalid: REQ needs a subscription id string");
		return;
	}
	if (sid->len > PEER_MAX_SUBID || memchr(sid->s, '\0', sid->len)) {
		wss_send_msg(&c->pc_out, "CLOSED", sid->s,
		    "invalid: subscription id longer than 64 characters");
		return;
	}
	memcpy(subid, sid->s, sid->len + 1);
	if (peer->cfg.auth && !c->pc_authed) {
		if (!c->pc_challenge_sent)
			send_auth_challenge(c);
		wss_send_msg(&c->pc_out, "CLOSED", subid,
		    "auth-required: this peer wants NIP-42 AUTH first");
		return;
	}
	send_junk_frames(c);
	if (peer->cfg.notice_rate_limit)
		wss_notice(&c->pc_out, "rate limit exceeded, slow down");
	if (peer->cfg.closed_rate_limited) {
		wss_send_msg(&c->pc_out, "CLOSED", subid,
		    "rate-limited: slow down");
		return;
	}
	if (peer->cfg.closed_tag > 0) {
		char tag[3] = { '#', (char)peer->cfg.closed_tag, '\0' };

		for (fj = json_at(msg, 2); fj != NULL; fj = fj->next)
			if (fj->type == JSON_OBJECT &&
			    json_get(fj, tag) != NULL) {
				wss_send_msg(&c->pc_out, "CLOSED", subid,
				    "error: this peer fails such filters");
				return;
			}
	}
	nf = msg->n - 2;
	if (nf == 0) {
		wss_send_msg(&c->pc_out, "CLOSED", subid,
		    "invalid: REQ needs at least one filter");
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->ps_filters = calloc(nf, sizeof(struct filter))) == NULL)
		fatal("handle_req");
	s->ps_conn = c;
	s->ps_at_ms = proc_now_ms();
	s->ps_live = 1;
	memcpy(s->ps_id, subid, sizeof(subid));
	for (i = 0, fj = json_at(msg, 2); fj != NULL; fj = fj->next, i++) {
		s->ps_nfilters = i + 1;
		if (fj->type != JSON_OBJECT) {
			wss_send_msg(&c->pc_out, "CLOSED", subid,
			    "invalid: a filter must be a JSON object");
			sub_free(s);
			return;
		}
		if (filter_parse(fj, &s->ps_filters[i], err, sizeof(err)) ==
		    -1) {
			wss_send_msg(&c->pc_out, "CLOSED", subid, err);
			sub_free(s);
			return;
		}
		s->ps_live &= s->ps_filters[i].f_has_limit &&
		    s->ps_filters[i].f_limit == 0;
	}
	/* A REQ with a known id replaces that subscription (NIP-01). */
	if ((old = sub_find(c, subid)) != NULL)
		sub_remove(c, old);
	LIST_INSERT_HEAD(&c->pc_subs, s, ps_entry);
	if (++c->pc_nsubs > peer->log_max_concurrent_subs)
		peer->log_max_concurrent_subs = c->pc_nsubs;
	if (++peer->nsubs > peer->log_max_total_subs)
		peer->log_max_total_subs = peer->nsubs;

	rq.c = c;
	rq.subid = s->ps_id;
	peer_store_query(s->ps_filters, s->ps_nfilters,
	    (size_t)peer->cfg.max_results, req_event_cb, &rq);
	if (peer->cfg.flood > 0)
		send_flood(c, subid, peer->cfg.flood);
	if (peer->cfg.drop_eose)
		return;
	if (peer->cfg.eose_delay_ms > 0)
		lws_sul_schedule(peer->ctx, 0, &s->ps_sul, eose_timer,
		    (lws_usec_t)peer->cfg.eose_delay_ms * LWS_US_PER_MS);
	else
		wss_send_msg(&c->pc_out, "EOSE", subid, NULL);
}

static void
handle_close(struct peer_conn *c, const struct json *msg)
{
	const struct json *sid = json_at(msg, 1);
	struct peer_sub	  *s;
	cJSON		  *e;

	if (sid == NULL || sid->type != JSON_STRING) {
		wss_notice(&c->pc_out,
		    "invalid: CLOSE needs a subscription id string");
		return;
	}
	e = log_entry(c, 1, sid);
	cJSON_AddNumberToObject(e, "at_ms", (double)proc_now_ms());
	peer_log_add(peer->log_closes, e);
	if ((s = sub_find(c, sid->s)) != NULL)
		sub_remove(c, s);
}

/* The "id" of an event object that may not parse, for the OK; or "". */
static const char *
event_id_of(const struct json *evj)
{
	const struct json *id = json_get(evj, "id");

	if (id == NULL || id->type != JSON_STRING || id->len != 64)
		return "";
	return id->s;
}

/*
 * The event of an EVENT or AUTH message (verb), parsed; or NULL, with
 * the NOTICE or the OK false already queued.  The caller frees it.
 */
static struct event *
take_event(struct peer_conn *c, const struct json *msg, const char *verb)
{
	const struct json *evj = json_at(msg, 1);
	struct event	  *ev;
	char		   err[256];

	if (msg->n != 2 || evj->type != JSON_OBJECT) {
		snprintf(err, sizeof(err),
		    "invalid: %s takes exactly one "
		    "event object",
		    verb);
		wss_notice(&c->pc_out, err);
		return NULL;
	}
	if ((ev = event_from_json(evj, err, sizeof(err))) == NULL)
		wss_ok(&c->pc_out, event_id_of(evj), 0, err);
	return ev;
}

static void
handle_event(struct peer_conn *c, const struct json *msg)
{
	struct event *ev;
	char	      id[EVENT_ID_HEX_LEN + 1];
	int	      r;

	peer->log_events_received++;
	if ((ev = take_event(c, msg, "EVENT")) == NULL)
		return;
	if (peer->cfg.ok_rate_limited) {
		wss_ok(&c->pc_out, ev->id_hex, 0, "rate-limited: slow down");
		goto done;
	}
	if (peer->cfg.verify && !event_check_id(ev)) {
		wss_ok(&c->pc_out, ev->id_hex, 0,
		    "invalid: event id does not match");
		goto done;
	}
	if (peer->cfg.verify && !event_check_sig(ev)) {
		wss_ok(&c->pc_out, ev->id_hex, 0, "invalid: bad signature");
		goto done;
	}
	if (event_kind_class(ev->kind) == KIND_EPHEMERAL) {
		wss_ok(&c->pc_out, ev->id_hex, 1, "");
		peer_fanout(ev);
		goto done;
	}
	/* The store owns ev from here; it stays valid while we fan out. */
	memcpy(id, ev->id_hex, sizeof(id));
	r = peer_store_add(ev);
	if (r == 1) {
		wss_ok(&c->pc_out, id, 1, "");
		peer_fanout(ev);
	} else if (r == 0)
		wss_ok(&c->pc_out, id, 1, "duplicate: already have this event");
	else
		wss_ok(&c->pc_out, id, 0, "error: the peer's store is full");
	return;
done:
	event_destroy(ev);
}

/* NIP-42: a kind 22242 event, validly signed, naming our challenge. */
static void
handle_auth(struct peer_conn *c, const struct json *msg)
{
	const struct estr *ch;
	struct event	  *ev;
	const char	  *why = NULL;
	cJSON		  *e;

	if ((ev = take_event(c, msg, "AUTH")) == NULL)
		return;
	if (ev->kind != PEER_KIND_AUTH)
		why = "invalid: AUTH needs a kind 22242 event";
	else if (!event_check_id(ev))
		why = "invalid: event id does not match";
	else if (!event_check_sig(ev))
		why = "invalid: bad signature";
	else if ((ch = event_tag_value(ev, "challenge")) == NULL ||
	    strcmp(ch->s, c->pc_challenge) != 0)
		why = "invalid: wrong or missing challenge tag";
	else if (event_tag_value(ev, "relay") == NULL)
		why = "invalid: missing relay tag";
	if (why != NULL) {
		wss_ok(&c->pc_out, ev->id_hex, 0, why);
		event_destroy(ev);
		return;
	}
	c->pc_authed = 1;
	e = log_entry(c, 0, NULL);
	cJSON_AddStringToObject(e, "pubkey", ev->pubkey_hex);
	peer_log_add(peer->log_auth, e);
	wss_ok(&c->pc_out, ev->id_hex, 1, "");
	event_destroy(ev);
}

/* NIP-77 ("neg" mode): a message to subid with one string argument. */
static void
send_neg(struct peer_conn *c, const char *verb, const char *subid,
    const char *arg, size_t len)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "[\"%s\",", verb);
	buf_add_jstr(&b, subid, strlen(subid));
	buf_addc(&b, ',');
	buf_add_jstr(&b, arg, len);
	buf_addc(&b, ']');
	send_buf(c, &b);
	buf_free(&b);
}

static struct peer_neg *
neg_find(struct peer_conn *c, const char *subid)
{
	struct peer_neg *n;

	LIST_FOREACH(n, &c->pc_negs, pn_entry)
		if (strcmp(n->pn_id, subid) == 0)
			return n;
	return NULL;
}

static void
neg_remove(struct peer_neg *n)
{
	LIST_REMOVE(n, pn_entry);
	neg_free(n->pn_neg);
	free(n);
}

/* Answers hex, a client message, for session n; drops n on error. */
static void
neg_answer(struct peer_conn *c, struct peer_neg *n, const struct json *hex)
{
	struct buf out = BUF_INIT;
	char	   err[160], reason[200];

	if (hex == NULL || hex->type != JSON_STRING) {
		send_neg(c, "NEG-ERR", n->pn_id, "invalid: no message", 19);
		neg_remove(n);
		return;
	}
	if (neg_server_reconcile(n->pn_neg, hex->s, hex->len, &out, err,
		sizeof(err)) == -1) {
		snprintf(reason, sizeof(reason), "invalid: %s", err);
		send_neg(c, "NEG-ERR", n->pn_id, reason, strlen(reason));
		neg_remove(n);
	} else
		send_neg(c, "NEG-MSG", n->pn_id, out.b_data, out.b_len);
	buf_free(&out);
}

/*
 * NEG-OPEN, logged in "negs" either way: without "neg", an unknown
 * message (a NOTICE, as relays that do not speak NIP-77 answer); with
 * it, the set is every stored event the filter matches (no limit).
 */
static void
handle_neg_open(struct peer_conn *c, const struct json *msg)
{
	const struct json *sid = json_at(msg, 1), *fj = json_at(msg, 2);
	struct neg_items   it = { NULL, 0, 0 };
	struct filter	   f;
	struct peer_neg	  *n, *old;
	cJSON		  *e;
	char		   err[160];
	size_t		   i;

	e = log_entry(c, 1, sid);
	cJSON_AddItemToObject(e, "filter",
	    fj != NULL ? to_cjson(fj) : cJSON_CreateNull());
	peer->log_last_ms = proc_now_ms();
	peer->log_nnegs++;
	cJSON_AddNumberToObject(e, "at_ms", (double)peer->log_last_ms);
	peer_log_add(peer->log_negs, e);
	if (!peer->cfg.neg) {
		wss_notice(&c->pc_out,
		    "error: unknown message type \"NEG-OPEN\"");
		return;
	}
	if (sid == NULL || sid->type != JSON_STRING || sid->len == 0 ||
	    sid->len > PEER_MAX_SUBID || memchr(sid->s, '\0', sid->len)) {
		wss_notice(&c->pc_out,
		    "invalid: NEG-OPEN needs a subscription id");
		return;
	}
	if ((old = neg_find(c, sid->s)) != NULL)
		neg_remove(old);
	memset(&f, 0, sizeof(f));
	if (fj == NULL || fj->type != JSON_OBJECT ||
	    filter_parse(fj, &f, err, sizeof(err)) == -1) {
		send_neg(c, "NEG-ERR", sid->s, "invalid: bad filter", 19);
		filter_free(&f);
		return;
	}
	for (i = 0; i < peer->nevents; i++)
		if (filter_match(&f, peer->events[i]))
			neg_items_add(peer->events[i]->created_at,
			    peer->events[i]->id, &it);
	filter_free(&f);
	if ((n = calloc(1, sizeof(*n))) == NULL)
		fatal("handle_neg_open");
	memcpy(n->pn_id, sid->s, sid->len + 1);
	if ((n->pn_neg = neg_server_new(it.ni_v, it.ni_n, NEG_FRAME_DEFAULT,
		 err, sizeof(err))) == NULL) {
		free(n);
		send_neg(c, "NEG-ERR", sid->s, "error: cannot start", 19);
		return;
	}
	LIST_INSERT_HEAD(&c->pc_negs, n, pn_entry);
	neg_answer(c, n, json_at(msg, 3));
}

static void
handle_neg_msg(struct peer_conn *c, const struct json *msg)
{
	const struct json *sid = json_at(msg, 1);
	struct peer_neg	  *n;

	if (sid == NULL || sid->type != JSON_STRING)
		return;
	if ((n = neg_find(c, sid->s)) == NULL) {
		send_neg(c, "NEG-ERR", sid->s,
		    "closed: subscription not "
		    "found",
		    30);
		return;
	}
	neg_answer(c, n, json_at(msg, 2));
}

static void
handle_neg_close(struct peer_conn *c, const struct json *msg)
{
	const struct json *sid = json_at(msg, 1);
	struct peer_neg	  *n;

	if (sid != NULL && sid->type == JSON_STRING &&
	    (n = neg_find(c, sid->s)) != NULL)
		neg_remove(n);
}

static void
handle_message(struct peer_conn *c, const char *data, size_t len)
{
	struct json_doc *doc;
	struct json	*msg, *verb;
	char		 err[160], notice[256];

	if ((msg = json_parse(data, len, &doc, err, sizeof(err))) == NULL) {
		snprintf(notice, sizeof(notice), "invalid: bad JSON: %s", err);
		wss_notice(&c->pc_out, notice);
		return;
	}
	verb = json_at(msg, 0);
	if (msg->type != JSON_ARRAY || verb == NULL ||
	    verb->type != JSON_STRING)
		wss_notice(&c->pc_out,
		    "invalid: a message must be a JSON "
		    "array starting with a string");
	else if (strcmp(verb->s, "EVENT") == 0)
		handle_event(c, msg);
	else if (strcmp(verb->s, "REQ") == 0)
		handle_req(c, msg);
	else if (strcmp(verb->s, "CLOSE") == 0)
		handle_close(c, msg);
	else if (strcmp(verb->s, "AUTH") == 0)
		handle_auth(c, msg);
	else if (strcmp(verb->s, "NEG-OPEN") == 0)
		handle_neg_open(c, msg);
	else if (peer->cfg.neg && strcmp(verb->s, "NEG-MSG") == 0)
		handle_neg_msg(c, msg);
	else if (peer->cfg.neg && strcmp(verb->s, "NEG-CLOSE") == 0)
		handle_neg_close(c, msg);
	else {
		snprintf(notice, sizeof(notice),
		    "error: unknown message type "
		    "\"%.40s\"",
		    verb->s);
		wss_notice(&c->pc_out, notice);
	}
	json_free(doc);
}

static void
conn_release(struct peer_conn *c)
{
	struct peer_sub *s;

	while ((s = LIST_FIRST(&c->pc_subs)) != NULL)
		sub_remove(c, s);
	while (LIST_FIRST(&c->pc_negs) != NULL)
		neg_remove(LIST_FIRST(&c->pc_negs));
	wss_queue_clear(&c->pc_out);
	buf_free(&c->pc_rx.wr_buf);
	LIST_REMOVE(c, pc_entry);
	peer->nconns--;
}

static int
ws_writeable(struct peer_conn *c, struct lws *wsi)
{
	uint64_t sent = c->pc_out.wq_sent;
	int	 rc;

	/*
	 * close_after_events: once the last event has left (lws calls us
	 * only after it flushed what it buffered), end the stream without
	 * a close frame, as a crashing relay would.
	 */
	if (c->pc_out.wq_shut && !c->pc_out.wq_too_slow &&
	    STAILQ_EMPTY(&c->pc_out.wq_q)) {
		shutdown(lws_get_socket_fd(wsi), SHUT_RDWR);
		return -1;
	}
	rc = wss_queue_write(&c->pc_out, 0);
	peer->log_bytes_out += c->pc_out.wq_sent - sent;
	if (rc == 0 && c->pc_out.wq_shut)
		lws_callback_on_writable(wsi);
	return rc;
}

static void
ws_receive(struct peer_conn *c, struct lws *wsi, const void *in, size_t len)
{
	peer->log_bytes_in += len;
	if (!wss_rx_frame(&c->pc_rx, wsi, in, len, PEER_MAX_MESSAGE,
		&c->pc_out))
		return;
	handle_message(c, c->pc_rx.wr_buf.b_data ? c->pc_rx.wr_buf.b_data : "",
	    c->pc_rx.wr_buf.b_len);
	wss_rx_done(&c->pc_rx);
}

static void
conn_open(struct peer_conn *c, struct lws *wsi)
{
	uint8_t raw[16];
	cJSON  *e;

	/* The session may have served HTTP before the upgrade. */
	buf_free(&c->pc_body);
	free(c->pc_resp);
	memset(c, 0, sizeof(*c));
	c->pc_kind = PEER_CONN_WS;
	c->pc_wsi = wsi;
	c->pc_serial = ++peer->next_serial;
	snprintf(c->pc_name, sizeof(c->pc_name), "conn %llu",
	    (unsigned long long)c->pc_serial);
	wss_queue_init(&c->pc_out, wsi, PEER_MAX_OUTQ, c->pc_name);
	LIST_INIT(&c->pc_subs);
	LIST_INIT(&c->pc_negs);
	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		fatal("getrandom");
	hex_encode(raw, sizeof(raw), c->pc_challenge);
	LIST_INSERT_HEAD(&peer->conns, c, pc_entry);
	peer->nconns++;
	peer->log_connections++;
	e = log_entry(c, 0, NULL);
	cJSON_AddNumberToObject(e, "at_ms", (double)proc_now_ms());
	peer_log_add(peer->log_opens, e);
	log_debug("conn %llu: open", (unsigned long long)c->pc_serial);
	if (peer->cfg.auth)
		send_auth_challenge(c);
}

/*
 * "hang": the client's upgrade request is never answered.  lws shuts down
 * a socket it drops, so the connection moves to the hang list and the
 * descriptor number lws holds is pointed at a fresh unconnected socket
 * for lws to shut down and close instead.  This relies on lws's poll(2)
 * loop, which knows descriptors by number.
 */
static void
hang_upgrade(struct lws *wsi)
{
	int fd = lws_get_socket_fd(wsi), keep, dummy;

	if (fd < 0 || (keep = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1)
		return;
	dummy = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (dummy == -1 || dup3(dummy, fd, O_CLOEXEC) == -1) {
		log_warn("hang: cannot swap the socket");
		if (dummy != -1)
			close(dummy);
		close(keep);
		return;
	}
	close(dummy);
	peer_hang_hold(keep);
}

int
peer_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct peer_conn *c = user;

	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		if (peer->cfg.refuse) {
			lws_return_http_status(wsi,
			    HTTP_STATUS_SERVICE_UNAVAILABLE,
			    "the test peer refuses websockets");
			return 1;
		}
		if (peer->cfg.hang) {
			hang_upgrade(wsi);
			return -1;
		}
		return 0;
	case LWS_CALLBACK_ESTABLISHED:
		conn_open(c, wsi);
		return 0;
	case LWS_CALLBACK_CLOSED:
		if (c != NULL && c->pc_kind == PEER_CONN_WS) {
			log_debug("conn %llu: closed",
			    (unsigned long long)c->pc_serial);
			conn_release(c);
			c->pc_kind = PEER_CONN_HTTP;
		}
		return 0;
	case LWS_CALLBACK_RECEIVE:
		ws_receive(c, wsi, in, len);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return ws_writeable(c, wsi);
	case LWS_CALLBACK_HTTP:
	case LWS_CALLBACK_HTTP_BODY:
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
	case LWS_CALLBACK_HTTP_WRITEABLE:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (c != NULL)
			return peer_http_callback(c, wsi, reason, in, len);
		break;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}
