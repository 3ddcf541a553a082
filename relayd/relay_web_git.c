/*
 * relay_web_git.c: relayd's pages of a repository's git data, run in
 * relayd's loop, under /<npub>/<d>.git:
 *
 *   /tree/<ref>[/<path>]   a directory at a branch, tag or commit id
 *   /blob/<ref>/<path>     a file with line numbers (a directory shows as
 *                          a tree: the object decides)
 *   /raw/<ref>/<path>      the file's bytes
 *   /commit/<ref>          a commit: message, author, parents, diffstat
 *                          and diff
 *   /pr/<event-id>[/diff]  a PR's commits and its diff against the
 *                          default branch, from refs/nostr/<event-id>
 *
 * Nothing from the URL reaches git as it is.  A ref is looked up among
 * the repository's refs read from disk (refs/heads, then refs/tags, the
 * longest that matches, or HEAD) or is a full commit id; git is given
 * object ids, and a path only after an object id and a colon
 * ("<id>:<path>"), where it cannot be an option.  Refs must be what git
 * check-ref-format accepts and paths may hold no "." or ".." segment and
 * no control byte: otherwise 400; what does not resolve is 404.
 *
 * git runs as children of relayd (relay_child_spawn()) while the request
 * waits, in one or two steps (find the object, then read it), each
 * command with the page's time limit; its output goes through "head -c"
 * into an unlinked temporary file, so that a command that writes more
 * than a page reads is cut there (and ends on SIGPIPE) instead of filling
 * the disk.  While git runs the page holds a place of its address under
 * max_git_requests_per_ip, as a clone does.  The page is rendered once
 * the last child of the last step is reaped and written from the
 * connection's next writable callback.
 */
#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "nip19.h"
#include "pktline.h"
#include "relayd.h"

/* Children of one step at most: two commands, each with its "head". */
#define WG_CHILDREN 4

/* RFC 9110 15.6.5: git ran over its time. */
#define HTTP_GATEWAY_TIMEOUT 504

enum wg_kind {
	WG_TREE,
	WG_RAW,
	WG_COMMIT,
	WG_PR,
};

struct relay_webgit {
	struct relay_conn     *wg_conn;
	struct lws	      *wg_wsi;
	enum wg_kind	       wg_kind;
	int		       wg_step;
	uint8_t		       wg_owner[PUBKEY_LEN];
	char		       wg_npub[NIP19_MAX_LEN + 1];
	char		      *wg_d;
	char		       wg_repo[PATH_MAX];
	char		      *wg_ref;	/* as the URL names it */
	char		      *wg_path; /* "" at the top */
	char		       wg_oid[GIT_OID_HEX + 1]; /* wg_ref's object */
	/* A PR: its event id, the default branch and the merge base. */
	char		       wg_pr[EVENT_ID_HEX_LEN + 1];
	char		      *wg_base_name;
	char		       wg_base[GIT_OID_HEX + 1];
	char		       wg_mb[GIT_OID_HEX + 1];
	unsigned long long     wg_size; /* a file's */
	/* The children of the step running, and what they did. */
	pid_t		       wg_pid[WG_CHILDREN];
	int		       wg_is_git[WG_CHILDREN];
	int		       wg_git_status[2]; /* per output slot */
	int		       wg_killed;
	FILE		      *wg_out[2];
	size_t		       wg_cap[2];
	/* The answer, once rendered. */
	unsigned	       wg_code;
	const char	      *wg_title; /* an error page's, static */
	char		      *wg_type;
	char		      *wg_disp; /* Content-Disposition, raw files */
	char		      *wg_body;
	size_t		       wg_len;
	int		       wg_done;
	struct relay_web_place wg_place;
};

static void wg_child_done(pid_t, int, int, void *);
static void wg_next(struct relay_webgit *);

void
relay_web_git_free(struct relay_webgit *wg)
{
	int i;

	if (wg == NULL)
		return;
	relay_web_place_give(&wg->wg_place);
	for (i = 0; i < WG_CHILDREN; i++)
		if (wg->wg_pid[i] != -1)
			child_abandon(wg->wg_pid[i]);
	for (i = 0; i < 2; i++)
		if (wg->wg_out[i] != NULL)
			fclose(wg->wg_out[i]);
	free(wg->wg_d);
	free(wg->wg_ref);
	free(wg->wg_path);
	free(wg->wg_base_name);
	free(wg->wg_type);
	free(wg->wg_disp);
	free(wg->wg_body);
	free(wg);
}

void
relay_web_git_close(struct relay_conn *c)
{
	struct relay_webgit *wg = c->rc_wgit;

	if (wg == NULL)
		return;
	c->rc_wgit = NULL;
	/* Its children are killed; their callbacks will not run. */
	relay_web_git_free(wg);
}

int
relay_web_git_writeable(struct relay_conn *c, struct lws *wsi)
{
	struct relay_webgit *wg = c->rc_wgit;
	const char	    *raw_hdrs[] = { "content-security-policy:",
			 "default-src 'none'; sandbox",
			 "x-content-type-options:", "nosniff", NULL, NULL, NULL };
	char		    *body;
	size_t		     len;
	unsigned	     code;
	int		     rc;

	if (!wg->wg_done)
		return 0;
	body = wg->wg_body;
	len = wg->wg_len;
	code = wg->wg_code;
	wg->wg_body = NULL;
	c->rc_wgit = NULL;
	if (wg->wg_title != NULL) {
		rc = relay_html_message(c, wsi, code, wg->wg_title, body);
		free(body);
	} else if (wg->wg_kind == WG_RAW && code == HTTP_STATUS_OK) {
		if (wg->wg_disp != NULL) {
			raw_hdrs[4] = "content-disposition:";
			raw_hdrs[5] = wg->wg_disp;
		}
		rc = relay_http_respond_hdrs(c, wsi, code, wg->wg_type, body,
		    len, raw_hdrs);
	} else
		rc = relay_http_page(c, wsi, code, "text/html; charset=utf-8",
		    body, len, 0);
	relay_web_git_free(wg);
	return rc;
}

/*
 * URL text: s percent-encoded, '/' kept, so that a ref or a path reads
 * as itself in a link.
 */
