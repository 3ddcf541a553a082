/*
 * discovery_test.c: GRASP-03 identity discovery (discoveryd) and relayd's
 * identity write policy inside a real graspd, against scriptable peer
 * relays on loopback playing the user index and the authors' outboxes:
 * an eligible author's profile and relay list fetched from the index and
 * stored, newer lists followed through their outboxes, a non-eligible
 * author refused, fallback marking, the 24 h / 5 min cadence (NGIT_TEST
 * shrinks it to 24 min / 5 s), batches of at most 100 authors with one in
 * flight, a hostile list bounded to four relays per purpose, ownership
 * rebuilt from the database before any network request, a retained list
 * without a usable outbox asked at the index, an exclusively discovery
 * connection retiring once drained, and the off switches (GRASP-03 off;
 * GRASP-02 sync off, which turns the overlay off too).  NIP-11
 * advertises GRASP-02 and GRASP-03 as configured, and GRASP-03 not while
 * syncd is stopped on request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "buf.h"
#include "client.h"
#include "ctl.h"
#include "db.h"
#include "eligible.h"
#include "event.h"
#include "gitutil.h"
#include "hmap.h"
#include "msg.h"
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
#define KEYS 0x66

#define TMO	     5000
#define NAUTHORS     150 /* eligible issue authors, > 100 */
#define NFOUND	     75	 /* of them, with a profile on the index */
#define NHOSTILE     50	 /* relays in the hostile list */
#define WHO_OWNER    1
#define WHO_STRANGER 2
#define WHO_MAINT    3
#define WHO_NOOUT    4 /* a relay list without a usable outbox */
#define WHO_HOSTILE  90
#define WHO_AUTHOR0  100
#define WHO_LEAVER   (WHO_AUTHOR0 + NAUTHORS + 1)

static struct relayproc *idx, *ob2, *ob3, *idx4, *b, *c;
static char		 tmpdir[256];
static char		 coord[200];
static int64_t		 t0;
static struct event	*l1, *l2, *l3, *oprof;

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return tuser_event(KEYS, who, at, kind, tags, c);
}

/* ------------------------------------------------------------------ */
/* The peers' HTTP control API.                                        */

/* One identity query a peer saw: when, which authors. */
struct ireq {
	double at;
	cJSON *authors; /* borrowed from the log */
};

/*
 * The peer's REQs whose single filter asks kinds [0,10002] by authors,
 * from the from-th REQ of its log on; *log_out keeps them alive.
 */
static size_t
identity_reqs(struct relayproc *p, int from, struct ireq *out, size_t max,
    cJSON **log_out)
{
	cJSON *log = peerctl_log(p), *r, *f, *k;
	size_t n = 0;
	int    i = 0;

	*log_out = log;
	if (log == NULL)
		return 0;
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs")) {
		if (i++ < from)
			continue;
		f = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "filters"), 0);
		k = cJSON_GetObjectItem(f, "kinds");
		if (cJSON_GetArraySize(k) != 2 ||
		    cJSON_GetArrayItem(k, 0)->valuedouble != 0 ||
		    cJSON_GetArrayItem(k, 1)->valuedouble != 10002 || n == max)
			continue;
		out[n].at = cJSON_GetObjectItem(r, "at_ms")->valuedouble;
		out[n].authors = cJSON_GetObjectItem(f, "authors");
		n++;
	}
	return n;
}

static int
has_author(const struct ireq *q, const char *hex)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, q->authors)
		if (cJSON_IsString(a) && strcmp(a->valuestring, hex) == 0)
			return 1;
	return 0;
}

static int
cmp_ireq(const void *a, const void *b)
{
	const struct ireq *x = *(struct ireq *const *)a;
	const struct ireq *y = *(struct ireq *const *)b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* REQs of the peer naming hex, their times in at[] (at most max). */
static int
asked(struct relayproc *p, const char *hex, double *at, int max)
{
	struct ireq q[512];
	cJSON	   *log;
	size_t	    n, i;
	int	    k = 0;

	n = identity_reqs(p, 0, q, 512, &log);
	for (i = 0; i < n; i++)
		if (has_author(&q[i], hex)) {
			if (k < max)
				at[k] = q[i].at;
			k++;
		}
	cJSON_Delete(log);
	return k;
}

/* ------------------------------------------------------------------ */
/* graspd: clients, control sockets, graspctl.                         */

/* 1 while discoveryd answers on its control socket (within 200 ms). */
static int
disc_answers(struct relayproc *p)
{
	char   run[512];
	cJSON *rep;

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(p));
	rep = ctl_role(run, ROLE_DISCOVERYD, MSG_CONTROL, "{\"cmd\":\"show\"}",
	    200);
	cJSON_Delete(rep);
	return rep != NULL;
}

