/*
 * suppolicy_test.c: graspd's restart policy (supervisor/sup_policy.c,
 * linked alone) on a fake clock, with real waitpid(2) statuses: a crash
 * restarts with a delay that doubles from SUP_BACKOFF_MIN and the
 * SUP_MAX_FAST_DEATHS-th fast death in a row marks the role failed; a
 * death before ready is fast however long the start took; a role ready
 * for SUP_STABLE_SECS restarts at once and its count is cleared, a
 * slower death clears it too but waits SUP_BACKOFF_MIN; exit 78
 * (EX_CONFIG) is never respawned, a kill by a signal is a crash; during
 * shutdown nothing is restarted, not even an asked-for restart; a stop
 * request is not undone; an asked-for restart starts at once and clears
 * the count; the s6 start gap; the readiness timeout's extensions and
 * their end.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../supervisor/supervisor.h"
#include "t.h"

#define T_NEAR(a, b) T_CHECK(fabs((double)(a) - (double)(b)) < 1e-9)

/* The waitpid() status of a child killed by sig, or exiting code if 0. */
static int
status_of(int code, int sig)
{
	pid_t pid;
	int   st;

	if ((pid = fork()) == -1)
		abort();
	if (pid == 0) {
		if (sig != 0) {
			signal(sig, SIG_DFL);
			raise(sig);
		}
		_exit(code);
	}
	while (waitpid(pid, &st, 0) == -1)
		;
	return st;
}
#define status_exit(code)  status_of((code), 0)
#define status_signal(sig) status_of(0, (sig))

/* sup_policy_exit()'s verdict, the whole decision in *d. */
static enum sup_verdict
decide(const struct sup_exit *e, double now, struct sup_decision *d)
{
	sup_policy_exit(e, now, d);
	return d->sd_verdict;
}

/* A wanted role that started at 1000 s and was never ready. */
static struct sup_exit
wanted(int st)
{
	struct sup_exit e;

	memset(&e, 0, sizeof(e));
	e.se_status = st;
	e.se_started = 1000;
	e.se_want = 1;
	return e;
}

static void
crash_restarts_with_backoff_doubling(void)
{
	struct sup_exit	    e = wanted(status_exit(1));
	struct sup_decision d;
	double		    want = SUP_BACKOFF_MIN, now = 1000;
	unsigned	    i;

	/*
	 * Ready, then dead within SUP_FAST_DEATH_SECS: each one fast, 1, 2,
	 * 4, 8 s.  The SUP_BACKOFF_MAX cap is not reached from here with
	 * supervisor.h's numbers: the 5th fast death fails the role first.
	 */
	for (i = 1; i < SUP_MAX_FAST_DEATHS; i++) {
		e.se_started = now;
		e.se_ready = now + 0.5;
		now += SUP_FAST_DEATH_SECS / 2;
		T_EQ_INT(decide(&e, now, &d), SUP_V_RESPAWN);
		T_EQ_INT(d.sd_fast_deaths, i);
		T_NEAR(d.sd_delay, want);
		T_CHECK(d.sd_delay <= SUP_BACKOFF_MAX);
		want *= 2;
		e.se_fast_deaths = d.sd_fast_deaths;
		now += d.sd_delay;
	}
}

static void
fast_deaths_in_a_row_mark_the_role_failed(void)
{
	struct sup_exit	    e = wanted(status_exit(1));
	struct sup_decision d;

	e.se_fast_deaths = SUP_MAX_FAST_DEATHS - 1;
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_FAIL_FAST);
	T_EQ_INT(d.sd_fast_deaths, SUP_MAX_FAST_DEATHS);
	/* One fewer in a row still restarts. */
	e.se_fast_deaths = SUP_MAX_FAST_DEATHS - 2;
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_RESPAWN);
}

static void
death_before_ready_is_fast_however_late(void)
{
	struct sup_exit	    e = wanted(status_exit(1));
	struct sup_decision d;

	e.se_fast_deaths = 2;
	T_EQ_INT(decide(&e, 1000 + 100 * SUP_FAST_DEATH_SECS, &d),
	    SUP_V_RESPAWN);
	T_EQ_INT(d.sd_fast_deaths, 3);
	T_NEAR(d.sd_delay, SUP_BACKOFF_MIN * 4);
}

static void
stable_role_restarts_now_and_resets_backoff(void)
{
	struct sup_exit	    e = wanted(status_exit(1));
	struct sup_decision d;

	e.se_fast_deaths = SUP_MAX_FAST_DEATHS - 1;
	e.se_ready = 1001;
	T_EQ_INT(decide(&e, e.se_ready + SUP_STABLE_SECS, &d), SUP_V_RESPAWN);
	T_EQ_INT(d.sd_fast_deaths, 0);
	T_NEAR(d.sd_delay, 0);
}

static void
slow_death_not_stable_waits_min_and_resets_backoff(void)
{
	struct sup_exit	    e = wanted(status_exit(1));
	struct sup_decision d;

	/* Up longer than SUP_FAST_DEATH_SECS, ready for less than stable. */
	e.se_fast_deaths = SUP_MAX_FAST_DEATHS - 1;
	e.se_ready = 1000 + SUP_FAST_DEATH_SECS;
	T_EQ_INT(decide(&e, e.se_ready + SUP_STABLE_SECS / 2, &d),
	    SUP_V_RESPAWN);
	T_EQ_INT(d.sd_fast_deaths, 0);
	T_NEAR(d.sd_delay, SUP_BACKOFF_MIN);
}

