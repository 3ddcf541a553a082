/*
 * histsched_test.c: historyd's history-probe scheduler on a fake clock
 * (historyd/hist_sched.c, compiled in): at most one new due relay per
 * maintenance pass, never more than 32 workers, one group in flight per
 * relay draining its own cursor, 24 h refresh after a successful
 * rotation, 5 min retry after a failed group (the cursor advances), a
 * group that keeps failing retried by itself while the others wait for
 * the refresh, the
 * cursor kept modulo a changed filter set, the GRASP-03 numbers and
 * their NGIT_TEST scaling (24 min, 5 s) as historyd initialises them, a thread added in the middle
 * of a rotation making the next rotation due as soon as this one ends
 * (not after 24 h), removal while in flight, a
 * dead relay (its group never ends) holding only its own slot while the
 * others drain and refresh, a fresh scheduler (a restart) starting from
 * the first filter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../historyd/hist_sched.c"
#include "config.h"
#include "t.h"

/* historyd's own constants, not copies of the GRASP-03 numbers. */
#define REFRESH ((int64_t)(HIST_REFRESH * 1000))
#define RETRY	((int64_t)(HIST_RETRY * 1000))

/* What the fake worker saw. */
static struct {
	int		   starts;
	int		   releases;
	int		   fail_start;
	char		   last[64];
	struct hist_relay *last_relay;
} w;

static int
fake_start(void *arg, struct hist_relay *r, const char *filter)
{
	(void)arg;
	w.starts++;
	snprintf(w.last, sizeof(w.last), "%s", filter);
	w.last_relay = r;
	return w.fail_start ? -1 : 0;
}

static void
fake_release(void *arg, struct hist_relay *r)
{
	(void)arg;
	(void)r;
	w.releases++;
}

static const struct hist_sched_ops ops = { fake_start, fake_release };

static void
filters(struct conn_filters *f, int n, const char *tag)
{
	char buf[64];
	int  i;

	memset(f, 0, sizeof(*f));
	if ((f->cf_v = calloc((size_t)n + 1, sizeof(char *))) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "{\"#%s\":[\"%d\"]}", tag, i);
		f->cf_v[i] = strdup(buf);
	}
	f->cf_n = (size_t)n;
}

static struct hist_relay *
want(struct hist_sched *s, const char *key, int nf, const char *tag)
{
	struct hist_relay  *r = hist_sched_want(s, key, HIST_P_PARTICIPANT, 0);
	struct conn_filters f;

	filters(&f, nf, tag);
	hist_sched_set_filters(s, r, &f);
	return r;
}


static void
setup(struct hist_sched *s)
{
	memset(&w, 0, sizeof(w));
	hist_sched_init(s, &ops, NULL, REFRESH, RETRY);
}

/*
 * Sets s up wanting nf "e" filters from ws://a.example, then sweeps it;
 * returns that relay.
 */
static struct hist_relay *
swept_with_one_relay(struct hist_sched *s, int nf)
{
	struct hist_relay *r;

	setup(s);
	r = want(s, "ws://a.example", nf, "e");
	hist_sched_sweep(s);
	return r;
}

/*
 * GRASP-03's numbers, and the delays historyd gives hist_sched_init()
 * (historyd.c: delay_ms(), cfg_scale_delay()) with NGIT_TEST: 24 h and
 * 5 min become 24 min and 5 s, so a rotation refreshes, and a failed
 * group retries, after those.
 */
static void
cadence_with_test_timing(void)
{
	struct hist_sched  s;
	struct hist_relay *r;
	struct config	   c;
	int64_t		   refresh, retry;

	T_EQ_INT(REFRESH, 24LL * 3600 * 1000);
	T_EQ_INT(RETRY, 5LL * 60 * 1000);
	T_EQ_INT(HIST_MAX_WORKERS, 32);
	memset(&c, 0, sizeof(c));
	c.test = 1;
	refresh = (int64_t)(cfg_scale_delay(&c, HIST_REFRESH) * 1000);
	retry = (int64_t)(cfg_scale_delay(&c, HIST_RETRY) * 1000);
	T_EQ_INT(refresh, 24LL * 60 * 1000);
	T_EQ_INT(retry, 5000);
	memset(&w, 0, sizeof(w));
	hist_sched_init(&s, &ops, NULL, refresh, retry);
	r = want(&s, "ws://a.example", 2, "e");
	hist_sched_sweep(&s);
	T_EQ_INT(hist_sched_pass(&s, 0), 1);
	hist_sched_done(&s, r, 0, 100);
	T_EQ_INT(r->hr_due_ms, 100 + 5000);
	T_EQ_INT(hist_sched_pass(&s, 5100), 1);
	hist_sched_done(&s, r, 1, 5200);
	/* The failed group alone after 5 s, the rotation after 24 min. */
	T_EQ_INT(hist_relay_due(r), 5200 + 5000);
	T_EQ_INT(r->hr_due_ms, 5200 + 24 * 60 * 1000);
	T_EQ_INT(hist_sched_pass(&s, 10200), 1);
	hist_sched_done(&s, r, 1, 10300);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(hist_relay_due(r), 5200 + 24 * 60 * 1000);
	hist_sched_free(&s);
}

