/*
 * discoveryd.c: main of discoveryd, the GRASP-03 identity discovery role
 * (see discoveryd.h).  It reads the eligible identity authors and every
 * stored kind 10002 from the database before any network request, then
 * follows the accepted feed.  A once-per-minute reconciliation reads the
 * eligible identity authors again when they changed (owners and declared
 * maintainers of accepted Full repositories, authors of accepted roots
 * and their descendants: relayd keeps that set in the database from its
 * inventory, eligible.h) and starts a round for each author that is due:
 * the configured user indexes and the bootstrap relay for an author
 * without a stored relay list (or with one that has no usable outbox),
 * the list's write/unmarked outboxes (at most four, in tag order) for an
 * author with one.  A newer stored list
 * adds its outboxes not yet asked in the round, until no unvisited
 * source remains.  A round ends when every source answered: an author
 * some successful query returned is refreshed after 24 hours, any other
 * after five minutes.
 *
 * An author without a stored relay list for whom an index query
 * succeeded without delivering a relay list that relayd accepted gets
 * the GRASP-03 fallback mark: discoveryd sends it to relayd, which
 * persists it (plusmark.h), and syncd and historyd then use the
 * operator's fallback relays as that author's mailboxes until an
 * accepted list is stored.  The mark is cleared once the author has a
 * stored list or is no longer eligible; it survives restarts (the table
 * is read back at start and on every reconciliation, which also resends
 * a mark whose message was lost).
 */
#include <nanomsg/nn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counter.h"
#include "discoveryd.h"
#include "eligible.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "msg.h"
#include "plusmark.h"
#include "policy.h"
#include "relayurl.h"
#include "store.h"

static struct discd discd;

static const struct lws_protocols disc_protocols[] = { CONN_LWS_PROTOCOL,
	{ NULL, NULL, 0, 0, 0, NULL, 0 } };

static void finish_round(struct discd *, struct disc_author *);

int64_t
disc_now_ms(void)
{
	return role_now_ms();
}

/* GRASP-03 runs only as an overlay on an enabled syncd. */
static int
disc_enabled(const struct config *cfg)
{
	return cfg->sync_plus_enabled && cfg->sync_enabled;
}

static int64_t
delay_ms(const struct discd *dd, double secs)
{
	return (int64_t)(cfg_scale_delay(&dd->dd_ctx->r_cfg, secs) * 1000);
}

static struct disc_author *
author_get(struct discd *dd, const uint8_t pk[PUBKEY_LEN])
{
	struct disc_author *a = hmap_get(&dd->dd_authors, pk, PUBKEY_LEN);

	if (a == NULL) {
		if ((a = calloc(1, sizeof(*a))) == NULL)
			fatal("disc_author");
		memcpy(a->da_pk, pk, PUBKEY_LEN);
		hex_encode(pk, PUBKEY_LEN, a->da_hex);
		hmap_put(&dd->dd_authors, pk, PUBKEY_LEN, a);
	}
	return a;
}

static void
author_free(struct disc_author *a)
{
	relaylist_clear(&a->da_list);
	hmap_free(&a->da_visited);
	free(a);
}

/*
 * Asks source key about a in its round, once per round; outbox sources
 * count against DISC_ROUND_MAX_OUTBOXES.  Returns 1 if added.
 */
static int
round_add(struct discd *dd, struct disc_author *a, const char *key)
{
	int index = disc_is_index(dd, key);

	if (hmap_get(&a->da_visited, key, strlen(key)) != NULL)
		return 0;
	if (!index && a->da_outboxes_added >= DISC_ROUND_MAX_OUTBOXES)
		return 0;
	if (!index)
		a->da_outboxes_added++;
	hmap_put(&a->da_visited, key, strlen(key), (void *)1);
	disc_source_add(dd, key, a);
	a->da_pending++;
	return 1;
}

/* Adds the outboxes of a's stored list to its round; returns how many. */
static int
round_add_outboxes(struct discd *dd, struct disc_author *a)
{
	const char *key;
	size_t	    i;
	int	    n = 0;

	for (i = 0; (key = relaylist_get(&a->da_list, RELAYLIST_OUTBOX, i));
	     i++)
		n += round_add(dd, a, key);
	return n;
}

