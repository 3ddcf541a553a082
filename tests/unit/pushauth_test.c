/*
 * pushauth_test.c: relayd's push decision (relayd/relay_pushauth.c,
 * compiled in), on what git receive-pack would do with each command
 * shape: a null new id deletes (also when old is null: refused), an old
 * id that is not the ref's value is refused, a ref named twice is
 * refused, refs outside refs/heads, refs/tags, refs/nostr or malformed
 * are refused, refs/nostr/<id> is never deleted and takes only a known
 * PR tip, the branch HEAD names is not deleted, and branches and tags
 * end as the newest matching authorised state lists them; the verdict
 * lowers git's deletion and non-fast-forward walls only for a push that
 * deletes or rewrites.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../relayd/relay_pushauth.c"
#include "t.h"

#define Z      "0000000000000000000000000000000000000000"
#define A      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B      "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define C      "cccccccccccccccccccccccccccccccccccccccc"
#define ID1    "1111111111111111111111111111111111111111111111111111111111111111"
#define ID2    "2222222222222222222222222222222222222222222222222222222222222222"
#define NOSTR1 "refs/nostr/" ID1
#define NOSTR2 "refs/nostr/" ID2

/* The repository now: main and dev at A, tag v1 at B, one PR ref, HEAD. */
static struct relay_ref cur_v[] = {
	{ "refs/heads/main", A },
	{ "refs/heads/dev", A },
	{ "refs/tags/v1", B },
	{ NOSTR1, C },
};
static struct relay_refs cur = { cur_v, 4, "refs/heads/main" };

static struct relay_push_cmd cmds[8];
static struct relay_refs     states[4];
static struct relay_ref	     state_v[4][8];
static struct pushauth_tip   tips[4];
static struct pushauth_in    in;
static struct pushauth_out   out;

static void
reset(void)
{
	memset(cmds, 0, sizeof(cmds));
	memset(states, 0, sizeof(states));
	memset(tips, 0, sizeof(tips));
	memset(&in, 0, sizeof(in));
	in.pi_cmds = cmds;
	in.pi_cur = &cur;
	in.pi_ann = PUSHAUTH_ANN_OWNER;
	in.pi_owner_hex = "ab";
	in.pi_states = states;
	in.pi_tips = tips;
}

static void
cmd(const char *old, const char *new, const char *ref)
{
	struct relay_push_cmd *pc = &cmds[in.pi_ncmds++];

	snprintf(pc->pc_old, sizeof(pc->pc_old), "%s", old);
	snprintf(pc->pc_new, sizeof(pc->pc_new), "%s", new);
	pc->pc_ref = (char *)ref;
}

/* An authorised held state: NULL-terminated (ref, oid) pairs. */
static void
state(const char *ref, ...)
{
	struct relay_refs *s = &states[in.pi_nstates];
	va_list		   ap;

	s->v = state_v[in.pi_nstates++];
	in.pi_nheld++;
	va_start(ap, ref);
	for (; ref != NULL; ref = va_arg(ap, const char *)) {
		s->v[s->n].rf_name = (char *)ref;
		snprintf(s->v[s->n].rf_oid, sizeof(s->v[s->n].rf_oid), "%s",
		    va_arg(ap, const char *));
		s->n++;
	}
	va_end(ap);
}

static int
decide(void)
{
	return relay_pushauth_decide(&in, &out);
}

static void
test_null_pair_is_refused_even_for_a_missing_ref(void)
{
	reset();
	cmd(Z, Z, "refs/heads/main");
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "Ref validation failed: refs/heads/main: "
	    "old and new are both the null id");
	/* A state that drops main does not make the pair acceptable. */
	state("refs/heads/dev", A, "refs/tags/v1", B, NULL);
	T_EQ_INT(decide(), 0);
	reset();
	cmd(Z, Z, "refs/heads/nothing");
	T_EQ_INT(decide(), 0);
	T_EQ_INT(out.po_allow, 0);
}

