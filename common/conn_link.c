/*
 * conn_link.c: the link of an outbound connection (conn.c, conn_int.h):
 * the resolver, the dial with the vetted address, TLS, the libwebsockets
 * callbacks, reading and writing frames, keepalive, and the drop with its
 * backoff.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <ctype.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "conn.h"
#include "conn_int.h"
#include "event.h"
#include "filter.h"
#include "json.h"
#include "log.h"
#include "nip01.h"
#include "resolve.h"
#include "role.h"


/* Ours: websocket keepalive of every connection (see conn.h). */
static const lws_retry_bo_t conn_keepalive = {
	.secs_since_valid_ping = CONN_PING_SECS,
	.secs_since_valid_hangup = CONN_HANGUP_SECS,
};


/* ------------------------------------------------------------------ */
/* The link                                                            */

void
conn_clear_link(struct conn *c)
{
	struct conn_out *o;

	while ((o = TAILQ_FIRST(&c->c_out)) != NULL) {
		TAILQ_REMOVE(&c->c_out, o, o_entry);
		conn_out_free(c, o);
	}
	buf_free(&c->c_rx);
	c->c_malformed_now = 0;
	c->c_auth_sent = c->c_authed = 0;
	c->c_auth_id[0] = '\0';
	c->c_last_req_ms = 0;
	lws_sul_cancel(&c->c_sul_connect);
	resolve_cancel(c->c_resolve);
	c->c_resolve = 0;
}

/* Forgets the wsi; kills it unless its own callback will (in_cb). */
void
conn_detach(struct conn *c, int in_cb)
{
	struct lws *wsi = c->c_wsi;

	c->c_wsi = NULL;
	c->c_dialing = 0;
	if (wsi == NULL)
		return;
	lws_set_opaque_user_data(wsi, NULL);
	if (!in_cb)
		lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK,
		    LWS_TO_KILL_ASYNC);
}

/*
 * The link ended or never came up.
 * Fetches end with FETCH_DISCONNECTED; live subscriptions are parked
 * for the next link.  in_cb: we run in a callback of c's wsi, which
 * closes it (by returning -1, or because it is closing anyway).
 */
void
conn_lost(struct conn *c, const char *why, enum drop_mode mode, int in_cb)
{
	struct config	 *cfg = c->c_mgr->m_cfg;
	struct conn_reqq  live = TAILQ_HEAD_INITIALIZER(live);
	struct conn_reqq *lists[] = { &c->c_open, &c->c_pending, &c->c_parked };
	struct conn_req	 *r;
	char		  reason[CONN_REASON_MAX + 1];
	int64_t		  now = conn_now_ms(), retry, up_ms;
	double		  delay;
	size_t		  i;
	int		  dead = 0;

	snprintf(reason, sizeof(reason), "%s", why);
	conn_detach(c, in_cb);
	conn_clear_link(c);
	for (i = 0; i < 3; i++) {
		while ((r = TAILQ_FIRST(lists[i])) != NULL) {
			conn_req_unlink(r);
			if (r->r_kind == REQ_LIVE)
				TAILQ_INSERT_TAIL(&live, r, r_entry);
			else {
				lws_sul_cancel(&r->r_sul);
				TAILQ_INSERT_TAIL(&c->c_ending, r, r_entry);
				r->r_where = RQ_ENDING;
			}
		}
	}
	while ((r = TAILQ_FIRST(&live)) != NULL) {
		TAILQ_REMOVE(&live, r, r_entry);
		conn_req_park(r, PARK_RECONNECT);
	}

	up_ms = c->c_up_ms;
	c->c_up_ms = 0;
	switch (mode) {
	case DROP_REFUSED:
		c->c_failures_total++;
		c->c_mgr->m_failures++;
		delay = cfg_scale_delay(cfg, CONN_DEAD_RETRY);
		c->c_link = CONN_REFUSED;
		c->c_retry_ms = now + (int64_t)(delay * 1000);
		snprintf(c->c_reason, sizeof(c->c_reason), "%s", reason);
		log_info("conn %s: refused: %s", c->c_key, reason);
		conn_sched(c, &c->c_sul_retry, conn_sul_retry, delay);
		break;
	case DROP_FAILURE:
		/* A link that stayed up a while was working. */
		if (up_ms != 0 &&
		    now - up_ms >=
			(int64_t)(cfg_scale_delay(cfg, CONN_STABLE_SECS) *
			    1000))
			conn_proven(c);
		c->c_failures++;
		c->c_failures_total++;
		c->c_mgr->m_failures++;
		if (c->c_streak_ms == 0)
			c->c_streak_ms = now;
		delay = conn_backoff_delay(cfg, c->c_failures,
		    (double)(now - c->c_streak_ms) / 1000, &dead);
		retry = now + (int64_t)(delay * 1000);
		/* A later cooldown keeps the relay waiting longer. */
		if (c->c_cool_ms != 0 && c->c_cool_ms > retry)
			retry = c->c_cool_ms;
		c->c_retry_ms = retry;
		c->c_link = dead ? CONN_DEAD : CONN_BACKOFF;
		snprintf(c->c_reason, sizeof(c->c_reason), "%s", reason);
		log_info("conn %s: %s; failure %u, %s, next try in %.3f s",
		    c->c_key, reason, c->c_failures, dead ? "dead" : "backoff",
		    (double)(retry - now) / 1000);
		conn_sched(c, &c->c_sul_retry, conn_sul_retry,
		    (double)(retry - now) / 1000);
		break;
	}
	conn_report(c);

	/* Fetches end after the state is set, so a done callback sees it. */
	conn_end_stranded(c, FETCH_DISCONNECTED, reason);
	conn_maybe_retire(c);
}

