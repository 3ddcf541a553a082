/*
 * filter_test.c: NIP-01 filter parsing (strictness, error texts) and
 * matching (filter.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "filter.h"
#include "json.h"
#include "t.h"

static const uint8_t	 sk1[32] = { [0 ... 31] = 0x11 };
static const uint8_t	 sk2[32] = { [0 ... 31] = 0x22 };

#define HEX_A	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" \
		"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char	 err[256];

/* Parses text as one filter; returns filter_parse's result. */
static int
parse(const char *text, struct filter *f)
{
	struct json_doc	*doc = NULL;
	struct json	*j;
	int		 r;

	err[0] = '\0';
	j = json_parse(text, strlen(text), &doc, err, sizeof(err));
	if (j == NULL) {
		memset(f, 0, sizeof(*f));
		snprintf(err, sizeof(err), "test: bad JSON");
		return -2;
	}
	r = filter_parse(j, f, err, sizeof(err));
	json_free(doc);
	return r;
}

/* 1 if text is refused and the error starts with prefix. */
static int
refused(const char *text, const char *prefix)
{
	struct filter	f;
	int		r = parse(text, &f);

	filter_free(&f);
	return r == -1 && strncmp(err, prefix, strlen(prefix)) == 0;
}

/* Parses text and matches ev against it; -1 if the filter is refused. */
static int
matches(const char *text, const struct event *ev)
{
	struct filter	f;
	int		r;

	if (parse(text, &f) != 0)
		return -1;
	r = filter_match(&f, ev);
	filter_free(&f);
	return r;
}

static void
parse_accepts_every_member(void)
{
	struct filter	f;

	T_ASSERT(parse("{\"ids\":[\"" HEX_A "\"],\"authors\":[\"" HEX_B
	    "\"],\"kinds\":[1,30617],\"#e\":[\"" HEX_A "\"],\"#t\":[\"x\","
	    "\"y\"],\"#A\":[\"z\"],\"since\":10,\"until\":20,\"limit\":5}",
	    &f) == 0);
	T_CHECK(f.f_has_ids && f.f_nids == 1 && f.f_ids[0][0] == 0xaa);
	T_CHECK(f.f_has_authors && f.f_nauthors == 1 &&
	    f.f_authors[0][31] == 0xbb);
	T_CHECK(f.f_has_kinds && f.f_nkinds == 2 && f.f_kinds[0] == 1 &&
	    f.f_kinds[1] == 30617);
	T_CHECK(f.f_ntags == 3);
	/* Sorted by name: 'A' < 'e' < 't'. */
	T_CHECK(f.f_tags[0].ft_name == 'A' && f.f_tags[1].ft_name == 'e' &&
	    f.f_tags[2].ft_name == 't');
	T_CHECK(f.f_tags[2].ft_n == 2);
	T_CHECK(f.f_has_since && f.f_since == 10);
	T_CHECK(f.f_has_until && f.f_until == 20);
	T_CHECK(f.f_has_limit && f.f_limit == 5);
	T_CHECK(!f.f_empty);
	filter_free(&f);

	T_ASSERT(parse("{}", &f) == 0);
	T_CHECK(!f.f_has_ids && !f.f_has_limit && f.f_ntags == 0);
	filter_free(&f);
}

static void
parse_rejects_prefix_ids_and_authors(void)
{
	T_CHECK(refused("{\"ids\":[\"abcd\"]}", "invalid: "));
	T_CHECK(refused("{\"authors\":[\"aaaa\"]}", "invalid: "));
	T_CHECK(refused("{\"ids\":[\"" HEX_A "aa\"]}", "invalid: "));
	T_CHECK(refused("{\"#e\":[\"abcd\"]}", "invalid: "));
	T_CHECK(refused("{\"#p\":[\"" HEX_A "0\"]}", "invalid: "));
}

