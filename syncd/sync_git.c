/*
 * sync_git.c: syncd's git-data hunt for purgatory (reference brief 3.15,
 * the "git" half of GRASP-02).  relayd holds a state (30618), PR (1618)
 * or PR update (1619) whose objects no repository has; syncd reads those
 * held events from the purgatory tables (read-only), and for each
 * repository identifier d fetches the missing objects from the http(s)
 * clone URLs of the announcements with that d and of the held PRs into
 * the repository relayd created for d, then tells relayd (a GIT_DATA
 * request on the gitdata channel, msg.h), which releases what the data
 * satisfies exactly as after a push.
 *
 * This file is the hunt: one state machine per d (attempts, backoff,
 * the per-domain fetch limits, the notices to relayd), the scan of the
 * held events, and the timers.  Running git -- the check, the fetches,
 * the clone URLs and their vetting -- is its git source, sync_gitsrc.c.
 * Every git command is a child process in common/child.c's table,
 * reaped from the loop and killed past its deadline, so a hostile git
 * server can only fail its own fetch.
 *
 * The same scan feeds held announcements to syncd's small inventory of
 * StateOnly repositories (reference brief 3.13; sd_held, since the
 * inventory's tables hold only accepted ones), so that their state events, and
 * with them the git data, can be synced at all.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "buf.h"
#include "child.h"
#include "counter.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "msg.h"
#include "pktline.h"
#include "policy.h"
#include "purg.h"
#include "relayurl.h"
#include "resolve.h"
#include "store.h"
#include "syncd.h"
#include "sync_git.h"

/* One held event and what it waits for. */
struct git_ev {
	LIST_ENTRY(git_ev) ge_entry; /* in its hunt */
	uint8_t		   ge_id[EVENT_ID_LEN];
	struct git_hunt	  *ge_hunt;
	char		 **ge_oids;
	size_t		   ge_noids;
	char		 **ge_clone; /* a PR's clone URLs */
	size_t		   ge_nclone;
	uint64_t	   ge_seen; /* scan generation */
};

/* A GIT_DATA notice (msg.h) waiting for relayd. */
struct git_notice {
	TAILQ_ENTRY(git_notice) gn_entry;
	uint8_t			gn_owner[PUBKEY_LEN];
	char		       *gn_d;
};

static void arm_due(struct sync_git *);
static void tick_arm(struct sync_git *, double secs);

const struct config *
sync_git_cfg(const struct sync_git *sg)
{
	return &sg->sg_sd->sd_ctx->r_cfg;
}

static int64_t
delay_ms(const struct sync_git *sg, double secs)
{
	return (
	    int64_t)(cfg_scale_delay(sync_git_cfg(sg), secs) * 1000.0 + 0.5);
}

/* Held events. */

/*
 * What a held event waits for: a state's branch and tag objects (names
 * ending "^{}" and "ref: " values skipped, as relayd reads them), a PR's
 * "c" commit and its clone URLs.  NULL if it does not parse.
 */
static struct git_ev *
ev_new(const struct purg_ev *pe)
{
	struct git_ev	       *ge;
	struct event	       *ev;
	const struct event_tag *t;
	char			err[64];
	uint32_t		i, j;
	int			have_c = 0;

	if ((ev = event_parse(pe->pe_json, strlen(pe->pe_json), err,
		 sizeof(err))) == NULL)
		return NULL;
	if ((ge = calloc(1, sizeof(*ge))) == NULL)
		fatal("sync_git: ev_new");
	memcpy(ge->ge_id, pe->pe_id, 32);
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (t->n < 2)
			continue;
		if (ev->kind == KIND_REPO_STATE) {
			size_t len = t->v[0].len;

			if ((strncmp(t->v[0].s, "refs/heads/", 11) != 0 &&
				strncmp(t->v[0].s, "refs/tags/", 10) != 0) ||
			    (len >= 3 &&
				strcmp(t->v[0].s + len - 3, "^{}") == 0) ||
			    !pkt_is_oid(t->v[1].s, t->v[1].len))
				continue;
			if (ge->ge_noids < SYNC_GIT_MAX_OBJECTS)
				strv_add(&ge->ge_oids, &ge->ge_noids,
				    t->v[1].s);
			continue;
		}
		if (strcmp(t->v[0].s, "c") == 0 && !have_c) {
			have_c = 1;
			if (pkt_is_oid(t->v[1].s, t->v[1].len))
				strv_add(&ge->ge_oids, &ge->ge_noids,
				    t->v[1].s);
		} else if (strcmp(t->v[0].s, "clone") == 0) {
			for (j = 1;
			     j < t->n && ge->ge_nclone < SYNC_GIT_MAX_URLS; j++)
				if (t->v[j].len <= RELAYURL_MAX)
					strv_add(&ge->ge_clone, &ge->ge_nclone,
					    t->v[j].s);
		}
	}
	event_destroy(ev);
	return ge;
}

static void
ev_free(struct git_ev *ge)
{
	strv_free(ge->ge_oids, ge->ge_noids);
	strv_free(ge->ge_clone, ge->ge_nclone);
	free(ge);
}

/* Hunts. */

