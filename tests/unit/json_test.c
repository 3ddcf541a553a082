/*
 * json_test.c: the strict JSON reader refuses what RFC 8259 refuses and
 * keeps NULs, surrogate pairs and numbers exact.
 */
#include <string.h>

#include "json.h"
#include "t.h"

static struct json *
parse(const char *s, struct json_doc **doc)
{
	char err[128];

	return json_parse(s, strlen(s), doc, err, sizeof(err));
}

static void
test_invalid_documents_are_refused(void)
{
	static const char *bad[] = {
		"",
		"[",
		"[1,]",
		"{\"a\":1,}",
		"[01]",
		"[1.]",
		"[.5]",
		"[-]",
		"[\"\\x\"]",
		"[\"\x01\"]",
		"[\"\\ud800\"]",
		"[\"\\udc00\"]",
		"[\"\xc0\xaf\"]",
		"[\"\xed\xa0\x80\"]",
		"[\"\xff\"]",
		"[1] x",
		"tru",
		"[nul]",
		"{1:2}",
		"[\"abc",
		"[\"\\",
		"[\"\\u12\"]",
	};
	struct json_doc *doc;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &doc) != NULL) {
			char m[128];
			snprintf(m, sizeof(m), "accepted bad input #%zu", i);
			t_fail_at(__FILE__, __LINE__, m);
			json_free(doc);
		}
	}
}

static void
test_deep_nesting_is_bounded(void)
{
	char		 s[200];
	struct json_doc *doc;
	int		 i;

	for (i = 0; i < 100; i++)
		s[i] = '[';
	for (i = 0; i < 100; i++)
		s[100 + i] = ']';
	T_CHECK(json_parse(s, 200, &doc, NULL, 0) == NULL);
}

static void
test_strings_keep_nul_and_surrogates(void)
{
	struct json_doc *doc;
	struct json	*v;

	v = parse("[\"a\\u0000b\\ud83d\\ude00\\/\\u00e9\"]", &doc);
	T_ASSERT(v != NULL);
	T_EQ_INT(v->n, 1);
	T_EQ_INT(v->child->len, 3 + 4 + 1 + 2);
	T_CHECK(memcmp(v->child->s, "a\0b\xf0\x9f\x98\x80/\xc3\xa9", 10) == 0);
	json_free(doc);
}

/* The string of "[\"<s>\"]", or NULL if it is refused; *len its length. */
static char *
string_of(const char *s, size_t n, struct json_doc **doc, size_t *len)
{
	char	     buf[64], err[128];
	struct json *v;

	if (n + 4 > sizeof(buf))
		return NULL;
	buf[0] = '[';
	buf[1] = '"';
	memcpy(buf + 2, s, n);
	buf[n + 2] = '"';
	buf[n + 3] = ']';
	if ((v = json_parse(buf, n + 4, doc, err, sizeof(err))) == NULL)
		return NULL;
	*len = v->child->len;
	return v->child->s;
}

/*
 * Each kind of byte at each place of strings 0 to 24 bytes long (the
 * plain strings are read eight bytes a step, then one a step): space,
 * '~' and DEL kept, a control byte or a lone 0x80 refused, an escape
 * (also of a quote) decoded, a two-byte UTF-8 letter kept.
 */
static void
test_every_byte_kind_at_every_place(void)
{
	static const struct {
		const char *in, *out; /* out NULL: refused */
	} kinds[] = {
		{ " ", " " },
		{ "~", "~" },
		{ "\x7f", "\x7f" },
		{ "\x01", NULL },
		{ "\x1f", NULL },
		{ "\x80", NULL },
		{ "\\n", "\n" },
		{ "\\\"", "\"" },
		{ "\\\\", "\\" },
		{ "\xc3\xa9", "\xc3\xa9" },
	};
	struct json_doc *doc;
	char		 in[32], want[32], *got;
	size_t		 len, pos, k, ni, no, glen;

	for (len = 0; len <= 24; len++) {
		memset(in, 'a', len);
		T_ASSERT((got = string_of(in, len, &doc, &glen)) != NULL);
		T_CHECK(glen == len && memcmp(got, in, len) == 0);
		json_free(doc);
		for (pos = 0; pos < len; pos++)
			for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
				ni = strlen(kinds[k].in);
				memset(in, 'a', pos);
				memcpy(in + pos, kinds[k].in, ni);
				memset(in + pos + ni, 'a', len - pos - 1);
				got = string_of(in, len - 1 + ni, &doc, &glen);
				if (kinds[k].out == NULL) {
					T_CHECK(got == NULL);
					continue;
				}
				T_ASSERT(got != NULL);
				no = strlen(kinds[k].out);
				memset(want, 'a', pos);
				memcpy(want + pos, kinds[k].out, no);
				memset(want + pos + no, 'a', len - pos - 1);
				T_CHECK(glen == len - 1 + no &&
				    memcmp(got, want, glen) == 0);
				json_free(doc);
			}
	}
}

static void
test_numbers_integer_or_not(void)
{
	struct json_doc *doc;
	struct json	*v;

	v = parse("[0, -5, 1790000000, 1.5, 1e3, 99999999999999999999]", &doc);
	T_ASSERT(v != NULL);
	T_CHECK(json_at(v, 0)->is_int && json_at(v, 0)->i == 0);
	T_CHECK(json_at(v, 1)->is_int && json_at(v, 1)->i == -5);
	T_CHECK(json_at(v, 2)->is_int && json_at(v, 2)->i == 1790000000);
	T_CHECK(!json_at(v, 3)->is_int);
	T_CHECK(!json_at(v, 4)->is_int);
	T_CHECK(!json_at(v, 5)->is_int);
	json_free(doc);
}

static void
test_objects_lookup(void)
{
	struct json_doc *doc;
	struct json	*v;

	v = parse(" { \"a\" : [true,false,null] , \"b\":{} } ", &doc);
	T_ASSERT(v != NULL);
	T_EQ_INT(v->n, 2);
	T_EQ_INT(json_get(v, "a")->n, 3);
	T_EQ_INT(json_at(json_get(v, "a"), 2)->type, JSON_NULL);
	T_EQ_INT(json_get(v, "b")->type, JSON_OBJECT);
	T_CHECK(json_get(v, "c") == NULL);
	json_free(doc);
}

static const struct t_case cases[] = {
	T_CASE(test_invalid_documents_are_refused),
	T_CASE(test_deep_nesting_is_bounded),
	T_CASE(test_strings_keep_nul_and_surrogates),
	T_CASE(test_every_byte_kind_at_every_place),
	T_CASE(test_numbers_integer_or_not),
	T_CASE(test_objects_lookup),
};

T_MAIN(cases)
