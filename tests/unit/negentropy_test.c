/*
 * negentropy_test.c: the Negentropy v1 implementation (negentropy.c):
 * varints and bounds, fingerprints and messages byte for byte against
 * vectors made with nostr-tools (tests/unit/vectors/negentropy.json, from
 * tests/interop/gen_neg_vectors.mjs), reconciliation of our client with
 * our server over many set shapes and frame limits, and refusal of
 * malformed messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "buf.h"
#include "event.h"
#include "json.h"
#include "negentropy.h"
#include "t.h"
#include "tunit_rng.h"

#define MAX_ROUNDS 10000 /* a runaway conversation is a failure */

static struct json_doc *vdoc;
static struct json     *vroot;
static char	       *vtext;

/* --- helpers -------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rng(void)
{
	return tunit_rng_next(&rng_state);
}

static void
rand_id(uint8_t id[EVENT_ID_LEN])
{
	uint64_t v;
	int	 i;

	for (i = 0; i < 4; i++) {
		v = rng();
		memcpy(id + 8 * i, &v, 8);
	}
}

static int
load_vectors(void)
{
	const char *path = getenv("GRASPD_NEG_VECTORS");
	char	    err[128];
	size_t	    len;

	if (path == NULL)
		path = "tests/unit/vectors/negentropy.json";
	if ((vtext = t_slurp(path, &len)) == NULL) {
		printf("# cannot read %s\n", path);
		return -1;
	}
	if ((vroot = json_parse(vtext, len, &vdoc, err, sizeof(err))) == NULL) {
		printf("# %s: %s\n", path, err);
		return -1;
	}
	return 0;
}

static int
negentropy_setup(void)
{
	if (load_vectors() == -1)
		printf(
		    "not ok - load_vectors: tests/unit/vectors/negentropy.json"
		    " is missing or unreadable\n");
	return 0;
}

static void
negentropy_cleanup(void)
{
	json_free(vdoc);
	free(vtext);
}

/* Appends the items of one vector part {seed, count, base, spread}. */
static void
add_part(const struct json *part, struct neg_item **items, size_t *n)
{
	const struct json *seed = json_get(part, "seed");
	int64_t		   count = json_get(part, "count")->i;
	int64_t		   base = json_get(part, "base")->i;
	int64_t		   spread = json_get(part, "spread")->i;
	char		   text[128];
	int64_t		   i;
	struct neg_item	  *it;

	*items = reallocarray(*items, *n + (size_t)count + 1, sizeof(**items));
	if (*items == NULL)
		abort();
	for (i = 0; i < count; i++) {
		it = &(*items)[(*n)++];
		snprintf(text, sizeof(text), "%s:%lld", seed->s, (long long)i);
		SHA256((const unsigned char *)text, strlen(text), it->ni_id);
		it->ni_ts = (uint64_t)(base +
		    (it->ni_id[0] * 256 + it->ni_id[1]) % spread);
	}
}

/* The items of a vector set: a list of parts, or of [ts, "id"]. */
static struct neg_item *
vector_items(const struct json *set, int explicit, size_t *n)
{
	struct neg_item	  *items = malloc(sizeof(*items));
	const struct json *e;

	*n = 0;
	if (items == NULL)
		abort();
	for (e = set->child; e != NULL; e = e->next) {
		if (!explicit) {
			add_part(e, &items, n);
			continue;
		}
		items = reallocarray(items, *n + 1, sizeof(*items));
		if (items == NULL)
			abort();
		items[*n].ni_ts = (uint64_t)json_at(e, 0)->i;
		if (hex_decode(json_at(e, 1)->s, json_at(e, 1)->len,
			items[*n].ni_id, EVENT_ID_LEN) == -1)
			abort();
		(*n)++;
	}
	return items;
}

static int
id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, EVENT_ID_LEN);
}

static int
id_cmp_item(const void *a, const void *b)
{
	return memcmp(((const struct neg_item *)a)->ni_id,
	    ((const struct neg_item *)b)->ni_id, EVENT_ID_LEN);
}