static void
attempt_clear(struct git_hunt *h)
{
	size_t i;

	free(h->gh_repo);
	h->gh_repo = NULL;
	free(h->gh_wants);
	h->gh_wants = NULL;
	h->gh_nwants = 0;
	for (i = 0; i < h->gh_nurls; i++)
		free(h->gh_urls[i].gu_url);
	free(h->gh_urls);
	h->gh_urls = NULL;
	h->gh_nurls = 0;
	free(h->gh_batch);
	h->gh_batch = NULL;
	h->gh_nbatch = 0;
	resolve_cancel(h->gh_resolve);
	h->gh_resolve = 0;
	h->gh_url = 0;
	h->gh_vetted = 0;
	h->gh_single = 0;
	h->gh_fetched = 0;
	h->gh_final = 0;
}

static struct git_hunt *
hunt_get(struct sync_git *sg, const char *d)
{
	struct git_hunt *h = hmap_get(&sg->sg_hunts, d, strlen(d));

	if (h != NULL) {
		/* Its child was killed when it had no event; keep it. */
		if (h->gh_gone) {
			h->gh_gone = 0;
			h->gh_abort = 1;
		}
		return h;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		fatal("sync_git: hunt_get");
	h->gh_d = xstrdup(d);
	LIST_INIT(&h->gh_events);
	h->gh_next_ms = INT64_MAX;
	h->gh_out = h->gh_err = -1;
	hmap_put(&sg->sg_hunts, h->gh_d, strlen(h->gh_d), h);
	return h;
}

static void
hunt_free(struct sync_git *sg, struct git_hunt *h)
{
	hmap_del(&sg->sg_hunts, h->gh_d, strlen(h->gh_d));
	attempt_clear(h);
	buf_free(&h->gh_errtail);
	free(h->gh_source);
	free(h->gh_d);
	free(h);
}

/*
 * A new held event for h: attempts start over, maybe sooner.  One syncd
 * sent (source, the relay it came from) is due at once: start_attempt()
 * waits out SYNC_GIT_DELAY_SYNCED unless that relay is a clone URL's.
 */
static void
hunt_new_event(struct sync_git *sg, struct git_hunt *h, int remote,
    const char *source)
{
	int64_t now = role_now_ms(),
		due = now +
	    delay_ms(sg, remote ? SYNC_GIT_DELAY_SYNCED : SYNC_GIT_DELAY_USER);

	if (remote && source != NULL) {
		free(h->gh_source);
		h->gh_source = xstrdup(source);
		h->gh_source_till = due;
		due = now;
	}

	h->gh_attempts = 0;
	if (h->gh_step != HS_IDLE)
		h->gh_renewed = 1;
	if (due < h->gh_next_ms)
		h->gh_next_ms = due;
}

/* The hunts, copied out so that the map may change meanwhile. */
static struct git_hunt **
hunts_array(struct sync_git *sg, size_t *n)
{
	struct git_hunt **v;
	size_t		  it, k = 0;
	void		 *val;

	if ((v = calloc(sg->sg_hunts.hm_n + 1, sizeof(*v))) == NULL)
		fatal("sync_git: hunts_array");
	for (it = 0; hmap_next(&sg->sg_hunts, &it, NULL, NULL, &val);)
		v[k++] = val;
	*n = k;
	return v;
}

static double
backoff(int attempts)
{
	double s = SYNC_GIT_BACKOFF_FIRST;

	while (--attempts > 0 && s < SYNC_GIT_BACKOFF_MAX)
		s *= 2;
	return s < SYNC_GIT_BACKOFF_MAX ? s : SYNC_GIT_BACKOFF_MAX;
}

void
sync_git_set_error(struct git_hunt *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->gh_error, sizeof(h->gh_error), fmt, ap);
	va_end(ap);
}

/* Ends an attempt and schedules the next one (reference brief 3.15). */
void
sync_git_finish(struct sync_git *sg, struct git_hunt *h)
{
	int64_t now = role_now_ms(), next;

	h->gh_step = HS_IDLE;
	h->gh_nurls_last = h->gh_nurls;
	attempt_clear(h);
	h->gh_attempts++;
	next = now + delay_ms(sg, backoff(h->gh_attempts));
	if (h->gh_renewed) {
		h->gh_attempts = 0;
		if (h->gh_next_ms < next)
			next = h->gh_next_ms;
	}
	h->gh_renewed = 0;
	h->gh_next_ms = next;
	if (h->gh_error[0])
		log_debug("git hunt %s: attempt %d incomplete: %s", h->gh_d,
		    h->gh_attempts, h->gh_error);
	arm_due(sg);
}

/* Notices to relayd. */

void
sync_git_notify(struct sync_git *sg, struct git_hunt *h)
{
	struct git_notice *gn;

	if (!h->gh_has_owner)
		return;
	h->gh_notified = 1;
	/* One waiting notice covers both; one already out may not. */
	TAILQ_FOREACH(gn, &sg->sg_notices, gn_entry)
		if ((gn != TAILQ_FIRST(&sg->sg_notices) ||
			!sg->sg_notice_sent) &&
		    memcmp(gn->gn_owner, h->gh_owner, 32) == 0 &&
		    strcmp(gn->gn_d, h->gh_d) == 0)
			return;
	if ((gn = calloc(1, sizeof(*gn))) == NULL)
		fatal("sync_git: notify");
	memcpy(gn->gn_owner, h->gh_owner, 32);
	gn->gn_d = xstrdup(h->gh_d);
	TAILQ_INSERT_TAIL(&sg->sg_notices, gn, gn_entry);
	sync_git_arm_poll(sg);
}

