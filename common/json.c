/*
 * json.c: a strict JSON reader for untrusted network input (see json.h).
 * Used by relayd for client messages and by the roles that read remote
 * relays.  Recursive descent bounded by JSON_MAX_DEPTH; every value and
 * decoded string lives in one arena so freeing a document is one walk.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "log.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t		    used, cap;
	max_align_t	    data[];
};

struct json_doc {
	struct arena_chunk *chunks;
};

struct parser {
	const unsigned char *p, *end;
	struct json_doc	    *doc;
	const char	    *err;
	size_t		     errpos;
	const unsigned char *start;
};

static void *
arena_alloc(struct json_doc *doc, size_t n)
{
	struct arena_chunk *c = doc->chunks;
	size_t		    cap;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (c == NULL || c->cap - c->used < n) {
		cap = 4096;
		if (c && c->cap < 1024 * 1024)
			cap = c->cap * 2;
		if (cap < n)
			cap = n;
		if ((c = malloc(sizeof(*c) + cap)) == NULL)
			fatal("json arena");
		c->cap = cap;
		c->used = 0;
		c->next = doc->chunks;
		doc->chunks = c;
	}
	c->used += n;
	return (char *)c->data + c->used - n;
}

void
json_free(struct json_doc *doc)
{
	struct arena_chunk *c, *next;

	if (doc == NULL)
		return;
	for (c = doc->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(doc);
}

static int
fail(struct parser *ps, const char *why)
{
	if (ps->err == NULL) {
		ps->err = why;
		ps->errpos = (size_t)(ps->p - ps->start);
	}
	return -1;
}

static void
skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	    (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
		*ps->p == '\r'))
		ps->p++;
}

static int
hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;
	int	 i;

	for (i = 0; i < 4; i++) {
		v <<= 4;
		if (p[i] >= '0' && p[i] <= '9')
			v |= (unsigned)(p[i] - '0');
		else if (p[i] >= 'a' && p[i] <= 'f')
			v |= (unsigned)(p[i] - 'a' + 10);
		else if (p[i] >= 'A' && p[i] <= 'F')
			v |= (unsigned)(p[i] - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t
put_utf8(unsigned char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of the valid UTF-8 sequence at p, or 0 (RFC 3629 table). */
static size_t
utf8_seq(const unsigned char *p, const unsigned char *end)
{
	size_t n = (size_t)(end - p);

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		return (n >= 2 && (p[1] & 0xc0) == 0x80) ? 2 : 0;
	if (p[0] >= 0xe0 && p[0] <= 0xef) {
		if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
			return 0;
		if (p[0] == 0xe0 && p[1] < 0xa0)
			return 0; /* overlong */
		if (p[0] == 0xed && p[1] >= 0xa0)
			return 0; /* surrogate */
		return 3;
	}
	if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		if (p[0] == 0xf0 && p[1] < 0x90)
			return 0;
		if (p[0] == 0xf4 && p[1] >= 0x90)
			return 0;
		return 4;
	}
	return 0;
}

/* Ours: bytes of value b in each of the eight lanes of a word. */
#define LANES(b) (0x0101010101010101ULL * (b))

/*
 * 1 if [p, q) holds only bytes a JSON string carries as they are:
 * printable ASCII and DEL, no backslash.  Most strings of an event are
 * such (ids, keys, signatures, tag names and values, plain content).
 * Eight bytes a step: (x - LANES(n)) & ~x & LANES(0x80) is nonzero when
 * some byte of x is below n (n <= 0x80), the usual zero-byte test;
 * against x ^ LANES('\\') it finds a backslash.
 */
static int
plain_ascii(const unsigned char *p, const unsigned char *q)
{
	uint64_t x, y, bad = 0;

	for (; q - p >= 8; p += 8) {
		memcpy(&x, p, 8);
		y = x ^ LANES('\\');
		bad |= x | ((x - LANES(0x20)) & ~x) | ((y - LANES(0x01)) & ~y);
	}
	for (; p < q; p++)
		bad |= (uint64_t)(*p < 0x20 || *p == '\\') << 7 | *p;
	return (bad & LANES(0x80)) == 0;
}

