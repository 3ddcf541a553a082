/*
 * sync_test.c: syncd (GRASP-02) inside a real graspd, pulling from a
 * scriptable peer relay on loopback: bootstrap discovery, history through
 * a peer that caps its answers (pagination), layers 2 and 3 with their tag
 * variants and descendants, live delivery, a comment that arrives before
 * its issue, refusal of announcements that do not list us, and the
 * subscription cap seen from the peer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x55

#define TMO	5000
#define NISSUES 45

static struct relayproc *peer, *b;
static char		 peer_url[128];
static char		 coord[200];
static uint8_t		 owner_sk[SECKEY_LEN];
static char		 tmpdir[256];

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return tuser_event(KEYS, who, at, kind, tags, c);
}

static void
test_bootstrap_announcement_is_released_and_history_synced(void)
{
	struct event *ann, *foreign, *issues[NISSUES], *c1, *c2, *c3, *r1;
	struct event *all[6];
	struct wsc   *ws;
	char	      npub[NIP19_KEY_BUFSZ], tags[1024], f[800], dir[512];
	uint8_t	      pk[PUBKEY_LEN];
	int	      i, n;
	int64_t	      t = time(NULL) - 3600;

	tuser_sk(KEYS, 1, owner_sk);
	event_pubkey_of(owner_sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"synced\"],[\"clone\",\"http://"
	    "%s/%s/synced.git\"],[\"relays\",\"ws://%s\",\"%s\"]]",
	    relayproc_domain(b), npub, relayproc_domain(b), peer_url);
	ann = ev(1, t, 30617, tags, "");
	snprintf(coord, sizeof(coord), "30617:%s:synced", ann->pubkey_hex);
	/* Lists only the peer: B must not take it. */
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"foreign\"],[\"clone\","
	    "\"http://elsewhere.example/x.git\"],[\"relays\",\"%s\"]]",
	    peer_url);
	foreign = ev(2, t, 30617, tags, "");
	/* History: more issues than the peer answers per REQ, many in one
	 * second, each tag variant; comments, a reaction, a quote. */
	for (i = 0; i < NISSUES; i++) {
		const char *v = i % 3 == 0 ? "a" : i % 3 == 1 ? "A" : "q";

		snprintf(tags, sizeof(tags), "[[\"%s\",\"%s\"]]", v, coord);
		issues[i] = ev(10 + i, t + 10 + i / 9, 1621, tags, "issue");
	}
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"K\",\"1621\"]]",
	    issues[0]->id_hex);
	c1 = ev(3, t + 100, 1111, tags, "comment E");
	/* Roots are the issues whose "a" names the repository (GRASP-03);
	 * issues[0], [3], [6] use "a". */
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", issues[3]->id_hex);
	c2 = ev(4, t + 101, 1, tags, "reply e");
	snprintf(tags, sizeof(tags), "[[\"q\",\"%s\"]]", issues[6]->id_hex);
	c3 = ev(5, t + 102, 1, tags, "quote q");
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", c1->id_hex);
	r1 = ev(6, t + 103, 7, tags, "+"); /* only its parent */

	all[0] = ann;
	all[1] = foreign;
	all[2] = c1;
	all[3] = c2;
	all[4] = c3;
	all[5] = r1;
	T_ASSERT(peerctl_config(peer, "{\"max_results\":10}") == 0);
	T_ASSERT(peerctl_seed(peer, all, TINT_N(all)) == 0);
	T_ASSERT(peerctl_seed(peer, issues, NISSUES) == 0);

	/* Bootstrap L1 brings the announcement to B; it waits in
	 * purgatory until git data arrives, which we push. */
	ws = wsc_connect(relayproc_host(b), relayproc_port(b), "/", TMO);
	T_ASSERT(ws != NULL);
	for (i = 0; i < 50; i++) {
		usleep(200000);
		snprintf(dir, sizeof(dir), "%s/repo%d", tmpdir, i);
		if (gt_release(ws, owner_sk, relayproc_domain(b), "synced", dir,
			NULL) == 0)
			break;
	}
	T_ASSERT(i < 50);
	wsc_close(ws);
	T_EQ_INT(client_wait_id(b, ann, 10), 1);

	/* Layer 2 through the capped peer: every issue, none twice. */
	snprintf(f, sizeof(f),
	    "[{\"#a\":[\"%s\"]},{\"#A\":[\"%s\"]},"
	    "{\"#q\":[\"%s\"]}]",
	    coord, coord, coord);
	n = client_wait_count(b, f, NISSUES, 20);
	T_EQ_INT(n, NISSUES);
	/* Layer 3: comment, reply, quote, and the reaction that names only
	 * its parent comment. */
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\",\"%s\",\"%s\",\"%s\"]}",
	    c1->id_hex, c2->id_hex, c3->id_hex, r1->id_hex);
	if (client_wait_count(b, f, 4, 15) != 4) {
		struct event *l3[] = { c1, c2, c3, r1 };
		for (i = 0; i < 4; i++) {
			printf("# layer 3 event %d (kind %u): %d on B\n", i,
			    l3[i]->kind, client_has_id(b, l3[i]));
		}
		T_CHECK(0);
	}
	T_EQ_INT(client_has_id(b, foreign), 0);

	tuser_events_destroy(all, TINT_N(all));
	tuser_events_destroy(issues, NISSUES);
}

