/*
 * neg_sync_test.c: syncd's historic sync over NIP-77 negentropy, on
 * loopback.  Two graspd instances host one repository whose announcement
 * lists both; they share 20,000 events (3,000 under RUN_LABEL=sanitize)
 * and each has 100 of its own; with sync on they converge on every event
 * of both, and the bytes negentropy and the id fetches cost are compared
 * with the bytes of the events themselves.  A REQ-only peer (tests/peer
 * answers NEG-OPEN with a NOTICE) still converges, is remembered as such
 * and gets no NEG-OPEN on the next historic pass, but does once
 * SYNC_NEG_RECHECK (10 s under NGIT_TEST) has passed.  From a peer that
 * speaks NIP-77 (tests/peer in "neg" mode) the needed ids come in
 * packed "ids" filters of at most 450, and an event our relayd refuses
 * counts as received: the next reconciliation skips it.  With
 * NGIT_SYNC_DISABLE_NEGENTROPY=true no NEG message reaches a relayd that
 * speaks NIP-77, and sync still converges.  Scripted relays that answer
 * NEG-OPEN with NEG-ERR, CLOSED, silence or "blocked:" are told apart:
 * the first three are remembered as not speaking NIP-77, the last only
 * falls back for its filter.  relayd closes a negentropy session that
 * stays idle.
 *
 * Seeding: the shared events are published once into A with sync off;
 * A's database and repositories are copied into B's directory; each then
 * gets its own events, and both restart with sync on.
 */
#define _GNU_SOURCE /* asprintf */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "negentropy.h"
#include "nostr.h"
#include "peerctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x77

#define TMO   5000
/* Events published per burst before their OKs are read. */
#define BURST 500
/* A graspd of a case: loopback peers, reconnects within 60 s. */
static const char *const case_env[] = { "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true",
	"NGIT_SYNC_MAX_BACKOFF_SECS=60", NULL };
/* The most relay URLs (hosts and others) one announcement names. */
#define ANN_MAX_URLS  8
/* Generous bounds: a slow machine must not fail a test. */
#define CONVERGE_SECS 180
#define PEER_SECS     30

/* NGIT_TEST: relayd's idle limit for a negentropy session (relayd.h
 * RELAY_NEG_IDLE_TEST). */
#define NEG_IDLE_TEST_MS     2000
/* NGIT_TEST: how often roles send relayd their metrics (role.h
 * ROLE_STATS_PERIOD_TEST). */
#define STATS_PERIOD_TEST_MS 1000
/* NGIT_TEST: how long a relay found without NIP-77 gets paginated REQs
 * before NEG-OPEN is tried again (syncd.h SYNC_NEG_RECHECK_TEST). */
#define NEG_RECHECK_TEST_MS  10000
/* Needed ids asked in one REQ (syncd.h SYNC_NEG_IDS_PER_REQ). */
#define IDS_PER_REQ	     450
#define STORED_METRIC	     "graspd_relay_events_stored{role=\"relayd\"}"
#define RECEIVED_METRIC(type) \
	"graspd_relay_messages_received_total{role=\"relayd\",type=\"" type \
	"\"}"
#define UNSUPPORTED_METRIC \
	"graspd_conn_negentropy_total{role=\"syncd\",result=\"unsupported\"}"

struct pair {
	struct relayproc *a, *b;
	char		  coord[200];
	char		  d[32];
	int		  owner;
	/* Events only A has and only B has, and the JSON bytes of every
	 * event each side lacks. */
	struct event	**own_a, **own_b;
	int		  nown;
	uint64_t	  bytes_a_lacks, bytes_b_lacks;
	int64_t		  stored_a, stored_b;
	int64_t		  sync_on_ms; /* restart with sync on */
	int64_t		  both_up_ms; /* both listening again */
};

static char    tmpdir[256];
static int     ndirs;
static int64_t t_first;

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return tuser_event(KEYS, who, at, kind, tags, c);
}

/* A repository announcement naming every host (NGIT_DOMAIN) as clone
 * and relay, and the extra relay URLs. */
static struct event *
announcement(int owner, const char *d, const char *const hosts[], size_t nhosts,
    const char *const extra[], size_t nextra)
{
	char	    ws[ANN_MAX_URLS][300];
	const char *relays[ANN_MAX_URLS];
	size_t	    i, n = 0;

	for (i = 0; i < nhosts && n < ANN_MAX_URLS; i++, n++) {
		snprintf(ws[n], sizeof(ws[n]), "ws://%s", hosts[i]);
		relays[n] = ws[n];
	}
	for (i = 0; i < nextra && n < ANN_MAX_URLS; i++)
		relays[n++] = extra[i];
	return tint_announcement(KEYS, owner, t_first, d, hosts, nhosts, relays,
	    n, NULL);
}

/*
 * Publishes evs[0..n) to rp in bursts (BURST EVENTs, then their OKs).
 * Returns the number accepted, or -1 if the connection failed.
 */
static int
publish_all(struct relayproc *rp, struct event *const *evs, size_t n)
{
	struct wsc *ws;
	size_t	    i, j, got;
	int	    accepted = 0;

	if ((ws = client_ws(rp)) == NULL)
		return -1;
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && j - i < BURST; j++) {
			char *m = nostr_event_msg(evs[j]);

			if (m == NULL || wsc_send_text(ws, m, strlen(m)) != 0) {
				free(m);
				wsc_close(ws);
				return -1;
			}
			free(m);
		}
		for (got = 0; got < j - i;) {
			size_t len;
			char  *msg = wsc_recv(ws, 4 * TMO, &len);

			if (msg == NULL) {
				wsc_close(ws);
				return -1;
			}
			if (strncmp(msg, "[\"OK\",", 6) == 0) {
				got++;
				if (strstr(msg, "\",true,") != NULL)
					accepted++;
				else if (accepted == 0 && got == 1)
					printf("# refused: %.200s\n", msg);
			}
			free(msg);
		}
	}
	wsc_close(ws);
	return accepted;
}

static int
publish(struct relayproc *rp, struct event *e)
{
	return publish_all(rp, &e, 1) == 1 ? 0 : -1;
}

static int64_t
stored(struct relayproc *rp)
{
	return (int64_t)ctl_metric(rp, STORED_METRIC);
}

