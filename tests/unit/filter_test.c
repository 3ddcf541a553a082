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

static const uint8_t sk1[SECKEY_LEN] = { [0 ... 31] = 0x11 };
static const uint8_t sk2[SECKEY_LEN] = { [0 ... 31] = 0x22 };

#define HEX_A \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_UP \
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" \
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define HEX_62 \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_B \
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" \
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char err[256];

/* Parses text as one filter; returns filter_parse's result. */
static int
parse(const char *text, struct filter *f)
{
	struct json_doc *doc = NULL;
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
	struct filter f;
	int	      r = parse(text, &f);

	filter_free(&f);
	return r == -1 && strncmp(err, prefix, strlen(prefix)) == 0;
}

/* The cases that own rows of refusals[], by name. */
#define R_PREFIX  "parse_rejects_prefix_ids_and_authors"
#define R_UPPER	  "parse_rejects_uppercase_or_prefixed_hex"
#define R_UNKNOWN "parse_rejects_unknown_member_as_unsupported"
#define R_MULTI	  "parse_rejects_multi_letter_tag_filters"
#define R_NUMBER  "parse_rejects_negative_or_non_integer_numbers"
#define R_KINDS	  "parse_rejects_bad_kinds"
#define R_SHAPE	  "parse_rejects_wrong_shapes"
#define R_DUP	  "parse_rejects_duplicate_members"

