/*
 * history_test.c: GRASP-03 history-only mailbox probes (historyd) inside a
 * real graspd, against scriptable peer relays on loopback playing the
 * participants' mailboxes, the owner's read inbox and the operator's
 * fallback relay:
 *   - a participant's reply stored only in its second outbox is found;
 *     one stored only in its fifth distinct outbox is not, and that relay
 *     is never dialled; a root-slash spelling of the first outbox does not
 *     consume a slot;
 *   - a reply by a participant without a relay list (the user index
 *     answered, without one) is found on the fallback relay;
 *   - syncd: a reply in the root author's read inbox arrives while it
 *     follows that inbox (after historyd's probe of it is done); a reply
 *     to the root of an author without a relay list is found on the
 *     fallback relay;
 *   - a participant deleting its relay list (NIP-09) takes its
 *     mailboxes out at once;
 *   - the fallback mark (GRASP-03: a successful user-index query
 *     returned no accepted 10002): a root author (syncd) and a non-root
 *     participant (historyd) without a list are not on the fallback
 *     relay while the index has not answered, are once it answered,
 *     stay there across a restart while the index hangs (ownership from
 *     the database), and leave once their relay lists arrive;
 *   - a status stored only in the owner's read inbox is found on a public
 *     instance, and the inbox is not probed in private mode;
 *   - excluded: a participant whose only thread's root is deleted loses
 *     its mailboxes (its list still stored); a maintainer in no thread
 *     has no write-only outbox probed; the owner's inbox covers exactly
 *     its Full repository and live roots (not another owner's, not its
 *     purgatory announcement); syncd has no live subscription on owner
 *     inboxes or participant mailboxes, and historyd's exclusively
 *     history connection retires after its rotation; a failed group
 *     (no EOSE) makes the relay due after the 5 (test) s retry delay;
 *     a group that always fails (CLOSED) is asked again alone every
 *     5 (test) s while the groups that succeeded wait for the refresh;
 *   - a root author dropping a shared read inbox leaves syncd's live
 *     subscriptions there to drain (no CLOSE, no new REQ) until the
 *     next addition repacks them;
 *   - a relay that is both a participant mailbox and an owner inbox is
 *     one view entry, its filters the union of both scopes, fetched on
 *     one connection;
 *   - historyd's own probe on the fallback relay (a "#q" only it sends),
 *     syncd's live subscription on the root author's read inbox, the
 *     24 (test) minute refresh checked unconditionally, and the first
 *     REQ after a restart being filter 0;
 *   - with NGIT_SYNC_PLUS_ENABLED=false nothing is probed;
 *   - the GRASP-03 metrics of discoveryd and historyd (eligible authors,
 *     desired history-probe relays, cursors, workers, ...) are the same
 *     series with 1,000 participants as with one, without relay URLs or
 *     pubkeys, and their values follow the count.
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
#include "event.h"
#include "gitutil.h"
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

#define TMO	   5000
#define NOB	   5 /* the participant's distinct outboxes */
#define WHO_OWNER  1
#define WHO_ROOT   10
#define WHO_PART   20
#define WHO_NOLIST 30
#define WHO_OTHER  31
#define WHO_STATUS 40 /* not a participant before */
#define WHO_ROOT2  50 /* a root author without a relay list */
#define WHO_LATE   51
#define WHO_FA	   60	/* a root author without a relay list */
#define WHO_FB	   61	/* a participant without a relay list */
#define WHO_DEL	   80	/* a participant of a deleted root only */
#define WHO_MAINT  81	/* a maintainer with no thread events */
#define WHO_OWNER2 82	/* owner of another repository */
#define WHO_RETRY  83	/* a participant whose mailbox fails a group */
#define WHO_MOWNER 70	/* owner of the metrics test's repository */
#define WHO_MANY   1000 /* the metrics test's participants, from */
#define NMANY	   1000

#define RETAINED(state) \
	"graspd_historyd_retained{role=\"historyd\",state=\"" state "\"}"

static struct relayproc *ob[NOB], *fb, *own, *rin, *idx, *b;
static char		 tmpdir[256];
static char		 coord[200];
static int64_t		 t0;
static struct event	*issue, *issue_a, *issue_c;
static char fbreply[EVENT_ID_HEX_LEN + 1]; /* WHO_FB's reply in thread c */

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags, const char *c)
{
	return tuser_event(KEYS, who, at, kind, tags, c);
}

/* ------------------------------------------------------------------ */
/* The peers' HTTP control API.                                        */


/* ------------------------------------------------------------------ */
/* graspd: clients, control sockets, graspctl.                         */

static cJSON *sync_view(struct relayproc *, int);
static int    reqs_mention(struct relayproc *, int, const char *);

static cJSON *
hist_view(struct relayproc *p, int secs)
{
	return ctl_role_view(p, ROLE_HISTORYD, "history", secs);
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

/* The relay of the historyd view whose key names p's port, or NULL. */
static cJSON *
relay_in(const cJSON *view, struct relayproc *p)
{
	char   port[16];
	cJSON *r;

	snprintf(port, sizeof(port), ":%d", relayproc_port(p));
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(view, "relays")) {
		const cJSON *k = cJSON_GetObjectItem(r, "relay");

		if (cJSON_IsString(k) && strstr(k->valuestring, port) != NULL)
			return r;
	}
	return NULL;
}

/*
 * The historyd view once relay p's number key is at least min, within
 * secs (else the last view, or NULL); *r p's entry in it, or NULL.
 */
static cJSON *
relay_when(struct relayproc *p, const char *key, double min, int secs,
    cJSON **r)
{
	cJSON *v = NULL;
	int    i;

	for (i = 0; i < secs * 10; i++) {
		cJSON_Delete(v);
		if ((v = hist_view(b, 5)) != NULL &&
		    (*r = relay_in(v, p)) != NULL && ctl_num(*r, key) >= min)
			return v;
		usleep(100000);
	}
	*r = v ? relay_in(v, p) : NULL;
	return v;
}

/*
 * The index of the first REQ p logged after the first `from` that has
 * one filter object naming both s1 and s2 (s2 NULL: s1 alone), -1 if
 * none; *conn its connection serial.
 */
static int
req_filter_with(struct relayproc *p, int from, const char *s1, const char *s2,
    int *conn)
{
	cJSON *log = peerctl_log(p), *reqs, *rq, *f;
	char  *t;
	int    i, n, hit = -1;

	reqs = log ? cJSON_GetObjectItem(log, "reqs") : NULL;
	n = cJSON_GetArraySize(reqs);
	for (i = from; i < n && hit < 0; i++) {
		rq = cJSON_GetArrayItem(reqs, i);
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(rq, "filters")) {
			if ((t = cJSON_PrintUnformatted(f)) == NULL)
				continue;
			if (strstr(t, s1) != NULL &&
			    (s2 == NULL || strstr(t, s2) != NULL)) {
				hit = i;
				if (conn != NULL)
					*conn = (int)ctl_num(rq, "conn");
			}
			free(t);
			if (hit >= 0)
				break;
		}
	}
	cJSON_Delete(log);
	return hit;
}

/* req_filter_with(), waited for up to secs. */
static int
wait_req_filter_with(struct relayproc *p, int from, const char *s1,
    const char *s2, int *conn, int secs)
{
	int i, hit = -1;

	for (i = 0; i < secs * 10; i++) {
		if ((hit = req_filter_with(p, from, s1, s2, conn)) >= 0)
			break;
		usleep(100000);
	}
	return hit;
}

