/*
 * conn_msg.c: the messages a remote relay sends an outbound connection
 * (conn.c, conn_int.h): EVENT, EOSE, CLOSED, NOTICE, NEG-MSG and NEG-ERR,
 * OK and AUTH, each to its handler through one table, conn_msgs[]; the
 * events go to the role, checked, deduplicated and counted.
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


/* ------------------------------------------------------------------ */
/* Messages from the relay                                             */

static int
conn_ingest(struct conn *c, const struct event *ev)
{
	struct conn_mgr *m = c->c_mgr;

	if (m->m_hooks->ingest(m->m_arg, c->c_key, ev->json, ev->json_len) ==
	    -1) {
		c->c_ingest_dropped++;
		m->m_ingest_dropped++;
		return -1;
	}
	return 0;
}

static struct conn_req *
conn_find_open(struct conn *c, const struct json *subid)
{
	struct conn_req *r;

	if (subid == NULL || subid->type != JSON_STRING)
		return NULL;
	TAILQ_FOREACH(r, &c->c_open, r_entry)
		if (strlen(r->r_subid) == subid->len &&
		    memcmp(r->r_subid, subid->s, subid->len) == 0)
			return r;
	return NULL;
}

static void
conn_on_event(struct conn *c, struct conn_req *r, const struct event *ev)
{
	int in_range;

	c->c_events++;
	c->c_mgr->m_events++;
	if (r->r_kind == REQ_LIVE) {
		if (conn_ingest(c, ev) == -1 &&
		    c->c_mgr->m_hooks->live_dropped != NULL)
			c->c_mgr->m_hooks->live_dropped(c->c_mgr->m_arg, c,
			    ev->created_at);
		return;
	}
	r->r_st.cs_events++;
	in_range = !r->r_has_until || ev->created_at <= r->r_until;
	if (in_range) {
		r->r_page_inrange++;
		if (ev->created_at < r->r_page_min)
			r->r_page_min = ev->created_at;
	}
	if (conn_idset_has(&r->r_seen, ev->id))
		return;
	conn_idset_add(&r->r_seen, ev->id, ev->created_at);
	r->r_st.cs_new++;
	if (in_range)
		r->r_page_new++;
	if (r->r_st.cs_oldest < 0 || ev->created_at < r->r_st.cs_oldest)
		r->r_st.cs_oldest = ev->created_at;
	if (conn_ingest(c, ev) == -1) {
		r->r_st.cs_dropped++;
		return;
	}
	if (r->r_cb.event != NULL) {
		r->r_in_cb++;
		r->r_cb.event(r->r_cb.arg, r, ev);
		r->r_in_cb--;
		if (r->r_cancelled) {
			conn_req_free(r);
			conn_pump(c);
			conn_maybe_retire(c);
		}
	}
}

/* EOSE of a fetch or a page: finish, or queue the next page. */
static void
conn_on_eose(struct conn_req *r)
{
	struct conn *c = r->r_conn;

	if (r->r_kind == REQ_FETCH ||
	    r->r_st.cs_pages >= CONN_PAGINATE_MAX_PAGES) {
		conn_req_finish(r, FETCH_EOSE, "");
		return;
	}
	if (r->r_page_new > 0) {
		r->r_until = r->r_page_min;
	} else if (r->r_page_inrange > 0 && r->r_has_until &&
	    r->r_page_min == r->r_until && r->r_until > 0) {
		/* Stuck on one second: the relay caps below the events
		 * of that second.  Step past it once. */
		r->r_until--;
	} else {
		conn_req_finish(r, FETCH_EOSE, "");
		return;
	}
	r->r_has_until = 1;
	if (r->r_has_since && r->r_until < r->r_since) {
		conn_req_finish(r, FETCH_EOSE, "");
		return;
	}
	conn_idset_prune(&r->r_seen, r->r_until);
	conn_req_close(r);
	conn_req_build_page(r);
	conn_req_enqueue(r);
	conn_pump(c);
}

