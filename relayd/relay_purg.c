/*
 * relay_purg.c: relayd's GRASP-01 purgatory (reference brief 1.3-1.9, 7).
 * A new announcement that lists this service, and a state, PR or PR
 * update whose git data is missing, is answered OK but held in the
 * purgatory tables (common/purg.h), not stored, until the data arrives:
 * a push to its repository, or objects copied between repositories.
 * Then it is stored and fanned out like any accepted event ("released",
 * relay_release.c), and the refs of every repository it governs are
 * aligned by git jobs (relay_job.c, relay_purg_stored()).  Held events
 * expire after 30 minutes; an announcement first loses its repository
 * and lingers 24 hours more.  This file holds and routes: the decision
 * for each announcement, state, PR and deletion, and the lookups that
 * relay_release.c and relay_pushgate.c (a push's authorisation) share.
 * The alignment after an event is stored is relay_purg_align.c,
 * GRASP-06's /prs/ mirror relay_purg_prs.c, the expiry sweep
 * relay_purg_sweep.c; relay_purg.h holds what the four share.
 *
 * Everything that writes the database runs inside relayd's batched
 * transactions (relay_ingest.c): the decisions during an event's
 * decide(), releases and the expiry sweep as queued tasks.  Disk and git
 * effects follow the commit.  Deliberate differences from the reference:
 * the purgatory lives in SQLite (a crash loses nothing), deadlines are
 * wall-clock times, a tie between two states goes to the lower id (as
 * NIP-01 has it), a deleted or evicted announcement drops only the held
 * states that no remaining announcement authorises, and synced copies of
 * expired announcements are refused like states and PRs.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "json.h"
#include "log.h"
#include "nip19.h"
#include "purg.h"
#include "relay_purg.h"
#include "relayd.h"

/* The client-visible words of the reference (brief 1.3-1.5, 7). */
#define MSG_HELD     "purgatory: won't be served until git data arrives"
#define MSG_DUP_HELD "duplicate: in purgatory"
#define MSG_EXPIRED \
	"invalid: previously expired from purgatory " \
	"without git data"


/* A test's PURG_EXPIRY_S in seconds (CONFIG_TEST_PURG_EXPIRY_ENV), or 0. */
static double test_expiry_s = -1;

double
relay_purg_delay(double secs)
{
	const char *v;

	if (test_expiry_s < 0) {
		test_expiry_s = 0;
		if (config_test_mode(&relayd->cfg) &&
		    (v = getenv(CONFIG_TEST_PURG_EXPIRY_ENV)) != NULL)
			test_expiry_s = atof(v);
	}
	if (secs == PURG_EXPIRY_S && test_expiry_s > 0)
		return test_expiry_s;
	return cfg_scale_delay(&relayd->cfg, secs);
}

int64_t
relay_purg_later(double secs)
{
	return (int64_t)time(NULL) + (int64_t)(relay_purg_delay(secs) + 0.5);
}

/* The safe identifier of a 30617 or 30618 into d, or -1. */
int
relay_purg_identifier(const struct event *ev, char *d, size_t dlen)
{
	const struct estr *t = event_tag_value(ev, "d");

	if (t == NULL || t->len >= dlen ||
	    !policy_identifier_safe(t->s, t->len))
		return -1;
	memcpy(d, t->s, t->len + 1);
	return 0;
}

/*
 * The tip commit of a PR or PR update, or NULL: a SHA-1 id, or a SHA-256
 * one (git's sha256 object format; grasp-audit's GRASP-06 cases name
 * one), which no repository here holds, so that it waits and expires.
 */
const char *
relay_purg_pr_commit(const struct event *ev)
{
	const struct estr *c = event_tag_value(ev, "c");

	if (c == NULL)
		return NULL;
	if (pkt_is_oid(c->s, c->len))
		return c->s;
	return c->len == GIT_OID_SHA256_HEX &&
		strspn(c->s, "0123456789abcdef") == c->len ?
	    c->s :
	    NULL;
}

struct event *
relay_purg_parse(const char *json)
{
	char err[64];

	return event_parse(json, strlen(json), err, sizeof(err));
}

