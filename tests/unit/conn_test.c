/*
 * conn_test.c: the pure parts of common/conn.c: the backoff schedule with
 * its cap and the 24 h dead rule, the connect and fetch timeouts in
 * production and test mode, rate-limit detection in NOTICE text and in
 * CLOSED/OK prefixes, and filter byte packing (bounds, stability,
 * de-duplication, value caps, errors), and the per-relay budget shared by
 * the roles (conn_budget.c: two budgets on one relay stand for two roles,
 * as their open file descriptions are told apart like processes).  No
 * network, no loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "conn.h"
#include "json.h"
#include "t.h"
#include "tdir.h"
#include "tunit_row.h"

static struct config
mkcfg(int base, int max, int test)
{
	struct config c;

	memset(&c, 0, sizeof(c));
	c.sync_base_backoff_secs = base;
	c.sync_max_backoff_secs = max;
	c.test = test;
	return c;
}

static int
near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

static void
backoff_doubles_from_base_to_the_cap(void)
{
	struct config	    c = mkcfg(5, 3600, 0);
	/* ngit-grasp-brief.md 3.10: 5, 10, ..., 2560, then 3600. */
	static const double want[] = { 5, 10, 20, 40, 80, 160, 320, 640, 1280,
		2560, 3600, 3600, 3600 };
	unsigned	    i;
	int		    dead;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		T_ASSERT(
		    near(conn_backoff_delay(&c, i + 1, 0, &dead), want[i]));
		T_EQ_INT(dead, 0);
	}
	/* A huge failure count neither overflows nor passes the cap. */
	T_ASSERT(near(conn_backoff_delay(&c, 100000, 3600, NULL), 3600));
}

static void
backoff_respects_a_low_cap(void)
{
	struct config c = mkcfg(5, 20, 0);

	T_ASSERT(near(conn_backoff_delay(&c, 1, 0, NULL), 5));
	T_ASSERT(near(conn_backoff_delay(&c, 2, 0, NULL), 10));
	T_ASSERT(near(conn_backoff_delay(&c, 3, 0, NULL), 20));
	T_ASSERT(near(conn_backoff_delay(&c, 4, 0, NULL), 20));
	c = mkcfg(7, 7, 0);
	T_ASSERT(near(conn_backoff_delay(&c, 9, 0, NULL), 7));
}

static void
backoff_marks_dead_after_a_day_of_failures(void)
{
	struct config c = mkcfg(5, 3600, 0);
	int	      dead = -1;

	T_ASSERT(
	    near(conn_backoff_delay(&c, 30, CONN_DEAD_AFTER - 1, &dead), 3600));
	T_EQ_INT(dead, 0);
	T_ASSERT(near(conn_backoff_delay(&c, 30, CONN_DEAD_AFTER, &dead),
	    CONN_DEAD_RETRY));
	T_EQ_INT(dead, 1);
	T_ASSERT(near(conn_backoff_delay(&c, 31, 2 * CONN_DEAD_AFTER, &dead),
	    24 * 3600));
	T_EQ_INT(dead, 1);
}

static void
backoff_shrinks_sixty_fold_in_test_mode(void)
{
	struct config c = mkcfg(5, 3600, 1);
	int	      dead;

	T_ASSERT(near(conn_backoff_delay(&c, 1, 0, NULL), 5.0 / 60));
	T_ASSERT(near(conn_backoff_delay(&c, 4, 0, NULL), 40.0 / 60));
	T_ASSERT(near(conn_backoff_delay(&c, 20, 0, NULL), 60));
	/* The day is scaled too: 24 min of failures make a relay dead. */
	T_ASSERT(near(conn_backoff_delay(&c, 20, 24 * 60 - 1, &dead), 60));
	T_EQ_INT(dead, 0);
	T_ASSERT(near(conn_backoff_delay(&c, 20, 24 * 60, &dead), 24 * 60));
	T_EQ_INT(dead, 1);
}

