/*
 * git_test.c: GRASP-01 git hosting and purgatory as git and Nostr clients
 * see them: the real git client against relayd's smart HTTP on loopback,
 * and websockets for the events.  Covers the grasp-audit purgatory, push
 * authorization, repository creation, clone, filter and CORS cases
 * (reference brief 6.3), request bodies (chunked, gzip, protocol v2),
 * eviction, expiry (with the refusal of synced copies of expired events),
 * and purgatory surviving kill -9.
 */
#define _GNU_SOURCE /* memmem */
#include <sys/stat.h>

#include <errno.h>
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
#include "config.h"
#include "event.h"
#include "gitutil.h"
#include "json.h"
#include "msg.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "wsclient.h"

#define TMO	 5000
/* Seconds a held event lasts in the expiry case's relayd (a push and its
 * checks fit on a loaded machine). */
#define EXPIRY_S "12"
#define MSG_HELD "purgatory: won't be served until git data arrives"

static struct relayproc *rp;	   /* the shared relay */
static char		 tmp[256]; /* local repositories, HOME */
static int		 seq_d;	   /* makes identifiers unique */
static int		 seq_dir;

/* Byte 0 of this test's keys (tint_key()). */
#define KEY0 0x33

static void
key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN],
    char hex[PUBKEY_HEX_LEN + 1])
{
	uint8_t p[PUBKEY_LEN];

	tint_key(KEY0, n, sk);
	event_pubkey_of(sk, p);
	if (pk)
		memcpy(pk, p, PUBKEY_LEN);
	if (hex)
		hex_encode(p, PUBKEY_LEN, hex);
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
	return tint_signed(KEY0, n, created_at, kind, tags, content);
}

static int
served(struct wsc *ws, const char *id)
{
	char   subid[32];
	size_t n;
	int    rc;

	snprintf(subid, sizeof(subid), "s%d", rand());
	rc = nostr_count_id(ws, subid, id, TMO, &n);
	return rc == 0 || rc == 1 ? (int)n : -1;
}

/* Waits up to ms for the event to be served. */
static int
wait_served(struct wsc *ws, const char *id, int ms)
{
	int64_t end = wsc_now_ms() + ms;

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
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	      url[512];
	struct buf    b = BUF_INIT;
	struct event *ev;

	key(n, sk, pk, NULL);
	buf_printf(&b, "[[\"d\",\"%s\"],[\"name\",\"%s\"],", d, d);
	if (listed) {
		gt_url(url, sizeof(url), dom(), pk, d);
		buf_printf(&b, "[\"clone\",\"%s\"],[\"relays\",\"ws://%s\"]",
		    url, dom());
	} else
		buf_printf(&b,
		    "[\"clone\",\"https://elsewhere.example/%d/"
		    "%s.git\"],[\"relays\",\"wss://elsewhere.example\"]",
		    n, d);
	buf_printf(&b, "%s]", extra ? extra : "");
	ev = event_new_signed(sk, time(NULL), 30617, b.b_data, "");
	buf_free(&b);
	return ev;
}

/* A state by key n for d: NULL-terminated (ref, oid) pairs; head or NULL. */
static struct event *
state(int n, const char *d, const char *head, ...)
{
	struct buf    b = BUF_INIT;
	struct event *ev;
	const char   *ref, *oid;
	va_list	      ap;

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
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	key(n, sk, pk, NULL);
	gt_url(out, len, dom(), pk, d);
}

static void
path_of(int n, const char *d, const char *rest, char *out, size_t len)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
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

/* 1 if pushing refspec from dir to url fails with needle (or NULL) said. */
static int
push_refused(const char *dir, const char *url, const char *refspec,
    const char *needle)
{
	char *out = NULL;
	int   ok;

	ok = push(dir, url, refspec, &out) != 0 &&
	    (needle == NULL || (out != NULL && strstr(out, needle) != NULL));
	if (!ok)
		printf("# push %s: %s\n", refspec, out ? out : "(no output)");
	free(out);
	return ok;
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
serve_repo(struct wsc *ws, int n, const char *d, const char *extra, char *dir,
    size_t dirlen, char oid[41], struct event **annp)
{
	struct event *ann = announcement(n, d, 1, extra);
	uint8_t	      sk[SECKEY_LEN];
	char	      msg[256];
	int	      rc = -1;

	key(n, sk, NULL, NULL);
	workdir(dir, dirlen);
	if (nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)) != 1 ||
	    strcmp(msg, MSG_HELD) != 0) {
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
get(const char *path, const char *extra, int *status, char **hdrs, char **body)
{
	size_t len;

	return http_request(relayproc_host(rp), relayproc_port(rp), "GET", path,
	    extra, NULL, 0, TMO, status, hdrs, body, &len);
}

/*
 * The v0 upload-pack advertisement of (n, d), its NULs (before the
 * capabilities) turned into spaces so that it reads as one string.
 */
static char *
advertisement(int n, const char *d, char **hdrs)
{
	char   path[512], *body = NULL;
	size_t len, i;
	int    status = 0;

	path_of(n, d, "/info/refs?service=git-upload-pack", path, sizeof(path));
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
	int64_t end = wsc_now_ms() + ms;
	char   *adv;
	int	found;

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
	struct wsc   *ws = conn();
	struct event *ann, *issue;
	char	      d[32], msg[512], tags[256], want[128];
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(1, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* Sent again: the same answer, still held. */
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* An issue on it is refused, saying that the push is missing. */
	key(1, sk, pk, NULL);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:%s\"]]",
	    ann->pubkey_hex, d);
	T_ASSERT((issue = event_new_signed(sk, time(NULL), 1621, tags,
		      "an issue")) != NULL);
	T_EQ_INT(nostr_publish_msg(ws, issue, TMO, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want),
	    "/%s is announced but its git data has "
	    "not been pushed yet: push to http://%s/",
	    d, dom());
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
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], msg[256], *hdrs = NULL, *adv, *v;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(2, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	adv = advertisement(2, d, &hdrs);
	T_ASSERT(adv != NULL);
	T_CHECK(strncmp(adv, "001e# service=git-upload-pack\n0000", 34) == 0);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(
	    v && strcmp(v, "application/x-git-upload-pack-advertisement") == 0);
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
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], oid[41], url[512], *out;
	char	      clone[512];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(3, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "hello\n", oid) == 0);
	st = state(3, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, st->id_hex), 0);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* The same state again is a duplicate in purgatory. */
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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

/*
 * Issue 38, item 1: grasp-audit's owner fixture.  A new repository's HEAD
 * is what `git init --bare` writes (refs/heads/master with no
 * init.defaultBranch), so a clone of it is on master and `git branch
 * main` after the first commit works; a state's HEAD then moves it.
 */
