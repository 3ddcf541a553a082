/*
 * web_test.c: relayd's pages for people (relay_web.c) and the public URL
 * setting, as a browser and the git CLI see them: a relayd behind a
 * pretend TLS proxy (NGIT_PUBLIC_URL=https://git.web.example, never
 * contacted) takes announcements that list only the public URL, lists the
 * repositories pushed to it on /, shows a repository's clone URLs, refs,
 * commits, README and threads at /<npub>/<d>.git, escapes every text a
 * peer supplied, and serves its icon.  HEAD gets every page's headers and
 * no body on a connection kept alive, and a kind 0 name or a reaction
 * cut at its limit keeps its UTF-8 characters whole.  Last, headless
 * Chromium (Debian's chromium) loads / and a repository page: their DOM
 * must list the repositories, show the public clone URL and hold no
 * script element, and its screenshots are saved in the test's directory
 * (and copied to
 * $GRASPD_SCREENSHOT_DIR when set, for the README).  Without chromium the
 * browser case fails with the reason.
 */
#define _GNU_SOURCE /* memmem */
#include <sys/wait.h>

#include <ctype.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "wsclient.h"

#define TMO		 10000
#define PUB		 "git.web.example"
#define EVIL		 "<script>alert(1)</script>"
#define CHROMIUM	 "/usr/bin/chromium"
/* How long one chromium run may take, in seconds. */
#define CHROMIUM_TIMEOUT "60"

static struct relayproc *rp;
static char		 tmp[256];
static char		 oid_plain[41], oid_evil[41];
static char		 issue_open[EVENT_ID_HEX_LEN + 1];

static void
key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0, SECKEY_LEN);
	sk[0] = 0x5e;
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
}

static void
npub_of(int n, char out[NIP19_MAX_LEN + 1])
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	key(n, sk, pk);
	nip19_encode("npub", pk, out, NIP19_MAX_LEN + 1);
}

static struct wsc *
conn(void)
{
	return wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
}

static int
pub(struct wsc *ws, struct event *ev, char *msg, size_t msglen)
{
	return nostr_publish_take(ws, ev, TMO, msg, msglen);
}

/* d percent-encoded for a URL path. */
static void
path_esc(struct buf *b, const char *d)
{
	for (; *d; d++)
		if (isalnum((unsigned char)*d) || strchr("-._~", *d))
			buf_addc(b, *d);
		else
			buf_printf(b, "%%%02X", (unsigned char)*d);
}

/*
 * An announcement by key n for d that lists this service only by its
 * public URL, with name and description, and key 9 as a maintainer.
 */
static struct event *
announcement(int n, const char *d, const char *name, const char *desc)
{
	struct buf    b = BUF_INIT;
	struct event *ev;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN], msk[SECKEY_LEN],
	    mpk[PUBKEY_LEN];
	char npub[NIP19_MAX_LEN + 1], mhex[PUBKEY_HEX_LEN + 1];

	key(n, sk, pk);
	key(9, msk, mpk);
	hex_encode(mpk, PUBKEY_LEN, mhex);
	npub_of(n, npub);
	buf_adds(&b, "[[\"d\",");
	buf_add_jstr(&b, d, strlen(d));
	buf_adds(&b, "],[\"name\",");
	buf_add_jstr(&b, name, strlen(name));
	buf_adds(&b, "],[\"description\",");
	buf_add_jstr(&b, desc, strlen(desc));
	buf_printf(&b, "],[\"clone\",\"https://" PUB "/%s/", npub);
	path_esc(&b, d);
	buf_printf(&b,
	    ".git\"],[\"relays\",\"wss://" PUB "\"],"
	    "[\"maintainers\",\"%s\"]]",
	    mhex);
	ev = event_new_signed(sk, time(NULL), 30617, b.b_data, "");
	buf_free(&b);
	return ev;
}

/*
 * Announces d (key n), commits readme as README.md with message msg in a
 * new local repository, publishes the state and pushes with the git CLI.
 * 0 when the push succeeded.
 */
static int
release(struct wsc *ws, int n, const char *d, const char *name,
    const char *desc, const char *readme, const char *msg, char oid[41])
{
	struct buf url = BUF_INIT;
	uint8_t	   sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	   dir[512], npub[NIP19_MAX_LEN + 1], m[256], *out = NULL;
	int	   rc = -1;

	key(n, sk, pk);
	npub_of(n, npub);
	if (pub(ws, announcement(n, d, name, desc), m, sizeof(m)) != 1) {
		printf("# announcement of %s refused: %s\n", d, m);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/w%d-%ld", tmp, n, (long)strlen(d));
	if (gt_init(dir) == -1 ||
	    gt_commit(dir, "README.md", readme, msg, oid) == -1)
		return -1;
	if (gt_state(ws, sk, time(NULL), d, oid) == -1)
		goto done;
	buf_printf(&url, "http://%s/%s/", relayproc_domain(rp), npub);
	path_esc(&url, d);
	buf_adds(&url, ".git");
	if (gt_git(dir, &out, "push", "-q", url.b_data, "main", NULL) != 0) {
		printf("# push of %s failed: %s\n", d, out ? out : "");
		goto done;
	}
	rc = 0;
done:
	free(out);
	buf_free(&url);
	return rc;
}

/*
 * A kind 1621 issue by key n on (owner key o, d), created ahead seconds
 * from now (activity order); its id into id.
 */
static int
issue(struct wsc *ws, int n, int o, const char *d, const char *subject,
    int ahead, char id[EVENT_ID_HEX_LEN + 1])
{
	struct buf    b = BUF_INIT;
	struct event *ev;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN], osk[SECKEY_LEN],
	    opk[PUBKEY_LEN];
	char ohex[PUBKEY_HEX_LEN + 1];
	int  ok;

	key(n, sk, pk);
	key(o, osk, opk);
	hex_encode(opk, PUBKEY_LEN, ohex);
	buf_printf(&b, "[[\"a\",\"30617:%s:", ohex);
	buf_add(&b, d, strlen(d));
	buf_adds(&b, "\"],[\"subject\",");
	buf_add_jstr(&b, subject, strlen(subject));
	buf_adds(&b, "]]");
	ev = event_new_signed(sk, time(NULL) + ahead, KIND_ISSUE, b.b_data,
	    EVIL);
	buf_free(&b);
	if (ev == NULL)
		return -1;
	memcpy(id, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	ok = pub(ws, ev, NULL, 0);
	return ok == 1 ? 0 : -1;
}

/* A status event of kind by key o on the event id. */
static int
status(struct wsc *ws, int o, const char *id, uint32_t kind)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	tags[128];

	key(o, sk, pk);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", id);
	return pub(ws, event_new_signed(sk, time(NULL), kind, tags, EVIL), NULL,
		   0) == 1 ?
	    0 :
	    -1;
}

