/*
 * event.c: Nostr events (NIP-01): strict parsing, canonical serialization,
 * SHA-256 ids and BIP-340 signatures (see event.h).  Linked by every role.
 */
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "buf.h"
#include "digest.h"
#include "event.h"
#include "json.h"
#include "log.h"

static secp256k1_context *secp_ctx;

static secp256k1_context *
secp(void)
{
	unsigned char seed[32];

	if (secp_ctx == NULL) {
		secp_ctx = secp256k1_context_create(
		    SECP256K1_CONTEXT_VERIFY | SECP256K1_CONTEXT_SIGN);
		if (secp_ctx == NULL)
			fatalx("secp256k1_context_create failed");
		/* Side-channel blinding for signing. */
		if (getrandom(seed, sizeof(seed), 0) == sizeof(seed) &&
		    !secp256k1_context_randomize(secp_ctx, seed))
			log_warnx("secp256k1 context randomization failed");
	}
	return secp_ctx;
}

enum kind_class
event_kind_class(uint32_t kind)
{
	if (kind == 0 || kind == 3 || (kind >= 10000 && kind < 20000))
		return KIND_REPLACEABLE;
	if (kind >= 20000 && kind < 30000)
		return KIND_EPHEMERAL;
	if (kind >= 30000 && kind < 40000)
		return KIND_ADDRESSABLE;
	return KIND_REGULAR;
}

/* Each lowercase hex digit's value plus one; 0 for anything else. */
/* clang-format off */
static const uint8_t hex_val[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6,
	['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};
/* clang-format on */

int
hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t n)
{
	const unsigned char *h = (const unsigned char *)hex;
	size_t		     i;
	unsigned	     hi, lo, bad = 0;

	if (hexlen != n * 2)
		return -1;
	i = 0;
#ifdef __SSE2__
	/* The inventory decodes every id it meets: 16 digits at a time. */
	for (; i + 8 <= n; i += 8) {
		__m128i v, dig, let, isd, isl, val;

		v = _mm_loadu_si128((const __m128i *)(const void *)(h + 2 * i));
		/* Signed compares: a byte >= 0x80 is below '0'. */
		isd = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
		    _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
		isl = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
		    _mm_cmplt_epi8(v, _mm_set1_epi8('f' + 1)));
		if (_mm_movemask_epi8(_mm_or_si128(isd, isl)) != 0xffff)
			return -1;
		dig = _mm_and_si128(_mm_sub_epi8(v, _mm_set1_epi8('0')), isd);
		let = _mm_and_si128(_mm_sub_epi8(v, _mm_set1_epi8('a' - 10)),
		    isl);
		val = _mm_or_si128(dig, let);
		/* Each 16-bit lane holds a byte's high digit, then its low. */
		val = _mm_or_si128(
		    _mm_slli_epi16(_mm_and_si128(val, _mm_set1_epi16(0xff)), 4),
		    _mm_srli_epi16(val, 8));
		_mm_storel_epi64((__m128i *)(void *)(out + i),
		    _mm_packus_epi16(val, val));
	}
#endif
	/* One test at the end. */
	for (; i < n; i++) {
		hi = hex_val[h[2 * i]];
		lo = hex_val[h[2 * i + 1]];
		bad |= (hi == 0) | (lo == 0);
		/* Wraps for a bad digit; the result is then refused. */
		out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
	}
	return bad ? -1 : 0;
}

void
hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t		  i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

static void
add_tags(struct buf *b, const struct event *ev)
{
	uint32_t i, j;

	buf_addc(b, '[');
	for (i = 0; i < ev->ntags; i++) {
		if (i)
			buf_addc(b, ',');
		buf_addc(b, '[');
		for (j = 0; j < ev->tags[i].n; j++) {
			if (j)
				buf_addc(b, ',');
			buf_add_jstr(b, ev->tags[i].v[j].s,
			    ev->tags[i].v[j].len);
		}
		buf_addc(b, ']');
	}
	buf_addc(b, ']');
}

