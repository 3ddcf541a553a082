/*
 * pushauth_fuzz.c: libFuzzer harness for relayd's push decision
 * (relayd/relay_pushauth.c, compiled in) over receive-pack command lists
 * as relay_git.c reads them (common/pktline.c, up to the flush-pkt).
 *
 * The input is a ten-byte repository followed by the request body.  The
 * repository picks, from small pools, which of four refs exist now and
 * at which of three commits, whether HEAD names main, up to three held
 * authorised states (branches and tags at pool commits), how many held
 * states there are, the known tips of two refs/nostr refs (and whether
 * each is another signer's), whether the owner's announcement is there,
 * and whether the push goes to GRASP-06's /prs/.  The pools' object
 * names and refs are in pushauth.dict, so commands name them often.
 *
 * Invariants, checked against a model of what git receive-pack does with
 * an allowed list (every command applied in order, a null new id
 * deleting): the answer is the same twice; a refusal has a reason; an
 * allowed list names each ref once, only well-formed refs under
 * refs/heads, refs/tags, refs/nostr/<64 lowercase hex>, never a pair of null ids,
 * an old id equal to the ref's value now, no refs/nostr deletion, the
 * known tip for refs/nostr, not the deletion of HEAD's branch, under
 * /prs/ only refs/nostr and no other signer's known event; when it
 * changes a branch or tag, the branches and tags git leaves are exactly
 * those of the state it names; git's deletion and non-fast-forward walls
 * are lowered only for an authorised deletion or rewrite, and always for
 * an allowed deletion or rewrite of a branch or tag (else git would
 * refuse what was allowed).
 */
#include "fuzz.h"
#include "pktline.h"
#include "../../relayd/relay_pushauth.c"

#define HDR	 10
#define MAX_CMDS 16
#define POOL	 4

static const char *const oids[] = {
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	"cccccccccccccccccccccccccccccccccccccccc",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};
#define NOSTR1 \
	"refs/nostr/1111111111111111111111111111111111111111111111111111111111111111"
#define NOSTR2 \
	"refs/nostr/2222222222222222222222222222222222222222222222222222222222222222"
static const char *const cur_pool[POOL] = { "refs/heads/main", "refs/heads/dev",
	"refs/tags/v1", NOSTR1 };
static const char *const state_pool[POOL] = { "refs/heads/main",
	"refs/heads/dev", "refs/tags/v1", "refs/heads/new" };
static const char *const tip_pool[2] = { NOSTR1, NOSTR2 };

struct model {
	struct relay_ref      cur_v[POOL];
	struct relay_refs     cur;
	struct relay_ref      st_v[3][POOL];
	struct relay_refs     st[3];
	struct pushauth_tip   tips[2];
	struct relay_push_cmd cmds[MAX_CMDS];
	char		     *refs[MAX_CMDS];
	struct pushauth_in    in;
};

static void
build(const uint8_t *h, struct model *m)
{
	size_t	 i, k, nst = (h[0] >> 5) & 3;
	uint16_t bits;

	memset(m, 0, sizeof(*m));
	m->cur.v = m->cur_v;
	for (i = 0; i < POOL; i++)
		if (h[0] & (1u << i)) {
			m->cur_v[m->cur.n].rf_name = (char *)cur_pool[i];
			snprintf(m->cur_v[m->cur.n].rf_oid, GIT_OID_HEX + 1,
			    "%s", oids[(h[1] >> (2 * i)) & 3]);
			m->cur.n++;
		}
	if (h[0] & 0x10)
		m->cur.head = (char *)"refs/heads/main";
	for (k = 0; k < nst; k++) {
		bits = (uint16_t)(h[2 + 2 * k] | h[3 + 2 * k] << 8);
		m->st[k].v = m->st_v[k];
		for (i = 0; i < POOL; i++)
			if (bits & (1u << i)) {
				struct relay_ref *r = &m->st_v[k][m->st[k].n++];

				r->rf_name = (char *)state_pool[i];
				snprintf(r->rf_oid, GIT_OID_HEX + 1, "%s",
				    oids[(bits >> (4 + 2 * i)) & 3]);
			}
	}
	m->in.pi_cur = &m->cur;
	m->in.pi_states = m->st;
	m->in.pi_nstates = nst;
	m->in.pi_nheld = nst + (h[0] >> 7);
	for (i = 0; i < 2; i++) {
		unsigned t = (h[8] >> (4 * i)) & 15;

		if ((t & 3) == 0)
			continue;
		m->tips[m->in.pi_ntips].pt_ref = tip_pool[i];
		snprintf(m->tips[m->in.pi_ntips].pt_c, sizeof(m->tips[0].pt_c),
		    "%s", (t & 3) == 3 ? "(none)" : oids[t >> 2]);
		m->tips[m->in.pi_ntips].pt_foreign = (h[9] >> (3 + i)) & 1;
		m->in.pi_ntips++;
	}
	m->in.pi_tips = m->tips;
	m->in.pi_ann = (enum pushauth_ann)((h[9] & 3) % 3);
	m->in.pi_prs = (h[9] >> 2) & 1;
	m->in.pi_owner_hex = "00";
	m->in.pi_cmds = m->cmds;
}