/* GET path: the body, or NULL when the status is not want. */
static char *
get(const char *path, int want, char **headers)
{
	char *body = NULL;
	int   st = 0;

	if (http_get(relayproc_host(rp), relayproc_port(rp), path, NULL, TMO,
		&st, headers, &body) == -1 ||
	    st != want) {
		printf("# GET %s: status %d\n", path, st);
		free(body);
		return NULL;
	}
	return body;
}

static char *
repo_path(int n, const char *d)
{
	struct buf b = BUF_INIT;
	char	   npub[NIP19_MAX_LEN + 1];

	npub_of(n, npub);
	buf_printf(&b, "/%s/", npub);
	path_esc(&b, d);
	buf_adds(&b, ".git");
	return buf_release(&b, NULL);
}

/* No "<script" anywhere, in any case. */
static int
has_script(const char *s)
{
	for (; *s; s++)
		if (strncasecmp(s, "<script", 7) == 0)
			return 1;
	return 0;
}

static int
count(const char *s, const char *what)
{
	int n = 0;

	while (s != NULL && (s = strstr(s, what)) != NULL) {
		n++;
		s += strlen(what);
	}
	return n;
}

static void
announcement_listing_public_url_is_accepted(void)
{
	struct wsc   *ws = conn();
	struct event *ev;
	char	      m[256];
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	int	      rc;

	T_ASSERT(ws != NULL);
	rc = release(ws, 1, "plain", "Plain project",
	    "A project that "
	    "works",
	    "# Plain\n\nHello from the README.\n\n"
	    "![logo](https://img.example/logo.png) [x](javascript:alert(1))\n"
	    "<iframe src=\"https://img.example/\"></iframe>\n",
	    "first commit", oid_plain);
	T_EQ_INT(rc, 0);
	/* A URL naming neither the domain nor the public URL is not ours. */
	key(3, sk, pk);
	ev = event_new_signed(sk, time(NULL), 30617,
	    "[[\"d\",\"other\"],"
	    "[\"clone\",\"https://elsewhere.example/x/other.git\"],"
	    "[\"relays\",\"wss://elsewhere.example\"]]",
	    "");
	T_EQ_INT(pub(ws, ev, m, sizeof(m)), 0);
	T_CHECK(strncmp(m, "blocked:", 8) == 0);
	wsc_close(ws);
}

static void
setup_more(void)
{
	struct wsc *ws = conn();
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	    closed[EVENT_ID_HEX_LEN + 1], content[512], oid[41];

	T_ASSERT(ws != NULL);
	setenv("GIT_AUTHOR_NAME", "<script>z</script>", 1);
	T_EQ_INT(release(ws, 2, "x<script>y", EVIL, EVIL, EVIL "\n" EVIL, EVIL,
		     oid_evil),
	    0);
	setenv("GIT_AUTHOR_NAME", "graspd test", 1);
	T_EQ_INT(
	    release(ws, 4, "third", "Third", "", "three", "third commit", oid),
	    0);
	/* Profiles: the owners are eligible identity authors now. */
	key(1, sk, pk);
	T_EQ_INT(pub(ws,
		     event_new_signed(sk, time(NULL), 0, "[]",
			 "{\"name\":\"Alice Plain\"}"),
		     NULL, 0),
	    1);
	key(2, sk, pk);
	snprintf(content, sizeof(content),
	    "{\"name\":\"%s\","
	    "\"display_name\":\"%s\"}",
	    "<script>x<\\/script>", "<script>y<\\/script>");
	T_EQ_INT(pub(ws, event_new_signed(sk, time(NULL), 0, "[]", content),
		     NULL, 0),
	    1);
	/* plain: one open issue, one closed; evil: one open. */
	T_EQ_INT(issue(ws, 5, 1, "plain", "Crash on start", 60, issue_open), 0);
	T_EQ_INT(issue(ws, 5, 1, "plain", "Old bug", 50, closed), 0);
	T_EQ_INT(status(ws, 1, closed, KIND_STATUS_CLOSED), 0);
	/* Closed by someone who is neither its author nor a maintainer. */
	T_EQ_INT(issue(ws, 5, 1, "plain", "Still open", 40, closed), 0);
	T_EQ_INT(status(ws, 7, closed, KIND_STATUS_CLOSED), 0);
	/* A maintainer's state, newer than the owner's, names a branch. */
	key(9, sk, pk);
	snprintf(content, sizeof(content),
	    "[[\"d\",\"plain\"],"
	    "[\"refs/heads/main\",\"%s\"],[\"refs/heads/next\",\"%s\"],"
	    "[\"HEAD\",\"ref: refs/heads/main\"]]",
	    oid_plain, oid_plain);
	T_EQ_INT(pub(ws,
		     event_new_signed(sk, time(NULL) + 5, 30618, content, ""),
		     NULL, 0),
	    1);
	T_EQ_INT(issue(ws, 6, 2, "x<script>y", EVIL, 30, closed), 0);
	wsc_close(ws);
}

/* The thread ids of the thread cases. */
static char reply1[EVENT_ID_HEX_LEN + 1], labelled[EVENT_ID_HEX_LEN + 1],
    patch_id[EVENT_ID_HEX_LEN + 1], pr_id[EVENT_ID_HEX_LEN + 1],
    busy[EVENT_ID_HEX_LEN + 1];

