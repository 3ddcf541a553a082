/*
 * inventory_test.c: repositories, roots, descendants with root
 * provenance, participants and eligible identity authors, as derived from
 * accepted events; and the start-up rebuild from a real store
 * (inv_rebuild(), feed_scan_tags(), feed_scan_kinds()) against feeding
 * every stored event, parsed in full, to inv_add().
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "buf.h"
#include "config.h"
#include "event.h"
#include "feed.h"
#include "hmap.h"
#include "inventory.h"
#include "invdb.h"
#include "log.h"
#include "store.h"
#include "t.h"
#include "tdir.h"
#include "tunit_rng.h"
#include "mem.h"
#include "tunit_strv.h"
#include "db.h"
#include "tstore.h"
#include "tuser.h"

/* The fill byte of this test's users' keys (tuser.h). */
#define KEYS 0x44

static struct config cfg;

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags)
{
	return tuser_event(KEYS, who, at, kind, tags, "");
}

static void
hexof(int who, char out[65])
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];

	tuser_sk(KEYS, who, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, 32, out);
}

static void
feed(struct inventory *iv, struct event *e)
{
	inv_add(iv, e);
	event_destroy(e);
}

/* An event by who at at of kind, tags printed from fmt, added to iv. */
static struct event *add(struct inventory *iv, int who, int64_t at,
    uint32_t kind, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static struct event *
add(struct inventory *iv, int who, int64_t at, uint32_t kind, const char *fmt,
    ...)
{
	struct event *e;
	char	      tags[1024];
	va_list	      ap;

	va_start(ap, fmt);
	vsnprintf(tags, sizeof(tags), fmt, ap);
	va_end(ap);
	e = ev(who, at, kind, tags);
	inv_add(iv, e);
	return e;
}

/* Likewise, for an event that is not kept. */
#define feedf(iv, ...) event_destroy(add((iv), __VA_ARGS__))

static void
coord(int who, const char *d, char *out, size_t len)
{
	char h[65];

	hexof(who, h);
	snprintf(out, len, "30617:%s:%s", h, d);
}

/* Author 1 announces repository d at 100; its coordinate goes in c. */
static void
announce(struct inventory *iv, const char *d, char *c, size_t len)
{
	coord(1, d, c, len);
	feedf(iv, 1, 100, 30617, "[[\"d\",\"%s\"]]", d);
}

static void
test_announcement_relays_are_canonical_and_exclude_us(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct inv_repo	 *r;
	char		  c[200], m[65];

	hexof(2, m);
	feedf(iv, 1, 100, 30617,
	    "[[\"d\",\"repo\"],[\"relays\","
	    "\"wss://Relay.Example.COM/\",\"ws://grasp.example.com\","
	    "\"wss://127.0.0.1\",\"not a url\"],[\"clone\",\"https://"
	    "git.example.org:443/npub1x/repo.git\",\"http://grasp.example.com/"
	    "npub1x/repo.git\",\"git@ssh.example:x\"],[\"maintainers\",\"%s\","
	    "\"zz\"]]",
	    m);
	coord(1, "repo", c, sizeof(c));
	T_ASSERT((r = inv_repo(iv, c)) != NULL);
	T_EQ_INT(r->ir_level, INV_FULL);
	T_EQ_INT(r->ir_nrelays, 2);
	T_EQ_STR(r->ir_relays[0], "wss://relay.example.com/");
	T_EQ_STR(r->ir_relays[1], "wss://git.example.org/");
	T_EQ_INT(r->ir_nmaint, 1);
	/* An older announcement changes nothing; a newer one replaces. */
	feed(iv, ev(1, 50, 30617, "[[\"d\",\"repo\"]]"));
	T_EQ_INT(inv_repo(iv, c)->ir_nrelays, 2);
	feed(iv,
	    ev(1, 200, 30617,
		"[[\"d\",\"repo\"],[\"relays\","
		"\"wss://other.example.net\"]]"));
	r = inv_repo(iv, c);
	T_EQ_INT(r->ir_nrelays, 1);
	T_EQ_INT(r->ir_nmaint, 0);
	inv_free(iv);
}

static void
test_threads_carry_root_provenance_and_participants(void)
{
	struct inventory  *iv = inv_new(&cfg);
	struct event	  *issue, *comment, *react, *other;
	struct inv_root	  *rt;
	struct inv_author *a;
	char		   c[200];
	uint8_t		   sk[SECKEY_LEN], pk[PUBKEY_LEN];

	announce(iv, "r", c, sizeof(c));
	issue = add(iv, 3, 101, 1621, "[[\"a\",\"%s\"]]", c);
	comment = add(iv, 4, 102, 1111, "[[\"E\",\"%s\"],[\"K\",\"1621\"]]",
	    issue->id_hex);
	/* A reaction that names only its immediate parent. */
	react = add(iv, 5, 103, 7, "[[\"e\",\"%s\"]]", comment->id_hex);
	/* Unrelated thread: its author maps to nothing here. */
	other = ev(6, 104, 1,
	    "[[\"e\",\"000000000000000000000000000000000000"
	    "0000000000000000000000000000\"]]");
	inv_add(iv, other);

	T_ASSERT((rt = inv_root(iv, issue->id)) != NULL);
	/* A descendant's id, or one never seen, names no root. */
	T_CHECK(inv_root(iv, react->id) == NULL);
	T_CHECK(inv_root(iv, other->id) == NULL);
	T_CHECK(rt->rt_repo == inv_repo(iv, c));
	T_EQ_INT(rt->rt_ndesc, 2);
	T_CHECK(memcmp(inv_desc_id(iv, rt, 1), react->id, 32) == 0);
	a = inv_author(iv, react->pubkey);
	T_ASSERT(a != NULL);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == rt);
	T_CHECK(inv_author(iv, other->pubkey) == NULL);

	T_CHECK(inv_eligible(iv, issue->pubkey));
	T_CHECK(inv_eligible(iv, comment->pubkey));
	T_CHECK(inv_eligible(iv, react->pubkey));
	tuser_sk(KEYS, 1, sk);
	event_pubkey_of(sk, pk);
	T_CHECK(inv_eligible(iv, pk)); /* owner */
	T_CHECK(!inv_eligible(iv, other->pubkey));
	event_destroy(issue);
	event_destroy(comment);
	event_destroy(react);
	event_destroy(other);
	inv_free(iv);
}

/*
 * An author in thousands of threads: each thread is listed once however
 * often the author speaks in it (past INV_AUTHOR_SCAN roots the list is
 * checked through a set, not one by one).
 */
static void
test_a_prolific_author_lists_each_thread_once(void)
{
	struct inventory  *iv = inv_new(&cfg);
	struct inv_author *a;
	struct event	  *issue, *reply;
	uint8_t		   pk[PUBKEY_LEN];
	char		   c[200], tags[512];
	size_t		   i, j, dup = 0;
	int		   n, k;

	announce(iv, "busy", c, sizeof(c));
	for (n = 0; n < 3000; n++) {
		issue =
		    add(iv, 2 + n % 50, 200 + n, 1621, "[[\"a\",\"%s\"]]", c);
		/* Author 99 answers each issue twice, the second time also
		 * after others have spoken in other threads. */
		for (k = 0; k < 2; k++) {
			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],"
			    "[\"K\",\"1621\"],[\"t\",\"%d\"]]",
			    issue->id_hex, k);
			reply = ev(99, 200 + n, 1111, tags);
			memcpy(pk, reply->pubkey, 32);
			feed(iv, reply);
		}
		event_destroy(issue);
	}
	T_ASSERT((a = inv_author(iv, pk)) != NULL);
	T_EQ_INT((int)a->au_nroots, 3000);
	/* Spot-check the list for repeats (the whole would be quadratic). */
	for (i = 0; i < a->au_nroots; i += 97)
		for (j = i + 1; j < a->au_nroots; j++)
			dup += a->au_roots[i] == a->au_roots[j];
	T_EQ_INT((int)dup, 0);
	inv_free(iv);
}

static void
test_roots_wait_for_their_repository_and_stateonly_is_inert(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct event	 *issue, *ann;
	char		  c[200];
	struct inv_repo	 *r;

	coord(1, "late", c, sizeof(c));
	issue = add(iv, 3, 101, 1621, "[[\"a\",\"%s\"]]", c);
	T_CHECK(inv_root(iv, issue->id)->rt_repo == NULL);
	T_CHECK(!inv_eligible(iv, issue->pubkey));

	ann = ev(1, 100, 30617, "[[\"d\",\"late\"]]");
	inv_add_stateonly(iv, ann);
	r = inv_repo(iv, c);
	T_ASSERT(r != NULL);
	T_EQ_INT(r->ir_level, INV_STATE_ONLY);
	T_CHECK(inv_root(iv, issue->id)->rt_repo == r);
	T_CHECK(!inv_eligible(iv, issue->pubkey));
	T_CHECK(!inv_eligible(iv, ann->pubkey));
	/* Promotion admits the root without re-feeding it. */
	inv_add(iv, ann);
	T_EQ_INT(r->ir_level, INV_FULL);
	T_CHECK(inv_eligible(iv, issue->pubkey));
	/* Never downgraded. */
	inv_add_stateonly(iv, ann);
	T_EQ_INT(r->ir_level, INV_FULL);
	event_destroy(issue);
	event_destroy(ann);
	inv_free(iv);
}

