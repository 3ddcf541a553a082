/*
 * webgit_test.c: relayd's pages of a repository's git data
 * (relay_web_git.c) as a browser and an attacker see them.  A relayd on
 * loopback takes a repository pushed with the git CLI: files with
 * hostile names and contents, a file named like a git option, a 3 MiB
 * text file, a binary file, a 17 MiB file, two commits (the second with
 * markup in its message), a branch whose name holds markup and a slash,
 * a tag, and a PR (kind 1618) whose tip is pushed to refs/nostr/<id>.
 * Then each page is read: a tree at a branch, a tag, a commit id and a
 * nested path; a file with line numbers; the raw bytes with a content
 * type that cannot run; a commit with its parents and diff; the PR's
 * commits and diff against the default branch; the repository page's
 * links to them.  Every peer-written text must come out escaped, option
 * injection and path traversal (../, %2e%2e, absolute, . segments) must
 * answer 400 or 404 and never another file, missing objects 404, and a
 * git that hangs (a wrapper found first in relayd's PATH, slowed by a
 * marker file) must be killed at the page's limit with a 504.  The git
 * pages and the repository page (a git that hangs in "log") count under
 * max_git_requests_per_ip, /tree with no ref is the tree at HEAD, and
 * every HTML page, errors included, carries the CSP and nosniff.
 */
#define _GNU_SOURCE /* memmem */
#include <sys/stat.h>

#include <ctype.h>
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

#define TMO   10000
#define EVIL  "<script>alert(1)</script>"
/* A file name and a branch name a browser would run if not escaped. */
#define FEVIL "<img src=x onerror=alert(2)>.txt"
#define BEVIL "feat/<b>x</b>"
/* Bytes of the large text file and of the file too large to serve raw. */
/* src/main.c in each commit. */
#define MAIN0 "int\nmain(void)\n{\n\treturn 0; /* " EVIL " */\n}\n"
#define MAIN1 "int\nmain(void)\n{\n\treturn 1;\n}\n"
#define MAIN2 "int\nmain(void)\n{\n\treturn 2; /* pr <i>x</i> */\n}\n"
#define BIG   (3 * 1024 * 1024)
#define HUGE  (17 * 1024 * 1024)

static struct relayproc *rp;
static char tmp[256], work[300], slow_mark[300], slow_log_mark[300];
static char c1[41], c2[41], c3[41], pr_id[EVENT_ID_HEX_LEN + 1];
static char base[256]; /* /<npub>/code.git */

static void
key(int n, uint8_t sk[SECKEY_LEN], uint8_t pk[PUBKEY_LEN])
{
	memset(sk, 0, SECKEY_LEN);
	sk[0] = 0x6b;
	sk[31] = (uint8_t)n;
	event_pubkey_of(sk, pk);
}

static struct wsc *
conn(void)
{
	return wsc_connect(relayproc_host(rp), relayproc_port(rp), "/", TMO);
}

/* GET (or method) path: the status, headers and body (callers free). */
static int
req(const char *method, const char *path, char **h, char **body, size_t *len)
{
	int st = 0;

	if (http_request(relayproc_host(rp), relayproc_port(rp), method, path,
		NULL, NULL, 0, 3 * TMO, &st, h, body, len) == -1)
		return -1;
	return st;
}

/* GET base + rest: the body when the status is want, else NULL. */
static char *
page(const char *rest, int want)
{
	char   path[2048], *body = NULL;
	size_t len;
	int    st;

	snprintf(path, sizeof(path), "%s%s", base, rest);
	st = req("GET", path, NULL, &body, &len);
	if (st != want) {
		printf("# GET %s: status %d, want %d\n", path, st, want);
		free(body);
		return NULL;
	}
	return body;
}

/* The header name of h into v; 0, or -1 when absent. */
static int
hv(const char *h, const char *name, char *v, size_t n)
{
	char *s = http_header_value(h, name);

	if (s == NULL)
		return -1;
	snprintf(v, n, "%s", s);
	free(s);
	return 0;
}

/* None of the markup the test's peers wrote is markup on the page. */
static int
inert(const char *s)
{
	const char *p;

	for (p = s; *p; p++)
		if (strncasecmp(p, "<script", 7) == 0 ||
		    strncasecmp(p, "<img src=x", 10) == 0 ||
		    strncasecmp(p, "<b>x", 4) == 0 ||
		    strncasecmp(p, "<i>x", 4) == 0 ||
		    strncasecmp(p, "href=\"javascript", 16) == 0)
			return 0;
	return 1;
}