static void
connect_timeout_is_the_base_backoff_with_a_floor(void)
{
	struct config c = mkcfg(5, 3600, 0);

	T_ASSERT(near(conn_connect_timeout(&c), 5));
	c = mkcfg(5, 3600, 1);
	T_ASSERT(near(conn_connect_timeout(&c), CONN_CONNECT_TIMEOUT_MIN));
	c = mkcfg(60, 3600, 1);
	T_ASSERT(near(conn_connect_timeout(&c), 1));
}

static void
fetch_timeout_is_thirty_seconds_or_three_in_test_mode(void)
{
	struct config c = mkcfg(5, 3600, 0);

	T_ASSERT(near(conn_fetch_timeout(&c), 30));
	c.test = 1;
	T_ASSERT(near(conn_fetch_timeout(&c), 3));
}

/*
 * Texts, and whether a NOTICE of that text and a CLOSED or OK reason of
 * it say rate limit: a NOTICE by its words
 * (ngit-grasp-brief.md 3.9, lower-cased), a reason only by NIP-01's
 * machine-readable prefix, exact and case-sensitive.
 */
static const struct {
	const char *text;
	int	    notice, prefix;
} texts[] = {
	{ "rate limit exceeded", 1, 0 },
	{ "Rate-Limited: try later", 1, 0 },
	{ "you are being RATE LIMITED", 1, 0 },
	{ "limit on your rate", 1, 0 },
	{ "Too Many requests", 1, 0 },
	{ "please slow down", 1, 0 },
	{ "SLOW DOWN", 1, 0 },
	{ "throttled", 1, 0 },
	{ "Throttling in effect", 1, 0 },
	{ "error: rate of events", 0, 0 },
	{ "limit reached", 0, 0 },
	{ "too  many", 0, 0 },
	{ "slowdown", 0, 0 },
	{ "blocked: not allowed", 0, 0 },
	{ "", 0, 0 },
	{ "rate-limited: slow down", 1, 1 },
	{ "rate-limited:", 1, 1 },
	{ "rate-limited", 1, 0 },
	{ "Rate-Limited: slow down", 1, 0 },
	{ "error: rate-limited: no", 1, 0 },
	{ "blocked: rate limit", 1, 0 },
};

/* Checks every row of texts[] with fn: as a reason, or as a NOTICE. */
static void
classifies(int (*fn)(const char *, size_t), int reason)
{
	size_t i;

	for (i = 0; i < T_NCASES(texts); i++)
		T_ROW_INT(texts[i].text,
		    fn(texts[i].text, strlen(texts[i].text)),
		    reason ? texts[i].prefix : texts[i].notice);
}

static void
notice_text_classification(void)
{
	classifies(conn_notice_is_rate_limit, 0);
	/* Length is honoured: nothing past len is read. */
	T_EQ_INT(conn_notice_is_rate_limit("slow down", 6), 0);
	T_EQ_INT(conn_notice_is_rate_limit("too many\0", 9), 1);
}

static void
closed_and_ok_prefix_classification(void)
{
	classifies(conn_reason_is_rate_limited, 1);
}

static void
req_size_counts_the_longest_subscription_id(void)
{
	char req[256];
	int  n;

	n = snprintf(req, sizeof(req), "[\"REQ\",\"%0*d\",%s]", CONN_SUBID_MAX,
	    0, "{}");
	T_EQ_INT(conn_req_size(2), n);
}

/* 64 hex characters from n. */
static char *
hexval(unsigned n)
{
	char	*s = malloc(65);
	unsigned x = n * 2654435761u;
	int	 i;

	for (i = 0; i < 64; i++) {
		x = x * 1103515245u + 12345u;
		s[i] = "0123456789abcdef"[(x >> 16) & 15];
	}
	s[64] = '\0';
	return s;
}

/*
 * Checks a packing: each filter parses as an object with base's members
 * and field, each REQ fits budget, values come in sorted order across
 * filters without repeats, and each filter but the last could not take
 * the next value.  Returns the number of values seen, or -1.
 */
