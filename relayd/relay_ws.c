/*
 * relay_ws.c: relayd's NIP-01 websocket side: message dispatch (EVENT,
 * REQ, CLOSE, NIP-45's COUNT, and NIP-42's AUTH, whose challenge goes
 * out on connect and again with every "auth-required:" answer),
 * subscriptions and their live fan-out, and each client's output queue.
 * Bad input gets a NOTICE, OK or CLOSED and never affects another
 * connection.  A REQ's stored events are produced as the client reads
 * them (a store cursor paused between the high- and low-water marks,
 * resumed from the writable callback), so that an answer of any size
 * reaches a client that reads and shares the loop with the others.
 */
#include <sys/random.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addrkey.h"
#include "event.h"
#include "json.h"
#include "log.h"
#include "nip01.h"
#include "negentropy.h"
#include "relayd.h"

void
relay_send(struct relay_conn *c, const char *s, size_t len)
{
	wss_send(&c->rc_out, s, len, 0);
}

void
relay_send_notice(struct relay_conn *c, const char *msg)
{
	wss_notice(&c->rc_out, msg);
}

/*
 * An OK.  A refusal "auth-required:" comes with the connection's NIP-42
 * challenge again (nips.md 1.8: a relay may send AUTH at any time), so
 * that a client that missed the first, sent with the 101 response, can
 * still answer it: nostr-sdk in Node.js does.
 */
void
relay_send_ok(struct relay_conn *c, const char *id_hex, int ok, const char *msg)
{
	wss_ok(&c->rc_out, id_hex, ok, msg);
	if (!ok && msg != NULL &&
	    strncmp(msg, NIP01_AUTH_REQUIRED,
		sizeof(NIP01_AUTH_REQUIRED) - 1) == 0 &&
	    c->rc_challenge[0] != '\0')
		wss_send_msg(&c->rc_out, "AUTH", c->rc_challenge, NULL);
}

/* Frees s's live events held for after its EOSE. */
static void
sub_drop_held(struct relay_sub *s)
{
	struct relay_held *h;

	while ((h = STAILQ_FIRST(&s->rs_held)) != NULL) {
		STAILQ_REMOVE_HEAD(&s->rs_held, rh_entry);
		s->rs_conn->rc_held_bytes -= h->rh_len;
		free(h);
	}
}

static void
sub_free(struct relay_sub *s)
{
	sub_drop_held(s);
	store_cursor_free(&s->rs_cur);
	filters_free(s->rs_filters, s->rs_nfilters);
	free(s);
}

static struct relay_sub *
sub_find(struct relay_conn *c, const char *id)
{
	struct relay_sub *s;

	LIST_FOREACH(s, &c->rc_subs, rs_entry)
		if (strcmp(s->rs_id, id) == 0)
			return s;
	return NULL;
}

static void
sub_remove(struct relay_conn *c, struct relay_sub *s)
{
	LIST_REMOVE(s, rs_entry);
	c->rc_nsubs--;
	if (s->rs_streaming)
		c->rc_nstreaming--;
	sub_free(s);
}

/*
 * A live event's message for s, whose stored events are still going
 * out: kept for after its EOSE (NIP-01: stored events, EOSE, then new
 * ones).  What is held counts with c's queue toward RELAY_MAX_OUTQ.
 */
static void
sub_hold(struct relay_sub *s, const struct buf *b)
{
	struct relay_conn *c = s->rs_conn;
	struct relay_held *h;

	if (c->rc_out.wq_too_slow)
		return;
	if (c->rc_out.wq_bytes + c->rc_held_bytes + b->b_len > RELAY_MAX_OUTQ) {
		wss_too_slow(&c->rc_out,
		    "dropping a client that does not read its new events");
		return;
	}
	if ((h = malloc(sizeof(*h) + b->b_len)) == NULL)
		fatal("sub_hold");
	h->rh_len = b->b_len;
	memcpy(h->rh_data, b->b_data, b->b_len);
	STAILQ_INSERT_TAIL(&s->rs_held, h, rh_entry);
	c->rc_held_bytes += b->b_len;
}

void
relay_fanout(const struct event *ev)
{
	struct relay_conn *c;
	struct relay_sub  *s;
	struct buf	   b = BUF_INIT;

	LIST_FOREACH(c, &relayd->conns, rc_entry) {
		LIST_FOREACH(s, &c->rc_subs, rs_entry) {
			if (!filter_match_any(s->rs_filters, s->rs_nfilters,
				ev))
				continue;
			buf_reset(&b);
			wss_event_msg(&b, s->rs_id, ev->json, ev->json_len);
			if (s->rs_streaming)
				sub_hold(s, &b);
			else
				relay_send(c, b.b_data, b.b_len);
		}
	}
	buf_free(&b);
}