static void
test_empty_repository_head_as_git_init(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], url[512], clone[512], oid[41], *out;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(90, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(90, d, url, sizeof(url));
	workdir(clone, sizeof(clone));
	out = NULL;
	T_EQ_INT(gt_git(NULL, &out, "clone", "-q", url, clone, NULL), 0);
	free(out);
	out = NULL;
	T_EQ_INT(gt_git(clone, &out, "symbolic-ref", "HEAD", NULL), 0);
	T_CHECK(out != NULL && strcmp(out, "refs/heads/master\n") == 0);
	if (out != NULL && strcmp(out, "refs/heads/master\n") != 0)
		printf("# clone is on %s", out);
	free(out);
	T_ASSERT(gt_commit(clone, "file.txt", "owner\n", "first", oid) == 0);
	out = NULL;
	T_EQ_INT(gt_git(clone, &out, "branch", "main", NULL), 0);
	free(out);
	/* The state names main HEAD; the push releases it and HEAD
	 * follows. */
	st = state(90, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	out = NULL;
	T_EQ_INT(push(clone, url, "main", &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, st->id_hex, TMO), 1);
	T_CHECK(wait_advertised(90, d, "symref=HEAD:refs/heads/main", TMO));
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

/*
 * Issue 38, item 2 (grasp-audit's
 * test_state_event_accepted_for_purgatory_announcement and
 * test_state_event_served_after_git_push): a state whose values are not
 * object ids ("abc123", or 64 hex digits in a SHA-1 repository) is held
 * like one whose commits are absent, and no push releases it; the state
 * that names the pushed commit is served.
 */
static void
test_state_with_bad_values_held(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *bad, *bad64, *st;
	char	      d[32], msg[256], dir[512], oid[41], url[512], *out;
	char	      hex64[65];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(91, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	bad = state(91, d, "main", "refs/heads/main", "abc123", NULL);
	T_EQ_INT(nostr_publish_msg(ws, bad, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, bad->id_hex), 0);

	T_ASSERT(local_repo(dir, sizeof(dir), "bad values\n", oid) == 0);
	/* No push matches it, and the refusal says what it names. */
	url_of(91, d, url, sizeof(url));
	T_CHECK(push_refused(dir, url, "main", "the state says abc123"));
	sleep(1);
	st = state(91, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	out = NULL;
	T_EQ_INT(push(dir, url, "main", &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, st->id_hex, TMO), 1);
	T_EQ_INT(served(ws, ann->id_hex), 1);
	/* The push released the good state only. */
	T_EQ_INT(served(ws, bad->id_hex), 0);

	/* Now the repository has its data: a state with every commit is
	 * stored at once, one with a value that is no object id is held,
	 * even beside a branch git has. */
	memset(hex64, 'a', 64);
	hex64[64] = '\0';
	sleep(1);
	bad64 = state(91, d, "main", "refs/heads/main", oid, "refs/heads/wide",
	    hex64, NULL);
	T_EQ_INT(nostr_publish_msg(ws, bad64, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, bad64->id_hex), 0);
	event_destroy(bad);
	event_destroy(bad64);
	bad = state(91, d, "main", "refs/heads/main", oid, "refs/tags/v1", "v1",
	    NULL);
	T_EQ_INT(nostr_publish_msg(ws, bad, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(served(ws, bad->id_hex), 0);
	event_destroy(ann);
	event_destroy(bad);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_push_rejected_without_state(void)
{
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], msg[256], dir[512], oid[41], url[512], *out;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(4, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "x\n", oid) == 0);
	url_of(4, d, url, sizeof(url));
	out = NULL;
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out &&
	    strstr(out,
		"authorisation failed: No state events "
		"in purgatory"));
	/* It says what is missing and what to do (issue 38, item 8). */
	T_CHECK(out &&
	    strstr(out,
		"no state event (kind 30618) lists these refs at these "
		"commits; publish one, signed by the owner or a "
		"maintainer, then push again"));
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
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], a[41], b[41], url[512];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(6, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "a\n", a) == 0);
	T_ASSERT(gt_commit(dir, "file.txt", "b\n", "second", b) == 0);
	/* The state names the first commit; the push brings the second. */
	st = state(6, d, "main", "refs/heads/main", a, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	url_of(6, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out &&
	    strstr(out,
		"authorisation failed: 1 state event(s) "
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
	struct wsc   *ws = conn();
	struct event *ann, *mann, *st;
	char	      d[32], msg[256], dir[512], oid[41], url[512];
	char m[200], hexm[PUBKEY_HEX_LEN + 1], hexr[PUBKEY_HEX_LEN + 1],
	    *out = NULL;
	uint8_t sk[SECKEY_LEN];

	T_ASSERT(ws != NULL);
	/* Owner 10 names maintainer 11; 11 names 12 (recursive). */
	key(11, sk, NULL, hexm);
	key(12, sk, NULL, hexr);
	next_d(d, sizeof(d));
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexm);
	ann = announcement(10, d, 1, m);
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_ASSERT(local_repo(dir, sizeof(dir), "by a maintainer\n", oid) == 0);
	st = state(11, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexr);
	mann = announcement(11, d, 0, m);
	/* Accepted through the held announcement (maintainer exception). */
	T_EQ_INT(nostr_publish_msg(ws, mann, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	T_ASSERT(local_repo(dir, sizeof(dir),
		     "by a maintainer's "
		     "maintainer\n",
		     oid) == 0);
	st = state(12, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], oid[41], url[512];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(13, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "stranger\n", oid) == 0);
	st = state(14, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 0);
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
	struct wsc   *ws = conn();
	struct event *ann, *st, *del;
	char	      d[32], msg[256], dir[512], oid[41], url[512];
	char	      tags[200], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(15, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "deleted\n", oid) == 0);
	st = state(15, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", st->id_hex);
	del = signed_by(15, time(NULL), 5, tags, "");
	T_EQ_INT(nostr_publish_msg(ws, del, TMO, msg, sizeof(msg)), 1);
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
	struct wsc   *ws = conn();
	struct event *ann, *st, *del;
	char	      d[32], msg[256], dir[512], oid[41], url[512];
	char	      tags[300], hexm[PUBKEY_HEX_LEN + 1], m[120], *out = NULL;
	uint8_t	      sk[SECKEY_LEN];

	T_ASSERT(ws != NULL);
	key(17, sk, NULL, hexm);
	next_d(d, sizeof(d));
	snprintf(m, sizeof(m), ",[\"maintainers\",\"%s\"]", hexm);
	ann = announcement(16, d, 1, m);
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "maintainer\n", oid) == 0);
	st = state(17, d, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30618:%s:%s\"]]", hexm, d);
	del = signed_by(17, time(NULL) + 1, 5, tags, "");
	T_EQ_INT(nostr_publish_msg(ws, del, TMO, msg, sizeof(msg)), 1);
	url_of(16, d, url, sizeof(url));
	T_CHECK(push(dir, url, "main", &out) != 0);
	T_CHECK(out && strstr(out, "No state events in purgatory"));
	free(out);
	event_destroy(ann);
	event_destroy(st);
	event_destroy(del);
	wsc_close(ws);
}

/* A PR by key n to (owner, d) with tip c, cloned from clone. */
static struct event *
pr_cloned(int n, int owner, const char *d, const char *c, const char *clone)
{
	uint8_t sk[SECKEY_LEN];
	char	hex[PUBKEY_HEX_LEN + 1], tags[1400];

	key(owner, sk, NULL, hex);
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:%s\"],[\"p\",\"%s\"],"
	    "[\"subject\",\"a change\"],[\"c\",\"%s\"],[\"clone\",\"%s\"]]",
	    hex, d, hex, c, clone);
	return signed_by(n, time(NULL), 1618, tags, "please pull");
}

/* A PR (kind 1618) by key n to repository (owner, d) with tip c. */
static struct event *
pr_event(int n, int owner, const char *d, const char *c)
{
	char url[512];

	url_of(owner, d, url, sizeof(url));
	return pr_cloned(n, owner, d, c, url);
}

static void
test_pr_held_until_its_commit_is_pushed(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *pr;
	char	      d[32], msg[256], dir[512], oid[41], c[41], url[512];
	char	      ref[120], expect[200], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 20, d, "", dir, sizeof(dir), oid, &ann) == 0);
	T_ASSERT(gt_commit(dir, "file.txt", "a change\n", "change", c) == 0);
	pr = pr_event(21, 20, d, c);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(expect, sizeof(expect),
	    "purgatory: PR event stored, waiting "
	    "for git push with commit %s",
	    c);
	T_EQ_STR(msg, expect);
	T_EQ_INT(served(ws, pr->id_hex), 0);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
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
	struct wsc   *ws = conn();
	struct event *ann, *pr;
	char	      d[32], msg[256], dir[512], oid[41], c[41], w[41];
	char	      url[512], ref[120], needle[120], *out = NULL;
	int64_t	      end;
	int	      gone = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 22, d, "", dir, sizeof(dir), oid, &ann) == 0);
	url_of(22, d, url, sizeof(url));
	/* Not an event id. */
	T_CHECK(push(dir, url, "HEAD:refs/nostr/123", &out) != 0);
	T_CHECK(out &&
	    strstr(out,
		"authorisation failed: Invalid event ID "
		"format in ref: refs/nostr/123"));
	free(out);
	out = NULL;

	T_ASSERT(gt_commit(dir, "file.txt", "wrong\n", "wrong", w) == 0);
	T_ASSERT(
	    gt_git(dir, NULL, "checkout", "-q", "-b", "pr", oid, NULL) == 0);
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
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	for (end = wsc_now_ms() + TMO; !gone && wsc_now_ms() < end;) {
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
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], oid[41];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 24, d, "", dir, sizeof(dir), oid, &ann) == 0);
	T_CHECK(wait_advertised(24, d, "symref=HEAD:refs/heads/main", TMO));
	/* Every commit is here: accepted and served at once.  (A second
	 * later, so that it is newer than the state of serve_repo.) */
	sleep(1);
	st = state(24, d, "develop", "refs/heads/main", oid,
	    "refs/heads/develop", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	T_EQ_INT(served(ws, st->id_hex), 1);
	T_CHECK(wait_advertised(24, d, "symref=HEAD:refs/heads/develop", TMO));
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_head_follows_state_after_push_of_new_branch(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], oid[41], f[41], url[512];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 25, d, "", dir, sizeof(dir), oid, &ann) == 0);
	T_ASSERT(
	    gt_git(dir, NULL, "checkout", "-q", "-b", "feature", NULL) == 0);
	T_ASSERT(gt_commit(dir, "feature.txt", "feature\n", "feature", f) == 0);
	sleep(1);
	st = state(25, d, "feature", "refs/heads/main", oid,
	    "refs/heads/feature", f, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	url_of(25, d, url, sizeof(url));
	T_EQ_INT(push(dir, url, "feature", &out), 0);
	free(out);
	T_EQ_INT(served(ws, st->id_hex), 1);
	T_CHECK(wait_advertised(25, d, "symref=HEAD:refs/heads/feature", TMO));
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
test_repository_pages_and_advertisement(void)
{
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], msg[256], path[512], *hdrs = NULL, *body = NULL;
	char	     *v, *p;
	int	      status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(26, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	path_of(26, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, &hdrs, &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(
	    v && strcmp(v, "application/x-git-upload-pack-advertisement") == 0);
	free(v);
	free(hdrs);
	free(body);
	hdrs = body = NULL;
	path_of(26, d, "/info/refs?service=git-receive-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, &hdrs, &body) == 0);
	T_EQ_INT(status, 200);
	v = http_header_value(hdrs, "content-type");
	T_CHECK(v &&
	    strcmp(v, "application/x-git-receive-pack-advertisement") == 0);
	free(v);
	T_CHECK(body &&
	    strncmp(body, "001f# service=git-receive-pack\n0000", 35) == 0);
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
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	path_of(26, "with%20space", "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
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
	path_of(26, "no-such-repo", "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
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
	T_CHECK(body &&
	    strstr(body,
		"graspd_purgatory_held{role=\"relayd\","
		"type=\"announcement\"}"));
	T_CHECK(body &&
	    strstr(body,
		"graspd_git_requests_total{role=\""
		"relayd\",operation=\"info-refs\",status=\"success\"}"));
	/* Each git request is timed (a histogram by operation). */
	T_CHECK(body &&
	    strstr(body,
		"\n# TYPE graspd_git_request_duration_"
		"seconds histogram\n"));
	T_CHECK(body &&
	    (p = strstr(body,
		 "\ngraspd_git_request_duration_"
		 "seconds_count{role=\"relayd\",operation=\"info-refs\"} ")) &&
	    strtod(p + 80, NULL) >= 1);
	free(body);
	event_destroy(ann);
	wsc_close(ws);
}

static void
test_clone_and_advertised_capabilities(void)
{
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], dir[512], oid[41], url[512], clone[512], c2[41];
	char	     *adv, bad[600];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 27, d, "", dir, sizeof(dir), oid, &ann) == 0);
	url_of(27, d, url, sizeof(url));
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, NULL, "clone", "-q", url, clone, NULL), 0);
	T_ASSERT(gt_rev(clone, "HEAD", c2) == 0);
	T_EQ_STR(c2, oid);
	/* Protocol v0 too. */
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, NULL, "-c", "protocol.version=0", "clone", "-q",
		     url, clone, NULL),
	    0);
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
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], dir[512], oid[41], url[512], clone[512], c2[41];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 28, d, "", dir, sizeof(dir), oid, &ann) == 0);
	url_of(28, d, url, sizeof(url));
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, &out, "clone", "-q", "--filter=blob:none", url,
		     clone, NULL),
	    0);
	if (out && *out)
		printf("# %s", out);
	free(out);
	out = NULL;
	T_ASSERT(gt_rev(clone, "HEAD", c2) == 0);
	T_EQ_STR(c2, oid);
	workdir(clone, sizeof(clone));
	T_ASSERT(gt_init(clone) == 0);
	T_EQ_INT(gt_git(clone, &out, "fetch", "-q", "--filter=tree:0", url,
		     "main", NULL),
	    0);
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
		const char *method, *rest;
		int	    status;
	} cases[] = {
		{ "GET", "/info/refs?service=git-upload-pack", 200 },
		{ "POST", "/git-upload-pack", 200 },
		{ "OPTIONS", "/git-upload-pack", 204 },
		{ "OPTIONS", "/info/refs", 204 }, { "GET", "", 200 },
		{ "OPTIONS", NULL, 204 }, /* "/" */
	};
	struct wsc   *ws = conn();
	struct event *ann;
	char	      d[32], msg[256], path[512], *hdrs, *body;
	size_t	      i, len;
	int	      status, post;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(29, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
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
			     cases[i].method, path,
			     post ? "Content-Type: application/"
				    "x-git-upload-pack-request\r\n" :
				    NULL,
			     post ? "0000" : NULL, post ? 4 : 0, TMO, &status,
			     &hdrs, &body, &len) == 0);
		T_EQ_INT(status, cases[i].status);
		T_CHECK(tint_cors_ok(hdrs));
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
	z_stream       z;
	unsigned char *out;
	size_t	       cap = n + 128;

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
	struct wsc	 *ws = conn();
	unsigned char	 *z;
	char		  d[32], dir[512], oid[41], path[512], *hdrs = NULL;
	char		 *body = NULL, needle[80];
	size_t		  zlen, len;
	int		  status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 30, d, "", dir, sizeof(dir), oid, NULL) == 0);
	z = gzip(req, sizeof(req) - 1, &zlen);
	T_ASSERT(z != NULL);
	path_of(30, d, "/git-upload-pack", path, sizeof(path));
	T_ASSERT(
	    http_request(relayproc_host(rp), relayproc_port(rp), "POST", path,
		"Git-Protocol: version=2\r\nContent-Encoding: gzip\r\n"
		"Content-Type: application/x-git-upload-pack-request\r\n",
		z, zlen, TMO, &status, &hdrs, &body, &len) == 0);
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
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], oid[41], big[41], url[512];
	char	      path[600], *out = NULL, clone[512], c2[41];
	FILE	     *f;
	size_t	      i;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 31, d, "", dir, sizeof(dir), oid, &ann) == 0);
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
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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
	struct wsc   *ws = conn();
	struct event *ann, *unlisted, *half;
	char	      d[32], msg[512], path[512], want[160], url[512];
	char	      tags[1024], *body = NULL;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	int	      status = 0;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(34, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	path_of(34, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	body = NULL;
	/* The owner drops this service: refused, and the held one goes. */
	sleep(1);
	unlisted = announcement(34, d, 0, "");
	T_EQ_INT(nostr_publish_msg(ws, unlisted, TMO, msg, sizeof(msg)), 0);
	T_CHECK(
	    strncmp(msg, "blocked: Announcement must list service", 39) == 0);
	/* The refusal names the domain it expects, and what lacks it. */
	snprintf(want, sizeof(want), "this service is %s, missing from both",
	    dom());
	T_CHECK(strstr(msg, want) != NULL);
	key(34, sk, pk, NULL);
	gt_url(url, sizeof(url), dom(), pk, d);
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"%s\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"wss://elsewhere.example\"]]",
	    d, url);
	T_ASSERT((half = event_new_signed(sk, time(NULL) + 1, 30617, tags,
		      "")) != NULL);
	T_EQ_INT(nostr_publish_msg(ws, half, TMO, msg, sizeof(msg)), 0);
	snprintf(want, sizeof(want),
	    "this service is %s, missing from "
	    "'relays' (e.g. clone http://%s/",
	    dom(), dom());
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
	struct buf b = BUF_INIT;
	char	   run[512], ep[600];
	int	   s, tmo = TMO, rc;

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
	struct wsc   *ws = conn();
	struct event *ann1, *ann2, *st;
	char	      d1[32], d2[32], msg[256], dir[512], oid[41];
	char	      url[512], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d1, sizeof(d1));
	next_d(d2, sizeof(d2));
	ann1 = announcement(32, d1, 1, "");
	ann2 = announcement(32, d2, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann1, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(nostr_publish_msg(ws, ann2, TMO, msg, sizeof(msg)), 1);
	T_ASSERT(local_repo(dir, sizeof(dir), "survivor\n", oid) == 0);
	st = state(32, d1, "main", "refs/heads/main", oid, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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
	T_EQ_INT(nostr_publish_msg(ws, ann2, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
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
held_announcement_expires(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], path[512], *body = NULL;
	int	      status = 0, i;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	ann = announcement(33, d, 1, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
	/* A state whose commit exists nowhere: it will expire too. */
	st = state(33, d, "main", "refs/heads/main",
	    "0123456789abcdef0123456789abcdef01234567", NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	path_of(33, d, "/info/refs?service=git-upload-pack", path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 200);
	free(body);
	/* 30 minutes are EXPIRY_S seconds here. */
	for (i = 0; i < 45 && status != 404; i++) {
		sleep(1);
		body = NULL;
		T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
		free(body);
	}
	T_EQ_INT(status, 404);
	T_EQ_INT(served(ws, ann->id_hex), 0);
	/* Sent again, it is held again with a new repository. */
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 1);
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
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

/* The case above on a relayd of its own, whose held events expire in
 * EXPIRY_S rather than NGIT_TEST's 30 s. */
static void
test_held_announcement_expires_and_loses_its_repository(void)
{
	const char *env[] = { CONFIG_TEST_PURG_EXPIRY_ENV "=" EXPIRY_S, NULL };
	struct relayproc *shared = rp;

	T_ASSERT((rp = relayproc_start("relayd", env)) != NULL);
	held_announcement_expires();
	if (t_case_failed)
		relayproc_dump_log(rp, 30);
	relayproc_free(rp);
	rp = shared;
}

/*
 * Push command shapes (issue 21), sent as raw pkt-lines over HTTP: the
 * git CLI never sends most of them.  One repository serves them all:
 * main (HEAD), dev and tag v1 at one commit, a refs/nostr placeholder,
 * and a local commit x that the pushes may carry in a pack.
 */
#define ZERO "0000000000000000000000000000000000000000"

static struct {
	int    ready;
	char   d[32];
	char   dir[512];
	char   base[41];  /* main, dev, v1, the placeholder */
	char   x[41];	  /* a child of base, not on the relay */
	char   nostr[80]; /* refs/nostr/<id> at base */
	char   fresh[80]; /* refs/nostr/<id> not on the relay */
	char  *pack;	  /* a pack with x */
	size_t packlen;
	char  *empty; /* a pack with nothing */
	size_t emptylen;
} sh;

#define SH_KEY 40

/* Appends the command pkt-line "old new ref[\0caps]\n" to b. */
static void
pkt_cmd(struct buf *b, const char *old, const char *new, const char *ref,
    const char *caps)
{
	size_t len = 4 + strlen(old) + 1 + strlen(new) + 1 + strlen(ref) + 1;

	if (caps != NULL)
		len += 1 + strlen(caps);
	buf_printf(b, "%04zx%s %s %s", len, old, new, ref);
	if (caps != NULL) {
		buf_addc(b, '\0');
		buf_adds(b, caps);
	}
	buf_addc(b, '\n');
}

/* git pack-objects --revs of the revisions in revs ("" for none). */
static char *
make_pack(const char *revs, size_t *len)
{
	char  in[600], outp[600], cmd[2000], *p = NULL;
	FILE *f;
	long  n;

	snprintf(in, sizeof(in), "%s/packrevs", sh.dir);
	snprintf(outp, sizeof(outp), "%s/pack.out", sh.dir);
	if ((f = fopen(in, "w")) == NULL)
		return NULL;
	fputs(revs, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	    "git -C '%s' pack-objects --stdout --revs "
	    "-q < '%s' > '%s'",
	    sh.dir, in, outp);
	if (system(cmd) != 0 || (f = fopen(outp, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) != NULL &&
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	if (p != NULL)
		*len = (size_t)n;
	fclose(f);
	return p;
}

static int
shapes_setup(void)
{
	struct wsc   *ws;
	struct event *ann = NULL, *st = NULL;
	char	      msg[256], url[512], spec[200], revs[100], *out = NULL;
	uint8_t	      id[EVENT_ID_LEN];
	size_t	      i;
	int	      rc = -1;

	if (sh.ready)
		return 0;
	if ((ws = conn()) == NULL)
		return -1;
	next_d(sh.d, sizeof(sh.d));
	if (serve_repo(ws, SH_KEY, sh.d, "", sh.dir, sizeof(sh.dir), sh.base,
		&ann) == -1)
		goto done;
	sleep(1);
	st = state(SH_KEY, sh.d, "main", "refs/heads/main", sh.base,
	    "refs/heads/dev", sh.base, "refs/tags/v1", sh.base, NULL);
	if (nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)) != 1 ||
	    !wait_advertised(SH_KEY, sh.d, "refs/tags/v1", TMO) ||
	    !wait_advertised(SH_KEY, sh.d, "refs/heads/dev", TMO)) {
		printf("# shapes_setup: dev and v1 not aligned (%s)\n", msg);
		goto done;
	}
	for (i = 0; i < 32; i++)
		id[i] = (uint8_t)(0xa0 + i);
	memcpy(sh.nostr, "refs/nostr/", 11);
	hex_encode(id, EVENT_ID_LEN, sh.nostr + 11);
	id[0] = 0x5f;
	memcpy(sh.fresh, "refs/nostr/", 11);
	hex_encode(id, EVENT_ID_LEN, sh.fresh + 11);
	url_of(SH_KEY, sh.d, url, sizeof(url));
	snprintf(spec, sizeof(spec), "HEAD:%s", sh.nostr);
	if (push(sh.dir, url, spec, &out) != 0) {
		printf("# shapes_setup: placeholder push: %s\n", out);
		goto done;
	}
	if (gt_commit(sh.dir, "file.txt", "x\n", "x", sh.x) == -1)
		goto done;
	snprintf(revs, sizeof(revs), "%s\n^%s\n", sh.x, sh.base);
	if ((sh.pack = make_pack(revs, &sh.packlen)) == NULL ||
	    (sh.empty = make_pack("", &sh.emptylen)) == NULL) {
		printf("# shapes_setup: no pack\n");
		goto done;
	}
	sh.ready = 1;
	rc = 0;
done:
	free(out);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
	return rc;
}

/* POSTs body to the shapes repository's receive-pack; the response. */
static int
receive_pack(const struct buf *body, int *status, char **resp, size_t *resplen)
{
	char path[512];

	path_of(SH_KEY, sh.d, "/git-receive-pack", path, sizeof(path));
	return http_request(relayproc_host(rp), relayproc_port(rp), "POST",
	    path, "Content-Type: application/x-git-receive-pack-request\r\n",
	    body->b_data, body->b_len, TMO, status, NULL, resp, resplen);
}

/* What a shape sends after its commands. */
enum sh_tail {
	TAIL_NONE,    /* flush only */
	TAIL_PACK,    /* flush, a pack with x */
	TAIL_OPTIONS, /* flush, a push option, flush, a pack */
};

struct shape {
	const char  *name;
	const char  *caps;
	const char  *cmds[3][3]; /* old, new, ref; "B" base, "X" x,
					 * "N" the placeholder ref, "F" a
					 * fresh refs/nostr ref */
	enum sh_tail tail;
	const char  *reason; /* after "authorisation failed: " */
};

static const char *
sh_val(const char *v)
{
	if (strcmp(v, "Z") == 0)
		return ZERO;
	if (strcmp(v, "B") == 0)
		return sh.base;
	if (strcmp(v, "X") == 0)
		return sh.x;
	if (strcmp(v, "N") == 0)
		return sh.nostr;
	if (strcmp(v, "F") == 0)
		return sh.fresh;
	return v;
}

static const struct shape shapes[] = {
	{ "null_pair_on_head", "report-status",
	    { { "Z", "Z", "refs/heads/main" } }, TAIL_NONE,
	    "Ref validation failed: refs/heads/main: old and new are both "
	    "the null id" },
	{ "null_pair_on_branch", "report-status",
	    { { "Z", "Z", "refs/heads/dev" } }, TAIL_NONE, "both the null id" },
	{ "null_pair_on_tag", "report-status", { { "Z", "Z", "refs/tags/v1" } },
	    TAIL_NONE, "both the null id" },
	{ "null_pair_on_missing_ref", "report-status",
	    { { "Z", "Z", "refs/heads/none" } }, TAIL_NONE,
	    "both the null id" },
	{ "null_pair_without_capabilities", NULL,
	    { { "Z", "Z", "refs/heads/main" } }, TAIL_NONE,
	    "both the null id" },
	{ "null_pair_with_side_band", "report-status side-band-64k",
	    { { "Z", "Z", "refs/heads/main" } }, TAIL_NONE,
	    "both the null id" },
	{ "null_pair_after_a_creation_with_pack", "report-status",
	    { { "Z", "X", "refs/heads/new" }, { "Z", "Z", "refs/heads/dev" } },
	    TAIL_PACK, "refs/heads/dev: old and new are both the null id" },
	{ "null_pair_atomic_with_pack", "report-status atomic",
	    { { "Z", "X", "refs/heads/new" }, { "Z", "Z", "refs/heads/dev" } },
	    TAIL_PACK, "both the null id" },
	{ "null_pair_with_push_options", "report-status push-options",
	    { { "Z", "Z", "refs/heads/main" } }, TAIL_OPTIONS,
	    "both the null id" },
	{ "null_pair_beside_an_allowed_placeholder", "report-status",
	    { { "Z", "X", "F" }, { "Z", "Z", "refs/heads/main" } }, TAIL_PACK,
	    "both the null id" },
	{ "deletion_without_state", "report-status",
	    { { "B", "Z", "refs/heads/dev" } }, TAIL_NONE,
	    "No state events in purgatory" },
	{ "deletion_of_a_tag_without_state", "report-status delete-refs",
	    { { "B", "Z", "refs/tags/v1" } }, TAIL_NONE,
	    "No state events in purgatory" },
	{ "deletion_of_head", "report-status",
	    { { "B", "Z", "refs/heads/main" } }, TAIL_NONE,
	    "Ref validation failed: refs/heads/main is HEAD and cannot be "
	    "deleted" },
	{ "deletion_of_refs_nostr", "report-status", { { "B", "Z", "N" } },
	    TAIL_NONE, "cannot be deleted" },
	{ "old_not_current", "report-status",
	    { { "X", "B", "refs/heads/main" } }, TAIL_NONE,
	    "Ref validation failed: refs/heads/main is at " },
	{ "creation_over_an_existing_ref", "report-status",
	    { { "Z", "X", "refs/heads/main" } }, TAIL_PACK,
	    "the push expects nothing" },
	{ "update_of_a_missing_ref", "report-status",
	    { { "B", "X", "refs/heads/none" } }, TAIL_PACK,
	    "refs/heads/none does not exist" },
	{ "noop_with_a_stale_old", "report-status",
	    { { "X", "X", "refs/heads/main" } }, TAIL_NONE,
	    "the push expects" },
	{ "placeholder_over_an_existing_ref", "report-status",
	    { { "Z", "X", "N" } }, TAIL_PACK, "the push expects nothing" },
	{ "same_ref_twice", "report-status",
	    { { "B", "X", "refs/heads/main" },
		{ "X", "B", "refs/heads/main" } },
	    TAIL_PACK, "refs/heads/main is updated more than once" },
	{ "same_ref_twice_atomic", "report-status atomic",
	    { { "B", "B", "refs/heads/dev" }, { "B", "Z", "refs/heads/dev" } },
	    TAIL_NONE, "refs/heads/dev is updated more than once" },
	{ "head_itself", "report-status", { { "B", "X", "HEAD" } }, TAIL_PACK,
	    "HEAD is not a branch, a tag or refs/nostr/<event id>" },
	{ "refs_remotes", "report-status",
	    { { "Z", "B", "refs/remotes/origin/main" } }, TAIL_NONE,
	    "is not a branch, a tag or refs/nostr/<event id>" },
	{ "refs_notes", "report-status", { { "Z", "B", "refs/notes/commits" } },
	    TAIL_NONE, "is not a branch, a tag or refs/nostr/<event id>" },
	{ "symbolic_style_name", "report-status",
	    { { "Z", "B", "refs/heads/a..b" } }, TAIL_NONE,
	    "refs/heads/a..b is not a valid ref name" },
	{ "lock_suffix", "report-status", { { "Z", "B", "refs/heads/x.lock" } },
	    TAIL_NONE, "is not a valid ref name" },
	{ "refs_nostr_not_an_id", "report-status",
	    { { "Z", "B", "refs/nostr/xyz" } }, TAIL_NONE,
	    "Invalid event ID format in ref: refs/nostr/xyz" },
};

static const struct shape *cur_shape;

static void
send_shape(const struct shape *s, int *status, char **resp, size_t *len)
{
	struct buf b = BUF_INIT;
	size_t	   i;

	for (i = 0; i < 3 && s->cmds[i][0] != NULL; i++)
		pkt_cmd(&b, sh_val(s->cmds[i][0]), sh_val(s->cmds[i][1]),
		    sh_val(s->cmds[i][2]), i == 0 ? s->caps : NULL);
	buf_adds(&b, "0000");
	if (s->tail == TAIL_OPTIONS)
		buf_adds(&b, "000aopt=1\n0000");
	if (s->tail != TAIL_NONE)
		buf_add(&b, sh.pack, sh.packlen);
	*resp = NULL;
	if (receive_pack(&b, status, resp, len) == -1)
		*status = -1;
	buf_free(&b);
}

/* One refused shape: the ERR line with its reason; no ref moved. */
static void
test_push_shape_refused(void)
{
	const struct shape *s = cur_shape;
	char		   *before, *after, *resp = NULL, *err, *nl;
	size_t		    len = 0;
	int		    status = 0, found;

	T_ASSERT(shapes_setup() == 0);
	T_ASSERT((before = advertisement(SH_KEY, sh.d, NULL)) != NULL);
	send_shape(s, &status, &resp, &len);
	after = advertisement(SH_KEY, sh.d, NULL);
	T_CHECK(status == 200);
	/* The reason, on the ERR line. */
	found = resp != NULL &&
	    (err = memmem(resp, len,
		 "ERR authorisation "
		 "failed: ",
		 26)) != NULL &&
	    (nl = memchr(err, '\n', len - (size_t)(err - resp))) != NULL &&
	    memmem(err, (size_t)(nl - err), s->reason, strlen(s->reason)) !=
		NULL;
	T_CHECK(found);
	if (!found)
		printf("# %s: relayd said: %.*s\n", s->name, (int)len,
		    resp ? resp : "");
	T_CHECK(after != NULL && strcmp(before, after) == 0);
	if (after != NULL && strcmp(before, after) != 0)
		printf("# %s: refs before:\n# %s\n# after:\n# %s\n", s->name,
		    before, after);
	free(before);
	free(after);
	free(resp);
}

/*
 * Shapes the decision lets through reach git, which reports on them: a
 * no-op (old = new = current) with an empty pack, and a placeholder.
 */
static void
test_push_shapes_allowed_reach_git(void)
{
	struct buf b = BUF_INIT;
	char	  *resp = NULL, want[200];
	size_t	   len = 0;
	int	   status = 0;

	T_ASSERT(shapes_setup() == 0);
	pkt_cmd(&b, sh.base, sh.base, "refs/heads/main", "report-status");
	buf_adds(&b, "0000");
	buf_add(&b, sh.empty, sh.emptylen);
	T_ASSERT(receive_pack(&b, &status, &resp, &len) == 0);
	T_CHECK(status == 200 && resp != NULL &&
	    memmem(resp, len, "ok refs/heads/main", 18) != NULL &&
	    memmem(resp, len, "ERR", 3) == NULL);
	free(resp);
	resp = NULL;
	buf_reset(&b);
	pkt_cmd(&b, ZERO, sh.x, sh.fresh, "report-status");
	buf_adds(&b, "0000");
	buf_add(&b, sh.pack, sh.packlen);
	T_ASSERT(receive_pack(&b, &status, &resp, &len) == 0);
	snprintf(want, sizeof(want), "ok %s", sh.fresh);
	T_CHECK(status == 200 && resp != NULL &&
	    memmem(resp, len, want, strlen(want)) != NULL);
	snprintf(want, sizeof(want), "%s %s", sh.x, sh.fresh);
	T_CHECK(wait_advertised(SH_KEY, sh.d, want, TMO));
	free(resp);
	buf_free(&b);
}

/*
 * What the git CLI sends for deletions and force pushes: refused without
 * a state; with a held state that drops dev and force-moves main, both in
 * one push, git's walls come down and the push lands.
 */
static void
test_state_authorises_deletion_and_force_push(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *st;
	char	      d[32], msg[256], dir[512], base[41], y[41], url[512];
	char	      needle[120], *out = NULL, *adv;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, SH_KEY + 1, d, "", dir, sizeof(dir), base,
		     &ann) == 0);
	url_of(SH_KEY + 1, d, url, sizeof(url));
	sleep(1);
	st = state(SH_KEY + 1, d, "main", "refs/heads/main", base,
	    "refs/heads/dev", base, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	event_destroy(st);
	T_ASSERT(wait_advertised(SH_KEY + 1, d, "refs/heads/dev", TMO));
	/* Not a descendant of base: a rewrite. */
	T_ASSERT(gt_git(dir, NULL, "checkout", "-q", "--orphan", "other",
		     NULL) == 0);
	T_ASSERT(gt_commit(dir, "other.txt", "other\n", "other", y) == 0);
	T_CHECK(push_refused(dir, url, ":refs/heads/dev",
	    "authorisation failed: No state events"));
	snprintf(needle, sizeof(needle), "+%s:refs/heads/main", y);
	T_CHECK(push_refused(dir, url, needle, "authorisation failed"));
	sleep(1);
	st = state(SH_KEY + 1, d, "main", "refs/heads/main", y, NULL);
	T_EQ_INT(nostr_publish_msg(ws, st, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, MSG_HELD);
	T_EQ_INT(gt_git(dir, &out, "push", "--porcelain", url, needle,
		     ":refs/heads/dev", NULL),
	    0);
	if (out && strstr(out, "[rejected]"))
		printf("# git said: %s\n", out);
	free(out);
	T_EQ_INT(wait_served(ws, st->id_hex, TMO), 1);
	snprintf(needle, sizeof(needle), "%s refs/heads/main", y);
	T_CHECK(wait_advertised(SH_KEY + 1, d, needle, TMO));
	adv = advertisement(SH_KEY + 1, d, NULL);
	T_CHECK(adv != NULL && strstr(adv, "refs/heads/dev") == NULL);
	free(adv);
	event_destroy(ann);
	event_destroy(st);
	wsc_close(ws);
}

static void
run_shapes(const char *only)
{
	char   name[120];
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		snprintf(name, sizeof(name), "test_push_shape_%s",
		    shapes[i].name);
		if (only != NULL && strstr(name, only) == NULL)
			continue;
		cur_shape = &shapes[i];
		t_run(name, test_push_shape_refused);
	}
}

/*
 * GRASP-06 (issue 17 item 1): /prs/<npub>/<d>.git on a second relayd
 * started with NGIT_GRASP06_ENABLE=true (rp06); the shared relay runs
 * without it.  The helpers above talk to rp, so each case swaps it.
 */
static struct relayproc *rp06;
/* rp06's quotas, small enough for a test push to pass them. */
#define G06_PER_REF    100000
#define G06_PER_SIGNER 150000
static char kept_d[32]; /* signer 51's /prs/ repository */
/* rp06 as a TLS proxy in front of it names it (NGIT_PUBLIC_URL). */
#define G06_PUBLIC "https://git.example.test"

/* The /prs/ URL and path of signer n's d (path: rest appended). */
static void
prs_url(int n, const char *d, const char *rest, char *url, size_t ulen,
    char *path, size_t plen)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	npub[NIP19_KEY_BUFSZ];

	key(n, sk, pk, NULL);
	nip19_encode("npub", pk, npub, sizeof(npub));
	if (url != NULL)
		snprintf(url, ulen, "http://%s/prs/%s/%s.git", dom(), npub, d);
	if (path != NULL)
		snprintf(path, plen, "/prs/%s/%s.git%s", npub, d, rest);
}

/* The directory of signer n's /prs/ repository d on rp. */
static void
prs_dir(int n, const char *d, char *out, size_t len)
{
	uint8_t sk[SECKEY_LEN];
	char	hex[PUBKEY_HEX_LEN + 1];

	key(n, sk, NULL, hex);
	snprintf(out, len, "%s/git/prs/%s/%s.git", relayproc_dir(rp), hex, d);
}

static int
is_dir(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Waits up to ms for the directory p to be gone. */
static int
wait_gone(const char *p, int ms)
{
	int64_t end = wsc_now_ms() + ms;

	while (is_dir(p) && wsc_now_ms() < end)
		usleep(50000);
	return !is_dir(p);
}

static int
nip11_lists(const char *grasp)
{
	char *body = NULL, want[32];
	int   status = 0, has;

	if (get("/", "Accept: application/nostr+json\r\n", &status, NULL,
		&body) == -1 ||
	    status != 200) {
		free(body);
		return -1;
	}
	snprintf(want, sizeof(want), "\"%s\"", grasp);
	has = strstr(body, want) != NULL;
	free(body);
	return has;
}

static void
test_grasp06_off_by_default(void)
{
	char path[600], *body = NULL;
	int  status = 0;

	T_EQ_INT(nip11_lists("GRASP-06"), 0);
	T_EQ_INT(nip11_lists("GRASP-01"), 1);
	prs_url(50, "x", "/info/refs?service=git-upload-pack", NULL, 0, path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	free(body);
}

static void
test_grasp06_nip11_and_empty_repository(void)
{
	char   url[600], path[600], dir[512], clone[512], *body = NULL;
	char  *out = NULL;
	int    status = 0;
	size_t i;
	static const char *const bad[] = {
		"/prs/npub1nothing/x.git/info/refs?service=git-upload-pack",
		"/prs/x.git/info/refs?service=git-upload-pack",
		"/prs/",
	};

	T_EQ_INT(nip11_lists("GRASP-06"), 1);
	/* Any well-formed path clones as an empty repository. */
	prs_url(50, "never-pushed", "", url, sizeof(url), NULL, 0);
	workdir(clone, sizeof(clone));
	T_EQ_INT(gt_git(NULL, &out, "clone", "-q", url, clone, NULL), 0);
	free(out);
	out = NULL;
	T_EQ_INT(gt_git(clone, &out, "ls-remote", url, NULL), 0);
	T_CHECK(out != NULL && out[0] == '\0');
	free(out);
	/* A probe creates nothing. */
	prs_dir(50, "never-pushed", dir, sizeof(dir));
	T_CHECK(!is_dir(dir));
	/* Malformed: 404, also the repository page. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_ASSERT(get(bad[i], NULL, &status, NULL, &body) == 0);
		T_EQ_INT(status, 404);
		free(body);
		body = NULL;
	}
	prs_url(50, "never-pushed", "", NULL, 0, path, sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	free(body);
	body = NULL;
	prs_url(50, "..", "/info/refs?service=git-upload-pack", NULL, 0, path,
	    sizeof(path));
	T_ASSERT(get(path, NULL, &status, NULL, &body) == 0);
	T_EQ_INT(status, 404);
	free(body);
}

static void
test_grasp06_only_refs_nostr_accepted(void)
{
	char	d[32], dir[512], pdir[512], oid[41], url[600], ref[120];
	char	id[EVENT_ID_HEX_LEN + 1], *out = NULL, *adv = NULL;
	uint8_t raw[EVENT_ID_LEN];
	size_t	i;

	next_d(d, sizeof(d));
	snprintf(kept_d, sizeof(kept_d), "%s", d);
	T_ASSERT(local_repo(dir, sizeof(dir), "contribution\n", oid) == 0);
	prs_url(51, d, "", url, sizeof(url), NULL, 0);
	prs_dir(51, d, pdir, sizeof(pdir));
	T_CHECK(push_refused(dir, url, "HEAD:refs/heads/main",
	    "authorisation failed: Ref validation failed: refs/heads/main: "
	    "only refs/nostr/<event id> is accepted under /prs/"));
	T_CHECK(push_refused(dir, url, "HEAD:refs/tags/v1", NULL));
	T_CHECK(!is_dir(pdir));
	for (i = 0; i < EVENT_ID_LEN; i++)
		raw[i] = (uint8_t)(0x60 + i);
	hex_encode(raw, EVENT_ID_LEN, id);
	snprintf(ref, sizeof(ref), "HEAD:refs/nostr/%s", id);
	T_EQ_INT(push(dir, url, ref, &out), 0);
	free(out);
	out = NULL;
	T_CHECK(is_dir(pdir));
	T_EQ_INT(gt_git(dir, &adv, "ls-remote", url, NULL), 0);
	T_CHECK(adv && strstr(adv, id) && strstr(adv, oid));
	free(adv);
	/* A refs/nostr ref is never deleted by a push. */
	snprintf(ref, sizeof(ref), ":refs/nostr/%s", id);
	T_CHECK(push_refused(dir, url, ref, "cannot be deleted"));
}

static void
test_grasp06_known_pr_must_be_the_paths(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *pr;
	char	      d[32], msg[256], dir[512], oid[41], c[41], url[600];
	char	      ref[120], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 52, d, "", dir, sizeof(dir), oid, &ann) == 0);
	T_ASSERT(gt_commit(dir, "file.txt", "pr\n", "pr", c) == 0);
	pr = pr_event(53, 52, d, c);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(ref, sizeof(ref), "%s:refs/nostr/%s", c, pr->id_hex);
	/* Another signer's path, or another identifier. */
	prs_url(54, d, "", url, sizeof(url), NULL, 0);
	T_CHECK(push_refused(dir, url, ref,
	    "is not by this path's signer "
	    "for this identifier"));
	prs_url(53, "elsewhere", "", url, sizeof(url), NULL, 0);
	T_CHECK(push_refused(dir, url, ref, "is not by this path's signer"));
	/* The signer's path: the tip must be the event's. */
	prs_url(53, d, "", url, sizeof(url), NULL, 0);
	snprintf(ref, sizeof(ref), "%s:refs/nostr/%s", oid, pr->id_hex);
	T_CHECK(push_refused(dir, url, ref, "authorisation failed: PR event"));
	snprintf(ref, sizeof(ref), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, url, ref, &out), 0);
	free(out);
	event_destroy(ann);
	event_destroy(pr);
	wsc_close(ws);
}

static void
test_grasp06_repository_without_refs_removed(void)
{
	struct buf b = BUF_INIT;
	char	   d[32], pdir[512], path[600], *resp = NULL;
	char	   ref[80], junk[600];
	size_t	   len = 0;
	int	   status = 0;
	FILE	  *f;

	/* A push git refuses (its object is missing) leaves no ref: the
	 * repository it created goes at once. */
	next_d(d, sizeof(d));
	prs_dir(55, d, pdir, sizeof(pdir));
	prs_url(55, d, "/git-receive-pack", NULL, 0, path, sizeof(path));
	snprintf(ref, sizeof(ref), "refs/nostr/%064d", 7);
	pkt_cmd(&b, ZERO, "1234567890123456789012345678901234567890", ref,
	    "report-status");
	buf_adds(&b, "0000");
	/* An empty pack: PACK, version 2, no objects, its SHA-1. */
	buf_add(&b,
	    "PACK\0\0\0\2\0\0\0\0\x02\x9d\x08\x82\x3b\xd8\xa8\xea"
	    "\xb5\x10\xad\x6a\xc7\x5c\x82\x3c\xfd\x3e\xd3\x1e",
	    32);
	T_ASSERT(
	    http_request(relayproc_host(rp), relayproc_port(rp), "POST", path,
		"Content-Type: application/x-git-receive-pack-request\r\n",
		b.b_data, b.b_len, TMO, &status, NULL, &resp, &len) == 0);
	T_EQ_INT(status, 200);
	T_CHECK(resp != NULL && memmem(resp, len, "ng ", 3) != NULL);
	free(resp);
	buf_free(&b);
	T_CHECK(wait_gone(pdir, TMO));

	/* Left behind by a crash: removed by the scan at start, while a
	 * repository with a ref stays. */
	next_d(d, sizeof(d));
	prs_dir(55, d, pdir, sizeof(pdir));
	T_ASSERT(mkdir(pdir, 0755) == 0 || errno == ENOENT);
	if (!is_dir(pdir)) {
		snprintf(junk, sizeof(junk), "%s", pdir);
		*strrchr(junk, '/') = '\0';
		T_ASSERT(mkdir(junk, 0755) == 0 && mkdir(pdir, 0755) == 0);
	}
	snprintf(junk, sizeof(junk), "%s/HEAD", pdir);
	T_ASSERT((f = fopen(junk, "w")) != NULL);
	fputs("ref: refs/heads/main\n", f);
	fclose(f);
	snprintf(junk, sizeof(junk), "%s/refs", pdir);
	T_ASSERT(mkdir(junk, 0755) == 0);
	T_ASSERT(relayproc_restart(rp) == 0);
	T_CHECK(!is_dir(pdir));
	prs_dir(51, kept_d, junk, sizeof(junk));
	T_CHECK(kept_d[0] != '\0' && is_dir(junk));
	T_CHECK(nip11_lists("GRASP-06") == 1);
}

/* refs/nostr/<64 hex of seed> into ref (a refspec: src:ref). */
static void
nostr_spec(const char *src, int seed, char *out, size_t len)
{
	uint8_t raw[EVENT_ID_LEN];
	char	hex[EVENT_ID_HEX_LEN + 1];
	size_t	i;

	for (i = 0; i < EVENT_ID_LEN; i++)
		raw[i] = (uint8_t)(seed + i);
	hex_encode(raw, EVENT_ID_LEN, hex);
	snprintf(out, len, "%s:refs/nostr/%s", src, hex);
}

static void
test_grasp06_quota_per_ref_stops_the_pack(void)
{
	char d[32], dir[512], pdir[512], oid[41], url[600], spec[120];
	char kept[512], kurl[600], *out = NULL;

	/* Another repository of the same signer, first. */
	next_d(d, sizeof(d));
	T_ASSERT(local_repo(dir, sizeof(dir), "small\n", oid) == 0);
	prs_url(56, d, "", kurl, sizeof(kurl), NULL, 0);
	prs_dir(56, d, kept, sizeof(kept));
	nostr_spec("HEAD", 0x40, spec, sizeof(spec));
	T_EQ_INT(push(dir, kurl, spec, &out), 0);
	free(out);
	out = NULL;
	next_d(d, sizeof(d));
	T_ASSERT(gt_commit_random(dir, "big.bin", 3 * G06_PER_REF, oid) == 0);
	prs_url(56, d, "", url, sizeof(url), NULL, 0);
	prs_dir(56, d, pdir, sizeof(pdir));
	nostr_spec("HEAD", 0x10, spec, sizeof(spec));
	T_CHECK(push_refused(dir, url, spec,
	    "quota exceeded: the push is "
	    "larger than 100000 bytes (100000 per ref)"));
	/* Nothing kept of it; the others unharmed. */
	T_CHECK(wait_gone(pdir, TMO));
	T_CHECK(is_dir(kept) && gt_no_quarantine(kept));
	T_EQ_INT(gt_git(dir, &out, "ls-remote", kurl, NULL), 0);
	T_CHECK(out != NULL && strstr(out, "refs/nostr/") != NULL);
	free(out);
	T_EQ_INT(nip11_lists("GRASP-06"), 1);
}

static void
test_grasp06_quota_per_signer(void)
{
	char	d[32], d2[32], dir[512], pdir[512], oid[41], url[600];
	char	spec[120], kept[512], *out = NULL;
	int64_t end;

	next_d(d, sizeof(d));
	T_ASSERT(local_repo(dir, sizeof(dir), "first\n", oid) == 0);
	T_ASSERT(gt_commit_random(dir, "a.bin", G06_PER_SIGNER / 2, oid) == 0);
	prs_url(57, d, "", url, sizeof(url), NULL, 0);
	prs_dir(57, d, pdir, sizeof(pdir));
	nostr_spec("HEAD", 0x20, spec, sizeof(spec));
	T_EQ_INT(push(dir, url, spec, &out), 0);
	free(out);
	out = NULL;
	/* The second half, to another repository of the same signer. */
	T_ASSERT(gt_commit_random(dir, "b.bin", G06_PER_SIGNER / 2 + 1000,
		     oid) == 0);
	next_d(d2, sizeof(d2));
	prs_url(57, d2, "", url, sizeof(url), NULL, 0);
	nostr_spec("HEAD", 0x30, spec, sizeof(spec));
	/* Git-first (no PR event claims them): the pushing address's
	 * budget, or the per-ref quota this pack (both blobs) also passes,
	 * whichever the stream reaches first. */
	T_CHECK(push_refused(dir, url, spec, "quota exceeded: "));
	prs_dir(57, d2, kept, sizeof(kept));
	T_CHECK(wait_gone(kept, TMO));
	/* Stopped in the first repository: it stays as it was, without
	 * the quarantine git had begun. */
	prs_url(57, d, "", url, sizeof(url), NULL, 0);
	nostr_spec("HEAD", 0x50, spec, sizeof(spec));
	T_CHECK(push_refused(dir, url, spec, "quota exceeded"));
	for (end = wsc_now_ms() + TMO;
	     !gt_no_quarantine(pdir) && wsc_now_ms() < end;)
		usleep(50000);
	T_CHECK(is_dir(pdir) && gt_no_quarantine(pdir));
	T_EQ_INT(gt_git(dir, &out, "ls-remote", url, NULL), 0);
	T_CHECK(out != NULL && strstr(out, "refs/nostr/") != NULL &&
	    strchr(out, '\n') == strrchr(out, '\n'));
	free(out);
	out = NULL;
	/* Another signer's path does not reset the address's budget. */
	T_ASSERT(local_repo(dir, sizeof(dir), "second\n", oid) == 0);
	T_ASSERT(gt_commit_random(dir, "c.bin", G06_PER_SIGNER / 2, oid) == 0);
	prs_url(58, d2, "", url, sizeof(url), NULL, 0);
	T_CHECK(push_refused(dir, url, spec, "from your address"));
}

static void
test_grasp06_push_releases_and_mirrors(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *pr, *pr2, *pr3;
	char	      d[32], msg[256], dir[512], oid[41], c[41], c2[41];
	char	      w[41], purl[600], spec[200], needle[200], pdir[512];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 60, d, "", dir, sizeof(dir), oid, &ann) == 0);
	prs_url(61, d, "", purl, sizeof(purl), NULL, 0);
	prs_dir(61, d, pdir, sizeof(pdir));

	/* Event first: held until the /prs/ push, then released, and the
	 * ref is mirrored into the announced repository. */
	T_ASSERT(gt_commit(dir, "file.txt", "one\n", "one", c) == 0);
	pr = pr_cloned(61, 60, d, c, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(wait_served(ws, pr->id_hex, TMO), 1);
	snprintf(needle, sizeof(needle), "%s refs/nostr/%s", c, pr->id_hex);
	T_CHECK(wait_advertised(60, d, needle, TMO));

	/* Git first: the event finds its ref at /prs/ and is released. */
	T_ASSERT(gt_commit(dir, "file.txt", "two\n", "two", c2) == 0);
	pr2 = pr_cloned(61, 60, d, c2, purl);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c2, pr2->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(nostr_publish_msg(ws, pr2, TMO, msg, sizeof(msg)), 1);
	/* The OK says the push is here and the event released, not that
	 * it waits for a push (issue 38, item 8). */
	if (strstr(msg, "is already here, so it is released") == NULL)
		printf("# %s\n", msg);
	T_CHECK(strstr(msg, "waiting for git push") == NULL &&
	    strstr(msg, "is already here, so it is released") != NULL);
	T_EQ_INT(wait_served(ws, pr2->id_hex, TMO), 1);
	snprintf(needle, sizeof(needle), "%s refs/nostr/%s", c2, pr2->id_hex);
	T_CHECK(wait_advertised(60, d, needle, TMO));

	/* A PR update (kind 1619) to the first, event first. */
	T_ASSERT(gt_commit(dir, "file.txt", "update\n", "update", c2) == 0);
	{
		uint8_t	      sk[SECKEY_LEN];
		char	      hex[PUBKEY_HEX_LEN + 1], tags[1600];
		struct event *up;

		key(60, sk, NULL, hex);
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"30617:%s:%s\"],"
		    "[\"E\",\"%s\"],[\"P\",\"%s\"],[\"c\",\"%s\"],"
		    "[\"clone\",\"%s\"]]",
		    hex, d, pr->id_hex, hex, c2, purl);
		up = signed_by(61, time(NULL), 1619, tags, "");
		T_EQ_INT(nostr_publish_msg(ws, up, TMO, msg, sizeof(msg)), 1);
		T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
		snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c2,
		    up->id_hex);
		T_EQ_INT(push(dir, purl, spec, &out), 0);
		free(out);
		out = NULL;
		T_EQ_INT(wait_served(ws, up->id_hex, TMO), 1);
		snprintf(needle, sizeof(needle), "%s refs/nostr/%s", c2,
		    up->id_hex);
		T_CHECK(wait_advertised(60, d, needle, TMO));
		event_destroy(up);
	}

	/* Git first with another commit: the event deletes the /prs/ ref
	 * and stays held. */
	T_ASSERT(gt_commit(dir, "file.txt", "three\n", "three", w) == 0);
	T_ASSERT(gt_git(dir, NULL, "commit", "-q", "--amend", "-m", "3b",
		     NULL) == 0);
	T_ASSERT(gt_rev(dir, "HEAD", c) == 0);
	pr3 = pr_cloned(61, 60, d, c, purl);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", w, pr3->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(nostr_publish_msg(ws, pr3, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	snprintf(needle, sizeof(needle), "refs/nostr/%s", pr3->id_hex);
	T_EQ_INT(gt_git(dir, &out, "ls-remote", purl, NULL), 0);
	T_CHECK(out != NULL && strstr(out, needle) == NULL &&
	    strstr(out, pr->id_hex) != NULL);
	free(out);
	out = NULL;
	T_EQ_INT(served(ws, pr3->id_hex), 0);
	event_destroy(ann);
	event_destroy(pr);
	event_destroy(pr2);
	event_destroy(pr3);
	wsc_close(ws);
}

