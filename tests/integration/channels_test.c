/*
 * channels_test.c: relayd's nanomsg channels as the other roles use them:
 * ingest runs fetched events through the same pipeline as client EVENTs,
 * accepted announces every stored event, stats reach /metrics, control
 * answers, discoveryd's GRASP-03 fallback marks (PLUSMARK on ingest) are
 * persisted and survive a restart, and a malformed message from a
 * "sibling" (also a malformed PLUSMARK) ends relayd (exit 1, to be
 * restarted) instead of being trusted.
 */
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/pubsub.h>
#include <nanomsg/reqrep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "hmap.h"
#include "msg.h"
#include "nostr.h"
#include "plusmark.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define TMO 5000

static struct relayproc *rp;

static int
open_chan(int proto, const char *name)
{
	char run[512], ep[600];
	int  s, tmo = TMO;

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(rp));
	if (strncmp(name, "control-", 8) == 0)
		chan_control_endpoint(run, role_from_name(name + 8), ep,
		    sizeof(ep));
	else
		chan_endpoint(run, name, ep, sizeof(ep));
	if ((s = chan_open(proto, ep, 0)) < 0)
		return -1;
	nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof(tmo));
	nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo, sizeof(tmo));
	return s;
}

static struct event *
ev10317(int n, const char *g)
{
	uint8_t sk[SECKEY_LEN];
	char	tags[128];

	memset(sk, 0x22, SECKEY_LEN);
	sk[31] = (uint8_t)n;
	snprintf(tags, sizeof(tags), "[[\"g\",\"%s\"]]", g);
	return event_new_signed(sk, time(NULL), 10317, tags, "");
}

static int
stored(const char *id)
{
	struct wsc *ws =
	    wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
	char   f[128], **evs = NULL;
	size_t n = 0;
	int    rc;

	if (ws == NULL)
		return -1;
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id);
	rc = nostr_req(ws, "q", f, TMO, &evs, &n, NULL);
	nostr_events_free(evs);
	wsc_close(ws);
	return rc == 0 ? (int)n : -1;
}

static char *
metrics(void)
{
	int   status = 0;
	char *hdrs = NULL, *body = NULL;

	if (http_get(relayproc_host(rp), relayproc_port(rp), "/metrics", NULL,
		TMO, &status, &hdrs, &body) != 0 ||
	    status != 200) {
		free(hdrs);
		free(body);
		return NULL;
	}
	free(hdrs);
	return body;
}

/* Waits (bounded) until pred() holds. */
static int
eventually(int (*pred)(const void *), const void *arg)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (pred(arg))
			return 1;
		usleep(100000);
	}
	return 0;
}

static int
is_stored(const void *id)
{
	return stored(id) == 1;
}

static int
metrics_has(const void *needle)
{
	char *m = metrics();
	int   r = m && strstr(m, needle) != NULL;

	free(m);
	return r;
}