static void
test_live_layers_and_comment_before_issue(void)
{
	struct event *issue, *comment, *late_issue, *early, *evs[4];
	char	      tags[512], f[256];

	T_ASSERT(peerctl_config(peer, "{\"max_results\":0}") == 0);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	issue = ev(60, time(NULL), 1621, tags, "live issue");
	T_ASSERT(peerctl_seed(peer, &issue, 1) == 0);
	T_EQ_INT(client_wait_id(b, issue, 10), 1);
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", issue->id_hex);
	comment = ev(61, time(NULL), 1111, tags, "live comment");
	T_ASSERT(peerctl_seed(peer, &comment, 1) == 0);
	T_EQ_INT(client_wait_id(b, comment, 10), 1);

	/* The comment reaches the peer before its issue exists. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	late_issue = ev(62, time(NULL), 1621, tags, "late issue");
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", late_issue->id_hex);
	early = ev(63, time(NULL), 1111, tags, "early comment");
	T_ASSERT(peerctl_seed(peer, &early, 1) == 0);
	usleep(500000);
	T_ASSERT(peerctl_seed(peer, &late_issue, 1) == 0);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\",\"%s\"]}", late_issue->id_hex,
	    early->id_hex);
	evs[0] = issue;
	evs[1] = comment;
	evs[2] = late_issue;
	evs[3] = early;
	T_EQ_INT(client_wait_count(b, f, 2, 15), 2);
	tuser_events_destroy(evs, TINT_N(evs));
}

static void
test_peer_saw_packed_filters_under_the_cap(void)
{
	char	   *log = peerctl_log_text(peer);
	const char *p;
	int	    maxsubs = -1;

	T_ASSERT(log != NULL);
	T_CHECK(strstr(log, "\"#a\"") != NULL);
	T_CHECK(strstr(log, "\"#E\"") != NULL);
	T_CHECK(strstr(log, "\"#d\"") != NULL);
	T_CHECK(strstr(log, "\"until\"") != NULL); /* it paginated */
	if ((p = strstr(log, "\"max_concurrent_subs\":")) != NULL)
		maxsubs = atoi(p + 22);
	T_CHECK(maxsubs > 0 && maxsubs <= 10);
	free(log);
}

int
main(void)
{
	struct relayproc **peers[] = { &peer };
	const char	  *keys[] = { "NGIT_SYNC_BOOTSTRAP_RELAY_URL" };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tint_home(tmpdir, sizeof(tmpdir), "graspd-sync", "sync_setup") ==
		-1 ||
	    tint_peers_start(peers, TINT_N(peers), "sync_setup") == -1)
		return 1;
	snprintf(peer_url, sizeof(peer_url), "ws://127.0.0.1:%d",
	    relayproc_port(peer));
	if ((b = tint_sync_graspd(keys, &peer, 1, NULL, "sync_setup")) ==
	    NULL) {
		relayproc_free(peer);
		return 1;
	}
	T_RUN(test_bootstrap_announcement_is_released_and_history_synced);
	T_RUN(test_live_layers_and_comment_before_issue);
	T_RUN(test_peer_saw_packed_filters_under_the_cap);
	if (t_fail)
		relayproc_dump_log(b, 60);
	relayproc_free(b);
	relayproc_free(peer);
	tdir_remove(tmpdir);
	return t_done();
}
