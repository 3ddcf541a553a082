/*
 * syncd.c: main of syncd, the GRASP-02 sync role (see syncd.h).  The
 * accepted feed says when the inventory's tables (invdb.h, kept by
 * relayd) changed; after each batch window the wanted targets of every
 * remote relay are derived from them, in one read transaction, and each
 * relay fetches what is new (sync_relay.c).
 */
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "event.h"
#include "feed.h"
#include "invdb.h"
#include "log.h"
#include "policy.h"
#include "mem.h"
#include "relayurl.h"
#include "store.h"
#include "sync_plus.h"
#include "syncd.h"

static struct syncd syncd;

static void arm_window(struct syncd *);

static const struct lws_protocols sync_protocols[] = { CONN_LWS_PROTOCOL,
	{ NULL, NULL, 0, 0, 0, NULL, 0 } };

double
sync_delay(const struct syncd *sd, double secs)
{
	return cfg_scale_delay(&sd->sd_ctx->r_cfg, secs);
}

static int
sync_ingest(void *arg, const char *relay_key, const char *json, size_t len)
{
	struct syncd	  *sd = arg;
	struct sync_relay *sr;

	sd->sd_events++;
	if ((sr = hmap_get(&sd->sd_relays, relay_key, strlen(relay_key))))
		sr->sr_events++;
	if (role_ingest(sd->sd_ctx, relay_key, json, len) == -1)
		return -1;
	sync_git_ingested(sd, relay_key, json, len);
	return 0;
}

static void
sync_conn_state(void *arg, struct conn *c, enum conn_state old,
    enum conn_state now)
{
	struct syncd	  *sd = arg;
	const char	  *key = conn_key(c);
	struct sync_relay *sr = hmap_get(&sd->sd_relays, key, strlen(key));

	log_debug("%s: %s -> %s", key, conn_state_name(old),
	    conn_state_name(now));
	if (sr != NULL && sr->sr_conn == c)
		sync_relay_state(sr, old, now);
}

/* relayd lagged and a live event was dropped: catch it up later. */
static void
sync_live_dropped(void *arg, struct conn *c, int64_t created_at)
{
	struct syncd	  *sd = arg;
	const char	  *key = conn_key(c);
	struct sync_relay *sr = hmap_get(&sd->sd_relays, key, strlen(key));

	if (sr != NULL && sr->sr_conn == c)
		sync_relay_dropped(sr, created_at);
}

static const struct conn_hooks sync_hooks = {
	.ingest = sync_ingest,
	.live_dropped = sync_live_dropped,
	.state = sync_conn_state,
};

static struct sync_relay *
relay_mark(struct syncd *sd, const char *key, int boot)
{
	struct sync_relay *sr = hmap_get(&sd->sd_relays, key, strlen(key));

	if (sr == NULL) {
		if ((sr = sync_relay_new(sd, key, boot)) == NULL)
			return NULL;
		hmap_put(&sd->sd_relays, key, strlen(key), sr);
	}
	if (!sr->sr_marked) {
		sr->sr_marked = 1;
		sync_relay_clear_want(sr);
	}
	return sr;
}

/* A repository of the tables as reconcile() copies it. */
struct sync_repo {
	char  *rp_coord;
	char  *rp_d;
	char **rp_relays;
	size_t rp_nrelays;
};

struct sync_repos {
	struct sync_repo *v;
	size_t		  n, cap;
};

/* A live root of one repository, copied out of invdb_repo_roots(). */
struct sync_root {
	int64_t num;
	uint8_t id[EVENT_ID_LEN];
	uint8_t author[PUBKEY_LEN];
};

struct sync_roots {
	struct sync_root *v;
	size_t		  n, cap;
	int		  all; /* or only those sync_plus_covers() */
};

static void
repo_take(void *arg, const struct invdb_repo *r)
{
	struct sync_repos *a = arg;
	struct sync_repo  *rp;
	size_t		   i;

	if (a->n == a->cap)
		a->v = xreallocarray(a->v, a->cap = a->cap ? 2 * a->cap : 64,
		    sizeof(*a->v));
	rp = &a->v[a->n++];
	memset(rp, 0, sizeof(*rp));
	rp->rp_coord = xstrdup(r->ir_coord);
	rp->rp_d = xstrdup(r->ir_d);
	for (i = 0; i < r->ir_nrelays; i++)
		strv_add(&rp->rp_relays, &rp->rp_nrelays, r->ir_relays[i]);
}