/* The relay answered a request in full (EOSE, NEG-MSG, NEG-ERR) or kept
 * the link up for CONN_STABLE_SECS: its failure streak is over. */
void
conn_proven(struct conn *c)
{
	c->c_failures = 0;
	c->c_streak_ms = 0;
}

static void
conn_sul_connect(lws_sorted_usec_list_t *sul)
{
	struct conn *c = lws_container_of(sul, struct conn, c_sul_connect);

	if (c->c_link == CONN_CONNECTING)
		conn_lost(c, "connect timeout", DROP_FAILURE, 0);
}

/*
 * Starts OpenSSL and gives the manager's vhost its client TLS context
 * (the system CA store) before the first wss:// dial, not at start: the
 * library's configuration and tables cost 1.7 MB in each role and the
 * context over 2 MB more, and a role with no wss:// target never needs
 * them.  So the libwebsockets context is made without
 * LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT (role.c), which leaves
 * libwebsockets' SSL ex-data slots at index 0, OpenSSL's application-data
 * slot, which nothing else in a role uses.
 */
static int
conn_tls_ready(struct conn_mgr *m)
{
	struct lws_context_creation_info info;

	if (m->m_tls_ready)
		return 0;
	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS, NULL) != 1)
		return -1;
	memset(&info, 0, sizeof(info));
	/* Without it, lws_init_vhost_client_ssl() makes no TLS context. */
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	if (lws_init_vhost_client_ssl(&info, m->m_vhost) != 0)
		return -1;
	m->m_tls_ready = 1;
	return 0;
}

/*
 * The second step of a dial: the lookup's answer (rc and why as
 * relayurl_resolve_checked() gives them, the vetted address in ss) is in;
 * starts the client connection to that address.
 */