struct req_ctx {
	struct relay_conn *c;
	const char	  *subid;
	struct buf	   b;
	size_t		   budget; /* bytes this turn may still queue */
};

/* One stored event of a REQ: queued; non-zero pauses the query. */
static int
req_event_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct req_ctx	  *rq = arg;
	struct relay_conn *c = rq->c;

	(void)seq;
	buf_reset(&rq->b);
	wss_event_msg(&rq->b, rq->subid, json, len);
	relay_send(c, rq->b.b_data, rq->b.b_len);
	rq->budget = rq->b.b_len < rq->budget ? rq->budget - rq->b.b_len : 0;
	return c->rc_out.wq_too_slow || rq->budget == 0 ||
	    c->rc_out.wq_bytes >= RELAY_REQ_HIGH_WATER;
}

/* No write has taken any of c's queue for max_read_stall_secs: drop c. */
static void
stall_check(lws_sorted_usec_list_t *sul)
{
	struct relay_conn *c =
	    lws_container_of(sul, struct relay_conn, rc_stall_sul);
	lws_usec_t max, idle;
	char	   why[96];

	if (c->rc_nstreaming == 0 || c->rc_out.wq_too_slow)
		return;
	max = (lws_usec_t)relayd->cfg.max_read_stall_secs * LWS_US_PER_SEC;
	if ((idle = wss_queue_stalled(&c->rc_out, lws_now_usecs())) < max) {
		lws_sul_schedule(relayd->ctx, 0, &c->rc_stall_sul, stall_check,
		    max - idle);
		return;
	}
	snprintf(why, sizeof(why), "too slow: nothing read for %d s",
	    relayd->cfg.max_read_stall_secs);
	wss_too_slow(&c->rc_out, why);
	lws_close_reason(c->rc_wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
	    (unsigned char *)why, strlen(why));
	/* Its socket is full: no writable callback would come to close it. */
	lws_set_timeout(c->rc_wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/* Starts the stall clock of c unless it runs. */
static void
stall_arm(struct relay_conn *c)
{
	if (!lws_dll2_is_detached(&c->rc_stall_sul.list))
		return;
	lws_sul_schedule(relayd->ctx, 0, &c->rc_stall_sul, stall_check,
	    (lws_usec_t)relayd->cfg.max_read_stall_secs * LWS_US_PER_SEC);
}

/*
 * Queues more of s's stored events, about budget bytes (at least one
 * event) and no more once c's queue reaches RELAY_REQ_HIGH_WATER; its
 * EOSE and held live events follow the last.  Returns the budget left,
 * or 0 once s is removed (a database error, answered with CLOSED).
 */
static size_t
sub_pump(struct relay_conn *c, struct relay_sub *s, size_t budget)
{
	struct relay_held *h;
	struct req_ctx	   rq;

	rq.c = c;
	rq.subid = s->rs_id;
	rq.budget = budget;
	memset(&rq.b, 0, sizeof(rq.b));
	if (store_query_page(relay_reader(), s->rs_filters, s->rs_nfilters,
		STORE_MAX_LIMIT, STORE_DEFAULT_LIMIT, &s->rs_cur, req_event_cb,
		&rq) == -1) {
		buf_free(&rq.b);
		wss_send_msg(&c->rc_out, "CLOSED", s->rs_id,
		    "error: database query failed");
		sub_remove(c, s);
		return 0;
	}
	buf_free(&rq.b);
	if (!s->rs_cur.sc_done) {
		/* Paused: the writable callback goes on (relay_ws_pump()). */
		stall_arm(c);
		return rq.budget;
	}
	wss_send_msg(&c->rc_out, "EOSE", s->rs_id, NULL);
	relay_hist_observe(&relayd->stats.req_eose, relay_now_ms() - s->rs_t0);
	while ((h = STAILQ_FIRST(&s->rs_held)) != NULL) {
		STAILQ_REMOVE_HEAD(&s->rs_held, rh_entry);
		c->rc_held_bytes -= h->rh_len;
		relay_send(c, h->rh_data, h->rh_len);
		free(h);
	}
	store_cursor_free(&s->rs_cur);
	s->rs_streaming = 0;
	c->rc_nstreaming--;
	return rq.budget;
}

/*
 * Goes on with c's REQs that have stored events left, once its queue is
 * low: a turn's RELAY_REQ_TURN_BYTES shared in turn among them, starting
 * one further each time so that no REQ waits behind another.
 */
static void
relay_ws_pump(struct relay_conn *c)
{
	struct relay_sub *s, *next;
	size_t		  budget = RELAY_REQ_TURN_BYTES, share, give;
	unsigned	  i, skip;

	if (c->rc_nstreaming == 0 || c->rc_out.wq_too_slow ||
	    c->rc_out.wq_bytes >= RELAY_REQ_LOW_WATER)
		return;
	skip = c->rc_pump_next++ % (unsigned)c->rc_nstreaming;
	share = budget / (size_t)c->rc_nstreaming;
	if (share == 0)
		share = 1;
	/* Two rounds: the first from skip on, the second from the start. */
	for (i = 0; i < 2 && budget > 0; i++) {
		for (s = LIST_FIRST(&c->rc_subs); s != NULL; s = next) {
			next = LIST_NEXT(s, rs_entry);
			if (!s->rs_streaming)
				continue;
			if (i == 0 && skip > 0) {
				skip--;
				continue;
			}
			give = share < budget ? share : budget;
			budget -= give - sub_pump(c, s, give);
			if (budget == 0 || c->rc_out.wq_too_slow ||
			    c->rc_out.wq_bytes >= RELAY_REQ_HIGH_WATER)
				return;
			if (c->rc_nstreaming == 0)
				return;
		}
	}
}

/* relay_proto_req()'s question: is id one of c's subscriptions? */
static int
sub_known(const char *id, void *arg)
{
	return sub_find(arg, id) != NULL;
}

/*
 * A REQ's or COUNT's id and filters into req (relay_proto_req()), or its
 * refusal answered: 0, or -1 when answered.
 */
static int
req_parse(struct relay_conn *c, const struct json *msg, size_t nsubs,
    int (*known)(const char *, void *), struct relay_req *req)
{
	char ans[RELAY_PROTO_ANSWER];

	switch (relay_proto_req(msg, nsubs, known, c, req, ans, sizeof(ans))) {
	case RELAY_ANS_NOTICE:
		relay_send_notice(c, ans);
		return -1;
	case RELAY_ANS_CLOSED:
		wss_send_msg(&c->rc_out, "CLOSED", req->rq_closed_id, ans);
		return -1;
	case RELAY_ANS_NONE:
		break;
	}
	return 0;
}

static void
handle_req(struct relay_conn *c, const struct json *msg)
{
	struct relay_sub *s, *old;
	struct relay_req  req;

	relayd->stats.msgs_in_req++;
	if (req_parse(c, msg, (size_t)c->rc_nsubs, sub_known, &req) == -1)
		return;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("handle_req");
	s->rs_conn = c;
	memcpy(s->rs_id, req.rq_id, sizeof(s->rs_id));
	s->rs_filters = req.rq_filters;
	s->rs_nfilters = req.rq_nfilters;
	STAILQ_INIT(&s->rs_held);
	store_cursor_init(&s->rs_cur, (int64_t)time(NULL));
	s->rs_t0 = relay_now_ms();
	/* A REQ with a known id replaces that subscription (NIP-01). */
	if ((old = sub_find(c, s->rs_id)) != NULL)
		sub_remove(c, old);
	LIST_INSERT_HEAD(&c->rc_subs, s, rs_entry);
	c->rc_nsubs++;
	s->rs_streaming = 1;
	c->rc_nstreaming++;
	/*
	 * A small answer goes out whole at once; a large one as the client
	 * reads it (relay_ws_writeable()).  With the queue already high (a
	 * burst of REQs) even the first page waits, or each REQ would queue
	 * an event of up to 1 MiB past the mark.
	 */
	if (c->rc_out.wq_bytes < RELAY_REQ_HIGH_WATER) {
		sub_pump(c, s, RELAY_REQ_TURN_BYTES);
		return;
	}
	if (store_cursor_fix(relay_reader(), &s->rs_cur) == -1) {
		wss_send_msg(&c->rc_out, "CLOSED", s->rs_id,
		    "error: database query failed");
		sub_remove(c, s);
		return;
	}
	stall_arm(c);
}

/* The writable callback of a websocket: its queue, then its REQs. */
static int
relay_ws_writeable(struct relay_conn *c)
{
	if (wss_queue_write(&c->rc_out, 1) == -1)
		return -1;
	relay_ws_pump(c);
	return 0;
}

static void
handle_close(struct relay_conn *c, const struct json *msg)
{
	struct relay_sub *s;
	const char	 *id;
	char		  ans[RELAY_PROTO_ANSWER];

	relayd->stats.msgs_in_close++;
	if (relay_proto_close(msg, &id, ans, sizeof(ans)) != RELAY_ANS_NONE)
		relay_send_notice(c, ans);
	else if (id != NULL && (s = sub_find(c, id)) != NULL)
		sub_remove(c, s);
}

/* relay_proto_req()'s question for a COUNT, which replaces nothing. */
static int
count_known(const char *id, void *arg)
{
	(void)id;
	(void)arg;
	return 0;
}

/*
 * NIP-45: ["COUNT", id, filter...] with the REQ filter rules, answered
 * ["COUNT", id, {"count": n}] at once.  The filters' matches are read as
 * (created_at, id) pairs from the indexes, their union counted once each;
 * past RELAY_COUNT_MAX pairs the answer says "approximate": true.
 */
static void
handle_count(struct relay_conn *c, const struct json *msg)
{
	struct relay_req req;
	struct neg_items it = { NULL, 0, 0 };
	struct buf	 b = BUF_INIT;
	size_t		 i;
	int		 more = 0, m, rc = 0;

	relayd->stats.msgs_in_other++;
	if (req_parse(c, msg, 0, count_known, &req) == -1)
		return;
	for (i = 0; i < req.rq_nfilters && rc != -1 && !more; i++) {
		rc = store_query_items(relay_reader(), &req.rq_filters[i],
		    (int64_t)time(NULL), RELAY_COUNT_MAX - it.ni_n,
		    neg_items_add, &it, &m);
		more = m;
	}
	if (rc == -1)
		wss_send_msg(&c->rc_out, "CLOSED", req.rq_id,
		    "error: database query failed");
	else {
		/* An event two filters match counts once. */
		neg_items_sort(it.ni_v, &it.ni_n);
		buf_adds(&b, "[\"COUNT\",");
		buf_add_jstr(&b, req.rq_id, strlen(req.rq_id));
		buf_printf(&b, ",{\"count\":%zu%s}]", it.ni_n,
		    more ? ",\"approximate\":true" : "");
		relay_send(c, b.b_data, b.b_len);
		buf_free(&b);
	}
	free(it.ni_v);
	relay_req_free(&req);
}

static void
handle_message(struct relay_conn *c, const char *data, size_t len)
{
	struct json_doc	  *doc;
	const struct json *msg;
	char		   ans[RELAY_PROTO_ANSWER];

	switch (relay_proto_message(data, len, &doc, &msg, ans, sizeof(ans))) {
	case RELAY_MSG_BAD:
	case RELAY_MSG_OTHER:
		relayd->stats.msgs_in_other++;
		break;
	case RELAY_MSG_EVENT:
		relayd->stats.msgs_in_event++;
		if (ans[0] == '\0')
			relay_ingest_client(c, json_at(msg, 1));
		break;
	case RELAY_MSG_REQ:
		handle_req(c, msg);
		/* Its answer goes out before the open batch's next step. */
		relay_ingest_yield();
		break;
	case RELAY_MSG_CLOSE:
		handle_close(c, msg);
		break;
	case RELAY_MSG_COUNT:
		handle_count(c, msg);
		relay_ingest_yield();
		break;
	case RELAY_MSG_AUTH:
		relayd->stats.msgs_in_auth++;
		if (ans[0] == '\0')
			relay_ingest_auth(c, json_at(msg, 1));
		break;
	case RELAY_MSG_NEG:
		relay_neg_message(c, msg);
		break;
	}
	if (ans[0] != '\0')
		relay_send_notice(c, ans);
	json_free(doc);
}

/* NIP-42: a fresh challenge for c, sent at once. */
static void
send_challenge(struct relay_conn *c)
{
	uint8_t r[RELAY_AUTH_CHALLENGE_BYTES];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		fatal("getrandom");
	hex_encode(r, sizeof(r), c->rc_challenge);
	wss_send_msg(&c->rc_out, "AUTH", c->rc_challenge, NULL);
}

static void
conn_release(struct relay_conn *c)
{
	struct relay_sub *s;

	relay_ingest_forget(c);
	lws_sul_cancel(&c->rc_stall_sul);
	while ((s = LIST_FIRST(&c->rc_subs)) != NULL)
		sub_remove(c, s);
	relay_neg_release(c);
	wss_queue_clear(&c->rc_out);
	buf_free(&c->rc_rx.wr_buf);
	LIST_REMOVE(c, rc_entry);
	relay_addr_detach(c);
	relayd->nconns--;
}

static void
ws_receive(struct relay_conn *c, struct lws *wsi, const void *in, size_t len)
{
	if (!wss_rx_frame(&c->rc_rx, wsi, in, len, RELAY_MAX_MESSAGE,
		&c->rc_out))
		return;
	handle_message(c, c->rc_rx.wr_buf.b_data ? c->rc_rx.wr_buf.b_data : "",
	    c->rc_rx.wr_buf.b_len);
	wss_rx_done(&c->rc_rx);
}

/*
 * 1 (and an HTTP 429 answer) if the address of wsi already holds
 * max_connections_per_ip websockets, else 0 (relay_addr.c counts them).
 */
static int
peer_over_cap(struct lws *wsi)
{
	char key[ADDRKEY_LEN];
	int  n, cap = relayd->cfg.max_connections_per_ip;

	if (cap <= 0)
		return 0;
	relay_peer_key(wsi, key, sizeof(key));
	if ((n = relay_addr_conns(key)) < cap)
		return 0;
	relayd->stats.connections_refused_ip++;
	log_info("refusing a websocket from %s: %d connections open from it",
	    key, n);
	lws_return_http_status(wsi, RELAY_HTTP_TOO_MANY,
	    "rate-limited: too many connections from your address");
	return 1;
}

/* The callback's -1 that closes c with the status relay_wire.c gave. */
static int
close_with(struct relay_conn *c)
{
	const char *why = c->rc_close_why != NULL ? c->rc_close_why : "";

	lws_close_reason(c->rc_wsi, (enum lws_close_status)c->rc_close,
	    (unsigned char *)(uintptr_t)why, strlen(why));
	return -1;
}

int
relay_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct relay_conn *c = user;
	char		   key[ADDRKEY_LEN];

	switch (reason) {
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* The signature thread has results (relay_ingest.c), or the
		 * checkpoint thread copied the WAL (relay_ckpt.c). */
		relay_ingest_verified();
		relay_ingest_resume();
		/* Or the sync thread made commits durable (relay_sync.c). */
		relay_ingest_synced();
		/* Or relay_wire.c saw an unmasked frame. */
		if (relay_wire_dirty())
			relay_wire_sweep();
		return 0;
	case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
		relay_wire_headers_done(wsi);
		if (relay_proxy_forwarded(wsi) == -1)
			return 1;
		break;
	case LWS_CALLBACK_WSI_DESTROY:
		relay_wire_destroy(wsi);
		break;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		relay_wire_headers_done(wsi);
		if (relay_proxy_forwarded(wsi) == -1)
			return 1;
		if (relayd->nconns >= relayd->cfg.max_connections) {
			log_info("refusing a websocket: %d connections open",
			    relayd->nconns);
			/* An answer the client can show, not a bare close. */
			lws_return_http_status(wsi,
			    HTTP_STATUS_SERVICE_UNAVAILABLE,
			    "too many connections, try again later");
			return 1;
		}
		return peer_over_cap(wsi);
	case LWS_CALLBACK_ESTABLISHED:
		memset(c, 0, sizeof(*c));
		c->rc_kind = CONN_WS;
		c->rc_wsi = wsi;
		c->rc_serial = ++relayd->next_serial;
		wss_queue_init(&c->rc_out, wsi, RELAY_MAX_OUTQ, c->rc_peer);
		LIST_INIT(&c->rc_subs);
		c->rc_tokens = relayd->cfg.max_events_per_minute;
		c->rc_tokens_at = relay_now_ms();
		relay_peer_name(wsi, c->rc_peer, sizeof(c->rc_peer));
		c->rc_import = relay_listen_is_import(wsi);
		relay_addr_attach(c, relay_peer_key(wsi, key, sizeof(key)));
		relay_wire_established(wsi);
		LIST_INSERT_HEAD(&relayd->conns, c, rc_entry);
		relayd->nconns++;
		relayd->stats.connections_total++;
		send_challenge(c);
		return 0;
	case LWS_CALLBACK_CLOSED:
		if (c && c->rc_kind == CONN_WS) {
			conn_release(c);
			c->rc_kind = CONN_HTTP;
		}
		return 0;
	case LWS_CALLBACK_RECEIVE:
		/* RFC 6455 5.1: not processed, the connection closes. */
		if (relay_wire_unmasked(wsi)) {
			relay_wire_sweep();
			return close_with(c);
		}
		ws_receive(c, wsi, in, len);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		if (c->rc_close != 0)
			return close_with(c);
		return relay_ws_writeable(c);
	case LWS_CALLBACK_HTTP:
		return relay_http_request(c, wsi);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return relay_http_writeable(c, wsi);
	case LWS_CALLBACK_HTTP_BODY:
		return relay_http_body(c, wsi, in, len);
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		return relay_http_body_done(c, wsi);
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (c && c->rc_kind == CONN_HTTP)
			relay_http_closed(c);
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}