static void
notice_pop(struct sync_git *sg, int ok)
{
	struct git_notice *gn = TAILQ_FIRST(&sg->sg_notices);

	if (ok)
		sg->sg_notice_ok++;
	else
		sg->sg_notice_failed++;
	TAILQ_REMOVE(&sg->sg_notices, gn, gn_entry);
	free(gn->gn_d);
	free(gn);
	sg->sg_notice_sent = 0;
	sg->sg_notice_at = 0;
}

/*
 * Sends the notices one at a time on the REQ socket without waiting: a
 * send that would block is tried again from the poll timer, a reply is
 * read there, and a notice unanswered after SYNC_GIT_NOTICE_TIMEOUT is
 * given up (the next attempt of that hunt finds the objects present and
 * sends it again).
 */
static void
notices_run(struct sync_git *sg)
{
	struct git_notice *gn;
	int64_t		   now = role_now_ms();
	int64_t		   tmo;
	struct msg	   m;
	cJSON		  *rep, *ok;
	uint8_t		   req[MSG_GIT_DATA_MAX];
	int		   r, n;

	tmo = (int64_t)(SYNC_GIT_NOTICE_TIMEOUT * 1000);
	while (sg->sg_sock >= 0 && (gn = TAILQ_FIRST(&sg->sg_notices))) {
		if (sg->sg_notice_at == 0)
			sg->sg_notice_at = now;
		if (!sg->sg_notice_sent) {
			if ((n = msg_git_data_encode(req, gn->gn_owner,
				 gn->gn_d)) == -1) {
				log_warnx(
				    "git-data notice for %s: identifier too long",
				    gn->gn_d);
				notice_pop(sg, 0);
				continue;
			}
			r = msg_send(sg->sg_sock, MSG_GIT_DATA, req, (size_t)n,
			    NN_DONTWAIT);
			if (r == 0) {
				sg->sg_notice_sent = 1;
				sg->sg_notice_at = now;
				return;
			}
			if (errno != EAGAIN) {
				log_warn("git-data notice to relayd");
				notice_pop(sg, 0);
				continue;
			}
			if (now - sg->sg_notice_at < tmo)
				return;
			log_warnx("git-data notice for %s: relayd is not there",
			    gn->gn_d);
			notice_pop(sg, 0);
			continue;
		}
		if ((r = msg_recv(sg->sg_sock, &m, NN_DONTWAIT)) == 0) {
			if (now - sg->sg_notice_at < tmo)
				return;
			log_warnx(
			    "git-data notice for %s: no answer from relayd",
			    gn->gn_d);
			notice_pop(sg, 0);
			continue;
		}
		if (r == -1) {
			log_warn("git-data notice: receive");
			notice_pop(sg, 0);
			continue;
		}
		rep = m.m_type == MSG_CONTROL_REPLY ?
		    cJSON_ParseWithLength((const char *)m.m_data, m.m_len) :
		    NULL;
		ok = rep ? cJSON_GetObjectItem(rep, "ok") : NULL;
		if (!cJSON_IsTrue(ok)) {
			const cJSON *e =
			    rep ? cJSON_GetObjectItem(rep, "error") : NULL;

			log_warnx("git-data notice for %s refused: %s",
			    gn->gn_d,
			    cJSON_IsString(e) ? e->valuestring :
						"malformed reply");
		} else
			log_debug("git hunt %s: relayd told", gn->gn_d);
		notice_pop(sg, cJSON_IsTrue(ok));
		cJSON_Delete(rep);
		msg_free(&m);
	}
}

/* Domains. */

struct git_domain *
sync_git_domain_get(struct sync_git *sg, const char *host)
{
	struct git_domain *gd = hmap_get(&sg->sg_domains, host, strlen(host));

	if (gd == NULL) {
		if ((gd = calloc(1, sizeof(*gd))) == NULL)
			fatal("sync_git: domain_get");
		hmap_put(&sg->sg_domains, host, strlen(host), gd);
	}
	return gd;
}

/* 1 if a fetch from gd may start now (reference brief 3.15). */
int
sync_git_domain_allows(const struct git_domain *gd, int64_t now)
{
	int64_t oldest = gd->gd_starts[gd->gd_next];

	return gd->gd_running < SYNC_GIT_DOMAIN_CONCURRENT &&
	    (oldest == 0 ||
		now - oldest >= (int64_t)(SYNC_GIT_DOMAIN_WINDOW * 1000));
}

void
sync_git_domain_start(struct git_domain *gd, int64_t now)
{
	gd->gd_running++;
	gd->gd_starts[gd->gd_next] = now;
	gd->gd_next = (gd->gd_next + 1) % SYNC_GIT_DOMAIN_RATE;
}

