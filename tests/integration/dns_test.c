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
 *
 * The same for syncd's git-data hunt: a held repository whose first
 * clone URL names a slow host (graspd A under another name) is hunted
 * while syncd keeps answering, and released from that URL once the name
 * answers (git gets the vetted address pinned, so it does not look the
 * name up again).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gdproc.h"
#include "gitutil.h"
#include "msg.h"
#include "nostr.h"
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
#define SLOWGIT	 "slowgit.graspd.test"
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
	uint8_t		   sk[SECKEY_LEN];
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

/*
 * Asks syncd of the graspd whose run directory is run for its status
 * every 200 ms until until_ms (or until done(arg) says 1); the slowest
 * answer's time.  Each ask must be answered.
 */
static int64_t
slowest_status(const char *run, int64_t until_ms, int (*done)(void *),
    void *arg)
{
	cJSON  *rep;
	int64_t t, dt, worst = 0;

	while ((t = wsc_now_ms()) < until_ms && !(done && done(arg))) {
		rep = ctl_role(run, ROLE_SYNCD, MSG_CONTROL,
		    "{\"cmd\":\"status\"}", SLOW_MS * 2);
		dt = wsc_now_ms() - t;
		if (rep == NULL)
			dt = INT64_MAX;
		cJSON_Delete(rep);
		if (dt > worst)
			worst = dt;
		usleep(200000);
	}
	return worst;
}

struct released {
	struct relayproc   *r_b;
	const struct event *r_ev[2];
	int64_t		    r_at;
};

/* 1 once B serves both events (the hunt released them). */
static int
is_released(void *arg)
{
	struct released *r = arg;

	if (r->r_at < 0 && client_has_id(r->r_b, r->r_ev[0]) == 1 &&
	    client_has_id(r->r_b, r->r_ev[1]) == 1)
		r->r_at = wsc_now_ms();
	return r->r_at >= 0;
}

static void
test_slow_clone_host_does_not_stall_the_hunt(void)
{
	struct relayproc *a = NULL, *b = NULL;
	struct event	 *ann = NULL, *state = NULL;
	struct wsc	 *ws = NULL;
	struct released	  rel;
	char		  env1[200], slowdom[64], dir[600], run[PATH_MAX];
	char		  f[200], err[64], oid[41], **evs = NULL;
	const char	 *envb[3], *dom[3], *urls[2];
	uint8_t		  sk[SECKEY_LEN];
	size_t		  n = 0;
	int		  ok = 0;
	int64_t		  t0, worst;

	if (dns == NULL) {
		printf("# skip: %s\n", skip_why);
		return;
	}
	slowdns_add(dns, SLOWGIT, SLOW_MS);
	a = relayproc_start("graspd", NULL);
	T_ASSERT(a != NULL);
	snprintf(env1, sizeof(env1), "NGIT_SYNC_BOOTSTRAP_RELAY_URL=%s",
	    relayproc_url(a));
	envb[0] = env1;
	envb[1] = "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true";
	envb[2] = NULL;
	if ((b = relayproc_start("graspd", envb)) == NULL)
		goto done;
	snprintf(run, sizeof(run), "%s/run", relayproc_dir(b));

	/* A's git server under the slow name first, then A and B (each
	 * takes only announcements that list it). */
	snprintf(slowdom, sizeof(slowdom), SLOWGIT ":%d", relayproc_port(a));
	dom[0] = slowdom;
	dom[1] = relayproc_domain(a);
	dom[2] = relayproc_domain(b);
	urls[0] = relayproc_url(a);
	urls[1] = relayproc_url(b);
	tuser_sk(KEYS, 5, sk);
	ann = tint_announcement(KEYS, 5, time(NULL) - 60, "slowclone", dom, 3,
	    urls, 2, NULL);
	if (ann == NULL ||
	    (ws = wsc_connect(relayproc_host(a), relayproc_port(a), "/",
		 5000)) == NULL ||
	    nostr_publish(ws, ann, 5000, &ok, NULL) != 0 || !ok)
		goto done;
	snprintf(dir, sizeof(dir), "%s/slowclone", tmpdir);
	if (gt_release(ws, sk, relayproc_domain(a), "slowclone", dir, oid) != 0)
		goto done;
	snprintf(f, sizeof(f), "{\"kinds\":[30618],\"#d\":[\"slowclone\"]}");
	if (nostr_req(ws, "s", f, 5000, &evs, &n, NULL) != 0 || n != 1 ||
	    (state = event_parse(evs[0], strlen(evs[0]), err, sizeof(err))) ==
		NULL)
		goto done;
	t0 = wsc_now_ms();

	/* B syncs both from A, holds them and hunts the objects. */
	rel.r_b = b;
	rel.r_ev[0] = ann;
	rel.r_ev[1] = state;
	rel.r_at = -1;
	worst = slowest_status(run, t0 + SLOW_MS * 4, is_released, &rel);
	printf("# slow git host: %d queries, %d answers; syncd's slowest "
	       "control answer %lld ms; released after %lld ms\n",
	    slowdns_queries(dns, SLOWGIT), slowdns_answers(dns, SLOWGIT),
	    (long long)worst, (long long)(rel.r_at < 0 ? -1 : rel.r_at - t0));
	if (rel.r_at < 0) {
		cJSON *v = ctl_role_view(b, ROLE_SYNCD, NULL, 5);
		char  *txt = v ? cJSON_PrintUnformatted(v) : NULL;

		printf("# B has the announcement: %d, the state: %d; "
		       "syncd: %.3000s\n",
		    client_has_id(b, ann), client_has_id(b, state),
		    txt ? txt : "?");
		free(txt);
		cJSON_Delete(v);
	}
	T_CHECK(slowdns_queries(dns, SLOWGIT) > 0);
	T_CHECK(worst < STALL_MS);
	T_CHECK(rel.r_at >= 0);
done:
	if (t_case_failed && a != NULL)
		relayproc_dump_log(a, 30);
	if (t_case_failed && b != NULL)
		relayproc_dump_log(b, 60);
	T_CHECK(ok && state != NULL);
	nostr_events_free(evs);
	wsc_close(ws);
	event_destroy(ann);
	event_destroy(state);
	relayproc_free(b);
	relayproc_free(a);
}

static const struct t_case cases[] = {
	T_CASE(test_slow_dns_does_not_stall_syncd),
	T_CASE(test_slow_clone_host_does_not_stall_the_hunt),
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