int
relay_purg_anns(const char *d, int with_held, struct policy_anns *a)
{
	if (policy_anns_load(&relayd->policy, relay_reader(), d, strlen(d),
		with_held, a) == -1) {
		policy_anns_free(a);
		return -1;
	}
	return 0;
}


static int
evlist_cb(const char *json, size_t len, int64_t seq, void *arg)
{
	struct evlist *l = arg;
	struct event  *ev;
	char	       err[64];

	(void)seq;
	if ((ev = event_parse(json, len, err, sizeof(err))) == NULL)
		return 0;
	if ((l->v = reallocarray(l->v, l->n + 1, sizeof(*l->v))) == NULL)
		fatal("evlist_cb");
	l->v[l->n++] = ev;
	return 0;
}

void
relay_purg_evlist_free(struct evlist *l)
{
	events_destroy(l->v, l->n);
	memset(l, 0, sizeof(*l));
}

/* Runs one filter (JSON text) against the store.  0 or -1. */
static int
query(const char *filter_json, struct evlist *out)
{
	struct json_doc *doc;
	struct json	*root;
	struct filter	 f;
	char		 err[128];
	int		 rc = -1;

	memset(out, 0, sizeof(*out));
	if ((root = json_parse(filter_json, strlen(filter_json), &doc, err,
		 sizeof(err))) == NULL)
		return -1;
	if (filter_parse(root, &f, err, sizeof(err)) == 0) {
		if (store_query(relay_reader(), &f, 1, POLICY_MAX_MAINTAINERS,
			POLICY_MAX_MAINTAINERS, 0, evlist_cb, out) >= 0)
			rc = 0;
		filter_free(&f);
	}
	json_free(doc);
	return rc;
}

/* The stored event with that id, or NULL. */
static struct event *
stored_event(const uint8_t id[EVENT_ID_LEN])
{
	struct evlist l;
	struct event *ev = NULL;
	char	      hex[EVENT_ID_HEX_LEN + 1], f[128];

	hex_encode(id, EVENT_ID_LEN, hex);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", hex);
	if (query(f, &l) == 0 && l.n > 0) {
		ev = l.v[0];
		l.v[0] = NULL;
	}
	relay_purg_evlist_free(&l);
	return ev;
}

/* The stored states (kind 30618) with identifier d. */
int
relay_purg_stored_states(const char *d, struct evlist *out)
{
	struct buf b = BUF_INIT;
	int	   rc;

	buf_adds(&b, "{\"kinds\":[30618],\"#d\":[");
	buf_add_jstr(&b, d, strlen(d));
	buf_adds(&b, "]}");
	rc = query(b.b_data, out);
	buf_free(&b);
	return rc;
}

/*
 * The owner among a whose repository holds every object of want, into
 * src.  1 if found, 0 if not.
 */
int
relay_purg_find_source(const struct policy_anns *a, const char *d,
    const struct relay_refs *want, uint8_t src[PUBKEY_LEN])
{
	char   repo[PATH_MAX];
	size_t i, k;

	for (i = 0; i < a->n; i++) {
		const uint8_t *owner = a->v[i].an_ev->pubkey;

		if (relay_repo_path(owner, d, repo, sizeof(repo)) == -1 ||
		    !relay_repo_exists(owner, d))
			continue;
		for (k = 0; k < want->n; k++)
			if (!relay_repo_has_object(repo, want->v[k].rf_oid))
				break;
		if (k == want->n) {
			memcpy(src, owner, PUBKEY_LEN);
			return 1;
		}
	}
	return 0;
}


/*
 * Removes the held announcement of (pubkey, d) and, after the commit, its
 * repository; drops the held states of d that no remaining announcement
 * authorises.
 */
