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
	T_CASE(test_numbers_integer_or_not),
	T_CASE(test_objects_lookup),
};

T_MAIN(cases)