static void
config_exit_is_not_respawned(void)
{
	struct sup_exit	    e = wanted(status_exit(CONFIG_EXIT));
	struct sup_decision d;

	T_EQ_INT(CONFIG_EXIT, 78);
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_FAIL_CONFIG);
	T_EQ_INT(d.sd_fast_deaths, 0);
	/* Even after a long, ready life. */
	e.se_ready = 1001;
	T_EQ_INT(decide(&e, 1001 + 10 * SUP_STABLE_SECS, &d),
	    SUP_V_FAIL_CONFIG);
	/* A neighbouring status is a crash. */
	e.se_status = status_exit(CONFIG_EXIT - 1);
	T_EQ_INT(decide(&e, 1001 + 10 * SUP_STABLE_SECS, &d), SUP_V_RESPAWN);
}

static void
kill_by_signal_is_a_crash(void)
{
	struct sup_exit	    e = wanted(status_signal(SIGSEGV));
	struct sup_decision d;

	T_ASSERT(WIFSIGNALED(e.se_status));
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_RESPAWN);
	T_EQ_INT(d.sd_fast_deaths, 1);
	T_NEAR(d.sd_delay, SUP_BACKOFF_MIN);
}

static void
kill_by_signal_during_shutdown_is_not_restarted(void)
{
	struct sup_exit	    e = wanted(status_signal(SIGKILL));
	struct sup_decision d;

	e.se_shutdown = 1;
	e.se_fast_deaths = 2;
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_SHUTDOWN);
	T_EQ_INT(d.sd_fast_deaths, 2);
	/* Not even one graspctl asked to restart. */
	e.se_restart = 1;
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_SHUTDOWN);
	/* Nor a config exit: no failure recorded while stopping. */
	e.se_status = status_exit(CONFIG_EXIT);
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_SHUTDOWN);
}

static void
stop_request_is_not_undone(void)
{
	struct sup_exit	    e = wanted(status_signal(SIGTERM));
	struct sup_decision d;

	e.se_want = 0;
	e.se_restart = 1; /* a restart then a stop: the stop wins */
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_STOPPED);
	e.se_status = status_exit(CONFIG_EXIT);
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_STOPPED);
}

static void
asked_restart_starts_now_and_clears_count(void)
{
	struct sup_exit	    e = wanted(status_signal(SIGTERM));
	struct sup_decision d;

	e.se_restart = 1;
	e.se_fast_deaths = SUP_MAX_FAST_DEATHS - 1;
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_RESTART);
	T_EQ_INT(d.sd_fast_deaths, 0);
	/* Before the config check: a reload may have fixed the file. */
	e.se_status = status_exit(CONFIG_EXIT);
	T_EQ_INT(decide(&e, 1001, &d), SUP_V_RESTART);
}

static void
starts_keep_the_s6_gap(void)
{
	T_NEAR(SUP_START_GAP, 1.0);
	/* Never started: at once. */
	T_NEAR(sup_policy_start_delay(0, 1000, 1000.2, 0), 0);
	/* Started 0.2 s ago: the rest of the gap. */
	T_NEAR(sup_policy_start_delay(1, 1000, 1000.2, 0), SUP_START_GAP - 0.2);
	/* A backoff longer than the gap is kept. */
	T_NEAR(sup_policy_start_delay(1, 1000, 1000.2, 4), 4);
	/* Long ago: no wait. */
	T_CHECK(sup_policy_start_delay(1, 1000, 1000 + SUP_START_GAP, 0) <= 0);
}

static void
ready_timeout_extends_until_its_last(void)
{
	double t = 60, last = 1000 + SUP_READY_MAX_TIMEOUTS * t;

	T_EQ_INT(SUP_READY_MAX_TIMEOUTS, 30);
	T_NEAR(sup_policy_ready_wait(1000, 1010, t), t);
	T_NEAR(sup_policy_ready_wait(1000, last - 20, t), 20);
	T_NEAR(sup_policy_ready_wait(1000, last, t), 0);
	T_NEAR(sup_policy_ready_wait(1000, last + 5, t), 0);
}

static const struct t_case cases[] = {
	T_CASE(crash_restarts_with_backoff_doubling),
	T_CASE(fast_deaths_in_a_row_mark_the_role_failed),
	T_CASE(death_before_ready_is_fast_however_late),
	T_CASE(stable_role_restarts_now_and_resets_backoff),
	T_CASE(slow_death_not_stable_waits_min_and_resets_backoff),
	T_CASE(config_exit_is_not_respawned),
	T_CASE(kill_by_signal_is_a_crash),
	T_CASE(kill_by_signal_during_shutdown_is_not_restarted),
	T_CASE(stop_request_is_not_undone),
	T_CASE(asked_restart_starts_now_and_clears_count),
	T_CASE(starts_keep_the_s6_gap),
	T_CASE(ready_timeout_extends_until_its_last),
};

T_MAIN(cases)
