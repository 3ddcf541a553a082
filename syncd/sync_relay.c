/*
 * sync_relay.c: syncd's work on one remote relay (see syncd.h).  The
 * relay's wanted targets are recomputed from the inventory's tables; what is
 * wanted and not yet fetched is requested as byte-packed, paginated
 * historic filters (a diff, never a re-send of everything), and the whole
 * wanted set is covered by live subscriptions packed under the
 * connection's cap, with anything beyond it polled on a rotation.  A
 * historic filter is first reconciled with NIP-77 negentropy against our
 * stored events and only the ids the relay has and we lack are fetched,
 * in packed "ids" filters; a relay that does not speak NIP-77 gets the
 * paginated REQ instead, from then on.  An
 * outage shorter than 15 minutes is caught up from 15 minutes before the
 * disconnect; a longer one, and the daily pass, resync everything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "syncd.h"

enum hreq_kind {
	HR_L1,
	HR_SET,
	HR_CATCHUP,
	HR_ROTATE,
};

/* The values one diff asked for, shared by the requests that carry
 * them; a failed request forgets them, not the whole set. */
struct sync_vals {
	unsigned sv_refs;
	size_t	 sv_n;
	char   **sv_v;
};

struct sync_hreq {
	LIST_ENTRY(sync_hreq)  hr_entry;
	struct sync_relay     *hr_sr;
	struct conn_req	      *hr_req;
	enum hreq_kind	       hr_kind;
	enum sync_set	       hr_set;
	int64_t		       hr_since;       /* catch-up: its since */
	struct sync_vals      *hr_vals;	       /* HR_SET: what it asks */
	char		      *hr_filter;      /* the historic filter */
	int		       hr_negotiating; /* hr_req is a conn_neg() */
	/* After a reconciliation: the fetches of the needed ids. */
	struct conn_req	     **hr_fetch;
	size_t		       hr_nfetch;
	size_t		       hr_open;
	int		       hr_fetch_failed;
	uint64_t	       hr_fetch_dropped;
	enum conn_fetch_result hr_fetch_res;
	uint8_t (*hr_asking)[32]; /* in sr_asking for it */
	size_t hr_nasking;
};

/* The tag letters each set is asked by (reference brief 3.2). */
static const char *const set_fields[SET_COUNT][3] = {
	[SET_D] = { "d", NULL, NULL },
	[SET_REPOS] = { "a", "A", "q" },
	[SET_IDS] = { "e", "E", "q" },
	[SET_ADDRS] = { "a", "A", "q" },
};

static void sync_relay_catchup(struct sync_relay *, int64_t since,
    const char *why);
static void arm_retry(struct sync_relay *);
static void note_gap(struct sync_relay *);

static int64_t
now_unix(void)
{
	return (int64_t)time(NULL);
}

static void
schedule(struct sync_relay *sr, lws_sorted_usec_list_t *sul, sul_cb_t cb,
    double secs)
{
	lws_sul_schedule(sr->sr_sd->sd_ctx->r_lws, 0, sul, cb,
	    (lws_usec_t)(secs * 1e6) + 1);
}

static void
daily_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_relay *sr =
	    lws_container_of(sul, struct sync_relay, sr_sul_daily);
	double span = SYNC_DAILY_MAX - SYNC_DAILY_MIN;
	int    s;

	log_info("%s: daily full resync", sr->sr_key);
	for (s = 0; s < SET_COUNT; s++) {
		hmap_free(&sr->sr_have[s]);
	}
	sr->sr_l1_have = 0;
	sync_relay_update(sr);
	schedule(sr, &sr->sr_sul_daily, daily_cb,
	    sync_delay(sr->sr_sd,
		SYNC_DAILY_MIN + span * ((double)random() / RAND_MAX)));
}

struct sync_relay *
sync_relay_new(struct syncd *sd, const char *key, int boot)
{
	struct sync_relay *sr;
	const char	  *why = NULL;
	double		   span = SYNC_DAILY_MAX - SYNC_DAILY_MIN;

	if ((sr = calloc(1, sizeof(*sr))) == NULL ||
	    (sr->sr_key = strdup(key)) == NULL)
		fatal("sync_relay_new");
	sr->sr_sd = sd;
	sr->sr_bootstrap = boot;
	LIST_INIT(&sr->sr_hreqs);
	sr->sr_conn =
	    conn_get(sd->sd_conns, key, boot ? CONN_TRUSTED : 0, &why);
	if (sr->sr_conn == NULL) {
		log_info("%s: not a sync target: %s", key, why ? why : "?");
		free(sr->sr_key);
		free(sr);
		return NULL;
	}
	schedule(sr, &sr->sr_sul_daily, daily_cb,
	    sync_delay(sd,
		SYNC_DAILY_MIN + span * ((double)random() / RAND_MAX)));
	log_info("%s: tracking%s", key, boot ? " (bootstrap)" : "");
	return sr;
}