/* The distinct connections of the REQs after `from` that name s. */
static int
conns_naming(struct relayproc *p, int from, const char *s)
{
	cJSON *log = peerctl_log(p), *reqs, *rq;
	char  *t;
	int    i, j, n, seen[64], nseen = 0, c;

	reqs = log ? cJSON_GetObjectItem(log, "reqs") : NULL;
	n = cJSON_GetArraySize(reqs);
	for (i = from; i < n; i++) {
		rq = cJSON_GetArrayItem(reqs, i);
		if ((t = cJSON_PrintUnformatted(
			 cJSON_GetObjectItem(rq, "filters"))) == NULL)
			continue;
		if (strstr(t, s) != NULL) {
			c = (int)ctl_num(rq, "conn");
			for (j = 0; j < nseen && seen[j] != c; j++)
				;
			if (j == nseen && nseen < 64)
				seen[nseen++] = c;
		}
		free(t);
	}
	cJSON_Delete(log);
	return nseen;
}

/* 1 if the purposes of view relay r include name. */
static int
has_purpose(const cJSON *r, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(r, "purpose"))
		if (cJSON_IsString(p) && strcmp(p->valuestring, name) == 0)
			return 1;
	return 0;
}

/* who's issue (kind 1621) on the repository at coordinate c. */
static struct event *
issue_on(const char *c, int who, int64_t at, const char *subject,
    const char *content)
{
	char tags[600];

	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"],[\"subject\",\"%s\"]]", c,
	    subject);
	return ev(who, at, 1621, tags, content);
}

/* who's reply (kind 1) to e, by an "e" tag. */
static struct event *
reply_to(const struct event *e, int who, int64_t at, const char *content)
{
	char tags[100];

	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", e->id_hex);
	return ev(who, at, 1, tags, content);
}

static struct event *
reply_by(int who, int64_t at, const char *content)
{
	char tags[300];

	snprintf(tags, sizeof(tags),
	    "[[\"E\",\"%s\"],[\"e\",\"%s\"],"
	    "[\"K\",\"1621\"]]",
	    issue->id_hex, issue->id_hex);
	return ev(who, at, 1111, tags, content);
}

/* 1 once relayd's /metrics has a line starting with name, within secs. */
static int
metrics_have(struct relayproc *p, const char *name, int secs)
{
	char *h, *body;
	int   status, i, ok = 0;

	for (i = 0; i < secs * 10 && !ok; i++) {
		h = body = NULL;
		status = 0;
		if (http_get(relayproc_host(p), relayproc_port(p), "/metrics",
			NULL, TMO, &status, &h, &body) == 0 &&
		    status == 200 && body != NULL && strstr(body, name) != NULL)
			ok = 1;
		free(h);
		free(body);
		if (!ok)
			usleep(100000);
	}
	return ok;
}

/* ------------------------------------------------------------------ */

static void
test_participant_history_mailboxes(void)
{
	struct event *r0, *r2, *r5, *list;
	char	      tags[1024], oh[PUBKEY_HEX_LEN + 1], msg[256], noslash[64];
	cJSON	     *v = NULL, *r;
	int	      i;

	tuser_hex(KEYS, WHO_OWNER, oh);
	snprintf(coord, sizeof(coord), "30617:%s:hist", oh);
	T_ASSERT(host_repo(b, WHO_OWNER, "hist", NULL) == 0);
	issue = issue_on(coord, WHO_ROOT, t0 + 10, "s", "the issue");
	T_EQ_INT(client_publish(b, issue, msg, sizeof(msg)), 1);
	/* The participant takes part in the thread, then lists five
	 * distinct outboxes, the first spelled twice. */
	r0 = reply_by(WHO_PART, t0 + 20, "first reply");
	T_EQ_INT(client_publish(b, r0, msg, sizeof(msg)), 1);
	snprintf(noslash, sizeof(noslash), "ws://127.0.0.1:%d",
	    relayproc_port(ob[0]));
	snprintf(tags, sizeof(tags),
	    "[[\"r\",\"%s\",\"write\"],[\"r\",\"%s\","
	    "\"write\"],[\"r\",\"%s\",\"write\"],[\"r\",\"%s\",\"write\"],"
	    "[\"r\",\"%s\",\"write\"],[\"r\",\"%s\",\"write\"]]",
	    relayproc_bind_url(ob[0]), noslash, relayproc_bind_url(ob[1]),
	    relayproc_bind_url(ob[2]), relayproc_bind_url(ob[3]),
	    relayproc_bind_url(ob[4]));
	list = ev(WHO_PART, t0 + 30, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	r2 = reply_by(WHO_PART, t0 + 40, "in the second outbox only");
	r5 = reply_by(WHO_PART, t0 + 41, "in the fifth outbox only");
	T_ASSERT(peerctl_seed(ob[1], &r2, 1) == 0);
	T_ASSERT(peerctl_seed(ob[4], &r5, 1) == 0);

	T_EQ_INT(client_wait_id(b, r2, 30), 1);
	/* The view: four participant relays, the fifth not among them;
	 * their rotations complete. */
	for (i = 0; i < 100; i++) {
		cJSON_Delete(v);
		v = hist_view(b, 5);
		int done = 0, j;

		for (j = 0; v != NULL && j < 4; j++)
			done += (r = relay_in(v, ob[j])) != NULL &&
			    ctl_num(r, "rotations") >= 1 &&
			    ctl_num(r, "rotation_left") == 0;
		if (done == 4)
			break;
		usleep(100000);
	}
	T_ASSERT(v != NULL);
	for (i = 0; i < 4; i++) {
		T_ASSERT((r = relay_in(v, ob[i])) != NULL);
		T_CHECK(cJSON_IsString(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r, "purpose"), 0)));
		/* "#e", "#E" and "#q": ids, no address in this thread. */
		T_CHECK(ctl_num(r, "filters") >= 3);
		T_CHECK(cJSON_GetObjectItem(r, "worker") != NULL);
		T_CHECK(cJSON_GetObjectItem(r, "next_due") != NULL);
	}
	T_CHECK(relay_in(v, ob[4]) == NULL);
	T_CHECK(ctl_num(v, "workers") <= 32);
	/* GRASP-03: "A participant-only mailbox remains constrained to
	 * its derived roots": the root and its descendants, never the
	 * bare repository coordinate (every thread of the repository). */
	for (i = 0; i < 4; i++) {
		T_CHECK(reqs_mention(ob[i], 0, issue->id_hex));
		T_CHECK(!reqs_mention(ob[i], 0, coord));
	}
	/* A complete rotation without a failed group is due again after
	 * 24 h (24 min with NGIT_TEST). */
	r = relay_in(v, ob[3]);
	T_EQ_INT(ctl_num(r, "rotation_left"), 0);
	T_EQ_INT(ctl_num(r, "groups_failed"), 0);
	T_CHECK(ctl_num(r, "next_due_in") > 23 * 60);
	T_CHECK(ctl_num(r, "next_due_in") <= 24 * 60);
	cJSON_Delete(v);
	/* The fixed-cardinality retained-state metric (relayd adds the
	 * role label). */
	T_CHECK(metrics_have(b, RETAINED("eligible_authors"), 5));
	T_CHECK(metrics_have(b, RETAINED("desired_relays"), 5));
	T_CHECK(metrics_have(b, RETAINED("cursors"), 5));
	T_CHECK(metrics_have(b, RETAINED("workers"), 5));
	sleep(2);
	T_EQ_INT(client_count(b, "{\"kinds\":[1111],\"#E\":[\"x\"]}"), 0);
	T_EQ_INT(client_has_id(b, r5), 0);
	/* Never dialled, by historyd or anyone. */
	T_EQ_INT(peerctl_log_num(ob[4], "connections"), 0);
	event_destroy(r0);
	event_destroy(r2);
	event_destroy(r5);
	event_destroy(list);
}