static void
repos_free(struct sync_repos *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->v[i].rp_coord);
		free(a->v[i].rp_d);
		strv_free(a->v[i].rp_relays, a->v[i].rp_nrelays);
	}
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static void
root_take(void *arg, const struct invdb_root *rt)
{
	struct sync_roots *a = arg;

	/* A repository without relays wants only its covered roots: the
	 * others are not even copied. */
	if (!a->all && !sync_plus_covers(rt->rt_author))
		return;
	if (a->n == a->cap)
		a->v = xreallocarray(a->v, a->cap = a->cap ? 2 * a->cap : 64,
		    sizeof(*a->v));
	a->v[a->n].num = rt->rt_num;
	memcpy(a->v[a->n].id, rt->rt_id, EVENT_ID_LEN);
	memcpy(a->v[a->n].author, rt->rt_author, PUBKEY_LEN);
	a->n++;
}

static void
thread_id(void *arg, const uint8_t id[EVENT_ID_LEN])
{
	struct sync_thread *th = arg;

	if (th->st_nids == th->st_capids)
		th->st_ids = xreallocarray(th->st_ids,
		    th->st_capids = th->st_capids ? 2 * th->st_capids : 64,
		    sizeof(*th->st_ids));
	hex_encode(id, EVENT_ID_LEN, th->st_ids[th->st_nids++]);
}

static void
thread_addr(void *arg, const char *addr)
{
	struct sync_thread *th = arg;

	strv_add(&th->st_addrs, &th->st_naddrs, addr);
}

/* Reads root rt's thread into th (emptied first). */
static int
thread_read(struct store *st, const struct sync_root *rt,
    struct sync_thread *th)
{
	hex_encode(rt->id, EVENT_ID_LEN, th->st_root);
	th->st_nids = 0;
	strv_clear(&th->st_addrs, &th->st_naddrs);
	return invdb_thread(st, rt->num, thread_id, thread_addr, th);
}

/*
 * The wanted targets of the repositories and roots in the tables, and of
 * the held StateOnly repositories they do not have, read in the caller's
 * read transaction.  Returns -1 on a database error.
 */
static int
reconcile_read(struct syncd *sd, struct store *st)
{
	struct sync_repos  repos = { 0 };
	struct sync_roots  roots = { 0 };
	struct sync_thread th;
	struct sync_relay *srs[INV_MAX_REPO_RELAYS];
	struct hmap	   full = HMAP_INIT;
	struct inv_repo	  *r;
	size_t		   it, i, j, k, nsr;
	int		   rc = -1;

	memset(&th, 0, sizeof(th));
	if (invdb_generation(st, &sd->sd_inv_gen) == -1 ||
	    invdb_repos(st, repo_take, &repos) == -1)
		goto done;
	sync_plus_begin();
	for (i = 0; i < repos.n; i++) {
		const struct sync_repo *rp = &repos.v[i];

		hmap_put(&full, rp->rp_coord, strlen(rp->rp_coord), (void *)1);
		for (nsr = 0, j = 0;
		     j < rp->rp_nrelays && nsr < INV_MAX_REPO_RELAYS; j++) {
			if ((srs[nsr] = relay_mark(sd, rp->rp_relays[j], 0)) ==
			    NULL)
				continue;
			sync_relay_want(srs[nsr], SET_D, rp->rp_d);
			sync_relay_want(srs[nsr], SET_REPOS, rp->rp_coord);
			nsr++;
		}
		roots.n = 0;
		roots.all = nsr > 0;
		if (invdb_repo_roots(st, rp->rp_coord, root_take, &roots) == -1)
			goto done;
		/* Each thread is read once, for every relay that wants it:
		 * the repository's, and its root author's (sync_plus.c). */
		for (j = 0; j < roots.n; j++) {
			if (thread_read(st, &roots.v[j], &th) == -1)
				goto done;
			for (k = 0; k < nsr; k++)
				sync_relay_want_thread(srs[k], &th);
			sync_plus_root(sd, relay_mark, roots.v[j].author, &th);
		}
	}
	/* Held announcements: the states of d (reference brief 3.13), for
	 * a repository the tables do not hold as Full. */
	for (it = 0; (r = inv_repo_next(sd->sd_held, &it)) != NULL;) {
		if (hmap_get(&full, r->ir_coord, strlen(r->ir_coord)) != NULL)
			continue;
		for (j = 0; j < r->ir_nrelays; j++)
			if ((srs[0] = relay_mark(sd, r->ir_relays[j], 0)) !=
			    NULL)
				sync_relay_want(srs[0], SET_D, r->ir_d);
	}
	rc = 0;
done:
	sync_plus_end();
	hmap_free(&full);
	repos_free(&repos);
	free(roots.v);
	free(th.st_ids);
	strv_free(th.st_addrs, th.st_naddrs);
	return rc;
}