static void
url_path(struct buf *b, const char *s)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
				 "RSTUVWXYZ0123456789-._~/";

	for (; *s; s++)
		if (strchr(ok, *s) != NULL)
			buf_addc(b, *s);
		else
			buf_printf(b, "%%%02X", (unsigned char)*s);
}

void
relay_web_git_link(struct buf *b, const char *npub, const char *d,
    const char *what, const char *ref, const char *path)
{
	buf_printf(b, "/%s/", npub);
	url_path(b, d);
	buf_printf(b, ".git/%s/", what);
	url_path(b, ref);
	if (path != NULL && *path) {
		buf_addc(b, '/');
		url_path(b, path);
	}
}

/* A link (an a element) in wg's repository; text is escaped. */
static void
alink(struct buf *b, const struct relay_webgit *wg, const char *what,
    const char *ref, const char *path, const char *text, size_t len)
{
	buf_adds(b, "<a href=\"");
	relay_web_git_link(b, wg->wg_npub, wg->wg_d, what, ref, path);
	buf_adds(b, "\">");
	relay_web_escape(b, text, len);
	buf_adds(b, "</a>");
}

/*
 * Splits spec (n bytes: the URL after /tree/ and the like) into a ref,
 * resolved from the repository's refs (r) into wg_oid, and a path
 * (stored in wg_ref and wg_path).  The longest leading run of segments
 * that names a branch, else a tag, wins; a first segment of GIT_OID_HEX
 * lowercase hex digits is a commit id.  0, or the HTTP status to answer
 * with *why (static text) set.
 */
static unsigned
resolve(struct relay_webgit *wg, const struct relay_refs *r, const char *spec,
    size_t n, const char **why)
{
	char	    name[RELAY_WEB_REF_MAX + 16];
	const char *oid = NULL, *p, *end;
	size_t	    k, i;

	if (memchr(spec, '\0', n) != NULL || n > RELAY_WEB_PATH_MAX) {
		*why = "The address holds a byte a ref or a path cannot hold.";
		return HTTP_STATUS_BAD_REQUEST;
	}
	if (n > 0 && spec[n - 1] == '/')
		n--;
	k = strcspn(spec, "/");
	if (k > n)
		k = n;
	if (k == GIT_OID_HEX && pkt_is_oid(spec, k)) {
		memcpy(wg->wg_oid, spec, GIT_OID_HEX);
		wg->wg_oid[GIT_OID_HEX] = '\0';
	} else {
		if (!relay_web_ref_ok(spec, k)) {
			*why = "That is not a valid branch or tag name (git "
			       "check-ref-format).";
			return HTTP_STATUS_BAD_REQUEST;
		}
		/* The longest run of segments that is a ref. */
		for (k = n; k > 0 && oid == NULL; k--) {
			if (k < n && spec[k] != '/')
				continue;
			if (!relay_web_ref_ok(spec, k) || k > RELAY_WEB_REF_MAX)
				continue;
			if (k == 4 && memcmp(spec, "HEAD", 4) == 0) {
				if (r->head != NULL &&
				    (oid = relay_refs_get(r, r->head)) != NULL)
					break;
				continue;
			}
			for (i = 0; i < 2 && oid == NULL; i++) {
				snprintf(name, sizeof(name), "%s%.*s",
				    i ? "refs/tags/" : "refs/heads/", (int)k,
				    spec);
				oid = relay_refs_get(r, name);
			}
			if (oid != NULL)
				break;
		}
		if (oid == NULL) {
			*why = "This repository has no such branch or tag.";
			return HTTP_STATUS_NOT_FOUND;
		}
		snprintf(wg->wg_oid, sizeof(wg->wg_oid), "%s", oid);
	}
	if ((wg->wg_ref = strndup(spec, k)) == NULL)
		fatal("resolve");
	end = spec + n;
	p = spec + k < end ? spec + k + 1 : end;
	n = (size_t)(end - p);
	if (!relay_web_path_ok(p, n)) {
		*why = "That is not a path in a repository: no empty, \".\" or "
		       "\"..\" part, no control byte.";
		return HTTP_STATUS_BAD_REQUEST;
	}
	if ((wg->wg_path = strndup(p, n)) == NULL)
		fatal("resolve");
	return 0;
}

/*
 * Runs "git --git-dir=<repo> args" with stdin from in (NULL: /dev/null),
 * its output through "head -c cap+1" into a new temporary file in
 * wg_out[slot].  0, or -1 (nothing left running).
 */