static void
test_fallback_for_participant_without_list(void)
{
	struct event *q0, *q1;
	char	      msg[256];
	int	      from = peerctl_nreqs(fb);

	q0 = reply_by(WHO_NOLIST, t0 + 50, "no relay list");
	T_EQ_INT(client_publish(b, q0, msg, sizeof(msg)), 1);
	q1 = reply_by(WHO_OTHER, t0 + 51, "only on the fallback relay");
	T_ASSERT(peerctl_seed(fb, &q1, 1) == 0);
	T_EQ_INT(client_wait_id(b, q1, 30), 1);
	/* The root and the participant's reply are asked on the fallback
	 * relay (syncd may ask them too, for the root author), the bare
	 * repository coordinate never (GRASP-03: a participant-only
	 * mailbox remains constrained to its derived roots). */
	T_CHECK(wait_req_filter_with(fb, from, issue->id_hex, q0->id_hex, NULL,
		    20) >= 0);
	T_CHECK(!reqs_mention(fb, 0, coord));
	event_destroy(q0);
	event_destroy(q1);
}

static void
test_root_author_inbox_in_ordinary_coverage(void)
{
	struct event *list, *late;
	char	      tags[300], msg[256];
	cJSON	     *v = NULL, *r;
	double	      live = -1;
	int	      i;

	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"read\"]]",
	    relayproc_bind_url(rin));
	list = ev(WHO_ROOT, t0 + 90, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	/* historyd probes the inbox once (a read-only fill of the root
	 * author's history mailboxes), then not for 24 (test) minutes. */
	for (i = 0; i < 100; i++) {
		cJSON_Delete(v);
		v = hist_view(b, 5);
		if (v != NULL && (r = relay_in(v, rin)) != NULL &&
		    ctl_num(r, "rotations") >= 1)
			break;
		usleep(100000);
	}
	cJSON_Delete(v);
	T_ASSERT(i < 100);
	sleep(1);
	/* syncd follows the read inbox live (ordinary coverage). */
	for (i = 0; i < 50; i++) {
		v = sync_view(b, 5);
		r = v ? relay_in(v, rin) : NULL;
		live = r ? ctl_num(r, "live_subscriptions") : -1;
		cJSON_Delete(v);
		if (live >= 1)
			break;
		usleep(100000);
	}
	T_CHECK(live >= 1);
	late = reply_by(WHO_LATE, time(NULL), "late reply in the inbox");
	T_ASSERT(peerctl_seed(rin, &late, 1) == 0);
	T_EQ_INT(client_wait_id(b, late, 4), 1);
	event_destroy(list);
	event_destroy(late);
}

static void
test_root_author_without_list_on_fallback(void)
{
	struct event *is2, *rep;
	char	      msg[256];

	is2 = issue_on(coord, WHO_ROOT2, t0 + 100, "t", "second issue");
	T_EQ_INT(client_publish(b, is2, msg, sizeof(msg)), 1);
	rep = reply_to(is2, WHO_LATE, t0 + 110, "reply on the fallback relay");
	T_ASSERT(peerctl_seed(fb, &rep, 1) == 0);
	T_EQ_INT(client_wait_id(b, rep, 20), 1);
	event_destroy(is2);
	event_destroy(rep);
}

static void
test_list_deletion_changes_mailboxes_at_once(void)
{
	struct event *del;
	char	      tags[300], ph[PUBKEY_HEX_LEN + 1], msg[256];
	cJSON	     *v = NULL;
	int	      i;

	tuser_hex(KEYS, WHO_PART, ph);
	snprintf(tags, sizeof(tags), "[[\"a\",\"10002:%s:\"]]", ph);
	del = ev(WHO_PART, time(NULL), 5, tags, "");
	T_EQ_INT(client_publish(b, del, msg, sizeof(msg)), 1);
	/* The participant's outboxes leave at once; without a list its
	 * roots go to the fallback relay. */
	for (i = 0; i < 50; i++) {
		cJSON_Delete(v);
		v = hist_view(b, 5);
		if (v != NULL && relay_in(v, ob[1]) == NULL)
			break;
		usleep(100000);
	}
	T_ASSERT(v != NULL);
	for (i = 0; i < 4; i++)
		T_CHECK(relay_in(v, ob[i]) == NULL);
	T_CHECK(relay_in(v, fb) != NULL);
	cJSON_Delete(v);
	event_destroy(del);
}

/* 1 if a REQ that p logged after the first `from` names s. */
static int
reqs_mention(struct relayproc *p, int from, const char *s)
{
	cJSON *log = peerctl_log(p), *reqs;
	char  *t;
	int    i, n, hit = 0;

	reqs = log ? cJSON_GetObjectItem(log, "reqs") : NULL;
	n = cJSON_GetArraySize(reqs);
	for (i = from; i < n && !hit; i++) {
		if ((t = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, i))))
			hit = strstr(t, s) != NULL;
		free(t);
	}
	cJSON_Delete(log);
	return hit;
}

static cJSON *
sync_view(struct relayproc *p, int secs)
{
	return ctl_role_view(p, ROLE_SYNCD, "sync_plus", secs);
}

/* syncd's roots on the fallback relays, historyd's marks, fb's threads
 * in historyd. */
static void
fallback_state(double *roots, double *marks, double *threads)
{
	cJSON *v, *r;

	*roots = *marks = *threads = -1;
	if ((v = sync_view(b, 5)) != NULL)
		*roots = ctl_num(cJSON_GetObjectItem(v, "sync_plus"),
		    "roots_on_fallback");
	cJSON_Delete(v);
	if ((v = hist_view(b, 5)) != NULL) {
		*marks = ctl_num(v, "fallback_marks");
		*threads = (r = relay_in(v, fb)) ? ctl_num(r, "threads") : 0;
	}
	cJSON_Delete(v);
}

static void
test_unasked_authors_not_on_fallback(void)
{
	struct event *rc;
	char	      msg[256];
	double	      roots, marks, threads, r2, m2, t2;
	int	      from;

	/* The user index never finishes answering: nobody is asked
	 * successfully. */
	T_ASSERT(peerctl_config(idx, "{\"drop_eose\":true}") == 0);
	sleep(1);
	fallback_state(&roots, &marks, &threads);
	T_ASSERT(roots >= 0 && marks >= 0);
	from = peerctl_nreqs(fb);
	issue_a =
	    issue_on(coord, WHO_FA, t0 + 120, "a", "root author, no list");
	T_EQ_INT(client_publish(b, issue_a, msg, sizeof(msg)), 1);
	issue_c = issue_on(coord, WHO_ROOT, t0 + 121, "a", "issue c");
	T_EQ_INT(client_publish(b, issue_c, msg, sizeof(msg)), 1);
	rc = reply_to(issue_c, WHO_FB, t0 + 122, "participant, no list");
	T_EQ_INT(client_publish(b, rc, msg, sizeof(msg)), 1);
	snprintf(fbreply, sizeof(fbreply), "%s", rc->id_hex);
	/* Past a failed index query (3 s in test timing). */
	sleep(5);
	fallback_state(&r2, &m2, &t2);
	T_EQ_INT((int)r2, (int)roots);
	T_EQ_INT((int)m2, (int)marks);
	T_EQ_INT((int)t2, (int)threads);
	T_CHECK(!reqs_mention(fb, from, issue_a->id_hex));
	T_CHECK(!reqs_mention(fb, from, issue_c->id_hex));
	event_destroy(rc);
}