static cJSON *
author_in(const cJSON *view, const char *hex)
{
	cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItem(view, "authors")) {
		const cJSON *pk = cJSON_GetObjectItem(a, "pubkey");

		if (cJSON_IsString(pk) && strcmp(pk->valuestring, hex) == 0)
			return a;
	}
	return NULL;
}

/* graspctl -r <run> args; 0 on success. */
static int
graspctl(struct relayproc *p, const char *args)
{
	char	    cmd[1200];
	const char *bin = getenv("GRASPD_BIN") ? getenv("GRASPD_BIN") : "bin";

	snprintf(cmd, sizeof(cmd), "'%s/graspctl' -r '%s/run' %s >/dev/null",
	    bin, relayproc_dir(p), args);
	return system(cmd) == 0 ? 0 : -1;
}

static int
nip11_has(struct relayproc *p, const char *grasp)
{
	char  *h = NULL, *body = NULL;
	cJSON *doc, *g;
	int    status = 0, found = 0;

	if (http_get(relayproc_host(p), relayproc_port(p), "/",
		"Accept: application/nostr+json\r\n", TMO, &status, &h,
		&body) != 0 ||
	    status != 200) {
		free(h);
		free(body);
		return -1;
	}
	doc = cJSON_Parse(body);
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(doc, "supported_grasps"))
		if (cJSON_IsString(g) && strcmp(g->valuestring, grasp) == 0)
			found = 1;
	cJSON_Delete(doc);
	free(h);
	free(body);
	return found;
}

/*
 * Publishes owner's announcement of d on p (maintainers: maint_hex or
 * NULL) and makes it served (state + push); returns 0 once served.
 */
static int
host_repo(struct relayproc *p, int owner, const char *d, const char *maint_hex)
{
	return tint_host_repo(p, KEYS, owner, t0, d, maint_hex, tmpdir);
}

static struct event *
issue_by(int who, const char *title)
{
	char tags[600];

	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"],[\"subject\",\"%s\"]]",
	    coord, title);
	return ev(who, t0 + 10, 1621, tags, title);
}

/* ------------------------------------------------------------------ */

static void
test_index_then_outboxes_bring_the_newest_identity(void)
{
	struct event *xprof, *is, *mine[3];
	char tags[512], f[300], oh[PUBKEY_HEX_LEN + 1], mh[PUBKEY_HEX_LEN + 1],
	    xh[PUBKEY_HEX_LEN + 1], msg[256];
	cJSON *v = NULL, *a, *ob;
	int    i;

	tuser_hex(KEYS, WHO_OWNER, oh);
	tuser_hex(KEYS, WHO_MAINT, mh);
	tuser_hex(KEYS, WHO_STRANGER, xh);
	snprintf(coord, sizeof(coord), "30617:%s:ident", oh);
	/* The index has the owner's profile and first list, which names
	 * ob2 as its outbox; ob2 has a newer list naming ob3; ob3 the
	 * newest, naming both (nothing new: the round ends there). */
	oprof = ev(WHO_OWNER, t0 - 500, 0, "[]", "{\"name\":\"owner\"}");
	snprintf(tags, sizeof(tags),
	    "[[\"r\",\"%s\",\"write\"],[\"r\","
	    "\"wss://inbox.example\",\"read\"]]",
	    relayproc_bind_url(ob2));
	l1 = ev(WHO_OWNER, t0 - 300, 10002, tags, "");
	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"write\"]]",
	    relayproc_bind_url(ob3));
	l2 = ev(WHO_OWNER, t0 - 200, 10002, tags, "");
	snprintf(tags, sizeof(tags),
	    "[[\"r\",\"%s\"],[\"r\",\"%s\","
	    "\"write\"],[\"r\",\"wss://inbox.example\",\"read\"]]",
	    relayproc_bind_url(ob3), relayproc_bind_url(ob2));
	l3 = ev(WHO_OWNER, t0 - 100, 10002, tags, "");
	xprof = ev(WHO_STRANGER, t0 - 500, 0, "[]", "{\"name\":\"x\"}");
	mine[0] = oprof;
	mine[1] = l1;
	mine[2] = xprof;
	T_ASSERT(peerctl_seed(idx, mine, 3) == 0);
	T_ASSERT(peerctl_seed(ob2, &l2, 1) == 0);
	T_ASSERT(peerctl_seed(ob3, &l3, 1) == 0);

	/* Owner and maintainer become eligible once the repository is
	 * served; the hostile-list author through an issue. */
	T_ASSERT(host_repo(b, WHO_OWNER, "ident", mh) == 0);
	is = issue_by(WHO_HOSTILE, "hostile");
	T_EQ_INT(client_publish(b, is, msg, sizeof(msg)), 1);
	event_destroy(is);

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\",\"%s\"]}", oprof->id_hex,
	    l3->id_hex);
	T_EQ_INT(client_wait_count(b, f, 2, 20), 2);
	/* Each source was asked, the index first. */
	T_CHECK(asked(idx, oh, NULL, 0) >= 1);
	T_CHECK(asked(ob2, oh, NULL, 0) >= 1);
	T_CHECK(asked(ob3, oh, NULL, 0) >= 1);
	/* The stranger is not eligible: never asked, never stored. */
	T_EQ_INT(asked(idx, xh, NULL, 0), 0);
	snprintf(f, sizeof(f), "{\"authors\":[\"%s\"]}", xh);
	T_EQ_INT(client_count(b, f), 0);

	/* The view: the newest list's mailboxes; the maintainer, whom the
	 * index answered without a list, is marked for fallback. */
	for (i = 0; i < 50; i++) {
		cJSON_Delete(v);
		v = ctl_role_view(b, ROLE_DISCOVERYD, "discovery", 5);
		a = author_in(v, mh);
		/* ... and discoveryd has taken the newest list from its
		 * feed (relayd stored it already). */
		if (a != NULL && ctl_bool(a, "fallback") == 1 &&
		    (a = author_in(v, oh)) != NULL &&
		    ctl_num(cJSON_GetObjectItem(a, "relay_list"),
			"created_at") == l3->created_at)
			break;
		usleep(100000);
	}
	T_ASSERT(v != NULL);
	T_ASSERT((a = author_in(v, mh)) != NULL);
	T_EQ_INT(ctl_bool(a, "fallback"), 1);
	T_CHECK(cJSON_IsNull(cJSON_GetObjectItem(a, "relay_list")));
	T_ASSERT((a = author_in(v, oh)) != NULL);
	T_EQ_INT(ctl_bool(a, "fallback"), 0);
	T_EQ_INT(ctl_bool(a, "profile"), 1);
	T_EQ_STR(cJSON_GetObjectItem(a, "last_result")->valuestring, "found");
	T_EQ_INT(ctl_num(cJSON_GetObjectItem(a, "relay_list"), "created_at"),
	    l3->created_at);
	ob =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(a, "relay_list"), "outbox");
	T_EQ_INT(cJSON_GetArraySize(ob), 2);
	T_EQ_STR(cJSON_GetArrayItem(ob, 0)->valuestring,
	    relayproc_bind_url(ob3));
	T_EQ_STR(cJSON_GetArrayItem(ob, 1)->valuestring,
	    relayproc_bind_url(ob2));
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(
		     cJSON_GetObjectItem(a, "relay_list"), "inbox")),
	    2);
	/* 24 h under NGIT_TEST is 24 min. */
	T_CHECK(ctl_num(a, "next_refresh_in") > 600);
	T_CHECK(ctl_num(v, "eligible_authors") == 3);
	cJSON_Delete(v);
	event_destroy(xprof);
}