/* Sorted, unique copy of ids [from, n) of l, in hex, joined by ','. */
static char *
ids_text(const struct neg_idlist *l, size_t from)
{
	uint8_t(*v)[EVENT_ID_LEN];
	struct buf b = BUF_INIT;
	size_t	   i, n = l->il_n - from;

	if ((v = malloc(n * EVENT_ID_LEN + 1)) == NULL)
		abort();
	if (n > 0)
		memcpy(v, l->il_ids + from, n * EVENT_ID_LEN);
	qsort(v, n, 32, id_cmp);
	buf_adds(&b, "");
	for (i = 0; i < n; i++) {
		if (i > 0 && memcmp(v[i - 1], v[i], EVENT_ID_LEN) == 0)
			continue;
		if (b.b_len)
			buf_addc(&b, ',');
		buf_add_hex(&b, v[i], EVENT_ID_LEN);
	}
	free(v);
	return buf_release(&b, NULL);
}

static char *
json_ids_text(const struct json *arr)
{
	const struct json *e;
	struct buf	   b = BUF_INIT;

	buf_adds(&b, "");
	for (e = arr->child; e != NULL; e = e->next) {
		if (b.b_len)
			buf_addc(&b, ',');
		buf_add(&b, e->s, e->len);
	}
	return buf_release(&b, NULL);
}

/* --- encoding ------------------------------------------------------- */

static void
test_varints_round_trip_in_minimal_msb_first_form(void)
{
	static const struct {
		uint64_t    v;
		const char *hex;
	} known[] = {
		{ 0, "00" },
		{ 1, "01" },
		{ 127, "7f" },
		{ 128, "8100" },
		{ 300, "822c" },
		{ 16383, "ff7f" },
		{ 16384, "818000" },
		{ UINT64_MAX, "81ffffffffffffffff7f" },
	};
	static const uint64_t more[] = { 2, 255, 256, 65535, 1700000000,
		(1ULL << 32) - 1, 1ULL << 32, 1ULL << 56, (1ULL << 63) + 12345,
		UINT64_MAX - 1 };
	struct buf	      b = BUF_INIT, h = BUF_INIT;
	const uint8_t	     *p;
	uint64_t	      v;
	size_t		      i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		buf_reset(&b);
		buf_reset(&h);
		neg_varint_put(&b, known[i].v);
		buf_add_hex(&h, (unsigned char *)b.b_data, b.b_len);
		T_EQ_STR(h.b_data, known[i].hex);
		p = (const uint8_t *)b.b_data;
		T_ASSERT(neg_varint_get(&p, p + b.b_len, &v) == 0);
		T_ASSERT(v == known[i].v);
		T_ASSERT(p == (const uint8_t *)b.b_data + b.b_len);
	}
	for (i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		buf_reset(&b);
		neg_varint_put(&b, more[i]);
		p = (const uint8_t *)b.b_data;
		T_ASSERT(neg_varint_get(&p, p + b.b_len, &v) == 0);
		T_ASSERT(v == more[i]);
		/* Cut short, it must be refused. */
		p = (const uint8_t *)b.b_data;
		T_ASSERT(neg_varint_get(&p, p + b.b_len - 1, &v) == -1);
	}
	buf_free(&b);
	buf_free(&h);
}

static void
test_varints_beyond_64_bits_are_refused(void)
{
	static const uint8_t big[] = { 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
		0x80, 0x80, 0x00 }; /* 2^64 */
	static const uint8_t ff[12] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	const uint8_t	    *p;
	uint64_t	     v;

	p = big;
	T_CHECK(neg_varint_get(&p, big + sizeof(big), &v) == -1);
	p = ff;
	T_CHECK(neg_varint_get(&p, ff + sizeof(ff), &v) == -1);
	p = ff;
	T_CHECK(neg_varint_get(&p, ff, &v) == -1);
}