static int
wg_git(struct relay_webgit *wg, int slot, const char *const *args, FILE *in,
    size_t cap)
{
	char  *argv[24], gitdir[PATH_MAX + 16], capbuf[32];
	char  *head[] = { "head", "-c", capbuf, NULL };
	int    p[2], i, h = -1, g = -1;
	size_t n = 0;

	for (i = 0; i < WG_CHILDREN && wg->wg_pid[i] != -1; i++)
		;
	if (i + 1 >= WG_CHILDREN)
		return -1;
	if ((wg->wg_out[slot] = tmpfile()) == NULL) {
		log_warn("git page: tmpfile");
		return -1;
	}
	if (pipe(p) == -1) {
		log_warn("git page: pipe");
		return -1;
	}
	snprintf(capbuf, sizeof(capbuf), "%zu", cap + 1);
	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", wg->wg_repo);
	argv[n++] = "git";
	argv[n++] = gitdir;
	/* Names as they are (UTF-8), not as octal escapes in quotes. */
	argv[n++] = "-c";
	argv[n++] = "core.quotePath=false";
	for (; *args != NULL && n < 23; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	wg->wg_cap[slot] = cap;
	wg->wg_git_status[slot] = -1;
	if ((h = relay_child_spawn(head, p[0], fileno(wg->wg_out[slot]), NULL,
		 RELAY_WEB_GIT_TIMEOUT_S, wg_child_done, wg)) != -1)
		g = relay_child_spawn(argv, in ? fileno(in) : -1, p[1], NULL,
		    RELAY_WEB_GIT_TIMEOUT_S, wg_child_done, wg);
	close(p[0]);
	close(p[1]);
	if (g == -1) {
		if (h != -1)
			child_abandon(h);
		return -1;
	}
	wg->wg_pid[i] = h;
	wg->wg_is_git[i] = -1 - slot;
	wg->wg_pid[i + 1] = g;
	wg->wg_is_git[i + 1] = 1 + slot;
	return 0;
}

/* The output of slot, NUL-terminated; *cut 1 if it went past its cap. */
static char *
output(struct relay_webgit *wg, int slot, size_t *lenp, int *cut)
{
	FILE	   *f = wg->wg_out[slot];
	struct stat sb;
	char	   *s;
	size_t	    n, want;

	*lenp = 0;
	*cut = 0;
	if (f == NULL || fstat(fileno(f), &sb) == -1 || sb.st_size < 0)
		return NULL;
	want = (size_t)sb.st_size;
	if (want > wg->wg_cap[slot]) {
		want = wg->wg_cap[slot];
		*cut = 1;
	}
	if ((s = malloc(want + 1)) == NULL)
		fatal("git page");
	n = pread(fileno(f), s, want, 0) == (ssize_t)want ? want : 0;
	s[n] = '\0';
	*lenp = n;
	return s;
}

/* The page's answer: status, and the body (owned now). */
static void
answer(struct relay_webgit *wg, unsigned code, char *body, size_t len)
{
	wg->wg_code = code;
	wg->wg_body = body;
	wg->wg_len = len;
	wg->wg_done = 1;
	/* git is done: the place goes back before the page is sent. */
	relay_web_place_give(&wg->wg_place);
	if (wg->wg_conn != NULL)
		lws_callback_on_writable(wg->wg_wsi);
}

/*
 * An error: title (static) and text (escaped), with links to the files
 * and the repository, answered as relay_html_message() writes it.
 */
static void
failure(struct relay_webgit *wg, unsigned code, const char *title,
    const char *text)
{
	struct buf b = BUF_INIT;
	char	  *body;
	size_t	   len;

	relay_html_esc(&b, text);
	buf_adds(&b, "</p><p><a href=\"");
	relay_web_git_link(&b, wg->wg_npub, wg->wg_d, "tree", "HEAD", NULL);
	buf_printf(&b, "\">Files</a> &middot; <a href=\"/%s/", wg->wg_npub);
	url_path(&b, wg->wg_d);
	buf_adds(&b, ".git\">The repository</a>");
	body = buf_release(&b, &len);
	wg->wg_title = title;
	answer(wg, code, body, len);
}

/* 1 if slot's output went past its cap ("head" ended git early). */
static int
over_cap(struct relay_webgit *wg, int slot)
{
	struct stat sb;

	return wg->wg_out[slot] != NULL &&
	    fstat(fileno(wg->wg_out[slot]), &sb) == 0 &&
	    (size_t)sb.st_size > wg->wg_cap[slot];
}

/* The failure for a step whose git did not end well, or 0. */
static int
git_failed(struct relay_webgit *wg, int slot)
{
	if (wg->wg_killed) {
		failure(wg, HTTP_GATEWAY_TIMEOUT, "git took too long",
		    "git did not answer within the time a page may take.");
		return 1;
	}
	if (wg->wg_git_status[slot] != 0 && !over_cap(wg, slot)) {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
		    "This repository holds no such object.");
		return 1;
	}
	return 0;
}

static void
wg_child_done(pid_t pid, int status, int killed, void *arg)
{
	struct relay_webgit *wg = arg;
	int		     i, left = 0;

	for (i = 0; i < WG_CHILDREN; i++) {
		if (wg->wg_pid[i] == pid) {
			wg->wg_pid[i] = -1;
			if (wg->wg_is_git[i] > 0)
				wg->wg_git_status[wg->wg_is_git[i] - 1] =
				    status;
			if (killed)
				wg->wg_killed = 1;
		}
		if (wg->wg_pid[i] != -1)
			left++;
	}
	if (left > 0)
		return;
	wg->wg_step++;
	wg_next(wg);
}

/* The header of a page of wg's repository, at ref when not NULL. */
static void
page_head(struct buf *b, const struct relay_webgit *wg, const char *title)
{
	char t[512];

	snprintf(t, sizeof(t), "%s \xc2\xb7 %s \xc2\xb7 %s", title, wg->wg_d,
	    relayd->cfg.relay_name);
	relay_html_open(b, t, relayd->cfg.relay_name);
	buf_printf(b, "<p><a href=\"/%s/", wg->wg_npub);
	url_path(b, wg->wg_d);
	buf_adds(b, ".git\">&larr; ");
	relay_html_esc(b, wg->wg_d);
	buf_adds(b, "</a></p></div></div></header>\n<div class=\"w\">\n");
}

/* "d / ref / a / b" with each part a link to its tree. */
static void
crumbs(struct buf *b, const struct relay_webgit *wg)
{
	const char *p = wg->wg_path, *s;
	char	   *part;

	buf_adds(b, "<h2 class=\"title\" id=\"crumbs\">");
	alink(b, wg, "tree", wg->wg_ref, NULL, wg->wg_d, strlen(wg->wg_d));
	buf_adds(b, " <span class=\"tag\">");
	relay_html_esc(b, wg->wg_ref);
	buf_adds(b, "</span>");
	while (*p) {
		s = p + strcspn(p, "/");
		if ((part = strndup(wg->wg_path, (size_t)(s - wg->wg_path))) ==
		    NULL)
			fatal("crumbs");
		buf_adds(b, " / ");
		alink(b, wg, "tree", wg->wg_ref, part, p, (size_t)(s - p));
		free(part);
		p = *s ? s + 1 : s;
	}
	buf_adds(b, "</h2>\n");
}

static void
finish(struct relay_webgit *wg, struct buf *b)
{
	char  *body;
	size_t len;

	relay_html_close(b);
	body = buf_release(b, &len);
	answer(wg, HTTP_STATUS_OK, body, len);
}

/* A size for people. */
static void
size_text(struct buf *b, unsigned long long n)
{
	if (n < 1024)
		buf_printf(b, "%llu B", n);
	else if (n < 1024 * 1024)
		buf_printf(b, "%.1f KiB", (double)n / 1024);
	else
		buf_printf(b, "%.1f MiB", (double)n / (1024 * 1024));
}

