/*
 * relay_web.c: relayd's pages for people, run in relayd's loop: the
 * landing page at / (the server, its relay URL and GRASPs, and the hosted
 * repositories, searchable and paginated), the page of one repository at
 * /<npub>/<d>.git, and the icon at /icon.png and /favicon.ico.
 *
 * Pages are plain HTML with one small inline stylesheet, no script and
 * nothing loaded from elsewhere.  Everything that came from the network
 * (names, descriptions, identifiers, subjects, READMEs, commit messages)
 * is HTML-escaped on the way out, and a Markdown README goes through
 * cmark (relay_html.c holds what the pages share).  The store is read
 * through relayd's own connection with a deadline, and the landing page
 * is cached for a few seconds.  git runs as a child of relayd
 * (relay_child_spawn) while the request waits, so the loop never blocks
 * on it.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "log.h"
#include "nip19.h"
#include "relayd.h"

/* The landing pages cached: the key is the query string. */
struct web_cached {
	char   *wc_key;
	char   *wc_body;
	size_t	wc_len;
	int64_t wc_at; /* ms */
};
static struct web_cached cache[RELAY_WEB_CACHE_SLOTS];


/* A string member of the NIP-11 document, or NULL. */
static const char *
nip11_str(const cJSON *doc, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * The owner of announcement ann and the maintainers it lists: their
 * keys, at most RELAY_WEB_MAINTAINERS_MAX, into keys[] (the owner first);
 * returns how many.  With json, also as a JSON array of hex strings
 * there.
 */
size_t
relay_web_maintainers(const struct event *ann, uint8_t keys[][PUBKEY_LEN],
    struct buf *json)
{
	const struct event_tag *t;
	size_t			n = 1, i, j, k;

	memcpy(keys[0], ann->pubkey, PUBKEY_LEN);
	for (i = 0; i < ann->ntags; i++) {
		t = &ann->tags[i];
		if (strcmp(t->v[0].s, "maintainers") != 0)
			continue;
		for (j = 1; j < t->n && n < RELAY_WEB_MAINTAINERS_MAX; j++) {
			if (t->v[j].len != PUBKEY_HEX_LEN ||
			    hex_decode(t->v[j].s, PUBKEY_HEX_LEN, keys[n],
				PUBKEY_LEN) == -1)
				continue;
			for (k = 0;
			     k < n && memcmp(keys[k], keys[n], PUBKEY_LEN); k++)
				;
			if (k == n)
				n++;
		}
	}
	if (json != NULL) {
		buf_addc(json, '[');
		for (i = 0; i < n; i++) {
			buf_adds(json, i ? ",\"" : "\"");
			buf_add_hex(json, keys[i], PUBKEY_LEN);
			buf_addc(json, '"');
		}
		buf_addc(json, ']');
	}
	return n;
}

/* The first value of ev's tag name, or NULL. */
/*
 * The threads of the repository whose coordinate is coord, newest first,
 * at most limit: issues, PRs and root patches, as rows (kind, status kind
 * or NULL, JSON).  The status is the latest event of kinds 1630-1633
 * naming the thread by its author or by one of maint, a JSON array of
 * the hex keys of the owner and the maintainers its announcement lists
 * (NIP-34: only those count).  A root patch's "t" row is looked up by
 * its whole key: tags has no index by event (db.c, step 4); a status's
 * "e" row holds the thread's id as its 32 bytes (db.h).  A prepared
 * statement, or NULL.
 */
static sqlite3_stmt *
threads_prepare(sqlite3 *db, const char *coord, const char *maint, int limit)
{
	static const char sql[] =
	    "SELECT e.kind, (SELECT s.kind FROM tags st"
	    "  JOIN events s ON s.seq = st.event"
	    "  WHERE st.letter = 'e' AND st.cases & " DB_TAG_LOWER_SQL
	    " AND st.value = e.id"
	    "  AND s.kind BETWEEN ?2 AND ?3 AND (s.pubkey = e.pubkey OR"
	    "  lower(hex(s.pubkey)) IN (SELECT value FROM json_each(?8)))"
	    "  ORDER BY st.created_at DESC LIMIT 1), e.json"
	    " FROM tags t JOIN events e ON e.seq = t.event"
	    " WHERE t.letter = 'a' AND t.cases & " DB_TAG_LOWER_SQL
	    " AND t.value = ?1 AND"
	    "  (e.kind IN (?4, ?5) OR (e.kind = ?6 AND EXISTS (SELECT 1"
	    "  FROM tags r WHERE r.letter = 't' AND r.cases & " DB_TAG_LOWER_SQL
	    " AND"
	    "  r.value = 'root' AND r.created_at ="
	    "  e.created_at AND r.event = e.seq)))"
	    " ORDER BY t.created_at DESC LIMIT ?7";
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	db_bind_tag_value(st, 1, coord, strlen(coord));
	sqlite3_bind_int(st, 2, KIND_STATUS_OPEN);
	sqlite3_bind_int(st, 3, KIND_STATUS_DRAFT);
	sqlite3_bind_int(st, 4, KIND_ISSUE);
	sqlite3_bind_int(st, 5, KIND_PR);
	sqlite3_bind_int(st, 6, KIND_PATCH);
	sqlite3_bind_int(st, 7, limit);
	sqlite3_bind_text(st, 8, maint, -1, SQLITE_TRANSIENT);
	return st;
}

/* A thread row's status kind: its latest status, or open if none. */
static int
row_status(sqlite3_stmt *st)
{
	return sqlite3_column_type(st, 1) == SQLITE_NULL ?
	    KIND_STATUS_OPEN :
	    sqlite3_column_int(st, 1);
}

/*
 * Open issues (*issues) and open proposals, patches and PRs (*prs), of
 * the repository whose coordinate is coord: those whose latest status is
 * open or draft, or that have none.
 */
static void
open_counts(sqlite3 *db, const char *coord, const char *maint, int *issues,
    int *prs)
{
	sqlite3_stmt *st;
	int	      status;

	*issues = *prs = 0;
	if ((st = threads_prepare(db, coord, maint, RELAY_WEB_THREADS_MAX)) ==
	    NULL)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		status = row_status(st);
		if (status != KIND_STATUS_OPEN && status != KIND_STATUS_DRAFT)
			continue;
		if (sqlite3_column_int(st, 0) == KIND_ISSUE)
			(*issues)++;
		else
			(*prs)++;
	}
	sqlite3_finalize(st);
}

