/*
 * inventory_test.c: repositories, roots, descendants with root
 * provenance, participants and eligible identity authors, as derived from
 * accepted events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "event.h"
#include "inventory.h"
#include "t.h"

static struct config	cfg;

static void
sk_of(int n, uint8_t sk[32])
{
	memset(sk, 0x44, 32);
	sk[31] = (uint8_t)n;
}

static struct event *
ev(int who, int64_t at, uint32_t kind, const char *tags)
{
	uint8_t	sk[32];

	sk_of(who, sk);
	return event_new_signed(sk, at, kind, tags, "");
}

static void
hexof(int who, char out[65])
{
	uint8_t	sk[32], pk[32];

	sk_of(who, sk);
	event_pubkey_of(sk, pk);
	hex_encode(pk, 32, out);
}

static void
feed(struct inventory *iv, struct event *e)
{
	inv_add(iv, e);
	event_destroy(e);
}

static void
coord(int who, const char *d, char *out, size_t len)
{
	char	h[65];

	hexof(who, h);
	snprintf(out, len, "30617:%s:%s", h, d);
}

static void
test_announcement_relays_are_canonical_and_exclude_us(void)
{
	struct inventory	*iv = inv_new(&cfg);
	struct inv_repo		*r;
	char			 c[200], m[65], tags[1024];

	hexof(2, m);
	snprintf(tags, sizeof(tags), "[[\"d\",\"repo\"],[\"relays\","
	    "\"wss://Relay.Example.COM/\",\"ws://grasp.example.com\","
	    "\"wss://127.0.0.1\",\"not a url\"],[\"clone\",\"https://"
	    "git.example.org:443/npub1x/repo.git\",\"http://grasp.example.com/"
	    "npub1x/repo.git\",\"git@ssh.example:x\"],[\"maintainers\",\"%s\","
	    "\"zz\"]]", m);
	feed(iv, ev(1, 100, 30617, tags));
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
	feed(iv, ev(1, 200, 30617, "[[\"d\",\"repo\"],[\"relays\","
	    "\"wss://other.example.net\"]]"));
	r = inv_repo(iv, c);
	T_EQ_INT(r->ir_nrelays, 1);
	T_EQ_INT(r->ir_nmaint, 0);
	inv_free(iv);
}

static void
test_threads_carry_root_provenance_and_participants(void)
{
	struct inventory	*iv = inv_new(&cfg);
	struct event		*issue, *comment, *react, *other;
	struct inv_root		*rt;
	struct inv_author	*a;
	char			 c[200], tags[512];
	uint8_t			 sk[32], pk[32];

	coord(1, "r", c, sizeof(c));
	feed(iv, ev(1, 100, 30617, "[[\"d\",\"r\"]]"));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	issue = ev(3, 101, 1621, tags);
	inv_add(iv, issue);
	snprintf(tags, sizeof(tags), "[[\"E\",\"%s\"],[\"K\",\"1621\"]]",
	    issue->id_hex);
	comment = ev(4, 102, 1111, tags);
	inv_add(iv, comment);
	/* A reaction that names only its immediate parent. */
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", comment->id_hex);
	react = ev(5, 103, 7, tags);
	inv_add(iv, react);
	/* Unrelated thread: its author maps to nothing here. */
	other = ev(6, 104, 1, "[[\"e\",\"000000000000000000000000000000000000"
	    "0000000000000000000000000000\"]]");
	inv_add(iv, other);

	T_ASSERT((rt = inv_root(iv, issue->id)) != NULL);
	T_CHECK(rt->rt_repo == inv_repo(iv, c));
	T_EQ_INT(rt->rt_ndesc, 2);
	T_CHECK(memcmp(rt->rt_desc[1], react->id, 32) == 0);
	a = inv_author(iv, react->pubkey);
	T_ASSERT(a != NULL);
	T_EQ_INT(a->au_nroots, 1);
	T_CHECK(a->au_roots[0] == rt);
	T_CHECK(inv_author(iv, other->pubkey) == NULL);

	T_CHECK(inv_eligible(iv, issue->pubkey));
	T_CHECK(inv_eligible(iv, comment->pubkey));
	T_CHECK(inv_eligible(iv, react->pubkey));
	sk_of(1, sk);
	event_pubkey_of(sk, pk);
	T_CHECK(inv_eligible(iv, pk));		/* owner */
	T_CHECK(!inv_eligible(iv, other->pubkey));
	event_destroy(issue);
	event_destroy(comment);
	event_destroy(react);
	event_destroy(other);
	inv_free(iv);
}