/* Publishes kind with tags and content by key n, created ahead s from now. */
static int
post(struct wsc *ws, int n, uint32_t kind, const char *tags,
    const char *content, int ahead, char id[EVENT_ID_HEX_LEN + 1])
{
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	struct event *ev;
	char	      m[256];

	key(n, sk, pk);
	if ((ev = event_new_signed(sk, time(NULL) + ahead, kind, tags,
		 content)) == NULL)
		return -1;
	if (id != NULL)
		memcpy(id, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	if (pub(ws, ev, m, sizeof(m)) != 1) {
		printf("# kind %u refused: %s\n", kind, m);
		return -1;
	}
	return 0;
}

/* A NIP-22 comment by key n on the root issue, answering parent. */
static int
comment(struct wsc *ws, int n, const char *root, const char *parent,
    const char *content, int ahead, char id[EVENT_ID_HEX_LEN + 1])
{
	char tags[512];

	snprintf(tags, sizeof(tags),
	    "[[\"E\",\"%s\"],[\"K\",\"1621\"],[\"e\",\"%s\"],"
	    "[\"k\",\"%s\"]]",
	    root, parent, strcmp(root, parent) == 0 ? "1621" : "1111");
	return post(ws, n, 1111, tags, content, ahead, id);
}

static void
setup_threads(void)
{
	struct wsc *ws = conn();
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char tags[1024], ohex[PUBKEY_HEX_LEN + 1], id[EVENT_ID_HEX_LEN + 1];
	int  i;

	T_ASSERT(ws != NULL);
	key(1, sk, pk);
	hex_encode(pk, PUBKEY_LEN, ohex);
	T_EQ_INT(comment(ws, 6, issue_open, issue_open,
		     "First **reply** " EVIL " [x](javascript:alert(3)) "
		     "<img src=x onerror=alert(4)>",
		     61, reply1),
	    0);
	T_EQ_INT(comment(ws, 1, issue_open, reply1, "Thanks!", 62, NULL), 0);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\",\"\",\"root\"]]",
	    issue_open);
	T_EQ_INT(post(ws, 7, 1622, tags, "an old-style reply", 63, NULL), 0);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", issue_open);
	T_EQ_INT(post(ws, 6, 7, tags, "+", 64, NULL), 0);
	T_EQ_INT(post(ws, 7, 7, tags, "+", 64, NULL), 0);
	T_EQ_INT(post(ws, 1, 7, tags, EVIL, 64, NULL), 0);
	/* Closed by a maintainer, reopened by its author. */
	T_EQ_INT(post(ws, 9, KIND_STATUS_CLOSED, tags, "dup?", 65, NULL), 0);
	T_EQ_INT(post(ws, 5, KIND_STATUS_OPEN, tags, "", 66, NULL), 0);
	/* Labels, a patch and a pull request. */
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:plain\"],[\"subject\",\"Labelled\"],"
	    "[\"t\",\"bug\"],[\"t\",\"%s\"]]",
	    ohex, "<b>x</b>");
	T_EQ_INT(post(ws, 5, KIND_ISSUE, tags, "body", 20, labelled), 0);
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:plain\"],[\"t\",\"root\"]]", ohex);
	T_EQ_INT(post(ws, 5, KIND_PATCH, tags,
		     "From 1234 Mon Sep 17 00:00:00 2001\n"
		     "Subject: [PATCH] Fix <the> crash\n\n---\n"
		     " a | 2 +-\n\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n"
		     "@@ -1 +1 @@\n-old\n+new <script>\n",
		     10, patch_id),
	    0);
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:plain\"],[\"subject\",\"Add a feature\"],"
	    "[\"c\",\"%s\"],[\"clone\",\"https://" PUB "/x.git\"],"
	    "[\"branch-name\",\"feature\"]]",
	    ohex, oid_plain);
	T_EQ_INT(post(ws, 5, KIND_PR, tags, "Please pull.", 5, pr_id), 0);
	/* A busy thread: more replies than one page shows. */
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:plain\"],[\"subject\",\"Busy\"]]", ohex);
	T_EQ_INT(post(ws, 5, KIND_ISSUE, tags, "many replies", 0, busy), 0);
	for (i = 0; i < 255; i++) {
		snprintf(tags, sizeof(tags), "reply number %d", i);
		T_EQ_INT(comment(ws, 6, busy, busy, tags, -300 + i, id), 0);
	}
	wsc_close(ws);
}

/* GET path with extra headers: the status, headers and body. */
static int
get_h(const char *path, const char *extra, char **headers, char **body)
{
	int st = 0;

	if (http_get(relayproc_host(rp), relayproc_port(rp), path, extra, TMO,
		&st, headers, body) == -1)
		return -1;
	return st;
}

static char *
thread_path(const char *section, const char *id)
{
	struct buf b = BUF_INIT;
	char	  *base = repo_path(1, "plain");

	buf_printf(&b, "%s/%s/%s", base, section, id);
	free(base);
	return buf_release(&b, NULL);
}

