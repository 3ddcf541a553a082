/*
 * relayd_test.c: relayd as a Nostr client sees it, over real websockets on
 * loopback: NIP-01, NIP-11, CORS, the GRASP-01 acceptance cases (reference
 * brief 6.3), replaceable events, deletion, limits and malformed input.
 * A new announcement is held in purgatory until git data arrives, so the
 * cases that need a served repository publish it, a state event and push
 * a commit with the real git client, as grasp-audit's "ValidRepoServed"
 * fixture does (git_test.c covers purgatory itself).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "json.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "tuser.h"
#include "wsclient.h"

#define TMO	 5000
#define MSG_HELD "purgatory: won't be served until git data arrives"
#define MSG_NOT_ELIGIBLE \
	"blocked: profiles and relay lists are accepted " \
	"only from owners and maintainers of hosted repositories and " \
	"authors of their accepted threads"

static struct relayproc *rp;	   /* the shared relay */
static int		 seq_d;	   /* makes identifiers unique */
static char		 tmp[256]; /* local repositories, HOME */
static int		 seq_dir;

/* Byte 0 of this test's keys (tint_key()). */
#define KEY0 0x11

static void
key(int n, uint8_t sk[SECKEY_LEN], char pkhex[PUBKEY_HEX_LEN + 1],
    char npub[NIP19_KEY_BUFSZ])
{
	uint8_t pk[PUBKEY_LEN];

	tint_key(KEY0, n, sk);
	event_pubkey_of(sk, pk);
	if (pkhex)
		hex_encode(pk, PUBKEY_LEN, pkhex);
	if (npub)
		nip19_encode("npub", pk, npub, NIP19_KEY_BUFSZ);
}

static struct wsc *
conn(struct relayproc *r)
{
	return wsc_connect(relayproc_host(r), relayproc_port(r), "/", TMO);
}

/* Number of events a REQ returns (-1 on failure). */
static int
count(struct wsc *ws, const char *filter)
{
	char **evs = NULL;
	size_t n = 0;
	char   subid[32];
	int    rc;

	snprintf(subid, sizeof(subid), "c%d", rand());
	rc = nostr_req(ws, subid, filter, TMO, &evs, &n, NULL);
	nostr_events_free(evs);
	nostr_close_sub(ws, subid);
	return rc == 0 ? (int)n : -1;
}

static int
has_id(struct wsc *ws, const char *id)
{
	char f[128];

	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id);
	return count(ws, f);
}

/*
 * Makes an announcement by key n for identifier d; clone and relays name
 * this relay unless told otherwise.  maint is a JSON fragment like
 * ",[\"maintainers\",\"<hex>\"]" or "".
 */
static struct event *
announcement(int n, const char *d, int list_clone, int list_relays,
    const char *maint)
{
	uint8_t	      sk[SECKEY_LEN];
	char	      npub[NIP19_KEY_BUFSZ];
	struct buf    b = BUF_INIT;
	struct event *ev;
	const char   *dom = relayproc_domain(rp);

	key(n, sk, NULL, npub);
	buf_printf(&b, "[[\"d\",\"%s\"],[\"name\",\"%s\"],", d, d);
	if (list_clone)
		buf_printf(&b, "[\"clone\",\"http://%s/%s/%s.git\"],", dom,
		    npub, d);
	else
		buf_printf(&b,
		    "[\"clone\",\"https://elsewhere.example/%s/"
		    "%s.git\"],",
		    npub, d);
	if (list_relays)
		buf_printf(&b,
		    "[\"relays\",\"wss://other.example\",\"ws://%s\"]", dom);
	else
		buf_printf(&b, "[\"relays\",\"wss://other.example\"]");
	buf_printf(&b, "%s]", maint ? maint : "");
	ev = event_new_signed(sk, time(NULL), 30617, b.b_data, "");
	buf_free(&b);
	return ev;
}

static void
repo_coord(int n, const char *d, char *out, size_t outlen)
{
	uint8_t sk[SECKEY_LEN];
	char	hex[PUBKEY_HEX_LEN + 1];

	key(n, sk, hex, NULL);
	snprintf(out, outlen, "30617:%s:%s", hex, d);
}

static struct event *
signed_by(int n, int64_t created_at, uint32_t kind, const char *tags,
    const char *content)
{
	return tint_signed(KEY0, n, created_at, kind, tags, content);
}

static void
next_d(char *d, size_t len)
{
	snprintf(d, len, "repo-%d", ++seq_d);
}

/*
 * Publishes ann (by key n, for d), which must be held in purgatory, and
 * serves it: a state event naming a new commit, pushed with git.  Returns
 * 1 once the announcement is served, 0 otherwise.
 */
static int
serve(struct wsc *ws, int n, const struct event *ann, const char *d)
{
	uint8_t sk[SECKEY_LEN];
	char	msg[256], dir[512], f[128], **evs = NULL;
	size_t	k = 0;
	int	i;

	if (nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)) != 1 ||
	    strcmp(msg, MSG_HELD) != 0) {
		printf("# serve: announcement: %s\n", msg);
		return 0;
	}
	key(n, sk, NULL, NULL);
	snprintf(dir, sizeof(dir), "%s/w%d", tmp, ++seq_dir);
	if (gt_release(ws, sk, relayproc_domain(rp), d, dir, NULL) == -1)
		return 0;
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", ann->id_hex);
	for (i = 0; i < 50 && k == 0; i++) {
		nostr_events_free(evs);
		evs = NULL;
		if (nostr_req(ws, "serve", f, TMO, &evs, &k, NULL) != 0)
			k = 0;
		nostr_close_sub(ws, "serve");
		if (k == 0)
			usleep(100000);
	}
	nostr_events_free(evs);
	return k == 1;
}

/*
 * Publishes ev on ws and destroys it: 1 when relayd refused it with an
 * OK false whose message has why in it, else 0 (the message printed).
 */
static int
refused_with(struct wsc *ws, struct event *ev, const char *why)
{
	char msg[256];
	int  ok;

	ok = nostr_publish_take(ws, ev, TMO, msg, sizeof(msg));
	if (ok == 0 && strstr(msg, why) != NULL)
		return 1;
	printf("# OK %d \"%s\", not refused with \"%s\"\n", ok, msg, why);
	return 0;
}

/*
 * A new repository of key n, served (serve()): its identifier goes to d
 * (dlen bytes), its coordinate to coord (clen bytes).  Returns its
 * announcement (the caller destroys it), or NULL when it was not served.
 */
static struct event *
served_repo(struct wsc *ws, int n, char *d, size_t dlen, char *coord,
    size_t clen)
{
	struct event *ann;

	next_d(d, dlen);
	if ((ann = announcement(n, d, 1, 1, "")) == NULL ||
	    !serve(ws, n, ann, d)) {
		event_destroy(ann);
		return NULL;
	}
	repo_coord(n, d, coord, clen);
	return ann;
}