static void
test_identity_events_only_from_eligible_authors(void)
{
	struct event *e;
	char	      msg[256];

	e = ev(WHO_STRANGER, time(NULL), 0, "[]", "{\"name\":\"x\"}");
	T_EQ_INT(client_publish(b, e, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg,
		    "blocked: profiles and relay lists are accepted "
		    "only from",
		    48) == 0);
	event_destroy(e);
	e = ev(WHO_STRANGER, time(NULL), 10002, "[[\"r\",\"wss://a.example\"]]",
	    "");
	T_EQ_INT(client_publish(b, e, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0);
	event_destroy(e);
	/* The declared maintainer is eligible: its own profile is taken. */
	e = ev(WHO_MAINT, time(NULL), 0, "[]", "{\"name\":\"maint\"}");
	T_EQ_INT(client_publish(b, e, msg, sizeof(msg)), 1);
	event_destroy(e);
}

static void
test_missing_author_retried_after_five_minutes_found_one_not(void)
{
	char   mh[PUBKEY_HEX_LEN + 1], oh[PUBKEY_HEX_LEN + 1];
	double at[8];
	int    n = 0, i;

	tuser_hex(KEYS, WHO_MAINT, mh);
	tuser_hex(KEYS, WHO_OWNER, oh);
	/* 5 min under NGIT_TEST: 5 s. */
	for (i = 0; i < 100 && n < 2; i++) {
		n = asked(idx, mh, at, 8);
		if (n < 2)
			usleep(100000);
	}
	T_ASSERT(n >= 2);
	printf("# maintainer asked again after %.0f ms\n", at[1] - at[0]);
	T_CHECK(at[1] - at[0] >= 4500 && at[1] - at[0] <= 8000);
	/* The owner, found, is not asked the index again (and, with a
	 * list stored, never will be). */
	T_EQ_INT(asked(idx, oh, NULL, 0), 1);
}

static void
test_batches_of_100_one_in_flight(void)
{
	struct event	 *iss[NAUTHORS], *prof[NFOUND];
	struct ireq	  q[3][512];
	struct relayproc *peers[3] = { idx, ob2, ob3 };
	cJSON		 *logs[3] = { NULL, NULL, NULL };
	struct wsc	 *ws;
	char		  hex[PUBKEY_HEX_LEN + 1], msg[256], *f;
	struct buf	  fb = BUF_INIT;
	size_t		  nq[3], i, j, k, p, covered;
	int		  from[3], ok, overlap = 0, over100 = 0, nidx = 0;
	struct ireq	 *all[1536];
	size_t		  nall = 0;

	/* Discovery paused while the authors arrive, so that one
	 * reconciliation sees them all due. */
	T_ASSERT(graspctl(b, "stop discoveryd") == 0);
	for (i = 0; i < 50 && disc_answers(b); i++)
		usleep(100000);
	ws = wsc_connect(relayproc_host(b), relayproc_port(b), "/", TMO);
	T_ASSERT(ws != NULL);
	for (i = 0; i < NAUTHORS; i++) {
		snprintf(msg, sizeof(msg), "issue %zu", i);
		iss[i] = issue_by(WHO_AUTHOR0 + (int)i, msg);
		T_ASSERT(nostr_publish(ws, iss[i], TMO, &ok, NULL) == 0 && ok);
	}
	wsc_close(ws);
	for (i = 0; i < NFOUND; i++)
		prof[i] = ev(WHO_AUTHOR0 + (int)i, t0 - 50, 0, "[]", "{}");
	T_ASSERT(peerctl_seed(idx, prof, NFOUND) == 0);
	for (p = 0; p < 3; p++) {
		T_ASSERT(
		    peerctl_config(peers[p], "{\"eose_delay_ms\":300}") == 0);
		from[p] = peerctl_nreqs(peers[p]);
	}
	T_ASSERT(graspctl(b, "start discoveryd") == 0);

	/* Every author asked of the index. */
	for (i = 0; i < 150; i++) {
		cJSON_Delete(logs[0]);
		nq[0] = identity_reqs(idx, from[0], q[0], 512, &logs[0]);
		for (k = 0, covered = 0; k < NAUTHORS; k++) {
			tuser_hex(KEYS, WHO_AUTHOR0 + (int)k, hex);
			for (j = 0; j < nq[0]; j++)
				if (has_author(&q[0][j], hex))
					break;
			covered += j < nq[0];
		}
		if (covered == NAUTHORS)
			break;
		usleep(100000);
	}
	T_EQ_INT(covered, NAUTHORS);
	for (p = 0; p < 3; p++) {
		if (p > 0)
			nq[p] = identity_reqs(peers[p], from[p], q[p], 512,
			    &logs[p]);
		for (j = 0; j < nq[p]; j++) {
			if (cJSON_GetArraySize(q[p][j].authors) > 100)
				over100++;
			all[nall++] = &q[p][j];
		}
	}
	nidx = (int)nq[0];
	printf("# %d index REQs, %zu identity REQs in all\n", nidx, nall);
	T_CHECK(nidx >= 2);
	T_EQ_INT(over100, 0);
	/*
	 * One in flight: every peer holds EOSE back 300 ms, so in start
	 * order no REQ may start sooner than that after the one before
	 * (a connection that retires takes its subscription with it, so
	 * CLOSE times cannot tell).
	 */
	qsort(all, nall, sizeof(all[0]), cmp_ireq);
	for (i = 1; i < nall; i++)
		if (all[i]->at - all[i - 1]->at < 290) {
			printf("# REQ at %.0f (%d authors) only %.0f ms after "
			       "the one before\n",
			    all[i]->at, cJSON_GetArraySize(all[i]->authors),
			    all[i]->at - all[i - 1]->at);
			overlap++;
		}
	T_EQ_INT(overlap, 0);
	/* The profiles the index had reach the store. */
	buf_adds(&fb, "{\"kinds\":[0],\"authors\":[");
	for (i = 0; i < NFOUND; i++)
		buf_printf(&fb, "%s\"%s\"", i ? "," : "", prof[i]->pubkey_hex);
	buf_adds(&fb, "]}");
	f = fb.b_data;
	T_EQ_INT(client_wait_count(b, f, NFOUND, 15), NFOUND);
	buf_free(&fb);
	for (p = 0; p < 3; p++) {
		cJSON_Delete(logs[p]);
		peerctl_config(peers[p], "{\"eose_delay_ms\":0}");
	}
	for (i = 0; i < NAUTHORS; i++)
		event_destroy(iss[i]);
	for (i = 0; i < NFOUND; i++)
		event_destroy(prof[i]);
}

static void
test_hostile_list_bounded_to_four_per_purpose(void)
{
	struct event *e;
	struct buf    tags = BUF_INIT;
	char	    hh[PUBKEY_HEX_LEN + 1], msg[256], line[200], *logtxt = NULL;
	cJSON	   *v = NULL, *a = NULL, *rl;
	const char *purposes[] = { "inbox", "outbox", "history", "repo_inbox" };
	int	    base = relayproc_port(idx) + 20000, i, seen = 0;
	size_t	    len = 0, p;
	FILE	   *fp;

	if (base > 64000)
		base = 20000;
	tuser_hex(KEYS, WHO_HOSTILE, hh);
	/* Junk, variant spellings of one relay, odd markers, then fifty
	 * loopback relays that do not answer. */
	buf_adds(&tags,
	    "[[\"r\",\"not a url\"],[\"r\",\"wss://#web3/\"],"
	    "[\"r\",\"http://x.example\"],[\"r\",\"wss://u:p@x.example\"],"
	    "[\"r\",\"wss://x.example\",\"both\"],[\"r\",\"wss://y.example\","
	    "\"\"]");
	for (i = 0; i < NHOSTILE; i++)
		buf_printf(&tags, ",[\"r\",\"ws://127.0.0.1:%d%s\"%s]",
		    base + i, i == 1 ? ":" : "", i % 3 == 2 ? ",\"read\"" : "");
	/* The first relay again in other spellings. */
	buf_printf(&tags,
	    ",[\"r\",\"WS://127.0.0.1:%d/\",\"write\"],"
	    "[\"r\",\"ws://127.0.0.1:%d//\"]]",
	    base, base);
	e = ev(WHO_HOSTILE, time(NULL), 10002, tags.b_data, "");
	buf_free(&tags);
	T_EQ_INT(client_publish(b, e, msg, sizeof(msg)), 1);
	event_destroy(e);

	for (i = 0; i < 50; i++) {
		cJSON_Delete(v);
		v = ctl_role_view(b, ROLE_DISCOVERYD, "discovery", 5);
		a = author_in(v, hh);
		if (a != NULL &&
		    !cJSON_IsNull(cJSON_GetObjectItem(a, "relay_list")) &&
		    ctl_bool(a, "in_round") == 0 &&
		    ctl_num(a, "sources_asked") >= 4)
			break;
		usleep(100000);
	}
	T_ASSERT(a != NULL);
	rl = cJSON_GetObjectItem(a, "relay_list");
	T_ASSERT(cJSON_IsObject(rl));
	for (p = 0; p < 4; p++)
		T_EQ_INT(
		    cJSON_GetArraySize(cJSON_GetObjectItem(rl, purposes[p])),
		    4);
	/* "ws://127.0.0.1:<base+1>:" is refused; <base+2> is read-only. */
	snprintf(line, sizeof(line), "ws://127.0.0.1:%d/", base + 3);
	T_EQ_STR(cJSON_GetArrayItem(cJSON_GetObjectItem(rl, "outbox"), 1)
		     ->valuestring,
	    line);
	T_CHECK(ctl_num(a, "sources_asked") <= 5);
	cJSON_Delete(v);
	/* Only the four outboxes were ever dialled. */
	usleep(500000);
	T_ASSERT((fp = fopen(relayproc_log_path(b), "r")) != NULL);
	logtxt = malloc(1 << 24);
	T_ASSERT(logtxt != NULL);
	len = fread(logtxt, 1, (1 << 24) - 1, fp);
	fclose(fp);
	logtxt[len] = '\0';
	for (i = 0; i < NHOSTILE; i++) {
		snprintf(line, sizeof(line), "ws://127.0.0.1:%d/: identity",
		    base + i);
		if (strstr(logtxt, line) != NULL)
			seen++;
		if (i > 6)
			T_CHECK(strstr(logtxt, line) == NULL);
	}
	free(logtxt);
	printf("# %d hostile relays were asked\n", seen);
	T_CHECK(seen >= 1 && seen <= 4);
}

/* The times of the websocket connections p opened after its first
 * `from`, appended to at[] from *n on (at most max in all). */
static void
opens_after(struct relayproc *p, int from, double *at, int *n, int max)
{
	cJSON *log = peerctl_log(p), *o, *opens;
	int    i = 0;

	opens = log ? cJSON_GetObjectItem(log, "opens") : NULL;
	cJSON_ArrayForEach(o, opens)
		if (i++ >= from && *n < max)
			at[(*n)++] = ctl_num(o, "at_ms");
	cJSON_Delete(log);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * GRASP-03: authors are asked of the user-index set until an accepted
 * list is retained, then of its write/unmarked outboxes.  A retained list
 * whose only write relay fails hygiene (and whose other relay is
 * read-only) names no outbox: its author is asked of the index, on the
 * normal cadence, instead of never again.  The index connection, which
 * only discovery holds, retires once that due work has drained; the
 * sources of the restarted discoveryd are dialled one per pass.
 */
static void
test_list_without_outbox_asked_at_index(void)
{
	struct event *is, *list, *prof;
	char	      msg[256], hex[PUBKEY_HEX_LEN + 1];
	cJSON	     *v = NULL, *a = NULL;
	double	      at[64];
	int	      i, oidx, oob2, nat = 0, close = 0;

	tuser_hex(KEYS, WHO_NOOUT, hex);
	/* Discovery paused: the list is stored before any round. */
	T_ASSERT(graspctl(b, "stop discoveryd") == 0);
	for (i = 0; i < 50 && disc_answers(b); i++)
		usleep(100000);
	is = issue_by(WHO_NOOUT, "no outbox");
	T_EQ_INT(client_publish(b, is, msg, sizeof(msg)), 1);
	list = ev(WHO_NOOUT, time(NULL), 10002,
	    "[[\"r\",\"wss://inbox.example\",\"read\"],"
	    "[\"r\",\"http://x.example\",\"write\"]]",
	    "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	prof = ev(WHO_NOOUT, t0 - 50, 0, "[]", "{\"name\":\"no outbox\"}");
	T_ASSERT(peerctl_seed(idx, &prof, 1) == 0);
	/* Every eligible author is due again after the start: sources
	 * for all of them, idx and ob2 (an outbox only discovery uses)
	 * among them. */
	oidx = peerctl_log_count(idx, "opens");
	oob2 = peerctl_log_count(ob2, "opens");
	T_ASSERT(oidx >= 0 && oob2 >= 0);
	T_ASSERT(graspctl(b, "start discoveryd") == 0);
	for (i = 0; i < 200 && asked(idx, hex, NULL, 0) == 0; i++)
		usleep(100000);
	T_CHECK(asked(idx, hex, NULL, 0) >= 1);
	/* Found there: refreshed after 24 h (24 min with NGIT_TEST). */
	for (i = 0; i < 100; i++) {
		cJSON_Delete(v);
		v = ctl_role_view(b, ROLE_DISCOVERYD, "discovery", 5);
		if ((a = author_in(v, hex)) != NULL &&
		    strcmp(cJSON_GetObjectItem(a, "last_result")->valuestring,
			"found") == 0)
			break;
		usleep(100000);
	}
	T_ASSERT(a != NULL);
	T_EQ_STR(cJSON_GetObjectItem(a, "last_result")->valuestring, "found");
	T_CHECK(ctl_num(a, "next_refresh_in") > 600);
	T_CHECK(cJSON_IsObject(cJSON_GetObjectItem(a, "relay_list")));
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(
		     cJSON_GetObjectItem(a, "relay_list"), "outbox")),
	    0);
	cJSON_Delete(v);
	/* GRASP-03: "an exclusively discovery connection retires after
	 * its currently due identity or mailbox work drains". */
	for (i = 0; i < 150 && peerctl_log_num(idx, "open") != 0; i++)
		usleep(100000);
	T_EQ_INT(peerctl_log_num(idx, "open"), 0);
	/* GRASP-03: "At most one new discovery source is dialled per
	 * maintenance pass" (200 ms with NGIT_TEST): no two of these
	 * connections opened closer than that, less connect jitter. */
	for (i = 0; i < 100 &&
	     (peerctl_log_count(idx, "opens") <= oidx ||
		 peerctl_log_count(ob2, "opens") <= oob2);
	     i++)
		usleep(100000);
	opens_after(idx, oidx, at, &nat, 64);
	opens_after(ob2, oob2, at, &nat, 64);
	qsort(at, (size_t)nat, sizeof(at[0]), cmp_double);
	printf(
	    "# %d dials after the start (idx from %d, ob2 from %d: now %d, %d)\n",
	    nat, oidx, oob2, peerctl_log_count(idx, "opens"),
	    peerctl_log_count(ob2, "opens"));
	T_CHECK(nat >= 2);
	for (i = 1; i < nat; i++)
		if (at[i] - at[i - 1] < 120) {
			printf("# dials %.0f ms apart\n", at[i] - at[i - 1]);
			close++;
		}
	T_EQ_INT(close, 0);
	event_destroy(is);
	event_destroy(list);
	event_destroy(prof);
}

static void
test_restart_rebuilds_ownership_before_network(void)
{
	char   oh[PUBKEY_HEX_LEN + 1], mh[PUBKEY_HEX_LEN + 1];
	cJSON *v, *a, *tot;

	tuser_hex(KEYS, WHO_OWNER, oh);
	T_ASSERT(relayproc_stop(idx) >= 0);
	T_ASSERT(relayproc_stop(ob2) >= 0);
	T_ASSERT(relayproc_stop(ob3) >= 0);
	T_ASSERT(graspctl(b, "restart discoveryd") == 0);
	usleep(300000);
	v = ctl_role_view(b, ROLE_DISCOVERYD, "discovery", 10);
	T_ASSERT(v != NULL);
	T_EQ_INT(ctl_num(v, "eligible_authors"), 4 + NAUTHORS);
	tot = cJSON_GetObjectItem(v, "totals");
	T_EQ_INT(ctl_num(tot, "batches_ok"), 0);
	a = author_in(v, oh);
	T_ASSERT(a != NULL);
	T_EQ_INT(ctl_num(cJSON_GetObjectItem(a, "relay_list"), "created_at"),
	    l3->created_at);
	T_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(
		     cJSON_GetObjectItem(a, "relay_list"), "outbox")),
	    2);
	T_EQ_INT(ctl_bool(a, "profile"), 1);
	T_CHECK(ctl_num(v, "authors_with_relay_list") == 3);
	/* The maintainer's fallback mark is in the database: it holds with
	 * every index down. */
	tuser_hex(KEYS, WHO_MAINT, mh);
	T_ASSERT((a = author_in(v, mh)) != NULL);
	T_EQ_INT(ctl_bool(a, "fallback"), 1);
	T_CHECK(ctl_num(v, "fallback_authors") >= 1);
	cJSON_Delete(v);
}