static void
test_bounds_round_trip_with_delta_timestamps_and_prefixes(void)
{
	struct neg_bound in[40], got;
	struct buf	 b = BUF_INIT, h = BUF_INIT;
	const uint8_t	*p, *end;
	uint64_t	 last_out = 0, last_in = 0;
	size_t		 i;

	memset(in, 0, sizeof(in));
	for (i = 0; i < 34; i++) {
		in[i].nb_ts = 1700000000 + i / 3;
		in[i].nb_len = i % 33;
		rand_id(in[i].nb_id);
		memset(in[i].nb_id + in[i].nb_len, 0, 32 - in[i].nb_len);
	}
	in[34].nb_ts = 0; /* a step back wraps, as the reference's */
	in[35].nb_ts = NEG_TS_INFINITY;
	for (i = 0; i < 36; i++)
		neg_bound_put(&b, &last_out, &in[i]);
	p = (const uint8_t *)b.b_data;
	end = p + b.b_len;
	for (i = 0; i < 36; i++) {
		T_ASSERT(neg_bound_get(&p, end, &last_in, &got) == 0);
		if (i == 34)
			continue;
		T_ASSERT(got.nb_ts == in[i].nb_ts);
		T_ASSERT(got.nb_len == in[i].nb_len);
		T_ASSERT(memcmp(got.nb_id, in[i].nb_id, EVENT_ID_LEN) == 0);
	}
	T_ASSERT(p == end);

	/* Known bytes: delta + 1, then length and prefix; 0 is infinity. */
	last_out = 0;
	buf_reset(&b);
	memset(&in[0], 0, sizeof(in[0]));
	in[0].nb_ts = 5;
	in[0].nb_len = 2;
	in[0].nb_id[0] = 0xab;
	in[0].nb_id[1] = 0xcd;
	neg_bound_put(&b, &last_out, &in[0]);
	in[0].nb_ts = 133;
	in[0].nb_len = 0;
	neg_bound_put(&b, &last_out, &in[0]);
	in[0].nb_ts = NEG_TS_INFINITY;
	neg_bound_put(&b, &last_out, &in[0]);
	buf_add_hex(&h, (unsigned char *)b.b_data, b.b_len);
	T_EQ_STR(h.b_data, "0602abcd8101000000");
	buf_free(&b);
	buf_free(&h);
}

static void
test_malformed_bounds_are_refused(void)
{
	static const uint8_t long_prefix[] = { 0x01, 33 };
	static const uint8_t short_prefix[] = { 0x01, 4, 1, 2, 3 };
	static const uint8_t no_length[] = { 0x05 };
	struct neg_bound     bd;
	const uint8_t	    *p;
	uint64_t	     last = 0;

	p = long_prefix;
	T_CHECK(neg_bound_get(&p, p + sizeof(long_prefix), &last, &bd) == -1);
	p = short_prefix;
	T_CHECK(neg_bound_get(&p, p + sizeof(short_prefix), &last, &bd) == -1);
	p = no_length;
	T_CHECK(neg_bound_get(&p, p + sizeof(no_length), &last, &bd) == -1);
}

/* --- vectors -------------------------------------------------------- */

static void
test_fingerprints_match_nostr_tools(void)
{
	const struct json *v, *set;
	struct neg_item	  *items;
	uint8_t		   fp[NEG_FINGERPRINT_SIZE];
	char		   hex[2 * NEG_FINGERPRINT_SIZE + 1];
	size_t		   n, count = 0;

	T_ASSERT(vroot != NULL);
	for (v = json_get(vroot, "fingerprints")->child; v; v = v->next) {
		int explicit = (set = json_get(v, "items")) != NULL;

		if (!explicit)
			set = json_get(v, "set");
		items = vector_items(set, explicit, &n);
		neg_items_sort(items, &n);
		neg_fingerprint(items, n, fp);
		hex_encode(fp, sizeof(fp), hex);
		T_EQ_STR(hex, json_get(v, "fingerprint")->s);
		free(items);
		count++;
	}
	T_CHECK(count >= 9);
}

static void
test_initial_messages_match_nostr_tools(void)
{
	const struct json *v;
	struct neg_item	  *items;
	struct neg	  *ng;
	struct buf	   out = BUF_INIT;
	char		   err[128];
	size_t		   n;

	T_ASSERT(vroot != NULL);
	for (v = json_get(vroot, "initiate")->child; v; v = v->next) {
		items = vector_items(json_get(v, "set"), 0, &n);
		ng = neg_client_new(items, n, NEG_FRAME_DEFAULT, err,
		    sizeof(err));
		T_ASSERT(ng != NULL);
		buf_reset(&out);
		T_ASSERT(neg_client_initiate(ng, &out) == 0);
		T_EQ_STR(out.b_data, json_get(v, "message")->s);
		/* A second initiate is refused. */
		T_CHECK(neg_client_initiate(ng, &out) == -1);
		neg_free(ng);
	}
	buf_free(&out);
}

