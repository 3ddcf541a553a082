/*
 * relay_http.c: relayd's plain HTTP on the relay port: the NIP-11 relay
 * information document for "Accept: application/nostr+json", the pages
 * for people (relay_web.c), 204 for OPTIONS, git smart HTTP at
 * /<npub>/<id>.git/ (relay_git.c), 404 otherwise.  Every response
 * carries the CORS headers GRASP-01 requires.
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fnv.h"
#include "counter.h"
#include "log.h"
#include "mem.h"
#include "relayd.h"

/* GRASP-01 (reference brief 2.5): CORS on every response. */
static const struct {
	const char *name;
	const char *value;
} cors[] = {
	{ "access-control-allow-origin:", "*" },
	{ "access-control-allow-methods:", "GET, POST, OPTIONS" },
	{ "access-control-allow-headers:",
	    "Authorization, Content-Type, "
	    "Git-Protocol, Accept, Content-Encoding, X-Requested-With" },
};

/* Where an answer is put together; one at a time, so one buffer. */
static unsigned char
    out[LWS_PRE + RELAY_HTTP_HEADERS_MAX + RELAY_HTTP_INLINE_MAX];

/*
 * The HTTP/1.x NIP-11 answer after its status line (which lws writes per
 * request, for the client's HTTP version): length, type, CORS, server,
 * the blank line, the document.  Made with the document, so a request
 * only copies it.
 */
static char  *nip11_tail;
static size_t nip11_tail_len;

/* The tail above for the document s of len bytes; caller frees. */
static char *
nip11_tail_make(const char *s, size_t len, size_t *taillen)
{
	struct buf b = BUF_INIT;
	size_t	   i;

	buf_printf(&b, "content-length: %zu\r\n", len);
	buf_adds(&b, "content-type: " RELAY_NIP11_TYPE "\r\n");
	for (i = 0; i < sizeof(cors) / sizeof(cors[0]); i++)
		buf_printf(&b, "%s %s\r\n", cors[i].name, cors[i].value);
	buf_adds(&b, "server: graspd\r\n\r\n");
	buf_add(&b, s, len);
	return buf_release(&b, taillen);
}

/* GRASP-05: what NIP-11 "curation" says while archive mode is on. */
static const char *
archive_curation(const struct config *cfg)
{
	if (!config_archiving(cfg))
		return NULL;
	if (cfg->archive_read_only)
		return cfg->archive_all ?
		    "Read-only archive (GRASP-05) of "
		    "every repository found on the network" :
		    cfg->archive_whitelist.n ?
		    "Read-only archive (GRASP-05) "
		    "of whitelisted repositories and their maintainers" :
		    "Read-only archive (GRASP-05) of the repositories of the "
		    "listed GRASP servers";
	return cfg->archive_all ?
	    "Archives (GRASP-05) every repository "
	    "found on the network, and hosts those that list this service" :
	    cfg->archive_whitelist.n ?
	    "Archives (GRASP-05) whitelisted "
	    "repositories, and hosts those that list this service" :
	    "Archives (GRASP-05) the repositories of the listed GRASP "
	    "servers, and hosts those that list this service";
}

