/*
 * filter.c: NIP-01 filters: strict parsing of a REQ filter object and
 * matching of an event against it.  relayd uses both (REQ handling and
 * live fan-out); the store turns a parsed filter into SQL (store.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "filter.h"
#include "json.h"
#include "log.h"
#include "mem.h"

/* Bits for the members a filter may carry once. */
#define SEEN_IDS     0x01
#define SEEN_AUTHORS 0x02
#define SEEN_KINDS   0x04
#define SEEN_SINCE   0x08
#define SEEN_UNTIL   0x10
#define SEEN_LIMIT   0x20

/*
 * Copies a member name into out for an error message: printable ASCII
 * only, cut at 32 bytes, so a hostile key cannot shape the reply.
 */
static void
key_printable(const struct json *m, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < m->keylen && o + 1 < outlen && i < 32; i++) {
		unsigned char c = (unsigned char)m->key[i];

		out[o++] = (c >= 0x20 && c < 0x7f && c != '"') ? (char)c : '?';
	}
	out[o] = '\0';
}

static int
key_is(const struct json *m, const char *name)
{
	size_t n = strlen(name);

	return m->keylen == n && memcmp(m->key, name, n) == 0;
}

static int
is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Bit for a tag letter: a-z are 0-25, A-Z are 26-51. */
static uint64_t
letter_bit(char c)
{
	return (uint64_t)1 << (c >= 'a' ? c - 'a' : c - 'A' + 26);
}

static int
cmp32(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

static int
cmpu32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int
cmpestr(const void *a, const void *b)
{
	const struct estr *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->s, y->s, x->len);
}

static int
cmptag(const void *a, const void *b)
{
	const struct filter_tag *x = a, *y = b;

	return (unsigned char)x->ft_name - (unsigned char)y->ft_name;
}

/* Sorts base[0..n) and drops duplicates; returns the new count. */
static size_t
sort_unique(void *base, size_t n, size_t size,
    int (*cmp)(const void *, const void *))
{
	char  *p = base;
	size_t i, o;

	if (n < 2)
		return n;
	qsort(base, n, size, cmp);
	for (i = 1, o = 1; i < n; i++) {
		if (cmp(p + (o - 1) * size, p + i * size) == 0)
			continue;
		if (o != i)
			memcpy(p + o * size, p + i * size, size);
		o++;
	}
	return o;
}

/*
 * Checks that m is an array of at most FILTER_MAX_VALUES elements; what
 * names the member in the error.
 */
static int
check_list(const struct json *m, const char *what, char *err, size_t errlen)
{
	if (m->type != JSON_ARRAY) {
		snprintf(err, errlen, "invalid: %s must be an array", what);
		return -1;
	}
	if (m->n > FILTER_MAX_VALUES) {
		snprintf(err, errlen, "invalid: too many %s (at most %d)", what,
		    FILTER_MAX_VALUES);
		return -1;
	}
	return 0;
}

static int
parse_hex32_list(const struct json *m, const char *what, uint8_t (**outp)[32],
    size_t *np, char *err, size_t errlen)
{
	const struct json *v;
	uint8_t(*out)[32];
	size_t n = 0;

	if (check_list(m, what, err, errlen) == -1)
		return -1;
	out = xcalloc(m->n, 32);
	for (v = m->child; v != NULL; v = v->next) {
		if (v->type != JSON_STRING ||
		    hex_decode(v->s, v->len, out[n], 32) == -1) {
			snprintf(err, errlen,
			    "invalid: %s must be 64-character lowercase hex strings",
			    what);
			free(out);
			return -1;
		}
		n++;
	}
	*np = sort_unique(out, n, 32, cmp32);
	*outp = out;
	return 0;
}

static int
parse_kinds(const struct json *m, struct filter *f, char *err, size_t errlen)
{
	const struct json *v;
	size_t		   n = 0;

	if (check_list(m, "kinds", err, errlen) == -1)
		return -1;
	f->f_kinds = xcalloc(m->n, sizeof(*f->f_kinds));
	for (v = m->child; v != NULL; v = v->next) {
		if (v->type != JSON_NUMBER || !v->is_int || v->i < 0 ||
		    v->i > EVENT_KIND_MAX) {
			snprintf(err, errlen,
			    "invalid: kinds must be integers from 0 to %d",
			    EVENT_KIND_MAX);
			return -1;
		}
		f->f_kinds[n++] = (uint32_t)v->i;
	}
	f->f_nkinds = sort_unique(f->f_kinds, n, sizeof(*f->f_kinds), cmpu32);
	f->f_has_kinds = 1;
	return 0;
}