static void
start_round(struct discd *dd, struct disc_author *a)
{
	size_t i;

	hmap_free(&a->da_visited);
	a->da_outboxes_added = 0;
	a->da_found = a->da_failed = 0;
	a->da_index_ok = a->da_index_list = 0;
	a->da_pending = 0;
	a->da_in_round = 1;
	a->da_round++;
	a->da_rounds++;
	dd->dd_rounds++;
	if (a->da_has_list)
		round_add_outboxes(dd, a);
	/* A retained list without a usable outbox (none write/unmarked,
	 * or none passing hygiene) names nowhere to ask: the author is
	 * asked of the user-index set, as one without a list is. */
	if (!a->da_has_list ||
	    relaylist_get(&a->da_list, RELAYLIST_OUTBOX, 0) == NULL)
		for (i = 0; i < dd->dd_nindex; i++)
			round_add(dd, a, dd->dd_index[i]);
	if (a->da_pending == 0)
		finish_round(dd, a);
}

/* Takes a out of its round without an outcome (no longer eligible). */
static void
drop_round(struct discd *dd, struct disc_author *a)
{
	if (!a->da_in_round)
		return;
	disc_source_forget(dd, a);
	a->da_in_round = 0;
	a->da_pending = 0;
	a->da_round++; /* answers in flight are ignored */
	a->da_due_ms = 0;
}

static void
finish_round(struct discd *dd, struct disc_author *a)
{
	int64_t now = disc_now_ms();

	a->da_in_round = 0;
	a->da_done_ms = now;
	if (a->da_found)
		a->da_result = "found";
	else if (a->da_failed)
		a->da_result = "failed";
	else if (a->da_visited.hm_n == 0)
		a->da_result = "no_source";
	else
		a->da_result = "missing";
	if (a->da_found)
		dd->dd_found++;
	else
		dd->dd_missing++;
	a->da_due_ms =
	    now + delay_ms(dd, a->da_found ? DISC_REFRESH : DISC_RETRY);
	a->da_fb_index_ok = a->da_index_ok;
	a->da_fb_index_list = a->da_index_list;
	log_debug("%s: discovery round %s after %zu sources", a->da_hex,
	    a->da_result, a->da_visited.hm_n);
}

void
disc_author_answer(struct discd *dd, struct disc_author *a, uint64_t round,
    int ok, unsigned got, int index)
{
	if (!a->da_in_round || a->da_round != round || a->da_pending == 0)
		return;
	if (ok) {
		if (got & DISC_GOT_ANY)
			a->da_found = 1;
		if (index) {
			a->da_index_ok = 1;
			if (got & DISC_GOT_LIST)
				a->da_index_list = 1;
		}
	} else
		a->da_failed = 1;
	if (--a->da_pending == 0)
		finish_round(dd, a);
}

/*
 * A newer stored relay list of an eligible author: its outboxes not yet
 * asked join the author's round (reopened if it had ended), so that
 * replacements converge until no unvisited source remains.
 */
static void
follow_outboxes(struct discd *dd, struct disc_author *a)
{
	int was = a->da_in_round;

	if (!dd->dd_started || !a->da_eligible || a->da_rounds == 0)
		return;
	a->da_in_round = 1;
	if (round_add_outboxes(dd, a) > 0)
		log_debug("%s: newer relay list: outboxes join the round",
		    a->da_hex);
	else
		a->da_in_round = was;
}

/* NIP-09: the author withdrew its relay list. */
static void
take_deletion(struct discd *dd, const struct event *ev)
{
	struct disc_author *a =
	    hmap_get(&dd->dd_authors, ev->pubkey, PUBKEY_LEN);

	if (a == NULL || !a->da_has_list ||
	    !relaylist_deleted_by(ev, a->da_list_id, a->da_list_at))
		return;
	log_info("%s: relay list deleted by its author", a->da_hex);
	relaylist_clear(&a->da_list);
	a->da_has_list = 0;
	/* Without a list it is asked at the indexes again. */
	if (!a->da_in_round)
		a->da_due_ms = 0;
}