/* How many of evs[0..n) rp holds (one ids query per BURST). */
static int
holds(struct relayproc *rp, struct event *const *evs, size_t n)
{
	struct wsc *ws;
	struct buf  f = BUF_INIT;
	char	  **got = NULL;
	size_t	    i, j, k;
	int	    total = 0;

	if ((ws = client_ws(rp)) == NULL)
		return -1;
	for (i = 0; i < n; i = j) {
		buf_reset(&f);
		buf_adds(&f, "{\"ids\":[");
		for (j = i; j < n && j - i < BURST; j++)
			buf_printf(&f, "%s\"%s\"", j > i ? "," : "",
			    evs[j]->id_hex);
		buf_adds(&f, "]}");
		if (nostr_req(ws, "h", f.b_data, TMO, &got, &k, NULL) != 0) {
			total = -1;
			break;
		}
		total += (int)k;
		nostr_events_free(got);
		got = NULL;
	}
	buf_free(&f);
	wsc_close(ws);
	return total;
}

/* Copies the database and repositories of from into dir (new). */
static int
copy_data(struct relayproc *from, const char *dir)
{
	char cmd[2000];

	snprintf(cmd, sizeof(cmd),
	    "mkdir '%s' && cp -a '%s/relay' '%s/git' "
	    "'%s/'",
	    dir, relayproc_dir(from), relayproc_dir(from), dir);
	return ctl_run(cmd, NULL) == 0 ? 0 : -1;
}

/* A comment on the repository (NIP-22, "a" to its coordinate). */
static struct event *
comment(const struct pair *p, int who, int64_t at, const char *text, int i)
{
	char tags[300], content[64];

	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"],[\"k\",\"30617\"]]",
	    p->coord);
	snprintf(content, sizeof(content), "%s %d", text, i);
	return ev(who, at, 1111, tags, content);
}

static void
events_free(struct event **evs, size_t n)
{
	size_t i;

	if (evs == NULL)
		return;
	for (i = 0; i < n; i++)
		event_destroy(evs[i]);
	free(evs);
}

static void
pair_free(struct pair *p)
{
	relayproc_free(p->a);
	relayproc_free(p->b);
	events_free(p->own_a, (size_t)p->nown);
	events_free(p->own_b, (size_t)p->nown);
	memset(p, 0, sizeof(*p));
}


/* Releases owner's repository d on a (its state and a push, as the
 * owner would); 0, or -1 with the reason printed. */
static int
release_repo(struct relayproc *a, int owner, const char *d)
{
	struct wsc *ws;
	uint8_t	    sk[SECKEY_LEN];
	char	    dir[512];
	int	    rc = -1;

	tuser_sk(KEYS, owner, sk);
	snprintf(dir, sizeof(dir), "%s/repo%d", tmpdir, ndirs++);
	if ((ws = client_ws(a)) != NULL &&
	    gt_release(ws, sk, relayproc_domain(a), d, dir, NULL) == 0)
		rc = 0;
	else
		printf("# release of %s failed\n", d);
	wsc_close(ws);
	return rc;
}
/*
 * Two graspd instances A and B (env: extra settings for both) hosting
 * one repository that lists both, with nshared events in common and nown
 * of their own each, then started again with sync on.  Returns 0, or -1
 * with a diagnostic.
 */
static int
pair_setup(struct pair *p, int owner, const char *d, int nshared, int nown,
    const char *const env[])
{
	const char   *e[20], *hosts[2];
	struct event *ann, **shared = NULL;
	char	      bdir[512], bdom[64];
	char	      benv[4][600];
	size_t	      ne = 0, i;
	int64_t	      t0;
	int	      rc = -1, n;

	memset(p, 0, sizeof(*p));
	p->owner = owner;
	snprintf(p->d, sizeof(p->d), "%s", d);
	e[ne++] = "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true";
	e[ne++] = "NGIT_SYNC_MAX_BACKOFF_SECS=60";
	e[ne++] = "NGIT_SYNC_ENABLED=false";
	for (i = 0; env != NULL && env[i] != NULL && ne < 15; i++)
		e[ne++] = env[i];
	e[ne] = NULL;
	if ((p->a = relayproc_start("graspd", e)) == NULL) {
		printf("# graspd did not start\n");
		return -1;
	}
	/* B starts later, on a copy of A's data: its port now. */
	snprintf(bdom, sizeof(bdom), "127.0.0.1:%d",
	    relayproc_free_port("127.0.0.1"));
	hosts[0] = relayproc_domain(p->a);
	hosts[1] = bdom;
	tuser_coord(KEYS, owner, d, p->coord, sizeof(p->coord));
	if ((ann = announcement(owner, d, hosts, 2, NULL, 0)) == NULL ||
	    publish(p->a, ann) == -1) {
		printf("# announcement refused\n");
		event_destroy(ann);
		return -1;
	}
	event_destroy(ann);
	if (release_repo(p->a, owner, d) == -1)
		return -1;

	if ((shared = calloc((size_t)nshared, sizeof(*shared))) == NULL ||
	    (p->own_a = calloc((size_t)nown, sizeof(*shared))) == NULL ||
	    (p->own_b = calloc((size_t)nown, sizeof(*shared))) == NULL)
		abort();
	for (i = 0; i < (size_t)nshared; i++)
		if ((shared[i] = comment(p, 1 + (int)(i % 16),
			 t_first + 1 + (int64_t)i / 4, "shared", (int)i)) ==
		    NULL)
			goto done;
	t0 = wsc_now_ms();
	if ((n = publish_all(p->a, shared, (size_t)nshared)) != nshared) {
		printf("# %d of %d shared events accepted\n", n, nshared);
		goto done;
	}
	printf("# %d shared events published in %.1f s\n", nshared,
	    (double)(wsc_now_ms() - t0) / 1000);
	t0 = wsc_now_ms();
	snprintf(bdir, sizeof(bdir), "%s/b%d", tmpdir, ndirs++);
	snprintf(benv[0], sizeof(benv[0]), "NGIT_BIND_ADDRESS=%s", bdom);
	snprintf(benv[1], sizeof(benv[1]), "NGIT_DOMAIN=%s", bdom);
	snprintf(benv[2], sizeof(benv[2]), "NGIT_RELAY_DATA_PATH=%s/relay",
	    bdir);
	snprintf(benv[3], sizeof(benv[3]), "NGIT_GIT_DATA_PATH=%s/git", bdir);
	for (i = 0; i < 4; i++)
		e[ne++] = benv[i];
	e[ne] = NULL;
	if (relayproc_stop(p->a) != 0 || copy_data(p->a, bdir) == -1 ||
	    relayproc_restart(p->a) == -1 ||
	    (p->b = relayproc_start("graspd", e)) == NULL) {
		printf("# copying the database failed\n");
		goto done;
	}
	p->nown = nown;
	for (i = 0; i < (size_t)nown; i++) {
		p->own_a[i] = comment(p, 20, time(NULL) - 600 + (int64_t)i,
		    "only on A", (int)i);
		p->own_b[i] = comment(p, 21, time(NULL) - 600 + (int64_t)i,
		    "only on B", (int)i);
		if (p->own_a[i] == NULL || p->own_b[i] == NULL)
			goto done;
		p->bytes_a_lacks += p->own_b[i]->json_len;
		p->bytes_b_lacks += p->own_a[i]->json_len;
	}
	if (publish_all(p->a, p->own_a, (size_t)nown) != nown ||
	    publish_all(p->b, p->own_b, (size_t)nown) != nown) {
		printf("# own events refused\n");
		goto done;
	}
	printf("# copied and own events published in %.1f s\n",
	    (double)(wsc_now_ms() - t0) / 1000);
	p->stored_a = stored(p->a);
	p->stored_b = stored(p->b);
	/* What a full transfer would move: every event of the other
	 * side (the shared ones, its own, announcement and state). */
	for (i = 0; i < (size_t)nshared; i++) {
		p->bytes_a_lacks += shared[i]->json_len;
		p->bytes_b_lacks += shared[i]->json_len;
	}
	p->sync_on_ms = wsc_now_ms();
	relayproc_setenv(p->a, "NGIT_SYNC_ENABLED=true");
	relayproc_setenv(p->b, "NGIT_SYNC_ENABLED=true");
	if (relayproc_restart(p->a) == -1 || relayproc_restart(p->b) == -1) {
		printf("# restart with sync on failed\n");
		goto done;
	}
	p->both_up_ms = wsc_now_ms();
	rc = 0;
done:
	events_free(shared, (size_t)nshared);
	return rc;
}

