/*
 * historyd.c: main of historyd, the GRASP-03 history-only mailbox probe
 * role (see historyd.h).  It rebuilds every stored kind 10002 from the
 * database, then follows the accepted feed; the repository inventory it
 * reads from the tables relayd keeps (invdb.h), and the eligible authors
 * from theirs (eligible.h), and holds no copy.  Whenever the lists, the
 * fallback marks or the tables' generation changed, the desired probe
 * relays are derived again, from one read transaction, looking up only
 * the authors with a relay list or a fallback mark (an author with
 * neither adds nothing) and reading each thread once:
 *   - each participant of an accepted root of a Full repository (its
 *     author or the author of a descendant) has its history mailboxes
 *     probed (RELAYLIST_HISTORY: at most four, write/unmarked first) for
 *     the roots it takes part in, and only those (GRASP-03: "A
 *     participant-only mailbox remains constrained to its derived
 *     roots"): the root id, the descendant ids and descendant address
 *     coordinates, never the bare repository coordinate, which would
 *     return every thread of the repository;
 *   - a non-root participant on fallback (marked by discoveryd after a
 *     successful user-index query found no accepted list, and no list
 *     stored since: plusmark.h) has those roots probed on the
 *     operator's fallback relays (NGIT_SYNC_PLUS_FALLBACK_RELAYS);
 *   - on a public instance only (NGIT_PRIVATE_MODE false) the owner and
 *     the declared maintainers of each Full repository have their
 *     read/unmarked inboxes (RELAYLIST_REPO_INBOX, at most four) probed
 *     for the exact repository coordinate and every known root id.
 * Scopes of one relay are unioned, then packed into filters with "#a",
 * "#A" (coordinates and addresses), "#e", "#E" (ids) and "#q" (both),
 * each a byte-bounded run of sorted values (conn_pack_filters).  Nothing
 * here is ever a live subscription: every group is one conn_paginate()
 * at background priority.
 *
 * The fallback marks are read from the database at init, before the
 * first reconciliation, and again on any maintenance pass that finds
 * their generation moved; so is the tables' generation (invdb.h), read
 * on every maintenance pass rather than per accepted event, so that a
 * change relayd made without a notice (its first build of the tables)
 * is seen too.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counter.h"
#include "eligible.h"
#include "event.h"
#include "historyd.h"
#include "invdb.h"
#include "log.h"
#include "mem.h"
#include "plusmark.h"
#include "policy.h"
#include "relaylist.h"
#include "relayurl.h"
#include "role.h"
#include "store.h"

/* One author's stored relay list. */
struct hist_list {
	int64_t		 hl_at;
	uint8_t		 hl_id[EVENT_ID_LEN];
	struct relaylist hl_list;
};

/* The union of the scopes probed on one relay. */
struct hist_scope {
	struct hmap sc_addrs;	/* coordinates and addresses */
	struct hmap sc_ids;	/* hex ids */
	struct hmap sc_threads; /* root ids, coordinates (keys) */
	unsigned    sc_purposes;
	int	    sc_trusted;
};

struct histd {
	struct role_ctx	      *hd_ctx;
	int		       hd_enabled;
	int		       hd_public;
	int64_t		       hd_inv_gen; /* invdb generation reconciled */
	int		       hd_dirty;
	struct hmap	       hd_lists; /* pubkey -> struct hist_list */
	unsigned	       hd_urlflags;
	struct relayurl_self   hd_self;
	char		     **hd_fallback; /* canonical, trusted */
	size_t		       hd_nfallback;
	struct hmap	       hd_marks; /* GRASP-03 fallback marks */
	int64_t		       hd_mark_gen;
	size_t		       hd_neligible;
	struct conn_mgr	      *hd_conns;
	struct hist_sched      hd_sched;
	lws_sorted_usec_list_t hd_sul_pass;
	uint64_t	       hd_reconciles, hd_events, hd_ingest_dropped;
	uint64_t	       hd_groups_ok, hd_groups_failed;
};

static struct histd histd;

static const struct lws_protocols hist_protocols[] = { CONN_LWS_PROTOCOL,
	{ NULL, NULL, 0, 0, 0, NULL, 0 } };

static int64_t
delay_ms(const struct histd *hd, double secs)
{
	return (int64_t)(cfg_scale_delay(&hd->hd_ctx->r_cfg, secs) * 1000);
}