static void
conn_connect(struct conn *c, int rc, const struct sockaddr_storage *ss,
    socklen_t sl, const char *why)
{
	struct conn_mgr		      *m = c->c_mgr;
	struct lws_client_connect_info info;
	char			       addr[NI_MAXHOST];
	char			       w[CONN_REASON_MAX + 1];
	struct lws		      *wsi;

	if (rc == -1) {
		conn_lost(c, why ? why : "target refused", DROP_REFUSED, 0);
		return;
	}
	if (rc != 0) {
		snprintf(w, sizeof(w), "dns: %s", why ? why : "no address");
		conn_lost(c, w, DROP_FAILURE, 0);
		return;
	}
	if (getnameinfo((const struct sockaddr *)ss, sl, addr, sizeof(addr),
		NULL, 0, NI_NUMERICHOST) != 0) {
		conn_lost(c, "cannot print the resolved address", DROP_FAILURE,
		    0);
		return;
	}

	if (c->c_url.ru_tls && conn_tls_ready(m) == -1) {
		conn_lost(c, "no client TLS context", DROP_FAILURE, 0);
		return;
	}

	memset(&info, 0, sizeof(info));
	info.context = m->m_lws;
	info.vhost = m->m_vhost;
	/* The vetted address, never the name again (DNS rebinding). */
	info.address = addr;
	info.port = c->c_url.ru_port;
	info.ssl_connection = LCCSCF_HTTP_NO_FOLLOW_REDIRECT |
	    (c->c_url.ru_tls ? LCCSCF_USE_SSL : 0);
	info.path = c->c_url.ru_target;
	/* The Host header; lws takes SNI and the certificate name from it. */
	info.host = c->c_url.ru_authority;
	info.origin = c->c_url.ru_authority;
	info.ietf_version_or_minus_one = -1;
	info.local_protocol_name = CONN_PROTOCOL_NAME;
	info.alpn = "http/1.1";
	info.opaque_user_data = c;
	info.retry_and_idle_policy = &conn_keepalive;

	c->c_link = CONN_CONNECTING;
	conn_report(c);
	log_debug("conn %s: connecting to %s port %d", c->c_key, addr,
	    info.port);
	c->c_dialing = 1;
	wsi = lws_client_connect_via_info(&info);
	c->c_dialing = 0;
	if (c->c_link != CONN_CONNECTING)
		return; /* failed inside, already handled */
	if (wsi == NULL) {
		conn_lost(c, "cannot start the connection", DROP_FAILURE, 0);
		return;
	}
	c->c_wsi = wsi;
	conn_sched(c, &c->c_sul_connect, conn_sul_connect,
	    conn_connect_timeout(m->m_cfg));
}

/* A name's lookup answered (from resolve_poll(), on the loop). */
static void
conn_resolved(void *arg, int rc, const struct sockaddr_storage *ss,
    socklen_t sl, const char *why)
{
	struct conn *c = arg;

	c->c_resolve = 0;
	if (c->c_link != CONN_RESOLVING)
		return;
	conn_connect(c, rc, ss, sl, why);
}

/*
 * The first step of a dial: an IP literal is vetted at once; a name's
 * lookup starts on a resolver thread (resolve.h) and conn_resolved()
 * goes on when it answers, so a slow name server never holds the loop.
 * Runs from a timer, never inside a role's call.
 */
static void
conn_dial(struct conn *c)
{
	struct conn_mgr	       *m = c->c_mgr;
	struct sockaddr_storage ss;
	socklen_t		sl = sizeof(ss);
	unsigned		flags = 0;
	const char	       *why = NULL;
	int			rc;

	if (m->m_cfg->sync_allow_private_targets)
		flags |= RELAYURL_ALLOW_PRIVATE;
	if (c->c_flags & CONN_TRUSTED)
		flags |= RELAYURL_TRUSTED;
	c->c_link = CONN_RESOLVING;
	conn_report(c);
	if (c->c_url.ru_family != AF_UNSPEC) {
		rc = relayurl_resolve_checked(c->c_key, flags, &ss, &sl, &why);
		conn_connect(c, rc, &ss, sl, why);
		return;
	}
	resolve_cancel(c->c_resolve);
	c->c_resolve = resolve_start(m->m_lws, c->c_key, flags, RESOLVE_TIMEOUT,
	    conn_resolved, c, &why);
	if (c->c_resolve == 0)
		conn_connect(c, -2, NULL, 0, why);
}

void
conn_sul_retry(lws_sorted_usec_list_t *sul)
{
	struct conn *c = lws_container_of(sul, struct conn, c_sul_retry);

	switch (c->c_link) {
	case CONN_BACKOFF:
	case CONN_DEAD:
	case CONN_REFUSED:
		if (conn_cooling(c)) {
			conn_sched(c, &c->c_sul_retry, conn_sul_retry,
			    (double)(c->c_cool_ms - conn_now_ms()) / 1000);
			return;
		}
		c->c_link = CONN_IDLE;
		/* FALLTHROUGH */
	case CONN_IDLE:
		if (conn_needed(c))
			conn_dial(c);
		else {
			conn_report(c);
			conn_maybe_retire(c);
		}
		break;
	default:
		break;
	}
}