static void
test_deletion_needs_a_state_without_the_ref(void)
{
	reset();
	cmd(A, Z, "refs/heads/dev");
	T_EQ_INT(decide(), 0);
	/* The reference's words first (ngit matches them), then what is
	 * missing and what to do. */
	T_EQ_STR(out.po_reason,
	    "No state events in purgatory: no state event (kind 30618) "
	    "lists these refs at these commits; publish one, signed by "
	    "the owner or a maintainer, then push again");
	state("refs/heads/main", A, "refs/heads/dev", A, "refs/tags/v1", B,
	    NULL);
	T_EQ_INT(decide(), 0);
	T_CHECK(strstr(out.po_reason,
		    "the state lists refs/heads/dev, which "
		    "the push leaves out") != NULL);
	/* The newest state drops dev. */
	reset();
	cmd(A, Z, "refs/heads/dev");
	state("refs/heads/main", A, "refs/tags/v1", B, NULL);
	state("refs/heads/main", A, "refs/heads/dev", A, "refs/tags/v1", B,
	    NULL);
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_state, 0);
	T_EQ_INT(out.po_deny_deletes, 0);
	T_EQ_INT(out.po_deny_nonff, 1);
	/* A tag likewise. */
	reset();
	cmd(B, Z, "refs/tags/v1");
	state("refs/heads/main", A, "refs/heads/dev", A, NULL);
	T_EQ_INT(decide(), 1);
}

static void
test_head_branch_is_not_deleted(void)
{
	reset();
	cmd(A, Z, "refs/heads/main");
	state("refs/heads/dev", A, "refs/tags/v1", B, NULL);
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "Ref validation failed: refs/heads/main is "
	    "HEAD and cannot be deleted");
}

static void
test_refs_nostr_is_never_deleted(void)
{
	reset();
	cmd(C, Z, NOSTR1);
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "Ref validation failed: " NOSTR1 " cannot "
	    "be deleted");
}

static void
test_old_must_be_the_current_value(void)
{
	static const char *const shapes[][3] = {
		{ B, C, "refs/heads/main" },   /* stale old */
		{ B, B, "refs/heads/main" },   /* "no-op" that is not */
		{ B, Z, "refs/heads/dev" },    /* deletion of another value */
		{ Z, B, "refs/heads/main" },   /* creation over a ref */
		{ A, B, "refs/heads/absent" }, /* update of nothing */
		{ A, Z, "refs/heads/absent" }, /* deletion of nothing */
		{ Z, A, NOSTR1 },	       /* creation over a PR ref */
		{ A, B, NOSTR2 },	       /* update of no PR ref */
	};
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		reset();
		cmd(shapes[i][0], shapes[i][1], shapes[i][2]);
		/* A state that would accept the result if old were right. */
		state("refs/heads/main", B, "refs/heads/absent", B,
		    "refs/tags/v1", B, NULL);
		T_EQ_INT(decide(), 0);
		T_CHECK(strncmp(out.po_reason, "Ref validation failed: ", 23) ==
			0 &&
		    (strstr(out.po_reason, "the push expects") != NULL));
	}
}

static void
test_same_ref_twice_is_refused(void)
{
	reset();
	cmd(A, B, "refs/heads/main");
	cmd(B, C, "refs/heads/main");
	state("refs/heads/main", C, "refs/heads/dev", A, "refs/tags/v1", B,
	    NULL);
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "Ref validation failed: refs/heads/main is "
	    "updated more than once");
	reset();
	cmd(Z, A, NOSTR2);
	cmd(Z, A, NOSTR2);
	T_EQ_INT(decide(), 0);
}

