/*
 * relay_web_thread.c: the thread pages of relayd's web front, run in
 * relayd's loop: an issue (1621), a patch (1617) or a pull request (1618)
 * of a hosted repository at /<npub>/<d>.git/{issues,patches,prs}/<id>,
 * with its subject, body, labels, status history (1630-1633), replies in
 * thread order (NIP-22 kind 1111 and NIP-34's older replies, each with
 * the reactions it got) and the identifiers other clients open it by
 * (nevent, naddr, gitworkshop.dev).
 *
 * Everything comes from the store, read through relayd's connection with
 * the pages' deadline (relay_html_db_arm()): the events naming the
 * thread by an "e" or "E" tag, at most RELAY_WEB_THREAD_READ of them
 * and RELAY_WEB_THREAD_READ_BYTES of their JSON;
 * at most RELAY_WEB_REPLIES replies and RELAY_WEB_THREAD_BYTES of HTML
 * are rendered, a "more" link pages on.  Peer text goes out escaped or
 * through cmark (relay_html.c).
 */
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "db.h"
#include "event.h"
#include "log.h"
#include "nip19.h"
#include "relay_web_diff.h"
#include "relayd.h"

/* NIP-22: a comment; NIP-34's older reply kind; NIP-25; NIP-32. */
#define KIND_NOTE     1
#define KIND_REACTION 7
#define KIND_COMMENT  1111
#define KIND_REPLY    1622
#define KIND_LABEL    1985

/* The kinds of a thread and the sections of their URLs. */
static const struct {
	uint32_t    kind;
	const char *section; /* /<npub>/<d>.git/<section>/<id> */
	const char *name;    /* for people */
	const char *gw;	     /* gitworkshop.dev's section */
} sections[] = {
	{ KIND_ISSUE, "issues", "issue", "issues" },
	{ KIND_PATCH, "patches", "patch", "prs" },
	{ KIND_PR, "prs", "pull request", "prs" },
};

const char *
relay_web_thread_section(uint32_t kind)
{
	size_t i;

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (sections[i].kind == kind)
			return sections[i].section;
	return NULL;
}

static const char *
kind_name(uint32_t kind)
{
	size_t i;

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (sections[i].kind == kind)
			return sections[i].name;
	return "event";
}

const char *
relay_web_status_name(int kind)
{
	switch (kind) {
	case KIND_STATUS_APPLIED:
		return "merged";
	case KIND_STATUS_CLOSED:
		return "closed";
	case KIND_STATUS_DRAFT:
		return "draft";
	default:
		return "open";
	}
}

const char *
relay_web_thread_subject(const struct event *ev, size_t *lenp)
{
	const char *s = relay_html_tag1(ev, "subject"), *p;

	if (s != NULL && *s) {
		*lenp = relay_html_cut(s, RELAY_WEB_DESC_MAX);
		return s;
	}
	p = ev->content.s;
	if ((s = strstr(p, "\nSubject: ")) != NULL)
		p = s + 10;
	else if (strncmp(p, "Subject: ", 9) == 0)
		p += 9;
	/* git format-patch's "[PATCH n/m] " says nothing to a reader. */
	if (strncmp(p, "[PATCH", 6) == 0 && (s = strchr(p, ']')) != NULL &&
	    s < p + strcspn(p, "\n"))
		p = s + 1 + (s[1] == ' ');
	*lenp = strcspn(p, "\n");
	if (*lenp > RELAY_WEB_DESC_MAX)
		*lenp = RELAY_WEB_DESC_MAX;
	return p;
}

void
relay_web_thread_title(struct buf *b, const struct event *ev)
{
	size_t	    n;
	const char *p = relay_web_thread_subject(ev, &n);

	if (n == 0)
		buf_adds(b, "(untitled)");
	else
		relay_web_escape(b, p, n);
}

/* The people of one page, their kind 0 names read once. */
struct who {
	uint8_t pk[PUBKEY_LEN];
	char   *name; /* NULL: none */
};