/*
 * Derives every relay's wanted targets from the inventory's tables
 * (reference brief 3.1, with GRASP-03's descendants), all read in one
 * read transaction so that they come from one snapshot; drops relays
 * that have none, and lets each relay fetch what is new.  On a database
 * error nothing is dropped or asked, and the window is armed again.
 */
static void
reconcile(struct syncd *sd)
{
	struct store	  *st = sd->sd_ctx->r_store;
	struct sync_relay *sr;
	size_t		   it;
	void		  *v;
	const void	  *key;
	size_t		   keylen;
	int		   opened, rc = -1;

	sd->sd_reconciles++;
	sd->sd_held_gen = sd->sd_held->iv_generation;
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);)
		((struct sync_relay *)v)->sr_marked = 0;
	if (sd->sd_bootstrap)
		relay_mark(sd, sd->sd_bootstrap, 1);
	if ((opened = invdb_read_begin(st)) != -1) {
		rc = reconcile_read(sd, st);
		invdb_read_end(st, opened);
	}
	if (rc == -1) {
		log_warnx("inventory not read; trying again");
		sd->sd_inv_gen = -1;
		arm_window(sd);
		return;
	}
	/* A relay without targets is closed (reference brief 8.5). */
	for (;;) {
		int removed = 0;

		for (it = 0;
		     hmap_next(&sd->sd_relays, &it, &key, &keylen, &v);) {
			sr = v;
			if (sr->sr_marked)
				continue;
			hmap_del(&sd->sd_relays, key, keylen);
			sync_relay_free(sr);
			removed = 1;
			break;
		}
		if (!removed)
			break;
	}
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);)
		sync_relay_update(v);
}

static void
trim_cb(lws_sorted_usec_list_t *sul)
{
	struct syncd *sd = &syncd;
	lws_usec_t    t0 = lws_now_usecs();

	(void)sul;
	sd->sd_trim_armed = 0;
	sd->sd_trimmed_at = t0;
	/* glibc keeps the heap a rebuild or the start's requests freed. */
	malloc_trim(0);
	sd->sd_trims++;
	log_debug("malloc_trim took %.1f ms",
	    (double)(lws_now_usecs() - t0) / 1000);
}

/*
 * Gives freed heap back to the kernel soon: after a rebuild of the
 * targets and when no historic request is left, at most once every
 * SYNC_TRIM_INTERVAL.
 */
static void
trim_soon(struct syncd *sd)
{
	lws_usec_t now = lws_now_usecs(), at;

	if (sd->sd_trim_armed)
		return;
	sd->sd_trim_armed = 1;
	at = sd->sd_trimmed_at + (lws_usec_t)(SYNC_TRIM_INTERVAL * 1e6);
	lws_sul_schedule(sd->sd_ctx->r_lws, 0, &sd->sd_sul_trim, trim_cb,
	    at > now ? at - now : 1);
}

static void
window_cb(lws_sorted_usec_list_t *sul)
{
	struct syncd *sd = &syncd;

	(void)sul;
	sd->sd_window_armed = 0;
	if (sd->sd_ctx->r_cfg.sync_enabled) {
		sd->sd_reconciled_at = lws_now_usecs();
		reconcile(sd);
		trim_soon(sd);
	}
}

/* 1 if some relay has a historic request in flight. */
static int
historic_busy(struct syncd *sd)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);)
		if (((struct sync_relay *)v)->sr_historic > 0)
			return 1;
	return 0;
}

/*
 * When the batch window that started at start should end:
 * SYNC_BATCH_WINDOW after its start while fetches run, since their
 * events keep changing the inventory; otherwise SYNC_BATCH_QUIET from
 * now (arm_window() calls it again on every change, so relayd storing
 * the last fetch's events keeps it open), but never sooner than twice
 * that after the last rebuild, nor later than the whole window.
 */
