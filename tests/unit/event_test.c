/*
 * event_test.c: event parsing, canonical serialization, id and signature
 * checks against the shared vectors signed by nostr-tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>

#include "event.h"
#include "json.h"
#include "t.h"

static const uint8_t sk1[SECKEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
	31, 32 };

/* Every vector: valid ones parse, verify and re-serialize to the same
 * canonical id; invalid ones fail somewhere in parse/id/sig. */
static void
test_vectors_from_nostr_tools(void)
{
	struct event_keycache *kc = event_keycache_new();
	char		       path[512], *line = NULL, err[256];
	size_t		       cap = 0, nvalid = 0, ninvalid = 0;
	ssize_t		       n;
	FILE		      *f;

	snprintf(path, sizeof(path), "%s/events.jsonl", t_vectors_dir());
	T_ASSERT((f = fopen(path, "r")) != NULL);
	while ((n = getline(&line, &cap, f)) > 0) {
		struct json_doc *doc;
		struct json	*root, *valid, *name, *evj;
		struct event	*ev, copy;
		uint8_t		 id[EVENT_ID_LEN];
		int		 ok;

		if (n <= 1)
			continue;
		root = json_parse(line, (size_t)n, &doc, err, sizeof(err));
		T_ASSERT(root != NULL);
		valid = json_get(root, "valid");
		name = json_get(root, "name");
		evj = json_get(root, "event");
		ev = event_from_json(evj, err, sizeof(err));
		ok = ev != NULL && event_check_id(ev) && event_check_sig(ev);
		/* The key cache answers as the check does, cold or warm. */
		if (ev != NULL) {
			T_EQ_INT(event_check_sig_cached(ev, kc),
			    event_check_sig(ev));
			T_EQ_INT(event_check_sig_cached(ev, kc),
			    event_check_sig(ev));
		}
		if (valid->type == JSON_TRUE) {
			nvalid++;
			if (!ok) {
				char m[300];
				snprintf(m, sizeof(m),
				    "valid vector %s "
				    "rejected (%s)",
				    name->s, ev ? "id/sig" : err);
				t_fail_at(__FILE__, __LINE__, m);
			} else {
				/* Our stored JSON parses back to the same
				 * event. */
				struct event *again = event_parse(ev->json,
				    ev->json_len, err, sizeof(err));
				T_CHECK(again != NULL &&
				    event_check_id(again) &&
				    event_check_sig(again));
				event_destroy(again);
				/* The id from the fields alone is the same. */
				copy = *ev;
				copy.json_tags_len = 0;
				event_compute_id(&copy, id);
				T_CHECK(memcmp(id, ev->id, EVENT_ID_LEN) == 0);
			}
		} else {
			ninvalid++;
			if (ok) {
				char m[300];
				snprintf(m, sizeof(m),
				    "invalid vector %s "
				    "accepted",
				    name->s);
				t_fail_at(__FILE__, __LINE__, m);
			}
		}
		event_destroy(ev);
		json_free(doc);
	}
	free(line);
	fclose(f);
	event_keycache_free(kc);
	T_CHECK(nvalid >= 30);
	T_CHECK(ninvalid >= 15);
}

static void
test_canonical_escaping_of_controls_and_del(void)
{
	struct event *ev;
	const char   *want = "\"content\":\"a\\u0000b\\u0001\\n\\t\\\"\\\\"
			     "\x7f/\xc3\xa9\"";

	ev = event_new_signed(sk1, 1700000000, 1, "[[\"t\",\"x\\u001fy\"]]",
	    NULL);
	T_ASSERT(ev != NULL);
	T_CHECK(strstr(ev->json, "[[\"t\",\"x\\u001fy\"]]") != NULL);
	event_destroy(ev);

	/* Content with an embedded NUL must survive a round trip. */
	ev = event_parse(
	    "{\"id\":\"00000000000000000000000000000000000000"
	    "00000000000000000000000000\",\"pubkey\":\"0000000000000000000000"
	    "000000000000000000000000000000000000000000\",\"created_at\":1,"
	    "\"kind\":1,\"tags\":[],\"content\":\"a\\u0000b\\u0001\\n\\t\\\""
	    "\\\\\x7f\\/\\u00e9\",\"sig\":\""
	    "0000000000000000000000000000000"
	    "000000000000000000000000000000000000000000000000000000000000000"
	    "0000000000000000000000000000000000\"}",
	    0, NULL, 0);
	T_CHECK(ev == NULL); /* length 0 input */
	{
		const char *s =
		    "{\"id\":\"0000000000000000000000000000000000"
		    "000000000000000000000000000000\",\"pubkey\":\"00000000000"
		    "00000000000000000000000000000000000000000000000000000\","
		    "\"created_at\":1,\"kind\":1,\"tags\":[],\"content\":"
		    "\"a\\u0000b\\u0001\\n\\t\\\"\\\\\x7f\\/\\u00e9\",\"sig\":"
		    "\"00000000000000000000000000000000000000000000000000000000"
		    "000000000000000000000000000000000000000000000000000000000"
		    "000000000000000\"}";
		char err[128];

		ev = event_parse(s, strlen(s), err, sizeof(err));
		T_ASSERT(ev != NULL);
		T_EQ_INT(ev->content.len, 12);
		T_CHECK(strstr(ev->json, want) != NULL);
		event_destroy(ev);
	}
}