static void
take_event(struct histd *hd, const struct event *ev)
{
	struct hist_list *l;

	if (ev->kind == KIND_DELETION &&
	    (l = hmap_get(&hd->hd_lists, ev->pubkey, 32)) != NULL &&
	    relaylist_deleted_by(ev, l->hl_id, l->hl_at)) {
		hmap_del(&hd->hd_lists, ev->pubkey, 32);
		relaylist_clear(&l->hl_list);
		free(l);
		hd->hd_dirty = 1;
		return;
	}
	if (ev->kind != KIND_RELAY_LIST)
		return;
	if ((l = hmap_get(&hd->hd_lists, ev->pubkey, 32)) == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL)
			fatal("hist_list");
		hmap_put(&hd->hd_lists, ev->pubkey, 32, l);
	} else if (ev->created_at < l->hl_at ||
	    (ev->created_at == l->hl_at && memcmp(ev->id, l->hl_id, 32) >= 0))
		return;
	relaylist_clear(&l->hl_list);
	relaylist_parse(ev, hd->hd_urlflags, hd->hd_self.rs_v, hd->hd_self.rs_n,
	    &l->hl_list);
	l->hl_at = ev->created_at;
	memcpy(l->hl_id, ev->id, 32);
	/* GRASP-03: "Mailbox replacement/removal changes desired ownership
	 * immediately". */
	hd->hd_dirty = 1;
}

static void
take_stored(void *arg, int64_t seq, const struct event *ev)
{
	(void)seq;
	take_event(arg, ev);
}

/* The kinds take_event() reads, stored at start and then from the feed;
 * the rest is in the inventory's tables (invdb.h) and the eligible
 * authors' (eligible.h). */
static const uint32_t take_kinds[] = { KIND_RELAY_LIST, KIND_DELETION };

/* ------------------------------------------------------------------ */
/* Desired relays and their scopes.                                    */

static struct hist_scope *
scope_get(struct hmap *scopes, const char *key, unsigned purpose, int trusted)
{
	struct hist_scope *sc = hmap_get(scopes, key, strlen(key));

	if (sc == NULL) {
		if ((sc = calloc(1, sizeof(*sc))) == NULL)
			fatal("scope_get");
		hmap_put(scopes, key, strlen(key), sc);
	}
	sc->sc_purposes |= purpose;
	sc->sc_trusted |= trusted;
	return sc;
}

static void
set_add(struct hmap *set, const char *s)
{
	char *k;

	if (hmap_get(set, s, strlen(s)) != NULL)
		return;
	if ((k = strdup(s)) == NULL)
		fatal("set_add");
	hmap_put(set, k, strlen(k), k);
}

static void
set_add_id(struct hmap *set, const uint8_t id[EVENT_ID_LEN])
{
	char hex[65];

	hex_encode(id, 32, hex);
	set_add(set, hex);
}

/* GRASP-03: a root of an accepted Full repository, not deleted. */
static int
root_live(const struct invdb_root *rt)
{
	return !rt->rt_deleted && rt->rt_level == INV_FULL;
}

/*
 * A live root some scopes take part in, and those scopes: its thread is
 * read once per reconciliation (thread_read()), for all of them.
 */
struct hist_root {
	int64_t		    ro_num;
	struct hist_scope **ro_scopes;
	size_t		    ro_n, ro_cap;
};

/*
 * A participant's scope for root rt: its id now, its descendant ids and
 * descendant addresses when the thread is read (roots: num -> struct
 * hist_root).  The repository coordinate is an owner's or maintainer's
 * scope (scope_add_repo(), public instances only).
 */
static void
scope_add_thread(struct hmap *roots, struct hist_scope *sc,
    const struct invdb_root *rt)
{
	struct hist_root *ro;
	size_t		  i;

	set_add_id(&sc->sc_ids, rt->rt_id);
	hmap_put(&sc->sc_threads, rt->rt_id, 32, (void *)1);
	if ((ro = hmap_get(roots, &rt->rt_num, sizeof(rt->rt_num))) == NULL) {
		if ((ro = calloc(1, sizeof(*ro))) == NULL)
			fatal("scope_add_thread");
		ro->ro_num = rt->rt_num;
		hmap_put(roots, &ro->ro_num, sizeof(ro->ro_num), ro);
	}
	for (i = 0; i < ro->ro_n; i++)
		if (ro->ro_scopes[i] == sc)
			return;
	if (ro->ro_n == ro->ro_cap)
		ro->ro_scopes = xreallocarray(ro->ro_scopes,
		    ro->ro_cap = ro->ro_cap ? 2 * ro->ro_cap : 4,
		    sizeof(*ro->ro_scopes));
	ro->ro_scopes[ro->ro_n++] = sc;
}

static void
thread_id(void *arg, const uint8_t id[EVENT_ID_LEN])
{
	const struct hist_root *ro = arg;
	char			hex[2 * EVENT_ID_LEN + 1];
	size_t			i;

	hex_encode(id, EVENT_ID_LEN, hex);
	for (i = 0; i < ro->ro_n; i++)
		set_add(&ro->ro_scopes[i]->sc_ids, hex);
}

static void
thread_addr(void *arg, const char *addr)
{
	const struct hist_root *ro = arg;
	size_t			i;

	for (i = 0; i < ro->ro_n; i++)
		set_add(&ro->ro_scopes[i]->sc_addrs, addr);
}

/*
 * Reads the thread of every root in roots once into each of its scopes
 * (st not NULL), and frees roots.  Returns -1 on a database error.
 */