/* What one page is made of. */
struct thread {
	sqlite3	   *db;
	int64_t	    now;
	const char *npub; /* the owner's */
	const char *d;
	const char *base; /* /<npub>/<d>.git, URL-escaped */
	uint8_t keys[RELAY_WEB_MAINTAINERS_MAX][PUBKEY_LEN]; /* owner first */
	size_t	nkeys;
	struct event *root;
	struct event *ev[RELAY_WEB_THREAD_READ]; /* naming the root */
	size_t	      nev;
	size_t	      read; /* bytes of their JSON */
	int	      more; /* more than RELAY_WEB_THREAD_READ{,_BYTES} */
	struct who    who[RELAY_WEB_PEOPLE];
	size_t	      nwho;
};

/* name, the kind 0 name of pk, from the page's list or the store. */
static const char *
who_name(struct thread *t, const uint8_t pk[PUBKEY_LEN])
{
	struct event *p;
	size_t	      i;

	for (i = 0; i < t->nwho; i++)
		if (memcmp(t->who[i].pk, pk, PUBKEY_LEN) == 0)
			return t->who[i].name;
	p = relay_html_addressed(t->db, KIND_PROFILE, pk, "");
	if (t->nwho == RELAY_WEB_PEOPLE) {
		/* A page of many people: names past the list's end are
		 * left out rather than read again and again. */
		event_destroy(p);
		return NULL;
	}
	memcpy(t->who[t->nwho].pk, pk, PUBKEY_LEN);
	t->who[t->nwho].name = p ? relay_html_profile_name(p->json) : NULL;
	event_destroy(p);
	return t->who[t->nwho++].name;
}

/* A person: kind 0 name where known, with the npub beside. */
static void
who(struct buf *b, struct thread *t, const uint8_t pk[PUBKEY_LEN])
{
	const char *name = who_name(t, pk);
	char	    npub[NIP19_MAX_LEN + 1];

	if (nip19_encode("npub", pk, npub, sizeof(npub)) == -1)
		npub[0] = '\0';
	buf_adds(b, "<span class=\"who\">");
	if (name != NULL) {
		buf_adds(b, "<b>");
		relay_html_esc(b, name);
		buf_adds(b, "</b> ");
	}
	buf_printf(b, "<span class=\"pk\" title=\"%s\">", npub);
	relay_html_npub(b, npub);
	buf_adds(b, "</span></span>");
}

/* 1 if pk is the owner or a maintainer the announcement lists. */
static int
is_maintainer(const struct thread *t, const uint8_t pk[PUBKEY_LEN])
{
	size_t i;

	for (i = 0; i < t->nkeys; i++)
		if (memcmp(t->keys[i], pk, PUBKEY_LEN) == 0)
			return 1;
	return 0;
}

/* 1 if ev is of the repository: an "a" tag naming it by a maintainer. */
static int
of_repository(const struct thread *t, const struct event *ev)
{
	const struct event_tag *g;
	char			want[256];
	size_t			i, k;

	for (i = 0; i < ev->ntags; i++) {
		g = &ev->tags[i];
		if (g->n < 2 || strcmp(g->v[0].s, "a") != 0)
			continue;
		for (k = 0; k < t->nkeys; k++) {
			snprintf(want, sizeof(want), "30617:");
			hex_encode(t->keys[k], PUBKEY_LEN, want + 6);
			snprintf(want + 70, sizeof(want) - 70, ":%s", t->d);
			if (strcmp(g->v[1].s, want) == 0)
				return 1;
		}
	}
	return 0;
}