/*
 * The hosted repositories (stored announcements) matching the search
 * pattern ?1 (NULL: all) in their identifier, name or description, with
 * their last activity: the newest of the announcement, the state and
 * every event tagging the repository.  ?4, the same pattern when JSON
 * writes it unchanged, lets a plain scan of the text skip most rows
 * before their tags are taken apart.
 */
#define REPOS_FROM \
	" FROM events e WHERE e.kind = 30617 AND e.d IS NOT NULL" \
	" AND (?1 IS NULL OR e.d LIKE ?1 ESCAPE '\\' OR ((?4 IS NULL OR" \
	"  e.json LIKE ?4 ESCAPE '\\') AND EXISTS (" \
	"  SELECT 1 FROM json_each(e.json, '$.tags') j" \
	"  WHERE json_extract(j.value, '$[0]') IN ('name', 'description')" \
	"  AND json_extract(j.value, '$[1]') LIKE ?1 ESCAPE '\\')))"

/* Only (seq, activity) go through the sort; the page's rows join after. */
static const char repos_sql[] =
    "SELECT e.json, '30617:' || lower(hex(e.pubkey)) || ':' || e.d, r.act,"
    " (SELECT p.json FROM events p WHERE p.kind = 0 AND p.pubkey = e.pubkey"
    "  AND p.d = '')"
    " FROM (SELECT e.seq AS seq, max(e.created_at,"
    "  ifnull((SELECT max(t.created_at) FROM tags t WHERE t.letter = 'a'"
    "   AND t.cases & " DB_TAG_LOWER_SQL
    "   AND t.value = '30617:' || lower(hex(e.pubkey)) || ':' || e.d), 0),"
    "  ifnull((SELECT s.created_at FROM events s WHERE s.kind = 30618"
    "   AND s.pubkey = e.pubkey AND s.d = e.d), 0)) AS act" REPOS_FROM
    "  ORDER BY act DESC, e.seq DESC LIMIT ?2 OFFSET ?3) r"
    " JOIN events e ON e.seq = r.seq ORDER BY r.act DESC, r.seq DESC";

static const char count_sql[] = "SELECT count(*)" REPOS_FROM;

/* q as a LIKE pattern matching it anywhere; caller frees. */
static char *
like_pattern(const char *q)
{
	struct buf b = BUF_INIT;

	buf_addc(&b, '%');
	for (; *q; q++) {
		if (*q == '%' || *q == '_' || *q == '\\')
			buf_addc(&b, '\\');
		buf_addc(&b, *q);
	}
	buf_addc(&b, '%');
	return buf_release(&b, NULL);
}

/* pat when JSON text holds it as it is (no '"', '\\' or control), or NULL. */
static const char *
json_plain(const char *pat)
{
	const char *p;

	if (pat == NULL)
		return NULL;
	for (p = pat; *p; p++) {
		/* The pattern escapes %, _ and \ with \; JSON escapes \. */
		if (*p == '\\' && *++p == '\\')
			return NULL;
		if (*p == '"' || (unsigned char)*p < 0x20)
			return NULL;
	}
	return pat;
}

/* One row of the repository table. */
static void
repo_row(struct buf *b, sqlite3 *db, sqlite3_stmt *st)
{
	const char   *json = (const char *)sqlite3_column_text(st, 0);
	const char   *coord = (const char *)sqlite3_column_text(st, 1);
	struct event *ev;
	char	      err[64], npub[NIP19_MAX_LEN + 1], *who;
	const char   *d, *name, *desc;
	int	      issues, prs;
	uint8_t	      keys[RELAY_WEB_MAINTAINERS_MAX][PUBKEY_LEN];
	struct buf    maint = BUF_INIT;

	if (json == NULL ||
	    (ev = event_parse(json, strlen(json), err, sizeof(err))) == NULL ||
	    (d = event_d(ev)) == NULL)
		return;
	if (nip19_encode("npub", ev->pubkey, npub, sizeof(npub)) == -1)
		npub[0] = '\0';
	name = relay_html_tag1(ev, "name");
	desc = relay_html_tag1(ev, "description");
	buf_printf(b, "<tr><td><a class=\"repo\" href=\"/%s/", npub);
	relay_html_url(b, d);
	buf_adds(b, ".git\">");
	relay_html_esc(b, name && *name ? name : d);
	buf_adds(b, "</a>");
	if (name && *name && strcmp(name, d) != 0) {
		buf_adds(b, " <span class=\"pk\">");
		relay_html_esc(b, d);
		buf_adds(b, "</span>");
	}
	if (desc && *desc) {
		buf_adds(b, "<div class=\"d\">");
		relay_web_escape(b, desc,
		    relay_html_cut(desc, RELAY_WEB_DESC_MAX));
		buf_adds(b, "</div>");
	}
	buf_adds(b, "</td><td>");
	who = relay_html_profile_name((const char *)sqlite3_column_text(st, 3));
	if (who != NULL) {
		relay_html_esc(b, who);
		buf_adds(b, "<br>");
	}
	free(who);
	buf_printf(b, "<span class=\"pk\" title=\"%s\">", npub);
	relay_html_npub(b, npub);
	buf_adds(b, "</span></td><td class=\"n\">");
	relay_html_date(b, sqlite3_column_int64(st, 2));
	relay_web_maintainers(ev, keys, &maint);
	open_counts(db, coord, maint.b_data, &issues, &prs);
	buf_free(&maint);
	buf_printf(b,
	    "</td><td class=\"n\">%d</td><td class=\"n\">%d</td>"
	    "</tr>\n",
	    issues, prs);
	event_destroy(ev);
}

/* "?q=...&page=N" for a pagination link. */
static void
page_link(struct buf *b, const char *q, long page, const char *text)
{
	buf_adds(b, "<a href=\"/?");
	if (q && *q) {
		buf_adds(b, "q=");
		relay_html_url(b, q);
		buf_adds(b, "&amp;");
	}
	buf_printf(b, "page=%ld\">%s</a>", page, text);
}