static void
parse_rejects_uppercase_or_prefixed_hex(void)
{
	const char	*upper =
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

	char	 text[200];

	snprintf(text, sizeof(text), "{\"ids\":[\"%s\"]}", upper);
	T_CHECK(refused(text, "invalid: "));
	snprintf(text, sizeof(text), "{\"authors\":[\"%s\"]}", upper);
	T_CHECK(refused(text, "invalid: "));
	snprintf(text, sizeof(text), "{\"#e\":[\"%s\"]}", upper);
	T_CHECK(refused(text, "invalid: "));
	snprintf(text, sizeof(text), "{\"#p\":[\"%s\"]}", upper);
	T_CHECK(refused(text, "invalid: "));
	/* 0x plus 62 digits is 64 characters but not hex. */
	snprintf(text, sizeof(text), "{\"ids\":[\"0x%.62s\"]}", HEX_A);
	T_CHECK(refused(text, "invalid: "));
	T_CHECK(refused("{\"ids\":[1]}", "invalid: "));
}

static void
parse_rejects_unknown_member_as_unsupported(void)
{
	T_CHECK(refused("{\"search\":\"x\"}",
	    "unsupported: unrecognised filter item search"));
	T_CHECK(refused("{\"kinds\":[1],\"foo\":1}",
	    "unsupported: unrecognised filter item foo"));
	T_CHECK(refused("{\"e\":[\"x\"]}",
	    "unsupported: unrecognised filter item e"));
}

static void
parse_rejects_multi_letter_tag_filters(void)
{
	T_CHECK(refused("{\"#foo\":[\"x\"]}", "unsupported: "));
	T_CHECK(refused("{\"#\":[\"x\"]}", "unsupported: "));
	T_CHECK(refused("{\"#1\":[\"x\"]}", "unsupported: "));
	T_CHECK(strstr(err, "#1") != NULL);
}

static void
parse_rejects_negative_or_non_integer_numbers(void)
{
	T_CHECK(refused("{\"since\":-1}", "invalid: "));
	T_CHECK(refused("{\"until\":-5}", "invalid: "));
	T_CHECK(refused("{\"limit\":-1}", "invalid: "));
	T_CHECK(refused("{\"limit\":1.5}", "invalid: "));
	T_CHECK(refused("{\"since\":\"10\"}", "invalid: "));
	T_CHECK(refused("{\"until\":null}", "invalid: "));
}