static void
evict(const uint8_t pubkey[PUBKEY_LEN], const char *d, const char *why)
{
	struct policy_anns a;
	struct purg_ev	  *held = NULL;
	char		   npub[NIP19_KEY_BUFSZ];
	size_t		   n = 0, i, k;
	int		   ok;

	if (purg_ann_delete(relayd->purg, pubkey, d) == -1)
		return;
	relay_purg_job(LJ_REMOVE, pubkey, d);
	if (nip19_encode("npub", pubkey, npub, sizeof(npub)) == 0)
		log_info("purgatory: evicted %s/%s: %s", npub, d, why);
	if (relay_purg_anns(d, 1, &a) == -1)
		return;
	if (purg_ev_list_d(relayd->purg, d, KIND_REPO_STATE, &held, &n) == 0) {
		for (i = 0; i < n; i++) {
			for (k = 0, ok = 0; k < a.n && !ok; k++)
				ok = policy_anns_authorised(&a,
				    a.v[k].an_ev->pubkey, held[i].pe_pubkey);
			if (!ok)
				purg_ev_delete(relayd->purg, held[i].pe_id);
		}
	}
	purg_ev_free_list(held, n);
	policy_anns_free(&a);
}


/*
 * The owners whose repositories a PR concerns (reference brief 1.5): those
 * of stored announcements with identifier d whose recursive maintainer
 * set holds a key named in the PR's "a 30617:<key>:..." tags.
 */
size_t
relay_purg_pr_owners(const struct event *ev, const char *d,
    uint8_t (*owners)[PUBKEY_LEN], size_t		 max)
{
	struct policy_anns	a;
	const struct event_tag *t;
	const char	       *dv;
	size_t			n = 0, i, dvlen;
	uint32_t		j, kind;
	uint8_t			pk[PUBKEY_LEN];
	int			ok;

	if (d[0] == '\0' || relay_purg_anns(d, 0, &a) == -1)
		return 0;
	for (i = 0; i < a.n && n < max; i++) {
		const uint8_t *owner = a.v[i].an_ev->pubkey;

		for (j = 0, ok = 0; j < ev->ntags && !ok; j++) {
			t = &ev->tags[j];
			if (t->n < 2 || strcmp(t->v[0].s, "a") != 0 ||
			    coord_parse(t->v[1].s, t->v[1].len, &kind, pk, &dv,
				&dvlen) == -1 ||
			    kind != KIND_REPO_ANNOUNCEMENT)
				continue;
			ok = policy_anns_authorised(&a, owner, pk);
		}
		if (ok)
			memcpy(owners[n++], owner, PUBKEY_LEN);
	}
	policy_anns_free(&a);
	return n;
}

/*
 * Finds a repository holding commit c among the PR's owners (and
 * extra_owner/extra_d, a repository the commit was just pushed to).
 * Fills src/src_d; 1 if found.
 */
int
relay_purg_pr_source(const uint8_t (*owners)[PUBKEY_LEN], size_t n,
    const char *d, const char *c, const uint8_t *extra_owner,
    const char *extra_d, uint8_t src[PUBKEY_LEN], char *src_d, size_t src_dlen)
{
	char   repo[PATH_MAX];
	size_t i;

	for (i = 0; i < n; i++) {
		if (relay_repo_path(owners[i], d, repo, sizeof(repo)) == 0 &&
		    relay_repo_has_object(repo, c)) {
			memcpy(src, owners[i], PUBKEY_LEN);
			snprintf(src_d, src_dlen, "%s", d);
			return 1;
		}
	}
	if (extra_owner != NULL &&
	    relay_repo_path(extra_owner, extra_d, repo, sizeof(repo)) == 0 &&
	    relay_repo_has_object(repo, c)) {
		memcpy(src, extra_owner, PUBKEY_LEN);
		snprintf(src_d, src_dlen, "%s", extra_d);
		return 1;
	}
	return 0;
}


/*
 * 1 (with the OK message) if repository d of owner would be a new one
 * past max_repos_per_owner; one that exists (a held announcement
 * replaced) is never refused.
 */
static int
owner_full(const uint8_t owner[PUBKEY_LEN], const char *d, char *msg,
    size_t msglen)
{
	int cap = relayd->cfg.max_repos_per_owner, n;

	if (cap <= 0 || relay_repo_exists(owner, d) ||
	    (n = relay_repo_count(owner)) < cap)
		return 0;
	snprintf(msg, msglen,
	    "blocked: this service hosts at most %d repositories per owner, and this key has %d",
	    cap, n);
	return 1;
}

