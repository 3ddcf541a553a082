/*
 * dns_test.c: a slow name server does not stall a role (issue 39, item
 * 8), seen from outside.
 *
 * The attack: an accepted repository's announcement lists, besides a
 * working peer relay by IP literal, a relay whose host name a slow name
 * server answers only after SLOW_MS (tests/lib/slowdns.h: a name server
 * on loopback and a private resolv.conf naming it; root only, skipped
 * otherwise).  syncd dials both.  While the slow lookup runs:
 *  - an issue seeded on the working peer reaches graspd well before the
 *    slow answer (with the lookup on syncd's loop it waited for it);
 *  - syncd answers its control socket at once, every time it is asked.
 * Then the slow name answers and syncd syncs from that relay too: an
 * issue seeded there arrives.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "msg.h"
#include "peerctl.h"
#include "relayproc.h"
#include "slowdns.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x5d

#define SLOW	 "slow.graspd.test"
/* How long the slow name takes: longer than any sync step under
 * NGIT_TEST, shorter than RESOLVE_TIMEOUT. */
#define SLOW_MS	 8000
/* A control request answered later than this counts as a stall. */
#define STALL_MS 2000

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-dns" };
static struct slowdns  *dns;
static const char      *skip_why;

static void
test_slow_dns_does_not_stall_syncd(void)
{
	struct relayproc  *fast = NULL, *slow = NULL;
	struct relayproc **peers[] = { &fast, &slow };
	struct gdproc	  *g = NULL;
	struct event	  *ann = NULL, *iss_fast = NULL, *iss_slow = NULL;
	cJSON		  *rep;
	char		   relays[256], tags[256], dir[600], run[PATH_MAX];
	uint8_t		   sk[32];
	const char *env[] = { "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };
	int64_t	    t0, t, fast_at = -1, slow_at = -1, worst = 0, dt;
	int	    asks = 0, answered_before = -1;

	if (dns == NULL) {
		printf("# skip: %s\n", skip_why);
		return;
	}
	slowdns_add(dns, SLOW, SLOW_MS);
	T_ASSERT(tint_peers_start(peers, 2, "peers") == 0);
	g = gd_start(env);
	if (g == NULL)
		goto done;
	snprintf(run, sizeof(run), "%s/run", gd_dir(g));
	snprintf(relays, sizeof(relays),
	    ",\"ws://127.0.0.1:%d\",\"ws://" SLOW ":%d\"", relayproc_port(fast),
	    relayproc_port(slow));
	tuser_sk(KEYS, 1, sk);
	snprintf(dir, sizeof(dir), "%s/repo", tmpdir);

	/* Each peer holds an issue of the repository before it is
	 * announced. */
	ann = tint_announcement(KEYS, 1, time(NULL) - 60, "dnsrepo", NULL, 0,
	    NULL, 0, NULL);
	T_CHECK(ann != NULL);
	if (ann == NULL)
		goto done;
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:dnsrepo\"]]",
	    ann->pubkey_hex);
	event_destroy(ann);
	iss_fast = tuser_event(KEYS, 2, time(NULL) - 30, 1621, tags, "fast");
	iss_slow = tuser_event(KEYS, 3, time(NULL) - 30, 1621, tags, "slow");
	T_CHECK(peerctl_seed(fast, &iss_fast, 1) == 0);
	T_CHECK(peerctl_seed(slow, &iss_slow, 1) == 0);

	ann = gd_host_repo(g, sk, "dnsrepo", relays, dir, NULL);
	T_CHECK(ann != NULL);
	if (ann == NULL)
		goto done;
	t0 = wsc_now_ms();
	printf("# announced with relays%s\n", relays);

	/* Until the slow name has answered (and a while after): syncd
	 * must answer its control socket at once and bring the fast
	 * peer's issue. */
	while ((t = wsc_now_ms()) < t0 + SLOW_MS + 4000) {
		if (fast_at < 0 && gd_has_event(g, iss_fast->id_hex) == 1) {
			fast_at = wsc_now_ms() - t0;
			answered_before = slowdns_answers(dns, SLOW);
		}
		rep = ctl_role(run, ROLE_SYNCD, MSG_CONTROL,
		    "{\"cmd\":\"status\"}", SLOW_MS * 2);
		dt = wsc_now_ms() - t;
		asks++;
		if (dt > worst)
			worst = dt;
		T_CHECK(rep != NULL);
		cJSON_Delete(rep);
		usleep(200000);
	}
	printf("# slow name: %d queries, %d answers; syncd's slowest control "
	       "answer of %d: %lld ms; the fast peer's issue after %lld ms "
	       "(slow answers by then: %d)\n",
	    slowdns_queries(dns, SLOW), slowdns_answers(dns, SLOW), asks,
	    (long long)worst, (long long)fast_at, answered_before);
	/* The slow relay was dialled by name. */
	T_CHECK(slowdns_queries(dns, SLOW) > 0);
	T_CHECK(worst < STALL_MS);
	T_CHECK(fast_at >= 0 && answered_before == 0);

	/* The slow name answered: that relay is synced too. */
	while (slow_at < 0 && wsc_now_ms() < t0 + SLOW_MS * 4) {
		if (gd_has_event(g, iss_slow->id_hex) == 1)
			slow_at = wsc_now_ms() - t0;
		else
			usleep(200000);
	}
	printf("# the slow peer's issue after %lld ms\n", (long long)slow_at);
	T_CHECK(slow_at >= SLOW_MS - 500);

	/* Every role still runs. */
	{
		char states[GD_NROLES][16];
		long pids[GD_NROLES];
		int  i;

		T_CHECK(gd_roles_now(g, states, pids) == 0);
		for (i = 0; i < GD_NROLES; i++)
			T_CHECK(strcmp(states[i], "running") == 0);
	}
done:
	if (t_case_failed && g != NULL)
		gd_dump_log(g, 60);
	event_destroy(ann);
	event_destroy(iss_fast);
	event_destroy(iss_slow);
	gd_free(g);
	relayproc_free(fast);
	relayproc_free(slow);
	T_CHECK(g != NULL);
}

static const struct t_case cases[] = {
	T_CASE(test_slow_dns_does_not_stall_syncd),
};

int
main(void)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (gt_fixture.setup(&tp) != 0)
		return 1;
	/* Before any thread: unshare(CLONE_NEWNS) needs that. */
	if ((dns = slowdns_start(tmpdir, &skip_why)) != NULL)
		printf("# name server on %s\n", slowdns_addr(dns));
	t_run_cases(cases, TINT_N(cases));
	rc = t_done();
	slowdns_stop(dns);
	gt_fixture.cleanup(&tp, rc != 0);
	return rc;
}