static void
one_per_pass_32_workers(void)
{
	struct hist_sched s;
	char		  key[64];
	int		  i, admitted = 0;

	setup(&s);
	hist_sched_unmark(&s);
	for (i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "ws://r%02d.example", i);
		want(&s, key, 3, "e");
	}
	hist_sched_sweep(&s);
	for (i = 0; i < 40; i++) {
		int a = hist_sched_pass(&s, 1000 + i);

		/* One per pass while below the ceiling, then none. */
		T_EQ_INT(a, i < 32 ? 1 : 0);
		admitted += a;
		T_EQ_INT(w.starts, admitted);
		T_CHECK(s.hs_nactive <= HIST_MAX_WORKERS);
	}
	T_EQ_INT(s.hs_nactive, 32);
	/* A worker finishing its rotation frees a slot for the next pass. */
	for (i = 0; i < 3; i++)
		hist_sched_done(&s, w.last_relay, 1, 2000);
	T_EQ_INT(s.hs_nactive, 31);
	T_EQ_INT(hist_sched_pass(&s, 2001), 1);
	T_EQ_INT(hist_sched_pass(&s, 2002), 0);
	T_EQ_INT(s.hs_nactive, 32);
	hist_sched_free(&s);
}

static void
dead_relay_holds_only_its_slot(void)
{
	struct hist_sched  s;
	struct hist_relay *dead, *ok;
	int		   i;

	setup(&s);
	dead = want(&s, "ws://dead.example", 2, "e");
	ok = want(&s, "ws://ok.example", 3, "e");
	hist_sched_sweep(&s);
	/* Both admitted, one per pass; the dead one never answers. */
	T_EQ_INT(hist_sched_pass(&s, 10), 1);
	T_EQ_INT(hist_sched_pass(&s, 20), 1);
	T_EQ_INT(s.hs_nactive, 2);
	T_CHECK(dead->hr_inflight && ok->hr_inflight);
	/* The live relay drains its whole rotation meanwhile ... */
	for (i = 0; i < 3; i++)
		hist_sched_done(&s, ok, 1, 30 + i);
	T_EQ_INT((int)ok->hr_rotations, 1);
	T_EQ_INT(ok->hr_active, 0);
	T_EQ_INT(ok->hr_due_ms, 32 + REFRESH);
	/* ... and its next rotation is admitted on time, the dead relay
	 * still in flight and holding one slot only. */
	T_EQ_INT(hist_sched_pass(&s, 32 + REFRESH), 1);
	T_CHECK(ok->hr_inflight);
	T_CHECK(dead->hr_inflight);
	T_EQ_INT(s.hs_nactive, 2);
	T_EQ_STR(hist_relay_state(dead, 32 + REFRESH), "in_flight");
	hist_sched_free(&s);
}

