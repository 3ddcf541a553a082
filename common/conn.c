/*
 * conn.c: outbound connections to remote relays (see conn.h), run by
 * syncd, discoveryd and historyd on their libwebsockets loop: requests,
 * admission, rate limits, AUTH, connections and the manager.  The
 * messages a relay sends are conn_msg.c's, the link conn_link.c's;
 * conn_int.h holds what the three share.
 *
 * A connection (struct conn) is a relay key, a link state machine and
 * three request lists:
 *	c_pending	waiting for admission: live first, then by priority,
 *			first come first served within one;
 *	c_open		REQ sent, subscription open on the relay;
 *	c_parked	waiting for AUTH to complete, or (live ones refused
 *			by the relay, or any live one while the link is down)
 *			for the next connection.
 * conn_pump() admits the head of c_pending when the link is up, no
 * cooldown runs, fewer than CONN_MAX_SUBS subscriptions are open and
 * CONN_REQ_INTERVAL has passed since the last REQ, and then only if the
 * relay's budget shared with the other roles (conn_budget.c) lends it a
 * subscription slot and has paced every role's REQs to that relay as
 * well.  Messages leave through c_out, one per writeable callback.
 *
 * Everything that can call back into a role (done callbacks, the state
 * hook) is reached from the loop: from an lws callback or an lws_sul
 * timer, never from inside a conn_* call the role made.  A connection is
 * freed only by its retire timer (or conn_mgr_free()), so it outlives
 * every callback that runs on its behalf.
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

const struct lws_protocols conn_lws_protocol = CONN_LWS_PROTOCOL;

static void conn_sul_pump(lws_sorted_usec_list_t *);

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

int64_t
conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Copies at most CONN_REASON_MAX bytes of a relay's text into dst (size
 * CONN_REASON_MAX + 1), control bytes replaced, so that it can be logged
 * and shown.
 */
void
conn_clean_text(char *dst, const char *src, size_t len)
{
	size_t i, n = len > CONN_REASON_MAX ? CONN_REASON_MAX : len;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	dst[n] = '\0';
}

const char *
conn_state_name(enum conn_state s)
{
	static const char *const names[] = {
#define CONN_STATE_STR(name, str) str,
		CONN_STATE_LIST(CONN_STATE_STR)
#undef CONN_STATE_STR
	};

	if ((unsigned)s >= CONN_NSTATES)
		return "unknown";
	return names[s];
}

const char *
conn_fetch_result_name(enum conn_fetch_result r)
{
	switch (r) {
	case FETCH_EOSE:
		return "eose";
	case FETCH_CLOSED:
		return "closed";
	case FETCH_TIMEOUT:
		return "timeout";
	case FETCH_DISCONNECTED:
		return "disconnected";
	case FETCH_RATE_LIMITED:
		return "rate_limited";
	}
	return "unknown";
}

const char *
conn_neg_result_name(enum conn_neg_result r)
{
	switch (r) {
	case NEGR_DONE:
		return "done";
	case NEGR_UNSUPPORTED:
		return "unsupported";
	case NEGR_FAILED:
		return "failed";
	case NEGR_DISCONNECTED:
		return "disconnected";
	case NEGR_RATE_LIMITED:
		return "rate_limited";
	}
	return "unknown";
}

/* ------------------------------------------------------------------ */
/* Pure parts                                                          */