/* A plain lookup; the decision's own is as simple. */
#define lookup refs_lookup

static int
zero(const char *oid)
{
	return strspn(oid, "0") == GIT_OID_HEX;
}

static int
bt(const char *ref)
{
	return strncmp(ref, "refs/heads/", 11) == 0 ||
	    strncmp(ref, "refs/tags/", 10) == 0;
}

/* The branches and tags git leaves equal state st's, both ways. */
static int
leaves_state(const struct model *m, const struct relay_refs *st)
{
	const char *v;
	size_t	    i, k;

	for (i = 0; i < m->cur.n; i++) {
		const char *name = m->cur.v[i].rf_name;

		if (!bt(name))
			continue;
		v = m->cur.v[i].rf_oid;
		for (k = 0; k < m->in.pi_ncmds; k++)
			if (strcmp(m->cmds[k].pc_ref, name) == 0)
				v = zero(m->cmds[k].pc_new) ? NULL :
							      m->cmds[k].pc_new;
		if (v == NULL ? lookup(st, name) != NULL :
				lookup(st, name) == NULL ||
			    strcmp(lookup(st, name), v) != 0)
			return 0;
	}
	for (k = 0; k < m->in.pi_ncmds; k++) {
		const char *name = m->cmds[k].pc_ref;

		if (!bt(name) || lookup(&m->cur, name) != NULL)
			continue;
		v = zero(m->cmds[k].pc_new) ? NULL : m->cmds[k].pc_new;
		if (v == NULL ? lookup(st, name) != NULL :
				lookup(st, name) == NULL ||
			    strcmp(lookup(st, name), v) != 0)
			return 0;
	}
	for (i = 0; i < st->n; i++) {
		const char *name = st->v[i].rf_name;
		int	    gone = lookup(&m->cur, name) == NULL;

		for (k = 0; k < m->in.pi_ncmds; k++)
			if (strcmp(m->cmds[k].pc_ref, name) == 0)
				gone = zero(m->cmds[k].pc_new);
		if (gone)
			return 0;
	}
	return 1;
}

static void
check_allowed(const struct model *m, const struct pushauth_out *o)
{
	const struct relay_push_cmd *pc;
	const char		    *cur;
	size_t			     i, k;
	int			     changes = 0, del = 0, rew = 0;

	for (i = 0; i < m->in.pi_ncmds; i++) {
		pc = &m->cmds[i];
		FUZZ_ASSERT(bt(pc->pc_ref) ||
		    (strncmp(pc->pc_ref, "refs/nostr/", 11) == 0 &&
			strlen(pc->pc_ref) == 75 &&
			strspn(pc->pc_ref + 11, "0123456789abcdef") == 64));
		FUZZ_ASSERT(relay_pushauth_refname_ok(pc->pc_ref));
		for (k = 0; k < i; k++)
			FUZZ_ASSERT(strcmp(m->cmds[k].pc_ref, pc->pc_ref) != 0);
		FUZZ_ASSERT(!(zero(pc->pc_old) && zero(pc->pc_new)));
		cur = lookup(&m->cur, pc->pc_ref);
		FUZZ_ASSERT(
		    cur ? strcmp(cur, pc->pc_old) == 0 : zero(pc->pc_old));
		FUZZ_ASSERT(!m->in.pi_prs || !bt(pc->pc_ref));
		if (!bt(pc->pc_ref)) {
			FUZZ_ASSERT(!zero(pc->pc_new));
			for (k = 0; k < m->in.pi_ntips; k++)
				if (strcmp(m->tips[k].pt_ref, pc->pc_ref) == 0)
					FUZZ_ASSERT(strcmp(m->tips[k].pt_c,
							pc->pc_new) == 0 &&
					    (!m->in.pi_prs ||
						!m->tips[k].pt_foreign));
			continue;
		}
		FUZZ_ASSERT(!(zero(pc->pc_new) && m->cur.head != NULL &&
		    strcmp(m->cur.head, pc->pc_ref) == 0));
		if (strcmp(pc->pc_old, pc->pc_new) != 0)
			changes = 1;
		if (zero(pc->pc_new))
			del = 1;
		else if (!zero(pc->pc_old) &&
		    strcmp(pc->pc_old, pc->pc_new) != 0)
			rew = 1;
	}
	if (changes) {
		FUZZ_ASSERT(m->in.pi_ann == PUSHAUTH_ANN_OWNER);
		FUZZ_ASSERT(
		    o->po_state >= 0 && (size_t)o->po_state < m->in.pi_nstates);
		FUZZ_ASSERT(leaves_state(m, &m->st[o->po_state]));
		/* The newest matching state wins. */
		for (i = 0; i < (size_t)o->po_state; i++)
			FUZZ_ASSERT(!leaves_state(m, &m->st[i]));
	}
	if (del)
		FUZZ_ASSERT(o->po_deny_deletes == 0);
	if (rew)
		FUZZ_ASSERT(o->po_deny_nonff == 0);
}

