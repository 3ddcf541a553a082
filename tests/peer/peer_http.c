/*
 * peer_http.c: the test peer's plain HTTP on its websocket port: the
 * NIP-11 document for "Accept: application/nostr+json", and the control
 * endpoints a test scripts the peer with (requests with a body need a
 * Content-Length, as http_request() sends):
 *
 *   POST /config   a JSON object with any of the keys of struct
 *                  peer_config (integers: eose_delay_ms, max_results,
 *                  close_after_events, oversized_bytes, flood,
 *                  closed_tag: the code of an ASCII letter X, a REQ with
 *                  a "#X" filter gets CLOSED "error: ..."; booleans:
 *                  drop_eose, closed_rate_limited, notice_rate_limit,
 *                  ok_rate_limited, garbage, forge, auth, refuse, hang,
 *                  verify, neg: NEG-OPEN is served, not a NOTICE).
 *                  An unknown key or a wrong type is 400 and changes
 *                  nothing.
 *                  Answers the whole configuration.
 *   POST /reset    default configuration, empty store, empty log, and
 *                  the connections held by "hang" closed
 *   POST /events   JSON lines, one event each, stored without checks and
 *                  sent to matching live subscriptions; answers
 *                  {"stored","duplicates","errors":["line N: ..."]},
 *                  400 if any line failed
 *   GET  /events   the stored events as a JSON array, newest first
 *   GET  /log      {"connections","open","reqs":[{"conn","sub","filters",
 *                  "at_ms"}],"closes":[{"conn","sub","at_ms"}],
 *                  "opens":[{"conn","at_ms"}] (websocket connections),
 *                  "negs":[{"conn","sub","filter","at_ms"}],
 *                  "events_received","stored","auth":[{"conn","pubkey"}],
 *                  "max_concurrent_subs" (on one connection),
 *                  "max_total_subs" (over all of them),"bytes_in",
 *                  "bytes_out","hang_port","config"}; at_ms is
 *                  CLOCK_MONOTONIC, the
 *                  clock of wsc_now_ms(); bytes count websocket payloads
 *   GET  /stats    counts only, cheap to poll with many peers:
 *                  {"connections","open","subs" (open now),"live" (open
 *                  subscriptions whose every filter has limit 0),
 *                  "live_last_ms" (when the newest of those was opened),
 *                  "reqs","negs" (received, past the log's cap too),
 *                  "last_ms" (the last REQ or NEG-OPEN),"bytes_in"}
 *
 * Runs in peer, the scriptable relay of the integration tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "peer.h"

static void
http_clear(struct peer_conn *c)
{
	buf_free(&c->pc_body);
	c->pc_body_oversized = 0;
	free(c->pc_resp);
	c->pc_resp = NULL;
	c->pc_resplen = 0;
}

/*
 * Writes the status line and headers; the body (which the connection now
 * owns) follows in wss_http_final().  Returns the callback result.
 */
static int
respond(struct peer_conn *c, struct lws *wsi, unsigned status, const char *type,
    char *body, size_t len)
{
	unsigned char  hbuf[LWS_PRE + 1024], *start = hbuf + LWS_PRE;
	unsigned char *p = start, *end = hbuf + sizeof(hbuf) - 1;

	free(c->pc_resp);
	c->pc_resp = body;
	c->pc_resplen = len;
	if (lws_add_http_common_headers(wsi, status, type, len, &p, end))
		return 1;
	if (lws_add_http_header_by_name(wsi,
		(const unsigned char *)"access-control-allow-origin:",
		(const unsigned char *)"*", 1, &p, end))
		return 1;
	if (lws_finalize_write_http_header(wsi, start, &p, end))
		return 1;
	if (len == 0) {
		free(c->pc_resp);
		c->pc_resp = NULL;
		return lws_http_transaction_completed(wsi) ? -1 : 0;
	}
	lws_callback_on_writable(wsi);
	return 0;
}

static int
respond_json(struct peer_conn *c, struct lws *wsi, unsigned status, cJSON *doc)
{
	char *s;

	s = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (s == NULL)
		fatal("respond_json");
	return respond(c, wsi, status, "application/json", s, strlen(s));
}