/* One entry of "git ls-tree -z [-l]" output. */
struct tree_entry {
	const char *te_mode, *te_type, *te_oid, *te_size, *te_name;
};

/*
 * Takes the entry at *pp apart (in place) and moves *pp past it.  0, or
 * -1 when none is left whole (git's output may be cut in one).
 */
static int
tree_entry(char **pp, char *e, struct tree_entry *te)
{
	char *p = *pp, *nul, *tab, *sp;

	for (;;) {
		if (p >= e || (nul = memchr(p, '\0', (size_t)(e - p))) == NULL)
			return -1;
		*pp = nul + 1;
		tab = memchr(p, '\t', (size_t)(nul - p));
		te->te_mode = p;
		if (tab != NULL && (sp = memchr(p, ' ', (size_t)(tab - p))) &&
		    (*sp = '\0', te->te_type = sp + 1,
			sp = memchr(sp + 1, ' ', (size_t)(tab - sp - 1))) &&
		    tab - (sp + 1) >= GIT_OID_HEX) {
			*sp = '\0';
			te->te_oid = sp + 1;
			te->te_size = sp + 1 + GIT_OID_HEX;
			*tab = '\0';
			te->te_name = tab + 1;
			if (*te->te_size == ' ') {
				*(char *)te->te_size = '\0';
				te->te_size += 1 + strspn(te->te_size + 1, " ");
			}
			return 0;
		}
		p = nul + 1;
	}
}

/* "git ls-tree -z [-l]" output as the table of a directory. */
static void
render_tree(struct relay_webgit *wg)
{
	struct buf	   b = BUF_INIT;
	struct tree_entry *te = NULL;
	char		  *s, *p, *e;
	size_t		   len, n = 0, cap = 0, shown = 0, i, pl;
	int		   cut, dirs, dir;

	s = output(wg, 1, &len, &cut);
	pl = strlen(wg->wg_path);
	for (p = s, e = s + len; s != NULL;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			if ((te = reallocarray(te, cap, sizeof(*te))) == NULL)
				fatal("render_tree");
		}
		if (tree_entry(&p, e, &te[n]) == -1)
			break;
		n++;
	}
	page_head(&b, wg, *wg->wg_path ? wg->wg_path : "Files");
	crumbs(&b, wg);
	buf_adds(&b, "<p class=\"d\">Commit ");
	alink(&b, wg, "commit", wg->wg_oid, NULL, wg->wg_oid, 12);
	buf_adds(&b,
	    "</p>\n<table id=\"tree\"><thead><tr><th>Name</th><th class="
	    "\"n\">Size</th><th class=\"n\">Mode</th></tr></thead><tbody>\n");
	if (pl > 0) {
		/* The parent directory. */
		e = strrchr(wg->wg_path, '/');
		buf_adds(&b, "<tr><td><a href=\"");
		relay_web_git_link(&b, wg->wg_npub, wg->wg_d, "tree",
		    wg->wg_ref, NULL);
		if (e != NULL) {
			buf_addc(&b, '/');
			*e = '\0';
			url_path(&b, wg->wg_path);
			*e = '/';
		}
		buf_adds(&b, "\">..</a></td><td></td><td></td></tr>\n");
	}
	/* Directories first, then the rest, each in git's order. */
	for (dirs = 1; dirs >= 0; dirs--)
		for (i = 0; i < n && shown < RELAY_WEB_TREE_MAX &&
		     b.b_len < RELAY_DIFF_HTML_MAX;
		     i++) {
			dir = strcmp(te[i].te_type, "tree") == 0;
			if (dir != dirs)
				continue;
			shown++;
			buf_adds(&b, "<tr><td>");
			if (strcmp(te[i].te_type, "commit") == 0) {
				/* A submodule: its commit is elsewhere. */
				relay_web_escape(&b, te[i].te_name,
				    strlen(te[i].te_name));
				buf_printf(&b,
				    " <span class=\"pk\">submodule @ %.12s"
				    "</span>",
				    te[i].te_oid);
			} else {
				buf_adds(&b, "<a href=\"");
				relay_web_git_link(&b, wg->wg_npub, wg->wg_d,
				    dir ? "tree" : "blob", wg->wg_ref,
				    wg->wg_path);
				buf_addc(&b, '/');
				url_path(&b, te[i].te_name);
				buf_adds(&b, "\">");
				relay_web_escape(&b, te[i].te_name,
				    strlen(te[i].te_name));
				buf_adds(&b, dir ? "</a>/" : "</a>");
			}
			buf_adds(&b, "</td><td class=\"n\">");
			if (!dir && *te[i].te_size >= '0' &&
			    *te[i].te_size <= '9')
				size_text(&b,
				    strtoull(te[i].te_size, NULL, 10));
			buf_adds(&b, "</td><td class=\"n pk\">");
			relay_web_escape(&b, te[i].te_mode,
			    strnlen(te[i].te_mode, 8));
			buf_adds(&b, "</td></tr>\n");
		}
	if (n == 0)
		buf_adds(&b,
		    "<tr><td colspan=\"3\" class=\"d\">An empty "
		    "directory.</td></tr>\n");
	buf_adds(&b, "</tbody></table>\n");
	if (cut || n > shown)
		buf_printf(&b,
		    "<p class=\"d\" id=\"cut\">The listing is cut here: %zu "
		    "entries shown%s.</p>\n",
		    shown, cut ? ", of a directory too large to list" : "");
	free(te);
	free(s);
	finish(wg, &b);
}