static struct sync_vals *
vals_new(const char *const *v, size_t n)
{
	struct sync_vals *sv;
	size_t		  i;

	if ((sv = calloc(1, sizeof(*sv))) == NULL ||
	    (sv->sv_v = calloc(n, sizeof(char *))) == NULL)
		fatal("vals_new");
	for (i = 0; i < n; i++)
		if ((sv->sv_v[i] = strdup(v[i])) == NULL)
			fatal("vals_new");
	sv->sv_n = n;
	sv->sv_refs = 1;
	return sv;
}

static void
vals_release(struct sync_vals *sv)
{
	if (sv == NULL || --sv->sv_refs > 0)
		return;
	strv_free(sv->sv_v, sv->sv_n);
	free(sv);
}

static void
hreq_free(struct sync_hreq *hr)
{
	size_t i;

	for (i = 0; i < hr->hr_nasking; i++)
		hmap_del(&hr->hr_sr->sr_asking, hr->hr_asking[i], 32);
	free(hr->hr_asking);
	LIST_REMOVE(hr, hr_entry);
	hr->hr_sr->sr_historic--;
	vals_release(hr->hr_vals);
	free(hr->hr_filter);
	free(hr->hr_fetch);
	free(hr);
}

/* Cancels whatever hr still has in flight. */
static void
hreq_cancel(struct sync_hreq *hr)
{
	size_t i;

	if (hr->hr_req != NULL)
		conn_fetch_cancel(hr->hr_req);
	hr->hr_req = NULL;
	for (i = 0; i < hr->hr_nfetch; i++)
		if (hr->hr_fetch[i] != NULL)
			conn_fetch_cancel(hr->hr_fetch[i]);
	hr->hr_open = 0;
}

static void
live_close_all(struct sync_relay *sr)
{
	size_t i;

	for (i = 0; i < sr->sr_nlive; i++)
		conn_live_close(sr->sr_live[i]);
	sr->sr_nlive = 0;
}

void
sync_relay_free(struct sync_relay *sr)
{
	struct sync_hreq *hr;
	int		  s;

	if (sr == NULL)
		return;
	while ((hr = LIST_FIRST(&sr->sr_hreqs)) != NULL) {
		hreq_cancel(hr);
		hreq_free(hr);
	}
	live_close_all(sr);
	strv_clear(&sr->sr_rotate, &sr->sr_nrotate);
	lws_sul_cancel(&sr->sr_sul_daily);
	lws_sul_cancel(&sr->sr_sul_retry);
	lws_sul_cancel(&sr->sr_sul_rotate);
	lws_sul_cancel(&sr->sr_sul_gap);
	for (s = 0; s < SET_COUNT; s++) {
		hmap_free(&sr->sr_want[s]);
		hmap_free(&sr->sr_have[s]);
		hmap_free(&sr->sr_live_cover[s]);
	}
	hmap_free(&sr->sr_delivered);
	hmap_free(&sr->sr_asking);
	conn_release(sr->sr_conn);
	log_info("%s: no longer a target", sr->sr_key);
	free(sr->sr_key);
	free(sr);
}

void
sync_relay_clear_want(struct sync_relay *sr)
{
	int s;

	for (s = 0; s < SET_COUNT; s++)
		hmap_free(&sr->sr_want[s]);
}

void
sync_relay_want(struct sync_relay *sr, enum sync_set set, const char *v)
{
	/* Keys keep their NUL so that they can be handed out as strings. */
	hmap_put(&sr->sr_want[set], v, strlen(v) + 1, (void *)1);
}

void
sync_relay_want_thread(struct sync_relay *sr, const struct sync_thread *th)
{
	size_t k;

	sync_relay_want(sr, SET_IDS, th->st_root);
	for (k = 0; k < th->st_nids; k++)
		sync_relay_want(sr, SET_IDS, th->st_ids[k]);
	for (k = 0; k < th->st_naddrs; k++)
		sync_relay_want(sr, SET_ADDRS, th->st_addrs[k]);
}

/*
 * The end of a historic request: ok, or failed with what (a result name)
 * and reason, so that what it asked is asked again later.  Frees hr.
 */
static void
hreq_end(struct sync_hreq *hr, int ok, const char *what, const char *reason)
{
	struct sync_relay *sr = hr->hr_sr;
	size_t		   i;

	if (!ok) {
		log_info("%s: historic request failed (%s%s%s); retrying later",
		    sr->sr_key, what, reason ? ": " : "", reason ? reason : "");
		sr->sr_failed++;
		switch (hr->hr_kind) {
		case HR_L1:
			sr->sr_l1_have = 0;
			break;
		case HR_SET:
			/* Ask for what this diff asked again, in full; the
			 * rest of the set stays fetched, so that a short
			 * outage still catches it up from since. */
			for (i = 0; i < hr->hr_vals->sv_n; i++)
				hmap_del(&sr->sr_have[hr->hr_set],
				    hr->hr_vals->sv_v[i],
				    strlen(hr->hr_vals->sv_v[i]) + 1);
			break;
		case HR_CATCHUP:
			if (sr->sr_catchup_since == 0 ||
			    hr->hr_since < sr->sr_catchup_since)
				sr->sr_catchup_since = hr->hr_since;
			break;
		case HR_ROTATE:
			break;
		}
		arm_retry(sr);
	}
	hreq_free(hr);
	if (sr->sr_historic == 0 && ok && sr->sr_failed == 0 &&
	    sr->sr_l1_have) {
		if (sr->sr_synced_at == 0)
			log_info(
			    "%s: historic sync complete (%llu events delivered)",
			    sr->sr_key, (unsigned long long)sr->sr_events);
		sr->sr_synced_at = now_unix();
	}
	if (sr->sr_historic == 0)
		sync_historic_idle(sr->sr_sd);
}