/* Forgets domains with nothing running and no start in the window. */
static void
domains_prune(struct sync_git *sg)
{
	int64_t	    now = role_now_ms();
	size_t	    it;
	const void *key;
	size_t	    keylen;
	void	   *v;
	int	    removed;

	do {
		removed = 0;
		for (it = 0;
		     hmap_next(&sg->sg_domains, &it, &key, &keylen, &v);) {
			struct git_domain *gd = v;
			size_t last = (gd->gd_next + SYNC_GIT_DOMAIN_RATE - 1) %
			    SYNC_GIT_DOMAIN_RATE;

			if (gd->gd_running > 0 ||
			    now - gd->gd_starts[last] <
				(int64_t)(SYNC_GIT_DOMAIN_WINDOW * 1000))
				continue;
			hmap_del(&sg->sg_domains, key, keylen);
			free(gd);
			removed = 1;
			break;
		}
	} while (removed);
}

/* Attempts. */

/*
 * Moves the clone URL of the server h's last held event came from (the
 * relay at the same host and port) to the front: it has the data.
 * Returns 0, or -1 when no URL is its and SYNC_GIT_DELAY_SYNCED since
 * the event has not passed yet.
 */
static int
source_first(struct sync_git *sg, struct git_hunt *h)
{
	struct relayurl ru;
	struct git_url	u;
	size_t		i;

	(void)sg;
	if (h->gh_source == NULL || relayurl_parse(h->gh_source, &ru) == -1)
		return 0;
	for (i = 0; i < h->gh_nurls; i++)
		if (h->gh_urls[i].gu_url != NULL &&
		    strcasecmp(h->gh_urls[i].gu_ru.ru_authority,
			ru.ru_authority) == 0)
			break;
	if (i == h->gh_nurls)
		return role_now_ms() < h->gh_source_till ? -1 : 0;
	u = h->gh_urls[i];
	memmove(&h->gh_urls[1], &h->gh_urls[0], i * sizeof(u));
	h->gh_urls[0] = u;
	return 0;
}

/*
 * Starts an attempt for h: the objects its held events wait for, the
 * repository to fetch into (the first of the stored, then the held
 * announcements with d whose repository exists), the candidate URLs
 * (their clone URLs, then the held PRs'), and the check of what is there.
 */
static void
start_attempt(struct sync_git *sg, struct git_hunt *h)
{
	struct git_sources so;
	struct purg_ann	  *held = NULL;
	struct git_ev	  *ge;
	struct event	  *ev;
	char		   repo[PATH_MAX], err[64];
	size_t		   nheld = 0, i, k;

	memset(&so, 0, sizeof(so));
	attempt_clear(h);
	sg->sg_attempts++;
	h->gh_next_ms = INT64_MAX;
	h->gh_renewed = 0;
	h->gh_has_owner = 0;
	/* The objects. */
	LIST_FOREACH(ge, &h->gh_events, ge_entry) {
		for (k = 0;
		     k < ge->ge_noids && h->gh_nwants < SYNC_GIT_MAX_OBJECTS;
		     k++) {
			if (sync_gitsrc_want_find(h, ge->ge_oids[k]) != NULL)
				continue;
			if ((h->gh_wants = reallocarray(h->gh_wants,
				 h->gh_nwants + 1, sizeof(*h->gh_wants))) ==
			    NULL)
				fatal("sync_git: start_attempt");
			memset(&h->gh_wants[h->gh_nwants], 0,
			    sizeof(*h->gh_wants));
			snprintf(h->gh_wants[h->gh_nwants++].gw_oid,
			    GIT_OID_HEX + 1, "%s", ge->ge_oids[k]);
		}
	}
	h->gh_needed = h->gh_nwants;
	if (h->gh_nwants == 0) {
		sync_git_set_error(h, "its held events name no object");
		goto done;
	}
	/* Where the objects go, and where they may be. */
	if (sync_gitsrc_sources_stored(sg, h->gh_d, &so) == -1) {
		sync_git_set_error(h, "cannot read the stored announcements");
		goto done;
	}
	if (purg_ann_list_d(sg->sg_purg, h->gh_d, &held, &nheld) == -1) {
		sync_git_set_error(h, "cannot read the held announcements");
		goto done;
	}
	for (i = 0; i < nheld; i++) {
		if ((ev = event_parse(held[i].pa_json, strlen(held[i].pa_json),
			 err, sizeof(err))) == NULL)
			continue;
		/* A soft-expired one has no repository, but its URLs. */
		sync_gitsrc_sources_add(&so, ev, !held[i].pa_soft_expired);
		event_destroy(ev);
	}
	for (i = 0; i < so.so_nowners && !h->gh_has_owner; i++) {
		if (sync_gitsrc_repo_of(sg, so.so_owners[i], h->gh_d, repo,
			sizeof(repo)) == -1)
			continue;
		memcpy(h->gh_owner, so.so_owners[i], 32);
		h->gh_has_owner = 1;
		h->gh_repo = xstrdup(repo);
	}
	if (!h->gh_has_owner) {
		sync_git_set_error(h,
		    "no repository with this identifier on disk");
		goto done;
	}
	for (i = 0; i < so.so_nurls; i++)
		sync_gitsrc_url_add(sg, h, so.so_urls[i]);
	LIST_FOREACH(ge, &h->gh_events, ge_entry)
		for (k = 0; k < ge->ge_nclone; k++)
			sync_gitsrc_url_add(sg, h, ge->ge_clone[k]);
	h->gh_nurls_last = h->gh_nurls;
	if (source_first(sg, h) == -1) {
		/* Not from a clone URL's server: the pusher's push may
		 * still be on its way (SYNC_GIT_DELAY_SYNCED). */
		attempt_clear(h);
		sg->sg_attempts--;
		h->gh_next_ms = h->gh_source_till;
		purg_ann_free_list(held, nheld);
		sync_gitsrc_sources_free(&so);
		arm_due(sg);
		return;
	}
	if (sync_gitsrc_check(sg, h) == 0) {
		purg_ann_free_list(held, nheld);
		sync_gitsrc_sources_free(&so);
		return;
	}
done:
	purg_ann_free_list(held, nheld);
	sync_gitsrc_sources_free(&so);
	sync_git_finish(sg, h);
}