/*
 * Behind a TLS proxy a PR's clone tag names the public URL's /prs/ path:
 * the push (to relayd's own address) releases it as the domain's would.
 */
static void
test_grasp06_clone_tag_by_public_url(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *pr;
	char	      d[32], msg[1024], dir[512], oid[41], c[41];
	char	      purl[600], pub_url[700], spec[200], path[600];
	char	     *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 66, d, "", dir, sizeof(dir), oid, &ann) == 0);
	prs_url(67, d, "", purl, sizeof(purl), path, sizeof(path));
	snprintf(pub_url, sizeof(pub_url), "%s%s", G06_PUBLIC, path);
	T_ASSERT(gt_commit(dir, "file.txt", "public\n", "public", c) == 0);
	pr = pr_cloned(67, 66, d, c, pub_url);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, pr->id_hex, TMO), 1);
	/* A refusal's examples are the public URLs too. */
	event_destroy(ann);
	next_d(d, sizeof(d));
	ann = announcement(66, d, 0, "");
	T_EQ_INT(nostr_publish_msg(ws, ann, TMO, msg, sizeof(msg)), 0);
	T_CHECK(strstr(msg, "(e.g. clone " G06_PUBLIC "/") != NULL &&
	    strstr(msg, "relays wss://git.example.test)") != NULL);
	event_destroy(ann);
	event_destroy(pr);
	wsc_close(ws);
}