static void
test_descendant_chains_are_bounded(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct event	 *root, *prev, *e;
	char		  c[200];
	int		  i;

	announce(iv, "deep", c, sizeof(c));
	root = add(iv, 2, 100, 1621, "[[\"a\",\"%s\"]]", c);
	prev = root;
	for (i = 0; i < INV_MAX_DEPTH + 5; i++) {
		e = add(iv, 10 + i, 200 + i, 1, "[[\"e\",\"%s\"]]",
		    prev->id_hex);
		if (prev != root)
			event_destroy(prev);
		prev = e;
	}
	event_destroy(prev);
	T_EQ_INT(inv_root(iv, root->id)->rt_ndesc, INV_MAX_DEPTH);
	event_destroy(root);
	inv_free(iv);
}

static void
test_addressable_descendants_and_their_addresses(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct event	 *root, *art, *reply;
	struct inv_root	 *rt;
	char		  c[200], h[65];

	announce(iv, "adr", c, sizeof(c));
	root = add(iv, 2, 100, 1618, "[[\"a\",\"%s\"]]", c);
	art = add(iv, 3, 101, 30023, "[[\"d\",\"note\"],[\"e\",\"%s\"]]",
	    root->id_hex);
	hexof(3, h);
	reply = add(iv, 4, 102, 1, "[[\"a\",\"30023:%s:note\"]]", h);
	rt = inv_root(iv, root->id);
	T_EQ_INT(rt->rt_ndesc, 2);
	T_EQ_INT(rt->rt_naddrs, 1);
	T_CHECK(strstr(rt->rt_addrs[0], ":note") != NULL);
	T_CHECK(inv_eligible(iv, reply->pubkey));
	event_destroy(root);
	event_destroy(art);
	event_destroy(reply);
	inv_free(iv);
}

static void
test_deletions_by_the_author_only(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct event	 *root;
	char		  c[200];

	announce(iv, "del", c, sizeof(c));
	root = add(iv, 2, 100, 1621, "[[\"a\",\"%s\"]]", c);
	/* Not the author. */
	feedf(iv, 9, 101, 5, "[[\"e\",\"%s\"]]", root->id_hex);
	T_EQ_INT(inv_repo(iv, c)->ir_nroots, 1);
	feedf(iv, 2, 102, 5, "[[\"e\",\"%s\"]]", root->id_hex);
	T_EQ_INT(inv_repo(iv, c)->ir_nroots, 0);
	T_CHECK(!inv_eligible(iv, root->pubkey));
	/* A withdrawal older than the announcement leaves it (NIP-09: the
	 * versions up to the deletion's time; the store keeps it too). */
	feedf(iv, 1, 99, 5, "[[\"a\",\"%s\"]]", c);
	T_CHECK(inv_repo(iv, c) != NULL);
	/* The owner withdraws the announcement. */
	feedf(iv, 1, 103, 5, "[[\"a\",\"%s\"]]", c);
	T_CHECK(inv_repo(iv, c) == NULL);
	event_destroy(root);
	inv_free(iv);
}

/*
 * A descendant its author deletes (NIP-09): the thread keeps its id, but
 * an author whose last event in a thread it was is no longer a
 * participant of that thread, and no longer eligible without another.
 * Someone else's deletion changes nothing; an author with a second event
 * in the thread, or in another thread, stays.
 */
static void
test_deleted_descendants_take_their_authors_out(void)
{
	struct inventory  *iv = inv_new(&cfg);
	struct event	  *i1, *i2, *r1, *r2, *r3, *x;
	struct inv_author *a;
	char		   c[200], tags[512];
	uint64_t	   gen;

	announce(iv, "dd", c, sizeof(c));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	i1 = ev(2, 101, 1621, tags);
	i2 = ev(3, 101, 1621, tags);
	inv_add(iv, i1);
	inv_add(iv, i2);
	/* Author 4: one reply to i1.  Author 5: two replies to i1 and one
	 * to i2.  Author 6 replies to author 4's reply. */
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"e\",\"%s\"]]",
	    i1->id_hex, i1->id_hex);
	r1 = ev(4, 102, 1111, tags);
	r2 = ev(5, 103, 1111, tags);
	r3 = ev(5, 104, 1111, tags);
	inv_add(iv, r1);
	inv_add(iv, r2);
	inv_add(iv, r3);
	feedf(iv, 5, 105, 1111, "[[\"E\",\"%s\"],[\"e\",\"%s\"]]", i2->id_hex,
	    i2->id_hex);
	x = add(iv, 6, 106, 1111, "[[\"E\",\"%s\"],[\"e\",\"%s\"]]", i1->id_hex,
	    r1->id_hex);
	T_CHECK(inv_eligible(iv, r1->pubkey));
	T_EQ_INT(inv_author(iv, r2->pubkey)->au_nroots, 2);

	/* Someone else cannot take author 4 out. */
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", r1->id_hex);
	gen = iv->iv_generation;
	feed(iv, ev(9, 110, 5, tags));
	T_CHECK(inv_eligible(iv, r1->pubkey));
	T_EQ_INT(iv->iv_generation, gen);
	/* Author 4's only event: out of i1, no longer eligible. */
	feed(iv, ev(4, 111, 5, tags));
	a = inv_author(iv, r1->pubkey);
	T_EQ_INT(a != NULL ? a->au_nroots : 0, 0);
	T_CHECK(!inv_eligible(iv, r1->pubkey));
	T_CHECK(iv->iv_generation > gen);
	/* The reply to it still descends from i1. */
	T_EQ_INT(inv_author(iv, x->pubkey)->au_nroots, 1);
	T_CHECK(inv_eligible(iv, x->pubkey));
	/* Again: nothing more happens. */
	gen = iv->iv_generation;
	feed(iv, ev(4, 112, 5, tags));
	T_EQ_INT(iv->iv_generation, gen);
	/* Author 5 deletes one of two replies to i1: still in i1 and i2;
	 * then the other: still in i2 only. */
	feedf(iv, 5, 113, 5, "[[\"e\",\"%s\"]]", r2->id_hex);
	a = inv_author(iv, r2->pubkey);
	T_EQ_INT(a->au_nroots, 2);
	feedf(iv, 5, 114, 5, "[[\"e\",\"%s\"]]", r3->id_hex);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == inv_root(iv, i2->id));
	T_CHECK(inv_eligible(iv, r2->pubkey));
	/* The root's author stays a participant by the root itself. */
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"e\",\"%s\"]]",
	    i1->id_hex, i1->id_hex);
	event_destroy(r1);
	r1 = ev(2, 115, 1111, tags);
	inv_add(iv, r1);
	feedf(iv, 2, 116, 5, "[[\"e\",\"%s\"]]", r1->id_hex);
	a = inv_author(iv, i1->pubkey);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == inv_root(iv, i1->id));
	event_destroy(i2);
	event_destroy(r1);
	event_destroy(r2);
	event_destroy(r3);
	event_destroy(x);
	event_destroy(i1);
	inv_free(iv);
}

static void
test_provenance_through_quotes_and_address_tags(void)
{
	struct inventory  *iv = inv_new(&cfg);
	struct event	  *r1, *r2, *quote, *art, *viaA, *viaQ, *both;
	struct inv_author *a;
	char		   c[200], h[65];

	announce(iv, "q", c, sizeof(c));
	r1 = add(iv, 2, 101, 1621, "[[\"a\",\"%s\"]]", c);
	r2 = add(iv, 3, 101, 1617, "[[\"a\",\"%s\"]]", c);
	/* A quote by id ("q"), then an article under r2 ... */
	quote = add(iv, 4, 102, 1, "[[\"q\",\"%s\"]]", r1->id_hex);
	art = add(iv, 5, 103, 30023, "[[\"d\",\"art\"],[\"E\",\"%s\"]]",
	    r2->id_hex);
	/* ... reached only through its address, by "A" and by "q". */
	hexof(5, h);
	viaA = add(iv, 6, 104, 1111, "[[\"A\",\"30023:%s:art\"]]", h);
	viaQ = add(iv, 7, 105, 1, "[[\"q\",\"30023:%s:art\"]]", h);
	/* One event in both threads. */
	both = add(iv, 8, 106, 7, "[[\"e\",\"%s\"],[\"e\",\"%s\"]]",
	    quote->id_hex, viaQ->id_hex);

	T_EQ_INT(inv_root(iv, r1->id)->rt_ndesc, 2); /* quote, both */
	T_EQ_INT(inv_root(iv, r2->id)->rt_ndesc, 4); /* art, A, q, both */
	T_EQ_INT(inv_root(iv, r2->id)->rt_naddrs, 1);
	/* Each participant is tied to the threads it occurs in only. */
	a = inv_author(iv, quote->pubkey);
	T_ASSERT(a != NULL);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == inv_root(iv, r1->id));
	a = inv_author(iv, viaQ->pubkey);
	T_ASSERT(a != NULL);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == inv_root(iv, r2->id));
	T_EQ_INT(inv_author(iv, both->pubkey)->au_nroots, 2);
	T_CHECK(inv_eligible(iv, viaA->pubkey));
	T_CHECK(inv_eligible(iv, viaQ->pubkey));
	T_CHECK(inv_eligible(iv, art->pubkey));
	event_destroy(r1);
	event_destroy(r2);
	event_destroy(quote);
	event_destroy(art);
	event_destroy(viaA);
	event_destroy(viaQ);
	event_destroy(both);
	inv_free(iv);
}

static void
collect(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	struct hmap *m = arg;

	/* A second call for one author would count twice. */
	if (hmap_put(m, pk, 32, (void *)1) != NULL)
		hmap_put(m, "dup", 3, (void *)1);
}