static void
put_key(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	hmap_put(arg, pk, PUBKEY_LEN, (void *)1);
}

/* 1 if pk is in the eligible set relayd keeps (eligible.h), 0 if not, -1
 * if the database cannot be read; the generation in *gen and the size of
 * the set in *np (when not NULL). */
static int
eligible_has(const uint8_t pk[PUBKEY_LEN], int64_t *gen, int *np)
{
	struct hmap set = HMAP_INIT;
	char	    path[600], err[256];
	sqlite3	   *db;
	int	    n;

	snprintf(path, sizeof(path), "%s/relay/graspd.db", relayproc_dir(b));
	if (db_open(path, DB_READONLY, &db, err, sizeof(err)) == -1) {
		printf("# %s\n", err);
		return -1;
	}
	n = eligible_each(db, put_key, &set, gen);
	db_close(db);
	if (np != NULL)
		*np = n;
	if (n != -1)
		n = hmap_get(&set, pk, PUBKEY_LEN) != NULL;
	hmap_free(&set);
	return n;
}

/*
 * discoveryd builds no inventory: relayd keeps the eligible authors in
 * the database from its own, in the transaction of the event that
 * changes them.  An author whose one issue is accepted joins the set; the
 * author's NIP-09 deletion of it takes the author out again, and
 * discoveryd, restarted, counts what the set holds.
 */