/* Waits until both sides hold every event of both; returns the seconds
 * since both were started again with sync on, or -1. */
static double
pair_converge(struct pair *p)
{
	int64_t start = p->sync_on_ms;
	int64_t deadline = wsc_now_ms() + CONVERGE_SECS * 1000;
	int64_t want_a = p->stored_a + p->nown, want_b = p->stored_b + p->nown;
	int64_t sa = -1, sb = -1;

	while (wsc_now_ms() < deadline) {
		sa = stored(p->a);
		sb = stored(p->b);
		if (sa >= want_a && sb >= want_b)
			return (double)(wsc_now_ms() - start) / 1000;
		usleep(200000);
	}
	printf("# A holds %lld of %lld, B %lld of %lld\n", (long long)sa,
	    (long long)want_a, (long long)sb, (long long)want_b);
	return -1;
}

/* Sums what syncd on rp reports for its relay url. */
struct neg_figures {
	double neg_bytes, fetch_bytes, link_bytes, rounds, need, sessions;
	double fallbacks, skipped, synced_at;
	char   mode[16];
};

/* Starts a case's peer relay and graspd (case_env): 0, or -1. */
static int
peer_and_graspd(struct relayproc **peer, struct relayproc **a)
{
	*peer = relayproc_start_peer(NULL);
	*a = relayproc_start("graspd", case_env);
	return *peer != NULL && *a != NULL ? 0 : -1;
}

/* Prints one instance's figures against the bytes of what it lacked. */
static void
print_side(const char *name, const struct neg_figures *f, double neg,
    uint64_t lacks)
{
	printf("# %s: %.0f sessions, %.0f rounds, %.0f ids needed; "
	       "negentropy %.0f + id fetch %.0f = %.0f bytes; link %.0f bytes; "
	       "full transfer %llu bytes (%.2f%%)\n",
	    name, f->sessions, f->rounds, f->need, f->neg_bytes, f->fetch_bytes,
	    neg, f->link_bytes, (unsigned long long)lacks,
	    100 * neg / (double)lacks);
}

static int
figures(struct relayproc *rp, const char *url, struct neg_figures *f)
{
	cJSON *show = ctl_json(rp, "show syncd"), *r, *c;
	int    rc = -1;

	memset(f, 0, sizeof(*f));
	r = ctl_by_relay(ctl_view_list(show, "relays"), url);
	c = ctl_by_relay(ctl_view_list(show, "connections"), url);
	if (r != NULL && c != NULL) {
		f->neg_bytes = ctl_num(r, "negentropy_bytes");
		f->fetch_bytes = ctl_num(r, "negentropy_fetch_bytes");
		f->rounds = ctl_num(r, "negentropy_rounds");
		f->need = ctl_num(r, "ids_needed");
		f->sessions = ctl_num(r, "negentropy_sessions");
		f->fallbacks = ctl_num(r, "negentropy_fallbacks");
		f->skipped = ctl_num(r, "ids_skipped");
		f->synced_at = ctl_num(r, "historic_synced_at");
		f->link_bytes =
		    ctl_num(c, "bytes_in") + ctl_num(c, "bytes_out");
		snprintf(f->mode, sizeof(f->mode), "%s", ctl_str(r, "mode"));
		rc = 0;
	}
	cJSON_Delete(show);
	return rc;
}

static void
two_instances_converge_by_negentropy(void)
{
	struct pair	   p;
	struct neg_figures fa, fb;
	int		   nshared = tint_sanitizing() ? 3000 : 20000;
	double		   secs, neg_a, neg_b;

	if (pair_setup(&p, 50, "shared", nshared, 100, NULL) == -1) {
		pair_free(&p);
		T_ASSERT(0);
	}
	secs = pair_converge(&p);
	T_CHECK(secs >= 0);
	/* Every event of both, by id. */
	T_EQ_INT(holds(p.a, p.own_b, 100), 100);
	T_EQ_INT(holds(p.b, p.own_a, 100), 100);
	T_EQ_INT(stored(p.a), stored(p.b));
	T_CHECK(figures(p.a, relayproc_url(p.b), &fa) == 0);
	T_CHECK(figures(p.b, relayproc_url(p.a), &fb) == 0);
	neg_a = fa.neg_bytes + fa.fetch_bytes;
	neg_b = fb.neg_bytes + fb.fetch_bytes;
	printf("# %d shared + 100 each: converged %.2f s after the restart "
	       "of both with sync on (two graspd starts included), %.2f s "
	       "after both listened\n",
	    nshared, secs, secs - (double)(p.both_up_ms - p.sync_on_ms) / 1000);
	print_side("A", &fa, neg_a, p.bytes_a_lacks);
	print_side("B", &fb, neg_b, p.bytes_b_lacks);
	T_EQ_STR(fa.mode, "negentropy");
	T_EQ_STR(fb.mode, "negentropy");
	T_CHECK(fa.sessions >= 1 && fb.sessions >= 1);
	T_CHECK(fa.fallbacks == 0 && fb.fallbacks == 0);
	/* Each side needed the other's 100, maybe a few more (the other
	 * side's live copies arriving while it reconciled), never the
	 * shared set. */
	T_CHECK(fa.need >= 100 && fa.need < nshared / 2);
	T_CHECK(fb.need >= 100 && fb.need < nshared / 2);
	/* A small fraction of a full transfer, on the whole link too. */
	T_CHECK(neg_a < 0.1 * (double)p.bytes_a_lacks);
	T_CHECK(neg_b < 0.1 * (double)p.bytes_b_lacks);
	T_CHECK(fa.link_bytes < 0.2 * (double)p.bytes_a_lacks);
	T_CHECK(fb.link_bytes < 0.2 * (double)p.bytes_b_lacks);
	if (t_case_failed) {
		relayproc_dump_log(p.a, 40);
		relayproc_dump_log(p.b, 40);
	}
	pair_free(&p);
}