static int
pk_of(int who, uint8_t pk[PUBKEY_LEN])
{
	uint8_t sk[SECKEY_LEN];

	tuser_sk(KEYS, who, sk);
	return event_pubkey_of(sk, pk);
}

static void
test_maintainers_of_full_repositories_only_and_each_author_once(void)
{
	struct inventory *iv = inv_new(&cfg);
	struct hmap	  got = HMAP_INIT;
	struct event	 *held, *root, *stray;
	char		  c[200], tags[512], m2[65], m3[65];
	uint8_t		  pk[PUBKEY_LEN];

	hexof(2, m2);
	hexof(3, m3);
	/* Owner 1 names maintainer 2 and lists itself too. */
	feedf(iv, 1, 100, 30617,
	    "[[\"d\",\"full\"],[\"maintainers\","
	    "\"%s\"]]",
	    m2);
	/* A StateOnly repository (held in purgatory) naming 3. */
	snprintf(tags, sizeof(tags),
	    "[[\"d\",\"held\"],[\"maintainers\","
	    "\"%s\"]]",
	    m3);
	held = ev(4, 100, 30617, tags);
	inv_add_stateonly(iv, held);
	/* The owner also opens an issue; 5 writes only elsewhere. */
	coord(1, "full", c, sizeof(c));
	root = add(iv, 1, 101, 1621, "[[\"a\",\"%s\"]]", c);
	stray = ev(5, 102, 1, "[[\"t\",\"unrelated\"]]");
	inv_add(iv, stray);

	T_ASSERT(pk_of(2, pk) == 0);
	T_CHECK(inv_eligible(iv, pk));
	T_ASSERT(pk_of(3, pk) == 0);
	T_CHECK(!inv_eligible(iv, pk));
	T_CHECK(!inv_eligible(iv, held->pubkey));
	T_CHECK(!inv_eligible(iv, stray->pubkey));
	T_EQ_INT(inv_eligible_each(iv, collect, &got), 2);
	T_EQ_INT(got.hm_n, 2);
	T_CHECK(hmap_get(&got, root->pubkey, 32) != NULL);
	T_ASSERT(pk_of(2, pk) == 0);
	T_CHECK(hmap_get(&got, pk, 32) != NULL);
	hmap_free(&got);

	/* Promotion makes the held repository's people eligible. */
	inv_add(iv, held);
	T_CHECK(inv_eligible(iv, held->pubkey));
	T_EQ_INT(inv_eligible_each(iv, collect, &got), 4);
	T_EQ_INT(got.hm_n, 4);
	hmap_free(&got);
	event_destroy(held);
	event_destroy(root);
	event_destroy(stray);
	inv_free(iv);
}


/* ------------------------------------------------------------------ */
/* The rebuild from a store.                                           */

static char		  tmpdir[64];
static struct store	 *st;
static struct tstore_prog tsp = { { tmpdir, sizeof(tmpdir), "inventory_test" },
	&st };
static uint64_t		  rng = 2463534242u;

static uint32_t
rnd(uint32_t n)
{
	return tunit_rng_below(&rng, n);
}

/* Author n's pubkey: any 32 bytes do, nothing on this path verifies. */
static void
pk_hex(int n, char out[65])
{
	uint8_t pk[PUBKEY_LEN];

	memset(pk, 0x5c, sizeof(pk));
	pk[31] = (uint8_t)n;
	hex_encode(pk, 32, out);
}

/*
 * An unsigned event with its real id (the store checks neither), in
 * relayd's canonical text; content is JSON string text.
 */
static struct event *
mk(int who, int64_t at, uint32_t kind, const char *tags, const char *content)
{
	char pk[PUBKEY_HEX_LEN + 1];

	pk_hex(who, pk);
	return tstore_unsigned_event(pk, at, kind, tags, content);
}

/* Stores e (kept if keep, else freed); its id in id_hex if not NULL. */
static enum store_result
put(struct event *e, char *id_hex)
{
	enum store_result r = store_put(st, e, NULL);

	if (id_hex != NULL)
		memcpy(id_hex, e->id_hex, 65);
	event_destroy(e);
	return r;
}

/* Ids of what was stored, for parents chosen at random. */
struct pool {
	char   ids[4096][65];
	size_t n;
	char   addrs[64][200];
	size_t naddrs;
};

static const char *
any_id(const struct pool *pl)
{
	return pl->ids[rnd((uint32_t)pl->n)];
}

/*
 * A store with what the inventory meets in the field: announcements with
 * relays (some refused, one ourselves), clone URLs and maintainers, one
 * replaced, one deleted and announced again, one never announced; roots
 * of the three kinds, some naming two repositories, some deleted by their
 * author and one "deleted" by someone else; replies, reactions, quotes
 * through e/E/q ids and a/A/q addresses of addressable descendants that
 * are themselves replaced; a reply stored before its parent; a chain
 * deeper than INV_MAX_DEPTH; a root with more than INV_MAX_DESCENDANTS;
 * tag strings with escapes and UTF-8.  The last seq in *last.
 */
static void
fill_store(struct pool *pl, char q_only[65], int64_t *last)
{
	char tags[2048], c[8][200], pk[PUBKEY_HEX_LEN + 1], m1[65], m2[65],
	    id[EVENT_ID_HEX_LEN + 1];
	char root[EVENT_ID_HEX_LEN + 1], parent[EVENT_ID_HEX_LEN + 1], late[65];
	struct event	     *held;
	int64_t		      at = 1700000000;
	size_t		      i, j, r;
	uint32_t	      k;
	static const uint32_t root_kinds[3] = { 1617, 1618, 1621 };

	T_ASSERT(store_begin(st) == 0);
	for (r = 0; r < 8; r++) {
		pk_hex((int)r, pk);
		snprintf(c[r], sizeof(c[r]), "30617:%s:repo%zu", pk, r);
	}
	for (r = 0; r < 6; r++) {
		pk_hex((int)r + 1, m1);
		pk_hex((int)r + 2, m2);
		snprintf(tags, sizeof(tags),
		    "[[\"d\",\"repo%zu\"],"
		    "[\"description\",\"line one\\nline \\\"two\\\"\"],"
		    "[\"relays\",\"wss://relay%zu.example.com\","
		    "\"wss://127.0.0.1\",\"wss://grasp.example.com\"],"
		    "[\"clone\",\"https://git%zu.example.org/r.git\"],"
		    "[\"maintainers\",\"%s\",\"%s\"],[\"maintainers\",\"%s\"]]",
		    r, r, r, m1, m2, pk);
		T_EQ_INT(put(mk((int)r, at++, 30617, tags, ""), NULL),
		    STORE_OK);
	}
	/* repo5 replaced; repo4 deleted, then announced again. */
	T_EQ_INT(put(mk(5, at++, 30617,
			 "[[\"d\",\"repo5\"],[\"relays\","
			 "\"wss://new.example.com\"]]",
			 ""),
		     NULL),
	    STORE_OK);
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c[4]);
	T_EQ_INT(put(mk(4, at++, 5, tags, ""), NULL), STORE_OK);
	/* Older than repo3's announcement: the store keeps it, and so
	 * does the inventory (NIP-09: versions up to its time only). */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c[3]);
	T_EQ_INT(put(mk(3, 1600000000, 5, tags, ""), NULL), STORE_OK);

	for (i = 0; i < 90; i++) {
		k = root_kinds[i % 3];
		r = rnd(8);
		if (i % 9 == 4) /* first names a repository */
			snprintf(tags, sizeof(tags),
			    "[[\"a\",\"%s\"],[\"a\","
			    "\"%s\"],[\"p\",\"x\"]]",
			    c[(r + 1) % 8], c[r]);
		else if (i % 9 == 7) /* an escape: parsed in full */
			snprintf(tags, sizeof(tags),
			    "[[\"subject\",\"tab\\t"
			    "\\u00e9 \\u2603\"],[\"a\",\"%s\"]]",
			    c[r]);
		else
			snprintf(tags, sizeof(tags),
			    "[[\"a\",\"%s\"],"
			    "[\"subject\",\"caf\xc3\xa9 \xe2\x98\x83\"]]",
			    c[r]);
		T_EQ_INT(put(mk((int)rnd(20), at++, k, tags, "a root\\n"),
			     pl->ids[pl->n]),
		    STORE_OK);
		pl->n++;
	}
	T_EQ_INT(put(mk(6, at++, 30617, "[[\"d\",\"repo4\"]]", ""), NULL),
	    STORE_OK); /* someone else's repo4 */
	T_EQ_INT(put(mk(4, at++, 30617,
			 "[[\"d\",\"repo4\"],[\"maintainers\","
			 "\"nothex\"]]",
			 ""),
		     NULL),
	    STORE_OK);

	for (i = 0; i < 1500; i++) {
		const char *p1 = any_id(pl), *p2 = any_id(pl);

		id[0] = '\0';
		switch (rnd(8)) {
		case 0: /* a reaction */
			snprintf(tags, sizeof(tags),
			    "[[\"e\",\"%s\"],[\"k\","
			    "\"1\"]]",
			    p1);
			T_EQ_INT(put(mk((int)rnd(30), at++, 7, tags, "+"), id),
			    STORE_OK);
			break;
		case 1: /* a quote by id only */
			snprintf(tags, sizeof(tags),
			    "[[\"q\",\"%s\","
			    "\"wss://r.example.com\",\"%s\"]]",
			    p1, p2);
			T_EQ_INT(put(mk((int)rnd(30), at++, 1, tags, "q"), id),
			    STORE_OK);
			if (q_only[0] == '\0')
				memcpy(q_only, id, 65);
			break;
		case 2: /* an addressable reply, replaced later */
			j = rnd(64);
			snprintf(tags, sizeof(tags),
			    "[[\"d\",\"art%zu\"],"
			    "[\"e\",\"%s\",\"\",\"reply\"]]",
			    j, p1);
			T_ASSERT(
			    put(mk((int)(j % 4), at++, 30023, tags, "article"),
				id) == STORE_OK);
			pk_hex((int)(j % 4), pk);
			snprintf(pl->addrs[j], sizeof(pl->addrs[j]),
			    "30023:%s:art%zu", pk, j);
			if (pl->naddrs <= j)
				pl->naddrs = j + 1;
			break;
		case 3: /* through an address */
			if (pl->naddrs == 0)
				break;
			j = rnd((uint32_t)pl->naddrs);
			if (pl->addrs[j][0] == '\0')
				break;
			snprintf(tags, sizeof(tags), "[[\"%s\",\"%s\"]]",
			    rnd(3) == 0 ? "a" :
				rnd(2)	? "A" :
					  "q",
			    pl->addrs[j]);
			T_EQ_INT(
			    put(mk((int)rnd(30), at++, 1111, tags, "c"), id),
			    STORE_OK);
			break;
		case 4: /* escapes and an unknown parent */
			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],[\"e\","
			    "\"%064d\"],[\"alt\",\"a \\\\ b \\\"c\\\"\"],"
			    "[\"p\",\"\"],[\"x\"]]",
			    p1, 7);
			T_EQ_INT(
			    put(mk((int)rnd(30), at++, 1111, tags, "x\\\\y"),
				id),
			    STORE_OK);
			break;
		case 5: /* a replaceable event answering a thread */
			snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", p1);
			T_ASSERT(put(mk((int)rnd(4), at++, 10030, tags, ""),
				     id) == STORE_OK);
			break;
		default: /* a NIP-22 comment */
			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],[\"K\","
			    "\"1621\"],[\"e\",\"%s\"],[\"k\",\"1111\"],"
			    "[\"p\",\"%s\"]]",
			    p2, p1, p2);
			T_EQ_INT(
			    put(mk((int)rnd(30), at++, 1111, tags, "comment"),
				id),
			    STORE_OK);
			break;
		}
		if (id[0] != '\0' && pl->n < 4096)
			memcpy(pl->ids[pl->n++], id, 65);
	}

	/* A reply stored before its parent attaches to nothing. */
	held = mk(9, at++, 1111, "[[\"k\",\"1\"]]", "");
	memcpy(late, held->id_hex, 65);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", late);
	T_EQ_INT(put(mk(9, at++, 1111, tags, "early"), NULL), STORE_OK);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", pl->ids[0]);
	T_EQ_INT(put(mk(9, held->created_at, 1111, tags, ""), NULL), STORE_OK);
	event_destroy(held);

	/* A chain past INV_MAX_DEPTH, and a root past its cap. */
	memcpy(parent, pl->ids[1], 65);
	for (i = 0; i < INV_MAX_DEPTH + 4; i++) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", parent);
		T_EQ_INT(put(mk(11, at++, 1111, tags, ""), parent), STORE_OK);
	}
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c[0]);
	T_EQ_INT(put(mk(12, at++, 1621, tags, ""), root), STORE_OK);
	for (i = 0; i < INV_MAX_DESCENDANTS + 20; i++) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", root);
		T_EQ_INT(put(mk((int)(i % 50), at++, 7, tags, "+"), NULL),
		    STORE_OK);
	}

	/* Deletions: roots by their authors, one by someone else. */
	for (i = 2; i < 90; i += 11) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", pl->ids[i]);
		for (j = 0; j < 20; j++)
			if (put(mk((int)j, at, 5, tags, ""), NULL) == STORE_OK)
				break;
		at++;
	}
	snprintf(tags, sizeof(tags), "[[\"e\",\"%064d\"],[\"a\",\"%s\"]]", 3,
	    c[7]);
	T_EQ_INT(put(mk(7, at++, 5, tags, ""), NULL), STORE_OK);
	T_ASSERT(store_commit(st) == 0);
	T_ASSERT(store_last_seq(st, last) == 0);
}