static long
check_packing(const struct conn_filters *f, const char *name,
    const char *base_member, size_t budget, size_t max_values)
{
	struct json_doc	  *doc;
	const struct json *root, *arr, *v;
	char		   err[128], *prev = NULL;
	long		   seen = 0;
	size_t		   i;

	for (i = 0; i < f->cf_n; i++) {
		if (conn_req_size(strlen(f->cf_v[i])) > budget)
			return -1;
		root = json_parse(f->cf_v[i], strlen(f->cf_v[i]), &doc, err,
		    sizeof(err));
		if (root == NULL || root->type != JSON_OBJECT)
			return -1;
		if (base_member != NULL && json_get(root, base_member) == NULL)
			return -1;
		arr = json_get(root, name);
		if (arr == NULL || arr->type != JSON_ARRAY || arr->n == 0 ||
		    (max_values > 0 && arr->n > max_values))
			return -1;
		for (v = arr->child; v != NULL; v = v->next) {
			if (prev != NULL && strcmp(prev, v->s) >= 0)
				return -1;
			free(prev);
			prev = strdup(v->s);
			seen++;
		}
		/* Greedy: the next value would not have fitted. */
		if (i + 1 < f->cf_n &&
		    (max_values == 0 || arr->n < max_values) &&
		    conn_req_size(strlen(f->cf_v[i]) + 67) <= budget)
			return -1;
		json_free(doc);
	}
	free(prev);
	return seen;
}

static void
packing_keeps_every_req_under_the_budget(void)
{
	char		   *vals[2000];
	struct conn_filters f = { NULL, 0 };
	const char	   *why = NULL;
	size_t		    i;
	int		    n;

	for (i = 0; i < 2000; i++)
		vals[i] = hexval((unsigned)i);
	n = conn_pack_filters("{\"kinds\":[1,7]}", "e",
	    (const char *const *)vals, 2000, CONN_REQ_BUDGET, 0, &f, &why);
	T_ASSERT(n > 1);
	T_EQ_INT(f.cf_n, n);
	T_EQ_INT(check_packing(&f, "#e", "kinds", CONN_REQ_BUDGET, 0), 2000);
	/* 67 bytes per id: about 480 per 32 KiB REQ. */
	T_ASSERT(n <= 5);
	conn_filters_free(&f);

	n = conn_pack_filters("{}", "authors", (const char *const *)vals, 2000,
	    4096, 0, &f, &why);
	T_ASSERT(n > 0);
	T_EQ_INT(check_packing(&f, "authors", NULL, 4096, 0), 2000);
	conn_filters_free(&f);
	for (i = 0; i < 2000; i++)
		free(vals[i]);
}

static void
packing_is_stable_and_deduplicates(void)
{
	char		   *vals[300], *shuf[600];
	struct conn_filters a = { NULL, 0 }, b = { NULL, 0 };
	size_t		    i, j;
	unsigned	    x = 7;

	for (i = 0; i < 300; i++)
		vals[i] = hexval((unsigned)i + 5000);
	/* The same set, shuffled and with every value twice. */
	for (i = 0; i < 600; i++)
		shuf[i] = vals[i % 300];
	for (i = 599; i > 0; i--) {
		char *t;

		x = x * 1103515245u + 12345u;
		j = (x >> 8) % (i + 1);
		t = shuf[i];
		shuf[i] = shuf[j];
		shuf[j] = t;
	}
	T_ASSERT(conn_pack_filters("{\"kinds\":[1617]}", "ids",
		     (const char *const *)vals, 300, 8192, 0, &a, NULL) > 1);
	T_ASSERT(conn_pack_filters("{\"kinds\":[1617]}", "ids",
		     (const char *const *)shuf, 600, 8192, 0, &b, NULL) > 1);
	T_EQ_INT(a.cf_n, b.cf_n);
	for (i = 0; i < a.cf_n; i++)
		T_EQ_STR(a.cf_v[i], b.cf_v[i]);
	T_EQ_INT(check_packing(&b, "ids", "kinds", 8192, 0), 300);
	conn_filters_free(&a);
	conn_filters_free(&b);
	for (i = 0; i < 300; i++)
		free(vals[i]);
}

