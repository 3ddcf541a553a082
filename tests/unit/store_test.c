/*
 * store_test.c: the event store (store.c) and database opening (db.c):
 * replaceable and addressable rules, NIP-09 deletions, NIP-40 expiration,
 * REQ queries against filter_match(), limits, and the seq feed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "event.h"
#include "filter.h"
#include "idhint.h"
#include "json.h"
#include "log.h"
#include "ready.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "tunit_rng.h"
#include "mem.h"
#include "tunit_strv.h"

static const uint8_t sk1[SECKEY_LEN] = { [0 ... 31] = 0x11 };
static const uint8_t sk2[SECKEY_LEN] = { [0 ... 31] = 0x22 };
static const uint8_t sk3[SECKEY_LEN] = { [0 ... 31] = 0x33 };

#define NOW	 1000000
#define FLEN	 12288 /* room for one filter's text */
/* Tags JSON holding one d tag. */
#define D_TAG(v) "[[\"d\",\"" v "\"]]"

static char		tmpdir[64];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "store_test" };
static int		dbcount;
static char		err[256];

/* A fresh store in its own file under tmpdir. */
static struct store *
fresh(void)
{
	char	      path[128];
	struct store *s;

	snprintf(path, sizeof(path), "%s/db%d/graspd.db", tmpdir, ++dbcount);
	s = store_open(path, 0, err, sizeof(err));
	if (s == NULL)
		printf("# store_open: %s\n", err);
	return s;
}

static struct event *
ev_new(const uint8_t *sk, int64_t created_at, uint32_t kind, const char *tags,
    const char *content)
{
	struct event *ev =
	    event_new_signed(sk, created_at, kind, tags, content);

	if (ev == NULL) {
		printf("# event_new_signed failed for tags %s\n",
		    tags ? tags : "(none)");
		abort();
	}
	return ev;
}

/* What a query delivered. */
struct coll {
	size_t	 n;
	char   **json;
	int64_t *seq;
	size_t	 stop_after; /* 0: never stop */
};

static int
collect(const char *json, size_t len, int64_t seq, void *arg)
{
	struct coll *c = arg;

	c->json = realloc(c->json, (c->n + 1) * sizeof(*c->json));
	c->seq = realloc(c->seq, (c->n + 1) * sizeof(*c->seq));
	if (c->json == NULL || c->seq == NULL)
		abort();
	if ((c->json[c->n] = malloc(len + 1)) == NULL)
		abort();
	memcpy(c->json[c->n], json, len);
	c->json[c->n][len] = '\0';
	c->seq[c->n] = seq;
	c->n++;
	return c->stop_after != 0 && c->n >= c->stop_after;
}

static void
coll_free(struct coll *c)
{
	strv_free(c->json, c->n);
	free(c->seq);
	memset(c, 0, sizeof(*c));
}

/* 1 if c holds exactly the events exp[0..n) in that order. */
static int
coll_is(const struct coll *c, struct event *const *exp, size_t n)
{
	size_t i;

	if (c->n != n) {
		printf("# got %zu events, expected %zu\n", c->n, n);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (strcmp(c->json[i], exp[i]->json) != 0) {
			printf("# event %zu differs\n", i);
			return 0;
		}
	return 1;
}

static int
parse_filter(const char *text, struct filter *f)
{
	struct json_doc *doc = NULL;
	struct json	*j;
	int		 r;

	if ((j = json_parse(text, strlen(text), &doc, err, sizeof(err))) ==
	    NULL) {
		printf("# bad filter JSON %s: %s\n", text, err);
		return -1;
	}
	r = filter_parse(j, f, err, sizeof(err));
	if (r != 0)
		printf("# filter %s: %s\n", text, err);
	json_free(doc);
	return r;
}

/* Runs one filter (text) through store_query into c; returns its result. */
static int
query1(struct store *s, const char *text, size_t max, size_t def, int64_t now,
    struct coll *c)
{
	struct filter f;
	int	      r;

	if (parse_filter(text, &f) != 0)
		return -2;
	r = store_query(s, &f, 1, max, def, now, collect, c);
	filter_free(&f);
	return r;
}

static int
count_of(struct store *s, const char *text)
{
	struct coll c = { 0 };
	int	    r = query1(s, text, 100000, 100000, NOW, &c);

	coll_free(&c);
	return r;
}

static void
db_open_creates_parents_sets_pragmas_and_migrates_once(void)
{
	sqlite3	     *db;
	sqlite3_stmt *st;
	char	      path[128];
	const char   *checks[][2] = {
		  { "PRAGMA journal_mode", "wal" },
		  { "PRAGMA foreign_keys", "1" },
		  { "PRAGMA busy_timeout", "5000" },
	};
	size_t i;
	int    pass;

	snprintf(path, sizeof(path), "%s/a/b/c/graspd.db", tmpdir);
	T_CHECK(db_open(path, DB_READONLY, &db, err, sizeof(err)) == -1);
	T_CHECK(db == NULL);
	for (pass = 0; pass < 3; pass++) {
		T_ASSERT(db_open(path, pass == 2 ? DB_READONLY : 0, &db, err,
			     sizeof(err)) == 0);
		for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
			T_ASSERT(sqlite3_prepare_v2(db, checks[i][0], -1, &st,
				     NULL) == SQLITE_OK);
			T_ASSERT(sqlite3_step(st) == SQLITE_ROW);
			T_CHECK(strcmp((const char *)sqlite3_column_text(st, 0),
				    checks[i][1]) == 0);
			sqlite3_finalize(st);
		}
		/* The writer syncs each commit (FULL, 2); NORMAL is 1. */
		T_ASSERT(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st,
			     NULL) == SQLITE_OK);
		T_ASSERT(sqlite3_step(st) == SQLITE_ROW);
		T_EQ_INT(sqlite3_column_int(st, 0), pass == 2 ? 1 : 2);
		sqlite3_finalize(st);
		if (pass == 1) {
			T_ASSERT(db_set_durability(db, 0) == 0);
			T_ASSERT(sqlite3_prepare_v2(db, "PRAGMA synchronous",
				     -1, &st, NULL) == SQLITE_OK);
			T_ASSERT(sqlite3_step(st) == SQLITE_ROW);
			T_EQ_INT(sqlite3_column_int(st, 0), 1);
			sqlite3_finalize(st);
		}
		T_ASSERT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
			     NULL) == SQLITE_OK);
		T_ASSERT(sqlite3_step(st) == SQLITE_ROW);
		T_CHECK(sqlite3_column_int(st, 0) == db_schema_version());
		sqlite3_finalize(st);
		db_close(db);
	}
	/* A schema newer than this program's is refused. */
	T_ASSERT(db_open(path, 0, &db, err, sizeof(err)) == 0);
	T_ASSERT(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL,
		     NULL) == SQLITE_OK);
	db_close(db);
	T_CHECK(db_open(path, 0, &db, err, sizeof(err)) == -1);
	T_CHECK(strstr(err, "newer") != NULL);
}

static void
put_stores_once_then_reports_duplicate(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 1, "[[\"t\",\"x\"]]", "hi");
	int64_t	      seq = 0, seq2 = 0;

	T_ASSERT(s != NULL);
	T_CHECK(store_has_id(s, ev->id) == 0);
	T_CHECK(store_put(s, ev, &seq) == STORE_OK);
	T_CHECK(seq > 0);
	T_CHECK(store_has_id(s, ev->id) == 1);
	T_CHECK(store_put(s, ev, &seq2) == STORE_DUPLICATE);
	T_CHECK(seq2 == 0);
	T_CHECK(store_count(s) == 1);
	event_destroy(ev);
	store_close(s);
}

/* store_ids_after()'s callback: appends the id to an array of 40. */
struct idlist {
	uint8_t ids[40][EVENT_ID_LEN];
	int	n;
};

static void
idlist_add(const uint8_t *id, void *arg)
{
	struct idlist *l = arg;

	if (l->n < 40)
		memcpy(l->ids[l->n], id, EVENT_ID_LEN);
	l->n++;
}

/*
 * The ids come out in chunks, each after the last of the one before, in
 * id order, each stored id once, rolled back ones never; an id filter
 * set on the store learns each id it inserts.
 */
static void
ids_come_in_chunks_and_reach_the_filter(void)
{
	struct store *s = fresh();
	struct idhint h;
	struct idlist l = { .n = 0 };
	struct event *ev[30], *gone;
	uint8_t	      after[EVENT_ID_LEN];
	size_t	      afterlen = 0;
	int	      i, j, r, found;

	T_ASSERT(s != NULL);
	T_ASSERT(idhint_init(&h, 1000, 1 << 20) == 0);
	store_set_idhint(s, &h);
	for (i = 0; i < 30; i++) {
		ev[i] = ev_new(sk1, 100 + i, 1, "[]", "chunk");
		T_CHECK(store_put(s, ev[i], NULL) == STORE_OK);
	}
	/* A rolled-back insert leaves a "maybe", never a stored id. */
	gone = ev_new(sk2, 100, 1, "[]", "rolled back");
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put_new(s, gone, NULL) == STORE_OK);
	T_CHECK(store_rollback(s) == 0);
	while (
	    (r = store_ids_after(s, after, &afterlen, 7, idlist_add, &l)) > 0)
		T_CHECK(r <= 7);
	T_EQ_INT(r, 0);
	T_EQ_INT(l.n, 30);
	for (i = 1; i < l.n && i < 40; i++)
		T_CHECK(memcmp(l.ids[i - 1], l.ids[i], EVENT_ID_LEN) < 0);
	for (i = 0; i < 30; i++) {
		for (j = found = 0; j < l.n && j < 40; j++)
			found += memcmp(l.ids[j], ev[i]->id, EVENT_ID_LEN) == 0;
		T_EQ_INT(found, 1);
	}
	idhint_set_ready(&h);
	for (i = 0; i < 30; i++)
		T_EQ_INT(idhint_maybe(&h, ev[i]->id), 1);
	T_EQ_INT(idhint_maybe(&h, gone->id), 1);
	store_set_idhint(s, NULL);
	for (i = 0; i < 30; i++)
		event_destroy(ev[i]);
	event_destroy(gone);
	idhint_free(&h);
	store_close(s);
}

/*
 * store_has_ids(): the answers store_has_id() gives, in order; outside a
 * transaction it leaves none open (the writer's next BEGIN IMMEDIATE
 * works), inside one it sees that transaction's puts.
 */