double
conn_backoff_delay(const struct config *cfg, unsigned failures,
    double streak_secs, int *dead)
{
	double	 d, max = cfg->sync_max_backoff_secs;
	unsigned i;

	if (dead != NULL)
		*dead = 0;
	if (streak_secs >= cfg_scale_delay(cfg, CONN_DEAD_AFTER)) {
		if (dead != NULL)
			*dead = 1;
		return cfg_scale_delay(cfg, CONN_DEAD_RETRY);
	}
	d = cfg->sync_base_backoff_secs;
	for (i = 1; i < failures && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	return cfg_scale_delay(cfg, d);
}

double
conn_connect_timeout(const struct config *cfg)
{
	double t = cfg_scale_delay(cfg, cfg->sync_base_backoff_secs);

	return t < CONN_CONNECT_TIMEOUT_MIN ? CONN_CONNECT_TIMEOUT_MIN : t;
}

double
conn_fetch_timeout(const struct config *cfg)
{
	return config_test_mode(cfg) ? CONN_FETCH_TIMEOUT_TEST :
				       CONN_FETCH_TIMEOUT;
}

double
conn_req_interval(const struct config *cfg)
{
	return config_test_mode(cfg) ? CONN_REQ_INTERVAL_TEST :
				       CONN_REQ_INTERVAL;
}

/* 1 if the lower-cased text[0..len) contains word. */
static int
has_word(const char *text, size_t len, const char *word)
{
	size_t wl = strlen(word), i, j;

	if (wl > len)
		return 0;
	for (i = 0; i + wl <= len; i++) {
		for (j = 0; j < wl; j++)
			if (tolower((unsigned char)text[i + j]) != word[j])
				break;
		if (j == wl)
			return 1;
	}
	return 0;
}

int
conn_notice_is_rate_limit(const char *text, size_t len)
{
	return (has_word(text, len, "rate") && has_word(text, len, "limit")) ||
	    has_word(text, len, "too many") ||
	    has_word(text, len, "slow down") || has_word(text, len, "throttl");
}

int
conn_notice_is_unsupported(const char *text, size_t len)
{
	/* Not "unknown subscription": an answer to a CLOSE. */
	if (has_word(text, len, "subscription"))
		return 0;
	return has_word(text, len, "unknown") ||
	    has_word(text, len, "unsupported") ||
	    has_word(text, len, "not supported") ||
	    has_word(text, len, "unrecognized");
}

int
conn_reason_is_rate_limited(const char *msg, size_t len)
{
	size_t pl = strlen(NIP01_RATE_LIMITED);

	return len >= pl && memcmp(msg, NIP01_RATE_LIMITED, pl) == 0;
}

/* ------------------------------------------------------------------ */
/* Id sets                                                             */

static uint64_t
id_hash(const uint8_t id[EVENT_ID_LEN])
{
	uint64_t h;

	memcpy(&h, id, sizeof(h));
	return h;
}

static struct seen *
idset_slot(struct seen *v, size_t cap, const uint8_t id[EVENT_ID_LEN])
{
	size_t i = (size_t)id_hash(id) & (cap - 1);

	while (v[i].s_used && memcmp(v[i].s_id, id, EVENT_ID_LEN) != 0)
		i = (i + 1) & (cap - 1);
	return &v[i];
}

int
conn_idset_has(const struct idset *s, const uint8_t id[EVENT_ID_LEN])
{
	return s->is_cap > 0 && idset_slot(s->is_v, s->is_cap, id)->s_used;
}

/* Rebuilds s with capacity cap, keeping entries with s_at <= max_at. */
static void
idset_rebuild(struct idset *s, size_t cap, int64_t max_at)
{
	struct seen *nv, *slot;
	size_t	     i, n = 0;

	if ((nv = calloc(cap, sizeof(*nv))) == NULL)
		fatal("idset");
	for (i = 0; i < s->is_cap; i++) {
		if (!s->is_v[i].s_used || s->is_v[i].s_at > max_at)
			continue;
		slot = idset_slot(nv, cap, s->is_v[i].s_id);
		*slot = s->is_v[i];
		n++;
	}
	free(s->is_v);
	s->is_v = nv;
	s->is_cap = cap;
	s->is_n = n;
}

void
conn_idset_add(struct idset *s, const uint8_t id[EVENT_ID_LEN], int64_t at)
{
	struct seen *slot;

	if ((s->is_n + 1) * 2 > s->is_cap)
		idset_rebuild(s, s->is_cap ? s->is_cap * 2 : 64, INT64_MAX);
	slot = idset_slot(s->is_v, s->is_cap, id);
	if (slot->s_used)
		return;
	memcpy(slot->s_id, id, EVENT_ID_LEN);
	slot->s_at = at;
	slot->s_used = 1;
	s->is_n++;
}

/* Forgets the ids newer than max_at: they cannot come back. */
void
conn_idset_prune(struct idset *s, int64_t max_at)
{
	size_t cap = 64;

	while (cap < s->is_n * 2)
		cap *= 2;
	if (s->is_cap > 0)
		idset_rebuild(s, cap, max_at);
}

static void
idset_free(struct idset *s)
{
	free(s->is_v);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ */
/* State and timers                                                    */

enum conn_state
conn_state(const struct conn *c)
{
	if (c->c_cool_ms != 0 && conn_now_ms() < c->c_cool_ms)
		return CONN_RATE_LIMITED;
	return c->c_link;
}

const char *
conn_key(const struct conn *c)
{
	return c->c_key;
}

/* Tells the role's hook if the reported state changed. */
void
conn_report(struct conn *c)
{
	enum conn_state	 old = c->c_reported, cur = conn_state(c);
	struct conn_mgr *m = c->c_mgr;

	if (old == cur)
		return;
	c->c_reported = cur;
	if (m->m_hooks->state != NULL)
		m->m_hooks->state(m->m_arg, c, old, cur);
}

void
conn_sched(struct conn *c, lws_sorted_usec_list_t *sul, sul_cb_t cb,
    double secs)
{
	if (secs < 0)
		secs = 0;
	lws_sul_schedule(c->c_mgr->m_lws, 0, sul, cb,
	    (lws_usec_t)(secs * LWS_US_PER_SEC));
}

int
conn_cooling(struct conn *c)
{
	return c->c_cool_ms != 0 && conn_now_ms() < c->c_cool_ms;
}

/* A link or a request needs the relay: live subscriptions, requests. */
int
conn_needed(const struct conn *c)
{
	return c->c_nlive > 0 || c->c_npending > 0 || c->c_nopen > 0 ||
	    c->c_nparked > 0;
}

void
conn_count_malformed(struct conn *c)
{
	c->c_malformed++;
	c->c_mgr->m_malformed++;
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */

void
conn_req_unlink(struct conn_req *r)
{
	struct conn *c = r->r_conn;

	switch (r->r_where) {
	case RQ_PENDING:
		TAILQ_REMOVE(&c->c_pending, r, r_entry);
		c->c_npending--;
		break;
	case RQ_OPEN:
		TAILQ_REMOVE(&c->c_open, r, r_entry);
		c->c_nopen--;
		conn_budget_give(&c->c_budget, r->r_slot);
		r->r_slot = -1;
		break;
	case RQ_PARKED:
		TAILQ_REMOVE(&c->c_parked, r, r_entry);
		c->c_nparked--;
		break;
	case RQ_ENDING:
		TAILQ_REMOVE(&c->c_ending, r, r_entry);
		break;
	case RQ_NONE:
		break;
	}
	r->r_where = RQ_NONE;
}

void
conn_req_free(struct conn_req *r)
{
	lws_sul_cancel(&r->r_sul);
	filters_free(r->r_match, r->r_nmatch);
	free(r->r_filters);
	json_free(r->r_doc);
	idset_free(&r->r_seen);
	neg_free(r->r_neg);
	free(r->r_items);
	free(r);
}

/* Inserts r into c_pending behind every request of its rank or lower. */
void
conn_req_enqueue(struct conn_req *r)
{
	struct conn	*c = r->r_conn;
	struct conn_req *p;

	TAILQ_FOREACH_REVERSE(p, &c->c_pending, conn_reqq, r_entry)
		if (p->r_rank <= r->r_rank)
			break;
	if (p == NULL)
		TAILQ_INSERT_HEAD(&c->c_pending, r, r_entry);
	else
		TAILQ_INSERT_AFTER(&c->c_pending, p, r, r_entry);
	r->r_where = RQ_PENDING;
	c->c_npending++;
}

void
conn_req_park(struct conn_req *r, enum conn_req_park why)
{
	struct conn *c = r->r_conn;

	TAILQ_INSERT_TAIL(&c->c_parked, r, r_entry);
	r->r_where = RQ_PARKED;
	r->r_park = why;
	c->c_nparked++;
}

/* Queues a message for the relay; the link must be up.  Returns the
 * queued message, or NULL when the link is not up (nothing queued). */
struct conn_out *
conn_send(struct conn *c, const char *text, size_t len)
{
	struct conn_out *o;

	if (c->c_wsi == NULL || c->c_link != CONN_CONNECTED)
		return NULL;
	if ((o = calloc(1, sizeof(*o))) == NULL ||
	    (o->o_buf = malloc(LWS_PRE + len)) == NULL)
		fatal("conn_send");
	memcpy(o->o_buf + LWS_PRE, text, len);
	o->o_len = len;
	o->o_slot = -1;
	TAILQ_INSERT_TAIL(&c->c_out, o, o_entry);
	lws_callback_on_writable(c->c_wsi);
	return o;
}

/* The message o left or was dropped: a CLOSE frees its budget slot. */
void
conn_out_free(struct conn *c, struct conn_out *o)
{
	if (o->o_slot != -1)
		conn_budget_closed(&c->c_budget, o->o_slot);
	free(o->o_buf);
	free(o);
}

/* CLOSEs r, whose budget slot (or -1) goes back once the CLOSE left. */
static void
conn_send_close(struct conn *c, struct conn_req *r, int slot)
{
	struct conn_out *o;
	char		 msg[64];
	int		 n;

	n = snprintf(msg, sizeof(msg), "[\"%s\",\"%s\"]",
	    r->r_kind == REQ_NEG ? "NEG-CLOSE" : "CLOSE", r->r_subid);
	if (r->r_kind == REQ_NEG && c->c_link == CONN_CONNECTED)
		r->r_nst.ns_bytes_out += (size_t)n;
	if ((o = conn_send(c, msg, (size_t)n)) == NULL || slot == -1) {
		conn_budget_give(&c->c_budget, slot);
		return;
	}
	o->o_slot = slot;
	conn_budget_closing(&c->c_budget, slot);
}

/*
 * Takes r out of its list; if its subscription is open on a live link,
 * CLOSEs it.  Our ledger's slot is free from here on: the CLOSE leaves
 * before any later REQ of this connection.  The shared budget's slot is
 * free for the other roles once the CLOSE has left.
 */
void
conn_req_close(struct conn_req *r)
{
	struct conn *c = r->r_conn;
	int	     was_open = r->r_where == RQ_OPEN, slot = -1;

	if (was_open) {
		slot = r->r_slot;
		r->r_slot = -1;
	}
	conn_req_unlink(r);
	if (was_open)
		conn_send_close(c, r, slot);
	lws_sul_cancel(&r->r_sul);
}

/*
 * The end of a reconciliation, r already closed: its result (decided by
 * the relay's answer, or mapped from res), the counters, the done
 * callback.
 */
static void
neg_finish(struct conn_req *r, enum conn_fetch_result res, const char *why)
{
	struct conn	    *c = r->r_conn;
	struct conn_mgr	    *m = c->c_mgr;
	enum conn_neg_result nr;
	struct neg_idlist    empty = { NULL, 0, 0 };

	if (r->r_neg_decided)
		nr = r->r_neg_res;
	else
		switch (res) {
		case FETCH_EOSE:
			nr = NEGR_DONE;
			break;
		case FETCH_CLOSED:
		case FETCH_TIMEOUT:
			/* Silence or CLOSED before any answer: no NIP-77 here. */
			nr = r->r_nst.ns_rounds == 0 ? NEGR_UNSUPPORTED :
						       NEGR_FAILED;
			break;
		case FETCH_RATE_LIMITED:
			nr = NEGR_RATE_LIMITED;
			break;
		default:
			nr = NEGR_DISCONNECTED;
			break;
		}
	r->r_nst.ns_have = r->r_nst.ns_need = &empty;
	if (nr == NEGR_DONE && r->r_neg != NULL) {
		r->r_nst.ns_have = neg_client_have(r->r_neg);
		r->r_nst.ns_need = neg_client_need(r->r_neg);
	}
	m->m_neg_results[nr]++;
	m->m_neg_rounds += r->r_nst.ns_rounds;
	m->m_neg_bytes_in += r->r_nst.ns_bytes_in;
	m->m_neg_bytes_out += r->r_nst.ns_bytes_out;
	c->c_neg_sessions++;
	c->c_neg_bytes += r->r_nst.ns_bytes_in + r->r_nst.ns_bytes_out;
	log_debug(
	    "conn %s: negentropy %s after %u round(s), %llu+%llu bytes, have %zu, need %zu: %s",
	    c->c_key, conn_neg_result_name(nr), r->r_nst.ns_rounds,
	    (unsigned long long)r->r_nst.ns_bytes_out,
	    (unsigned long long)r->r_nst.ns_bytes_in, r->r_nst.ns_have->il_n,
	    r->r_nst.ns_need->il_n, why);
	if (!r->r_cancelled && r->r_ncb.done != NULL) {
		r->r_in_cb++;
		r->r_ncb.done(r->r_ncb.arg, r, nr, why, &r->r_nst);
		r->r_in_cb--;
	}
}

/*
 * Ends a fetch, pagination or reconciliation: CLOSE (NEG-CLOSE) if open,
 * done callback, free.  The caller must not touch r afterwards.
 */
void
conn_req_finish(struct conn_req *r, enum conn_fetch_result res,
    const char *reason)
{
	struct conn	*c = r->r_conn;
	struct conn_mgr *m = c->c_mgr;
	char		 why[CONN_REASON_MAX + 1];

	conn_req_close(r);
	snprintf(why, sizeof(why), "%s", reason ? reason : "");
	if (r->r_kind == REQ_NEG)
		neg_finish(r, res, why);
	else {
		m->m_results[res]++;
		log_debug("conn %s: %s %s after %u page(s), %llu event(s): %s",
		    c->c_key,
		    r->r_kind == REQ_PAGINATE ? "pagination" : "fetch",
		    conn_fetch_result_name(res), r->r_st.cs_pages,
		    (unsigned long long)r->r_st.cs_events, why);
	}
	if (r->r_kind != REQ_NEG && !r->r_cancelled && r->r_cb.done != NULL) {
		r->r_in_cb++;
		r->r_cb.done(r->r_cb.arg, r, res, why, &r->r_st);
		r->r_in_cb--;
	}
	conn_req_free(r);
	conn_pump(c);
	conn_maybe_retire(c);
}

void
conn_req_sul(lws_sorted_usec_list_t *sul)
{
	struct conn_req *r = lws_container_of(sul, struct conn_req, r_sul);

	if (r->r_fail_pending) {
		r->r_fail_pending = 0;
		conn_req_finish(r, r->r_fail_res, r->r_reason);
		return;
	}
	if (r->r_where == RQ_PARKED) {
		/* Still refused for want of AUTH when time ran out. */
		if (r->r_kind == REQ_NEG) {
			r->r_neg_decided = 1;
			r->r_neg_res = NEGR_FAILED;
		}
		conn_req_finish(r, FETCH_CLOSED, r->r_reason);
		return;
	}
	conn_req_finish(r, FETCH_TIMEOUT,
	    r->r_kind == REQ_NEG ? "no negentropy answer before the timeout" :
				   "no EOSE before the timeout");
}

/* Ends r from the loop, soon, with res. */
static void
req_fail_soon(struct conn_req *r, enum conn_fetch_result res,
    const char *reason)
{
	r->r_fail_pending = 1;
	r->r_fail_res = res;
	snprintf(r->r_reason, sizeof(r->r_reason), "%s", reason);
	conn_sched(r->r_conn, &r->r_sul, conn_req_sul, 0);
}

/*
 * Finishes every request in c_ending with res and reason (NULL: each
 * request's own r_reason).  A done callback may cancel one still there.
 */
void
conn_end_stranded(struct conn *c, enum conn_fetch_result res,
    const char *reason)
{
	struct conn_req *r;
	char		 why[CONN_REASON_MAX + 1];

	while ((r = TAILQ_FIRST(&c->c_ending)) != NULL) {
		conn_req_unlink(r);
		snprintf(why, sizeof(why), "%s", reason ? reason : r->r_reason);
		conn_req_finish(r, res, why);
	}
}

/* The filter of r's next page into r_filters. */
void
conn_req_build_page(struct conn_req *r)
{
	struct buf b = BUF_INIT;

	buf_addc(&b, '{');
	if (json_write_members(&b, r->r_base, "until") > 0 && r->r_has_until)
		buf_addc(&b, ',');
	if (r->r_has_until)
		buf_printf(&b, "\"until\":%lld", (long long)r->r_until);
	buf_addc(&b, '}');
	free(r->r_filters);
	r->r_filters = buf_release(&b, &r->r_filters_len);
}

/*
 * Makes r's negentropy session over a copy of its set, replacing any
 * earlier one (a NEG-OPEN sent again after AUTH or a reconnect starts
 * afresh).  Returns 0, or -1 with err if the set or the frame limit is
 * refused.
 */
static int
req_neg_session(struct conn_req *r, char *err, size_t errlen)
{
	struct neg_item *items = NULL;

	neg_free(r->r_neg);
	r->r_neg = NULL;
	if (r->r_nitems > 0) {
		if ((items = reallocarray(NULL, r->r_nitems, sizeof(*items))) ==
		    NULL)
			fatal("conn negentropy");
		memcpy(items, r->r_items, r->r_nitems * sizeof(*items));
	}
	if ((r->r_neg = neg_client_new(items, r->r_nitems, CONN_NEG_FRAME, err,
		 errlen)) == NULL)
		return -1;
	r->r_nst.ns_items = neg_size(r->r_neg);
	r->r_neg_fresh = 1;
	return 0;
}

/*
 * r's opening message in hex: from the session conn_neg() built, or,
 * when r is sent again after a reconnect, from a new one over the same
 * items (the set and limit conn_neg() took: it cannot fail).
 */
static void
req_neg_open(struct conn_req *r, struct buf *hex)
{
	char err[128];

	if (!r->r_neg_fresh && req_neg_session(r, err, sizeof(err)) == -1)
		fatalx("conn %s: negentropy: %s", r->r_conn->c_key, err);
	r->r_neg_fresh = 0;
	if (neg_client_initiate(r->r_neg, hex) == -1)
		fatalx("conn %s: negentropy: cannot initiate",
		    r->r_conn->c_key);
}

/* Sends r's REQ (or NEG-OPEN) now; the caller checked admission. */
static void
req_admit(struct conn_req *r)
{
	struct conn *c = r->r_conn;
	struct buf   b = BUF_INIT, hex = BUF_INIT;

	conn_req_unlink(r);
	snprintf(r->r_subid, sizeof(r->r_subid), "%c%llx",
	    r->r_kind == REQ_LIVE      ? 'l' :
		r->r_kind == REQ_FETCH ? 'f' :
		r->r_kind == REQ_NEG   ? 'n' :
					 'p',
	    (unsigned long long)++c->c_mgr->m_next_sub);
	if (r->r_kind == REQ_NEG) {
		req_neg_open(r, &hex);
		buf_adds(&b, "[\"NEG-OPEN\",\"");
		buf_adds(&b, r->r_subid);
		buf_adds(&b, "\",");
		buf_add(&b, r->r_filters, r->r_filters_len);
		buf_adds(&b, ",\"");
		buf_add(&b, hex.b_data, hex.b_len);
		buf_adds(&b, "\"]");
		r->r_nst.ns_bytes_out += b.b_len;
		buf_free(&hex);
	} else {
		buf_adds(&b, "[\"REQ\",\"");
		buf_adds(&b, r->r_subid);
		buf_adds(&b, "\",");
		buf_add(&b, r->r_filters, r->r_filters_len);
		buf_addc(&b, ']');
	}
	conn_send(c, b.b_data, b.b_len);
	buf_free(&b);
	TAILQ_INSERT_TAIL(&c->c_open, r, r_entry);
	r->r_where = RQ_OPEN;
	c->c_nopen++;
	c->c_last_req_ms = conn_now_ms();
	if (r->r_kind != REQ_LIVE) {
		r->r_st.cs_pages++;
		r->r_page_inrange = r->r_page_new = 0;
		r->r_page_min = INT64_MAX;
		conn_sched(c, &r->r_sul, conn_req_sul, r->r_timeout);
	}
}

/* Opens c's share of the relay's budget once (conn_budget.c). */
static void
conn_budget_ready(struct conn *c)
{
	struct conn_mgr *m = c->c_mgr;

	if (c->c_budget_tried)
		return;
	c->c_budget_tried = 1;
	/* Without a run directory (a lone manager: tests, benchmarks) or
	 * a ledger file, our own ledger and pacing still bound us. */
	if (m->m_cfg->run_path == NULL ||
	    conn_budget_open(&c->c_budget, m->m_cfg->run_path, c->c_key) == 0)
		return;
	if (!m->m_no_budget_logged)
		log_warn(
		    "conn %s: no budget shared with the other roles in %s/%s",
		    c->c_key, m->m_cfg->run_path, CONN_BUDGET_DIR);
	m->m_no_budget_logged = 1;
}

/* Admits waiting requests as far as the link, cooldown, ledger and
 * pacing allow, ours and the relay's budget shared with the other
 * roles; schedules itself for the next pacing slot. */
void
conn_pump(struct conn *c)
{
	struct conn_req *r;
	struct timespec	 ts;
	int64_t		 now = conn_now_ms(), next, wait;
	int		 slot;

	if (c->c_cool_ms != 0 && now >= c->c_cool_ms) {
		c->c_cool_ms = 0;
		log_info("conn %s: rate-limit cooldown over", c->c_key);
		conn_report(c);
	}
	if (c->c_link != CONN_CONNECTED || c->c_wsi == NULL)
		return;
	if (c->c_cool_ms != 0) {
		conn_sched(c, &c->c_sul_pump, conn_sul_pump,
		    (double)(c->c_cool_ms - now) / 1000);
		return;
	}
	if (TAILQ_EMPTY(&c->c_pending) || c->c_nopen >= CONN_MAX_SUBS)
		return;
	next = c->c_last_req_ms + (int64_t)(c->c_interval * 1000);
	if (c->c_last_req_ms != 0 && now < next) {
		conn_sched(c, &c->c_sul_pump, conn_sul_pump,
		    (double)(next - now) / 1000);
		return;
	}
	conn_budget_ready(c);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (!conn_budget_take(&c->c_budget, c->c_interval,
		(int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, &slot,
		&wait)) {
		conn_sched(c, &c->c_sul_pump, conn_sul_pump,
		    (double)wait / 1e6);
		return;
	}
	r = TAILQ_FIRST(&c->c_pending);
	req_admit(r);
	r->r_slot = slot;
	if (!TAILQ_EMPTY(&c->c_pending) && c->c_nopen < CONN_MAX_SUBS)
		conn_sched(c, &c->c_sul_pump, conn_sul_pump, c->c_interval);
}

static void
conn_sul_pump(lws_sorted_usec_list_t *sul)
{
	conn_pump(lws_container_of(sul, struct conn, c_sul_pump));
}

/* Gets a link going (from the loop) when one is needed and none is. */
static void
conn_kick(struct conn *c)
{
	if (c->c_link == CONN_IDLE && conn_needed(c))
		conn_sched(c, &c->c_sul_retry, conn_sul_retry, 0);
	else if (c->c_link == CONN_CONNECTED)
		conn_pump(c);
}

/* ------------------------------------------------------------------ */
/* Rate limits, AUTH                                                   */

void
conn_rate_limited(struct conn *c, const char *what, const char *text,
    size_t len)
{
	struct config *cfg = c->c_mgr->m_cfg;
	double	       cool = cfg_scale_delay(cfg, CONN_RATE_LIMIT_COOLDOWN);
	char	       t[CONN_REASON_MAX + 1];

	conn_clean_text(t, text, len);
	c->c_rate_limits++;
	c->c_mgr->m_rate_limits++;
	c->c_cool_ms = conn_now_ms() + (int64_t)(cool * 1000);
	if ((c->c_interval *= 2) > cfg_scale_delay(cfg, CONN_REQ_INTERVAL_MAX))
		c->c_interval = cfg_scale_delay(cfg, CONN_REQ_INTERVAL_MAX);
	log_info(
	    "conn %s: rate limited (%s \"%s\"), no new request for %.1f s, then one every %.0f ms",
	    c->c_key, what, t, cool, c->c_interval * 1000);
	conn_sched(c, &c->c_sul_pump, conn_sul_pump, cool);
	conn_report(c);
}

/* Answers ["AUTH",challenge] with a kind 22242 event (NIP-42). */
void
conn_auth(struct conn *c, const char *challenge, size_t len)
{
	struct conn_mgr *m = c->c_mgr;
	struct buf	 tags = BUF_INIT, msg = BUF_INIT;
	struct event	*ev;
	uint8_t		 sk[SECKEY_LEN];
	char		 err[256];

	if (c->c_auth_sent)
		return; /* one answer per connection */
	c->c_auth_sent = 1;
	if (len == 0 || len > CONN_AUTH_CHALLENGE_MAX ||
	    memchr(challenge, '\0', len) != NULL) {
		conn_count_malformed(c);
		return;
	}
	if (config_owner_key(m->m_cfg, sk, err, sizeof(err)) == -1) {
		if (!m->m_no_owner_key_logged++)
			log_warnx(
			    "conn: cannot answer AUTH, no relay owner key: %s",
			    err);
		return;
	}
	buf_adds(&tags, "[[\"relay\",");
	buf_add_jstr(&tags, c->c_key, strlen(c->c_key));
	buf_adds(&tags, "],[\"challenge\",");
	buf_add_jstr(&tags, challenge, len);
	buf_adds(&tags, "]]");
	ev = event_new_signed(sk, (int64_t)time(NULL), AUTH_KIND, tags.b_data,
	    "");
	explicit_bzero(sk, sizeof(sk));
	buf_free(&tags);
	if (ev == NULL) {
		log_warnx("conn %s: cannot sign the AUTH event", c->c_key);
		return;
	}
	memcpy(c->c_auth_id, ev->id_hex, sizeof(c->c_auth_id));
	buf_adds(&msg, "[\"AUTH\",");
	buf_add(&msg, ev->json, ev->json_len);
	buf_addc(&msg, ']');
	conn_send(c, msg.b_data, msg.b_len);
	buf_free(&msg);
	event_destroy(ev);
	log_debug("conn %s: answered AUTH", c->c_key);
}

/* AUTH accepted or refused: requests parked for it go on or end. */
void
conn_auth_result(struct conn *c, int ok, const char *msg)
{
	struct conn_req *r;
	struct conn_req *next;

	c->c_authed = ok;
	log_info("conn %s: AUTH %s%s%s", c->c_key, ok ? "accepted" : "refused",
	    *msg ? ": " : "", msg);
	for (r = TAILQ_FIRST(&c->c_parked); r != NULL; r = next) {
		next = TAILQ_NEXT(r, r_entry);
		if (r->r_park != PARK_AUTH)
			continue;
		conn_req_unlink(r);
		if (ok)
			conn_req_enqueue(r);
		else if (r->r_kind == REQ_LIVE)
			conn_req_park(r, PARK_RECONNECT);
		else {
			TAILQ_INSERT_TAIL(&c->c_ending, r, r_entry);
			r->r_where = RQ_ENDING;
		}
	}
	conn_end_stranded(c, FETCH_CLOSED, NULL);
	conn_pump(c);
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static void
conn_free(struct conn *c)
{
	struct conn_reqq *lists[] = { &c->c_open, &c->c_pending, &c->c_parked,
		&c->c_ending };
	struct conn_req	 *r;
	size_t		  i;

	conn_detach(c, 0);
	conn_clear_link(c);
	for (i = 0; i < 4; i++)
		while ((r = TAILQ_FIRST(lists[i])) != NULL) {
			conn_req_unlink(r);
			conn_req_free(r);
		}
	lws_sul_cancel(&c->c_sul_connect);
	lws_sul_cancel(&c->c_sul_retry);
	lws_sul_cancel(&c->c_sul_pump);
	lws_sul_cancel(&c->c_sul_retire);
	conn_budget_close(&c->c_budget);
	TAILQ_REMOVE(&c->c_mgr->m_conns, c, c_entry);
	free(c);
}

/* 1 if nothing keeps c: no holder, no work, no backoff to remember. */
static int
conn_idle_out(const struct conn *c)
{
	if (c->c_holds > 0 || conn_needed(c))
		return 0;
	switch (c->c_link) {
	case CONN_BACKOFF:
	case CONN_DEAD:
	case CONN_REFUSED:
		return 0; /* kept until the retry timer */
	default:
		return 1;
	}
}

static void
conn_sul_retire(lws_sorted_usec_list_t *sul)
{
	struct conn *c = lws_container_of(sul, struct conn, c_sul_retire);

	c->c_retire_queued = 0;
	if (!conn_idle_out(c))
		return;
	log_debug("conn %s: retired", c->c_key);
	conn_free(c);
}

void
conn_maybe_retire(struct conn *c)
{
	if (c->c_retire_queued || !conn_idle_out(c))
		return;
	c->c_retire_queued = 1;
	conn_sched(c, &c->c_sul_retire, conn_sul_retire, 0);
}

struct conn *
conn_get(struct conn_mgr *m, const char *key, unsigned flags, const char **why)
{
	struct conn *c;
	const char  *dummy;

	if (why == NULL)
		why = &dummy;
	TAILQ_FOREACH(c, &m->m_conns, c_entry)
		if (strcmp(c->c_key, key) == 0) {
			c->c_flags |= flags;
			c->c_holds++;
			return c;
		}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("conn_get");
	if (relayurl_parse(key, &c->c_url) == -1) {
		free(c);
		*why = "not a canonical relay key";
		return NULL;
	}
	if (relayurl_is_self(key, m->m_self.rs_v, m->m_self.rs_n)) {
		free(c);
		*why = "this relay itself";
		return NULL;
	}
	snprintf(c->c_key, sizeof(c->c_key), "%s", key);
	c->c_mgr = m;
	c->c_flags = flags;
	c->c_holds = 1;
	c->c_link = c->c_reported = CONN_IDLE;
	c->c_interval = conn_req_interval(m->m_cfg);
	conn_budget_init(&c->c_budget);
	TAILQ_INIT(&c->c_pending);
	TAILQ_INIT(&c->c_open);
	TAILQ_INIT(&c->c_parked);
	TAILQ_INIT(&c->c_ending);
	TAILQ_INIT(&c->c_out);
	TAILQ_INSERT_TAIL(&m->m_conns, c, c_entry);
	return c;
}

void
conn_hold(struct conn *c)
{
	c->c_holds++;
}

void
conn_release(struct conn *c)
{
	if (c->c_holds == 0)
		fatalx("conn_release: %s has no holder", c->c_key);
	c->c_holds--;
	conn_maybe_retire(c);
}

/* ------------------------------------------------------------------ */
/* Requests from the role                                              */

/*
 * Parses r's filters_json (one object, or with many 1 also an array of
 * objects) into r_filters, the comma-separated text of a REQ's filters,
 * and r_match.  With docp, keeps the parsed object there (one object
 * only) for pagination.  Returns 0, or -1 with *why.
 */
static int
req_set_filters(struct conn_req *r, const char *filters_json, int many,
    int keep_doc, const char **why)
{
	struct json_doc	  *doc = NULL;
	const struct json *root, *e;
	struct buf	   b = BUF_INIT;
	char		   err[128];
	size_t		   n, i;

	root = json_parse(filters_json, strlen(filters_json), &doc, err,
	    sizeof(err));
	if (root == NULL) {
		*why = "filter is not JSON";
		return -1;
	}
	if (root->type == JSON_OBJECT)
		n = 1;
	else if (many && root->type == JSON_ARRAY && root->n > 0) {
		n = root->n;
		for (e = root->child; e != NULL; e = e->next)
			if (e->type != JSON_OBJECT) {
				*why = "filters must be JSON objects";
				goto fail;
			}
	} else {
		*why = many ? "filters must be an object or a non-empty array "
			      "of objects" :
			      "filter must be a JSON object";
		goto fail;
	}
	if ((r->r_match = calloc(n, sizeof(*r->r_match))) == NULL)
		fatal("conn request");
	for (i = 0, e = root->type == JSON_OBJECT ? root : root->child; i < n;
	     i++, e = e->next) {
		if (i > 0)
			buf_addc(&b, ',');
		json_write(&b, e);
	}
	for (i = 0, e = root->type == JSON_OBJECT ? root : root->child; i < n;
	     i++, e = e->next) {
		if (filter_parse(e, &r->r_match[i], err, sizeof(err)) == -1) {
			/* The relay may take what relayd would not: then
			 * delivered events go unchecked. */
			log_debug("conn: no event check for a filter: %s", err);
			filters_free(r->r_match, i);
			r->r_match = NULL;
			r->r_nmatch = 0;
			break;
		}
		r->r_nmatch = i + 1;
	}
	if (conn_req_size(b.b_len) > CONN_REQ_BUDGET) {
		*why = "REQ larger than the byte budget";
		goto fail;
	}
	r->r_filters = buf_release(&b, &r->r_filters_len);
	if (keep_doc) {
		r->r_doc = doc;
		r->r_base = root;
	} else
		json_free(doc);
	return 0;
fail:
	buf_free(&b);
	json_free(doc);
	return -1;
}

static struct conn_req *
req_new(struct conn *c, enum req_kind kind, int rank, double timeout,
    const struct conn_fetch_cb *cb)
{
	struct conn_req *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("conn request");
	r->r_conn = c;
	r->r_kind = kind;
	r->r_rank = rank;
	r->r_slot = -1;
	r->r_timeout =
	    timeout > 0 ? timeout : conn_fetch_timeout(c->c_mgr->m_cfg);
	if (cb != NULL)
		r->r_cb = *cb;
	r->r_st.cs_oldest = -1;
	r->r_page_min = INT64_MAX;
	return r;
}

/* Queues a new fetch or pagination, or ends it soon if no link can be
 * had now. */
static void
req_start(struct conn_req *r)
{
	struct conn *c = r->r_conn;
	char	     why[CONN_REASON_MAX + 1];

	switch (c->c_link) {
	case CONN_BACKOFF:
	case CONN_DEAD:
	case CONN_REFUSED:
		snprintf(why, sizeof(why), "%s until the next try: %.150s",
		    conn_state_name(c->c_link), c->c_reason);
		/* Parked so that conn_needed() holds c until it ends. */
		conn_req_park(r, PARK_RECONNECT);
		req_fail_soon(r, FETCH_DISCONNECTED, why);
		return;
	default:
		conn_req_enqueue(r);
		conn_kick(c);
	}
}

struct conn_req *
conn_fetch(struct conn *c, const char *filter_json, enum conn_prio prio,
    double timeout, const struct conn_fetch_cb *cb)
{
	struct conn_req *r;
	const char	*why;

	r = req_new(c, REQ_FETCH, (int)prio, timeout, cb);
	if (req_set_filters(r, filter_json, 0, 0, &why) == -1) {
		log_warnx("conn %s: fetch refused: %s", c->c_key, why);
		conn_req_free(r);
		return NULL;
	}
	req_start(r);
	return r;
}

struct conn_req *
conn_paginate(struct conn *c, const char *filter_json, enum conn_prio prio,
    double timeout, const struct conn_fetch_cb *cb)
{
	struct conn_req	  *r;
	const struct json *v;
	const char	  *why;

	r = req_new(c, REQ_PAGINATE, (int)prio, timeout, cb);
	if (req_set_filters(r, filter_json, 0, 1, &why) == -1)
		goto fail;
	/* Room for an "until" member the base may not have. */
	if (conn_req_size(r->r_filters_len + 32) > CONN_REQ_BUDGET) {
		why = "REQ larger than the byte budget";
		goto fail;
	}
	if ((v = json_get(r->r_base, "until")) != NULL) {
		if (v->type != JSON_NUMBER || !v->is_int) {
			why = "until is not an integer";
			goto fail;
		}
		r->r_has_until = 1;
		r->r_until = v->i;
	}
	if ((v = json_get(r->r_base, "since")) != NULL &&
	    v->type == JSON_NUMBER && v->is_int) {
		r->r_has_since = 1;
		r->r_since = v->i;
	}
	req_start(r);
	return r;
fail:
	log_warnx("conn %s: pagination refused: %s", c->c_key, why);
	conn_req_free(r);
	return NULL;
}

struct conn_req *
conn_neg(struct conn *c, const char *filter_json, const struct neg_item *items,
    size_t n, enum conn_prio prio, double timeout, const struct conn_neg_cb *cb)
{
	struct conn_req *r;
	const char	*why;
	char		 err[128];

	r = req_new(c, REQ_NEG, (int)prio, timeout, NULL);
	if (cb != NULL)
		r->r_ncb = *cb;
	if (req_set_filters(r, filter_json, 0, 0, &why) == -1)
		goto fail;
	if (n > NEG_MAX_ITEMS) {
		why = "more items than a negentropy set holds";
		goto fail;
	}
	if (n > 0) {
		if ((r->r_items = reallocarray(NULL, n, sizeof(*items))) ==
		    NULL)
			fatal("conn_neg");
		memcpy(r->r_items, items, n * sizeof(*items));
	}
	r->r_nitems = n;
	/* Built once here, so that a bad set is refused at once; the first
	 * admission sends it. */
	if (req_neg_session(r, err, sizeof(err)) == -1) {
		why = err;
		goto fail;
	}
	req_start(r);
	return r;
fail:
	log_warnx("conn %s: negentropy refused: %s", c->c_key, why);
	conn_req_free(r);
	return NULL;
}

void
conn_fetch_cancel(struct conn_req *r)
{
	struct conn *c = r->r_conn;

	if (r->r_kind == REQ_LIVE)
		fatalx("conn_fetch_cancel: %s: a live subscription", c->c_key);
	if (r->r_cancelled)
		return;
	conn_req_close(r);
	r->r_cancelled = 1;
	if (r->r_in_cb)
		return; /* freed when its callback returns */
	conn_req_free(r);
	conn_pump(c);
	conn_maybe_retire(c);
}

struct conn_req *
conn_live(struct conn *c, const char *filters_json, const char **why)
{
	struct conn_req *r;
	const char	*dummy;

	if (why == NULL)
		why = &dummy;
	if (c->c_nlive >= CONN_MAX_LIVE) {
		*why = "too many live subscriptions on this relay";
		return NULL;
	}
	r = req_new(c, REQ_LIVE, RANK_LIVE, 0, NULL);
	if (req_set_filters(r, filters_json, 1, 0, why) == -1) {
		conn_req_free(r);
		return NULL;
	}
	c->c_nlive++;
	switch (c->c_link) {
	case CONN_BACKOFF:
	case CONN_DEAD:
	case CONN_REFUSED:
		conn_req_park(r, PARK_RECONNECT);
		break;
	default:
		conn_req_enqueue(r);
		conn_kick(c);
	}
	return r;
}

void
conn_live_close(struct conn_req *r)
{
	struct conn *c = r->r_conn;

	if (r->r_kind != REQ_LIVE)
		fatalx("conn_live_close: %s: not a live subscription",
		    c->c_key);
	conn_req_close(r);
	c->c_nlive--;
	conn_req_free(r);
	conn_pump(c);
	conn_maybe_retire(c);
}

/* ------------------------------------------------------------------ */
/* The manager                                                         */

struct conn_mgr *
conn_mgr_new(struct lws_context *context, struct lws_vhost *vhost,
    struct config *cfg, const struct conn_hooks *hooks, void *arg)
{
	struct conn_mgr *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		fatal("conn_mgr_new");
	m->m_lws = context;
	m->m_vhost = vhost;
	m->m_cfg = cfg;
	m->m_hooks = hooks;
	m->m_arg = arg;
	TAILQ_INIT(&m->m_conns);
	if (cfg->domain == NULL ||
	    relayurl_self_init(&m->m_self, cfg->domain) == -1)
		log_warnx(
		    "conn: NGIT_DOMAIN \"%s\" gives no relay key; only the checks on addresses keep us from dialling ourselves",
		    cfg->domain ? cfg->domain : "");
	return m;
}

void
conn_mgr_free(struct conn_mgr *m)
{
	struct conn *c;

	if (m == NULL)
		return;
	while ((c = TAILQ_FIRST(&m->m_conns)) != NULL)
		conn_free(c);
	free(m);
}

void
conn_mgr_show(struct conn_mgr *m, cJSON *arr)
{
	struct conn    *c;
	cJSON	       *o;
	enum conn_state s;
	int64_t		now = conn_now_ms(), until = 0;

	TAILQ_FOREACH(c, &m->m_conns, c_entry) {
		if ((o = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(arr, o))
			fatalx("conn_mgr_show: out of memory");
		s = conn_state(c);
		cJSON_AddStringToObject(o, "relay", c->c_key);
		cJSON_AddStringToObject(o, "state", conn_state_name(s));
		if (s == CONN_RATE_LIMITED)
			until = c->c_cool_ms;
		else if (s == CONN_BACKOFF || s == CONN_DEAD ||
		    s == CONN_REFUSED)
			until = c->c_retry_ms;
		else
			until = 0;
		if (until != 0)
			cJSON_AddNumberToObject(o, "until",
			    (double)(time(NULL) + (until - now + 999) / 1000));
		if (c->c_reason[0] != '\0')
			cJSON_AddStringToObject(o, "reason", c->c_reason);
		cJSON_AddNumberToObject(o, "holders", c->c_holds);
		cJSON_AddNumberToObject(o, "subscriptions", c->c_nopen);
		cJSON_AddNumberToObject(o, "budget_slots",
		    conn_budget_held(&c->c_budget));
		cJSON_AddNumberToObject(o, "live", c->c_nlive);
		cJSON_AddNumberToObject(o, "queued", c->c_npending);
		cJSON_AddNumberToObject(o, "parked", c->c_nparked);
		cJSON_AddNumberToObject(o, "bytes_in", (double)c->c_bytes_in);
		cJSON_AddNumberToObject(o, "bytes_out", (double)c->c_bytes_out);
		cJSON_AddNumberToObject(o, "events", (double)c->c_events);
		cJSON_AddNumberToObject(o, "failures", c->c_failures);
		cJSON_AddNumberToObject(o, "failures_total",
		    (double)c->c_failures_total);
		cJSON_AddNumberToObject(o, "malformed", (double)c->c_malformed);
		cJSON_AddNumberToObject(o, "req_interval_ms",
		    c->c_interval * 1000);
		cJSON_AddNumberToObject(o, "rate_limits",
		    (double)c->c_rate_limits);
		cJSON_AddNumberToObject(o, "stray", (double)c->c_stray);
		cJSON_AddNumberToObject(o, "bad_events",
		    (double)c->c_bad_events);
		cJSON_AddNumberToObject(o, "ingest_dropped",
		    (double)c->c_ingest_dropped);
		cJSON_AddNumberToObject(o, "neg_sessions",
		    (double)c->c_neg_sessions);
		cJSON_AddNumberToObject(o, "neg_bytes", (double)c->c_neg_bytes);
	}
}

void
conn_mgr_stats(struct conn_mgr *m, cJSON *metrics)
{
	struct conn *c;
	unsigned     by_state[CONN_NSTATES] = { 0 };
	uint64_t     open = 0, live = 0, queued = 0, parked = 0;
	char	     name[96];
	int	     s;

	TAILQ_FOREACH(c, &m->m_conns, c_entry) {
		by_state[conn_state(c)]++;
		open += c->c_nopen;
		live += c->c_nlive;
		queued += c->c_npending;
		parked += c->c_nparked;
	}
	for (s = 0; s < CONN_NSTATES; s++) {
		snprintf(name, sizeof(name), "graspd_conn_relays{state=\"%s\"}",
		    conn_state_name(s));
		role_metric(metrics, name, by_state[s]);
	}
	role_metric(metrics, "graspd_conn_subscriptions", (double)open);
	role_metric(metrics, "graspd_conn_live_subscriptions", (double)live);
	role_metric(metrics, "graspd_conn_queued_requests", (double)queued);
	role_metric(metrics, "graspd_conn_parked_requests", (double)parked);
	role_metric(metrics, "graspd_conn_bytes_in_total",
	    (double)m->m_bytes_in);
	role_metric(metrics, "graspd_conn_bytes_out_total",
	    (double)m->m_bytes_out);
	role_metric(metrics, "graspd_conn_events_total", (double)m->m_events);
	role_metric(metrics, "graspd_conn_failures_total",
	    (double)m->m_failures);
	role_metric(metrics, "graspd_conn_malformed_total",
	    (double)m->m_malformed);
	role_metric(metrics, "graspd_conn_rate_limits_total",
	    (double)m->m_rate_limits);
	role_metric(metrics, "graspd_conn_stray_events_total",
	    (double)m->m_stray);
	role_metric(metrics, "graspd_conn_bad_events_total",
	    (double)m->m_bad_events);
	role_metric(metrics, "graspd_conn_ingest_dropped_total",
	    (double)m->m_ingest_dropped);
	for (s = 0; s <= FETCH_RATE_LIMITED; s++) {
		snprintf(name, sizeof(name),
		    "graspd_conn_fetches_total{result=\"%s\"}",
		    conn_fetch_result_name(s));
		role_metric(metrics, name, (double)m->m_results[s]);
	}
	for (s = 0; s <= NEGR_RATE_LIMITED; s++) {
		snprintf(name, sizeof(name),
		    "graspd_conn_negentropy_total{result=\"%s\"}",
		    conn_neg_result_name(s));
		role_metric(metrics, name, (double)m->m_neg_results[s]);
	}
	role_metric(metrics, "graspd_conn_negentropy_rounds_total",
	    (double)m->m_neg_rounds);
	role_metric(metrics, "graspd_conn_negentropy_bytes_in_total",
	    (double)m->m_neg_bytes_in);
	role_metric(metrics, "graspd_conn_negentropy_bytes_out_total",
	    (double)m->m_neg_bytes_out);
}