static void
parse_rejects_bad_kinds(void)
{
	T_CHECK(refused("{\"kinds\":[1.5]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":[1.0]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":[1e2]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":[-1]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":[65536]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":[\"1\"]}", "invalid: "));
	T_CHECK(refused("{\"kinds\":1}", "invalid: "));
}

static void
parse_rejects_wrong_shapes(void)
{
	struct filter	 f;

	T_CHECK(refused("[]", "invalid: "));
	T_CHECK(refused("1", "invalid: "));
	T_CHECK(refused("{\"ids\":\"" HEX_A "\"}", "invalid: "));
	T_CHECK(refused("{\"#t\":\"x\"}", "invalid: "));
	T_CHECK(refused("{\"#t\":[1]}", "invalid: "));
	T_CHECK(refused("{\"#t\":[[\"x\"]]}", "invalid: "));
	T_CHECK(filter_parse(NULL, &f, err, sizeof(err)) == -1);
}

static void
parse_rejects_duplicate_members(void)
{
	T_CHECK(refused("{\"kinds\":[1],\"kinds\":[2]}", "invalid: "));
	T_CHECK(refused("{\"#t\":[\"a\"],\"#t\":[\"b\"]}", "invalid: "));
}

static void
parse_caps_values_per_list(void)
{
	struct filter	f;
	char		*text;
	size_t		 i, len = 0, cap = 16 * (FILTER_MAX_VALUES + 2);
	int		 n;

	if ((text = malloc(cap)) == NULL)
		abort();
	for (n = FILTER_MAX_VALUES; n <= FILTER_MAX_VALUES + 1; n++) {
		len = (size_t)snprintf(text, cap, "{\"kinds\":[");
		for (i = 0; i < (size_t)n; i++)
			len += (size_t)snprintf(text + len, cap - len, "%s%zu",
			    i ? "," : "", i);
		snprintf(text + len, cap - len, "]}");
		if (n == FILTER_MAX_VALUES) {
			T_CHECK(parse(text, &f) == 0);
			T_CHECK(f.f_nkinds == FILTER_MAX_VALUES);
			filter_free(&f);
		} else
			T_CHECK(refused(text, "invalid: too many"));
	}
	free(text);
}

static void
parse_sorts_and_dedupes_lists(void)
{
	struct filter	f;

	T_ASSERT(parse("{\"kinds\":[7,1,7,3,1],\"ids\":[\"" HEX_B "\",\""
	    HEX_A "\",\"" HEX_B "\"],\"#t\":[\"b\",\"a\",\"b\",\"ab\"]}",
	    &f) == 0);
	T_CHECK(f.f_nkinds == 3 && f.f_kinds[0] == 1 && f.f_kinds[1] == 3 &&
	    f.f_kinds[2] == 7);
	T_CHECK(f.f_nids == 2 && f.f_ids[0][0] == 0xaa &&
	    f.f_ids[1][0] == 0xbb);
	T_CHECK(f.f_tags[0].ft_n == 3);
	filter_free(&f);
}

static void
empty_lists_match_nothing(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 1,
	    "[[\"t\",\"x\"]]", "hi");
	const char	*empties[] = { "{\"ids\":[]}", "{\"authors\":[]}",
	    "{\"kinds\":[]}", "{\"#t\":[]}", "{\"kinds\":[1],\"#e\":[]}" };
	size_t		 i;

	T_ASSERT(ev != NULL);
	T_CHECK(matches("{}", ev) == 1);
	for (i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		struct filter	f;

		T_CHECK(parse(empties[i], &f) == 0);
		T_CHECK(f.f_empty);
		T_CHECK(filter_match(&f, ev) == 0);
		filter_free(&f);
	}
	event_destroy(ev);
}

static void
match_ids_authors_kinds(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 1621, NULL, "x");
	struct event	*other = event_new_signed(sk2, 100, 1, NULL, "y");
	char		 text[512];

	T_ASSERT(ev != NULL && other != NULL);
	snprintf(text, sizeof(text), "{\"ids\":[\"%s\",\"%s\"]}", HEX_A,
	    ev->id_hex);
	T_CHECK(matches(text, ev) == 1);
	T_CHECK(matches(text, other) == 0);
	snprintf(text, sizeof(text), "{\"authors\":[\"%s\"]}", ev->pubkey_hex);
	T_CHECK(matches(text, ev) == 1);
	T_CHECK(matches(text, other) == 0);
	T_CHECK(matches("{\"kinds\":[1,1621]}", ev) == 1);
	T_CHECK(matches("{\"kinds\":[1,1621]}", other) == 1);
	T_CHECK(matches("{\"kinds\":[1617]}", ev) == 0);
	/* AND across members. */
	snprintf(text, sizeof(text), "{\"authors\":[\"%s\"],\"kinds\":[1]}",
	    ev->pubkey_hex);
	T_CHECK(matches(text, ev) == 0);
	T_CHECK(matches(text, other) == 0);
	event_destroy(ev);
	event_destroy(other);
}

static void
match_since_until_inclusive(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 1, NULL, "x");

	T_ASSERT(ev != NULL);
	T_CHECK(matches("{\"since\":100}", ev) == 1);
	T_CHECK(matches("{\"since\":101}", ev) == 0);
	T_CHECK(matches("{\"until\":100}", ev) == 1);
	T_CHECK(matches("{\"until\":99}", ev) == 0);
	T_CHECK(matches("{\"since\":100,\"until\":100}", ev) == 1);
	T_CHECK(matches("{\"since\":101,\"until\":99}", ev) == 0);
	/* limit is the store's business, not matching's. */
	T_CHECK(matches("{\"limit\":0}", ev) == 1);
	event_destroy(ev);
}