static void
test_relayd_keeps_the_eligible_set_for_discoveryd(void)
{
	struct event *is, *del;
	char	      tags[200], msg[256], hex[PUBKEY_HEX_LEN + 1];
	uint8_t	      pk[PUBKEY_LEN];
	int64_t	      g0, g1, g2;
	int	      n;
	cJSON	     *v;

	tuser_hex(KEYS, WHO_LEAVER, hex);
	T_ASSERT(hex_decode(hex, PUBKEY_HEX_LEN, pk, PUBKEY_LEN) == 0);
	T_EQ_INT(eligible_has(pk, &g0, NULL), 0);
	is = issue_by(WHO_LEAVER, "one issue");
	T_EQ_INT(client_publish(b, is, msg, sizeof(msg)), 1);
	T_EQ_INT(eligible_has(pk, &g1, NULL), 1);
	T_CHECK(g1 > g0);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", is->id_hex);
	del = ev(WHO_LEAVER, t0 + 20, 5, tags, "");
	T_EQ_INT(client_publish(b, del, msg, sizeof(msg)), 1);
	T_EQ_INT(eligible_has(pk, &g2, &n), 0);
	T_CHECK(g2 > g1);
	T_ASSERT(graspctl(b, "restart discoveryd") == 0);
	usleep(300000);
	v = ctl_role_view(b, ROLE_DISCOVERYD, "discovery", 10);
	T_ASSERT(v != NULL);
	/* The set as the database holds it (the earlier cases made some
	 * authors eligible: owners, maintainers, thread authors). */
	T_CHECK(n >= 3 + NAUTHORS);
	T_EQ_INT(ctl_num(v, "eligible_authors"), n);
	cJSON_Delete(v);
	event_destroy(is);
	event_destroy(del);
}