static void
disabled_negentropy_sends_no_neg_message(void)
{
	static const char *const env[] = { "NGIT_SYNC_DISABLE_NEGENTROPY=true",
		NULL };
	struct pair		 p;
	struct neg_figures	 fa, fb;

	if (pair_setup(&p, 60, "reqonly", 300, 20, env) == -1) {
		pair_free(&p);
		T_ASSERT(0);
	}
	T_CHECK(pair_converge(&p) >= 0);
	T_EQ_INT(holds(p.a, p.own_b, 20), 20);
	T_EQ_INT(holds(p.b, p.own_a, 20), 20);
	T_CHECK(figures(p.a, relayproc_url(p.b), &fa) == 0);
	T_CHECK(figures(p.b, relayproc_url(p.a), &fb) == 0);
	T_EQ_STR(fa.mode, "req");
	T_EQ_STR(fb.mode, "req");
	T_CHECK(fa.sessions == 0 && fb.sessions == 0);
	/* Counted on the receiving relayd: no NEG-* message at all. */
	T_CHECK(ctl_metric(p.a, RECEIVED_METRIC("NEG")) == 0);
	T_CHECK(ctl_metric(p.b, RECEIVED_METRIC("NEG")) == 0);
	T_CHECK(ctl_metric(p.a, RECEIVED_METRIC("REQ")) > 0);
	printf("# REQ only, 300 shared + 20 each: link %.0f bytes on A, "
	       "full transfer %llu\n",
	    fa.link_bytes, (unsigned long long)p.bytes_a_lacks);
	pair_free(&p);
}

/* The REQs in the peer's log whose filters mention text. */
static int
peer_reqs_with(struct relayproc *rp, const char *text)
{
	char  *h = NULL, *body = NULL, *s;
	int    status = 0, n = 0;
	cJSON *log = NULL, *r;

	if (http_get(relayproc_host(rp), relayproc_port(rp), "/log", NULL, TMO,
		&status, &h, &body) == 0 &&
	    status == 200)
		log = cJSON_Parse(body);
	free(h);
	free(body);
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs")) {
		if ((s = cJSON_PrintUnformatted(r)) != NULL &&
		    strstr(s, text) != NULL)
			n++;
		free(s);
	}
	cJSON_Delete(log);
	return n;
}

/* The NEG-OPENs the peer got (its log's "negs"), or -1. */
static int
peer_neg_opens(struct relayproc *rp)
{
	cJSON *log = peerctl_log(rp);
	int    n = -1;

	if (log != NULL)
		n = cJSON_GetArraySize(cJSON_GetObjectItem(log, "negs"));
	cJSON_Delete(log);
	return n;
}

/* The NEG-OPENs the peer got whose filter has a "since" and the kinds of
 * layer 1 (SYNC_L1_FILTER): the catch-up's reconciliation. */
static int
peer_l1_catchups(struct relayproc *rp)
{
	cJSON *log = peerctl_log(rp), *e, *f;
	char  *k;
	int    n = 0;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(log, "negs")) {
		f = cJSON_GetObjectItem(e, "filter");
		if (cJSON_GetObjectItem(f, "since") == NULL)
			continue;
		k = cJSON_PrintUnformatted(cJSON_GetObjectItem(f, "kinds"));
		if (k != NULL && strcmp(k, "[30617,10317]") == 0)
			n++;
		free(k);
	}
	cJSON_Delete(log);
	return n;
}

/* What the peer saw of syncd's id fetches. */
struct idfetch_log {
	int malformed;	/* "ids" filters not alone, or over the cap */
	int largest;	/* most ids in one filter */
	int reqs_with;	/* id-fetch REQs asking one of want */
	int asked;	/* ids of want asked, repeats counted */
	int distinct;	/* ids of want asked at least once */
	int max_repeat; /* most times one id of want was asked */
};

/*
 * Reads every REQ the peer logged: a filter with "ids" must be the REQ's
 * only filter and have no other member, with at most
 * IDS_PER_REQ ids; counts the REQs and asks for want[0..n).
 */
static int
peer_idfetches(struct relayproc *rp, struct event *const *want, size_t n,
    struct idfetch_log *il)
{
	cJSON *log = peerctl_log(rp), *r, *fl, *f, *ids, *id;
	int   *times;
	size_t i;
	int    hit;

	memset(il, 0, sizeof(*il));
	if (log == NULL || (times = calloc(n + 1, sizeof(int))) == NULL) {
		cJSON_Delete(log);
		return -1;
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(log, "reqs")) {
		fl = cJSON_GetObjectItem(r, "filters");
		hit = 0;
		cJSON_ArrayForEach(f, fl) {
			if ((ids = cJSON_GetObjectItem(f, "ids")) == NULL)
				continue;
			if (cJSON_GetArraySize(fl) != 1 ||
			    cJSON_GetArraySize(f) != 1 ||
			    cJSON_GetArraySize(ids) > IDS_PER_REQ)
				il->malformed++;
			if (cJSON_GetArraySize(ids) > il->largest)
				il->largest = cJSON_GetArraySize(ids);
			cJSON_ArrayForEach(id, ids) {
				for (i = 0; i < n; i++)
					if (cJSON_IsString(id) &&
					    strcmp(id->valuestring,
						want[i]->id_hex) == 0)
						break;
				if (i == n)
					continue;
				hit = 1;
				il->asked++;
				if (times[i]++ == 0)
					il->distinct++;
				if (times[i] > il->max_repeat)
					il->max_repeat = times[i];
			}
		}
		il->reqs_with += hit;
	}
	free(times);
	cJSON_Delete(log);
	return 0;
}