static lws_usec_t
window_end(struct syncd *sd, lws_usec_t now, lws_usec_t start)
{
	const struct config *cfg = &sd->sd_ctx->r_cfg;
	lws_usec_t	     window, quiet, at;

	window = (lws_usec_t)(cfg_period(cfg, SYNC_BATCH_WINDOW) * 1e6);
	quiet = (lws_usec_t)(cfg_period(cfg, SYNC_BATCH_QUIET) * 1e6);
	if (historic_busy(sd))
		return start + window;
	at = now + quiet;
	if (sd->sd_reconciled_at != 0 && at < sd->sd_reconciled_at + 2 * quiet)
		at = sd->sd_reconciled_at + 2 * quiet;
	return at < start + window ? at : start + window;
}

/* The window ends at at (now is the current time): window_cb() then. */
static void
window_set(struct syncd *sd, lws_usec_t now, lws_usec_t at)
{
	sd->sd_window_at = at;
	lws_sul_schedule(sd->sd_ctx->r_lws, 0, &sd->sd_sul_window, window_cb,
	    at > now ? at - now : 1);
}

static void
arm_window(struct syncd *sd)
{
	const struct config *cfg = &sd->sd_ctx->r_cfg;
	lws_usec_t	     now = lws_now_usecs(), at;

	if (!sd->sd_window_armed) {
		sd->sd_window_armed = 1;
		sd->sd_window_start = sd->sd_window_moved = now;
		at = window_end(sd, now, now);
	} else {
		/* A later change moves the end on; looked at no more than
		 * ten times a quiet spell (historic_busy() visits every
		 * relay, and changes come an event at a time). */
		if (now - sd->sd_window_moved <
		    (lws_usec_t)(cfg_period(cfg, SYNC_BATCH_QUIET) * 1e5))
			return;
		sd->sd_window_moved = now;
		if ((at = window_end(sd, now, sd->sd_window_start)) <=
		    sd->sd_window_at)
			return;
	}
	window_set(sd, now, at);
}

void
sync_historic_idle(struct syncd *sd)
{
	lws_usec_t now = lws_now_usecs(), at;

	if (historic_busy(sd))
		return;
	trim_soon(sd);
	if (!sd->sd_window_armed)
		return;
	/* The window started no later than now; end it as if it had. */
	if ((at = window_end(sd, now, now)) >= sd->sd_window_at)
		return;
	window_set(sd, now, at);
}

void
sync_reconcile_soon(struct syncd *sd)
{
	arm_window(sd);
}

void
sync_inventory_changed(struct syncd *sd)
{
	if (sd->sd_held->iv_generation != sd->sd_held_gen)
		arm_window(sd);
}

/* What repo_scan() finds. */
struct repo_totals {
	const struct inventory *held;
	size_t			n, refused;
	struct hmap		held_full; /* held coordinates in the tables */
};

static void
repo_count(void *arg, const struct invdb_repo *r)
{
	struct repo_totals *t = arg;
	struct inv_repo	   *h;

	t->n++;
	t->refused += r->ir_refused;
	if ((h = inv_repo(t->held, r->ir_coord)) != NULL) {
		hmap_put(&t->held_full, r->ir_coord, strlen(r->ir_coord),
		    (void *)1);
		/* Counted with the held ones; this one is Full. */
		t->refused -= h->ir_refused;
	}
}

/*
 * The repositories, Full (the tables) and held StateOnly (not in the
 * tables), counted in t (whose held_full the caller frees).  Returns -1
 * on a database error (logged).
 */
static int
repo_scan(struct syncd *sd, struct store *st, struct repo_totals *t)
{
	struct inv_repo *h;
	size_t		 it;
	int		 rc;

	memset(t, 0, sizeof(*t));
	t->held = sd->sd_held;
	for (it = 0; (h = inv_repo_next(sd->sd_held, &it)) != NULL;)
		t->refused += h->ir_refused;
	rc = invdb_repos(st, repo_count, t);
	t->n += sd->sd_held->iv_repos.hm_n - t->held_full.hm_n;
	return rc;
}

static void
root_count(void *arg, const struct invdb_root *rt)
{
	size_t *bykind = arg;

	bykind[rt->rt_kind == KIND_PATCH ? 0 :
		rt->rt_kind == KIND_PR	 ? 1 :
					   2]++;
}

