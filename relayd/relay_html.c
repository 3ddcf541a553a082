/*
 * relay_html.c: the HTML every page of relayd's web front shares, run in
 * relayd's loop: escaping for text, attributes and URLs, dates, people
 * (kind 0 names beside their npubs), the page's head and foot with its
 * one inline stylesheet, the short message pages (404 and the like),
 * Markdown through cmark, and the deadline of a page's store reads.
 *
 * Everything that came from the network goes out through
 * relay_web_escape() or cmark, whose default drops raw HTML and unsafe
 * link schemes; images become links, so that a page loads nothing from
 * elsewhere.  The store is read through relayd's own connection with a
 * deadline: a progress handler interrupts a query that runs over.
 */
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cmark.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "log.h"
#include "nip19.h"
#include "relayd.h"

#define CSS \
	"body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI'," \
	"Roboto,sans-serif;color:#1d2428;background:#f6f7f5}" \
	"a{color:#1f6f5c;text-decoration:none}a:hover{text-decoration:" \
	"underline}" \
	"header{background:#1f6f5c;color:#fff;padding:18px 0}" \
	"header a{color:#fff}" \
	".w{max-width:980px;margin:0 auto;padding:0 20px}" \
	"header .w{display:flex;align-items:center;gap:14px}" \
	"header img{width:40px;height:40px;background:#fff;border-radius:" \
	"10px;padding:3px}" \
	"h1{font-size:24px;margin:0;font-weight:600}" \
	"h2{font-size:17px;margin:28px 0 10px}" \
	"header p{margin:2px 0 0;opacity:.85}" \
	"code,pre{font:13px/1.45 ui-monospace,'DejaVu Sans Mono',Menlo," \
	"monospace}" \
	"code{background:#e9eeec;padding:1px 5px;border-radius:4px;" \
	"overflow-wrap:anywhere}" \
	"h2.title{font-size:22px;margin:22px 0 4px}" \
	"code.u{display:inline-block;max-width:100%;overflow-x:auto;" \
	"white-space:nowrap;vertical-align:bottom}" \
	".card{background:#fff;border:1px solid #dde3e0;border-radius:8px;" \
	"padding:14px 18px;margin:16px 0}" \
	"dl{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;" \
	"margin:0}dt{color:#5b6a70}dd{margin:0;min-width:0}" \
	"table{width:100%;border-collapse:collapse;background:#fff;" \
	"border:1px solid #dde3e0;border-radius:8px;overflow:hidden}" \
	"th,td{text-align:left;padding:9px 12px;border-bottom:1px solid " \
	"#edf0ee;vertical-align:top}" \
	"th{background:#eef2f0;font-size:13px;color:#4a585e;font-weight:" \
	"600}" \
	"td.n,th.n{text-align:right;white-space:nowrap}" \
	".d{color:#5b6a70;font-size:13.5px}" \
	".pk{color:#7a878c;font-size:12.5px}" \
	"form{display:flex;gap:8px;margin:8px 0 14px}" \
	"input[type=search]{flex:1;padding:8px 10px;border:1px solid " \
	"#c6cfcb;border-radius:6px;font:inherit}" \
	"button{padding:8px 16px;border:0;border-radius:6px;background:" \
	"#1f6f5c;color:#fff;font:inherit;cursor:pointer}" \
	".pg{display:flex;gap:14px;justify-content:space-between;margin:" \
	"12px 0}" \
	".tag{display:inline-block;font-size:12px;padding:0 7px;border-" \
	"radius:10px;background:#e2ece8;color:#1f6f5c;margin-right:4px}" \
	".st{font-size:12px;padding:1px 8px;border-radius:10px;color:#fff}" \
	".s1630{background:#2e8b57}.s1631{background:#6a4fb3}" \
	".s1632{background:#8b2e2e}.s1633{background:#7a878c}" \
	".post{padding:10px 16px}.post .ph{color:#5b6a70;font-size:13.5px;" \
	"border-bottom:1px solid #edf0ee;padding-bottom:6px;margin-bottom:" \
	"6px}.who b{color:#1d2428;font-weight:600}.ago{color:#7a878c}" \
	".post:target{border-color:#1f6f5c}.rx{margin:6px 0 0}" \
	"pre.diff{white-space:pre-wrap;word-wrap:break-word;margin:0;" \
	"max-height:none}ul.hist{list-style:none;padding:10px 16px}" \
	"ul.hist li{padding:3px 0}" \
	"pre.readme{white-space:pre-wrap;word-wrap:break-word;margin:0}" \
	".md{overflow-wrap:anywhere}.md h1,.md h2{font-size:19px;border-" \
	"bottom:1px solid #edf0ee;padding-bottom:4px}.md h1:first-child{" \
	"margin-top:4px}.md pre{background:#f2f5f3;padding:10px 12px;" \
	"border-radius:6px;overflow-x:auto}.md pre code{background:none;" \
	"padding:0}.md blockquote{margin:0;padding-left:12px;border-left:" \
	"3px solid #dde3e0;color:#5b6a70}" \
	"footer{color:#7a878c;font-size:13px;padding:24px 0 40px}"