/* Walls come down only for a deletion or rewrite with an authority. */
static void
check_walls(const struct model *m, const struct pushauth_out *o)
{
	size_t i, k;
	int    del = 0, rew = 0, tip;

	for (i = 0; i < m->in.pi_ncmds; i++) {
		const struct relay_push_cmd *pc = &m->cmds[i];

		if (bt(pc->pc_ref)) {
			if (o->po_state == -1)
				continue;
		} else {
			for (tip = 0, k = 0; k < m->in.pi_ntips; k++)
				tip |=
				    strcmp(m->tips[k].pt_ref, pc->pc_ref) == 0;
			if (!tip)
				continue;
		}
		if (zero(pc->pc_new))
			del = 1;
		else if (!zero(pc->pc_old) &&
		    strcmp(pc->pc_old, pc->pc_new) != 0)
			rew = 1;
	}
	FUZZ_ASSERT(o->po_deny_deletes == 1 || (o->po_allow && del));
	FUZZ_ASSERT(o->po_deny_nonff == 1 || (o->po_allow && rew));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	struct pushauth_out o1, o2;
	struct pkt_update   u;
	enum pkt_result	    res;
	char		   *body, err[128];
	size_t		    off = 0, i;
	int		    sb = -1, r1, r2, done = 0;

	fuzz_init_log();
	if (size < HDR)
		return 0;
	build(data, &m);
	/* An exact-size copy, so ASan sees any read past the body. */
	if ((body = malloc(size - HDR + 1)) == NULL)
		abort();
	memcpy(body, data + HDR, size - HDR);
	while (!done && m.in.pi_ncmds < MAX_CMDS) {
		res = pkt_command(body, size - HDR, &off, &u, &sb, err,
		    sizeof(err));
		switch (res) {
		case PKT_UPDATE:
			i = m.in.pi_ncmds++;
			memcpy(m.cmds[i].pc_old, u.pu_old, GIT_OID_HEX + 1);
			memcpy(m.cmds[i].pc_new, u.pu_new, GIT_OID_HEX + 1);
			if ((m.refs[i] = strndup(u.pu_ref, u.pu_reflen)) ==
			    NULL)
				abort();
			m.cmds[i].pc_ref = m.refs[i];
			break;
		case PKT_SHALLOW:
			break;
		default:
			/* relayd decides only on a complete list. */
			done = res == PKT_FLUSH ? 2 : 1;
		}
	}
	if (done == 2 || m.in.pi_ncmds == MAX_CMDS) {
		r1 = relay_pushauth_decide(&m.in, &o1);
		r2 = relay_pushauth_decide(&m.in, &o2);
		FUZZ_ASSERT(r1 == r2 && memcmp(&o1, &o2, sizeof(o1)) == 0);
		FUZZ_ASSERT(r1 == o1.po_allow && (r1 == 0 || r1 == 1));
		FUZZ_ASSERT(
		    memchr(o1.po_reason, '\0', sizeof(o1.po_reason)) != NULL);
		if (r1 == 0)
			FUZZ_ASSERT(o1.po_reason[0] != '\0' &&
			    o1.po_state == -1 && o1.po_deny_deletes == 1 &&
			    o1.po_deny_nonff == 1);
		else
			check_allowed(&m, &o1);
		check_walls(&m, &o1);
	}
	for (i = 0; i < m.in.pi_ncmds; i++)
		free(m.refs[i]);
	free(body);
	return 0;
}
