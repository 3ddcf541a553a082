/*
 * relay_ws.c: relayd's NIP-01 websocket side: message dispatch (EVENT,
 * REQ, CLOSE, and NIP-42's AUTH, whose challenge goes out on connect),
 * subscriptions and their live fan-out, and each client's output queue.
 * Bad input gets a NOTICE, OK or CLOSED and never affects another
 * connection.
 */
#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "json.h"
#include "log.h"
#include "relayd.h"

void
relay_send(struct relay_conn *c, const char *s, size_t len)
{
	struct relay_out	*o;

	if (c->rc_closing)
		return;
	if (c->rc_outbytes + len > RELAY_MAX_OUTQ) {
		log_info("%s: dropping a client that does not read",
		    c->rc_peer);
		c->rc_closing = 1;
		lws_callback_on_writable(c->rc_wsi);
		return;
	}
	if ((o = malloc(sizeof(*o) + LWS_PRE + len)) == NULL)
		fatal("relay_send");
	o->ro_len = len;
	memcpy(o->ro_data + LWS_PRE, s, len);
	STAILQ_INSERT_TAIL(&c->rc_outq, o, ro_entry);
	c->rc_outbytes += len;
	lws_callback_on_writable(c->rc_wsi);
}

void
relay_send_notice(struct relay_conn *c, const char *msg)
{
	struct buf	b = BUF_INIT;

	buf_adds(&b, "[\"NOTICE\",");
	buf_add_jstr(&b, msg, strlen(msg));
	buf_addc(&b, ']');
	relay_send(c, b.b_data, b.b_len);
	buf_free(&b);
}

void
relay_send_ok(struct relay_conn *c, const char *id_hex, int ok,
    const char *msg)
{
	struct buf	b = BUF_INIT;

	buf_adds(&b, "[\"OK\",");
	buf_add_jstr(&b, id_hex, strlen(id_hex));
	buf_adds(&b, ok ? ",true," : ",false,");
	buf_add_jstr(&b, msg, strlen(msg));
	buf_addc(&b, ']');
	relay_send(c, b.b_data, b.b_len);
	buf_free(&b);
}

static void
send_closed(struct relay_conn *c, const char *subid, const char *msg)
{
	struct buf	b = BUF_INIT;

	buf_adds(&b, "[\"CLOSED\",");
	buf_add_jstr(&b, subid, strlen(subid));
	buf_addc(&b, ',');
	buf_add_jstr(&b, msg, strlen(msg));
	buf_addc(&b, ']');
	relay_send(c, b.b_data, b.b_len);
	buf_free(&b);
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
	struct relay_sub	*s;

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
	struct relay_conn	*c;
	struct relay_sub	*s;
	struct buf		 b = BUF_INIT;

	LIST_FOREACH(c, &relayd->conns, rc_entry) {
		LIST_FOREACH(s, &c->rc_subs, rs_entry) {
			if (!filter_match_any(s->rs_filters, s->rs_nfilters,
			    ev))
				continue;
			buf_reset(&b);
			buf_adds(&b, "[\"EVENT\",");
			buf_add_jstr(&b, s->rs_id, strlen(s->rs_id));
			buf_addc(&b, ',');
			buf_add(&b, ev->json, ev->json_len);
			buf_addc(&b, ']');
			relay_send(c, b.b_data, b.b_len);
		}
	}
	buf_free(&b);
}

struct req_ctx {
	struct relay_conn	*c;
	const char		*subid;
	struct buf		 b;
};