static void
hreq_done(void *arg, struct conn_req *req, enum conn_fetch_result res,
    const char *reason, const struct conn_fetch_stats *st)
{
	struct sync_hreq *hr = arg;

	hr->hr_req = NULL;
	/* A relay refusing a filter outright will refuse it again.  Events
	 * that did not reach relayd (it lagged) make the request fail, so
	 * that the retry asks for them again. */
	if ((res == FETCH_EOSE || res == FETCH_CLOSED) && st->cs_dropped > 0)
		hreq_end(hr, 0, "ingest",
		    "events dropped on the way to relayd");
	else
		hreq_end(hr, res == FETCH_EOSE || res == FETCH_CLOSED,
		    conn_fetch_result_name(res), reason);
}

/* hr's filter as a paginated REQ.  Frees hr if the connection refuses
 * it (it would refuse it again). */
static void
hreq_paginate(struct sync_hreq *hr)
{
	struct sync_relay   *sr = hr->hr_sr;
	struct conn_fetch_cb cb;

	memset(&cb, 0, sizeof(cb));
	cb.done = hreq_done;
	cb.arg = hr;
	hr->hr_req =
	    conn_paginate(sr->sr_conn, hr->hr_filter, CONN_PRIO_NORMAL, 0, &cb);
	if (hr->hr_req == NULL) {
		log_warnx("%s: filter refused by the connection: %.200s",
		    sr->sr_key, hr->hr_filter);
		hreq_end(hr, 1, "refused", NULL);
	}
}

/* One event of an id fetch: it counts as received, whatever relayd
 * decides about it (the reference's QUIRK: no refetch forever). */
static void
idfetch_event(void *arg, struct conn_req *req, const struct event *ev)
{
	struct sync_hreq *hr = arg;

	sync_neg_delivered(hr->hr_sr, ev->id);
	/* ["EVENT","<subid>",<event>] */
	hr->hr_sr->sr_neg_fetch_bytes += ev->json_len + CONN_SUBID_MAX + 14;
}

static void
idfetch_done(void *arg, struct conn_req *req, enum conn_fetch_result res,
    const char *reason, const struct conn_fetch_stats *st)
{
	struct sync_hreq *hr = arg;
	size_t		  i;

	for (i = 0; i < hr->hr_nfetch; i++)
		if (hr->hr_fetch[i] == req)
			hr->hr_fetch[i] = NULL;
	if (res != FETCH_EOSE && res != FETCH_CLOSED && !hr->hr_fetch_failed) {
		hr->hr_fetch_failed = 1;
		hr->hr_fetch_res = res;
	}
	/* Dropped ids were not marked delivered: the retry's
	 * reconciliation needs them again. */
	hr->hr_fetch_dropped += st->cs_dropped;
	if (--hr->hr_open > 0)
		return;
	if (!hr->hr_fetch_failed && hr->hr_fetch_dropped > 0)
		hreq_end(hr, 0, "ingest",
		    "events dropped on the way to relayd");
	else
		hreq_end(hr, !hr->hr_fetch_failed,
		    hr->hr_fetch_failed ?
			conn_fetch_result_name(hr->hr_fetch_res) :
			"eose",
		    reason);
}