/* An event by key n, now, of kind, with the one tag [tag, value]. */
static struct event *
tagged(int n, uint32_t kind, const char *tag, const char *value,
    const char *content)
{
	char tags[300];

	snprintf(tags, sizeof(tags), "[[\"%s\",\"%s\"]]", tag, value);
	return signed_by(n, time(NULL), kind, tags, content);
}

static void
test_nip11_document(void)
{
	int		 status = 0;
	char		*hdrs = NULL, *body = NULL, *v;
	struct json_doc *doc;
	struct json	*root, *g, *e, *sw;
	int		 found = 0;

	T_ASSERT(http_get(relayproc_host(rp), relayproc_port(rp), "/",
		     "Accept: application/nostr+json\r\n", TMO, &status, &hdrs,
		     &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v && strstr(v, "application/nostr+json"));
	free(v);
	v = http_header_value(hdrs, "access-control-allow-origin");
	T_CHECK(v && strcmp(v, "*") == 0);
	free(v);
	root = json_parse(body, strlen(body), &doc, NULL, 0);
	T_ASSERT(root != NULL);
	T_CHECK(json_get(root, "name") && json_get(root, "name")->len > 0);
	T_CHECK(json_get(root, "description") != NULL);
	/*
	 * The program's name (relay_software's default), no made-up project
	 * URL (graspd has no public one yet); grasp-audit requires the field.
	 */
	sw = json_get(root, "software");
	T_CHECK(sw != NULL && sw->type == JSON_STRING &&
	    strcmp(sw->s, "graspd") == 0);
	T_CHECK(
	    json_get(root, "version") && json_get(root, "version")->len > 0);
	T_CHECK(
	    json_get(root, "pubkey") && json_get(root, "pubkey")->len == 64);
	g = json_get(root, "supported_grasps");
	T_ASSERT(g && g->type == JSON_ARRAY);
	for (e = g->child; e; e = e->next) {
		T_CHECK(e->type == JSON_STRING && e->len == 8 &&
		    strncmp(e->s, "GRASP-", 6) == 0);
		if (e->type == JSON_STRING && strcmp(e->s, "GRASP-01") == 0)
			found = 1;
	}
	T_CHECK(found);
	/* syncd and GRASP-03 are on by default. */
	for (found = 0, e = g->child; e; e = e->next)
		if (e->type == JSON_STRING &&
		    (strcmp(e->s, "GRASP-02") == 0 ||
			strcmp(e->s, "GRASP-03") == 0))
			found++;
	T_EQ_INT(found, 2);
	e = json_get(root, "repo_acceptance_criteria");
	T_CHECK(e && e->type == JSON_STRING && e->len > 0);
	T_CHECK(json_get(root, "curation") == NULL);
	e = json_get(root, "limitation");
	T_CHECK(e && json_get(e, "max_subscriptions") &&
	    json_get(e, "max_message_length") && json_get(e, "max_limit"));
	json_free(doc);
	free(hdrs);
	free(body);
}

static void
test_cors_on_every_response_and_options_204(void)
{
	static const struct {
		const char *method, *path;
		int	    status;
	} cases[] = {
		{ "OPTIONS", "/", 204 },
		{ "OPTIONS", "/npub1x/repo.git/info/refs", 204 },
		{ "GET", "/", 200 },
		{ "GET", "/no/such/page", 404 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int    status = 0;
		char  *hdrs = NULL, *body = NULL;
		size_t blen;

		T_ASSERT(http_request(relayproc_host(rp), relayproc_port(rp),
			     cases[i].method, cases[i].path, NULL, NULL, 0, TMO,
			     &status, &hdrs, &body, &blen) == 0);
		T_EQ_INT(status, cases[i].status);
		T_CHECK(tint_cors_ok(hdrs));
		free(hdrs);
		free(body);
	}
}

static void
test_announcement_listing_service_is_held_then_served_with_tags(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      d[32], f[160], **evs = NULL, msg[256];
	size_t	      n = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ev = announcement(1, d, 1, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(has_id(ws, ev->id_hex), 0);
	T_EQ_INT(serve(ws, 1, ev, d), 1);
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", ev->id_hex);
	T_ASSERT(nostr_req(ws, "a", f, TMO, &evs, &n, NULL) == 0);
	T_EQ_INT(n, 1);
	T_CHECK(strstr(evs[0], "\"relays\"") != NULL);
	T_CHECK(strstr(evs[0], d) != NULL);
	nostr_events_free(evs);
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_announcement_must_list_service_in_clone_and_relays(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      d[32], msg[256], npub[NIP19_KEY_BUFSZ], tags[512];
	uint8_t	      sk[SECKEY_LEN];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ev = announcement(2, d, 0, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0);
	T_CHECK(strstr(msg, "clone") != NULL);
	event_destroy(ev);
	ev = announcement(2, d, 1, 0, "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);

	/* A host that merely contains ours is not ours (the substring
	 * quirk of the reference). */
	key(2, sk, NULL, npub);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"http://"
	    "%s0/%s/%s.git\"],[\"relays\",\"ws://x%s\"]]",
	    d, relayproc_domain(rp), npub, d, relayproc_domain(rp));
	ev = signed_by(2, time(NULL), 30617, tags, "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);

	/* Two clone tags are refused with the reference's words. */
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"http://"
	    "%s/%s/%s.git\"],[\"clone\",\"https://x.example/r.git\"],"
	    "[\"relays\",\"ws://%s\"]]",
	    d, relayproc_domain(rp), npub, d, relayproc_domain(rp));
	T_CHECK(refused_with(ws, signed_by(2, time(NULL), 30617, tags, ""),
	    "multiple clone tags"));

	/* No d tag, unsafe identifier. */
	ev = signed_by(2, time(NULL), 30617, "[[\"clone\",\"x\"]]", "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "invalid: ", 9) == 0);
	event_destroy(ev);
	T_CHECK(
	    refused_with(ws, announcement(2, "..", 1, 1, ""), "identifier"));
	wsc_close(ws);
}

static void
test_recursive_maintainers_announcements_accepted(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      d[32], msg[256], m[128], hexb[PUBKEY_HEX_LEN + 1],
	    hexc[PUBKEY_HEX_LEN + 1];
	uint8_t sk[SECKEY_LEN];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	key(11, sk, hexb, NULL);
	key(12, sk, hexc, NULL);
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexb);
	ev = announcement(10, d, 1, 1, m);
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	event_destroy(ev);
	/* B's announcement points elsewhere but B is a maintainer (of an
	 * announcement held in purgatory: it counts). */
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexc);
	ev = announcement(11, d, 0, 0, m);
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	/* C is B's maintainer: recursive. */
	ev = announcement(12, d, 0, 0, "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	/* D is nobody's. */
	ev = announcement(13, d, 0, 0, "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);

	/* State: maintainers yes (held: its commit is nowhere yet),
	 * strangers no, unknown repo no. */
	snprintf(m, sizeof(m),
	    "[[\"d\",\"%s\"],[\"refs/heads/main\",\""
	    "0123456789012345678901234567890123456789\"]]",
	    d);
	ev = signed_by(12, time(NULL), 30618, m, "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	event_destroy(ev);
	ev = signed_by(13, time(NULL), 30618, m, "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "invalid: author not authorized for this repository");
	event_destroy(ev);
	ev = signed_by(10, time(NULL), 30618, "[[\"d\",\"no-such-repo\"]]", "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "invalid: no announcement exists for this repository");
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_related_events_accepted_by_reference(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *issue, *c1, *k1, *k2, *q, *ev;
	char	      d[32], coord[128], tags[512], msg[256];

	T_ASSERT(ws != NULL);
	T_ASSERT((ann = served_repo(ws, 20, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);

	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"],[\"subject\",\"s\"]]",
	    coord);
	issue = signed_by(21, time(NULL), 1621, tags, "an issue");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);

	snprintf(tags, sizeof(tags),
	    "[[\"A\",\"%s\"],[\"K\",\"30617\"],"
	    "[\"p\",\"%s\"]]",
	    coord, ann->pubkey_hex);
	ev = signed_by(22, time(NULL), 1111, tags, "comment on repo");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);

	ev = tagged(22, 1, "q", coord, "quoting the repo");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);

	/* An issue of an unknown repository that quotes an accepted
	 * issue is related through the quote. */
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:unknown\"],[\"q\","
	    "\"%s\"]]",
	    ann->pubkey_hex, issue->id_hex);
	ev = signed_by(23, time(NULL), 1621, tags, "quote");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);

	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"K\",\"1621\"]]",
	    issue->id_hex);
	c1 = signed_by(24, time(NULL), 1111, tags, "comment on issue");
	T_EQ_INT(nostr_publish_msg(ws, c1, TMO, msg, sizeof(msg)), 1);

	k1 = tagged(25, 1, "e", c1->id_hex, "kind 1 reply");
	T_EQ_INT(nostr_publish_msg(ws, k1, TMO, msg, sizeof(msg)), 1);
	k2 = tagged(26, 1, "e", k1->id_hex, "reply to reply");
	T_EQ_INT(nostr_publish_msg(ws, k2, TMO, msg, sizeof(msg)), 1);

	/* Forward reference: X is refused alone, accepted once an
	 * accepted event quotes it. */
	q = signed_by(27, time(NULL), 1, "[]", "quoted later");
	T_EQ_INT(nostr_publish_msg(ws, q, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0);
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"q\",\"%s\"]]",
	    issue->id_hex, q->id_hex);
	ev = signed_by(28, time(NULL), 1111, tags, "quotes q");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(nostr_publish_msg(ws, q, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(has_id(ws, q->id_hex), 1);

	{
		struct event *all[] = { ann, issue, c1, k1, k2, q };

		tuser_events_destroy(all, TINT_N(all));
	}
	wsc_close(ws);
}

static void
test_unrelated_events_refused(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      tags[256], msg[256], hex[PUBKEY_HEX_LEN + 1];
	uint8_t	      sk[SECKEY_LEN];

	T_ASSERT(ws != NULL);
	key(30, sk, hex, NULL);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:never\"]]", hex);
	ev = signed_by(31, time(NULL), 1621, tags, "issue to nowhere");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg,
	    "blocked: event must reference an accepted repository "
	    "or accepted event");
	event_destroy(ev);
	ev = signed_by(31, time(NULL), 1, "[]", "bare note");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);
	snprintf(tags, sizeof(tags), "[[\"q\",\"30617:%s:never\"]]", hex);
	ev = signed_by(31, time(NULL), 1111, tags, "quote of nothing");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);
	/* Profiles and relay lists only from eligible identity authors
	 * (GRASP-03; test_identity_events_only_from_eligible_authors). */
	ev = signed_by(31, time(NULL), 0, "[]", "{}");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, MSG_NOT_ELIGIBLE);
	event_destroy(ev);
	ev = signed_by(31, time(NULL), 10002, "[[\"r\",\"wss://a.example\"]]",
	    "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);
	wsc_close(ws);
}

/* The OK of the next message that is an OK, parsed: 1, 0 or -1. */
static int
next_ok(struct wsc *ws, char *id, size_t idlen)
{
	char		  *m = nostr_wait_msg(ws, "OK", TMO);
	struct json_doc	  *doc = NULL;
	const struct json *a, *i, *o;
	char		   err[64];
	int		   ok = -1;

	id[0] = '\0';
	if (m == NULL)
		return -1;
	if ((a = json_parse(m, strlen(m), &doc, err, sizeof(err))) != NULL &&
	    (i = json_at(a, 1)) != NULL && i->type == JSON_STRING &&
	    (o = json_at(a, 2)) != NULL) {
		snprintf(id, idlen, "%s", i->s);
		ok = o->type == JSON_TRUE;
	}
	json_free(doc);
	free(m);
	return ok;
}

static void
test_identity_events_only_from_eligible_authors(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *issue, *reply, *late, *prof, *ev;
	struct buf    frames = BUF_INIT;
	char	d[32], coord[128], tags[512], msg[256], m51[PUBKEY_HEX_LEN + 1];
	char	id[80];
	uint8_t sk[SECKEY_LEN], mask[4] = { 1, 2, 3, 4 };
	char   *em;
	int	i, ok_late = -1, ok_prof = -1, ok;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	key(51, sk, m51, NULL);
	snprintf(tags, sizeof(tags), ",[\"maintainers\",\"%s\"]", m51);
	ann = announcement(50, d, 1, 1, tags);
	/* Nobody yet. */
	ev = signed_by(50, time(NULL), 0, "[]", "{}");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, MSG_NOT_ELIGIBLE);
	event_destroy(ev);
	T_ASSERT(serve(ws, 50, ann, d));
	repo_coord(50, d, coord, sizeof(coord));

	/* Owner and declared maintainer, once it is served. */
	ev = signed_by(50, time(NULL) + 1, 0, "[]", "{\"name\":\"owner\"}");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	ev = signed_by(51, time(NULL), 10002, "[[\"r\",\"wss://m.example\"]]",
	    "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	/* A root author and, through an e reference, a reply author. */
	issue = tagged(52, 1621, "a", coord, "issue");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);
	reply = tagged(56, 1, "e", issue->id_hex, "reply");
	T_EQ_INT(nostr_publish_msg(ws, reply, TMO, msg, sizeof(msg)), 1);
	ev = signed_by(56, time(NULL), 0, "[]", "{}");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	/* Someone whose only event is a refused note is not eligible. */
	ev = signed_by(54, time(NULL), 1, "[]", "note");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);
	ev = signed_by(54, time(NULL), 10002, "[[\"r\",\"wss://x.example\"]]",
	    "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, MSG_NOT_ELIGIBLE);
	event_destroy(ev);

	/* An issue and its author's profile in one write, so in one
	 * batch: the issue, decided first, makes the author eligible. */
	late = tagged(53, 1621, "a", coord, "late issue");
	prof = signed_by(53, time(NULL), 0, "[]", "{\"name\":\"late\"}");
	em = nostr_event_msg(late);
	wsc_frame_encode(&frames, WS_OP_TEXT, 1, mask, em, strlen(em));
	free(em);
	em = nostr_event_msg(prof);
	wsc_frame_encode(&frames, WS_OP_TEXT, 1, mask, em, strlen(em));
	free(em);
	T_ASSERT(wsc_send_raw(ws, frames.b_data, frames.b_len) == 0);
	buf_free(&frames);
	for (i = 0; i < 2; i++) {
		ok = next_ok(ws, id, sizeof(id));
		if (strcmp(id, late->id_hex) == 0)
			ok_late = ok;
		else if (strcmp(id, prof->id_hex) == 0)
			ok_prof = ok;
	}
	T_EQ_INT(ok_late, 1);
	T_EQ_INT(ok_prof, 1);

	/* After a restart the inventory comes from the store. */
	wsc_close(ws);
	T_ASSERT(relayproc_restart(rp) == 0);
	T_ASSERT((ws = conn(rp)) != NULL);
	ev = signed_by(56, time(NULL) + 1, 0, "[]", "{\"name\":\"2\"}");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	ev = signed_by(54, time(NULL) + 1, 0, "[]", "{}");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 0);
	event_destroy(ann);
	event_destroy(issue);
	event_destroy(reply);
	event_destroy(late);
	event_destroy(prof);
	wsc_close(ws);
}