static void
packing_caps_values_per_filter(void)
{
	char		   *vals[250];
	struct conn_filters f = { NULL, 0 };
	struct json_doc	   *doc;
	const struct json  *root;
	char		    err[64];
	size_t		    i;

	for (i = 0; i < 250; i++)
		vals[i] = hexval((unsigned)i + 90000);
	/* GRASP-03: at most 100 authors per discovery query. */
	T_EQ_INT(conn_pack_filters("{\"kinds\":[0,10002]}", "authors",
		     (const char *const *)vals, 250, CONN_REQ_BUDGET, 100, &f,
		     NULL),
	    3);
	T_EQ_INT(check_packing(&f, "authors", "kinds", CONN_REQ_BUDGET, 100),
	    250);
	root = json_parse(f.cf_v[2], strlen(f.cf_v[2]), &doc, err, sizeof(err));
	T_ASSERT(root != NULL);
	T_EQ_INT(json_get(root, "authors")->n, 50);
	json_free(doc);
	conn_filters_free(&f);
	for (i = 0; i < 250; i++)
		free(vals[i]);
}

static void
packing_escapes_values_and_keeps_base_members(void)
{
	const char	   *vals[] = { "a\"b", "c\\d", "e\nf",
			"30617:"
				"aa:repo" };
	struct conn_filters f = { NULL, 0 };
	struct json_doc	   *doc;
	const struct json  *root, *v;
	char		    err[64];

	T_EQ_INT(conn_pack_filters("{ \"kinds\" : [ 1 ] , \"since\": 5 }", "a",
		     vals, 4, CONN_REQ_BUDGET, 0, &f, NULL),
	    1);
	root = json_parse(f.cf_v[0], strlen(f.cf_v[0]), &doc, err, sizeof(err));
	T_ASSERT(root != NULL);
	T_EQ_INT(json_get(root, "since")->i, 5);
	T_EQ_INT(json_get(root, "kinds")->n, 1);
	v = json_get(root, "#a");
	T_ASSERT(v != NULL && v->n == 4);
	T_EQ_STR(v->child->s, "30617:aa:repo");
	T_EQ_STR(v->child->next->s, "a\"b");
	T_EQ_STR(v->child->next->next->next->s, "e\nf");
	json_free(doc);
	conn_filters_free(&f);
}

static void
packing_refuses_what_cannot_fit_and_bad_arguments(void)
{
	struct conn_filters f = { NULL, 0 };
	const char	   *why = NULL, *one[1], *two[2];
	char		   *big;

	if ((big = malloc(40001)) == NULL)
		return;
	memset(big, 'x', 40000);
	big[40000] = '\0';
	two[0] = "fine";
	two[1] = big;
	/* A value larger than the budget is an error, not a silent drop. */
	T_EQ_INT(
	    conn_pack_filters("{}", "d", two, 2, CONN_REQ_BUDGET, 0, &f, &why),
	    -1);
	T_ASSERT(why != NULL);
	T_EQ_INT(f.cf_n, 0);
	T_ASSERT(f.cf_v == NULL);
	free(big);

	one[0] = "x";
	why = NULL;
	T_EQ_INT(conn_pack_filters("{\"#d\":[\"y\"]}", "d", one, 1, 1000, 0, &f,
		     &why),
	    -1);
	T_ASSERT(why != NULL);
	T_EQ_INT(conn_pack_filters("[]", "d", one, 1, 1000, 0, &f, &why), -1);
	T_EQ_INT(conn_pack_filters("{", "d", one, 1, 1000, 0, &f, &why), -1);
	T_EQ_INT(conn_pack_filters("{}", "dd", one, 1, 1000, 0, &f, &why), -1);
	T_EQ_INT(conn_pack_filters("{}", "#", one, 1, 1000, 0, &f, &why), -1);
	T_EQ_INT(conn_pack_filters("{}", "kinds", one, 1, 1000, 0, &f, &why),
	    -1);
	/* A budget below the empty REQ fits nothing. */
	T_EQ_INT(conn_pack_filters("{}", "d", one, 1, 20, 0, &f, &why), -1);
	/* No values: no filters, not an error. */
	T_EQ_INT(conn_pack_filters("{}", "d", one, 0, 1000, 0, &f, &why), 0);
	T_EQ_INT(f.cf_n, 0);
	conn_filters_free(&f);
}

