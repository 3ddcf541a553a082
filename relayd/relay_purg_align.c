/*
 * relay_purg_align.c: the purgatory's work after an event is stored or
 * released (relay_purg.c holds and routes): the refs of every repository
 * a state governs aligned by git jobs (relay_job.c), a PR's
 * refs/nostr/<id> in every owner's repository, and the git work queued
 * to run after the commit (struct later_job, relay_purg.h).
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


static void
later_job_run(void *arg, int committed)
{
	struct later_job *lj = arg;

	if (committed) {
		switch (lj->lj_kind) {
		case LJ_ALIGN:
			relay_job_align(lj->lj_owner, lj->lj_d, lj->lj_state,
			    lj->lj_src);
			break;
		case LJ_SET:
			relay_job_set_ref(lj->lj_owner, lj->lj_d, lj->lj_ref,
			    lj->lj_oid, lj->lj_src);
			break;
		case LJ_DELETE:
			relay_job_delete_ref(lj->lj_owner, lj->lj_d, lj->lj_ref,
			    lj->lj_oid);
			break;
		case LJ_REMOVE:
			relay_repo_remove(lj->lj_owner, lj->lj_d);
			break;
		}
	}
	event_destroy(lj->lj_state);
	free(lj->lj_d);
	free(lj->lj_ref);
	free(lj);
}

struct later_job *
relay_purg_job(int kind, const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct later_job *lj;

	if ((lj = calloc(1, sizeof(*lj))) == NULL ||
	    (lj->lj_d = strdup(d)) == NULL)
		fatal("relay_purg_job");
	lj->lj_kind = kind;
	memcpy(lj->lj_owner, owner, PUBKEY_LEN);
	relay_ingest_defer(later_job_run, lj);
	return lj;
}

void
relay_purg_job_ref(int kind, const uint8_t owner[PUBKEY_LEN], const char *d,
    const char *ref, const char *oid, const uint8_t *src)
{
	struct later_job *lj = relay_purg_job(kind, owner, d);

	if ((lj->lj_ref = strdup(ref)) == NULL)
		fatal("relay_purg_job_ref");
	snprintf(lj->lj_oid, sizeof(lj->lj_oid), "%s", oid);
	memcpy(lj->lj_src, src ? src : owner, PUBKEY_LEN);
}


/*
 * 1 if no stored state by a member of owner's set is newer than ev (on
 * equal created_at the lower id wins, as NIP-01 has it).
 */
static int
newest_for(const struct policy_anns *a, const uint8_t owner[PUBKEY_LEN],
    const struct event *ev, const struct evlist *states)
{
	const struct event *s;
	size_t		    i;

	for (i = 0; i < states->n; i++) {
		s = states->v[i];
		if (memcmp(s->id, ev->id, EVENT_ID_LEN) == 0 ||
		    !policy_anns_authorised(a, owner, s->pubkey))
			continue;
		if (s->created_at > ev->created_at ||
		    (s->created_at == ev->created_at &&
			memcmp(s->id, ev->id, EVENT_ID_LEN) < 0))
			return 0;
	}
	return 1;
}

/*
 * A state was stored: after the commit, align the repository of every
 * owner that authorises its author and for which it is the newest state,
 * copying objects from a repository that holds them.
 */
static void
align_state(const struct event *ev, const char *d)
{
	struct policy_anns a;
	struct relay_refs  want;
	struct evlist	   states;
	struct later_job  *lj;
	char		  *head = NULL, err[64];
	uint8_t		   src[PUBKEY_LEN];
	size_t		   i;

	if (relay_purg_anns(d, 1, &a) == -1)
		return;
	relay_state_refs(ev, &want, &head);
	if (!relay_purg_find_source(&a, d, &want, src) ||
	    relay_purg_stored_states(d, &states) == -1)
		goto done;
	for (i = 0; i < a.n; i++) {
		const uint8_t *owner = a.v[i].an_ev->pubkey;

		if (!relay_repo_exists(owner, d) ||
		    !policy_anns_authorised(&a, owner, ev->pubkey) ||
		    !newest_for(&a, owner, ev, &states))
			continue;
		lj = relay_purg_job(LJ_ALIGN, owner, d);
		memcpy(lj->lj_src, src, PUBKEY_LEN);
		if ((lj->lj_state = event_parse(ev->json, ev->json_len, err,
			 sizeof(err))) == NULL)
			fatalx("align_state: %s", err);
	}
	relay_purg_evlist_free(&states);
done:
	relay_refs_free(&want);
	free(head);
	policy_anns_free(&a);
}


/* After the commit: refs/nostr/<id> -> c in every owner's repository. */
void
relay_purg_pr_set_refs(const struct event *ev,
    const uint8_t (*owners)[PUBKEY_LEN], size_t n, const char *d,
    const uint8_t src[PUBKEY_LEN], const char *src_d)
{
	char   ref[80];
	size_t i;

	snprintf(ref, sizeof(ref), "refs/nostr/%s", ev->id_hex);
	for (i = 0; i < n; i++) {
		if (!relay_repo_exists(owners[i], d))
			continue;
		/* Objects are copied from a repository of the same d. */
		relay_purg_job_ref(LJ_SET, owners[i], d, ref,
		    relay_purg_pr_commit(ev),
		    strcmp(src_d, d) == 0 ? src : owners[i]);
	}
}

void
relay_purg_key_done(void *arg, int committed)
{
	struct relay_purg_key *rk = arg;

	(void)committed;
	free(rk->rk_d);
	free(rk);
}

struct relay_purg_key *
relay_purg_key(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct relay_purg_key *rk;

	if ((rk = calloc(1, sizeof(*rk))) == NULL ||
	    (rk->rk_d = strdup(d)) == NULL)
		fatal("relay_purg_key");
	memcpy(rk->rk_owner, owner, PUBKEY_LEN);
	return rk;
}


/* A PR was stored (or released): its ref in every owner's repository. */
static void
pr_stored(const struct event *ev, const uint8_t *extra_owner,
    const char *extra_d)
{
	uint8_t	    owners[POLICY_MAX_MAINTAINERS][PUBKEY_LEN], src[PUBKEY_LEN];
	char	    d[1024], src_d[1024];
	const char *c = relay_purg_pr_commit(ev);
	size_t	    n;

	if (c == NULL)
		return;
	policy_pr_identifier(ev, d, sizeof(d));
	n = relay_purg_pr_owners(ev, d, owners, POLICY_MAX_MAINTAINERS);
	if (!relay_purg_pr_source((const uint8_t(*)[PUBKEY_LEN])owners, n, d, c,
		extra_owner, extra_d, src, src_d, sizeof(src_d)))
		return;
	relay_purg_pr_set_refs(ev, (const uint8_t(*)[PUBKEY_LEN])owners, n, d,
	    src, src_d);
}

void
relay_purg_stored(const struct event *ev)
{
	char d[1024];

	switch (ev->kind) {
	case KIND_REPO_ANNOUNCEMENT:
		/* A new maintainer or repository may release held events. */
		if (relay_purg_identifier(ev, d, sizeof(d)) == 0)
			relay_release_d(d, NULL, NULL);
		break;
	case KIND_REPO_STATE:
		if (relay_purg_identifier(ev, d, sizeof(d)) == 0)
			align_state(ev, d);
		break;
	case KIND_PR:
	case KIND_PR_UPDATE:
		pr_stored(ev, NULL, NULL);
		break;
	default:
		break;
	}
}