static void
test_conversations_match_nostr_tools_step_by_step(void)
{
	const struct json *v, *st, *o;
	struct neg_item	  *items;
	struct neg	  *client, *server;
	struct buf	   out = BUF_INIT;
	char		   err[128], *got, *want;
	size_t		   n, frame, nhave = 0, nneed = 0, steps = 0;
	int		   r;

	T_ASSERT(vroot != NULL);
	for (v = json_get(vroot, "conversations")->child; v; v = v->next) {
		frame = (size_t)json_get(v, "frame_limit")->i;
		items = vector_items(json_get(v, "client"), 0, &n);
		client = neg_client_new(items, n, frame, err, sizeof(err));
		items = vector_items(json_get(v, "server"), 0, &n);
		server = neg_server_new(items, n, frame, err, sizeof(err));
		T_ASSERT(client != NULL && server != NULL);
		buf_reset(&out);
		T_ASSERT(neg_client_initiate(client, &out) == 0);
		st = json_get(v, "steps")->child;
		T_EQ_STR(out.b_data, json_get(st, "in")->s);
		nhave = nneed = 0;
		for (; st != NULL; st = st->next, steps++) {
			const struct json *in = json_get(st, "in");

			o = json_get(st, "out");
			buf_reset(&out);
			buf_adds(&out, "");
			if (strcmp(json_get(st, "role")->s, "server") == 0) {
				T_ASSERT(
				    neg_server_reconcile(server, in->s, in->len,
					&out, err, sizeof(err)) == 0);
				T_EQ_STR(out.b_data, o->s);
				continue;
			}
			r = neg_client_reconcile(client, in->s, in->len, &out,
			    err, sizeof(err));
			T_ASSERT(r == (o->type == JSON_NULL ? 0 : 1));
			if (r == 1)
				T_EQ_STR(out.b_data, o->s);
			got = ids_text(neg_client_have(client), r ? nhave : 0);
			want = json_ids_text(json_get(st, "have"));
			T_EQ_STR(got, want);
			free(got);
			free(want);
			got = ids_text(neg_client_need(client), r ? nneed : 0);
			want = json_ids_text(json_get(st, "need"));
			T_EQ_STR(got, want);
			free(got);
			free(want);
			nhave = neg_client_have(client)->il_n;
			nneed = neg_client_need(client)->il_n;
		}
		neg_free(client);
		neg_free(server);
	}
	T_CHECK(steps >= 14);
	buf_free(&out);
}

/* --- reconciliation between our two sides ---------------------------- */

struct shape {
	const char *name;
	size_t	    common, only_client, only_server;
	uint64_t    spread; /* distinct timestamps */
};

/*
 * Runs client against server until done; checks that have/need are
 * exactly the differences and that no message passes the frame limit.
 */
