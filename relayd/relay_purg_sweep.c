/*
 * relay_purg_sweep.c: the purgatory's expiry sweep: held events expire after
 * 30 minutes, a held announcement first loses its repository and lingers
 * 24 hours more, and expired placeholders (refs/nostr/<id> pushed before
 * the event <id>) lose their ref and their unreachable objects.  Runs as
 * a task inside relayd's batched transactions, on a timer.
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

static lws_sorted_usec_list_t sweep_sul;
static int		      sweep_queued;
static int64_t		      last_expired_sweep;

static void sweep_timer(lws_sorted_usec_list_t *);


/*
 * Placeholders (refs/nostr/<id> pushed before the event <id>) whose time
 * is up lose their ref, if it still names what was pushed, and the
 * repository its objects that nothing else reaches (relay_job_prune()):
 * no longer advertised, no longer counted toward max_repo_bytes.
 */
static struct purg_placeholder *expired_ph; /* sweep_run to sweep_done */
static size_t			expired_nph;

static void
placeholders_expire(int64_t now)
{
	purg_placeholder_free_list(expired_ph, expired_nph);
	expired_ph = NULL;
	expired_nph = 0;
	if (purg_placeholder_due(relayd->purg, now, &expired_ph,
		&expired_nph) == -1) {
		expired_ph = NULL;
		expired_nph = 0;
	}
}

/* After the sweep's commit: the expired placeholders' git side. */
static void
placeholders_expired(int committed)
{
	struct purg_placeholder *ph = expired_ph;
	size_t			 i, j, n = expired_nph;
	char			 ref[RELAY_REF_NOSTR_LEN + 65];

	expired_ph = NULL;
	expired_nph = 0;
	for (i = 0; committed && i < n; i++) {
		memcpy(ref, RELAY_REF_NOSTR, RELAY_REF_NOSTR_LEN);
		hex_encode(ph[i].pp_id, EVENT_ID_LEN,
		    ref + RELAY_REF_NOSTR_LEN);
		log_info(
		    "purgatory: placeholder %s in %s expired without its event; removing it",
		    ref, ph[i].pp_d);
		relay_job_delete_ref(ph[i].pp_owner, ph[i].pp_d, ref,
		    ph[i].pp_oid);
	}
	/* One prune per repository, after its deletions. */
	for (i = 0; committed && i < n; i++) {
		for (j = 0; j < i; j++)
			if (memcmp(ph[j].pp_owner, ph[i].pp_owner,
				PUBKEY_LEN) == 0 &&
			    strcmp(ph[j].pp_d, ph[i].pp_d) == 0)
				break;
		if (j == i)
			relay_job_prune(ph[i].pp_owner, ph[i].pp_d);
	}
	purg_placeholder_free_list(ph, n);
}


static void
sweep_run(void *arg)
{
	struct purg_ev	*ev = NULL;
	struct purg_ann *an = NULL;
	int64_t		 now = time(NULL);
	size_t		 n = 0, i;
	char		 hex[EVENT_ID_HEX_LEN + 1];

	(void)arg;
	if (purg_ev_due(relayd->purg, now, &ev, &n) == 0) {
		for (i = 0; i < n; i++) {
			hex_encode(ev[i].pe_id, EVENT_ID_LEN, hex);
			log_info(
			    "purgatory: %s (kind %u) expired without its git data",
			    hex, ev[i].pe_kind);
			purg_ev_delete(relayd->purg, ev[i].pe_id);
			purg_expired_add(relayd->purg, ev[i].pe_id, now);
			relayd->stats.purg_expired++;
		}
	}
	purg_ev_free_list(ev, n);
	placeholders_expire(now);
	purg_placeholder_sweep(relayd->purg, now);
	n = 0;
	if (purg_ann_due(relayd->purg, now, &an, &n) == 0) {
		for (i = 0; i < n; i++) {
			if (!an[i].pa_soft_expired) {
				/* Phase two: no repository, the entry stays
				 * (StateOnly) for a state to revive it. */
				purg_ann_set_expiry(relayd->purg,
				    an[i].pa_pubkey, an[i].pa_d,
				    relay_purg_later(PURG_SOFT_EXPIRY_S), 1);
				relay_purg_job(LJ_REMOVE, an[i].pa_pubkey,
				    an[i].pa_d);
				log_info(
				    "purgatory: repository %s without git data for 30 minutes; removed",
				    an[i].pa_d);
				continue;
			}
			purg_ann_delete(relayd->purg, an[i].pa_pubkey,
			    an[i].pa_d);
			purg_expired_add(relayd->purg, an[i].pa_id, now);
			relayd->stats.purg_expired++;
		}
	}
	purg_ann_free_list(an, n);
	if (now - last_expired_sweep >=
	    (int64_t)cfg_scale_delay(&relayd->cfg, PURG_EXPIRED_SWEEP_S)) {
		purg_expired_sweep(relayd->purg,
		    now -
			(int64_t)cfg_scale_delay(&relayd->cfg,
			    PURG_EXPIRED_KEEP_S));
		last_expired_sweep = now;
	}
}

static void
sweep_done(void *arg, int committed)
{
	(void)arg;
	placeholders_expired(committed);
	sweep_queued = 0;
}

static void
sweep_timer(lws_sorted_usec_list_t *sul)
{
	int64_t next, now = time(NULL);

	(void)sul;
	relay_git_unclaimed_sweep();
	if (!sweep_queued && purg_next_deadline(relayd->purg, &next) == 0 &&
	    (next <= now ||
		now - last_expired_sweep >=
		    (int64_t)cfg_scale_delay(&relayd->cfg,
			PURG_EXPIRED_SWEEP_S))) {
		sweep_queued = 1;
		relay_ingest_task(sweep_run, sweep_done, NULL);
	}
	lws_sul_schedule(relayd->ctx, 0, &sweep_sul, sweep_timer,
	    (lws_usec_t)(cfg_period(&relayd->cfg, PURG_SWEEP_S) * 1e6));
}

void
relay_purg_init(void)
{
	relayd->purg = purg_open(relayd->store);
	policy_set_purgatory(&relayd->policy, relayd->purg);
	last_expired_sweep = time(NULL);
	memset(&sweep_sul, 0, sizeof(sweep_sul));
	lws_sul_schedule(relayd->ctx, 0, &sweep_sul, sweep_timer,
	    (lws_usec_t)(cfg_period(&relayd->cfg, PURG_SWEEP_S) * 1e6));
}

void
relay_purg_close(void)
{
	purg_close(relayd->purg);
	relayd->purg = NULL;
}
