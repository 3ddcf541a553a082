/*
 * sup_policy.c: graspd's restart policy (see supervisor.h), the decisions
 * of sup_role.c without its I/O.  Pure: no process, no timer, no log; the
 * caller passes the clock and the role's history and applies the answer.
 * After s6-supervise (throttling, permafailon) and style.md's "Exit
 * status is policy": 1 is a crash, respawned with backoff; 78 (EX_CONFIG)
 * is permanent.  Exit statuses stay waitpid(2)'s numbers; their text is
 * made here only for display.  Runs in the supervisor only.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <stdio.h>

#include "supervisor.h"

int
sup_policy_config_exit(int status)
{
	return status != -1 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == CONFIG_EXIT;
}

void
sup_policy_exit_text(int status, char *out, size_t outlen)
{
	if (status == -1)
		snprintf(out, outlen, "%s", "");
	else if (WIFEXITED(status))
		snprintf(out, outlen, "exited %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, outlen, "killed by signal %d%s", WTERMSIG(status),
		    WCOREDUMP(status) ? " (core dumped)" : "");
	else
		snprintf(out, outlen, "status 0x%x", (unsigned)status);
}

void
sup_policy_exit(const struct sup_exit *e, double now, struct sup_decision *d)
{
	double	 up = now - e->se_started, delay;
	int	 was_ready = e->se_ready > 0;
	unsigned n;

	d->sd_fast_deaths = e->se_fast_deaths;
	d->sd_delay = 0;
	if (e->se_shutdown) {
		d->sd_verdict = SUP_V_SHUTDOWN;
		return;
	}
	if (e->se_restart && e->se_want) {
		d->sd_verdict = SUP_V_RESTART;
		d->sd_fast_deaths = 0;
		return;
	}
	if (!e->se_want) {
		d->sd_verdict = SUP_V_STOPPED;
		return;
	}
	if (sup_policy_config_exit(e->se_status)) {
		d->sd_verdict = SUP_V_FAIL_CONFIG;
		return;
	}
	if (was_ready && now - e->se_ready >= SUP_STABLE_SECS) {
		d->sd_fast_deaths = 0;
		delay = 0;
	} else if (!was_ready || up < SUP_FAST_DEATH_SECS) {
		n = d->sd_fast_deaths = e->se_fast_deaths + 1;
		if (n >= SUP_MAX_FAST_DEATHS) {
			d->sd_verdict = SUP_V_FAIL_FAST;
			return;
		}
		delay = SUP_BACKOFF_MIN;
		while (--n > 0 && delay < SUP_BACKOFF_MAX)
			delay *= 2;
		if (delay > SUP_BACKOFF_MAX)
			delay = SUP_BACKOFF_MAX;
	} else {
		d->sd_fast_deaths = 0;
		delay = SUP_BACKOFF_MIN;
	}
	d->sd_verdict = SUP_V_RESPAWN;
	d->sd_delay = delay;
}

double
sup_policy_start_delay(int spawned, double started, double now, double delay)
{
	double gap;

	if (spawned) {
		gap = started + SUP_START_GAP - now;
		if (gap > delay)
			delay = gap;
	}
	return delay;
}

double
sup_policy_ready_wait(double started, double now, double timeout)
{
	double left;

	left = started + SUP_READY_MAX_TIMEOUTS * timeout - now;
	if (left <= 0)
		return 0;
	return left < timeout ? left : timeout;
}