static void
has_ids_answers_in_order_in_one_read(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, NULL, "a");
	struct event *b = ev_new(sk1, 101, 1, NULL, "b");
	struct event *c = ev_new(sk1, 102, 1, NULL, "c");
	uint8_t	      ids[4][EVENT_ID_LEN];
	int	      have[4] = { 7, 7, 7, 7 };

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, b, NULL) == STORE_OK);
	memcpy(ids[0], a->id, EVENT_ID_LEN);
	memcpy(ids[1], b->id, EVENT_ID_LEN);
	memcpy(ids[2], c->id, EVENT_ID_LEN);
	memcpy(ids[3], b->id, EVENT_ID_LEN);
	T_EQ_INT(store_has_ids(s, (const uint8_t(*)[EVENT_ID_LEN])ids, 0, have),
	    0);
	T_EQ_INT(have[0], 7);
	T_EQ_INT(store_has_ids(s, (const uint8_t(*)[EVENT_ID_LEN])ids, 4, have),
	    0);
	T_EQ_INT(have[0], 0);
	T_EQ_INT(have[1], 1);
	T_EQ_INT(have[2], 0);
	T_EQ_INT(have[3], 1);
	T_CHECK(sqlite3_get_autocommit(store_sqlite(s)) != 0);
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put(s, c, NULL) == STORE_OK);
	T_EQ_INT(store_has_ids(s, (const uint8_t(*)[EVENT_ID_LEN])ids, 3, have),
	    0);
	T_EQ_INT(have[2], 1);
	/* Still the caller's transaction, and it commits. */
	T_CHECK(sqlite3_get_autocommit(store_sqlite(s)) == 0);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_count(s) == 2);
	event_destroy(a);
	event_destroy(b);
	event_destroy(c);
	store_close(s);
}

static void
put_refuses_ephemeral_kinds(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 20001, NULL, "");

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_ERROR);
	T_CHECK(store_count(s) == 0);
	event_destroy(ev);
	store_close(s);
}

static void
replaceable_newer_wins_older_refused(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 10002, NULL, "a");
	struct event *b = ev_new(sk1, 200, 10002, NULL, "b");
	struct event *c = ev_new(sk1, 150, 10002, NULL, "c");
	struct event *other = ev_new(sk2, 50, 10002, NULL, "o");

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, other, NULL) == STORE_OK);
	T_CHECK(store_put(s, b, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, a->id) == 0);
	T_CHECK(store_put(s, c, NULL) == STORE_REPLACED);
	T_CHECK(store_has_id(s, c->id) == 0);
	T_CHECK(store_put(s, a, NULL) == STORE_REPLACED);
	T_CHECK(store_has_id(s, b->id) == 1);
	/* Another author's list is a different address. */
	T_CHECK(store_has_id(s, other->id) == 1);
	T_CHECK(store_count(s) == 2);
	T_CHECK(store_has_address(s, 10002, a->pubkey, "") == 1);
	T_CHECK(store_has_address(s, 10002, a->pubkey, "x") == 0);
	T_CHECK(count_of(s, "{\"kinds\":[10002]}") == 2);
	event_destroy(a);
	event_destroy(b);
	event_destroy(c);
	event_destroy(other);
	store_close(s);
}

static void
replaceable_tie_keeps_lower_id_in_both_orders(void)
{
	struct event *x = ev_new(sk1, 100, 0, NULL, "x");
	struct event *y = ev_new(sk1, 100, 0, NULL, "y");
	struct event *lo, *hi;
	struct store *s;

	if (memcmp(x->id, y->id, EVENT_ID_LEN) < 0)
		lo = x, hi = y;
	else
		lo = y, hi = x;

	T_ASSERT((s = fresh()) != NULL);
	T_CHECK(store_put(s, lo, NULL) == STORE_OK);
	T_CHECK(store_put(s, hi, NULL) == STORE_REPLACED);
	T_CHECK(store_has_id(s, lo->id) == 1);
	T_CHECK(store_has_id(s, hi->id) == 0);
	store_close(s);

	T_ASSERT((s = fresh()) != NULL);
	T_CHECK(store_put(s, hi, NULL) == STORE_OK);
	T_CHECK(store_put(s, lo, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, lo->id) == 1);
	T_CHECK(store_has_id(s, hi->id) == 0);
	T_CHECK(store_count(s) == 1);
	store_close(s);
	event_destroy(x);
	event_destroy(y);
}

static void
addressable_kept_per_d(void)
{
	struct store *s = fresh();
	struct event *a1 = ev_new(sk1, 100, 30617, D_TAG("a"), "1");
	struct event *b1 = ev_new(sk1, 100, 30617, D_TAG("b"), "2");
	struct event *a2 = ev_new(sk1, 200, 30617, D_TAG("a"), "3");
	struct event *nod = ev_new(sk1, 100, 30617, NULL, "4");
	struct event *empty = ev_new(sk1, 300, 30617, D_TAG(""), "5");
	struct event *k2 = ev_new(sk1, 100, 30618, D_TAG("a"), "6");

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, a1, NULL) == STORE_OK);
	T_CHECK(store_put(s, b1, NULL) == STORE_OK);
	T_CHECK(store_put(s, k2, NULL) == STORE_OK);
	T_CHECK(store_put(s, a2, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, a1->id) == 0);
	T_CHECK(store_has_id(s, b1->id) == 1);
	T_CHECK(store_has_id(s, k2->id) == 1);
	T_CHECK(store_put(s, a1, NULL) == STORE_REPLACED);
	/* No d tag is keyed as d = "" (nips.md 1.5). */
	T_CHECK(store_put(s, nod, NULL) == STORE_OK);
	T_CHECK(store_has_address(s, 30617, nod->pubkey, "") == 1);
	T_CHECK(store_put(s, empty, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, nod->id) == 0);
	T_CHECK(store_has_address(s, 30617, a1->pubkey, "a") == 1);
	T_CHECK(store_has_address(s, 30617, a1->pubkey, "c") == 0);
	T_CHECK(store_has_address(s, 30618, a1->pubkey, "a") == 1);
	T_CHECK(count_of(s, "{\"kinds\":[30617]}") == 3);
	T_CHECK(count_of(s, "{\"#d\":[\"a\"]}") == 2);
	event_destroy(a1);
	event_destroy(b1);
	event_destroy(a2);
	event_destroy(nod);
	event_destroy(empty);
	event_destroy(k2);
	store_close(s);
}

/* A kind 5 by sk naming the given e ids and a coordinates. */
static struct event *
deletion(const uint8_t *sk, int64_t created_at, const char *e1, const char *e2,
    const char *a1)
{
	char   tags[1024];
	size_t len;

	len = (size_t)snprintf(tags, sizeof(tags), "[[\"k\",\"1\"]");
	if (e1 != NULL)
		len += (size_t)snprintf(tags + len, sizeof(tags) - len,
		    ",[\"e\",\"%s\"]", e1);
	if (e2 != NULL)
		len += (size_t)snprintf(tags + len, sizeof(tags) - len,
		    ",[\"e\",\"%s\"]", e2);
	if (a1 != NULL)
		len += (size_t)snprintf(tags + len, sizeof(tags) - len,
		    ",[\"a\",\"%s\"]", a1);
	snprintf(tags + len, sizeof(tags) - len, "]");
	return ev_new(sk, created_at, 5, tags, "gone");
}

static void
deletion_by_e_removes_own_event_and_blocks_it(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 1, "[[\"t\",\"x\"]]", "x");
	struct event *del = deletion(sk1, 200, ev->id_hex, NULL, NULL);

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, ev->id) == 0);
	T_CHECK(store_has_id(s, del->id) == 1);
	T_CHECK(store_is_deleted(s, ev->id, ev->pubkey) == 1);
	T_CHECK(store_is_deleted(s, ev->id, NULL) == 1);
	T_CHECK(store_is_deleted(s, del->id, NULL) == 0);
	T_CHECK(store_put(s, ev, NULL) == STORE_DELETED);
	/* Its tag rows went with it. */
	T_CHECK(store_tag_exists(s, "t", "x") == 0);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 0);
	event_destroy(ev);
	event_destroy(del);
	store_close(s);
}

static void
deletion_naming_another_authors_event_is_refused_whole(void)
{
	struct store *s = fresh();
	struct event *theirs = ev_new(sk1, 100, 1, NULL, "theirs");
	struct event *mine = ev_new(sk2, 100, 1, NULL, "mine");
	struct event *del =
	    deletion(sk2, 200, mine->id_hex, theirs->id_hex, NULL);

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, theirs, NULL) == STORE_OK);
	T_CHECK(store_put(s, mine, NULL) == STORE_OK);
	T_CHECK(store_put(s, del, NULL) == STORE_INVALID_DELETION);
	T_CHECK(store_has_id(s, theirs->id) == 1);
	T_CHECK(store_has_id(s, mine->id) == 1);
	T_CHECK(store_has_id(s, del->id) == 0);
	T_CHECK(store_is_deleted(s, mine->id, NULL) == 0);
	event_destroy(theirs);
	event_destroy(mine);
	event_destroy(del);
	store_close(s);
}

static void
deletion_before_arrival_blocks_only_the_same_author(void)
{
	struct store *s = fresh();
	struct event *own = ev_new(sk1, 100, 1, NULL, "own");
	struct event *foreign = ev_new(sk2, 100, 1, NULL, "foreign");
	/* sk1 names both ids before either is stored. */
	struct event *del =
	    deletion(sk1, 200, own->id_hex, foreign->id_hex, NULL);

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(store_put(s, own, NULL) == STORE_DELETED);
	T_CHECK(store_put(s, foreign, NULL) == STORE_OK);
	T_CHECK(store_is_deleted(s, foreign->id, foreign->pubkey) == 0);
	T_CHECK(store_is_deleted(s, own->id, own->pubkey) == 1);
	event_destroy(own);
	event_destroy(foreign);
	event_destroy(del);
	store_close(s);
}

static void
deleting_a_deletion_has_no_effect(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 1, NULL, "x");
	struct event *del1 = deletion(sk1, 200, ev->id_hex, NULL, NULL);
	struct event *del3 = deletion(sk1, 210, NULL, NULL, NULL);
	struct event *del2 =
	    deletion(sk1, 300, del1->id_hex, del3->id_hex, NULL);

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(store_put(s, del1, NULL) == STORE_OK);
	T_CHECK(store_put(s, del2, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, del1->id) == 1);
	/* A deletion named before it arrived is still accepted. */
	T_CHECK(store_put(s, del3, NULL) == STORE_OK);
	T_CHECK(store_put(s, ev, NULL) == STORE_DELETED);
	event_destroy(ev);
	event_destroy(del1);
	event_destroy(del2);
	event_destroy(del3);
	store_close(s);
}