/*
 * The landing page's head and its card: the server's name, description,
 * relay URL, GRASPs and NIPs and contact from the NIP-11 document, then
 * the search form holding q.
 */
static void
landing_about(struct buf *b, const char *q)
{
	cJSON	    *doc;
	const cJSON *arr, *it;
	const char  *name, *desc, *contact;
	char	     ws[512];

	doc = cJSON_ParseWithLength(relayd->nip11, relayd->nip11_len);
	name = nip11_str(doc, "name");
	desc = nip11_str(doc, "description");
	contact = nip11_str(doc, "contact");
	config_relay_url(&relayd->cfg, ws, sizeof(ws));
	relay_html_open_feed(b, name ? name : "graspd", name ? name : "graspd",
	    "/feed.atom");
	if (desc && *desc) {
		buf_adds(b, "<p>");
		relay_html_esc(b, desc);
		buf_adds(b, "</p>");
	}
	buf_adds(b,
	    "</div></div></header>\n<div class=\"w\">"
	    "<div class=\"card\"><dl>\n<dt>Relay</dt><dd><code class=\"u\" id=\"relay\">");
	relay_html_esc(b, ws);
	buf_adds(b, "</code></dd>\n<dt>Git over HTTP</dt><dd><code>");
	relay_html_esc(b, relayd->cfg.public_url);
	buf_adds(b,
	    "/&lt;npub&gt;/&lt;identifier&gt;.git</code></dd>\n"
	    "<dt>Supports</dt><dd>");
	arr = cJSON_GetObjectItemCaseSensitive(doc, "supported_grasps");
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it)) {
			buf_adds(b, "<span class=\"tag\">");
			relay_html_esc(b, it->valuestring);
			buf_adds(b, "</span>");
		}
	arr = cJSON_GetObjectItemCaseSensitive(doc, "supported_nips");
	buf_adds(b, " <span class=\"pk\">NIPs");
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsNumber(it))
			buf_printf(b, " %d", it->valueint);
	buf_adds(b, "</span></dd>\n");
	if (contact && *contact) {
		buf_adds(b, "<dt>Contact</dt><dd>");
		if (relay_html_href_ok(contact)) {
			buf_adds(b, "<a href=\"");
			relay_html_esc(b, contact);
			buf_adds(b, "\">");
			relay_html_esc(b, contact);
			buf_adds(b, "</a>");
		} else
			relay_html_esc(b, contact);
		buf_adds(b, "</dd>\n");
	}
	buf_adds(b,
	    "<dt>Follow</dt><dd><a id=\"feed\" href=\"/feed.atom\">Atom "
	    "feed</a> of new repositories</dd>\n"
	    "</dl></div>\n<h2>Repositories</h2>\n<form method=\"get\" "
	    "action=\"/\"><input type=\"search\" name=\"q\" maxlength=\"");
	buf_printf(b,
	    "%d\" placeholder=\"Search names and descriptions\" "
	    "value=\"",
	    RELAY_WEB_QUERY_MAX);
	relay_html_esc(b, q);
	buf_adds(b, "\"><button type=\"submit\">Search</button></form>\n");
	cJSON_Delete(doc);
}

/*
 * The landing page's pagination line: page of the repositories matching
 * q, total of them (-1: not counted), shown on this page.
 */
static void
landing_pager(struct buf *b, const char *q, long page, int64_t total,
    long shown)
{
	long pages;

	buf_adds(b, "</tbody></table>\n<div class=\"pg\"><span>");
	if (page > 1)
		page_link(b, q, page - 1, "&larr; Newer");
	buf_adds(b, "</span><span class=\"pk\">");
	if (total >= 0) {
		pages = (long)((total + RELAY_WEB_PAGE_SIZE - 1) /
		    RELAY_WEB_PAGE_SIZE);
		buf_printf(b, "%lld repositor%s &middot; page %ld of %ld",
		    (long long)total, total == 1 ? "y" : "ies", page,
		    pages > 0 ? pages : 1);
	} else
		pages = page + (shown == RELAY_WEB_PAGE_SIZE);
	if (relay_html_db_interrupted())
		buf_adds(b, " &middot; cut short");
	buf_adds(b, "</span><span>");
	if (page < pages && page < RELAY_WEB_PAGE_MAX)
		page_link(b, q, page + 1, "Older &rarr;");
	buf_adds(b, "</span></div>\n");
}

/*
 * The table of the hosted repositories matching q (NULL or "": all), at
 * page, with its pagination, read from the store within the page's
 * deadline.
 */