/* Appends set's filters as syncd does: one per field, "limit":0. */
static void
live_set(const char *base, const char *const *fields, const char **v, size_t n,
    struct conn_filters *fl)
{
	for (; *fields; fields++)
		T_ASSERT(conn_pack_filters(base, *fields, v, n, CONN_REQ_BUDGET,
			     0, fl, NULL) > 0);
}

/*
 * The scale bench's relay (doc/performance.md, 2026-12-06): 300
 * repositories and 600 issues make, in syncd's order, the
 * announcements' filter, 300 #d, 300 coordinates in #a, #A and #q, and
 * 600 ids in #e, #E and #q, each a full REQ and a 7.5 KB tail.  Grouped
 * in that order they needed 9 REQs, one over CONN_MAX_LIVE; first-fit
 * decreasing puts the tails beside the coordinates.
 */
static void
grouping_fits_the_scale_relay_under_the_live_cap(void)
{
	static const char *const d[] = { "d", NULL },
				 *aq[] = { "a", "A", "q", NULL },
				 *eq[] = { "e", "E", "q", NULL };
	struct conn_filters fl = { NULL, 0 }, rq = { NULL, 0 };
	char ids[600][EVENT_ID_HEX_LEN + 1], names[300][16], coords[300][96];
	const char *vi[600], *vn[300], *vc[300];
	size_t	    i, k, over[64], total = 0, nf;
	char	   *p;

	for (i = 0; i < 600; i++) {
		for (k = 0; k < 64; k++)
			ids[i][k] =
			    "0123456789abcdef"[(i * 7 + k * 13 + i / 16 * k) %
				16];
		snprintf(ids[i], 9, "%08zx", i); /* distinct */
		ids[i][8] = 'f';
		ids[i][64] = '\0';
		vi[i] = ids[i];
	}
	for (i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "repo-%05zu", i);
		snprintf(coords[i], sizeof(coords[i]), "30617:%s:%s", ids[i],
		    names[i]);
		vn[i] = names[i];
		vc[i] = coords[i];
	}
	fl.cf_v = calloc(1, sizeof(char *));
	T_ASSERT(fl.cf_v != NULL);
	fl.cf_v[fl.cf_n++] = strdup("{\"kinds\":[30617,10317],\"limit\":0}");
	live_set("{\"kinds\":[30617,30618],\"limit\":0}", d, vn, 300, &fl);
	live_set("{\"limit\":0}", aq, vc, 300, &fl);
	live_set("{\"limit\":0}", eq, vi, 600, &fl);
	nf = fl.cf_n;
	T_EQ_INT(nf, 11);
	T_ASSERT(nf <= sizeof(over) / sizeof(over[0]));
	T_EQ_INT(conn_group_filters((const char *const *)fl.cf_v, nf,
		     CONN_REQ_BUDGET, CONN_MAX_LIVE, &rq, over),
	    0);
	T_ASSERT(rq.cf_n <= 7);
	for (i = 0; i < rq.cf_n; i++) {
		T_ASSERT(conn_req_size(strlen(rq.cf_v[i])) <= CONN_REQ_BUDGET);
		T_ASSERT(rq.cf_v[i][0] == '[');
		total += strlen(rq.cf_v[i]) - 2;
	}
	/* Every filter once: the arrays hold their bytes and commas. */
	for (i = 0; i < nf; i++) {
		for (k = 0; k < rq.cf_n; k++)
			if ((p = strstr(rq.cf_v[k], fl.cf_v[i])) != NULL)
				break;
		T_ASSERT(k < rq.cf_n);
		total -= strlen(fl.cf_v[i]);
	}
	T_EQ_INT(total, nf - rq.cf_n);
	conn_filters_free(&fl);
	conn_filters_free(&rq);
}

