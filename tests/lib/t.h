/*
 * t.h: the tiny test framework of graspd's C tests.
 *
 * A test file defines static void functions, lists them in a table
 * "static const struct t_case cases[] = { T_CASE(fn), ... };" and ends
 * with T_MAIN(cases) (or T_MAIN_WITH(cases, setup, cleanup, flags) when
 * the program needs set-up of its own, T_MAIN_FIXTURE(cases, fx, arg,
 * flags) for one shared through tests/lib, see tfix.h).  A main of its
 * own may instead call T_RUN(fn) for each, or t_run_cases(), then return
 * t_done().  Each case prints "ok - name" or "not ok - name: file:line:
 * what"; tests/run.sh counts those lines.
 * T_ASSERT ends the case on failure, T_CHECK records it and goes on.
 *
 * After each case a comment "# case name took N ms" gives its wall time.
 * T_FILTER=a,b runs only the cases whose names contain "a" or "b" (what
 * main or a set-up hook does outside the cases still runs); the others are counted as skipped
 * in t_done()'s comment, neither passed nor failed.
 */
#ifndef GRASPD_T_H
#define GRASPD_T_H

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"

static int	   t_pass, t_fail, t_skip, t_case_failed;
static const char *t_case;

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

#define T_CHECK(c) \
	do { \
		if (!(c)) \
			t_fail_at(__FILE__, __LINE__, #c); \
	} while (0)

#define T_ASSERT(c) \
	do { \
		if (!(c)) { \
			t_fail_at(__FILE__, __LINE__, #c); \
			return; \
		} \
	} while (0)

#define T_EQ_INT(a, b) \
	do { \
		long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
		if (t_a_ != t_b_) { \
			char t_m_[256]; \
			snprintf(t_m_, sizeof(t_m_), \
			    "%s == %s (%lld != %lld)", #a, #b, t_a_, t_b_); \
			t_fail_at(__FILE__, __LINE__, t_m_); \
			return; \
		} \
	} while (0)

#define T_EQ_STR(a, b) \
	do { \
		const char *t_a_ = (a), *t_b_ = (b); \
		if (t_a_ == NULL || t_b_ == NULL || strcmp(t_a_, t_b_) != 0) { \
			char t_m_[1024]; \
			snprintf(t_m_, sizeof(t_m_), \
			    "%s == %s (\"%.400s\" != " \
			    "\"%.400s\")", \
			    #a, #b, t_a_ ? t_a_ : "(null)", \
			    t_b_ ? t_b_ : "(null)"); \
			t_fail_at(__FILE__, __LINE__, t_m_); \
			return; \
		} \
	} while (0)

#define T_RUN(fn) t_run(#fn, fn)

/* 1 if T_FILTER is unset or empty, or one of its ','-parts is in name. */
static inline int
t_selected(const char *name)
{
	const char *f = getenv("T_FILTER"), *p;
	char	    part[256];
	size_t	    n;

	if (f == NULL || *f == '\0')
		return 1;
	for (p = f; *p != '\0'; p += n + (p[n] == ',')) {
		n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(part))
			continue;
		memcpy(part, p, n);
		part[n] = '\0';
		if (strstr(name, part) != NULL)
			return 1;
	}
	return 0;
}

static inline int64_t
t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void
t_run(const char *name, void (*fn)(void))
{
	int64_t t0;

	if (!t_selected(name)) {
		t_skip++;
		return;
	}
	t_case = name;
	t_case_failed = 0;
	t0 = t_now_ms();
	fn();
	if (t_case_failed)
		t_fail++;
	else {
		t_pass++;
		printf("ok - %s\n", name);
	}
	printf("# case %s took %" PRId64 " ms\n", name, t_now_ms() - t0);
	fflush(stdout);
}

static inline int
t_done(void)
{
	if (t_skip > 0)
		printf("# %d passed, %d failed, %d skipped (T_FILTER=%s)\n",
		    t_pass, t_fail, t_skip, getenv("T_FILTER"));
	else
		printf("# %d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}

/* One entry of a program's case table; T_CASE(fn) names it fn. */
struct t_case {
	const char *name;
	void (*fn)(void);
};

#define T_CASE(fn) \
	{ \
#fn, fn \
	}
#define T_NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* t_main() flags. */
#define T_IGN_SIGPIPE 0x1 /* the program writes to peers that may go */

/* Runs each of the n cases in table order through t_run(). */
static inline void
t_run_cases(const struct t_case *cases, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		t_run(cases[i].name, cases[i].fn);
}

/*
 * The main of a test program: line-buffered stdout, SIGPIPE ignored with
 * T_IGN_SIGPIPE, then setup() and fx->setup(arg) (each if not NULL; a
 * non-zero result is the exit status and nothing else runs), the cases,
 * fx->cleanup(arg, failed) and cleanup() (each if not NULL; cleanup() may
 * look at t_fail) and t_done()'s status.
 */
static inline int
t_main(const struct t_case *cases, size_t	   n, int (*setup)(void),
    void (*cleanup)(void), const struct t_fixture *fx, void *arg, int flags)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (flags & T_IGN_SIGPIPE)
		signal(SIGPIPE, SIG_IGN);
	if (setup != NULL && (rc = setup()) != 0)
		return rc;
	if (fx != NULL && (rc = fx->setup(arg)) != 0)
		return rc;
	t_run_cases(cases, n);
	if (fx != NULL)
		fx->cleanup(arg, t_fail > 0);
	if (cleanup != NULL)
		cleanup();
	return t_done();
}

#define T_MAIN_ALL(cases, setup, cleanup, fx, arg, flags) \
	int main(void) \
	{ \
		return t_main(cases, T_NCASES(cases), setup, cleanup, fx, arg, \
		    flags); \
	}
#define T_MAIN_WITH(cases, setup, cleanup, flags) \
	T_MAIN_ALL(cases, setup, cleanup, NULL, NULL, flags)
#define T_MAIN_FIXTURE(cases, fx, arg, flags) \
	T_MAIN_ALL(cases, NULL, NULL, fx, arg, flags)
#define T_MAIN(cases) T_MAIN_ALL(cases, NULL, NULL, NULL, NULL, 0)

/* The number in environment variable name (a test's size), else dflt. */
static inline int
t_env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

/* qsort() order of longs, ascending. */
static inline int
t_cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/*
 * The whole file at path, NUL-terminated (caller frees), its length in
 * *lenp when lenp is not NULL; NULL if it cannot be read.
 */
static inline char *
t_slurp(const char *path, size_t *lenp)
{
	FILE *fp;
	char *s;
	long  n;

	if ((fp = fopen(path, "rb")) == NULL)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	if (n < 0 || (s = malloc((size_t)n + 1)) == NULL ||
	    fread(s, 1, (size_t)n, fp) != (size_t)n) {
		fclose(fp);
		return NULL;
	}
	fclose(fp);
	s[n] = '\0';
	if (lenp != NULL)
		*lenp = (size_t)n;
	return s;
}

/* Path of the test vectors (tests/vectors, copied from shared/vectors). */
static inline const char *
t_vectors_dir(void)
{
	const char *d = getenv("GRASPD_VECTORS");

	return d ? d : "tests/vectors";
}

#endif