static void
test_refs_outside_the_namespaces_are_refused(void)
{
	static const char *const bad[] = { "HEAD", "refs/remotes/origin/main",
		"refs/notes/commits", "refs/heads", "refs/stash", "main",
		"refs/meta/config" };
	static const char *const funny[] = { "refs/heads/", "refs/heads//x",
		"refs/heads/../x", "refs/heads/a.lock", "refs/heads/a b",
		"refs/heads/.hidden", "refs/heads/x.", "refs/heads/a@{1}",
		"refs/heads/a:b", "refs/heads/a\x01", "refs/tags/v~1",
		"refs/heads/a\\b", "refs/heads/a*", "refs/heads/x/" };
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset();
		cmd(Z, A, bad[i]);
		T_EQ_INT(decide(), 0);
		T_CHECK(strstr(out.po_reason,
			    "is not a branch, a tag or "
			    "refs/nostr/<event id>") != NULL);
	}
	for (i = 0; i < sizeof(funny) / sizeof(funny[0]); i++) {
		reset();
		cmd(Z, A, funny[i]);
		state("refs/heads/main", A, "refs/heads/dev", A, "refs/tags/v1",
		    B, funny[i], A, NULL);
		T_EQ_INT(decide(), 0);
		T_CHECK(
		    strstr(out.po_reason, "is not a valid ref name") != NULL);
	}
	T_CHECK(relay_pushauth_refname_ok("refs/heads/feature/x-1.2"));
	T_CHECK(relay_pushauth_refname_ok("refs/tags/v1.0"));
	reset();
	cmd(Z, A, "refs/nostr/123");
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "Invalid event ID format in ref: "
	    "refs/nostr/123");
	/* One spelling per event id: lowercase. */
	reset();
	cmd(Z, A,
	    "refs/nostr/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
	T_EQ_INT(decide(), 0);
	T_CHECK(strncmp(out.po_reason, "Invalid event ID format", 23) == 0);
}

static void
test_noop_needs_no_state_and_keeps_the_walls(void)
{
	reset();
	cmd(A, A, "refs/heads/main");
	cmd(B, B, "refs/tags/v1");
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_state, -1);
	T_EQ_INT(out.po_deny_deletes, 1);
	T_EQ_INT(out.po_deny_nonff, 1);
	in.pi_ann = PUSHAUTH_ANN_OTHER;
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "No repository announcement found for owner "
	    "ab");
	in.pi_ann = PUSHAUTH_ANN_NONE;
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason, "No repository announcement found");
}

static void
test_state_authorises_creation_and_rewrite(void)
{
	reset();
	cmd(Z, B, "refs/heads/new");
	state("refs/heads/main", A, "refs/heads/dev", A, "refs/tags/v1", B,
	    "refs/heads/new", B, NULL);
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_deny_deletes, 1);
	T_EQ_INT(out.po_deny_nonff, 1);
	/* A force push the state asks for. */
	reset();
	cmd(A, C, "refs/heads/main");
	state("refs/heads/main", C, "refs/heads/dev", A, "refs/tags/v1", B,
	    NULL);
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_deny_deletes, 1);
	T_EQ_INT(out.po_deny_nonff, 0);
	/* The wrong commit: explained against the newest state. */
	reset();
	cmd(A, B, "refs/heads/main");
	state("refs/heads/main", C, "refs/heads/dev", A, "refs/tags/v1", B,
	    NULL);
	state("refs/heads/main", A, NULL);
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "2 state event(s) in purgatory from "
	    "authorized publisher(s) but doesn't match push (refs/heads/main "
	    "would be bbbbbbb, the state says ccccccc)");
	/* Held states from nobody authorised. */
	in.pi_nstates = 0;
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "2 state event(s) in purgatory but none from "
	    "authorized publishers");
}

static void
test_refs_nostr_takes_a_known_tip_or_a_placeholder(void)
{
	reset();
	in.pi_ann = PUSHAUTH_ANN_NONE;
	cmd(Z, A, NOSTR2);
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_deny_deletes, 1);
	T_EQ_INT(out.po_deny_nonff, 1);
	/* A placeholder moved: allowed, git's wall stays up. */
	reset();
	cmd(C, A, NOSTR1);
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_deny_nonff, 1);
	reset();
	in.pi_ann = PUSHAUTH_ANN_NONE;
	cmd(Z, A, NOSTR2);
	tips[0].pt_ref = NOSTR2;
	snprintf(tips[0].pt_c, sizeof(tips[0].pt_c), "%s", B);
	in.pi_ntips = 1;
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "PR event " ID2 " has tip commit " B ", not "
	    "the pushed " A);
	snprintf(tips[0].pt_c, sizeof(tips[0].pt_c), "(none)");
	T_EQ_INT(decide(), 0);
	/* An existing PR ref moved to the event's tip. */
	reset();
	cmd(C, B, NOSTR1);
	tips[0].pt_ref = NOSTR1;
	snprintf(tips[0].pt_c, sizeof(tips[0].pt_c), "%s", B);
	in.pi_ntips = 1;
	T_EQ_INT(decide(), 1);
	T_EQ_INT(out.po_deny_nonff, 0);
}