/* The file's text with line numbers, or why it is not shown. */
static void
render_blob(struct relay_webgit *wg, unsigned long long size)
{
	struct buf  b = BUF_INIT;
	char	   *s;
	const char *p, *e, *nl, *base;
	size_t	    len, n = 0;
	int	    cut;

	s = output(wg, 1, &len, &cut);
	base = strrchr(wg->wg_path, '/');
	base = base ? base + 1 : wg->wg_path;
	page_head(&b, wg, base);
	crumbs(&b, wg);
	buf_adds(&b, "<p class=\"d\">");
	size_text(&b, size);
	buf_adds(&b, " &middot; commit ");
	alink(&b, wg, "commit", wg->wg_oid, NULL, wg->wg_oid, 12);
	buf_adds(&b, " &middot; <a id=\"raw\" href=\"");
	relay_web_git_link(&b, wg->wg_npub, wg->wg_d, "raw", wg->wg_ref,
	    wg->wg_path);
	buf_adds(&b, "\">Raw</a></p>\n");
	if (relay_web_is_binary(s, len)) {
		buf_adds(&b,
		    "<p class=\"card\" id=\"binary\">A binary file: "
		    "not shown. Use the raw link to download it.</p>\n");
		free(s);
		finish(wg, &b);
		return;
	}
	buf_adds(&b, "<div class=\"diff\"><table id=\"code\">\n");
	for (p = s, e = s + len; p < e && n < RELAY_WEB_BLOB_LINES; n++) {
		if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL)
			nl = e;
		buf_printf(&b,
		    "<tr id=\"L%zu\"><td class=\"ln\"><a href=\"#L%zu\">%zu"
		    "</a></td><td>",
		    n + 1, n + 1, n + 1);
		relay_web_code_escape(&b, p, (size_t)(nl - p));
		buf_adds(&b, "</td></tr>\n");
		p = nl + 1;
	}
	buf_adds(&b, "</table></div>\n");
	if (cut || p < e)
		buf_printf(&b,
		    "<p class=\"d\" id=\"cut\">The file is cut here, after "
		    "%zu lines; the raw link has all of it.</p>\n",
		    n);
	free(s);
	relay_web_diff_style(&b);
	finish(wg, &b);
}

/* The file's bytes with a content type that cannot run. */
static void
render_raw(struct relay_webgit *wg)
{
	struct buf  d = BUF_INIT;
	const char *base, *p;
	char	   *s;
	size_t	    len;
	int	    cut;

	s = output(wg, 1, &len, &cut);
	if (s == NULL)
		s = strdup("");
	if (relay_web_is_binary(s, len)) {
		wg->wg_type = strdup("application/octet-stream");
		base = strrchr(wg->wg_path, '/');
		base = base ? base + 1 : wg->wg_path;
		/* RFC 6266: a plain token name, the rest replaced. */
		buf_adds(&d, "attachment; filename=\"");
		for (p = base; *p && d.b_len < 200; p++)
			buf_addc(&d,
			    strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
				   "RSTUVWXYZ0123456789-._+",
				*p) ?
				*p :
				'_');
		buf_addc(&d, '"');
		wg->wg_disp = buf_release(&d, NULL);
	} else
		wg->wg_type = strdup("text/plain; charset=utf-8");
	if (wg->wg_type == NULL)
		fatal("render_raw");
	answer(wg, HTTP_STATUS_OK, s, len);
}

/* The fields of the commit header a commit page's "git show" writes. */
enum {
	CF_HASH,
	CF_PARENTS,
	CF_AUTHOR,
	CF_EMAIL,
	CF_AT,
	CF_COMMITTER,
	CF_CAT,
	CF_BODY,
	CF_N
};

/* A person and a time. */
static void
who_when(struct buf *b, const char *name, const char *email, const char *at)
{
	relay_web_escape(b, name, relay_html_cut(name, RELAY_WEB_NAME_MAX));
	if (email != NULL && *email) {
		buf_adds(b, " <span class=\"pk\">&lt;");
		relay_web_escape(b, email,
		    relay_html_cut(email, RELAY_WEB_NAME_MAX));
		buf_adds(b, "&gt;</span>");
	}
	buf_adds(b, " &middot; ");
	relay_html_date(b, strtoll(at, NULL, 10));
}

static void
render_commit(struct relay_webgit *wg)
{
	struct buf b = BUF_INIT;
	char	  *s, *f[CF_N], *p, *e, *diff, *nl, *par, *save;
	size_t	   len, i;
	int	   cut;

	s = output(wg, 1, &len, &cut);
	e = s + len;
	for (i = 0, p = s; i < CF_N; i++) {
		f[i] = p;
		if ((p = memchr(p, '\0', (size_t)(e - p))) == NULL) {
			free(s);
			failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
			    "This repository holds no such commit.");
			return;
		}
		p++;
	}
	diff = p;
	nl = f[CF_BODY] + strcspn(f[CF_BODY], "\n");
	page_head(&b, wg, "Commit");
	buf_adds(&b, "<h2 class=\"title\" id=\"subject\">");
	relay_web_escape(&b, f[CF_BODY],
	    (size_t)(nl - f[CF_BODY]) < RELAY_WEB_DESC_MAX ?
		(size_t)(nl - f[CF_BODY]) :
		RELAY_WEB_DESC_MAX);
	buf_adds(&b, "</h2>\n");
	if (*nl) {
		buf_adds(&b, "<pre class=\"readme card\" id=\"message\">");
		len = strlen(nl + 1);
		relay_web_code_escape(&b, nl + 1,
		    len < RELAY_WEB_MESSAGE_MAX ? len : RELAY_WEB_MESSAGE_MAX);
		if (len > RELAY_WEB_MESSAGE_MAX)
			buf_adds(&b, "\n<span class=\"pk\">(cut here)</span>");
		buf_adds(&b, "</pre>\n");
	}
	buf_adds(&b,
	    "<div class=\"card\"><dl>\n<dt>Commit</dt><dd><code "
	    "id=\"oid\">");
	relay_html_esc(&b, f[CF_HASH]);
	buf_adds(&b, "</code></dd>\n<dt>Author</dt><dd id=\"author\">");
	who_when(&b, f[CF_AUTHOR], f[CF_EMAIL], f[CF_AT]);
	if (strcmp(f[CF_AUTHOR], f[CF_COMMITTER]) != 0 ||
	    strcmp(f[CF_AT], f[CF_CAT]) != 0) {
		buf_adds(&b, "</dd>\n<dt>Committer</dt><dd>");
		who_when(&b, f[CF_COMMITTER], NULL, f[CF_CAT]);
	}
	buf_adds(&b, "</dd>\n<dt>Parents</dt><dd id=\"parents\">");
	for (i = 0, par = strtok_r(f[CF_PARENTS], " ", &save); par != NULL;
	     par = strtok_r(NULL, " ", &save), i++) {
		if (!pkt_is_oid(par, strlen(par)))
			continue;
		if (i)
			buf_adds(&b, " ");
		buf_adds(&b, "<code>");
		alink(&b, wg, "commit", par, NULL, par, 12);
		buf_adds(&b, "</code>");
	}
	if (i == 0)
		buf_adds(&b, "none (the first commit)");
	buf_adds(&b, "</dd>\n<dt>Files</dt><dd>");
	if (pkt_is_oid(f[CF_HASH], strlen(f[CF_HASH])))
		alink(&b, wg, "tree", f[CF_HASH], NULL, "Browse the tree", 15);
	buf_adds(&b, "</dd>\n</dl></div>\n");
	relay_web_diff(&b, diff, (size_t)(e - diff), "f", NULL);
	if (cut)
		buf_printf(&b,
		    "<p class=\"d\" id=\"cut\">git's output is cut at %zu "
		    "bytes.</p>\n",
		    wg->wg_cap[1]);
	free(s);
	finish(wg, &b);
}