/* The scan of the purgatory tables. */

static void
watch_drop(struct sync_git *sg, const uint8_t id[EVENT_ID_LEN])
{
	char *key = hmap_get(&sg->sg_watch, id, 32);

	if (key == NULL)
		return;
	hmap_del(&sg->sg_watch, id, 32);
	free(key);
}

static void
watch_clear(struct sync_git *sg)
{
	size_t it;
	void  *v;

	for (it = 0; hmap_next(&sg->sg_watch, &it, NULL, NULL, &v);)
		free(v);
	hmap_free(&sg->sg_watch);
}

/*
 * Held announcements not seen before go to sd_held as StateOnly
 * repositories (reference brief 3.13): syncd then asks their relays for
 * the states of d, which the hunt needs.  sd_held never drops one.
 */
static void
feed_held_announcements(struct sync_git *sg)
{
	struct syncd	*sd = sg->sg_sd;
	struct purg_ann *v = NULL;
	struct event	*ev;
	uint8_t(*stale)[32] = NULL;
	char	    err[64];
	size_t	    n = 0, i, nstale = 0, it;
	const void *key;
	void	   *val;
	void	   *gen = (void *)(uintptr_t)sg->sg_gen;

	/* Every held announcement: all expire before the end of time. */
	if (purg_ann_due(sg->sg_purg, INT64_MAX, &v, &n) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (hmap_get(&sg->sg_anns, v[i].pa_id, 32) == NULL &&
		    (ev = event_parse(v[i].pa_json, strlen(v[i].pa_json), err,
			 sizeof(err))) != NULL) {
			inv_add_stateonly(sd->sd_held, ev);
			event_destroy(ev);
		}
		hmap_put(&sg->sg_anns, v[i].pa_id, 32, gen);
	}
	purg_ann_free_list(v, n);
	for (it = 0; hmap_next(&sg->sg_anns, &it, &key, NULL, &val);) {
		if (val == gen)
			continue;
		if ((stale = reallocarray(stale, nstale + 1, 32)) == NULL)
			fatal("sync_git: feed_held_announcements");
		memcpy(stale[nstale++], key, 32);
	}
	for (i = 0; i < nstale; i++)
		hmap_del(&sg->sg_anns, stale[i], 32);
	free(stale);
	sync_inventory_changed(sd);
}

/*
 * Reads the held states, PRs and PR updates, starts the hunt of every
 * identifier with a new one, and drops the events (and hunts) that left
 * purgatory.  Returns -1 on a database error (nothing dropped then).
 */
static int
scan_held_events(struct sync_git *sg)
{
	static const uint32_t kinds[] = { KIND_REPO_STATE, KIND_PR,
		KIND_PR_UPDATE };
	struct purg_ev	     *v;
	struct git_ev	     *ge, **stale = NULL;
	struct git_hunt	     *h;
	size_t		      n, i, k, nstale = 0, it;
	void		     *val;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (purg_ev_list_kind(sg->sg_purg, kinds[k], &v, &n) == -1)
			return -1;
		for (i = 0; i < n; i++) {
			const struct purg_ev *pe = &v[i];

			if (!policy_identifier_safe(pe->pe_d, strlen(pe->pe_d)))
				continue;
			if ((ge = hmap_get(&sg->sg_events, pe->pe_id, 32)) ==
			    NULL) {
				if ((ge = ev_new(pe)) == NULL)
					continue;
				h = hunt_get(sg, pe->pe_d);
				ge->ge_hunt = h;
				LIST_INSERT_HEAD(&h->gh_events, ge, ge_entry);
				h->gh_nevents++;
				hmap_put(&sg->sg_events, ge->ge_id, 32, ge);
				hunt_new_event(sg, h, pe->pe_remote,
				    hmap_get(&sg->sg_watch, ge->ge_id, 32));
				watch_drop(sg, ge->ge_id);
			}
			ge->ge_seen = sg->sg_gen;
			ge->ge_hunt->gh_seen = sg->sg_gen;
		}
		purg_ev_free_list(v, n);
	}
	for (it = 0; hmap_next(&sg->sg_events, &it, NULL, NULL, &val);) {
		ge = val;
		if (ge->ge_seen == sg->sg_gen)
			continue;
		if ((stale = reallocarray(stale, nstale + 1, sizeof(*stale))) ==
		    NULL)
			fatal("sync_git: scan_held_events");
		stale[nstale++] = ge;
	}
	for (i = 0; i < nstale; i++) {
		ge = stale[i];
		hmap_del(&sg->sg_events, ge->ge_id, 32);
		LIST_REMOVE(ge, ge_entry);
		ge->ge_hunt->gh_nevents--;
		/* Gone after relayd was told: released, most likely. */
		sg->sg_released += ge->ge_hunt->gh_notified != 0;
		ev_free(ge);
	}
	free(stale);
	return 0;
}