/*
 * The totals of the view and the metrics (struct sync_totals), read in
 * one snapshot, again only when the tables' or the held repositories'
 * generation moved: they cost a pass over every repository and root.
 * Returns them, as last read if a read fails (logged).
 */
static const struct sync_totals *
totals(struct syncd *sd)
{
	struct sync_totals *c = &sd->sd_totals;
	struct store	   *st = sd->sd_ctx->r_store;
	struct repo_totals  t;
	struct inv_repo	   *h;
	size_t		    it, held[3] = { 0, 0, 0 }, nheld, bykind[3];
	size_t		    unlinked;
	int64_t		    gen;
	int		    opened;

	if ((opened = invdb_read_begin(st)) == -1)
		return c;
	memset(&t, 0, sizeof(t));
	if (invdb_generation(st, &gen) == -1 ||
	    (c->tt_valid && gen == c->tt_gen &&
		sd->sd_held->iv_generation == c->tt_held_gen))
		goto done;
	if (invdb_count_roots(st, bykind, &unlinked) == -1 ||
	    repo_scan(sd, st, &t) == -1)
		goto done;
	/* A root naming a held StateOnly repository is attached to it. */
	for (it = 0; (h = inv_repo_next(sd->sd_held, &it)) != NULL;)
		if (hmap_get(&t.held_full, h->ir_coord, strlen(h->ir_coord)) ==
			NULL &&
		    invdb_repo_roots(st, h->ir_coord, root_count, held) == -1)
			goto done;
	nheld = held[0] + held[1] + held[2];
	for (it = 0; it < 3; it++)
		c->tt_bykind[it] = bykind[it] + held[it];
	c->tt_unlinked = unlinked - (nheld < unlinked ? nheld : unlinked);
	c->tt_nrepos = t.n;
	c->tt_refused = t.refused;
	c->tt_gen = gen;
	c->tt_held_gen = sd->sd_held->iv_generation;
	c->tt_valid = 1;
done:
	invdb_read_end(st, opened);
	hmap_free(&t.held_full);
	return c;
}

static void
take_stored(void *arg, int64_t seq, const struct event *ev)
{
	struct syncd *sd = arg;

	sd->sd_announcements += ev->kind == KIND_REPO_ANNOUNCEMENT;
	sync_plus_take(ev);
}

/* The kinds take_stored() and sync_accepted() read, stored at start and
 * then from the feed; the rest is in the inventory's tables (invdb.h). */
static const uint32_t take_kinds[] = { KIND_REPO_ANNOUNCEMENT, KIND_RELAY_LIST,
	KIND_DELETION };

static int
sync_init(struct role_ctx *ctx)
{
	struct syncd *sd = &syncd;
	char	      key[RELAYURL_MAX + 1];
	const char   *why;
	const char   *boot = ctx->r_cfg.sync_bootstrap_relay_url;
	int64_t	      n;

	sd->sd_ctx = ctx;
	ctx->r_data = sd;
	/* Only held StateOnly announcements: the rest is in the tables. */
	sd->sd_held = inv_new_parts(&ctx->r_cfg, 0);
	sd->sd_inv_gen = -1;
	sync_plus_init(sd);
	if ((n = store_count(ctx->r_store)) == -1 ||
	    feed_scan_kinds(ctx->r_store, 0, ctx->r_start_seq, take_kinds,
		sizeof(take_kinds) / sizeof(take_kinds[0]), take_stored,
		sd) == -1)
		return -1;
	sd->sd_scanned = (uint64_t)n;
	sd->sd_conns = conn_mgr_new(ctx->r_lws, ctx->r_vhost, &ctx->r_cfg,
	    &sync_hooks, sd);
	if (boot && boot[0]) {
		if (relayurl_canon(boot, strlen(boot), RELAYURL_TRUSTED, key,
			sizeof(key), &why) == -1)
			log_warnx("bootstrap relay %s ignored: %s", boot, why);
		else if ((sd->sd_bootstrap = strdup(key)) == NULL)
			fatal("strdup");
	}
	log_info("inventory in the database: %zu repositories; sync %s%s%s",
	    totals(sd)->tt_nrepos,
	    ctx->r_cfg.sync_enabled ? "enabled" :
				      "disabled (NGIT_SYNC_ENABLED=false)",
	    sd->sd_bootstrap ? ", bootstrap " : "",
	    sd->sd_bootstrap ? sd->sd_bootstrap : "");
	if (ctx->r_cfg.sync_enabled) {
		reconcile(sd);
		trim_soon(sd);
	}
	sync_git_init(sd);
	return 0;
}