/* The stored event whose id is id, parsed, or NULL. */
static struct event *
by_id(sqlite3 *db, const uint8_t id[EVENT_ID_LEN])
{
	sqlite3_stmt *st;
	struct event *ev = NULL;
	const char   *json;
	char	      err[64];

	if (sqlite3_prepare_v2(db, "SELECT json FROM events WHERE id = ?1", -1,
		&st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_blob(st, 1, id, EVENT_ID_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (json = (const char *)sqlite3_column_text(st, 0)) != NULL)
		ev = event_parse(json, strlen(json), err, sizeof(err));
	sqlite3_finalize(st);
	return ev;
}

/*
 * The events naming the root by an "e" or "E" tag (a tag row's value is
 * the id's 32 bytes, db.h) of the kinds a thread is made of, oldest
 * first, at most RELAY_WEB_THREAD_READ, into t->ev.
 */
static void
related(struct thread *t)
{
	static const char sql[] =
	    "SELECT json FROM events WHERE seq IN (SELECT event FROM tags"
	    " WHERE letter = 'e' AND value = ?1) AND kind IN (1, 7, 1111,"
	    " 1617, 1619, 1622, 1630, 1631, 1632, 1633, 1985)"
	    " ORDER BY created_at, seq LIMIT ?2";
	/* Reactions to the replies that do not name the root themselves. */
	static const char rx[] =
	    "SELECT json FROM events WHERE kind = 7 AND seq IN ("
	    " SELECT r.event FROM tags r WHERE r.letter = 'e' AND r.value IN ("
	    "  SELECT e.id FROM events e WHERE e.kind IN (1, 1111, 1617, 1622)"
	    "  AND e.seq IN (SELECT event FROM tags WHERE letter = 'e'"
	    "  AND value = ?1)))"
	    " AND seq NOT IN (SELECT event FROM tags WHERE letter = 'e'"
	    " AND value = ?1) LIMIT ?2";
	sqlite3_stmt *st;
	struct event *ev;
	const char   *json;
	char	      err[64];
	int	      q;

	for (q = 0; q < 2; q++) {
		if (sqlite3_prepare_v2(t->db, q ? rx : sql, -1, &st, NULL) !=
		    SQLITE_OK)
			return;
		sqlite3_bind_blob(st, 1, t->root->id, EVENT_ID_LEN,
		    SQLITE_STATIC);
		sqlite3_bind_int(st, 2,
		    RELAY_WEB_THREAD_READ + 1 - (int)t->nev);
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (t->nev == RELAY_WEB_THREAD_READ ||
			    t->read > RELAY_WEB_THREAD_READ_BYTES) {
				t->more = 1;
				break;
			}
			t->read += (size_t)sqlite3_column_bytes(st, 0);
			json = (const char *)sqlite3_column_text(st, 0);
			if (json != NULL &&
			    (ev = event_parse(json, strlen(json), err,
				 sizeof(err))) != NULL)
				t->ev[t->nev++] = ev;
		}
		sqlite3_finalize(st);
	}
}

/* The last "e" tag's id of ev (NIP-25: the reacted-to event), or -1. */
static int
last_e(const struct event *ev, uint8_t id[EVENT_ID_LEN])
{
	size_t i;

	for (i = ev->ntags; i-- > 0;)
		if (ev->tags[i].n >= 2 &&
		    strcmp(ev->tags[i].v[0].s, "e") == 0 &&
		    ev->tags[i].v[1].len == EVENT_ID_HEX_LEN &&
		    hex_decode(ev->tags[i].v[1].s, EVENT_ID_HEX_LEN, id,
			EVENT_ID_LEN) == 0)
			return 0;
	return -1;
}

/* The reactions to the event id, counted by content, as a line. */
static void
reactions(struct buf *b, const struct thread *t, const uint8_t id[EVENT_ID_LEN])
{
	struct {
		const char *s;
		size_t	    len;
		int	    n;
	} seen[RELAY_WEB_REACTION_KINDS];
	const struct event *ev;
	uint8_t		    to[EVENT_ID_LEN];
	const char	   *s;
	size_t		    i, k, nseen = 0, len;

	for (i = 0; i < t->nev; i++) {
		ev = t->ev[i];
		if (ev->kind != KIND_REACTION || last_e(ev, to) == -1 ||
		    memcmp(to, id, EVENT_ID_LEN) != 0)
			continue;
		s = ev->content.s;
		len = relay_html_cut(s, RELAY_WEB_REACTION_MAX);
		if (len == 0) {
			s = "+"; /* NIP-25: empty is a like, as "+" */
			len = 1;
		}
		for (k = 0; k < nseen; k++)
			if (seen[k].len == len &&
			    memcmp(seen[k].s, s, len) == 0)
				break;
		if (k == nseen) {
			if (nseen == RELAY_WEB_REACTION_KINDS)
				continue;
			seen[nseen].s = s;
			seen[nseen].len = len;
			seen[nseen++].n = 0;
		}
		seen[k].n++;
	}
	if (nseen == 0)
		return;
	buf_adds(b, "<p class=\"rx\">");
	for (k = 0; k < nseen; k++) {
		buf_adds(b, "<span class=\"tag\">");
		relay_web_escape(b, seen[k].s, seen[k].len);
		buf_printf(b, " %d</span>", seen[k].n);
	}
	buf_adds(b, "</p>");
}

/* A post's text: Markdown through cmark, or escaped if cmark fails. */
static void
body_md(struct buf *b, const struct estr *c, size_t max)
{
	size_t len = c->len < max ? c->len : max;

	buf_adds(b, "<div class=\"md\">");
	if (relay_html_markdown(b, c->s, len) == -1) {
		buf_adds(b, "<pre class=\"readme\">");
		relay_web_escape(b, c->s, len);
		buf_adds(b, "</pre>");
	}
	if (len < c->len)
		buf_adds(b, "<p class=\"d\">(cut: too long to show here)</p>");
	buf_adds(b, "</div>");
}

/*
 * A patch's text through the diff renderer (relay_web_diff.c), its
 * anchors prefixed by the event's so that a page's patches differ.
 */
static void
body_patch(struct buf *b, const struct event *ev)
{
	char id[20];

	snprintf(id, sizeof(id), "p%.12s", ev->id_hex);
	buf_adds(b, "<div class=\"patch\">");
	relay_web_diff(b, ev->content.s, ev->content.len, id, NULL);
	buf_adds(b, "</div>");
}

/* The anchor of an event on the page: "e" and 16 hex digits. */
static void
anchor(struct buf *b, const uint8_t id[EVENT_ID_LEN])
{
	buf_addc(b, 'e');
	buf_add_hex(b, id, 8);
}

/* One post's head: who, when, and what it answers. */
static void
post_head(struct buf *b, struct thread *t, const struct event *ev,
    const char *what)
{
	const char *parent;

	buf_adds(b, "<div class=\"ph\">");
	who(b, t, ev->pubkey);
	buf_printf(b, " %s ", what);
	relay_html_time(b, ev->created_at, t->now);
	buf_adds(b, " <a class=\"pk\" href=\"#");
	anchor(b, ev->id);
	buf_adds(b, "\">#</a>");
	/* NIP-22: "e" is the parent; NIP-10's reply marker the same. */
	parent = relay_html_tag1(ev, "e");
	if (parent != NULL && strlen(parent) == EVENT_ID_HEX_LEN &&
	    strcasecmp(parent, t->root->id_hex) != 0) {
		buf_adds(b, " <a class=\"pk\" href=\"#e");
		relay_web_escape(b, parent, 16);
		buf_adds(b, "\">in reply</a>");
	}
	buf_adds(b, "</div>");
}

/* The labels: the root's "t" tags and NIP-32 labels by maintainers. */
static void
labels(struct buf *b, const struct thread *t)
{
	static const char *const skip[] = { "root", "root-revision",
		"revision-root", "cover-letter" };
	const struct event_tag	*g;
	const struct event	*ev;
	size_t			 i, k, n = 0, e;

	for (e = 0; e <= t->nev; e++) {
		ev = e == 0 ? t->root : t->ev[e - 1];
		if (e > 0 &&
		    (ev->kind != KIND_LABEL ||
			!(is_maintainer(t, ev->pubkey) ||
			    memcmp(ev->pubkey, t->root->pubkey, PUBKEY_LEN) ==
				0)))
			continue;
		for (i = 0; i < ev->ntags && n < RELAY_WEB_LABELS_MAX; i++) {
			g = &ev->tags[i];
			if (g->n < 2 ||
			    strcmp(g->v[0].s, e == 0 ? "t" : "l") != 0)
				continue;
			for (k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
				if (strcmp(g->v[1].s, skip[k]) == 0)
					break;
			if (k < sizeof(skip) / sizeof(skip[0]))
				continue;
			buf_adds(b, n++ ? "" : "<p id=\"labels\">");
			buf_adds(b, "<span class=\"tag\">");
			relay_web_escape(b, g->v[1].s,
			    relay_html_cut(g->v[1].s, RELAY_WEB_NAME_MAX));
			buf_adds(b, "</span>");
		}
	}
	if (n)
		buf_adds(b, "</p>\n");
}

/*
 * The status history: every status naming the thread, by whom and
 * when; only the author's and the maintainers' count (NIP-34).  Returns
 * the current status kind.
 */
static int
statuses(struct buf *b, struct thread *t)
{
	const struct event *ev;
	size_t		    i;
	int		    cur = KIND_STATUS_OPEN, any = 0, counts;

	for (i = 0; i < t->nev; i++) {
		ev = t->ev[i];
		if (ev->kind < KIND_STATUS_OPEN || ev->kind > KIND_STATUS_DRAFT)
			continue;
		counts = is_maintainer(t, ev->pubkey) ||
		    memcmp(ev->pubkey, t->root->pubkey, PUBKEY_LEN) == 0;
		if (counts)
			cur = (int)ev->kind;
		if (!any++)
			buf_adds(b,
			    "<h2>Status history</h2>\n<ul class=\"card hist\" "
			    "id=\"statuses\">\n");
		buf_printf(b, "<li id=\"");
		anchor(b, ev->id);
		buf_printf(b, "\"><span class=\"st s%u\">%s</span> ", ev->kind,
		    relay_web_status_name((int)ev->kind));
		who(b, t, ev->pubkey);
		buf_adds(b, " ");
		relay_html_time(b, ev->created_at, t->now);
		if (!counts)
			buf_adds(b,
			    " <span class=\"pk\">(not counted: neither the "
			    "author nor a maintainer)</span>");
		if (ev->content.len > 0) {
			buf_adds(b, "<div class=\"d\">");
			relay_web_escape(b, ev->content.s,
			    relay_html_cut(ev->content.s, RELAY_WEB_DESC_MAX));
			buf_adds(b, "</div>");
		}
		buf_adds(b, "</li>\n");
	}
	if (any)
		buf_adds(b, "</ul>\n");
	return cur;
}

/* The identifiers other clients know the thread by. */
static void
identifiers(struct buf *b, const struct thread *t, size_t sec)
{
	const char *pub = relayd->cfg.public_url;
	char	    ws[512], nevent[NIP19_TLV_BUFSZ], naddr[NIP19_TLV_BUFSZ];
	const char *c, *br;
	size_t	    i;

	config_relay_url(&relayd->cfg, ws, sizeof(ws));
	if (nip19_nevent(t->root->id, ws, t->root->pubkey, (long)t->root->kind,
		nevent, sizeof(nevent)) == -1)
		nevent[0] = '\0';
	if (nip19_naddr(KIND_REPO_ANNOUNCEMENT, t->keys[0], t->d, ws, naddr,
		sizeof(naddr)) == -1)
		naddr[0] = '\0';
	buf_adds(b, "<div class=\"card\"><dl>\n");
	if (t->root->kind == KIND_PR) {
		/* Its commits and diff: the git pages (relay_web_git.c). */
		buf_printf(b,
		    "<dt>Changes</dt><dd><a id=\"prdiff\" href=\"%s/pr/%s/"
		    "diff\">commits and diff</a></dd>\n",
		    t->base, t->root->id_hex);
		if ((c = relay_html_tag1(t->root, "c")) != NULL) {
			buf_adds(b, "<dt>Tip</dt><dd><code id=\"tip\">");
			if (strlen(c) == 40 &&
			    strspn(c, "0123456789abcdef") == 40)
				buf_printf(b, "<a href=\"%s/commit/%s\">%s</a>",
				    t->base, c, c);
			else
				relay_web_escape(b, c, strnlen(c, 64));
			buf_adds(b, "</code>");
			if ((br = relay_html_tag1(t->root, "branch-name")) !=
			    NULL) {
				buf_adds(b, " on <code>");
				relay_web_escape(b, br,
				    relay_html_cut(br, RELAY_WEB_NAME_MAX));
				buf_adds(b, "</code>");
			}
			buf_adds(b, "</dd>\n");
		}
		for (i = 0; i < t->root->ntags; i++)
			if (t->root->tags[i].n >= 2 &&
			    strcmp(t->root->tags[i].v[0].s, "clone") == 0) {
				buf_adds(b,
				    "<dt>Fetch from</dt><dd><code "
				    "class=\"u\">");
				relay_web_escape(b, t->root->tags[i].v[1].s,
				    relay_html_cut(t->root->tags[i].v[1].s,
					RELAY_WEB_DESC_MAX));
				buf_adds(b, "</code></dd>\n");
				break;
			}
	}
	buf_printf(b,
	    "<dt>Event</dt><dd><code class=\"u\" id=\"nevent\">%s</code>"
	    "</dd>\n<dt>Repository</dt><dd><code class=\"u\" id=\"naddr\">"
	    "%s</code></dd>\n<dt>Open in</dt><dd><a id=\"gitworkshop\" "
	    "href=\"https://gitworkshop.dev/%s/",
	    nevent, naddr, t->npub);
	/* The repository as the repository page links it, then the thread. */
	if (strncmp(pub, "https://", 8) == 0) {
		relay_html_url(b, pub + 8);
		buf_addc(b, '/');
	}
	relay_html_url(b, t->d);
	buf_printf(b, "/%s/%s\">gitworkshop.dev</a></dd>\n</dl></div>\n",
	    sections[sec].gw, nevent);
}

/* The link to page n of the thread, in b. */
static void
more_link(struct buf *b, long n, const char *text)
{
	buf_printf(b, "<a href=\"?page=%ld\">%s</a>", n, text);
}

/* 1 if ev is a reply the page lists (and counts). */
static int
is_reply(const struct event *ev)
{
	return ev->kind == KIND_COMMENT || ev->kind == KIND_REPLY ||
	    ev->kind == KIND_NOTE || ev->kind == KIND_PATCH ||
	    ev->kind == KIND_PR_UPDATE;
}

/*
 * The head of the thread's page below its subject: the current status,
 * who opened it and when, its replies counted, labels and identifiers,
 * the root post, then the status history.
 */
static void
root_post(struct buf *b, struct thread *t, size_t sec, size_t replies)
{
	struct buf hist = BUF_INIT;
	int	   status;

	/* Statuses go below, but the current one heads the page. */
	status = statuses(&hist, t);
	buf_printf(b,
	    "<p class=\"d\"><span class=\"st s%d\" id=\"status\">%s"
	    "</span> %s opened by ",
	    status, relay_web_status_name(status), kind_name(t->root->kind));
	who(b, t, t->root->pubkey);
	buf_adds(b, " ");
	relay_html_time(b, t->root->created_at, t->now);
	buf_printf(b, " &middot; %zu repl%s%s</p>\n", replies,
	    replies == 1 ? "y" : "ies", t->more ? " or more" : "");
	labels(b, t);
	identifiers(b, t, sec);
	buf_adds(b, "<div class=\"card post\" id=\"");
	anchor(b, t->root->id);
	buf_adds(b, "\">");
	post_head(b, t, t->root, "wrote");
	if (t->root->kind == KIND_PATCH)
		body_patch(b, t->root);
	else
		body_md(b, &t->root->content, RELAY_WEB_BODY_MAX);
	reactions(b, t, t->root->id);
	buf_adds(b, "</div>\n");
	buf_add(b, hist.b_data, hist.b_len);
	buf_free(&hist);
}

/* One reply's post: a patch, a PR's new tip or a comment. */
static void
reply_post(struct buf *b, struct thread *t, const struct event *ev)
{
	buf_adds(b, "<div class=\"card post reply\" id=\"");
	anchor(b, ev->id);
	buf_adds(b, "\">");
	if (ev->kind == KIND_PATCH) {
		post_head(b, t, ev, "sent a patch");
		buf_adds(b, "<p><b>");
		relay_web_thread_title(b, ev);
		buf_adds(b, "</b></p>");
		body_patch(b, ev);
	} else if (ev->kind == KIND_PR_UPDATE) {
		post_head(b, t, ev, "updated the tip");
		buf_adds(b, "<p>New tip <code>");
		relay_html_esc(b, relay_html_tag1(ev, "c"));
		buf_adds(b, "</code></p>");
	} else {
		post_head(b, t, ev, "replied");
		body_md(b, &ev->content, RELAY_WEB_REPLY_MAX);
	}
	reactions(b, t, ev->id);
	buf_adds(b, "</div>\n");
}

/*
 * The replies of page (1-based), at most RELAY_WEB_REPLIES and until the
 * page passes RELAY_WEB_THREAD_BYTES, with the links to the pages
 * before and after.
 */
static void
replies_page(struct buf *b, struct thread *t, long page)
{
	const struct event *ev;
	size_t		    i, first, shown = 0, replies = 0;

	buf_printf(b, "<h2>Replies</h2>\n<div id=\"replies\">\n");
	first = (size_t)(page - 1) * RELAY_WEB_REPLIES;
	for (i = 0; i < t->nev; i++) {
		ev = t->ev[i];
		if (!is_reply(ev))
			continue;
		if (replies++ < first)
			continue;
		if (shown == RELAY_WEB_REPLIES ||
		    b->b_len > RELAY_WEB_THREAD_BYTES)
			break;
		reply_post(b, t, ev);
		shown++;
	}
	if (shown == 0)
		buf_adds(b, "<p class=\"d\">No replies yet.</p>\n");
	buf_adds(b, "</div>\n<div class=\"pg\"><span>");
	if (page > 1)
		more_link(b, page - 1, "&larr; Earlier replies");
	buf_adds(b, "</span><span>");
	if (i < t->nev)
		more_link(b, page + 1, "More replies &rarr;");
	else if (t->more)
		buf_adds(b,
		    "<span class=\"pk\">The thread has more events "
		    "than a page reads.</span>");
	buf_adds(b, "</span></div>\n");
}

/*
 * The page of the thread root (found, of the repository) into b: page
 * is 1-based; returns the newest time the page shows.
 */
static int64_t
render(struct buf *b, struct thread *t, size_t sec, const char *repo_name,
    long page)
{
	size_t	    i, replies = 0, sn;
	int64_t	    mtime = t->root->created_at;
	const char *sp = relay_web_thread_subject(t->root, &sn);
	char	    title[1024];

	snprintf(title, sizeof(title), "%.*s \xc2\xb7 %s", (int)sn, sp,
	    repo_name);
	relay_html_open(b, title, relayd->cfg.relay_name);
	buf_printf(b,
	    "<p><a href=\"/\">All repositories</a> / <a href=\"%s\" "
	    "id=\"repo\">",
	    t->base);
	relay_html_esc(b, repo_name);
	buf_adds(b, "</a></p></div></div></header>\n<div class=\"w\">\n");
	buf_adds(b, "<h2 class=\"title\" id=\"subject\">");
	relay_web_thread_title(b, t->root);
	buf_adds(b, "</h2>\n");
	for (i = 0; i < t->nev; i++) {
		if (t->ev[i]->created_at > mtime)
			mtime = t->ev[i]->created_at;
		if (is_reply(t->ev[i]))
			replies++;
	}
	root_post(b, t, sec, replies);
	replies_page(b, t, page);
	if (relay_html_db_interrupted())
		buf_adds(b,
		    "<p class=\"d\">The thread took too long to read: "
		    "this page shows part of it.</p>\n");
	relay_html_close(b);
	return mtime;
}

/* The thread page of the id at /<npub>/<d>.git/<section>/<id>. */
static int
thread_page(struct relay_conn *c, struct lws *wsi, const char *npub,
    const uint8_t owner[PUBKEY_LEN], const char *d, size_t sec,
    const char *idstr, size_t idlen)
{
	struct thread *t;
	struct event  *ann;
	struct buf     b = BUF_INIT, base = BUF_INIT;
	uint8_t	       id[EVENT_ID_LEN];
	char	       s[NIP19_MAX_LEN + 1], pg[16], *body;
	const char    *name, *v;
	long	       page = 1;
	int64_t	       mtime;
	size_t	       i, len;
	int	       rc;

	s[0] = '\0';
	if (idlen < sizeof(s)) {
		memcpy(s, idstr, idlen);
		s[idlen] = '\0';
	}
	if (!(idlen == EVENT_ID_HEX_LEN &&
		hex_decode(idstr, EVENT_ID_HEX_LEN, id, EVENT_ID_LEN) == 0) &&
	    nip19_decode(s, "note", id) == -1)
		return relay_html_message(c, wsi, HTTP_STATUS_BAD_REQUEST,
		    "Bad address",
		    "The last part of this address is not an event id (64 hex digits or a note1 identifier).");
	if ((v = lws_get_urlarg_by_name(wsi, "page=", pg, sizeof(pg))) !=
	    NULL) {
		page = strtol(v, NULL, 10);
		if (page < 1 || page > RELAY_WEB_THREAD_READ)
			page = 1;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal("thread_page");
	t->db = relay_html_db_arm(RELAY_WEB_QUERY_MS);
	t->now = (int64_t)time(NULL);
	t->npub = npub;
	t->d = d;
	buf_printf(&base, "/%s/", npub);
	relay_html_url(&base, d);
	buf_adds(&base, ".git");
	t->base = base.b_data;
	ann = relay_html_addressed(t->db, KIND_REPO_ANNOUNCEMENT, owner, d);
	if (ann != NULL)
		t->nkeys = relay_web_maintainers(ann, t->keys, NULL);
	else {
		memcpy(t->keys[0], owner, PUBKEY_LEN);
		t->nkeys = 1;
	}
	t->root = by_id(t->db, id);
	if (t->root == NULL || t->root->kind != sections[sec].kind ||
	    !of_repository(t, t->root)) {
		buf_printf(&b, "This repository has no %s with the id <code>",
		    sections[sec].name);
		buf_add_hex(&b, id, EVENT_ID_LEN);
		buf_printf(&b,
		    "</code> on this server. <a href=\"%s\">See the "
		    "repository.</a>",
		    t->base);
		relay_html_db_disarm(t->db);
		rc = relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND,
		    "Not found", b.b_data);
		goto done;
	}
	related(t);
	name = ann ? relay_html_tag1(ann, "name") : NULL;
	mtime = render(&b, t, sec, name && *name ? name : d, page);
	relay_html_db_disarm(t->db);
	body = buf_release(&b, &len);
	rc = relay_http_page(c, wsi, HTTP_STATUS_OK, "text/html; charset=utf-8",
	    body, len, mtime);
done:
	buf_free(&b);
	buf_free(&base);
	event_destroy(ann);
	event_destroy(t->root);
	for (i = 0; i < t->nev; i++)
		event_destroy(t->ev[i]);
	for (i = 0; i < t->nwho; i++)
		free(t->who[i].name);
	free(t);
	return rc;
}

int
relay_web_repo_sub(struct relay_conn *c, struct lws *wsi, const char *npub,
    const uint8_t owner[PUBKEY_LEN], const char *d, const char *rest, size_t n)
{
	struct buf  b = BUF_INIT;
	const char *p;
	size_t	    i, sl;
	int	    rc, hosted = relay_purg_hosted(owner, d);

	c->rc_kind = CONN_HTTP;
	if (hosted == 0 || !relay_repo_exists(owner, d))
		return relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND,
		    "No such repository",
		    "This server hosts no repository at this address. <a href="
		    "\"/\">See the ones it hosts.</a>");
	if (n == 10 && memcmp(rest, "/feed.atom", 10) == 0)
		return relay_web_feed_repo(c, wsi, npub, owner, d);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		sl = strlen(sections[i].section);
		if (n > sl + 2 && rest[0] == '/' &&
		    memcmp(rest + 1, sections[i].section, sl) == 0 &&
		    rest[sl + 1] == '/') {
			p = rest + sl + 2;
			return thread_page(c, wsi, npub, owner, d, i, p,
			    (size_t)(rest + n - p));
		}
	}
	buf_adds(&b, "This repository has no page at <code>");
	relay_web_escape(&b, rest,
	    n > RELAY_WEB_DESC_MAX ? RELAY_WEB_DESC_MAX : n);
	buf_adds(&b, "</code>. <a href=\"/");
	buf_printf(&b, "%s/", npub);
	relay_html_url(&b, d);
	buf_adds(&b, ".git\">See the repository.</a>");
	rc = relay_html_message(c, wsi, HTTP_STATUS_NOT_FOUND, "Not found",
	    b.b_data);
	buf_free(&b);
	return rc;
}