static int
sync_sets(const struct shape *sh, size_t frame)
{
	struct neg_item		*ci, *si, *all;
	struct neg		*client, *server;
	struct buf		 msg = BUF_INIT, ans = BUF_INIT;
	const struct neg_idlist *have, *need;
	char			 err[128];
	size_t			 nc = sh->common + sh->only_client;
	size_t			 ns = sh->common + sh->only_server;
	size_t			 total = nc + sh->only_server, i, rounds = 0;
	int			 r, ok = 0;

	if ((all = calloc(total + 1, sizeof(*all))) == NULL ||
	    (ci = calloc(nc + 1, sizeof(*ci))) == NULL ||
	    (si = calloc(ns + 1, sizeof(*si))) == NULL)
		abort();
	for (i = 0; i < total; i++) {
		all[i].ni_ts = 1700000000 + rng() % sh->spread;
		rand_id(all[i].ni_id);
	}
	/* all = [common | client only | server only] */
	memcpy(ci, all, nc * sizeof(*all));
	memcpy(si, all, sh->common * sizeof(*all));
	memcpy(si + sh->common, all + nc, sh->only_server * sizeof(*all));
	client = neg_client_new(ci, nc, frame, err, sizeof(err));
	server = neg_server_new(si, ns, frame, err, sizeof(err));
	if (client == NULL || server == NULL) {
		printf("# new: %s\n", err);
		goto done;
	}
	if (neg_client_initiate(client, &msg) == -1)
		goto done;
	for (;;) {
		if (frame && msg.b_len / 2 > frame) {
			printf("# client message of %zu bytes\n",
			    msg.b_len / 2);
			goto done;
		}
		buf_reset(&ans);
		if (neg_server_reconcile(server, msg.b_data, msg.b_len, &ans,
			err, sizeof(err)) == -1) {
			printf("# server: %s\n", err);
			goto done;
		}
		if (frame && ans.b_len / 2 > frame) {
			printf("# server message of %zu bytes\n",
			    ans.b_len / 2);
			goto done;
		}
		buf_reset(&msg);
		r = neg_client_reconcile(client, ans.b_data, ans.b_len, &msg,
		    err, sizeof(err));
		if (r == -1) {
			printf("# client: %s\n", err);
			goto done;
		}
		if (r == 0)
			break;
		if (++rounds > MAX_ROUNDS) {
			printf("# no end after %d rounds\n", MAX_ROUNDS);
			goto done;
		}
	}
	have = neg_client_have(client);
	need = neg_client_need(client);
	if (have->il_n != sh->only_client || need->il_n != sh->only_server) {
		printf("# %s, frame %zu: have %zu (want %zu), need %zu "
		       "(want %zu)\n",
		    sh->name, frame, have->il_n, sh->only_client, need->il_n,
		    sh->only_server);
		goto done;
	}
	/* The lists are sorted: compare with the sorted differences. */
	qsort(all + sh->common, sh->only_client, sizeof(*all), id_cmp_item);
	for (i = 0; i < sh->only_client; i++)
		if (memcmp(have->il_ids[i], all[sh->common + i].ni_id,
			EVENT_ID_LEN))
			goto done;
	qsort(all + nc, sh->only_server, sizeof(*all), id_cmp_item);
	for (i = 0; i < sh->only_server; i++)
		if (memcmp(need->il_ids[i], all[nc + i].ni_id, EVENT_ID_LEN))
			goto done;
	ok = 1;
done:
	if (!ok)
		printf("# failed: %s with frame limit %zu\n", sh->name, frame);
	neg_free(client);
	neg_free(server);
	buf_free(&msg);
	buf_free(&ans);
	free(all);
	return ok;
}

static void
test_reconciliation_finds_exactly_the_differences(void)
{
	static const struct shape shapes[] = {
		{ "both empty", 0, 0, 0, 1 },
		{ "one item, client only", 0, 1, 0, 1 },
		{ "one item, server only", 0, 0, 1, 1 },
		{ "one item each, equal", 1, 0, 0, 1 },
		{ "31 equal", 31, 0, 0, 3 },
		{ "32 vs 33", 32, 0, 1, 2 },
		{ "equal 5000", 5000, 0, 0, 50 },
		{ "disjoint 1 vs 20000", 0, 1, 20000, 1000 },
		{ "disjoint 3000 vs 2500", 0, 3000, 2500, 10 },
		{ "client only 20000", 0, 20000, 0, 200 },
		{ "server only 20000", 0, 0, 20000, 200 },
		{ "overlap 20000, few differences", 19990, 4, 6, 5000 },
		{ "overlap 20000, many differences", 15000, 2500, 2500, 100 },
		{ "one timestamp, 4000 overlap", 3000, 500, 500, 1 },
		{ "two timestamps, 20000 equal", 20000, 0, 0, 2 },
	};
	static const size_t frames[] = { 0, NEG_FRAME_MIN, NEG_FRAME_DEFAULT };
	size_t		    i, j;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		for (j = 0; j < sizeof(frames) / sizeof(frames[0]); j++)
			T_CHECK(sync_sets(&shapes[i], frames[j]));
}

static void
test_random_sizes_reconcile(void)
{
	struct shape sh;
	int	     i;

	for (i = 0; i < 40; i++) {
		sh.name = "random";
		sh.common = rng() % (i < 30 ? 300 : 8000);
		sh.only_client = rng() % (i % 3 ? 50 : 2000);
		sh.only_server = rng() % (i % 4 ? 50 : 2000);
		sh.spread = 1 + rng() % (i % 2 ? 5 : 100000);
		T_CHECK(sync_sets(&sh, i % 2 ? NEG_FRAME_MIN : 0));
	}
}