static int
threads_read(struct store *st, struct hmap *roots)
{
	struct hist_root *ro;
	size_t		  it;
	void		 *v;
	int		  rc = 0;

	for (it = 0; hmap_next(roots, &it, NULL, NULL, &v);) {
		ro = v;
		if (st != NULL && rc == 0 &&
		    invdb_thread(st, ro->ro_num, thread_id, thread_addr, ro) ==
			-1)
			rc = -1;
		free(ro->ro_scopes);
		free(ro);
	}
	hmap_free(roots);
	return rc;
}

/* The roots of one author as invdb_author_roots() gives them. */
struct hist_roots {
	struct invdb_root *v;
	size_t		   n, cap;
};

static void
root_take(void *arg, const struct invdb_root *rt)
{
	struct hist_roots *a = arg;

	if (a->n == a->cap)
		a->v = xreallocarray(a->v, a->cap = a->cap ? 2 * a->cap : 16,
		    sizeof(*a->v));
	a->v[a->n] = *rt;
	/* Not kept past the call, and not needed. */
	a->v[a->n].rt_coord = NULL;
	a->n++;
}

/*
 * The scopes author pk's participation gives: its history mailboxes for
 * the live roots it takes part in, or, without a list but with a
 * fallback mark, the fallback relays for those it did not start.  An
 * author with neither adds nothing.  Returns -1 on a database error.
 */
static int
participant(struct histd *hd, struct store *st, struct hmap *scopes,
    struct hmap *roots, const uint8_t pk[PUBKEY_LEN], struct hist_roots *rs)
{
	const struct hist_list *l = hmap_get(&hd->hd_lists, pk, 32);
	const char	       *key;
	size_t			i, j;

	if (l == NULL &&
	    (hd->hd_nfallback == 0 || hmap_get(&hd->hd_marks, pk, 32) == NULL))
		return 0;
	rs->n = 0;
	if (invdb_author_roots(st, pk, root_take, rs) == -1)
		return -1;
	for (i = 0; i < rs->n; i++) {
		const struct invdb_root *rt = &rs->v[i];

		if (!root_live(rt))
			continue;
		if (l != NULL)
			for (j = 0; (key = relaylist_get(&l->hl_list,
					 RELAYLIST_HISTORY, j)) != NULL;
			     j++)
				scope_add_thread(roots,
				    scope_get(scopes, key, HIST_P_PARTICIPANT,
					0),
				    rt);
		else if (memcmp(rt->rt_author, pk, 32) != 0)
			/* A root author's fallback is syncd's ordinary
			 * coverage; here only non-root participants. */
			for (j = 0; j < hd->hd_nfallback; j++)
				scope_add_thread(roots,
				    scope_get(scopes, hd->hd_fallback[j],
					HIST_P_FALLBACK, 1),
				    rt);
	}
	return 0;
}

/* A repository one of whose owner and maintainers has a relay list. */
struct hist_repo {
	char   *rp_coord;
	uint8_t rp_owner[PUBKEY_LEN];
	uint8_t (*rp_maint)[PUBKEY_LEN];
	size_t rp_nmaint;
	/* Its live roots' ids, filled by repo_root(). */
	uint8_t (*rp_roots)[EVENT_ID_LEN];
	size_t rp_nroots;
};

struct hist_repos {
	const struct histd *hd;
	struct hist_repo   *v;
	size_t		    n, cap;
};

static void
repo_take(void *arg, const struct invdb_repo *r)
{
	struct hist_repos *a = arg;
	struct hist_repo  *rp;
	size_t		   i;
	int		   listed;

	listed = hmap_get(&a->hd->hd_lists, r->ir_owner, 32) != NULL;
	for (i = 0; i < r->ir_nmaint && !listed; i++)
		listed = hmap_get(&a->hd->hd_lists, r->ir_maint[i], 32) != NULL;
	if (!listed || r->ir_level != INV_FULL)
		return;
	if (a->n == a->cap)
		a->v = xreallocarray(a->v, a->cap = a->cap ? 2 * a->cap : 16,
		    sizeof(*a->v));
	rp = &a->v[a->n++];
	memset(rp, 0, sizeof(*rp));
	rp->rp_coord = xstrdup(r->ir_coord);
	memcpy(rp->rp_owner, r->ir_owner, PUBKEY_LEN);
	if (r->ir_nmaint > 0) {
		if ((rp->rp_maint = calloc(r->ir_nmaint, PUBKEY_LEN)) == NULL)
			fatal("repo_take");
		memcpy(rp->rp_maint, r->ir_maint, r->ir_nmaint * PUBKEY_LEN);
		rp->rp_nmaint = r->ir_nmaint;
	}
}

static void
repo_root(void *arg, const struct invdb_root *rt)
{
	struct hist_repo *rp = arg;

	if (rt->rt_deleted)
		return;
	rp->rp_roots =
	    xreallocarray(rp->rp_roots, rp->rp_nroots + 1, EVENT_ID_LEN);
	memcpy(rp->rp_roots[rp->rp_nroots++], rt->rt_id, EVENT_ID_LEN);
}