static void
test_index_answer_puts_authors_on_fallback(void)
{
	struct event *ra, *rc;
	double	      roots, marks, threads;
	int	      from = peerctl_nreqs(fb);

	T_ASSERT(issue_a != NULL && issue_c != NULL);
	/* Replies only on the fallback relay, by an author with a list. */
	ra = reply_to(issue_a, WHO_ROOT, t0 + 123, "on fallback, thread a");
	rc = reply_to(issue_c, WHO_ROOT, t0 + 124, "on fallback, thread c");
	T_ASSERT(peerctl_seed(fb, &ra, 1) == 0);
	T_ASSERT(peerctl_seed(fb, &rc, 1) == 0);
	T_ASSERT(peerctl_config(idx, "{\"drop_eose\":false}") == 0);
	/* Root author: syncd's ordinary coverage on the fallback relay;
	 * participant: historyd's probe of it. */
	T_EQ_INT(client_wait_id(b, ra, 30), 1);
	T_EQ_INT(client_wait_id(b, rc, 30), 1);
	T_CHECK(reqs_mention(fb, from, issue_c->id_hex));
	fallback_state(&roots, &marks, &threads);
	T_CHECK(marks >= 2);
	T_CHECK(threads >= 1);
	event_destroy(ra);
	event_destroy(rc);
}

static void
test_restart_keeps_fallback_ownership(void)
{
	double roots, marks, threads, r2, m2, t2;
	cJSON *v, *r, *log, *rq, *f;
	int    from, hconn = -1, i, n;

	fallback_state(&roots, &marks, &threads);
	/* Nobody can be asked again: what follows comes from the table. */
	T_ASSERT(peerctl_config(idx, "{\"drop_eose\":true}") == 0);
	from = peerctl_nreqs(fb);
	T_ASSERT(relayproc_restart(b) == 0);
	v = hist_view(b, 10);
	T_ASSERT(v != NULL);
	T_EQ_INT((int)ctl_num(v, "fallback_marks"), (int)marks);
	T_ASSERT((r = relay_in(v, fb)) != NULL);
	T_EQ_INT((int)ctl_num(r, "threads"), (int)threads);
	T_CHECK(strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "purpose"), 0)
			   ->valuestring,
		    "fallback") == 0);
	cJSON_Delete(v);
	v = sync_view(b, 10);
	T_ASSERT(v != NULL);
	T_EQ_INT((int)ctl_num(cJSON_GetObjectItem(v, "sync_plus"),
		     "roots_on_fallback"),
	    (int)roots);
	T_CHECK(relay_in(v, fb) != NULL);
	cJSON_Delete(v);
	fallback_state(&r2, &m2, &t2);
	T_EQ_INT((int)r2, (int)roots);
	T_EQ_INT((int)t2, (int)threads);
	/* The cursor was not saved: historyd's first REQ on the fallback
	 * relay (its connection is the one naming thread c and the
	 * participant's reply in it, which only historyd covers there) is
	 * filter 0, the "#e" one (no addresses in these threads). */
	T_ASSERT(wait_req_filter_with(fb, from, issue_c->id_hex, fbreply,
		     &hconn, 20) >= 0);
	log = peerctl_log(fb);
	T_ASSERT(log != NULL);
	n = cJSON_GetArraySize(cJSON_GetObjectItem(log, "reqs"));
	for (i = from; i < n; i++) {
		rq = cJSON_GetArrayItem(cJSON_GetObjectItem(log, "reqs"), i);
		if ((int)ctl_num(rq, "conn") == hconn)
			break;
	}
	T_ASSERT(i < n);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(rq, "filters"), 0);
	/* Failed once in a sanitized run: say what came first instead. */
	if (cJSON_GetObjectItemCaseSensitive(f, "#e") == NULL) {
		char *s = cJSON_PrintUnformatted(rq);

		printf("# first REQ %d of %d on conn %d: %s\n", i, n, hconn,
		    s ? s : "?");
		free(s);
	}
	T_CHECK(cJSON_GetObjectItemCaseSensitive(f, "#e") != NULL);
	T_CHECK(cJSON_GetObjectItemCaseSensitive(f, "#a") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(f, "#A") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(f, "#E") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(f, "#q") == NULL);
	cJSON_Delete(log);
	T_ASSERT(peerctl_config(idx, "{\"drop_eose\":false}") == 0);
}

static void
test_relay_list_takes_authors_off_fallback(void)
{
	struct event *la, *lb;
	char	      tags[300], msg[256];
	double	      roots, marks, threads, r2 = -1, m2 = -1, t2 = -1;
	int	      i;

	fallback_state(&roots, &marks, &threads);
	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"read\"]]",
	    relayproc_bind_url(rin));
	la = ev(WHO_FA, time(NULL), 10002, tags, "");
	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"write\"]]",
	    relayproc_bind_url(ob[0]));
	lb = ev(WHO_FB, time(NULL), 10002, tags, "");
	T_EQ_INT(client_publish(b, la, msg, sizeof(msg)), 1);
	T_EQ_INT(client_publish(b, lb, msg, sizeof(msg)), 1);
	/* Off fallback at once, and discoveryd clears both marks. */
	for (i = 0; i < 100; i++) {
		fallback_state(&r2, &m2, &t2);
		if (r2 == roots - 1 && t2 < threads && m2 == marks - 2)
			break;
		usleep(100000);
	}
	T_EQ_INT((int)r2, (int)roots - 1);
	T_CHECK(t2 < threads);
	T_EQ_INT((int)m2, (int)marks - 2);
	event_destroy(la);
	event_destroy(lb);
}

/* A live subscription a peer saw: its connection and id. */
struct live_sub {
	int  ls_conn;
	char ls_sub[64];
};

/* The live ("limit":0) REQs of p naming s, into out (at most max). */
static int
live_subs_naming(struct relayproc *p, const char *s, struct live_sub *out,
    int max)
{
	cJSON *log = peerctl_log(p), *reqs, *rq, *sub;
	char  *t;
	int    n = 0;

	reqs = log ? cJSON_GetObjectItem(log, "reqs") : NULL;
	cJSON_ArrayForEach(rq, reqs) {
		if (n == max ||
		    (t = cJSON_PrintUnformatted(
			 cJSON_GetObjectItem(rq, "filters"))) == NULL)
			continue;
		sub = cJSON_GetObjectItem(rq, "sub");
		if (strstr(t, s) != NULL && strstr(t, "\"limit\":0") != NULL &&
		    cJSON_IsString(sub)) {
			out[n].ls_conn = (int)ctl_num(rq, "conn");
			snprintf(out[n].ls_sub, sizeof(out[n].ls_sub), "%s",
			    sub->valuestring);
			n++;
		}
		free(t);
	}
	cJSON_Delete(log);
	return n;
}