static void
deletion_by_a_removes_versions_up_to_its_time(void)
{
	struct store *s = fresh();
	struct event *v100 = ev_new(sk1, 100, 30617, "[[\"d\",\"r:x\"]]", "1");
	struct event *v150 = ev_new(sk1, 150, 30617, "[[\"d\",\"r:x\"]]", "2");
	struct event *v151 = ev_new(sk1, 151, 30617, "[[\"d\",\"r:x\"]]", "3");
	struct event *otherd = ev_new(sk1, 100, 30617, "[[\"d\",\"r\"]]", "4");
	struct event *del;
	char	      coord[128];

	/* d holds a colon: the coordinate splits on the first two only. */
	snprintf(coord, sizeof(coord), "30617:%s:r:x", v100->pubkey_hex);
	del = deletion(sk1, 150, NULL, NULL, coord);
	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, v100, NULL) == STORE_OK);
	T_CHECK(store_put(s, otherd, NULL) == STORE_OK);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, v100->id) == 0);
	T_CHECK(store_has_address(s, 30617, v100->pubkey, "r:x") == 0);
	T_CHECK(store_has_id(s, otherd->id) == 1);
	T_CHECK(store_put(s, v100, NULL) == STORE_DELETED);
	T_CHECK(store_put(s, v150, NULL) == STORE_DELETED);
	T_CHECK(store_put(s, v151, NULL) == STORE_OK);
	event_destroy(del);

	/* A newer version stored before the deletion survives it. */
	del = deletion(sk1, 140, NULL, NULL, coord);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, v151->id) == 1);
	/* An earlier cutoff does not lower the recorded one. */
	T_CHECK(store_put(s, v150, NULL) == STORE_DELETED);
	event_destroy(del);
	event_destroy(v100);
	event_destroy(v150);
	event_destroy(v151);
	event_destroy(otherd);
	store_close(s);
}

static void
deletion_by_a_of_another_pubkey_is_refused(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 30617, D_TAG("r"), "1");
	struct event *del;
	char	      coord[128];

	snprintf(coord, sizeof(coord), "30617:%s:r", ev->pubkey_hex);
	del = deletion(sk2, 200, NULL, NULL, coord);
	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(store_put(s, del, NULL) == STORE_INVALID_DELETION);
	T_CHECK(store_has_id(s, ev->id) == 1);
	T_CHECK(store_has_id(s, del->id) == 0);
	event_destroy(ev);
	event_destroy(del);
	store_close(s);
}

static void
expired_events_hidden_on_read_but_in_feed(void)
{
	struct store *s = fresh();
	struct event *ev =
	    ev_new(sk1, 100, 1, "[[\"expiration\",\"1000\"]]", "x");
	struct event *keep = ev_new(sk1, 90, 1, NULL, "y");
	struct coll   c = { 0 };

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(store_put(s, keep, NULL) == STORE_OK);
	T_CHECK(query1(s, "{}", 10, 10, 999, &c) == 2);
	coll_free(&c);
	T_CHECK(query1(s, "{}", 10, 10, 1000, &c) == 2);
	coll_free(&c);
	T_CHECK(query1(s, "{}", 10, 10, 1001, &c) == 1);
	T_CHECK(coll_is(&c, &keep, 1));
	coll_free(&c);
	T_CHECK(store_since_seq(s, 0, 10, collect, &c) == 2);
	coll_free(&c);
	event_destroy(ev);
	event_destroy(keep);
	store_close(s);
}

static void
limit_default_and_max_clamp(void)
{
	struct store *s = fresh();
	struct event *ev[20];
	struct coll   c = { 0 };
	char	      text[1024];
	size_t	      i, len;

	T_ASSERT(s != NULL);
	for (i = 0; i < 20; i++) {
		ev[i] = ev_new(sk1, 100 + (int64_t)i, 1, NULL, "x");
		T_CHECK(store_put(s, ev[i], NULL) == STORE_OK);
	}
	T_CHECK(query1(s, "{}", 10, 5, NOW, &c) == 5);
	T_CHECK(c.json != NULL && strcmp(c.json[0], ev[19]->json) == 0);
	coll_free(&c);
	T_CHECK(query1(s, "{\"limit\":100}", 10, 5, NOW, &c) == 10);
	coll_free(&c);
	T_CHECK(query1(s, "{\"limit\":3}", 10, 5, NOW, &c) == 3);
	coll_free(&c);
	T_CHECK(query1(s, "{\"limit\":0}", 10, 5, NOW, &c) == 0);
	coll_free(&c);
	/* An ids filter without limit wants all its ids, up to max. */
	len = (size_t)snprintf(text, sizeof(text), "{\"ids\":[");
	for (i = 0; i < 7; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		    "%s\"%s\"", i ? "," : "", ev[i]->id_hex);
	snprintf(text + len, sizeof(text) - len, "]}");
	T_CHECK(query1(s, text, 10, 2, NOW, &c) == 7);
	coll_free(&c);
	T_CHECK(query1(s, text, 4, 2, NOW, &c) == 4);
	coll_free(&c);
	/* A default above max is clamped too. */
	T_CHECK(query1(s, "{}", 6, 50, NOW, &c) == 6);
	coll_free(&c);
	for (i = 0; i < 20; i++)
		event_destroy(ev[i]);
	store_close(s);
}

#define HEX64_ZERO \
	"0000000000000000000000000000000000000000000000000000000000000000"

static void
ordering_newest_first_ties_by_lowest_id(void)
{
	struct store *s = fresh();
	struct event *ev[8], *exp[8], *tmp;
	struct coll   c = { 0 };
	size_t	      i, j, o;
	char	      content[8], text[1024];

	T_ASSERT(s != NULL);
	for (i = 0; i < 8; i++) {
		snprintf(content, sizeof(content), "%zu", i);
		ev[i] = ev_new(sk1, 100 + (int64_t)(i % 3), 1, NULL, content);
		T_CHECK(store_put(s, ev[i], NULL) == STORE_OK);
		exp[i] = ev[i];
	}
	for (i = 0; i < 8; i++)
		for (j = i + 1; j < 8; j++)
			if (exp[j]->created_at > exp[i]->created_at ||
			    (exp[j]->created_at == exp[i]->created_at &&
				memcmp(exp[j]->id, exp[i]->id, EVENT_ID_LEN) <
				    0)) {
				tmp = exp[i];
				exp[i] = exp[j];
				exp[j] = tmp;
			}
	T_CHECK(query1(s, "{}", 100, 100, NOW, &c) == 8);
	T_CHECK(coll_is(&c, exp, 8));
	coll_free(&c);
	/*
	 * An ids filter (sorted by store.c, not SQLite) in the same order,
	 * the ids listed in storing order; its limit keeps the newest.
	 */
	o = (size_t)snprintf(text, sizeof(text), "{\"ids\":[");
	for (i = 0; i < 8; i++)
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s\"%s\"",
		    i ? "," : "", ev[i]->id_hex);
	snprintf(text + o, sizeof(text) - o, "]}");
	T_CHECK(query1(s, text, 100, 100, NOW, &c) == 8);
	T_CHECK(coll_is(&c, exp, 8));
	coll_free(&c);
	snprintf(text + o, sizeof(text) - o, "],\"limit\":3}");
	T_CHECK(query1(s, text, 100, 100, NOW, &c) == 3);
	T_CHECK(coll_is(&c, exp, 3));
	coll_free(&c);
	/* No match, and one: nothing to sort (UBSan caught qsort(NULL)). */
	T_CHECK(query1(s, "{\"ids\":[\"" HEX64_ZERO "\"]}", 100, 100, NOW,
		    &c) == 0);
	coll_free(&c);
	snprintf(text, sizeof(text), "{\"ids\":[\"%s\"]}", ev[5]->id_hex);
	T_CHECK(query1(s, text, 100, 100, NOW, &c) == 1);
	T_CHECK(coll_is(&c, &ev[5], 1));
	coll_free(&c);
	for (i = 0; i < 8; i++)
		event_destroy(ev[i]);
	store_close(s);
}

static void
query_dedupes_across_filters_and_stops_on_request(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, NULL, "a");
	struct event *b = ev_new(sk1, 101, 7, NULL, "b");
	struct event *c2 = ev_new(sk2, 102, 1, NULL, "c");
	struct filter f[3];
	struct coll   c = { 0 };
	char	      text[256];
	size_t	      i;

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, b, NULL) == STORE_OK);
	T_CHECK(store_put(s, c2, NULL) == STORE_OK);
	snprintf(text, sizeof(text), "{\"authors\":[\"%s\"]}", a->pubkey_hex);
	T_ASSERT(parse_filter(text, &f[0]) == 0);
	T_ASSERT(parse_filter("{\"kinds\":[1]}", &f[1]) == 0);
	T_ASSERT(parse_filter("{\"kinds\":[]}", &f[2]) == 0);
	T_CHECK(store_query(s, f, 3, 100, 100, NOW, collect, &c) == 3);
	/* First filter's results in its order, then the new ones. */
	{
		struct event *exp[] = { b, a, c2 };

		T_CHECK(coll_is(&c, exp, 3));
	}
	coll_free(&c);
	c.stop_after = 2;
	T_CHECK(store_query(s, f, 3, 100, 100, NOW, collect, &c) == 2);
	coll_free(&c);
	for (i = 0; i < 3; i++)
		filter_free(&f[i]);
	event_destroy(a);
	event_destroy(b);
	event_destroy(c2);
	store_close(s);
}

/* xorshift: a reproducible event set. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t
rng(uint32_t n)
{
	return tunit_rng_below(&rng_state, n);
}

static int
cmp_newest(const void *x, const void *y)
{
	const struct event *a = *(struct event *const *)x;
	const struct event *b = *(struct event *const *)y;

	if (a->created_at != b->created_at)
		return a->created_at > b->created_at ? -1 : 1;
	return memcmp(a->id, b->id, EVENT_ID_LEN);
}

/*
 * store_query_page() of f[0..n) paused after every step events: what it
 * delivered, in c.  Returns the total, or -1.
 */
static int
paged(struct store *s, const struct filter *f, size_t n, size_t max, size_t def,
    int64_t now, size_t step, struct coll *c)
{
	struct store_cursor cur;
	int		    r, total = 0, calls = 0;

	store_cursor_init(&cur, now);
	do {
		c->stop_after = c->n + step;
		if ((r = store_query_page(s, f, n, max, def, &cur, collect,
			 c)) == -1)
			break;
		total += r;
	} while (!cur.sc_done && ++calls < 100000);
	c->stop_after = 0;
	store_cursor_free(&cur);
	return r == -1 || !cur.sc_done ? -1 : total;
}

/* 1 if a and b delivered the same events in the same order. */
static int
coll_same(const struct coll *a, const struct coll *b)
{
	size_t i;

	if (a->n != b->n) {
		printf("# %zu events against %zu\n", a->n, b->n);
		return 0;
	}
	for (i = 0; i < a->n; i++)
		if (a->seq[i] != b->seq[i]) {
			printf("# event %zu differs\n", i);
			return 0;
		}
	return 1;
}

#define TIES_RUN    100 /* events at one time, more than a limit */
#define TIES_SPREAD 40	/* older ones, one a time */

/*
 * One tag value, one author, one kind or one author's kind is read in
 * its index's time order with ties and the limit left to store.c
 * (qb_ctie): a run of equal times longer than the limit and its slack
 * still gives the lowest ids first, at every limit, whole or paused after
 * every 3 events.
 */