static void
repos_free(struct hist_repos *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->v[i].rp_coord);
		free(a->v[i].rp_maint);
		free(a->v[i].rp_roots);
	}
	free(a->v);
	a->v = NULL;
	a->n = a->cap = 0;
}

/* An owner's or maintainer's scope: the repository and its roots. */
static void
scope_add_repo(struct hist_scope *sc, const struct hist_repo *rp)
{
	size_t i;

	set_add(&sc->sc_addrs, rp->rp_coord);
	hmap_put(&sc->sc_threads, rp->rp_coord, strlen(rp->rp_coord),
	    (void *)1);
	for (i = 0; i < rp->rp_nroots; i++) {
		set_add_id(&sc->sc_ids, rp->rp_roots[i]);
		hmap_put(&sc->sc_threads, rp->rp_roots[i], 32, (void *)1);
	}
}

static void
repo_member(struct histd *hd, struct hmap *scopes, const uint8_t pk[PUBKEY_LEN],
    const struct hist_repo *rp)
{
	const struct hist_list *l = hmap_get(&hd->hd_lists, pk, 32);
	const char	       *key;
	size_t			j;

	if (l == NULL)
		return;
	for (j = 0; (key = relaylist_get(&l->hl_list, RELAYLIST_REPO_INBOX,
			 j)) != NULL;
	     j++)
		scope_add_repo(scope_get(scopes, key, HIST_P_REPOSITORY, 0),
		    rp);
}

/*
 * On a public instance, the scopes of the owners and maintainers of
 * every Full repository.  Returns -1 on a database error.
 */
static int
repo_members(struct histd *hd, struct store *st, struct hmap *scopes)
{
	struct hist_repos repos = { hd, NULL, 0, 0 };
	size_t		  i, j;
	int		  rc = -1;

	if (invdb_repos(st, repo_take, &repos) == -1)
		goto done;
	for (i = 0; i < repos.n; i++) {
		struct hist_repo *rp = &repos.v[i];

		if (invdb_repo_roots(st, rp->rp_coord, repo_root, rp) == -1)
			goto done;
		repo_member(hd, scopes, rp->rp_owner, rp);
		for (j = 0; j < rp->rp_nmaint; j++)
			repo_member(hd, scopes, rp->rp_maint[j], rp);
	}
	rc = 0;
done:
	repos_free(&repos);
	return rc;
}

static size_t
set_values(const struct hmap *set, const char **out)
{
	size_t it, n = 0;
	void  *v;

	for (it = 0; hmap_next(set, &it, NULL, NULL, &v);)
		out[n++] = v;
	return n;
}

/*
 * The filters of one scope, in a fixed field order, each field's values
 * sorted by conn_pack_filters: a stable-sorted set.
 */
static void
build_filters(const struct hist_scope *sc, struct conn_filters *out)
{
	const char **addrs, **ids, **both, *why;
	size_t	     na, ni;

	if ((addrs = calloc(sc->sc_addrs.hm_n + 1, sizeof(*addrs))) == NULL ||
	    (ids = calloc(sc->sc_ids.hm_n + 1, sizeof(*ids))) == NULL ||
	    (both = calloc(sc->sc_addrs.hm_n + sc->sc_ids.hm_n + 1,
		 sizeof(*both))) == NULL)
		fatal("build_filters");
	na = set_values(&sc->sc_addrs, addrs);
	ni = set_values(&sc->sc_ids, ids);
	memcpy(both, addrs, na * sizeof(*both));
	memcpy(both + na, ids, ni * sizeof(*both));
	if (conn_pack_filters("{}", "a", addrs, na, CONN_REQ_BUDGET, 0, out,
		&why) == -1 ||
	    conn_pack_filters("{}", "A", addrs, na, CONN_REQ_BUDGET, 0, out,
		&why) == -1 ||
	    conn_pack_filters("{}", "e", ids, ni, CONN_REQ_BUDGET, 0, out,
		&why) == -1 ||
	    conn_pack_filters("{}", "E", ids, ni, CONN_REQ_BUDGET, 0, out,
		&why) == -1 ||
	    conn_pack_filters("{}", "q", both, na + ni, CONN_REQ_BUDGET, 0, out,
		&why) == -1)
		log_warnx("history filters: %s", why);
	free(addrs);
	free(ids);
	free(both);
}

static void
scope_free(struct hist_scope *sc)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&sc->sc_addrs, &it, NULL, NULL, &v);)
		free(v);
	for (it = 0; hmap_next(&sc->sc_ids, &it, NULL, NULL, &v);)
		free(v);
	hmap_free(&sc->sc_addrs);
	hmap_free(&sc->sc_ids);
	hmap_free(&sc->sc_threads);
	free(sc);
}

