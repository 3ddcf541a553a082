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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counter.h"
#include "log.h"
#include "msg.h"
#include "role.h"
#include "supervisor.h"

static int	     stats_sock = -1; /* nanomsg PUSH */
static struct event *stats_ev;

/* The supervisor's figures and a role's, as they are now. */
struct sup_figures {
	uint64_t uptime;
};
struct sup_role_figures {
	uint64_t uptime, up, failed, stopped, restarts;
};

/* Each figure once (counter.h): `graspctl show graspd` and status, and
 * the metrics. */
static const struct counter sup_counters[] = {
	{ "uptime", "graspd_uptime_seconds", GAUGE,
	    "Seconds the supervisor has run",
	    offsetof(struct sup_figures, uptime) },
};

/* A role's: its samples carry the label role="name". */
#define RF(f) offsetof(struct sup_role_figures, f)
static const struct counter sup_role_counters[] = {
	{ "uptime", NULL, GAUGE, NULL, RF(uptime) },
	{ NULL, "graspd_role_up", GAUGE,
	    "1 if the supervisor has the role running", RF(up) },
	{ NULL, "graspd_role_failed", GAUGE,
	    "1 if the supervisor gave up on the role (failed state)",
	    RF(failed) },
	/* relayd's NIP-11 reads it: GRASP-03 is effective only while
	 * syncd runs. */
	{ NULL, "graspd_role_stopped", GAUGE,
	    "1 if the role is stopped on request (graspctl stop)",
	    RF(stopped) },
	{ "restarts", "graspd_role_restarts_total", COUNTER,
	    "Starts of the role after its first", RF(restarts) },
};
#undef RF

static void
figures(struct sup_figures *f)
{
	double up = sup_now() - sv->sv_started;

	f->uptime = up > 0 ? (uint64_t)up : 0;
}

static void
role_figures(const struct sup_role *r, struct sup_role_figures *f)
{
	double up = sup_role_uptime(r);

	f->uptime = up > 0 ? (uint64_t)up : 0;
	f->up = r->rl_state == SUP_RUNNING;
	f->failed = r->rl_state == SUP_FAILED;
	f->stopped = r->rl_state == SUP_STOPPED;
	f->restarts = sup_role_restarts(r);
}

void
sup_stats_show(cJSON *obj)
{
	struct sup_figures f;

	figures(&f);
	counters_show(obj, sup_counters, COUNTERS_N(sup_counters), &f);
}

void
sup_stats_role_show(const struct sup_role *r, cJSON *obj)
{
	struct sup_role_figures f;

	role_figures(r, &f);
	counters_show(obj, sup_role_counters, COUNTERS_N(sup_role_counters),
	    &f);
}

void
sup_stats_metrics(cJSON *metrics)
{
	struct sup_figures	f;
	struct sup_role_figures rf;
	char			label[64];
	int			i;

	figures(&f);
	counters_metrics(metrics, sup_counters, COUNTERS_N(sup_counters), &f,
	    NULL);
	for (i = 0; i < SUP_NROLES; i++) {
		role_figures(&sv->sv_roles[i], &rf);
		snprintf(label, sizeof(label), "role=\"%s\"",
		    sv->sv_roles[i].rl_name);
		counters_metrics(metrics, sup_role_counters,
		    COUNTERS_N(sup_role_counters), &rf, label);
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