/* Drops hunts without held events; starts those that are due. */
static void
run_hunts(struct sync_git *sg)
{
	struct git_hunt **v, *h;
	int64_t		  now = role_now_ms();
	size_t		  n, i;

	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++) {
		h = v[i];
		if (h->gh_nevents == 0) {
			/* Reference brief 3.15: it leaves the queue. */
			if (h->gh_pid == 0)
				hunt_free(sg, h);
			else if (!h->gh_gone) {
				h->gh_gone = 1;
				child_kill(h->gh_pid);
				h->gh_killed = 1;
			}
			continue;
		}
		if (h->gh_step == HS_IDLE && now >= h->gh_next_ms &&
		    child_count() < SYNC_GIT_MAX_CHILDREN)
			start_attempt(sg, h);
	}
	free(v);
}

/* Timers. */

void
sync_git_child_done(pid_t pid, int status, int killed, void *arg)
{
	struct git_hunt *h = arg;
	struct sync_git *sg = h->gh_sg;
	enum hunt_step	 step = h->gh_step;
	int		 out = h->gh_out;

	(void)pid;
	h->gh_killed = killed;
	sync_gitsrc_drain_err(h);
	/* A check's output is read before its descriptor goes. */
	h->gh_out = -1;
	sync_gitsrc_child_close(sg, h);
	h->gh_out = out;
	if (step == HS_CHECK && !h->gh_gone && !h->gh_abort) {
		sync_gitsrc_check_done(sg, h, status);
		return;
	}
	if (h->gh_out >= 0)
		close(h->gh_out);
	h->gh_out = -1;
	if (h->gh_gone || h->gh_abort) {
		if (h->gh_domain != NULL)
			h->gh_domain->gd_running--;
		h->gh_domain = NULL;
		if (h->gh_gone)
			hunt_free(sg, h);
		else {
			h->gh_abort = 0;
			sync_git_set_error(h, "attempt abandoned");
			sync_git_finish(sg, h);
		}
		return;
	}
	sync_gitsrc_fetch_done(sg, h, status);
}

static void
poll_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_git *sg =
	    lws_container_of(sul, struct sync_git, sg_sul_poll);
	struct git_hunt **v;
	size_t		  n, i;

	sg->sg_poll_armed = 0;
	/* Fetches' stderr pipes, so git never blocks on a full one. */
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++)
		if (v[i]->gh_pid != 0)
			sync_gitsrc_drain_err(v[i]);
	free(v);
	/* Hunts waiting for a domain or a slot (the map may have shrunk). */
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++)
		if (v[i]->gh_step == HS_FETCH_WAIT && v[i]->gh_pid == 0)
			sync_gitsrc_fetch_next(sg, v[i]);
	free(v);
	notices_run(sg);
	sync_git_arm_poll(sg);
}

void
sync_git_arm_poll(struct sync_git *sg)
{
	size_t it;
	void  *v;
	int    need = child_count() > 0 || !TAILQ_EMPTY(&sg->sg_notices);

	for (it = 0; !need && hmap_next(&sg->sg_hunts, &it, NULL, NULL, &v);)
		need = ((struct git_hunt *)v)->gh_step == HS_FETCH_WAIT;
	if (!need || sg->sg_poll_armed || !sg->sg_running)
		return;
	sg->sg_poll_armed = 1;
	lws_sul_schedule(sg->sg_sd->sd_ctx->r_lws, 0, &sg->sg_sul_poll, poll_cb,
	    (lws_usec_t)(SYNC_GIT_POLL * 1e6));
}

static void
due_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_git *sg =
	    lws_container_of(sul, struct sync_git, sg_sul_due);

	run_hunts(sg);
	notices_run(sg);
	sync_git_arm_poll(sg);
	arm_due(sg);
}

/* Arms the timer for the first idle hunt that is due (if any). */
static void
arm_due(struct sync_git *sg)
{
	struct git_hunt *h;
	int64_t		 due = INT64_MAX, now;
	size_t		 it;
	void		*v;

	if (!sg->sg_running)
		return;
	for (it = 0; hmap_next(&sg->sg_hunts, &it, NULL, NULL, &v);) {
		h = v;
		if (h->gh_step == HS_IDLE && h->gh_nevents > 0 &&
		    h->gh_next_ms < due)
			due = h->gh_next_ms;
	}
	if (due == INT64_MAX) {
		lws_sul_cancel(&sg->sg_sul_due);
		return;
	}
	now = role_now_ms();
	/* A hunt waiting for a git slot is retried by the poll. */
	if (due < now + (int64_t)(SYNC_GIT_POLL * 1000) &&
	    child_count() >= SYNC_GIT_MAX_CHILDREN)
		due = now + (int64_t)(SYNC_GIT_POLL * 1000);
	lws_sul_schedule(sg->sg_sd->sd_ctx->r_lws, 0, &sg->sg_sul_due, due_cb,
	    due > now ? (lws_usec_t)(due - now) * 1000 : 1);
}

