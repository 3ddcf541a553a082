/*
 * relay_web_feed.c: Atom feeds (RFC 4287) of relayd's web front, run in
 * relayd's loop: /feed.atom, the repositories announced or updated on
 * this server, newest first; /<npub>/<d>.git/feed.atom, what happened in
 * one repository: new issues, patches and pull requests, their status
 * changes, and its state (its branches and tags as the last push left
 * them).  At most RELAY_WEB_FEED_ENTRIES entries, read from the store
 * with the pages' deadline; every text escaped for XML with bytes that
 * are not UTF-8 replaced, so that a feed from peer data stays
 * well-formed.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "log.h"
#include "nip19.h"
#include "relayd.h"

#define ATOM_TYPE "application/atom+xml; charset=utf-8"

/* RFC 3339 as Atom's dates have it (RFC 4287 3.3). */
static void
rfc3339(struct buf *b, int64_t t)
{
	struct tm tm;
	time_t	  tt = (time_t)(t > 0 ? t : 0);

	if (gmtime_r(&tt, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	buf_printf(b, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void
xml(struct buf *b, const char *s)
{
	if (s != NULL)
		relay_html_xml(b, s, strlen(s));
}

/* The feed's head: title, id and links (absolute, on the public URL). */
static void
feed_open(struct buf *b, const char *title, const char *path, int64_t updated)
{
	const char *pub = relayd->cfg.public_url;

	buf_adds(b,
	    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns="
	    "\"http://www.w3.org/2005/Atom\">\n<title>");
	xml(b, title);
	buf_adds(b, "</title>\n<id>");
	xml(b, pub);
	xml(b, path);
	buf_adds(b,
	    "</id>\n<link rel=\"self\" type=\"application/atom+xml\" "
	    "href=\"");
	xml(b, pub);
	xml(b, path);
	buf_adds(b, strcmp(path, "/") == 0 ? "feed.atom" : "/feed.atom");
	buf_adds(b, "\"/>\n<link rel=\"alternate\" type=\"text/html\" href=\"");
	xml(b, pub);
	xml(b, path);
	buf_adds(b, "\"/>\n<updated>");
	rfc3339(b, updated);
	buf_adds(b, "</updated>\n<author><name>");
	xml(b, relayd->cfg.relay_name);
	buf_printf(b,
	    "</name></author>\n<generator version=\"%s\">graspd"
	    "</generator>\n",
	    RELAY_VERSION);
}

/* An entry's author: the kind 0 name, else the npub. */
static void
author(struct buf *b, sqlite3 *db, const uint8_t pk[PUBKEY_LEN])
{
	struct event *p = relay_html_addressed(db, KIND_PROFILE, pk, "");
	char	     *name = p ? relay_html_profile_name(p->json) : NULL;
	char	      npub[NIP19_MAX_LEN + 1];

	if (nip19_encode("npub", pk, npub, sizeof(npub)) == -1)
		npub[0] = '\0';
	buf_adds(b, "<author><name>");
	xml(b, name != NULL ? name : npub);
	buf_adds(b, "</name><uri>nostr:");
	buf_adds(b, npub);
	buf_adds(b, "</uri></author>\n");
	free(name);
	event_destroy(p);
}

/*
 * One entry: title (already XML), the event (its id, time, author), a
 * link to path on the public URL, and text (len bytes) as its content.
 */
static void
entry(struct buf *b, sqlite3 *db, const char *title, const struct event *ev,
    const char *path, const char *text, size_t len)
{
	char note[NIP19_MAX_LEN + 1];

	if (nip19_encode("note", ev->id, note, sizeof(note)) == -1)
		snprintf(note, sizeof(note), "%s", ev->id_hex);
	buf_adds(b, "<entry>\n<title>");
	buf_adds(b, title);
	buf_printf(b, "</title>\n<id>nostr:%s</id>\n<updated>", note);
	rfc3339(b, ev->created_at);
	buf_adds(b, "</updated>\n");
	author(b, db, ev->pubkey);
	buf_adds(b, "<link rel=\"alternate\" type=\"text/html\" href=\"");
	xml(b, relayd->cfg.public_url);
	xml(b, path);
	buf_adds(b, "\"/>\n<content type=\"text\">");
	relay_html_xml(b, text,
	    len > RELAY_WEB_FEED_TEXT ? RELAY_WEB_FEED_TEXT : len);
	buf_adds(b, "</content>\n</entry>\n");
}

static int
feed_send(struct relay_conn *c, struct lws *wsi, struct buf *b, int64_t updated)
{
	char  *body;
	size_t len;

	buf_adds(b, "</feed>\n");
	body = buf_release(b, &len);
	return relay_http_page(c, wsi, HTTP_STATUS_OK, ATOM_TYPE, body, len,
	    updated);
}

int
relay_web_feed_landing(struct relay_conn *c, struct lws *wsi)
{
	static const char sql[] = "SELECT json FROM events WHERE kind = 30617"
				  " AND d IS NOT NULL ORDER BY created_at DESC"
				  " LIMIT ?1";
	struct buf	  b = BUF_INIT, t = BUF_INIT, path = BUF_INIT;
	sqlite3		 *db = relay_html_db_arm(RELAY_WEB_QUERY_MS);
	sqlite3_stmt	 *st;
	struct event	 *ev[RELAY_WEB_FEED_ENTRIES];
	const char	 *json, *name, *desc;
	char		  err[64], npub[NIP19_MAX_LEN + 1];
	size_t		  n = 0, i;
	int64_t		  updated;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, RELAY_WEB_FEED_ENTRIES);
		while (n < RELAY_WEB_FEED_ENTRIES &&
		    sqlite3_step(st) == SQLITE_ROW)
			if ((json = (const char *)sqlite3_column_text(st, 0)) !=
				NULL &&
			    (ev[n] = event_parse(json, strlen(json), err,
				 sizeof(err))) != NULL &&
			    event_d(ev[n]) != NULL)
				n++;
		sqlite3_finalize(st);
	}
	updated = n ? ev[0]->created_at : 0;
	feed_open(&b, relayd->cfg.relay_name, "/",
	    updated ? updated : (int64_t)time(NULL));
	for (i = 0; i < n; i++) {
		name = relay_html_tag1(ev[i], "name");
		desc = relay_html_tag1(ev[i], "description");
		if (nip19_encode("npub", ev[i]->pubkey, npub, sizeof(npub)) ==
		    -1)
			npub[0] = '\0';
		buf_reset(&t);
		buf_reset(&path);
		xml(&t, name && *name ? name : event_d(ev[i]));
		buf_adds(&t, " (repository announced or updated)");
		buf_printf(&path, "/%s/", npub);
		relay_html_url(&path, event_d(ev[i]));
		buf_adds(&path, ".git");
		entry(&b, db, t.b_data, ev[i], path.b_data, desc ? desc : "",
		    desc ? strlen(desc) : 0);
		event_destroy(ev[i]);
	}
	relay_html_db_disarm(db);
	buf_free(&t);
	buf_free(&path);
	return feed_send(c, wsi, &b, updated);
}

/* Newest first, for qsort. */
static int
newer(const void *a, const void *b)
{
	const struct event *x = *(struct event *const *)a;
	const struct event *y = *(struct event *const *)b;

	return x->created_at < y->created_at ? 1 :
	    x->created_at > y->created_at    ? -1 :
					       memcmp(x->id, y->id, EVENT_ID_LEN);
}

/*
 * Reads the rows of st (one JSON column) into v, skipping duplicates,
 * until v holds cap or *bytes of JSON were read past
 * RELAY_WEB_THREAD_READ_BYTES.
 */
static void
collect(sqlite3_stmt *st, struct event **v, size_t *n, size_t cap,
    size_t *bytes)
{
	struct event *ev;
	const char   *json;
	char	      err[64];
	size_t	      i;

	while (*n < cap && *bytes <= RELAY_WEB_THREAD_READ_BYTES &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*bytes += (size_t)sqlite3_column_bytes(st, 0);
		json = (const char *)sqlite3_column_text(st, 0);
		if (json == NULL ||
		    (ev = event_parse(json, strlen(json), err, sizeof(err))) ==
			NULL)
			continue;
		for (i = 0;
		     i < *n && memcmp(v[i]->id, ev->id, EVENT_ID_LEN) != 0; i++)
			;
		if (i < *n)
			event_destroy(ev);
		else
			v[(*n)++] = ev;
	}
}

/* The kind of the stored event id (hex), or 0. */
static uint32_t
kind_of(sqlite3 *db, const char *hex)
{
	sqlite3_stmt *st;
	uint8_t	      id[EVENT_ID_LEN];
	uint32_t      k = 0;

	if (hex == NULL || strlen(hex) != EVENT_ID_HEX_LEN ||
	    hex_decode(hex, EVENT_ID_HEX_LEN, id, EVENT_ID_LEN) ||
	    sqlite3_prepare_v2(db, "SELECT kind FROM events WHERE id = ?1", -1,
		&st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		k = (uint32_t)sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return k;
}

/* The events a repository's feed reads: two queries, then the states. */
#define FEED_EVENTS_MAX (3 * RELAY_WEB_FEED_ENTRIES + RELAY_WEB_MAINTAINERS_MAX)

/*
 * The events of the repository's feed into v (room for
 * FEED_EVENTS_MAX), newest first: its threads and statuses, and the
 * newest state of the owner and of each maintainer its announcement
 * (*annp, owned by the caller; NULL when none) names.  Returns how many.
 */
static size_t
feed_events(sqlite3 *db, const uint8_t owner[PUBKEY_LEN], const char *d,
    struct event **v, struct event **annp)
{
	/* Threads and statuses tagging the repository ... */
	static const char tagged[] =
	    "SELECT e.json FROM tags t JOIN events e ON e.seq = t.event"
	    " WHERE t.letter = 'a' AND t.cases & " DB_TAG_LOWER_SQL
	    " AND t.value = ?1"
	    " AND e.kind IN (1617, 1618, 1621, 1630, 1631, 1632, 1633)"
	    " ORDER BY t.created_at DESC LIMIT ?2";
	/* ... and statuses naming one of its recent threads only by id. */
	static const char named[] =
	    "SELECT s.json FROM tags st JOIN events s ON s.seq = st.event"
	    " WHERE st.letter = 'e' AND st.cases & " DB_TAG_LOWER_SQL
	    " AND st.value IN ("
	    "  SELECT e.id FROM tags t JOIN events e ON e.seq = t.event"
	    "  WHERE t.letter = 'a' AND t.cases & " DB_TAG_LOWER_SQL
	    " AND t.value = ?1"
	    "  AND e.kind IN (1617, 1618, 1621)"
	    "  ORDER BY t.created_at DESC LIMIT ?2)"
	    " AND s.kind BETWEEN 1630 AND 1633"
	    " ORDER BY st.created_at DESC LIMIT ?2";
	struct buf    coord = BUF_INIT;
	struct event *ann, *ev;
	uint8_t	      keys[RELAY_WEB_MAINTAINERS_MAX][PUBKEY_LEN];
	sqlite3_stmt *st;
	size_t	      n = 0, nkeys, i, k, bytes = 0;

	ann = relay_html_addressed(db, KIND_REPO_ANNOUNCEMENT, owner, d);
	if (ann != NULL)
		nkeys = relay_web_maintainers(ann, keys, NULL);
	else {
		memcpy(keys[0], owner, PUBKEY_LEN);
		nkeys = 1;
	}
	buf_adds(&coord, "30617:");
	buf_add_hex(&coord, owner, PUBKEY_LEN);
	buf_printf(&coord, ":%s", d);
	for (i = 0; i < 2; i++) {
		if (sqlite3_prepare_v2(db, i ? named : tagged, -1, &st, NULL) !=
		    SQLITE_OK)
			continue;
		db_bind_tag_value(st, 1, coord.b_data, coord.b_len);
		sqlite3_bind_int(st, 2, RELAY_WEB_FEED_ENTRIES);
		collect(st, v, &n, (i + 1) * RELAY_WEB_FEED_ENTRIES, &bytes);
		sqlite3_finalize(st);
	}
	/* Pushes: the newest state of each maintainer. */
	for (k = 0; k < nkeys; k++)
		if ((ev = relay_html_addressed(db, KIND_REPO_STATE, keys[k],
			 d)) != NULL)
			v[n++] = ev;
	qsort(v, n, sizeof(v[0]), newer);
	buf_free(&coord);
	*annp = ann;
	return n;
}

/*
 * The feed entry of ev (a thread, a state or a status) of the
 * repository whose page is at base.
 */
static void
feed_item(struct buf *b, sqlite3 *db, const struct event *ev, const char *base)
{
	struct buf	  t = BUF_INIT, path = BUF_INIT, text = BUF_INIT;
	struct relay_refs refs;
	const char	 *sec, *target;
	char		 *head;
	size_t		  k;
	uint32_t	  kind;

	buf_adds(&path, base);
	if ((sec = relay_web_thread_section(ev->kind)) != NULL) {
		/* A thread: its title, its page, its text. */
		buf_printf(&t, "New %s: ",
		    ev->kind == KIND_ISSUE  ? "issue" :
			ev->kind == KIND_PR ? "pull request" :
					      "patch");
		target = relay_web_thread_subject(ev, &k);
		relay_html_xml(&t, target, k);
		buf_printf(&path, "/%s/%s", sec, ev->id_hex);
		entry(b, db, t.b_data, ev, path.b_data, ev->content.s,
		    ev->content.len);
	} else if (ev->kind == KIND_REPO_STATE) {
		buf_adds(&t, "Pushed: the branches and tags changed");
		memset(&refs, 0, sizeof(refs));
		head = NULL;
		relay_state_refs(ev, &refs, &head);
		for (k = 0; k < refs.n && k < RELAY_WEB_REFS_MAX; k++)
			buf_printf(&text, "%s %s\n", refs.v[k].rf_name,
			    refs.v[k].rf_oid);
		entry(b, db, t.b_data, ev, path.b_data,
		    text.b_data ? text.b_data : "", text.b_len);
		relay_refs_free(&refs);
		free(head);
	} else {
		/* A status: what it made of which thread. */
		target = relay_html_tag1(ev, "e");
		kind = kind_of(db, target);
		buf_printf(&t, "Status: %s",
		    relay_web_status_name((int)ev->kind));
		if ((sec = relay_web_thread_section(kind)) != NULL)
			buf_printf(&path, "/%s/%s", sec, target);
		entry(b, db, t.b_data, ev, path.b_data, ev->content.s,
		    ev->content.len);
	}
	buf_free(&t);
	buf_free(&path);
	buf_free(&text);
}

int
relay_web_feed_repo(struct relay_conn *c, struct lws *wsi, const char *npub,
    const uint8_t owner[PUBKEY_LEN], const char *d)
{
	struct buf    b = BUF_INIT, base = BUF_INIT;
	struct event *ann, *v[FEED_EVENTS_MAX];
	sqlite3	     *db = relay_html_db_arm(RELAY_WEB_QUERY_MS);
	const char   *name;
	char	      title[512];
	size_t	      n, i;
	int64_t	      updated;

	n = feed_events(db, owner, d, v, &ann);
	buf_printf(&base, "/%s/", npub);
	relay_html_url(&base, d);
	buf_adds(&base, ".git");
	name = ann ? relay_html_tag1(ann, "name") : NULL;
	snprintf(title, sizeof(title), "%s \xc2\xb7 %s",
	    name && *name ? name : d, relayd->cfg.relay_name);
	updated = n ? v[0]->created_at : 0;
	feed_open(&b, title, base.b_data,
	    updated ? updated : (int64_t)time(NULL));
	for (i = 0; i < n; i++) {
		if (i < RELAY_WEB_FEED_ENTRIES)
			feed_item(&b, db, v[i], base.b_data);
		event_destroy(v[i]);
	}
	relay_html_db_disarm(db);
	event_destroy(ann);
	buf_free(&base);
	return feed_send(c, wsi, &b, updated);
}