static void
test_ingest_uses_the_client_pipeline(void)
{
	int	      s = open_chan(NN_PUSH, CHAN_INGEST);
	struct event *good, *forged, *unrelated;
	struct buf    b = BUF_INIT;
	uint8_t	      sk[SECKEY_LEN];
	char	     *j;

	T_ASSERT(s >= 0);
	good = ev10317(1, "ws://good.example");
	forged = ev10317(2, "ws://forged.example");
	forged->sig[3] ^= 0x40;
	memset(sk, 0x33, SECKEY_LEN);
	unrelated = event_new_signed(sk, time(NULL), 1, "[]", "orphan");
	T_ASSERT(good && forged && unrelated);
	/* Re-serialize the forged one with its broken signature. */
	j = strdup(forged->json);
	hex_encode(forged->sig, EVENT_SIG_LEN, strstr(j, "\"sig\":\"") + 7);
	j[strlen(j)] = '"'; /* hex_encode's NUL replaced the quote */

	msg_ingest_encode(&b, ROLE_SYNCD, "wss://peer.example", good->json,
	    good->json_len);
	T_ASSERT(msg_send(s, MSG_INGEST, b.b_data, b.b_len, 0) == 0);
	buf_reset(&b);
	msg_ingest_encode(&b, ROLE_SYNCD, "wss://peer.example", j, strlen(j));
	T_ASSERT(msg_send(s, MSG_INGEST, b.b_data, b.b_len, 0) == 0);
	buf_reset(&b);
	msg_ingest_encode(&b, ROLE_HISTORYD, "wss://x.example", unrelated->json,
	    unrelated->json_len);
	T_ASSERT(msg_send(s, MSG_INGEST, b.b_data, b.b_len, 0) == 0);
	buf_free(&b);

	T_CHECK(eventually(is_stored, good->id_hex));
	T_CHECK(eventually(metrics_has,
	    "graspd_relay_ingested_total{role=\"relayd\",origin=\"historyd\"}"
	    " 1"));
	T_EQ_INT(stored(forged->id_hex), 0);
	T_EQ_INT(stored(unrelated->id_hex), 0);
	T_CHECK(metrics_has("graspd_relay_ingested_total{role=\"relayd\","
			    "origin=\"syncd\"} 2"));
	/* Counted once the verify thread and the policy are done with
	 * them, which can be after the last one was received. */
	T_CHECK(eventually(metrics_has,
	    "graspd_relay_events_total{role="
	    "\"relayd\",result=\"invalid\"} 1"));
	T_CHECK(eventually(metrics_has,
	    "graspd_relay_events_total{role="
	    "\"relayd\",result=\"refused\"} 1"));
	free(j);
	event_destroy(good);
	event_destroy(forged);
	event_destroy(unrelated);
	chan_close(s);
}

static void
test_accepted_feed_announces_stored_events(void)
{
	int	      sub = open_chan(NN_SUB, CHAN_ACCEPTED);
	struct wsc   *ws;
	struct event *ev;
	struct msg    m;
	int	      ok = 0, found = 0, i;

	T_ASSERT(sub >= 0);
	usleep(200000); /* let the subscription reach relayd */
	ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
	T_ASSERT(ws != NULL);
	ev = ev10317(5, "ws://feed.example");
	T_ASSERT(nostr_publish(ws, ev, TMO, &ok, NULL) == 0 && ok);
	for (i = 0; i < 20 && !found; i++) {
		struct msg_accepted ma;
		size_t		    j, n;

		if (msg_recv(sub, &m, 0) != 1)
			break;
		T_EQ_INT(m.m_type, MSG_ACCEPTED);
		/* A commit's notices, in one message the roles' feed takes. */
		n = msg_accepted_count(&m);
		T_CHECK(n > 0);
		for (j = 0; j < n; j++) {
			memcpy(&ma, m.m_data + j * sizeof(ma), sizeof(ma));
			if (memcmp(ma.ma_id, ev->id, EVENT_ID_LEN) == 0) {
				found = 1;
				T_CHECK(ma.ma_seq > 0);
				T_EQ_INT(ma.ma_kind, 10317);
			}
		}
		msg_free(&m);
	}
	T_CHECK(found);
	event_destroy(ev);
	wsc_close(ws);
	chan_close(sub);
}

/*
 * A burst's notices: those relayd holds for RELAY_NOTICE_GAP_MS after
 * the last message still go out, on its timer, with no commit after
 * them.
 */
static void
test_accepted_notices_of_a_burst_all_go_out(void)
{
	int	      sub = open_chan(NN_SUB, CHAN_ACCEPTED);
	struct wsc   *ws;
	struct event *ev[5];
	struct msg    m;
	int	      ok = 0, seen[5] = { 0 }, nseen = 0, i;

	T_ASSERT(sub >= 0);
	usleep(200000); /* let the subscription reach relayd */
	ws = wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
	T_ASSERT(ws != NULL);
	for (i = 0; i < 5; i++) {
		ev[i] = ev10317(40 + i, "ws://burst.example");
		T_ASSERT(ev[i] != NULL);
		T_ASSERT(nostr_publish(ws, ev[i], TMO, &ok, NULL) == 0 && ok);
	}
	while (nseen < 5 && msg_recv(sub, &m, 0) == 1) {
		struct msg_accepted ma;
		size_t		    j, n = msg_accepted_count(&m);

		T_EQ_INT(m.m_type, MSG_ACCEPTED);
		for (j = 0; j < n; j++) {
			memcpy(&ma, m.m_data + j * sizeof(ma), sizeof(ma));
			for (i = 0; i < 5; i++)
				if (!seen[i] &&
				    memcmp(ma.ma_id, ev[i]->id, EVENT_ID_LEN) ==
					0) {
					seen[i] = 1;
					nseen++;
				}
		}
		msg_free(&m);
	}
	T_EQ_INT(nseen, 5);
	for (i = 0; i < 5; i++)
		event_destroy(ev[i]);
	wsc_close(ws);
	chan_close(sub);
}