int
relay_nip11_build(void)
{
	cJSON		*doc, *lim, *arr;
	char		*s, name[512];
	const char	*cur;
	static const int nips[] = { 1, 9, 11, 34, 40, 42, 45, 70, 77 };
	size_t		 i;

	if ((doc = cJSON_CreateObject()) == NULL)
		return -1;
	if (relayd->cfg.relay_name && relayd->cfg.relay_name[0])
		snprintf(name, sizeof(name), "%s", relayd->cfg.relay_name);
	else
		snprintf(name, sizeof(name), "%s grasp relay",
		    relayd->cfg.domain);
	cJSON_AddStringToObject(doc, "name", name);
	cJSON_AddStringToObject(doc, "description",
	    relayd->cfg.relay_description);
	cJSON_AddStringToObject(doc, "pubkey", relayd->owner_hex);
	cJSON_AddStringToObject(doc, "icon", relayd->cfg.relay_icon);
	if (relayd->cfg.relay_contact != NULL)
		cJSON_AddStringToObject(doc, "contact",
		    relayd->cfg.relay_contact);
	if (relayd->cfg.relay_software[0] != '\0')
		cJSON_AddStringToObject(doc, "software",
		    relayd->cfg.relay_software);
	cJSON_AddStringToObject(doc, "version", RELAY_VERSION);
	arr = cJSON_AddArrayToObject(doc, "supported_nips");
	for (i = 0; i < sizeof(nips) / sizeof(nips[0]); i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(nips[i]));
	arr = cJSON_AddArrayToObject(doc, "supported_grasps");
	cJSON_AddItemToArray(arr, cJSON_CreateString("GRASP-01"));
	/* syncd runs GRASP-02; GRASP-03 is an overlay on it, "effective
	 * only while that manager is running": not while syncd is stopped
	 * on request. */
	if (relayd->cfg.sync_enabled)
		cJSON_AddItemToArray(arr, cJSON_CreateString("GRASP-02"));
	if (relayd->cfg.sync_enabled && relayd->cfg.sync_plus_enabled &&
	    !relay_chan_role_stopped(ROLE_SYNCD))
		cJSON_AddItemToArray(arr, cJSON_CreateString("GRASP-03"));
	if (config_archiving(&relayd->cfg))
		cJSON_AddItemToArray(arr, cJSON_CreateString("GRASP-05"));
	if (relayd->cfg.grasp06_enable)
		cJSON_AddItemToArray(arr, cJSON_CreateString("GRASP-06"));
	cJSON_AddStringToObject(doc, "repo_acceptance_criteria",
	    relayd->cfg.repo_whitelist.n ?
		"Announcements of whitelisted repositories that list this service "
		"in both their clone and relays tags, their maintainers' "
		"announcements, and the events that reference them." :
		"Announcements that list this service in both their clone and "
		"relays tags, their maintainers' announcements, and the events "
		"that reference them.");
	if ((cur = archive_curation(&relayd->cfg)) != NULL)
		cJSON_AddStringToObject(doc, "curation", cur);
	else if (relayd->cfg.repo_whitelist.n)
		cJSON_AddStringToObject(doc, "curation",
		    "Accepts only "
		    "whitelisted repositories and maintainers that list this "
		    "service");
	lim = cJSON_AddObjectToObject(doc, "limitation");
	cJSON_AddNumberToObject(lim, "max_message_length", RELAY_MAX_MESSAGE);
	/* max_event_size's range keeps ["EVENT",<event>] within the first. */
	cJSON_AddNumberToObject(lim, "max_event_size",
	    relayd->cfg.max_event_size);
	cJSON_AddNumberToObject(lim, "max_subscriptions", RELAY_MAX_SUBS);
	cJSON_AddNumberToObject(lim, "max_limit", STORE_MAX_LIMIT);
	cJSON_AddNumberToObject(lim, "default_limit", STORE_DEFAULT_LIMIT);
	cJSON_AddNumberToObject(lim, "max_subid_length", RELAY_MAX_SUBID);
	cJSON_AddNumberToObject(lim, "max_event_tags", RELAY_MAX_TAGS);
	cJSON_AddNumberToObject(lim, "max_content_length", RELAY_MAX_CONTENT);
	cJSON_AddNumberToObject(lim, "created_at_upper_limit",
	    RELAY_CREATED_AT_AHEAD);
	cJSON_AddNumberToObject(lim, "max_filters", RELAY_MAX_FILTERS);
	cJSON_AddNumberToObject(lim, "max_connections",
	    relayd->cfg.max_connections);
	cJSON_AddNumberToObject(lim, "max_events_per_minute",
	    relayd->cfg.max_events_per_minute);
	cJSON_AddBoolToObject(lim, "auth_required", 0);
	cJSON_AddBoolToObject(lim, "payment_required", 0);
	cJSON_AddBoolToObject(lim, "restricted_writes", 1);
	s = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (s == NULL)
		return -1;
	free(relayd->nip11);
	relayd->nip11 = s;
	relayd->nip11_len = strlen(s);
	free(nip11_tail);
	nip11_tail = nip11_tail_make(s, relayd->nip11_len, &nip11_tail_len);
	return 0;
}

/* 1 if wsi's request is a HEAD. */
static int
is_head(struct lws *wsi)
{
	return lws_hdr_total_length(wsi, WSI_TOKEN_HEAD_URI) > 0;
}

/*
 * Writes the status line and headers, with "Retry-After: retry_s" when
 * retry_s > 0; the body (which the connection now owns) follows in
 * relay_http_writeable(), except after a HEAD, which gets the headers
 * alone (RFC 9110 9.3.2).  Returns the callback result.
 */