/* One event of take_kinds: retained lists and profiles. */
static void
take_event(struct discd *dd, const struct event *ev)
{
	struct disc_author *a;

	switch (ev->kind) {
	case KIND_PROFILE:
		author_get(dd, ev->pubkey)->da_has_profile = 1;
		break;
	case KIND_RELAY_LIST:
		a = author_get(dd, ev->pubkey);
		/* The store keeps the newest; never step back anyway. */
		if (a->da_has_list &&
		    (ev->created_at < a->da_list_at ||
			(ev->created_at == a->da_list_at &&
			    memcmp(ev->id, a->da_list_id, EVENT_ID_LEN) >= 0)))
			break;
		relaylist_clear(&a->da_list);
		relaylist_parse(ev, dd->dd_urlflags, dd->dd_self.rs_v,
		    dd->dd_self.rs_n, &a->da_list);
		a->da_has_list = 1;
		a->da_list_at = ev->created_at;
		memcpy(a->da_list_id, ev->id, EVENT_ID_LEN);
		follow_outboxes(dd, a);
		break;
	case KIND_DELETION:
		take_deletion(dd, ev);
		break;
	default:
		break;
	}
}

static void
take_stored(void *arg, int64_t seq, const struct event *ev)
{
	(void)seq;
	take_event(arg, ev);
}

/* The kinds take_event() reads, stored at start and then from the feed. */
static const uint32_t take_kinds[] = { KIND_PROFILE, KIND_RELAY_LIST,
	KIND_DELETION };

static void
mark_eligible(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	author_get(arg, pk)->da_mark = 1;
}

/* The eligible authors relayd keeps; others leave their rounds. */
static void
update_eligible(struct discd *dd)
{
	struct disc_author *a, **gone = NULL;
	size_t		    it, n = 0, ngone = 0, i;
	int64_t		    gen;
	void		   *v;

	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);)
		((struct disc_author *)v)->da_mark = 0;
	if (eligible_each(store_sqlite(dd->dd_ctx->r_store), mark_eligible, dd,
		&gen) == -1)
		return; /* logged; the next reconciliation reads again */
	if ((gone = calloc(dd->dd_authors.hm_n + 1, sizeof(*gone))) == NULL)
		fatal("update_eligible");
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		a = v;
		if (a->da_eligible && !a->da_mark)
			drop_round(dd, a);
		a->da_eligible = a->da_mark;
		n += a->da_eligible;
		/* Nothing to keep for an author with no stored identity
		 * (once its fallback mark is cleared). */
		if (!a->da_eligible && !a->da_has_list && !a->da_has_profile &&
		    !a->da_marked)
			gone[ngone++] = a;
	}
	for (i = 0; i < ngone; i++) {
		hmap_del(&dd->dd_authors, gone[i]->da_pk, PUBKEY_LEN);
		author_free(gone[i]);
	}
	free(gone);
	dd->dd_neligible = n;
	dd->dd_elig_gen = gen;
	dd->dd_elig_seen = 1;
}

/* 1 if a's last completed round calls for the fallback mark (see the
 * top). */
static int
round_fallback(const struct discd *dd, const struct disc_author *a, int64_t now)
{
	if (!a->da_eligible || a->da_has_list || !a->da_fb_index_ok)
		return 0;
	/* A list the index delivered may still be on its way to the
	 * store; past the settle time relayd refused it. */
	return !a->da_fb_index_list ||
	    now - a->da_done_ms >= (int64_t)(DISC_SETTLE * 1000);
}

/* 1 if a is on fallback coverage now: the rule syncd and historyd use. */
static int
on_fallback(const struct disc_author *a)
{
	return a->da_eligible && a->da_marked && !a->da_has_list;
}

/*
 * The fallback marks from the database, when their generation moved (or
 * to resend one whose message was lost: every reconciliation compares
 * what it wants with what is stored).
 */