static void
test_prs_takes_refs_nostr_of_the_paths_signer_only(void)
{
	static const char *const other[] = { "refs/heads/main",
		"refs/heads/new", "refs/tags/v2", "HEAD" };
	size_t			 i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		reset();
		in.pi_prs = 1;
		in.pi_ann = PUSHAUTH_ANN_NONE;
		cmd(Z, A, other[i]);
		state("refs/heads/main", A, "refs/heads/dev", A, "refs/tags/v1",
		    B, "refs/heads/new", A, "refs/tags/v2", A, NULL);
		T_EQ_INT(decide(), 0);
		T_CHECK(strstr(out.po_reason,
			    "only refs/nostr/<event id> is "
			    "accepted under /prs/") != NULL);
	}
	/* A noop on a branch is refused too: nothing but refs/nostr. */
	reset();
	in.pi_prs = 1;
	cmd(A, A, "refs/heads/main");
	T_EQ_INT(decide(), 0);
	/* A placeholder; a known event of this path's; another's. */
	reset();
	in.pi_prs = 1;
	in.pi_ann = PUSHAUTH_ANN_NONE;
	cmd(Z, B, NOSTR2);
	T_EQ_INT(decide(), 1);
	tips[0].pt_ref = NOSTR2;
	snprintf(tips[0].pt_c, sizeof(tips[0].pt_c), "%s", B);
	in.pi_ntips = 1;
	T_EQ_INT(decide(), 1);
	tips[0].pt_foreign = 1;
	T_EQ_INT(decide(), 0);
	T_EQ_STR(out.po_reason,
	    "PR event " ID2 " is not by this path's "
	    "signer for this identifier");
	/* The standard path ignores pt_foreign (any author may push). */
	in.pi_prs = 0;
	T_EQ_INT(decide(), 1);
}

static void
test_one_bad_command_refuses_the_whole_push(void)
{
	reset();
	cmd(Z, B, "refs/heads/new");
	cmd(Z, Z, "refs/heads/main");
	state("refs/heads/dev", A, "refs/tags/v1", B, "refs/heads/new", B,
	    NULL);
	T_EQ_INT(decide(), 0);
	reset();
	cmd(Z, A, NOSTR2);
	cmd(A, Z, "HEAD");
	T_EQ_INT(decide(), 0);
	/* No commands: git does nothing. */
	reset();
	T_EQ_INT(decide(), 1);
}

static const struct t_case cases[] = {
	T_CASE(test_null_pair_is_refused_even_for_a_missing_ref),
	T_CASE(test_deletion_needs_a_state_without_the_ref),
	T_CASE(test_head_branch_is_not_deleted),
	T_CASE(test_refs_nostr_is_never_deleted),
	T_CASE(test_old_must_be_the_current_value),
	T_CASE(test_same_ref_twice_is_refused),
	T_CASE(test_refs_outside_the_namespaces_are_refused),
	T_CASE(test_noop_needs_no_state_and_keeps_the_walls),
	T_CASE(test_state_authorises_creation_and_rewrite),
	T_CASE(test_refs_nostr_takes_a_known_tip_or_a_placeholder),
	T_CASE(test_prs_takes_refs_nostr_of_the_paths_signer_only),
	T_CASE(test_one_bad_command_refuses_the_whole_push),
};

T_MAIN(cases)