static void
thread_page_shows_replies_statuses_reactions(void)
{
	char *path = thread_path("issues", issue_open), *page, *h = NULL;
	char  want[256], *a, *b;

	T_ASSERT((page = get(path, 200, &h)) != NULL);
	T_CHECK(strstr(page, "Crash on start") != NULL);
	T_CHECK(strstr(page, "First <strong>reply</strong>") != NULL);
	T_CHECK(strstr(page, "Thanks!") != NULL);
	T_CHECK(strstr(page, "an old-style reply") != NULL);
	/* In thread order, the answer linking to what it answers. */
	a = strstr(page, "First <strong>reply");
	b = strstr(page, "Thanks!");
	T_CHECK(a != NULL && b != NULL && a < b);
	snprintf(want, sizeof(want), "href=\"#e%.16s\">in reply", reply1);
	T_CHECK(strstr(page, want) != NULL);
	/* Authors by kind 0 name, npub beside; exact time and age. */
	T_CHECK(strstr(page, "<b>Alice Plain</b>") != NULL);
	T_CHECK(strstr(page, " UTC</time> <span class=\"ago\">(") != NULL);
	/* Closed by a maintainer, reopened by the author: open. */
	T_CHECK(strstr(page, "id=\"status\">open") != NULL);
	T_CHECK(strstr(page, "s1632\">closed</span>") != NULL);
	T_CHECK(strstr(page, "dup?") != NULL);
	/* Two likes, and the owner's reaction escaped. */
	T_CHECK(strstr(page, "<span class=\"tag\">+ 2</span>") != NULL);
	T_CHECK(strstr(page, "&lt;script&gt;alert(1) 1</span>") != NULL);
	/* What other clients open it by. */
	T_CHECK(strstr(page, "id=\"nevent\">nevent1") != NULL);
	T_CHECK(strstr(page, "id=\"naddr\">naddr1") != NULL);
	T_CHECK(strstr(page, "href=\"https://gitworkshop.dev/npub1") != NULL);
	/* Peer text inert. */
	T_CHECK(!has_script(page));
	T_CHECK(strstr(page, "javascript:") == NULL);
	T_CHECK(strstr(page, "<img src=x") == NULL);
	T_CHECK(strstr(page, "onerror=alert") == NULL ||
	    strstr(page, "&lt;img src=x onerror=alert(4)&gt;") != NULL);
	a = http_header_value(h, "content-security-policy");
	T_CHECK(a != NULL && strstr(a, "default-src 'none'") != NULL &&
	    strstr(a, "script-src") == NULL);
	free(a);
	free(h);
	free(page);
	free(path);
	/* The repository page links to it. */
	path = repo_path(1, "plain");
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	snprintf(want, sizeof(want), "/plain.git/issues/%s\">Crash on start",
	    issue_open);
	T_CHECK(strstr(page, want) != NULL);
	snprintf(want, sizeof(want), "/plain.git/patches/%s\">Fix &lt;the&gt;",
	    patch_id);
	T_CHECK(strstr(page, want) != NULL);
	T_CHECK(strstr(page,
		    "rel=\"alternate\" type=\"application/atom+xml\"") != NULL);
	free(page);
	free(path);
}

static void
thread_page_shows_labels_patches_prs(void)
{
	char *path = thread_path("issues", labelled), *page;

	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_CHECK(strstr(page, "<span class=\"tag\">bug</span>") != NULL);
	T_CHECK(strstr(page, "&lt;b&gt;x&lt;/b&gt;") != NULL);
	free(page);
	free(path);
	path = thread_path("patches", patch_id);
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_CHECK(strstr(page, "Fix &lt;the&gt; crash") != NULL);
	T_CHECK(strstr(page, "+new &lt;script&gt;") != NULL);
	T_CHECK(!has_script(page));
	free(page);
	free(path);
	path = thread_path("prs", pr_id);
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_CHECK(strstr(page, "Add a feature") != NULL);
	T_CHECK(strstr(page, oid_plain) != NULL);
	T_CHECK(strstr(page, "feature") != NULL);
	T_CHECK(strstr(page, "/prs/nevent1") != NULL);
	free(page);
	free(path);
}

static void
thread_page_pages_its_replies(void)
{
	char *path = thread_path("issues", busy), *page, more[512];

	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_EQ_INT(count(page, "class=\"card post reply\""), 250);
	T_CHECK(strstr(page, "reply number 0<") != NULL);
	T_CHECK(strstr(page, "reply number 250<") == NULL);
	T_CHECK(strstr(page, "href=\"?page=2\">More replies") != NULL);
	T_CHECK(strstr(page, "255 replies") != NULL);
	free(page);
	snprintf(more, sizeof(more), "%s?page=2", path);
	T_ASSERT((page = get(more, 200, NULL)) != NULL);
	T_EQ_INT(count(page, "class=\"card post reply\""), 5);
	T_CHECK(strstr(page, "reply number 254<") != NULL);
	T_CHECK(strstr(page, "href=\"?page=1\">&larr; Earlier") != NULL);
	free(page);
	free(path);
}

/* Replies of the largest content the relay takes (relay_proto.h). */
#define BIG_REPLY   (250 * 1000)
#define BIG_REPLIES 70

static void
thread_page_reads_a_bounded_amount(void)
{
	struct wsc *ws = conn();
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char tags[512], ohex[PUBKEY_HEX_LEN + 1], big[EVENT_ID_HEX_LEN + 1],
	    *text, *path, *page;
	int i;

	T_ASSERT(ws != NULL);
	key(1, sk, pk);
	hex_encode(pk, PUBKEY_LEN, ohex);
	snprintf(tags, sizeof(tags),
	    "[[\"a\",\"30617:%s:plain\"],[\"subject\",\"Big\"]]", ohex);
	T_ASSERT(post(ws, 5, KIND_ISSUE, tags, "big replies", -900, big) == 0);
	T_ASSERT((text = malloc(BIG_REPLY + 1)) != NULL);
	memset(text, 'x', BIG_REPLY);
	text[BIG_REPLY] = '\0';
	/* 17.5 MB of replies: more than a page reads (16 MiB). */
	for (i = 0; i < BIG_REPLIES; i++)
		T_ASSERT(comment(ws, 6, big, big, text, -800 + i, NULL) == 0);
	free(text);
	wsc_close(ws);
	path = thread_path("issues", big);
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	/* The bound on bytes, or (under the sanitizers, slower) the time. */
	T_CHECK(strstr(page, "more events than a page reads") != NULL ||
	    strstr(page, "took too long to read") != NULL);
	T_CHECK(count(page, "class=\"card post reply\"") < BIG_REPLIES);
	T_CHECK(strstr(page, "(cut: too long to show here)") != NULL);
	T_CHECK(strlen(page) < 3 * 1024 * 1024);
	free(page);
	free(path);
}