/*
 * The id is the SHA-256 of [0,"<pubkey>",<created_at>,<kind>,<tags>,
 * <content>] (NIP-01).  When ev->json is event_serialize()'s, its tags
 * and content are the same bytes and are hashed where they are.
 */
void
event_compute_id(const struct event *ev, uint8_t out[EVENT_ID_LEN])
{
	struct buf   b = BUF_INIT;
	struct iovec v[5];

	buf_adds(&b, "[0,\"");
	buf_add_hex(&b, ev->pubkey, PUBKEY_LEN);
	buf_adds(&b, "\",");
	buf_add_int(&b, ev->created_at);
	buf_addc(&b, ',');
	buf_add_int(&b, ev->kind);
	buf_addc(&b, ',');
	if (ev->json != NULL && ev->json_tags_len > 0 &&
	    ev->json_content_len > 0) {
		v[0] = (struct iovec){ b.b_data, b.b_len };
		v[1] = (struct iovec){ ev->json + ev->json_tags,
			ev->json_tags_len };
		v[2] = (struct iovec){ (char *)",", 1 };
		v[3] = (struct iovec){ ev->json + ev->json_content,
			ev->json_content_len };
		v[4] = (struct iovec){ (char *)"]", 1 };
		digest_sha256v(v, 5, out);
	} else {
		add_tags(&b, ev);
		buf_addc(&b, ',');
		buf_add_jstr(&b, ev->content.s, ev->content.len);
		buf_addc(&b, ']');
		digest_sha256(b.b_data, b.b_len, out);
	}
	buf_free(&b);
}

/* (Re)builds ev->json from the fields. */
static void
event_serialize(struct event *ev)
{
	struct buf b = BUF_INIT;

	buf_reserve(&b, ev->content.len + 256);
	buf_adds(&b, "{\"id\":\"");
	buf_add_hex(&b, ev->id, EVENT_ID_LEN);
	buf_adds(&b, "\",\"pubkey\":\"");
	buf_add_hex(&b, ev->pubkey, PUBKEY_LEN);
	buf_adds(&b, "\",\"created_at\":");
	buf_add_int(&b, ev->created_at);
	buf_adds(&b, ",\"kind\":");
	buf_add_int(&b, ev->kind);
	buf_adds(&b, ",\"tags\":");
	ev->json_tags = b.b_len;
	add_tags(&b, ev);
	ev->json_tags_len = b.b_len - ev->json_tags;
	buf_adds(&b, ",\"content\":");
	ev->json_content = b.b_len;
	buf_add_jstr(&b, ev->content.s, ev->content.len);
	ev->json_content_len = b.b_len - ev->json_content;
	buf_adds(&b, ",\"sig\":\"");
	buf_add_hex(&b, ev->sig, EVENT_SIG_LEN);
	buf_adds(&b, "\"}");
	free(ev->json);
	ev->json = buf_release(&b, &ev->json_len);
}

static int
get_hex(const struct json *obj, const char *key, uint8_t *out, size_t n,
    char *err, size_t errlen)
{
	const struct json *v = json_get(obj, key);

	if (v == NULL) {
		snprintf(err, errlen, "invalid: missing %s", key);
		return -1;
	}
	if (v->type != JSON_STRING || hex_decode(v->s, v->len, out, n) == -1) {
		snprintf(err, errlen,
		    "invalid: %s must be %zu lowercase hex characters", key,
		    n * 2);
		return -1;
	}
	return 0;
}

