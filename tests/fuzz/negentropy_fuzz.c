/*
 * negentropy_fuzz.c: libFuzzer harness for common/negentropy.c, the
 * NIP-77 set reconciliation relayd answers NEG-OPEN / NEG-MSG with (every
 * message from a client) and syncd will run as a client (every answer
 * from a remote relay).
 *
 * Each input is used four ways:
 *  - the varint and bound decoders over the bytes: every value read is
 *    written back and reads the same (a bound with the same timestamp,
 *    prefix length and prefix);
 *  - as a message (hex-encoded, and also taken as hex text as it is) to a
 *    server over a fixed small set, with and without a frame limit: an
 *    answer is even-length lowercase hex within the limit, starting with
 *    the version byte; a refusal has a reason and writes nothing;
 *  - as the server's answer to a client that has initiated: a refusal has
 *    a reason; every id the client says it has is in its set; when it is
 *    done its lists are sorted and free of repeats;
 *  - when the first byte has bit 1 set, as two subsets of a larger set
 *    (the other bytes, two bits per item: client, server):
 *    a whole reconciliation between honest client and server ends within
 *    a bounded number of rounds, every message within the frame limit,
 *    with have exactly client minus server and need exactly server minus
 *    client.
 */
#include "event.h"
#include "fuzz.h"
#include "negentropy.h"

/* Items of the server's fixed set in the message cases. */
#define FIXED_ITEMS 48
/* Largest set of the whole-reconciliation case: four items per byte. */
#define MAX_ITEMS   96
/* Rounds a reconciliation of MAX_ITEMS may take, generously. */
#define MAX_ROUNDS  200

static void
make_item(size_t i, struct neg_item *it)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL * (i + 1);
	size_t	 k;

	/* Three items share each timestamp, so ids decide their order. */
	it->ni_ts = 1700000000 + i / 3;
	for (k = 0; k < NEG_ID_SIZE; k++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ULL;
		it->ni_id[k] = (uint8_t)(x >> 56);
	}
}

static struct neg_item *
make_items(size_t n)
{
	struct neg_item *items;
	size_t		 i;

	if ((items = calloc(n ? n : 1, sizeof(*items))) == NULL)
		abort();
	for (i = 0; i < n; i++)
		make_item(i, &items[i]);
	return items;
}

static void
decoders(const uint8_t *data, size_t size)
{
	const uint8_t	*p, *q, *end = data + size;
	struct neg_bound b, b2;
	struct buf	 out = BUF_INIT;
	uint64_t	 v, v2, last = 0, wl, rl;

	for (p = data; p < end;) {
		q = p;
		if (neg_varint_get(&p, end, &v) == -1)
			break;
		FUZZ_ASSERT(p > q && p <= end);
		buf_reset(&out);
		neg_varint_put(&out, v);
		q = (const uint8_t *)out.b_data;
		FUZZ_ASSERT(neg_varint_get(&q, q + out.b_len, &v2) == 0);
		FUZZ_ASSERT(
		    v2 == v && q == (const uint8_t *)out.b_data + out.b_len);
	}
	for (p = data; p < end;) {
		q = p;
		memset(&b, 0, sizeof(b));
		if (neg_bound_get(&p, end, &last, &b) == -1)
			break;
		FUZZ_ASSERT(p > q && p <= end && b.nb_len <= NEG_ID_SIZE);
		buf_reset(&out);
		wl = rl = 0;
		neg_bound_put(&out, &wl, &b);
		q = (const uint8_t *)out.b_data;
		memset(&b2, 0, sizeof(b2));
		FUZZ_ASSERT(neg_bound_get(&q, q + out.b_len, &rl, &b2) == 0);
		FUZZ_ASSERT(b2.nb_ts == b.nb_ts && b2.nb_len == b.nb_len &&
		    memcmp(b2.nb_id, b.nb_id, b.nb_len) == 0);
	}
	buf_free(&out);
}

static int
is_lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
			(s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * One server per frame limit for the whole run, as relayd keeps one per
 * NEG-OPEN for every NEG-MSG that follows.
 */
static void
server_answer(const char *hex, size_t hexlen, int limited)
{
	static struct neg *ng[2];
	struct buf	   out = BUF_INIT;
	size_t		   frame = limited ? NEG_FRAME_MIN : 0;
	char		   err[256];

	if (ng[limited] == NULL)
		ng[limited] = neg_server_new(make_items(FIXED_ITEMS),
		    FIXED_ITEMS, frame, err, sizeof(err));
	FUZZ_ASSERT(ng[limited] != NULL);
	err[0] = '\0';
	if (neg_server_reconcile(ng[limited], hex, hexlen, &out, err,
		sizeof(err)) == -1)
		FUZZ_ASSERT(err[0] != '\0' && out.b_len == 0);
	else {
		FUZZ_ASSERT(out.b_len >= 2 && out.b_len % 2 == 0);
		FUZZ_ASSERT(is_lower_hex(out.b_data, out.b_len));
		FUZZ_ASSERT(frame == 0 || out.b_len / 2 <= frame);
		FUZZ_ASSERT(strncmp(out.b_data, "61", 2) == 0);
	}
	buf_free(&out);
}

static int
in_set(const uint8_t *id, const struct neg_item *items, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp(items[i].ni_id, id, NEG_ID_SIZE) == 0)
			return 1;
	return 0;
}

static void
check_sorted(const struct neg_idlist *il)
{
	size_t i;

	for (i = 1; i < il->il_n; i++)
		FUZZ_ASSERT(
		    memcmp(il->il_ids[i - 1], il->il_ids[i], NEG_ID_SIZE) < 0);
}