static void
errors_are_styled_pages_that_say_what(void)
{
	char *path, *page = NULL, *h = NULL;
	char  zeros[EVENT_ID_HEX_LEN + 1];

	path = thread_path("issues", "nothex");
	T_EQ_INT(get_h(path, NULL, &h, &page), 400);
	T_CHECK(page && strstr(page, "<style>") != NULL &&
	    strstr(page, "not an event id") != NULL);
	T_CHECK(h && strstr(h, "text/html") != NULL);
	free(page);
	free(h);
	free(path);
	memset(zeros, '0', EVENT_ID_HEX_LEN);
	zeros[EVENT_ID_HEX_LEN] = '\0';
	path = thread_path("issues", zeros);
	T_EQ_INT(get_h(path, NULL, NULL, &page), 404);
	T_CHECK(page && strstr(page, "<style>") != NULL &&
	    strstr(page, "no issue with the id <code>0000") != NULL);
	free(page);
	free(path);
	/* A patch is not an issue. */
	path = thread_path("issues", patch_id);
	T_EQ_INT(get_h(path, NULL, NULL, &page), 404);
	free(page);
	free(path);
	T_EQ_INT(get_h("/no/such<page>", NULL, NULL, &page), 404);
	T_CHECK(page && strstr(page, "<style>") != NULL &&
	    strstr(page, "<code>/no/such&lt;page&gt;</code>") != NULL);
	free(page);
	path = repo_path(1, "plain");
	T_ASSERT((h = malloc(strlen(path) + 32)) != NULL);
	sprintf(h, "%s/nothing", path);
	T_EQ_INT(get_h(h, NULL, NULL, &page), 404);
	T_CHECK(
	    page && strstr(page, "no page at <code>/nothing</code>") != NULL);
	free(page);
	free(h);
	free(path);
	T_EQ_INT(get_h("/npub1bad/x.git", NULL, NULL, &page), 400);
	T_CHECK(page && strstr(page, "<style>") != NULL &&
	    strstr(page, "not an npub") != NULL);
	free(page);
	/* git's own routes keep their plain answers. */
	T_EQ_INT(get_h("/npub1bad/x.git/info/refs?service=git-upload-pack",
		     NULL, NULL, &page),
	    400);
	T_CHECK(page && strstr(page, "<style>") == NULL);
	free(page);
}

static void
conditional_gets_answer_304(void)
{
	char *path = thread_path("issues", issue_open), *page = NULL;
	char *h = NULL, *etag, *lm, hdr[256];

	T_EQ_INT(get_h(path, NULL, &h, &page), 200);
	etag = http_header_value(h, "etag");
	lm = http_header_value(h, "last-modified");
	T_ASSERT(etag != NULL && lm != NULL);
	free(page);
	free(h);
	page = h = NULL;
	snprintf(hdr, sizeof(hdr), "If-None-Match: %s\r\n", etag);
	T_EQ_INT(get_h(path, hdr, &h, &page), 304);
	T_CHECK(page == NULL || *page == '\0');
	free(page);
	free(h);
	page = NULL;
	snprintf(hdr, sizeof(hdr), "If-None-Match: \"other\"\r\n");
	T_EQ_INT(get_h(path, hdr, NULL, &page), 200);
	free(page);
	page = NULL;
	snprintf(hdr, sizeof(hdr), "If-Modified-Since: %s\r\n", lm);
	T_EQ_INT(get_h(path, hdr, NULL, &page), 304);
	free(page);
	page = NULL;
	T_EQ_INT(get_h(path,
		     "If-Modified-Since: Thu, 01 Jan 1970 00:00:01 GMT\r\n",
		     NULL, &page),
	    200);
	free(page);
	page = NULL;
	/* The landing page and the repository page too. */
	T_EQ_INT(get_h("/", NULL, &h, &page), 200);
	free(etag);
	etag = http_header_value(h, "etag");
	free(h);
	free(page);
	page = NULL;
	snprintf(hdr, sizeof(hdr), "If-None-Match: %s\r\n", etag);
	T_EQ_INT(get_h("/", hdr, NULL, &page), 304);
	free(page);
	free(etag);
	free(lm);
	free(path);
}

static void
feeds_list_threads_statuses_and_pushes(void)
{
	char *path = repo_path(1, "plain"), *feed, *page = NULL, *h = NULL;

	T_ASSERT((feed = malloc(strlen(path) + 16)) != NULL);
	sprintf(feed, "%s/feed.atom", path);
	T_EQ_INT(get_h(feed, NULL, &h, &page), 200);
	T_CHECK(h && strstr(h, "application/atom+xml") != NULL);
	T_CHECK(page && strncmp(page, "<?xml version=\"1.0\"", 19) == 0);
	T_CHECK(page &&
	    strstr(page, "<feed xmlns=\"http://www.w3.org/2005/Atom\">"));
	T_CHECK(page && strstr(page, "New issue: Crash on start") != NULL);
	T_CHECK(
	    page && strstr(page, "New patch: Fix &lt;the&gt; crash") != NULL);
	T_CHECK(
	    page && strstr(page, "New pull request: Add a feature") != NULL);
	T_CHECK(page && strstr(page, "Status: closed") != NULL);
	T_CHECK(page && strstr(page, "Pushed: ") != NULL);
	T_CHECK(page &&
	    strstr(page,
		"<link rel=\"self\" type=\"application/"
		"atom+xml\" href=\"https://" PUB) != NULL);
	T_CHECK(page && !has_script(page));
	T_EQ_INT(count(page, "<entry>"), count(page, "</entry>"));
	T_CHECK(count(page, "<entry>") <= 50);
	free(page);
	free(h);
	page = h = NULL;
	T_EQ_INT(get_h("/feed.atom", NULL, &h, &page), 200);
	T_CHECK(page && strstr(page, "Plain project (repository") != NULL);
	T_CHECK(page && !has_script(page));
	free(page);
	free(h);
	free(feed);
	free(path);
}

static void
landing_lists_repositories_newest_first(void)
{
	char *page, *a, *b, *c, npub[NIP19_MAX_LEN + 1];

	T_ASSERT((page = get("/", 200, NULL)) != NULL);
	T_CHECK(
	    strstr(page,
		"<code class=\"u\" id=\"relay\">wss://" PUB "</code>") != NULL);
	T_CHECK(strstr(page, "href=\"mailto:ops@" PUB "\"") != NULL);
	T_CHECK(strstr(page, "GRASP-01") != NULL);
	T_CHECK(strstr(page, "Alice Plain") != NULL);
	T_CHECK(strstr(page, "A project that works") != NULL);
	npub_of(1, npub);
	T_CHECK(strstr(page, npub) != NULL);
	/* plain had the latest activity (its issues), then evil, third. */
	a = strstr(page, ">Plain project<");
	b = strstr(page, "x&lt;script&gt;");
	c = strstr(page, ">Third<");
	T_CHECK(a != NULL && b != NULL && c != NULL);
	T_CHECK(a < c && b < c);
	T_CHECK(strstr(page, "3 repositories") != NULL);
	/*
	 * Two open issues on plain: its closed one is not counted, the one a
	 * stranger closed is.
	 */
	T_CHECK(a != NULL &&
	    strstr(a,
		"<td class=\"n\">2</td><td class="
		"\"n\">0</td>") != NULL);
	free(page);
}