static int
write_file(const char *dir, const char *name, const void *data, size_t n)
{
	char  path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	if (fwrite(data, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static int
commit_all(const char *msg, char oid[41])
{
	if (gt_git(work, NULL, "add", "-A", NULL) != 0 ||
	    gt_git(work, NULL, "commit", "-q", "-m", msg, NULL) != 0)
		return -1;
	return gt_rev(work, "HEAD", oid);
}

/* The owner's state: main at c2, BEVIL at c1, tag v1.0 at c1. */
static int
state(struct wsc *ws)
{
	struct buf b = BUF_INIT;
	uint8_t	   sk[SECKEY_LEN], pk[PUBKEY_LEN];
	int	   rc;

	key(1, sk, pk);
	buf_printf(&b,
	    "[[\"d\",\"code\"],[\"refs/heads/main\",\"%s\"],"
	    "[\"refs/heads/" BEVIL "\",\"%s\"],[\"refs/tags/v1.0\",\"%s\"],"
	    "[\"HEAD\",\"ref: refs/heads/main\"]]",
	    c2, c1, c1);
	rc = nostr_publish_take(ws,
	    event_new_signed(sk, time(NULL), 30618, b.b_data, ""), TMO, NULL,
	    0);
	buf_free(&b);
	return rc == 1 ? 0 : -1;
}

static void
setup_repository(void)
{
	struct wsc   *ws = conn();
	struct event *ev;
	struct buf    b = BUF_INIT;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char npub[NIP19_MAX_LEN + 1], hex[PUBKEY_HEX_LEN + 1], url[600],
	    ref[120];
	char  *big, *out = NULL;
	size_t i;

	T_ASSERT(ws != NULL);
	key(1, sk, pk);
	hex_encode(pk, PUBKEY_LEN, hex);
	nip19_encode("npub", pk, npub, sizeof(npub));
	snprintf(base, sizeof(base), "/%s/code.git", npub);
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), base);
	buf_printf(&b,
	    "[[\"d\",\"code\"],[\"name\",\"code\"],[\"clone\",\"%s\"],"
	    "[\"relays\",\"ws://%s\"]]",
	    url, relayproc_domain(rp));
	T_EQ_INT(nostr_publish_take(ws,
		     event_new_signed(sk, time(NULL), 30617, b.b_data, ""), TMO,
		     NULL, 0),
	    1);
	buf_free(&b);

	snprintf(work, sizeof(work), "%s/work", tmp);
	T_ASSERT(gt_init(work) == 0);
	T_ASSERT(write_file(work, "README.md", "# code\n", 7) == 0);
	T_ASSERT(mkdir(strcat(strcpy(url, work), "/src"), 0755) == 0);
	T_ASSERT(write_file(work, "src/main.c", MAIN0, strlen(MAIN0)) == 0);
	T_ASSERT(write_file(work, FEVIL, EVIL "\n", strlen(EVIL) + 1) == 0);
	T_ASSERT(write_file(work, "caf\xc3\xa9.txt", "x\n", 2) == 0);
	T_ASSERT(
	    write_file(work, "--output=pwned", "not an option\n", 14) == 0);
	T_ASSERT(
	    symlink("/etc/passwd", strcat(strcpy(url, work), "/passwd")) == 0);
	T_ASSERT(
	    write_file(work, "bin.dat", "GIF\0\1\2<script>\0\377", 15) == 0);
	T_ASSERT((big = malloc(HUGE)) != NULL);
	for (i = 0; i < BIG; i++)
		big[i] = i % 64 == 63 ? '\n' : "<a&b>"[i % 5];
	T_ASSERT(write_file(work, "big.txt", big, BIG) == 0);
	for (i = 0; i < HUGE; i++)
		big[i] = (char)(rand() & 0xff);
	T_ASSERT(write_file(work, "huge.bin", big, HUGE) == 0);
	free(big);
	T_ASSERT(commit_all("first", c1) == 0);
	T_ASSERT(write_file(work, "src/main.c", MAIN1, strlen(MAIN1)) == 0);
	T_ASSERT(commit_all(EVIL "\n\nbody & " EVIL, c2) == 0);
	T_ASSERT(gt_git(work, NULL, "tag", "v1.0", c1, NULL) == 0);
	T_ASSERT(gt_git(work, NULL, "branch", BEVIL, c1, NULL) == 0);
	T_ASSERT(state(ws) == 0);
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), base);
	if (gt_git(work, &out, "push", "-q", url, "main", BEVIL, "v1.0",
		NULL) != 0)
		printf("# push: %s\n", out ? out : "");
	free(out);
	out = NULL;

	/* A PR by key 5: one commit on top of main, at refs/nostr/<id>. */
	T_ASSERT(gt_git(work, NULL, "checkout", "-q", "-b", "pr", NULL) == 0);
	T_ASSERT(write_file(work, "src/main.c", MAIN2, strlen(MAIN2)) == 0);
	T_ASSERT(commit_all("pr: return 2", c3) == 0);
	key(5, sk, pk);
	b = (struct buf)BUF_INIT;
	buf_printf(&b,
	    "[[\"a\",\"30617:%s:code\"],[\"p\",\"%s\"],[\"subject\","
	    "\"return 2\"],[\"c\",\"%s\"],[\"clone\",\"%s\"]]",
	    hex, hex, c3, url);
	ev = event_new_signed(sk, time(NULL), 1618, b.b_data, "please pull");
	buf_free(&b);
	T_ASSERT(ev != NULL);
	memcpy(pr_id, ev->id_hex, EVENT_ID_HEX_LEN + 1);
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, NULL, 0), 1);
	snprintf(ref, sizeof(ref), "HEAD:refs/nostr/%s", pr_id);
	T_EQ_INT(gt_git(work, &out, "push", "-q", url, ref, NULL), 0);
	free(out);
	wsc_close(ws);
}