/* The CLOSEs p logged after the first `from` of one of subs. */
static int
closes_of(struct relayproc *p, int from, const struct live_sub *subs, int n)
{
	cJSON *log = peerctl_log(p), *closes, *cl, *sub;
	int    i = 0, hits = 0, j;

	closes = log ? cJSON_GetObjectItem(log, "closes") : NULL;
	cJSON_ArrayForEach(cl, closes) {
		if (i++ < from)
			continue;
		sub = cJSON_GetObjectItem(cl, "sub");
		for (j = 0; j < n; j++)
			hits += cJSON_IsString(sub) &&
			    (int)ctl_num(cl, "conn") == subs[j].ls_conn &&
			    strcmp(sub->valuestring, subs[j].ls_sub) == 0;
	}
	cJSON_Delete(log);
	return hits;
}

/*
 * GRASP-03: "Root-author inbox additions use ordinary coverage, while
 * removal-only changes let existing shared live subscriptions drain
 * naturally."  rin is the read inbox of two root authors; one of them
 * drops it and adds no inbox: syncd's live subscriptions on rin, shared
 * with the other author's roots, are neither closed nor sent again.  The
 * next addition (a new root of the other author) repacks them without
 * the dropped author's root.
 */
static void
test_inbox_removal_drains_live(void)
{
	struct event   *lfa, *root;
	char		msg[256];
	cJSON	       *v = NULL, *r;
	struct live_sub subs[16];
	int		nsubs, from, cfrom, i, hit, draining = -1;

	T_ASSERT(issue_a != NULL && issue_c != NULL);
	/* Both roots live on rin, in syncd's subscriptions. */
	for (i = 0; i < 100; i++) {
		if (live_subs_naming(rin, issue_a->id_hex, subs, 16) > 0 &&
		    live_subs_naming(rin, issue_c->id_hex, subs, 16) > 0)
			break;
		usleep(100000);
	}
	nsubs = live_subs_naming(rin, issue_a->id_hex, subs, 16);
	T_ASSERT(nsubs > 0);
	from = peerctl_nreqs(rin);
	cfrom = peerctl_log_count(rin, "closes");
	/* WHO_FA's newer list names no relay at all: no inbox. */
	lfa = ev(WHO_FA, time(NULL) + 1, 10002, "[]", "");
	T_EQ_INT(client_publish(b, lfa, msg, sizeof(msg)), 1);
	/* syncd took it: rin's live REQs now cover a root no longer
	 * wanted there. */
	for (i = 0; i < 100; i++) {
		cJSON_Delete(v);
		v = sync_view(b, 5);
		r = v ? relay_in(v, rin) : NULL;
		draining = r ? (int)ctl_num(r, "live_draining") : -1;
		if (draining >= 1)
			break;
		usleep(100000);
	}
	cJSON_Delete(v);
	T_CHECK(draining >= 1);
	/* Absence: what a repack would have sent by now. */
	sleep(1);
	T_EQ_INT(closes_of(rin, cfrom, subs, nsubs), 0);
	T_EQ_INT(req_filter_with(rin, from, "\"limit\":0", NULL, NULL), -1);
	/* An addition repacks: a new root of WHO_ROOT, whose read inbox
	 * rin still is, and no longer WHO_FA's. */
	root = issue_on(coord, WHO_ROOT, t0 + 125, "n", "a new root");
	T_EQ_INT(client_publish(b, root, msg, sizeof(msg)), 1);
	hit = wait_req_filter_with(rin, from, root->id_hex, "\"limit\":0", NULL,
	    10);
	T_CHECK(hit >= 0);
	if (hit >= 0) {
		cJSON *log = peerctl_log(rin);
		char  *t = cJSON_PrintUnformatted(
		     cJSON_GetArrayItem(cJSON_GetObjectItem(log, "reqs"), hit));

		T_CHECK(t != NULL && strstr(t, issue_c->id_hex) != NULL &&
		    strstr(t, issue_a->id_hex) == NULL);
		free(t);
		cJSON_Delete(log);
	}
	event_destroy(lfa);
	event_destroy(root);
}

/* How many REQs p logged after the first `from` name s. */
static int
reqs_naming(struct relayproc *p, int from, const char *s)
{
	cJSON *log = peerctl_log(p), *reqs, *rq;
	char  *t;
	int    i = 0, n = 0;

	reqs = log ? cJSON_GetObjectItem(log, "reqs") : NULL;
	cJSON_ArrayForEach(rq, reqs) {
		if (i++ < from ||
		    (t = cJSON_PrintUnformatted(
			 cJSON_GetObjectItem(rq, "filters"))) == NULL)
			continue;
		n += strstr(t, s) != NULL;
		free(t);
	}
	cJSON_Delete(log);
	return n;
}

/*
 * GRASP-03: "a failed group advances the cursor after a five-minute
 * delay and is retried on a later rotation"; "A successful complete
 * rotation refreshes after 24 hours".  A participant's mailbox fails its
 * "#E" group every time (CLOSED): that group alone is asked again every
 * 5 (test) seconds; its "#e" and "#q" groups, which succeeded, wait for
 * the 24 (test) minute refresh.
 */
static void
test_failed_group_retries_alone(void)
{
	struct event *rep, *list;
	char	      tags[300], msg[256];
	cJSON	     *v = NULL, *r = NULL;
	int	      from, i, iq, nE = 0;

	T_ASSERT(peerctl_config(ob[1], "{\"closed_tag\":69}") == 0); /* 'E' */
	from = peerctl_nreqs(ob[1]);
	rep = reply_by(WHO_RETRY, t0 + 140, "my mailbox fails one group");
	T_EQ_INT(client_publish(b, rep, msg, sizeof(msg)), 1);
	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"write\"]]",
	    relayproc_bind_url(ob[1]));
	list = ev(WHO_RETRY, t0 + 141, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	/* The first rotation ends with its "#q" group (the "#e" one may
	 * take several pages, the "#E" one fails in between) ... */
	iq = wait_req_filter_with(ob[1], from, "\"#q\"", NULL, NULL, 15);
	T_ASSERT(iq >= 0);
	/* ... then two retries, 5 (test) s apart: "#E" alone. */
	for (i = 0; i < 200 && (nE = reqs_naming(ob[1], iq + 1, "\"#E\"")) < 2;
	     i++)
		usleep(100000);
	T_CHECK(nE >= 2);
	T_EQ_INT(reqs_naming(ob[1], iq + 1, "\"#e\""), 0);
	T_EQ_INT(reqs_naming(ob[1], iq + 1, "\"#q\""), 0);
	v = relay_when(ob[1], "rotations", 1, 2, &r);
	T_ASSERT(v != NULL && r != NULL);
	T_EQ_INT(ctl_num(r, "rotations"), 1);
	T_EQ_INT(ctl_num(r, "failed_groups_due"), 1);
	T_CHECK(ctl_num(r, "groups_failed") >= 3);
	T_CHECK(ctl_num(r, "next_due_in") <= 5);
	cJSON_Delete(v);
	T_ASSERT(peerctl_config(ob[1], "{\"closed_tag\":0}") == 0);
	event_destroy(rep);
	event_destroy(list);
}

