/*
 * sync_neg.c: syncd's side of NIP-77 negentropy (see syncd.h).  For a
 * historic filter it builds our item set, the (created_at, id) of every
 * stored event matching the filter, read from syncd's read-only database
 * handle; it remembers, in memory by canonical relay key, the relays that
 * do not speak NIP-77, so that they get paginated REQs from then on; and
 * it keeps the ids each relay delivered, so that ids it keeps offering
 * but relayd refuses are not fetched again and again.  The reconciliation
 * itself runs in common/conn.c, the fetch of the needed ids in
 * sync_relay.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"
#include "json.h"
#include "log.h"
#include "store.h"
#include "syncd.h"

int
sync_neg_items(struct syncd *sd, const char *filter_json,
    struct neg_item **items, size_t *n, const char **why)
{
	struct json_doc	  *doc = NULL;
	const struct json *root;
	struct filter	   f;
	struct neg_items   it = { NULL, 0, 0 };
	char		   err[128];
	int		   more = 0, rc = -1;

	*items = NULL;
	*n = 0;
	memset(&f, 0, sizeof(f));
	if (sd->sd_ctx->r_store == NULL) {
		*why = "no database";
		return -1;
	}
	root = json_parse(filter_json, strlen(filter_json), &doc, err,
	    sizeof(err));
	if (root == NULL || root->type != JSON_OBJECT ||
	    filter_parse(root, &f, err, sizeof(err)) == -1) {
		*why = "filter does not parse";
		goto done;
	}
	if (store_query_items(sd->sd_ctx->r_store, &f, (int64_t)time(NULL),
		NEG_MAX_ITEMS, neg_items_add, &it, &more) == -1) {
		*why = "database query failed";
		goto done;
	}
	if (more) {
		*why = "more stored events than a negentropy set holds";
		goto done;
	}
	*items = it.ni_v;
	*n = it.ni_n;
	it.ni_v = NULL;
	rc = 0;
done:
	free(it.ni_v);
	filter_free(&f);
	json_free(doc);
	return rc;
}

int
sync_neg_allowed(const struct syncd *sd, const char *key)
{
	void *until;

	if (sd->sd_ctx->r_cfg.sync_disable_negentropy)
		return 0;
	/* The value is when to ask again (a relay may be upgraded, or
	 * was only too slow to answer NEG-OPEN). */
	until = hmap_get(&sd->sd_no_neg, key, strlen(key));
	return until == NULL || (int64_t)time(NULL) >= (int64_t)(intptr_t)until;
}

/* SYNC_NEG_RECHECK, or SYNC_NEG_RECHECK_TEST under NGIT_TEST. */
static double
neg_recheck(const struct syncd *sd)
{
	return config_test_mode(&sd->sd_ctx->r_cfg) ? SYNC_NEG_RECHECK_TEST :
						      SYNC_NEG_RECHECK;
}

void
sync_neg_unsupported(struct syncd *sd, const char *key, const char *why)
{
	int64_t until;

	if (!sync_neg_allowed(sd, key))
		return;
	until = (int64_t)time(NULL) + (int64_t)neg_recheck(sd);
	hmap_put(&sd->sd_no_neg, key, strlen(key), (void *)(intptr_t)until);
	log_info("%s: does not speak NIP-77 (%s): paginated REQ for %.0f s",
	    key, why, neg_recheck(sd));
}

void
sync_neg_delivered(struct sync_relay *sr, const uint8_t id[EVENT_ID_LEN])
{
	/* A bound on memory: forgetting only costs a second fetch. */
	if (sr->sr_delivered.hm_n >= SYNC_NEG_DELIVERED_MAX)
		hmap_free(&sr->sr_delivered);
	hmap_put(&sr->sr_delivered, id, EVENT_ID_LEN, (void *)1);
}

int
sync_neg_was_delivered(const struct sync_relay *sr,
    const uint8_t				id[EVENT_ID_LEN])
{
	return hmap_get(&sr->sr_delivered, id, EVENT_ID_LEN) != NULL;
}

void
sync_neg_fini(struct syncd *sd)
{
	hmap_free(&sd->sd_no_neg);
}
