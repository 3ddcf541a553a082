/*
 * historyd.c: main of historyd, the GRASP-03 history-only mailbox probe
 * role (design.md, "Which role does what").  The probe workers are not
 * written yet: the process runs the role skeleton (role.h), follows the
 * accepted feed and shows that it has no workers.
 */
#include "role.h"

static int
hist_init(struct role_ctx *ctx)
{
	log_info("%s instance; history workers not implemented yet",
	    ctx->r_cfg.private_mode ? "private" : "public");
	return 0;
}

static void
hist_show(struct role_ctx *ctx, cJSON *view)
{
	cJSON_AddBoolToObject(view, "private_mode", ctx->r_cfg.private_mode);
	cJSON_AddNumberToObject(view, "workers", 0);
	cJSON_AddStringToObject(view, "history_logic", "not yet implemented");
}

static void
hist_stats(struct role_ctx *ctx, cJSON *metrics)
{
	role_metric(metrics, "graspd_historyd_workers", 0);
}

static const struct role_ops hist_ops = {
	.init = hist_init,
	.show = hist_show,
	.stats = hist_stats,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_HISTORYD, &hist_ops);
}