static void
tick_cb(lws_sorted_usec_list_t *sul)
{
	struct sync_git *sg =
	    lws_container_of(sul, struct sync_git, sg_sul_tick);
	double next = cfg_period(sync_git_cfg(sg), SYNC_GIT_TICK);

	sg->sg_gen++;
	feed_held_announcements(sg);
	if (scan_held_events(sg) == 0)
		run_hunts(sg);
	domains_prune(sg);
	notices_run(sg);
	sync_git_arm_poll(sg);
	arm_due(sg);
	/* Watched events not held yet: look again soon, for a while. */
	if (sg->sg_watch.hm_n > 0 && role_now_ms() < sg->sg_watch_till &&
	    SYNC_GIT_POLL < next)
		next = SYNC_GIT_POLL;
	else if (role_now_ms() >= sg->sg_watch_till)
		watch_clear(sg);
	tick_arm(sg, next);
}

static void
tick_arm(struct sync_git *sg, double secs)
{
	sg->sg_tick_at = role_now_ms() + (int64_t)(secs * 1000);
	lws_sul_schedule(sg->sg_sd->sd_ctx->r_lws, 0, &sg->sg_sul_tick, tick_cb,
	    (lws_usec_t)(secs * 1e6));
}

/* The first "kind" member's value in an event's JSON text, or 0. */
static uint32_t
json_kind(const char *json, size_t len)
{
	const char *p = json, *end = json + len;
	uint32_t    k = 0;

	while ((p = memmem(p, (size_t)(end - p), "\"kind\"", 6)) != NULL) {
		p += 6;
		while (p < end &&
		    (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
			*p == ':'))
			p++;
		if (p < end && *p >= '0' && *p <= '9') {
			while (p < end && *p >= '0' && *p <= '9' && k < 100000)
				k = k * 10 + (uint32_t)(*p++ - '0');
			return k;
		}
	}
	return 0;
}

void
sync_git_ingested(struct syncd *sd, const char *relay_key, const char *json,
    size_t len)
{
	struct sync_git *sg = sd->sd_git;
	struct event	*ev;
	uint32_t	 kind;
	char		 err[64];

	if (sg == NULL || !sg->sg_running || relay_key == NULL)
		return;
	kind = json_kind(json, len);
	if (kind != KIND_REPO_STATE && kind != KIND_PR &&
	    kind != KIND_PR_UPDATE && kind != KIND_REPO_ANNOUNCEMENT)
		return;
	if (sg->sg_watch.hm_n >= SYNC_GIT_WATCH_MAX)
		return;
	if ((ev = event_parse(json, len, err, sizeof(err))) == NULL)
		return;
	if (hmap_get(&sg->sg_watch, ev->id, 32) == NULL)
		hmap_put(&sg->sg_watch, ev->id, 32, xstrdup(relay_key));
	event_destroy(ev);
	sg->sg_watch_till = role_now_ms() +
	    (int64_t)(cfg_scale_delay(sync_git_cfg(sg), SYNC_GIT_WATCH) * 1000);
	/* relayd holds it after its batch: look in a moment. */
	if (sg->sg_tick_at > role_now_ms() + (int64_t)(SYNC_GIT_POLL * 1000))
		tick_arm(sg, SYNC_GIT_POLL / 2);
}

/* The role hooks. */

void
sync_git_init(struct syncd *sd)
{
	struct sync_git	    *sg;
	const struct config *cfg = &sd->sd_ctx->r_cfg;
	char		     ep[PATH_MAX + 64];
	int		     n, i;

	if ((sg = calloc(1, sizeof(*sg))) == NULL)
		fatal("sync_git_init");
	sd->sd_git = sg;
	sg->sg_sd = sd;
	sg->sg_sock = -1;
	TAILQ_INIT(&sg->sg_notices);
	if (!cfg->sync_enabled)
		return;
	sg->sg_purg = purg_open(sd->sd_ctx->r_store);
	sg->sg_urlflags =
	    cfg->sync_allow_private_targets ? RELAYURL_ALLOW_PRIVATE : 0;
	n = cfg->domain != NULL ?
	    relayurl_self_keys(cfg->domain, sg->sg_self, 4) :
	    0;
	for (i = 0; i < n; i++)
		sg->sg_selfp[sg->sg_nself++] = sg->sg_self[i];
	if (chan_endpoint(cfg->run_path, CHAN_GITDATA, ep, sizeof(ep)) == -1 ||
	    (sg->sg_sock = chan_open(NN_REQ, ep, 0)) == -1)
		log_warn(
		    "git hunt: no notice socket to relayd; fetched data waits for the next push");
	child_init(sd->sd_ctx->r_lws, (int64_t)(SYNC_GIT_REAP * 1000));
	sg->sg_running = 1;
	tick_arm(sg, cfg_period(cfg, SYNC_GIT_TICK));
}