static void
client_answer(const char *hex, size_t hexlen)
{
	struct neg_item		 mine[FIXED_ITEMS / 2], *items;
	struct neg		*ng;
	struct buf		 out = BUF_INIT;
	const struct neg_idlist *have;
	char			 err[256];
	size_t			 i;
	int			 r;

	/* Every other item of the server's set. */
	for (i = 0; i < FIXED_ITEMS; i += 2)
		make_item(i, &mine[i / 2]);
	if ((items = malloc(sizeof(mine))) == NULL)
		abort();
	memcpy(items, mine, sizeof(mine));
	ng = neg_client_new(items, FIXED_ITEMS / 2, 0, err, sizeof(err));
	FUZZ_ASSERT(ng != NULL);
	FUZZ_ASSERT(neg_client_initiate(ng, &out) == 0);
	buf_reset(&out);
	err[0] = '\0';
	r = neg_client_reconcile(ng, hex, hexlen, &out, err, sizeof(err));
	if (r == -1)
		FUZZ_ASSERT(err[0] != '\0');
	else if (r == 1)
		FUZZ_ASSERT(out.b_len >= 2 && out.b_len % 2 == 0 &&
		    is_lower_hex(out.b_data, out.b_len));
	else
		FUZZ_ASSERT(out.b_len == 0);
	have = neg_client_have(ng);
	for (i = 0; i < have->il_n; i++)
		FUZZ_ASSERT(in_set(have->il_ids[i], mine, FIXED_ITEMS / 2));
	if (r == 0) {
		check_sorted(have);
		check_sorted(neg_client_need(ng));
	}
	neg_free(ng);
	buf_free(&out);
}

/* The ids of items whose code has bit want set and bit not clear. */
static void
expect(const struct neg_item *all, const uint8_t *code, size_t n, int want,
    int not, const struct neg_idlist *got)
{
	uint8_t(*ids)[NEG_ID_SIZE];
	size_t i, k = 0;

	if ((ids = calloc(n ? n : 1, NEG_ID_SIZE)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		if ((code[i] & want) && !(code[i] & not ))
			memcpy(ids[k++], all[i].ni_id, NEG_ID_SIZE);
	if (k > 1) {
		struct neg_item *tmp;
		size_t		 j;

		/* Sort the ids as the client's lists are sorted. */
		if ((tmp = calloc(k, sizeof(*tmp))) == NULL)
			abort();
		for (j = 0; j < k; j++)
			memcpy(tmp[j].ni_id, ids[j], NEG_ID_SIZE);
		neg_items_sort(tmp, &k);
		for (j = 0; j < k; j++)
			memcpy(ids[j], tmp[j].ni_id, NEG_ID_SIZE);
		free(tmp);
	}
	FUZZ_ASSERT(got->il_n == k);
	for (i = 0; i < k; i++)
		FUZZ_ASSERT(memcmp(got->il_ids[i], ids[i], NEG_ID_SIZE) == 0);
	free(ids);
}

static void
whole(const uint8_t *data, size_t size)
{
	struct neg_item *all, *ci, *si;
	struct neg	*client, *server;
	struct buf	 msg = BUF_INIT, ans = BUF_INIT;
	uint8_t		 code[MAX_ITEMS];
	size_t		 n, i, nc = 0, ns = 0, frame, rounds;
	char		 err[256];
	int		 r;

	frame = (data[0] & 1) ? NEG_FRAME_MIN : 0;
	n = (size - 1) * 4;
	if (n > MAX_ITEMS)
		n = MAX_ITEMS;
	all = make_items(n);
	if ((ci = calloc(n ? n : 1, sizeof(*ci))) == NULL ||
	    (si = calloc(n ? n : 1, sizeof(*si))) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		code[i] = (data[1 + i / 4] >> (2 * (i % 4))) & 3;
		if (code[i] & 1)
			ci[nc++] = all[i];
		if (code[i] & 2)
			si[ns++] = all[i];
	}
	client = neg_client_new(ci, nc, frame, err, sizeof(err));
	server = neg_server_new(si, ns, frame, err, sizeof(err));
	FUZZ_ASSERT(client != NULL && server != NULL);
	FUZZ_ASSERT(neg_client_initiate(client, &msg) == 0);
	for (rounds = 0;; rounds++) {
		FUZZ_ASSERT(rounds < MAX_ROUNDS);
		FUZZ_ASSERT(frame == 0 || msg.b_len / 2 <= frame);
		buf_reset(&ans);
		FUZZ_ASSERT(neg_server_reconcile(server, msg.b_data, msg.b_len,
				&ans, err, sizeof(err)) == 0);
		FUZZ_ASSERT(frame == 0 || ans.b_len / 2 <= frame);
		buf_reset(&msg);
		r = neg_client_reconcile(client, ans.b_data, ans.b_len, &msg,
		    err, sizeof(err));
		FUZZ_ASSERT(r != -1);
		if (r == 0)
			break;
	}
	expect(all, code, n, 1, 2, neg_client_have(client));
	expect(all, code, n, 2, 1, neg_client_need(client));
	neg_free(client);
	neg_free(server);
	free(all);
	buf_free(&msg);
	buf_free(&ans);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *hex;

	fuzz_init_log();
	decoders(data, size);
	if ((hex = malloc(2 * size + 1)) == NULL)
		abort();
	hex_encode(data, size, hex);
	server_answer(hex, 2 * size, 0);
	server_answer(hex, 2 * size, 1);
	server_answer((const char *)data, size, 0);
	client_answer(hex, 2 * size);
	client_answer((const char *)data, size);
	free(hex);
	/* Half the inputs: a whole reconciliation costs three of the rest. */
	if (size >= 1 && (data[0] & 2))
		whole(data, size);
	return 0;
}
