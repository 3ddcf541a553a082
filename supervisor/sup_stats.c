/*
 * sup_stats.c: the supervisor's figures (its uptime; each role's up,
 * failed and restarts), answered to "graspctl stats" and pushed to relayd
 * on the stats channel every ROLE_STATS_PERIOD, as a role does, so that
 * /metrics carries them.  Runs in graspd's loop.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <event2/event.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "msg.h"
#include "role.h"
#include "supervisor.h"

static int	     stats_sock = -1; /* nanomsg PUSH */
static struct event *stats_ev;

/* role_metric() with the label role="role" when role is not NULL. */
static void
metric(cJSON *metrics, const char *name, const char *role, double v)
{
	char key[128];

	if (role != NULL)
		snprintf(key, sizeof(key), "%s{role=\"%s\"}", name, role);
	else
		snprintf(key, sizeof(key), "%s", name);
	role_metric(metrics, key, v);
}

void
sup_stats_metrics(cJSON *metrics)
{
	const struct sup_role *r;
	int		       i;

	metric(metrics, "graspd_uptime_seconds", NULL,
	    (long)(sup_now() - sv->sv_started));
	for (i = 0; i < SUP_NROLES; i++) {
		r = &sv->sv_roles[i];
		metric(metrics, "graspd_role_up", r->rl_name,
		    r->rl_state == SUP_RUNNING);
		metric(metrics, "graspd_role_failed", r->rl_name,
		    r->rl_state == SUP_FAILED);
		/* relayd's NIP-11 reads it: GRASP-03 is effective only
		 * while syncd runs. */
		metric(metrics, "graspd_role_stopped", r->rl_name,
		    r->rl_state == SUP_STOPPED);
		metric(metrics, "graspd_role_restarts_total", r->rl_name,
		    sup_role_restarts(r));
	}
}

/* Sends one snapshot; relayd being down only drops it. */
static void
stats_cb(int fd, short what, void *arg)
{
	struct timeval tv;
	double	       period;
	cJSON	      *doc;
	char	      *out;

	(void)fd;
	(void)what;
	(void)arg;
	if ((doc = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(doc, "role", role_name(ROLE_SUPERVISOR)) ==
		NULL ||
	    cJSON_AddNumberToObject(doc, "pid", (double)getpid()) == NULL)
		fatalx("stats: out of memory");
	sup_stats_metrics(cJSON_AddArrayToObject(doc, "metrics"));
	if ((out = cJSON_PrintUnformatted(doc)) == NULL)
		fatalx("stats: out of memory");
	cJSON_Delete(doc);
	if (msg_send(stats_sock, MSG_STATS, out, strlen(out), NN_DONTWAIT) ==
		-1 &&
	    errno != EAGAIN)
		log_warn("stats: send");
	free(out);
	period = sv->sv_cfg.test ? ROLE_STATS_PERIOD_TEST : ROLE_STATS_PERIOD;
	tv.tv_sec = (time_t)period;
	tv.tv_usec = (suseconds_t)((period - (double)tv.tv_sec) * 1e6);
	evtimer_add(stats_ev, &tv);
}

int
sup_stats_open(char *err, size_t errlen)
{
	char ep[4096];

	if (chan_endpoint(sv->sv_cfg.run_path, CHAN_STATS, ep, sizeof(ep)) ==
	    -1) {
		snprintf(err, errlen, "run_path too long: %s",
		    sv->sv_cfg.run_path);
		return -1;
	}
	/* A connect: relayd binds the channel when it starts. */
	if ((stats_sock = chan_open(NN_PUSH, ep, 0)) == -1) {
		snprintf(err, errlen, "%s: %s", ep, nn_strerror(nn_errno()));
		return -1;
	}
	stats_ev = sup_event_new(-1, 0, stats_cb, NULL);
	stats_cb(-1, 0, NULL);
	return 0;
}

void
sup_stats_close(void)
{
	sup_event_free(stats_ev);
	stats_ev = NULL;
	if (stats_sock != -1) {
		chan_close(stats_sock);
		stats_sock = -1;
	}
}