struct event *
event_from_json(const struct json *obj, char *err, size_t errlen)
{
	const struct json *kind, *created, *tags, *content, *t, *e;
	struct event	  *ev;
	size_t		   size, nstr = 0, strbytes = 0;
	char		  *pool;
	struct estr	  *strs;
	uint32_t	   i, j;

	if (obj == NULL || obj->type != JSON_OBJECT) {
		snprintf(err, errlen, "invalid: event must be a JSON object");
		return NULL;
	}
	kind = json_get(obj, "kind");
	created = json_get(obj, "created_at");
	tags = json_get(obj, "tags");
	content = json_get(obj, "content");
	if (kind == NULL || kind->type != JSON_NUMBER || !kind->is_int ||
	    kind->i < 0 || kind->i > EVENT_KIND_MAX) {
		snprintf(err, errlen,
		    "invalid: kind must be an integer between 0 and %d",
		    EVENT_KIND_MAX);
		return NULL;
	}
	if (created == NULL || created->type != JSON_NUMBER ||
	    !created->is_int || created->i < 0) {
		snprintf(err, errlen,
		    "invalid: created_at must be a non-negative integer");
		return NULL;
	}
	if (content == NULL || content->type != JSON_STRING) {
		snprintf(err, errlen, "invalid: content must be a string");
		return NULL;
	}
	if (tags == NULL || tags->type != JSON_ARRAY) {
		snprintf(err, errlen, "invalid: tags must be an array");
		return NULL;
	}
	for (t = tags->child; t; t = t->next) {
		if (t->type != JSON_ARRAY || t->n == 0) {
			snprintf(err, errlen,
			    "invalid: each tag must be a non-empty array of strings");
			return NULL;
		}
		for (e = t->child; e; e = e->next) {
			if (e->type != JSON_STRING) {
				snprintf(err, errlen,
				    "invalid: tag elements must be strings");
				return NULL;
			}
			nstr++;
			strbytes += e->len + 1;
		}
	}
	strbytes += content->len + 1;

	size = sizeof(*ev) + tags->n * sizeof(struct event_tag) +
	    nstr * sizeof(struct estr) + strbytes;
	if ((ev = calloc(1, size)) == NULL)
		fatal("event_from_json");
	ev->tags = (struct event_tag *)(ev + 1);
	strs = (struct estr *)(ev->tags + tags->n);
	pool = (char *)(strs + nstr);

	if (get_hex(obj, "id", ev->id, EVENT_ID_LEN, err, errlen) == -1 ||
	    get_hex(obj, "pubkey", ev->pubkey, PUBKEY_LEN, err, errlen) == -1 ||
	    get_hex(obj, "sig", ev->sig, EVENT_SIG_LEN, err, errlen) == -1) {
		free(ev);
		return NULL;
	}
	hex_encode(ev->id, EVENT_ID_LEN, ev->id_hex);
	hex_encode(ev->pubkey, PUBKEY_LEN, ev->pubkey_hex);
	ev->kind = (uint32_t)kind->i;
	ev->created_at = created->i;
	ev->ntags = (uint32_t)tags->n;
	for (i = 0, t = tags->child; t; t = t->next, i++) {
		ev->tags[i].n = (uint32_t)t->n;
		ev->tags[i].v = strs;
		for (j = 0, e = t->child; e; e = e->next, j++) {
			memcpy(pool, e->s, e->len + 1);
			strs[j].s = pool;
			strs[j].len = e->len;
			pool += e->len + 1;
		}
		strs += t->n;
	}
	memcpy(pool, content->s, content->len + 1);
	ev->content.s = pool;
	ev->content.len = content->len;
	event_serialize(ev);
	return ev;
}

struct event *
event_parse(const char *buf, size_t len, char *err, size_t errlen)
{
	struct json_doc *doc;
	struct json	*root;
	struct event	*ev;
	char		 jerr[128];

	if ((root = json_parse(buf, len, &doc, jerr, sizeof(jerr))) == NULL) {
		snprintf(err, errlen, "invalid: bad JSON: %s", jerr);
		return NULL;
	}
	ev = event_from_json(root, err, errlen);
	json_free(doc);
	return ev;
}

int
event_check_id(const struct event *ev)
{
	uint8_t id[EVENT_ID_LEN];

	event_compute_id(ev, id);
	return memcmp(id, ev->id, EVENT_ID_LEN) == 0;
}

