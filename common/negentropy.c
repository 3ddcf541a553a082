/*
 * negentropy.c: Negentropy protocol v1, server and client (see
 * negentropy.h).  relayd runs the server side; syncd runs the client
 * (through common/conn.c) against other relays.
 *
 * A message is the version byte followed by ranges, each an upper bound,
 * a mode and its payload; ranges follow each other from (0, empty id) up.
 * For every range it gets, a side compares the range with its own items:
 * an equal fingerprint, or a Skip, means nothing to say; a differing
 * fingerprint is answered by splitting the range in NEG_BUCKETS
 * fingerprints, or by listing its ids when it is small; an id list is
 * answered by the server with its own ids, and consumed by the client,
 * which notes what it has and needs.  Consecutive Skips are written once,
 * trailing ones not at all.  Output stops NEG_FRAME_MARGIN bytes short of
 * the frame limit and summarises the rest of the set as one fingerprint.
 * Every choice above is the reference implementation's, so that the
 * messages are byte for byte those of the other implementations (the
 * unit test checks them against vectors made with nostr-tools).
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "digest.h"
#include "event.h"
#include "log.h"
#include "negentropy.h"

struct neg {
	struct neg_item	 *ng_items; /* sorted, unique */
	size_t		  ng_n;
	size_t		  ng_frame; /* 0: no limit */
	int		  ng_client;
	int		  ng_initiated;
	uint64_t	  ng_last_in;  /* bound timestamps, reset */
	uint64_t	  ng_last_out; /*   for every message */
	struct neg_idlist ng_have;
	struct neg_idlist ng_need;
};

/* Writes v as a varint at the end of out[10]; returns where it starts. */
static size_t
varint_encode(uint64_t v, uint8_t out[10])
{
	size_t i = 10;

	out[--i] = v & 0x7f;
	while ((v >>= 7) != 0)
		out[--i] = 0x80 | (v & 0x7f);
	return i;
}

void
neg_varint_put(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t	i = varint_encode(v, tmp);

	buf_add(b, tmp + i, sizeof(tmp) - i);
}

int
neg_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	uint8_t	 c;

	do {
		if (*p >= end || r > (UINT64_MAX >> 7))
			return -1;
		c = *(*p)++;
		r = (r << 7) | (c & 0x7f);
	} while (c & 0x80);
	*v = r;
	return 0;
}

void
neg_bound_put(struct buf *b, uint64_t *last, const struct neg_bound *bd)
{
	if (bd->nb_ts == NEG_TS_INFINITY) {
		*last = NEG_TS_INFINITY;
		neg_varint_put(b, 0);
	} else {
		neg_varint_put(b, bd->nb_ts - *last + 1);
		*last = bd->nb_ts;
	}
	neg_varint_put(b, bd->nb_len);
	buf_add(b, bd->nb_id, bd->nb_len);
}

int
neg_bound_get(const uint8_t **p, const uint8_t *end, uint64_t *last,
    struct neg_bound *bd)
{
	uint64_t ts, len;

	if (neg_varint_get(p, end, &ts) == -1)
		return -1;
	/* 0 is infinity; past it, and on overflow, the sum saturates. */
	ts = ts == 0 ? NEG_TS_INFINITY : ts - 1;
	ts += *last;
	if (ts < *last)
		ts = NEG_TS_INFINITY;
	*last = ts;
	if (neg_varint_get(p, end, &len) == -1 || len > NEG_ID_SIZE ||
	    (uint64_t)(end - *p) < len)
		return -1;
	memset(bd, 0, sizeof(*bd));
	bd->nb_ts = ts;
	bd->nb_len = len;
	memcpy(bd->nb_id, *p, len);
	*p += len;
	return 0;
}