static void
tree_lists_a_branch_a_tag_a_commit_and_a_directory(void)
{
	char *p, want[1024];

	T_ASSERT((p = page("/tree/main", 200)) != NULL);
	T_CHECK(inert(p));
	snprintf(want, sizeof(want), "<a href=\"%s/tree/main/src\">src</a>/",
	    base);
	T_CHECK(strstr(p, want) != NULL);
	snprintf(want, sizeof(want),
	    "<a href=\"%s/blob/main/%%3Cimg%%20src%%3Dx%%20onerror%%3Dalert%%"
	    "282%%29%%3E.txt\">&lt;img src=x onerror=alert(2)&gt;.txt</a>",
	    base);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(strstr(p, ">--output=pwned</a>") != NULL);
	T_CHECK(strstr(p, "3.0 MiB") != NULL);
	/* Directories first. */
	T_CHECK(strstr(p, ">src</a>") < strstr(p, ">README.md</a>"));
	snprintf(want, sizeof(want), "/commit/%s\">%.12s</a>", c2, c2);
	T_CHECK(strstr(p, want) != NULL);
	free(p);
	T_ASSERT((p = page("/tree/main/src", 200)) != NULL);
	T_CHECK(strstr(p, ">main.c</a>") != NULL);
	T_CHECK(strstr(p, ">..</a>") != NULL);
	T_CHECK(strstr(p, "README") == NULL);
	free(p);
	/* The tag and the branch whose name has markup and a slash: c1. */
	T_ASSERT((p = page("/tree/v1.0/", 200)) != NULL);
	snprintf(want, sizeof(want), "/commit/%s\">", c1);
	T_CHECK(strstr(p, want) != NULL);
	free(p);
	T_ASSERT((p = page("/tree/feat/%3Cb%3Ex%3C/b%3E/src", 200)) != NULL);
	T_CHECK(inert(p));
	T_CHECK(strstr(p, "feat/&lt;b&gt;x&lt;/b&gt;") != NULL);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(strstr(p, ">main.c</a>") != NULL);
	free(p);
	snprintf(want, sizeof(want), "/tree/%s/src", c1);
	T_ASSERT((p = page(want, 200)) != NULL);
	free(p);
	T_ASSERT((p = page("/tree/HEAD", 200)) != NULL);
	free(p);
}