static enum purg_route
route_announcement(const struct event *ev, int verdict, int remote, char *msg,
    size_t msglen)
{
	struct purg_ann		held;
	struct buf		relays = BUF_INIT;
	const struct event_tag *t;
	char			d[1024];
	uint32_t		i, j;
	int			r, first = 1;

	if (verdict != POLICY_HOST) {
		/* An older held version means the owner dropped this
		 * service (reference brief 1.3). */
		if (relay_purg_identifier(ev, d, sizeof(d)) == 0 &&
		    purg_ann_get(relayd->purg, ev->pubkey, d, &held) == 1) {
			if (held.pa_created_at < ev->created_at)
				evict(ev->pubkey, d,
				    "a newer announcement "
				    "does not list this service");
			purg_ann_clear(&held);
		}
		return verdict == POLICY_ACCEPT ? PURG_STORE : PURG_REFUSE;
	}
	if (relay_purg_identifier(ev, d, sizeof(d)) == -1) {
		snprintf(msg, msglen, "invalid: Invalid identifier");
		return PURG_REFUSE;
	}
	if ((r = store_address_deleted(relayd->store, ev->kind, ev->pubkey, d,
		 ev->created_at)) != 0) {
		snprintf(msg, msglen,
		    r == 1 ? "blocked: this event is deleted" :
			     "error: database error");
		return PURG_REFUSE;
	}
	if ((r = store_has_address(relayd->store, ev->kind, ev->pubkey, d)) ==
	    -1) {
		snprintf(msg, msglen, "error: database error");
		return PURG_REFUSE;
	}
	if (r == 1) {
		/* A replacement: served at once, in its own repository. */
		if (relay_repo_create(ev->pubkey, d) == -1) {
			snprintf(msg, msglen,
			    "error: cannot create the repository");
			return PURG_REFUSE;
		}
		return PURG_STORE;
	}
	if ((r = purg_ann_get(relayd->purg, ev->pubkey, d, &held)) == -1) {
		snprintf(msg, msglen, "error: database error");
		return PURG_REFUSE;
	}
	if (r == 1) {
		r = held.pa_created_at > ev->created_at ||
		    (held.pa_created_at == ev->created_at &&
			memcmp(held.pa_id, ev->id, EVENT_ID_LEN) < 0);
		purg_ann_clear(&held);
		if (r) {
			snprintf(msg, msglen,
			    "invalid: a newer version of this announcement is in purgatory");
			return PURG_REFUSE;
		}
	} else if (remote && purg_expired_has(relayd->purg, ev->id) == 1) {
		snprintf(msg, msglen, MSG_EXPIRED);
		return PURG_REFUSE;
	}
	if (owner_full(ev->pubkey, d, msg, msglen))
		return PURG_REFUSE;
	if (relay_repo_create(ev->pubkey, d) == -1) {
		snprintf(msg, msglen, "error: cannot create the repository");
		return PURG_REFUSE;
	}
	buf_addc(&relays, '[');
	for (i = 0; i < ev->ntags; i++) {
		t = &ev->tags[i];
		if (strcmp(t->v[0].s, "relays") != 0)
			continue;
		for (j = 1; j < t->n; j++) {
			if (!first)
				buf_addc(&relays, ',');
			buf_add_jstr(&relays, t->v[j].s, t->v[j].len);
			first = 0;
		}
	}
	buf_addc(&relays, ']');
	r = purg_ann_put(relayd->purg, ev, d, relays.b_data, time(NULL),
		relay_purg_later(PURG_EXPIRY_S)) == -1 ||
	    purg_ev_extend_d(relayd->purg, d,
		relay_purg_later(PURG_EXPIRY_S)) == -1;
	buf_free(&relays);
	if (r) {
		snprintf(msg, msglen, "error: database error");
		return PURG_REFUSE;
	}
	snprintf(msg, msglen, MSG_HELD);
	return PURG_HELD;
}