void
neg_fingerprint(const struct neg_item *items, size_t n,
    uint8_t out[NEG_FINGERPRINT_SIZE])
{
	uint64_t acc[4] = { 0, 0, 0, 0 }, v, s, carry;
	uint8_t	 in[32 + 10], vi[10], hash[DIGEST_SHA256_LEN];
	size_t	 i, j, k;

	for (i = 0; i < n; i++) {
		carry = 0;
		for (j = 0; j < 4; j++) {
			memcpy(&v, items[i].ni_id + 8 * j, 8);
			v = le64toh(v);
			s = acc[j] + v;
			v = s < v;
			s += carry;
			carry = v | (s < carry);
			acc[j] = s;
		}
	}
	for (j = 0; j < 4; j++) {
		v = htole64(acc[j]);
		memcpy(in + 8 * j, &v, 8);
	}
	k = varint_encode(n, vi);
	memcpy(in + 32, vi + k, sizeof(vi) - k);
	digest_sha256(in, 32 + sizeof(vi) - k, hash);
	memcpy(out, hash, NEG_FINGERPRINT_SIZE);
}

static int
item_cmp(const struct neg_item *a, const struct neg_item *b)
{
	if (a->ni_ts != b->ni_ts)
		return a->ni_ts < b->ni_ts ? -1 : 1;
	return memcmp(a->ni_id, b->ni_id, NEG_ID_SIZE);
}

static int
item_qcmp(const void *a, const void *b)
{
	return item_cmp(a, b);
}

static int
id_qcmp(const void *a, const void *b)
{
	return memcmp(a, b, NEG_ID_SIZE);
}

void
neg_items_sort(struct neg_item *items, size_t *n)
{
	size_t i, k;

	for (i = 1; i < *n; i++)
		if (item_cmp(&items[i - 1], &items[i]) >= 0)
			break;
	if (i >= *n)
		return;
	qsort(items, *n, sizeof(*items), item_qcmp);
	for (i = 1, k = 1; i < *n; i++)
		if (item_cmp(&items[k - 1], &items[i]) != 0)
			items[k++] = items[i];
	*n = k;
}

static struct neg *
neg_new(struct neg_item *items, size_t n, size_t frame_limit, int client,
    char *err, size_t errlen)
{
	struct neg *ng;

	if (n > NEG_MAX_ITEMS) {
		snprintf(err, errlen, "too many items (at most %d)",
		    NEG_MAX_ITEMS);
		free(items);
		return NULL;
	}
	if (frame_limit != 0 && frame_limit < NEG_FRAME_MIN) {
		snprintf(err, errlen, "frame size limit below %d",
		    NEG_FRAME_MIN);
		free(items);
		return NULL;
	}
	if ((ng = calloc(1, sizeof(*ng))) == NULL)
		fatal("neg_new");
	neg_items_sort(items, &n);
	ng->ng_items = items;
	ng->ng_n = n;
	ng->ng_frame = frame_limit;
	ng->ng_client = client;
	return ng;
}

struct neg *
neg_server_new(struct neg_item *items, size_t n, size_t frame_limit, char *err,
    size_t errlen)
{
	return neg_new(items, n, frame_limit, 0, err, errlen);
}

struct neg *
neg_client_new(struct neg_item *items, size_t n, size_t frame_limit, char *err,
    size_t errlen)
{
	return neg_new(items, n, frame_limit, 1, err, errlen);
}

void
neg_free(struct neg *ng)
{
	if (ng == NULL)
		return;
	free(ng->ng_items);
	free(ng->ng_have.il_ids);
	free(ng->ng_need.il_ids);
	free(ng);
}

size_t
neg_size(const struct neg *ng)
{
	return ng->ng_n;
}

const struct neg_idlist *
neg_client_have(const struct neg *ng)
{
	return &ng->ng_have;
}

const struct neg_idlist *
neg_client_need(const struct neg *ng)
{
	return &ng->ng_need;
}