static void
take(void *arg, int64_t seq, const struct event *e)
{
	(void)seq;
	inv_add(arg, e);
}

static int
same_ids(const uint8_t (*a)[32], const uint8_t (*b)[32], size_t n)
{
	return n == 0 || memcmp(a, b, n * 32) == 0;
}

/* The same descendant ids, in the same order. */
static int
same_descs(const struct inventory *a, const struct inv_root *ra,
    const struct inventory *b, const struct inv_root *rb)
{
	size_t i;

	for (i = 0; i < ra->rt_ndesc; i++)
		if (memcmp(inv_desc_id(a, ra, i), inv_desc_id(b, rb, i), 32) !=
		    0)
			return 0;
	return 1;
}

static int
same_roots(struct inv_root **a, struct inv_root **b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp(a[i]->rt_id, b[i]->rt_id, 32) != 0)
			return 0;
	return 1;
}

static void
count_each(void *arg, const uint8_t pk[PUBKEY_LEN])
{
	struct hmap *m = arg;

	hmap_put(m, pk, 32, (void *)1);
}

/* Every repository, root and descendant alike. */
static void
compare_threads(const struct inventory *a, const struct inventory *b)
{
	struct inv_repo *ra, *rb;
	struct inv_root *ta, *tb;
	size_t		 it;

	T_EQ_INT(a->iv_repos.hm_n, b->iv_repos.hm_n);
	for (it = 0; (ra = inv_repo_next(a, &it)) != NULL;) {
		T_ASSERT((rb = inv_repo(b, ra->ir_coord)) != NULL);
		T_CHECK(memcmp(ra->ir_owner, rb->ir_owner, 32) == 0);
		T_EQ_STR(ra->ir_d, rb->ir_d);
		T_EQ_INT(ra->ir_created_at, rb->ir_created_at);
		T_EQ_INT(ra->ir_level, rb->ir_level);
		T_EQ_INT(ra->ir_refused, rb->ir_refused);
		T_CHECK(tunit_strv_same(ra->ir_relays, ra->ir_nrelays,
		    rb->ir_relays, rb->ir_nrelays));
		T_ASSERT(ra->ir_nmaint == rb->ir_nmaint);
		T_CHECK(same_ids(ra->ir_maint, rb->ir_maint, ra->ir_nmaint));
		T_ASSERT(ra->ir_nroots == rb->ir_nroots);
		T_CHECK(same_roots(ra->ir_roots, rb->ir_roots, ra->ir_nroots));
	}
	T_EQ_INT(a->iv_nroots, b->iv_nroots);
	for (it = 0; (ta = inv_root_next(a, &it)) != NULL;) {
		T_ASSERT((tb = inv_root(b, ta->rt_id)) != NULL);
		T_CHECK(memcmp(ta->rt_author, tb->rt_author, 32) == 0);
		T_EQ_INT(ta->rt_kind, tb->rt_kind);
		T_EQ_INT(ta->rt_deleted, tb->rt_deleted);
		T_EQ_STR(ta->rt_coord, tb->rt_coord);
		T_CHECK((ta->rt_repo == NULL) == (tb->rt_repo == NULL));
		if (ta->rt_repo && tb->rt_repo)
			T_EQ_STR(ta->rt_repo->ir_coord, tb->rt_repo->ir_coord);
		T_ASSERT(ta->rt_ndesc == tb->rt_ndesc);
		T_CHECK(same_descs(a, ta, b, tb));
		T_CHECK(tunit_strv_same(ta->rt_addrs, ta->rt_naddrs,
		    tb->rt_addrs, tb->rt_naddrs));
	}
	T_EQ_INT(a->iv_ids.ix_n, b->iv_ids.ix_n);
	T_EQ_INT(a->iv_nodes.rc_n, b->iv_nodes.rc_n);
	T_EQ_INT(a->iv_addrs.hm_n, b->iv_addrs.hm_n);
	T_EQ_INT(a->iv_pending.hm_n, b->iv_pending.hm_n);
	T_EQ_INT(a->iv_generation, b->iv_generation);
}

/* Every repository, root, descendant, author and eligibility alike. */
static void
compare(const struct inventory *a, const struct inventory *b)
{
	struct inv_author *aa, *ab;
	struct hmap	   ea = HMAP_INIT, eb = HMAP_INIT;
	const void	  *key;
	size_t		   it;

	compare_threads(a, b);
	T_EQ_INT(a->iv_authors.rc_n, b->iv_authors.rc_n);
	for (it = 0; (aa = inv_author_next(a, &it)) != NULL;) {
		T_ASSERT((ab = inv_author(b, aa->au_pubkey)) != NULL);
		T_ASSERT(aa->au_nroots == ab->au_nroots);
		T_CHECK(same_roots(aa->au_roots, ab->au_roots, aa->au_nroots));
		T_EQ_INT(inv_eligible(a, aa->au_pubkey),
		    inv_eligible(b, aa->au_pubkey));
	}
	T_EQ_INT(inv_eligible_each(a, count_each, &ea),
	    inv_eligible_each(b, count_each, &eb));
	for (it = 0; hmap_next(&ea, &it, &key, NULL, NULL);)
		T_CHECK(hmap_get(&eb, key, 32) != NULL);
	hmap_free(&ea);
	hmap_free(&eb);
	T_EQ_INT(a->iv_pubkeys.ix_n, b->iv_pubkeys.ix_n);
}

