/*
 * syncd.c: main of syncd, the GRASP-02 sync role (see syncd.h): the
 * inventory of hosted repositories, rebuilt from the database at start and
 * followed on the accepted feed; after each batch window the wanted
 * targets of every remote relay are derived from it and each relay
 * fetches what is new (sync_relay.c).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "feed.h"
#include "log.h"
#include "policy.h"
#include "relayurl.h"
#include "sync_plus.h"
#include "syncd.h"

static struct syncd syncd;

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

/*
 * Derives every relay's wanted targets from the inventory (reference
 * brief 3.1, with GRASP-03's descendants), drops relays that have none,
 * and lets each relay fetch what is new.
 */
static void
reconcile(struct syncd *sd)
{
	struct inv_repo	  *r;
	struct sync_relay *sr;
	size_t		   it, i, j;
	void		  *v;
	const void	  *key;
	size_t		   keylen;

	sd->sd_reconciles++;
	sd->sd_inv_gen = sd->sd_inv->iv_generation;
	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);)
		((struct sync_relay *)v)->sr_marked = 0;
	if (sd->sd_bootstrap)
		relay_mark(sd, sd->sd_bootstrap, 1);
	for (it = 0; (r = inv_repo_next(sd->sd_inv, &it)) != NULL;) {
		for (i = 0; i < r->ir_nrelays; i++) {
			if ((sr = relay_mark(sd, r->ir_relays[i], 0)) == NULL)
				continue;
			sync_relay_want(sr, SET_D, r->ir_d);
			if (r->ir_level != INV_FULL)
				continue;
			sync_relay_want(sr, SET_REPOS, r->ir_coord);
			for (j = 0; j < r->ir_nroots; j++)
				sync_relay_want_thread(sr, sd->sd_inv,
				    r->ir_roots[j]);
		}
	}
	/* GRASP-03: root authors' inboxes and fallback relays. */
	sync_plus_reconcile(sd, relay_mark);
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
	if (sd->sd_inv->iv_generation != sd->sd_inv_gen)
		arm_window(sd);
}

static void
take_stored(void *arg, int64_t seq, const struct event *ev)
{
	struct syncd *sd = arg;

	sd->sd_announcements += ev->kind == KIND_REPO_ANNOUNCEMENT;
	sync_plus_take(ev);
}

/* The stored kinds take_stored() reads at start; inv_rebuild() the rest. */
static const uint32_t take_kinds[] = { KIND_REPO_ANNOUNCEMENT, KIND_RELAY_LIST,
	KIND_DELETION };

