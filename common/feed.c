/*
 * feed.c: the subscriber side of the accepted feed (see feed.h).  Runs in
 * syncd, discoveryd and historyd; its scans of the store run in every
 * role at start.  Notices are hints; every event comes from the store,
 * read by seq.
 */
#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <nanomsg/nn.h>
#include <nanomsg/pubsub.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "event.h"
#include "feed.h"
#include "log.h"
#include "msg.h"
#include "ready.h"
#include "store.h"

/*
 * An event read in place by feed_scan_tags(): what the callback gets, and
 * the arrays its tags live in, kept from row to row.
 */
struct tag_view {
	struct event	  tv_ev;
	struct event_tag *tv_tags;
	size_t		  tv_captags;
	struct estr	 *tv_strs;
	size_t		  tv_capstrs;
	char		 *tv_pool; /* the strings, NUL-terminated */
	size_t		  tv_cappool;
};

/* Skips the literal lit at *p; 0, or -1 if the text differs. */
static int
skip_lit(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return -1;
	*p += n;
	return 0;
}

/*
 * A 64-character hex string and its closing quote, copied to hex and
 * decoded into bin: the event's id or pubkey.  -1 unless lowercase hex.
 */
static int
skip_hex32(const char **p, const char *end, char hex[65], uint8_t bin[32])
{
	if (end - *p < 65 || (*p)[64] != '"' ||
	    hex_decode(*p, 64, bin, 32) == -1)
		return -1;
	memcpy(hex, *p, 64);
	hex[64] = '\0';
	*p += 65;
	return 0;
}