static void
test_rebuild_matches_feeding_every_event(void)
{
	struct pool	 *pl = calloc(1, sizeof(*pl));
	struct inventory *old = inv_new(&cfg), *bulk = inv_new(&cfg);
	struct inv_root	 *rt;
	struct event	 *so;
	char	q_only[65] = "", c[200], c3[200], pk[PUBKEY_HEX_LEN + 1];
	uint8_t q[32];
	size_t	it, capped = 0, deep = 0, addrs = 0, pend;
	int64_t last = 0;
	int	n, found = 0;

	T_ASSERT(pl != NULL);
	fill_store(pl, q_only, &last);
	T_ASSERT(last > INV_MAX_DESCENDANTS);
	n = feed_scan(st, 0, last, take, old, NULL);
	T_ASSERT(n > INV_MAX_DESCENDANTS);
	T_EQ_INT(inv_rebuild(bulk, st, last), n);
	compare(old, bulk);

	/* The store does hold what the comparison is meant to cover. */
	T_ASSERT(hex_decode(q_only, 64, q, 32) == 0);
	pk_hex(3, pk);
	snprintf(c3, sizeof(c3), "30617:%s:repo3", pk);
	for (it = 0; (rt = inv_root_next(bulk, &it)) != NULL;) {
		capped += rt->rt_ndesc == INV_MAX_DESCENDANTS;
		addrs += rt->rt_naddrs;
		deep += rt->rt_ndesc > 0 && !rt->rt_repo;
		for (size_t i = 0; i < rt->rt_ndesc; i++)
			found |= memcmp(inv_desc_id(bulk, rt, i), q, 32) == 0;
	}
	T_EQ_INT(capped, 1);
	T_CHECK(addrs > 0);
	T_CHECK(found); /* a descendant through a "q" id only */
	pend = bulk->iv_pending.hm_n;
	T_CHECK(pend > 0); /* roots of repo6 and repo7 wait */
	T_CHECK(bulk->iv_repos.hm_n >= 5);
	T_CHECK(inv_repo(bulk, c3) != NULL);

	/* Purgatory feeds both alike afterwards: StateOnly never downgrades. */
	coord(1, "held", c, sizeof(c));
	so = ev(1, 1800000000, 30617, "[[\"d\",\"held\"]]");
	inv_add_stateonly(old, so);
	inv_add_stateonly(bulk, so);
	event_destroy(so);
	so = mk(0, 1800000000, 30617, "[[\"d\",\"repo0\"]]", "");
	inv_add_stateonly(old, so);
	inv_add_stateonly(bulk, so);
	event_destroy(so);
	T_ASSERT(inv_repo(bulk, c) != NULL);
	T_EQ_INT(inv_repo(bulk, c)->ir_level, INV_STATE_ONLY);
	compare(old, bulk);
	(void)deep;
	inv_free(old);
	inv_free(bulk);
	free(pl);
}


/* ------------------------------------------------------------------ */
/* The tables (invdb.h) against the inventory they replace.            */