/*
 * GRASP-03: "History-probe additions become due promptly": a relay whose
 * scope gained a thread (root or repository) it did not cover is due at
 * once, or, in the middle of a rotation, as soon as that rotation ends
 * (hist_sched_added()); new descendants of covered threads wait for the
 * relay's next rotation.
 */
static void
take_threads(struct hist_sched *s, struct hist_relay *hr, struct hist_scope *sc)
{
	const void *k;
	size_t	    it, len;
	int	    added = 0;

	for (it = 0; hmap_next(&sc->sc_threads, &it, &k, &len, NULL);)
		if (hmap_get(&hr->hr_threads, k, len) == NULL)
			added = 1;
	hmap_free(&hr->hr_threads);
	hr->hr_threads = sc->sc_threads;
	memset(&sc->sc_threads, 0, sizeof(sc->sc_threads));
	if (added)
		hist_sched_added(s, hr);
}

static void
count_eligible(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	(void)pk;
	(*(size_t *)arg)++;
}

static void
scopes_free(struct hmap *scopes)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(scopes, &it, NULL, NULL, &v);)
		scope_free(v);
	hmap_free(scopes);
}

/*
 * The scopes of every desired relay, from the tables in the caller's
 * read transaction: only the authors that can have one are looked up
 * (those with a relay list, and those with a fallback mark), then every
 * thread they need is read once.  Returns -1 on a database error.
 */
static int
scopes_read(struct histd *hd, struct store *st, struct hmap *scopes)
{
	struct hmap	  roots = HMAP_INIT;
	struct hist_roots rs = { NULL, 0, 0 };
	const void	 *k;
	size_t		  it, n = 0;
	int		  rc = -1;

	if (invdb_generation(st, &hd->hd_inv_gen) == -1)
		goto done;
	for (it = 0; hmap_next(&hd->hd_lists, &it, &k, NULL, NULL);)
		if (participant(hd, st, scopes, &roots, k, &rs) == -1)
			goto done;
	for (it = 0; hmap_next(&hd->hd_marks, &it, &k, NULL, NULL);)
		if (hmap_get(&hd->hd_lists, k, 32) == NULL &&
		    participant(hd, st, scopes, &roots, k, &rs) == -1)
			goto done;
	if (threads_read(st, &roots) == -1)
		goto done;
	if (hd->hd_public && repo_members(hd, st, scopes) == -1)
		goto done;
	/* relayd keeps the eligible authors too (eligible.h). */
	if (eligible_each(store_sqlite(st), count_eligible, &n, NULL) == -1)
		goto done;
	hd->hd_neligible = n;
	rc = 0;
done:
	threads_read(NULL, &roots);
	free(rs.v);
	return rc;
}

/*
 * Derives the desired probe relays and their scopes again, from one
 * snapshot of the tables (one read transaction on the read-only
 * connection).  On a database error nothing changes and the next
 * maintenance pass tries again.
 */
static void
reconcile(struct histd *hd)
{
	struct store	   *st = hd->hd_ctx->r_store;
	struct hmap	    scopes = HMAP_INIT;
	struct hist_relay  *hr;
	struct conn_filters f;
	const void	   *k;
	size_t		    it, klen;
	void		   *v;
	int		    opened, rc = -1;

	hd->hd_reconciles++;
	if ((opened = invdb_read_begin(st)) != -1) {
		rc = scopes_read(hd, st, &scopes);
		invdb_read_end(st, opened);
	}
	if (rc == -1) {
		log_warnx("inventory not read; trying again");
		scopes_free(&scopes);
		hd->hd_inv_gen = -1;
		return;
	}
	hist_sched_unmark(&hd->hd_sched);
	for (it = 0; hmap_next(&scopes, &it, &k, &klen, &v);) {
		struct hist_scope *sc = v;
		char		   key[RELAYURL_MAX + 1];

		if (klen > RELAYURL_MAX)
			klen = RELAYURL_MAX;
		memcpy(key, k, klen);
		key[klen] = '\0';
		hr = hist_sched_want(&hd->hd_sched, key, sc->sc_purposes,
		    sc->sc_trusted);
		memset(&f, 0, sizeof(f));
		build_filters(sc, &f);
		hist_sched_set_filters(&hd->hd_sched, hr, &f);
		take_threads(&hd->hd_sched, hr, sc);
		scope_free(sc);
	}
	hmap_free(&scopes);
	hist_sched_sweep(&hd->hd_sched);
	hd->hd_dirty = 0;
}

/* ------------------------------------------------------------------ */
/* Workers.                                                            */