/* --- bounded, hostile input ------------------------------------------ */

static struct neg *
small_set(int client, size_t n)
{
	struct neg_item *items = calloc(n + 1, sizeof(*items));
	char		 err[128];
	size_t		 i;

	if (items == NULL)
		abort();
	for (i = 0; i < n; i++) {
		items[i].ni_ts = 1000 + i / 4;
		rand_id(items[i].ni_id);
	}
	return client ?
	    neg_client_new(items, n, NEG_FRAME_MIN, err, sizeof(err)) :
	    neg_server_new(items, n, NEG_FRAME_MIN, err, sizeof(err));
}

static void
test_malformed_messages_are_refused(void)
{
	static const char *bad[] = {
		"",	/* empty */
		"6",	/* odd length */
		"61zz", /* not hex */
		"61AB", /* uppercase */
		"5f",	/* version byte below 0x60 */
		"70",	/* version byte above 0x6f */
		"61"
		"01", /* bound without its length */
		"61"
		"0121", /* prefix of 33 bytes */
		"61"
		"0104aabb", /* prefix cut short */
		"61"
		"0000", /* no mode */
		"61"
		"000003", /* mode 3 does not exist */
		"61"
		"000001"
		"00112233", /* fingerprint cut short */
		"61"
		"000002", /* id list without a count */
		"61"
		"00000202"
		"00", /* two ids promised, none given */
		"61"
		"000002"
		"8fffffffffffffffff7f", /* count overflows */
		"61"
		"ffffffffffffffffffff7f", /* timestamp overflows */
	};
	struct neg *server = small_set(0, 100), *client = small_set(1, 100);
	struct buf  out = BUF_INIT;
	char	    err[128];
	size_t	    i;

	T_ASSERT(server != NULL && client != NULL);
	T_ASSERT(neg_client_initiate(client, &out) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&out);
		err[0] = '\0';
		if (neg_server_reconcile(server, bad[i], strlen(bad[i]), &out,
			err, sizeof(err)) != -1 ||
		    out.b_len != 0 || err[0] == '\0') {
			printf("# server accepted bad message %zu\n", i);
			T_CHECK(0);
		}
		if (neg_client_reconcile(client, bad[i], strlen(bad[i]), &out,
			err, sizeof(err)) != -1 ||
		    out.b_len != 0) {
			printf("# client accepted bad message %zu\n", i);
			T_CHECK(0);
		}
	}
	neg_free(server);
	neg_free(client);
	buf_free(&out);
}

static void
test_unsupported_version_gets_the_version_message(void)
{
	struct neg *server = small_set(0, 50), *client = small_set(1, 50);
	struct buf  out = BUF_INIT;
	char	    err[128];

	T_ASSERT(server != NULL && client != NULL);
	/* A future version 2 message: the server answers "I speak v1". */
	T_ASSERT(neg_server_reconcile(server, "62000001", 8, &out, err,
		     sizeof(err)) == 0);
	T_EQ_STR(out.b_data, "61");
	/* The initiator cannot downgrade: it is an error. */
	buf_reset(&out);
	T_ASSERT(neg_client_initiate(client, &out) == 0);
	buf_reset(&out);
	T_CHECK(neg_client_reconcile(client, "62", 2, &out, err, sizeof(err)) ==
	    -1);
	T_CHECK(strstr(err, "version") != NULL);
	/* Roles are not mixed up. */
	T_CHECK(neg_server_reconcile(client, "61", 2, &out, err, sizeof(err)) ==
	    -1);
	T_CHECK(neg_client_initiate(server, &out) == -1);
	T_CHECK(neg_client_reconcile(server, "61", 2, &out, err, sizeof(err)) ==
	    -1);
	neg_free(server);
	neg_free(client);
	buf_free(&out);
}