static void
test_signed_event_verifies(void)
{
	struct event *ev, *again;
	uint8_t	      pk[PUBKEY_LEN];
	char	      err[256], *p;

	ev = event_new_signed(sk1, 1700000000, 1621,
	    "[[\"a\",\"30617:aa:repo\"],[\"subject\",\"hi\"]]", "body\n");
	T_ASSERT(ev != NULL);
	T_CHECK(event_check_id(ev));
	T_CHECK(event_check_sig(ev));
	T_ASSERT(event_pubkey_of(sk1, pk) == 0);
	T_CHECK(memcmp(pk, ev->pubkey, PUBKEY_LEN) == 0);
	/* The text changed on the way: the id is the stored text's. */
	T_ASSERT((p = strstr(ev->json, "body")) != NULL);
	*p = 'B';
	T_ASSERT((again = event_parse(ev->json, ev->json_len, err,
		      sizeof(err))) != NULL);
	T_CHECK(!event_check_id(again));
	event_destroy(again);
	/* Without that text (the feed's view of a row) the fields count. */
	ev->json_tags_len = ev->json_content_len = 0;
	T_CHECK(event_check_id(ev));
	ev->content.s[0] = 'B';
	T_CHECK(!event_check_id(ev));
	event_destroy(ev);
}

/* The set event_check_sig_cached() keeps a key in (event.c). */
static size_t
keyset_of(const uint8_t pk[PUBKEY_LEN])
{
	return ((size_t)pk[0] << 8 | pk[1]) % EVENT_KEYCACHE_SETS;
}

/*
 * Derives keys (their first byte tag) until want of them share one set of
 * the cache; their secret keys into sk, the set into *set.  0, or -1.
 */
static int
keys_in_one_set(uint8_t tag, size_t want, uint8_t sk[][SECKEY_LEN], size_t *set)
{
	static size_t count[EVENT_KEYCACHE_SETS];
	uint8_t	      cand[SECKEY_LEN], pk[PUBKEY_LEN];
	size_t	      i, found = 0, n;

	memset(count, 0, sizeof(count));
	for (n = 0; n < 2; n++)
		for (i = 0; i < 4096; i++) {
			memset(cand, 0, SECKEY_LEN);
			cand[0] = tag;
			cand[30] = (uint8_t)(i >> 8);
			cand[31] = (uint8_t)i;
			if (event_pubkey_of(cand, pk) == -1)
				return -1;
			if (n == 0) {
				/* First pass: which set fills first. */
				if (++count[keyset_of(pk)] == want) {
					*set = keyset_of(pk);
					break;
				}
			} else if (keyset_of(pk) == *set) {
				memcpy(sk[found++], cand, SECKEY_LEN);
				if (found == want)
					return 0;
			}
		}
	return -1;
}

/*
 * Three authors whose keys share one set of the cache, one more than it
 * holds: each one's events verify however the others pushed it out, a
 * signature by a key it holds is still checked, and a key that does not
 * parse is refused and takes no place.
 */
static void
test_key_cache_set_overflows(void)
{
	struct event_keycache *kc = event_keycache_new();
	uint8_t		       sks[3][SECKEY_LEN];
	struct event	      *ev[3], *bad;
	size_t		       j, set;
	int		       round;

	T_ASSERT(keys_in_one_set(1, 3, sks, &set) == 0);
	for (j = 0; j < 3; j++)
		T_ASSERT((ev[j] = event_new_signed(sks[j], 1700000000, 1, "[]",
			      "x")) != NULL);
	/* A, B, C, A, B, C...: with two ways each is a miss, and each hit. */
	for (round = 0; round < 3; round++)
		for (j = 0; j < 3; j++)
			T_CHECK(event_check_sig_cached(ev[j], kc));
	T_EQ_INT(event_keycache_parses(kc), 9);
	T_CHECK(event_check_sig_cached(ev[2], kc));
	T_CHECK(event_check_sig_cached(ev[2], kc));
	T_EQ_INT(event_keycache_parses(kc), 9);
	/* B's key held, A's signature under it: refused. */
	T_ASSERT(
	    (bad = event_new_signed(sks[1], 1700000000, 1, "[]", "x")) != NULL);
	memcpy(bad->sig, ev[0]->sig, sizeof(bad->sig));
	T_CHECK(event_check_sig_cached(ev[1], kc));
	T_CHECK(!event_check_sig_cached(bad, kc));
	T_CHECK(!event_check_sig(bad));
	/* An x that is no point's (0 is not on the curve) takes no way. */
	memset(bad->pubkey, 0, PUBKEY_LEN);
	T_CHECK(!event_check_sig_cached(bad, kc));
	for (j = 0; j < 3; j++)
		T_CHECK(event_check_sig_cached(ev[j], kc));
	event_destroy(bad);
	for (j = 0; j < 3; j++)
		event_destroy(ev[j]);
	event_keycache_free(kc);
}