static void
test_stats_of_roles_reach_metrics(void)
{
	int	    s = open_chan(NN_PUSH, CHAN_STATS);
	const char *snap =
	    "{\"role\":\"syncd\",\"pid\":1,\"metrics\":["
	    "[\"graspd_syncd_relays_tracked\",3],[\"graspd_feed_seq{x=\\\"y\\\"}"
	    "\",7]]}";

	T_ASSERT(s >= 0);
	T_ASSERT(msg_send(s, MSG_STATS, snap, strlen(snap), 0) == 0);
	T_CHECK(eventually(metrics_has,
	    "graspd_syncd_relays_tracked{role=\"syncd\"} 3"));
	T_CHECK(metrics_has("graspd_feed_seq{role=\"syncd\",x=\"y\"} 7"));
	chan_close(s);
}

static char *
control(const char *req)
{
	int	   s = open_chan(NN_REQ, "control-relayd");
	struct msg m;
	char	  *out = NULL;

	if (s < 0)
		return NULL;
	if (msg_send(s, MSG_CONTROL, req, strlen(req), 0) == 0 &&
	    msg_recv(s, &m, 0) == 1) {
		if (m.m_type == MSG_CONTROL_REPLY &&
		    (out = malloc(m.m_len + 1)) != NULL) {
			memcpy(out, m.m_data, m.m_len);
			out[m.m_len] = '\0';
		}
		msg_free(&m);
	}
	chan_close(s);
	return out;
}

static void
test_control_answers(void)
{
	/* A request and what its reply holds (both, when there are two). */
	static const struct {
		const char *req;
		const char *want, *also;
	} cases[] = {
		{ "{\"cmd\":\"status\"}", "\"ok\":true",
		    "\"role\":\"relayd\"" },
		{ "{\"cmd\":\"show\"}", "\"connections_open\"", NULL },
		{ "{\"cmd\":\"stats\"}", "graspd_relay_events_stored", NULL },
		{ "{\"cmd\":\"log\",\"args\":[\"verbose\"]}", "\"ok\":true",
		    NULL },
		{ "{\"cmd\":\"frobnicate\"}", "\"ok\":false",
		    "unknown command" },
		{ "not json", "\"ok\":false", NULL },
	};
	char  *r;
	size_t i;
	int    ok;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = control(cases[i].req);
		T_ASSERT(r != NULL);
		ok = strstr(r, cases[i].want) != NULL &&
		    (cases[i].also == NULL || strstr(r, cases[i].also));
		if (!ok)
			printf("# %s: %s\n", cases[i].req, r);
		T_CHECK(ok);
		free(r);
	}
}

static const uint8_t mark_pk[PUBKEY_LEN] = { 0x7e, 0x57, 0x01 };

/* The marks in relayd's database: their number, and *gen, *has (mark_pk
 * marked); -1 if the database cannot be read. */
static int
marks_read(int64_t *gen, int *has)
{
	char	    path[600], err[256];
	struct hmap set = HMAP_INIT;
	sqlite3	   *db;
	int	    n;

	snprintf(path, sizeof(path), "%s/relay/graspd.db", relayproc_dir(rp));
	if (db_open(path, DB_READONLY, &db, err, sizeof(err)) == -1) {
		printf("# %s\n", err);
		return -1;
	}
	n = plusmark_load(db, &set, gen);
	*has = hmap_get(&set, mark_pk, PUBKEY_LEN) != NULL;
	hmap_free(&set);
	db_close(db);
	return n;
}