static int
parse_string(struct parser *ps, char **out, size_t *outlen)
{
	const unsigned char *p = ps->p + 1, *q;
	unsigned char	    *dst, *o;
	size_t		     n;
	unsigned	     cp, lo;

	/* The common case: no escape, nothing to check as UTF-8. */
	q = memchr(p, '"', (size_t)(ps->end - p));
	if (q != NULL && plain_ascii(p, q)) {
		n = (size_t)(q - p);
		dst = arena_alloc(ps->doc, n + 1);
		memcpy(dst, p, n);
		dst[n] = '\0';
		*out = (char *)dst;
		*outlen = n;
		ps->p = q + 1;
		return 0;
	}

	/* First pass: find the end; the decoded form is never longer. */
	for (q = p; q < ps->end && *q != '"'; q++)
		if (*q == '\\' && ++q == ps->end)
			break;
	if (q >= ps->end)
		return fail(ps, "unterminated string");
	dst = o = arena_alloc(ps->doc, (size_t)(q - p) + 1);
	while (p < q) {
		if (*p == '\\') {
			p++;
			switch (*p) {
			case '"':
				*o++ = '"';
				p++;
				break;
			case '\\':
				*o++ = '\\';
				p++;
				break;
			case '/':
				*o++ = '/';
				p++;
				break;
			case 'b':
				*o++ = '\b';
				p++;
				break;
			case 'f':
				*o++ = '\f';
				p++;
				break;
			case 'n':
				*o++ = '\n';
				p++;
				break;
			case 'r':
				*o++ = '\r';
				p++;
				break;
			case 't':
				*o++ = '\t';
				p++;
				break;
			case 'u':
				if (q - p < 5 || hex4(p + 1, &cp) == -1) {
					ps->p = p;
					return fail(ps, "bad \\u escape");
				}
				p += 5;
				if (cp >= 0xdc00 && cp <= 0xdfff) {
					ps->p = p;
					return fail(ps, "lone surrogate");
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (q - p < 6 || p[0] != '\\' ||
					    p[1] != 'u' ||
					    hex4(p + 2, &lo) == -1 ||
					    lo < 0xdc00 || lo > 0xdfff) {
						ps->p = p;
						return fail(ps,
						    "lone surrogate");
					}
					p += 6;
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					    (lo - 0xdc00);
				}
				o += put_utf8(o, cp);
				break;
			default:
				ps->p = p;
				return fail(ps, "bad escape");
			}
			continue;
		}
		if (*p < 0x20) {
			ps->p = p;
			return fail(ps, "control character in string");
		}
		if (*p < 0x80) {
			*o++ = *p++;
			continue;
		}
		if ((n = utf8_seq(p, q)) == 0) {
			ps->p = p;
			return fail(ps, "invalid UTF-8");
		}
		memcpy(o, p, n);
		o += n;
		p += n;
	}
	*o = '\0';
	*out = (char *)dst;
	*outlen = (size_t)(o - dst);
	ps->p = q + 1;
	return 0;
}

static int
parse_number(struct parser *ps, struct json *v)
{
	const unsigned char *p = ps->p, *digits;
	char		     tmp[64];
	size_t		     n;
	int		     integral = 1;
	char		    *end;

	if (p < ps->end && *p == '-')
		p++;
	digits = p;
	if (p >= ps->end || *p < '0' || *p > '9')
		return fail(ps, "bad number");
	if (*p == '0' && p + 1 < ps->end && p[1] >= '0' && p[1] <= '9')
		return fail(ps, "leading zero");
	while (p < ps->end && *p >= '0' && *p <= '9')
		p++;
	if (p < ps->end && *p == '.') {
		integral = 0;
		p++;
		if (p >= ps->end || *p < '0' || *p > '9')
			return fail(ps, "bad number");
		while (p < ps->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < ps->end && (*p == 'e' || *p == 'E')) {
		integral = 0;
		p++;
		if (p < ps->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= ps->end || *p < '0' || *p > '9')
			return fail(ps, "bad number");
		while (p < ps->end && *p >= '0' && *p <= '9')
			p++;
	}
	n = (size_t)(p - ps->p);
	if (n >= sizeof(tmp))
		return fail(ps, "number too long");
	memcpy(tmp, ps->p, n);
	tmp[n] = '\0';
	v->type = JSON_NUMBER;
	v->d = strtod(tmp, NULL);
	v->is_int = 0;
	if (integral && (size_t)(p - digits) <= 19) {
		errno = 0;
		v->i = strtoll(tmp, &end, 10);
		if (errno == 0)
			v->is_int = 1;
	}
	ps->p = p;
	return 0;
}

static int
literal(struct parser *ps, const char *word, enum json_type t, struct json *v)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "unexpected character");
	ps->p += n;
	v->type = t;
	return 0;
}

static int parse_value(struct parser *, struct json *, int);