static void
conn_established(struct conn *c)
{
	struct conn_req *r, *next;

	lws_sul_cancel(&c->c_sul_connect);
	c->c_link = CONN_CONNECTED;
	/* A handshake alone does not end a failure streak: a relay that
	 * accepts and then drops mid-frame would be redialled at the base
	 * backoff for ever.  conn_proven() ends it. */
	c->c_up_ms = conn_now_ms();
	c->c_reason[0] = '\0';
	c->c_malformed_now = 0;
	log_info("conn %s: connected", c->c_key);
	/* Live subscriptions again, ahead of everything (a fetch parked
	 * with its failure due keeps it). */
	for (r = TAILQ_FIRST(&c->c_parked); r != NULL; r = next) {
		next = TAILQ_NEXT(r, r_entry);
		if (r->r_fail_pending)
			continue;
		conn_req_unlink(r);
		conn_req_enqueue(r);
	}
	conn_report(c);
	conn_pump(c);
}

/* The conn a callback is about, or NULL if the wsi is not ours (any
 * more). */
static struct conn *
conn_of(struct lws *wsi)
{
	struct conn *c = lws_get_opaque_user_data(wsi);

	if (c == NULL)
		return NULL;
	if (c->c_wsi == NULL && c->c_dialing)
		c->c_wsi = wsi;
	return c->c_wsi == wsi ? c : NULL;
}

static int
conn_writeable(struct conn *c, struct lws *wsi)
{
	struct conn_out *o;
	int		 n;

	if ((o = TAILQ_FIRST(&c->c_out)) == NULL)
		return 0;
	TAILQ_REMOVE(&c->c_out, o, o_entry);
	n = lws_write(wsi, o->o_buf + LWS_PRE, o->o_len, LWS_WRITE_TEXT);
	c->c_bytes_out += o->o_len;
	c->c_mgr->m_bytes_out += o->o_len;
	conn_out_free(c, o);
	if (n < 0) {
		conn_lost(c, "write failed", DROP_FAILURE, 1);
		return -1;
	}
	if (!TAILQ_EMPTY(&c->c_out))
		lws_callback_on_writable(wsi);
	return 0;
}

static int
conn_receive(struct conn *c, struct lws *wsi, const void *in, size_t len)
{
	c->c_bytes_in += len;
	c->c_mgr->m_bytes_in += len;
	if (c->c_rx.b_len + len > CONN_MAX_MESSAGE) {
		conn_count_malformed(c);
		conn_lost(c, "protocol: message over the size limit",
		    DROP_FAILURE, 1);
		return -1;
	}
	buf_add(&c->c_rx, in, len);
	if (!lws_is_final_fragment(wsi))
		return 0;
	if (lws_frame_is_binary(wsi)) {
		conn_count_malformed(c);
		if (++c->c_malformed_now > CONN_MALFORMED_MAX) {
			conn_lost(c, "protocol: too many malformed messages",
			    DROP_FAILURE, 1);
			return -1;
		}
	} else
		conn_dispatch(c, c->c_rx.b_data, c->c_rx.b_len);
	if (c->c_wsi != wsi)
		return -1; /* dropped while dispatching */
	if (c->c_rx.b_cap > CONN_RX_KEEP)
		buf_free(&c->c_rx);
	else
		buf_reset(&c->c_rx);
	return 0;
}

int
conn_lws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct conn *c;
	char	     why[CONN_REASON_MAX + 1];

	switch (reason) {
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		if ((c = conn_of(wsi)) == NULL)
			return -1;
		conn_established(c);
		return c->c_wsi == wsi ? 0 : -1;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		if ((c = conn_of(wsi)) == NULL)
			return 0;
		snprintf(why, sizeof(why), "connect: %.*s",
		    in ? (int)strnlen(in, 150) : 5,
		    in ? (const char *)in : "error");
		conn_lost(c, why, DROP_FAILURE, 1);
		return 0;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if ((c = conn_of(wsi)) == NULL)
			return -1;
		return conn_receive(c, wsi, in, len);
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if ((c = conn_of(wsi)) == NULL)
			return -1;
		return conn_writeable(c, wsi);
	case LWS_CALLBACK_CLIENT_CLOSED:
	case LWS_CALLBACK_WSI_DESTROY:
		if ((c = conn_of(wsi)) == NULL)
			return 0;
		conn_lost(c, "closed by the relay", DROP_FAILURE, 1);
		return 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		/* A lookup thread woke the loop (any loop that serves this
		 * protocol; proc_run polls too). */
		resolve_poll();
		return 0;
	default:
		return 0;
	}
}