/* The one integer sql selects from store s, -1 on an error. */
static int64_t
int_of(struct store *s, const char *sql)
{
	sqlite3_stmt *q;
	int64_t	      v = -1;

	if (sqlite3_prepare_v2(store_sqlite(s), sql, -1, &q, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* The same from the test's store. */
static int64_t
sql_count(const char *sql)
{
	return int_of(st, sql);
}

/* A set of 32-byte keys or of strings, filled by the readers' callbacks. */
static void
set_key(void *arg, const uint8_t key[32])
{
	hmap_put(arg, key, 32, (void *)1);
}

static void
set_str(void *arg, const char *s)
{
	hmap_put(arg, s, strlen(s), (void *)1);
}

static void
set_root(void *arg, const struct invdb_root *rt)
{
	hmap_put(arg, rt->rt_id, 32, (void *)1);
}

static int
same_set(const struct hmap *a, const struct hmap *b)
{
	const void *k;
	size_t	    it, len;

	if (a->hm_n != b->hm_n)
		return 0;
	for (it = 0; hmap_next(a, &it, &k, &len, NULL);)
		if (hmap_get(b, k, len) == NULL)
			return 0;
	return 1;
}

struct repo_seen {
	const struct inventory *rs_iv;
	size_t			rs_n;
};

static void
check_repo(void *arg, const struct invdb_repo *r)
{
	struct repo_seen *rs = arg;
	struct inv_repo	 *m = inv_repo(rs->rs_iv, r->ir_coord);
	struct hmap	  a = HMAP_INIT, b = HMAP_INIT;
	size_t		  i;

	rs->rs_n++;
	T_ASSERT(m != NULL);
	T_CHECK(memcmp(m->ir_owner, r->ir_owner, 32) == 0);
	T_EQ_STR(m->ir_d, r->ir_d);
	T_EQ_INT(m->ir_created_at, r->ir_created_at);
	T_EQ_INT(m->ir_level, r->ir_level);
	T_EQ_INT(m->ir_refused, r->ir_refused);
	T_CHECK(tunit_strv_same(m->ir_relays, m->ir_nrelays, r->ir_relays,
	    r->ir_nrelays));
	T_ASSERT(m->ir_nmaint == r->ir_nmaint);
	T_CHECK(m->ir_nmaint == 0 ||
	    memcmp(m->ir_maint, r->ir_maint, m->ir_nmaint * 32) == 0);
	for (i = 0; i < m->ir_nroots; i++)
		set_key(&a, m->ir_roots[i]->rt_id);
	T_ASSERT(invdb_repo_roots(st, r->ir_coord, set_root, &b) == 0);
	T_CHECK(same_set(&a, &b));
	hmap_free(&a);
	hmap_free(&b);
}

/* Every repository, root, thread, participant and eligibility alike. */
static void
compare_tables(const struct inventory *iv)
{
	struct repo_seen   rs = { iv, 0 };
	struct inv_root	  *rt;
	struct inv_author *au;
	sqlite3_stmt	  *q;
	struct hmap	   a, b;
	size_t		   it, i, nroots = 0, bykind[3], unlinked, authors = 0;
	size_t		   mk_[3] = { 0, 0, 0 }, mu = 0;
	int64_t		   num;

	T_ASSERT(invdb_repos(st, check_repo, &rs) == 0);
	T_EQ_INT(rs.rs_n, iv->iv_repos.hm_n);
	T_ASSERT(
	    sqlite3_prepare_v2(store_sqlite(st),
		"SELECT num, author, kind, deleted, coord,"
		" (SELECT max(n) FROM inv_nodes WHERE root = num),"
		/* Places 0 to the count, each once, the root's own 0. */
		" (SELECT count(*) = max(n) + 1 AND count(DISTINCT n) ="
		"  count(*) AND min(n) = 0 FROM inv_nodes WHERE root = num),"
		" (SELECT n FROM inv_nodes WHERE root = num AND seq ="
		"  coalesce((SELECT seq FROM events WHERE id = ?1),"
		"  (SELECT seq FROM inv_gone WHERE id = ?1)))"
		" FROM inv_roots WHERE id = ?1",
		-1, &q, NULL) == SQLITE_OK);
	for (it = 0; (rt = inv_root_next(iv, &it)) != NULL; nroots++) {
		sqlite3_reset(q);
		sqlite3_bind_blob(q, 1, rt->rt_id, 32, SQLITE_STATIC);
		T_ASSERT(sqlite3_step(q) == SQLITE_ROW);
		num = sqlite3_column_int64(q, 0);
		T_CHECK(
		    memcmp(sqlite3_column_blob(q, 1), rt->rt_author, 32) == 0);
		T_EQ_INT(sqlite3_column_int64(q, 2), rt->rt_kind);
		T_EQ_INT(sqlite3_column_int(q, 3), rt->rt_deleted);
		T_EQ_STR((const char *)sqlite3_column_text(q, 4), rt->rt_coord);
		T_EQ_INT(sqlite3_column_int64(q, 5), rt->rt_ndesc);
		T_EQ_INT(sqlite3_column_int(q, 6), 1);
		T_CHECK(sqlite3_column_type(q, 7) == SQLITE_INTEGER &&
		    sqlite3_column_int(q, 7) == 0);
		if (!rt->rt_deleted) {
			if (rt->rt_repo == NULL)
				mu++;
			else
				mk_[rt->rt_kind == 1617	    ? 0 :
					rt->rt_kind == 1618 ? 1 :
							      2]++;
		}
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		for (i = 0; i < rt->rt_ndesc; i++)
			set_key(&a, inv_desc_id(iv, rt, i));
		T_ASSERT(invdb_thread(st, num, set_key, NULL, &b) == 0);
		T_CHECK(same_set(&a, &b));
		hmap_free(&a);
		hmap_free(&b);
		for (i = 0; i < rt->rt_naddrs; i++)
			set_str(&a, rt->rt_addrs[i]);
		T_ASSERT(invdb_thread(st, num, NULL, set_str, &b) == 0);
		T_CHECK(same_set(&a, &b));
		hmap_free(&a);
		hmap_free(&b);
	}
	sqlite3_finalize(q);
	T_EQ_INT(nroots, iv->iv_nroots);
	T_ASSERT(invdb_count_roots(st, bykind, &unlinked) == 0);
	T_EQ_INT(bykind[0], mk_[0]);
	T_EQ_INT(bykind[1], mk_[1]);
	T_EQ_INT(bykind[2], mk_[2]);
	T_EQ_INT(unlinked, mu);
	for (it = 0; (au = inv_author_next(iv, &it)) != NULL;) {
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		for (i = 0; i < au->au_nroots; i++)
			set_key(&a, au->au_roots[i]->rt_id);
		authors += au->au_nroots > 0;
		T_ASSERT(
		    invdb_author_roots(st, au->au_pubkey, set_root, &b) == 0);
		T_CHECK(same_set(&a, &b));
		hmap_free(&a);
		hmap_free(&b);
		T_EQ_INT(invdb_eligible(st, au->au_pubkey),
		    inv_eligible(iv, au->au_pubkey));
	}
	T_EQ_INT(sql_count("SELECT count(DISTINCT author) FROM inv_nodes"),
	    authors);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	inv_eligible_each(iv, set_key, &a);
	T_EQ_INT(invdb_eligible_each(st, set_key, &b), a.hm_n);
	T_CHECK(same_set(&a, &b));
	hmap_free(&a);
	hmap_free(&b);
}

/* Adds e's id to the pool (a store filled by another case). */
static void
pool_take(void *arg, int64_t seq, const struct event *e)
{
	struct pool *pl = arg;

	(void)seq;
	if (pl->n < 4096)
		memcpy(pl->ids[pl->n++], e->id_hex, 65);
}

/*
 * Feeds e to the inventory and, in a transaction of its own as relayd
 * does, to the tables; puts its id in the pool and frees it.
 */
static void
feed_both(struct inventory *iv, struct invdb *w, struct pool *pl,
    struct event *e)
{
	enum store_result r;
	int64_t		  seq = 0;

	/*
	 * As relayd: stored first (a deletion takes its targets out of
	 * the store), then fed.  A refused announcement (older than the
	 * one held) or deletion (of another author's event) is fed all
	 * the same, to both, so that the rules refusing them in the
	 * inventory are compared too: neither kind becomes a node.
	 */
	T_ASSERT(store_begin(st) == 0);
	r = store_put(st, e, &seq);
	if (r == STORE_OK || e->kind == 30617 || e->kind == 5) {
		inv_add(iv, e);
		T_ASSERT(invdb_add(w, e, r == STORE_OK ? seq : 0) != -1);
	}
	if (pl->n < 4096 && r == STORE_OK)
		memcpy(pl->ids[pl->n++], e->id_hex, 65);
	event_destroy(e);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(st) == 0);
}

/*
 * The tables built from a store hold what an inventory fed the same
 * events holds; so do both after more events, deletions of every kind
 * among them, fed to both one transaction at a time as relayd does.
 */
static void
test_tables_hold_what_the_inventory_holds(void)
{
	struct pool	 *pl = calloc(1, sizeof(*pl));
	struct inventory *iv = inv_new(&cfg);
	struct invdb	 *w = invdb_new(st, &cfg);
	struct event	 *e;
	char		  q_only[65] = "", tags[512], c[200];
	int64_t		  last = 0, gen0, gen1, at = 1800000000;
	size_t		  i;
	int		  n;

	T_ASSERT(pl != NULL);
	/* The rebuild case's store, or the same made now (run alone). */
	T_ASSERT(store_last_seq(st, &last) == 0);
	if (last == 0)
		fill_store(pl, q_only, &last);
	else
		T_ASSERT(feed_scan(st, 0, last, pool_take, pl, NULL) > 0);
	n = feed_scan(st, 0, last, take, iv, NULL);
	T_EQ_INT(invdb_built(st), 0);
	T_EQ_INT(invdb_build(w), n);
	T_EQ_INT(invdb_built(st), 1);
	compare_tables(iv);
	/* Built for this configuration and every stored event; an event
	 * stored behind the writer's back (relayd stopped) makes them
	 * stale, and relayd would build them again. */
	T_EQ_INT(invdb_built_for(w), 1);
	T_ASSERT(store_begin(st) == 0);
	T_EQ_INT(put(mk(3, at++, 1, "[]", "behind its back"), NULL), STORE_OK);
	T_ASSERT(store_commit(st) == 0);
	T_EQ_INT(invdb_built_for(w), 0);
	T_ASSERT(store_begin(st) == 0);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(st) == 0);
	T_EQ_INT(invdb_built_for(w), 1);

	/* Live: each author deletes what it may or may not; repositories
	 * go and come back; roots wait and attach. */
	T_ASSERT(invdb_generation(st, &gen0) == 0);
	for (i = 0; i < 400; i++) {
		switch (rnd(5)) {
		case 0:
			snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]",
			    any_id(pl));
			e = mk((int)rnd(30), at++, 5, tags, "");
			break;
		case 1:
			pk_hex((int)rnd(8), tags + 400);
			snprintf(c, sizeof(c), "30617:%s:repo%u", tags + 400,
			    rnd(8));
			snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
			e = mk((int)rnd(8), at++, rnd(2) ? 5 : 1621, tags, "");
			break;
		case 2:
			snprintf(tags, sizeof(tags), "[[\"d\",\"repo%u\"]]",
			    rnd(8));
			/* Some older than the version held. */
			e = mk((int)rnd(8), rnd(3) ? at++ : 1600000000 + at % 7,
			    30617, tags, "");
			break;
		default:
			snprintf(tags, sizeof(tags),
			    "[[\"E\",\"%s\"],[\"e\",\"%s\"]]", any_id(pl),
			    any_id(pl));
			e = mk((int)rnd(40), at++, 1111, tags, "");
			break;
		}
		feed_both(iv, w, pl, e);
	}
	/* Chains from nodes of every depth reach the bound where the
	 * inventory's do: the built depths are the inventory's. */
	for (i = 0; i < 8 * (INV_MAX_DEPTH + 2); i++) {
		char parent[65];

		memcpy(parent,
		    i % (INV_MAX_DEPTH + 2) == 0 ? any_id(pl) :
						   pl->ids[pl->n - 1],
		    65);
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", parent);
		e = mk((int)rnd(40), at++, 1111, tags, "");
		feed_both(iv, w, pl, e);
	}
	T_ASSERT(invdb_generation(st, &gen1) == 0);
	T_CHECK(gen1 > gen0);
	compare_tables(iv);

	/* A rolled-back transaction leaves nothing. */
	T_ASSERT(store_begin(st) == 0);
	snprintf(tags, sizeof(tags), "[[\"d\",\"%s\"]]", "gone");
	e = mk(1, at++, 30617, tags, "");
	T_ASSERT(invdb_add(w, e, 0) > 0);
	event_destroy(e);
	T_ASSERT(store_rollback(st) == 0);
	invdb_discard(w);
	compare_tables(iv);
	invdb_free(w);
	inv_free(iv);
	free(pl);
}

/* The places of root num's nodes, in order, comma-separated. */
static void
places(struct store *s, char *out, size_t len)
{
	sqlite3_stmt *q;

	out[0] = '\0';
	T_ASSERT(sqlite3_prepare_v2(store_sqlite(s),
		     "SELECT group_concat(n) FROM (SELECT n FROM inv_nodes"
		     " WHERE root = 1 ORDER BY n)",
		     -1, &q, NULL) == SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW &&
	    sqlite3_column_type(q, 0) != SQLITE_NULL)
		snprintf(out, len, "%s", sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
}

/* Stores a NIP-22 comment on root, fed to w in its own transaction. */
static void
comment_live(struct store *s, struct invdb *w, const char *root, int64_t at)
{
	char	      tags[200];
	struct event *e;
	int64_t	      seq;

	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"e\",\"%s\"]]", root,
	    root);
	e = mk(5, at, 1111, tags, "live");
	T_ASSERT(store_begin(s) == 0);
	T_ASSERT(store_put(s, e, &seq) == STORE_OK);
	T_ASSERT(invdb_add(w, e, seq) > 0);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(s) == 0);
	event_destroy(e);
}

/*
 * Schema step 8 (db.c): tables built under step 7 (a descendant count in
 * inv_roots, no place in inv_nodes) open empty and unbuilt, as relayd
 * finds an older database, and relayd builds them again; built or live,
 * a root's own node has place 0 and its descendants 1, 2, ...
 */