static void
test_roots_wait_for_their_repository_and_stateonly_is_inert(void)
{
	struct inventory	*iv = inv_new(&cfg);
	struct event		*issue, *ann;
	char			 c[200], tags[512];
	struct inv_repo		*r;

	coord(1, "late", c, sizeof(c));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	issue = ev(3, 101, 1621, tags);
	inv_add(iv, issue);
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
	struct inventory	*iv = inv_new(&cfg);
	struct event		*root, *prev, *e;
	char			 c[200], tags[512];
	int			 i;

	coord(1, "deep", c, sizeof(c));
	feed(iv, ev(1, 100, 30617, "[[\"d\",\"deep\"]]"));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	root = ev(2, 100, 1621, tags);
	inv_add(iv, root);
	prev = root;
	for (i = 0; i < INV_MAX_DEPTH + 5; i++) {
		snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", prev->id_hex);
		e = ev(10 + i, 200 + i, 1, tags);
		inv_add(iv, e);
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
	struct inventory	*iv = inv_new(&cfg);
	struct event		*root, *art, *reply;
	struct inv_root		*rt;
	char			 c[200], tags[512], h[65];

	coord(1, "adr", c, sizeof(c));
	feed(iv, ev(1, 100, 30617, "[[\"d\",\"adr\"]]"));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	root = ev(2, 100, 1618, tags);
	inv_add(iv, root);
	snprintf(tags, sizeof(tags), "[[\"d\",\"note\"],[\"e\",\"%s\"]]",
	    root->id_hex);
	art = ev(3, 101, 30023, tags);
	inv_add(iv, art);
	hexof(3, h);
	snprintf(tags, sizeof(tags), "[[\"a\",\"30023:%s:note\"]]", h);
	reply = ev(4, 102, 1, tags);
	inv_add(iv, reply);
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
	struct inventory	*iv = inv_new(&cfg);
	struct event		*root;
	char			 c[200], tags[512];

	coord(1, "del", c, sizeof(c));
	feed(iv, ev(1, 100, 30617, "[[\"d\",\"del\"]]"));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	root = ev(2, 100, 1621, tags);
	inv_add(iv, root);
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"]]", root->id_hex);
	feed(iv, ev(9, 101, 5, tags));		/* not the author */
	T_EQ_INT(inv_repo(iv, c)->ir_nroots, 1);
	feed(iv, ev(2, 102, 5, tags));
	T_EQ_INT(inv_repo(iv, c)->ir_nroots, 0);
	T_CHECK(!inv_eligible(iv, root->pubkey));
	/* The owner withdraws the announcement. */
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	feed(iv, ev(1, 103, 5, tags));
	T_CHECK(inv_repo(iv, c) == NULL);
	event_destroy(root);
	inv_free(iv);
}