static void
successful_groups_drain_then_refresh(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 3);
	T_EQ_STR(hist_relay_state(r, 0), "waiting");
	T_EQ_INT(hist_sched_pass(&s, 10), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	T_EQ_STR(hist_relay_state(r, 10), "in_flight");
	/* A second pass admits nothing more on this relay (single flight). */
	T_EQ_INT(hist_sched_pass(&s, 11), 0);
	T_EQ_INT(w.starts, 1);
	hist_sched_done(&s, r, 1, 20);
	/* The next group started at once, without a pass. */
	T_EQ_INT(w.starts, 2);
	T_EQ_STR(w.last, "{\"#e\":[\"1\"]}");
	hist_sched_done(&s, r, 1, 30);
	T_EQ_STR(w.last, "{\"#e\":[\"2\"]}");
	hist_sched_done(&s, r, 1, 40);
	/* Rotation complete: released, due in 24 h, cursor back at 0. */
	T_EQ_INT(w.starts, 3);
	T_EQ_INT(w.releases, 1);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(r->hr_cursor, 0);
	T_EQ_INT(r->hr_rotations, 1);
	T_EQ_INT(r->hr_due_ms, 40 + REFRESH);
	T_EQ_STR(hist_relay_state(r, 50), "idle");
	T_EQ_INT(hist_sched_pass(&s, 40 + REFRESH - 1), 0);
	T_EQ_INT(hist_sched_pass(&s, 40 + REFRESH), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	hist_sched_free(&s);
}

static void
failed_group_advances_and_retries(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 3);
	hist_sched_pass(&s, 0);
	hist_sched_done(&s, r, 0, 100);
	/* Cursor advanced, worker released for five minutes. */
	T_EQ_INT(r->hr_cursor, 1);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(w.releases, 1);
	T_EQ_INT(r->hr_due_ms, 100 + RETRY);
	T_EQ_INT(hist_sched_pass(&s, 100 + RETRY - 1), 0);
	T_EQ_INT(hist_sched_pass(&s, 100 + RETRY), 1);
	/* The rotation goes on from the next group. */
	T_EQ_STR(w.last, "{\"#e\":[\"1\"]}");
	hist_sched_done(&s, r, 1, 400000);
	T_EQ_STR(w.last, "{\"#e\":[\"2\"]}");
	hist_sched_done(&s, r, 1, 400010);
	/* The rotation is over; its failed group is due by itself after
	 * the retry delay. */
	T_EQ_INT(r->hr_rotations, 1);
	T_EQ_INT(hist_relay_due(r), 400010 + RETRY);
	T_EQ_INT(hist_sched_pass(&s, 400010 + RETRY), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	hist_sched_free(&s);
}

/*
 * GRASP-03: "a failed group advances the cursor after a five-minute
 * delay and is retried on a later rotation"; "A successful complete
 * rotation refreshes after 24 hours".  A group that always fails is
 * retried by itself every five minutes: the groups that succeeded are
 * not fetched again before the 24 h refresh.
 */
static void
failed_group_retries_alone(void)
{
	struct hist_sched  s;
	struct hist_relay *r;
	int64_t		   end, t;
	int		   i, starts;

	r = swept_with_one_relay(&s, 3);
	T_EQ_INT(hist_sched_pass(&s, 0), 1);
	hist_sched_done(&s, r, 1, 10); /* group 0 ok */
	hist_sched_done(&s, r, 0, 20); /* group 1 fails */
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(hist_sched_pass(&s, 20 + RETRY), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"2\"]}");
	end = 30 + RETRY;
	hist_sched_done(&s, r, 1, end); /* group 2 ok: rotation over */
	T_EQ_INT(r->hr_rotations, 1);
	T_EQ_INT(r->hr_failed.hm_n, 1);
	T_EQ_INT(hist_relay_due(r), end + RETRY);
	T_EQ_STR(hist_relay_state(r, end + RETRY - 1), "idle");
	/* Ten retries: each starts group 1 only, and one group only. */
	for (i = 0, t = end; i < 10; i++) {
		starts = w.starts;
		T_EQ_INT(hist_sched_pass(&s, t + RETRY - 1), 0);
		T_EQ_INT(hist_sched_pass(&s, t + RETRY), 1);
		T_EQ_STR(w.last, "{\"#e\":[\"1\"]}");
		t += RETRY + 100;
		hist_sched_done(&s, r, 0, t);
		T_EQ_INT(w.starts, starts + 1);
		T_EQ_INT(s.hs_nactive, 0);
		T_EQ_INT(r->hr_rotations, 1);
		T_EQ_INT(hist_relay_due(r), t + RETRY);
	}
	/* It succeeds at last: nothing is due before the refresh. */
	T_EQ_INT(hist_sched_pass(&s, t + RETRY), 1);
	hist_sched_done(&s, r, 1, t + RETRY + 1);
	T_EQ_INT(r->hr_failed.hm_n, 0);
	T_EQ_INT(hist_relay_due(r), end + REFRESH);
	T_EQ_INT(hist_sched_pass(&s, end + REFRESH - 1), 0);
	/* The refresh is a whole rotation again, from group 0. */
	T_EQ_INT(hist_sched_pass(&s, end + REFRESH), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	hist_sched_done(&s, r, 1, end + REFRESH + 1);
	T_EQ_STR(w.last, "{\"#e\":[\"1\"]}");
	hist_sched_free(&s);
}

/*
 * Two failed groups are retried in one pass while they succeed; one that
 * fails again waits alone, and a failed group the inventory dropped is
 * forgotten.
 */
static void
failed_groups_retry_pass(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 4);
	T_EQ_INT(hist_sched_pass(&s, 0), 1);
	hist_sched_done(&s, r, 0, 1); /* group 0 fails */
	T_EQ_INT(hist_sched_pass(&s, 1 + RETRY), 1);
	hist_sched_done(&s, r, 1, 2 + RETRY); /* 1 ok */
	hist_sched_done(&s, r, 0, 3 + RETRY); /* 2 fails */
	T_EQ_INT(hist_sched_pass(&s, 3 + 2 * RETRY), 1);
	hist_sched_done(&s, r, 1, 4 + 2 * RETRY); /* 3 ok: over */
	T_EQ_INT(r->hr_failed.hm_n, 2);
	/* The retry pass: 0 (ok), then 2 at once (fails again). */
	T_EQ_INT(hist_sched_pass(&s, 4 + 3 * RETRY), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	hist_sched_done(&s, r, 1, 5 + 3 * RETRY);
	T_EQ_STR(w.last, "{\"#e\":[\"2\"]}");
	T_EQ_INT(s.hs_nactive, 1);
	hist_sched_done(&s, r, 0, 6 + 3 * RETRY);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(r->hr_failed.hm_n, 1);
	T_EQ_INT(hist_relay_due(r), 6 + 4 * RETRY);
	/* Its group leaves the inventory: nothing to retry. */
	hist_sched_unmark(&s);
	want(&s, "ws://a.example", 2, "e");
	hist_sched_sweep(&s);
	T_EQ_INT(r->hr_failed.hm_n, 0);
	T_EQ_INT(hist_sched_pass(&s, 6 + 4 * RETRY), 0);
	hist_sched_free(&s);
}

static void
start_refused_counts_as_failure(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 2);
	w.fail_start = 1;
	T_EQ_INT(hist_sched_pass(&s, 0), 1);
	T_EQ_INT(w.starts, 1);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(r->hr_groups_failed, 1);
	T_EQ_INT(r->hr_due_ms, RETRY);
	hist_sched_free(&s);
}

static void
cursor_modulo_new_filter_set(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 5);
	hist_sched_pass(&s, 0);
	hist_sched_done(&s, r, 1, 1);
	hist_sched_done(&s, r, 1, 2);
	hist_sched_done(&s, r, 1, 3);
	T_EQ_INT(r->hr_cursor, 3);
	/* The same set again changes nothing. */
	hist_sched_unmark(&s);
	want(&s, "ws://a.example", 5, "e");
	hist_sched_sweep(&s);
	T_EQ_INT(r->hr_cursor, 3);
	T_EQ_INT(r->hr_rot_left, 2);
	/* A smaller set: the cursor modulo its size. */
	hist_sched_unmark(&s);
	want(&s, "ws://a.example", 2, "A");
	hist_sched_sweep(&s);
	T_EQ_INT(r->hr_cursor, 1);
	T_EQ_INT(r->hr_rot_left, 2);
	hist_sched_done(&s, r, 1, 4);
	T_EQ_STR(w.last, "{\"#A\":[\"0\"]}");
	hist_sched_free(&s);
}