static void
test_step_7_tables_are_built_again(void)
{
	static const char step7[] =
	    "BEGIN;"
	    "DROP TRIGGER inv_nodes_gone;"
	    "DROP TABLE inv_gone;"
	    "DROP TABLE inv_nodes;"
	    "DROP TABLE inv_roots;"
	    "CREATE TABLE inv_roots (num INTEGER PRIMARY KEY,"
	    "  id BLOB NOT NULL UNIQUE, author BLOB NOT NULL,"
	    "  kind INTEGER NOT NULL, coord TEXT NOT NULL,"
	    "  deleted INTEGER NOT NULL, ndesc INTEGER NOT NULL);"
	    "CREATE INDEX inv_roots_coord ON inv_roots (coord);"
	    "CREATE TABLE inv_nodes (id BLOB NOT NULL, root INTEGER NOT NULL,"
	    "  depth INTEGER NOT NULL, author BLOB,"
	    "  PRIMARY KEY (id, root)) WITHOUT ROWID;"
	    "CREATE INDEX inv_nodes_root ON inv_nodes (root);"
	    "CREATE INDEX inv_nodes_author ON inv_nodes (author, root)"
	    "  WHERE author IS NOT NULL;"
	    "INSERT INTO inv_roots VALUES (1, x'00', x'00', 1621, 'c', 0, 3);"
	    "INSERT INTO inv_nodes VALUES (x'00', 1, 0, x'00');"
	    /* Step 9 undone: the case in the key. */
	    "CREATE TABLE tags_v5 (letter TEXT NOT NULL,"
	    "  value BLOB NOT NULL, created_at INTEGER NOT NULL,"
	    "  upper INTEGER NOT NULL, event INTEGER NOT NULL,"
	    "  PRIMARY KEY (letter, value, created_at, upper, event))"
	    "  WITHOUT ROWID;"
	    "INSERT INTO tags_v5 SELECT letter, value, created_at, 0, event"
	    "  FROM tags WHERE cases & " DB_TAG_LOWER_SQL
	    " UNION ALL SELECT letter, value, created_at, 1, event"
	    "  FROM tags WHERE cases & " DB_TAG_UPPER_SQL ";"
	    "DROP TABLE tags;"
	    "ALTER TABLE tags_v5 RENAME TO tags;"
	    "PRAGMA user_version = 7;"
	    "COMMIT;";
	char	      path[128], err[256], owner[65], tags[300], root[65];
	char	      got[64];
	struct store *s;
	struct invdb *w;
	struct event *e;
	sqlite3	     *db;
	int64_t	      at = 1700000000;
	int	      i;

	snprintf(path, sizeof(path), "%s/step7.db", tmpdir);
	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	pk_hex(1, owner);
	e = mk(1, at++, 30617, "[[\"d\",\"repo\"]]", "");
	T_ASSERT(store_put(s, e, NULL) == STORE_OK);
	event_destroy(e);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:repo\"]]", owner);
	e = mk(2, at++, 1621, tags, "issue");
	memcpy(root, e->id_hex, sizeof(root));
	T_ASSERT(store_put(s, e, NULL) == STORE_OK);
	event_destroy(e);
	w = invdb_new(s, &cfg);
	T_EQ_INT(invdb_build(w), 2);
	for (i = 0; i < 3; i++)
		comment_live(s, w, root, at++);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3");
	invdb_free(w);
	store_close(s);

	/* Back to step 7, built, as relayd before step 8 left it. */
	T_ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
	T_ASSERT(sqlite3_exec(db, step7, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);

	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	T_EQ_INT(int_of(s, "PRAGMA user_version"), db_schema_version());
	T_EQ_INT(invdb_built(s), 0);
	T_EQ_INT(int_of(s,
		     "SELECT (SELECT count(*) FROM inv_nodes) +"
		     " (SELECT count(*) FROM inv_roots) +"
		     " (SELECT count(*) FROM inv_repos)"),
	    0);
	w = invdb_new(s, &cfg);
	T_EQ_INT(invdb_built_for(w), 0);
	T_EQ_INT(invdb_build(w), 5);
	T_EQ_INT(invdb_built_for(w), 1);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3");
	/* A live descendant takes the next place. */
	comment_live(s, w, root, at++);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3,4");
	invdb_free(w);
	store_close(s);
}

/* Nodes of root 1 whose event has the id id_hex. */
static int
nodes_of(struct store *s, const char *id_hex)
{
	char sql[300];

	snprintf(sql, sizeof(sql),
	    "SELECT count(*) FROM inv_nodes n JOIN events e ON e.seq = n.seq"
	    " WHERE n.root = 1 AND e.id = x'%s'",
	    id_hex);
	return int_of(s, sql);
}

/*
 * Stores e in the open transaction and feeds it to w: invdb_add()'s
 * answer, or -2 if the store refused it.  The id into id_hex if not
 * NULL, the count of its nodes under root 1 into *nodes if not NULL;
 * e is destroyed.
 */
static int
put_fed(struct store *s, struct invdb *w, struct event *e, char *id_hex,
    int *nodes)
{
	int64_t seq;
	int	rc = -2;

	if (store_put(s, e, &seq) == STORE_OK)
		rc = invdb_add(w, e, seq);
	if (id_hex != NULL)
		memcpy(id_hex, e->id_hex, 65);
	if (nodes != NULL)
		*nodes = nodes_of(s, e->id_hex);
	event_destroy(e);
	return rc;
}

/* A NIP-22 comment by key n in thread root, answering parent. */
static struct event *
comment(int n, int64_t at, const char *root, const char *parent)
{
	char tags[300];

	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"e\",\"%s\"]]", root,
	    parent);
	return mk(n, at, 1111, tags, "comment");
}

/*
 * The writer remembers the nodes and roots it wrote (invdb.c): what it
 * writes from that memory is what it would write from the tables.  A
 * rolled-back comment takes no place; a deleted root takes no new
 * descendant, nor does a reply to a comment on it; a second writer on
 * the same tables (relayd started again) gives the next place.
 */
static void
test_writer_memory_follows_rollbacks_and_deletions(void)
{
	char	      path[128], err[256], owner[65], tags[300], root[65];
	char	      got[64], first[65];
	struct store *s;
	struct invdb *w;
	int64_t	      at = 1700000000;
	int	      i, nodes = -1;

	snprintf(path, sizeof(path), "%s/memory.db", tmpdir);
	T_ASSERT((s = store_open(path, 0, err, sizeof(err))) != NULL);
	w = invdb_new(s, &cfg);
	T_EQ_INT(invdb_build(w), 0);
	pk_hex(1, owner);
	T_ASSERT(store_begin(s) == 0);
	T_ASSERT(put_fed(s, w, mk(1, at++, 30617, "[[\"d\",\"repo\"]]", ""),
		     NULL, NULL) > 0);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30617:%s:repo\"]]", owner);
	T_ASSERT(
	    put_fed(s, w, mk(2, at++, 1621, tags, "issue"), root, NULL) > 0);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(s) == 0);
	for (i = 0; i < 3; i++)
		comment_live(s, w, root, at++);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3");

	/* Rolled back: the next comment takes place 4, not 5. */
	T_ASSERT(store_begin(s) == 0);
	T_ASSERT(put_fed(s, w, comment(6, at++, root, root), NULL, NULL) > 0);
	T_ASSERT(store_rollback(s) == 0);
	invdb_discard(w);
	comment_live(s, w, root, at++);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3,4");

	/* A reply to the last comment, whose node the writer wrote. */
	T_ASSERT(store_begin(s) == 0);
	T_ASSERT(put_fed(s, w, comment(7, at++, root, root), first, NULL) > 0);
	T_ASSERT(
	    put_fed(s, w, comment(8, at++, root, first), NULL, &nodes) > 0);
	T_EQ_INT(nodes, 1);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(s) == 0);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3,4,5,6");

	/* A second writer, as relayd started again, remembers nothing. */
	invdb_free(w);
	w = invdb_new(s, &cfg);
	T_EQ_INT(invdb_built_for(w), 1);
	comment_live(s, w, root, at++);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3,4,5,6,7");

	/* Its author deletes the root: no comment nor reply attaches. */
	T_ASSERT(store_begin(s) == 0);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", root);
	T_ASSERT(put_fed(s, w, mk(2, at++, 5, tags, ""), NULL, NULL) > 0);
	T_EQ_INT(put_fed(s, w, comment(9, at++, root, first), NULL, &nodes), 0);
	T_EQ_INT(nodes, 0);
	T_ASSERT(invdb_flush(w) == 0);
	T_ASSERT(store_commit(s) == 0);
	places(s, got, sizeof(got));
	T_EQ_STR(got, "0,1,2,3,4,5,6,7");
	invdb_free(w);
	store_close(s);
}

/*
 * syncd's copy (inv_new_parts() without INV_AUTHORS): the same
 * repositories, roots and descendants as a whole copy, deletions
 * included, and no participant.
 */
static void
test_a_copy_without_participants_keeps_every_thread(void)
{
	struct pool	 *pl = calloc(1, sizeof(*pl));
	struct inventory *all = inv_new(&cfg), *part = inv_new_parts(&cfg, 0);
	char		  q_only[65] = "";
	int64_t		  last = 0;
	size_t		  it = 0;

	T_ASSERT(pl != NULL);
	/* The rebuild case's store, or the same made now (run alone). */
	T_ASSERT(store_last_seq(st, &last) == 0);
	if (last == 0)
		fill_store(pl, q_only, &last);
	T_EQ_INT(inv_rebuild(part, st, last), inv_rebuild(all, st, last));
	T_CHECK(all->iv_authors.rc_n > 0);
	compare_threads(all, part);
	T_EQ_INT(part->iv_authors.rc_n, 0);
	T_CHECK(inv_author_next(part, &it) == NULL);
	inv_free(all);
	inv_free(part);
	free(pl);
}

/* One event as text: every field feed_scan_tags() promises. */
static char *
describe(int64_t seq, const struct event *e)
{
	struct buf b = BUF_INIT;
	uint32_t   i, j;
	size_t	   len;

	buf_printf(&b, "%lld %s %s %lld %u %u", (long long)seq, e->id_hex,
	    e->pubkey_hex, (long long)e->created_at, e->kind, e->ntags);
	for (i = 0; i < e->ntags; i++) {
		buf_printf(&b, " [%u", e->tags[i].n);
		for (j = 0; j < e->tags[i].n; j++) {
			/* Lengths and bytes, so that a NUL would show. */
			buf_printf(&b, " %zu:", e->tags[i].v[j].len);
			buf_add(&b, e->tags[i].v[j].s, e->tags[i].v[j].len);
			T_CHECK(e->tags[i].v[j].s[e->tags[i].v[j].len] == '\0');
		}
		buf_addc(&b, ']');
	}
	buf_printf(&b, " %s",
	    hex_decode(e->id_hex, 64, (uint8_t[32]){ 0 }, 32) == 0 ?
		"" :
		"bad id_hex");
	return buf_release(&b, &len);
}