/* A PR's commits, from "git log" output, and its diff. */
static void
render_pr(struct relay_webgit *wg)
{
	struct buf b = BUF_INIT;
	char	  *log, *diff, *rec, *save, *f[4], *q;
	size_t	   loglen, difflen, i;
	int	   cut0, cut1, n = 0;

	log = output(wg, 0, &loglen, &cut0);
	diff = output(wg, 1, &difflen, &cut1);
	page_head(&b, wg, "Pull request");
	buf_printf(&b,
	    "<h2 class=\"title\">Pull request <code>%.12s</code></h2>\n"
	    "<div class=\"card\"><dl>\n<dt>Tip</dt><dd><code id=\"tip\">",
	    wg->wg_pr);
	alink(&b, wg, "commit", wg->wg_oid, NULL, wg->wg_oid, GIT_OID_HEX);
	buf_adds(&b, "</code> <span class=\"pk\">refs/nostr/");
	buf_adds(&b, wg->wg_pr);
	buf_adds(&b, "</span></dd>\n<dt>Base</dt><dd id=\"base\">");
	alink(&b, wg, "tree", wg->wg_base_name, NULL, wg->wg_base_name,
	    strlen(wg->wg_base_name));
	buf_adds(&b, " at <code>");
	alink(&b, wg, "commit", wg->wg_base, NULL, wg->wg_base, 12);
	buf_adds(&b, "</code>; merge base <code>");
	alink(&b, wg, "commit", wg->wg_mb, NULL, wg->wg_mb, 12);
	buf_adds(&b,
	    "</code></dd>\n</dl></div>\n<h2>Commits</h2>\n<table "
	    "id=\"commits\"><thead><tr><th>Commit</th><th>Message</th>"
	    "<th>Author</th><th class=\"n\">Date</th></tr></thead>"
	    "<tbody>\n");
	for (rec = log ? strtok_r(log, "\x1e", &save) : NULL; rec != NULL;
	     rec = strtok_r(NULL, "\x1e", &save)) {
		rec += strspn(rec, "\n");
		for (i = 0, q = rec; i < 4; i++) {
			f[i] = q;
			if (q != NULL && (q = strchr(q, '\x1f')) != NULL)
				*q++ = '\0';
		}
		if (f[3] == NULL || !pkt_is_oid(f[0], strlen(f[0])))
			continue;
		buf_adds(&b, "<tr><td><code>");
		alink(&b, wg, "commit", f[0], NULL, f[0], 12);
		buf_adds(&b, "</code></td><td>");
		relay_web_escape(&b, f[3],
		    relay_html_cut(f[3], RELAY_WEB_DESC_MAX));
		buf_adds(&b, "</td><td>");
		relay_web_escape(&b, f[1],
		    relay_html_cut(f[1], RELAY_WEB_NAME_MAX));
		buf_adds(&b, "</td><td class=\"n\">");
		relay_html_date(&b, strtoll(f[2], NULL, 10));
		buf_adds(&b, "</td></tr>\n");
		n++;
	}
	if (n == 0)
		buf_adds(&b,
		    "<tr><td colspan=\"4\" class=\"d\">No commits "
		    "beyond the base.</td></tr>\n");
	buf_adds(&b, "</tbody></table>\n");
	if (cut0 || n >= atoi(RELAY_WEB_PR_COMMITS))
		buf_printf(&b, "<p class=\"d\">The first %d commits.</p>\n", n);
	buf_adds(&b, "<h2>Changes</h2>\n");
	relay_web_diff(&b, diff ? diff : "", difflen, "f", NULL);
	if (cut1)
		buf_printf(&b,
		    "<p class=\"d\" id=\"cut\">git's output is cut at %zu "
		    "bytes.</p>\n",
		    wg->wg_cap[1]);
	free(log);
	free(diff);
	finish(wg, &b);
}

/*
 * From "git cat-file --batch-check" output: the type and size of line
 * n (0-based) into type and *size, the object into oid.  0 or -1.
 */
static int
check_line(struct relay_webgit *wg, int n, char oid[GIT_OID_HEX + 1],
    char type[16], unsigned long long *size)
{
	char  *s, *line, *save;
	size_t len;
	int    cut, rc = -1;

	if ((s = output(wg, 1, &len, &cut)) == NULL)
		return -1;
	for (line = strtok_r(s, "\n", &save); line != NULL && n > 0; n--)
		line = strtok_r(NULL, "\n", &save);
	if (line != NULL &&
	    sscanf(line, "%40s %15s %llu", oid, type, size) == 3 &&
	    pkt_is_oid(oid, strlen(oid)))
		rc = 0;
	free(s);
	return rc;
}

/*
 * A tree or file page's first step: what the path is at the commit
 * ("git cat-file --batch-check" of the commit and of <commit>:<path>).
 * 0 when git runs, or -1 (it cannot).
 */
static int
path_check(struct relay_webgit *wg)
{
	const char *args[] = { "cat-file", "--batch-check", NULL };
	FILE	   *in;
	int	    rc;

	if ((in = tmpfile()) == NULL)
		return -1;
	fprintf(in, "%s^{commit}\n%s^{commit}:%s\n", wg->wg_oid, wg->wg_oid,
	    wg->wg_path);
	fflush(in);
	rewind(in);
	rc = wg_git(wg, 1, args, in, 64 * 1024);
	fclose(in);
	return rc;
}

