/*
 * git_test.c: GRASP-01 git hosting and purgatory as git and Nostr clients
 * see them: the real git client against relayd's smart HTTP on loopback,
 * and websockets for the events.  Covers the grasp-audit purgatory, push
 * authorization, repository creation, clone, filter and CORS cases
 * (reference brief 6.3), request bodies (chunked, gzip, protocol v2),
 * eviction, expiry (with the refusal of synced copies of expired events),
 * and purgatory surviving kill -9.
 */
#include <sys/stat.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <zlib.h>

#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "json.h"
#include "msg.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "wsclient.h"

#define TMO		5000
#define MSG_HELD	"purgatory: won't be served until git data arrives"

static struct relayproc	*rp;		/* the shared relay */
static char		 tmp[256];	/* local repositories, HOME */
static int		 seq_d;		/* makes identifiers unique */
static int		 seq_dir;

static void
key(int n, uint8_t sk[32], uint8_t pk[32], char hex[65])
{
	uint8_t	p[32];

	memset(sk, 0, 32);
	sk[0] = 0x33;
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, p);
	if (pk)
		memcpy(pk, p, 32);
	if (hex)
		hex_encode(p, 32, hex);
}

static const char *
dom(void)
{
	return relayproc_domain(rp);
}

static struct wsc *
conn(void)
{
	return wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
}

static void
next_d(char *d, size_t len)
{
	snprintf(d, len, "repo-%d", ++seq_d);
}

/* A fresh directory for a local repository. */
static void
workdir(char *out, size_t len)
{
	snprintf(out, len, "%s/w%d", tmp, ++seq_dir);
}

static struct event *
signed_by(int n, int64_t created_at, uint32_t kind, const char *tags,
    const char *content)
{
	uint8_t	sk[32];

	key(n, sk, NULL, NULL);
	return event_new_signed(sk, created_at, kind, tags, content);
}

/* Publishes: 1/0 for OK true/false (message in msg), -1 for none. */
static int
pub(struct wsc *ws, const struct event *ev, char *msg, size_t msglen)
{
	int	 ok = -1;
	char	*m = NULL;

	if (ev == NULL)
		return -1;
	if (nostr_publish(ws, ev, TMO, &ok, &m) == -1)
		ok = -1;
	if (msg)
		snprintf(msg, msglen, "%s", m ? m : "");
	free(m);
	return ok;
}

static int
served(struct wsc *ws, const char *id)
{
	char	 f[128], **evs = NULL, subid[32];
	size_t	 n = 0;
	int	 rc;

	snprintf(subid, sizeof(subid), "s%d", rand());
	snprintf(f, sizeof(f), "{\"ids\":[\"%s\"]}", id);
	rc = nostr_req(ws, subid, f, TMO, &evs, &n, NULL);
	nostr_events_free(evs);
	nostr_close_sub(ws, subid);
	return rc == 0 || rc == 1 ? (int)n : -1;
}

/* Waits up to ms for the event to be served. */
static int
wait_served(struct wsc *ws, const char *id, int ms)
{
	int64_t	end = wsc_now_ms() + ms;

	do {
		if (served(ws, id) == 1)
			return 1;
		usleep(100000);
	} while (wsc_now_ms() < end);
	return 0;
}

/*
 * An announcement by key n for d listing this relay in clone and relays
 * (or elsewhere when listed is 0), with extra tags (",[...]" or "").
 */
static struct event *
announcement(int n, const char *d, int listed, const char *extra)
{
	uint8_t		 sk[32], pk[32];
	char		 url[512];
	struct buf	 b = BUF_INIT;
	struct event	*ev;

	key(n, sk, pk, NULL);
	buf_printf(&b, "[[\"d\",\"%s\"],[\"name\",\"%s\"],", d, d);
	if (listed) {
		gt_url(url, sizeof(url), dom(), pk, d);
		buf_printf(&b, "[\"clone\",\"%s\"],[\"relays\",\"ws://%s\"]",
		    url, dom());
	} else
		buf_printf(&b, "[\"clone\",\"https://elsewhere.example/%d/"
		    "%s.git\"],[\"relays\",\"wss://elsewhere.example\"]", n,
		    d);
	buf_printf(&b, "%s]", extra ? extra : "");
	ev = event_new_signed(sk, time(NULL), 30617, b.b_data, "");
	buf_free(&b);
	return ev;
}

/* A state by key n for d: NULL-terminated (ref, oid) pairs; head or NULL. */
static struct event *
state(int n, const char *d, const char *head, ...)
{
	struct buf	 b = BUF_INIT;
	struct event	*ev;
	const char	*ref, *oid;
	va_list		 ap;

	buf_printf(&b, "[[\"d\",\"%s\"]", d);
	va_start(ap, head);
	while ((ref = va_arg(ap, const char *)) != NULL) {
		oid = va_arg(ap, const char *);
		buf_printf(&b, ",[\"%s\",\"%s\"]", ref, oid);
	}
	va_end(ap);
	if (head)
		buf_printf(&b, ",[\"HEAD\",\"ref: refs/heads/%s\"]", head);
	buf_addc(&b, ']');
	ev = signed_by(n, time(NULL), 30618, b.b_data, "");
	buf_free(&b);
	return ev;
}