static void
load_marks(struct discd *dd)
{
	struct hmap	set = HMAP_INIT;
	struct sqlite3 *db = store_sqlite(dd->dd_ctx->r_store);
	size_t		it;
	int64_t		gen;
	const void     *k;
	void	       *v;

	if (plusmark_load(db, &set, &gen) == -1)
		return;
	dd->dd_mark_gen = gen;
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		struct disc_author *a = v;

		a->da_marked = hmap_get(&set, a->da_pk, PUBKEY_LEN) != NULL;
	}
	for (it = 0; hmap_next(&set, &it, &k, NULL, NULL);)
		author_get(dd, k)->da_marked = 1;
	hmap_free(&set);
}

/*
 * GRASP-03's fallback mark follows the last completed round: set when a
 * successful index query had no accepted list for the author, cleared
 * when the author has a stored list or is no longer eligible, kept
 * otherwise (a failed round changes nothing; after a restart the stored
 * mark holds until the next round).  Sent to relayd, the one writer.
 */
static void
sync_marks(struct discd *dd)
{
	struct disc_author *a;
	uint8_t		    msg[MSG_PLUSMARK_LEN];
	int64_t		    now = disc_now_ms();
	size_t		    it;
	void		   *v;
	int		    want;

	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		a = v;
		want = a->da_marked;
		if (round_fallback(dd, a, now))
			want = 1;
		else if (a->da_has_list || !a->da_eligible)
			want = 0;
		if (want == a->da_marked)
			continue;
		msg_plusmark_encode(msg, a->da_pk, want);
		if (msg_send(dd->dd_ctx->r_sock_ingest, MSG_PLUSMARK, msg,
			sizeof(msg), NN_DONTWAIT) == -1) {
			/* relayd away or behind: the next pass retries. */
			dd->dd_marks_unsent++;
			continue;
		}
		dd->dd_marks_sent++;
		a->da_marked = want;
		log_debug("%s: fallback mark %s", a->da_hex,
		    want ? "set" : "cleared");
	}
}

/* The once-per-minute reconciliation: who is eligible, who is due. */
static void
reconcile(struct discd *dd)
{
	struct disc_author *a;
	int64_t		    now = disc_now_ms(), gen;
	size_t		    it;
	void		   *v;

	dd->dd_reconciles++;
	load_marks(dd);
	if (!dd->dd_elig_seen ||
	    eligible_generation(store_sqlite(dd->dd_ctx->r_store), &gen) ==
		-1 ||
	    gen != dd->dd_elig_gen)
		update_eligible(dd);
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		a = v;
		if (a->da_eligible && !a->da_in_round && a->da_due_ms <= now)
			start_round(dd, a);
	}
}

static void
pass_cb(lws_sorted_usec_list_t *sul)
{
	struct discd *dd = &discd;
	double	      secs = cfg_period(&dd->dd_ctx->r_cfg, DISC_MAINT_PERIOD);

	(void)sul;
	dd->dd_passes++;
	dd->dd_dialled = 0;
	if (disc_reconcile_due(&dd->dd_reconciled_ms, disc_now_ms(),
		(int64_t)(cfg_period(&dd->dd_ctx->r_cfg,
			      DISC_RECONCILE_PERIOD) *
		    1000)))
		reconcile(dd);
	disc_dispatch(dd);
	sync_marks(dd);
	lws_sul_schedule(dd->dd_ctx->r_lws, 0, &dd->dd_sul_pass, pass_cb,
	    (lws_usec_t)(secs * 1e6));
}

static int
disc_ingest(void *arg, const char *relay_key, const char *json, size_t len)
{
	struct discd *dd = arg;

	dd->dd_last_ingest_ok =
	    role_ingest(dd->dd_ctx, relay_key, json, len) == 0;
	if (!dd->dd_last_ingest_ok)
		dd->dd_ingest_dropped++;
	return dd->dd_last_ingest_ok ? 0 : -1;
}

static void
disc_conn_state(void *arg, struct conn *c, enum conn_state old,
    enum conn_state now)
{
	(void)arg;
	log_debug("%s: %s -> %s", conn_key(c), conn_state_name(old),
	    conn_state_name(now));
}

static const struct conn_hooks disc_hooks = {
	.ingest = disc_ingest,
	.state = disc_conn_state,
};

