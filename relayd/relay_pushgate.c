/*
 * relay_pushgate.c: relayd's push authorisation (GRASP-01, reference
 * brief 7; GRASP-05, GRASP-06), before any git process runs: gathers for
 * a receive-pack request to (owner, d) the repository's refs, the
 * announcements of d, the held states that may authorise the push and
 * the tips of the PR events its refs/nostr/<id> updates name, and asks
 * relay_pushauth_decide() (relay_pushauth.c, a pure function) which ref
 * updates the push may make.  A read-only archive (GRASP-05) is refused
 * first.  A push authorised by a held state extends the owner's held
 * announcement, in a task on relayd's batched transactions
 * (relay_ingest.c).  Runs in relayd, on the libwebsockets loop of the
 * git HTTP request (relay_git.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "purg.h"
#include "relayd.h"

static void
extend_run(void *arg)
{
	struct relay_purg_key *rk = arg;
	struct purg_ann	       pa;

	if (purg_ann_get(relayd->purg, rk->rk_owner, rk->rk_d, &pa) == 1) {
		if (!pa.pa_soft_expired)
			purg_ann_set_expiry(relayd->purg, rk->rk_owner,
			    rk->rk_d, relay_purg_later(PURG_EXPIRY_S), 0);
		purg_ann_clear(&pa);
	}
}

/*
 * The tip commit of a PR or PR update with that id, stored or held, into
 * t->pt_c; t->pt_foreign when signer is given and the event is not by
 * signer for identifier d.  1 if known, else 0.
 */
static int
known_pr_commit(const uint8_t id[EVENT_ID_LEN], const uint8_t *signer,
    const char *d, struct pushauth_tip *t)
{
	struct event *ev;
	const char   *tip;

	if ((ev = relay_purg_pr_event(id)) == NULL)
		return 0;
	tip = relay_purg_pr_commit(ev);
	snprintf(t->pt_c, sizeof(t->pt_c), "%s", tip ? tip : "(none)");
	if (signer != NULL)
		t->pt_foreign = !relay_purg_pr_by(ev, signer, d);
	event_destroy(ev);
	return 1;
}

/*
 * GRASP-05: 1 (with the reason) if (owner, d) is archived here and the
 * archive is read-only, 0 if not, -1 on a store error.
 */
static int
archived_read_only(const uint8_t owner[PUBKEY_LEN], const char *d, char *reason,
    size_t reasonlen)
{
	struct policy_anns	 a;
	const struct policy_ann *ann;
	int			 rc;

	if (!relayd->cfg.archive_read_only)
		return 0;
	if (relay_purg_anns(d, 1, &a) == -1)
		return -1;
	rc = (ann = policy_anns_by(&a, owner)) != NULL &&
	    policy_archived(&relayd->policy, ann->an_ev);
	policy_anns_free(&a);
	if (rc)
		snprintf(reason, reasonlen,
		    "this repository is archived here read-only (GRASP-05); push to the servers its announcement lists");
	return rc;
}

int
relay_purg_authorise_push(const uint8_t owner[PUBKEY_LEN], const char *d,
    int prs, const struct relay_push_cmd *cmds, size_t n,
    struct pushauth_out *out)
{
	struct pushauth_in   in;
	struct policy_anns   a;
	struct purg_ev	    *held = NULL;
	struct pushauth_tip *tips = NULL;
	struct relay_refs    cur, *states = NULL;
	struct event	    *ev;
	char		     repo[PATH_MAX], hex[EVENT_ID_HEX_LEN + 1], *head;
	uint8_t		     id[EVENT_ID_LEN];
	size_t		     i, nheld = 0, nstates = 0, ntips = 0;
	int		     rc = -1;

	memset(&cur, 0, sizeof(cur));
	memset(&in, 0, sizeof(in));
	memset(out, 0, sizeof(*out));
	out->po_state = -1;
	out->po_deny_deletes = out->po_deny_nonff = 1;
	if (!prs &&
	    (rc = archived_read_only(owner, d, out->po_reason,
		 sizeof(out->po_reason))) != 0)
		return rc == 1 ? 0 : -1;
	rc = -1;
	memset(&a, 0, sizeof(a));
	if (prs) {
		/* GRASP-06: refs/nostr only, no announcement or state; a
		 * repository not created yet has no refs. */
		if (relay_repo_prs_path(owner, d, repo, sizeof(repo)) == -1)
			return -1;
		if (relay_repo_read_refs(repo, NULL, &cur) == -1)
			memset(&cur, 0, sizeof(cur));
	} else if (relay_purg_anns(d, 1, &a) == -1)
		return -1;
	else if (relay_repo_path(owner, d, repo, sizeof(repo)) == -1 ||
	    relay_repo_read_refs(repo, NULL, &cur) == -1 ||
	    purg_ev_list_d(relayd->purg, d, KIND_REPO_STATE, &held, &nheld) ==
		-1)
		goto done;
	if ((states = calloc(nheld + 1, sizeof(*states))) == NULL ||
	    (tips = calloc(n + 1, sizeof(*tips))) == NULL)
		fatal("relay_purg_authorise_push");
	/* Newest first, only those the announcements authorise. */
	for (i = nheld; i-- > 0;) {
		if (!policy_anns_authorised(&a, owner, held[i].pe_pubkey) ||
		    (ev = relay_purg_parse(held[i].pe_json)) == NULL)
			continue;
		relay_state_refs(ev, &states[nstates], &head);
		/* A value that is no object id never matches a push. */
		relay_state_bad_refs(ev, &states[nstates++]);
		event_destroy(ev);
		free(head);
	}
	for (i = 0; i < n; i++) {
		const char *ref = cmds[i].pc_ref;

		if (strncmp(ref, RELAY_REF_NOSTR, RELAY_REF_NOSTR_LEN) == 0 &&
		    strlen(ref + RELAY_REF_NOSTR_LEN) == EVENT_ID_HEX_LEN &&
		    hex_decode(ref + RELAY_REF_NOSTR_LEN, EVENT_ID_HEX_LEN, id,
			EVENT_ID_LEN) == 0 &&
		    known_pr_commit(id, prs ? owner : NULL, d, &tips[ntips]))
			tips[ntips++].pt_ref = ref;
	}
	hex_encode(owner, PUBKEY_LEN, hex);
	in.pi_cmds = cmds;
	in.pi_ncmds = n;
	in.pi_cur = &cur;
	in.pi_ann = a.n == 0		      ? PUSHAUTH_ANN_NONE :
	    policy_anns_by(&a, owner) == NULL ? PUSHAUTH_ANN_OTHER :
						PUSHAUTH_ANN_OWNER;
	in.pi_owner_hex = hex;
	in.pi_nheld = nheld;
	in.pi_states = states;
	in.pi_nstates = nstates;
	in.pi_tips = tips;
	in.pi_ntips = ntips;
	in.pi_prs = prs;
	rc = relay_pushauth_decide(&in, out);
	/* Authorisation by a state extends the owner's held announcement. */
	if (rc == 1 && out->po_state != -1)
		relay_ingest_task(extend_run, relay_purg_key_done,
		    relay_purg_key(owner, d));
done:
	for (i = 0; i < nstates; i++)
		relay_refs_free(&states[i]);
	free(states);
	free(tips);
	purg_ev_free_list(held, nheld);
	relay_refs_free(&cur);
	policy_anns_free(&a);
	return rc;
}