/* Fetches the needed ids of a reconciliation in packed "ids" filters. */
static void
hreq_fetch_need(struct sync_hreq *hr, const struct neg_idlist *need)
{
	struct sync_relay   *sr = hr->hr_sr;
	struct conn_filters  fl = { NULL, 0 };
	struct conn_fetch_cb cb;
	const char	   **v = NULL, *why;
	char(*hex)[65] = NULL;
	size_t i, n = 0;

	if (need->il_n > 0 &&
	    ((hex = calloc(need->il_n, sizeof(*hex))) == NULL ||
		(v = calloc(need->il_n, sizeof(*v))) == NULL))
		fatal("hreq_fetch_need");
	if (need->il_n > 0 &&
	    (hr->hr_asking = calloc(need->il_n, sizeof(*hr->hr_asking))) ==
		NULL)
		fatal("hreq_fetch_need");
	for (i = 0; i < need->il_n; i++) {
		/* Delivered already, or on its way for another filter
		 * (a comment matches both "#e" and "#E" of its root). */
		if (sync_neg_was_delivered(sr, need->il_ids[i]) ||
		    hmap_get(&sr->sr_asking, need->il_ids[i], 32) != NULL) {
			sr->sr_neg_skipped++;
			continue;
		}
		hmap_put(&sr->sr_asking, need->il_ids[i], 32, (void *)1);
		memcpy(hr->hr_asking[hr->hr_nasking++], need->il_ids[i], 32);
		hex_encode(need->il_ids[i], 32, hex[n]);
		v[n] = hex[n];
		n++;
	}
	if (n > 0 &&
	    conn_pack_filters("{}", "ids", v, n, CONN_REQ_BUDGET,
		SYNC_NEG_IDS_PER_REQ, &fl, &why) == -1)
		log_warnx("%s: cannot pack %zu ids: %s", sr->sr_key, n, why);
	free(v);
	free(hex);
	if (fl.cf_n == 0) {
		hreq_end(hr, 1, "done", NULL);
		return;
	}
	if ((hr->hr_fetch = calloc(fl.cf_n, sizeof(*hr->hr_fetch))) == NULL)
		fatal("hreq_fetch_need");
	memset(&cb, 0, sizeof(cb));
	cb.event = idfetch_event;
	cb.done = idfetch_done;
	cb.arg = hr;
	for (i = 0; i < fl.cf_n; i++) {
		sr->sr_neg_fetch_bytes += conn_req_size(strlen(fl.cf_v[i]));
		if ((hr->hr_fetch[hr->hr_nfetch] = conn_fetch(sr->sr_conn,
			 fl.cf_v[i], CONN_PRIO_NORMAL, 0, &cb)) != NULL) {
			hr->hr_nfetch++;
			hr->hr_open++;
		}
	}
	conn_filters_free(&fl);
	if (hr->hr_open == 0)
		hreq_end(hr, 1, "done", NULL);
}

static void
hreq_neg_done(void *arg, struct conn_req *req, enum conn_neg_result res,
    const char *reason, const struct conn_neg_stats *st)
{
	struct sync_hreq  *hr = arg;
	struct sync_relay *sr = hr->hr_sr;

	hr->hr_req = NULL;
	hr->hr_negotiating = 0;
	sr->sr_neg_rounds += st->ns_rounds;
	sr->sr_neg_bytes += st->ns_bytes_in + st->ns_bytes_out;
	switch (res) {
	case NEGR_DONE:
		sr->sr_neg_sessions++;
		sr->sr_neg_have += st->ns_have->il_n;
		sr->sr_neg_need += st->ns_need->il_n;
		/* GRASP-02 pulls: what only we have is counted, not sent. */
		hreq_fetch_need(hr, st->ns_need);
		break;
	case NEGR_UNSUPPORTED:
		sync_neg_unsupported(sr->sr_sd, sr->sr_key, reason);
		sr->sr_neg_fallbacks++;
		hreq_paginate(hr);
		/* The others queued for this relay need not wait for the
		 * same answer (a silent relay would cost a timeout each). */
		for (;;) {
			struct sync_hreq *o;

			LIST_FOREACH(o, &sr->sr_hreqs, hr_entry)
				if (o->hr_negotiating)
					break;
			if (o == NULL)
				break;
			conn_fetch_cancel(o->hr_req);
			o->hr_req = NULL;
			o->hr_negotiating = 0;
			sr->sr_neg_fallbacks++;
			hreq_paginate(o);
		}
		break;
	case NEGR_FAILED:
		log_info(
		    "%s: negentropy failed (%s): paginated REQ for this filter",
		    sr->sr_key, reason);
		sr->sr_neg_fallbacks++;
		hreq_paginate(hr);
		break;
	case NEGR_DISCONNECTED:
		hreq_end(hr, 0, "disconnected", reason);
		break;
	case NEGR_RATE_LIMITED:
		hreq_end(hr, 0, "rate_limited", reason);
		break;
	}
}

/*
 * Starts hr with a reconciliation.  Returns 0, or -1 if our set cannot
 * be had or the connection refuses it (then hr is left to paginate).
 */
static int
hreq_neg(struct sync_hreq *hr)
{
	struct sync_relay *sr = hr->hr_sr;
	struct conn_neg_cb cb;
	struct neg_item	  *items;
	size_t		   n;
	const char	  *why;

	if (sync_neg_items(sr->sr_sd, hr->hr_filter, &items, &n, &why) == -1) {
		log_info("%s: no negentropy for a filter (%s): paginated REQ",
		    sr->sr_key, why);
		return -1;
	}
	memset(&cb, 0, sizeof(cb));
	cb.done = hreq_neg_done;
	cb.arg = hr;
	hr->hr_req = conn_neg(sr->sr_conn, hr->hr_filter, items, n,
	    CONN_PRIO_NORMAL, 0, &cb);
	free(items);
	if (hr->hr_req == NULL)
		return -1;
	hr->hr_negotiating = 1;
	return 0;
}

static void
historic_since(struct sync_relay *sr, const char *filter, enum hreq_kind kind,
    enum sync_set set, int64_t since, struct sync_vals *vals)
{
	struct sync_hreq *hr;

	if ((hr = calloc(1, sizeof(*hr))) == NULL ||
	    (hr->hr_filter = strdup(filter)) == NULL)
		fatal("historic");
	hr->hr_sr = sr;
	hr->hr_kind = kind;
	hr->hr_set = set;
	hr->hr_since = since;
	hr->hr_vals = vals;
	if (vals != NULL)
		vals->sv_refs++;
	LIST_INSERT_HEAD(&sr->sr_hreqs, hr, hr_entry);
	sr->sr_historic++;
	if (sync_neg_allowed(sr->sr_sd, sr->sr_key) && hreq_neg(hr) == 0)
		return;
	hreq_paginate(hr);
}