static void
file_view_has_line_numbers_and_escapes(void)
{
	char *p;

	T_ASSERT((p = page("/blob/main/src/main.c", 200)) != NULL);
	T_CHECK(inert(p));
	T_CHECK(strstr(p,
		    "<tr id=\"L4\"><td class=\"ln\"><a href=\"#L4\">4"
		    "</a></td><td>\treturn 1;</td></tr>") != NULL);
	T_CHECK(strstr(p, "id=\"L6\"") == NULL);
	T_CHECK(strstr(p, "/raw/main/src/main.c\">Raw</a>") != NULL);
	free(p);
	T_ASSERT((p = page("/blob/main/%3Cimg%20src%3Dx%20onerror%3Dalert%28"
			   "2%29%3E.txt",
		      200)) != NULL);
	T_CHECK(inert(p));
	T_CHECK(strstr(p, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
	free(p);
	/* A file named like an option is a file. */
	T_ASSERT((p = page("/blob/main/--output=pwned", 200)) != NULL);
	T_CHECK(strstr(p, "not an option") != NULL);
	free(p);
	/* A file past what a page shows: its start, a note. */
	T_ASSERT((p = page("/blob/main/big.txt", 200)) != NULL);
	T_CHECK(strstr(p, "id=\"cut\"") != NULL);
	T_CHECK(strlen(p) < 12 * 1024 * 1024);
	T_CHECK(inert(p));
	free(p);
	T_ASSERT((p = page("/blob/main/bin.dat", 200)) != NULL);
	T_CHECK(strstr(p, "id=\"binary\"") != NULL);
	T_CHECK(inert(p));
	free(p);
}

static void
raw_files_cannot_run(void)
{
	char   path[1024], *h = NULL, *body = NULL, v[256];
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/raw/main/src/main.c", base);
	T_EQ_INT(req("GET", path, &h, &body, &len), 200);
	T_CHECK(len == strlen(MAIN1) && memcmp(body, MAIN1, len) == 0);
	T_CHECK(hv(h, "content-type", v, sizeof(v)) == 0 &&
	    strcmp(v, "text/plain; charset=utf-8") == 0);
	T_CHECK(hv(h, "x-content-type-options", v, sizeof(v)) == 0 &&
	    strcmp(v, "nosniff") == 0);
	T_CHECK(hv(h, "content-security-policy", v, sizeof(v)) == 0 &&
	    strstr(v, "default-src 'none'") != NULL &&
	    strstr(v, "sandbox") != NULL);
	T_CHECK(hv(h, "content-disposition", v, sizeof(v)) == -1);
	free(h);
	free(body);
	snprintf(path, sizeof(path), "%s/raw/main/bin.dat", base);
	T_EQ_INT(req("GET", path, &h, &body, &len), 200);
	T_CHECK(len == 15 && memcmp(body, "GIF\0\1\2<script>\0\377", 15) == 0);
	T_CHECK(hv(h, "content-type", v, sizeof(v)) == 0 &&
	    strcmp(v, "application/octet-stream") == 0);
	T_CHECK(hv(h, "content-disposition", v, sizeof(v)) == 0 &&
	    strcmp(v, "attachment; filename=\"bin.dat\"") == 0);
	free(h);
	free(body);
	/* A hostile name: the disposition's name is a plain token. */
	snprintf(path, sizeof(path),
	    "%s/raw/main/%%3Cimg%%20src%%3Dx%%20onerror%%3Dalert%%282%%29%%3E"
	    ".txt",
	    base);
	T_EQ_INT(req("GET", path, &h, &body, &len), 200);
	T_CHECK(hv(h, "content-type", v, sizeof(v)) == 0 &&
	    strncmp(v, "text/plain", 10) == 0);
	free(h);
	free(body);
	/* The 3 MiB text whole; 17 MiB is more than the web sends. */
	snprintf(path, sizeof(path), "%s/raw/main/big.txt", base);
	T_EQ_INT(req("GET", path, NULL, &body, &len), 200);
	T_EQ_INT(len, BIG);
	free(body);
	snprintf(path, sizeof(path), "%s/raw/main/huge.bin", base);
	T_EQ_INT(req("GET", path, NULL, &body, &len), 403);
	T_CHECK(strstr(body, "clone the repository") != NULL);
	free(body);
	/* HEAD: the same headers, no body. */
	snprintf(path, sizeof(path), "%s/raw/main/bin.dat", base);
	T_EQ_INT(req("HEAD", path, &h, &body, &len), 200);
	T_CHECK(hv(h, "content-disposition", v, sizeof(v)) == 0);
	T_EQ_INT(len, 0);
	free(h);
	free(body);
	snprintf(path, sizeof(path), "%s/raw/main/src", base);
	T_EQ_INT(req("GET", path, NULL, &body, &len), 404);
	free(body);
}

static void
commit_page_shows_message_parents_and_diff(void)
{
	char *p, want[1024];

	snprintf(want, sizeof(want), "/commit/%s", c2);
	T_ASSERT((p = page(want, 200)) != NULL);
	T_CHECK(inert(p));
	T_CHECK(strstr(p,
		    "id=\"subject\">&lt;script&gt;alert(1)&lt;/script&gt;"
		    "</h2>") != NULL);
	T_CHECK(strstr(p, "body &amp; &lt;script&gt;") != NULL);
	snprintf(want, sizeof(want), "<a href=\"%s/commit/%s\">%.12s</a>", base,
	    c1, c1);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(strstr(p, "1 file changed") != NULL);
	T_CHECK(strstr(p, "<td>-\treturn 0; /* &lt;script&gt;") != NULL);
	T_CHECK(strstr(p, "<td>+\treturn 1;</td>") != NULL);
	T_CHECK(strstr(p, "graspd test") != NULL ||
	    strstr(p, "id=\"author\"") != NULL);
	free(p);
	/* By branch; the first commit has no parent and a binary file. */
	T_ASSERT((p = page("/commit/main", 200)) != NULL);
	T_CHECK(strstr(p, c2) != NULL);
	free(p);
	snprintf(want, sizeof(want), "/commit/%s", c1);
	T_ASSERT((p = page(want, 200)) != NULL);
	T_CHECK(strstr(p, "none (the first commit)") != NULL);
	/* A UTF-8 name as it is, not quoted with octal escapes. */
	T_CHECK(
	    strstr(p, ">caf\xc3\xa9.txt</a> <span class=\"ad\">+1") != NULL);
	T_CHECK(strstr(p, ">bin.dat</a> <span class=\"cut\">binary") != NULL);
	T_CHECK(inert(p));
	free(p);
}

static void
pr_page_shows_commits_and_diff_against_main(void)
{
	char *p, want[1024];

	snprintf(want, sizeof(want), "/pr/%s/diff", pr_id);
	T_ASSERT((p = page(want, 200)) != NULL);
	T_CHECK(inert(p));
	snprintf(want, sizeof(want), "/commit/%s\">%.12s</a>", c3, c3);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(strstr(p, "pr: return 2") != NULL);
	/* Against main (c2), the merge base: one commit, one change. */
	snprintf(want, sizeof(want),
	    "/commit/%s\">%.12s</a></code>; merge "
	    "base",
	    c2, c2);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(strstr(p, "<td>-\treturn 1;</td>") != NULL);
	T_CHECK(strstr(p, "<td>+\treturn 2; /* pr &lt;i&gt;x&lt;/i&gt; */") !=
	    NULL);
	free(p);
	snprintf(want, sizeof(want), "/pr/%s", pr_id);
	T_ASSERT((p = page(want, 200)) != NULL);
	free(p);
	T_ASSERT((p = page("/pr/"
			   "0000000000000000000000000000000000000000000"
			   "000000000000000000000/diff",
		      404)) != NULL);
	free(p);
	T_ASSERT((p = page("/pr/--help", 400)) != NULL);
	free(p);
}

/* A PR whose commits share no history with main: a 404 that says so. */
static void
pr_without_common_history_is_404(void)
{
	struct wsc   *ws = conn();
	struct event *ev;
	struct buf    b = BUF_INIT;
	uint8_t	      sk[SECKEY_LEN], pk[PUBKEY_LEN], opk[PUBKEY_LEN];
	char lone[41], hex[PUBKEY_HEX_LEN + 1], url[600], ref[120], *out = NULL,
								    *p;

	T_ASSERT(ws != NULL);
	T_ASSERT(gt_git(work, NULL, "checkout", "-q", "--orphan", "lone",
		     NULL) == 0);
	T_ASSERT(commit_all("unrelated", lone) == 0);
	key(1, sk, opk);
	hex_encode(opk, PUBKEY_LEN, hex);
	key(5, sk, pk);
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), base);
	buf_printf(&b,
	    "[[\"a\",\"30617:%s:code\"],[\"p\",\"%s\"],[\"c\",\"%s\"],"
	    "[\"clone\",\"%s\"]]",
	    hex, hex, lone, url);
	ev = event_new_signed(sk, time(NULL), 1618, b.b_data, "unrelated");
	buf_free(&b);
	T_ASSERT(ev != NULL);
	snprintf(ref, sizeof(ref), "HEAD:refs/nostr/%s", ev->id_hex);
	T_EQ_INT(nostr_publish_take(ws, ev, TMO, NULL, 0), 1);
	snprintf(url, sizeof(url), "http://%s%s", relayproc_domain(rp), base);
	T_EQ_INT(gt_git(work, &out, "push", "-q", url, ref, NULL), 0);
	free(out);
	snprintf(url, sizeof(url), "/pr/%s/diff", ref + 16);
	T_ASSERT((p = page(url, 404)) != NULL);
	T_CHECK(strstr(p, "shares no commit") != NULL);
	free(p);
	wsc_close(ws);
}