static void
req_only_peer_converges_and_is_remembered(void)
{
	struct relayproc  *a = NULL, *peer = NULL;
	const char	  *hosts[1];
	struct event	  *ann = NULL, *evs[31], *issue = NULL;
	struct event	  *issue2 = NULL;
	struct neg_figures f0, f1, f2;
	struct pair	   p;
	struct buf	   body = BUF_INIT;
	const char	  *purl;
	char		   tags[300];
	double		   unsup0, unsup1;
	int64_t		   deadline, marked_ms;
	size_t		   i;
	int		   nopen0;

	memset(evs, 0, sizeof(evs));
	T_ASSERT(peer_and_graspd(&peer, &a) == 0);
	purl = relayproc_url(peer);
	hosts[0] = relayproc_domain(a);
	memset(&p, 0, sizeof(p));
	tuser_coord(KEYS, 70, "viapeer", p.coord, sizeof(p.coord));
	ann = announcement(70, "viapeer", hosts, 1, &purl, 1);
	T_ASSERT(ann != NULL);
	evs[0] = ann;
	for (i = 1; i < 31; i++)
		T_ASSERT((evs[i] = comment(&p, 71, t_first + (int64_t)i,
			      "on the peer", (int)i)) != NULL);
	for (i = 0; i < 31; i++) {
		buf_add(&body, evs[i]->json, evs[i]->json_len);
		buf_addc(&body, '\n');
	}
	T_ASSERT(relayproc_post(peer, "/events", body.b_data, body.b_len) == 0);
	buf_free(&body);
	T_ASSERT(publish(a, ann) == 0);
	T_CHECK(release_repo(a, 70, "viapeer") == 0);

	/* Converges over paginated REQ. */
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while (holds(a, evs + 1, 30) < 30 && wsc_now_ms() < deadline)
		usleep(200000);
	T_EQ_INT(holds(a, evs + 1, 30), 30);
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while ((figures(a, purl, &f0) == -1 || strcmp(f0.mode, "req") != 0) &&
	    wsc_now_ms() < deadline)
		usleep(200000);
	T_EQ_STR(f0.mode, "req");
	marked_ms = wsc_now_ms();
	T_CHECK(f0.fallbacks >= 1 && f0.sessions == 0);
	/* The NEG-OPENs it got (answered with a NOTICE). */
	T_CHECK((nopen0 = peer_neg_opens(peer)) >= 1);
	/* syncd's metrics reach /metrics once a second under NGIT_TEST. */
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while ((unsup0 = ctl_metric(a, UNSUPPORTED_METRIC)) < 1 &&
	    wsc_now_ms() < deadline)
		usleep(200000);
	T_CHECK(unsup0 >= 1);

	/* The next historic pass (a new issue: its thread is asked for)
	 * goes out as REQ, with no NEG-OPEN first. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", p.coord);
	T_ASSERT((issue = ev(72, time(NULL), 1621, tags, "new issue")) != NULL);
	T_ASSERT(publish(a, issue) == 0);
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while (
	    peer_reqs_with(peer, issue->id_hex) == 0 && wsc_now_ms() < deadline)
		usleep(200000);
	T_CHECK(peer_reqs_with(peer, issue->id_hex) >= 1);
	T_CHECK(figures(a, purl, &f1) == 0);
	/* A snapshot taken after that REQ left. */
	usleep(2 * STATS_PERIOD_TEST_MS * 1000);
	unsup1 = ctl_metric(a, UNSUPPORTED_METRIC);
	T_CHECK(f1.fallbacks == f0.fallbacks);
	T_CHECK(unsup1 == unsup0);
	T_EQ_STR(f1.mode, "req");
	T_EQ_INT(peer_neg_opens(peer), nopen0);

	/* SYNC_NEG_RECHECK later the peer has learnt NIP-77: the next
	 * historic pass (another issue) tries NEG-OPEN again, and it
	 * takes. */
	T_ASSERT(relayproc_post(peer, "/config", "{\"neg\":true}", 12) == 0);
	deadline = wsc_now_ms() + NEG_RECHECK_TEST_MS + PEER_SECS * 1000;
	while ((figures(a, purl, &f2) == -1 ||
		   strcmp(f2.mode, "negentropy") != 0) &&
	    wsc_now_ms() < deadline)
		usleep(200000);
	T_EQ_STR(f2.mode, "negentropy");
	printf("# NEG-OPEN allowed again %.1f s after the relay was found "
	       "without NIP-77\n",
	    (double)(wsc_now_ms() - marked_ms) / 1000);
	T_ASSERT(
	    (issue2 = ev(72, time(NULL), 1621, tags, "later issue")) != NULL);
	T_ASSERT(publish(a, issue2) == 0);
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while ((peer_neg_opens(peer) <= nopen0 || figures(a, purl, &f2) == -1 ||
		   f2.sessions < 1) &&
	    wsc_now_ms() < deadline)
		usleep(200000);
	T_CHECK(peer_neg_opens(peer) > nopen0);
	T_CHECK(f2.sessions >= 1);
	T_CHECK(f2.fallbacks == f0.fallbacks);
	T_EQ_STR(f2.mode, "negentropy");
	if (t_case_failed)
		relayproc_dump_log(a, 40);
	relayproc_free(a);
	relayproc_free(peer);
	for (i = 0; i < 31; i++)
		event_destroy(evs[i]);
	event_destroy(issue);
	event_destroy(issue2);
}

/*
 * A peer that speaks NIP-77 (tests/peer in "neg" mode) holds NPACKED
 * comments on our repository that we lack, and an announcement of
 * another repository that does not list us, which layer 1's filter
 * reaches and our relayd refuses.  The comments are fetched in packed
 * "ids" filters, each alone in its REQ, at most IDS_PER_REQ ids, each id
 * once: ceil(NPACKED / IDS_PER_REQ) REQs.  The refused announcement
 * still counts as received: the historic pass completes without a
 * fallback, and the next reconciliation of layer 1 (the catch-up after a
 * live resubscription, which a new issue causes) skips it instead of
 * asking for it again.  An issue there has NTHREAD comments that tag it
 * by both "e" and "E" (NIP-22) and name no repository: only the thread
 * filters of layer 3 reach them, the "#e" and the "#E" one at once, and
 * each is still asked once.
 */
#define NPACKED 1000
#define NTHREAD 40