/* A non-negative integer as event_serialize() prints it, at most max. */
static int
skip_int(const char **p, const char *end, int64_t max, int64_t *out)
{
	const char *s = *p, *d;
	int64_t	    v = 0;

	if (s == end || *s < '0' || *s > '9' ||
	    (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9'))
		return -1;
	for (d = s; d < end && (unsigned char)(*d - '0') < 10; d++)
		;
	/* 18 digits cannot overflow; any beyond are checked. */
	for (; s < d; s++) {
		if (s - *p >= 18 && v > (INT64_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (v > max)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/*
 * Makes room in v for the strings of a text of len bytes: each takes at
 * least 3 bytes of it ("",) and each tag 5 (["",), so nothing grows while
 * a row is split.
 */
static void
view_reserve(struct tag_view *v, size_t len)
{
	if (v->tv_cappool >= len + 1)
		return;
	free(v->tv_pool);
	free(v->tv_strs);
	free(v->tv_tags);
	v->tv_cappool = len + 1 > 4096 ? len + 1 : 4096;
	if ((v->tv_pool = malloc(v->tv_cappool)) == NULL ||
	    (v->tv_strs = calloc(v->tv_cappool / 3 + 1, sizeof(*v->tv_strs))) ==
		NULL ||
	    (v->tv_tags = calloc(v->tv_cappool / 5 + 1, sizeof(*v->tv_tags))) ==
		NULL)
		fatal("feed");
}

/* After an element: 1 past a ',', 0 past the closing ']', -1 if neither. */
static int
next_elem(const char **p, const char *end)
{
	if (*p == end)
		return -1;
	if (**p == ',' || **p == ']')
		return *(*p)++ == ',';
	return -1;
}

/*
 * The first byte at or after p that ends a plain JSON string: a quote, a
 * backslash or a control character; end if none.  Tag values are mostly
 * 64-character ids, so SSE2 (every x86-64) looks at 16 bytes at a time.
 */
static const char *
plain_end(const char *p, const char *end)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"');
	const __m128i bslash = _mm_set1_epi8('\\');
	const __m128i ctl = _mm_set1_epi8(0x1f);
	__m128i	      v, hit;
	int	      m;

	while (end - p >= 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)p);
		/* A byte <= 0x1f is its own maximum with 0x1f. */
		hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
				       _mm_cmpeq_epi8(v, bslash)),
		    _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
		if ((m = _mm_movemask_epi8(hit)) != 0)
			return p + __builtin_ctz((unsigned)m);
		p += 16;
	}
#endif
	while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
		p++;
	return p;
}

/*
 * Fills v->tv_ev from the text relayd stored, which event_serialize()
 * wrote as
 * {"id":"<hex>","pubkey":"<hex>","created_at":N,"kind":N,"tags":[["..",
 * ..],..],"content":..}.  Returns 0, or -1 if the row is not in that
 * form or a tag string holds an escape (or a raw control character): the
 * caller then parses the text in full.
 */
static int
view_tags(struct tag_view *v, const char *j, size_t len)
{
	struct event *ev = &v->tv_ev;
	const char   *p = j, *end = j + len, *s;
	char	     *pool;
	size_t	      nt = 0, ns = 0, first, i, k;
	int64_t	      n;
	int	      more;

	view_reserve(v, len);
	pool = v->tv_pool;
	if (skip_lit(&p, end, "{\"id\":\"") == -1 ||
	    skip_hex32(&p, end, ev->id_hex, ev->id) == -1 ||
	    skip_lit(&p, end, ",\"pubkey\":\"") == -1 ||
	    skip_hex32(&p, end, ev->pubkey_hex, ev->pubkey) == -1 ||
	    skip_lit(&p, end, ",\"created_at\":") == -1 ||
	    skip_int(&p, end, INT64_MAX, &ev->created_at) == -1 ||
	    skip_lit(&p, end, ",\"kind\":") == -1 ||
	    skip_int(&p, end, EVENT_KIND_MAX, &n) == -1 ||
	    skip_lit(&p, end, ",\"tags\":[") == -1)
		return -1;
	ev->kind = (uint32_t)n;
	/* An empty list, or tags until the ']' that closes it. */
	more = skip_lit(&p, end, "]") == -1;
	while (more) {
		if (skip_lit(&p, end, "[") == -1)
			return -1;
		first = ns;
		do {
			if (skip_lit(&p, end, "\"") == -1)
				return -1;
			s = p;
			p = plain_end(p, end);
			if (p == end || *p != '"')
				return -1;
			memcpy(pool, s, (size_t)(p - s));
			pool[p - s] = '\0';
			v->tv_strs[ns].s = pool;
			v->tv_strs[ns++].len = (size_t)(p - s);
			pool += p - s + 1;
			p++;
		} while ((more = next_elem(&p, end)) == 1);
		if (more == -1)
			return -1;
		v->tv_tags[nt++].n = (uint32_t)(ns - first);
		if ((more = next_elem(&p, end)) == -1)
			return -1;
	}
	if (skip_lit(&p, end, ",\"content\":\"") == -1)
		return -1;
	for (i = 0, k = 0; i < nt; k += v->tv_tags[i].n, i++)
		v->tv_tags[i].v = v->tv_strs + k;
	ev->tags = v->tv_tags;
	ev->ntags = (uint32_t)nt;
	ev->content.s = pool;
	*pool = '\0';
	ev->content.len = 0;
	ev->json = NULL;
	ev->json_len = 0;
	return 0;
}

/*
 * The event of a stored row: read in place into v, or parsed in full into
 * *parsed (which the caller destroys) when whole is set or a tag holds an
 * escape.  NULL, logged with its seq, if the row does not parse: relayd
 * stored it, so that is a bug or a damaged database, and exiting would
 * only loop on the row.
 */
static const struct event *
row_event(struct tag_view *v, int64_t seq, const char *json, size_t len,
    int whole, struct event **parsed)
{
	char err[256];

	*parsed = NULL;
	if (json != NULL && !whole && view_tags(v, json, len) == 0)
		return &v->tv_ev;
	if (json != NULL &&
	    (*parsed = event_parse(json, len, err, sizeof(err))) != NULL)
		return *parsed;
	log_warnx("feed: stored event seq %lld does not parse (%s), skipped",
	    (long long)seq, json ? err : "no text");
	return NULL;
}

/*
 * One batch of rows copied out of the store: their texts one after
 * another in fb_pool (kept from batch to batch), so that no statement is
 * open while the callbacks run.
 */
struct feed_batch {
	size_t	fb_n;
	int	fb_full; /* cut short by FEED_BATCH_BYTES */
	int64_t fb_seq[FEED_BATCH];
	size_t	fb_off[FEED_BATCH];
	size_t	fb_len[FEED_BATCH];
	char   *fb_pool;
	size_t	fb_used;
	size_t	fb_cap;
};

/* fb_off of a row feed_only_kinds() leaves out. */
#define FEED_SKIPPED SIZE_MAX

static int
batch_add(const char *json, size_t len, int64_t seq, void *arg)
{
	struct feed_batch *b = arg;
	size_t		   cap;

	if (b->fb_n == FEED_BATCH)
		return 1;
	if (json == NULL) {
		/* A kind the feed does not want: passed, not read. */
		b->fb_seq[b->fb_n] = seq;
		b->fb_off[b->fb_n] = FEED_SKIPPED;
		b->fb_len[b->fb_n++] = 0;
		return 0;
	}
	if (b->fb_cap - b->fb_used < len + 1) {
		for (cap = b->fb_cap ? b->fb_cap : 65536;
		     cap - b->fb_used < len + 1; cap *= 2)
			;
		if ((b->fb_pool = realloc(b->fb_pool, cap)) == NULL)
			fatal("feed: realloc");
		b->fb_cap = cap;
	}
	memcpy(b->fb_pool + b->fb_used, json, len);
	b->fb_pool[b->fb_used + len] = '\0';
	b->fb_seq[b->fb_n] = seq;
	b->fb_off[b->fb_n] = b->fb_used;
	b->fb_len[b->fb_n] = len;
	b->fb_n++;
	b->fb_used += len + 1;
	if (b->fb_used >= FEED_BATCH_BYTES) {
		b->fb_full = 1;
		return 1;
	}
	return 0;
}

/*
 * What feed_scan() and the live feed do: rows copied out FEED_BATCH at a
 * time, each parsed in full (whole) or read in place as feed_scan_tags()
 * reads it; *last advances row by row, so a later call resumes exactly
 * after the last row read; f (may be NULL) gets its counters updated.
 */
static int
scan(struct store *store, int64_t after, int64_t upto, int whole, feed_cb *cb,
    void *arg, int64_t *last, struct feed *f)
{
	struct feed_batch  *b;
	struct tag_view	    view;
	struct event	   *parsed;
	const struct event *ev;
	size_t		    i;
	int		    n = 0, r, done = 0;

	*last = after;
	if (upto <= after)
		return 0;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		fatal("feed: calloc");
	memset(&view, 0, sizeof(view));
	while (!done) {
		b->fb_n = b->fb_used = 0;
		b->fb_full = 0;
		if (f != NULL && f->f_nkinds > 0)
			r = store_since_seq_kinds(store, *last, FEED_BATCH,
			    f->f_kinds, f->f_nkinds, batch_add, b);
		else
			r = store_since_seq(store, *last, FEED_BATCH, batch_add,
			    b);
		if (r == -1) {
			n = -1;
			break;
		}
		if (r < FEED_BATCH && !b->fb_full)
			done = 1;
		for (i = 0; i < b->fb_n; i++) {
			ready_progress();
			if (b->fb_seq[i] > upto) {
				done = 1;
				break;
			}
			if (f != NULL && b->fb_seq[i] > f->f_notice_max)
				f->f_stats.fs_unnoticed++;
			if (b->fb_off[i] == FEED_SKIPPED) {
				*last = b->fb_seq[i];
				continue;
			}
			if ((ev = row_event(&view, b->fb_seq[i],
				 b->fb_pool + b->fb_off[i], b->fb_len[i], whole,
				 &parsed)) == NULL) {
				if (f != NULL)
					f->f_stats.fs_unreadable++;
			} else {
				if (f != NULL)
					f->f_stats.fs_events++;
				cb(arg, b->fb_seq[i], ev);
				event_destroy(parsed);
				n++;
			}
			*last = b->fb_seq[i];
		}
	}
	free(view.tv_tags);
	free(view.tv_strs);
	free(view.tv_pool);
	free(b->fb_pool);
	free(b);
	return n;
}

int
feed_scan(struct store *store, int64_t after, int64_t upto, feed_cb *cb,
    void *arg, int64_t *last_out)
{
	int64_t last;
	int	n;

	n = scan(store, after, upto, 1, cb, arg, &last, NULL);
	if (last_out != NULL)
		*last_out = last;
	return n;
}

/* An event read ahead of its callback: in place, or parsed in full. */
struct ahead {
	struct tag_view ah_view;
	struct event   *ah_parsed; /* or NULL: ah_view.tv_ev */
	int64_t		ah_seq;
};

/* Hands the event in a to cb and lets its parsed copy go. */
static void
ahead_deliver(struct ahead *a, feed_cb *cb, void *arg)
{
	cb(arg, a->ah_seq, a->ah_parsed ? a->ah_parsed : &a->ah_view.tv_ev);
	event_destroy(a->ah_parsed);
	a->ah_parsed = NULL;
}

int
feed_scan_ahead(struct store *store, int64_t after, int64_t upto, feed_cb *hint,
    feed_cb *cb, void *arg, int64_t *last_out)
{
	static const char   sql[] = "SELECT seq, json FROM events"
				    " WHERE seq > ?1 AND seq <= ?2"
				    " ORDER BY seq";
	sqlite3		   *db = store_sqlite(store);
	sqlite3_stmt	   *st = NULL;
	struct ahead	    ring[FEED_AHEAD + 1], *a;
	const struct event *ev;
	const char	   *json;
	int64_t		    last = after;
	size_t		    len, depth = hint ? FEED_AHEAD : 0, i;
	size_t		    head = 0, held = 0;
	int		    n = 0, r = SQLITE_DONE;

	memset(ring, 0, sizeof(ring));
	if (upto <= after)
		goto done;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_warnx("feed: %s: %s", sql, sqlite3_errmsg(db));
		n = -1;
		goto done;
	}
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int64(st, 2, upto);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		ready_progress();
		a = &ring[head];
		a->ah_seq = last = sqlite3_column_int64(st, 0);
		json = (const char *)sqlite3_column_text(st, 1);
		len = (size_t)sqlite3_column_bytes(st, 1);
		if ((ev = row_event(&a->ah_view, last, json, len, 0,
			 &a->ah_parsed)) == NULL)
			continue;
		if (hint != NULL)
			hint(arg, last, ev);
		head = (head + 1) % (FEED_AHEAD + 1);
		if (held++ == depth) {
			ahead_deliver(&ring[(head + FEED_AHEAD + 1 - held) %
					  (FEED_AHEAD + 1)],
			    cb, arg);
			held--;
			n++;
		}
	}
	if (r != SQLITE_DONE) {
		log_warnx("feed: reading events: %s", sqlite3_errmsg(db));
		n = -1;
	}
	/* What was read before the end (or an error) is delivered. */
	for (; held > 0; held--) {
		ahead_deliver(
		    &ring[(head + FEED_AHEAD + 1 - held) % (FEED_AHEAD + 1)],
		    cb, arg);
		if (n != -1)
			n++;
	}
done:
	sqlite3_finalize(st);
	for (i = 0; i < FEED_AHEAD + 1; i++) {
		free(ring[i].ah_view.tv_tags);
		free(ring[i].ah_view.tv_strs);
		free(ring[i].ah_view.tv_pool);
	}
	if (last_out != NULL)
		*last_out = last;
	return n;
}