static void
repository_page_links_to_trees_and_commits(void)
{
	char *p, want[1024];

	T_ASSERT((p = page("", 200)) != NULL);
	snprintf(want, sizeof(want), "href=\"%s/commit/%s\"", base, c2);
	T_CHECK(strstr(p, want) != NULL);
	snprintf(want, sizeof(want), "href=\"%s/tree/main\"", base);
	T_CHECK(strstr(p, want) != NULL);
	snprintf(want, sizeof(want), "href=\"%s/tree/v1.0\"", base);
	T_CHECK(strstr(p, want) != NULL);
	snprintf(want, sizeof(want),
	    "href=\"%s/tree/feat/%%3Cb%%3Ex%%3C/b%%3E\"", base);
	T_CHECK(strstr(p, want) != NULL);
	T_CHECK(inert(p));
	free(p);
}

/*
 * GET base + rest: its status, when it shows nothing from outside the
 * repository's tree (no /etc/passwd, no repository config) and none of
 * the peers' markup; else 0.  With body, the body too (caller frees).
 */
static int
contained(const char *rest, char **bodyp)
{
	char   path[2048], *body = NULL;
	size_t len = 0;
	int    st;

	snprintf(path, sizeof(path), "%s%s", base, rest);
	st = req("GET", path, NULL, &body, &len);
	if (body == NULL || memmem(body, len, "root:x:", 7) != NULL ||
	    memmem(body, len, "repositoryformatversion", 23) != NULL ||
	    !inert(body)) {
		printf("# GET %s: status %d\n", path, st);
		free(body);
		return 0;
	}
	if (bodyp != NULL)
		*bodyp = body;
	else
		free(body);
	return st;
}