/* Extends (and revives) the held announcements that authorise who. */
static void
extend_owners(const struct policy_anns *a, const char *d,
    const uint8_t who[PUBKEY_LEN])
{
	struct purg_ann held;
	size_t		i;

	for (i = 0; i < a->n; i++) {
		const uint8_t *owner = a->v[i].an_ev->pubkey;

		if (!a->v[i].an_held ||
		    !policy_anns_authorised(a, owner, who) ||
		    purg_ann_get(relayd->purg, owner, d, &held) != 1)
			continue;
		if (held.pa_soft_expired) {
			if (relay_repo_create(owner, d) == -1) {
				purg_ann_clear(&held);
				continue;
			}
			log_info(
			    "purgatory: repository %s revived by a state event",
			    d);
		}
		purg_ann_set_expiry(relayd->purg, owner, d,
		    relay_purg_later(PURG_EXPIRY_S), 0);
		purg_ann_clear(&held);
	}
}

static enum purg_route
route_state(const struct event *ev, int remote, char *msg, size_t msglen)
{
	struct policy_anns a;
	struct relay_refs  want;
	const char	 **oids = NULL;
	char		   d[1024], *head = NULL;
	uint8_t		   src[PUBKEY_LEN];
	size_t		   i;
	enum purg_route	   route = PURG_REFUSE;

	if (relay_purg_identifier(ev, d, sizeof(d)) == -1) {
		snprintf(msg, msglen, "invalid: Invalid identifier");
		return PURG_REFUSE;
	}
	if (relay_purg_anns(d, 1, &a) == -1) {
		snprintf(msg, msglen, "error: database error");
		return PURG_REFUSE;
	}
	extend_owners(&a, d, ev->pubkey);
	relay_state_refs(ev, &want, &head);
	if (relay_state_values_ok(ev) &&
	    relay_purg_find_source(&a, d, &want, src)) {
		route = PURG_STORE;
		goto done;
	}
	if (remote && purg_expired_has(relayd->purg, ev->id) == 1) {
		snprintf(msg, msglen, MSG_EXPIRED);
		goto done;
	}
	if ((oids = calloc(want.n + 1, sizeof(*oids))) == NULL)
		fatal("route_state");
	for (i = 0; i < want.n; i++)
		oids[i] = want.v[i].rf_oid;
	if (purg_ev_put(relayd->purg, ev, d, remote, time(NULL),
		relay_purg_later(PURG_EXPIRY_S), oids, want.n) == -1) {
		snprintf(msg, msglen, "error: database error");
		goto done;
	}
	snprintf(msg, msglen, MSG_HELD);
	route = PURG_HELD;
done:
	free(oids);
	free(head);
	relay_refs_free(&want);
	policy_anns_free(&a);
	return route;
}

static enum purg_route
route_pr(const struct event *ev, int remote, char *msg, size_t msglen)
{
	struct purg_placeholder *ph = NULL;
	uint8_t	    owners[POLICY_MAX_MAINTAINERS][PUBKEY_LEN], src[PUBKEY_LEN];
	char	    d[1024], ref[80], repo[PATH_MAX];
	char	    src_d[1024];
	const char *c = relay_purg_pr_commit(ev), *cur, *want[1];
	struct relay_refs refs;
	size_t		  nph = 0, n, i;
	const char *const pfx[] = { ref, NULL };
	int		  pushed;

	if (c == NULL) {
		snprintf(msg, msglen,
		    "invalid: PR event has no valid 'c' tag (tip commit)");
		return PURG_REFUSE;
	}
	policy_pr_identifier(ev, d, sizeof(d));
	snprintf(ref, sizeof(ref), "refs/nostr/%s", ev->id_hex);

	/* A git-first placeholder with another commit is superseded, and
	 * its wrong ref goes (reference brief 1.5, step 4). */
	if (purg_placeholder_list_id(relayd->purg, ev->id, &ph, &nph) == 0) {
		for (i = 0; i < nph; i++) {
			relay_git_unclaimed_claim(ph[i].pp_owner, ph[i].pp_d,
			    ref, 0);
			if (strcmp(ph[i].pp_oid, c) != 0)
				relay_purg_job_ref(LJ_DELETE, ph[i].pp_owner,
				    ph[i].pp_d, ref, ph[i].pp_oid, NULL);
		}
		purg_placeholder_delete_id(relayd->purg, ev->id);
	}
	purg_placeholder_free_list(ph, nph);

	pushed = relay_purg_prs_event_arrived(ev, d, c);
	n = relay_purg_pr_owners(ev, d, owners, POLICY_MAX_MAINTAINERS);
	for (i = 0; i < n; i++) {
		if (relay_repo_path(owners[i], d, repo, sizeof(repo)) == -1 ||
		    relay_repo_read_refs(repo, pfx, &refs) == -1)
			continue;
		if ((cur = relay_refs_get(&refs, ref)) != NULL &&
		    strcmp(cur, c) != 0)
			relay_purg_job_ref(LJ_DELETE, owners[i], d, ref, cur,
			    NULL);
		relay_refs_free(&refs);
	}
	if (relay_purg_pr_source((const uint8_t(*)[PUBKEY_LEN])owners, n, d, c,
		NULL, NULL, src, src_d, sizeof(src_d)))
		return PURG_STORE;
	/* GRASP-06, no repository of it here: its /prs/ push is the data. */
	if (n == 0 && relay_purg_prs_holds(ev, d, c))
		return PURG_STORE;
	if (remote && purg_expired_has(relayd->purg, ev->id) == 1) {
		snprintf(msg, msglen, MSG_EXPIRED);
		return PURG_REFUSE;
	}
	/* Only a SHA-1 id is hunted: no source here has another. */
	want[0] = c;
	if (purg_ev_put(relayd->purg, ev, d, remote, time(NULL),
		relay_purg_later(PURG_EXPIRY_S), want,
		pkt_is_oid(c, strlen(c)) ? 1 : 0) == -1) {
		snprintf(msg, msglen, "error: database error");
		return PURG_REFUSE;
	}
	if (pushed)
		snprintf(msg, msglen,
		    "purgatory: PR event stored; its git push (commit %s) is already here, so it is released and served as soon as the commit is copied into the repository",
		    c);
	else
		snprintf(msg, msglen,
		    "purgatory: PR event stored, waiting for git push with commit %s",
		    c);
	return PURG_HELD;
}

