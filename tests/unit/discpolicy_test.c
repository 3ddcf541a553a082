/*
 * discpolicy_test.c: discoveryd's pure decisions on a fake clock
 * (discoveryd/disc_policy.c, compiled in): GRASP-03's "once-per-minute
 * reconciliation" over an hour of 2 s maintenance passes, with the
 * passes on time, jittered, and stalled, and under NGIT_TEST timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../discoveryd/disc_policy.c"
#include "config.h"
#include "t.h"

/* discoveryd's own constants, not copies of the GRASP-03 numbers. */
#define PERIOD ((int64_t)(DISC_RECONCILE_PERIOD * 1000))
#define PASS   ((int64_t)(DISC_MAINT_PERIOD * 1000))
#define HOUR   (3600LL * 1000)

/*
 * Runs passes from 0 to end, each step(i) ms after the one before;
 * returns the reconciliations, their times in at[] (up to max).
 */
static int
run(int64_t end, int64_t (*step)(int), int64_t *at, int max)
{
	int64_t last = -1, now = 0;
	int	n = 0, i;

	for (i = 0; now <= end; i++) {
		if (disc_reconcile_due(&last, now, PERIOD)) {
			if (n < max)
				at[n] = now;
			n++;
		}
		now += step(i);
	}
	return n;
}

static int64_t
on_time(int i)
{
	(void)i;
	return PASS;
}

static void
once_a_minute_over_an_hour(void)
{
	int64_t at[128];
	int	n, i;

	T_EQ_INT(PERIOD, 60 * 1000);
	T_EQ_INT(PASS, 2 * 1000);
	/* The first pass reconciles, then every minute: 61 in [0, 1 h]. */
	n = run(HOUR, on_time, at, 128);
	T_EQ_INT(n, 61);
	for (i = 0; i < n && i < 128; i++)
		T_EQ_INT(at[i], i * PERIOD);
}

/* Passes late by up to 700 ms each (a busy loop). */
static int64_t
jittered(int i)
{
	return PASS + (i * 7919 % 8) * 100;
}

static void
jittered_passes_keep_the_minute(void)
{
	int64_t at[128];
	int	n, i;

	n = run(HOUR, jittered, at, 128);
	/* Never more often than a minute, never a pass later than due. */
	for (i = 1; i < n && i < 128; i++) {
		T_CHECK(at[i] - at[i - 1] >= PERIOD - PASS - 700);
		T_CHECK(at[i] - at[i - 1] <= PERIOD + PASS + 700);
	}
	T_CHECK(n >= 60 && n <= 61);
}

/* One pass five minutes late (the loop stalled), the rest on time. */
static int64_t
stalled(int i)
{
	return i == 100 ? 5 * 60 * 1000 : PASS;
}

static void
a_stall_gives_one_reconciliation_not_a_burst(void)
{
	int64_t at[128];
	int	n, i;

	n = run(HOUR, stalled, at, 128);
	for (i = 1; i < n && i < 128; i++)
		T_CHECK(at[i] - at[i - 1] >= PERIOD);
	T_CHECK(n >= 56 && n <= 61);
}

/* NGIT_TEST: both periods 200 ms, so every pass reconciles. */
static void
test_timing_every_pass(void)
{
	struct config c;
	int64_t	      last = -1, period, pass, now;
	int	      n = 0, i;

	memset(&c, 0, sizeof(c));
	c.test = 1;
	period = (int64_t)(cfg_period(&c, DISC_RECONCILE_PERIOD) * 1000);
	pass = (int64_t)(cfg_period(&c, DISC_MAINT_PERIOD) * 1000);
	T_EQ_INT(period, 200);
	T_EQ_INT(pass, 200);
	for (i = 0, now = 0; i < 50; i++, now += pass)
		n += disc_reconcile_due(&last, now, period);
	T_EQ_INT(n, 50);
}

static const struct t_case cases[] = {
	T_CASE(once_a_minute_over_an_hour),
	T_CASE(jittered_passes_keep_the_minute),
	T_CASE(a_stall_gives_one_reconciliation_not_a_burst),
	T_CASE(test_timing_every_pass),
};

T_MAIN(cases)