static void
conn_on_closed(struct conn *c, struct conn_req *r, const struct json *msg)
{
	const char *t = msg != NULL && msg->type == JSON_STRING ? msg->s : "";
	size_t	    tl = msg != NULL && msg->type == JSON_STRING ? msg->len : 0;
	char	    why[CONN_REASON_MAX + 1];
	size_t	    apl = strlen(NIP01_AUTH_REQUIRED);

	conn_clean_text(why, t, tl);
	/* The relay ended the subscription: no CLOSE from us. */
	conn_req_unlink(r);
	if (conn_reason_is_rate_limited(t, tl)) {
		conn_rate_limited(c, "CLOSED", t, tl);
		if (r->r_kind == REQ_LIVE)
			conn_req_enqueue(r);
		else
			conn_req_finish(r, FETCH_RATE_LIMITED, why);
		conn_pump(c);
		return;
	}
	if (tl >= apl && memcmp(t, NIP01_AUTH_REQUIRED, apl) == 0 &&
	    !c->c_authed) {
		snprintf(r->r_reason, sizeof(r->r_reason), "%s", why);
		conn_req_park(r, PARK_AUTH);
		conn_pump(c);
		return;
	}
	if (r->r_kind == REQ_LIVE) {
		log_info("conn %s: live subscription closed by the relay: %s",
		    c->c_key, why);
		conn_req_park(r, PARK_RECONNECT);
		conn_pump(c);
		return;
	}
	conn_req_finish(r, FETCH_CLOSED, why);
}

/*
 * A NOTICE refusing an unknown command: the oldest reconciliation still
 * waiting for its first answer was refused (NOTICEs name no
 * subscription; a relay answers in order).
 */
static void
conn_neg_unknown(struct conn *c, const char *text)
{
	struct conn_req *r;

	TAILQ_FOREACH(r, &c->c_open, r_entry)
		if (r->r_kind == REQ_NEG && r->r_nst.ns_rounds == 0)
			break;
	if (r == NULL)
		return;
	/* Never opened on the relay: no NEG-CLOSE. */
	conn_req_unlink(r);
	r->r_neg_decided = 1;
	r->r_neg_res = NEGR_UNSUPPORTED;
	conn_req_finish(r, FETCH_CLOSED, text);
}

/*
 * A NEG-MSG for r: reconcile, answer or finish.  Returns 0, or -1 if the
 * message is malformed (r then ends FAILED).
 */
static int
conn_on_negmsg(struct conn *c, struct conn_req *r, const struct json *hex)
{
	struct buf out = BUF_INIT, b = BUF_INIT;
	char	   err[160];
	int	   rc;

	r->r_nst.ns_rounds++;
	rc = neg_client_reconcile(r->r_neg, hex->s, hex->len, &out, err,
	    sizeof(err));
	if (rc == -1) {
		buf_free(&out);
		r->r_neg_decided = 1;
		r->r_neg_res = NEGR_FAILED;
		conn_req_finish(r, FETCH_CLOSED, err);
		return -1;
	}
	if (rc == 0) {
		buf_free(&out);
		conn_req_finish(r, FETCH_EOSE, "");
		return 0;
	}
	buf_adds(&b, "[\"NEG-MSG\",\"");
	buf_adds(&b, r->r_subid);
	buf_adds(&b, "\",\"");
	buf_add(&b, out.b_data, out.b_len);
	buf_adds(&b, "\"]");
	r->r_nst.ns_bytes_out += b.b_len;
	conn_send(c, b.b_data, b.b_len);
	buf_free(&b);
	buf_free(&out);
	/* The timeout bounds each answer. */
	conn_sched(c, &r->r_sul, conn_req_sul, r->r_timeout);
	return 0;
}

/* A NEG-ERR for r: the relay closed the session. */
static void
conn_on_negerr(struct conn *c, struct conn_req *r, const struct json *msg)
{
	char   why[CONN_REASON_MAX + 1];
	size_t apl = strlen(NIP01_AUTH_REQUIRED);
	size_t bpl = strlen(CONN_NEG_BLOCKED_PREFIX);

	conn_clean_text(why, msg->s, msg->len);
	conn_req_unlink(r);
	if (conn_reason_is_rate_limited(msg->s, msg->len)) {
		conn_rate_limited(c, "NEG-ERR", msg->s, msg->len);
		conn_req_finish(r, FETCH_RATE_LIMITED, why);
		return;
	}
	if (msg->len >= apl && memcmp(msg->s, NIP01_AUTH_REQUIRED, apl) == 0 &&
	    !c->c_authed) {
		snprintf(r->r_reason, sizeof(r->r_reason), "%s", why);
		conn_req_park(r, PARK_AUTH);
		conn_pump(c);
		return;
	}
	r->r_neg_decided = 1;
	r->r_neg_res = r->r_nst.ns_rounds == 0 &&
		!(msg->len >= bpl &&
		    memcmp(msg->s, CONN_NEG_BLOCKED_PREFIX, bpl) == 0) ?
	    NEGR_UNSUPPORTED :
	    NEGR_FAILED;
	conn_req_finish(r, FETCH_CLOSED, why);
}