static void
group_done(void *arg, struct conn_req *req, enum conn_fetch_result res,
    const char *reason, const struct conn_fetch_stats *st)
{
	struct hist_relay *r = arg;
	struct histd	  *hd = &histd;
	/* A group whose events did not all reach relayd failed: the
	 * retry after the failure delay asks again. */
	int ok = res == FETCH_EOSE && (st == NULL || st->cs_dropped == 0);

	(void)req;
	log_debug("%s: history group %zu: %s (%s), %u pages, %llu events",
	    r->hr_key, r->hr_cursor, conn_fetch_result_name(res),
	    reason ? reason : "", st ? st->cs_pages : 0,
	    st ? (unsigned long long)st->cs_events : 0ULL);
	if (st)
		hd->hd_events += st->cs_events;
	if (ok)
		hd->hd_groups_ok++;
	else
		hd->hd_groups_failed++;
	hist_sched_done(&hd->hd_sched, r, ok, role_now_ms());
}

static int
worker_start(void *arg, struct hist_relay *r, const char *filter)
{
	struct histd	    *hd = arg;
	struct conn_fetch_cb cb = { NULL, group_done, r };
	const char	    *why = NULL;

	if (r->hr_conn == NULL &&
	    (r->hr_conn = conn_get(hd->hd_conns, r->hr_key,
		 r->hr_trusted ? CONN_TRUSTED : 0, &why)) == NULL) {
		log_warnx("%s: no history probe: %s", r->hr_key,
		    why ? why : "refused");
		return -1;
	}
	if ((r->hr_req = conn_paginate(r->hr_conn, filter, CONN_PRIO_BACKGROUND,
		 0, &cb)) == NULL) {
		log_warnx("%s: history filter refused", r->hr_key);
		return -1;
	}
	return 0;
}

/* An exclusively history connection retires once its worker is idle. */
static void
worker_release(void *arg, struct hist_relay *r)
{
	(void)arg;
	if (r->hr_conn != NULL) {
		conn_release(r->hr_conn);
		r->hr_conn = NULL;
	}
}

static const struct hist_sched_ops hist_sched_ops = {
	.start = worker_start,
	.release = worker_release,
};

/* The fallback marks, if their generation moved (or always: force). */
static void
load_marks(struct histd *hd, int force)
{
	struct sqlite3 *db = store_sqlite(hd->hd_ctx->r_store);
	int64_t		gen;

	if (!force &&
	    (plusmark_generation(db, &gen) == -1 || gen == hd->hd_mark_gen))
		return;
	if (plusmark_load(db, &hd->hd_marks, &hd->hd_mark_gen) >= 0)
		hd->hd_dirty = 1;
}

static void
pass_cb(lws_sorted_usec_list_t *sul)
{
	struct histd *hd = &histd;
	double	      secs = cfg_period(&hd->hd_ctx->r_cfg, HIST_MAINT_PERIOD);
	int64_t	      gen;

	(void)sul;
	load_marks(hd, 0);
	/* relayd's tables changed: one row says whether (and it moves
	 * however the change came, notice or not). */
	if (!hd->hd_dirty && invdb_generation(hd->hd_ctx->r_store, &gen) == 0 &&
	    gen != hd->hd_inv_gen)
		hd->hd_dirty = 1;
	if (hd->hd_dirty)
		reconcile(hd);
	hist_sched_pass(&hd->hd_sched, role_now_ms());
	lws_sul_schedule(hd->hd_ctx->r_lws, 0, &hd->hd_sul_pass, pass_cb,
	    (lws_usec_t)(secs * 1e6));
}

static int
hist_ingest(void *arg, const char *relay_key, const char *json, size_t len)
{
	struct histd *hd = arg;

	if (role_ingest(hd->hd_ctx, relay_key, json, len) == 0)
		return 0;
	hd->hd_ingest_dropped++;
	return -1;
}

static const struct conn_hooks hist_hooks = {
	.ingest = hist_ingest,
};

/* ------------------------------------------------------------------ */
/* Role hooks.                                                         */

static int
hist_init(struct role_ctx *ctx)
{
	struct histd	    *hd = &histd;
	const struct config *cfg = &ctx->r_cfg;
	size_t		     i;

	hd->hd_ctx = ctx;
	ctx->r_data = hd;
	hd->hd_enabled = cfg->sync_plus_enabled && cfg->sync_enabled;
	hd->hd_public = !cfg->private_mode;
	if (!hd->hd_enabled) {
		log_info("GRASP-03 disabled (%s): no history probes",
		    !cfg->sync_enabled ? "NGIT_SYNC_ENABLED=false" :
					 "NGIT_SYNC_PLUS_ENABLED=false");
		return 0;
	}
	hd->hd_urlflags =
	    cfg->sync_allow_private_targets ? RELAYURL_ALLOW_PRIVATE : 0;
	relayurl_self_init(&hd->hd_self, cfg->domain);
	for (i = 0; i < cfg->sync_plus_fallback_relays.n; i++)
		relayurl_add_trusted(&hd->hd_fallback, &hd->hd_nfallback,
		    cfg->sync_plus_fallback_relays.v[i], "fallback relay");
	hd->hd_inv_gen = -1;
	if (feed_scan_kinds(ctx->r_store, 0, ctx->r_start_seq, take_kinds,
		sizeof(take_kinds) / sizeof(take_kinds[0]), take_stored,
		hd) == -1)
		return -1;
	hd->hd_conns = conn_mgr_new(ctx->r_lws, ctx->r_vhost, &ctx->r_cfg,
	    &hist_hooks, hd);
	hist_sched_init(&hd->hd_sched, &hist_sched_ops, hd,
	    delay_ms(hd, HIST_REFRESH), delay_ms(hd, HIST_RETRY));
	/* Fallback ownership from the database, before any request. */
	load_marks(hd, 1);
	reconcile(hd);
	log_info(
	    "%s instance: %zu eligible authors, %zu history-probe relays from the database; %zu fallback relays",
	    hd->hd_public ? "public" : "private", hd->hd_neligible,
	    hd->hd_sched.hs_relays.hm_n, hd->hd_nfallback);
	lws_sul_schedule(ctx->r_lws, 0, &hd->hd_sul_pass, pass_cb, 1);
	return 0;
}