/* rest answers 400 or 404 and shows nothing from outside. */
static int
refused(const char *rest)
{
	int st = contained(rest, NULL);

	if (st != 400 && st != 404)
		printf("# %s: status %d\n", rest, st);
	return st == 400 || st == 404 ? st : 0;
}

static void
option_injection_is_refused(void)
{
	T_EQ_INT(refused("/tree/--output=pwned"), 400);
	T_EQ_INT(refused("/tree/-"), 400);
	T_EQ_INT(refused("/commit/--help"), 400);
	T_EQ_INT(refused("/commit/-p"), 400);
	T_EQ_INT(refused("/raw/--upload-pack=touch%20x/README.md"), 400);
	T_EQ_INT(refused("/commit/main~1"), 400);
	T_EQ_INT(refused("/commit/HEAD%5E"), 400);
	T_EQ_INT(refused("/tree/main@%7B0%7D"), 400);
	T_EQ_INT(refused("/tree/main:src"), 400);
	T_EQ_INT(refused("/tree/a..b"), 400);
	T_EQ_INT(refused("/tree/main.lock"), 400);
	T_EQ_INT(refused("/commit/main/src"), 404);
	T_EQ_INT(refused("/tree/%2Dx"), 400);
	/* libwebsockets drops a request with %00 before relayd sees it. */
	{
		char path[1024], *body = NULL;
		int  st;

		snprintf(path, sizeof(path), "%s/tree/main%%00x", base);
		st = req("GET", path, NULL, &body, NULL);
		T_CHECK(st == -1 || st == 400);
		free(body);
	}
	/* libwebsockets does not pass a control byte on as one. */
	T_CHECK(refused("/tree/main/a%0Ab") != 0);
	/* A ref name no branch has. */
	T_EQ_INT(refused("/tree/nosuch"), 404);
	/* Long names: refused by relayd or by libwebsockets, never served. */
	{
		struct buf b = BUF_INIT;
		char	  *body = NULL;
		int	   st, i;

		buf_printf(&b, "%s/tree/", base);
		for (i = 0; i < 1100; i++)
			buf_addc(&b, 'a');
		st = req("GET", b.b_data, NULL, &body, NULL);
		T_CHECK(st == 400 || st == 414 || st == 431 || st == -1);
		free(body);
		body = NULL;
		buf_reset(&b);
		buf_printf(&b, "%s/tree/main/", base);
		for (i = 0; i < 1000; i++)
			buf_adds(&b, "a/");
		buf_adds(&b, "x");
		st = req("GET", b.b_data, NULL, &body, NULL);
		T_CHECK(st == 404 || st == 414 || st == 431 || st == -1);
		free(body);
		buf_free(&b);
		body = NULL;
		T_ASSERT((body = page("/tree/main", 200)) != NULL);
		free(body);
	}
	/* A POST is not a page. */
	{
		char path[1024], *body = NULL;

		snprintf(path, sizeof(path), "%s/tree/main", base);
		T_EQ_INT(req("POST", path, NULL, &body, NULL), 405);
		free(body);
	}
}

static void
path_traversal_is_refused(void)
{
	char *body = NULL;
	int   st;

	T_CHECK(refused("/raw/main/../../../../etc/passwd") != 0);
	T_CHECK(refused("/raw/main/%2e%2e/%2e%2e/%2e%2e/etc/passwd") != 0);
	T_CHECK(refused("/raw/main/src/%2E%2E/%2E%2E/config") != 0);
	T_CHECK(refused("/raw/main/%2e%2e%2fconfig") != 0);
	T_CHECK(refused("/raw/main//etc/passwd") != 0);
	T_CHECK(refused("/raw/main/%2Fetc%2Fpasswd") != 0);
	T_CHECK(refused("/raw/HEAD:../config") != 0);
	T_CHECK(contained("/tree/..%2F..%2F..", NULL) != 0);
	/*
	 * libwebsockets folds "." and ".." segments and "//" of the path
	 * before relayd sees it: what is left names a file of the tree.
	 */
	st = contained("/raw/main/src/./main.c", &body);
	T_CHECK(st == 400 || (st == 200 && strcmp(body, MAIN1) == 0));
	free(body);
	body = NULL;
	st = contained("/raw/main/src/../src/main.c", &body);
	T_CHECK(st == 400 || (st == 200 && strcmp(body, MAIN1) == 0));
	free(body);
	/* A symbolic link is its target's name, never followed. */
	body = NULL;
	T_EQ_INT(contained("/raw/main/passwd", &body), 200);
	T_CHECK(body != NULL && strcmp(body, "/etc/passwd") == 0);
	free(body);
}