static void
idlist_add(struct neg_idlist *l, const uint8_t *id)
{
	if (l->il_n == l->il_cap) {
		l->il_cap = l->il_cap ? l->il_cap * 2 : 64;
		l->il_ids =
		    reallocarray(l->il_ids, l->il_cap, sizeof(*l->il_ids));
		if (l->il_ids == NULL)
			fatal("idlist_add");
	}
	memcpy(l->il_ids[l->il_n++], id, NEG_ID_SIZE);
}

/* Sorts l and drops repeats (a cut frame can report an id twice). */
static void
idlist_unique(struct neg_idlist *l)
{
	size_t i, k;

	if (l->il_n < 2)
		return;
	qsort(l->il_ids, l->il_n, NEG_ID_SIZE, id_qcmp);
	for (i = 1, k = 1; i < l->il_n; i++)
		if (memcmp(l->il_ids[k - 1], l->il_ids[i], NEG_ID_SIZE) != 0)
			memcpy(l->il_ids[k++], l->il_ids[i], NEG_ID_SIZE);
	l->il_n = k;
}

/* 1 if item is below bound (whose id is zero-padded). */
static int
item_below(const struct neg_item *it, const struct neg_bound *bd)
{
	if (it->ni_ts != bd->nb_ts)
		return it->ni_ts < bd->nb_ts;
	return memcmp(it->ni_id, bd->nb_id, NEG_ID_SIZE) < 0;
}