static void
test_grasp06_mirror_needs_the_clone_tag_and_one_way(void)
{
	struct wsc   *ws = conn();
	struct event *ann, *pr, *pr2;
	char	      d[32], msg[256], dir[512], oid[41], c[41], c2[41];
	char	      purl[600], url[600], spec[200], needle[200], pdir[512];
	char	     *out = NULL, *adv;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	T_ASSERT(serve_repo(ws, 62, d, "", dir, sizeof(dir), oid, &ann) == 0);
	prs_url(63, d, "", purl, sizeof(purl), NULL, 0);
	prs_dir(63, d, pdir, sizeof(pdir));
	/* A PR cloned from the owner's repository, pushed to /prs/: kept
	 * there, not mirrored, not released. */
	T_ASSERT(gt_commit(dir, "file.txt", "std\n", "std", c) == 0);
	url_of(62, d, url, sizeof(url));
	pr = pr_cloned(63, 62, d, c, url);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	usleep(500000);
	T_EQ_INT(served(ws, pr->id_hex), 0);
	adv = advertisement(62, d, NULL);
	T_CHECK(adv != NULL && strstr(adv, pr->id_hex) == NULL);
	free(adv);
	/* A PR naming /prs/ pushed to the owner's repository: released
	 * there, nothing written under /prs/. */
	T_ASSERT(gt_commit(dir, "file.txt", "std2\n", "std2", c2) == 0);
	prs_dir(63, "other", pdir, sizeof(pdir));
	prs_url(63, "other", "", purl, sizeof(purl), NULL, 0);
	pr2 = pr_cloned(63, 62, d, c2, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr2, TMO, msg, sizeof(msg)), 1);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c2, pr2->id_hex);
	T_EQ_INT(push(dir, url, spec, &out), 0);
	free(out);
	T_EQ_INT(wait_served(ws, pr2->id_hex, TMO), 1);
	snprintf(needle, sizeof(needle), "%s refs/nostr/%s", c2, pr2->id_hex);
	T_CHECK(wait_advertised(62, d, needle, TMO));
	T_CHECK(!is_dir(pdir));
	event_destroy(ann);
	event_destroy(pr);
	event_destroy(pr2);
	wsc_close(ws);
}