static void
missing_objects_are_404(void)
{
	char *p;

	T_ASSERT((p = page("/commit/"
			   "0123456789012345678901234567890123456789",
		      404)) != NULL);
	T_CHECK(strstr(p, "no such") != NULL);
	free(p);
	T_ASSERT((p = page("/tree/"
			   "0123456789012345678901234567890123456789/src",
		      404)) != NULL);
	free(p);
	T_ASSERT((p = page("/blob/main/nosuch.txt", 404)) != NULL);
	free(p);
	T_ASSERT((p = page("/tree/main/README.md/x", 404)) != NULL);
	free(p);
	/* A repository not hosted. */
	{
		char *body = NULL;

		T_EQ_INT(req("GET",
			     "/npub1sg6plzptd64u62a878hep2kev88swjh3tw00gjs"
			     "fl8f237lmu63q0uf63m/none.git/tree/main",
			     NULL, &body, NULL),
		    404);
		free(body);
	}
}

/* The address's git places held by 8 page requests, then the 9th. */
static int
ninth_request(const char *rest, char **bodyp)
{
	char   path[1024], req_text[1200];
	int    fd[8], i, st = 0;
	size_t n;

	snprintf(path, sizeof(path), "%s%s", base, rest);
	n = (size_t)snprintf(req_text, sizeof(req_text),
	    "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	for (i = 0; i < 8; i++) {
		fd[i] = wsc_tcp_connect(relayproc_host(rp), relayproc_port(rp),
		    TMO);
		if (fd[i] == -1 || write(fd[i], req_text, n) != (ssize_t)n)
			printf("# request %d not sent\n", i);
	}
	relayproc_sleep_ms(500);
	st = req("GET", path, NULL, bodyp, NULL);
	for (i = 0; i < 8; i++)
		if (fd[i] != -1)
			close(fd[i]);
	return st;
}

/*
 * With the marker file (a hanging git) at mark, the 9th request of rest
 * from one address is 429; once the marker is gone the places come back
 * when git is killed at the page's limit (5 s): libwebsockets reads no
 * more of a connection waiting for its answer.
 */
static void
limit_holds(const char *mark, const char *rest)
{
	char  path[1024], *body = NULL;
	FILE *f;
	int   i, st;

	T_ASSERT((f = fopen(mark, "w")) != NULL);
	fclose(f);
	st = ninth_request(rest, &body);
	unlink(mark);
	T_EQ_INT(st, 429);
	T_CHECK(body != NULL && strstr(body, "rate-limited") != NULL);
	free(body);
	snprintf(path, sizeof(path), "%s%s", base, rest);
	for (i = 0, st = 0; i < 20 && st != 200; i++) {
		relayproc_sleep_ms(500);
		body = NULL;
		st = req("GET", path, NULL, &body, NULL);
		free(body);
	}
	T_EQ_INT(st, 200);
	T_CHECK(i <= 14);
}

/*
 * Pages whose git runs count against max_git_requests_per_ip (8 by
 * default): with 8 held by a hanging git, the next is 429.
 */
static void
git_pages_count_against_the_per_address_limit(void)
{
	limit_holds(slow_mark, "/tree/main/src");
}

/*
 * The repository page runs git (its log, its README) as the other git
 * pages do, and counts under max_git_requests_per_ip with them: with 8
 * repository pages waiting on a hanging "git log", the 9th is 429.
 */
static void
repository_page_counts_against_the_per_address_limit(void)
{
	limit_holds(slow_log_mark, "");
}

/* /tree with no ref (and /tree/) is the tree at HEAD, not a 404. */
static void
tree_without_a_ref_is_the_tree_at_head(void)
{
	char *p;

	T_ASSERT((p = page("/tree", 200)) != NULL);
	T_CHECK(strstr(p, "<span class=\"tag\">HEAD</span>") != NULL);
	T_CHECK(strstr(p, "/tree/HEAD/src\"") != NULL);
	free(p);
	T_ASSERT((p = page("/tree/", 200)) != NULL);
	T_CHECK(strstr(p, "/tree/HEAD/src\"") != NULL);
	free(p);
}

/*
 * Every HTML page, an error or not, carries the policy that runs
 * nothing (RELAY_WEB_CSP) and nosniff: a tree, a 400, a 404, a 405.
 */