/* Index of the first item in [from, n) not below bd. */
static size_t
lower_bound(const struct neg *ng, size_t from, const struct neg_bound *bd)
{
	size_t lo = from, hi = ng->ng_n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (item_below(&ng->ng_items[mid], bd))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The shortest bound that separates prev from curr (curr above). */
static void
minimal_bound(const struct neg_item *prev, const struct neg_item *curr,
    struct neg_bound *bd)
{
	size_t shared = 0;

	memset(bd, 0, sizeof(*bd));
	bd->nb_ts = curr->ni_ts;
	if (curr->ni_ts != prev->ni_ts)
		return;
	while (
	    shared < NEG_ID_SIZE && curr->ni_id[shared] == prev->ni_id[shared])
		shared++;
	/* Items are unique, so they differ within 32 bytes. */
	bd->nb_len = shared + 1;
	memcpy(bd->nb_id, curr->ni_id, bd->nb_len);
}

static int
frame_exceeded(const struct neg *ng, size_t len)
{
	return ng->ng_frame != 0 && len > ng->ng_frame - NEG_FRAME_MARGIN;
}

/* Writes items [lower, upper), ending at ub, as an id list or buckets. */
static void
split_range(struct neg *ng, size_t lower, size_t upper,
    const struct neg_bound *ub, struct buf *o)
{
	struct neg_bound next;
	uint8_t		 fp[NEG_FINGERPRINT_SIZE];
	size_t		 n = upper - lower, per, extra, i, size;
	size_t		 cur = lower;

	if (n < NEG_IDLIST_THRESHOLD) {
		neg_bound_put(o, &ng->ng_last_out, ub);
		neg_varint_put(o, NEG_MODE_IDLIST);
		neg_varint_put(o, n);
		for (i = lower; i < upper; i++)
			buf_add(o, ng->ng_items[i].ni_id, NEG_ID_SIZE);
		return;
	}
	per = n / NEG_BUCKETS;
	extra = n % NEG_BUCKETS;
	for (i = 0; i < NEG_BUCKETS; i++) {
		size = per + (i < extra ? 1 : 0);
		neg_fingerprint(ng->ng_items + cur, size, fp);
		cur += size;
		if (cur == upper)
			next = *ub;
		else
			minimal_bound(&ng->ng_items[cur - 1],
			    &ng->ng_items[cur], &next);
		neg_bound_put(o, &ng->ng_last_out, &next);
		neg_varint_put(o, NEG_MODE_FINGERPRINT);
		buf_add(o, fp, sizeof(fp));
	}
}

/*
 * Client: compares the server's ids for [lower, upper) with ours and
 * notes the differences.  Returns 0, or -1 when the lists grow past
 * NEG_MAX_ITEMS even without repeats.
 */
static int
client_idlist(struct neg *ng, size_t lower, size_t upper, const uint8_t *theirs,
    size_t count)
{
	uint8_t(*t)[NEG_ID_SIZE] = NULL, (*o)[NEG_ID_SIZE] = NULL;
	size_t no = upper - lower, i, j;
	int    c, rv = -1;

	if (count > 0 && (t = malloc(count * NEG_ID_SIZE)) == NULL)
		fatal("client_idlist");
	if (no > 0 && (o = malloc(no * NEG_ID_SIZE)) == NULL)
		fatal("client_idlist");
	if (count > 0)
		memcpy(t, theirs, count * NEG_ID_SIZE);
	for (i = 0; i < no; i++)
		memcpy(o[i], ng->ng_items[lower + i].ni_id, NEG_ID_SIZE);
	if (count > 1)
		qsort(t, count, NEG_ID_SIZE, id_qcmp);
	if (no > 1)
		qsort(o, no, NEG_ID_SIZE, id_qcmp);
	for (i = 0, j = 0; i < no || j < count;) {
		/* A hostile server may repeat an id; count it once. */
		if (j > 0 && j < count &&
		    memcmp(t[j - 1], t[j], NEG_ID_SIZE) == 0) {
			j++;
			continue;
		}
		if (i == no)
			c = 1;
		else if (j == count)
			c = -1;
		else
			c = memcmp(o[i], t[j], NEG_ID_SIZE);
		if (c < 0)
			idlist_add(&ng->ng_have, o[i++]);
		else if (c > 0)
			idlist_add(&ng->ng_need, t[j++]);
		else {
			i++;
			j++;
		}
	}
	if (ng->ng_need.il_n > NEG_MAX_ITEMS)
		idlist_unique(&ng->ng_need);
	if (ng->ng_have.il_n > NEG_MAX_ITEMS)
		idlist_unique(&ng->ng_have);
	if (ng->ng_need.il_n <= NEG_MAX_ITEMS &&
	    ng->ng_have.il_n <= NEG_MAX_ITEMS)
		rv = 0;
	free(t);
	free(o);
	return rv;
}

/*
 * Server: answers an id list for [lower, *upper) with our ids there,
 * appended to full (after the pending Skip in o).  When the frame fills
 * up, the list ends early at the first id left out and *upper moves
 * there, so that the closing fingerprint covers the rest.
 */
static void
server_idlist(struct neg *ng, size_t lower, size_t *upper,
    const struct neg_bound *cur, struct buf *o, struct buf *full)
{
	struct neg_bound end = *cur;
	size_t		 i, n;

	for (i = lower; i < *upper; i++)
		if (frame_exceeded(ng,
			full->b_len + (i - lower) * NEG_ID_SIZE)) {
			memset(&end, 0, sizeof(end));
			end.nb_ts = ng->ng_items[i].ni_ts;
			memcpy(end.nb_id, ng->ng_items[i].ni_id, NEG_ID_SIZE);
			end.nb_len = NEG_ID_SIZE;
			break;
		}
	n = i - lower;
	*upper = i;
	neg_bound_put(o, &ng->ng_last_out, &end);
	neg_varint_put(o, NEG_MODE_IDLIST);
	neg_varint_put(o, n);
	for (i = lower; i < lower + n; i++)
		buf_add(o, ng->ng_items[i].ni_id, NEG_ID_SIZE);
	buf_add(full, o->b_data, o->b_len);
	buf_reset(o);
}

/*
 * Answers the binary message msg[0..len) into full (which holds the
 * version byte already).  Returns 0, or -1 with the reason in err.
 */
static int
reconcile(struct neg *ng, const uint8_t *msg, size_t len, struct buf *full,
    char *err, size_t errlen)
{
	const uint8_t	*p = msg, *end = msg + len, *ids;
	struct neg_bound prev, cur, inf;
	struct buf	 o = BUF_INIT;
	uint8_t		 fp[NEG_FINGERPRINT_SIZE];
	uint64_t	 mode, count;
	size_t		 lower, upper, prev_index = 0;
	int		 skip = 0, rv = -1;

	ng->ng_last_in = ng->ng_last_out = 0;
	memset(&prev, 0, sizeof(prev));
	memset(&inf, 0, sizeof(inf));
	inf.nb_ts = NEG_TS_INFINITY;
	if (len == 0) {
		snprintf(err, errlen, "empty negentropy message");
		goto done;
	}
	if (*p < NEG_VERSION_MIN || *p > NEG_VERSION_MAX) {
		snprintf(err, errlen,
		    "invalid negentropy protocol version byte 0x%02x", *p);
		goto done;
	}
	if (*p != NEG_PROTOCOL_V1) {
		if (ng->ng_client) {
			snprintf(err, errlen,
			    "unsupported negentropy protocol version %d",
			    *p - NEG_VERSION_MIN);
			goto done;
		}
		/* The spec: answer with the versions we speak. */
		rv = 0;
		goto done;
	}
	p++;
	while (p < end) {
		buf_reset(&o);
		if (neg_bound_get(&p, end, &ng->ng_last_in, &cur) == -1 ||
		    neg_varint_get(&p, end, &mode) == -1) {
			snprintf(err, errlen, "malformed negentropy range");
			goto done;
		}
		lower = prev_index;
		upper = lower_bound(ng, prev_index, &cur);
		switch (mode) {
		case NEG_MODE_SKIP:
			skip = 1;
			break;
		case NEG_MODE_FINGERPRINT:
			if ((size_t)(end - p) < NEG_FINGERPRINT_SIZE) {
				snprintf(err, errlen,
				    "truncated negentropy fingerprint");
				goto done;
			}
			neg_fingerprint(ng->ng_items + lower, upper - lower,
			    fp);
			if (memcmp(fp, p, NEG_FINGERPRINT_SIZE) != 0) {
				if (skip) {
					skip = 0;
					neg_bound_put(&o, &ng->ng_last_out,
					    &prev);
					neg_varint_put(&o, NEG_MODE_SKIP);
				}
				split_range(ng, lower, upper, &cur, &o);
			} else
				skip = 1;
			p += NEG_FINGERPRINT_SIZE;
			break;
		case NEG_MODE_IDLIST:
			if (neg_varint_get(&p, end, &count) == -1 ||
			    count > (uint64_t)(end - p) / NEG_ID_SIZE) {
				snprintf(err, errlen,
				    "truncated negentropy id list");
				goto done;
			}
			ids = p;
			p += count * NEG_ID_SIZE;
			if (ng->ng_client) {
				if (client_idlist(ng, lower, upper, ids,
					count) == -1) {
					snprintf(err, errlen,
					    "more than %d differing ids",
					    NEG_MAX_ITEMS);
					goto done;
				}
				skip = 1;
				break;
			}
			if (skip) {
				skip = 0;
				neg_bound_put(&o, &ng->ng_last_out, &prev);
				neg_varint_put(&o, NEG_MODE_SKIP);
			}
			server_idlist(ng, lower, &upper, &cur, &o, full);
			break;
		default:
			snprintf(err, errlen, "unknown negentropy mode %llu",
			    (unsigned long long)mode);
			goto done;
		}
		if (frame_exceeded(ng, full->b_len + o.b_len)) {
			neg_fingerprint(ng->ng_items + upper, ng->ng_n - upper,
			    fp);
			neg_bound_put(full, &ng->ng_last_out, &inf);
			neg_varint_put(full, NEG_MODE_FINGERPRINT);
			buf_add(full, fp, sizeof(fp));
			break;
		}
		buf_add(full, o.b_data, o.b_len);
		prev_index = upper;
		prev = cur;
	}
	rv = 0;
done:
	buf_free(&o);
	return rv;
}

/* Decodes lowercase hex into a new buffer; NULL if it is not hex. */
static uint8_t *
unhex(const char *hex, size_t hexlen, size_t *lenp)
{
	uint8_t *b;

	if (hexlen % 2 != 0)
		return NULL;
	*lenp = hexlen / 2;
	if ((b = malloc(*lenp + 1)) == NULL)
		fatal("unhex");
	if (hex_decode(hex, hexlen, b, *lenp) == -1) {
		free(b);
		return NULL;
	}
	return b;
}

/* Shared body of the two reconcile calls; returns the binary length. */
static int
reconcile_hex(struct neg *ng, const char *hex, size_t hexlen, struct buf *out,
    size_t *outlen, char *err, size_t errlen)
{
	struct buf full = BUF_INIT;
	uint8_t	  *msg;
	size_t	   len;
	int	   rv = -1;

	if ((msg = unhex(hex, hexlen, &len)) == NULL) {
		snprintf(err, errlen,
		    "negentropy message is not lowercase hex");
		return -1;
	}
	buf_addc(&full, (char)NEG_PROTOCOL_V1);
	if (reconcile(ng, msg, len, &full, err, errlen) == 0) {
		*outlen = full.b_len;
		if (!ng->ng_client || full.b_len > 1)
			buf_add_hex(out, (const unsigned char *)full.b_data,
			    full.b_len);
		rv = 0;
	}
	free(msg);
	buf_free(&full);
	return rv;
}

int
neg_server_reconcile(struct neg *ng, const char *hex, size_t hexlen,
    struct buf *out, char *err, size_t errlen)
{
	size_t len;

	if (ng->ng_client) {
		snprintf(err, errlen,
		    "a negentropy client answers with neg_client_reconcile");
		return -1;
	}
	return reconcile_hex(ng, hex, hexlen, out, &len, err, errlen);
}

int
neg_client_initiate(struct neg *ng, struct buf *out)
{
	struct buf	 full = BUF_INIT;
	struct neg_bound inf;

	if (!ng->ng_client || ng->ng_initiated)
		return -1;
	ng->ng_initiated = 1;
	ng->ng_last_out = 0;
	memset(&inf, 0, sizeof(inf));
	inf.nb_ts = NEG_TS_INFINITY;
	buf_addc(&full, (char)NEG_PROTOCOL_V1);
	split_range(ng, 0, ng->ng_n, &inf, &full);
	buf_add_hex(out, (const unsigned char *)full.b_data, full.b_len);
	buf_free(&full);
	return 0;
}

int
neg_client_reconcile(struct neg *ng, const char *hex, size_t hexlen,
    struct buf *out, char *err, size_t errlen)
{
	size_t len;

	if (!ng->ng_client || !ng->ng_initiated) {
		snprintf(err, errlen, "negentropy client not initiated");
		return -1;
	}
	if (reconcile_hex(ng, hex, hexlen, out, &len, err, errlen) == -1)
		return -1;
	if (len > 1)
		return 1;
	idlist_unique(&ng->ng_have);
	idlist_unique(&ng->ng_need);
	return 0;
}

int
neg_items_add(int64_t created_at, const uint8_t id[NEG_ID_SIZE], void *arg)
{
	struct neg_items *it = arg;

	if (it->ni_n == it->ni_cap) {
		it->ni_cap = it->ni_cap ? it->ni_cap * 2 : 1024;
		if ((it->ni_v = reallocarray(it->ni_v, it->ni_cap,
			 sizeof(*it->ni_v))) == NULL)
			fatal("neg_items_add");
	}
	/* created_at is never negative in the store (event.c). */
	it->ni_v[it->ni_n].ni_ts = created_at < 0 ? 0 : (uint64_t)created_at;
	memcpy(it->ni_v[it->ni_n].ni_id, id, NEG_ID_SIZE);
	it->ni_n++;
	return 0;
}