static int
sync_init(struct role_ctx *ctx)
{
	struct syncd *sd = &syncd;
	char	      key[RELAYURL_MAX + 1];
	const char   *why;
	const char   *boot = ctx->r_cfg.sync_bootstrap_relay_url;
	int	      n;

	sd->sd_ctx = ctx;
	ctx->r_data = sd;
	/* syncd reads repositories and threads, never participants. */
	sd->sd_inv = inv_new_parts(&ctx->r_cfg, 0);
	sync_plus_init(sd);
	if ((n = inv_rebuild(sd->sd_inv, ctx->r_store, ctx->r_start_seq)) ==
		-1 ||
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
	log_info("inventory from the database: %zu repositories; sync %s%s%s",
	    sd->sd_inv->iv_repos.hm_n,
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

	sd->sd_announcements += ev->kind == KIND_REPO_ANNOUNCEMENT;
	inv_add(sd->sd_inv, ev);
	/* A newer relay list changes a root author's inboxes at once. */
	if (sync_plus_take(ev) || sd->sd_inv->iv_generation != sd->sd_inv_gen)
		arm_window(sd);
}

/* Live roots attached to a repository, by kind, and those waiting. */
static size_t
count_roots(const struct syncd *sd, size_t bykind[3], size_t *unlinked)
{
	struct inv_root *rt;
	size_t		 it, n = 0;

	bykind[0] = bykind[1] = bykind[2] = 0;
	*unlinked = 0;
	for (it = 0; (rt = inv_root_next(sd->sd_inv, &it)) != NULL;) {
		if (rt->rt_deleted)
			continue;
		if (rt->rt_repo == NULL) {
			(*unlinked)++;
			continue;
		}
		bykind[rt->rt_kind == KIND_PATCH ? 0 :
			rt->rt_kind == KIND_PR	 ? 1 :
						   2]++;
		n++;
	}
	return n;
}

static void
sync_show(struct role_ctx *ctx, cJSON *view)
{
	struct syncd *sd = ctx->r_data;
	cJSON	     *arr, *roots;
	size_t	      it, unlinked = 0, bykind[3] = { 0, 0, 0 };
	void	     *v;

	count_roots(sd, bykind, &unlinked);
	cJSON_AddBoolToObject(view, "sync_enabled", ctx->r_cfg.sync_enabled);
	cJSON_AddStringToObject(view, "bootstrap",
	    sd->sd_bootstrap ? sd->sd_bootstrap : "");
	cJSON_AddNumberToObject(view, "repositories",
	    (double)sd->sd_inv->iv_repos.hm_n);
	roots = cJSON_AddObjectToObject(view, "roots");
	cJSON_AddNumberToObject(roots, "1617", (double)bykind[0]);
	cJSON_AddNumberToObject(roots, "1618", (double)bykind[1]);
	cJSON_AddNumberToObject(roots, "1621", (double)bykind[2]);
	cJSON_AddNumberToObject(view, "root_kind_events_unlinked",
	    (double)unlinked);
	cJSON_AddNumberToObject(view, "announcement_events",
	    (double)sd->sd_announcements);
	cJSON_AddNumberToObject(view, "scanned_at_start",
	    (double)sd->sd_scanned);
	cJSON_AddNumberToObject(view, "events_synced", (double)sd->sd_events);
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
	struct syncd *sd = ctx->r_data;
	size_t	      it, synced = 0, bykind[3], unlinked, neg = 0;
	size_t	      refused = 0;
	uint64_t      rounds = 0, bytes = 0, fbytes = 0, need = 0, have = 0;
	uint64_t      sessions = 0, fallbacks = 0;
	void	     *v;

	for (it = 0; hmap_next(&sd->sd_relays, &it, NULL, NULL, &v);) {
		struct sync_relay *sr = v;

		synced += sr->sr_synced_at != 0;
		neg += sync_neg_allowed(sd, sr->sr_key);
		sessions += sr->sr_neg_sessions;
		fallbacks += sr->sr_neg_fallbacks;
		rounds += sr->sr_neg_rounds;
		bytes += sr->sr_neg_bytes;
		fbytes += sr->sr_neg_fetch_bytes;
		need += sr->sr_neg_need;
		have += sr->sr_neg_have;
	}
	for (it = 0; hmap_next(&sd->sd_inv->iv_repos, &it, NULL, NULL, &v);)
		refused += ((struct inv_repo *)v)->ir_refused;
	role_metric(metrics, "graspd_syncd_enabled", ctx->r_cfg.sync_enabled);
	/* Relay URLs of accepted announcements that target hygiene
	 * refused: never dialled, and counted here. */
	role_metric(metrics, "graspd_syncd_repo_relays_refused",
	    (double)refused);
	role_metric(metrics, "graspd_syncd_repositories",
	    (double)sd->sd_inv->iv_repos.hm_n);
	role_metric(metrics, "graspd_syncd_roots",
	    (double)count_roots(sd, bykind, &unlinked));
	role_metric(metrics, "graspd_syncd_relays_tracked",
	    (double)sd->sd_relays.hm_n);
	role_metric(metrics, "graspd_syncd_relays_historic_synced",
	    (double)synced);
	role_metric(metrics, "graspd_syncd_events_synced_total",
	    (double)sd->sd_events);
	role_metric(metrics, "graspd_syncd_reconciles_total",
	    (double)sd->sd_reconciles);
	/* NIP-77, summed over the relays tracked now. */
	role_metric(metrics, "graspd_syncd_relays_mode{mode=\"negentropy\"}",
	    (double)neg);
	role_metric(metrics, "graspd_syncd_relays_mode{mode=\"req\"}",
	    (double)(sd->sd_relays.hm_n - neg));
	role_metric(metrics, "graspd_syncd_negentropy_sessions",
	    (double)sessions);
	role_metric(metrics, "graspd_syncd_negentropy_fallbacks",
	    (double)fallbacks);
	role_metric(metrics, "graspd_syncd_negentropy_rounds", (double)rounds);
	role_metric(metrics, "graspd_syncd_negentropy_bytes", (double)bytes);
	role_metric(metrics, "graspd_syncd_negentropy_fetch_bytes",
	    (double)fbytes);
	role_metric(metrics, "graspd_syncd_negentropy_ids_needed",
	    (double)need);
	role_metric(metrics, "graspd_syncd_negentropy_ids_have", (double)have);
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
	inv_free(sd->sd_inv);
	free(sd->sd_bootstrap);
}

static const struct role_ops sync_ops = {
	.init = sync_init,
	.accepted = sync_accepted,
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