static void
test_off_switch(void)
{
	const char *keys[] = { "NGIT_SYNC_PLUS_USER_INDEX_RELAYS" };
	const char *off[] = { "NGIT_SYNC_PLUS_ENABLED=false", NULL };
	cJSON	   *v;

	T_ASSERT((c = tint_sync_graspd(keys, &idx4, 1, off, NULL)) != NULL);
	T_EQ_INT(nip11_has(b, "GRASP-02"), 1);
	T_EQ_INT(nip11_has(b, "GRASP-03"), 1);
	T_EQ_INT(nip11_has(c, "GRASP-01"), 1);
	T_EQ_INT(nip11_has(c, "GRASP-02"), 1);
	T_EQ_INT(nip11_has(c, "GRASP-03"), 0);
	T_ASSERT(host_repo(c, WHO_OWNER, "off", NULL) == 0);
	v = ctl_role_view(c, ROLE_DISCOVERYD, "discovery", 10);
	T_ASSERT(v != NULL);
	T_EQ_INT(ctl_bool(v, "grasp03_enabled"), 0);
	T_CHECK(strstr(cJSON_GetObjectItem(v, "discovery")->valuestring,
		    "NGIT_SYNC_PLUS_ENABLED=false") != NULL);
	cJSON_Delete(v);
	sleep(2);
	T_EQ_INT(peerctl_nreqs(idx4), 0);

	/* GRASP-02 sync off, the overlay left on: GRASP-03 "is effective
	 * only while that manager is running".  Neither discoveryd nor
	 * historyd does anything, and NIP-11 lists neither GRASP. */
	relayproc_setenv(c, "NGIT_SYNC_PLUS_ENABLED=true");
	relayproc_setenv(c, "NGIT_SYNC_ENABLED=false");
	T_ASSERT(relayproc_restart(c) == 0);
	T_EQ_INT(nip11_has(c, "GRASP-01"), 1);
	T_EQ_INT(nip11_has(c, "GRASP-02"), 0);
	T_EQ_INT(nip11_has(c, "GRASP-03"), 0);
	v = ctl_role_view(c, ROLE_DISCOVERYD, "discovery", 10);
	T_ASSERT(v != NULL);
	T_EQ_INT(ctl_bool(v, "grasp03_enabled"), 0);
	T_CHECK(strstr(cJSON_GetObjectItem(v, "discovery")->valuestring,
		    "NGIT_SYNC_ENABLED=false") != NULL);
	T_CHECK(cJSON_GetObjectItem(v, "authors") == NULL);
	cJSON_Delete(v);
	v = ctl_role_view(c, ROLE_HISTORYD, "history", 10);
	T_CHECK(v != NULL && ctl_bool(v, "grasp03_enabled") == 0 &&
	    ctl_num(v, "workers") == 0 &&
	    cJSON_GetObjectItem(v, "relays") == NULL);
	cJSON_Delete(v);
	sleep(2);
	T_EQ_INT(peerctl_nreqs(idx4), 0);
}

