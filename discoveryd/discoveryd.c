/*
 * discoveryd.c: main of discoveryd, the GRASP-03 identity discovery role
 * (design.md, "Which role does what").  The discovery control plane
 * (eligible authors, batches, user-index and outbox queries) is not
 * written yet: the process runs the role skeleton (role.h), follows the
 * accepted feed and shows its configuration.
 */
#include "role.h"

/* GRASP-03 runs only as an overlay on an enabled syncd. */
static int
disc_enabled(const struct config *cfg)
{
	return cfg->sync_plus_enabled && cfg->sync_enabled;
}

static int
disc_init(struct role_ctx *ctx)
{
	log_info("GRASP-03 %s; discovery logic not implemented yet",
	    disc_enabled(&ctx->r_cfg) ? "enabled" : "disabled");
	return 0;
}

static void
disc_show(struct role_ctx *ctx, cJSON *view)
{
	const struct config	*cfg = &ctx->r_cfg;

	cJSON_AddBoolToObject(view, "grasp03_enabled", disc_enabled(cfg));
	cJSON_AddBoolToObject(view, "sync_enabled", cfg->sync_enabled);
	cJSON_AddBoolToObject(view, "sync_plus_enabled",
	    cfg->sync_plus_enabled);
	cJSON_AddNumberToObject(view, "user_index_relays",
	    (double)cfg->sync_plus_user_index_relays.n);
	cJSON_AddNumberToObject(view, "fallback_relays",
	    (double)cfg->sync_plus_fallback_relays.n);
	cJSON_AddStringToObject(view, "discovery_logic",
	    "not yet implemented");
}

static void
disc_stats(struct role_ctx *ctx, cJSON *metrics)
{
	role_metric(metrics, "graspd_discoveryd_enabled",
	    disc_enabled(&ctx->r_cfg));
}

static const struct role_ops disc_ops = {
	.init = disc_init,
	.show = disc_show,
	.stats = disc_stats,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_DISCOVERYD, &disc_ops);
}
