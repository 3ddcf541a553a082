/*
 * sup_fsm.c: a role's life cycle in graspd, as one table of state x event
 * giving the next state and the action (s6-supervise's
 * actions[state][event], style.md "A life cycle as one table").  Pure: no
 * process, no timer, no log; sup_role.c turns fork+exec, readiness, timers
 * and exits into events and applies the actions.  Runs in the supervisor
 * only; tests/unit/supfsm_test.c walks every entry.
 *
 * An entry the table does not list is illegal: the state stays and the
 * caller logs it.  Events that cannot reach a state (a readiness line
 * without a process, an exit of a role that has none) are illegal there;
 * events that can but change nothing (READY while stopping, a second
 * stop) are listed with SUP_A_NONE.
 */
#include <sys/types.h>

#include "supervisor.h"

struct sup_transition {
	enum sup_state	st_next;
	enum sup_action st_action;
};

#define T(state, ev, next, action) \
	[SUP_##state][SUP_EV_##ev] = { SUP_##next, SUP_A_##action }

static const struct sup_transition fsm[SUP_NSTATES][SUP_NEVENTS] = {
	T(STOPPED, HOLD, HELD, HOLD),
	T(STOPPED, START, BACKOFF, START),
	T(STOPPED, STOP, STOPPED, CANCEL),
	T(STOPPED, RESTART, BACKOFF, START),

	T(HELD, START, BACKOFF, START),
	T(HELD, STOP, STOPPED, CANCEL),
	T(HELD, RESTART, BACKOFF, START),

	/* A start with no delay passes here too: START_TIMER at once. */
	T(BACKOFF, START, BACKOFF, START),
	T(BACKOFF, STOP, STOPPED, CANCEL),
	T(BACKOFF, RESTART, BACKOFF, START),
	T(BACKOFF, START_TIMER, BACKOFF, SPAWN),
	T(BACKOFF, SPAWNED, STARTING, WATCH),
	T(BACKOFF, FORK_FAILED, BACKOFF, RETRY),
	T(BACKOFF, EXEC_FAILED, FAILED, FAIL),

	T(STARTING, START, STARTING, NONE),
	T(STARTING, STOP, STOPPING, TERM),
	T(STARTING, RESTART, RESTARTING, TERM),
	T(STARTING, PROGRESS, STARTING, EXTEND),
	T(STARTING, READY, RUNNING, READY),
	T(STARTING, READY_TIMEOUT, TIMEDOUT, TIMEOUT),
	T(STARTING, EXIT_SHUTDOWN, STOPPED, NONE),
	T(STARTING, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	T(STARTING, EXIT_FAILED, FAILED, FAIL),

	T(RUNNING, START, RUNNING, NONE),
	T(RUNNING, STOP, STOPPING, TERM),
	T(RUNNING, RESTART, RESTARTING, TERM),
	T(RUNNING, PROGRESS, RUNNING, NONE),
	T(RUNNING, READY, RUNNING, NONE),
	T(RUNNING, EXIT_SHUTDOWN, STOPPED, NONE),
	T(RUNNING, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	T(RUNNING, EXIT_FAILED, FAILED, FAIL),

	/* SIGTERM was sent: a start or a restart waits for the exit. */
	T(STOPPING, START, RESTARTING, NONE),
	T(STOPPING, STOP, STOPPING, NONE),
	T(STOPPING, RESTART, RESTARTING, NONE),
	T(STOPPING, PROGRESS, STOPPING, NONE),
	T(STOPPING, READY, STOPPING, NONE),
	T(STOPPING, KILL_TIMER, STOPPING, KILL),
	T(STOPPING, EXIT_SHUTDOWN, STOPPED, NONE),
	T(STOPPING, EXIT_STOPPED, STOPPED, NONE),

	T(RESTARTING, START, RESTARTING, NONE),
	T(RESTARTING, STOP, STOPPING, NONE),
	T(RESTARTING, RESTART, RESTARTING, NONE),
	T(RESTARTING, PROGRESS, RESTARTING, NONE),
	T(RESTARTING, READY, RESTARTING, NONE),
	T(RESTARTING, KILL_TIMER, RESTARTING, KILL),
	T(RESTARTING, EXIT_SHUTDOWN, STOPPED, NONE),
	T(RESTARTING, EXIT_RESTART, BACKOFF, SCHEDULE),

	/* Still wanted: its exit is a death like any other. */
	T(TIMEDOUT, START, RESTARTING, NONE),
	T(TIMEDOUT, STOP, STOPPING, NONE),
	T(TIMEDOUT, RESTART, RESTARTING, NONE),
	T(TIMEDOUT, PROGRESS, TIMEDOUT, NONE),
	T(TIMEDOUT, READY, TIMEDOUT, NONE),
	T(TIMEDOUT, KILL_TIMER, TIMEDOUT, KILL),
	T(TIMEDOUT, EXIT_SHUTDOWN, STOPPED, NONE),
	T(TIMEDOUT, EXIT_RESPAWN, BACKOFF, SCHEDULE),
	T(TIMEDOUT, EXIT_FAILED, FAILED, FAIL),

	T(FAILED, START, BACKOFF, START),
	T(FAILED, STOP, FAILED, NONE),
	T(FAILED, RESTART, BACKOFF, START),
};

#undef T

/* graspctl's names: the three ways of stopping show as "stopping". */
static const char *const state_names[SUP_NSTATES] = {
	[SUP_STOPPED] = "stopped",
	[SUP_HELD] = "starting",
	[SUP_BACKOFF] = "backoff",
	[SUP_STARTING] = "starting",
	[SUP_RUNNING] = "running",
	[SUP_STOPPING] = "stopping",
	[SUP_RESTARTING] = "stopping",
	[SUP_TIMEDOUT] = "stopping",
	[SUP_FAILED] = "failed",
};

static const char *const event_names[SUP_NEVENTS] = {
	[SUP_EV_HOLD] = "hold",
	[SUP_EV_START] = "start",
	[SUP_EV_STOP] = "stop",
	[SUP_EV_RESTART] = "restart",
	[SUP_EV_START_TIMER] = "start-timer",
	[SUP_EV_SPAWNED] = "spawned",
	[SUP_EV_FORK_FAILED] = "fork-failed",
	[SUP_EV_EXEC_FAILED] = "exec-failed",
	[SUP_EV_PROGRESS] = "progress",
	[SUP_EV_READY] = "ready",
	[SUP_EV_READY_TIMEOUT] = "ready-timeout",
	[SUP_EV_KILL_TIMER] = "kill-timer",
	[SUP_EV_EXIT_SHUTDOWN] = "exit-shutdown",
	[SUP_EV_EXIT_STOPPED] = "exit-stopped",
	[SUP_EV_EXIT_RESTART] = "exit-restart",
	[SUP_EV_EXIT_RESPAWN] = "exit-respawn",
	[SUP_EV_EXIT_FAILED] = "exit-failed",
};

enum sup_action
sup_fsm_step(enum sup_state *s, enum sup_event ev)
{
	const struct sup_transition *t;

	if ((unsigned)*s >= SUP_NSTATES || (unsigned)ev >= SUP_NEVENTS)
		return SUP_A_ILLEGAL;
	t = &fsm[*s][ev];
	if (t->st_action != SUP_A_ILLEGAL)
		*s = t->st_next;
	return t->st_action;
}

const char *
sup_state_name(enum sup_state s)
{
	if ((unsigned)s >= SUP_NSTATES)
		return "unknown";
	return state_names[s];
}

const char *
sup_event_name(enum sup_event ev)
{
	if ((unsigned)ev >= SUP_NEVENTS)
		return "unknown";
	return event_names[ev];
}

int
sup_fsm_has_process(enum sup_state s)
{
	return s == SUP_STARTING || s == SUP_RUNNING || sup_fsm_terminating(s);
}

int
sup_fsm_wanted(enum sup_state s)
{
	return s == SUP_HELD || s == SUP_BACKOFF || s == SUP_STARTING ||
	    s == SUP_RUNNING || s == SUP_RESTARTING || s == SUP_TIMEDOUT;
}

int
sup_fsm_terminating(enum sup_state s)
{
	return s == SUP_STOPPING || s == SUP_RESTARTING || s == SUP_TIMEDOUT;
}

enum sup_event
sup_fsm_exit_event(enum sup_verdict v)
{
	switch (v) {
	case SUP_V_SHUTDOWN:
		return SUP_EV_EXIT_SHUTDOWN;
	case SUP_V_STOPPED:
		return SUP_EV_EXIT_STOPPED;
	case SUP_V_RESTART:
		return SUP_EV_EXIT_RESTART;
	case SUP_V_RESPAWN:
		return SUP_EV_EXIT_RESPAWN;
	case SUP_V_FAIL_CONFIG:
	case SUP_V_FAIL_FAST:
		break;
	}
	return SUP_EV_EXIT_FAILED;
}

void
sup_fsm_exit_input(enum sup_state s, struct sup_exit *e)
{
	e->se_want = sup_fsm_wanted(s);
	e->se_restart = s == SUP_RESTARTING;
}