/*
 * A hostile client's events under keys that are no point's, all in the
 * set two honest authors' keys sit in: each is refused and parsed, and
 * the honest keys stay kept (no parse for their next events).
 */
static void
test_key_cache_keeps_keys_past_bad_ones(void)
{
	struct event_keycache *kc = event_keycache_new();
	secp256k1_context     *ctx =
	    secp256k1_context_create(SECP256K1_CONTEXT_NONE);
	secp256k1_xonly_pubkey pt;
	uint8_t		       sks[2][SECKEY_LEN];
	struct event	      *ev[2], *bad;
	size_t		       i, j, set, nbad = 0;
	uint64_t	       parses;

	T_ASSERT(ctx != NULL);
	T_ASSERT(keys_in_one_set(2, 2, sks, &set) == 0);
	for (j = 0; j < 2; j++) {
		T_ASSERT((ev[j] = event_new_signed(sks[j], 1700000000, 1, "[]",
			      "x")) != NULL);
		T_CHECK(event_check_sig_cached(ev[j], kc));
	}
	T_EQ_INT(event_keycache_parses(kc), 2);
	T_ASSERT(
	    (bad = event_new_signed(sks[0], 1700000000, 1, "[]", "x")) != NULL);
	/* Keys of that set that are no point's x: about half of them. */
	for (i = 0; i < 64; i++) {
		memcpy(bad->pubkey, ev[0]->pubkey, PUBKEY_LEN);
		bad->pubkey[31] ^= (uint8_t)(i + 1);
		if (secp256k1_xonly_pubkey_parse(ctx, &pt, bad->pubkey))
			continue;
		T_EQ_INT(keyset_of(bad->pubkey), set);
		T_CHECK(!event_check_sig_cached(bad, kc));
		nbad++;
	}
	T_CHECK(nbad >= 8);
	T_EQ_INT(event_keycache_parses(kc), 2 + nbad);
	parses = event_keycache_parses(kc);
	for (j = 0; j < 2; j++)
		T_CHECK(event_check_sig_cached(ev[j], kc));
	T_EQ_INT(event_keycache_parses(kc), parses);
	event_destroy(bad);
	for (j = 0; j < 2; j++)
		event_destroy(ev[j]);
	secp256k1_context_destroy(ctx);
	event_keycache_free(kc);
}

static void
test_strict_field_types_are_refused(void)
{
	static const char *bad[] = {
		"[]",
		"{\"kind\":1}",
		"{\"id\":\"x\",\"pubkey\":\"x\",\"created_at\":1,\"kind\":1,"
		"\"tags\":[],\"content\":\"\",\"sig\":\"x\"}",
	};
	char   err[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct event *ev =
		    event_parse(bad[i], strlen(bad[i]), err, sizeof(err));
		T_CHECK(ev == NULL);
		T_CHECK(strncmp(err, "invalid: ", 9) == 0);
		event_destroy(ev);
	}
}

static void
test_hex_is_lowercase_and_exact(void)
{
	static const char *bad[] = { "0G", "0A", "g0",
		"\x80"
		"0",
		" 0", "0\xff" };
	uint8_t		   out[2];
	char		   hex[5];
	size_t		   i;

	T_EQ_INT(hex_decode("09af", 4, out, 2), 0);
	T_EQ_INT(out[0], 0x09);
	T_EQ_INT(out[1], 0xaf);
	hex_encode(out, 2, hex);
	T_EQ_STR(hex, "09af");
	T_EQ_INT(hex_decode("09a", 3, out, 2), -1);
	T_EQ_INT(hex_decode("09afe", 5, out, 2), -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		T_EQ_INT(hex_decode(bad[i], 2, out, 1), -1);
}

/*
 * An id's 64 digits (what hex_decode() reads 16 at a time where it can):
 * every byte value at every place is taken exactly when it is a
 * lowercase hex digit, and lands in the right half of the right byte.
 */
static void
test_hex_every_byte_at_every_place(void)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t		  in[33], out[33], want[33];
	char		  hex[67];
	size_t		  pos, i, wrong = 0, n;
	int		  c;
	const char	 *d;

	for (i = 0; i < 33; i++)
		in[i] = (uint8_t)(i * 37 + 11);
	for (n = 32; n <= 33; n++) { /* 33: a tail past the wide part */
		hex_encode(in, n, hex);
		T_EQ_INT(hex_decode(hex, 2 * n, out, n), 0);
		T_CHECK(memcmp(in, out, n) == 0);
		for (pos = 0; pos < 2 * n; pos++) {
			for (c = 0; c < 256; c++) {
				hex_encode(in, n, hex);
				hex[pos] = (char)c;
				memcpy(want, in, n);
				d = c ? strchr(digits, c) : NULL;
				if (d != NULL)
					want[pos / 2] = pos % 2 ?
					    (uint8_t)((want[pos / 2] & 0xf0) |
						(d - digits)) :
					    (uint8_t)((want[pos / 2] & 0x0f) |
						(d - digits) << 4);
				if (hex_decode(hex, 2 * n, out, n) !=
					(d ? 0 : -1) ||
				    (d && memcmp(out, want, n) != 0))
					wrong++;
			}
		}
	}
	T_EQ_INT(wrong, 0);
}