int
event_check_id_msg(const struct event *ev, char *msg, size_t msglen)
{
	if (event_check_id(ev))
		return 0;
	snprintf(msg, msglen, "invalid: event id does not match its content");
	return -1;
}

int
event_check_sig(const struct event *ev)
{
	secp256k1_xonly_pubkey pk;

	if (!secp256k1_xonly_pubkey_parse(secp(), &pk, ev->pubkey))
		return 0;
	return secp256k1_schnorrsig_verify(secp(), ev->sig, ev->id, 32, &pk);
}

struct keyslot {
	uint8_t		       ks_x[PUBKEY_LEN];
	secp256k1_xonly_pubkey ks_pk;
	int		       ks_used;
};

_Static_assert(EVENT_KEYCACHE_WAYS == 2, "the way used last is one bit");

struct event_keycache {
	struct keyslot kc_set[EVENT_KEYCACHE_SETS][EVENT_KEYCACHE_WAYS];
	uint8_t	       kc_last[EVENT_KEYCACHE_SETS]; /* way used last */
	uint64_t       kc_parses;
};

struct event_keycache *
event_keycache_new(void)
{
	struct event_keycache *kc;

	if ((kc = calloc(1, sizeof(*kc))) == NULL)
		fatal("event_keycache_new");
	return kc;
}

uint64_t
event_keycache_parses(const struct event_keycache *kc)
{
	return kc->kc_parses;
}

void
event_keycache_free(struct event_keycache *kc)
{
	free(kc);
}

int
event_check_sig_cached(const struct event *ev, struct event_keycache *kc)
{
	secp256k1_xonly_pubkey pk;
	struct keyslot	      *set;
	size_t		       s, w;

	/* A key is a point's x: its bytes are as good as a hash. */
	s = ((size_t)ev->pubkey[0] << 8 | ev->pubkey[1]) % EVENT_KEYCACHE_SETS;
	set = kc->kc_set[s];
	for (w = 0; w < EVENT_KEYCACHE_WAYS; w++)
		if (set[w].ks_used &&
		    memcmp(set[w].ks_x, ev->pubkey, PUBKEY_LEN) == 0)
			break;
	if (w == EVENT_KEYCACHE_WAYS) {
		/* A key that is no point's takes no way from a good one. */
		kc->kc_parses++;
		if (!secp256k1_xonly_pubkey_parse(secp(), &pk, ev->pubkey))
			return 0;
		/* Two ways: the one not used last. */
		w = (size_t)!kc->kc_last[s];
		set[w].ks_pk = pk;
		memcpy(set[w].ks_x, ev->pubkey, PUBKEY_LEN);
		set[w].ks_used = 1;
	}
	kc->kc_last[s] = (uint8_t)w;
	return secp256k1_schnorrsig_verify(secp(), ev->sig, ev->id, 32,
	    &set[w].ks_pk);
}

void
event_destroy(struct event *ev)
{
	if (ev == NULL)
		return;
	free(ev->json);
	free(ev);
}

void
events_destroy(struct event **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		event_destroy(v[i]);
	free(v);
}

/* The x-only public key of a keypair into out; 0 or -1. */
static int
keypair_pubkey(const secp256k1_keypair *kp, uint8_t out[PUBKEY_LEN])
{
	secp256k1_xonly_pubkey pk;

	if (!secp256k1_keypair_xonly_pub(secp(), &pk, NULL, kp) ||
	    !secp256k1_xonly_pubkey_serialize(secp(), out, &pk))
		return -1;
	return 0;
}

int
event_pubkey_of(const uint8_t seckey[SECKEY_LEN], uint8_t out[PUBKEY_LEN])
{
	secp256k1_keypair kp;

	if (!secp256k1_keypair_create(secp(), &kp, seckey))
		return -1;
	return keypair_pubkey(&kp, out);
}