/* A newer announcement of owner's d on p declaring maint_hex. */
static int
reannounce(struct relayproc *p, int owner, const char *d, const char *maint_hex,
    int64_t at)
{
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      npub[NIP19_KEY_BUFSZ], tags[1024], msg[256];
	struct event *ann;
	int	      ok;

	tuser_sk(KEYS, owner, sk);
	event_pubkey_of(sk, pk);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"http://%s/"
	    "%s/%s.git\"],[\"relays\",\"ws://%s\"],[\"maintainers\",\"%s\"]]",
	    d, relayproc_domain(p), npub, d, relayproc_domain(p), maint_hex);
	ann = ev(owner, at, 30617, tags, "");
	if ((ok = client_publish(p, ann, msg, sizeof(msg))) != 1)
		printf("# announcement refused: %s\n", msg);
	event_destroy(ann);
	return ok;
}

/* The historyd view once relay p is (want 1) or is not (0) in it. */
static cJSON *
view_when(struct relayproc *p, int want, int secs)
{
	cJSON *v = NULL;
	int    i;

	for (i = 0; i < secs * 10; i++) {
		cJSON_Delete(v);
		if ((v = hist_view(b, 5)) != NULL &&
		    (relay_in(v, p) != NULL) == want)
			break;
		usleep(100000);
	}
	return v;
}

/*
 * Excluded (GRASP-03): mailboxes of authors with no accepted thread
 * events who are not owners or maintainers.  A participant whose only
 * thread's root is deleted keeps its stored relay list but loses its
 * mailboxes; a maintainer with no thread events has only its read or
 * unmarked inboxes probed, never a write-only outbox.
 */
static void
test_no_mailboxes_without_thread_events(void)
{
	struct event *is, *rep, *list, *del;
	char	      tags[600], msg[256], h[PUBKEY_HEX_LEN + 1], f[200];
	cJSON	     *v, *r;

	is = issue_on(coord, WHO_ROOT2, t0 + 130, "d", "to be deleted");
	T_EQ_INT(client_publish(b, is, msg, sizeof(msg)), 1);
	rep = reply_to(is, WHO_DEL, t0 + 131, "my only reply");
	T_EQ_INT(client_publish(b, rep, msg, sizeof(msg)), 1);
	/* The outbox never sends EOSE: its first group fails (the 3 s
	 * test fetch timeout) and the relay is due again after the 5 min
	 * retry delay (5 s with NGIT_TEST). */
	T_ASSERT(peerctl_config(ob[2], "{\"drop_eose\":true}") == 0);
	snprintf(tags, sizeof(tags), "[[\"r\",\"%s\",\"write\"]]",
	    relayproc_bind_url(ob[2]));
	list = ev(WHO_DEL, t0 + 132, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	v = relay_when(ob[2], "groups_failed", 1, 10, &r);
	T_ASSERT(v != NULL && r != NULL);
	T_CHECK(has_purpose(r, "participant"));
	T_EQ_INT(ctl_num(r, "groups_failed"), 1);
	T_EQ_STR(cJSON_GetObjectItem(r, "last")->valuestring, "failed");
	T_CHECK(
	    ctl_num(r, "next_due_in") > 4 && ctl_num(r, "next_due_in") <= 5);
	T_CHECK(ctl_num(r, "cursor") == 1);
	cJSON_Delete(v);
	T_ASSERT(peerctl_config(ob[2], "{\"drop_eose\":false}") == 0);
	/* The root's author deletes it: the participant has no accepted
	 * thread left, and its outbox leaves, its list still stored. */
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"],[\"k\",\"1621\"]]",
	    is->id_hex);
	del = ev(WHO_ROOT2, t0 + 133, 5, tags, "");
	T_EQ_INT(client_publish(b, del, msg, sizeof(msg)), 1);
	v = view_when(ob[2], 0, 10);
	T_ASSERT(v != NULL);
	T_CHECK(relay_in(v, ob[2]) == NULL);
	cJSON_Delete(v);
	tuser_hex(KEYS, WHO_DEL, h);
	snprintf(f, sizeof(f), "{\"kinds\":[10002],\"authors\":[\"%s\"]}", h);
	T_EQ_INT(client_count(b, f), 1);
	event_destroy(list);
	/* A declared maintainer, in no thread, listing a write-only
	 * outbox and a read inbox: only the inbox is probed. */
	tuser_hex(KEYS, WHO_MAINT, h);
	T_ASSERT(reannounce(b, WHO_OWNER, "hist", h, t0 + 1) == 1);
	snprintf(tags, sizeof(tags),
	    "[[\"r\",\"%s\",\"write\"],"
	    "[\"r\",\"%s\",\"read\"]]",
	    relayproc_bind_url(ob[3]), relayproc_bind_url(ob[4]));
	list = ev(WHO_MAINT, t0 + 134, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	v = view_when(ob[4], 1, 10);
	T_ASSERT(v != NULL && (r = relay_in(v, ob[4])) != NULL);
	T_CHECK(has_purpose(r, "repository"));
	T_CHECK(relay_in(v, ob[3]) == NULL);
	cJSON_Delete(v);
	event_destroy(is);
	event_destroy(rep);
	event_destroy(list);
	event_destroy(del);
}

static void
test_owner_read_inbox_public_only(void)
{
	struct event *list, *st, *st2, *ann, *oroot;
	char	      tags[600], msg[256], oh[PUBKEY_HEX_LEN + 1], ocoord[200],
	    pcoord[200];
	char   f[300];
	cJSON *v = NULL, *r;
	int    before, i, ob0from, ob0priv, nroots, hconn = -1;

	/* Not the owner's: another owner's repository with a root ... */
	T_ASSERT(host_repo(b, WHO_OWNER2, "other", NULL) == 0);
	tuser_hex(KEYS, WHO_OWNER2, oh);
	snprintf(ocoord, sizeof(ocoord), "30617:%s:other", oh);
	oroot = issue_on(ocoord, WHO_OTHER, t0 + 55, "o", "another repository");
	T_EQ_INT(client_publish(b, oroot, msg, sizeof(msg)), 1);
	/* ... and the owner's own announcement never pushed (purgatory). */
	tuser_hex(KEYS, WHO_OWNER, oh);
	snprintf(pcoord, sizeof(pcoord), "30617:%s:purg", oh);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"purg\"],[\"clone\",\"http://"
	    "%s/x/purg.git\"]]",
	    relayproc_domain(b));
	ann = ev(WHO_OWNER, t0 + 56, 30617, tags, "");
	client_publish(b, ann, msg, sizeof(msg));
	/* The owner's read inboxes: own, and ob[0], already WHO_FB's
	 * participant mailbox for thread c. */
	ob0from = peerctl_nreqs(ob[0]);
	snprintf(tags, sizeof(tags),
	    "[[\"r\",\"%s\",\"read\"],"
	    "[\"r\",\"%s\",\"read\"]]",
	    relayproc_bind_url(own), relayproc_bind_url(ob[0]));
	list = ev(WHO_OWNER, t0 + 60, 10002, tags, "");
	T_EQ_INT(client_publish(b, list, msg, sizeof(msg)), 1);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"],[\"a\",\"%s\"]]",
	    issue->id_hex, coord);
	st = ev(WHO_STATUS, t0 + 70, 1632, tags, "closed");
	T_ASSERT(peerctl_seed(own, &st, 1) == 0);
	T_EQ_INT(client_wait_id(b, st, 30), 1);
	/* own's rotation done, its worker idle. */
	for (i = 0; i < 100; i++) {
		cJSON_Delete(v);
		v = hist_view(b, 5);
		if (v != NULL && (r = relay_in(v, own)) != NULL &&
		    ctl_num(r, "rotations") >= 1 &&
		    ctl_num(r, "rotation_left") == 0 &&
		    strcmp(cJSON_GetObjectItem(r, "worker")->valuestring,
			"idle") == 0)
			break;
		usleep(100000);
	}
	T_ASSERT(v != NULL);
	T_ASSERT((r = relay_in(v, own)) != NULL);
	T_CHECK(strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "purpose"), 0)
			   ->valuestring,
		    "repository") == 0);
	/* Exactly the Full repository and its live roots. */
	snprintf(f, sizeof(f), "{\"kinds\":[1617,1618,1621],\"#a\":[\"%s\"]}",
	    coord);
	nroots = client_count(b, f);
	T_CHECK(nroots >= 4);
	T_EQ_INT((int)ctl_num(r, "threads"), 1 + nroots);
	T_CHECK(!reqs_mention(own, 0, ocoord));
	T_CHECK(!reqs_mention(own, 0, oroot->id_hex));
	T_CHECK(!reqs_mention(own, 0, pcoord));
	/* ob[0]: one relay for both purposes, one filter set over the
	 * union of both scopes (a root only the repository scope has, a
	 * reply only the participant's has), on one connection. */
	T_ASSERT((r = relay_in(v, ob[0])) != NULL);
	T_CHECK(has_purpose(r, "participant"));
	T_CHECK(has_purpose(r, "repository"));
	cJSON_Delete(v);
	T_CHECK(wait_req_filter_with(ob[0], ob0from, issue->id_hex, fbreply,
		    &hconn, 15) >= 0);
	T_EQ_INT(conns_naming(ob[0], ob0from, issue->id_hex), 1);
	/* No live subscription in syncd on any of these inboxes or
	 * participant mailboxes ... */
	T_ASSERT((v = sync_view(b, 5)) != NULL);
	for (i = 0; i < 4; i++)
		T_CHECK(relay_in(v, ob[i]) == NULL);
	T_CHECK(relay_in(v, own) == NULL);
	cJSON_Delete(v);
	/* ... and historyd's exclusively history connection to own
	 * retired once its rotation was done. */
	for (i = 0; i < 50 && peerctl_log_num(own, "open") != 0; i++)
		usleep(100000);
	T_EQ_INT(peerctl_log_num(own, "open"), 0);

	/*
	 * Private mode: the same inbox is not a history relay.  The REQs
	 * counted from here on are the private instance's: the public one
	 * is stopped first (it could still ask with the coordinate between
	 * a count and its stop), and a REQ it sent just before is let in.
	 */
	relayproc_stop(b);
	usleep(200000);
	ob0priv = peerctl_nreqs(ob[0]);
	relayproc_setenv(b, "NGIT_PRIVATE_MODE=true");
	T_ASSERT(relayproc_restart(b) == 0);
	v = hist_view(b, 10);
	T_ASSERT(v != NULL);
	T_EQ_INT(ctl_bool(v, "private_mode"), 1);
	T_CHECK(relay_in(v, own) == NULL);
	/* Participants' relays still are, for their roots only: a
	 * private instance never probes a peer's mailbox with the
	 * repository coordinate (GRASP-03, deliberately excluded). */
	T_CHECK(relay_in(v, fb) != NULL);
	T_ASSERT((r = relay_in(v, ob[0])) != NULL);
	T_CHECK(has_purpose(r, "participant"));
	T_CHECK(!has_purpose(r, "repository"));
	cJSON_Delete(v);
	T_CHECK(wait_req_filter_with(ob[0], ob0priv, issue_c->id_hex, fbreply,
		    NULL, 15) >= 0);
	T_CHECK(!reqs_mention(ob[0], ob0priv, coord));
	before = peerctl_nreqs(own);
	st2 = ev(WHO_STATUS, t0 + 80, 1630, tags, "reopened");
	T_ASSERT(peerctl_seed(own, &st2, 1) == 0);
	for (i = 0; i < 3; i++)
		sleep(1);
	T_EQ_INT(peerctl_nreqs(own), before);
	relayproc_setenv(b, "NGIT_PRIVATE_MODE=false");
	event_destroy(list);
	event_destroy(st);
	event_destroy(st2);
	event_destroy(ann);
	event_destroy(oroot);
}