/* {"error": msg} with the status. */
static int
respond_error(struct peer_conn *c, struct lws *wsi, unsigned status,
    const char *msg)
{
	cJSON *o;

	if ((o = cJSON_CreateObject()) == NULL)
		fatal("respond_error");
	cJSON_AddStringToObject(o, "error", msg);
	return respond_json(c, wsi, status, o);
}

static char *
nip11_text(size_t *len)
{
	cJSON *doc, *arr;
	char  *s;

	if ((doc = cJSON_CreateObject()) == NULL)
		fatal("nip11_text");
	cJSON_AddStringToObject(doc, "name", PEER_NAME);
	cJSON_AddStringToObject(doc, "description",
	    "a scriptable relay for "
	    "graspd's integration tests");
	cJSON_AddStringToObject(doc, "software", "graspd tests/peer");
	arr = cJSON_AddArrayToObject(doc, "supported_nips");
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(1));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(11));
	if ((s = cJSON_PrintUnformatted(doc)) == NULL)
		fatal("nip11_text");
	cJSON_Delete(doc);
	*len = strlen(s);
	return s;
}

static char *
events_text(size_t *len)
{
	struct buf b = BUF_INIT;
	size_t	   i;

	buf_addc(&b, '[');
	for (i = 0; i < peer->nevents; i++) {
		if (i > 0)
			buf_addc(&b, ',');
		buf_add(&b, peer->events[i]->json, peer->events[i]->json_len);
	}
	buf_addc(&b, ']');
	return buf_release(&b, len);
}

/* POST /events: one event per line; blank lines are skipped. */
static int
post_events(struct peer_conn *c, struct lws *wsi)
{
	struct event *ev;
	const char   *p = c->pc_body.b_data, *end, *nl;
	char	      err[256], msg[320];
	cJSON	     *o, *errs;
	int	      stored = 0, dup = 0, lineno = 0, r;

	if ((o = cJSON_CreateObject()) == NULL)
		fatal("post_events");
	errs = cJSON_AddArrayToObject(o, "errors");
	end = p + c->pc_body.b_len;
	for (; p != NULL && p < end; p = nl ? nl + 1 : NULL) {
		size_t n;

		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl ? nl : end) - p);
		while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
			n--;
		if (n == 0)
			continue;
		if ((ev = event_parse(p, n, err, sizeof(err))) == NULL) {
			snprintf(msg, sizeof(msg), "line %d: %s", lineno, err);
			cJSON_AddItemToArray(errs, cJSON_CreateString(msg));
			continue;
		}
		if ((r = peer_store_add(ev)) == 1) {
			stored++;
			peer_fanout(ev);
		} else if (r == 0)
			dup++;
		else {
			snprintf(msg, sizeof(msg), "line %d: store full",
			    lineno);
			cJSON_AddItemToArray(errs, cJSON_CreateString(msg));
		}
	}
	cJSON_AddNumberToObject(o, "stored", stored);
	cJSON_AddNumberToObject(o, "duplicates", dup);
	return respond_json(c, wsi,
	    cJSON_GetArraySize(errs) ? HTTP_STATUS_BAD_REQUEST : HTTP_STATUS_OK,
	    o);
}

static int
post_config(struct peer_conn *c, struct lws *wsi)
{
	cJSON *obj;
	char   err[256];
	int    r;

	if (c->pc_body.b_len == 0)
		return respond_json(c, wsi, HTTP_STATUS_OK, peer_config_json());
	obj = cJSON_ParseWithLength(c->pc_body.b_data, c->pc_body.b_len);
	if (obj == NULL)
		return respond_error(c, wsi, HTTP_STATUS_BAD_REQUEST,
		    "the body is not JSON");
	r = peer_config_apply(obj, err, sizeof(err));
	cJSON_Delete(obj);
	if (r == -1)
		return respond_error(c, wsi, HTTP_STATUS_BAD_REQUEST, err);
	log_debug("config changed");
	return respond_json(c, wsi, HTTP_STATUS_OK, peer_config_json());
}