static int
req_event_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct req_ctx	*rq = arg;

	(void)seq;
	buf_reset(&rq->b);
	buf_adds(&rq->b, "[\"EVENT\",");
	buf_add_jstr(&rq->b, rq->subid, strlen(rq->subid));
	buf_addc(&rq->b, ',');
	buf_add(&rq->b, json, len);
	buf_addc(&rq->b, ']');
	relay_send(rq->c, rq->b.b_data, rq->b.b_len);
	return rq->c->rc_closing;
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
	struct relay_sub	*s, *old;
	struct relay_req	 req;
	struct req_ctx		 rq;
	char			 ans[RELAY_PROTO_ANSWER];
	int64_t			 t0 = relay_now_ms();

	relayd->stats.msgs_in_req++;
	switch (relay_proto_req(msg, (size_t)c->rc_nsubs, sub_known, c, &req,
	    ans, sizeof(ans))) {
	case RELAY_ANS_NOTICE:
		relay_send_notice(c, ans);
		return;
	case RELAY_ANS_CLOSED:
		send_closed(c, req.rq_closed_id, ans);
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
		send_closed(c, s->rs_id, "error: database query failed");
		sub_free(s);
		return;
	}
	buf_reset(&rq.b);
	buf_adds(&rq.b, "[\"EOSE\",");
	buf_add_jstr(&rq.b, s->rs_id, strlen(s->rs_id));
	buf_addc(&rq.b, ']');
	relay_send(c, rq.b.b_data, rq.b.b_len);
	relay_hist_observe(&relayd->stats.req_eose, relay_now_ms() - t0);
	buf_free(&rq.b);
	LIST_INSERT_HEAD(&c->rc_subs, s, rs_entry);
	c->rc_nsubs++;
}

static void
handle_close(struct relay_conn *c, const struct json *msg)
{
	struct relay_sub	*s;
	const char		*id;
	char			 ans[RELAY_PROTO_ANSWER];

	relayd->stats.msgs_in_close++;
	if (relay_proto_close(msg, &id, ans, sizeof(ans)) != RELAY_ANS_NONE)
		relay_send_notice(c, ans);
	else if (id != NULL && (s = sub_find(c, id)) != NULL)
		sub_remove(c, s);
}

static void
handle_message(struct relay_conn *c, const char *data, size_t len)
{
	struct json_doc		*doc;
	const struct json	*msg;
	char			 ans[RELAY_PROTO_ANSWER];

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
	uint8_t		 r[RELAY_AUTH_CHALLENGE_BYTES];
	struct buf	 b = BUF_INIT;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		fatal("getrandom");
	hex_encode(r, sizeof(r), c->rc_challenge);
	buf_adds(&b, "[\"AUTH\",");
	buf_add_jstr(&b, c->rc_challenge, strlen(c->rc_challenge));
	buf_addc(&b, ']');
	relay_send(c, b.b_data, b.b_len);
	buf_free(&b);
}

static void
conn_release(struct relay_conn *c)
{
	struct relay_sub	*s;
	struct relay_out	*o;

	relay_ingest_forget(c);
	while ((s = LIST_FIRST(&c->rc_subs)) != NULL)
		sub_remove(c, s);
	relay_neg_release(c);
	while ((o = STAILQ_FIRST(&c->rc_outq)) != NULL) {
		STAILQ_REMOVE_HEAD(&c->rc_outq, ro_entry);
		free(o);
	}
	c->rc_outbytes = 0;
	buf_free(&c->rc_rx);
	LIST_REMOVE(c, rc_entry);
	relay_addr_detach(c);
	relayd->nconns--;
}