static void
test_replaceable_keeps_newest_and_lowest_id_on_tie(void)
{
	struct wsc   *ws = conn(rp);
	struct event *a, *b, *old, *lo, *hi;
	char	      msg[256], f[256];
	int64_t	      t = time(NULL) - 100;

	T_ASSERT(ws != NULL);
	/* 10317 user grasp lists are always accepted. */
	a = signed_by(40, t, 10317, "[[\"g\",\"ws://a.example\"]]", "");
	b = signed_by(40, t + 1, 10317, "[[\"g\",\"ws://b.example\"]]", "");
	T_EQ_INT(nostr_publish_msg(ws, a, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(nostr_publish_msg(ws, b, TMO, msg, sizeof(msg)), 1);
	snprintf(f, sizeof(f), "{\"kinds\":[10317],\"authors\":[\"%s\"]}",
	    a->pubkey_hex);
	T_EQ_INT(count(ws, f), 1);
	T_EQ_INT(has_id(ws, b->id_hex), 1);
	T_EQ_INT(has_id(ws, a->id_hex), 0);
	/* An older version arriving late does not replace the newer. */
	old = signed_by(40, t - 5, 10317, "[]", "");
	nostr_publish_msg(ws, old, TMO, msg, sizeof(msg));
	T_EQ_INT(has_id(ws, old->id_hex), 0);
	T_EQ_INT(has_id(ws, b->id_hex), 1);

	/* Equal created_at: the lower id stays, whatever the order. */
	for (int i = 0; i < 50; i++) {
		char tg[64];

		snprintf(tg, sizeof(tg), "[[\"g\",\"ws://%d.example\"]]", i);
		lo = signed_by(41, t + 10, 10317, tg, "");
		snprintf(tg, sizeof(tg), "[[\"g\",\"ws://%dx.example\"]]", i);
		hi = signed_by(41, t + 10, 10317, tg, "");
		if (memcmp(lo->id, hi->id, EVENT_ID_LEN) > 0) {
			struct event *x = lo;
			lo = hi;
			hi = x;
		}
		break;
	}
	T_EQ_INT(nostr_publish_msg(ws, hi, TMO, msg, sizeof(msg)), 1);
	nostr_publish_msg(ws, lo, TMO, msg, sizeof(msg));
	T_EQ_INT(has_id(ws, lo->id_hex), 1);
	T_EQ_INT(has_id(ws, hi->id_hex), 0);
	nostr_publish_msg(ws, hi, TMO, msg, sizeof(msg));
	T_EQ_INT(has_id(ws, lo->id_hex), 1);
	T_EQ_INT(has_id(ws, hi->id_hex), 0);
	event_destroy(a);
	event_destroy(b);
	event_destroy(old);
	event_destroy(lo);
	event_destroy(hi);
	wsc_close(ws);
}

static void
test_deletion_by_author_only_and_final(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *issue, *del, *bad;
	char	      d[32], coord[128], tags[256], msg[256];

	T_ASSERT(ws != NULL);
	T_ASSERT((ann = served_repo(ws, 50, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	issue = tagged(51, 1621, "a", coord, "to be deleted");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);

	/* Someone else's deletion does not remove it. */
	bad = tagged(52, 5, "e", issue->id_hex, "");
	T_EQ_INT(nostr_publish_msg(ws, bad, TMO, msg, sizeof(msg)), 0);
	T_EQ_INT(has_id(ws, issue->id_hex), 1);

	del = tagged(51, 5, "e", issue->id_hex, "oops");
	T_EQ_INT(nostr_publish_msg(ws, del, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(has_id(ws, issue->id_hex), 0);
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "blocked: this event is deleted");

	/* a-coordinate deletion of the announcement by its owner. */
	event_destroy(del);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	del = signed_by(50, time(NULL) + 1, 5, tags, "");
	T_EQ_INT(nostr_publish_msg(ws, del, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(has_id(ws, ann->id_hex), 0);
	event_destroy(ann);
	event_destroy(issue);
	event_destroy(del);
	event_destroy(bad);
	wsc_close(ws);
}

/*
 * Publishes stored ev again with one digit of its signature changed: 1
 * when relayd answers it as the copy it is (OK true, "duplicate:"),
 * which it can only do before checking the signature, else 0.
 */
static int
broken_copy_is_duplicate(struct wsc *ws, const struct event *ev)
{
	char *s, *sigp, *m = NULL;
	int   ok = -1, r;

	if ((s = strdup(ev->json)) == NULL ||
	    (sigp = strstr(s, "\"sig\":\"")) == NULL) {
		free(s);
		return 0;
	}
	sigp += 7;
	sigp[0] = sigp[0] == '0' ? '1' : '0';
	r = nostr_publish_json(ws, s, ev->id_hex, TMO, &ok, &m) == 0 &&
	    ok == 1 && m != NULL &&
	    strcmp(m, "duplicate: already have this event") == 0;
	if (!r)
		printf("# the broken copy: OK %d \"%s\"\n", ok, m ? m : "");
	free(m);
	free(s);
	return r;
}

/*
 * A stored event sent again is answered "duplicate:" with OK true, and
 * is not checked a second time: a copy whose signature was broken on the
 * way is the same event (its id is), so it gets the same answer.  A
 * content that does not hash to the stored id is no copy: "invalid:".
 * The stored copy is unchanged and /metrics counts two duplicates.
 */
static void
test_duplicate_answered_before_signature_check(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *issue;
	char	      d[32], coord[128], msg[256], *s, *sigp, *m;
	double	      dup0;
	int	      ok = -1;

	T_ASSERT(ws != NULL);
	T_ASSERT((ann = served_repo(ws, 53, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	issue = tagged(54, 1621, "a", coord, "sent twice");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	dup0 = ctl_metric(rp,
	    "graspd_relay_events_total{role=\"relayd\",result=\"duplicate\"}");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: already have this event");

	T_CHECK(broken_copy_is_duplicate(ws, issue));
	/* Another content under the stored id is no copy: its id is
	 * checked before the lookup. */
	s = strdup(issue->json);
	T_ASSERT((sigp = strstr(s, "sent twice")) != NULL);
	sigp[0] = 'S';
	m = NULL;
	T_ASSERT(nostr_publish_json(ws, s, issue->id_hex, TMO, &ok, &m) == 0);
	T_EQ_INT(ok, 0);
	T_CHECK(m &&
	    strcmp(m, "invalid: event id does not match its content") == 0);
	free(m);
	free(s);
	T_EQ_INT(has_id(ws, issue->id_hex), 1);
	T_CHECK(
	    ctl_metric(rp,
		"graspd_relay_events_total{role=\"relayd\",result=\"duplicate\"}") ==
	    dup0 + 2);
	event_destroy(ann);
	event_destroy(issue);
	wsc_close(ws);
}

/*
 * Copies of one new event racing: sent on two connections without
 * waiting, so that they arrive in one turn, all pass the filter of
 * stored ids as new and are decided in one batch.  One is stored, each
 * other copy is answered "duplicate:" with OK true, and /metrics counts
 * them as duplicates.
 */
static void
test_racing_copies_stored_once(void)
{
	struct wsc   *ws[2] = { conn(rp), conn(rp) };
	struct event *ann, *issue;
	char	      d[32], coord[128], *msg, *frame;
	const int     copies[2] = { 3, 2 };
	double	      dup0;
	int	      i, k, stored = 0, dups = 0;

	T_ASSERT(ws[0] != NULL && ws[1] != NULL);
	T_ASSERT((ann = served_repo(ws[0], 57, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	issue = tagged(58, 1621, "a", coord, "racing copies");
	T_ASSERT((frame = nostr_event_msg(issue)) != NULL);
	dup0 = ctl_metric(rp,
	    "graspd_relay_events_total{role=\"relayd\",result=\"duplicate\"}");
	for (k = 0; k < 2; k++)
		for (i = 0; i < copies[k]; i++)
			T_ASSERT(
			    wsc_send_text(ws[k], frame, strlen(frame)) == 0);
	for (k = 0; k < 2; k++)
		for (i = 0; i < copies[k]; i++) {
			msg = nostr_wait_msg(ws[k], "OK", TMO);
			T_ASSERT(msg != NULL && strstr(msg, issue->id_hex));
			stored += strstr(msg, ",true,\"\"]") != NULL;
			dups += strstr(msg,
				    ",true,\"duplicate: already have "
				    "this event\"]") != NULL;
			free(msg);
		}
	T_EQ_INT(stored, 1);
	T_EQ_INT(dups, 4);
	T_EQ_INT(has_id(ws[0], issue->id_hex), 1);
	T_CHECK(
	    ctl_metric(rp,
		"graspd_relay_events_total{role=\"relayd\",result=\"duplicate\"}") ==
	    dup0 + 4);
	free(frame);
	event_destroy(ann);
	event_destroy(issue);
	wsc_close(ws[0]);
	wsc_close(ws[1]);
}

/*
 * A copy another process stored behind relayd's back, after the filter
 * of stored ids was filled: the filter calls it new at arrival and again
 * in the batch, so its insert meets the stored id.  It is answered
 * "duplicate:" with OK true and counted as one, no database error is
 * logged for it, and a new event of the same batch is stored.
 */
static void
test_copy_stored_behind_relayds_back_is_duplicate(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *copy, *fresh;
	struct store *s;
	char	      d[32], coord[128], path[600], err[256], *frame, *msg;
	double	      dup0;
	int	      errs0, ok_copy = 0, ok_fresh = 0, i;

	T_ASSERT(ws != NULL);
	T_ASSERT((ann = served_repo(ws, 63, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	copy = tagged(64, 1621, "a", coord, "stored behind relayd's back");
	fresh = tagged(64, 1621, "a", coord, "new beside it");
	snprintf(path, sizeof(path), "%s/relay/graspd.db", relayproc_dir(rp));
	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	T_ASSERT(store_put(s, copy, NULL) == STORE_OK);
	store_close(s);
	dup0 = ctl_metric(rp,
	    "graspd_relay_events_total{role=\"relayd\",result=\"duplicate\"}");
	errs0 = relayproc_log_count(rp, "UNIQUE constraint failed");
	/* Both without waiting: one batch. */
	T_ASSERT((frame = nostr_event_msg(copy)) != NULL);
	T_ASSERT(wsc_send_text(ws, frame, strlen(frame)) == 0);
	free(frame);
	T_ASSERT((frame = nostr_event_msg(fresh)) != NULL);
	T_ASSERT(wsc_send_text(ws, frame, strlen(frame)) == 0);
	free(frame);
	for (i = 0; i < 2; i++) {
		T_ASSERT((msg = nostr_wait_msg(ws, "OK", TMO)) != NULL);
		if (strstr(msg, copy->id_hex) != NULL)
			ok_copy = strstr(msg,
				      ",true,\"duplicate: already "
				      "have this event\"]") != NULL;
		else if (strstr(msg, fresh->id_hex) != NULL)
			ok_fresh = strstr(msg, ",true,\"\"]") != NULL;
		free(msg);
	}
	T_CHECK(ok_copy);
	T_CHECK(ok_fresh);
	T_EQ_INT(has_id(ws, copy->id_hex), 1);
	T_EQ_INT(has_id(ws, fresh->id_hex), 1);
	T_CHECK(ctl_metric(rp,
		    "graspd_relay_events_total{role=\"relayd\","
		    "result=\"duplicate\"}") == dup0 + 1);
	T_EQ_INT(relayproc_log_count(rp, "UNIQUE constraint failed"), errs0);
	event_destroy(ann);
	event_destroy(copy);
	event_destroy(fresh);
	wsc_close(ws);
}

#define ARRIVALS_FILTERED \
	"graspd_relay_arrival_lookups_total{role=\"relayd\",answer=\"filter\"}"
#define ARRIVALS_LOOKED_UP \
	"graspd_relay_arrival_lookups_total{role=\"relayd\",answer=\"database\"}"

/*
 * The filter that spares a new arrival its lookup (relay_ids.c) learns
 * the stored ids again at each start: after a restart, once it calls new
 * events new, an event stored before the restart is still found before
 * its signature is checked (a broken signature is answered
 * "duplicate:", not "invalid:"), and /metrics counts both answers.
 */
static void
test_stored_ids_filter_refilled_at_start(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ann, *issue, *ev;
	char	      d[32], coord[128], msg[256], c[64];
	double	      filtered0, looked0;
	int	      i;

	T_ASSERT(ws != NULL);
	T_ASSERT((ann = served_repo(ws, 55, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	issue = tagged(56, 1621, "a", coord, "stored before the restart");
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 1);
	wsc_close(ws);
	T_ASSERT(relayproc_stop(rp) == 0);
	T_ASSERT(relayproc_restart(rp) == 0);
	T_ASSERT((ws = conn(rp)) != NULL);
	filtered0 = ctl_metric(rp, ARRIVALS_FILTERED);
	/* Until the thread read the store every arrival is looked up. */
	for (i = 0; i < 50 && ctl_metric(rp, ARRIVALS_FILTERED) == filtered0;
	     i++) {
		snprintf(c, sizeof(c), "after the restart, %d", i);
		ev = tagged(56, 1621, "a", coord, c);
		T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
		event_destroy(ev);
	}
	T_CHECK(ctl_metric(rp, ARRIVALS_FILTERED) > filtered0);
	looked0 = ctl_metric(rp, ARRIVALS_LOOKED_UP);
	T_CHECK(broken_copy_is_duplicate(ws, issue));
	T_CHECK(ctl_metric(rp, ARRIVALS_LOOKED_UP) == looked0 + 1);
	event_destroy(ann);
	event_destroy(issue);
	wsc_close(ws);
}

static void
test_req_limit_order_and_live_delivery(void)
{
	struct wsc   *ws = conn(rp), *ws2 = conn(rp);
	struct event *ann, *ev;
	char	      d[32], coord[128], tags[256], msg[256], f[256];
	char	    **evs = NULL;
	size_t	      n = 0, i;
	int64_t	      t = time(NULL) - 1000, prev = INT64_MAX;

	T_ASSERT(ws != NULL && ws2 != NULL);
	T_ASSERT((ann = served_repo(ws, 60, d, sizeof(d), coord,
		      sizeof(coord))) != NULL);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", coord);
	for (i = 0; i < 12; i++) {
		ev = signed_by(61, t + (int64_t)(i * 7 % 12), 1621, tags,
		    "issue");
		T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
		event_destroy(ev);
	}
	snprintf(f, sizeof(f), "{\"#a\":[\"%s\"],\"limit\":5}", coord);
	T_ASSERT(nostr_req(ws, "lim", f, TMO, &evs, &n, NULL) == 0);
	T_EQ_INT(n, 5);
	for (i = 0; i < n; i++) {
		struct event *e =
		    event_parse(evs[i], strlen(evs[i]), msg, sizeof(msg));
		T_ASSERT(e != NULL);
		T_CHECK(e->created_at <= prev);
		prev = e->created_at;
		event_destroy(e);
	}
	nostr_events_free(evs);

	/* Live: a second client subscribed after EOSE gets new ones. */
	snprintf(f, sizeof(f), "{\"#a\":[\"%s\"],\"limit\":0}", coord);
	T_ASSERT(nostr_req(ws2, "live", f, TMO, &evs, &n, NULL) == 0);
	T_EQ_INT(n, 0);
	nostr_events_free(evs);
	ev = signed_by(62, time(NULL), 1621, tags, "live issue");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_CHECK(nostr_event_arrives(ws2, "live", ev->id_hex, TMO));
	event_destroy(ev);

	/* Ephemeral: fanned out, never stored. */
	ev = signed_by(62, time(NULL), 20001, tags, "ephemeral");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_CHECK(nostr_event_arrives(ws2, "live", ev->id_hex, TMO));
	T_EQ_INT(has_id(ws, ev->id_hex), 0);
	event_destroy(ev);

	/* CLOSE stops delivery. */
	T_ASSERT(nostr_close_sub(ws2, "live") == 0);
	ev = signed_by(62, time(NULL), 1621, tags, "after close");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_CHECK(nostr_no_event(ws2, "live", 300));
	event_destroy(ev);
	event_destroy(ann);
	wsc_close(ws);
	wsc_close(ws2);
}

static void
test_invalid_events_get_clear_ok(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      msg[256], *m = NULL, *j;
	int	      ok = -1;

	T_ASSERT(ws != NULL);
	ev = signed_by(70, time(NULL), 10317, "[]", "");
	/* Wrong id: flip a content byte after signing. */
	j = strdup(ev->json);
	*strstr(j, "\"content\":\"") = '\0';
	{
		struct buf b = BUF_INIT;
		buf_printf(&b, "%s\"content\":\"x\",\"sig\":\"", j);
		buf_add_hex(&b, ev->sig, EVENT_SIG_LEN);
		buf_adds(&b, "\"}");
		T_ASSERT(nostr_publish_json(ws, b.b_data, ev->id_hex, TMO, &ok,
			     &m) == 0);
		buf_free(&b);
	}
	T_EQ_INT(ok, 0);
	T_CHECK(m &&
	    strcmp(m, "invalid: event id does not match its content") == 0);
	free(m);
	m = NULL;
	free(j);
	/* Bad signature. */
	ev->sig[5] ^= 1;
	{
		struct buf b = BUF_INIT;
		char	  *s = strdup(ev->json);
		char	  *sigp = strstr(s, "\"sig\":\"") + 7;
		hex_encode(ev->sig, EVENT_SIG_LEN, sigp);
		sigp[128] = '"';
		T_ASSERT(
		    nostr_publish_json(ws, s, ev->id_hex, TMO, &ok, &m) == 0);
		T_EQ_INT(ok, 0);
		T_CHECK(m && strcmp(m, "invalid: bad signature") == 0);
		free(m);
		m = NULL;
		free(s);
		buf_free(&b);
	}
	event_destroy(ev);
	/* Far future, expired, protected. */
	ev = signed_by(70, time(NULL) + 3600, 10317, "[]", "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "invalid: created_at", 19) == 0);
	event_destroy(ev);
	ev =
	    signed_by(70, time(NULL), 10317, "[[\"expiration\",\"1000\"]]", "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "blocked: event is expired");
	event_destroy(ev);
	ev = signed_by(70, time(NULL), 10317, "[[\"-\"]]", "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "auth-required: ", 15) == 0);
	event_destroy(ev);
	/* Type errors from the shared vectors' shapes. */
	T_ASSERT(
	    nostr_publish_json(ws,
		"{\"id\":\""
		"0000000000000000000000"
		"000000000000000000000000000000000000000000\",\"kind\":\"1\"}",
		"0000000000000000000000000000000000000000000000000000000000000000",
		TMO, &ok, &m) == 0);
	T_EQ_INT(ok, 0);
	T_CHECK(m && strncmp(m, "invalid: ", 9) == 0);
	free(m);
	wsc_close(ws);
}

static void
test_expiring_event_hidden_after_expiry(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev;
	char	      tags[128], msg[256];

	T_ASSERT(ws != NULL);
	snprintf(tags, sizeof(tags), "[[\"expiration\",\"%lld\"]]",
	    (long long)time(NULL) + 2);
	ev = signed_by(71, time(NULL), 10317, tags, "");
	T_EQ_INT(nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_EQ_INT(has_id(ws, ev->id_hex), 1);
	sleep(3);
	T_EQ_INT(has_id(ws, ev->id_hex), 0);
	event_destroy(ev);
	wsc_close(ws);
}

static void
test_malformed_messages_get_notice_and_connection_survives(void)
{
	struct wsc	  *ws = conn(rp), *other = conn(rp);
	static const char *bad[] = {
		"not json",
		"{\"a\":1}",
		"[]",
		"[1,2]",
		"[\"HELLO\"]",
		"[\"EVENT\"]",
		"[\"REQ\"]",
		"[\"CLOSE\",5]",
		"[\"EVENT\",{},{}]",
		"[\"\xff\"]",
	};
	char	  *m, big[64];
	struct buf huge = BUF_INIT;
	size_t	   i;

	T_ASSERT(ws != NULL && other != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_ASSERT(wsc_send_text(ws, bad[i], strlen(bad[i])) == 0);
		m = nostr_wait_msg(ws, "NOTICE", TMO);
		if (m == NULL) {
			char w[128];
			snprintf(w, sizeof(w), "no NOTICE for bad[%zu]", i);
			t_fail_at(__FILE__, __LINE__, w);
			continue;
		}
		T_CHECK(strstr(m, "invalid: ") || strstr(m, "error: "));
		free(m);
	}
	T_ASSERT(wsc_send_binary(ws, "\x01\x02", 2) == 0);
	T_CHECK(nostr_msg_has(ws, "NOTICE", "binary", TMO));
	/* A message over the limit, in fragments. */
	buf_reserve(&huge, 2 * 1024 * 1024 + 16);
	buf_adds(&huge, "[\"REQ\",\"");
	memset(big, 'x', sizeof(big));
	while (huge.b_len < 2 * 1024 * 1024)
		buf_add(&huge, big, sizeof(big));
	buf_adds(&huge, "\"]");
	T_ASSERT(wsc_send_text(ws, huge.b_data, huge.b_len) == 0);
	buf_free(&huge);
	T_CHECK(nostr_msg_has(ws, "NOTICE", "too large", TMO));
	/* Still usable, and so is the other client. */
	T_EQ_INT(count(ws, "{\"kinds\":[10317],\"limit\":1}") >= 0, 1);
	T_EQ_INT(count(other, "{\"kinds\":[10317],\"limit\":1}") >= 0, 1);
	/* Garbage bytes may cost this connection, not the other. */
	T_ASSERT(wsc_send_raw(ws, "\xff\xff\xff\xff\xff\xff", 6) == 0);
	T_EQ_INT(count(other, "{\"kinds\":[10317],\"limit\":1}") >= 0, 1);
	wsc_drop(ws);
	wsc_close(other);
}

/*
 * A REQ relayd must answer with CLOSED, its reason starting with prefix
 * (NULL: any reason).
 */
static void
req_closed(struct wsc *ws, const char *subid, const char *filters,
    const char *prefix)
{
	char  *reason = NULL, **evs = NULL;
	size_t n;
	int    rc, ok;

	rc = nostr_req(ws, subid, filters, TMO, &evs, &n, &reason);
	ok = prefix == NULL ||
	    (reason != NULL && strncmp(reason, prefix, strlen(prefix)) == 0);
	if (!ok)
		printf("# %.20s: CLOSED %s\n", subid, reason ? reason : "?");
	free(reason);
	nostr_events_free(evs);
	T_EQ_INT(rc, 1);
	T_CHECK(ok);
}

static void
test_req_limits_answer_closed(void)
{
	struct wsc *ws = conn(rp);
	char	    subid[80], **evs = NULL;
	struct buf  b = BUF_INIT;
	size_t	    n, i;
	int	    rc;

	T_ASSERT(ws != NULL);
	memset(subid, 's', 65);
	subid[65] = '\0';
	req_closed(ws, subid, "{}", "invalid: ");
	req_closed(ws, "bad", "{\"ids\":[\"abc\"]}", "invalid: ");
	req_closed(ws, "bad2", "{\"foo\":[1]}", "unsupported: ");
	buf_addc(&b, '[');
	for (i = 0; i < 51; i++)
		buf_adds(&b, i ? ",{}" : "{}");
	buf_addc(&b, ']');
	req_closed(ws, "many", b.b_data, NULL);
	buf_free(&b);

	/* 200 subscriptions are fine, the 201st is refused. */
	for (i = 0; i < 200; i++) {
		snprintf(subid, sizeof(subid), "sub%zu", i);
		rc = nostr_req(ws, subid, "{\"kinds\":[9],\"limit\":0}", TMO,
		    &evs, &n, NULL);
		nostr_events_free(evs);
		evs = NULL;
		T_EQ_INT(rc, 0);
	}
	req_closed(ws, "one-too-many", "{\"limit\":0}", "blocked: ");
	/* Re-using an id replaces, and is allowed at the cap. */
	rc = nostr_req(ws, "sub7", "{\"limit\":0}", TMO, &evs, &n, NULL);
	T_EQ_INT(rc, 0);
	nostr_events_free(evs);
	wsc_close(ws);
}

static void
test_acknowledged_events_survive_kill9(void)
{
	struct wsc   *ws = conn(rp);
	struct event *ev[20];
	char	      msg[256];
	int	      i;

	T_ASSERT(ws != NULL);
	for (i = 0; i < 20; i++) {
		char tg[64];
		snprintf(tg, sizeof(tg), "[[\"g\",\"ws://k%d.example\"]]", i);
		ev[i] = signed_by(80 + i, time(NULL), 10317, tg, "");
		T_EQ_INT(nostr_publish_msg(ws, ev[i], TMO, msg, sizeof(msg)),
		    1);
	}
	wsc_drop(ws);
	relayproc_kill(rp, SIGKILL);
	relayproc_wait(rp, TMO);
	T_ASSERT(relayproc_restart(rp) == 0);
	ws = conn(rp);
	T_ASSERT(ws != NULL);
	for (i = 0; i < 20; i++) {
		T_EQ_INT(has_id(ws, ev[i]->id_hex), 1);
		event_destroy(ev[i]);
	}
	wsc_close(ws);
}

static void
test_event_rate_limit_per_connection(void)
{
	static const char *env[] = { "NGIT_MAX_EVENTS_PER_MINUTE=5", NULL };
	struct relayproc  *r = relayproc_start("relayd", env);
	struct wsc	  *ws;
	char		   msg[256];
	int		   i, refused = 0;

	T_ASSERT(r != NULL);
	ws = conn(r);
	T_ASSERT(ws != NULL);
	for (i = 0; i < 7; i++) {
		struct event *ev =
		    signed_by(90, time(NULL) + i, 10317, "[]", "");
		if (nostr_publish_msg(ws, ev, TMO, msg, sizeof(msg)) == 0 &&
		    strcmp(msg, "rate-limited: slow down") == 0)
			refused++;
		event_destroy(ev);
	}
	T_EQ_INT(refused, 2);
	wsc_close(ws);
	relayproc_free(r);
}

static void
test_max_connections_refuses_extra_websockets(void)
{
	static const char *env[] = { "NGIT_MAX_CONNECTIONS=2", NULL };
	struct relayproc  *r = relayproc_start("relayd", env);
	struct wsc	  *a, *b, *c;

	T_ASSERT(r != NULL);
	a = conn(r);
	b = conn(r);
	T_ASSERT(a != NULL && b != NULL);
	T_EQ_INT(count(a, "{\"limit\":1}") >= 0, 1);
	T_EQ_INT(count(b, "{\"limit\":1}") >= 0, 1);
	c = conn(r);
	T_CHECK(c == NULL || count(c, "{\"limit\":1}") == -1);
	if (c)
		wsc_drop(c);
	wsc_close(a);
	usleep(200000);
	c = conn(r);
	T_CHECK(c != NULL && count(c, "{\"limit\":1}") >= 0);
	if (c)
		wsc_close(c);
	wsc_close(b);
	relayproc_free(r);
}

static void
test_blacklists_and_whitelist(void)
{
	char		  npub_a[NIP19_KEY_BUFSZ], npub_b[NIP19_KEY_BUFSZ];
	char		  e1[200], e2[200], e3[200], msg[256];
	const char	 *env[4];
	struct relayproc *r, *saved = rp;
	struct wsc	 *ws;
	struct event	 *ev;
	uint8_t		  sk[SECKEY_LEN];

	key(100, sk, NULL, npub_a);
	key(101, sk, NULL, npub_b);
	snprintf(e1, sizeof(e1), "NGIT_EVENT_BLACKLIST=%s", npub_b);
	snprintf(e2, sizeof(e2), "NGIT_REPOSITORY_BLACKLIST=%s/bad-repo",
	    npub_a);
	snprintf(e3, sizeof(e3), "NGIT_REPOSITORY_WHITELIST=%s", npub_a);
	env[0] = e1;
	env[1] = e2;
	env[2] = e3;
	env[3] = NULL;
	r = relayproc_start("relayd", env);
	T_ASSERT(r != NULL);
	rp = r;
	ws = conn(r);
	T_ASSERT(ws != NULL);
	ev = announcement(100, "good-repo", 1, 1, "");
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, msg, sizeof(msg)), 1);
	T_CHECK(refused_with(ws, announcement(100, "bad-repo", 1, 1, ""),
	    "blacklisted"));
	T_CHECK(refused_with(ws, announcement(101, "any", 1, 1, ""),
	    "Event author"));
	T_CHECK(refused_with(ws, announcement(102, "not-whitelisted", 1, 1, ""),
	    "whitelist"));
	wsc_close(ws);
	rp = saved;
	relayproc_free(r);
}

static void
test_sigterm_stops_cleanly_and_sighup_is_ignored(void)
{
	T_EQ_INT(relayproc_kill(rp, SIGHUP), 0);
	usleep(200000);
	T_EQ_INT(relayproc_wait(rp, 0), -1); /* still running */
	T_EQ_INT(relayproc_stop(rp), 0);
	T_ASSERT(relayproc_restart(rp) == 0);
}

/*
 * A git_data_path that cannot hold repositories (here a regular file,
 * which root cannot write into either) stops relayd at its start with
 * exit 78 and the path, not at the first announcement.
 */
static void
test_unwritable_git_data_path_is_a_configuration_error(void)
{
	const char *bin = getenv("GRASPD_BIN") ? getenv("GRASPD_BIN") : "bin";
	char	    file[400], cmd[2048], *out = NULL;
	FILE	   *fp;
	int	    port, rc;

	snprintf(file, sizeof(file), "%s/not-a-dir", tmp);
	T_ASSERT((fp = fopen(file, "w")) != NULL);
	fclose(fp);
	T_ASSERT((port = relayproc_free_port("127.0.0.1")) > 0);
	snprintf(cmd, sizeof(cmd),
	    "NGIT_BIND_ADDRESS=127.0.0.1:%d "
	    "NGIT_DOMAIN=127.0.0.1:%d NGIT_RELAY_DATA_PATH='%s/gdp-relay' "
	    "NGIT_RUN_PATH='%s/gdp-run' NGIT_GIT_DATA_PATH='%s' NGIT_TEST=1 "
	    "timeout 20 '%s/relayd' -d 2>&1",
	    port, port, tmp, tmp, file, bin);
	rc = ctl_run(cmd, &out);
	T_EQ_INT(rc, 78);
	T_CHECK(out != NULL && strstr(out, "git_data_path ") != NULL &&
	    strstr(out, "not-a-dir: Not a directory") != NULL);
	free(out);
	unlink(file);
}

static int
relayd_setup(void)
{
	srand((unsigned)getpid());
	return tint_home(tmp, sizeof(tmp), "graspd-relayd-test",
		   "relayd_setup") == -1 ?
	    1 :
	    0;
}

static void
relayd_cleanup(void)
{
	tdir_remove(tmp);
}

static const struct t_case cases[] = {
	T_CASE(test_unwritable_git_data_path_is_a_configuration_error),
	T_CASE(test_nip11_document),
	T_CASE(test_cors_on_every_response_and_options_204),
	T_CASE(test_announcement_listing_service_is_held_then_served_with_tags),
	T_CASE(test_announcement_must_list_service_in_clone_and_relays),
	T_CASE(test_recursive_maintainers_announcements_accepted),
	T_CASE(test_related_events_accepted_by_reference),
	T_CASE(test_unrelated_events_refused),
	T_CASE(test_identity_events_only_from_eligible_authors),
	T_CASE(test_replaceable_keeps_newest_and_lowest_id_on_tie),
	T_CASE(test_deletion_by_author_only_and_final),
	T_CASE(test_duplicate_answered_before_signature_check),
	T_CASE(test_racing_copies_stored_once),
	T_CASE(test_copy_stored_behind_relayds_back_is_duplicate),
	T_CASE(test_stored_ids_filter_refilled_at_start),
	T_CASE(test_req_limit_order_and_live_delivery),
	T_CASE(test_invalid_events_get_clear_ok),
	T_CASE(test_expiring_event_hidden_after_expiry),
	T_CASE(test_malformed_messages_get_notice_and_connection_survives),
	T_CASE(test_req_limits_answer_closed),
	T_CASE(test_acknowledged_events_survive_kill9),
	T_CASE(test_event_rate_limit_per_connection),
	T_CASE(test_max_connections_refuses_extra_websockets),
	T_CASE(test_blacklists_and_whitelist),
	T_CASE(test_sigterm_stops_cleanly_and_sighup_is_ignored),
};

T_MAIN_ALL(cases, relayd_setup, relayd_cleanup, &relayproc_relayd_fixture, &rp,
    0)
