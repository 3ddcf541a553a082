/*
 * relay_pushauth.c: relayd's push decision (GRASP-01, reference brief 7),
 * a pure function over what relay_pushgate.c gathered: the ref updates
 * of a receive-pack request, the refs the repository holds now,
 * the branches and tags of the held state events that may authorise it,
 * and the tips of the PR events its refs/nostr/<id> updates name.  It does
 * no I/O and allocates nothing, so unit tests and a fuzz harness call it
 * directly (tests/unit/pushauth_test.c, tests/fuzz/pushauth_fuzz.c).
 *
 * It decides on what git receive-pack will do, not on the difference of
 * each pair: a null new id is a deletion, whatever the old one says, and
 * git deletes even when old is null too.  Every command must name a
 * well-formed ref under refs/heads/, refs/tags/ or refs/nostr/, at most
 * once, with an old id equal to the ref's value now (null: absent); a pair
 * of null ids is refused.  refs/nostr/<id> is never deleted by a push and
 * takes the tip of a known PR event only.  Branches and tags end as one
 * authorising state lists them, and the branch HEAD names is not deleted
 * (git refuses it too).  Under GRASP-06's /prs/<npub>/<d>.git only
 * refs/nostr/<id> is accepted, and a known PR event must be the path's
 * signer's for that identifier.  The verdict also says which of git's own walls
 * (receive.denyDeletes, receive.denyNonFastForwards) the push may pass:
 * only those a matching state or a known PR tip asks to lower, so that a
 * mistake here that lets a command through still meets git's refusal.
 */
#include <stdio.h>
#include <string.h>

#include "relayd.h"

static int
is_null(const char *oid)
{
	return strcmp(oid, RELAY_NULL_OID) == 0;
}

/* relay_refs_get() without relay_repo.c, which does I/O. */
static const char *
refs_lookup(const struct relay_refs *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].rf_name, name) == 0)
			return r->v[i].rf_oid;
	return NULL;
}

static int
prefixed(const char *ref, const char *pfx)
{
	return strncmp(ref, pfx, strlen(pfx)) == 0;
}

static int
branch_or_tag(const char *ref)
{
	return prefixed(ref, RELAY_REF_HEADS) || prefixed(ref, RELAY_REF_TAGS);
}

int
relay_pushauth_refname_ok(const char *ref)
{
	const char *c, *comp = ref;
	size_t	    len = strlen(ref);

	if (len == 0 || ref[len - 1] == '/' || ref[len - 1] == '.' ||
	    strcmp(ref, "@") == 0 || strstr(ref, "@{") != NULL ||
	    strstr(ref, "..") != NULL || strstr(ref, "//") != NULL)
		return 0;
	for (c = ref;; c++) {
		if (*c == '/' || *c == '\0') {
			if (c == comp || *comp == '.' ||
			    (c - comp >= 5 && memcmp(c - 5, ".lock", 5) == 0))
				return 0;
			if (*c == '\0')
				return 1;
			comp = c + 1;
			continue;
		}
		if ((unsigned char)*c < 0x20 || *c == 0x7f ||
		    strchr(" ~^:?*[\\", *c) != NULL)
			return 0;
	}
}

/* The command of cmds[0..n) for ref, or NULL. */
static const struct relay_push_cmd *
cmd_for(const struct relay_push_cmd *cmds, size_t n, const char *ref)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(cmds[i].pc_ref, ref) == 0)
			return &cmds[i];
	return NULL;
}

/*
 * Compares the branches and tags the push leaves (cur with the commands
 * applied) with a state's; "" in why when they are equal.
 */