static void
historic(struct sync_relay *sr, const char *filter, enum hreq_kind kind,
    enum sync_set set)
{
	historic_since(sr, filter, kind, set, 0, NULL);
}

/* The JSON object text base with extra members ("" for none). */
static void
base_of(struct buf *b, const char *kinds, int live, int64_t since)
{
	int first = 1;

	buf_reset(b);
	buf_addc(b, '{');
	if (kinds) {
		buf_adds(b, kinds);
		first = 0;
	}
	if (live) {
		buf_adds(b, first ? "\"limit\":0" : ",\"limit\":0");
		first = 0;
	}
	if (since > 0)
		buf_printf(b, "%s\"since\":%lld", first ? "" : ",",
		    (long long)since);
	buf_addc(b, '}');
}

/* Packs values of set into filters (appended to out). */
static void
pack_set(struct sync_relay *sr, enum sync_set set, const char *const *vals,
    size_t n, int live, int64_t since, struct conn_filters *out)
{
	struct buf  b = BUF_INIT;
	const char *why;
	int	    f;

	if (n == 0)
		return;
	base_of(&b, set == SET_D ? SYNC_STATE_BASE : NULL, live, since);
	for (f = 0; f < 3 && set_fields[set][f]; f++)
		if (conn_pack_filters(b.b_data, set_fields[set][f], vals, n,
			CONN_REQ_BUDGET, 0, out, &why) == -1)
			log_warnx("%s: cannot pack %zu values: %s", sr->sr_key,
			    n, why);
	buf_free(&b);
}

/* The keys of a set as a string array (pointing into the map). */
static const char **
set_values(const struct hmap *m, size_t *n)
{
	const char **v;
	const void  *key;
	size_t	     it = 0;

	*n = 0;
	if ((v = calloc(m->hm_n + 1, sizeof(*v))) == NULL)
		fatal("set_values");
	while (hmap_next(m, &it, &key, NULL, NULL))
		v[(*n)++] = key;
	return v;
}

static char *
with_since(const char *filter, int64_t since)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "{\"since\":%lld%s%s", (long long)since,
	    strcmp(filter, "{}") == 0 ? "" : ",", filter + 1);
	return buf_release(&b, NULL);
}

/* A copy of a live filter without its "limit":0 member. */
static char *
strip_limit0(const char *f)
{
	static const char *const pats[] = { "\"limit\":0,", ",\"limit\":0",
		"\"limit\":0" };
	char			*d, *p;
	size_t			 i, n;

	if ((d = strdup(f)) == NULL)
		fatal("strip_limit0");
	for (i = 0; i < 3; i++) {
		if ((p = strstr(d, pats[i])) != NULL) {
			n = strlen(pats[i]);
			memmove(p, p + n, strlen(p + n) + 1);
			break;
		}
	}
	return d;
}

/* Closes the live subscriptions not marked in keep. */
static void
live_close_replaced(struct sync_relay *sr, const int *keep)
{
	size_t j;

	for (j = 0; j < sr->sr_nlive; j++) {
		if (keep[j] || sr->sr_live[j] == NULL)
			continue;
		conn_live_close(sr->sr_live[j]);
		sr->sr_live[j] = NULL;
	}
}

/* Values live REQs cover that are no longer wanted. */
static size_t
live_draining(const struct sync_relay *sr)
{
	const void *k;
	size_t	    it, len, n = 0;
	int	    s;

	for (s = 0; s < SET_COUNT; s++)
		for (it = 0;
		     hmap_next(&sr->sr_live_cover[s], &it, &k, &len, NULL);)
			n += hmap_get(&sr->sr_want[s], k, len) == NULL;
	return n;
}

/* 1 if every wanted value is one the live REQs were built from. */
static int
live_covers_want(const struct sync_relay *sr)
{
	const void *k;
	size_t	    it, len;
	int	    s;

	for (s = 0; s < SET_COUNT; s++)
		for (it = 0; hmap_next(&sr->sr_want[s], &it, &k, &len, NULL);)
			if (hmap_get(&sr->sr_live_cover[s], k, len) == NULL)
				return 0;
	return 1;
}

/* Records the wanted sets as what the live REQs now cover. */
static void
live_cover_want(struct sync_relay *sr)
{
	const void *k;
	size_t	    it, len;
	int	    s;

	for (s = 0; s < SET_COUNT; s++) {
		hmap_free(&sr->sr_live_cover[s]);
		for (it = 0; hmap_next(&sr->sr_want[s], &it, &k, &len, NULL);)
			hmap_put(&sr->sr_live_cover[s], k, len, (void *)1);
	}
}

/*
 * Live: every wanted filter, packed into as few REQs as fit the cap.
 * GRASP-03: "removal-only changes let existing shared live subscriptions
 * drain naturally": when nothing was added since the live REQs were
 * built (every one of them taken), they stay as they are, covering what
 * is no longer wanted too, until an addition repacks them (or the relay
 * stops being a target at all).
 */