/* The same filters make the same arrays; beyond max what does not fit
 * is reported by index, in order, and small filters still fill gaps. */
static void
grouping_is_stable_and_reports_what_is_over(void)
{
	char		   *f[6], *g;
	struct conn_filters a = { NULL, 0 }, b = { NULL, 0 };
	size_t		    i, over[6], nover;
	size_t		    len[6] = { 20000, 100, 20000, 20000, 15000, 100 };

	for (i = 0; i < 6; i++) {
		T_ASSERT((f[i] = malloc(len[i] + 1)) != NULL);
		memset(f[i], 'x', len[i]);
		f[i][0] = '{';
		f[i][len[i] - 1] = '}';
		f[i][len[i]] = '\0';
	}
	nover = conn_group_filters((const char *const *)f, 6, CONN_REQ_BUDGET,
	    2, &a, over);
	/* Two arrays: 20000 + 100 + 100 ... and one 20000; 15000 fits
	 * nowhere, nor does the third 20000. */
	T_EQ_INT(a.cf_n, 2);
	T_EQ_INT(nover, 2);
	T_EQ_INT(over[0], 3);
	T_EQ_INT(over[1], 4);
	T_EQ_INT(conn_group_filters((const char *const *)f, 6, CONN_REQ_BUDGET,
		     2, &b, over),
	    2);
	for (i = 0; i < 2; i++)
		T_ASSERT(strcmp(a.cf_v[i], b.cf_v[i]) == 0);
	g = a.cf_v[0];
	T_ASSERT(strlen(g) == 20000 + 100 + 100 + 4);
	T_EQ_INT(conn_group_filters(NULL, 0, CONN_REQ_BUDGET, 2, &b, over), 0);
	T_EQ_INT(b.cf_n, 2);
	conn_filters_free(&a);
	conn_filters_free(&b);
	for (i = 0; i < 6; i++)
		free(f[i]);
}

static void
packing_appends_to_an_existing_list(void)
{
	const char	   *a[] = { "1", "2" }, *b[] = { "3" };
	struct conn_filters f = { NULL, 0 };

	T_EQ_INT(conn_pack_filters("{}", "d", a, 2, 1000, 1, &f, NULL), 2);
	T_EQ_INT(conn_pack_filters("{}", "t", b, 1, 1000, 0, &f, NULL), 1);
	T_EQ_INT(f.cf_n, 3);
	T_EQ_STR(f.cf_v[0], "{\"#d\":[\"1\"]}");
	T_EQ_STR(f.cf_v[1], "{\"#d\":[\"2\"]}");
	T_EQ_STR(f.cf_v[2], "{\"#t\":[\"3\"]}");
	conn_filters_free(&f);
}

static void
state_and_result_names(void)
{
	T_EQ_STR(conn_state_name(CONN_IDLE), "idle");
	T_EQ_STR(conn_state_name(CONN_RATE_LIMITED), "rate_limited");
	T_EQ_STR(conn_state_name(CONN_REFUSED), "refused");
	T_EQ_STR(conn_state_name(CONN_NSTATES), "unknown");
	T_EQ_STR(conn_fetch_result_name(FETCH_EOSE), "eose");
	T_EQ_STR(conn_fetch_result_name(FETCH_RATE_LIMITED), "rate_limited");
	T_EQ_STR(conn_neg_result_name(NEGR_DONE), "done");
	T_EQ_STR(conn_neg_result_name(NEGR_UNSUPPORTED), "unsupported");
	T_EQ_STR(conn_neg_result_name(NEGR_FAILED), "failed");
	T_EQ_STR(conn_neg_result_name(NEGR_RATE_LIMITED), "rate_limited");
	T_EQ_STR(conn_neg_result_name(NEGR_RATE_LIMITED + 1), "unknown");
}