static void
state_diff(const struct pushauth_in *in, const struct relay_refs *want,
    char *why, size_t whylen)
{
	const struct relay_push_cmd *pc;
	const char		    *have, *o, *name;
	size_t			     i;

	why[0] = '\0';
	/* What stays as it is, then what the push sets. */
	for (i = 0; i < in->pi_cur->n; i++) {
		name = in->pi_cur->v[i].rf_name;
		if (!branch_or_tag(name) ||
		    cmd_for(in->pi_cmds, in->pi_ncmds, name) != NULL)
			continue;
		have = in->pi_cur->v[i].rf_oid;
		if ((o = refs_lookup(want, name)) == NULL) {
			snprintf(why, whylen, "%s is not in the state", name);
			return;
		}
		if (strcmp(o, have) != 0) {
			snprintf(why, whylen,
			    "%s would be %.7s, the state says %.7s", name, have,
			    o);
			return;
		}
	}
	for (i = 0; i < in->pi_ncmds; i++) {
		pc = &in->pi_cmds[i];
		if (!branch_or_tag(pc->pc_ref) || is_null(pc->pc_new))
			continue;
		if ((o = refs_lookup(want, pc->pc_ref)) == NULL) {
			snprintf(why, whylen, "%s is not in the state",
			    pc->pc_ref);
			return;
		}
		if (strcmp(o, pc->pc_new) != 0) {
			snprintf(why, whylen,
			    "%s would be %.7s, the state says %.7s", pc->pc_ref,
			    pc->pc_new, o);
			return;
		}
	}
	for (i = 0; i < want->n; i++) {
		name = want->v[i].rf_name;
		pc = cmd_for(in->pi_cmds, in->pi_ncmds, name);
		if (pc != NULL ? is_null(pc->pc_new) :
				 refs_lookup(in->pi_cur, name) == NULL) {
			snprintf(why, whylen,
			    "the state lists %s, which the push leaves out",
			    name);
			return;
		}
	}
}

/* The known PR event refs/nostr/<id> names, or NULL. */
static const struct pushauth_tip *
tip_of(const struct pushauth_in *in, const char *ref)
{
	size_t i;

	for (i = 0; i < in->pi_ntips; i++)
		if (strcmp(in->pi_tips[i].pt_ref, ref) == 0)
			return &in->pi_tips[i];
	return NULL;
}

/* Checks one command on its own; 0 with the reason, or 1. */
static int
check_cmd(const struct pushauth_in *in, size_t k, char *reason,
    size_t reasonlen)
{
	const struct relay_push_cmd *pc = &in->pi_cmds[k];
	const struct pushauth_tip   *tip = tip_of(in, pc->pc_ref);
	const char		    *ref = pc->pc_ref, *cur;
	size_t			     i;
	int			     nostr = prefixed(ref, RELAY_REF_NOSTR);

	if (in->pi_prs && !nostr) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s: only refs/nostr/<event id> is accepted under /prs/",
		    ref);
		return 0;
	}
	if (!nostr && !branch_or_tag(ref)) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s is not a branch, a tag or refs/nostr/<event id>",
		    ref);
		return 0;
	}
	/* NIP-01 writes ids in lowercase hex: one spelling per event. */
	if (nostr &&
	    (strlen(ref) != RELAY_REF_NOSTR_LEN + EVENT_ID_HEX_LEN ||
		strspn(ref + RELAY_REF_NOSTR_LEN, "0123456789abcdef") !=
		    EVENT_ID_HEX_LEN)) {
		snprintf(reason, reasonlen,
		    "Invalid event ID format in ref: %s", ref);
		return 0;
	}
	if (!relay_pushauth_refname_ok(ref)) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s is not a valid ref name", ref);
		return 0;
	}
	for (i = 0; i < k; i++)
		if (strcmp(in->pi_cmds[i].pc_ref, ref) == 0) {
			snprintf(reason, reasonlen,
			    "Ref validation failed: %s is updated more than once",
			    ref);
			return 0;
		}
	if (is_null(pc->pc_old) && is_null(pc->pc_new)) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s: old and new are both the null id",
		    ref);
		return 0;
	}
	cur = refs_lookup(in->pi_cur, ref);
	if (cur == NULL && !is_null(pc->pc_old)) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s does not exist, the push expects %.7s",
		    ref, pc->pc_old);
		return 0;
	}
	if (cur != NULL && strcmp(cur, pc->pc_old) != 0) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s is at %.7s, the push expects %.7s",
		    ref, cur, is_null(pc->pc_old) ? "nothing" : pc->pc_old);
		return 0;
	}
	if (nostr && is_null(pc->pc_new)) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s cannot be deleted", ref);
		return 0;
	}
	if (nostr && in->pi_prs && tip != NULL && tip->pt_foreign) {
		snprintf(reason, reasonlen,
		    "PR event %s is not by this path's signer for this identifier",
		    ref + RELAY_REF_NOSTR_LEN);
		return 0;
	}
	if (nostr && tip != NULL && strcmp(tip->pt_c, pc->pc_new) != 0) {
		snprintf(reason, reasonlen,
		    "PR event %s has tip commit %s, not the pushed %s",
		    ref + RELAY_REF_NOSTR_LEN, tip->pt_c, pc->pc_new);
		return 0;
	}
	if (!nostr && is_null(pc->pc_new) && in->pi_cur->head != NULL &&
	    strcmp(in->pi_cur->head, ref) == 0) {
		snprintf(reason, reasonlen,
		    "Ref validation failed: %s is HEAD and cannot be deleted",
		    ref);
		return 0;
	}
	return 1;
}