static int
http_post(struct peer_conn *c, struct lws *wsi)
{
	if (c->pc_body_oversized)
		return respond_error(c, wsi, HTTP_STATUS_REQ_ENTITY_TOO_LARGE,
		    "body too large");
	if (strcmp(c->pc_uri, "/config") == 0)
		return post_config(c, wsi);
	if (strcmp(c->pc_uri, "/reset") == 0) {
		peer_reset();
		log_debug("reset");
		return respond_json(c, wsi, HTTP_STATUS_OK, peer_config_json());
	}
	if (strcmp(c->pc_uri, "/events") == 0)
		return post_events(c, wsi);
	return respond_error(c, wsi, HTTP_STATUS_NOT_FOUND, "no such endpoint");
}

static int
wants_nip11(struct lws *wsi)
{
	char accept[512];

	if (lws_hdr_copy(wsi, accept, sizeof(accept), WSI_TOKEN_HTTP_ACCEPT) <=
	    0)
		return 0;
	return strstr(accept, "application/nostr+json") != NULL;
}

/* 1 if the request announced a body (a Content-Length above 0). */
static int
has_body(struct lws *wsi)
{
	char cl[32];

	if (lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) <=
	    0)
		return 0;
	return strtoull(cl, NULL, 10) > 0;
}

static int
http_request(struct peer_conn *c, struct lws *wsi)
{
	char  *uri, *body;
	int    method, urilen;
	size_t len;

	http_clear(c);
	memset(c, 0, sizeof(*c));
	c->pc_kind = PEER_CONN_HTTP;
	method = lws_http_get_uri_and_method(wsi, &uri, &urilen);
	if (method == LWSHUMETH_POST) {
		if (urilen < 0 || (size_t)urilen >= sizeof(c->pc_uri))
			return respond_error(c, wsi, HTTP_STATUS_NOT_FOUND,
			    "no such endpoint");
		memcpy(c->pc_uri, uri, (size_t)urilen);
		c->pc_uri[urilen] = '\0';
		c->pc_method = method;
		/* lws calls back with the body, then BODY_COMPLETION. */
		if (has_body(wsi))
			return 0;
		return http_post(c, wsi);
	}
	if (method == LWSHUMETH_OPTIONS)
		return respond(c, wsi, HTTP_STATUS_NO_CONTENT, NULL, NULL, 0);
	if (method != LWSHUMETH_GET)
		return respond_error(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
		    "method not allowed");
	if (wants_nip11(wsi)) {
		body = nip11_text(&len);
		return respond(c, wsi, HTTP_STATUS_OK, "application/nostr+json",
		    body, len);
	}
	if (urilen == 4 && memcmp(uri, "/log", 4) == 0) {
		body = peer_log_text();
		return respond(c, wsi, HTTP_STATUS_OK, "application/json", body,
		    strlen(body));
	}
	if (urilen == 6 && memcmp(uri, "/stats", 6) == 0) {
		body = peer_stats_text();
		return respond(c, wsi, HTTP_STATUS_OK, "application/json", body,
		    strlen(body));
	}
	if (urilen == 7 && memcmp(uri, "/events", 7) == 0) {
		body = events_text(&len);
		return respond(c, wsi, HTTP_STATUS_OK, "application/json", body,
		    len);
	}
	if (urilen == 1 && uri[0] == '/') {
		struct buf b = BUF_INIT;

		buf_adds(&b,
		    PEER_NAME
		    ": a scriptable Nostr relay for tests; "
		    "POST /config, /reset, /events; GET /log, /stats, "
		    "/events\n");
		body = buf_release(&b, &len);
		return respond(c, wsi, HTTP_STATUS_OK, "text/plain", body, len);
	}
	return respond_error(c, wsi, HTTP_STATUS_NOT_FOUND, "no such endpoint");
}

int
peer_http_callback(struct peer_conn *c, struct lws *wsi,
    enum lws_callback_reasons reason, void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return http_request(c, wsi);
	case LWS_CALLBACK_HTTP_BODY:
		if (c->pc_body_oversized)
			return 0;
		if (c->pc_body.b_len + len > PEER_MAX_HTTP_BODY) {
			c->pc_body_oversized = 1;
			buf_free(&c->pc_body);
		} else
			buf_add(&c->pc_body, in, len);
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		return http_post(c, wsi);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return wss_http_final(wsi, &c->pc_resp, c->pc_resplen);
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (c->pc_kind == PEER_CONN_HTTP)
			http_clear(c);
		return 0;
	default:
		return 0;
	}
}