static int
unsupported(const char *s)
{
	return conn_notice_is_unsupported(s, strlen(s));
}

static void
notice_of_an_unknown_command_reads_as_unsupported(void)
{
	/* tests/peer's and relayd's own answers to a verb they lack. */
	T_ASSERT(unsupported("error: unknown message type \"NEG-OPEN\""));
	T_ASSERT(unsupported("ERROR: Unknown command: NEG-OPEN"));
	T_ASSERT(unsupported("negentropy unsupported"));
	T_ASSERT(unsupported("NEG-OPEN is not supported"));
	T_ASSERT(!unsupported("rate limited: slow down"));
	T_ASSERT(!unsupported("error: bad filter"));
	T_ASSERT(unsupported("Unrecognized message NEG-OPEN"));
	T_ASSERT(!unsupported("CLOSE: unknown subscription id"));
	T_ASSERT(!unsupported(""));
	/* Only the first len bytes count. */
	T_ASSERT(!conn_notice_is_unsupported("unknown", 6));
}

/* Two roles' budgets for one relay in a fresh run directory. */
static int
two_roles(char *dir, size_t len, struct conn_budget *a, struct conn_budget *b)
{
	conn_budget_init(a);
	conn_budget_init(b);
	if (tdir_make(dir, len, "conn_budget") == -1)
		return -1;
	if (conn_budget_open(a, dir, "wss://relay.example.com") == -1 ||
	    conn_budget_open(b, dir, "wss://relay.example.com") == -1)
		return -1;
	return 0;
}

static void
budget_ledger_is_summed_over_roles(void)
{
	struct conn_budget a, b, other;
	char		   dir[256];
	int64_t		   now = 1000000000, wait;
	int		   i, slot, slots[CONN_MAX_SUBS];

	T_ASSERT(two_roles(dir, sizeof(dir), &a, &b) == 0);
	/* a takes all but one slot, b the last; then neither gets one. */
	for (i = 0; i < CONN_MAX_SUBS - 1; i++, now += 10000) {
		T_EQ_INT(conn_budget_take(&a, 0.01, now, &slots[i], &wait), 1);
		T_CHECK(slots[i] >= 0);
	}
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 1);
	now += 10000;
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 0);
	T_CHECK(wait >= 1);
	T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 0);
	T_EQ_INT(conn_budget_held(&a), CONN_MAX_SUBS - 1);
	/* Another relay's ledger is its own. */
	conn_budget_init(&other);
	T_ASSERT(conn_budget_open(&other, dir, "wss://other.example.com") == 0);
	T_EQ_INT(conn_budget_take(&other, 0.01, now, &slot, &wait), 1);
	conn_budget_close(&other);
	/* A slot given back is b's to take. */
	conn_budget_give(&a, slots[0]);
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 1);
	conn_budget_close(&a);
	conn_budget_close(&b);
	tdir_remove(dir);
}

static void
budget_paces_every_role_together(void)
{
	struct conn_budget a, b;
	char		   dir[256];
	int64_t		   now = 5000000000, wait;
	int		   slot;

	T_ASSERT(two_roles(dir, sizeof(dir), &a, &b) == 0);
	T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 1);
	/* b's first REQ waits for a's interval. */
	T_EQ_INT(conn_budget_take(&b, 0.01, now + 4000, &slot, &wait), 0);
	T_EQ_INT(wait, 6000);
	T_EQ_INT(conn_budget_take(&b, 0.01, now + 10000, &slot, &wait), 1);
	/* A time in the future (a broken sibling) does not stall a role. */
	T_EQ_INT(conn_budget_take(&a, 0.01, now - 1000000, &slot, &wait), 1);
	conn_budget_close(&a);
	conn_budget_close(&b);
	tdir_remove(dir);
}