/* A filter set of n filters: "#e" 0..n-1, plus "#a" x when x. */
static void
set_with(struct hist_sched *s, struct hist_relay *r, int n, const char *x)
{
	struct conn_filters f;
	char		    buf[64];

	filters(&f, n, "e");
	if (x != NULL) {
		if ((f.cf_v = realloc(f.cf_v,
			 ((size_t)n + 2) * sizeof(char *))) == NULL)
			abort();
		snprintf(buf, sizeof(buf), "{\"#a\":[\"%s\"]}", x);
		/* Sorted first, behind any cursor. */
		memmove(f.cf_v + 1, f.cf_v, (size_t)n * sizeof(char *));
		f.cf_v[0] = strdup(buf);
		f.cf_v[n + 1] = NULL;
		f.cf_n = (size_t)n + 1;
	}
	hist_sched_set_filters(s, r, &f);
}

static void
thread_added_mid_rotation(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 3);
	T_EQ_INT(hist_sched_pass(&s, 0), 1);
	hist_sched_done(&s, r, 1, 10);
	T_EQ_INT(r->hr_cursor, 1);
	/* A new root: its filter sorts first, behind the cursor, while
	 * group 1 is in flight. */
	hist_sched_unmark(&s);
	hist_sched_want(&s, "ws://a.example", HIST_P_PARTICIPANT, 0);
	set_with(&s, r, 3, "new");
	hist_sched_added(&s, r);
	hist_sched_sweep(&s);
	T_CHECK(r->hr_inflight);
	hist_sched_done(&s, r, 1, 20);
	hist_sched_done(&s, r, 1, 30);
	/* The rotation ended without reaching filter 0 ... */
	T_EQ_INT(r->hr_rotations, 1);
	T_EQ_INT(r->hr_active, 0);
	T_EQ_INT(w.starts, 3);
	/* ... so the next one is due at once, not in 24 h, and reaches
	 * the new root's filter (from the cursor, 3, wrapping). */
	T_EQ_INT(r->hr_due_ms, 30);
	T_EQ_STR(hist_relay_state(r, 30), "waiting");
	T_EQ_INT(hist_sched_pass(&s, 31), 1);
	T_EQ_STR(w.last, "{\"#e\":[\"2\"]}");
	hist_sched_done(&s, r, 1, 40);
	T_EQ_STR(w.last, "{\"#a\":[\"new\"]}");
	/* That rotation covered everything: the 24 h refresh again. */
	hist_sched_done(&s, r, 1, 41);
	hist_sched_done(&s, r, 1, 42);
	hist_sched_done(&s, r, 1, 43);
	T_EQ_INT(r->hr_rotations, 2);
	T_EQ_INT(r->hr_due_ms, 43 + REFRESH);
	/* An idle relay (between rotations) gaining a thread is due at
	 * once, and its rotation then ends with the 24 h refresh. */
	hist_sched_unmark(&s);
	hist_sched_want(&s, "ws://a.example", HIST_P_PARTICIPANT, 0);
	set_with(&s, r, 3, "new2");
	hist_sched_added(&s, r);
	hist_sched_sweep(&s);
	T_EQ_INT(r->hr_due_ms, 0);
	T_EQ_INT(hist_sched_pass(&s, 50), 1);
	hist_sched_done(&s, r, 1, 51);
	T_EQ_STR(w.last, "{\"#a\":[\"new2\"]}");
	hist_sched_done(&s, r, 1, 52);
	hist_sched_done(&s, r, 1, 53);
	hist_sched_done(&s, r, 1, 54);
	T_EQ_INT(r->hr_due_ms, 54 + REFRESH);
	hist_sched_free(&s);
}