/*
 * 1 if ev matches r's base filter apart from its "until" (a later page
 * asks below it, an earlier one above).
 */
static int
base_match_ignoring_until(const struct conn_req *r, const struct event *ev)
{
	struct filter f = r->r_match[0];

	f.f_has_until = 0;
	return filter_match(&f, ev);
}

/*
 * The handlers of the messages a relay sends us, one per type, called
 * with the whole message as a JSON array of at least one element (a1 to
 * a3: its elements after the type, NULL where missing).  Each returns 1
 * when the message is malformed, 0 otherwise (also when it is dropped,
 * counted as stray or bad, or answers nothing we asked).
 */
struct conn_msg {
	const struct json *root;
	const struct json *a1, *a2, *a3;
	size_t		   len; /* bytes of the message */
};

static int
conn_msg_event(struct conn *c, const struct conn_msg *m)
{
	struct conn_req *r;
	struct event	*ev;
	char		 err[128];

	if (m->root->n != 3 || m->a1->type != JSON_STRING ||
	    m->a2->type != JSON_OBJECT)
		return 1;
	if ((r = conn_find_open(c, m->a1)) == NULL || r->r_kind == REQ_NEG) {
		c->c_stray++;
		c->c_mgr->m_stray++;
		return 0;
	}
	/*
	 * An event that does not parse or whose id is not its hash is
	 * dropped and counted, but does not threaten the link: relays keep
	 * events other implementations accepted.
	 */
	if ((ev = event_from_json(m->a2, err, sizeof(err))) == NULL ||
	    !event_check_id(ev)) {
		event_destroy(ev);
		c->c_bad_events++;
		c->c_mgr->m_bad_events++;
		return 0;
	}
	/* Pagination moves until; the base filter must match. */
	if (r->r_nmatch > 0 && !filter_match_any(r->r_match, r->r_nmatch, ev) &&
	    !(r->r_kind == REQ_PAGINATE && base_match_ignoring_until(r, ev))) {
		event_destroy(ev);
		c->c_stray++;
		c->c_mgr->m_stray++;
		return 0;
	}
	conn_on_event(c, r, ev);
	event_destroy(ev);
	return 0;
}

static int
conn_msg_eose(struct conn *c, const struct conn_msg *m)
{
	struct conn_req *r;

	if (m->a1 == NULL || m->a1->type != JSON_STRING)
		return 1;
	if ((r = conn_find_open(c, m->a1)) != NULL)
		conn_proven(c);
	if (r != NULL && r->r_kind != REQ_LIVE && r->r_kind != REQ_NEG)
		conn_on_eose(r);
	return 0;
}

static int
conn_msg_closed(struct conn *c, const struct conn_msg *m)
{
	struct conn_req *r;

	if (m->a1 == NULL || m->a1->type != JSON_STRING ||
	    (m->a2 != NULL && m->a2->type != JSON_STRING))
		return 1;
	if ((r = conn_find_open(c, m->a1)) != NULL)
		conn_on_closed(c, r, m->a2);
	return 0;
}

static int
conn_msg_notice(struct conn *c, const struct conn_msg *m)
{
	char t[CONN_REASON_MAX + 1];

	if (m->a1 == NULL || m->a1->type != JSON_STRING)
		return 1;
	conn_clean_text(t, m->a1->s, m->a1->len);
	log_debug("conn %s: NOTICE %s", c->c_key, t);
	if (conn_notice_is_rate_limit(m->a1->s, m->a1->len))
		conn_rate_limited(c, "NOTICE", m->a1->s, m->a1->len);
	else if (conn_notice_is_unsupported(m->a1->s, m->a1->len))
		conn_neg_unknown(c, t);
	return 0;
}