static void
landing_repos(struct buf *b, const char *q, long page)
{
	sqlite3	     *db;
	sqlite3_stmt *st = NULL;
	char	     *pat = NULL;
	int64_t	      total = -1;
	long	      shown = 0;
	int	      rc;

	db = relay_html_db_arm(RELAY_WEB_QUERY_MS);
	if (q && *q)
		pat = like_pattern(q);
	if (sqlite3_prepare_v2(db, count_sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, pat, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, json_plain(pat), -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			total = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	st = NULL;
	buf_adds(b,
	    "<table id=\"repos\"><thead><tr><th>Repository</th>"
	    "<th>Owner</th><th class=\"n\">Last activity</th><th class=\"n\">"
	    "Open issues</th><th class=\"n\">Open PRs</th></tr></thead>"
	    "<tbody>\n");
	if (sqlite3_prepare_v2(db, repos_sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, pat, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, json_plain(pat), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, RELAY_WEB_PAGE_SIZE);
		sqlite3_bind_int64(st, 3,
		    (int64_t)(page - 1) * RELAY_WEB_PAGE_SIZE);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			repo_row(b, db, st);
			shown++;
		}
		if (rc != SQLITE_DONE && !relay_html_db_interrupted())
			log_warnx("landing page: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	relay_html_db_disarm(db);
	if (shown == 0)
		buf_printf(b,
		    "<tr><td colspan=\"5\" class=\"d\">%s</td></tr>\n",
		    relay_html_db_interrupted() ?
			"The listing took too long; try again "
			"or narrow the search." :
			q && *q ? "No repository matches." :
				  "No repository is hosted yet.");
	landing_pager(b, q, page, total, shown);
	free(pat);
}

char *
relay_web_landing_render(const char *q, long page, size_t *lenp)
{
	struct buf b = BUF_INIT;

	landing_about(&b, q);
	landing_repos(&b, q, page);
	relay_html_close(&b);
	return buf_release(&b, lenp);
}

/* The landing page for the request's q and page, from the cache or new. */
static int
landing(struct relay_conn *c, struct lws *wsi)
{
	static int64_t	   budget_start, budget_used;
	struct web_cached *slot, *oldest = &cache[0];
	char q[RELAY_WEB_QUERY_MAX + 1], pg[16], key[64 + RELAY_WEB_QUERY_MAX];
	const char *v;
	char	   *body, *p;
	size_t	    len, i;
	long	    page = 1;
	int64_t	    now = relay_now_ms();

	q[0] = '\0';
	if ((v = lws_get_urlarg_by_name(wsi, "q=", key, sizeof(key))) != NULL) {
		snprintf(q, sizeof(q), "%s", v);
		for (p = q; *p; p++)
			if (*p == '+')
				*p = ' ';
	}
	if ((v = lws_get_urlarg_by_name(wsi, "page=", pg, sizeof(pg))) !=
	    NULL) {
		page = strtol(v, NULL, 10);
		if (page < 1)
			page = 1;
		if (page > RELAY_WEB_PAGE_MAX)
			page = RELAY_WEB_PAGE_MAX;
	}
	snprintf(key, sizeof(key), "%ld\n%s", page, q);
	for (i = 0; i < RELAY_WEB_CACHE_SLOTS; i++) {
		slot = &cache[i];
		if (slot->wc_key != NULL && strcmp(slot->wc_key, key) == 0 &&
		    now - slot->wc_at < RELAY_WEB_CACHE_MS) {
			if ((body = malloc(slot->wc_len)) == NULL)
				fatal("landing");
			memcpy(body, slot->wc_body, slot->wc_len);
			return relay_http_page(c, wsi, HTTP_STATUS_OK,
			    "text/html; charset=utf-8", body, slot->wc_len, 0);
		}
		if (slot->wc_at < oldest->wc_at)
			oldest = slot;
	}
	/* Uncached pages share a budget of loop time, so a stream of new
	 * searches cannot stall the relay. */
	if (now - budget_start >= 1000) {
		budget_start = now;
		budget_used = 0;
	}
	if (budget_used >= RELAY_WEB_BUDGET_MS)
		return relay_html_message(c, wsi,
		    HTTP_STATUS_SERVICE_UNAVAILABLE, "Busy",
		    "This server is answering many searches; try again in a moment.");
	body = relay_web_landing_render(q, page, &len);
	budget_used += relay_now_ms() - now;
	free(oldest->wc_key);
	free(oldest->wc_body);
	if ((oldest->wc_key = strdup(key)) == NULL ||
	    (oldest->wc_body = malloc(len)) == NULL)
		fatal("landing");
	memcpy(oldest->wc_body, body, len);
	oldest->wc_len = len;
	oldest->wc_at = now;
	return relay_http_page(c, wsi, HTTP_STATUS_OK,
	    "text/html; charset=utf-8", body, len, 0);
}

/*
 * The icon as an ICO file holding the PNG (Windows Vista's format, read
 * by every browser): a 6-byte header and one 16-byte entry.
 */
static char *
favicon(size_t *lenp)
{
	unsigned char *p;
	size_t	       n = relay_icon_png_len;

	if ((p = calloc(1, 22 + n)) == NULL)
		fatal("favicon");
	p[2] = 1;	  /* type: icon */
	p[4] = 1;	  /* one image */
	p[6] = p[7] = 64; /* width, height */
	p[10] = 1;	  /* planes */
	p[12] = 32;	  /* bits per pixel */
	p[14] = (unsigned char)(n & 0xff);
	p[15] = (unsigned char)((n >> 8) & 0xff);
	p[16] = (unsigned char)((n >> 16) & 0xff);
	p[18] = 22; /* offset of the PNG */
	memcpy(p + 22, relay_icon_png, n);
	*lenp = 22 + n;
	return (char *)p;
}

int
relay_web_request(struct relay_conn *c, struct lws *wsi, const char *uri,
    int urilen)
{
	char  *body;
	size_t len;

	if (urilen == 1 && uri[0] == '/')
		return landing(c, wsi);
	if (urilen == 10 && memcmp(uri, "/feed.atom", 10) == 0)
		return relay_web_feed_landing(c, wsi);
	if ((size_t)urilen == strlen(CONFIG_ICON_PATH) &&
	    memcmp(uri, CONFIG_ICON_PATH, (size_t)urilen) == 0) {
		if ((body = malloc(relay_icon_png_len)) == NULL)
			fatal("icon");
		memcpy(body, relay_icon_png, relay_icon_png_len);
		return relay_http_respond(c, wsi, HTTP_STATUS_OK, "image/png",
		    body, relay_icon_png_len);
	}
	if (urilen == 12 && memcmp(uri, "/favicon.ico", 12) == 0) {
		body = favicon(&len);
		return relay_http_respond(c, wsi, HTTP_STATUS_OK,
		    "image/x-icon", body, len);
	}
	return RELAY_WEB_NOT_MINE;
}

int
relay_web_not_found(struct relay_conn *c, struct lws *wsi, const char *uri,
    int urilen)
{
	struct buf b = BUF_INIT;
	int	   rc;

	buf_adds(&b, "There is no page at <code>");
	relay_web_escape(&b, uri,
	    urilen > RELAY_WEB_DESC_MAX ? RELAY_WEB_DESC_MAX : (size_t)urilen);
	buf_adds(&b,
	    "</code> on this server. <a href=\"/\">See the repositories it "
	    "hosts.</a>");
	rc = relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND, "Not found",
	    b.b_data);
	buf_free(&b);
	return rc;
}

/*
 * The repository page.  Its git output (the log of HEAD, the README's
 * size and then its text) comes from children writing into unlinked
 * temporary files; the page is rendered once the last one is reaped and
 * written from the connection's next writable callback.  While git runs
 * the page holds a place of its address under max_git_requests_per_ip,
 * as the git pages (relay_web_git.c) do.
 */
struct relay_webreq {
	struct relay_conn     *wr_conn; /* NULL once it closed */
	struct lws	      *wr_wsi;
	uint8_t		       wr_owner[PUBKEY_LEN];
	char		       wr_npub[NIP19_MAX_LEN + 1];
	char		      *wr_d;
	char		       wr_repo[4096];
	int		       wr_hosted; /* relay_purg_hosted() */
	pid_t		       wr_pid[2]; /* running children, or -1 */
	FILE		      *wr_out[2]; /* their output */
	FILE		      *wr_readme; /* the README's text */
	char		       wr_readme_name[32];
	char		      *wr_body; /* the page, when rendered */
	size_t		       wr_len;
	struct relay_web_place wr_place;
};

/* The files a README may be in, by preference. */
static const char *const readme_names[] = { "README.md", "README",
	"README.markdown", "README.txt", "README.rst", "readme.md",
	"Readme.md" };

enum {
	WR_LOG,
	WR_CHECK
};

static void web_child_done(pid_t, int, int, void *);

/* Up to max bytes of f from its start, NUL-terminated; caller frees. */
static char *
slurp(FILE *f, size_t max, size_t *lenp)
{
	char  *s;
	size_t n;

	*lenp = 0;
	if (f == NULL || fseek(f, 0, SEEK_SET) != 0)
		return NULL;
	if ((s = malloc(max + 1)) == NULL)
		fatal("slurp");
	n = fread(s, 1, max, f);
	s[n] = '\0';
	*lenp = n;
	return s;
}

/*
 * Runs git with args in the repository, stdin from in (or /dev/null),
 * stdout into a new temporary file at *outp.  Returns the pid or -1.
 */
static pid_t
web_git(struct relay_webreq *wr, const char *const *args, FILE *in, FILE **outp)
{
	char  *argv[16], gitdir[4200];
	pid_t  pid;
	size_t i, n = 0;

	if ((*outp = tmpfile()) == NULL) {
		log_warn("repository page: tmpfile");
		return -1;
	}
	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s", wr->wr_repo);
	argv[n++] = "git";
	argv[n++] = gitdir;
	for (i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	pid = relay_child_spawn(argv, in ? fileno(in) : -1, fileno(*outp), NULL,
	    RELAY_WEB_GIT_TIMEOUT_S, web_child_done, wr);
	if (pid == -1) {
		fclose(*outp);
		*outp = NULL;
	}
	return pid;
}

/*
 * From "git cat-file --batch-check" output: the first README that
 * exists and is small enough, as "<oid>" into oid; 0 or -1.
 */
static int
readme_pick(struct relay_webreq *wr, char oid[GIT_OID_HEX + 1])
{
	char	     *s, *line, *save, type[16];
	size_t	      len, i = 0;
	unsigned long size;
	int	      rc = -1;

	if ((s = slurp(wr->wr_out[WR_CHECK], 4096, &len)) == NULL)
		return -1;
	for (line = strtok_r(s, "\n", &save);
	     line != NULL && i < sizeof(readme_names) / sizeof(readme_names[0]);
	     line = strtok_r(NULL, "\n", &save), i++) {
		if (sscanf(line, "%40s %15s %lu", oid, type, &size) != 3 ||
		    strcmp(type, "blob") != 0 || strlen(oid) != GIT_OID_HEX)
			continue;
		if (size > RELAY_WEB_README_MAX)
			continue;
		snprintf(wr->wr_readme_name, sizeof(wr->wr_readme_name), "%s",
		    readme_names[i]);
		rc = 0;
		break;
	}
	free(s);
	return rc;
}

static void repo_render(struct relay_webreq *);

static void
web_child_done(pid_t pid, int status, int killed, void *arg)
{
	struct relay_webreq *wr = arg;
	static const char   *cat[] = { "cat-file", "blob", NULL, NULL };
	char		     oid[GIT_OID_HEX + 1];
	int		     i, which = -1;

	for (i = 0; i < 2; i++)
		if (pid != -1 && wr->wr_pid[i] == pid) {
			wr->wr_pid[i] = -1;
			which = i;
		}
	/* The README check is done: cat the file it found, if any. */
	if (which == WR_CHECK && wr->wr_out[WR_CHECK] != NULL && status == 0 &&
	    readme_pick(wr, oid) == 0) {
		/* Second step: the README's text, into wr_readme. */
		cat[2] = oid;
		fclose(wr->wr_out[WR_CHECK]);
		wr->wr_out[WR_CHECK] = NULL;
		if ((wr->wr_pid[WR_CHECK] =
			    web_git(wr, cat, NULL, &wr->wr_readme)) != -1)
			return;
	}
	if (wr->wr_pid[WR_LOG] != -1 || wr->wr_pid[WR_CHECK] != -1)
		return;
	/* git is done: the place goes back before the page is sent. */
	relay_web_place_give(&wr->wr_place);
	if (wr->wr_conn == NULL) {
		/* The client left; nobody waits for the page. */
		relay_web_free(wr);
		return;
	}
	repo_render(wr);
	lws_callback_on_writable(wr->wr_wsi);
}

/* The recent issues, patches and PRs of coord, with their status. */
static void
threads(struct buf *b, sqlite3 *db, const char *coord, const char *maint,
    const char *base)
{
	sqlite3_stmt *st;
	struct event *ev;
	const char   *json;
	char	      err[64];
	int	      status, n = 0;

	buf_adds(b,
	    "<h2>Issues, patches and pull requests</h2>\n<table "
	    "id=\"threads\"><thead><tr><th>Title</th><th>Kind</th><th>"
	    "Author</th><th class=\"n\">Opened</th><th class=\"n\">Status"
	    "</th></tr></thead><tbody>\n");
	if ((st = threads_prepare(db, coord, maint,
		 RELAY_WEB_RECENT_THREADS)) == NULL)
		goto done;
	while (sqlite3_step(st) == SQLITE_ROW) {
		json = (const char *)sqlite3_column_text(st, 2);
		if (json == NULL ||
		    (ev = event_parse(json, strlen(json), err, sizeof(err))) ==
			NULL)
			continue;
		status = row_status(st);
		buf_printf(b, "<tr><td><a href=\"%s/%s/%s\">", base,
		    relay_web_thread_section(ev->kind), ev->id_hex);
		relay_web_thread_title(b, ev);
		buf_printf(b, "</a></td><td>%s</td><td>",
		    ev->kind == KIND_ISSUE  ? "issue" :
			ev->kind == KIND_PR ? "pull request" :
					      "patch");
		relay_html_person(b, db, ev->pubkey);
		buf_adds(b, "</td><td class=\"n\">");
		relay_html_date(b, ev->created_at);
		buf_printf(b,
		    "</td><td class=\"n\"><span class=\"st s%d\">%s"
		    "</span></td></tr>\n",
		    status, relay_web_status_name(status));
		event_destroy(ev);
		n++;
	}
	sqlite3_finalize(st);
done:
	if (n == 0)
		buf_adds(b,
		    "<tr><td colspan=\"5\" class=\"d\">None yet.</td>"
		    "</tr>\n");
	buf_adds(b, "</tbody></table>\n");
}

/* The clone URLs: the public https form and ngit's nostr:// form. */
static void
clone_urls(struct buf *b, const struct relay_webreq *wr, struct buf *nostr)
{
	const char *pub = relayd->cfg.public_url;

	/* ngit: nostr://<npub>/[<relay hint>/]<identifier>. */
	buf_printf(nostr, "%s/", wr->wr_npub);
	if (strncmp(pub, "https://", 8) == 0)
		buf_printf(nostr, "%s/", pub + 8);
	relay_html_url(nostr, wr->wr_d);
	buf_adds(b,
	    "<div class=\"card\"><dl>\n<dt>Clone</dt><dd><code "
	    "class=\"u\" id=\"clone\">git clone ");
	relay_html_esc(b, pub);
	buf_printf(b, "/%s/", wr->wr_npub);
	relay_html_url(b, wr->wr_d);
	buf_adds(b,
	    ".git</code></dd>\n<dt>With ngit</dt><dd><code class=\"u\" id=\"nostr\">"
	    "git clone nostr://");
	relay_html_esc(b, nostr->b_data);
	buf_adds(b, "</code></dd>\n");
}

/* The refs of the state event, each with its commit id. */
static void
state_refs(struct buf *b, const struct event *state,
    const struct relay_webreq *wr)
{
	struct relay_refs refs = { NULL, 0, NULL };
	char		 *head = NULL;
	const char	 *name;
	size_t		  i;
	int		  tags, any;

	buf_adds(b,
	    "<h2>Branches and tags</h2>\n<table id=\"refs\"><thead>"
	    "<tr><th>Name</th><th>Commit</th></tr></thead><tbody>\n");
	if (state != NULL)
		relay_state_refs(state, &refs, &head);
	for (tags = 0, any = 0; tags < 2; tags++)
		for (i = 0; i < refs.n && i < RELAY_WEB_REFS_MAX; i++) {
			name = refs.v[i].rf_name;
			if (strncmp(name, tags ? "refs/tags/" : "refs/heads/",
				tags ? 10 : 11) != 0)
				continue;
			any = 1;
			buf_printf(b, "<tr><td><span class=\"tag\">%s</span>",
			    tags ? "tag" : "branch");
			buf_adds(b, "<a href=\"");
			relay_web_git_link(b, wr->wr_npub, wr->wr_d, "tree",
			    name + (tags ? 10 : 11), NULL);
			buf_adds(b, "\">");
			relay_html_esc(b, name + (tags ? 10 : 11));
			buf_adds(b, "</a>");
			if (!tags && head != NULL && strcmp(head, name) == 0)
				buf_adds(b, " <span class=\"pk\">HEAD</span>");
			buf_adds(b, "</td><td><code><a href=\"");
			relay_web_git_link(b, wr->wr_npub, wr->wr_d, "commit",
			    refs.v[i].rf_oid, NULL);
			buf_printf(b, "\">%s</a></code></td></tr>\n",
			    refs.v[i].rf_oid);
		}
	if (!any)
		buf_adds(b,
		    "<tr><td colspan=\"2\" class=\"d\">No state event "
		    "yet.</td></tr>\n");
	buf_adds(b, "</tbody></table>\n<p><a id=\"files\" href=\"");
	relay_web_git_link(b, wr->wr_npub, wr->wr_d, "tree", "HEAD", NULL);
	buf_adds(b, "\">Browse the files</a></p>\n");
	relay_refs_free(&refs);
	free(head);
}

/* The latest commits of HEAD, from "git log" output. */
static void
commits(struct buf *b, FILE *out, const struct relay_webreq *wr)
{
	char  *s, *rec, *save, *f[4];
	size_t len, i;
	int    n = 0;

	buf_adds(b,
	    "<h2>Latest commits</h2>\n<table id=\"commits\"><thead>"
	    "<tr><th>Commit</th><th>Message</th><th>Author</th><th class="
	    "\"n\">Date</th></tr></thead><tbody>\n");
	s = slurp(out, RELAY_WEB_LOG_MAX, &len);
	for (rec = s ? strtok_r(s, "\x1e", &save) : NULL; rec != NULL;
	     rec = strtok_r(NULL, "\x1e", &save)) {
		rec += strspn(rec, "\n");
		for (i = 0; i < 4; i++) {
			f[i] = rec;
			if (rec == NULL)
				continue;
			if ((rec = strchr(rec, '\x1f')) != NULL)
				*rec++ = '\0';
		}
		if (f[3] == NULL || strlen(f[0]) != GIT_OID_HEX)
			continue;
		buf_adds(b, "<tr><td><code><a href=\"");
		relay_web_git_link(b, wr->wr_npub, wr->wr_d, "commit", f[0],
		    NULL);
		buf_printf(b, "\" title=\"%s\">%.12s</a></code></td><td>", f[0],
		    f[0]);
		relay_web_escape(b, f[3],
		    relay_html_cut(f[3], RELAY_WEB_DESC_MAX));
		buf_adds(b, "</td><td>");
		relay_web_escape(b, f[2],
		    relay_html_cut(f[2], RELAY_WEB_NAME_MAX));
		buf_adds(b, "</td><td class=\"n\">");
		relay_html_date(b, strtoll(f[1], NULL, 10));
		buf_adds(b, "</td></tr>\n");
		n++;
	}
	free(s);
	if (n == 0)
		buf_adds(b,
		    "<tr><td colspan=\"4\" class=\"d\">No commits "
		    "pushed yet.</td></tr>\n");
	buf_adds(b, "</tbody></table>\n");
}

/*
 * The repository's announcement (*annp, NULL when none is stored) and
 * its newest state (*statep) by the owner or a maintainer the
 * announcement names: their keys into keys[] and their JSON array into
 * maint.  Returns how many keys.
 */
static size_t
repo_events(sqlite3 *db, const struct relay_webreq *wr, struct event **annp,
    struct event **statep, uint8_t keys[][PUBKEY_LEN], struct buf *maint)
{
	struct event *ann, *state = NULL, *ev;
	size_t	      i, nkeys;

	ann = relay_html_addressed(db, KIND_REPO_ANNOUNCEMENT, wr->wr_owner,
	    wr->wr_d);
	if (ann != NULL)
		nkeys = relay_web_maintainers(ann, keys, maint);
	else {
		memcpy(keys[0], wr->wr_owner, PUBKEY_LEN);
		buf_adds(maint, "[\"");
		buf_add_hex(maint, wr->wr_owner, PUBKEY_LEN);
		buf_adds(maint, "\"]");
		nkeys = 1;
	}
	for (i = 0; i < nkeys; i++) {
		ev = relay_html_addressed(db, KIND_REPO_STATE, keys[i],
		    wr->wr_d);
		if (ev != NULL &&
		    (state == NULL || ev->created_at > state->created_at)) {
			event_destroy(state);
			state = ev;
		} else
			event_destroy(ev);
	}
	*annp = ann;
	*statep = state;
	return nkeys;
}

/*
 * The card's people and links after the clone URLs: the owner, the
 * maintainers (keys[1..nkeys-1]), gitworkshop.dev at nostr (ngit's
 * address) and the feed.
 */
static void
repo_people(struct buf *b, sqlite3 *db, const struct relay_webreq *wr,
    uint8_t keys[][PUBKEY_LEN], size_t nkeys, const char *nostr,
    const char *feed)
{
	size_t i;

	buf_adds(b, "<dt>Owner</dt><dd>");
	relay_html_person(b, db, wr->wr_owner);
	buf_adds(b, "</dd>\n");
	for (i = 1; i < nkeys; i++) {
		buf_adds(b, i > 1 ? "<br>" : "<dt>Maintainers</dt><dd>");
		relay_html_person(b, db, keys[i]);
	}
	if (nkeys > 1)
		buf_adds(b, "</dd>\n");
	buf_printf(b, "<dt>Browse</dt><dd><a id=\"gitworkshop\" href=\"%s",
	    "https://gitworkshop.dev/");
	relay_html_esc(b, nostr);
	buf_adds(b, "\">Open in gitworkshop.dev</a></dd>\n<dt>Follow</dt><dd>");
	buf_printf(b,
	    "<a id=\"feed\" href=\"%s\">Atom feed</a></dd>\n"
	    "</dl></div>\n",
	    feed);
}

/* The README git found: Markdown through cmark, else as text. */
static void
repo_readme(struct buf *b, const struct relay_webreq *wr)
{
	char  *text;
	size_t len, n;

	if ((text = slurp(wr->wr_readme, RELAY_WEB_README_MAX, &len)) == NULL)
		return;
	buf_adds(b, "<h2>");
	relay_html_esc(b, wr->wr_readme_name);
	buf_adds(b, "</h2>\n<div class=\"card md\" id=\"readme\">");
	n = strlen(wr->wr_readme_name);
	if (!(n > 3 && strcasecmp(wr->wr_readme_name + n - 3, ".md") == 0 &&
		relay_html_markdown(b, text, len) == 0) &&
	    !(n > 9 &&
		strcasecmp(wr->wr_readme_name + n - 9, ".markdown") == 0 &&
		relay_html_markdown(b, text, len) == 0)) {
		buf_adds(b, "<pre class=\"readme\">");
		relay_web_escape(b, text, len);
		buf_adds(b, "</pre>");
	}
	buf_adds(b, "</div>\n");
	free(text);
}

static void
repo_render(struct relay_webreq *wr)
{
	struct buf    b = BUF_INIT, nostr = BUF_INIT;
	struct buf    maint = BUF_INIT, coord = BUF_INIT, base = BUF_INIT;
	struct buf    feed = BUF_INIT;
	struct event *ann, *state;
	uint8_t	      keys[RELAY_WEB_MAINTAINERS_MAX][PUBKEY_LEN];
	sqlite3	     *db;
	const char   *name, *desc;
	char	      title[512];
	size_t	      nkeys;

	db = relay_html_db_arm(RELAY_WEB_QUERY_MS);
	nkeys = repo_events(db, wr, &ann, &state, keys, &maint);
	name = ann ? relay_html_tag1(ann, "name") : NULL;
	if (name == NULL || *name == '\0')
		name = wr->wr_d;
	snprintf(title, sizeof(title), "%s \xc2\xb7 %s", name,
	    relayd->cfg.relay_name);
	buf_printf(&base, "/%s/", wr->wr_npub);
	relay_html_url(&base, wr->wr_d);
	buf_adds(&base, ".git");
	buf_printf(&feed, "%s/feed.atom", base.b_data);
	relay_html_open_feed(&b, title, relayd->cfg.relay_name, feed.b_data);
	buf_adds(&b,
	    "<p><a href=\"/\">&larr; All repositories</a></p></div>"
	    "</div></header>\n<div class=\"w\">\n");
	desc = ann ? relay_html_tag1(ann, "description") : NULL;
	buf_adds(&b, "<h2 class=\"title\" id=\"name\">");
	relay_html_esc(&b, name);
	buf_adds(&b, "</h2>\n");
	if (desc && *desc) {
		buf_adds(&b, "<p class=\"d\" id=\"description\">");
		relay_web_escape(&b, desc,
		    relay_html_cut(desc, 4 * RELAY_WEB_DESC_MAX));
		buf_adds(&b, "</p>\n");
	}
	if (wr->wr_hosted == 1)
		buf_adds(&b,
		    "<p class=\"card\">In purgatory: its announcement "
		    "is not served until its git data is pushed.</p>\n");
	clone_urls(&b, wr, &nostr);
	repo_people(&b, db, wr, keys, nkeys, nostr.b_data, feed.b_data);
	state_refs(&b, state, wr);
	commits(&b, wr->wr_out[WR_LOG], wr);
	buf_adds(&coord, "30617:");
	buf_add_hex(&coord, wr->wr_owner, PUBKEY_LEN);
	buf_printf(&coord, ":%s", wr->wr_d);
	threads(&b, db, coord.b_data, maint.b_data, base.b_data);
	relay_html_db_disarm(db);
	repo_readme(&b, wr);
	relay_html_close(&b);
	event_destroy(ann);
	event_destroy(state);
	buf_free(&nostr);
	buf_free(&maint);
	buf_free(&coord);
	buf_free(&base);
	buf_free(&feed);
	wr->wr_body = buf_release(&b, &wr->wr_len);
}

void
relay_web_free(struct relay_webreq *wr)
{
	int i;

	if (wr == NULL)
		return;
	relay_web_place_give(&wr->wr_place);
	for (i = 0; i < 2; i++) {
		if (wr->wr_pid[i] != -1)
			child_abandon(wr->wr_pid[i]);
		if (wr->wr_out[i] != NULL)
			fclose(wr->wr_out[i]);
	}
	if (wr->wr_readme != NULL)
		fclose(wr->wr_readme);
	free(wr->wr_d);
	free(wr->wr_body);
	free(wr);
}

int
relay_web_place_take(struct relay_conn *c, struct lws *wsi, int hosted,
    const uint8_t owner[PUBKEY_LEN], const char *d, struct relay_web_place *wp,
    int *rc)
{
	wp->wp_addr = NULL;
	wp->wp_placed = 0;
	if (hosted == 0 || !relay_repo_exists(owner, d)) {
		*rc = relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND,
		    "No such repository",
		    "This server hosts no repository at this address. <a href="
		    "\"/\">See the ones it hosts.</a>");
		return 0;
	}
	/* Its git children count as the address's git requests. */
	if (!relay_addr_git_begin(wsi, &wp->wp_addr)) {
		*rc = relay_http_too_many(c, wsi, RELAY_GIT_RETRY_AFTER_S,
		    RELAY_WEB_GIT_TOO_MANY);
		return 0;
	}
	wp->wp_placed = 1;
	return 1;
}

void
relay_web_place_give(struct relay_web_place *wp)
{
	if (wp->wp_placed)
		relay_addr_git_end(wp->wp_addr);
	wp->wp_placed = 0;
}

void
relay_web_close(struct relay_conn *c)
{
	struct relay_webreq *wr = c->rc_web;

	if (wr == NULL)
		return;
	c->rc_web = NULL;
	if (wr->wr_pid[0] == -1 && wr->wr_pid[1] == -1) {
		relay_web_free(wr);
		return;
	}
	/* Its children are reaped later; web_child_done() frees it. */
	wr->wr_conn = NULL;
}

int
relay_web_writeable(struct relay_conn *c, struct lws *wsi)
{
	struct relay_webreq *wr = c->rc_web;
	char		    *body;
	size_t		     len;

	if (wr->wr_body == NULL)
		return 0;
	body = wr->wr_body;
	len = wr->wr_len;
	wr->wr_body = NULL;
	c->rc_web = NULL;
	relay_web_free(wr);
	return relay_http_page(c, wsi, HTTP_STATUS_OK,
	    "text/html; charset=utf-8", body, len, 0);
}

int
relay_web_repo(struct relay_conn *c, struct lws *wsi, const char *npub,
    const uint8_t owner[PUBKEY_LEN], const char *d)
{
	static const char *const log_args[] = { "log", "-n", RELAY_WEB_COMMITS,
		"--no-color", "--format=%H%x1f%ct%x1f%an%x1f%s%x1e", "HEAD",
		"--", NULL };
	static const char *const check_args[] = { "cat-file", "--batch-check",
		NULL };
	struct relay_webreq	*wr;
	struct relay_web_place	 place;
	FILE			*in;
	size_t			 i;
	int			 hosted = relay_purg_hosted(owner, d), rc;

	if (!relay_web_place_take(c, wsi, hosted, owner, d, &place, &rc))
		return rc;
	if ((wr = calloc(1, sizeof(*wr))) == NULL ||
	    (wr->wr_d = strdup(d)) == NULL)
		fatal("relay_web_repo");
	wr->wr_place = place;
	wr->wr_conn = c;
	wr->wr_wsi = wsi;
	wr->wr_hosted = hosted;
	wr->wr_pid[0] = wr->wr_pid[1] = -1;
	memcpy(wr->wr_owner, owner, PUBKEY_LEN);
	snprintf(wr->wr_npub, sizeof(wr->wr_npub), "%s", npub);
	relay_repo_path(owner, d, wr->wr_repo, sizeof(wr->wr_repo));
	c->rc_kind = CONN_HTTP;
	c->rc_web = wr;
	if (relay_repo_has_refs(wr->wr_repo)) {
		wr->wr_pid[WR_LOG] =
		    web_git(wr, log_args, NULL, &wr->wr_out[WR_LOG]);
		if ((in = tmpfile()) != NULL) {
			for (i = 0;
			     i < sizeof(readme_names) / sizeof(readme_names[0]);
			     i++)
				fprintf(in, "HEAD:%s\n", readme_names[i]);
			fflush(in);
			rewind(in);
			wr->wr_pid[WR_CHECK] =
			    web_git(wr, check_args, in, &wr->wr_out[WR_CHECK]);
			fclose(in);
		}
	}
	if (wr->wr_pid[WR_LOG] == -1 && wr->wr_pid[WR_CHECK] == -1)
		web_child_done(-1, 0, 0, wr);
	return 0;
}