static void
test_tag_helpers(void)
{
	struct event *ev;

	ev = event_new_signed(sk1, 10, 30617,
	    "[[\"x\"],[\"d\",\"repo\"],"
	    "[\"d\",\"other\"],[\"expiration\",\"12345\"]]",
	    "");
	T_ASSERT(ev != NULL);
	T_EQ_STR(event_d(ev), "repo");
	T_EQ_INT(event_expiration(ev), 12345);
	T_CHECK(event_tag_value(ev, "x") == NULL);
	T_EQ_INT(event_kind_class(30617), KIND_ADDRESSABLE);
	T_EQ_INT(event_kind_class(0), KIND_REPLACEABLE);
	T_EQ_INT(event_kind_class(3), KIND_REPLACEABLE);
	T_EQ_INT(event_kind_class(10002), KIND_REPLACEABLE);
	T_EQ_INT(event_kind_class(20001), KIND_EPHEMERAL);
	T_EQ_INT(event_kind_class(1621), KIND_REGULAR);
	event_destroy(ev);
	ev = event_new_signed(sk1, 10, 30617, "[]", "");
	T_ASSERT(ev != NULL);
	T_EQ_STR(event_d(ev), "");
	T_EQ_INT(event_expiration(ev), 0);
	event_destroy(ev);
}

/* NIP-01 "a" coordinates: kind:pubkey:d, d may hold ':' or be absent. */
static void
test_coordinates_split_at_the_first_two_colons(void)
{
	const char *pk = "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558"
			 "472c4eb9aaaefa459d";
	char	    c[256];
	uint8_t	    key[PUBKEY_LEN], want[PUBKEY_LEN];
	uint32_t    kind = 0;
	const char *d = NULL;
	size_t	    dlen = 99;

	T_ASSERT(hex_decode(pk, PUBKEY_HEX_LEN, want, PUBKEY_LEN) == 0);
	snprintf(c, sizeof(c), "30617:%s:my:repo", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), 0);
	T_EQ_INT((int)kind, 30617);
	T_CHECK(memcmp(key, want, PUBKEY_LEN) == 0);
	T_CHECK(dlen == 7 && memcmp(d, "my:repo", 7) == 0);
	/* "kind:pubkey" as a forward reference has an empty d. */
	snprintf(c, sizeof(c), "30617:%s", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), 0);
	T_CHECK(dlen == 0);
	/* Refused: kind not a number or past 65535, pubkey not 64 hex. */
	snprintf(c, sizeof(c), "3o617:%s:r", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), -1);
	snprintf(c, sizeof(c), "65536:%s:r", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), -1);
	snprintf(c, sizeof(c), ":%s:r", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), -1);
	snprintf(c, sizeof(c), "30617:%.63s:r", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), -1);
	snprintf(c, sizeof(c), "30617:%sx:r", pk);
	T_EQ_INT(coord_parse(c, strlen(c), &kind, key, &d, &dlen), -1);
	T_EQ_INT(coord_parse("30617", 5, &kind, key, &d, &dlen), -1);
}

static const struct t_case cases[] = {
	T_CASE(test_vectors_from_nostr_tools),
	T_CASE(test_canonical_escaping_of_controls_and_del),
	T_CASE(test_signed_event_verifies),
	T_CASE(test_key_cache_set_overflows),
	T_CASE(test_key_cache_keeps_keys_past_bad_ones),
	T_CASE(test_strict_field_types_are_refused),
	T_CASE(test_tag_helpers),
	T_CASE(test_hex_is_lowercase_and_exact),
	T_CASE(test_hex_every_byte_at_every_place),
	T_CASE(test_coordinates_split_at_the_first_two_colons),
};

T_MAIN(cases)