static void
long_tie_runs_keep_nip01_order_at_any_limit(void)
{
	static const size_t	 limits[] = { 1, 7, TIES_RUN - 1, TIES_RUN + 5,
		     500 };
	static const char *const shapes[] = { "\"#t\":[\"y\"]",
		"\"authors\":[\"%s\"]", "\"kinds\":[1]",
		"\"authors\":[\"%s\"],\"kinds\":[1]" };
	struct store		*s = fresh();
	struct event		*ev[TIES_RUN + TIES_SPREAD];
	struct filter		 f;
	struct coll		 c = { 0 }, p = { 0 };
	char			 pk[PUBKEY_LEN * 2 + 1], shape[128], text[256];
	size_t			 i, k, l, n = TIES_RUN + TIES_SPREAD, want;
	uint8_t			 pkb[PUBKEY_LEN];

	T_ASSERT(s != NULL);
	for (i = 0; i < n; i++) {
		char content[16];

		snprintf(content, sizeof(content), "tie %zu", i);
		ev[i] =
		    ev_new(sk1, i < TIES_RUN ? NOW - 5 : NOW - 100 - (int64_t)i,
			1, "[[\"t\",\"y\"]]", content);
		T_ASSERT(store_put(s, ev[i], NULL) == STORE_OK);
	}
	qsort(ev, n, sizeof(ev[0]), cmp_newest);
	event_pubkey_of(sk1, pkb);
	for (i = 0; i < PUBKEY_LEN; i++)
		snprintf(pk + 2 * i, 3, "%02x", pkb[i]);
	for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		snprintf(shape, sizeof(shape), shapes[k], pk, pk);
		for (l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
			want = limits[l] < n ? limits[l] : n;
			snprintf(text, sizeof(text), "{%s,\"limit\":%zu}",
			    shape, limits[l]);
			T_CHECK(
			    query1(s, text, 500, 500, NOW, &c) == (int)want);
			T_CHECK(coll_is(&c, ev, want));
			T_ASSERT(parse_filter(text, &f) == 0);
			T_CHECK(
			    paged(s, &f, 1, 500, 500, NOW, 3, &p) == (int)want);
			T_CHECK(coll_same(&c, &p));
			filter_free(&f);
			coll_free(&c);
			coll_free(&p);
		}
	}
	for (i = 0; i < n; i++)
		event_destroy(ev[i]);
	store_close(s);
}

/*
 * A paused query goes on after its last event, created_at ties broken by
 * id, and keeps its limit; events stored meanwhile are left out (newer
 * or older), one deleted meanwhile is not given, and no other is lost.
 */
static void
paused_query_ignores_changes_meanwhile(void)
{
	struct store	   *s = fresh();
	struct event	   *ev[12], *late[2], *del, *gone;
	struct filter	    f;
	struct store_cursor cur;
	struct coll	    c = { 0 };
	uint8_t		    pk1[PUBKEY_LEN];
	size_t		    i;

	T_ASSERT(s != NULL);
	/* Three events at each of four times: ties everywhere. */
	for (i = 0; i < 12; i++) {
		char tags[64];

		snprintf(tags, sizeof(tags), "[[\"t\",\"x\"],[\"n\",\"%zu\"]]",
		    i);
		ev[i] = ev_new(i % 2 ? sk1 : sk2, NOW - 10 * (int64_t)(i / 3),
		    1, tags, "");
		T_ASSERT(store_put(s, ev[i], NULL) == STORE_OK);
	}
	T_ASSERT(parse_filter("{\"#t\":[\"x\"],\"limit\":10}", &f) == 0);
	store_cursor_init(&cur, NOW);
	c.stop_after = 4;
	T_EQ_INT(store_query_page(s, &f, 1, 500, 500, &cur, collect, &c), 4);
	T_CHECK(!cur.sc_done);
	/* Meanwhile: one newer, one older, and the next one deleted. */
	late[0] = ev_new(sk3, NOW + 5, 1, "[[\"t\",\"x\"]]", "new");
	late[1] = ev_new(sk3, NOW - 100, 1, "[[\"t\",\"x\"]]", "old");
	T_ASSERT(store_put(s, late[0], NULL) == STORE_OK);
	T_ASSERT(store_put(s, late[1], NULL) == STORE_OK);
	/* The 5th in NIP-01 order: sorted below, deleted by its author. */
	c.stop_after = 0;
	T_EQ_INT(store_query_page(s, &f, 1, 500, 500, &cur, collect, &c), 6);
	T_CHECK(cur.sc_done);
	store_cursor_free(&cur);
	/* What one query at the start gives: the 10 newest of ev. */
	qsort(ev, 12, sizeof(ev[0]), cmp_newest);
	T_CHECK(coll_is(&c, ev, 10));
	coll_free(&c);

	/*
	 * A deletion between pages: that event is not given and no other is
	 * lost; the limit counts events given, so the 11th comes in its place.
	 */
	filter_free(&f);
	T_ASSERT(parse_filter("{\"#t\":[\"x\"],\"until\":1000000,"
			      "\"limit\":10}",
		     &f) == 0);
	store_cursor_init(&cur, NOW);
	c.stop_after = 3;
	T_EQ_INT(store_query_page(s, &f, 1, 500, 500, &cur, collect, &c), 3);
	event_pubkey_of(sk1, pk1);
	del = deletion(memcmp(ev[3]->pubkey, pk1, PUBKEY_LEN) == 0 ? sk1 : sk2,
	    NOW + 1, ev[3]->id_hex, NULL, NULL);
	T_ASSERT(store_put(s, del, NULL) == STORE_OK);
	c.stop_after = 0;
	T_EQ_INT(store_query_page(s, &f, 1, 500, 500, &cur, collect, &c), 7);
	T_CHECK(cur.sc_done);
	store_cursor_free(&cur);
	gone = ev[3];
	memmove(&ev[3], &ev[4], 8 * sizeof(ev[0]));
	T_CHECK(coll_is(&c, ev, 10));
	ev[11] = gone;
	coll_free(&c);
	event_destroy(del);

	filter_free(&f);
	for (i = 0; i < 12; i++)
		event_destroy(ev[i]);
	event_destroy(late[0]);
	event_destroy(late[1]);
	store_close(s);
}