/* Filters filter_parse() refuses, and how its error starts. */
static const struct {
	const char *owner, *text, *prefix;
} refusals[] = {
	{ R_PREFIX, "{\"ids\":[\"abcd\"]}", "invalid: " },
	{ R_PREFIX, "{\"authors\":[\"aaaa\"]}", "invalid: " },
	{ R_PREFIX, "{\"ids\":[\"" HEX_A "aa\"]}", "invalid: " },
	{ R_PREFIX, "{\"#e\":[\"abcd\"]}", "invalid: " },
	{ R_PREFIX, "{\"#p\":[\"" HEX_A "0\"]}", "invalid: " },
	{ R_UPPER, "{\"ids\":[\"" HEX_UP "\"]}", "invalid: " },
	{ R_UPPER, "{\"authors\":[\"" HEX_UP "\"]}", "invalid: " },
	{ R_UPPER, "{\"#e\":[\"" HEX_UP "\"]}", "invalid: " },
	{ R_UPPER, "{\"#p\":[\"" HEX_UP "\"]}", "invalid: " },
	/* 0x plus 62 digits is 64 characters but not hex. */
	{ R_UPPER, "{\"ids\":[\"0x" HEX_62 "\"]}", "invalid: " },
	{ R_UPPER, "{\"ids\":[1]}", "invalid: " },
	{ R_UNKNOWN, "{\"search\":\"x\"}",
	    "unsupported: unrecognised filter item search" },
	{ R_UNKNOWN, "{\"kinds\":[1],\"foo\":1}",
	    "unsupported: unrecognised filter item foo" },
	{ R_UNKNOWN, "{\"e\":[\"x\"]}",
	    "unsupported: unrecognised filter item e" },
	{ R_MULTI, "{\"#foo\":[\"x\"]}", "unsupported: " },
	{ R_MULTI, "{\"#\":[\"x\"]}", "unsupported: " },
	{ R_MULTI, "{\"#1\":[\"x\"]}", "unsupported: " },
	{ R_NUMBER, "{\"since\":-1}", "invalid: " },
	{ R_NUMBER, "{\"until\":-5}", "invalid: " },
	{ R_NUMBER, "{\"limit\":-1}", "invalid: " },
	{ R_NUMBER, "{\"limit\":1.5}", "invalid: " },
	{ R_NUMBER, "{\"since\":\"10\"}", "invalid: " },
	{ R_NUMBER, "{\"until\":null}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[1.5]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[1.0]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[1e2]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[-1]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[65536]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":[\"1\"]}", "invalid: " },
	{ R_KINDS, "{\"kinds\":1}", "invalid: " },
	{ R_SHAPE, "[]", "invalid: " },
	{ R_SHAPE, "1", "invalid: " },
	{ R_SHAPE, "{\"ids\":\"" HEX_A "\"}", "invalid: " },
	{ R_SHAPE, "{\"#t\":\"x\"}", "invalid: " },
	{ R_SHAPE, "{\"#t\":[1]}", "invalid: " },
	{ R_SHAPE, "{\"#t\":[[\"x\"]]}", "invalid: " },
	{ R_DUP, "{\"kinds\":[1],\"kinds\":[2]}", "invalid: " },
	{ R_DUP, "{\"#t\":[\"a\"],\"#t\":[\"b\"]}", "invalid: " },
};

/*
 * Checks that each row of refusals[] owned by the case named owner is
 * refused with its prefix, in table order (err keeps the last one's
 * error); returns how many rows it checked.
 */
static int
refuses(const char *owner)
{
	char   msg[300];
	size_t i;
	int    n = 0;

	for (i = 0; i < T_NCASES(refusals); i++) {
		if (strcmp(refusals[i].owner, owner) != 0)
			continue;
		n++;
		if (!refused(refusals[i].text, refusals[i].prefix)) {
			snprintf(msg, sizeof(msg),
			    "%s: want \"%s\", got "
			    "\"%s\"",
			    refusals[i].text, refusals[i].prefix, err);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	}
	return n;
}

/* A case whose checks are its rows of refusals[]. */
static void
refusals_of_the_case(void)
{
	T_CHECK(refuses(t_case) > 0);
}

/* Parses text and matches ev against it; -1 if the filter is refused. */
static int
matches(const char *text, const struct event *ev)
{
	struct filter f;
	int	      r;

	if (parse(text, &f) != 0)
		return -1;
	r = filter_match(&f, ev);
	filter_free(&f);
	return r;
}

static void
parse_accepts_every_member(void)
{
	struct filter f;

	T_ASSERT(
	    parse(
		"{\"ids\":[\"" HEX_A "\"],\"authors\":[\"" HEX_B
		"\"],\"kinds\":[1,30617],\"#e\":[\"" HEX_A "\"],\"#t\":[\"x\","
		"\"y\"],\"#A\":[\"z\"],\"since\":10,\"until\":20,\"limit\":5}",
		&f) == 0);
	T_CHECK(f.f_has_ids && f.f_nids == 1 && f.f_ids[0][0] == 0xaa);
	T_CHECK(
	    f.f_has_authors && f.f_nauthors == 1 && f.f_authors[0][31] == 0xbb);
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
parse_rejects_multi_letter_tag_filters(void)
{
	T_CHECK(refuses(R_MULTI) > 0);
	T_CHECK(strstr(err, "#1") != NULL);
}

static void
parse_rejects_wrong_shapes(void)
{
	struct filter f;

	T_CHECK(refuses(R_SHAPE) > 0);
	T_CHECK(filter_parse(NULL, &f, err, sizeof(err)) == -1);
}

static void
parse_caps_values_per_list(void)
{
	struct filter f;
	char	     *text;
	size_t	      i, len = 0, cap = 16 * (FILTER_MAX_VALUES + 2);
	int	      n;

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
	struct filter f;

	T_ASSERT(parse("{\"kinds\":[7,1,7,3,1],\"ids\":[\"" HEX_B "\",\"" HEX_A
		       "\",\"" HEX_B "\"],\"#t\":[\"b\",\"a\",\"b\",\"ab\"]}",
		     &f) == 0);
	T_CHECK(f.f_nkinds == 3 && f.f_kinds[0] == 1 && f.f_kinds[1] == 3 &&
	    f.f_kinds[2] == 7);
	T_CHECK(
	    f.f_nids == 2 && f.f_ids[0][0] == 0xaa && f.f_ids[1][0] == 0xbb);
	T_CHECK(f.f_tags[0].ft_n == 3);
	filter_free(&f);
}

static void
empty_lists_match_nothing(void)
{
	struct event *ev =
	    event_new_signed(sk1, 100, 1, "[[\"t\",\"x\"]]", "hi");
	const char *empties[] = { "{\"ids\":[]}", "{\"authors\":[]}",
		"{\"kinds\":[]}", "{\"#t\":[]}", "{\"kinds\":[1],\"#e\":[]}" };
	size_t	    i;

	T_ASSERT(ev != NULL);
	T_CHECK(matches("{}", ev) == 1);
	for (i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		struct filter f;

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
	struct event *ev = event_new_signed(sk1, 100, 1621, NULL, "x");
	struct event *other = event_new_signed(sk2, 100, 1, NULL, "y");
	char	      text[512];

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

/* A filter and whether an event matches it (1) or not (0). */
struct matching {
	const char *text;
	int	    want;
};

static const struct matching since_until[] = {
	{ "{\"since\":100}", 1 },
	{ "{\"since\":101}", 0 },
	{ "{\"until\":100}", 1 },
	{ "{\"until\":99}", 0 },
	{ "{\"since\":100,\"until\":100}", 1 },
	{ "{\"since\":101,\"until\":99}", 0 },
	/* limit is the store's business, not matching's. */
	{ "{\"limit\":0}", 1 },
};

static const struct matching first_values[] = {
	{ "{\"#t\":[\"first\"]}", 1 },
	{ "{\"#t\":[\"nope\",\"first\"]}", 1 },
	{ "{\"#t\":[\"second\"]}", 0 },
	{ "{\"#e\":[\"" HEX_A "\"]}", 1 },
	{ "{\"#e\":[\"" HEX_B "\"]}", 0 },
	/* A tag with no value matches nothing; names are case-sensitive. */
	{ "{\"#x\":[\"\"]}", 0 },
	{ "{\"#T\":[\"first\"]}", 0 },
	{ "{\"#T\":[\"upper\"]}", 1 },
	{ "{\"#t\":[\"upper\"]}", 0 },
	/* Multi-letter tags are not indexed, so "tt" is not "t". */
	{ "{\"#t\":[\"long\"]}", 0 },
	/* AND across tag conditions. */
	{ "{\"#t\":[\"first\"],\"#e\":[\"" HEX_A "\"]}", 1 },
	{ "{\"#t\":[\"first\"],\"#e\":[\"" HEX_B "\"]}", 0 },
};

static const struct matching nul_values[] = {
	{ "{\"#t\":[\"a\\u0000b\"]}", 1 },
	{ "{\"#t\":[\"a\"]}", 0 },
	{ "{\"#t\":[\"a\\u0000c\"]}", 0 },
};

/* The cases that match a kind 1 event by sk1 at 100 with these tags. */
static const struct {
	const char	      *name, *tags;
	const struct matching *v;
	size_t		       n;
} match_cases[] = {
	{ "match_since_until_inclusive", NULL, since_until,
	    T_NCASES(since_until) },
	{ "match_tags_on_first_value_only",
	    "[[\"t\",\"first\",\"second\"],[\"e\",\"" HEX_A "\"],[\"x\"],"
	    "[\"tt\",\"long\"],[\"T\",\"upper\"]]",
	    first_values, T_NCASES(first_values) },
	{ "match_tag_values_are_nul_safe", "[[\"t\",\"a\\u0000b\"]]",
	    nul_values, T_NCASES(nul_values) },
};

/* A case of match_cases[]: its event against each of its filters. */
static void
matches_of_the_case(void)
{
	const struct matching *v = NULL;
	struct event	      *ev = NULL;
	char		       msg[300];
	size_t		       i, n = 0;
	int		       got;

	for (i = 0; i < T_NCASES(match_cases) && v == NULL; i++)
		if (strcmp(match_cases[i].name, t_case) == 0) {
			ev = event_new_signed(sk1, 100, 1, match_cases[i].tags,
			    "x");
			v = match_cases[i].v;
			n = match_cases[i].n;
		}
	T_ASSERT(v != NULL && ev != NULL);
	for (i = 0; i < n; i++)
		if ((got = matches(v[i].text, ev)) != v[i].want) {
			snprintf(msg, sizeof(msg), "%s: want %d, got %d",
			    v[i].text, v[i].want, got);
			t_fail_at(__FILE__, __LINE__, msg);
		}
	event_destroy(ev);
}

static void
match_any_is_or_across_filters(void)
{
	struct event *ev = event_new_signed(sk1, 100, 7, NULL, "x");
	struct filter f[2];

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
	{ R_PREFIX, refusals_of_the_case },
	{ R_UPPER, refusals_of_the_case },
	{ R_UNKNOWN, refusals_of_the_case },
	T_CASE(parse_rejects_multi_letter_tag_filters),
	{ R_NUMBER, refusals_of_the_case },
	{ R_KINDS, refusals_of_the_case },
	T_CASE(parse_rejects_wrong_shapes),
	{ R_DUP, refusals_of_the_case },
	T_CASE(parse_caps_values_per_list),
	T_CASE(parse_sorts_and_dedupes_lists),
	T_CASE(empty_lists_match_nothing),
	T_CASE(match_ids_authors_kinds),
	{ "match_since_until_inclusive", matches_of_the_case },
	{ "match_tags_on_first_value_only", matches_of_the_case },
	{ "match_tag_values_are_nul_safe", matches_of_the_case },
	T_CASE(match_any_is_or_across_filters),
};

T_MAIN(cases)