static void
match_tags_on_first_value_only(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 1,
	    "[[\"t\",\"first\",\"second\"],[\"e\",\"" HEX_A "\"],[\"x\"],"
	    "[\"tt\",\"long\"],[\"T\",\"upper\"]]", "x");

	T_ASSERT(ev != NULL);
	T_CHECK(matches("{\"#t\":[\"first\"]}", ev) == 1);
	T_CHECK(matches("{\"#t\":[\"nope\",\"first\"]}", ev) == 1);
	T_CHECK(matches("{\"#t\":[\"second\"]}", ev) == 0);
	T_CHECK(matches("{\"#e\":[\"" HEX_A "\"]}", ev) == 1);
	T_CHECK(matches("{\"#e\":[\"" HEX_B "\"]}", ev) == 0);
	/* A tag with no value matches nothing; names are case-sensitive. */
	T_CHECK(matches("{\"#x\":[\"\"]}", ev) == 0);
	T_CHECK(matches("{\"#T\":[\"first\"]}", ev) == 0);
	T_CHECK(matches("{\"#T\":[\"upper\"]}", ev) == 1);
	T_CHECK(matches("{\"#t\":[\"upper\"]}", ev) == 0);
	/* Multi-letter tags are not indexed, so "tt" is not "t". */
	T_CHECK(matches("{\"#t\":[\"long\"]}", ev) == 0);
	/* AND across tag conditions. */
	T_CHECK(matches("{\"#t\":[\"first\"],\"#e\":[\"" HEX_A "\"]}", ev)
	    == 1);
	T_CHECK(matches("{\"#t\":[\"first\"],\"#e\":[\"" HEX_B "\"]}", ev)
	    == 0);
	event_destroy(ev);
}

static void
match_tag_values_are_nul_safe(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 1,
	    "[[\"t\",\"a\\u0000b\"]]", "x");

	T_ASSERT(ev != NULL);
	T_CHECK(matches("{\"#t\":[\"a\\u0000b\"]}", ev) == 1);
	T_CHECK(matches("{\"#t\":[\"a\"]}", ev) == 0);
	T_CHECK(matches("{\"#t\":[\"a\\u0000c\"]}", ev) == 0);
	event_destroy(ev);
}

static void
match_any_is_or_across_filters(void)
{
	struct event	*ev = event_new_signed(sk1, 100, 7, NULL, "x");
	struct filter	 f[2];

	T_ASSERT(ev != NULL);
	T_ASSERT(parse("{\"kinds\":[1]}", &f[0]) == 0);
	T_ASSERT(parse("{\"kinds\":[7]}", &f[1]) == 0);
	T_CHECK(filter_match_any(f, 1, ev) == 0);
	T_CHECK(filter_match_any(f, 2, ev) == 1);
	filter_free(&f[0]);
	filter_free(&f[1]);
	event_destroy(ev);
}

static const struct t_case cases[] = {
	T_CASE(parse_accepts_every_member),
	T_CASE(parse_rejects_prefix_ids_and_authors),
	T_CASE(parse_rejects_uppercase_or_prefixed_hex),
	T_CASE(parse_rejects_unknown_member_as_unsupported),
	T_CASE(parse_rejects_multi_letter_tag_filters),
	T_CASE(parse_rejects_negative_or_non_integer_numbers),
	T_CASE(parse_rejects_bad_kinds),
	T_CASE(parse_rejects_wrong_shapes),
	T_CASE(parse_rejects_duplicate_members),
	T_CASE(parse_caps_values_per_list),
	T_CASE(parse_sorts_and_dedupes_lists),
	T_CASE(empty_lists_match_nothing),
	T_CASE(match_ids_authors_kinds),
	T_CASE(match_since_until_inclusive),
	T_CASE(match_tags_on_first_value_only),
	T_CASE(match_tag_values_are_nul_safe),
	T_CASE(match_any_is_or_across_filters),
};

T_MAIN(cases)