/* NIP-09 on purgatory (reference brief 1.9): the author's own entries. */
static void
apply_deletion(const struct event *del)
{
	const struct event_tag *t;
	struct purg_ev		pe, *held = NULL;
	struct purg_ann		pa;
	const char	       *dv;
	char			d[1024];
	size_t			dvlen, n = 0, k;
	uint32_t		i, kind;
	uint8_t			id[EVENT_ID_LEN], pk[PUBKEY_LEN];

	for (i = 0; i < del->ntags; i++) {
		t = &del->tags[i];
		if (t->n < 2)
			continue;
		if (strcmp(t->v[0].s, "e") == 0) {
			if (hex_decode(t->v[1].s, t->v[1].len, id,
				EVENT_ID_LEN) == -1)
				continue;
			if (purg_ev_get(relayd->purg, id, &pe) == 1) {
				if (memcmp(pe.pe_pubkey, del->pubkey,
					PUBKEY_LEN) == 0)
					purg_ev_delete(relayd->purg, id);
				purg_ev_clear(&pe);
			} else if (purg_ann_by_id(relayd->purg, id, &pa) == 1) {
				if (memcmp(pa.pa_pubkey, del->pubkey,
					PUBKEY_LEN) == 0)
					evict(pa.pa_pubkey, pa.pa_d,
					    "deleted by its author");
				purg_ann_clear(&pa);
			}
			continue;
		}
		if (strcmp(t->v[0].s, "a") != 0 ||
		    coord_parse(t->v[1].s, t->v[1].len, &kind, pk, &dv,
			&dvlen) == -1 ||
		    memcmp(pk, del->pubkey, PUBKEY_LEN) != 0 ||
		    dvlen >= sizeof(d) || !policy_identifier_safe(dv, dvlen))
			continue;
		memcpy(d, dv, dvlen);
		d[dvlen] = '\0';
		if (kind == KIND_REPO_ANNOUNCEMENT) {
			if (purg_ann_get(relayd->purg, pk, d, &pa) == 1) {
				if (pa.pa_created_at <= del->created_at)
					evict(pk, d, "deleted by its author");
				purg_ann_clear(&pa);
			}
		} else if (kind == KIND_REPO_STATE) {
			if (purg_ev_list_d(relayd->purg, d, KIND_REPO_STATE,
				&held, &n) == 0)
				for (k = 0; k < n; k++)
					if (memcmp(held[k].pe_pubkey, pk,
						PUBKEY_LEN) == 0 &&
					    held[k].pe_created_at <=
						del->created_at)
						purg_ev_delete(relayd->purg,
						    held[k].pe_id);
			purg_ev_free_list(held, n);
			held = NULL;
			n = 0;
		}
	}
}