static int
parse_container(struct parser *ps, struct json *v, int depth, int object)
{
	struct json **tail = &v->child, *e;
	char	      close = object ? '}' : ']';

	if (depth >= JSON_MAX_DEPTH)
		return fail(ps, "nested too deeply");
	v->type = object ? JSON_OBJECT : JSON_ARRAY;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		e = arena_alloc(ps->doc, sizeof(*e));
		memset(e, 0, sizeof(*e));
		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected member name");
			if (parse_string(ps, &e->key, &e->keylen) == -1)
				return -1;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, "expected ':'");
			ps->p++;
		}
		if (parse_value(ps, e, depth + 1) == -1)
			return -1;
		*tail = e;
		tail = &e->next;
		v->n++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, "unexpected end");
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return 0;
		}
		return fail(ps,
		    object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int
parse_value(struct parser *ps, struct json *v, int depth)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end");
	switch (*ps->p) {
	case '{':
		return parse_container(ps, v, depth, 1);
	case '[':
		return parse_container(ps, v, depth, 0);
	case '"':
		v->type = JSON_STRING;
		return parse_string(ps, &v->s, &v->len);
	case 't':
		return literal(ps, "true", JSON_TRUE, v);
	case 'f':
		return literal(ps, "false", JSON_FALSE, v);
	case 'n':
		return literal(ps, "null", JSON_NULL, v);
	default:
		return parse_number(ps, v);
	}
}

struct json *
json_parse(const char *buf, size_t len, struct json_doc **docp, char *err,
    size_t errlen)
{
	struct parser ps;
	struct json  *root;

	*docp = NULL;
	memset(&ps, 0, sizeof(ps));
	ps.start = ps.p = (const unsigned char *)buf;
	ps.end = ps.p + len;
	if ((ps.doc = calloc(1, sizeof(*ps.doc))) == NULL)
		fatal("json_parse");
	root = arena_alloc(ps.doc, sizeof(*root));
	memset(root, 0, sizeof(*root));
	if (parse_value(&ps, root, 0) == 0) {
		skip_ws(&ps);
		if (ps.p == ps.end) {
			*docp = ps.doc;
			return root;
		}
		fail(&ps, "trailing characters");
	}
	if (err && errlen)
		snprintf(err, errlen, "%s at byte %zu", ps.err, ps.errpos);
	json_free(ps.doc);
	return NULL;
}

struct json *
json_get(const struct json *obj, const char *key)
{
	struct json *e;
	size_t	     n = strlen(key);

	if (obj == NULL || obj->type != JSON_OBJECT)
		return NULL;
	for (e = obj->child; e; e = e->next)
		if (e->keylen == n && memcmp(e->key, key, n) == 0)
			return e;
	return NULL;
}

struct json *
json_at(const struct json *arr, size_t i)
{
	struct json *e;

	if (arr == NULL || arr->type != JSON_ARRAY)
		return NULL;
	for (e = arr->child; e && i > 0; e = e->next)
		i--;
	return e;
}

void
json_write(struct buf *b, const struct json *v)
{
	const struct json *e;

	switch (v->type) {
	case JSON_NULL:
		buf_adds(b, "null");
		break;
	case JSON_FALSE:
		buf_adds(b, "false");
		break;
	case JSON_TRUE:
		buf_adds(b, "true");
		break;
	case JSON_NUMBER:
		if (v->is_int)
			buf_printf(b, "%lld", (long long)v->i);
		else
			buf_printf(b, "%.17g", v->d);
		break;
	case JSON_STRING:
		buf_add_jstr(b, v->s, v->len);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		buf_addc(b, v->type == JSON_ARRAY ? '[' : '{');
		for (e = v->child; e != NULL; e = e->next) {
			if (e != v->child)
				buf_addc(b, ',');
			if (v->type == JSON_OBJECT) {
				buf_add_jstr(b, e->key, e->keylen);
				buf_addc(b, ':');
			}
			json_write(b, e);
		}
		buf_addc(b, v->type == JSON_ARRAY ? ']' : '}');
		break;
	}
}

size_t
json_write_members(struct buf *b, const struct json *o, const char *skip)
{
	const struct json *e;
	size_t		   n = 0;

	for (e = o->child; e != NULL; e = e->next) {
		if (skip != NULL && e->keylen == strlen(skip) &&
		    memcmp(e->key, skip, e->keylen) == 0)
			continue;
		if (n++ > 0)
			buf_addc(b, ',');
		buf_add_jstr(b, e->key, e->keylen);
		buf_addc(b, ':');
		json_write(b, e);
	}
	return n;
}
