/*
 * syncd.c: main of syncd, the GRASP-02 sync role (design.md, "Which role
 * does what").  For now it keeps the inventories sync will need (see
 * sync_inv.c), rebuilt from the database and followed on the accepted
 * feed, and shows them; it does not fetch from any remote relay yet.
 */
#include <stdlib.h>

#include "event.h"
#include "feed.h"
#include "log.h"
#include "role.h"
#include "syncd.h"

static struct sync_inv	inv;
static uint64_t		scanned;	/* events read by the startup scan */

/*
 * The startup scan runs twice over the stored events: announcements
 * first, then roots.  In seq order a root can come before the stored
 * version of its announcement, because a newer version replaced (and
 * removed) the one the root followed.
 */
static void
sync_take_announcement(void *arg, int64_t seq, const struct event *ev)
{
	if (ev->kind == KIND_REPO_ANNOUNCEMENT)
		sync_inv_add(&inv, ev);
}

static void
sync_take_root(void *arg, int64_t seq, const struct event *ev)
{
	scanned++;
	if (ev->kind != KIND_REPO_ANNOUNCEMENT)
		sync_inv_add(&inv, ev);
}

static int
sync_init(struct role_ctx *ctx)
{
	if (feed_scan(ctx->r_store, 0, ctx->r_start_seq,
	    sync_take_announcement, NULL, NULL) == -1 ||
	    feed_scan(ctx->r_store, 0, ctx->r_start_seq, sync_take_root, NULL,
	    NULL) == -1)
		return -1;
	log_info("inventory: %zu repositories, %zu roots from %llu stored "
	    "events; sync %s, remote sync not implemented yet",
	    inv.si_repos.ss_n, inv.si_roots.ss_n,
	    (unsigned long long)scanned,
	    ctx->r_cfg.sync_enabled ? "enabled" : "disabled");
	return 0;
}

static void
sync_accepted(struct role_ctx *ctx, int64_t seq, const struct event *ev)
{
	sync_inv_add(&inv, ev);
}

static void
sync_show(struct role_ctx *ctx, cJSON *view)
{
	cJSON	*roots;

	cJSON_AddBoolToObject(view, "sync_enabled", ctx->r_cfg.sync_enabled);
	cJSON_AddStringToObject(view, "sync_logic", "not yet implemented");
	cJSON_AddNumberToObject(view, "repositories",
	    (double)inv.si_repos.ss_n);
	cJSON_AddNumberToObject(view, "announcement_events",
	    (double)inv.si_announcements);
	roots = cJSON_AddObjectToObject(view, "roots");
	cJSON_AddNumberToObject(roots, "1617", (double)inv.si_roots_by_kind[0]);
	cJSON_AddNumberToObject(roots, "1618", (double)inv.si_roots_by_kind[1]);
	cJSON_AddNumberToObject(roots, "1621", (double)inv.si_roots_by_kind[2]);
	cJSON_AddNumberToObject(view, "root_kind_events_unlinked",
	    (double)inv.si_unlinked);
	cJSON_AddNumberToObject(view, "scanned_at_start", (double)scanned);
}

static void
sync_stats(struct role_ctx *ctx, cJSON *metrics)
{
	role_metric(metrics, "graspd_syncd_enabled", ctx->r_cfg.sync_enabled);
	role_metric(metrics, "graspd_syncd_repositories",
	    (double)inv.si_repos.ss_n);
	role_metric(metrics, "graspd_syncd_roots", (double)inv.si_roots.ss_n);
	role_metric(metrics, "graspd_syncd_announcement_events_total",
	    (double)inv.si_announcements);
}

static void
sync_fini(struct role_ctx *ctx)
{
	sync_inv_free(&inv);
}

static const struct role_ops sync_ops = {
	.init = sync_init,
	.accepted = sync_accepted,
	.show = sync_show,
	.stats = sync_stats,
	.fini = sync_fini,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_SYNCD, &sync_ops);
}