int
feed_scan_tags(struct store *store, int64_t after, int64_t upto, feed_cb *cb,
    void *arg, int64_t *last_out)
{
	return feed_scan_ahead(store, after, upto, NULL, cb, arg, last_out);
}

static int
cmp_seq(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
feed_scan_kinds(struct store *store, int64_t after, int64_t upto,
    const uint32_t *kinds, size_t nkinds, feed_cb *cb, void *arg)
{
	static const char q_seqs[] =
	    "SELECT seq FROM events"
	    " WHERE kind = ?1 AND seq > ?2 AND seq <= ?3";
	static const char q_json[] = "SELECT json FROM events"
				     " WHERE seq = ?1";
	sqlite3		 *db = store_sqlite(store);
	sqlite3_stmt	 *seqs = NULL, *get = NULL;
	struct event	 *ev;
	int64_t		 *v = NULL;
	size_t		  nv = 0, cap = 0, i, k;
	char		  err[256];
	int		  n = 0, r;

	if (nkinds > FEED_MAX_KINDS)
		fatalx("feed_scan_kinds: %zu kinds", nkinds);
	if (upto <= after || nkinds == 0)
		return 0;
	if (sqlite3_prepare_v2(db, q_seqs, -1, &seqs, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, q_json, -1, &get, NULL) != SQLITE_OK) {
		log_warnx("feed: preparing a kind scan: %s",
		    sqlite3_errmsg(db));
		n = -1;
		goto done;
	}
	/* The seqs first, so that no statement is open during cb. */
	for (k = 0; k < nkinds; k++) {
		sqlite3_reset(seqs);
		sqlite3_bind_int64(seqs, 1, kinds[k]);
		sqlite3_bind_int64(seqs, 2, after);
		sqlite3_bind_int64(seqs, 3, upto);
		while ((r = sqlite3_step(seqs)) == SQLITE_ROW) {
			if (nv == cap) {
				cap = cap ? cap * 2 : 256;
				if ((v = reallocarray(v, cap, sizeof(*v))) ==
				    NULL)
					fatal("feed");
			}
			v[nv++] = sqlite3_column_int64(seqs, 0);
		}
		if (r != SQLITE_DONE) {
			log_warnx("feed: kind scan: %s", sqlite3_errmsg(db));
			n = -1;
			goto done;
		}
	}
	if (nv > 0)
		qsort(v, nv, sizeof(*v), cmp_seq);
	for (i = 0; i < nv; i++) {
		ready_progress();
		sqlite3_reset(get);
		sqlite3_bind_int64(get, 1, v[i]);
		if ((r = sqlite3_step(get)) == SQLITE_DONE)
			continue; /* removed since */
		if (r != SQLITE_ROW) {
			log_warnx("feed: kind scan: %s", sqlite3_errmsg(db));
			n = -1;
			goto done;
		}
		ev = event_parse((const char *)sqlite3_column_text(get, 0),
		    (size_t)sqlite3_column_bytes(get, 0), err, sizeof(err));
		sqlite3_reset(get);
		if (ev == NULL) {
			log_warnx(
			    "feed: stored event seq %lld does not parse (%s), skipped",
			    (long long)v[i], err);
			continue;
		}
		cb(arg, v[i], ev);
		event_destroy(ev);
		n++;
	}
done:
	sqlite3_finalize(seqs);
	sqlite3_finalize(get);
	free(v);
	return n;
}

int
feed_open(struct feed *f, const struct config *cfg, struct store *store,
    int64_t start_seq, feed_cb *cb, void *arg)
{
	char ep[512];
	int  saved;

	memset(f, 0, sizeof(*f));
	f->f_sock = f->f_fd = -1;
	f->f_store = store;
	f->f_last = f->f_notice_max = start_seq;
	f->f_cb = cb;
	f->f_arg = arg;
	if (chan_endpoint(cfg->run_path, CHAN_ACCEPTED, ep, sizeof(ep)) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((f->f_sock = chan_open(NN_SUB, ep, 0)) == -1)
		return -1;
	if ((f->f_fd = chan_rcvfd(f->f_sock)) == -1) {
		saved = errno;
		chan_close(f->f_sock);
		f->f_sock = -1;
		errno = saved;
		return -1;
	}
	return 0;
}

void
feed_only_kinds(struct feed *f, const uint32_t *kinds, size_t nkinds)
{
	if (nkinds > FEED_MAX_KINDS)
		fatalx("feed_only_kinds: %zu kinds", nkinds);
	f->f_kinds = kinds;
	f->f_nkinds = nkinds;
}

int
feed_fd(const struct feed *f)
{
	return f->f_fd;
}

/* Delivers everything stored after f_last. */
static int
catch_up(struct feed *f)
{
	int n;

	/* A callback that polls its own feed would deliver twice. */
	if (f->f_busy)
		return 0;
	f->f_busy = 1;
	n = scan(f->f_store, f->f_last, INT64_MAX, 0, f->f_cb, f->f_arg,
	    &f->f_last, f);
	f->f_busy = 0;
	return n;
}

int
feed_drain(struct feed *f)
{
	struct msg_accepted ma;
	struct msg	    m;
	size_t		    i, n;
	int		    r, noticed = 0;

	if (f->f_sock == -1)
		return 0;
	for (;;) {
		if ((r = msg_recv(f->f_sock, &m, NN_DONTWAIT)) == 0)
			break;
		if (r == -1) {
			if (errno == EINTR)
				continue;
			log_warn("feed: receive");
			break;
		}
		if (m.m_type != MSG_ACCEPTED)
			fatalx("unexpected %s message on the accepted channel",
			    msg_type_name(m.m_type));
		if ((n = msg_accepted_count(&m)) == 0)
			fatalx("malformed ACCEPTED message: %zu bytes",
			    m.m_len);
		for (i = 0; i < n; i++) {
			memcpy(&ma, m.m_data + i * sizeof(ma), sizeof(ma));
			f->f_stats.fs_notices++;
			if (ma.ma_seq > f->f_notice_max + 1)
				f->f_stats.fs_gaps++;
			if (ma.ma_seq > f->f_notice_max)
				f->f_notice_max = ma.ma_seq;
		}
		msg_free(&m);
		noticed = 1;
	}
	if (!noticed || f->f_notice_max <= f->f_last)
		return 0;
	return catch_up(f);
}

int
feed_poll(struct feed *f)
{
	return catch_up(f);
}

int64_t
feed_last_seq(const struct feed *f)
{
	return f->f_last;
}

const struct feed_stats *
feed_stats(const struct feed *f)
{
	return &f->f_stats;
}

void
feed_close(struct feed *f)
{
	chan_close(f->f_sock);
	f->f_sock = f->f_fd = -1;
}