static void
url_of(int n, const char *d, char *out, size_t len)
{
	uint8_t	sk[32], pk[32];

	key(n, sk, pk, NULL);
	gt_url(out, len, dom(), pk, d);
}

static void
path_of(int n, const char *d, const char *rest, char *out, size_t len)
{
	uint8_t	sk[32], pk[32];
	char	npub[NIP19_KEY_BUFSZ];

	key(n, sk, pk, NULL);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(out, len, "/%s/%s.git%s", npub, d, rest);
}

/* git push url refspec from dir; the exit status, output in *out. */
static int
push(const char *dir, const char *url, const char *refspec, char **out)
{
	return gt_git(dir, out, "push", "--porcelain", url, refspec, NULL);
}

/* A local repository with one commit of its own. */
static int
local_repo(char *dir, size_t dirlen, const char *content, char oid[41])
{
	workdir(dir, dirlen);
	if (gt_init(dir) == -1)
		return -1;
	return gt_commit(dir, "file.txt", content, "commit", oid);
}

/* Announces and serves repository d of key n (state + push); ann kept. */
static int
serve_repo(struct wsc *ws, int n, const char *d, const char *extra,
    char *dir, size_t dirlen, char oid[41], struct event **annp)
{
	struct event	*ann = announcement(n, d, 1, extra);
	uint8_t		 sk[32];
	char		 msg[256];
	int		 rc = -1;

	key(n, sk, NULL, NULL);
	workdir(dir, dirlen);
	if (pub(ws, ann, msg, sizeof(msg)) != 1 || strcmp(msg, MSG_HELD) !=
	    0) {
		printf("# serve_repo: announcement: %s\n", msg);
		goto done;
	}
	if (gt_release(ws, sk, dom(), d, dir, oid) == -1)
		goto done;
	if (!wait_served(ws, ann->id_hex, TMO)) {
		printf("# serve_repo: not served after the push\n");
		goto done;
	}
	rc = 0;
done:
	if (annp != NULL && rc == 0)
		*annp = ann;
	else
		event_destroy(ann);
	return rc;
}

/* GET of a path on the relay; status, headers and body returned. */
static int
get(const char *path, const char *extra, int *status, char **hdrs,
    char **body)
{
	size_t	len;

	return http_request(relayproc_host(rp), relayproc_port(rp), "GET",
	    path, extra, NULL, 0, TMO, status, hdrs, body, &len);
}

/*
 * The v0 upload-pack advertisement of (n, d), its NULs (before the
 * capabilities) turned into spaces so that it reads as one string.
 */