static void
removal_lets_flight_finish(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	setup(&s);
	r = want(&s, "ws://a.example", 3, "e");
	want(&s, "ws://b.example", 3, "e");
	hist_sched_sweep(&s);
	hist_sched_pass(&s, 0);
	T_ASSERT(w.last_relay == r);
	/* Both removed: b (idle) goes at once, a stays until its group
	 * ends, and no further group starts on it. */
	hist_sched_unmark(&s);
	hist_sched_sweep(&s);
	T_EQ_INT(s.hs_relays.hm_n, 1);
	T_EQ_INT(s.hs_nactive, 1);
	hist_sched_done(&s, r, 1, 5);
	T_EQ_INT(w.starts, 1);
	T_EQ_INT(s.hs_relays.hm_n, 0);
	T_EQ_INT(s.hs_nactive, 0);
	T_EQ_INT(w.releases, 1);
	T_EQ_INT(hist_sched_pass(&s, 6), 0);
	hist_sched_free(&s);
}

static void
restart_starts_from_first_filter(void)
{
	struct hist_sched  s;
	struct hist_relay *r;

	r = swept_with_one_relay(&s, 3);
	hist_sched_pass(&s, 0);
	hist_sched_done(&s, r, 1, 1);
	T_EQ_INT(r->hr_cursor, 1);
	hist_sched_free(&s);
	/* A new process: nothing was persisted. */
	r = swept_with_one_relay(&s, 3);
	T_EQ_INT(r->hr_cursor, 0);
	hist_sched_pass(&s, 0);
	T_EQ_STR(w.last, "{\"#e\":[\"0\"]}");
	hist_sched_free(&s);
}

static const struct t_case cases[] = {
	T_CASE(cadence_with_test_timing),
	T_CASE(one_per_pass_32_workers),
	T_CASE(dead_relay_holds_only_its_slot),
	T_CASE(successful_groups_drain_then_refresh),
	T_CASE(failed_group_advances_and_retries),
	T_CASE(failed_group_retries_alone),
	T_CASE(failed_groups_retry_pass),
	T_CASE(start_refused_counts_as_failure),
	T_CASE(cursor_modulo_new_filter_set),
	T_CASE(thread_added_mid_rotation),
	T_CASE(removal_lets_flight_finish),
	T_CASE(restart_starts_from_first_filter),
};

T_MAIN(cases)