static int
disc_init(struct role_ctx *ctx)
{
	struct discd	    *dd = &discd;
	const struct config *cfg = &ctx->r_cfg;
	size_t		     i, it, lists = 0;
	void		    *v;

	dd->dd_ctx = ctx;
	ctx->r_data = dd;
	dd->dd_enabled = disc_enabled(cfg);
	if (!dd->dd_enabled) {
		log_info("GRASP-03 disabled (%s): no identity discovery",
		    !cfg->sync_enabled ? "NGIT_SYNC_ENABLED=false" :
					 "NGIT_SYNC_PLUS_ENABLED=false");
		return 0;
	}
	dd->dd_urlflags =
	    cfg->sync_allow_private_targets ? RELAYURL_ALLOW_PRIVATE : 0;
	relayurl_self_init(&dd->dd_self, cfg->domain);
	for (i = 0; i < cfg->sync_plus_user_index_relays.n; i++)
		relayurl_add_trusted(&dd->dd_index, &dd->dd_nindex,
		    cfg->sync_plus_user_index_relays.v[i], "user index relay");
	if (cfg->sync_bootstrap_relay_url && cfg->sync_bootstrap_relay_url[0])
		relayurl_add_trusted(&dd->dd_index, &dd->dd_nindex,
		    cfg->sync_bootstrap_relay_url, "bootstrap relay");

	/* Ownership from the database, before any network request. */
	if (feed_scan_kinds(ctx->r_store, 0, ctx->r_start_seq, take_kinds,
		sizeof(take_kinds) / sizeof(take_kinds[0]), take_stored,
		dd) == -1)
		return -1;
	load_marks(dd);
	update_eligible(dd);
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);)
		lists += ((struct disc_author *)v)->da_has_list &&
		    ((struct disc_author *)v)->da_eligible;
	log_info(
	    "from the database: %zu eligible identity authors, %zu with a stored relay list; %zu index sources",
	    dd->dd_neligible, lists, dd->dd_nindex);
	if (dd->dd_nindex == 0)
		log_warnx(
		    "GRASP-03 discovery has no source: authors without a stored relay list cannot be discovered; set NGIT_SYNC_PLUS_USER_INDEX_RELAYS (file key sync_plus_user_index_relays) to public profile indexes, see graspd.conf(5)");

	dd->dd_conns = conn_mgr_new(ctx->r_lws, ctx->r_vhost, &ctx->r_cfg,
	    &disc_hooks, dd);
	dd->dd_reconciled_ms = -1;
	dd->dd_started = 1;
	/* The first pass runs from the loop, once the role is ready. */
	lws_sul_schedule(ctx->r_lws, 0, &dd->dd_sul_pass, pass_cb, 1);
	return 0;
}

static void
disc_accepted(struct role_ctx *ctx, int64_t seq, const struct event *ev)
{
	struct discd *dd = ctx->r_data;

	(void)seq;
	if (dd->dd_enabled)
		take_event(dd, ev);
}

static void
add_keys(cJSON *o, const char *name, const struct relaylist *rl,
    enum relaylist_purpose p)
{
	cJSON	   *arr = cJSON_AddArrayToObject(o, name);
	const char *k;
	size_t	    i;

	for (i = 0; (k = relaylist_get(rl, p, i)) != NULL; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(k));
}

static void
show_author(const struct discd *dd, const struct disc_author *a, int64_t now,
    cJSON *o)
{
	cJSON *l;
	double in;

	cJSON_AddStringToObject(o, "pubkey", a->da_hex);
	if (a->da_has_list) {
		l = cJSON_AddObjectToObject(o, "relay_list");
		cJSON_AddNumberToObject(l, "created_at", (double)a->da_list_at);
		add_keys(l, "inbox", &a->da_list, RELAYLIST_INBOX);
		add_keys(l, "outbox", &a->da_list, RELAYLIST_OUTBOX);
		add_keys(l, "history", &a->da_list, RELAYLIST_HISTORY);
		add_keys(l, "repo_inbox", &a->da_list, RELAYLIST_REPO_INBOX);
	} else
		cJSON_AddNullToObject(o, "relay_list");
	cJSON_AddBoolToObject(o, "profile", a->da_has_profile);
	cJSON_AddBoolToObject(o, "in_round", a->da_in_round);
	cJSON_AddNumberToObject(o, "pending_sources",
	    a->da_in_round ? (double)a->da_pending : 0);
	cJSON_AddNumberToObject(o, "sources_asked", (double)a->da_visited.hm_n);
	if (a->da_in_round) {
		cJSON_AddNullToObject(o, "next_refresh");
		cJSON_AddNullToObject(o, "next_refresh_in");
	} else {
		in = a->da_due_ms > now ? (double)(a->da_due_ms - now) / 1000 :
					  0;
		cJSON_AddNumberToObject(o, "next_refresh",
		    (double)time(NULL) + in);
		cJSON_AddNumberToObject(o, "next_refresh_in", in);
	}
	cJSON_AddStringToObject(o, "last_result",
	    a->da_result ? a->da_result : "none");
	cJSON_AddNumberToObject(o, "rounds", (double)a->da_rounds);
	cJSON_AddBoolToObject(o, "fallback", on_fallback(a));
}