/*
 * GRASP-06's relaxation (issue 38 item 3), as grasp-audit's
 * grasp06/event_acceptance.rs and prs_endpoint.rs build their PRs: a
 * fresh owner key that announced nothing here, a tip named by a 64-hex
 * id, and a clone tag naming the signer's /prs/ path on this service.
 */
#define pr_unannounced pr_cloned

/* A 64-hex id (key n's), as grasp-audit makes its synthetic tips. */
static void
hex64(int n, char out[65])
{
	uint8_t sk[SECKEY_LEN];

	key(n, sk, NULL, out);
}

static void
test_grasp06_pr_accepted_when_clone_tag_names_prs_endpoint(void)
{
	struct wsc   *ws = conn();
	struct event *pr;
	char	      d[32], msg[512], c[65], purl[600], other[800], path[600];
	char	      want[300];

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	hex64(72, c);
	/* Owner 70 announced nothing here: the /prs/ clone tag suffices. */
	prs_url(71, d, "", purl, sizeof(purl), path, sizeof(path));
	pr = pr_unannounced(71, 70, d, c, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(want, sizeof(want),
	    "purgatory: PR event stored, waiting for git push with commit %s",
	    c);
	T_EQ_STR(msg, want);
	event_destroy(pr);
	/* The public URL's host names this service too. */
	next_d(d, sizeof(d));
	prs_url(71, d, "", NULL, 0, path, sizeof(path));
	snprintf(other, sizeof(other), "%s%s", G06_PUBLIC, path);
	pr = pr_unannounced(71, 70, d, c, other);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	event_destroy(pr);
	/* Not relaxed: another host, another signer's path, another
	 * identifier than the 'a' tag's, or a path with more after it. */
	next_d(d, sizeof(d));
	prs_url(71, d, "", NULL, 0, path, sizeof(path));
	snprintf(other, sizeof(other), "https://other-relay.example.invalid%s",
	    path);
	pr = pr_unannounced(71, 70, d, c, other);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 0);
	T_EQ_STR(msg,
	    "blocked: PR event must reference an accepted repository or "
	    "accepted event");
	event_destroy(pr);
	prs_url(73, d, "", other, sizeof(other), NULL, 0);
	pr = pr_unannounced(71, 70, d, c, other);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 0);
	event_destroy(pr);
	prs_url(71, "elsewhere", "", other, sizeof(other), NULL, 0);
	pr = pr_unannounced(71, 70, d, c, other);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 0);
	event_destroy(pr);
	snprintf(other, sizeof(other), "%s/info/refs", purl);
	pr = pr_unannounced(71, 70, d, c, other);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 0);
	event_destroy(pr);
	wsc_close(ws);
}