/*
 * Every wanted filter with "limit":0, grouped into at most CONN_MAX_LIVE
 * REQ arrays (appended to reqs); what does not fit is kept, without
 * "limit":0, in the rotation, polled every SYNC_ROTATE_PERIOD instead.
 */
static void
live_group(struct sync_relay *sr, struct conn_filters *reqs)
{
	struct conn_filters fl = { NULL, 0 };
	const char	  **vals;
	size_t		   *over, nover, i, n;
	int		    s;

	fl.cf_v = calloc(1, sizeof(char *));
	if (fl.cf_v == NULL ||
	    (fl.cf_v[0] = strdup("{\"kinds\":[30617,10317],"
				 "\"limit\":0}")) == NULL)
		fatal("live_group");
	fl.cf_n = 1;
	for (s = 0; s < SET_COUNT; s++) {
		vals = set_values(&sr->sr_want[s], &n);
		pack_set(sr, s, vals, n, 1, 0, &fl);
		free(vals);
	}
	if ((over = calloc(fl.cf_n, sizeof(*over))) == NULL)
		fatal("live_group");
	nover = conn_group_filters((const char *const *)fl.cf_v, fl.cf_n,
	    CONN_REQ_BUDGET, CONN_MAX_LIVE, reqs, over);
	strv_clear(&sr->sr_rotate, &sr->sr_nrotate);
	if (nover > 0 &&
	    (sr->sr_rotate = calloc(nover, sizeof(char *))) == NULL)
		fatal("live_group");
	for (i = 0; i < nover; i++)
		sr->sr_rotate[sr->sr_nrotate++] =
		    strip_limit0(fl.cf_v[over[i]]);
	free(over);
	conn_filters_free(&fl);
}

/*
 * Live: every wanted filter, packed into as few REQs as fit the cap.
 * GRASP-03: "removal-only changes let existing shared live subscriptions
 * drain naturally": when nothing was added since the live REQs were
 * built (every one of them taken), they stay as they are, covering what
 * is no longer wanted too, until an addition repacks them (or the relay
 * stops being a target at all).
 */
static void
refresh_live(struct sync_relay *sr)
{
	struct conn_filters rq = { NULL, 0 };
	uint8_t		    sum[CONN_MAX_LIVE][DIGEST_SHA256_LEN];
	uint8_t		    nsum[CONN_MAX_LIVE][DIGEST_SHA256_LEN];
	struct conn_req	   *live[CONN_MAX_LIVE];
	size_t		    i, j, n, nold, nnew;
	int		    early, keep[CONN_MAX_LIVE];

	if (sr->sr_live_whole && live_covers_want(sr))
		return;
	live_group(sr, &rq);
	live_cover_want(sr);
	sr->sr_live_whole = 1;
	/* Keep the subscriptions whose REQ did not change (known by the
	 * digest of its text: conn holds the text, and its parsed form). */
	for (j = 0; j < sr->sr_nlive; j++)
		keep[j] = 0;
	for (i = 0; i < rq.cf_n; i++) {
		digest_sha256(rq.cf_v[i], strlen(rq.cf_v[i]), sum[i]);
		for (j = 0; j < sr->sr_nlive; j++) {
			if (!keep[j] &&
			    memcmp(sum[i], sr->sr_live_sum[j],
				DIGEST_SHA256_LEN) == 0) {
				keep[j] = 1;
				free(rq.cf_v[i]);
				rq.cf_v[i] = NULL;
				break;
			}
		}
	}
	for (j = 0, n = 0, nold = 0; j < sr->sr_nlive; j++) {
		if (keep[j]) {
			live[n] = sr->sr_live[j];
			memcpy(nsum[n++], sr->sr_live_sum[j],
			    DIGEST_SHA256_LEN);
		} else
			nold++;
	}
	for (i = 0, nnew = 0; i < rq.cf_n; i++)
		nnew += rq.cf_v[i] != NULL;
	/*
	 * Replacements are asked before what they replace is closed, so
	 * that the relay is not left without them, unless the cap wants
	 * the room first.  Either way the moment may not be covered (the
	 * REQ can wait for pacing, the CLOSE cannot): catch it up later.
	 */
	early = n + nnew + nold > CONN_MAX_LIVE;
	if (nold > 0 && nnew > 0 && conn_state(sr->sr_conn) == CONN_CONNECTED)
		note_gap(sr);
	if (early)
		live_close_replaced(sr, keep);
	for (i = 0; i < rq.cf_n; i++) {
		const char	*why = NULL;
		struct conn_req *lv;

		if (rq.cf_v[i] == NULL)
			continue;
		if ((lv = conn_live(sr->sr_conn, rq.cf_v[i], &why)) == NULL) {
			log_warnx("%s: live subscription refused: %s",
			    sr->sr_key, why ? why : "?");
			sr->sr_live_whole = 0;
			continue;
		}
		live[n] = lv;
		memcpy(nsum[n++], sum[i], DIGEST_SHA256_LEN);
	}
	conn_filters_free(&rq);
	if (!early)
		live_close_replaced(sr, keep);
	memcpy(sr->sr_live, live, n * sizeof(live[0]));
	memcpy(sr->sr_live_sum, nsum, n * sizeof(nsum[0]));
	sr->sr_nlive = n;
	if (sr->sr_nrotate > 0) {
		log_info(
		    "%s: %zu filters over the live cap are polled every %.0f s",
		    sr->sr_key, sr->sr_nrotate,
		    sync_delay(sr->sr_sd, SYNC_ROTATE_PERIOD));
		if (sr->sr_rotated_at == 0)
			sr->sr_rotated_at = now_unix();
	}
}