struct event *
event_new_signed(const uint8_t seckey[SECKEY_LEN], int64_t created_at,
    uint32_t kind, const char *tags_json, const char *content)
{
	secp256k1_keypair kp;
	struct buf	  b = BUF_INIT;
	struct event	 *ev = NULL;
	uint8_t		  pub[PUBKEY_LEN], aux[32];
	char		  err[128];

	/* One point multiplication for the key pair, one for the sign. */
	if (!secp256k1_keypair_create(secp(), &kp, seckey) ||
	    keypair_pubkey(&kp, pub) == -1)
		return NULL;
	buf_adds(&b, "{\"id\":\"");
	for (int i = 0; i < EVENT_ID_HEX_LEN; i++)
		buf_addc(&b, '0');
	buf_adds(&b, "\",\"pubkey\":\"");
	buf_add_hex(&b, pub, PUBKEY_LEN);
	buf_printf(&b,
	    "\",\"created_at\":%lld,\"kind\":%u,\"tags\":%s,"
	    "\"content\":",
	    (long long)created_at, kind, tags_json ? tags_json : "[]");
	buf_add_jstr(&b, content ? content : "", content ? strlen(content) : 0);
	buf_adds(&b, ",\"sig\":\"");
	for (int i = 0; i < 128; i++)
		buf_addc(&b, '0');
	buf_adds(&b, "\"}");
	ev = event_parse(b.b_data, b.b_len, err, sizeof(err));
	buf_free(&b);
	if (ev == NULL)
		return NULL;
	event_compute_id(ev, ev->id);
	hex_encode(ev->id, EVENT_ID_LEN, ev->id_hex);
	if (getrandom(aux, sizeof(aux), 0) != sizeof(aux))
		memset(aux, 0, sizeof(aux));
	if (!secp256k1_schnorrsig_sign32(secp(), ev->sig, ev->id, &kp, aux)) {
		event_destroy(ev);
		return NULL;
	}
	event_serialize(ev);
	return ev;
}

const struct estr *
event_tag_value(const struct event *ev, const char *name)
{
	size_t	 n = strlen(name);
	uint32_t i;

	for (i = 0; i < ev->ntags; i++)
		if (ev->tags[i].n >= 2 && ev->tags[i].v[0].len == n &&
		    memcmp(ev->tags[i].v[0].s, name, n) == 0)
			return &ev->tags[i].v[1];
	return NULL;
}

const char *
event_d(const struct event *ev)
{
	const struct estr *d = event_tag_value(ev, "d");

	return d ? d->s : "";
}

int64_t
event_expiration(const struct event *ev)
{
	const struct estr *x = event_tag_value(ev, "expiration");
	long long	   v = 0;
	size_t		   i;

	if (x == NULL || x->len == 0 || x->len > 18)
		return 0;
	for (i = 0; i < x->len; i++) {
		if (x->s[i] < '0' || x->s[i] > '9')
			return 0;
		v = v * 10 + (x->s[i] - '0');
	}
	return v;
}

int
coord_parse(const char *c, size_t len, uint32_t *kind,
    uint8_t pubkey[PUBKEY_LEN], const char **d, size_t *dlen)
{
	const char *c1, *c2, *end = c + len;
	uint32_t    k = 0;
	const char *p;

	if ((c1 = memchr(c, ':', len)) == NULL || c1 == c || c1 - c > 5)
		return -1;
	for (p = c; p < c1; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		k = k * 10 + (uint32_t)(*p - '0');
	}
	if (k > EVENT_KIND_MAX)
		return -1;
	c2 = c1 + 1 + 64;
	if (c2 > end || (c2 < end && *c2 != ':'))
		return -1;
	if (hex_decode(c1 + 1, PUBKEY_HEX_LEN, pubkey, PUBKEY_LEN) == -1)
		return -1;
	*kind = k;
	if (c2 == end) {
		/* "kind:pubkey" as NIP-34 forward references use it. */
		*d = end;
		*dlen = 0;
	} else {
		*d = c2 + 1;
		*dlen = (size_t)(end - c2 - 1);
	}
	return 0;
}