struct described {
	char   **d;
	size_t	 n;
	size_t	 cap;
	uint32_t kinds[FEED_MAX_KINDS];
	size_t	 nkinds;
};

static void
add_described(void *arg, int64_t seq, const struct event *e)
{
	struct described *ds = arg;
	size_t		  k;

	for (k = 0; k < ds->nkinds && ds->kinds[k] != e->kind; k++)
		;
	if (ds->nkinds > 0 && k == ds->nkinds)
		return;
	if (ds->n == ds->cap) {
		ds->cap = ds->cap ? ds->cap * 2 : 1024;
		if ((ds->d = reallocarray(ds->d, ds->cap, sizeof(char *))) ==
		    NULL)
			fatal("inventory_test");
	}
	ds->d[ds->n++] = describe(seq, e);
}

static void
described_free(struct described *ds)
{
	strv_free(ds->d, ds->n);
}

/* What feed_scan_ahead() hands to its hint and to its callback. */
struct ahead_seen {
	struct described    hinted;   /* as hinted */
	struct described    taken;    /* as taken */
	const struct event *ev[4096]; /* by hint number */
	size_t		    nhinted;
	size_t		    ntaken;
	size_t		    total;    /* in the range */
	size_t		    bad_lead; /* early or late */
	size_t		    moved;    /* moved since hinted */
};

static void
ahead_hint(void *arg, int64_t seq, const struct event *e)
{
	struct ahead_seen *as = arg;

	if (as->nhinted < 4096)
		as->ev[as->nhinted] = e;
	as->nhinted++;
	add_described(&as->hinted, seq, e);
}

static void
ahead_take(void *arg, int64_t seq, const struct event *e)
{
	struct ahead_seen *as = arg;
	size_t		   want;

	/* FEED_AHEAD events hinted beyond this one, fewer at the end. */
	want = as->ntaken + 1 + FEED_AHEAD;
	if (want > as->total)
		want = as->total;
	if (as->nhinted != want)
		as->bad_lead++;
	if (as->ntaken >= 4096 || as->ev[as->ntaken] != e)
		as->moved++;
	as->ntaken++;
	add_described(&as->taken, seq, e);
}

static int
same_described(const struct described *a, const struct described *b)
{
	return tunit_strv_same(a->d, a->n, b->d, b->n);
}

static void
test_scans_give_what_parsing_gives(void)
{
	struct described full = { 0 }, tags = { 0 }, kf = { 0 }, kinds = { 0 };
	int64_t		 last, a, b;
	int		 n;

	/* Odd strings, an empty tag list, an event at time 0. */
	T_ASSERT(store_begin(st) == 0);
	T_EQ_INT(put(mk(1, 0, 1, "[]", ""), NULL), STORE_OK);
	T_EQ_INT(put(mk(1, 5, 1,
			 "[[\"e\",\"\\u0000x\"],[\"t\",\"\\/\"],"
			 "[\"t\",\"\\ud83d\\ude00\"],[\"r\",\"\\u001f\"]]",
			 ""),
		     NULL),
	    STORE_OK);
	T_EQ_INT(
	    put(mk(1, 6, 0, "[[\"x\",\"\",\"\"]]", "{\\\"name\\\":1}"), NULL),
	    STORE_OK);
	T_EQ_INT(put(mk(2, 7, 10002,
			 "[[\"r\",\"wss://a.example.com\","
			 "\"read\"]]",
			 ""),
		     NULL),
	    STORE_OK);
	/* Times around where the number reader starts checking. */
	T_EQ_INT(
	    put(mk(3, 999999999999999999LL, EVENT_KIND_MAX, "[]", ""), NULL),
	    STORE_OK);
	T_EQ_INT(put(mk(3, 1000000000000000000LL, 1, "[]", ""), NULL),
	    STORE_OK);
	T_EQ_INT(put(mk(3, INT64_MAX, 1, "[]", ""), NULL), STORE_OK);
	T_ASSERT(store_commit(st) == 0);
	T_ASSERT(store_last_seq(st, &last) == 0);

	n = feed_scan(st, 0, last, add_described, &full, &a);
	T_EQ_INT(feed_scan_tags(st, 0, last, add_described, &tags, &b), n);
	T_EQ_INT(a, b);
	T_CHECK(same_described(&full, &tags));
	/* A range in the middle, with holes where events were replaced. */
	described_free(&full);
	described_free(&tags);
	memset(&full, 0, sizeof(full));
	memset(&tags, 0, sizeof(tags));
	n = feed_scan(st, 10, 500, add_described, &full, &a);
	T_CHECK(n > 300 && n < 490);
	T_EQ_INT(feed_scan_tags(st, 10, 500, add_described, &tags, &b), n);
	T_EQ_INT(a, b);
	T_CHECK(same_described(&full, &tags));
	T_EQ_INT(feed_scan_tags(st, 500, 500, add_described, &tags, &b), 0);

	/* The kind scan: exactly those kinds, in seq order. */
	kf.kinds[0] = kinds.kinds[0] = 0;
	kf.kinds[1] = kinds.kinds[1] = 5;
	kf.kinds[2] = kinds.kinds[2] = 10002;
	kf.nkinds = 3;
	T_ASSERT(feed_scan(st, 0, last, add_described, &kf, NULL) > 0);
	T_EQ_INT(
	    feed_scan_kinds(st, 0, last, kinds.kinds, 3, add_described, &kinds),
	    (int)kf.n);
	T_CHECK(kf.n > 10);
	T_CHECK(same_described(&kf, &kinds));
	described_free(&full);
	described_free(&tags);
	described_free(&kf);
	described_free(&kinds);
}


/*
 * feed_scan_ahead(): every event goes to the hint, FEED_AHEAD events
 * before the callback (fewer at the end of the range), stays where it is
 * in between, and both see what a full parse gives, in seq order; rows
 * that are parsed in full (escapes) too.  Ranges shorter than the look
 * ahead, and none at all.
 */
static void
test_scan_ahead_hints_each_event_first(void)
{
	static const int64_t ranges[][2] = { { 0, 0 }, { 0, 2 }, { 3, 5 },
		{ 0, 40 }, { 10, 500 } };
	struct ahead_seen   *as;
	struct described     full;
	int64_t		     last, a, b;
	size_t		     r;
	int		     n;

	T_ASSERT(store_last_seq(st, &last) == 0);
	T_ASSERT(last > 500);
	for (r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
		memset(&full, 0, sizeof(full));
		T_ASSERT((as = calloc(1, sizeof(*as))) != NULL);
		n = feed_scan(st, ranges[r][0], ranges[r][1], add_described,
		    &full, &a);
		as->total = (size_t)n;
		T_EQ_INT(feed_scan_ahead(st, ranges[r][0], ranges[r][1],
			     ahead_hint, ahead_take, as, &b),
		    n);
		T_EQ_INT(a, b);
		T_EQ_INT(as->nhinted, (size_t)n);
		T_EQ_INT(as->ntaken, (size_t)n);
		T_EQ_INT(as->bad_lead, 0);
		T_EQ_INT(as->moved, 0);
		T_CHECK(same_described(&full, &as->hinted));
		T_CHECK(same_described(&full, &as->taken));
		described_free(&full);
		described_free(&as->hinted);
		described_free(&as->taken);
		free(as);
	}
	/* Without a hint: what feed_scan_tags() gives. */
	memset(&full, 0, sizeof(full));
	T_ASSERT((as = calloc(1, sizeof(*as))) != NULL);
	n = feed_scan(st, 0, last, add_described, &full, NULL);
	T_EQ_INT(
	    feed_scan_ahead(st, 0, last, NULL, add_described, &as->taken, NULL),
	    n);
	T_CHECK(same_described(&full, &as->taken));
	described_free(&full);
	described_free(&as->taken);
	free(as);
}

static int
inventory_setup(void)
{
	char err[256];

	setenv("NGIT_DOMAIN", "grasp.example.com", 1);
	if (config_load(&cfg, NULL, err, sizeof(err)) == -1) {
		printf("not ok - config: %s\n", err);
		return 1;
	}
	return 0;
}

static void
inventory_cleanup(void)
{
	config_free(&cfg);
}

static const struct t_case cases[] = {
	T_CASE(test_announcement_relays_are_canonical_and_exclude_us),
	T_CASE(test_threads_carry_root_provenance_and_participants),
	T_CASE(test_a_prolific_author_lists_each_thread_once),
	T_CASE(test_roots_wait_for_their_repository_and_stateonly_is_inert),
	T_CASE(test_descendant_chains_are_bounded),
	T_CASE(test_addressable_descendants_and_their_addresses),
	T_CASE(test_deletions_by_the_author_only),
	T_CASE(test_deleted_descendants_take_their_authors_out),
	T_CASE(test_provenance_through_quotes_and_address_tags),
	T_CASE(test_maintainers_of_full_repositories_only_and_each_author_once),
	T_CASE(test_rebuild_matches_feeding_every_event),
	T_CASE(test_tables_hold_what_the_inventory_holds),
	T_CASE(test_step_7_tables_are_built_again),
	T_CASE(test_writer_memory_follows_rollbacks_and_deletions),
	T_CASE(test_a_copy_without_participants_keeps_every_thread),
	T_CASE(test_scans_give_what_parsing_gives),
	T_CASE(test_scan_ahead_hints_each_event_first),
};

T_MAIN_ALL(cases, inventory_setup, inventory_cleanup, &tstore_fixture, &tsp, 0)