void
sync_git_fini(struct syncd *sd)
{
	struct sync_git	  *sg = sd->sd_git;
	struct git_hunt	 **v;
	struct git_notice *gn;
	size_t		   n, i, it;
	void		  *val;

	if (sg == NULL)
		return;
	sg->sg_running = 0;
	lws_sul_cancel(&sg->sg_sul_tick);
	lws_sul_cancel(&sg->sg_sul_due);
	lws_sul_cancel(&sg->sg_sul_poll);
	watch_clear(sg);
	/* syncd's only children are the hunts'. */
	child_kill_all();
	v = hunts_array(sg, &n);
	for (i = 0; i < n; i++) {
		if (v[i]->gh_pid > 0)
			sync_gitsrc_child_close(sg, v[i]);
		hunt_free(sg, v[i]);
	}
	free(v);
	for (it = 0; hmap_next(&sg->sg_events, &it, NULL, NULL, &val);)
		ev_free(val);
	hmap_free(&sg->sg_events);
	hmap_free(&sg->sg_hunts);
	hmap_free(&sg->sg_anns);
	for (it = 0; hmap_next(&sg->sg_domains, &it, NULL, NULL, &val);)
		free(val);
	hmap_free(&sg->sg_domains);
	while ((gn = TAILQ_FIRST(&sg->sg_notices)) != NULL) {
		TAILQ_REMOVE(&sg->sg_notices, gn, gn_entry);
		free(gn->gn_d);
		free(gn);
	}
	if (sg->sg_sock >= 0)
		chan_close(sg->sg_sock);
	purg_close(sg->sg_purg);
	free(sg);
	sd->sd_git = NULL;
}

static const char *
step_name(const struct git_hunt *h)
{
	switch (h->gh_step) {
	case HS_CHECK:
		return "checking";
	case HS_FETCH_WAIT:
		return "throttled";
	case HS_FETCH:
		return "fetching";
	case HS_RESOLVE:
		return "resolving";
	default:
		return "waiting";
	}
}

/* The hunt's counters, each once (counter.h), for `graspctl show syncd`
 * (under "git_hunt") and the metrics. */
#define SG(f) offsetof(struct sync_git, f)
static const struct counter git_counters[] = {
	{ "attempts", "graspd_syncd_git_attempts_total", COUNTER, NULL,
	    SG(sg_attempts) },
	{ "fetches_ok", "graspd_syncd_git_fetches_total{result=\"ok\"}",
	    COUNTER, NULL, SG(sg_fetch_ok) },
	{ "fetches_failed", "graspd_syncd_git_fetches_total{result=\"failed\"}",
	    COUNTER, NULL, SG(sg_fetch_failed) },
	{ "fetches_timed_out",
	    "graspd_syncd_git_fetches_total{result=\"timeout\"}", COUNTER, NULL,
	    SG(sg_fetch_timeout) },
	{ "objects_fetched", "graspd_syncd_git_objects_fetched_total", COUNTER,
	    NULL, SG(sg_objects) },
	{ "urls_refused", "graspd_syncd_git_urls_refused_total", COUNTER, NULL,
	    SG(sg_refused) },
	{ "notices_ok", "graspd_syncd_git_notices_total{result=\"ok\"}",
	    COUNTER, NULL, SG(sg_notice_ok) },
	{ "notices_failed", "graspd_syncd_git_notices_total{result=\"failed\"}",
	    COUNTER, NULL, SG(sg_notice_failed) },
	{ "events_released", "graspd_syncd_git_events_released_total", COUNTER,
	    NULL, SG(sg_released) },
};
#undef SG

void
sync_git_show(struct syncd *sd, cJSON *view)
{
	struct sync_git *sg = sd->sd_git;
	cJSON		*arr, *o, *tot;
	int64_t		 now = role_now_ms();
	char		 hex[65];
	size_t		 it;
	void		*v;

	arr = cJSON_AddArrayToObject(view, "git_hunting");
	tot = cJSON_AddObjectToObject(view, "git_hunt");
	if (sg == NULL)
		return;
	for (it = 0; hmap_next(&sg->sg_hunts, &it, NULL, NULL, &v);) {
		struct git_hunt *h = v;

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "d", h->gh_d);
		if (h->gh_has_owner)
			hex_encode(h->gh_owner, 32, hex);
		cJSON_AddStringToObject(o, "owner", h->gh_has_owner ? hex : "");
		cJSON_AddStringToObject(o, "state", step_name(h));
		cJSON_AddNumberToObject(o, "held_events",
		    (double)h->gh_nevents);
		cJSON_AddNumberToObject(o, "needed", (double)h->gh_needed);
		cJSON_AddNumberToObject(o, "missing", (double)h->gh_missing);
		cJSON_AddNumberToObject(o, "clone_urls",
		    (double)h->gh_nurls_last);
		cJSON_AddNumberToObject(o, "attempts", h->gh_attempts);
		cJSON_AddNumberToObject(o, "next_attempt_in",
		    h->gh_step != HS_IDLE || h->gh_next_ms == INT64_MAX ? -1 :
			h->gh_next_ms <= now				? 0 :
					       (double)(h->gh_next_ms - now) /
			    1000.0);
		cJSON_AddStringToObject(o, "last_error", h->gh_error);
		cJSON_AddItemToArray(arr, o);
	}
	counters_show(tot, git_counters, COUNTERS_N(git_counters), sg);
	cJSON_AddNumberToObject(tot, "git_processes", child_count());
}

void
sync_git_stats(struct syncd *sd, cJSON *metrics)
{
	struct sync_git *sg = sd->sd_git;

	if (sg == NULL)
		return;
	role_metric(metrics, "graspd_syncd_git_hunts",
	    (double)sg->sg_hunts.hm_n);
	counters_metrics(metrics, git_counters, COUNTERS_N(git_counters), sg,
	    NULL);
}