static void
needed_ids_are_packed_and_refused_ones_not_refetched(void)
{
	struct relayproc  *a = NULL, *peer = NULL;
	const char	  *hosts[1];
	struct event	  *ann = NULL, *other = NULL, *issue = NULL;
	struct event	  *evs[NPACKED], *root = NULL, *thr[NTHREAD];
	struct neg_figures f0, f1;
	struct idfetch_log il0, il1, ilx, ilt;
	struct pair	   p;
	struct buf	   body = BUF_INIT;
	const char	  *purl;
	char		   tags[300];
	uint8_t		   sk[SECKEY_LEN];
	int64_t		   deadline;
	size_t		   i;

	memset(evs, 0, sizeof(evs));
	T_ASSERT(peer_and_graspd(&peer, &a) == 0);
	T_ASSERT(relayproc_post(peer, "/config", "{\"neg\":true}", 12) == 0);
	purl = relayproc_url(peer);
	hosts[0] = relayproc_domain(a);
	memset(&p, 0, sizeof(p));
	tuser_coord(KEYS, 90, "packed", p.coord, sizeof(p.coord));
	T_ASSERT(
	    (ann = announcement(90, "packed", hosts, 1, &purl, 1)) != NULL);
	/* Another repository's, naming the peer but not us; recent, so
	 * that the catch-up's "since" still covers it. */
	tuser_sk(KEYS, 91, sk);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"elsewhere\"],[\"name\","
	    "\"elsewhere\"],[\"clone\",\"https://git.example.org/x.git\"],"
	    "[\"relays\",\"%s\"]]",
	    purl);
	T_ASSERT((other = event_new_signed(sk, time(NULL), 30617, tags, "")) !=
	    NULL);
	for (i = 0; i < NPACKED; i++)
		T_ASSERT(
		    (evs[i] = comment(&p, 92 + (int)(i % 8),
			 t_first + 1 + (int64_t)i, "packed", (int)i)) != NULL);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", p.coord);
	T_ASSERT((root = ev(93, t_first, 1621, tags, "a thread")) != NULL);
	snprintf(tags, sizeof(tags),
	    "[[\"E\",\"%s\"],[\"K\",\"1621\"],"
	    "[\"e\",\"%s\"],[\"k\",\"1621\"]]",
	    root->id_hex, root->id_hex);
	for (i = 0; i < NTHREAD; i++)
		T_ASSERT(
		    (thr[i] = ev(94 + (int)(i % 4), t_first + 2 + (int64_t)i,
			 1111, tags, "in the thread")) != NULL);
	buf_add(&body, root->json, root->json_len);
	buf_addc(&body, '\n');
	for (i = 0; i < NTHREAD; i++) {
		buf_add(&body, thr[i]->json, thr[i]->json_len);
		buf_addc(&body, '\n');
	}
	buf_add(&body, ann->json, ann->json_len);
	buf_addc(&body, '\n');
	buf_add(&body, other->json, other->json_len);
	buf_addc(&body, '\n');
	for (i = 0; i < NPACKED; i++) {
		buf_add(&body, evs[i]->json, evs[i]->json_len);
		buf_addc(&body, '\n');
	}
	T_ASSERT(relayproc_post(peer, "/events", body.b_data, body.b_len) == 0);
	buf_free(&body);
	/* Our relayd's policy refuses it. */
	T_CHECK(publish(a, other) == -1);
	T_ASSERT(publish(a, ann) == 0);
	T_CHECK(release_repo(a, 90, "packed") == 0);

	/* The first historic pass: every comment, nothing failed. */
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while ((holds(a, evs, NPACKED) < NPACKED ||
		   figures(a, purl, &f0) == -1 || f0.synced_at <= 0) &&
	    wsc_now_ms() < deadline)
		usleep(200000);
	T_EQ_INT(holds(a, evs, NPACKED), NPACKED);
	T_CHECK(f0.synced_at > 0);
	T_EQ_STR(f0.mode, "negentropy");
	T_CHECK(f0.fallbacks == 0 && f0.sessions >= 1);
	T_CHECK(f0.need >= NPACKED + 1);
	T_EQ_INT(holds(a, &other, 1), 0);
	T_ASSERT(peer_idfetches(peer, evs, NPACKED, &il0) == 0);
	printf("# %d comments needed: %d id-fetch REQs for them, at most %d "
	       "ids in one; %d malformed\n",
	    NPACKED, il0.reqs_with, il0.largest, il0.malformed);
	T_EQ_INT(il0.malformed, 0);
	T_CHECK(il0.largest <= IDS_PER_REQ);
	T_EQ_INT(il0.reqs_with, (NPACKED + IDS_PER_REQ - 1) / IDS_PER_REQ);
	T_EQ_INT(il0.distinct, NPACKED);
	T_EQ_INT(il0.max_repeat, 1);
	T_ASSERT(peer_idfetches(peer, &other, 1, &ilx) == 0);
	T_EQ_INT(ilx.asked, 1);
	/* The thread: "#e" and "#E" both needed every comment. */
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while (holds(a, thr, NTHREAD) < NTHREAD && wsc_now_ms() < deadline)
		usleep(200000);
	usleep(300000);
	T_EQ_INT(holds(a, thr, NTHREAD), NTHREAD);
	T_ASSERT(peer_idfetches(peer, thr, NTHREAD, &ilt) == 0);
	printf("# thread comments: %d asked, at most %d times each\n",
	    ilt.asked, ilt.max_repeat);
	T_EQ_INT(ilt.distinct, NTHREAD);
	T_EQ_INT(ilt.max_repeat, 1);

	/* The second pass over layer 1: the catch-up after the live
	 * subscriptions change for a new issue. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", p.coord);
	T_ASSERT((issue = ev(99, time(NULL), 1621, tags, "new issue")) != NULL);
	T_ASSERT(publish(a, issue) == 0);
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	while (wsc_now_ms() < deadline) {
		if (peer_l1_catchups(peer) >= 1 && figures(a, purl, &f1) == 0 &&
		    f1.skipped >= 1)
			break;
		if (peer_idfetches(peer, &other, 1, &ilx) == 0 && ilx.asked > 1)
			break;
		usleep(200000);
	}
	/* Anything still in flight lands. */
	usleep(500000);
	T_CHECK(peer_l1_catchups(peer) >= 1);
	T_CHECK(figures(a, purl, &f1) == 0);
	T_ASSERT(peer_idfetches(peer, &other, 1, &ilx) == 0);
	T_ASSERT(peer_idfetches(peer, evs, NPACKED, &il1) == 0);
	printf("# second pass: %.0f ids skipped, the refused announcement "
	       "asked %d times\n",
	    f1.skipped, ilx.asked);
	T_CHECK(f1.skipped >= 1);
	T_EQ_INT(ilx.asked, 1);
	T_EQ_INT(il1.asked, NPACKED);
	T_EQ_INT(il1.malformed, 0);
	T_CHECK(f1.fallbacks == 0);
	T_EQ_INT(holds(a, &other, 1), 0);
	if (t_case_failed)
		relayproc_dump_log(a, 40);
	relayproc_free(a);
	relayproc_free(peer);
	for (i = 0; i < NPACKED; i++)
		event_destroy(evs[i]);
	for (i = 0; i < NTHREAD; i++)
		event_destroy(thr[i]);
	event_destroy(root);
	event_destroy(ann);
	event_destroy(other);
	event_destroy(issue);
}

/*
 * Scripted relays, one thread for all: each answers REQ with EOSE and
 * NEG-OPEN as its mode says.
 */
enum script_mode {
	SCRIPT_NEG_ERR, /* NEG-ERR "error: ..." */
	SCRIPT_CLOSED,	/* CLOSED */
	SCRIPT_SILENT,	/* no answer */
	SCRIPT_BLOCKED, /* NEG-ERR "blocked: ...", a NIP-77 relay */
	SCRIPT_NMODES
};

