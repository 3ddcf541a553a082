/*
 * relay_release.c: relayd's release from the GRASP-01 purgatory
 * (reference brief 1.3-1.7, 7).  When git data arrives for a repository
 * (a push to it, relay_purg_pushed(); objects a job copied into it or
 * syncd fetched, relay_purg_git_arrived()), the held announcement of that
 * repository
 * and the held states and PRs of its identifier that some repository now
 * satisfies are stored and fanned out like any accepted event, and the
 * refs they govern are aligned by git jobs (relay_purg_stored()).  A push
 * of refs/nostr/<id> for a PR not known yet leaves a git-first
 * placeholder for the event to meet.
 *
 * Every release runs as a task queued on relayd's batched transactions
 * (relay_ingest.c); the git work it implies follows the commit.  The
 * holding and routing of events is relay_purg.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "log.h"
#include "purg.h"
#include "relayd.h"

/* Stores a held event; 1 if it is out of purgatory (stored or moot). */
static int
release_one(struct event *ev)
{
	enum store_result r;
	int64_t		  seq;

	r = store_put(relayd->store, ev, &seq);
	if (r == STORE_ERROR)
		return 0;
	if (r == STORE_OK) {
		log_debug("purgatory: released %s (kind %u)", ev->id_hex,
		    ev->kind);
		relay_purg_stored(ev);
		relay_ingest_released(ev, seq);
	} else
		event_destroy(ev);
	return 1;
}

static void
try_release_pr(const struct purg_ev *pe, const uint8_t *extra_owner,
    const char *extra_d)
{
	uint8_t	    owners[POLICY_MAX_MAINTAINERS][PUBKEY_LEN], src[PUBKEY_LEN];
	char	    src_d[1024];
	const char *c;
	struct event *ev;
	size_t	      n;

	if ((ev = relay_purg_parse(pe->pe_json)) == NULL ||
	    (c = relay_purg_pr_commit(ev)) == NULL) {
		event_destroy(ev);
		return;
	}
	n = relay_purg_pr_owners(ev, pe->pe_d, owners, POLICY_MAX_MAINTAINERS);
	/* GRASP-06: with no repository of it here, its /prs/ ref at c. */
	if (n == 0 && relay_purg_prs_holds(ev, pe->pe_d, c)) {
		if (release_one(ev))
			purg_ev_delete(relayd->purg, pe->pe_id);
		return;
	}
	if (!relay_purg_pr_source((const uint8_t(*)[PUBKEY_LEN])owners, n,
		pe->pe_d, c, extra_owner, extra_d, src, src_d, sizeof(src_d))) {
		event_destroy(ev);
		return;
	}
	/* The pushed repository is a source of the copy too. */
	if (extra_owner != NULL)
		relay_purg_pr_set_refs(ev, (const uint8_t(*)[PUBKEY_LEN])owners,
		    n, pe->pe_d, src, src_d);
	if (release_one(ev))
		purg_ev_delete(relayd->purg, pe->pe_id);
}

/*
 * Releases what git data present for identifier d now satisfies: held
 * states, oldest first, whose objects some repository holds, then PRs.
 */
void
relay_release_d(const char *d, const uint8_t *extra_owner, const char *extra_d)
{
	struct purg_ev	  *held = NULL;
	struct policy_anns a;
	struct relay_refs  want;
	struct event	  *ev;
	char		  *head;
	uint8_t		   src[PUBKEY_LEN];
	size_t		   n = 0, i, k;
	int		   ok;

	if (purg_ev_list_d(relayd->purg, d, 0, &held, &n) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (held[i].pe_kind != KIND_REPO_STATE) {
			try_release_pr(&held[i], extra_owner, extra_d);
			continue;
		}
		if ((ev = relay_purg_parse(held[i].pe_json)) == NULL)
			continue;
		if (relay_purg_anns(d, 1, &a) == -1) {
			event_destroy(ev);
			break;
		}
		for (k = 0, ok = 0; k < a.n && !ok; k++)
			ok = policy_anns_authorised(&a, a.v[k].an_ev->pubkey,
			    ev->pubkey);
		relay_state_refs(ev, &want, &head);
		free(head);
		ok = ok && relay_state_values_ok(ev) &&
		    relay_purg_find_source(&a, d, &want, src);
		relay_refs_free(&want);
		policy_anns_free(&a);
		if (!ok) {
			event_destroy(ev);
			continue;
		}
		if (release_one(ev))
			purg_ev_delete(relayd->purg, held[i].pe_id);
	}
	purg_ev_free_list(held, n);
}