/* Counts of the eligible authors, for the view and the metrics. */
struct disc_counts {
	uint64_t eligible, with_list, fallback, due, in_round;
};

/* Each once (counter.h), for `graspctl show discoveryd` and the metrics. */
#define DC(f) offsetof(struct disc_counts, f)
static const struct counter disc_author_counters[] = {
	{ "eligible_authors", "graspd_discoveryd_eligible_authors", GAUGE, NULL,
	    DC(eligible) },
	{ "authors_with_relay_list",
	    "graspd_discoveryd_authors_with_relay_list", GAUGE, NULL,
	    DC(with_list) },
	{ "fallback_authors", "graspd_discoveryd_fallback_authors", GAUGE, NULL,
	    DC(fallback) },
	{ "authors_due", "graspd_discoveryd_authors_due", GAUGE, NULL,
	    DC(due) },
	{ "authors_in_round", "graspd_discoveryd_authors_in_round", GAUGE, NULL,
	    DC(in_round) },
};
#undef DC

/* The totals, likewise: show lists them under "totals". */
#define DD(f) offsetof(struct discd, f)
static const struct counter disc_total_counters[] = {
	{ "rounds", "graspd_discoveryd_rounds_total", COUNTER, NULL,
	    DD(dd_rounds) },
	{ "batches_ok", "graspd_discoveryd_batches_total{result=\"ok\"}",
	    COUNTER, NULL, DD(dd_batches_ok) },
	{ "batches_failed",
	    "graspd_discoveryd_batches_total{result=\"failed\"}", COUNTER, NULL,
	    DD(dd_batches_failed) },
	{ "sources_dialled", "graspd_discoveryd_sources_dialled_total", COUNTER,
	    NULL, DD(dd_dials) },
	{ "authors_found", "graspd_discoveryd_authors_found_total", COUNTER,
	    NULL, DD(dd_found) },
	{ "authors_missing", "graspd_discoveryd_authors_missing_total", COUNTER,
	    NULL, DD(dd_missing) },
	{ "events", "graspd_discoveryd_events_total", COUNTER, NULL,
	    DD(dd_events) },
	{ "forged", "graspd_discoveryd_forged_events_total", COUNTER, NULL,
	    DD(dd_forged) },
	{ "ingest_dropped", NULL, COUNTER, NULL, DD(dd_ingest_dropped) },
	{ "reconciles", NULL, COUNTER, NULL, DD(dd_reconciles) },
	{ "fallback_marks_sent", NULL, COUNTER, NULL, DD(dd_marks_sent) },
	{ "fallback_marks_unsent", NULL, COUNTER, NULL, DD(dd_marks_unsent) },
};
#undef DD

static void
count(const struct discd *dd, struct disc_counts *c)
{
	const struct disc_author *a;
	int64_t			  now = disc_now_ms();
	size_t			  it;
	void			 *v;

	memset(c, 0, sizeof(*c));
	c->eligible = dd->dd_neligible;
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		a = v;
		if (!a->da_eligible)
			continue;
		c->with_list += a->da_has_list;
		c->fallback += on_fallback(a);
		c->in_round += a->da_in_round;
		c->due += !a->da_in_round && a->da_due_ms <= now;
	}
}

