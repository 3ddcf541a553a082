/*
 * relay_ws.c: relayd's NIP-01 websocket side: message dispatch (EVENT,
 * REQ, CLOSE, NIP-45's COUNT, and NIP-42's AUTH, whose challenge goes
 * out on connect and again with every "auth-required:" answer),
 * subscriptions and their live fan-out, and each client's output queue.
 * Bad input gets a NOTICE, OK or CLOSED and never affects another
 * connection.
 */
#include <sys/random.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "json.h"
#include "log.h"
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
	    strncmp(msg, RELAY_AUTH_REQUIRED,
		sizeof(RELAY_AUTH_REQUIRED) - 1) == 0 &&
	    c->rc_challenge[0] != '\0')
		wss_send_msg(&c->rc_out, "AUTH", c->rc_challenge, NULL);
}

static void
sub_free(struct relay_sub *s)
{
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
	sub_free(s);
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
			relay_send(c, b.b_data, b.b_len);
		}
	}
	buf_free(&b);
}

struct req_ctx {
	struct relay_conn *c;
	const char	  *subid;
	struct buf	   b;
};

static int
req_event_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct req_ctx *rq = arg;

	(void)seq;
	buf_reset(&rq->b);
	wss_event_msg(&rq->b, rq->subid, json, len);
	relay_send(rq->c, rq->b.b_data, rq->b.b_len);
	return rq->c->rc_out.wq_too_slow;
}

/* relay_proto_req()'s question: is id one of c's subscriptions? */
static int
sub_known(const char *id, void *arg)
{
	return sub_find(arg, id) != NULL;
}

static void
handle_req(struct relay_conn *c, const struct json *msg)
{
	struct relay_sub *s, *old;
	struct relay_req  req;
	struct req_ctx	  rq;
	char		  ans[RELAY_PROTO_ANSWER];
	int64_t		  t0 = relay_now_ms();

	relayd->stats.msgs_in_req++;
	switch (relay_proto_req(msg, (size_t)c->rc_nsubs, sub_known, c, &req,
	    ans, sizeof(ans))) {
	case RELAY_ANS_NOTICE:
		relay_send_notice(c, ans);
		return;
	case RELAY_ANS_CLOSED:
		wss_send_msg(&c->rc_out, "CLOSED", req.rq_closed_id, ans);
		return;
	case RELAY_ANS_NONE:
		break;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("handle_req");
	s->rs_conn = c;
	memcpy(s->rs_id, req.rq_id, sizeof(s->rs_id));
	s->rs_filters = req.rq_filters;
	s->rs_nfilters = req.rq_nfilters;
	/* A REQ with a known id replaces that subscription (NIP-01). */
	if ((old = sub_find(c, s->rs_id)) != NULL)
		sub_remove(c, old);

	rq.c = c;
	rq.subid = s->rs_id;
	memset(&rq.b, 0, sizeof(rq.b));
	if (store_query(relayd->store, s->rs_filters, s->rs_nfilters,
		STORE_MAX_LIMIT, STORE_DEFAULT_LIMIT, (int64_t)time(NULL),
		req_event_cb, &rq) == -1) {
		buf_free(&rq.b);
		wss_send_msg(&c->rc_out, "CLOSED", s->rs_id,
		    "error: database query failed");
		sub_free(s);
		return;
	}
	wss_send_msg(&c->rc_out, "EOSE", s->rs_id, NULL);
	relay_hist_observe(&relayd->stats.req_eose, relay_now_ms() - t0);
	buf_free(&rq.b);
	LIST_INSERT_HEAD(&c->rc_subs, s, rs_entry);
	c->rc_nsubs++;
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
	char		 ans[RELAY_PROTO_ANSWER];
	size_t		 i;
	int		 more = 0, m, rc = 0;

	relayd->stats.msgs_in_other++;
	switch (relay_proto_req(msg, 0, count_known, NULL, &req, ans,
	    sizeof(ans))) {
	case RELAY_ANS_NOTICE:
		relay_send_notice(c, ans);
		return;
	case RELAY_ANS_CLOSED:
		wss_send_msg(&c->rc_out, "CLOSED", req.rq_closed_id, ans);
		return;
	case RELAY_ANS_NONE:
		break;
	}
	for (i = 0; i < req.rq_nfilters && rc != -1 && !more; i++) {
		rc = store_query_items(relayd->store, &req.rq_filters[i],
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
		break;
	case RELAY_MSG_CLOSE:
		handle_close(c, msg);
		break;
	case RELAY_MSG_COUNT:
		handle_count(c, msg);
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
	char peer[sizeof(((struct relay_conn *)NULL)->rc_peer)];
	int  n, cap = relayd->cfg.max_connections_per_ip;

	if (cap <= 0)
		return 0;
	relay_peer_name(wsi, peer, sizeof(peer));
	if ((n = relay_addr_conns(peer)) < cap)
		return 0;
	relayd->stats.connections_refused_ip++;
	log_info("refusing a websocket from %s: %d connections open from it",
	    peer, n);
	lws_return_http_status(wsi, RELAY_HTTP_TOO_MANY,
	    "rate-limited: too many connections from your address");
	return 1;
}

int
relay_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct relay_conn *c = user;

	switch (reason) {
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* The signature thread has results (relay_ingest.c), or the
		 * checkpoint thread copied the WAL (relay_ckpt.c). */
		relay_ingest_verified();
		relay_ingest_resume();
		return 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
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
		relay_addr_attach(c);
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
		ws_receive(c, wsi, in, len);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return wss_queue_write(&c->rc_out, 1);
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