static void
hist_accepted(struct role_ctx *ctx, int64_t seq, const struct event *ev)
{
	struct histd *hd = ctx->r_data;

	(void)seq;
	if (hd->hd_enabled)
		take_event(hd, ev);
}

/* Counts of the history state, for the view and the metrics. */
struct hist_counts {
	uint64_t eligible, relays, cursors, active, inflight;
	uint64_t max_workers, fallback, marks;
};

/*
 * Each once (counter.h), for `graspctl show historyd` and the metrics;
 * the workers are two samples, the GRASP-03 retained state's and their
 * own gauge.
 */
#define HC(f) offsetof(struct hist_counts, f)
static const struct counter hist_counters[] = {
	/* GRASP-03: the fixed-cardinality retained-state metric. */
	{ "eligible_authors",
	    "graspd_historyd_retained{state=\"eligible_authors\"}", GAUGE, NULL,
	    HC(eligible) },
	{ "desired_relays",
	    "graspd_historyd_retained{state=\"desired_relays\"}", GAUGE, NULL,
	    HC(relays) },
	{ "cursors", "graspd_historyd_retained{state=\"cursors\"}", GAUGE, NULL,
	    HC(cursors) },
	{ "workers", "graspd_historyd_retained{state=\"workers\"}", GAUGE, NULL,
	    HC(active) },
	{ NULL, "graspd_historyd_workers", GAUGE, NULL, HC(active) },
	{ "max_workers", NULL, GAUGE, NULL, HC(max_workers) },
	{ "fallback_relays", NULL, GAUGE, NULL, HC(fallback) },
	{ "fallback_marks", NULL, GAUGE, NULL, HC(marks) },
};
#undef HC

/* The totals, likewise: show lists them under "totals". */
#define HD(f) offsetof(struct histd, f)
static const struct counter hist_total_counters[] = {
	{ "admitted", NULL, COUNTER, NULL, HD(hd_sched.hs_admitted) },
	{ "groups_ok", "graspd_historyd_groups_total{result=\"ok\"}", COUNTER,
	    NULL, HD(hd_groups_ok) },
	{ "groups_failed", "graspd_historyd_groups_total{result=\"failed\"}",
	    COUNTER, NULL, HD(hd_groups_failed) },
	{ "events", "graspd_historyd_events_total", COUNTER, NULL,
	    HD(hd_events) },
	{ "ingest_dropped", NULL, COUNTER, NULL, HD(hd_ingest_dropped) },
	{ "reconciles", NULL, COUNTER, NULL, HD(hd_reconciles) },
};
#undef HD

static void
count(const struct histd *hd, struct hist_counts *c)
{
	const struct hist_relay *r;
	size_t			 it;
	void			*v;

	memset(c, 0, sizeof(*c));
	c->eligible = hd->hd_neligible;
	c->max_workers = HIST_MAX_WORKERS;
	c->fallback = hd->hd_nfallback;
	c->marks = hd->hd_marks.hm_n;
	for (it = 0; hmap_next(&hd->hd_sched.hs_relays, &it, NULL, NULL, &v);) {
		r = v;
		c->relays += r->hr_desired;
		c->cursors += r->hr_filters.cf_n > 0;
		c->active += r->hr_active;
		c->inflight += r->hr_inflight;
	}
}