/* 1 once nip11_has(p, grasp) is want, within secs. */
static int
nip11_becomes(struct relayproc *p, const char *grasp, int want, int secs)
{
	int i;

	for (i = 0; i < secs * 10; i++) {
		if (nip11_has(p, grasp) == want)
			return 1;
		usleep(100000);
	}
	return 0;
}

/*
 * GRASP-03 "is effective only while that manager is running": while
 * syncd is stopped by `graspctl stop syncd`, NIP-11 does not list
 * GRASP-03; started again, it does.
 */
static void
test_nip11_drops_grasp03_while_syncd_stopped(void)
{
	T_EQ_INT(nip11_has(b, "GRASP-03"), 1);
	T_ASSERT(graspctl(b, "stop syncd") == 0);
	T_CHECK(nip11_becomes(b, "GRASP-03", 0, 10));
	T_EQ_INT(nip11_has(b, "GRASP-01"), 1);
	T_ASSERT(graspctl(b, "start syncd") == 0);
	T_CHECK(nip11_becomes(b, "GRASP-03", 1, 10));
}

static int
discovery_setup(void)
{
	struct relayproc **peers[] = { &idx, &ob2, &ob3, &idx4 };
	const char	  *keys[] = { "NGIT_SYNC_PLUS_USER_INDEX_RELAYS" };

	t0 = (int64_t)time(NULL) - 3600;
	if (tint_home(tmpdir, sizeof(tmpdir), "graspd-disc",
		"discovery_setup") == -1 ||
	    tint_peers_start(peers, TINT_N(peers), "discovery_setup") == -1)
		return 1;
	if ((b = tint_sync_graspd(keys, &idx, 1, NULL, "discovery_setup")) ==
	    NULL)
		return 1;
	return 0;
}