/* Months of the last-activity dates, as people read them. */
static const char *const month[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* A query's deadline, for the progress handler. */
static int64_t query_deadline;
static int     query_interrupted;

static int
progress(void *arg)
{
	(void)arg;
	if (relay_now_ms() < query_deadline)
		return 0;
	query_interrupted = 1;
	return 1;
}

/* Arms the deadline of the page's reads on relayd's connection. */
sqlite3 *
relay_html_db_arm(int ms)
{
	sqlite3 *db = store_sqlite(relayd->rstore);

	query_deadline = relay_now_ms() + ms;
	query_interrupted = 0;
	sqlite3_progress_handler(db, RELAY_WEB_PROGRESS_OPS, progress, NULL);
	return db;
}

void
relay_html_db_disarm(sqlite3 *db)
{
	sqlite3_progress_handler(db, 0, NULL, NULL);
}

int
relay_html_db_interrupted(void)
{
	return query_interrupted;
}

void
relay_web_escape(struct buf *b, const char *s, size_t len)
{
	static const char	 special[] = "<>&\"'";
	static const char *const entity[] = { "&lt;", "&gt;", "&amp;", "&quot;",
		"&#39;" };
	const char		*e = s + len, *p;

	for (; s < e; s++) {
		if ((p = memchr(special, *s, sizeof(special) - 1)) != NULL)
			buf_adds(b, entity[p - special]);
		else if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
			buf_addc(b, *s);
		/* NUL and other controls are dropped. */
	}
}

size_t
relay_html_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	/* A cut inside a character goes back to before its first byte. */
	if (s[n] != '\0')
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	return n;
}

void
relay_html_esc(struct buf *b, const char *s)
{
	if (s != NULL)
		relay_web_escape(b, s, strlen(s));
}

/* s percent-encoded for a URL path segment or query value. */
void
relay_html_url(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			buf_addc(b, *s);
		else
			buf_printf(b, "%%%02X", (unsigned char)*s);
	}
}

/* A link target only when it is http(s) or mailto; else NULL. */
int
relay_html_href_ok(const char *u)
{
	return u != NULL &&
	    (strncasecmp(u, "https://", 8) == 0 ||
		strncasecmp(u, "http://", 7) == 0 ||
		strncasecmp(u, "mailto:", 7) == 0);
}

/* Unix time t into *tm (UTC): 0, or -1 after writing "&ndash;" to b. */
static int
utc(struct buf *b, int64_t t, struct tm *tm)
{
	time_t tt = (time_t)t;

	if (t > 0 && gmtime_r(&tt, tm) != NULL)
		return 0;
	buf_adds(b, "&ndash;");
	return -1;
}

void
relay_html_date(struct buf *b, int64_t t)
{
	struct tm tm;

	if (utc(b, t, &tm) == -1)
		return;
	buf_printf(b,
	    "<time datetime=\"%04d-%02d-%02dT%02d:%02dZ\">%d %s %04d"
	    "</time>",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_mday, month[tm.tm_mon], tm.tm_year + 1900);
}

void
relay_html_time(struct buf *b, int64_t t, int64_t now)
{
	struct tm tm;
	int64_t	  age = now - t;

	if (utc(b, t, &tm) == -1)
		return;
	buf_printf(b,
	    "<time datetime=\"%04d-%02d-%02dT%02d:%02d:%02dZ\">%04d-%02d-%02d "
	    "%02d:%02d UTC</time> <span class=\"ago\">(",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min);
	if (age < 0)
		buf_adds(b, "in the future");
	else if (age < 60)
		buf_adds(b, "just now");
	else if (age < 3600)
		buf_printf(b, "%lld min ago", (long long)(age / 60));
	else if (age < 2 * 86400)
		buf_printf(b, "%lld h ago", (long long)(age / 3600));
	else if (age < 60 * 86400)
		buf_printf(b, "%lld days ago", (long long)(age / 86400));
	else if (age < 730 * 86400)
		buf_printf(b, "%lld months ago",
		    (long long)(age / (30 * 86400)));
	else
		buf_printf(b, "%lld years ago",
		    (long long)(age / (365 * 86400)));
	buf_adds(b, ")</span>");
}