static void
budget_slot_of_a_close_waits_for_the_close(void)
{
	struct conn_budget a, b;
	char		   dir[256];
	int64_t		   now = 9000000000, wait;
	int		   i, slot, first = -1;

	T_ASSERT(two_roles(dir, sizeof(dir), &a, &b) == 0);
	for (i = 0; i < CONN_MAX_SUBS; i++, now += 10000) {
		T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 1);
		if (first == -1)
			first = slot;
	}
	/* A CLOSE queued: a may reuse the slot, b may not. */
	conn_budget_closing(&a, first);
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 0);
	T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 1);
	T_EQ_INT(slot, first);
	now += 10000;
	/* Reused and ended again: the first CLOSE leaving frees nothing
	 * while the second is still queued. */
	conn_budget_closing(&a, first);
	conn_budget_closed(&a, first);
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 0);
	conn_budget_closed(&a, first);
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 1);
	T_EQ_INT(slot, first);
	conn_budget_close(&a);
	conn_budget_close(&b);
	tdir_remove(dir);
}

static void
budget_of_a_dead_role_is_reclaimed(void)
{
	struct conn_budget a, b;
	char		   dir[256];
	int64_t		   now = 13000000000, wait;
	int		   i, slot;

	T_ASSERT(two_roles(dir, sizeof(dir), &a, &b) == 0);
	for (i = 0; i < CONN_MAX_SUBS; i++, now += 10000)
		T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 1);
	T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 0);
	/* The role ends without giving anything back: its descriptor
	 * closes, as at exit, and every slot is free. */
	conn_budget_close(&a);
	for (i = 0; i < CONN_MAX_SUBS; i++, now += 10000)
		T_EQ_INT(conn_budget_take(&b, 0.01, now, &slot, &wait), 1);
	/* Without a ledger file a role is bounded by its own ledger only. */
	conn_budget_init(&a);
	T_EQ_INT(conn_budget_take(&a, 0.01, now, &slot, &wait), 1);
	T_EQ_INT(slot, -1);
	conn_budget_close(&b);
	tdir_remove(dir);
}

static const struct t_case cases[] = {
	T_CASE(backoff_doubles_from_base_to_the_cap),
	T_CASE(backoff_respects_a_low_cap),
	T_CASE(backoff_marks_dead_after_a_day_of_failures),
	T_CASE(backoff_shrinks_sixty_fold_in_test_mode),
	T_CASE(connect_timeout_is_the_base_backoff_with_a_floor),
	T_CASE(fetch_timeout_is_thirty_seconds_or_three_in_test_mode),
	T_CASE(notice_text_classification),
	T_CASE(closed_and_ok_prefix_classification),
	T_CASE(req_size_counts_the_longest_subscription_id),
	T_CASE(packing_keeps_every_req_under_the_budget),
	T_CASE(packing_is_stable_and_deduplicates),
	T_CASE(packing_caps_values_per_filter),
	T_CASE(packing_escapes_values_and_keeps_base_members),
	T_CASE(packing_refuses_what_cannot_fit_and_bad_arguments),
	T_CASE(packing_appends_to_an_existing_list),
	T_CASE(grouping_fits_the_scale_relay_under_the_live_cap),
	T_CASE(grouping_is_stable_and_reports_what_is_over),
	T_CASE(state_and_result_names),
	T_CASE(notice_of_an_unknown_command_reads_as_unsupported),
	T_CASE(budget_ledger_is_summed_over_roles),
	T_CASE(budget_paces_every_role_together),
	T_CASE(budget_slot_of_a_close_waits_for_the_close),
	T_CASE(budget_of_a_dead_role_is_reclaimed),
};

T_MAIN(cases)