static void
hist_show(struct role_ctx *ctx, cJSON *view)
{
	struct histd	    *hd = ctx->r_data;
	const struct config *cfg = &ctx->r_cfg;
	struct hist_counts   c;
	cJSON		    *arr, *o, *p;
	int64_t		     now = role_now_ms();
	size_t		     it, listed = 0;
	void		    *v;

	cJSON_AddBoolToObject(view, "grasp03_enabled", hd->hd_enabled);
	cJSON_AddBoolToObject(view, "private_mode", cfg->private_mode);
	if (!hd->hd_enabled) {
		cJSON_AddStringToObject(view, "history",
		    !cfg->sync_enabled ? "off: NGIT_SYNC_ENABLED=false" :
					 "off: NGIT_SYNC_PLUS_ENABLED=false");
		cJSON_AddNumberToObject(view, "workers", 0);
		return;
	}
	cJSON_AddStringToObject(view, "history", "on");
	count(hd, &c);
	counters_show(view, hist_counters, COUNTERS_N(hist_counters), &c);
	arr = cJSON_AddArrayToObject(view, "relays");
	for (it = 0; hmap_next(&hd->hd_sched.hs_relays, &it, NULL, NULL, &v);) {
		const struct hist_relay *r = v;
		double			 in;

		if (listed++ >= HIST_VIEW_MAX_RELAYS)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "relay", r->hr_key);
		p = cJSON_AddArrayToObject(o, "purpose");
		if (r->hr_purposes & HIST_P_PARTICIPANT)
			cJSON_AddItemToArray(p,
			    cJSON_CreateString("participant"));
		if (r->hr_purposes & HIST_P_REPOSITORY)
			cJSON_AddItemToArray(p,
			    cJSON_CreateString("repository"));
		if (r->hr_purposes & HIST_P_FALLBACK)
			cJSON_AddItemToArray(p, cJSON_CreateString("fallback"));
		cJSON_AddBoolToObject(o, "desired", r->hr_desired);
		cJSON_AddNumberToObject(o, "cursor", (double)r->hr_cursor);
		cJSON_AddNumberToObject(o, "filters",
		    (double)r->hr_filters.cf_n);
		cJSON_AddNumberToObject(o, "threads",
		    (double)r->hr_threads.hm_n);
		cJSON_AddNumberToObject(o, "rotation_left",
		    (double)r->hr_rot_left);
		in = hist_relay_due(r) > now ?
		    (double)(hist_relay_due(r) - now) / 1000 :
		    0;
		cJSON_AddNumberToObject(o, "next_due", (double)time(NULL) + in);
		cJSON_AddNumberToObject(o, "next_due_in", in);
		cJSON_AddStringToObject(o, "worker", hist_relay_state(r, now));
		cJSON_AddNumberToObject(o, "groups_ok",
		    (double)r->hr_groups_ok);
		cJSON_AddNumberToObject(o, "groups_failed",
		    (double)r->hr_groups_failed);
		cJSON_AddNumberToObject(o, "rotations",
		    (double)r->hr_rotations);
		cJSON_AddNumberToObject(o, "failed_groups_due",
		    (double)r->hr_failed.hm_n);
		cJSON_AddStringToObject(o, "last",
		    r->hr_last ? r->hr_last : "none");
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddBoolToObject(view, "relays_truncated",
	    listed > HIST_VIEW_MAX_RELAYS);
	o = cJSON_AddObjectToObject(view, "totals");
	counters_show(o, hist_total_counters, COUNTERS_N(hist_total_counters),
	    hd);
	conn_mgr_show(hd->hd_conns,
	    cJSON_AddArrayToObject(view, "connections"));
}

static void
hist_stats(struct role_ctx *ctx, cJSON *metrics)
{
	struct histd	  *hd = ctx->r_data;
	struct hist_counts c;

	role_metric(metrics, "graspd_historyd_enabled", hd->hd_enabled);
	if (!hd->hd_enabled) {
		role_metric(metrics, "graspd_historyd_workers", 0);
		return;
	}
	count(hd, &c);
	counters_metrics(metrics, hist_counters, COUNTERS_N(hist_counters), &c,
	    NULL);
	counters_metrics(metrics, hist_total_counters,
	    COUNTERS_N(hist_total_counters), hd, NULL);
	conn_mgr_stats(hd->hd_conns, metrics);
}

static void
hist_fini(struct role_ctx *ctx)
{
	struct histd *hd = ctx->r_data;
	size_t	      it;
	void	     *v;

	if (hd == NULL || !hd->hd_enabled)
		return;
	lws_sul_cancel(&hd->hd_sul_pass);
	/* Requests go with the manager, without their callbacks. */
	conn_mgr_free(hd->hd_conns);
	hd->hd_sched.hs_ops = &(const struct hist_sched_ops){ NULL, NULL };
	hist_sched_free(&hd->hd_sched);
	for (it = 0; hmap_next(&hd->hd_lists, &it, NULL, NULL, &v);) {
		relaylist_clear(&((struct hist_list *)v)->hl_list);
		free(v);
	}
	hmap_free(&hd->hd_lists);
	hmap_free(&hd->hd_marks);
	strv_free(hd->hd_fallback, hd->hd_nfallback);
}

static const struct role_ops hist_ops = {
	.init = hist_init,
	.accepted = hist_accepted,
	.kinds = take_kinds,
	.nkinds = sizeof(take_kinds) / sizeof(take_kinds[0]),
	.show = hist_show,
	.stats = hist_stats,
	.fini = hist_fini,
	.protocols = hist_protocols,
};

int
main(int argc, char *argv[])
{
	return role_main(argc, argv, ROLE_HISTORYD, &hist_ops);
}