/*
 * The /metrics series (name and labels, not values) of discoveryd and
 * historyd, sorted, one per line; *bad counts lines carrying a relay URL
 * or a 64-digit hex key.  NULL if /metrics did not answer.
 */
static char *
plus_series(struct relayproc *p, int *bad)
{
	char	  *h = NULL, *body = NULL, *line, *save = NULL, *sp;
	char	 **v = NULL;
	size_t	   n = 0, i, j;
	int	   status = 0;
	struct buf out = BUF_INIT;

	*bad = 0;
	if (http_get(relayproc_host(p), relayproc_port(p), "/metrics", NULL,
		TMO, &status, &h, &body) != 0 ||
	    status != 200 || body == NULL) {
		free(h);
		free(body);
		return NULL;
	}
	for (line = strtok_r(body, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' ||
		    (strstr(line, "role=\"discoveryd\"") == NULL &&
			strstr(line, "role=\"historyd\"") == NULL))
			continue;
		for (i = 0, j = 0; line[i] != '\0' && j < 64; i++)
			j = strchr("0123456789abcdef", line[i]) ? j + 1 : 0;
		if (strstr(line, "ws://") || strstr(line, "127.0.0.1") ||
		    j >= 64)
			(*bad)++;
		if ((sp = strrchr(line, ' ')) != NULL)
			*sp = '\0';
		v = realloc(v, (n + 1) * sizeof(*v));
		v[n++] = line;
	}
	/* Sorted (insertion: about a hundred lines). */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		buf_add(&out, v[i], strlen(v[i]));
		buf_addc(&out, '\n');
	}
	buf_addc(&out, '\0');
	free(v);
	free(h);
	free(body);
	return out.b_data;
}

/* The value of the /metrics line starting with series, or -1. */
static double
metric_value(struct relayproc *p, const char *series)
{
	char  *h = NULL, *body = NULL, *at;
	double v = -1;
	int    status = 0;

	if (http_get(relayproc_host(p), relayproc_port(p), "/metrics", NULL,
		TMO, &status, &h, &body) == 0 &&
	    status == 200 && body != NULL &&
	    (at = strstr(body, series)) != NULL)
		v = strtod(at + strlen(series), NULL);
	free(h);
	free(body);
	return v;
}

/* Publishes e on ws and destroys it; its OK flag, or -1. */
static int
publish_one(struct wsc *ws, struct event *e)
{
	char *msg = NULL;
	int   ok = -1;

	if (nostr_publish(ws, e, TMO, &ok, &msg) != 0)
		ok = -1;
	if (ok != 1)
		printf("# %s: %s\n", e->id_hex, msg ? msg : "no answer");
	free(msg);
	event_destroy(e);
	return ok;
}

#define DISC_ELIGIBLE "graspd_discoveryd_eligible_authors{role=\"discoveryd\"} "