/* Writes a websocket frame header for a final text frame of len bytes. */
static size_t
frame_header(unsigned char *p, size_t len)
{
	size_t	n = 2, i;

	p[0] = 0x81;				/* FIN, text (RFC 6455 5.2) */
	if (len < 126)
		p[1] = (unsigned char)len;
	else if (len <= 0xffff) {
		p[1] = 126;
		p[2] = (unsigned char)(len >> 8);
		p[3] = (unsigned char)len;
		n = 4;
	} else {
		p[1] = 127;
		for (i = 0; i < 8; i++)
			p[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
		n = 10;
	}
	return n;
}

/*
 * Frames the small messages at the head of the queue into one buffer and
 * writes them with one call (a REQ's events, a batch's OKs): the server
 * side of a websocket frames without masking, and relayd negotiates no
 * extension, so a frame is a header and the text.  Returns what
 * lws_write() returns, 0 when the head is a large message.
 */
static int
write_coalesced(struct relay_conn *c, struct lws *wsi)
{
	static unsigned char	 buf[LWS_PRE + RELAY_WRITE_COALESCE];
	struct relay_out	*o;
	size_t			 n = 0;

	while ((o = STAILQ_FIRST(&c->rc_outq)) != NULL &&
	    n + RELAY_FRAME_HEADER_MAX + o->ro_len <= RELAY_WRITE_COALESCE) {
		n += frame_header(buf + LWS_PRE + n, o->ro_len);
		memcpy(buf + LWS_PRE + n, o->ro_data + LWS_PRE, o->ro_len);
		n += o->ro_len;
		STAILQ_REMOVE_HEAD(&c->rc_outq, ro_entry);
		c->rc_outbytes -= o->ro_len;
		free(o);
	}
	if (n == 0)
		return 0;
	return lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_RAW);
}

static int
ws_writeable(struct relay_conn *c, struct lws *wsi)
{
	struct relay_out	*o;
	int			 n;

	if (c->rc_closing) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
		    (unsigned char *)"too slow", 8);
		return -1;
	}
	while ((o = STAILQ_FIRST(&c->rc_outq)) != NULL) {
		if ((n = write_coalesced(c, wsi)) == 0) {
			/* Too large to share a write: on its own. */
			n = lws_write(wsi, o->ro_data + LWS_PRE, o->ro_len,
			    LWS_WRITE_TEXT);
			STAILQ_REMOVE_HEAD(&c->rc_outq, ro_entry);
			c->rc_outbytes -= o->ro_len;
			free(o);
		}
		if (n < 0)
			return -1;
		if (lws_send_pipe_choked(wsi))
			break;
	}
	if (!STAILQ_EMPTY(&c->rc_outq))
		lws_callback_on_writable(wsi);
	return 0;
}

static void
ws_receive(struct relay_conn *c, struct lws *wsi, const void *in, size_t len)
{
	int	final = lws_is_final_fragment(wsi);
	char	notice[128];

	if (lws_frame_is_binary(wsi)) {
		if (final)
			relay_send_notice(c, "invalid: binary messages are not "
			    "processed by this relay");
		return;
	}
	if (!c->rc_rx_oversized) {
		if (c->rc_rx.b_len + len > RELAY_MAX_MESSAGE) {
			c->rc_rx_oversized = 1;
			buf_free(&c->rc_rx);
		} else
			buf_add(&c->rc_rx, in, len);
	}
	if (!final)
		return;
	if (c->rc_rx_oversized) {
		snprintf(notice, sizeof(notice), "invalid: message too large "
		    "(at most %d bytes)", RELAY_MAX_MESSAGE);
		relay_send_notice(c, notice);
		c->rc_rx_oversized = 0;
		return;
	}
	handle_message(c, c->rc_rx.b_data ? c->rc_rx.b_data : "",
	    c->rc_rx.b_len);
	buf_reset(&c->rc_rx);
	/* Do not keep a large buffer around for an idle client. */
	if (c->rc_rx.b_cap > 256 * 1024)
		buf_free(&c->rc_rx);
}

/*
 * 1 (and an HTTP 429 answer) if the address of wsi already holds
 * max_connections_per_ip websockets, else 0 (relay_addr.c counts them).
 */
static int
peer_over_cap(struct lws *wsi)
{
	char	peer[sizeof(((struct relay_conn *)NULL)->rc_peer)];
	int	n, cap = relayd->cfg.max_connections_per_ip;

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
relay_ws_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct relay_conn	*c = user;

	switch (reason) {
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* The signature thread has results (relay_ingest.c). */
		relay_ingest_verified();
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
		STAILQ_INIT(&c->rc_outq);
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
		return ws_writeable(c, wsi);
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