/* "Newly available git data" in (owner, d) (reference brief 7). */
static void
release_repo(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct purg_ann pa;
	struct event   *ev;
	char		repo[PATH_MAX];

	if (purg_ann_get(relayd->purg, owner, d, &pa) == 1) {
		if (!pa.pa_soft_expired &&
		    relay_repo_path(owner, d, repo, sizeof(repo)) == 0 &&
		    relay_repo_has_refs(repo) &&
		    (ev = relay_purg_parse(pa.pa_json)) != NULL) {
			/* release_one() releases what the announcement
			 * unblocks through relay_purg_stored(). */
			if (purg_ann_delete(relayd->purg, owner, d) == 0 &&
			    !release_one(ev))
				log_warnx(
				    "purgatory: cannot store an announcement for %s",
				    d);
			purg_ann_clear(&pa);
			relay_release_d(d, NULL, NULL);
			return;
		}
		purg_ann_clear(&pa);
	}
	relay_release_d(d, NULL, NULL);
}

/* A push, as the release task sees it. */
struct pushed {
	uint8_t		       pu_owner[PUBKEY_LEN];
	char		      *pu_d;
	struct relay_push_cmd *pu_cmds;
	size_t		       pu_n;
	void (*pu_done)(void *);
	void *pu_arg;
};

static void
pushed_free(struct pushed *pu)
{
	size_t i;

	for (i = 0; i < pu->pu_n; i++)
		free(pu->pu_cmds[i].pc_ref);
	free(pu->pu_cmds);
	free(pu->pu_d);
	free(pu);
}

static void
pushed_run(void *arg)
{
	static const char *const pfx[] = { "refs/nostr/", NULL };
	struct pushed		*pu = arg;
	struct relay_refs	 refs;
	struct purg_ev		 pe;
	const char		*cur;
	char			 repo[PATH_MAX];
	uint8_t			 id[EVENT_ID_LEN];
	size_t			 i;
	int			 r;

	if (relay_repo_path(pu->pu_owner, pu->pu_d, repo, sizeof(repo)) == -1 ||
	    relay_repo_read_refs(repo, pfx, &refs) == -1)
		return;
	for (i = 0; i < pu->pu_n; i++) {
		const struct relay_push_cmd *pc = &pu->pu_cmds[i];

		if (strncmp(pc->pc_ref, "refs/nostr/", 11) != 0 ||
		    strcmp(pc->pc_new, RELAY_NULL_OID) == 0 ||
		    hex_decode(pc->pc_ref + 11, strlen(pc->pc_ref + 11), id,
			EVENT_ID_LEN) == -1)
			continue;
		/* Only what receive-pack really wrote. */
		if ((cur = relay_refs_get(&refs, pc->pc_ref)) == NULL ||
		    strcmp(cur, pc->pc_new) != 0)
			continue;
		if ((r = purg_ev_get(relayd->purg, id, &pe)) == 1) {
			try_release_pr(&pe, pu->pu_owner, pu->pu_d);
			purg_ev_clear(&pe);
			continue;
		}
		if (r == -1 || store_has_id(relayd->store, id) != 0)
			continue;
		/* Git first: the event may follow (reference brief 7). */
		purg_placeholder_put(relayd->purg, id, pu->pu_owner, pu->pu_d,
		    pc->pc_new, relay_purg_later(PURG_EXPIRY_S));
	}
	relay_refs_free(&refs);
	release_repo(pu->pu_owner, pu->pu_d);
}

static void
pushed_done(void *arg, int committed)
{
	struct pushed *pu = arg;

	(void)committed;
	/* Reported once the refs the release implies are aligned. */
	relay_job_call(pu->pu_done, pu->pu_arg);
	pushed_free(pu);
}

void
relay_purg_pushed(const uint8_t owner[PUBKEY_LEN], const char *d,
    const struct relay_push_cmd *cmds, size_t n, void (*done)(void *),
    void *arg)
{
	struct pushed *pu;
	size_t	       i;

	if ((pu = calloc(1, sizeof(*pu))) == NULL ||
	    (pu->pu_d = strdup(d)) == NULL ||
	    (pu->pu_cmds = calloc(n + 1, sizeof(*cmds))) == NULL)
		fatal("relay_purg_pushed");
	memcpy(pu->pu_owner, owner, PUBKEY_LEN);
	for (i = 0; i < n; i++) {
		pu->pu_cmds[i] = cmds[i];
		if ((pu->pu_cmds[i].pc_ref = strdup(cmds[i].pc_ref)) == NULL)
			fatal("relay_purg_pushed");
	}
	pu->pu_n = n;
	pu->pu_done = done;
	pu->pu_arg = arg;
	relay_ingest_task(pushed_run, pushed_done, pu);
}

/* A repository, as a release task sees it. */

static void
arrived_run(void *arg)
{
	struct relay_purg_key *rk = arg;

	release_repo(rk->rk_owner, rk->rk_d);
}

void
relay_purg_git_arrived(const uint8_t owner[PUBKEY_LEN], const char *d)
{
	relay_ingest_task(arrived_run, relay_purg_key_done,
	    relay_purg_key(owner, d));
}