static void
search_is_server_side(void)
{
	char *page;

	T_ASSERT((page = get("/?q=plain", 200, NULL)) != NULL);
	T_CHECK(strstr(page, ">Plain project<") != NULL);
	T_CHECK(strstr(page, ">Third<") == NULL);
	T_CHECK(strstr(page, "1 repository") != NULL);
	T_CHECK(strstr(page, "value=\"plain\"") != NULL);
	free(page);
	T_ASSERT((page = get("/?q=that+works", 200, NULL)) != NULL);
	T_CHECK(strstr(page, ">Plain project<") != NULL);
	free(page);
	/* LIKE's wildcards are literal. */
	T_ASSERT((page = get("/?q=%25", 200, NULL)) != NULL);
	T_CHECK(strstr(page, "No repository matches") != NULL);
	free(page);
	/* Past the last page: none listed, a link back; junk is page 1. */
	T_ASSERT((page = get("/?page=2", 200, NULL)) != NULL);
	T_CHECK(strstr(page, "class=\"repo\"") == NULL);
	T_CHECK(strstr(page, "href=\"/?page=1\">&larr; Newer") != NULL);
	free(page);
	T_ASSERT((page = get("/?page=-3x", 200, NULL)) != NULL);
	T_EQ_INT(count(page, "class=\"repo\""), 3);
	free(page);
	T_ASSERT((page = get("/?q=%3Cscript%3E", 200, NULL)) != NULL);
	T_CHECK(strstr(page, "1 repository") != NULL);
	T_CHECK(!has_script(page));
	free(page);
}

static void
repository_page_shows_clone_urls_refs_commits_readme(void)
{
	char *path = repo_path(1, "plain"), *page, npub[NIP19_MAX_LEN + 1];
	char  want[512];

	npub_of(1, npub);
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	snprintf(want, sizeof(want), "git clone https://" PUB "/%s/plain.git",
	    npub);
	T_CHECK(strstr(page, want) != NULL);
	snprintf(want, sizeof(want), "git clone nostr://%s/" PUB "/plain",
	    npub);
	T_CHECK(strstr(page, want) != NULL);
	snprintf(want, sizeof(want), "https://gitworkshop.dev/%s/" PUB "/plain",
	    npub);
	T_CHECK(strstr(page, want) != NULL);
	T_CHECK(strstr(page, "http://127.0.0.1") == NULL);
	snprintf(want, sizeof(want),
	    "main</a> <span class=\"pk\">HEAD</span>"
	    "</td><td><code><a href=\"%s/commit/%s\">%s</a></code>",
	    path, oid_plain, oid_plain);
	T_CHECK(strstr(page, want) != NULL);
	T_CHECK(strstr(page, "first commit") != NULL);
	/* The README as Markdown: no raw HTML, nothing loaded from afar. */
	T_CHECK(strstr(page, "<h1>Plain</h1>") != NULL);
	T_CHECK(strstr(page, "<p>Hello from the README.</p>") != NULL);
	T_CHECK(strstr(page,
		    "<a href=\"https://img.example/logo.png\">logo"
		    "</a>") != NULL);
	T_CHECK(strstr(page, "<img src=\"http") == NULL);
	T_CHECK(strstr(page, "<iframe") == NULL);
	T_CHECK(strstr(page, "javascript:") == NULL);
	T_CHECK(strstr(page, "Crash on start") != NULL);
	T_CHECK(strstr(page, "Old bug") != NULL);
	T_CHECK(strstr(page, "s1632\">closed") != NULL);
	T_CHECK(strstr(page, "s1630\">open") != NULL);
	T_EQ_INT(count(page, "s1630\">open"), 2);
	T_EQ_INT(count(page, "s1632\">closed"), 1);
	/* The maintainer's newer state. */
	T_CHECK(strstr(page, "/tree/next\">next</a></td>") != NULL);
	T_CHECK(strstr(page, "Alice Plain") != NULL);
	/* The maintainer, by npub (no profile). */
	npub_of(9, npub);
	T_CHECK(strstr(page, npub) != NULL);
	free(page);
	free(path);
	/* Git requests on the same path still reach git. */
	path = repo_path(9, "plain");
	T_ASSERT((page = get(path, 404, NULL)) != NULL);
	free(page);
	free(path);
}