static void
query_results_equal_filter_match(void)
{
	enum {
		NEV = 400
	};
	static const uint32_t kinds[] = { 1, 7, 1617, 1621, 30617, 10002 };
	const uint8_t	     *keys[] = { sk1, sk2, sk3 };
	struct store	     *s = fresh();
	struct event	     *ev[NEV], *exp[NEV];
	char	      pk[3][PUBKEY_HEX_LEN + 1], tags[1024], content[32];
	static char   filters[40][FLEN];
	struct filter f[40];
	struct coll   c = { 0 };
	int64_t	      now = 1050;
	size_t	      i, j, nf = 0, nexp, len;
	uint8_t	      pkb[PUBKEY_LEN];

	T_ASSERT(s != NULL);
	for (i = 0; i < 3; i++) {
		T_ASSERT(event_pubkey_of(keys[i], pkb) == 0);
		hex_encode(pkb, PUBKEY_LEN, pk[i]);
	}
	for (i = 0; i < NEV; i++) {
		uint32_t kind = kinds[rng(6)];

		len = (size_t)snprintf(tags, sizeof(tags), "[[\"k\",\"v\"]");
		if (kind == 30617)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"d\",\"r%u\"]", rng(3));
		if (i > 0 && rng(3) == 0)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"e\",\"%s\"]", ev[rng((uint32_t)i)]->id_hex);
		if (rng(2))
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"p\",\"%s\"]", pk[rng(3)]);
		if (rng(4) == 0)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"p\",\"%s\"]", pk[rng(3)]);
		if (rng(2))
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"t\",\"%c\"]", 'a' + rng(3));
		if (rng(4) == 0)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"t\",\"x\",\"y\"]");
		if (rng(4) == 0)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"a\",\"30617:%s:r%u\"]", pk[rng(3)], rng(3));
		if (rng(8) == 0)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len,
			    ",[\"expiration\",\"%u\"]", 1000 + rng(100));
		snprintf(tags + len, sizeof(tags) - len, "]");
		snprintf(content, sizeof(content), "event %zu", i);
		ev[i] =
		    ev_new(keys[rng(3)], 1000 + rng(40), kind, tags, content);
		enum store_result r = store_put(s, ev[i], NULL);
		T_CHECK(r == STORE_OK || r == STORE_REPLACED);
	}

	snprintf(filters[nf++], FLEN, "{}");
	snprintf(filters[nf++], FLEN, "{\"kinds\":[1]}");
	snprintf(filters[nf++], FLEN, "{\"kinds\":[1,7],\"limit\":10}");
	snprintf(filters[nf++], FLEN, "{\"authors\":[\"%s\"]}", pk[0]);
	snprintf(filters[nf++], FLEN,
	    "{\"authors\":[\"%s\",\"%s\"],"
	    "\"kinds\":[1621]}",
	    pk[1], pk[2]);
	snprintf(filters[nf++], FLEN, "{\"#t\":[\"a\"]}");
	snprintf(filters[nf++], FLEN, "{\"#t\":[\"a\",\"b\"],\"kinds\":[1]}");
	snprintf(filters[nf++], FLEN, "{\"#e\":[\"%s\",\"%s\"]}", ev[3]->id_hex,
	    ev[10]->id_hex);
	snprintf(filters[nf++], FLEN,
	    "{\"#p\":[\"%s\"],\"since\":1010,"
	    "\"until\":1030}",
	    pk[1]);
	snprintf(filters[nf++], FLEN, "{\"ids\":[\"%s\",\"%s\",\"%s\"]}",
	    ev[0]->id_hex, ev[5]->id_hex, ev[399]->id_hex);
	snprintf(filters[nf++], FLEN, "{\"kinds\":[30617],\"#d\":[\"r1\"]}");
	snprintf(filters[nf++], FLEN, "{\"#a\":[\"30617:%s:r0\"]}", pk[2]);
	snprintf(filters[nf++], FLEN, "{\"since\":1035}");
	snprintf(filters[nf++], FLEN, "{\"until\":1005,\"limit\":3}");
	snprintf(filters[nf++], FLEN, "{\"#t\":[\"x\"]}");
	snprintf(filters[nf++], FLEN, "{\"#t\":[\"y\"]}");
	snprintf(filters[nf++], FLEN,
	    "{\"#t\":[\"c\"],\"#p\":[\"%s\"],"
	    "\"authors\":[\"%s\"]}",
	    pk[0], pk[1]);
	snprintf(filters[nf++], FLEN, "{\"kinds\":[10002,30617],\"limit\":7}");
	/* Two arms finding the same event (two p tags) return it once. */
	snprintf(filters[nf++], FLEN,
	    "{\"#p\":[\"%s\",\"%s\"],"
	    "\"limit\":40}",
	    pk[0], pk[1]);
	snprintf(filters[nf++], FLEN,
	    "{\"kinds\":[1621],\"since\":1010,"
	    "\"until\":1020}");
	snprintf(filters[nf++], FLEN,
	    "{\"authors\":[\"%s\"],\"until\":1020,"
	    "\"limit\":5}",
	    pk[2]);
	/* Too many kinds, or authors x kinds, for one scan per value. */
	snprintf(filters[nf++], FLEN,
	    "{\"kinds\":[1,2,3,4,5,6,7,8,9,10,11,"
	    "12,13,14,15,16,17,1617],\"limit\":30}");
	snprintf(filters[nf++], FLEN,
	    "{\"authors\":[\"%s\",\"%s\",\"%s\"],"
	    "\"kinds\":[1,2,3,4,5,6,7],\"limit\":25}",
	    pk[0], pk[1], pk[2]);
	/* More authors than arms, and authors x kinds beyond the arms. */
	len = (size_t)snprintf(filters[nf], FLEN,
	    "{\"limit\":15,"
	    "\"authors\":[\"%s\"",
	    pk[0]);
	for (j = 0; j < 129; j++)
		len += (size_t)snprintf(filters[nf] + len, FLEN - len,
		    ",\"%064zx\"", j);
	snprintf(filters[nf++] + len, FLEN - len, "]}");
	len = (size_t)snprintf(filters[nf], FLEN,
	    "{\"authors\":[\"%s\","
	    "\"%s\"],\"kinds\":[7",
	    pk[1], pk[2]);
	for (j = 0; j < 70; j++)
		len += (size_t)snprintf(filters[nf] + len, FLEN - len, ",%zu",
		    1000 + j * 10);
	snprintf(filters[nf++] + len, FLEN - len, "]}");
	/* ids with other members; two multi-value tag conditions. */
	len = (size_t)snprintf(filters[nf], FLEN,
	    "{\"#t\":[\"a\",\"b\","
	    "\"x\"],\"kinds\":[1,7,1617,1621],\"ids\":[");
	for (j = 0; j < 40; j++)
		len += (size_t)snprintf(filters[nf] + len, FLEN - len,
		    "%s\"%s\"", j ? "," : "", ev[j]->id_hex);
	snprintf(filters[nf++] + len, FLEN - len, "]}");
	snprintf(filters[nf++], FLEN,
	    "{\"#t\":[\"a\",\"b\",\"x\"],"
	    "\"#p\":[\"%s\",\"%s\"],\"limit\":12}",
	    pk[0], pk[2]);
	/* More #e values than arms: one SELECT driven by the tag index. */
	len = (size_t)snprintf(filters[nf], FLEN,
	    "{\"kinds\":[1,7,1617],"
	    "\"#e\":[");
	for (j = 0; j < 20; j++)
		len += (size_t)snprintf(filters[nf] + len, FLEN - len,
		    "%s\"%s\"", j ? "," : "", ev[j * 7]->id_hex);
	snprintf(filters[nf++] + len, FLEN - len, "]}");

	for (i = 0; i < nf; i++) {
		T_ASSERT(parse_filter(filters[i], &f[i]) == 0);
		nexp = 0;
		for (j = 0; j < NEV; j++) {
			int64_t x = event_expiration(ev[j]);

			if (store_has_id(s, ev[j]->id) == 1 &&
			    filter_match(&f[i], ev[j]) && (x == 0 || x >= now))
				exp[nexp++] = ev[j];
		}
		qsort(exp, nexp, sizeof(exp[0]), cmp_newest);
		if (f[i].f_has_limit && (size_t)f[i].f_limit < nexp)
			nexp = (size_t)f[i].f_limit;
		if (f[i].f_has_ids && !f[i].f_has_limit && f[i].f_nids < nexp)
			nexp = f[i].f_nids;
		T_CHECK(store_query(s, &f[i], 1, NEV, NEV, now, collect, &c) ==
		    (int)nexp);
		if (!coll_is(&c, exp, nexp))
			printf("# filter %s\n", filters[i]);
		T_CHECK(coll_is(&c, exp, nexp));
		/* Paused after every event, or every third: the same. */
		{
			struct coll p1 = { 0 }, p3 = { 0 };

			T_CHECK(paged(s, &f[i], 1, NEV, NEV, now, 1, &p1) ==
			    (int)nexp);
			T_CHECK(coll_same(&p1, &c));
			T_CHECK(paged(s, &f[i], 1, NEV, NEV, now, 3, &p3) ==
			    (int)nexp);
			T_CHECK(coll_same(&p3, &c));
			coll_free(&p1);
			coll_free(&p3);
		}
		coll_free(&c);
	}

	/* All at once: each event once, in the order of its first filter. */
	T_CHECK(store_query(s, f, nf, NEV, NEV, now, collect, &c) > 0);
	for (i = 0; i < c.n; i++)
		for (j = i + 1; j < c.n; j++)
			T_CHECK(c.seq[i] != c.seq[j]);
	/* Paused: no event twice, none left out, the same order. */
	{
		struct coll p1 = { 0 };

		T_CHECK(paged(s, f, nf, NEV, NEV, now, 1, &p1) == (int)c.n);
		T_CHECK(coll_same(&p1, &c));
		coll_free(&p1);
	}
	coll_free(&c);

	for (i = 0; i < nf; i++)
		filter_free(&f[i]);
	for (i = 0; i < NEV; i++)
		event_destroy(ev[i]);
	store_close(s);
}

static void
since_seq_reads_feed_in_order(void)
{
	struct store *s = fresh();
	struct event *ev[5];
	struct coll   c = { 0 };
	int64_t	      seq[5], last = -1;
	size_t	      i;
	char	      content[8];

	T_ASSERT(s != NULL);
	T_CHECK(store_last_seq(s, &last) == 0);
	T_CHECK(last == 0);
	for (i = 0; i < 5; i++) {
		snprintf(content, sizeof(content), "%zu", i);
		/* Out of created_at order: the feed is arrival order. */
		ev[i] = ev_new(sk1, 500 - (int64_t)i * 10, 1, NULL, content);
		T_CHECK(store_put(s, ev[i], &seq[i]) == STORE_OK);
		T_CHECK(i == 0 || seq[i] > seq[i - 1]);
	}
	T_CHECK(store_since_seq(s, 0, 100, collect, &c) == 5);
	T_CHECK(coll_is(&c, ev, 5));
	for (i = 0; i < c.n; i++)
		T_CHECK(c.seq[i] == seq[i]);
	coll_free(&c);
	T_CHECK(store_since_seq(s, seq[1], 2, collect, &c) == 2);
	T_CHECK(coll_is(&c, ev + 2, 2));
	coll_free(&c);
	T_CHECK(store_since_seq(s, seq[4], 100, collect, &c) == 0);
	coll_free(&c);
	T_CHECK(store_last_seq(s, &last) == 0);
	T_CHECK(last == seq[4]);

	/* Removing the newest does not move last_seq back. */
	{
		struct event *del;
		int64_t	      dseq;

		del = deletion(sk1, 600, ev[4]->id_hex, NULL, NULL);
		T_CHECK(store_put(s, del, &dseq) == STORE_OK);
		T_CHECK(store_last_seq(s, &last) == 0);
		T_CHECK(last == dseq);
		T_CHECK(store_since_seq(s, seq[3], 100, collect, &c) == 1);
		T_CHECK(coll_is(&c, &del, 1));
		coll_free(&c);
		event_destroy(del);
	}
	for (i = 0; i < 5; i++)
		event_destroy(ev[i]);
	store_close(s);
}

static void
tag_exists_checks_first_values_of_named_letters(void)
{
	struct store *s = fresh();
	struct event *ev = ev_new(sk1, 100, 1,
	    "[[\"A\",\"30617:x:y\"],[\"q\",\"quoted\",\"extra\"],"
	    "[\"qq\",\"long\"]]",
	    "x");

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(store_tag_exists(s, "aAq", "30617:x:y") == 1);
	T_CHECK(store_tag_exists(s, "a", "30617:x:y") == 0);
	T_CHECK(store_tag_exists(s, "aAq", "quoted") == 1);
	T_CHECK(store_tag_exists(s, "aAq", "extra") == 0);
	T_CHECK(store_tag_exists(s, "q", "long") == 0);
	T_CHECK(store_tag_exists(s, "", "quoted") == 0);
	event_destroy(ev);

	/* A tag repeated in one event is indexed, and found, once. */
	ev =
	    ev_new(sk1, 100, 1, "[[\"t\",\"same\"],[\"t\",\"same\"]]", "twice");
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(count_of(s, "{\"#t\":[\"same\"]}") == 1);
	T_CHECK(count_of(s, "{\"#t\":[\"same\",\"other\"]}") == 1);
	event_destroy(ev);

	/* Values are compared by length: a NUL inside one is kept. */
	ev = ev_new(sk1, 100, 1, "[[\"t\",\"a\\u0000b\"]]", "nul");
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(count_of(s, "{\"#t\":[\"a\\u0000b\"]}") == 1);
	T_CHECK(count_of(s, "{\"#t\":[\"a\"]}") == 0);
	T_CHECK(count_of(s, "{\"#t\":[\"a\\u0000c\",\"x\"]}") == 0);
	event_destroy(ev);
	store_close(s);
}

static void
transactions_batch_and_roll_back(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, NULL, "a");
	struct event *b = ev_new(sk1, 101, 1, NULL, "b");
	struct event *old = ev_new(sk1, 50, 0, NULL, "old");
	struct event *new = ev_new(sk1, 60, 0, NULL, "new");

	T_ASSERT(s != NULL);
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, b, NULL) == STORE_OK);
	T_CHECK(store_rollback(s) == 0);
	T_CHECK(store_count(s) == 0);

	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, new, NULL) == STORE_OK);
	/* A refused put inside the batch leaves the rest of it alone. */
	T_CHECK(store_put(s, old, NULL) == STORE_REPLACED);
	T_CHECK(store_put(s, a, NULL) == STORE_DUPLICATE);
	T_CHECK(store_put(s, b, NULL) == STORE_OK);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_count(s) == 3);
	event_destroy(a);
	event_destroy(b);
	event_destroy(old);
	event_destroy(new);
	store_close(s);
}

/*
 * store_put_new(), relayd's put after its own duplicate and deletion
 * checks: the same effects as store_put() inside a transaction (tags,
 * replacement, deletion), nothing outside one.
 */
static void
put_new_has_the_effects_of_put_inside_a_transaction(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, "[[\"t\",\"x\"]]", "a");
	struct event *old = ev_new(sk1, 50, 0, NULL, "old");
	struct event *new = ev_new(sk1, 60, 0, NULL, "new");
	struct event *eph = ev_new(sk1, 100, 20001, NULL, "");
	struct event *del = deletion(sk1, 200, a->id_hex, NULL, NULL);
	int64_t	      seq = 0, seq2 = 0;

	T_ASSERT(s != NULL);
	T_CHECK(store_put_new(s, a, &seq) == STORE_ERROR);
	T_CHECK(seq == 0);
	T_CHECK(store_count(s) == 0);

	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put_new(s, eph, NULL) == STORE_ERROR);
	T_CHECK(store_put_new(s, a, &seq) == STORE_OK);
	T_CHECK(seq > 0);
	T_CHECK(store_put_new(s, new, &seq2) == STORE_OK);
	T_CHECK(seq2 > seq);
	T_CHECK(store_put_new(s, old, NULL) == STORE_REPLACED);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_count(s) == 2);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 1);
	T_CHECK(count_of(s, "{\"kinds\":[0]}") == 1);

	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put_new(s, del, NULL) == STORE_OK);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_has_id(s, a->id) == 0);
	T_CHECK(store_is_deleted(s, a->id, a->pubkey) == 1);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 0);
	event_destroy(a);
	event_destroy(old);
	event_destroy(new);
	event_destroy(eph);
	event_destroy(del);
	store_close(s);
}

