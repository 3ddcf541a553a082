/*
 * buf_test.c: the growing buffer's appenders, against what printf makes
 * of the same values.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "t.h"

static void
test_int_is_written_as_printf_writes_it(void)
{
	static const long long v[] = {
		0,
		1,
		-1,
		9,
		10,
		-10,
		1790000000,
		4294967295LL,
		LLONG_MAX,
		LLONG_MIN,
		LLONG_MIN + 1,
	};
	struct buf b = BUF_INIT;
	char	   want[32];
	size_t	   i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		buf_reset(&b);
		buf_adds(&b, "x");
		buf_add_int(&b, v[i]);
		snprintf(want, sizeof(want), "x%lld", v[i]);
		T_CHECK(strcmp(b.b_data, want) == 0);
		T_EQ_INT(b.b_len, strlen(want));
	}
	buf_free(&b);
}

static void
test_jstr_escapes_as_nip01_says(void)
{
	struct buf b = BUF_INIT;

	buf_add_jstr(&b, "a\"b\\c\nd\te\x01\x7f\xc3\xa9/", 14);
	T_CHECK(strcmp(b.b_data,
		    "\"a\\\"b\\\\c\\nd\\te\\u0001\x7f\xc3\xa9/\"") == 0);
	buf_free(&b);
}

static const struct t_case cases[] = {
	T_CASE(test_int_is_written_as_printf_writes_it),
	T_CASE(test_jstr_escapes_as_nip01_says),
};

T_MAIN(cases)