/*
 * A tree or file page's second step: from path_check()'s answer, the
 * directory listed ("git ls-tree") or the file read ("git cat-file
 * blob"), or the failure that answers the page.  0 when git runs or the
 * page is answered, or -1 (git cannot run).
 */
static int
path_read(struct relay_webgit *wg)
{
	char		   oid[GIT_OID_HEX + 1], type[16];
	const char	  *args[8];
	unsigned long long size = 0;
	size_t		   len;

	if (check_line(wg, 0, oid, type, &size) == -1 ||
	    strcmp(type, "commit") != 0) {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
		    "No commit of this repository has this name.");
		return 0;
	}
	memcpy(wg->wg_oid, oid, sizeof(oid));
	if (check_line(wg, 1, oid, type, &size) == -1) {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
		    "There is no such file or directory at this commit.");
		return 0;
	}
	fclose(wg->wg_out[1]);
	wg->wg_out[1] = NULL;
	args[0] = strcmp(type, "tree") == 0 ? "ls-tree" : "cat-file";
	if (wg->wg_kind == WG_RAW && strcmp(type, "blob") != 0) {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not a file",
		    "Only files have raw contents.");
		return 0;
	}
	if (strcmp(type, "tree") == 0) {
		wg->wg_kind = WG_TREE;
		/* Sizes cost a read of each object: only for a directory
		 * of ordinary size. */
		args[1] = "-z";
		args[2] = size <= RELAY_WEB_TREE_SIZES ? "-l" : "-z";
		args[3] = oid;
		args[4] = NULL;
		len = RELAY_WEB_GIT_OUT_MAX;
	} else if (strcmp(type, "blob") == 0) {
		if (wg->wg_kind == WG_RAW && size > RELAY_WEB_RAW_MAX) {
			failure(wg, HTTP_STATUS_FORBIDDEN, "Too large",
			    "This file is larger than this server sends over "
			    "the web; clone the repository.");
			return 0;
		}
		args[1] = "blob";
		args[2] = oid;
		args[3] = NULL;
		len = wg->wg_kind == WG_RAW ? RELAY_WEB_RAW_MAX :
					      RELAY_WEB_BLOB_SHOW;
	} else {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
		    "There is no file or directory here.");
		return 0;
	}
	wg->wg_size = size;
	if (wg_git(wg, 1, args, NULL, len) == -1)
		return -1;
	if (strcmp(type, "blob") == 0 && wg->wg_kind == WG_TREE)
		wg->wg_step = 10; /* a file */
	return 0;
}

/* A commit page's one step: "git show" of the commit.  0 or -1. */
static int
commit_show(struct relay_webgit *wg)
{
	char	    spec[GIT_OID_HEX + 16];
	const char *args[] = { "show", "--no-color", "--no-ext-diff",
		"--no-textconv", "-M", "--diff-merges=first-parent",
		"--format=%H%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ct%x00%B%x00",
		"-p", spec, "--", NULL };

	snprintf(spec, sizeof(spec), "%s^{commit}", wg->wg_oid);
	return wg_git(wg, 1, args, NULL, RELAY_WEB_GIT_OUT_MAX);
}

/* A PR page's first step: the merge base of its tip and the base. */
static int
pr_merge_base(struct relay_webgit *wg)
{
	const char *args[] = { "merge-base", wg->wg_base, wg->wg_oid, NULL };

	return wg_git(wg, 1, args, NULL, 4096);
}

/*
 * A PR page's second step: from the merge base, the PR's commits ("git
 * log") and its diff, or the failure when there is no common history.
 * 0 when git runs or the page is answered, or -1.
 */
static int
pr_log_diff(struct relay_webgit *wg)
{
	char	    range[2 * GIT_OID_HEX + 3], *s;
	const char *log_args[] = { "log", "--no-color", "-n",
		RELAY_WEB_PR_COMMITS, "--format=%H%x1f%an%x1f%at%x1f%s%x1e",
		range, "--", NULL };
	const char *diff_args[] = { "diff", "--no-color", "--no-ext-diff",
		"--no-textconv", "-M", wg->wg_mb, wg->wg_oid, "--", NULL };
	size_t	    len;
	int	    cut;

	s = output(wg, 1, &len, &cut);
	if (s == NULL || len < GIT_OID_HEX || !pkt_is_oid(s, GIT_OID_HEX)) {
		free(s);
		failure(wg, HTTP_STATUS_NOT_FOUND, "No common history",
		    "This pull request shares no commit with the default "
		    "branch.");
		return 0;
	}
	memcpy(wg->wg_mb, s, GIT_OID_HEX);
	free(s);
	fclose(wg->wg_out[1]);
	wg->wg_out[1] = NULL;
	snprintf(range, sizeof(range), "%s..%s", wg->wg_mb, wg->wg_oid);
	if (wg_git(wg, 0, log_args, NULL, RELAY_WEB_LOG_MAX) == -1)
		return -1;
	return wg_git(wg, 1, diff_args, NULL, RELAY_WEB_GIT_OUT_MAX);
}

/* The step after the last: what wg_kind and wg_step say comes next. */
static void
wg_next(struct relay_webgit *wg)
{
	int rc = -1;

	if (wg->wg_done)
		return;
	if (wg->wg_conn == NULL) {
		relay_web_git_free(wg);
		return;
	}
	/* merge-base fails when there is no common history: said below. */
	if (wg->wg_step > 0 &&
	    !(wg->wg_kind == WG_PR && wg->wg_step == 1 && !wg->wg_killed) &&
	    git_failed(wg, 1))
		return;
	switch (wg->wg_kind) {
	case WG_TREE:
	case WG_RAW:
		if (wg->wg_step == 0)
			rc = path_check(wg);
		else if (wg->wg_step == 1)
			rc = path_read(wg);
		else {
			if (wg->wg_kind == WG_RAW)
				render_raw(wg);
			else if (wg->wg_step == 11)
				render_blob(wg, wg->wg_size);
			else
				render_tree(wg);
			rc = 0;
		}
		break;
	case WG_COMMIT:
		if (wg->wg_step == 0)
			rc = commit_show(wg);
		else {
			render_commit(wg);
			rc = 0;
		}
		break;
	case WG_PR:
		if (wg->wg_step == 0)
			rc = pr_merge_base(wg);
		else if (wg->wg_step == 1)
			rc = pr_log_diff(wg);
		else {
			if (!git_failed(wg, 0))
				render_pr(wg);
			rc = 0;
		}
		break;
	}
	if (rc == -1)
		failure(wg, HTTP_STATUS_INTERNAL_SERVER_ERROR, "Cannot run git",
		    "This server could not run git for this page.");
}

