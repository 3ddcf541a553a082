/*
 * relay_purg_prs.c: GRASP-06's /prs/ repositories in the purgatory: a PR
 * that names its signer's /prs/<npub>/<d>.git is held until that push,
 * and the pushed tip is mirrored into the announced repositories, whose
 * new git data then releases what it satisfies.
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


/* GRASP-06: 1 if PR ev names its signer's /prs/ repository d here. */
static int
prs_named(const struct event *ev, const char *d)
{
	return policy_prs_clone(&relayd->policy, ev, d);
}

int
relay_purg_prs_holds(const struct event *ev, const char *d, const char *c)
{
	struct relay_refs refs;
	const char	 *cur;
	char		  repo[PATH_MAX], ref[80];
	const char *const pfx[] = { ref, NULL };
	int		  rc;

	snprintf(ref, sizeof(ref), "refs/nostr/%s", ev->id_hex);
	if (!prs_named(ev, d) ||
	    relay_repo_prs_path(ev->pubkey, d, repo, sizeof(repo)) == -1 ||
	    relay_repo_read_refs(repo, pfx, &refs) == -1)
		return 0;
	rc = (cur = relay_refs_get(&refs, ref)) != NULL && strcmp(cur, c) == 0;
	relay_refs_free(&refs);
	return rc;
}

static void
prs_arrived(void *arg)
{
	struct relay_purg_key *rk = arg;

	relay_purg_git_arrived(rk->rk_owner, rk->rk_d);
	relay_purg_key_done(rk, 1);
}

/*
 * GRASP-06: refs/nostr/<id> of PR ev at oid, from its signer's /prs/
 * repository d into the PR's repositories here (never the other way);
 * their new git data then releases what it satisfies.
 */
static void
prs_mirror(const struct event *ev, const char *d, const char *oid)
{
	uint8_t owners[POLICY_MAX_MAINTAINERS][PUBKEY_LEN];
	char	src[PATH_MAX], ref[80];
	size_t	n, i;

	if (relay_repo_prs_path(ev->pubkey, d, src, sizeof(src)) == -1)
		return;
	snprintf(ref, sizeof(ref), "refs/nostr/%s", ev->id_hex);
	n = relay_purg_pr_owners(ev, d, owners, POLICY_MAX_MAINTAINERS);
	for (i = 0; i < n; i++) {
		if (!relay_repo_exists(owners[i], d))
			continue;
		relay_job_set_ref_from(owners[i], d, ref, oid, src);
		relay_job_call(prs_arrived, relay_purg_key(owners[i], d));
	}
}

/*
 * GRASP-06, the event after the push: the /prs/ ref of PR ev is mirrored
 * when it is the event's commit c (1: the push is here, and its copy
 * releases the event), and deleted when it is not (0).
 */
int
relay_purg_prs_event_arrived(const struct event *ev, const char *d,
    const char *c)
{
	struct relay_refs refs;
	const char	 *cur;
	char		  repo[PATH_MAX], ref[80];
	int		  here = 0;

	if (!prs_named(ev, d) ||
	    relay_repo_prs_path(ev->pubkey, d, repo, sizeof(repo)) == -1 ||
	    relay_repo_read_refs(repo, NULL, &refs) == -1)
		return 0;
	snprintf(ref, sizeof(ref), "refs/nostr/%s", ev->id_hex);
	relay_git_unclaimed_claim(ev->pubkey, d, ref, 1);
	if ((cur = relay_refs_get(&refs, ref)) != NULL) {
		if ((here = strcmp(cur, c) == 0))
			prs_mirror(ev, d, c);
		else
			relay_repo_prs_drop_ref(ev->pubkey, d, ref, cur);
	}
	relay_refs_free(&refs);
	return here;
}


void
relay_purg_prs_pushed(const uint8_t signer[PUBKEY_LEN], const char *d,
    const struct relay_push_cmd *cmds, size_t n)
{
	struct event *ev;
	const char   *c;
	uint8_t	      id[EVENT_ID_LEN];
	size_t	      i;

	for (i = 0; i < n; i++) {
		const char *ref = cmds[i].pc_ref;

		if (strncmp(ref, RELAY_REF_NOSTR, RELAY_REF_NOSTR_LEN) != 0 ||
		    strcmp(cmds[i].pc_new, RELAY_NULL_OID) == 0 ||
		    hex_decode(ref + RELAY_REF_NOSTR_LEN, EVENT_ID_HEX_LEN, id,
			EVENT_ID_LEN) == -1)
			continue;
		if ((ev = relay_purg_pr_event(id)) == NULL)
			continue;
		if (relay_purg_pr_by(ev, signer, d) && prs_named(ev, d) &&
		    (c = relay_purg_pr_commit(ev)) != NULL &&
		    strcmp(c, cmds[i].pc_new) == 0) {
			prs_mirror(ev, d, c);
			/* Held for want of any repository here (GRASP-06's
			 * relaxation): the push itself releases it. */
			relay_purg_git_arrived(signer, d);
		}
		event_destroy(ev);
	}
}