static void
test_random_and_mutated_messages_never_crash(void)
{
	struct neg   *server = small_set(0, 3000), *client = small_set(1, 500);
	struct neg   *peer = small_set(1, 2000);
	struct buf    good = BUF_INIT, out = BUF_INIT, m = BUF_INIT;
	unsigned char raw[512];
	char	      err[128];
	size_t	      i, j, len;

	T_ASSERT(server != NULL && client != NULL && peer != NULL);
	T_ASSERT(neg_client_initiate(client, &out) == 0);
	T_ASSERT(neg_client_initiate(peer, &good) == 0);
	for (i = 0; i < 20000; i++) {
		buf_reset(&m);
		if (i % 2) {
			len = rng() % sizeof(raw);
			for (j = 0; j < len; j++)
				raw[j] = rng() & 0xff;
			raw[0] = i % 4 == 1 ? NEG_PROTOCOL_V1 : raw[0];
			buf_add_hex(&m, raw, len);
		} else {
			/* A valid message with a few bytes changed. */
			buf_add(&m, good.b_data, good.b_len);
			for (j = 0; j < 1 + rng() % 4; j++) {
				size_t k = 2 + rng() % (m.b_len - 2);

				m.b_data[k] = "0123456789abcdef"[rng() % 16];
			}
			if (i % 8 == 0)
				m.b_len = 2 + rng() % (m.b_len - 2) / 2 * 2;
		}
		buf_reset(&out);
		(void)neg_server_reconcile(server, m.b_data, m.b_len, &out, err,
		    sizeof(err));
		T_ASSERT(out.b_len / 2 <= NEG_FRAME_MIN);
		buf_reset(&out);
		(void)neg_client_reconcile(client, m.b_data, m.b_len, &out, err,
		    sizeof(err));
		T_ASSERT(out.b_len / 2 <= NEG_FRAME_MIN);
	}
	neg_free(server);
	neg_free(client);
	neg_free(peer);
	buf_free(&good);
	buf_free(&out);
	buf_free(&m);
}

static void
test_sets_and_frame_limits_are_capped(void)
{
	struct neg_item *items;
	char		 err[128];

	items = calloc(NEG_MAX_ITEMS + 1, sizeof(*items));
	T_ASSERT(items != NULL);
	T_CHECK(neg_server_new(items, NEG_MAX_ITEMS + 1, 0, err, sizeof(err)) ==
	    NULL);
	T_CHECK(strstr(err, "too many") != NULL);
	items = calloc(1, sizeof(*items));
	T_CHECK(neg_client_new(items, 1, NEG_FRAME_MIN - 1, err, sizeof(err)) ==
	    NULL);
	items = calloc(1, sizeof(*items));
	T_CHECK(neg_client_new(items, 1, 100, err, sizeof(err)) == NULL);
}

static void
test_items_are_sorted_and_deduplicated(void)
{
	struct neg_item it[6];
	size_t		n = 6;

	memset(it, 0, sizeof(it));
	it[0].ni_ts = 9;
	it[1].ni_ts = 3;
	it[1].ni_id[0] = 2;
	it[2].ni_ts = 3;
	it[2].ni_id[0] = 1;
	it[3] = it[1];
	it[4].ni_ts = 3;
	it[4].ni_id[31] = 1;
	it[5] = it[0];
	neg_items_sort(it, &n);
	T_EQ_INT(n, 4);
	T_CHECK(it[0].ni_ts == 3 && it[0].ni_id[31] == 1);
	T_CHECK(it[1].ni_ts == 3 && it[1].ni_id[0] == 1);
	T_CHECK(it[2].ni_ts == 3 && it[2].ni_id[0] == 2);
	T_CHECK(it[3].ni_ts == 9);
}

static const struct t_case cases[] = {
	T_CASE(test_varints_round_trip_in_minimal_msb_first_form),
	T_CASE(test_varints_beyond_64_bits_are_refused),
	T_CASE(test_bounds_round_trip_with_delta_timestamps_and_prefixes),
	T_CASE(test_malformed_bounds_are_refused),
	T_CASE(test_fingerprints_match_nostr_tools),
	T_CASE(test_initial_messages_match_nostr_tools),
	T_CASE(test_conversations_match_nostr_tools_step_by_step),
	T_CASE(test_reconciliation_finds_exactly_the_differences),
	T_CASE(test_random_sizes_reconcile),
	T_CASE(test_malformed_messages_are_refused),
	T_CASE(test_unsupported_version_gets_the_version_message),
	T_CASE(test_random_and_mutated_messages_never_crash),
	T_CASE(test_sets_and_frame_limits_are_capped),
	T_CASE(test_items_are_sorted_and_deduplicated),
};

T_MAIN_WITH(cases, negentropy_setup, negentropy_cleanup, 0)
