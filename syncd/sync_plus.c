/*
 * sync_plus.c: root-author inboxes and fallback relays in syncd's
 * ordinary coverage (see sync_plus.h).  State is static: one syncd per
 * process.  Rebuilt from the database at start (take_stored feeds the
 * stored relay lists and deletions; the fallback marks are read before
 * the first reconciliation), never persisted by syncd; the roots come
 * from reconcile(), which reads them from the inventory's tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "log.h"
#include "mem.h"
#include "plusmark.h"
#include "policy.h"
#include "relaylist.h"
#include "relayurl.h"
#include "store.h"
#include "sync_plus.h"
#include "syncd.h"

struct plus_list {
	int64_t		 pl_at;
	uint8_t		 pl_id[EVENT_ID_LEN];
	struct relaylist pl_list;
};

static struct {
	int		       enabled;
	unsigned	       urlflags;
	struct relayurl_self   self;
	struct hmap	       lists;	 /* pubkey -> struct plus_list */
	char		     **fallback; /* canonical, trusted */
	size_t		       nfallback;
	/* GRASP-03 fallback marks (plusmark.h) and their generation. */
	struct hmap	       marks; /* pubkey -> (void *)1 */
	int64_t		       mark_gen;
	lws_sorted_usec_list_t sul_marks;
	struct syncd	      *sd;
	/* Of the last reconciliation, and the relays it marked so far. */
	size_t		       roots_inbox, roots_fallback, relays;
	struct hmap	       seen; /* key -> struct sync_relay */
} plus;

/* Polls the marks' generation; a change rebuilds desired ownership. */
static void
marks_cb(lws_sorted_usec_list_t *sul)
{
	struct syncd   *sd = plus.sd;
	struct sqlite3 *db = store_sqlite(sd->sd_ctx->r_store);
	int64_t		gen;

	(void)sul;
	if (plusmark_generation(db, &gen) == 0 && gen != plus.mark_gen &&
	    plusmark_load(db, &plus.marks, &plus.mark_gen) >= 0)
		sync_reconcile_soon(sd);
	lws_sul_schedule(sd->sd_ctx->r_lws, 0, &plus.sul_marks, marks_cb,
	    (lws_usec_t)(cfg_period(&sd->sd_ctx->r_cfg, PLUSMARK_POLL_PERIOD) *
		1e6));
}

void
sync_plus_init(struct syncd *sd)
{
	const struct config *cfg = &sd->sd_ctx->r_cfg;
	size_t		     i;

	/* Taken at start too (take_stored runs before init ends). */
	plus.enabled = cfg->sync_plus_enabled && cfg->sync_enabled;
	if (!plus.enabled)
		return;
	plus.urlflags =
	    cfg->sync_allow_private_targets ? RELAYURL_ALLOW_PRIVATE : 0;
	relayurl_self_init(&plus.self, cfg->domain);
	for (i = 0; i < cfg->sync_plus_fallback_relays.n; i++)
		relayurl_add_trusted(&plus.fallback, &plus.nfallback,
		    cfg->sync_plus_fallback_relays.v[i], "fallback relay");
	/* Fallback ownership from the database, before any request. */
	plus.sd = sd;
	if (plusmark_load(store_sqlite(sd->sd_ctx->r_store), &plus.marks,
		&plus.mark_gen) == -1)
		log_warnx("fallback marks not read; retrying");
	lws_sul_schedule(sd->sd_ctx->r_lws, 0, &plus.sul_marks, marks_cb,
	    (lws_usec_t)(cfg_period(cfg, PLUSMARK_POLL_PERIOD) * 1e6));
}


