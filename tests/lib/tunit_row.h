/*
 * tunit_row.h: checks on one row of a unit test's case table, on top of
 * t.h.  Unlike T_EQ_INT and T_EQ_STR they name the row (its input, say)
 * in the failure and let the case go on, so one run reports every row
 * that is off.
 */
#ifndef GRASPD_TUNIT_ROW_H
#define GRASPD_TUNIT_ROW_H

#include "t.h"

/* Fails the case at file:line, naming row, unless got == want. */
static inline void
tunit_row_int(const char *file, int line, const char *row, long long got,
    long long want)
{
	char m[512];

	if (got == want)
		return;
	snprintf(m, sizeof(m), "\"%.400s\": want %lld, got %lld", row, want,
	    got);
	t_fail_at(file, line, m);
}

/* Likewise for strings; NULL matches nothing, not even NULL. */
static inline void
tunit_row_str(const char *file, int line, const char *row, const char *got,
    const char *want)
{
	char m[1024];

	if (got != NULL && want != NULL && strcmp(got, want) == 0)
		return;
	snprintf(m, sizeof(m), "\"%.300s\": want \"%.300s\", got \"%.300s\"",
	    row, want ? want : "(null)", got ? got : "(null)");
	t_fail_at(file, line, m);
}

#define T_ROW_INT(row, got, want) \
	tunit_row_int(__FILE__, __LINE__, (row), (got), (want))
#define T_ROW_STR(row, got, want) \
	tunit_row_str(__FILE__, __LINE__, (row), (got), (want))

#endif