int
relay_pushauth_decide(const struct pushauth_in *in, struct pushauth_out *out)
{
	const struct relay_push_cmd *pc;
	char			     why[512], w[512];
	size_t			     i, other = 0, noop = 0;

	memset(out, 0, sizeof(*out));
	out->po_state = -1;
	out->po_deny_deletes = 1;
	out->po_deny_nonff = 1;
	for (i = 0; i < in->pi_ncmds; i++)
		if (!check_cmd(in, i, out->po_reason, sizeof(out->po_reason)))
			return 0;
	for (i = 0; i < in->pi_ncmds && i < 64; i++) {
		pc = &in->pi_cmds[i];
		if (prefixed(pc->pc_ref, RELAY_REF_NOSTR) &&
		    !is_null(pc->pc_new) && tip_of(in, pc->pc_ref) == NULL)
			out->po_unclaimed |= (uint64_t)1 << i;
	}
	for (i = 0; i < in->pi_ncmds; i++) {
		pc = &in->pi_cmds[i];
		if (!branch_or_tag(pc->pc_ref))
			continue;
		other++;
		if (strcmp(pc->pc_old, pc->pc_new) == 0)
			noop++;
	}
	if (other > 0 && in->pi_ann != PUSHAUTH_ANN_OWNER) {
		if (in->pi_ann == PUSHAUTH_ANN_NONE)
			snprintf(out->po_reason, sizeof(out->po_reason),
			    "No repository announcement found");
		else
			snprintf(out->po_reason, sizeof(out->po_reason),
			    "No repository announcement found for owner %s",
			    in->pi_owner_hex);
		return 0;
	}
	if (other > noop) {
		if (in->pi_nheld == 0) {
			/* The reference's words first: clients (ngit) match
			 * them to retry after publishing a state. */
			snprintf(out->po_reason, sizeof(out->po_reason),
			    "No state events in purgatory: no state event (kind 30618) lists these refs at these commits; publish one, signed by the owner or a maintainer, then push again");
			return 0;
		}
		/* Newest first: the newest state that matches wins; a
		 * mismatch is explained against the newest one. */
		why[0] = '\0';
		for (i = 0; i < in->pi_nstates && out->po_state == -1; i++) {
			state_diff(in, &in->pi_states[i], w, sizeof(w));
			if (w[0] == '\0')
				out->po_state = (int)i;
			else if (i == 0)
				snprintf(why, sizeof(why), "%s", w);
		}
		if (in->pi_nstates == 0) {
			snprintf(out->po_reason, sizeof(out->po_reason),
			    "%zu state event(s) in purgatory but none from authorized publishers",
			    in->pi_nheld);
			return 0;
		}
		if (out->po_state == -1) {
			snprintf(out->po_reason, sizeof(out->po_reason),
			    "%zu state event(s) in purgatory from authorized publisher(s) but doesn't match push (%s)",
			    in->pi_nstates, why);
			return 0;
		}
	}
	/* Git's walls come down only where an authority asks: a matching
	 * state for its branches and tags, a known PR tip for refs/nostr. */
	for (i = 0; i < in->pi_ncmds; i++) {
		pc = &in->pi_cmds[i];
		if (branch_or_tag(pc->pc_ref) && out->po_state == -1)
			continue;
		if (!branch_or_tag(pc->pc_ref) &&
		    tip_of(in, pc->pc_ref) == NULL)
			continue;
		if (is_null(pc->pc_new))
			out->po_deny_deletes = 0;
		else if (!is_null(pc->pc_old) &&
		    strcmp(pc->pc_old, pc->pc_new) != 0)
			out->po_deny_nonff = 0;
	}
	out->po_allow = 1;
	return 1;
}