static void
test_metrics_fixed_cardinality_with_1000_authors(void)
{
	struct relayproc *m;
	struct event	 *root;
	struct wsc	 *ws = NULL;
	char tags[600], oh[PUBKEY_HEX_LEN + 1], mc[200], *one = NULL,
							 *many = NULL;
	char	   *msg = NULL;
	int	    i, ok, bad1 = 0, badn = 0, dead;
	const char *env[] = { "NGIT_SYNC_ALLOW_PRIVATE_TARGETS=true", NULL };

	T_ASSERT((m = relayproc_start("graspd", env)) != NULL);
	T_ASSERT(host_repo(m, WHO_MOWNER, "metrics", NULL) == 0);
	/* One eligible author: the owner. */
	for (i = 0; i < 100 && metric_value(m, DISC_ELIGIBLE) != 1; i++)
		usleep(100000);
	T_EQ_INT((int)metric_value(m, DISC_ELIGIBLE), 1);
	T_CHECK(metrics_have(m, RETAINED("desired_relays") " 0", 5));
	sleep(2);
	T_ASSERT((one = plus_series(m, &bad1)) != NULL);

	/* A root by the owner and NMANY participants replying to it, each
	 * listing its own history mailbox: a distinct path on a port where
	 * nothing listens. */
	tuser_hex(KEYS, WHO_MOWNER, oh);
	snprintf(mc, sizeof(mc), "30617:%s:metrics", oh);
	root = issue_on(mc, WHO_MOWNER, t0 + 10, "m", "metrics root");
	T_ASSERT((ws = wsc_connect(relayproc_host(m), relayproc_port(m), "/",
		      TMO)) != NULL);
	T_ASSERT(nostr_publish(ws, root, TMO, &ok, &msg) == 0 && ok == 1);
	free(msg);
	dead = relayproc_free_port("127.0.0.1");
	for (i = 0; i < NMANY; i++) {
		T_ASSERT(publish_one(ws,
			     reply_to(root, WHO_MANY + i, t0 + 20,
				 "one of many")) == 1);
		snprintf(tags, sizeof(tags),
		    "[[\"r\",\"ws://127.0.0.1:%d/m%d\"]]", dead, i);
		T_ASSERT(publish_one(ws,
			     ev(WHO_MANY + i, t0 + 30, 10002, tags, "")) == 1);
	}
	wsc_close(ws);
	ws = NULL;
	/* The values follow the count ... */
	for (i = 0; i < 300; i++) {
		if (metric_value(m, DISC_ELIGIBLE) == NMANY + 1 &&
		    metric_value(m, RETAINED("eligible_authors") " ") ==
			NMANY + 1 &&
		    metric_value(m, RETAINED("desired_relays") " ") == NMANY)
			break;
		usleep(100000);
	}
	T_EQ_INT((int)metric_value(m, DISC_ELIGIBLE), NMANY + 1);
	T_EQ_INT((int)metric_value(m, RETAINED("eligible_authors") " "),
	    NMANY + 1);
	T_EQ_INT((int)metric_value(m, RETAINED("desired_relays") " "), NMANY);
	T_CHECK(metric_value(m, RETAINED("cursors") " ") == NMANY);
	T_CHECK(metric_value(m, RETAINED("workers") " ") <= 32);
	/* ... and the series are the same, with no URL or pubkey. */
	T_ASSERT((many = plus_series(m, &badn)) != NULL);
	if (strcmp(one, many) != 0)
		printf("# with one author:\n%s# with %d:\n%s", one, NMANY,
		    many);
	T_CHECK(strcmp(one, many) == 0);
	T_EQ_INT(bad1, 0);
	T_EQ_INT(badn, 0);
	free(one);
	free(many);
	event_destroy(root);
	relayproc_free(m);
}

static void
test_off_switch(void)
{
	cJSON *v;
	int    before[NOB], brin, bfb, i;

	relayproc_setenv(b, "NGIT_SYNC_PLUS_ENABLED=false");
	T_ASSERT(relayproc_restart(b) == 0);
	for (i = 0; i < NOB; i++)
		before[i] = peerctl_nreqs(ob[i]);
	v = hist_view(b, 10);
	brin = peerctl_nreqs(rin);
	bfb = peerctl_nreqs(fb);
	T_ASSERT(v != NULL);
	T_EQ_INT(ctl_bool(v, "grasp03_enabled"), 0);
	T_EQ_INT(ctl_num(v, "workers"), 0);
	T_CHECK(cJSON_GetObjectItem(v, "relays") == NULL);
	cJSON_Delete(v);
	sleep(3);
	for (i = 0; i < NOB; i++)
		T_EQ_INT(peerctl_nreqs(ob[i]), before[i]);
	T_EQ_INT(peerctl_nreqs(rin), brin);
	T_EQ_INT(peerctl_nreqs(fb), bfb);
}

static int
history_setup(void)
{
	struct relayproc **peers[NOB + 4] = { &fb, &own, &rin, &idx };
	/* An empty user index: its successful answers put authors without
	 * a relay list on the fallback relay (GRASP-03). */
	const char	  *keys[] = { "NGIT_SYNC_PLUS_FALLBACK_RELAYS",
		       "NGIT_SYNC_PLUS_USER_INDEX_RELAYS" };
	struct relayproc  *at[2];
	int		   i;

	t0 = (int64_t)time(NULL) - 3600;
	for (i = 0; i < NOB; i++)
		peers[4 + i] = &ob[i];
	if (tint_home(tmpdir, sizeof(tmpdir), "graspd-hist", "history_setup") ==
		-1 ||
	    tint_peers_start(peers, TINT_N(peers), "history_setup") == -1)
		return 1;
	at[0] = fb;
	at[1] = idx;
	if ((b = tint_sync_graspd(keys, at, TINT_N(at), NULL,
		 "history_setup")) == NULL)
		return 1;
	return 0;
}

static void
history_cleanup(void)
{
	struct relayproc *rps[] = { b, fb, own, rin, idx };
	struct event	 *evs[] = { issue, issue_a, issue_c };

	if (t_fail)
		relayproc_dump_log(b, 80);
	tuser_events_destroy(evs, TINT_N(evs));
	tint_relays_free(rps, TINT_N(rps));
	tint_relays_free(ob, NOB);
	tdir_remove(tmpdir);
}

static const struct t_case cases[] = {
	T_CASE(test_participant_history_mailboxes),
	T_CASE(test_fallback_for_participant_without_list),
	T_CASE(test_root_author_inbox_in_ordinary_coverage),
	T_CASE(test_root_author_without_list_on_fallback),
	T_CASE(test_list_deletion_changes_mailboxes_at_once),
	T_CASE(test_unasked_authors_not_on_fallback),
	T_CASE(test_index_answer_puts_authors_on_fallback),
	T_CASE(test_restart_keeps_fallback_ownership),
	T_CASE(test_relay_list_takes_authors_off_fallback),
	T_CASE(test_inbox_removal_drains_live),
	T_CASE(test_failed_group_retries_alone),
	T_CASE(test_no_mailboxes_without_thread_events),
	T_CASE(test_owner_read_inbox_public_only),
	T_CASE(test_metrics_fixed_cardinality_with_1000_authors),
	T_CASE(test_off_switch),
};

T_MAIN_WITH(cases, history_setup, history_cleanup, 0)