static void
discovery_cleanup(void)
{
	struct relayproc *rps[] = { c, b, idx, ob2, ob3, idx4 };
	struct event	 *evs[] = { l1, l2, l3, oprof };

	if (t_fail) {
		relayproc_dump_log(b, 80);
		if (c)
			relayproc_dump_log(c, 40);
	}
	tint_relays_free(rps, TINT_N(rps));
	tuser_events_destroy(evs, TINT_N(evs));
	tdir_remove(tmpdir);
}

static const struct t_case cases[] = {
	T_CASE(test_index_then_outboxes_bring_the_newest_identity),
	T_CASE(test_identity_events_only_from_eligible_authors),
	T_CASE(test_missing_author_retried_after_five_minutes_found_one_not),
	T_CASE(test_batches_of_100_one_in_flight),
	T_CASE(test_hostile_list_bounded_to_four_per_purpose),
	T_CASE(test_list_without_outbox_asked_at_index),
	T_CASE(test_nip11_drops_grasp03_while_syncd_stopped),
	T_CASE(test_restart_rebuilds_ownership_before_network),
	T_CASE(test_relayd_keeps_the_eligible_set_for_discoveryd),
	T_CASE(test_off_switch),
};

T_MAIN_WITH(cases, discovery_setup, discovery_cleanup, 0)