static int
parse_tag(const struct json *m, struct filter_tag *t, char *err, size_t errlen)
{
	const struct json *v;
	uint8_t		   scratch[32];
	char		   what[3] = { '#', m->key[1], '\0' };
	int		   hex = m->key[1] == 'e' || m->key[1] == 'p';

	t->ft_name = m->key[1];
	if (check_list(m, what, err, errlen) == -1)
		return -1;
	t->ft_v = xcalloc(m->n, sizeof(*t->ft_v));
	for (v = m->child; v != NULL; v = v->next) {
		if (v->type != JSON_STRING) {
			snprintf(err, errlen,
			    "invalid: %s values must be strings", what);
			return -1;
		}
		if (hex && hex_decode(v->s, v->len, scratch, 32) == -1) {
			snprintf(err, errlen,
			    "invalid: %s values must be 64-character lowercase hex",
			    what);
			return -1;
		}
		if ((t->ft_v[t->ft_n].s = malloc(v->len + 1)) == NULL)
			fatal("malloc");
		memcpy(t->ft_v[t->ft_n].s, v->s, v->len);
		t->ft_v[t->ft_n].s[v->len] = '\0';
		t->ft_v[t->ft_n].len = v->len;
		t->ft_n++;
	}
	/* Duplicates are freed here, since sort_unique only drops slots. */
	if (t->ft_n > 1) {
		size_t i, o;

		qsort(t->ft_v, t->ft_n, sizeof(*t->ft_v), cmpestr);
		for (i = 1, o = 1; i < t->ft_n; i++) {
			if (cmpestr(&t->ft_v[o - 1], &t->ft_v[i]) == 0) {
				free(t->ft_v[i].s);
				continue;
			}
			t->ft_v[o++] = t->ft_v[i];
		}
		t->ft_n = o;
	}
	return 0;
}

static int
parse_nonneg(const struct json *m, const char *what, int64_t *out, int *has,
    char *err, size_t errlen)
{
	if (m->type != JSON_NUMBER || !m->is_int || m->i < 0) {
		snprintf(err, errlen,
		    "invalid: %s must be a non-negative integer", what);
		return -1;
	}
	*out = m->i;
	*has = 1;
	return 0;
}