static void
sync_accepted(struct role_ctx *ctx, int64_t seq, const struct event *ev)
{
	struct syncd *sd = ctx->r_data;

	(void)seq;
	sd->sd_announcements += ev->kind == KIND_REPO_ANNOUNCEMENT;
	/* A newer relay list changes a root author's inboxes at once. */
	if (sync_plus_take(ev))
		arm_window(sd);
}

/*
 * relayd changed the inventory's tables in the transactions that stored
 * the events the feed just read past, whatever their kinds, committed
 * before it told us: one row says whether.
 */
static void
sync_caught_up(struct role_ctx *ctx)
{
	struct syncd *sd = ctx->r_data;
	int64_t	      gen;

	if (ctx->r_cfg.sync_enabled &&
	    invdb_generation(ctx->r_store, &gen) == 0 && gen != sd->sd_inv_gen)
		arm_window(sd);
}

/* syncd's figures, for the view and the metrics. */
struct sync_counts {
	uint64_t refused, repos, roots, bykind[3], unlinked, announcements;
	uint64_t scanned;
	uint64_t relays, synced, events, reconciles, neg, req;
	/* NIP-77, summed over the relays tracked now. */
	uint64_t sessions, fallbacks, rounds, bytes, fbytes, need, have;
};

/*
 * Each once (counter.h), for `graspctl show syncd` and the metrics: show
 * puts its "roots" object, by kind, between the first table and the last.
 */
#define SC(f) offsetof(struct sync_counts, f)
static const struct counter sync_repo_counters[] = {
	/* Relay URLs of accepted announcements that target hygiene
	 * refused: never dialled, and counted here. */
	{ NULL, "graspd_syncd_repo_relays_refused", GAUGE, NULL, SC(refused) },
	{ "repositories", "graspd_syncd_repositories", GAUGE, NULL, SC(repos) },
	{ NULL, "graspd_syncd_roots", GAUGE, NULL, SC(roots) },
};

static const struct counter sync_root_counters[] = {
	{ "1617", NULL, GAUGE, NULL, SC(bykind[0]) },
	{ "1618", NULL, GAUGE, NULL, SC(bykind[1]) },
	{ "1621", NULL, GAUGE, NULL, SC(bykind[2]) },
};

static const struct counter sync_counters[] = {
	{ "root_kind_events_unlinked", NULL, GAUGE, NULL, SC(unlinked) },
	{ "announcement_events", NULL, COUNTER, NULL, SC(announcements) },
	{ "scanned_at_start", NULL, GAUGE, NULL, SC(scanned) },
	{ NULL, "graspd_syncd_relays_tracked", GAUGE, NULL, SC(relays) },
	{ NULL, "graspd_syncd_relays_historic_synced", GAUGE, NULL,
	    SC(synced) },
	{ "events_synced", "graspd_syncd_events_synced_total", COUNTER, NULL,
	    SC(events) },
	{ NULL, "graspd_syncd_reconciles_total", COUNTER, NULL,
	    SC(reconciles) },
	{ NULL, "graspd_syncd_relays_mode{mode=\"negentropy\"}", GAUGE, NULL,
	    SC(neg) },
	{ NULL, "graspd_syncd_relays_mode{mode=\"req\"}", GAUGE, NULL,
	    SC(req) },
	{ NULL, "graspd_syncd_negentropy_sessions", GAUGE, NULL, SC(sessions) },
	{ NULL, "graspd_syncd_negentropy_fallbacks", GAUGE, NULL,
	    SC(fallbacks) },
	{ NULL, "graspd_syncd_negentropy_rounds", GAUGE, NULL, SC(rounds) },
	{ NULL, "graspd_syncd_negentropy_bytes", GAUGE, NULL, SC(bytes) },
	{ NULL, "graspd_syncd_negentropy_fetch_bytes", GAUGE, NULL,
	    SC(fbytes) },
	{ NULL, "graspd_syncd_negentropy_ids_needed", GAUGE, NULL, SC(need) },
	{ NULL, "graspd_syncd_negentropy_ids_have", GAUGE, NULL, SC(have) },
};
#undef SC