/* NEG-MSG and NEG-ERR (NIP-77). */
static int
conn_msg_neg(struct conn *c, const struct conn_msg *m)
{
	const struct json *type = json_at(m->root, 0);
	struct conn_req	  *r;

	if (m->a1 == NULL || m->a1->type != JSON_STRING || m->a2 == NULL ||
	    m->a2->type != JSON_STRING)
		return 1;
	if ((r = conn_find_open(c, m->a1)) == NULL || r->r_kind != REQ_NEG) {
		c->c_stray++;
		c->c_mgr->m_stray++;
		return 0;
	}
	r->r_nst.ns_bytes_in += m->len;
	conn_proven(c);
	if (type->s[4] == 'M')
		return conn_on_negmsg(c, r, m->a2) == -1;
	conn_on_negerr(c, r, m->a2);
	return 0;
}

static int
conn_msg_ok(struct conn *c, const struct conn_msg *m)
{
	char t[CONN_REASON_MAX + 1];

	if (m->root->n < 3 || m->a1->type != JSON_STRING ||
	    (m->a2->type != JSON_TRUE && m->a2->type != JSON_FALSE) ||
	    (m->a3 != NULL && m->a3->type != JSON_STRING))
		return 1;
	if (m->a2->type == JSON_FALSE && m->a3 != NULL &&
	    conn_reason_is_rate_limited(m->a3->s, m->a3->len))
		conn_rate_limited(c, "OK", m->a3->s, m->a3->len);
	if (c->c_auth_id[0] != '\0' && m->a1->len == EVENT_ID_HEX_LEN &&
	    memcmp(m->a1->s, c->c_auth_id, EVENT_ID_HEX_LEN) == 0) {
		c->c_auth_id[0] = '\0';
		conn_clean_text(t, m->a3 ? m->a3->s : "",
		    m->a3 ? m->a3->len : 0);
		conn_auth_result(c, m->a2->type == JSON_TRUE, t);
	}
	return 0;
}

static int
conn_msg_auth(struct conn *c, const struct conn_msg *m)
{
	if (m->a1 == NULL || m->a1->type != JSON_STRING)
		return 1;
	conn_auth(c, m->a1->s, m->a1->len);
	return 0;
}

/* What a relay may send us; other types (COUNT, ...) answer nothing we
 * asked and are ignored. */
static const struct {
	const char *type;
	int (*fn)(struct conn *, const struct conn_msg *);
} conn_msgs[] = {
	{ "EVENT", conn_msg_event },
	{ "EOSE", conn_msg_eose },
	{ "CLOSED", conn_msg_closed },
	{ "NOTICE", conn_msg_notice },
	{ "NEG-MSG", conn_msg_neg },
	{ "NEG-ERR", conn_msg_neg },
	{ "OK", conn_msg_ok },
	{ "AUTH", conn_msg_auth },
};

/*
 * One complete message from the relay, to its handler in conn_msgs[].
 * Malformed ones count against the relay; too many drop the link (the
 * caller sees c_wsi change).
 */
void
conn_dispatch(struct conn *c, const char *text, size_t len)
{
	struct json_doc	  *doc = NULL;
	const struct json *type;
	struct conn_msg	   m;
	char		   err[128];
	size_t		   i;
	int		   bad = 0;

	m.root = json_parse(text, len, &doc, err, sizeof(err));
	if (m.root == NULL || m.root->type != JSON_ARRAY || m.root->n < 1 ||
	    (type = json_at(m.root, 0))->type != JSON_STRING)
		bad = 1;
	else {
		m.a1 = json_at(m.root, 1);
		m.a2 = json_at(m.root, 2);
		m.a3 = json_at(m.root, 3);
		m.len = len;
		for (i = 0; i < sizeof(conn_msgs) / sizeof(conn_msgs[0]); i++)
			if (strcmp(type->s, conn_msgs[i].type) == 0) {
				bad = conn_msgs[i].fn(c, &m);
				break;
			}
	}
	json_free(doc);
	if (bad) {
		conn_count_malformed(c);
		log_debug("conn %s: malformed message (%zu bytes)", c->c_key,
		    len);
		if (++c->c_malformed_now > CONN_MALFORMED_MAX && c->c_wsi)
			conn_lost(c, "protocol: too many malformed messages",
			    DROP_FAILURE, 1);
	}
}