int
filter_parse(const struct json *obj, struct filter *out, char *err,
    size_t errlen)
{
	const struct json *m;
	struct filter	   f;
	unsigned	   seen = 0, bit;
	uint64_t	   letters = 0;
	char		   key[40];
	size_t		   ntagkeys = 0;

	memset(&f, 0, sizeof(f));
	memset(out, 0, sizeof(*out));
	if (obj == NULL || obj->type != JSON_OBJECT) {
		snprintf(err, errlen, "invalid: filter must be an object");
		return -1;
	}
	for (m = obj->child; m != NULL; m = m->next)
		if (m->keylen == 2 && m->key[0] == '#')
			ntagkeys++;
	if (ntagkeys > 0)
		f.f_tags = xcalloc(ntagkeys, sizeof(*f.f_tags));

	for (m = obj->child; m != NULL; m = m->next) {
		int r;

		bit = 0;
		if (key_is(m, "ids"))
			bit = SEEN_IDS;
		else if (key_is(m, "authors"))
			bit = SEEN_AUTHORS;
		else if (key_is(m, "kinds"))
			bit = SEEN_KINDS;
		else if (key_is(m, "since"))
			bit = SEEN_SINCE;
		else if (key_is(m, "until"))
			bit = SEEN_UNTIL;
		else if (key_is(m, "limit"))
			bit = SEEN_LIMIT;
		key_printable(m, key, sizeof(key));

		if (bit == 0 && m->keylen >= 1 && m->key[0] == '#') {
			if (m->keylen != 2 || !is_letter(m->key[1])) {
				snprintf(err, errlen,
				    "unsupported: unindexed tag filter %s",
				    key);
				goto fail;
			}
			if (letters & letter_bit(m->key[1])) {
				snprintf(err, errlen,
				    "invalid: duplicate filter item %s", key);
				goto fail;
			}
			letters |= letter_bit(m->key[1]);
			r = parse_tag(m, &f.f_tags[f.f_ntags++], err, errlen);
			if (r == -1)
				goto fail;
			continue;
		}
		if (bit == 0) {
			snprintf(err, errlen,
			    "unsupported: unrecognised filter item %s", key);
			goto fail;
		}
		if (seen & bit) {
			snprintf(err, errlen,
			    "invalid: duplicate filter item %s", key);
			goto fail;
		}
		seen |= bit;

		switch (bit) {
		case SEEN_IDS:
			r = parse_hex32_list(m, "ids", &f.f_ids, &f.f_nids, err,
			    errlen);
			f.f_has_ids = 1;
			break;
		case SEEN_AUTHORS:
			r = parse_hex32_list(m, "authors", &f.f_authors,
			    &f.f_nauthors, err, errlen);
			f.f_has_authors = 1;
			break;
		case SEEN_KINDS:
			r = parse_kinds(m, &f, err, errlen);
			break;
		case SEEN_SINCE:
			r = parse_nonneg(m, "since", &f.f_since, &f.f_has_since,
			    err, errlen);
			break;
		case SEEN_UNTIL:
			r = parse_nonneg(m, "until", &f.f_until, &f.f_has_until,
			    err, errlen);
			break;
		default:
			r = parse_nonneg(m, "limit", &f.f_limit, &f.f_has_limit,
			    err, errlen);
			break;
		}
		if (r == -1)
			goto fail;
	}
	if (f.f_ntags > 1)
		qsort(f.f_tags, f.f_ntags, sizeof(*f.f_tags), cmptag);

	if ((f.f_has_ids && f.f_nids == 0) ||
	    (f.f_has_authors && f.f_nauthors == 0) ||
	    (f.f_has_kinds && f.f_nkinds == 0))
		f.f_empty = 1;
	for (size_t i = 0; i < f.f_ntags; i++)
		if (f.f_tags[i].ft_n == 0)
			f.f_empty = 1;
	*out = f;
	return 0;

fail:
	filter_free(&f);
	return -1;
}

void
filter_free(struct filter *f)
{
	size_t i, j;

	if (f == NULL)
		return;
	free(f->f_ids);
	free(f->f_authors);
	free(f->f_kinds);
	for (i = 0; i < f->f_ntags; i++) {
		for (j = 0; j < f->f_tags[i].ft_n; j++)
			free(f->f_tags[i].ft_v[j].s);
		free(f->f_tags[i].ft_v);
	}
	free(f->f_tags);
	memset(f, 0, sizeof(*f));
}

void
filters_free(struct filter *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		filter_free(&v[i]);
	free(v);
}

static int
tag_cond_match(const struct filter_tag *t, const struct event *ev)
{
	uint32_t i;

	for (i = 0; i < ev->ntags; i++) {
		const struct event_tag *et = &ev->tags[i];

		if (et->n < 2 || et->v[0].len != 1 ||
		    et->v[0].s[0] != t->ft_name)
			continue;
		if (bsearch(&et->v[1], t->ft_v, t->ft_n, sizeof(*t->ft_v),
			cmpestr) != NULL)
			return 1;
	}
	return 0;
}

int
filter_match(const struct filter *f, const struct event *ev)
{
	size_t i;

	if (f->f_empty)
		return 0;
	if (f->f_has_since && ev->created_at < f->f_since)
		return 0;
	if (f->f_has_until && ev->created_at > f->f_until)
		return 0;
	if (f->f_has_kinds &&
	    bsearch(&ev->kind, f->f_kinds, f->f_nkinds, sizeof(*f->f_kinds),
		cmpu32) == NULL)
		return 0;
	if (f->f_has_authors &&
	    bsearch(ev->pubkey, f->f_authors, f->f_nauthors, PUBKEY_LEN,
		cmp32) == NULL)
		return 0;
	if (f->f_has_ids &&
	    bsearch(ev->id, f->f_ids, f->f_nids, EVENT_ID_LEN, cmp32) == NULL)
		return 0;
	for (i = 0; i < f->f_ntags; i++)
		if (!tag_cond_match(&f->f_tags[i], ev))
			return 0;
	return 1;
}

int
filter_match_any(const struct filter *f, size_t n, const struct event *ev)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (filter_match(&f[i], ev))
			return 1;
	return 0;
}
