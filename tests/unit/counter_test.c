/*
 * counter_test.c: a role's table of figures (common/counter.c) gives
 * both its `graspctl show` keys and its metrics from one row each: the
 * show-only and metrics-only rows, the values read through the row's
 * offset, the type and help a sample carries to relayd's /metrics, and
 * a label put first among a name's own.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "t.h"

struct figures {
	uint64_t a, b, c;
};

static const struct counter table[] = {
	{ "a_shown", "graspd_test_a_total", COUNTER, "A's help",
	    offsetof(struct figures, a) },
	{ "b_only_shown", NULL, GAUGE, NULL, offsetof(struct figures, b) },
	{ NULL, "graspd_test_c{kind=\"x\"}", GAUGE, NULL,
	    offsetof(struct figures, c) },
};

/* The unformatted JSON of o; the caller frees. */
static char *
text(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	return s;
}

static void
test_show_lists_the_rows_with_a_show_key_in_order(void)
{
	struct figures f = { 7, 8, 9 };
	cJSON	      *view = cJSON_CreateObject();
	char	      *s;

	counters_show(view, table, COUNTERS_N(table), &f);
	s = text(view);
	T_EQ_STR(s, "{\"a_shown\":7,\"b_only_shown\":8}");
	free(s);
}

static void
test_metrics_carry_name_value_type_and_help(void)
{
	struct figures f = { 7, 8, 9 };
	cJSON	      *m = cJSON_CreateArray();
	char	      *s;

	counters_metrics(m, table, COUNTERS_N(table), &f, NULL);
	s = text(m);
	T_EQ_STR(s,
	    "[[\"graspd_test_a_total\",7,\"counter\",\"A's help\"],"
	    "[\"graspd_test_c{kind=\\\"x\\\"}\",9,\"gauge\"]]");
	free(s);
}

static void
test_a_label_goes_first_among_the_names_own(void)
{
	struct figures f = { 1, 2, 3 };
	cJSON	      *m = cJSON_CreateArray();
	char	      *s;

	counters_metrics(m, table, COUNTERS_N(table), &f, "role=\"syncd\"");
	s = text(m);
	T_CHECK(
	    strstr(s, "\"graspd_test_a_total{role=\\\"syncd\\\"}\",1") != NULL);
	T_CHECK(strstr(s,
		    "\"graspd_test_c{role=\\\"syncd\\\",kind=\\\"x\\\"}\",3") !=
	    NULL);
	free(s);
}

static void
test_large_values_are_read_whole(void)
{
	struct figures f = { (uint64_t)1 << 40, 0, 0 };
	cJSON	      *view = cJSON_CreateObject();

	counters_show(view, table, COUNTERS_N(table), &f);
	T_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(view, "a_shown")) ==
	    (double)((uint64_t)1 << 40));
	cJSON_Delete(view);
}

static const struct t_case cases[] = {
	T_CASE(test_show_lists_the_rows_with_a_show_key_in_order),
	T_CASE(test_metrics_carry_name_value_type_and_help),
	T_CASE(test_a_label_goes_first_among_the_names_own),
	T_CASE(test_large_values_are_read_whole),
};

T_MAIN(cases)