int
sync_plus_take(const struct event *ev)
{
	struct plus_list *l;

	if (!plus.enabled)
		return 0;
	if (ev->kind == KIND_DELETION &&
	    (l = hmap_get(&plus.lists, ev->pubkey, 32)) != NULL &&
	    relaylist_deleted_by(ev, l->pl_id, l->pl_at)) {
		hmap_del(&plus.lists, ev->pubkey, 32);
		relaylist_clear(&l->pl_list);
		free(l);
		return 1;
	}
	if (ev->kind != KIND_RELAY_LIST)
		return 0;
	if ((l = hmap_get(&plus.lists, ev->pubkey, 32)) == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL)
			fatal("sync_plus_take");
		hmap_put(&plus.lists, ev->pubkey, 32, l);
	} else if (ev->created_at < l->pl_at ||
	    (ev->created_at == l->pl_at && memcmp(ev->id, l->pl_id, 32) >= 0))
		return 0;
	relaylist_clear(&l->pl_list);
	relaylist_parse(ev, plus.urlflags, plus.self.rs_v, plus.self.rs_n,
	    &l->pl_list);
	l->pl_at = ev->created_at;
	memcpy(l->pl_id, ev->id, 32);
	return 1;
}

void
sync_plus_begin(void)
{
	plus.roots_inbox = plus.roots_fallback = 0;
	hmap_free(&plus.seen);
}

int
sync_plus_covers(const uint8_t author[PUBKEY_LEN])
{
	if (!plus.enabled)
		return 0;
	if (hmap_get(&plus.lists, author, 32) != NULL)
		return 1;
	/* GRASP-03: marked after a successful index query found no
	 * accepted list (and none stored since). */
	return plus.nfallback > 0 && hmap_get(&plus.marks, author, 32) != NULL;
}

void
sync_plus_root(struct syncd *sd,
    struct sync_relay *(*mark)(struct syncd *, const char *, int),
    const uint8_t author[PUBKEY_LEN], const struct sync_thread *th)
{
	const struct plus_list *l;
	struct sync_relay      *sr;
	struct conn	       *c;
	const char	       *key;
	size_t			i;

	if (!plus.enabled)
		return;
	if ((l = hmap_get(&plus.lists, author, 32)) != NULL) {
		plus.roots_inbox++;
		for (i = 0; (key = relaylist_get(&l->pl_list, RELAYLIST_INBOX,
				 i)) != NULL;
		     i++)
			if ((sr = mark(sd, key, 0)) != NULL) {
				sync_relay_want_thread(sr, th);
				hmap_put(&plus.seen, key, strlen(key), sr);
			}
		return;
	}
	if (hmap_get(&plus.marks, author, 32) == NULL)
		return;
	if (plus.nfallback > 0)
		plus.roots_fallback++;
	for (i = 0; i < plus.nfallback; i++) {
		key = plus.fallback[i];
		if ((sr = mark(sd, key, 0)) == NULL)
			continue;
		/* Operator input: the connection is made trusted (sticky in
		 * conn.c). */
		if ((c = conn_get(sd->sd_conns, key, CONN_TRUSTED, NULL)) !=
		    NULL)
			conn_release(c);
		sync_relay_want_thread(sr, th);
		hmap_put(&plus.seen, key, strlen(key), sr);
	}
}

void
sync_plus_end(void)
{
	plus.relays = plus.seen.hm_n;
	hmap_free(&plus.seen);
}

void
sync_plus_show(cJSON *view)
{
	cJSON *o = cJSON_AddObjectToObject(view, "sync_plus");

	cJSON_AddBoolToObject(o, "enabled", plus.enabled);
	cJSON_AddNumberToObject(o, "relay_lists", (double)plus.lists.hm_n);
	cJSON_AddNumberToObject(o, "roots_on_inboxes",
	    (double)plus.roots_inbox);
	cJSON_AddNumberToObject(o, "roots_on_fallback",
	    (double)plus.roots_fallback);
	cJSON_AddNumberToObject(o, "inbox_and_fallback_relays",
	    (double)plus.relays);
	cJSON_AddNumberToObject(o, "fallback_relays", (double)plus.nfallback);
	cJSON_AddNumberToObject(o, "fallback_marks", (double)plus.marks.hm_n);
}

void
sync_plus_fini(void)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&plus.lists, &it, NULL, NULL, &v);) {
		relaylist_clear(&((struct plus_list *)v)->pl_list);
		free(v);
	}
	hmap_free(&plus.lists);
	hmap_free(&plus.marks);
	hmap_free(&plus.seen);
	if (plus.sd != NULL)
		lws_sul_cancel(&plus.sul_marks);
	plus.sd = NULL;
	strv_clear(&plus.fallback, &plus.nfallback);
}