static void
rotate_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_relay *sr =
	    lws_container_of(sul, struct sync_relay, sr_sul_rotate);
	int64_t since = sr->sr_rotated_at - (int64_t)SYNC_CATCHUP_MARGIN;
	size_t	i;

	sr->sr_rotated_at = now_unix();
	for (i = 0; i < sr->sr_nrotate; i++) {
		char *f = with_since(sr->sr_rotate[i], since > 0 ? since : 1);

		historic(sr, f, HR_ROTATE, SET_D);
		free(f);
	}
	if (sr->sr_nrotate > 0)
		schedule(sr, &sr->sr_sul_rotate, rotate_cb,
		    sync_delay(sr->sr_sd, SYNC_ROTATE_PERIOD));
}

void
sync_relay_update(struct sync_relay *sr)
{
	struct conn_filters fl = { NULL, 0 };
	const char	  **vals;
	size_t		    n, i, it;
	const void	   *key;
	size_t		    keylen;
	int		    s;

	/* Live first, then history: what arrives between the two is in
	 * one or the other. */
	refresh_live(sr);
	if (!sr->sr_l1_have) {
		sr->sr_l1_have = 1;
		historic(sr, SYNC_L1_FILTER, HR_L1, SET_D);
	}
	for (s = 0; s < SET_COUNT; s++) {
		/* What is wanted and not yet asked for. */
		if ((vals = calloc(sr->sr_want[s].hm_n + 1, sizeof(*vals))) ==
		    NULL)
			fatal("sync_relay_update");
		n = 0;
		for (it = 0;
		     hmap_next(&sr->sr_want[s], &it, &key, &keylen, NULL);) {
			if (hmap_get(&sr->sr_have[s], key, keylen) != NULL)
				continue;
			vals[n++] = key;
		}
		pack_set(sr, s, vals, n, 0, 0, &fl);
		if (n > 0) {
			struct sync_vals *sv = vals_new(vals, n);

			for (i = 0; i < fl.cf_n; i++)
				historic_since(sr, fl.cf_v[i], HR_SET, s, 0,
				    sv);
			vals_release(sv);
		}
		conn_filters_free(&fl);
		for (i = 0; i < n; i++)
			hmap_put(&sr->sr_have[s], vals[i], strlen(vals[i]) + 1,
			    (void *)1);
		free(vals);
	}
	if (sr->sr_nrotate > 0 && lws_dll2_is_detached(&sr->sr_sul_rotate.list))
		schedule(sr, &sr->sr_sul_rotate, rotate_cb,
		    sync_delay(sr->sr_sd, SYNC_ROTATE_PERIOD));
}

/* Everything already asked for, again, from since on. */
static void
sync_relay_catchup(struct sync_relay *sr, int64_t since, const char *why)
{
	struct conn_filters fl = { NULL, 0 };
	const char	  **vals;
	char		   *f;
	size_t		    n, i;
	int		    s;

	log_info("%s: catching up from %lld %s", sr->sr_key, (long long)since,
	    why);
	sr->sr_catchup_since = 0;
	f = with_since(SYNC_L1_FILTER, since);
	historic_since(sr, f, HR_CATCHUP, SET_D, since, NULL);
	free(f);
	for (s = 0; s < SET_COUNT; s++) {
		vals = set_values(&sr->sr_have[s], &n);
		pack_set(sr, s, vals, n, 0, since, &fl);
		for (i = 0; i < fl.cf_n; i++)
			historic_since(sr, fl.cf_v[i], HR_CATCHUP, s, since,
			    NULL);
		conn_filters_free(&fl);
		free(vals);
	}
}

static void
retry_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_relay *sr =
	    lws_container_of(sul, struct sync_relay, sr_sul_retry);

	sr->sr_failed = 0;
	if (sr->sr_catchup_since > 0)
		sync_relay_catchup(sr, sr->sr_catchup_since, "again");
	sync_relay_update(sr);
}

static void
gap_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_relay *sr =
	    lws_container_of(sul, struct sync_relay, sr_sul_gap);

	/* Down meanwhile: the reconnect catches up, this waits for it. */
	if (conn_state(sr->sr_conn) != CONN_CONNECTED) {
		schedule(sr, &sr->sr_sul_gap, gap_cb,
		    sync_delay(sr->sr_sd, SYNC_GAP_FILL));
		return;
	}
	sync_relay_catchup(sr,
	    sr->sr_gap_at - (int64_t)sync_delay(sr->sr_sd, SYNC_CATCHUP_MARGIN),
	    "after live resubscriptions");
	sr->sr_gap_at = 0;
}