/*
 * store_put_new() of an event stored already (relayd took its id for new:
 * another process wrote it) answers a duplicate, and the transaction goes
 * on: the events put beside it are committed.
 */
static void
put_new_of_a_stored_copy_is_a_duplicate(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, "[[\"t\",\"x\"]]", "a");
	struct event *b = ev_new(sk1, 101, 1, NULL, "b");

	T_ASSERT(s != NULL);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put_new(s, a, NULL) == STORE_DUPLICATE);
	T_CHECK(store_put_new(s, b, NULL) == STORE_OK);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_count(s) == 2);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 1);
	event_destroy(a);
	event_destroy(b);
	store_close(s);
}

/*
 * A put that fails after its first write (here a trigger refuses one of
 * its tag rows) leaves no partial event behind: outside a transaction its
 * own is rolled back; inside one the whole transaction is, at commit.
 */
static void
a_failed_put_never_commits_half_an_event(void)
{
	struct store *s = fresh();
	struct event *a = ev_new(sk1, 100, 1, NULL, "a");
	struct event *bad = ev_new(sk1, 101, 1, "[[\"t\",\"boom\"]]", "bad");
	struct event *c = ev_new(sk1, 102, 1, NULL, "c");

	T_ASSERT(s != NULL);
	T_ASSERT(sqlite3_exec(store_sqlite(s),
		     "CREATE TEMP TRIGGER boom "
		     "BEFORE INSERT ON main.tags WHEN NEW.value = 'boom' "
		     "BEGIN SELECT RAISE(ABORT, 'boom'); END",
		     NULL, NULL, NULL) == SQLITE_OK);
	/* Alone: its own transaction, rolled back. */
	T_CHECK(store_put(s, bad, NULL) == STORE_ERROR);
	T_CHECK(store_has_id(s, bad->id) == 0);
	T_CHECK(store_count(s) == 0);

	/* In a batch: the commit fails and takes the batch back whole. */
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, bad, NULL) == STORE_ERROR);
	/* Doomed (SQLITE_FULL may have ended it already): no more writes. */
	T_CHECK(store_put(s, c, NULL) == STORE_ERROR);
	T_CHECK(store_commit(s) == -1);
	T_CHECK(store_has_id(s, c->id) == 0);
	T_CHECK(store_count(s) == 0);
	T_CHECK(store_has_id(s, bad->id) == 0);

	/* The next transaction is whole again. */
	T_CHECK(store_begin(s) == 0);
	T_CHECK(store_put(s, a, NULL) == STORE_OK);
	T_CHECK(store_put(s, c, NULL) == STORE_OK);
	T_CHECK(store_commit(s) == 0);
	T_CHECK(store_count(s) == 2);
	event_destroy(a);
	event_destroy(bad);
	event_destroy(c);
	store_close(s);
}

static void
readonly_store_reads_what_writer_committed(void)
{
	char	      path[128];
	struct store *w, *r;
	struct event *a = ev_new(sk1, 100, 1, NULL, "a");
	struct event *b = ev_new(sk1, 101, 1, NULL, "b");
	struct event *other = ev_new(sk2, 1, 1, NULL, "");
	struct coll   c = { 0 };

	snprintf(path, sizeof(path), "%s/ro/graspd.db", tmpdir);
	T_CHECK(store_open(path, 1, err, sizeof(err)) == NULL);
	T_ASSERT((w = store_open(path, 0, err, sizeof(err))) != NULL);
	T_ASSERT((r = store_open(path, 1, err, sizeof(err))) != NULL);
	T_CHECK(store_put(w, a, NULL) == STORE_OK);
	T_CHECK(query1(r, "{}", 10, 10, NOW, &c) == 1);
	coll_free(&c);
	T_CHECK(store_put(w, b, NULL) == STORE_OK);
	T_CHECK(query1(r, "{}", 10, 10, NOW, &c) == 2);
	coll_free(&c);
	/* Writing through a read-only store fails cleanly. */
	T_CHECK(store_put(r, b, NULL) == STORE_DUPLICATE);
	T_CHECK(store_put(r, other, NULL) == STORE_ERROR);
	T_CHECK(store_has_id(w, other->id) == 0);
	store_close(r);
	store_close(w);
	/* With no writer left (WAL checkpointed away), still readable. */
	T_ASSERT((r = store_open(path, 1, err, sizeof(err))) != NULL);
	T_CHECK(query1(r, "{}", 10, 10, NOW, &c) == 2);
	coll_free(&c);
	store_close(r);
	event_destroy(a);
	event_destroy(b);
	event_destroy(other);
}

static void
result_messages_follow_nip01_prefixes(void)
{
	T_EQ_STR(store_result_message(STORE_OK), "");
	T_EQ_STR(store_result_message(STORE_DUPLICATE),
	    "duplicate: already have this event");
	T_EQ_STR(store_result_message(STORE_DELETED),
	    "blocked: this event is deleted");
	T_EQ_STR(store_result_message(STORE_REPLACED),
	    "invalid: a newer version of this replaceable event is stored");
	T_EQ_STR(store_result_message(STORE_INVALID_DELETION),
	    "invalid: deletion targets events of another author");
	T_EQ_STR(store_result_message(STORE_ERROR), "error: database error");
	T_CHECK(store_result_ok(STORE_OK) && store_result_ok(STORE_DUPLICATE));
	T_CHECK(!store_result_ok(STORE_DELETED) &&
	    !store_result_ok(STORE_REPLACED) &&
	    !store_result_ok(STORE_INVALID_DELETION) &&
	    !store_result_ok(STORE_ERROR));
}

struct items {
	size_t	n;
	int64_t ts[64];
	uint8_t id[64][EVENT_ID_LEN];
};

static int
collect_item(int64_t created_at, const uint8_t id[EVENT_ID_LEN], void *arg)
{
	struct items *it = arg;

	if (it->n == 64)
		return 1;
	it->ts[it->n] = created_at;
	memcpy(it->id[it->n++], id, EVENT_ID_LEN);
	return 0;
}

static void
query_items_ascending_without_limit_or_expired(void)
{
	struct store *s = fresh();
	struct event *ev[12], *gone;
	struct filter f;
	struct items  it;
	char	      content[16];
	size_t	      i;
	int	      more;

	T_ASSERT(s != NULL);
	for (i = 0; i < 12; i++) {
		/* Three per second: ties are ordered by id. */
		snprintf(content, sizeof(content), "%zu", i);
		ev[i] = ev_new(i % 2 ? sk1 : sk2, 200 - (int64_t)(i / 3), 1,
		    i < 6 ? "[[\"t\",\"x\"]]" : NULL, content);
		T_CHECK(store_put(s, ev[i], NULL) == STORE_OK);
	}
	gone = ev_new(sk3, 150, 1, "[[\"expiration\",\"1000\"]]", "x");
	T_CHECK(store_put(s, gone, NULL) == STORE_OK);

	T_ASSERT(parse_filter("{\"limit\":2}", &f) == 0);
	memset(&it, 0, sizeof(it));
	T_CHECK(
	    store_query_items(s, &f, NOW, 100, collect_item, &it, &more) == 12);
	T_CHECK(more == 0);
	T_CHECK(it.n == 12);
	for (i = 1; i < it.n; i++)
		T_CHECK(it.ts[i - 1] < it.ts[i] ||
		    (it.ts[i - 1] == it.ts[i] &&
			memcmp(it.id[i - 1], it.id[i], EVENT_ID_LEN) < 0));
	T_CHECK(it.ts[0] == 197 && it.ts[11] == 200);
	/* Before its expiration the expiring event is part of the set. */
	memset(&it, 0, sizeof(it));
	T_CHECK(
	    store_query_items(s, &f, 999, 100, collect_item, &it, &more) == 13);
	T_CHECK(it.ts[0] == 150);
	/* More than max: max delivered, and said so. */
	memset(&it, 0, sizeof(it));
	T_CHECK(
	    store_query_items(s, &f, NOW, 5, collect_item, &it, &more) == 5);
	T_CHECK(more == 1);
	memset(&it, 0, sizeof(it));
	T_CHECK(
	    store_query_items(s, &f, NOW, 12, collect_item, &it, &more) == 12);
	T_CHECK(more == 0);
	filter_free(&f);

	T_ASSERT(parse_filter("{\"#t\":[\"x\"]}", &f) == 0);
	memset(&it, 0, sizeof(it));
	T_CHECK(
	    store_query_items(s, &f, NOW, 100, collect_item, &it, &more) == 6);
	T_CHECK(it.ts[0] == 199 && it.ts[5] == 200);
	filter_free(&f);
	for (i = 0; i < 12; i++)
		event_destroy(ev[i]);
	event_destroy(gone);
	store_close(s);
}

/* The one integer a statement gives on db, or -1. */
static long long
sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long long     v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The filter {"#name":[value]}'s count of events in s. */
static int
count_tag(struct store *s, char name, const char *value)
{
	char q[256];

	snprintf(q, sizeof(q), "{\"#%c\":[\"%s\"]}", name, value);
	return count_of(s, q);
}

/* hex (64 digits) in uppercase, into out. */
static void
upper_hex(const char *hex, char out[65])
{
	size_t i;

	for (i = 0; i < 64; i++)
		out[i] = (char)toupper((unsigned char)hex[i]);
	out[64] = '\0';
}

/*
 * Tag values of 64 lowercase hex digits are kept as their 32 bytes (db.h):
 * a filter finds them by the same digits, a value of uppercase digits
 * only as written (filter.c refuses it in #e and #p), each name only in
 * its own case, and a deletion takes every row of the event.
 */
