/*
 * supfsm_test.c: the supervisor's role life cycle (supervisor/sup_fsm.c,
 * linked alone with sup_policy.c): every entry of the state x event
 * table against a list written apart from it, legal ones giving their
 * next state and action, every other one refused with the state kept;
 * a process appears only on SPAWNED and goes only on an exit; every
 * state is reachable and can be stopped; the restart policy never gives
 * a verdict the table refuses; and the walks graspd makes (start-up
 * behind relayd, a crash loop to failed, a stop during a restart, a
 * readiness timeout turned into a restart).
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../../supervisor/supervisor.h"
#include "t.h"

struct entry {
	enum sup_state	e_from;
	enum sup_event	e_ev;
	enum sup_state	e_to;
	enum sup_action e_action;
};

#define E(f, ev, t, a) \
	{ \
		SUP_##f, SUP_EV_##ev, SUP_##t, SUP_A_##a \
	}

/* The legal transitions, by event: what graspd does, not a copy. */
static const struct entry legal[] = {
	E(STOPPED, HOLD, HELD, HOLD),

	/* Asked up: from no process, through BACKOFF (start gap). */
	E(STOPPED, START, BACKOFF, START),
	E(HELD, START, BACKOFF, START),
	E(BACKOFF, START, BACKOFF, START),
	E(FAILED, START, BACKOFF, START),
	E(STARTING, START, STARTING, NONE),
	E(RUNNING, START, RUNNING, NONE),
	E(STOPPING, START, RESTARTING, NONE),
	E(RESTARTING, START, RESTARTING, NONE),
	E(TIMEDOUT, START, RESTARTING, NONE),

	E(STOPPED, RESTART, BACKOFF, START),
	E(HELD, RESTART, BACKOFF, START),
	E(BACKOFF, RESTART, BACKOFF, START),
	E(FAILED, RESTART, BACKOFF, START),
	E(STARTING, RESTART, RESTARTING, TERM),
	E(RUNNING, RESTART, RESTARTING, TERM),
	E(STOPPING, RESTART, RESTARTING, NONE),
	E(RESTARTING, RESTART, RESTARTING, NONE),
	E(TIMEDOUT, RESTART, RESTARTING, NONE),

	E(STOPPED, STOP, STOPPED, CANCEL),
	E(HELD, STOP, STOPPED, CANCEL),
	E(BACKOFF, STOP, STOPPED, CANCEL),
	E(FAILED, STOP, FAILED, NONE),
	E(STARTING, STOP, STOPPING, TERM),
	E(RUNNING, STOP, STOPPING, TERM),
	E(STOPPING, STOP, STOPPING, NONE),
	E(RESTARTING, STOP, STOPPING, NONE),
	E(TIMEDOUT, STOP, STOPPING, NONE),

	E(BACKOFF, START_TIMER, BACKOFF, SPAWN),
	E(BACKOFF, SPAWNED, STARTING, WATCH),
	E(BACKOFF, FORK_FAILED, BACKOFF, RETRY),
	E(BACKOFF, EXEC_FAILED, FAILED, FAIL),

	E(STARTING, PROGRESS, STARTING, EXTEND),
	E(RUNNING, PROGRESS, RUNNING, NONE),
	E(STOPPING, PROGRESS, STOPPING, NONE),
	E(RESTARTING, PROGRESS, RESTARTING, NONE),
	E(TIMEDOUT, PROGRESS, TIMEDOUT, NONE),

	E(STARTING, READY, RUNNING, READY),
	E(RUNNING, READY, RUNNING, NONE),
	E(STOPPING, READY, STOPPING, NONE),
	E(RESTARTING, READY, RESTARTING, NONE),
	E(TIMEDOUT, READY, TIMEDOUT, NONE),

	E(STARTING, READY_TIMEOUT, TIMEDOUT, TIMEOUT),

	E(STOPPING, KILL_TIMER, STOPPING, KILL),
	E(RESTARTING, KILL_TIMER, RESTARTING, KILL),
	E(TIMEDOUT, KILL_TIMER, TIMEDOUT, KILL),

	E(STARTING, EXIT_SHUTDOWN, STOPPED, NONE),
	E(RUNNING, EXIT_SHUTDOWN, STOPPED, NONE),
	E(STOPPING, EXIT_SHUTDOWN, STOPPED, NONE),
	E(RESTARTING, EXIT_SHUTDOWN, STOPPED, NONE),
	E(TIMEDOUT, EXIT_SHUTDOWN, STOPPED, NONE),
	E(STOPPING, EXIT_STOPPED, STOPPED, NONE),
	E(RESTARTING, EXIT_RESTART, BACKOFF, SCHEDULE),
	E(STARTING, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	E(RUNNING, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	E(TIMEDOUT, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	E(STARTING, EXIT_FAILED, FAILED, FAIL),
	E(RUNNING, EXIT_FAILED, FAILED, FAIL),
	E(TIMEDOUT, EXIT_FAILED, FAILED, FAIL),
};

#define NLEGAL (sizeof(legal) / sizeof(legal[0]))

static const struct entry *
find_legal(enum sup_state s, enum sup_event ev)
{
	size_t i;

	for (i = 0; i < NLEGAL; i++)
		if (legal[i].e_from == s && legal[i].e_ev == ev)
			return &legal[i];
	return NULL;
}

/* The next state of s on ev, or -1 if refused. */
static int
next_of(enum sup_state s, enum sup_event ev)
{
	enum sup_state t = s;

	if (sup_fsm_step(&t, ev) == SUP_A_ILLEGAL)
		return -1;
	return (int)t;
}

static void
every_entry_is_the_listed_one_or_refused(void)
{
	const struct entry *e;
	enum sup_action	    a;
	enum sup_state	    t;
	int		    s, ev, n = 0;
	char		    what[128];

	for (s = 0; s < SUP_NSTATES; s++)
		for (ev = 0; ev < SUP_NEVENTS; ev++) {
			t = (enum sup_state)s;
			a = sup_fsm_step(&t, (enum sup_event)ev);
			e = find_legal((enum sup_state)s, (enum sup_event)ev);
			snprintf(what, sizeof(what), "%s in state %d",
			    sup_event_name((enum sup_event)ev), s);
			if (e == NULL) {
				if (a != SUP_A_ILLEGAL || (int)t != s)
					t_fail_at(__FILE__, __LINE__, what);
				continue;
			}
			n++;
			if (a != e->e_action || t != e->e_to)
				t_fail_at(__FILE__, __LINE__, what);
		}
	T_EQ_INT(n, NLEGAL);
}

static void
out_of_range_is_refused(void)
{
	enum sup_state s = SUP_RUNNING, bad = SUP_NSTATES;

	T_EQ_INT(sup_fsm_step(&s, SUP_NEVENTS), SUP_A_ILLEGAL);
	T_EQ_INT(s, SUP_RUNNING);
	T_EQ_INT(sup_fsm_step(&bad, SUP_EV_STOP), SUP_A_ILLEGAL);
	T_EQ_INT(bad, SUP_NSTATES);
	T_EQ_STR(sup_state_name(SUP_NSTATES), "unknown");
	T_EQ_STR(sup_event_name(SUP_NEVENTS), "unknown");
}

static int
is_exit(enum sup_event ev)
{
	return ev >= SUP_EV_EXIT_SHUTDOWN && ev <= SUP_EV_EXIT_FAILED;
}

/* Readiness, timers of a process and exits need a process. */
static int
needs_process(enum sup_event ev)
{
	return ev == SUP_EV_PROGRESS || ev == SUP_EV_READY ||
	    ev == SUP_EV_READY_TIMEOUT || ev == SUP_EV_KILL_TIMER ||
	    is_exit(ev);
}

static void
a_process_comes_with_spawned_and_goes_with_an_exit(void)
{
	int s, ev, t;

	for (s = 0; s < SUP_NSTATES; s++)
		for (ev = 0; ev < SUP_NEVENTS; ev++) {
			if ((t = next_of((enum sup_state)s,
				 (enum sup_event)ev)) == -1)
				continue;
			if (!sup_fsm_has_process((enum sup_state)s)) {
				T_CHECK(!needs_process((enum sup_event)ev));
				T_CHECK(
				    sup_fsm_has_process((enum sup_state)t) ==
				    (ev == SUP_EV_SPAWNED));
			} else {
				T_CHECK(ev != SUP_EV_SPAWNED &&
				    ev != SUP_EV_START_TIMER);
				T_CHECK(
				    sup_fsm_has_process((enum sup_state)t) !=
				    is_exit((enum sup_event)ev));
			}
		}
}

static void
the_three_stoppings_are_the_terminating_states(void)
{
	int s;

	for (s = 0; s < SUP_NSTATES; s++) {
		T_CHECK(sup_fsm_terminating((enum sup_state)s) ==
		    (strcmp(sup_state_name((enum sup_state)s), "stopping") ==
			0));
		/* A terminating state has its kill timer. */
		T_CHECK(sup_fsm_terminating((enum sup_state)s) ==
		    (next_of((enum sup_state)s, SUP_EV_KILL_TIMER) != -1));
		/* Not wanted: stopped, failed, or being stopped. */
		T_CHECK(sup_fsm_wanted((enum sup_state)s) !=
		    (s == SUP_STOPPED || s == SUP_FAILED || s == SUP_STOPPING));
	}
}

static void
every_state_is_reachable_from_stopped(void)
{
	int seen[SUP_NSTATES] = { 0 }, changed = 1, s, ev, t;

	seen[SUP_STOPPED] = 1;
	while (changed) {
		changed = 0;
		for (s = 0; s < SUP_NSTATES; s++)
			for (ev = 0; seen[s] && ev < SUP_NEVENTS; ev++) {
				t = next_of((enum sup_state)s,
				    (enum sup_event)ev);
				if (t != -1 && !seen[t])
					seen[t] = changed = 1;
			}
	}
	for (s = 0; s < SUP_NSTATES; s++)
		T_CHECK(seen[s]);
}

/* STOP is legal everywhere and ends without a process and not wanted. */
static void
stop_is_heard_in_every_state(void)
{
	enum sup_state t;
	int	       s;

	for (s = 0; s < SUP_NSTATES; s++) {
		t = (enum sup_state)s;
		T_CHECK(sup_fsm_step(&t, SUP_EV_STOP) != SUP_A_ILLEGAL);
		T_CHECK(!sup_fsm_wanted(t));
		if (sup_fsm_has_process(t))
			T_CHECK(next_of(t, SUP_EV_EXIT_STOPPED) == SUP_STOPPED);
	}
}

/* 1 if the policy's verdict on this exit is an event the table takes. */
static int
exit_is_taken(enum sup_state s, int status, int down, double ready,
    unsigned fast)
{
	struct sup_exit	    e;
	struct sup_decision d;

	memset(&e, 0, sizeof(e));
	e.se_status = status;
	e.se_started = 1000;
	e.se_ready = ready;
	e.se_fast_deaths = fast;
	e.se_shutdown = down;
	sup_fsm_exit_input(s, &e);
	sup_policy_exit(&e, 1001, &d);
	return next_of(s, sup_fsm_exit_event(d.sd_verdict)) != -1;
}

/*
 * For every state with a process, exit statuses, shutdown or not, ready
 * or not, any fast deaths before: the policy's verdict maps to an exit
 * the table takes.
 */
static void
the_policy_never_gives_a_refused_exit(void)
{
	static const int    st[] = { W_EXITCODE(0, 0), W_EXITCODE(1, 0),
		   W_EXITCODE(CONFIG_EXIT, 0), W_EXITCODE(127, 0),
		   W_EXITCODE(0, SIGTERM), W_EXITCODE(0, SIGKILL),
		   W_EXITCODE(0, SIGSEGV) };
	static const double ready[] = { 0, 1000.5, 900 };
	size_t		    i, r;
	unsigned	    fast;
	int		    s, down;

	for (s = 0; s < SUP_NSTATES; s++) {
		if (!sup_fsm_has_process((enum sup_state)s))
			continue;
		for (i = 0; i < sizeof(st) / sizeof(st[0]); i++)
			for (r = 0; r < sizeof(ready) / sizeof(ready[0]); r++)
				for (down = 0; down < 2; down++)
					for (fast = 0;
					     fast < SUP_MAX_FAST_DEATHS; fast++)
						T_CHECK(exit_is_taken(
						    (enum sup_state)s, st[i],
						    down, ready[r], fast));
	}
}

/* Steps s through evs, each checked legal; the final state. */
static enum sup_state
walk(enum sup_state s, const enum sup_event *evs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sup_fsm_step(&s, evs[i]) == SUP_A_ILLEGAL)
			return SUP_NSTATES;
	return s;
}
#define WALK(s, ...) \
	walk((s), (const enum sup_event[]){ __VA_ARGS__ }, \
	    sizeof((const enum sup_event[]){ __VA_ARGS__ }) / \
		sizeof(enum sup_event))

static void
startup_holds_the_roles_until_relayd_is_ready(void)
{
	enum sup_state s = SUP_STOPPED;

	T_EQ_INT(sup_fsm_step(&s, SUP_EV_HOLD), SUP_A_HOLD);
	T_EQ_STR(sup_state_name(s), "starting");
	T_CHECK(sup_fsm_wanted(s) && !sup_fsm_has_process(s));
	/* No timer runs for a held role. */
	T_EQ_INT(next_of(s, SUP_EV_START_TIMER), -1);
	T_EQ_INT(WALK(s, SUP_EV_START, SUP_EV_START_TIMER, SUP_EV_SPAWNED,
		     SUP_EV_PROGRESS, SUP_EV_READY),
	    SUP_RUNNING);
	/* Shutdown during start-up: a held role just stops. */
	T_EQ_INT(WALK(SUP_HELD, SUP_EV_STOP), SUP_STOPPED);
}

static void
crash_loop_ends_failed_and_start_clears_it(void)
{
	enum sup_state s;
	int	       i;

	s = WALK(SUP_STOPPED, SUP_EV_START, SUP_EV_START_TIMER, SUP_EV_SPAWNED);
	T_EQ_INT(s, SUP_STARTING);
	for (i = 0; i < SUP_MAX_FAST_DEATHS - 1; i++)
		s = WALK(s, SUP_EV_EXIT_RESPAWN, SUP_EV_START_TIMER,
		    SUP_EV_SPAWNED);
	T_EQ_INT(s, SUP_STARTING);
	T_EQ_INT(WALK(s, SUP_EV_EXIT_FAILED), SUP_FAILED);
	/* A failed role has no timer and no process: only asks move it. */
	T_EQ_INT(next_of(SUP_FAILED, SUP_EV_START_TIMER), -1);
	T_EQ_INT(next_of(SUP_FAILED, SUP_EV_READY), -1);
	T_EQ_INT(
	    WALK(SUP_FAILED, SUP_EV_START, SUP_EV_START_TIMER, SUP_EV_SPAWNED),
	    SUP_STARTING);
	/* exec failure is permanent, fork failure is not. */
	T_EQ_INT(WALK(SUP_BACKOFF, SUP_EV_START_TIMER, SUP_EV_EXEC_FAILED),
	    SUP_FAILED);
	T_EQ_INT(WALK(SUP_BACKOFF, SUP_EV_START_TIMER, SUP_EV_FORK_FAILED,
		     SUP_EV_START_TIMER, SUP_EV_SPAWNED),
	    SUP_STARTING);
}

static void
stop_during_restart_wins_start_during_stop_restarts(void)
{
	/* graspctl restart, then stop before the exit: stays down. */
	T_EQ_INT(
	    WALK(SUP_RUNNING, SUP_EV_RESTART, SUP_EV_STOP, SUP_EV_EXIT_STOPPED),
	    SUP_STOPPED);
	/* The verdict the policy gives then is "stopped". */
	T_EQ_INT(next_of(SUP_RESTARTING, SUP_EV_EXIT_STOPPED), -1);
	/* graspctl stop, then start before the exit: up again at once. */
	T_EQ_INT(WALK(SUP_RUNNING, SUP_EV_STOP, SUP_EV_START,
		     SUP_EV_EXIT_RESTART, SUP_EV_START_TIMER, SUP_EV_SPAWNED),
	    SUP_STARTING);
	/* The kill timer keeps the state. */
	T_EQ_INT(WALK(SUP_RUNNING, SUP_EV_STOP, SUP_EV_KILL_TIMER,
		     SUP_EV_EXIT_STOPPED),
	    SUP_STOPPED);
}

static void
readiness_timeout_exit_is_a_death(void)
{
	struct sup_exit e;
	enum sup_state	s;

	s = WALK(SUP_STARTING, SUP_EV_READY_TIMEOUT);
	T_EQ_INT(s, SUP_TIMEDOUT);
	memset(&e, 0, sizeof(e));
	sup_fsm_exit_input(s, &e);
	T_CHECK(e.se_want && !e.se_restart);
	/* A late READY changes nothing; the exit respawns or fails. */
	T_EQ_INT(WALK(s, SUP_EV_READY, SUP_EV_EXIT_RESPAWN), SUP_BACKOFF);
	T_EQ_INT(WALK(s, SUP_EV_EXIT_FAILED), SUP_FAILED);
	/* Asked to start meanwhile: a restart, as for any stop. */
	T_EQ_INT(WALK(s, SUP_EV_START), SUP_RESTARTING);
	sup_fsm_exit_input(SUP_RESTARTING, &e);
	T_CHECK(e.se_want && e.se_restart);
	sup_fsm_exit_input(SUP_STOPPING, &e);
	T_CHECK(!e.se_want && !e.se_restart);
}

static void
exit_events_follow_the_verdicts(void)
{
	T_EQ_INT(sup_fsm_exit_event(SUP_V_SHUTDOWN), SUP_EV_EXIT_SHUTDOWN);
	T_EQ_INT(sup_fsm_exit_event(SUP_V_STOPPED), SUP_EV_EXIT_STOPPED);
	T_EQ_INT(sup_fsm_exit_event(SUP_V_RESTART), SUP_EV_EXIT_RESTART);
	T_EQ_INT(sup_fsm_exit_event(SUP_V_RESPAWN), SUP_EV_EXIT_RESPAWN);
	T_EQ_INT(sup_fsm_exit_event(SUP_V_FAIL_CONFIG), SUP_EV_EXIT_FAILED);
	T_EQ_INT(sup_fsm_exit_event(SUP_V_FAIL_FAST), SUP_EV_EXIT_FAILED);
}

static void
every_state_and_event_has_a_name(void)
{
	int i;

	for (i = 0; i < SUP_NSTATES; i++)
		T_CHECK(
		    strcmp(sup_state_name((enum sup_state)i), "unknown") != 0);
	for (i = 0; i < SUP_NEVENTS; i++)
		T_CHECK(
		    strcmp(sup_event_name((enum sup_event)i), "unknown") != 0);
}

static const struct t_case cases[] = {
	T_CASE(every_entry_is_the_listed_one_or_refused),
	T_CASE(out_of_range_is_refused),
	T_CASE(a_process_comes_with_spawned_and_goes_with_an_exit),
	T_CASE(the_three_stoppings_are_the_terminating_states),
	T_CASE(every_state_is_reachable_from_stopped),
	T_CASE(stop_is_heard_in_every_state),
	T_CASE(the_policy_never_gives_a_refused_exit),
	T_CASE(startup_holds_the_roles_until_relayd_is_ready),
	T_CASE(crash_loop_ends_failed_and_start_clears_it),
	T_CASE(stop_during_restart_wins_start_during_stop_restarts),
	T_CASE(readiness_timeout_exit_is_a_death),
	T_CASE(exit_events_follow_the_verdicts),
	T_CASE(every_state_and_event_has_a_name),
};

T_MAIN(cases)