static char *
advertisement(int n, const char *d, char **hdrs)
{
	char	path[512], *body = NULL;
	size_t	len, i;
	int	status = 0;

	path_of(n, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	if (http_request(relayproc_host(rp), relayproc_port(rp), "GET", path,
	    NULL, NULL, 0, TMO, &status, hdrs, &body, &len) == -1 ||
	    status != 200) {
		free(body);
		return NULL;
	}
	for (i = 0; i < len; i++)
		if (body[i] == '\0')
			body[i] = ' ';
	return body;
}

/* Waits up to ms for the advertisement of (n, d) to contain needle. */
static int
wait_advertised(int n, const char *d, const char *needle, int ms)
{
	int64_t	 end = wsc_now_ms() + ms;
	char	*adv;
	int	 found;

	do {
		adv = advertisement(n, d, NULL);
		found = adv != NULL && strstr(adv, needle) != NULL;
		free(adv);
		if (found)
			return 1;
		usleep(100000);
	} while (wsc_now_ms() < end);
	return 0;
}

static void
test_new_announcement_ok_but_not_served(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *issue;
	char		 d[32], msg[512], tags[256], want[128];
	uint8_t		 sk[32], pk[32];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(1, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* Sent again: the same answer, still held. */
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* An issue on it is refused, saying that the push is missing. */
	key(1, sk, pk, NULL);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:%s\"]]",
	    ann->pubkey_hex, d);
	T_ASSERT((issue = event_new_signed(sk, time(NULL), 1621, tags,
	    "an issue")) != NULL);
	T_EQ_INT(pub(ws, issue, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want), "/%s is announced but its git data has "
	    "not been pushed yet: push to http://%s/", d, dom());
	if (strstr(msg, want) == NULL)
		printf("# %s\n", msg);
	T_CHECK(strncmp(msg, "blocked: ", 9) == 0 && strstr(msg, want));
	event_destroy(issue);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_git_endpoint_works_for_purgatory_repo(void)
{
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], msg[256], *hdrs = NULL, *adv, *v;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(2, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	adv = advertisement(2, d, &hdrs);
	T_ASSERT(adv != NULL);
	T_CHECK(strncmp(adv, "001e# service=git-upload-pack\n0000", 34) == 0);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v && strcmp(v, "application/x-git-upload-pack-advertisement")
	    == 0);
	free(v);
	v = http_header_value(hdrs, "cache-control");
	T_CHECK(v && strstr(v, "no-cache"));
	free(v);
	free(adv);
	free(hdrs);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_state_held_until_push_then_both_served(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], oid[41], url[512], *out;
	char		 clone[512];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(3, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "hello\n", oid) == 0);
	st = state(3, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, st->id_hex), 0);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* The same state again is a duplicate in purgatory. */
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");

	url_of(3, d, url, sizeof(url));
	out = NULL;
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	/* relayd answers the push once the release is committed. */
	T_EQ_INT(served(ws, ann->id_hex), 1);
	T_EQ_INT(served(ws, st->id_hex), 1);

	/* And the data is there. */
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, NULL, "clone", "-q", url, clone, NULL), 0);
	snprintf(clone + strlen(clone), sizeof(clone) - strlen(clone),
	    "/file.txt");
	T_CHECK(access(clone, F_OK) == 0);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_push_rejected_without_state(void)
{
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], msg[256], dir[512], oid[41], url[512], *out;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(4, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "x\n", oid) == 0);
	url_of(4, d, url, sizeof(url));
	out = NULL;
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "authorisation failed: No state events "
	    "in purgatory"));
	if (out && !strstr(out, "authorisation failed"))
		printf("# git said: %s\n", out);
	free(out);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* No announcement at all for that owner. */
	url_of(5, d, url, sizeof(url));
	out = NULL;
	T_CHECK(push(dir, url, "main", &out) != 0);
	free(out);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_push_of_wrong_commit_rejected(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], a[41], b[41], url[512];
	char		*out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(6, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "a\n", a) == 0);
	T_ASSERT(gt_commit(dir, "file.txt", "b\n", "second", b) == 0);
	/* The state names the first commit; the push brings the second. */
	st = state(6, d, "main", "refs/heads/main", a, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	url_of(6, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "authorisation failed: 1 state event(s) "
	    "in purgatory from authorized publisher(s) but doesn't match "
	    "push"));
	free(out);
	out = NULL;
	/* A branch the state does not list is refused too. */
	T_CHECK(push(dir, url, "main:refs/heads/other", &out) != 0);
	free(out);
	out = NULL;
	/* The right commit goes through. */
	T_EQ_INT(push(dir, url, "HEAD~1:refs/heads/main", &out), 0);
	free(out);
	T_EQ_INT(served(ws, st->id_hex), 1);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_maintainer_and_recursive_maintainer_states_authorise(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *mann, *st;
	char		 d[32], msg[256], dir[512], oid[41], url[512];
	char		 m[200], hexm[65], hexr[65], *out = NULL;
	uint8_t		 sk[32];

	T_ASSERT(ws != NULL);
	/* Owner 10 names maintainer 11; 11 names 12 (recursive). */
	key(11, sk, NULL, hexm);
	key(12, sk, NULL, hexr);
	next_d(d, sizeof(d));
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexm);
	ann = announcement(10, d, 1, m);
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_ASSERT(local_repo(dir, sizeof(dir), "by a maintainer\n", oid) == 0);
	st = state(11, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(10, d, url, sizeof(url));
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(served(ws, ann->id_hex), 1);
	T_EQ_INT(served(ws, st->id_hex), 1);
	event_destroy(ann);
	event_destroy(st);

	/* Recursive: 11's announcement points elsewhere and names 12. */
	next_d(d, sizeof(d));
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexm);
	ann = announcement(10, d, 1, m);
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexr);
	mann = announcement(11, d, 0, m);
	/* Accepted through the held announcement (maintainer exception). */
	T_EQ_INT(pub(ws, mann, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	T_ASSERT(local_repo(dir, sizeof(dir), "by a maintainer's "
	    "maintainer\n", oid) == 0);
	st = state(12, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(10, d, url, sizeof(url));
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	T_EQ_INT(served(ws, ann->id_hex), 1);
	T_EQ_INT(served(ws, st->id_hex), 1);
	event_destroy(ann);
	event_destroy(mann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_non_maintainer_state_ignored_push_rejected(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], oid[41], url[512];
	char		*out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(13, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "stranger\n", oid) == 0);
	st = state(14, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 0);
	T_EQ_STR(msg, "invalid: author not authorized for this repository");
	url_of(13, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "authorisation failed"));
	free(out);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_deletion_by_id_removes_held_state(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st, *del;
	char		 d[32], msg[256], dir[512], oid[41], url[512];
	char		 tags[200], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(15, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "deleted\n", oid) == 0);
	st = state(15, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", st->id_hex);
	del = signed_by(15, time(NULL), 5, tags, "");
	T_EQ_INT(pub(ws, del, msg, sizeof(msg)), 1);
	url_of(15, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "No state events in purgatory"));
	free(out);
	T_EQ_INT(served(ws, st->id_hex), 0);
	event_destroy(ann);
	event_destroy(st);
	event_destroy(del);
	wsc_close(ws);
}

static void
test_deletion_by_coordinate_removes_maintainers_held_state(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st, *del;
	char		 d[32], msg[256], dir[512], oid[41], url[512];
	char		 tags[300], hexm[65], m[120], *out = NULL;
	uint8_t		 sk[32];

	T_ASSERT(ws != NULL);
	key(17, sk, NULL, hexm);
	next_d(d, sizeof(d));
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexm);
	ann = announcement(16, d, 1, m);
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "maintainer\n", oid) == 0);
	st = state(17, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30618:%s:%s\"]]", hexm, d);
	del = signed_by(17, time(NULL) + 1, 5, tags, "");
	T_EQ_INT(pub(ws, del, msg, sizeof(msg)), 1);
	url_of(16, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "No state events in purgatory"));
	free(out);
	event_destroy(ann);
	event_destroy(st);
	event_destroy(del);
	wsc_close(ws);
}