static void
every_html_page_carries_the_policy(void)
{
	static const struct {
		const char *method, *rest;
		int	    status;
	} pages[] = { { "GET", "/tree/main", 200 }, { "GET", "/tree/-x", 400 },
		{ "GET", "/blob/main/nosuch", 404 },
		{ "POST", "/tree/main", 405 }, { "GET", "/commit/main", 200 } };
	char   path[1024], v[512], *h, *body;
	size_t i, len;

	for (i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		h = body = NULL;
		snprintf(path, sizeof(path), "%s%s", base, pages[i].rest);
		T_EQ_INT(req(pages[i].method, path, &h, &body, &len),
		    pages[i].status);
		T_CHECK(h != NULL &&
		    hv(h, "content-security-policy", v, sizeof(v)) == 0 &&
		    strcmp(v,
			"default-src 'none'; style-src 'unsafe-inline'; "
			"img-src 'self'; form-action 'self'; base-uri "
			"'none'; frame-ancestors 'none'") == 0);
		T_CHECK(h != NULL &&
		    hv(h, "x-content-type-options", v, sizeof(v)) == 0 &&
		    strcmp(v, "nosniff") == 0);
		free(h);
		free(body);
	}
}

static void
slow_git_is_killed_at_the_limit(void)
{
	char  *p;
	FILE  *f;
	time_t t0;

	T_ASSERT((f = fopen(slow_mark, "w")) != NULL);
	fclose(f);
	t0 = time(NULL);
	p = page("/tree/main/src", 504);
	unlink(slow_mark);
	T_ASSERT(p != NULL);
	T_CHECK(strstr(p, "git took too long") != NULL);
	/* RELAY_WEB_GIT_TIMEOUT_S is 5. */
	T_CHECK(time(NULL) - t0 >= 4 && time(NULL) - t0 <= 9);
	free(p);
	/* relayd goes on serving. */
	T_ASSERT((p = page("/tree/main/src", 200)) != NULL);
	free(p);
}

static int
webgit_setup(void)
{
	char	    home[300], bin[300], git[400], path[4096], env_path[4500];
	const char *env[] = { "NGIT_SYNC_ENABLED=false", env_path, NULL };
	FILE	   *f;

	snprintf(tmp, sizeof(tmp), "/tmp/webgit_test.XXXXXX");
	if (mkdtemp(tmp) == NULL)
		return 2;
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1)
		return 2;
	/* A git that hangs in ls-tree, or in log, while its marker exists. */
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(git, sizeof(git), "%s/git", bin);
	snprintf(slow_mark, sizeof(slow_mark), "%s/slow", tmp);
	snprintf(slow_log_mark, sizeof(slow_log_mark), "%s/slowlog", tmp);
	if (mkdir(bin, 0755) == -1 || (f = fopen(git, "w")) == NULL)
		return 2;
	fprintf(f,
	    "#!/bin/sh\nfor a; do\n\tif [ \"$a\" = ls-tree ] && "
	    "[ -e '%s' ]; then exec sleep 60; fi\n"
	    "\tif [ \"$a\" = log ] && [ -e '%s' ]; then exec sleep 60; fi\n"
	    "done\nexec /usr/bin/git \"$@\"\n",
	    slow_mark, slow_log_mark);
	if (fclose(f) != 0 || chmod(git, 0755) == -1)
		return 2;
	snprintf(path, sizeof(path), "%s",
	    getenv("PATH") ? getenv("PATH") : "");
	snprintf(env_path, sizeof(env_path), "PATH=%s:%s", bin, path);
	if ((rp = relayproc_start("relayd", env)) == NULL)
		return 2;
	return 0;
}

static void
webgit_cleanup(void)
{
	relayproc_free(rp);
	tdir_remove(tmp);
}

static const struct t_case cases[] = {
	T_CASE(setup_repository),
	T_CASE(tree_lists_a_branch_a_tag_a_commit_and_a_directory),
	T_CASE(file_view_has_line_numbers_and_escapes),
	T_CASE(raw_files_cannot_run),
	T_CASE(commit_page_shows_message_parents_and_diff),
	T_CASE(pr_page_shows_commits_and_diff_against_main),
	T_CASE(pr_without_common_history_is_404),
	T_CASE(repository_page_links_to_trees_and_commits),
	T_CASE(option_injection_is_refused),
	T_CASE(path_traversal_is_refused),
	T_CASE(missing_objects_are_404),
	T_CASE(git_pages_count_against_the_per_address_limit),
	T_CASE(repository_page_counts_against_the_per_address_limit),
	T_CASE(tree_without_a_ref_is_the_tree_at_head),
	T_CASE(every_html_page_carries_the_policy),
	T_CASE(slow_git_is_killed_at_the_limit),
};

T_MAIN_WITH(cases, webgit_setup, webgit_cleanup, 0)