static void
test_provenance_through_quotes_and_address_tags(void)
{
	struct inventory	*iv = inv_new(&cfg);
	struct event		*r1, *r2, *quote, *art, *viaA, *viaQ, *both;
	struct inv_author	*a;
	char			 c[200], tags[512], h[65];

	coord(1, "q", c, sizeof(c));
	feed(iv, ev(1, 100, 30617, "[[\"d\",\"q\"]]"));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	r1 = ev(2, 101, 1621, tags);
	inv_add(iv, r1);
	r2 = ev(3, 101, 1617, tags);
	inv_add(iv, r2);
	/* A quote by id ("q"), then an article under r2 ... */
	snprintf(tags, sizeof(tags), "[[\"q\",\"%s\"]]", r1->id_hex);
	quote = ev(4, 102, 1, tags);
	inv_add(iv, quote);
	snprintf(tags, sizeof(tags), "[[\"d\",\"art\"],[\"E\",\"%s\"]]",
	    r2->id_hex);
	art = ev(5, 103, 30023, tags);
	inv_add(iv, art);
	/* ... reached only through its address, by "A" and by "q". */
	hexof(5, h);
	snprintf(tags, sizeof(tags), "[[\"A\",\"30023:%s:art\"]]", h);
	viaA = ev(6, 104, 1111, tags);
	inv_add(iv, viaA);
	snprintf(tags, sizeof(tags), "[[\"q\",\"30023:%s:art\"]]", h);
	viaQ = ev(7, 105, 1, tags);
	inv_add(iv, viaQ);
	/* One event in both threads. */
	snprintf(tags, sizeof(tags), "[[\"e\",\"%s\"],[\"e\",\"%s\"]]",
	    quote->id_hex, viaQ->id_hex);
	both = ev(8, 106, 7, tags);
	inv_add(iv, both);

	T_EQ_INT(inv_root(iv, r1->id)->rt_ndesc, 2);	/* quote, both */
	T_EQ_INT(inv_root(iv, r2->id)->rt_ndesc, 4);	/* art, A, q, both */
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
collect(void *arg, const uint8_t pk[32])
{
	struct hmap	*m = arg;

	/* A second call for one author would count twice. */
	if (hmap_put(m, pk, 32, (void *)1) != NULL)
		hmap_put(m, "dup", 3, (void *)1);
}

static int
pk_of(int who, uint8_t pk[32])
{
	uint8_t	sk[32];

	sk_of(who, sk);
	return event_pubkey_of(sk, pk);
}

static void
test_maintainers_of_full_repositories_only_and_each_author_once(void)
{
	struct inventory	*iv = inv_new(&cfg);
	struct hmap		 got = HMAP_INIT;
	struct event		*held, *root, *stray;
	char			 c[200], tags[512], m2[65], m3[65];
	uint8_t			 pk[32];

	hexof(2, m2);
	hexof(3, m3);
	/* Owner 1 names maintainer 2 and lists itself too. */
	snprintf(tags, sizeof(tags), "[[\"d\",\"full\"],[\"maintainers\","
	    "\"%s\"]]", m2);
	feed(iv, ev(1, 100, 30617, tags));
	/* A StateOnly repository (held in purgatory) naming 3. */
	snprintf(tags, sizeof(tags), "[[\"d\",\"held\"],[\"maintainers\","
	    "\"%s\"]]", m3);
	held = ev(4, 100, 30617, tags);
	inv_add_stateonly(iv, held);
	/* The owner also opens an issue; 5 writes only elsewhere. */
	coord(1, "full", c, sizeof(c));
	snprintf(tags, sizeof(tags), "[[\"a\",\"%s\"]]", c);
	root = ev(1, 101, 1621, tags);
	inv_add(iv, root);
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

int
main(void)
{
	char	err[256];

	setenv("NGIT_DOMAIN", "grasp.example.com", 1);
	if (config_load(&cfg, NULL, err, sizeof(err)) == -1) {
		printf("not ok - config: %s\n", err);
		return 1;
	}
	T_RUN(test_announcement_relays_are_canonical_and_exclude_us);
	T_RUN(test_threads_carry_root_provenance_and_participants);
	T_RUN(test_roots_wait_for_their_repository_and_stateonly_is_inert);
	T_RUN(test_descendant_chains_are_bounded);
	T_RUN(test_addressable_descendants_and_their_addresses);
	T_RUN(test_deletions_by_the_author_only);
	T_RUN(test_provenance_through_quotes_and_address_tags);
	T_RUN(test_maintainers_of_full_repositories_only_and_each_author_once);
	config_free(&cfg);
	return t_done();
}
