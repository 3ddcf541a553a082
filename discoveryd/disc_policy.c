/*
 * disc_policy.c: discoveryd's pure decisions (see discoveryd.h): no
 * loop, no network, a caller-supplied clock, so that a unit test can run
 * them through hours of passes at once.
 */
#include "discoveryd.h"

int
disc_reconcile_due(int64_t *last_ms, int64_t now_ms, int64_t period_ms)
{
	if (*last_ms >= 0 && now_ms - *last_ms < period_ms)
		return 0;
	/* On the period's grid while the passes keep up; a pass that came
	 * late by a whole period or more starts the grid again. */
	if (*last_ms >= 0 && now_ms - *last_ms < 2 * period_ms)
		*last_ms += period_ms;
	else
		*last_ms = now_ms;
	return 1;
}