static void
tag_values_keep_their_case_and_their_digits(void)
{
	struct store *s = fresh();
	struct event *root = ev_new(sk2, 100, 1, NULL, "root");
	struct event *cmt = NULL, *del = NULL;
	char	      tags[512], q[256], upper[EVENT_ID_HEX_LEN + 1];

	T_ASSERT(s != NULL);
	upper_hex(root->id_hex, upper);
	snprintf(tags, sizeof(tags),
	    "[[\"e\",\"%s\"],[\"E\",\"%s\"],[\"q\",\"%s\"]]", root->id_hex,
	    upper, root->pubkey_hex);
	cmt = ev_new(sk1, 110, 1111, tags, "c");
	T_CHECK(store_put(s, root, NULL) == STORE_OK);
	T_CHECK(store_put(s, cmt, NULL) == STORE_OK);
	T_CHECK(count_tag(s, 'e', root->id_hex) == 1);
	T_CHECK(count_tag(s, 'E', upper) == 1);
	T_CHECK(count_tag(s, 'E', root->id_hex) == 0);
	snprintf(q, sizeof(q), "{\"#q\":[\"%s\",\"%s\"]}", root->id_hex,
	    root->pubkey_hex);
	T_CHECK(count_of(s, q) == 1);
	T_CHECK(store_tag_exists(s, "eEq", root->id_hex) == 1);
	T_CHECK(store_tag_exists(s, "E", root->id_hex) == 0);
	T_CHECK(store_tag_exists(s, "E", upper) == 1);
	T_CHECK(store_tag_exists(s, "q", root->pubkey_hex) == 1);
	T_CHECK(store_tag_exists(s, "p", root->pubkey_hex) == 0);
	T_CHECK(
	    sql_int(store_sqlite(s),
		"SELECT count(*) FROM tags WHERE typeof(value) = 'blob'") == 2);

	T_ASSERT((del = deletion(sk1, 200, cmt->id_hex, NULL, NULL)) != NULL);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(count_tag(s, 'e', root->id_hex) == 0);
	/* The deletion's own rows: k 1 and e <cmt's id>. */
	T_CHECK(sql_int(store_sqlite(s), "SELECT count(*) FROM tags") == 2);
	store_close(s);
	event_destroy(del);
	event_destroy(cmt);
	event_destroy(root);
}

/*
 * Schema step 9: a value under both cases of a name, or twice under one,
 * is one tag row that holds the cases it came with; a filter for one case
 * finds only the events that have it, alone or beside the other name's
 * filter, and a deletion takes the row whatever its cases.
 */
static void
one_tag_row_holds_both_cases_of_a_name(void)
{
	struct store *s = fresh();
	struct event *root = ev_new(sk2, 100, 1, NULL, "root");
	struct event *both = NULL, *upper = NULL, *lower = NULL, *del = NULL;
	struct event *split = NULL;
	char	      tags[1024], q[256];

	T_ASSERT(s != NULL);
	snprintf(tags, sizeof(tags),
	    "[[\"E\",\"%s\"],[\"e\",\"%s\"],[\"e\",\"%s\"]]", root->id_hex,
	    root->id_hex, root->id_hex);
	both = ev_new(sk1, 110, 1111, tags, "both");
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"]]", root->id_hex);
	upper = ev_new(sk1, 120, 1111, tags, "upper");
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", root->id_hex);
	lower = ev_new(sk1, 130, 1, tags, "lower");
	T_CHECK(store_put(s, root, NULL) == STORE_OK);
	T_CHECK(store_put(s, both, NULL) == STORE_OK);
	T_CHECK(store_put(s, upper, NULL) == STORE_OK);
	T_CHECK(store_put(s, lower, NULL) == STORE_OK);
	T_CHECK(sql_int(store_sqlite(s),
		    "SELECT count(*) FROM tags WHERE letter = 'e'") == 3);
	T_CHECK(sql_int(store_sqlite(s),
		    "SELECT sum(cases * (created_at - 100))"
		    " FROM tags WHERE letter = 'e'") ==
	    (DB_TAG_LOWER | DB_TAG_UPPER) * 10 + DB_TAG_UPPER * 20 +
		DB_TAG_LOWER * 30);
	T_CHECK(count_tag(s, 'e', root->id_hex) == 2);
	T_CHECK(count_tag(s, 'E', root->id_hex) == 2);
	/* E and e in two statements of rows (STORE_TAG_ROWS apart). */
	snprintf(tags, sizeof(tags),
	    "[[\"E\",\"%s\"],[\"t\",\"1\"],[\"t\",\"2\"],[\"t\",\"3\"],"
	    "[\"t\",\"4\"],[\"t\",\"5\"],[\"t\",\"6\"],[\"t\",\"7\"],"
	    "[\"t\",\"8\"],[\"t\",\"9\"],[\"e\",\"%s\"]]",
	    root->id_hex, root->id_hex);
	T_ASSERT((split = ev_new(sk3, 140, 1111, tags, "split")) != NULL);
	T_CHECK(store_put(s, split, NULL) == STORE_OK);
	T_CHECK(sql_int(store_sqlite(s),
		    "SELECT cases FROM tags WHERE letter = 'e'"
		    " AND created_at = 140") == (DB_TAG_LOWER | DB_TAG_UPPER));
	T_CHECK(sql_int(store_sqlite(s),
		    "SELECT count(*) FROM tags WHERE created_at = 140") == 10);
	T_CHECK(count_tag(s, 'e', root->id_hex) == 3);
	T_CHECK(count_tag(s, 'E', root->id_hex) == 3);
	T_CHECK(store_put(s, split, NULL) == STORE_DUPLICATE);
	snprintf(q, sizeof(q), "{\"#e\":[\"%s\"],\"#E\":[\"%s\"]}",
	    root->id_hex, root->id_hex);
	T_CHECK(count_of(s, q) == 2);
	snprintf(q, sizeof(q), "{\"kinds\":[1],\"#E\":[\"%s\"]}", root->id_hex);
	T_CHECK(count_of(s, q) == 0);
	T_CHECK(store_tag_exists(s, "E", root->id_hex) == 1);

	T_ASSERT((del = deletion(sk1, 200, both->id_hex, upper->id_hex,
		      NULL)) != NULL);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(count_tag(s, 'E', root->id_hex) == 1);
	T_CHECK(count_tag(s, 'e', root->id_hex) == 2);
	/* lower's row, split's ten, and the deletion's k and two e rows. */
	T_CHECK(sql_int(store_sqlite(s), "SELECT count(*) FROM tags") == 14);
	store_close(s);
	event_destroy(split);
	event_destroy(del);
	event_destroy(lower);
	event_destroy(upper);
	event_destroy(both);
	event_destroy(root);
}

/*
 * A hostile event naming 300 values under T, then the same 300 under t,
 * then again under T: no pair shares a statement of rows, so each later
 * row meets its key through the upsert; the store keeps one row a value
 * with both cases, and a filter for either case finds the event.
 */
static void
many_values_under_both_cases_far_apart(void)
{
	struct store *s = fresh();
	struct buf    tags = BUF_INIT;
	struct event *ev;
	int	      pass, k;

	T_ASSERT(s != NULL);
	buf_addc(&tags, '[');
	for (pass = 0; pass < 3; pass++)
		for (k = 0; k < 300; k++)
			buf_printf(&tags, "%s[\"%c\",\"v%d\"]",
			    pass + k == 0 ? "" : ",", pass == 1 ? 't' : 'T', k);
	buf_addc(&tags, ']');
	T_ASSERT((ev = ev_new(sk1, 100, 1111, tags.b_data, "many")) != NULL);
	T_CHECK(store_put(s, ev, NULL) == STORE_OK);
	T_CHECK(sql_int(store_sqlite(s), "SELECT count(*) FROM tags") == 300);
	T_CHECK(sql_int(store_sqlite(s),
		    "SELECT count(*) FROM tags WHERE cases = " DB_TAG_LOWER_SQL
		    " | " DB_TAG_UPPER_SQL) == 300);
	T_CHECK(count_tag(s, 't', "v299") == 1);
	T_CHECK(count_tag(s, 'T', "v0") == 1);
	store_close(s);
	event_destroy(ev);
	buf_free(&tags);
}

/*
 * Takes a store of this schema back to schema 3: schema step 1's indexes
 * and tags, as schemas 1 to 3 hold them, and no step 6 tables.
 */
static const char schema_3_sql[] =
    "BEGIN;"
    "DROP TABLE inv_repos;"
    "DROP TRIGGER inv_nodes_gone;"
    "DROP TABLE inv_gone;"
    "DROP TABLE inv_roots;"
    "DROP TABLE inv_nodes;"
    "DROP TABLE inv_addrs;"
    "DROP TABLE inv_state;"
    "DROP TABLE eligible_authors;"
    "DROP TABLE eligible_generation;"
    "DROP INDEX events_pubkey;"
    "CREATE INDEX events_pubkey ON events(pubkey, created_at);"
    "CREATE INDEX events_pubkey_kind"
    "  ON events(pubkey, kind, created_at);"
    "CREATE TABLE tags_v1 ("
    "  name TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  event INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,"
    "  PRIMARY KEY (name, value, created_at, event)"
    ") WITHOUT ROWID;"
    "INSERT INTO tags_v1 SELECT letter,"
    "  CASE typeof(value) WHEN 'blob' THEN lower(hex(value))"
    "  ELSE value END, created_at, event FROM tags"
    " WHERE cases & " DB_TAG_LOWER_SQL " UNION ALL SELECT upper(letter),"
    "  CASE typeof(value) WHEN 'blob' THEN lower(hex(value))"
    "  ELSE value END, created_at, event FROM tags"
    " WHERE cases & " DB_TAG_UPPER_SQL ";"
    "DROP TABLE tags;"
    "ALTER TABLE tags_v1 RENAME TO tags;"
    "CREATE INDEX tags_event ON tags(event);"
    "PRAGMA user_version = 3;"
    "COMMIT;";

/*
 * A migration reports progress on the readiness descriptor (ready.h), so
 * that graspd waits for a long one instead of stopping relayd as silent:
 * a schema-3 store of 300,000 tag rows, with a progress line allowed
 * every millisecond, writes some while it migrates.
 */