int
relay_purg_held(const struct event *ev, char *msg, size_t msglen)
{
	struct purg_ev	pe;
	struct purg_ann pa;

	switch (ev->kind) {
	case KIND_REPO_STATE:
	case KIND_PR:
	case KIND_PR_UPDATE:
		if (purg_ev_get(relayd->purg, ev->id, &pe) != 1)
			return 0;
		purg_ev_clear(&pe);
		snprintf(msg, msglen, MSG_DUP_HELD);
		return 1;
	case KIND_REPO_ANNOUNCEMENT:
		if (purg_ann_by_id(relayd->purg, ev->id, &pa) != 1)
			return 0;
		/* Sent again: the owner still wants it; wait longer. */
		if (pa.pa_soft_expired &&
		    relay_repo_create(pa.pa_pubkey, pa.pa_d) == 0)
			log_info(
			    "purgatory: repository %s revived: its announcement came again",
			    pa.pa_d);
		if (!pa.pa_soft_expired ||
		    relay_repo_exists(pa.pa_pubkey, pa.pa_d))
			purg_ann_set_expiry(relayd->purg, pa.pa_pubkey, pa.pa_d,
			    relay_purg_later(PURG_EXPIRY_S), 0);
		purg_ann_clear(&pa);
		snprintf(msg, msglen, MSG_HELD);
		return 1;
	default:
		return 0;
	}
}

enum purg_route
relay_purg_route(const struct event *ev, int verdict, int remote, char *msg,
    size_t msglen)
{
	if (verdict == POLICY_ERROR)
		return PURG_REFUSE;
	switch (ev->kind) {
	case KIND_REPO_ANNOUNCEMENT:
		return route_announcement(ev, verdict, remote, msg, msglen);
	case KIND_REPO_STATE:
		if (verdict != POLICY_ACCEPT)
			return PURG_REFUSE;
		return route_state(ev, remote, msg, msglen);
	case KIND_PR:
	case KIND_PR_UPDATE:
		if (verdict != POLICY_ACCEPT)
			return PURG_REFUSE;
		return route_pr(ev, remote, msg, msglen);
	case KIND_DELETION:
		if (verdict == POLICY_ACCEPT)
			apply_deletion(ev);
		break;
	default:
		break;
	}
	return verdict == POLICY_ACCEPT ? PURG_STORE : PURG_REFUSE;
}


/* The PR or PR update with that id, held or stored (caller frees), or NULL. */
struct event *
relay_purg_pr_event(const uint8_t id[EVENT_ID_LEN])
{
	struct purg_ev pe;
	struct event  *ev = NULL;

	if (purg_ev_get(relayd->purg, id, &pe) == 1) {
		if (pe.pe_kind != KIND_REPO_STATE)
			ev = relay_purg_parse(pe.pe_json);
		purg_ev_clear(&pe);
	} else if ((ev = stored_event(id)) != NULL && ev->kind != KIND_PR &&
	    ev->kind != KIND_PR_UPDATE) {
		event_destroy(ev);
		ev = NULL;
	}
	return ev;
}

/* 1 if PR ev is signer's, for identifier d (GRASP-06 /prs/ paths). */
int
relay_purg_pr_by(const struct event *ev, const uint8_t signer[PUBKEY_LEN],
    const char *d)
{
	char evd[256];

	policy_pr_identifier(ev, evd, sizeof(evd));
	return memcmp(ev->pubkey, signer, PUBKEY_LEN) == 0 &&
	    strcmp(evd, d) == 0;
}


int
relay_purg_hosted(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct purg_ann pa;

	if (store_has_address(relay_reader(), KIND_REPO_ANNOUNCEMENT, owner,
		d) == 1)
		return 2;
	if (purg_ann_get(relayd->purg, owner, d, &pa) == 1) {
		purg_ann_clear(&pa);
		return 1;
	}
	return 0;
}