static void
disc_show(struct role_ctx *ctx, cJSON *view)
{
	struct discd	    *dd = ctx->r_data;
	const struct config *cfg = &ctx->r_cfg;
	struct disc_counts   c;
	cJSON		    *arr, *o;
	int64_t		     now = disc_now_ms();
	size_t		     it, i, listed = 0;
	void		    *v;

	cJSON_AddBoolToObject(view, "grasp03_enabled", dd->dd_enabled);
	cJSON_AddBoolToObject(view, "sync_enabled", cfg->sync_enabled);
	cJSON_AddBoolToObject(view, "sync_plus_enabled",
	    cfg->sync_plus_enabled);
	cJSON_AddNumberToObject(view, "user_index_relays",
	    (double)cfg->sync_plus_user_index_relays.n);
	cJSON_AddNumberToObject(view, "fallback_relays",
	    (double)cfg->sync_plus_fallback_relays.n);
	if (!dd->dd_enabled) {
		cJSON_AddStringToObject(view, "discovery",
		    !cfg->sync_enabled ?
			"off: NGIT_SYNC_ENABLED=false (GRASP-03 is an overlay on "
			"GRASP-02 sync)" :
			"off: NGIT_SYNC_PLUS_ENABLED=false");
		return;
	}
	cJSON_AddStringToObject(view, "discovery", "on");
	arr = cJSON_AddArrayToObject(view, "index_sources");
	for (i = 0; i < dd->dd_nindex; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(dd->dd_index[i]));
	count(dd, &c);
	counters_show(view, disc_author_counters,
	    COUNTERS_N(disc_author_counters), &c);
	disc_source_show(dd, view);
	arr = cJSON_AddArrayToObject(view, "authors");
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);) {
		const struct disc_author *a = v;

		if (!a->da_eligible)
			continue;
		if (listed++ >= DISC_VIEW_MAX_AUTHORS)
			continue;
		o = cJSON_CreateObject();
		show_author(dd, a, now, o);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddBoolToObject(view, "authors_truncated",
	    listed > DISC_VIEW_MAX_AUTHORS);
	o = cJSON_AddObjectToObject(view, "totals");
	counters_show(o, disc_total_counters, COUNTERS_N(disc_total_counters),
	    dd);
	conn_mgr_show(dd->dd_conns,
	    cJSON_AddArrayToObject(view, "connections"));
}

static void
disc_stats(struct role_ctx *ctx, cJSON *metrics)
{
	struct discd	  *dd = ctx->r_data;
	struct disc_counts c;

	role_metric(metrics, "graspd_discoveryd_enabled", dd->dd_enabled);
	if (!dd->dd_enabled)
		return;
	count(dd, &c);
	counters_metrics(metrics, disc_author_counters,
	    COUNTERS_N(disc_author_counters), &c, NULL);
	role_metric(metrics, "graspd_discoveryd_sources",
	    (double)dd->dd_sources.hm_n);
	role_metric(metrics, "graspd_discoveryd_batches_in_flight",
	    dd->dd_batch != NULL);
	counters_metrics(metrics, disc_total_counters,
	    COUNTERS_N(disc_total_counters), dd, NULL);
	conn_mgr_stats(dd->dd_conns, metrics);
}

static void
disc_fini(struct role_ctx *ctx)
{
	struct discd *dd = ctx->r_data;
	size_t	      it;
	void	     *v;

	if (dd == NULL || !dd->dd_enabled)
		return;
	lws_sul_cancel(&dd->dd_sul_pass);
	disc_source_free_all(dd);
	conn_mgr_free(dd->dd_conns);
	for (it = 0; hmap_next(&dd->dd_authors, &it, NULL, NULL, &v);)
		author_free(v);
	hmap_free(&dd->dd_authors);
	strv_free(dd->dd_index, dd->dd_nindex);
}

static const struct role_ops disc_ops = {
	.init = disc_init,
	.accepted = disc_accepted,
	.kinds = take_kinds,
	.nkinds = sizeof(take_kinds) / sizeof(take_kinds[0]),
	.show = disc_show,
	.stats = disc_stats,
	.fini = disc_fini,
	.protocols = disc_protocols,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_DISCOVERYD, &disc_ops);
}