static void
migration_reports_progress(void)
{
	struct store *s = fresh();
	sqlite3	     *db;
	char	      path[128], env[32], buf[65536];
	ssize_t	      n;
	size_t	      got = 0, lines = 0;
	const char   *p;
	int	      fd[2];

	T_ASSERT(s != NULL);
	snprintf(path, sizeof(path), "%s",
	    sqlite3_db_filename(store_sqlite(s), "main"));
	store_close(s);
	T_ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
	T_ASSERT(sqlite3_exec(db,
		     "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1"
		     " FROM c WHERE i < 300000) INSERT INTO tags"
		     " (letter, value, created_at, cases, event)"
		     " SELECT 'e', printf('v%07d', i), i, 1, i FROM c",
		     NULL, NULL, NULL) == SQLITE_OK);
	T_ASSERT(sqlite3_exec(db, schema_3_sql, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);

	T_ASSERT(pipe2(fd, O_CLOEXEC | O_NONBLOCK) == 0);
	snprintf(env, sizeof(env), "%d", fd[1]);
	setenv(READY_ENV, env, 1);
	ready_progress_every(0.001);
	T_CHECK(db_open(path, 0, &db, err, sizeof(err)) == 0);
	ready_progress_every(READY_EXTEND_EVERY);
	unsetenv(READY_ENV);
	close(fd[1]);
	while (got < sizeof(buf) - 1 &&
	    (n = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd[0]);
	for (p = buf; (p = strstr(p, READY_EXTEND)) != NULL; p++)
		lines++;
	printf("# %zu progress lines\n", lines);
	T_CHECK(lines >= 1);
	T_CHECK(strstr(buf, READY_MSG) == NULL);
	T_CHECK(sql_int(db, "SELECT count(*) FROM tags") == 300000);
	db_close(db);
}

/*
 * Schema steps 4, 5 and 9 (db.c): a database of schema 3 (tags_event, a
 * foreign key that cascaded deletions to the tag rows, and tag rows keyed
 * by name and hex text) opens, migrates and keeps every event and tag
 * row, a value under both cases of a name in one row; afterwards
 * replacing and deleting events still removes exactly their tag rows.
 */
static void
schema_3_database_migrates_and_keeps_its_events(void)
{
	struct store *s = fresh();
	struct event *prof = ev_new(sk1, 100, 0, "[[\"t\",\"old\"]]", "p1");
	struct event *prof2 = ev_new(sk1, 200, 0, "[[\"t\",\"new\"]]", "p2");
	struct event *note = ev_new(sk1, 110, 1,
	    "[[\"t\",\"x\"],[\"p\",\"ab\"],[\"t\",\"y\"],[\"subject\",\"s\"]]",
	    "n");
	struct event *ann =
	    ev_new(sk2, 120, 30617, "[[\"d\",\"repo\"],[\"t\",\"x\"]]", "a");
	struct event *keep = ev_new(sk3, 130, 1, "[[\"t\",\"x\"]]", "k");
	struct event *cmt = NULL, *del = NULL;
	sqlite3	     *db;
	char path[128], coord[128], q[512], upper[EVENT_ID_HEX_LEN + 1];

	T_ASSERT(s != NULL && prof && prof2 && note && ann && keep);
	/* A NIP-22 comment on keep, and a value of uppercase hex digits. */
	upper_hex(keep->id_hex, upper);
	snprintf(q, sizeof(q),
	    "[[\"E\",\"%s\"],[\"e\",\"%s\"],[\"P\",\"%s\"],"
	    "[\"p\",\"%s\"],[\"x\",\"%s\"]]",
	    keep->id_hex, keep->id_hex, keep->pubkey_hex, keep->pubkey_hex,
	    upper);
	cmt = ev_new(sk1, 140, 1111, q, "c");
	snprintf(path, sizeof(path), "%s",
	    sqlite3_db_filename(store_sqlite(s), "main"));
	T_CHECK(store_put(s, prof, NULL) == STORE_OK);
	T_CHECK(store_put(s, note, NULL) == STORE_OK);
	T_CHECK(store_put(s, ann, NULL) == STORE_OK);
	T_CHECK(store_put(s, keep, NULL) == STORE_OK);
	T_CHECK(store_put(s, cmt, NULL) == STORE_OK);
	store_close(s);

	/* Back to schema 3, as relayd before step 4 left it. */
	T_ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
	T_ASSERT(sqlite3_exec(db, schema_3_sql, NULL, NULL, NULL) == SQLITE_OK);
	T_CHECK(sql_int(db,
		    "SELECT count(*) FROM pragma_foreign_key_list("
		    "'tags')") == 1);
	T_CHECK(
	    sql_int(db,
		"SELECT count(*) FROM sqlite_schema"
		" WHERE name IN ('tags_event', 'events_pubkey_kind')") == 2);
	T_CHECK(sql_int(db, "PRAGMA user_version") == 3);
	sqlite3_close(db);

	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	db = store_sqlite(s);
	T_CHECK(sql_int(db, "PRAGMA user_version") == db_schema_version());
	T_CHECK(sql_int(db,
		    "SELECT count(*) FROM pragma_foreign_key_list("
		    "'tags')") == 0);
	T_CHECK(
	    sql_int(db,
		"SELECT count(*) FROM sqlite_schema"
		" WHERE name IN ('tags_event', 'events_pubkey_kind')") == 0);
	/* One index by author: newest first, with the kind. */
	T_CHECK(
	    sql_int(db,
		"SELECT group_concat(name) = 'pubkey,created_at,"
		"kind' FROM (SELECT name FROM pragma_index_info('events_pubkey')"
		" ORDER BY seqno)") == 1);
	T_CHECK(sql_int(db,
		    "SELECT count(*) FROM pragma_integrity_check"
		    " WHERE integrity_check = 'ok'") == 1);
	T_CHECK(store_count(s) == 5);
	/* t old, t x, p ab, t y, d repo, t x, t x; Ee Pp x. */
	T_CHECK(sql_int(db, "SELECT count(*) FROM tags") == 10);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 3);
	/*
	 * Step 5: ids and keys as their 32 bytes; a value of uppercase
	 * digits stays text and is found as written.  Step 9: the case out
	 * of the key, E and e of one value one row with both cases.
	 */
	T_CHECK(sql_int(db,
		    "SELECT group_concat(name) = 'letter,value,created_at,"
		    "event' FROM (SELECT name FROM"
		    " pragma_index_info('sqlite_autoindex_tags_1')"
		    " ORDER BY seqno)") == 1);
	T_CHECK(sql_int(db,
		    "SELECT count(*) FROM tags WHERE typeof(value) = 'blob'"
		    " AND length(value) = 32") == 2);
	T_CHECK(sql_int(db,
		    "SELECT group_concat(cases) FROM tags WHERE letter = 'e'"
		    " AND value = (SELECT id FROM events WHERE kind = 1"
		    " AND created_at = 130)") == 3);
	T_CHECK(count_tag(s, 'e', keep->id_hex) == 1);
	snprintf(q, sizeof(q), "{\"#E\":[\"%s\"],\"#p\":[\"%s\"]}",
	    keep->id_hex, keep->pubkey_hex);
	T_CHECK(count_of(s, q) == 1);
	T_CHECK(count_tag(s, 'P', keep->pubkey_hex) == 1);
	T_CHECK(count_tag(s, 'x', upper) == 1);
	T_CHECK(count_tag(s, 'x', keep->id_hex) == 0);
	/* By author, and by author and kind, through the new index. */
	snprintf(q, sizeof(q), "{\"authors\":[\"%s\"]}", note->pubkey_hex);
	T_CHECK(count_of(s, q) == 3);
	snprintf(q, sizeof(q), "{\"authors\":[\"%s\"],\"kinds\":[1,3]}",
	    note->pubkey_hex);
	T_CHECK(count_of(s, q) == 1);
	/* Replaceable and addressable kinds come from events_address. */
	snprintf(q, sizeof(q), "{\"authors\":[\"%s\"],\"kinds\":[0,1]}",
	    note->pubkey_hex);
	T_CHECK(count_of(s, q) == 2);
	snprintf(q, sizeof(q),
	    "{\"authors\":[\"%s\",\"%s\"],"
	    "\"kinds\":[30617]}",
	    note->pubkey_hex, ann->pubkey_hex);
	T_CHECK(count_of(s, q) == 1);

	/* The replaced version's rows go with it, and only those. */
	T_CHECK(store_put(s, prof2, NULL) == STORE_OK);
	T_CHECK(
	    sql_int(db, "SELECT count(*) FROM tags WHERE value = 'old'") == 0);
	T_CHECK(count_of(s, "{\"#t\":[\"new\"]}") == 1);
	/* So do those of events deleted by id and by address (NIP-09). */
	snprintf(coord, sizeof(coord), "30617:%s:repo", ann->pubkey_hex);
	T_ASSERT((del = deletion(sk1, 300, note->id_hex, NULL, NULL)) != NULL);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	event_destroy(del);
	T_ASSERT((del = deletion(sk2, 300, NULL, NULL, coord)) != NULL);
	T_CHECK(store_put(s, del, NULL) == STORE_OK);
	T_CHECK(store_has_id(s, ann->id) == 0);
	/* Left: t new, t x of keep, cmt's three, the deletions' k e, k a. */
	T_CHECK(sql_int(db, "SELECT count(*) FROM tags") == 9);
	T_CHECK(sql_int(db,
		    "SELECT count(*) FROM tags t WHERE NOT EXISTS"
		    " (SELECT 1 FROM events e WHERE e.seq = t.event)") == 0);
	T_CHECK(count_of(s, "{\"#t\":[\"x\"]}") == 1);
	store_close(s);

	/* Opening again migrates nothing more. */
	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	T_CHECK(store_count(s) == 5);
	store_close(s);
	event_destroy(cmt);
	event_destroy(del);
	event_destroy(prof);
	event_destroy(prof2);
	event_destroy(note);
	event_destroy(ann);
	event_destroy(keep);
}

static const struct t_case cases[] = {
	T_CASE(db_open_creates_parents_sets_pragmas_and_migrates_once),
	T_CASE(put_stores_once_then_reports_duplicate),
	T_CASE(ids_come_in_chunks_and_reach_the_filter),
	T_CASE(has_ids_answers_in_order_in_one_read),
	T_CASE(put_refuses_ephemeral_kinds),
	T_CASE(replaceable_newer_wins_older_refused),
	T_CASE(replaceable_tie_keeps_lower_id_in_both_orders),
	T_CASE(addressable_kept_per_d),
	T_CASE(deletion_by_e_removes_own_event_and_blocks_it),
	T_CASE(deletion_naming_another_authors_event_is_refused_whole),
	T_CASE(deletion_before_arrival_blocks_only_the_same_author),
	T_CASE(deleting_a_deletion_has_no_effect),
	T_CASE(deletion_by_a_removes_versions_up_to_its_time),
	T_CASE(deletion_by_a_of_another_pubkey_is_refused),
	T_CASE(expired_events_hidden_on_read_but_in_feed),
	T_CASE(limit_default_and_max_clamp),
	T_CASE(ordering_newest_first_ties_by_lowest_id),
	T_CASE(query_dedupes_across_filters_and_stops_on_request),
	T_CASE(query_results_equal_filter_match),
	T_CASE(paused_query_ignores_changes_meanwhile),
	T_CASE(long_tie_runs_keep_nip01_order_at_any_limit),
	T_CASE(since_seq_reads_feed_in_order),
	T_CASE(tag_exists_checks_first_values_of_named_letters),
	T_CASE(transactions_batch_and_roll_back),
	T_CASE(put_new_has_the_effects_of_put_inside_a_transaction),
	T_CASE(put_new_of_a_stored_copy_is_a_duplicate),
	T_CASE(a_failed_put_never_commits_half_an_event),
	T_CASE(readonly_store_reads_what_writer_committed),
	T_CASE(result_messages_follow_nip01_prefixes),
	T_CASE(query_items_ascending_without_limit_or_expired),
	T_CASE(tag_values_keep_their_case_and_their_digits),
	T_CASE(one_tag_row_holds_both_cases_of_a_name),
	T_CASE(many_values_under_both_cases_far_apart),
	T_CASE(migration_reports_progress),
	T_CASE(schema_3_database_migrates_and_keeps_its_events),
};

T_MAIN_FIXTURE(cases, &tdir_log_fixture, &tp, 0)