#define SCRIPT_CLIENTS 8

struct script_client {
	int	   sc_fd; /* -1: free */
	int	   sc_relay;
	int	   sc_upgraded;
	struct buf sc_in;
};

static struct script {
	int		     s_listen[SCRIPT_NMODES];
	int		     s_port[SCRIPT_NMODES];
	char		     s_url[SCRIPT_NMODES][64];
	atomic_int	     s_neg_opens[SCRIPT_NMODES];
	atomic_int	     s_reqs[SCRIPT_NMODES];
	struct script_client s_clients[SCRIPT_CLIENTS];
	atomic_int	     s_stop;
	pthread_t	     s_thread;
} scr;

static void
script_send(struct script_client *c, const char *text)
{
	struct buf b = BUF_INIT;

	wsc_frame_encode(&b, 1, 1, NULL, text, strlen(text));
	if (write(c->sc_fd, b.b_data, b.b_len) != (ssize_t)b.b_len)
		(void)0; /* the client sees a broken link */
	buf_free(&b);
}

static void
script_drop(struct script_client *c)
{
	close(c->sc_fd);
	c->sc_fd = -1;
	buf_free(&c->sc_in);
}

/* One text message from syncd. */
static void
script_message(struct script_client *c, const char *text)
{
	cJSON	   *m = cJSON_Parse(text);
	const char *verb = cJSON_GetStringValue(cJSON_GetArrayItem(m, 0));
	const char *sub = cJSON_GetStringValue(cJSON_GetArrayItem(m, 1));
	char	    out[300];
	int	    mode = c->sc_relay;

	if (verb == NULL || sub == NULL || strlen(sub) > 64)
		goto done;
	if (strcmp(verb, "REQ") == 0) {
		atomic_fetch_add(&scr.s_reqs[mode], 1);
		snprintf(out, sizeof(out), "[\"EOSE\",\"%s\"]", sub);
		script_send(c, out);
	} else if (strcmp(verb, "NEG-OPEN") == 0) {
		atomic_fetch_add(&scr.s_neg_opens[mode], 1);
		out[0] = '\0';
		if (mode == SCRIPT_NEG_ERR)
			snprintf(out, sizeof(out),
			    "[\"NEG-ERR\",\"%s\","
			    "\"error: negentropy is disabled here\"]",
			    sub);
		else if (mode == SCRIPT_CLOSED)
			snprintf(out, sizeof(out),
			    "[\"CLOSED\",\"%s\","
			    "\"error: bad message\"]",
			    sub);
		else if (mode == SCRIPT_BLOCKED)
			snprintf(out, sizeof(out),
			    "[\"NEG-ERR\",\"%s\","
			    "\"blocked: too many query results\",10]",
			    sub);
		if (out[0] != '\0')
			script_send(c, out);
	}
done:
	cJSON_Delete(m);
}

/* Handshake, then every complete frame in the buffer. */
static void
script_input(struct script_client *c)
{
	struct ws_frame f;
	char	       *end, *text;
	struct buf	b = BUF_INIT;
	size_t		used;

	if (!c->sc_upgraded) {
		if ((end = strstr(c->sc_in.b_data, "\r\n\r\n")) == NULL)
			return;
		client_ws_accept(&b, c->sc_in.b_data);
		if (write(c->sc_fd, b.b_data, b.b_len) != (ssize_t)b.b_len) {
			buf_free(&b);
			script_drop(c);
			return;
		}
		buf_free(&b);
		c->sc_upgraded = 1;
		used = (size_t)(end + 4 - c->sc_in.b_data);
		memmove(c->sc_in.b_data, c->sc_in.b_data + used,
		    c->sc_in.b_len - used);
		c->sc_in.b_len -= used;
	}
	while (c->sc_fd != -1 &&
	    wsc_frame_parse((uint8_t *)c->sc_in.b_data, c->sc_in.b_len, &f) ==
		1 &&
	    c->sc_in.b_len >= f.hdrlen + f.len) {
		uint8_t *p = (uint8_t *)c->sc_in.b_data + f.hdrlen;

		if (f.masked)
			wsc_unmask(p, (size_t)f.len, f.mask, 0);
		if (f.opcode == 8) {
			script_drop(c);
			return;
		}
		if (f.opcode == 1 &&
		    (text = strndup((char *)p, (size_t)f.len)) != NULL) {
			script_message(c, text);
			free(text);
		}
		used = f.hdrlen + (size_t)f.len;
		memmove(c->sc_in.b_data, c->sc_in.b_data + used,
		    c->sc_in.b_len - used);
		c->sc_in.b_len -= used;
	}
}

static void *
script_loop(void *arg)
{
	struct pollfd pfd[SCRIPT_NMODES + SCRIPT_CLIENTS];
	int	      who[SCRIPT_NMODES + SCRIPT_CLIENTS];
	char	      chunk[65536];
	ssize_t	      n;
	int	      np, i, j, fd;

	while (!atomic_load(&scr.s_stop)) {
		np = 0;
		for (i = 0; i < SCRIPT_NMODES; i++) {
			pfd[np].fd = scr.s_listen[i];
			pfd[np].events = POLLIN;
			who[np++] = -1 - i;
		}
		for (i = 0; i < SCRIPT_CLIENTS; i++)
			if (scr.s_clients[i].sc_fd != -1) {
				pfd[np].fd = scr.s_clients[i].sc_fd;
				pfd[np].events = POLLIN;
				who[np++] = i;
			}
		if (poll(pfd, (nfds_t)np, 100) <= 0)
			continue;
		for (j = 0; j < np; j++) {
			if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (who[j] < 0) {
				if ((fd = accept(pfd[j].fd, NULL, NULL)) == -1)
					continue;
				for (i = 0; i < SCRIPT_CLIENTS; i++)
					if (scr.s_clients[i].sc_fd == -1)
						break;
				if (i == SCRIPT_CLIENTS) {
					close(fd);
					continue;
				}
				scr.s_clients[i].sc_fd = fd;
				scr.s_clients[i].sc_relay = -1 - who[j];
				scr.s_clients[i].sc_upgraded = 0;
				continue;
			}
			struct script_client *c = &scr.s_clients[who[j]];

			if ((n = read(c->sc_fd, chunk, sizeof(chunk))) <= 0) {
				script_drop(c);
				continue;
			}
			buf_add(&c->sc_in, chunk, (size_t)n);
			script_input(c);
		}
	}
	return arg;
}