void
relay_html_xml(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + len;
	size_t		     n, i;
	uint32_t	     cp;

	while (p < e) {
		if (*p < 0x80) {
			relay_web_escape(b, (const char *)p, 1);
			p++;
			continue;
		}
		/* UTF-8 as RFC 3629 has it, else U+FFFD: XML takes no other. */
		n = (*p & 0xe0) == 0xc0 ? 2 :
		    (*p & 0xf0) == 0xe0 ? 3 :
		    (*p & 0xf8) == 0xf0 ? 4 :
					  0;
		cp = n == 2 ? *p & 0x1f : n == 3 ? *p & 0x0f : *p & 0x07;
		for (i = 1; n && i < n; i++) {
			if (p + i >= e || (p[i] & 0xc0) != 0x80) {
				n = 0;
				break;
			}
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if (n == 0 || (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
		    cp == 0xffff) {
			buf_adds(b, "\xef\xbf\xbd");
			p++;
			continue;
		}
		buf_add(b, (const char *)p, n);
		p += n;
	}
}

/* The shortened npub people recognise: npub1abcd…wxyz. */
void
relay_html_npub(struct buf *b, const char *npub)
{
	size_t n = strlen(npub);

	if (n <= 20) {
		buf_adds(b, npub);
		return;
	}
	buf_printf(b, "%.*s&hellip;%s", 12, npub, npub + n - 6);
}

/* The page's head and the header bar; title is escaped. */
void
relay_html_open(struct buf *b, const char *title, const char *name)
{
	relay_html_open_feed(b, title, name, NULL);
}

void
relay_html_open_feed(struct buf *b, const char *title, const char *name,
    const char *feed)
{
	buf_adds(b,
	    "<!DOCTYPE html>\n<html><head><meta charset="
	    "\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,"
	    "initial-scale=1\"><title>");
	relay_html_esc(b, title);
	buf_adds(b, "</title>");
	if (feed != NULL) {
		buf_adds(b,
		    "<link rel=\"alternate\" type=\"application/atom+xml\" "
		    "title=\"Atom feed\" href=\"");
		relay_html_esc(b, feed);
		buf_adds(b, "\">");
	}
	buf_adds(b,
	    "<link rel=\"icon\" href=\"/favicon.ico\">"
	    "<style>" CSS "</style></head>\n<body><header><div class=\"w\">"
	    "<a href=\"/\"><img src=\"" CONFIG_ICON_PATH "\" alt=\"\"></a>"
	    "<div><h1><a href=\"/\">");
	relay_html_esc(b, name);
	buf_adds(b, "</a></h1>");
}

void
relay_html_close(struct buf *b)
{
	buf_printf(b,
	    "<footer>graspd %s &middot; a GRASP server: a Nostr "
	    "relay for git collaboration (NIP-34) with git hosting &middot; "
	    "NIP-11 at this address with <code>Accept: " RELAY_NIP11_TYPE
	    "</code></footer></div></body></html>\n",
	    RELAY_VERSION);
}

/* A short page: title, and text (HTML, not escaped), with status. */
int
relay_html_message(struct relay_conn *c, struct lws *wsi, unsigned status,
    const char *title, const char *html)
{
	struct buf b = BUF_INIT;
	char	  *body;
	size_t	   len;

	relay_html_open(&b, title, relayd->cfg.relay_name);
	buf_adds(&b, "</div></div></header>\n<div class=\"w\"><h2>");
	relay_html_esc(&b, title);
	buf_printf(&b, "</h2><p>%s</p>\n", html);
	relay_html_close(&b);
	body = buf_release(&b, &len);
	return relay_http_page(c, wsi, status, "text/html; charset=utf-8", body,
	    len, 0);
}
/* The kind 0 name of a profile event's JSON: name, else display_name. */
char *
relay_html_profile_name(const char *json)
{
	struct event *ev;
	cJSON	     *c;
	const cJSON  *v;
	char	      err[64], *name = NULL;

	if (json == NULL ||
	    (ev = event_parse(json, strlen(json), err, sizeof(err))) == NULL)
		return NULL;
	if ((c = cJSON_ParseWithLength(ev->content.s, ev->content.len)) !=
	    NULL) {
		v = cJSON_GetObjectItemCaseSensitive(c, "display_name");
		if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
			v = cJSON_GetObjectItemCaseSensitive(c, "name");
		if (cJSON_IsString(v) && v->valuestring[0] != '\0')
			name = strndup(v->valuestring,
			    relay_html_cut(v->valuestring, RELAY_WEB_NAME_MAX));
		cJSON_Delete(c);
	}
	event_destroy(ev);
	return name;
}

const char *
relay_html_tag1(const struct event *ev, const char *name)
{
	const struct estr *v = event_tag_value(ev, name);

	return v ? v->s : NULL;
}

/* A stored event's JSON by (kind, pubkey, d), parsed, or NULL. */
struct event *
relay_html_addressed(sqlite3 *db, uint32_t kind, const uint8_t pk[PUBKEY_LEN],
    const char *d)
{
	static const char sql[] = "SELECT json FROM events WHERE kind = ?1"
				  " AND pubkey = ?2 AND d = ?3";
	sqlite3_stmt	 *st;
	struct event	 *ev = NULL;
	const char	 *json;
	char		  err[64];

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int(st, 1, (int)kind);
	sqlite3_bind_blob(st, 2, pk, PUBKEY_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, d, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (json = (const char *)sqlite3_column_text(st, 0)) != NULL)
		ev = event_parse(json, strlen(json), err, sizeof(err));
	sqlite3_finalize(st);
	return ev;
}

/* A person: kind 0 name where known, and the short npub. */
void
relay_html_person(struct buf *b, sqlite3 *db, const uint8_t pk[PUBKEY_LEN])
{
	struct event *p = relay_html_addressed(db, KIND_PROFILE, pk, "");
	char	      npub[NIP19_MAX_LEN + 1], *name = NULL;

	if (p != NULL) {
		name = relay_html_profile_name(p->json);
		event_destroy(p);
	}
	if (nip19_encode("npub", pk, npub, sizeof(npub)) == -1)
		npub[0] = '\0';
	if (name != NULL) {
		relay_html_esc(b, name);
		buf_adds(b, " ");
	}
	buf_printf(b, "<span class=\"pk\" title=\"%s\">", npub);
	relay_html_npub(b, npub);
	buf_adds(b, "</span>");
	free(name);
}

/*
 * Markdown (len bytes of md) as HTML into b through cmark, whose default
 * options drop raw HTML and javascript: and the like from links.  0, or
 * -1 (b unchanged).
 */
int
relay_html_markdown(struct buf *b, const char *md, size_t len)
{
	cmark_node *doc, *n, *link, *ch, **img = NULL;
	cmark_iter *it;
	char	   *html;
	size_t	    nimg = 0, cap = 0, i;

	if ((doc = cmark_parse_document(md, len, CMARK_OPT_DEFAULT)) == NULL)
		return -1;
	it = cmark_iter_new(doc);
	while (cmark_iter_next(it) != CMARK_EVENT_DONE) {
		n = cmark_iter_get_node(it);
		if (cmark_node_get_type(n) != CMARK_NODE_IMAGE ||
		    cmark_iter_get_event_type(it) != CMARK_EVENT_ENTER)
			continue;
		if (nimg == cap) {
			cap = cap ? 2 * cap : 16;
			if ((img = reallocarray(img, cap, sizeof(*img))) ==
			    NULL)
				fatal("markdown");
		}
		img[nimg++] = n;
	}
	cmark_iter_free(it);
	/* An image would load from elsewhere: it becomes a link to it. */
	for (i = 0; i < nimg; i++) {
		if ((link = cmark_node_new(CMARK_NODE_LINK)) == NULL)
			fatal("markdown");
		cmark_node_set_url(link, cmark_node_get_url(img[i]));
		while ((ch = cmark_node_first_child(img[i])) != NULL)
			cmark_node_append_child(link, ch);
		cmark_node_insert_before(img[i], link);
		cmark_node_free(img[i]);
	}
	free(img);
	html = cmark_render_html(doc, CMARK_OPT_DEFAULT);
	cmark_node_free(doc);
	if (html == NULL)
		return -1;
	buf_adds(b, html);
	free(html);
	return 0;
}