/* A live subscription was replaced now: catch that moment up later. */
static void
note_gap(struct sync_relay *sr)
{
	if (sr->sr_gap_at == 0)
		sr->sr_gap_at = now_unix();
	if (lws_dll2_is_detached(&sr->sr_sul_gap.list))
		schedule(sr, &sr->sr_sul_gap, gap_cb,
		    sync_delay(sr->sr_sd, SYNC_GAP_FILL));
}

/* A live event created at created_at did not reach relayd: a catch-up
 * from before it asks for it again. */
void
sync_relay_dropped(struct sync_relay *sr, int64_t created_at)
{
	int64_t t = now_unix();

	if (created_at > t)
		created_at = t;
	if (sr->sr_gap_at == 0 || created_at < sr->sr_gap_at)
		sr->sr_gap_at = created_at;
	note_gap(sr);
}

static void
arm_retry(struct sync_relay *sr)
{
	schedule(sr, &sr->sr_sul_retry, retry_cb,
	    sync_delay(sr->sr_sd, SYNC_RETRY));
}

void
sync_relay_state(struct sync_relay *sr, enum conn_state old,
    enum conn_state now)
{
	int64_t t = now_unix();

	if (now == CONN_CONNECTED && old != CONN_RATE_LIMITED) {
		if (sr->sr_disconnected_at > 0) {
			double out = (double)(t - sr->sr_disconnected_at);

			if (out < sync_delay(sr->sr_sd, SYNC_QUICK_RECONNECT))
				sync_relay_catchup(sr,
				    sr->sr_disconnected_at -
					(int64_t)sync_delay(sr->sr_sd,
					    SYNC_CATCHUP_MARGIN),
				    "after an outage");
			else {
				int s;

				log_info("%s: down %.0f s: full resync",
				    sr->sr_key, out);
				for (s = 0; s < SET_COUNT; s++)
					hmap_free(&sr->sr_have[s]);
				sr->sr_l1_have = 0;
				sync_relay_update(sr);
			}
		}
		sr->sr_disconnected_at = 0;
		sr->sr_connected_at = t;
	} else if (old == CONN_CONNECTED && now != CONN_RATE_LIMITED &&
	    now != CONN_CONNECTED && sr->sr_disconnected_at == 0)
		sr->sr_disconnected_at = t;
}

void
sync_relay_show(struct sync_relay *sr, cJSON *o)
{
	cJSON_AddStringToObject(o, "relay", sr->sr_key);
	cJSON_AddStringToObject(o, "state",
	    conn_state_name(conn_state(sr->sr_conn)));
	cJSON_AddBoolToObject(o, "bootstrap", sr->sr_bootstrap);
	cJSON_AddNumberToObject(o, "identifiers",
	    (double)sr->sr_want[SET_D].hm_n);
	cJSON_AddNumberToObject(o, "repositories",
	    (double)sr->sr_want[SET_REPOS].hm_n);
	cJSON_AddNumberToObject(o, "thread_ids",
	    (double)sr->sr_want[SET_IDS].hm_n);
	cJSON_AddNumberToObject(o, "thread_addresses",
	    (double)sr->sr_want[SET_ADDRS].hm_n);
	cJSON_AddNumberToObject(o, "live_subscriptions", (double)sr->sr_nlive);
	cJSON_AddNumberToObject(o, "live_draining", (double)live_draining(sr));
	cJSON_AddNumberToObject(o, "rotating_filters", (double)sr->sr_nrotate);
	cJSON_AddNumberToObject(o, "historic_in_flight",
	    (double)sr->sr_historic);
	cJSON_AddNumberToObject(o, "events", (double)sr->sr_events);
	cJSON_AddStringToObject(o, "mode",
	    sync_neg_allowed(sr->sr_sd, sr->sr_key) ? "negentropy" : "req");
	cJSON_AddNumberToObject(o, "negentropy_sessions",
	    (double)sr->sr_neg_sessions);
	cJSON_AddNumberToObject(o, "negentropy_fallbacks",
	    (double)sr->sr_neg_fallbacks);
	cJSON_AddNumberToObject(o, "negentropy_rounds",
	    (double)sr->sr_neg_rounds);
	cJSON_AddNumberToObject(o, "negentropy_bytes",
	    (double)sr->sr_neg_bytes);
	cJSON_AddNumberToObject(o, "negentropy_fetch_bytes",
	    (double)sr->sr_neg_fetch_bytes);
	cJSON_AddNumberToObject(o, "ids_needed", (double)sr->sr_neg_need);
	cJSON_AddNumberToObject(o, "ids_have", (double)sr->sr_neg_have);
	cJSON_AddNumberToObject(o, "ids_skipped", (double)sr->sr_neg_skipped);
	cJSON_AddNumberToObject(o, "historic_synced_at",
	    (double)sr->sr_synced_at);
	cJSON_AddNumberToObject(o, "disconnected_at",
	    (double)sr->sr_disconnected_at);
}