static int
script_start(void)
{
	struct sockaddr_in sin;
	socklen_t	   sl = sizeof(sin);
	int		   i, one = 1;

	memset(&scr, 0, sizeof(scr));
	for (i = 0; i < SCRIPT_CLIENTS; i++)
		scr.s_clients[i].sc_fd = -1;
	for (i = 0; i < SCRIPT_NMODES; i++) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((scr.s_listen[i] = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    setsockopt(scr.s_listen[i], SOL_SOCKET, SO_REUSEADDR, &one,
			sizeof(one)) == -1 ||
		    bind(scr.s_listen[i], (struct sockaddr *)&sin,
			sizeof(sin)) == -1 ||
		    listen(scr.s_listen[i], 8) == -1 ||
		    getsockname(scr.s_listen[i], (struct sockaddr *)&sin,
			&sl) == -1)
			return -1;
		scr.s_port[i] = ntohs(sin.sin_port);
		snprintf(scr.s_url[i], sizeof(scr.s_url[i]),
		    "ws://127.0.0.1:%d", scr.s_port[i]);
	}
	return pthread_create(&scr.s_thread, NULL, script_loop, NULL) == 0 ? 0 :
									     -1;
}

static void
script_stop(void)
{
	int i;

	atomic_store(&scr.s_stop, 1);
	pthread_join(scr.s_thread, NULL);
	for (i = 0; i < SCRIPT_CLIENTS; i++)
		if (scr.s_clients[i].sc_fd != -1)
			script_drop(&scr.s_clients[i]);
	for (i = 0; i < SCRIPT_NMODES; i++)
		close(scr.s_listen[i]);
}

static void
negentropy_refusals_are_told_apart(void)
{
	static const char *const want[SCRIPT_NMODES] = { "req", "req", "req",
		"negentropy" };
	struct relayproc	*a;
	const char		*hosts[1];
	struct event		*ann;
	struct neg_figures	 f[SCRIPT_NMODES];
	const char		*urls[SCRIPT_NMODES];
	int64_t			 deadline;
	int			 i, settled;

	T_ASSERT(script_start() == 0);
	a = relayproc_start("graspd", case_env);
	T_ASSERT(a != NULL);
	for (i = 0; i < SCRIPT_NMODES; i++)
		urls[i] = scr.s_url[i];
	hosts[0] = relayproc_domain(a);
	T_ASSERT((ann = announcement(80, "scripted", hosts, 1, urls,
		      SCRIPT_NMODES)) != NULL);
	T_CHECK(publish(a, ann) == 0);
	event_destroy(ann);
	T_CHECK(release_repo(a, 80, "scripted") == 0);
	/* Silence takes the fetch timeout (3 s under NGIT_TEST). */
	deadline = wsc_now_ms() + PEER_SECS * 1000;
	do {
		usleep(200000);
		settled = 1;
		for (i = 0; i < SCRIPT_NMODES; i++)
			if (figures(a, urls[i], &f[i]) == -1 ||
			    strcmp(f[i].mode, want[i]) != 0 ||
			    f[i].fallbacks < 1 ||
			    atomic_load(&scr.s_reqs[i]) < 1)
				settled = 0;
	} while (!settled && wsc_now_ms() < deadline);
	for (i = 0; i < SCRIPT_NMODES; i++) {
		printf("# scripted relay %d: mode %s, %.0f fallbacks, "
		       "%d NEG-OPEN, %d REQ\n",
		    i, f[i].mode, f[i].fallbacks,
		    atomic_load(&scr.s_neg_opens[i]),
		    atomic_load(&scr.s_reqs[i]));
		T_EQ_STR(f[i].mode, want[i]);
		/* Every refused reconciliation became a paginated REQ. */
		T_CHECK(f[i].fallbacks >= 1 && f[i].sessions == 0);
		T_CHECK(atomic_load(&scr.s_reqs[i]) >= 1);
		T_CHECK(atomic_load(&scr.s_neg_opens[i]) >= 1);
	}
	if (t_case_failed)
		relayproc_dump_log(a, 40);
	relayproc_free(a);
	script_stop();
}

static void
idle_negentropy_session_is_closed(void)
{
	struct relayproc *r;
	struct wsc	 *ws;
	struct neg	 *ng;
	struct buf	  hex = BUF_INIT, m = BUF_INIT;
	char		  err[128], *msg;
	int64_t		  t0;
	double		  waited;

	T_ASSERT((r = relayproc_start("graspd", NULL)) != NULL);
	T_ASSERT((ng = neg_client_new(NULL, 0, NEG_FRAME_DEFAULT, err,
		      sizeof(err))) != NULL);
	T_ASSERT(neg_client_initiate(ng, &hex) == 0);
	buf_printf(&m, "[\"NEG-OPEN\",\"idle\",{},\"%s\"]", hex.b_data);
	T_ASSERT((ws = client_ws(r)) != NULL);
	T_ASSERT(wsc_send_text(ws, m.b_data, m.b_len) == 0);
	msg = nostr_wait_msg(ws, "NEG-MSG", TMO);
	T_CHECK(msg != NULL);
	free(msg);
	t0 = wsc_now_ms();
	/* Nothing more from us: the session times out. */
	msg = nostr_wait_msg(ws, "NEG-ERR", NEG_IDLE_TEST_MS + 4 * TMO);
	waited = (double)(wsc_now_ms() - t0);
	T_CHECK(msg != NULL && strstr(msg, "\"idle\",\"closed: ") != NULL);
	T_CHECK(waited >= NEG_IDLE_TEST_MS - 100);
	free(msg);
	/* And it is gone. */
	buf_reset(&m);
	buf_printf(&m, "[\"NEG-MSG\",\"idle\",\"%s\"]", hex.b_data);
	T_ASSERT(wsc_send_text(ws, m.b_data, m.b_len) == 0);
	msg = nostr_wait_msg(ws, "NEG-ERR", TMO);
	T_CHECK(msg != NULL && strstr(msg, "closed: subscription not found"));
	free(msg);
	wsc_close(ws);
	neg_free(ng);
	buf_free(&hex);
	buf_free(&m);
	relayproc_free(r);
}

static int
neg_sync_setup(void)
{
	t_first = time(NULL) - 86400;
	return 0;
}

static const struct t_case cases[] = {
	T_CASE(idle_negentropy_session_is_closed),
	T_CASE(req_only_peer_converges_and_is_remembered),
	T_CASE(needed_ids_are_packed_and_refused_ones_not_refetched),
	T_CASE(negentropy_refusals_are_told_apart),
	T_CASE(disabled_negentropy_sends_no_neg_message),
	T_CASE(two_instances_converge_by_negentropy),
};

/* The temporary directory, with git's HOME in it (gt_fixture). */
static struct tdir_prog prog = { tmpdir, sizeof(tmpdir), "graspd-negsync" };

T_MAIN_ALL(cases, neg_sync_setup, NULL, &gt_fixture, &prog, 0)
