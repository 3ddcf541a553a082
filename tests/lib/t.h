/*
 * t.h: the tiny test framework of graspd's C tests.
 *
 * A test file defines static void functions and calls T_RUN(fn) for each
 * from main, then returns t_done().  Each case prints "ok - name" or
 * "not ok - name: file:line: what"; tests/run.sh counts those lines.
 * T_ASSERT ends the case on failure, T_CHECK records it and goes on.
 */
#ifndef GRASPD_T_H
#define GRASPD_T_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int		 t_pass, t_fail, t_case_failed;
static const char	*t_case;

static inline void
t_fail_at(const char *file, int line, const char *what)
{
	if (!t_case_failed)
		printf("not ok - %s: %s:%d: %s\n", t_case, file, line, what);
	else
		printf("#   also %s:%d: %s\n", file, line, what);
	fflush(stdout);
	t_case_failed = 1;
}

#define T_CHECK(c) do {							\
	if (!(c))							\
		t_fail_at(__FILE__, __LINE__, #c);			\
} while (0)

#define T_ASSERT(c) do {						\
	if (!(c)) {							\
		t_fail_at(__FILE__, __LINE__, #c);			\
		return;							\
	}								\
} while (0)

#define T_EQ_INT(a, b) do {						\
	long long t_a_ = (long long)(a), t_b_ = (long long)(b);	\
	if (t_a_ != t_b_) {						\
		char t_m_[256];						\
		snprintf(t_m_, sizeof(t_m_), "%s == %s (%lld != %lld)",	\
		    #a, #b, t_a_, t_b_);				\
		t_fail_at(__FILE__, __LINE__, t_m_);			\
		return;							\
	}								\
} while (0)

#define T_EQ_STR(a, b) do {						\
	const char *t_a_ = (a), *t_b_ = (b);				\
	if (t_a_ == NULL || t_b_ == NULL || strcmp(t_a_, t_b_) != 0) {	\
		char t_m_[1024];					\
		snprintf(t_m_, sizeof(t_m_), "%s == %s (\"%.400s\" != "	\
		    "\"%.400s\")", #a, #b, t_a_ ? t_a_ : "(null)",	\
		    t_b_ ? t_b_ : "(null)");				\
		t_fail_at(__FILE__, __LINE__, t_m_);			\
		return;							\
	}								\
} while (0)

#define T_RUN(fn) t_run(#fn, fn)

static inline void
t_run(const char *name, void (*fn)(void))
{
	t_case = name;
	t_case_failed = 0;
	fn();
	if (t_case_failed)
		t_fail++;
	else {
		t_pass++;
		printf("ok - %s\n", name);
	}
	fflush(stdout);
}

static inline int
t_done(void)
{
	printf("# %d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}

/* Path of the shared test vectors (../shared/vectors beside the checkout). */
static inline const char *
t_vectors_dir(void)
{
	const char *d = getenv("GRASPD_VECTORS");

	return d ? d : "../shared/vectors";
}

#endif