/*
 * The page kind of rest (n bytes after /<npub>/<d>.git), with *skip set
 * to the length of its prefix, or -1 (not a git page).  "/tree" alone
 * is the tree at HEAD.
 */
static int
route(const char *rest, size_t n, size_t *skip)
{
	static const struct {
		const char  *prefix;
		enum wg_kind kind;
	} routes[] = { { "/tree/", WG_TREE }, { "/blob/", WG_TREE },
		{ "/raw/", WG_RAW }, { "/commit/", WG_COMMIT },
		{ "/pr/", WG_PR } };
	size_t i, k;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		k = strlen(routes[i].prefix);
		if (n >= k && memcmp(rest, routes[i].prefix, k) == 0) {
			*skip = k;
			return (int)routes[i].kind;
		}
	}
	return -1;
}

/*
 * A PR page's spec (rest, n bytes: "<event id>[/diff]") against the
 * repository's refs r: its tip (refs/nostr/<id>) into wg_oid and the
 * default branch into wg_base and wg_base_name.  0, or the HTTP status
 * to answer with *why (static text) set.
 */
static unsigned
pr_resolve(struct relay_webgit *wg, const struct relay_refs *r,
    const char *rest, size_t n, const char **why)
{
	const char *tip, *base;
	char	    ref[80];

	if (!(n == EVENT_ID_HEX_LEN ||
		(n == EVENT_ID_HEX_LEN + 5 &&
		    memcmp(rest + EVENT_ID_HEX_LEN, "/diff", 5) == 0)) ||
	    strspn(rest, "0123456789abcdef") < 64) {
		*why = "A pull request is named by its event id: 64 "
		       "lowercase hex digits.";
		return HTTP_STATUS_BAD_REQUEST;
	}
	memcpy(wg->wg_pr, rest, EVENT_ID_HEX_LEN);
	wg->wg_pr[EVENT_ID_HEX_LEN] = '\0';
	snprintf(ref, sizeof(ref), "refs/nostr/%s", wg->wg_pr);
	tip = relay_refs_get(r, ref);
	base = r->head ? relay_refs_get(r, r->head) : NULL;
	if (tip == NULL) {
		*why = "This repository holds no commits for this pull "
		       "request (no refs/nostr/<id>).";
		return HTTP_STATUS_NOT_FOUND;
	}
	if (base == NULL) {
		*why = "This repository has no default branch to compare "
		       "with.";
		return HTTP_STATUS_NOT_FOUND;
	}
	snprintf(wg->wg_oid, sizeof(wg->wg_oid), "%s", tip);
	snprintf(wg->wg_base, sizeof(wg->wg_base), "%s", base);
	wg->wg_base_name = strdup(
	    r->head + (strncmp(r->head, "refs/heads/", 11) == 0 ? 11 : 0));
	if (wg->wg_base_name == NULL)
		fatal("relay_web_git");
	return 0;
}

int
relay_web_git(struct relay_conn *c, struct lws *wsi, int get, const char *npub,
    const uint8_t owner[PUBKEY_LEN], const char *d, const char *rest, size_t n)
{
	struct relay_webgit   *wg;
	struct relay_refs      r;
	struct relay_web_place place;
	const char	      *why = NULL;
	size_t		       i, k = 0;
	unsigned	       code = 0;
	int		       kind, rc;

	if ((n == 5 || n == 6) && memcmp(rest, "/tree/", n) == 0) {
		/* The tree at HEAD, as the repository page's link has it. */
		kind = WG_TREE;
		rest = "HEAD";
		n = 4;
	} else if ((kind = route(rest, n, &k)) == -1)
		return RELAY_WEB_NOT_MINE;
	else {
		rest += k;
		n -= k;
	}
	if (!get)
		return relay_html_message(c, wsi,
		    HTTP_STATUS_METHOD_NOT_ALLOWED, "Method not allowed",
		    "These pages answer GET and HEAD.");
	if (!relay_web_place_take(c, wsi, relay_purg_hosted(owner, d), owner, d,
		&place, &rc))
		return rc;
	if ((wg = calloc(1, sizeof(*wg))) == NULL ||
	    (wg->wg_d = strdup(d)) == NULL)
		fatal("relay_web_git");
	for (i = 0; i < WG_CHILDREN; i++)
		wg->wg_pid[i] = -1;
	wg->wg_conn = c;
	wg->wg_wsi = wsi;
	wg->wg_kind = (enum wg_kind)kind;
	wg->wg_place = place;
	memcpy(wg->wg_owner, owner, PUBKEY_LEN);
	snprintf(wg->wg_npub, sizeof(wg->wg_npub), "%s", npub);
	relay_repo_path(owner, d, wg->wg_repo, sizeof(wg->wg_repo));
	c->rc_kind = CONN_HTTP;
	c->rc_wgit = wg;
	if (relay_repo_read_refs(wg->wg_repo, NULL, &r) == -1) {
		failure(wg, HTTP_STATUS_NOT_FOUND, "Not found",
		    "This repository has no git data yet.");
		return 0;
	}
	if (wg->wg_kind == WG_PR)
		code = pr_resolve(wg, &r, rest, n, &why);
	else {
		code = resolve(wg, &r, rest, n, &why);
		if (code == 0 && wg->wg_kind == WG_COMMIT && *wg->wg_path) {
			code = HTTP_STATUS_NOT_FOUND;
			why = "A commit page takes a commit id or a branch or "
			      "tag name, and no path.";
		}
	}
	relay_refs_free(&r);
	if (code != 0) {
		failure(wg, code,
		    code == HTTP_STATUS_BAD_REQUEST ? "Bad address" :
						      "Not found",
		    why);
		return 0;
	}
	wg_next(wg);
	return 0;
}