static void
count(struct syncd *sd, struct sync_counts *c)
{
	const struct sync_totals *t = totals(sd);
	const struct sync_relay	 *sr;
	size_t			  it;
	void			 *v;

	memset(c, 0, sizeof(*c));
	c->refused = t->tt_refused;
	c->repos = t->tt_nrepos;
	for (it = 0; it < sizeof(t->tt_bykind) / sizeof(t->tt_bykind[0]);
	     it++) {
		c->bykind[it] = t->tt_bykind[it];
		c->roots += t->tt_bykind[it];
	}
	c->unlinked = t->tt_unlinked;
	c->announcements = sd->sd_announcements;
	c->scanned = sd->sd_scanned;
	c->relays = sd->sd_relays.hm_n;
	c->events = sd->sd_events;
	c->reconciles = sd->sd_reconciles;
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);) {
		sr = v;
		c->synced += sr->sr_synced_at != 0;
		c->neg += sync_neg_allowed(sd, sr->sr_key);
		c->sessions += sr->sr_neg_sessions;
		c->fallbacks += sr->sr_neg_fallbacks;
		c->rounds += sr->sr_neg_rounds;
		c->bytes += sr->sr_neg_bytes;
		c->fbytes += sr->sr_neg_fetch_bytes;
		c->need += sr->sr_neg_need;
		c->have += sr->sr_neg_have;
	}
	c->req = c->relays - c->neg;
}

static void
sync_show(struct role_ctx *ctx, cJSON *view)
{
	struct syncd	  *sd = ctx->r_data;
	struct sync_counts c;
	cJSON		  *arr;
	size_t		   it;
	void		  *v;

	count(sd, &c);
	cJSON_AddBoolToObject(view, "sync_enabled", ctx->r_cfg.sync_enabled);
	cJSON_AddStringToObject(view, "bootstrap",
	    sd->sd_bootstrap ? sd->sd_bootstrap : "");
	counters_show(view, sync_repo_counters, COUNTERS_N(sync_repo_counters),
	    &c);
	counters_show(cJSON_AddObjectToObject(view, "roots"),
	    sync_root_counters, COUNTERS_N(sync_root_counters), &c);
	counters_show(view, sync_counters, COUNTERS_N(sync_counters), &c);
	cJSON_AddBoolToObject(view, "negentropy",
	    !ctx->r_cfg.sync_disable_negentropy);
	arr = cJSON_AddArrayToObject(view, "relays");
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);) {
		cJSON *o = cJSON_CreateObject();

		sync_relay_show(v, o);
		cJSON_AddItemToArray(arr, o);
	}
	conn_mgr_show(sd->sd_conns,
	    cJSON_AddArrayToObject(view, "connections"));
	sync_git_show(sd, view);
	sync_plus_show(view);
}

static void
sync_stats(struct role_ctx *ctx, cJSON *metrics)
{
	struct syncd	  *sd = ctx->r_data;
	struct sync_counts c;

	count(sd, &c);
	role_metric(metrics, "graspd_syncd_enabled", ctx->r_cfg.sync_enabled);
	counters_metrics(metrics, sync_repo_counters,
	    COUNTERS_N(sync_repo_counters), &c, NULL);
	counters_metrics(metrics, sync_counters, COUNTERS_N(sync_counters), &c,
	    NULL);
	conn_mgr_stats(sd->sd_conns, metrics);
	sync_git_stats(sd, metrics);
}

static void
sync_fini(struct role_ctx *ctx)
{
	struct syncd *sd = ctx->r_data;
	size_t	      it;
	void	     *v;

	lws_sul_cancel(&sd->sd_sul_window);
	lws_sul_cancel(&sd->sd_sul_trim);
	sync_git_fini(sd);
	sync_plus_fini();
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);)
		sync_relay_free(v);
	hmap_free(&sd->sd_relays);
	sync_neg_fini(sd);
	conn_mgr_free(sd->sd_conns);
	inv_free(sd->sd_held);
	free(sd->sd_bootstrap);
}

static const struct role_ops sync_ops = {
	.init = sync_init,
	.accepted = sync_accepted,
	.kinds = take_kinds,
	.nkinds = sizeof(take_kinds) / sizeof(take_kinds[0]),
	.caught_up = sync_caught_up,
	.show = sync_show,
	.stats = sync_stats,
	.fini = sync_fini,
	.protocols = sync_protocols,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_SYNCD, &sync_ops);
}