static void
test_grasp06_pr_accepted_via_relaxation_is_held_in_purgatory(void)
{
	struct wsc   *ws = conn();
	struct event *pr, *pr2;
	char	      d[32], msg[512], c64[65], purl[600], dir[512], c[41];
	char	      c2[41], spec[200], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	hex64(76, c64);
	prs_url(75, d, "", purl, sizeof(purl), NULL, 0);
	pr = pr_unannounced(75, 74, d, c64, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	usleep(300000);
	T_EQ_INT(served(ws, pr->id_hex), 0);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "duplicate: in purgatory");
	event_destroy(pr);

	/* Event first, then its push to /prs/: served. */
	T_ASSERT(local_repo(dir, sizeof(dir), "relaxed\n", c) == 0);
	pr = pr_unannounced(75, 74, d, c, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	usleep(300000);
	T_EQ_INT(served(ws, pr->id_hex), 0);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c, pr->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(wait_served(ws, pr->id_hex, TMO), 1);

	/* Git first: the event finds its commit there and is stored. */
	T_ASSERT(gt_commit(dir, "file.txt", "second\n", "second", c2) == 0);
	pr2 = pr_unannounced(75, 74, d, c2, purl);
	snprintf(spec, sizeof(spec), "%s:refs/nostr/%s", c2, pr2->id_hex);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	T_EQ_INT(nostr_publish_msg(ws, pr2, TMO, msg, sizeof(msg)), 1);
	T_EQ_STR(msg, "");
	T_EQ_INT(served(ws, pr2->id_hex), 1);
	event_destroy(pr);
	event_destroy(pr2);
	wsc_close(ws);
}

/* 1 if ls-remote of url succeeds and lists nothing under ref. */
static int
ref_absent(const char *dir, const char *url, const char *ref)
{
	char *out = NULL;
	int   ok;

	ok = gt_git(dir, &out, "ls-remote", url, ref, NULL) == 0 &&
	    out != NULL && out[0] == '\0';
	if (!ok)
		printf("# ls-remote %s %s: %s\n", url, ref,
		    out ? out : "(failed)");
	free(out);
	return ok;
}

static void
test_grasp06_commit_mismatch_deletes_ref_and_blocks_promotion(void)
{
	struct wsc   *ws = conn();
	struct event *pr;
	char	      d[32], msg[512], b[65], purl[600], dir[512], a[41];
	char	      w[41], spec[200], ref[100], *out = NULL;

	T_ASSERT(ws != NULL);
	next_d(d, sizeof(d));
	prs_url(78, d, "", purl, sizeof(purl), NULL, 0);
	T_ASSERT(local_repo(dir, sizeof(dir), "commit A\n", a) == 0);
	/* grasp-audit's case: the event names B, A is pushed. */
	hex64(79, b);
	pr = pr_unannounced(78, 77, d, b, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(ref, sizeof(ref), "refs/nostr/%s", pr->id_hex);
	snprintf(spec, sizeof(spec), "%s:%s", a, ref);
	(void)push(dir, purl, spec, &out);
	free(out);
	out = NULL;
	usleep(500000);
	T_CHECK(ref_absent(dir, purl, ref));
	T_EQ_INT(served(ws, pr->id_hex), 0);
	event_destroy(pr);

	/* A SHA-1 tip git could have: refused as well. */
	T_ASSERT(gt_commit(dir, "file.txt", "B\n", "B", w) == 0);
	T_ASSERT(
	    gt_git(dir, NULL, "reset", "-q", "--hard", "HEAD~1", NULL) == 0);
	pr = pr_unannounced(78, 77, d, w, purl);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	snprintf(ref, sizeof(ref), "refs/nostr/%s", pr->id_hex);
	snprintf(spec, sizeof(spec), "%s:%s", a, ref);
	T_CHECK(push_refused(dir, purl, spec, "has tip commit"));
	usleep(300000);
	T_CHECK(ref_absent(dir, purl, ref));
	T_EQ_INT(served(ws, pr->id_hex), 0);
	event_destroy(pr);

	/* Git first with A, then the event naming B: the ref goes, and
	 * the event stays held. */
	{
		char	tags[1400], hex[PUBKEY_HEX_LEN + 1];
		uint8_t sk[SECKEY_LEN];

		/* Tags of its own: not the first event's id again. */
		key(77, sk, NULL, hex);
		snprintf(tags, sizeof(tags),
		    "[[\"a\",\"30617:%s:%s\"],[\"c\",\"%s\"],"
		    "[\"clone\",\"%s\"],[\"subject\",\"git first\"]]",
		    hex, d, b, purl);
		pr = signed_by(78, time(NULL), 1618, tags, "");
	}
	snprintf(ref, sizeof(ref), "refs/nostr/%s", pr->id_hex);
	snprintf(spec, sizeof(spec), "%s:%s", a, ref);
	T_EQ_INT(push(dir, purl, spec, &out), 0);
	free(out);
	out = NULL;
	T_EQ_INT(gt_git(dir, &out, "ls-remote", purl, ref, NULL), 0);
	T_CHECK(out != NULL && strstr(out, a) != NULL);
	free(out);
	T_EQ_INT(nostr_publish_msg(ws, pr, TMO, msg, sizeof(msg)), 1);
	T_CHECK(strncmp(msg, "purgatory: PR event stored", 26) == 0);
	usleep(500000);
	T_CHECK(ref_absent(dir, purl, ref));
	T_EQ_INT(served(ws, pr->id_hex), 0);
	event_destroy(pr);
	wsc_close(ws);
}

/* Runs fn against rp06. */
static void
on_grasp06(const char *name, void (*fn)(void), const char *only)
{
	struct relayproc *shared = rp;

	if (only != NULL && strstr(name, only) == NULL)
		return;
	rp = rp06;
	t_run(name, fn);
	rp = shared;
}

static void
run_grasp06(const char *only)
{
	static const char *const env[] = { "NGIT_GRASP06_ENABLE=true",
		"NGIT_GRASP06_MAX_BYTES_PER_REF=100000",
		"NGIT_GRASP06_MAX_BYTES_PER_SIGNER=150000",
		"NGIT_GRASP06_UNCLAIMED_BYTES_PER_IP=150000",
		"NGIT_PUBLIC_URL=" G06_PUBLIC, NULL };

	if (only == NULL || strstr("test_grasp06_off_by_default", only))
		T_RUN(test_grasp06_off_by_default);
	if (only != NULL && strstr(only, "grasp06") == NULL)
		return;
	if ((rp06 = relayproc_start("relayd", env)) == NULL) {
		printf("not ok - test_grasp06: relayd did not start\n");
		t_fail++;
		return;
	}
	on_grasp06("test_grasp06_nip11_and_empty_repository",
	    test_grasp06_nip11_and_empty_repository, only);
	on_grasp06("test_grasp06_only_refs_nostr_accepted",
	    test_grasp06_only_refs_nostr_accepted, only);
	on_grasp06("test_grasp06_known_pr_must_be_the_paths",
	    test_grasp06_known_pr_must_be_the_paths, only);
	on_grasp06("test_grasp06_pr_accepted_when_clone_tag_names_prs_endpoint",
	    test_grasp06_pr_accepted_when_clone_tag_names_prs_endpoint, only);
	on_grasp06(
	    "test_grasp06_pr_accepted_via_relaxation_is_held_in_purgatory",
	    test_grasp06_pr_accepted_via_relaxation_is_held_in_purgatory, only);
	on_grasp06(
	    "test_grasp06_commit_mismatch_deletes_ref_and_blocks_promotion",
	    test_grasp06_commit_mismatch_deletes_ref_and_blocks_promotion,
	    only);
	on_grasp06("test_grasp06_push_releases_and_mirrors",
	    test_grasp06_push_releases_and_mirrors, only);
	on_grasp06("test_grasp06_clone_tag_by_public_url",
	    test_grasp06_clone_tag_by_public_url, only);
	on_grasp06("test_grasp06_mirror_needs_the_clone_tag_and_one_way",
	    test_grasp06_mirror_needs_the_clone_tag_and_one_way, only);
	on_grasp06("test_grasp06_quota_per_ref_stops_the_pack",
	    test_grasp06_quota_per_ref_stops_the_pack, only);
	on_grasp06("test_grasp06_quota_per_signer",
	    test_grasp06_quota_per_signer, only);
	on_grasp06("test_grasp06_repository_without_refs_removed",
	    test_grasp06_repository_without_refs_removed, only);
	if (t_fail)
		relayproc_dump_log(rp06, 30);
	relayproc_free(rp06);
	rp06 = NULL;
}

#define RUN(fn) \
	do { \
		if (only == NULL || strstr(#fn, only) != NULL) \
			T_RUN(fn); \
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
	const char *only = getenv("GIT_TEST_ONLY");
	char	    home[300];
	int	    rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned)getpid());
	snprintf(tmp, sizeof(tmp), "%s/graspd-git-test.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmp) == NULL) {
		printf("not ok - git_test: no temporary directory\n");
		return 1;
	}
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1 ||
	    gt_git(NULL, NULL, "--version", NULL) != 0) {
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
	RUN(test_empty_repository_head_as_git_init);
	RUN(test_state_with_bad_values_held);
	RUN(test_push_rejected_without_state);
	RUN(test_push_of_wrong_commit_rejected);
	RUN(test_maintainer_and_recursive_maintainer_states_authorise);
	RUN(test_non_maintainer_state_ignored_push_rejected);
	RUN(test_deletion_by_id_removes_held_state);
	RUN(test_deletion_by_coordinate_removes_maintainers_held_state);
	RUN(test_pr_held_until_its_commit_is_pushed);
	RUN(test_refs_nostr_rules);
	run_shapes(only);
	RUN(test_push_shapes_allowed_reach_git);
	RUN(test_state_authorises_deletion_and_force_push);
	run_grasp06(only);
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
	tdir_remove(tmp);
	return rc;
}