/* A PR (kind 1618) by key n to repository (owner, d) with tip c. */
static struct event *
pr_event(int n, int owner, const char *d, const char *c)
{
	uint8_t		 sk[32];
	char		 hex[65], tags[1200], url[512];

	key(owner, sk, NULL, hex);
	url_of(owner, d, url, sizeof(url));
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:%s\"],[\"p\",\"%s\"],"
	    "[\"subject\",\"a change\"],[\"c\",\"%s\"],[\"clone\",\"%s\"]]",
	    hex, d, hex, c, url);
	return signed_by(n, time(NULL), 1618, tags, "please pull");
}

static void
test_pr_held_until_its_commit_is_pushed(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *pr;
	char		 d[32], msg[256], dir[512], oid[41], c[41], url[512];
	char		 ref[120], expect[200], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 20, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	T_ASSERT(gt_commit(dir, "file.txt", "a change\n", "change", c) == 0);
	pr = pr_event(21, 20, d, c);
	T_EQ_INT(pub(ws, pr, msg, sizeof(msg)), 1);
	snprintf(expect, sizeof(expect), "purgatory: PR event stored, waiting "
	    "for git push with commit %s", c);
	T_EQ_STR(msg, expect);
	T_EQ_INT(served(ws, pr->id_hex), 0);
	T_EQ_INT(pub(ws, pr, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");
	url_of(20, d, url, sizeof(url));
	snprintf(ref, sizeof(ref), "HEAD:refs/nostr/%s", pr->id_hex);
	T_EQ_INT(push(dir, url, ref, &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, pr->id_hex, TMO), 1);
	event_destroy(ann);
	event_destroy(pr);
	wsc_close(ws);
}

static void
test_refs_nostr_rules(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *pr;
	char		 d[32], msg[256], dir[512], oid[41], c[41], w[41];
	char		 url[512], ref[120], needle[120], *out = NULL;
	int64_t		 end;
	int		 gone = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 22, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	url_of(22, d, url, sizeof(url));
	/* Not an event id. */
	T_CHECK(push(dir, url, "HEAD:refs/nostr/123", &out) != 0);
	T_CHECK(out && strstr(out, "authorisation failed: Invalid event ID "
	    "format in ref: refs/nostr/123"));
	free(out);
	out = NULL;

	T_ASSERT(gt_commit(dir, "file.txt", "wrong\n", "wrong", w) == 0);
	T_ASSERT(gt_git(dir, NULL, "checkout", "-q", "-b", "pr", oid, NULL) ==
	    0);
	T_ASSERT(gt_commit(dir, "pr.txt", "right\n", "right", c) == 0);
	pr = pr_event(23, 22, d, c);
	/* Git first, with the wrong commit: accepted (placeholder). */
	snprintf(ref, sizeof(ref), "%s:refs/nostr/%s", w, pr->id_hex);
	T_EQ_INT(push(dir, url, ref, &out), 0);
	free(out);
	out = NULL;
	snprintf(needle, sizeof(needle), "%s refs/nostr/%s", w, pr->id_hex);
	T_CHECK(wait_advertised(22, d, needle, TMO));
	/* The event names another commit: the wrong ref goes. */
	T_EQ_INT(pub(ws, pr, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	for (end = wsc_now_ms() + TMO; !gone && wsc_now_ms() < end; ) {
		char *adv = advertisement(22, d, NULL);

		gone = adv != NULL && strstr(adv, needle) == NULL;
		free(adv);
		if (!gone)
			usleep(100000);
	}
	T_CHECK(gone);
	/* Now the wrong commit is refused, the right one accepted. */
	T_CHECK(push(dir, url, ref, &out) != 0);
	T_CHECK(out && strstr(out, "authorisation failed: PR event"));
	free(out);
	out = NULL;
	snprintf(ref, sizeof(ref), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, url, ref, &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, pr->id_hex, TMO), 1);
	event_destroy(ann);
	event_destroy(pr);
	wsc_close(ws);
}

static void
test_head_follows_state_with_existing_commit(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], oid[41];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 24, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	T_CHECK(wait_advertised(24, d, "symref=HEAD:refs/heads/main", TMO));
	/* Every commit is here: accepted and served at once.  (A second
	 * later, so that it is newer than the state of serve_repo.) */
	sleep(1);
	st = state(24, d, "develop", "refs/heads/main", oid,
	    "refs/heads/develop", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	T_EQ_INT(served(ws, st->id_hex), 1);
	T_CHECK(wait_advertised(24, d, "symref=HEAD:refs/heads/develop",
	    TMO));
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_head_follows_state_after_push_of_new_branch(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], oid[41], f[41], url[512];
	char		*out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 25, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	T_ASSERT(gt_git(dir, NULL, "checkout", "-q", "-b", "feature", NULL) ==
	    0);
	T_ASSERT(gt_commit(dir, "feature.txt", "feature\n", "feature", f) ==
	    0);
	sleep(1);
	st = state(25, d, "feature", "refs/heads/main", oid,
	    "refs/heads/feature", f, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(25, d, url, sizeof(url));
	T_EQ_INT(push(dir, url, "feature", &out), 0);
	free(out);
	T_EQ_INT(served(ws, st->id_hex), 1);
	T_CHECK(wait_advertised(25, d, "symref=HEAD:refs/heads/feature",
	    TMO));
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_repository_pages_and_advertisement(void)
{
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], msg[256], path[512], *hdrs = NULL, *body = NULL;
	char		*v, *p;
	int		 status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(26, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	path_of(26, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, &hdrs, &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v && strcmp(v, "application/x-git-upload-pack-advertisement")
	    == 0);
	free(v);
	free(hdrs);
	free(body);
	hdrs = body = NULL;
	path_of(26, d, "/info/refs?service=git-receive-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, &hdrs, &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v && strcmp(v, "application/x-git-receive-pack-advertisement")
	    == 0);
	free(v);
	T_CHECK(body && strncmp(body, "001f# service=git-receive-pack\n0000",
	    35) == 0);
	free(hdrs);
	free(body);
	hdrs = body = NULL;
	/* The page of a hosted repository. */
	path_of(26, d, "", path, sizeof(path));
	T_ASSERT(get(path, NULL, &status, &hdrs, &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v && strstr(v, "text/html"));
	free(v);
	T_CHECK(body && strstr(body, d));
	free(hdrs);
	free(body);
	hdrs = body = NULL;
	/* An identifier with a space arrives percent-decoded. */
	event_destroy(ann);
	ann = announcement(26, "with space", 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	path_of(26, "with%20space", "/info/refs?service=git-upload-pack",
	    path, sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	body = NULL;
	/* Unknown repository: 404, page and git alike. */
	path_of(26, "no-such-repo", "", path, sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	T_CHECK(body && strstr(body, "<html"));
	free(body);
	body = NULL;
	path_of(26, "no-such-repo", "/info/refs?service=git-upload-pack",
	    path, sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	free(body);
	body = NULL;
	/* An invalid npub: 400. */
	T_ASSERT(get("/npub1notakey/x.git/info/refs?service=git-upload-pack",
	    NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 400);
	free(body);
	body = NULL;
	/* The purgatory and git counters are in /metrics. */
	T_ASSERT(get("/metrics", NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	T_CHECK(body && strstr(body, "graspd_purgatory_held{role=\"relayd\","
	    "type=\"announcement\"}"));
	T_CHECK(body && strstr(body, "graspd_git_requests_total{role=\""
	    "relayd\",operation=\"info-refs\",status=\"success\"}"));
	/* Each git request is timed (a histogram by operation). */
	T_CHECK(body && strstr(body, "\n# TYPE graspd_git_request_duration_"
	    "seconds histogram\n"));
	T_CHECK(body && (p = strstr(body, "\ngraspd_git_request_duration_"
	    "seconds_count{role=\"relayd\",operation=\"info-refs\"} ")) &&
	    strtod(p + 80, NULL) >= 1);
	free(body);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_clone_and_advertised_capabilities(void)
{
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], dir[512], oid[41], url[512], clone[512], c2[41];
	char		*adv, bad[600];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 27, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	url_of(27, d, url, sizeof(url));
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, NULL, "clone", "-q", url, clone, NULL), 0);
	T_ASSERT(gt_rev(clone, "HEAD", c2) == 0);
	T_EQ_STR(c2, oid);
	/* Protocol v0 too. */
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, NULL, "-c", "protocol.version=0", "clone", "-q",
	    url, clone, NULL), 0);
	/* An invalid path fails. */
	snprintf(bad, sizeof(bad), "http://%s/not-a-repo", dom());
	workdir(clone, sizeof(clone));
	T_CHECK(gt_git(NULL, NULL, "clone", "-q", bad, clone, NULL) != 0);
	url_of(27, "missing", bad, sizeof(bad));
	workdir(clone, sizeof(clone));
	T_CHECK(gt_git(NULL, NULL, "clone", "-q", bad, clone, NULL) != 0);
	adv = advertisement(27, d, NULL);
	T_ASSERT(adv != NULL);
	T_CHECK(strstr(adv, "allow-reachable-sha1-in-want") != NULL);
	T_CHECK(strstr(adv, "allow-tip-sha1-in-want") != NULL);
	T_CHECK(strstr(adv, " filter") != NULL);
	free(adv);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_partial_clone_filters(void)
{
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], dir[512], oid[41], url[512], clone[512], c2[41];
	char		*out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 28, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	url_of(28, d, url, sizeof(url));
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, &out, "clone", "-q", "--filter=blob:none", url,
	    clone, NULL), 0);
	if (out && *out)
		printf("# %s", out);
	free(out);
	out = NULL;
	T_ASSERT(gt_rev(clone, "HEAD", c2) == 0);
	T_EQ_STR(c2, oid);
	workdir(clone, sizeof(clone));
	T_ASSERT(gt_init(clone) == 0);
	T_EQ_INT(gt_git(clone, &out, "fetch", "-q", "--filter=tree:0", url,
	    "main", NULL), 0);
	free(out);
	T_ASSERT(gt_rev(clone, "FETCH_HEAD", c2) == 0);
	T_EQ_STR(c2, oid);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_cors_on_git_routes_and_options(void)
{
	static const struct {
		const char	*method, *rest;
		int		 status;
	} cases[] = {
		{ "GET", "/info/refs?service=git-upload-pack", 200 },
		{ "POST", "/git-upload-pack", 200 },
		{ "OPTIONS", "/git-upload-pack", 204 },
		{ "OPTIONS", "/info/refs", 204 },
		{ "GET", "", 200 },
		{ "OPTIONS", NULL, 204 },	/* "/" */
	};
	struct wsc	*ws = conn();
	struct event	*ann;
	char		 d[32], msg[256], path[512], *hdrs, *body, *v;
	size_t		 i, len;
	int		 status, post;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(29, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hdrs = body = NULL;
		status = 0;
		post = strcmp(cases[i].method, "POST") == 0;
		if (cases[i].rest == NULL)
			snprintf(path, sizeof(path), "/");
		else
			path_of(29, d, cases[i].rest, path, sizeof(path));
		/* A POST body of one flush: an empty request. */
		T_ASSERT(http_request(relayproc_host(rp), relayproc_port(rp),
		    cases[i].method, path, post ? "Content-Type: application/"
		    "x-git-upload-pack-request\r\n" : NULL, post ? "0000" :
		    NULL, post ? 4 : 0, TMO, &status, &hdrs, &body, &len) ==
		    0);
		T_EQ_INT(status, cases[i].status);
		v = http_header_value(hdrs, "access-control-allow-origin");
		T_CHECK(v && strcmp(v, "*") == 0);
		free(v);
		v = http_header_value(hdrs, "access-control-allow-methods");
		T_CHECK(v && strstr(v, "GET") && strstr(v, "POST"));
		free(v);
		v = http_header_value(hdrs, "access-control-allow-headers");
		T_CHECK(v && strstr(v, "Content-Type"));
		free(v);
		free(hdrs);
		free(body);
	}
	event_destroy(ann);
	wsc_close(ws);
}

/* gzip of p[0..n) into a new buffer; its length in *outlen. */
static unsigned char *
gzip(const void *p, size_t n, size_t *outlen)
{
	z_stream	 z;
	unsigned char	*out;
	size_t		 cap = n + 128;

	memset(&z, 0, sizeof(z));
	if ((out = malloc(cap)) == NULL ||
	    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = (unsigned)n;
	z.next_out = out;
	z.avail_out = (unsigned)cap;
	deflate(&z, Z_FINISH);
	*outlen = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

static void
test_gzip_body_and_protocol_v2(void)
{
	static const char req[] = "0014command=ls-refs\n0001"
	    "000csymrefs\n0000";
	struct wsc	*ws = conn();
	unsigned char	*z;
	char		 d[32], dir[512], oid[41], path[512], *hdrs = NULL;
	char		*body = NULL, needle[80];
	size_t		 zlen, len;
	int		 status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 30, d, "", dir, sizeof(dir), oid, NULL) == 0);
	z = gzip(req, sizeof(req) - 1, &zlen);
	T_ASSERT(z != NULL);
	path_of(30, d, "/git-upload-pack", path, sizeof(path));
	T_ASSERT(http_request(relayproc_host(rp), relayproc_port(rp), "POST",
	    path, "Git-Protocol: version=2\r\nContent-Encoding: gzip\r\n"
	    "Content-Type: application/x-git-upload-pack-request\r\n", z,
	    zlen, TMO, &status, &hdrs, &body, &len) == 0);
	free(z);
	T_EQ_INT(status, 200);
	snprintf(needle, sizeof(needle), "%s refs/heads/main", oid);
	T_CHECK(body && strstr(body, needle));
	free(hdrs);
	free(body);
	/* The v2 capability advertisement. */
	path_of(30, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	body = NULL;
	T_ASSERT(get(path, "Git-Protocol: version=2\r\n", &status, NULL,
	    &body) == 0);
	T_CHECK(body && strstr(body, "version 2"));
	free(body);
	wsc_close(ws);
}

static void
test_large_push_streams_chunked(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], dir[512], oid[41], big[41], url[512];
	char		 path[600], *out = NULL, clone[512], c2[41];
	FILE		*f;
	size_t		 i;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 31, d, "", dir, sizeof(dir), oid, &ann) ==
	    0);
	/* Incompressible, several times git's 1 MiB post buffer. */
	snprintf(path, sizeof(path), "%s/big.bin", dir);
	T_ASSERT((f = fopen(path, "w")) != NULL);
	srand(7);
	for (i = 0; i < 6 * 1024 * 1024; i++)
		fputc(rand() & 0xff, f);
	fclose(f);
	T_ASSERT(gt_git(dir, NULL, "add", "big.bin", NULL) == 0);
	T_ASSERT(gt_git(dir, NULL, "commit", "-q", "-m", "big", NULL) == 0);
	T_ASSERT(gt_rev(dir, "HEAD", big) == 0);
	sleep(1);
	st = state(31, d, "main", "refs/heads/main", big, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(31, d, url, sizeof(url));
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	T_EQ_INT(served(ws, st->id_hex), 1);
	workdir(clone, sizeof(clone));
	out = NULL;
	T_EQ_INT(gt_git(NULL, &out, "clone", "-q", url, clone, NULL), 0);
	if (out && *out)
		printf("# %s", out);
	free(out);
	T_ASSERT(gt_rev(clone, "HEAD", c2) == 0);
	T_EQ_STR(c2, big);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_newer_unlisted_announcement_evicts_the_held_one(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *unlisted, *half;
	char		 d[32], msg[512], path[512], want[160], url[512];
	char		 tags[1024], *body = NULL;
	uint8_t		 sk[32], pk[32];
	int		 status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(34, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	path_of(34, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	body = NULL;
	/* The owner drops this service: refused, and the held one goes. */
	sleep(1);
	unlisted = announcement(34, d, 0, "");
	T_EQ_INT(pub(ws, unlisted, msg, sizeof(msg)), 0);
	T_CHECK(strncmp(msg, "blocked: Announcement must list service", 39) ==
	    0);
	/* The refusal names the domain it expects, and what lacks it. */
	snprintf(want, sizeof(want), "this service is %s, missing from both",
	    dom());
	T_CHECK(strstr(msg, want) != NULL);
	key(34, sk, pk, NULL);
	gt_url(url, sizeof(url), dom(), pk, d);
	snprintf(tags, sizeof(tags), "[[\"d\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"wss://elsewhere.example\"]]", d, url);
	T_ASSERT((half = event_new_signed(sk, time(NULL) + 1, 30617, tags,
	    "")) != NULL);
	T_EQ_INT(pub(ws, half, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want), "this service is %s, missing from "
	    "'relays' (e.g. clone http://%s/", dom(), dom());
	if (strstr(msg, want) == NULL)
		printf("# %s\n", msg);
	T_CHECK(strstr(msg, want) != NULL);
	event_destroy(half);
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	free(body);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	event_destroy(ann);
	event_destroy(unlisted);
	wsc_close(ws);
}

/* Hands ev to relayd as another role would (ingest channel). */
static int
ingest(const struct event *ev)
{
	struct buf	 b = BUF_INIT;
	char		 run[512], ep[600];
	int		 s, tmo = TMO, rc;

	snprintf(run, sizeof(run), "%s/run", relayproc_dir(rp));
	if (chan_endpoint(run, CHAN_INGEST, ep, sizeof(ep)) == -1 ||
	    (s = chan_open(NN_PUSH, ep, 0)) < 0)
		return -1;
	nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &tmo, sizeof(tmo));
	msg_ingest_encode(&b, ROLE_SYNCD, "wss://peer.example", ev->json,
	    ev->json_len);
	rc = msg_send(s, MSG_INGEST, b.b_data, b.b_len, 0);
	buf_free(&b);
	/* Let nanomsg deliver before the socket goes. */
	usleep(200000);
	chan_close(s);
	return rc;
}

static void
test_purgatory_survives_kill9(void)
{
	struct wsc	*ws = conn();
	struct event	*ann1, *ann2, *st;
	char		 d1[32], d2[32], msg[256], dir[512], oid[41];
	char		 url[512], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d1, sizeof(d1));
	next_d(d2, sizeof(d2));
	ann1 = announcement(32, d1, 1, "");
	ann2 = announcement(32, d2, 1, "");
	T_EQ_INT(pub(ws, ann1, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(pub(ws, ann2, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "survivor\n", oid) == 0);
	st = state(32, d1, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	wsc_drop(ws);

	relayproc_kill(rp, SIGKILL);
	relayproc_wait(rp, TMO);
	T_ASSERT(relayproc_restart(rp) == 0);
	ws = conn();
	T_ASSERT(ws != NULL);
	/* Still held, still not served. */
	T_EQ_INT(served(ws, ann1->id_hex), 0);
	T_EQ_INT(served(ws, ann2->id_hex), 0);
	T_EQ_INT(pub(ws, ann2, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");
	/* The held state still authorises the push, which releases. */
	url_of(32, d1, url, sizeof(url));
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	T_EQ_INT(served(ws, ann1->id_hex), 1);
	T_EQ_INT(served(ws, st->id_hex), 1);
	T_EQ_INT(served(ws, ann2->id_hex), 0);
	event_destroy(ann1);
	event_destroy(ann2);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_held_announcement_expires_and_loses_its_repository(void)
{
	struct wsc	*ws = conn();
	struct event	*ann, *st;
	char		 d[32], msg[256], path[512], *body = NULL;
	int		 status = 0, i;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(33, d, 1, "");
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	/* A state whose commit exists nowhere: it will expire too. */
	st = state(33, d, "main", "refs/heads/main",
	    "0123456789abcdef0123456789abcdef01234567", NULL);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	path_of(33, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	/* NGIT_TEST: 30 minutes are 30 seconds. */
	for (i = 0; i < 45 && status != 404; i++) {
		sleep(1);
		body = NULL;
		T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
		free(body);
	}
	T_EQ_INT(status, 404);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* Sent again, it is held again with a new repository. */
	T_EQ_INT(pub(ws, ann, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	body = NULL;
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	/*
	 * The state expired with it.  A synced copy is refused ("invalid:
	 * previously expired from purgatory without git data"), so the
	 * client's copy is held anew rather than found held.
	 */
	T_ASSERT(ingest(st) == 0);
	usleep(300000);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(pub(ws, st, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

#define RUN(fn) do {							\
	if (only == NULL || strstr(#fn, only) != NULL)			\
		T_RUN(fn);						\
} while (0)

/* Last: a clean exit on SIGTERM (sanitizer builds report leaks here). */
static void
test_sigterm_stops_cleanly(void)
{
	T_EQ_INT(relayproc_stop(rp), 0);
}

/* GIT_TEST_ONLY=word runs only the cases whose name contains it. */
int
main(void)
{
	const char	*only = getenv("GIT_TEST_ONLY");
	char		 home[300];
	int		 rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned)getpid());
	snprintf(tmp, sizeof(tmp), "%s/graspd-git-test.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmp) == NULL) {
		printf("not ok - git_test: no temporary directory\n");
		return 1;
	}
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1 || gt_git(NULL, NULL, "--version", NULL) !=
	    0) {
		printf("not ok - git_test: git does not run\n");
		return 1;
	}
	rp = relayproc_start("relayd", NULL);
	if (rp == NULL) {
		printf("not ok - git_test: relayd did not start\n");
		return 1;
	}
	RUN(test_new_announcement_ok_but_not_served);
	RUN(test_git_endpoint_works_for_purgatory_repo);
	RUN(test_state_held_until_push_then_both_served);
	RUN(test_push_rejected_without_state);
	RUN(test_push_of_wrong_commit_rejected);
	RUN(test_maintainer_and_recursive_maintainer_states_authorise);
	RUN(test_non_maintainer_state_ignored_push_rejected);
	RUN(test_deletion_by_id_removes_held_state);
	RUN(test_deletion_by_coordinate_removes_maintainers_held_state);
	RUN(test_pr_held_until_its_commit_is_pushed);
	RUN(test_refs_nostr_rules);
	RUN(test_head_follows_state_with_existing_commit);
	RUN(test_head_follows_state_after_push_of_new_branch);
	RUN(test_repository_pages_and_advertisement);
	RUN(test_clone_and_advertised_capabilities);
	RUN(test_partial_clone_filters);
	RUN(test_cors_on_git_routes_and_options);
	RUN(test_gzip_body_and_protocol_v2);
	RUN(test_large_push_streams_chunked);
	RUN(test_newer_unlisted_announcement_evicts_the_held_one);
	RUN(test_purgatory_survives_kill9);
	RUN(test_held_announcement_expires_and_loses_its_repository);
	T_RUN(test_sigterm_stops_cleanly);
	if (t_fail)
		relayproc_dump_log(rp, 40);
	relayproc_free(rp);
	rc = t_done();
	if (getenv("GRASPD_KEEP_TMP") == NULL) {
		char	cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmp);
	} else
		printf("# kept %s\n", tmp);
	return rc;
}