static int
send_mark(int s, int set)
{
	uint8_t b[MSG_PLUSMARK_LEN];

	msg_plusmark_encode(b, mark_pk, set);
	return msg_send(s, MSG_PLUSMARK, b, sizeof(b), 0);
}

/* Waits (bounded) until the marks read back as wanted. */
static int
marks_become(int want_n, int want_has, int64_t *gen)
{
	int i, has = -1, n = -1;

	for (i = 0; i < 50; i++) {
		if ((n = marks_read(gen, &has)) == want_n && has == want_has)
			return 1;
		usleep(100000);
	}
	printf("# marks: %d, has %d\n", n, has);
	return 0;
}

static void
test_plus_marks_are_persisted(void)
{
	int	s = open_chan(NN_PUSH, CHAN_INGEST);
	int64_t g0 = -1, g1 = -1, g2 = -1, g3 = -1;
	int	has;

	T_ASSERT(s >= 0);
	T_EQ_INT(marks_read(&g0, &has), 0);
	T_EQ_INT(has, 0);
	T_ASSERT(send_mark(s, 1) == 0);
	T_ASSERT(marks_become(1, 1, &g1));
	T_CHECK(g1 > g0);
	/* Marking a marked author changes nothing, not even the
	 * generation. */
	T_ASSERT(send_mark(s, 1) == 0);
	T_ASSERT(send_mark(s, 0) == 0);
	T_ASSERT(marks_become(0, 0, &g2));
	T_EQ_INT(g2, g1 + 1);
	T_ASSERT(send_mark(s, 1) == 0);
	T_ASSERT(marks_become(1, 1, &g3));
	T_EQ_INT(g3, g2 + 1);
	chan_close(s);
}

static void
test_malformed_plus_mark_ends_relayd(void)
{
	int	s = open_chan(NN_PUSH, CHAN_INGEST), st, has = 0;
	uint8_t b[8];
	int64_t gen;

	T_ASSERT(s >= 0);
	memset(b, 0x11, sizeof(b));
	T_ASSERT(msg_send(s, MSG_PLUSMARK, b, sizeof(b), 0) == 0);
	st = relayproc_wait(rp, TMO);
	T_EQ_INT(st, 1);
	chan_close(s);
	/* It comes back, and the mark of the previous test is still
	 * there. */
	T_ASSERT(relayproc_restart(rp) == 0);
	T_EQ_INT(marks_read(&gen, &has), 1);
	T_EQ_INT(has, 1);
}

static void
test_malformed_sibling_message_ends_relayd(void)
{
	int   s = open_chan(NN_PUSH, CHAN_INGEST), st;
	char  junk[32];
	void *nb;

	T_ASSERT(s >= 0);
	memset(junk, 0x5a, sizeof(junk));
	nb = nn_allocmsg(sizeof(junk), 0);
	memcpy(nb, junk, sizeof(junk));
	T_ASSERT(nn_send(s, &nb, NN_MSG, 0) >= 0);
	st = relayproc_wait(rp, TMO);
	T_EQ_INT(st, 1);
	chan_close(s);
	/* It comes back with everything it had acknowledged. */
	T_ASSERT(relayproc_restart(rp) == 0);
	T_EQ_INT(stored("0000000000000000000000000000000000000000000000000000"
			"000000000000") >= 0,
	    1);
}

static const struct t_case cases[] = {
	T_CASE(test_ingest_uses_the_client_pipeline),
	T_CASE(test_accepted_feed_announces_stored_events),
	T_CASE(test_accepted_notices_of_a_burst_all_go_out),
	T_CASE(test_stats_of_roles_reach_metrics),
	T_CASE(test_control_answers),
	T_CASE(test_plus_marks_are_persisted),
	T_CASE(test_malformed_plus_mark_ends_relayd),
	T_CASE(test_malformed_sibling_message_ends_relayd),
};

T_MAIN_FIXTURE(cases, &relayproc_relayd_fixture, &rp, 0)