static void
peer_text_is_escaped_everywhere(void)
{
	char *path = repo_path(2, "x<script>y"), *page;

	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_CHECK(!has_script(page));
	/* Each field is there, escaped: name, README, commit, author... */
	T_CHECK(strstr(page, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
	T_CHECK(strstr(page, "&lt;script&gt;y&lt;/script&gt;") != NULL);
	/* git itself drops < and > from author names. */
	T_CHECK(strstr(page, "scriptz/script") != NULL);
	T_CHECK(strstr(page, oid_evil) != NULL);
	free(page);
	free(path);
	T_ASSERT((page = get("/", 200, NULL)) != NULL);
	T_CHECK(!has_script(page));
	T_CHECK(strstr(page, "&lt;script&gt;y&lt;/script&gt;") != NULL);
	free(page);
}

static void
icon_and_nip11(void)
{
	char  *body = NULL, *h = NULL;
	size_t len = 0;
	int    st = 0;

	T_ASSERT(
	    http_request(relayproc_host(rp), relayproc_port(rp), "GET",
		"/icon.png", NULL, NULL, 0, TMO, &st, &h, &body, &len) == 0);
	T_EQ_INT(st, 200);
	T_CHECK(len > 8 && memcmp(body, "\x89PNG\r\n\x1a\n", 8) == 0);
	T_CHECK(strstr(h, "image/png") != NULL);
	free(body);
	free(h);
	T_ASSERT(
	    http_request(relayproc_host(rp), relayproc_port(rp), "GET",
		"/favicon.ico", NULL, NULL, 0, TMO, &st, &h, &body, &len) == 0);
	T_EQ_INT(st, 200);
	T_CHECK(len > 30 && memcmp(body, "\0\0\1\0\1\0", 6) == 0 &&
	    memcmp(body + 22, "\x89PNG", 4) == 0);
	free(body);
	free(h);
	T_ASSERT(http_get(relayproc_host(rp), relayproc_port(rp), "/",
		     "Accept: application/nostr+json\r\n", TMO, &st, NULL,
		     &body) == 0);
	T_CHECK(strstr(body, "\"icon\":\"https://" PUB "/icon.png\"") != NULL);
	T_CHECK(strstr(body, "\"contact\":\"mailto:ops@" PUB "\"") != NULL);
	free(body);
}

/*
 * Reads what fd sends within ms into b (appended); stops at EOF, or once
 * b holds stop (when not NULL).  Returns the bytes read.
 */
static size_t
read_for(int fd, struct buf *b, int ms, const char *stop)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char	      chunk[4096];
	size_t	      n0 = b->b_len;
	ssize_t	      r;
	int64_t	      end = t_now_ms() + ms;

	while (t_now_ms() < end && poll(&pfd, 1, (int)(end - t_now_ms())) > 0) {
		if ((r = read(fd, chunk, sizeof(chunk))) <= 0)
			break;
		buf_add(b, chunk, (size_t)r);
		if (stop != NULL &&
		    memmem(b->b_data, b->b_len, stop, strlen(stop)) != NULL)
			break;
	}
	return b->b_len - n0;
}

/*
 * HEAD path on a kept-alive connection: the status (0 on failure), the
 * bytes that came after the headers within a second into *extra, and
 * whether a GET on the same connection is answered after it (*alive).
 */
static int
head_raw(const char *path, size_t *extra, int *alive)
{
	struct buf  b = BUF_INIT;
	char	    req[2048];
	const char *e;
	int	    fd, st = 0;
	size_t	    n;

	*extra = 0;
	*alive = 0;
	if ((fd = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp),
		 TMO)) == -1)
		return 0;
	n = (size_t)snprintf(req, sizeof(req),
	    "HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	if (write(fd, req, n) != (ssize_t)n)
		goto done;
	/* The headers, then a second for anything that follows them. */
	read_for(fd, &b, TMO, "\r\n\r\n");
	e = b.b_data ? memmem(b.b_data, b.b_len, "\r\n\r\n", 4) : NULL;
	if (e == NULL || sscanf(b.b_data, "HTTP/1.1 %d", &st) != 1)
		goto done;
	n = (size_t)(e + 4 - b.b_data);
	read_for(fd, &b, 1000, NULL);
	*extra = b.b_len - n;
	buf_reset(&b);
	n = (size_t)snprintf(req, sizeof(req),
	    "GET /icon.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	if (write(fd, req, n) == (ssize_t)n && read_for(fd, &b, TMO, NULL) > 0)
		*alive = strncmp(b.b_data, "HTTP/1.1 200", 12) == 0;
done:
	close(fd);
	buf_free(&b);
	return st;
}

/*
 * RFC 9110 9.3.2: a HEAD gets the headers a GET would and no body, on
 * every page for people (the landing page, a repository, its tree, a
 * thread, the feeds, a 404), and the connection goes on serving.
 */
static void
head_requests_get_headers_only(void)
{
	char  *repo = repo_path(1, "plain"), *thread;
	char   paths[6][1024];
	size_t i, extra;
	int    alive;

	thread = thread_path("issues", issue_open);
	snprintf(paths[0], sizeof(paths[0]), "/");
	snprintf(paths[1], sizeof(paths[1]), "%s", thread);
	snprintf(paths[2], sizeof(paths[2]), "%s/feed.atom", repo);
	snprintf(paths[3], sizeof(paths[3]), "/feed.atom");
	snprintf(paths[4], sizeof(paths[4]), "%s", repo);
	snprintf(paths[5], sizeof(paths[5]), "%s/tree/main", repo);
	for (i = 0; i < 6; i++) {
		T_EQ_INT(head_raw(paths[i], &extra, &alive), 200);
		if (extra != 0)
			printf("# HEAD %s: %zu bytes of body\n", paths[i],
			    extra);
		T_CHECK(extra == 0);
		T_CHECK(alive);
	}
	T_EQ_INT(head_raw("/no/such/page", &extra, &alive), 404);
	T_CHECK(extra == 0);
	free(repo);
	free(thread);
}

/* The 63 bytes before a two-byte character cut at 64, and 15 before 16. */
#define NAME63	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define REACT15 "xxxxxxxxxxxxxxx"

/*
 * A profile name cut at RELAY_WEB_NAME_MAX (64) bytes and a reaction cut
 * at RELAY_WEB_REACTION_MAX (16) whose last character straddles the cut
 * lose that character whole: no lone lead byte reaches the page.
 */
static void
cuts_keep_utf8_characters_whole(void)
{
	struct wsc *ws = conn();
	uint8_t	    sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	    tags[256], *path, *page, *p;

	T_ASSERT(ws != NULL);
	key(6, sk, pk);
	T_EQ_INT(pub(ws,
		     event_new_signed(sk, time(NULL), 0, "[]",
			 "{\"name\":\"" NAME63 "\xc3\xa9z\"}"),
		     NULL, 0),
	    1);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", issue_open);
	T_EQ_INT(post(ws, 7, 7, tags, REACT15 "\xc3\xa9", 64, NULL), 0);
	wsc_close(ws);
	path = thread_path("issues", issue_open);
	T_ASSERT((page = get(path, 200, NULL)) != NULL);
	T_ASSERT((p = strstr(page, NAME63)) != NULL);
	T_CHECK((unsigned char)p[63] < 0x80);
	T_ASSERT((p = strstr(page, REACT15)) != NULL);
	T_CHECK((unsigned char)p[15] < 0x80);
	free(page);
	free(path);
}

/*
 * Runs chromium headless on url with one more flag (--dump-dom or
 * --screenshot=...) in a window 1100 pixels wide and height high, its
 * standard output into out (NULL: /dev/null), bounded by timeout(1).  Returns its exit status or -1.
 */
static int
chromium(const char *flag, const char *url, const char *out, int height)
{
	char  prof[300], size[64];
	char  udd[320];
	char *argv[] = { "timeout", "-k", "5", CHROMIUM_TIMEOUT, CHROMIUM,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync",
		"--no-proxy-server", "--hide-scrollbars",
		/* No name resolves: nothing but loopback can be reached. */
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		udd, size, (char *)flag, (char *)url, NULL };
	pid_t pid;
	int   st, fd;

	snprintf(size, sizeof(size), "--window-size=1100,%d", height);
	snprintf(prof, sizeof(prof), "%s/chromium-profile", tmp);
	snprintf(udd, sizeof(udd), "--user-data-dir=%s", prof);
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
		    0644);
		if (fd != -1)
			dup2(fd, 1);
		if ((fd = open("/dev/null", O_WRONLY)) != -1)
			dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Takes a screenshot of path as name.png in tmp (and the copy dir). */
static int
screenshot(const char *path, const char *name, int height)
{
	char	    url[512], file[400], cmd[1200];
	const char *dir = getenv("GRASPD_SCREENSHOT_DIR");

	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), path);
	snprintf(file, sizeof(file), "--screenshot=%s/%s.png", tmp, name);
	if (chromium(file, url, NULL, height) != 0)
		return -1;
	printf("# screenshot: %s/%s.png\n", tmp, name);
	if (dir != NULL && *dir) {
		snprintf(cmd, sizeof(cmd), "cp '%s/%s.png' '%s/'", tmp, name,
		    dir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static void
browser_renders_the_pages(void)
{
	char url[512], file[400], *dom, *path = repo_path(1, "plain");
	char want[300], npub[NIP19_MAX_LEN + 1];

	if (access(CHROMIUM, X_OK) != 0) {
		t_fail_at(__FILE__, __LINE__,
		    CHROMIUM " is not installed "
			     "(sh scripts/deps.sh --test)");
		free(path);
		return;
	}
	snprintf(url, sizeof(url), "http://%s/", relayproc_domain(rp));
	snprintf(file, sizeof(file), "%s/landing.html", tmp);
	T_ASSERT(chromium("--dump-dom", url, file, 900) == 0);
	T_ASSERT((dom = t_slurp(file, NULL)) != NULL);
	T_EQ_INT(count(dom, "<a class=\"repo\""), 3);
	T_CHECK(strstr(dom, ">Plain project</a>") != NULL);
	T_CHECK(strstr(dom, "wss://" PUB) != NULL);
	T_EQ_INT(count(dom, "<script"), 0);
	free(dom);
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), path);
	snprintf(file, sizeof(file), "%s/repo.html", tmp);
	T_ASSERT(chromium("--dump-dom", url, file, 900) == 0);
	T_ASSERT((dom = t_slurp(file, NULL)) != NULL);
	npub_of(1, npub);
	snprintf(want, sizeof(want),
	    "id=\"clone\">git clone https://" PUB "/%s/plain.git</code>", npub);
	T_CHECK(strstr(dom, want) != NULL);
	T_CHECK(strstr(dom, "<h1>Plain</h1>") != NULL);
	T_EQ_INT(count(dom, "<script"), 0);
	free(dom);
	free(path);
	path = repo_path(2, "x<script>y");
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), path);
	snprintf(file, sizeof(file), "%s/evil.html", tmp);
	T_ASSERT(chromium("--dump-dom", url, file, 900) == 0);
	T_ASSERT((dom = t_slurp(file, NULL)) != NULL);
	T_EQ_INT(count(dom, "<script"), 0);
	T_CHECK(strstr(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
	free(dom);
	free(path);
	path = repo_path(1, "plain");
	T_CHECK(screenshot("/", "web-landing", 700) == 0);
	T_CHECK(screenshot(path, "web-repository", 1280) == 0);
	free(path);
}

static int
web_setup(void)
{
	static const char *env[] = { "NGIT_PUBLIC_URL=https://" PUB,
		"NGIT_RELAY_CONTACT=mailto:ops@" PUB, "NGIT_SYNC_ENABLED=false",
		"NGIT_RELAY_NAME=" PUB,
		"NGIT_RELAY_DESCRIPTION=A GRASP server: "
		"git repositories and their Nostr collaboration",
		NULL };
	char		   home[300];

	snprintf(tmp, sizeof(tmp), "/tmp/web_test.XXXXXX");
	if (mkdtemp(tmp) == NULL)
		return 2;
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1)
		return 2;
	if ((rp = relayproc_start("relayd", env)) == NULL)
		return 2;
	return 0;
}

static void
web_cleanup(void)
{
	relayproc_free(rp);
	tdir_remove(tmp);
}

static const struct t_case cases[] = {
	T_CASE(announcement_listing_public_url_is_accepted),
	T_CASE(setup_more),
	T_CASE(landing_lists_repositories_newest_first),
	T_CASE(search_is_server_side),
	T_CASE(repository_page_shows_clone_urls_refs_commits_readme),
	T_CASE(peer_text_is_escaped_everywhere),
	T_CASE(icon_and_nip11),
	T_CASE(setup_threads),
	T_CASE(thread_page_shows_replies_statuses_reactions),
	T_CASE(thread_page_shows_labels_patches_prs),
	T_CASE(thread_page_pages_its_replies),
	T_CASE(thread_page_reads_a_bounded_amount),
	T_CASE(errors_are_styled_pages_that_say_what),
	T_CASE(conditional_gets_answer_304),
	T_CASE(feeds_list_threads_statuses_and_pushes),
	T_CASE(head_requests_get_headers_only),
	T_CASE(cuts_keep_utf8_characters_whole),
	T_CASE(browser_renders_the_pages),
};

T_MAIN_WITH(cases, web_setup, web_cleanup, 0)