static int
respond_full(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len, int retry_s,
    const char *const *hdrs)
{
	unsigned char *start = out + LWS_PRE, *p = start;
	unsigned char *end = start + RELAY_HTTP_HEADERS_MAX - 1;
	char	       secs[16];

	c->rc_kind = CONN_HTTP;
	free(c->rc_body);
	c->rc_body = body;
	c->rc_bodylen = len;
	if (lws_add_http_common_headers(wsi, status, type, len, &p, end))
		return 1;
	if (relay_http_add_cors(wsi, &p, end))
		return 1;
	if (lws_add_http_header_by_name(wsi, (const unsigned char *)"server:",
		(const unsigned char *)"graspd", 6, &p, end))
		return 1;
	snprintf(secs, sizeof(secs), "%d", retry_s);
	if (retry_s > 0 &&
	    lws_add_http_header_by_name(wsi,
		(const unsigned char *)"retry-after:",
		(const unsigned char *)secs, (int)strlen(secs), &p, end))
		return 1;
	for (; hdrs != NULL && hdrs[0] != NULL; hdrs += 2)
		if (lws_add_http_header_by_name(wsi,
			(const unsigned char *)hdrs[0],
			(const unsigned char *)hdrs[1], (int)strlen(hdrs[1]),
			&p, end))
			return 1;
	if (is_head(wsi)) {
		/* Content-Length says what a GET would carry. */
		free(c->rc_body);
		c->rc_body = NULL;
		c->rc_bodylen = len = 0;
	}
	if (len > RELAY_HTTP_INLINE_MAX) {
		if (lws_finalize_write_http_header(wsi, start, &p, end))
			return 1;
		lws_callback_on_writable(wsi);
		return 0;
	}
	/* A small body (NIP-11, errors) leaves with its headers at once. */
	if (lws_finalize_http_header(wsi, &p, end))
		return 1;
	if (len > 0)
		memcpy(p, body, len);
	free(c->rc_body);
	c->rc_body = NULL;
	if (lws_write(wsi, start, (size_t)(p - start) + len,
		LWS_WRITE_HTTP_HEADERS) < 0)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int
respond_retry(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len, int retry_s)
{
	return respond_full(c, wsi, status, type, body, len, retry_s, NULL);
}

int
relay_http_respond_hdrs(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len, const char *const *hdrs)
{
	return respond_full(c, wsi, status, type, body, len, 0, hdrs);
}

static int
respond(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len)
{
	return respond_retry(c, wsi, status, type, body, len, 0);
}

/* RFC 9110 5.6.7: an HTTP date, "Sun, 06 Nov 1994 08:49:37 GMT". */
static const char *const wday[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri",
	"Sat" };
static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

int
relay_http_date(int64_t t, char *out, size_t len)
{
	struct tm tm;
	time_t	  tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL)
		return -1;
	snprintf(out, len, "%s, %02d %s %04d %02d:%02d:%02d GMT",
	    wday[tm.tm_wday], tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900,
	    tm.tm_hour, tm.tm_min, tm.tm_sec);
	return 0;
}

int64_t
relay_http_date_parse(const char *s)
{
	struct tm tm;
	char	  m[4], z[4];
	int	  i, n = 0;

	memset(&tm, 0, sizeof(tm));
	/* Only the preferred IMF-fixdate: the one graspd sends. */
	if (strlen(s) < 29 || s[3] != ',' ||
	    sscanf(s + 4, " %2d %3s %4d %2d:%2d:%2d %3s%n", &tm.tm_mday, m,
		&tm.tm_year, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, z, &n) != 7 ||
	    strcmp(z, "GMT") != 0 || s[4 + n] != '\0')
		return -1;
	for (i = 0; i < 12 && strcmp(m, mon[i]) != 0; i++)
		;
	if (i == 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_mon = i;
	tm.tm_year -= 1900;
	return (int64_t)timegm(&tm);
}

/*
 * 1 if the request's validators match: If-None-Match names etag (or
 * "*"), or, without If-None-Match, If-Modified-Since is no earlier than
 * mtime (RFC 9110 13.1.1, 13.1.3, 13.2.2).
 */
static int
not_modified(struct lws *wsi, const char *etag, int64_t mtime)
{
	char	h[512];
	int64_t since;

	if (lws_hdr_copy(wsi, h, sizeof(h), WSI_TOKEN_HTTP_IF_NONE_MATCH) > 0) {
		return strstr(h, etag) != NULL || strchr(h, '*') != NULL;
	}
	if (mtime <= 0 ||
	    lws_hdr_copy(wsi, h, sizeof(h), WSI_TOKEN_HTTP_IF_MODIFIED_SINCE) <=
		0)
		return 0;
	since = relay_http_date_parse(h);
	return since >= 0 && since >= mtime;
}

int
relay_http_page(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len, int64_t mtime)
{
	const char *hdr[2 * 7 + 1];
	char	    etag[24], date[40];
	uint64_t    h;
	size_t	    n = 0;

	h = fnv1a64(fnv1a64(FNV1A64_BASIS, body, len), type, strlen(type));
	snprintf(etag, sizeof(etag), "\"%016llx\"", (unsigned long long)h);
	hdr[n++] = "content-security-policy:";
	hdr[n++] = RELAY_WEB_CSP;
	hdr[n++] = "x-content-type-options:";
	hdr[n++] = "nosniff";
	hdr[n++] = "referrer-policy:";
	hdr[n++] = "no-referrer";
	if (status == HTTP_STATUS_OK) {
		hdr[n++] = "etag:";
		hdr[n++] = etag;
		hdr[n++] = "cache-control:";
		hdr[n++] = "no-cache";
		if (mtime > 0 &&
		    relay_http_date(mtime, date, sizeof(date)) == 0) {
			hdr[n++] = "last-modified:";
			hdr[n++] = date;
		}
		hdr[n] = NULL;
		if (not_modified(wsi, etag, mtime)) {
			free(body);
			return respond_full(c, wsi, HTTP_STATUS_NOT_MODIFIED,
			    NULL, NULL, 0, 0, hdr);
		}
	}
	hdr[n] = NULL;
	return respond_full(c, wsi, status, type, body, len, 0, hdr);
}

int
relay_http_add_cors(struct lws *wsi, unsigned char **p, unsigned char *end)
{
	size_t i;

	for (i = 0; i < sizeof(cors) / sizeof(cors[0]); i++)
		if (lws_add_http_header_by_name(wsi,
			(const unsigned char *)cors[i].name,
			(const unsigned char *)cors[i].value,
			(int)strlen(cors[i].value), p, end))
			return 1;
	return 0;
}

int
relay_http_respond(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *type, char *body, size_t len)
{
	return respond(c, wsi, status, type, body, len);
}

int
relay_http_too_many(struct relay_conn *c, struct lws *wsi, int retry_s,
    const char *text)
{
	char *body = strdup(text);

	if (body == NULL)
		fatal("relay_http_too_many");
	return respond_retry(c, wsi, RELAY_HTTP_TOO_MANY, "text/plain", body,
	    strlen(body), retry_s);
}

int
relay_http_body(struct relay_conn *c, struct lws *wsi, const void *in,
    size_t len)
{
	return relay_git_body(c, wsi, in, len);
}

int
relay_http_body_done(struct relay_conn *c, struct lws *wsi)
{
	return relay_git_body_done(c, wsi);
}

void
relay_http_closed(struct relay_conn *c)
{
	relay_git_close(c);
	relay_web_close(c);
	relay_web_git_close(c);
	free(c->rc_body);
	c->rc_body = NULL;
}

int
relay_http_writeable(struct relay_conn *c, struct lws *wsi)
{
	if (c->rc_git != NULL)
		return relay_git_writeable(c, wsi);
	if (c->rc_web != NULL)
		return relay_web_writeable(c, wsi);
	if (c->rc_wgit != NULL)
		return relay_web_git_writeable(c, wsi);
	return wss_http_final(wsi, &c->rc_body, c->rc_bodylen);
}

/* A copy of s (mem.h's xstrdup()), its length in *len. */
static char *
dup_len(const char *s, size_t *len)
{
	char *d = xstrdup(s);

	*len = strlen(d);
	return d;
}

/*
 * The NIP-11 answer in one write, without building anything: the status
 * line from lws, then the tail made with the document.  HTTP/2 (lws
 * writes the status in HPACK, and counts the body against the length it
 * was given) takes the general way.
 */
static int
respond_nip11(struct relay_conn *c, struct lws *wsi)
{
	unsigned char *start = out + LWS_PRE, *p = start;
	unsigned char *end = out + sizeof(out);
	char	      *body;
	size_t	       len;

	c->rc_kind = CONN_HTTP;
	if (lws_add_http_header_status(wsi, HTTP_STATUS_OK, &p, end))
		return 1;
	if (p - start < 5 || memcmp(start, "HTTP/", 5) != 0 ||
	    nip11_tail_len > (size_t)(end - p) || is_head(wsi)) {
		body = dup_len(relayd->nip11, &len);
		return respond(c, wsi, HTTP_STATUS_OK, RELAY_NIP11_TYPE, body,
		    len);
	}
	memcpy(p, nip11_tail, nip11_tail_len);
	p += nip11_tail_len;
	if (lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS) <
	    0)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int
wants_nip11(struct lws *wsi)
{
	char accept[512];

	if (lws_hdr_copy(wsi, accept, sizeof(accept), WSI_TOKEN_HTTP_ACCEPT) <=
	    0)
		return 0;
	return strstr(accept, RELAY_NIP11_TYPE) != NULL;
}

void
relay_metric(cJSON *arr, const char *name, double v)
{
	cJSON *m = cJSON_CreateArray();

	cJSON_AddItemToArray(m, cJSON_CreateString(name));
	cJSON_AddItemToArray(m, cJSON_CreateNumber(v));
	cJSON_AddItemToArray(arr, m);
}

/* relayd's figures, each once (counter.h), in the order /metrics lists
 * their families. */
#define ST(f)	    offsetof(struct relay_stats, f)
#define EVENTS_HELP "Client events by result"
#define ARRIVAL_HELP \
	"Arriving events checked for a stored copy before their " \
	"signature: looked up, or new by the filter of stored ids"
static const struct counter relay_counters[] = {
	{ NULL, "graspd_relay_uptime_seconds", GAUGE, NULL, ST(uptime) },
	{ "connections_open", "graspd_relay_connections_active", GAUGE, NULL,
	    ST(connections_open) },
	{ "subscriptions_open", NULL, GAUGE, NULL, ST(subscriptions_open) },
	{ NULL, "graspd_relay_connections_total", COUNTER, NULL,
	    ST(connections_total) },
	{ NULL, "graspd_relay_connections_refused_total{reason=\"per_ip\"}",
	    COUNTER, NULL, ST(connections_refused_ip) },
	{ NULL,
	    "graspd_relay_connections_refused_total{reason=\"pending_per_ip\"}",
	    COUNTER, NULL, ST(connections_refused_pending) },
	{ NULL,
	    "graspd_relay_connections_refused_total{reason=\"proxy_header\"}",
	    COUNTER, NULL, ST(connections_refused_proxy) },
	{ NULL,
	    "graspd_relay_requests_refused_total{reason=\"x_forwarded_for\"}",
	    COUNTER, NULL, ST(requests_refused_xff) },
	{ NULL, "graspd_relay_websockets_closed_total{reason=\"unmasked\"}",
	    COUNTER, NULL, ST(ws_closed_unmasked) },
	{ NULL,
	    "graspd_relay_websockets_closed_total{reason=\"frame_timeout\"}",
	    COUNTER, NULL, ST(ws_closed_slow_frame) },
	{ NULL, "graspd_relay_messages_received_total{type=\"EVENT\"}", COUNTER,
	    NULL, ST(msgs_in_event) },
	{ NULL, "graspd_relay_messages_received_total{type=\"REQ\"}", COUNTER,
	    NULL, ST(msgs_in_req) },
	{ NULL, "graspd_relay_messages_received_total{type=\"CLOSE\"}", COUNTER,
	    NULL, ST(msgs_in_close) },
	{ NULL, "graspd_relay_messages_received_total{type=\"NEG\"}", COUNTER,
	    NULL, ST(msgs_in_neg) },
	{ NULL, "graspd_relay_messages_received_total{type=\"AUTH\"}", COUNTER,
	    NULL, ST(msgs_in_auth) },
	{ NULL, "graspd_relay_messages_received_total{type=\"other\"}", COUNTER,
	    NULL, ST(msgs_in_other) },
	{ NULL, "graspd_relay_auth_total{result=\"accepted\"}", COUNTER, NULL,
	    ST(auth[1]) },
	{ NULL, "graspd_relay_auth_total{result=\"refused\"}", COUNTER, NULL,
	    ST(auth[0]) },
	{ NULL, "graspd_relay_events_total{result=\"accepted\"}", COUNTER,
	    EVENTS_HELP, ST(events_accepted) },
	{ NULL, "graspd_relay_events_total{result=\"duplicate\"}", COUNTER,
	    EVENTS_HELP, ST(events_duplicate) },
	{ NULL, "graspd_relay_events_total{result=\"refused\"}", COUNTER,
	    EVENTS_HELP, ST(events_refused) },
	{ NULL, "graspd_relay_events_total{result=\"invalid\"}", COUNTER,
	    EVENTS_HELP, ST(events_invalid) },
	{ NULL, "graspd_relay_events_total{result=\"ephemeral\"}", COUNTER,
	    EVENTS_HELP, ST(events_ephemeral) },
	{ "events_stored", "graspd_relay_events_stored", GAUGE,
	    "Events in the database", ST(events_stored) },
	{ NULL, "graspd_relay_arrival_lookups_total{answer=\"database\"}",
	    COUNTER, ARRIVAL_HELP, ST(arrivals_looked_up) },
	{ NULL, "graspd_relay_arrival_lookups_total{answer=\"filter\"}",
	    COUNTER, ARRIVAL_HELP, ST(arrivals_new_by_hint) },
	{ NULL, "graspd_relay_commits_total", COUNTER, NULL, ST(commits) },
	{ NULL, "graspd_relay_committed_events_total", COUNTER, NULL,
	    ST(committed_events) },
	{ NULL, "graspd_relay_sync_waits_total", COUNTER,
	    "Batches that waited for the sync of those before them "
	    "(a slow disk)",
	    ST(sync_waits) },
	{ NULL, "graspd_relay_http_requests_total", COUNTER, NULL,
	    ST(http_requests) },
};
#undef EVENTS_HELP
#undef ARRIVAL_HELP
#undef ST

/* The gauges of relayd->stats as they are now. */
static struct relay_stats *
stats_now(void)
{
	struct relay_stats *st = &relayd->stats;
	struct relay_conn  *c;

	st->uptime = (uint64_t)(time(NULL) - relayd->started);
	st->connections_open = (uint64_t)relayd->nconns;
	st->subscriptions_open = 0;
	LIST_FOREACH(c, &relayd->conns, rc_entry)
		st->subscriptions_open += (uint64_t)c->rc_nsubs;
	st->events_stored = (uint64_t)store_count(relay_reader());
	return st;
}

void
relay_show_counters(cJSON *view)
{
	counters_show(view, relay_counters, COUNTERS_N(relay_counters),
	    stats_now());
}

cJSON *
relay_own_metrics(void)
{
	const struct relay_stats *st = stats_now();
	cJSON			 *a = cJSON_CreateArray();
	char			  name[128];
	unsigned		  r;

	if (a == NULL)
		fatalx("relay_own_metrics: out of memory");
	counters_metrics(a, relay_counters, COUNTERS_N(relay_counters), st,
	    NULL);
	/* By origin, only those that ingested. */
	for (r = 0; r < ROLE_COUNT; r++) {
		if (st->ingested[r] == 0)
			continue;
		snprintf(name, sizeof(name),
		    "graspd_relay_ingested_total"
		    "{origin=\"%s\"}",
		    role_name(r));
		relay_metric(a, name, (double)st->ingested[r]);
	}
	relay_git_metrics(a);
	relay_job_metrics(a);
	relay_disk_metrics(a);
	return a;
}

int
relay_http_request(struct relay_conn *c, struct lws *wsi)
{
	char  *uri, *body;
	int    method, urilen, n;
	size_t len;

	relayd->stats.http_requests++;
	relay_git_close(c);
	relay_web_close(c);
	relay_web_git_close(c);
	memset(c, 0, sizeof(*c));
	method = lws_http_get_uri_and_method(wsi, &uri, &urilen);
	if (method == LWSHUMETH_OPTIONS)
		return respond(c, wsi, HTTP_STATUS_NO_CONTENT, NULL, NULL, 0);
	/* Git routes come before NIP-11 (reference brief 2.2). */
	if ((n = relay_git_request(c, wsi, method, uri, urilen)) !=
	    RELAY_GIT_NOT_MINE)
		return n;
	if (method != LWSHUMETH_GET && method != LWSHUMETH_HEAD) {
		body = dup_len("method not allowed\n", &len);
		return respond(c, wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
		    "text/plain", body, len);
	}
	if (wants_nip11(wsi))
		return respond_nip11(c, wsi);
	if (relayd->cfg.metrics_enabled && urilen == 8 &&
	    memcmp(uri, "/metrics", 8) == 0) {
		body = relay_metrics_text(&len);
		return respond(c, wsi, HTTP_STATUS_OK,
		    "text/plain; version=0.0.4", body, len);
	}
	if ((n = relay_web_request(c, wsi, uri, urilen)) != RELAY_WEB_NOT_MINE)
		return n;
	return relay_web_not_found(c, wsi, uri, urilen);
}
